/* swp.c - the swap planner: Belady/LRU eviction over a size-class pool, swap
 * timing through control edges, and the steady-state passes. */
#include "swapadvisor/swp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/sim.h"
#include "build.h"

void swp_opts_default(swp_opts *o)
{
    o->victim = SWP_BELADY;
    o->on_demand = false;
    o->threshold_scale = 1.0;
    o->max_passes = 3;
    o->recompute = NULL;
}

/* Whether the default rule may rebuild t at position p (swp_recompute_rule):
 * a forward activation whose producer may be re-run then and takes at most
 * us_per_mb per MB of t, whose non-persistent inputs are live at p or may
 * be rebuilt in turn (flagged in out), depth links deep at most; *cost
 * receives the chain's compute time. */
static bool rule_ok(const dfg_graph *g, const int32_t *pos, double us_per_mb, int32_t t, int32_t p, int depth,
                    double *cost, uint8_t *out)
{
    const dfg_tensor *x = &g->tensors[t];
    if (depth > SWP_RECOMPUTE_CHAIN_MAX || x->kind != DFG_ACTIVATION || x->producer < 0 ||
        g->ops[x->producer].phase != DFG_FORWARD)
        return false;
    const dfg_op *po = &g->ops[x->producer];
    double tu = po->time_us > 0 ? po->time_us : 0;
    if (tu > us_per_mb * ((double)x->bytes / 1e6) || !dec_recompute_ok(g, pos, t, p))
        return false; /* the cheap test first: neither has side effects */
    *cost += tu;
    for (int32_t j = 0; j < po->n_in; j++) {
        int32_t u = po->in[j], first, last;
        if (dfg_kind_persistent(g->tensors[u].kind) || (dfg_tensor_span(g, pos, u, &first, &last) && last >= p))
            continue; /* there anyway */
        if (!rule_ok(g, pos, us_per_mb, u, p, depth + 1, cost, out))
            return false;
        out[u] = 1; /* an intermediate of the chain */
    }
    return true;
}

int32_t swp_recompute_rule(const dfg_graph *g, const dfg_device *dev, const int32_t *schedule, double us_per_mb,
                           int32_t *pos, uint8_t *out)
{
    const int32_t *sch = schedule ? schedule : g->topo;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        pos[sch[i]] = i;
    for (int32_t t = 0; t < g->n_tensors; t++)
        out[t] = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t lf, nx, po = g->tensors[t].producer;
        double cost = 0;
        if (g->tensors[t].kind != DFG_ACTIVATION || po < 0 || g->ops[po].phase != DFG_FORWARD)
            continue; /* rule_ok refuses it at once */
        double tu = g->ops[po].time_us > 0 ? g->ops[po].time_us : 0;
        if (tu > us_per_mb * ((double)g->tensors[t].bytes / 1e6))
            continue; /* so does its cost test, whatever the gap */
        dec_gap(g, pos, t, &lf, &nx);
        if (lf < 0 || nx < 0 || !rule_ok(g, pos, us_per_mb, t, nx, 1, &cost, out))
            continue;
        int64_t b = g->tensors[t].bytes;
        if (cost < sim_transfer_alone_us(dev, b, PLAN_STREAM_D2H) + sim_transfer_alone_us(dev, b, PLAN_STREAM_H2D)) {
            out[t] = 1;
            n++;
        }
    }
    return n;
}

int32_t swp_recompute_intermediates(const dfg_graph *g, const int32_t *pos, uint8_t *out)
{
    int32_t n = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const dfg_tensor *x = &g->tensors[t];
        int32_t p = x->producer;
        if (out[t] || x->kind != DFG_ACTIVATION || p < 0 || g->ops[p].phase != DFG_FORWARD)
            continue;
        /* dec_gap's last forward use lf (>= the producer's position) and
         * whether some use follows it, in one walk over the readers */
        int32_t lf = pos[p], last = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t op = g->readers[x->reader_off + k], q = pos[op];
            if (g->ops[op].phase == DFG_FORWARD && q > lf)
                lf = q;
            if (q > last)
                last = q;
        }
        if (last <= lf) {
            out[t] = 1;
            n++;
        }
    }
    return n;
}

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
    /* Splitting (the last resort, see place_split; and share): an object
     * may hold several tensors, a list from occ[o] through tnext, each at toff bytes
     * into it.  Its "period" runs from the first tenant's arrival to the last
     * one's departure; pe[o * POOL_SPLIT_MAX ..] keeps the ends of tenants
     * that left during it (pe_n), and once it empties the next tenants wait
     * for all of them: free_after[o] and fx[o * POOL_SPLIT_MAX ..] (nfx). */
    int32_t *tnext, *fresh;     /* per tensor; fresh: position where place_split took its object */
    unsigned char *away;        /* per tensor: AT_HOME, BORROWED or SPLIT (below) */
    int64_t *toff;              /* tnext and toff are -1 and 0 unless away is SPLIT */
    int32_t *pe, *pe_n, *fx, *nfx;
    int64_t *pe_lo, *pe_hi;     /* the bytes [lo, hi) of the object each pe entry's tenant held */
    unsigned char *tight;       /* per op: its tensors outnumber the objects that could hold them */
    int32_t *top_size;          /* per op: the largest size index among its tensors */
    /* per tensor, flat copies of what the hot loops read from dfg_tensor:
     * its class in this run's pool, and whether it is persistent */
    int32_t *tcls;
    unsigned char *tpers, *tin; /* tin: the tensor is a graph input */
    double *thr;                /* per class: the Belady recency threshold, us */
    int32_t *ord, *sobj, *sten, *kused; /* place_split / fits_whole scratch; kused per class */
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

