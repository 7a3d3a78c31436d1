/*
 * zoo_internal.h - the layer-level graph builder behind zoo_build (lib/zoo*.c only).
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
#ifndef ZOO_INTERNAL_H
#define ZOO_INTERNAL_H

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
    dfg_graph *g;
    sa_err *err;
    sa_status st; /* first failure, sticky */
    int64_t esize;
    const char *dtype;
    zoo_optimizer opt;
    /* per tensor (grown with the graph) */
    int32_t tcap;
    uint8_t *needs_grad;  /* the loss depends on it through a parameter */
    int32_t *grad;        /* summed gradient once known, else -1 */
    int32_t *n_contrib;   /* partial gradients registered so far */
    int32_t *contrib;     /* newest partial: index into c_tensor/c_next, -1 none */
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

/* ---- core (zoo.c) ---- */
void zb_init(zb *z, const char *name, const zoo_opts *o, int64_t batch, sa_err *err);
/* Emits backward and update ops, finalizes and hands the graph over (*out), or
 * frees everything and returns the first failure. */
sa_status zb_finish(zb *z, dfg_graph **out);
/* Records a failure (the first one wins). Returns -1 for convenience. */
int32_t zb_fail(zb *z, sa_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline bool zb_ok(const zb *z) { return z->st == SA_OK; }

/* New tensor in the model's float dtype; name from fmt. */
int32_t zb_tensor(zb *z, dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* New int32 tensor (token ids, labels). */
int32_t zb_tensor_i32(zb *z, dfg_kind kind, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* New parameter (kind param, registered for the optimizer update). */
int32_t zb_param(zb *z, int ndim, const int64_t *shape, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* New tensor shaped and typed like `like`. */
int32_t zb_like(zb *z, dfg_kind kind, int32_t like, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Appends an op with flops set and bytes_accessed = input + output bytes. */
int32_t zb_op(zb *z, const char *name, const char *type, dfg_phase ph, const int32_t *in, int32_t n_in,
              const int32_t *out, int32_t n_out, double flops);
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

/* ---- layers (zoo.c).  name is the forward op's name; helpers return the
 * output tensor, or -1 after a failure. ---- */
/* x [N,C,H,W] -> [N,cout,Ho,Wo]; pad ZB_SAME or explicit; groups divides C and cout. */
int32_t zl_conv(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph, int pw,
                int64_t groups, bool bias);
int32_t zl_bn(zb *z, const char *name, int32_t x);
int32_t zl_relu(zb *z, const char *name, int32_t x);
/* conv (no bias) + batchnorm + relu, ops named name, name_bn, name_relu. */
int32_t zl_conv_bn_relu(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph,
                        int pw);
/* k x k pooling with stride s; pad ZB_SAME or explicit; k = 0 means global. */
int32_t zl_pool(zb *z, const char *name, int32_t x, bool max, int k, int s, int p);
int32_t zl_add(zb *z, const char *name, const int32_t *xs, int32_t n);
int32_t zl_concat(zb *z, const char *name, const int32_t *xs, int32_t n, int axis);
/* Splits x along axis into n pieces of sizes[i] (NULL = equal); squeeze drops
 * the axis when every piece has size 1. */
void zl_split(zb *z, const char *name, int32_t x, int32_t n, const int64_t *sizes, int axis, bool squeeze,
              int32_t *outs);
/* x [..., K] (or any tensor of M*K elements) times w [K, N] (w [N, K] when
 * w_transposed) plus b [N] (-1 = none) -> [..., N]. */
int32_t zl_matmul(zb *z, const char *name, int32_t x, int32_t w, int32_t b, bool w_transposed);
/* Linear layer with fresh parameters name.w [K, N] and name.b [N]. */
int32_t zl_linear(zb *z, const char *name, int32_t x, int64_t n_out, bool bias);
/* Cross-entropy over the last axis of logits against int32 labels; the root of
 * the backward pass.  Returns the probabilities. */
int32_t zl_softmax_xent(zb *z, const char *name, int32_t logits, int32_t labels);
/* Global average pool + linear classifier + softmax cross-entropy (CNN heads). */
int32_t zl_classifier(zb *z, int32_t x, int64_t classes, int32_t labels);
int32_t zl_layernorm(zb *z, const char *name, int32_t x);
int32_t zl_gelu(zb *z, const char *name, int32_t x);
int32_t zl_softmax(zb *z, const char *name, int32_t x);
/* Attention score scaling and causal mask (one fused op, as in Megatron). */
int32_t zl_mask(zb *z, const char *name, int32_t x);
/* batch x [M,K] @ [K,N] -> out_shape (ndim dims); a, b any layout of those sizes. */
int32_t zl_bmm(zb *z, const char *name, int32_t a, int32_t b, int ndim, const int64_t *out_shape, int64_t batch,
               int64_t m, int64_t n, int64_t k);
/* Row gather: idx (int32, any shape) into table [V, H] -> idx.shape + [H]; with
 * pos >= 0 (a [P, H] table) also adds position rows 0..S-1 (S = last idx dim). */
int32_t zl_embedding(zb *z, const char *name, int32_t idx, int32_t table, int32_t pos);

/* Per-element flop counts used by the helpers (documented in docs/zoo.md). */
enum {
    ZF_RELU = 1, ZF_BN = 8, ZF_BN_BWD = 12, ZF_LN = 8, ZF_LN_BWD = 12, ZF_GELU = 14, ZF_GELU_BWD = 20,
    ZF_SOFTMAX = 5, ZF_SOFTMAX_BWD = 4, ZF_XENT = 6, ZF_XENT_BWD = 2, ZF_MASK = 2,
    ZF_LSTM = 32, ZF_LSTM_BWD = 28, ZF_SGD = 2, ZF_MOMENTUM = 4, ZF_ADAM = 12
};

/* ---- models ---- */
void zoo_resnet(zb *z, int depth, double widen, int64_t batch);  /* zoo_cnn.c */
void zoo_vgg(zb *z, int depth, int64_t batch);
void zoo_inception(zb *z, double widen, int64_t batch);
void zoo_nasnet(zb *z, int repeats, int64_t batch);
void zoo_rnn(zb *z, int layers, int64_t hidden, bool bidirectional, int64_t batch, int64_t seq); /* zoo_rnn.c */
void zoo_gpt(zb *z, int layers, int64_t hidden, int64_t heads, int64_t batch, int64_t seq);     /* zoo_gpt.c */

#define ZOO_RNN_VOCAB 10000   /* Penn Treebank word vocabulary */
#define ZOO_GPT_VOCAB 50257   /* GPT-2 BPE vocabulary */
#define ZOO_GPT_POSITIONS 1024

#endif
