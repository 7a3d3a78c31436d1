/* ga_first.c - the first generation's individuals besides the topo one: a
 * random one, one per seed (its plan's schedule and decisions), the cost
 * rule's and the recompute rule's, and the seeds' twins in the other
 * layout.  Each fills an individual allocated by the caller; a failure
 * leaves it incomplete, for the caller to free. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "ga_internal.h"

/* A random individual: random topological order, random monotone CLS, CNT
 * filling memory in proportion to demand (the floors where even those do not
 * fit).  SA_ENOMEM when copying seed0's pool fails; x is then incomplete. */
sa_status gx_random_indiv(const gctx *c, tws *w, rng *r, const indiv *seed0, indiv *x, sa_err *err)
{
    const sa_ga_mode m = c->o->mode;
    if (m == SA_GA_ALLOC_ONLY)
        memcpy(x->sch, seed0->sch, (size_t)c->n * sizeof *x->sch);
    else
        gx_walk_schedule(c, w, r, c->g->topo, 1.0, x->sch);
    if (m == SA_GA_SCHEDULE_ONLY)
        return pool_alloc_copy(&x->a, &seed0->a) ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory copying a pool");
    x->a.cls[0] = 0;
    for (int32_t i = 1; i < c->ns; i++)
        x->a.cls[i] = x->a.cls[i - 1] + (rng_unit(r) < 0.5);
    pool_repair_cls(&x->a);
    pool_class_demand(&x->a, c->g, x->sch, w->need, w->demand);
    sa_err why;
    sa_status st = pool_fill_cnt(&x->a, c->g, w->need, w->demand, c->dev->memory_bytes, &why);
    if (st == SA_EINFEASIBLE) /* the floors do not fit: evaluate's repair takes it from there */
        memcpy(x->a.cnt, w->need, (size_t)c->ns * sizeof *w->need);
    else if (st)
        return sa_fail(err, st, "%s", why.msg);
    return SA_OK;
}

/* Individual x from seed k (see ga.h): its plan's schedule and, in the
 * best-fit layout, the decisions it carries out; pool genes from base (the
 * topo individual), should a child flip the layout.  SA_EINTERNAL for a seed
 * that is not a plan of this graph; SA_ENOMEM. */
sa_status gx_seed_indiv(const gctx *c, tws *w, int32_t k, const indiv *base, indiv *x, sa_err *err)
{
    const sa_ga_seed *sd = &c->o->seeds[k];
    const sa_plan *p = sd->plan;
    const sa_dfg_graph *g = c->g;
    if (!p || p->n_schedule != c->n || p->graph_ops != c->n || p->graph_tensors != g->n_tensors)
        return sa_fail(err, SA_EINTERNAL, "search: seed %d (%s) is not a plan of this graph", k, sd->name);
    memset(w->mark, 0, (size_t)c->n * sizeof *w->mark);
    for (int32_t i = 0; i < c->n; i++) {
        int32_t op = p->schedule[i];
        if (op < 0 || op >= c->n || w->mark[op]++)
            return sa_fail(err, SA_EINTERNAL, "search: seed %d (%s): its schedule is not a permutation", k, sd->name);
        x->sch[i] = op;
    }
    if (!pool_alloc_copy(&x->a, &base->a))
        return sa_fail(err, SA_ENOMEM, "out of memory copying a pool");
    memset(x->act, DEC_KEEP, (size_t)g->n_tensors + 1);
    for (int32_t v = 0; v < p->n_nodes; v++)
        if (p->nodes[v].kind == SA_PLAN_SWAP_OUT)
            x->act[p->nodes[v].ref] = DEC_SWAP;
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *pl = &p->place[i];
        if (pl->begin >= 0 && pl->begin != pl->end && p->nodes[pl->begin].kind == SA_PLAN_RECOMPUTE)
            x->act[pl->tensor] = DEC_RECOMPUTE;
    }
    x->layout = sd->pool ? PLANNER_POOL : PLANNER_BESTFIT;
    x->timing = 0;
    x->origin = k;
    return SA_OK;
}

/* The cost rule's individual: the default order, every forward-phase
 * activation and gradient evicted (DEC_EVICT: decide.h picks swap or
 * recompute), best fit; pool genes from base. */
