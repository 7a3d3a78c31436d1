/* nodes.c - the best-fit layout's node builder: per-tensor keep / swap / recompute
 * decisions (decide.h) become compute, transfer and recompute nodes whose deps the
 * strict validator accepts, with one placement per residency at offset 0 (packed
 * afterwards by pack.c). */
#include "swapadvisor/decide.h"

#include <stdlib.h>
#include <string.h>

#include "swapadvisor/sim.h"
#include "planning/build.h"

void dec_opts_default(dec_opts *o)
{
    memset(o, 0, sizeof *o);
    pack_opts_default(&o->pack);
    o->pack_offsets = true;
}

typedef struct sync_ent {
    int32_t node, next;
} sync_ent;

typedef struct dctx {
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    const int32_t *sch;
    const dec_opts *o;
    sa_err *err;
    sa_plan *p;
    int pass;                       /* 1: swap-ins at the use (finds the needs); 2: prefetched */
    int32_t n, nt;
    int32_t *pos, *last_fwd, *next_after, *last_use;
    double *tstart;                 /* estimated start of each position, no stalls */
    uint8_t *act;                   /* the decisions as carried out */
    uint8_t *req;                   /* as asked */
    int32_t *need_first, *need_gap; /* pass 1: where a swap-in was needed */
    /* pass state, per tensor */
    uint8_t *present, *loaded, *evicted, *touched, *done;
    uint8_t *dirty;                 /* swap_persistent: written this iteration (host copy stale) */
    uint8_t *drop;                  /* swap_persistent: dec_opts.drop as carried out, per reader slot */
    int32_t *drop_at, *drop_slot;   /* position and reader slot of a swapped persistent tensor's last drop */
    int32_t n_slots;
    struct ptrig { int32_t t, need, lower, slot; } *ptr; /* pass 1: swap-ins after drops */
    int32_t n_ptr, cap_ptr;
    bool restart;                   /* pass 1 extended a lifetime: run it again */
    int32_t *src, *pbeg, *luser, *hsrc;
    int32_t *pend;                  /* the end node of each tensor's last closed placement, or -1 */
    int32_t *touch_list, n_touch;
    /* swap-outs each position must wait for */
    int32_t *sync_head;
    sync_ent *sync;
    int32_t n_sync, cap_sync;
    double d2h_free;
    /* pass 2: swap-ins by trigger position (-1 .. n-1, shifted by one) */
    int32_t *in_off, *in_list;
    int32_t cprev;                  /* compute node of the previous position */
    int32_t *rdeps;                 /* a recompute node's deps (the most uses of an op + 1) */
    dec_stats st;
    sa_deadline dl;                 /* dec_opts.deadline_s, counted in positions walked */
} dctx;

static sa_status oom(dctx *c) { return sa_fail(c->err, SA_ENOMEM, "out of memory building the plan"); }

static inline bool on_h2d(const dctx *c, int32_t v)
{
    return v >= 0 && c->p->nodes[v].kind == SA_PLAN_SWAP_IN;
}

/* A persistent tensor carried out as DEC_SWAP (dec_opts.swap_persistent):
 * on the host at the iteration's boundary, on the device around its uses. */
static inline bool pswap(const dctx *c, int32_t t)
{
    return c->o->swap_persistent && c->act[t] == DEC_SWAP && sa_dfg_kind_persistent(c->g->tensors[t].kind);
}

/* One carried out as DEC_EVICT: on the device at the boundary, off it over
 * the gaps dec_opts.drop names. */
static inline bool pgaps(const dctx *c, int32_t t)
{
    return c->o->swap_persistent && c->act[t] == DEC_EVICT && sa_dfg_kind_persistent(c->g->tensors[t].kind);
}

/* Either: its gaps are dec_opts.drop's. */
static inline bool pleaves(const dctx *c, int32_t t)
{
    return pswap(c, t) || pgaps(c, t);
}

static void touch(dctx *c, int32_t t)
{
    if (!c->touched[t]) {
        c->touched[t] = 1;
        c->touch_list[c->n_touch++] = t;
    }
}

static sa_status close_place(dctx *c, int32_t t, int32_t end)
{
    if (!sa_plan_add_placement(c->p, t, 0, c->pbeg[t], end))
        return oom(c);
    c->present[t] = 0;
    c->pend[t] = end;
    return SA_OK;
}

