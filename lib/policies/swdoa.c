/* swdoa.c - AutoSwap's SWDOA score (adaptive.c) in O((candidates + picks)
 * log positions) rather than a prefix rebuild per pick.  A candidate's WDOA
 * is the load area between its accesses; each pick takes its absence off the
 * load, so every WDOA only falls.  The stored values are therefore upper
 * bounds, and a max-heap of them with lazy re-evaluation (the top's current
 * value from a Fenwick tree of the load's range updates, picked when it
 * still beats every stored bound) gives the greedy order exactly: the
 * largest current WDOA, the lower index on a tie.  The heap
 * (adaptive_internal.h) serves capuchin's MSPS order too. */
#include <stdlib.h>

#include "adaptive_internal.h"

bool ad_above(ad_went x, ad_went y)
{
    return x.w > y.w || (x.w == y.w && x.i < y.i);
}

void ad_heap_push(ad_went *h, int32_t *n, ad_went x)
{
    int32_t c = (*n)++;
    while (c > 0 && ad_above(x, h[(c - 1) / 2])) {
        h[c] = h[(c - 1) / 2];
        c = (c - 1) / 2;
    }
    h[c] = x;
}

/* Moves x down from slot c of h[0 .. n) to where it belongs. */
static void sift_down(ad_went *h, int32_t n, int32_t c, ad_went x)
{
    for (;;) {
        int32_t k = 2 * c + 1;
        if (k >= n)
            break;
        if (k + 1 < n && ad_above(h[k + 1], h[k]))
            k++;
        if (!ad_above(h[k], x))
            break;
        h[c] = h[k];
        c = k;
    }
    h[c] = x;
}

ad_went ad_heap_pop(ad_went *h, int32_t *n)
{
    ad_went top = h[0];
    if (--*n > 0)
        sift_down(h, *n, 0, h[*n]);
    return top;
}

bool ad_heap_lower_top(ad_went *h, int32_t n, double w)
{
    ad_went x = {w, h[0].i};
    bool stays = !(n > 1 && ad_above(h[1], x)) && !(n > 2 && ad_above(h[2], x));
    sift_down(h, n, 0, x);
    return stays;
}

/* Fenwick trees over positions 0 .. n: a range update of the load by v over
 * [a, b] changes the weighted prefix F(x) = sum over p < x of load[p] dur[p]
 * by v (S(x) - S(a)) inside and v (S(b + 1) - S(a)) past it, S the prefix of
 * dur; F(x) = S(x) f1(x) - f2(x), both prefix sums of point updates. */
typedef struct fen {
    int32_t n;
    double *f1, *f2;
    const double *S;
} fen;

static void fen_add(double *f, int32_t n, int32_t i, double v)
{
    for (int32_t k = i + 1; k <= n + 1; k += k & -k)
        f[k] += v;
}

/* The load over positions a .. b changes by v. */
static void fen_range_add(fen *F, int32_t a, int32_t b, double v)
{
    fen_add(F->f1, F->n, a, v);
    fen_add(F->f2, F->n, a, v * F->S[a]);
    fen_add(F->f1, F->n, b + 1, -v);
    fen_add(F->f2, F->n, b + 1, -v * F->S[b + 1]);
}

static double fen_sum(const double *f, int32_t x) /* over indices < x */
{
    double s = 0;
    for (int32_t k = x; k > 0; k -= k & -k)
        s += f[k];
    return s;
}

static double fen_prefix(const fen *F, int32_t x)
{
    return F->S[x] * fen_sum(F->f1, x) - fen_sum(F->f2, x);
}

sa_status ad_swdoa(rctx *r, int32_t n, const double *dur, const double *w0, int32_t nc, const ad_cinfo *c,
                   double *score, size_t stride)
{
    double *S = malloc(((size_t)n + 2) * sizeof *S);
    double *f1 = calloc((size_t)n + 3, sizeof *f1), *f2 = calloc((size_t)n + 3, sizeof *f2);
    ad_went *h = malloc(((size_t)nc + 1) * sizeof *h);
    if (!S || !f1 || !f2 || !h) {
        free(S);
        free(f1);
        free(f2);
        free(h);
        return bl_oom(r);
    }
    S[0] = 0;
    for (int32_t p = 0; p <= n; p++)
        S[p + 1] = S[p] + (p < n ? dur[p] : 0);
    fen F = {n, f1, f2, S};
    int32_t nh = 0;
    for (int32_t i = 0; i < nc; i++)
        ad_heap_push(h, &nh, (ad_went){w0[i], i});
    for (int32_t rank = 0; rank < nc;) {
        const ad_cinfo *ci = &c[h[0].i];
        double w = w0[h[0].i] + fen_prefix(&F, ci->nx) - fen_prefix(&F, ci->lf + 1);
        if (!ad_heap_lower_top(h, nh, w))
            continue; /* a bound above it may still be a larger value */
        ad_went x = ad_heap_pop(h, &nh);
        score[(size_t)x.i * stride] = (double)(nc - rank++);
        if (ci->a <= ci->b)
            fen_range_add(&F, ci->a, ci->b, -ci->bytes);
    }
    free(S);
    free(f1);
    free(f2);
    free(h);
    return SA_OK;
}
