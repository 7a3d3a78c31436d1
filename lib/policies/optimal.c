/* optimal.c - the optimal and optimal-search rows: for a fixed schedule, a
 * MILP over per-tensor keep / swap / recompute decisions (docs/bound.md, "The
 * optimal planner"), solved under a time limit; the integer solution becomes a
 * plan through decide.h and is simulated like any other. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swapadvisor/bound.h"
#include "swapadvisor/decide.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/milp.h"
#include "optimal_internal.h"
#include "policies_internal.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/recompute.h"

/* each space's plan is refined 1 / OPT_REFINE_FIRST of the way before the
 * fastest is refined to the end (try_space) */
#define OPT_REFINE_FIRST 8
/* past this transfer latency (us) no chains are tried (run_optimal) */
#define OPT_CHAINS_MAX_LATENCY_US 1e9
/* an unhidden first swap-in is priced, and OPT_GAPS offered, within these
 * shares of the compute (docs/bound.md: what they keep out) and up to
 * OPT_GAPS_MAX gaps (a guard on the ordering rows, not measured to matter) */
#define OPT_STALL_MIN 1e-3
#define OPT_STALL_MAX 0.1
#define OPT_GAPS_MAX 4
/* the largest model optimal builds: positions x candidates (see its use) */
#define OPT_MAX_CELLS 2.0e7
/* under an effort limit (optimal.max_nodes > 0) the solves per decision
 * space: their number ends the rounds, and no clock does unless
 * sa_policy_opts.deadline_s is set; as many as without the limit (4 left
 * resnet-152 inference at 192 MiB with no fitting plan) */
#define OPT_EFFORT_ROUNDS 10
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

static sa_status build_ctx(octx *o, const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *sch, unsigned space,
                           sa_err *err)
{
    memset(o, 0, sizeof *o);
    bool widen = space & OPT_WIDEN;
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
            if (c->s_from <= c->s_to || c->l_open)
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
        if (c->s_from <= c->s_to || c->r_from <= c->r_to || c->l_open)
            o->nc++;
    }
    for (int32_t i = 1; i <= o->n; i++)
        delta[i] = wrap_add(delta[i], delta[i - 1]);
    if (widen)
        add_persistent(o, lat, rh, rd, space & OPT_NO_GAPS);
    return SA_OK;
}

static void free_ctx(octx *o)
{
    free(o->pos);
    free(o->tstart);
    free(o->c);
    free(o->base);
    free(o->gp);
    free(o->slot_scratch);
    free(o->interm);
}

/* A decision space solved and built, its decisions and plan (refined as far
 * as rf says) and what its search block reports; owns all of it (osol_free). */
typedef struct osol {
    octx o;
    uint8_t *act, *late, *drop, *chosen;
    int32_t *sync_at;
    dec_opts dop;
    dec_stats ds;
    sa_plan *p;
    sa_milp_result best; /* the solve whose decisions p holds */
    int rounds;
    int64_t cap;
    double milp_us;      /* p's time before the refinement */
    orefine rf;          /* how far p has been refined */
    bool refine_cut;     /* a clock cut the refinement */
    bool widen;
} osol;

static void osol_free(osol *s)
{
    sa_milp_result_free(&s->best);
    sa_plan_free(s->p);
    free(s->act); free(s->late); free(s->sync_at); free(s->drop); free(s->chosen);
    free_ctx(&s->o);
    memset(s, 0, sizeof *s);
}

/* One decision space (OPT_ flags) solved and built into *s (zeroed first;
 * the caller's, osol_free, whatever the status); its time limit runs from t0
 * (without an effort limit), and no solve runs past
 * sa_policy_opts.deadline_s.  Sets *timed_out when a clock cut a solve or
 * the rounds short (the plan then depends on the machine's speed); under an
 * effort limit without a deadline no clock is read.  The solve / pack /
 * lower-the-cap rounds share their state (cap, best, rounds, the decision
 * arrays) in one frame: it is longer than 150 lines. */
