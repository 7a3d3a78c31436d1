/* rebuild.c - recomputation inside the pool walk (swp.h, "Recomputation"): the
 * flags carried out and their virtual uses are fixed before the first pass, and a
 * dropped tensor is rebuilt before the op that reads it, its chain's inputs held
 * until its recompute node is added; legality and costs are recompute.h's. */
#include "planning/pool/walk.h"

#include "swapadvisor/sim.h"

/* The compute time of rebuilding the recompute-flagged tensor t at
 * position nx from what is valid then: its producer, and the chains of its
 * inputs that are themselves flagged and gone or go; -1 when some input
 * would have no valid copy at nx (an activation that is not flagged, a
 * persistent tensor updated by then) or the chain is too long. */
static double redrop_cost(const ctx *c, int32_t t, int32_t nx, int depth)
{
    const swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    if (depth > SWP_RECOMPUTE_CHAIN_MAX || !w->rcm[t] || !dec_recompute_ok(g, w->opos, t, nx))
        return -1;
    const sa_dfg_op *o = &g->ops[g->tensors[t].producer];
    double us = o->time_us;
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k];
        sa_dfg_kind kd = g->tensors[u].kind;
        if (kd == SA_DFG_INPUT || sa_dfg_kind_persistent(kd))
            continue; /* a host copy (dec_recompute_ok: not updated by nx) */
        double x = redrop_cost(c, u, nx, depth + 1);
        if (x < 0)
            return -1;
        us += x;
    }
    return us;
}

/* Whether the eviction of v (stale on the host) drops it to be recomputed
 * again at its next use instead of swapping it out: v is flagged for
 * recompute and already past its forward uses, its chain can run at the
 * next use from inputs and persistent tensors alone, and costs less than
 * the stall the round trip would cause; never a tensor of the node being
 * built (it leaves only to come back at once, see swp_fits_whole_now). */
bool swp_redrop(const ctx *c, int32_t v)
{
    const swp_ws *w = c->w;
    if (!c->rc_on || !w->rcm[v] || w->rnx[v] == INT32_MAX || c->pos <= w->lfwd[v] ||
        w->cursor[v] >= w->use_off[v + 1] || w->pin[v] == c->pin_key)
        return false;
    int32_t nx = w->use_pos[w->cursor[v]];
    if (nx <= c->pos || w->hold[v] > 0)
        return false; /* read at this position (by the op, or by a recompute still to run) */
    double us = redrop_cost(c, v, nx, 1);
    if (us < 0)
        return false;
    /* as decide.h's cost rule: swap when the round trip hides behind the
     * compute until the next use, else recompute when that costs less than
     * the stall the swap would cause */
    int64_t b = c->g->tensors[v].bytes;
    double x = sa_sim_transfer_alone_us(c->dev, b, SA_PLAN_STREAM_D2H) + sa_sim_transfer_alone_us(c->dev, b, SA_PLAN_STREAM_H2D);
    double gap = w->tprefix[nx] - w->tprefix[c->pos];
    return x > gap && us < x - gap;
}

/* u leaves with node end when it is on the device, not persistent, past its
 * last use and not held by a recompute under way (which frees it after its
 * read); a flagged one may be rebuilt by a later chain.  Nothing else would
 * free it: it would stay to the iteration's end and, at offset 0, be carried
 * into the next pass's start state. */
static sa_status leave_if_done(ctx *c, int32_t u, int32_t end)
{
    swp_ws *w = c->w;
    int32_t obj = w->obj_of[u];
    if (w->tpers[u] || obj < 0 || w->cursor[u] < w->use_off[u + 1] || w->hold[u] > 0)
        return SA_OK;
    sa_status st = close_placement(c, u, end);
    if (st)
        return st;
    if (w->occ[obj] < 0)
        release(c, obj);
    w->gone[u] = w->rcm[u];
    return SA_OK;
}

/* Rebuilds the dropped tensor t before the op at the current position: its
 * producer's dropped inputs first (depth counts the chain), then a
 * recompute node walked like an op under a pin key of its own (swp.h,
 * "Recomputation").  The producer's inputs are used at this position (their
 * virtual uses, consumed by plan_op); its outputs that were dropped become
 * resident again, those not resident take a scratch placement for the node
 * only. */
