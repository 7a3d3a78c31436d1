/* pass.c - the swap planner's driver (swp.h): one op at a time in schedule order,
 * passes repeated until the persistent tensors resident at the end equal those at
 * the start (or max_passes), the first of several walked dry. */
#include "planning/pool/walk.h"

#include "swapadvisor/sim.h"

static sa_status plan_op(ctx *c)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    const int32_t pos = c->pos, op = c->sch[pos];
    const sa_dfg_op *o = &g->ops[op];
    /* the op's lists in locals: the stores below into int32_t arrays could
     * alias o's and c's fields for all the compiler knows */
    const int32_t *use = o->use, *in = o->in, *out = o->out;
    const int32_t n_use = o->n_use, n_in = o->n_in, n_out = o->n_out;
    int32_t nd = 0;
    sa_status st;
    bool away = false;
    if (c->rc_on && (st = swp_plan_recomputes(c, o)))
        return st;
    c->pin_key = pos;
    for (int32_t k = 0; k < n_use; k++) {
        w->pin[use[k]] = pos;
        away |= w->away[use[k]];
    }
    /* an op whose tensors cannot all take whole objects has them placed at
     * once, splitting objects (the last resort); so does one that could, but
     * for a resident tensor away from home (see swp_fits_whole_now) */
    bool split = w->tight[op] || (away && !swp_fits_whole_now(c, o));
    if (split && (st = swp_place_split(c, o)))
        return st;
    /* inputs (in-place updated tensors included) must hold valid contents */
    for (int32_t k = 0; k < n_in; k++) {
        int32_t t = in[k], obj = w->obj_of[t];
        if (obj >= 0 && !(split && w->fresh[t] == pos))
            continue;
        if (!w->host_valid[t])
            return sa_fail(c->err, SA_EINTERNAL, "planner: tensor %d has no valid copy for op %d", t, op);
        if ((!split && (st = acquire(c, o, t, &obj))) || (st = swap_in_for_node(c, t, obj, w->deps, &nd)))
            return st;
    }
    /* new outputs and workspace take an object when the op starts */
    for (int32_t k = n_in; k < n_use; k++) {
        int32_t t = use[k], obj = w->obj_of[t];
        if (!split && (st = acquire(c, o, t, &obj)))
            return st;
        add_obj_deps(c, w->deps, &nd, obj, t, false);
    }
    int32_t cn = add_node(c, SA_PLAN_COMPUTE, op, w->deps, nd);
    if (cn < 0)
        return swp_oom(c);
    for (int32_t k = 0; k < n_out; k++) {
        w->host_valid[out[k]] = 0; /* written on the device: the host copy is stale */
        w->host_ready[out[k]] = -1;
    }
    /* one walk over the op's tensors (distinct, dfg.h): each is used here,
     * then leaves if past its last use (persistent ones stay); so do those
     * recomputed later, after their last forward use.  A tensor leaving
     * reads and writes only its own fields and its object's. */
    for (int32_t k = 0; k < n_use; k++) {
        int32_t t = use[k];
        if (k >= n_in)
            w->place_begin[t] = cn;
        w->last_use_node[t] = cn;
        w->last_use_pos[t] = pos;
        w->cursor[t]++;
        bool drop = false;
        if (w->tpers[t])
            continue;
        if (w->cursor[t] < w->use_off[t + 1]) {
            drop = c->rc_on && w->rcm[t] && w->lfwd[t] == pos && w->rnx[t] < INT32_MAX && w->obj_of[t] >= 0;
            if (!drop)
                continue;
        }
        int32_t obj = w->obj_of[t];
        bool stale = !w->host_valid[t];
        if ((st = close_placement(c, t, cn)))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
        if (drop)
            w->gone[t] = stale; /* a current host copy is swapped in instead */
        else if (c->rc_on && w->rcm[t])
            w->gone[t] = 1; /* an intermediate: a later chain rebuilds it */
    }
    for (int32_t k = 0; k < n_use; k++)
        if (w->obj_of[use[k]] >= 0)
            heap_defer(c, w->obj_of[use[k]]); /* its key moved on */
    c->demand_node = cn;
    return SA_OK;
}

