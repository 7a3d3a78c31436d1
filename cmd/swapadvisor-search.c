/* swapadvisor-search - profiled graph -> swap plan. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "search_cli.h"

static const cli_tool TOOL = {
    "swapadvisor-search",
    "Usage: swapadvisor-search GRAPH [options] -o PLAN\n"
    "Plan which tensors move between GPU and host memory, when, where each one\n"
    "lives in the device arena, and in which order the ops run.\n"
    "\n" SEARCH_CLI_OPTIONS_HELP
    "\n"
    "Every plan is checked by the library validator (docs/formats.md, plan rules,\n"
    "strict ordering) before it is written; the output file appears whole or not\n"
    "at all.  swapadvisor-search-mpi runs the genetic search on many processes.\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input document, 4 I/O error,\n"
    "5 infeasible (the graph cannot run in that memory).\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n"};

int main(int argc, char **argv)
{
    double start = sa_now_s(); /* --time-limit counts from here: loading and writing are in it */
    search_args a;
    search_args_init(&a);
    int rc = search_parse_args(argc, argv, &TOOL, false, &a);
    if (rc >= 0)
        return rc;
    sa_dfg_graph *g;
    sa_dfg_device dev;
    if ((rc = search_load(&TOOL, &a, NULL, 0, true, &g, &dev)) >= 0)
        return rc;
    search_log lg;
    if ((rc = search_log_open(&TOOL, &a, cli_stderr_tty() && !a.quiet && strcmp(a.policy, "swapadvisor") == 0,
                              &lg)) >= 0) {
        sa_dfg_free(g);
        return rc;
    }
    a.po.search.threads = cli_threads(a.threads);
    a.po.optimal.threads = a.po.search.threads;
    a.po.search.on_generation = search_log_generation;
    a.po.search.ctx = &lg;
    a.po.on_phase = search_log_phase;
    a.po.phase_ctx = &lg;
    /* the search ends early enough to leave the plan's checks and writing
     * about as long as loading the graph took (both are linear in its size) */
    if (a.po.search.time_limit_s > 0 && strcmp(a.policy, "swapadvisor") == 0) {
        double limit = a.po.search.time_limit_s, load = sa_now_s() - start;
        a.po.deadline_s = start + limit - fmin(load, 0.5 * limit);
        /* the floor is loading, one plan, its checks and writing, none of
         * which can be cut: past half the limit it cannot hold */
        if (load > 0.5 * limit)
            fprintf(stderr,
                    "%s: warning: loading %s took %.1f s of the %.1f s --time-limit; the run will overrun it "
                    "(one plan, and checking and writing it, cannot be cut)\n",
                    TOOL.name, a.graph, load, limit);
    }
    sa_err err = {0};
    sa_plan *p = NULL;
    sa_status st = sa_policy_run_opts(a.policy, g, &dev, &a.po, &p, &err);
    if (lg.tty)
        fputc('\n', stderr);
    rc = st ? cli_fail(&TOOL, &err) : search_finish(&TOOL, &a, g, p);
    rc = search_log_close(&TOOL, &a, &lg, rc);
    sa_plan_free(p);
    sa_dfg_free(g);
    return rc;
}
