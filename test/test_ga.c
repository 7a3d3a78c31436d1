/* test_ga.c - the genetic search: determinism across threads, validity, never worse than topo; seeded
 * with every other policy, never slower than any of them; no recompute of an in-place update. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

static sa_dfg_device three_quarter_peak(const sa_dfg_graph *g)
{
    /* 4 GB/s links: transfers are not free next to microsecond ops */
    sa_dfg_device d = {"ladder-dev", sa_dfg_peak_bytes(g, NULL) * 3 / 4, 4e9, 4e9, 6e9, 5.0, 0};
    return d;
}

static char *search_json(const sa_dfg_graph *g, const sa_dfg_device *d, int threads, uint64_t seed, sa_ga_mode mode,
                         double *t)
{
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.threads = threads;
    o.seed = seed;
    o.generations = 6;
    o.population = 8;
    o.mode = mode;
    sa_ga_result r;
    sa_err err = {0};
    ck_assert_msg(sa_ga_search(g, d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_plan_validate(r.best, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(r.evaluations, 8 + 6 * 16);
    *t = r.best->predicted.iteration_us;
    /* drop the timing fields that legitimately vary */
    sa_plan_set_search_json(r.best, NULL);
    char *json;
    ck_assert_int_eq(sa_plan_to_json(r.best, &json, &err), SA_OK);
    sa_plan_free(r.best);
    return json;
}

START_TEST(test_same_seed_same_plan_any_thread_count)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = three_quarter_peak(g);
    double t1, t2, t3;
    char *a = search_json(g, &d, 1, 42, SA_GA_BOTH, &t1);
    char *b = search_json(g, &d, 2, 42, SA_GA_BOTH, &t2);
    char *c = search_json(g, &d, 3, 42, SA_GA_BOTH, &t3);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, c);
    free(a);
    free(b);
    free(c);
    sa_dfg_free(g);
}
END_TEST

/* A migration hook that exchanges nothing. */
static sa_status islands_hook(sa_ga_migration *m, void *ctx, sa_err *err)
{
    (void)m;
    (void)ctx;
    (void)err;
    return SA_OK;
}

/* The default generation count: the search stops after the first generation
 * whose evaluations, with all before them, reach the effort budget: the
 * same search stopped one generation earlier has spent less than it. */
START_TEST(test_auto_generations_follow_the_effort)
{
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    ck_assert_int_eq(o.generations, SA_GA_GENERATIONS_AUTO);
    sa_dfg_graph *g = tu_ladder(30);
    sa_dfg_device d = three_quarter_peak(g);
    o.population = 4;
    /* the counted runs below must be the default's first generations: the same survival */
    o.temperature = SA_GA_AUTO_TEMPERATURE;
    sa_ga_result a, r, b;
    sa_err err = {0};
    /* a budget of three times what 4 generations (and the first) cost: about 15 generations */
    o.generations = 4;
    ck_assert_msg(sa_ga_search(g, &d, &o, &a, &err) == SA_OK, "%s", err.msg);
    o.generations = SA_GA_GENERATIONS_AUTO;
    o.auto_effort = 3.0 * (double)a.effort;
    ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_gt(r.generations, SA_GA_AUTO_MIN);
    ck_assert_int_lt(r.generations, SA_GA_AUTO_MAX);
    ck_assert(r.effort >= o.auto_effort);
    o.generations = r.generations - 1;
    ck_assert_msg(sa_ga_search(g, &d, &o, &b, &err) == SA_OK, "%s", err.msg);
    ck_assert((double)b.effort < o.auto_effort);
    /* at least SA_GA_AUTO_MIN generations however small the budget */
    sa_plan_free(r.best);
    o.generations = SA_GA_GENERATIONS_AUTO;
    o.auto_effort = 1;
    ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(r.generations, SA_GA_AUTO_MIN);
    /* islands need a count: each one's effort is its own */
    sa_plan_free(r.best);
    o.migrate = islands_hook;
    o.migrate_every = 1;
    o.migrants = 1;
    ck_assert_int_eq(sa_ga_search(g, &d, &o, &r, &err), SA_EUSAGE);
    ck_assert_ptr_null(r.best);
    sa_plan_free(a.best);
    sa_plan_free(b.best);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_search_never_worse_than_topo)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = three_quarter_peak(g);
    sa_plan *topo;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &topo, &err), SA_OK);
    const sa_ga_mode modes[] = {SA_GA_BOTH, SA_GA_SCHEDULE_ONLY, SA_GA_ALLOC_ONLY};
    for (size_t i = 0; i < 3; i++) {
        double t;
        char *json = search_json(g, &d, 2, 7, modes[i], &t);
        ck_assert_double_le(t, topo->predicted.iteration_us + 1e-6);
        ck_assert_double_ge(t, topo->predicted.ideal_us - 1e-6);
        free(json);
    }
    sa_plan_free(topo);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_search_refuses_impossible_memory)
{
    sa_dfg_graph *g = tu_ladder(3);
    sa_dfg_device d = three_quarter_peak(g);
    d.memory_bytes = 1024;
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.generations = 1;
    o.population = 4;
    sa_ga_result r;
    sa_err err = {0};
    ck_assert_int_eq(sa_ga_search(g, &d, &o, &r, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(r.best);
    sa_dfg_free(g);
}
END_TEST

/* ---- islands: the migration hook ---- */

typedef struct hook_ctx {
    int calls, finals, last_gen;
    int32_t words;
    int32_t *keep;         /* the best genome offered at the final exchange */
    double keep_us;
    const int32_t *give;   /* genomes to hand in at the first exchange */
    int n_give;
    int stop_at;           /* > 0: ask to stop at this generation */
    bool offered_sorted;
} hook_ctx;

static sa_status hook(sa_ga_migration *m, void *ctx, sa_err *err)
{
    (void)err;
    hook_ctx *h = ctx;
    h->calls++;
    h->words = m->words;
    h->last_gen = m->generation;
    for (int i = 1; i < m->n_out; i++)
        if (m->out_us[i] < m->out_us[i - 1])
            h->offered_sorted = false;
    if (m->final) {
        h->finals++;
        free(h->keep);
        h->keep = malloc((size_t)m->words * sizeof *h->keep);
        memcpy(h->keep, m->out, (size_t)m->words * sizeof *h->keep);
        h->keep_us = m->out_us[0];
    }
    if (h->calls == 1 && h->give) {
        m->in = h->give;
        m->n_in = h->n_give;
    }
    if (h->stop_at > 0 && m->generation >= h->stop_at)
        m->stop = true;
    return SA_OK;
}

static sa_status hook_search(const sa_dfg_graph *g, const sa_dfg_device *d, uint64_t seed, int threads, hook_ctx *h,
                             sa_ga_result *r, sa_err *err)
{
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.threads = threads;
    o.seed = seed;
    o.generations = 6;
    o.population = 8;
    o.migrate = h ? hook : NULL;
    o.migrate_ctx = h;
    o.migrate_every = 2;
    o.migrants = 3;
    return sa_ga_search(g, d, &o, r, err);
}

START_TEST(test_hook_offers_and_empty_exchange_changes_nothing)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = three_quarter_peak(g);
    sa_ga_result r0, r1;
    sa_err err = {0};
    hook_ctx h = {.offered_sorted = true};
    ck_assert_int_eq(hook_search(g, &d, 5, 2, NULL, &r0, &err), SA_OK);
    ck_assert_int_eq(hook_search(g, &d, 5, 2, &h, &r1, &err), SA_OK);
    /* generations 2, 4, 6 and the final one */
    ck_assert_int_eq(h.calls, 4);
    ck_assert_int_eq(h.finals, 1);
    ck_assert_int_eq(h.last_gen, 6);
    ck_assert(h.offered_sorted);
    ck_assert_int_eq(h.words, sa_ga_genome_words(g));
    ck_assert_int_eq(h.words, g->n_ops + 4 + 2 * g->n_sizes + g->n_tensors);
    /* what the search offers is a well-formed genome, its best */
    ck_assert_int_eq(sa_ga_genome_check(g, h.keep, &err), SA_OK);
    ck_assert_double_eq_tol(h.keep_us, r1.best->predicted.iteration_us, 1e-6 * h.keep_us);
    /* taking nothing in leaves the search as it was */
    ck_assert_int_eq(r0.evaluations, r1.evaluations);
    char *a = tu_plan_text(r0.best), *b = tu_plan_text(r1.best);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    free(h.keep);
    sa_plan_free(r0.best);
    sa_plan_free(r1.best);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_hook_imports_replace_the_worst)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = three_quarter_peak(g);
    sa_ga_result ra, rb, rc;
    sa_err err = {0};
    /* island A's best genome, handed to island B (another seed) at generation 2 */
    hook_ctx ha = {.offered_sorted = true};
    ck_assert_int_eq(hook_search(g, &d, 11, 1, &ha, &ra, &err), SA_OK);
    hook_ctx hb = {.offered_sorted = true, .give = ha.keep, .n_give = 1};
    ck_assert_int_eq(hook_search(g, &d, 12, 1, &hb, &rb, &err), SA_OK);
    /* B holds A's best from then on: elitism keeps it or better */
    ck_assert_double_le(rb.best->predicted.iteration_us, ra.best->predicted.iteration_us + 1e-6);
    ck_assert_int_eq(rb.evaluations, ra.evaluations + 1);
    ck_assert_int_eq(sa_plan_validate(rb.best, g, true, NULL, &err), SA_OK);
    /* the same exchange with more threads: the same plan */
    hook_ctx hc = {.offered_sorted = true, .give = ha.keep, .n_give = 1};
    ck_assert_int_eq(hook_search(g, &d, 12, 3, &hc, &rc, &err), SA_OK);
    char *b = tu_plan_text(rb.best), *c = tu_plan_text(rc.best);
    ck_assert_str_eq(b, c);
    free(b);
    free(c);
    free(ha.keep);
    free(hb.keep);
    free(hc.keep);
    sa_plan_free(ra.best);
    sa_plan_free(rb.best);
    sa_plan_free(rc.best);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_hook_stop_and_refusals)
{
    sa_dfg_graph *g = tu_ladder(6);
    sa_dfg_device d = three_quarter_peak(g);
    sa_ga_result r;
    sa_err err = {0};
    hook_ctx h = {.stop_at = 2};
    ck_assert_int_eq(hook_search(g, &d, 3, 1, &h, &r, &err), SA_OK);
    ck_assert_int_eq(r.generations, 2);
    ck_assert_int_eq(h.finals, 1);
    sa_plan_free(r.best);
    int32_t words = h.words, *bad = malloc((size_t)words * sizeof *bad);
    /* a malformed migrant ends the search with SA_EFORMAT naming it */
    struct { int32_t word, value; const char *needle; } cases[] = {
        {0, -1, "genome word 0"},                           /* not an op id */
        {1, -2, "is not a new op"},                          /* bad[1] = bad[0] below */
        {g->n_ops, 2, "neither pool nor best fit"},          /* layout gene */
        {g->n_ops + 1, 24, "timing"},                        /* swap timing gene: 0 .. 23 */
        {g->n_ops + 2, -4, "no seed"},                       /* origin below the pool rule (-3) */
        {g->n_ops + 3, 0, "classes"},                        /* no classes */
        {g->n_ops + 4, 1, "CLS starts at 0"},                /* CLS not from 0 */
        {g->n_ops + 4 + g->n_sizes, -3, "objects in class"}, /* negative CNT */
        {g->n_ops + 4 + 2 * g->n_sizes, 9, "decision 9"},    /* no such dec_action */
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(cases); i++) {
        memcpy(bad, h.keep, (size_t)words * sizeof *bad);
        bad[cases[i].word] = cases[i].value == -2 ? bad[0] : cases[i].value;
        ck_assert_int_eq(sa_ga_genome_check(g, bad, &err), SA_EFORMAT);
        ck_assert_msg_contains(err, cases[i].needle);
        hook_ctx hb = {.give = bad, .n_give = 1};
        sa_ga_result rb;
        ck_assert_int_eq(hook_search(g, &d, 3, 1, &hb, &rb, &err), SA_EFORMAT);
        ck_assert_msg_contains(err, "migrant 0 at generation 2");
        ck_assert_ptr_null(rb.best);
        free(hb.keep);
    }
    /* a migrant naming a seed this island lacks (another island's deadline
     * kept more seeds) is taken in: the origin only names the seed */
    memcpy(bad, h.keep, (size_t)words * sizeof *bad);
    bad[g->n_ops + 2] = 5;
    hook_ctx ho = {.give = bad, .n_give = 1};
    ck_assert_msg(hook_search(g, &d, 3, 1, &ho, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_null(strstr(r.best->search_json, "\"origin\":\"5"));
    sa_plan_free(r.best);
    free(ho.keep);
    /* a schedule that runs an op before its input */
    memcpy(bad, h.keep, (size_t)words * sizeof *bad);
    int32_t t = bad[0];
    bad[0] = bad[g->n_ops - 1];
    bad[g->n_ops - 1] = t;
    ck_assert_int_eq(sa_ga_genome_check(g, bad, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "before its input");
    /* more migrants than the population can take in */
    hook_ctx hm = {.give = h.keep, .n_give = 8};
    ck_assert_int_eq(hook_search(g, &d, 3, 1, &hm, &r, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "at most 7");
    free(hm.keep);
    /* bad island options */
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.population = 8;
    o.migrate = hook;
    o.migrate_ctx = &hm;
    o.migrate_every = 0;
    o.migrants = 1;
    ck_assert_int_eq(sa_ga_search(g, &d, &o, &r, &err), SA_EUSAGE);
    o.migrate_every = 1;
    o.migrants = 9;
    ck_assert_int_eq(sa_ga_search(g, &d, &o, &r, &err), SA_EUSAGE);
    free(bad);
    free(h.keep);
    sa_dfg_free(g);
}
END_TEST

/* The swapadvisor row with few generations (seeded with every other row). */
static void short_search_opts(sa_policy_opts *po, int threads)
{
    sa_policy_opts_default(po);
    po->search.generations = 3;
    po->search.population = 8;
    po->search.threads = threads;
}

static sa_plan *run_search_row_opts(const sa_dfg_graph *g, const sa_dfg_device *d, const sa_policy_opts *po)
{
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run_opts("swapadvisor", g, d, po, &p, &err) == SA_OK, "%s", err.msg);
    return p;
}

static sa_plan *run_search_row(const sa_dfg_graph *g, const sa_dfg_device *d, int threads)
{
    sa_policy_opts po;
    short_search_opts(&po, threads);
    return run_search_row_opts(g, d, &po);
}

/* Issue 15: on three small graphs at two memories the search's plan is never
 * slower than any other policy's (it starts from them), and it is a valid
 * plan that replays on the host runner. */
START_TEST(test_search_never_slower_than_any_policy)
{
    const int layers[] = {4, 8, 12};
    const double fracs[] = {0.6, 0.8};
    int n_rows;
    const sa_policy_def *rows = sa_policy_table(&n_rows);
    for (size_t gi = 0; gi < SA_ARRAY_LEN(layers); gi++)
        for (size_t fi = 0; fi < SA_ARRAY_LEN(fracs); fi++) {
            sa_dfg_graph *g = tu_ladder(layers[gi]);
            sa_dfg_device d = tu_policy_dev((int64_t)(fracs[fi] * (double)sa_dfg_peak_bytes(g, NULL)));
            sa_plan *sa = run_search_row(g, &d, 1);
            char what[96];
            snprintf(what, sizeof what, "swapadvisor on ladder(%d) at %.1f", layers[gi], fracs[fi]);
            tu_check_policy_plan(sa, g, what, true);
            ck_assert_msg(strstr(sa->search_json, "\"best_seed\"") != NULL, "%s", sa->search_json);
            int compared = 0;
            for (int i = 0; i < n_rows; i++) {
                if (!strcmp(rows[i].name, "swapadvisor") || !strcmp(rows[i].name, "ideal"))
                    continue;
                sa_plan *p = NULL;
                sa_err err = {0};
                sa_policy_opts po; /* the same options as the search row's */
                short_search_opts(&po, 1);
                sa_status st = sa_policy_run_opts(rows[i].name, g, &d, &po, &p, &err);
                if (st == SA_EINFEASIBLE)
                    continue;
                ck_assert_msg(st == SA_OK, "%s: %s", rows[i].name, err.msg);
                ck_assert_msg(sa->predicted.iteration_us <= p->predicted.iteration_us, "%s: %.3f us > %s's %.3f us",
                              what, sa->predicted.iteration_us, rows[i].name, p->predicted.iteration_us);
                compared++;
                sa_plan_free(p);
            }
            ck_assert_int_gt(compared, 0);
            sa_plan_free(sa);
            sa_dfg_free(g);
        }
}
END_TEST

/* The seeded search's plan does not depend on the thread count. */
START_TEST(test_seeded_search_same_plan_any_thread_count)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    char *json[2];
    for (int k = 0; k < 2; k++) {
        sa_plan *p = run_search_row(g, &d, 1 + 2 * k);
        json[k] = tu_plan_text(p); /* less the search block: wall-clock and thread fields differ */
        sa_plan_free(p);
    }
    tu_same_text(json[0], json[1]);
    sa_dfg_free(g);
}
END_TEST

/* Each layout's best parent (the search block's layout_best_us, HUGE_VAL for
 * null) after a run of gens generations, and the answer's layout. */
static void layout_bests(const sa_dfg_graph *g, const sa_dfg_device *d, int gens, double temperature, double *bestfit,
                         double *pool, char *layout, size_t len)
{
    sa_policy_opts po;
    short_search_opts(&po, 1);
    po.search.generations = gens;
    po.search.temperature = temperature;
    sa_plan *p = run_search_row_opts(g, d, &po);
    *bestfit = tu_json_num(p->search_json, "\"layout_best_us\":{\"bestfit\":");
    *pool = tu_json_num(strstr(p->search_json, "\"layout_best_us\":"), "\"pool\":");
    const char *l = strstr(p->search_json, "\"layout\":\"");
    ck_assert_ptr_nonnull(l);
    snprintf(layout, len, "%.*s", (int)strcspn(l + 10, "\""), l + 10);
    sa_plan_free(p);
}

/* Each layout's best parent survives every generation: where the best-fit
 * seeds lead and a sharp survival (temperature 0.01) would keep only their
 * lineage, the best pool parent still never gets slower as the generations
 * go on (runs of 1 .. 24 generations share their first ones; the fills
 * touch the overall best and the best best-fit parent only). */
START_TEST(test_each_layout_best_survives)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 9 / 10);
    const int gens[] = {1, 2, 4, 8, 16, 24};
    double last_pool = HUGE_VAL;
    for (size_t k = 0; k < SA_ARRAY_LEN(gens); k++) {
        double bf, pool;
        char layout[16];
        layout_bests(g, &d, gens[k], 0.01, &bf, &pool, layout, sizeof layout);
        ck_assert_str_eq(layout, "bestfit"); /* so no fill touched a pool parent */
        ck_assert_msg(pool < HUGE_VAL, "%d generations: no pool parent left", gens[k]);
        ck_assert_msg(pool >= bf, "%d generations: pool %.3f us, best-fit %.3f", gens[k], pool, bf);
        ck_assert_msg(pool <= last_pool, "%d generations: the best pool parent %.3f us, %.3f before", gens[k], pool,
                      last_pool);
        last_pool = pool;
    }
    sa_dfg_free(g);
}
END_TEST

