/*
 * gpu_measure.cu - real timings on a CUDA GPU behind the C API of gpu.h.
 *
 * Every distinct op shape of a graph is run for real: cuDNN convolutions with
 * the fastest algorithm cudnnFind*Ex reports (within the op's workspace), cuBLAS
 * GEMMs for matrix products, and small kernels written here for element-wise
 * ops, reductions, pooling, embeddings and copies.  Where the graph lacks the
 * geometry an op needs, a calibrated memory-bound kernel moving the op's bytes
 * stands in (or, for ops with FLOPs, a GEMM of equal FLOPs), and the measured
 * profile says so per shape.
 *
 * Error policy: a CUDA, cuDNN or cuBLAS failure that means the device or this
 * code is broken aborts with SA_EDEVICE; a failure that only means "this method
 * cannot time this shape" (out of device memory, cuDNN not supporting a
 * geometry) falls back to the next method.  Every resource lives in an RAII
 * holder, so every return path frees what was allocated.  No exception leaves
 * this file: the C entry points catch std::bad_alloc and report SA_ENOMEM.
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <cjson/cJSON.h>
#include <strings.h>

extern "C" {
#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/gpu.h"
#include "model/json_util.h"
}

namespace {

/* ------------------------------------------------------------------------- */
/* results and error classification                                          */

enum Rc { RC_OK = 0, RC_SOFT, RC_HARD };

struct Ctx;
Rc cuda_rc(Ctx &c, cudaError_t e, const char *what);
Rc dnn_rc(Ctx &c, cudnnStatus_t s, const char *what);
Rc blas_rc(Ctx &c, cublasStatus_t s, const char *what);

#define CK_CUDA(c, call)                                                                                           \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return cuda_rc((c), e_, #call);                                                                        \
    } while (0)
#define CK_DNN(c, call)                                                                                            \
    do {                                                                                                           \
        cudnnStatus_t s_ = (call);                                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                                            \
            return dnn_rc((c), s_, #call);                                                                         \
    } while (0)
#define CK_BLAS(c, call)                                                                                           \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return blas_rc((c), s_, #call);                                                                        \
    } while (0)
#define CK_RC(expr)                                                                                                \
    do {                                                                                                           \
        Rc r_ = (expr);                                                                                            \
        if (r_ != RC_OK)                                                                                           \
            return r_;                                                                                             \
    } while (0)

/* Short name of a CUDA API call for messages: the text before its '('. */
std::string call_name(const char *what)
{
    const char *p = strchr(what, '(');
    return p ? std::string(what, (size_t)(p - what)) : std::string(what);
}

/* ------------------------------------------------------------------------- */
/* dtypes                                                                    */

enum Dt { DT_F32, DT_F16, DT_BF16, DT_F64 };

Dt dt_from_name(const char *s)
{
    if (!s)
        return DT_F32;
    if (strcasecmp(s, "bf16") == 0 || strcasecmp(s, "bfloat16") == 0)
        return DT_BF16;
    if (cost_dtype_is_half(s))
        return DT_F16;
    if (strcasecmp(s, "f64") == 0 || strcasecmp(s, "float64") == 0 || strcasecmp(s, "double") == 0)
        return DT_F64;
    return DT_F32;
}
size_t dt_size(Dt d) { return d == DT_F64 ? 8 : d == DT_F32 ? 4 : 2; }
const char *dt_name(Dt d) { return d == DT_F64 ? "f64" : d == DT_F32 ? "f32" : d == DT_F16 ? "f16" : "bf16"; }
bool dt_half(Dt d) { return d == DT_F16 || d == DT_BF16; }

/* ------------------------------------------------------------------------- */
/* kernels                                                                   */

__device__ __forceinline__ uint32_t hash32(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}
__device__ __forceinline__ float rnd(uint64_t i, uint32_t seed) { return (float)(hash32(i * 2654435761ULL + seed) >> 8) * (2.0f / 16777216.0f) - 1.0f; }

__device__ __forceinline__ void st_val(float *p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st_val(double *p, size_t i, float v) { p[i] = (double)v; }
__device__ __forceinline__ void st_val(__half *p, size_t i, float v) { p[i] = __float2half(v); }
__device__ __forceinline__ void st_val(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ float ld_val(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float ld_val(const __half *p, size_t i) { return __half2float(p[i]); }

/* Values in [-1, 1): realistic operands (no NaN or Inf) for every timing. */
template <class T> __global__ void k_fill(T *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        st_val(p, i, rnd(i, seed));
}

__global__ void k_fill_ids(int32_t *p, size_t n, uint32_t vocab)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (int32_t)(hash32(i + 77) % vocab);
}

__global__ void k_empty() {}

/* Streams rn 16-byte units in and wn units out: the calibrated memory-bound
 * stand-in for an op whose geometry is unknown, and the bandwidth probe. */
__global__ void k_mem(const uint4 *src, size_t rn, uint4 *dst, size_t wn, uint32_t *sink)
{
    size_t n = rn > wn ? rn : wn;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = make_uint4(0, 0, 0, 0);
        if (i < rn)
            v = src[i];
        if (i < wn)
            dst[i] = make_uint4(v.x ^ 1u, v.y, v.z, v.w);
        else if (v.x == 0x7fc00001u) /* keeps the read alive; never true for filled data */
            sink[0] = v.y;
    }
}

enum Flav { FLAV_PLAIN, FLAV_TANH, FLAV_OPT };

struct EwArgs {
    const uint4 *in[8];
    size_t len_in[8]; /* in 16-byte units; reads wrap (broadcast) */
    uint4 *out[8];
    size_t len_out[8];
    int nin, nout;
    size_t n;
};

template <int FLAV> __device__ __forceinline__ float ew_f(float v)
{
    if (FLAV == FLAV_TANH)
        return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    if (FLAV == FLAV_OPT)
        return v - 1e-3f * v / (sqrtf(fabsf(v)) + 1e-8f);
    return fmaxf(v, 0.0f) + 1e-3f * v;
}

/* Element-wise op over 16-byte units (4 floats or 8 halves per unit), reading
 * every input and writing every output once, like a fused framework kernel. */
template <int FLAV, bool HALF> __global__ void k_ew(EwArgs a)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < a.n; i += (size_t)gridDim.x * blockDim.x) {
        float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int j = 0; j < a.nin; j++) {
            uint4 u = a.in[j][i % a.len_in[j]];
            uint32_t w[4] = {u.x, u.y, u.z, u.w};
            for (int q = 0; q < 4; q++) {
                if (HALF) {
                    __half2 h = *reinterpret_cast<__half2 *>(&w[q]);
                    float2 f = __half22float2(h);
                    v[2 * q] += f.x;
                    v[2 * q + 1] += f.y;
                } else {
                    v[q] += __uint_as_float(w[q]);
                }
            }
        }
        uint32_t w[4];
        for (int q = 0; q < 4; q++) {
            if (HALF) {
                __half2 h = __floats2half2_rn(ew_f<FLAV>(v[2 * q]), ew_f<FLAV>(v[2 * q + 1]));
                w[q] = *reinterpret_cast<uint32_t *>(&h);
            } else {
                w[q] = __float_as_uint(ew_f<FLAV>(v[q]));
            }
        }
        for (int k = 0; k < a.nout; k++)
            if (i < a.len_out[k])
                a.out[k][i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

struct RowArgs {
    const void *in[8];
    size_t len_in[8]; /* elements; reads wrap (gamma, beta, labels broadcast) */
    void *out[8];
    size_t len_out[8];
    int nin, nout;
    size_t rows, cols;
};

/* Row-wise reduction + normalisation (softmax, layernorm, softmax_xent and
 * their backward passes): one warp per row, two passes over the row like the
 * framework kernels (statistics, then the normalised output). */
template <class T> __global__ void k_rows(RowArgs a)
{
    const int lane = threadIdx.x & 31;
    size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5;
    size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
    for (size_t r = warp; r < a.rows; r += nwarps) {
        float s = 0, mx = -3.0e38f;
        for (size_t c = lane; c < a.cols; c += 32) {
            size_t i = r * a.cols + c;
            for (int j = 0; j < a.nin; j++) {
                float v = ld_val((const T *)a.in[j], i % a.len_in[j]);
                s += v;
                mx = fmaxf(mx, v);
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        }
        for (size_t c = lane; c < a.cols; c += 32) {
            size_t i = r * a.cols + c;
            float v = 0;
            for (int j = 0; j < a.nin; j++)
                v += ld_val((const T *)a.in[j], i % a.len_in[j]);
            float o = __expf(v - mx) / (fabsf(s) + 1.0f);
            for (int k = 0; k < a.nout; k++)
                if (i < a.len_out[k])
                    st_val((T *)a.out[k], i, o);
        }
    }
}

/* Per-channel sums over N x HW (batchnorm statistics; backward: sums of dy and
 * dy * x), accumulated per block then atomically, as cuDNN's two-stage kernels do. */
template <class T> __global__ void k_bn_stats(const T *x, const T *y, size_t n, size_t ch, size_t hw, float *stats)
{
    __shared__ float sh[2][256];
    size_t c = blockIdx.y, per = n * hw;
    float s = 0, s2 = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < per; j += (size_t)gridDim.x * blockDim.x) {
        size_t idx = (j / hw) * ch * hw + c * hw + j % hw;
        float v = ld_val(x, idx);
        float w = y ? ld_val(y, idx) : v;
        s += v;
        s2 += v * w;
    }
    sh[0][threadIdx.x] = s;
    sh[1][threadIdx.x] = s2;
    __syncthreads();
    for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) {
            sh[0][threadIdx.x] += sh[0][threadIdx.x + o];
            sh[1][threadIdx.x] += sh[1][threadIdx.x + o];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicAdd(&stats[2 * c], sh[0][0]);
        atomicAdd(&stats[2 * c + 1], sh[1][0]);
    }
}

struct PoolGeo {
    int n, c, h, w, p, q, r, s, sh, sw, ph, pw;
};

template <class T> __global__ void k_pool_fwd(const T *x, T *y, PoolGeo g)
{
    size_t total = (size_t)g.n * g.c * g.p * g.q;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int q = (int)(i % g.q), p = (int)(i / g.q % g.p);
        size_t nc = i / ((size_t)g.p * g.q);
        const size_t base = nc * g.h * g.w;
        float m = -3.0e38f;
        for (int a = 0; a < g.r; a++) {
            int hh = p * g.sh - g.ph + a;
            if (hh < 0 || hh >= g.h)
                continue;
            for (int b = 0; b < g.s; b++) {
                int ww = q * g.sw - g.pw + b;
                if (ww >= 0 && ww < g.w)
                    m = fmaxf(m, ld_val(x, base + (size_t)hh * g.w + ww));
            }
        }
        st_val(y, i, m);
    }
}

/* Gathers, for every input position, the output gradients whose window covers
 * it (reading x once, as max-pooling's backward must). */
