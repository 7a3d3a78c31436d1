/* validate.c - an independent checker for swap plans (docs/formats.md section 3). */
#include "swapadvisor/validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/sim.h"

void sa_val_report_free(sa_val_report *r)
{
    if (!r)
        return;
    for (int32_t i = 0; i < r->n_lines; i++)
        free(r->lines[i]);
    free(r->lines);
    r->lines = NULL;
    r->n_lines = r->cap_lines = 0;
}

typedef struct vctx {
    const sa_plan *p;
    const sa_dfg_graph *g;
    bool strict;
    sa_val_report *rep;
    sa_err *err;
    int32_t count;
    const double *ts, *te;
    double makespan;
    int32_t *spos;       /* position of a node within its stream */
    int32_t *rank;       /* position of a node in a topological order of stream order + deps */
    int32_t (*vc)[SA_PLAN_STREAM_COUNT];
    int32_t *res_off, *res_idx; /* resident_at_start by tensor: res_idx[res_off[t] .. res_off[t+1]) */
} vctx;

static void violation(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(vctx *v, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    sa_escape_controls(line, sizeof line);
    if (v->count == 0)
        sa_fail(v->err, SA_EINVALID, "%s", line);
    v->count++;
    sa_val_report *r = v->rep;
    if (!r)
        return;
    int32_t max = r->max_lines > 0 ? r->max_lines : 100;
    if (r->n_lines >= max)
        return;
    if (r->n_lines == r->cap_lines) {
        int32_t nc = r->cap_lines ? r->cap_lines * 2 : 16;
        char **nl = realloc(r->lines, (size_t)nc * sizeof *nl);
        if (!nl)
            return;
        r->lines = nl;
        r->cap_lines = nc;
    }
    char *s = sa_strdup(line);
    if (s)
        r->lines[r->n_lines++] = s;
}

static const char *tname(const vctx *v, int32_t t) { return v->g->tensors[t].name; }
static const char *oname(const vctx *v, int32_t o) { return v->g->ops[o].name; }

/* a finishes before b starts, by the dependency graph alone */
static bool hb(const vctx *v, int32_t a, int32_t b)
{
    if (a < 0)
        return true; /* the iteration start precedes everything */
    if (b < 0 || a == b)
        return false;
    sa_plan_stream s = sa_plan_kind_stream(v->p->nodes[a].kind);
    return v->vc[b][s] >= v->spos[a] + 1;
}

/* Vector clocks: vc[b][s] = how many nodes of stream s must have finished
 * before b starts, by stream order and deps alone. */
static sa_status build_clocks(vctx *v)
{
    int32_t n = v->p->n_nodes;
    v->spos = calloc((size_t)n + 1, sizeof *v->spos);
    v->rank = calloc((size_t)n + 1, sizeof *v->rank);
    v->vc = calloc((size_t)n + 1, sizeof *v->vc);
    int32_t *order = calloc((size_t)n + 1, sizeof *order), stuck;
    if (!v->spos || !v->rank || !v->vc || !order) {
        free(order);
        return sa_fail(v->err, SA_ENOMEM, "out of memory validating");
    }
    sa_status st = sa_plan_node_order(v->p, order, &stuck, v->err);
    for (int32_t i = 0; !st && i < n; i++)
        v->rank[order[i]] = i;
    free(order);
    return st ? st : sa_plan_clocks(v->p, v->spos, v->vc, v->err);
}

static void check_structure(vctx *v)
{
    const sa_plan *p = v->p;
    const sa_dfg_graph *g = v->g;
    int32_t *seen = calloc((size_t)g->n_ops + 1, sizeof *seen);
    if (!seen)
        return;
    if (p->n_schedule != g->n_ops)
        violation(v, "schedule lists %d ops, the graph has %d", p->n_schedule, g->n_ops);
    else if (!sa_dfg_is_topological(g, p->schedule))
        violation(v, "schedule is not a topological order of the graph (each op once, producers first)");
    int32_t k = 0;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        if (nd->kind != SA_PLAN_COMPUTE)
            continue;
        if (seen[nd->ref]++)
            violation(v, "rule 1: op %d (\"%s\") has more than one compute node (nodes[%d])", nd->ref,
                      oname(v, nd->ref), i);
        if (k < p->n_schedule && p->schedule[k] != nd->ref)
            violation(v, "nodes[%d] computes op %d but the schedule has op %d at position %d", i, nd->ref,
                      p->schedule[k], k);
        k++;
    }
    for (int32_t o = 0; o < g->n_ops; o++)
        if (!seen[o])
            violation(v, "rule 1: op %d (\"%s\") has no compute node", o, oname(v, o));
    free(seen);
}