/* The search's survival temperature, when none is asked: SA_GA_AUTO_TEMPERATURE
 * under the default effort, the paper's 1 under a generation count (or a time
 * limit, which runs one), as the search block says; the default's plan is the
 * one asking that temperature gives, and not the paper's temperature's. */
START_TEST(test_default_temperature_follows_the_effort)
{
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    ck_assert_double_eq(sa_ga_temperature(&o), SA_GA_AUTO_TEMPERATURE);
    o.generations = 40;
    ck_assert_double_eq(sa_ga_temperature(&o), 1.0);
    o.temperature = 0.5;
    ck_assert_double_eq(sa_ga_temperature(&o), 0.5);
    sa_dfg_graph *g = tu_ladder(30);
    sa_dfg_device d = three_quarter_peak(g);
    sa_ga_result a;
    sa_err err = {0};
    o.temperature = 0;
    o.population = 4;
    o.generations = 4;
    ck_assert_msg(sa_ga_search(g, &d, &o, &a, &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(a.best->search_json, "\"temperature\":1,"));
    o.auto_effort = 10.0 * (double)a.effort; /* about 50 generations */
    sa_plan_free(a.best);
    const double asked[] = {0, SA_GA_AUTO_TEMPERATURE, 1.0};
    char *json[3];
    for (int k = 0; k < 3; k++) {
        o.generations = SA_GA_GENERATIONS_AUTO;
        o.temperature = asked[k];
        ck_assert_msg(sa_ga_search(g, &d, &o, &a, &err) == SA_OK, "%s", err.msg);
        char key[64];
        snprintf(key, sizeof key, "\"temperature\":%g,", k < 2 ? SA_GA_AUTO_TEMPERATURE : 1.0);
        ck_assert_msg(strstr(a.best->search_json, key) != NULL, "%s", a.best->search_json);
        sa_plan_set_search_json(a.best, NULL);
        ck_assert_int_eq(sa_plan_to_json(a.best, &json[k], &err), SA_OK);
        sa_plan_free(a.best);
    }
    ck_assert_str_eq(json[0], json[1]);
    ck_assert_str_ne(json[0], json[2]);
    for (int k = 0; k < 3; k++)
        free(json[k]);
    sa_dfg_free(g);
}
END_TEST

/* Generation 0 as the final exchange offers it (every individual, fastest
 * first): each one's layout, origin and time. */
typedef struct gen0 {
    int32_t n_ops; /* the caller's: where the layout and origin genes are */
    int n, calls;
    int layout[16], origin[16];
    double us[16];
} gen0;

static sa_status gen0_hook(sa_ga_migration *m, void *ctx, sa_err *err)
{
    (void)err;
    gen0 *x = ctx;
    x->calls++;
    x->n = m->n_out < 16 ? m->n_out : 16;
    for (int i = 0; i < x->n; i++) {
        const int32_t *w = m->out + (size_t)i * (size_t)m->words;
        x->layout[i] = w[x->n_ops];
        x->origin[i] = w[x->n_ops + 2];
        x->us[i] = m->out_us[i];
    }
    return SA_OK;
}

/* A search of ladder(8) at frac of its peak from the pool plans of topo-rc and
 * topo (seeds 0 and 1), generation 0 only, population np, on threads: the
 * twins count, generation 0 (gen0_hook's) and the plan's text. */
static int twin_run(double frac, int np, int threads, gen0 *x, char **text)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev((int64_t)(frac * (double)sa_dfg_peak_bytes(g, NULL)));
    const char *names[2] = {"topo-rc", "topo"};
    sa_plan *seed[2];
    sa_ga_seed sd[2];
    sa_err err = {0};
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(sa_policy_run(names[k], g, &d, &seed[k], &err) == SA_OK, "%s", err.msg);
        sd[k] = (sa_ga_seed){names[k], seed[k], true};
    }
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.population = np;
    o.generations = 0;
    o.threads = threads;
    o.seeds = sd;
    o.n_seeds = 2;
    *x = (gen0){.n_ops = g->n_ops};
    o.migrate = gen0_hook;
    o.migrate_ctx = x;
    o.migrate_every = 1;
    o.migrants = np;
    sa_ga_result r;
    ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    int twins = (int)tu_json_count(r.best->search_json, "\"twins\":");
    tu_check_policy_plan(r.best, g, "search from twins", true);
    *text = tu_plan_text(r.best);
    sa_plan_free(r.best);
    for (int k = 0; k < 2; k++)
        sa_plan_free(seed[k]);
    sa_dfg_free(g);
    ck_assert_int_eq(x->calls, 1);
    return twins;
}

