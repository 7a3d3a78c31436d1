/* test_plan.c - plan documents and the validator on a hand-built plan and its corruptions. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

static sa_dfg_graph *tiny(void)
{
    sa_dfg_graph *g;
    sa_err err;
    const char *t = tu_tiny_json();
    ck_assert_int_eq(sa_dfg_parse(t, strlen(t), "tiny.json", &g, &err), SA_OK);
    return g;
}

/* 16 bytes/us each way: 16-byte tensors take 1 us, 32-byte ones 2 us. */
static sa_dfg_device dev16(void)
{
    sa_dfg_device d = {"hand", 256, 16e6, 16e6, 32e6, 0, 0};
    return d;
}

enum { VARIANT_OK, VARIANT_NO_SWAPOUT_W, VARIANT_OVERLAP, VARIANT_NO_DEP_ON_SWAPIN, VARIANT_SWAPIN_ACTIVATION };

/* Tensors: 0 x input 16, 1 w param 32, 2 y 16, 3 dy 16, 4 dw 32, 5 ws 8.
 * Ops: 0 fc(x,w -> y,ws), 1 loss(y -> dy), 2 fc_bw(dy,x -> dw), 3 sgd(w,dw -> w). */
static sa_plan *hand_plan(const sa_dfg_graph *g, int variant)
{
    sa_dfg_device d = dev16();
    sa_plan *p = sa_plan_new(g, &d);
    int32_t sched[] = {0, 1, 2, 3};
    sa_plan_set_schedule(p, sched, 4);
    int32_t d01[] = {0, 1}, d1[] = {1}, d5[] = {5};
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, variant == VARIANT_SWAPIN_ACTIVATION ? 2 : 0, NULL, 0); /* 0 */
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 1, NULL, 0);                                            /* 1 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, variant == VARIANT_NO_DEP_ON_SWAPIN ? d01 : d01,
                  variant == VARIANT_NO_DEP_ON_SWAPIN ? 0 : 2);                            /* 2 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 1, NULL, 0);                                            /* 3 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 2, NULL, 0);                                            /* 4 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 3, NULL, 0);                                            /* 5 */
    if (variant != VARIANT_NO_SWAPOUT_W)
        sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, d5, 1);                                         /* 6 */
    (void)d1;
    sa_plan_add_placement(p, 0, 0, 0, 4);                                                     /* x */
    sa_plan_add_placement(p, 1, 16, 1, variant == VARIANT_NO_SWAPOUT_W ? 5 : 6);              /* w */
    sa_plan_add_placement(p, 2, 48, 2, 3);                                                    /* y */
    sa_plan_add_placement(p, 5, 64, 2, 2);                                                    /* ws */
    sa_plan_add_placement(p, 3, variant == VARIANT_OVERLAP ? 48 : 80, 3, 4);                  /* dy */
    sa_plan_add_placement(p, 4, 96, 4, 5);                                                    /* dw */
    p->arena_bytes = 128;
    sa_err err;
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    return p;
}

START_TEST(test_hand_plan_is_valid_and_timed)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, VARIANT_OK);
    sa_err err = {0};
    sa_val_report rep = {0};
    ck_assert_msg(sa_plan_validate(p, g, true, &rep, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(rep.n_violations, 0);
    /* x in [0,1], w in [1,3]; fc [3,4.5], loss, fc_bw, sgd -> 7.5; w out 2 us -> 9.5 */
    ck_assert_double_eq_tol(p->predicted.iteration_us, 9.5, 1e-9);
    ck_assert_double_eq_tol(p->predicted.ideal_us, 4.5, 1e-9);
    ck_assert_int_eq(p->predicted.h2d_bytes, 48);
    ck_assert_int_eq(p->predicted.d2h_bytes, 32);
    sa_val_report_free(&rep);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

static void expect_violation(int variant, const char *needle)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, variant);
    sa_err err = {0};
    sa_val_report rep = {0};
    ck_assert_int_eq(sa_plan_validate(p, g, false, &rep, &err), SA_EINVALID);
    bool found = false;
    for (int32_t i = 0; i < rep.n_lines; i++)
        found |= strstr(rep.lines[i], needle) != NULL;
    ck_assert_msg(found, "variant %d: no violation mentions '%s' (first: %s)", variant, needle, err.msg);
    sa_val_report_free(&rep);
    sa_plan_free(p);
    sa_dfg_free(g);
}

START_TEST(test_validator_catches_stale_parameter_at_end)
{
    expect_violation(VARIANT_NO_SWAPOUT_W, "rule 5: updated tensor 1 (\"w\")");
}
END_TEST

START_TEST(test_validator_catches_overlapping_placements)
{
    expect_violation(VARIANT_OVERLAP, "rule 4: placements 2 (tensor 2) and 4 (tensor 3) overlap");
}
END_TEST

START_TEST(test_validator_catches_read_before_swap_in_ends)
{
    expect_violation(VARIANT_NO_DEP_ON_SWAPIN, "reads tensor 0 (\"x\") without valid contents");
}
END_TEST

