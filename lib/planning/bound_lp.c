/* bound_lp.c - the memory term as one linear program over every position,
 * with the schedule cut into time windows (bound.h, docs/bound.md "The
 * linear program"). */
#include "swapadvisor/bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/milp.h"
#include "bound_internal.h"

bool bound_have_lp(void) { return sa_milp_have(SA_MILP_AUTO); }

/* bytes enter the rows in MB, so that the coefficients stay near 1 */
#define BND_MB 1e-6

/* The window counts the LP is solved with; each gives a valid bound and the
 * largest is kept (a finer cut is not always tighter: docs/bound.md). */
static const int32_t window_counts[] = {1, 16};
/* Past this many coefficients in the memory rows (rnn-8-8k: 1.8e7, nasnet-25:
 * 7.4e7; inception-4: 1.4e6) no LP is solved and the combinatorial bound
 * stands: the LPs took 43 s on rnn-8-8k, the one-window LP 9 minutes (6 GB)
 * on nasnet-25, and CLP's factorization crashed on the latter. */
#define BND_LP_MAX_NNZ 4000000

/* One LP over K windows.  Columns are indexed per cell (tensor t, window w)
 * at [t * K + w], per producer and window at [p * K + w]; -1 where absent. */
typedef struct lpw {
    const sa_dfg_graph *g;
    bnd_model *m;
    sa_milp *lp;
    int32_t K;
    int32_t *seg;           /* seg[i]: window of schedule position i */
    int32_t *wlast;         /* last position of window w, -1 when empty */
    double *wc;             /* op time in window w */
    int32_t *ilast;         /* last over-memory position of w at which t is alive, -1 */
    int32_t *acol, *ocol, *ncol, *pcol, *qcol; /* cells: absent, left by a swap-out, back by a
                                                 * swap-in, prefix max of o, suffix max of n */
    int32_t *rfcol, *rucol, *rscol; /* producers: a recompute inside the window, one after
                                     * it, the suffix max of both */
    int32_t *scol;          /* persistent tensors: absent anywhere (and after their last read) */
    int32_t *plast;         /* persistent tensors: position of the last reader */
    int32_t *wcol;
    int32_t *idx;
    double *val;
    int64_t mem_nnz;        /* coefficients of the memory rows */
} lpw;

static void lpw_free(lpw *w)
{
    sa_milp_free(w->lp);
    free(w->seg);
    free(w->wlast);
    free(w->wc);
    free(w->ilast);
    free(w->acol);
    free(w->ocol);
    free(w->ncol);
    free(w->pcol);
    free(w->qcol);
    free(w->rfcol);
    free(w->rucol);
    free(w->rscol);
    free(w->scol);
    free(w->plast);
    free(w->wcol);
    free(w->idx);
    free(w->val);
}

static bool over(const lpw *w, int32_t i)
{
    return w->m->excess[i] > 0 && w->g->ops[w->m->sch[i]].time_us > 0;
}

/* Is t, absent at some over-memory position of window v, made valid again
 * inside v: does a reader follow the last such position within v? */
static bool restore_inside(const lpw *w, int32_t t, int32_t v)
{
    const sa_dfg_tensor *x = &w->g->tensors[t];
    int32_t il = w->ilast[(size_t)t * w->K + v];
    for (int32_t k = 0; k < x->n_readers; k++) {
        int32_t q = w->m->pos[w->g->readers[x->reader_off + k]];
        if (q > il && q <= w->wlast[v])
            return true;
    }
    return false;
}

static int32_t col(lpw *w, bool *ok, double lb, double ub)
{
    int32_t c = *ok ? sa_milp_add_col(w->lp, lb, ub, 0, false) : -1;
    if (c < 0)
        *ok = false;
    return c;
}

/* Adds lb <= sum <= HUGE over the k pairs in w->idx / w->val. */
static void row(lpw *w, bool *ok, double lb, int32_t k)
{
    if (*ok && !sa_milp_add_row(w->lp, lb, HUGE_VAL, k, w->idx, w->val))
        *ok = false;
}

/* x - y >= 0 */
static void geq(lpw *w, bool *ok, int32_t x, int32_t y)
{
    w->idx[0] = x;
    w->val[0] = 1;
    w->idx[1] = y;
    w->val[1] = -1;
    row(w, ok, 0, 2);
}

