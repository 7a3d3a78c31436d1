/* layout.c - size classes, object counts and the arena layout of the memory pool: a
 * pool that passes pool_fits_split (or a fixed-object floor) lets the walk place every op. */
#include "swapadvisor/pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool pool_alloc_init(pool_alloc *a, int32_t n_sizes)
{
    memset(a, 0, sizeof *a);
    size_t n = (size_t)(n_sizes > 0 ? n_sizes : 1);
    a->n_sizes = n_sizes;
    a->cls = calloc(n, sizeof *a->cls);
    a->cnt = calloc(n, sizeof *a->cnt);
    a->obj_bytes = calloc(n, sizeof *a->obj_bytes);
    a->first_obj = calloc(n + 1, sizeof *a->first_obj);
    a->size_tensors = calloc(n, sizeof *a->size_tensors);
    a->cls_cap = calloc(n, sizeof *a->cls_cap);
    if (!a->cls || !a->cnt || !a->obj_bytes || !a->first_obj || !a->size_tensors || !a->cls_cap) {
        pool_alloc_free(a);
        return false;
    }
    return true;
}

void pool_alloc_free(pool_alloc *a)
{
    free(a->cls);
    free(a->cnt);
    free(a->obj_bytes);
    free(a->first_obj);
    free(a->obj_offset);
    free(a->size_tensors);
    free(a->cls_cap);
    memset(a, 0, sizeof *a);
}

bool pool_alloc_copy(pool_alloc *dst, const pool_alloc *src)
{
    if (dst->n_sizes != src->n_sizes) {
        pool_alloc_free(dst);
        if (!pool_alloc_init(dst, src->n_sizes))
            return false;
    }
    size_t n = (size_t)src->n_sizes;
    memcpy(dst->cls, src->cls, n * sizeof *dst->cls);
    memcpy(dst->cnt, src->cnt, n * sizeof *dst->cnt);
    dst->n_classes = src->n_classes;
    if (src->max_use > 0) {
        memcpy(dst->size_tensors, src->size_tensors, n * sizeof *dst->size_tensors);
        memcpy(dst->cls_cap, src->cls_cap, n * sizeof *dst->cls_cap);
        dst->max_use = src->max_use;
    }
    return true;
}

void pool_repair_cls(pool_alloc *a)
{
    if (a->n_sizes == 0)
        return;
    a->cls[0] = 0;
    for (int32_t i = 1; i < a->n_sizes; i++) {
        int32_t prev = a->cls[i - 1];
        if (a->cls[i] < prev)
            a->cls[i] = prev;
        else if (a->cls[i] > prev + 1)
            a->cls[i] = prev + 1;
    }
    a->n_classes = a->cls[a->n_sizes - 1] + 1;
}

/* Tensors per size and the most one op uses: what caps the object counts. */
static void count_tensors(pool_alloc *a, const sa_dfg_graph *g)
{
    if (a->max_use > 0)
        return;
    memset(a->size_tensors, 0, (size_t)a->n_sizes * sizeof *a->size_tensors);
    for (int32_t t = 0; t < g->n_tensors; t++)
        a->size_tensors[g->tensors[t].size_idx]++;
    int32_t m = 1;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].n_use > m)
            m = g->ops[i].n_use;
    a->max_use = m;
}

bool pool_layout_sizes(pool_alloc *a, const sa_dfg_graph *g)
{
    count_tensors(a, g);
    for (int32_t c = 0; c < a->n_classes; c++) {
        a->obj_bytes[c] = 0;
        a->cls_cap[c] = a->max_use;
    }
    for (int32_t i = 0; i < a->n_sizes; i++) {
        int64_t b = pool_align(g->sizes[i]);
        int32_t c = a->cls[i];
        if (b > a->obj_bytes[c])
            a->obj_bytes[c] = b;
        /* its own tensors, plus what one op of smaller classes may borrow */
        a->cls_cap[c] = a->cls_cap[c] > INT32_MAX - a->size_tensors[i] ? INT32_MAX
                                                                          : a->cls_cap[c] + a->size_tensors[i];
    }
    return true;
}

