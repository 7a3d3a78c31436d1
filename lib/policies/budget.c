/* budget.c - PyTorch's activation memory budget (torch._functorch.config.
 * activation_memory_budget, the min-cut partitioner of torch.compile) as a
 * policy: the forward activations that backward reads are the knapsack's
 * items, each worth its producer's time (what recomputing it costs) and
 * weighing its bytes; under a budget of saved bytes the items saved are the
 * most valuable set that fits (the partitioner's "dp" solver: a 0/1 knapsack
 * by dynamic programming over the budget in KNAP_UNITS units), the rest are
 * recomputed in the backward pass (in chains where their inputs are
 * recomputed too), nothing is swapped.  Where PyTorch takes the budget as a
 * fraction of the saved bytes, a device has bytes: the policy lowers the
 * fraction in 1 % steps until the packed plan fits the memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/decide.h"
#include "baselines_internal.h"
#include "policies_internal.h"

enum { KNAP_UNITS = 1000, BUDGET_STEPS = 100 };
/* the most cells of the knapsack's table (items x budget units): past it the
 * items' units are rounded to the nearest, not up, so a graph of 10^5 items
 * costs 10^8 steps once instead of 10^10 a budget step */
#define KNAP_CELLS 1.0e8

typedef struct knap {
    int32_t n;          /* items: r->cand[0 .. n) */
    int32_t cap;        /* the items' units in all: a budget of 100 % */
    double *val;        /* each item's recompute time */
    int32_t *units;     /* each item's bytes in budget units (at least 1) */
    double *best;       /* best[c]: the most value within c units (cap + 1) */
    uint8_t *take;      /* take[i * (cap + 1) + c]: item i in best of the first i + 1 within c */
    int32_t n_rest;     /* r->cand[n .. n + n_rest): forward maps backward does not read */
} knap;

/* The classic 0/1 knapsack over every budget up to k->cap at once, items in
 * producer order, ties kept by the earlier choice so the answer does not
 * depend on anything but the graph; an item that fits is saved even when it
 * is worth nothing (a zero-time producer). The table's cells for a budget c
 * depend only on budgets below c, so one solve serves every step. */
static void knap_solve_all(const knap *k)
{
    const size_t w = (size_t)k->cap + 1;
    for (int32_t c = 0; c <= k->cap; c++)
        k->best[c] = 0;
    for (int32_t i = 0; i < k->n; i++) {
        uint8_t *tk = &k->take[(size_t)i * w];
        memset(tk, 0, w);
        for (int32_t c = k->cap; c >= k->units[i]; c--) {
            double v = k->best[c - k->units[i]] + k->val[i];
            if (v >= k->best[c]) {
                k->best[c] = v;
                tk[c] = 1;
            }
        }
    }
}

/* Saves the most valuable items that fit cap units (the rest are recomputed),
 * read back from knap_solve_all's table. */
static void knap_choose(rctx *r, const knap *k, int32_t cap)
{
    const size_t w = (size_t)k->cap + 1;
    for (int32_t i = k->n - 1, c = cap; i >= 0; i--) {
        int32_t t = r->cand[i];
        if (k->take[(size_t)i * w + c]) {
            r->act[t] = DEC_KEEP;
            c -= k->units[i];
        } else {
            r->act[t] = DEC_RECOMPUTE;
        }
    }
}

/* step s of BUDGET_STEPS: a budget of (BUDGET_STEPS - s) % of the items'
 * bytes.  The maps backward does not read are rebuilt only as links of a
 * chain, so only once some item is recomputed: with every item saved the
 * plan recomputes nothing, as the partitioner at a budget of 1. */
static void budget_set(rctx *r, int32_t s, const knap *k)
{
    bl_all_keep(r);
    knap_choose(r, k, (int32_t)((int64_t)k->cap * (BUDGET_STEPS - s) / BUDGET_STEPS));
    bool any = false;
    for (int32_t i = 0; i < k->n && !any; i++)
        any = r->act[r->cand[i]] == DEC_RECOMPUTE;
    for (int32_t i = k->n; any && i < k->n + k->n_rest; i++)
        r->act[r->cand[i]] = DEC_RECOMPUTE;
}

