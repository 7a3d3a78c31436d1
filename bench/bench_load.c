/* bench_load - time loading (parse + validate + derive) of a synthetic 10,000-op graph. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/dfg.h"

/* A residual chain: op i reads the previous two activations and its weight. */
static sa_dfg_graph *synth(int32_t n_ops)
{
    sa_dfg_graph *g = sa_dfg_new("synthetic");
    int32_t prev2 = sa_dfg_add_tensor(g, "in", SA_DFG_INPUT, 4096), prev = prev2;
    for (int32_t i = 0; i < n_ops; i++) {
        int32_t w = sa_dfg_add_tensor(g, "w", SA_DFG_PARAM, 1024 * (1 + i % 7));
        int32_t y = sa_dfg_add_tensor(g, "y", SA_DFG_ACTIVATION, 4096 * (1 + i % 5));
        int32_t in[] = {prev, w, prev2}, out[] = {y};
        sa_dfg_add_op(g, "op", "matmul", SA_DFG_FORWARD, in, prev == prev2 ? 2 : 3, out, 1);
        g->ops[i].time_us = 10;
        g->ops[i].flops = 1e6;
        prev2 = prev;
        prev = y;
    }
    return g;
}

int main(int argc, char **argv)
{
    int32_t n = argc > 1 ? atoi(argv[1]) : 10000;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    sa_err err;
    sa_dfg_graph *g = synth(n);
    if (sa_dfg_finalize(g, "synthetic", &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    char *text;
    if (sa_dfg_to_json(g, true, &text, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    size_t len = strlen(text);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        sa_dfg_graph *h;
        double t0 = omp_get_wtime();
        if (sa_dfg_parse(text, len, "synthetic", &h, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        double dt = omp_get_wtime() - t0;
        if (dt < best)
            best = dt;
        sa_dfg_free(h);
    }
    printf("load: %d ops, %d tensors, %.1f MB of JSON: best of %d = %.2f ms (%.1f MB/s)\n", g->n_ops, g->n_tensors,
           (double)len / 1e6, reps, best * 1e3, (double)len / 1e6 / best);
    free(text);
    sa_dfg_free(g);
    return 0;
}