template <class T> __global__ void k_pool_bwd(const T *dy, const T *x, T *dx, PoolGeo g)
{
    size_t total = (size_t)g.n * g.c * g.h * g.w;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        int w = (int)(i % g.w), h = (int)(i / g.w % g.h);
        size_t nc = i / ((size_t)g.h * g.w);
        int p0 = h + g.ph < g.r ? 0 : (h + g.ph - g.r) / g.sh + 1, p1 = min((h + g.ph) / g.sh + 1, g.p);
        int q0 = w + g.pw < g.s ? 0 : (w + g.pw - g.s) / g.sw + 1, q1 = min((w + g.pw) / g.sw + 1, g.q);
        float acc = 0;
        for (int p = p0; p < p1; p++)
            for (int q = q0; q < q1; q++)
                acc += ld_val(dy, nc * g.p * g.q + (size_t)p * g.q + q);
        float xv = x ? ld_val(x, i) : 1.0f;
        st_val(dx, i, xv > 0 ? acc : 0.5f * acc);
    }
}

template <class T> __global__ void k_embed(const T *table, const int32_t *ids, T *y, size_t rows, size_t dim)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows * dim; i += (size_t)gridDim.x * blockDim.x)
        y[i] = table[(size_t)ids[i / dim] * dim + i % dim];
}

template <class T> __global__ void k_embed_bwd(const T *dy, const int32_t *ids, T *dtable, size_t rows, size_t dim)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows * dim; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&dtable[(size_t)ids[i / dim] * dim + i % dim], dy[i]);
}

/* ------------------------------------------------------------------------- */
/* RAII holders                                                              */

struct DevBuf {
    void *p = nullptr;
    size_t cap = 0;
};

struct Ctx {
    sa_err *err = nullptr;
    std::string note; /* why the last RC_SOFT happened */
    cudaDeviceProp prop{};
    cudaStream_t s = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cublasHandle_t blas = nullptr;
    cudnnHandle_t dnn = nullptr;
    static const int NBUF = 16;
    DevBuf buf[NBUF];
    uint32_t seed = 1;

    ~Ctx()
    {
        /* Teardown: errors here cannot be acted upon, and an earlier failure is
         * already being reported. */
        for (auto &b : buf)
            if (b.p)
                cudaFree(b.p);
        if (dnn)
            cudnnDestroy(dnn);
        if (blas)
            cublasDestroy(blas);
        if (e0)
            cudaEventDestroy(e0);
        if (e1)
            cudaEventDestroy(e1);
        if (s)
            cudaStreamDestroy(s);
    }

    unsigned grid_for(size_t n, unsigned block = 256) const
    {
        size_t want = (n + block - 1) / block;
        size_t cap = (size_t)std::max(prop.multiProcessorCount, 1) * 32;
        return (unsigned)std::max<size_t>(1, std::min(want, cap));
    }
};

Rc cuda_rc(Ctx &c, cudaError_t e, const char *what)
{
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* not sticky: clear it so later calls do not see it */
        c.note = "out of device memory in " + call_name(what);
        return RC_SOFT;
    }
    sa_fail(c.err, SA_EDEVICE, "CUDA error in %s: %s", call_name(what).c_str(), cudaGetErrorString(e));
    return RC_HARD;
}

Rc dnn_rc(Ctx &c, cudnnStatus_t s, const char *what)
{
    int cat = (int)s / 1000 * 1000;
    if (cat == CUDNN_STATUS_BAD_PARAM || cat == CUDNN_STATUS_NOT_SUPPORTED ||
        s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
        cudaGetLastError();
        c.note = "cuDNN " + call_name(what) + ": " + cudnnGetErrorString(s);
        return RC_SOFT;
    }
    sa_fail(c.err, SA_EDEVICE, "cuDNN error in %s: %s", call_name(what).c_str(), cudnnGetErrorString(s));
    return RC_HARD;
}

Rc blas_rc(Ctx &c, cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE || s == CUBLAS_STATUS_ALLOC_FAILED) {
        cudaGetLastError();
        c.note = "cuBLAS " + call_name(what) + ": " + cublasGetStatusString(s);
        return RC_SOFT;
    }
    sa_fail(c.err, SA_EDEVICE, "cuBLAS error in %s: %s", call_name(what).c_str(), cublasGetStatusString(s));
    return RC_HARD;
}

Rc ctx_init(Ctx &c, sa_err *err)
{
    c.err = err;
    CK_CUDA(c, cudaSetDevice(0));
    CK_CUDA(c, cudaGetDeviceProperties(&c.prop, 0));
    CK_CUDA(c, cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
    CK_CUDA(c, cudaEventCreate(&c.e0));
    CK_CUDA(c, cudaEventCreate(&c.e1));
    CK_BLAS(c, cublasCreate(&c.blas));
    CK_BLAS(c, cublasSetStream(c.blas, c.s));
    CK_DNN(c, cudnnCreate(&c.dnn));
    CK_DNN(c, cudnnSetStream(c.dnn, c.s));
    return RC_OK;
}

/* Makes buffers idx[0..n) at least sizes[i] bytes.  On out-of-memory it drops
 * every cached buffer and tries the exact sizes once more. */
Rc ensure(Ctx &c, const int *idx, const size_t *sizes, int n)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        bool oom = false;
        for (int i = 0; i < n && !oom; i++) {
            DevBuf &b = c.buf[idx[i]];
            size_t want = std::max<size_t>(sizes[i], 16);
            want = (want + 255) / 256 * 256;
            if (b.cap >= want)
                continue;
            if (b.p) {
                CK_CUDA(c, cudaFree(b.p));
                b.p = nullptr;
                b.cap = 0;
            }
            cudaError_t e = cudaMalloc(&b.p, want);
            if (e == cudaErrorMemoryAllocation) {
                cudaGetLastError();
                b.p = nullptr;
                oom = true;
            } else if (e != cudaSuccess) {
                b.p = nullptr;
                return cuda_rc(c, e, "cudaMalloc");
            } else {
                b.cap = want;
            }
        }
        if (!oom)
            return RC_OK;
        for (auto &b : c.buf)
            if (b.p) {
                CK_CUDA(c, cudaFree(b.p));
                b.p = nullptr;
                b.cap = 0;
            }
    }
    c.note = "out of device memory for the op's buffers";
    return RC_SOFT;
}

Rc launched(Ctx &c, const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return cuda_rc(c, e, what);
    return RC_OK;
}

Rc fill(Ctx &c, void *p, size_t bytes, Dt dt)
{
    uint32_t seed = c.seed++;
    switch (dt) {
    case DT_F64: {
        size_t n = bytes / 8;
        k_fill<double><<<c.grid_for(n), 256, 0, c.s>>>((double *)p, n, seed);
        break;
    }
    case DT_F16: {
        size_t n = bytes / 2;
        k_fill<__half><<<c.grid_for(n), 256, 0, c.s>>>((__half *)p, n, seed);
        break;
    }
    case DT_BF16: {
        size_t n = bytes / 2;
        k_fill<__nv_bfloat16><<<c.grid_for(n), 256, 0, c.s>>>((__nv_bfloat16 *)p, n, seed);
        break;
    }
    default: {
        size_t n = bytes / 4;
        k_fill<float><<<c.grid_for(n), 256, 0, c.s>>>((float *)p, n, seed);
        break;
    }
    }
    return launched(c, "k_fill");
}

/* Times run() (which enqueues one execution on c.s): a warm-up, a probe that
 * sizes the batch to about 2 ms, then the best of two batches, per execution. */
template <class F> Rc time_it(Ctx &c, F &&run, double *us)
{
    CK_RC(run());
    CK_CUDA(c, cudaStreamSynchronize(c.s));
    CK_CUDA(c, cudaEventRecord(c.e0, c.s));
    CK_RC(run());
    CK_CUDA(c, cudaEventRecord(c.e1, c.s));
    CK_CUDA(c, cudaEventSynchronize(c.e1));
    float ms = 0;
    CK_CUDA(c, cudaEventElapsedTime(&ms, c.e0, c.e1));
    int reps = (int)std::min(200.0, std::max(3.0, std::ceil(2.0 / std::max((double)ms, 1e-4))));
    double best = 1e300;
    for (int b = 0; b < 2; b++) {
        CK_CUDA(c, cudaEventRecord(c.e0, c.s));
        for (int i = 0; i < reps; i++)
            CK_RC(run());
        CK_CUDA(c, cudaEventRecord(c.e1, c.s));
        CK_CUDA(c, cudaEventSynchronize(c.e1));
        CK_CUDA(c, cudaEventElapsedTime(&ms, c.e0, c.e1));
        best = std::min(best, 1000.0 * ms / reps);
    }
    *us = std::max(best, 0.01);
    return RC_OK;
}

/* ------------------------------------------------------------------------- */
/* basic timed building blocks                                               */

/* The calibrated memory-bound kernel: reads rbytes, writes wbytes. */
Rc time_mem(Ctx &c, size_t rbytes, size_t wbytes, double *us)
{
    size_t rn = (rbytes + 15) / 16, wn = (wbytes + 15) / 16;
    int idx[3] = {0, 1, 2};
    size_t sz[3] = {rn * 16, wn * 16, 64};
    CK_RC(ensure(c, idx, sz, 3));
    CK_RC(fill(c, c.buf[0].p, rn * 16, DT_F32));
    const uint4 *src = (const uint4 *)c.buf[0].p;
    uint4 *dst = (uint4 *)c.buf[1].p;
    uint32_t *sink = (uint32_t *)c.buf[2].p;
    unsigned grid = c.grid_for(std::max(rn, wn));
    return time_it(
        c,
        [&]() -> Rc {
            k_mem<<<grid, 256, 0, c.s>>>(src, rn, dst, wn, sink);
            return launched(c, "k_mem");
        },
        us);
}

struct Gemm {
    long long batch, m, n, k;
};

Rc time_gemms(Ctx &c, Dt dt, const std::vector<Gemm> &gs, double *us)
{
    const long long imax = 2147483647LL;
    size_t es = dt_size(dt);
    size_t sa = 0, sb = 0, sc = 0;
    for (const Gemm &g : gs) {
        if (g.m < 1 || g.n < 1 || g.k < 1 || g.batch < 1 || g.m > imax || g.n > imax || g.k > imax ||
            g.batch > imax) {
            c.note = "GEMM dimensions out of cuBLAS's int range";
            return RC_SOFT;
        }
        sa = std::max(sa, (size_t)(g.batch * g.m * g.k) * es);
        sb = std::max(sb, (size_t)(g.batch * g.k * g.n) * es);
        sc = std::max(sc, (size_t)(g.batch * g.m * g.n) * es);
    }
    int idx[3] = {0, 1, 2};
    size_t sz[3] = {sa, sb, sc};
    CK_RC(ensure(c, idx, sz, 3));
    CK_RC(fill(c, c.buf[0].p, sa, dt));
    CK_RC(fill(c, c.buf[1].p, sb, dt));
    cudaDataType_t ty = dt == DT_F64 ? CUDA_R_64F : dt == DT_F16 ? CUDA_R_16F : dt == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t ct = dt == DT_F64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const float fa = 1.0f, fb = 0.0f;
    const double da = 1.0, db = 0.0;
    const void *alpha = dt == DT_F64 ? (const void *)&da : (const void *)&fa;
    const void *beta = dt == DT_F64 ? (const void *)&db : (const void *)&fb;
    void *A = c.buf[0].p, *B = c.buf[1].p, *C = c.buf[2].p;
    return time_it(
        c,
        [&]() -> Rc {
            for (const Gemm &g : gs) {
                int m = (int)g.m, n = (int)g.n, k = (int)g.k;
                if (g.batch == 1)
                    CK_BLAS(c, cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, ty, m, B, ty, k, beta,
                                            C, ty, m, ct, CUBLAS_GEMM_DEFAULT));
                else
                    CK_BLAS(c, cublasGemmStridedBatchedEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, ty, m,
                                                          (long long)m * k, B, ty, k, (long long)k * n, beta, C, ty, m,
                                                          (long long)m * n, (int)g.batch, ct, CUBLAS_GEMM_DEFAULT));
            }
            return RC_OK;
        },
        us);
}

