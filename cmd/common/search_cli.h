/*
 * search_cli.h - what swapadvisor-search and swapadvisor-search-mpi share:
 * their options (one parser), loading the graph and the budget, the
 * per-generation log, and writing the plan (repack, validation, atomic
 * write, summary line).  Only cmd/ uses it; like cli.h it prints.
 *
 * Ownership: search_load's *g is the caller's (sa_dfg_free); search_finish
 * does not take p.
 */
#ifndef SEARCH_CLI_H
#define SEARCH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"

/* The options both tools take, for their --help text. */
#define SEARCH_CLI_OPTIONS_HELP \
    "  GRAPH                 profiled dfg graph (dfg-profile output), '-' for stdin\n" \
    "  -o, --output FILE     plan to write ('-' = stdout, the default)\n" \
    "  --policy NAME         planner (default swapadvisor, the genetic search);\n" \
    "                        the policies are listed below (docs/policies.md)\n" \
    "  --list-policies       print NAME<TAB>SUMMARY for every policy and exit\n" \
    "  --memory SIZE         memory budget: 16GiB, 8000MB, bytes, or 0.5x of the\n" \
    "                        no-swap peak (default: the graph's memory_bytes)\n" \
    "  --seed N              random seed (default 1); same seed, same plan,\n" \
    "                        whatever --threads is\n" \
    "  --threads N           worker threads (default OMP_NUM_THREADS or all cores)\n" \
    "  --generations N       stop after N (default: 0 or 3..3000 by a work\n" \
    "                        budget, no optimal-search seed, no polish; with\n" \
    "                        --time-limit, none); 0: the seeds without MILP\n" \
    "  --time-limit S        swapadvisor: the whole run ends within S seconds,\n" \
    "                        seeds and polish included (what it cut is in the\n" \
    "                        plan's search block); optimal, optimal-search: the\n" \
    "                        solver's limit (60).  Without it no clock shapes\n" \
    "                        the swapadvisor plan\n" \
    "  --solver NAME         optimal's MILP solver: cbc or glpk (default: cbc\n" \
    "                        when built in)\n" \
    "  --population N        N_p, individuals surviving a generation (default 24)\n" \
    "  --mutation P          mutation probability per pick / element (default 0.05)\n" \
    "  --temperature T       survival softmax temperature (default 1, the paper's;\n" \
    "                        0.3 at the default effort)\n" \
    "  --search MODE         both (default), schedule (fixed allocation), alloc\n" \
    "                        (fixed order)\n" \
    "  --no-seeds            start without the other policies' plans (the paper's\n" \
    "                        search; by default it starts from them and is never\n" \
    "                        slower than any of them)\n" \
    "  --pool-recompute      size-class pool individuals also drop and recompute\n" \
    "                        cheap activations (their decision genes, the rule of\n" \
    "                        the topo-rc policy); on by default, with the seeds;\n" \
    "                        this turns it on for --no-seeds\n" \
    "  --log FILE            per-generation CSV: generation,evaluations,elapsed_s,\n" \
    "                        best_us,mean_us,worst_us\n" \
    "  --bound[=METHOD]      add a lower bound on the iteration time for the\n" \
    "                        plan's schedule and memory to its search block\n" \
    "                        (lower_bound_us; docs/bound.md): lp (the default\n" \
    "                        with an LP solver) or combinatorial\n" \
    "  --repack              re-pack the plan's offsets with SmartPool's best fit\n" \
    "                        (sizes descending, smallest hole) when that shrinks\n" \
    "                        the arena; timing is unchanged\n" \
    "  -q, --quiet           no summary line on stderr\n" \
    "  -h, --help            this help;  --version  the version\n"

typedef struct search_args {
    const char *out, *policy, *memory, *logpath, *graph;
    sa_policy_opts po;
    int64_t threads;
    bool quiet, repack;
    int bound; /* --bound: 0 none, 1 combinatorial, 2 lp */
    /* swapadvisor-search-mpi only (search_parse_args with islands) */
    int migrate_every, migrants;
} search_args;

/* Defaults: plan to stdout with the swapadvisor policy; islands exchange the
 * best 2 every 5 generations. */
void search_args_init(search_args *a);

/* Parses argv into *a.  islands: also take --migrate-every and --migrants
 * (otherwise they are unknown options).  Returns -1 to go on, else the exit
 * code (--help, --version and --list-policies print and return 0; usage
 * errors print and return 2). */
int search_parse_args(int argc, char **argv, const cli_tool *tool, bool islands, search_args *a);

/* Loads and checks a->graph (or, when text is not NULL, parses its len bytes
 * as the contents of a->graph) and applies --memory to *dev.  Returns -1 to
 * go on, else the exit code; report: print the failure (else stay silent).
 * On failure *g is NULL. */
int search_load(const cli_tool *tool, const search_args *a, const char *text, size_t len, bool report,
                sa_dfg_graph **g, sa_dfg_device *dev);

/* The --log file and the progress line on a terminal. */
typedef struct search_log {
    FILE *f;
    bool tty;
} search_log;

/* sa_policy_opts.on_phase: on a terminal, the phase under way (a seed row, the
 * search, the polish) on the progress line. */
void search_log_phase(const char *what, int index, int count, void *ctx);

/* Opens a->logpath (when given) and writes its header; tty: show progress.
 * Returns -1 to go on, else the exit code after printing. */
int search_log_open(const cli_tool *tool, const search_args *a, bool tty, search_log *l);
/* sa_ga_opts.on_generation for a search_log ctx. */
void search_log_generation(const sa_ga_gen_stats *s, void *ctx);
/* Closes the log; returns rc, or the I/O exit code when rc was 0 and the
 * close failed. */
int search_log_close(const cli_tool *tool, const search_args *a, search_log *l, int rc);

/* Repacks (--repack), validates strictly, writes p to a->out atomically and
 * prints the summary line (unless --quiet).  Returns the exit code. */
int search_finish(const cli_tool *tool, const search_args *a, const sa_dfg_graph *g, sa_plan *p);

#endif