/* The arrays, the windows (about equal op time each) and where each tensor
 * is alive over memory; false on allocation failure. */
static bool lpw_alloc(lpw *w)
{
    const sa_dfg_graph *g = w->g;
    bnd_model *m = w->m;
    int32_t K = w->K, n = m->n, nt = m->nt;
    size_t cells = (size_t)nt * K, pcells = (size_t)n * K;
    w->lp = sa_milp_new();
    w->seg = malloc((size_t)n * sizeof *w->seg);
    w->wlast = malloc((size_t)K * sizeof *w->wlast);
    w->wc = calloc((size_t)K, sizeof *w->wc);
    w->wcol = malloc((size_t)K * sizeof *w->wcol);
    w->scol = malloc((size_t)nt * sizeof *w->scol);
    w->plast = malloc((size_t)nt * sizeof *w->plast);
    int32_t **cc[] = {&w->ilast, &w->acol, &w->ocol, &w->ncol, &w->pcol, &w->qcol};
    for (size_t k = 0; k < sizeof cc / sizeof *cc; k++)
        *cc[k] = malloc(cells * sizeof **cc[k]);
    int32_t **pcc[] = {&w->rfcol, &w->rucol, &w->rscol};
    for (size_t k = 0; k < sizeof pcc / sizeof *pcc; k++)
        *pcc[k] = malloc(pcells * sizeof **pcc[k]);
    /* the longest row: the two-way link's, T and up to two columns (P, Q)
     * per tensor */
    size_t cap = 2 * (size_t)nt + (size_t)n + (size_t)K + 4;
    w->idx = malloc(cap * sizeof *w->idx);
    w->val = malloc(cap * sizeof *w->val);
    if (!w->lp || !w->seg || !w->wlast || !w->wc || !w->wcol || !w->scol || !w->plast || !w->ilast || !w->acol || !w->ocol ||
        !w->ncol || !w->pcol || !w->qcol || !w->rfcol || !w->rucol || !w->rscol || !w->idx || !w->val)
        return false;
    for (size_t k = 0; k < sizeof cc / sizeof *cc; k++)
        memset(*cc[k], 0xff, cells * sizeof **cc[k]);
    for (size_t k = 0; k < sizeof pcc / sizeof *pcc; k++)
        memset(*pcc[k], 0xff, pcells * sizeof **pcc[k]);
    memset(w->scol, 0xff, (size_t)nt * sizeof *w->scol);
    for (int32_t t = 0; t < nt; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        w->plast[t] = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t q = m->pos[g->readers[x->reader_off + k]];
            if (q > w->plast[t])
                w->plast[t] = q;
        }
    }
    /* windows of about equal op time, in schedule order */
    double cum = 0;
    for (int32_t v = 0; v < K; v++)
        w->wlast[v] = -1;
    for (int32_t i = 0; i < n; i++) {
        double ti = bnd_op_time(g, m->sch[i]);
        int32_t v = m->compute_us > 0 ? (int32_t)((double)K * (cum + 0.5 * ti) / m->compute_us)
                                      : (int32_t)((int64_t)K * i / n);
        v = v < 0 ? 0 : v >= K ? K - 1 : v;
        if (i > 0 && v < w->seg[i - 1])
            v = w->seg[i - 1];
        w->seg[i] = v;
        w->wlast[v] = i;
        w->wc[v] += ti;
        cum += ti;
    }
    /* where each tensor is alive over memory, per window */
    for (int32_t i = 0; i < n; i++) {
        if (!over(w, i))
            continue;
        bnd_mark(m, g, i);
        for (int32_t t = 0; t < nt; t++)
            if (bnd_alive(m, t, i)) {
                w->mem_nnz++;
                if (m->cls[t] == BND_PERSIST)
                    w->scol[t] = 0; /* marked: made a column below */
                if (m->cls[t] != BND_PERSIST || i < w->plast[t])
                    w->ilast[(size_t)t * K + w->seg[i]] = i;
            }
    }
    return true;
}

/* The columns: T, the window lengths, and per cell the absence a, swap-out o,
 * swap-in n and their prefix / suffix maxima P / Q, per producer and window
 * the recomputes; the rows that tie them.  Returns T's column (-1 on OOM). */
