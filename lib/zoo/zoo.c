/* zoo.c - model names, the tape-based graph builder and the layer helpers. */
#include "swapadvisor/zoo.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_internal.h"

/* ------------------------------------------------------------------ names */

#define RNN_DEFAULT_SEQ 153  /* rnn-8-8k then has 8606 ops, Table 1 has 8594 (docs/zoo.md) */
#define BRNN_DEFAULT_SEQ 132 /* brnn-4-8k then has 9014 ops, Table 1 has 9034 */
#define GPT_DEFAULT_SEQ 1024

static const zoo_model_info MODELS[] = {
    {"resnet-D", "resnet-50", "ResNet v1.5 (torchvision), D = 18, 34, 50, 101, 152 or 200; 224x224, batch 64"},
    {"wresnet-D-X", "wresnet-152-10",
     "wide ResNet-D: every convolution's channel count times X (as the SwapAdvisor paper); 224x224, batch 64"},
    {"vgg-D", "vgg-16", "VGG-11, -13, -16 or -19 (no batchnorm); 224x224, batch 64"},
    {"inception-X", "inception-4", "Inception-V4 with every channel width times X; 299x299, batch 64"},
    {"nasnet-R", "nasnet-25", "NASNet-A large (168 filters) with 3R normal cells (R = 6 is the paper's); 331x331, batch 64"},
    {"rnn-L-XK", "rnn-8-8k",
     "L LSTM layers of hidden size X*1024 unrolled over --seq steps (default 153), weights shared "
     "per layer, vocab 10000; batch 256"},
    {"brnn-L-XK", "brnn-4-8k",
     "bidirectional rnn-L-XK: two directions per layer, outputs concatenated; --seq default 132, batch 128"},
    {"gpt-L-H", "gpt-12-768",
     "decoder-only transformer (GPT-2 layout), L layers, hidden H, --heads (H/64), --seq (1024), "
     "vocab 50257, tied embedding; batch 8"},
};

const zoo_model_info *zoo_models(int32_t *n)
{
    *n = (int32_t)SA_ARRAY_LEN(MODELS);
    return MODELS;
}

const char *zoo_dtype_name(zoo_dtype d) { return d == ZOO_F16 ? "f16" : "f32"; }

const char *zoo_optimizer_name(zoo_optimizer o)
{
    return o == ZOO_MOMENTUM ? "momentum" : o == ZOO_ADAM ? "adam" : "sgd";
}

bool zoo_dtype_from_name(const char *s, zoo_dtype *out)
{
    if (strcmp(s, "f32") == 0)
        *out = ZOO_F32;
    else if (strcmp(s, "f16") == 0)
        *out = ZOO_F16;
    else
        return false;
    return true;
}

bool zoo_optimizer_from_name(const char *s, zoo_optimizer *out)
{
    if (strcmp(s, "sgd") == 0)
        *out = ZOO_SGD;
    else if (strcmp(s, "momentum") == 0)
        *out = ZOO_MOMENTUM;
    else if (strcmp(s, "adam") == 0)
        *out = ZOO_ADAM;
    else
        return false;
    return true;
}

/* ------------------------------------------------------------------ core */

int32_t zb_fail(zb *z, sa_status st, const char *fmt, ...)
{
    if (z->st != SA_OK)
        return -1;
    char buf[sizeof z->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    z->st = sa_fail(z->err, st, "%s", buf);
    return -1;
}

static int32_t oom(zb *z) { return zb_fail(z, SA_ENOMEM, "out of memory building %s", z->g ? z->g->name : "a model"); }

/* Grows *p (elem bytes each) to hold at least n; doubles. */
static bool grow(zb *z, void **p, int64_t *cap, int64_t n, size_t elem)
{
    if (n <= *cap)
        return true;
    int64_t nc = *cap ? *cap * 2 : 256;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) {
        oom(z);
        return false;
    }
    *p = q;
    *cap = nc;
    return true;
}

static bool grow32(zb *z, void **p, int32_t *cap, int32_t n, size_t elem)
{
    int64_t c = *cap;
    bool ok = grow(z, p, &c, n, elem);
    *cap = (int32_t)c;
    return ok;
}

void zb_init(zb *z, const char *name, const zoo_opts *o, int64_t batch, sa_err *err)
{
    memset(z, 0, sizeof *z);
    z->err = err;
    z->esize = o->dtype == ZOO_F16 ? 2 : 4;
    z->dtype = zoo_dtype_name(o->dtype);
    z->opt = o->optimizer;
    z->g = dfg_new(name);
    if (!z->g) {
        oom(z);
        return;
    }
    z->g->batch = batch;
}

static void zb_release(zb *z)
{
    free(z->needs_grad);
    free(z->grad);
    free(z->n_contrib);
    free(z->contrib);
    free(z->c_tensor);
    free(z->c_next);
    free(z->tape);
    free(z->pool);
    free(z->params);
    z->needs_grad = NULL;
    z->grad = z->n_contrib = z->contrib = z->c_tensor = z->c_next = z->pool = z->params = NULL;
    z->tape = NULL;
}

/* Makes room for per-tensor data of tensor id t. */
static bool tensor_room(zb *z, int32_t t)
{
    if (t < z->tcap)
        return true;
    int32_t nc = z->tcap ? z->tcap : 256;
    while (nc <= t)
        nc *= 2;
    uint8_t *ng = realloc(z->needs_grad, (size_t)nc);
    if (ng)
        z->needs_grad = ng;
    int32_t *a = realloc(z->grad, (size_t)nc * sizeof *a);
    if (a)
        z->grad = a;
    int32_t *b = realloc(z->n_contrib, (size_t)nc * sizeof *b);
    if (b)
        z->n_contrib = b;
    int32_t *c = realloc(z->contrib, (size_t)nc * sizeof *c);
    if (c)
        z->contrib = c;
    if (!ng || !a || !b || !c) {
        oom(z);
        return false;
    }
    z->tcap = nc;
    return true;
}

static int32_t tensor_v(zb *z, dfg_kind kind, int ndim, const int64_t *shape, int64_t esize, const char *dtype,
                        const char *fmt, va_list ap)
{
    if (!zb_ok(z))
        return -1;
    char name[256];
    vsnprintf(name, sizeof name, fmt, ap);
    int64_t n = esize;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0)
            return zb_fail(z, SA_EINTERNAL, "%s: tensor %s has dimension %d of size %lld", z->g->name, name, d,
                           (long long)shape[d]);
        if (__builtin_mul_overflow(n, shape[d], &n) || (double)n > DFG_MAX_EXACT_INT)
            return zb_fail(z, SA_EUSAGE, "%s: tensor %s would exceed 2^53 bytes; use a smaller model or batch",
                           z->g->name, name);
    }
    int32_t t = dfg_add_tensor(z->g, name, kind, n);
    if (t < 0 || !dfg_set_shape(z->g, t, ndim, shape, dtype) || !tensor_room(z, t))
        return oom(z);
    z->needs_grad[t] = kind == DFG_PARAM;
    z->grad[t] = -1;
    z->n_contrib[t] = 0;
    z->contrib[t] = -1;
    return t;
}

