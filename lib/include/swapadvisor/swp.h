/*
 * swp.h - the planner core's stages 1-3 for the size-class pool layout
 * (planner.h; SwapAdvisor paper section 4.2).  Policies and the search reach
 * it through planner_plan with PLANNER_POOL; its nodes and deps are built with
 * the same builder (lib/planning/build.h) as decide.h's.  The code is
 * lib/planning/pool/ (walk.h lists its files).
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
 * Sharing.  A tensor whose class has no free or evictable object (every one
 * holds a tensor of the running op) first takes the spare end of an object the
 * op holds, above its tenants, where it fits (the tightest such object), and
 * only else borrows an object of a larger class: a small tensor must not empty
 * a large object whose tenant is needed again (a pool of a few large objects
 * would otherwise push an updated parameter out for a small gradient).  A
 * tensor joining an object waits for the tenants that left it since it was
 * last empty only where their bytes overlap its own; the object is evicted as
 * a whole.
 *
 * Splitting.  When an op's tensors outnumber even those (a pool below every
 * fixed-object floor, see pool_fits_split), the planner splits objects: the
 * op's tensors are placed largest first, a smaller one at the spare end of an
 * object the op already holds.  So is an op that could take whole objects but
 * for a resident tensor away from home (shared or borrowed).  Such residents
 * stay where they are when a dry run of that walk, their objects held, still
 * places every tensor of the op; else they leave and come back (staying saves
 * two transfers).  A split object is evicted as a whole, and its next tenants
 * wait for every tensor that left it.
 *
 * Recomputation (swp_opts.recompute; the rules are recompute.h's).  A flagged
 * activation is dropped (clean: no swap-out) right after its last
 * forward-phase use and, at its next use, rebuilt by a recompute node of its
 * producer placed on the compute stream just before the consumer.  A flagged
 * tensor made in the backward phase (an intermediate, a gradient) is dropped
 * and rebuilt over its gap, the longest stretch of compute between two of its
 * uses (dec_gap_longest), the same way.  The
 * recompute is walked like an op: its inputs are resident, swapped in, or
 * (dropped and flagged themselves) recomputed first, chains up to
 * SWP_RECOMPUTE_CHAIN_MAX long; its outputs and workspace take objects; the
 * Belady eviction makes room.  A flagged activation with no use after its
 * forward ones is an intermediate: freed after its last use as usual, and
 * rebuilt only inside a chain that needs it (then freed again after the
 * recompute that reads it, or the last of the recomputes under way that read
 * it), where its producer may be re-run at that position; elsewhere the
 * chain's reader extends its life instead.
 * A rebuilt tensor that Belady evicts again before a later use, with a stale
 * host copy, is dropped once more instead of swapped out when its chain can
 * run at that use from inputs, persistent tensors not updated by then and
 * flagged activations alone, and the chain's compute time is below the stall
 * the round trip would cause (recompute.h's cost rule); it is then rebuilt
 * again there.  Never a tensor the op being planned reads, nor one a
 * recompute still under way at this position reads (rebuilt or read for it):
 * a chain input whose reader has run may go at once.
 * The planner extends the producer's inputs' lives to the recompute (a use
 * at the consumer's position, which Belady's next-use keys see), and writes
 * the producer's other outputs that are not resident to a scratch placement
 * for that node only.  A flag is not carried out (the tensor is left to the
 * walk) for a persistent tensor, an input or workspace, one whose producer
 * may not be re-run before the next use (dec_recompute_ok), one whose
 * producer's tensors cannot all take whole objects of the pool (see
 * splitting above), and one whose chain would be too long.  With no flags
 * (NULL) the plans are those of the planner without recomputation, byte for
 * byte.
 *
 * The result is the augmented graph in a plan: nodes, deps, placements,
 * resident_at_start, schedule and arena_bytes (predicted is left to the caller).
 *
 * Ownership: swp_ws is opaque, one per thread, owned by its creator.  The plan
 * passed in is reset and refilled; its capacity is reused.
 */
#ifndef SWAPADVISOR_SWP_H
#define SWAPADVISOR_SWP_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "pool.h"
#include "recompute.h"
#include "swapadvisor/sa_common.h"

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
    /* Recomputation: n_tensors flags, nonzero = drop the tensor
     * after its last forward-phase use (no swap-out) and rebuild it just
     * before its next use by a recompute node of its producer; NULL (the
     * default) = nothing is recomputed.  See "Recomputation" above for the
     * flags the planner does not carry out.  Stays the caller's. */
    const uint8_t *recompute;
    double deadline_s;       /* > 0: a time on sa_now_s()'s clock; past it swp_plan stops between
                              * passes with SA_EINFEASIBLE ("cut at the time limit"); 0: no clock */
} swp_opts;

void swp_opts_default(swp_opts *o);

typedef struct swp_ws swp_ws;

/* Workspace for graph g; NULL on OOM (nothing is left allocated). */
swp_ws *swp_ws_new(const sa_dfg_graph *g);
void swp_ws_free(swp_ws *ws);

/* Plans one iteration (no simulation: planner_plan adds it).  a must be laid
 * out (pool_layout) for g and fit in dev->memory_bytes.  Returns SA_OK;
 * SA_EINFEASIBLE when the pool exceeds the memory or some op's tensors
 * cannot all be placed at once (err names the op and the class); SA_ENOMEM;
 * SA_EINTERNAL on a broken invariant.  On error out holds a partial plan
 * (reset or free it); ws stays usable. */
sa_status swp_plan(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, const pool_alloc *a,
                   const swp_opts *o, swp_ws *ws, sa_plan *out, sa_err *err);

#endif