static sa_status solve_space(const sa_policy_call *pc, const char *name, const int32_t *sch, unsigned space,
                             double t0, double limit, osol *s, bool *timed_out, sa_err *err)
{
    const sa_dfg_graph *g = pc->g;
    const sa_dfg_device *dev = pc->dev;
    const sa_policy_opts *po = pc->opts;
    memset(s, 0, sizeof *s);
    if (!sa_milp_have(po->optimal.solver))
        return sa_fail(err, SA_EUSAGE, "%s: this build has no %sMILP solver (install coinor-libcbc-dev or "
                       "libglpk-dev and rebuild; scripts/setup.sh does)", name,
                       po->optimal.solver == SA_MILP_GLPK ? "GLPK " : po->optimal.solver == SA_MILP_CBC ? "CBC " : "");
    octx *o = &s->o;
    s->widen = space & OPT_WIDEN;
    sa_status st = build_ctx(o, g, dev, sch, space, err);
    if (!st && o->interm && o->n_chained == 0)
        st = sa_fail(err, SA_EINFEASIBLE, "%s: no recompute reads an intermediate: chains change nothing", name);
    /* the memory rows hold up to one coefficient per position and candidate:
     * past OPT_MAX_CELLS the model would take the solver minutes and
     * gigabytes (nasnet-25: 15k positions x 8k candidates ran out of memory) */
    if (!st && (double)o->n * (double)o->nc > OPT_MAX_CELLS)
        st = sa_fail(err, SA_EINFEASIBLE, "%s: the MILP would span %d positions x %d candidates (%.0f million "
                     "memory coefficients at most, over the %.0f million this planner takes); plan with another "
                     "policy (swapadvisor, hybrid) or bound with --bound=combinatorial", name, o->n, o->nc,
                     (double)o->n * (double)o->nc * 1e-6, OPT_MAX_CELLS * 1e-6);
    if (st)
        return st;
    s->act = calloc((size_t)g->n_tensors + 1, 1);
    s->late = calloc((size_t)g->n_tensors + 1, 1);
    s->sync_at = calloc((size_t)g->n_tensors + 1, sizeof *s->sync_at);
    s->drop = calloc((size_t)o->nslots + 1, 1);
    s->chosen = calloc((size_t)o->nc + 1, 1);
    if (!s->act || !s->late || !s->sync_at || !s->drop || !s->chosen)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", name);
    int64_t cap = dev->memory_bytes;
    dec_stats *ds = &s->ds;
    int rounds = 0, stuck = 0;
    int64_t smallest = INT64_MAX;
    /* solve; pack the plan; when the packed arena (fragmentation, the
     * transfers' real timing, recompute inputs) overshoots the memory, solve
     * again for a cap lowered by the overshoot */
    /* under an effort limit the node count ends each solve and the count of
     * rounds ends them, no clock (but a deadline), so that the plan depends
     * on the inputs only */
    bool effort = po->optimal.max_nodes > 0;
    double dl = po->deadline_s;
    for (; !st && rounds < (effort ? OPT_EFFORT_ROUNDS : 10); rounds++) {
        double left = effort ? 0 : fmax(1.0, limit - (sa_now_s() - t0)); /* 0: no time limit */
        if (dl > 0) {
            double to_dl = dl - sa_now_s();
            if (to_dl <= 0) {
                *timed_out = true;
                st = sa_fail(err, SA_EINFEASIBLE, "%s: cut at the time limit", name);
                break;
            }
            left = left > 0 ? fmin(left, to_dl) : to_dl;
        }
        sa_milp *m = NULL;
        if ((st = opt_build_milp(o, cap, &m, err)))
            break;
        sa_milp_opts mo = {po->optimal.solver, left, po->optimal.gap, po->optimal.threads, false,
                        po->optimal.max_nodes, effort};
        sa_milp_result r;
        st = sa_milp_solve(m, &mo, &r, err);
        sa_milp_free(m);
        if (st)
            break;
        if (r.timed_out)
            *timed_out = true;
        if (r.status == SA_MILP_INFEASIBLE || r.status == SA_MILP_NO_SOLUTION) {
            bool inf = r.status == SA_MILP_INFEASIBLE;
            sa_milp_result_free(&r);
            if (inf)
                st = sa_fail(err, SA_EINFEASIBLE, "%s: no keep / swap / recompute decisions fit the schedule in "
                             "memory (cap %lld of %lld bytes)", name, (long long)cap, (long long)dev->memory_bytes);
            else
                st = sa_fail(err, SA_EINFEASIBLE, "%s: the solver found no solution in %.0f s (cap %lld of %lld "
                             "bytes); raise --time-limit", name, limit, (long long)cap, (long long)dev->memory_bytes);
            break;
        }
        opt_take_solution(o, &r, s->act, s->late, s->sync_at, s->drop, s->chosen);
        dec_opts_default(&s->dop);
        s->dop.swap_persistent = s->widen; /* the widened space: parameters, state and their gradients may leave */
        s->dop.late = s->late;
        s->dop.sync_at = s->sync_at;
        s->dop.drop = s->drop;
        sa_plan_free(s->p);
        s->p = NULL;
        planner_req q = {.schedule = sch, .layout = PLANNER_BESTFIT, .act = s->act, .dec = &s->dop, .stats = ds};
        s->p = sa_plan_new(g, dev);
        if (!s->p)
            st = sa_fail(err, SA_ENOMEM, "optimal: out of memory");
        else if ((st = planner_plan(g, dev, &q, s->p, err))) {
            sa_plan_free(s->p);
            s->p = NULL;
        }
        if (st) {
            sa_milp_result_free(&r);
            break;
        }
        sa_milp_result_free(&s->best);
        s->best = r;
        if (ds->arena_bytes <= dev->memory_bytes)
            break;
        /* lower the cap by half the overshoot; by more each time the arena
         * did not shrink (the packing is not monotone in the cap) */
        int64_t over = ds->arena_bytes - dev->memory_bytes;
        if (ds->arena_bytes >= smallest)
            stuck++;
        else
            smallest = ds->arena_bytes;
        cap -= (over / 2 + 1) * (stuck + 1);
        bool overdue = (dl > 0 && sa_now_s() >= dl) || (!effort && sa_now_s() - t0 > limit);
        if (overdue || cap <= 0) {
            if (cap > 0)
                *timed_out = true;
            rounds++;
            break;
        }
    }
    if (!st && ds->arena_bytes > dev->memory_bytes)
        st = sa_fail(err, SA_EINFEASIBLE, "%s: the packed arena needs %lld bytes, more than the %lld bytes of memory, "
                     "after %d solves", name, (long long)ds->arena_bytes, (long long)dev->memory_bytes, rounds);
    s->rounds = rounds;
    s->cap = cap;
    s->milp_us = s->p ? s->p->predicted.iteration_us : 0;
    return st;
}