int32_t zb_tensor(zb *z, dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int32_t t = tensor_v(z, kind, ndim, shape, z->esize, z->dtype, fmt, ap);
    va_end(ap);
    return t;
}

int32_t zb_tensor_i32(zb *z, dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int32_t t = tensor_v(z, kind, ndim, shape, 4, "i32", fmt, ap);
    va_end(ap);
    return t;
}

int32_t zb_param(zb *z, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int32_t t = tensor_v(z, DFG_PARAM, ndim, shape, z->esize, z->dtype, fmt, ap);
    va_end(ap);
    if (t < 0 || !grow32(z, (void **)&z->params, &z->paramcap, z->nparams + 1, sizeof *z->params))
        return -1;
    z->params[z->nparams++] = t;
    return t;
}

int32_t zb_like(zb *z, dfg_kind kind, int32_t like, const char *fmt, ...)
{
    if (!zb_ok(z))
        return -1;
    const dfg_tensor *l = &z->g->tensors[like];
    int64_t shape[ZB_MAXDIM];
    int nd = l->ndim;
    memcpy(shape, l->shape, (size_t)nd * sizeof *shape);
    int64_t es = l->dtype && strcmp(l->dtype, "i32") == 0 ? 4 : z->esize;
    const char *dt = es == 4 && l->dtype && strcmp(l->dtype, "i32") == 0 ? "i32" : z->dtype;
    va_list ap;
    va_start(ap, fmt);
    int32_t t = tensor_v(z, kind, nd, shape, es, dt, fmt, ap);
    va_end(ap);
    return t;
}

int64_t zb_numel(const zb *z, int32_t t)
{
    const dfg_tensor *x = &z->g->tensors[t];
    int64_t n = 1;
    for (int32_t d = 0; d < x->ndim; d++)
        n *= x->shape[d];
    return n;
}

bool zb_any_needs(const zb *z, const int32_t *ts, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (zb_needs(z, ts[i]))
            return true;
    return false;
}

void zb_set_needs(zb *z, int32_t t, bool v)
{
    if (t >= 0)
        z->needs_grad[t] = v;
}

int32_t zb_op(zb *z, const char *name, const char *type, dfg_phase ph, const int32_t *in, int32_t n_in,
              const int32_t *out, int32_t n_out, double flops)
{
    if (!zb_ok(z))
        return -1;
    double bytes = 0;
    for (int32_t i = 0; i < n_in; i++) {
        if (in[i] < 0)
            return zb_fail(z, SA_EINTERNAL, "%s: op %s has a missing input", z->g->name, name);
        bytes += (double)z->g->tensors[in[i]].bytes;
    }
    for (int32_t i = 0; i < n_out; i++) {
        if (out[i] < 0)
            return zb_fail(z, SA_EINTERNAL, "%s: op %s has a missing output", z->g->name, name);
        bytes += (double)z->g->tensors[out[i]].bytes;
    }
    int32_t op = dfg_add_op(z->g, name, type, ph, in, n_in, out, n_out);
    if (op < 0)
        return oom(z);
    z->g->ops[op].flops = flops;
    z->g->ops[op].bytes_accessed = bytes;
    return op;
}

void zb_tape(zb *z, zb_bwd_fn bwd, int32_t op, const int32_t *in, int32_t n_in, const int32_t *out, int32_t n_out,
             const int32_t *args, int32_t n_arg)
{
    if (!zb_ok(z) || op < 0)
        return;
    int64_t need = z->npool + n_in + n_out + n_arg;
    if (!grow32(z, (void **)&z->tape, &z->tapecap, z->ntape + 1, sizeof *z->tape) ||
        !grow(z, (void **)&z->pool, &z->poolcap, need, sizeof *z->pool))
        return;
    zb_entry *e = &z->tape[z->ntape++];
    e->bwd = bwd;
    e->op = op;
    e->n_in = n_in;
    e->n_out = n_out;
    e->n_arg = n_arg;
    e->off = z->npool;
    if (n_in)
        memcpy(z->pool + z->npool, in, (size_t)n_in * sizeof *in);
    z->npool += n_in;
    if (n_out)
        memcpy(z->pool + z->npool, out, (size_t)n_out * sizeof *out);
    z->npool += n_out;
    if (n_arg)
        memcpy(z->pool + z->npool, args, (size_t)n_arg * sizeof *args);
    z->npool += n_arg;
}

/* ------------------------------------------------------------------ gradients */

void zb_grad_add(zb *z, int32_t target, int32_t g)
{
    if (!zb_ok(z) || target < 0 || g < 0)
        return;
    if (z->grad[target] >= 0) {
        zb_fail(z, SA_EINTERNAL, "%s: gradient of %s gained a partial after it was summed", z->g->name,
                z->g->tensors[target].name);
        return;
    }
    if (z->cn >= z->ccap) {
        int32_t cap = z->ccap ? z->ccap * 2 : 1024;
        int32_t *a = realloc(z->c_tensor, (size_t)cap * sizeof *a);
        if (a)
            z->c_tensor = a;
        int32_t *b = realloc(z->c_next, (size_t)cap * sizeof *b);
        if (b)
            z->c_next = b;
        if (!a || !b) {
            oom(z);
            return;
        }
        z->ccap = cap;
    }
    z->c_tensor[z->cn] = g;
    z->c_next[z->cn] = z->contrib[target];
    z->contrib[target] = z->cn++;
    z->n_contrib[target]++;
}

int32_t zb_grad_tensor(zb *z, int32_t target)
{
    if (!zb_ok(z) || target < 0)
        return -1;
    return zb_like(z, DFG_GRADIENT, target, "grad/%s", z->g->tensors[target].name);
}

int32_t zb_grad_contrib(zb *z, int32_t target)
{
    if (!zb_ok(z) || target < 0)
        return -1;
    int32_t k = z->n_contrib[target] + 1;
    int32_t g = k == 1 ? zb_like(z, DFG_GRADIENT, target, "grad/%s", z->g->tensors[target].name)
                       : zb_like(z, DFG_GRADIENT, target, "grad/%s#%d", z->g->tensors[target].name, k);
    zb_grad_add(z, target, g);
    return g;
}

