/* adaptive.c - the profile-guided baselines autoswap and capuchin, and what
 * they share with pooch (pooch.c; adaptive_internal.h).
 *
 * Like the rule-based ones in baselines.c they turn their paper's rule into
 * per-tensor keep / swap / recompute decisions for decide.h (bestfit/nodes.c), which emits the
 * nodes (swap-outs right after the last forward use, swap-ins prefetched by
 * time: decide.h) and packs the arena with SmartPool's best fit.  Where the
 * papers profile a real iteration, we read the graph's op times and the
 * device's link rates: a "timeline" of the default order without stalls
 * (every op starts when the previous ends) and the memory load it implies
 * when everything is kept.  Parameters and optimizer state stay resident. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptive_internal.h"
#include "baselines_internal.h"
#include "policies_internal.h"
#include "swapadvisor/bayesopt.h"
#include "swapadvisor/sim.h"

/* ------------------------------------------------------------ the timeline */

typedef struct tl {
    int32_t n;
    double *t0, *t1;    /* start and end of each position, no stalls */
    double *load;       /* bytes resident at each position when everything is kept */
    double *pre;        /* pre[p] = sum over q < p of load[q] * (t1[q] - t0[q]) */
    int32_t *over;      /* over[p] = positions q < p in the peak region */
    double peak;
} tl;

typedef ad_cinfo cinfo;

typedef struct actx {
    rctx *r;
    const dec_opts *o;
    tl T;
    cinfo *c;
    int32_t nc;
    int32_t *order;     /* candidate indices, in the policy's priority order */
    uint8_t *how;       /* per entry of order: DEC_SWAP or DEC_RECOMPUTE */
} actx;

static void tl_free(tl *T)
{
    free(T->t0);
    free(T->t1);
    free(T->load);
    free(T->pre);
    free(T->over);
    memset(T, 0, sizeof *T);
}

static void actx_free(actx *a)
{
    tl_free(&a->T);
    free(a->c);
    free(a->order);
    free(a->how);
}

static void tl_prefix(tl *T)
{
    T->pre[0] = 0;
    for (int32_t p = 0; p < T->n; p++)
        T->pre[p + 1] = T->pre[p] + T->load[p] * (T->t1[p] - T->t0[p]);
}

/* Builds the timeline and marks the peak region: the positions whose load
 * exceeds the memory (or, when everything fits, the peak positions). */
static sa_status tl_init(rctx *r, tl *T)
{
    const sa_dfg_graph *g = r->g;
    int32_t n = g->n_ops;
    T->n = n;
    T->t0 = calloc((size_t)n + 1, sizeof *T->t0);
    T->t1 = calloc((size_t)n + 1, sizeof *T->t1);
    T->load = calloc((size_t)n + 2, sizeof *T->load);
    T->pre = calloc((size_t)n + 2, sizeof *T->pre);
    T->over = calloc((size_t)n + 2, sizeof *T->over);
    if (!T->t0 || !T->t1 || !T->load || !T->pre || !T->over)
        return bl_oom(r);
    double t = 0;
    for (int32_t p = 0; p < n; p++) {
        T->t0[p] = t;
        t += g->ops[g->topo[p]].time_us;
        T->t1[p] = t;
    }
    double base = 0;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        const sa_dfg_tensor *x = &g->tensors[i];
        if (sa_dfg_kind_persistent(x->kind)) {
            base += (double)x->bytes;
            continue;
        }
        int32_t lo = x->producer >= 0 ? r->pos[x->producer] : n, hi = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t q = r->pos[g->readers[x->reader_off + k]];
            lo = q < lo ? q : lo;
            hi = q > hi ? q : hi;
        }
        if (lo >= n)
            continue;
        hi = hi < lo ? lo : hi;
        T->load[lo] += (double)x->bytes; /* a difference array first */
        T->load[hi + 1] -= (double)x->bytes;
    }
    double run = base;
    T->peak = 0;
    for (int32_t p = 0; p < n; p++) {
        run += T->load[p];
        T->load[p] = run;
        T->peak = run > T->peak ? run : T->peak;
    }
    double mem = (double)r->dev->memory_bytes, thr = mem < T->peak ? mem : T->peak * (1 - 1e-9);
    T->over[0] = 0;
    for (int32_t p = 0; p < n; p++)
        T->over[p + 1] = T->over[p] + (T->load[p] > thr);
    tl_prefix(T);
    return SA_OK;
}

