/* ga.c - the parallel genetic search of schedules and memory-pool allocations. */
#include "swapadvisor/planner.h"
#include "swapadvisor/ga.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/pool.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/swp.h"

void ga_opts_default(ga_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->threads = 1;
    o->population = 24;
    o->generations = 30;
    o->mutation = 0.05;
    o->temperature = 1.0;
    o->mode = GA_BOTH;
}

const char *ga_mode_name(ga_mode m)
{
    return m == GA_SCHEDULE_ONLY ? "schedule" : m == GA_ALLOC_ONLY ? "alloc" : "both";
}

typedef struct indiv {
    int32_t *sch;
    pool_alloc a;
    double t;      /* simulated iteration time; HUGE_VAL when infeasible */
} indiv;

/* Per-thread scratch: allocated once, reused for every child. */
typedef struct tws {
    swp_ws *swp;
    sim_ws *sim;
    plan *p;
    int32_t *need, *ext1, *ext2, *ext, *sum, *num;
    int32_t *mark, *heap, *hpos, *indeg, *rank, *tmp;
} tws;

typedef struct gctx {
    const dfg_graph *g;
    const dfg_device *dev;
    const ga_opts *o;
    swp_opts so;
    int32_t n;       /* ops */
    int32_t ns;      /* distinct sizes */
    bool split;      /* no fixed-object pool fits: pools rely on splitting objects */
} gctx;

static void tws_free(tws *w)
{
    swp_ws_free(w->swp);
    sim_ws_free(w->sim);
    plan_free(w->p);
    free(w->need); free(w->ext1); free(w->ext2); free(w->ext); free(w->sum); free(w->num);
    free(w->mark); free(w->heap); free(w->hpos); free(w->indeg); free(w->rank); free(w->tmp);
}

static bool tws_init(tws *w, const gctx *c)
{
    memset(w, 0, sizeof *w);
    size_t n = (size_t)c->n + 1, s = (size_t)c->ns + 1;
    w->swp = swp_ws_new(c->g);
    w->sim = sim_ws_new();
    w->p = plan_new(c->g, c->dev);
    w->need = calloc(s, sizeof(int32_t)); w->ext1 = calloc(s, sizeof(int32_t));
    w->ext2 = calloc(s, sizeof(int32_t)); w->ext = calloc(s, sizeof(int32_t));
    w->sum = calloc(s, sizeof(int32_t)); w->num = calloc(s, sizeof(int32_t));
    w->mark = calloc(n, sizeof(int32_t)); w->heap = calloc(n, sizeof(int32_t));
    w->hpos = calloc(n, sizeof(int32_t)); w->indeg = calloc(n, sizeof(int32_t));
    w->rank = calloc(n, sizeof(int32_t));
    w->tmp = calloc(n, sizeof(int32_t));
    return w->swp && w->sim && w->p && w->need && w->ext1 && w->ext2 && w->ext && w->sum && w->num && w->mark &&
           w->heap && w->hpos && w->indeg && w->rank && w->tmp;
}

/* ---- schedules ---- */

/* Min-heap of ready ops keyed by rank (position in the schedule being followed). */
static void heap_swap(tws *w, int32_t i, int32_t j)
{
    int32_t a = w->heap[i], b = w->heap[j];
    w->heap[i] = b; w->heap[j] = a;
    w->hpos[b] = i; w->hpos[a] = j;
}

static void heap_fix(tws *w, int32_t i, int32_t len)
{
    while (i > 0 && w->rank[w->heap[(i - 1) / 2]] > w->rank[w->heap[i]]) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < len && w->rank[w->heap[l]] < w->rank[w->heap[m]]) m = l;
        if (r < len && w->rank[w->heap[r]] < w->rank[w->heap[m]]) m = r;
        if (m == i)
            break;
        heap_swap(w, i, m);
        i = m;
    }
}

/* The paper's mutation, which mimics a dataflow scheduler: walk the graph
 * keeping a ready set; with probability p take a random ready op, otherwise
 * the one that comes first in `base`.  p = 1 gives a random topological order. */