/* s's plan refined (opt_refine) on from where it stands, up to cap plans or
 * stop_s (> 0; 0: no clock). */
static sa_status refine_space(const sa_policy_call *pc, const int32_t *sch, osol *s, double stop_s, int32_t cap,
                              bool *timed_out, sa_err *err)
{
    bool cut = false;
    odec d = {s->act, s->late, s->drop, s->chosen, s->sync_at};
    sa_status st = opt_refine(pc, &s->o, sch, &s->dop, &d, stop_s, cap, &s->rf, &s->p, &s->ds, &cut, err);
    if (cut)
        *timed_out = s->refine_cut = true; /* the plan depends on the machine's speed */
    return st;
}

/* s's plan refined to the whole cap (refine_space) and given its search
 * block; *out becomes it (the caller's), taken from s.  On failure s still
 * owns its plan. */
static sa_status finish_space(const sa_policy_call *pc, const char *name, const int32_t *sch, const char *extra,
                              osol *s, double t0, double stop_s, sa_plan **out, bool *timed_out, sa_err *err)
{
    sa_status st = refine_space(pc, sch, s, stop_s, opt_refine_cap(pc), timed_out, err);
    if (st)
        return st;
    const sa_milp_result *best = &s->best;
    const dec_stats *ds = &s->ds;
    char search[1024], bound[64] = "";
    /* a solver without a bound reports COIN_DBL_MAX or an infinity: the
     * member is left out (JSON has no infinity, and 1.8e308 written with
     * fewer digits reads back as one) */
    bool has_bound = isfinite(best->best_bound) && fabs(best->best_bound) < 1e300;
    if (has_bound)
        snprintf(bound, sizeof bound, ",\"milp_bound_us\":%.17g", best->best_bound);
    double gap = best->objective > 0 && has_bound ? fmax(0.0, (best->objective - best->best_bound) / best->objective)
                                                  : -1;
    snprintf(search, sizeof search,
             "{\"algorithm\":\"%s\",\"space\":\"%s\",\"chains\":%s,\"solver\":\"%s\",\"milp_status\":\"%s\","
             "\"milp_objective_us\":%.17g%s,\"milp_gap\":%.6f,\"candidates\":%d,"
             "\"solves\":%d,\"cap\":%lld,\"swapped\":%d,\"persistent_swapped\":%d,\"recomputed\":%d,"
             "\"demoted\":%d,\"arena\":%lld,\"milp_plan_us\":%.17g,\"refine_plans\":%d%s,\"wall_s\":%.3f%s%s}",
             name, s->widen ? "widened" : "narrow", s->o.interm ? "true" : "false", best->solver,
             best->status == SA_MILP_OPTIMAL ? "optimal" : best->timed_out ? "time_limit" : "node_limit",
             best->objective, bound, gap, s->o.nc, s->rounds + (s->rounds == 0), (long long)s->cap, ds->n_swapped,
             ds->n_persistent_swapped, ds->n_recomputed, ds->n_demoted, (long long)ds->arena_bytes, s->milp_us, s->rf.evals,
             s->refine_cut ? ",\"refine_cut\":true" : "", sa_now_s() - t0, extra ? "," : "", extra ? extra : "");
    if (!sa_plan_set_search_json(s->p, search))
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", name);
    *out = s->p;
    s->p = NULL;
    return SA_OK;
}

