/*
 * pack.h - SmartPool's offline arena allocator (Zhang et al., "Efficient
 * Memory Management for GPU-based Deep Learning Systems", 2019, section IV):
 * every block's lifetime is known before the iteration runs, so the blocks
 * are sorted by size, largest first, and each goes into the smallest hole
 * (best fit) left between the blocks already placed whose lifetimes overlap
 * its own; when no hole is big enough the arena grows.
 *
 * Here a block is a plan placement and "lifetimes overlap" is what the strict
 * validator (validate.h) accepts: two placements may share addresses only when
 * one provably ends before the other begins by stream order and deps alone.
 * pack_plan reads that relation from the plan's dependency graph, without
 * changing any node or dep, so packing changes neither the plan's timing nor
 * its prediction: it only moves offsets.  The relation is read through the
 * compute stream (a transfer counts as ended at the first compute-stream node
 * that waits for it, and as begun after the last compute-stream node it
 * waits for), which is conservative: a pair it calls overlapping may in rare
 * cases be orderable through the transfer streams alone.
 *
 * A tensor resident at the start of the iteration must be back at the same
 * offset at its end: its first placement (begin -1) and its last (end -1) are
 * packed as one block with two lifetimes, and resident_at_start follows.
 *
 * Cost: the blocks already placed that conflict with the next one are found
 * through an interval index over the lifetimes (lib/planning/bestfit/fitidx.h), not
 * by walking every placed block: O(log T) short unions of offset ranges per
 * block, T the number of lifetime points, where the walk was quadratic.  The
 * offsets are exactly the walk's.
 *
 * Ownership: the plan stays the caller's; pack_* only rewrite its offsets,
 * residents' offsets and arena_bytes.  A pack_ws is the caller's
 * (pack_ws_free); it keeps its buffers between calls, so a caller that packs
 * many plans (the search) stops allocating once it has packed the largest.
 */
#ifndef SWAPADVISOR_PACK_H
#define SWAPADVISOR_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/sa_common.h"

typedef struct pack_opts {
    int64_t align;       /* offsets are multiples of align and blocks round up to it; 0 = POOL_ALIGN (256) */
    bool keep_if_worse;  /* restore the plan's own offsets when packing would grow its arena */
} pack_opts;

void pack_opts_default(pack_opts *o);

typedef struct pack_stats {
    int64_t arena_before;  /* the plan's arena_bytes on entry */
    int64_t arena_after;   /* on return */
    int64_t peak_load;     /* the most bytes (blocks rounded to align) that must coexist: a lower bound
                            * for any packing under the same lifetimes (SmartPool's "peak memory load") */
    int32_t n_blocks;      /* blocks packed (placements, a resident's first and last counted once) */
    bool kept;             /* keep_if_worse restored the original offsets */
    int64_t work;          /* list segments the best-fit walk visited: the packing's cost, which grows with
                            * how fragmented the free space is, not only with n_blocks (0 when not packed) */
} pack_stats;

/* Reassigns every placement's offset by size-descending best fit (see above),
 * sets resident_at_start's offsets to match and arena_bytes to the largest
 * offset + bytes.  st may be NULL.  SA_EINVALID when the plan's nodes form a
 * cycle or a resident has no placement from the iteration's start; SA_ENOMEM. */
sa_status pack_plan(sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_stats *st, sa_err *err);

/* Only the peak load of p's placements under pack_plan's lifetimes (align as in o). */
sa_status pack_peak_load(const sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, int64_t *peak, sa_err *err);

/* Reusable buffers for the two calls below; NULL on out of memory. */
typedef struct pack_ws pack_ws;
pack_ws *pack_ws_new(void);
void pack_ws_free(pack_ws *w);

/* pack_plan and pack_peak_load with w's buffers (NULL: made for this call);
 * same results and errors.  pack_plan_ws's st->peak_load is pack_peak_load's
 * figure, so a caller wanting both packs once.  limit > 0: when no arena of
 * these lifetimes can fit in limit bytes (peak load - (align - 1) > limit:
 * the block on top at the peak ends at the peak load or above, its tensor's
 * bytes less than align below its rounded size), pack_plan_ws returns
 * SA_EINFEASIBLE without packing (p unchanged, st filled with arena_after =
 * arena_before; err untouched). */
sa_status pack_plan_ws(sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_ws *w, int64_t limit, pack_stats *st,
                       sa_err *err);
sa_status pack_peak_load_ws(const sa_plan *p, const sa_dfg_graph *g, const pack_opts *o, pack_ws *w, int64_t *peak,
                            sa_err *err);

#endif