swp_ws *swp_ws_new(const dfg_graph *g)
{
    swp_ws *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    size_t nt = (size_t)g->n_tensors + 1, no = (size_t)g->n_ops + 1, uses = 1;
    for (int32_t i = 0; i < g->n_ops; i++)
        uses += (size_t)g->ops[i].n_use;
    int32_t maxuse = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].n_use > maxuse)
            maxuse = g->ops[i].n_use;
    w->n_ops = g->n_ops;
    w->n_tensors = g->n_tensors;
    w->use_off = calloc(nt + 1, sizeof(int32_t));
    w->use_pos = calloc(uses, sizeof(int32_t));
    w->tprefix = calloc(no + 1, sizeof(double));
    w->cursor = calloc(nt, sizeof(int32_t));
    w->obj_of = calloc(nt, sizeof(int32_t));
    w->last_use_node = calloc(nt, sizeof(int32_t));
    w->last_use_pos = calloc(nt, sizeof(int32_t));
    w->host_ready = calloc(nt, sizeof(int32_t));
    w->place_begin = calloc(nt, sizeof(int32_t));
    w->pin = calloc(nt, sizeof(int32_t));
    w->prev_end = calloc(nt, sizeof(int32_t));
    w->host_valid = calloc(nt, 1);
    w->wasted = calloc(nt, 1);
    w->s_obj = calloc(nt, sizeof(int32_t));
    w->e_obj = calloc(nt, sizeof(int32_t));
    w->cap_deps = (2 * POOL_SPLIT_MAX + 3) * maxuse + 8;
    w->deps = calloc((size_t)w->cap_deps, sizeof(int32_t));
    w->fq_head = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->fq_len = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->hlen = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->hoff = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->yhead = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->kused = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->thr = calloc((size_t)g->n_sizes + 1, sizeof(double));
    w->tnext = calloc(nt, sizeof(int32_t));
    w->fresh = calloc(nt, sizeof(int32_t));
    w->away = calloc(nt, 1);
    w->toff = calloc(nt, sizeof(int64_t));
    w->tight = calloc(no, 1);
    w->top_size = calloc(no, sizeof(int32_t));
    w->tcls = calloc(nt, sizeof(int32_t));
    w->tpers = calloc(nt, 1);
    w->tin = calloc(nt, 1);
    for (int32_t t = 0; w->tpers && w->tin && t < g->n_tensors; t++) {
        w->tpers[t] = dfg_kind_persistent(g->tensors[t].kind);
        w->tin[t] = g->tensors[t].kind == DFG_INPUT;
    }
    for (int32_t i = 0; w->top_size && i < g->n_ops; i++)
        for (int32_t k = 0; k < g->ops[i].n_use; k++)
            if (g->tensors[g->ops[i].use[k]].size_idx > w->top_size[i])
                w->top_size[i] = g->tensors[g->ops[i].use[k]].size_idx;
    w->ord = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->sobj = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->sten = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->scap = calloc((size_t)maxuse + 1, sizeof(int64_t));
    w->stop = calloc((size_t)maxuse + 1, sizeof(int64_t));
    w->ytail = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->cap_uses = (int64_t)uses;
    w->rcm = calloc(nt, 1);
    w->gone = calloc(nt, 1);
    w->hold = calloc(nt, sizeof(int32_t));
    w->lfwd = calloc(nt, sizeof(int32_t));
    w->rnx = calloc(nt, sizeof(int32_t));
    w->rdepth = calloc(nt, sizeof(int32_t));
    w->cmark = calloc(nt, sizeof(int32_t));
    w->wl = calloc(nt, sizeof(int32_t));
    w->opos = calloc(no, sizeof(int32_t));
    w->vu_off = calloc(no + 1, sizeof(int32_t));
    if (!w->rcm || !w->gone || !w->hold || !w->lfwd || !w->rnx || !w->rdepth || !w->cmark || !w->wl || !w->opos || !w->vu_off) {
        swp_ws_free(w);
        return NULL;
    }
    if (!w->hlen || !w->hoff || !w->yhead || !w->ytail || !w->kused || !w->thr || !w->tnext || !w->fresh || !w->away || !w->toff ||
        !w->tight || !w->top_size || !w->tcls || !w->tpers || !w->tin || !w->ord || !w->sobj || !w->sten || !w->scap || !w->stop || !w->use_off || !w->use_pos || !w->tprefix || !w->cursor || !w->obj_of || !w->last_use_node ||
        !w->last_use_pos || !w->host_ready || !w->place_begin || !w->pin || !w->prev_end ||
        !w->host_valid || !w->wasted ||
        !w->s_obj || !w->e_obj || !w->deps || !w->fq_head || !w->fq_len) {
        swp_ws_free(w);
        return NULL;
    }
    return w;
}

void swp_ws_free(swp_ws *w)
{
    if (!w)
        return;
    free(w->use_off); free(w->use_pos); free(w->tprefix); free(w->cursor); free(w->obj_of);
    free(w->last_use_node); free(w->last_use_pos); free(w->host_ready); free(w->place_begin);
    free(w->pin); free(w->prev_end); free(w->host_valid); free(w->wasted); free(w->s_obj); free(w->e_obj);
    free(w->occ); free(w->free_after); free(w->fq); free(w->fq_head); free(w->fq_len); free(w->deps);
    free(w->heap); free(w->cur); free(w->hoff); free(w->hlen); free(w->scratch); free(w->ocls); free(w->mark);
    free(w->yq); free(w->yhead); free(w->ytail); free(w->yat);
    free(w->tnext); free(w->fresh); free(w->away); free(w->toff); free(w->pe); free(w->pe_lo); free(w->pe_hi); free(w->pe_n); free(w->fx); free(w->nfx);
    free(w->tight); free(w->top_size); free(w->tcls); free(w->tpers); free(w->tin); free(w->ord); free(w->sobj); free(w->sten); free(w->kused); free(w->thr); free(w->scap); free(w->stop);
    free(w->rcm); free(w->gone); free(w->hold); free(w->lfwd); free(w->rnx); free(w->rdepth); free(w->cmark); free(w->wl);
    free(w->opos); free(w->vu_off); free(w->vu_t); free(w->vp); free(w->vt);
    free(w);
}

static bool grow(void *pp, size_t n, size_t elem)
{
    void *q = realloc(*(void **)pp, n * elem);
    if (q)
        *(void **)pp = q;
    return q != NULL;
}

static bool reserve_objects(swp_ws *w, const pool_alloc *a)
{
    int64_t need_heap = 2 * (int64_t)a->n_objects + 16 * (int64_t)a->n_classes;
    if (need_heap > w->cap_heap) {
        size_t nh = (size_t)(need_heap + need_heap / 2);
        if (!grow(&w->heap, nh, sizeof *w->heap) || !grow(&w->yq, nh, sizeof *w->yq) ||
            !grow(&w->scratch, nh, sizeof *w->scratch))
            return false;
        w->cap_heap = (int64_t)nh;
    }
    int32_t n = a->n_objects;
    if (n <= w->cap_obj)
        return true;
    size_t nc = (size_t)n + (size_t)n / 2 + 16;
    if (!grow(&w->occ, nc, sizeof *w->occ) || !grow(&w->free_after, nc, sizeof *w->free_after) ||
        !grow(&w->fq, nc, sizeof *w->fq) || !grow(&w->cur, nc, sizeof *w->cur) ||
        !grow(&w->ocls, nc, sizeof *w->ocls) || !grow(&w->mark, nc, sizeof *w->mark) ||
        !grow(&w->yat, nc, sizeof *w->yat) || !grow(&w->pe_n, nc, sizeof *w->pe_n) ||
        !grow(&w->nfx, nc, sizeof *w->nfx) || !grow(&w->pe, nc * POOL_SPLIT_MAX, sizeof *w->pe) ||
        !grow(&w->pe_lo, nc * POOL_SPLIT_MAX, sizeof *w->pe_lo) || !grow(&w->pe_hi, nc * POOL_SPLIT_MAX, sizeof *w->pe_hi) ||
        !grow(&w->fx, nc * POOL_SPLIT_MAX, sizeof *w->fx))
        return false;
    w->cap_obj = (int32_t)nc;
    return true;
}

/* Everything one planning run needs, so the helpers take one argument. */
typedef struct ctx {
    const dfg_graph *g;
    const dfg_device *dev;
    const int32_t *sch;
    const pool_alloc *a;
    const swp_opts *o;
    swp_ws *w;
    plan *p;
    sa_err *err;
    int32_t pos;          /* schedule position being planned */
    int32_t demand_node;  /* compute node of the previous op (odswap) */
    int32_t pin_key;      /* tensors with pin[t] == pin_key may not be evicted: pos while
                           * an op is planned, a key of its own for each recompute */
    int32_t rc_key;       /* the last recompute's key (> n_ops) */
    bool rc_on;           /* some tensor is recomputed (swp_opts.recompute) */
    bool dry;             /* a dry pass: decisions only, no plan (see swp_plan) */
    int32_t n_dry;        /* a dry pass's node count: its stand-in node ids */
} ctx;

