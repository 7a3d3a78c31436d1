/* serve.c - the serving planner: plans each model at every share of the
 * memory, simulates Poisson arrivals batched per model on one GPU, and
 * searches the memory split (serve.h).  Its own layer, above the policies it
 * runs; the figure is serve_svg.c's. */
#include "swapadvisor/serve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/plan.h"
#include "swapadvisor/rng.h"

#define SERVE_MAX_SPLITS 200000

void serve_opts_default(serve_opts *o)
{
    memset(o, 0, sizeof *o);
    o->steps = 16;
    o->policy = "swapadvisor";
    sa_policy_opts_default(&o->plan);
    o->plan.search.generations = 5;
    o->plan.search.threads = 1;
    o->requests = 4000;
    o->seed = 1;
}

void serve_table_free(serve_table *t)
{
    if (!t)
        return;
    free(t->voff);
    free(t->batch);
    free(t->weight);
    free(t->pass_us);
    free(t->res_bytes);
    free(t->h2d_bytes_per_s);
    free(t->latency_us);
    free(t);
}

/* Plans g in mem bytes: *us the batch time (INFINITY when infeasible) and
 * *res the persistent bytes resident at the plan's start. */
static sa_status plan_share(const sa_dfg_graph *g, int64_t mem, const serve_opts *o, double *us, int64_t *res,
                            sa_err *err)
{
    sa_dfg_device d = g->device;
    d.memory_bytes = mem;
    sa_plan *p = NULL;
    sa_status st = sa_policy_run_opts(o->policy, g, &d, &o->plan, &p, err);
    *us = INFINITY;
    *res = 0;
    if (st == SA_EINFEASIBLE)
        return SA_OK;
    if (st)
        return st;
    *us = p->predicted.iteration_us;
    for (int32_t i = 0; i < p->n_res; i++)
        *res += g->tensors[p->res[i].tensor].bytes;
    sa_plan_free(p);
    return SA_OK;
}

static sa_status check_inputs(const serve_model *m, int32_t k, const serve_opts *o, sa_err *err)
{
    if (k < 1)
        return sa_fail(err, SA_EUSAGE, "serve: no models");
    if (o->steps < 1 || o->steps > 4096)
        return sa_fail(err, SA_EUSAGE, "serve: steps must be in 1..4096, got %d", o->steps);
    if (o->steps < k)
        return sa_fail(err, SA_EUSAGE, "serve: %d steps cannot give each of %d models a share", o->steps, k);
    if (o->memory_bytes < o->steps)
        return sa_fail(err, SA_EUSAGE, "serve: memory of %lld bytes is too small", (long long)o->memory_bytes);
    if (o->requests < 1 || !o->policy || !sa_policy_find(o->policy))
        return sa_fail(err, SA_EUSAGE, "serve: %s", o->requests < 1 ? "requests must be >= 1" : "unknown policy");
    for (int32_t i = 0; i < k; i++) {
        if (m[i].n < 1 || !m[i].g)
            return sa_fail(err, SA_EUSAGE, "serve: model %d has no graph", i);
        for (int32_t v = 0; v < m[i].n; v++) {
            const sa_dfg_graph *g = m[i].g[v];
            if (!g || !g->finalized || !g->has_device)
                return sa_fail(err, SA_EUSAGE, "serve: model %d (%s) is not a profiled graph with a device block", i,
                               g && g->name ? g->name : "?");
            if (g->batch < 1)
                return sa_fail(err, SA_EUSAGE, "serve: model %d (%s) has no batch", i, g->name);
            if (v > 0 && g->batch <= m[i].g[v - 1]->batch)
                return sa_fail(err, SA_EUSAGE, "serve: model %d's graphs must come in ascending batch (%lld after "
                               "%lld)", i, (long long)g->batch, (long long)m[i].g[v - 1]->batch);
        }
    }
    return SA_OK;
}

/* Plans one variant at every share into its rows (or copies the rows of an
 * earlier variant with the same graph). */
static sa_status plan_variant(serve_table *t, const sa_dfg_graph *const *seen, int32_t v, const serve_opts *o,
                              sa_err *err)
{
    size_t w = (size_t)t->steps + 1;
    double *row = t->pass_us + (size_t)v * w;
    int64_t *res = t->res_bytes + (size_t)v * w;
    for (int32_t u = 0; u < v; u++)
        if (seen[u] == seen[v]) {
            memcpy(row, t->pass_us + (size_t)u * w, w * sizeof *row);
            memcpy(res, t->res_bytes + (size_t)u * w, w * sizeof *res);
            return SA_OK;
        }
    row[0] = INFINITY;
    for (int32_t s = 1; s <= t->steps; s++) {
        int64_t mem = (int64_t)((double)o->memory_bytes * s / o->steps);
        sa_status st = plan_share(seen[v], mem, o, &row[s], &res[s], err);
        t->n_plans++;
        if (st)
            return st;
        if (row[s] > row[s - 1]) { /* the smaller share's plan fits here too */
            row[s] = row[s - 1];
            res[s] = res[s - 1];
        }
    }
    return SA_OK;
}

