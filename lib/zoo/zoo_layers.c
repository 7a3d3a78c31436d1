/* zoo_layers.c - the layer helpers (zl_*): each emits its forward op(s) and
 * records a tape entry whose callback emits the backward.  Calls only the tape
 * builder (zoo_tape.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_layers.h"

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
        int32_t wsb = ws >= 0 ? zb_like(z, SA_DFG_WORKSPACE, ws, "%s/bwd_data.ws", zb_ename(z, e)) : -1;
        int32_t i2[] = {dy, w}, o2[] = {dx, wsb};
        zb_op(z, bname(z, e, "bwd_data", nm, sizeof nm), "conv2d_bwd_data", SA_DFG_BACKWARD, i2, 2, o2,
              wsb >= 0 ? 2 : 1, 2 * macs);
    }
    int32_t o3[3], n3 = 0;
    o3[n3++] = zb_grad_contrib(z, w);
    if (b >= 0)
        o3[n3++] = zb_grad_contrib(z, b);
    if (ws >= 0)
        o3[n3++] = zb_like(z, SA_DFG_WORKSPACE, ws, "%s/bwd_filter.ws", zb_ename(z, e));
    int32_t i3[] = {dy, x};
    zb_op(z, bname(z, e, "bwd_filter", nm, sizeof nm), "conv2d_bwd_filter", SA_DFG_BACKWARD, i3, 2, o3, n3,
          2 * macs + (b >= 0 ? (double)zb_numel(z, y) : 0));
}

/* One convolution op.  type "conv2d" is the plain convolution (with bias when
 * bias); the inference-only fused types add an epilogue on the output:
 * "conv2d_bias_relu" y = relu(conv(x) + b), "conv2d_bias_add_relu" y =
 * relu(conv(x) + b + sc) with the shortcut sc read as a third input.  Each
 * epilogue step costs one flop per output element. */
static int32_t conv_op(zb *z, const char *name, const char *type, int32_t x, int64_t cout, int kh, int kw, int sh,
                       int sw, int ph, int pw, int64_t groups, bool bias, int32_t sc, int epilogue)
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
    if (sc >= 0 && (zb_ndim(z, sc) != 4 || zb_dim(z, sc, 0) != n || zb_dim(z, sc, 1) != cout ||
                    zb_dim(z, sc, 2) != ho || zb_dim(z, sc, 3) != wo))
        return zb_fail(z, SA_EINTERNAL, "%s: conv %s: the shortcut's shape differs from the output's", z->g->name,
                       name);
    int32_t w = zb_param(z, 4, wshape, "%s.w", name);
    int32_t b = bias ? zb_param(z, 1, &cout, "%s.b", name) : -1;
    int32_t y = zb_tensor(z, SA_DFG_ACTIVATION, 4, yshape, "%s", name);
    int32_t ws = -1;
    /* Scratch: one image's im2col buffer (Caffe / MXNet native convolution);
     * a 1x1 stride-1 convolution is a plain GEMM and needs none. */
    if (kh * kw > 1 || sh > 1 || sw > 1) {
        int64_t wsshape[] = {c * kh * kw, ho * wo};
        ws = zb_tensor(z, SA_DFG_WORKSPACE, 2, wsshape, "%s.ws", name);
    }
    double macs = (double)n * (double)cout * (double)(ho * wo) * (double)(c / groups) * kh * kw;
    int32_t in[4] = {x, w}, out[] = {y, ws}, ni = 2;
    if (bias)
        in[ni++] = b;
    if (sc >= 0)
        in[ni++] = sc;
    int32_t op = zb_op(z, name, type, SA_DFG_FORWARD, in, ni, out, ws >= 0 ? 2 : 1,
                       2 * macs + (double)((bias ? 1 : 0) + epilogue) * (double)zb_numel(z, y));
    zb_set_needs(z, y, true);
    zb_tape(z, conv_bwd, op, in, ni, &y, 1, &ws, 1);
    return y;
}

int32_t zl_conv(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph, int pw,
                int64_t groups, bool bias)
{
    return conv_op(z, name, "conv2d", x, cout, kh, kw, sh, sw, ph, pw, groups, bias, -1, 0);
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), type, SA_DFG_BACKWARD, i2, 5, o, n,
          flops_per_elem * (double)zb_numel(z, x));
}

static void bn_bwd(zb *z, const zb_entry *e) { norm_bwd(z, e, "batchnorm_bwd", ZF_BN_BWD); }

