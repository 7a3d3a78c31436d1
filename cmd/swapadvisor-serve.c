/* swapadvisor-serve - several models served on one GPU: partitioned memory with
 * swapping against time-shared memory (SwapAdvisor paper, Figure 8). */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_io.h"
#include "swapadvisor/serve.h"

static const cli_tool TOOL = {
    "swapadvisor-serve",
    "Usage: swapadvisor-serve MODEL... --memory SIZE --rate R [options]\n"
    "\n"
    "Serves the models MODEL... on one GPU with SIZE of memory: splits the memory\n"
    "among them (searching the split), plans each model in its share, simulates\n"
    "Poisson arrivals batched per model and reports p50/p99 latency and throughput\n"
    "for partitioned memory against time-shared memory, where every switch to\n"
    "another model reloads its parameters (docs/serving.md).\n"
    "\n"
    "  MODEL               GRAPH[,GRAPH...]: a model's profiled inference graphs at\n"
    "                      ascending batch sizes (dfg-zoo NAME --inference\n"
    "                      --batch B | dfg-profile); q waiting requests run as\n"
    "                      the smallest batch that holds them; repeat a MODEL\n"
    "                      for several copies\n"
    "  --memory SIZE       GPU memory for all the models: 2GB, 1536MiB, bytes\n"
    "  --rate R            arrivals per second, all models together\n"
    "  --weights W,...     relative arrival rate of each model (default equal)\n"
    "  --steps N           shares are multiples of SIZE / N (default 16)\n"
    "  --policy NAME       planner for every share (default swapadvisor)\n"
    "  --generations N     the search's generations (default 5)\n"
    "  --threads N         the search's threads (default 1)\n"
    "  --requests N        arrivals simulated per rate (default 4000)\n"
    "  --seed N            arrivals and search seed (default 1); same seed, same\n"
    "                      report\n"
    "  --svg FILE          Figure 8: the rate swept over R/10, 2R/10 .. R, p99\n"
    "                      latency against throughput for both modes (the report\n"
    "                      lists every rate)\n"
    "  -o, --output FILE   the report (default stdout); written atomically\n"
    "  -h, --help, --version\n"
    "\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad graph, 4 I/O error,\n"
    "5 infeasible (a model fits in no share, or no split fits them all).\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n",
};

#define MAX_MODELS 64
#define MAX_GRAPHS 256

typedef struct args {
    const char *models[MAX_MODELS]; /* the MODEL arguments */
    int32_t k;
    const char *memory, *svg, *out;
    double rate;
    double weights[MAX_MODELS];
    int32_t n_weights;
    serve_opts o;
} args;