static inline int32_t class_of(const ctx *c, int32_t t) { return c->w->tcls[t]; }

/* Where a resident tensor sits: alone at the start of an object of its own
 * class; alone in an object of a larger class; or in an object split this
 * period (beside other tensors, or once beside them). */
enum { AT_HOME, BORROWED, SPLIT };

static inline bool node_on_compute(const plan *p, int32_t v)
{
    return v >= 0 && plan_kind_stream(p->nodes[v].kind) == PLAN_STREAM_COMPUTE;
}

/* plan_add_node, or in a dry pass a stand-in id (the walk's decisions read
 * node ids only as "some node" (>= 0), never their values). */
static inline int32_t add_node(ctx *c, plan_kind kind, int32_t ref, const int32_t *deps, int32_t nd)
{
    return c->dry ? c->n_dry++ : plan_add_node(c->p, kind, ref, deps, nd);
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

/* An object split between tensors goes as a whole, so it is as good a victim
 * as its worst tenant: the one needed soonest (Belady) or used last (LRU). */
static uint64_t split_entry(const ctx *c, int32_t o, uint64_t e)
{
    for (int32_t t = c->w->tnext[c->w->occ[o]]; t >= 0; t = c->w->tnext[t]) {
        uint64_t f = heap_entry(c, o, t);
        if (f < e)
            e = f;
    }
    return e;
}

static inline uint64_t obj_entry(const ctx *c, int32_t o)
{
    int32_t t = c->w->occ[o];
    uint64_t e = heap_entry(c, o, t);
    return c->w->away[t] != SPLIT ? e : split_entry(c, o, e);
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
static void heap_compact(swp_ws *w, int32_t k)
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

static inline __attribute__((always_inline)) void push_entry(swp_ws *w, int32_t k, uint64_t e)
{
    if (w->hoff[k] + w->hlen[k] == w->hoff[k + 1])
        heap_compact(w, k); /* full: at most cnt[k] current entries survive */
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

static inline void heap_remove(ctx *c, int32_t o) { c->w->cur[o] = 0; }

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

static sa_status oom(ctx *c) { return sa_fail(c->err, SA_ENOMEM, "out of memory while planning"); }

/* Closes t's current placement at node `end`; its object is free once its
 * last tenant has left (occ[o] < 0), and the next tenants wait for every
 * tenant of the period that ended. */
static inline __attribute__((always_inline)) sa_status close_placement(ctx *c, int32_t t, int32_t end)
{
    swp_ws *w = c->w;
    int32_t o = w->obj_of[t];
    if (!c->dry && !plan_add_placement(c->p, t, c->a->obj_offset[o] + w->toff[t], w->place_begin[t], end))
        return oom(c);
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

/* The compute time of rebuilding the recompute-flagged tensor t at
 * position nx from what is valid then: its producer, and the chains of its
 * inputs that are themselves flagged and gone or go; -1 when some input
 * would have no valid copy at nx (an activation that is not flagged, a
 * persistent tensor updated by then) or the chain is too long. */
static double redrop_cost(const ctx *c, int32_t t, int32_t nx, int depth)
{
    const swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    if (depth > SWP_RECOMPUTE_CHAIN_MAX || !w->rcm[t] || !dec_recompute_ok(g, w->opos, t, nx))
        return -1;
    const dfg_op *o = &g->ops[g->tensors[t].producer];
    double us = o->time_us;
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k];
        dfg_kind kd = g->tensors[u].kind;
        if (kd == DFG_INPUT || dfg_kind_persistent(kd))
            continue; /* a host copy (dec_recompute_ok: not updated by nx) */
        double x = redrop_cost(c, u, nx, depth + 1);
        if (x < 0)
            return -1;
        us += x;
    }
    return us;
}

/* Whether the eviction of v (stale on the host) drops it to be recomputed
 * again at its next use instead of swapping it out: v is flagged for
 * recompute and already past its forward uses, its chain can run at the
 * next use from inputs and persistent tensors alone, and costs less than
 * the stall the round trip would cause; never a tensor of the node being
 * built (it leaves only to come back at once, see fits_whole_now). */
static bool redrop(const ctx *c, int32_t v)
{
    const swp_ws *w = c->w;
    if (!c->rc_on || !w->rcm[v] || w->rnx[v] == INT32_MAX || c->pos <= w->lfwd[v] ||
        w->cursor[v] >= w->use_off[v + 1] || w->pin[v] == c->pin_key)
        return false;
    int32_t nx = w->use_pos[w->cursor[v]];
    if (nx <= c->pos || w->hold[v] > 0)
        return false; /* read at this position (by the op, or by a recompute still to run) */
    double us = redrop_cost(c, v, nx, 1);
    if (us < 0)
        return false;
    /* as decide.h's cost rule: swap when the round trip hides behind the
     * compute until the next use, else recompute when that costs less than
     * the stall the swap would cause */
    int64_t b = c->g->tensors[v].bytes;
    double x = sim_transfer_alone_us(c->dev, b, PLAN_STREAM_D2H) + sim_transfer_alone_us(c->dev, b, PLAN_STREAM_H2D);
    double gap = w->tprefix[nx] - w->tprefix[c->pos];
    return x > gap && us < x - gap;
}

/* Evicts tensor v: a swap-out when the host copy is stale, otherwise a drop
 * once its last reader is done; a drop too when v is rebuilt at its next use
 * (redrop). */
static sa_status evict_tensor(ctx *c, int32_t v)
{
    swp_ws *w = c->w;
    int32_t end;
    if (!w->host_valid[v] && w->last_use_node[v] >= 0 && redrop(c, v)) {
        end = w->last_use_node[v];
        w->gone[v] = 1;
    } else if (w->host_valid[v] && w->last_use_node[v] >= 0) {
        end = w->last_use_node[v];
    } else {
        int32_t deps[2], nd = 0;
        if (w->last_use_node[v] >= 0)
            deps[nd++] = w->last_use_node[v];
        if (c->o->on_demand && c->demand_node >= 0 && c->demand_node != w->last_use_node[v])
            deps[nd++] = c->demand_node;
        end = add_node(c, PLAN_SWAP_OUT, v, deps, nd);
        if (end < 0)
            return oom(c);
        w->host_valid[v] = 1;
        w->host_ready[v] = end;
    }
    if (w->s_obj[v] >= 0 && w->last_use_pos[v] < 0)
        w->wasted[v] = 1; /* resident at start but gone before its first use */
    return close_placement(c, v, end);
}

/* Empties object o: every tenant leaves. */
static sa_status evict(ctx *c, int32_t o)
{
    sa_status st = SA_OK;
    while (c->w->occ[o] >= 0 && !(st = evict_tensor(c, c->w->occ[o])))
        ;
    return st;
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

static int32_t pick_victim(ctx *c, int32_t k)
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

/* Where tensor t would start at the spare end of object o (above every
 * current tenant), or -1 when it does not fit or o has had POOL_SPLIT_MAX
 * tenants this period. */
static int64_t spare_end(const ctx *c, int32_t o, int32_t t)
{
    const swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    int64_t top = 0;
    int32_t n = w->pe_n[o];
    for (int32_t u = w->occ[o]; u >= 0; u = w->tnext[u], n++)
        if (w->toff[u] + g->tensors[u].bytes > top)
            top = w->toff[u] + g->tensors[u].bytes;
    top = pool_align(top);
    return n < POOL_SPLIT_MAX && top + g->tensors[t].bytes <= c->a->obj_bytes[w->ocls[o]] ? top : -1;
}

/* t joins object o at offset off, beside its tenants (all SPLIT from now);
 * its node waits for the tenants that left o this period where their bytes
 * overlap t's (add_obj_deps). */
static void join(ctx *c, int32_t t, int32_t o, int64_t off)
{
    swp_ws *w = c->w;
    int32_t h = w->occ[o];
    w->toff[t] = off;
    w->tnext[t] = w->tnext[h];
    w->tnext[h] = t;
    w->away[t] = w->away[h] = SPLIT;
    w->obj_of[t] = o;
}

/* Places t at the spare end of an object a tensor of op already holds, the
 * one it fits tightest (as pool_split_fit).  false when none has room. */
static bool share(ctx *c, const dfg_op *op, int32_t t, int32_t *obj)
{
    swp_ws *w = c->w;
    int64_t best_left = 0, best_off = 0;
    int32_t best = -1;
    w->stamp++;
    for (int32_t k = 0; k < op->n_use; k++) {
        int32_t ob = w->obj_of[op->use[k]];
        if (ob < 0 || w->mark[ob] == w->stamp)
            continue;
        w->mark[ob] = w->stamp;
        int64_t off = spare_end(c, ob, t), left = c->a->obj_bytes[w->ocls[ob]] - off;
        if (off >= 0 && (best < 0 || left < best_left)) {
            best = ob;
            best_left = left;
            best_off = off;
        }
    }
    if (best < 0)
        return false;
    join(c, t, best, best_off);
    *obj = best;
    return true;
}

/* The oldest free object of class k (fq_len[k] > 0) leaves its FIFO. */
static inline int32_t fq_pop(swp_ws *w, const pool_alloc *a, int32_t k)
{
    int32_t o = w->fq[a->first_obj[k] + w->fq_head[k]];
    w->fq_head[k] = w->fq_head[k] + 1 == a->cnt[k] ? 0 : w->fq_head[k] + 1;
    w->fq_len[k]--;
    return o;
}

/* A free object (oldest freed first) or an evicted one, from the smallest
 * class in [k0, k1) that has one; -1 when every object there holds a tensor
 * of the running op. */
static inline __attribute__((always_inline)) sa_status take_whole(ctx *c, int32_t k0, int32_t k1, int32_t *obj)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    int32_t o = -1;
    for (int32_t k = k0; k < k1 && o < 0; k++) {
        if (w->fq_len[k] > 0) {
            o = fq_pop(w, a, k);
        } else if ((o = pick_victim(c, k)) >= 0) {
            sa_status st = evict(c, o);
            if (st)
                return st;
        }
    }
    *obj = o;
    return SA_OK;
}

static sa_status no_room(ctx *c, int32_t t)
{
    int32_t op = c->sch[c->pos], k0 = class_of(c, t);
    return sa_fail(c->err, SA_EINFEASIBLE,
                   "op %d (\"%s\") needs more tensors of %lld bytes or more at once than the pool's %d objects "
                   "that can hold them",
                   op, c->g->ops[op].name, (long long)c->g->sizes[c->g->tensors[t].size_idx],
                   c->a->first_obj[c->a->n_classes] - c->a->first_obj[k0]);
}

/* t alone at the start of object o; it enters the heap once the op is planned. */
static inline void settle(ctx *c, int32_t t, int32_t o)
{
    swp_ws *w = c->w;
    w->occ[o] = t;
    w->obj_of[t] = o;
    w->away[t] = w->ocls[o] == class_of(c, t) ? AT_HOME : BORROWED;
}

/* Finds an object for t: in its own class a free one or an evicted one; when
 * every object of the class holds a tensor of the running op op, the spare
 * end of an object op holds (share), else the same in the next larger class,
 * and so on.  Borrowing only then makes the per-op floors of pool_need_shared
 * (suffix sums) enough; sharing first keeps a larger object (vgg-16's 822 MB
 * ones) for what needs it instead of evicting its tenant for a small one. */
static __attribute__((noinline)) sa_status acquire_slow(ctx *c, const dfg_op *op, int32_t t, int32_t *obj)
{
    int32_t k = class_of(c, t);
    sa_status st = take_whole(c, k, k + 1, obj);
    if (st)
        return st;
    if (*obj < 0 && share(c, op, t, obj))
        return SA_OK;
    if (*obj < 0 && (st = take_whole(c, k + 1, c->a->n_classes, obj)))
        return st;
    if (*obj < 0)
        return no_room(c, t);
    settle(c, t, *obj);
    return SA_OK;
}

/* acquire_slow with its common case inline: a free object of t's class. */
static inline __attribute__((always_inline)) sa_status acquire(ctx *c, const dfg_op *op, int32_t t, int32_t *obj)
{
    swp_ws *w = c->w;
    int32_t k = class_of(c, t);
    if (w->fq_len[k] == 0)
        return acquire_slow(c, op, t, obj);
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
static void add_obj_deps(ctx *c, int32_t *deps, int32_t *nd, int32_t o, int32_t t, bool compute_too)
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
static int32_t add_swap_in(ctx *c, int32_t t, int32_t obj)
{
    int32_t sd[3 + 2 * POOL_SPLIT_MAX], n = 0;
    if (c->dry)
        return c->n_dry++;
    add_obj_deps(c, sd, &n, obj, t, true);
    bld_add_dep(sd, &n, c->w->host_ready[t]);
    bld_add_dep(sd, &n, c->w->prev_end[t]);
    return plan_add_node(c->p, PLAN_SWAP_IN, t, sd, n);
}

/* Swaps t into obj for the node being built: the swap-in places t from its
 * start, and the node (deps, *nd) waits for it. */
static sa_status swap_in_for_node(ctx *c, int32_t t, int32_t obj, int32_t *deps, int32_t *nd)
{
    int32_t si = add_swap_in(c, t, obj);
    if (si < 0)
        return oom(c);
    c->w->place_begin[t] = si;
    bld_add_dep(deps, nd, si);
    return SA_OK;
}

/* Whether op's tensors can all take whole objects: for every class k, no more
 * of its tensors of classes >= k than objects of classes >= k (acquire's
 * smallest-class-first then never runs out, whatever the order). */
static bool fits_whole(ctx *c, int32_t op)
{
    const pool_alloc *a = c->a;
    const dfg_op *o = &c->g->ops[op];
    int32_t top = 0, total = a->first_obj[a->n_classes], *n_of = c->w->kused;
    if (total - a->first_obj[a->cls[c->w->top_size[op]]] >= o->n_use)
        return true; /* its largest class and up have an object for each tensor */
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t cl = class_of(c, o->use[k]);
        n_of[cl]++;
        if (cl > top)
            top = cl;
    }
    bool ok = true;
    for (int32_t cl = top, n = 0; cl >= 0; cl--) {
        n += n_of[cl];
        n_of[cl] = 0;
        ok &= n <= total - a->first_obj[cl];
    }
    return ok;
}

/* Whether acquire alone will place the op's missing tensors now: as
 * fits_whole, counting the objects that its resident tensors hold (those may
 * sit in objects of other classes, or share one) as taken. */
static bool fits_whole_now(ctx *c, const dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    int32_t *used = w->kused;
    bool ok = true;
    w->stamp++;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t ob = w->obj_of[o->use[k]];
        if (ob >= 0 && w->mark[ob] != w->stamp) {
            w->mark[ob] = w->stamp;
            used[w->ocls[ob]]++;
        }
    }
    for (int32_t k = 0; k < o->n_use && ok; k++) {
        if (w->obj_of[o->use[k]] >= 0)
            continue;
        int32_t cl = class_of(c, o->use[k]);
        while (cl < a->n_classes && used[cl] == a->cnt[cl])
            cl++;
        if (cl == a->n_classes)
            ok = false;
        else
            used[cl]++;
    }
    memset(used, 0, (size_t)a->n_classes * sizeof *used);
    return ok;
}

/* Whether the op's resident tensor t stays where it is in place_split: at
 * home in a class with an object for each of the op's tensors of it, or,
 * with away_too, anywhere. */
static bool split_keeps(ctx *c, const dfg_op *o, int32_t t, bool away_too)
{
    int32_t cl = class_of(c, t), same = 0;
    if (c->w->away[t] != AT_HOME)
        return away_too;
    for (int32_t j = 0; j < o->n_use; j++)
        same += class_of(c, o->use[j]) == cl;
    return same <= c->a->cnt[cl];
}

/* Adds the object of the op's resident tensor t to place_split's objects
 * (once): its bytes, the end of its last tenant, its tenants this period. */
static void split_obj(ctx *c, int32_t t, int32_t *n_obj)
{
    swp_ws *w = c->w;
    int32_t ob = w->obj_of[t], n = w->pe_n[ob];
    for (int32_t i = 0; i < *n_obj; i++)
        if (w->sobj[i] == ob)
            return;
    int64_t top = 0;
    for (int32_t u = w->occ[ob]; u >= 0; u = w->tnext[u], n++)
        if (w->toff[u] + c->g->tensors[u].bytes > top)
            top = w->toff[u] + c->g->tensors[u].bytes;
    w->sobj[*n_obj] = ob;
    w->scap[*n_obj] = c->a->obj_bytes[w->ocls[ob]];
    w->stop[*n_obj] = top;
    w->sten[(*n_obj)++] = n;
}

/* Whether place_split places every tensor of the op when its residents
 * away from home stay too (each kept object pinned, the others of their
 * classes free or evictable): the same walk on counts, no side effect. */
static bool split_fits_keeping(ctx *c, const dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    const dfg_graph *g = c->g;
    int32_t n_obj = 0, n = 0, *avail = w->kused;
    bool ok = true;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k];
        if (w->obj_of[t] >= 0 && split_keeps(c, o, t, true))
            split_obj(c, t, &n_obj);
    }
    for (int32_t i = 0; i < n_obj; i++)
        avail[w->ocls[w->sobj[i]]]++; /* taken: counted up, compared with cnt below */
    for (int32_t k = 0; k < o->n_use; k++) { /* the missing ones and those that leave, as place_split */
        int32_t t = o->use[k], j = n;
        if (w->obj_of[t] >= 0 && split_keeps(c, o, t, true))
            continue;
        for (; j > 0 && g->tensors[w->ord[j - 1]].bytes < g->tensors[t].bytes; j--)
            w->ord[j] = w->ord[j - 1];
        w->ord[j] = t;
        n++;
    }
    for (int32_t i = 0; i < n && ok; i++) {
        int32_t t = w->ord[i], cl = class_of(c, t), s;
        int64_t bytes = g->tensors[t].bytes;
        if (avail[cl] < a->cnt[cl]) {
            avail[cl]++;
        } else if ((s = pool_split_fit(w->scap, w->stop, w->sten, n_obj, bytes)) >= 0) {
            w->stop[s] = pool_align(w->stop[s]) + bytes;
            w->sten[s]++;
            continue;
        } else {
            while (cl < a->n_classes && avail[cl] == a->cnt[cl])
                cl++;
            if (cl == a->n_classes) {
                ok = false;
                break;
            }
            avail[cl]++;
        }
        w->sobj[n_obj] = -1;
        w->scap[n_obj] = a->obj_bytes[cl];
        w->stop[n_obj] = bytes;
        w->sten[n_obj++] = 1;
    }
    memset(avail, 0, (size_t)a->n_classes * sizeof *avail);
    return ok;
}

