/* dtr.c - Dynamic Tensor Rematerialization (Kirisame et al., ICLR'21) as a
 * policy.  DTR's runtime is simulated ahead of time over the graph's program
 * order (g->topo) with the profile's op times as its clock: every op's inputs
 * are made resident (an evicted one rebuilt on demand, its evicted inputs
 * first, recursively), its outputs allocated, and whenever an allocation does
 * not fit the byte budget the resident, unlocked, evictable tensor of least
 *     h_DTR-eq(t) = (cost(t) + cost of the evicted classes adjacent to t)
 *                   / (bytes(t) x staleness(t))
 * is evicted; the evicted tensors form union-find classes (the paper's
 * equivalence-class approximation of e*: a class is never split when one of
 * its members is rebuilt).  Parameters, optimizer state, inputs and every
 * tensor recompute.h may not rebuild are never evicted, and a tensor is
 * evicted only where recompute.h allows rebuilding it (and, in turn, its
 * evicted inputs) at its next use.
 *
 * The plan replays the run: a compute node per op, a recompute node per
 * rebuild (the op re-run, its other outputs written to scratch), one
 * placement per stay of a tensor on the device, the inputs swapped in at the
 * start (they are the host's), nothing else moved.  Best-fit packing of those
 * placements can need more than DTR's byte count (fragmentation), so the
 * budget DTR runs under falls in 1 % steps from the memory until the packed
 * plan fits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/planner.h"
#include "baselines_internal.h"
#include "policies_internal.h"

#include "dtr_internal.h"

static void ev_push(dtr *d, uint8_t kind, int32_t ref)
{
    if (d->n_ev == d->cap_ev) {
        int64_t nc = d->cap_ev ? 2 * d->cap_ev : 1024;
        uint8_t *k = realloc(d->ev_kind, (size_t)nc);
        if (k)
            d->ev_kind = k;
        int32_t *r = realloc(d->ev_ref, (size_t)nc * sizeof *r);
        if (r)
            d->ev_ref = r;
        if (!k || !r) {
            d->oom = true;
            return;
        }
        d->cap_ev = nc;
    }
    d->ev_kind[d->n_ev] = kind;
    d->ev_ref[d->n_ev++] = ref;
}

static double op_cost(const sa_dfg_graph *g, int32_t t)
{
    double tu = g->ops[g->tensors[t].producer].time_us;
    return tu > 0 ? tu : 0;
}

/* Whether in[k] of op po appeared before (an op may read one tensor twice). */
static bool dup_in(const sa_dfg_op *po, int32_t k)
{
    for (int32_t j = 0; j < k; j++)
        if (po->in[j] == po->in[k])
            return true;
    return false;
}

static int32_t uf_find(dtr *d, int32_t t)
{
    while (d->uf[t] != t) {
        d->uf[t] = d->uf[d->uf[t]];
        t = d->uf[t];
    }
    return t;
}

static void uf_join(dtr *d, int32_t a, int32_t b)
{
    a = uf_find(d, a);
    b = uf_find(d, b);
    if (a == b)
        return;
    if (b < a) { /* the smaller id is the root: the classes do not depend on the join order */
        int32_t x = a;
        a = b;
        b = x;
    }
    d->uf[b] = a;
    d->ucost[a] += d->ucost[b];
}

static void res_add(dtr *d, int32_t t)
{
    if (!d->can[t] || d->ridx[t] >= 0)
        return;
    d->ridx[t] = d->n_res;
    d->res[d->n_res++] = t;
}

static void res_del(dtr *d, int32_t t)
{
    int32_t i = d->ridx[t];
    if (i < 0)
        return;
    int32_t last = d->res[--d->n_res];
    d->res[i] = last;
    d->ridx[last] = i;
    d->ridx[t] = -1;
}

/* The next program position after cur that reads t (-1: none). */
static int32_t next_use(const dtr *d, int32_t t)
{
    const sa_dfg_graph *g = d->g;
    int32_t nx = -1;
    for (int32_t k = 0; k < g->tensors[t].n_readers; k++) {
        int32_t p = d->pos[g->readers[g->tensors[t].reader_off + k]];
        if (p > d->cur && (nx < 0 || p < nx))
            nx = p;
    }
    return nx;
}

