/* fitidx.c - the best-fit index: a segment tree over time points whose nodes
 * keep unions of offset ranges (fitidx.h); a query sees exactly the blocks placed
 * so far whose lifetimes meet the interval asked about. */
#include "fitidx.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct seg {
    int64_t lo, hi; /* [lo, hi) */
} seg;

/* A node's union: n sorted, disjoint, non-adjacent segments at pool[off ..
 * off + n); cap reserved.  gen != the workspace's gen means empty (a reset
 * does not touch the nodes). */
typedef struct flist {
    int32_t off, n, cap;
    uint32_t gen;
} flist;

struct fit_ws {
    int32_t base;          /* time point of leaf 0 */
    int32_t leaves;        /* P: a power of two; nodes 1 .. 2P - 1, node v's children 2v, 2v + 1 */
    int32_t node_cap;      /* nodes allocated in cov and sub */
    flist *cov, *sub;
    flist *pc;             /* at height PC_H (when the tree is taller): the union of its strict ancestors' cov */
    int32_t height;        /* log2(leaves) */
    uint32_t gen;
    seg *pool;
    int64_t pool_n, pool_cap;
    bool oom;              /* a list could not grow during the current operation */
    int64_t work;          /* segments fit_find walked since the reset */
    /* fit_find's scratch: the lists a query collects, and its heap of them */
    const flist **q;
    int32_t nq, q_cap;
    struct item {
        int64_t lo;        /* v->lo, the heap's key */
        const seg *v;      /* the list's next segment */
        int64_t n;         /* how many are left */
    } *items;
};

fit_ws *fit_ws_new(void)
{
    fit_ws *w = calloc(1, sizeof *w);
    return w;
}

void fit_ws_free(fit_ws *w)
{
    if (!w)
        return;
    free(w->cov);
    free(w->sub);
    free(w->pc);
    free(w->pool);
    free(w->q);
    free(w->items);
    free(w);
}

sa_status fit_reset(fit_ws *w, int32_t lo, int32_t hi, sa_err *err)
{
    int32_t P = 1;
    while (P < hi - lo)
        P *= 2;
    if (2 * P > w->node_cap) {
        flist *c = realloc(w->cov, (size_t)2 * (size_t)P * sizeof *c);
        if (c)
            w->cov = c;
        flist *s = c ? realloc(w->sub, (size_t)2 * (size_t)P * sizeof *s) : NULL;
        if (s)
            w->sub = s;
        flist *pc = s ? realloc(w->pc, (size_t)2 * (size_t)P * sizeof *pc) : NULL;
        if (pc)
            w->pc = pc;
        if (!c || !s || !pc)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        /* new nodes read as empty under any gen but 0, which gen never is */
        memset(w->cov + w->node_cap, 0, (size_t)(2 * P - w->node_cap) * sizeof *c);
        memset(w->sub + w->node_cap, 0, (size_t)(2 * P - w->node_cap) * sizeof *s);
        memset(w->pc + w->node_cap, 0, (size_t)(2 * P - w->node_cap) * sizeof *pc);
        w->node_cap = 2 * P;
    }
    /* a query visits at most four nodes per level (two partial, two
     * canonical) of at most 32 levels, for each of two lifetimes */
    int32_t qn = 2 * 4 * 33;
    if (w->q_cap < qn) {
        const flist **q = realloc(w->q, (size_t)qn * sizeof *q);
        if (q)
            w->q = q;
        struct item *it = q ? realloc(w->items, (size_t)qn * sizeof *it) : NULL;
        if (it)
            w->items = it;
        if (!q || !it)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        w->q_cap = qn;
    }
    if (!w->pool) { /* never NULL past here: lists point into it from offset 0 */
        seg *p = malloc((size_t)4096 * sizeof *p);
        if (!p)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        w->pool = p;
        w->pool_cap = 4096;
    }
    if (++w->gen == 0) { /* wrapped: clear every node once */
        memset(w->cov, 0, (size_t)w->node_cap * sizeof *w->cov);
        memset(w->sub, 0, (size_t)w->node_cap * sizeof *w->sub);
        memset(w->pc, 0, (size_t)w->node_cap * sizeof *w->pc);
        w->gen = 1;
    }
    w->base = lo;
    w->leaves = P;
    w->height = 0;
    while ((1 << w->height) < P)
        w->height++;
    w->pool_n = 0;
    w->oom = false;
    w->work = 0;
    return SA_OK;
}

/* Adds [lo, hi) to the union L; true when L already held all of it.  Inlined
 * at its three callers: 7 % fewer instructions per evaluation on resnet-50 and
 * nasnet-25, most of them the call's own (docs/benchmarks.md). */
