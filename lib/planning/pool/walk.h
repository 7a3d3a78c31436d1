/*
 * walk.h - the size-class pool walk's state (swp.h) and its hot helpers,
 * inline: the workspace, one run's context, the victim heap's entries, and
 * placing a tensor in or closing it out of an object.  Internal to
 * lib/planning/pool.
 *
 * Invariant: between two ops, every resident tensor t sits in object
 * obj_of[t] (occ[] lists each object's tenants), every occupied object has
 * exactly one current entry, in its class's victim heap (cur[o]) or in its
 * class's young FIFO (yat[o]), and every free object is in its class's free
 * FIFO exactly once.
 *
 * The files of the walk, each one job: workspace.c (allocation), victim.c
 * (the heap and the young FIFO: which object to empty), place.c (which object
 * a tensor takes), transfer.c (evictions as nodes; swap-ins and a writer's
 * deps are the inline helpers here), rebuild.c (recomputation inside the
 * walk, with the shared rules of recompute.h), pass.c (one op at a time, the
 * passes, swp_plan).
 */
#ifndef SA_PLANNING_POOL_WALK_H
#define SA_PLANNING_POOL_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/swp.h"
#include "planning/build.h"

struct swp_ws {
    int32_t n_ops, n_tensors;
    /* per schedule */
    int32_t *use_off, *use_pos; /* CSR: positions in the schedule where a tensor is used */
    double *tprefix;            /* compute time before each position */
    /* per pass, per tensor */
    int32_t *cursor, *obj_of, *last_use_node, *last_use_pos, *host_ready, *place_begin, *pin;
    int32_t *prev_end;          /* end node of the tensor's last closed placement, or -1 */
    unsigned char *host_valid, *wasted;
    int32_t *s_obj, *e_obj;     /* persistent tensors resident at start / end (object or -1) */
    /* per object */
    int32_t cap_obj;
    int32_t *occ, *free_after, *fq, *fq_head, *fq_len; /* fq: FIFO of free objects per class */
    /* Occupied objects of each class whose tensor was last used at least the
     * recency threshold ago ("old": usable Belady victims) sit in a binary
     * max-heap of entries (see heap_entry: key and object in one integer),
     * best victim on top.  A key changes only when its tensor is used, so
     * picking a victim looks at a few entries instead of scanning the class
     * (thousands of objects in the RNNs).  Updates are lazy: a removal just
     * forgets the object's current entry (cur[o]); stale entries are dropped
     * when they surface or when a full heap is compacted.  Class k's heap is
     * heap[hoff[k] .. hoff[k] + hlen[k]), with room for 2 cnt[k] + 16. */
    uint64_t *heap, *cur;
    int32_t *hoff, *hlen, *scratch, *ocls, *mark, stamp;
    /* A used object is "young" until the threshold has passed since its use:
     * it waits in its class's FIFO yq[hoff[k] + yhead[k] .. + ytail[k]) as
     * (position << 32 | object), in the order of use, so the entries that
     * have grown old are always at the front.  A pick first moves those into
     * the heap; young objects never enter it, so the best entry on top is
     * usable unless the running op pins it.  yat[o] is the position of o's
     * current FIFO entry (-1: not young); older entries of o are stale.  A
     * tensor used by many ops in a row enters the heap once, not per use. */
    uint64_t *yq;
    int32_t *yhead, *ytail, *yat;
    /* Splitting (the last resort, see swp_place_split; and share): an object
     * may hold several tensors, a list from occ[o] through tnext, each at toff bytes
     * into it.  Its "period" runs from the first tenant's arrival to the last
     * one's departure; pe[o * POOL_SPLIT_MAX ..] keeps the ends of tenants
     * that left during it (pe_n), and once it empties the next tenants wait
     * for all of them: free_after[o] and fx[o * POOL_SPLIT_MAX ..] (nfx). */
    int32_t *tnext, *fresh;     /* per tensor; fresh: position where swp_place_split took its object */
    unsigned char *away;        /* per tensor: AT_HOME, BORROWED or SPLIT (below) */
    int64_t *toff;              /* tnext and toff are -1 and 0 unless away is SPLIT */
    int32_t *pe, *pe_n, *fx, *nfx;
    int64_t *pe_lo, *pe_hi;     /* the bytes [lo, hi) of the object each pe entry's tenant held */
    unsigned char *tight;       /* per op: its tensors outnumber the objects that could hold them */
    int32_t *top_size;          /* per op: the largest size index among its tensors */
    /* per tensor, flat copies of what the hot loops read from sa_dfg_tensor:
     * its class in this run's pool, and whether it is persistent */
    int32_t *tcls;
    unsigned char *tpers, *tin; /* tin: the tensor is a graph input */
    double *thr;                /* per class: the Belady recency threshold, us */
    int32_t *ord, *sobj, *sten, *kused; /* swp_place_split / swp_fits_whole scratch; kused per class */
    int64_t *scap, *stop;
    int64_t cap_heap;
    int32_t *deps;              /* scratch for one node's deps */
    int32_t cap_deps;
    int64_t cap_uses;           /* use_pos's room: real uses plus virtual ones */
    /* Recomputation (swp_opts.recompute), per tensor: the flag as carried
     * out (rcm), dropped and not rebuilt yet (gone), its last forward
     * position, its next use after that, its chain depth; per op its
     * position.  A recompute at position i reads its producer's inputs
     * there: those "virtual uses" are listed by position (vu_off / vu_t,
     * CSR) and enter use_pos beside the real ones.  vp / vt collect them
     * unsorted, wl and cmark are the chain closure's scratch.  hold counts
     * the recompute calls under way that read a tensor (it may not be
     * dropped before they have run). */
    unsigned char *rcm, *gone;
    int32_t *hold;
    int32_t *lfwd, *rnx, *rdepth, *opos, *cmark, *wl;
    int32_t *vu_off, *vu_t, *vp, *vt;
    int64_t cap_vu, n_vu;
    /* whether the last swp_plan's first pass was already steady (see "dry
     * pass" in swp_plan): then the next one builds its first pass's plan */
    bool p1_steady;
};