static void walk_schedule(const gctx *c, tws *w, rng *r, const int32_t *base, double p, int32_t *out)
{
    const dfg_graph *g = c->g;
    int32_t n = c->n, len = 0;
    for (int32_t i = 0; i < n; i++) {
        w->rank[base[i]] = i;
        w->indeg[i] = g->pred_off[i + 1] - g->pred_off[i];
    }
    for (int32_t v = 0; v < n; v++)
        if (w->indeg[v] == 0) {
            w->heap[len] = v;
            w->hpos[v] = len;
            heap_fix(w, len, len + 1);
            len++;
        }
    for (int32_t k = 0; k < n; k++) {
        int32_t at = (p > 0 && rng_unit(r) < p) ? rng_below(r, len) : 0;
        int32_t v = w->heap[at];
        heap_swap(w, at, len - 1);
        len--;
        if (at < len)
            heap_fix(w, at, len);
        out[k] = v;
        for (int32_t e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            int32_t s = g->succ[e];
            if (--w->indeg[s] == 0) {
                w->heap[len] = s;
                w->hpos[s] = len;
                len++;
                heap_fix(w, len - 1, len);
            }
        }
    }
}

/* Figure 4: the first cr ops of `head`, then the rest in `tail`'s order.
 * Both parents are topological orders, so the child is one too. */
static void cross_schedule(const gctx *c, tws *w, const int32_t *head, const int32_t *tail, int32_t cr,
                           int32_t *out)
{
    int32_t n = c->n, k = 0;
    for (int32_t i = 0; i < n; i++)
        w->mark[i] = 0;
    for (int32_t i = 0; i < cr; i++) {
        out[k++] = head[i];
        w->mark[head[i]] = 1;
    }
    for (int32_t i = 0; i < n; i++)
        if (!w->mark[tail[i]])
            out[k++] = tail[i];
}

/* ---- allocations ---- */

/* CNT_EXT: the object count each tensor size can use. */
static void extend_cnt(const pool_alloc *a, int32_t *ext)
{
    for (int32_t i = 0; i < a->n_sizes; i++)
        ext[i] = a->cnt[a->cls[i]];
}

/* Rebuilds cnt from a CNT_EXT by averaging within each class of a->cls. */
static void collapse_cnt(pool_alloc *a, tws *w, const int32_t *ext)
{
    for (int32_t c = 0; c < a->n_classes; c++)
        w->sum[c] = w->num[c] = 0;
    for (int32_t i = 0; i < a->n_sizes; i++) {
        w->sum[a->cls[i]] += ext[i];
        w->num[a->cls[i]]++;
    }
    for (int32_t c = 0; c < a->n_classes; c++)
        a->cnt[c] = w->num[c] ? (int32_t)lround((double)w->sum[c] / w->num[c]) : 0;
}

/* Figure 5: CLS and CNT_EXT crossed at cr, CLS repaired, CNT averaged. */
static void cross_alloc(tws *w, const pool_alloc *head, const pool_alloc *tail, int32_t cr, pool_alloc *out)
{
    extend_cnt(head, w->ext1);
    extend_cnt(tail, w->ext2);
    for (int32_t i = 0; i < out->n_sizes; i++) {
        out->cls[i] = i < cr ? head->cls[i] : tail->cls[i];
        w->ext[i] = i < cr ? w->ext1[i] : w->ext2[i];
    }
    pool_repair_cls(out);
    collapse_cnt(out, w, w->ext);
}

static void mutate_alloc(const gctx *c, tws *w, rng *r, pool_alloc *a)
{
    double p = c->o->mutation;
    extend_cnt(a, w->ext);
    for (int32_t i = 1; i < a->n_sizes; i++) {
        if (rng_unit(r) >= p)
            continue;
        /* +1 or -1 at i shifts every later class too, keeping CLS monotone */
        int32_t d = a->cls[i] == a->cls[i - 1] ? 1 : -1;
        for (int32_t j = i; j < a->n_sizes; j++)
            a->cls[j] += d;
    }
    pool_repair_cls(a);
    collapse_cnt(a, w, w->ext);
    for (int32_t k = 0; k < a->n_classes; k++)
        if (rng_unit(r) < p) {
            double sd = fmax(1.0, 0.2 * a->cnt[k]);
            long v = lround(a->cnt[k] + sd * rng_gauss(r));
            a->cnt[k] = v < 0 ? 0 : (int32_t)v;
        }
}

/* ---- evaluation ---- */

