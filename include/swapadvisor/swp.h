/*
 * swp.h - the planner core's stages 1-3 for the size-class pool layout
 * (planner.h; SwapAdvisor paper section 4.2).  Policies and the search reach
 * it through planner_plan with PLANNER_POOL; its nodes and deps are built with
 * the same builder (lib/planning/build.h) as decide.h's.
 *
 * Given a schedule (a topological order of the ops) and a laid-out memory pool,
 * it scans the ops in order, keeps every op's tensors in objects of their size
 * class while the op runs, and under pressure evicts a resident tensor of the
 * same class: by Belady (the one used farthest in the future, preferring those
 * last used at least a threshold ago) or by LRU (the odswap baseline).  Clean
 * tensors are dropped, dirty ones swapped out first; a swap-in waits only for
 * the object it lands in to be free, so it starts as early as safety allows.
 * Repeated passes over the schedule (the paper's double pass) make the set of
 * persistent tensors resident at the start equal that at the end; whatever
 * still differs after the last pass is fixed by transfers at the iteration's end.
 *
 * A tensor whose class has no free or evictable object borrows one of a larger
 * class.  When an op's tensors outnumber even those (a pool below every
 * fixed-object floor, see pool_fits_split), the planner splits objects: the
 * op's tensors are placed largest first, a smaller one at the spare end of an
 * object the op already holds.  A split object is evicted as a whole, and its
 * next tenants wait for every tensor that left it.
 *
 * The result is the augmented graph in a plan: nodes, deps, placements,
 * resident_at_start, schedule and arena_bytes (predicted is left to the caller).
 *
 * Ownership: swp_ws is opaque, one per thread, owned by its creator.  The plan
 * passed in is reset and refilled; its capacity is reused.
 */
#ifndef SWP_H
#define SWP_H

#include <stdbool.h>

#include "dfg.h"
#include "plan.h"
#include "pool.h"
#include "sa_common.h"

typedef enum swp_victim { SWP_BELADY, SWP_LRU } swp_victim;

typedef struct swp_opts {
    swp_victim victim;
    /* odswap: a swap-out starts only when the memory is demanded (after the
     * previous op), not right after the victim's last use */
    bool on_demand;
    /* Belady prefers victims last used at least threshold_scale x (the time to
     * swap the object out) ago */
    double threshold_scale;
    int max_passes;          /* >= 1; 3 = the double pass plus one refinement */
} swp_opts;

void swp_opts_default(swp_opts *o);

typedef struct swp_ws swp_ws;

/* Workspace for graph g; NULL on OOM (nothing is left allocated). */
swp_ws *swp_ws_new(const dfg_graph *g);
void swp_ws_free(swp_ws *ws);

/* Plans one iteration (no simulation: planner_plan adds it).  a must be laid
 * out (pool_layout) for g and fit in dev->memory_bytes.  Returns SA_OK;
 * SA_EINFEASIBLE when the pool exceeds the memory or some op's tensors
 * cannot all be placed at once (err names the op and the class); SA_ENOMEM;
 * SA_EINTERNAL on a broken invariant.  On error out holds a partial plan
 * (reset or free it); ws stays usable. */
sa_status swp_plan(const dfg_graph *g, const dfg_device *dev, const int32_t *schedule, const pool_alloc *a,
                   const swp_opts *o, swp_ws *ws, plan *out, sa_err *err);

#endif
