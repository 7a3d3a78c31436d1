/* test_swp.c - the swap planner on the paper's examples, checked by hand. */
#include <check.h>
#include <stdlib.h>

#include "policy.h"
#include "pool.h"
#include "swp.h"
#include "validate.h"
#include "test_util.h"

#define MB 1048576

/* Unit tensors (1 MiB), unit op times (1 us), unit transfers (1 MiB/us), no latency. */
static dfg_device unit_dev(int64_t units)
{
    dfg_device d = {"unit", units * MB, 1e6 * MB, 1e6 * MB, 2e6 * MB, 0};
    return d;
}

/* Figure 3: op1(W1) -> A1, op2(W2) -> A2, op3(A1, A2, W3) -> A3. */
static dfg_graph *figure3(void)
{
    dfg_graph *g = dfg_new("figure3");
    int32_t w1 = dfg_add_tensor(g, "W1", DFG_PARAM, MB), w2 = dfg_add_tensor(g, "W2", DFG_PARAM, MB);
    int32_t w3 = dfg_add_tensor(g, "W3", DFG_PARAM, MB);
    int32_t a1 = dfg_add_tensor(g, "A1", DFG_ACTIVATION, MB), a2 = dfg_add_tensor(g, "A2", DFG_ACTIVATION, MB);
    int32_t a3 = dfg_add_tensor(g, "A3", DFG_ACTIVATION, MB);
    int32_t i1[] = {w1}, o1[] = {a1}, i2[] = {w2}, o2[] = {a2}, i3[] = {a1, a2, w3}, o3[] = {a3};
    dfg_add_op(g, "op1", "matmul", DFG_FORWARD, i1, 1, o1, 1);
    dfg_add_op(g, "op2", "matmul", DFG_FORWARD, i2, 1, o2, 1);
    dfg_add_op(g, "op3", "matmul", DFG_FORWARD, i3, 3, o3, 1);
    for (int i = 0; i < 3; i++)
        g->ops[i].time_us = 1.0;
    sa_err err;
    ck_assert_int_eq(dfg_finalize(g, "figure3", &err), SA_OK);
    return g;
}

static int32_t find_node(const plan *p, plan_kind k, int32_t ref)
{
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == k && p->nodes[i].ref == ref)
            return i;
    return -1;
}

static int64_t offset_of(const plan *p, int32_t t, int32_t begin)
{
    for (int32_t i = 0; i < p->n_place; i++)
        if (p->place[i].tensor == t && (begin == -2 || p->place[i].begin == begin))
            return p->place[i].offset;
    return -1;
}

