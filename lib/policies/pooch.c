/* pooch.c - PooCH (Imai et al., 2019): every feature map classified keep,
 * swap or recompute by simulating the timeline (the profile-guided family of
 * adaptive.c, whose shared helpers are in adaptive_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive_internal.h"
#include "policies_internal.h"
#include "swapadvisor/sim.h"

enum { PO_BRUTE = 4, PO_RECOMP_ROUNDS = 48 };

/* Where the compute stream of p's last simulation waited: for each compute
 * or recompute node that started later than its predecessor ended, the
 * dependency that ended last is charged the wait (ovh_in for a swap-in,
 * ovh_out for a swap-out).  Swap-outs still running when the forward pass
 * ends count in ovh_out too (PooCH's L_O: the swap-outs piled up at the end
 * of forward, sec. 4.4.2, Fig. 13). */
static void po_charge(const rctx *r, const sa_plan *p, const double *s, const double *e, double *ovh_in,
                      double *ovh_out)
{
    const sa_dfg_graph *g = r->g;
    memset(ovh_in, 0, (size_t)g->n_tensors * sizeof *ovh_in);
    memset(ovh_out, 0, (size_t)g->n_tensors * sizeof *ovh_out);
    double prev = 0, fwd_end = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const sa_plan_node *nd = &p->nodes[v];
        if (sa_plan_kind_stream(nd->kind) != SA_PLAN_STREAM_COMPUTE)
            continue;
        if (s[v] > prev + 1e-9) {
            int32_t cul = -1;
            for (int32_t i = 0; i < nd->n_deps; i++) {
                int32_t d = p->deps[nd->dep_off + i];
                if (cul < 0 || e[d] > e[cul])
                    cul = d;
            }
            if (cul >= 0 && p->nodes[cul].kind == SA_PLAN_SWAP_IN)
                ovh_in[p->nodes[cul].ref] += s[v] - prev;
            else if (cul >= 0 && p->nodes[cul].kind == SA_PLAN_SWAP_OUT)
                ovh_out[p->nodes[cul].ref] += s[v] - prev;
        }
        prev = e[v];
        if (nd->kind == SA_PLAN_COMPUTE && g->ops[nd->ref].phase == SA_DFG_FORWARD)
            fwd_end = e[v];
    }
    for (int32_t v = 0; v < p->n_nodes; v++)
        if (p->nodes[v].kind == SA_PLAN_SWAP_OUT && e[v] > fwd_end)
            ovh_out[p->nodes[v].ref] += e[v] - fwd_end;
}

typedef struct po_ctx {
    uint8_t *base;      /* the decisions the L_O scan starts from */
    int32_t *lo;        /* L_O \ L_I, by position ascending (input side first) */
    int32_t n_lo;
} po_ctx;

/* set_fn: base, with the first k of L_O \ L_I (from the input side) swapped
 * and the rest (the output side) kept. */
static void po_set(rctx *r, int32_t k, const void *arg)
{
    const po_ctx *c = arg;
    memcpy(r->act, c->base, (size_t)r->g->n_tensors + 1);
    for (int32_t i = 0; i < c->n_lo; i++)
        r->act[c->lo[i]] = i < k ? DEC_SWAP : DEC_KEEP;
}

/* qsort_r: tensors by their producer's position in the schedule (ctx: the rctx). */
static int cmp_pos_tensor(const void *x, const void *y, void *ctx)
{
    const rctx *r = ctx;
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    int32_t pa = r->pos[r->g->tensors[a].producer], pb = r->pos[r->g->tensors[b].producer];
    return pa < pb ? -1 : pa > pb;
}

/* PooCH (Imai et al., 2019, sec. 4.4): every feature map is classified keep,
 * swap or recompute by simulating the timeline.
 *   4.4.2: start from all swapped (the safest); simulate; L_O = the maps
 *     whose swap-out is not hidden by computation, L_I = those whose swap-in
 *     is not (po_charge); the others stay swapped.  L_I is searched by brute
 *     force (a binary tree, one level per map: keep or swap); at each leaf
 *     L_O \ L_I is scanned greedily from the output side, keeping maps as
 *     long as the memory fits; the leaf with the shortest simulated time
 *     wins.
 *   4.4.3: L = the swapped maps; r(X) = recompute_overhead(X) /
 *     swap_overhead(X); those with r >= 1 stay swapped; the one with the
 *     smallest r < 1 is recomputed; repeat until L is empty.
 *   4.3: swap-ins start early (decide.h's automatic prefetch by time).
 * Simplifications: the brute force covers only the PO_BRUTE maps of L_I
 * with the largest stalls (the rest stay swapped); swap_overhead(X) is the
 * stall the simulation charges to X's transfers (not a re-simulation per X)
 * and recompute_overhead(X) its recomputation time; a recomputation that
 * would not fit the memory or would slow the simulated iteration is undone;
 * swap-ins are prefetched by time, not "when there is room in memory".
 * Maps whose producer cannot be re-run (batchnorm) are never recomputed.
 * Refuses when swapping every feature map does not fit. */
