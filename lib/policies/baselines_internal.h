/* baselines_internal.h - what the rule-based baselines share (baselines.c
 * defines these; adaptive.c's autoswap, capuchin and pooch use them too).
 * Internal to lib/: not installed, not stable.
 *
 * Ownership: rctx's arrays belong to bl_rule_run, which allocates them
 * (n_ops + 1 or n_tensors + 1 entries) and frees them after the policy ran. */
#ifndef BASELINES_INTERNAL_H
#define BASELINES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/sa_common.h"

typedef struct rctx {
    const char *name;
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    sa_err *err;
    int32_t *pos;       /* schedule position of each op (the default order) */
    int32_t *cand;      /* candidate tensors, by producer position */
    int32_t n_cand;
    uint8_t *act;
    uint8_t *marks;     /* convolution ops (vDNN's and SuperNeurons' layer boundaries), or NULL */
    int64_t work;       /* what bl_build has cost so far: ops + tensors per build, plus the packing's
                         * dec_stats.pack_work (a rule's budget) */
    double deadline_s;  /* sa_policy_opts.deadline_s: past it bl_build refuses (the row is cut) */
    double work_max;    /* sa_policy_opts.rule_work_max: > 0 caps a rule's effort */
    int64_t effort;     /* what bl_build has cost so far in the unit of work_max: PLANNER_ID_EFFORT
                         * per op and tensor of each build, plus the packing's pack_work */
} rctx;

bool bl_is_conv(const sa_dfg_op *o);
/* Is t read again after its last forward-phase use, and how many positions later (-1: never)? */
bool bl_has_gap(const rctx *r, int32_t t);
int32_t bl_gap_len(const rctx *r, int32_t t);
/* r->cand = forward-phase activations in producer order (gap_only: with a gap). */
void bl_forward_activations(rctx *r, bool gap_only);
void bl_all_keep(rctx *r);
sa_status bl_oom(rctx *r);
/* act's plan on the default order; pack false: only the peak load (ds->peak_load).
 * SA_EINFEASIBLE ("cut at the time limit") once r->deadline_s has passed. */
sa_status bl_build(rctx *r, const dec_opts *base, bool pack, sa_plan **p, dec_stats *ds);
/* Whether r's effort budget (work_max > 0) is spent: a rule that improves a plan it has
 * stops improving there (autoswap's optimiser, pooch's rounds).  bl_build refuses past
 * BL_WORK_BACKSTOP times the budget, so every rule's time stays bounded under it.
 * A build costs the planner's effort units (planner.h, PLANNER_ID_EFFORT). */
enum { BL_WORK_BACKSTOP = 2 };
bool bl_spent(const rctx *r);
/* Counts a build of r's graph whose packing walked pack_work segments (0: not packed). */
void bl_count_build(rctx *r, int64_t pack_work);

/* A family of decisions set(r, k, arg) whose memory falls as k grows, k in
 * [lo, hi]: *out = the plan of the smallest k whose packed arena fits the
 * memory (NULL when even hi does not; *ds then describes hi). */
typedef void (*set_fn)(rctx *r, int32_t k, const void *arg);
sa_status bl_fit_smallest(rctx *r, set_fn set, const void *arg, int32_t lo, int32_t hi, const dec_opts *o,
                          sa_plan **out, dec_stats *ds, int32_t *k_out);

/* Sets p's search JSON from ds and extra (JSON members without braces, or NULL). */
sa_status bl_finish(rctx *r, sa_plan *p, const dec_stats *ds, const char *extra);
/* SA_EINFEASIBLE "NAME: WHAT the arena needs X bytes (peak load Y) > Z bytes of memory". */
sa_status bl_too_big(rctx *r, const char *what, const dec_stats *ds);

/* One rule-based row: checks that parameters and optimizer state fit (these
 * policies never swap them), sets up r over the default order and runs fn. */
typedef sa_status (*bl_rule_fn)(rctx *r, const dec_opts *o, sa_plan **out);
sa_status bl_rule_run(const sa_policy_call *c, bl_rule_fn fn, sa_plan **out, sa_err *err);

/* adaptive.c (autoswap, capuchin) and pooch.c */
sa_status bl_run_autoswap(rctx *r, const dec_opts *o, sa_plan **out);
sa_status bl_run_capuchin(rctx *r, const dec_opts *o, sa_plan **out);
sa_status bl_run_pooch(rctx *r, const dec_opts *o, sa_plan **out);

#endif
