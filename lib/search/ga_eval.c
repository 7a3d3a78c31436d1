/* ga_eval.c - an individual's fitness: planned with its layout (the pool's,
 * repaired to fit the memory, or best fit's decisions, packed) and simulated
 * in its thread's scratch; an individual that cannot run in the memory gets
 * HUGE_VAL, never an error, so only a bug or a lack of memory ends a search. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "ga_internal.h"

void gx_tws_free(tws *w)
{
    swp_ws_free(w->swp);
    sa_sim_ws_free(w->sim);
    pack_ws_free(w->pack);
    sa_plan_free(w->p);
    free(w->need); free(w->demand); free(w->ext1); free(w->ext2); free(w->ext); free(w->sum); free(w->num);
    free(w->mark); free(w->heap); free(w->hpos); free(w->indeg); free(w->rank); free(w->tmp);
    free(w->rc); free(w->rpos);
}

bool gx_tws_init(tws *w, const gctx *c)
{
    memset(w, 0, sizeof *w);
    size_t n = (size_t)c->n + 1, s = (size_t)c->ns + 1;
    w->swp = swp_ws_new(c->g);
    w->sim = sa_sim_ws_new();
    w->pack = pack_ws_new();
    w->p = sa_plan_new(c->g, c->dev);
    w->need = calloc(s, sizeof(int32_t)); w->demand = calloc(s, sizeof(int32_t));
    w->ext1 = calloc(s, sizeof(int32_t));
    w->ext2 = calloc(s, sizeof(int32_t)); w->ext = calloc(s, sizeof(int32_t));
    w->sum = calloc(s, sizeof(int32_t)); w->num = calloc(s, sizeof(int32_t));
    w->mark = calloc(n, sizeof(int32_t)); w->heap = calloc(n, sizeof(int32_t));
    w->hpos = calloc(n, sizeof(int32_t)); w->indeg = calloc(n, sizeof(int32_t));
    w->rank = calloc(n, sizeof(int32_t));
    w->tmp = calloc(n, sizeof(int32_t));
    w->rc = calloc((size_t)c->g->n_tensors + 1, 1);
    w->rpos = calloc(n, sizeof(int32_t));
    return w->rc && w->rpos && w->swp && w->sim && w->pack && w->p && w->need && w->demand && w->ext1 && w->ext2 &&
           w->ext && w->sum && w->num && w->mark && w->heap && w->hpos && w->indeg && w->rank && w->tmp;
}

/* A pool individual's recompute flags (ga.h, pool_recompute) in w->rc: its
 * decision genes on tensors made in the forward phase (recompute: flagged;
 * evict: the rule's flag), and every forward activation with no use after
 * its forward ones, so that a gene's recompute has its chain's intermediates
 * (vgg-16's conv2_1_relu rebuilt through conv2_1 from pool1); such a flag
 * alone changes nothing (swp.h, "Recomputation": an intermediate is rebuilt
 * only inside a chain).  Backward tensors' genes act through the best-fit
 * individuals only: in the pool they made the search slower (docs/policies.md). */
const uint8_t *gx_pool_flags(const gctx *c, const tws *w, const indiv *x)
{
    const sa_dfg_graph *g = c->g;
    swp_recompute_rule(g, c->dev, x->sch, SWP_RECOMPUTE_US_PER_MB, w->rpos, w->rc);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t p = g->tensors[t].producer;
        bool fwd = p >= 0 && g->ops[p].phase == SA_DFG_FORWARD;
        w->rc[t] = fwd && (x->act[t] == DEC_RECOMPUTE || (x->act[t] == DEC_EVICT && w->rc[t]));
    }
    swp_recompute_intermediates(c->g, w->rpos, w->rc);
    return w->rc;
}

/* The planner's status for an individual: SA_EINVALID (the planner's own plan
 * deadlocks) is a bug, not bad input, and ends the search as SA_EINTERNAL. */
static sa_status planned(sa_status st, sa_err *err)
{
    if (st == SA_EINVALID) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return sa_fail(err, SA_EINTERNAL, "search: a planned individual does not simulate: %s", why);
    }
    return st;
}

/* evaluate for the best-fit layout: x's decisions on its schedule, packed;
 * unfit when the packed arena exceeds the memory.  Same contract. */
static sa_status evaluate_bestfit(const gctx *c, tws *w, indiv *x, double deadline_s, bool *cut, sa_err *err)
{
    dec_stats ds;
    dec_opts d = c->dec;
    gx_timing(&d, x->timing);
    planner_req q = {.schedule = x->sch, .layout = PLANNER_BESTFIT, .act = x->act, .dec = &d, .stats = &ds,
                     .sim = w->sim, .pack = w->pack, .within_memory = true, .deadline_s = deadline_s, .cut = cut,
                     .effort = &w->effort};
    sa_status st = planned(planner_plan(c->g, c->dev, &q, w->p, err), err);
    if (st)
        return st == SA_EINFEASIBLE ? SA_OK : st;
    if (ds.arena_bytes <= c->dev->memory_bytes)
        x->t = w->p->predicted.iteration_us;
    return SA_OK;
}

sa_status gx_evaluate(const gctx *c, tws *w, indiv *x, double deadline_s, bool *cut, sa_err *err)
{
    x->t = HUGE_VAL;
    if (x->layout == PLANNER_BESTFIT)
        return evaluate_bestfit(c, w, x, deadline_s, cut, err);
    sa_err pe;
    sa_status ps = pool_repair_any(&x->a, c->g, w->need, c->dev->memory_bytes, c->split, &pe);
    if (ps == SA_EINFEASIBLE)
        return SA_OK;
    if (ps) {
        *err = pe;
        return ps;
    }
    /* repair only shrinks; memory left unused is never better used idle */
    pool_top_up(&x->a, c->dev->memory_bytes);
    if (!pool_layout(&x->a, c->g))
        return sa_fail(err, SA_ENOMEM, "out of memory laying out a pool");
    swp_opts so = c->so;
    if (c->o->pool_recompute)
        so.recompute = gx_pool_flags(c, w, x);
    planner_req q = {.schedule = x->sch, .layout = PLANNER_POOL, .pool = &x->a, .evict = &so, .ws = w->swp,
                     .sim = w->sim, .deadline_s = deadline_s, .cut = cut, .effort = &w->effort};
    sa_status st = planned(planner_plan(c->g, c->dev, &q, w->p, err), err);
    if (st)
        return st == SA_EINFEASIBLE ? SA_OK : st;
    x->t = w->p->predicted.iteration_us;
    return SA_OK;
}

sa_status gx_fastest_timing(const gctx *c, tws *w, indiv *x, int32_t first, int32_t n, double deadline_s, bool *cut,
                            int64_t *tries, sa_err *err)
{
    uint8_t best = gx_timing_try(0, first);
    double bt = HUGE_VAL;
    for (int32_t j = 0; j < n; j++) {
        bool stop = deadline_s > 0 && sa_now_s() >= deadline_s;
        x->timing = gx_timing_try(j, first);
        if (!stop) {
            sa_status st = gx_evaluate(c, w, x, deadline_s, &stop, err);
            ++*tries;
            if (st)
                return st;
        }
        if (stop) { /* unplanned, and the search block says the deadline cut it */
#pragma omp atomic write
            *cut = true;
            break;
        }
        if (x->t < bt || (x->t == bt && x->timing < best)) {
            bt = x->t;
            best = x->timing;
        }
    }
    x->timing = best;
    x->t = bt;
    return SA_OK;
}