/* Grows the array *pp to n elements of elem bytes; false (and *pp unchanged) on OOM. */
static inline bool swp_grow(void *pp, size_t n, size_t elem)
{
    void *q = realloc(*(void **)pp, n * elem);
    if (q)
        *(void **)pp = q;
    return q != NULL;
}

/* Everything one planning run needs, so the helpers take one argument. */
typedef struct ctx {
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    const int32_t *sch;
    const pool_alloc *a;
    const swp_opts *o;
    swp_ws *w;
    sa_plan *p;
    sa_err *err;
    int32_t pos;          /* schedule position being planned */
    int32_t demand_node;  /* compute node of the previous op (odswap) */
    int32_t pin_key;      /* tensors with pin[t] == pin_key may not be evicted: pos while
                           * an op is planned, a key of its own for each recompute */
    int32_t rc_key;       /* the last recompute's key (> n_ops) */
    bool rc_on;           /* some tensor is recomputed (swp_opts.recompute) */
    bool dry;             /* a dry pass: decisions only, no plan (see swp_plan) */
    int32_t n_dry;        /* a dry pass's node count: its stand-in node ids */
    sa_deadline dl;       /* swp_opts.deadline_s, counted in positions walked */
} ctx;

static inline int32_t class_of(const ctx *c, int32_t t) { return c->w->tcls[t]; }

/* Where a resident tensor sits: alone at the start of an object of its own
 * class; alone in an object of a larger class; or in an object split this
 * period (beside other tensors, or once beside them). */
enum { AT_HOME, BORROWED, SPLIT };

static inline bool node_on_compute(const sa_plan *p, int32_t v)
{
    return v >= 0 && sa_plan_kind_stream(p->nodes[v].kind) == SA_PLAN_STREAM_COMPUTE;
}

/* sa_plan_add_node, or in a dry pass a stand-in id (the walk's decisions read
 * node ids only as "some node" (>= 0), never their values). */
