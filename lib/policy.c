/* policy.c - the baseline planners: ideal, topo and odswap; the rule-based
 * ones (smartpool, vdnn, tflms, checkpoint-sqrt, superneurons) are in
 * baselines.c, the profile-guided ones (autoswap, capuchin, pooch) in adaptive.c. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *policy_names(void) { return "ideal, topo, odswap, smartpool, vdnn, tflms, checkpoint-sqrt, superneurons, autoswap, capuchin, pooch"; }

sa_status policy_check_graph(const dfg_graph *g, const char *source, sa_err *err)
{
    const char *src = source ? source : g->name;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].time_us < 0)
            return sa_fail(err, SA_EFORMAT, "%s: ops[%d] (\"%s\"): no time_us; profile the graph first (dfg-profile)",
                           src, i, g->ops[i].name);
    return SA_OK;
}

sa_status policy_predict(plan *p, const dfg_graph *g, sim_ws *ws, sim_result *res, sa_err *err)
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

sa_status policy_ideal_pool(const dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err)
{
    /* with memory to spare every class gets its full demand: nothing is evicted */
    return pool_fine_grained(a, g, schedule, INT64_MAX / 4, err);
}

/* Rejects up front an op whose own tensors exceed the memory: no plan can run it. */
static sa_status check_fits(const dfg_graph *g, const dfg_device *dev, sa_err *err)
{
    int32_t op;
    int64_t need = dfg_max_op_bytes(g, &op);
    if (op >= 0 && need > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE,
                       "op %d (\"%s\") alone needs %lld bytes for its tensors, more than the %lld bytes of memory", op,
                       g->ops[op].name, (long long)need, (long long)dev->memory_bytes);
    return SA_OK;
}

sa_status policy_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err)
{
    *out = NULL;
    if (policy_is_rule(name)) {
        sa_status st = policy_check_graph(g, NULL, err);
        if (st || (st = check_fits(g, dev, err)))
            return st;
        return policy_rule_run(name, g, dev, out, err);
    }
    swp_opts o;
    swp_opts_default(&o);
    bool ideal = strcmp(name, "ideal") == 0;
    if (strcmp(name, "odswap") == 0) {
        o.victim = SWP_LRU;
        o.on_demand = true;
    } else if (!ideal && strcmp(name, "topo") != 0) {
        return sa_fail(err, SA_EUSAGE, "unknown policy \"%s\" (known: %s)", name, policy_names());
    }
    sa_status st = policy_check_graph(g, NULL, err);
    if (st || (!ideal && (st = check_fits(g, dev, err))))
        return st;
    pool_alloc a;
    if (!pool_alloc_init(&a, g->n_sizes))
        return sa_fail(err, SA_ENOMEM, "out of memory");
    dfg_device d = *dev;
    if (ideal) {
        st = policy_ideal_pool(g, g->topo, &a, err);
        if (!st && a.pool_bytes > d.memory_bytes)
            d.memory_bytes = a.pool_bytes;
    } else {
        st = pool_fine_grained(&a, g, g->topo, d.memory_bytes, err);
    }
    plan *p = st ? NULL : plan_new(g, &d);
    swp_ws *ws = st ? NULL : swp_ws_new(g);
    if (!st && (!p || !ws))
        st = sa_fail(err, SA_ENOMEM, "out of memory");
    if (!st)
        st = swp_plan(g, &d, g->topo, &a, &o, ws, p, err);
    if (!st)
        st = policy_predict(p, g, NULL, NULL, err);
    if (!st) {
        char search[256];
        snprintf(search, sizeof search,
                 "{\"algorithm\":\"%s\",\"size_classes\":%d,\"objects\":%d,\"pool_bytes\":%lld}", name, a.n_classes,
                 a.n_objects, (long long)a.pool_bytes);
        if (!plan_set_search_json(p, search))
            st = sa_fail(err, SA_ENOMEM, "out of memory");
    }
    swp_ws_free(ws);
    pool_alloc_free(&a);
    if (st) {
        plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}
