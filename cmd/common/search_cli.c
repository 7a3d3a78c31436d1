/* search_cli.c - the options and the plan output of the two search front ends. */
#include "search_cli.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/bound.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/validate.h"

void search_args_init(search_args *a)
{
    memset(a, 0, sizeof *a);
    a->out = "-";
    a->policy = "swapadvisor";
    sa_policy_opts_default(&a->po);
    a->migrate_every = 5;
    a->migrants = 2;
}

/* --help: the tool's text, then the policy table. */
static int help(const cli_tool *tool)
{
    int n;
    const sa_policy_def *t = sa_policy_table(&n);
    cli_help(tool);
    printf("\nPolicies:\n");
    for (int i = 0; i < n; i++)
        printf("  %-16s %s\n", t[i].name, t[i].summary);
    return 0;
}

static int list_policies(void)
{
    int n;
    const sa_policy_def *t = sa_policy_table(&n);
    for (int i = 0; i < n; i++)
        printf("%s\t%s\n", t[i].name, t[i].summary);
    return 0;
}

int search_parse_args(int argc, char **argv, const cli_tool *tool, bool islands, search_args *a)
{
    enum { O_POLICY = 256, O_MEMORY, O_SEED, O_THREADS, O_GENS, O_TIME, O_POP, O_MUT, O_TEMP, O_SEARCH, O_LOG,
           O_VERSION, O_REPACK, O_LIST, O_NOSEEDS, O_BOUND, O_SOLVER, O_POOLRC, O_MIGRATE_EVERY, O_MIGRANTS };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"policy", required_argument, 0, O_POLICY},
        {"memory", required_argument, 0, O_MEMORY}, {"seed", required_argument, 0, O_SEED},
        {"threads", required_argument, 0, O_THREADS}, {"generations", required_argument, 0, O_GENS},
        {"time-limit", required_argument, 0, O_TIME}, {"population", required_argument, 0, O_POP},
        {"mutation", required_argument, 0, O_MUT}, {"temperature", required_argument, 0, O_TEMP},
        {"search", required_argument, 0, O_SEARCH}, {"log", required_argument, 0, O_LOG},
        {"repack", no_argument, 0, O_REPACK}, {"list-policies", no_argument, 0, O_LIST},
        {"no-seeds", no_argument, 0, O_NOSEEDS}, {"bound", optional_argument, 0, O_BOUND},
        {"solver", required_argument, 0, O_SOLVER}, {"pool-recompute", no_argument, 0, O_POOLRC},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, O_VERSION},
        /* islands only: these two stay last */
        {"migrate-every", required_argument, 0, O_MIGRATE_EVERY}, {"migrants", required_argument, 0, O_MIGRANTS},
        {0, 0, 0, 0}};
    struct option opts[SA_ARRAY_LEN(longopts)];
    memcpy(opts, longopts, sizeof opts);
    if (!islands) /* end the table before the islands' two */
        memset(&opts[SA_ARRAY_LEN(longopts) - 3], 0, sizeof opts[0]);
    sa_ga_opts *go = &a->po.search;
    int64_t v;
    bool gens_set = false;
    int c;
    optind = 1;
    opterr = 0; /* getopt's own messages would not follow cli_usage's format */
    while ((c = getopt_long(argc, argv, ":o:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'q': a->quiet = true; break;
        case 'h': return help(tool);
        case O_VERSION: return cli_version(tool);
        case O_LIST: return list_policies();
        case O_POLICY: a->policy = optarg; break;
        case O_MEMORY: a->memory = optarg; break;
        case O_LOG: a->logpath = optarg; break;
        case O_REPACK: a->repack = true; break;
        case O_NOSEEDS: a->po.search_seeds = false; break;
        case O_POOLRC: go->pool_recompute = true; break;
        case O_SOLVER:
            if (strcmp(optarg, "cbc") == 0) a->po.optimal.solver = SA_MILP_CBC;
            else if (strcmp(optarg, "glpk") == 0) a->po.optimal.solver = SA_MILP_GLPK;
            else return cli_usage(tool, "--solver takes cbc or glpk, not '%s'", optarg);
            break;
        case O_BOUND:
            if (!optarg || strcmp(optarg, "lp") == 0)
                a->bound = optarg || bound_have_lp() ? 2 : 1;
            else if (strcmp(optarg, "combinatorial") == 0)
                a->bound = 1;
            else
                return cli_usage(tool, "--bound takes lp or combinatorial, not '%s'", optarg);
            if (a->bound == 2 && !bound_have_lp())
                return cli_usage(tool, "--bound=lp: this build has no LP solver (install coinor-libcbc-dev or "
                                 "libglpk-dev and rebuild; scripts/setup.sh does)");
            break;
        case O_SEED:
            if (!cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return cli_usage(tool, "--seed takes a non-negative integer, not '%s'", optarg);
            go->seed = (uint64_t)v;
            break;
        case O_THREADS:
            if (!cli_parse_i64(optarg, 1, 1024, &a->threads))
                return cli_usage(tool, "--threads takes 1..1024, not '%s'", optarg);
            break;
        case O_GENS:
            if (!cli_parse_i64(optarg, 0, 1000000, &v))
                return cli_usage(tool, "--generations takes 0..1000000, not '%s'", optarg);
            go->generations = (int)v;
            gens_set = true;
            break;
        case O_TIME:
            if (!cli_parse_f64(optarg, 0.001, 1e7, &go->time_limit_s))
                return cli_usage(tool, "--time-limit takes seconds > 0, not '%s'", optarg);
            a->po.optimal.time_limit_s = go->time_limit_s;
            break;
        case O_POP:
            if (!cli_parse_i64(optarg, 2, 100000, &v))
                return cli_usage(tool, "--population takes 2..100000, not '%s'", optarg);
            go->population = (int)v;
            break;
        case O_MUT:
            if (!cli_parse_f64(optarg, 0, 1, &go->mutation))
                return cli_usage(tool, "--mutation takes a probability in [0, 1], not '%s'", optarg);
            break;
        case O_TEMP:
            if (!cli_parse_f64(optarg, 1e-6, 1e6, &go->temperature))
                return cli_usage(tool, "--temperature takes a number > 0, not '%s'", optarg);
            break;
        case O_SEARCH:
            if (strcmp(optarg, "both") == 0) go->mode = SA_GA_BOTH;
            else if (strcmp(optarg, "schedule") == 0) go->mode = SA_GA_SCHEDULE_ONLY;
            else if (strcmp(optarg, "alloc") == 0) go->mode = SA_GA_ALLOC_ONLY;
            else return cli_usage(tool, "--search takes both, schedule or alloc, not '%s'", optarg);
            break;
        case O_MIGRATE_EVERY:
            if (!cli_parse_i64(optarg, 1, 1000000, &v))
                return cli_usage(tool, "--migrate-every takes 1..1000000 generations, not '%s'", optarg);
            a->migrate_every = (int)v;
            break;
        case O_MIGRANTS:
            if (!cli_parse_i64(optarg, 1, 100000, &v))
                return cli_usage(tool, "--migrants takes 1..100000, not '%s'", optarg);
            a->migrants = (int)v;
            break;
        default: return cli_bad_option(tool, argv, c);
        }
    }
    if (optind != argc - 1)
        return cli_usage(tool, optind >= argc ? "missing GRAPH" : "too many arguments");
    a->graph = argv[optind];
    if (cli_same_file(a->logpath, a->graph))
        return cli_usage(tool, "--log %s is the input graph: it would be overwritten", a->logpath);
    if (cli_same_file(a->out, a->graph))
        return cli_usage(tool, "-o %s is the input graph: it would be overwritten", a->out);
    if (go->time_limit_s > 0 && !gens_set)
        go->generations = 1000000; /* the time limit alone decides */
    if (!sa_policy_find(a->policy)) {
        char names[512];
        return cli_usage(tool, "unknown policy '%s' (%s)", a->policy, sa_policy_names(names, sizeof names));
    }
    if (islands && a->migrants >= (go->population + (go->population & 1)))
        return cli_usage(tool, "--migrants %d must be below the population (%d)", a->migrants, go->population);
    return -1;
}

int search_load(const cli_tool *tool, const search_args *a, const char *text, size_t len, bool report,
                sa_dfg_graph **g, sa_dfg_device *dev)
{
    sa_err err = {0};
    *g = NULL;
    sa_status st = text ? sa_dfg_parse(text, len, strcmp(a->graph, "-") == 0 ? "<stdin>" : a->graph, g, &err)
                        : sa_dfg_load_file(a->graph, g, &err);
    if (!st)
        st = planner_check_graph(*g, a->graph, &err);
    if (!st && !(*g)->has_device)
        st = sa_fail(&err, SA_EFORMAT, "%s: no device block (link rates); profile the graph first (dfg-profile)",
                     a->graph);
    int rc = -1;
    if (st) {
        rc = report ? cli_fail(tool, &err) : sa_exit_code(st);
    } else {
        *dev = (*g)->device;
        int64_t bytes;
        if (a->memory && cli_parse_size(a->memory, sa_dfg_peak_bytes(*g, NULL), &bytes, &err))
            rc = report ? cli_usage(tool, "--memory: %s", err.msg) : 2;
        else if (a->memory)
            dev->memory_bytes = bytes;
        /* the kernels' workspaces take their reserve out of the memory: every
         * policy plans in what is left, and the plan's memory_bytes says so */
        if (rc < 0 && dev->workspace_reserve_bytes > 0) {
            if (dev->workspace_reserve_bytes >= dev->memory_bytes) {
                sa_fail(&err, SA_EINFEASIBLE, "%s: the memory, %lld bytes, is no more than the device's "
                        "workspace_reserve_bytes %lld: nothing is left for the graph's tensors", a->graph,
                        (long long)dev->memory_bytes, (long long)dev->workspace_reserve_bytes);
                rc = report ? cli_fail(tool, &err) : sa_exit_code(SA_EINFEASIBLE);
            } else {
                dev->memory_bytes -= dev->workspace_reserve_bytes;
            }
        }
    }
    if (rc >= 0) {
        sa_dfg_free(*g);
        *g = NULL;
    }
    return rc;
}

int search_log_open(const cli_tool *tool, const search_args *a, bool tty, search_log *l)
{
    l->f = NULL;
    l->tty = tty;
    if (!a->logpath)
        return -1;
    if (!(l->f = fopen(a->logpath, "w"))) {
        sa_err err = {0};
        sa_fail(&err, SA_EIO, "%s: cannot open log for writing", a->logpath);
        return cli_fail(tool, &err);
    }
    setvbuf(l->f, NULL, _IOLBF, 0); /* whole lines only, even when interrupted */
    fprintf(l->f, "generation,evaluations,elapsed_s,best_us,mean_us,worst_us\n");
    return -1;
}

void search_log_phase(const char *what, int index, int count, void *ctx)
{
    search_log *l = ctx;
    if (!l->tty)
        return;
    if (strcmp(what, "search") == 0 || strcmp(what, "polish") == 0)
        fprintf(stderr, "\r%-78s", strcmp(what, "search") == 0 ? "search: first generation" : "polish: MILP on the best order");
    else
        fprintf(stderr, "\rseed %2d/%-2d %-66s", index + 1, count, what);
}

void search_log_generation(const sa_ga_gen_stats *s, void *ctx)
{
    search_log *l = ctx;
    if (l->f)
        fprintf(l->f, "%d,%lld,%.3f,%.3f,%.3f,%.3f\n", s->generation, (long long)s->evaluations, s->elapsed_s,
                s->best_us, s->mean_us, s->worst_us);
    if (l->tty)
        fprintf(stderr, "\rgen %4d  best %.1f us (%.1f%% of ideal)  mean %.1f  worst %.1f  %.0f eval/s   ",
                s->generation, s->best_us, s->best_us > 0 ? 100.0 * s->ideal_us / s->best_us : 100.0, s->mean_us,
                s->worst_us,
                s->elapsed_s > 0 ? (double)s->evaluations / s->elapsed_s : 0.0);
}

int search_log_close(const cli_tool *tool, const search_args *a, search_log *l, int rc)
{
    if (l->f && fclose(l->f) != 0 && rc == 0) {
        sa_err err = {0};
        sa_fail(&err, SA_EIO, "%s: write failed", a->logpath);
        rc = cli_fail(tool, &err);
    }
    l->f = NULL;
    return rc;
}

static void print_summary(const cli_tool *tool, const search_args *a, const sa_dfg_graph *g, const sa_plan *p,
                          const pack_stats *ps, const bound_result *br)
{
    fprintf(stderr,
            "%s: %s on %s: %.1f us per iteration (ideal %.1f us, %.1f%%), stall %.1f us, h2d %.2f GB, d2h %.2f GB, "
            "arena %.2f GB of %.2f GB\n",
            tool->name, a->policy, g->name, p->predicted.iteration_us, p->predicted.ideal_us,
            p->predicted.iteration_us > 0 ? 100.0 * p->predicted.ideal_us / p->predicted.iteration_us : 100.0,
            p->predicted.stall_us,
            (double)p->predicted.h2d_bytes / 1e9, (double)p->predicted.d2h_bytes / 1e9, (double)p->arena_bytes / 1e9,
            (double)p->device.memory_bytes / 1e9);
    if (a->bound)
        fprintf(stderr, "%s: lower bound %.1f us (%s, %.2f s): within %.1f%% of the bound\n", tool->name,
                br->lower_bound_us, br->method, br->seconds,
                br->lower_bound_us > 0 ? 100.0 * (p->predicted.iteration_us / br->lower_bound_us - 1.0) : 0.0);
    if (a->repack)
        fprintf(stderr, "%s: repack: arena %lld -> %lld bytes (%.2f%% saved; peak load %lld)%s\n", tool->name,
                (long long)ps->arena_before, (long long)ps->arena_after,
                ps->arena_before > 0
                    ? 100.0 * (double)(ps->arena_before - ps->arena_after) / (double)ps->arena_before
                    : 0.0,
                (long long)ps->peak_load, ps->kept ? " (best fit was no smaller: offsets kept)" : "");
}

int search_finish(const cli_tool *tool, const search_args *a, const sa_dfg_graph *g, sa_plan *p)
{
    sa_err err = {0};
    sa_status st = SA_OK;
    pack_stats ps = {0};
    if (a->repack) {
        pack_opts po;
        pack_opts_default(&po);
        po.keep_if_worse = true;
        st = pack_plan(p, g, &po, &ps, &err);
    }
    if (!st) {
        sa_err verr = {0};
        if (sa_plan_validate(p, g, true, NULL, &verr) != SA_OK)
            st = sa_fail(&err, SA_EINTERNAL, "internal error: the plan fails validation: %s", verr.msg);
    }
    bound_result br;
    memset(&br, 0, sizeof br);
    if (!st && a->bound) {
        st = a->bound == 2 ? bound_lp(g, &p->device, p->schedule, 0, &br, &err)
                           : bound_cheap(g, &p->device, p->schedule, &br, &err);
        if (!st)
            st = bound_attach(p, &br, &err);
    }
    if (!st)
        st = sa_plan_write_file(p, a->out, &err);
    if (st)
        return cli_fail(tool, &err);
    if (!a->quiet)
        print_summary(tool, a, g, p, &ps, &br);
    return 0;
}