/* Training: two forward ops.  NAME/stats (batchnorm_stats) computes the batch
 * mean and inverse std and folds them into the running statistics in place;
 * NAME (batchnorm) normalizes x with the saved statistics and applies gamma
 * and beta.  Only the first touches persistent state, so a planner may drop y
 * and recompute it from x and the saved statistics (docs/zoo.md).  Inference:
 * one batchnorm op normalizing with the running statistics, which it only
 * reads (with the fused engine the zoo's CNNs fold every batchnorm that
 * follows a convolution into it, zl_conv_bn and zl_conv_bn_relu). */
int32_t zl_bn(zb *z, const char *name, int32_t x)
{
    if (!zb_ok(z))
        return -1;
    int64_t c = zb_dim(z, x, 1);
    int32_t gm = zb_param(z, 1, &c, "%s.gamma", name);
    int32_t bt = zb_param(z, 1, &c, "%s.beta", name);
    int32_t rm = zb_tensor(z, SA_DFG_STATE, 1, &c, "%s.running_mean", name);
    int32_t rv = zb_tensor(z, SA_DFG_STATE, 1, &c, "%s.running_var", name);
    double n = (double)zb_numel(z, x);
    if (z->inference) {
        int32_t y = zb_like(z, SA_DFG_ACTIVATION, x, "%s", name);
        int32_t in[] = {x, gm, bt, rm, rv};
        zb_op(z, name, "batchnorm", SA_DFG_FORWARD, in, 5, &y, 1, ZF_BN_NORM * n);
        return y;
    }
    char nm[300];
    int32_t sm = zb_tensor(z, SA_DFG_ACTIVATION, 1, &c, "%s.saved_mean", name);
    int32_t si = zb_tensor(z, SA_DFG_ACTIVATION, 1, &c, "%s.saved_invstd", name);
    int32_t sin[] = {x, rm, rv}, sout[] = {sm, si, rm, rv};
    snprintf(nm, sizeof nm, "%s/stats", name);
    zb_op(z, nm, "batchnorm_stats", SA_DFG_FORWARD, sin, 3, sout, 4, ZF_BN_STATS * n + ZF_BN_RUNNING * (double)c);
    int32_t y = zb_like(z, SA_DFG_ACTIVATION, x, "%s", name);
    int32_t in[] = {x, gm, bt, sm, si};
    int32_t op = zb_op(z, name, "batchnorm", SA_DFG_FORWARD, in, 5, &y, 1, ZF_BN_NORM * n);
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), type, SA_DFG_BACKWARD, in, a[1] == 2 ? 1 : 2, &dx, 1,
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
    int32_t y = zb_like(z, SA_DFG_ACTIVATION, x, "%s", name);
    int32_t op = zb_op(z, name, type, SA_DFG_FORWARD, &x, 1, &y, 1, fwd_flops * (double)zb_numel(z, x));
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

/* Inference folds a batchnorm into the convolution before it: with the
 * running statistics fixed, bn(conv(x)) = conv'(x) + b' for weights scaled
 * per output channel and a per-channel bias b' (the form TensorRT and
 * cudnnConvolutionBiasActivationForward run).  So the folded convolution has
 * the same weights tensor plus a bias [cout] and no batchnorm op, parameters
 * or statistics (docs/zoo.md, Inference). */
int32_t zl_conv_bn_relu(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph,
                        int pw)
{
    if (zb_fuse(z))
        return conv_op(z, name, "conv2d_bias_relu", x, cout, kh, kw, sh, sw, ph, pw, 1, true, -1, 1);
    char nm[300];
    int32_t y = zl_conv(z, name, x, cout, kh, kw, sh, sw, ph, pw, 1, false);
    snprintf(nm, sizeof nm, "%s_bn", name);
    y = zl_bn(z, nm, y);
    snprintf(nm, sizeof nm, "%s_relu", name);
    return z->unfused ? zl_relu_inplace(z, nm, y) : zl_relu(z, nm, y);
}

int32_t zl_conv_bn(zb *z, const char *name, const char *bn_name, int32_t x, int64_t cout, int kh, int kw, int sh,
                   int sw, int ph, int pw, int64_t groups)
{
    if (zb_fuse(z))
        return conv_op(z, name, "conv2d", x, cout, kh, kw, sh, sw, ph, pw, groups, true, -1, 0);
    int32_t y = zl_conv(z, name, x, cout, kh, kw, sh, sw, ph, pw, groups, false);
    return zl_bn(z, bn_name, y);
}

int32_t zl_conv_relu(zb *z, const char *name, const char *relu_name, int32_t x, int64_t cout, int kh, int kw, int sh,
                     int sw, int ph, int pw)
{
    if (zb_fuse(z))
        return conv_op(z, name, "conv2d_bias_relu", x, cout, kh, kw, sh, sw, ph, pw, 1, true, -1, 1);
    int32_t y = zl_conv(z, name, x, cout, kh, kw, sh, sw, ph, pw, 1, true);
    return z->unfused ? zl_relu_inplace(z, relu_name, y) : zl_relu(z, relu_name, y);
}