/* Per-schedule tables: use positions, real and virtual.  false on OOM. */
static bool index_schedule(ctx *c)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    memset(w->use_off, 0, ((size_t)g->n_tensors + 1) * sizeof *w->use_off);
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int32_t k = 0; k < g->ops[i].n_use; k++)
            w->use_off[g->ops[i].use[k] + 1]++;
    for (int64_t v = 0; v < w->n_vu; v++)
        w->use_off[w->vu_t[v] + 1]++;
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->use_off[t + 1] += w->use_off[t];
    if (w->use_off[g->n_tensors] > w->cap_uses) {
        if (!swp_grow(&w->use_pos, (size_t)w->use_off[g->n_tensors], sizeof *w->use_pos))
            return false;
        w->cap_uses = w->use_off[g->n_tensors];
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->cursor[t] = w->use_off[t];
    for (int32_t i = 0; i < g->n_ops; i++) {
        for (int32_t v = w->n_vu ? w->vu_off[i] : 0; v < (w->n_vu ? w->vu_off[i + 1] : 0); v++)
            w->use_pos[w->cursor[w->vu_t[v]]++] = i;
        const sa_dfg_op *o = &g->ops[c->sch[i]];
        for (int32_t k = 0; k < o->n_use; k++)
            w->use_pos[w->cursor[o->use[k]]++] = i;
    }
    return true;
}

/* Resets the per-pass state; persistent tensors in s_obj start resident. */
static void start_pass(ctx *c)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    const pool_alloc *a = c->a;
    sa_plan_reset(c->p);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        w->cursor[t] = w->use_off[t];
        w->obj_of[t] = -1;
        w->last_use_node[t] = w->last_use_pos[t] = -1;
        w->host_ready[t] = -1;
        w->place_begin[t] = -1;
        w->pin[t] = -1;
        w->prev_end[t] = -1;
        w->wasted[t] = 0;
        w->tnext[t] = -1;
        w->toff[t] = 0;
        w->fresh[t] = -1;
        w->away[t] = AT_HOME;
        w->gone[t] = 0;
        w->hold[t] = 0;
        /* host copies: inputs and persistent tensors not resident are current;
         * a resident persistent tensor was updated on the device last iteration
         * (tin and tpers: the tensor's kind, flat) */
        w->host_valid[t] = w->tin[t] | (w->tpers[t] & (w->s_obj[t] < 0));
    }
    for (int32_t o = 0; o < a->first_obj[a->n_classes]; o++) {
        w->occ[o] = -1;
        w->free_after[o] = -1;
        w->cur[o] = 0;
        w->mark[o] = 0;
        w->yat[o] = -1;
        w->pe_n[o] = 0;
        w->nfx[o] = 0;
    }
    w->hoff[0] = 0;
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->hlen[k] = 0;
        w->yhead[k] = w->ytail[k] = 0;
        w->hoff[k + 1] = w->hoff[k] + 2 * a->cnt[k] + 16;
    }
    w->stamp = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (w->s_obj[t] >= 0) {
            settle(c, t, w->s_obj[t]);
            heap_push(c, w->s_obj[t]);
        }
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->fq_head[k] = 0;
        w->fq_len[k] = 0;
        for (int32_t o = a->first_obj[k]; o < a->first_obj[k + 1]; o++)
            if (w->occ[o] < 0)
                w->fq[a->first_obj[k] + w->fq_len[k]++] = o;
    }
    c->demand_node = -1;
    c->rc_key = g->n_ops;
    c->n_dry = 0;
}

/* Brings the end state to the start state: persistent tensors resident at the
 * end but not at their start object leave, missing ones come back. */
static sa_status finish_pass(ctx *c)
{
    swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    sa_status st;
    c->pos = c->pin_key = g->n_ops; /* nothing is pinned any more */
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (w->obj_of[t] >= 0 && (w->obj_of[t] != w->s_obj[t] || w->toff[t] != 0) && (st = swp_evict_tensor(c, t)))
            return st;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t o = w->s_obj[t];
        if (o < 0 || w->obj_of[t] == o)
            continue;
        int32_t si = add_swap_in(c, t, o);
        if (si < 0)
            return swp_oom(c);
        settle(c, t, o);
        w->place_begin[t] = si;
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (w->obj_of[t] < 0)
            continue;
        if (!sa_plan_add_placement(c->p, t, c->a->obj_offset[w->obj_of[t]] + w->toff[t], w->place_begin[t], -1))
            return swp_oom(c);
        if (!sa_plan_add_resident(c->p, t, c->a->obj_offset[w->obj_of[t]]))
            return swp_oom(c);
    }
    return SA_OK;
}

