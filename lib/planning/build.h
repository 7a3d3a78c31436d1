/*
 * build.h - the node and dependency builder shared by the planner core's two
 * node stages (pool/: evictions chosen online in a size-class pool; bestfit/nodes.c:
 * per-tensor keep / swap / recompute decisions).  Internal to lib/planning.
 *
 * Both stages walk the schedule once per pass, emit compute, swap-in,
 * swap-out and recompute nodes with sa_plan_add_node, and collect each node's
 * dependencies in a caller's scratch array with bld_add_dep (no duplicates,
 * -1 means "none" and is skipped, order of first mention kept: the order is
 * part of the plan's bytes).  Their timing estimates read the same prefix of
 * compute times (bld_time_prefix).
 *
 * Nothing here allocates; every array is the caller's.
 */
#ifndef SA_PLANNING_BUILD_H
#define SA_PLANNING_BUILD_H

#include <stdint.h>

#include "swapadvisor/dfg.h"

/* Appends node v to deps[0 .. *nd) unless v < 0 or already there.  deps must
 * have room for one more entry. */
static inline void bld_add_dep(int32_t *deps, int32_t *nd, int32_t v)
{
    if (v < 0)
        return;
    for (int32_t i = 0; i < *nd; i++)
        if (deps[i] == v)
            return;
    deps[(*nd)++] = v;
}

/* prefix[i] = the compute time (us, negative times as 0) of schedule
 * positions 0 .. i-1, for i in 0 .. n (prefix has n + 1 entries): the
 * stall-free start of position i.  When pos is not NULL, pos[sch[i]] = i. */
static inline void bld_time_prefix(const sa_dfg_graph *g, const int32_t *sch, int32_t n, double *prefix, int32_t *pos)
{
    prefix[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        double tu = g->ops[sch[i]].time_us;
        prefix[i + 1] = prefix[i] + (tu > 0 ? tu : 0);
        if (pos)
            pos[sch[i]] = i;
    }
}

#endif
