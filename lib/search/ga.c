/* ga.c - the parallel genetic search of schedules and memory-pool allocations. */
#include "swapadvisor/planner.h"
#include "swapadvisor/ga.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/pool.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/sim.h"
#include "ga_internal.h"

void sa_ga_opts_default(sa_ga_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->threads = 1;
    o->population = 24;
    o->generations = SA_GA_GENERATIONS_AUTO;
    o->mutation = 0.05;
    o->temperature = 0; /* by the effort: sa_ga_temperature */
    o->mode = SA_GA_BOTH;
}

const char *sa_ga_mode_name(sa_ga_mode m)
{
    return m == SA_GA_SCHEDULE_ONLY ? "schedule" : m == SA_GA_ALLOC_ONLY ? "alloc" : "both";
}

/* A new plan with p's contents (search block aside) for g; NULL on OOM. */
static sa_plan *copy_plan(const sa_plan *p, const sa_dfg_graph *g)
{
    sa_plan *q = sa_plan_new(g, &p->device);
    bool ok = q && sa_plan_set_schedule(q, p->schedule, p->n_schedule);
    for (int32_t v = 0; ok && v < p->n_nodes; v++)
        ok = sa_plan_add_node(q, p->nodes[v].kind, p->nodes[v].ref,
                           p->nodes[v].n_deps ? p->deps + p->nodes[v].dep_off : NULL, /* no deps at all: NULL */
                           p->nodes[v].n_deps) == v;
    for (int32_t i = 0; ok && i < p->n_place; i++)
        ok = sa_plan_add_placement(q, p->place[i].tensor, p->place[i].offset, p->place[i].begin, p->place[i].end);
    for (int32_t i = 0; ok && i < p->n_res; i++)
        ok = sa_plan_add_resident(q, p->res[i].tensor, p->res[i].offset);
    if (!ok) {
        sa_plan_free(q);
        return NULL;
    }
    q->arena_bytes = p->arena_bytes;
    q->predicted = p->predicted;
    return q;
}

typedef struct cand { double w; int32_t idx; } cand;

/* ---- the search ---- */

/* The whole search's state: np parents in pop[0 .. np), the generation's
 * 2 np children after them; one workspace per thread. */
typedef struct search {
    gctx c;
    int32_t np, nkids, total;
    int gens;               /* sa_ga_opts.generations; SA_GA_AUTO_MAX under SA_GA_GENERATIONS_AUTO */
    double effort_max;      /* SA_GA_GENERATIONS_AUTO's budget (sa_ga_opts.auto_effort); 0: none */
    int threads;
    double t0;
    indiv *pop, *next;
    tws *ws;
    int32_t *order, *keep;
    int32_t (*pairs)[3];
    cand *cands;
    sa_status *est;         /* per individual: the status of its last job */
    sa_err *eerr;           /* and its error, read when est is not SA_OK */
    double *best_hist, *time_hist;
    int hist_cap;
    double tbest;
    bool cut;               /* the deadline stopped an evaluation (sa_ga_opts.deadline_s) */
    double gen_deadline;    /* the generations' share of it (0: none): the fill has the rest */
    int n_mid;              /* fills run during the search (SA_GA_AUTO_FILLS), and what each did */
    struct { int gen; int32_t tried; double from, to; } mid[SA_GA_AUTO_FILLS];
    double mid_effort;      /* theirs, part of effort_so_far */
    int32_t retimed;        /* generation 0's individuals that fit only with another timing (retime_seeds) */
    int32_t twins;          /* and the seeds' twins that took a random one's place (gx_seed_twins) */
    double affordable;      /* under the default effort: the generations the budget buys at generation
                             * 0's mean effort per evaluation (0 before it is known) */
} search;

static void search_free(search *s)
{
    for (int32_t i = 0; s->pop && i < s->total; i++)
        gx_indiv_free(&s->pop[i]);
    for (int i = 0; s->ws && i < s->threads; i++)
        gx_tws_free(&s->ws[i]);
    free(s->pop); free(s->ws); free(s->order); free(s->pairs); free(s->cands); free(s->keep); free(s->next);
    free(s->est); free(s->eerr); free(s->best_hist); free(s->time_hist); free(s->c.cand);
}

/* Allocates everything the search needs.  SA_ENOMEM (s then holds what was
 * allocated, for search_free). */
