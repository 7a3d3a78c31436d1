/*
 * policy.h - every planner by name: one table, as git's commands[].
 *
 * Each row is {name, one-line summary, flags, run}.  The CLI's --help, its
 * validation of --policy and its dispatch read this table; nothing else lists
 * the names.  The rows, by family (docs/policies.md has the rules, sources
 * and refusals):
 *
 *   swapadvisor   SwapAdvisor's genetic search over schedule, layout, pool
 *                 and per-tensor decisions (search/ga.h), seeded with every
 *                 other row's plan; sa_policy_opts.search sets its options
 *   ideal, topo, odswap
 *                 the planner core's size-class pool layout with Belady /
 *                 LRU eviction (planning/swp.h) on the default order
 *                 (pool_policies.c)
 *   smartpool, vdnn, tflms, checkpoint-sqrt, superneurons
 *                 rule-based per-tensor keep / swap / recompute decisions,
 *                 the core's best-fit layout (planning/decide.h; baselines.c)
 *   autoswap, capuchin, pooch
 *                 the same decisions chosen from the profile (adaptive.c,
 *                 pooch.c)
 *   optimal, optimal-search
 *                 the same decisions chosen by a MILP on the default order
 *                 or the search's best order (optimal.c, docs/bound.md)
 *
 * Adding a policy (one file, one row):
 *   1. Write lib/policies/NAME.c with
 *        sa_status policy_run_NAME(const sa_policy_call *c, plan **out, sa_err *err);
 *      building its plan with the planner core (planning/planner.h:
 *      planner_plan, the size-class pool or best-fit layout, which also
 *      fills the predicted block); on failure it leaves *out NULL and
 *      returns SA_EINFEASIBLE with a one-line reason when the graph cannot run
 *      in c->dev's memory under its rule, SA_ENOMEM / SA_EINTERNAL otherwise.
 *   2. Declare it in lib/policies/policies_internal.h and add its row to the
 *      table in lib/policies/policy.c (order is the order --help lists).
 *   3. Document it in docs/policies.md and test it in test/test_baselines.c
 *      (or a test file of its own); scripts/policies.sh picks it up from
 *      `swapadvisor-search --list-policies`.
 *
 * Ownership: *out is a new plan owned by the caller (sa_plan_free).  The table
 * and every string here are static.
 */