static int32_t lpw_columns(lpw *w, double floor_us)
{
    bnd_model *m = w->m;
    int32_t K = w->K, n = m->n, nt = m->nt;
    int32_t T = sa_milp_add_col(w->lp, floor_us, HUGE_VAL, 1.0, false);
    bool ok = T >= 0;
    for (int32_t v = 0; v < K; v++)
        w->wcol[v] = col(w, &ok, 0, HUGE_VAL);
    for (int32_t t = 0; t < nt; t++)
        if (w->scol[t] == 0)
            w->scol[t] = col(w, &ok, 0, 1);
    /* the cells: absence a, swap-out o, swap-in n, their prefix / suffix
     * maxima P / Q.  A persistent tensor absent before a read comes back by
     * a swap-in; its swap-out (once updated) is charged to the whole
     * iteration only, through scol >= every a */
    for (int32_t t = 0; t < nt && ok; t++) {
        if (m->cls[t] == BND_NONE)
            continue;
        int32_t p = m->rec_op[t], prevP = -1;
        for (int32_t v = 0; v < K && ok; v++) {
            size_t c = (size_t)t * K + v;
            if (w->ilast[c] < 0)
                continue;
            int32_t a = w->acol[c] = col(w, &ok, 0, 1);
            if (m->cls[t] == BND_PERSIST)
                geq(w, &ok, w->scol[t], a);
            if (m->cls[t] != BND_TRANSIENT) {
                w->ncol[c] = a;
                continue;
            }
            if (p < 0) {
                w->ocol[c] = w->ncol[c] = a;
            } else {
                w->ocol[c] = col(w, &ok, 0, 1);
                w->ncol[c] = col(w, &ok, 0, 1);
                /* the recompute that clears it: inside the window when the
                 * restore is, else somewhere after its first absence */
                int32_t *rc = restore_inside(w, t, v) ? w->rfcol : w->rucol;
                size_t pc = (size_t)p * K + v;
                if (rc[pc] < 0)
                    rc[pc] = col(w, &ok, 0, 1);
                /* a <= o + r (it left by a swap-out, or a recompute follows) and
                 * a <= n + r (it came back by a swap-in or a recompute) */
                for (int s = 0; s < 2 && ok; s++) {
                    w->idx[0] = a;
                    w->val[0] = 1;
                    w->idx[1] = s ? w->ncol[c] : w->ocol[c];
                    w->val[1] = -1;
                    w->idx[2] = rc[pc];
                    w->val[2] = -1;
                    if (!sa_milp_add_row(w->lp, -HUGE_VAL, 0, 3, w->idx, w->val))
                        ok = false;
                }
            }
            w->pcol[c] = col(w, &ok, 0, 1);
            geq(w, &ok, w->pcol[c], w->ocol[c]);
            if (prevP >= 0)
                geq(w, &ok, w->pcol[c], prevP);
            prevP = w->pcol[c];
        }
        int32_t nextQ = -1;
        for (int32_t v = K - 1; v >= 0 && ok; v--) {
            size_t c = (size_t)t * K + v;
            if (w->ilast[c] < 0)
                continue;
            w->qcol[c] = col(w, &ok, 0, 1);
            geq(w, &ok, w->qcol[c], w->ncol[c]);
            if (nextQ >= 0)
                geq(w, &ok, w->qcol[c], nextQ);
            nextQ = w->qcol[c];
        }
    }
    /* per producer: the suffix maximum of its recomputes */
    for (int32_t p = 0; p < n && ok; p++) {
        int32_t next = -1;
        for (int32_t v = K - 1; v >= 0 && ok; v--) {
            size_t pc = (size_t)p * K + v;
            if (next < 0 && w->rfcol[pc] < 0 && w->rucol[pc] < 0)
                continue;
            int32_t rs = w->rscol[pc] = col(w, &ok, 0, 1);
            if (next >= 0)
                geq(w, &ok, rs, next);
            if (w->rfcol[pc] >= 0)
                geq(w, &ok, rs, w->rfcol[pc]);
            if (w->rucol[pc] >= 0)
                geq(w, &ok, rs, w->rucol[pc]);
            next = rs;
        }
    }
    return ok ? T : -1;
}

/* The rows: memory at each position over memory, the windows' lengths, what
 * must run inside each window and each run of windows, the two-way link;
 * false on OOM. */