static inline __attribute__((always_inline)) bool list_add(fit_ws *w, flist *L, int64_t lo, int64_t hi)
{
    if (L->gen != w->gen) {
        L->gen = w->gen;
        L->n = L->cap = 0;
        L->off = 0;
    }
    seg *v = w->pool + L->off;
    int32_t n = L->n;
    /* i: the first segment that ends at or after lo (touching it merges) */
    int32_t i = 0, h = n;
    while (i < h) {
        int32_t m = (i + h) / 2;
        if (v[m].hi < lo)
            i = m + 1;
        else
            h = m;
    }
    if (i < n && v[i].lo <= lo && hi <= v[i].hi)
        return true;
    if (i < n && v[i].lo <= hi) {
        /* merge segments i .. j - 1, the ones that start at or before hi */
        int32_t j = i + 1;
        while (j < n && v[j].lo <= hi)
            j++;
        if (v[i].lo < lo)
            lo = v[i].lo;
        if (v[j - 1].hi > hi)
            hi = v[j - 1].hi;
        v[i].lo = lo;
        v[i].hi = hi;
        if (j > i + 1) {
            memmove(v + i + 1, v + j, (size_t)(n - j) * sizeof *v);
            L->n = n - (j - i - 1);
        }
        return false;
    }
    if (n == L->cap) {
        int32_t nc = L->cap ? 2 * L->cap : 4;
        if (w->pool_n + nc > INT32_MAX) { /* offsets into the pool are int32_t */
            w->oom = true;
            return false;
        }
        if (w->pool_n + nc > w->pool_cap) {
            int64_t pc = w->pool_cap ? 2 * w->pool_cap : 4096;
            while (pc < w->pool_n + nc)
                pc *= 2;
            seg *p = realloc(w->pool, (size_t)pc * sizeof *p);
            if (!p) {
                w->oom = true;
                return false;
            }
            w->pool = p;
            w->pool_cap = pc;
        }
        memcpy(w->pool + w->pool_n, w->pool + L->off, (size_t)n * sizeof *v);
        L->off = (int32_t)w->pool_n;
        L->cap = nc;
        w->pool_n += nc;
        v = w->pool + L->off;
    }
    memmove(v + i + 1, v + i, (size_t)(n - i) * sizeof *v);
    v[i].lo = lo;
    v[i].hi = hi;
    L->n = n + 1;
    return false;
}

/* From this height up to PC_H + PC_K the cov lists a query meets along a
 * root-to-leaf path are read through one union per node of height PC_H
 * (pc), kept up to date on insert: a query reads two lists instead of one
 * per level there, and a lifetime's canonical node in that band pays one
 * union insert per node of height PC_H below it, 2^PC_K at most.  Above the
 * band the cov lists are read one per level: a whole-band pc would make a
 * long lifetime pay an insert per 2^PC_H leaves it covers, quadratic on a
 * long chain whose activations live from the forward pass to the backward.
 * PC_K 3 took the fewest instructions per evaluation of PC_K 2 to 5 and PC_H
 * 5 to 7 (callgrind on bench_bestfit: 4-12 % fewer than PC_K 5 on resnet-50,
 * inception-4, nasnet-25 and a 10,000-op chain; docs/benchmarks.md). */
enum { PC_H = 6, PC_K = 3 };

static bool in_pc_band(const fit_ws *w, int h)
{
    return h > PC_H && h <= PC_H + PC_K && w->height > PC_H;
}

/* A canonical node x at height h gets [lo, hi): its cov, or in the pc band
 * the pc union of each of its descendants at PC_H; and its sub. */
static void canon_add(fit_ws *w, int32_t x, int h, int64_t lo, int64_t hi)
{
    if (in_pc_band(w, h)) {
        int32_t d = h - PC_H;
        for (int32_t v = x << d, e = (x + 1) << d; v < e; v++)
            list_add(w, &w->pc[v], lo, hi);
    } else {
        list_add(w, &w->cov[x], lo, hi);
    }
    list_add(w, &w->sub[x], lo, hi);
}

/* Stores [lo, hi) for the leaves [l, r): cov and sub of the canonical
 * nodes, sub of the partial ones.  A node's sub holds its children's, so
 * once a partial node's sub already held [lo, hi), every ancestor's does
 * too: the walk up that side stops there. */
static void tree_add(fit_ws *w, int32_t l, int32_t r, int64_t lo, int64_t hi)
{
    int32_t P = w->leaves;
    for (int32_t x = l + P, y = r + P, h = 0; x < y; x >>= 1, y >>= 1, h++) {
        if (x & 1) {
            canon_add(w, x, h, lo, hi);
            x++;
        }
        if (y & 1) {
            --y;
            canon_add(w, y, h, lo, hi);
        }
    }
    int32_t a = (l + P) >> 1, b = (r - 1 + P) >> 1;
    bool go_a = true, go_b = true;
    for (int h = 1; a >= 1 && (go_a || go_b); h++, a >>= 1, b >>= 1) {
        if (a == b) {
            go_a = go_a || go_b;
            go_b = false;
        }
        if (go_a && ((((int64_t)a << h) - P) < l || (((int64_t)(a + 1) << h) - P) > r))
            go_a = !list_add(w, &w->sub[a], lo, hi);
        if (go_b && ((((int64_t)b << h) - P) < l || (((int64_t)(b + 1) << h) - P) > r))
            go_b = !list_add(w, &w->sub[b], lo, hi);
    }
}