static inline int32_t add_node(ctx *c, sa_plan_kind kind, int32_t ref, const int32_t *deps, int32_t nd)
{
    return c->dry ? c->n_dry++ : sa_plan_add_node(c->p, kind, ref, deps, nd);
}

/* Next position (possibly in the next iteration) where t is used. */
static inline int64_t next_use(const ctx *c, int32_t t)
{
    const swp_ws *w = c->w;
    if (w->cursor[t] < w->use_off[t + 1])
        return w->use_pos[w->cursor[t]];
    if (w->use_off[t + 1] > w->use_off[t])
        return (int64_t)c->g->n_ops + w->use_pos[w->use_off[t]];
    return INT64_MAX / 2;
}

/* The heap entry of object o holding tensor t: a larger entry is a better
 * victim.  The high word is the key (Belady: the next use, later is better;
 * LRU: the last use, earlier is better), the low word favours lower object ids
 * on ties, as a scan from the first object would. */
static inline uint64_t heap_entry(const ctx *c, int32_t o, int32_t t)
{
    int64_t key = c->o->victim == SWP_LRU ? -(int64_t)c->w->last_use_pos[t] : next_use(c, t);
    if (key > INT32_MAX)
        key = INT32_MAX; /* never used again */
    return (uint64_t)(key + 2147483648LL) << 32 | (uint32_t)(UINT32_MAX - (uint32_t)o);
}

static inline int32_t entry_obj(uint64_t e) { return (int32_t)(UINT32_MAX - (uint32_t)e); }

/* The entry of an object split between tensors: its worst tenant's (victim.c). */
uint64_t swp_split_entry(const ctx *c, int32_t o, uint64_t e);

static inline uint64_t obj_entry(const ctx *c, int32_t o)
{
    int32_t t = c->w->occ[o];
    uint64_t e = heap_entry(c, o, t);
    return c->w->away[t] != SPLIT ? e : swp_split_entry(c, o, e);
}

static inline bool obj_pinned(const ctx *c, int32_t o)
{
    int32_t t = c->w->occ[o];
    if (c->w->away[t] != SPLIT)
        return c->w->pin[t] == c->pin_key;
    for (; t >= 0; t = c->w->tnext[t])
        if (c->w->pin[t] == c->pin_key)
            return true;
    return false;
}

/* Drops class k's stale and repeated heap entries and re-heapifies (victim.c). */
void swp_heap_compact(swp_ws *w, int32_t k);

