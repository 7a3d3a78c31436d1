/* fitidx.c - the best-fit index: a segment tree over time points whose nodes
 * keep unions of offset ranges (fitidx.h). */
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
    uint32_t gen;
    seg *pool;
    int64_t pool_n, pool_cap;
    bool oom;              /* a list could not grow during the current operation */
    /* fit_find's scratch: the lists a query collects, and two merge buffers */
    const flist **q;
    int32_t nq, q_cap;
    struct item {
        const seg *v;
        int64_t n;
    } *items;
    seg *acc, *tmp;
    int64_t m_cap;
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
    free(w->pool);
    free(w->q);
    free(w->items);
    free(w->acc);
    free(w->tmp);
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
        if (!c || !s)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        /* new nodes read as empty under any gen but 0, which gen never is */
        memset(w->cov + w->node_cap, 0, (size_t)(2 * P - w->node_cap) * sizeof *c);
        memset(w->sub + w->node_cap, 0, (size_t)(2 * P - w->node_cap) * sizeof *s);
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
    if (++w->gen == 0) { /* wrapped: clear every node once */
        memset(w->cov, 0, (size_t)w->node_cap * sizeof *w->cov);
        memset(w->sub, 0, (size_t)w->node_cap * sizeof *w->sub);
        w->gen = 1;
    }
    w->base = lo;
    w->leaves = P;
    w->pool_n = 0;
    w->oom = false;
    return SA_OK;
}

