/* adaptive_internal.h - what the profile-guided baselines share
 * (adaptive.c defines these; autoswap and capuchin there, pooch in pooch.c).
 * Internal to lib/policies/: not installed, not stable. */
#ifndef SA_ADAPTIVE_INTERNAL_H
#define SA_ADAPTIVE_INTERNAL_H

#include "baselines_internal.h"

/* Timing settings, tried in order until a plan fits: asynchronous swap-outs
 * with automatic prefetch first, then synchronous swap-outs, then swap-ins
 * held back to 8, 4, 2, 1 ops before the use. */
enum { AD_N_TIMINGS = 6 };
/* *o = base with timing setting i (0 <= i < AD_N_TIMINGS). */
void ad_timing_opts(const dec_opts *base, int i, dec_opts *o);
/* Setting i as JSON members for a plan's search block (static string). */
const char *ad_timing_json(int i);

/* Time to rebuild tensor t by recomputation: its producer plus, recursively
 * (depth-limited), its inputs that r->act drops for recomputation too. */
double ad_recompute_us(const rctx *r, int32_t t, int depth);

/* One candidate: its gap between the last forward use (position lf) and the
 * next use (nx), the transfer times, and the positions [a, b] it is absent
 * from when swapped (the swap-out done, the swap-in not yet begun: a > b when
 * the transfers do not fit in the gap). */
typedef struct ad_cinfo {
    int32_t t, lf, nx, a, b;
    double bytes, xo, xi, doa;
} ad_cinfo;

/* AutoSwap's SWDOA (swdoa.c): picks the candidate of largest WDOA (w0[i], the
 * load area over positions lf + 1 .. nx - 1, each weighted by dur), takes
 * its bytes off the load over [a, b], and repeats on the updated load; the
 * k-th pick (from 0) of nc scores nc - k, written to score[i * stride].
 * SA_ENOMEM (through r) leaves score part-written. */
sa_status ad_swdoa(rctx *r, int32_t n, const double *dur, const double *w0, int32_t nc, const ad_cinfo *c,
                   double *score, size_t stride);

/* A max-heap of candidates by a value that only falls as picks are made (swdoa.c):
 * the stored values are upper bounds, so re-valuing the top and letting it sink
 * while a stored bound still beats it yields the greedy order exactly.  ad_above
 * orders by w, then the lower index: the greedy's tie-break.  SWDOA and
 * capuchin's MSPS order use it. */
typedef struct ad_went {
    double w;
    int32_t i;
} ad_went;
bool ad_above(ad_went x, ad_went y);
/* h holds at least *n + 1 entries. */
void ad_heap_push(ad_went *h, int32_t *n, ad_went x);
/* *n > 0. */
ad_went ad_heap_pop(ad_went *h, int32_t *n);
/* The top's value falls to w (n > 0): true when it stays the top, else it
 * sinks to its place. */
bool ad_heap_lower_top(ad_went *h, int32_t n, double w);

/* Finishes p (bl_finish with extra) into *out; on failure frees p. */
sa_status ad_accept(rctx *r, sa_plan *p, const dec_stats *ds, const char *extra, sa_plan **out);

/* When keeping every tensor fits, that plan (finished, "kept_all" in its
 * search block) goes to *out; otherwise *out stays NULL. */
sa_status ad_keep_all_if_fits(rctx *r, const dec_opts *o, sa_plan **out);

#endif