static sa_status swap_in(dctx *c, int32_t t, int32_t after)
{
    int32_t deps[2], nd = 0;
    bld_add_dep(deps, &nd, after);
    bld_add_dep(deps, &nd, c->hsrc[t]);
    int32_t si = sa_plan_add_node(c->p, SA_PLAN_SWAP_IN, t, deps, nd);
    if (si < 0)
        return oom(c);
    c->present[t] = 1;
    c->src[t] = c->pbeg[t] = si;
    c->luser[t] = si;
    c->loaded[t] = 1;
    return SA_OK;
}

static sa_status make_present(dctx *c, int32_t t, int32_t i, int depth);

/* What t can do of what was asked (see decide.h), given its gap. */
static uint8_t allowed(const dctx *c, int32_t t, uint8_t a)
{
    const sa_dfg_graph *g = c->g;
    const sa_dfg_tensor *x = &g->tensors[t];
    if (sa_dfg_kind_persistent(x->kind) || x->kind == SA_DFG_WORKSPACE || c->next_after[t] < 0)
        return DEC_KEEP;
    if (a == DEC_RECOMPUTE && !dec_recompute_ok(g, c->pos, t, c->next_after[t]))
        return DEC_KEEP;
    return a;
}

/* DEC_EVICT resolved (decide.h): swap when the round trip hides behind the
 * compute between the last forward use and the next use, else recompute
 * when re-running the producer costs less than the stall the swap would
 * cause (and recomputing is allowed), else swap. */
static uint8_t cost_rule(const dctx *c, int32_t t)
{
    int32_t lf = c->last_fwd[t], nx = c->next_after[t];
    if (nx < 0)
        return DEC_KEEP; /* no gap: nothing to evict for */
    int64_t b = c->g->tensors[t].bytes;
    double gap = c->tstart[nx] - c->tstart[lf + 1];
    double x = recompute_round_trip_us(c->dev, b);
    if (x <= gap)
        return DEC_SWAP;
    int32_t op = c->g->tensors[t].producer;
    if (allowed(c, t, DEC_RECOMPUTE) == DEC_RECOMPUTE && c->g->ops[op].time_us < x - gap)
        return DEC_RECOMPUTE;
    return DEC_SWAP;
}

/* dec_opts.swap_persistent: the decisions of the widened space.  A
 * persistent tensor takes DEC_SWAP as asked (anything else keeps it
 * resident); a gradient produced in the backward phase gets the gap from its
 * producer to its first reader and takes DEC_SWAP (DEC_EVICT: swap; it is
 * never recomputed).  Returns false for every other tensor (the ordinary
 * rules apply). */
static bool widened(dctx *c, int32_t t)
{
    const sa_dfg_graph *g = c->g;
    const sa_dfg_tensor *x = &g->tensors[t];
    uint8_t r = c->req[t];
    if (sa_dfg_kind_persistent(x->kind)) {
        int32_t l = x->updater >= 0 ? c->pos[x->updater] : -1;
        for (int32_t k = 0; k < x->n_readers; k++)
            if (c->pos[g->readers[x->reader_off + k]] > l)
                l = c->pos[g->readers[x->reader_off + k]];
        c->last_use[t] = l; /* -1: nobody uses it */
        c->last_fwd[t] = c->next_after[t] = -1; /* its gaps are dec_opts.drop's */
        c->act[t] = l < 0 ? DEC_KEEP : r == DEC_SWAP ? DEC_SWAP : r == DEC_EVICT ? DEC_EVICT : DEC_KEEP;
        return true;
    }
    if (x->kind != SA_DFG_GRADIENT || x->producer < 0 || c->last_fwd[t] >= 0 || c->last_use[t] < 0)
        return false;
    int32_t p = c->pos[x->producer], nx = -1;
    for (int32_t k = 0; k < x->n_readers; k++) {
        int32_t q = c->pos[g->readers[x->reader_off + k]];
        if (q > p && (nx < 0 || q < nx))
            nx = q;
    }
    c->last_fwd[t] = p;
    c->next_after[t] = nx;
    c->act[t] = (r == DEC_SWAP || r == DEC_EVICT) && nx > p + 1 ? DEC_SWAP : DEC_KEEP;
    return true;
}