/* Space `space` solved into *cand and refined an eighth of the way
 * (OPT_REFINE_FIRST; the gains of the largest tensors, which tell the spaces
 * apart where their MILP plans are close); *best becomes the faster of the
 * two (the earlier on a tie), the other freed.  A refusal keeps *best and, without
 * chains, its reason in *why (the widened space's replacing the narrow
 * one's; "chains change nothing" says nothing of the graph).  Other failures
 * are returned (err). */
static sa_status try_space(const sa_policy_call *pc, const char *name, const int32_t *sch, unsigned space,
                           double t0, double limit, double stop_s, osol *best, osol *cand, sa_err *why,
                           bool *timed_out, sa_err *err)
{
    sa_err e = {0};
    sa_status st = solve_space(pc, name, sch, space, t0, limit, cand, timed_out, &e);
    if (st == SA_EINFEASIBLE && cand->o.n_gaps > 0) {
        /* the space as it was without OPT_GAPS (no plan of its fitted) */
        osol_free(cand);
        e = (sa_err){0};
        st = solve_space(pc, name, sch, space | OPT_NO_GAPS, t0, limit, cand, timed_out, &e);
    }
    if (!st)
        st = refine_space(pc, sch, cand, stop_s, opt_refine_cap(pc) / OPT_REFINE_FIRST, timed_out, &e);
    if (st == SA_EINFEASIBLE) {
        osol_free(cand);
        if (!(space & OPT_CHAINS))
            *why = e;
        return SA_OK;
    }
    if (st) {
        osol_free(cand);
        *err = e;
        return st;
    }
    if (!best->p || cand->p->predicted.iteration_us < best->p->predicted.iteration_us) {
        osol x = *best; /* the earlier best is freed below */
        *best = *cand, *cand = x;
    }
    osol_free(cand);
    return SA_OK;
}