/* The last resort, for an op whose tensors cannot all take whole objects:
 * they are placed as pool_fits_split counts them, largest first, each in an
 * object of its own class, else in the spare end of an object the op holds,
 * else in a whole object of a larger class.  Resident tensors stay only
 * where that order would have put them (AT_HOME, in a class with an
 * object for each of the op's tensors of it), and those away from home
 * (shared, borrowed) too when split_fits_keeping says the walk still places
 * every tensor around them; the others leave and come back.  A pool that
 * passes pool_fits_split never fails here (keeping is only tried, the dry
 * run exact).  Sets fresh[t] for the tensors placed, whose swap-ins plan_op
 * adds. */
static sa_status place_split(ctx *c, const dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    const dfg_graph *g = c->g;
    int32_t n_obj = 0, n = 0;
    sa_status st;
    bool away = false;
    for (int32_t k = 0; k < o->n_use; k++)
        away |= w->obj_of[o->use[k]] >= 0 && w->away[o->use[k]] != AT_HOME;
    /* residents away from home (shared, borrowed) stay where the walk
     * still places every tensor; else they leave and come back */
    bool keep = away && split_fits_keeping(c, o);
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k], ob = w->obj_of[t];
        if (ob < 0)
            continue;
        if (split_keeps(c, o, t, keep)) {
            split_obj(c, t, &n_obj);
            continue;
        }
        if ((st = evict_tensor(c, t)))
            return st;
        if (w->occ[ob] < 0)
            release(c, ob);
    }
    /* the others, largest first, equal sizes in use order */
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k], j = n;
        if (w->obj_of[t] >= 0)
            continue;
        for (; j > 0 && g->tensors[w->ord[j - 1]].bytes < g->tensors[t].bytes; j--)
            w->ord[j] = w->ord[j - 1];
        w->ord[j] = t;
        n++;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t t = w->ord[i], cl = class_of(c, t), ob;
        int64_t bytes = g->tensors[t].bytes;
        if ((st = take_whole(c, cl, cl + 1, &ob)))
            return st;
        if (ob < 0) {
            int32_t s = pool_split_fit(w->scap, w->stop, w->sten, n_obj, bytes);
            if (s >= 0) {
                ob = w->sobj[s];
                w->toff[t] = pool_align(w->stop[s]);
                w->stop[s] = w->toff[t] + bytes;
                w->sten[s]++;
                w->tnext[t] = w->tnext[w->occ[ob]];
                w->tnext[w->occ[ob]] = t;
                w->away[t] = w->away[w->occ[ob]] = SPLIT;
                w->obj_of[t] = ob;
                w->fresh[t] = c->pos;
                continue;
            }
            if ((st = take_whole(c, cl + 1, a->n_classes, &ob)))
                return st;
            if (ob < 0)
                return no_room(c, t);
        }
        settle(c, t, ob);
        w->fresh[t] = c->pos;
        w->sobj[n_obj] = ob;
        w->scap[n_obj] = a->obj_bytes[w->ocls[ob]];
        w->stop[n_obj] = bytes;
        w->sten[n_obj++] = 1;
    }
    return SA_OK;
}