static sa_status search_init(search *s, const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_ga_opts *o, sa_err *err)
{
    memset(s, 0, sizeof *s);
    s->np = gx_population(o->population);
    s->nkids = 2 * s->np;
    s->total = s->np + s->nkids;
    bool auto_gens = o->generations == SA_GA_GENERATIONS_AUTO;
    s->gens = auto_gens ? SA_GA_AUTO_MAX : o->generations;
    s->effort_max = !auto_gens ? 0 : o->auto_effort > 0 ? o->auto_effort : SA_GA_AUTO_EFFORT;
    s->threads = o->threads > 0 ? o->threads : 1;
    s->c = (gctx){g, dev, o, {0}, g->n_ops, g->n_sizes, false, o->n_seeds > 0 && o->seeds, {0}, NULL, 0};
    swp_opts_default(&s->c.so);
    dec_opts_default(&s->c.dec);
    s->t0 = omp_get_wtime();
    /* with seeds the fill runs after the generations: it gets the last tenth */
    double now = sa_now_s(), d = o->deadline_s;
    s->gen_deadline = d > 0 && s->c.joint && d > now ? now + 0.9 * (d - now) : d;
    size_t total = (size_t)s->total;
    s->pop = calloc(total, sizeof *s->pop);
    s->ws = calloc((size_t)s->threads, sizeof *s->ws);
    s->order = calloc(total, sizeof *s->order);
    s->pairs = calloc((size_t)s->np / 2 + 1, sizeof *s->pairs);
    s->cands = calloc(total, sizeof *s->cands);
    s->keep = calloc(total, sizeof *s->keep);
    s->next = calloc(total, sizeof *s->next);
    s->est = calloc(total, sizeof *s->est);
    s->eerr = calloc(total, sizeof *s->eerr);
    s->hist_cap = 1024;
    s->best_hist = calloc((size_t)s->hist_cap, sizeof *s->best_hist);
    s->time_hist = calloc((size_t)s->hist_cap, sizeof *s->time_hist);
    s->c.cand = calloc((size_t)g->n_tensors + 1, sizeof *s->c.cand);
    bool ok = s->pop && s->ws && s->order && s->pairs && s->cands && s->keep && s->next && s->est && s->eerr &&
              s->best_hist && s->time_hist && s->c.cand;
    for (int32_t t = 0; ok && t < g->n_tensors; t++) {
        sa_dfg_kind k = g->tensors[t].kind;
        if (!sa_dfg_kind_persistent(k) && k != SA_DFG_WORKSPACE && k != SA_DFG_INPUT)
            s->c.cand[s->c.n_cand++] = t;
    }
    for (int32_t i = 0; ok && i < s->total; i++)
        ok = gx_indiv_init(&s->pop[i], &s->c);
    for (int i = 0; ok && i < s->threads; i++)
        ok = gx_tws_init(&s->ws[i], &s->c);
    return ok ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory starting the search");
}

/* The planner's effort of every evaluation so far: a sum over individuals,
 * so the same whatever thread evaluated which. */
static int64_t effort_so_far(const search *s)
{
    return gx_effort(s->ws, s->threads);
}

/* The first error among individuals [from, to) of the last parallel job, in
 * index order (so the error does not depend on the thread count), into err. */
static sa_status first_error(const search *s, int32_t from, int32_t to, sa_err *err)
{
    for (int32_t i = from; i < to; i++)
        if (s->est[i]) {
            if (err)
                *err = s->eerr[i];
            return s->est[i];
        }
    return SA_OK;
}

/* Whether individual i goes unevaluated: the deadline has passed.  Without
 * seeds individual 0 (the topo policy's) is always evaluated, so that the
 * search has an answer however early the deadline. */
static bool skip_eval(search *s, int32_t i)
{
    double d = s->gen_deadline;
    if (!(d > 0) || (i == 0 && !s->c.joint) || sa_now_s() < d)
        return false;
#pragma omp atomic write
    s->cut = true;
    s->pop[i].t = HUGE_VAL; /* unplanned, as an individual that fits no memory */
    return true;
}

/* Evaluates individual i in workspace w unless the deadline has passed; an
 * evaluation the deadline stops part-way leaves it unplanned too (s->cut),
 * but never the one skip_eval always evaluates. */
static sa_status evaluate_one(search *s, tws *w, int32_t i, sa_err *err)
{
    if (skip_eval(s, i))
        return SA_OK;
    bool cut = false;
    double d = i == 0 && !s->c.joint ? 0 : s->gen_deadline;
    sa_status st = gx_evaluate(&s->c, w, &s->pop[i], d, &cut, err);
    if (cut) {
#pragma omp atomic write
        s->cut = true;
    }
    return st;
}

/* Evaluates individuals [from, to) in parallel; the first error, if any. */
static sa_status evaluate_range(search *s, int32_t from, int32_t to, sa_err *err)
{
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
    for (int32_t i = from; i < to; i++)
        s->est[i] = evaluate_one(s, &s->ws[omp_get_thread_num()], i, &s->eerr[i]);
    return first_error(s, from, to, err);
}

/* Generation 0's places: 0 is the topo policy's individual; with seeds, 1 ..
 * n_seeds theirs (in seed order) and then the cost rule's; the pool rule's
 * next where asked; the random individuals from .random on.  A place past
 * the population is not filled.  -1: no such place. */
typedef struct gen0_places {
    int32_t rule, pool_rule, random;
} gen0_places;

static gen0_places places_of(const search *s)
{
    int32_t next = s->c.joint ? s->c.o->n_seeds + 1 : 1;
    gen0_places p = {-1, -1, 0};
    if (s->c.joint)
        p.rule = next++;
    if (s->c.o->pool_recompute)
        p.pool_rule = next++;
    p.random = next;
    return p;
}

/* A seed's best-fit individual (or the cost rule's) that does not fit with
 * timing 0 takes the fastest of other timings (the lowest on a tie; 1 when
 * none fits), as the baselines fall back to synchronous swap-outs and late
 * swap-ins in little memory: their decisions then enter the search as their
 * plans carry them out.  Timing 1, then from the latest timing back, each at
 * most the fill's cap (gx_fill_cap) over the number of those individuals, at
 * least one: about a fill's plans (six on a 100,000-op chain: timing 1 only).  One thread tries one
 * individual's timings: the same at any thread count.  s->retimed: those
 * that fit so.  An evaluation's error (the first in index order). */
