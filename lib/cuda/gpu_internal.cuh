/*
 * gpu_internal.cuh - what the files behind gpu.h's CUDA implementation share.
 *
 * Every distinct op shape of a graph is run for real: cuDNN convolutions with
 * the fastest algorithm cudnnFind*Ex reports (within the op's workspace), cuBLAS
 * GEMMs for matrix products, and small kernels written here for element-wise
 * ops, reductions, pooling, embeddings and copies.  Where the graph lacks the
 * geometry an op needs, a calibrated memory-bound kernel moving the op's bytes
 * stands in (or, for ops with FLOPs, a GEMM of equal FLOPs), and the measured
 * profile says so per shape.  The files, lowest first:
 *
 *   gpu_kernels.cu   the CUDA kernels and the host functions that launch them
 *                    (the only file with <<<...>>>: kernels need no relocatable
 *                    device code)
 *   gpu_context.cu   error classification, the context (stream, events,
 *                    handles, cached buffers) and the basic timed blocks:
 *                    the memory-bound kernel and cuBLAS GEMMs
 *   gpu_geometry.cu  reading an op's geometry from the graph: convolution,
 *                    GEMM, pooling and embedding roles
 *   gpu_ops.cu       the op families, one timing function each, and
 *                    measure_op, which picks one and falls back
 *   gpu_measure.cu   device-wide figures (peaks, host link), the graph driver
 *                    and the C API of gpu.h
 *
 * Error policy: a CUDA, cuDNN or cuBLAS failure that means the device or this
 * code is broken aborts with SA_EDEVICE (RC_HARD, the message in the context's
 * sa_err); a failure that only means "this method cannot time this shape" (out
 * of device memory, cuDNN not supporting a geometry) is RC_SOFT with the reason
 * in Ctx::note, and the caller falls back to the next method.  Every resource
 * lives in an RAII holder, so every return path frees what was allocated.  No
 * exception leaves these files: the C entry points (gpu_measure.cu) catch
 * std::bad_alloc and report SA_ENOMEM.  Everything here lives in namespace
 * sa_gpu; what one file alone uses is static there or in an anonymous
 * namespace inside it.
 */
#ifndef SA_GPU_INTERNAL_CUH
#define SA_GPU_INTERNAL_CUH

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

namespace sa_gpu {

/* ------------------------------------------------------------------------- */
/* results and error classification (gpu_context.cu)                        */

enum Rc { RC_OK = 0, RC_SOFT, RC_HARD };

struct Ctx;
/* Classify a failed call: RC_SOFT (with c.note set) when it only means this
 * method cannot time the shape, else RC_HARD with SA_EDEVICE in c.err. */
Rc cuda_rc(Ctx &c, cudaError_t e, const char *what);
Rc dnn_rc(Ctx &c, cudnnStatus_t s, const char *what);
Rc blas_rc(Ctx &c, cublasStatus_t s, const char *what);

#define CK_CUDA(c, call)                                                                                           \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return sa_gpu::cuda_rc((c), e_, #call);                                                                \
    } while (0)
#define CK_DNN(c, call)                                                                                            \
    do {                                                                                                           \
        cudnnStatus_t s_ = (call);                                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                                            \
            return sa_gpu::dnn_rc((c), s_, #call);                                                                 \
    } while (0)
#define CK_BLAS(c, call)                                                                                           \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return sa_gpu::blas_rc((c), s_, #call);                                                                \
    } while (0)
#define CK_RC(expr)                                                                                                \
    do {                                                                                                           \
        sa_gpu::Rc r_ = (expr);                                                                                    \
        if (r_ != sa_gpu::RC_OK)                                                                                   \
            return r_;                                                                                             \
    } while (0)

/* ------------------------------------------------------------------------- */
/* dtypes (gpu_context.cu)                                                   */

enum Dt { DT_F32, DT_F16, DT_BF16, DT_F64 };

Dt dt_from_name(const char *s);
size_t dt_size(Dt d);
const char *dt_name(Dt d);
bool dt_half(Dt d);

/* ------------------------------------------------------------------------- */
/* kernel arguments (gpu_kernels.cu)                                         */

enum Flav { FLAV_PLAIN, FLAV_TANH, FLAV_OPT };

struct EwArgs {
    const uint4 *in[8];
    size_t len_in[8]; /* in 16-byte units; reads wrap (broadcast) */
    uint4 *out[8];
    size_t len_out[8];
    int nin, nout;
    size_t n;
};

struct RowArgs {
    const void *in[8];
    size_t len_in[8]; /* elements; reads wrap (gamma, beta, labels broadcast) */
    void *out[8];
    size_t len_out[8];
    int nin, nout;
    size_t rows, cols;
};

struct PoolGeo {
    int n, c, h, w, p, q, r, s, sh, sw, ph, pw;
};

/* ------------------------------------------------------------------------- */
/* the context: RAII holder of the stream, events, handles and buffers       */

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

/* gpu_context.cu */
Rc ctx_init(Ctx &c, sa_err *err);
/* Makes buffers idx[0..n) at least sizes[i] bytes.  On out-of-memory it drops
 * every cached buffer and tries the exact sizes once more. */