/* A seed's individual gets a twin in the other layout, which takes a random
 * individual's place where it leads generation 0.  From the pool plans of
 * topo-rc and topo at 0.9x of ladder(8)'s peak: the twins are best-fit
 * individuals of the seeds' origins (no child is bred; the cost rule's
 * individual has its own origin), each faster than every other individual;
 * the seeds' own individuals and the cost rule's are still there (only random
 * ones were replaced); the same plan on two threads.  With no random
 * individual to replace (a population of 4: topo, two seeds, the cost rule)
 * or at 0.6x, where no twin leads, none enters. */
START_TEST(test_seed_twin_in_the_other_layout)
{
    gen0 x;
    char *text[2];
    for (int k = 0; k < 2; k++) {
        int twins = twin_run(0.9, 8, 1 + k, &x, &text[k]);
        ck_assert_int_ge(twins, 1);
        ck_assert_int_eq(x.n, 8);
        int seen = 0, own[2] = {0, 0}, rule = 0;
        double others = HUGE_VAL, slowest_twin = 0;
        for (int i = 0; i < x.n; i++) {
            bool twin = x.layout[i] == PLANNER_BESTFIT && (x.origin[i] == 0 || x.origin[i] == 1);
            seen += twin;
            if (twin)
                slowest_twin = fmax(slowest_twin, x.us[i]);
            else
                others = fmin(others, x.us[i]);
            if (x.layout[i] == PLANNER_POOL && (x.origin[i] == 0 || x.origin[i] == 1))
                own[x.origin[i]]++;
            rule += x.origin[i] == -2; /* the genome's origin of the cost rule (ga.h) */
        }
        ck_assert_int_eq(seen, twins);
        ck_assert_msg(slowest_twin < others, "a twin at %.3f us, another individual at %.3f", slowest_twin, others);
        ck_assert_int_eq(own[0], 1);
        ck_assert_int_eq(own[1], 1);
        ck_assert_int_eq(rule, 1);
    }
    tu_same_text(text[0], text[1]);
    ck_assert_int_eq(twin_run(0.9, 4, 1, &x, &text[0]), 0);
    free(text[0]);
    ck_assert_int_eq(twin_run(0.6, 8, 1, &x, &text[0]), 0);
    for (int i = 0; i < x.n; i++)
        ck_assert_msg(x.layout[i] != PLANNER_BESTFIT || (x.origin[i] != 0 && x.origin[i] != 1),
                      "a best-fit individual of a seed's origin without a twin");
    free(text[0]);
}
END_TEST

