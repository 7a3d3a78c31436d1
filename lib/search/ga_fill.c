/* ga_fill.c - the search's last step: memory the best best-fit plan leaves
 * idle is spent keeping tensors resident that it swaps or recomputes, and a
 * tensor that would rather be recomputed than swapped (or the other way) is
 * switched.  The decisions are tried one at a time, costliest first (a
 * recompute's producer time, a swap's round trip over the link), each set
 * back to DEC_KEEP, then to the other way of leaving, and a change is kept
 * when the plan still fits and runs strictly faster.  Batches of up to
 * GA_FILL_BATCH tries are evaluated in parallel, each against the same
 * decisions, the first that gains (in candidate order) is taken and the
 * next batch starts after it, so the answer is that of one try at a time
 * whatever the batches and the thread count.  A pool plan's counterpart
 * (gx_fill_pool_json) moves memory between its size classes the same way. */
#include <math.h>
#include <stdio.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/recompute.h"
#include "ga_internal.h"

typedef struct fill_cand {
    double cost;
    int32_t t;
    uint8_t from, to;  /* the decision when the list was made, the one tried (dec_action) */
} fill_cand;

static int cmp_cost(const void *a, const void *b)
{
    const fill_cand *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* What leaving t costs, roughly: its producer's time when recomputed, the
 * round trip over the link when swapped (or evicted: the cost rule's). */
static double leave_cost(const gctx *c, const indiv *x, int32_t t)
{
    const sa_dfg_tensor *d = &c->g->tensors[t];
    if (x->act[t] == DEC_RECOMPUTE && d->producer >= 0)
        return c->g->ops[d->producer].time_us > 0 ? c->g->ops[d->producer].time_us : 0;
    return recompute_round_trip_us(c->dev, d->bytes);
}

/* Both fills' scratch for one batch of tries: GA_FILL_BATCH individuals (the
 * caller sets up their genes), their statuses and errors. */
typedef struct fill_batch {
    indiv *trial;
    sa_status *st;
    sa_err *errs;
} fill_batch;

static bool batch_init(fill_batch *b)
{
    b->trial = calloc(GA_FILL_BATCH, sizeof *b->trial);
    b->st = calloc(GA_FILL_BATCH, sizeof *b->st);
    b->errs = calloc(GA_FILL_BATCH, sizeof *b->errs);
    return b->trial && b->st && b->errs;
}

static void batch_free(fill_batch *b)
{
    free(b->trial);
    free(b->st);
    free(b->errs);
}

/* Evaluates b's first m trials on the threads' workspaces and says which is
 * taken: the first faster than t (*take; -1: none), unless one failed first
 * (its status, err set: the first in trial order, whatever the threads). */
static sa_status batch_try(const gctx *c, tws *ws, int threads, fill_batch *b, int m, double t, double deadline_s,
                           int *take, sa_err *err)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int j = 0; j < m; j++) {
        bool cut = false;
        b->st[j] = gx_evaluate(c, &ws[omp_get_thread_num()], &b->trial[j], deadline_s, &cut, &b->errs[j]);
    }
    *take = -1;
    for (int j = 0; j < m; j++) {
        if (b->st[j]) {
            *err = b->errs[j];
            return b->st[j];
        }
        if (b->trial[j].t < t) {
            *take = j;
            return SA_OK;
        }
    }
    return SA_OK;
}

int32_t gx_fill_cap(const gctx *c)
{
    int32_t work = sa_ga_work_bounded(c->o->generations) ? GA_FILL_AUTO_WORK : GA_FILL_WORK;
    int32_t most = work / (c->g->n_ops > 0 ? c->g->n_ops : 1);
    return most > GA_FILL_TRIES ? GA_FILL_TRIES : most < GA_FILL_BATCH ? GA_FILL_BATCH : most;
}

int32_t gx_fill_most(const gctx *c)
{
    int32_t most = gx_fill_cap(c);
    return most < 2 * c->n_cand ? most : 2 * c->n_cand; /* two tries a candidate at most */
}