/* A GEMM with the op's FLOPs: m = rows when known, the rest square. */
Gemm gemm_equivalent(double flops, long long rows)
{
    auto r8 = [](double v) -> long long {
        long long x = (long long)std::llround(std::max(v, 1.0));
        return x > 8 ? (x + 7) / 8 * 8 : x;
    };
    Gemm g{1, 1, 1, 1};
    if (rows > 0) {
        g.m = rows;
        g.n = g.k = r8(std::sqrt(flops / (2.0 * (double)rows)));
    } else {
        g.m = g.n = g.k = r8(std::cbrt(flops / 2.0));
    }
    return g;
}

/* ------------------------------------------------------------------------- */
/* reading an op's geometry from the graph                                   */

struct Extras {
    int kh = -1, kw = -1, sh = -1, sw = -1, ph = -1, pw = -1, dh = 1, dw = 1, groups = -1;
};

void get_pair(const cJSON *o, std::initializer_list<const char *> names, int *a, int *b)
{
    for (const char *nm : names) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, nm);
        if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e6) {
            *a = *b = (int)v->valuedouble;
            return;
        }
        if (cJSON_IsArray(v)) {
            const cJSON *x = v->child, *y = x ? x->next : nullptr;
            if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 1e6) {
                *a = (int)x->valuedouble;
                *b = cJSON_IsNumber(y) && y->valuedouble >= 0 && y->valuedouble < 1e6 ? (int)y->valuedouble : *a;
                return;
            }
        }
    }
}

Extras parse_extras(const char *json)
{
    Extras e;
    if (!json)
        return e;
    cJSON *o = cJSON_Parse(json);
    if (!o)
        return e;
    get_pair(o, {"kernel", "kernel_size", "window", "ksize"}, &e.kh, &e.kw);
    get_pair(o, {"stride", "strides"}, &e.sh, &e.sw);
    get_pair(o, {"pad", "padding", "pads"}, &e.ph, &e.pw);
    get_pair(o, {"dilation", "dilate", "dilations"}, &e.dh, &e.dw);
    int g2 = -1;
    get_pair(o, {"groups", "group", "num_group"}, &e.groups, &g2);
    if (e.dh < 1)
        e.dh = 1;
    if (e.dw < 1)
        e.dw = 1;
    cJSON_Delete(o);
    return e;
}

long long numel(const dfg_tensor *t)
{
    if (t->ndim <= 0)
        return -1;
    long long n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] <= 0 || (double)n * (double)t->shape[i] > 9e15)
            return -1;
        n *= t->shape[i];
    }
    return n;
}

/* Solves one spatial dimension: out = (in + 2 pad - ((k - 1) d + 1)) / stride + 1
 * for stride and pad (each given when >= 0), smallest stride then pad first. */
bool solve_dim(long long in, long long k, long long out, int d, int sg, int pg, int *stride, int *pad)
{
    long long keff = (k - 1) * d + 1;
    long long s_lo = sg > 0 ? sg : 1, s_hi = sg > 0 ? sg : std::max(1LL, in);
    for (long long s = s_lo; s <= s_hi; s++) {
        long long p_lo = pg >= 0 ? pg : 0, p_hi = pg >= 0 ? pg : keff;
        for (long long p = p_lo; p <= p_hi; p++) {
            if (in + 2 * p < keff)
                continue;
            if ((in + 2 * p - keff) / s + 1 == out) {
                *stride = (int)s;
                *pad = (int)p;
                return true;
            }
        }
    }
    return false;
}

struct ConvGeo {
    int n, c, h, w, k, cpg, r, s, p, q, sh, sw, ph, pw, dh, dw, groups;
};

bool fits_int(const dfg_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 1 || t->shape[i] > 2147483647LL)
            return false;
    return true;
}

bool conv_fit(const dfg_tensor *x, const dfg_tensor *w, const dfg_tensor *y, const Extras &e, ConvGeo *g)
{
    if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4 || !fits_int(x) || !fits_int(w) || !fits_int(y))
        return false;
    const int64_t *X = x->shape, *W = w->shape, *Y = y->shape;
    if (X[0] != Y[0] || W[0] != Y[1] || X[1] % W[1] != 0)
        return false;
    long long groups = X[1] / W[1];
    if (groups < 1 || W[0] % groups != 0 || (e.groups > 0 && e.groups != groups))
        return false;
    if ((e.kh > 0 && e.kh != W[2]) || (e.kw > 0 && e.kw != W[3]))
        return false;
    ConvGeo r{};
    if (!solve_dim(X[2], W[2], Y[2], e.dh, e.sh, e.ph, &r.sh, &r.ph) ||
        !solve_dim(X[3], W[3], Y[3], e.dw, e.sw, e.pw, &r.sw, &r.pw))
        return false;
    r.n = (int)X[0];
    r.c = (int)X[1];
    r.h = (int)X[2];
    r.w = (int)X[3];
    r.k = (int)W[0];
    r.cpg = (int)W[1];
    r.r = (int)W[2];
    r.s = (int)W[3];
    r.p = (int)Y[2];
    r.q = (int)Y[3];
    r.dh = e.dh;
    r.dw = e.dw;
    r.groups = (int)groups;
    *g = r;
    return true;
}

struct OpView {
    const dfg_graph *g;
    const dfg_op *op;
    std::vector<const dfg_tensor *> in, out; /* outputs without workspaces */
    long long ws_bytes = 0;                  /* the op's workspace tensors */
    Dt dt = DT_F32;
    Extras ex;
};

OpView view_of(const dfg_graph *g, int32_t o)
{
    OpView v;
    v.g = g;
    v.op = &g->ops[o];
    for (int i = 0; i < v.op->n_in; i++)
        v.in.push_back(&g->tensors[v.op->in[i]]);
    for (int i = 0; i < v.op->n_out; i++) {
        const dfg_tensor *t = &g->tensors[v.op->out[i]];
        if (t->kind == DFG_WORKSPACE)
            v.ws_bytes += t->bytes;
        else
            v.out.push_back(t);
    }
    v.dt = v.op->n_out > 0 ? dt_from_name(g->tensors[v.op->out[0]].dtype) : DT_F32;
    v.ex = parse_extras(v.op->extra_json);
    return v;
}

/* Finds (x, w, y) roles for a convolution op among its 4-D tensors.  Several
 * assignments can fit (a valid 3x3 convolution read backwards is a padded
 * one): the op's FLOPs pick among them, then the smallest padding. */
bool conv_roles(const OpView &v, ConvGeo *geo, std::string *why)
{
    std::string t = v.op->type;
    bool fwd = t == "conv2d", bdata = t == "conv2d_bwd_data";
    std::vector<const dfg_tensor *> ins, outs;
    for (auto *x : v.in)
        if (x->ndim == 4)
            ins.push_back(x);
    for (auto *x : v.out)
        if (x->ndim == 4)
            outs.push_back(x);
    /* weights are read by forward and backward-data, written by backward-filter;
     * x and y: forward reads x writes y, backward-data reads dy writes dx,
     * backward-filter reads both */
    const std::vector<const dfg_tensor *> &wc = (fwd || bdata) ? ins : outs;
    const std::vector<const dfg_tensor *> &xs = fwd ? ins : bdata ? outs : ins;
    const std::vector<const dfg_tensor *> &ys = fwd ? outs : ins;
    bool found = false;
    double best = 0;
    for (auto *w : wc)
        for (auto *x : xs)
            for (auto *y : ys) {
                ConvGeo g;
                if (x == w || y == w || x == y || !conv_fit(x, w, y, v.ex, &g))
                    continue;
                double macs = (double)g.n * g.k * g.p * g.q * (double)g.cpg * g.r * g.s;
                double score = (w->kind == DFG_PARAM || !(fwd || bdata) ? 0 : 1e6) + (g.ph + g.pw);
                if (v.op->flops > 0)
                    score += 1e3 * std::fabs(std::log(v.op->flops / (2.0 * macs)));
                if (!found || score < best) {
                    *geo = g;
                    best = score;
                    found = true;
                }
            }
    if (!found)
        *why = "no consistent 4-D (NCHW) input / filter / output shapes for a 2-D convolution";
    return found;
}

/* GEMMs of a matrix-product op, one per (matrix) output, from the shapes.
 * Batched products take their batch from the op's highest-rank tensor, so
 * attention written as [B, S, heads * D] beside [B, heads, S, S] finds its
 * heads.  The reduction size comes from an input pair whose sizes agree; for
 * a single product whose pair disagrees with the op's FLOPs (a weight shared
 * across time steps reduces over all of them) the FLOPs decide. */