/* With more than one thread and no deadline the seed rows run at once, yet
 * the search block's phases name them as one after another would: the
 * SA_POLICY_SEED_FIRST rows, then the rest, each in the table's order, and
 * every row that is a seed exactly once. */
START_TEST(test_seed_rows_at_once_noted_in_table_order)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    sa_plan *p = run_search_row(g, &d, 2);
    const char *ph = strstr(p->search_json, "\"phases\":[");
    ck_assert_ptr_nonnull(ph);
    int n_rows, noted = 0;
    const sa_policy_def *t = sa_policy_table(&n_rows);
    const char *last = ph;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n_rows; i++) {
            if (((t[i].flags & SA_POLICY_SEED_FIRST) != 0) != (pass == 0))
                continue;
            char key[96];
            snprintf(key, sizeof key, "\"policy\":\"%s\",", t[i].name);
            const char *at = strstr(ph, key);
            if (!at)
                continue; /* not a seed (ideal, the row itself) */
            ck_assert_msg(at > last, "%s noted out of the table's order: %s", t[i].name, ph);
            ck_assert_msg(strstr(at + 1, key) == NULL, "%s noted twice: %s", t[i].name, ph);
            last = at;
            noted++;
        }
    ck_assert_int_ge(noted, 10);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* A graph over 400 ops whose MILP is small (positions x candidates): the
 * MILP rows are among the seeds and the answer is polished by the MILP, so
 * the search is never slower than optimal or optimal-search, and its plan is
 * the same at 1 and 2 threads (the seeding and polishing solves run on one
 * solver thread under a node limit).  Without a solver the MILP rows refuse
 * and the search plans without them; with the limit at 0 they are left out.
 * The seeds solve without the pump's second solves (which double their
 * time; test_bound.c tests them). */
START_TEST(test_milp_seeds_and_polish_past_400_ops)
{
    sa_dfg_graph *g = tu_ladder(51);
    ck_assert_int_gt(g->n_ops, 400);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    double cells = 0;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_milp_cells(g, &d, NULL, &cells, &err), SA_OK);
    ck_assert(cells > (double)g->n_ops && cells <= SA_POLICY_SEED_MILP_CELLS);
    char *json[2];
    double us[2];
    for (int k = 0; k < 2; k++) {
        sa_policy_opts so;
        short_search_opts(&so, 1 + k);
        so.seed_milp.pump_cells = 0;
        sa_plan *p = run_search_row_opts(g, &d, &so);
        ck_assert_msg(strstr(p->search_json, "\"polish\":") != NULL || !sa_milp_have(SA_MILP_AUTO), "%s", p->search_json);
        if (sa_milp_have(SA_MILP_AUTO))
            ck_assert_msg(strstr(p->search_json, "\"timed_out\":false") != NULL, "%s", p->search_json);
        else
            ck_assert_ptr_null(strstr(p->search_json, "\"polish\""));
        if (k == 0)
            tu_check_policy_plan(p, g, "swapadvisor on ladder(51)", false);
        us[k] = p->predicted.iteration_us;
        json[k] = tu_plan_text(p); /* less the search block: wall-clock and thread fields differ */
        sa_plan_free(p);
    }
    tu_same_text(json[0], json[1]);
    static const char *const ROWS[] = {"optimal", "optimal-search"};
    for (size_t r = 0; r < SA_ARRAY_LEN(ROWS); r++) {
        sa_policy_opts po;
        short_search_opts(&po, 1);
        sa_plan *p = NULL;
        sa_status st = sa_policy_run_opts(ROWS[r], g, &d, &po, &p, &err);
        if (!sa_milp_have(SA_MILP_AUTO)) {
            ck_assert_int_eq(st, SA_EUSAGE);
            continue;
        }
        ck_assert_msg(st == SA_OK, "%s: %s", ROWS[r], err.msg);
        ck_assert_msg(us[0] <= p->predicted.iteration_us, "swapadvisor %.3f us > %s's %.3f us", us[0], ROWS[r],
                      p->predicted.iteration_us);
        sa_plan_free(p);
    }
    /* the limits at 0: neither seeds from the MILP rows nor a polish */
    sa_policy_opts po;
    short_search_opts(&po, 1);
    po.seed_milp.max_cells = 0;
    po.seed_milp.polish_cells = 0;
    sa_plan *p = NULL;
    ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_null(strstr(p->search_json, "\"polish\""));
    ck_assert_ptr_null(strstr(p->search_json, "\"optimal"));
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Under the default effort the MILP seeds on a model past seed_milp.auto_cells
 * run after the other rows and only where the fastest of those is more than
 * seed_milp.auto_need over the ideal.  Not needed, the phases say "unneeded"
 * and the plan is the one without MILP seeds; needed, optimal's row is noted
 * after every other, the answer is no slower than its plan, and the plan is
 * the same at 1 and 2 threads. */
