/* bayesopt.c - Gaussian-process Bayesian optimisation on [-1, 1]^dim (see
 * bayesopt.h).  Sizes are tiny (at most BO_MAX_BUDGET points), so the GP is
 * refitted from scratch each step with a dense Cholesky factorisation. */
#include "swapadvisor/bayesopt.h"

#include <math.h>
#include <string.h>

#include "swapadvisor/rng.h"

void bo_opts_default(bo_opts *o, int32_t dim)
{
    memset(o, 0, sizeof *o);
    o->dim = dim;
    o->budget = 24;
    o->n_random = 4;
    o->n_cand = 512;
    o->length_scale = 0.6;
    o->noise = 1e-4;
    o->seed = 1;
}

static double kern(const bo_opts *o, const double *a, const double *b)
{
    double d2 = 0;
    for (int32_t i = 0; i < o->dim; i++)
        d2 += (a[i] - b[i]) * (a[i] - b[i]);
    return exp(-0.5 * d2 / (o->length_scale * o->length_scale));
}

/* The fitted model: L (Cholesky of K + noise I), alpha = K^-1 z where z is y
 * standardised by (mean, sd). */
typedef struct gp {
    int32_t n;
    double L[BO_MAX_BUDGET * BO_MAX_BUDGET];
    double alpha[BO_MAX_BUDGET];
    double mean, sd;
} gp;

static void gp_fit(const bo_opts *o, const double *x, const double *y, int32_t n, gp *m)
{
    m->n = n;
    double s = 0, s2 = 0;
    for (int32_t i = 0; i < n; i++)
        s += y[i];
    m->mean = s / n;
    for (int32_t i = 0; i < n; i++)
        s2 += (y[i] - m->mean) * (y[i] - m->mean);
    m->sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
    if (!(m->sd > 0))
        m->sd = 1;
    double *L = m->L;
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j <= i; j++) {
            double v = kern(o, x + (size_t)i * o->dim, x + (size_t)j * o->dim) + (i == j ? o->noise : 0);
            for (int32_t k = 0; k < j; k++)
                v -= L[i * n + k] * L[j * n + k];
            /* jitter keeps the factorisation alive for (near) duplicate points */
            L[i * n + j] = i == j ? sqrt(v > 1e-12 ? v : 1e-12) : v / L[j * n + j];
        }
    double t[BO_MAX_BUDGET];
    for (int32_t i = 0; i < n; i++) { /* L t = z */
        double v = (y[i] - m->mean) / m->sd;
        for (int32_t k = 0; k < i; k++)
            v -= L[i * n + k] * t[k];
        t[i] = v / L[i * n + i];
    }
    for (int32_t i = n - 1; i >= 0; i--) { /* L^T alpha = t */
        double v = t[i];
        for (int32_t k = i + 1; k < n; k++)
            v -= L[k * n + i] * m->alpha[k];
        m->alpha[i] = v / L[i * n + i];
    }
}

/* Posterior mean and standard deviation at q, standardised units. */
static void gp_post(const bo_opts *o, const gp *m, const double *x, const double *q, double *mu, double *sigma)
{
    int32_t n = m->n;
    double kq[BO_MAX_BUDGET], v[BO_MAX_BUDGET], mean = 0, var = 1 + o->noise;
    for (int32_t i = 0; i < n; i++) {
        kq[i] = kern(o, x + (size_t)i * o->dim, q);
        mean += kq[i] * m->alpha[i];
    }
    for (int32_t i = 0; i < n; i++) { /* L v = kq */
        double s = kq[i];
        for (int32_t k = 0; k < i; k++)
            s -= m->L[i * n + k] * v[k];
        v[i] = s / m->L[i * n + i];
        var -= v[i] * v[i];
    }
    *mu = mean;
    *sigma = var > 1e-12 ? sqrt(var) : 1e-6;
}

static sa_status check_opts(const bo_opts *o, sa_err *err)
{
    if (o->dim < 1 || o->dim > BO_MAX_DIM || o->budget < 1 || o->budget > BO_MAX_BUDGET || o->n_given < 0 ||
        o->n_random < 0 || o->n_cand < 1 || !(o->length_scale > 0) || !(o->noise >= 0))
        return sa_fail(err, SA_EUSAGE, "bayesopt: bad options (dim %d, budget %d, candidates %d)", o->dim,
                       o->budget, o->n_cand);
    return SA_OK;
}

sa_status bo_gp_predict(const bo_opts *o, const double *x, const double *y, int32_t n, const double *q, double *mu,
                        double *sigma, sa_err *err)
{
    sa_status st = check_opts(o, err);
    if (st)
        return st;
    if (n < 1 || n > BO_MAX_BUDGET)
        return sa_fail(err, SA_EUSAGE, "bayesopt: %d observations (1 .. %d)", n, BO_MAX_BUDGET);
    static _Thread_local gp m;
    gp_fit(o, x, y, n, &m);
    gp_post(o, &m, x, q, mu, sigma);
    *mu = m.mean + *mu * m.sd;
    *sigma *= m.sd;
    return SA_OK;
}

/* Expected improvement below best (standardised units) of N(mu, sigma^2). */
static double expected_improvement(double best, double mu, double sigma)
{
    double d = best - mu, z = d / sigma;
    double cdf = 0.5 * erfc(-z / sqrt(2.0)), pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    return d * cdf + sigma * pdf;
}

sa_status bo_minimize(const bo_opts *o, bo_fn f, void *ctx, double *best_x, double *best_y, double *xs, double *ys,
                      int32_t *n_eval, sa_err *err)
{
    sa_status st = check_opts(o, err);
    if (st)
        return st;
    int32_t d = o->dim;
    double X[BO_MAX_BUDGET * BO_MAX_DIM], Y[BO_MAX_BUDGET], q[BO_MAX_DIM], bq[BO_MAX_DIM];
    static _Thread_local gp m;
    rng r;
    rng_seed(&r, o->seed, 0xb0, 0);
    int32_t n = 0, ib = 0;
    while (n < o->budget) {
        double *x = X + (size_t)n * d;
        if (n < o->n_given && o->given) {
            memcpy(x, o->given + (size_t)n * d, (size_t)d * sizeof *x);
        } else if (n < o->n_given + o->n_random || n < 2) {
            for (int32_t i = 0; i < d; i++)
                x[i] = 2 * rng_unit(&r) - 1;
        } else {
            gp_fit(o, X, Y, n, &m);
            double zbest = (Y[ib] - m.mean) / m.sd, best_ei = -1;
            for (int32_t c = 0; c < o->n_cand; c++) {
                for (int32_t i = 0; i < d; i++)
                    q[i] = 2 * rng_unit(&r) - 1;
                double mu, sg;
                gp_post(o, &m, X, q, &mu, &sg);
                double ei = expected_improvement(zbest, mu, sg);
                if (ei > best_ei) {
                    best_ei = ei;
                    memcpy(bq, q, (size_t)d * sizeof *q);
                }
            }
            memcpy(x, bq, (size_t)d * sizeof *x);
        }
        if ((st = f(x, ctx, &Y[n], err)))
            return st;
        if (Y[n] < Y[ib])
            ib = n;
        n++;
    }
    memcpy(best_x, X + (size_t)ib * d, (size_t)d * sizeof *best_x);
    *best_y = Y[ib];
    if (xs)
        memcpy(xs, X, (size_t)n * d * sizeof *xs);
    if (ys)
        memcpy(ys, Y, (size_t)n * sizeof *ys);
    if (n_eval)
        *n_eval = n;
    return SA_OK;
}
