/* zoo_rnn.c - unrolled LSTM language models (rnn-L-XK, brnn-L-XK).
 *
 * One time step of one layer is a cell as PyTorch's LSTMCell runs it: two
 * GEMMs (input and hidden projections to the 4 gates) and one fused
 * elementwise lstm_cell op (bias, gate activations, new c and h; it saves the
 * activated gates for the backward).  The weights of a layer are shared by
 * all of its cells.  Their gradient is accumulated over the cells by one
 * weight-gradient GEMM per weight that reads every step's input and gate
 * gradient (as cuDNN's RNN backward-weights does): a chain of per-cell
 * accumulators would create a full-size gradient tensor per cell, which no
 * framework keeps alive.  The model around the layers is MXNet's bucketing
 * LSTM language model: embedding, split into steps, LSTM layers, concat of
 * the top layer's outputs, one classifier and softmax cross-entropy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zoo_models.h"

#define NM 256
/* per-step tape arguments: xg, hg, gates, c, xg op, hg op, cell op */
#define PER_STEP 7

static void lstm_bwd(zb *z, const zb_entry *e)
{
    const int32_t *in = zb_ein(z, e), *hs = zb_eout(z, e), *a = zb_earg(z, e);
    int32_t wx = in[0], wh = in[1], b = in[2], h0 = in[3], c0 = in[4];
    const int32_t *xs = in + 5;
    int32_t s = e->n_out;
    bool reverse = a[0];
    const int32_t *st = a + 1;
    int32_t *ins = malloc((size_t)(2 * s) * sizeof *ins); /* weight-gradient GEMM inputs */
    if (!ins) {
        zb_fail(z, SA_ENOMEM, "out of memory building %s", z->g->name);
        return;
    }
    int64_t batch = zb_dim(z, hs[0], 0), hid = zb_dim(z, hs[0], 1), nin = zb_dim(z, wx, 0);
    int32_t dc_next = -1;
    char nm[NM + 32];
    for (int32_t k = s - 1; k >= 0 && zb_ok(z); k--) {
        int32_t t = reverse ? s - 1 - k : k, tp = k == 0 ? -1 : reverse ? t + 1 : t - 1;
        const int32_t *cur = st + (int64_t)t * PER_STEP;
        int32_t hprev = tp < 0 ? h0 : hs[tp], cprev = tp < 0 ? c0 : st[(int64_t)tp * PER_STEP + 3];
        int32_t dh = zb_grad(z, hs[t]);
        if (dh < 0) {
            zb_fail(z, SA_EINTERNAL, "%s: %s has no gradient", z->g->name, z->g->tensors[hs[t]].name);
            break;
        }
        /* d(gates) differentiates both projections (they are summed). */
        int32_t dg = zb_grad_tensor(z, cur[0]);
        int32_t dcp = tp >= 0 ? zb_grad_tensor(z, cprev) : -1;
        int32_t i1[5], n1 = 0, o1[] = {dg, dcp};
        i1[n1++] = dh;
        if (dc_next >= 0)
            i1[n1++] = dc_next;
        i1[n1++] = cur[2];
        i1[n1++] = cprev;
        i1[n1++] = cur[3];
        snprintf(nm, sizeof nm, "%s/bwd", z->g->ops[cur[6]].name);
        zb_op(z, nm, "lstm_cell_bwd", SA_DFG_BACKWARD, i1, n1, o1, dcp >= 0 ? 2 : 1,
              ZF_LSTM_BWD * (double)(batch * hid));
        if (zb_needs(z, xs[t])) {
            int32_t dx = zb_grad_contrib(z, xs[t]), i2[] = {dg, wx};
            snprintf(nm, sizeof nm, "%s/bwd_data", z->g->ops[cur[4]].name);
            zb_op(z, nm, "matmul_bwd_data", SA_DFG_BACKWARD, i2, 2, &dx, 1, 2.0 * (double)(batch * nin * 4 * hid));
        }
        if (tp >= 0) {
            int32_t dhp = zb_grad_contrib(z, hprev), i3[] = {dg, wh};
            snprintf(nm, sizeof nm, "%s/bwd_data", z->g->ops[cur[5]].name);
            zb_op(z, nm, "matmul_bwd_data", SA_DFG_BACKWARD, i3, 2, &dhp, 1, 2.0 * (double)(batch * hid * 4 * hid));
        }
        ins[s + t] = dg;
        dc_next = dcp;
    }
    /* dWx = sum_t x_t^T dg_t and dWh = sum_t h_{t-1}^T dg_t (+ db = sum dg). */
    double steps = (double)s * (double)batch;
    for (int32_t t = 0; t < s; t++)
        ins[t] = xs[t];
    int32_t dwx = zb_grad_contrib(z, wx);
    snprintf(nm, sizeof nm, "%s/bwd_weight", z->g->tensors[wx].name);
    zb_op(z, nm, "matmul_bwd_weight", SA_DFG_BACKWARD, ins, 2 * s, &dwx, 1, 2.0 * steps * (double)(nin * 4 * hid));
    for (int32_t t = 0; t < s; t++) {
        int32_t tp = reverse ? t + 1 : t - 1;
        ins[t] = tp < 0 || tp >= s ? h0 : hs[tp];
    }
    int32_t o4[] = {zb_grad_contrib(z, wh), zb_grad_contrib(z, b)};
    snprintf(nm, sizeof nm, "%s/bwd_weight", z->g->tensors[wh].name);
    zb_op(z, nm, "matmul_bwd_weight", SA_DFG_BACKWARD, ins, 2 * s, o4, 2,
          2.0 * steps * (double)(hid * 4 * hid) + steps * (double)(4 * hid));
    free(ins);
}

