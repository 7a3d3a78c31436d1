/*
 * policy.h - every planner by name: one table, as git's commands[].
 *
 * Each row is {name, one-line summary, flags, run}.  The CLI's --help, its
 * validation of --policy and its dispatch read this table; nothing else lists
 * the names.  The rows, by family (docs/policies.md has the rules, sources
 * and refusals):
 *
 *   swapadvisor   SwapAdvisor's genetic search over schedule and pool
 *                 (search/ga.h); policy_opts.search sets its options
 *   ideal, topo, odswap
 *                 the size-class pool and Belady / LRU swap planner
 *                 (planning/swp.h) on the default order (pool_policies.c)
 *   smartpool, vdnn, tflms, checkpoint-sqrt, superneurons
 *                 rule-based per-tensor keep / swap / recompute decisions
 *                 laid out with SmartPool's best fit (baselines.c)
 *   autoswap, capuchin, pooch
 *                 the same decisions chosen from the profile (adaptive.c,
 *                 pooch.c)
 *
 * Adding a policy (one file, one row):
 *   1. Write lib/policies/NAME.c with
 *        sa_status policy_run_NAME(const policy_call *c, plan **out, sa_err *err);
 *      building its plan through the planning layer (swp.h or decide.h) and
 *      finishing with planner_predict; on failure it leaves *out NULL and
 *      returns SA_EINFEASIBLE with a one-line reason when the graph cannot run
 *      in c->dev's memory under its rule, SA_ENOMEM / SA_EINTERNAL otherwise.
 *   2. Declare it in lib/policies/policies_internal.h and add its row to the
 *      table in lib/policies/policy.c (order is the order --help lists).
 *   3. Document it in docs/policies.md and test it in test/test_baselines.c
 *      (or a test file of its own); scripts/policies.sh picks it up from
 *      `swapadvisor-search --list-policies`.
 *
 * Ownership: *out is a new plan owned by the caller (plan_free).  The table
 * and every string here are static.
 */
#ifndef SA_POLICY_H
#define SA_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "dfg.h"
#include "ga.h"
#include "plan.h"
#include "sa_common.h"

/* Options a row may read; policy_opts_default gives every row's defaults. */
typedef struct policy_opts {
    ga_opts search; /* the swapadvisor row's genetic search */
} policy_opts;

typedef struct policy_call {
    const char *name;
    const dfg_graph *g;
    const dfg_device *dev;  /* memory_bytes is the budget */
    const policy_opts *opts;
} policy_call;

typedef sa_status (*policy_run_fn)(const policy_call *c, plan **out, sa_err *err);

enum {
    POLICY_NEEDS_FIT = 1u << 0 /* refuse up front an op whose own tensors exceed memory */
};

typedef struct policy_def {
    const char *name;
    const char *summary; /* one line of at most 56 columns, for --help */
    unsigned flags;
    policy_run_fn run;
} policy_def;

void policy_opts_default(policy_opts *o);

/* The table: *n rows (static). */
const policy_def *policy_table(int *n);

/* The row named name, or NULL. */
const policy_def *policy_find(const char *name);

/* Writes the names, comma-separated, into buf (always terminated; cut when
 * len is too small); returns buf. */
const char *policy_names(char *buf, size_t len);

/* Runs the named policy on g for dev with opts (NULL: defaults), after the
 * checks every planner needs (op times present; with POLICY_NEEDS_FIT, no op
 * larger than memory).  SA_EUSAGE for an unknown name (err lists the known
 * ones).  On failure *out is NULL. */
sa_status policy_run_opts(const char *name, const dfg_graph *g, const dfg_device *dev, const policy_opts *opts,
                          plan **out, sa_err *err);

/* policy_run_opts with the defaults. */
sa_status policy_run(const char *name, const dfg_graph *g, const dfg_device *dev, plan **out, sa_err *err);

/* Runs the row without the up-front checks (tests reach a policy's own
 * refusals this way).  Same contract as policy_run_opts otherwise. */
sa_status policy_run_unchecked(const char *name, const dfg_graph *g, const dfg_device *dev, const policy_opts *opts,
                               plan **out, sa_err *err);

#endif