#ifndef SWAPADVISOR_POLICY_H
#define SWAPADVISOR_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "dfg.h"
#include "ga.h"
#include "milp.h"
#include "plan.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options a row may read; sa_policy_opts_default gives every row's defaults. */
typedef struct sa_policy_opts {
    sa_ga_opts search; /* the swapadvisor row's genetic search (and optimal-search's) */
    struct {
        sa_milp_backend solver;  /* AUTO: the build's preferred solver */
        double time_limit_s;  /* all solves together (<= 0: 60 s) */
        double gap;           /* relative MIP gap to stop at (default 0.02) */
        int threads;          /* solver threads (CBC) */
        int max_nodes;        /* CBC's branch-and-bound node limit (<= 0: none, the default).  Set, it
                               * makes the limit an effort limit: at most 10 solves per decision space,
                               * each with the whole time_limit_s as its safety net, the rounds
                               * stopped by the clock only past time_limit_s per space */
        int refine_plans;     /* the refinement's cap on plans per run (docs/bound.md); <= 0 (the
                               * default): 8,000, or under max_nodes SA_POLICY_REFINE_EFFORT_PLANS; at
                               * most 5e6 / ops either way */
        bool pump;            /* under max_nodes (which solves without CBC's feasibility pump): each
                               * decision space is solved a second time with the pump, and the plan
                               * that simulates faster after an eighth of its refinement is refined
                               * on (default false: the node limit does not bound the pump, which
                               * runs at the root) */
        int pump_passes;      /* the pump's passes where it runs (<= 0, the default: CBC's, 30; the
                               * swapadvisor row's default effort gives its deferred MILP seeds
                               * SA_POLICY_AUTO_PUMP_PASSES) */
        bool sums;            /* every model's memory rows as running sums (docs/bound.md; default
                               * false: only past 10^6 positions x candidates; the swapadvisor
                               * row's default effort sets it for its seeds) */
    } optimal;                /* the optimal and optimal-search rows (optimal.c) */
    bool search_seeds;  /* the swapadvisor row first runs every other row (but ideal) and starts
                         * from their plans: never slower than any of them (default true) */
    struct {
        double max_cells;    /* the MILP rows are seeds while the MILP on the default order spans at
                              * most this many positions x candidates (sa_policy_milp_cells; default
                              * SA_POLICY_SEED_MILP_CELLS; <= 0: never) */
        double polish_cells; /* the polish (the MILP's decisions on the search's best order, kept
                              * when faster; not when the answer is a MILP row's own plan) runs
                              * while that MILP spans at most this many (default
                              * SA_POLICY_POLISH_MILP_CELLS; <= 0: never) */
        int max_nodes;    /* the node limit of those solves, each on one solver thread whatever
                           * search.threads (default SA_POLICY_SEED_MILP_NODES): an effort limit that
                           * does not depend on the machine's speed; optimal.time_limit_s stays as a
                           * safety net (docs/policies.md, "The MILP rows as seeds, and
                           * the polish") */
        double pump_cells; /* the MILP rows as seeds solve with optimal.pump while their model
                            * spans at most this many (as for max_cells) and a generation count
                            * above 0 is given (default SA_POLICY_PUMP_MILP_CELLS; <= 0: never;
                            * the polish solves without it) */
        double auto_cells; /* under the default effort (no generation count) the MILP seeds on a
                            * model past this many run after the other rows and only where
                            * needed (auto_need; default SA_POLICY_AUTO_MILP_CELLS) */
        double auto_need;  /* ...where the fastest other row is more than this fraction over the
                            * ideal (default SA_POLICY_AUTO_MILP_NEED); the search block's phases
                            * then read "unneeded" for them */
    } seed_milp;        /* the swapadvisor row's use of the MILP (search_policy.c) */
    /* > 0: a time on sa_now_s()'s clock by which the swapadvisor row returns, seeds, search and
     * polish included (the seeds share the first half of what is left when the row starts, the
     * search and the polish the rest; a seed that would overrun is skipped or cut, the search
     * stops at it, the MILP solves are limited by it; the plan's search block records what was
     * cut in its "time_limit" member; with search.migrate, islands, the search itself stops at the
     * exchanges instead).  0 (the default): no clock shapes the swapadvisor row's
     * plan: its seeds' and polish's solves stop on node counts only, optimal-search's search on
     * its generation count.  The search CLI sets it from --time-limit.  The other rows read it
     * as a bound on their own run (a rule-based row past it refuses) */
    double deadline_s;
    /* > 0: the work budget of the rule-based rows (a build costs 5 units per op and tensor
     * plus one per step its packing's best-fit walk took): hybrid stops its combinations at
     * twice it; autoswap's optimiser, tflms's swap-in distances and pooch's rounds stop
     * improving their plan there; dtr counts resident scans against it and refuses past
     * it; every rule refuses a build past twice its budget.  The swapadvisor row's
     * default effort and --generations 0 give their seeds SA_POLICY_AUTO_RULE_WORK.
     * 0 (the default): no budget but the rows' own */
    double rule_work_max;
    /* called from the calling thread as each phase of the swapadvisor row starts ("seed NAME",
     * "search", "polish"), with its position among the seeds (when the seed rows run at once,
     * without a deadline, for the rows the calling thread runs); may be NULL */
    void (*on_phase)(const char *phase, int index, int count, void *ctx);
    void *phase_ctx;
} sa_policy_opts;

typedef struct sa_policy_call {
    const char *name;
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;  /* memory_bytes is the budget */
    const sa_policy_opts *opts;
} sa_policy_call;

typedef sa_status (*sa_policy_run_fn)(const sa_policy_call *c, sa_plan **out, sa_err *err);

enum {
    SA_POLICY_NEEDS_FIT = 1u << 0,  /* refuse up front an op whose own tensors exceed memory */
    SA_POLICY_POOL_LAYOUT = 1u << 1, /* plans with the core's size-class pool (the search seeds it as such) */
    SA_POLICY_NO_SEED = 1u << 2,     /* not among the search's seeds (ideal: it raises the memory) */
    SA_POLICY_SEED_MILP = 1u << 3,   /* a MILP row: a seed only while the model is small
                                   * (sa_policy_opts.seed_milp.max_cells), solved under a node limit on
                                   * one solver thread so that the seed is deterministic */
    SA_POLICY_SEED_FIRST = 1u << 4,  /* a peer the search is held to (dtr, memory-budget): run before
                                   * the other seeds, so that a time limit does not skip it (the
                                   * seeds still reach the search in the table's order) */
    SA_POLICY_SEED_SEARCH = 1u << 5  /* runs a genetic search of its own (optimal-search): not a seed
                                   * of the default effort (search.generations
                                   * SA_GA_GENERATIONS_AUTO), only of a given generation count */
};

typedef struct sa_policy_def {
    const char *name;
    const char *summary; /* one line of at most 56 columns, for --help */
    unsigned flags;
    sa_policy_run_fn run;
} sa_policy_def;

/* The defaults of sa_policy_opts.seed_milp: resnet-50's, gpt-12-768's (about 4e5),
 * inception-4's, wresnet-152-10's and densenet121's models (3.4 to 3.7e6) are inside,
 * nasnet-25's and brnn-4-8k's (over 10^7) outside.  The default effort (no generation
 * count) lowers the seeds' gate to SA_POLICY_AUTO_MILP_CELLS, leaving out the models
 * whose solves and refinement take minutes; docs/policies.md has the measurements. */