static bool lpw_rows(lpw *w, int32_t T)
{
    const sa_dfg_graph *g = w->g;
    bnd_model *m = w->m;
    int32_t K = w->K, n = m->n, nt = m->nt;
    bool ok = true;
    /* memory: at each position over memory, the absent alive bytes cover the excess */
    for (int32_t i = 0; i < n && ok; i++) {
        if (!over(w, i))
            continue;
        bnd_mark(m, g, i);
        int32_t k = 0;
        for (int32_t t = 0; t < nt; t++)
            if (bnd_alive(m, t, i)) {
                bool late = m->cls[t] == BND_PERSIST && i > w->plast[t];
                w->idx[k] = late ? w->scol[t] : w->acol[(size_t)t * K + w->seg[i]];
                w->val[k++] = (double)g->tensors[t].bytes * BND_MB;
            }
        row(w, &ok, (double)m->excess[i] * BND_MB, k);
    }
    /* T >= the windows' lengths, which add up */
    int32_t k = 0;
    w->idx[k] = T;
    w->val[k++] = 1;
    for (int32_t v = 0; v < K; v++) {
        w->idx[k] = w->wcol[v];
        w->val[k++] = -1;
    }
    row(w, &ok, 0, k);
    /* inside window v: its ops and the recomputes it must hold; the swap-outs
     * of tensors made and cleared in it; the swap-ins of tensors cleared and
     * read again in it */
    for (int32_t v = 0; v < K && ok; v++) {
        for (int res = 0; res < 3 && ok; res++) {
            k = 0;
            w->idx[k] = w->wcol[v];
            w->val[k++] = 1;
            if (res == 0) {
                for (int32_t p = 0; p < n; p++)
                    if (w->rfcol[(size_t)p * K + v] >= 0 && bnd_op_time(g, p) > 0) {
                        w->idx[k] = w->rfcol[(size_t)p * K + v];
                        w->val[k++] = -bnd_op_time(g, p);
                    }
            } else {
                for (int32_t t = 0; t < nt; t++) {
                    size_t c = (size_t)t * K + v;
                    if (w->acol[c] < 0)
                        continue;
                    if (res == 1 && m->cls[t] == BND_TRANSIENT && w->seg[m->from[t]] == v) {
                        w->idx[k] = w->ocol[c];
                        w->val[k++] = -m->d[t];
                    } else if (res == 2 && restore_inside(w, t, v)) {
                        w->idx[k] = w->ncol[c];
                        w->val[k++] = -m->h[t];
                    }
                }
            }
            row(w, &ok, res == 0 ? w->wc[v] : 0, k);
        }
    }
    /* prefixes: every swap-out serving an absence up to window v ends in it;
     * suffixes: every swap-in and recompute serving an absence from window v
     * on runs after it starts; the whole iteration holds every transfer */
    double ctail = m->compute_us;
    for (int32_t v = 0; v < K && ok; v++) {
        for (int res = 0; res < 3 && ok; res++) {
            k = 0;
            double lb = 0;
            for (int32_t u = 0; u < K; u++)
                if (res == 0 ? u <= v : u >= v) {
                    w->idx[k] = w->wcol[u];
                    w->val[k++] = 1;
                }
            if (res == 2) {
                lb = ctail;
                for (int32_t p = 0; p < n; p++)
                    if (w->rscol[(size_t)p * K + v] >= 0 && bnd_op_time(g, p) > 0) {
                        w->idx[k] = w->rscol[(size_t)p * K + v];
                        w->val[k++] = -bnd_op_time(g, p);
                    }
            } else {
                for (int32_t t = 0; t < nt; t++) {
                    if (m->cls[t] == BND_PERSIST) {
                        double c = res == 0 ? m->d[t] : m->h[t];
                        bool whole = res == 0 ? v == K - 1 : v == 0;
                        if (whole && w->scol[t] >= 0 && c > 0) {
                            w->idx[k] = w->scol[t];
                            w->val[k++] = -c;
                        }
                        if (whole || res == 0)
                            continue; /* else its swap-ins before reads, below */
                    }
                    int32_t found = -1;
                    if (res == 0) {
                        for (int32_t u = v; u >= 0 && found < 0; u--)
                            found = w->pcol[(size_t)t * K + u];
                    } else {
                        for (int32_t u = v; u < K && found < 0; u++)
                            found = w->qcol[(size_t)t * K + u];
                    }
                    double c = res == 0 ? m->d[t] : m->h[t];
                    if (found >= 0 && c > 0) {
                        w->idx[k] = found;
                        w->val[k++] = -c;
                    }
                }
                if (res == 1 && v == 0)
                    lb = m->forced_h_us;
            }
            row(w, &ok, lb, k);
        }
        ctail -= w->wc[v];
    }
    /* both directions together: bytes over the fastest joint rate */
    k = 0;
    w->idx[k] = T;
    w->val[k++] = 1;
    for (int32_t t = 0; t < nt; t++) {
        if (m->cls[t] == BND_PERSIST) {
            if (w->scol[t] >= 0 && m->x[t] > 0) {
                w->idx[k] = w->scol[t];
                w->val[k++] = -m->x[t];
            }
            continue;
        }
        int32_t P = -1, Q = -1;
        for (int32_t u = K - 1; u >= 0 && P < 0; u--)
            P = w->pcol[(size_t)t * K + u];
        for (int32_t u = 0; u < K && Q < 0; u++)
            Q = w->qcol[(size_t)t * K + u];
        /* a transient's x prices both directions, an input's its swap-in */
        double b = m->cls[t] == BND_TRANSIENT ? 0.5 * m->x[t] : m->x[t];
        if (P >= 0 && b > 0) {
            w->idx[k] = P;
            w->val[k++] = -b;
        }
        if (Q >= 0 && b > 0) {
            w->idx[k] = Q;
            w->val[k++] = -b;
        }
    }
    row(w, &ok, m->forced_bytes / m->r_comb, k);
    return ok;
}

