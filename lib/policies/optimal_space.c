/* optimal_space.c - the optimal planner's decision space (optimal_internal.h):
 * the candidates of a schedule, each with its actions' windows and costs
 * (swap, late swap-in, recompute and its chains), and the persistent
 * tensors' gaps; optimal.c solves the MILP over it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimal_internal.h"
#include "swapadvisor/decide.h"
#include "swapadvisor/recompute.h"

/* an unhidden first swap-in is priced, and OPT_GAPS offered, within these
 * shares of the compute (docs/bound.md: what they keep out) and up to
 * OPT_GAPS_MAX gaps (a guard on the ordering rows, not measured to matter) */
#define OPT_STALL_MIN 1e-3
#define OPT_STALL_MAX 0.1
#define OPT_GAPS_MAX 4

/* a + b modulo 2^64: the base load's difference array and its prefix sums
 * are exact whenever the loads themselves fit, and graphs of absurd sizes
 * (the robustness fuzz) reach no signed overflow on the way */
static int64_t wrap_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Index of the first position k > i whose op starts at least dt after
 * position i + 1 starts (the estimate decide.h's auto out_sync makes). */
static int32_t after(const octx *o, int32_t i, double dt)
{
    int32_t k = i + 1;
    while (k < o->n && o->tstart[k] - o->tstart[i + 1] < dt)
        k++;
    return k;
}

/* The latest position k < j from which the ops up to j cover dt (decide.h's
 * auto prefetch). */
static int32_t before(const octx *o, int32_t j, double dt)
{
    int32_t k = j - 1;
    while (k > 0 && o->tstart[j] - o->tstart[k] < dt)
        k--;
    return k;
}

/* The late variant of a swap over the gap lf .. nu (drop or swap-out after
 * lf, swap-in issued when op nu - 1 ends): open when it frees more
 * positions than the hidden swap; the stall is the swap-in's end past nu's
 * stall-free start, the swap-in starting when op nu - 1 ends or when the
 * swap-out does (d = 0: a drop), whichever is later. */
static void late_window(const octx *o, ocand *c, int32_t lf, int32_t nu, double gap_h, double gap_b)
{
    c->l_from = c->s_from;
    c->l_to = nu - 1;
    if (c->l_to < c->l_from || c->l_to <= c->s_to) {
        c->l_to = -1;
        return;
    }
    c->l_open = true;
    double start = fmax(o->tstart[nu], o->tstart[lf + 1] + c->d);
    c->stall = fmax(0.0, start + c->h - o->tstart[nu]);
    bool hidden_gap = c->s_from <= c->s_to;
    c->lh = c->sh + (hidden_gap ? 0 : gap_h);
    c->lsb = c->sb + (hidden_gap ? 0 : gap_b);
}

/* The waited swap-out over the gap lf .. nu (OPT_WAIT): free from lf + 1,
 * whose op waits for the swap-out, to nu - 1, when the late swap-in is
 * issued; open where it frees earlier than the other swaps, whose swap-out
 * the compute must cover first.  The compute waits for both transfers. */
static void wait_window(ocand *c, int32_t lf, int32_t nu)
{
    int32_t first_free = c->l_open ? c->l_from : c->s_from <= c->s_to ? c->s_from : INT32_MAX;
    c->w_from = lf + 1;
    c->w_to = nu - 1;
    c->w_open = c->d > 0 && c->w_from <= c->w_to && c->w_from < first_free;
    c->w_early = first_free - 1 < c->w_to ? first_free - 1 : c->w_to;
    c->w_stall = c->d + c->h;
}

static bool recompute_open(const octx *o, int32_t t, int32_t next_use)
{
    const sa_dfg_graph *g = o->g;
    if (!dec_recomputable(g, t))
        return false;
    const sa_dfg_op *po = &g->ops[g->tensors[t].producer];
    for (int32_t k = 0; k < po->n_in; k++) {
        const sa_dfg_tensor *x = &g->tensors[po->in[k]];
        if (sa_dfg_kind_persistent(x->kind) && x->updater >= 0 && o->pos[x->updater] <= next_use)
            return false;
    }
    return true;
}

/* The widened space's persistent candidates: a parameter or state on the
 * host at the boundary (swapped in before its first use, swapped out after
 * its update), dropped in any gap between two uses and swapped in again; or,
 * where s_stall is priced, resident at the boundary and off over its gaps
 * (OPT_GAPS, its first leave a swap-out). */
static void add_persistent(octx *o, double lat, double rh, double rd, bool no_gaps)
{
    const sa_dfg_graph *g = o->g;
    int32_t *up = o->slot_scratch;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        if (!sa_dfg_kind_persistent(x->kind))
            continue;
        /* its reader slots in position order (a handful: insertion sort) */
        int32_t nu = 0;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t sl = x->reader_off + k, q = o->pos[g->readers[sl]], j = nu++;
            while (j > 0 && o->pos[g->readers[up[j - 1]]] > q) {
                up[j] = up[j - 1];
                j--;
            }
            up[j] = sl;
        }
        int32_t f = nu ? o->pos[g->readers[up[0]]] : INT32_MAX, l = nu ? o->pos[g->readers[up[nu - 1]]] : -1;
        bool upd = x->updater >= 0;
        if (upd) {
            f = o->pos[x->updater] < f ? o->pos[x->updater] : f;
            l = o->pos[x->updater] > l ? o->pos[x->updater] : l;
        }
        if (l < 0)
            continue;
        ocand *c = &o->c[o->nc];
        *c = (ocand){.t = t, .first = f, .last = l, .s_from = 0, .s_to = -1, .l_from = 0, .l_to = -1, .r_from = 0,
                     .r_to = -1, .next_use = -1, .s_col = -1, .l_col = -1, .r_col = -1, .l2_to = -1, .pers = true};
        double b = (double)x->bytes, h = lat + b / rh, d = lat + b / rd;
        c->h = h;
        c->d = upd ? d : 0;
        /* before its first use (the swap-in there is issued where the
         * compute covers it, or at the start) and after its last (the
         * swap-out, when updated, must end first) */
        c->s2_from = 0;
        c->s2_to = before(o, f, h) - 1;
        c->s3_from = upd ? after(o, l, d) : l + 1;
        c->s3_to = o->n - 1;
        c->sh = c->lh = h;
        c->sd = c->d;
        c->sb = c->lsb = b * (upd ? 2 : 1);
        /* what of the hidden swap no compute can cover: the swap-in past the
         * ops before the first use (the write-backs after the updates share
         * the link's tail, which no one tensor's term prices), within
         * OPT_STALL_MIN .. OPT_STALL_MAX of the compute (see there) */
        c->s_stall = fmax(0.0, h - o->tstart[f]);
        if (c->s_stall < OPT_STALL_MIN * o->compute_us || c->s_stall > OPT_STALL_MAX * o->compute_us)
            c->s_stall = 0;
        /* late: the first swap-in when the op before the first use ends,
         * and the op after the update waits for the swap-out */
        if (f - 1 > c->s2_to) {
            c->l2_to = f - 1;
            c->stall += h;
        }
        if (upd && l + 2 < c->s3_from) {
            c->l3_from = l + 2;
            c->late_tail = true;
            c->stall += d;
        }
        c->l_open = c->l2_to >= 0 || c->late_tail;
        int32_t ci = o->nc++;
        c->gp_first = o->ngp;
        /* its gaps: after a use, dropped at once (the update is its last
         * use, so the host copy is current), swapped in again before the next */
        for (int32_t k = 0; k + 1 < nu; k++) {
            int32_t q = o->pos[g->readers[up[k]]], q2 = o->pos[g->readers[up[k + 1]]];
            if (q2 <= q + 1 || (upd && q >= o->pos[x->updater]))
                continue;
            ogap *gp = &o->gp[o->ngp];
            *gp = (ogap){.cand = ci, .slot = up[k], .from = q + 1, .y_to = before(o, q2, h) - 1, .z_to = q2 - 1,
                         .y_col = -1, .z_col = -1, .h = h, .b = b};
            if (gp->y_to >= gp->from || gp->z_to > gp->y_to)
                o->ngp++;
        }
        c->gp_n = o->ngp - c->gp_first;
        if (c->gp_n == 0 || c->gp_n > OPT_GAPS_MAX || no_gaps)
            c->s_stall = 0;
        o->n_gaps += c->s_stall > 0;
        /* resident at the boundary instead: its first leave is a swap-out,
         * which holds the memory until it ends */
        if (c->gp_n > 0) {
            const ogap *g0 = &o->gp[c->gp_first];
            int32_t to = after(o, g0->from - 1, d) - 1, gmax = g0->z_to > g0->y_to ? g0->z_to : g0->y_to;
            c->e_d = d;
            c->e_to = to < gmax ? to : gmax;
        }
    }
}