/* Re-runs the producer of t before position i. */
static sa_status recompute(dctx *c, int32_t t, int32_t i, int depth)
{
    const sa_dfg_graph *g = c->g;
    int32_t op = g->tensors[t].producer;
    const sa_dfg_op *o = &g->ops[op];
    sa_status st;
    for (int32_t k = 0; k < o->n_in; k++)
        if (!c->present[o->in[k]] && (st = make_present(c, o->in[k], i, depth + 1)))
            return st;
    int32_t *deps = c->rdeps, nd = 0; /* filled after the recursion above: one buffer serves every depth */
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t u = o->use[k];
        if (c->present[u] && on_h2d(c, c->src[u]))
            bld_add_dep(deps, &nd, c->src[u]);
        /* an output placed again by this node: its last placement ends
         * first (a swap-out still running, off the compute stream, would
         * leave the tensor placed twice at once) */
        if (!c->present[u] && c->pend[u] >= 0 &&
            sa_plan_kind_stream(c->p->nodes[c->pend[u]].kind) != SA_PLAN_STREAM_COMPUTE)
            bld_add_dep(deps, &nd, c->pend[u]);
    }
    int32_t r = sa_plan_add_node(c->p, SA_PLAN_RECOMPUTE, op, deps, nd);
    if (r < 0)
        return oom(c);
    c->st.n_recompute_nodes++;
    for (int32_t k = 0; k < o->n_in; k++) {
        c->luser[o->in[k]] = r;
        touch(c, o->in[k]);
    }
    for (int32_t k = 0; k < o->n_out; k++) {
        int32_t u = o->out[k];
        if (c->present[u]) {
            c->src[u] = r; /* the same contents again */
            c->luser[u] = r;
        } else if (u == t || (c->act[u] == DEC_RECOMPUTE && c->evicted[u])) {
            c->present[u] = 1;
            c->evicted[u] = 0;
            c->src[u] = c->pbeg[u] = c->luser[u] = r;
            touch(c, u);
        } else if (!sa_plan_add_placement(c->p, u, 0, r, r)) { /* scratch for this run only */
            return oom(c);
        } else {
            c->pend[u] = r;
        }
    }
    return SA_OK;
}

/* Makes t valid on the device for a use at position i. */
static sa_status make_present(dctx *c, int32_t t, int32_t i, int depth)
{
    const sa_dfg_graph *g = c->g;
    if (depth > c->n + 1)
        return sa_fail(c->err, SA_EINTERNAL, "plan builder: recompute chain does not end at tensor %d", t);
    if (c->done[t]) {
        /* released after its last use, but a recompute reads it later: pass 1
         * extends its life to here and runs again (this run's plan is dropped) */
        if (c->pass == 2)
            return sa_fail(c->err, SA_EINTERNAL, "plan builder: tensor %d (\"%s\") released before a recompute at "
                           "position %d reads it", t, g->tensors[t].name, i);
        if (i > c->last_use[t])
            c->last_use[t] = i;
        if (c->next_after[t] < 0 && c->last_fwd[t] >= 0 && c->last_fwd[t] < i) {
            /* a read only by recomputation: that is the use after its gap */
            c->next_after[t] = i;
            c->act[t] = allowed(c, t, c->req[t]);
        }
        c->restart = true;
        c->done[t] = 0;
        c->present[t] = 1;
        c->src[t] = c->pbeg[t] = c->luser[t] = c->cprev;
        return SA_OK;
    }
    if (g->tensors[t].kind == SA_DFG_INPUT || c->act[t] == DEC_SWAP || pgaps(c, t)) {
        /* pass 1 swaps in at the use and records where; pass 2 issues the
         * swap-in ahead, so it never gets here */
        if (c->pass == 2)
            return sa_fail(c->err, SA_EINTERNAL, "plan builder: tensor %d (\"%s\") not swapped in ahead of "
                           "position %d", t, g->tensors[t].name, i);
        if ((g->tensors[t].kind == SA_DFG_INPUT || pswap(c, t)) && !c->loaded[t]) {
            c->need_first[t] = i;
        } else if (pleaves(c, t)) {
            if (c->n_ptr == c->cap_ptr) {
                int32_t nc = c->cap_ptr ? 2 * c->cap_ptr : 64;
                struct ptrig *q = realloc(c->ptr, (size_t)nc * sizeof *q);
                if (!q)
                    return oom(c);
                c->ptr = q;
                c->cap_ptr = nc;
            }
            c->ptr[c->n_ptr++] = (struct ptrig){t, i, c->drop_at[t], c->drop_slot[t]};
        } else {
            c->need_gap[t] = i;
        }
        return swap_in(c, t, c->cprev);
    }
    if (c->act[t] == DEC_RECOMPUTE && c->evicted[t])
        return recompute(c, t, i, depth);
    return sa_fail(c->err, SA_EINTERNAL, "plan builder: tensor %d (\"%s\") is needed at position %d but is neither "
                   "present, swapped nor recomputable", t, g->tensors[t].name, i);
}

