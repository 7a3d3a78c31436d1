/* bound.c - lower bounds on the iteration time (bound.h, docs/bound.md): every
 * term is a time no plan of the schedule within the memory can beat, so the
 * bound is their maximum. */
#include "swapadvisor/bound.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swapadvisor/recompute.h"
#include "bound_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bnd_free(bnd_model *m)
{
    if (!m)
        return;
    free(m->pos);
    free(m->cls);
    free(m->from);
    free(m->to);
    free(m->h);
    free(m->d);
    free(m->x);
    free(m->rec_op);
    free(m->use_mark);
    free(m->base_bytes);
    free(m->excess);
    memset(m, 0, sizeof *m);
}

typedef struct witem {
    double bytes, cost;
} witem;

static int by_witem(const void *a, const void *b)
{
    const witem *x = a, *y = b;
    double ra = x->cost / x->bytes, rb = y->cost / y->bytes;
    return ra < rb ? -1 : ra > rb;
}

/* The boundary term (docs/bound.md): at an instant just before op i ends,
 * op i's own tensors and whatever op i + 1 reads that op i does not use must
 * fit; what of the latter is absent then is brought back between that
 * instant and op i + 1's start -- by a swap-in, or by a recompute node --
 * while the compute stream has nothing of the schedule to run.  These
 * windows are disjoint, so their lengths add to the sum of op times. */
static bool bnd_boundary(bnd_model *m, const sa_dfg_graph *g, const sa_dfg_device *dev)
{
    double lat = dev->transfer_latency_us, rh = dev->h2d_bytes_per_s * 1e-6;
    int32_t cap = 1;
    for (int32_t i = 0; i < m->n; i++)
        if (g->ops[i].n_in > cap)
            cap = g->ops[i].n_in;
    witem *it = malloc((size_t)cap * sizeof *it);
    if (!it)
        return false;
    double extra = 0;
    for (int32_t i = 0; i + 1 < m->n; i++) {
        const sa_dfg_op *op = &g->ops[m->sch[i]], *nx = &g->ops[m->sch[i + 1]];
        if (!(op->time_us > 0))
            continue; /* the argument needs an instant inside op i */
        bnd_mark(m, g, i);
        int64_t need = m->base_bytes[i];
        int32_t k = 0;
        bool mixed = false;
        for (int32_t j = 0; j < nx->n_in; j++) {
            int32_t t = nx->in[j];
            if (m->use_mark[t] == i + 1)
                continue;
            double b = (double)g->tensors[t].bytes;
            double cost = lat + b / rh;
            const sa_dfg_tensor *x = &g->tensors[t];
            if (dec_recomputable(g, t)) {
                /* one recompute of the producer rebuilds every output of it
                 * op i + 1 reads: its time is shared among them by bytes, so
                 * the per-tensor prices add up to at most one recompute */
                double tp = bnd_op_time(g, x->producer), bp = 0;
                for (int32_t j2 = 0; j2 < nx->n_in; j2++) {
                    const sa_dfg_tensor *y = &g->tensors[nx->in[j2]];
                    if (m->use_mark[nx->in[j2]] != i + 1 && y->producer == x->producer)
                        bp += (double)y->bytes;
                }
                tp = bp > 0 ? tp * b / bp : 0;
                if (tp < cost)
                    cost = tp;
                mixed = true;
            }
            need += x->bytes;
            it[k++] = (witem){b, cost};
        }
        need -= dev->memory_bytes;
        if (need <= 0 || k == 0)
            continue;
        qsort(it, (size_t)k, sizeof *it, by_witem);
        double w = 0, left = (double)need;
        for (int32_t j = 0; j < k && left > 0; j++) {
            double take = fmin(1.0, left / it[j].bytes);
            w += take * it[j].cost;
            left -= take * it[j].bytes;
        }
        /* swap-ins and recomputes run side by side in the window: it lasts
         * at least the larger of the two sums, so at least half of both */
        extra += mixed ? 0.5 * w : w;
    }
    free(it);
    m->boundary_us = m->compute_us + extra;
    return true;
}