/* One pass: the start state, then every op of the schedule in order. */
static sa_status walk(ctx *c)
{
    sa_status st;
    start_pass(c);
    for (c->pos = 0; c->pos < c->g->n_ops; c->pos++) {
        if (sa_deadline_passed(&c->dl, 1))
            return sa_fail(c->err, SA_EINFEASIBLE, "cut at the time limit");
        if ((st = plan_op(c)))
            return st;
    }
    /* every tensor that is not persistent has left at its last use: one still
     * placed would be carried into the next pass and placed there twice */
    for (int32_t t = 0; t < c->g->n_tensors; t++)
        if (c->w->obj_of[t] >= 0 && !c->w->tpers[t])
            return sa_fail(c->err, SA_EINTERNAL, "planner: tensor %d (\"%s\") is still on the device at the iteration's end",
                           t, c->g->tensors[t].name);
    return SA_OK;
}

sa_status swp_plan(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, const pool_alloc *a,
                   const swp_opts *o, swp_ws *w, sa_plan *out, sa_err *err)
{
    ctx c = {g, dev, schedule, a, o, w, out, err, 0, -1, 0, g->n_ops, false, false, 0, sa_deadline_at(o->deadline_s)};
    sa_status st;
    if (a->pool_bytes > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE, "the pool (%lld bytes) does not fit the device memory (%lld bytes)",
                       (long long)a->pool_bytes, (long long)dev->memory_bytes);
    if (!swp_reserve_objects(w, a) || !sa_plan_set_schedule(out, schedule, g->n_ops))
        return swp_oom(&c);
    out->device = *dev;
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->tcls[t] = a->cls[g->tensors[t].size_idx];
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->thr[k] = o->threshold_scale * sa_sim_transfer_alone_us(dev, a->obj_bytes[k], SA_PLAN_STREAM_D2H);
        for (int32_t ob = a->first_obj[k]; ob < a->first_obj[k + 1]; ob++)
            w->ocls[ob] = k;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        w->tight[i] = !swp_fits_whole(&c, i);
    bld_time_prefix(g, c.sch, g->n_ops, w->tprefix, NULL);
    if (!swp_prep_recompute(&c) || !index_schedule(&c))
        return swp_oom(&c);
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->s_obj[t] = -1;
    int passes = o->max_passes > 0 ? o->max_passes : 1;
    /* A dry pass: the first of several passes is walked for its end state
     * only, without building its plan (nodes, deps, placements), since the
     * next pass usually starts from a different state.  The walk's decisions
     * do not depend on the plan, so when it turns out steady after all, the
     * same walk again builds the plan a full pass would have.  A workspace
     * whose last first pass was steady walks its next one in full. */
    for (int pass = 1;; pass++) {
        c.dry = pass == 1 && passes > 1 && !w->p1_steady;
        if ((st = walk(&c)))
            return st;
        /* the end state: persistent tensors still resident */
        bool steady = true;
        for (int32_t t = 0; t < g->n_tensors; t++) {
            /* a tensor sharing an object from the side is not carried over */
            w->e_obj[t] = w->toff[t] == 0 ? w->obj_of[t] : -1;
            steady &= w->e_obj[t] == w->s_obj[t];
        }
        if (pass == 1)
            w->p1_steady = steady;
        if (steady && c.dry) {
            c.dry = false;
            if ((st = walk(&c)))
                return st;
        }
        if (steady || pass >= passes)
            break;
        for (int32_t t = 0; t < g->n_tensors; t++)
            w->s_obj[t] = w->wasted[t] ? -1 : w->e_obj[t];
    }
    if ((st = finish_pass(&c)))
        return st;
    int64_t arena = 0;
    for (int32_t i = 0; i < out->n_place; i++) {
        int64_t e = out->place[i].offset + g->tensors[out->place[i].tensor].bytes;
        if (e > arena)
            arena = e;
    }
    out->arena_bytes = arena;
    return SA_OK;
}