/* The state of one PooCH run: decisions, overheads and the best plan so far. */
typedef struct pooch {
    rctx *r;
    size_t nt;
    int32_t nf;           /* feature maps (r->cand) */
    uint8_t *base, *best_act, *inl;
    double *oi, *oo;      /* swap-in / swap-out overhead charged per tensor */
    int32_t *li, *lo;     /* L_I, L_O \ L_I */
    sa_sim_ws *ws;
    sa_plan *best;
    dec_stats bds;
    dec_opts opts;        /* the timing setting that fitted */
    int sync;
    int32_t n_li, n_lo, n_lo_all, n_rec, nb, leaves;
} pooch;

/* 4.4.2, first step: every feature map swapped, under the first timing
 * setting that fits; then the overheads of that plan. */
static sa_status po_all_swapped(pooch *P, const dec_opts *o)
{
    rctx *r = P->r;
    sa_plan *p = NULL;
    dec_stats ds = {0};
    sa_status st;
    for (P->sync = 0; P->sync < AD_N_TIMINGS; P->sync++) {
        ad_timing_opts(o, P->sync, &P->opts);
        bl_all_keep(r);
        for (int32_t i = 0; i < P->nf; i++)
            r->act[r->cand[i]] = DEC_SWAP;
        if ((st = bl_build(r, &P->opts, true, &p, &ds)))
            return st;
        if (ds.arena_bytes <= r->dev->memory_bytes)
            break;
        sa_plan_free(p);
        p = NULL;
    }
    if (!p) {
        char what[160];
        snprintf(what, sizeof what, "even swapping all %d feature maps (swap-ins held back to one op ahead),", P->nf);
        return bl_too_big(r, what, &ds);
    }
    memcpy(P->base, r->act, P->nt);
    P->best = p;
    P->bds = ds;
    memcpy(P->best_act, P->base, P->nt);
    sa_sim_result sr;
    if ((st = sa_sim_run(p, r->g, P->ws, &sr, r->err)))
        return st;
    po_charge(r, p, sa_sim_start(P->ws), sa_sim_end(P->ws), P->oi, P->oo);
    return SA_OK;
}

/* 4.4.2, classification: L_I (swap-in not hidden; its PO_BRUTE worst marked
 * in inl) and L_O \ L_I by producer position. */
static void po_classify(pooch *P)
{
    rctx *r = P->r;
    for (int32_t i = 0; i < P->nf; i++) {
        int32_t t = r->cand[i];
        if (P->oi[t] > 0)
            P->li[P->n_li++] = t;
        if (P->oo[t] > 0)
            P->n_lo_all++;
    }
    /* the PO_BRUTE maps of L_I with the largest stalls */
    for (int32_t i = 0; i < P->n_li && i < PO_BRUTE; i++)
        for (int32_t j = i + 1; j < P->n_li; j++)
            if (P->oi[P->li[j]] > P->oi[P->li[i]]) {
                int32_t tmp = P->li[i];
                P->li[i] = P->li[j];
                P->li[j] = tmp;
            }
    P->nb = P->n_li < PO_BRUTE ? P->n_li : PO_BRUTE;
    for (int32_t i = 0; i < P->nb; i++)
        P->inl[P->li[i]] = 1;
    for (int32_t i = 0; i < P->nf; i++)
        if (P->oo[r->cand[i]] > 0 && !P->inl[r->cand[i]])
            P->lo[P->n_lo++] = r->cand[i];
    qsort_r(P->lo, (size_t)P->n_lo, sizeof *P->lo, cmp_pos_tensor, r);
}

/* 4.4.2, search: every leaf of the brute force over L_I, each with the
 * greedy L_O scan, until the effort budget is spent (bl_spent); the fastest
 * plan that fits becomes P->best. */
static sa_status po_brute_force(pooch *P)
{
    rctx *r = P->r;
    po_ctx pc = {P->base, P->lo, P->n_lo};
    uint8_t *leaf = malloc(P->nt);
    if (!leaf)
        return bl_oom(r);
    memcpy(leaf, P->base, P->nt);
    sa_status st = SA_OK;
    for (int32_t mask = 0; mask < (1 << P->nb) && !bl_spent(r); mask++) {
        for (int32_t i = 0; i < P->nb; i++)
            leaf[P->li[i]] = mask >> i & 1 ? DEC_KEEP : DEC_SWAP;
        pc.base = leaf;
        int32_t k;
        sa_plan *p = NULL;
        dec_stats ds = {0};
        if ((st = bl_fit_smallest(r, po_set, &pc, 0, P->n_lo, &P->opts, &p, &ds, &k)))
            break;
        P->leaves++;
        if (p && p->predicted.iteration_us < P->best->predicted.iteration_us) {
            sa_plan_free(P->best);
            P->best = p;
            P->bds = ds;
            po_set(r, k, &pc); /* the decisions of the plan kept */
            memcpy(P->best_act, r->act, P->nt);
        } else {
            sa_plan_free(p);
        }
    }
    free(leaf);
    return st;
}