static sa_status retime_seeds(search *s, sa_ga_result *res, sa_err *err)
{
    int32_t to = places_of(s).rule + 1, n = 0, m = 0;
    to = to < s->np ? to : s->np;
    for (int32_t i = 1; i < to; i++)
        m += !isfinite(s->pop[i].t) && s->pop[i].layout == PLANNER_BESTFIT;
    int32_t each = m > 0 ? gx_fill_cap(&s->c) / m : 0;
    each = each < 1 ? 1 : each > GA_TIMINGS - 1 ? GA_TIMINGS - 1 : each;
    int64_t tries = 0;
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1) reduction(+ : tries, n)
    for (int32_t i = 1; i < to; i++) {
        indiv *x = &s->pop[i];
        bool cut;
#pragma omp atomic read
        cut = s->cut;
        s->est[i] = SA_OK;
        if (isfinite(x->t) || x->layout != PLANNER_BESTFIT || cut)
            continue;
        s->est[i] = gx_fastest_timing(&s->c, &s->ws[omp_get_thread_num()], x, 1, each, s->gen_deadline, &s->cut,
                                      &tries, &s->eerr[i]);
        n += isfinite(x->t);
    }
    res->evaluations += tries;
    s->retimed = n;
    return first_error(s, 1, to, err);
}

/* Generation 0: individual 0 is the topo policy's (the default order, one
 * class per size), then, with seeds, one per seed (as many as fit) and the
 * rules', the others random; all evaluated, then the seeds' unfit best-fit
 * individuals retimed and their twins in the other layout put in the random
 * ones' places where they lead it.  SA_EINFEASIBLE when no pool fits the memory at
 * all; SA_ENOMEM; SA_EINTERNAL. */
static sa_status first_generation(search *s, sa_ga_result *res, sa_err *err)
{
    const sa_dfg_graph *g = s->c.g;
    const sa_ga_opts *o = s->c.o;
    const gen0_places at = places_of(s);
    sa_status st;
    memcpy(s->pop[0].sch, g->topo, (size_t)s->c.n * sizeof *g->topo);
    if ((st = pool_fine_grained(&s->pop[0].a, g, g->topo, s->c.dev->memory_bytes, err)))
        return st;
    if (!pool_fixed_fits(g, s->c.dev->memory_bytes, &s->c.split))
        return sa_fail(err, SA_ENOMEM, "out of memory starting the search");
    s->c.split = !s->c.split;
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
    for (int32_t i = 1; i < s->np; i++) {
        rng r;
        rng_seed(&r, o->seed, 0, (uint64_t)i);
        tws *w = &s->ws[omp_get_thread_num()];
        if (s->c.joint && i - 1 < o->n_seeds)
            s->est[i] = gx_seed_indiv(&s->c, w, i - 1, &s->pop[0], &s->pop[i], &s->eerr[i]);
        else if (i == at.rule)
            s->est[i] = gx_rule_indiv(&s->c, &s->pop[0], &s->pop[i], &s->eerr[i]);
        else if (i == at.pool_rule)
            s->est[i] = gx_pool_rule_indiv(&s->c, &s->pop[0], &s->pop[i], &s->eerr[i]);
        else
            s->est[i] = gx_random_indiv(&s->c, w, &r, &s->pop[0], &s->pop[i], &s->eerr[i]);
    }
    if ((st = first_error(s, 1, s->np, err)) || (st = evaluate_range(s, 0, s->np, err)))
        return st;
    res->evaluations = s->np;
    if (s->c.joint && (st = retime_seeds(s, res, err)))
        return st;
    if (s->c.joint && at.random < s->np) {
        gx_twin_job job = {s->pop, s->pop + s->np, at.random, s->np, s->ws, s->threads, s->gen_deadline, &s->cut,
                           s->est + s->np, s->eerr + s->np, s->order};
        int64_t ev;
        if ((st = gx_seed_twins(&s->c, &job, &s->twins, &ev, err)))
            return st;
        res->evaluations += ev;
    }
    int32_t bi = 0;
    for (int32_t i = 1; i < s->np; i++)
        if (s->pop[i].t < s->pop[bi].t)
            bi = i;
    s->tbest = s->np > 0 ? s->pop[bi].t : HUGE_VAL;
    res->first_us = s->tbest;
    if (o->first_schedule && isfinite(s->tbest))
        memcpy(o->first_schedule, s->pop[bi].sch, (size_t)s->c.n * sizeof *o->first_schedule);
    return SA_OK;
}

/* The fastest planned individual of the layout among pop[0 .. n) (the
 * earliest on a tie), or -1; the best-fit one is what the fill works on. */
static int32_t best_of(const indiv *pop, int32_t n, planner_layout layout)
{
    int32_t b = -1;
    for (int32_t i = 0; i < n; i++)
        if (pop[i].layout == layout && isfinite(pop[i].t) && (b < 0 || pop[i].t < pop[b].t))
            b = i;
    return b;
}

/* Records generation gen (history, the caller's callback) and says whether
 * the search stops here.  SA_ENOMEM growing the history. */
