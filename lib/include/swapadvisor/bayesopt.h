/*
 * bayesopt.h - a small Bayesian optimiser over a box [-1, 1]^dim (AutoSwap's
 * weight tuning: SmartPool/AutoSwap, arXiv:1903.06631, sec. IV-C, which
 * follows Snoek et al. 2012).
 *
 * Model: a Gaussian process with a squared-exponential (RBF) kernel of fixed
 * length scale over the standardised observations, a small noise term on the
 * diagonal.  Acquisition: expected improvement (minimisation), maximised over
 * n_cand uniform random candidates per step.  The first evaluations are the
 * caller's given points (e.g. the unit vectors: each score alone), then
 * uniform random points, then one EI step per remaining evaluation.
 * Everything is drawn from one rng seeded by seed: the same seed and the same
 * objective give the same sequence of points.
 *
 * Ownership: the caller owns every array it passes; nothing is kept.
 */
#ifndef SWAPADVISOR_BAYESOPT_H
#define SWAPADVISOR_BAYESOPT_H

#include <stdint.h>

#include "swapadvisor/sa_common.h"

enum { BO_MAX_DIM = 8, BO_MAX_BUDGET = 64 };

typedef struct bo_opts {
    int32_t dim;           /* 1 .. BO_MAX_DIM */
    int32_t budget;        /* objective evaluations, 1 .. BO_MAX_BUDGET */
    int32_t n_random;      /* random points after the given ones, before EI */
    int32_t n_cand;        /* random candidates the EI is maximised over */
    double length_scale;   /* RBF length scale (the box has side 2) */
    double noise;          /* diagonal term, relative to the unit signal variance */
    uint64_t seed;
    const double *given;   /* n_given * dim points evaluated first, or NULL */
    int32_t n_given;
} bo_opts;

void bo_opts_default(bo_opts *o, int32_t dim);

/* The objective: *y for point x (dim entries); a non-OK status aborts. */
typedef sa_status (*bo_fn)(const double *x, void *ctx, double *y, sa_err *err);

/* Minimises f.  best_x (dim entries) and *best_y get the best point seen;
 * xs (budget * dim) and ys (budget), when not NULL, every point and value in
 * the order evaluated; *n_eval how many (may be NULL).  SA_EUSAGE on bad
 * options, SA_ENOMEM, or f's status. */
sa_status bo_minimize(const bo_opts *o, bo_fn f, void *ctx, double *best_x, double *best_y, double *xs, double *ys,
                      int32_t *n_eval, sa_err *err);

/* The GP posterior at q given n points x (n * dim) with values y: *mu and
 * *sigma in y's units (exposed for tests).  SA_EUSAGE when n < 1. */
sa_status bo_gp_predict(const bo_opts *o, const double *x, const double *y, int32_t n, const double *q, double *mu,
                        double *sigma, sa_err *err);

#endif