int32_t zl_conv_bias_add_relu(zb *z, const char *name, int32_t x, int32_t sc, int64_t cout, int kh, int kw, int sh,
                              int sw, int ph, int pw)
{
    if (!zb_ok(z))
        return -1;
    if (!zb_fuse(z))
        return zb_fail(z, SA_EINTERNAL, "%s: conv %s: the fused residual convolution is for fused inference",
                       z->g->name, name);
    return conv_op(z, name, "conv2d_bias_add_relu", x, cout, kh, kw, sh, sw, ph, pw, 1, true, sc, 2);
}

/* MXNet's in-place relu and add (inference with the mxnet engine, zb_op_inplace):
 * the map x (xs[0]) is overwritten with the result and returned. */
int32_t zl_relu_inplace(zb *z, const char *name, int32_t x)
{
    if (!zb_ok(z))
        return -1;
    return zb_op_inplace(z, name, "relu", &x, 1, ZF_RELU * (double)zb_numel(z, x));
}

/* Do the n addends have one size?  Records the failure when not. */
static bool addends_match(zb *z, const char *name, const int32_t *xs, int32_t n)
{
    for (int32_t i = 1; i < n; i++)
        if (zb_numel(z, xs[i]) != zb_numel(z, xs[0])) {
            zb_fail(z, SA_EINTERNAL, "%s: add %s: operand shapes differ", z->g->name, name);
            return false;
        }
    return true;
}

int32_t zl_add_inplace(zb *z, const char *name, const int32_t *xs, int32_t n)
{
    if (!zb_ok(z) || !addends_match(z, name, xs, n))
        return -1;
    return zb_op_inplace(z, name, "add", xs, n, (double)(n - 1) * (double)zb_numel(z, xs[0]));
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "pool_bwd", SA_DFG_BACKWARD, in, a[0] ? 3 : 1, &dx, 1,
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
    int32_t y = zb_tensor(z, SA_DFG_ACTIVATION, 4, shape, "%s", name);
    double win = (double)(kh * kw);
    int32_t op = zb_op(z, name, "pool", SA_DFG_FORWARD, &x, 1, &y, 1, win * (double)zb_numel(z, y));
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
    if (!zb_ok(z) || !addends_match(z, name, xs, n))
        return -1;
    int32_t y = zb_like(z, SA_DFG_ACTIVATION, xs[0], "%s", name);
    int32_t op = zb_op(z, name, "add", SA_DFG_FORWARD, xs, n, &y, 1, (double)(n - 1) * (double)zb_numel(z, y));
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
        zb_oom(z);
        return;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < e->n_in; i++)
        if (zb_needs(z, in[i]))
            o[n++] = zb_grad_contrib(z, in[i]);
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "split", SA_DFG_BACKWARD, &dy, 1, o, n, 0);
    free(o);
}

int32_t zl_concat(zb *z, const char *name, const int32_t *xs, int32_t n, int axis)
{
    if (!zb_ok(z))
        return -1;
    const sa_dfg_tensor *t0 = &z->g->tensors[xs[0]];
    int64_t shape[ZB_MAXDIM];
    int nd = t0->ndim;
    memcpy(shape, t0->shape, (size_t)nd * sizeof *shape);
    shape[axis] = 0;
    for (int32_t i = 0; i < n; i++)
        shape[axis] += zb_dim(z, xs[i], axis);
    int32_t y = zb_tensor(z, SA_DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t op = zb_op(z, name, "concat", SA_DFG_FORWARD, xs, n, &y, 1, 0);
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
        zb_oom(z);
        return;
    }
    for (int32_t i = 0; i < e->n_out && zb_ok(z); i++)
        if ((d[i] = zb_grad(z, out[i])) < 0)
            zb_fail(z, SA_EINTERNAL, "%s: split %s: piece %d is unused", z->g->name, zb_ename(z, e), i);
    int32_t dx = zb_grad_contrib(z, x);
    char nm[300];
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "concat", SA_DFG_BACKWARD, d, e->n_out, &dx, 1, 0);
    free(d);
}