static sa_status push_sync(dctx *c, int32_t k, int32_t node)
{
    if (c->n_sync == c->cap_sync) {
        int32_t nc = c->cap_sync ? 2 * c->cap_sync : 256;
        sync_ent *s = realloc(c->sync, (size_t)nc * sizeof *s);
        if (!s)
            return oom(c);
        c->sync = s;
        c->cap_sync = nc;
    }
    c->sync[c->n_sync] = (sync_ent){node, c->sync_head[k]};
    c->sync_head[k] = c->n_sync++;
    return SA_OK;
}

/* t's last forward use was position i (compute node cn): let it go; with
 * now, the next op waits for the swap-out. */
static sa_status evict(dctx *c, int32_t t, int32_t i, int32_t cn, bool now)
{
    const sa_dfg_graph *g = c->g;
    sa_status st;
    if (g->tensors[t].kind == SA_DFG_INPUT || (pleaves(c, t) && !c->dirty[t]))
        return close_place(c, t, c->luser[t]); /* the host copy stays current */
    if (c->act[t] == DEC_RECOMPUTE) {
        c->evicted[t] = 1;
        return close_place(c, t, c->luser[t]);
    }
    int32_t so = sa_plan_add_node(c->p, SA_PLAN_SWAP_OUT, t, &c->luser[t], 1);
    if (so < 0)
        return oom(c);
    (void)cn;
    c->hsrc[t] = so;
    c->dirty[t] = 0; /* the host copy is current from here (until an update) */
    if ((st = close_place(c, t, so)))
        return st;
    /* which later op waits for it (its memory is free from there on) */
    int32_t k;
    if (c->o->swap_persistent && c->o->sync_at && c->o->sync_at[t] > i) {
        k = c->o->sync_at[t];
    } else if (now) {
        k = i + 1;
    } else if (c->o->out_sync > 0) {
        k = i + c->o->out_sync;
    } else {
        double x = sa_sim_transfer_alone_us(c->dev, g->tensors[t].bytes, SA_PLAN_STREAM_D2H);
        double start = c->tstart[i + 1] > c->d2h_free ? c->tstart[i + 1] : c->d2h_free;
        c->d2h_free = start + x;
        /* the first position from i + 1 that starts once the link is free:
         * tstart is a prefix sum of non-negative times, so a bisection (a
         * linear scan made a saturated link quadratic in the graph's size) */
        int32_t hi = c->n;
        for (k = i + 1; k < hi;) {
            int32_t m = k + (hi - k) / 2;
            if (c->tstart[m] < c->d2h_free)
                k = m + 1;
            else
                hi = m;
        }
    }
    if (k > c->n - 1)
        k = c->n - 1;
    return k > i ? push_sync(c, k, so) : SA_OK;
}

/* The reader slot (dec_opts.drop) of op's read of t, or -1. */
static int32_t drop_slot(const dctx *c, int32_t t, int32_t op)
{
    const sa_dfg_tensor *x = &c->g->tensors[t];
    for (int32_t k = 0; k < x->n_readers; k++)
        if (c->g->readers[x->reader_off + k] == op)
            return x->reader_off + k;
    return -1;
}