sa_status gx_rule_indiv(const gctx *c, const indiv *base, indiv *x, sa_err *err)
{
    const sa_dfg_graph *g = c->g;
    memcpy(x->sch, g->topo, (size_t)c->n * sizeof *x->sch);
    if (!pool_alloc_copy(&x->a, &base->a))
        return sa_fail(err, SA_ENOMEM, "out of memory copying a pool");
    memset(x->act, DEC_KEEP, (size_t)g->n_tensors + 1);
    for (int32_t k = 0; k < c->n_cand; k++) {
        int32_t op = g->tensors[c->cand[k]].producer;
        if (op >= 0 && g->ops[op].phase == SA_DFG_FORWARD)
            x->act[c->cand[k]] = DEC_EVICT;
    }
    x->layout = PLANNER_BESTFIT;
    x->timing = 0;
    x->origin = ORIGIN_RULE;
    return SA_OK;
}

/* The recompute rule's pool individual (ga.h, pool_recompute): the default
 * order and the topo individual's pool, every forward-phase activation
 * evicted (the rule picks what is recomputed). */
sa_status gx_pool_rule_indiv(const gctx *c, const indiv *base, indiv *x, sa_err *err)
{
    sa_status st = gx_rule_indiv(c, base, x, err);
    x->layout = PLANNER_POOL;
    x->origin = ORIGIN_POOL_RULE;
    return st;
}

/* The fastest seed (ga.h): its index, or -1 when none has a finite time. */
int32_t gx_best_seed(const sa_ga_opts *o)
{
    int32_t b = -1;
    for (int32_t k = 0; o->seeds && k < o->n_seeds; k++)
        if (o->seeds[k].plan && isfinite(o->seeds[k].plan->predicted.iteration_us) &&
            (b < 0 || o->seeds[k].plan->predicted.iteration_us < o->seeds[b].plan->predicted.iteration_us))
            b = k;
    return b;
}

int gx_cmp_time(const void *a, const void *b, void *ctx)
{
    const indiv *x = ctx;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (x[i].t != x[j].t)
        return x[i].t < x[j].t ? -1 : 1;
    return i - j;
}

sa_status gx_seed_twins(const gctx *c, const gx_twin_job *job, int32_t *entered, int64_t *evaluations, sa_err *err)
{
    indiv *pop = job->pop, *tw = job->twins;
    int32_t n = c->o->n_seeds, m = 0;
    *entered = 0;
    *evaluations = 0;
    for (int32_t k = 0; k < n; k++)
        m += pop[1 + k].layout == PLANNER_POOL;
    int32_t each = m > 0 ? gx_fill_cap(c) / m : 0;
    each = each < 1 ? 1 : each > GA_TIMINGS ? GA_TIMINGS : each;
    int64_t evals = 0;
#pragma omp parallel for num_threads(job->threads) schedule(dynamic, 1) reduction(+ : evals)
    for (int32_t k = 0; k < n; k++) {
        const indiv *x = &pop[1 + k];
        indiv *y = &tw[k];
        tws *w = &job->ws[omp_get_thread_num()];
        memcpy(y->sch, x->sch, (size_t)c->n * sizeof *y->sch);
        memcpy(y->act, x->act, (size_t)c->g->n_tensors + 1);
        y->origin = x->origin;
        y->layout = x->layout == PLANNER_POOL ? PLANNER_BESTFIT : PLANNER_POOL;
        y->t = HUGE_VAL;
        job->est[k] = pool_alloc_copy(&y->a, &x->a) ? SA_OK
                                                     : sa_fail(&job->eerr[k], SA_ENOMEM, "out of memory copying a pool");
        /* a pool plan reads no timing: one try, and the twin keeps its seed's
         * timing gene, should a child flip it back */
        if (!job->est[k])
            job->est[k] = gx_fastest_timing(c, w, y, 0, y->layout == PLANNER_BESTFIT ? each : 1, job->deadline_s,
                                            job->cut, &evals, &job->eerr[k]);
        if (y->layout == PLANNER_POOL)
            y->timing = x->timing;
    }
    *evaluations = evals;
    for (int32_t k = 0; k < n; k++)
        if (job->est[k]) {
            *err = job->eerr[k];
            return job->est[k];
        }
    double lead = HUGE_VAL; /* generation 0's fastest individual */
    for (int32_t i = 0; i < job->np; i++)
        lead = fmin(lead, pop[i].t);
    int32_t q = 0;
    for (int32_t k = 0; k < n; k++)
        if (tw[k].t < lead)
            job->order[q++] = k;
    qsort_r(job->order, (size_t)q, sizeof *job->order, gx_cmp_time, tw);
    if (q > job->np - job->from)
        q = job->np - job->from;
    for (int32_t j = 0; j < q; j++) { /* the twin and the random individual trade places */
        indiv t = pop[job->from + j];
        pop[job->from + j] = tw[job->order[j]];
        tw[job->order[j]] = t;
    }
    *entered = q;
    return SA_OK;
}
