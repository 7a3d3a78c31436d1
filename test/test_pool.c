/* test_pool.c - pool floors with borrowing, and the planner borrowing an
 * object of a larger class when its own class is exhausted. */
#include <check.h>
#include <stdlib.h>

#include "cost.h"
#include "devprof.h"
#include "ga.h"
#include "policy.h"
#include "zoo.h"
#include "pool.h"
#include "validate.h"
#include "test_util.h"

#define MB 1048576

/* opA(W1) -> A1, A2 (three 1 MiB tensors at once); opB(W2) -> B (two 2 MiB);
 * opC(A1, A2, B) -> Y (three 1 MiB and one 2 MiB: 5 MiB, the largest op). */
static dfg_graph *two_sizes(void)
{
    dfg_graph *g = dfg_new("two_sizes");
    int32_t w1 = dfg_add_tensor(g, "W1", DFG_PARAM, MB), w2 = dfg_add_tensor(g, "W2", DFG_PARAM, 2 * MB);
    int32_t a1 = dfg_add_tensor(g, "A1", DFG_ACTIVATION, MB), a2 = dfg_add_tensor(g, "A2", DFG_ACTIVATION, MB);
    int32_t b = dfg_add_tensor(g, "B", DFG_ACTIVATION, 2 * MB), y = dfg_add_tensor(g, "Y", DFG_ACTIVATION, MB);
    int32_t ia[] = {w1}, oa[] = {a1, a2}, ib[] = {w2}, ob[] = {b}, ic[] = {a1, a2, b}, oc[] = {y};
    dfg_add_op(g, "opA", "matmul", DFG_FORWARD, ia, 1, oa, 2);
    dfg_add_op(g, "opB", "matmul", DFG_FORWARD, ib, 1, ob, 1);
    dfg_add_op(g, "opC", "matmul", DFG_FORWARD, ic, 3, oc, 1);
    for (int i = 0; i < 3; i++)
        g->ops[i].time_us = 1.0;
    sa_err err;
    ck_assert_int_eq(dfg_finalize(g, "two_sizes", &err), SA_OK);
    return g;
}

START_TEST(test_shared_need_counts_what_larger_objects_can_hold)
{
    dfg_graph *g = two_sizes();
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    ck_assert_int_eq(g->n_sizes, 2);
    a.cls[0] = 0;
    a.cls[1] = 1;
    pool_repair_cls(&a);
    int32_t need[2];
    /* own class only: opA and opC hold three 1 MiB tensors, opB two 2 MiB */
    pool_need(&a, g, need);
    ck_assert_int_eq(need[0], 3);
    ck_assert_int_eq(need[1], 2);
    /* borrowing: 2 MiB objects, opB holds two; objects of either size, opC
     * holds four, two of which the 2 MiB objects already cover */
    pool_need_shared(&a, g, need);
    ck_assert_int_eq(need[1], 2);
    ck_assert_int_eq(need[0], 2);
    /* one class: every op's tensor count, the largest being opC's four */
    a.cls[1] = 0;
    pool_repair_cls(&a);
    pool_need(&a, g, need);
    ck_assert_int_eq(need[0], 4);
    pool_need_shared(&a, g, need);
    ck_assert_int_eq(need[0], 4);
    pool_alloc_free(&a);
    dfg_free(g);
}
END_TEST

static bool placed_in_large_object(const plan *p, const dfg_graph *g)
{
    /* fine pool at 6 MiB: two 1 MiB objects at 0 and 1 MiB, then the 2 MiB
     * objects from 2 MiB on */
    for (int32_t i = 0; i < p->n_place; i++)
        if (g->tensors[p->place[i].tensor].bytes == MB && p->place[i].offset >= 2 * MB)
            return true;
    return false;
}

START_TEST(test_planner_borrows_a_larger_object_when_its_class_is_full)
{
    dfg_graph *g = two_sizes();
    dfg_device d = tu_unit_dev(6);
    sa_err err = {0};
    const char *names[] = {"topo", "odswap"};
    for (int i = 0; i < 2; i++) {
        plan *p = NULL;
        ck_assert_msg(policy_run(names[i], g, &d, &p, &err) == SA_OK, "%s: %s", names[i], err.msg);
        ck_assert_int_le(p->arena_bytes, 6 * MB);
        /* 6 MiB fits neither 3 x 1 MiB + 2 x 2 MiB nor one class of 4 x 2 MiB, so
     * the pool has two 1 MiB objects and opC's third borrows a 2 MiB one */
        ck_assert_msg(placed_in_large_object(p, g), "%s: no 1 MiB tensor borrowed a 2 MiB object", names[i]);
        ck_assert_msg(plan_validate(p, g, true, NULL, &err) == SA_OK, "%s: %s", names[i], err.msg);
        plan_free(p);
    }
    dfg_free(g);
}
END_TEST

START_TEST(test_fixed_pool_refusal_names_its_floor_and_the_largest_op)
{
    /* 5 MiB holds opC alone, but fixed objects need 2 x 1 MiB + 2 x 2 MiB even
     * with borrowing (7 MiB by own classes, 8 MiB as one class of 2 MiB) */
    dfg_graph *g = two_sizes();
    dfg_device d = tu_unit_dev(5);
    plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg_contains(err, "a fixed-object pool needs at least 6291456 bytes");
    ck_assert_msg_contains(err, "the largest op, 2 \"opC\", needs 5242880 alone");
    dfg_free(g);
}
END_TEST

/* Regression: a clean tensor dropped right after its reader (its host copy
 * being current) and swapped in again for the next reader must not arrive
 * before that reader is done; it did, and the device held it twice.  The
 * search's individuals at a quarter of resnet-18's peak hit that case. */
START_TEST(test_reswapped_clean_tensor_waits_for_its_previous_placement)
{
    dfg_graph *g;
    devprof *prof;
    sa_err err = {0};
    zoo_opts zo = {0};
    zo.batch = 4;
    ck_assert_int_eq(zoo_build("resnet-18", &zo, &g, &err), SA_OK);
    ck_assert_int_eq(devprof_load_file("profiles/v100-pcie3-16gb.json", &prof, &err), SA_OK);
    ck_assert_int_eq(cost_profile_graph(g, prof, 0, &err), SA_OK);
    dfg_device d = g->device;
    d.memory_bytes = dfg_peak_bytes(g, NULL) / 4;
    ga_opts o;
    ga_opts_default(&o);
    o.generations = 3;
    o.threads = 1;
    ga_result r;
    ck_assert_msg(ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(plan_validate(r.best, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    plan_free(r.best);
    devprof_free(prof);
    dfg_free(g);
}
END_TEST

Suite *suite_pool(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("floors");
    tcase_add_test(tc, test_shared_need_counts_what_larger_objects_can_hold);
    tcase_add_test(tc, test_planner_borrows_a_larger_object_when_its_class_is_full);
    tcase_add_test(tc, test_fixed_pool_refusal_names_its_floor_and_the_largest_op);
    tcase_add_test(tc, test_reswapped_clean_tensor_waits_for_its_previous_placement);
    suite_add_tcase(s, tc);
    return s;
}
