/*
 * runner_cuda.cu - the CUDA backend of runner.h: replays a plan on a GPU.
 *
 * One cudaMalloc arena of the plan's arena_bytes (scaled when asked), one
 * pinned host pool (cudaHostAlloc) holding a copy of every tensor that lives
 * on the host at some point, three streams (compute, h2d, d2h) and two events
 * per node (its start, for timing, and its end, which every node that depends
 * on it waits for with cudaStreamWaitEvent).  Nodes are enqueued in a
 * topological order of stream order + deps, so each wait refers to the record
 * of the same iteration.  Iterations are fenced (every stream waits for the
 * previous iteration to end), as the plan's steady state assumes.
 *
 * Ops run as a calibrated kernel: every block touches a byte of each 128-byte
 * line of the op's inputs and outputs, then spins on clock64() until the op's
 * time_us has passed (the spin rate is measured once with cudaEvent timing).
 * With real_ops, matrix products (matmul, matmul_bwd_data, matmul_bwd_weight,
 * batched_matmul, batched_matmul_bwd) run as cuBLAS GEMMs of the shapes the
 * graph gives, convolutions keep the calibrated kernel (the graph has no
 * filter geometry to call cuDNN with), and every other op runs an element-wise
 * kernel that reads all its inputs and writes all its outputs once.
 *
 * NVTX ranges name every iteration, op and transfer (nvtx3, header-only);
 * Nsight Systems shows them on the CPU thread that enqueued the work and
 * projects them onto the GPU streams.
 *
 * Every CUDA and cuBLAS call is checked; the first failure ends the run with
 * SA_EDEVICE.  Resources live in one holder whose destructor frees them on
 * every path.  No exception leaves this file.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <vector>

extern "C" {
#include "swapadvisor/gpu.h"
#include "swapadvisor/runner.h"
}

namespace {

constexpr int MAXT = 16;      /* tensors per op a kernel touches (the rest are left alone) */
constexpr long long LINE = 128;

struct OpArgs {
    const unsigned char *in[MAXT];
    long long in_bytes[MAXT];
    unsigned char *out[MAXT];
    long long out_bytes[MAXT];
    int n_in, n_out;
    long long cycles;
    int words; /* element-wise: every pointer is 4-byte aligned, work on floats */
};