/* Rebuilds the dropped tensor t before the op at the current position: its
 * producer's dropped inputs first (depth counts the chain), then a
 * recompute node walked like an op under a pin key of its own (swp.h,
 * "Recomputation").  The producer's inputs are used at this position (their
 * virtual uses, consumed by plan_op); its outputs that were dropped become
 * resident again, those not resident take a scratch placement for the node
 * only. */
static sa_status recompute(ctx *c, int32_t t, int depth)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    int32_t op = g->tensors[t].producer, nd = 0;
    const dfg_op *o = &g->ops[op];
    sa_status st;
    if (depth > SWP_RECOMPUTE_CHAIN_MAX)
        return sa_fail(c->err, SA_EINTERNAL, "planner: recompute chain longer than %d at tensor %d",
                       SWP_RECOMPUTE_CHAIN_MAX, t);
    /* the producer's inputs are held until its node is added: one rebuilt
     * or read for it is neither redropped nor freed as an intermediate by
     * the rebuilding of another (an error ends the pass; start_pass clears
     * hold) */
    for (int32_t k = 0; k < o->n_in; k++)
        w->hold[o->in[k]]++;
    for (int32_t k = 0; k < o->n_in; k++)
        if (w->obj_of[o->in[k]] < 0 && w->gone[o->in[k]] && (st = recompute(c, o->in[k], depth + 1)))
            return st;
    c->pin_key = ++c->rc_key;
    bool away = false;
    for (int32_t k = 0; k < o->n_use; k++) {
        w->pin[o->use[k]] = c->pin_key;
        away |= w->obj_of[o->use[k]] >= 0 && w->away[o->use[k]] != AT_HOME;
    }
    if (away && !fits_whole_now(c, o)) /* residents away from home leave: then acquire places all */
        for (int32_t k = 0; k < o->n_use; k++) {
            int32_t u = o->use[k], ob = w->obj_of[u];
            if (ob < 0 || w->away[u] == AT_HOME)
                continue;
            if ((st = evict_tensor(c, u)))
                return st;
            if (w->occ[ob] < 0)
                release(c, ob);
        }
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k], obj;
        if (w->obj_of[u] >= 0)
            continue;
        if (w->gone[u] || !w->host_valid[u])
            return sa_fail(c->err, SA_EINTERNAL, "planner: input %d of the recompute of tensor %d has no valid copy",
                           u, t);
        if ((st = acquire(c, o, u, &obj)) || (st = swap_in_for_node(c, u, obj, w->deps, &nd)))
            return st;
    }
    for (int32_t k = o->n_in; k < o->n_use; k++) {
        int32_t u = o->use[k], obj = w->obj_of[u];
        if (obj >= 0)
            continue; /* resident: written again with the same contents */
        if ((st = acquire(c, o, u, &obj)))
            return st;
        add_obj_deps(c, w->deps, &nd, obj, u, false);
        w->place_begin[u] = -2; /* placed by this node (below) */
    }
    int32_t rn = add_node(c, PLAN_RECOMPUTE, op, w->deps, nd);
    if (rn < 0)
        return oom(c);
    for (int32_t k = 0; k < o->n_in; k++)
        w->hold[o->in[k]]--;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t u = o->use[k];
        w->last_use_node[u] = rn;
        w->last_use_pos[u] = c->pos;
    }
    for (int32_t k = o->n_in; k < o->n_use; k++) {
        int32_t u = o->use[k], obj = w->obj_of[u];
        if (w->place_begin[u] != -2)
            continue;
        w->place_begin[u] = rn;
        if (u == t || (w->gone[u] && w->rnx[u] < INT32_MAX && w->cursor[u] < w->use_off[u + 1])) {
            /* rebuilt: its uses follow (a sibling with none left leaves below, else it would
             * stay resident past the iteration's end and be carried into the next pass's start
             * state, where its producer places it a second time) */
            w->gone[u] = 0;
            w->host_ready[u] = -1;
            continue;
        }
        if ((st = close_placement(c, u, rn)))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
    }
    /* an intermediate of the chain read here for the last time leaves, unless
     * a recompute under way around this one holds it too: that one frees it
     * after its read */
    for (int32_t k = 0; k < o->n_in; k++) {
        int32_t u = o->in[k], obj = w->obj_of[u];
        if (!w->rcm[u] || w->rnx[u] < INT32_MAX || obj < 0 || w->cursor[u] < w->use_off[u + 1] || w->hold[u] > 0)
            continue;
        if ((st = close_placement(c, u, rn)))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
        w->gone[u] = 1;
    }
    for (int32_t k = 0; k < o->n_use; k++)
        if (w->obj_of[o->use[k]] >= 0)
            heap_defer(c, w->obj_of[o->use[k]]);
    c->demand_node = rn;
    return SA_OK;
}

