/* test_pack.c - SmartPool's best-fit packer: a hand-made set packed exactly as
 * best fit predicts, peak loads, and re-packing real plans (never bigger,
 * always valid). */
#include <check.h>
#include <stdlib.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

#define MB 1048576

typedef struct life_spec {
    const char *name;
    int64_t units; /* MiB */
    int first, last;
} life_spec;

/* A graph of n_ops ops in a chain where tensor i is written by op first and
 * read by every op up to last, and the plan that computes them in order with
 * each tensor placed from its producer to its last reader (offsets 0). */
static sa_dfg_graph *lifetimes_graph(const life_spec *ls, int n, int n_ops)
{
    sa_dfg_graph *g = sa_dfg_new("lifetimes");
    for (int i = 0; i < n; i++)
        sa_dfg_add_tensor(g, ls[i].name, SA_DFG_ACTIVATION, ls[i].units * MB);
    for (int op = 0; op < n_ops; op++) {
        int32_t in[16], out[16], ni = 0, no = 0;
        for (int i = 0; i < n; i++) {
            if (ls[i].first == op)
                out[no++] = i;
            else if (ls[i].first < op && op <= ls[i].last)
                in[ni++] = i;
        }
        char name[16];
        snprintf(name, sizeof name, "op%d", op);
        sa_dfg_add_op(g, name, "relu", SA_DFG_FORWARD, in, ni, out, no);
        g->ops[op].time_us = 1.0;
    }
    sa_err err;
    ck_assert_msg(sa_dfg_finalize(g, "lifetimes", &err) == SA_OK, "%s", err.msg);
    return g;
}

static sa_plan *chain_plan(const sa_dfg_graph *g, const life_spec *ls, int n)
{
    sa_dfg_device d = {"unit", 1024 * (int64_t)MB, 1e9, 1e9, 2e9, 0, 0};
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert(sa_plan_set_schedule(p, g->topo, g->n_ops));
    for (int32_t op = 0; op < g->n_ops; op++)
        ck_assert_int_eq(sa_plan_add_node(p, SA_PLAN_COMPUTE, g->topo[op], NULL, 0), op);
    for (int i = 0; i < n; i++)
        ck_assert(sa_plan_add_placement(p, i, 0, ls[i].first, ls[i].last));
    return p;
}

static void expect_valid(sa_plan *p, const sa_dfg_graph *g, const char *what)
{
    sa_err err = {0};
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    sa_val_report rep = {0};
    sa_status st = sa_plan_validate(p, g, true, &rep, &err);
    ck_assert_msg(st == SA_OK, "%s: %d violations, first: %s", what, rep.n_violations, err.msg);
    sa_val_report_free(&rep);
}

/* Blocks go largest first; X (4 MiB, alive only at op 2) finds two holes
 * between the long-lived blocks: 5 MiB at 6..11 and 4 MiB at 15..19.  Best
 * fit takes the smaller one (first fit would take the lower). */