static bool rerun(const octx *o, int32_t u, int32_t nu, int depth, double *rc, int64_t *in, int64_t *ext,
                  int32_t *ext_from);

/* An input u of a recompute run just before nu, dead before nu, rebuilt
 * there by a chain of recomputes (rerun) when u is one of o->interm (decide.h
 * takes its act, DEC_RECOMPUTE, see opt_take_solution) whose producer may run at
 * nu, at most SWP_RECOMPUTE_CHAIN_MAX links deep; else it stays on the device
 * from its death to nu (decide.h extends its life).  Returns false when u is
 * not rebuilt (nothing added). */
static bool chain_in(const octx *o, int32_t u, int32_t nu, int depth, double *rc, int64_t *in, int64_t *ext,
                     int32_t *ext_from)
{
    const sa_dfg_graph *g = o->g;
    if (!o->interm || !o->interm[u] || depth > SWP_RECOMPUTE_CHAIN_MAX || !dec_recompute_ok(g, o->pos, u, nu))
        return false;
    rerun(o, u, nu, depth + 1, rc, in, ext, ext_from);
    return true;
}

/* The inputs of po (run just before nu) that died before nu: rebuilt by
 * chain_in, or kept alive to nu.  Returns whether it rebuilt one. */
static bool dead_inputs(const octx *o, const sa_dfg_op *po, int32_t nu, int depth, double *rc, int64_t *in,
                        int64_t *ext, int32_t *ext_from)
{
    const sa_dfg_graph *g = o->g;
    bool chained = false;
    for (int32_t k = 0; k < po->n_in; k++) {
        int32_t u = po->in[k], uf, ul;
        if (sa_dfg_kind_persistent(g->tensors[u].kind) || !sa_dfg_tensor_span(g, o->pos, u, &uf, &ul) || ul >= nu - 1)
            continue;
        if (chain_in(o, u, nu, depth, rc, in, ext, ext_from)) {
            chained = true;
            continue;
        }
        *ext += g->tensors[u].bytes;
        if (ul + 1 < *ext_from)
            *ext_from = ul + 1;
    }
    return chained;
}

