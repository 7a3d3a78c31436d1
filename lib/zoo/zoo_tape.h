/*
 * zoo_tape.h - the tape-based graph builder behind zoo_build (lib/zoo/ only).
 *
 * The zoo is four tiers, each calling only the tiers before it:
 *   zoo_tape.c (this header)  <-  zoo_layers.c (zoo_layers.h)  <-
 *   zoo_cnn.c, zoo_rnn.c, zoo_gpt.c (zoo_models.h)  <-  zoo.c (names, dispatch)
 * scripts/layers.sh checks it.
 *
 * A model's forward function calls the zl_* layer helpers: each emits its
 * forward op(s) at once and records a tape entry.  zb_finish then walks the
 * tape backwards to emit the backward ops (summing the partial gradients of
 * tensors with several consumers by an explicit add), emits one optimizer
 * update per parameter, and finalizes the graph.
 *
 * Errors are sticky: after the first failure every helper returns -1 and does
 * nothing, and zb_finish reports the first failure.  So model code needs no
 * error checks of its own.
 *
 * Ownership: the zb owns its graph until zb_finish hands it to the caller.
 */
#ifndef ZOO_TAPE_H
#define ZOO_TAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/zoo.h"

#define ZB_MAXDIM 6
#define ZB_SAME (-1) /* padding argument: TensorFlow "SAME" (output = ceil(in / stride)) */

typedef struct zb zb;
typedef struct zb_entry zb_entry;
typedef void (*zb_bwd_fn)(zb *z, const zb_entry *e);

/* One tape entry: a forward layer and how to differentiate it.  Its tensor ids
 * and integer arguments live in zb.pool at [off, off + n_in + n_out + n_arg). */
struct zb_entry {
    zb_bwd_fn bwd;
    int32_t op; /* the main forward op (backward op names derive from its name) */
    int32_t n_in, n_out, n_arg;
    int64_t off;
};

struct zb {
    sa_dfg_graph *g;
    sa_err *err;
    sa_status st; /* first failure, sticky */
    int64_t esize;
    const char *dtype;
    zoo_optimizer opt;
    bool inference; /* forward only: layers emit no tape and no saved tensors; zb_finish no backward */
    bool unfused;   /* inference as MXNet runs it (ZOO_ENGINE_MXNET): no fusion, relu and add in place */
    /* per tensor (grown with the graph) */
    int32_t tcap;
    uint8_t *needs_grad;  /* the loss depends on it through a parameter */
    int32_t *grad;        /* summed gradient once known, else -1 */
    int32_t *n_contrib;   /* partial gradients registered so far */
    int32_t *contrib;     /* newest partial: index into c_tensor/c_next, -1 none */
    int32_t *inplace;     /* the newest op that modified it in place (zb_op_inplace), -1 none */
    int32_t ccap, cn;
    int32_t *c_tensor, *c_next;
    /* the tape */
    zb_entry *tape;
    int32_t ntape, tapecap;
    int32_t *pool;
    int64_t npool, poolcap;
    /* parameters in creation order */
    int32_t *params;
    int32_t nparams, paramcap;
};

/* ---- the builder (zoo_tape.c) ---- */
void zb_init(zb *z, const char *name, const zoo_opts *o, int64_t batch, sa_err *err);
/* Emits backward and update ops (none for inference), finalizes and hands the graph over (*out), or
 * frees everything and returns the first failure. */
