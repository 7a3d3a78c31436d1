/*
 * gpu_ops.cu - the op families: one timing function per kind of op (cuDNN
 * convolutions, cuBLAS matrix products, this project's kernels for the rest),
 * and measure_op, which picks the family for an op and falls back to the
 * calibrated stand-in when the family cannot time it (gpu_internal.cuh).
 */
#include "gpu_internal.cuh"

namespace sa_gpu {

/* ------------------------------------------------------------------------- */
/* convolutions and matrix products                                          */

static const char *fwd_algo_name(int a)
{
    static const char *n[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                              "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 8 ? n[a] : "?";
}
static const char *bwd_data_algo_name(int a)
{
    static const char *n[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < 6 ? n[a] : "?";
}
static const char *bwd_filter_algo_name(int a)
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

/* A convolution ready to run: its descriptors, operands and workspace. */
struct ConvRun {
    DnnDesc d;
    void *X = nullptr, *W = nullptr, *Y = nullptr, *WS = nullptr;
    size_t wsz = 0;
    float fa = 1.0f, fb = 0.0f;
    double da = 1.0, db = 0.0;
    const void *alpha = nullptr, *beta = nullptr;
};

/* Creates and sets the cuDNN descriptors of geometry g; RC_SOFT when cuDNN
 * computes another output shape than the graph's. */
static Rc conv_descriptors(Ctx &c, const OpView &v, const ConvGeo &g, DnnDesc &d)
{
    cudnnDataType_t dt = v.dt == DT_F64 ? CUDNN_DATA_DOUBLE : v.dt == DT_F16 ? CUDNN_DATA_HALF
                         : v.dt == DT_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    cudnnDataType_t cdt = v.dt == DT_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
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
    return RC_OK;
}

/* Allocates and fills x, w and y of geometry g, and a workspace: what the
 * graph reserves for the op, else the framework default, never more than the
 * memory left beside the operands (none when even that does not fit). */
static Rc conv_operands(Ctx &c, const OpView &v, const ConvGeo &g, ConvRun &run, Result *res)
{
    size_t es = dt_size(v.dt);
    size_t xb = (size_t)g.n * g.c * g.h * g.w * es, wb = (size_t)g.k * g.cpg * g.r * g.s * es,
           yb = (size_t)g.n * g.k * g.p * g.q * es;
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
    run.X = c.buf[0].p;
    run.W = c.buf[1].p;
    run.Y = c.buf[2].p;
    run.WS = limit > 0 ? c.buf[3].p : nullptr;
    run.wsz = (size_t)limit;
    run.alpha = v.dt == DT_F64 ? (const void *)&run.da : (const void *)&run.fa;
    run.beta = v.dt == DT_F64 ? (const void *)&run.db : (const void *)&run.fb;
    return RC_OK;
}

/* Index of the fastest algorithm cuDNN found that ran within the workspace,
 * or -1. */
template <class Perf> static int conv_best(const Perf *perf, int got, size_t wsz)
{
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= wsz)
            return i;
    return -1;
}

static Rc conv_fwd(Ctx &c, ConvRun &u, Result *res)
{
    DnnDesc &d = u.d;
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    CK_DNN(c, cudnnFindConvolutionForwardAlgorithmEx(c.dnn, d.x, u.X, d.w, u.W, d.conv, d.y, u.Y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf, u.WS, u.wsz));
    int best = conv_best(perf, got, u.wsz);
    if (best < 0) {
        c.note = "cuDNN found no forward algorithm within the workspace";
        return RC_SOFT;
    }
    cudnnConvolutionFwdAlgo_t algo = perf[best].algo;
    res->algo = fwd_algo_name((int)algo);
    res->ws = (long long)perf[best].memory;
    size_t need = perf[best].memory;
    return time_it(
        c,
        [&]() -> Rc {
            CK_DNN(c, cudnnConvolutionForward(c.dnn, u.alpha, d.x, u.X, d.w, u.W, d.conv, algo, u.WS, need, u.beta,
                                              d.y, u.Y));
            return RC_OK;
        },
        &res->us);
}

static Rc conv_bwd_data(Ctx &c, ConvRun &u, Result *res)
{
    DnnDesc &d = u.d;
    int got = 0;
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    CK_DNN(c, cudnnFindConvolutionBackwardDataAlgorithmEx(c.dnn, d.w, u.W, d.y, u.Y, d.conv, d.x, u.X,
                                                          CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf, u.WS,
                                                          u.wsz));
    int best = conv_best(perf, got, u.wsz);
    if (best < 0) {
        c.note = "cuDNN found no backward-data algorithm within the workspace";
        return RC_SOFT;
    }
    cudnnConvolutionBwdDataAlgo_t algo = perf[best].algo;
    res->algo = bwd_data_algo_name((int)algo);
    res->ws = (long long)perf[best].memory;
    size_t need = perf[best].memory;
    return time_it(
        c,
        [&]() -> Rc {
            CK_DNN(c, cudnnConvolutionBackwardData(c.dnn, u.alpha, d.w, u.W, d.y, u.Y, d.conv, algo, u.WS, need,
                                                   u.beta, d.x, u.X));
            return RC_OK;
        },
        &res->us);
}

static Rc conv_bwd_filter(Ctx &c, ConvRun &u, Result *res)
{
    DnnDesc &d = u.d;
    int got = 0;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CK_DNN(c, cudnnFindConvolutionBackwardFilterAlgorithmEx(c.dnn, d.x, u.X, d.y, u.Y, d.conv, d.w, u.W,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf,
                                                            u.WS, u.wsz));
    int best = conv_best(perf, got, u.wsz);
    if (best < 0) {
        c.note = "cuDNN found no backward-filter algorithm within the workspace";
        return RC_SOFT;
    }
    cudnnConvolutionBwdFilterAlgo_t algo = perf[best].algo;
    res->algo = bwd_filter_algo_name((int)algo);
    res->ws = (long long)perf[best].memory;
    size_t need = perf[best].memory;
    return time_it(
        c,
        [&]() -> Rc {
            CK_DNN(c, cudnnConvolutionBackwardFilter(c.dnn, u.alpha, d.x, u.X, d.y, u.Y, d.conv, algo, u.WS, need,
                                                     u.beta, d.w, u.W));
            return RC_OK;
        },
        &res->us);
}

/* conv2d, conv2d_bwd_data, conv2d_bwd_filter with cuDNN: the geometry from
 * the shapes, the fastest algorithm cudnnFind*Ex reports within the op's
 * workspace, then its time. */
static Rc time_conv(Ctx &c, const OpView &v, Result *res)
{
    ConvGeo g;
    std::string why;
    if (!conv_roles(v, &g, &why)) {
        c.note = why;
        return RC_SOFT;
    }
    std::string type = v.op->type;
    ConvRun run;
    CK_RC(conv_descriptors(c, v, g, run.d));
    CK_RC(conv_operands(c, v, g, run, res));
    if (type == "conv2d" || type == "conv2d_bias_relu" || type == "conv2d_bias_add_relu")
        CK_RC(conv_fwd(c, run, res));
    else if (type == "conv2d_bwd_data")
        CK_RC(conv_bwd_data(c, run, res));
    else
        CK_RC(conv_bwd_filter(c, run, res));
    char geo[160];
    snprintf(geo, sizeof geo, "N%d C%d H%d W%d K%d R%d S%d stride %dx%d pad %dx%d dilation %dx%d groups %d", g.n, g.c,
             g.h, g.w, g.k, g.r, g.s, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups);
    res->method = "cudnn";
    res->note = geo;
    return RC_OK;
}

static Rc time_matmul(Ctx &c, const OpView &v, bool batched, Result *res)
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

/* ------------------------------------------------------------------------- */
/* this project's kernels: element-wise, rows, batchnorm, pooling, embedding  */

/* Arrays of an op for the element-wise and row kernels: every input, then
 * every non-workspace output, by bytes. */
static Rc ew_alloc(Ctx &c, const OpView &v, const std::vector<size_t> *in_b, const std::vector<size_t> *out_b);

static Rc ew_buffers(Ctx &c, const OpView &v, size_t extra_in_bytes, std::vector<size_t> *in_b,
                     std::vector<size_t> *out_b)
{
    for (auto *t : v.in)
        in_b->push_back((size_t)t->bytes);
    if (extra_in_bytes)
        in_b->push_back(extra_in_bytes);
    for (auto *t : v.out)
        out_b->push_back((size_t)t->bytes);
    return ew_alloc(c, v, in_b, out_b);
}

/* Device arrays of the given sizes: inputs at buf[0..], filled; outputs at
 * buf[8..]. */
static Rc ew_alloc(Ctx &c, const OpView &v, const std::vector<size_t> *in_b, const std::vector<size_t> *out_b)
{
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

static EwArgs ew_args(Ctx &c, const std::vector<size_t> &in_b, const std::vector<size_t> &out_b)
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

static Rc time_ew(Ctx &c, const OpView &v, int flav, Result *res)
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

/* A fused convolution of an inference graph (conv2d_bias_relu,
 * conv2d_bias_add_relu; docs/zoo.md, Inference): cuDNN's forward convolution,
 * then its epilogue timed as one element-wise pass that reads the output, the
 * bias and (for the residual form) the shortcut and writes the output.  A
 * fused kernel (cudnnConvolutionBiasActivationForward) applies the epilogue
 * before the store, so the sum is an upper bound on it. */
static Rc time_conv_fused(Ctx &c, const OpView &v, Result *res)
{
    CK_RC(time_conv(c, v, res));
    if (v.out.empty() || v.in.size() < 3) {
        c.note = "a fused convolution needs its bias input and its output";
        return RC_SOFT;
    }
    std::vector<size_t> in_b, out_b;
    in_b.push_back((size_t)v.out[0]->bytes);
    for (size_t i = 2; i < v.in.size(); i++) /* bias, shortcut */
        in_b.push_back((size_t)v.in[i]->bytes);
    out_b.push_back((size_t)v.out[0]->bytes);
    CK_RC(ew_alloc(c, v, &in_b, &out_b));
    EwArgs a = ew_args(c, in_b, out_b);
    bool half = dt_half(v.dt);
    double epi_us = 0;
    CK_RC(time_it(c, [&]() -> Rc { return launch_ew(c, FLAV_PLAIN, half, a); }, &epi_us));
    res->us += epi_us;
    res->note += "; + element-wise epilogue (bias";
    res->note += v.in.size() > 3 ? ", shortcut add, relu)" : ", relu)";
    return RC_OK;
}

static const sa_dfg_tensor *largest_shaped_input(const OpView &v)
{
    const sa_dfg_tensor *best = nullptr;
    for (auto *t : v.in)
        if (numel(t) > 0 && (!best || t->bytes > best->bytes))
            best = t;
    return best;
}

static Rc time_rows(Ctx &c, const OpView &v, Result *res)
{
    const sa_dfg_tensor *m = largest_shaped_input(v);
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
    CK_RC(time_it(c, [&]() -> Rc { return launch_rows(c, grid, half, a); }, &res->us));
    char b[96];
    snprintf(b, sizeof b, "row reduction: %zu rows x %zu", rows, cols);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

static Rc time_batchnorm(Ctx &c, const OpView &v, bool bwd, Result *res)
{
    const sa_dfg_tensor *x = largest_shaped_input(v);
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
            CK_RC(launch_bn_stats(c, grid, half, X, Y, n, ch, hw, stats));
            return launch_ew(c, FLAV_PLAIN, half, a);
        },
        &res->us));
    char b[96];
    snprintf(b, sizeof b, "per-channel statistics + normalise: N%zu C%zu HW%zu", n, ch, hw);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}


static Rc time_pool(Ctx &c, const OpView &v, bool bwd, Result *res)
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
    CK_RC(time_it(c, [&]() -> Rc { return launch_pool(c, grid, bwd, half, B0, S1, B2, readx, g); }, &res->us));
    char b[128];
    snprintf(b, sizeof b, "pool window %dx%d stride %dx%d pad %dx%d over N%d C%d %dx%d", g.r, g.s, g.sh, g.sw, g.ph, g.pw,
             g.n, g.c, g.h, g.w);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}