START_TEST(test_best_fit_takes_the_smallest_hole)
{
    const life_spec ls[] = {
        {"L1", 6, 0, 3}, {"T5", 5, 0, 0}, {"L2", 4, 0, 3}, {"T4", 4, 0, 0}, {"L3", 4, 0, 3}, {"X", 4, 2, 2},
    };
    const int64_t expect[] = {0, 6, 11, 15, 19, 15};
    sa_dfg_graph *g = lifetimes_graph(ls, 6, 4);
    sa_plan *p = chain_plan(g, ls, 6);
    pack_opts o;
    pack_opts_default(&o);
    pack_stats s;
    sa_err err = {0};
    ck_assert_msg(pack_plan(p, g, &o, &s, &err) == SA_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(p->place[i].offset == expect[i] * MB, "%s at %lld MiB, expected %lld", ls[i].name,
                      (long long)(p->place[i].offset / MB), (long long)expect[i]);
    ck_assert_int_eq(p->arena_bytes, 23 * MB);
    ck_assert_int_eq(s.peak_load, 23 * MB); /* 6 + 5 + 4 + 4 + 4 at op 0: optimal */
    ck_assert_int_eq(s.n_blocks, 6);
    expect_valid(p, g, "best fit");
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Blocks whose lifetimes do not meet share addresses; a block alive while two
 * others are goes above both; the arena equals the peak load. */
START_TEST(test_disjoint_lifetimes_share_addresses)
{
    const life_spec ls[] = {
        {"A", 4, 0, 3}, {"B", 3, 0, 0}, {"C", 3, 2, 3}, {"D", 2, 1, 1}, {"E", 1, 0, 3},
    };
    const int64_t expect[] = {0, 4, 4, 4, 7};
    sa_dfg_graph *g = lifetimes_graph(ls, 5, 4);
    sa_plan *p = chain_plan(g, ls, 5);
    pack_stats s;
    sa_err err = {0};
    ck_assert_msg(pack_plan(p, g, NULL, &s, &err) == SA_OK, "%s", err.msg);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(p->place[i].offset == expect[i] * MB, "%s at %lld MiB, expected %lld", ls[i].name,
                      (long long)(p->place[i].offset / MB), (long long)expect[i]);
    ck_assert_int_eq(p->arena_bytes, 8 * MB);
    ck_assert_int_eq(s.peak_load, 8 * MB);
    int64_t peak;
    ck_assert_int_eq(pack_peak_load(p, g, NULL, &peak, &err), SA_OK);
    ck_assert_int_eq(peak, 8 * MB);
    expect_valid(p, g, "disjoint");
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* A swap-out that no compute node waits for never provably ends: nothing
 * placed after it may reuse its memory. */
START_TEST(test_unawaited_transfer_keeps_its_memory)
{
    const life_spec ls[] = {{"A", 2, 0, 1}, {"B", 2, 2, 3}};
    sa_dfg_graph *g = lifetimes_graph(ls, 2, 4);
    sa_dfg_device d = {"unit", 1024 * (int64_t)MB, 1e9, 1e9, 2e9, 0, 0};
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert(sa_plan_set_schedule(p, g->topo, g->n_ops));
    int32_t c0 = sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, NULL, 0);
    int32_t c1 = sa_plan_add_node(p, SA_PLAN_COMPUTE, 1, NULL, 0);
    int32_t so = sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 0, &c1, 1); /* A leaves after op 1 */
    int32_t c2 = sa_plan_add_node(p, SA_PLAN_COMPUTE, 2, NULL, 0);
    int32_t c3 = sa_plan_add_node(p, SA_PLAN_COMPUTE, 3, NULL, 0);
    ck_assert(sa_plan_add_placement(p, 0, 0, c0, so));
    ck_assert(sa_plan_add_placement(p, 1, 0, c2, c3));
    sa_err err = {0};
    ck_assert_int_eq(pack_plan(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_int_eq(p->place[1].offset, 2 * MB);
    expect_valid(p, g, "unawaited");
    /* once op 2 waits for the swap-out, B may take A's place */
    sa_plan *q = sa_plan_new(g, &d);
    ck_assert(sa_plan_set_schedule(q, g->topo, g->n_ops));
    sa_plan_add_node(q, SA_PLAN_COMPUTE, 0, NULL, 0);
    sa_plan_add_node(q, SA_PLAN_COMPUTE, 1, NULL, 0);
    sa_plan_add_node(q, SA_PLAN_SWAP_OUT, 0, &c1, 1);
    sa_plan_add_node(q, SA_PLAN_COMPUTE, 2, &so, 1);
    sa_plan_add_node(q, SA_PLAN_COMPUTE, 3, NULL, 0);
    ck_assert(sa_plan_add_placement(q, 0, 0, c0, so));
    ck_assert(sa_plan_add_placement(q, 1, 0, c2, c3));
    ck_assert_int_eq(pack_plan(q, g, NULL, NULL, &err), SA_OK);
    ck_assert_int_eq(q->place[1].offset, 0);
    ck_assert_int_eq(q->arena_bytes, 2 * MB);
    expect_valid(q, g, "awaited");
    sa_plan_free(p);
    sa_plan_free(q);
    sa_dfg_free(g);
}
END_TEST

static sa_plan *ladder_plan(const sa_dfg_graph *g, const char *policy, double frac)
{
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    sa_dfg_device d = {"ladder", (int64_t)((double)peak * frac), 4e9, 4e9, 6e9, 5.0, 0};
    sa_plan *p = NULL;
    sa_err err = {0};
    if (strcmp(policy, "ga") == 0) {
        sa_ga_opts o;
        sa_ga_opts_default(&o);
        o.threads = 2;
        o.seed = 5;
        o.population = 8;
        o.generations = 3;
        sa_ga_result r;
        ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
        p = r.best;
    } else {
        ck_assert_msg(sa_policy_run(policy, g, &d, &p, &err) == SA_OK, "%s at %.2f: %s", policy, frac, err.msg);
    }
    return p;
}

/* Re-packing the planners' plans: with keep_if_worse the arena never grows,
 * and packed or kept, the plan stays valid (strict), keeps its timing, and
 * replays correctly on the host. */
START_TEST(test_repack_never_grows_and_stays_valid)
{
    sa_dfg_graph *g = tu_ladder(8);
    const char *pol[] = {"ideal", "topo", "odswap", "ga"};
    const double fr[] = {0.7, 0.5};
    int64_t saved = 0;
    for (size_t i = 0; i < SA_ARRAY_LEN(pol); i++)
        for (size_t f = 0; f < SA_ARRAY_LEN(fr); f++) {
            sa_plan *p = ladder_plan(g, pol[i], fr[f]);
            double before_us = p->predicted.iteration_us;
            pack_opts o;
            pack_opts_default(&o);
            o.keep_if_worse = true;
            pack_stats s;
            sa_err err = {0};
            ck_assert_msg(pack_plan(p, g, &o, &s, &err) == SA_OK, "%s", err.msg);
            ck_assert_int_le(s.arena_after, s.arena_before);
            ck_assert_int_le(s.peak_load, s.arena_after + o.align * s.n_blocks);
            ck_assert_int_eq(p->arena_bytes, s.arena_after);
            saved += s.arena_before - s.arena_after;
            expect_valid(p, g, pol[i]);
            ck_assert(p->predicted.iteration_us == before_us);
            sa_runner_opts ro;
            sa_runner_opts_default(&ro);
            ro.backend = SA_RUNNER_HOST;
            ck_assert_msg(sa_runner_run(p, g, &ro, NULL, &err) == SA_OK, "%s: %s", pol[i], err.msg);
            /* without the guard the packing itself is valid too (greedy best
             * fit can lose to the pool's layout: then the memory is raised) */
            o.keep_if_worse = false;
            ck_assert_int_eq(pack_plan(p, g, &o, &s, &err), SA_OK);
            ck_assert_int_ge(s.arena_after, s.peak_load - o.align * s.n_blocks);
            if (p->arena_bytes > p->device.memory_bytes)
                p->device.memory_bytes = p->arena_bytes;
            expect_valid(p, g, pol[i]);
            sa_plan_free(p);
        }
    ck_assert_int_gt(saved, 0); /* the pool's size classes leave room to reclaim */
    sa_dfg_free(g);
}
END_TEST

Suite *suite_pack(void)
{
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_best_fit_takes_the_smallest_hole);
    tcase_add_test(tc, test_disjoint_lifetimes_share_addresses);
    tcase_add_test(tc, test_unawaited_transfer_keeps_its_memory);
    tcase_add_test(tc, test_repack_never_grows_and_stays_valid);
    suite_add_tcase(s, tc);
    return s;
}
