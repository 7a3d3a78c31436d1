/*
 * runner.h - replays a swap plan (docs/formats.md section 3) for real, iteration
 * after iteration, on one of two backends:
 *
 *   host  three threads stand in for the streams (compute, h2d, d2h), each
 *         running its nodes in plan order and waiting on its deps; a malloc'd
 *         arena stands in for device memory and memcpy for the transfers.
 *         Every op writes into its outputs a deterministic function of its
 *         inputs' bytes, so comparing against a reference run with unlimited
 *         memory proves the plan loses and corrupts nothing (SA_EVERIFY names
 *         the first tensor that differs).
 *   cuda  one cudaMalloc arena, pinned host copies, three CUDA streams with an
 *         event per node and cudaStreamWaitEvent per dependency; ops run as a
 *         calibrated kernel lasting about the op's time_us (or real cuBLAS
 *         GEMMs and element-wise kernels with real_ops).  Reports measured
 *         time per iteration beside the plan's prediction.
 *
 * sa_runner_run first checks the plan with sa_plan_validate(strict) and refuses an
 * invalid one (SA_EINVALID) unless opts.force; some defects make a replay
 * impossible even then (a dependency cycle, an id out of range, a placement
 * past the arena, a tensor used but never placed) and are refused always.
 *
 * docs/runner.md explains both backends and the byte scaling.
 *
 * Ownership: a sa_runner_report owns its arrays (sa_runner_report_free); a
 * sa_runner_layout owns its arrays (sa_runner_layout_free).  The plan and graph stay
 * owned by the caller and are only read.
 */
#ifndef SWAPADVISOR_RUNNER_H
#define SWAPADVISOR_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"
#include "validate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sa_runner_backend { SA_RUNNER_HOST, SA_RUNNER_CUDA } sa_runner_backend;

typedef struct sa_runner_opts {
    sa_runner_backend backend;
    int iterations;       /* >= 1 (0 = 2) */
    bool force;           /* replay a plan that fails strict validation */
    bool real_ops;        /* cuda: cuBLAS for matrix products, element-wise kernels for the rest */
    int64_t scale_bytes;  /* K >= 1 divides every size and offset; 0 = automatic (host: fit
                           * cap_bytes; cuda: 1) */
    int64_t cap_bytes;    /* host, automatic K: arena + host copies + reference run
                           * under this (0 = 1 GiB) */
    int32_t max_violation_lines; /* validation lines kept in the report (0 = 10) */
} sa_runner_opts;

void sa_runner_opts_default(sa_runner_opts *o);
const char *sa_runner_backend_name(sa_runner_backend b);          /* "host", "cuda" */
bool sa_runner_backend_from_name(const char *s, sa_runner_backend *out);

typedef struct sa_runner_report {
    sa_runner_backend backend;
    /* validation (both backends): valid is false only when forced past it */
    bool valid;
    sa_val_report violations;     /* the first max_violation_lines lines; n_violations counts all */
    /* the replayed layout */
    int32_t iterations;
    int64_t scale;             /* K */
    int64_t arena_bytes;       /* arena allocated (scaled) */
    int64_t host_bytes;        /* host copies allocated (scaled) */
    int64_t h2d_bytes, d2h_bytes;           /* moved per iteration (scaled bytes) */
    int64_t plan_h2d_bytes, plan_d2h_bytes; /* the same transfers in the plan's bytes */
    double *iter_us;           /* wall (host) or GPU-measured (cuda) time of each iteration */
    double predicted_us;       /* the plan's predicted.iteration_us */
    /* host backend: what the verification covered */
    int32_t verified_tensors;  /* distinct tensors checked (op outputs and persistent tensors) */
    int32_t verified_persistent;
    int64_t verified_checksums; /* op-output checksums compared, over all iterations */
    /* cuda backend */
    char device_name[128];
    double h2d_bytes_per_s, d2h_bytes_per_s; /* achieved in the last iteration (0: no transfers) */
    double cycles_per_us;      /* the calibrated spin rate */
    int32_t n_ops_cublas, n_ops_elementwise, n_ops_calibrated; /* per iteration, by how they ran */
} sa_runner_report;

void sa_runner_report_free(sa_runner_report *r);

