/* test_decide.c - the decision-driven plan builder: keep, swap and recompute
 * plans on the ladder are valid (strict), simulate, and replay correctly on
 * the host runner; decisions a tensor cannot carry out are demoted. */
#include <check.h>
#include <stdlib.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

static sa_dfg_device dev_big(void)
{
    sa_dfg_device d = {"decide-dev", (int64_t)1 << 40, 4e9, 4e9, 6e9, 5.0, 0};
    return d;
}

/* Builds act's plan, validates it strictly, re-simulates it and replays it
 * on the host backend (which checks every byte against a reference run). */
static sa_plan *build_checked(const sa_dfg_graph *g, const uint8_t *act, const dec_opts *o, dec_stats *ds)
{
    sa_dfg_device d = dev_big();
    sa_plan *p = sa_plan_new(g, &d);
    sa_err err = {0};
    ck_assert_ptr_nonnull(p);
    planner_req q = {.layout = PLANNER_BESTFIT, .act = act, .dec = o, .stats = ds};
    ck_assert_msg(planner_plan(g, &d, &q, p, &err) == SA_OK, "%s", err.msg);
    sa_val_report rep = {0};
    ck_assert_msg(sa_plan_validate(p, g, true, &rep, &err) == SA_OK, "%d violations, first: %s", rep.n_violations,
                  err.msg);
    sa_val_report_free(&rep);
    ck_assert_int_eq(p->arena_bytes, ds->arena_bytes);
    ck_assert_int_ge(p->arena_bytes, ds->peak_load - 256 * 4);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert(r.makespan_us == p->predicted.iteration_us);
    ck_assert_int_eq(r.n_recompute, ds->n_recompute_nodes);
    sa_sim_ws_free(ws);
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    ro.iterations = 2;
    sa_runner_report rr;
    ck_assert_msg(sa_runner_run(p, g, &ro, &rr, &err) == SA_OK, "replay: %s", err.msg);
    ck_assert_int_gt(rr.verified_checksums, 0);
    sa_runner_report_free(&rr);
    return p;
}

static uint8_t *forward_acts(const sa_dfg_graph *g, uint8_t what)
{
    uint8_t *act = calloc((size_t)g->n_tensors, 1);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t op = g->tensors[t].producer;
        if (g->tensors[t].kind == SA_DFG_ACTIVATION && op >= 0 && g->ops[op].phase == SA_DFG_FORWARD)
            act[t] = what;
    }
    return act;
}

START_TEST(test_keep_everything_is_the_no_swap_plan)
{
    sa_dfg_graph *g = tu_ladder(6);
    dec_opts o;
    dec_opts_default(&o);
    dec_stats ds;
    sa_plan *p = build_checked(g, NULL, &o, &ds);
    ck_assert_int_eq(ds.n_swapped + ds.n_recomputed + ds.n_demoted, 0);
    ck_assert_int_eq(p->predicted.d2h_bytes, 0);
    ck_assert_int_eq(p->predicted.h2d_bytes, g->tensors[0].bytes); /* the input, once */
    /* best fit over the schedule's lifetimes: near the no-swap peak */
    ck_assert_int_le(p->arena_bytes, sa_dfg_peak_bytes(g, NULL) * 11 / 10);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_swapping_activations_lowers_the_arena)
{
    sa_dfg_graph *g = tu_ladder(8);
    dec_opts o;
    dec_opts_default(&o);
    dec_stats keep, swap;
    sa_plan *p0 = build_checked(g, NULL, &o, &keep);
    uint8_t *act = forward_acts(g, DEC_SWAP);
    o.out_sync = 1; /* synchronous swap-outs: memory is free at the next op */
    sa_plan *p1 = build_checked(g, act, &o, &swap);
    ck_assert_int_gt(swap.n_swapped, 0);
    ck_assert_int_gt(p1->predicted.d2h_bytes, 0);
    ck_assert_int_lt(p1->arena_bytes, p0->arena_bytes);
    /* fixed and time-based prefetch both stay valid */
    for (int pf = 0; pf <= 3; pf++) {
        o.prefetch = pf;
        o.out_sync = pf;
        dec_stats ds;
        sa_plan_free(build_checked(g, act, &o, &ds));
    }
    free(act);
    sa_plan_free(p0);
    sa_plan_free(p1);
    sa_dfg_free(g);
}
END_TEST