Rc ensure(Ctx &c, const int *idx, const size_t *sizes, int n);
/* RC_OK when the last kernel launch succeeded. */
Rc launched(Ctx &c, const char *what);

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
/* launchers (gpu_kernels.cu): each enqueues one kernel on c.s and returns   */
/* launched(c, its name)                                                     */

/* Fills bytes at p with values in [-1, 1) of dtype dt (a new seed per call). */
Rc fill(Ctx &c, void *p, size_t bytes, Dt dt);
/* n random token ids below vocab. */
Rc launch_fill_ids(Ctx &c, int32_t *p, size_t n, uint32_t vocab);
/* An empty kernel: the launch-overhead probe. */
Rc launch_empty(Ctx &c);
/* Whether this build has a kernel image for the current device. */
cudaError_t kernel_image_check(void);
/* The calibrated memory-bound kernel: rn 16-byte units in, wn out. */
Rc launch_mem(Ctx &c, unsigned grid, const uint4 *src, size_t rn, uint4 *dst, size_t wn, uint32_t *sink);
/* Element-wise flavour flav over a's arrays, f16 when half else f32. */
Rc launch_ew(Ctx &c, int flav, bool half, const EwArgs &a);
/* Row reduction + normalisation, one warp per row. */
Rc launch_rows(Ctx &c, unsigned grid, bool half, const RowArgs &a);
/* Per-channel statistics of X (and X * Y when Y is not null) into stats. */
Rc launch_bn_stats(Ctx &c, dim3 grid, bool half, const void *X, const void *Y, size_t n, size_t ch, size_t hw,
                   float *stats);
/* Pooling forward big -> small, or backward small -> out (reading big as x
 * when readx). */
Rc launch_pool(Ctx &c, unsigned grid, bool bwd, bool half, const void *big, void *small, void *out, bool readx,
               const PoolGeo &g);
/* Embedding gather table -> dense, or (bwd) scatter-add dense -> table. */
Rc launch_embed(Ctx &c, unsigned grid, bool bwd, bool half, void *table, const int32_t *ids, void *dense,
                size_t rows, size_t dim);

/* ------------------------------------------------------------------------- */
/* basic timed building blocks (gpu_context.cu)                              */

/* The calibrated memory-bound kernel: reads rbytes, writes wbytes. */
Rc time_mem(Ctx &c, size_t rbytes, size_t wbytes, double *us);

struct Gemm {
    long long batch, m, n, k;
};

/* Times the GEMMs gs back to back in dtype dt with cuBLAS. */
Rc time_gemms(Ctx &c, Dt dt, const std::vector<Gemm> &gs, double *us);
/* A GEMM with the op's FLOPs: m = rows when known, the rest square. */
Gemm gemm_equivalent(double flops, long long rows);

/* ------------------------------------------------------------------------- */
/* an op's geometry read from the graph (gpu_geometry.cu)                    */

struct Extras {
    int kh = -1, kw = -1, sh = -1, sw = -1, ph = -1, pw = -1, dh = 1, dw = 1, groups = -1;
};

/* The kernel / stride / pad / dilation / groups an op's extra JSON gives. */
Extras parse_extras(const char *json);
/* Elements of t, or -1 when it has no (sane) shape. */
long long numel(const sa_dfg_tensor *t);
/* Solves one spatial dimension: out = (in + 2 pad - ((k - 1) d + 1)) / stride + 1
 * for stride and pad (each given when >= 0), smallest stride then pad first. */
bool solve_dim(long long in, long long k, long long out, int d, int sg, int pg, int *stride, int *pad);
/* Every dimension of t is in [1, INT_MAX]. */
bool fits_int(const sa_dfg_tensor *t);

struct ConvGeo {
    int n, c, h, w, k, cpg, r, s, p, q, sh, sw, ph, pw, dh, dw, groups;
};

struct OpView {
    const sa_dfg_graph *g;
    const sa_dfg_op *op;
    std::vector<const sa_dfg_tensor *> in, out; /* outputs without workspaces */
    long long ws_bytes = 0;                  /* the op's workspace tensors */
    Dt dt = DT_F32;
    Extras ex;
};

OpView view_of(const sa_dfg_graph *g, int32_t o);

/* Each *_roles function fills its geometry and returns true, or returns false
 * with the reason in *why. */
bool conv_roles(const OpView &v, ConvGeo *geo, std::string *why);
bool gemm_roles(const OpView &v, bool batched, std::vector<Gemm> *gs, std::string *why);
bool pool_roles(const OpView &v, bool bwd, PoolGeo *out, bool *readx, std::string *why);
bool emb_roles(const OpView &v, bool bwd, size_t *vocab_out, size_t *dim_out, size_t *rows_out, std::string *why);

/* ------------------------------------------------------------------------- */
/* op families (gpu_ops.cu)                                                  */

struct Result {
    double us = 0;
    std::string method, algo, note;
    long long ws = -1, ws_limit = -1;
};

/* Times op o of g with its family's method, else the calibrated stand-in
 * (res->note says why).  RC_SOFT: even the stand-in could not run. */
Rc measure_op(Ctx &c, const sa_dfg_graph *g, int32_t o, Result *res);

} /* namespace sa_gpu */

#endif
