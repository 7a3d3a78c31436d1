/* planner.c - the graph checks and the prediction every planner shares. */
#include "swapadvisor/planner.h"

#include <stdint.h>

sa_status planner_check_graph(const dfg_graph *g, const char *source, sa_err *err)
{
    const char *src = source ? source : g->name;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].time_us < 0)
            return sa_fail(err, SA_EFORMAT, "%s: ops[%d] (\"%s\"): no time_us; profile the graph first (dfg-profile)",
                           src, i, g->ops[i].name);
    return SA_OK;
}

sa_status planner_check_fits(const dfg_graph *g, const dfg_device *dev, sa_err *err)
{
    int32_t op;
    int64_t need = dfg_max_op_bytes(g, &op);
    if (op >= 0 && need > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE,
                       "op %d (\"%s\") alone needs %lld bytes for its tensors, more than the %lld bytes of memory", op,
                       g->ops[op].name, (long long)need, (long long)dev->memory_bytes);
    return SA_OK;
}

sa_status planner_predict(plan *p, const dfg_graph *g, sim_ws *ws, sim_result *res, sa_err *err)
{
    sim_ws *own = ws ? NULL : sim_ws_new();
    sim_result r;
    if (!ws && !own)
        return sa_fail(err, SA_ENOMEM, "out of memory simulating");
    sa_status st = sim_run(p, g, ws ? ws : own, &r, err);
    sim_ws_free(own);
    if (st)
        return st;
    p->predicted.iteration_us = r.makespan_us;
    p->predicted.ideal_us = dfg_total_time_us(g);
    p->predicted.compute_us = r.compute_us;
    p->predicted.stall_us = r.stall_us;
    p->predicted.h2d_bytes = r.h2d_bytes;
    p->predicted.d2h_bytes = r.d2h_bytes;
    if (res)
        *res = r;
    return SA_OK;
}

sa_status planner_ideal_pool(const dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err)
{
    /* with memory to spare every class gets its full demand: nothing is evicted */
    return pool_fine_grained(a, g, schedule, INT64_MAX / 4, err);
}