bool pool_layout(pool_alloc *a, const sa_dfg_graph *g)
{
    int32_t nc = a->n_classes;
    int64_t total = 0;
    pool_layout_sizes(a, g);
    for (int32_t c = 0; c < nc; c++) {
        if (a->cnt[c] > a->cls_cap[c])
            a->cnt[c] = a->cls_cap[c];
        if (a->cnt[c] < 0)
            a->cnt[c] = 0;
        total += a->cnt[c];
    }
    if (total > INT32_MAX - 1)
        return false;
    for (int32_t c = 0, k = 0; c < nc; c++) {
        a->first_obj[c] = k;
        k += a->cnt[c];
    }
    a->first_obj[nc] = (int32_t)total;
    if (total > a->cap_objects) {
        int64_t *p = realloc(a->obj_offset, (size_t)total * sizeof *p);
        if (!p)
            return false;
        a->obj_offset = p;
        a->cap_objects = (int32_t)total;
    }
    a->n_objects = (int32_t)total;
    int64_t off = 0;
    for (int32_t c = 0; c < nc; c++)
        for (int32_t k = 0; k < a->cnt[c]; k++) {
            a->obj_offset[a->first_obj[c] + k] = off;
            off = sa_add_sat(off, a->obj_bytes[c]);
        }
    a->pool_bytes = off;
    return true;
}

void pool_class_demand(const pool_alloc *a, const sa_dfg_graph *g, const int32_t *schedule, int32_t *need,
                       int32_t *demand)
{
    const int32_t *sch = schedule ? schedule : g->topo;
    int32_t nc = a->n_classes, n = g->n_ops;
    memset(demand, 0, (size_t)a->n_sizes * sizeof *demand);
    pool_need(a, g, need);
    /* demand: sweep the schedule with +1 at first use, -1 after last use */
    int32_t *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos);
    int32_t *delta = calloc(((size_t)n + 1) * (size_t)(nc > 0 ? nc : 1), sizeof *delta);
    int32_t *cur = calloc((size_t)(nc > 0 ? nc : 1), sizeof *cur);
    if (!pos || !delta || !cur) {
        /* without scratch memory fall back to the floor */
        for (int32_t c = 0; c < nc; c++)
            demand[c] = need[c];
        free(pos);
        free(delta);
        free(cur);
        return;
    }
    for (int32_t i = 0; i < n; i++)
        pos[sch[i]] = i;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *tt = &g->tensors[t];
        int32_t c = a->cls[tt->size_idx];
        if (sa_dfg_kind_persistent(tt->kind)) {
            cur[c]++;
            continue;
        }
        int32_t first, last;
        if (!sa_dfg_tensor_span(g, pos, t, &first, &last))
            continue;
        delta[(size_t)first * (size_t)nc + (size_t)c]++;
        delta[(size_t)(last + 1) * (size_t)nc + (size_t)c]--;
    }
    for (int32_t c = 0; c < nc; c++)
        demand[c] = cur[c];
    for (int32_t i = 0; i < n; i++)
        for (int32_t c = 0; c < nc; c++) {
            cur[c] += delta[(size_t)i * (size_t)nc + (size_t)c];
            if (cur[c] > demand[c])
                demand[c] = cur[c];
        }
    for (int32_t c = 0; c < nc; c++)
        if (demand[c] < need[c])
            demand[c] = need[c];
    free(pos);
    free(delta);
    free(cur);
}

/* need[c] = the most tensors one op holds, over the ops holding one of class
 * c, of class c itself (own) or of classes >= c (!own). */
static int cmp_desc_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x > y ? -1 : x < y;
}

