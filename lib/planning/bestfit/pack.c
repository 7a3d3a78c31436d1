/* pack.c - SmartPool's offline best-fit packing of a plan's placements: each block
 * takes the best-fitting hole among the blocks already placed whose lifetimes overlap
 * its own, so no two placements live at the same time share a byte. */
#include "swapadvisor/pack.h"

#include <stdlib.h>
#include <string.h>

#include "swapadvisor/pool.h"
#include "fitidx.h"

void pack_opts_default(pack_opts *o)
{
    o->align = POOL_ALIGN;
    o->keep_if_worse = false;
}

/* One block: one placement, or a resident tensor's first and last placements,
 * which must share an offset (two lifetimes).  Lifetimes are half-open
 * intervals [s, a) of "half positions" on the compute stream: node j of the
 * compute stream runs over [2j, 2j + 1]; a transfer that the compute-stream
 * node c waits for has ended by 2c, one that waits for node c has begun after
 * 2c + 1.  Two blocks whose intervals are disjoint are ordered by the
 * dependency graph (the end of one happens before the start of the other). */
typedef struct blk {
    int64_t size;           /* bytes rounded up to align */
    int64_t off;
    int32_t s[2], a[2];     /* second interval only when pl1 >= 0 */
    int32_t pl0, pl1;       /* placements */
} blk;

/* The buffers one packing uses, kept across calls (pack.h). */
struct pack_ws {
    int32_t node_cap;                          /* per node: */
    int32_t *spos, *cnode, *ls, *la;           /* stream position, compute nodes, lifetimes */
    int32_t (*vc)[SA_PLAN_STREAM_COUNT];          /* clocks */
    int32_t t_cap;                             /* per tensor: */
    int32_t *first, *lastp;                    /* first placement from the start, last to the end */
    int32_t b_cap;                             /* per placement: */
    blk *b;
    int32_t *ord, *ord2;                       /* blocks in packing order, and the sort's other buffer */
    int64_t *old;                              /* keep_if_worse's copy of the offsets */
    int32_t diff_cap;
    int64_t *diff;                             /* peak load's sweep */
    int32_t res_cap;
    int64_t *old_res;
    int32_t cnt_cap;
    int32_t *cnt;                              /* the sort's counts */
    fit_ws *fit;
};

pack_ws *pack_ws_new(void)
{
    pack_ws *w = calloc(1, sizeof *w);
    if (w && !(w->fit = fit_ws_new())) {
        free(w);
        return NULL;
    }
    return w;
}

static void free_nodes(pack_ws *w)
{
    free(w->spos);
    free(w->cnode);
    free(w->ls);
    free(w->la);
    free(w->vc);
    w->spos = w->cnode = w->ls = w->la = NULL;
    w->vc = NULL;
    w->node_cap = 0;
}

static void free_blocks(pack_ws *w)
{
    free(w->b);
    free(w->ord);
    free(w->ord2);
    free(w->old);
    w->b = NULL;
    w->ord = w->ord2 = NULL;
    w->old = NULL;
    w->b_cap = 0;
}

void pack_ws_free(pack_ws *w)
{
    if (!w)
        return;
    free_nodes(w);
    free_blocks(w);
    free(w->first);
    free(w->lastp);
    free(w->diff);
    free(w->old_res);
    free(w->cnt);
    fit_ws_free(w->fit);
    free(w);
}

static int32_t grown(int32_t cap, int64_t need)
{
    int64_t c = cap > 0 ? cap : 64;
    while (c < need)
        c *= 2;
    return c > INT32_MAX ? -1 : (int32_t)c;
}

/* Room for n + 1 nodes, t + 1 tensors and b + 1 placements. */
static bool ws_reserve(pack_ws *w, int32_t n, int32_t t, int32_t b)
{
    if (n + 1 > w->node_cap) {
        int32_t c = grown(w->node_cap, (int64_t)n + 1);
        free_nodes(w);
        if (c < 0)
            return false;
        w->spos = malloc((size_t)c * sizeof *w->spos);
        w->cnode = malloc((size_t)c * sizeof *w->cnode);
        w->ls = malloc((size_t)c * sizeof *w->ls);
        w->la = malloc((size_t)c * sizeof *w->la);
        w->vc = malloc((size_t)c * sizeof *w->vc);
        if (!w->spos || !w->cnode || !w->ls || !w->la || !w->vc) {
            free_nodes(w);
            return false;
        }
        w->node_cap = c;
    }
    if (t + 1 > w->t_cap) {
        int32_t c = grown(w->t_cap, (int64_t)t + 1);
        free(w->first);
        free(w->lastp);
        w->first = w->lastp = NULL;
        w->t_cap = 0;
        if (c < 0)
            return false;
        w->first = malloc((size_t)c * sizeof *w->first);
        w->lastp = malloc((size_t)c * sizeof *w->lastp);
        if (!w->first || !w->lastp)
            return false;
        w->t_cap = c;
    }
    if (b + 1 > w->b_cap) {
        int32_t c = grown(w->b_cap, (int64_t)b + 1);
        free_blocks(w);
        if (c < 0)
            return false;
        w->b = malloc((size_t)c * sizeof *w->b);
        w->ord = malloc((size_t)c * sizeof *w->ord);
        w->ord2 = malloc((size_t)c * sizeof *w->ord2);
        w->old = malloc((size_t)c * sizeof *w->old);
        if (!w->b || !w->ord || !w->ord2 || !w->old) {
            free_blocks(w);
            return false;
        }
        w->b_cap = c;
    }
    return true;
}