/* Every forward activation recomputed: chains of recompute nodes run back
 * to the input, each re-running its producer; the host replay checks that
 * every recompute reads and writes what the reference did. */
START_TEST(test_recompute_chains_replay_correctly)
{
    sa_dfg_graph *g = tu_ladder(6);
    dec_opts o;
    dec_opts_default(&o);
    uint8_t *act = forward_acts(g, DEC_RECOMPUTE);
    dec_stats ds, keep;
    sa_plan *p0 = build_checked(g, NULL, &o, &keep);
    sa_plan *p = build_checked(g, act, &o, &ds);
    ck_assert_int_gt(ds.n_recomputed, 0);
    ck_assert_int_gt(ds.n_recompute_nodes, 0);
    ck_assert_int_eq(p->predicted.d2h_bytes, 0);
    ck_assert(p->predicted.compute_us > p0->predicted.compute_us); /* recomputation costs compute time */
    ck_assert_int_le(p->arena_bytes, p0->arena_bytes);
    /* checkpoints every third activation: shorter chains */
    for (int32_t t = 0, j = 0; t < g->n_tensors; t++)
        if (act[t] == DEC_RECOMPUTE && j++ % 3 == 2)
            act[t] = DEC_KEEP;
    dec_stats d3;
    sa_plan_free(build_checked(g, act, &o, &d3));
    ck_assert_int_lt(d3.n_recompute_nodes, ds.n_recompute_nodes);
    free(act);
    sa_plan_free(p);
    sa_plan_free(p0);
    sa_dfg_free(g);
}
END_TEST

/* Swap and recompute mixed: a recompute reads a swapped tensor, which is
 * then swapped in ahead of the recompute. */
START_TEST(test_mixed_swap_and_recompute)
{
    sa_dfg_graph *g = tu_ladder(6);
    dec_opts o;
    dec_opts_default(&o);
    uint8_t *act = forward_acts(g, DEC_RECOMPUTE);
    for (int32_t t = 0, j = 0; t < g->n_tensors; t++)
        if (act[t] && j++ % 2 == 0)
            act[t] = DEC_SWAP;
    act[0] = DEC_SWAP; /* the input: dropped and fetched again */
    dec_stats ds;
    sa_plan *p = build_checked(g, act, &o, &ds);
    ck_assert_int_gt(ds.n_swapped, 0);
    ck_assert_int_gt(ds.n_recompute_nodes, 0);
    ck_assert_int_gt(p->predicted.h2d_bytes, g->tensors[0].bytes);
    free(act);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Backward gradients asked to be recomputed: those with a gap between two
 * uses and a producer that may run again there are rebuilt by re-running a
 * backward op (the host replay checks every byte); the rest (no op between
 * two uses, no reader at all, a producer reading a weight updated by then)
 * are kept instead and counted. */
START_TEST(test_backward_gradients_recompute_where_they_can)
{
    sa_dfg_graph *g = tu_ladder(4);
    uint8_t *act = calloc((size_t)g->n_tensors, 1);
    int32_t asked = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == SA_DFG_GRADIENT && g->ops[g->tensors[t].producer].phase != SA_DFG_FORWARD) {
            act[t] = DEC_RECOMPUTE;
            asked++;
        }
    ck_assert(!dec_recomputable(g, 1)); /* Wa0: a parameter has no producer */
    dec_opts o;
    dec_opts_default(&o);
    dec_stats ds;
    sa_plan *p = build_checked(g, act, &o, &ds);
    ck_assert_int_eq(ds.n_demoted + ds.n_recomputed, asked);
    ck_assert_int_gt(ds.n_recomputed, 0);
    ck_assert_int_gt(ds.n_demoted, 0);
    int32_t bwd = 0;
    for (int32_t v = 0; v < p->n_nodes; v++)
        bwd += p->nodes[v].kind == SA_PLAN_RECOMPUTE && g->ops[p->nodes[v].ref].phase == SA_DFG_BACKWARD;
    ck_assert_int_gt(bwd, 0);
    free(act);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* A backward intermediate h read again after a large one k: recomputed, h
 * leaves the device over k's life (its producer's two small inputs stay in
 * its place), so the arena shrinks; swapped, it moves over the link once
 * each way.  Both replay correctly. */
