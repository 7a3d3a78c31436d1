/*
 * gpu_geometry.cu - reading an op's geometry from the graph: the extras JSON,
 * and which tensors play which role in a convolution, a GEMM, a pooling or an
 * embedding (gpu_internal.cuh).  Host code only; nothing here touches the GPU.
 */
#include "gpu_internal.cuh"

namespace sa_gpu {

static void get_pair(const cJSON *o, std::initializer_list<const char *> names, int *a, int *b)
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

long long numel(const sa_dfg_tensor *t)
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

bool fits_int(const sa_dfg_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 1 || t->shape[i] > 2147483647LL)
            return false;
    return true;
}

static bool conv_fit(const sa_dfg_tensor *x, const sa_dfg_tensor *w, const sa_dfg_tensor *y, const Extras &e, ConvGeo *g)
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

OpView view_of(const sa_dfg_graph *g, int32_t o)
{
    OpView v;
    v.g = g;
    v.op = &g->ops[o];
    for (int i = 0; i < v.op->n_in; i++)
        v.in.push_back(&g->tensors[v.op->in[i]]);
    for (int i = 0; i < v.op->n_out; i++) {
        const sa_dfg_tensor *t = &g->tensors[v.op->out[i]];
        if (t->kind == SA_DFG_WORKSPACE)
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
    bool fwd = t == "conv2d" || t == "conv2d_bias_relu" || t == "conv2d_bias_add_relu", bdata = t == "conv2d_bwd_data";
    std::vector<const sa_dfg_tensor *> ins, outs;
    for (auto *x : v.in)
        if (x->ndim == 4)
            ins.push_back(x);
    for (auto *x : v.out)
        if (x->ndim == 4)
            outs.push_back(x);
    /* weights are read by forward and backward-data, written by backward-filter;
     * x and y: forward reads x writes y, backward-data reads dy writes dx,
     * backward-filter reads both */
    const std::vector<const sa_dfg_tensor *> &wc = (fwd || bdata) ? ins : outs;
    const std::vector<const sa_dfg_tensor *> &xs = fwd ? ins : bdata ? outs : ins;
    const std::vector<const sa_dfg_tensor *> &ys = fwd ? outs : ins;
    bool found = false;
    double best = 0;
    for (auto *w : wc)
        for (auto *x : xs)
            for (auto *y : ys) {
                ConvGeo g;
                if (x == w || y == w || x == y || !conv_fit(x, w, y, v.ex, &g))
                    continue;
                double macs = (double)g.n * g.k * g.p * g.q * (double)g.cpg * g.r * g.s;
                double score = (w->kind == SA_DFG_PARAM || !(fwd || bdata) ? 0 : 1e6) + (g.ph + g.pw);
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
        const sa_dfg_tensor *top = nullptr;
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

/* Pooling geometry from the shapes (and kernel / stride / pad extras when the
 * graph has them): forward x -> y; backward dy (small) -> dx (big), reading x
 * when the op lists it. */
bool pool_roles(const OpView &v, bool bwd, PoolGeo *out, bool *readx, std::string *why)
{
    const sa_dfg_tensor *big = nullptr, *small = nullptr, *xt = nullptr;
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

/* Embedding geometry: forward table (V x D, the param) and ids -> y;
 * backward dy and ids -> dtable. */
bool emb_roles(const OpView &v, bool bwd, size_t *vocab_out, size_t *dim_out, size_t *rows_out, std::string *why)
{
    const sa_dfg_tensor *table = nullptr, *dense = nullptr;
    if (!bwd) {
        for (auto *t : v.in)
            if (t->ndim == 2 && (!table || (t->kind == SA_DFG_PARAM && table->kind != SA_DFG_PARAM)))
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

} /* namespace sa_gpu */