bool gemm_roles(const OpView &v, bool batched, std::vector<Gemm> *gs, std::string *why)
{
    gs->clear();
    /* A 1-D output beside a matrix one is a bias gradient: a small reduction
     * the GEMM's time covers. */
    int n_matrix = 0;
    for (auto *o : v.out)
        n_matrix += o->ndim >= 2;
    long long batch = 1;
    if (batched) {
        const dfg_tensor *top = nullptr;
        for (auto *t : v.in)
            if (numel(t) > 0 && (!top || t->ndim > top->ndim))
                top = t;
        for (auto *t : v.out)
            if (numel(t) > 0 && (!top || t->ndim > top->ndim))
                top = t;
        if (top)
            for (int d = 0; d + 2 < top->ndim; d++)
                batch *= top->shape[d];
    }
    for (auto *o : v.out) {
        if (n_matrix > 0 && o->ndim < 2)
            continue;
        long long on = numel(o);
        if (on <= 0) {
            *why = "an output has no shape";
            return false;
        }
        Gemm gm{1, 1, o->shape[o->ndim - 1], 0};
        if (batched && o->ndim >= 3 && on % (batch * o->shape[o->ndim - 2]) == 0) {
            gm.batch = batch;
            gm.m = o->shape[o->ndim - 2];
            gm.n = on / (batch * gm.m);
        } else {
            gm.m = on / gm.n;
        }
        long long bm = gm.batch * gm.m;
        for (size_t a = 0; a < v.in.size() && !gm.k; a++)
            for (size_t b = 0; b < v.in.size() && !gm.k; b++) {
                long long ea = numel(v.in[a]), eb = numel(v.in[b]);
                if (a == b || ea <= 0 || eb <= 0 || ea % bm)
                    continue;
                long long k = ea / bm;
                if (eb == gm.batch * k * gm.n || eb == k * gm.n)
                    gm.k = k;
            }
        if (n_matrix <= 1 && v.op->flops > 0) {
            double kf = v.op->flops / (2.0 * (double)bm * (double)gm.n);
            if (kf >= 0.5 && (!gm.k || std::fabs(std::log((double)gm.k / kf)) > std::log(1.1)))
                gm.k = std::max(1LL, (long long)std::llround(kf));
        }
        if (!gm.k) {
            *why = "no input pair matches the output's GEMM shape";
            return false;
        }
        gs->push_back(gm);
    }
    if (gs->empty()) {
        *why = "no outputs";
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------- */
/* op families                                                               */

struct Result {
    double us = 0;
    std::string method, algo, note;
    long long ws = -1, ws_limit = -1;
};

const char *fwd_algo_name(int a)
{
    static const char *n[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                              "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 8 ? n[a] : "?";
}
const char *bwd_data_algo_name(int a)
{
    static const char *n[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 6 ? n[a] : "?";
}
const char *bwd_filter_algo_name(int a)
{
    static const char *n[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
    return a >= 0 && a < 7 ? n[a] : "?";
}

struct DnnDesc {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    ~DnnDesc()
    {
        if (x)
            cudnnDestroyTensorDescriptor(x);
        if (y)
            cudnnDestroyTensorDescriptor(y);
        if (w)
            cudnnDestroyFilterDescriptor(w);
        if (conv)
            cudnnDestroyConvolutionDescriptor(conv);
    }
};

/* MXNet's default cuDNN workspace limit, used when the graph gives the op no
 * workspace tensor (SwapAdvisor ran on MXNet). */
const long long DEFAULT_WS_LIMIT = 1LL << 30;

Rc time_conv(Ctx &c, const OpView &v, Result *res)
{
    ConvGeo g;
    std::string why;
    if (!conv_roles(v, &g, &why)) {
        c.note = why;
        return RC_SOFT;
    }
    std::string type = v.op->type;
    int kind = type == "conv2d" ? 0 : type == "conv2d_bwd_data" ? 1 : 2;
    cudnnDataType_t dt = v.dt == DT_F64 ? CUDNN_DATA_DOUBLE : v.dt == DT_F16 ? CUDNN_DATA_HALF
                         : v.dt == DT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnDataType_t cdt = v.dt == DT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    DnnDesc d;
    CK_DNN(c, cudnnCreateTensorDescriptor(&d.x));
    CK_DNN(c, cudnnCreateTensorDescriptor(&d.y));
    CK_DNN(c, cudnnCreateFilterDescriptor(&d.w));
    CK_DNN(c, cudnnCreateConvolutionDescriptor(&d.conv));
    CK_DNN(c, cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, dt, g.n, g.c, g.h, g.w));
    CK_DNN(c, cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, dt, g.n, g.k, g.p, g.q));
    CK_DNN(c, cudnnSetFilter4dDescriptor(d.w, dt, CUDNN_TENSOR_NCHW, g.k, g.cpg, g.r, g.s));
    CK_DNN(c, cudnnSetConvolution2dDescriptor(d.conv, g.ph, g.pw, g.sh, g.sw, g.dh, g.dw, CUDNN_CROSS_CORRELATION, cdt));
    CK_DNN(c, cudnnSetConvolutionGroupCount(d.conv, g.groups));
    /* Half precision may use tensor cores; f32 keeps cuDNN's default math,
     * which on Ampere and newer allows TF32 (as PyTorch's cudnn.allow_tf32). */
    CK_DNN(c, cudnnSetConvolutionMathType(d.conv, dt_half(v.dt) ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH));
    int on, ok, op, oq;
    CK_DNN(c, cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &on, &ok, &op, &oq));
    if (on != g.n || ok != g.k || op != g.p || oq != g.q) {
        c.note = "cuDNN computes another output shape for the inferred geometry";
        return RC_SOFT;
    }
    size_t es = dt_size(v.dt);
    size_t xb = (size_t)g.n * g.c * g.h * g.w * es, wb = (size_t)g.k * g.cpg * g.r * g.s * es,
           yb = (size_t)g.n * g.k * g.p * g.q * es;
    /* workspace: what the graph reserves for the op, else the framework
     * default, never more than the memory left beside the operands */
    size_t free_b = 0, total_b = 0;
    CK_CUDA(c, cudaMemGetInfo(&free_b, &total_b));
    long long held = 0;
    for (int i = 0; i < 4; i++)
        held += (long long)c.buf[i].cap;
    long long limit = v.ws_bytes > 0 ? v.ws_bytes : DEFAULT_WS_LIMIT;
    long long avail = (long long)free_b + held - (256LL << 20) - (long long)(xb + wb + yb);
    limit = std::max(0LL, std::min(limit, avail));
    int idx[4] = {0, 1, 2, 3};
    size_t sz[4] = {xb, wb, yb, (size_t)limit};
    Rc r = ensure(c, idx, sz, limit > 0 ? 4 : 3);
    if (r == RC_SOFT && limit > 0) { /* try again without a workspace */
        limit = 0;
        c.note.clear();
        r = ensure(c, idx, sz, 3);
    }
    CK_RC(r);
    res->ws_limit = limit;
    for (int i = 0; i < 3; i++)
        CK_RC(fill(c, c.buf[i].p, sz[i], v.dt));
    void *X = c.buf[0].p, *W = c.buf[1].p, *Y = c.buf[2].p, *WS = limit > 0 ? c.buf[3].p : nullptr;
    size_t wsz = (size_t)limit;
    const float fa = 1.0f, fb = 0.0f;
    const double da = 1.0, db = 0.0;
    const void *alpha = v.dt == DT_F64 ? (const void *)&da : (const void *)&fa;
    const void *beta = v.dt == DT_F64 ? (const void *)&db : (const void *)&fb;
    int got = 0;
    if (kind == 0) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        CK_DNN(c, cudnnFindConvolutionForwardAlgorithmEx(c.dnn, d.x, X, d.w, W, d.conv, d.y, Y,
                                                         CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, WS, wsz));
        int best = -1;
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= wsz)
                best = i;
        if (best < 0) {
            c.note = "cuDNN found no forward algorithm within the workspace";
            return RC_SOFT;
        }
        cudnnConvolutionFwdAlgo_t algo = perf[best].algo;
        res->algo = fwd_algo_name((int)algo);
        res->ws = (long long)perf[best].memory;
        size_t need = perf[best].memory;
        CK_RC(time_it(
            c,
            [&]() -> Rc {
                CK_DNN(c, cudnnConvolutionForward(c.dnn, alpha, d.x, X, d.w, W, d.conv, algo, WS, need, beta, d.y, Y));
                return RC_OK;
            },
            &res->us));
    } else if (kind == 1) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        CK_DNN(c, cudnnFindConvolutionBackwardDataAlgorithmEx(c.dnn, d.w, W, d.y, Y, d.conv, d.x, X,
                                                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf, WS,
                                                              wsz));
        int best = -1;
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= wsz)
                best = i;
        if (best < 0) {
            c.note = "cuDNN found no backward-data algorithm within the workspace";
            return RC_SOFT;
        }
        cudnnConvolutionBwdDataAlgo_t algo = perf[best].algo;
        res->algo = bwd_data_algo_name((int)algo);
        res->ws = (long long)perf[best].memory;
        size_t need = perf[best].memory;
        CK_RC(time_it(
            c,
            [&]() -> Rc {
                CK_DNN(c, cudnnConvolutionBackwardData(c.dnn, alpha, d.w, W, d.y, Y, d.conv, algo, WS, need, beta,
                                                       d.x, X));
                return RC_OK;
            },
            &res->us));
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        CK_DNN(c, cudnnFindConvolutionBackwardFilterAlgorithmEx(c.dnn, d.x, X, d.y, Y, d.conv, d.w, W,
                                                                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf,
                                                                WS, wsz));
        int best = -1;
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= wsz)
                best = i;
        if (best < 0) {
            c.note = "cuDNN found no backward-filter algorithm within the workspace";
            return RC_SOFT;
        }
        cudnnConvolutionBwdFilterAlgo_t algo = perf[best].algo;
        res->algo = bwd_filter_algo_name((int)algo);
        res->ws = (long long)perf[best].memory;
        size_t need = perf[best].memory;
        CK_RC(time_it(
            c,
            [&]() -> Rc {
                CK_DNN(c, cudnnConvolutionBackwardFilter(c.dnn, alpha, d.x, X, d.y, Y, d.conv, algo, WS, need, beta,
                                                         d.w, W));
                return RC_OK;
            },
            &res->us));
    }
    char geo[160];
    snprintf(geo, sizeof geo, "N%d C%d H%d W%d K%d R%d S%d stride %dx%d pad %dx%d dilation %dx%d groups %d", g.n, g.c,
             g.h, g.w, g.k, g.r, g.s, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups);
    res->method = "cudnn";
    res->note = geo;
    return RC_OK;
}

Rc time_matmul(Ctx &c, const OpView &v, bool batched, Result *res)
{
    std::vector<Gemm> gs;
    std::string why;
    if (!gemm_roles(v, batched, &gs, &why)) {
        c.note = why;
        return RC_SOFT;
    }
    CK_RC(time_gemms(c, v.dt, gs, &res->us));
    res->method = "cublas";
    std::string s;
    for (const Gemm &g : gs) {
        char b[96];
        snprintf(b, sizeof b, "%s%lldx(%lldx%lldx%lld)", s.empty() ? "" : " + ", g.batch, g.m, g.n, g.k);
        s += b;
    }
    res->note = "GEMM batch x (m x n x k): " + s + ", " + dt_name(v.dt);
    return RC_OK;
}

/* Arrays of an op for the element-wise and row kernels: every input, then
 * every non-workspace output, by bytes. */
Rc ew_buffers(Ctx &c, const OpView &v, size_t extra_in_bytes, std::vector<size_t> *in_b, std::vector<size_t> *out_b)
{
    for (auto *t : v.in)
        in_b->push_back((size_t)t->bytes);
    if (extra_in_bytes)
        in_b->push_back(extra_in_bytes);
    for (auto *t : v.out)
        out_b->push_back((size_t)t->bytes);
    if (in_b->size() > 8 || out_b->size() > 8) {
        c.note = "more than 8 inputs or 8 outputs for the element-wise kernel";
        return RC_SOFT;
    }
    std::vector<int> idx;
    std::vector<size_t> sz;
    for (size_t i = 0; i < in_b->size(); i++) {
        idx.push_back((int)i);
        sz.push_back((*in_b)[i]);
    }
    for (size_t i = 0; i < out_b->size(); i++) {
        idx.push_back(8 + (int)i);
        sz.push_back((*out_b)[i]);
    }
    CK_RC(ensure(c, idx.data(), sz.data(), (int)idx.size()));
    for (size_t i = 0; i < in_b->size(); i++)
        CK_RC(fill(c, c.buf[i].p, (*in_b)[i], dt_half(v.dt) ? DT_F16 : DT_F32));
    return RC_OK;
}

