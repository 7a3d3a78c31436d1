/* swapplan-run - replays a swap plan on a GPU (cuda) or on the CPU with full
 * content verification (host). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/runner.h"

static const cli_tool TOOL = {
    "swapplan-run",
    "Usage: swapplan-run PLAN --graph GRAPH [options]\n"
    "Replays the augmented dataflow graph of a swap plan, iteration after\n"
    "iteration.\n"
    "\n"
    "  PLAN                  swapplan document ('-' = stdin)\n"
    "  -g, --graph FILE      the dfg graph the plan was made for (required)\n"
    "  --backend NAME        cuda (default): a CUDA arena, pinned host copies,\n"
    "                        three streams and an event per node, measured\n"
    "                        against the plan's prediction; host: three threads\n"
    "                        for the streams, a malloc'd arena, and every byte\n"
    "                        checked against a reference run with unlimited memory\n"
    "  --iterations N        steady-state iterations to run (default 2)\n"
    "  --force               replay a plan that fails strict validation (its\n"
    "                        violations are printed; the host backend then shows\n"
    "                        what they corrupt)\n"
    "  --real-ops            cuda: cuBLAS GEMMs for matrix products, element-wise\n"
    "                        kernels for the other ops (convolutions keep the\n"
    "                        calibrated kernel)\n"
    "  --scale-bytes K       divide every tensor size and arena offset by K (host\n"
    "                        default: the smallest power of two that fits --cap;\n"
    "                        cuda default: 1)\n"
    "  --cap SIZE            host: memory the replay may use when it picks K\n"
    "                        (default 1GiB)\n"
    "  -q, --quiet           print only errors\n"
    "  -h, --help            this help;  --version  the version\n"
    "\n"
    "docs/runner.md describes both backends, the byte scaling and profiling with\n"
    "Nsight Systems.\n"
    "Exit codes: 0 ok (host: every tensor verified), 1 internal error, 2 usage,\n"
    "3 bad input document, 4 I/O error, 5 the host replay does not fit --cap,\n"
    "6 the plan fails validation, 7 CUDA error or no CUDA device, 8 the host\n"
    "replay found wrong contents.\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n"};

static void human(char *buf, size_t n, double bytes)
{
    if (bytes >= 1e9)
        snprintf(buf, n, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6)
        snprintf(buf, n, "%.2f MB", bytes / 1e6);
    else if (bytes >= 1e3)
        snprintf(buf, n, "%.2f kB", bytes / 1e3);
    else
        snprintf(buf, n, "%.0f B", bytes);
}

static void print_report(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_report *r)
{
    char a[32], b[32], c[32], d[32];
    human(a, sizeof a, (double)r->arena_bytes);
    human(b, sizeof b, (double)r->host_bytes);
    printf("plan: %s, %d nodes; %s\n", g->name, p->n_nodes,
           r->valid ? "valid (strict)" : "INVALID, replayed with --force");
    if (r->backend == SA_RUNNER_HOST) {
        printf("host replay: %d iterations, sizes divided by %lld: arena %s, host copies %s\n", r->iterations,
               (long long)r->scale, a, b);
        if (!r->valid && r->scale > 1)
            printf("note: scaled sizes may hide a partial overlap of placements; --scale-bytes 1 replays them "
                   "exactly\n");
        human(a, sizeof a, (double)r->h2d_bytes);
        human(b, sizeof b, (double)r->d2h_bytes);
        human(c, sizeof c, (double)r->plan_h2d_bytes);
        human(d, sizeof d, (double)r->plan_d2h_bytes);
        for (int i = 0; i < r->iterations; i++)
            printf("iteration %d: %.3f ms wall, moved h2d %s, d2h %s (the plan's bytes: h2d %s, d2h %s)\n", i + 1,
                   r->iter_us[i] / 1e3, a, b, c, d);
        printf("verified: %d tensors match (%d persistent read back, %lld op input/output checksums over %d "
               "iterations)\n", r->verified_tensors, r->verified_persistent, (long long)r->verified_checksums,
               r->iterations);
        return;
    }
    printf("cuda replay on %s: %d iterations, arena %s, pinned host copies %s%s\n", r->device_name, r->iterations, a,
           b, r->scale > 1 ? " (sizes scaled down: timings are not the plan's)" : "");
    printf("ops per iteration: %d calibrated (%.1f cycles/us), %d cuBLAS, %d element-wise\n", r->n_ops_calibrated,
           r->cycles_per_us, r->n_ops_cublas, r->n_ops_elementwise);
    double sum = 0;
    int counted = 0;
    for (int i = 0; i < r->iterations; i++) {
        double pred = r->predicted_us;
        printf("iteration %d: %.1f us measured, %.1f us predicted (%+.1f%%)\n", i + 1, r->iter_us[i], pred,
               pred > 0 ? 100.0 * (r->iter_us[i] - pred) / pred : 0.0);
        if (i > 0 || r->iterations == 1) {
            sum += r->iter_us[i];
            counted++;
        }
    }
    if (r->iterations > 1)
        printf("steady state (mean of iterations 2..%d): %.1f us, predicted %.1f us\n", r->iterations,
               sum / counted, r->predicted_us);
    human(a, sizeof a, (double)r->h2d_bytes);
    human(b, sizeof b, (double)r->d2h_bytes);
    printf("h2d: %s per iteration at %.2f GB/s (plan's link %.2f GB/s); d2h: %s at %.2f GB/s (plan's link "
           "%.2f GB/s)\n", a, r->h2d_bytes_per_s / 1e9, p->device.h2d_bytes_per_s / 1e9, b,
           r->d2h_bytes_per_s / 1e9, p->device.d2h_bytes_per_s / 1e9);
}

int main(int argc, char **argv)
{
    enum { O_BACKEND = 256, O_ITER, O_FORCE, O_REAL, O_SCALE, O_CAP, O_VERSION };
    static const struct option longopts[] = {
        {"graph", required_argument, 0, 'g'}, {"backend", required_argument, 0, O_BACKEND},
        {"iterations", required_argument, 0, O_ITER}, {"force", no_argument, 0, O_FORCE},
        {"real-ops", no_argument, 0, O_REAL}, {"scale-bytes", required_argument, 0, O_SCALE},
        {"cap", required_argument, 0, O_CAP}, {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION}, {0, 0, 0, 0}};
    sa_runner_opts o;
    sa_runner_opts_default(&o);
    o.backend = SA_RUNNER_CUDA;
    const char *gpath = NULL;
    bool quiet = false;
    int64_t v;
    int c;
    sa_err err = {0};
    opterr = 0; /* one line per bad option: cli_bad_option's */
    while ((c = getopt_long(argc, argv, ":g:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': gpath = optarg; break;
        case 'q': quiet = true; break;
        case 'h': return cli_help(&TOOL);
        case O_VERSION: return cli_version(&TOOL);
        case O_BACKEND:
            if (!sa_runner_backend_from_name(optarg, &o.backend))
                return cli_usage(&TOOL, "--backend takes cuda or host, not '%s'", optarg);
            break;
        case O_ITER:
            if (!cli_parse_i64(optarg, 1, 1000000, &v))
                return cli_usage(&TOOL, "--iterations takes 1..1000000, not '%s'", optarg);
            o.iterations = (int)v;
            break;
        case O_FORCE: o.force = true; break;
        case O_REAL: o.real_ops = true; break;
        case O_SCALE:
            if (!cli_parse_i64(optarg, 1, (int64_t)1 << 50, &o.scale_bytes))
                return cli_usage(&TOOL, "--scale-bytes takes an integer >= 1, not '%s'", optarg);
            break;
        case O_CAP:
            if (cli_parse_size(optarg, -1, &o.cap_bytes, &err) || o.cap_bytes < 1)
                return cli_usage(&TOOL, "--cap: %s", err.msg[0] ? err.msg : "must be positive");
            break;
        case ':':
        default: return cli_bad_option(&TOOL, argv, c);
        }
    }
    if (optind != argc - 1)
        return cli_usage(&TOOL, optind >= argc ? "missing PLAN" : "too many arguments");
    if (!gpath)
        return cli_usage(&TOOL, "missing --graph GRAPH (the graph the plan was made for)");
    const char *ppath = argv[optind];
    if (strcmp(ppath, "-") == 0 && strcmp(gpath, "-") == 0)
        return cli_usage(&TOOL, "PLAN and GRAPH cannot both be stdin");
    if (o.real_ops && o.backend != SA_RUNNER_CUDA)
        return cli_usage(&TOOL, "--real-ops needs --backend cuda");
    if (o.real_ops && o.scale_bytes > 1)
        return cli_usage(&TOOL, "--real-ops runs the tensors' real shapes: it cannot be combined with --scale-bytes");

    sa_dfg_graph *g = NULL;
    sa_plan *p = NULL;
    sa_runner_report rep;
    memset(&rep, 0, sizeof rep);
    int rc = 0;
    sa_status st = sa_dfg_load_file(gpath, &g, &err);
    if (!st)
        st = sa_plan_load_file(ppath, &p, &err);
    if (!st)
        st = sa_plan_check_graph(p, g, ppath, &err);
    if (st) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    st = sa_runner_run(p, g, &o, &rep, &err);
    if (rep.violations.n_violations > 0) {
        fprintf(stderr, "%s: %s fails strict validation (%d violation%s%s):\n", TOOL.name, ppath,
                rep.violations.n_violations, rep.violations.n_violations == 1 ? "" : "s",
                rep.violations.n_lines < rep.violations.n_violations ? ", the first listed" : "");
        for (int32_t i = 0; i < rep.violations.n_lines; i++)
            fprintf(stderr, "  %s\n", rep.violations.lines[i]);
    }
    if (st == SA_EINVALID && !o.force && rep.violations.n_violations > 0) {
        fprintf(stderr, "%s: refusing to replay an invalid plan (--force replays it anyway)\n", TOOL.name);
        rc = sa_exit_code(st);
        goto done;
    }
    if (st == SA_EDEVICE && o.backend == SA_RUNNER_CUDA) {
        /* one line: the reason and what to do instead */
        if (strncmp(err.msg, "no CUDA device", 14) == 0) {
            sa_err e2 = err;
            sa_fail(&err, st, "%s (--backend host replays the plan on the CPU)", e2.msg);
        }
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    if (st) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    if (!quiet)
        print_report(p, g, &rep);
done:
    sa_runner_report_free(&rep);
    sa_plan_free(p);
    sa_dfg_free(g);
    return rc;
}