typedef struct life {
    const int32_t *s, *a;  /* per node */
    int32_t inf;           /* past every compute-stream node */
} life;

/* Per node: when it has begun after (s) and ended by (a), in half positions. */
static sa_status lifetimes(const sa_plan *p, pack_ws *w, life *l, sa_err *err)
{
    int32_t n = p->n_nodes;
    sa_status st;
    int32_t *spos = w->spos, *cnode = w->cnode, *ls = w->ls, *la = w->la;
    int32_t (*vc)[SA_PLAN_STREAM_COUNT] = w->vc;
    memset(vc, 0, ((size_t)n + 1) * sizeof *vc);
    /* the validator's clocks: vc[b][s] = how many nodes of stream s finish
     * before b starts by stream order and deps alone */
    if ((st = sa_plan_clocks(p, spos, vc, err)))
        return st;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (sa_plan_kind_stream(p->nodes[i].kind) == SA_PLAN_STREAM_COMPUTE)
            cnode[m++] = i;
    l->inf = 2 * m + 2;
    /* a transfer's end: the first compute-stream node whose clock covers it
     * (clocks only grow along a stream, so one sweep per stream) */
    for (int s = SA_PLAN_STREAM_H2D; s < SA_PLAN_STREAM_COUNT; s++) {
        int32_t c = 0;
        for (int32_t i = 0; i < n; i++) {
            if (sa_plan_kind_stream(p->nodes[i].kind) != (sa_plan_stream)s)
                continue;
            while (c < m && vc[cnode[c]][s] < spos[i] + 1)
                c++;
            la[i] = c < m ? 2 * c : l->inf;
            ls[i] = 2 * vc[i][SA_PLAN_STREAM_COMPUTE] - 1;
        }
    }
    for (int32_t c = 0; c < m; c++) {
        ls[cnode[c]] = 2 * c;
        la[cnode[c]] = 2 * c + 1;
    }
    l->s = ls;
    l->a = la;
    return SA_OK;
}

static void interval(const sa_plan *p, const life *l, int32_t pl, int32_t *s, int32_t *a)
{
    const sa_plan_placement *q = &p->place[pl];
    *s = q->begin < 0 ? -2 : l->s[q->begin];
    *a = q->end < 0 ? l->inf : l->a[q->end];
    if (*a <= *s)
        *a = *s + 1; /* never empty: a longer lifetime only adds conflicts */
}

/* Blocks of p into w->b: *nb of them; *top = the largest lifetime end. */
static sa_status make_blocks(const sa_plan *p, const sa_dfg_graph *g, int64_t align, pack_ws *w, int32_t *nb, int32_t *top,
                             sa_err *err)
{
    if (!ws_reserve(w, p->n_nodes, g->n_tensors, p->n_place))
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    life l;
    sa_status st = lifetimes(p, w, &l, err);
    if (st)
        return st;
    int32_t *first = w->first, *lastp = w->lastp;
    blk *b = w->b;
    for (int32_t t = 0; t < g->n_tensors; t++)
        first[t] = lastp[t] = -1;
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        if (q->begin < 0 && first[q->tensor] < 0)
            first[q->tensor] = i;
        if (q->end < 0)
            lastp[q->tensor] = i;
    }
    for (int32_t r = 0; r < p->n_res; r++)
        if (first[p->res[r].tensor] < 0)
            return sa_fail(err, SA_EINVALID, "pack: resident tensor %d (\"%s\") has no placement from the start of the "
                           "iteration", p->res[r].tensor, g->tensors[p->res[r].tensor].name);
    int32_t k = 0, m = 0;
    for (int32_t i = 0; i < p->n_place; i++) {
        int32_t t = p->place[i].tensor;
        if (lastp[t] == i && first[t] >= 0 && first[t] != i)
            continue; /* joins the block of the tensor's first placement */
        blk *x = &b[k++];
        x->size = (g->tensors[t].bytes + align - 1) / align * align;
        x->pl0 = i;
        x->pl1 = (first[t] == i && lastp[t] >= 0 && lastp[t] != i) ? lastp[t] : -1;
        interval(p, &l, i, &x->s[0], &x->a[0]);
        if (x->a[0] > m)
            m = x->a[0];
        if (x->pl1 >= 0) {
            interval(p, &l, x->pl1, &x->s[1], &x->a[1]);
            if (x->a[1] > m)
                m = x->a[1];
        }
    }
    *nb = k;
    *top = m;
    return SA_OK;
}

