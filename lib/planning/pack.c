/* pack.c - SmartPool's offline best-fit packing of a plan's placements. */
#include "swapadvisor/pack.h"

#include <stdlib.h>
#include <string.h>

#include "swapadvisor/pool.h"

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
    int64_t size;          /* bytes rounded up to align */
    int64_t off;
    int32_t s0, a0, s1, a1; /* second interval only when pl1 >= 0 */
    int32_t pl0, pl1;      /* placements */
} blk;

typedef struct life {
    int32_t *s, *a;        /* per node */
    int32_t inf;           /* past every compute-stream node */
} life;

static void life_free(life *l)
{
    free(l->s);
    free(l->a);
}

/* Per node: when it has begun after (s) and ended by (a), in half positions. */
static sa_status lifetimes(const plan *p, life *l, sa_err *err)
{
    int32_t n = p->n_nodes;
    sa_status st = SA_OK;
    int32_t *spos = calloc((size_t)n + 1, sizeof *spos), *cnode = calloc((size_t)n + 1, sizeof *cnode);
    int32_t (*vc)[PLAN_STREAM_COUNT] = calloc((size_t)n + 1, sizeof *vc);
    l->s = calloc((size_t)n + 1, sizeof *l->s);
    l->a = calloc((size_t)n + 1, sizeof *l->a);
    if (!spos || !cnode || !vc || !l->s || !l->a) {
        st = sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        goto out;
    }
    /* the validator's clocks: vc[b][s] = how many nodes of stream s finish
     * before b starts by stream order and deps alone */
    if ((st = plan_clocks(p, spos, vc, err)))
        goto out;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (plan_kind_stream(p->nodes[i].kind) == PLAN_STREAM_COMPUTE)
            cnode[m++] = i;
    l->inf = 2 * m + 2;
    /* a transfer's end: the first compute-stream node whose clock covers it
     * (clocks only grow along a stream, so one sweep per stream) */
    for (int s = PLAN_STREAM_H2D; s < PLAN_STREAM_COUNT; s++) {
        int32_t c = 0;
        for (int32_t i = 0; i < n; i++) {
            if (plan_kind_stream(p->nodes[i].kind) != (plan_stream)s)
                continue;
            while (c < m && vc[cnode[c]][s] < spos[i] + 1)
                c++;
            l->a[i] = c < m ? 2 * c : l->inf;
            l->s[i] = 2 * vc[i][PLAN_STREAM_COMPUTE] - 1;
        }
    }
    for (int32_t c = 0; c < m; c++) {
        l->s[cnode[c]] = 2 * c;
        l->a[cnode[c]] = 2 * c + 1;
    }
out:
    free(spos);
    free(cnode);
    free(vc);
    if (st)
        life_free(l);
    return st;
}

static inline bool ov(int32_t s0, int32_t a0, int32_t s1, int32_t a1) { return s0 < a1 && s1 < a0; }

static inline bool conflict(const blk *x, const blk *y)
{
    if (ov(x->s0, x->a0, y->s0, y->a0))
        return true;
    if (x->pl1 >= 0 && ov(x->s1, x->a1, y->s0, y->a0))
        return true;
    if (y->pl1 >= 0 && (ov(x->s0, x->a0, y->s1, y->a1) || (x->pl1 >= 0 && ov(x->s1, x->a1, y->s1, y->a1))))
        return true;
    return false;
}

static void interval(const plan *p, const life *l, int32_t pl, int32_t *s, int32_t *a)
{
    const plan_placement *q = &p->place[pl];
    *s = q->begin < 0 ? -2 : l->s[q->begin];
    *a = q->end < 0 ? l->inf : l->a[q->end];
    if (*a <= *s)
        *a = *s + 1; /* never empty: a longer lifetime only adds conflicts */
}