/* most_per_op for one op with many tensors (a sink that reads every
 * activation): counts per class, then suffix sums over its classes, largest
 * first: O(n log n) instead of the pairwise O(n^2).  cnt is zero on entry
 * and on return; cls is scratch. */
static void most_one_op_wide(const pool_alloc *a, const sa_dfg_graph *g, const sa_dfg_op *o, bool own, int32_t *need,
                             int32_t *cnt, int32_t *cls)
{
    int32_t nd = 0;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t c = a->cls[g->tensors[o->use[k]].size_idx];
        if (cnt[c]++ == 0)
            cls[nd++] = c;
    }
    qsort(cls, (size_t)nd, sizeof *cls, cmp_desc_i32);
    int32_t s = 0;
    for (int32_t k = 0; k < nd; k++) {
        int32_t c = cls[k];
        s += cnt[c];
        int32_t n = own ? cnt[c] : s;
        if (n > need[c])
            need[c] = n;
        cnt[c] = 0;
    }
}

#define POOL_WIDE_OP 64 /* ops using more tensors take the counting path */

static void most_per_op(const pool_alloc *a, const sa_dfg_graph *g, bool own, int32_t *need)
{
    memset(need, 0, (size_t)a->n_sizes * sizeof *need);
    int32_t *cnt = NULL, *cls = NULL;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *o = &g->ops[i];
        if (o->n_use > POOL_WIDE_OP) {
            if (!cnt) {
                cnt = calloc((size_t)a->n_sizes + 1, sizeof *cnt);
                cls = malloc(((size_t)a->n_sizes + 1) * sizeof *cls);
            }
            if (cnt && cls) {
                most_one_op_wide(a, g, o, own, need, cnt, cls);
                continue;
            }
            /* without the scratch, the pairwise count */
            for (int32_t k = 0; k < o->n_use; k++) {
                int32_t c = a->cls[g->tensors[o->use[k]].size_idx], n = 0;
                for (int32_t j = 0; j < o->n_use; j++) {
                    int32_t cj = a->cls[g->tensors[o->use[j]].size_idx];
                    n += own ? cj == c : cj >= c;
                }
                if (n > need[c])
                    need[c] = n;
            }
            continue;
        }
        /* the op's distinct classes and how many of its tensors each has;
         * a class's count is the same for each of its tensors, so one
         * update per class gives the pairwise count's maximum */
        int32_t dc[POOL_WIDE_OP], dn[POOL_WIDE_OP], nd = 0;
        for (int32_t k = 0; k < o->n_use; k++) {
            int32_t c = a->cls[g->tensors[o->use[k]].size_idx], j = 0;
            while (j < nd && dc[j] != c)
                j++;
            if (j == nd) {
                dc[nd] = c;
                dn[nd++] = 0;
            }
            dn[j]++;
        }
        for (int32_t d = 0; d < nd; d++) {
            int32_t c = dc[d], n = dn[d];
            if (!own)
                for (int32_t j = 0; j < nd; j++)
                    n += dc[j] > c ? dn[j] : 0;
            if (n > need[c])
                need[c] = n;
        }
    }
    free(cnt);
    free(cls);
}

void pool_need(const pool_alloc *a, const sa_dfg_graph *g, int32_t *need) { most_per_op(a, g, true, need); }

void pool_need_shared(const pool_alloc *a, const sa_dfg_graph *g, int32_t *need)
{
    /* An op fits when, for every class k, its tensors of classes >= k are no
     * more than the objects of classes >= k.  S[k] = max over c >= k of
     * most_per_op (an op without class k counts at its next larger class),
     * and need[k] = S[k] - S[k+1]: the fewest objects of each class, largest
     * first, with every suffix covered, which is also the floor of fewest
     * bytes. */
    int32_t nc = a->n_classes;
    most_per_op(a, g, false, need);
    for (int32_t c = nc - 2; c >= 0; c--)
        if (need[c + 1] > need[c])
            need[c] = need[c + 1];
    for (int32_t c = 0; c + 1 < nc; c++)
        need[c] -= need[c + 1];
}

