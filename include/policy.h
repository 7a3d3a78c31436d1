/*
 * policy.h - named planners over one graph model, simulator and plan format.
 *
 *   ideal   unlimited memory: every tensor keeps its own object, nothing moves;
 *           the plan's memory_bytes is raised to what that needs
 *   topo    the swap planner on the default topological order, one size class
 *           per distinct size, objects spread in proportion to demand
 *   odswap  the paper's online baseline: default order, LRU eviction when memory
 *           is demanded, swapped-out tensors prefetched as early as memory allows
 *
 * Ownership: *out is a new plan owned by the caller (plan_free).
 */
#ifndef POLICY_H
#define POLICY_H

#include "dfg.h"
#include "plan.h"
#include "pool.h"
#include "sa_common.h"
#include "sim.h"
#include "swp.h"

/* Checks that g can be planned: every op has time_us, and the device block is
 * present (unless dev is given).  Names the first op that lacks a time. */
sa_status policy_check_graph(const dfg_graph *g, const char *source, sa_err *err);

/* Fills p->predicted from a simulation of p. ws may be NULL (one is made). */
sa_status policy_predict(plan *p, const dfg_graph *g, sim_ws *ws, sim_result *res, sa_err *err);

/* Pool sized so that nothing is ever evicted (cnt = demand per class, one
 * class per size); pool_bytes tells how much memory that takes. */
sa_status policy_ideal_pool(const dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err);

/* Runs a named policy ("ideal", "topo", "odswap") for device dev. */
sa_status policy_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err);

/* Comma-separated names policy_run accepts (static string). */
const char *policy_names(void);

#endif