sa_status serve_table_build(const serve_model *m, int32_t k, const serve_opts *o, serve_table **out, sa_err *err)
{
    *out = NULL;
    sa_status st = check_inputs(m, k, o, err);
    if (st)
        return st;
    int32_t nv = 0;
    for (int32_t i = 0; i < k; i++)
        nv += m[i].n;
    size_t w = (size_t)o->steps + 1;
    serve_table *t = calloc(1, sizeof *t);
    const sa_dfg_graph **seen = calloc((size_t)nv, sizeof *seen);
    if (!t || !seen || !(t->voff = calloc((size_t)k + 1, sizeof *t->voff)) ||
        !(t->batch = calloc((size_t)nv, sizeof *t->batch)) || !(t->weight = calloc((size_t)k, sizeof *t->weight)) ||
        !(t->pass_us = calloc((size_t)nv * w, sizeof *t->pass_us)) ||
        !(t->res_bytes = calloc((size_t)nv * w, sizeof *t->res_bytes)) ||
        !(t->h2d_bytes_per_s = calloc((size_t)nv, sizeof *t->h2d_bytes_per_s)) ||
        !(t->latency_us = calloc((size_t)nv, sizeof *t->latency_us))) {
        free(seen);
        serve_table_free(t);
        return sa_fail(err, SA_ENOMEM, "serve: out of memory");
    }
    t->k = k;
    t->nv = nv;
    t->steps = o->steps;
    t->memory_bytes = o->memory_bytes;
    /* weights are relative: when their sum overflows (1e308 each) they are
     * first divided by the largest, so that none becomes 0 */
    double wsum = 0, wmax = 0, scale = 1;
    for (int32_t i = 0; i < k; i++) {
        wsum += m[i].weight > 0 ? m[i].weight : 1.0;
        wmax = fmax(wmax, m[i].weight > 0 ? m[i].weight : 1.0);
    }
    if (!isfinite(wsum)) {
        scale = 1 / wmax;
        wsum = 0;
        for (int32_t i = 0; i < k; i++)
            wsum += (m[i].weight > 0 ? m[i].weight : 1.0) * scale;
    }
    for (int32_t i = 0, v = 0; i < k; i++) {
        t->weight[i] = (m[i].weight > 0 ? m[i].weight : 1.0) * scale / wsum;
        t->voff[i] = v;
        for (int32_t j = 0; j < m[i].n; j++, v++) {
            seen[v] = m[i].g[j];
            t->batch[v] = seen[v]->batch;
            t->h2d_bytes_per_s[v] = seen[v]->device.h2d_bytes_per_s;
            t->latency_us[v] = seen[v]->device.transfer_latency_us;
        }
        t->voff[i + 1] = v;
    }
    for (int32_t v = 0; v < nv && !st; v++)
        st = plan_variant(t, (const sa_dfg_graph *const *)seen, v, o, err);
    for (int32_t i = 0; i < k && !st; i++) {
        bool any = false;
        for (int32_t v = t->voff[i]; v < t->voff[i + 1]; v++)
            any |= isfinite(t->pass_us[(size_t)v * w + (size_t)t->steps]);
        if (!any)
            st = sa_fail(err, SA_EINFEASIBLE, "serve: model %d (%s) fits in no share of %lld bytes, not even "
                         "alone", i, m[i].g[0]->name, (long long)o->memory_bytes);
    }
    free(seen);
    if (st) {
        serve_table_free(t);
        return st;
    }
    *out = t;
    return SA_OK;
}

/* ------------------------------------------------------------ simulation */

typedef struct sim_ctx {
    const serve_table *t;
    int64_t n;
    double *arr;      /* [n] arrival times (us), ascending */
    int64_t *off;     /* [k + 1] model i's requests are idx[off[i] .. off[i + 1]) */
    int64_t *idx;     /* [n] request ids grouped by model, in arrival order */
    int64_t *head;    /* [k] next unserved position in idx */
    int32_t *lastv;   /* [k] the variant of the model's previous batch, -1 none */
    double *lat;      /* [n] latency (us) */
    int32_t *share;   /* [k] units of memory of each model in this run */
    int64_t *maxb;    /* [k] the largest batch among the model's variants */
} sim_ctx;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double load_us(const serve_table *t, int32_t v, int64_t bytes)
{
    return bytes > 0 ? (double)bytes / t->h2d_bytes_per_s[v] * 1e6 + t->latency_us[v] : 0;
}