int32_t zb_grad(zb *z, int32_t target)
{
    if (!zb_ok(z) || target < 0)
        return -1;
    if (z->grad[target] >= 0)
        return z->grad[target];
    int32_t n = z->n_contrib[target];
    if (n == 0)
        return -1;
    if (n == 1)
        return z->grad[target] = z->c_tensor[z->contrib[target]];
    int32_t *ins = malloc((size_t)n * sizeof *ins);
    if (!ins)
        return oom(z);
    /* The list is newest first; the add reads them in the order they came. */
    int32_t k = n;
    for (int32_t c = z->contrib[target]; c >= 0; c = z->c_next[c])
        ins[--k] = z->c_tensor[c];
    const char *tn = z->g->tensors[target].name;
    int32_t sum = zb_like(z, DFG_GRADIENT, target, "grad/%s#sum", tn);
    char name[300];
    snprintf(name, sizeof name, "%s/grad_sum", tn);
    zb_op(z, name, "add", DFG_BACKWARD, ins, n, &sum, 1, (double)(n - 1) * (double)zb_numel(z, target));
    free(ins);
    if (!zb_ok(z))
        return -1;
    return z->grad[target] = sum;
}

/* ------------------------------------------------------------------ finish */

sa_status zb_finish(zb *z, dfg_graph **out)
{
    *out = NULL;
    for (int32_t i = z->ntape - 1; i >= 0 && zb_ok(z); i--)
        z->tape[i].bwd(z, &z->tape[i]);
    int32_t *pg = zb_ok(z) ? calloc((size_t)(z->nparams ? z->nparams : 1), sizeof *pg) : NULL;
    if (zb_ok(z) && !pg)
        oom(z);
    /* Every partial-gradient sum belongs to the backward phase, so all of them
     * come before the first update. */
    for (int32_t i = 0; i < z->nparams && zb_ok(z); i++)
        pg[i] = zb_grad(z, z->params[i]);
    for (int32_t i = 0; i < z->nparams && zb_ok(z); i++) {
        int32_t p = z->params[i], g = pg[i];
        if (g < 0)
            continue; /* the loss does not depend on it: nothing to update */
        const char *pn = z->g->tensors[p].name;
        char name[300];
        snprintf(name, sizeof name, "update/%s", pn);
        double n = (double)zb_numel(z, p);
        if (z->opt == ZOO_SGD) {
            int32_t in[] = {p, g}, o[] = {p};
            zb_op(z, name, "sgd_update", DFG_UPDATE, in, 2, o, 1, ZF_SGD * n);
        } else if (z->opt == ZOO_MOMENTUM) {
            int32_t m = zb_like(z, DFG_STATE, p, "%s.momentum", pn);
            int32_t in[] = {p, g, m}, o[] = {p, m};
            zb_op(z, name, "momentum_update", DFG_UPDATE, in, 3, o, 2, ZF_MOMENTUM * n);
        } else {
            int32_t m = zb_like(z, DFG_STATE, p, "%s.adam_m", pn);
            int32_t v = zb_like(z, DFG_STATE, p, "%s.adam_v", pn);
            int32_t in[] = {p, g, m, v}, o[] = {p, m, v};
            zb_op(z, name, "adam_update", DFG_UPDATE, in, 4, o, 3, ZF_ADAM * n);
        }
    }
    free(pg);
    sa_status st = z->st;
    if (st == SA_OK)
        st = dfg_finalize(z->g, z->g->name, z->err);
    zb_release(z);
    if (st != SA_OK) {
        dfg_free(z->g);
        z->g = NULL;
        return st;
    }
    *out = z->g;
    z->g = NULL;
    return SA_OK;
}

/* ------------------------------------------------------------------ layers */

/* Backward op name: the forward op's name + suffix. */
static const char *bname(const zb *z, const zb_entry *e, const char *suffix, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", zb_ename(z, e), suffix);
    return buf;
}

static int64_t out_size(int64_t in, int k, int s, int p)
{
    if (p == ZB_SAME)
        return (in + s - 1) / s;
    return (in + 2 * p - k) / s + 1;
}

/* args: ws (fwd workspace or -1) */
static void conv_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e), *a = zb_earg(z, e);
    int32_t x = in[0], w = in[1], b = e->n_in > 2 ? in[2] : -1, y = zb_eout(z, e)[0], ws = a[0];
    int32_t dy = zb_grad(z, y);
    if (dy < 0)
        return;
    double macs = (double)zb_numel(z, y) * (double)(zb_numel(z, w) / zb_dim(z, w, 0));
    char nm[300];
    if (zb_needs(z, x)) {
        int32_t dx = zb_grad_contrib(z, x);
        int32_t wsb = ws >= 0 ? zb_like(z, DFG_WORKSPACE, ws, "%s/bwd_data.ws", zb_ename(z, e)) : -1;
        int32_t i2[] = {dy, w}, o2[] = {dx, wsb};
        zb_op(z, bname(z, e, "bwd_data", nm, sizeof nm), "conv2d_bwd_data", DFG_BACKWARD, i2, 2, o2,
              wsb >= 0 ? 2 : 1, 2 * macs);
    }
    int32_t o3[3], n3 = 0;
    o3[n3++] = zb_grad_contrib(z, w);
    if (b >= 0)
        o3[n3++] = zb_grad_contrib(z, b);
    if (ws >= 0)
        o3[n3++] = zb_like(z, DFG_WORKSPACE, ws, "%s/bwd_filter.ws", zb_ename(z, e));
    int32_t i3[] = {dy, x};
    zb_op(z, bname(z, e, "bwd_filter", nm, sizeof nm), "conv2d_bwd_filter", DFG_BACKWARD, i3, 2, o3, n3,
          2 * macs + (b >= 0 ? (double)zb_numel(z, y) : 0));
}

int32_t zl_conv(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph, int pw,
                int64_t groups, bool bias)
{
    if (!zb_ok(z))
        return -1;
    if (zb_ndim(z, x) != 4)
        return zb_fail(z, SA_EINTERNAL, "%s: conv %s needs an NCHW input", z->g->name, name);
    int64_t n = zb_dim(z, x, 0), c = zb_dim(z, x, 1), h = zb_dim(z, x, 2), wd = zb_dim(z, x, 3);
    if (groups < 1 || c % groups || cout % groups)
        return zb_fail(z, SA_EINTERNAL, "%s: conv %s: %lld groups do not divide %lld -> %lld channels", z->g->name,
                       name, (long long)groups, (long long)c, (long long)cout);
    int64_t ho = out_size(h, kh, sh, ph), wo = out_size(wd, kw, sw, pw);
    int64_t wshape[] = {cout, c / groups, kh, kw}, yshape[] = {n, cout, ho, wo};
    int32_t w = zb_param(z, 4, wshape, "%s.w", name);
    int32_t b = bias ? zb_param(z, 1, &cout, "%s.b", name) : -1;
    int32_t y = zb_tensor(z, DFG_ACTIVATION, 4, yshape, "%s", name);
    int32_t ws = -1;
    /* Scratch: one image's im2col buffer (Caffe / MXNet native convolution);
     * a 1x1 stride-1 convolution is a plain GEMM and needs none. */
    if (kh * kw > 1 || sh > 1 || sw > 1) {
        int64_t wsshape[] = {c * kh * kw, ho * wo};
        ws = zb_tensor(z, DFG_WORKSPACE, 2, wsshape, "%s.ws", name);
    }
    double macs = (double)n * (double)cout * (double)(ho * wo) * (double)(c / groups) * kh * kw;
    int32_t in[] = {x, w, b}, out[] = {y, ws};
    int32_t op = zb_op(z, name, "conv2d", DFG_FORWARD, in, bias ? 3 : 2, out, ws >= 0 ? 2 : 1,
                       2 * macs + (bias ? (double)zb_numel(z, y) : 0));
    zb_set_needs(z, y, true);
    zb_tape(z, conv_bwd, op, in, bias ? 3 : 2, &y, 1, &ws, 1);
    return y;
}