START_TEST(test_default_effort_runs_the_milp_seed_where_needed)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    sa_policy_opts po;
    short_search_opts(&po, 1);
    po.search.generations = SA_GA_GENERATIONS_AUTO;
    po.search.auto_effort = 2e6;
    po.seed_milp.auto_cells = 0;
    /* needed by no plan: the same plan as with the MILP seeds left out */
    po.seed_milp.auto_need = 1e9;
    sa_plan *p = run_search_row_opts(g, &d, &po);
    if (sa_milp_have(SA_MILP_AUTO))
        ck_assert_msg(strstr(p->search_json, "{\"phase\":\"seed\",\"policy\":\"optimal\",\"wall_s\":0.000,"
                                             "\"result\":\"unneeded\"}") != NULL, "%s", p->search_json);
    ck_assert_ptr_null(strstr(p->search_json, "\"policy\":\"optimal-search\""));
    char *unneeded = tu_plan_text(p);
    sa_plan_free(p);
    sa_policy_opts none = po;
    none.seed_milp.max_cells = 0;
    p = run_search_row_opts(g, &d, &none);
    ck_assert_ptr_null(strstr(p->search_json, "\"policy\":\"optimal"));
    char *without = tu_plan_text(p);
    sa_plan_free(p);
    tu_same_text(unneeded, without);
    if (!sa_milp_have(SA_MILP_AUTO)) {
        sa_dfg_free(g);
        return;
    }
    /* needed by any plan slower than the ideal */
    po.seed_milp.auto_need = 0;
    char *json[2];
    for (int k = 0; k < 2; k++) {
        po.search.threads = 1 + k;
        p = run_search_row_opts(g, &d, &po);
        const char *ph = strstr(p->search_json, "\"phases\":[");
        ck_assert_ptr_nonnull(ph);
        const char *opt = strstr(ph, "\"policy\":\"optimal\"");
        ck_assert_msg(opt != NULL, "%s", ph);
        double us = 0;
        ck_assert_msg(sscanf(strstr(opt, "\"result\":"), "\"result\":\"plan\",\"iteration_us\":%lf", &us) == 1, "%s", ph);
        ck_assert_double_le(p->predicted.iteration_us, us + 0.001); /* noted to the nanosecond */
        ck_assert_ptr_nonnull(strstr(opt, "{\"phase\":\"search\""));
        ck_assert_ptr_null(strstr(opt + 1, "{\"phase\":\"seed\""));
        tu_check_policy_plan(p, g, "default effort with the MILP seed", true);
        json[k] = tu_plan_text(p);
        sa_plan_free(p);
    }
    tu_same_text(json[0], json[1]);
    /* under a deadline that leaves the seeds less than a MILP row's minimum
     * (BUDGET_MILP_MIN_S, 30 s), the deferred row is skipped, and said so */
    po.search.threads = 1;
    po.deadline_s = sa_now_s() + 20;
    p = run_search_row_opts(g, &d, &po);
    ck_assert_msg(strstr(p->search_json, "{\"phase\":\"seed\",\"policy\":\"optimal\",\"wall_s\":0.000,"
                                         "\"result\":\"skipped\"}") != NULL, "%s", p->search_json);
    ck_assert_msg(strstr(p->search_json, "\"seeds_skipped\":[\"optimal\"]") != NULL, "%s", p->search_json);
    tu_check_policy_plan(p, g, "default effort with the MILP seed skipped at the deadline", false);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Started from a recomputing seed (checkpoint-sqrt) alone, the search's plan
 * (the seed's, or one of its descendants with its recompute genes) passes
 * strict validation and replays exactly on the host runner. */
START_TEST(test_search_from_recompute_seed_replays)
{
    sa_dfg_graph *g = tu_ladder(10);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    int found = 0;
    for (int pct = 50; pct <= 100 && !found; pct += 5) {
        sa_dfg_device d = tu_policy_dev(peak * pct / 100);
        sa_plan *seed = NULL;
        sa_err err = {0};
        if (sa_policy_run("checkpoint-sqrt", g, &d, &seed, &err) != SA_OK)
            continue;
        int rc = 0;
        for (int32_t v = 0; v < seed->n_nodes; v++)
            rc += seed->nodes[v].kind == SA_PLAN_RECOMPUTE;
        if (rc > 0) {
            found = 1;
            sa_ga_seed sd = {"checkpoint-sqrt", seed, false};
            sa_ga_opts o;
            sa_ga_opts_default(&o);
            o.generations = 4;
            o.population = 8;
            o.seeds = &sd;
            o.n_seeds = 1;
            sa_ga_result r;
            ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
            ck_assert_double_le(r.best->predicted.iteration_us, seed->predicted.iteration_us);
            tu_check_policy_plan(r.best, g, "search from checkpoint-sqrt", true);
            sa_plan_free(r.best);
        }
        sa_plan_free(seed);
    }
    ck_assert_msg(found, "checkpoint-sqrt never recomputed on the ladder");
    sa_dfg_free(g);
}
END_TEST

/* A best-fit plan of g in d that sets every forward activation to a (DEC_SWAP
 * or DEC_RECOMPUTE), the rest kept, with dc's timing (NULL: the default's):
 * the fill tests' seed. */
static sa_plan *forward_activations_plan_timed(const sa_dfg_graph *g, const sa_dfg_device *d, uint8_t a,
                                               const dec_opts *timed)
{
    uint8_t *act = calloc((size_t)g->n_tensors, 1);
    ck_assert_ptr_nonnull(act);
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == SA_DFG_ACTIVATION && g->ops[g->tensors[t].producer].phase == SA_DFG_FORWARD)
            act[t] = a;
    sa_plan *seed = sa_plan_new(g, d);
    sa_err err = {0};
    dec_opts dc;
    dec_opts_default(&dc);
    if (timed)
        dc = *timed;
    planner_req q = {.layout = PLANNER_BESTFIT, .act = act, .dec = &dc};
    ck_assert_msg(planner_plan(g, d, &q, seed, &err) == SA_OK, "%s", err.msg);
    free(act);
    return seed;
}

static sa_plan *forward_activations_plan(const sa_dfg_graph *g, const sa_dfg_device *d, uint8_t a)
{
    return forward_activations_plan_timed(g, d, a, NULL);
}

/* A seed whose decisions fit only with its own timing (every forward
 * activation swapped, the swap-outs waited for by the next op and the
 * swap-ins one op ahead, in the arena that plan needs), handed in twice: each
 * of its two individuals, planned with the timed swaps first, takes another
 * timing that fits (the search block's retimed counts them and the cost
 * rule's, so at least 2 means the seeds'; 0 when only timings 0 and 1 are
 * tried); the answer replays and is the same at 1 and 2 threads (the two
 * individuals' tries then run on two). */
START_TEST(test_seed_fits_with_its_own_timing)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL));
    dec_opts late;
    dec_opts_default(&late);
    late.out_sync = 1;
    late.prefetch = 1;
    sa_plan *seed = forward_activations_plan_timed(g, &d, DEC_SWAP, &late);
    d.memory_bytes = seed->device.memory_bytes = seed->arena_bytes;
    /* the precondition: the decisions the seed carries out (as the search reads them: a swap_out node, a
     * swap) do not fit with timed or synchronous swap-outs and covered swap-ins */
    for (int32_t s = 0; s <= 1; s++) {
        dec_opts dc;
        dec_opts_default(&dc);
        dc.out_sync = s;
        uint8_t *act = calloc((size_t)g->n_tensors, 1);
        ck_assert_ptr_nonnull(act);
        for (int32_t v = 0; v < seed->n_nodes; v++)
            if (seed->nodes[v].kind == SA_PLAN_SWAP_OUT)
                act[seed->nodes[v].ref] = DEC_SWAP;
        sa_plan *p = sa_plan_new(g, &d);
        ck_assert_ptr_nonnull(p);
        sa_err e = {0};
        dec_stats ds;
        planner_req q = {.layout = PLANNER_BESTFIT, .act = act, .dec = &dc, .stats = &ds, .within_memory = true};
        sa_status st = planner_plan(g, &d, &q, p, &e);
        ck_assert_msg(st == SA_EINFEASIBLE || (st == SA_OK && ds.arena_bytes > d.memory_bytes),
                      "out_sync %d fits: %d %s", s, st, e.msg);
        sa_plan_free(p);
        free(act);
    }
    sa_ga_seed sd[2] = {{"late", seed, false}, {"late-again", seed, false}};
    char *json[2] = {NULL, NULL};
    for (int th = 1; th <= 2; th++) {
        sa_ga_opts o;
        sa_ga_opts_default(&o);
        o.generations = 1;
        o.population = 8;
        o.threads = th;
        o.seeds = sd;
        o.n_seeds = 2;
        sa_ga_result r;
        sa_err err = {0};
        ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
        const char *f = strstr(r.best->search_json, "\"retimed\":");
        int retimed = -1;
        ck_assert_msg(f && sscanf(f, "\"retimed\":%d", &retimed) == 1 && retimed >= 2, "%s", r.best->search_json);
        ck_assert_double_le(r.first_us, seed->predicted.iteration_us);
        tu_check_policy_plan(r.best, g, "search from a late seed", true);
        json[th - 1] = tu_plan_text(r.best); /* less the search block: wall-clock and thread fields differ */
        sa_plan_free(r.best);
    }
    tu_same_text(json[0], json[1]);
    sa_plan_free(seed);
    sa_dfg_free(g);
}
END_TEST

/* The fill, from a seed that sends every forward activation of the ladder
 * one way: the search's last step sets the filled individual's (the fastest
 * best-fit one of the first generation: the seed's) decisions back to keep
 * or switches swap and recompute, one at a time, wherever that is faster and
 * fits.  Its search block says what it changed of what it tried and that
 * the individual got faster; the answer, the faster of it and the pool
 * individuals, is no slower, beats the seed and replays.
 *   _i = 0: all swapped, in 1.1x of the peak: some are kept resident;
 *   _i = 1: all recomputed, in the memory that plan needs: some become swaps
 *           (the link hides a swap behind compute that a recompute adds to:
 *           451.4 -> 361.4 us). */