/* Scratch for fits_split, allocated once per caller (pool_need_split checks
 * many pools of one graph). */
typedef struct split_scratch {
    int32_t *avail;        /* [n_sizes] whole objects left per class */
    int32_t *ord, *n_ten;  /* [most tensors one op uses] */
    int64_t *cap, *top;
} split_scratch;

static void split_scratch_free(split_scratch *x)
{
    free(x->avail);
    free(x->ord);
    free(x->n_ten);
    free(x->cap);
    free(x->top);
}

static bool split_scratch_init(split_scratch *x, const sa_dfg_graph *g)
{
    int32_t maxuse = 1;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].n_use > maxuse)
            maxuse = g->ops[i].n_use;
    x->avail = malloc(((size_t)g->n_sizes + 1) * sizeof *x->avail);
    x->ord = malloc((size_t)maxuse * sizeof *x->ord);
    x->n_ten = malloc((size_t)maxuse * sizeof *x->n_ten);
    x->cap = malloc((size_t)maxuse * sizeof *x->cap);
    x->top = malloc((size_t)maxuse * sizeof *x->top);
    if (x->avail && x->ord && x->n_ten && x->cap && x->top)
        return true;
    split_scratch_free(x);
    return false;
}

static bool fits_split(const pool_alloc *a, const sa_dfg_graph *g, split_scratch *x)
{
    int32_t nc = a->n_classes, *avail = x->avail, *ord = x->ord, *n_ten = x->n_ten;
    int64_t *cap = x->cap, *top = x->top;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *o = &g->ops[i];
        /* largest first; equal sizes in use order, as the planner takes them */
        for (int32_t k = 0; k < o->n_use; k++) {
            int32_t j = k;
            for (; j > 0 && g->tensors[o->use[ord[j - 1]]].bytes < g->tensors[o->use[k]].bytes; j--)
                ord[j] = ord[j - 1];
            ord[j] = k;
        }
        memcpy(avail, a->cnt, (size_t)nc * sizeof *avail);
        int32_t n_obj = 0;
        for (int32_t k = 0; k < o->n_use; k++) {
            const sa_dfg_tensor *t = &g->tensors[o->use[ord[k]]];
            int32_t c = a->cls[t->size_idx];
            if (avail[c] == 0) {
                int32_t s = pool_split_fit(cap, top, n_ten, n_obj, t->bytes);
                if (s >= 0) {
                    top[s] = pool_align(top[s]) + t->bytes;
                    n_ten[s]++;
                    continue;
                }
                while (c < nc && avail[c] == 0)
                    c++;
                if (c == nc)
                    return false;
            }
            avail[c]--;
            cap[n_obj] = a->obj_bytes[c];
            top[n_obj] = t->bytes;
            n_ten[n_obj++] = 1;
        }
    }
    return true;
}

sa_status pool_fits_split(const pool_alloc *a, const sa_dfg_graph *g, sa_err *err)
{
    split_scratch x;
    if (!split_scratch_init(&x, g))
        return sa_fail(err, SA_ENOMEM, "out of memory checking a pool");
    bool fits = fits_split(a, g, &x);
    split_scratch_free(&x);
    return fits ? SA_OK : sa_fail(err, SA_EINFEASIBLE, "some op cannot place its tensors in the pool's objects");
}

