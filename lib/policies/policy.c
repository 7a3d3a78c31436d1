/* policy.c - the policy table (policy.h) and its dispatch. */
#include "swapadvisor/policy.h"

#include <stdio.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "policies_internal.h"

static const sa_policy_def TABLE[] = {
    {"swapadvisor", "genetic search over schedule and memory pool", 0, policy_run_swapadvisor},
    {"topo", "Belady swap planner on the default order", SA_POLICY_NEEDS_FIT | SA_POLICY_POOL_LAYOUT, policy_run_topo},
    {"odswap", "on-demand LRU swapping, prefetch when memory allows", SA_POLICY_NEEDS_FIT | SA_POLICY_POOL_LAYOUT,
     policy_run_odswap},
    {"topo-rc", "Belady swap planner, cheap activations recomputed", SA_POLICY_NEEDS_FIT | SA_POLICY_POOL_LAYOUT,
     policy_run_topo_rc},
    {"ideal", "unlimited memory: nothing moves (the reference)", SA_POLICY_NO_SEED, policy_run_ideal},
    {"smartpool", "no swapping; best-fit arena over lifetimes", SA_POLICY_NEEDS_FIT, policy_run_smartpool},
    {"vdnn", "vDNN_dyn: offload conv / layer inputs in forward", SA_POLICY_NEEDS_FIT, policy_run_vdnn},
    {"tflms", "TFLMS: swap activations, threshold tuned to fit", SA_POLICY_NEEDS_FIT, policy_run_tflms},
    {"checkpoint-sqrt", "Chen et al.: sqrt(n) checkpoints, recompute the rest", SA_POLICY_NEEDS_FIT,
     policy_run_checkpoint_sqrt},
    {"superneurons", "SuperNeurons: swap conv outputs, recompute the rest", SA_POLICY_NEEDS_FIT,
     policy_run_superneurons},
    {"autoswap", "AutoSwap: priority scores weighted by Bayesian opt.", SA_POLICY_NEEDS_FIT, policy_run_autoswap},
    {"capuchin", "Capuchin: swap by FreeTime, recompute by MSPS", SA_POLICY_NEEDS_FIT, policy_run_capuchin},
    {"pooch", "PooCH: swap / keep / recompute classified by timeline", SA_POLICY_NEEDS_FIT, policy_run_pooch},
    {"hybrid", "ours: recompute cheap maps in short chains, swap others", SA_POLICY_NEEDS_FIT, policy_run_hybrid},
    {"memory-budget", "PyTorch's memory budget: knapsack of saved activations", SA_POLICY_NEEDS_FIT | SA_POLICY_SEED_FIRST,
     policy_run_memory_budget},
    {"dtr", "DTR: evict least cost/(bytes x staleness), rebuild", SA_POLICY_NEEDS_FIT | SA_POLICY_SEED_FIRST,
     policy_run_dtr},
    {"optimal", "MILP keep/swap/recompute, optimal on one order only", SA_POLICY_NEEDS_FIT | SA_POLICY_SEED_MILP, policy_run_optimal},
    {"optimal-search", "the MILP on the genetic search's best order",
     SA_POLICY_NEEDS_FIT | SA_POLICY_SEED_MILP | SA_POLICY_SEED_SEARCH,
     policy_run_optimal_search},
};

void sa_policy_opts_default(sa_policy_opts *o)
{
    memset(o, 0, sizeof *o);
    sa_ga_opts_default(&o->search);
    o->search_seeds = true;
    o->optimal.solver = SA_MILP_AUTO;
    o->optimal.time_limit_s = 60;
    o->optimal.gap = 0.02;
    o->optimal.threads = 1;
    o->seed_milp.max_cells = SA_POLICY_SEED_MILP_CELLS;
    o->seed_milp.polish_cells = SA_POLICY_POLISH_MILP_CELLS;
    o->seed_milp.max_nodes = SA_POLICY_SEED_MILP_NODES;
    o->seed_milp.pump_cells = SA_POLICY_PUMP_MILP_CELLS;
    o->seed_milp.auto_cells = SA_POLICY_AUTO_MILP_CELLS;
    o->seed_milp.auto_need = SA_POLICY_AUTO_MILP_NEED;
}

const sa_policy_def *sa_policy_table(int *n)
{
    *n = (int)SA_ARRAY_LEN(TABLE);
    return TABLE;
}

const sa_policy_def *sa_policy_find(const char *name)
{
    for (size_t i = 0; i < SA_ARRAY_LEN(TABLE); i++)
        if (strcmp(TABLE[i].name, name) == 0)
            return &TABLE[i];
    return NULL;
}

const char *sa_policy_names(char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < SA_ARRAY_LEN(TABLE) && at < len; i++) {
        int k = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", TABLE[i].name);
        if (k < 0)
            break;
        at += (size_t)k;
    }
    return buf;
}

static sa_status run(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_policy_opts *opts,
                     bool checks, sa_plan **out, sa_err *err)
{
    *out = NULL;
    const sa_policy_def *d = sa_policy_find(name);
    if (!d) {
        char names[512];
        return sa_fail(err, SA_EUSAGE, "unknown policy \"%s\" (known: %s)", name,
                       sa_policy_names(names, sizeof names));
    }
    sa_status st;
    if (checks && ((st = planner_check_graph(g, NULL, err)) ||
                   ((d->flags & SA_POLICY_NEEDS_FIT) && (st = planner_check_fits(g, dev, err)))))
        return st;
    sa_policy_opts def;
    if (!opts) {
        sa_policy_opts_default(&def);
        opts = &def;
    }
    sa_policy_call c = {d->name, g, dev, opts};
    return d->run(&c, out, err);
}

sa_status sa_policy_run_opts(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_policy_opts *opts,
                          sa_plan **out, sa_err *err)
{
    return run(name, g, dev, opts, true, out, err);
}

sa_status sa_policy_run(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, sa_plan **out, sa_err *err)
{
    return run(name, g, dev, NULL, true, out, err);
}

sa_status sa_policy_run_unchecked(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_policy_opts *opts,
                               sa_plan **out, sa_err *err)
{
    return run(name, g, dev, opts, false, out, err);
}
