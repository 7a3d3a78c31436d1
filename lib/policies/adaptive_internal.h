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

/* Finishes p (bl_finish with extra) into *out; on failure frees p. */
sa_status ad_accept(rctx *r, sa_plan *p, const dec_stats *ds, const char *extra, sa_plan **out);

/* When keeping every tensor fits, that plan (finished, "kept_all" in its
 * search block) goes to *out; otherwise *out stays NULL. */
sa_status ad_keep_all_if_fits(rctx *r, const dec_opts *o, sa_plan **out);

#endif