static sa_status end_of_generation(search *s, int gen, const sa_ga_result *res, bool *stop, sa_err *err)
{
    const sa_ga_opts *o = s->c.o;
    double sum = 0, worst = 0;
    int32_t feas = 0;
    for (int32_t i = 0; i < s->np; i++)
        if (isfinite(s->pop[i].t)) {
            sum += s->pop[i].t;
            worst = fmax(worst, s->pop[i].t);
            feas++;
        }
    double elapsed = omp_get_wtime() - s->t0;
    if (gen >= s->hist_cap) {
        int cap = 2 * s->hist_cap;
        double *b = realloc(s->best_hist, (size_t)cap * sizeof *b);
        if (b)
            s->best_hist = b;
        double *t = b ? realloc(s->time_hist, (size_t)cap * sizeof *t) : NULL;
        if (!t)
            return sa_fail(err, SA_ENOMEM, "out of memory in the search");
        s->time_hist = t;
        s->hist_cap = cap;
    }
    s->best_hist[gen] = s->tbest;
    s->time_hist[gen] = elapsed;
    if (o->on_generation) {
        sa_ga_gen_stats gs = {gen, res->evaluations, elapsed, s->tbest, feas ? sum / feas : HUGE_VAL, worst,
                           sa_dfg_total_time_us(s->c.g)};
        o->on_generation(&gs, o->ctx);
    }
    /* fewer than SA_GA_AUTO_FEW affordable: none are bred, the fill has the time */
    bool few = false;
    if (gen == 0 && s->effort_max > 0 && res->evaluations > 0) {
        double per_gen = (double)effort_so_far(s) / (double)res->evaluations * (double)s->nkids;
        s->affordable = per_gen > 0 ? s->effort_max / per_gen : SA_GA_AUTO_MAX;
        few = s->affordable < SA_GA_AUTO_FEW && s->c.joint && best_of(s->pop, s->np, PLANNER_BESTFIT) >= 0;
    }
    *stop = (s->gens > 0 && gen >= s->gens) || (o->time_limit_s > 0 && elapsed >= o->time_limit_s) || few ||
            (s->effort_max > 0 && gen >= SA_GA_AUTO_MIN && (double)effort_so_far(s) >= s->effort_max) ||
            (s->gens <= 0 && o->time_limit_s <= 0) || s->cut ||
            (s->gen_deadline > 0 && sa_now_s() >= s->gen_deadline);
    return SA_OK;
}

/* Child j of generation gen from pair j / 4: 2 schedules x 2 allocations,
 * crossed over and mutated with the child's own random streams. */
static void make_child(search *s, tws *w, int gen, int32_t j)
{
    const sa_ga_opts *o = s->c.o;
    const gctx *c = &s->c;
    indiv *kid = &s->pop[s->np + j];
    const indiv *pa = &s->pop[s->pairs[j / 4][0]], *pb = &s->pop[s->pairs[j / 4][1]];
    int v = j % 4;
    rng r, pr;
    rng_seed(&r, o->seed, (uint64_t)gen, (uint64_t)(j + 1));
    rng_seed(&pr, o->seed, (uint64_t)gen, UINT64_C(0x10000) + (uint64_t)(j / 4));
    int32_t acr = 1 + rng_below(&pr, c->ns > 1 ? c->ns - 1 : 1);
    const indiv *sh = (v & 1) ? pb : pa, *st_ = (v & 1) ? pa : pb;
    const indiv *ah = (v & 2) ? pb : pa, *at = (v & 2) ? pa : pb;
    if (o->mode == SA_GA_ALLOC_ONLY) {
        memcpy(kid->sch, pa->sch, (size_t)c->n * sizeof *kid->sch);
    } else {
        gx_cross_schedule(c, w, sh->sch, st_->sch, s->pairs[j / 4][2], w->tmp);
        gx_walk_schedule(c, w, &r, w->tmp, o->mutation, kid->sch);
    }
    if (o->mode != SA_GA_SCHEDULE_ONLY) {
        kid->a.n_classes = 0;
        gx_cross_alloc(w, &ah->a, &at->a, acr, &kid->a);
        gx_mutate_alloc(c, w, &r, &kid->a);
    }
    kid->layout = PLANNER_POOL;
    kid->origin = ah->origin;
    if (c->joint || o->pool_recompute)
        gx_joint_genes(c, gen, j, o->mode == SA_GA_SCHEDULE_ONLY ? pa : ah, at, kid);
}

/* Pairs the parents (a shuffle drawn from gr), makes and evaluates the
 * generation's children in parallel.  SA_ENOMEM / SA_EINTERNAL. */