START_TEST(test_validator_catches_swap_in_of_unsaved_activation)
{
    expect_violation(VARIANT_SWAPIN_ACTIVATION, "rule 3: nodes[0] swaps in tensor 2 (\"y\") but the host holds no");
}
END_TEST

START_TEST(test_validator_checks_prediction_and_arena)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, VARIANT_OK);
    sa_err err = {0};
    p->predicted.iteration_us *= 1.01;
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "rule 6");
    p->predicted.iteration_us /= 1.01;
    p->arena_bytes = 100;
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "arena_bytes");
    p->arena_bytes = 128;
    p->device.memory_bytes = 120;
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "past memory_bytes");
    p->device.memory_bytes = 256;
    p->schedule[0] = 1;
    p->schedule[1] = 0;
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "not a topological order");
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_strict_follows_transitive_order)
{
    /* w is swapped in before x on the same stream; the compute waits only for
     * x, which is enough: stream order makes w arrive first. */
    sa_dfg_graph *g = tiny();
    sa_dfg_device d = dev16();
    sa_plan *p = sa_plan_new(g, &d);
    int32_t sched[] = {0, 1, 2, 3};
    sa_plan_set_schedule(p, sched, 4);
    int32_t d1[] = {1}, d5[] = {5};
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 1, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, d1, 1);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 1, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 2, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 3, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, d5, 1);
    sa_plan_add_placement(p, 1, 16, 0, 6);
    sa_plan_add_placement(p, 0, 0, 1, 4);
    sa_plan_add_placement(p, 2, 48, 2, 3);
    sa_plan_add_placement(p, 5, 64, 2, 2);
    sa_plan_add_placement(p, 3, 80, 3, 4);
    sa_plan_add_placement(p, 4, 96, 4, 5);
    p->arena_bytes = 128;
    sa_err err = {0};
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    /* the swap_out must wait for the update: without the dep it would read w
     * before sgd wrote it */
    p->nodes[6].n_deps = 0;
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_plan_round_trip)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, VARIANT_OK), *q;
    sa_plan_set_search_json(p, "{\"algorithm\":\"hand\",\"seed\":7}");
    sa_err err = {0};
    char *a, *b;
    ck_assert_int_eq(sa_plan_to_json(p, &a, &err), SA_OK);
    ck_assert_int_eq(sa_plan_parse(a, strlen(a), "p.json", &q, &err), SA_OK);
    ck_assert_int_eq(sa_plan_to_json(q, &b, &err), SA_OK);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(q->n_nodes, 7);
    ck_assert_int_eq(q->nodes[6].kind, SA_PLAN_SWAP_OUT);
    ck_assert_int_eq(q->n_place, 6);
    ck_assert_ptr_nonnull(strstr(b, "\"seed\":7"));
    ck_assert_int_eq(sa_plan_validate(q, g, true, NULL, &err), SA_OK);
    free(a);
    free(b);
    sa_plan_free(q);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_plan_parse_rejects)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, VARIANT_OK), *q = NULL;
    sa_err err = {0};
    char *a;
    ck_assert_int_eq(sa_plan_to_json(p, &a, &err), SA_OK);
    struct { const char *from, *to, *needle; } cases[] = {
        {"\"format\": \"swapplan\"", "\"format\": \"dfg\"", "expected \"swapplan\""},
        {"\"version\": 1", "\"version\": 9", "newer than the supported swapplan v1"},
        {"\"kind\":\"swap_out\"", "\"kind\":\"evict\"", "nodes[6]: unknown kind \"evict\""},
        {"\"deps\":[5]", "\"deps\":[50]", "dangling id"},
        {"\"tensor\":4,\"offset\":96", "\"tensor\":40,\"offset\":96", "tensor 40 does not exist"},
        {"\"arena_bytes\": 128", "\"arena_bytes\": -1", "arena_bytes"},
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(cases); i++) {
        char *bad = tu_replace(a, cases[i].from, cases[i].to);
        ck_assert_int_eq(sa_plan_parse(bad, strlen(bad), "p.json", &q, &err), SA_EFORMAT);
        ck_assert_msg_contains(err, cases[i].needle);
        ck_assert_msg_contains(err, "p.json");
        free(bad);
    }
    /* a plan for another graph */
    g->n_ops--;
    ck_assert_int_eq(sa_plan_check_graph(p, g, "p.json", &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "plan is for 4 ops");
    g->n_ops++;
    free(a);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_plan(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("validator");
    tcase_add_test(tc, test_hand_plan_is_valid_and_timed);
    tcase_add_test(tc, test_validator_catches_stale_parameter_at_end);
    tcase_add_test(tc, test_validator_catches_overlapping_placements);
    tcase_add_test(tc, test_validator_catches_read_before_swap_in_ends);
    tcase_add_test(tc, test_validator_catches_swap_in_of_unsaved_activation);
    tcase_add_test(tc, test_validator_checks_prediction_and_arena);
    tcase_add_test(tc, test_strict_follows_transitive_order);
    tcase_add_test(tc, test_plan_round_trip);
    tcase_add_test(tc, test_plan_parse_rejects);
    suite_add_tcase(s, tc);
    return s;
}
