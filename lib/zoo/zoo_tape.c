/* zoo_tape.c - the tape-based graph builder under every zoo model (the lowest
 * part of the zoo: it calls nothing else of lib/zoo/), and the option names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_tape.h"

/* ------------------------------------------------------------------ options */

const char *zoo_dtype_name(zoo_dtype d) { return d == ZOO_F16 ? "f16" : "f32"; }

const char *zoo_optimizer_name(zoo_optimizer o)
{
    return o == ZOO_MOMENTUM ? "momentum" : o == ZOO_ADAM ? "adam" : "sgd";
}

const char *zoo_engine_name(zoo_engine e) { return e == ZOO_ENGINE_MXNET ? "mxnet" : "fused"; }

bool zoo_engine_from_name(const char *s, zoo_engine *out)
{
    if (strcmp(s, "fused") == 0)
        *out = ZOO_ENGINE_FUSED;
    else if (strcmp(s, "mxnet") == 0)
        *out = ZOO_ENGINE_MXNET;
    else
        return false;
    return true;
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

/* ------------------------------------------------------------------ builder */

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

int32_t zb_oom(zb *z) { return zb_fail(z, SA_ENOMEM, "out of memory building %s", z->g ? z->g->name : "a model"); }

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
        zb_oom(z);
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
    z->inference = o->inference;
    z->unfused = o->inference && o->engine == ZOO_ENGINE_MXNET;
    z->g = sa_dfg_new(name);
    if (!z->g) {
        zb_oom(z);
        return;
    }
    z->g->batch = batch;
}

void zb_release(zb *z)
{
    free(z->needs_grad);
    free(z->grad);
    free(z->n_contrib);
    free(z->contrib);
    free(z->inplace);
    free(z->c_tensor);
    free(z->c_next);
    free(z->tape);
    free(z->pool);
    free(z->params);
    z->needs_grad = NULL;
    z->grad = z->n_contrib = z->contrib = z->inplace = z->c_tensor = z->c_next = z->pool = z->params = NULL;
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
    int32_t *d = realloc(z->inplace, (size_t)nc * sizeof *d);
    if (d)
        z->inplace = d;
    if (!ng || !a || !b || !c || !d) {
        zb_oom(z);
        return false;
    }
    z->tcap = nc;
    return true;
}

static int32_t tensor_v(zb *z, sa_dfg_kind kind, int ndim, const int64_t *shape, int64_t esize, const char *dtype,
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
        if (__builtin_mul_overflow(n, shape[d], &n) || (double)n > SA_DFG_MAX_EXACT_INT)
            return zb_fail(z, SA_EUSAGE, "%s: tensor %s would exceed 2^53 bytes; use a smaller model or batch",
                           z->g->name, name);
    }
    int32_t t = sa_dfg_add_tensor(z->g, name, kind, n);
    if (t < 0 || !sa_dfg_set_shape(z->g, t, ndim, shape, dtype) || !tensor_room(z, t))
        return zb_oom(z);
    z->needs_grad[t] = kind == SA_DFG_PARAM;
    z->grad[t] = -1;
    z->n_contrib[t] = 0;
    z->contrib[t] = -1;
    z->inplace[t] = -1;
    return t;
}

int32_t zb_tensor(zb *z, sa_dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int32_t t = tensor_v(z, kind, ndim, shape, z->esize, z->dtype, fmt, ap);
    va_end(ap);
    return t;
}

int32_t zb_tensor_i32(zb *z, sa_dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
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
    int32_t t = tensor_v(z, SA_DFG_PARAM, ndim, shape, z->esize, z->dtype, fmt, ap);
    va_end(ap);
    if (t < 0 || !grow32(z, (void **)&z->params, &z->paramcap, z->nparams + 1, sizeof *z->params))
        return -1;
    z->params[z->nparams++] = t;
    return t;
}

