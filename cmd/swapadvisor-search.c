/* swapadvisor-search - profiled graph -> swap plan. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/sa_io.h"
#include "swapadvisor/validate.h"

static const cli_tool TOOL = {
    "swapadvisor-search",
    "Usage: swapadvisor-search GRAPH [options] -o PLAN\n"
    "Plan which tensors move between GPU and host memory, when, where each one\n"
    "lives in the device arena, and in which order the ops run.\n"
    "\n"
    "  GRAPH                 profiled dfg graph (dfg-profile output), '-' for stdin\n"
    "  -o, --output FILE     plan to write ('-' = stdout, the default)\n"
    "  --policy NAME         planner (default swapadvisor, the genetic search);\n"
    "                        the policies are listed below (docs/policies.md)\n"
    "  --list-policies       print NAME<TAB>SUMMARY for every policy and exit\n"
    "  --memory SIZE         memory budget: 16GiB, 8000MB, bytes, or 0.5x of the\n"
    "                        no-swap peak (default: the graph's memory_bytes)\n"
    "  --seed N              random seed (default 1); same seed, same plan,\n"
    "                        whatever --threads is\n"
    "  --threads N           worker threads (default OMP_NUM_THREADS or all cores)\n"
    "  --generations N       stop after N generations (default 30)\n"
    "  --time-limit S        stop after the first generation ending past S seconds\n"
    "  --population N        N_p, individuals surviving a generation (default 24)\n"
    "  --mutation P          mutation probability per pick / element (default 0.05)\n"
    "  --temperature T       softmax temperature on t_norm in survival (default 1,\n"
    "                        the paper's)\n"
    "  --search MODE         both (default), schedule (fixed allocation), alloc\n"
    "                        (fixed order)\n"
    "  --log FILE            per-generation CSV: generation,evaluations,elapsed_s,\n"
    "                        best_us,mean_us,worst_us\n"
    "  --repack              re-pack the plan's offsets with SmartPool's best fit\n"
    "                        (sizes descending, smallest hole) when that shrinks\n"
    "                        the arena; timing is unchanged\n"
    "  -q, --quiet           no summary line on stderr\n"
    "  -h, --help            this help;  --version  the version\n"
    "\n"
    "Every plan is checked by the library validator (docs/formats.md, plan rules,\n"
    "strict ordering) before it is written; the output file appears whole or not\n"
    "at all.\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input document, 4 I/O error,\n"
    "5 infeasible (the graph cannot run in that memory).\n"};

/* --help: the text above, then the policy table. */
static int help(void)
{
    int n;
    const policy_def *t = policy_table(&n);
    cli_help(&TOOL);
    printf("\nPolicies:\n");
    for (int i = 0; i < n; i++)
        printf("  %-16s %s\n", t[i].name, t[i].summary);
    return 0;
}

static int list_policies(void)
{
    int n;
    const policy_def *t = policy_table(&n);
    for (int i = 0; i < n; i++)
        printf("%s\t%s\n", t[i].name, t[i].summary);
    return 0;
}

typedef struct logctx {
    FILE *log;
    bool tty;
} logctx;

static void on_generation(const ga_gen_stats *s, void *ctx)
{
    logctx *l = ctx;
    if (l->log)
        fprintf(l->log, "%d,%lld,%.3f,%.3f,%.3f,%.3f\n", s->generation, (long long)s->evaluations, s->elapsed_s,
                s->best_us, s->mean_us, s->worst_us);
    if (l->tty)
        fprintf(stderr, "\rgen %4d  best %.1f us (%.1f%% of ideal)  mean %.1f  worst %.1f  %.0f eval/s   ",
                s->generation, s->best_us, s->best_us > 0 ? 100.0 * s->ideal_us / s->best_us : 100.0, s->mean_us,
                s->worst_us,
                s->elapsed_s > 0 ? (double)s->evaluations / s->elapsed_s : 0.0);
}

typedef struct args {
    const char *out, *policy, *memory, *logpath, *graph;
    policy_opts po;
    int64_t threads;
    bool quiet, repack;
} args;