Rc launch_ew(Ctx &c, int flav, bool half, const EwArgs &a)
{
    unsigned grid = c.grid_for(a.n);
    if (half) {
        if (flav == FLAV_TANH)
            k_ew<FLAV_TANH, true><<<grid, 256, 0, c.s>>>(a);
        else if (flav == FLAV_OPT)
            k_ew<FLAV_OPT, true><<<grid, 256, 0, c.s>>>(a);
        else
            k_ew<FLAV_PLAIN, true><<<grid, 256, 0, c.s>>>(a);
    } else {
        if (flav == FLAV_TANH)
            k_ew<FLAV_TANH, false><<<grid, 256, 0, c.s>>>(a);
        else if (flav == FLAV_OPT)
            k_ew<FLAV_OPT, false><<<grid, 256, 0, c.s>>>(a);
        else
            k_ew<FLAV_PLAIN, false><<<grid, 256, 0, c.s>>>(a);
    }
    return launched(c, "k_ew");
}

EwArgs ew_args(Ctx &c, const std::vector<size_t> &in_b, const std::vector<size_t> &out_b)
{
    EwArgs a{};
    a.nin = (int)in_b.size();
    a.nout = (int)out_b.size();
    for (int j = 0; j < a.nin; j++) {
        a.in[j] = (const uint4 *)c.buf[j].p;
        a.len_in[j] = std::max<size_t>(1, (in_b[j] + 15) / 16);
        a.n = std::max(a.n, a.len_in[j]);
    }
    /* the largest array sets the iteration space: every array is streamed
     * once, smaller inputs wrap (broadcast), outputs stop at their end */
    for (int k = 0; k < a.nout; k++) {
        a.out[k] = (uint4 *)c.buf[8 + k].p;
        a.len_out[k] = std::max<size_t>(1, (out_b[k] + 15) / 16);
        a.n = std::max(a.n, a.len_out[k]);
    }
    return a;
}

Rc time_ew(Ctx &c, const OpView &v, int flav, Result *res)
{
    std::vector<size_t> in_b, out_b;
    CK_RC(ew_buffers(c, v, 0, &in_b, &out_b));
    EwArgs a = ew_args(c, in_b, out_b);
    bool half = dt_half(v.dt);
    CK_RC(time_it(c, [&]() -> Rc { return launch_ew(c, flav, half, a); }, &res->us));
    res->method = "kernel";
    res->note = flav == FLAV_TANH ? "element-wise (tanh)" : flav == FLAV_OPT ? "element-wise (optimizer update)"
                                                                             : "element-wise";
    return RC_OK;
}

const dfg_tensor *largest_shaped_input(const OpView &v)
{
    const dfg_tensor *best = nullptr;
    for (auto *t : v.in)
        if (numel(t) > 0 && (!best || t->bytes > best->bytes))
            best = t;
    return best;
}

Rc time_rows(Ctx &c, const OpView &v, Result *res)
{
    const dfg_tensor *m = largest_shaped_input(v);
    if (!m) {
        c.note = "no input shape to find the rows being normalised";
        return RC_SOFT;
    }
    size_t cols = (size_t)m->shape[m->ndim - 1], rows = (size_t)numel(m) / cols;
    std::vector<size_t> in_b, out_b;
    CK_RC(ew_buffers(c, v, 0, &in_b, &out_b));
    bool half = dt_half(v.dt);
    size_t es = half ? 2 : 4;
    RowArgs a{};
    a.nin = (int)in_b.size();
    a.nout = (int)out_b.size();
    a.rows = rows;
    a.cols = cols;
    for (int j = 0; j < a.nin; j++) {
        a.in[j] = c.buf[j].p;
        a.len_in[j] = std::max<size_t>(1, in_b[j] / es);
    }
    for (int k = 0; k < a.nout; k++) {
        a.out[k] = c.buf[8 + k].p;
        a.len_out[k] = std::max<size_t>(1, out_b[k] / es);
    }
    unsigned grid = c.grid_for(rows * 32, 256);
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            if (half)
                k_rows<__half><<<grid, 256, 0, c.s>>>(a);
            else
                k_rows<float><<<grid, 256, 0, c.s>>>(a);
            return launched(c, "k_rows");
        },
        &res->us));
    char b[96];
    snprintf(b, sizeof b, "row reduction: %zu rows x %zu", rows, cols);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

Rc time_batchnorm(Ctx &c, const OpView &v, bool bwd, Result *res)
{
    const dfg_tensor *x = largest_shaped_input(v);
    if (!x || x->ndim < 2) {
        c.note = "no N x C (x H x W) input shape";
        return RC_SOFT;
    }
    size_t n = (size_t)x->shape[0], ch = (size_t)x->shape[1], hw = (size_t)numel(x) / (n * ch);
    if (ch > 65535) {
        c.note = "more than 65535 channels";
        return RC_SOFT;
    }
    /* backward: statistics over dy and x, the two largest equal inputs */
    int second = -1;
    if (bwd)
        for (size_t i = 0; i < v.in.size(); i++)
            if (v.in[i] != x && v.in[i]->bytes == x->bytes) {
                second = (int)i;
                break;
            }
    int xi = 0;
    for (size_t i = 0; i < v.in.size(); i++)
        if (v.in[i] == x)
            xi = (int)i;
    std::vector<size_t> in_b, out_b;
    CK_RC(ew_buffers(c, v, 2 * ch * sizeof(float), &in_b, &out_b));
    bool half = dt_half(v.dt);
    float *stats = (float *)c.buf[in_b.size() - 1].p;
    EwArgs a = ew_args(c, in_b, out_b);
    size_t per = n * hw;
    dim3 grid((unsigned)std::max<size_t>(1, std::min<size_t>((per + 2047) / 2048, 1024)), (unsigned)ch);
    const void *X = c.buf[xi].p, *Y = second >= 0 ? c.buf[second].p : nullptr;
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            CK_CUDA(c, cudaMemsetAsync(stats, 0, 2 * ch * sizeof(float), c.s));
            if (half)
                k_bn_stats<__half><<<grid, 256, 0, c.s>>>((const __half *)X, (const __half *)Y, n, ch, hw, stats);
            else
                k_bn_stats<float><<<grid, 256, 0, c.s>>>((const float *)X, (const float *)Y, n, ch, hw, stats);
            CK_RC(launched(c, "k_bn_stats"));
            return launch_ew(c, FLAV_PLAIN, half, a);
        },
        &res->us));
    char b[96];
    snprintf(b, sizeof b, "per-channel statistics + normalise: N%zu C%zu HW%zu", n, ch, hw);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

/* Pooling geometry from the shapes (and kernel / stride / pad extras when the
 * graph has them): forward x -> y; backward dy (small) -> dx (big), reading x
 * when the op lists it. */
bool pool_roles(const OpView &v, bool bwd, PoolGeo *out, bool *readx, std::string *why)
{
    const dfg_tensor *big = nullptr, *small = nullptr, *xt = nullptr;
    if (!bwd) {
        for (auto *t : v.in)
            if (t->ndim == 4 && fits_int(t) && (!big || t->bytes > big->bytes))
                big = t;
        for (auto *t : v.out)
            if (t->ndim == 4 && fits_int(t) && !small)
                small = t;
    } else {
        for (auto *t : v.out)
            if (t->ndim == 4 && fits_int(t) && !big)
                big = t;
        for (auto *t : v.in)
            if (big && t->ndim == 4 && fits_int(t)) {
                bool same = memcmp(t->shape, big->shape, 4 * sizeof(int64_t)) == 0;
                if (same && !xt)
                    xt = t;
                else if (!same && !small)
                    small = t;
            }
        if (!small && xt) { /* a 1x1 stride-1 pool: dy has dx's shape */
            small = xt;
            xt = nullptr;
        }
    }
    if (!big || !small || big->shape[0] != small->shape[0] || big->shape[1] != small->shape[1]) {
        *why = "no N x C x H x W input / output pair";
        return false;
    }
    PoolGeo g{};
    g.n = (int)big->shape[0];
    g.c = (int)big->shape[1];
    g.h = (int)big->shape[2];
    g.w = (int)big->shape[3];
    g.p = (int)small->shape[2];
    g.q = (int)small->shape[3];
    const Extras &e = v.ex;
    bool ok = false;
    if (e.kh > 0) {
        g.r = e.kh;
        g.s = e.kw;
        ok = solve_dim(g.h, g.r, g.p, 1, e.sh, e.ph, &g.sh, &g.ph) && solve_dim(g.w, g.s, g.q, 1, e.sw, e.pw, &g.sw, &g.pw);
    } else if (g.p == 1 && g.q == 1) {
        g.r = g.h;
        g.s = g.w;
        g.sh = g.sw = 1;
        ok = true;
    } else {
        /* a square window whose area the FLOPs give (one per window element
         * per output), then the common ones */
        std::vector<int> cand;
        double small_n = (double)g.n * g.c * g.p * g.q;
        if (v.op->flops > 0) {
            long long area = std::llround(v.op->flops / small_n), r = std::llround(std::sqrt((double)area));
            if (r >= 1 && r * r == area && r <= g.h)
                cand.push_back((int)r);
        }
        for (int r : {3, 2, 1})
            cand.push_back(r);
        for (int r : cand) {
            g.r = g.s = r;
            if (solve_dim(g.h, r, g.p, 1, e.sh, e.ph, &g.sh, &g.ph) && solve_dim(g.w, r, g.q, 1, e.sw, e.pw, &g.sw, &g.pw)) {
                ok = true;
                break;
            }
        }
    }
    if (!ok) {
        *why = "no pooling window fits the input and output shapes";
        return false;
    }
    *out = g;
    *readx = xt != nullptr;
    return true;
}


Rc time_pool(Ctx &c, const OpView &v, bool bwd, Result *res)
{
    PoolGeo g;
    bool readx = false;
    std::string why;
    if (!pool_roles(v, bwd, &g, &readx, &why)) {
        c.note = why;
        return RC_SOFT;
    }
    size_t es = dt_half(v.dt) ? 2 : 4;
    size_t bb = (size_t)g.n * g.c * g.h * g.w * es, sb = (size_t)g.n * g.c * g.p * g.q * es;
    int idx[3] = {0, 1, 2};
    size_t sz[3] = {bb, sb, bb};
    CK_RC(ensure(c, idx, sz, 3));
    CK_RC(fill(c, c.buf[0].p, bb, dt_half(v.dt) ? DT_F16 : DT_F32));
    CK_RC(fill(c, c.buf[1].p, sb, dt_half(v.dt) ? DT_F16 : DT_F32));
    bool half = es == 2;
    size_t work = bwd ? bb / es : sb / es;
    unsigned grid = c.grid_for(work);
    void *B0 = c.buf[0].p, *S1 = c.buf[1].p, *B2 = c.buf[2].p;
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            if (!bwd) {
                if (half)
                    k_pool_fwd<__half><<<grid, 256, 0, c.s>>>((const __half *)B0, (__half *)S1, g);
                else
                    k_pool_fwd<float><<<grid, 256, 0, c.s>>>((const float *)B0, (float *)S1, g);
            } else {
                if (half)
                    k_pool_bwd<__half><<<grid, 256, 0, c.s>>>((const __half *)S1, readx ? (const __half *)B0 : nullptr,
                                                             (__half *)B2, g);
                else
                    k_pool_bwd<float><<<grid, 256, 0, c.s>>>((const float *)S1, readx ? (const float *)B0 : nullptr,
                                                            (float *)B2, g);
            }
            return launched(c, "k_pool");
        },
        &res->us));
    char b[128];
    snprintf(b, sizeof b, "pool window %dx%d stride %dx%d pad %dx%d over N%d C%d %dx%d", g.r, g.s, g.sh, g.sw, g.ph, g.pw,
             g.n, g.c, g.h, g.w);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