START_TEST(test_figure3_w1_makes_room_for_w3_and_w2_for_a3)
{
    dfg_graph *g = figure3();
    dfg_device d = unit_dev(4);
    pool_alloc a;
    sa_err err = {0};
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    a.cls[0] = 0;
    a.cnt[0] = 4;
    pool_repair_cls(&a);
    ck_assert(pool_layout(&a, g));
    ck_assert_int_eq(a.pool_bytes, 4 * MB);
    swp_opts o;
    swp_opts_default(&o);
    o.max_passes = 1; /* the first iteration, as the figure shows it */
    swp_ws *ws = swp_ws_new(g);
    plan *p = plan_new(g, &d);
    ck_assert_int_eq(swp_plan(g, &d, g->topo, &a, &o, ws, p, &err), SA_OK);
    ck_assert_int_eq(policy_predict(p, g, NULL, NULL, &err), SA_OK);
    /* W1 was last used by op1 a whole op ago, W2 just now: the threshold picks
     * W1 for W3 (Belady alone would pick W2, used farther in the future).
     * The parameters are clean, so they are dropped, not swapped out. */
    int32_t c1 = find_node(p, PLAN_COMPUTE, 0), c2 = find_node(p, PLAN_COMPUTE, 1);
    int32_t s3 = find_node(p, PLAN_SWAP_IN, 2), c3 = find_node(p, PLAN_COMPUTE, 2);
    ck_assert_int_ge(s3, 0);
    ck_assert_int_eq(find_node(p, PLAN_SWAP_OUT, 0), -1);
    ck_assert_int_eq(p->nodes[s3].n_deps, 1);
    ck_assert_int_eq(p->deps[p->nodes[s3].dep_off], c1); /* W3 waits for W1's last reader */
    ck_assert_int_eq(offset_of(p, 2, s3), offset_of(p, 0, -2));
    ck_assert_int_eq(offset_of(p, 5, c3), offset_of(p, 1, -2)); /* A3 takes W2's object */
    bool waits = false;
    for (int32_t k = 0; k < p->nodes[c3].n_deps; k++)
        waits |= p->deps[p->nodes[c3].dep_off + k] == s3;
    ck_assert(waits);
    (void)c2;
    /* h2d: W1 [0,1], W2 [1,2], W3 [2,3] (after op1 ends at 2); compute: op1
     * [1,2], op2 [2,3], op3 [3,4] */
    ck_assert_double_eq_tol(p->predicted.iteration_us, 4.0, 1e-9);
    ck_assert_double_eq_tol(p->predicted.ideal_us, 3.0, 1e-9);
    ck_assert_int_eq(p->predicted.h2d_bytes, 3 * MB);
    ck_assert_int_eq(p->predicted.d2h_bytes, 0);
    ck_assert_msg(plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    plan_free(p);
    swp_ws_free(ws);
    pool_alloc_free(&a);
    dfg_free(g);
}
END_TEST

START_TEST(test_figure3_steady_state)
{
    /* With 4 units a resident W3 would be evicted before op3 reads it, so the
     * passes settle on no residents; with 7 units every parameter stays and
     * nothing moves at all. */
    dfg_graph *g = figure3();
    plan *p;
    sa_err err = {0};
    for (int64_t units = 4; units <= 7; units++) {
        dfg_device d = unit_dev(units);
        ck_assert_int_eq(policy_run("topo", g, &d, &p, &err), SA_OK);
        ck_assert_msg(plan_validate(p, g, true, NULL, &err) == SA_OK, "%lld units: %s", (long long)units, err.msg);
        if (units == 4)
            ck_assert_int_eq(p->n_res, 0);
        if (units == 7) {
            ck_assert_int_eq(p->n_res, 3);
            ck_assert_int_eq(p->predicted.h2d_bytes, 0);
            ck_assert_double_eq_tol(p->predicted.iteration_us, 3.0, 1e-9);
        }
        plan_free(p);
    }
    dfg_free(g);
}
END_TEST

START_TEST(test_op_larger_than_memory_is_refused)
{
    dfg_graph *g = figure3();
    dfg_device d = unit_dev(3); /* op3 touches four units */
    plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg_contains(err, "op 2 (\"op3\") alone needs 4194304 bytes");
    ck_assert_int_eq(policy_run("odswap", g, &d, &p, &err), SA_EINFEASIBLE);
    /* ideal ignores the memory and raises it to what it needs */
    ck_assert_int_eq(policy_run("ideal", g, &d, &p, &err), SA_OK);
    ck_assert_double_eq_tol(p->predicted.iteration_us, 3.0, 1e-9);
    ck_assert_int_eq(p->predicted.h2d_bytes, 0);
    ck_assert_msg(plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    plan_free(p);
    ck_assert_int_eq(policy_run("belady", g, &d, &p, &err), SA_EUSAGE);
    dfg_free(g);
}
END_TEST

START_TEST(test_policies_on_tiny_under_pressure)
{
    dfg_graph *g;
    sa_err err = {0};
    const char *t = tu_tiny_json();
    ck_assert_int_eq(dfg_parse(t, strlen(t), "tiny.json", &g, &err), SA_OK);
    const char *names[] = {"ideal", "topo", "odswap"};
    for (int64_t mem = 2048; mem >= 1280; mem -= 256) {
        dfg_device d = {"small", mem, 256e6, 256e6, 384e6, 1.0};
        for (size_t i = 0; i < 3; i++) {
            plan *p;
            sa_status st = policy_run(names[i], g, &d, &p, &err);
            ck_assert_msg(st == SA_OK, "%s at %lld: %s", names[i], (long long)mem, err.msg);
            ck_assert_msg(plan_validate(p, g, true, NULL, &err) == SA_OK, "%s at %lld: %s", names[i],
                          (long long)mem, err.msg);
            ck_assert_double_ge(p->predicted.iteration_us, p->predicted.ideal_us - 1e-9);
            plan_free(p);
        }
    }
    dfg_free(g);
}
END_TEST

Suite *suite_swp(void)
{
    Suite *s = suite_create("swp");
    TCase *tc = tcase_create("planner");
    tcase_add_test(tc, test_figure3_w1_makes_room_for_w3_and_w2_for_a3);
    tcase_add_test(tc, test_figure3_steady_state);
    tcase_add_test(tc, test_op_larger_than_memory_is_refused);
    tcase_add_test(tc, test_policies_on_tiny_under_pressure);
    suite_add_tcase(s, tc);
    return s;
}
