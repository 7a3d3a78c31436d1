/*
 * devprof.h - device profiles (the JSON files in profiles/, "format": "device-profile").
 *
 * A profile holds the device block of docs/formats.md section 2 plus the figures the
 * analytic cost model needs.  Layout of the document:
 *
 *   {"format": "device-profile", "version": 1,
 *    "name": ..., "memory_bytes": ..., "h2d_bytes_per_s": ..., "d2h_bytes_per_s": ...,
 *    "duplex_bytes_per_s": ..., "transfer_latency_us": ...,
 *    "peak_flops": {"f32": 14.0e12, "f16": 112e12},
 *    "memory_bandwidth_bytes_per_s": 900e9,
 *    "launch_overhead_us": 5.0,
 *    "efficiency": {"default": {"compute": 0.5, "memory": 0.7}, "conv2d": {...}, ...},
 *    ...unknown fields (sources, notes) are kept}
 *
 * Ownership: a devprof owns its arrays and strings; free with sa_devprof_free().
 */
#ifndef SWAPADVISOR_DEVPROF_H
#define SWAPADVISOR_DEVPROF_H

#include <stdbool.h>

#include "dfg.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sa_devprof_eff {
    char *type;       /* op type, or "default" */
    double compute;   /* fraction of peak FLOP/s reached, (0, 1] */
    double memory;    /* fraction of memory bandwidth reached, (0, 1] */
} sa_devprof_eff;

typedef struct sa_devprof {
    sa_dfg_device dev;
    double peak_flops_f32;
    double peak_flops_f16;        /* 0 when absent: f16 runs at f32 rate */
    double mem_bytes_per_s;
    double launch_us;
    int32_t n_eff;
    sa_devprof_eff *eff;             /* eff[0] is "default" */
    char *extra_json;
} sa_devprof;

/* Parses / loads a profile; *out is owned by the caller. */
sa_status sa_devprof_parse(const char *text, size_t len, const char *source, sa_devprof **out, sa_err *err);
sa_status sa_devprof_load_file(const char *path, sa_devprof **out, sa_err *err);

/* Serializes (unknown fields kept); *out malloc'd, caller frees. */
sa_status sa_devprof_to_json(const sa_devprof *p, char **out, sa_err *err);
sa_status sa_devprof_write_file(const sa_devprof *p, const char *path, sa_err *err);

/* Efficiency entry for an op type (falls back to "default"). Points into p. */
const sa_devprof_eff *sa_devprof_eff_for(const sa_devprof *p, const char *type);

/* Sets (adds or replaces) the efficiency of a type. Returns false on OOM. */
bool sa_devprof_set_eff(sa_devprof *p, const char *type, double compute, double memory);

void sa_devprof_free(sa_devprof *p);

#ifdef __cplusplus
}
#endif

#endif