/* Before the op at the current position: its dropped inputs are rebuilt,
 * then the virtual uses of this position are consumed (a tensor past its
 * last use leaves, as in plan_op). */
static sa_status plan_recomputes(ctx *c, const dfg_op *o)
{
    swp_ws *w = c->w;
    sa_status st;
    for (int32_t k = 0; k < o->n_in; k++)
        if (w->obj_of[o->in[k]] < 0 && w->gone[o->in[k]] && (st = recompute(c, o->in[k], 1)))
            return st;
    for (int32_t v = w->vu_off[c->pos]; v < w->vu_off[c->pos + 1]; v++) {
        int32_t u = w->vu_t[v], obj = w->obj_of[u];
        w->cursor[u]++;
        if (w->tpers[u] || w->cursor[u] < w->use_off[u + 1] || obj < 0)
            continue;
        if ((st = close_placement(c, u, w->last_use_node[u])))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
        w->gone[u] = w->rcm[u]; /* a later chain may rebuild it */
    }
    return SA_OK;
}

static sa_status plan_op(ctx *c)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    const int32_t pos = c->pos, op = c->sch[pos];
    const dfg_op *o = &g->ops[op];
    /* the op's lists in locals: the stores below into int32_t arrays could
     * alias o's and c's fields for all the compiler knows */
    const int32_t *use = o->use, *in = o->in, *out = o->out;
    const int32_t n_use = o->n_use, n_in = o->n_in, n_out = o->n_out;
    int32_t nd = 0;
    sa_status st;
    bool away = false;
    if (c->rc_on && (st = plan_recomputes(c, o)))
        return st;
    c->pin_key = pos;
    for (int32_t k = 0; k < n_use; k++) {
        w->pin[use[k]] = pos;
        away |= w->away[use[k]];
    }
    /* an op whose tensors cannot all take whole objects has them placed at
     * once, splitting objects (the last resort); so does one that could, but
     * for a resident tensor away from home (see fits_whole_now) */
    bool split = w->tight[op] || (away && !fits_whole_now(c, o));
    if (split && (st = place_split(c, o)))
        return st;
    /* inputs (in-place updated tensors included) must hold valid contents */
    for (int32_t k = 0; k < n_in; k++) {
        int32_t t = in[k], obj = w->obj_of[t];
        if (obj >= 0 && !(split && w->fresh[t] == pos))
            continue;
        if (!w->host_valid[t])
            return sa_fail(c->err, SA_EINTERNAL, "planner: tensor %d has no valid copy for op %d", t, op);
        if ((!split && (st = acquire(c, o, t, &obj))) || (st = swap_in_for_node(c, t, obj, w->deps, &nd)))
            return st;
    }
    /* new outputs and workspace take an object when the op starts */
    for (int32_t k = n_in; k < n_use; k++) {
        int32_t t = use[k], obj = w->obj_of[t];
        if (!split && (st = acquire(c, o, t, &obj)))
            return st;
        add_obj_deps(c, w->deps, &nd, obj, t, false);
    }
    int32_t cn = add_node(c, PLAN_COMPUTE, op, w->deps, nd);
    if (cn < 0)
        return oom(c);
    for (int32_t k = 0; k < n_out; k++) {
        w->host_valid[out[k]] = 0; /* written on the device: the host copy is stale */
        w->host_ready[out[k]] = -1;
    }
    /* one walk over the op's tensors (distinct, dfg.h): each is used here,
     * then leaves if past its last use (persistent ones stay); so do those
     * recomputed later, after their last forward use.  A tensor leaving
     * reads and writes only its own fields and its object's. */
    for (int32_t k = 0; k < n_use; k++) {
        int32_t t = use[k];
        if (k >= n_in)
            w->place_begin[t] = cn;
        w->last_use_node[t] = cn;
        w->last_use_pos[t] = pos;
        w->cursor[t]++;
        bool drop = false;
        if (w->tpers[t])
            continue;
        if (w->cursor[t] < w->use_off[t + 1]) {
            drop = c->rc_on && w->rcm[t] && w->lfwd[t] == pos && w->rnx[t] < INT32_MAX && w->obj_of[t] >= 0;
            if (!drop)
                continue;
        }
        int32_t obj = w->obj_of[t];
        bool stale = !w->host_valid[t];
        if ((st = close_placement(c, t, cn)))
            return st;
        if (w->occ[obj] < 0)
            release(c, obj);
        if (drop)
            w->gone[t] = stale; /* a current host copy is swapped in instead */
        else if (c->rc_on && w->rcm[t])
            w->gone[t] = 1; /* an intermediate: a later chain rebuilds it */
    }
    for (int32_t k = 0; k < n_use; k++)
        if (w->obj_of[use[k]] >= 0)
            heap_defer(c, w->obj_of[use[k]]); /* its key moved on */
    c->demand_node = cn;
    return SA_OK;
}