/* The variant that runs q waiting requests of model i in s units: the
 * smallest with a plan whose batch holds them, else the largest with a plan. */
static int32_t pick_variant(const serve_table *t, int32_t i, int32_t s, int64_t q)
{
    size_t w = (size_t)t->steps + 1;
    int32_t best = -1;
    for (int32_t v = t->voff[i]; v < t->voff[i + 1]; v++) {
        if (!isfinite(t->pass_us[(size_t)v * w + (size_t)s]))
            continue;
        best = v;
        if (t->batch[v] >= q)
            break;
    }
    return best;
}

/* Latency statistics of c->lat (sorted here); end is the last completion. */
static void finish_stats(sim_ctx *c, double end, serve_stats *s)
{
    double sum = 0;
    for (int64_t q = 0; q < c->n; q++)
        sum += c->lat[q];
    qsort(c->lat, (size_t)c->n, sizeof *c->lat, cmp_double);
    s->mean_ms = sum / (double)c->n / 1e3;
    s->p50_ms = c->lat[(c->n - 1) / 2] / 1e3;
    s->p99_ms = c->lat[(int64_t)ceil(0.99 * (double)c->n) - 1] / 1e3;
    double span = end - c->arr[0];
    s->throughput_rps = span > 0 ? (double)c->n / span * 1e6 : 0;
}

/* One run with the shares in c->share; time_shared: a batch of another model
 * than the previous batch's first reloads its resident persistent tensors.
 * Every model in the shares has a plan (the caller checks). */
static void simulate(sim_ctx *c, bool time_shared, serve_stats *s)
{
    const serve_table *t = c->t;
    size_t w = (size_t)t->steps + 1;
    int32_t k = t->k, last = -1;
    for (int32_t i = 0; i < k; i++) {
        c->head[i] = c->off[i];
        c->lastv[i] = -1;
    }
    double now = 0, end = 0, reload = 0;
    int64_t served = 0;
    memset(s, 0, sizeof *s);
    while (served < c->n) {
        int32_t pick = -1;
        double first = INFINITY, next = INFINITY;
        for (int32_t i = 0; i < k; i++) {
            if (c->head[i] >= c->off[i + 1])
                continue;
            double a = c->arr[c->idx[c->head[i]]];
            if (a <= now && a < first) {
                first = a;
                pick = i;
            }
            if (a < next)
                next = a;
        }
        if (pick < 0) {
            now = next; /* idle until the next arrival */
            continue;
        }
        int32_t sh = c->share[pick];
        int64_t h = c->head[pick], e = h;
        /* count the waiting requests only up to one past the largest batch:
         * pick_variant answers the same for any count past it, and a scan of
         * every waiting request would make a saturated run quadratic */
        while (e < c->off[pick + 1] && e - h <= c->maxb[pick] && c->arr[c->idx[e]] <= now)
            e++;
        int32_t v = pick_variant(t, pick, sh, e - h);
        if (e - h > t->batch[v])
            e = h + t->batch[v];
        double d = t->pass_us[(size_t)v * w + (size_t)sh], r = 0;
        int64_t res = t->res_bytes[(size_t)v * w + (size_t)sh];
        int32_t lv = c->lastv[pick];
        if (time_shared && last != pick)
            r = load_us(t, v, res); /* another model ran in the whole memory: reload */
        else if (lv >= 0 && lv != v)
            r = load_us(t, v, res - t->res_bytes[(size_t)lv * w + (size_t)sh]);
        if (last >= 0 && last != pick)
            s->switches++;
        now += d + r;
        reload += r;
        for (int64_t q = h; q < e; q++)
            c->lat[c->idx[q]] = now - c->arr[c->idx[q]];
        c->head[pick] = e;
        c->lastv[pick] = v;
        served += e - h;
        s->batches++;
        last = pick;
        end = now;
    }
    s->reload_ms = reload / 1e3;
    finish_stats(c, end, s);
}

static bool better(const serve_stats *a, const serve_stats *b)
{
    if (a->p99_ms != b->p99_ms)
        return a->p99_ms < b->p99_ms;
    return a->mean_ms < b->mean_ms;
}

/* Enumerates the splits of steps units into k positive parts where every
 * model has a plan, keeping the best in best[]. */
typedef struct split_search {
    sim_ctx *c;
    int32_t *cur, *best;
    serve_stats best_s;
    bool found;
    int64_t tried;
} split_search;

