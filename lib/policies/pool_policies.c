/* pool_policies.c - the rows that run the planner core with the size-class
 * pool layout (planner.h, swp.h): SwapAdvisor's swap planner on
 * the default topological order: ideal (nothing evicted), topo (Belady),
 * topo-rc (Belady, cheap activations recomputed by swp_recompute_rule) and
 * odswap (on-demand LRU with steady-state prefetch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/swp.h"
#include "policies_internal.h"

static sa_status run_pool(const sa_policy_call *c, bool ideal, const swp_opts *o, sa_plan **out, sa_err *err)
{
    const sa_dfg_graph *g = c->g;
    pool_alloc a;
    if (!pool_alloc_init(&a, g->n_sizes))
        return sa_fail(err, SA_ENOMEM, "out of memory");
    sa_dfg_device d = *c->dev;
    sa_status st;
    if (ideal) {
        st = planner_ideal_pool(g, g->topo, &a, err);
        if (!st && a.pool_bytes > d.memory_bytes)
            d.memory_bytes = a.pool_bytes;
        /* the plan raises memory_bytes to its arena: keep it a size a document holds exactly */
        if (!st && (double)d.memory_bytes > SA_DFG_MAX_EXACT_INT)
            st = sa_fail(err, SA_EINFEASIBLE, "the ideal plan needs an arena of %lld bytes, beyond 2^53, the largest "
                         "size a plan document holds exactly", (long long)a.pool_bytes);
    } else {
        st = pool_fine_grained(&a, g, g->topo, d.memory_bytes, err);
    }
    sa_plan *p = st ? NULL : sa_plan_new(g, &d);
    if (!st && !p)
        st = sa_fail(err, SA_ENOMEM, "out of memory");
    planner_req q = {.schedule = g->topo, .layout = PLANNER_POOL, .pool = &a, .evict = o,
                     .deadline_s = c->opts->deadline_s};
    if (!st)
        st = planner_plan(g, &d, &q, p, err);
    if (!st) {
        char search[256];
        snprintf(search, sizeof search,
                 "{\"algorithm\":\"%s\",\"size_classes\":%d,\"objects\":%d,\"pool_bytes\":%lld}", c->name,
                 a.n_classes, a.n_objects, (long long)a.pool_bytes);
        if (!sa_plan_set_search_json(p, search))
            st = sa_fail(err, SA_ENOMEM, "out of memory");
    }
    pool_alloc_free(&a);
    if (st) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

sa_status policy_run_ideal(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    swp_opts o;
    swp_opts_default(&o);
    return run_pool(c, true, &o, out, err);
}

sa_status policy_run_topo(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    swp_opts o;
    swp_opts_default(&o);
    return run_pool(c, false, &o, out, err);
}

sa_status policy_run_topo_rc(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    swp_opts o;
    swp_opts_default(&o);
    uint8_t *rc = malloc((size_t)c->g->n_tensors + 1);
    int32_t *pos = malloc(((size_t)c->g->n_ops + 1) * sizeof *pos);
    sa_status st = SA_OK;
    if (!rc || !pos) {
        st = sa_fail(err, SA_ENOMEM, "out of memory");
    } else {
        swp_recompute_rule(c->g, c->dev, NULL, SWP_RECOMPUTE_US_PER_MB, pos, rc);
        o.recompute = rc;
        st = run_pool(c, false, &o, out, err);
    }
    free(rc);
    free(pos);
    return st;
}

sa_status policy_run_odswap(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    swp_opts o;
    swp_opts_default(&o);
    o.victim = SWP_LRU;
    o.on_demand = true;
    return run_pool(c, false, &o, out, err);
}