sa_status pool_need_split(pool_alloc *a, const sa_dfg_graph *g, int64_t memory_bytes, int32_t *need, sa_err *err)
{
    int32_t nc = a->n_classes;
    split_scratch x;
    int32_t *keep = malloc(((size_t)nc + 1) * sizeof *keep);
    if (!keep || !split_scratch_init(&x, g)) {
        free(keep);
        return sa_fail(err, SA_ENOMEM, "out of memory sizing the pool");
    }
    memcpy(keep, a->cnt, (size_t)nc * sizeof *keep);
    pool_need_shared(a, g, need);
    int64_t bytes = 0;
    for (int32_t c = 0; c < nc; c++) {
        a->cnt[c] = need[c];
        bytes = sa_add_sat(bytes, sa_mul_sat(need[c], a->obj_bytes[c]));
    }
    /* Largest objects first (they free the most), each class until dropping
     * one more no longer fits; a class that failed is not tried again. */
    for (int32_t c = nc - 1; c >= 0 && bytes > memory_bytes; c--)
        while (bytes > memory_bytes && a->cnt[c] > 0) {
            a->cnt[c]--;
            if (!fits_split(a, g, &x)) {
                a->cnt[c]++;
                break;
            }
            bytes -= a->obj_bytes[c];
        }
    memcpy(need, a->cnt, (size_t)nc * sizeof *need);
    memcpy(a->cnt, keep, (size_t)nc * sizeof *keep);
    free(keep);
    split_scratch_free(&x);
    if (bytes > memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE, "the pool needs %lld bytes even splitting objects, more than %lld",
                       (long long)bytes, (long long)memory_bytes);
    return SA_OK;
}

sa_status pool_repair_any(pool_alloc *a, const sa_dfg_graph *g, int32_t *need, int64_t memory_bytes, bool split,
                          sa_err *err)
{
    sa_status st;
    pool_need(a, g, need);
    if ((st = pool_repair_cnt(a, g, need, memory_bytes, err)) != SA_EINFEASIBLE)
        return st;
    pool_need_shared(a, g, need);
    if ((st = pool_repair_cnt(a, g, need, memory_bytes, err)) != SA_EINFEASIBLE || !split)
        return st;
    if ((st = pool_need_split(a, g, memory_bytes, need, err)))
        return st;
    return pool_repair_cnt(a, g, need, memory_bytes, err);
}

sa_status pool_repair_cnt(pool_alloc *a, const sa_dfg_graph *g, const int32_t *need, int64_t memory_bytes, sa_err *err)
{
    int32_t nc = a->n_classes;
    for (int32_t c = 0; c < nc; c++)
        if (a->cnt[c] < need[c])
            a->cnt[c] = need[c];
    if (!pool_layout(a, g))
        return sa_fail(err, SA_ENOMEM, "out of memory laying out the pool");
    for (int round = 0; a->pool_bytes > memory_bytes && round < 64; round++) {
        int32_t movable = 0;
        for (int32_t c = 0; c < nc; c++)
            movable += a->cnt[c] > need[c];
        if (movable == 0)
            break;
        /* each class that can shrink gives up about excess / movable bytes */
        double share = (double)(a->pool_bytes - memory_bytes) / movable;
        for (int32_t c = 0; c < nc; c++) {
            if (a->cnt[c] <= need[c])
                continue;
            int32_t d = (int32_t)ceil(share / (double)a->obj_bytes[c]);
            if (d < 1)
                d = 1;
            a->cnt[c] = a->cnt[c] - d < need[c] ? need[c] : a->cnt[c] - d;
        }
        if (!pool_layout(a, g))
            return sa_fail(err, SA_ENOMEM, "out of memory laying out the pool");
    }
    if (a->pool_bytes > memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE, "the pool's floors need %lld bytes, more than %lld",
                       (long long)a->pool_bytes, (long long)memory_bytes);
    return SA_OK;
}

