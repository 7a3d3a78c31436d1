/*
 * serve.h - serving several models on one GPU (SwapAdvisor paper, section 6.3,
 * Figure 8): partitioned memory with swapping against time-shared memory.
 *
 * Each model is one or more profiled inference graphs of it at different
 * batch sizes (dfg-zoo NAME --inference --batch B | dfg-profile), its
 * variants.  One GPU runs one batch at a time, non-preemptively.  Requests
 * arrive as a Poisson process (rate split among the models by weight) and
 * queue per model; when the GPU is free it serves the model whose oldest
 * waiting request came first: q waiting requests run as the smallest variant
 * whose batch holds them (padded), or as many as the largest variant holds.
 *
 *   partitioned   memory is split into shares, one per model (in units of
 *                 memory / steps, the split searched); each model is planned
 *                 in its share (swapping whatever does not fit) and stays
 *                 there, so a batch takes its plan's time.
 *   time-shared   each model is planned in the whole memory; switching to a
 *                 model that did not run last reloads its resident
 *                 persistent tensors over the host link before the batch.
 * In both modes, a batch run as another variant than the model's previous
 * batch first loads the persistent bytes its plan keeps resident beyond the
 * previous variant's (resident sets taken as nested).
 *
 * serve_table_build plans every model at every share once; serve_eval then
 * simulates one arrival rate (the same arrivals for both modes and every
 * split: common random numbers) and searches the split with the lowest p99
 * latency (then mean).  Deterministic for a seed.
 */
#ifndef SWAPADVISOR_SERVE_H
#define SWAPADVISOR_SERVE_H

#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/sa_common.h"

typedef struct serve_opts {
    int64_t memory_bytes; /* the GPU's memory for all the models */
    int32_t steps;        /* split granularity: shares are multiples of memory / steps (>= 1) */
    const char *policy;   /* planner for every share (a sa_policy_table name) */
    sa_policy_opts plan;     /* its options (the search's generations, threads, seed) */
    int64_t requests;     /* arrivals simulated per rate (>= 1) */
    uint64_t seed;        /* arrivals */
} serve_opts;

/* Defaults: steps 16, policy "swapadvisor" with 5 generations on 1 thread,
 * 4000 requests, seed 1; memory_bytes 0 (the caller sets it). */
void serve_opts_default(serve_opts *o);

/* One model: its variants, ascending batch, at least one. */
typedef struct serve_model {
    const sa_dfg_graph *const *g;
    int32_t n;
    double weight; /* relative arrival rate; <= 0 means 1 */
} serve_model;

/* What planning gave, per model variant and share.  Variants are numbered
 * across models: model i has variants voff[i] .. voff[i + 1] - 1. */
typedef struct serve_table {
    int32_t k, steps, nv;
    int64_t memory_bytes;
    int32_t *voff;         /* [k + 1] */
    int64_t *batch;        /* [nv] */
    double *weight;        /* [k] relative arrival rates, summing to 1 */
    double *pass_us;       /* [nv * (steps + 1)]: index v * (steps + 1) + s = one batch of variant v in
                              s units of memory (s = 1..steps; [.. + 0] unused); INFINITY where no
                              plan fits; non-increasing in s (a plan for less memory fits more) */
    int64_t *res_bytes;    /* [nv * (steps + 1)]: persistent bytes resident at that plan's start */
    double *h2d_bytes_per_s, *latency_us; /* [nv] the variant's link */
    int32_t n_plans;       /* planner runs made (a graph pointer seen before is planned once) */
} serve_table;

/* Plans every variant of the k models (profiled, finalized graphs with a
 * batch; the device block gives the link) at every share.  On success *out is a
 * table the caller frees with serve_table_free.  SA_EUSAGE for bad options
 * (unknown policy, k < 1, a graph without op times or batch); SA_EINFEASIBLE
 * when some model fits in no share at all (err names it); SA_ENOMEM /
 * SA_EINTERNAL from planning.  On failure *out is NULL. */
sa_status serve_table_build(const serve_model *models, int32_t k, const serve_opts *o, serve_table **out,
                            sa_err *err);
void serve_table_free(serve_table *t);

typedef struct serve_stats {
    double p50_ms, p99_ms, mean_ms; /* request latency: completion - arrival */
    double throughput_rps;          /* requests served / (last completion - first arrival) */
    int64_t batches, switches;      /* batches run; of them, after another model's batch */
    double reload_ms;               /* time spent reloading persistent tensors */
} serve_stats;

typedef struct serve_point {
    double rate_rps;
    int32_t *split;       /* [k] units of memory per model (partitioned); the caller allocates */
    serve_stats part, shared;
    int64_t splits_tried; /* splits simulated (every split where each model has a plan) */
} serve_point;

/* Simulates o->requests arrivals at rate_rps requests per second in both
 * modes and searches the split.  pt->split must hold t->k entries.
 * SA_EINFEASIBLE when no split gives every model a share it plans in
 * (pt->split then zeroed, time-shared figures still filled); SA_EUSAGE for a
 * rate <= 0; SA_ENOMEM. */
sa_status serve_eval(const serve_table *t, double rate_rps, const serve_opts *o, serve_point *pt, sa_err *err);

/* Figure 8: p99 latency (log scale) against throughput for both modes over
 * the n points (in rate order).  On success *svg is a malloc'd document the
 * caller frees; SA_ENOMEM. */
sa_status serve_svg(const serve_point *pts, int32_t n, const char *title, char **svg, sa_err *err);

#endif