START_TEST(test_backward_intermediate_leaves_over_its_gap)
{
    const int64_t MB = 1 << 20;
    int32_t h;
    sa_dfg_graph *g = tu_backward_gap(&h);
    dec_opts o;
    dec_opts_default(&o);
    o.out_sync = 1;
    uint8_t *act = calloc((size_t)g->n_tensors, 1);
    dec_stats keep, rc, sw;
    sa_plan *p0 = build_checked(g, act, &o, &keep);
    act[h] = DEC_RECOMPUTE;
    sa_plan *p1 = build_checked(g, act, &o, &rc);
    ck_assert_int_eq(rc.n_recomputed, 1);
    ck_assert_int_eq(rc.n_recompute_nodes, 1);
    ck_assert_int_eq(rc.n_demoted, 0);
    ck_assert_int_lt(p1->arena_bytes, p0->arena_bytes);
    ck_assert_int_le(p1->arena_bytes, 20 * MB); /* k, e or m, and b0's inputs a and d: no h */
    act[h] = DEC_SWAP;
    o.prefetch = 1; /* the link is slow beside these ops: fetch one op ahead */
    sa_plan *p2 = build_checked(g, act, &o, &sw);
    ck_assert_int_eq(sw.n_swapped, 1);
    ck_assert_int_eq(p2->predicted.d2h_bytes, 8 * MB);
    ck_assert_int_le(p2->arena_bytes, p0->arena_bytes); /* back in while b3 still holds k */
    free(act);
    sa_plan_free(p0);
    sa_plan_free(p1);
    sa_plan_free(p2);
    sa_dfg_free(g);
}
END_TEST

/* DEC_EVICT: the cost rule swaps what a link hides and recomputes what it
 * cannot (the ladder's producers take microseconds).  Fast link: everything
 * evicted is swapped; a slow one: the recomputable ones are recomputed.
 * Both plans are strictly valid; on the test device the mix replays. */
START_TEST(test_cost_rule_swaps_what_hides_and_recomputes_the_rest)
{
    sa_dfg_graph *g = tu_ladder(6);
    uint8_t *act = forward_acts(g, DEC_EVICT);
    dec_opts o;
    dec_opts_default(&o);
    const double rates[] = {1e15, 1e5};
    dec_stats ds[2];
    for (int k = 0; k < 2; k++) {
        sa_dfg_device d = {"link", (int64_t)1 << 40, rates[k], rates[k], 2 * rates[k], 0.0, 0};
        sa_plan *p = sa_plan_new(g, &d);
        sa_err err = {0};
        planner_req q = {.layout = PLANNER_BESTFIT, .act = act, .dec = &o, .stats = &ds[k]};
        ck_assert_msg(planner_plan(g, &d, &q, p, &err) == SA_OK, "%s", err.msg);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
        sa_plan_free(p);
    }
    ck_assert_int_gt(ds[0].n_swapped, 0);
    ck_assert_int_eq(ds[0].n_recomputed, 0);
    ck_assert_int_gt(ds[1].n_recomputed, 0);
    dec_stats mix;
    sa_plan_free(build_checked(g, act, &o, &mix));
    ck_assert_int_gt(mix.n_swapped + mix.n_recomputed, 0);
    free(act);
    sa_dfg_free(g);
}
END_TEST

