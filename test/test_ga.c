/* test_ga.c - the genetic search: determinism across threads, validity, never worse than topo. */
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

Suite *suite_ga(void)
{
    Suite *s = suite_create("ga");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_same_seed_same_plan_any_thread_count);
    tcase_add_test(tc, test_search_never_worse_than_topo);
    tcase_add_test(tc, test_search_refuses_impossible_memory);
    suite_add_tcase(s, tc);
    return s;
}
