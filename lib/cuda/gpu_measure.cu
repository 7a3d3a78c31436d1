/*
 * gpu_measure.cu - real timings on a CUDA GPU behind the C API of gpu.h: the
 * device-wide figures (achieved peaks, launch overhead, the host link), the
 * graph driver (one timing per distinct op shape, fitted efficiencies, the
 * measurement record) and the C entry points, which catch std::bad_alloc so
 * that no exception leaves the library.  The kernels, the context and the op
 * families live beside it (gpu_internal.cuh lists the files).
 */
#include "gpu_internal.cuh"

namespace sa_gpu {
namespace { /* this file's own */

/* ------------------------------------------------------------------------- */
/* device-wide figures                                                       */

struct Peaks {
    double f32 = 0, f16 = 0, mem = 0, launch_us = 0;
};

Rc measure_peaks(Ctx &c, Peaks *pk, std::string *notes)
{
    double us = 0;
    CK_RC(time_it(c, [&]() -> Rc { return launch_empty(c); }, &us));
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

Rc measure_links(Ctx &c, sa_dfg_device *dev)
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

std::string shape_key(const sa_dfg_graph *g, int32_t o)
{
    const sa_dfg_op *op = &g->ops[o];
    std::string k = op->type;
    char b[64];
    snprintf(b, sizeof b, "|f%.17g|b%.17g", op->flops, op->bytes_accessed);
    k += b;
    for (int pass = 0; pass < 2; pass++) {
        k += pass ? "|out" : "|in";
        int n = pass ? op->n_out : op->n_in;
        const int32_t *ids = pass ? op->out : op->in;
        for (int i = 0; i < n; i++) {
            const sa_dfg_tensor *t = &g->tensors[ids[i]];
            snprintf(b, sizeof b, ";%s:%s:%lld:", sa_dfg_kind_name(t->kind), t->dtype ? t->dtype : "", (long long)t->bytes);
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

/* Fits per-type efficiencies to the timings: for each op, the roofline side it
 * sits on (with the measured peaks) gets ideal time / (measured - launch);
 * the type's value is the median, clamped to (0, 1]. */
void fit_efficiencies(const sa_dfg_graph *g, const std::vector<double> &us, const std::vector<bool> &exact,
                      sa_devprof *p, std::vector<std::string> *fitted)
{
    std::unordered_map<std::string, std::pair<std::vector<double>, std::vector<double>>> by;
    std::vector<std::string> order;
    for (int32_t i = 0; i < g->n_ops; i++) {
        if (!exact[i])
            continue;
        double busy = std::max(us[i] - p->launch_us, 0.05 * us[i]);
        double tc = sa_cost_op_flops(g, i) / sa_cost_op_peak_flops(p, g, i) * 1e6;
        double tm = sa_cost_op_bytes(g, i) / p->mem_bytes_per_s * 1e6;
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
        const sa_devprof_eff *old = sa_devprof_eff_for(p, t.c_str());
        double ce = e.first.empty() ? old->compute : median(e.first);
        double me = e.second.empty() ? old->memory : median(e.second);
        if (sa_devprof_set_eff(p, t.c_str(), ce, me))
            fitted->push_back(t);
    }
}

cJSON *num(double d) { return ju_number(d); }

/* A new profile with the figures measured so far (links and peaks) and the
 * efficiencies of base (else one default row); NULL when out of memory. */
sa_devprof *new_profile(const sa_dfg_device &dev, const Peaks &pk, const sa_devprof *base)
{
    sa_devprof *p = (sa_devprof *)calloc(1, sizeof *p);
    if (!p)
        return nullptr;
    p->dev = dev;
    p->peak_flops_f32 = pk.f32;
    p->peak_flops_f16 = pk.f16;
    p->mem_bytes_per_s = pk.mem;
    p->launch_us = pk.launch_us;
    bool ok = true;
    if (base && base->n_eff > 0) {
        for (int32_t i = 0; i < base->n_eff && ok; i++)
            ok = sa_devprof_set_eff(p, base->eff[i].type, base->eff[i].compute, base->eff[i].memory);
    } else {
        ok = sa_devprof_set_eff(p, "default", 0.5, 0.7);
    }
    if (!ok) {
        sa_devprof_free(p);
        return nullptr;
    }
    return p;
}

/* One entry per distinct shape of g's ops (shape_key), its first op as the
 * representative; shape_of[i] is op i's entry. */
void group_shapes(const sa_dfg_graph *g, std::vector<Shape> *shapes, std::vector<int> *shape_of)
{
    std::unordered_map<std::string, int> index;
    shape_of->assign(g->n_ops, 0);
    for (int32_t i = 0; i < g->n_ops; i++) {
        std::string k = shape_key(g, i);
        auto it = index.find(k);
        if (it == index.end()) {
            it = index.emplace(k, (int)shapes->size()).first;
            shapes->push_back(Shape{});
            shapes->back().rep = i;
        }
        (*shapes)[it->second].count++;
        (*shape_of)[i] = it->second;
    }
}

/* Times each shape's representative op; a shape that even the stand-in cannot
 * run (out of memory) gets p's analytic time.  SA_EDEVICE, naming the op, when
 * a timing fails hard. */
sa_status time_shapes(Ctx &c, const sa_dfg_graph *g, const sa_devprof *p, std::vector<Shape> &shapes, int *fallbacks,
                      int *analytic)
{
    for (Shape &s : shapes) {
        Rc r = measure_op(c, g, s.rep, &s.res);
        if (r == RC_HARD) {
            char where[160];
            snprintf(where, sizeof where, "timing ops[%d] (\"%s\", %s)", s.rep, g->ops[s.rep].name,
                     g->ops[s.rep].type);
            return step_failed(c, r, where);
        }
        s.timed = r == RC_OK;
        if (!s.timed) { /* even the stand-in could not run (out of memory): the model */
            s.res.method = "analytic";
            s.res.us = sa_cost_op_time_us(p, g, s.rep);
            (*analytic)++;
        } else if (s.res.method.rfind("fallback", 0) == 0) {
            (*fallbacks)++;
        }
    }
    return SA_OK;
}

/* The "measurement" object: the device, the software versions, the counts and
 * how each figure was taken. */
void describe_measurement(cJSON *m, Ctx &c, const sa_dfg_graph *g, size_t n_shapes, int fallbacks, int analytic,
                          const std::string &notes, const std::vector<std::string> &fitted)
{
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
    cJSON_AddItemToObject(m, "distinct_shapes", num((double)n_shapes));
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
}

/* One "measured_ops" entry per shape: its type, an op of it, how many ops
 * share it, the time and how it was taken. */
void describe_shapes(cJSON *ops, const sa_dfg_graph *g, const std::vector<Shape> &shapes)
{
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
}

/* The measurement record kept in the profile as unknown fields, printed into
 * *extra (malloc'd, the caller's); SA_ENOMEM leaves *extra alone. */
sa_status measurement_record(Ctx &c, const sa_dfg_graph *g, const std::vector<Shape> &shapes, int fallbacks,
                             int analytic, const std::string &notes, const std::vector<std::string> &fitted,
                             char **extra, sa_err *err)
{
    cJSON *root = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(root, "measurement");
    cJSON *ops = cJSON_AddArrayToObject(root, "measured_ops");
    if (!root || !m || !ops) {
        cJSON_Delete(root);
        return sa_fail(err, SA_ENOMEM, "out of memory building the measurement record");
    }
    describe_measurement(m, c, g, shapes.size(), fallbacks, analytic, notes, fitted);
    describe_shapes(ops, g, shapes);
    cJSON *src = cJSON_AddObjectToObject(root, "sources");
    cJSON_AddStringToObject(src, "all", "measured by dfg-profile --measure on this device; see \"measurement\"");
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return sa_fail(err, SA_ENOMEM, "out of memory printing the measurement record");
    *extra = text;
    return SA_OK;
}

/* The driver: context, links, peaks, one timing per distinct op shape,
 * efficiencies fitted to them, the record; then g's op times. */
sa_status measure_graph(sa_dfg_graph *g, const sa_devprof *base, sa_devprof **out, sa_err *err)
{
    Ctx c;
    Rc r = ctx_init(c, err);
    if (r != RC_OK)
        return step_failed(c, r, "setting up CUDA, cuBLAS and cuDNN");
    sa_dfg_device dev;
    if ((r = measure_links(c, &dev)) != RC_OK)
        return step_failed(c, r, "measuring the host link");
    Peaks pk;
    std::string notes;
    if ((r = measure_peaks(c, &pk, &notes)) != RC_OK)
        return step_failed(c, r, "measuring peak FLOP/s, bandwidth and launch overhead");

    sa_devprof *p = new_profile(dev, pk, base);
    if (!p)
        return sa_fail(err, SA_ENOMEM, "out of memory building the measured profile");
    struct Guard {
        sa_devprof *p;
        ~Guard() { sa_devprof_free(p); }
    } guard{p};

    std::vector<Shape> shapes;
    std::vector<int> shape_of;
    group_shapes(g, &shapes, &shape_of);
    int fallbacks = 0, analytic = 0;
    sa_status st = time_shapes(c, g, p, shapes, &fallbacks, &analytic);
    if (st)
        return st;
    std::vector<double> us(g->n_ops);
    std::vector<bool> exact(g->n_ops);
    for (int32_t i = 0; i < g->n_ops; i++) {
        const Shape &s = shapes[shape_of[i]];
        us[i] = s.res.us;
        exact[i] = s.timed && s.res.method.rfind("fallback", 0) != 0;
    }
    std::vector<std::string> fitted;
    fit_efficiencies(g, us, exact, p, &fitted);

    char *extra = nullptr;
    if ((st = measurement_record(c, g, shapes, fallbacks, analytic, notes, fitted, &extra, err)))
        return st;
    p->extra_json = extra;
    snprintf(p->dev.name, sizeof p->dev.name, "%.80s (measured)", c.prop.name);

    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = us[i];
    *out = p;
    guard.p = nullptr;
    return SA_OK;
}

} /* namespace */
} /* namespace sa_gpu */

using namespace sa_gpu;

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
    if ((e = kernel_image_check()) != cudaSuccess) {
        cudaGetLastError();
        return sa_fail(err, SA_EDEVICE, "CUDA device %s (compute capability %d.%d) cannot run this build's kernels: %s",
                       prop.name, prop.major, prop.minor, cudaGetErrorString(e));
    }
    return SA_OK;
}

extern "C" sa_status gpu_measure_links(sa_dfg_device *dev, sa_err *err)
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

extern "C" sa_status gpu_measure_graph(sa_dfg_graph *g, const sa_devprof *base, sa_devprof **measured, sa_err *err)
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