__global__ void spin_kernel(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

__global__ void calibrated_kernel(OpArgs a)
{
    long long t0 = clock64();
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (int j = 0; j < a.n_in; j++)
        for (long long i = tid * LINE; i < a.in_bytes[j]; i += nth * LINE)
            acc += a.in[j][i];
    for (int k = 0; k < a.n_out; k++)
        for (long long i = tid * LINE; i < a.out_bytes[k]; i += nth * LINE)
            a.out[k][i] = (unsigned char)(acc + (unsigned)i);
    while (clock64() - t0 < a.cycles) {
    }
}

__global__ void elementwise_kernel(OpArgs a)
{
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x, nth = (long long)gridDim.x * blockDim.x;
    long long unit = a.words ? 4 : 1, most = 0;
    for (int j = 0; j < a.n_in; j++)
        most = a.in_bytes[j] / unit > most ? a.in_bytes[j] / unit : most;
    for (int k = 0; k < a.n_out; k++)
        most = a.out_bytes[k] / unit > most ? a.out_bytes[k] / unit : most;
    for (long long w = tid; w < most; w += nth) {
        if (a.words) {
            float acc = 0.f;
            for (int j = 0; j < a.n_in; j++)
                if (w < a.in_bytes[j] / 4)
                    acc += reinterpret_cast<const float *>(a.in[j])[w];
            for (int k = 0; k < a.n_out; k++)
                if (w < a.out_bytes[k] / 4)
                    reinterpret_cast<float *>(a.out[k])[w] = acc * 0.5f + 1.0f;
        } else {
            unsigned acc = 0;
            for (int j = 0; j < a.n_in; j++)
                if (w < a.in_bytes[j])
                    acc += a.in[j][w];
            for (int k = 0; k < a.n_out; k++)
                if (w < a.out_bytes[k])
                    a.out[k][w] = (unsigned char)(acc * 3u + 1u);
        }
    }
}

sa_status cuda_fail(sa_err *err, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear a non-sticky error so cleanup can proceed */
    return sa_fail(err, SA_EDEVICE, "CUDA error: %s: %s", what, cudaGetErrorString(e));
}

sa_status blas_fail(sa_err *err, cublasStatus_t s, const char *what)
{
    return sa_fail(err, SA_EDEVICE, "cuBLAS error: %s: %s", what, cublasGetStatusString(s));
}

#define CK(call)                                                                                                   \
    do {                                                                                                           \
        cudaError_t e_ = (call);                                                                                   \
        if (e_ != cudaSuccess)                                                                                     \
            return cuda_fail(err, e_, #call);                                                                      \
    } while (0)
#define CKB(call)                                                                                                  \
    do {                                                                                                           \
        cublasStatus_t s_ = (call);                                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return blas_fail(err, s_, #call);                                                                      \
    } while (0)
#define CKS(expr)                                                                                                  \
    do {                                                                                                           \
        sa_status st_ = (expr);                                                                                    \
        if (st_ != SA_OK)                                                                                          \
            return st_;                                                                                            \
    } while (0)

/* One GEMM of an op: row-major C[m,n] = A[m,k] * B[k,n], batch times; a, b, c
 * index the op's tensors (inputs first, then outputs). */
struct Gemm {
    int m, n, k, batch;
    int a, b, c;
};

enum OpMode { MODE_CALIBRATED, MODE_CUBLAS, MODE_ELEMENTWISE };

struct OpPlan {
    OpMode mode = MODE_CALIBRATED;
    cudaDataType_t dt = CUDA_R_32F;
    int elem = 4;
    std::vector<Gemm> gemms;
};

/* Everything the run allocates; the destructor frees it on every path. */
struct Holder {
    unsigned char *arena = nullptr, *host = nullptr;
    cudaStream_t st[SA_PLAN_STREAM_COUNT] = {nullptr, nullptr, nullptr};
    std::vector<cudaEvent_t> ev_start, ev_end, it_start, it_end;
    cudaEvent_t join[SA_PLAN_STREAM_COUNT] = {nullptr, nullptr, nullptr};
    cudaEvent_t cal0 = nullptr, cal1 = nullptr;
    cublasHandle_t blas = nullptr;
    Holder() = default;
    Holder(const Holder &) = delete;
    Holder &operator=(const Holder &) = delete;
    ~Holder()
    {
        /* errors are ignored here: a failed run is already being reported */
        if (blas)
            cublasDestroy(blas);
        for (auto *v : {&ev_start, &ev_end, &it_start, &it_end})
            for (cudaEvent_t e : *v)
                if (e)
                    cudaEventDestroy(e);
        for (cudaEvent_t e : join)
            if (e)
                cudaEventDestroy(e);
        if (cal0)
            cudaEventDestroy(cal0);
        if (cal1)
            cudaEventDestroy(cal1);
        for (cudaStream_t s : st)
            if (s)
                cudaStreamDestroy(s);
        if (arena)
            cudaFree(arena);
        if (host)
            cudaFreeHost(host);
        cudaGetLastError();
    }
};

int64_t numel(const sa_dfg_tensor *t)
{
    if (t->ndim <= 0)
        return -1;
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] <= 0 || n > INT64_MAX / t->shape[d])
            return -1;
        n *= t->shape[d];
    }
    return n;
}

bool fits_int(int64_t x) { return x > 0 && x <= INT_MAX; }

/* Derives the GEMMs of a matrix-product op from its tensors' shapes; false
 * when the shapes are absent or do not agree (the op then stays calibrated). */