sa_status bnd_build(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, bnd_model *m, sa_err *err)
{
    memset(m, 0, sizeof *m);
    const int32_t *sch = schedule ? schedule : g->topo;
    int32_t n = g->n_ops, nt = g->n_tensors;
    m->n = n;
    m->nt = nt;
    m->sch = sch;
    m->pos = sa_calloc((size_t)n, sizeof *m->pos);
    m->cls = sa_calloc((size_t)nt, sizeof *m->cls);
    m->from = sa_calloc((size_t)nt, sizeof *m->from);
    m->to = sa_calloc((size_t)nt, sizeof *m->to);
    m->h = sa_calloc((size_t)nt, sizeof *m->h);
    m->d = sa_calloc((size_t)nt, sizeof *m->d);
    m->x = sa_calloc((size_t)nt, sizeof *m->x);
    m->rec_op = sa_calloc((size_t)nt, sizeof *m->rec_op);
    m->use_mark = sa_calloc((size_t)nt, sizeof *m->use_mark);
    m->base_bytes = sa_calloc((size_t)n, sizeof *m->base_bytes);
    m->excess = sa_calloc((size_t)n, sizeof *m->excess);
    if (!m->pos || !m->cls || !m->from || !m->to || !m->h || !m->d || !m->x || !m->rec_op || !m->use_mark ||
        !m->base_bytes || !m->excess) {
        bnd_free(m);
        return sa_fail(err, SA_ENOMEM, "out of memory building the bound of %d ops", n);
    }
    for (int32_t i = 0; i < n; i++)
        m->pos[sch[i]] = i;
    double lat = dev->transfer_latency_us;
    double rh = dev->h2d_bytes_per_s * 1e-6, rd = dev->d2h_bytes_per_s * 1e-6;
    double dup = dev->duplex_bytes_per_s * 0.5e-6;
    /* the fastest the two directions together ever move bytes (bytes / us) */
    m->r_comb = fmax(fmax(rh, rd), fmin(rh, dup) + fmin(rd, dup));
    for (int32_t i = 0; i < n; i++)
        m->compute_us += bnd_op_time(g, sch[i]);
    /* classify every tensor: when its absence costs, and what */
    for (int32_t t = 0; t < nt; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        double b = (double)x->bytes;
        m->rec_op[t] = -1;
        m->cls[t] = BND_NONE;
        if (sa_dfg_kind_persistent(x->kind)) {
            if (x->n_readers == 0 && x->updater < 0)
                continue; /* nobody touches it: absent for free */
            m->cls[t] = BND_PERSIST;
            m->from[t] = -1;
            m->to[t] = n;
            m->h[t] = lat + b / rh;
            m->d[t] = x->updater >= 0 ? lat + b / rd : 0;
            m->x[t] = (x->updater >= 0 ? 2 : 1) * b / m->r_comb;
            continue;
        }
        int32_t f = INT32_MAX, l = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t q = m->pos[g->readers[x->reader_off + k]];
            if (q < f) f = q;
            if (q > l) l = q;
        }
        if (x->kind == SA_DFG_INPUT) {
            if (l < 0)
                continue;
            /* one swap-in per iteration is forced; a second one when it is
             * absent between two of its readers */
            m->forced_h_us += lat + b / rh;
            m->forced_bytes += b;
            m->cls[t] = BND_INPUT;
            m->from[t] = f;
            m->to[t] = l;
            m->h[t] = lat + b / rh;
            m->x[t] = b / m->r_comb;
            continue;
        }
        if (x->producer < 0 || l < 0)
            continue; /* a workspace, or an output nobody reads: never alive across an op */
        m->cls[t] = BND_TRANSIENT;
        m->from[t] = m->pos[x->producer];
        m->to[t] = l;
        m->h[t] = lat + b / rh;
        m->d[t] = lat + b / rd;
        m->x[t] = 2 * b / m->r_comb;
        if (dec_recomputable(g, t))
            m->rec_op[t] = x->producer;
    }
    /* per position: bytes the op itself needs, bytes alive across it, excess */
    for (int32_t i = 0; i < n; i++) {
        const sa_dfg_op *op = &g->ops[sch[i]];
        int64_t use = 0, alive = 0;
        bnd_mark(m, g, i);
        for (int32_t k = 0; k < op->n_use; k++)
            use += g->tensors[op->use[k]].bytes;
        for (int32_t t = 0; t < nt; t++)
            if (bnd_alive(m, t, i))
                alive += g->tensors[t].bytes;
        m->base_bytes[i] = use;
        m->excess[i] = use + alive - dev->memory_bytes;
        if (m->excess[i] > m->max_excess)
            m->max_excess = m->excess[i];
        if (use > dev->memory_bytes) {
            int32_t o = sch[i];
            sa_status st = sa_fail(err, SA_EINFEASIBLE,
                                   "op %d (\"%s\") alone needs %lld bytes for its tensors, more than the %lld bytes "
                                   "of memory: no plan exists, so there is no bound",
                                   o, g->ops[o].name, (long long)use, (long long)dev->memory_bytes);
            bnd_free(m);
            return st;
        }
    }
    /* start: the inputs first read at or before position k all arrive first */
    double arrive = 0, tail = m->compute_us;
    for (int32_t k = 0; k < n; k++) {
        const sa_dfg_op *op = &g->ops[sch[k]];
        for (int32_t j = 0; j < op->n_in; j++) {
            int32_t t = op->in[j];
            if (m->cls[t] == BND_INPUT && m->from[t] == k)
                arrive += lat + (double)g->tensors[t].bytes / rh;
        }
        if (arrive + tail > m->start_us)
            m->start_us = arrive + tail;
        tail -= bnd_op_time(g, sch[k]);
    }
    if (!bnd_boundary(m, g, dev)) {
        bnd_free(m);
        return sa_fail(err, SA_ENOMEM, "out of memory building the bound of %d ops", n);
    }
    return SA_OK;
}