/* Whether t could be rebuilt at (or before) position p whatever is evicted
 * meanwhile: recompute.h allows re-running its producer then, and each input
 * is persistent, alive until p (never evicted, freed after its last reader),
 * or gettable in turn.  A later p can only turn true into false (inputs must
 * live longer, an update may come first), so the memo keeps a bound each way;
 * evictions leave it valid, since only a tensor that may not be rebuilt
 * leaving the device changes an answer. */
static bool gettable(dtr *d, int32_t t, int32_t p, int depth)
{
    if (d->gepoch[t] != d->epoch) {
        d->gepoch[t] = d->epoch;
        d->gyes[t] = -1;
        d->gno[t] = INT32_MAX;
    }
    if (p <= d->gyes[t])
        return true;
    if (p >= d->gno[t])
        return false;
    const sa_dfg_graph *g = d->g;
    bool ok = d->can[t] && depth < DTR_DEPTH_MAX && dec_recompute_ok(g, d->pos, t, p);
    const sa_dfg_op *po = ok ? &g->ops[g->tensors[t].producer] : NULL;
    for (int32_t k = 0; ok && k < po->n_in; k++) {
        int32_t u = po->in[k];
        if (sa_dfg_kind_persistent(g->tensors[u].kind) || (!d->can[u] && (d->last[u] >= p || d->state[u] == T_RES)))
            continue; /* there at p (pin_chain keeps a tensor past its last reader for this) */
        ok = d->can[u] && gettable(d, u, p, depth + 1);
    }
    if (ok)
        d->gyes[t] = p;
    else
        d->gno[t] = p;
    return ok;
}

/* The cost of u's evicted class, once per class within one stamp (0 when u
 * is not evicted or its class was counted already). */
static double class_cost_once(dtr *d, int32_t u)
{
    if (d->state[u] != T_EVICTED)
        return 0;
    int32_t r = uf_find(d, u);
    if (d->mark[r] == d->stamp)
        return 0;
    d->mark[r] = d->stamp;
    return d->ucost[r];
}

/* cost(t) plus the cost of each distinct evicted class next to t (its
 * producer's inputs, its readers' outputs). */
static double neighbourhood_cost(dtr *d, int32_t t)
{
    const sa_dfg_graph *g = d->g;
    const sa_dfg_tensor *x = &g->tensors[t];
    double c = op_cost(g, t);
    d->stamp++;
    const sa_dfg_op *po = &g->ops[x->producer];
    for (int32_t k = 0; k < po->n_in; k++)
        c += class_cost_once(d, po->in[k]);
    for (int32_t k = 0; k < x->n_readers; k++) {
        const sa_dfg_op *ro = &g->ops[g->readers[x->reader_off + k]];
        for (int32_t j = 0; j < ro->n_out; j++)
            c += class_cost_once(d, ro->out[j]);
    }
    return c;
}

/* Keeps the tensors t's rebuild at p would read that may not be rebuilt
 * themselves (inputs, unrecomputable activations) until p: the runtime keeps
 * what an evicted tensor's rebuild needs. */
static void pin_chain(dtr *d, int32_t t, int32_t p)
{
    const sa_dfg_graph *g = d->g;
    int32_t sp = 0;
    d->stamp++;
    d->dfs[sp++] = t;
    while (sp > 0) {
        const sa_dfg_op *po = &g->ops[g->tensors[d->dfs[--sp]].producer];
        for (int32_t k = 0; k < po->n_in; k++) {
            int32_t u = po->in[k];
            if (sa_dfg_kind_persistent(g->tensors[u].kind) || d->mark[u] == d->stamp)
                continue;
            d->mark[u] = d->stamp;
            if (!d->can[u]) {
                if (d->keep[u] < 0)
                    d->kept[d->n_kept++] = u;
                if (d->keep[u] < p)
                    d->keep[u] = p;
            } else {
                d->dfs[sp++] = u;
            }
        }
    }
}

static void evict(dtr *d, int32_t t)
{
    const sa_dfg_graph *g = d->g;
    res_del(d, t);
    ev_push(d, EV_OUT, t);
    d->state[t] = T_EVICTED;
    d->used -= g->tensors[t].bytes;
    d->n_evict++;
    if (d->uf[t] < 0) {
        d->uf[t] = t;
        d->ucost[t] = op_cost(g, t);
    }
    int32_t nx = next_use(d, t);
    if (nx >= 0)
        pin_chain(d, t, nx);
    const sa_dfg_op *po = &g->ops[g->tensors[t].producer];
    for (int32_t k = 0; k < po->n_in; k++)
        if (d->state[po->in[k]] == T_EVICTED)
            uf_join(d, t, po->in[k]);
    const sa_dfg_tensor *x = &g->tensors[t];
    for (int32_t k = 0; k < x->n_readers; k++) {
        const sa_dfg_op *ro = &g->ops[g->readers[x->reader_off + k]];
        for (int32_t j = 0; j < ro->n_out; j++)
            if (d->state[ro->out[j]] == T_EVICTED)
                uf_join(d, t, ro->out[j]);
    }
}