static double evaluate(const gctx *c, tws *w, indiv *x)
{
    sa_err err;
    if (pool_repair_any(&x->a, c->g, w->need, c->dev->memory_bytes, c->split, &err) != SA_OK)
        return HUGE_VAL;
    /* repair only shrinks; memory left unused is never better used idle */
    pool_top_up(&x->a, c->dev->memory_bytes);
    if (!pool_layout(&x->a, c->g))
        return HUGE_VAL;
    if (swp_plan(c->g, c->dev, x->sch, &x->a, &c->so, w->swp, w->p, &err) != SA_OK)
        return HUGE_VAL;
    sim_result r;
    if (sim_run(w->p, c->g, w->sim, &r, &err) != SA_OK)
        return HUGE_VAL;
    return r.makespan_us;
}

static bool indiv_init(indiv *x, const gctx *c)
{
    x->sch = calloc((size_t)c->n + 1, sizeof *x->sch);
    x->t = HUGE_VAL;
    return x->sch && pool_alloc_init(&x->a, c->ns);
}

static void indiv_free(indiv *x)
{
    free(x->sch);
    pool_alloc_free(&x->a);
}

/* A random individual: random topological order, random monotone CLS, CNT
 * filling memory in proportion to demand. */
static void random_indiv(const gctx *c, tws *w, rng *r, const indiv *seed0, indiv *x)
{
    const ga_mode m = c->o->mode;
    if (m == GA_ALLOC_ONLY)
        memcpy(x->sch, seed0->sch, (size_t)c->n * sizeof *x->sch);
    else
        walk_schedule(c, w, r, c->g->topo, 1.0, x->sch);
    if (m == GA_SCHEDULE_ONLY) {
        pool_alloc_copy(&x->a, &seed0->a);
        return;
    }
    x->a.cls[0] = 0;
    for (int32_t i = 1; i < c->ns; i++)
        x->a.cls[i] = x->a.cls[i - 1] + (rng_unit(r) < 0.5);
    pool_repair_cls(&x->a);
    int32_t *demand = calloc((size_t)c->ns + 1, sizeof *demand);
    if (demand) {
        pool_class_demand(&x->a, c->g, x->sch, w->need, demand);
        sa_err err;
        if (pool_fill_cnt(&x->a, c->g, w->need, demand, c->dev->memory_bytes, &err) != SA_OK)
            memcpy(x->a.cnt, w->need, (size_t)c->ns * sizeof *w->need);
    }
    free(demand);
}

typedef struct cand { double w; int32_t idx; } cand;

static int cmp_time(const void *a, const void *b, void *ctx)
{
    const indiv *pop = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (pop[i].t != pop[j].t)
        return pop[i].t < pop[j].t ? -1 : 1;
    return i - j;
}