/* First position >= lo whose start is at or after time s (n when none). */
static int32_t first_start_after(const tl *T, int32_t lo, double s)
{
    int32_t a = lo, b = T->n;
    while (a < b) {
        int32_t m = a + (b - a) / 2;
        if (T->t0[m] >= s)
            b = m;
        else
            a = m + 1;
    }
    return a;
}

/* Last position <= hi whose end is at or before time e (-1 when none). */
static int32_t last_end_before(const tl *T, int32_t hi, double e)
{
    int32_t a = 0, b = hi + 1; /* first position ending after e, in [0, hi + 1] */
    while (a < b) {
        int32_t m = a + (b - a) / 2;
        if (T->t1[m] > e)
            b = m;
        else
            a = m + 1;
    }
    return a - 1;
}

/* The candidates: forward activations with a gap that spans part of the peak
 * region and at least min_bytes large.  Once those are out the peak moves
 * (the shift AutoSwap's SWDOA addresses, sec. IV-B): the load is recomputed
 * with every candidate gone over its gap, and those crossing the new region
 * above the memory join, until no more do. */
static sa_status collect(actx *a, double min_bytes)
{
    rctx *r = a->r;
    const sa_dfg_graph *g = r->g;
    tl *T = &a->T;
    int32_t n = T->n;
    bl_forward_activations(r, true);
    a->c = calloc((size_t)r->n_cand + 1, sizeof *a->c);
    a->order = calloc((size_t)r->n_cand + 1, sizeof *a->order);
    a->how = calloc((size_t)r->n_cand + 1, 1);
    double *load = malloc(((size_t)n + 2) * sizeof *load);
    int32_t *over = malloc(((size_t)n + 2) * sizeof *over);
    uint8_t *in = calloc((size_t)r->n_cand + 1, 1);
    int64_t *gone = calloc((size_t)n + 2, sizeof *gone);
    if (!a->c || !a->order || !a->how || !load || !over || !in || !gone) {
        free(load);
        free(over);
        free(in);
        free(gone);
        return bl_oom(r);
    }
    memcpy(over, T->over, ((size_t)n + 1) * sizeof *over);
    memcpy(load, T->load, (size_t)n * sizeof *load);
    double mem = (double)r->dev->memory_bytes;
    a->nc = 0;
    for (int round = 0; round < 8; round++) {
        int32_t added = 0;
        for (int32_t i = 0; i < r->n_cand; i++) {
            int32_t t = r->cand[i], lf, nx;
            if (in[i])
                continue;
            dec_gap(g, r->pos, t, &lf, &nx);
            double b = (double)g->tensors[t].bytes;
            if (nx < 0 || b < min_bytes || over[nx] - over[lf + 1] <= 0)
                continue;
            in[i] = 1;
            added++;
            a->order[a->nc] = a->nc;
            a->how[a->nc] = DEC_SWAP;
            cinfo *c = &a->c[a->nc++];
            c->t = t;
            c->lf = lf;
            c->nx = nx;
            c->bytes = b;
            c->xo = sa_sim_transfer_alone_us(r->dev, g->tensors[t].bytes, SA_PLAN_STREAM_D2H);
            c->xi = sa_sim_transfer_alone_us(r->dev, g->tensors[t].bytes, SA_PLAN_STREAM_H2D);
            c->doa = T->t0[nx] - T->t1[lf] - c->xo - c->xi;
            c->a = first_start_after(T, lf + 1, T->t1[lf] + c->xo);
            c->b = last_end_before(T, nx - 1, T->t0[nx] - c->xi);
            gone[lf + 1] += g->tensors[t].bytes; /* off the load over lf + 1 .. nx - 1 */
            gone[nx] -= g->tensors[t].bytes;
        }
        if (!added)
            break;
        /* a round reads over[] as it was when the round began, so the load
         * falls once per round, by a difference array: per candidate its
         * gap's length made a long chain quadratic.  The bytes are integers,
         * so the sums are exact in either order */
        int64_t off = 0;
        over[0] = 0;
        for (int32_t q = 0; q < n; q++) {
            off += gone[q];
            gone[q] = 0;
            load[q] -= (double)off;
            over[q + 1] = over[q] + (load[q] > mem);
        }
    }
    free(load);
    free(over);
    free(in);
    free(gone);
    return SA_OK;
}