static Rc time_embedding(Ctx &c, const OpView &v, bool bwd, Result *res)
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
    CK_RC(launch_fill_ids(c, (int32_t *)c.buf[1].p, rows, (uint32_t)vocab));
    void *T = c.buf[0].p, *D = c.buf[2].p;
    const int32_t *ids = (const int32_t *)c.buf[1].p;
    unsigned grid = c.grid_for(rows * dim);
    size_t tb = sz[0];
    CK_RC(time_it(
        c,
        [&]() -> Rc {
            if (bwd)
                CK_CUDA(c, cudaMemsetAsync(T, 0, tb, c.s));
            return launch_embed(c, grid, bwd, half, T, ids, D, rows, dim);
        },
        &res->us));
    char b[96];
    snprintf(b, sizeof b, "%s: %zu rows of a %zu x %zu table", bwd ? "zero + scatter-add" : "gather", rows, vocab, dim);
    res->method = "kernel";
    res->note = b;
    return RC_OK;
}

static Rc time_copy(Ctx &c, const OpView &v, bool concat, Result *res)
{
    /* concat: every input into its slice of the output; split: the reverse */
    const std::vector<const sa_dfg_tensor *> &parts = concat ? v.in : v.out;
    const std::vector<const sa_dfg_tensor *> &whole = concat ? v.out : v.in;
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

static Rc time_lstm(Ctx &c, const OpView &v, Result *res)
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
        if (t->kind != SA_DFG_PARAM)
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
static Rc time_fallback(Ctx &c, const sa_dfg_graph *g, int32_t o, const OpView &v, Result *res)
{
    double bytes = sa_cost_op_bytes(g, o);
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
/* choosing the family                                                       */

Rc measure_op(Ctx &c, const sa_dfg_graph *g, int32_t o, Result *res)
{
    OpView v = view_of(g, o);
    std::string t = v.op->type;
    c.note.clear();
    Rc r;
    if (t == "conv2d" || t == "conv2d_bwd_data" || t == "conv2d_bwd_filter")
        r = time_conv(c, v, res);
    else if (t == "conv2d_bias_relu" || t == "conv2d_bias_add_relu")
        r = time_conv_fused(c, v, res);
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

} /* namespace sa_gpu */
