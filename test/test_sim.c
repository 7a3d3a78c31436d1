/* test_sim.c - the event simulator against hand-computed fluid-model timings,
 * and against a plain copy of its loop (every stream head rechecked at every
 * event) on random plans: the simulator's shortcuts must give the same bits. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/plan.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/sim.h"
#include "test_util.h"

/* Graph: one op "spin" lasting spin_us, tensors a (h2d) and b (d2h). */
static sa_dfg_graph *two_tensors(int64_t a_bytes, int64_t b_bytes, double spin_us)
{
    sa_dfg_graph *g = sa_dfg_new("xfer");
    int32_t a = sa_dfg_add_tensor(g, "a", SA_DFG_INPUT, a_bytes);
    int32_t b = sa_dfg_add_tensor(g, "b", SA_DFG_ACTIVATION, b_bytes);
    int32_t in[] = {a}, out[] = {b};
    sa_dfg_add_op(g, "spin", "elementwise", SA_DFG_FORWARD, in, 1, out, 1);
    g->ops[0].time_us = spin_us;
    sa_err err;
    ck_assert_int_eq(sa_dfg_finalize(g, "xfer", &err), SA_OK);
    return g;
}

/* 12000 B/us alone each way, 20000 B/us shared: 10000 B/us each when both move. */
static sa_dfg_device dev12(double latency)
{
    sa_dfg_device d = {"test", 1 << 30, 12e9, 12e9, 20e9, latency, 0};
    return d;
}

START_TEST(test_transfer_alone)
{
    sa_dfg_graph *g = two_tensors(24000, 16, 1);
    sa_dfg_device d = dev12(5.0);
    sa_plan *p = sa_plan_new(g, &d);
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    /* 5 us latency + 24000 B / 12000 B/us */
    ck_assert_double_eq_tol(r.makespan_us, 7.0, 1e-9);
    ck_assert_double_eq_tol(sa_sim_transfer_alone_us(&d, 24000, SA_PLAN_STREAM_H2D), 7.0, 1e-9);
    ck_assert_int_eq(r.h2d_bytes, 24000);
    ck_assert_int_eq(r.n_swap_in, 1);
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_opposite_transfers_share_duplex)
{
    sa_dfg_graph *g = two_tensors(20000, 20000, 1);
    sa_dfg_device d = dev12(0);
    sa_plan *p = sa_plan_new(g, &d);
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, NULL, 0);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    /* both at 10000 B/us the whole way: 2 us, not 20000/12000 = 1.67 */
    ck_assert_double_eq_tol(sa_sim_end(ws)[0], 2.0, 1e-9);
    ck_assert_double_eq_tol(sa_sim_end(ws)[1], 2.0, 1e-9);
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_transfer_starting_midway)
{
    /* h2d of 24000 B starts at 0; a d2h of 12000 B starts at 1 us (after a
     * 1 us compute).  h2d moves 12000 B alone in [0,1], then both share:
     * 12000 B each at 10000 B/us -> both end at 2.2 us. */
    sa_dfg_graph *g = two_tensors(24000, 12000, 1.0);
    sa_dfg_device d = dev12(0);
    sa_plan *p = sa_plan_new(g, &d);
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, NULL, 0);
    int32_t dep[] = {1};
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, dep, 1);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(sa_sim_start(ws)[2], 1.0, 1e-9);
    ck_assert_double_eq_tol(sa_sim_end(ws)[0], 2.2, 1e-9);
    ck_assert_double_eq_tol(sa_sim_end(ws)[2], 2.2, 1e-9);
    ck_assert_double_eq_tol(r.makespan_us, 2.2, 1e-9);
    ck_assert_double_eq_tol(r.compute_us, 1.0, 1e-9);
    ck_assert_double_eq_tol(r.stall_us, 1.2, 1e-9);
    /* and when the other side stops early, the rest goes at full rate again:
     * d2h of 6000 B from 1 us: shared until 1.6 (6000 B each), then h2d has
     * 24000-12000-6000 = 6000 B alone at 12000 B/us -> ends at 2.1 */
    g->tensors[1].bytes = 6000;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(sa_sim_end(ws)[2], 1.6, 1e-9);
    ck_assert_double_eq_tol(sa_sim_end(ws)[0], 2.1, 1e-9);
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_latency_does_not_use_bandwidth)
{
    /* both start at 0 with 10 us latency; they share only once both move */
    sa_dfg_graph *g = two_tensors(20000, 20000, 1);
    sa_dfg_device d = dev12(10.0);
    sa_plan *p = sa_plan_new(g, &d);
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, NULL, 0);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(r.makespan_us, 12.0, 1e-9);
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_streams_run_in_order_and_deadlock_is_reported)
{
    sa_dfg_graph *g = two_tensors(12000, 12000, 3.0);
    sa_dfg_device d = dev12(0);
    sa_plan *p = sa_plan_new(g, &d);
    int32_t dep_on_later[] = {1};
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, dep_on_later, 1); /* waits for node 1 ... */
    int32_t dep0[] = {0};
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, dep0, 1);         /* ... which waits for node 0 */
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err = {0};
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "can never start");
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_tiny_transfer_late_in_a_long_iteration_finishes)
{
    /* 1e13 us in, a 1-byte transfer lasts less than one ulp of the clock:
     * now + left / rate rounds to now.  It must still finish (this hung). */
    sa_dfg_graph *g = two_tensors(1, 1, 1e13);
    sa_dfg_device d = dev12(0);
    sa_plan *p = sa_plan_new(g, &d);
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, NULL, 0);
    int32_t dep[] = {0};
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, dep, 1);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    sa_err err;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert_double_eq_tol(r.makespan_us, 1e13, 1.0);
    sa_sim_ws_free(ws);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* The simulator's event loop as it was before its shortcuts (every stream
 * head's deps rescanned at each event, fmin, the streams in a loop): start
 * and end times into st / en, the result into out.  false when stuck. */
