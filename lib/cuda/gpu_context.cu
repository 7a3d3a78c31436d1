/*
 * gpu_context.cu - error classification, the measurement context and the
 * basic timed building blocks (the memory-bound kernel, cuBLAS GEMMs) that
 * the op families and the device-wide figures are timed with
 * (gpu_internal.cuh).
 */
#include "gpu_internal.cuh"

namespace sa_gpu {

/* ------------------------------------------------------------------------- */
/* results and error classification                                          */

/* Short name of a CUDA API call for messages: the text before its '('. */
static std::string call_name(const char *what)
{
    const char *p = strchr(what, '(');
    return p ? std::string(what, (size_t)(p - what)) : std::string(what);
}

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

/* ------------------------------------------------------------------------- */
/* dtypes                                                                    */

Dt dt_from_name(const char *s)
{
    if (!s)
        return DT_F32;
    if (strcasecmp(s, "bf16") == 0 || strcasecmp(s, "bfloat16") == 0)
        return DT_BF16;
    if (sa_cost_dtype_is_half(s))
        return DT_F16;
    if (strcasecmp(s, "f64") == 0 || strcasecmp(s, "float64") == 0 || strcasecmp(s, "double") == 0)
        return DT_F64;
    return DT_F32;
}
size_t dt_size(Dt d) { return d == DT_F64 ? 8 : d == DT_F32 ? 4 : 2; }
const char *dt_name(Dt d) { return d == DT_F64 ? "f64" : d == DT_F32 ? "f32" : d == DT_F16 ? "f16" : "bf16"; }
bool dt_half(Dt d) { return d == DT_F16 || d == DT_BF16; }

/* ------------------------------------------------------------------------- */
/* the context                                                               */

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
    return time_it(c, [&]() -> Rc { return launch_mem(c, grid, src, rn, dst, wn, sink); }, us);
}

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

} /* namespace sa_gpu */