bool plan_gemms(const sa_dfg_graph *g, int32_t op, OpPlan *pl)
{
    const sa_dfg_op *o = &g->ops[op];
    std::string type = o->type ? o->type : "";
    auto T = [&](int k) -> const sa_dfg_tensor * {
        return &g->tensors[k < o->n_in ? o->in[k] : o->out[k - o->n_in]];
    };
    auto ne = [&](int k) { return numel(T(k)); };
    auto last = [&](int k, int from_end) -> int64_t {
        const sa_dfg_tensor *t = T(k);
        return t->ndim >= from_end ? t->shape[t->ndim - from_end] : -1;
    };
    auto add = [&](int64_t m, int64_t n, int64_t k, int64_t batch, int a, int b, int c) {
        if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(batch))
            return false;
        /* never read or write past an operand (an input of another dtype, say) */
        double e = pl->elem, bt = (double)batch;
        if ((double)T(a)->bytes < bt * (double)m * (double)k * e || (double)T(b)->bytes < bt * (double)k * (double)n * e ||
            (double)T(c)->bytes < bt * (double)m * (double)n * e)
            return false;
        pl->gemms.push_back(Gemm{(int)m, (int)n, (int)k, (int)batch, a, b, c});
        return true;
    };
    int ni = o->n_in;
    if (o->n_out < 1 || ni < 2)
        return false;
    int first_out = ni;
    if (ne(first_out) <= 0 || ne(0) <= 0 || ne(1) <= 0)
        return false;
    /* the element type, from the first output */
    int64_t bytes = T(first_out)->bytes, cnt = ne(first_out);
    if (bytes == cnt * 4) {
        pl->dt = CUDA_R_32F;
        pl->elem = 4;
    } else if (bytes == cnt * 2) {
        const char *dt = T(first_out)->dtype;
        pl->dt = dt && (strstr(dt, "bf") || strstr(dt, "BF")) ? CUDA_R_16BF : CUDA_R_16F;
        pl->elem = 2;
    } else {
        return false;
    }
    if (type == "matmul") { /* y[M,N] = x[M,K] w[K,N] */
        int64_t n = last(first_out, 1), m = ne(first_out) / n, k = ne(1) / n;
        return ne(0) == m * k && add(m, n, k, 1, 0, 1, first_out);
    }
    if (type == "matmul_bwd_data") { /* dx[M,K] = dy[M,N] w^T */
        int64_t n = last(0, 1), m = ne(0) / n, k = ne(1) / n;
        return ne(first_out) == m * k && add(m, k, n, 1, 0, 1, first_out);
    }
    if (type == "matmul_bwd_weight") { /* dw[K,N] = x^T dy[M,N] */
        int64_t n = last(1, 1), m = ne(1) / n, k = ne(first_out) / n;
        return ne(0) == m * k && add(k, n, m, 1, 0, 1, first_out);
    }
    if (type == "batched_matmul") { /* c[b,m,n] = a[b,m,k] b[b,k,n] */
        int64_t m = last(first_out, 2), n = last(first_out, 1);
        if (m <= 0 || n <= 0 || ne(first_out) % (m * n))
            return false;
        int64_t batch = ne(first_out) / (m * n);
        if (ne(0) % (batch * m))
            return false;
        int64_t k = ne(0) / (batch * m);
        return ne(1) == batch * k * n && add(m, n, k, batch, 0, 1, first_out);
    }
    if (type == "batched_matmul_bwd" && ni >= 3) { /* inputs dc, a, b; outputs da and/or db */
        int64_t m = last(0, 2), n = last(0, 1);
        if (m <= 0 || n <= 0 || ne(0) % (m * n) || ne(2) <= 0)
            return false;
        int64_t batch = ne(0) / (m * n);
        if (ne(1) % (batch * m))
            return false;
        int64_t k = ne(1) / (batch * m);
        if (ne(2) != batch * k * n)
            return false;
        for (int j = 0; j < o->n_out; j++) {
            int c = first_out + j;
            if (ne(c) == batch * m * k) {
                if (!add(m, k, n, batch, 0, 2, c)) /* da = dc b^T */
                    return false;
            } else if (ne(c) == batch * k * n) {
                if (!add(k, n, m, batch, 1, 0, c)) /* db = a^T dc */
                    return false;
            } else {
                return false;
            }
        }
        return true;
    }
    return false;
}

struct Run {
    const sa_plan *p;
    const sa_dfg_graph *g;
    const sa_runner_layout *l;
    const sa_runner_opts *o;
    sa_runner_report *rep;
    sa_err *err;
    Holder h;
    int sms = 0;
    std::vector<OpPlan> ops;
    std::vector<std::string> names;

    Run(const sa_plan *p_, const sa_dfg_graph *g_, const sa_runner_layout *l_, const sa_runner_opts *o_, sa_runner_report *rep_,
        sa_err *err_)
        : p(p_), g(g_), l(l_), o(o_), rep(rep_), err(err_)
    {
    }
    sa_status calibrate();
    sa_status setup();
    sa_status enqueue_node(int32_t n, bool count);
    sa_status run();
};

