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
 * The rule-based baselines (baselines.c; decide.h builds their plans, pack.h
 * lays out the arena).  Each keeps parameters and optimizer state resident
 * and refuses (SA_EINFEASIBLE, naming why) when they alone exceed memory.
 *   smartpool        SmartPool: no swapping, best-fit arena over the schedule's
 *                    lifetimes; refuses when the arena exceeds memory (the
 *                    message gives arena, peak load and competitive ratio)
 *   vdnn             vDNN_dyn: none, else conv inputs, else all layer inputs
 *                    offloaded in forward, prefetched one conv layer ahead;
 *                    refuses when even vDNN_all does not fit
 *   tflms            TFLMS/LMS: activations only, swapout_threshold and
 *                    swapin_ahead tuned to fit; refuses when swapping every
 *                    activation does not fit
 *   checkpoint-sqrt  Chen et al.: sqrt(n) checkpoints, the rest recomputed;
 *                    refuses when that arena exceeds memory
 *   superneurons     SuperNeurons: keep feature maps from the output side as
 *                    memory allows, swap conv outputs, recompute the rest;
 *                    refuses when dropping all of them does not fit
 *
 * The profile-guided ones (adaptive.c), on the op times and link rates of the
 * graph and device (a no-stall timeline of the default order):
 *   autoswap         AutoSwap: activations >= 1 MiB alive across the peak,
 *                    ranked by a*AOA + b*DOA + c*WDOA + d*SWDOA with weights
 *                    from a GP Bayesian optimiser (bayesopt.h, fixed seed, 20
 *                    simulations), swapped in that order until the arena fits;
 *                    refuses when swapping every candidate does not fit
 *   capuchin         Capuchin: candidates alive across the peak by FreeTime;
 *                    overhead-free swaps first, then by MSPS, recomputing where
 *                    that beats the swap's overhead; refuses when evicting
 *                    every candidate does not fit
 *   pooch            PooCH: all feature maps swapped, then L_O kept greedily
 *                    from the output side and L_I brute-forced (its 4 worst),
 *                    then swap -> recompute by r(X) < 1; refuses when swapping
 *                    every feature map does not fit
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

/* Runs a named policy (see policy_names) for device dev. */
sa_status policy_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err);

/* Comma-separated names policy_run accepts (static string). */
const char *policy_names(void);

/* The rule-based baselines of baselines.c: is name one of them, and run it
 * (policy_run checks the graph first and then calls this). */
bool policy_is_rule(const char *name);
sa_status policy_rule_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err);

#endif