static sa_status recompute(ctx *c, int32_t t, int depth)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    int32_t op = g->tensors[t].producer, nd = 0;
    const sa_dfg_op *o = &g->ops[op];
    sa_status st;
    if (depth > SWP_RECOMPUTE_CHAIN_MAX)
        return sa_fail(c->err, SA_EINTERNAL, "planner: recompute chain longer than %d at tensor %d",
                       SWP_RECOMPUTE_CHAIN_MAX, t);
    /* the producer's inputs are held until its node is added: one rebuilt
     * or read for it is neither redropped nor freed as an intermediate by
     * the rebuilding of another (an error ends the pass; start_pass clears
     * hold) */
    for (int32_t k = 0; k < o->n_in; k++)
        w->hold[o->in[k]]++;
    for (int32_t k = 0; k < o->n_in; k++)
        if (w->obj_of[o->in[k]] < 0 && w->gone[o->in[k]] && (st = recompute(c, o->in[k], depth + 1)))
            return st;
    c->pin_key = ++c->rc_key;
    bool away = false;
    for (int32_t k = 0; k < o->n_use; k++) {
        w->pin[o->use[k]] = c->pin_key;
        away |= w->obj_of[o->use[k]] >= 0 && w->away[o->use[k]] != AT_HOME;
    }
    if (away && !swp_fits_whole_now(c, o)) /* residents away from home leave: then acquire places all */
        for (int32_t k = 0; k < o->n_use; k++) {
            int32_t u = o->use[k], ob = w->obj_of[u];
            if (ob < 0 || w->away[u] == AT_HOME)
                continue;
            if ((st = swp_evict_tensor(c, u)))
                return st;
            if (w->occ[ob] < 0)
                release(c, ob);
        }
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k], obj;
        if (w->obj_of[u] >= 0)
            continue;
        if (w->gone[u] || !w->host_valid[u])
            return sa_fail(c->err, SA_EINTERNAL, "planner: input %d of the recompute of tensor %d has no valid copy",
                           u, t);
        if ((st = acquire(c, o, u, &obj)) || (st = swap_in_for_node(c, u, obj, w->deps, &nd)))
            return st;
    }
    for (int32_t k = o->n_in; k < o->n_use; k++) {
        int32_t u = o->use[k], obj = w->obj_of[u];
        if (obj >= 0)
            continue; /* resident: written again with the same contents */
        if ((st = acquire(c, o, u, &obj)))
            return st;
        add_obj_deps(c, w->deps, &nd, obj, u, false);
        /* u's last placement ends first: a swap-out still running (off the
         * compute stream) would leave it placed twice at once */
        if (!c->dry && w->prev_end[u] >= 0 && !node_on_compute(c->p, w->prev_end[u]))
            bld_add_dep(w->deps, &nd, w->prev_end[u]);
        w->place_begin[u] = -2; /* placed by this node (below) */
    }
    int32_t rn = add_node(c, SA_PLAN_RECOMPUTE, op, w->deps, nd);
    if (rn < 0)
        return swp_oom(c);
    for (int32_t k = 0; k < o->n_in; k++)
        w->hold[o->in[k]]--;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t u = o->use[k];
        w->last_use_node[u] = rn;
        w->last_use_pos[u] = c->pos;
    }
    for (int32_t k = o->n_in; k < o->n_use; k++) {
        int32_t u = o->use[k], obj = w->obj_of[u];
        if (w->place_begin[u] != -2)
            continue;
        w->place_begin[u] = rn;
        if (u == t || (w->gone[u] && w->rnx[u] < INT32_MAX && w->cursor[u] < w->use_off[u + 1])) {
            /* rebuilt: its uses follow (a sibling with none left leaves below, else it would
             * stay resident past the iteration's end and be carried into the next pass's start
             * state, where its producer places it a second time) */
            w->gone[u] = 0;
            w->host_ready[u] = -1;
            continue;
        }
        if ((st = close_placement(c, u, rn)))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
    }
    /* an input read here past its last use leaves: a chain intermediate, or
     * a tensor whose own uses all came before this rebuild */
    for (int32_t k = 0; k < o->n_in; k++)
        if ((st = leave_if_done(c, o->in[k], rn)))
            return st;
    for (int32_t k = 0; k < o->n_use; k++)
        if (w->obj_of[o->use[k]] >= 0)
            heap_defer(c, w->obj_of[o->use[k]]);
    c->demand_node = rn;
    return SA_OK;
}

/* Before the op at the current position: its dropped inputs are rebuilt,
 * then the virtual uses of this position are consumed (a tensor past its
 * last use leaves, as in plan_op). */
sa_status swp_plan_recomputes(ctx *c, const sa_dfg_op *o)
{
    swp_ws *w = c->w;
    sa_status st;
    for (int32_t k = 0; k < o->n_in; k++)
        if (w->obj_of[o->in[k]] < 0 && w->gone[o->in[k]] && (st = recompute(c, o->in[k], 1)))
            return st;
    for (int32_t v = w->vu_off[c->pos]; v < w->vu_off[c->pos + 1]; v++) {
        int32_t u = w->vu_t[v];
        w->cursor[u]++;
        if ((st = leave_if_done(c, u, w->last_use_node[u])))
            return st;
    }
    return SA_OK;
}