sa_status Run::calibrate()
{
    CK(cudaEventCreate(&h.cal0));
    CK(cudaEventCreate(&h.cal1));
    const long long cycles = 4000000;
    float ms = 0;
    for (int rep_i = 0; rep_i < 3; rep_i++) { /* the first launch pays for module loading */
        CK(cudaEventRecord(h.cal0, h.st[SA_PLAN_STREAM_COMPUTE]));
        spin_kernel<<<sms, 32, 0, h.st[SA_PLAN_STREAM_COMPUTE]>>>(cycles);
        CK(cudaGetLastError());
        CK(cudaEventRecord(h.cal1, h.st[SA_PLAN_STREAM_COMPUTE]));
        CK(cudaEventSynchronize(h.cal1));
        CK(cudaEventElapsedTime(&ms, h.cal0, h.cal1));
    }
    if (!(ms > 0))
        return sa_fail(err, SA_EDEVICE, "CUDA: calibrating the spin kernel measured no time");
    rep->cycles_per_us = (double)cycles / ((double)ms * 1e3);
    return SA_OK;
}

sa_status Run::setup()
{
    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    snprintf(rep->device_name, sizeof rep->device_name, "%.*s", (int)sizeof rep->device_name - 1, prop.name);
    sms = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if ((uint64_t)l->arena_bytes > free_b)
        return sa_fail(err, SA_EDEVICE, "CUDA: the arena needs %lld bytes but %s has %llu free (a plan for a smaller "
                       "memory, or --scale-bytes, fits)", (long long)l->arena_bytes, prop.name,
                       (unsigned long long)free_b);
    CK(cudaMalloc((void **)&h.arena, (size_t)(l->arena_bytes > 0 ? l->arena_bytes : 1)));
    CK(cudaMemset(h.arena, 0, (size_t)(l->arena_bytes > 0 ? l->arena_bytes : 1)));
    CK(cudaHostAlloc((void **)&h.host, (size_t)(l->host_bytes > 0 ? l->host_bytes : 1), cudaHostAllocDefault));
    /* contents do not matter for timing, but keep them defined */
    memset(h.host, 0, (size_t)(l->host_bytes > 0 ? l->host_bytes : 1));
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++) {
        CK(cudaStreamCreateWithFlags(&h.st[s], cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&h.join[s], cudaEventDisableTiming));
    }
    int32_t nn = p->n_nodes;
    h.ev_start.assign((size_t)nn, nullptr);
    h.ev_end.assign((size_t)nn, nullptr);
    for (int32_t i = 0; i < nn; i++) {
        CK(cudaEventCreate(&h.ev_start[(size_t)i]));
        CK(cudaEventCreate(&h.ev_end[(size_t)i]));
    }
    h.it_start.assign((size_t)o->iterations, nullptr);
    h.it_end.assign((size_t)o->iterations, nullptr);
    for (int i = 0; i < o->iterations; i++) {
        CK(cudaEventCreate(&h.it_start[(size_t)i]));
        CK(cudaEventCreate(&h.it_end[(size_t)i]));
    }
    ops.assign((size_t)g->n_ops, OpPlan());
    bool any_blas = false;
    for (int32_t op = 0; op < g->n_ops; op++) {
        OpPlan &pl = ops[(size_t)op];
        if (!o->real_ops)
            continue;
        const char *type = g->ops[op].type ? g->ops[op].type : "";
        if (strstr(type, "conv"))
            continue; /* no filter geometry in the graph: calibrated */
        if (plan_gemms(g, op, &pl)) {
            pl.mode = MODE_CUBLAS;
            any_blas = true;
        } else {
            pl.gemms.clear();
            pl.mode = MODE_ELEMENTWISE;
        }
    }
    if (any_blas) {
        CKB(cublasCreate(&h.blas));
        CKB(cublasSetStream(h.blas, h.st[SA_PLAN_STREAM_COMPUTE]));
    }
    names.resize((size_t)nn);
    for (int32_t i = 0; i < nn; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        bool is_op = nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE;
        const char *what = is_op ? g->ops[nd->ref].name : g->tensors[nd->ref].name;
        names[(size_t)i] = std::string(sa_plan_kind_name(nd->kind)) + " " + (what ? what : "?");
    }
    /* the steady state: residents hold their contents when the first iteration starts */
    for (int32_t i = 0; i < p->n_res; i++) {
        int32_t t = p->res[i].tensor;
        if (l->host_off[t] >= 0)
            CK(cudaMemcpy(h.arena + l->res_off[i], h.host + l->host_off[t], (size_t)l->tbytes[t],
                          cudaMemcpyHostToDevice));
    }
    /* the memset ran on the legacy stream, which the non-blocking streams do not wait for */
    CK(cudaDeviceSynchronize());
    return calibrate();
}

