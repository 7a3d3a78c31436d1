/* bench_eval - planner + simulator evaluations per second on one core, the
 * search's inner loop, for profiled graphs given on the command line.
 * Each graph gets a second line for the core's best-fit layout (every
 * activation and gradient swapped where it can be, packed, simulated).
 * Usage: bench_eval FRACTION GRAPH... (memory = FRACTION x the no-swap peak). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/swp.h"

/* The best-fit layout's evaluation (the search's other layout): every
 * activation and gradient swapped where it can be (decide.h demotes the
 * rest), packed, simulated.  One line, as the pool's. */
static int bench_bestfit(const dfg_graph *g, const dfg_device *dev, plan *p, int fixed, sa_err *err)
{
    uint8_t *act = calloc((size_t)g->n_tensors + 1, 1);
    sim_ws *sw = sim_ws_new();
    if (!act || !sw) {
        free(act);
        sim_ws_free(sw);
        return sa_fail(err, SA_ENOMEM, "out of memory");
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == DFG_ACTIVATION || g->tensors[t].kind == DFG_GRADIENT)
            act[t] = DEC_SWAP;
    dec_stats ds;
    planner_req q = {.schedule = g->topo, .layout = PLANNER_BESTFIT, .act = act, .stats = &ds, .sim = sw};
    int reps = 0;
    double t0 = omp_get_wtime(), t = 0, best = HUGE_VAL;
    sa_status st = SA_OK;
    while (!st && (fixed > 0 ? reps < fixed : (t < 2.0 || reps < 3))) {
        st = planner_plan(g, dev, &q, p, err);
        reps++;
        double t1 = omp_get_wtime();
        if (t1 - t0 - t < best)
            best = t1 - t0 - t;
        t = t1 - t0;
    }
    if (!st)
        printf("%-22s %6s %9d %8s %10.3f %10.3f %12.1f %9.1f%%  arena %.0f%% of memory\n", "  best fit", "",
               p->n_nodes, "", t / reps * 1e3, best * 1e3, reps / t,
               100.0 * dfg_total_time_us(g) / p->predicted.iteration_us,
               100.0 * (double)ds.arena_bytes / (double)dev->memory_bytes);
    free(act);
    sim_ws_free(sw);
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
    printf("%-22s %6s %9s %8s %10s %10s %12s %10s\n", "graph", "ops", "nodes", "memory", "ms/eval", "best ms", "evals/s",
           "%ideal");
    for (int i = 2; i < argc; i++) {
        sa_err err;
        dfg_graph *g;
        if (dfg_load_file(argv[i], &g, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        dfg_device dev = g->device;
        dev.memory_bytes = (int64_t)(frac * (double)dfg_peak_bytes(g, NULL));
        pool_alloc a;
        pool_alloc_init(&a, g->n_sizes);
        if (pool_fine_grained(&a, g, g->topo, dev.memory_bytes, &err)) {
            printf("%-22s %6d  infeasible: %s\n", g->name, g->n_ops, err.msg);
            pool_alloc_free(&a);
            dfg_free(g);
            continue;
        }
        swp_opts o;
        swp_opts_default(&o);
        swp_ws *ws = swp_ws_new(g);
        sim_ws *sw = sim_ws_new();
        plan *p = plan_new(g, &dev);
        int reps = 0;
        /* best: the fastest single evaluation, the figure least disturbed by
         * other work on a shared machine */
        double t0 = omp_get_wtime(), t = 0, best = HUGE_VAL;
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
        printf("%-22s %6d %9d %7.0f%% %10.3f %10.3f %12.1f %9.1f%%\n", g->name, g->n_ops, p->n_nodes, frac * 100,
               t / reps * 1e3, best * 1e3, reps / t, 100.0 * dfg_total_time_us(g) / p->predicted.iteration_us);
        if (bestfit && bench_bestfit(g, &dev, p, fixed, &err)) {
            fprintf(stderr, "%s: %s\n", argv[i], err.msg);
            return 1;
        }
        plan_free(p);
        sim_ws_free(sw);
        swp_ws_free(ws);
        pool_alloc_free(&a);
        dfg_free(g);
    }
    return 0;
}