static sa_status run_budget(rctx *r, const dec_opts *o, sa_plan **out)
{
    const sa_dfg_graph *g = r->g;
    /* items first (recomputable maps backward reads), then the other recomputable maps */
    bl_forward_activations(r, false);
    int32_t n = 0, m = 0;
    int32_t *rest = calloc((size_t)r->n_cand + 1, sizeof *rest);
    knap k = {0};
    sa_status st = SA_OK;
    sa_plan *p = NULL;
    if (!rest) {
        st = bl_oom(r);
        goto out;
    }
    for (int32_t i = 0; i < r->n_cand; i++) {
        int32_t t = r->cand[i];
        if (!dec_recomputable(g, t))
            continue;
        if (bl_has_gap(r, t))
            r->cand[n++] = t;
        else
            rest[m++] = t;
    }
    memcpy(r->cand + n, rest, (size_t)m * sizeof *rest);
    r->n_cand = n + m;
    k.n = n;
    k.n_rest = m;
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++)
        total += g->tensors[r->cand[i]].bytes;
    k.val = calloc((size_t)n + 1, sizeof(double));
    k.units = calloc((size_t)n + 1, sizeof(int32_t));
    if (!k.val || !k.units) {
        st = bl_oom(r);
        goto out;
    }
    /* each item's units rounded up (at least 1), unless the table would pass
     * KNAP_CELLS: then to the nearest (a tiny item weighs nothing) */
    bool nearest = (double)n * (KNAP_UNITS + n + 1) > KNAP_CELLS;
    for (int32_t i = 0; i < n; i++) {
        const sa_dfg_tensor *t = &g->tensors[r->cand[i]];
        const sa_dfg_op *prod = &g->ops[t->producer];
        /* an op that writes several items is worth its time once in all: shared */
        k.val[i] = (prod->time_us > 0 ? prod->time_us : 0) / (prod->n_out > 0 ? prod->n_out : 1);
        double x = (double)t->bytes * KNAP_UNITS / (double)(total > 0 ? total : 1);
        int32_t u = (int32_t)(nearest ? floor(x + 0.5) : ceil(x));
        k.units[i] = nearest ? u : (u < 1 ? 1 : u);
        k.cap += k.units[i];
    }
    k.best = calloc((size_t)k.cap + 1, sizeof(double));
    k.take = calloc(((size_t)n + 1) * ((size_t)k.cap + 1), 1);
    if (!k.best || !k.take) {
        st = bl_oom(r);
        goto out;
    }
    knap_solve_all(&k);
    /* The largest budget whose packed plan fits. Memory need not fall with the
     * budget (recomputing a chain holds its inputs at once), so every step is
     * tried from the top down, packed only where its peak load fits. */
    dec_stats ds;
    int32_t s = 0;
    for (; s <= BUDGET_STEPS; s++) {
        budget_set(r, s, &k);
        if ((st = bl_build(r, o, false, &p, &ds)))
            goto out;
        sa_plan_free(p);
        p = NULL;
        if (ds.peak_load > r->dev->memory_bytes)
            continue;
        if ((st = bl_build(r, o, true, &p, &ds)))
            goto out;
        if (ds.arena_bytes <= r->dev->memory_bytes)
            break;
        sa_plan_free(p);
        p = NULL;
    }
    if (!p) {
        char what[160];
        snprintf(what, sizeof what, "no budget of saved feature maps fits, from 100 %% down to 0 %% (%d recomputable),", n);
        st = bl_too_big(r, what, &ds);
        goto out;
    }
    char extra[128];
    snprintf(extra, sizeof extra, "\"budget_fraction\":%.2f,\"solver\":\"dp\",\"items\":%d",
             (double)(BUDGET_STEPS - s) / BUDGET_STEPS, n);
    if ((st = bl_finish(r, p, &ds, extra))) {
        sa_plan_free(p);
        p = NULL;
        goto out;
    }
    *out = p;
out:
    free(rest);
    free(k.val);
    free(k.units);
    free(k.best);
    free(k.take);
    return st;
}

sa_status policy_run_memory_budget(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_budget, out, err);
}