/* Blocks of p: *nb of them in *out (caller frees). */
static sa_status make_blocks(const plan *p, const dfg_graph *g, int64_t align, blk **out, int32_t *nb, sa_err *err)
{
    life l;
    sa_status st = lifetimes(p, &l, err);
    if (st)
        return st;
    blk *b = calloc((size_t)p->n_place + 1, sizeof *b);
    int32_t *first = calloc((size_t)g->n_tensors + 1, sizeof *first), *lastp = calloc((size_t)g->n_tensors + 1, sizeof *lastp);
    if (!b || !first || !lastp) {
        st = sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        goto out;
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        first[t] = lastp[t] = -1;
    for (int32_t i = 0; i < p->n_place; i++) {
        const plan_placement *q = &p->place[i];
        if (q->begin < 0 && first[q->tensor] < 0)
            first[q->tensor] = i;
        if (q->end < 0)
            lastp[q->tensor] = i;
    }
    for (int32_t r = 0; r < p->n_res; r++)
        if (first[p->res[r].tensor] < 0) {
            st = sa_fail(err, SA_EINVALID, "pack: resident tensor %d (\"%s\") has no placement from the start of the "
                         "iteration", p->res[r].tensor, g->tensors[p->res[r].tensor].name);
            goto out;
        }
    int32_t k = 0;
    for (int32_t i = 0; i < p->n_place; i++) {
        int32_t t = p->place[i].tensor;
        if (lastp[t] == i && first[t] >= 0 && first[t] != i)
            continue; /* joins the block of the tensor's first placement */
        blk *x = &b[k++];
        x->size = (g->tensors[t].bytes + align - 1) / align * align;
        x->pl0 = i;
        x->pl1 = (first[t] == i && lastp[t] >= 0 && lastp[t] != i) ? lastp[t] : -1;
        interval(p, &l, i, &x->s0, &x->a0);
        if (x->pl1 >= 0)
            interval(p, &l, x->pl1, &x->s1, &x->a1);
    }
    *nb = k;
    *out = b;
    b = NULL;
out:
    free(b);
    free(first);
    free(lastp);
    life_free(&l);
    return st;
}

static int64_t peak_of(const blk *b, int32_t nb, int32_t inf, int64_t *diff)
{
    /* diff has inf + 4 entries: points -2 .. inf + 1 shifted by 2 */
    memset(diff, 0, ((size_t)inf + 4) * sizeof *diff);
    for (int32_t i = 0; i < nb; i++) {
        diff[b[i].s0 + 2] += b[i].size;
        diff[b[i].a0 + 2] -= b[i].size;
        if (b[i].pl1 >= 0) {
            diff[b[i].s1 + 2] += b[i].size;
            diff[b[i].a1 + 2] -= b[i].size;
        }
    }
    int64_t cur = 0, peak = 0;
    for (int32_t i = 0; i < inf + 4; i++) {
        cur += diff[i];
        if (cur > peak)
            peak = cur;
    }
    return peak;
}

static int32_t max_point(const blk *b, int32_t nb)
{
    int32_t m = 0;
    for (int32_t i = 0; i < nb; i++) {
        if (b[i].a0 > m) m = b[i].a0;
        if (b[i].pl1 >= 0 && b[i].a1 > m) m = b[i].a1;
    }
    return m;
}

static int cmp_blk(const void *x, const void *y)
{
    const blk *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->s0 != b->s0)
        return a->s0 < b->s0 ? -1 : 1;
    return a->pl0 - b->pl0;
}

sa_status pack_peak_load(const plan *p, const dfg_graph *g, const pack_opts *o, int64_t *peak, sa_err *err)
{
    pack_opts d;
    pack_opts_default(&d);
    int64_t align = o && o->align > 0 ? o->align : d.align;
    blk *b = NULL;
    int32_t nb = 0;
    sa_status st = make_blocks(p, g, align, &b, &nb, err);
    if (st)
        return st;
    int32_t inf = max_point(b, nb);
    int64_t *diff = calloc((size_t)inf + 4, sizeof *diff);
    if (!diff) {
        free(b);
        return sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
    }
    *peak = peak_of(b, nb, inf, diff);
    free(diff);
    free(b);
    return SA_OK;
}