/* The sweep's events, in an order that respects happens-before, not only time.
 * At one instant t: first the ends of nodes that lasted (te > ts), each followed by
 * the placements it closes; then, in a topological order of the nodes (stream order
 * + deps), for each node: the placements it opens, its start and, when it took no
 * time (a zero-time op, or a time so large that adding to it rounds away), its end
 * and the placements that end with it. Ordering ties by time alone would end a
 * zero-length node before it starts and close its placements before it reads them. */
enum { EV_END, EV_PEND, EV_PBEGIN, EV_START };
typedef struct event {
    double t;
    int32_t grp;   /* 0: an end of a node that lasted; 1: the rest */
    int32_t rank;  /* topological position of the node the event belongs to */
    int32_t sub;   /* order among one node's events */
    int32_t cls, idx;
} event;

static int cmp_event(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->grp != y->grp)
        return x->grp - y->grp;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->sub != y->sub)
        return x->sub - y->sub;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool lasted(const vctx *v, int32_t n) { return v->te[n] > v->ts[n]; }

static event ev_node(const vctx *v, int32_t cls, int32_t n)
{
    if (cls == EV_START)
        return (event){v->ts[n], 1, v->rank[n], 1, EV_START, n};
    if (lasted(v, n))
        return (event){v->te[n], 0, v->rank[n], 0, EV_END, n};
    return (event){v->te[n], 1, v->rank[n], 2, EV_END, n};
}

static event ev_place(const vctx *v, int32_t cls, int32_t i)
{
    const sa_plan_placement *q = &v->p->place[i];
    if (cls == EV_PBEGIN)
        return q->begin < 0 ? (event){0, -1, -1, 0, EV_PBEGIN, i}
                            : (event){v->ts[q->begin], 1, v->rank[q->begin], 0, EV_PBEGIN, i};
    if (lasted(v, q->end))
        return (event){v->te[q->end], 0, v->rank[q->end], 1, EV_PEND, i};
    return (event){v->te[q->end], 1, v->rank[q->end], 3, EV_PEND, i};
}

typedef struct tstate {
    int32_t cur, host, dev;      /* versions: -1 = never written / no valid copy */
    int32_t dev_src, host_src;   /* node that made the copy valid (-1 = iteration start) */
    int32_t active;              /* active placement or -1 */
    int32_t out_ver;             /* version a running swap_out copies */
} tstate;

static double pl_begin_t(const vctx *v, const sa_plan_placement *q) { return q->begin < 0 ? 0 : v->ts[q->begin]; }
static double pl_end_t(const vctx *v, const sa_plan_placement *q) { return q->end < 0 ? v->makespan : v->te[q->end]; }

/* Is t placed (with placement ap) for the whole of node n? */
static void need_placed(vctx *v, const tstate *st, int32_t t, int32_t n, const char *what)
{
    if (st->active < 0) {
        violation(v, "rule 2: nodes[%d] (%s) uses tensor %d (\"%s\") while it is not placed", n, what, t, tname(v, t));
        return;
    }
    const sa_plan_placement *q = &v->p->place[st->active];
    if (pl_end_t(v, q) < v->te[n])
        violation(v, "rule 2: tensor %d (\"%s\") placement %d ends before nodes[%d] (%s) does", t, tname(v, t),
                  st->active, n, what);
    if (v->strict && !(q->begin == n || hb(v, q->begin, n)))
        violation(v, "strict: nodes[%d] (%s) is not ordered after the start of placement %d of tensor %d", n, what,
                  st->active, t);
    if (v->strict && q->end >= 0 && q->end != n && !hb(v, n, q->end) &&
        !(sa_plan_kind_stream(v->p->nodes[n].kind) == sa_plan_kind_stream(v->p->nodes[q->end].kind) &&
          v->spos[n] < v->spos[q->end]))
        violation(v, "strict: placement %d of tensor %d may end (nodes[%d]) before nodes[%d] (%s) finishes",
                  st->active, t, q->end, n, what);
}