/* Makes room for need more bytes by evicting the least h first; false when
 * nothing more may be evicted.  Ties fall to the lower tensor id. */
static bool make_room(dtr *d, int64_t need)
{
    const sa_dfg_graph *g = d->g;
    while (d->used + need > d->budget) {
        int32_t best = -1;
        double best_h = 0;
        /* an eviction scans every resident: quadratic on a long chain, so the
         * default effort bounds the scans (a deterministic count, no clock) */
        d->scans += d->n_res;
        if (d->scans_max > 0 && d->scans > d->scans_max) {
            d->cut = d->over = true;
            return false;
        }
        for (int32_t i = 0; i < d->n_res; i++) {
            int32_t t = d->res[i];
            /* a scan of a long chain's residents can take a second (gettable walks
             * rebuild chains): the time limit holds inside it */
            if (d->deadline_s > 0 && (i & 1023) == 1023 && sa_now_s() >= d->deadline_s) {
                d->cut = true;
                return false;
            }
            if (d->lock[t] > 0)
                continue;
            double stale = d->clock - d->touch[t] + 1.0; /* +1 us: no division by zero */
            double h = neighbourhood_cost(d, t) / ((double)g->tensors[t].bytes * stale);
            if (best >= 0 && (h > best_h || (h == best_h && t > best)))
                continue;
            int32_t nx = next_use(d, t);
            if (nx >= 0 && !gettable(d, t, nx, 0))
                continue;
            best = t;
            best_h = h;
        }
        if (best < 0)
            return false;
        evict(d, best);
    }
    return true;
}

/* Frees t (not persistent, no reader left, not in use): dead, though still
 * rebuildable should an evicted tensor's rebuild read it.  The inputs stay
 * all iteration, as the runtime's constants do: every rebuild may read them. */
static void maybe_free(dtr *d, int32_t t)
{
    sa_dfg_kind k = d->g->tensors[t].kind;
    if (sa_dfg_kind_persistent(k) || k == SA_DFG_INPUT || d->rem[t] > 0 || d->lock[t] > 0 || d->state[t] != T_RES ||
        d->keep[t] > d->cur)
        return;
    res_del(d, t);
    ev_push(d, EV_OUT, t);
    d->state[t] = T_DEAD;
    if (!d->can[t])
        d->epoch++; /* gettable may have counted on it being there */
    d->used -= d->g->tensors[t].bytes;
}

/* A lock taken for a rebuild under way or the op being run, on d->hold so
 * that it is released when that rebuild or op has run. */
static void hold_push(dtr *d, int32_t t)
{
    d->lock[t]++;
    d->hold[d->n_hold++] = t;
}

static void hold_release(dtr *d, int32_t base)
{
    while (d->n_hold > base) {
        int32_t t = d->hold[--d->n_hold];
        d->lock[t]--;
        maybe_free(d, t);
    }
}

static void frame_push(dtr *d, int32_t *sp, int32_t t)
{
    const sa_dfg_op *po = &d->g->ops[d->g->tensors[t].producer];
    d->hbase[*sp] = d->n_hold;
    d->stack[(*sp)++] = t;
    for (int32_t k = 0; k < po->n_in; k++)
        if (!dup_in(po, k) && d->state[po->in[k]] == T_RES)
            hold_push(d, po->in[k]);
}

/* Runs t's producer again for t: its inputs (all resident) locked while
 * room is made; false when the budget cannot hold t. */