/* Replays p on the host backend: every persistent tensor (n of them) read
 * back equal to the reference. */
static void replay_persistent(const sa_plan *p, const sa_dfg_graph *g, int32_t n)
{
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    sa_runner_report rr;
    sa_err err = {0};
    ck_assert_msg(sa_runner_run(p, g, &ro, &rr, &err) == SA_OK, "replay: %s", err.msg);
    ck_assert_int_ge(rr.verified_persistent, n);
    sa_runner_report_free(&rr);
}

/* A recompute re-runs a producer one of whose other outputs is on its way
 * out: F makes a (recomputed) and s (64 MB, swapped); both are last read in
 * the forward phase by G, so s's swap-out (about 17 ms on the link) is still
 * running when the backward op B1 needs a and F runs again.  F's second
 * output s takes a scratch placement, which must wait for the swap-out to
 * end (one tensor never has two placements at once); then B2 swaps s in
 * (late, as the widened space may: else the swap is demoted, its transfer
 * being longer than the ops). */
START_TEST(test_recompute_waits_for_a_sibling_swapping_out)
{
    const int64_t MB = 1 << 20;
    sa_dfg_graph *g = sa_dfg_new("sibling-out");
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, MB), a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, MB);
    int32_t s = sa_dfg_add_tensor(g, "s", SA_DFG_ACTIVATION, 64 * MB), y = sa_dfg_add_tensor(g, "y", SA_DFG_ACTIVATION, MB);
    int32_t d = sa_dfg_add_tensor(g, "d", SA_DFG_GRADIENT, MB), da = sa_dfg_add_tensor(g, "da", SA_DFG_GRADIENT, MB);
    int32_t ds = sa_dfg_add_tensor(g, "ds", SA_DFG_GRADIENT, MB);
    int32_t i0[] = {x}, o0[] = {a, s}, i1[] = {a, s}, o1[] = {y}, i2[] = {y}, o2[] = {d}, i3[] = {d, a}, o3[] = {da};
    int32_t i4[] = {da, s}, o4[] = {ds};
    sa_dfg_add_op(g, "F", "split", SA_DFG_FORWARD, i0, 1, o0, 2);
    sa_dfg_add_op(g, "G", "add", SA_DFG_FORWARD, i1, 2, o1, 1);
    sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "B1", "mul", SA_DFG_BACKWARD, i3, 2, o3, 1);
    sa_dfg_add_op(g, "B2", "mul", SA_DFG_BACKWARD, i4, 2, o4, 1);
    tu_unit_finalize(g);
    uint8_t *act = calloc((size_t)g->n_tensors, 1);
    act[a] = DEC_RECOMPUTE;
    act[s] = DEC_SWAP;
    uint8_t *late = calloc((size_t)g->n_tensors, 1);
    late[s] = 1; /* swapped in when B1 ends: the swap cannot hide, and is not demoted */
    dec_opts o;
    dec_opts_default(&o);
    o.swap_persistent = true;
    o.late = late;
    dec_stats st;
    sa_plan *p = build_checked(g, act, &o, &st); /* valid (strict) and replays */
    ck_assert_int_eq(st.n_recompute_nodes, 1);
    ck_assert_int_eq(st.n_swapped, 1);
    int32_t out = -1, re = -1;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (p->nodes[v].kind == SA_PLAN_SWAP_OUT && p->nodes[v].ref == s)
            out = v;
        if (p->nodes[v].kind == SA_PLAN_RECOMPUTE)
            re = v;
    }
    ck_assert_int_ge(out, 0);
    ck_assert_int_gt(re, out);
    bool waits = false;
    for (int32_t k = 0; k < p->nodes[re].n_deps; k++)
        waits |= p->deps[p->nodes[re].dep_off + k] == out;
    ck_assert(waits);
    sa_plan_free(p);
    free(late);
    free(act);
    sa_dfg_free(g);
}
END_TEST