static void node_start(vctx *v, tstate *ts, int32_t n)
{
    const sa_plan_node *nd = &v->p->nodes[n];
    const sa_dfg_graph *g = v->g;
    if (nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE) {
        const sa_dfg_op *o = &g->ops[nd->ref];
        const char *what = nd->kind == SA_PLAN_COMPUTE ? "compute" : "recompute";
        for (int32_t k = 0; k < o->n_use; k++)
            need_placed(v, &ts[o->use[k]], o->use[k], n, what);
        for (int32_t k = 0; k < o->n_in; k++) {
            int32_t t = o->in[k];
            tstate *s = &ts[t];
            if (s->cur < 0 || s->dev != s->cur)
                violation(v, "rule 2: nodes[%d] (%s of op %d \"%s\") reads tensor %d (\"%s\") without valid contents "
                          "on the device", n, what, nd->ref, oname(v, nd->ref), t, tname(v, t));
            else if (v->strict && !hb(v, s->dev_src, n))
                violation(v, "strict: nodes[%d] reads tensor %d, whose contents come from nodes[%d] that it does "
                          "not wait for", n, t, s->dev_src);
        }
        if (nd->kind == SA_PLAN_RECOMPUTE)
            for (int32_t k = 0; k < o->n_out; k++)
                if (sa_dfg_kind_persistent(g->tensors[o->out[k]].kind))
                    violation(v, "rule 1: nodes[%d] recomputes op %d, which updates persistent tensor %d in place",
                              n, nd->ref, o->out[k]);
    } else if (nd->kind == SA_PLAN_SWAP_IN) {
        int32_t t = nd->ref;
        tstate *s = &ts[t];
        if (s->cur < 0 || s->host != s->cur)
            violation(v, "rule 3: nodes[%d] swaps in tensor %d (\"%s\") but the host holds no valid copy", n, t,
                      tname(v, t));
        else if (v->strict && !hb(v, s->host_src, n))
            violation(v, "strict: nodes[%d] swaps in tensor %d without waiting for nodes[%d] that saved it", n, t,
                      s->host_src);
        need_placed(v, s, t, n, "swap_in");
    } else {
        int32_t t = nd->ref;
        tstate *s = &ts[t];
        if (s->cur < 0 || s->dev != s->cur)
            violation(v, "rule 3: nodes[%d] swaps out tensor %d (\"%s\") without valid contents on the device", n, t,
                      tname(v, t));
        else if (v->strict && !hb(v, s->dev_src, n))
            violation(v, "strict: nodes[%d] swaps out tensor %d without waiting for nodes[%d] that made it", n, t,
                      s->dev_src);
        need_placed(v, s, t, n, "swap_out");
        s->out_ver = s->dev;
    }
}

static void node_end(vctx *v, tstate *ts, int32_t n)
{
    const sa_plan_node *nd = &v->p->nodes[n];
    if (nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE) {
        const sa_dfg_op *o = &v->g->ops[nd->ref];
        for (int32_t k = 0; k < o->n_out; k++) {
            tstate *s = &ts[o->out[k]];
            if (nd->kind == SA_PLAN_COMPUTE)
                s->cur++;
            if (s->active >= 0) {
                s->dev = s->cur;
                s->dev_src = n;
            }
        }
    } else if (nd->kind == SA_PLAN_SWAP_IN) {
        tstate *s = &ts[nd->ref];
        if (s->active >= 0 && s->host >= 0) {
            s->dev = s->host;
            s->dev_src = n;
        }
    } else {
        tstate *s = &ts[nd->ref];
        if (s->out_ver >= 0) {
            s->host = s->out_ver;
            s->host_src = n;
        }
    }
}