static inline __attribute__((always_inline)) void push_entry(swp_ws *w, int32_t k, uint64_t e)
{
    if (w->hoff[k] + w->hlen[k] == w->hoff[k + 1])
        swp_heap_compact(w, k); /* full: at most cnt[k] current entries survive */
    uint64_t *h = w->heap + w->hoff[k];
    int32_t i = w->hlen[k]++;
    while (i > 0 && e > h[(i - 1) / 2]) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

/* Object o (re)enters its class heap with its tensor's current key. */
static inline __attribute__((always_inline)) void heap_push(ctx *c, int32_t o)
{
    swp_ws *w = c->w;
    uint64_t e = obj_entry(c, o);
    w->cur[o] = e;
    push_entry(w, w->ocls[o], e);
}

/* Object o's tensor was used (or just placed) at the current position: its
 * heap entry is forgotten and it waits, young, at the back of its class's
 * FIFO.  A full FIFO first drops its stale and repeated entries (at most
 * cnt[k] survive, and it has room for 2 cnt[k] + 16). */
static inline __attribute__((always_inline)) void heap_defer(ctx *c, int32_t o)
{
    swp_ws *w = c->w;
    w->cur[o] = 0;
    if (w->yat[o] == c->pos)
        return;
    int32_t k = w->ocls[o];
    uint64_t *q = w->yq + w->hoff[k];
    if (w->ytail[k] == w->hoff[k + 1] - w->hoff[k]) {
        /* An object that left (yat -1) and came back at the same position
         * has two entries that both look current: keep the first only. */
        int32_t n = 0;
        w->stamp++;
        for (int32_t i = w->yhead[k]; i < w->ytail[k]; i++) {
            int32_t ob = entry_obj(q[i]);
            if (w->yat[ob] == (int32_t)(q[i] >> 32) && w->mark[ob] != w->stamp) {
                w->mark[ob] = w->stamp;
                q[n++] = q[i];
            }
        }
        w->yhead[k] = 0;
        w->ytail[k] = n;
    }
    w->yat[o] = c->pos;
    q[w->ytail[k]++] = (uint64_t)c->pos << 32 | (uint32_t)(UINT32_MAX - (uint32_t)o);
}

static inline void heap_remove(ctx *c, int32_t o) { c->w->cur[o] = 0; }

sa_status swp_oom(ctx *c);

/* Closes t's current placement at node `end`; its object is free once its
 * last tenant has left (occ[o] < 0), and the next tenants wait for every
 * tenant of the period that ended. */
static inline __attribute__((always_inline)) sa_status close_placement(ctx *c, int32_t t, int32_t end)
{
    swp_ws *w = c->w;
    int32_t o = w->obj_of[t];
    if (!c->dry && !sa_plan_add_placement(c->p, t, c->a->obj_offset[o] + w->toff[t], w->place_begin[t], end))
        return swp_oom(c);
    if (w->away[t] != SPLIT || (w->occ[o] == t && w->tnext[t] < 0)) { /* the last tenant */
        int32_t n = w->away[t] == SPLIT ? w->pe_n[o] : 0; /* no one left before it otherwise */
        if (n > 0) {
            memcpy(w->fx + (size_t)o * POOL_SPLIT_MAX, w->pe + (size_t)o * POOL_SPLIT_MAX, (size_t)n * sizeof *w->fx);
            w->pe_n[o] = 0;
        }
        w->nfx[o] = n;
        heap_remove(c, o);
        w->yat[o] = -1;
        w->occ[o] = -1;
        w->free_after[o] = end;
    } else {
        int32_t *pp = &w->occ[o];
        while (*pp != t)
            pp = &w->tnext[*pp];
        *pp = w->tnext[t];
        if (w->pe_n[o] == POOL_SPLIT_MAX)
            return sa_fail(c->err, SA_EINTERNAL, "planner: object %d had more than %d tensors", o, POOL_SPLIT_MAX);
        size_t j = (size_t)o * POOL_SPLIT_MAX + w->pe_n[o]++;
        w->pe[j] = end;
        w->pe_lo[j] = w->toff[t];
        w->pe_hi[j] = w->toff[t] + c->g->tensors[t].bytes;
        heap_defer(c, o); /* its key may have changed */
    }
    if (w->away[t] == SPLIT) {
        w->toff[t] = 0;
        w->tnext[t] = -1;
    }
    w->away[t] = AT_HOME;
    w->prev_end[t] = end;
    w->obj_of[t] = -1;
    return SA_OK;
}

/* The oldest free object of class k (fq_len[k] > 0) leaves its FIFO. */
static inline int32_t fq_pop(swp_ws *w, const pool_alloc *a, int32_t k)
{
    int32_t o = w->fq[a->first_obj[k] + w->fq_head[k]];
    w->fq_head[k] = w->fq_head[k] + 1 == a->cnt[k] ? 0 : w->fq_head[k] + 1;
    w->fq_len[k]--;
    return o;
}

/* t alone at the start of object o; it enters the heap once the op is planned. */
static inline void settle(ctx *c, int32_t t, int32_t o)
{
    swp_ws *w = c->w;
    w->occ[o] = t;
    w->obj_of[t] = o;
    w->away[t] = w->ocls[o] == class_of(c, t) ? AT_HOME : BORROWED;
}

/* acquire's slow path: evicting, sharing, borrowing (place.c). */
sa_status swp_acquire_slow(ctx *c, const sa_dfg_op *op, int32_t t, int32_t *obj);

/* swp_acquire_slow with its common case inline: a free object of t's class. */
static inline __attribute__((always_inline)) sa_status acquire(ctx *c, const sa_dfg_op *op, int32_t t, int32_t *obj)
{
    swp_ws *w = c->w;
    int32_t k = class_of(c, t);
    if (w->fq_len[k] == 0)
        return swp_acquire_slow(c, op, t, obj);
    *obj = fq_pop(w, c->a, k);
    settle(c, t, *obj);
    return SA_OK;
}

static inline void release(ctx *c, int32_t o)
{
    swp_ws *w = c->w;
    int32_t k = w->ocls[o], span = c->a->cnt[k];
    int32_t i = w->fq_head[k] + w->fq_len[k]; /* a ring of span slots */
    w->fq[c->a->first_obj[k] + (i >= span ? i - span : i)] = o;
    w->fq_len[k]++;
}

/* Every node t, a new tenant of object o, waits for (the ends of the tenants
 * of its last period; joining o during a period, those of the tenants that
 * left it this period where they overlap t), unless on the compute stream
 * (in order anyway) when compute_too is false. */
static inline void add_obj_deps(ctx *c, int32_t *deps, int32_t *nd, int32_t o, int32_t t, bool compute_too)
{
    swp_ws *w = c->w;
    if (c->dry)
        return; /* no plan: no deps */
    int64_t lo = w->toff[t], hi = lo + c->g->tensors[t].bytes;
    if (compute_too || !node_on_compute(c->p, w->free_after[o]))
        bld_add_dep(deps, nd, w->free_after[o]);
    for (int32_t i = 0; i < w->nfx[o]; i++) {
        int32_t v = w->fx[(size_t)o * POOL_SPLIT_MAX + i];
        if (compute_too || !node_on_compute(c->p, v))
            bld_add_dep(deps, nd, v);
    }
    for (int32_t i = 0; i < w->pe_n[o]; i++) {
        size_t j = (size_t)o * POOL_SPLIT_MAX + i;
        if (w->pe_lo[j] < hi && lo < w->pe_hi[j] && (compute_too || !node_on_compute(c->p, w->pe[j])))
            bld_add_dep(deps, nd, w->pe[j]);
    }
}

/* A swap-in of t into object obj waits for the object to be free, for the
 * host copy to be current (t's swap-out), and for t's previous placement to
 * end: a clean tensor dropped after its last reader must not be on the device
 * twice, as it would be if its swap-in overtook that reader.  -1 on OOM. */
static inline int32_t add_swap_in(ctx *c, int32_t t, int32_t obj)
{
    int32_t sd[3 + 2 * POOL_SPLIT_MAX], n = 0;
    if (c->dry)
        return c->n_dry++;
    add_obj_deps(c, sd, &n, obj, t, true);
    bld_add_dep(sd, &n, c->w->host_ready[t]);
    bld_add_dep(sd, &n, c->w->prev_end[t]);
    return sa_plan_add_node(c->p, SA_PLAN_SWAP_IN, t, sd, n);
}

/* Swaps t into obj for the node being built: the swap-in places t from its
 * start, and the node (deps, *nd) waits for it. */
static inline sa_status swap_in_for_node(ctx *c, int32_t t, int32_t obj, int32_t *deps, int32_t *nd)
{
    int32_t si = add_swap_in(c, t, obj);
    if (si < 0)
        return swp_oom(c);
    c->w->place_begin[t] = si;
    bld_add_dep(deps, nd, si);
    return SA_OK;
}

/* victim.c */
int32_t swp_pick_victim(ctx *c, int32_t k);

/* place.c */
bool swp_fits_whole(ctx *c, int32_t op);
bool swp_fits_whole_now(ctx *c, const sa_dfg_op *o);
sa_status swp_place_split(ctx *c, const sa_dfg_op *o);

/* transfer.c */
sa_status swp_evict_tensor(ctx *c, int32_t v);
sa_status swp_evict(ctx *c, int32_t o);

/* rebuild.c */
bool swp_redrop(const ctx *c, int32_t v);
sa_status swp_plan_recomputes(ctx *c, const sa_dfg_op *o);
bool swp_prep_recompute(ctx *c);

/* workspace.c */
bool swp_reserve_objects(swp_ws *w, const pool_alloc *a);

#endif