/* ---- the combinatorial memory term: per position, a fractional covering
 * priced by Lagrangian weights on the four resources ---- */

typedef struct citem {
    double bytes, c, h, d, x; /* resource costs of clearing it */
    double cost, ratio;       /* under the current weights */
} citem;

static int by_ratio(const void *a, const void *b)
{
    double ra = ((const citem *)a)->ratio, rb = ((const citem *)b)->ratio;
    return ra < rb ? -1 : ra > rb;
}

/* The items of position i: one swap item per tensor alive across it, one
 * recompute item per producer (all its alive outputs at once).  Returns the
 * count. */
static int32_t position_items(bnd_model *m, const sa_dfg_graph *g, int32_t i, citem *it, double *rec_bytes)
{
    int32_t k = 0;
    bnd_mark(m, g, i);
    for (int32_t t = 0; t < m->nt; t++) {
        if (!bnd_alive(m, t, i))
            continue;
        double b = (double)g->tensors[t].bytes;
        it[k++] = (citem){b, 0, m->h[t], m->d[t], m->x[t], 0, 0};
        if (m->rec_op[t] >= 0)
            rec_bytes[m->rec_op[t]] += b;
    }
    for (int32_t t = 0; t < m->nt; t++) {
        int32_t p = bnd_alive(m, t, i) ? m->rec_op[t] : -1;
        if (p < 0 || rec_bytes[p] <= 0)
            continue;
        double tp = bnd_op_time(g, p);
        it[k++] = (citem){rec_bytes[p], tp, 0, 0, 0, 0, 0};
        rec_bytes[p] = 0; /* one item per producer */
    }
    return k;
}

/* min over fractional coverings of `need` bytes of sum(weights . costs),
 * plus the weighted base; a valid lower bound for any weights summing to 1. */
static double lagrange_value(const bnd_model *m, citem *it, int32_t k, double need, const double w[4])
{
    for (int32_t j = 0; j < k; j++) {
        it[j].cost = w[0] * it[j].c + w[1] * it[j].h + w[2] * it[j].d + w[3] * it[j].x;
        it[j].ratio = it[j].cost / it[j].bytes;
    }
    qsort(it, (size_t)k, sizeof *it, by_ratio);
    double v = w[0] * m->compute_us + w[1] * m->forced_h_us + w[3] * m->forced_bytes / m->r_comb;
    for (int32_t j = 0; j < k && need > 0; j++) {
        double take = fmin(1.0, need / it[j].bytes);
        v += take * it[j].cost;
        need -= take * it[j].bytes;
    }
    return v;
}