#define SA_POLICY_SEED_MILP_CELLS 4.0e6
#define SA_POLICY_POLISH_MILP_CELLS 4.0e6
#define SA_POLICY_AUTO_MILP_CELLS 1.0e6
/* ...past which (up to the seeds' gate) the default effort runs the optimal seed after
 * the other rows and only when the fastest of them is more than SA_POLICY_AUTO_MILP_NEED
 * (10 %) over the ideal, the time the MILP might win back (inception-4 at 0.25x: 28 %,
 * its plan 21 % slower without the seed; wresnet-152-10 at 0.5x: 0.0 %, 7 s of solves
 * saved), refining SA_POLICY_AUTO_REFINE_LARGE plans (4 ms each on inception-4), each
 * space solved with the feasibility pump too (densenet121 at 0.25x: 261.4 -> 255.3 ms
 * at SA_POLICY_AUTO_PUMP_PASSES); docs/policies.md has the measurements. */
#define SA_POLICY_AUTO_MILP_NEED 0.10
enum { SA_POLICY_AUTO_REFINE_LARGE = 300 };
/* ...with SA_POLICY_AUTO_PUMP_PASSES of the pump's passes instead of CBC's 30 (inception-4
 * at 0.25x: its solves 10.3 -> 7.3 s, the same answer; densenet121 at 0.25x: 258.9 ->
 * 255.3 ms; with 5 passes 261.4, docs/policies.md). */
enum { SA_POLICY_AUTO_PUMP_PASSES = 10 };
/* The seeds' solves with and without CBC's feasibility pump (sa_policy_opts.optimal.pump)
 * under a given generation count: every model the seeds' gate admits (with the running
 * sums the pump's solves on inception-4's and wresnet-152-10's models take seconds);
 * docs/policies.md has what it gains and costs. */
#define SA_POLICY_PUMP_MILP_CELLS 4.0e6
enum { SA_POLICY_SEED_MILP_NODES = 200 };
/* The refinement's cap under an effort limit (the search's seeds and polish,
 * up to four runs of the MILP rows, each refining its fastest space's plan
 * to the cap and the others an eighth of the way): a bound on the search's
 * time.  docs/bound.md has what 1,000, 4,000 and 8,000 reach and what they
 * take; under the clock the cap is as large. */
enum { SA_POLICY_REFINE_EFFORT_PLANS = 8000 };
/* ...and the default effort's (no generation count): on the cells where the optimal
 * seed runs by default (resnet-50, gpt-12-768, torchvision resnet50 and vit_b_16 at
 * 0.5x and 0.25x) its plan was the same as at 8,000 but for gpt-12-768 at 0.25x
 * (0.015 % slower), its run up to 3.6 s shorter (docs/policies.md). */
enum { SA_POLICY_AUTO_REFINE_PLANS = 4000 };
/* sa_policy_opts.rule_work_max of the seeds of the default effort and of --generations 0:
 * about 1.5 s of a rule on this machine (hybrid's full runs cost 28-48 ns per unit, on the
 * zoo's graphs as on a 100,000-op chain; docs/benchmarks.md, "The effort unit"), hybrid
 * getting twice it (resnet-50's run at 0.5x, 8.8e7, stays below that; inception-4's,
 * densenet121's and nasnet-25's, 3.6e8 to 1.6e9, are cut), and as many of dtr's resident
 * scans. */
#define SA_POLICY_AUTO_RULE_WORK 5.0e7

void sa_policy_opts_default(sa_policy_opts *o);

/* The table: *n rows (static). */
const sa_policy_def *sa_policy_table(int *n);

/* The row named name, or NULL. */
const sa_policy_def *sa_policy_find(const char *name);

/* Writes the names, comma-separated, into buf (always terminated; cut when
 * len is too small); returns buf. */
const char *sa_policy_names(char *buf, size_t len);

/* The size of the MILP the optimal rows would build on g for dev with
 * schedule (NULL: g->topo): positions x candidates of its widened decision
 * space, the larger of its two (optimal.c refuses models over 2 x 10^7).
 * Linear in the graph, no solver involved.  SA_ENOMEM; *cells is untouched
 * on failure. */
sa_status sa_policy_milp_cells(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double *cells,
                            sa_err *err);

/* Runs the named policy on g for dev with opts (NULL: defaults), after the
 * checks every planner needs (op times present; with SA_POLICY_NEEDS_FIT, no op
 * larger than memory).  SA_EUSAGE for an unknown name (err lists the known
 * ones).  On failure *out is NULL. */
sa_status sa_policy_run_opts(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_policy_opts *opts,
                          sa_plan **out, sa_err *err);

/* sa_policy_run_opts with the defaults. */
sa_status sa_policy_run(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, sa_plan **out, sa_err *err);

/* Runs the row without the up-front checks (tests reach a policy's own
 * refusals this way).  Same contract as sa_policy_run_opts otherwise. */
sa_status sa_policy_run_unchecked(const char *name, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_policy_opts *opts,
                               sa_plan **out, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
