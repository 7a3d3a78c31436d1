/*
 * bound.h - a lower bound on the iteration time any valid plan can reach for a
 * given schedule and memory (docs/bound.md derives every term and lists the
 * relaxations that make it one).
 *
 * The bound is the largest of
 *   compute     the sum of op times (the compute stream runs every op once);
 *   forced      the link time of the swap-ins no plan avoids (every input is
 *               fed from the host each iteration), per direction and for both
 *               directions together (the duplex limit);
 *   start       the swap-ins the first ops wait for, then the ops after them;
 *   boundary    the op times plus, between each op and the next, the time to
 *               bring back what the next op reads and memory could not hold
 *               beside the op before it;
 *   memory      per schedule position, the cheapest way to clear the bytes
 *               alive across the op that exceed memory: swap them out and back
 *               in, swap them in again (inputs, parameters), or re-run their
 *               producer -- a fractional covering priced on the four streams
 *               (compute, h2d, d2h, the duplex link) and bounded through
 *               Lagrangian weights (bound_cheap), or all positions at once as
 *               one linear program (bound_lp, when the build has a solver).
 *
 * Ownership: nothing here keeps a pointer to its arguments; results are
 * plain values in the caller's struct.
 */
#ifndef SWAPADVISOR_BOUND_H
#define SWAPADVISOR_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/sa_common.h"

typedef struct bound_result {
    double lower_bound_us; /* the bound: the largest of the terms below */
    double compute_us;     /* sum of op times */
    double forced_us;      /* forced transfers (inputs), the busiest link view */
    double start_us;       /* first inputs' arrival + the ops from there on */
    double boundary_us;    /* compute + what the ops wait for between them */
    double memory_us;      /* the memory term (per position or the LP) */
    int32_t memory_pos;    /* schedule position of the cheap memory term, -1 */
    int64_t max_excess;    /* largest bytes over memory at one position (0: fits) */
    const char *method;    /* "combinatorial" or "lp" (static) */
    int32_t lp_windows;    /* time windows of the LP that gave memory_us, 0 when not the LP */
    double seconds;        /* wall time spent */
} bound_result;

/* The cheap combinatorial bound for schedule (NULL = g->topo, a topological
 * order) in dev's memory and links.  SA_EINFEASIBLE when one op's own tensors
 * exceed memory (no plan exists: err names the op); SA_ENOMEM. */
sa_status bound_cheap(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, bound_result *out,
                      sa_err *err);

/* The LP relaxation over all positions at once (docs/bound.md, "The linear
 * program"): never below bound_cheap's compute, forced and start terms, and
 * at least as tight as its memory term up to the solver's tolerance.  Solved
 * with the build's LP solver under time_limit_s (<= 0: none); when the
 * solver stops early the dual-feasible value is not known, so the result
 * falls back to bound_cheap, and so it does, without solving, when the
 * memory rows would hold more than 4e6 coefficients (method then stays
 * "combinatorial").  SA_EUSAGE when the build has no solver. */
sa_status bound_lp(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double time_limit_s,
                   bound_result *out, sa_err *err);

/* Adds the bound to p's search block: lower_bound_us, bound_method,
 * bound_terms_us {compute, forced, start, memory} and bound_wall_s.  On
 * failure (SA_ENOMEM) the block is unchanged. */
sa_status bound_attach(sa_plan *p, const bound_result *b, sa_err *err);

/* Whether bound_lp can run in this build. */
bool bound_have_lp(void);

#endif