/* Best value over the weight grid with K steps (all (a,b,c,d) >= 0 summing to K). */
static double lagrange_grid(const bnd_model *m, citem *it, int32_t k, double need, int K)
{
    double best = 0;
    for (int a = 0; a <= K; a++)
        for (int b = 0; a + b <= K; b++)
            for (int c = 0; a + b + c <= K; c++) {
                double w[4] = {(double)a / K, (double)b / K, (double)c / K, (double)(K - a - b - c) / K};
                double v = lagrange_value(m, it, k, need, w);
                if (v > best)
                    best = v;
            }
    return best;
}

/* ---- the same position by budgets: for a candidate T, the most bytes the
 * recompute items can clear within the compute stream's slack T - C, plus the
 * most the swap items can clear within the slack of the tightest of the three
 * link budgets taken alone (dropping the other two is a relaxation); the
 * smallest T that covers the excess, by bisection. ---- */

typedef struct bitem {
    double bytes, cost;
} bitem;

static int by_unit_cost(const void *a, const void *b)
{
    const bitem *x = a, *y = b;
    double ra = x->cost / x->bytes, rb = y->cost / y->bytes;
    return ra < rb ? -1 : ra > rb;
}

/* Most bytes a fractional knapsack of the sorted items clears within budget. */
static double clear_within(const bitem *it, int32_t k, double budget)
{
    double got = 0;
    for (int32_t j = 0; j < k; j++) {
        if (it[j].cost > 0 && budget <= 0)
            break;
        if (it[j].cost <= budget) {
            got += it[j].bytes;
            budget -= it[j].cost;
        } else {
            got += it[j].bytes * budget / it[j].cost;
            budget = 0;
        }
    }
    return got;
}

/* lists[0] recompute (compute), [1] h2d, [2] d2h, [3] duplex; counts in k[] */
static double bisect_position(const bnd_model *m, bitem *lists[4], const int32_t k[4], double need)
{
    double base[4] = {m->compute_us, m->forced_h_us, 0, m->forced_bytes / m->r_comb};
    double lo = fmax(fmax(base[0], base[1]), base[3]), hi = lo;
    /* an upper end: everything swapped and recomputed */
    double tot[4] = {0, 0, 0, 0};
    for (int r = 0; r < 4; r++)
        for (int32_t j = 0; j < k[r]; j++)
            tot[r] += lists[r][j].cost;
    for (int r = 0; r < 4; r++)
        hi = fmax(hi, base[r] + tot[r]);
    hi = hi * (1 + 1e-12) + 1e-9;
    for (int iter = 0; iter < 60 && hi - lo > 1e-9 * hi; iter++) {
        double T = 0.5 * (lo + hi);
        double swap = HUGE_VAL;
        for (int r = 1; r < 4; r++)
            swap = fmin(swap, clear_within(lists[r], k[r], T - base[r]));
        double got = clear_within(lists[0], k[0], T - base[0]) + swap;
        if (got >= need)
            hi = T;
        else
            lo = T;
    }
    return lo;
}

/* Sorts position i's items into the four lists (each by cost per byte). */
static void position_lists(bnd_model *m, const sa_dfg_graph *g, int32_t i, citem *it, double *rec_bytes,
                           bitem *lists[4], int32_t k[4])
{
    int32_t n = position_items(m, g, i, it, rec_bytes);
    for (int r = 0; r < 4; r++)
        k[r] = 0;
    for (int32_t j = 0; j < n; j++) {
        if (it[j].c > 0 || (it[j].h == 0 && it[j].d == 0 && it[j].x == 0)) {
            lists[0][k[0]++] = (bitem){it[j].bytes, it[j].c};
            continue;
        }
        lists[1][k[1]++] = (bitem){it[j].bytes, it[j].h};
        lists[2][k[2]++] = (bitem){it[j].bytes, it[j].d};
        lists[3][k[3]++] = (bitem){it[j].bytes, it[j].x};
    }
    for (int r = 0; r < 4; r++)
        qsort(lists[r], (size_t)k[r], sizeof *lists[r], by_unit_cost);
}

