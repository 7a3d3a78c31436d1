/*
 * zoo.h - a model zoo of real training graphs: one full iteration (forward,
 * backward, optimizer update) of a named model, built with the dfg builder;
 * or, with zoo_opts.inference, one forward pass of it (a batch of inference).
 *
 * Names (see zoo_models() for the list with descriptions):
 *   resnet-D, wresnet-D-X   ResNet v1.5 of depth D (18 34 50 101 152 200) on 224x224
 *                           ImageNet; wresnet multiplies every channel count by X
 *   vgg-D                   VGG-11/13/16/19 (no batchnorm), 224x224
 *   inception-X             Inception-V4 (299x299) with every channel width times X
 *   nasnet-R                NASNet-A large (331x331, 168 filters) with 3R normal cells
 *   rnn-L-XK, brnn-L-XK     L LSTM layers of hidden size X*1024 unrolled over --seq
 *                           steps (brnn: two directions per layer, outputs concatenated)
 *   gpt-L-H                 decoder-only transformer (GPT-2 layout), L layers, hidden H
 *
 * Conventions every graph follows (docs/zoo.md has the details):
 *   - kinds: weights param, optimizer state and batchnorm running stats state,
 *     batch data and labels input, forward outputs activation, backward outputs
 *     gradient, convolution scratch space workspace;
 *   - ops are emitted forward, then backward, then update, each op after the
 *     producers of its inputs (op ids ascending is a topological order);
 *   - a gradient tensor is named "grad/" + the name of the tensor it
 *     differentiates, with "#k" appended for the k-th partial gradient when a
 *     tensor has several consumers and "#sum" for their explicit sum;
 *   - per-op flops (2 * MACs for convolutions and matmuls) and bytes_accessed
 *     (bytes read + bytes written) are filled; time_us is left absent.
 *
 * Ownership: zoo_build hands back a finalized graph the caller owns (sa_dfg_free).
 * Everything else here is static data.
 */
#ifndef SWAPADVISOR_ZOO_H
#define SWAPADVISOR_ZOO_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_common.h"

typedef enum zoo_dtype { ZOO_F32 = 0, ZOO_F16 } zoo_dtype;
typedef enum zoo_optimizer { ZOO_SGD = 0, ZOO_MOMENTUM, ZOO_ADAM } zoo_optimizer;
/* How an inference graph's CNN layers run (docs/zoo.md, Inference): fused as an
 * inference engine runs them (batchnorm folded into the convolution, relu and a
 * residual add fused into it), or as MXNet's executor runs them: every layer its
 * own op, batchnorm reading its running statistics, relu and the residual add
 * in place. */
typedef enum zoo_engine { ZOO_ENGINE_FUSED = 0, ZOO_ENGINE_MXNET } zoo_engine;

/* Build options.  A zero-initialised struct (or NULL) means every default. */
typedef struct zoo_opts {
    int64_t batch;           /* 0 = the model's default (CNN 64, rnn 256, brnn 128, gpt 8) */
    zoo_dtype dtype;         /* element type of every floating-point tensor */
    zoo_optimizer optimizer; /* update rule (state tensors: momentum 1, adam 2 per param) */
    int64_t seq;             /* rnn/brnn/gpt sequence length; 0 = the model's default */
    int64_t heads;           /* gpt attention heads; 0 = hidden / 64 */
    bool inference;          /* forward pass only: no labels, loss, gradients, optimizer or
                                tensors saved for a backward pass (docs/zoo.md, Inference);
                                optimizer must then be left at its zero value */
    zoo_engine engine;       /* inference only (else it must stay ZOO_ENGINE_FUSED) */
} zoo_opts;

/* One family of model names. */
typedef struct zoo_model_info {
    const char *pattern;     /* e.g. "wresnet-D-X" */
    const char *example;     /* a name that builds, e.g. "wresnet-152-10" */
    const char *description; /* one line */
} zoo_model_info;

/* The model name patterns; *n gets the count.  Static data. */
const zoo_model_info *zoo_models(int32_t *n);

/* Builds the training iteration (or inference pass) of model name.  On success *out is a finalized
 * graph (sa_dfg_finalize passed) the caller owns; its name is the model name and
 * its batch the batch used.  Unknown names and bad options give SA_EUSAGE with a
 * message listing the patterns; SA_ENOMEM when memory runs out. */
sa_status zoo_build(const char *name, const zoo_opts *opts, sa_dfg_graph **out, sa_err *err);

/* Defaults the builder would use for name (batch and seq, 0 where the model
 * has no sequence).  SA_EUSAGE for unknown names. */
sa_status zoo_defaults(const char *name, int64_t *batch, int64_t *seq, sa_err *err);

/* Option names: "f32"/"f16", "sgd"/"momentum"/"adam", "fused"/"mxnet". Static strings. */
const char *zoo_dtype_name(zoo_dtype d);
const char *zoo_optimizer_name(zoo_optimizer o);
const char *zoo_engine_name(zoo_engine e);
bool zoo_dtype_from_name(const char *s, zoo_dtype *out);
bool zoo_optimizer_from_name(const char *s, zoo_optimizer *out);
bool zoo_engine_from_name(const char *s, zoo_engine *out);

#endif