/* Validates p against g (strict), then replays opts->iterations iterations on
 * opts->backend.  rep may be NULL.  Returns SA_OK when the replay ran (and, on
 * the host backend, verified); SA_EINVALID when the plan is refused (err holds
 * the first violation, rep->violations the first few); SA_EVERIFY when the
 * host replay's contents differ from the reference (err names the tensor);
 * SA_EDEVICE for CUDA failures and when there is no GPU ("no CUDA device: ...");
 * SA_EINFEASIBLE when the host replay does not fit opts->cap_bytes at the byte
 * scale asked for (or at any scale, when automatic); SA_EUSAGE for bad
 * options; SA_ENOMEM. */
sa_status sa_runner_run(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_opts *opts, sa_runner_report *rep, sa_err *err);

/* ---- the replay layout both backends share ---- */

/* Where every byte lives in a replay, sizes and offsets divided by K:
 *   bytes'(t)  = max(8, ceil(bytes(t) / K))                           (K > 1)
 *   x'         = floor(x / K) + 8 * rank(x)                           (K > 1)
 * for every address x that bounds a placement or a resident (offset and
 * offset + bytes, plus 0 and arena_bytes), rank(x) being x's index among those
 * addresses sorted and deduplicated.  The map is strictly increasing and
 * (o + b)' - o' >= floor(b / K) + 8 >= bytes'(t), so a scaled tensor always fits
 * inside the image of its range: ranges that were disjoint stay disjoint (a
 * valid plan stays valid) and ranges that start at the same address still
 * collide.  A partial overlap (only in a forced, invalid plan) may shrink away,
 * as the scaled tensor fills only the start of its range: K = 1 replays those
 * exactly.  K = 1 is the identity (an arena of exactly arena_bytes). */
typedef struct sa_runner_layout {
    int64_t scale;        /* K */
    int64_t arena_bytes;  /* scaled arena */
    int64_t host_bytes;   /* host copies, one per tensor that has one */
    int64_t *tbytes;      /* per tensor: scaled bytes */
    int64_t *host_off;    /* per tensor: offset of its host copy, -1 = none (needs none) */
    int64_t *place_off;   /* per placement: scaled offset */
    int64_t *res_off;     /* per resident_at_start entry: scaled offset */
    /* per node: the scaled arena offset of each tensor it touches: compute and
     * recompute nodes list their op's inputs then outputs
     * (use[use_off[n] .. + n_in + n_out)), swaps their one tensor */
    int32_t *use_off;
    int64_t *use;
    int32_t *order;       /* the nodes in a topological order of stream order + deps */
} sa_runner_layout;

/* Checks that p can be replayed at all (ids in range, no dependency cycle,
 * every tensor a node touches placed, every placement inside arena_bytes),
 * resolves which placement each node uses (by the plan's simulated timing, as
 * the validator does) and scales by K (>= 1).  SA_EINVALID when p cannot be
 * replayed; SA_EUSAGE for K < 1. */
sa_status sa_runner_layout_build(const sa_plan *p, const sa_dfg_graph *g, int64_t scale, sa_runner_layout *out, sa_err *err);
void sa_runner_layout_free(sa_runner_layout *l);

/* The smallest K (a power of two) for which the host backend's memory (arena,
 * host copies, reference buffers) fits in cap bytes.  SA_EINFEASIBLE when not
 * even the largest K does (the per-tensor minimum of 8 bytes adds up). */
sa_status sa_runner_auto_scale(const sa_plan *p, const sa_dfg_graph *g, int64_t cap, int64_t *scale, sa_err *err);

/* Host memory the host backend needs at scale K (arena + host copies +
 * reference buffers), or -1 when p cannot be laid out. */
int64_t sa_runner_host_footprint(const sa_plan *p, const sa_dfg_graph *g, int64_t scale);

/* ---- the backends (sa_runner_run calls them after validating) ---- */

/* rep must be zeroed by the caller beforehand (sa_runner_run does it). */
sa_status sa_runner_host_replay(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_layout *l, const sa_runner_opts *o,
                             sa_runner_report *rep, sa_err *err);
sa_status sa_runner_cuda_replay(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_layout *l, const sa_runner_opts *o,
                             sa_runner_report *rep, sa_err *err);


#ifdef __cplusplus
}
#endif

#endif
