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
 * The rule.  Candidates are the forward activations, in producer order.  A
 * candidate's cost is its producer's time per megabyte of the tensor
 * (us / MB).  For a threshold x, every candidate whose producer may be
 * re-run (dec_recomputable) with cost <= x is recomputed, unless the
 * recompute would need a chain of more than max_chain recomputes behind it
 * (then it is a checkpoint); of the others that are read again after their
 * last forward use and are not tiny (HY_SWAP_MIN_FRAC), the first k (input
 * side first) are swapped.
 *
 * The knobs: x is 0 (swap only), one of HY_LEVELS quantiles of the
 * candidates' distinct costs, or +inf; max_chain one of HY_CHAINS; swap-ins
 * start as early as the compute covers them or HY_PREFETCH ops ahead;
 * swap-outs are timed or waited for HY_SYNC ops after their issue; the
 * candidates are every forward activation, or only those read again after
 * their last forward use (the others then stay until their last reader,
 * recompute nodes included).
 *
 * The search runs in two phases over these combinations, in the order of
 * the tables below.  Phase 1 plans each with k = every candidate (one build
 * without packing: does the peak fit, how long does it take?), until two
 * thirds of the build budget (HY_BUDGET_IDS / (ops + tensors) builds, at
 * least HY_MIN_BUILDS, and at most HY_WORK_MAX of work) are spent.  Phase 2 takes those that fit and finds
 * the smallest k whose packed arena fits (bl_fit_smallest), in turn from two
 * orders: phase 1's time (the best guess where memory is tight) and the time
 * with nothing swapped (where it is loose), until the budget is spent.  The
 * zoo's graphs, nasnet-25's 15k ops included, get every combination (5,364
 * builds there at 0.5x); a graph of 10^5 ops and tensors about 2,000.  The fastest plan wins; equal times go to the earlier
 * try, so the result is deterministic. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "swapadvisor/decide.h"
#include "baselines_internal.h"
#include "policies_internal.h"

enum { HY_LEVELS = 10 };
/* the longest recompute chains allowed; how far ahead swap-ins start
 * (dec_opts.prefetch: 0 = as early as the compute covers the transfer; a
 * few ops ahead holds less memory) */
static const int32_t HY_CHAINS[] = {3, 2, INT32_MAX};
static const int32_t HY_PREFETCH[] = {0, 3, 1};
/* when a swap-out's memory is free (dec_opts.out_sync): 0 = when the
 * transfer is estimated to end (timed), else that many ops after its issue,
 * the op there waiting for it (synchronous; a few ops later hides more) */
static const int32_t HY_SYNC[] = {0, 1, 4, 16};
#define HY_BUDGET_IDS 2.0e8 /* builds x (ops + tensors) */
#define HY_MIN_BUILDS 64
/* ...and at most this much rctx.work (ops + tensors per build plus the
 * segments packing walked): where the free space fragments (sizes from a
 * byte to megabytes, lifetimes crossing at random) a packing costs far more
 * than its ids, and an 800-op graph took 35 s, a 1,900-op one past 5
 * minutes.  The zoo's graphs stay below it (nasnet-25 at 0.5x: 7.8e8). */
#define HY_WORK_MAX 1.0e9
/* Under an effort budget (rctx.work_max) hybrid gets this many seeds' worth:
 * it is the seed the search starts from on most graphs where memory is
 * tight, and its combinations keep gaining where the other rules' tries
 * have stopped (torchvision densenet121 at 0.5x: 127.8 ms with twice the
 * budget, 134.9 ms with one). */
#define HY_EFFORT_SHARE 2
/* Smaller tensors are never swapped: a swap saves next to nothing and its
 * swap-in queues behind the big ones on the link while the op waits. */
#define HY_SWAP_MIN_FRAC (1.0 / 1024)

/* One candidate set. */
typedef struct hy_cands {
    int32_t *cand;   /* tensors, producer order */
    int32_t nc;
    double *cost;    /* per candidate: producer us per MB (2 nc + 1 entries: scratch after) */
    uint8_t *gap;    /* per candidate: read again after its last forward use, and big
                      * enough to swap (HY_SWAP_MIN_FRAC of the largest candidate) */
    double thr[HY_LEVELS + 2];
    int n_thr;
} hy_cands;

/* One combination (indices into the tables), and phase 1's times. */
typedef struct hy_combo {
    uint8_t all_maps, chain, prefetch, level, sync;
    double us;       /* with every candidate out (k = all) */
    double us0;      /* with nothing swapped (k = 0) */
} hy_combo;

typedef struct hy_arg {
    const hy_cands *c;
    double thr;
    int32_t max_chain;   /* longest run of recomputes one recompute may need */
    int32_t *depth;      /* scratch, n_tensors entries */
    int32_t *builds;     /* counts hy_set calls: one per build */
} hy_arg;