/* The producer of u re-run just before nu: its time added to *rc, the bytes
 * of its uses but u (u is counted where it is used) to *in, and its inputs
 * that died before nu rebuilt or kept alive (dead_inputs, chains depth deep
 * from here).  Returns whether a chain rebuilt one. */
static bool rerun(const octx *o, int32_t u, int32_t nu, int depth, double *rc, int64_t *in, int64_t *ext,
                  int32_t *ext_from)
{
    const sa_dfg_graph *g = o->g;
    const sa_dfg_op *po = &g->ops[g->tensors[u].producer];
    *rc += po->time_us > 0 ? po->time_us : 0;
    for (int32_t k = 0; k < po->n_use; k++)
        if (po->use[k] != u && !sa_dfg_kind_persistent(g->tensors[po->use[k]].kind))
            *in += g->tensors[po->use[k]].bytes;
    return dead_inputs(o, po, nu, depth, rc, in, ext, ext_from);
}

sa_status opt_build_ctx(octx *o, const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *sch, unsigned space,
                        sa_err *err)
{
    memset(o, 0, sizeof *o);
    bool widen = space & OPT_WIDEN, waits = widen && (space & OPT_WAITS);
    o->near = waits && (space & OPT_NEAR);
    o->g = g;
    o->dev = dev;
    o->sch = sch;
    o->n = g->n_ops;
    o->pos = calloc((size_t)o->n + 1, sizeof *o->pos);
    o->tstart = calloc((size_t)o->n + 2, sizeof *o->tstart);
    o->c = calloc((size_t)g->n_tensors + 1, sizeof *o->c);
    o->base = calloc((size_t)o->n + 2, sizeof *o->base);
    int32_t nslots = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].reader_off + g->tensors[t].n_readers > nslots)
            nslots = g->tensors[t].reader_off + g->tensors[t].n_readers;
    o->gp = calloc((size_t)nslots + 1, sizeof *o->gp);
    o->slot_scratch = calloc((size_t)nslots + 1, sizeof *o->slot_scratch);
    o->nslots = nslots;
    if (space & OPT_CHAINS)
        o->interm = calloc((size_t)g->n_tensors + 1, 1);
    if (!o->pos || !o->tstart || !o->c || !o->base || !o->gp || !o->slot_scratch || (space & OPT_CHAINS && !o->interm))
        return sa_fail(err, SA_ENOMEM, "optimal: out of memory");
    for (int32_t i = 0; i < o->n; i++) {
        o->pos[sch[i]] = i;
        double tu = g->ops[sch[i]].time_us;
        o->tstart[i + 1] = o->tstart[i] + (tu > 0 ? tu : 0);
    }
    o->compute_us = o->tstart[o->n];
    if (o->interm) {
        swp_recompute_intermediates(g, o->pos, o->interm);
        for (int32_t t = 0; t < g->n_tensors; t++)
            o->interm[t] = o->interm[t] && dec_recomputable(g, t);
    }
    double lat = dev->transfer_latency_us, rh = dev->h2d_bytes_per_s * 1e-6, rd = dev->d2h_bytes_per_s * 1e-6;
    double dup = dev->duplex_bytes_per_s * 0.5e-6;
    o->r_comb = fmax(fmax(rh, rd), fmin(rh, dup) + fmin(rd, dup));
    /* base load by difference array: persistent all along, everything else
     * over its span, workspaces at their op */
    int64_t *delta = o->base;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        int32_t first, last;
        if (sa_dfg_kind_persistent(x->kind)) {
            delta[0] = wrap_add(delta[0], x->bytes);
            continue;
        }
        if (!sa_dfg_tensor_span(g, o->pos, t, &first, &last))
            continue;
        if (x->kind == SA_DFG_INPUT) {
            o->forced_h += lat + (double)x->bytes / rh;
            o->forced_bytes += (double)x->bytes;
        }
        delta[first] = wrap_add(delta[first], x->bytes);
        delta[last + 1] = wrap_add(delta[last + 1], -x->bytes);
        int32_t lf, nu;
        dec_gap(g, o->pos, t, &lf, &nu);
        if (x->kind == SA_DFG_WORKSPACE)
            continue;
        if (widen && lf < 0 && x->kind == SA_DFG_GRADIENT && x->producer >= 0) {
            /* the widened space: a gradient produced in the backward phase
             * (a parameter's, waiting for its update) may be swapped out after
             * its producer and in before its first reader (decide.h) */
            lf = o->pos[x->producer];
            nu = -1;
            for (int32_t k = 0; k < x->n_readers; k++) {
                int32_t q = o->pos[g->readers[x->reader_off + k]];
                if (q > lf && (nu < 0 || q < nu))
                    nu = q;
            }
            if (nu <= lf + 1)
                continue;
            ocand *c = &o->c[o->nc];
            *c = (ocand){.t = t, .first = first, .last = last, .s2_from = 0, .s2_to = -1, .s3_from = 0, .s3_to = -1,
                         .r_from = 0, .r_to = -1, .next_use = nu, .s_col = -1, .l_col = -1, .r_col = -1, .l2_to = -1};
            c->h = c->sh = lat + (double)x->bytes / rh;
            c->d = c->sd = lat + (double)x->bytes / rd;
            c->sb = 2.0 * (double)x->bytes;
            c->s_from = after(o, lf, c->d);
            c->s_to = before(o, nu, c->h) - 1;
            late_window(o, c, lf, nu, 0, 0);
            if (waits)
                wait_window(c, lf, nu);
            if (c->s_from <= c->s_to || c->l_open || c->w_open)
                o->nc++;
            continue;
        }
        if (nu < 0)
            continue;
        ocand *c = &o->c[o->nc];
        *c = (ocand){.t = t, .first = first, .last = last, .s_from = 0, .s_to = -1, .s2_from = 0, .s2_to = -1,
                     .s3_from = 0, .s3_to = -1, .r_from = 0, .r_to = -1, .next_use = nu, .s_col = -1, .l_col = -1,
                     .r_col = -1, .l2_to = -1};
        c->h = lat + (double)x->bytes / rh;
        c->d = x->kind == SA_DFG_INPUT ? 0 : lat + (double)x->bytes / rd;
        c->sh = c->h;
        c->sd = c->d;
        c->sb = (double)x->bytes * (c->d > 0 ? 2 : 1);
        /* swap: free once the swap-out is done, resident again from the
         * swap-in's issue (inputs are dropped at once) */
        c->s_from = x->kind == SA_DFG_INPUT ? lf + 1 : after(o, lf, c->d);
        c->s_to = before(o, nu, c->h) - 1;
        if (widen)
            late_window(o, c, lf, nu, 0, 0);
        if (waits)
            wait_window(c, lf, nu);
        /* recompute: free right after the last forward use, rebuilt just before the use */
        if (recompute_open(o, t, nu)) {
            c->r_from = lf + 1;
            c->r_to = nu - 1;
            /* an input whose last use comes before the recompute is rebuilt
             * by a chain or stays on the device until it */
            c->r_ext_from = nu;
            if (rerun(o, t, nu, 1, &c->rc, &c->r_in, &c->r_ext, &c->r_ext_from))
                o->n_chained++;
        }
        if (c->s_from <= c->s_to || c->r_from <= c->r_to || c->l_open || c->w_open)
            o->nc++;
    }
    for (int32_t i = 1; i <= o->n; i++)
        delta[i] = wrap_add(delta[i], delta[i - 1]);
    if (widen)
        add_persistent(o, lat, rh, rd, space & OPT_NO_GAPS);
    return SA_OK;
}

void opt_free_ctx(octx *o)
{
    free(o->pos);
    free(o->tstart);
    free(o->c);
    free(o->base);
    free(o->gp);
    free(o->slot_scratch);
    free(o->interm);
}
