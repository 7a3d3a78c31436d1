/* test_ga.c - the genetic search: determinism across threads, validity, never worse than topo. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "policy.h"
#include "validate.h"
#include "test_util.h"

/* A training graph with two branches per layer and layer-dependent sizes:
 * forward a = fa(x, Wa), b = fb(x, Wb), x' = add(a, b); backward in reverse;
 * one sgd update per weight. */
static dfg_graph *ladder(int layers)
{
    dfg_graph *g = dfg_new("ladder");
    int32_t *x = calloc((size_t)layers + 1, sizeof *x), *wa = calloc((size_t)layers, sizeof *wa);
    int32_t *wb = calloc((size_t)layers, sizeof *wb);
    char name[64];
    const int64_t KB = 1024;
    x[0] = dfg_add_tensor(g, "x0", DFG_INPUT, 64 * KB);
    for (int l = 0; l < layers; l++) {
        int64_t act = (64 + 32 * (l % 3)) * KB, w = (16 + 16 * (l % 2)) * KB;
        snprintf(name, sizeof name, "Wa%d", l);
        wa[l] = dfg_add_tensor(g, name, DFG_PARAM, w);
        snprintf(name, sizeof name, "Wb%d", l);
        wb[l] = dfg_add_tensor(g, name, DFG_PARAM, w);
        int32_t a = dfg_add_tensor(g, "a", DFG_ACTIVATION, act), b = dfg_add_tensor(g, "b", DFG_ACTIVATION, act);
        x[l + 1] = dfg_add_tensor(g, "x", DFG_ACTIVATION, act);
        int32_t ia[] = {x[l], wa[l]}, ib[] = {x[l], wb[l]}, oa[] = {a}, ob[] = {b}, is[] = {a, b}, os[] = {x[l + 1]};
        dfg_add_op(g, "fa", "matmul", DFG_FORWARD, ia, 2, oa, 1);
        dfg_add_op(g, "fb", "matmul", DFG_FORWARD, ib, 2, ob, 1);
        dfg_add_op(g, "add", "add", DFG_FORWARD, is, 2, os, 1);
    }
    int32_t dx = dfg_add_tensor(g, "dloss", DFG_GRADIENT, g->tensors[x[layers]].bytes);
    int32_t il[] = {x[layers]}, ol[] = {dx};
    dfg_add_op(g, "loss", "softmax_xent", DFG_FORWARD, il, 1, ol, 1);
    for (int l = layers - 1; l >= 0; l--) {
        int64_t in_b = g->tensors[x[l]].bytes, w = g->tensors[wa[l]].bytes;
        int32_t dwa = dfg_add_tensor(g, "dWa", DFG_GRADIENT, w), dwb = dfg_add_tensor(g, "dWb", DFG_GRADIENT, w);
        int32_t dxa = dfg_add_tensor(g, "dxa", DFG_GRADIENT, in_b), dxb = dfg_add_tensor(g, "dxb", DFG_GRADIENT, in_b);
        int32_t ndx = dfg_add_tensor(g, "dx", DFG_GRADIENT, in_b);
        int32_t ia[] = {dx, x[l], wa[l]}, ib[] = {dx, x[l], wb[l]}, oa[] = {dxa, dwa}, ob[] = {dxb, dwb};
        int32_t is[] = {dxa, dxb}, os[] = {ndx};
        dfg_add_op(g, "fa_bwd", "matmul_bwd_data", DFG_BACKWARD, ia, 3, oa, 2);
        dfg_add_op(g, "fb_bwd", "matmul_bwd_data", DFG_BACKWARD, ib, 3, ob, 2);
        dfg_add_op(g, "sum", "add", DFG_BACKWARD, is, 2, os, 1);
        int32_t ua[] = {wa[l], dwa}, ub[] = {wb[l], dwb}, wao[] = {wa[l]}, wbo[] = {wb[l]};
        dfg_add_op(g, "sgd_a", "sgd_update", DFG_UPDATE, ua, 2, wao, 1);
        dfg_add_op(g, "sgd_b", "sgd_update", DFG_UPDATE, ub, 2, wbo, 1);
        dx = ndx;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 2.0 + (i * 7 % 11);
    sa_err err;
    ck_assert_msg(dfg_finalize(g, "ladder", &err) == SA_OK, "%s", err.msg);
    free(x);
    free(wa);
    free(wb);
    return g;
}

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
    dfg_graph *g = ladder(8);
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
    dfg_graph *g = ladder(8);
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
    dfg_graph *g = ladder(3);
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
