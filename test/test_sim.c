/* test_sim.c - the event simulator against hand-computed fluid-model timings. */
#include <check.h>
#include <math.h>

#include "swapadvisor/plan.h"
#include "swapadvisor/sim.h"
#include "test_util.h"

/* Graph: one op "spin" lasting spin_us, tensors a (h2d) and b (d2h). */
static dfg_graph *two_tensors(int64_t a_bytes, int64_t b_bytes, double spin_us)
{
    dfg_graph *g = dfg_new("xfer");
    int32_t a = dfg_add_tensor(g, "a", DFG_INPUT, a_bytes);
    int32_t b = dfg_add_tensor(g, "b", DFG_ACTIVATION, b_bytes);
    int32_t in[] = {a}, out[] = {b};
    dfg_add_op(g, "spin", "elementwise", DFG_FORWARD, in, 1, out, 1);
    g->ops[0].time_us = spin_us;
    sa_err err;
    ck_assert_int_eq(dfg_finalize(g, "xfer", &err), SA_OK);
    return g;
}

/* 12000 B/us alone each way, 20000 B/us shared: 10000 B/us each when both move. */
static dfg_device dev12(double latency)
{
    dfg_device d = {"test", 1 << 30, 12e9, 12e9, 20e9, latency};
    return d;
}

START_TEST(test_transfer_alone)
{
    dfg_graph *g = two_tensors(24000, 16, 1);
    dfg_device d = dev12(5.0);
    plan *p = plan_new(g, &d);
    plan_add_node(p, PLAN_SWAP_IN, 0, NULL, 0);
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    /* 5 us latency + 24000 B / 12000 B/us */
    ck_assert_double_eq_tol(r.makespan_us, 7.0, 1e-9);
    ck_assert_double_eq_tol(sim_transfer_alone_us(&d, 24000, PLAN_STREAM_H2D), 7.0, 1e-9);
    ck_assert_int_eq(r.h2d_bytes, 24000);
    ck_assert_int_eq(r.n_swap_in, 1);
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

START_TEST(test_opposite_transfers_share_duplex)
{
    dfg_graph *g = two_tensors(20000, 20000, 1);
    dfg_device d = dev12(0);
    plan *p = plan_new(g, &d);
    plan_add_node(p, PLAN_SWAP_IN, 0, NULL, 0);
    plan_add_node(p, PLAN_SWAP_OUT, 1, NULL, 0);
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    /* both at 10000 B/us the whole way: 2 us, not 20000/12000 = 1.67 */
    ck_assert_double_eq_tol(sim_end(ws)[0], 2.0, 1e-9);
    ck_assert_double_eq_tol(sim_end(ws)[1], 2.0, 1e-9);
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

START_TEST(test_transfer_starting_midway)
{
    /* h2d of 24000 B starts at 0; a d2h of 12000 B starts at 1 us (after a
     * 1 us compute).  h2d moves 12000 B alone in [0,1], then both share:
     * 12000 B each at 10000 B/us -> both end at 2.2 us. */
    dfg_graph *g = two_tensors(24000, 12000, 1.0);
    dfg_device d = dev12(0);
    plan *p = plan_new(g, &d);
    plan_add_node(p, PLAN_SWAP_IN, 0, NULL, 0);
    plan_add_node(p, PLAN_COMPUTE, 0, NULL, 0);
    int32_t dep[] = {1};
    plan_add_node(p, PLAN_SWAP_OUT, 1, dep, 1);
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(sim_start(ws)[2], 1.0, 1e-9);
    ck_assert_double_eq_tol(sim_end(ws)[0], 2.2, 1e-9);
    ck_assert_double_eq_tol(sim_end(ws)[2], 2.2, 1e-9);
    ck_assert_double_eq_tol(r.makespan_us, 2.2, 1e-9);
    ck_assert_double_eq_tol(r.compute_us, 1.0, 1e-9);
    ck_assert_double_eq_tol(r.stall_us, 1.2, 1e-9);
    /* and when the other side stops early, the rest goes at full rate again:
     * d2h of 6000 B from 1 us: shared until 1.6 (6000 B each), then h2d has
     * 24000-12000-6000 = 6000 B alone at 12000 B/us -> ends at 2.1 */
    g->tensors[1].bytes = 6000;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(sim_end(ws)[2], 1.6, 1e-9);
    ck_assert_double_eq_tol(sim_end(ws)[0], 2.1, 1e-9);
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

START_TEST(test_latency_does_not_use_bandwidth)
{
    /* both start at 0 with 10 us latency; they share only once both move */
    dfg_graph *g = two_tensors(20000, 20000, 1);
    dfg_device d = dev12(10.0);
    plan *p = plan_new(g, &d);
    plan_add_node(p, PLAN_SWAP_IN, 0, NULL, 0);
    plan_add_node(p, PLAN_SWAP_OUT, 1, NULL, 0);
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(r.makespan_us, 12.0, 1e-9);
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

START_TEST(test_streams_run_in_order_and_deadlock_is_reported)
{
    dfg_graph *g = two_tensors(12000, 12000, 3.0);
    dfg_device d = dev12(0);
    plan *p = plan_new(g, &d);
    int32_t dep_on_later[] = {1};
    plan_add_node(p, PLAN_SWAP_IN, 0, dep_on_later, 1); /* waits for node 1 ... */
    int32_t dep0[] = {0};
    plan_add_node(p, PLAN_COMPUTE, 0, dep0, 1);         /* ... which waits for node 0 */
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err = {0};
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "can never start");
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

START_TEST(test_tiny_transfer_late_in_a_long_iteration_finishes)
{
    /* 1e13 us in, a 1-byte transfer lasts less than one ulp of the clock:
     * now + left / rate rounds to now.  It must still finish (this hung). */
    dfg_graph *g = two_tensors(1, 1, 1e13);
    dfg_device d = dev12(0);
    plan *p = plan_new(g, &d);
    plan_add_node(p, PLAN_COMPUTE, 0, NULL, 0);
    int32_t dep[] = {0};
    plan_add_node(p, PLAN_SWAP_OUT, 1, dep, 1);
    sim_ws *ws = sim_ws_new();
    sim_result r;
    sa_err err;
    ck_assert_int_eq(sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(r.makespan_us, 1e13, 1.0);
    sim_ws_free(ws);
    plan_free(p);
    dfg_free(g);
}
END_TEST

Suite *suite_sim(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("fluid");
    tcase_add_test(tc, test_transfer_alone);
    tcase_add_test(tc, test_opposite_transfers_share_duplex);
    tcase_add_test(tc, test_transfer_starting_midway);
    tcase_add_test(tc, test_latency_does_not_use_bandwidth);
    tcase_add_test(tc, test_streams_run_in_order_and_deadlock_is_reported);
    tcase_add_test(tc, test_tiny_transfer_late_in_a_long_iteration_finishes);
    suite_add_tcase(s, tc);
    return s;
}