START_TEST(test_fill_keeps_and_switches)
{
    sa_dfg_graph *g = tu_ladder(8);
    if (_i == 1)
        tu_roofline_times(g);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * (_i == 0 ? 11 : 10) / 10);
    sa_plan *seed = forward_activations_plan(g, &d, _i == 0 ? DEC_SWAP : DEC_RECOMPUTE);
    sa_err err = {0};
    if (_i == 0)
        ck_assert_int_gt(seed->predicted.d2h_bytes, 0);
    else
        d.memory_bytes = seed->device.memory_bytes = seed->arena_bytes;
    sa_ga_seed sd = {_i == 0 ? "swap-all" : "recompute-all", seed, false};
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    /* the first generation only, of the topo individual and the seed's: the
     * seed's is the best-fit one (with more, the cost rule's may be faster) */
    o.generations = 0;
    o.population = 2;
    o.seeds = &sd;
    o.n_seeds = 1;
    sa_ga_result r;
    ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    const char *f = strstr(r.best->search_json, "\"fill\":{\"kept\":");
    ck_assert_ptr_nonnull(f);
    int kept = 0, switched = 0, tried = 0;
    double from = 0, to = 0;
    ck_assert_int_eq(sscanf(f, "\"fill\":{\"kept\":%d,\"switched\":%d,\"tried\":%d,\"from_us\":%lf,\"to_us\":%lf",
                            &kept, &switched, &tried, &from, &to),
                     5);
    ck_assert_int_gt(_i == 0 ? kept : switched, 0);
    ck_assert_int_ge(tried, kept + switched);
    ck_assert_double_lt(to, from);
    ck_assert_double_le(r.best->predicted.iteration_us, to);
    ck_assert_double_lt(r.best->predicted.iteration_us, seed->predicted.iteration_us);
    if (_i == 0)
        ck_assert_int_lt(r.best->predicted.d2h_bytes, seed->predicted.d2h_bytes);
    tu_check_policy_plan(r.best, g, "search after the fill", true);
    sa_plan_free(r.best);
    sa_plan_free(seed);
    sa_dfg_free(g);
}
END_TEST

/* The default effort's tests' search: ladder(8) at 1.1x its peak, seeded
 * with its forward activations swapped, population 8 (o.seeds points into
 * the struct: it stays where it was set up). */
typedef struct seeded {
    sa_dfg_graph *g;
    sa_dfg_device d;
    sa_plan *seed;
    sa_ga_seed sd;
    sa_ga_opts o;
} seeded;

static void seeded_init(seeded *x)
{
    x->g = tu_ladder(8);
    x->d = tu_policy_dev(sa_dfg_peak_bytes(x->g, NULL) * 11 / 10);
    x->seed = forward_activations_plan(x->g, &x->d, DEC_SWAP);
    x->sd = (sa_ga_seed){"swap-all", x->seed, false};
    sa_ga_opts_default(&x->o);
    x->o.population = 8;
    x->o.seeds = &x->sd;
    x->o.n_seeds = 1;
}

static void seeded_free(seeded *x)
{
    sa_plan_free(x->seed);
    sa_dfg_free(x->g);
}

/* Under the default effort the fill also runs SA_GA_AUTO_FILLS times during the
 * search, each on the best best-fit parent, and the search block lists them
 * ("during"): none slows that parent, the answer is no slower than the last,
 * and the plan is the same on one thread and two.  A generation count runs
 * none. */
START_TEST(test_fill_during_the_default_effort)
{
    seeded x;
    seeded_init(&x);
    sa_err err = {0};
    sa_ga_result r[2];
    x.o.generations = 4;
    ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r[0], &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_null(strstr(r[0].best->search_json, "\"during\""));
    /* about 160 generations: a fill's tries then cost less than an eighth of it */
    x.o.auto_effort = 40.0 * (double)r[0].effort;
    x.o.generations = SA_GA_GENERATIONS_AUTO;
    sa_plan_free(r[0].best);
    char *json[2];
    for (int k = 0; k < 2; k++) {
        x.o.threads = 1 + k;
        ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r[k], &err) == SA_OK, "%s", err.msg);
        const char *f = strstr(r[k].best->search_json, "\"during\":[");
        ck_assert_ptr_nonnull(f);
        int n = 0, last_gen = 0;
        double last_to = HUGE_VAL;
        for (const char *at = f; (at = strstr(at, "{\"generation\":")); at++, n++) {
            int gen, tried;
            double from, to;
            ck_assert_int_eq(sscanf(at, "{\"generation\":%d,\"tried\":%d,\"from_us\":%lf,\"to_us\":%lf", &gen,
                                    &tried, &from, &to), 4);
            ck_assert_int_ge(gen, last_gen);
            ck_assert_int_gt(tried, 0);
            ck_assert_double_le(to, from);
            last_gen = gen;
            last_to = to;
        }
        ck_assert_int_eq(n, SA_GA_AUTO_FILLS);
        ck_assert_double_le(r[k].best->predicted.iteration_us, last_to);
        tu_check_policy_plan(r[k].best, x.g, "search with fills during it", true);
        json[k] = tu_plan_text(r[k].best); /* less the search block: wall-clock and thread fields differ */
        sa_plan_free(r[k].best);
    }
    tu_same_text(json[0], json[1]);
    seeded_free(&x);
}
END_TEST

/* Under the default effort a budget that buys fewer than SA_GA_AUTO_FEW
 * generations at generation 0's mean effort breeds none when there are seeds
 * and a best-fit individual: the search block says what it could afford,
 * the fill runs, and the plan is the same on one thread and two.  A budget
 * that buys more, or a search without seeds (the generations are then its
 * only search), runs at least SA_GA_AUTO_MIN. */
START_TEST(test_few_affordable_generations_leave_the_time_to_the_fill)
{
    seeded x;
    seeded_init(&x);
    sa_err err = {0};
    x.o.generations = 0;
    sa_ga_result r0;
    ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r0, &err) == SA_OK, "%s", err.msg);
    /* generation 0's mean effort per evaluation, as the search reckons it */
    double mean = (double)r0.effort / (double)r0.evaluations;
    int per_gen = 2 * x.o.population;
    sa_plan_free(r0.best);
    x.o.generations = SA_GA_GENERATIONS_AUTO;
    char *json[2];
    for (int k = 0; k < 2; k++) {
        x.o.threads = 1 + k;
        x.o.auto_effort = 0.5 * SA_GA_AUTO_FEW * per_gen * mean;
        sa_ga_result r;
        ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r, &err) == SA_OK, "%s", err.msg);
        ck_assert_int_eq(r.generations, 0);
        double aff = 0;
        const char *at = strstr(r.best->search_json, "\"affordable_generations\":");
        ck_assert_ptr_nonnull(at);
        ck_assert_int_eq(sscanf(at, "\"affordable_generations\":%lf", &aff), 1);
        ck_assert_double_eq_tol(aff, 0.5 * SA_GA_AUTO_FEW, 0.051);
        int tried = 0;
        at = strstr(r.best->search_json, "\"fill\":{");
        ck_assert_ptr_nonnull(at);
        ck_assert_int_eq(sscanf(strstr(at, "\"tried\":"), "\"tried\":%d", &tried), 1);
        ck_assert_int_gt(tried, 0);
        ck_assert_double_le(r.best->predicted.iteration_us, x.seed->predicted.iteration_us);
        tu_check_policy_plan(r.best, x.g, "search that affords few generations", true);
        json[k] = tu_plan_text(r.best);
        sa_plan_free(r.best);
    }
    tu_same_text(json[0], json[1]);
    /* twice what SA_GA_AUTO_FEW needs: bred, at least SA_GA_AUTO_MIN */
    x.o.threads = 1;
    x.o.auto_effort = 2.0 * SA_GA_AUTO_FEW * per_gen * mean;
    sa_ga_result r;
    ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_ge(r.generations, SA_GA_AUTO_MIN);
    sa_plan_free(r.best);
    /* no seeds: the small budget still breeds SA_GA_AUTO_MIN */
    x.o.seeds = NULL;
    x.o.n_seeds = 0;
    x.o.auto_effort = 0.5 * SA_GA_AUTO_FEW * per_gen * mean;
    ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_ge(r.generations, SA_GA_AUTO_MIN);
    sa_plan_free(r.best);
    seeded_free(&x);
}
END_TEST