/* Adds [lo, hi) to the union L. */
static void list_add(fit_ws *w, flist *L, int64_t lo, int64_t hi)
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
        return;
    }
    if (n == L->cap) {
        int32_t nc = L->cap ? 2 * L->cap : 4;
        if (w->pool_n + nc > INT32_MAX) { /* offsets into the pool are int32_t */
            w->oom = true;
            return;
        }
        if (w->pool_n + nc > w->pool_cap) {
            int64_t pc = w->pool_cap ? 2 * w->pool_cap : 4096;
            while (pc < w->pool_n + nc)
                pc *= 2;
            seg *p = realloc(w->pool, (size_t)pc * sizeof *p);
            if (!p) {
                w->oom = true;
                return;
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
}

/* The nodes a lifetime [l, r) of leaves meets, without recursion: its
 * canonical nodes (the standard bottom-up decomposition: fully inside, parent
 * not) and the partial ones (meeting it, not inside: exactly the strict
 * ancestors of the canonical nodes, and exactly the ancestors of its first
 * and last leaf that are not inside).  visit(w, node, canonical, ...) is
 * called once per node. */
#define WALK(w, l, r, VISIT)                                                                                           \
    do {                                                                                                               \
        int32_t P_ = (w)->leaves;                                                                                      \
        for (int32_t lo_ = (l) + P_, hi_ = (r) + P_; lo_ < hi_; lo_ >>= 1, hi_ >>= 1) {                                \
            if (lo_ & 1) {                                                                                             \
                VISIT(lo_, true);                                                                                      \
                lo_++;                                                                                                 \
            }                                                                                                          \
            if (hi_ & 1) {                                                                                             \
                --hi_;                                                                                                 \
                VISIT(hi_, true);                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        /* partial: walk up from both end leaves; node u at height h spans                                            \
         * [(u << h) - P, ((u + 1) << h) - P) */                                                                       \
        int32_t a_ = ((l) + P_) >> 1, b_ = ((r) - 1 + P_) >> 1;                                                        \
        for (int h_ = 1; a_ >= 1; h_++, a_ >>= 1, b_ >>= 1) {                                                          \
            int64_t al_ = ((int64_t)a_ << h_) - P_, ar_ = ((int64_t)(a_ + 1) << h_) - P_;                              \
            if (al_ < (l) || ar_ > (r))                                                                                \
                VISIT(a_, false);                                                                                      \
            if (b_ != a_) {                                                                                            \
                int64_t bl_ = ((int64_t)b_ << h_) - P_, br_ = ((int64_t)(b_ + 1) << h_) - P_;                          \
                if (bl_ < (l) || br_ > (r))                                                                            \
                    VISIT(b_, false);                                                                                  \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static void tree_add(fit_ws *w, int32_t l, int32_t r, int64_t lo, int64_t hi)
{
#define ADD(node, canon)                                                                                               \
    do {                                                                                                               \
        list_add(w, &w->sub[node], lo, hi);                                                                            \
        if (canon)                                                                                                     \
            list_add(w, &w->cov[node], lo, hi);                                                                        \
    } while (0)
    WALK(w, l, r, ADD);
#undef ADD
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
#define GET(node, canon) collect(w, (canon) ? &w->sub[node] : &w->cov[node])
    WALK(w, l, r, GET);
#undef GET
}

sa_status fit_insert(fit_ws *w, int64_t off, int64_t size, const int32_t *s, const int32_t *a, int n, sa_err *err)
{
    for (int k = 0; k < n; k++)
        tree_add(w, s[k] - w->base, a[k] - w->base, off, off + size);
    if (w->oom)
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    return SA_OK;
}

/* Makes room for need candidates in both buffers. */
static bool cand_room(fit_ws *w, int64_t need)
{
    if (need <= w->m_cap)
        return true;
    int64_t mc = w->m_cap ? w->m_cap : 256;
    while (mc < need)
        mc *= 2;
    seg *x = realloc(w->acc, (size_t)mc * sizeof *x);
    if (!x)
        return false;
    w->acc = x;
    seg *y = realloc(w->tmp, (size_t)mc * sizeof *y);
    if (!y)
        return false;
    w->tmp = y;
    w->m_cap = mc;
    return true;
}

/* out = the union of x[0 .. nx) and y[0 .. ny) (each sorted, disjoint);
 * returns its length. */
static int64_t merge(const seg *x, int64_t nx, const seg *y, int64_t ny, seg *out)
{
    int64_t i = 0, j = 0, n = 0;
    while (i < nx && j < ny) {
        seg c = x[i].lo <= y[j].lo ? x[i++] : y[j++];
        if (n > 0 && c.lo <= out[n - 1].hi) {
            if (c.hi > out[n - 1].hi)
                out[n - 1].hi = c.hi;
        } else {
            out[n++] = c;
        }
    }
    for (; i < nx; i++)
        if (n > 0 && x[i].lo <= out[n - 1].hi) {
            if (x[i].hi > out[n - 1].hi)
                out[n - 1].hi = x[i].hi;
        } else {
            out[n++] = x[i];
        }
    for (; j < ny; j++)
        if (n > 0 && y[j].lo <= out[n - 1].hi) {
            if (y[j].hi > out[n - 1].hi)
                out[n - 1].hi = y[j].hi;
        } else {
            out[n++] = y[j];
        }
    return n;
}

sa_status fit_find(fit_ws *w, int64_t size, const int32_t *s, const int32_t *a, int n, int64_t *off, sa_err *err)
{
    w->nq = 0;
    for (int k = 0; k < n; k++)
        tree_query(w, s[k] - w->base, a[k] - w->base);
    /* the union of the lists, merged pairwise in rounds (each segment takes
     * part in log2(lists) merges), into acc and tmp by turns */
    int32_t nl = w->nq;
    int64_t total = 0;
    for (int32_t k = 0; k < nl; k++) {
        w->items[k].v = w->pool + w->q[k]->off;
        w->items[k].n = w->q[k]->n;
        total += w->q[k]->n;
    }
    if (!cand_room(w, total + 1))
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    for (int round = 0; nl > 1; round++) {
        seg *area = round % 2 ? w->tmp : w->acc;
        int64_t pos = 0;
        int32_t m = 0;
        for (int32_t k = 0; k < nl; k += 2) {
            int64_t len;
            if (k + 1 < nl) {
                len = merge(w->items[k].v, w->items[k].n, w->items[k + 1].v, w->items[k + 1].n, area + pos);
            } else {
                len = w->items[k].n;
                memcpy(area + pos, w->items[k].v, (size_t)len * sizeof *area);
            }
            w->items[m].v = area + pos;
            w->items[m].n = len;
            m++;
            pos += len;
        }
        nl = m;
    }
    const seg *u = nl ? w->items[0].v : NULL;
    int64_t nu = nl ? w->items[0].n : 0;
    int64_t cursor = 0, best = -1, best_gap = 0;
    for (int64_t k = 0; k < nu; k++) {
        int64_t gap = u[k].lo - cursor;
        if (gap >= size && (best < 0 || gap < best_gap)) {
            best = cursor;
            best_gap = gap;
            if (gap == size)
                break; /* nothing higher can beat an exact fit */
        }
        cursor = u[k].hi;
    }
    *off = best >= 0 ? best : cursor;
    return SA_OK;
}