/* Per-schedule tables: use positions (real and virtual) and compute-time
 * prefix sums.  false on OOM. */
static bool index_schedule(ctx *c)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    memset(w->use_off, 0, ((size_t)g->n_tensors + 1) * sizeof *w->use_off);
    for (int32_t i = 0; i < g->n_ops; i++)
        for (int32_t k = 0; k < g->ops[i].n_use; k++)
            w->use_off[g->ops[i].use[k] + 1]++;
    for (int64_t v = 0; v < w->n_vu; v++)
        w->use_off[w->vu_t[v] + 1]++;
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->use_off[t + 1] += w->use_off[t];
    if (w->use_off[g->n_tensors] > w->cap_uses) {
        if (!grow(&w->use_pos, (size_t)w->use_off[g->n_tensors], sizeof *w->use_pos))
            return false;
        w->cap_uses = w->use_off[g->n_tensors];
    }
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->cursor[t] = w->use_off[t];
    for (int32_t i = 0; i < g->n_ops; i++) {
        for (int32_t v = w->n_vu ? w->vu_off[i] : 0; v < (w->n_vu ? w->vu_off[i + 1] : 0); v++)
            w->use_pos[w->cursor[w->vu_t[v]]++] = i;
        const dfg_op *o = &g->ops[c->sch[i]];
        for (int32_t k = 0; k < o->n_use; k++)
            w->use_pos[w->cursor[o->use[k]]++] = i;
    }
    bld_time_prefix(g, c->sch, g->n_ops, w->tprefix, NULL);
    return true;
}

/* Appends the virtual use (position i, tensor u).  false on OOM. */
static bool push_vu(swp_ws *w, int32_t i, int32_t u)
{
    if (w->n_vu == w->cap_vu) {
        int64_t nc = w->cap_vu ? 2 * w->cap_vu : 256;
        if (!grow(&w->vp, (size_t)nc, sizeof *w->vp) || !grow(&w->vt, (size_t)nc, sizeof *w->vt) ||
            !grow(&w->vu_t, (size_t)nc, sizeof *w->vu_t))
            return false;
        w->cap_vu = nc;
    }
    w->vp[w->n_vu] = i;
    w->vt[w->n_vu++] = u;
    return true;
}

/* The flags carried out (swp.h, "Recomputation"), their chain depths, and
 * the virtual uses: the recompute of t at its next use nx reads its
 * producer's inputs there, and so does the recompute of every flagged input
 * that is still dropped at nx (dropped before nx, rebuilt no earlier), in
 * turn.  Needs tight[].  false on OOM. */
static bool prep_recompute(ctx *c)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    const uint8_t *want = c->o->recompute;
    int32_t n = g->n_ops;
    w->n_vu = 0;
    c->rc_on = false;
    if (!want)
        return true;
    memset(w->rcm, 0, (size_t)g->n_tensors);
    memset(w->gone, 0, (size_t)g->n_tensors);
    for (int32_t i = 0; i < n; i++)
        w->opos[c->sch[i]] = i;
    for (int32_t i = 0; i < n; i++) {
        int32_t op = c->sch[i];
        const dfg_op *o = &g->ops[op];
        for (int32_t k = 0; k < o->n_out; k++) {
            int32_t t = o->out[k], lf, nx, d = 1;
            dfg_kind kd = g->tensors[t].kind;
            if (!want[t] || dfg_kind_persistent(kd) || kd == DFG_WORKSPACE || kd == DFG_INPUT || w->tight[op])
                continue;
            dec_gap(g, w->opos, t, &lf, &nx);
            if (lf < 0)
                continue;
            if (nx < 0) { /* no use after its forward ones: an intermediate of chains only */
                int32_t first;
                if (!dec_recomputable(g, t) || !dfg_tensor_span(g, w->opos, t, &first, &lf))
                    continue;
                nx = INT32_MAX;
            } else if (!dec_recompute_ok(g, w->opos, t, nx)) {
                continue;
            }
            for (int32_t j = 0; j < o->n_in; j++)
                if (w->rcm[o->in[j]] && w->rdepth[o->in[j]] + 1 > d)
                    d = w->rdepth[o->in[j]] + 1;
            if (d > SWP_RECOMPUTE_CHAIN_MAX)
                continue;
            w->rcm[t] = 1;
            w->rdepth[t] = d;
            w->lfwd[t] = lf;
            w->rnx[t] = nx;
            c->rc_on = true;
        }
    }
    if (!c->rc_on)
        return true;
    memset(w->cmark, 0, (size_t)g->n_tensors * sizeof *w->cmark);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (!w->rcm[t] || w->rnx[t] == INT32_MAX)
            continue;
        int32_t nx = w->rnx[t], nw = 0;
        w->wl[nw++] = t;
        w->cmark[t] = t + 1;
        for (int32_t q = 0; q < nw; q++) {
            const dfg_op *po = &g->ops[g->tensors[w->wl[q]].producer];
            for (int32_t k = 0; k < po->n_in; k++) {
                int32_t u = po->in[k];
                /* dropped at nx: rebuilt in the chain (an intermediate only
                 * where its producer may run then), else read there */
                bool chain = w->rcm[u] && w->lfwd[u] < nx && w->rnx[u] >= nx &&
                             (w->rnx[u] < INT32_MAX || dec_recompute_ok(g, w->opos, u, nx));
                if (!chain && !push_vu(w, nx, u))
                    return false;
                if (chain && w->cmark[u] != t + 1) {
                    w->cmark[u] = t + 1;
                    w->wl[nw++] = u;
                }
            }
        }
    }
    /* by position (counting sort, stable) */
    memset(w->vu_off, 0, ((size_t)n + 1) * sizeof *w->vu_off);
    for (int64_t v = 0; v < w->n_vu; v++)
        w->vu_off[w->vp[v] + 1]++;
    for (int32_t i = 0; i < n; i++)
        w->vu_off[i + 1] += w->vu_off[i];
    for (int64_t v = 0; v < w->n_vu; v++)
        w->vu_t[w->vu_off[w->vp[v]]++] = w->vt[v];
    for (int32_t i = n; i > 0; i--)
        w->vu_off[i] = w->vu_off[i - 1];
    w->vu_off[0] = 0;
    return true;
}