/* One direction of one layer over all steps; hs[t] gets the output at step t. */
static void lstm_layer(zb *z, const char *p, const int32_t *xs, int32_t s, int64_t hid, bool reverse, int32_t *hs)
{
    if (!zb_ok(z))
        return;
    int64_t batch = zb_dim(z, xs[0], 0), nin = zb_dim(z, xs[0], 1);
    int64_t wxs[] = {nin, 4 * hid}, whs[] = {hid, 4 * hid}, g4 = 4 * hid, bh[] = {batch, hid},
            bg[] = {batch, 4 * hid};
    int32_t *in = malloc((size_t)(5 + s) * sizeof *in);
    int32_t *args = malloc((size_t)(1 + (int64_t)PER_STEP * s) * sizeof *args);
    if (!in || !args) {
        free(in);
        free(args);
        zb_fail(z, SA_ENOMEM, "out of memory building %s", z->g->name);
        return;
    }
    in[0] = zb_param(z, 2, wxs, "%s.w_x", p);
    in[1] = zb_param(z, 2, whs, "%s.w_h", p);
    in[2] = zb_param(z, 1, &g4, "%s.b", p);
    /* The initial state comes from the host (the previous batch's final state
     * under truncated back-propagation through time). */
    in[3] = zb_tensor(z, SA_DFG_INPUT, 2, bh, "%s.h0", p);
    in[4] = zb_tensor(z, SA_DFG_INPUT, 2, bh, "%s.c0", p);
    memcpy(in + 5, xs, (size_t)s * sizeof *xs);
    args[0] = reverse;
    int32_t hprev = in[3], cprev = in[4], first = -1;
    char nm[NM + 32];
    for (int32_t k = 0; k < s && zb_ok(z); k++) {
        int32_t t = reverse ? s - 1 - k : k;
        int32_t *cur = args + 1 + (int64_t)t * PER_STEP;
        cur[0] = zb_tensor(z, SA_DFG_ACTIVATION, 2, bg, "%s.t%d.xg", p, t);
        cur[1] = zb_tensor(z, SA_DFG_ACTIVATION, 2, bg, "%s.t%d.hg", p, t);
        /* the activated gates are saved for the backward only */
        cur[2] = z->inference ? -1 : zb_tensor(z, SA_DFG_ACTIVATION, 2, bg, "%s.t%d.gates", p, t);
        cur[3] = zb_tensor(z, SA_DFG_ACTIVATION, 2, bh, "%s.t%d.c", p, t);
        hs[t] = zb_tensor(z, SA_DFG_ACTIVATION, 2, bh, "%s.t%d.h", p, t);
        int32_t i1[] = {xs[t], in[0]}, i2[] = {hprev, in[1]}, i3[] = {cur[0], cur[1], in[2], cprev},
                o3[] = {hs[t], cur[3], cur[2]};
        snprintf(nm, sizeof nm, "%s.t%d.xg", p, t);
        cur[4] = zb_op(z, nm, "matmul", SA_DFG_FORWARD, i1, 2, cur, 1, 2.0 * (double)(batch * nin * 4 * hid));
        snprintf(nm, sizeof nm, "%s.t%d.hg", p, t);
        cur[5] = zb_op(z, nm, "matmul", SA_DFG_FORWARD, i2, 2, cur + 1, 1, 2.0 * (double)(batch * hid * 4 * hid));
        snprintf(nm, sizeof nm, "%s.t%d.cell", p, t);
        cur[6] = zb_op(z, nm, "lstm_cell", SA_DFG_FORWARD, i3, 4, o3, z->inference ? 2 : 3,
                       ZF_LSTM * (double)(batch * hid));
        for (int i = 0; i < 4; i++)
            zb_set_needs(z, cur[i], true);
        zb_set_needs(z, hs[t], true);
        if (first < 0)
            first = cur[4];
        hprev = hs[t];
        cprev = cur[3];
    }
    zb_tape(z, lstm_bwd, first, in, 5 + s, hs, s, args, 1 + PER_STEP * s);
    free(in);
    free(args);
}