static sa_status run_pass(dctx *c)
{
    const sa_dfg_graph *g = c->g;
    sa_plan *p = c->p;
    sa_status st = SA_OK;
    sa_plan_reset(p);
    memset(c->present, 0, (size_t)c->nt);
    memset(c->loaded, 0, (size_t)c->nt);
    memset(c->evicted, 0, (size_t)c->nt);
    memset(c->touched, 0, (size_t)c->nt);
    memset(c->done, 0, (size_t)c->nt);
    memset(c->dirty, 0, (size_t)c->nt);
    if (c->pass == 1)
        c->n_ptr = 0;
    c->restart = false;
    for (int32_t t = 0; t < c->nt; t++) {
        c->src[t] = c->pbeg[t] = c->luser[t] = c->hsrc[t] = c->pend[t] = -1;
        c->present[t] = sa_dfg_kind_persistent(g->tensors[t].kind) && !pswap(c, t); /* resident at the start */
        c->dirty[t] = pgaps(c, t); /* a resident's host copy is stale (docs/formats.md): its first leave swaps out */
        if (c->pass == 1)
            c->need_first[t] = c->need_gap[t] = -1;
    }
    for (int32_t k = 0; k < c->n; k++)
        c->sync_head[k] = -1;
    c->n_sync = 0;
    c->d2h_free = 0;
    c->cprev = -1;
    c->st.n_recompute_nodes = 0;
    int32_t *deps = NULL;
    int32_t cap = 0;
    for (int32_t i = 0; i < c->n; i++) {
        if (sa_deadline_passed(&c->dl, 1)) {
            st = sa_fail(c->err, SA_EINFEASIBLE, "cut at the time limit");
            goto out;
        }
        if (c->pass == 2)
            for (int32_t k = c->in_off[i]; k < c->in_off[i + 1]; k++)
                if ((st = swap_in(c, c->in_list[k], c->cprev)))
                    goto out;
        int32_t op = c->sch[i];
        const sa_dfg_op *o = &g->ops[op];
        c->n_touch = 0;
        for (int32_t k = 0; k < o->n_in; k++)
            if (!c->present[o->in[k]] && (st = make_present(c, o->in[k], i, 0)))
                goto out;
        int32_t nsync = 0;
        for (int32_t e = c->sync_head[i]; e >= 0; e = c->sync[e].next)
            nsync++;
        if (cap < o->n_in + nsync + 1) {
            cap = o->n_in + nsync + 16;
            int32_t *d = realloc(deps, (size_t)cap * sizeof *d);
            if (!d) {
                st = oom(c);
                goto out;
            }
            deps = d;
        }
        int32_t nd = 0;
        for (int32_t k = 0; k < o->n_in; k++)
            if (on_h2d(c, c->src[o->in[k]]))
                bld_add_dep(deps, &nd, c->src[o->in[k]]);
        /* each sync entry is its own swap-out node (evict pushes each once)
         * and the inputs' deps are swap-ins: no duplicate to look for, which
         * keeps a position that waits on thousands of swap-outs linear */
        for (int32_t e = c->sync_head[i]; e >= 0; e = c->sync[e].next)
            deps[nd++] = c->sync[e].node;
        int32_t cn = sa_plan_add_node(p, SA_PLAN_COMPUTE, op, deps, nd);
        if (cn < 0) {
            st = oom(c);
            goto out;
        }
        c->cprev = cn;
        for (int32_t k = o->n_in; k < o->n_use; k++) {
            int32_t t = o->use[k];
            c->present[t] = 1;
            c->src[t] = c->pbeg[t] = cn;
        }
        for (int32_t k = 0; k < o->n_use; k++) {
            c->luser[o->use[k]] = cn;
            touch(c, o->use[k]);
        }
        for (int32_t k = 0; k < o->n_out; k++)
            if (pleaves(c, o->out[k])) { /* updated in place: the host copy is stale from here */
                c->dirty[o->out[k]] = 1;
                c->src[o->out[k]] = cn;
            }
        for (int32_t k = 0; k < c->n_touch; k++) {
            int32_t t = c->touch_list[k];
            c->touched[t] = 0;
            bool ps = pleaves(c, t);
            if ((sa_dfg_kind_persistent(g->tensors[t].kind) && !ps) || !c->present[t])
                continue;
            if (pgaps(c, t) && c->last_use[t] <= i) {
                continue; /* on the device to the end, where it started */
            } else if (c->last_use[t] <= i) {
                /* a swapped persistent tensor leaves as it goes in a gap:
                 * swapped out when updated, else dropped */
                st = ps ? evict(c, t, i, cn, c->o->late && c->o->late[t]) : close_place(c, t, c->luser[t]);
                c->done[t] = 1;
            } else if (ps) {
                int32_t sl = drop_slot(c, t, op);
                if (sl >= 0 && c->drop[sl]) {
                    c->drop_at[t] = i;
                    c->drop_slot[t] = sl;
                    st = evict(c, t, i, cn, false);
                }
            } else if (c->last_fwd[t] == i && c->act[t] != DEC_KEEP) {
                st = evict(c, t, i, cn, false);
            }
            if (st)
                goto out;
        }
    }
    for (int32_t t = 0; t < c->nt; t++)
        if (pswap(c, t)) {
            /* left past the last use an earlier pass 1 saw (a recompute that read
             * it then no longer happens; a parameter that is only read): it leaves
             * after the last node that used it, swapped out if updated since */
            if (c->present[t] && (st = evict(c, t, c->n - 1, c->cprev, false)))
                goto out;
        } else if (sa_dfg_kind_persistent(g->tensors[t].kind)) {
            /* from the start to the end, or (pgaps) from its last swap-in */
            bool gaps = pgaps(c, t);
            if (gaps && !c->present[t]) {
                st = sa_fail(c->err, SA_EINTERNAL, "plan builder: resident tensor %d (\"%s\") off the device at "
                             "the iteration's end", t, g->tensors[t].name);
                goto out;
            }
            if (!sa_plan_add_placement(p, t, 0, gaps ? c->pbeg[t] : -1, -1) || !sa_plan_add_resident(p, t, 0)) {
                st = oom(c);
                goto out;
            }
        } else if (c->present[t] && (st = close_place(c, t, c->luser[t]))) {
            /* left past the last use an earlier pass 1 saw (a recompute that
             * read it then no longer happens): its placement still ends at
             * the last node that used it, so no memory is misjudged */
            goto out;
        }
    st = SA_OK;
out:
    free(deps);
    return st;
}