static sa_status breed(search *s, int gen, rng *gr, sa_err *err)
{
    int32_t np = s->np;
    for (int32_t i = 0; i < np; i++)
        s->order[i] = i;
    for (int32_t i = np - 1; i > 0; i--) {
        int32_t j = rng_below(gr, i + 1), t = s->order[i];
        s->order[i] = s->order[j];
        s->order[j] = t;
    }
    for (int32_t q = 0; q < np / 2; q++) {
        s->pairs[q][0] = s->order[2 * q];
        s->pairs[q][1] = s->order[2 * q + 1];
        s->pairs[q][2] = 1 + rng_below(gr, s->c.n > 1 ? s->c.n - 1 : 1); /* schedule crossover point */
    }
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
    for (int32_t j = 0; j < s->nkids; j++) {
        tws *w = &s->ws[omp_get_thread_num()];
        indiv *kid = &s->pop[np + j];
        make_child(s, w, gen, j);
        if (s->c.o->mode == SA_GA_SCHEDULE_ONLY && !pool_alloc_copy(&kid->a, &s->pop[s->pairs[j / 4][0]].a))
            s->est[np + j] = sa_fail(&s->eerr[np + j], SA_ENOMEM, "out of memory copying a pool");
        else
            s->est[np + j] = evaluate_one(s, w, np + j, &s->eerr[np + j]);
    }
    return first_error(s, np, s->total, err);
}

/* Survival: the best, then softmax draws without replacement (from gr);
 * survivors move into the parent slots.  With seeds the best individual of
 * the other layout survives as well: a seed's best-fit decisions may start
 * no faster than the pool individuals, and a pool lineage behind a best-fit
 * one is slower for many generations before it overtakes it; the draws
 * would otherwise lose either before it improves. */
static void survive(search *s, rng *gr)
{
    const sa_ga_opts *o = s->c.o;
    int32_t np = s->np, total = s->total;
    indiv *pop = s->pop;
    for (int32_t i = 0; i < total; i++) {
        s->order[i] = i;
        if (pop[i].t < s->tbest)
            s->tbest = pop[i].t;
    }
    qsort_r(s->order, (size_t)total, sizeof *s->order, gx_cmp_time, pop);
    int32_t nc = 0;
    for (int32_t i = 1; i < total; i++) {
        double t = pop[s->order[i]].t;
        double tn = isfinite(t) ? (s->tbest - t) / s->tbest : -HUGE_VAL;
        s->cands[nc++] = (cand){exp(tn / sa_ga_temperature(o)), s->order[i]};
    }
    int32_t nk = 0;
    s->keep[nk++] = s->order[0];
    if (s->c.joint)
        for (int32_t i = 0; i < nc; i++) /* the other layout's best survives too */
            if (pop[s->cands[i].idx].layout != pop[s->order[0]].layout && isfinite(pop[s->cands[i].idx].t)) {
                s->keep[nk++] = s->cands[i].idx;
                memmove(&s->cands[i], &s->cands[i + 1], (size_t)(nc - i - 1) * sizeof *s->cands);
                nc--;
                break;
            }
    while (nk < np) {
        double wsum = 0;
        for (int32_t i = 0; i < nc; i++)
            wsum += s->cands[i].w;
        int32_t pick = 0; /* only infeasible ones left: take the fastest */
        if (wsum > 0) {
            double u = rng_unit(gr) * wsum;
            pick = nc - 1;
            for (int32_t i = 0; i < nc; i++) {
                u -= s->cands[i].w;
                if (u < 0) { pick = i; break; }
            }
        }
        s->keep[nk++] = s->cands[pick].idx;
        /* keep the remaining candidates in time order so ties resolve alike */
        memmove(&s->cands[pick], &s->cands[pick + 1], (size_t)(nc - pick - 1) * sizeof *s->cands);
        nc--;
    }
    /* survivors into the parent slots (a permutation of the structs) */
    for (int32_t i = 0; i < total; i++)
        s->order[i] = 0;
    for (int32_t i = 0; i < np; i++)
        s->order[s->keep[i]] = 1;
    for (int32_t i = 0, k = np; i < total; i++)
        if (!s->order[i])
            s->keep[k++] = i;
    for (int32_t i = 0; i < total; i++)
        s->next[i] = pop[s->keep[i]];
    memcpy(pop, s->next, (size_t)total * sizeof *pop);
}

/* Under the default effort, the fill of the best best-fit parent when the
 * effort has passed another (SA_GA_AUTO_FILLS + 1)-th of the budget, at most
 * one a generation (ga.h); s->tbest follows.  Only where a fill's tries, at
 * the mean effort of the evaluations so far, cost at most an eighth of the
 * budget: on nasnet-25 one fill costs about three generations.  Only at
 * generation ends: the same at any thread count.  The fill's errors
 * (SA_ENOMEM, an evaluation's). */
static sa_status fill_during(search *s, int gen, int64_t evaluations, sa_err *err)
{
    double spent = (double)effort_so_far(s);
    if (!(s->effort_max > 0) || !s->c.joint || s->n_mid >= SA_GA_AUTO_FILLS || evaluations <= 0 ||
        spent < s->effort_max * (s->n_mid + 1) / (SA_GA_AUTO_FILLS + 1) ||
        (double)gx_fill_most(&s->c) * (spent - s->mid_effort) / (double)evaluations > s->effort_max / 8)
        return SA_OK;
    int32_t bf = best_of(s->pop, s->np, PLANNER_BESTFIT), kept, switched, tried;
    if (bf < 0)
        return SA_OK; /* none yet: a later generation may have one */
    double from = s->pop[bf].t;
    sa_status st = gx_fill_memory(&s->c, s->ws, s->threads, &s->pop[bf], s->c.o->deadline_s, &kept, &switched, &tried,
                                  err);
    if (st)
        return st;
    s->tbest = fmin(s->tbest, s->pop[bf].t);
    s->mid_effort += (double)effort_so_far(s) - spent;
    s->mid[s->n_mid].gen = gen;
    s->mid[s->n_mid].tried = tried;
    s->mid[s->n_mid].from = from;
    s->mid[s->n_mid++].to = s->pop[bf].t;
    return SA_OK;
}

