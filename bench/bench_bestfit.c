/* bench_bestfit - one full best-fit evaluation (issue 15, item 5), repeated:
 * the decisions' nodes (dec_nodes), SmartPool's packing (pack_plan_ws) and
 * the simulation (planner_predict), as planner_plan runs them for
 * PLANNER_BESTFIT without within_memory, on one core, with the workspaces
 * kept across evaluations as the search keeps them.  Prints the thread CPU
 * time of whole evaluations (min, median, mean; evaluations per second from
 * the median) and of each stage (medians), so that what dominates is read
 * off one run.
 * Usage: bench_bestfit FRACTION GRAPH [REPS] [rule]
 *   memory = FRACTION x the no-swap peak; REPS evaluations (default 30);
 *   "rule": the search's cost-rule individual (forward-phase activations
 *   DEC_EVICT) instead of every activation and gradient DEC_SWAP.
 * For callgrind: REPS=1 and --toggle-collect=bestfit_eval collects two
 * evaluations (the untimed first one, which sizes the workspaces, and one
 * timed): halve the counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/sim.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct ctx {
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    const uint8_t *act;
    dec_opts o;
    pack_ws *pw;
    sa_sim_ws *sw;
    sa_plan *p;
    double t[3]; /* CPU seconds of the last evaluation's stages */
} ctx;

/* One evaluation, stage by stage, as planner.c's plan_bestfit + predict. */
__attribute__((noinline)) static sa_status bestfit_eval(ctx *c, sa_err *err)
{
    dec_stats ds;
    pack_stats ps;
    double t0 = cpu_now();
    sa_status st = dec_nodes(c->g, c->dev, c->g->topo, c->act, &c->o, c->p, &ds, err);
    double t1 = cpu_now();
    if (!st)
        st = pack_plan_ws(c->p, c->g, &c->o.pack, c->pw, 0, &ps, err);
    double t2 = cpu_now();
    if (!st)
        st = planner_predict(c->p, c->g, c->sw, NULL, err);
    double t3 = cpu_now();
    c->t[0] = t1 - t0;
    c->t[1] = t2 - t1;
    c->t[2] = t3 - t2;
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_bestfit FRACTION GRAPH [REPS] [rule]\n");
        return 2;
    }
    double frac = atof(argv[1]);
    int reps = argc > 3 ? atoi(argv[3]) : 30;
    int rule = argc > 4 && strcmp(argv[4], "rule") == 0;
    if (reps < 1) {
        fprintf(stderr, "bench_bestfit: REPS must be at least 1\n");
        return 2;
    }
    sa_err err;
    sa_dfg_graph *g;
    if (sa_dfg_load_file(argv[2], &g, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    sa_dfg_device dev = g->device;
    dev.memory_bytes = (int64_t)(frac * (double)sa_dfg_peak_bytes(g, NULL));
    uint8_t *act = calloc((size_t)g->n_tensors + 1, 1);
    double *all = malloc((size_t)reps * 4 * sizeof *all);
    ctx c = {.g = g, .dev = &dev, .act = act, .pw = pack_ws_new(), .sw = sa_sim_ws_new(), .p = sa_plan_new(g, &dev)};
    if (!act || !all || !c.pw || !c.sw || !c.p) {
        fprintf(stderr, "bench_bestfit: out of memory\n");
        return 1;
    }
    dec_opts_default(&c.o);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        sa_dfg_kind k = g->tensors[t].kind;
        int32_t op = g->tensors[t].producer;
        if (!rule && (k == SA_DFG_ACTIVATION || k == SA_DFG_GRADIENT))
            act[t] = DEC_SWAP;
        if (rule && !sa_dfg_kind_persistent(k) && k != SA_DFG_WORKSPACE && k != SA_DFG_INPUT && op >= 0 &&
            g->ops[op].phase == SA_DFG_FORWARD)
            act[t] = DEC_EVICT;
    }
    /* untimed: sizes the workspaces */
    if (bestfit_eval(&c, &err)) {
        fprintf(stderr, "%s: %s\n", argv[2], err.msg);
        return 1;
    }
    double *tot = all, *stage[3] = {all + reps, all + 2 * reps, all + 3 * reps};
    double sum = 0;
    for (int i = 0; i < reps; i++) {
        if (bestfit_eval(&c, &err)) {
            fprintf(stderr, "%s: %s\n", argv[2], err.msg);
            return 1;
        }
        tot[i] = c.t[0] + c.t[1] + c.t[2];
        sum += tot[i];
        for (int s = 0; s < 3; s++)
            stage[s][i] = c.t[s];
    }
    qsort(tot, (size_t)reps, sizeof *tot, cmp_double);
    for (int s = 0; s < 3; s++)
        qsort(stage[s], (size_t)reps, sizeof *stage[s], cmp_double);
    printf("%s %.0f%% %s: %d placements packed, makespan %.1f us; %d evaluations, cpu ms min %.3f median %.3f mean "
           "%.3f (%.1f evaluations/s at the median); stage medians: decide %.3f pack %.3f simulate %.3f\n",
           g->name, frac * 100, rule ? "rule" : "swap all", c.p->n_place, c.p->predicted.iteration_us, reps,
           tot[0] * 1e3, tot[reps / 2] * 1e3, sum / reps * 1e3, 1.0 / tot[reps / 2], stage[0][reps / 2] * 1e3,
           stage[1][reps / 2] * 1e3, stage[2][reps / 2] * 1e3);
    sa_plan_free(c.p);
    sa_sim_ws_free(c.sw);
    pack_ws_free(c.pw);
    free(all);
    free(act);
    sa_dfg_free(g);
    return 0;
}