/* 4.4.3: swap -> recompute where r(X) < 1, smallest first (PO_RECOMP_ROUNDS
 * rounds at most, none past the effort budget). */
static sa_status po_recompute(pooch *P)
{
    rctx *r = P->r;
    const sa_dfg_graph *g = r->g;
    uint8_t *done = P->inl; /* reused: maps removed from L */
    memset(done, 0, P->nt);
    sa_sim_result sr;
    sa_status st;
    for (int round = 0; round < PO_RECOMP_ROUNDS && !bl_spent(r); round++) {
        if ((st = sa_sim_run(P->best, g, P->ws, &sr, r->err)))
            return st;
        po_charge(r, P->best, sa_sim_start(P->ws), sa_sim_end(P->ws), P->oi, P->oo);
        memcpy(r->act, P->best_act, P->nt);
        int32_t bx = -1;
        double br = 1.0;
        for (int32_t i = 0; i < P->nf; i++) {
            int32_t t = r->cand[i];
            if (done[t] || P->best_act[t] != DEC_SWAP)
                continue;
            double so = P->oi[t] + P->oo[t];
            if (so <= 0 || !dec_recomputable(g, t)) {
                done[t] = 1; /* r(X) >= 1 (infinite): swap */
                continue;
            }
            double rx = ad_recompute_us(r, t, 0) / so;
            if (rx >= 1.0) {
                done[t] = 1;
                continue;
            }
            if (rx < br) {
                br = rx;
                bx = t;
            }
        }
        if (bx < 0)
            break;
        done[bx] = 1;
        r->act[bx] = DEC_RECOMPUTE;
        sa_plan *p = NULL;
        dec_stats ds = {0};
        if ((st = bl_build(r, &P->opts, true, &p, &ds)))
            return st;
        if (ds.arena_bytes <= r->dev->memory_bytes && p->predicted.iteration_us < P->best->predicted.iteration_us) {
            sa_plan_free(P->best);
            P->best = p;
            P->bds = ds;
            P->best_act[bx] = DEC_RECOMPUTE;
            P->n_rec++;
        } else {
            sa_plan_free(p);
        }
    }
    return SA_OK;
}

sa_status bl_run_pooch(rctx *r, const dec_opts *o, sa_plan **out)
{
    pooch P;
    memset(&P, 0, sizeof P);
    P.r = r;
    P.nt = (size_t)r->g->n_tensors + 1;
    bl_forward_activations(r, true);
    P.nf = r->n_cand;
    P.base = malloc(P.nt);
    P.best_act = malloc(P.nt);
    P.inl = calloc(P.nt, 1);
    P.oi = calloc(P.nt, sizeof *P.oi);
    P.oo = calloc(P.nt, sizeof *P.oo);
    P.li = calloc((size_t)P.nf + 1, sizeof *P.li);
    P.lo = calloc((size_t)P.nf + 1, sizeof *P.lo);
    P.ws = sa_sim_ws_new();
    sa_status st = SA_OK;
    if (!P.base || !P.best_act || !P.inl || !P.oi || !P.oo || !P.li || !P.lo || !P.ws)
        st = bl_oom(r);
    /* PooCH classifies feature maps only when they do not all fit */
    else if ((st = ad_keep_all_if_fits(r, o, out)) || *out)
        ;
    else if (!(st = po_all_swapped(&P, o))) {
        po_classify(&P);
        if (!(st = po_brute_force(&P)) && !(st = po_recompute(&P))) {
            char extra[256];
            snprintf(extra, sizeof extra,
                     "\"feature_maps\":%d,\"L_O\":%d,\"L_I\":%d,\"brute_forced\":%d,\"leaves\":%d,"
                     "\"recomputed_by_r\":%d,%s",
                     P.nf, P.n_lo_all, P.n_li, P.nb, P.leaves, P.n_rec, ad_timing_json(P.sync));
            st = ad_accept(r, P.best, &P.bds, extra, out);
            P.best = NULL;
        }
    }
    sa_plan_free(P.best);
    sa_sim_ws_free(P.ws);
    free(P.base);
    free(P.best_act);
    free(P.inl);
    free(P.oi);
    free(P.oo);
    free(P.li);
    free(P.lo);
    return st;
}

sa_status policy_run_pooch(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, bl_run_pooch, out, err);
}