/* Embedding geometry: forward table (V x D, the param) and ids -> y;
 * backward dy and ids -> dtable. */
bool emb_roles(const OpView &v, bool bwd, size_t *vocab_out, size_t *dim_out, size_t *rows_out, std::string *why)
{
    const dfg_tensor *table = nullptr, *dense = nullptr;
    if (!bwd) {
        for (auto *t : v.in)
            if (t->ndim == 2 && (!table || (t->kind == DFG_PARAM && table->kind != DFG_PARAM)))
                table = t;
        dense = v.out.empty() ? nullptr : v.out[0];
    } else {
        for (auto *t : v.out)
            if (t->ndim == 2 && !table)
                table = t;
        for (auto *t : v.in)
            if (numel(t) > 0 && (!dense || t->bytes > dense->bytes))
                dense = t;
    }
    if (!table || !dense || numel(dense) <= 0 || numel(table) <= 0) {
        *why = "no V x D table and dense tensor shapes";
        return false;
    }
    size_t vocab = (size_t)table->shape[0], dim = (size_t)table->shape[1];
    size_t rows = (size_t)numel(dense) / dim;
    if (rows == 0 || vocab == 0 || vocab > 0xffffffffULL) {
        *why = "table and dense shapes do not agree";
        return false;
    }
    *vocab_out = vocab;
    *dim_out = dim;
    *rows_out = rows;
    return true;
}


Rc time_embedding(Ctx &c, const OpView &v, bool bwd, Result *res)
{
    size_t vocab = 0, dim = 0, rows = 0;
    std::string why;
    if (!emb_roles(v, bwd, &vocab, &dim, &rows, &why)) {
        c.note = why;
        return RC_SOFT;
    }
    bool half = dt_half(v.dt);
    size_t es = half ? 2 : 4;
    int idx[3] = {0, 1, 2};
    size_t sz[3] = {vocab * dim * es, rows * sizeof(int32_t), rows * dim * es};
    CK_RC(ensure(c, idx, sz, 3));
    CK_RC(fill(c, c.buf[0].p, sz[0], half ? DT_F16 : DT_F32));
    CK_RC(fill(c, c.buf[2].p, sz[2], half ? DT_F16 : DT_F32));
    k_fill_ids<<<c.grid_for(rows), 256, 0, c.s>>>((int32_t *)c.buf[1].p, rows, (uint32_t)vocab);
    CK_RC(launched(c, "k_fill_ids"));
    void *T = c.buf[0].p, *D = c.buf[2].p;
    const int32_t *ids = (const int32_t *)c.buf[1].p;
    unsigned grid = c.grid_for(rows * dim);
    size_t tb = sz[0];
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            if (!bwd) {
                if (half)
                    k_embed<__half><<<grid, 256, 0, c.s>>>((const __half *)T, ids, (__half *)D, rows, dim);
                else
                    k_embed<float><<<grid, 256, 0, c.s>>>((const float *)T, ids, (float *)D, rows, dim);
            } else {
                CK_CUDA(c, cudaMemsetAsync(T, 0, tb, c.s));
                if (half)
                    k_embed_bwd<__half><<<grid, 256, 0, c.s>>>((const __half *)D, ids, (__half *)T, rows, dim);
                else
                    k_embed_bwd<float><<<grid, 256, 0, c.s>>>((const float *)D, ids, (float *)T, rows, dim);
            }
            return launched(c, "k_embed");
        },
        &res->us));
    char b[96];
    snprintf(b, sizeof b, "%s: %zu rows of a %zu x %zu table", bwd ? "zero + scatter-add" : "gather", rows, vocab, dim);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

Rc time_copy(Ctx &c, const OpView &v, bool concat, Result *res)
{
    /* concat: every input into its slice of the output; split: the reverse */
    const std::vector<const dfg_tensor *> &parts = concat ? v.in : v.out;
    const std::vector<const dfg_tensor *> &whole = concat ? v.out : v.in;
    if (whole.empty() || parts.empty()) {
        c.note = "no tensors to copy";
        return RC_SOFT;
    }
    size_t total = (size_t)whole[0]->bytes;
    int idx[2] = {0, 1};
    size_t sz[2] = {total, total};
    CK_RC(ensure(c, idx, sz, 2));
    CK_RC(fill(c, c.buf[0].p, total, DT_F32));
    std::vector<size_t> bytes;
    for (auto *t : parts)
        bytes.push_back((size_t)t->bytes);
    char *src = (char *)c.buf[0].p, *dst = (char *)c.buf[1].p;
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            size_t off = 0;
            for (size_t b : bytes) {
                size_t n = std::min(b, total - std::min(off, total));
                if (n)
                    CK_CUDA(c, cudaMemcpyAsync(dst + off, src + off, n, cudaMemcpyDeviceToDevice, c.s));
                off += b;
            }
            return RC_OK;
        },
        &res->us));
    res->method = "memcpy";
    res->note = concat ? "device-to-device copy of each input into the output" : "device-to-device copy of each slice";
    return RC_OK;
}

Rc time_ew(Ctx &c, const OpView &v, int flav, Result *res);

Rc time_lstm(Ctx &c, const OpView &v, Result *res)
{
    /* A cell whose FLOPs are a few per element is the point-wise gate math
     * alone (the gate GEMMs are matmul ops of their own); one with more also
     * holds its gate GEMM: that GEMM plus the point-wise pass. */
    double elems = 0;
    for (auto *t : v.in)
        elems += (double)t->bytes / (double)dt_size(v.dt);
    for (auto *t : v.out)
        elems += (double)t->bytes / (double)dt_size(v.dt);
    if (!(v.op->flops > 32.0 * elems))
        return time_ew(c, v, FLAV_TANH, res);
    long long rows = -1;
    if (!v.out.empty() && v.out[0]->ndim >= 1)
        rows = v.out[0]->shape[0];
    std::vector<Gemm> gs{gemm_equivalent(v.op->flops, rows)};
    double gemm_us = 0, pw_us = 0;
    CK_RC(time_gemms(c, v.dt, gs, &gemm_us));
    size_t rb = 0, wb = 0;
    for (auto *t : v.in)
        if (t->kind != DFG_PARAM)
            rb += (size_t)t->bytes;
    for (auto *t : v.out)
        wb += (size_t)t->bytes;
    CK_RC(time_mem(c, rb, wb, &pw_us));
    res->us = gemm_us + pw_us;
    char b[128];
    snprintf(b, sizeof b, "GEMM of equal FLOPs (%lldx%lldx%lld) + point-wise pass over the non-weight tensors",
             gs[0].m, gs[0].n, gs[0].k);
    res->method = "cublas+kernel";
    res->note = b;
    return RC_OK;
}

/* The fallbacks, in order: a GEMM of equal FLOPs (ops with FLOPs) together with
 * the memory-bound kernel over the op's bytes, or the memory-bound kernel alone. */
Rc time_fallback(Ctx &c, const dfg_graph *g, int32_t o, const OpView &v, Result *res)
{
    double bytes = cost_op_bytes(g, o);
    size_t rb, wb;
    if (v.op->bytes_accessed >= 0) {
        rb = (size_t)(bytes / 2);
        wb = (size_t)(bytes - (double)rb);
    } else {
        rb = wb = 0;
        for (auto *t : v.in)
            rb += (size_t)t->bytes;
        for (int i = 0; i < v.op->n_out; i++)
            wb += (size_t)g->tensors[v.op->out[i]].bytes;
    }
    double mem_us = 0;
    CK_RC(time_mem(c, rb, wb, &mem_us));
    res->us = mem_us;
    res->method = "fallback-memory";
    if (v.op->flops > 0) {
        long long rows = (!v.out.empty() && v.out[0]->ndim >= 1) ? v.out[0]->shape[0] : -1;
        std::vector<Gemm> gs{gemm_equivalent(v.op->flops, rows)};
        double gemm_us = 0;
        Rc r = time_gemms(c, v.dt, gs, &gemm_us);
        if (r == RC_HARD)
            return r;
        if (r == RC_OK && gemm_us > mem_us) {
            res->us = gemm_us;
            res->method = "fallback-gemm";
        }
    }
    return RC_OK;
}

/* ------------------------------------------------------------------------- */
/* device-wide figures                                                       */

struct Peaks {
    double f32 = 0, f16 = 0, mem = 0, launch_us = 0;
};

Rc measure_peaks(Ctx &c, Peaks *pk, std::string *notes)
{
    double us = 0;
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            k_empty<<<1, 1, 0, c.s>>>();
            return launched(c, "k_empty");
        },
        &us));
    pk->launch_us = us;
    /* bandwidth: a copy as large as memory allows, up to 1 GiB each way */
    size_t free_b = 0, total_b = 0;
    CK_CUDA(c, cudaMemGetInfo(&free_b, &total_b));
    size_t n = std::min<size_t>(1ULL << 30, free_b / 4);
    Rc r = time_mem(c, n, n, &us);
    if (r == RC_HARD)
        return r;
    if (r != RC_OK) {
        sa_fail(c.err, SA_EDEVICE, "cannot measure memory bandwidth: %s", c.note.c_str());
        return RC_HARD;
    }
    pk->mem = 2.0 * (double)n / (us * 1e-6);
    /* FP32 through CUDA cores: cuBLAS's default math does not use TF32 */
    const long long s32 = 4096, s16 = 8192;
    r = time_gemms(c, DT_F32, {Gemm{1, s32, s32, s32}}, &us);
    if (r == RC_HARD)
        return r;
    if (r != RC_OK) {
        sa_fail(c.err, SA_EDEVICE, "cannot measure FP32 GEMM peak: %s", c.note.c_str());
        return RC_HARD;
    }
    pk->f32 = 2.0 * (double)(s32 * s32 * s32) / (us * 1e-6);
    r = time_gemms(c, DT_F16, {Gemm{1, s16, s16, s16}}, &us);
    if (r == RC_HARD)
        return r;
    if (r == RC_OK)
        pk->f16 = 2.0 * (double)(s16 * s16 * s16) / (us * 1e-6);
    else
        *notes += "FP16 GEMM not measured (" + c.note + "); ";
    /* drop the big probe buffers so the ops start from a clean pool */
    for (auto &b : c.buf)
        if (b.p) {
            CK_CUDA(c, cudaFree(b.p));
            b.p = nullptr;
            b.cap = 0;
        }
    return RC_OK;
}