sa_status bound_cheap(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, bound_result *out,
                      sa_err *err)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    bnd_model m;
    sa_status st = bnd_build(g, dev, schedule, &m, err);
    if (st)
        return st;
    citem *it = malloc((size_t)(2 * m.nt + 1) * sizeof *it);
    double *rec_bytes = sa_calloc((size_t)m.n + 1, sizeof *rec_bytes);
    double *coarse = sa_calloc((size_t)m.n + 1, sizeof *coarse);
    bitem *lists[4];
    bool lists_ok = true;
    for (int r = 0; r < 4; r++)
        lists_ok = (lists[r] = malloc((size_t)(2 * m.nt + 1) * sizeof *lists[r])) && lists_ok;
    if (!it || !rec_bytes || !coarse || !lists_ok) {
        st = sa_fail(err, SA_ENOMEM, "out of memory bounding %d ops", m.n);
        goto out;
    }
    /* bisection over the budgets at every position with bytes over memory,
     * then Lagrangian weights on a grid at the few positions that gave the
     * most (the weights couple the three link budgets the bisection takes
     * one at a time) */
    enum { FINE = 24, N_FINE = 4 };
    double best = 0;
    int32_t best_pos = -1;
    for (int32_t i = 0; i < m.n; i++) {
        coarse[i] = -1;
        if (m.excess[i] <= 0 || !(g->ops[m.sch[i]].time_us > 0))
            continue; /* the argument needs an instant inside the op */
        int32_t k[4];
        position_lists(&m, g, i, it, rec_bytes, lists, k);
        coarse[i] = bisect_position(&m, lists, k, (double)m.excess[i]);
    }
    for (int r = 0; r < N_FINE; r++) {
        int32_t top = -1;
        for (int32_t i = 0; i < m.n; i++)
            if (coarse[i] >= 0 && (top < 0 || coarse[i] > coarse[top]))
                top = i;
        if (top < 0)
            break;
        int32_t k = position_items(&m, g, top, it, rec_bytes);
        double v = fmax(coarse[top], lagrange_grid(&m, it, k, (double)m.excess[top], FINE));
        coarse[top] = -1;
        if (v > best) {
            best = v;
            best_pos = top;
        }
    }
    out->compute_us = m.compute_us;
    out->forced_us = fmax(m.forced_h_us, m.forced_bytes / m.r_comb);
    out->start_us = m.start_us;
    out->boundary_us = m.boundary_us;
    out->memory_us = best;
    out->memory_pos = best_pos;
    out->max_excess = m.max_excess;
    out->method = "combinatorial";
    out->lower_bound_us = fmax(fmax(fmax(out->compute_us, out->forced_us), fmax(out->start_us, out->memory_us)),
                               out->boundary_us);
out:
    out->seconds = now_s() - t0;
    for (int r = 0; r < 4; r++)
        free(lists[r]);
    free(it);
    free(rec_bytes);
    free(coarse);
    bnd_free(&m);
    return st;
}

sa_status bound_attach(sa_plan *p, const bound_result *b, sa_err *err)
{
    const char *old = p->search_json && *p->search_json ? p->search_json : "{}";
    size_t len = strlen(old);
    while (len > 0 && old[len - 1] != '}')
        len--;
    if (len == 0)
        return sa_fail(err, SA_EINTERNAL, "internal error: the plan's search block is not an object");
    bool empty = true;
    for (size_t k = 1; k + 1 < len; k++)
        if (old[k] != ' ' && old[k] != '\n' && old[k] != '\t')
            empty = false;
    char add[512], win[48] = "";
    if (b->lp_windows > 0)
        snprintf(win, sizeof win, ",\"bound_windows\":%d", (int)b->lp_windows);
    int n = snprintf(add, sizeof add,
                     "%s\"lower_bound_us\":%.17g,\"bound_method\":\"%s\",\"bound_terms_us\":{\"compute\":%.17g,"
                     "\"forced\":%.17g,\"start\":%.17g,\"boundary\":%.17g,\"memory\":%.17g}%s,\"bound_wall_s\":%.3f}",
                     empty ? "" : ",", b->lower_bound_us, b->method, b->compute_us, b->forced_us, b->start_us,
                     b->boundary_us, b->memory_us, win, b->seconds);
    char *js = malloc(len - 1 + (size_t)n + 1);
    if (!js)
        return sa_fail(err, SA_ENOMEM, "out of memory adding the bound to the plan");
    memcpy(js, old, len - 1);
    memcpy(js + len - 1, add, (size_t)n + 1);
    bool ok = sa_plan_set_search_json(p, js);
    free(js);
    return ok ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory adding the bound to the plan");
}
