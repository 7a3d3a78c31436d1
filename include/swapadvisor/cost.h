/*
 * cost.h - the analytic per-op cost model (a roofline with per-op-type efficiencies).
 *
 *   time_us = launch_overhead_us
 *           + 1e6 * max(flops / (peak(dtype) * eff.compute),
 *                       bytes_accessed / (memory_bandwidth * eff.memory))
 *
 * peak(dtype) is the profile's f16 peak when the op's first output tensor has a
 * half-precision dtype ("f16", "bf16", ...) and the profile has one, else the
 * f32 peak.  eff = sa_devprof_eff_for(profile, op type).  An op without flops
 * counts 0 FLOPs; one without bytes_accessed moves the bytes of its input and
 * output tensors (an in-place update counts its tensor twice: read and write).
 *
 * Nothing here allocates: the graph and the profile stay owned by the caller.
 */
#ifndef SWAPADVISOR_COST_H
#define SWAPADVISOR_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "devprof.h"
#include "dfg.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True for the half-precision dtype names ("f16", "bf16", "fp16", "float16",
 * "half", "bfloat16"; case-insensitive).  NULL is false. */
bool sa_cost_dtype_is_half(const char *dtype);

/* True when op's first output tensor is half precision (the f16 peak applies). */
bool sa_cost_op_is_half(const sa_dfg_graph *g, int32_t op);

/* FLOPs the model charges op: its "flops", or 0 when absent. */
double sa_cost_op_flops(const sa_dfg_graph *g, int32_t op);

/* Bytes the model charges op: its "bytes_accessed", or the sum of the bytes of
 * its input and output tensors when absent. */
double sa_cost_op_bytes(const sa_dfg_graph *g, int32_t op);

/* The peak FLOP/s that applies to op on p. */
double sa_cost_op_peak_flops(const sa_devprof *p, const sa_dfg_graph *g, int32_t op);

/* Modelled time of op (a valid id) on p, in microseconds. */
double sa_cost_op_time_us(const sa_devprof *p, const sa_dfg_graph *g, int32_t op);

/* Checks that p can drive the model (positive peak and bandwidth, a "default"
 * efficiency, every efficiency in (0, 1]); profiles built in code rather than
 * loaded go through the same rules.  The message names the profile. */
sa_status sa_cost_check_profile(const sa_devprof *p, sa_err *err);

/* Sets g's device block to dev, with memory_bytes replaced by memory_bytes
 * when that is > 0. */
void sa_cost_set_device(sa_dfg_graph *g, const sa_dfg_device *dev, int64_t memory_bytes);

/* Fills every op's time_us with sa_cost_op_time_us and sets the graph's device
 * block (has_device = true) to p's device, memory_bytes overridden when > 0. */
sa_status sa_cost_profile_graph(sa_dfg_graph *g, const sa_devprof *p, int64_t memory_bytes, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
