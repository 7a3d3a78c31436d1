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
/* the largest model optimal builds: positions x candidates (see its use) */
#define OPT_MAX_CELLS 2.0e7
/* under an effort limit (optimal.max_nodes > 0) the solves per decision
 * space: their number ends the rounds, and no clock does unless
 * sa_policy_opts.deadline_s is set; as many as without the limit (4 left
 * resnet-152 inference at 192 MiB with no fitting plan) */
#define OPT_EFFORT_ROUNDS 10
/* under an effort limit the widened space without chains runs after another
 * space planned only where that space's model was at most this many
 * positions x candidates: resnet-50's 395,000 took 23 s and lost; vgg-11
 * b16's 5,000 took 0.4 s.  A bound between them, not a measured boundary */
#define OPT_EFFORT_WIDEN_CELLS 5.0e4

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
    bool widen, pump, sums, waits; /* OPT_WIDEN, OPT_PUMP, OPT_SUMS, OPT_WAITS */
    bool solved;         /* a solve ran */
} osol;

static void osol_free(osol *s)
{
    sa_milp_result_free(&s->best);
    sa_plan_free(s->p);
    free(s->act); free(s->late); free(s->sync_at); free(s->drop); free(s->chosen);
    opt_free_ctx(&s->o);
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
    s->pump = space & OPT_PUMP;
    s->waits = space & OPT_WAITS;
    s->sums = po->optimal.sums;
    sa_status st = opt_build_ctx(o, g, dev, sch, space, err);
    if (!st && o->interm && o->n_chained == 0)
        st = sa_fail(err, SA_EINFEASIBLE, "%s: no recompute reads an intermediate: chains change nothing", name);
    /* the build scans every position for every candidate and the solves grow
     * with both: past OPT_MAX_CELLS (nasnet-25: 15k positions x 8k
     * candidates) they would take minutes */
    if (!st && (double)o->n * (double)o->nc > OPT_MAX_CELLS)
        st = sa_fail(err, SA_EINFEASIBLE, "%s: the MILP would span %d positions x %d candidates (%.0f million "
                     "cells, over the %.0f million this planner takes); plan with another "
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
    int64_t smallest = INT64_MAX, prev_cap = 0, prev_arena = 0;
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
        if ((st = opt_build_milp(o, cap, s->sums || (double)o->n * (double)o->nc > OPT_SUM_CELLS, &m, err)))
            break;
        sa_milp_opts mo = {po->optimal.solver, left, po->optimal.gap, po->optimal.threads, false,
                        po->optimal.max_nodes, effort && !(space & OPT_PUMP), po->optimal.pump_passes};
        sa_milp_result r;
        s->solved = true;
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
        /* lower the cap by half the overshoot, then by the overshoot over
         * how much the arena fell per byte the cap fell the round before (a
         * secant step: what the packing adds to the model's peak often
         * barely changes with the cap, and halving the distance took torchvision
         * resnet50 at 0.25x eight solves); by more each time the arena did not
         * shrink (the packing is not monotone in the cap) */
        int64_t over = ds->arena_bytes - dev->memory_bytes;
        if (ds->arena_bytes >= smallest)
            stuck++;
        else
            smallest = ds->arena_bytes;
        int64_t step = (over / 2 + 1) * (stuck + 1);
        if (rounds > 0 && !stuck && prev_cap > cap) {
            double fall = (double)(prev_arena - ds->arena_bytes) / (double)(prev_cap - cap);
            step = (int64_t)((double)over / fmin(fmax(fall, 0.5), 4.0)) + 1;
        }
        prev_cap = cap;
        prev_arena = ds->arena_bytes;
        cap -= step;
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
    char search[1024], bound[64] = "", waits[32] = "";
    /* a solver without a bound reports COIN_DBL_MAX or an infinity: the
     * member is left out (JSON has no infinity, and 1.8e308 written with
     * fewer digits reads back as one) */
    bool has_bound = isfinite(best->best_bound) && fabs(best->best_bound) < 1e300;
    if (has_bound)
        snprintf(bound, sizeof bound, ",\"milp_bound_us\":%.17g", best->best_bound);
    if (s->waits)
        snprintf(waits, sizeof waits, ",\"waits\":%d", s->o.n_waits);
    double gap = best->objective > 0 && has_bound ? fmax(0.0, (best->objective - best->best_bound) / best->objective)
                                                  : -1;
    snprintf(search, sizeof search,
             "{\"algorithm\":\"%s\",\"space\":\"%s\",\"chains\":%s%s%s,\"solver\":\"%s\",\"milp_status\":\"%s\","
             "\"milp_objective_us\":%.17g%s,\"milp_gap\":%.6f,\"candidates\":%d,"
             "\"solves\":%d,\"cap\":%lld,\"swapped\":%d,\"persistent_swapped\":%d,\"recomputed\":%d,"
             "\"demoted\":%d,\"arena\":%lld,\"milp_plan_us\":%.17g,\"refine_plans\":%d%s,\"wall_s\":%.3f%s%s}",
             name, s->widen ? "widened" : "narrow", s->o.interm ? "true" : "false", waits,
             s->pump ? ",\"pump\":true" : s->sums ? ",\"sums\":true" : "", best->solver,
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
 * two (the earlier on a tie), the other freed; *solved, whether a MILP
 * solve ran (the space's model was built).  A refusal keeps *best and, without
 * chains or waits, its reason in *why (the widened space's replacing the narrow
 * one's; "chains change nothing" and "no waited swap-out opens" say nothing of
 * the graph).  Other failures
 * are returned (err). */
static sa_status try_space(const sa_policy_call *pc, const char *name, const int32_t *sch, unsigned space,
                           double t0, double limit, double stop_s, osol *best, osol *cand, sa_err *why,
                           bool *solved, bool *timed_out, sa_err *err)
{
    sa_err e = {0};
    sa_status st = solve_space(pc, name, sch, space, t0, limit, cand, timed_out, &e);
    *solved = cand->solved;
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
        if (!(space & (OPT_CHAINS | OPT_WAITS)))
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
 * refinement.  Under an effort limit with optimal.pump, each space that
 * got as far as a solve is solved again with the pump (OPT_PUMP) right
 * after, as one more space.
 * Under the clock the narrow space's solves get a quarter of the time limit,
 * the widened one's up to three quarters, the refinement the rest; under an effort
 * limit all run.  Only when every space refuses, the widened space with waited
 * swap-outs (OPT_WAITS) is tried, without chains and without the pump's second
 * solve, and where it refuses too, again with them open near the positions out
 * of the other decisions' reach (OPT_NEAR; which of the two plans depends on
 * the solver's path and the cap's rounds): it is there to find a plan where
 * none fitted, which the refinement and the search then improve; where another
 * space plans it is not, so that plan stays as it was.  Refuses when every
 * space refuses (the widened space's reason).  No
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
    /* then, only when every space refused, the widened one with waited swap-outs,
     * and where it refused too, with them open near the out-of-reach positions */
    enum { WW = OPT_WIDEN | OPT_WAITS };
    static const unsigned order[2][6] = {{0, OPT_CHAINS, OPT_WIDEN, OPT_WIDEN | OPT_CHAINS, WW, WW | OPT_NEAR},
                                         {0, OPT_CHAINS, OPT_WIDEN | OPT_CHAINS, OPT_WIDEN, WW, WW | OPT_NEAR}};
    const unsigned *spaces = order[effort];
    osol best = {0}, cand = {0};
    sa_err why = {0};
    sa_status st = SA_OK;
    *out = NULL;
    for (int k = 0; k < 6 && !st; k++) {
        if ((spaces[k] & OPT_WAITS) && best.p)
            break;
        double lim = spaces[k] & OPT_WIDEN ? limit * 3 / 4 : limit / 4;
        /* a space with chains runs in the time its first left */
        bool no_time = (!effort && sa_now_s() - t0 >= lim - 1.0) || (dl > 0 && sa_now_s() >= dl - 1.0);
        bool big = best.p && (double)best.o.n * (double)best.o.nc > OPT_EFFORT_WIDEN_CELLS;
        if (((spaces[k] & OPT_CHAINS) && (!chains || no_time)) || (effort && spaces[k] == OPT_WIDEN && big))
            continue;
        bool solved = false;
        st = try_space(pc, name, sch, spaces[k], t0, lim, stop_s, &best, &cand, &why, &solved, timed_out, err);
        if (!st && effort && po.optimal.pump && solved && !(dl > 0 && sa_now_s() >= dl - 1.0) && !(spaces[k] & OPT_WAITS))
            st = try_space(pc, name, sch, spaces[k] | OPT_PUMP, t0, lim, stop_s, &best, &cand, &why, &solved,
                           timed_out, err);
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
    sa_status st = opt_build_ctx(&o, g, dev, schedule ? schedule : g->topo, OPT_WIDEN, err);
    if (!st)
        *cells = (double)o.n * (double)o.nc;
    opt_free_ctx(&o);
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