/* The most bytes live at once: a sweep over the lifetimes' points -2 .. top. */
static sa_status peak_of(pack_ws *w, int32_t nb, int32_t top, int64_t *peak, sa_err *err)
{
    /* points -2 .. top + 1 shifted by 2 */
    int32_t need = top + 4;
    if (need > w->diff_cap) {
        int32_t c = grown(w->diff_cap, need);
        free(w->diff);
        w->diff = c < 0 ? NULL : malloc((size_t)c * sizeof *w->diff);
        w->diff_cap = w->diff ? c : 0;
        if (!w->diff)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    }
    int64_t *diff = w->diff;
    memset(diff, 0, (size_t)need * sizeof *diff);
    const blk *b = w->b;
    for (int32_t i = 0; i < nb; i++) {
        /* a resident's two lifetimes hold one range: where they overlap (a
         * swap-in that the compute stream sees begin before the swap-out
         * ahead of it ends) it counts once */
        bool one = b[i].pl1 >= 0 && b[i].s[1] < b[i].a[0];
        int32_t a0 = one && b[i].a[1] > b[i].a[0] ? b[i].a[1] : b[i].a[0];
        diff[b[i].s[0] + 2] += b[i].size;
        diff[a0 + 2] -= b[i].size;
        if (b[i].pl1 >= 0 && !one) {
            diff[b[i].s[1] + 2] += b[i].size;
            diff[b[i].a[1] + 2] -= b[i].size;
        }
    }
    int64_t cur = 0, pk = 0;
    for (int32_t i = 0; i < need; i++) {
        cur += diff[i];
        if (cur > pk)
            pk = cur;
    }
    *peak = pk;
    return SA_OK;
}

/* w->ord = the packing order: size descending, then lifetime start, then
 * placement.  The blocks come in placement order, so stable counting sorts,
 * by start and then by size (11-bit digits of ~size, least significant
 * first, skipping digits all blocks share), give exactly that order. */
static sa_status sort_blocks(pack_ws *w, int32_t nb, int32_t top, sa_err *err)
{
    enum { DIGIT = 11, RADIX = 1 << DIGIT };
    int64_t need = top + 4 > RADIX ? top + 4 : RADIX;
    if (need > w->cnt_cap) {
        int32_t c = grown(w->cnt_cap, need);
        free(w->cnt);
        w->cnt = c < 0 ? NULL : malloc((size_t)c * sizeof *w->cnt);
        w->cnt_cap = w->cnt ? c : 0;
        if (!w->cnt)
            return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    }
    const blk *b = w->b;
    int32_t *cnt = w->cnt, *src = w->ord, *dst = w->ord2;
    /* by start: points -2 .. top shifted by 2 */
    memset(cnt, 0, (size_t)(top + 4) * sizeof *cnt);
    for (int32_t i = 0; i < nb; i++)
        cnt[b[i].s[0] + 2]++;
    for (int32_t v = 0, sum = 0; v < top + 4; v++) {
        int32_t c = cnt[v];
        cnt[v] = sum;
        sum += c;
    }
    for (int32_t i = 0; i < nb; i++)
        src[cnt[b[i].s[0] + 2]++] = i;
    /* by ~size, digit by digit */
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (int32_t i = 0; i < nb; i++) {
        all_or |= ~(uint64_t)b[i].size;
        all_and &= ~(uint64_t)b[i].size;
    }
    for (int shift = 0; shift < 64; shift += DIGIT) {
        uint64_t mask = (uint64_t)(RADIX - 1) << shift;
        if ((all_or & mask) == (all_and & mask))
            continue; /* every block has this digit */
        memset(cnt, 0, RADIX * sizeof *cnt);
        for (int32_t i = 0; i < nb; i++)
            cnt[(~(uint64_t)b[src[i]].size >> shift) & (RADIX - 1)]++;
        for (int32_t v = 0, sum = 0; v < RADIX; v++) {
            int32_t c = cnt[v];
            cnt[v] = sum;
            sum += c;
        }
        for (int32_t i = 0; i < nb; i++)
            dst[cnt[(~(uint64_t)b[src[i]].size >> shift) & (RADIX - 1)]++] = src[i];
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != w->ord)
        memcpy(w->ord, src, (size_t)nb * sizeof *src);
    return SA_OK;
}

