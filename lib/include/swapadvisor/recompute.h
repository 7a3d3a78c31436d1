/*
 * recompute.h - when a tensor may be rebuilt by re-running its producer, and
 * when that is worth it.  Both layouts of the planner core call these rules
 * (the size-class pool, swp.h, and best fit, decide.h), so a tensor one
 * layout may recompute the other may too.
 *
 * Legality.  A recompute node re-runs the producer op of a tensor.  The op
 * must update no persistent tensor in place (the validator forbids running an
 * in-place update twice: batchnorm's running statistics), must have a
 * producer at all (an input has none), and none of its persistent inputs may
 * be updated in place at or before the position of the recompute (it would
 * read the updated value, not the one the tensor was made from).
 *
 * The gap.  An activation is read in the forward phase, then not until its
 * next use (in the backward phase); between its last forward use and that
 * next use it may leave the device, swapped out or dropped to be recomputed.
 * A tensor made in the backward phase (an intermediate a later backward op
 * reads again, a gradient waiting for its update) has a gap too: the longest
 * stretch of compute between two of its uses (dec_gap_longest).
 *
 * The cost rule.  Swap when the round trip over the link (swap-out plus
 * swap-in, each alone on its stream) hides behind the compute of the gap;
 * otherwise recompute when the chain's compute time is below the stall the
 * swap would cause (the round trip less the gap's compute).
 *
 * Nothing here allocates; every array is the caller's.
 */
#ifndef SWAPADVISOR_RECOMPUTE_H
#define SWAPADVISOR_RECOMPUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sim.h"

/* Is the producer of t an op a recompute node may re-run (the static part of
 * the legality above: produced by an op that updates no persistent tensor)? */
bool dec_recomputable(const sa_dfg_graph *g, int32_t t);

/* dec_recomputable, and no persistent input of t's producer is updated in
 * place at or before schedule position next_use (pos[op] = position): a
 * recompute of t before next_use would read the value it was made from. */
bool dec_recompute_ok(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t next_use);

/* Position of t's last forward-phase use in pos (pos[op] = schedule position)
 * and of its next use after it (-1 when none: then t has no gap to use). */
void dec_gap(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t *last_fwd, int32_t *next_use);

/* The gap of a tensor produced outside the forward phase (a backward
 * intermediate, a gradient waiting for its last reader), which dec_gap does
 * not give: the longest stretch of compute between two consecutive uses (its
 * producer and its readers) with at least one op between them.  tstart[i] is
 * the stall-free start of position i (n_ops + 1 entries).  *before is the use
 * the gap follows and *after the one it ends at; -1 in both when t is
 * persistent, a workspace, an input, produced in the forward phase, or has no
 * such gap.  A tensor with more than DEC_GAP_READERS readers gets the gap
 * after its producer only (the walk is quadratic in the readers). */
#define DEC_GAP_READERS 64
void dec_gap_longest(const sa_dfg_graph *g, const int32_t *pos, const double *tstart, int32_t t, int32_t *before,
                     int32_t *after);

/* The round trip of bytes over the link on dev: swap-out plus swap-in, each
 * alone on its stream (us). */
static inline double recompute_round_trip_us(const sa_dfg_device *dev, int64_t bytes)
{
    return sa_sim_transfer_alone_us(dev, bytes, SA_PLAN_STREAM_D2H) + sa_sim_transfer_alone_us(dev, bytes, SA_PLAN_STREAM_H2D);
}

/* The longest recompute chain (a recompute whose dropped inputs are
 * recomputed in turn): a tensor whose chain would be longer is not
 * recomputed. */
#define SWP_RECOMPUTE_CHAIN_MAX 4

/* The threshold of the default rule (us per MB).  At 100 the chains rebuild
 * convolutions and matrix products (about 30-35 us per MB on the V100
 * profile); docs/benchmarks.md has the topo-rc figures that chose 30. */
#define SWP_RECOMPUTE_US_PER_MB 30.0

/* The default cost rule for swp_opts.recompute on schedule (NULL =
 * g->topo): flags (out, n_tensors entries, each set to 0 or 1) every
 * forward activation t with a use after its last forward use (at position
 * nx) that can be rebuilt at nx by a chain of cheap ops whose total time is
 * below t's round trip over the link on dev.  An op is cheap when it may be
 * re-run at nx (dec_recompute_ok) and takes at most us_per_mb microseconds
 * per megabyte (1e6 bytes) of the output it rebuilds; the chain follows the
 * inputs that are not there anyway at nx (persistent, or used at or after
 * nx), at most SWP_RECOMPUTE_CHAIN_MAX links deep, and flags those
 * intermediates too (GPT's attention: the softmax output is rebuilt from the
 * mask output, rebuilt from the scores, rebuilt from q and k, which the
 * backward pass reads anyway).  pos is scratch of n_ops entries.  Returns
 * how many tensors with a use after their forward ones are flagged
 * (intermediates not counted). */
int32_t swp_recompute_rule(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double us_per_mb,
                           int32_t *pos, uint8_t *out);

/* Sets out[t] (n_tensors entries; others unchanged) for every forward
 * activation t with forward uses and none after them in the schedule whose
 * positions pos holds (pos[op] = position): the intermediates a flagged
 * tensor's chain may rebuild (a flag on such a tensor alone changes nothing,
 * see swp.h, "Recomputation").  Returns how many it set. */
int32_t swp_recompute_intermediates(const sa_dfg_graph *g, const int32_t *pos, uint8_t *out);

#endif
