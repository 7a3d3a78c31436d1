/* bench_eval - planner + simulator evaluations per second on one core, the
 * search's inner loop, for profiled graphs given on the command line.
 * Each graph gets two more lines for the core's best-fit layout: every
 * activation and gradient swapped where it can be, and the search's
 * cost-rule individual (forward-phase activations DEC_EVICT); each packed
 * and simulated.
 * Usage: bench_eval FRACTION GRAPH... (memory = FRACTION x the no-swap peak). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/swp.h"

/* This thread's CPU time in seconds: on a machine shared with other jobs the
 * wall clock counts the time spent waiting for a core, this does not. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The best-fit layout's evaluation (the search's other layout): every
 * activation and gradient swapped where it can be (decide.h demotes the
 * rest), packed, simulated.  One line, as the pool's. */
static int bench_bestfit(const sa_dfg_graph *g, const sa_dfg_device *dev, sa_plan *p, int fixed, bool rule, bool search,
                         sa_err *err)
{
    uint8_t *act = calloc((size_t)g->n_tensors + 1, 1);
    sa_sim_ws *sw = sa_sim_ws_new();
    pack_ws *pw = pack_ws_new();
    if (!act || !sw || !pw) {
        free(act);
        sa_sim_ws_free(sw);
        pack_ws_free(pw);
        return sa_fail(err, SA_ENOMEM, "out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        sa_dfg_kind k = g->tensors[t].kind;
        int32_t op = g->tensors[t].producer;
        if (!rule && (k == SA_DFG_ACTIVATION || k == SA_DFG_GRADIENT))
            act[t] = DEC_SWAP;
        /* the search's cost-rule individual (ga.c's rule_indiv): every
         * forward-phase candidate evicted, decide.h picks swap or recompute */
        if (rule && !sa_dfg_kind_persistent(k) && k != SA_DFG_WORKSPACE && k != SA_DFG_INPUT && op >= 0 &&
            g->ops[op].phase == SA_DFG_FORWARD)
            act[t] = DEC_EVICT;
    }
    dec_stats ds;
    planner_req q = {.schedule = g->topo, .layout = PLANNER_BESTFIT, .act = act, .stats = &ds, .sim = sw,
                     .pack = pw, .within_memory = search};
    int reps = 0;
    double t0 = omp_get_wtime(), t = 0, best = HUGE_VAL, c0 = cpu_now();
    sa_status st = SA_OK;
    bool fits = true;
    while (!st && (fixed > 0 ? reps < fixed : (t < 2.0 || reps < 3))) {
        st = planner_plan(g, dev, &q, p, err);
        if (search && st == SA_EINFEASIBLE) { /* the search's verdict: unfit */
            st = SA_OK;
            fits = false;
        }
        reps++;
        double t1 = omp_get_wtime();
        if (t1 - t0 - t < best)
            best = t1 - t0 - t;
        t = t1 - t0;
    }
    double cpu = (cpu_now() - c0) / reps;
    const char *what = rule ? (search ? "    rule, as searched" : "  best fit, rule") :
                              (search ? "    swap all, as searched" : "  best fit, swap all");
    if (!st && search && !fits)
        printf("%-27s %1s %9s %8s %10.3f %10.3f %10.3f %12.1f  unfit: %s\n", what, "", "", "", t / reps * 1e3,
               best * 1e3, cpu * 1e3, reps / t, ds.peak_load > dev->memory_bytes ? "peak load past memory" : "arena past memory");
    else if (!st)
        printf("%-27s %1s %9d %8s %10.3f %10.3f %10.3f %12.1f %9.1f%%  arena %.0f%% of memory\n", what, "", p->n_nodes,
               "", t / reps * 1e3, best * 1e3, cpu * 1e3, reps / t, 100.0 * sa_dfg_total_time_us(g) / p->predicted.iteration_us,
               100.0 * (double)ds.arena_bytes / (double)dev->memory_bytes);
    free(act);
    sa_sim_ws_free(sw);
    pack_ws_free(pw);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_eval FRACTION GRAPH...\n");
        return 2;
    }
    double frac = atof(argv[1]);
    /* BENCH_REPS=N runs exactly N evaluations (for callgrind) instead of 2 s */
    const char *env = getenv("BENCH_REPS");
    int fixed = env ? atoi(env) : 0;
    /* BENCH_BESTFIT=0 leaves out the best-fit layout's line */
    const char *bf = getenv("BENCH_BESTFIT");
    bool bestfit = !bf || atoi(bf) != 0;
    printf("%-22s %6s %9s %8s %10s %10s %10s %12s %10s\n", "graph", "ops", "nodes", "memory", "ms/eval", "best ms", "cpu ms",
           "evals/s",
           "%ideal");
    for (int i = 2; i < argc; i++) {
        sa_err err;
        sa_dfg_graph *g;
        if (sa_dfg_load_file(argv[i], &g, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        sa_dfg_device dev = g->device;
        dev.memory_bytes = (int64_t)(frac * (double)sa_dfg_peak_bytes(g, NULL));
        pool_alloc a;
        pool_alloc_init(&a, g->n_sizes);
        if (pool_fine_grained(&a, g, g->topo, dev.memory_bytes, &err)) {
            printf("%-22s %6d  infeasible: %s\n", g->name, g->n_ops, err.msg);
            pool_alloc_free(&a);
            sa_dfg_free(g);
            continue;
        }
        swp_opts o;
        swp_opts_default(&o);
        swp_ws *ws = swp_ws_new(g);
        sa_sim_ws *sw = sa_sim_ws_new();
        sa_plan *p = sa_plan_new(g, &dev);
        int reps = 0;
        /* best: the fastest single evaluation, the figure least disturbed by
         * other work on a shared machine */
        double t0 = omp_get_wtime(), t = 0, best = HUGE_VAL, c0 = cpu_now();
        while (fixed > 0 ? reps < fixed : (t < 2.0 || reps < 3)) {
            planner_req q = {.schedule = g->topo, .layout = PLANNER_POOL, .pool = &a, .evict = &o, .ws = ws, .sim = sw};
            if (planner_plan(g, &dev, &q, p, &err)) {
                fprintf(stderr, "%s: %s\n", argv[i], err.msg);
                return 1;
            }
            reps++;
            double t1 = omp_get_wtime();
            if (t1 - t0 - t < best)
                best = t1 - t0 - t;
            t = t1 - t0;
        }
        double cpu = (cpu_now() - c0) / reps;
        printf("%-22s %6d %9d %7.0f%% %10.3f %10.3f %10.3f %12.1f %9.1f%%\n", g->name, g->n_ops, p->n_nodes, frac * 100,
               t / reps * 1e3, best * 1e3, cpu * 1e3, reps / t, 100.0 * sa_dfg_total_time_us(g) / p->predicted.iteration_us);
        bool bf_err = false;
        for (int k = 0; bestfit && !bf_err && k < 4; k++)
            bf_err = bench_bestfit(g, &dev, p, fixed, k >= 2, k % 2 == 1, &err) != SA_OK;
        if (bf_err) {
            fprintf(stderr, "%s: %s\n", argv[i], err.msg);
            return 1;
        }
        sa_plan_free(p);
        sa_sim_ws_free(sw);
        swp_ws_free(ws);
        pool_alloc_free(&a);
        sa_dfg_free(g);
    }
    return 0;
}
