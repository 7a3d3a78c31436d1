/* zoo_gpt.c - decoder-only transformer in the GPT-2 layout (gpt-L-H).
 *
 * Pre-layernorm blocks; attention written out as its ops: the fused QKV
 * projection, a split into q, k, v, the score GEMM per head, the scaling and
 * causal mask, softmax, the context GEMM per head and the output projection;
 * then the 4H GELU MLP; residual adds after each half.  The token embedding
 * is tied to the output projection, so its gradient has two partials summed
 * by an explicit add.  Dropout is left out (GPT-2 used 0.1; many runs use 0). */
#include <stdio.h>

#include "zoo_models.h"

#define NM 256

void zoo_gpt(zb *z, int layers, int64_t hidden, int64_t heads, int64_t batch, int64_t seq)
{
    int64_t vocab = ZOO_GPT_VOCAB, pos = seq > ZOO_GPT_POSITIONS ? seq : ZOO_GPT_POSITIONS, hd = hidden / heads;
    int64_t bs[] = {batch, seq}, wte_s[] = {vocab, hidden}, wpe_s[] = {pos, hidden};
    int32_t tokens = zb_tensor_i32(z, SA_DFG_INPUT, 2, bs, "tokens");
    int32_t labels = z->inference ? -1 : zb_tensor_i32(z, SA_DFG_INPUT, 2, bs, "labels");
    int32_t wte = zb_param(z, 2, wte_s, "wte");
    int32_t wpe = zb_param(z, 2, wpe_s, "wpe");
    int32_t x = zl_embedding(z, "embed", tokens, wte, wpe);
    char nm[NM + 32];
    for (int l = 0; l < layers && zb_ok(z); l++) {
        int32_t qkv[3], two[2];
        int64_t scores_s[] = {batch, heads, seq, seq}, ctx_s[] = {batch, seq, hidden};
        snprintf(nm, sizeof nm, "h%d.ln_1", l);
        int32_t a = zl_layernorm(z, nm, x);
        snprintf(nm, sizeof nm, "h%d.attn.c_attn", l);
        a = zl_linear(z, nm, a, 3 * hidden, true);
        snprintf(nm, sizeof nm, "h%d.attn.split", l);
        zl_split(z, nm, a, 3, NULL, 2, false, qkv);
        snprintf(nm, sizeof nm, "h%d.attn.scores", l);
        a = zl_bmm(z, nm, qkv[0], qkv[1], 4, scores_s, batch * heads, seq, seq, hd);
        snprintf(nm, sizeof nm, "h%d.attn.mask", l);
        a = zl_mask(z, nm, a);
        snprintf(nm, sizeof nm, "h%d.attn.softmax", l);
        a = zl_softmax(z, nm, a);
        snprintf(nm, sizeof nm, "h%d.attn.context", l);
        a = zl_bmm(z, nm, a, qkv[2], 3, ctx_s, batch * heads, seq, hd, seq);
        snprintf(nm, sizeof nm, "h%d.attn.c_proj", l);
        a = zl_linear(z, nm, a, hidden, true);
        two[0] = x;
        two[1] = a;
        snprintf(nm, sizeof nm, "h%d.attn.residual", l);
        x = zl_add(z, nm, two, 2);
        snprintf(nm, sizeof nm, "h%d.ln_2", l);
        a = zl_layernorm(z, nm, x);
        snprintf(nm, sizeof nm, "h%d.mlp.c_fc", l);
        a = zl_linear(z, nm, a, 4 * hidden, true);
        snprintf(nm, sizeof nm, "h%d.mlp.gelu", l);
        a = zl_gelu(z, nm, a);
        snprintf(nm, sizeof nm, "h%d.mlp.c_proj", l);
        a = zl_linear(z, nm, a, hidden, true);
        two[0] = x;
        two[1] = a;
        snprintf(nm, sizeof nm, "h%d.mlp.residual", l);
        x = zl_add(z, nm, two, 2);
    }
    x = zl_layernorm(z, "ln_f", x);
    x = zl_matmul(z, "lm_head", x, wte, -1, true);
    zl_softmax_xent(z, "loss", x, labels);
}