/* Backward of a normalization with affine gamma/beta; args: the saved mean and
 * inverse std (batchnorm) or rstd (layernorm). */
static void norm_bwd(zb *z, const zb_entry *e, const char *type, double flops_per_elem)
{
    const int32_t *in = zb_ein(z, e), *a = zb_earg(z, e);
    int32_t x = in[0], gm = in[1], bt = in[2], y = zb_eout(z, e)[0];
    int32_t dy = zb_grad(z, y);
    if (dy < 0)
        return;
    int32_t o[3], n = 0;
    if (zb_needs(z, x))
        o[n++] = zb_grad_contrib(z, x);
    o[n++] = zb_grad_contrib(z, gm);
    o[n++] = zb_grad_contrib(z, bt);
    int32_t i2[] = {dy, x, gm, a[0], a[1]};
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), type, DFG_BACKWARD, i2, 5, o, n,
          flops_per_elem * (double)zb_numel(z, x));
}

static void bn_bwd(zb *z, const zb_entry *e) { norm_bwd(z, e, "batchnorm_bwd", ZF_BN_BWD); }

int32_t zl_bn(zb *z, const char *name, int32_t x)
{
    if (!zb_ok(z))
        return -1;
    int64_t c = zb_dim(z, x, 1);
    int32_t gm = zb_param(z, 1, &c, "%s.gamma", name);
    int32_t bt = zb_param(z, 1, &c, "%s.beta", name);
    /* Running statistics are persistent and updated in place by the forward op. */
    int32_t rm = zb_tensor(z, DFG_STATE, 1, &c, "%s.running_mean", name);
    int32_t rv = zb_tensor(z, DFG_STATE, 1, &c, "%s.running_var", name);
    int32_t y = zb_like(z, DFG_ACTIVATION, x, "%s", name);
    int32_t sm = zb_tensor(z, DFG_ACTIVATION, 1, &c, "%s.saved_mean", name);
    int32_t si = zb_tensor(z, DFG_ACTIVATION, 1, &c, "%s.saved_invstd", name);
    int32_t in[] = {x, gm, bt, rm, rv}, out[] = {y, sm, si, rm, rv};
    int32_t op = zb_op(z, name, "batchnorm", DFG_FORWARD, in, 5, out, 5, ZF_BN * (double)zb_numel(z, x));
    zb_set_needs(z, y, true);
    int32_t args[] = {sm, si};
    zb_tape(z, bn_bwd, op, in, 3, &y, 1, args, 2);
    return y;
}

/* Elementwise unary layers share one backward shape: type_bwd(dy [, x or y]) -> dx.
 * args: flops per element, whether the backward reads the output (1) or input (0),
 * or nothing (2). */
static void unary_bwd(zb *z, const zb_entry *e, const char *type)
{
    int32_t x = zb_ein(z, e)[0], y = zb_eout(z, e)[0];
    const int32_t *a = zb_earg(z, e);
    int32_t dy = zb_grad(z, y);
    if (dy < 0 || !zb_needs(z, x))
        return;
    int32_t dx = zb_grad_contrib(z, x);
    int32_t in[] = {dy, a[1] == 1 ? y : x};
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), type, DFG_BACKWARD, in, a[1] == 2 ? 1 : 2, &dx, 1,
          a[0] * (double)zb_numel(z, x));
}
static void relu_bwd(zb *z, const zb_entry *e) { unary_bwd(z, e, "relu_bwd"); }
static void gelu_bwd(zb *z, const zb_entry *e) { unary_bwd(z, e, "gelu_bwd"); }
static void softmax_bwd(zb *z, const zb_entry *e) { unary_bwd(z, e, "softmax_bwd"); }
static void mask_bwd(zb *z, const zb_entry *e) { unary_bwd(z, e, "mask"); }

static int32_t unary(zb *z, const char *name, int32_t x, const char *type, int fwd_flops, zb_bwd_fn bwd,
                     int bwd_flops, int reads)
{
    if (!zb_ok(z))
        return -1;
    int32_t y = zb_like(z, DFG_ACTIVATION, x, "%s", name);
    int32_t op = zb_op(z, name, type, DFG_FORWARD, &x, 1, &y, 1, fwd_flops * (double)zb_numel(z, x));
    zb_set_needs(z, y, zb_needs(z, x));
    int32_t args[] = {bwd_flops, reads};
    zb_tape(z, bwd, op, &x, 1, &y, 1, args, 2);
    return y;
}

int32_t zl_relu(zb *z, const char *name, int32_t x) { return unary(z, name, x, "relu", ZF_RELU, relu_bwd, ZF_RELU, 1); }
int32_t zl_gelu(zb *z, const char *name, int32_t x)
{
    return unary(z, name, x, "gelu", ZF_GELU, gelu_bwd, ZF_GELU_BWD, 0);
}
int32_t zl_softmax(zb *z, const char *name, int32_t x)
{
    return unary(z, name, x, "softmax", ZF_SOFTMAX, softmax_bwd, ZF_SOFTMAX_BWD, 1);
}
int32_t zl_mask(zb *z, const char *name, int32_t x) { return unary(z, name, x, "mask", ZF_MASK, mask_bwd, ZF_MASK, 2); }

int32_t zl_conv_bn_relu(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph,
                        int pw)
{
    char nm[300];
    int32_t y = zl_conv(z, name, x, cout, kh, kw, sh, sw, ph, pw, 1, false);
    snprintf(nm, sizeof nm, "%s_bn", name);
    y = zl_bn(z, nm, y);
    snprintf(nm, sizeof nm, "%s_relu", name);
    return zl_relu(z, nm, y);
}