int32_t zb_like(zb *z, sa_dfg_kind kind, int32_t like, const char *fmt, ...)
{
    if (!zb_ok(z))
        return -1;
    const sa_dfg_tensor *l = &z->g->tensors[like];
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
    const sa_dfg_tensor *x = &z->g->tensors[t];
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

int32_t zb_op(zb *z, const char *name, const char *type, sa_dfg_phase ph, const int32_t *in, int32_t n_in,
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
    int32_t op = sa_dfg_add_op(z->g, name, type, ph, in, n_in, out, n_out);
    if (op < 0)
        return zb_oom(z);
    z->g->ops[op].flops = flops;
    z->g->ops[op].bytes_accessed = bytes;
    /* A map modified in place is read, from then on, after the op that modified it. */
    for (int32_t i = 0; i < n_in; i++)
        if (z->inplace[in[i]] >= 0 && !sa_dfg_add_control(z->g, z->inplace[in[i]], op))
            return zb_oom(z);
    return op;
}

int32_t zb_op_inplace(zb *z, const char *name, const char *type, const int32_t *in, int32_t n_in, double flops)
{
    if (!zb_ok(z))
        return -1;
    if (!z->inference || n_in < 1 || in[0] < 0 || z->g->tensors[in[0]].kind != SA_DFG_ACTIVATION)
        return zb_fail(z, SA_EINTERNAL, "%s: op %s: in place only on an inference graph's activation", z->g->name,
                       name);
    int32_t x = in[0];
    for (int32_t o = 0; o < z->g->n_ops; o++) {
        const sa_dfg_op *r = &z->g->ops[o];
        if (r->n_out == 0 && r->n_in > 0 && r->in[0] == x)
            continue; /* an earlier in-place op on the map: this one is ordered after it */
        for (int32_t k = 0; k < r->n_in; k++)
            if (r->in[k] == x)
                return zb_fail(z, SA_EINTERNAL, "%s: op %s: in place on %s, which %s also reads", z->g->name, name,
                               z->g->tensors[x].name, r->name);
    }
    int32_t op = zb_op(z, name, type, SA_DFG_FORWARD, in, n_in, in, 0, flops);
    if (op < 0)
        return -1;
    z->g->ops[op].bytes_accessed += (double)z->g->tensors[x].bytes; /* it writes the map back */
    z->inplace[x] = op;
    return x;
}

void zb_tape(zb *z, zb_bwd_fn bwd, int32_t op, const int32_t *in, int32_t n_in, const int32_t *out, int32_t n_out,
             const int32_t *args, int32_t n_arg)
{
    if (!zb_ok(z) || op < 0 || z->inference)
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
            zb_oom(z);
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
    return zb_like(z, SA_DFG_GRADIENT, target, "grad/%s", z->g->tensors[target].name);
}

int32_t zb_grad_contrib(zb *z, int32_t target)
{
    if (!zb_ok(z) || target < 0)
        return -1;
    int32_t k = z->n_contrib[target] + 1;
    int32_t g = k == 1 ? zb_like(z, SA_DFG_GRADIENT, target, "grad/%s", z->g->tensors[target].name)
                       : zb_like(z, SA_DFG_GRADIENT, target, "grad/%s#%d", z->g->tensors[target].name, k);
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
        return zb_oom(z);
    /* The list is newest first; the add reads them in the order they came. */
    int32_t k = n;
    for (int32_t c = z->contrib[target]; c >= 0; c = z->c_next[c])
        ins[--k] = z->c_tensor[c];
    const char *tn = z->g->tensors[target].name;
    int32_t sum = zb_like(z, SA_DFG_GRADIENT, target, "grad/%s#sum", tn);
    char name[300];
    snprintf(name, sizeof name, "%s/grad_sum", tn);
    zb_op(z, name, "add", SA_DFG_BACKWARD, ins, n, &sum, 1, (double)(n - 1) * (double)zb_numel(z, target));
    free(ins);
    if (!zb_ok(z))
        return -1;
    return z->grad[target] = sum;
}

/* ------------------------------------------------------------------ finish */

sa_status zb_finish(zb *z, sa_dfg_graph **out)
{
    *out = NULL;
    for (int32_t i = z->ntape - 1; i >= 0 && zb_ok(z); i--)
        z->tape[i].bwd(z, &z->tape[i]);
    /* Inference: the tape is empty (zb_tape records nothing) and no update. */
    int32_t nupd = z->inference ? 0 : z->nparams;
    int32_t *pg = zb_ok(z) ? calloc((size_t)(nupd ? nupd : 1), sizeof *pg) : NULL;
    if (zb_ok(z) && !pg)
        zb_oom(z);
    /* Every partial-gradient sum belongs to the backward phase, so all of them
     * come before the first update. */
    for (int32_t i = 0; i < nupd && zb_ok(z); i++)
        pg[i] = zb_grad(z, z->params[i]);
    for (int32_t i = 0; i < nupd && zb_ok(z); i++) {
        int32_t p = z->params[i], g = pg[i];
        if (g < 0)
            continue; /* the loss does not depend on it: nothing to update */
        const char *pn = z->g->tensors[p].name;
        char name[300];
        snprintf(name, sizeof name, "update/%s", pn);
        double n = (double)zb_numel(z, p);
        if (z->opt == ZOO_SGD) {
            int32_t in[] = {p, g}, o[] = {p};
            zb_op(z, name, "sgd_update", SA_DFG_UPDATE, in, 2, o, 1, ZF_SGD * n);
        } else if (z->opt == ZOO_MOMENTUM) {
            int32_t m = zb_like(z, SA_DFG_STATE, p, "%s.momentum", pn);
            int32_t in[] = {p, g, m}, o[] = {p, m};
            zb_op(z, name, "momentum_update", SA_DFG_UPDATE, in, 3, o, 2, ZF_MOMENTUM * n);
        } else {
            int32_t m = zb_like(z, SA_DFG_STATE, p, "%s.adam_m", pn);
            int32_t v = zb_like(z, SA_DFG_STATE, p, "%s.adam_v", pn);
            int32_t in[] = {p, g, m, v}, o[] = {p, m, v};
            zb_op(z, name, "adam_update", SA_DFG_UPDATE, in, 4, o, 3, ZF_ADAM * n);
        }
    }
    free(pg);
    sa_status st = z->st;
    if (st == SA_OK)
        st = sa_dfg_finalize(z->g, z->g->name, z->err);
    zb_release(z);
    if (st != SA_OK) {
        sa_dfg_free(z->g);
        z->g = NULL;
        return st;
    }
    *out = z->g;
    z->g = NULL;
    return SA_OK;
}
