/*
 * gpu.h - real measurements on a CUDA GPU (lib/cuda/gpu_*.cu), or a stand-in
 * that reports the build has no CUDA (lib/cuda/gpu_none.c, used when nvcc was not
 * found at build time).  Every function returns SA_EDEVICE with one line of
 * diagnosis when there is no usable GPU or a CUDA, cuDNN or cuBLAS call fails.
 *
 * The functions use CUDA device 0 of the process (CUDA_VISIBLE_DEVICES picks
 * it), plain cudaMalloc and pinned host memory, and free everything they
 * allocate before returning, on success and on failure.
 */
#ifndef SWAPADVISOR_GPU_H
#define SWAPADVISOR_GPU_H

#include "swapadvisor/devprof.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SA_OK when a CUDA device can be used; otherwise SA_EDEVICE with
 * "no CUDA device: <reason>" (or the no-CUDA-build message). */
sa_status gpu_available(sa_err *err);

/* Measures the host link with pinned memory and fills *dev: name (the CUDA
 * device name), memory_bytes (total device memory reported by CUDA),
 * h2d / d2h bandwidth each alone, duplex_bytes_per_s (both directions at once,
 * summed) and transfer_latency_us (a small copy's time less its bytes / rate). */
sa_status gpu_measure_links(sa_dfg_device *dev, sa_err *err);

/* Times every distinct op shape of g on the GPU (cuDNN for convolutions with
 * the fastest algorithm cudnnFind* reports, cuBLAS for matrix products, small
 * CUDA kernels for element-wise ops and reductions, a calibrated memory-bound
 * kernel where the graph lacks the geometry) and writes each op's time_us.
 * The device block of g is left alone (the caller sets it, see cost.h).
 *
 * *measured receives a new profile the caller owns (sa_devprof_free): the link
 * figures of gpu_measure_links, the achieved peak FLOP/s (cuBLAS GEMMs), memory
 * bandwidth (a copy kernel) and launch overhead, per-op-type efficiencies fitted
 * to the timings (types not in g keep base's efficiencies; base may be NULL),
 * and, as unknown fields, a "measurement" record with one entry per timed shape
 * (method, cuDNN algorithm and workspace bytes, fallbacks and why).
 * On failure g's times are left untouched and *measured is NULL. */
sa_status gpu_measure_graph(sa_dfg_graph *g, const sa_devprof *base, sa_devprof **measured, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