sa_status gx_fill_memory(const gctx *c, tws *ws, int threads, indiv *x, double deadline_s, int32_t *kept,
                         int32_t *switched, int32_t *tried, sa_err *err)
{
    const int32_t nt = c->g->n_tensors;
    *kept = *switched = *tried = 0;
    if (x->layout != PLANNER_BESTFIT || !isfinite(x->t))
        return SA_OK;
    fill_cand *fc = malloc((2 * (size_t)c->n_cand + 1) * sizeof *fc);
    uint8_t *acts = malloc((size_t)GA_FILL_BATCH * ((size_t)nt + 1));
    fill_batch b;
    bool ok = batch_init(&b);
    indiv *trial = b.trial;
    sa_status rc = SA_OK;
    if (!fc || !acts || !ok) {
        rc = sa_fail(err, SA_ENOMEM, "out of memory filling idle memory");
        goto out;
    }
    int32_t n = 0;
    /* an evicted tensor (the cost rule's choice) is tried kept only */
    for (int32_t k = 0; k < c->n_cand; k++) {
        int32_t t = c->cand[k];
        uint8_t a = x->act[t];
        if (a == DEC_KEEP)
            continue;
        double cost = leave_cost(c, x, t);
        fc[n++] = (fill_cand){cost, t, a, DEC_KEEP};
        if (a == DEC_SWAP || a == DEC_RECOMPUTE)
            fc[n++] = (fill_cand){cost, t, a, a == DEC_SWAP ? DEC_RECOMPUTE : DEC_SWAP};
    }
    qsort(fc, (size_t)n, sizeof *fc, cmp_cost);
    int32_t most = gx_fill_most(c);
    if (n > most)
        n = most;
    for (int j = 0; j < GA_FILL_BATCH; j++) {
        trial[j] = *x; /* best fit reads the schedule, the decisions and the timing gene only */
        trial[j].act = acts + (size_t)j * ((size_t)nt + 1);
    }
    /* the batch grows while its tries fail and shrinks after a gain: the
     * tries after a gaining one are wasted, and on nasnet-25 half of the
     * tries gain */
    int batch = GA_FILL_BATCH_MIN;
    for (int32_t k = 0; k < n;) {
        if (deadline_s > 0 && sa_now_s() >= deadline_s)
            break;
        /* a tensor whose decision a taken try changed is not tried again (its
         * switch would take a tensor just kept off the device again) */
        if (x->act[fc[k].t] != fc[k].from) {
            k++;
            continue;
        }
        int m = 1;
        while (m < batch && k + m < n && x->act[fc[k + m].t] == fc[k + m].from)
            m++;
        for (int j = 0; j < m; j++) {
            memcpy(trial[j].act, x->act, (size_t)nt + 1);
            trial[j].act[fc[k + j].t] = fc[k + j].to;
        }
        int take;
        if ((rc = batch_try(c, ws, threads, &b, m, x->t, deadline_s, &take, err)))
            goto out;
        *tried += take < 0 ? m : take + 1;
        batch = take < 0 ? (2 * batch > GA_FILL_BATCH ? GA_FILL_BATCH : 2 * batch)
                         : (batch / 2 < GA_FILL_BATCH_MIN ? GA_FILL_BATCH_MIN : batch / 2);
        if (take < 0) {
            k += m;
            continue;
        }
        x->act[fc[k + take].t] = fc[k + take].to;
        x->t = trial[take].t;
        ++*(fc[k + take].to == DEC_KEEP ? kept : switched);
        k += take + 1; /* the tries after it in the batch ran against the old decisions */
    }
out:
    free(fc);
    free(acts);
    batch_free(&b);
    return rc;
}

sa_status gx_fill_end(const gctx *c, tws *ws, int threads, indiv *pop, int32_t np, double budget, double deadline_s,
                      gx_end_fill *r, sa_err *err)
{
    *r = (gx_end_fill){.best = -1};
    int64_t start = gx_effort(ws, threads);
    /* under a deadline the fills after the first stop half-way to it: the
     * pool fill after them has the rest */
    double now = sa_now_s(), half = deadline_s > now ? now + (deadline_s - now) / 2 : deadline_s, last = -HUGE_VAL;
    for (int k = 0; k < SA_GA_END_FILLS; k++) {
        int64_t e0 = gx_effort(ws, threads);
        if (k > 0 && ((double)(e0 - start) >= SA_GA_END_FILL_SHARE * budget || (half > 0 && sa_now_s() >= half)))
            break;
        int32_t x = -1; /* the fastest best-fit individual slower than the last one filled */
        for (int32_t i = 0; i < np; i++)
            if (pop[i].layout == PLANNER_BESTFIT && isfinite(pop[i].t) && pop[i].t > last &&
                (x < 0 || pop[i].t < pop[x].t))
                x = i;
        if (x < 0)
            break;
        last = r->each_from[k] = pop[x].t;
        int32_t kept, switched, tried;
        sa_status st =
            gx_fill_memory(c, ws, threads, &pop[x], k > 0 ? half : deadline_s, &kept, &switched, &tried, err);
        r->tried += tried;
        if (st)
            return st;
        if (r->best < 0 || pop[x].t < pop[r->best].t) {
            r->best = x;
            r->rank = k;
            r->kept = kept;
            r->switched = switched;
        }
        r->each_to[k] = pop[x].t;
        r->each_effort[k] = gx_effort(ws, threads) - e0;
        r->filled++;
    }
    return SA_OK;
}

/* A move of the pool fill: dj objects of class j given up for di of class i;
 * k, the pair's index in the pass. */
typedef struct pool_mv {
    int32_t i, j, di, dj, k;
} pool_mv;

/* The bytes of step of the larger of classes i and j moved from class j's
 * objects to class i's: *dj objects of j given up, *di of i gained; false
 * when j has too few or i has no room. */