void zl_split(zb *z, const char *name, int32_t x, int32_t n, const int64_t *sizes, int axis, bool squeeze,
              int32_t *outs)
{
    if (!zb_ok(z))
        return;
    const sa_dfg_tensor *t = &z->g->tensors[x];
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
        outs[i] = zb_tensor(z, SA_DFG_ACTIVATION, snd, s, "%s.%d", name, i);
        zb_set_needs(z, outs[i], zb_needs(z, x));
    }
    int32_t op = zb_op(z, name, "split", SA_DFG_FORWARD, &x, 1, outs, n, 0);
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
        zb_op(z, bname(z, e, "bwd_data", nm, sizeof nm), "matmul_bwd_data", SA_DFG_BACKWARD, i2, 2, &dx, 1, 2 * mnk);
    }
    int32_t o[2], no = 0;
    o[no++] = zb_grad_contrib(z, w);
    if (b >= 0)
        o[no++] = zb_grad_contrib(z, b);
    int32_t i3[] = {x, dy};
    zb_op(z, bname(z, e, "bwd_weight", nm, sizeof nm), "matmul_bwd_weight", SA_DFG_BACKWARD, i3, 2, o, no,
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
    const sa_dfg_tensor *t = &z->g->tensors[x];
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
    int32_t y = zb_tensor(z, SA_DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t in[] = {x, w, b};
    int32_t ni = b >= 0 ? 3 : 2;
    int32_t op = zb_op(z, name, "matmul", SA_DFG_FORWARD, in, ni, &y, 1,
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
    const sa_dfg_tensor *t = &z->g->tensors[x];
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "softmax_xent_bwd", SA_DFG_BACKWARD, i2, 2, &d, 1,
          ZF_XENT_BWD * (double)zb_numel(z, logits));
}

int32_t zl_softmax_xent(zb *z, const char *name, int32_t logits, int32_t labels)
{
    if (!zb_ok(z))
        return -1;
    if (z->inference) { /* no loss: the class probabilities are the result */
        int32_t prob = zb_like(z, SA_DFG_ACTIVATION, logits, "prob");
        zb_op(z, "prob", "softmax", SA_DFG_FORWARD, &logits, 1, &prob, 1, ZF_SOFTMAX * (double)zb_numel(z, logits));
        return prob;
    }
    int32_t prob = zb_like(z, SA_DFG_ACTIVATION, logits, "%s", name);
    int32_t in[] = {logits, labels};
    int32_t op = zb_op(z, name, "softmax_xent", SA_DFG_FORWARD, in, 2, &prob, 1, ZF_XENT * (double)zb_numel(z, logits));
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
    int32_t y = zb_like(z, SA_DFG_ACTIVATION, x, "%s", name);
    if (z->inference) { /* the statistics are not saved for a backward pass */
        int32_t in[] = {x, gm, bt};
        zb_op(z, name, "layernorm", SA_DFG_FORWARD, in, 3, &y, 1, ZF_LN * (double)zb_numel(z, x));
        return y;
    }
    int32_t mean = zb_tensor(z, SA_DFG_ACTIVATION, 1, &rows, "%s.mean", name);
    int32_t rstd = zb_tensor(z, SA_DFG_ACTIVATION, 1, &rows, "%s.rstd", name);
    int32_t in[] = {x, gm, bt}, out[] = {y, mean, rstd};
    int32_t op = zb_op(z, name, "layernorm", SA_DFG_FORWARD, in, 3, out, 3, ZF_LN * (double)zb_numel(z, x));
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "batched_matmul_bwd", SA_DFG_BACKWARD, i2, 3, o, n, f * n);
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
    int32_t c = zb_tensor(z, SA_DFG_ACTIVATION, ndim, out_shape, "%s", name);
    int32_t in[] = {a, b};
    int32_t op = zb_op(z, name, "batched_matmul", SA_DFG_FORWARD, in, 2, &c, 1,
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
    zb_op(z, bname(z, e, "bwd", nm, sizeof nm), "embedding_bwd", SA_DFG_BACKWARD, i2, 2, o, n,
          (double)(e->n_in - 1) * (double)zb_numel(z, dy));
}

int32_t zl_embedding(zb *z, const char *name, int32_t idx, int32_t table, int32_t pos)
{
    if (!zb_ok(z))
        return -1;
    const sa_dfg_tensor *t = &z->g->tensors[idx];
    int64_t shape[ZB_MAXDIM], h = zb_dim(z, table, 1);
    int nd = t->ndim;
    if (nd >= ZB_MAXDIM)
        return zb_fail(z, SA_EINTERNAL, "%s: embedding %s: index tensor has too many axes", z->g->name, name);
    memcpy(shape, t->shape, (size_t)nd * sizeof *shape);
    shape[nd++] = h;
    int32_t y = zb_tensor(z, SA_DFG_ACTIVATION, nd, shape, "%s", name);
    int32_t in[] = {idx, table, pos};
    int32_t ni = pos >= 0 ? 3 : 2;
    int32_t op = zb_op(z, name, "embedding", SA_DFG_FORWARD, in, ni, &y, 1, pos >= 0 ? (double)zb_numel(z, y) : 0);
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