void zoo_rnn(zb *z, int layers, int64_t hidden, bool bidirectional, int64_t batch, int64_t seq)
{
    int32_t s = (int32_t)seq;
    int64_t vocab = ZOO_RNN_VOCAB, tok[] = {seq, batch}, rows = seq * batch, es[] = {vocab, hidden};
    int32_t *xs = malloc((size_t)s * sizeof *xs), *hf = malloc((size_t)s * sizeof *hf),
            *hb = malloc((size_t)s * sizeof *hb);
    if (!xs || !hf || !hb) {
        zb_fail(z, SA_ENOMEM, "out of memory building %s", z->g->name);
        goto done;
    }
    int32_t tokens = zb_tensor_i32(z, SA_DFG_INPUT, 2, tok, "tokens");
    int32_t labels = z->inference ? -1 : zb_tensor_i32(z, SA_DFG_INPUT, 1, &rows, "labels");
    int32_t emb = zb_param(z, 2, es, "embed.w");
    int32_t x = zl_embedding(z, "embed", tokens, emb, -1);
    zl_split(z, "embed_split", x, s, NULL, 0, true, xs);
    char p[NM], nm[NM + 32];
    for (int l = 0; l < layers && zb_ok(z); l++) {
        if (!bidirectional) {
            snprintf(p, sizeof p, "l%d", l);
            lstm_layer(z, p, xs, s, hidden, false, hf);
            memcpy(xs, hf, (size_t)s * sizeof *xs);
            continue;
        }
        snprintf(p, sizeof p, "l%d.fwd", l);
        lstm_layer(z, p, xs, s, hidden, false, hf);
        snprintf(p, sizeof p, "l%d.bwd", l);
        lstm_layer(z, p, xs, s, hidden, true, hb);
        for (int32_t t = 0; t < s; t++) {
            int32_t two[] = {hf[t], hb[t]};
            snprintf(nm, sizeof nm, "l%d.t%d.concat", l, t);
            xs[t] = zl_concat(z, nm, two, 2, 1);
        }
    }
    if (zb_ok(z)) {
        x = zl_concat(z, "head.concat", xs, s, 0);
        x = zl_linear(z, "head.fc", x, vocab, true);
        zl_softmax_xent(z, "loss", x, labels);
    }
done:
    free(xs);
    free(hf);
    free(hb);
}