/* Position after which the swap-in for a use at need is issued (-1 = at the
 * iteration's start), never before lower. */
static int32_t trigger(const dctx *c, int32_t t, int32_t need, int32_t lower)
{
    const dec_opts *o = c->o;
    int32_t tp = lower;
    if (o->marks) {
        int32_t want = o->prefetch > 0 ? o->prefetch : 1, seen = 0;
        for (int32_t q = need - 1; q > lower; q--)
            if (o->marks[q] && ++seen == want) {
                tp = q - 1;
                break;
            }
    } else if (o->prefetch > 0) {
        tp = need - 1 - o->prefetch;
    } else {
        double x = sa_sim_transfer_alone_us(c->dev, c->g->tensors[t].bytes, SA_PLAN_STREAM_H2D), acc = 0;
        for (int32_t q = need - 1; q > lower; q--) {
            acc += c->tstart[q + 1] - c->tstart[q];
            if (acc >= x) {
                tp = q - 1;
                break;
            }
        }
    }
    return tp < lower ? lower : tp;
}

/* A swap-in's trigger: trigger(), or with dec_opts.late (the widened
 * space) after the op before the use, stalls and all; the first swap-in of a
 * persistent tensor (first) too, the first of an input never. */
static int32_t late_trigger(const dctx *c, int32_t t, int32_t need, bool first)
{
    int32_t lower = first ? -1 : c->last_fwd[t];
    if (c->o->swap_persistent && c->o->late && c->o->late[t] && (!first || pswap(c, t))) {
        int32_t tp = need - 1;
        return tp < lower ? lower : tp;
    }
    return trigger(c, t, need, lower);
}

static int32_t gap_trigger(const dctx *c, int32_t t, int32_t need)
{
    return late_trigger(c, t, need, false);
}

/* The swap-in after a swapped persistent tensor's drop: where the compute
 * covers it (drop 1) or when the op before the use ends (2). */
static int32_t drop_trigger(const dctx *c, const struct ptrig *q)
{
    if (c->drop[q->slot] == 2)
        return q->need - 1 < q->lower ? q->lower : q->need - 1;
    return trigger(c, q->t, q->need, q->lower);
}

typedef struct trig {
    int32_t tp, need, t;
} trig;

static int cmp_trig(const void *a, const void *b)
{
    const trig *x = a, *y = b;
    if (x->tp != y->tp)
        return x->tp < y->tp ? -1 : 1;
    if (x->need != y->need)
        return x->need < y->need ? -1 : 1;
    return x->t - y->t;
}

/* The context's arrays for g (c->g, n, nt set), zeroed; *tr the pass-2
 * triggers.  false on OOM (free_dctx frees what was allocated). */