static bool ref_sim(const sa_plan *p, const sa_dfg_graph *g, double *st, double *en, sa_sim_result *out)
{
    enum { NS = SA_PLAN_STREAM_COUNT };
    int32_t n = p->n_nodes, *q[NS], ql[NS] = {0, 0, 0}, *nxt = calloc((size_t)n + 1, sizeof *nxt);
    unsigned char *done = calloc((size_t)n + 1, 1);
    for (int s = 0; s < NS; s++)
        q[s] = calloc((size_t)n + 1, sizeof *q[s]);
    for (int32_t i = 0; i < n; i++)
        q[sa_plan_kind_stream(p->nodes[i].kind)][ql[sa_plan_kind_stream(p->nodes[i].kind)]++] = i;
    const sa_dfg_device *dev = &p->device;
    double ra[NS] = {0, dev->h2d_bytes_per_s * 1e-6, dev->d2h_bytes_per_s * 1e-6};
    double rs[NS] = {0, fmin(ra[1], dev->duplex_bytes_per_s * 0.5e-6), fmin(ra[2], dev->duplex_bytes_per_s * 0.5e-6)};
    int32_t head[NS] = {0, 0, 0}, run[NS] = {-1, -1, -1}, xn[NS] = {-1, -1, -1}, finished = 0;
    double comp_end = 0, now = 0, busy = 0, lat[NS] = {0, 0, 0}, left[NS] = {0, 0, 0};
    bool ok = true;
    memset(out, 0, sizeof *out);
    while (finished < n && ok) {
        for (int s = 0; s < NS; s++) {
            if (run[s] >= 0 || head[s] >= ql[s])
                continue;
            int32_t v = q[s][head[s]];
            const sa_plan_node *nd = &p->nodes[v];
            while (nxt[v] < nd->n_deps && done[p->deps[nd->dep_off + nxt[v]]])
                nxt[v]++;
            if (nxt[v] < nd->n_deps)
                continue;
            run[s] = v;
            head[s]++;
            st[v] = now;
            if (s == SA_PLAN_STREAM_COMPUTE) {
                double d = g->ops[nd->ref].time_us;
                comp_end = now + (d > 0 ? d : 0);
                busy += comp_end - now;
                out->n_recompute += nd->kind == SA_PLAN_RECOMPUTE;
            } else {
                int64_t b = g->tensors[nd->ref].bytes;
                xn[s] = v;
                lat[s] = now + dev->transfer_latency_us;
                left[s] = (double)b;
                if (s == SA_PLAN_STREAM_H2D) {
                    out->h2d_bytes += b;
                    out->n_swap_in++;
                } else {
                    out->d2h_bytes += b;
                    out->n_swap_out++;
                }
            }
        }
        double next = run[0] >= 0 ? comp_end : (double)INFINITY, rate[NS] = {0, 0, 0}, fin[NS] = {0, 0, 0};
        bool mv[NS] = {false, false, false};
        for (int s = 1; s < NS; s++)
            mv[s] = run[s] >= 0 && lat[s] <= now;
        for (int s = 1; s < NS; s++) {
            if (run[s] < 0)
                continue;
            if (!mv[s]) {
                next = fmin(next, lat[s]);
                continue;
            }
            rate[s] = mv[3 - s] ? rs[s] : ra[s];
            fin[s] = now + left[s] / rate[s];
            next = fmin(next, fin[s]);
        }
        if (!isfinite(next)) {
            ok = false;
            break;
        }
        double dt = next - now;
        now = next;
        for (int s = 1; s < NS; s++)
            if (mv[s])
                left[s] -= rate[s] * dt;
        if (run[0] >= 0 && comp_end <= now) {
            en[run[0]] = comp_end;
            done[run[0]] = 1;
            run[0] = -1;
            finished++;
        }
        for (int s = 1; s < NS; s++) {
            if (!mv[s] || (fin[s] > now && left[s] > 1e-9 * (1.0 + (double)g->tensors[p->nodes[xn[s]].ref].bytes)))
                continue;
            en[xn[s]] = now;
            done[xn[s]] = 1;
            run[s] = -1;
            finished++;
        }
    }
    double makespan = 0;
    for (int32_t i = 0; ok && i < n; i++)
        if (en[i] > makespan)
            makespan = en[i];
    out->makespan_us = makespan;
    out->compute_us = busy;
    out->stall_us = makespan - busy;
    for (int s = 0; s < NS; s++)
        free(q[s]);
    free(nxt);
    free(done);
    return ok;
}