/* The spaces: the narrow one (decide.h's default decisions: one per forward
 * activation, parameters resident), whose model is closer to the simulator
 * where it fits, then the widened one; each as it is, then with recompute
 * chains (OPT_CHAINS), whose model prices a rebuilt intermediate at its
 * recompute's position only (where decide.h keeps it longer, two recomputes
 * reading it, the packed arena may overshoot at every cap).  The plan that
 * simulates fastest after the first eighth of its refinement (the earliest
 * on a tie) is the one refined to the end: a space's time is mostly its
 * refinement.
 * Under the clock the narrow space's solves get a quarter of the time limit,
 * the widened one's up to three quarters, the refinement the rest; under an effort
 * limit all run.  Refuses when every space refuses (the widened space's
 * reason).  No
 * chains past a transfer latency of OPT_CHAINS_MAX_LATENCY_US: CLP's
 * pivoting fails an internal assertion (an abort) on the chains' model of a
 * graph whose transfers take 1e15 us, and no swap is worth anything there. */
static sa_status run_optimal(const sa_policy_call *c, const char *name, const int32_t *sch, const char *extra,
                             sa_plan **out, bool *timed_out, sa_err *err)
{
    double t0 = sa_now_s();
    double limit = c->opts->optimal.time_limit_s > 0 ? c->opts->optimal.time_limit_s : 60;
    bool effort = c->opts->optimal.max_nodes > 0;
    /* under the clock the limit is a deadline too: no solve then runs past
     * it (a solve's own limit is at least 1 s) */
    sa_policy_opts po = *c->opts;
    if (!effort && (!(po.deadline_s > 0) || po.deadline_s > t0 + limit))
        po.deadline_s = t0 + limit;
    sa_policy_call call = *c, *pc = &call;
    call.opts = &po;
    double dl = po.deadline_s, stop_s = dl > 0 ? dl : 0; /* the refinement's end (0: none) */
    bool chains = pc->dev->transfer_latency_us <= OPT_CHAINS_MAX_LATENCY_US;
    /* under the effort limit the widened space without chains last, if no other planned (docs/policies.md) */
    static const unsigned order[2][4] = {{0, OPT_CHAINS, OPT_WIDEN, OPT_WIDEN | OPT_CHAINS},
                                         {0, OPT_CHAINS, OPT_WIDEN | OPT_CHAINS, OPT_WIDEN}};
    const unsigned *spaces = order[effort];
    osol best = {0}, cand = {0};
    sa_err why = {0};
    sa_status st = SA_OK;
    *out = NULL;
    for (int k = 0; k < 4 && !st; k++) {
        double lim = spaces[k] & OPT_WIDEN ? limit * 3 / 4 : limit / 4;
        /* a space with chains runs in the time its first left */
        bool no_time = (!effort && sa_now_s() - t0 >= lim - 1.0) || (dl > 0 && sa_now_s() >= dl - 1.0);
        if (((spaces[k] & OPT_CHAINS) && (!chains || no_time)) || (effort && spaces[k] == OPT_WIDEN && best.p))
            continue;
        st = try_space(pc, name, sch, spaces[k], t0, lim, stop_s, &best, &cand, &why, timed_out, err);
    }
    if (!st && !best.p) {
        *err = why;
        st = SA_EINFEASIBLE;
    }
    if (!st)
        st = finish_space(pc, name, sch, extra, &best, t0, stop_s, out, timed_out, err);
    osol_free(&best);
    return st;
}

sa_status policy_run_optimal(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    bool to = false;
    return run_optimal(c, c->name, c->g->topo, NULL, out, &to, err);
}

sa_status optimal_on_schedule(const sa_policy_call *c, const char *name, const int32_t *sch, const char *extra,
                              sa_plan **out, bool *timed_out, sa_err *err)
{
    *timed_out = false;
    return run_optimal(c, name, sch, extra, out, timed_out, err);
}