static bool pool_move(const pool_alloc *a, int32_t i, int32_t j, int32_t step, int32_t *di, int32_t *dj)
{
    int64_t bi = a->obj_bytes[i], bj = a->obj_bytes[j];
    if (bi <= 0 || bj <= 0)
        return false;
    int64_t bytes = (int64_t)step * (bi > bj ? bi : bj);
    int64_t rj = (bytes + bj - 1) / bj;
    if (rj > a->cnt[j])
        return false;
    int64_t ri = rj * bj / bi, room = (int64_t)a->cls_cap[i] - a->cnt[i];
    if (ri > room)
        ri = room;
    if (ri <= 0)
        return false;
    *di = (int32_t)ri;
    *dj = (int32_t)rj;
    return true;
}

/* gx_fill_pool_json's pass (ga_internal.h); *moved, *tried its counts. */
static sa_status fill_pool(const gctx *c, tws *ws, int threads, indiv *x, double deadline_s, int32_t *moved,
                           int32_t *tried, sa_err *err)
{
    /* trial[j].a is laid out like x->a (the same n_sizes), so the copies below
     * never allocate and cannot fail; the evaluation lays each out */
    *moved = *tried = 0;
    if (x->a.n_classes < 2)
        return SA_OK;
    pool_layout_sizes(&x->a, c->g); /* the moves read its object sizes and caps */
    int32_t nc = x->a.n_classes, most = 2 * gx_fill_cap(c);
    fill_batch b;
    bool ok = batch_init(&b);
    indiv *trial = b.trial;
    pool_mv *mi = malloc(GA_FILL_BATCH * sizeof *mi);
    sa_status rc = SA_OK;
    if (!ok || !mi) {
        rc = sa_fail(err, SA_ENOMEM, "out of memory filling a pool");
        goto out;
    }
    for (int j = 0; j < GA_FILL_BATCH; j++)
        if (!pool_alloc_init(&trial[j].a, x->a.n_sizes)) {
            rc = sa_fail(err, SA_ENOMEM, "out of memory filling a pool");
            goto out;
        }
    int32_t pairs = nc * (nc - 1);
    for (int32_t step = 16; step >= 1 && *tried < most;) {
        bool gained = false;
        for (int32_t k = 0; k < pairs && *tried < most;) {
            if (deadline_s > 0 && sa_now_s() >= deadline_s)
                goto out;
            int m = 0;
            for (; k < pairs && m < GA_FILL_BATCH; k++) {
                pool_mv *v = &mi[m];
                v->i = k / (nc - 1);
                v->j = k % (nc - 1);
                v->j += v->j >= v->i;
                v->k = k;
                m += pool_move(&x->a, v->i, v->j, step, &v->di, &v->dj);
            }
            for (int j = 0; j < m; j++) {
                pool_alloc keep = trial[j].a;
                trial[j] = *x;
                trial[j].a = keep;
                pool_alloc_copy(&trial[j].a, &x->a);
                trial[j].a.cnt[mi[j].i] += mi[j].di;
                trial[j].a.cnt[mi[j].j] -= mi[j].dj;
            }
            int take;
            if ((rc = batch_try(c, ws, threads, &b, m, x->t, deadline_s, &take, err)))
                goto out;
            *tried += take < 0 ? m : take + 1;
            if (take < 0)
                continue;
            /* the pairs after it in the batch are tried again against the new counts */
            k = mi[take].k + 1;
            if (!pool_alloc_copy(&x->a, &trial[take].a) || !pool_layout(&x->a, c->g)) {
                rc = sa_fail(err, SA_ENOMEM, "out of memory filling a pool");
                goto out;
            }
            x->t = trial[take].t;
            ++*moved;
            gained = true;
        }
        if (!gained)
            step /= 2;
    }
out:
    if (trial)
        for (int j = 0; j < GA_FILL_BATCH; j++)
            pool_alloc_free(&trial[j].a);
    batch_free(&b);
    free(mi);
    return rc;
}

sa_status gx_fill_pool_json(const gctx *c, tws *ws, int threads, indiv *x, double deadline_s, char *json, size_t cap,
                            sa_err *err)
{
    json[0] = '\0';
    if (x->layout != PLANNER_POOL || !isfinite(x->t))
        return SA_OK;
    int64_t effort = -gx_effort(ws, threads);
    double from = x->t, t0 = omp_get_wtime();
    int32_t moved, tried;
    sa_status st = fill_pool(c, ws, threads, x, deadline_s, &moved, &tried, err);
    if (st)
        return st;
    effort += gx_effort(ws, threads);
    snprintf(json, cap,
             ",\"pool_fill\":{\"moved\":%d,\"tried\":%d,\"from_us\":%.3f,\"to_us\":%.3f,\"effort\":%lld,\"wall_s\":%.3f}",
             moved, tried, from, x->t, (long long)effort, omp_get_wtime() - t0);
    return SA_OK;
}