static inline void collect(fit_ws *w, const flist *L)
{
    if (L->gen == w->gen && L->n > 0)
        w->q[w->nq++] = L;
}

/* Collects the lists holding the blocks that meet [l, r): the canonical
 * nodes' sub lists and the partial nodes' cov lists. */
static void tree_query(fit_ws *w, int32_t l, int32_t r)
{
    int32_t P = w->leaves;
    for (int32_t x = l + P, y = r + P; x < y; x >>= 1, y >>= 1) {
        if (x & 1)
            collect(w, &w->sub[x++]);
        if (y & 1)
            collect(w, &w->sub[--y]);
    }
    /* partial nodes: cov up to PC_H, then the pc unions of the two paths'
     * nodes at PC_H (their ancestors' cov in the band; any of those that
     * lies inside [l, r) holds blocks that meet it too), then cov above it */
    bool pc = w->height > PC_H;
    int32_t a = (l + P) >> 1, b = (r - 1 + P) >> 1;
    for (int h = 1; a >= 1; h++, a >>= 1, b >>= 1) {
        if (in_pc_band(w, h))
            continue;
        int64_t al = ((int64_t)a << h) - P, ar = ((int64_t)(a + 1) << h) - P;
        if (al < l || ar > r)
            collect(w, &w->cov[a]);
        if (b != a) {
            int64_t bl = ((int64_t)b << h) - P, br = ((int64_t)(b + 1) << h) - P;
            if (bl < l || br > r)
                collect(w, &w->cov[b]);
        }
        if (pc && h == PC_H) {
            collect(w, &w->pc[a]);
            if (b != a)
                collect(w, &w->pc[b]);
        }
    }
}

sa_status fit_insert(fit_ws *w, int64_t off, int64_t size, const int32_t *s, const int32_t *a, int n, sa_err *err)
{
    for (int k = 0; k < n; k++)
        tree_add(w, s[k] - w->base, a[k] - w->base, off, off + size);
    if (w->oom)
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    return SA_OK;
}

int64_t fit_find(fit_ws *w, int64_t size, const int32_t *s, const int32_t *a, int n)
{
    w->nq = 0;
    for (int k = 0; k < n; k++)
        tree_query(w, s[k] - w->base, a[k] - w->base);
    /* the walk over the lists' segments in offset order (a heap of the
     * lists by their next segment): the hole before each segment lies between
     * the highest end so far and its start; stop at an exact fit, which
     * nothing higher can beat */
    int32_t nh = 0;
    struct item *h = w->items;
    for (int32_t k = 0; k < w->nq; k++) {
        const seg *v = w->pool + w->q[k]->off;
        struct item it = {v->lo, v, w->q[k]->n};
        int32_t c = nh++;
        while (c > 0 && h[(c - 1) / 2].lo > it.lo) {
            h[c] = h[(c - 1) / 2];
            c = (c - 1) / 2;
        }
        h[c] = it;
    }
    int64_t cursor = 0, best = -1, best_gap = 0;
    while (nh > 0) {
        const seg *g = h[0].v;
        w->work++;
        int64_t gap = g->lo - cursor;
        if (gap >= size && (best < 0 || gap < best_gap)) {
            best = cursor;
            best_gap = gap;
            if (gap == size)
                break;
        }
        if (g->hi > cursor)
            cursor = g->hi;
        /* the top's list moves on (or leaves); sift it down.  Its segments
         * that end at or below the cursor would leave no hole and not move
         * it: a galloping search skips them (on a long chain they were 95 %
         * of the segments walked) */
        struct item it = h[0];
        if (--it.n > 0 && (++it.v)->hi <= cursor) {
            int64_t lo = 0, hi = 1; /* it.v[lo].hi <= cursor; find the first past it */
            while (hi < it.n && it.v[hi].hi <= cursor) {
                lo = hi;
                hi *= 2;
                w->work++;
            }
            if (hi > it.n)
                hi = it.n;
            while (hi - lo > 1) {
                int64_t m = lo + (hi - lo) / 2;
                w->work++;
                if (it.v[m].hi <= cursor)
                    lo = m;
                else
                    hi = m;
            }
            it.v += hi;
            it.n -= hi;
        }
        if (it.n > 0) {
            it.lo = it.v->lo;
        } else if (--nh == 0) {
            break;
        } else {
            it = h[nh];
        }
        int32_t c = 0;
        for (;;) {
            int32_t l = 2 * c + 1;
            if (l >= nh)
                break;
            if (l + 1 < nh && h[l + 1].lo < h[l].lo)
                l++;
            if (h[l].lo >= it.lo)
                break;
            h[c] = h[l];
            c = l;
        }
        h[c] = it;
    }
    return best >= 0 ? best : cursor;
}

int64_t fit_work(const fit_ws *w)
{
    return w->work;
}