/* args: max, window elements */
static void pool_bwd(zb *z, const zb_entry *e)
{
    int32_t x = zb_ein(z, e)[0], y = zb_eout(z, e)[0];
    const int32_t *a = zb_earg(z, e);
    int32_t dy = zb_grad(z, y);
    if (dy < 0 || !zb_needs(z, x))
        return;
    int32_t dx = zb_grad_contrib(z, x);
    /* Max pooling routes the gradient to the arg-max, so it reads x and y;
     * average pooling spreads it evenly and needs neither. */
    int32_t in[] = {dy, x, y};
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "pool_bwd", DFG_BACKWARD, in, a[0] ? 3 : 1, &dx, 1,
          (double)a[1] * (double)zb_numel(z, y));
}

int32_t zl_pool(zb *z, const char *name, int32_t x, bool max, int k, int s, int p)
{
    if (!zb_ok(z))
        return -1;
    int64_t n = zb_dim(z, x, 0), c = zb_dim(z, x, 1), h = zb_dim(z, x, 2), w = zb_dim(z, x, 3);
    int64_t kh = k, kw = k, ho, wo;
    if (k == 0) { /* global */
        kh = h;
        kw = w;
        ho = wo = 1;
    } else {
        ho = out_size(h, k, s, p);
        wo = out_size(w, k, s, p);
    }
    int64_t shape[] = {n, c, ho, wo};
    int32_t y = zb_tensor(z, DFG_ACTIVATION, 4, shape, "%s", name);
    double win = (double)(kh * kw);
    int32_t op = zb_op(z, name, "pool", DFG_FORWARD, &x, 1, &y, 1, win * (double)zb_numel(z, y));
    zb_set_needs(z, y, zb_needs(z, x));
    int32_t args[] = {max, (int32_t)(kh * kw)};
    zb_tape(z, pool_bwd, op, &x, 1, &y, 1, args, 2);
    return y;
}

static void add_bwd(zb *z, const zb_entry *e)
{
    int32_t dy = zb_grad(z, zb_eout(z, e)[0]);
    const int32_t *in = zb_ein(z, e);
    /* d(a + b) passes dy unchanged to every addend: no op, one shared tensor. */
    for (int32_t i = 0; i < e->n_in && dy >= 0; i++)
        if (zb_needs(z, in[i]))
            zb_grad_add(z, in[i], dy);
}

int32_t zl_add(zb *z, const char *name, const int32_t *xs, int32_t n)
{
    if (!zb_ok(z))
        return -1;
    for (int32_t i = 1; i < n; i++)
        if (zb_numel(z, xs[i]) != zb_numel(z, xs[0]))
            return zb_fail(z, SA_EINTERNAL, "%s: add %s: operand shapes differ", z->g->name, name);
    int32_t y = zb_like(z, DFG_ACTIVATION, xs[0], "%s", name);
    int32_t op = zb_op(z, name, "add", DFG_FORWARD, xs, n, &y, 1, (double)(n - 1) * (double)zb_numel(z, y));
    zb_set_needs(z, y, zb_any_needs(z, xs, n));
    zb_tape(z, add_bwd, op, xs, n, &y, 1, NULL, 0);
    return y;
}

static void concat_bwd(zb *z, const zb_entry *e)
{
    int32_t dy = zb_grad(z, zb_eout(z, e)[0]);
    const int32_t *in = zb_ein(z, e);
    if (dy < 0 || !zb_any_needs(z, in, e->n_in))
        return;
    int32_t *o = malloc((size_t)e->n_in * sizeof *o);
    if (!o) {
        oom(z);
        return;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_in; i++)
        if (zb_needs(z, in[i]))
            o[n++] = zb_grad_contrib(z, in[i]);
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "split", DFG_BACKWARD, &dy, 1, o, n, 0);
    free(o);
}

int32_t zl_concat(zb *z, const char *name, const int32_t *xs, int32_t n, int axis)
{
    if (!zb_ok(z))
        return -1;
    const dfg_tensor *t0 = &z->g->tensors[xs[0]];
    int64_t shape[ZB_MAXDIM];
    int nd = t0->ndim;
    memcpy(shape, t0->shape, (size_t)nd * sizeof *shape);
    shape[axis] = 0;
    for (int32_t i = 0; i < n; i++)
        shape[axis] += zb_dim(z, xs[i], axis);
    int32_t y = zb_tensor(z, DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t op = zb_op(z, name, "concat", DFG_FORWARD, xs, n, &y, 1, 0);
    zb_set_needs(z, y, zb_any_needs(z, xs, n));
    zb_tape(z, concat_bwd, op, xs, n, &y, 1, NULL, 0);
    return y;
}

static void split_bwd(zb *z, const zb_entry *e)
{
    int32_t x = zb_ein(z, e)[0];
    const int32_t *out = zb_eout(z, e);
    if (!zb_needs(z, x))
        return;
    int32_t *d = malloc((size_t)e->n_out * sizeof *d);
    if (!d) {
        oom(z);
        return;
    }
    for (int32_t i = 0; i < e->n_out && zb_ok(z); i++)
        if ((d[i] = zb_grad(z, out[i])) < 0)
            zb_fail(z, SA_EINTERNAL, "%s: split %s: piece %d is unused", z->g->name, zb_ename(z, e), i);
    int32_t dx = zb_grad_contrib(z, x);
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "concat", DFG_BACKWARD, d, e->n_out, &dx, 1, 0);
    free(d);
}

void zl_split(zb *z, const char *name, int32_t x, int32_t n, const int64_t *sizes, int axis, bool squeeze,
              int32_t *outs)
{
    if (!zb_ok(z))
        return;
    const dfg_tensor *t = &z->g->tensors[x];
    int64_t shape[ZB_MAXDIM];
    int nd = t->ndim;
    memcpy(shape, t->shape, (size_t)nd * sizeof *shape);
    int64_t total = shape[axis];
    for (int32_t i = 0; i < n; i++) {
        int64_t s[ZB_MAXDIM];
        memcpy(s, shape, sizeof s);
        s[axis] = sizes ? sizes[i] : total / n;
        int snd = nd;
        if (squeeze && s[axis] == 1) {
            memmove(s + axis, s + axis + 1, (size_t)(nd - axis - 1) * sizeof *s);
            snd--;
        }
        outs[i] = zb_tensor(z, DFG_ACTIVATION, snd, s, "%s.%d", name, i);
        zb_set_needs(z, outs[i], zb_needs(z, x));
    }
    int32_t op = zb_op(z, name, "split", DFG_FORWARD, &x, 1, outs, n, 0);
    zb_tape(z, split_bwd, op, &x, 1, outs, n, NULL, 0);
}

