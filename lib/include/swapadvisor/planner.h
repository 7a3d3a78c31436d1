/*
 * planner.h - the planner core: the one back end through which every policy,
 * the genetic search included, produces its plan, and the graph checks a
 * plan needs before planning.
 *
 * planner_plan runs four stages over a schedule:
 *   1. decisions: which tensors leave the device and how (swap, or drop and
 *      recompute), and when they come back;
 *   2. nodes and timing: compute / swap_in / swap_out / recompute nodes and
 *      the deps the strict validator demands (lib/planning/build.h);
 *   3. memory layout: an offset for every placement in the arena;
 *   4. simulation: the plan's predicted block (planner_predict).
 * The layout choice picks how stages 1-3 run:
 *   PLANNER_POOL     SwapAdvisor's size-class pool (pool.h): objects of fixed
 *                    classes laid out up front; evictions are decided online
 *                    while the schedule is walked, by Belady or LRU, and
 *                    each tensor lives in an object (swp.h);
 *   PLANNER_BESTFIT  per-tensor keep / swap / recompute decisions given up
 *                    front (decide.h) emit the nodes; SmartPool's best fit of
 *                    the placements' lifetimes (pack.h) lays them out.
 *
 * Ownership: nothing here allocates what it returns; the plan, pool and
 * workspaces given stay the caller's.
 */
#ifndef SWAPADVISOR_PLANNER_H
#define SWAPADVISOR_PLANNER_H

#include <stdbool.h>
#include <stdint.h>

#include "decide.h"
#include "swapadvisor/dfg.h"
#include "pack.h"
#include "swapadvisor/plan.h"
#include "pool.h"
#include "swapadvisor/sa_common.h"
#include "swapadvisor/sim.h"
#include "swp.h"

typedef enum planner_layout { PLANNER_POOL, PLANNER_BESTFIT } planner_layout;

/* One planning request.  Fields a layout does not read are ignored. */
typedef struct planner_req {
    const int32_t *schedule;  /* a topological order of g's ops; NULL = g->topo */
    planner_layout layout;
    /* PLANNER_POOL */
    const pool_alloc *pool;   /* laid out (pool_layout) for g, within dev's memory */
    const swp_opts *evict;    /* victim choice and passes; NULL = swp_opts_default */
    swp_ws *ws;               /* NULL = one is made for this call (the search passes its own) */
    /* PLANNER_BESTFIT */
    const uint8_t *act;       /* dec_action per tensor; NULL = keep everything */
    const dec_opts *dec;      /* timing and packing; NULL = dec_opts_default */
    dec_stats *stats;         /* filled on success when not NULL */
    pack_ws *pack;            /* NULL = one is made for this call (the search passes its own) */
    bool within_memory;       /* true: a plan that cannot fit dev's memory is refused early (SA_EINFEASIBLE),
                               * neither packed when its peak load (a lower bound on any arena) exceeds
                               * the memory, nor simulated when its packed arena does (the search's
                               * fitness: such an individual is unfit whatever it would predict) */
    /* simulation */
    sa_sim_ws *sim;              /* NULL = one is made for this call */
    /* > 0: a time on sa_now_s()'s clock.  Past it the plan is cut: checked
     * between the stages and inside the layouts' walks (dec_opts.deadline_s,
     * swp_opts.deadline_s, which it overrides), SA_EINFEASIBLE "cut at the
     * time limit" and *cut (when not NULL) set.  0: no clock is read. */
    double deadline_s;
    bool *cut;
    /* not NULL: this call's effort is added to it, whatever its outcome:
     * PLANNER_ID_EFFORT units per op and tensor (PLANNER_POOL_ID_EFFORT with
     * the pool layout), plus one per step of the packing's walk
     * (pack_stats.work).  A count of work done, not of time:
     * the same request adds the same units on any machine. */
    int64_t *effort;
} planner_req;

/* The effort unit: an op or tensor of a best-fit plan costs PLANNER_ID_EFFORT
 * units, of a size-class pool plan PLANNER_POOL_ID_EFFORT, a step of the
 * best-fit packing's walk one.  An unpacked build took about 250 ns an id on
 * a 100,000-op chain and packing 35-55 ns a step (bench_eval on the chains),
 * so with these weights a rule's unit costs 28-48 ns on every graph measured
 * (docs/benchmarks.md, "The effort unit").  Weighed at 5, a pool plan (swp's
 * Belady walk) cost 78-116 ns a unit against a best-fit plan's 39-55 in the
 * search's evaluations (docs/policies.md, "The default effort"). */
enum { PLANNER_ID_EFFORT = 5, PLANNER_POOL_ID_EFFORT = 8 };

/* Plans one iteration of g on dev as r asks into out (reset and refilled; its
 * capacity is reused), predicted block included.  Returns SA_OK;
 * SA_EINFEASIBLE when the pool cannot hold some op's tensors at once (the
 * pool layout; err names the op); SA_ENOMEM; SA_EINTERNAL on a broken
 * invariant; SA_EINVALID for a plan whose nodes deadlock.  The best-fit
 * layout does not check the arena against dev->memory_bytes unless
 * r->within_memory: the caller decides (r->stats->arena_bytes); with it, a
 * plan past the memory is SA_EINFEASIBLE (err says by how much) before it is
 * simulated, so a deadlock it may hide goes unreported.  On error out holds
 * a partial plan (reset or free it) and r->stats is unchanged. */
sa_status planner_plan(const sa_dfg_graph *g, const sa_dfg_device *dev, const planner_req *r, sa_plan *out, sa_err *err);

/* Checks that g can be planned: every op has time_us.  On failure returns
 * SA_EFORMAT naming the first op that lacks a time (source, or g's name, as
 * the file). */
sa_status planner_check_graph(const sa_dfg_graph *g, const char *source, sa_err *err);

/* SA_EINFEASIBLE, naming the op, when one op's own tensors exceed dev's
 * memory: no plan can run it.  SA_OK otherwise. */
sa_status planner_check_fits(const sa_dfg_graph *g, const sa_dfg_device *dev, sa_err *err);

/* Fills p->predicted from a simulation of p.  ws may be NULL (one is made);
 * res, when not NULL, receives the whole result.  On error (SA_ENOMEM, or
 * SA_EINVALID for a plan that deadlocks) p->predicted is unchanged. */
sa_status planner_predict(sa_plan *p, const sa_dfg_graph *g, sa_sim_ws *ws, sa_sim_result *res, sa_err *err);

/* Pool sized so that nothing is ever evicted (cnt = demand per class, one
 * class per size); a->pool_bytes tells how much memory that takes.  On error
 * a is left as pool_fine_grained leaves it. */
sa_status planner_ideal_pool(const sa_dfg_graph *g, const int32_t *schedule, pool_alloc *a, sa_err *err);

#endif