/* set_fn: the first k entries of the order carried out, the rest kept. */
static void set_prefix(rctx *r, int32_t k, const void *arg)
{
    const actx *a = arg;
    bl_all_keep(r);
    for (int32_t i = 0; i < k && i < a->nc; i++)
        r->act[a->c[a->order[i]].t] = a->how[i];
}

/* The swap timing settings tried, in order, until one fits: asynchronous
 * swap-outs and swap-ins prefetched by time (the papers' schedules); then
 * synchronous swap-outs (the next op waits: memory freed sooner); then
 * swap-ins held back to a few ops before the use (AutoSwap sec. IV-E: under
 * a tight limit "a swap-in can start only after freeing some variables";
 * Capuchin's feedback adjustment of in-triggers; PooCH's swap-in "when
 * there is room").  Each later setting trades stalls for memory. */
typedef struct timing_t {
    int32_t out_sync, prefetch;
} timing_t;
static const timing_t TIMINGS[] = {{0, 0}, {1, 0}, {1, 8}, {1, 4}, {1, 2}, {1, 1}};
_Static_assert(SA_ARRAY_LEN(TIMINGS) == AD_N_TIMINGS, "AD_N_TIMINGS is the number of timing settings");

void ad_timing_opts(const dec_opts *base, int i, dec_opts *o)
{
    *o = *base;
    o->out_sync = TIMINGS[i].out_sync;
    o->prefetch = TIMINGS[i].prefetch;
    o->marks = NULL;
}

const char *ad_timing_json(int i)
{
    static const char *const s[] = {
        "\"sync_swap_out\":false,\"prefetch\":\"auto\"", "\"sync_swap_out\":true,\"prefetch\":\"auto\"",
        "\"sync_swap_out\":true,\"prefetch\":8",         "\"sync_swap_out\":true,\"prefetch\":4",
        "\"sync_swap_out\":true,\"prefetch\":2",         "\"sync_swap_out\":true,\"prefetch\":1"};
    return s[i];
}

/* The smallest prefix of the order that fits, with the first timing setting
 * under which any does.  *p NULL when even the whole order does not fit
 * (*ds then describes it under the last setting). */
static sa_status fit_prefix(actx *a, sa_plan **p, dec_stats *ds, int32_t *k, int *timing)
{
    dec_opts o;
    *p = NULL;
    for (*timing = 0; *timing < AD_N_TIMINGS; (*timing)++) {
        ad_timing_opts(a->o, *timing, &o);
        sa_status st = bl_fit_smallest(a->r, set_prefix, a, 0, a->nc, &o, p, ds, k);
        if (st || *p)
            return st;
    }
    *timing = AD_N_TIMINGS - 1;
    return SA_OK;
}

/* Time to rebuild candidate tensor t by recomputation: its producer, plus,
 * recursively, its inputs that are themselves dropped for recomputation
 * (Capuchin's lineage, Chen's chains); depth-limited against long chains. */
double ad_recompute_us(const rctx *r, int32_t t, int depth)
{
    const sa_dfg_graph *g = r->g;
    int32_t op = g->tensors[t].producer;
    if (op < 0)
        return 0;
    double us = g->ops[op].time_us;
    if (depth < 16)
        for (int32_t k = 0; k < g->ops[op].n_in; k++)
            if (r->act[g->ops[op].in[k]] == DEC_RECOMPUTE)
                us += ad_recompute_us(r, g->ops[op].in[k], depth + 1);
    return us;
}

