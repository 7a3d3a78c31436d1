/* policy.c - the baseline planners: ideal, topo and odswap; the rule-based
 * ones (smartpool, vdnn, tflms, checkpoint-sqrt, superneurons) are in
 * baselines.c, the profile-guided ones (autoswap, capuchin, pooch) in adaptive.c. */
#include "swapadvisor/policy.h"
#include "swapadvisor/planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *policy_names(void) { return "ideal, topo, odswap, smartpool, vdnn, tflms, checkpoint-sqrt, superneurons, autoswap, capuchin, pooch"; }

sa_status policy_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err)
{
    *out = NULL;
    if (policy_is_rule(name)) {
        sa_status st = planner_check_graph(g, NULL, err);
        if (st || (st = planner_check_fits(g, dev, err)))
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
    sa_status st = planner_check_graph(g, NULL, err);
    if (st || (!ideal && (st = planner_check_fits(g, dev, err))))
        return st;
    pool_alloc a;
    if (!pool_alloc_init(&a, g->n_sizes))
        return sa_fail(err, SA_ENOMEM, "out of memory");
    dfg_device d = *dev;
    if (ideal) {
        st = planner_ideal_pool(g, g->topo, &a, err);
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
        st = planner_predict(p, g, NULL, NULL, err);
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
