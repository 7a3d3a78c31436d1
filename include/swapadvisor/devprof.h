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
 * Ownership: a devprof owns its arrays and strings; free with devprof_free().
 */
#ifndef DEVPROF_H
#define DEVPROF_H

#include <stdbool.h>

#include "dfg.h"
#include "sa_common.h"

typedef struct devprof_eff {
    char *type;       /* op type, or "default" */
    double compute;   /* fraction of peak FLOP/s reached, (0, 1] */
    double memory;    /* fraction of memory bandwidth reached, (0, 1] */
} devprof_eff;

typedef struct devprof {
    dfg_device dev;
    double peak_flops_f32;
    double peak_flops_f16;        /* 0 when absent: f16 runs at f32 rate */
    double mem_bytes_per_s;
    double launch_us;
    int32_t n_eff;
    devprof_eff *eff;             /* eff[0] is "default" */
    char *extra_json;
} devprof;

/* Parses / loads a profile; *out is owned by the caller. */
sa_status devprof_parse(const char *text, size_t len, const char *source, devprof **out, sa_err *err);
sa_status devprof_load_file(const char *path, devprof **out, sa_err *err);

/* Serializes (unknown fields kept); *out malloc'd, caller frees. */
sa_status devprof_to_json(const devprof *p, char **out, sa_err *err);
sa_status devprof_write_file(const devprof *p, const char *path, sa_err *err);

/* Efficiency entry for an op type (falls back to "default"). Points into p. */
const devprof_eff *devprof_eff_for(const devprof *p, const char *type);

/* Sets (adds or replaces) the efficiency of a type. Returns false on OOM. */
bool devprof_set_eff(devprof *p, const char *type, double compute, double memory);

void devprof_free(devprof *p);

#endif