static void check_events(vctx *v, tstate *ts)
{
    const sa_plan *p = v->p;
    const sa_dfg_graph *g = v->g;
    size_t ne = (size_t)p->n_nodes * 2 + (size_t)p->n_place * 2;
    event *ev = calloc(ne + 1, sizeof *ev);
    if (!ev) {
        violation(v, "out of memory validating");
        return;
    }
    size_t k = 0;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        ev[k++] = ev_node(v, EV_START, i);
        ev[k++] = ev_node(v, EV_END, i);
    }
    for (int32_t i = 0; i < p->n_place; i++) {
        ev[k++] = ev_place(v, EV_PBEGIN, i);
        if (p->place[i].end >= 0)
            ev[k++] = ev_place(v, EV_PEND, i);
    }
    qsort(ev, k, sizeof *ev, cmp_event);
    for (size_t e = 0; e < k; e++) {
        int32_t i = ev[e].idx;
        switch (ev[e].cls) {
        case EV_START: node_start(v, ts, i); break;
        case EV_END: node_end(v, ts, i); break;
        case EV_PBEGIN: {
            const sa_plan_placement *q = &p->place[i];
            tstate *s = &ts[q->tensor];
            if (s->active >= 0)
                violation(v, "placements %d and %d hold tensor %d (\"%s\") at the same time", s->active, i,
                          q->tensor, tname(v, q->tensor));
            s->active = i;
            s->dev = -1;
            if (q->begin < 0) {
                bool listed = false;
                for (int32_t j = v->res_off[q->tensor]; j < v->res_off[q->tensor + 1]; j++)
                    listed |= p->res[v->res_idx[j]].offset == q->offset;
                if (!listed || !sa_dfg_kind_persistent(g->tensors[q->tensor].kind))
                    violation(v, "placement %d starts with the iteration but tensor %d (\"%s\") is not a persistent "
                              "tensor in resident_at_start at offset %lld", i, q->tensor, tname(v, q->tensor),
                              (long long)q->offset);
                else {
                    s->dev = s->cur;
                    s->dev_src = -1;
                }
            }
            break;
        }
        case EV_PEND: {
            tstate *s = &ts[p->place[i].tensor];
            if (s->active == i) {
                s->active = -1;
                s->dev = -1;
            }
            break;
        }
        }
    }
    free(ev);
    /* rule 5 and the steady state */
    for (int32_t t = 0; t < g->n_tensors; t++) {
        tstate *s = &ts[t];
        bool pers = sa_dfg_kind_persistent(g->tensors[t].kind);
        bool at_end = s->active >= 0;
        bool at_start = false;
        for (int32_t j = v->res_off[t]; j < v->res_off[t + 1]; j++) {
            int32_t r = v->res_idx[j];
            at_start = true;
            if (!at_end || p->place[s->active].offset != p->res[r].offset)
                violation(v, "steady state: tensor %d (\"%s\") is resident at start at offset %lld but not at the "
                          "end at that offset", t, tname(v, t), (long long)p->res[r].offset);
        }
        if (at_end && !at_start)
            violation(v, "steady state: tensor %d (\"%s\") is still placed at the end but not in resident_at_start",
                      t, tname(v, t));
        if (!pers)
            continue;
        if (at_end && at_start && s->dev != s->cur)
            violation(v, "rule 5: tensor %d (\"%s\") is resident at the end with stale contents", t, tname(v, t));
        if (!at_end && s->host != s->cur)
            violation(v, "rule 5: updated tensor %d (\"%s\") ends the iteration neither resident nor saved to the "
                      "host", t, tname(v, t));
    }
}

typedef struct seg {
    int64_t lo, hi;
    int32_t owner; /* the placement that last held [lo, hi) */
} seg;