/* Parses argv into *a; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, args *a)
{
    enum { O_POLICY = 256, O_MEMORY, O_SEED, O_THREADS, O_GENS, O_TIME, O_POP, O_MUT, O_TEMP, O_SEARCH, O_LOG,
           O_VERSION, O_REPACK, O_LIST };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"policy", required_argument, 0, O_POLICY},
        {"memory", required_argument, 0, O_MEMORY}, {"seed", required_argument, 0, O_SEED},
        {"threads", required_argument, 0, O_THREADS}, {"generations", required_argument, 0, O_GENS},
        {"time-limit", required_argument, 0, O_TIME}, {"population", required_argument, 0, O_POP},
        {"mutation", required_argument, 0, O_MUT}, {"temperature", required_argument, 0, O_TEMP},
        {"search", required_argument, 0, O_SEARCH}, {"log", required_argument, 0, O_LOG},
        {"repack", no_argument, 0, O_REPACK}, {"list-policies", no_argument, 0, O_LIST},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0}};
    ga_opts *go = &a->po.search;
    int64_t v;
    bool gens_set = false;
    int c;
    opterr = 0; /* one line per bad option: cli_bad_option's */
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'q': a->quiet = true; break;
        case 'h': return help();
        case O_VERSION: return cli_version(&TOOL);
        case O_LIST: return list_policies();
        case O_POLICY: a->policy = optarg; break;
        case O_MEMORY: a->memory = optarg; break;
        case O_LOG: a->logpath = optarg; break;
        case O_REPACK: a->repack = true; break;
        case O_SEED:
            if (!cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return cli_usage(&TOOL, "--seed takes a non-negative integer, not '%s'", optarg);
            go->seed = (uint64_t)v;
            break;
        case O_THREADS:
            if (!cli_parse_i64(optarg, 1, 1024, &a->threads))
                return cli_usage(&TOOL, "--threads takes 1..1024, not '%s'", optarg);
            break;
        case O_GENS:
            if (!cli_parse_i64(optarg, 0, 1000000, &v))
                return cli_usage(&TOOL, "--generations takes 0..1000000, not '%s'", optarg);
            go->generations = (int)v;
            gens_set = true;
            break;
        case O_TIME:
            if (!cli_parse_f64(optarg, 0.001, 1e7, &go->time_limit_s))
                return cli_usage(&TOOL, "--time-limit takes seconds > 0, not '%s'", optarg);
            break;
        case O_POP:
            if (!cli_parse_i64(optarg, 2, 100000, &v))
                return cli_usage(&TOOL, "--population takes 2..100000, not '%s'", optarg);
            go->population = (int)v;
            break;
        case O_MUT:
            if (!cli_parse_f64(optarg, 0, 1, &go->mutation))
                return cli_usage(&TOOL, "--mutation takes a probability in [0, 1], not '%s'", optarg);
            break;
        case O_TEMP:
            if (!cli_parse_f64(optarg, 1e-6, 1e6, &go->temperature))
                return cli_usage(&TOOL, "--temperature takes a number > 0, not '%s'", optarg);
            break;
        case O_SEARCH:
            if (strcmp(optarg, "both") == 0) go->mode = GA_BOTH;
            else if (strcmp(optarg, "schedule") == 0) go->mode = GA_SCHEDULE_ONLY;
            else if (strcmp(optarg, "alloc") == 0) go->mode = GA_ALLOC_ONLY;
            else return cli_usage(&TOOL, "--search takes both, schedule or alloc, not '%s'", optarg);
            break;
        case ':':
        default: return cli_bad_option(&TOOL, argv, c);
        }
    }
    if (optind != argc - 1)
        return cli_usage(&TOOL, optind >= argc ? "missing GRAPH" : "too many arguments");
    a->graph = argv[optind];
    if (go->time_limit_s > 0 && !gens_set)
        go->generations = 0; /* the time limit alone decides */
    if (!policy_find(a->policy)) {
        char names[512];
        return cli_usage(&TOOL, "unknown policy '%s' (%s)", a->policy, policy_names(names, sizeof names));
    }
    return -1;
}