sa_status sa_policy_milp_cells(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double *cells,
                            sa_err *err)
{
    octx o;
    sa_status st = build_ctx(&o, g, dev, schedule ? schedule : g->topo, OPT_WIDEN, err);
    if (!st)
        *cells = (double)o.n * (double)o.nc;
    free_ctx(&o);
    return st;
}

sa_status policy_run_optimal_search(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    *out = NULL;
    if (!sa_milp_have(c->opts->optimal.solver))
        return optimal_on_schedule(c, c->name, c->g->topo, NULL, out, &(bool){false}, err); /* the same refusal */
    /* under an effort limit (a seed of the swapadvisor row) the search
     * stops on its generation count (and the deadline), the solves on node
     * counts; otherwise the time limit covers both: the search gets at most
     * half of it, the solves what the search left */
    sa_policy_opts po = *c->opts;
    bool effort = po.optimal.max_nodes > 0;
    double limit = po.optimal.time_limit_s > 0 ? po.optimal.time_limit_s : 60;
    if (effort)
        po.search.time_limit_s = 0;
    else if (po.search.time_limit_s <= 0 || po.search.time_limit_s > limit / 2)
        po.search.time_limit_s = limit / 2;
    if (po.deadline_s > 0 && (!(po.search.deadline_s > 0) || po.search.deadline_s > po.deadline_s))
        po.search.deadline_s = po.deadline_s;
    double t0 = sa_now_s();
    /* the MILP's answer depends on the order it is given, not monotonically
     * in the search's fitness: it solves on the first generation's best
     * order, and on the search's answer only past one generation, so that
     * more generations never give a slower plan than one (the search's own
     * best never gets slower) */
    int32_t *first = malloc((size_t)c->g->n_ops * sizeof *first + 1);
    if (!first)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", c->name);
    first[0] = -1;  /* stays -1 when no individual of the first generation planned */
    po.search.first_schedule = first;
    sa_ga_result res;
    sa_status st = sa_ga_search(c->g, c->dev, &po.search, &res, err);
    po.search.first_schedule = NULL;
    if (st) {
        free(first);
        return st;
    }
    /* the solves on both orders share what the search left */
    if (!effort) {
        po.optimal.time_limit_s = fmax(1.0, limit - (sa_now_s() - t0));
        if (!(po.deadline_s > 0) || po.deadline_s > t0 + limit)
            po.deadline_s = t0 + limit;
    }
    sa_policy_call pc = *c;
    pc.opts = &po;
    c = &pc;
    char extra[160];
    snprintf(extra, sizeof extra, "\"search_us\":%.17g,\"search_generations\":%d", res.best->predicted.iteration_us,
             res.generations);
    /* the fastest of: the MILP's decisions on the first generation's order,
     * on the search's order (when it differs, after more than one
     * generation), the search's own plan */
    sa_plan *best = res.best;
    const int32_t *orders[2];
    int n_orders = 0;
    if (first[0] >= 0)
        orders[n_orders++] = first;
    if (n_orders == 0 || (res.generations > 1 && memcmp(first, res.best->schedule, (size_t)c->g->n_ops * sizeof *first)))
        orders[n_orders++] = res.best->schedule;
    for (int k = 0; k < n_orders && st == SA_OK; k++) {
        sa_plan *p = NULL;
        bool to = false;
        st = run_optimal(c, c->name, orders[k], extra, &p, &to, err);
        if (st == SA_EINFEASIBLE) {
            st = SA_OK;
        } else if (st == SA_OK && p->predicted.iteration_us < best->predicted.iteration_us) {
            if (best != res.best)
                sa_plan_free(best);
            best = p;
        } else {
            sa_plan_free(p);
        }
    }
    if (best != res.best)
        sa_plan_free(res.best);
    free(first);
    if (st) {
        sa_plan_free(best);
        return st;
    }
    *out = best;
    return SA_OK;
}