static bool rerun(dtr *d, int32_t t)
{
    const sa_dfg_graph *g = d->g;
    const sa_dfg_op *po = &g->ops[g->tensors[t].producer];
    for (int32_t k = 0; k < po->n_in; k++)
        if (!dup_in(po, k))
            d->lock[po->in[k]]++;
    /* the op writes its other outputs again too: room for those not resident, for the run only */
    int64_t scratch = 0;
    for (int32_t k = 0; k < po->n_out; k++)
        if (po->out[k] != t && d->state[po->out[k]] != T_RES)
            scratch += g->tensors[po->out[k]].bytes;
    bool ok = make_room(d, g->tensors[t].bytes + scratch);
    if (ok) {
        ev_push(d, EV_REBUILD, t);
        d->used += g->tensors[t].bytes;
        d->clock += op_cost(g, t);
        d->remat_us += op_cost(g, t);
        d->state[t] = T_RES;
        d->touch[t] = d->clock;
        d->ever[t] = 1;
        d->n_remat++;
        res_add(d, t);
    }
    for (int32_t k = 0; k < po->n_in; k++)
        if (!dup_in(po, k)) {
            d->lock[po->in[k]]--;
            maybe_free(d, po->in[k]);
        }
    return ok;
}

/* Rebuilds t, its missing inputs first (an explicit stack: chains may be
 * long); each frame holds its inputs as they become resident until its
 * tensor is rebuilt.  false when the budget cannot hold a rebuild (or, as a
 * guard, the rebuild runs past DTR_DEPTH_MAX frames or 4 x n_tensors steps). */
static bool rebuild(dtr *d, int32_t t)
{
    const sa_dfg_graph *g = d->g;
    int32_t sp = 0;
    int64_t steps = 0;
    frame_push(d, &sp, t);
    while (sp > 0) {
        int32_t x = d->stack[sp - 1];
        const sa_dfg_op *po = &g->ops[g->tensors[x].producer];
        int32_t miss = -1;
        for (int32_t k = 0; k < po->n_in && miss < 0; k++)
            if (d->state[po->in[k]] != T_RES)
                miss = po->in[k];
        if (++steps > 4 * (int64_t)g->n_tensors + DTR_DEPTH_MAX)
            return false;
        if (miss >= 0) {
            if (!d->can[miss] || sp >= DTR_DEPTH_MAX)
                return false; /* gettable rules this out */
            frame_push(d, &sp, miss);
            continue;
        }
        if (!rerun(d, x))
            return false;
        hold_release(d, d->hbase[--sp]);
        if (sp > 0)
            hold_push(d, x); /* an input of the frame below */
    }
    return true;
}

/* Runs the op at program position i; false when its needs do not fit. */
static bool run_op(dtr *d, int32_t i)
{
    const sa_dfg_graph *g = d->g;
    const sa_dfg_op *o = &g->ops[g->topo[i]];
    int32_t base = d->n_hold;
    d->cur = i;
    for (int32_t k = 0; k < o->n_in; k++)
        if (!dup_in(o, k) && d->state[o->in[k]] == T_RES) {
            hold_push(d, o->in[k]);
            d->opheld[o->in[k]] = i;
        }
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k];
        if (d->opheld[u] == i)
            continue;
        if (d->state[u] != T_RES && !rebuild(d, u))
            return false;
        hold_push(d, u);
        d->opheld[u] = i;
    }
    int64_t need = 0;
    for (int32_t k = 0; k < o->n_out; k++)
        if (!sa_dfg_kind_persistent(g->tensors[o->out[k]].kind) && d->state[o->out[k]] != T_RES)
            need += g->tensors[o->out[k]].bytes;
    if (!make_room(d, need))
        return false;
    d->used += need;
    ev_push(d, EV_COMPUTE, g->topo[i]);
    d->clock += o->time_us > 0 ? o->time_us : 0;
    for (int32_t k = 0; k < o->n_in; k++)
        d->touch[o->in[k]] = d->clock;
    for (int32_t k = 0; k < o->n_out; k++) {
        int32_t t = o->out[k];
        d->touch[t] = d->clock;
        if (d->state[t] != T_RES) {
            d->state[t] = T_RES;
            res_add(d, t);
        }
    }
    for (int32_t k = 0; k < o->n_in; k++)
        if (!dup_in(o, k))
            d->rem[o->in[k]]--;
    hold_release(d, base);
    for (int32_t k = 0; k < o->n_out; k++)
        maybe_free(d, o->out[k]);
    for (int32_t k = 0; k < d->n_kept;) { /* kept for rebuilds up to here: free now as their readers would */
        int32_t t = d->kept[k];
        if (d->keep[t] > i) {
            k++;
            continue;
        }
        d->keep[t] = -1;
        d->kept[k] = d->kept[--d->n_kept];
        maybe_free(d, t);
    }
    return true;
}

/* One run of DTR over the program order under d->budget: false (d->fail_op
 * set) when some op's needs could not be made to fit. */