static void print_summary(const args *a, const dfg_graph *g, const plan *p, const pack_stats *ps)
{
    fprintf(stderr,
            "%s: %s on %s: %.1f us per iteration (ideal %.1f us, %.1f%%), stall %.1f us, h2d %.2f GB, d2h %.2f GB, "
            "arena %.2f GB of %.2f GB\n",
            TOOL.name, a->policy, g->name, p->predicted.iteration_us, p->predicted.ideal_us,
            p->predicted.iteration_us > 0 ? 100.0 * p->predicted.ideal_us / p->predicted.iteration_us : 100.0,
            p->predicted.stall_us,
            (double)p->predicted.h2d_bytes / 1e9, (double)p->predicted.d2h_bytes / 1e9, (double)p->arena_bytes / 1e9,
            (double)p->device.memory_bytes / 1e9);
    if (a->repack)
        fprintf(stderr, "%s: repack: arena %lld -> %lld bytes (%.2f%% saved; peak load %lld)%s\n", TOOL.name,
                (long long)ps->arena_before, (long long)ps->arena_after,
                ps->arena_before > 0
                    ? 100.0 * (double)(ps->arena_before - ps->arena_after) / (double)ps->arena_before
                    : 0.0,
                (long long)ps->peak_load, ps->kept ? " (best fit was no smaller: offsets kept)" : "");
}

int main(int argc, char **argv)
{
    args a = {.out = "-", .policy = "swapadvisor"};
    policy_opts_default(&a.po);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = 0;
    sa_err err = {0};
    dfg_graph *g = NULL;
    plan *p = NULL;
    FILE *logf = NULL;
    sa_status st = dfg_load_file(a.graph, &g, &err);
    if (!st)
        st = planner_check_graph(g, a.graph, &err);
    if (!st && !g->has_device)
        st = sa_fail(&err, SA_EFORMAT, "%s: no device block (link rates); profile the graph first (dfg-profile)",
                     a.graph);
    dfg_device dev = g && g->has_device ? g->device : (dfg_device){0};
    if (!st && a.memory) {
        int64_t bytes;
        sa_err e2 = {0};
        if (cli_parse_size(a.memory, dfg_peak_bytes(g, NULL), &bytes, &e2)) {
            rc = cli_usage(&TOOL, "--memory: %s", e2.msg);
            goto done;
        }
        dev.memory_bytes = bytes;
    }
    logctx lc = {NULL, cli_stderr_tty() && !a.quiet && strcmp(a.policy, "swapadvisor") == 0};
    if (!st && a.logpath && !(logf = fopen(a.logpath, "w")))
        st = sa_fail(&err, SA_EIO, "%s: cannot open log for writing", a.logpath);
    if (logf)
        setvbuf(logf, NULL, _IOLBF, 0); /* whole lines only, even when interrupted */
    if (!st) {
        lc.log = logf;
        if (logf)
            fprintf(logf, "generation,evaluations,elapsed_s,best_us,mean_us,worst_us\n");
        a.po.search.threads = cli_threads(a.threads);
        a.po.search.on_generation = on_generation;
        a.po.search.ctx = &lc;
        st = policy_run_opts(a.policy, g, &dev, &a.po, &p, &err);
        if (lc.tty)
            fputc('\n', stderr);
    }
    pack_stats ps = {0};
    if (!st && a.repack) {
        pack_opts po;
        pack_opts_default(&po);
        po.keep_if_worse = true;
        st = pack_plan(p, g, &po, &ps, &err);
    }
    if (!st) {
        sa_err verr = {0};
        if (plan_validate(p, g, true, NULL, &verr) != SA_OK)
            st = sa_fail(&err, SA_EINTERNAL, "internal error: the plan fails validation: %s", verr.msg);
    }
    if (!st)
        st = plan_write_file(p, a.out, &err);
    if (st) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    if (!a.quiet)
        print_summary(&a, g, p, &ps);
done:
    if (logf && fclose(logf) != 0 && rc == 0) {
        sa_fail(&err, SA_EIO, "%s: write failed", a.logpath);
        rc = cli_fail(&TOOL, &err);
    }
    plan_free(p);
    dfg_free(g);
    return rc;
}