struct LinkRes {
    void *h_a = nullptr, *h_b = nullptr, *d_a = nullptr, *d_b = nullptr;
    cudaStream_t s1 = nullptr, s2 = nullptr;
    cudaEvent_t ev[4] = {nullptr, nullptr, nullptr, nullptr};
    ~LinkRes()
    {
        if (h_a)
            cudaFreeHost(h_a);
        if (h_b)
            cudaFreeHost(h_b);
        if (d_a)
            cudaFree(d_a);
        if (d_b)
            cudaFree(d_b);
        for (auto e : ev)
            if (e)
                cudaEventDestroy(e);
        if (s1)
            cudaStreamDestroy(s1);
        if (s2)
            cudaStreamDestroy(s2);
    }
};

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Rc measure_links(Ctx &c, dfg_device *dev)
{
    LinkRes L;
    CK_CUDA(c, cudaSetDevice(0));
    size_t sz = 0;
    for (size_t want : {256ULL << 20, 64ULL << 20, 16ULL << 20}) {
        cudaError_t e1 = cudaMallocHost(&L.h_a, want);
        cudaError_t e2 = e1 == cudaSuccess ? cudaMallocHost(&L.h_b, want) : e1;
        cudaError_t e3 = e2 == cudaSuccess ? cudaMalloc(&L.d_a, want) : e2;
        cudaError_t e4 = e3 == cudaSuccess ? cudaMalloc(&L.d_b, want) : e3;
        if (e4 == cudaSuccess) {
            sz = want;
            break;
        }
        if (e4 != cudaErrorMemoryAllocation)
            return cuda_rc(c, e4, "cudaMallocHost");
        cudaGetLastError();
        if (L.h_a)
            CK_CUDA(c, cudaFreeHost(L.h_a));
        if (L.h_b)
            CK_CUDA(c, cudaFreeHost(L.h_b));
        if (L.d_a)
            CK_CUDA(c, cudaFree(L.d_a));
        L.h_a = L.h_b = L.d_a = nullptr;
    }
    if (!sz) {
        sa_fail(c.err, SA_EDEVICE, "cannot allocate 16 MiB of pinned host and device memory to measure the host link");
        return RC_HARD;
    }
    memset(L.h_a, 1, sz);
    memset(L.h_b, 2, sz);
    CK_CUDA(c, cudaStreamCreateWithFlags(&L.s1, cudaStreamNonBlocking));
    CK_CUDA(c, cudaStreamCreateWithFlags(&L.s2, cudaStreamNonBlocking));
    for (auto &e : L.ev)
        CK_CUDA(c, cudaEventCreate(&e));
    const int reps = 4;
    auto one_way = [&](bool h2d, double *rate) -> Rc {
        cudaStream_t s = h2d ? L.s1 : L.s2;
        void *dst = h2d ? L.d_a : L.h_b, *src = h2d ? L.h_a : L.d_b;
        cudaMemcpyKind k = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        CK_CUDA(c, cudaMemcpyAsync(dst, src, sz, k, s)); /* warm-up */
        CK_CUDA(c, cudaEventRecord(L.ev[0], s));
        for (int i = 0; i < reps; i++)
            CK_CUDA(c, cudaMemcpyAsync(dst, src, sz, k, s));
        CK_CUDA(c, cudaEventRecord(L.ev[1], s));
        CK_CUDA(c, cudaEventSynchronize(L.ev[1]));
        float ms = 0;
        CK_CUDA(c, cudaEventElapsedTime(&ms, L.ev[0], L.ev[1]));
        *rate = (double)reps * (double)sz / (ms * 1e-3);
        return RC_OK;
    };
    double h2d = 0, d2h = 0;
    CK_RC(one_way(true, &h2d));
    CK_RC(one_way(false, &d2h));
    /* duplex: both directions start together; time until both are done */
    CK_CUDA(c, cudaEventRecord(L.ev[0], L.s1));
    CK_CUDA(c, cudaStreamWaitEvent(L.s2, L.ev[0], 0));
    for (int i = 0; i < reps; i++) {
        CK_CUDA(c, cudaMemcpyAsync(L.d_a, L.h_a, sz, cudaMemcpyHostToDevice, L.s1));
        CK_CUDA(c, cudaMemcpyAsync(L.h_b, L.d_b, sz, cudaMemcpyDeviceToHost, L.s2));
    }
    CK_CUDA(c, cudaEventRecord(L.ev[2], L.s2));
    CK_CUDA(c, cudaStreamWaitEvent(L.s1, L.ev[2], 0));
    CK_CUDA(c, cudaEventRecord(L.ev[1], L.s1));
    CK_CUDA(c, cudaEventSynchronize(L.ev[1]));
    float ms = 0;
    CK_CUDA(c, cudaEventElapsedTime(&ms, L.ev[0], L.ev[1]));
    double duplex = 2.0 * reps * (double)sz / (ms * 1e-3);
    /* latency: a 4 KiB copy issued and waited for on its own, as a swap that
     * waits on an event is; its time less the bytes at full rate */
    const size_t small = 4096;
    std::vector<double> lat;
    for (int dir = 0; dir < 2; dir++) {
        std::vector<double> t;
        for (int i = 0; i < 41; i++) {
            auto t0 = std::chrono::steady_clock::now();
            if (dir == 0)
                CK_CUDA(c, cudaMemcpyAsync(L.d_a, L.h_a, small, cudaMemcpyHostToDevice, L.s1));
            else
                CK_CUDA(c, cudaMemcpyAsync(L.h_b, L.d_b, small, cudaMemcpyDeviceToHost, L.s1));
            CK_CUDA(c, cudaStreamSynchronize(L.s1));
            auto t1 = std::chrono::steady_clock::now();
            if (i > 0)
                t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        lat.push_back(std::max(0.0, median(t) - 1e6 * (double)small / (dir == 0 ? h2d : d2h)));
    }
    size_t free_b = 0, total_b = 0;
    CK_CUDA(c, cudaMemGetInfo(&free_b, &total_b));
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "%.80s", c.prop.name);
    dev->memory_bytes = (int64_t)total_b;
    dev->h2d_bytes_per_s = h2d;
    dev->d2h_bytes_per_s = d2h;
    /* the model caps each direction at duplex / 2 while both move bytes */
    dev->duplex_bytes_per_s = std::min(duplex, h2d + d2h);
    dev->transfer_latency_us = 0.5 * (lat[0] + lat[1]);
    return RC_OK;
}

/* Turns a non-OK Rc of a step that has no fallback into SA_EDEVICE (a soft
 * failure there, such as running out of device memory, still ends the run). */
sa_status step_failed(Ctx &c, Rc r, const char *step)
{
    if (r == RC_SOFT)
        sa_fail(c.err, SA_EDEVICE, "%s: %s", step, c.note.c_str());
    else
        sa_err_prefix(c.err, step);
    return SA_EDEVICE;
}

/* ------------------------------------------------------------------------- */
/* the graph                                                                 */

std::string shape_key(const dfg_graph *g, int32_t o)
{
    const dfg_op *op = &g->ops[o];
    std::string k = op->type;
    char b[64];
    snprintf(b, sizeof b, "|f%.17g|b%.17g", op->flops, op->bytes_accessed);
    k += b;
    for (int pass = 0; pass < 2; pass++) {
        k += pass ? "|out" : "|in";
        int n = pass ? op->n_out : op->n_in;
        const int32_t *ids = pass ? op->out : op->in;
        for (int i = 0; i < n; i++) {
            const dfg_tensor *t = &g->tensors[ids[i]];
            snprintf(b, sizeof b, ";%s:%s:%lld:", dfg_kind_name(t->kind), t->dtype ? t->dtype : "", (long long)t->bytes);
            k += b;
            for (int d = 0; d < t->ndim; d++) {
                snprintf(b, sizeof b, "%lld,", (long long)t->shape[d]);
                k += b;
            }
        }
    }
    if (op->extra_json) {
        k += "|";
        k += op->extra_json;
    }
    return k;
}

struct Shape {
    int32_t rep = -1, count = 0;
    Result res;
    bool timed = false;
};

Rc measure_op(Ctx &c, const dfg_graph *g, int32_t o, Result *res)
{
    OpView v = view_of(g, o);
    std::string t = v.op->type;
    c.note.clear();
    Rc r;
    if (t == "conv2d" || t == "conv2d_bwd_data" || t == "conv2d_bwd_filter")
        r = time_conv(c, v, res);
    else if (t == "matmul" || t == "matmul_bwd_data" || t == "matmul_bwd_weight")
        r = time_matmul(c, v, false, res);
    else if (t == "batched_matmul" || t == "batched_matmul_bwd")
        r = time_matmul(c, v, true, res);
    else if (t == "lstm_cell" || t == "lstm_cell_bwd")
        r = time_lstm(c, v, res);
    else if (t == "batchnorm" || t == "batchnorm_bwd")
        r = time_batchnorm(c, v, t == "batchnorm_bwd", res);
    else if (t == "layernorm" || t == "layernorm_bwd" || t == "softmax" || t == "softmax_bwd" ||
             t == "softmax_xent" || t == "softmax_xent_bwd")
        r = time_rows(c, v, res);
    else if (t == "pool" || t == "pool_bwd")
        r = time_pool(c, v, t == "pool_bwd", res);
    else if (t == "embedding" || t == "embedding_bwd")
        r = time_embedding(c, v, t == "embedding_bwd", res);
    else if (t == "concat" || t == "split")
        r = time_copy(c, v, t == "concat", res);
    else if (t == "gelu" || t == "gelu_bwd")
        r = time_ew(c, v, FLAV_TANH, res);
    else if (t == "sgd_update" || t == "momentum_update" || t == "adam_update")
        r = time_ew(c, v, FLAV_OPT, res);
    else if (t == "relu" || t == "relu_bwd" || t == "add" || t == "mask" || t == "elementwise")
        r = time_ew(c, v, FLAV_PLAIN, res);
    else {
        c.note = "op type \"" + t + "\" has no dedicated kernel";
        r = RC_SOFT;
    }
    if (r != RC_SOFT)
        return r;
    std::string why = c.note;
    *res = Result{};
    c.note.clear();
    r = time_fallback(c, g, o, v, res);
    if (r == RC_OK)
        res->note = why + "; timed the calibrated stand-in instead";
    else if (r == RC_SOFT)
        res->note = why + "; " + c.note;
    return r;
}

/* Fits per-type efficiencies to the timings: for each op, the roofline side it
 * sits on (with the measured peaks) gets ideal time / (measured - launch);
 * the type's value is the median, clamped to (0, 1]. */