static bool dtr_run(dtr *d)
{
    const sa_dfg_graph *g = d->g;
    const int32_t nt = g->n_tensors;
    memset(d->state, T_NEW, (size_t)nt);
    memset(d->ever, 0, (size_t)nt);
    memset(d->lock, 0, (size_t)nt * sizeof *d->lock);
    for (int32_t t = 0; t < nt; t++) {
        d->rem[t] = g->tensors[t].n_readers;
        d->uf[t] = -1;
        d->ridx[t] = -1;
        d->mark[t] = 0;
        d->touch[t] = 0;
        d->opheld[t] = -1;
        d->keep[t] = -1;
        d->gepoch[t] = 0;
    }
    d->epoch = 1;
    d->n_kept = 0;
    d->n_hold = 0;
    d->used = 0;
    d->clock = 0;
    d->n_res = d->n_evict = d->n_remat = 0;
    d->stamp = 0;
    d->remat_us = 0;
    d->fail_op = -1;
    d->n_ev = 0;
    d->oom = false;
    /* parameters, optimizer state and inputs are there from the start (never evicted) */
    for (int32_t t = 0; t < nt; t++)
        if (g->tensors[t].producer < 0) {
            d->state[t] = T_RES;
            d->used += g->tensors[t].bytes;
        }
    if (d->used > d->budget) {
        d->fail_op = g->n_ops > 0 ? g->topo[0] : -1;
        return false;
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        /* one run of a long graph can take seconds: the time limit holds inside it */
        if (d->deadline_s > 0 && sa_now_s() >= d->deadline_s) {
            d->cut = true;
            return false;
        }
        if (!run_op(d, i)) {
            d->fail_op = g->topo[i];
            return false;
        }
    }
    return !d->oom;
}

/* calloc of n x sz bytes, owned by d (dtr_free frees it); NULL when out of memory */
static void *take(dtr *d, size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (p)
        d->own[d->n_own++] = p;
    return p;
}

static sa_status dtr_alloc(rctx *r, dtr *d)
{
    const sa_dfg_graph *g = r->g;
    size_t n = (size_t)g->n_tensors + 1, i4 = sizeof(int32_t), edges = 1;
    int32_t most = 1; /* the most tensors one op uses: a node's deps */
    for (int32_t i = 0; i < g->n_ops; i++) {
        edges += (size_t)g->ops[i].n_in;
        most = g->ops[i].n_use > most ? g->ops[i].n_use : most;
    }
    memset(d, 0, sizeof *d);
    d->g = g;
    d->pos = r->pos;
    if (!(d->state = take(d, n, 1)) || !(d->can = take(d, n, 1)) || !(d->ever = take(d, n, 1)) ||
        !(d->gyes = take(d, n, i4)) || !(d->lock = take(d, n, i4)) || !(d->rem = take(d, n, i4)) ||
        !(d->last = take(d, n, i4)) || !(d->uf = take(d, n, i4)) || !(d->res = take(d, n, i4)) ||
        !(d->ridx = take(d, n, i4)) || !(d->stack = take(d, DTR_DEPTH_MAX + 1, i4)) ||
        !(d->hbase = take(d, DTR_DEPTH_MAX + 1, i4)) || !(d->dfs = take(d, n, i4)) ||
        /* a frame or the op holds each distinct input once: at most every edge once per frame level */
        !(d->hold = take(d, edges * 2 + DTR_DEPTH_MAX + 1, i4)) || !(d->opheld = take(d, n, i4)) ||
        !(d->keep = take(d, n, i4)) || !(d->gepoch = take(d, n, i4)) || !(d->kept = take(d, n, i4)) ||
        !(d->deps = take(d, (size_t)most, i4)) || !(d->gno = take(d, n, i4)) || !(d->mark = take(d, n, i4)) ||
        !(d->touch = take(d, n, sizeof(double))) || !(d->ucost = take(d, n, sizeof(double))) ||
        !(d->pbeg = take(d, n, i4)) || !(d->luser = take(d, n, i4)) || !(d->src = take(d, n, i4)))
        return bl_oom(r);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        /* any tensor DTR's runtime could rebuild: an activation or gradient, forward or backward, whose
         * producer recompute.h lets us re-run (gettable checks its inputs at the use) */
        d->can[t] = (x->kind == SA_DFG_ACTIVATION || x->kind == SA_DFG_GRADIENT) && dec_recomputable(g, t);
        d->last[t] = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t p = r->pos[g->readers[x->reader_off + k]];
            if (p > d->last[t])
                d->last[t] = p;
        }
    }
    return SA_OK;
}

