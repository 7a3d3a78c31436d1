/*
 * decide.h - the planner core's decision stage for the best-fit layout
 * (planner.h: decisions -> nodes and timing -> memory layout -> simulation).
 * The rule-based baselines (smartpool, vdnn, tflms, checkpoint-sqrt,
 * superneurons) and the adaptive ones (autoswap, capuchin, pooch) reach it
 * through planner_plan with PLANNER_BESTFIT.
 *
 * Given a schedule and, for every activation, gradient and input tensor, one
 * of
 *   DEC_KEEP       on the device from its producer (an input: from its first
 *                  swap-in) to its last reader;
 *   DEC_SWAP       swapped out after its last forward-phase use (an input is
 *                  just dropped: the host copy stays current) and swapped back
 *                  in ahead of its next use;
 *   DEC_RECOMPUTE  dropped after its last forward-phase use and rebuilt before
 *                  its next use by re-running its producer op (a recompute
 *                  node), whose inputs are first made valid the same way
 *                  (kept, swapped in, or recomputed in turn: Chen's chains
 *                  between checkpoints);
 *   DEC_EVICT      leaves the device after its last forward-phase use, swapped
 *                  or recomputed by the cost rule (Capuchin's, ASPLOS'20):
 *                  swapped when the round trip (swap-out plus swap-in time)
 *                  hides behind the compute between its last forward use and
 *                  its next use; otherwise recomputed when its producer may be
 *                  re-run and takes less than the stall the swap would cause
 *                  (round trip minus that compute); otherwise swapped;
 * dec_nodes emits the compute, swap_in, swap_out and recompute nodes with the
 * deps the strict validator demands (built with build.h's helpers, as the
 * size-class stage swp.h builds its own) and one placement per residency
 * interval at offset 0; planner_plan then lays the placements out with
 * pack_plan (SmartPool's best fit) and simulates.  Persistent tensors (param,
 * state) stay resident all iteration (none of these baselines swaps them);
 * workspaces live for their op.
 *
 * A tensor made in the backward phase that is asked to leave (anything but
 * DEC_KEEP) takes the same decisions over its longest gap between two uses
 * (recompute.h, dec_gap_longest) in place of "after its last forward-phase
 * use ... its next use": DTR's rebuilds of backward intermediates, a
 * gradient swapped out while it waits for its update.  Asked DEC_KEEP, it
 * stays from its producer to its last reader as before.
 *
 * A decision the tensor cannot carry out is demoted to DEC_KEEP and counted:
 * no gap (no use after its last forward use), a swap-in that could not start
 * before the swap-out is issued, or a recompute of an op that updates
 * persistent state in place (batchnorm's running statistics), reads a
 * persistent tensor already updated, or has no producer (an input).
 *
 * The widened space (dec_opts.swap_persistent, asked for by the optimal
 * planner; every other caller leaves it off and gets the above):
 *   DEC_SWAP on a param or state: on the host at the iteration's boundary
 *                  (not in resident_at_start); swapped in ahead of its first
 *                  use; after the uses dec_opts.drop names, dropped (the host
 *                  copy is still current: the update is its last use) and
 *                  swapped in again ahead of the next use; after its last use
 *                  swapped out when an op updated it (docs/formats.md rule
 *                  5), else dropped.  A drop whose swap-in cannot start after
 *                  it is not taken (the tensor stays through that gap; not
 *                  counted as demoted);
 *   DEC_EVICT on a param or state: on the device at the boundary, at the same
 *                  offset at both ends (resident_at_start), and off it over
 *                  the gaps dec_opts.drop names as above, the first leave a
 *                  swap-out (a resident's host copy is stale), later ones
 *                  drops unless an update came between; after its last use
 *                  it stays.  No drop: as DEC_KEEP;
 *   DEC_SWAP (or DEC_EVICT) on a gradient produced in the backward phase
 *                  (a parameter's gradient waiting for its update): swapped
 *                  out after its producer and in ahead of its first reader,
 *                  as an activation is over its gap; never recomputed.
 *
 * Timing rules.  A swap-out starts right after the op that last uses the
 * tensor; the op out_sync positions later waits for it, and from there on its
 * memory is free (auto: the first op estimated to start after the transfer
 * ends, queued behind the earlier swap-outs).  A swap-in is issued when the
 * op `prefetch` positions before the use starts (auto: the latest op from
 * which the ops' times cover the transfer); with marks, prefetch counts
 * marked positions instead (vDNN's "one layer ahead").
 *
 * Ownership: the plan is the caller's; act and marks stay the caller's.
 */