/* One exchange (sa_ga_opts.migrate): offers the best o->migrants parents, calls
 * the hook, checks the genomes it returns and puts them, evaluated, in place
 * of the worst parents.  *stop: the hook asks to end the search. */
static sa_status exchange(search *s, int gen, bool final, bool *stop, sa_ga_result *res, sa_err *err)
{
    const sa_ga_opts *o = s->c.o;
    int32_t np = s->np, words = sa_ga_genome_words(s->c.g);
    int k = o->migrants;
    int32_t *out = malloc((size_t)k * (size_t)words * sizeof *out);
    double *out_us = malloc((size_t)k * sizeof *out_us);
    if (!out || !out_us) {
        free(out);
        free(out_us);
        return sa_fail(err, SA_ENOMEM, "out of memory in a migration");
    }
    for (int32_t i = 0; i < np; i++)
        s->order[i] = i;
    qsort_r(s->order, (size_t)np, sizeof *s->order, gx_cmp_time, s->pop);
    for (int i = 0; i < k; i++) {
        gx_genome_export(&s->c, &s->pop[s->order[i]], out + (size_t)i * (size_t)words);
        out_us[i] = s->pop[s->order[i]].t;
    }
    sa_ga_migration m = {gen, final, words, k, out, out_us, NULL, 0, false};
    sa_status st = o->migrate(&m, o->migrate_ctx, err);
    free(out);
    free(out_us);
    if (st)
        return st;
    if (m.n_in < 0 || m.n_in > np - 1 || (m.n_in > 0 && !m.in))
        return sa_fail(err, SA_EUSAGE, "migration at generation %d: %d genomes for a population of %d (at most %d)",
                       gen, m.n_in, np, np - 1);
    /* a migrant's origin indexes its own island's seeds, which a deadline may
     * have cut shorter or left longer than ours: one past our seeds reads as
     * none (it only names the seed) */
    int n_seeds = s->c.joint ? o->n_seeds : 0;
    for (int j = 0; j < m.n_in; j++) {
        sa_err e2 = {0};
        if ((st = gx_genome_check(s->c.g, m.in + (size_t)j * (size_t)words, s->ws[0].tmp, &e2)))
            return sa_fail(err, st, "migrant %d at generation %d: %s", j, gen, e2.msg);
    }
    for (int j = 0; j < m.n_in; j++) {
        indiv *x = &s->pop[s->order[np - 1 - j]];
        gx_genome_import(&s->c, m.in + (size_t)j * (size_t)words, x);
        if (x->origin >= n_seeds)
            x->origin = ORIGIN_NONE;
    }
#pragma omp parallel for num_threads(s->threads) schedule(dynamic, 1)
    for (int j = 0; j < m.n_in; j++) {
        int32_t i = s->order[np - 1 - j];
        s->est[i] = gx_evaluate(&s->c, &s->ws[omp_get_thread_num()], &s->pop[i], 0, NULL, &s->eerr[i]);
    }
    for (int j = 0; j < m.n_in; j++) /* the first error in migrant order, whatever the threads */
        if ((st = s->est[s->order[np - 1 - j]])) {
            *err = s->eerr[s->order[np - 1 - j]];
            return st;
        }
    res->evaluations += m.n_in;
    for (int32_t i = 0; i < np; i++)
        s->tbest = fmin(s->tbest, s->pop[i].t);
    *stop = m.stop;
    return SA_OK;
}

/* The joint members of the search block (empty without seeds): the answer's
 * layout ("seed" when a seed's own plan is the answer), each layout's best
 * parent (null: none planned), the seed the answer's genes descend from,
 * the fastest seed and the answer's gain over it. */
static void seed_json(const search *s, const indiv *x, int32_t bs, bool seed_won, char *buf, size_t len)
{
    const sa_ga_opts *o = s->c.o;
    buf[0] = 0;
    if (!s->c.joint)
        return;
    double su = bs >= 0 ? o->seeds[bs].plan->predicted.iteration_us : HUGE_VAL, t = seed_won ? su : x->t;
    const planner_layout lay[2] = {PLANNER_BESTFIT, PLANNER_POOL};
    char ls[2][32];
    for (int k = 0; k < 2; k++) {
        int32_t b = best_of(s->pop, s->np, lay[k]);
        if (b < 0)
            snprintf(ls[k], sizeof ls[k], "null");
        else
            snprintf(ls[k], sizeof ls[k], "%.3f", s->pop[b].t);
    }
    snprintf(buf, len,
             ",\"layout\":\"%s\",\"layout_best_us\":{\"bestfit\":%s,\"pool\":%s},\"origin\":\"%s\","
             "\"seeds\":%d,\"retimed\":%d,\"twins\":%d,\"best_seed\":\"%s\",\"best_seed_us\":%.3f,\"gain_pct\":%.3f,\"answer\":\"%s\"",
             seed_won ? "seed" : x->layout == PLANNER_BESTFIT ? "bestfit" : "pool", ls[0], ls[1],
             seed_won ? o->seeds[bs].name
             : x->origin >= 0 ? o->seeds[x->origin].name
             : x->origin == ORIGIN_RULE ? "cost-rule" : x->origin == ORIGIN_POOL_RULE ? "pool-recompute-rule" : "none",
             o->n_seeds, (int)s->retimed, (int)s->twins,
             bs >= 0 ? o->seeds[bs].name : "none", bs >= 0 ? su : 0.0,
             bs >= 0 && isfinite(t) ? 100.0 * (su - t) / su : 0.0, seed_won ? "seed" : "search");
}