sa_status pool_fill_cnt(pool_alloc *a, const sa_dfg_graph *g, const int32_t *need, const int32_t *demand,
                        int64_t memory_bytes, sa_err *err)
{
    int32_t nc = a->n_classes;
    pool_layout_sizes(a, g);
    int64_t used = 0, want = 0;
    for (int32_t c = 0; c < nc; c++) {
        a->cnt[c] = need[c];
        used = sa_add_sat(used, sa_mul_sat(need[c], a->obj_bytes[c]));
        want = sa_add_sat(want, sa_mul_sat((int64_t)demand[c] - need[c], a->obj_bytes[c]));
    }
    if (used > memory_bytes) {
        int32_t worst = 0;
        for (int32_t c = 1; c < nc; c++)
            if (sa_mul_sat(need[c], a->obj_bytes[c]) > sa_mul_sat(need[worst], a->obj_bytes[worst]))
                worst = c;
        return sa_fail(err, SA_EINFEASIBLE,
                       "the pool needs %lld bytes for the tensors single ops use at once (class of %lld-byte objects "
                       "needs %d), more than the %lld bytes of memory",
                       (long long)used, (long long)a->obj_bytes[worst], need[worst], (long long)memory_bytes);
    }
    int64_t spare = memory_bytes - used;
    if (want > 0) {
        double share = spare >= want ? 1.0 : (double)spare / (double)want;
        for (int32_t c = 0; c < nc; c++) {
            int32_t extra = (int32_t)((double)(demand[c] - need[c]) * share);
            a->cnt[c] += extra;
            spare -= (int64_t)extra * a->obj_bytes[c];
        }
        /* hand out what rounding left, largest objects first so little is wasted */
        for (bool more = true; more;) {
            more = false;
            for (int32_t c = nc - 1; c >= 0; c--)
                if (a->cnt[c] < demand[c] && a->obj_bytes[c] <= spare) {
                    a->cnt[c]++;
                    spare -= a->obj_bytes[c];
                    more = true;
                }
        }
    }
    if (!pool_layout(a, g))
        return sa_fail(err, SA_ENOMEM, "out of memory laying out the pool");
    return SA_OK;
}

void pool_top_up(pool_alloc *a, int64_t memory_bytes)
{
    int32_t nc = a->n_classes;
    int64_t used = a->pool_bytes, spare = memory_bytes - used;
    if (spare <= 0 || used <= 0 || a->max_use <= 0)
        return;
    /* every class grows by the same fraction of its bytes, which keeps the
     * shape the search chose; what rounding leaves goes to the largest
     * objects that still fit; no class past the objects it can use */
    double grow = (double)spare / (double)used;
    for (int32_t c = 0; c < nc; c++) {
        int32_t room = a->cls_cap[c] - a->cnt[c];
        double want = (double)a->cnt[c] * grow;
        int32_t extra = room <= 0 ? 0 : want >= (double)room ? room : (int32_t)want;
        a->cnt[c] += extra;
        spare -= sa_mul_sat(extra, a->obj_bytes[c]);
    }
    for (int32_t c = nc - 1; c >= 0; c--)
        if (a->obj_bytes[c] > 0 && a->obj_bytes[c] <= spare && a->cnt[c] < a->cls_cap[c]) {
            int64_t extra = spare / a->obj_bytes[c];
            if (extra > a->cls_cap[c] - a->cnt[c])
                extra = a->cls_cap[c] - a->cnt[c];
            a->cnt[c] += (int32_t)extra;
            spare -= extra * a->obj_bytes[c];
        }
}

/* Bytes of the floor: every class holding the most tensors one op needs of it
 * (shared: counting what borrowed larger objects hold, see pool_need_shared). */
static int64_t floor_bytes(pool_alloc *a, const sa_dfg_graph *g, bool shared, int32_t *need)
{
    if (shared)
        pool_need_shared(a, g, need);
    else
        pool_need(a, g, need);
    pool_layout_sizes(a, g);
    int64_t b = 0;
    for (int32_t c = 0; c < a->n_classes; c++)
        b = sa_add_sat(b, sa_mul_sat(need[c], a->obj_bytes[c]));
    return b;
}

static void one_class_per_size(pool_alloc *a)
{
    for (int32_t i = 0; i < a->n_sizes; i++)
        a->cls[i] = i;
    pool_repair_cls(a);
}