sa_status zb_finish(zb *z, sa_dfg_graph **out);
/* Records a failure (the first one wins). Returns -1 for convenience. */
int32_t zb_fail(zb *z, sa_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records SA_ENOMEM ("out of memory building NAME").  Returns -1. */
int32_t zb_oom(zb *z);
/* Frees the builder's own arrays (not the graph); for a build abandoned
 * before zb_finish.  Safe to call twice. */
void zb_release(zb *z);
static inline bool zb_ok(const zb *z) { return z->st == SA_OK; }
/* Layers fold batchnorm into the convolution and fuse relu and add into it
 * (inference with the fused engine; docs/zoo.md, Inference). */
static inline bool zb_fuse(const zb *z) { return z->inference && !z->unfused; }

/* New tensor in the model's float dtype; name from fmt. */
int32_t zb_tensor(zb *z, sa_dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* New int32 tensor (token ids, labels). */
int32_t zb_tensor_i32(zb *z, sa_dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* New parameter (kind param, registered for the optimizer update). */
int32_t zb_param(zb *z, int ndim, const int64_t *shape, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* New tensor shaped and typed like `like`. */
int32_t zb_like(zb *z, sa_dfg_kind kind, int32_t like, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Appends an op with flops set and bytes_accessed = input + output bytes. */
int32_t zb_op(zb *z, const char *name, const char *type, sa_dfg_phase ph, const int32_t *in, int32_t n_in,
              const int32_t *out, int32_t n_out, double flops);
/* An inference op that modifies in[0], an activation, in place (MXNet's in-place
 * relu and add): it reads in[0..n_in) and lists no output, and every op added
 * later that reads in[0] gets a control dependency after it (zb_op), so in[0]
 * then stands for the modified map.  bytes_accessed counts in[0] twice (read
 * and written back).  Fails (SA_EINTERNAL) unless no op but an earlier in-place
 * op reads in[0] yet: nobody may need its old value.  Returns in[0], or -1. */
int32_t zb_op_inplace(zb *z, const char *name, const char *type, const int32_t *in, int32_t n_in, double flops);
/* Records a tape entry. */
void zb_tape(zb *z, zb_bwd_fn bwd, int32_t op, const int32_t *in, int32_t n_in, const int32_t *out,
             int32_t n_out, const int32_t *args, int32_t n_arg);
static inline const int32_t *zb_ein(const zb *z, const zb_entry *e) { return z->pool + e->off; }
static inline const int32_t *zb_eout(const zb *z, const zb_entry *e) { return z->pool + e->off + e->n_in; }
static inline const int32_t *zb_earg(const zb *z, const zb_entry *e)
{
    return z->pool + e->off + e->n_in + e->n_out;
}
static inline const char *zb_ename(const zb *z, const zb_entry *e) { return z->g->ops[e->op].name; }

/* Tensor facts. */
int64_t zb_numel(const zb *z, int32_t t);
static inline int64_t zb_bytes(const zb *z, int32_t t) { return z->g->tensors[t].bytes; }
static inline int32_t zb_ndim(const zb *z, int32_t t) { return z->g->tensors[t].ndim; }
static inline int64_t zb_dim(const zb *z, int32_t t, int d) { return z->g->tensors[t].shape[d]; }
static inline bool zb_needs(const zb *z, int32_t t) { return t >= 0 && z->needs_grad[t]; }
bool zb_any_needs(const zb *z, const int32_t *ts, int32_t n);
void zb_set_needs(zb *z, int32_t t, bool v);

/* Gradients.  zb_grad_contrib makes a new partial gradient of target (named
 * "grad/T", then "grad/T#2", ...) and registers it; zb_grad_add registers an
 * existing tensor as one; zb_grad_tensor makes "grad/T" without registering it
 * (for a gradient the caller hands on itself); zb_grad returns the summed
 * gradient (emitting the add when there are several partials), -1 if none. */
int32_t zb_grad_contrib(zb *z, int32_t target);
void zb_grad_add(zb *z, int32_t target, int32_t g);
int32_t zb_grad_tensor(zb *z, int32_t target);
int32_t zb_grad(zb *z, int32_t target);

/* Per-element flop counts used by the helpers (documented in docs/zoo.md). */
enum {
    ZF_RELU = 1, ZF_BN_STATS = 3, ZF_BN_RUNNING = 4 /* per channel */, ZF_BN_NORM = 5, ZF_BN_BWD = 12,
    ZF_LN = 8, ZF_LN_BWD = 12, ZF_GELU = 14, ZF_GELU_BWD = 20,
    ZF_SOFTMAX = 5, ZF_SOFTMAX_BWD = 4, ZF_XENT = 6, ZF_XENT_BWD = 2, ZF_MASK = 2,
    ZF_LSTM = 32, ZF_LSTM_BWD = 28, ZF_SGD = 2, ZF_MOMENTUM = 4, ZF_ADAM = 12
};

#endif