/* The end fills' list in search block sj ("each"): filled entries, none
 * slower after its fill, those before the last costing under
 * SA_GA_END_FILL_SHARE times the generations' effort.  The first fill's
 * effort. */
static double check_end_fills(const char *sj, long filled)
{
    double gen = tu_json_num(sj, "\"effort\":"), first = 0, before_last = 0;
    const char *at = strstr(sj, "\"each\":[");
    ck_assert_ptr_nonnull(at);
    long n = 0;
    for (; n < filled && (at = strstr(at, "{\"from_us\":")); at++, n++) {
        double from, to;
        long long e;
        ck_assert_int_eq(sscanf(at, "{\"from_us\":%lf,\"to_us\":%lf,\"effort\":%lld}", &from, &to, &e), 3);
        ck_assert_double_le(to, from);
        if (n == 0)
            first = (double)e;
        if (n < filled - 1)
            before_last += (double)e;
    }
    ck_assert_int_eq(n, filled);
    if (filled > 1)
        ck_assert_double_lt(before_last, SA_GA_END_FILL_SHARE * gen);
    return first;
}

/* The end fills: after the generations the fill runs on the best best-fit
 * parent and then on the next ones, distinct in time, best first, while they
 * cost under SA_GA_END_FILL_SHARE times the generations' effort.  The search
 * block says how many were filled and the place of the one whose fill is
 * fastest; the answer is no slower than it and the plan the same on one
 * thread and two.  On the ladder with 24 parents some
 * seeds leave one best-fit parent distinct in time, others more, and at some
 * seed a later parent's fill beats the best parent's.  At 0-2 generations of
 * 2-24 the limit holds, and where the first fill cost that much (at some of
 * them) it is the only one. */
START_TEST(test_end_fills_fill_several_parents)
{
    seeded x;
    seeded_init(&x);
    sa_err err = {0};
    x.o.generations = 4;
    x.o.population = 24;
    bool more = false, later = false;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        char *json[2];
        x.o.seed = seed;
        for (int k = 0; k < 2; k++) {
            x.o.threads = 1 + k;
            sa_ga_result r;
            ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r, &err) == SA_OK, "%s", err.msg);
            const char *sj = r.best->search_json;
            long filled = tu_json_count(sj, "\"filled\":"), rank = tu_json_count(sj, "\"rank\":");
            ck_assert_int_ge(filled, 1);
            more |= filled > 1;
            ck_assert_int_le(filled, SA_GA_END_FILLS);
            ck_assert_int_ge(rank, 0);
            ck_assert_int_lt(rank, filled);
            later |= rank > 0;
            check_end_fills(sj, filled);
            ck_assert_int_ge(tu_json_count(sj, "\"tried\":"),
                             tu_json_count(sj, "\"kept\":") + tu_json_count(sj, "\"switched\":"));
            ck_assert_double_le(tu_json_num(sj, "\"to_us\":"), tu_json_num(sj, "\"from_us\":"));
            ck_assert_double_le(r.best->predicted.iteration_us, tu_json_num(sj, "\"to_us\":"));
            tu_check_policy_plan(r.best, x.g, "search after the end fills", true);
            json[k] = tu_plan_text(r.best);
            sa_plan_free(r.best);
        }
        tu_same_text(json[0], json[1]);
    }
    ck_assert_msg(more, "no search filled more than one parent at seeds 1-8");
    ck_assert_msg(later, "no later parent's fill was the fastest at seeds 1-8");
    x.o.threads = 1;
    bool dear = false;
    for (int k = 0; k < 12 * 3; k++) { /* populations 2, 4 .. 24 by 0-2 generations */
        x.o.population = 2 + 2 * (k / 3);
        x.o.generations = k % 3;
        sa_ga_result r;
        ck_assert_msg(sa_ga_search(x.g, &x.d, &x.o, &r, &err) == SA_OK, "%s", err.msg);
        const char *sj = r.best->search_json;
        long filled = tu_json_count(sj, "\"filled\":");
        if (check_end_fills(sj, filled) >= SA_GA_END_FILL_SHARE * tu_json_num(sj, "\"effort\":")) {
            ck_assert_int_eq(filled, 1);
            dear = true;
        }
        sa_plan_free(r.best);
    }
    ck_assert_msg(dear, "no search of 0-2 generations had a first fill that reached the share");
    seeded_free(&x);
}
END_TEST

/* No policy recomputes an op that updates a persistent tensor in place (the
 * ladder's sgd updates), and the validator rejects such a recompute written
 * by hand. */
START_TEST(test_no_recompute_of_in_place_updates)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    int n_rows;
    const sa_policy_def *rows = sa_policy_table(&n_rows);
    sa_plan *any = NULL;
    sa_policy_opts po; /* a short search: the default's spends its effort, not more checks */
    sa_policy_opts_default(&po);
    po.search.generations = 4;
    po.search.threads = 1;
    for (int i = 0; i < n_rows; i++) {
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run_opts(rows[i].name, g, &d, &po, &p, &err);
        if (st == SA_EINFEASIBLE)
            continue;
        ck_assert_msg(st == SA_OK, "%s: %s", rows[i].name, err.msg);
        for (int32_t v = 0; v < p->n_nodes; v++)
            if (p->nodes[v].kind == SA_PLAN_RECOMPUTE) {
                const sa_dfg_op *o = &g->ops[p->nodes[v].ref];
                for (int32_t k = 0; k < o->n_out; k++)
                    ck_assert_msg(!sa_dfg_kind_persistent(g->tensors[o->out[k]].kind),
                                  "%s recomputes in-place update %s", rows[i].name, o->name);
            }
        if (any)
            sa_plan_free(p);
        else
            any = p;
    }
    ck_assert_ptr_nonnull(any);
    /* by hand: re-run the first sgd update right after its compute node */
    int32_t up = -1, cn = -1;
    for (int32_t i = 0; i < g->n_ops && up < 0; i++)
        if (g->ops[i].phase == SA_DFG_UPDATE)
            up = i;
    for (int32_t v = 0; v < any->n_nodes; v++)
        if (any->nodes[v].kind == SA_PLAN_COMPUTE && any->nodes[v].ref == up)
            cn = v;
    ck_assert_int_ge(cn, 0);
    ck_assert_int_ge(sa_plan_add_node(any, SA_PLAN_RECOMPUTE, up, &cn, 1), 0);
    sa_val_report rep = {0};
    sa_err err = {0};
    ck_assert_int_eq(sa_plan_validate(any, g, true, &rep, &err), SA_EINVALID);
    bool rule1 = false;
    for (int32_t i = 0; i < rep.n_lines; i++)
        rule1 |= strstr(rep.lines[i], "rule 1") != NULL && strstr(rep.lines[i], "in place") != NULL;
    ck_assert_msg(rule1, "no rule 1 violation among %d: %s", rep.n_violations, err.msg);
    sa_val_report_free(&rep);
    sa_plan_free(any);
    sa_dfg_free(g);
}
END_TEST

/* An error inside a parallel evaluation leaves the search as an error (not
 * an unfit individual): a seed that is not a plan of the graph. */
START_TEST(test_search_errors_are_errors)
{
    sa_dfg_graph *g = tu_ladder(8), *other = tu_ladder(4);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(other, NULL));
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("smartpool", other, &d, &p, &err), SA_OK);
    sa_ga_seed sd = {"smartpool", p, false};
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.generations = 1;
    o.population = 4;
    o.threads = 2;
    o.seeds = &sd;
    o.n_seeds = 1;
    sa_ga_result r;
    d.memory_bytes = sa_dfg_peak_bytes(g, NULL);
    ck_assert_int_eq(sa_ga_search(g, &d, &o, &r, &err), SA_EINTERNAL);
    ck_assert_ptr_null(r.best);
    ck_assert_msg_contains(err, "not a plan of this graph");
    sa_plan_free(p);
    sa_dfg_free(other);
    sa_dfg_free(g);
}
END_TEST

/* No clock shapes the seeded search's plan: with the MILP's time limit at a
 * millisecond (a machine so loaded that every limit of time is reached), the
 * optimal-search seed (under the seeds' node limit) still runs every
 * generation of its search, and the swapadvisor row's plan is byte for byte
 * the one of the default limits. */