static int cmp_place_begin(const void *a, const void *b, void *ctx)
{
    const vctx *v = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    const sa_plan_placement *x = &v->p->place[i], *y = &v->p->place[j];
    double xs = pl_begin_t(v, x), ys = pl_begin_t(v, y);
    if (xs != ys)
        return xs < ys ? -1 : 1;
    int32_t rx = x->begin < 0 ? -1 : v->rank[x->begin], ry = y->begin < 0 ? -1 : v->rank[y->begin];
    if (rx != ry)
        return rx < ry ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Placements xi (begun first) and yi share an address: they must not share
 * time, and under --strict one must end before the other begins by deps. */
static void space_pair(vctx *v, int32_t xi, int32_t yi)
{
    const sa_plan_placement *x = &v->p->place[xi], *y = &v->p->place[yi];
    double xs = pl_begin_t(v, x), xt = pl_end_t(v, x), ys = pl_begin_t(v, y), yt = pl_end_t(v, y);
    if (xs < yt && ys < xt) {
        violation(v, "rule 4: placements %d (tensor %d) and %d (tensor %d) overlap in address and time", xi,
                  x->tensor, yi, y->tensor);
        return;
    }
    if (!v->strict)
        return;
    /* at one instant (zero-time nodes) either may come first: the deps decide */
    bool x_first = xt <= ys && x->end >= 0 && hb(v, x->end, y->begin);
    bool y_first = yt <= xs && y->end >= 0 && hb(v, y->end, x->begin);
    const sa_plan_placement *first = xt <= ys ? x : y, *second = xt <= ys ? y : x;
    if (!x_first && !y_first)
        violation(v, "strict: placement of tensor %d may begin (nodes[%d]) before the overlapping placement "
                  "of tensor %d ends (nodes[%d])", second->tensor, second->begin, first->tensor, first->end);
}

static void check_space(vctx *v)
{
    const sa_plan *p = v->p;
    const sa_dfg_graph *g = v->g;
    int64_t arena = 0;
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        int64_t e = q->offset + g->tensors[q->tensor].bytes;
        if (e > p->device.memory_bytes)
            violation(v, "rule 4: placement %d of tensor %d ends at byte %lld, past memory_bytes %lld", i, q->tensor,
                      (long long)e, (long long)p->device.memory_bytes);
        if (e > arena)
            arena = e;
        if (q->begin >= 0 && q->end >= 0 && v->te[q->end] < v->ts[q->begin])
            violation(v, "placement %d of tensor %d ends (nodes[%d]) before it begins (nodes[%d])", i, q->tensor,
                      q->end, q->begin);
    }
    if (arena != p->arena_bytes)
        violation(v, "rule 4: arena_bytes is %lld but the largest offset + bytes is %lld", (long long)p->arena_bytes,
                  (long long)arena);
    /* Space over time, O(P log P + P S) for P placements and S address
     * segments: placements in the order they begin paint their address range;
     * each is checked against the placement that last held each piece of it
     * (the pairwise check of every overlapping pair was quadratic in the
     * placements of one address).  Under --strict the orders checked chain:
     * each placement's end follows its begin by deps, so a placement ordered
     * after the last holder of a piece is ordered after every earlier one. */
    int32_t n = p->n_place;
    int32_t *idx = calloc((size_t)n + 1, sizeof *idx), *stamp = calloc((size_t)n + 1, sizeof *stamp);
    seg *sg = calloc((size_t)2 * (size_t)n + 3, sizeof *sg);
    if (!idx || !stamp || !sg) {
        free(idx);
        free(stamp);
        free(sg);
        violation(v, "out of memory validating");
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        idx[i] = i;
        stamp[i] = -1;
        const sa_plan_placement *q = &p->place[i];
        if (v->strict && q->begin >= 0 && q->end >= 0 && q->begin != q->end && !hb(v, q->begin, q->end) &&
            !(sa_plan_kind_stream(p->nodes[q->begin].kind) == sa_plan_kind_stream(p->nodes[q->end].kind) &&
              v->spos[q->begin] < v->spos[q->end]))
            violation(v, "strict: placement %d of tensor %d may end (nodes[%d]) before it begins (nodes[%d])", i,
                      q->tensor, q->end, q->begin);
    }
    qsort_r(idx, (size_t)n, sizeof *idx, cmp_place_begin, v);
    int32_t ns = 0;
    for (int32_t a = 0; a < n; a++) {
        int32_t yi = idx[a];
        const sa_plan_placement *y = &p->place[yi];
        int64_t lo = y->offset, hi = sa_add_sat(y->offset, g->tensors[y->tensor].bytes);
        /* first segment ending past lo */
        int32_t l = 0, r = ns;
        while (l < r) {
            int32_t m = l + (r - l) / 2;
            if (sg[m].hi > lo)
                r = m;
            else
                l = m + 1;
        }
        int32_t i0 = l, i1 = l;
        for (; i1 < ns && sg[i1].lo < hi; i1++) {
            int32_t xi = sg[i1].owner;
            if (stamp[xi] == yi)
                continue;
            stamp[xi] = yi;
            space_pair(v, xi, yi);
        }
        seg repl[3];
        int32_t k = 0;
        if (i0 < i1 && sg[i0].lo < lo)
            repl[k++] = (seg){sg[i0].lo, lo, sg[i0].owner};
        repl[k++] = (seg){lo, hi, yi};
        if (i0 < i1 && sg[i1 - 1].hi > hi)
            repl[k++] = (seg){hi, sg[i1 - 1].hi, sg[i1 - 1].owner};
        memmove(&sg[i0 + k], &sg[i1], (size_t)(ns - i1) * sizeof *sg);
        memcpy(&sg[i0], repl, (size_t)k * sizeof *sg);
        ns += k - (i1 - i0);
    }
    free(idx);
    free(stamp);
    free(sg);
}