static bool alloc_dctx(dctx *c, trig **tr)
{
    const sa_dfg_graph *g = c->g;
    size_t nt = (size_t)c->nt + 1, n = (size_t)c->n + 2;
    c->pos = calloc(n, sizeof *c->pos);
    c->tstart = calloc(n, sizeof *c->tstart);
    c->last_fwd = calloc(nt, sizeof(int32_t));
    c->next_after = calloc(nt, sizeof(int32_t));
    c->last_use = calloc(nt, sizeof(int32_t));
    c->act = calloc(nt, 1);
    c->req = calloc(nt, 1);
    c->need_first = calloc(nt, sizeof(int32_t));
    c->need_gap = calloc(nt, sizeof(int32_t));
    c->present = calloc(nt, 1);
    c->loaded = calloc(nt, 1);
    c->evicted = calloc(nt, 1);
    c->touched = calloc(nt, 1);
    c->done = calloc(nt, 1);
    c->dirty = calloc(nt, 1);
    c->drop_at = calloc(nt, sizeof(int32_t));
    c->drop_slot = calloc(nt, sizeof(int32_t));
    for (int32_t t = 0; t < c->nt; t++)
        if (g->tensors[t].reader_off + g->tensors[t].n_readers > c->n_slots)
            c->n_slots = g->tensors[t].reader_off + g->tensors[t].n_readers;
    c->drop = calloc((size_t)c->n_slots + 1, 1);
    c->src = calloc(nt, sizeof(int32_t));
    c->pbeg = calloc(nt, sizeof(int32_t));
    c->luser = calloc(nt, sizeof(int32_t));
    c->pend = calloc(nt, sizeof(int32_t));
    c->hsrc = calloc(nt, sizeof(int32_t));
    c->touch_list = calloc(nt, sizeof(int32_t));
    c->sync_head = calloc(n, sizeof(int32_t));
    c->in_off = calloc(n + 1, sizeof(int32_t));
    c->in_list = calloc(2 * nt + (size_t)c->n_slots, sizeof(int32_t));
    *tr = calloc(2 * nt + (size_t)c->n_slots, sizeof **tr);
    int32_t maxuse = 0;
    for (int32_t i = 0; i < c->n; i++)
        if (g->ops[i].n_use > maxuse)
            maxuse = g->ops[i].n_use;
    c->rdeps = calloc((size_t)maxuse + 1, sizeof *c->rdeps);
    return c->pos && c->tstart && c->last_fwd && c->next_after && c->last_use && c->act && c->req &&
           c->need_first && c->need_gap && c->present && c->loaded && c->evicted && c->touched && c->done &&
           c->dirty && c->drop_at && c->drop_slot && c->drop && c->src && c->pbeg && c->luser && c->hsrc && c->pend &&
           c->touch_list && c->sync_head && c->in_off && c->in_list && *tr && c->rdeps;
}

static void free_dctx(dctx *c, trig *tr)
{
    free(c->pos); free(c->tstart); free(c->last_fwd); free(c->next_after); free(c->last_use); free(c->act); free(c->req);
    free(c->need_first); free(c->need_gap); free(c->present); free(c->loaded); free(c->evicted); free(c->touched);
    free(c->done); free(c->dirty);
    free(c->drop_at); free(c->drop_slot); free(c->drop); free(c->ptr);
    free(c->src); free(c->pbeg); free(c->luser); free(c->hsrc); free(c->pend); free(c->touch_list); free(c->sync_head);
    free(c->sync); free(c->in_off); free(c->in_list); free(tr); free(c->rdeps);
}

/* The counts of dec_stats from the decisions as carried out. */
static void count_decisions(dctx *c)
{
    const sa_dfg_graph *g = c->g;
    for (int32_t t = 0; t < c->nt; t++) {
        sa_dfg_kind kd = g->tensors[t].kind;
        if (c->req[t] != DEC_KEEP && c->act[t] == DEC_KEEP && !sa_dfg_kind_persistent(kd) && kd != SA_DFG_WORKSPACE)
            c->st.n_demoted++;
        if (pswap(c, t)) {
            c->st.n_persistent_swapped++;
            c->st.persistent_swapped_bytes += g->tensors[t].bytes;
        } else if (c->act[t] == DEC_SWAP && !sa_dfg_kind_persistent(kd) && kd != SA_DFG_INPUT) {
            c->st.n_swapped++;
            c->st.swapped_bytes += g->tensors[t].bytes;
        } else if (c->act[t] == DEC_RECOMPUTE) {
            c->st.n_recomputed++;
            c->st.recomputed_bytes += g->tensors[t].bytes;
        }
    }
}