/* Random plans over a random graph: compute and recompute nodes of random
 * ops, swaps of random tensors, each node waiting on up to four earlier ones
 * (never a cycle: a stream runs its nodes in id order), some ops taking no
 * time, latencies and duplex sharing on or off. */
START_TEST(test_random_plans_match_the_plain_loop)
{
    rng r;
    rng_seed(&r, 9, 0, 0);
    for (int iter = 0; iter < 300; iter++) {
        sa_dfg_graph *g = sa_dfg_new("rand");
        int32_t nt = 2 + rng_below(&r, 12), no = 1 + rng_below(&r, 10);
        for (int32_t t = 0; t < nt; t++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", t);
            sa_dfg_add_tensor(g, name, t == 0 || t > no ? SA_DFG_INPUT : SA_DFG_ACTIVATION, 1 + rng_below(&r, 1 << 24));
        }
        for (int32_t i = 0; i < no; i++) {
            char name[16];
            snprintf(name, sizeof name, "op%d", i);
            int32_t in[] = {0}, out[] = {1 + i};
            sa_dfg_add_op(g, name, "elementwise", SA_DFG_FORWARD, in, 1, out, i + 1 < nt ? 1 : 0);
            g->ops[i].time_us = rng_unit(&r) < 0.2 ? 0 : rng_unit(&r) * 3000;
        }
        sa_err err;
        ck_assert_msg(sa_dfg_finalize(g, "rand", &err) == SA_OK, "%s", err.msg);
        sa_dfg_device d = {"test", 1 << 30, 12e9, 10e9, rng_unit(&r) < 0.5 ? 14e9 : 30e9, rng_unit(&r) < 0.3 ? 0 : 8, 0};
        sa_plan *p = sa_plan_new(g, &d);
        int32_t n = 1 + rng_below(&r, 60);
        for (int32_t v = 0; v < n; v++) {
            double u = rng_unit(&r);
            sa_plan_kind k = u < 0.4 ? SA_PLAN_COMPUTE : u < 0.45 ? SA_PLAN_RECOMPUTE : u < 0.75 ? SA_PLAN_SWAP_IN : SA_PLAN_SWAP_OUT;
            int32_t ref = sa_plan_kind_stream(k) == SA_PLAN_STREAM_COMPUTE ? rng_below(&r, no) : rng_below(&r, nt);
            int32_t deps[4], nd = v > 0 ? rng_below(&r, 5) : 0;
            for (int32_t j = 0; j < nd; j++)
                deps[j] = rng_below(&r, v);
            ck_assert_int_ge(sa_plan_add_node(p, k, ref, deps, nd), 0);
        }
        double *st = calloc((size_t)n, sizeof *st), *en = calloc((size_t)n, sizeof *en);
        sa_sim_result want, got;
        ck_assert(ref_sim(p, g, st, en, &want));
        sa_sim_ws *ws = sa_sim_ws_new();
        ck_assert_int_eq(sa_sim_run(p, g, ws, &got, &err), SA_OK);
        ck_assert_msg(want.makespan_us == got.makespan_us && want.compute_us == got.compute_us &&
                          want.stall_us == got.stall_us, "plan %d: makespan %.17g vs %.17g", iter, want.makespan_us,
                      got.makespan_us);
        ck_assert(want.h2d_bytes == got.h2d_bytes && want.d2h_bytes == got.d2h_bytes);
        ck_assert(want.n_swap_in == got.n_swap_in && want.n_swap_out == got.n_swap_out &&
                  want.n_recompute == got.n_recompute);
        ck_assert(memcmp(st, sa_sim_start(ws), (size_t)n * sizeof *st) == 0);
        ck_assert(memcmp(en, sa_sim_end(ws), (size_t)n * sizeof *en) == 0);
        sa_sim_ws_free(ws);
        free(st);
        free(en);
        sa_plan_free(p);
        sa_dfg_free(g);
    }
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
    tcase_add_test(tc, test_random_plans_match_the_plain_loop);
    suite_add_tcase(s, tc);
    return s;
}
