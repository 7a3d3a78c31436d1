/*
 * zoo_models.h - the model builders zoo.c dispatches to (zoo_cnn.c,
 * zoo_rnn.c, zoo_gpt.c).  They call the layer helpers (zoo_layers.h) and
 * the tape builder only; failures are sticky in z (zoo_tape.h).
 */
#ifndef ZOO_MODELS_H
#define ZOO_MODELS_H

#include "zoo_layers.h"

/* Each builds its model's forward pass into z (zb_finish adds the rest). */
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