START_TEST(test_no_clock_shapes_the_seeded_plan)
{
    sa_dfg_graph *g = tu_ladder(12);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    sa_err err = {0};
    if (sa_milp_have(SA_MILP_AUTO)) {
        sa_policy_opts po;
        short_search_opts(&po, 1);
        po.optimal.max_nodes = SA_POLICY_SEED_MILP_NODES; /* as the seeds run it */
        po.optimal.time_limit_s = 1e-3;
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run_opts("optimal-search", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
        ck_assert_msg(strstr(p->search_json, "\"search_generations\":3") ||
                          (strstr(p->search_json, "\"algorithm\":\"swapadvisor\"") &&
                           strstr(p->search_json, "\"generations\":3")),
                      "%s", p->search_json);
        ck_assert_ptr_null(strstr(p->search_json, "\"milp_status\":\"time_limit\""));
        sa_plan_free(p);
    }
    char *json[2];
    for (int k = 0; k < 2; k++) {
        sa_policy_opts po;
        short_search_opts(&po, 1);
        if (k)
            po.optimal.time_limit_s = 1e-3;
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
        ck_assert_ptr_null(strstr(p->search_json, "\"timed_out\":true"));
        ck_assert_ptr_null(strstr(p->search_json, "\"time_limit\""));
        json[k] = tu_plan_text(p); /* less the search block: wall-clock fields differ */
        sa_plan_free(p);
    }
    tu_same_text(json[0], json[1]);
    sa_dfg_free(g);
}
END_TEST

/* A deadline already past: the swapadvisor row still answers with a valid
 * plan, at once, and its search block says what the deadline cut (every
 * seed skipped, the peers the search is held to first, the search cut); the search alone (no seeds) answers with
 * its first individual.  --generations 0 (no deadline) is the seeds only:
 * no generation and no polish. */
START_TEST(test_deadline_cuts_and_is_recorded)
{
    sa_dfg_graph *g = tu_ladder(12);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    sa_err err = {0};
    sa_policy_opts po;
    short_search_opts(&po, 2);
    po.search.generations = 1000000;
    po.deadline_s = sa_now_s();
    double t0 = sa_now_s();
    sa_plan *p = NULL;
    ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_now_s() - t0 < 30, "a past deadline took %.1f s", sa_now_s() - t0); /* a hang guard */
    tu_check_policy_plan(p, g, "swapadvisor past its deadline", false);
    ck_assert_msg(strstr(p->search_json, "\"time_limit\":{") && strstr(p->search_json, "\"search_cut\":true") &&
                      strstr(p->search_json, "\"seeds_skipped\":[\"memory-budget\",\"dtr\",\"topo\",") &&
                      strstr(p->search_json, "\"cut\":true"),
                  "%s", p->search_json);
    sa_plan_free(p);

    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.population = 8;
    o.generations = 1000000;
    o.deadline_s = sa_now_s();
    sa_ga_result res;
    ck_assert_msg(sa_ga_search(g, &d, &o, &res, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(res.generations, 0);
    ck_assert_msg(strstr(res.best->search_json, "\"cut\":true"), "%s", res.best->search_json);
    tu_check_policy_plan(res.best, g, "search past its deadline", false);
    sa_plan_free(res.best);

    short_search_opts(&po, 1);
    po.search.generations = 0;
    ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(strstr(p->search_json, "\"generations\":0,") && !strstr(p->search_json, "\"polish\"") &&
                      !strstr(p->search_json, "\"cut\""),
                  "%s", p->search_json);
    /* the seeds that ran are named; the MILP rows are left out (a rule of
     * the options: with a solver in the build they would seed --generations 1) */
    ck_assert_msg(strstr(p->search_json, "\"seed_rows\":{\"ran\":[\"topo\",") &&
                      strstr(p->search_json, sa_milp_have(SA_MILP_AUTO) ? "\"left_out\":[\"optimal\",\"optimal-search\"]}"
                                                                  : "\"left_out\":[]}") &&
                      !strstr(p->search_json, "\"best_seed\":\"optimal"),
                  "%s", p->search_json);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* A plan already started is cut when its deadline passes, inside the
 * layouts' walks (the clock is read at a walk's first position, so a
 * deadline already past cuts it deterministically): SA_EINFEASIBLE "cut at
 * the time limit" and planner_req.cut set, for both layouts; without a
 * deadline the same requests plan. */
START_TEST(test_started_plan_is_cut_at_its_deadline)
{
    sa_dfg_graph *g = tu_ladder(12);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 6 / 10);
    sa_err err = {0};
    uint8_t *act = calloc((size_t)g->n_tensors + 1, 1);
    pool_alloc a;
    ck_assert(act && pool_alloc_init(&a, g->n_sizes));
    for (int32_t t = 0; t < g->n_tensors; t++)
        act[t] = g->tensors[t].kind == SA_DFG_ACTIVATION ? DEC_SWAP : DEC_KEEP;
    ck_assert_msg(pool_fine_grained(&a, g, g->topo, d.memory_bytes, &err) == SA_OK, "%s", err.msg);
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert_ptr_nonnull(p);
    for (int layout = 0; layout < 2; layout++) {
        for (int past = 0; past < 2; past++) {
            bool cut = false;
            planner_req q = {.layout = layout ? PLANNER_BESTFIT : PLANNER_POOL, .pool = &a, .act = act,
                             .deadline_s = past ? sa_now_s() : 0, .cut = &cut};
            sa_status st = planner_plan(g, &d, &q, p, &err);
            if (past) {
                ck_assert_int_eq(st, SA_EINFEASIBLE);
                ck_assert_msg(cut && strstr(err.msg, "cut at the time limit"), "layout %d: %s", layout, err.msg);
            } else {
                ck_assert_msg(st == SA_OK && !cut, "layout %d: %s", layout, err.msg);
            }
        }
    }
    /* the walk itself: the best-fit builder stops at its first position */
    dec_opts o;
    dec_opts_default(&o);
    o.deadline_s = sa_now_s();
    dec_stats ds;
    ck_assert_int_eq(dec_nodes(g, &d, g->topo, act, &o, p, &ds, &err), SA_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "cut at the time limit"), "%s", err.msg);
    sa_plan_free(p);
    pool_alloc_free(&a);
    free(act);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_ga(void)
{
    Suite *s = suite_create("ga");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_same_seed_same_plan_any_thread_count);
    tcase_add_test(tc, test_auto_generations_follow_the_effort);
    tcase_add_test(tc, test_default_temperature_follows_the_effort);
    tcase_add_test(tc, test_seed_twin_in_the_other_layout);
    tcase_add_test(tc, test_search_never_worse_than_topo);
    tcase_add_test(tc, test_search_refuses_impossible_memory);
    tcase_add_test(tc, test_hook_offers_and_empty_exchange_changes_nothing);
    tcase_add_test(tc, test_hook_imports_replace_the_worst);
    tcase_add_test(tc, test_hook_stop_and_refusals);
    tcase_add_test(tc, test_search_never_slower_than_any_policy);
    tcase_add_test(tc, test_seeded_search_same_plan_any_thread_count);
    tcase_add_test(tc, test_each_layout_best_survives);
    tcase_add_test(tc, test_seed_rows_at_once_noted_in_table_order);
    tcase_add_test(tc, test_milp_seeds_and_polish_past_400_ops);
    tcase_add_test(tc, test_default_effort_runs_the_milp_seed_where_needed);
    tcase_add_test(tc, test_search_from_recompute_seed_replays);
    tcase_add_test(tc, test_no_recompute_of_in_place_updates);
    tcase_add_test(tc, test_search_errors_are_errors);
    tcase_add_test(tc, test_no_clock_shapes_the_seeded_plan);
    tcase_add_test(tc, test_deadline_cuts_and_is_recorded);
    tcase_add_test(tc, test_started_plan_is_cut_at_its_deadline);
    tcase_add_loop_test(tc, test_fill_keeps_and_switches, 0, 2);
    tcase_add_test(tc, test_seed_fits_with_its_own_timing);
    tcase_add_test(tc, test_fill_during_the_default_effort);
    tcase_add_test(tc, test_few_affordable_generations_leave_the_time_to_the_fill);
    tcase_add_test(tc, test_end_fills_fill_several_parents);
    suite_add_tcase(s, tc);
    return s;
}
