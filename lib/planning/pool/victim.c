/* victim.c - which object of a class to empty (Belady or LRU): the heap holds a
 * current entry for every occupied object that has grown old, the young FIFO the
 * rest in order of use, so the best unpinned entry is found without a scan of the
 * class. */
#include "planning/pool/walk.h"

/* An object split between tensors goes as a whole, so it is as good a victim
 * as its worst tenant: the one needed soonest (Belady) or used last (LRU). */
uint64_t swp_split_entry(const ctx *c, int32_t o, uint64_t e)
{
    for (int32_t t = c->w->tnext[c->w->occ[o]]; t >= 0; t = c->w->tnext[t]) {
        uint64_t f = heap_entry(c, o, t);
        if (f < e)
            e = f;
    }
    return e;
}

static void sift_down(uint64_t *h, int32_t n, int32_t i, uint64_t e)
{
    for (;;) {
        int32_t l = 2 * i + 1, b = l;
        if (l >= n)
            break;
        if (l + 1 < n && h[l + 1] > h[l])
            b = l + 1;
        if (h[b] <= e)
            break;
        h[i] = h[b];
        i = b;
    }
    h[i] = e;
}

/* Removes the top of h[0 .. n] (n + 1 entries), leaving n: the hole at the
 * top follows the larger child down to a leaf (one comparison a level), and
 * the last entry rises from there.  The entries that stay and the order they
 * come out in are sift_down's; only equal entries may sit differently. */
static void pop_top(uint64_t *h, int32_t n)
{
    uint64_t e = h[n];
    int32_t i = 0;
    for (int32_t l = 1; l < n; l = 2 * i + 1) {
        int32_t b = l + 1 < n && h[l + 1] > h[l] ? l + 1 : l;
        h[i] = h[b];
        i = b;
    }
    while (i > 0 && e > h[(i - 1) / 2]) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

/* Keeps only the current entries of class k (once each) and re-heapifies. */
void swp_heap_compact(swp_ws *w, int32_t k)
{
    uint64_t *h = w->heap + w->hoff[k];
    int32_t n = 0;
    w->stamp++;
    for (int32_t i = 0; i < w->hlen[k]; i++) {
        int32_t o = entry_obj(h[i]);
        if (w->cur[o] == h[i] && w->mark[o] != w->stamp) {
            w->mark[o] = w->stamp;
            h[n++] = h[i];
        }
    }
    w->hlen[k] = n;
    for (int32_t i = n / 2 - 1; i >= 0; i--)
        sift_down(h, n, i, h[i]);
}

static inline bool old_enough(const ctx *c, int32_t lp, double now, double thr)
{
    return c->o->victim == SWP_LRU || lp < 0 || now - c->w->tprefix[lp + 1] >= thr;
}

/* Moves class k's objects that have grown old (every one under LRU) from
 * the front of its FIFO into its heap, with their keys now. */
static void heap_promote(ctx *c, int32_t k, double now, double thr)
{
    swp_ws *w = c->w;
    const uint64_t *q = w->yq + w->hoff[k];
    while (w->yhead[k] < w->ytail[k]) {
        uint64_t e = q[w->yhead[k]];
        int32_t o = entry_obj(e), lp = (int32_t)(e >> 32);
        if (w->yat[o] == lp) {
            if (!old_enough(c, lp, now, thr))
                break;
            w->yat[o] = -1;
            heap_push(c, o);
        }
        w->yhead[k]++;
    }
    if (w->yhead[k] == w->ytail[k])
        w->yhead[k] = w->ytail[k] = 0;
}

/* The best current entry of class k (stale ones surfacing are dropped); 0 if none. */
static inline __attribute__((always_inline)) uint64_t heap_top(swp_ws *w, int32_t k)
{
    uint64_t *h = w->heap + w->hoff[k];
    while (w->hlen[k] > 0) {
        uint64_t e = h[0];
        if (w->cur[entry_obj(e)] == e)
            return e;
        int32_t n = --w->hlen[k];
        if (n > 0)
            pop_top(h, n);
    }
    return 0;
}

/* Picks the victim object in class k, or -1 when every occupant is pinned.
 * Belady takes the best victim last used at least the threshold ago (the
 * heap's best unpinned entry), else the best unpinned young one; LRU the best
 * unpinned one (nothing stays young).  Pinned objects on top of the heap are
 * taken out for the moment and go back unchanged. */
static int32_t best_young(ctx *c, int32_t k)
{
    swp_ws *w = c->w;
    const uint64_t *q = w->yq + w->hoff[k];
    uint64_t best = 0;
    for (int32_t i = w->yhead[k]; i < w->ytail[k]; i++) {
        int32_t o = entry_obj(q[i]);
        if (w->yat[o] != (int32_t)(q[i] >> 32) || obj_pinned(c, o))
            continue;
        uint64_t e = obj_entry(c, o);
        if (e > best)
            best = e;
    }
    return best ? entry_obj(best) : -1;
}

int32_t swp_pick_victim(ctx *c, int32_t k)
{
    swp_ws *w = c->w;
    double now = w->tprefix[c->pos];
    heap_promote(c, k, now, w->thr[k]);
    int32_t best = -1, n = 0;
    for (uint64_t e = heap_top(w, k); e != 0; e = heap_top(w, k)) {
        int32_t o = entry_obj(e);
        if (!obj_pinned(c, o)) {
            best = o;
            break;
        }
        w->cur[o] = 0; /* pinned: out of the way until the pick is made */
        w->scratch[n++] = o;
    }
    for (int32_t i = 0; i < n; i++)
        heap_push(c, w->scratch[i]);
    return best >= 0 ? best : best_young(c, k);
}