/* Builds the LP of K windows; false on allocation failure. */
static bool lpw_build(lpw *w, double floor_us)
{
    if (!lpw_alloc(w))
        return false;
    if (w->mem_nnz > BND_LP_MAX_NNZ)
        return true; /* too large to solve: the caller looks at mem_nnz */
    int32_t T = lpw_columns(w, floor_us);
    return T >= 0 && lpw_rows(w, T);
}

sa_status bound_lp(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double time_limit_s,
                   bound_result *out, sa_err *err)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return sa_fail(err, SA_EUSAGE, "this build has no LP solver for the LP bound (install coinor-libcbc-dev "
                       "or libglpk-dev and rebuild; scripts/setup.sh does)");
    sa_status st = bound_cheap(g, dev, schedule, out, err);
    if (st)
        return st;
    if (out->max_excess <= 0)
        return SA_OK; /* everything fits: the memory term is empty */
    double t_cheap = out->seconds, spent = 0;
    bnd_model m;
    if ((st = bnd_build(g, dev, schedule, &m, err)))
        return st;
    double floor_us = fmax(fmax(fmax(out->compute_us, out->forced_us), out->start_us), out->boundary_us);
    for (size_t j = 0; j < sizeof window_counts / sizeof *window_counts && !st; j++) {
        lpw w = {.g = g, .m = &m, .K = window_counts[j]};
        sa_milp_result res = {0};
        double left = time_limit_s > 0 ? time_limit_s - spent : 0;
        if (time_limit_s > 0 && left <= 0)
            break;
        bool built = lpw_build(&w, floor_us);
        if (built && w.mem_nnz > BND_LP_MAX_NNZ) {
            lpw_free(&w);
            break;
        }
        if (!built) {
            st = sa_fail(err, SA_ENOMEM, "out of memory building the LP bound");
        } else {
            sa_milp_opts mo = {SA_MILP_AUTO, left, 0, 1, true, 0, false, 0};
            if (!(st = sa_milp_solve(w.lp, &mo, &res, err))) {
                spent += res.seconds;
                if (res.status == SA_MILP_OPTIMAL) {
                    /* the simplex's optimum, less its feasibility tolerance */
                    double v = res.objective * (1.0 - 1e-7);
                    out->method = "lp";
                    if (v > out->memory_us) {
                        out->memory_us = v;
                        out->memory_pos = -1;
                        out->lp_windows = w.K;
                    }
                    out->lower_bound_us = fmax(out->lower_bound_us, v);
                } else if (res.status == SA_MILP_INFEASIBLE) {
                    st = sa_fail(err, SA_EINTERNAL,
                                 "internal error: the LP bound is infeasible although every op fits");
                }
                /* SA_MILP_NO_SOLUTION (time limit): the bounds so far stand */
            }
        }
        sa_milp_result_free(&res);
        lpw_free(&w);
    }
    out->seconds = t_cheap + spent;
    bnd_free(&m);
    return st;
}