#ifndef SWAPADVISOR_DECIDE_H
#define SWAPADVISOR_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "pack.h"
#include "swapadvisor/plan.h"
#include "recompute.h"
#include "swapadvisor/sa_common.h"

typedef enum dec_action { DEC_KEEP = 0, DEC_SWAP, DEC_RECOMPUTE, DEC_EVICT, DEC_ACTION_COUNT } dec_action;

typedef struct dec_opts {
    int32_t prefetch;      /* > 0: ops (or marks) ahead of the use; 0 = auto */
    const uint8_t *marks;  /* per schedule position, or NULL: what prefetch counts */
    int32_t out_sync;      /* > 0: ops after the swap-out's issue; 0 = auto */
    pack_opts pack;
    bool pack_offsets;     /* false: leave every offset 0 (only the peak load is wanted) */
    bool swap_persistent;  /* the widened space (see above); false (the default): persistent tensors stay
                            * resident and a backward-phase gradient is kept */
    const uint8_t *late;   /* with swap_persistent, per tensor or NULL: nonzero issues the swap-in after
                            * its gap (and a persistent tensor's first) when the op before the use ends
                            * (the use waits for the whole transfer) instead of where the compute covers
                            * it, so the tensor is off the device as long as it can be, and demotes it
                            * only when no op runs between the drop and the use; an updated persistent
                            * tensor's swap-out after its last use is then waited for by the next op */
    const uint8_t *drop;   /* with swap_persistent, per reader slot (g->readers[reader_off + k] of a
                            * persistent tensor carried out as DEC_SWAP or DEC_EVICT) or NULL: nonzero drops the tensor
                            * after that reader's use until its next use, swapped in again where the
                            * compute covers the transfer (1) or when the op before that use ends (2) */
    const int32_t *sync_at; /* with swap_persistent, per tensor or NULL: a position p > 0 later than the op
                            * after which t is swapped out (over its gap, or a persistent tensor's last)
                            * makes the op at p the one that waits for it, whatever out_sync, late and the
                            * auto estimate say; 0 or earlier: as they say */
    double deadline_s;     /* > 0: a time on sa_now_s()'s clock; past it dec_nodes stops with
                            * SA_EINFEASIBLE ("cut at the time limit"), the clock read once per
                            * SA_DEADLINE_STRIDE positions; 0 (the default): no clock */
} dec_opts;

void dec_opts_default(dec_opts *o);

typedef struct dec_stats {
    int32_t n_swapped, n_recomputed;     /* tensors carried out as asked */
    int32_t n_demoted;                   /* asked to swap or recompute, kept instead */
    int32_t n_recompute_nodes;
    int32_t n_persistent_swapped;        /* swap_persistent: parameters and state on the host at the boundary */
    int64_t persistent_swapped_bytes;
    int64_t swapped_bytes, recomputed_bytes;
    int64_t peak_load;                   /* pack's lower bound on the arena */
    int64_t arena_bytes;                 /* after packing (0 when not packed) */
    int64_t pack_work;                   /* pack_stats.work of the packing (0 when not packed) */
} dec_stats;

/* The node stage: resets out and fills its nodes, deps, placements (offset
 * 0), residents and schedule for schedule (NULL = g->topo) and act
 * (n_tensors entries, NULL = keep everything) on device dev; out->device =
 * *dev.  Neither packs nor simulates (planner_plan does both).  st, when not
 * NULL, receives the counts on success (peak_load and arena_bytes 0).
 * Returns SA_OK; SA_ENOMEM; SA_EINTERNAL on a broken invariant.  On error
 * out holds a partial plan (the caller resets or frees it) and *st is
 * unchanged. */
sa_status dec_nodes(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, const uint8_t *act,
                    const dec_opts *o, sa_plan *out, dec_stats *st, sa_err *err);

#endif