static void dtr_free(dtr *d)
{
    for (int i = 0; i < d->n_own; i++)
        free(d->own[i]);
    free(d->ev_kind);
    free(d->ev_ref);
}

/* The run's plan, packed and simulated; *p is NULL when it does not fit the
 * memory. */
static sa_status dtr_plan(rctx *r, dtr *d, const dec_opts *o, sa_plan **p, dec_stats *ds)
{
    const sa_dfg_graph *g = r->g;
    memset(ds, 0, sizeof *ds);
    memset(d->mark, 0, (size_t)g->n_tensors * sizeof *d->mark); /* dtr_emit: rebuilt already counted */
    sa_plan *q = sa_plan_new(g, r->dev);
    if (!q)
        return bl_oom(r);
    sa_status st = dtr_emit(r, d, q, ds);
    pack_stats ps;
    if (!st) {
        st = pack_plan_ws(q, g, &o->pack, NULL, r->dev->memory_bytes, &ps, r->err);
        ds->peak_load = ps.peak_load;
        ds->arena_bytes = ps.arena_after;
        ds->pack_work = ps.work;
        bl_count_build(r, ps.work);
    }
    if (st == SA_EINFEASIBLE || (!st && ps.arena_after > r->dev->memory_bytes)) {
        sa_plan_free(q);
        return SA_OK;
    }
    if (!st)
        st = planner_predict(q, g, NULL, NULL, r->err);
    if (st) {
        sa_plan_free(q);
        return st;
    }
    *p = q;
    return SA_OK;
}

static sa_status run_dtr(rctx *r, const dec_opts *o, sa_plan **out)
{
    const sa_dfg_graph *g = r->g;
    int64_t mem = r->dev->memory_bytes;
    dtr d;
    sa_status st = dtr_alloc(r, &d);
    d.deadline_s = r->deadline_s;
    d.cut = d.over = false;
    d.scans = 0;
    d.scans_max = r->work_max;
    sa_plan *p = NULL;
    dec_stats ds;
    memset(&ds, 0, sizeof ds);
    int32_t s = 0;
    for (; !st && s < DTR_STEPS; s++) {
        d.budget = (int64_t)((double)mem * (DTR_STEPS - s) / DTR_STEPS);
        if (r->deadline_s > 0 && sa_now_s() >= r->deadline_s) {
            st = sa_fail(r->err, SA_EINFEASIBLE, "%s: cut at the time limit", r->name);
            break;
        }
        if (!dtr_run(&d)) {
            if (d.cut) {
                st = d.over ? sa_fail(r->err, SA_EINFEASIBLE, "%s: stopped after %.0f resident scans (the effort "
                                      "limit of a seed)", r->name, d.scans_max)
                            : sa_fail(r->err, SA_EINFEASIBLE, "%s: cut at the time limit", r->name);
                break;
            }
            if (d.oom) {
                st = bl_oom(r);
                break;
            }
            int32_t op = d.fail_op;
            if (s == 0)
                st = sa_fail(r->err, SA_EINFEASIBLE,
                             "%s: op %d (\"%s\") cannot run within %lld bytes: its inputs, outputs and what may not "
                             "be evicted (parameters, optimizer state, inputs, tensors not recomputable) do not fit",
                             r->name, op, op >= 0 ? g->ops[op].name : "", (long long)mem);
            break; /* a smaller budget fails too: no step below fits */
        }
        if ((st = dtr_plan(r, &d, o, &p, &ds)) || p)
            break;
    }
    if (!st && !p)
        st = bl_too_big(r, "no budget DTR runs under gives a plan that fits:", &ds);
    if (!st) {
        char extra[256];
        snprintf(extra, sizeof extra,
                 "\"heuristic\":\"h_dtr_eq\",\"dtr_budget\":%lld,\"evictions\":%d,\"rebuilds\":%d,\"rebuild_us\":%.3f",
                 (long long)d.budget, d.n_evict, d.n_remat, d.remat_us);
        if ((st = bl_finish(r, p, &ds, extra)))
            sa_plan_free(p);
        else
            *out = p;
    }
    dtr_free(&d);
    return st;
}

sa_status policy_run_dtr(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_dtr, out, err);
}