/* Appends the virtual use (position i, tensor u).  false on OOM. */
static bool push_vu(swp_ws *w, int32_t i, int32_t u)
{
    if (w->n_vu == w->cap_vu) {
        int64_t nc = w->cap_vu ? 2 * w->cap_vu : 256;
        if (!swp_grow(&w->vp, (size_t)nc, sizeof *w->vp) || !swp_grow(&w->vt, (size_t)nc, sizeof *w->vt) ||
            !swp_grow(&w->vu_t, (size_t)nc, sizeof *w->vu_t))
            return false;
        w->cap_vu = nc;
    }
    w->vp[w->n_vu] = i;
    w->vt[w->n_vu++] = u;
    return true;
}

/* The flags carried out (swp.h, "Recomputation"), their chain depths, and
 * the virtual uses: the recompute of t at its next use nx reads its
 * producer's inputs there, and so does the recompute of every flagged input
 * that is still dropped at nx (dropped before nx, rebuilt no earlier), in
 * turn.  Needs tight[] and tprefix (dec_gap_longest's stall-free starts).
 * false on OOM. */
bool swp_prep_recompute(ctx *c)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    const uint8_t *want = c->o->recompute;
    int32_t n = g->n_ops;
    w->n_vu = 0;
    c->rc_on = false;
    if (!want)
        return true;
    memset(w->rcm, 0, (size_t)g->n_tensors);
    memset(w->gone, 0, (size_t)g->n_tensors);
    for (int32_t i = 0; i < n; i++)
        w->opos[c->sch[i]] = i;
    for (int32_t i = 0; i < n; i++) {
        int32_t op = c->sch[i];
        const sa_dfg_op *o = &g->ops[op];
        for (int32_t k = 0; k < o->n_out; k++) {
            int32_t t = o->out[k], lf, nx, d = 1;
            sa_dfg_kind kd = g->tensors[t].kind;
            if (!want[t] || sa_dfg_kind_persistent(kd) || kd == SA_DFG_WORKSPACE || kd == SA_DFG_INPUT || w->tight[op])
                continue;
            dec_gap(g, w->opos, t, &lf, &nx);
            if (lf < 0) /* made in the backward phase: its longest gap between two uses */
                dec_gap_longest(g, w->opos, w->tprefix, t, &lf, &nx);
            if (lf < 0)
                continue;
            if (nx < 0) { /* no use after its forward ones: an intermediate of chains only */
                int32_t first;
                if (!dec_recomputable(g, t) || !sa_dfg_tensor_span(g, w->opos, t, &first, &lf))
                    continue;
                nx = INT32_MAX;
            } else if (!dec_recompute_ok(g, w->opos, t, nx)) {
                continue;
            }
            for (int32_t j = 0; j < o->n_in; j++)
                if (w->rcm[o->in[j]] && w->rdepth[o->in[j]] + 1 > d)
                    d = w->rdepth[o->in[j]] + 1;
            if (d > SWP_RECOMPUTE_CHAIN_MAX)
                continue;
            w->rcm[t] = 1;
            w->rdepth[t] = d;
            w->lfwd[t] = lf;
            w->rnx[t] = nx;
            c->rc_on = true;
        }
    }
    if (!c->rc_on)
        return true;
    memset(w->cmark, 0, (size_t)g->n_tensors * sizeof *w->cmark);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (!w->rcm[t] || w->rnx[t] == INT32_MAX)
            continue;
        int32_t nx = w->rnx[t], nw = 0;
        w->wl[nw++] = t;
        w->cmark[t] = t + 1;
        for (int32_t q = 0; q < nw; q++) {
            const sa_dfg_op *po = &g->ops[g->tensors[w->wl[q]].producer];
            for (int32_t k = 0; k < po->n_in; k++) {
                int32_t u = po->in[k];
                /* dropped at nx: rebuilt in the chain (an intermediate only
                 * where its producer may run then), else read there */
                bool chain = w->rcm[u] && w->lfwd[u] < nx && w->rnx[u] >= nx &&
                             (w->rnx[u] < INT32_MAX || dec_recompute_ok(g, w->opos, u, nx));
                if (!chain && !push_vu(w, nx, u))
                    return false;
                if (chain && w->cmark[u] != t + 1) {
                    w->cmark[u] = t + 1;
                    w->wl[nw++] = u;
                }
            }
        }
    }
    /* by position (counting sort, stable) */
    memset(w->vu_off, 0, ((size_t)n + 1) * sizeof *w->vu_off);
    for (int64_t v = 0; v < w->n_vu; v++)
        w->vu_off[w->vp[v] + 1]++;
    for (int32_t i = 0; i < n; i++)
        w->vu_off[i + 1] += w->vu_off[i];
    for (int64_t v = 0; v < w->n_vu; v++)
        w->vu_t[w->vu_off[w->vp[v]]++] = w->vt[v];
    for (int32_t i = n; i > 0; i--)
        w->vu_off[i] = w->vu_off[i - 1];
    w->vu_off[0] = 0;
    return true;
}