/* The best parent becomes res->best, planned again (or, when the fastest
 * seed is faster, a copy of that seed's plan) and described by its search
 * block.  SA_EINFEASIBLE when neither an individual nor a seed could be
 * planned; SA_ENOMEM; SA_EINTERNAL. */
static sa_status finish(search *s, int gen, sa_ga_result *res, sa_err *err)
{
    const sa_dfg_graph *g = s->c.g;
    const sa_dfg_device *dev = s->c.dev;
    const sa_ga_opts *o = s->c.o;
    indiv *pop = s->pop;
    int32_t bi = 0;
    gx_end_fill ef = {.best = -1};
    double fill_s = 0;
    for (int32_t i = 0; i < s->np; i++)
        if (pop[i].t < pop[bi].t)
            bi = i;
    int64_t gen_effort = res->effort = effort_so_far(s);
    if (s->c.joint) {
        double t0 = omp_get_wtime();
        sa_status fst = gx_fill_end(&s->c, s->ws, s->threads, pop, s->np, (double)gen_effort, o->deadline_s, &ef, err);
        if (fst)
            return fst;
        fill_s = omp_get_wtime() - t0;
    }
    /* where a pool individual is the best after the best parent's fill alone,
     * its counts get the same kind of pass, as with one fill: the later fills
     * then never make the answer slower */
    int32_t bp = bi;
    bool pool_pass = s->c.joint && pop[bp].layout == PLANNER_POOL && !(ef.filled > 0 && ef.each_to[0] < pop[bp].t);
    if (ef.best >= 0 && pop[ef.best].t < pop[bi].t)
        bi = ef.best;
    int64_t fill_effort = effort_so_far(s) - gen_effort;
    char pfill[256] = "";
    sa_status pst = pool_pass ? gx_fill_pool_json(&s->c, s->ws, s->threads, &pop[bp], o->deadline_s, pfill,
                                                  sizeof pfill, err)
                              : SA_OK;
    if (pst)
        return pst;
    if (pool_pass && pop[bp].t < pop[bi].t)
        bi = bp;
    int32_t bs = s->c.joint ? gx_best_seed(o) : -1;
    bool seed_won = bs >= 0 && !(pop[bi].t <= o->seeds[bs].plan->predicted.iteration_us);
    if (!isfinite(pop[bi].t) && !seed_won)
        return sa_fail(err, SA_EINFEASIBLE, "no schedule and allocation could be planned in %lld bytes",
                       (long long)dev->memory_bytes);
    double t_ans = seed_won ? o->seeds[bs].plan->predicted.iteration_us : pop[bi].t;
    if (seed_won) {
        if (!(res->best = copy_plan(o->seeds[bs].plan, g)))
            return sa_fail(err, SA_ENOMEM, "out of memory");
    } else {
        if (!(res->best = sa_plan_new(g, dev)))
            return sa_fail(err, SA_ENOMEM, "out of memory");
        dec_stats ds;
        dec_opts d = s->c.dec;
        gx_timing(&d, pop[bi].timing);
        swp_opts so = s->c.so;
        if (o->pool_recompute && pop[bi].layout == PLANNER_POOL)
            so.recompute = gx_pool_flags(&s->c, &s->ws[0], &pop[bi]);
        planner_req q = {.schedule = pop[bi].sch, .layout = pop[bi].layout, .pool = &pop[bi].a, .evict = &so,
                         .ws = s->ws[0].swp, .act = pop[bi].act, .dec = &d, .stats = &ds, .sim = s->ws[0].sim,
                         .pack = s->ws[0].pack};
        sa_status st = planner_plan(g, dev, &q, res->best, err);
        if (st)
            return st;
    }
    res->wall_s = omp_get_wtime() - s->t0;
    for (int k = 0; k <= gen; k++)
        if (s->best_hist[k] <= 1.01 * t_ans) {
            res->time_to_1pct_s = s->time_hist[k];
            break;
        }
    char joint[512], json[4096], first[64] = "";
    /* JSON has no infinity: without a planned individual (every one cut by
     * the deadline) the member is left out */
    if (isfinite(res->first_us))
        snprintf(first, sizeof first, ",\"first_generation_us\":%.3f", res->first_us);
    char aff[64] = "";
    if (s->affordable > 0)
        snprintf(aff, sizeof aff, ",\"affordable_generations\":%.1f", s->affordable);
    seed_json(s, &pop[bi], bs, seed_won, joint, sizeof joint);
    /* the end fills' figures, with seeds (they run only then); where one ran,
     * the fastest filled individual's time before and after its fill, how many
     * were filled and its place among them */
    char fill[1536] = "", span[1024] = "", during[320] = "";
    if (ef.best >= 0) {
        size_t at = (size_t)snprintf(span, sizeof span, ",\"from_us\":%.3f,\"to_us\":%.3f,\"filled\":%d,\"rank\":%d,\"each\":[",
                                     ef.each_from[ef.rank], ef.each_to[ef.rank], (int)ef.filled, (int)ef.rank);
        for (int k = 0; k < ef.filled && at < sizeof span; k++)
            at += (size_t)snprintf(span + at, sizeof span - at, "%s{\"from_us\":%.3f,\"to_us\":%.3f,\"effort\":%lld}",
                                   k ? "," : "", ef.each_from[k], ef.each_to[k], (long long)ef.each_effort[k]);
        if (at < sizeof span)
            snprintf(span + at, sizeof span - at, "]");
    }
    if (s->effort_max > 0 && s->c.joint) {
        size_t at = (size_t)snprintf(during, sizeof during, ",\"during\":[");
        for (int k = 0; k < s->n_mid && at < sizeof during; k++)
            at += (size_t)snprintf(during + at, sizeof during - at,
                                   "%s{\"generation\":%d,\"tried\":%d,\"from_us\":%.3f,\"to_us\":%.3f}", k ? "," : "",
                                   s->mid[k].gen, s->mid[k].tried, s->mid[k].from, s->mid[k].to);
        if (at < sizeof during)
            snprintf(during + at, sizeof during - at, "]");
    }
    if (s->c.joint)
        snprintf(fill, sizeof fill,
                 ",\"fill\":{\"kept\":%d,\"switched\":%d,\"tried\":%d%s,\"effort\":%lld,\"wall_s\":%.3f%s}",
                 (int)ef.kept, (int)ef.switched, (int)ef.tried, span, (long long)fill_effort, fill_s, during);
    snprintf(json, sizeof json,
             "{\"algorithm\":\"swapadvisor\",\"mode\":\"%s\",\"seed\":%llu,\"population\":%d,\"generations\":%d,"
             "\"evaluations\":%lld,\"effort\":%lld%s,\"mutation\":%g,\"temperature\":%g,\"threads\":%d,\"wall_s\":%.3f,"
             "\"time_to_1pct_s\":%.3f%s,\"size_classes\":%d,\"objects\":%d,"
             "\"pool_bytes\":%lld%s%s%s%s%s}",
             sa_ga_mode_name(o->mode), (unsigned long long)o->seed, s->np, gen, (long long)res->evaluations,
             (long long)gen_effort, aff, o->mutation,
             sa_ga_temperature(o), s->threads, res->wall_s, res->time_to_1pct_s, first, pop[bi].a.n_classes,
             pop[bi].a.n_objects, (long long)pop[bi].a.pool_bytes, fill, pfill, joint,
             o->pool_recompute ? ",\"pool_recompute\":true" : "", s->cut ? ",\"cut\":true" : "");
    if (!sa_plan_set_search_json(res->best, json))
        return sa_fail(err, SA_ENOMEM, "out of memory");
    return SA_OK;
}