bool pool_fixed_fits(const sa_dfg_graph *g, int64_t memory_bytes, bool *fits)
{
    pool_alloc a;
    int32_t *need = calloc((size_t)g->n_sizes + 1, sizeof *need);
    if (!need || !pool_alloc_init(&a, g->n_sizes)) {
        free(need);
        return false;
    }
    one_class_per_size(&a);
    int64_t lowest = floor_bytes(&a, g, true, need);
    *fits = lowest <= memory_bytes;
    pool_alloc_free(&a);
    free(need);
    return true;
}

sa_status pool_fine_grained(pool_alloc *a, const sa_dfg_graph *g, const int32_t *schedule, int64_t memory_bytes,
                            sa_err *err)
{
    one_class_per_size(a);
    int32_t *need = calloc((size_t)a->n_sizes + 1, sizeof *need);
    int32_t *demand = calloc((size_t)a->n_sizes + 1, sizeof *demand);
    if (!need || !demand) {
        free(need);
        free(demand);
        return sa_fail(err, SA_ENOMEM, "out of memory sizing the pool");
    }
    /* Fixed objects per class cannot lend memory to each other, so the per-class
     * floors can add up past the memory even when every op fits.  Then merge
     * the two adjacent classes whose sizes are closest (least padding) until
     * the floor fits or one class is left. */
    int64_t own_floor;
    while ((own_floor = floor_bytes(a, g, false, need)) > memory_bytes && a->n_classes > 1) {
        int32_t best = -1;
        double ratio = 0;
        for (int32_t c = 0; c + 1 < a->n_classes; c++) {
            double r = (double)a->obj_bytes[c + 1] / (double)a->obj_bytes[c];
            if (best < 0 || r < ratio) {
                best = c;
                ratio = r;
            }
        }
        for (int32_t i = 0; i < a->n_sizes; i++)
            if (a->cls[i] > best)
                a->cls[i]--;
        pool_repair_cls(a);
    }
    bool shared = own_floor > memory_bytes;
    if (shared) {
        /* The last resorts: one class per size again, with floors that count
         * on tensors borrowing larger objects when their own class is full
         * (place.c does).  The smallest floor of any fixed-object pool: sharing
         * a class only pads small tensors up to larger objects.  Below it,
         * the planner splits objects between an op's smaller tensors, and
         * the floors drop the objects that makes unnecessary. */
        one_class_per_size(a);
        int64_t lowest = floor_bytes(a, g, true, need);
        sa_status sst = lowest > memory_bytes ? pool_need_split(a, g, memory_bytes, need, err) : SA_OK;
        if (sst == SA_ENOMEM) {
            free(need);
            free(demand);
            return sst;
        }
        if (sst) {
            lowest = 0;
            for (int32_t c = 0; c < a->n_classes; c++)
                lowest = sa_add_sat(lowest, sa_mul_sat(need[c], a->obj_bytes[c]));
            int32_t op = -1;
            int64_t one = sa_dfg_max_op_bytes(g, &op);
            free(need);
            free(demand);
            return sa_fail(err, SA_EINFEASIBLE,
                           "the pool needs at least %lld bytes so that every op can hold its tensors at once (even "
                           "splitting objects between an op's tensors; the largest op, %d \"%s\", needs %lld alone), "
                           "more than the %lld bytes of memory",
                           (long long)lowest, op, op >= 0 ? g->ops[op].name : "", (long long)one,
                           (long long)memory_bytes);
        }
    }
    /* need keeps the floors chosen above (borrowing or splitting) */
    int32_t *own = shared ? calloc((size_t)a->n_sizes + 1, sizeof *own) : need;
    if (!own) {
        free(need);
        free(demand);
        return sa_fail(err, SA_ENOMEM, "out of memory sizing the pool");
    }
    pool_class_demand(a, g, schedule, own, demand);
    if (own != need)
        free(own);
    sa_status st = pool_fill_cnt(a, g, need, demand, memory_bytes, err);
    free(need);
    free(demand);
    return st;
}