static int parse_weights(const char *s, args *a)
{
    char *end;
    a->n_weights = 0;
    for (const char *p = s; *p;) {
        if (a->n_weights >= MAX_MODELS)
            return -1;
        double v = strtod(p, &end);
        if (end == p || !(v > 0) || !isfinite(v))
            return -1;
        a->weights[a->n_weights++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return a->n_weights ? 0 : -1;
}

/* Refuses -o or --svg naming one of the models' graph files (exit 2), before
 * anything is written; 0 when neither does. */
static int refuse_input_outputs(const args *a)
{
    for (int32_t m = 0; m < a->k; m++) {
        char path[4096];
        for (const char *p = a->models[m]; *p;) {
            size_t len = strcspn(p, ",");
            snprintf(path, sizeof path, "%.*s", (int)(len < sizeof path ? len : sizeof path - 1), p);
            const char *in = path;
            int rc = cli_refuse_input_output(&TOOL, "-o", a->out, &in, 1);
            if (rc < 0)
                rc = cli_refuse_input_output(&TOOL, "--svg", a->svg, &in, 1);
            if (rc >= 0)
                return rc;
            p += len + (p[len] == ',');
        }
    }
    return 0;
}

static int parse_args(int argc, char **argv, args *a)
{
    enum { O_MEM = 256, O_RATE, O_WEIGHTS, O_STEPS, O_POLICY, O_GENS, O_THREADS, O_REQ, O_SEED, O_SVG, O_VERSION };
    static const struct option lo[] = {
        {"memory", required_argument, NULL, O_MEM},     {"rate", required_argument, NULL, O_RATE},
        {"weights", required_argument, NULL, O_WEIGHTS}, {"steps", required_argument, NULL, O_STEPS},
        {"policy", required_argument, NULL, O_POLICY},   {"generations", required_argument, NULL, O_GENS},
        {"threads", required_argument, NULL, O_THREADS}, {"requests", required_argument, NULL, O_REQ},
        {"seed", required_argument, NULL, O_SEED},       {"svg", required_argument, NULL, O_SVG},
        {"output", required_argument, NULL, 'o'},        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VERSION},       {NULL, 0, NULL, 0},
    };
    int64_t v;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        switch (c) {
        case O_MEM: a->memory = optarg; break;
        case O_RATE:
            if (!cli_parse_f64(optarg, 1e-6, 1e9, &a->rate))
                return cli_usage(&TOOL, "--rate: expected a positive number of requests per second, got '%s'", optarg);
            break;
        case O_WEIGHTS:
            if (parse_weights(optarg, a))
                return cli_usage(&TOOL, "--weights: expected positive numbers separated by commas, got '%s'", optarg);
            break;
        case O_STEPS:
            if (!cli_parse_i64(optarg, 1, 4096, &v))
                return cli_usage(&TOOL, "--steps: expected an integer in 1..4096, got '%s'", optarg);
            a->o.steps = (int32_t)v;
            break;
        case O_POLICY: a->o.policy = optarg; break;
        case O_GENS:
            if (!cli_parse_i64(optarg, 1, 100000, &v))
                return cli_usage(&TOOL, "--generations: expected an integer in 1..100000, got '%s'", optarg);
            a->o.plan.search.generations = (int)v;
            break;
        case O_THREADS:
            if (!cli_parse_i64(optarg, 1, 1024, &v))
                return cli_usage(&TOOL, "--threads: expected an integer in 1..1024, got '%s'", optarg);
            a->o.plan.search.threads = (int)v;
            break;
        case O_REQ:
            if (!cli_parse_i64(optarg, 1, 10000000, &v))
                return cli_usage(&TOOL, "--requests: expected an integer in 1..10000000, got '%s'", optarg);
            a->o.requests = v;
            break;
        case O_SEED:
            if (!cli_parse_i64(optarg, 0, INT64_MAX, &v))
                return cli_usage(&TOOL, "--seed: expected a non-negative integer, got '%s'", optarg);
            a->o.seed = (uint64_t)v;
            a->o.plan.search.seed = (uint64_t)v;
            break;
        case O_SVG: a->svg = optarg; break;
        case 'o': a->out = optarg; break;
        case 'h': return cli_help(&TOOL) - 1; /* -1: exit 0 */
        case O_VERSION: return cli_version(&TOOL) - 1;
        case ':': return cli_usage(&TOOL, "option '%s' needs an argument", argv[optind - 1]);
        default: return cli_usage(&TOOL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    for (int i = optind; i < argc; i++) {
        if (a->k >= MAX_MODELS)
            return cli_usage(&TOOL, "at most %d models", MAX_MODELS);
        a->models[a->k++] = argv[i];
    }
    if (a->k == 0)
        return cli_usage(&TOOL, "missing MODEL");
    if (!a->memory)
        return cli_usage(&TOOL, "missing --memory");
    if (!(a->rate > 0))
        return cli_usage(&TOOL, "missing --rate");
    if (a->n_weights && a->n_weights != a->k)
        return cli_usage(&TOOL, "--weights: %d weights for %d models", a->n_weights, a->k);
    if (!sa_policy_find(a->o.policy)) {
        char names[512];
        return cli_usage(&TOOL, "--policy: unknown '%s' (%s)", a->o.policy, sa_policy_names(names, sizeof names));
    }
    sa_err err = {0};
    if (cli_parse_size(a->memory, -1, &a->o.memory_bytes, &err))
        return cli_usage(&TOOL, "--memory: %s", err.msg);
    return refuse_input_outputs(a);
}

static void print_point(FILE *f, const serve_table *t, const serve_point *pt)
{
    fprintf(f, "%-9.2f", pt->rate_rps);
    char split[256] = "";
    size_t n = 0;
    for (int32_t i = 0; i < t->k && n < sizeof split - 16; i++)
        n += (size_t)snprintf(split + n, sizeof split - n, "%s%.0f", i ? "/" : "",
                              (double)t->memory_bytes * pt->split[i] / t->steps / 1048576.0);
    fprintf(f, " %-24s %9.1f %9.1f %9.2f %9.1f %9.1f %9.2f %8lld %8.2f\n", split, pt->part.p50_ms,
            pt->part.p99_ms, pt->part.throughput_rps, pt->shared.p50_ms, pt->shared.p99_ms,
            pt->shared.throughput_rps, (long long)pt->shared.switches, pt->shared.reload_ms / 1e3);
}

static void print_report(FILE *f, const args *a, const serve_model *ms, const serve_table *t,
                         const serve_point *pts, int32_t n)
{
    fprintf(f, "# swapadvisor-serve: %d models in %.0f MiB (%d steps of %.1f MiB), policy %s, %lld requests per "
            "rate, seed %llu, %d plans\n",
            t->k, (double)t->memory_bytes / 1048576.0, t->steps, (double)t->memory_bytes / t->steps / 1048576.0,
            a->o.policy, (long long)a->o.requests, (unsigned long long)a->o.seed, t->n_plans);
    fprintf(f, "# model variant: batch time (ms) in 1..%d steps ('-' = no plan); resident MB in the whole memory\n",
            t->steps);
    size_t w = (size_t)t->steps + 1;
    for (int32_t i = 0; i < t->k; i++)
        for (int32_t v = t->voff[i]; v < t->voff[i + 1]; v++) {
            fprintf(f, "#   %d %s weight %.3f batch %-4lld", i, ms[i].g[v - t->voff[i]]->name, t->weight[i],
                    (long long)t->batch[v]);
            for (int32_t s = 1; s <= t->steps; s++) {
                double us = t->pass_us[(size_t)v * w + (size_t)s];
                if (isfinite(us))
                    fprintf(f, " %.1f", us / 1e3);
                else
                    fprintf(f, " -");
            }
            fprintf(f, "; %.1f MB\n", (double)t->res_bytes[(size_t)v * w + (size_t)t->steps] / 1e6);
        }
    fprintf(f, "# latencies in ms, throughput in requests/s; ts = time-shared; reload_s = time-shared seconds "
            "spent reloading parameters\n");
    fprintf(f, "%-9s %-24s %9s %9s %9s %9s %9s %9s %8s %8s\n", "rate/s", "split MiB (partitioned)", "part_p50",
            "part_p99", "part_rps", "ts_p50", "ts_p99", "ts_rps", "switches", "reload_s");
    for (int32_t i = 0; i < n; i++)
        print_point(f, t, &pts[i]);
}

/* Loads the graphs of every MODEL argument (a path given twice is loaded
 * once) into files/gs and points the models at them. */
static sa_status load_models(const args *a, char *paths[MAX_GRAPHS], sa_dfg_graph *gs[MAX_GRAPHS], int32_t *ng,
                             const sa_dfg_graph *vg[MAX_GRAPHS], serve_model *ms, sa_err *err)
{
    int32_t nv = 0;
    for (int32_t i = 0; i < a->k; i++) {
        ms[i].g = vg + nv;
        ms[i].n = 0;
        ms[i].weight = a->n_weights ? a->weights[i] : 1.0;
        for (const char *p = a->models[i]; *p;) {
            size_t len = strcspn(p, ",");
            if (len == 0 || nv >= MAX_GRAPHS)
                return sa_fail(err, SA_EUSAGE, "MODEL '%s': %s", a->models[i],
                               len ? "too many graphs" : "empty graph path");
            int32_t found = -1;
            for (int32_t j = 0; j < *ng && found < 0; j++)
                if (strlen(paths[j]) == len && strncmp(paths[j], p, len) == 0)
                    found = j;
            if (found < 0) {
                if (*ng >= MAX_GRAPHS || !(paths[*ng] = strndup(p, len)))
                    return sa_fail(err, SA_ENOMEM, "out of memory");
                sa_status st = sa_dfg_load_file(paths[*ng], &gs[*ng], err);
                if (st)
                    return st;
                found = (*ng)++;
            }
            vg[nv++] = gs[found];
            ms[i].n++;
            p += len;
            if (*p == ',')
                p++;
        }
    }
    return SA_OK;
}

int main(int argc, char **argv)
{
    args a = {0};
    serve_opts_default(&a.o);
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? 0 : rc;
    sa_err err = {0};
    char *paths[MAX_GRAPHS] = {0};
    sa_dfg_graph *gs[MAX_GRAPHS] = {0};
    const sa_dfg_graph *vg[MAX_GRAPHS] = {0};
    serve_model ms[MAX_MODELS] = {0};
    int32_t ng = 0;
    serve_table *t = NULL;
    serve_point pts[10] = {0};
    int32_t n = a.svg ? 10 : 1;
    char *svg = NULL;
    sa_status st = load_models(&a, paths, gs, &ng, vg, ms, &err);
    if (!st)
        st = serve_table_build(ms, a.k, &a.o, &t, &err);
    for (int32_t i = 0; i < n && !st; i++) {
        if (!(pts[i].split = calloc((size_t)a.k, sizeof *pts[i].split))) {
            st = sa_fail(&err, SA_ENOMEM, "out of memory");
            break;
        }
        st = serve_eval(t, a.rate * (n == 1 ? 1.0 : (double)(i + 1) / n), &a.o, &pts[i], &err);
    }
    if (!st && a.svg) {
        char title[160];
        snprintf(title, sizeof title, "%d models in %.0f MiB: p99 latency vs throughput", a.k,
                 (double)a.o.memory_bytes / 1048576.0);
        if (!(st = serve_svg(pts, n, title, &svg, &err)))
            st = sa_write_file(a.svg, svg, strlen(svg), &err);
    }
    if (!st) {
        sa_out o;
        if (!(st = sa_out_open(&o, a.out ? a.out : "-", &err))) {
            print_report(o.fp, &a, ms, t, pts, n);
            st = sa_out_commit(&o, &err);
        }
    }
    if (st)
        rc = st == SA_EUSAGE ? cli_usage(&TOOL, "%s", err.msg) : cli_fail(&TOOL, &err);
    free(svg);
    for (int32_t i = 0; i < n; i++)
        free(pts[i].split);
    serve_table_free(t);
    for (int32_t i = 0; i < ng; i++) {
        sa_dfg_free(gs[i]);
        free(paths[i]);
    }
    return rc;
}