sa_status ad_accept(rctx *r, sa_plan *p, const dec_stats *ds, const char *extra, sa_plan **out)
{
    sa_status st = bl_finish(r, p, ds, extra);
    if (st) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

/* When keeping every tensor fits, that plan (finished, "kept_all" in its
 * search block) goes to *out; otherwise *out stays NULL.  The policies that
 * swap only to get under the limit start here. */
sa_status ad_keep_all_if_fits(rctx *r, const dec_opts *o, sa_plan **out)
{
    sa_plan *p = NULL;
    dec_stats ds = {0};
    *out = NULL;
    bl_all_keep(r);
    sa_status st = bl_build(r, o, true, &p, &ds);
    if (st)
        return st;
    if (ds.arena_bytes <= r->dev->memory_bytes)
        return ad_accept(r, p, &ds, "\"kept_all\":true", out);
    sa_plan_free(p);
    return SA_OK;
}

/* ------------------------------------------------------------ autoswap */

enum { AS_SCORES = 4, AS_BUDGET = 20, AS_MEMO = 64 };

typedef struct as_ctx {
    actx *a;
    double *z;          /* nc * AS_SCORES standardised scores: AOA, DOA, WDOA, SWDOA */
    double *key;        /* combined score per candidate */
    uint64_t memo_h[AS_MEMO];
    double memo_y[AS_MEMO];
    int32_t n_memo, n_eval, n_built;
    sa_plan *best;
    dec_stats best_ds;
    int32_t best_k;
    int best_sync;
    double best_w[AS_SCORES];
} as_ctx;

/* qsort_r: candidates by key (ctx, a double per candidate) descending. */
static int cmp_key(const void *x, const void *y, void *ctx)
{
    const double *key = ctx;
    int32_t i = *(const int32_t *)x, j = *(const int32_t *)y;
    if (key[i] != key[j])
        return key[i] > key[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* The four priority scores of AutoSwap sec. IV-B, standardised (sec. IV-C:
 * "the 4 priority scores are standardized before feeding into the formula"). */
static sa_status as_scores(as_ctx *s)
{
    actx *a = s->a;
    int32_t nc = a->nc, n = a->T.n;
    double *raw = calloc((size_t)nc * AS_SCORES + 1, sizeof *raw);
    double *w0 = malloc(((size_t)nc + 1) * sizeof *w0), *dur = malloc(((size_t)n + 1) * sizeof *dur);
    if (!raw || !w0 || !dur) {
        free(raw);
        free(w0);
        free(dur);
        return bl_oom(a->r);
    }
    for (int32_t i = 0; i < nc; i++) {
        const cinfo *c = &a->c[i];
        double *v = raw + (size_t)i * AS_SCORES;
        /* AOA: DOA * size; for a negative DOA (transfers longer than the gap)
         * DOA / size, so that the larger is still the better */
        v[0] = c->doa >= 0 ? c->doa * c->bytes : c->doa / c->bytes;
        v[1] = c->doa; /* DOA: the gap minus swap-out and swap-in time */
        v[2] = a->T.pre[c->nx] - a->T.pre[c->lf + 1]; /* WDOA: load area between the accesses */
        w0[i] = v[2];
    }
    /* SWDOA: pick the largest WDOA, take its absence off the load curve,
     * recompute the others' WDOA on the updated curve, repeat; the score is
     * the pick order (earlier = higher) */
    for (int32_t p = 0; p < n; p++)
        dur[p] = a->T.t1[p] - a->T.t0[p];
    sa_status st = ad_swdoa(a->r, n, dur, w0, nc, a->c, raw + 3, AS_SCORES);
    free(w0);
    free(dur);
    if (st) {
        free(raw);
        return st;
    }
    for (int k = 0; k < AS_SCORES; k++) {
        double m = 0, v = 0;
        for (int32_t i = 0; i < nc; i++)
            m += raw[(size_t)i * AS_SCORES + k];
        m /= nc;
        for (int32_t i = 0; i < nc; i++) {
            double d = raw[(size_t)i * AS_SCORES + k] - m;
            v += d * d;
        }
        double sd = nc > 1 ? sqrt(v / (nc - 1)) : 0;
        for (int32_t i = 0; i < nc; i++)
            s->z[(size_t)i * AS_SCORES + k] = sd > 0 ? (raw[(size_t)i * AS_SCORES + k] - m) / sd : 0;
    }
    free(raw);
    return SA_OK;
}

static void as_order(as_ctx *s, const double *w)
{
    actx *a = s->a;
    for (int32_t i = 0; i < a->nc; i++) {
        const double *z = s->z + (size_t)i * AS_SCORES;
        s->key[i] = w[0] * z[0] + w[1] * z[1] + w[2] * z[2] + w[3] * z[3]; /* eq. (3) */
        a->order[i] = i;
        a->how[i] = DEC_SWAP;
    }
    qsort_r(a->order, (size_t)a->nc, sizeof *a->order, cmp_key, s->key);
}

/* The BO objective: the simulated iteration time of the plan that swaps the
 * smallest prefix of the weights' priority order that fits (sec. IV-D);
 * infeasible = a large penalty.  Orders already tried are not rebuilt, and
 * none is once a plan exists and the effort budget is spent (bl_spent). */
static sa_status as_objective(const double *w, void *ctx, double *y, sa_err *err)
{
    (void)err;
    as_ctx *s = ctx;
    actx *a = s->a;
    as_order(s, w);
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < a->nc; i++)
        h = (h ^ (uint64_t)a->order[i]) * 1099511628211ULL;
    s->n_eval++;
    if (s->best && bl_spent(a->r)) { /* the effort budget is spent: the points left are not built */
        *y = 1e3 * (sa_dfg_total_time_us(a->r->g) + 1);
        return SA_OK;
    }
    for (int32_t i = 0; i < s->n_memo; i++)
        if (s->memo_h[i] == h) {
            *y = s->memo_y[i];
            return SA_OK;
        }
    sa_plan *p;
    dec_stats ds;
    int32_t k;
    int sync;
    sa_status st = fit_prefix(a, &p, &ds, &k, &sync);
    if (st)
        return st;
    s->n_built++;
    *y = p ? p->predicted.iteration_us : 1e3 * (sa_dfg_total_time_us(a->r->g) + 1);
    if (p && (!s->best || *y < s->best->predicted.iteration_us)) {
        sa_plan_free(s->best);
        s->best = p;
        s->best_ds = ds;
        s->best_k = k;
        s->best_sync = sync;
        memcpy(s->best_w, w, sizeof s->best_w);
    } else {
        sa_plan_free(p);
    }
    if (s->n_memo < AS_MEMO) {
        s->memo_h[s->n_memo] = h;
        s->memo_y[s->n_memo++] = *y;
    }
    return SA_OK;
}

/* AutoSwap (Zhang et al., "Efficient Memory Management for GPU-based Deep
 * Learning Systems", arXiv:1903.06631, sec. IV):
 *   A. candidates: variables of at least 1 MB whose lifetime crosses the
 *      peak time.  We take the forward activations (the variables read again
 *      after a gap) whose gap spans a position of the peak region (the load
 *      above the memory, or the peak itself when everything fits); the size
 *      threshold is 1 MiB, lowered to 1/1024 of the largest activation for
 *      graphs of small tensors (the test ladders).
 *   B. priority scores DOA, AOA, WDOA, SWDOA (see as_scores).
 *   C. BO = a*AOA + b*DOA + c*WDOA + d*SWDOA, weights in [-1, 1] tuned by a
 *      Gaussian-process Bayesian optimiser (bayesopt.h; fixed seed, AS_BUDGET
 *      evaluations).  The paper optimises the communication overhead; we
 *      minimise the simulated iteration time, which differs from it by the
 *      constant compute time.  Its first points are the four scores alone,
 *      so the result is never worse than the best single score.
 *   D. candidates inserted in priority order until the peak fits the memory
 *      load limit (here: until SmartPool's packed arena fits the memory).
 *   E. scheduling: swap-out right after the access, in access order, one at
 *      a time on the d2h stream; swap-in early enough that the next access
 *      is not delayed (decide.h's automatic prefetch).
 * Refuses when swapping every candidate does not fit. */
sa_status bl_run_autoswap(rctx *r, const dec_opts *o, sa_plan **out)
{
    actx a = {r, o, {0}, NULL, 0, NULL, NULL};
    as_ctx s;
    memset(&s, 0, sizeof s);
    s.a = &a;
    /* AutoSwap swaps only while the peak load is over the limit */
    sa_status kst = ad_keep_all_if_fits(r, o, out);
    if (kst || *out)
        return kst;
    sa_status st = tl_init(r, &a.T);
    double biggest = 0;
    if (!st) {
        bl_forward_activations(r, true);
        for (int32_t i = 0; i < r->n_cand; i++)
            if ((double)r->g->tensors[r->cand[i]].bytes > biggest)
                biggest = (double)r->g->tensors[r->cand[i]].bytes;
        double thr = 1024.0 * 1024.0;
        st = collect(&a, thr < biggest / 1024 ? thr : biggest / 1024);
    }
    sa_plan *p = NULL;
    dec_stats ds = {0};
    int32_t k = 0;
    int sync = 0;
    if (!st) /* feasibility does not depend on the order: check it once */
        st = fit_prefix(&a, &p, &ds, &k, &sync);
    if (!st && !p) {
        char what[192];
        snprintf(what, sizeof what, "even swapping all %d candidates (activations of at least %.0f bytes alive "
                 "across the peak, swap-ins held back to one op ahead),", a.nc, biggest / 1024 < 1048576 ? biggest / 1024 : 1048576.0);
        st = bl_too_big(r, what, &ds);
    }
    sa_plan_free(p);
    if (!st && a.nc > 0) {
        s.z = calloc((size_t)a.nc * AS_SCORES, sizeof *s.z);
        s.key = calloc((size_t)a.nc, sizeof *s.key);
        if (!s.z || !s.key)
            st = bl_oom(r);
        if (!st)
            st = as_scores(&s);
        bo_opts bo;
        bo_opts_default(&bo, AS_SCORES);
        static const double unit[AS_SCORES * AS_SCORES] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
        bo.given = unit;
        bo.n_given = AS_SCORES;
        bo.budget = AS_BUDGET;
        bo.seed = 20200316;
        double bx[AS_SCORES], by;
        if (!st)
            st = bo_minimize(&bo, as_objective, &s, bx, &by, NULL, NULL, NULL, r->err);
    } else if (!st) { /* nothing to swap: everything kept fits */
        st = fit_prefix(&a, &s.best, &s.best_ds, &s.best_k, &s.best_sync);
    }
    if (!st && !s.best)
        st = sa_fail(r->err, SA_EINTERNAL, "autoswap: no plan after the feasibility check");
    if (!st) {
        char extra[320];
        snprintf(extra, sizeof extra,
                 "\"candidates\":%d,\"selected\":%d,\"weights\":{\"aoa\":%.4f,\"doa\":%.4f,\"wdoa\":%.4f,"
                 "\"swdoa\":%.4f},\"bo_evaluations\":%d,\"plans_built\":%d,%s",
                 a.nc, s.best_k, s.best_w[0], s.best_w[1], s.best_w[2], s.best_w[3], s.n_eval, s.n_built,
                 ad_timing_json(s.best_sync));
        st = ad_accept(r, s.best, &s.best_ds, extra, out);
        s.best = NULL;
    }
    sa_plan_free(s.best);
    free(s.z);
    free(s.key);
    actx_free(&a);
    return st;
}

/* ------------------------------------------------------------ capuchin */

/* qsort_r: candidate indices by doa (ctx: the cinfo array) descending, then index. */
static int cmp_doa(const void *x, const void *y, void *ctx)
{
    const cinfo *c = ctx;
    int32_t i = *(const int32_t *)x, j = *(const int32_t *)y;
    if (c[i].doa != c[j].doa)
        return c[i].doa > c[j].doa ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Capuchin's MSPS of c under r->act: bytes per microsecond of overhead, the
 * cheaper of swapping (the transfers the gap does not hide) and recomputing;
 * *how (when not NULL) gets the action. */
static double cap_msps(const rctx *r, const cinfo *c, uint8_t *how)
{
    double cost = -c->doa;
    uint8_t h = DEC_SWAP;
    if (dec_recomputable(r->g, c->t)) {
        double rc = ad_recompute_us(r, c->t, 0);
        if (rc < cost) {
            cost = rc;
            h = DEC_RECOMPUTE;
        }
    }
    if (how)
        *how = h;
    return c->bytes / (cost > 1e-3 ? cost : 1e-3);
}

/* Capuchin (Peng et al., ASPLOS'20, sec. 4.3-4.5):
 *   candidates: tensors accessed more than once whose lifetime covers the
 *     peak memory period (forward activations with a gap spanning the peak
 *     region);
 *   FreeTime = SwapInStartTime - SwapOutEndTime, with SwapOutEnd = evicted
 *     access + swap time and SwapInStart = back access - swap time (4.3);
 *   selection (4.5): rank by FreeTime; move the tensors whose swap has no
 *     overhead (FreeTime >= 0) from the top into the eviction set; then,
 *     while memory is short, recompute every remaining candidate's MSPS =
 *     memory saving / regeneration time (the recomputation time grows when
 *     a tensor its producer reads is itself recomputed: the lineage), take
 *     the largest, and evict it by swapping when its overhead (-FreeTime)
 *     is below the recomputation time, else by recomputation;
 *   "while memory is short": the smallest prefix of that sequence whose
 *     packed arena fits;
 *   in-trigger (4.4): the swap-in is issued at the latest op whose start is
 *     at or before back access - swap time (decide.h's automatic prefetch);
 *     recomputation on demand, right before the back access;
 *   decoupled swap-out (5): the memory is reused once the transfer is
 *     estimated done, without stalling compute; the other timing settings
 *     (fit_prefix) only when that cannot fit.
 * Not modelled: the feedback-driven adjustment of in-triggers at run time
 * and the rule that in-triggers avoid the peak (our timeline is static).
 * Refuses when evicting every candidate does not fit. */
sa_status bl_run_capuchin(rctx *r, const dec_opts *o, sa_plan **out)
{
    actx a = {r, o, {0}, NULL, 0, NULL, NULL};
    sa_status st = tl_init(r, &a.T);
    if (!st)
        st = collect(&a, 0);
    int32_t m = 0, n_free = 0;
    if (!st) {
        /* step 3: by FreeTime, the overhead-free swaps first (ties: the
         * earlier candidate) */
        for (int32_t i = 0; i < a.nc; i++)
            if (a.c[i].doa >= 0)
                a.order[m++] = i;
        qsort_r(a.order, (size_t)m, sizeof *a.order, cmp_doa, a.c);
        n_free = m;
        bl_all_keep(r);
        for (int32_t i = 0; i < m; i++) {
            a.how[i] = DEC_SWAP;
            r->act[a.c[a.order[i]].t] = DEC_SWAP;
        }
        /* step 4: by MSPS over the rest, updated as the eviction set grows.
         * A pick can only lengthen a recompute (ad_recompute_us), so every
         * MSPS only falls: the lazy heap gives the greedy's order.  The rest
         * are the candidates step 3 left: those without doa >= 0 */
        ad_went *h = malloc(((size_t)(a.nc - m) + 1) * sizeof *h);
        if (!h)
            st = bl_oom(r);
        int32_t nh = 0;
        for (int32_t j = 0; !st && j < a.nc; j++)
            if (!(a.c[j].doa >= 0))
                ad_heap_push(h, &nh, (ad_went){cap_msps(r, &a.c[j], NULL), j});
        while (!st && nh > 0) {
            uint8_t how;
            if (!ad_heap_lower_top(h, nh, cap_msps(r, &a.c[h[0].i], &how)))
                continue;
            ad_went x = ad_heap_pop(h, &nh);
            a.order[m] = x.i;
            a.how[m++] = how;
            r->act[a.c[x.i].t] = how;
        }
        free(h);
    }
    sa_plan *p = NULL;
    dec_stats ds = {0};
    int32_t k = 0;
    int sync = 0;
    if (!st)
        st = fit_prefix(&a, &p, &ds, &k, &sync);
    if (!st && !p) {
        int32_t nr = 0;
        for (int32_t i = 0; i < a.nc; i++)
            nr += a.how[i] == DEC_RECOMPUTE;
        char what[192];
        snprintf(what, sizeof what, "even evicting all %d candidates alive across the peak (%d swapped, %d "
                 "recomputed),", a.nc, a.nc - nr, nr);
        st = bl_too_big(r, what, &ds);
    }
    if (!st) {
        char extra[224];
        snprintf(extra, sizeof extra, "\"candidates\":%d,\"evicted\":%d,\"overhead_free_swaps\":%d,"
                 "%s", a.nc, k, n_free < k ? n_free : k, ad_timing_json(sync));
        st = ad_accept(r, p, &ds, extra, out);
    }
    actx_free(&a);
    return st;
}

sa_status policy_run_autoswap(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, bl_run_autoswap, out, err);
}

sa_status policy_run_capuchin(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, bl_run_capuchin, out, err);
}