sa_status dec_nodes(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, const uint8_t *act,
                    const dec_opts *opts, sa_plan *out, dec_stats *stats, sa_err *err)
{
    dec_opts od;
    dec_opts_default(&od);
    const dec_opts *o = opts ? opts : &od;
    const int32_t *sch = schedule ? schedule : g->topo;
    dctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.dev = dev;
    c.sch = sch;
    c.o = o;
    c.dl = sa_deadline_at(o->deadline_s);
    c.err = err;
    c.n = g->n_ops;
    c.nt = g->n_tensors;
    size_t n = (size_t)c.n + 2;
    sa_status st = SA_OK;
    trig *tr = NULL;
    c.p = out;
    out->device = *dev;
    if (!alloc_dctx(&c, &tr)) {
        st = oom(&c);
        goto out;
    }
    if (!sa_plan_set_schedule(c.p, sch, c.n)) {
        st = oom(&c);
        goto out;
    }
    bld_time_prefix(g, sch, c.n, c.tstart, c.pos);
    /* the decisions each tensor can carry out (see decide.h) */
    for (int32_t t = 0; t < c.nt; t++) {
        int32_t first, last;
        c.last_use[t] = sa_dfg_tensor_span(g, c.pos, t, &first, &last) ? last : -1;
        dec_gap(g, c.pos, t, &c.last_fwd[t], &c.next_after[t]);
        c.req[t] = act ? act[t] : DEC_KEEP;
        if (o->swap_persistent && widened(&c, t))
            continue;
        if (c.last_fwd[t] < 0 && c.req[t] != DEC_KEEP) /* asked to leave: a backward tensor's gap */
            dec_gap_longest(g, c.pos, c.tstart, t, &c.last_fwd[t], &c.next_after[t]);
        if (c.req[t] == DEC_EVICT)
            c.req[t] = cost_rule(&c, t);
        c.act[t] = allowed(&c, t, c.req[t]);
    }
    if (o->swap_persistent && o->drop)
        memcpy(c.drop, o->drop, (size_t)c.n_slots);
    /* pass 1 until no swap needs demoting: a swap-in that cannot start after
     * the swap-out is issued saves nothing */
    for (int round = 0;; round++) {
        c.pass = 1;
        if ((st = run_pass(&c)))
            goto out;
        int32_t demoted = 0;
        for (int32_t t = 0; t < c.nt; t++)
            if (c.act[t] == DEC_SWAP && c.need_gap[t] >= 0 &&
                gap_trigger(&c, t, c.need_gap[t]) <= c.last_fwd[t]) {
                c.act[t] = DEC_KEEP;
                demoted++;
            }
        for (int32_t k = 0; k < c.n_ptr; k++)
            if (c.drop[c.ptr[k].slot] && drop_trigger(&c, &c.ptr[k]) <= c.ptr[k].lower) {
                c.drop[c.ptr[k].slot] = 0; /* kept through that gap */
                demoted++;
            }
        if ((!demoted && !c.restart) || round >= 64)
            break;
    }
    /* pass 2: swap-ins issued at their triggers */
    int32_t ntr = 0;
    for (int32_t t = 0; t < c.nt; t++) {
        if (c.need_first[t] >= 0)
            tr[ntr++] = (trig){late_trigger(&c, t, c.need_first[t], true), c.need_first[t], t};
        if (c.need_gap[t] >= 0)
            tr[ntr++] = (trig){gap_trigger(&c, t, c.need_gap[t]), c.need_gap[t], t};
    }
    for (int32_t k = 0; k < c.n_ptr; k++)
        tr[ntr++] = (trig){drop_trigger(&c, &c.ptr[k]), c.ptr[k].need, c.ptr[k].t};
    qsort(tr, (size_t)ntr, sizeof *tr, cmp_trig);
    memset(c.in_off, 0, (n + 1) * sizeof *c.in_off);
    for (int32_t k = 0; k < ntr; k++) {
        c.in_off[tr[k].tp + 2]++;
        c.in_list[k] = tr[k].t;
    }
    for (int32_t i = 0; i <= c.n; i++)
        c.in_off[i + 1] += c.in_off[i];
    /* in_off[i] .. in_off[i + 1]: swap-ins issued before position i (trigger i - 1) */
    c.pass = 2;
    if ((st = run_pass(&c)))
        goto out;
    count_decisions(&c);
    if (stats)
        *stats = c.st;
out:
    free_dctx(&c, tr);
    return st;
}
