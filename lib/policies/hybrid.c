/* hybrid.c - the house's own rule, from no paper: recompute the feature
 * maps that are cheap to rebuild, swap some of the others, keep the rest.
 *
 * Why: in a CNN the elementwise layers (batchnorm, ReLU, add) take about a
 * tenth of the iteration but write most of the activation bytes, so
 * rebuilding their outputs costs little compute and frees most of the
 * memory (Checkmate, MLSys'20; MONeT, ICLR'21); what still does not fit is
 * swapped from the input side, whose tensors wait longest for the backward
 * pass and so hide their transfers best.  SuperNeurons has the same two
 * actions but chooses by layer type and recomputes only from the input
 * side; Capuchin swaps first and recomputes what swapping cannot hide.
 *
 * The rule.  Candidates are the forward activations, in producer order
 * (those read only in the forward pass count too: a recompute in the
 * backward pass may read them, and they must not stay on the device just for
 * that).  A candidate's cost is its producer's
 * time per megabyte of the tensor (us / MB).  For a threshold x, every
 * candidate whose producer may be re-run (dec_recomputable) with cost <= x
 * is recomputed; of the others that are read again after their last forward
 * use, the first k (input side first) are swapped.
 * The thresholds tried are 0 (swap only), HY_LEVELS quantiles of the
 * candidates' distinct costs, and +inf (recompute everything that may be);
 * for each, and for timed and synchronous swap-outs, k is the smallest that
 * fits the memory (bl_fit_smallest).  The whole is tried twice: with every
 * forward activation a candidate, and with only those read again after
 * their last forward use (the others then stay until their last reader,
 * recompute nodes included).  The fastest plan wins; equal times go
 * to the earlier try, so the result is deterministic. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "swapadvisor/decide.h"
#include "baselines_internal.h"
#include "policies_internal.h"

enum { HY_LEVELS = 10 };
/* the longest recompute chains allowed, and how far ahead swap-ins start
 * (dec_opts.prefetch: 0 = as early as the compute covers the transfer; a
 * few ops ahead holds less memory) */
static const int32_t HY_CHAINS[] = {2, 3, INT32_MAX};
static const int32_t HY_PREFETCH[] = {0, 3, 1};

typedef struct hy_arg {
    const double *cost;  /* per candidate index (r->cand order) */
    const uint8_t *gap;  /* per candidate index: read again after its last forward use */
    double thr;
    int32_t max_chain;   /* longest run of recomputes one recompute may need */
    int32_t *depth;      /* scratch, n_tensors entries */
} hy_arg;

