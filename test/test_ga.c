/* test_ga.c - the genetic search: determinism across threads, validity, never worse than topo; seeded
 * with every other policy, never slower than any of them; no recompute of an in-place update. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/ga.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

static dfg_device three_quarter_peak(const dfg_graph *g)
{
    /* 4 GB/s links: transfers are not free next to microsecond ops */
    dfg_device d = {"ladder-dev", dfg_peak_bytes(g, NULL) * 3 / 4, 4e9, 4e9, 6e9, 5.0};
    return d;
}

static char *search_json(const dfg_graph *g, const dfg_device *d, int threads, uint64_t seed, ga_mode mode,
                         double *t)
{
    ga_opts o;
    ga_opts_default(&o);
    o.threads = threads;
    o.seed = seed;
    o.generations = 6;
    o.population = 8;
    o.mode = mode;
    ga_result r;
    sa_err err = {0};
    ck_assert_msg(ga_search(g, d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(plan_validate(r.best, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(r.evaluations, 8 + 6 * 16);
    *t = r.best->predicted.iteration_us;
    /* drop the timing fields that legitimately vary */
    plan_set_search_json(r.best, NULL);
    char *json;
    ck_assert_int_eq(plan_to_json(r.best, &json, &err), SA_OK);
    plan_free(r.best);
    return json;
}

START_TEST(test_same_seed_same_plan_any_thread_count)
{
    dfg_graph *g = tu_ladder(8);
    dfg_device d = three_quarter_peak(g);
    double t1, t2, t3;
    char *a = search_json(g, &d, 1, 42, GA_BOTH, &t1);
    char *b = search_json(g, &d, 2, 42, GA_BOTH, &t2);
    char *c = search_json(g, &d, 3, 42, GA_BOTH, &t3);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(a, c);
    free(a);
    free(b);
    free(c);
    dfg_free(g);
}
END_TEST

START_TEST(test_search_never_worse_than_topo)
{
    dfg_graph *g = tu_ladder(8);
    dfg_device d = three_quarter_peak(g);
    plan *topo;
    sa_err err = {0};
    ck_assert_int_eq(policy_run("topo", g, &d, &topo, &err), SA_OK);
    const ga_mode modes[] = {GA_BOTH, GA_SCHEDULE_ONLY, GA_ALLOC_ONLY};
    for (size_t i = 0; i < 3; i++) {
        double t;
        char *json = search_json(g, &d, 2, 7, modes[i], &t);
        ck_assert_double_le(t, topo->predicted.iteration_us + 1e-6);
        ck_assert_double_ge(t, topo->predicted.ideal_us - 1e-6);
        free(json);
    }
    plan_free(topo);
    dfg_free(g);
}
END_TEST

START_TEST(test_search_refuses_impossible_memory)
{
    dfg_graph *g = tu_ladder(3);
    dfg_device d = three_quarter_peak(g);
    d.memory_bytes = 1024;
    ga_opts o;
    ga_opts_default(&o);
    o.generations = 1;
    o.population = 4;
    ga_result r;
    sa_err err = {0};
    ck_assert_int_eq(ga_search(g, &d, &o, &r, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(r.best);
    dfg_free(g);
}
END_TEST

/* The swapadvisor row with few generations (seeded with every other row). */
static plan *run_search_row(const dfg_graph *g, const dfg_device *d, int threads)
{
    policy_opts po;
    policy_opts_default(&po);
    po.search.generations = 3;
    po.search.population = 8;
    po.search.threads = threads;
    plan *p = NULL;
    sa_err err = {0};
    ck_assert_msg(policy_run_opts("swapadvisor", g, d, &po, &p, &err) == SA_OK, "%s", err.msg);
    return p;
}

/* Issue 15: on three small graphs at two memories the search's plan is never
 * slower than any other policy's (it starts from them), and it is a valid
 * plan that replays on the host runner. */
START_TEST(test_search_never_slower_than_any_policy)
{
    const int layers[] = {4, 8, 12};
    const double fracs[] = {0.6, 0.8};
    int n_rows;
    const policy_def *rows = policy_table(&n_rows);
    for (size_t gi = 0; gi < SA_ARRAY_LEN(layers); gi++)
        for (size_t fi = 0; fi < SA_ARRAY_LEN(fracs); fi++) {
            dfg_graph *g = tu_ladder(layers[gi]);
            dfg_device d = tu_policy_dev((int64_t)(fracs[fi] * (double)dfg_peak_bytes(g, NULL)));
            plan *sa = run_search_row(g, &d, 1);
            char what[96];
            snprintf(what, sizeof what, "swapadvisor on ladder(%d) at %.1f", layers[gi], fracs[fi]);
            tu_check_policy_plan(sa, g, what, true);
            ck_assert_msg(strstr(sa->search_json, "\"best_seed\"") != NULL, "%s", sa->search_json);
            int compared = 0;
            for (int i = 0; i < n_rows; i++) {
                if (!strcmp(rows[i].name, "swapadvisor") || !strcmp(rows[i].name, "ideal"))
                    continue;
                plan *p = NULL;
                sa_err err = {0};
                sa_status st = policy_run(rows[i].name, g, &d, &p, &err);
                if (st == SA_EINFEASIBLE)
                    continue;
                ck_assert_msg(st == SA_OK, "%s: %s", rows[i].name, err.msg);
                ck_assert_msg(sa->predicted.iteration_us <= p->predicted.iteration_us, "%s: %.3f us > %s's %.3f us",
                              what, sa->predicted.iteration_us, rows[i].name, p->predicted.iteration_us);
                compared++;
                plan_free(p);
            }
            ck_assert_int_gt(compared, 0);
            plan_free(sa);
            dfg_free(g);
        }
}
END_TEST

/* The seeded search's plan does not depend on the thread count. */
START_TEST(test_seeded_search_same_plan_any_thread_count)
{
    dfg_graph *g = tu_ladder(8);
    dfg_device d = tu_policy_dev(dfg_peak_bytes(g, NULL) * 6 / 10);
    char *json[2];
    for (int k = 0; k < 2; k++) {
        plan *p = run_search_row(g, &d, 1 + 2 * k);
        plan_set_search_json(p, NULL); /* wall-clock and thread fields differ */
        sa_err err = {0};
        ck_assert_int_eq(plan_to_json(p, &json[k], &err), SA_OK);
        plan_free(p);
    }
    ck_assert_str_eq(json[0], json[1]);
    free(json[0]);
    free(json[1]);
    dfg_free(g);
}
END_TEST

/* Started from a recomputing seed (checkpoint-sqrt) alone, the search's plan
 * (the seed's, or one of its descendants with its recompute genes) passes
 * strict validation and replays exactly on the host runner. */
START_TEST(test_search_from_recompute_seed_replays)
{
    dfg_graph *g = tu_ladder(10);
    int64_t peak = dfg_peak_bytes(g, NULL);
    int found = 0;
    for (int pct = 50; pct <= 100 && !found; pct += 5) {
        dfg_device d = tu_policy_dev(peak * pct / 100);
        plan *seed = NULL;
        sa_err err = {0};
        if (policy_run("checkpoint-sqrt", g, &d, &seed, &err) != SA_OK)
            continue;
        int rc = 0;
        for (int32_t v = 0; v < seed->n_nodes; v++)
            rc += seed->nodes[v].kind == PLAN_RECOMPUTE;
        if (rc > 0) {
            found = 1;
            ga_seed sd = {"checkpoint-sqrt", seed, false};
            ga_opts o;
            ga_opts_default(&o);
            o.generations = 4;
            o.population = 8;
            o.seeds = &sd;
            o.n_seeds = 1;
            ga_result r;
            ck_assert_msg(ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
            ck_assert_double_le(r.best->predicted.iteration_us, seed->predicted.iteration_us);
            tu_check_policy_plan(r.best, g, "search from checkpoint-sqrt", true);
            plan_free(r.best);
        }
        plan_free(seed);
    }
    ck_assert_msg(found, "checkpoint-sqrt never recomputed on the ladder");
    dfg_free(g);
}
END_TEST

/* No policy recomputes an op that updates a persistent tensor in place (the
 * ladder's sgd updates), and the validator rejects such a recompute written
 * by hand. */
START_TEST(test_no_recompute_of_in_place_updates)
{
    dfg_graph *g = tu_ladder(8);
    dfg_device d = tu_policy_dev(dfg_peak_bytes(g, NULL) * 6 / 10);
    int n_rows;
    const policy_def *rows = policy_table(&n_rows);
    plan *any = NULL;
    for (int i = 0; i < n_rows; i++) {
        plan *p = NULL;
        sa_err err = {0};
        sa_status st = policy_run(rows[i].name, g, &d, &p, &err);
        if (st == SA_EINFEASIBLE)
            continue;
        ck_assert_msg(st == SA_OK, "%s: %s", rows[i].name, err.msg);
        for (int32_t v = 0; v < p->n_nodes; v++)
            if (p->nodes[v].kind == PLAN_RECOMPUTE) {
                const dfg_op *o = &g->ops[p->nodes[v].ref];
                for (int32_t k = 0; k < o->n_out; k++)
                    ck_assert_msg(!dfg_kind_persistent(g->tensors[o->out[k]].kind),
                                  "%s recomputes in-place update %s", rows[i].name, o->name);
            }
        if (any)
            plan_free(p);
        else
            any = p;
    }
    ck_assert_ptr_nonnull(any);
    /* by hand: re-run the first sgd update right after its compute node */
    int32_t up = -1, cn = -1;
    for (int32_t i = 0; i < g->n_ops && up < 0; i++)
        if (g->ops[i].phase == DFG_UPDATE)
            up = i;
    for (int32_t v = 0; v < any->n_nodes; v++)
        if (any->nodes[v].kind == PLAN_COMPUTE && any->nodes[v].ref == up)
            cn = v;
    ck_assert_int_ge(cn, 0);
    ck_assert_int_ge(plan_add_node(any, PLAN_RECOMPUTE, up, &cn, 1), 0);
    val_report rep = {0};
    sa_err err = {0};
    ck_assert_int_eq(plan_validate(any, g, true, &rep, &err), SA_EINVALID);
    bool rule1 = false;
    for (int32_t i = 0; i < rep.n_lines; i++)
        rule1 |= strstr(rep.lines[i], "rule 1") != NULL && strstr(rep.lines[i], "in place") != NULL;
    ck_assert_msg(rule1, "no rule 1 violation among %d: %s", rep.n_violations, err.msg);
    val_report_free(&rep);
    plan_free(any);
    dfg_free(g);
}
END_TEST

/* An error inside a parallel evaluation leaves the search as an error (not
 * an unfit individual): a seed that is not a plan of the graph. */
START_TEST(test_search_errors_are_errors)
{
    dfg_graph *g = tu_ladder(8), *other = tu_ladder(4);
    dfg_device d = tu_policy_dev(dfg_peak_bytes(other, NULL));
    plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(policy_run("smartpool", other, &d, &p, &err), SA_OK);
    ga_seed sd = {"smartpool", p, false};
    ga_opts o;
    ga_opts_default(&o);
    o.generations = 1;
    o.population = 4;
    o.threads = 2;
    o.seeds = &sd;
    o.n_seeds = 1;
    ga_result r;
    d.memory_bytes = dfg_peak_bytes(g, NULL);
    ck_assert_int_eq(ga_search(g, &d, &o, &r, &err), SA_EINTERNAL);
    ck_assert_ptr_null(r.best);
    ck_assert_msg_contains(err, "not a plan of this graph");
    plan_free(p);
    dfg_free(other);
    dfg_free(g);
}
END_TEST

Suite *suite_ga(void)
{
    Suite *s = suite_create("ga");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_same_seed_same_plan_any_thread_count);
    tcase_add_test(tc, test_search_never_worse_than_topo);
    tcase_add_test(tc, test_search_refuses_impossible_memory);
    tcase_add_test(tc, test_search_never_slower_than_any_policy);
    tcase_add_test(tc, test_seeded_search_same_plan_any_thread_count);
    tcase_add_test(tc, test_search_from_recompute_seed_replays);
    tcase_add_test(tc, test_no_recompute_of_in_place_updates);
    tcase_add_test(tc, test_search_errors_are_errors);
    suite_add_tcase(s, tc);
    return s;
}