/* The widened space (dec_opts.swap_persistent): off, a DEC_SWAP on a
 * parameter or a backward gradient is ignored (the plan is the one without
 * it); on, every parameter leaves at the boundary, is dropped in every gap
 * dec_opts.drop names (both swap-in timings), the updated ones are written
 * back, backward gradients swap out and in, and the plan is valid (strict)
 * and replays with every persistent tensor read back equal to the reference. */
START_TEST(test_persistent_swaps)
{
    sa_dfg_graph *g = tu_ladder(6);
    uint8_t *act = forward_acts(g, DEC_SWAP);
    uint8_t *wide = calloc((size_t)g->n_tensors, 1);
    int32_t nslots = 0, n_params = 0;
    uint8_t *pers = calloc((size_t)g->n_tensors, 1);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        wide[t] = pers[t] = act[t];
        if (sa_dfg_kind_persistent(g->tensors[t].kind))
            pers[t] = DEC_SWAP;
        if (sa_dfg_kind_persistent(g->tensors[t].kind) || g->tensors[t].kind == SA_DFG_GRADIENT)
            wide[t] = DEC_SWAP;
        n_params += sa_dfg_kind_persistent(g->tensors[t].kind);
        if (g->tensors[t].reader_off + g->tensors[t].n_readers > nslots)
            nslots = g->tensors[t].reader_off + g->tensors[t].n_readers;
    }
    ck_assert_int_gt(n_params, 0);
    dec_opts o;
    dec_opts_default(&o);
    dec_stats a, b;
    sa_plan *p0 = build_checked(g, act, &o, &a);
    sa_plan *p1 = build_checked(g, pers, &o, &b); /* off: the same plan */
    ck_assert_int_eq(p0->n_nodes, p1->n_nodes);
    ck_assert_int_eq(p0->n_res, p1->n_res);
    ck_assert_int_eq(p0->arena_bytes, p1->arena_bytes);
    ck_assert(p0->predicted.iteration_us == p1->predicted.iteration_us);
    ck_assert_int_eq(b.n_persistent_swapped, 0);
    sa_plan_free(p1);
    uint8_t *drop = calloc((size_t)nslots + 1, 1);
    o.swap_persistent = true;
    o.drop = drop;
    for (int mode = 0; mode <= 2; mode++) {
        for (int32_t t = 0; t < g->n_tensors; t++)
            if (sa_dfg_kind_persistent(g->tensors[t].kind))
                for (int32_t k = 0; k < g->tensors[t].n_readers; k++)
                    drop[g->tensors[t].reader_off + k] = (uint8_t)mode;
        dec_stats w;
        sa_plan *p = build_checked(g, wide, &o, &w);
        ck_assert_int_eq(w.n_persistent_swapped, n_params);
        ck_assert_int_eq(p->n_res, 0);
        /* every updated parameter is written back after its update */
        int32_t outs = 0;
        for (int32_t v = 0; v < p->n_nodes; v++)
            if (p->nodes[v].kind == SA_PLAN_SWAP_OUT && sa_dfg_kind_persistent(g->tensors[p->nodes[v].ref].kind))
                outs++;
        ck_assert_int_eq(outs, n_params);
        ck_assert_int_gt(p->predicted.h2d_bytes, p0->predicted.h2d_bytes);
        replay_persistent(p, g, n_params);
        sa_plan_free(p);
    }
    free(drop);
    free(pers);
    free(wide);
    free(act);
    sa_plan_free(p0);
    sa_dfg_free(g);
}
END_TEST

/* DEC_EVICT on a parameter in the widened space: with no drop named it is
 * the plan that keeps every parameter; with drops (both swap-in timings)
 * every parameter is resident at the start, leaves over its gaps by one
 * swap-out (its host copy is stale at the start) and swap-ins after it, is
 * back at its starting offset at the end, and the plan is valid (strict)
 * and replays with every persistent tensor read back equal to the reference. */