/* args: w transposed */
static void matmul_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e);
    int32_t x = in[0], w = in[1], b = e->n_in > 2 ? in[2] : -1, y = zb_eout(z, e)[0];
    int32_t dy = zb_grad(z, y);
    if (dy < 0)
        return;
    /* M*N*K = (elements of y) * K, and K = |w| / N whichever way w is laid out. */
    int64_t n = zb_dim(z, y, zb_ndim(z, y) - 1), k = zb_numel(z, w) / n;
    double mnk = (double)zb_numel(z, y) * (double)k;
    char nm[300];
    if (zb_needs(z, x)) {
        int32_t dx = zb_grad_contrib(z, x), i2[] = {dy, w};
        zb_op(z, bname(z, e, "bwd_data", nm, sizeof nm), "matmul_bwd_data", DFG_BACKWARD, i2, 2, &dx, 1, 2 * mnk);
    }
    int32_t o[2], no = 0;
    o[no++] = zb_grad_contrib(z, w);
    if (b >= 0)
        o[no++] = zb_grad_contrib(z, b);
    int32_t i3[] = {x, dy};
    zb_op(z, bname(z, e, "bwd_weight", nm, sizeof nm), "matmul_bwd_weight", DFG_BACKWARD, i3, 2, o, no,
          2 * mnk + (b >= 0 ? (double)zb_numel(z, y) : 0));
}

int32_t zl_matmul(zb *z, const char *name, int32_t x, int32_t w, int32_t b, bool w_transposed)
{
    if (!zb_ok(z))
        return -1;
    int64_t k = zb_dim(z, w, w_transposed ? 1 : 0), n = zb_dim(z, w, w_transposed ? 0 : 1);
    int64_t xn = zb_numel(z, x);
    if (xn % k)
        return zb_fail(z, SA_EINTERNAL, "%s: matmul %s: %lld elements are not rows of %lld", z->g->name, name,
                       (long long)xn, (long long)k);
    int64_t m = xn / k, shape[ZB_MAXDIM];
    const dfg_tensor *t = &z->g->tensors[x];
    int nd;
    if (t->shape[t->ndim - 1] == k) {
        nd = t->ndim;
        memcpy(shape, t->shape, (size_t)nd * sizeof *shape);
        shape[nd - 1] = n;
    } else {
        nd = 2;
        shape[0] = m;
        shape[1] = n;
    }
    int32_t y = zb_tensor(z, DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t in[] = {x, w, b};
    int32_t ni = b >= 0 ? 3 : 2;
    int32_t op = zb_op(z, name, "matmul", DFG_FORWARD, in, ni, &y, 1,
                       2.0 * (double)m * (double)n * (double)k + (b >= 0 ? (double)(m * n) : 0));
    zb_set_needs(z, y, true);
    int32_t args[] = {w_transposed};
    zb_tape(z, matmul_bwd, op, in, ni, &y, 1, args, 1);
    return y;
}

int32_t zl_linear(zb *z, const char *name, int32_t x, int64_t n_out, bool bias)
{
    if (!zb_ok(z))
        return -1;
    const dfg_tensor *t = &z->g->tensors[x];
    /* A pooled NCHW map flattens per sample; anything else maps its last axis. */
    int64_t k = t->ndim == 4 ? zb_numel(z, x) / t->shape[0] : t->shape[t->ndim - 1];
    int64_t ws[] = {k, n_out};
    int32_t w = zb_param(z, 2, ws, "%s.w", name);
    int32_t b = bias ? zb_param(z, 1, &n_out, "%s.b", name) : -1;
    return zl_matmul(z, name, x, w, b, false);
}

static void xent_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e);
    int32_t logits = in[0], labels = in[1], prob = zb_eout(z, e)[0];
    if (!zb_needs(z, logits))
        return;
    int32_t d = zb_grad_contrib(z, logits), i2[] = {prob, labels};
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "softmax_xent_bwd", DFG_BACKWARD, i2, 2, &d, 1,
          ZF_XENT_BWD * (double)zb_numel(z, logits));
}

int32_t zl_softmax_xent(zb *z, const char *name, int32_t logits, int32_t labels)
{
    if (!zb_ok(z))
        return -1;
    int32_t prob = zb_like(z, DFG_ACTIVATION, logits, "%s", name);
    int32_t in[] = {logits, labels};
    int32_t op = zb_op(z, name, "softmax_xent", DFG_FORWARD, in, 2, &prob, 1, ZF_XENT * (double)zb_numel(z, logits));
    zb_tape(z, xent_bwd, op, in, 2, &prob, 1, NULL, 0);
    return prob;
}

int32_t zl_classifier(zb *z, int32_t x, int64_t classes, int32_t labels)
{
    int32_t p = zl_pool(z, "avgpool", x, false, 0, 1, 0);
    int32_t f = zl_linear(z, "fc", p, classes, true);
    return zl_softmax_xent(z, "loss", f, labels);
}

static void ln_bwd(zb *z, const zb_entry *e) { norm_bwd(z, e, "layernorm_bwd", ZF_LN_BWD); }

int32_t zl_layernorm(zb *z, const char *name, int32_t x)
{
    if (!zb_ok(z))
        return -1;
    int64_t h = zb_dim(z, x, zb_ndim(z, x) - 1), rows = zb_numel(z, x) / h;
    int32_t gm = zb_param(z, 1, &h, "%s.gamma", name);
    int32_t bt = zb_param(z, 1, &h, "%s.beta", name);
    int32_t y = zb_like(z, DFG_ACTIVATION, x, "%s", name);
    int32_t mean = zb_tensor(z, DFG_ACTIVATION, 1, &rows, "%s.mean", name);
    int32_t rstd = zb_tensor(z, DFG_ACTIVATION, 1, &rows, "%s.rstd", name);
    int32_t in[] = {x, gm, bt}, out[] = {y, mean, rstd};
    int32_t op = zb_op(z, name, "layernorm", DFG_FORWARD, in, 3, out, 3, ZF_LN * (double)zb_numel(z, x));
    zb_set_needs(z, y, true);
    int32_t args[] = {mean, rstd};
    zb_tape(z, ln_bwd, op, in, 3, &y, 1, args, 2);
    return y;
}

/* args: batch, m, n, k */
static void bmm_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e), *a = zb_earg(z, e);
    int32_t dc = zb_grad(z, zb_eout(z, e)[0]);
    if (dc < 0)
        return;
    double f = 2.0 * a[0] * (double)a[1] * (double)a[2] * (double)a[3];
    int32_t o[2], n = 0;
    for (int i = 0; i < 2; i++)
        if (zb_needs(z, in[i]))
            o[n++] = zb_grad_contrib(z, in[i]);
    if (n == 0)
        return;
    int32_t i2[] = {dc, in[0], in[1]};
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "batched_matmul_bwd", DFG_BACKWARD, i2, 3, o, n, f * n);
}