sa_status ga_search(const dfg_graph *g, const dfg_device *dev, const ga_opts *o, ga_result *res, sa_err *err)
{
    memset(res, 0, sizeof *res);
    sa_status st = planner_check_graph(g, NULL, err);
    if (st)
        return st;
    int32_t np = o->population < 2 ? 2 : o->population + (o->population & 1);
    int32_t nkids = 2 * np, total = np + nkids;
    int threads = o->threads > 0 ? o->threads : 1;
    gctx c = {g, dev, o, {0}, g->n_ops, g->n_sizes, false};
    swp_opts_default(&c.so);
    double t0 = omp_get_wtime();

    indiv *pop = calloc((size_t)total, sizeof *pop);
    tws *ws = calloc((size_t)threads, sizeof *ws);
    int32_t *order = calloc((size_t)total, sizeof *order);
    int32_t (*pairs)[3] = calloc((size_t)np / 2 + 1, sizeof *pairs);
    cand *cands = calloc((size_t)total, sizeof *cands);
    int32_t *keep = calloc((size_t)total, sizeof *keep);
    indiv *next = calloc((size_t)total, sizeof *next);
    double *best_hist = calloc(1024, sizeof *best_hist), *time_hist = calloc(1024, sizeof *time_hist);
    int hist_cap = 1024;
    bool ok = pop && ws && order && pairs && cands && keep && next && best_hist && time_hist;
    for (int32_t i = 0; ok && i < total; i++)
        ok = indiv_init(&pop[i], &c);
    for (int i = 0; ok && i < threads; i++)
        ok = tws_init(&ws[i], &c);
    if (!ok) {
        st = sa_fail(err, SA_ENOMEM, "out of memory starting the search");
        goto done;
    }

    /* individual 0: the default order with one class per size (the topo policy) */
    memcpy(pop[0].sch, g->topo, (size_t)c.n * sizeof *g->topo);
    if ((st = pool_fine_grained(&pop[0].a, g, g->topo, dev->memory_bytes, err)))
        goto done;
    if (!pool_fixed_fits(g, dev->memory_bytes, &c.split)) {
        st = sa_fail(err, SA_ENOMEM, "out of memory starting the search");
        goto done;
    }
    c.split = !c.split;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int32_t i = 1; i < np; i++) {
        rng r;
        rng_seed(&r, o->seed, 0, (uint64_t)i);
        random_indiv(&c, &ws[omp_get_thread_num()], &r, &pop[0], &pop[i]);
    }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int32_t i = 0; i < np; i++)
        pop[i].t = evaluate(&c, &ws[omp_get_thread_num()], &pop[i]);
    res->evaluations = np;

    double tbest = HUGE_VAL;
    for (int32_t i = 0; i < np; i++)
        tbest = fmin(tbest, pop[i].t);
    res->first_us = tbest;
    int gen = 0;
    for (;;) {
        /* stats and stopping */
        double sum = 0, worst = 0;
        int32_t feas = 0;
        for (int32_t i = 0; i < np; i++)
            if (isfinite(pop[i].t)) {
                sum += pop[i].t;
                worst = fmax(worst, pop[i].t);
                feas++;
            }
        double elapsed = omp_get_wtime() - t0;
        if (gen >= hist_cap) {
            hist_cap *= 2;
            double *b = realloc(best_hist, (size_t)hist_cap * sizeof *b), *t = realloc(time_hist, (size_t)hist_cap * sizeof *t);
            if (b) best_hist = b;
            if (t) time_hist = t;
            if (!b || !t) {
                st = sa_fail(err, SA_ENOMEM, "out of memory in the search");
                goto done;
            }
        }
        best_hist[gen] = tbest;
        time_hist[gen] = elapsed;
        if (o->on_generation) {
            ga_gen_stats s = {gen, res->evaluations, elapsed, tbest, feas ? sum / feas : HUGE_VAL, worst,
                              dfg_total_time_us(g)};
            o->on_generation(&s, o->ctx);
        }
        if ((o->generations > 0 && gen >= o->generations) || (o->time_limit_s > 0 && elapsed >= o->time_limit_s) ||
            (o->generations <= 0 && o->time_limit_s <= 0))
            break;
        gen++;

        /* pair the parents (a shuffle drawn from the generation's stream) */
        rng gr;
        rng_seed(&gr, o->seed, (uint64_t)gen, UINT64_C(0xfeed));
        for (int32_t i = 0; i < np; i++)
            order[i] = i;
        for (int32_t i = np - 1; i > 0; i--) {
            int32_t j = rng_below(&gr, i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int32_t q = 0; q < np / 2; q++) {
            pairs[q][0] = order[2 * q];
            pairs[q][1] = order[2 * q + 1];
            pairs[q][2] = 1 + rng_below(&gr, c.n > 1 ? c.n - 1 : 1);  /* schedule crossover point */
        }
        /* children: pair q gives 4 (2 schedules x 2 allocations), each mutated
         * and evaluated with its own random stream */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int32_t j = 0; j < nkids; j++) {
            tws *w = &ws[omp_get_thread_num()];
            indiv *kid = &pop[np + j];
            const indiv *pa = &pop[pairs[j / 4][0]], *pb = &pop[pairs[j / 4][1]];
            int v = j % 4;
            rng r, pr;
            rng_seed(&r, o->seed, (uint64_t)gen, (uint64_t)(j + 1));
            rng_seed(&pr, o->seed, (uint64_t)gen, UINT64_C(0x10000) + (uint64_t)(j / 4));
            int32_t acr = 1 + rng_below(&pr, c.ns > 1 ? c.ns - 1 : 1);
            const indiv *sh = (v & 1) ? pb : pa, *st_ = (v & 1) ? pa : pb;
            const indiv *ah = (v & 2) ? pb : pa, *at = (v & 2) ? pa : pb;
            if (o->mode == GA_ALLOC_ONLY) {
                memcpy(kid->sch, pa->sch, (size_t)c.n * sizeof *kid->sch);
            } else {
                cross_schedule(&c, w, sh->sch, st_->sch, pairs[j / 4][2], w->tmp);
                walk_schedule(&c, w, &r, w->tmp, o->mutation, kid->sch);
            }
            if (o->mode == GA_SCHEDULE_ONLY) {
                pool_alloc_copy(&kid->a, &pa->a);
            } else {
                kid->a.n_classes = 0;
                cross_alloc(w, &ah->a, &at->a, acr, &kid->a);
                mutate_alloc(&c, w, &r, &kid->a);
            }
            kid->t = evaluate(&c, w, kid);
        }
        res->evaluations += nkids;

        /* survival: the best, then softmax draws without replacement */
        for (int32_t i = 0; i < total; i++) {
            order[i] = i;
            if (pop[i].t < tbest)
                tbest = pop[i].t;
        }
        qsort_r(order, (size_t)total, sizeof *order, cmp_time, pop);
        int32_t nc = 0;
        for (int32_t i = 1; i < total; i++) {
            double t = pop[order[i]].t;
            double tn = isfinite(t) ? (tbest - t) / tbest : -HUGE_VAL;
            cands[nc++] = (cand){exp(tn / (o->temperature > 0 ? o->temperature : 1.0)), order[i]};
        }
        int32_t nk = 0;
        keep[nk++] = order[0];
        while (nk < np) {
            double wsum = 0;
            for (int32_t i = 0; i < nc; i++)
                wsum += cands[i].w;
            int32_t pick = 0; /* only infeasible ones left: take the fastest */
            if (wsum > 0) {
                double u = rng_unit(&gr) * wsum;
                pick = nc - 1;
                for (int32_t i = 0; i < nc; i++) {
                    u -= cands[i].w;
                    if (u < 0) { pick = i; break; }
                }
            }
            keep[nk++] = cands[pick].idx;
            /* keep the remaining candidates in time order so ties resolve alike */
            memmove(&cands[pick], &cands[pick + 1], (size_t)(nc - pick - 1) * sizeof *cands);
            nc--;
        }
        /* survivors into the parent slots (a permutation of the structs) */
        for (int32_t i = 0; i < total; i++)
            order[i] = 0;
        for (int32_t i = 0; i < np; i++)
            order[keep[i]] = 1;
        for (int32_t i = 0, k = np; i < total; i++)
            if (!order[i])
                keep[k++] = i;
        for (int32_t i = 0; i < total; i++)
            next[i] = pop[keep[i]];
        memcpy(pop, next, (size_t)total * sizeof *pop);
    }
    res->generations = gen;

    /* the best individual becomes the plan */
    int32_t bi = 0;
    for (int32_t i = 1; i < np; i++)
        if (pop[i].t < pop[bi].t)
            bi = i;
    if (!isfinite(pop[bi].t)) {
        st = sa_fail(err, SA_EINFEASIBLE, "no schedule and allocation could be planned in %lld bytes",
                     (long long)dev->memory_bytes);
        goto done;
    }
    res->best = plan_new(g, dev);
    if (!res->best) {
        st = sa_fail(err, SA_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = swp_plan(g, dev, pop[bi].sch, &pop[bi].a, &c.so, ws[0].swp, res->best, err)) ||
        (st = planner_predict(res->best, g, ws[0].sim, NULL, err)))
        goto done;
    res->wall_s = omp_get_wtime() - t0;
    for (int k = 0; k <= gen; k++)
        if (best_hist[k] <= 1.01 * pop[bi].t) {
            res->time_to_1pct_s = time_hist[k];
            break;
        }
    char search[512];
    snprintf(search, sizeof search,
             "{\"algorithm\":\"swapadvisor\",\"mode\":\"%s\",\"seed\":%llu,\"population\":%d,\"generations\":%d,"
             "\"evaluations\":%lld,\"mutation\":%g,\"temperature\":%g,\"threads\":%d,\"wall_s\":%.3f,"
             "\"time_to_1pct_s\":%.3f,\"first_generation_us\":%.3f,\"size_classes\":%d,\"objects\":%d,"
             "\"pool_bytes\":%lld}",
             ga_mode_name(o->mode), (unsigned long long)o->seed, np, gen, (long long)res->evaluations, o->mutation,
             o->temperature, threads, res->wall_s, res->time_to_1pct_s, res->first_us, pop[bi].a.n_classes,
             pop[bi].a.n_objects, (long long)pop[bi].a.pool_bytes);
    if (!plan_set_search_json(res->best, search))
        st = sa_fail(err, SA_ENOMEM, "out of memory");
done:
    if (st) {
        plan_free(res->best);
        res->best = NULL;
    }
    for (int32_t i = 0; pop && i < total; i++)
        indiv_free(&pop[i]);
    for (int i = 0; ws && i < threads; i++)
        tws_free(&ws[i]);
    free(pop); free(ws); free(order); free(pairs); free(cands); free(keep); free(next); free(best_hist); free(time_hist);
    return st;
}