/* Best fit of w's nb blocks, largest first: sets each block's off. */
static sa_status best_fit(pack_ws *w, int32_t nb, int32_t top, sa_err *err)
{
    blk *b = w->b;
    int32_t *ord = w->ord;
    sa_status st = sort_blocks(w, nb, top, err);
    if (!st)
        st = fit_reset(w->fit, -2, top + 1, err);
    for (int32_t i = 0; !st && i < nb; i++) {
        blk *x = &b[ord[i]];
        int n = x->pl1 >= 0 ? 2 : 1;
        x->off = fit_find(w->fit, x->size, x->s, x->a, n);
        st = fit_insert(w->fit, x->off, x->size, x->s, x->a, n, err);
    }
    return st;
}

/* The blocks of p in w and their peak load. */
static sa_status prepare(const sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_ws *w, int32_t *nb,
                         int32_t *top, int64_t *peak, sa_err *err)
{
    pack_opts d;
    pack_opts_default(&d);
    int64_t align = o && o->align > 0 ? o->align : d.align;
    sa_status st = make_blocks(p, g, align, w, nb, top, err);
    return st ? st : peak_of(w, *nb, *top, peak, err);
}

sa_status pack_peak_load_ws(const sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_ws *w, int64_t *peak,
                            sa_err *err)
{
    pack_ws *own = w ? NULL : pack_ws_new();
    if (!w && !own)
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    int32_t nb, top;
    int64_t pk = 0;
    sa_status st = prepare(p, g, o, w ? w : own, &nb, &top, &pk, err);
    if (!st)
        *peak = pk;
    pack_ws_free(own);
    return st;
}

sa_status pack_plan_ws(sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_ws *w, int64_t limit, pack_stats *stats,
                       sa_err *err)
{
    pack_opts d;
    pack_opts_default(&d);
    if (!o)
        o = &d;
    pack_ws *own = w ? NULL : pack_ws_new();
    if (!w && !own)
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    if (!w)
        w = own;
    int64_t align = o->align > 0 ? o->align : d.align;
    int32_t nb = 0, top = 0;
    pack_stats s = {p->arena_bytes, p->arena_bytes, 0, 0, false, 0};
    sa_status st = prepare(p, g, o, w, &nb, &top, &s.peak_load, err);
    s.n_blocks = nb;
    if (st)
        goto out;
    /* the blocks live at the peak's point are disjoint and rounded up to
     * align from aligned offsets: the highest ends at peak_load or above, and
     * its tensor's own bytes at most align - 1 below that */
    if (limit > 0 && s.peak_load - (align - 1) > limit) {
        if (stats)
            *stats = s; /* arena_after: still the plan's own */
        st = SA_EINFEASIBLE;
        goto out;
    }
    if (o->keep_if_worse && p->n_res + 1 > w->res_cap) {
        int32_t c = grown(w->res_cap, (int64_t)p->n_res + 1);
        free(w->old_res);
        w->old_res = c < 0 ? NULL : malloc((size_t)c * sizeof *w->old_res);
        w->res_cap = w->old_res ? c : 0;
        if (!w->old_res) {
            st = sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
            goto out;
        }
    }
    if ((st = best_fit(w, nb, top, err)))
        goto out;
    s.work = fit_work(w->fit);
    const blk *b = w->b;
    if (o->keep_if_worse) {
        for (int32_t i = 0; i < p->n_place; i++)
            w->old[i] = p->place[i].offset;
        for (int32_t r = 0; r < p->n_res; r++)
            w->old_res[r] = p->res[r].offset;
    }
    for (int32_t i = 0; i < nb; i++) {
        p->place[b[i].pl0].offset = b[i].off;
        if (b[i].pl1 >= 0)
            p->place[b[i].pl1].offset = b[i].off;
    }
    /* a resident starts where its first placement from the start lies */
    for (int32_t r = 0; r < p->n_res; r++)
        p->res[r].offset = p->place[w->first[p->res[r].tensor]].offset;
    int64_t arena = 0;
    for (int32_t i = 0; i < p->n_place; i++) {
        int64_t e = p->place[i].offset + g->tensors[p->place[i].tensor].bytes;
        if (e > arena)
            arena = e;
    }
    if (o->keep_if_worse && arena > s.arena_before) {
        for (int32_t i = 0; i < p->n_place; i++)
            p->place[i].offset = w->old[i];
        for (int32_t r = 0; r < p->n_res; r++)
            p->res[r].offset = w->old_res[r];
        arena = s.arena_before;
        s.kept = true;
    }
    p->arena_bytes = arena;
    s.arena_after = arena;
    if (stats)
        *stats = s;
out:
    pack_ws_free(own);
    return st;
}

sa_status pack_peak_load(const sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, int64_t *peak, sa_err *err)
{
    return pack_peak_load_ws(p, g, o, NULL, peak, err);
}

sa_status pack_plan(sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_stats *stats, sa_err *err)
{
    return pack_plan_ws(p, g, o, NULL, 0, stats, err);
}
