/*
 * planner.h - what every planner shares, below the policies: the graph checks
 * a plan needs before planning, and the simulation that fills a plan's
 * predicted block.  The planners themselves are swp.h (SwapAdvisor's
 * size-class pool and Belady eviction over a schedule) and decide.h
 * (per-tensor keep / swap / recompute decisions laid out by pack.h's best
 * fit); both build their nodes with plan_add_* and finish here.
 *
 * Ownership: nothing here allocates what it returns; the plan and pool given
 * stay the caller's.
 */
#ifndef SA_PLANNER_H
#define SA_PLANNER_H

#include "dfg.h"
#include "plan.h"
#include "pool.h"
#include "sa_common.h"
#include "sim.h"

/* Checks that g can be planned: every op has time_us.  On failure returns
 * SA_EFORMAT naming the first op that lacks a time (source, or g's name, as
 * the file). */
sa_status planner_check_graph(const dfg_graph *g, const char *source, sa_err *err);

/* SA_EINFEASIBLE, naming the op, when one op's own tensors exceed dev's
 * memory: no plan can run it.  SA_OK otherwise. */
sa_status planner_check_fits(const dfg_graph *g, const dfg_device *dev, sa_err *err);

/* Fills p->predicted from a simulation of p.  ws may be NULL (one is made);
 * res, when not NULL, receives the whole result.  On error (SA_ENOMEM, or
 * SA_EINVALID for a plan that deadlocks) p->predicted is unchanged. */
sa_status planner_predict(plan *p, const dfg_graph *g, sim_ws *ws, sim_result *res, sa_err *err);

/* Pool sized so that nothing is ever evicted (cnt = demand per class, one
 * class per size); a->pool_bytes tells how much memory that takes.  On error
 * a is left as pool_fine_grained leaves it. */
sa_status planner_ideal_pool(const dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err);

#endif