sa_status pack_plan(plan *p, const dfg_graph *g, const pack_opts *o, pack_stats *stats, sa_err *err)
{
    pack_opts d;
    pack_opts_default(&d);
    if (!o)
        o = &d;
    int64_t align = o->align > 0 ? o->align : d.align;
    blk *b = NULL;
    int32_t nb = 0;
    sa_status st = make_blocks(p, g, align, &b, &nb, err);
    if (st)
        return st;
    int32_t inf = max_point(b, nb);
    int64_t *diff = calloc((size_t)inf + 4, sizeof *diff);
    int32_t *placed = calloc((size_t)nb + 1, sizeof *placed); /* block ids by ascending offset */
    int64_t *old_place = calloc((size_t)p->n_place + 1, sizeof *old_place);
    int64_t *old_res = calloc((size_t)p->n_res + 1, sizeof *old_res);
    if (!diff || !placed || !old_place || !old_res) {
        st = sa_fail(err, SA_ENOMEM, "out of memory packing the arena");
        goto out;
    }
    pack_stats s = {p->arena_bytes, 0, peak_of(b, nb, inf, diff), nb, false};
    qsort(b, (size_t)nb, sizeof *b, cmp_blk);
    int32_t np = 0;
    for (int32_t i = 0; i < nb; i++) {
        blk *x = &b[i];
        /* walk the placed blocks by offset; the holes between the ones whose
         * lifetimes meet x's are where x may go: take the smallest that fits */
        int64_t cursor = 0, best = -1, best_gap = 0;
        for (int32_t k = 0; k < np; k++) {
            const blk *y = &b[placed[k]];
            if (!conflict(x, y))
                continue;
            int64_t gap = y->off - cursor;
            if (gap >= x->size && (best < 0 || gap < best_gap)) {
                best = cursor;
                best_gap = gap;
            }
            if (y->off + y->size > cursor)
                cursor = y->off + y->size;
        }
        x->off = best >= 0 ? best : cursor;
        /* insert into the offset order (after equal offsets: stable) */
        int32_t lo = 0, hi = np;
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (b[placed[mid]].off <= x->off)
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(placed + lo + 1, placed + lo, (size_t)(np - lo) * sizeof *placed);
        placed[lo] = i;
        np++;
    }
    for (int32_t i = 0; i < p->n_place; i++)
        old_place[i] = p->place[i].offset;
    for (int32_t r = 0; r < p->n_res; r++)
        old_res[r] = p->res[r].offset;
    for (int32_t i = 0; i < nb; i++) {
        p->place[b[i].pl0].offset = b[i].off;
        if (b[i].pl1 >= 0)
            p->place[b[i].pl1].offset = b[i].off;
    }
    for (int32_t r = 0; r < p->n_res; r++)
        for (int32_t i = 0; i < p->n_place; i++)
            if (p->place[i].tensor == p->res[r].tensor && p->place[i].begin < 0) {
                p->res[r].offset = p->place[i].offset;
                break;
            }
    int64_t arena = 0;
    for (int32_t i = 0; i < p->n_place; i++) {
        int64_t e = p->place[i].offset + g->tensors[p->place[i].tensor].bytes;
        if (e > arena)
            arena = e;
    }
    if (o->keep_if_worse && arena > s.arena_before) {
        for (int32_t i = 0; i < p->n_place; i++)
            p->place[i].offset = old_place[i];
        for (int32_t r = 0; r < p->n_res; r++)
            p->res[r].offset = old_res[r];
        arena = s.arena_before;
        s.kept = true;
    }
    p->arena_bytes = arena;
    s.arena_after = arena;
    if (stats)
        *stats = s;
out:
    free(diff);
    free(placed);
    free(old_place);
    free(old_res);
    free(b);
    return st;
}
