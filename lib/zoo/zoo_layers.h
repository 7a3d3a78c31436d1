/*
 * zoo_layers.h - the layer helpers the model builders call (zoo_layers.c).
 * Each emits its forward op(s) through the tape builder (zoo_tape.h) and
 * records a tape entry that emits its backward when zb_finish runs.  Errors
 * are sticky as in zoo_tape.h.
 */
#ifndef ZOO_LAYERS_H
#define ZOO_LAYERS_H

#include "zoo_tape.h"

/* name is the forward op's name; helpers return the output tensor, or -1
 * after a failure. */
/* x [N,C,H,W] -> [N,cout,Ho,Wo]; pad ZB_SAME or explicit; groups divides C and cout. */
int32_t zl_conv(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph, int pw,
                int64_t groups, bool bias);
int32_t zl_bn(zb *z, const char *name, int32_t x);
int32_t zl_relu(zb *z, const char *name, int32_t x);
/* Inference with the mxnet engine only (SA_EINTERNAL otherwise, and when an op
 * already reads x / xs[0]): relu and add that overwrite x / xs[0] in place
 * (zb_op_inplace) and return it. */
int32_t zl_relu_inplace(zb *z, const char *name, int32_t x);
int32_t zl_add_inplace(zb *z, const char *name, const int32_t *xs, int32_t n);
/* conv (no bias) + batchnorm + relu, ops named name, name_bn, name_relu.
 * Fused inference: one fused op "conv2d_bias_relu" named name, the batchnorm
 * folded into the weights and a bias name.b [cout].  mxnet-engine inference:
 * the three ops, the relu in place. */
int32_t zl_conv_bn_relu(zb *z, const char *name, int32_t x, int64_t cout, int kh, int kw, int sh, int sw, int ph,
                        int pw);
/* conv (no bias) named name + batchnorm named bn_name.  Fused inference: one
 * "conv2d" with bias name.b, the batchnorm folded in. */
int32_t zl_conv_bn(zb *z, const char *name, const char *bn_name, int32_t x, int64_t cout, int kh, int kw, int sh,
                   int sw, int ph, int pw, int64_t groups);
/* conv with bias named name + relu named relu_name.  Fused inference: one
 * "conv2d_bias_relu" named name; mxnet-engine inference: the relu in place. */
int32_t zl_conv_relu(zb *z, const char *name, const char *relu_name, int32_t x, int64_t cout, int kh, int kw, int sh,
                     int sw, int ph, int pw);
/* Fused inference only (SA_EINTERNAL otherwise): a residual block's last
 * convolution with its batchnorm folded in, the shortcut sc (shaped like the
 * output) added and the sum's relu applied, as one "conv2d_bias_add_relu" op
 * [x, name.w, name.b, sc] -> [name (, name.ws)]. */
int32_t zl_conv_bias_add_relu(zb *z, const char *name, int32_t x, int32_t sc, int64_t cout, int kh, int kw, int sh,
                              int sw, int ph, int pw);
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
 * the backward pass.  Returns the probabilities.  Inference: a softmax "prob"
 * of the logits; labels is ignored (-1). */
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


#endif