START_TEST(test_persistent_gaps)
{
    sa_dfg_graph *g = tu_ladder(6);
    uint8_t *act = forward_acts(g, DEC_SWAP);
    uint8_t *gaps = calloc((size_t)g->n_tensors, 1);
    int32_t nslots = 0, n_params = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        bool pt = sa_dfg_kind_persistent(g->tensors[t].kind);
        gaps[t] = pt ? DEC_EVICT : act[t];
        n_params += pt;
        if (g->tensors[t].reader_off + g->tensors[t].n_readers > nslots)
            nslots = g->tensors[t].reader_off + g->tensors[t].n_readers;
    }
    dec_opts o;
    dec_opts_default(&o);
    o.swap_persistent = true;
    uint8_t *drop = calloc((size_t)nslots + 1, 1);
    o.drop = drop;
    dec_stats a, w;
    sa_plan *p0 = build_checked(g, act, &o, &a); /* every parameter kept */
    for (int mode = 0; mode <= 2; mode++) {
        for (int32_t t = 0; t < g->n_tensors; t++)
            if (sa_dfg_kind_persistent(g->tensors[t].kind))
                for (int32_t k = 0; k < g->tensors[t].n_readers; k++)
                    drop[g->tensors[t].reader_off + k] = (uint8_t)mode;
        sa_plan *p = build_checked(g, gaps, &o, &w);
        ck_assert_int_eq(w.n_persistent_swapped, 0);
        ck_assert_int_eq(p->n_res, n_params);
        if (mode == 0) {
            ck_assert_int_eq(p->n_nodes, p0->n_nodes);
            ck_assert_int_eq(p->arena_bytes, p0->arena_bytes);
            ck_assert(p->predicted.iteration_us == p0->predicted.iteration_us);
        }
        int32_t left = 0;
        for (int32_t t = 0; t < g->n_tensors; t++) {
            if (!sa_dfg_kind_persistent(g->tensors[t].kind))
                continue;
            int32_t outs = 0, ins = 0, first_in = -1, out_at = -1;
            for (int32_t v = 0; v < p->n_nodes; v++) {
                if (p->nodes[v].ref != t)
                    continue;
                if (p->nodes[v].kind == SA_PLAN_SWAP_OUT)
                    outs++, out_at = v;
                if (p->nodes[v].kind == SA_PLAN_SWAP_IN && ins++ == 0)
                    first_in = v;
            }
            ck_assert_int_eq(outs, ins > 0 ? 1 : 0);
            ck_assert(ins == 0 || out_at < first_in);
            left += ins > 0;
            int64_t off_first = -1, off_last = -2;
            for (int32_t k = 0; k < p->n_place; k++)
                if (p->place[k].tensor == t) {
                    if (p->place[k].begin < 0)
                        off_first = p->place[k].offset;
                    if (p->place[k].end < 0)
                        off_last = p->place[k].offset;
                }
            ck_assert_int_eq(off_first, off_last);
        }
        if (mode > 0)
            ck_assert_int_gt(left, 0);
        replay_persistent(p, g, n_params);
        sa_plan_free(p);
    }
    free(drop);
    free(gaps);
    free(act);
    sa_plan_free(p0);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_decide(void)
{
    Suite *s = suite_create("decide");
    TCase *tc = tcase_create("decide");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_keep_everything_is_the_no_swap_plan);
    tcase_add_test(tc, test_swapping_activations_lowers_the_arena);
    tcase_add_test(tc, test_recompute_chains_replay_correctly);
    tcase_add_test(tc, test_mixed_swap_and_recompute);
    tcase_add_test(tc, test_backward_gradients_recompute_where_they_can);
    tcase_add_test(tc, test_backward_intermediate_leaves_over_its_gap);
    tcase_add_test(tc, test_cost_rule_swaps_what_hides_and_recomputes_the_rest);
    tcase_add_test(tc, test_recompute_waits_for_a_sibling_swapping_out);
    tcase_add_test(tc, test_persistent_swaps);
    tcase_add_test(tc, test_persistent_gaps);
    suite_add_tcase(s, tc);
    return s;
}