/* Resets the per-pass state; persistent tensors in s_obj start resident. */
static void start_pass(ctx *c)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    const pool_alloc *a = c->a;
    plan_reset(c->p);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        w->cursor[t] = w->use_off[t];
        w->obj_of[t] = -1;
        w->last_use_node[t] = w->last_use_pos[t] = -1;
        w->host_ready[t] = -1;
        w->place_begin[t] = -1;
        w->pin[t] = -1;
        w->prev_end[t] = -1;
        w->wasted[t] = 0;
        w->tnext[t] = -1;
        w->toff[t] = 0;
        w->fresh[t] = -1;
        w->away[t] = AT_HOME;
        w->gone[t] = 0;
        w->hold[t] = 0;
        /* host copies: inputs and persistent tensors not resident are current;
         * a resident persistent tensor was updated on the device last iteration
         * (tin and tpers: the tensor's kind, flat) */
        w->host_valid[t] = w->tin[t] | (w->tpers[t] & (w->s_obj[t] < 0));
    }
    for (int32_t o = 0; o < a->first_obj[a->n_classes]; o++) {
        w->occ[o] = -1;
        w->free_after[o] = -1;
        w->cur[o] = 0;
        w->mark[o] = 0;
        w->yat[o] = -1;
        w->pe_n[o] = 0;
        w->nfx[o] = 0;
    }
    w->hoff[0] = 0;
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->hlen[k] = 0;
        w->yhead[k] = w->ytail[k] = 0;
        w->hoff[k + 1] = w->hoff[k] + 2 * a->cnt[k] + 16;
    }
    w->stamp = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (w->s_obj[t] >= 0) {
            settle(c, t, w->s_obj[t]);
            heap_push(c, w->s_obj[t]);
        }
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->fq_head[k] = 0;
        w->fq_len[k] = 0;
        for (int32_t o = a->first_obj[k]; o < a->first_obj[k + 1]; o++)
            if (w->occ[o] < 0)
                w->fq[a->first_obj[k] + w->fq_len[k]++] = o;
    }
    c->demand_node = -1;
    c->rc_key = g->n_ops;
    c->n_dry = 0;
}

/* Brings the end state to the start state: persistent tensors resident at the
 * end but not at their start object leave, missing ones come back. */
static sa_status finish_pass(ctx *c)
{
    swp_ws *w = c->w;
    const dfg_graph *g = c->g;
    sa_status st;
    c->pos = c->pin_key = g->n_ops; /* nothing is pinned any more */
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (w->obj_of[t] >= 0 && (w->obj_of[t] != w->s_obj[t] || w->toff[t] != 0) && (st = evict_tensor(c, t)))
            return st;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t o = w->s_obj[t];
        if (o < 0 || w->obj_of[t] == o)
            continue;
        int32_t si = add_swap_in(c, t, o);
        if (si < 0)
            return oom(c);
        settle(c, t, o);
        w->place_begin[t] = si;
    }
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (w->obj_of[t] < 0)
            continue;
        if (!plan_add_placement(c->p, t, c->a->obj_offset[w->obj_of[t]] + w->toff[t], w->place_begin[t], -1))
            return oom(c);
        if (!plan_add_resident(c->p, t, c->a->obj_offset[w->obj_of[t]]))
            return oom(c);
    }
    return SA_OK;
}

/* One pass: the start state, then every op of the schedule in order. */
static sa_status walk(ctx *c)
{
    sa_status st;
    start_pass(c);
    for (c->pos = 0; c->pos < c->g->n_ops; c->pos++)
        if ((st = plan_op(c)))
            return st;
    return SA_OK;
}

sa_status swp_plan(const dfg_graph *g, const dfg_device *dev, const int32_t *schedule, const pool_alloc *a,
                   const swp_opts *o, swp_ws *w, plan *out, sa_err *err)
{
    ctx c = {g, dev, schedule, a, o, w, out, err, 0, -1, 0, g->n_ops, false, false, 0};
    sa_status st;
    if (a->pool_bytes > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE, "the pool (%lld bytes) does not fit the device memory (%lld bytes)",
                       (long long)a->pool_bytes, (long long)dev->memory_bytes);
    if (!reserve_objects(w, a) || !plan_set_schedule(out, schedule, g->n_ops))
        return oom(&c);
    out->device = *dev;
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->tcls[t] = a->cls[g->tensors[t].size_idx];
    for (int32_t k = 0; k < a->n_classes; k++) {
        w->thr[k] = o->threshold_scale * sim_transfer_alone_us(dev, a->obj_bytes[k], PLAN_STREAM_D2H);
        for (int32_t ob = a->first_obj[k]; ob < a->first_obj[k + 1]; ob++)
            w->ocls[ob] = k;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        w->tight[i] = !fits_whole(&c, i);
    if (!prep_recompute(&c) || !index_schedule(&c))
        return oom(&c);
    for (int32_t t = 0; t < g->n_tensors; t++)
        w->s_obj[t] = -1;
    int passes = o->max_passes > 0 ? o->max_passes : 1;
    /* A dry pass: the first of several passes is walked for its end state
     * only, without building its plan (nodes, deps, placements), since the
     * next pass usually starts from a different state.  The walk's decisions
     * do not depend on the plan, so when it turns out steady after all, the
     * same walk again builds the plan a full pass would have.  A workspace
     * whose last first pass was steady walks its next one in full. */
    for (int pass = 1;; pass++) {
        c.dry = pass == 1 && passes > 1 && !w->p1_steady;
        if ((st = walk(&c)))
            return st;
        /* the end state: persistent tensors still resident */
        bool steady = true;
        for (int32_t t = 0; t < g->n_tensors; t++) {
            /* a tensor sharing an object from the side is not carried over */
            w->e_obj[t] = w->toff[t] == 0 ? w->obj_of[t] : -1;
            steady &= w->e_obj[t] == w->s_obj[t];
        }
        if (pass == 1)
            w->p1_steady = steady;
        if (steady && c.dry) {
            c.dry = false;
            if ((st = walk(&c)))
                return st;
        }
        if (steady || pass >= passes)
            break;
        for (int32_t t = 0; t < g->n_tensors; t++)
            w->s_obj[t] = w->wasted[t] ? -1 : w->e_obj[t];
    }
    if ((st = finish_pass(&c)))
        return st;
    int64_t arena = 0;
    for (int32_t i = 0; i < out->n_place; i++) {
        int64_t e = out->place[i].offset + g->tensors[out->place[i].tensor].bytes;
        if (e > arena)
            arena = e;
    }
    out->arena_bytes = arena;
    return SA_OK;
}
