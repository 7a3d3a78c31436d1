/* planner.c - the planner core's entry point, the graph checks and the
 * prediction every plan shares: a plan planner_plan returns has been laid out by
 * one layout and simulated (its predicted block filled), whatever the layout. */
#include "swapadvisor/planner.h"

#include <stdint.h>
#include <string.h>

#include "swapadvisor/pack.h"

sa_status planner_check_graph(const sa_dfg_graph *g, const char *source, sa_err *err)
{
    const char *src = source ? source : g->name;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].time_us < 0)
            return sa_fail(err, SA_EFORMAT, "%s: ops[%d] (\"%s\"): no time_us; profile the graph first (dfg-profile)",
                           src, i, g->ops[i].name);
    return SA_OK;
}

sa_status planner_check_fits(const sa_dfg_graph *g, const sa_dfg_device *dev, sa_err *err)
{
    int32_t op;
    int64_t need = sa_dfg_max_op_bytes(g, &op);
    if (op >= 0 && need > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE,
                       "op %d (\"%s\") alone needs %lld bytes for its tensors, more than the %lld bytes of memory", op,
                       g->ops[op].name, (long long)need, (long long)dev->memory_bytes);
    return SA_OK;
}

sa_status planner_predict(sa_plan *p, const sa_dfg_graph *g, sa_sim_ws *ws, sa_sim_result *res, sa_err *err)
{
    sa_sim_ws *own = ws ? NULL : sa_sim_ws_new();
    sa_sim_result r;
    if (!ws && !own)
        return sa_fail(err, SA_ENOMEM, "out of memory simulating");
    sa_status st = sa_sim_run(p, g, ws ? ws : own, &r, err);
    sa_sim_ws_free(own);
    if (st)
        return st;
    p->predicted.iteration_us = r.makespan_us;
    p->predicted.ideal_us = sa_dfg_total_time_us(g);
    p->predicted.compute_us = r.compute_us;
    p->predicted.stall_us = r.stall_us;
    p->predicted.h2d_bytes = r.h2d_bytes;
    p->predicted.d2h_bytes = r.d2h_bytes;
    if (res)
        *res = r;
    return SA_OK;
}

sa_status planner_ideal_pool(const sa_dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err)
{
    /* with memory to spare every class gets its full demand: nothing is evicted */
    return pool_fine_grained(a, g, schedule, INT64_MAX / 4, err);
}

/* Whether r's deadline has passed (no clock read without one). */
static bool past(const planner_req *r) { return r->deadline_s > 0 && sa_now_s() >= r->deadline_s; }

static sa_status cut(const planner_req *r, sa_err *err)
{
    if (r->cut)
        *r->cut = true;
    return sa_fail(err, SA_EINFEASIBLE, "cut at the time limit");
}

/* Stages 1-3 of the size-class layout: swp decides, builds and places. */
static sa_status plan_pool(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *sch, const planner_req *r,
                           sa_plan *out, sa_err *err)
{
    swp_opts o;
    if (r->evict)
        o = *r->evict;
    else
        swp_opts_default(&o);
    if (r->deadline_s > 0)
        o.deadline_s = r->deadline_s;
    swp_ws *own = r->ws ? NULL : swp_ws_new(g);
    if (!r->ws && !own)
        return sa_fail(err, SA_ENOMEM, "out of memory while planning");
    sa_status st = swp_plan(g, dev, sch, r->pool, &o, r->ws ? r->ws : own, out, err);
    swp_ws_free(own);
    return st;
}

/* Stages 1-3 of the best-fit layout: the decisions' nodes, then the peak load
 * and (unless only the load is wanted) SmartPool's packing. */
static sa_status plan_bestfit(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *sch, const planner_req *r,
                              sa_plan *out, dec_stats *ds, sa_err *err)
{
    dec_opts def;
    if (r->dec)
        def = *r->dec;
    else
        dec_opts_default(&def);
    if (r->deadline_s > 0)
        def.deadline_s = r->deadline_s;
    const dec_opts *o = &def;
    sa_status st = dec_nodes(g, dev, sch, r->act, o, out, ds, err);
    if (st)
        return st;
    if (past(r))
        return cut(r, err);
    if (!o->pack_offsets)
        return pack_peak_load_ws(out, g, &o->pack, r->pack, &ds->peak_load, err);
    pack_stats ps;
    ps.work = 0;
    st = pack_plan_ws(out, g, &o->pack, r->pack, r->within_memory ? dev->memory_bytes : 0, &ps, err);
    ds->pack_work = ps.work; /* the walk's steps, also when its arena is too large */
    if (st == SA_EINFEASIBLE)
        return sa_fail(err, st, "best fit: the peak load, %lld bytes, leaves no arena within the %lld bytes of memory",
                       (long long)ps.peak_load, (long long)dev->memory_bytes);
    if (st)
        return st;
    ds->peak_load = ps.peak_load;
    ds->arena_bytes = ps.arena_after;
    if (r->within_memory && ps.arena_after > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE, "best fit: the packed arena, %lld bytes, exceeds the %lld bytes of memory",
                       (long long)ps.arena_after, (long long)dev->memory_bytes);
    return SA_OK;
}

sa_status planner_plan(const sa_dfg_graph *g, const sa_dfg_device *dev, const planner_req *r, sa_plan *out, sa_err *err)
{
    const int32_t *sch = r->schedule ? r->schedule : g->topo;
    dec_stats ds;
    memset(&ds, 0, sizeof ds);
    sa_status st;
    switch (r->layout) {
    case PLANNER_POOL:
        st = plan_pool(g, dev, sch, r, out, err);
        break;
    case PLANNER_BESTFIT:
        st = plan_bestfit(g, dev, sch, r, out, &ds, err);
        break;
    default:
        st = sa_fail(err, SA_EINTERNAL, "planner: unknown layout %d", (int)r->layout);
    }
    if (r->effort)
        *r->effort += (r->layout == PLANNER_POOL ? PLANNER_POOL_ID_EFFORT : PLANNER_ID_EFFORT) *
                          ((int64_t)g->n_ops + g->n_tensors) + ds.pack_work;
    if (st == SA_EINFEASIBLE && past(r))
        return cut(r, err); /* a layout's walk stopped by the deadline, or anything refused past it */
    if (!st && past(r))
        return cut(r, err);
    if (!st)
        st = planner_predict(out, g, r->sim, NULL, err);
    if (!st && r->layout == PLANNER_BESTFIT && r->stats)
        *r->stats = ds;
    return st;
}