sa_status sa_plan_validate(const sa_plan *p, const sa_dfg_graph *g, bool strict, sa_val_report *rep, sa_err *err)
{
    sa_status st = sa_plan_check_graph(p, g, "plan", err);
    if (st)
        return st;
    sa_sim_ws *ws = sa_sim_ws_new();
    if (!ws)
        return sa_fail(err, SA_ENOMEM, "out of memory validating");
    sa_sim_result r;
    vctx v = {p, g, strict, rep, err, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL};
    check_structure(&v);
    st = sa_sim_run(p, g, ws, &r, err);
    if (st) {
        sa_sim_ws_free(ws);
        if (st == SA_EINVALID)
            violation(&v, "%s", err->msg);
        if (rep)
            rep->n_violations = v.count;
        return st;
    }
    v.ts = sa_sim_start(ws);
    v.te = sa_sim_end(ws);
    v.makespan = r.makespan_us;
    if (rep)
        rep->makespan_us = r.makespan_us;
    tstate *ts = calloc((size_t)g->n_tensors + 1, sizeof *ts);
    v.res_off = calloc((size_t)g->n_tensors + 2, sizeof *v.res_off);
    v.res_idx = calloc((size_t)p->n_res + 1, sizeof *v.res_idx);
    if (!v.res_off || !v.res_idx) {
        free(ts);
        ts = NULL;
    } else {
        for (int32_t i = 0; i < p->n_res; i++)
            v.res_off[p->res[i].tensor + 1]++;
        for (int32_t t = 0; t < g->n_tensors; t++)
            v.res_off[t + 1] += v.res_off[t];
        for (int32_t i = p->n_res - 1; i >= 0; i--)
            v.res_idx[--v.res_off[p->res[i].tensor + 1]] = i;
        /* res_off[t + 1] now holds t's first entry: shift down */
        for (int32_t t = 0; t < g->n_tensors; t++)
            v.res_off[t] = v.res_off[t + 1];
        v.res_off[g->n_tensors] = p->n_res;
    }
    if (!ts || (st = build_clocks(&v))) {
        free(v.res_off);
        free(v.res_idx);
        free(ts);
        free(v.spos);
        free(v.rank);
        free(v.vc);
        sa_sim_ws_free(ws);
        return st ? st : sa_fail(err, SA_ENOMEM, "out of memory validating");
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        sa_dfg_kind k = g->tensors[t].kind;
        bool start_res = v.res_off[t + 1] > v.res_off[t];
        ts[t].cur = (k == SA_DFG_INPUT || sa_dfg_kind_persistent(k)) ? 0 : -1;
        ts[t].host = (k == SA_DFG_INPUT || (sa_dfg_kind_persistent(k) && !start_res)) ? 0 : -1;
        ts[t].dev = -1;
        ts[t].dev_src = ts[t].host_src = -1;
        ts[t].active = -1;
        ts[t].out_ver = -1;
    }
    check_events(&v, ts);
    check_space(&v);
    double ideal = sa_dfg_total_time_us(g);
    if (fabs(p->predicted.iteration_us - r.makespan_us) > 0.005 * r.makespan_us)
        violation(&v, "rule 6: predicted.iteration_us %.3f differs from the re-simulated %.3f by more than 0.5%%",
                  p->predicted.iteration_us, r.makespan_us);
    if (fabs(p->predicted.ideal_us - ideal) > 0.005 * ideal)
        violation(&v, "rule 6: predicted.ideal_us %.3f differs from the sum of op times %.3f by more than 0.5%%",
                  p->predicted.ideal_us, ideal);
    free(ts);
    free(v.spos);
    free(v.rank);
    free(v.vc);
    free(v.res_off);
    free(v.res_idx);
    sa_sim_ws_free(ws);
    if (rep)
        rep->n_violations = v.count;
    return v.count ? SA_EINVALID : SA_OK;
}
