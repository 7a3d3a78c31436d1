/*
 * fitidx.h - the best-fit index behind pack.c (SmartPool's packing), internal
 * to lib/planning.
 *
 * Blocks are rectangles: an offset range [off, off + size) in the arena and
 * one or two lifetimes, half-open ranges [s, a) of integer time points.  Two
 * blocks conflict when some lifetime of one meets some lifetime of the other
 * (s0 < a1 && s1 < a0).  fit_find answers, for a new block, where best fit
 * puts it among the blocks inserted so far that conflict with it: the union
 * of their offset ranges leaves free segments below its top end; the new
 * block takes the lowest of the smallest free segments that hold it, else
 * the top end (0 when nothing conflicts).  That is exactly what walking the
 * conflicting blocks in offset order does (pack.c's former scan: the hole
 * before each block, between the highest end so far and its offset), with
 * sizes > 0.
 *
 * The index is a segment tree over time points.  A lifetime is stored at its
 * O(log T) canonical nodes (cov: blocks covering the whole node) and noted in
 * every ancestor of them (sub: blocks stored in the node's subtree); each
 * node keeps the union of those blocks' offset ranges as a sorted list of
 * disjoint segments.  A query reads the sub lists of its own canonical nodes
 * and the cov lists of their ancestors (exactly the blocks that meet it) and
 * walks their segments in offset order through a heap of the lists,
 * stopping at the first exact fit (nothing higher can beat it).  An insert
 * stops climbing a side of the tree at the first ancestor whose sub already
 * covered the block's range (every higher one does).  From height 7 to 9
 * the cov lists along a root-to-leaf path are kept merged per height-6 node
 * (pc): an insert at a canonical node in that band adds its range to the pc
 * of each of its height-6 descendants (8 at most), and a query reads two pc
 * lists instead of one cov list per level there; above it, one cov list per
 * level (a pc up to the root cost a long lifetime an insert per 64 leaves it
 * covered: quadratic on a long chain).  Unions of packed blocks have few segments
 * (on brnn-4-8k a query met about 70 in some 15 lists before the pc unions,
 * 19 once merged), so a block costs O(log T) short lists, not a walk over
 * every block placed.
 *
 * Ownership: a fit_ws is the caller's (fit_ws_free); its buffers grow on
 * demand and are kept across fit_reset, so a workspace reused over many
 * packings stops allocating once it has seen the largest.
 */
#ifndef SA_PLANNING_FITIDX_H
#define SA_PLANNING_FITIDX_H

#include <stdint.h>

#include "swapadvisor/sa_common.h"

typedef struct fit_ws fit_ws;

/* NULL on out of memory. */
fit_ws *fit_ws_new(void);
void fit_ws_free(fit_ws *w);

/* Empties w for time points lo .. hi - 1 (lo < hi).  SA_ENOMEM leaves w
 * empty for its previous range. */
sa_status fit_reset(fit_ws *w, int32_t lo, int32_t hi, sa_err *err);

/* Best fit's offset for a block of size bytes (> 0) living over [s[k], a[k])
 * for k < n (n = 1 or 2; lo <= s[k] < a[k] <= hi) among the blocks inserted
 * since the reset.  Allocates nothing. */
int64_t fit_find(fit_ws *w, int64_t size, const int32_t *s, const int32_t *a, int n);

/* Steps fit_find took since the reset: a segment visited, or a step of the
 * galloping search that skips a list's segments lying wholly below the walk's
 * cursor (at least one per query that met a block): the packing's cost, which
 * grows with how fragmented the unions are, not only with the number of
 * blocks. */
int64_t fit_work(const fit_ws *w);

/* Records a block at [off, off + size) over the same lifetimes as fit_find.
 * SA_ENOMEM leaves w unusable until the next fit_reset. */
sa_status fit_insert(fit_ws *w, int64_t off, int64_t size, const int32_t *s, const int32_t *a, int n, sa_err *err);

#endif