void fit_efficiencies(const dfg_graph *g, const std::vector<double> &us, const std::vector<bool> &exact,
                      devprof *p, std::vector<std::string> *fitted)
{
    std::unordered_map<std::string, std::pair<std::vector<double>, std::vector<double>>> by;
    std::vector<std::string> order;
    for (int32_t i = 0; i < g->n_ops; i++) {
        if (!exact[i])
            continue;
        double busy = std::max(us[i] - p->launch_us, 0.05 * us[i]);
        double tc = cost_op_flops(g, i) / cost_op_peak_flops(p, g, i) * 1e6;
        double tm = cost_op_bytes(g, i) / p->mem_bytes_per_s * 1e6;
        std::string t = g->ops[i].type;
        if (!by.count(t))
            order.push_back(t);
        auto &e = by[t];
        if (tc > tm)
            e.first.push_back(std::min(1.0, std::max(1e-3, tc / busy)));
        else if (tm > 0)
            e.second.push_back(std::min(1.0, std::max(1e-3, tm / busy)));
    }
    for (const std::string &t : order) {
        auto &e = by[t];
        if (e.first.empty() && e.second.empty())
            continue;
        const devprof_eff *old = devprof_eff_for(p, t.c_str());
        double ce = e.first.empty() ? old->compute : median(e.first);
        double me = e.second.empty() ? old->memory : median(e.second);
        if (devprof_set_eff(p, t.c_str(), ce, me))
            fitted->push_back(t);
    }
}

cJSON *num(double d) { return ju_number(d); }

sa_status measure_graph(dfg_graph *g, const devprof *base, devprof **out, sa_err *err)
{
    Ctx c;
    Rc r = ctx_init(c, err);
    if (r != RC_OK)
        return step_failed(c, r, "setting up CUDA, cuBLAS and cuDNN");
    dfg_device dev;
    if ((r = measure_links(c, &dev)) != RC_OK)
        return step_failed(c, r, "measuring the host link");
    Peaks pk;
    std::string notes;
    if ((r = measure_peaks(c, &pk, &notes)) != RC_OK)
        return step_failed(c, r, "measuring peak FLOP/s, bandwidth and launch overhead");

    devprof *p = (devprof *)calloc(1, sizeof *p);
    if (!p)
        return sa_fail(err, SA_ENOMEM, "out of memory building the measured profile");
    struct Guard {
        devprof *p;
        ~Guard() { devprof_free(p); }
    } guard{p};
    p->dev = dev;
    p->peak_flops_f32 = pk.f32;
    p->peak_flops_f16 = pk.f16;
    p->mem_bytes_per_s = pk.mem;
    p->launch_us = pk.launch_us;
    if (base && base->n_eff > 0) {
        for (int32_t i = 0; i < base->n_eff; i++)
            if (!devprof_set_eff(p, base->eff[i].type, base->eff[i].compute, base->eff[i].memory))
                return sa_fail(err, SA_ENOMEM, "out of memory building the measured profile");
    } else if (!devprof_set_eff(p, "default", 0.5, 0.7)) {
        return sa_fail(err, SA_ENOMEM, "out of memory building the measured profile");
    }

    /* one timing per distinct shape */
    std::unordered_map<std::string, int> index;
    std::vector<Shape> shapes;
    std::vector<int> shape_of(g->n_ops);
    for (int32_t i = 0; i < g->n_ops; i++) {
        std::string k = shape_key(g, i);
        auto it = index.find(k);
        if (it == index.end()) {
            it = index.emplace(k, (int)shapes.size()).first;
            shapes.push_back(Shape{});
            shapes.back().rep = i;
        }
        shapes[it->second].count++;
        shape_of[i] = it->second;
    }
    int fallbacks = 0, analytic = 0;
    for (Shape &s : shapes) {
        r = measure_op(c, g, s.rep, &s.res);
        if (r == RC_HARD) {
            char where[160];
            snprintf(where, sizeof where, "timing ops[%d] (\"%s\", %s)", s.rep, g->ops[s.rep].name,
                     g->ops[s.rep].type);
            return step_failed(c, r, where);
        }
        s.timed = r == RC_OK;
        if (!s.timed) { /* even the stand-in could not run (out of memory): the model */
            s.res.method = "analytic";
            s.res.us = cost_op_time_us(p, g, s.rep);
            analytic++;
        } else if (s.res.method.rfind("fallback", 0) == 0) {
            fallbacks++;
        }
    }
    std::vector<double> us(g->n_ops);
    std::vector<bool> exact(g->n_ops);
    for (int32_t i = 0; i < g->n_ops; i++) {
        const Shape &s = shapes[shape_of[i]];
        us[i] = s.res.us;
        exact[i] = s.timed && s.res.method.rfind("fallback", 0) != 0;
    }
    std::vector<std::string> fitted;
    fit_efficiencies(g, us, exact, p, &fitted);

    /* the record kept in the profile as unknown fields */
    cJSON *root = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(root, "measurement");
    cJSON *ops = cJSON_AddArrayToObject(root, "measured_ops");
    if (!root || !m || !ops) {
        cJSON_Delete(root);
        return sa_fail(err, SA_ENOMEM, "out of memory building the measurement record");
    }
    int rt = 0, drv = 0, blasv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    cublasGetVersion(c.blas, &blasv);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", c.prop.major, c.prop.minor);
    cJSON_AddStringToObject(m, "device", c.prop.name);
    cJSON_AddStringToObject(m, "compute_capability", cc);
    cJSON_AddItemToObject(m, "sm_count", num(c.prop.multiProcessorCount));
    cJSON_AddItemToObject(m, "cuda_runtime", num(rt));
    cJSON_AddItemToObject(m, "cuda_driver", num(drv));
    cJSON_AddItemToObject(m, "cudnn", num((double)cudnnGetVersion()));
    cJSON_AddItemToObject(m, "cublas", num(blasv));
    cJSON_AddStringToObject(m, "graph", g->name);
    cJSON_AddItemToObject(m, "ops", num(g->n_ops));
    cJSON_AddItemToObject(m, "distinct_shapes", num((double)shapes.size()));
    cJSON_AddItemToObject(m, "fallback_shapes", num(fallbacks));
    cJSON_AddItemToObject(m, "analytic_shapes", num(analytic));
    cJSON_AddStringToObject(m, "peak_flops",
                            "achieved, not datasheet: cublasGemmEx 4096^3 FP32 (default math, no TF32) and 8192^3 "
                            "FP16 in / FP32 accumulate (tensor cores)");
    cJSON_AddStringToObject(m, "memory_bandwidth", "achieved: a 16-byte-vector copy kernel, read + write bytes");
    cJSON_AddStringToObject(m, "launch_overhead",
                            "device time per empty kernel launched back to back (op timings are taken the same way)");
    cJSON_AddStringToObject(m, "links",
                            "pinned memory, 4 copies of up to 256 MiB per direction; duplex = both directions at "
                            "once, summed; latency = a lone 4 KiB copy plus stream sync, less its bytes at full rate");
    cJSON_AddStringToObject(m, "op_times",
                            "device time per execution, best of two batches of back-to-back runs (about 2 ms each); "
                            "convolutions: cudnnFind*Ex within the op's workspace tensor (else 1 GiB), f32 with "
                            "cuDNN default math (TF32 allowed on Ampere+), f16 with tensor-op math");
    if (!notes.empty())
        cJSON_AddStringToObject(m, "notes", notes.c_str());
    cJSON *ft = cJSON_AddArrayToObject(m, "fitted_efficiencies");
    for (const std::string &t : fitted)
        cJSON_AddItemToArray(ft, cJSON_CreateString(t.c_str()));
    for (const Shape &s : shapes) {
        cJSON *e = cJSON_CreateObject();
        if (!e)
            break;
        cJSON_AddStringToObject(e, "type", g->ops[s.rep].type);
        cJSON_AddStringToObject(e, "op", g->ops[s.rep].name);
        cJSON_AddItemToObject(e, "ops", num(s.count));
        cJSON_AddItemToObject(e, "time_us", num(std::round(s.res.us * 1000.0) / 1000.0));
        cJSON_AddStringToObject(e, "method", s.res.method.c_str());
        if (!s.res.algo.empty())
            cJSON_AddStringToObject(e, "algo", s.res.algo.c_str());
        if (s.res.ws >= 0)
            cJSON_AddItemToObject(e, "workspace_bytes", num((double)s.res.ws));
        if (s.res.ws_limit >= 0)
            cJSON_AddItemToObject(e, "workspace_limit_bytes", num((double)s.res.ws_limit));
        if (!s.res.note.empty())
            cJSON_AddStringToObject(e, "note", s.res.note.c_str());
        cJSON_AddItemToArray(ops, e);
    }
    cJSON *src = cJSON_AddObjectToObject(root, "sources");
    cJSON_AddStringToObject(src, "all", "measured by dfg-profile --measure on this device; see \"measurement\"");
    char *extra = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!extra)
        return sa_fail(err, SA_ENOMEM, "out of memory printing the measurement record");
    p->extra_json = extra;
    snprintf(p->dev.name, sizeof p->dev.name, "%.80s (measured)", c.prop.name);

    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = us[i];
    *out = p;
    guard.p = nullptr;
    return SA_OK;
}

} /* namespace */

/* ------------------------------------------------------------------------- */
/* the C API                                                                 */

extern "C" sa_status gpu_available(sa_err *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return sa_fail(err, SA_EDEVICE, "no CUDA device: %s", cudaGetErrorString(e));
    }
    if (n < 1)
        return sa_fail(err, SA_EDEVICE, "no CUDA device: the driver reports none");
    /* A device older than the architectures this build targets (NVCCFLAGS)
     * has no kernel image to run: say so now rather than mid-measurement. */
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) {
        cudaGetLastError();
        return sa_fail(err, SA_EDEVICE, "no CUDA device: %s", cudaGetErrorString(e));
    }
    cudaFuncAttributes fa;
    if ((e = cudaFuncGetAttributes(&fa, k_empty)) != cudaSuccess) {
        cudaGetLastError();
        return sa_fail(err, SA_EDEVICE, "CUDA device %s (compute capability %d.%d) cannot run this build's kernels: %s",
                       prop.name, prop.major, prop.minor, cudaGetErrorString(e));
    }
    return SA_OK;
}

extern "C" sa_status gpu_measure_links(dfg_device *dev, sa_err *err)
{
    sa_status st = gpu_available(err);
    if (st)
        return st;
    try {
        Ctx c;
        c.err = err;
        if (cudaGetDeviceProperties(&c.prop, 0) != cudaSuccess) {
            cudaGetLastError();
            return sa_fail(err, SA_EDEVICE, "no CUDA device: cannot read device 0's properties");
        }
        Rc r = measure_links(c, dev);
        return r == RC_OK ? SA_OK : step_failed(c, r, "measuring the host link");
    } catch (const std::bad_alloc &) {
        return sa_fail(err, SA_ENOMEM, "out of host memory measuring the host link");
    }
}

extern "C" sa_status gpu_measure_graph(dfg_graph *g, const devprof *base, devprof **measured, sa_err *err)
{
    *measured = NULL;
    sa_status st = gpu_available(err);
    if (st)
        return st;
    try {
        return measure_graph(g, base, measured, err);
    } catch (const std::bad_alloc &) {
        return sa_fail(err, SA_ENOMEM, "out of host memory measuring graph %s", g->name);
    }
}