sa_status sa_ga_search(const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_ga_opts *o, sa_ga_result *res, sa_err *err)
{
    memset(res, 0, sizeof *res);
    sa_status st = planner_check_graph(g, NULL, err);
    if (st)
        return st;
    int32_t np = gx_population(o->population);
    if (o->migrate && (o->migrate_every < 1 || o->migrants < 1 || o->migrants > np))
        return sa_fail(err, SA_EUSAGE, "migration every %d generations of %d migrants (need >= 1 and 1..%d)",
                       o->migrate_every, o->migrants, np);
    /* each island's effort is its own: under it they would not stop together */
    if (o->migrate && o->generations == SA_GA_GENERATIONS_AUTO)
        return sa_fail(err, SA_EUSAGE, "islands (migration) need a generation count, not the default effort");
    search s;
    int gen = 0;
    bool asked = false; /* the migration hook asked to stop */
    if ((st = search_init(&s, g, dev, o, err)) || (st = first_generation(&s, res, err)))
        goto done;
    for (;;) {
        bool stop = true;
        if ((st = end_of_generation(&s, gen, res, &stop, err)))
            goto done;
        if (stop || asked)
            break;
        gen++;
        rng gr; /* the generation's own stream: pairing, then survival */
        rng_seed(&gr, o->seed, (uint64_t)gen, UINT64_C(0xfeed));
        if ((st = breed(&s, gen, &gr, err)))
            goto done;
        if (s.cut) { /* the deadline fell inside the generation: it is dropped, the parents stay */
            gen--;
            break;
        }
        res->evaluations += s.nkids;
        survive(&s, &gr);
        if ((st = fill_during(&s, gen, res->evaluations, err)))
            goto done;
        if (o->migrate && gen % o->migrate_every == 0 && (st = exchange(&s, gen, false, &asked, res, err)))
            goto done;
    }
    res->generations = gen;
    if (o->migrate && (st = exchange(&s, gen, true, &asked, res, err)))
        goto done;
    s.best_hist[gen] = s.tbest; /* the last exchange may have brought a better one */
    st = finish(&s, gen, res, err);
done:
    if (st) {
        sa_plan_free(res->best);
        res->best = NULL;
    }
    search_free(&s);
    return st;
}