int32_t zl_bmm(zb *z, const char *name, int32_t a, int32_t b, int ndim, const int64_t *out_shape, int64_t batch,
               int64_t m, int64_t n, int64_t k)
{
    if (!zb_ok(z))
        return -1;
    if (batch > INT32_MAX || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return zb_fail(z, SA_EUSAGE, "%s: batched matmul %s is too large (batch x heads over 2^31)", z->g->name, name);
    if (zb_numel(z, a) != batch * m * k || zb_numel(z, b) != batch * k * n)
        return zb_fail(z, SA_EINTERNAL, "%s: batched matmul %s: operand sizes do not match", z->g->name, name);
    int32_t c = zb_tensor(z, DFG_ACTIVATION, ndim, out_shape, "%s", name);
    int32_t in[] = {a, b};
    int32_t op = zb_op(z, name, "batched_matmul", DFG_FORWARD, in, 2, &c, 1,
                       2.0 * (double)batch * (double)m * (double)n * (double)k);
    zb_set_needs(z, c, zb_any_needs(z, in, 2));
    int32_t args[] = {(int32_t)batch, (int32_t)m, (int32_t)n, (int32_t)k};
    zb_tape(z, bmm_bwd, op, in, 2, &c, 1, args, 4);
    return c;
}

static void embedding_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e);
    int32_t idx = in[0], y = zb_eout(z, e)[0];
    int32_t dy = zb_grad(z, y);
    if (dy < 0)
        return;
    int32_t o[2], n = 0;
    for (int32_t i = 1; i < e->n_in; i++)
        o[n++] = zb_grad_contrib(z, in[i]);
    int32_t i2[] = {idx, dy};
    char nm[300];
    /* Scatter-add of every row of dy (twice with positions: tokens, then the
     * batch-summed position rows). */
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "embedding_bwd", DFG_BACKWARD, i2, 2, o, n,
          (double)(e->n_in - 1) * (double)zb_numel(z, dy));
}

int32_t zl_embedding(zb *z, const char *name, int32_t idx, int32_t table, int32_t pos)
{
    if (!zb_ok(z))
        return -1;
    const dfg_tensor *t = &z->g->tensors[idx];
    int64_t shape[ZB_MAXDIM], h = zb_dim(z, table, 1);
    int nd = t->ndim;
    if (nd >= ZB_MAXDIM)
        return zb_fail(z, SA_EINTERNAL, "%s: embedding %s: index tensor has too many axes", z->g->name, name);
    memcpy(shape, t->shape, (size_t)nd * sizeof *shape);
    shape[nd++] = h;
    int32_t y = zb_tensor(z, DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t in[] = {idx, table, pos};
    int32_t ni = pos >= 0 ? 3 : 2;
    int32_t op = zb_op(z, name, "embedding", DFG_FORWARD, in, ni, &y, 1, pos >= 0 ? (double)zb_numel(z, y) : 0);
    if (op >= 0) {
        /* A gather reads only the rows it needs, not the whole table. */
        double rows = (double)zb_bytes(z, y);
        if (pos >= 0)
            rows += (double)(shape[nd - 2] * h * z->esize);
        z->g->ops[op].bytes_accessed = (double)zb_bytes(z, idx) + (double)zb_bytes(z, y) + rows;
    }
    zb_set_needs(z, y, true);
    zb_tape(z, embedding_bwd, op, in, ni, &y, 1, NULL, 0);
    return y;
}

/* ------------------------------------------------------------------ dispatch */

typedef enum fam { F_RESNET, F_WRESNET, F_VGG, F_INCEPTION, F_NASNET, F_RNN, F_BRNN, F_GPT } fam;

typedef struct spec {
    fam f;
    int a;    /* depth, layers, repeats */
    double x; /* width scale */
    int64_t h; /* hidden size */
} spec;

static sa_status unknown(const char *name, sa_err *err)
{
    char list[512] = "";
    for (size_t i = 0; i < SA_ARRAY_LEN(MODELS); i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, MODELS[i].pattern, sizeof list - strlen(list) - 1);
    }
    return sa_fail(err, SA_EUSAGE, "unknown model '%s' (models: %s; e.g. wresnet-152-10, rnn-8-8k, gpt-12-768)", name,
                   list);
}

/* Parses a whole decimal integer in [lo, hi]. */
static bool pint(const char *s, size_t len, long lo, long hi, long *out)
{
    if (len == 0 || len > 18)
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* Parses a positive decimal number (digits with at most one '.') in (0, hi]. */
static bool pnum(const char *s, size_t len, double hi, double *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return false;
    int dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.')
            dots++;
        else if (s[i] < '0' || s[i] > '9')
            return false;
    }
    if (dots > 1 || s[0] == '.' || s[len - 1] == '.')
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    double v = strtod(buf, NULL);
    if (!(v > 0) || v > hi)
        return false;
    *out = v;
    return true;
}

static bool resnet_depth(long d) { return d == 18 || d == 34 || d == 50 || d == 101 || d == 152 || d == 200; }

static sa_status parse_name(const char *name, spec *sp, sa_err *err)
{
    const char *dash = strchr(name, '-');
    if (!dash)
        return unknown(name, err);
    size_t fl = (size_t)(dash - name);
    const char *r = dash + 1;
    const char *d2 = strchr(r, '-');
    size_t l1 = d2 ? (size_t)(d2 - r) : strlen(r);
    const char *r2 = d2 ? d2 + 1 : NULL;
    long v;
    double x;
    memset(sp, 0, sizeof *sp);
#define FAM(s) (fl == strlen(s) && strncmp(name, s, fl) == 0)
    if (FAM("resnet") || FAM("wresnet")) {
        bool wide = FAM("wresnet");
        if (!pint(r, l1, 1, 1000, &v) || !resnet_depth(v))
            return sa_fail(err, SA_EUSAGE, "model '%s': ResNet depth must be 18, 34, 50, 101, 152 or 200", name);
        sp->f = wide ? F_WRESNET : F_RESNET;
        sp->a = (int)v;
        sp->x = 1;
        if (wide) {
            if (!r2 || !pnum(r2, strlen(r2), 64, &x))
                return sa_fail(err, SA_EUSAGE, "model '%s': expected wresnet-D-X with a width scale X in (0, 64]",
                               name);
            sp->x = x;
        } else if (r2) {
            return sa_fail(err, SA_EUSAGE, "model '%s': expected resnet-D (widen with wresnet-D-X)", name);
        }
        return SA_OK;
    }
    if (FAM("vgg")) {
        if (r2 || !pint(r, l1, 1, 100, &v) || (v != 11 && v != 13 && v != 16 && v != 19))
            return sa_fail(err, SA_EUSAGE, "model '%s': VGG depth must be 11, 13, 16 or 19", name);
        sp->f = F_VGG;
        sp->a = (int)v;
        return SA_OK;
    }
    if (FAM("inception")) {
        if (r2 || !pnum(r, l1, 64, &x))
            return sa_fail(err, SA_EUSAGE, "model '%s': expected inception-X with a width scale X in (0, 64]", name);
        sp->f = F_INCEPTION;
        sp->x = x;
        return SA_OK;
    }
    if (FAM("nasnet")) {
        if (r2 || !pint(r, l1, 1, 200, &v))
            return sa_fail(err, SA_EUSAGE, "model '%s': expected nasnet-R with R in 1..200 (3R normal cells)", name);
        sp->f = F_NASNET;
        sp->a = (int)v;
        return SA_OK;
    }
    if (FAM("rnn") || FAM("brnn")) {
        size_t l2 = r2 ? strlen(r2) : 0;
        long k;
        if (!pint(r, l1, 1, 256, &v) || l2 < 2 || (r2[l2 - 1] != 'k' && r2[l2 - 1] != 'K') ||
            !pint(r2, l2 - 1, 1, 64, &k))
            return sa_fail(err, SA_EUSAGE,
                           "model '%s': expected %s-L-XK with L in 1..256 layers and hidden size X*1024, X in 1..64 "
                           "(e.g. %s-8-8k)",
                           name, FAM("rnn") ? "rnn" : "brnn", FAM("rnn") ? "rnn" : "brnn");
        sp->f = FAM("rnn") ? F_RNN : F_BRNN;
        sp->a = (int)v;
        sp->h = k * 1024;
        return SA_OK;
    }
    if (FAM("gpt")) {
        long h;
        if (!pint(r, l1, 1, 1000, &v) || !r2 || !pint(r2, strlen(r2), 1, 65536, &h))
            return sa_fail(err, SA_EUSAGE,
                           "model '%s': expected gpt-L-H with L in 1..1000 layers and hidden size H in 1..65536", name);
        sp->f = F_GPT;
        sp->a = (int)v;
        sp->h = h;
        return SA_OK;
    }
#undef FAM
    return unknown(name, err);
}