static void split_rec(split_search *ss, int32_t i, int32_t left)
{
    const serve_table *t = ss->c->t;
    int32_t k = t->k;
    if (i == k - 1) {
        if (pick_variant(t, i, left, 1) < 0)
            return;
        ss->cur[i] = left;
        memcpy(ss->c->share, ss->cur, (size_t)k * sizeof *ss->cur);
        serve_stats s;
        simulate(ss->c, false, &s);
        ss->tried++;
        if (!ss->found || better(&s, &ss->best_s)) {
            ss->found = true;
            ss->best_s = s;
            memcpy(ss->best, ss->cur, (size_t)k * sizeof *ss->cur);
        }
        return;
    }
    for (int32_t u = 1; u <= left - (k - 1 - i); u++) {
        if (pick_variant(t, i, u, 1) < 0)
            continue;
        ss->cur[i] = u;
        split_rec(ss, i + 1, left - u);
    }
}

/* C(n, r), saturating at cap. */
static double choose(int32_t n, int32_t r)
{
    double c = 1;
    for (int32_t i = 1; i <= r; i++)
        c = c * (double)(n - r + i) / (double)i;
    return c;
}

sa_status serve_eval(const serve_table *t, double rate_rps, const serve_opts *o, serve_point *pt, sa_err *err)
{
    if (!(rate_rps > 0) || !isfinite(rate_rps))
        return sa_fail(err, SA_EUSAGE, "serve: the arrival rate must be positive");
    if (o->requests < 1)
        return sa_fail(err, SA_EUSAGE, "serve: requests must be >= 1");
    if (choose(t->steps - 1, t->k - 1) > SERVE_MAX_SPLITS)
        return sa_fail(err, SA_EUSAGE, "serve: %d models in %d steps make more than %d splits; use fewer steps", t->k,
                       t->steps, SERVE_MAX_SPLITS);
    int32_t k = t->k;
    int64_t n = o->requests;
    sim_ctx c = {.t = t, .n = n};
    int32_t *model = malloc((size_t)n * sizeof *model), *cur = malloc((size_t)k * sizeof *cur);
    c.arr = malloc((size_t)n * sizeof *c.arr);
    c.off = calloc((size_t)k + 1, sizeof *c.off);
    c.idx = malloc((size_t)n * sizeof *c.idx);
    c.head = malloc((size_t)k * sizeof *c.head);
    c.lat = malloc((size_t)n * sizeof *c.lat);
    c.share = malloc((size_t)k * sizeof *c.share);
    c.lastv = malloc((size_t)k * sizeof *c.lastv);
    c.maxb = calloc((size_t)k, sizeof *c.maxb);
    sa_status st = SA_OK;
    if (!model || !cur || !c.arr || !c.off || !c.idx || !c.head || !c.lat || !c.share || !c.lastv || !c.maxb) {
        st = sa_fail(err, SA_ENOMEM, "serve: out of memory");
        goto done;
    }
    for (int32_t i = 0; i < k; i++)
        for (int32_t v = t->voff[i]; v < t->voff[i + 1]; v++)
            c.maxb[i] = c.maxb[i] > t->batch[v] ? c.maxb[i] : t->batch[v];
    /* arrivals: exponential gaps, model by weight; one stream per rate */
    rng r;
    rng_seed(&r, o->seed, (uint64_t)llround(rate_rps * 1000), 0x5e7e);
    double now = 0;
    for (int64_t q = 0; q < n; q++) {
        now += -log(1.0 - rng_unit(&r)) / rate_rps * 1e6;
        c.arr[q] = now;
        double u = rng_unit(&r), acc = 0;
        int32_t m = k - 1;
        for (int32_t i = 0; i < k; i++)
            if (u < (acc += t->weight[i])) {
                m = i;
                break;
            }
        model[q] = m;
        c.off[m + 1]++;
    }
    for (int32_t i = 0; i < k; i++)
        c.off[i + 1] += c.off[i];
    for (int32_t i = 0; i < k; i++)
        c.head[i] = c.off[i];
    for (int64_t q = 0; q < n; q++)
        c.idx[c.head[model[q]]++] = q;

    pt->rate_rps = rate_rps;
    for (int32_t i = 0; i < k; i++)
        c.share[i] = t->steps;
    simulate(&c, true, &pt->shared);

    split_search ss = {.c = &c, .cur = cur, .best = pt->split};
    split_rec(&ss, 0, t->steps);
    pt->splits_tried = ss.tried;
    if (!ss.found) {
        memset(pt->split, 0, (size_t)k * sizeof *pt->split);
        memset(&pt->part, 0, sizeof pt->part);
        st = sa_fail(err, SA_EINFEASIBLE, "serve: no split of %lld bytes into %d steps gives every model a share it "
                     "plans in", (long long)t->memory_bytes, t->steps);
        goto done;
    }
    pt->part = ss.best_s;
done:
    free(model);
    free(cur);
    free(c.arr);
    free(c.off);
    free(c.idx);
    free(c.head);
    free(c.lat);
    free(c.share);
    free(c.lastv);
    free(c.maxb);
    return st;
}