sa_status Run::enqueue_node(int32_t n, bool count)
{
    const sa_plan_node *nd = &p->nodes[n];
    sa_plan_stream s = sa_plan_kind_stream(nd->kind);
    cudaStream_t st = h.st[s];
    for (int32_t k = 0; k < nd->n_deps; k++)
        CK(cudaStreamWaitEvent(st, h.ev_end[(size_t)p->deps[nd->dep_off + k]], 0));
    CK(cudaEventRecord(h.ev_start[(size_t)n], st));
    nvtxRangePushA(names[(size_t)n].c_str());
    const int64_t *use = l->use + l->use_off[n];
    if (nd->kind == SA_PLAN_SWAP_IN) {
        CK(cudaMemcpyAsync(h.arena + use[0], h.host + l->host_off[nd->ref], (size_t)l->tbytes[nd->ref],
                           cudaMemcpyHostToDevice, st));
    } else if (nd->kind == SA_PLAN_SWAP_OUT) {
        CK(cudaMemcpyAsync(h.host + l->host_off[nd->ref], h.arena + use[0], (size_t)l->tbytes[nd->ref],
                           cudaMemcpyDeviceToHost, st));
    } else {
        const sa_dfg_op *op = &g->ops[nd->ref];
        const OpPlan &pl = ops[(size_t)nd->ref];
        OpMode mode = pl.mode;
        auto ptr = [&](int k) { return h.arena + use[k]; };
        if (mode == MODE_CUBLAS)
            for (const Gemm &gm : pl.gemms)
                if ((uintptr_t)ptr(gm.a) % (uintptr_t)pl.elem || (uintptr_t)ptr(gm.b) % (uintptr_t)pl.elem ||
                    (uintptr_t)ptr(gm.c) % (uintptr_t)pl.elem)
                    mode = MODE_CALIBRATED; /* cuBLAS needs element-aligned operands */
        if (mode == MODE_CUBLAS) {
            const float alpha = 1.0f, beta = 0.0f;
            for (const Gemm &gm : pl.gemms) {
                /* row-major C = A B is column-major C^T = B^T A^T: swap the operands */
                long long sa = (long long)gm.m * gm.k, sb = (long long)gm.k * gm.n, sc = (long long)gm.m * gm.n;
                if (gm.batch == 1)
                    CKB(cublasGemmEx(h.blas, CUBLAS_OP_N, CUBLAS_OP_N, gm.n, gm.m, gm.k, &alpha, ptr(gm.b), pl.dt,
                                     gm.n, ptr(gm.a), pl.dt, gm.k, &beta, ptr(gm.c), pl.dt, gm.n, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
                else
                    CKB(cublasGemmStridedBatchedEx(h.blas, CUBLAS_OP_N, CUBLAS_OP_N, gm.n, gm.m, gm.k, &alpha,
                                                   ptr(gm.b), pl.dt, gm.n, sb, ptr(gm.a), pl.dt, gm.k, sa, &beta,
                                                   ptr(gm.c), pl.dt, gm.n, sc, gm.batch, CUBLAS_COMPUTE_32F,
                                                   CUBLAS_GEMM_DEFAULT));
            }
        } else {
            OpArgs a;
            memset(&a, 0, sizeof a);
            bool aligned = true;
            for (int32_t k = 0; k < op->n_in && a.n_in < MAXT; k++, a.n_in++) {
                a.in[a.n_in] = ptr(k);
                a.in_bytes[a.n_in] = l->tbytes[op->in[k]];
                aligned = aligned && (uintptr_t)ptr(k) % 4 == 0;
            }
            for (int32_t k = 0; k < op->n_out && a.n_out < MAXT; k++, a.n_out++) {
                a.out[a.n_out] = ptr(op->n_in + k);
                a.out_bytes[a.n_out] = l->tbytes[op->out[k]];
                aligned = aligned && (uintptr_t)ptr(op->n_in + k) % 4 == 0;
            }
            a.words = aligned;
            if (mode == MODE_ELEMENTWISE) {
                elementwise_kernel<<<sms * 8, 256, 0, st>>>(a);
            } else {
                double us = op->time_us > 0 ? op->time_us : 0;
                a.cycles = (long long)(us * rep->cycles_per_us);
                calibrated_kernel<<<sms, 256, 0, st>>>(a);
            }
            CK(cudaGetLastError());
        }
        if (count) {
            if (mode == MODE_CUBLAS)
                rep->n_ops_cublas++;
            else if (mode == MODE_ELEMENTWISE)
                rep->n_ops_elementwise++;
            else
                rep->n_ops_calibrated++;
        }
    }
    nvtxRangePop();
    CK(cudaEventRecord(h.ev_end[(size_t)n], st));
    return SA_OK;
}

sa_status Run::run()
{
    CKS(setup());
    cudaStream_t cs = h.st[SA_PLAN_STREAM_COMPUTE];
    char label[64];
    for (int it = 0; it < o->iterations; it++) {
        snprintf(label, sizeof label, "iteration %d", it + 1);
        nvtxRangePushA(label);
        /* the fence: every stream starts after the previous iteration ended */
        CK(cudaEventRecord(h.it_start[(size_t)it], cs));
        CK(cudaStreamWaitEvent(h.st[SA_PLAN_STREAM_H2D], h.it_start[(size_t)it], 0));
        CK(cudaStreamWaitEvent(h.st[SA_PLAN_STREAM_D2H], h.it_start[(size_t)it], 0));
        for (int32_t i = 0; i < p->n_nodes; i++)
            CKS(enqueue_node(l->order[i], it == 0));
        for (int s = SA_PLAN_STREAM_H2D; s < SA_PLAN_STREAM_COUNT; s++) {
            CK(cudaEventRecord(h.join[s], h.st[s]));
            CK(cudaStreamWaitEvent(cs, h.join[s], 0));
        }
        CK(cudaEventRecord(h.it_end[(size_t)it], cs));
        nvtxRangePop();
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    for (int it = 0; it < o->iterations; it++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, h.it_start[(size_t)it], h.it_end[(size_t)it]));
        rep->iter_us[it] = (double)ms * 1e3;
    }
    /* achieved bandwidth: bytes over the time the copies took, last iteration */
    double sec[SA_PLAN_STREAM_COUNT] = {0, 0, 0};
    for (int32_t i = 0; i < p->n_nodes; i++) {
        sa_plan_stream s = sa_plan_kind_stream(p->nodes[i].kind);
        if (s == SA_PLAN_STREAM_COMPUTE)
            continue;
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, h.ev_start[(size_t)i], h.ev_end[(size_t)i]));
        sec[s] += (double)ms * 1e-3;
    }
    rep->h2d_bytes_per_s = sec[SA_PLAN_STREAM_H2D] > 0 ? (double)rep->h2d_bytes / sec[SA_PLAN_STREAM_H2D] : 0;
    rep->d2h_bytes_per_s = sec[SA_PLAN_STREAM_D2H] > 0 ? (double)rep->d2h_bytes / sec[SA_PLAN_STREAM_D2H] : 0;
    return SA_OK;
}

} /* namespace */

extern "C" sa_status sa_runner_cuda_replay(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_layout *l,
                                        const sa_runner_opts *o, sa_runner_report *rep, sa_err *err)
{
    sa_status st = gpu_available(err); /* a device this build's kernels run on */
    if (st)
        return st;
    try {
        Run r(p, g, l, o, rep, err);
        return r.run();
    } catch (const std::bad_alloc &) {
        return sa_fail(err, SA_ENOMEM, "CUDA replay: out of host memory");
    } catch (...) {
        return sa_fail(err, SA_EINTERNAL, "CUDA replay: unexpected exception");
    }
}