/* k = how many of the candidates that are not recomputed are swapped */
static void hy_set(rctx *r, int32_t k, const void *argp)
{
    const hy_arg *a = argp;
    const dfg_graph *g = r->g;
    bl_all_keep(r);
    int32_t sw = 0;
    for (int32_t i = 0; i < r->n_cand; i++) {
        int32_t t = r->cand[i];
        a->depth[t] = 0;
        if (a->cost[i] <= a->thr && dec_recomputable(g, t)) {
            const dfg_op *o = &g->ops[g->tensors[t].producer];
            int32_t d = 0;
            for (int32_t j = 0; j < o->n_in; j++)
                if (r->act[o->in[j]] == DEC_RECOMPUTE && a->depth[o->in[j]] > d)
                    d = a->depth[o->in[j]];
            if (d < a->max_chain) {
                r->act[t] = DEC_RECOMPUTE;
                a->depth[t] = d + 1;
                continue;
            }
        }
        if (a->gap[i] && sw < k) {
            r->act[t] = DEC_SWAP;
            sw++;
        }
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The thresholds to try into thr (room for HY_LEVELS + 2), their count in
 * *n: 0, the distinct costs' quantiles, +inf. */
static void hy_levels(const double *cost, int32_t nc, double *sorted, double *thr, int *n)
{
    int m = 0;
    thr[m++] = 0.0;
    for (int32_t i = 0; i < nc; i++)
        sorted[i] = cost[i];
    qsort(sorted, (size_t)nc, sizeof *sorted, cmp_double);
    int32_t nd = 0; /* distinct, in place */
    for (int32_t i = 0; i < nc; i++)
        if (nd == 0 || sorted[i] != sorted[nd - 1])
            sorted[nd++] = sorted[i];
    for (int l = 0; l < HY_LEVELS && nd > 0; l++) {
        double v = sorted[(int32_t)((int64_t)(nd - 1) * l / (HY_LEVELS > 1 ? HY_LEVELS - 1 : 1))];
        if (v > thr[m - 1])
            thr[m++] = v;
    }
    thr[m++] = HUGE_VAL;
    *n = m;
}

typedef struct hy_best {
    plan *p;          /* the fastest plan so far, or NULL */
    dec_stats ds;
    double thr;
    int32_t k;
    int sync;
    bool all_maps;
    int32_t max_chain;
    int32_t prefetch;
} hy_best;

/* One candidate set (all_maps: every forward activation; else only those
 * with a gap): every threshold and swap-out timing, the fastest plan that
 * fits into *b.  *last describes the last try (for the refusal). */
static sa_status hy_family(rctx *r, const dec_opts *base, bool all_maps, hy_best *b, dec_stats *last)
{
    const dfg_graph *g = r->g;
    bl_forward_activations(r, !all_maps);
    int32_t nc = r->n_cand;
    double *cost = malloc(((size_t)nc * 2 + 1) * sizeof *cost);
    uint8_t *gap = malloc((size_t)nc + 1);
    int32_t *depth = calloc((size_t)g->n_tensors + 1, sizeof *depth);
    if (!cost || !gap || !depth) {
        free(cost);
        free(gap);
        free(depth);
        return bl_oom(r);
    }
    for (int32_t i = 0; i < nc; i++) {
        gap[i] = bl_has_gap(r, r->cand[i]);
        const dfg_tensor *t = &g->tensors[r->cand[i]];
        double mb = (double)t->bytes / 1e6;
        cost[i] = mb > 0 ? g->ops[t->producer].time_us / mb : 0.0;
    }
    double thr[HY_LEVELS + 2];
    int n_thr;
    hy_levels(cost, nc, cost + nc, thr, &n_thr);
    sa_status st = SA_OK;
    for (int c = 0; c < (int)SA_ARRAY_LEN(HY_CHAINS) && !st; c++)
        for (int f = 0; f < (int)SA_ARRAY_LEN(HY_PREFETCH) && !st; f++)
            for (int i = 0; i < n_thr && !st; i++)
                for (int sync = 0; sync <= 1 && !st; sync++) {
                    dec_opts o = *base;
                    o.out_sync = sync;
                    o.prefetch = HY_PREFETCH[f];
                    hy_arg a = {cost, gap, thr[i], HY_CHAINS[c], depth};
                    plan *p = NULL;
                    int32_t k = 0;
                    if ((st = bl_fit_smallest(r, hy_set, &a, 0, nc, &o, &p, last, &k)) || !p)
                        continue;
                    if (!b->p || p->predicted.iteration_us < b->p->predicted.iteration_us) {
                        plan_free(b->p);
                        *b = (hy_best){p, *last, thr[i], k, sync, all_maps, HY_CHAINS[c], HY_PREFETCH[f]};
                    } else {
                        plan_free(p);
                    }
                }
    free(cost);
    free(gap);
    free(depth);
    return st;
}

static sa_status run_hybrid(rctx *r, const dec_opts *base, plan **out)
{
    hy_best b = {0};
    dec_stats last = {0};
    sa_status st = SA_OK;
    for (int all_maps = 1; all_maps >= 0 && !st; all_maps--)
        st = hy_family(r, base, all_maps, &b, &last);
    if (st) {
        plan_free(b.p);
        return st;
    }
    if (!b.p)
        return bl_too_big(r, "even with every feature map recomputed or swapped,", &last);
    char thr[32], extra[192];
    if (isinf(b.thr))
        snprintf(thr, sizeof thr, "\"inf\"");
    else
        snprintf(thr, sizeof thr, "%.6g", b.thr);
    snprintf(extra, sizeof extra,
             "\"candidates\":\"%s\",\"max_chain\":%d,\"prefetch\":%d,\"recompute_below_us_per_mb\":%s,\"swapped_first\":%d,\"sync_swap_out\":%s",
             b.all_maps ? "all" : "gap", b.max_chain == INT32_MAX ? -1 : b.max_chain, b.prefetch, thr, b.k, b.sync ? "true" : "false");
    if ((st = bl_finish(r, b.p, &b.ds, extra))) {
        plan_free(b.p);
        return st;
    }
    *out = b.p;
    return SA_OK;
}

sa_status policy_run_hybrid(const policy_call *c, plan **out, sa_err *err)
{
    return bl_rule_run(c, run_hybrid, out, err);
}