/* k = how many of the candidates that are not recomputed are swapped */
static void hy_set(rctx *r, int32_t k, const void *argp)
{
    const hy_arg *a = argp;
    const hy_cands *c = a->c;
    const sa_dfg_graph *g = r->g;
    (*a->builds)++;
    bl_all_keep(r);
    int32_t sw = 0;
    for (int32_t i = 0; i < c->nc; i++) {
        int32_t t = c->cand[i];
        a->depth[t] = 0;
        if (c->cost[i] <= a->thr && dec_recomputable(g, t)) {
            const sa_dfg_op *o = &g->ops[g->tensors[t].producer];
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
        if (c->gap[i] && sw < k) {
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

/* c->thr: 0, the distinct costs' quantiles, +inf.  sorted: nc scratch. */
static void hy_levels(hy_cands *c, double *sorted)
{
    int m = 0;
    c->thr[m++] = 0.0;
    for (int32_t i = 0; i < c->nc; i++)
        sorted[i] = c->cost[i];
    qsort(sorted, (size_t)c->nc, sizeof *sorted, cmp_double);
    int32_t nd = 0; /* distinct, in place */
    for (int32_t i = 0; i < c->nc; i++)
        if (nd == 0 || sorted[i] != sorted[nd - 1])
            sorted[nd++] = sorted[i];
    for (int l = 0; l < HY_LEVELS && nd > 0; l++) {
        double v = sorted[(int32_t)((int64_t)(nd - 1) * l / (HY_LEVELS - 1))];
        if (v > c->thr[m - 1])
            c->thr[m++] = v;
    }
    c->thr[m++] = HUGE_VAL;
    c->n_thr = m;
}

static void hy_cands_free(hy_cands *c)
{
    free(c->cand);
    free(c->cost);
    free(c->gap);
}

/* The candidate set (all_maps: every forward activation, else those with a
 * gap) into c.  On SA_ENOMEM c is left for hy_cands_free. */
static sa_status hy_cands_init(rctx *r, bool all_maps, hy_cands *c)
{
    const sa_dfg_graph *g = r->g;
    bl_forward_activations(r, !all_maps);
    c->nc = r->n_cand;
    c->cand = malloc(((size_t)c->nc + 1) * sizeof *c->cand);
    c->cost = malloc(((size_t)c->nc * 2 + 1) * sizeof *c->cost);
    c->gap = malloc((size_t)c->nc + 1);
    if (!c->cand || !c->cost || !c->gap)
        return bl_oom(r);
    int64_t big = 0;
    for (int32_t i = 0; i < c->nc; i++)
        if (g->tensors[r->cand[i]].bytes > big)
            big = g->tensors[r->cand[i]].bytes;
    for (int32_t i = 0; i < c->nc; i++) {
        int32_t t = c->cand[i] = r->cand[i];
        c->gap[i] = bl_has_gap(r, t) && (double)g->tensors[t].bytes >= HY_SWAP_MIN_FRAC * (double)big;
        double mb = (double)g->tensors[t].bytes / 1e6;
        c->cost[i] = mb > 0 ? g->ops[g->tensors[t].producer].time_us / mb : 0.0;
    }
    hy_levels(c, c->cost + c->nc);
    return SA_OK;
}

typedef struct hy_best {
    sa_plan *p;          /* the fastest plan so far, or NULL */
    dec_stats ds;
    hy_combo x;
    int32_t k;
    bool kept_all;       /* p is the plan that moves nothing, no combination's */
} hy_best;

typedef struct hy_run {
    rctx *r;
    const dec_opts *base;
    hy_cands c[2];     /* [all_maps] */
    int32_t *depth;
    int32_t builds, budget;
    dec_stats last;    /* the last build's (for the refusal) */
} hy_run;

/* Whether num/den of the budget is spent: of the builds (integer
 * division), of HY_WORK_MAX's work, or of the effort budget (work_max). */
static bool hy_spent(const hy_run *h, int32_t num, int32_t den)
{
    const rctx *r = h->r;
    return h->builds >= h->budget * num / den || (double)r->work >= HY_WORK_MAX * num / den ||
           (r->work_max > 0 && (double)r->effort >= r->work_max * num / den);
}

static hy_arg hy_arg_of(hy_run *h, const hy_combo *x, dec_opts *o)
{
    *o = *h->base;
    o->out_sync = HY_SYNC[x->sync];
    o->prefetch = HY_PREFETCH[x->prefetch];
    const hy_cands *c = &h->c[x->all_maps];
    return (hy_arg){c, c->thr[x->level], HY_CHAINS[x->chain], h->depth, &h->builds};
}

/* Phase 1 over the combinations in table order until two thirds of the
 * budget are spent: those whose peak fits with every candidate out go to
 * fit[] (*n_fit of them, in that order) with that plan's time. */
static sa_status hy_phase1(hy_run *h, hy_combo *fit, int32_t *n_fit)
{
    rctx *r = h->r;
    *n_fit = 0;
    for (int f = 0; f < (int)SA_ARRAY_LEN(HY_PREFETCH); f++)
        for (int ch = 0; ch < (int)SA_ARRAY_LEN(HY_CHAINS); ch++)
            for (int am = 1; am >= 0; am--)
                for (int l = 0; l < h->c[am].n_thr; l++)
                    for (int sync = 0; sync < (int)SA_ARRAY_LEN(HY_SYNC); sync++) {
                        if (hy_spent(h, 2, 3))
                            return SA_OK;
                        hy_combo x = {(uint8_t)am, (uint8_t)ch, (uint8_t)f, (uint8_t)l, (uint8_t)sync, 0, 0};
                        dec_opts o;
                        hy_arg a = hy_arg_of(h, &x, &o);
                        hy_set(r, h->c[am].nc, &a);
                        sa_plan *p = NULL;
                        sa_status st = bl_build(r, &o, false, &p, &h->last);
                        if (st)
                            return st;
                        x.us = p->predicted.iteration_us;
                        sa_plan_free(p);
                        if (h->last.peak_load <= r->dev->memory_bytes)
                            fit[(*n_fit)++] = x;
                    }
    return SA_OK;
}

/* us0 of every fitting combination: the time with nothing swapped, which
 * only the candidate set, chain bound and threshold decide (one build per
 * such triple, kept in a cache). */
static sa_status hy_times0(hy_run *h, hy_combo *fit, int32_t n_fit)
{
    double cache[2][SA_ARRAY_LEN(HY_CHAINS)][HY_LEVELS + 2];
    for (size_t i = 0; i < sizeof cache / sizeof cache[0][0][0]; i++)
        (&cache[0][0][0])[i] = -1;
    for (int32_t i = 0; i < n_fit; i++) {
        hy_combo *x = &fit[i];
        double *c = &cache[x->all_maps][x->chain][x->level];
        if (*c < 0) {
            dec_opts o;
            hy_arg a = hy_arg_of(h, x, &o);
            hy_set(h->r, 0, &a);
            sa_plan *p = NULL;
            dec_stats ds;
            sa_status st = bl_build(h->r, &o, false, &p, &ds);
            if (st)
                return st;
            *c = p->predicted.iteration_us;
            sa_plan_free(p);
        }
        x->us0 = *c;
    }
    return SA_OK;
}

/* Sorts idx[0 .. n) by key[idx] ascending, stable (insertion sort). */
static void hy_sort(int32_t *idx, int32_t n, const hy_combo *fit, bool by_us0)
{
    for (int32_t i = 0; i < n; i++)
        idx[i] = i;
    for (int32_t i = 1; i < n; i++) {
        int32_t x = idx[i], j = i - 1;
        double kx = by_us0 ? fit[x].us0 : fit[x].us;
        for (; j >= 0 && (by_us0 ? fit[idx[j]].us0 : fit[idx[j]].us) > kx; j--)
            idx[j + 1] = idx[j];
        idx[j + 1] = x;
    }
}

/* Phase 2: the smallest fitting k of the fitting combinations, taken in turn
 * by phase 1's time with every candidate out (good where memory is tight)
 * and with nothing swapped (where it is loose), each once, until the budget
 * is spent (the first always runs).  idx: 2 n_fit scratch. */
static sa_status hy_phase2(hy_run *h, hy_combo *fit, int32_t n_fit, int32_t *idx, hy_best *b)
{
    int32_t *ord[2] = {idx, idx + n_fit}, at[2] = {0, 0};
    sa_status st = hy_times0(h, fit, n_fit);
    if (st)
        return st;
    hy_sort(ord[0], n_fit, fit, false);
    hy_sort(ord[1], n_fit, fit, true);
    for (int32_t i = 0, turn = 0; i < n_fit && (i == 0 || !hy_spent(h, 1, 1)); i++, turn ^= 1) {
        while (at[turn] < n_fit && fit[ord[turn][at[turn]]].sync == UINT8_MAX)
            at[turn]++; /* already tried from the other list */
        if (at[turn] == n_fit)
            turn ^= 1;
        while (at[turn] < n_fit && fit[ord[turn][at[turn]]].sync == UINT8_MAX)
            at[turn]++;
        hy_combo *x = &fit[ord[turn][at[turn]]], c = *x;
        x->sync = UINT8_MAX; /* mark tried */
        dec_opts o;
        hy_arg a = hy_arg_of(h, &c, &o);
        sa_plan *p = NULL;
        int32_t k = 0;
        if ((st = bl_fit_smallest(h->r, hy_set, &a, 0, h->c[c.all_maps].nc, &o, &p, &h->last, &k)))
            return st;
        if (!p)
            continue;
        if (!b->p || p->predicted.iteration_us < b->p->predicted.iteration_us) {
            sa_plan_free(b->p);
            *b = (hy_best){p, h->last, c, k, false};
        } else {
            sa_plan_free(p);
        }
    }
    return SA_OK;
}

/* The search block of b's plan, which moves to *out: the winning knobs, or
 * "kept_all" for the plan that moves nothing (no combination made it). */
static sa_status hy_finish(hy_run *h, hy_best *b, sa_plan **out)
{
    char thr[32], extra[320];
    double x = h->c[b->x.all_maps].thr[b->x.level];
    int32_t chain = HY_CHAINS[b->x.chain];
    if (isinf(x))
        snprintf(thr, sizeof thr, "\"inf\"");
    else
        snprintf(thr, sizeof thr, "%.6g", x);
    int n = 0;
    if (b->kept_all)
        n = snprintf(extra, sizeof extra, "\"kept_all\":true,");
    else
        n = snprintf(extra, sizeof extra,
                     "\"candidates\":\"%s\",\"recompute_below_us_per_mb\":%s,\"max_chain\":%d,\"prefetch\":%d,"
                     "\"swapped_first\":%d,\"swap_out_wait_ops\":%d,",
                     b->x.all_maps ? "all" : "gap", thr, chain == INT32_MAX ? -1 : chain, HY_PREFETCH[b->x.prefetch],
                     b->k, HY_SYNC[b->x.sync]);
    snprintf(extra + n, sizeof extra - (size_t)n, "\"builds\":%d,\"work\":%lld,\"effort\":%lld", h->builds,
             (long long)h->r->work, (long long)h->r->effort);
    sa_status st = bl_finish(h->r, b->p, &b->ds, extra);
    if (st)
        return st;
    *out = b->p;
    b->p = NULL;
    return SA_OK;
}

static sa_status run_hybrid(rctx *r, const dec_opts *base, sa_plan **out)
{
    const sa_dfg_graph *g = r->g;
    hy_run h = {r, base, {{0}, {0}}, NULL, 0, 0, {0}};
    hy_best b = {0};
    r->work_max *= HY_EFFORT_SHARE;
    hy_combo *fit = NULL;
    int32_t *idx = NULL;
    double ids = (double)g->n_ops + (double)g->n_tensors;
    h.budget = HY_BUDGET_IDS / ids > HY_MIN_BUILDS ? (int32_t)(HY_BUDGET_IDS / ids) : HY_MIN_BUILDS;
    size_t n_combo = SA_ARRAY_LEN(HY_PREFETCH) * SA_ARRAY_LEN(HY_CHAINS) * 2 * (HY_LEVELS + 2) * SA_ARRAY_LEN(HY_SYNC);
    sa_status st;
    if ((st = hy_cands_init(r, true, &h.c[1])) || (st = hy_cands_init(r, false, &h.c[0])))
        goto out;
    h.depth = calloc((size_t)g->n_tensors + 1, sizeof *h.depth);
    fit = malloc(n_combo * sizeof *fit);
    idx = malloc(2 * n_combo * sizeof *idx);
    if (!h.depth || !fit || !idx) {
        st = bl_oom(r);
        goto out;
    }
    /* nothing moved, when its packed arena fits, is the fastest plan any
     * combination gives (each adds recomputes or transfers to the same
     * order): one build instead of thousands where the memory is ample */
    bl_all_keep(r);
    sa_plan *p0 = NULL;
    if ((st = bl_build(r, base, true, &p0, &h.last)))
        goto out;
    h.builds++;
    if (h.last.arena_bytes <= r->dev->memory_bytes) {
        b = (hy_best){p0, h.last, {0}, 0, true};
    } else {
        sa_plan_free(p0);
        int32_t n_fit;
        if ((st = hy_phase1(&h, fit, &n_fit)) || (st = hy_phase2(&h, fit, n_fit, idx, &b)))
            goto out;
    }
    if (!b.p)
        st = bl_too_big(r, "even with every feature map recomputed or swapped,", &h.last);
    else
        st = hy_finish(&h, &b, out);
out:
    sa_plan_free(b.p);
    hy_cands_free(&h.c[0]);
    hy_cands_free(&h.c[1]);
    free(h.depth);
    free(fit);
    free(idx);
    return st;
}

sa_status policy_run_hybrid(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_hybrid, out, err);
}