static void defaults(const spec *sp, int64_t *batch, int64_t *seq)
{
    *seq = 0;
    switch (sp->f) {
    case F_RNN:
        *batch = 256;
        *seq = RNN_DEFAULT_SEQ;
        break;
    case F_BRNN:
        *batch = 128;
        *seq = BRNN_DEFAULT_SEQ;
        break;
    case F_GPT:
        *batch = 8;
        *seq = GPT_DEFAULT_SEQ;
        break;
    default:
        *batch = 64;
    }
}

sa_status zoo_defaults(const char *name, int64_t *batch, int64_t *seq, sa_err *err)
{
    spec sp;
    sa_status st = parse_name(name ? name : "", &sp, err);
    if (st == SA_OK)
        defaults(&sp, batch, seq);
    return st;
}

/* The options and model behind the graph, kept as an extra top-level field. */
static char *zoo_extra(const char *name, const zoo_opts *o, int64_t seq, int64_t heads)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "{\"zoo\":{\"model\":\"%s\",\"dtype\":\"%s\",\"optimizer\":\"%s\"", name,
                     zoo_dtype_name(o->dtype), zoo_optimizer_name(o->optimizer));
    if (seq > 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"seq\":%lld", (long long)seq);
    if (heads > 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ",\"heads\":%lld", (long long)heads);
    snprintf(buf + n, sizeof buf - (size_t)n, "}}");
    return sa_strdup(buf);
}

sa_status zoo_build(const char *name, const zoo_opts *opts, dfg_graph **out, sa_err *err)
{
    *out = NULL;
    static const zoo_opts none;
    const zoo_opts *o = opts ? opts : &none;
    if (!name)
        return unknown("", err);
    /* Names go into JSON and messages verbatim, so keep them plain. */
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '.'))
            return unknown(name, err);
    spec sp;
    sa_status st = parse_name(name, &sp, err);
    if (st)
        return st;
    if ((unsigned)o->dtype > ZOO_F16 || (unsigned)o->optimizer > ZOO_ADAM)
        return sa_fail(err, SA_EUSAGE, "model '%s': unknown dtype or optimizer value", name);
    int64_t batch, seq;
    defaults(&sp, &batch, &seq);
    if (o->batch < 0 || o->batch > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': batch must be in 1..%d, got %lld", name, 1 << 20,
                       (long long)o->batch);
    if (o->batch)
        batch = o->batch;
    if (o->seq < 0 || o->seq > (1 << 20))
        return sa_fail(err, SA_EUSAGE, "model '%s': seq must be in 1..%d, got %lld", name, 1 << 20, (long long)o->seq);
    if (o->seq && sp.f != F_RNN && sp.f != F_BRNN && sp.f != F_GPT)
        return sa_fail(err, SA_EUSAGE, "model '%s' has no sequence length (--seq is for rnn, brnn and gpt)", name);
    if (o->seq)
        seq = o->seq;
    int64_t heads = 0;
    if (o->heads && sp.f != F_GPT)
        return sa_fail(err, SA_EUSAGE, "model '%s' has no attention heads (--heads is for gpt)", name);
    if (sp.f == F_GPT) {
        heads = o->heads ? o->heads : sp.h / 64;
        if (heads < 1 || sp.h % heads)
            return sa_fail(err, SA_EUSAGE, "model '%s': %lld heads must divide the hidden size %lld", name,
                           (long long)(o->heads ? o->heads : heads), (long long)sp.h);
    }
    if ((sp.f == F_RNN || sp.f == F_BRNN) && (int64_t)sp.a * seq * (sp.f == F_BRNN ? 2 : 1) > (1 << 22))
        return sa_fail(err, SA_EUSAGE, "model '%s': %d layers x %lld steps is too many cells (max 4194304)", name, sp.a,
                       (long long)seq);
    if (sp.f == F_GPT && (int64_t)sp.a * heads > (1 << 22))
        return sa_fail(err, SA_EUSAGE, "model '%s': too many layers x heads", name);

    zb z;
    zb_init(&z, name, o, batch, err);
    if (zb_ok(&z)) {
        z.g->extra_json = zoo_extra(name, o, seq, heads);
        if (!z.g->extra_json)
            zb_fail(&z, SA_ENOMEM, "out of memory building %s", name);
    }
    if (zb_ok(&z)) {
        switch (sp.f) {
        case F_RESNET:
        case F_WRESNET: zoo_resnet(&z, sp.a, sp.x, batch); break;
        case F_VGG: zoo_vgg(&z, sp.a, batch); break;
        case F_INCEPTION: zoo_inception(&z, sp.x, batch); break;
        case F_NASNET: zoo_nasnet(&z, sp.a, batch); break;
        case F_RNN:
        case F_BRNN: zoo_rnn(&z, sp.a, sp.h, sp.f == F_BRNN, batch, seq); break;
        case F_GPT: zoo_gpt(&z, sp.a, sp.h, heads, batch, seq); break;
        }
    }
    if (!z.g) {
        zb_release(&z);
        return z.st;
    }
    return zb_finish(&z, out);
}
