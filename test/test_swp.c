/* test_swp.c - the swap planner on the paper's examples, checked by hand. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/swp.h"
#include "swapadvisor/decide.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/validate.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

#define MB 1048576

/* Unit tensors (1 MiB), unit op times (1 us), tu_unit_dev's unit transfers. */

/* Figure 3: op1(W1) -> A1, op2(W2) -> A2, op3(A1, A2, W3) -> A3. */
static sa_dfg_graph *figure3(void)
{
    sa_dfg_graph *g = sa_dfg_new("figure3");
    int32_t w1 = sa_dfg_add_tensor(g, "W1", SA_DFG_PARAM, MB), w2 = sa_dfg_add_tensor(g, "W2", SA_DFG_PARAM, MB);
    int32_t w3 = sa_dfg_add_tensor(g, "W3", SA_DFG_PARAM, MB);
    int32_t a1 = sa_dfg_add_tensor(g, "A1", SA_DFG_ACTIVATION, MB), a2 = sa_dfg_add_tensor(g, "A2", SA_DFG_ACTIVATION, MB);
    int32_t a3 = sa_dfg_add_tensor(g, "A3", SA_DFG_ACTIVATION, MB);
    int32_t i1[] = {w1}, o1[] = {a1}, i2[] = {w2}, o2[] = {a2}, i3[] = {a1, a2, w3}, o3[] = {a3};
    sa_dfg_add_op(g, "op1", "matmul", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "op2", "matmul", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "op3", "matmul", SA_DFG_FORWARD, i3, 3, o3, 1);
    tu_unit_finalize(g);
    return g;
}

static int32_t find_node(const sa_plan *p, sa_plan_kind k, int32_t ref)
{
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == k && p->nodes[i].ref == ref)
            return i;
    return -1;
}

static int64_t offset_of(const sa_plan *p, int32_t t, int32_t begin)
{
    for (int32_t i = 0; i < p->n_place; i++)
        if (p->place[i].tensor == t && (begin == -2 || p->place[i].begin == begin))
            return p->place[i].offset;
    return -1;
}

START_TEST(test_figure3_w1_makes_room_for_w3_and_w2_for_a3)
{
    sa_dfg_graph *g = figure3();
    sa_dfg_device d = tu_unit_dev(4);
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
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert_int_eq(swp_plan(g, &d, g->topo, &a, &o, ws, p, &err), SA_OK);
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    /* W1 was last used by op1 a whole op ago, W2 just now: the threshold picks
     * W1 for W3 (Belady alone would pick W2, used farther in the future).
     * The parameters are clean, so they are dropped, not swapped out. */
    int32_t c1 = find_node(p, SA_PLAN_COMPUTE, 0), c2 = find_node(p, SA_PLAN_COMPUTE, 1);
    int32_t s3 = find_node(p, SA_PLAN_SWAP_IN, 2), c3 = find_node(p, SA_PLAN_COMPUTE, 2);
    ck_assert_int_ge(s3, 0);
    ck_assert_int_eq(find_node(p, SA_PLAN_SWAP_OUT, 0), -1);
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
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    sa_plan_free(p);
    swp_ws_free(ws);
    pool_alloc_free(&a);
    sa_dfg_free(g);
}
END_TEST

/* Sharing before borrowing: op1 reads a (1 MiB) and writes b and its
 * workspace w (1 MiB each), all of class 0, whose two objects are 2 MiB
 * (c, 2 MiB, sets their size).  With a and b in them, w used to borrow the
 * class-1 object and evict P (4 MiB), which op2 reads again: P came back
 * over the link and op2 waited.  Now w takes the spare end of a's object
 * (an object op1 already holds), and P stays. */
START_TEST(test_share_spare_end_before_borrowing)
{
    sa_dfg_graph *g = sa_dfg_new("share");
    int32_t P = sa_dfg_add_tensor(g, "P", SA_DFG_PARAM, 4 * MB), a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, MB);
    int32_t b = sa_dfg_add_tensor(g, "b", SA_DFG_ACTIVATION, MB), w = sa_dfg_add_tensor(g, "w", SA_DFG_WORKSPACE, MB);
    int32_t c = sa_dfg_add_tensor(g, "c", SA_DFG_ACTIVATION, 2 * MB);
    int32_t i0[] = {P}, o0[] = {a}, i1[] = {a}, o1[] = {b, w}, i2[] = {b, P}, o2[] = {c};
    sa_dfg_add_op(g, "op0", "matmul", SA_DFG_FORWARD, i0, 1, o0, 1);
    sa_dfg_add_op(g, "op1", "matmul", SA_DFG_FORWARD, i1, 1, o1, 2);
    sa_dfg_add_op(g, "op2", "matmul", SA_DFG_FORWARD, i2, 2, o2, 1);
    for (int i = 0; i < 3; i++)
        g->ops[i].time_us = 1.0;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "share", &err), SA_OK);
    ck_assert_int_eq(g->n_sizes, 3); /* 1, 2 and 4 MiB */
    sa_dfg_device d = tu_unit_dev(8);
    pool_alloc pa;
    ck_assert(pool_alloc_init(&pa, g->n_sizes));
    pa.cls[0] = pa.cls[1] = 0; /* 1 and 2 MiB: class 0, two objects of 2 MiB */
    pa.cls[2] = 1;
    pa.cnt[0] = 2;
    pa.cnt[1] = 1;
    pool_repair_cls(&pa);
    ck_assert(pool_layout(&pa, g));
    ck_assert_int_eq(pa.pool_bytes, 8 * MB);
    swp_opts o;
    swp_opts_default(&o);
    o.max_passes = 1;
    swp_ws *ws = swp_ws_new(g);
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert_int_eq(swp_plan(g, &d, g->topo, &pa, &o, ws, p, &err), SA_OK);
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    int32_t c1 = find_node(p, SA_PLAN_COMPUTE, 1);
    int64_t wo = offset_of(p, w, c1), ao = offset_of(p, a, -2);
    ck_assert_int_eq(wo, ao + MB); /* beside a in a's object */
    ck_assert_int_eq(find_node(p, SA_PLAN_SWAP_IN, P), 0); /* P comes in once, for op0 */
    int32_t n_in = 0;
    for (int32_t v = 0; v < p->n_nodes; v++)
        n_in += p->nodes[v].kind == SA_PLAN_SWAP_IN;
    ck_assert_int_eq(n_in, 1);
    ck_assert_int_eq(p->predicted.h2d_bytes, 4 * MB);
    /* P over the link [0,4], then op0, op1, op2 back to back */
    ck_assert_double_eq_tol(p->predicted.iteration_us, 7.0, 1e-9);
    sa_plan_free(p);
    swp_ws_free(ws);
    pool_alloc_free(&pa);
    sa_dfg_free(g);
}
END_TEST

/* The graph of the two sharing tests: tensors D, Q, x, y, w, r, big, huge
 * (ids 0-7); op0 D -> x, y; op1 x -> w; op2 y, w, Q -> r; op3 r -> big;
 * op4 big -> huge; 1 us each.  The caller owns the graph. */
static sa_dfg_graph *share_graph(const char *name)
{
    sa_dfg_graph *g = sa_dfg_new(name);
    int32_t D = sa_dfg_add_tensor(g, "D", SA_DFG_INPUT, MB / 2), Q = sa_dfg_add_tensor(g, "Q", SA_DFG_PARAM, MB);
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_ACTIVATION, MB), y = sa_dfg_add_tensor(g, "y", SA_DFG_ACTIVATION, MB);
    int32_t w = sa_dfg_add_tensor(g, "w", SA_DFG_ACTIVATION, MB), r = sa_dfg_add_tensor(g, "r", SA_DFG_ACTIVATION, MB);
    int32_t big = sa_dfg_add_tensor(g, "big", SA_DFG_ACTIVATION, 3 * MB);
    int32_t huge = sa_dfg_add_tensor(g, "huge", SA_DFG_ACTIVATION, 4 * MB);
    ck_assert(D == 0 && Q == 1 && x == 2 && y == 3 && w == 4 && r == 5 && big == 6 && huge == 7);
    int32_t i0[] = {D}, o0[] = {x, y}, i1[] = {x}, o1[] = {w}, i2[] = {y, w, Q}, o2[] = {r}, i3[] = {r}, o3[] = {big};
    int32_t i4[] = {big}, o4[] = {huge};
    sa_dfg_add_op(g, "op0", "matmul", SA_DFG_FORWARD, i0, 1, o0, 2);
    sa_dfg_add_op(g, "op1", "matmul", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "op2", "matmul", SA_DFG_FORWARD, i2, 3, o2, 1);
    sa_dfg_add_op(g, "op3", "matmul", SA_DFG_FORWARD, i3, 1, o3, 1);
    sa_dfg_add_op(g, "op4", "matmul", SA_DFG_FORWARD, i4, 1, o4, 1);
    tu_unit_finalize(g);
    return g;
}

/* share_graph's plan by the size-class pool with one pass: class 0 (0.5,
 * 1 and 3 MiB) two 3 MiB objects, class 1 (4 MiB) `huge_objects`; the pool
 * must come to `mib` MiB, the device has as much.  The plan is predicted
 * and strictly valid; the caller frees it. */
static sa_plan *share_plan(const sa_dfg_graph *g, int32_t huge_objects, int64_t mib)
{
    sa_err err = {0};
    sa_dfg_device d = tu_unit_dev(mib);
    pool_alloc pa;
    ck_assert(pool_alloc_init(&pa, g->n_sizes));
    pa.cls[0] = pa.cls[1] = pa.cls[2] = 0;
    pa.cls[3] = 1;
    pa.cnt[0] = 2;
    pa.cnt[1] = huge_objects;
    pool_repair_cls(&pa);
    ck_assert(pool_layout(&pa, g));
    ck_assert_int_eq(pa.pool_bytes, mib * MB);
    swp_opts o;
    swp_opts_default(&o);
    o.max_passes = 1;
    swp_ws *ws = swp_ws_new(g);
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert_int_eq(swp_plan(g, &d, g->topo, &pa, &o, ws, p, &err), SA_OK);
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    swp_ws_free(ws);
    pool_alloc_free(&pa);
    return p;
}

/* A tensor joining a shared object waits only for the tenants that left it
 * this period where they overlap.  Class 0 has two objects of 3 MiB (big
 * sets the size), class 1 two of 4 MiB (huge; op2 could borrow one).  op0 reads D (0.5 MiB) and
 * writes x and y, which share an object (D has the other); op1 reads x for
 * the last time and writes w into D's; op2 reads y, w and the parameter Q,
 * which joins y's object at its spare end (2 MiB), clear of x's bytes: its
 * swap-in need not wait for op1, x's last reader, and runs while op0
 * computes. */
START_TEST(test_share_waits_for_overlapping_tenants_only)
{
    sa_dfg_graph *g = share_graph("share2");
    int32_t Q = 1, x = 2, y = 3;
    ck_assert_int_eq(g->n_sizes, 4); /* 0.5, 1, 3 and 4 MiB */
    sa_plan *p = share_plan(g, 2, 14);
    int32_t c1 = find_node(p, SA_PLAN_COMPUTE, 1), sq = find_node(p, SA_PLAN_SWAP_IN, Q);
    ck_assert_int_ge(sq, 0);
    int64_t xo = offset_of(p, x, -2);
    ck_assert_int_eq(offset_of(p, y, -2), xo + MB);
    ck_assert_int_eq(offset_of(p, Q, sq), xo + 2 * MB); /* beside y, where x never was */
    for (int32_t k = 0; k < p->nodes[sq].n_deps; k++)
        ck_assert_int_ne(p->deps[p->nodes[sq].dep_off + k], c1);
    /* h2d: D [0, 0.5], Q [0.5, 1.5]; op0 .. op4 back to back from 0.5 */
    ck_assert_double_eq_tol(p->predicted.iteration_us, 5.5, 1e-9);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* The splitting path keeps a shared resident where it is when the op's
 * tensors still all find room.  As test_share_waits_for_overlapping_tenants_only
 * with one 4 MiB object: op2 (y, w, Q -> r) cannot take whole objects now
 * (y shares an object), so it splits; y, shared beside x's old bytes, used
 * to leave over the link and come back, and now stays, Q and r joining the
 * spare ends. */
START_TEST(test_split_keeps_shared_resident)
{
    sa_dfg_graph *g = share_graph("share3");
    int32_t Q = 1, y = 3;
    sa_plan *p = share_plan(g, 1, 10);
    ck_assert_int_eq(find_node(p, SA_PLAN_SWAP_OUT, y), -1);
    ck_assert_int_eq(find_node(p, SA_PLAN_SWAP_IN, y), -1);
    int32_t sq = find_node(p, SA_PLAN_SWAP_IN, Q);
    ck_assert_int_ge(sq, 0);
    ck_assert_int_eq(offset_of(p, Q, sq), offset_of(p, y, -2) + MB); /* beside y */
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_figure3_steady_state)
{
    /* With 4 units a resident W3 would be evicted before op3 reads it, so the
     * passes settle on no residents; with 7 units every parameter stays and
     * nothing moves at all. */
    sa_dfg_graph *g = figure3();
    sa_plan *p;
    sa_err err = {0};
    for (int64_t units = 4; units <= 7; units++) {
        sa_dfg_device d = tu_unit_dev(units);
        ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_OK);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%lld units: %s", (long long)units, err.msg);
        if (units == 4)
            ck_assert_int_eq(p->n_res, 0);
        if (units == 7) {
            ck_assert_int_eq(p->n_res, 3);
            ck_assert_int_eq(p->predicted.h2d_bytes, 0);
            ck_assert_double_eq_tol(p->predicted.iteration_us, 3.0, 1e-9);
        }
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_op_larger_than_memory_is_refused)
{
    sa_dfg_graph *g = figure3();
    sa_dfg_device d = tu_unit_dev(3); /* op3 touches four units */
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg_contains(err, "op 2 (\"op3\") alone needs 4194304 bytes");
    ck_assert_int_eq(sa_policy_run("odswap", g, &d, &p, &err), SA_EINFEASIBLE);
    /* ideal ignores the memory and raises it to what it needs */
    ck_assert_int_eq(sa_policy_run("ideal", g, &d, &p, &err), SA_OK);
    ck_assert_double_eq_tol(p->predicted.iteration_us, 3.0, 1e-9);
    ck_assert_int_eq(p->predicted.h2d_bytes, 0);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    sa_plan_free(p);
    ck_assert_int_eq(sa_policy_run("belady", g, &d, &p, &err), SA_EUSAGE);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_policies_on_tiny_under_pressure)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    const char *t = tu_tiny_json();
    ck_assert_int_eq(sa_dfg_parse(t, strlen(t), "tiny.json", &g, &err), SA_OK);
    const char *names[] = {"ideal", "topo", "odswap"};
    for (int64_t mem = 2048; mem >= 1280; mem -= 256) {
        sa_dfg_device d = {"small", mem, 256e6, 256e6, 384e6, 1.0, 0};
        for (size_t i = 0; i < 3; i++) {
            sa_plan *p;
            sa_status st = sa_policy_run(names[i], g, &d, &p, &err);
            ck_assert_msg(st == SA_OK, "%s at %lld: %s", names[i], (long long)mem, err.msg);
            ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s at %lld: %s", names[i],
                          (long long)mem, err.msg);
            ck_assert_double_ge(p->predicted.iteration_us, p->predicted.ideal_us - 1e-9);
            sa_plan_free(p);
        }
    }
    sa_dfg_free(g);
}
END_TEST

/* ---- Figure 1: schedule x pool -------------------------------------------
 *
 * The paper's Figure 1(a) as its text describes it: Conv0 makes A0; the left
 * branch is Conv1 (A0 -> A1); the right branch is Conv2 (A0 -> A2, 2 MiB),
 * Conv3 (A2 -> A3), Conv4 (A3 -> A4); Concat joins A1 and A4 into A5 (2 MiB).
 * Each ConvX reads its own parameter WX; every other tensor is 1 MiB.
 * Left-first runs Conv1 before the right branch, right-first after it, so
 * Conv3 runs in slot 4 or 3 as in the paper's (e) and (d).  Memory is the
 * paper's 10 MiB: coarse = five 2 MiB objects, fine = eight 1 MiB + one 2 MiB.
 * (The paper counts 12 MB for its graph; with a parameter per conv this
 * forward part holds 13 MiB.  The figure itself is not in our copy.)
 *
 * Where it differs from the paper, and why:
 *  - The paper keeps every activation for the backward pass it leaves out, so
 *    evicting one means copying it out.  Our planner frees a tensor after its
 *    last reader, so a forward-only graph never swaps an activation out, and
 *    under the fine pool neither schedule would then stall at all.  We add a
 *    stand-in for the backward pass: Loss (A5 -> dL), then Bwd4 (dL, A3),
 *    Bwd1 (dL, A0), Bwd3 (g4, A2), each reading the forward input it needs
 *    for a weight gradient, so A0, A2 and A3 stay live and A2 must come back
 *    (2 units) at the end.  Bwd4 and Bwd1 sit between Loss (which frees the
 *    only 2 MiB object) and Bwd3, so that under the fine pool A2's return
 *    overlaps them.  The tail is the same in both schedules.
 *  - The figure shows the first iteration: every parameter starts on the host.
 *    We plan that iteration (max_passes = 1), so every parameter is swapped in
 *    once, clean, and dropped (not copied out) when evicted.  Compute slot t
 *    is [t, t+1]; slot 0 is always idle while W0 comes in.  The steady state
 *    (the default passes) is checked at the end: there the fine pool keeps
 *    four parameters resident and the contrasts still hold.
 *  - The paper shows the best plan for each combination; we assert what our
 *    planner does: the four iteration times are 11, 13, 12, 11 (right-first
 *    fine / coarse, left-first fine / coarse), against an ideal of 10.  The
 *    two contrasts the paper draws hold with its stalls in its slots: coarse
 *    right-first stalls Conv1 in slot 5 waiting for W1 ((c) vs (d)), fine
 *    left-first stalls Concat in slot 6 waiting for A2's swap-out ((e) vs
 *    (d)).  Coarse right-first pays one more unit than the paper's (c), at the
 *    end (A2's return), which the paper's figure does not reach.  The text
 *    gives no time for (b), coarse left-first; ours needs no stall at all:
 *    which schedule is better depends on the pool.
 *
 * Planner rules the timelines below apply (lib/planning/pool/): ops are planned in
 * schedule order; a tensor takes the oldest-freed object of its class, else
 * evicts a victim of that class, not used by the current op: the one next
 * used farthest ahead (in brackets below; a parameter's next use is in the
 * next iteration, at 10 + its position) among those old enough, else the
 * farthest among all.  Old enough: the ideal compute time between its last
 * use and the current op, its gap (positions in between, unit ops), is at
 * least the object's swap-out time: 1 for 1 MiB objects, 2 for 2 MiB ones.
 * The bound is inclusive, and several choices below sit exactly on it.  A clean
 * victim (parameter) is dropped: its object is free after its last reader.  A
 * dirty one (activation) is swapped out after its last reader and its object
 * is free after that swap-out.  A swap-in waits for its object to be free
 * (and for its host copy); an op waits for its swap-ins and for objects freed
 * by a swap-out.  Swaps are queued per stream in the order they are planned.
 * Every 1 MiB transfer takes 1 us, a 2 MiB one 2 us, both directions at once.
 */
enum { F1_W0, F1_W1, F1_W2, F1_W3, F1_W4, F1_A0, F1_A1, F1_A2, F1_A3, F1_A4, F1_A5, F1_DL, F1_G4, F1_G1,
       F1_G3, F1_NT };
enum { F1_C0, F1_C1, F1_C2, F1_C3, F1_C4, F1_CAT, F1_LOSS, F1_B4, F1_B1, F1_B3, F1_NOPS };

static sa_dfg_graph *figure1(void)
{
    static const char *tn[F1_NT] = {"W0", "W1", "W2", "W3", "W4", "A0", "A1", "A2",
                                    "A3", "A4", "A5", "dL", "g4", "g1", "g3"};
    sa_dfg_graph *g = sa_dfg_new("figure1");
    for (int32_t t = 0; t < F1_NT; t++) {
        sa_dfg_kind k = t <= F1_W4 ? SA_DFG_PARAM : t <= F1_A5 ? SA_DFG_ACTIVATION : SA_DFG_GRADIENT;
        ck_assert_int_eq(sa_dfg_add_tensor(g, tn[t], k, t == F1_A2 || t == F1_A5 ? 2 * MB : MB), t);
    }
    struct { const char *name, *type; sa_dfg_phase ph; int32_t in[2], n_in, out; } ops[F1_NOPS] = {
        {"Conv0", "conv2d", SA_DFG_FORWARD, {F1_W0}, 1, F1_A0},
        {"Conv1", "conv2d", SA_DFG_FORWARD, {F1_A0, F1_W1}, 2, F1_A1},
        {"Conv2", "conv2d", SA_DFG_FORWARD, {F1_A0, F1_W2}, 2, F1_A2},
        {"Conv3", "conv2d", SA_DFG_FORWARD, {F1_A2, F1_W3}, 2, F1_A3},
        {"Conv4", "conv2d", SA_DFG_FORWARD, {F1_A3, F1_W4}, 2, F1_A4},
        {"Concat", "concat", SA_DFG_FORWARD, {F1_A1, F1_A4}, 2, F1_A5},
        {"Loss", "softmax_xent", SA_DFG_FORWARD, {F1_A5}, 1, F1_DL},
        {"Bwd4", "conv2d_bwd", SA_DFG_BACKWARD, {F1_DL, F1_A3}, 2, F1_G4},
        {"Bwd1", "conv2d_bwd", SA_DFG_BACKWARD, {F1_DL, F1_A0}, 2, F1_G1},
        {"Bwd3", "conv2d_bwd", SA_DFG_BACKWARD, {F1_G4, F1_A2}, 2, F1_G3},
    };
    for (int32_t i = 0; i < F1_NOPS; i++) {
        ck_assert_int_eq(sa_dfg_add_op(g, ops[i].name, ops[i].type, ops[i].ph, ops[i].in, ops[i].n_in, &ops[i].out, 1),
                         i);
        g->ops[i].time_us = 1.0;
    }
    sa_err err;
    ck_assert_msg(sa_dfg_finalize(g, "figure1", &err) == SA_OK, "%s", err.msg);
    return g;
}

static const int32_t f1_left_first[F1_NOPS] = {F1_C0, F1_C1, F1_C2, F1_C3, F1_C4, F1_CAT, F1_LOSS, F1_B4, F1_B1, F1_B3};
static const int32_t f1_right_first[F1_NOPS] = {F1_C0, F1_C2, F1_C3, F1_C4, F1_C1, F1_CAT, F1_LOSS, F1_B4, F1_B1,
                                                F1_B3};

/* Coarse: the 1 MiB and 2 MiB sizes share one class of five 2 MiB objects.
 * Fine: eight 1 MiB objects and one 2 MiB object. */
static void figure1_pool(pool_alloc *a, const sa_dfg_graph *g, bool fine)
{
    ck_assert_int_eq(g->n_sizes, 2);
    ck_assert(pool_alloc_init(a, g->n_sizes));
    a->cls[0] = 0;
    a->cls[1] = fine ? 1 : 0;
    a->cnt[0] = fine ? 8 : 5;
    a->cnt[1] = 1;
    pool_repair_cls(a);
    ck_assert(pool_layout(a, g));
    ck_assert_int_eq(a->n_classes, fine ? 2 : 1);
    ck_assert_int_eq(a->n_objects, fine ? 9 : 5);
    ck_assert_int_eq(a->pool_bytes, 10 * MB);
}

/* One combination and its hand-computed timeline: the start of every compute
 * node (comp[i] for schedule position i) and of every swap, per stream in
 * stream order. */
typedef struct f1_swap {
    int32_t tensor;
    double start;
} f1_swap;

typedef struct f1_case {
    const int32_t *schedule;
    bool fine;
    int passes, n_res;  /* swp_opts.max_passes; parameters resident at the start */
    double comp[F1_NOPS];
    int n_in, n_out;
    f1_swap in[8], out[4];
} f1_case;

/* Plans one combination, checks the plan (strict) and the whole timeline
 * against c, and returns the iteration time. */
static double figure1_run(const f1_case *c)
{
    sa_dfg_graph *g = figure1();
    sa_dfg_device d = tu_unit_dev(10);
    pool_alloc a;
    sa_err err = {0};
    ck_assert(sa_dfg_is_topological(g, c->schedule));
    figure1_pool(&a, g, c->fine);
    swp_opts o;
    swp_opts_default(&o);
    o.max_passes = c->passes;
    swp_ws *ws = swp_ws_new(g);
    sa_plan *p = sa_plan_new(g, &d);
    ck_assert_msg(swp_plan(g, &d, c->schedule, &a, &o, ws, p, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(p->n_res, c->n_res);
    sa_sim_ws *sw = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, sw, &r, &err), SA_OK);
    const double *st = sa_sim_start(sw);
    for (int32_t i = 0; i < F1_NOPS; i++) {
        int32_t v = find_node(p, SA_PLAN_COMPUTE, c->schedule[i]);
        ck_assert_msg(fabs(st[v] - c->comp[i]) < 1e-9, "%s starts at %g, expected %g", g->ops[c->schedule[i]].name,
                      st[v], c->comp[i]);
    }
    int64_t bytes[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        sa_plan_kind kind = k == 0 ? SA_PLAN_SWAP_IN : SA_PLAN_SWAP_OUT;
        const f1_swap *e = k == 0 ? c->in : c->out;
        int n = k == 0 ? c->n_in : c->n_out, seen = 0;
        for (int i = 0; i < n; i++)
            bytes[k] += g->tensors[e[i].tensor].bytes;
        for (int32_t v = 0; v < p->n_nodes; v++) {
            if (p->nodes[v].kind != kind)
                continue;
            ck_assert_msg(seen < n, "unexpected %s of %s at %g", sa_plan_kind_name(kind),
                          g->tensors[p->nodes[v].ref].name, st[v]);
            ck_assert_msg(p->nodes[v].ref == e[seen].tensor && fabs(st[v] - e[seen].start) < 1e-9,
                          "%s #%d: %s at %g, expected %s at %g", sa_plan_kind_name(kind), seen,
                          g->tensors[p->nodes[v].ref].name, st[v], g->tensors[e[seen].tensor].name, e[seen].start);
            seen++;
        }
        ck_assert_int_eq(seen, n);
    }
    ck_assert_int_eq(p->predicted.h2d_bytes, bytes[0]);
    ck_assert_int_eq(p->predicted.d2h_bytes, bytes[1]);
    ck_assert_double_eq_tol(p->predicted.ideal_us, 10.0, 1e-9);
    ck_assert_double_eq_tol(r.makespan_us, p->predicted.iteration_us, 1e-9);
    double it = p->predicted.iteration_us;
    sa_sim_ws_free(sw);
    sa_plan_free(p);
    swp_ws_free(ws);
    pool_alloc_free(&a);
    sa_dfg_free(g);
    return it;
}

/* Figure 1(d).  Right-first: Conv0 Conv2 Conv3 Conv4 Conv1 Concat Loss Bwd4
 * Bwd1 Bwd3.  1 MiB objects o0..o7, 2 MiB object o8; a 1 MiB victim is old
 * enough with a gap >= 1, a 2 MiB one with a gap >= 2.
 *   pos0 Conv0: W0 -> o0, A0 -> o1.   pos1 Conv2: W2 -> o2, A2 -> o8.
 *   pos2 Conv3: W3 -> o3, A3 -> o4.   pos3 Conv4: W4 -> o5, A4 -> o6.
 *   pos4 Conv1: W1 -> o7; A1 finds no free object: old enough are W0 (10),
 *        W2 (11) and W3 (12, gap exactly 1): W3 dropped, A1 -> o3.
 *   pos5 Concat: A5 needs o8, held by A2 (Bwd3 reads it; gap exactly 2):
 *        swapped out after Conv3, [4,6]; Concat waits for it.  A1, A4 die.
 *   pos6 Loss: dL -> o3, A5 dies (o8 free after Loss).  pos7 Bwd4: g4 -> o6,
 *        A3 dies.  pos8 Bwd1: g1 -> o4; dL, A0, g1 die.
 *   pos9 Bwd3: A2 comes back into o8 after Loss: [8,10].
 *   slot: 0    1     2     3     4     5     6      7    8    9    10
 *   gpu : -    Conv0 Conv2 Conv3 Conv4 Conv1 Concat Loss Bwd4 Bwd1 Bwd3
 *   h2d : W0   W2    W3    W4    W1    -     -      -    A2   A2   -
 *   d2h : -    -     -     -     A2    A2    -
 * Conv3 ends at 4, so A2 is out by 6 when Concat starts, and its return
 * overlaps Bwd4 and Bwd1: no stall but slot 0.  Iteration: 11. */
static const f1_case f1_rf = {f1_right_first, true, 1, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 6, 1,
                              {{F1_W0, 0}, {F1_W2, 1}, {F1_W3, 2}, {F1_W4, 3}, {F1_W1, 4}, {F1_A2, 8}},
                              {{F1_A2, 4}}};

START_TEST(test_figure1_right_first_fine)
{
    ck_assert_double_eq_tol(figure1_run(&f1_rf), 11.0, 1e-9);
}
END_TEST

/* Figure 1(c).  Right-first, five 2 MiB objects o0..o4 for everything; a
 * victim is old enough with a gap >= 2.
 *   pos0 Conv0: W0 -> o0, A0 -> o1.   pos1 Conv2: W2 -> o2, A2 -> o3.
 *   pos2 Conv3: W3 -> o4.  A3: nothing is old enough; the farthest next use
 *        among W0 (10), A0 (4), W2 (11) is W2's: dropped, A3 -> o2.
 *   pos3 Conv4: W4: W0 is old enough (gap exactly 2): dropped, W4 -> o0
 *        after Conv0, [3,4].  A4: none old enough among
 *        A0 (4), A2 (9), W3 (12): W3 dropped, A4 -> o4.
 *   pos4 Conv1: W1: none old enough among A2 (9), A3 (7), W4 (14), A4 (5):
 *        W4 dropped, so W1 comes in only after Conv4, [5,6].  A1: among A2,
 *        A3, A4 the farthest is A2: swapped out after Conv3, [4,6], A1 -> o3
 *        and Conv1 also waits for that swap-out.
 *   pos5 Concat: A5: none old enough among A0 (8), A3 (7), W1 (14): W1
 *        dropped, A5 -> o0.  A1, A4 die (o3, o4, in that order).
 *   pos6 Loss: dL -> o3, A5 dies.  pos7 Bwd4: g4 -> o4, A3 dies (o2).
 *   pos8 Bwd1: g1 -> o0.  pos9 Bwd3: A2 takes the oldest free object, o2,
 *        free after Bwd4: it comes back [10,12] and Bwd3 waits.
 *   slot: 0   1     2     3     4     5  6     7      8    9    10   11 12
 *   gpu : -   Conv0 Conv2 Conv3 Conv4 -  Conv1 Concat Loss Bwd4 Bwd1 -  Bwd3
 *   h2d : W0  W2    W3    W4    -     W1 -     -      -    -    A2   A2
 *   d2h : -   -     -     -     A2    A2
 * The paper's (c) stall in slot 5 (Conv1 waiting for W1: the pool is full of
 * Conv4's tensors, A0 for Conv1 and A2 on its way out) is here; our plan pays
 * one more unit in slot 11 (A2's return), past the figure.  Iteration: 13. */
static const f1_case f1_rc = {f1_right_first, false, 1, 0, {1, 2, 3, 4, 6, 7, 8, 9, 10, 12}, 6, 1,
                              {{F1_W0, 0}, {F1_W2, 1}, {F1_W3, 2}, {F1_W4, 3}, {F1_W1, 5}, {F1_A2, 10}},
                              {{F1_A2, 4}}};

START_TEST(test_figure1_right_first_coarse)
{
    ck_assert_double_eq_tol(figure1_run(&f1_rc), 13.0, 1e-9);
}
END_TEST

/* Figure 1(e).  Left-first: Conv0 Conv1 Conv2 Conv3 Conv4 Concat Loss Bwd4
 * Bwd1 Bwd3, the fine pool.
 *   pos0..3: W0 -> o0, A0 -> o1, W1 -> o2, A1 -> o3, W2 -> o4, A2 -> o8,
 *        W3 -> o5, A3 -> o6.
 *   pos4 Conv4: W4 -> o7.  A4: old enough (gap >= 1) are W0 (10), A0 (8),
 *        W1 (11), A1 (5), W2 (12): W2 dropped, A4 -> o4.
 *   pos5 Concat: A5 needs o8: A2 (the only candidate, not old enough) is
 *        swapped out after Conv3, which ends only at 5: [5,7], and Concat
 *        waits until 7.
 *   pos6..9 as in right-first: A2 comes back into o8 after Loss, [9,11],
 *        overlapping Bwd4 and Bwd1.
 *   slot: 0   1     2     3     4     5     6  7      8    9    10   11
 *   gpu : -   Conv0 Conv1 Conv2 Conv3 Conv4 -  Concat Loss Bwd4 Bwd1 Bwd3
 *   h2d : W0  W1    W2    W3    W4    -     -  -      -    A2   A2
 *   d2h : -   -     -     -     -     A2    A2
 * The paper's (e) stall in slot 6: Concat waits for A2's swap-out, which
 * cannot start before Conv3 (slot 4) ends.  Iteration: 12. */
static const f1_case f1_lf = {f1_left_first, true, 1, 0, {1, 2, 3, 4, 5, 7, 8, 9, 10, 11}, 6, 1,
                              {{F1_W0, 0}, {F1_W1, 1}, {F1_W2, 2}, {F1_W3, 3}, {F1_W4, 4}, {F1_A2, 9}},
                              {{F1_A2, 5}}};

START_TEST(test_figure1_left_first_fine)
{
    ck_assert_double_eq_tol(figure1_run(&f1_lf), 12.0, 1e-9);
}
END_TEST

/* Figure 1(b).  Left-first, five 2 MiB objects; old enough = gap >= 2.
 *   pos0 Conv0: W0 -> o0, A0 -> o1.   pos1 Conv1: W1 -> o2, A1 -> o3.
 *   pos2 Conv2: W2 -> o4.  A2: none old enough among W0 (10), W1 (11),
 *        A1 (5): W1 dropped, A2 -> o2.
 *   pos3 Conv3: W3: W0 is old enough (gap exactly 2): dropped, W3 -> o0
 *        after Conv0, [3,4].  A3: none old enough among
 *        A0 (8), A1 (5), W2 (12): W2 dropped, A3 -> o4.
 *   pos4 Conv4: W4: the only one old enough is A1 (gap 2): swapped out
 *        after Conv1, [3,4], and W4 comes into o3 after that, [4,5].  A4:
 *        none old enough among W3 (13), A0 (8), A2 (9): W3 dropped, A4 -> o0.
 *   pos5 Concat: A1 must come back.  The only one old enough is A0 (gap 2):
 *        swapped out after Conv2, [4,5], and A1 comes into o1 after it, [5,6].
 *        A5: none old enough among A2 (9), W4 (14), A3 (7): W4 dropped,
 *        A5 -> o3.  A1, A4 die (o1, o0).
 *   pos6 Loss: dL -> o1, A5 dies.  pos7 Bwd4: g4 -> o0, A3 dies (o4).
 *   pos8 Bwd1: A0 comes back into o3 (free after Loss), [8,9]; g1 -> o4.
 *   pos9 Bwd3: A2 never left (o2); g3 -> o1.
 *   slot: 0   1     2     3     4     5     6      7    8    9    10
 *   gpu : -   Conv0 Conv1 Conv2 Conv3 Conv4 Concat Loss Bwd4 Bwd1 Bwd3
 *   h2d : W0  W1    W2    W3    W4    A1    -      -    A0   -
 *   d2h : -   -     -     A1    A0    -
 * Every eviction found a victim that could leave in time: no stall but slot
 * 0.  Iteration: 11 (the paper's text gives no time for (b)). */
static const f1_case f1_lc = {f1_left_first, false, 1, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 7, 2,
                              {{F1_W0, 0}, {F1_W1, 1}, {F1_W2, 2}, {F1_W3, 3}, {F1_W4, 4}, {F1_A1, 5}, {F1_A0, 8}},
                              {{F1_A1, 3}, {F1_A0, 4}}};

START_TEST(test_figure1_left_first_coarse)
{
    ck_assert_double_eq_tol(figure1_run(&f1_lc), 11.0, 1e-9);
}
END_TEST

/* The paper's contrasts: under right-first the fine pool beats the coarse one
 * ((d) 11 vs (c) 13), and under the fine pool right-first beats left-first
 * ((d) 11 vs (e) 12).  Neither factor decides alone: under the coarse pool
 * left-first is the better schedule (11 vs 13).  All four move the same
 * bytes (7 MiB in, 2 MiB out); only when differs. */
START_TEST(test_figure1_pool_and_schedule_each_matter)
{
    double right_fine = figure1_run(&f1_rf), right_coarse = figure1_run(&f1_rc);
    double left_fine = figure1_run(&f1_lf), left_coarse = figure1_run(&f1_lc);
    ck_assert_double_lt(right_fine, right_coarse);
    ck_assert_double_lt(right_fine, left_fine);
    ck_assert_double_lt(left_coarse, right_coarse);
}
END_TEST

/* The steady state (the default passes).  Coarse: every parameter was
 * dropped during the first iteration, so none stays resident and the plans
 * are the first iteration's (11 and 13 again).  Fine: the first iteration
 * ends with four parameters resident, which the second pass keeps (they are
 * then dirty, as if updated, but no choice below evicts them); it settles at
 * once (its end state equals its start).
 *   Right-first: resident W0 (o0), W2 (o2), W4 (o5), W1 (o7); free o1, o3,
 *   o4, o6 and o8.  Conv0 starts at 0 (no W0 to wait for), A0 -> o1,
 *   A2 -> o8; Conv3 needs W3: o3, [0,1], hidden behind Conv0; A3 -> o4,
 *   A4 -> o6.  Conv1: A1 has no free object; old enough are W0 (10), W2 (11),
 *   W3 (12, gap exactly 1): W3 dropped (swapped in this iteration, so
 *   clean), A1 -> o3.  A2 leaves after Conv3, [3,5], before Concat (5); it
 *   returns after Loss, [7,9].  Every op runs back to back from 0.
 *     gpu : Conv0 Conv2 Conv3 Conv4 Conv1 Concat Loss Bwd4 Bwd1 Bwd3  (0..9)
 *     h2d : W3 [0,1], A2 [7,9];  d2h : A2 [3,5].  Iteration: 10, the ideal.
 *   Left-first: resident W0 (o0), W1 (o2), W3 (o5), W4 (o7); A0 -> o1,
 *   A1 -> o3; Conv2 needs W2: o4, [0,1]; A2 -> o8, A3 -> o6.  Conv4: A4 has
 *   no free object; old enough are W0 (10), A0 (8), W1 (11), A1 (5), W2 (12):
 *   W2 dropped, A4 -> o4.  A2 leaves after Conv3 (ends at 4), [4,6], so
 *   Concat waits from 5 to 6: the paper's (e) stall again.  A2 returns after
 *   Loss, [8,10].
 *     gpu : Conv0 Conv1 Conv2 Conv3 Conv4 -  Concat Loss Bwd4 Bwd1 Bwd3
 *     h2d : W2 [0,1], A2 [8,10];  d2h : A2 [4,6].  Iteration: 11. */
static const f1_case f1_rf_steady = {f1_right_first, true, 3, 4, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 2, 1,
                                     {{F1_W3, 0}, {F1_A2, 7}}, {{F1_A2, 3}}};
static const f1_case f1_lf_steady = {f1_left_first, true, 3, 4, {0, 1, 2, 3, 4, 6, 7, 8, 9, 10}, 2, 1,
                                     {{F1_W2, 0}, {F1_A2, 8}}, {{F1_A2, 4}}};

START_TEST(test_figure1_steady_state)
{
    f1_case rc = f1_rc, lc = f1_lc;
    rc.passes = lc.passes = 3;
    ck_assert_double_eq_tol(figure1_run(&rc), 13.0, 1e-9);
    ck_assert_double_eq_tol(figure1_run(&lc), 11.0, 1e-9);
    ck_assert_double_eq_tol(figure1_run(&f1_rf_steady), 10.0, 1e-9);
    ck_assert_double_eq_tol(figure1_run(&f1_lf_steady), 11.0, 1e-9);
}
END_TEST

/* ---- Recomputation in the pool (issue 15) ---------------------------------
 *
 * swp_opts.recompute flags tensors to drop after their last forward use and
 * rebuild before their next use.  The plans must pass strict validation and
 * replay exactly on the host backend (which compares every op output,
 * recomputed ones included, with a reference run). */

/* g's pool plan on its default order in mem bytes (fine-grained pool), with
 * the flags rc (NULL: none); NULL when the pool does not fit. */
static sa_plan *pool_rc_plan(const sa_dfg_graph *g, int64_t mem, const uint8_t *rc)
{
    sa_dfg_device d = tu_policy_dev(mem);
    pool_alloc a;
    sa_err err = {0};
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    sa_status st = pool_fine_grained(&a, g, g->topo, d.memory_bytes, &err);
    sa_plan *p = NULL;
    if (!st) {
        swp_opts o;
        swp_opts_default(&o);
        o.recompute = rc;
        p = sa_plan_new(g, &d);
        ck_assert_ptr_nonnull(p);
        planner_req q = {.layout = PLANNER_POOL, .pool = &a, .evict = &o};
        st = planner_plan(g, &d, &q, p, &err);
        if (st) {
            sa_plan_free(p);
            p = NULL;
        }
    }
    ck_assert_msg(!st || st == SA_EINFEASIBLE, "%s", err.msg);
    pool_alloc_free(&a);
    return p;
}

static char *plan_json(const sa_plan *p)
{
    char *json;
    sa_err err = {0};
    ck_assert_int_eq(sa_plan_to_json(p, &json, &err), SA_OK);
    return json;
}

static int32_t count_nodes(const sa_plan *p, sa_plan_kind k)
{
    int32_t n = 0;
    for (int32_t v = 0; v < p->n_nodes; v++)
        n += p->nodes[v].kind == k;
    return n;
}

/* Strictly valid, re-simulated alike, replayed exactly on the host (scaled
 * to cap bytes when cap > 0). */
static void check_rc_plan(const sa_plan *p, const sa_dfg_graph *g, int64_t cap, const char *what)
{
    sa_err err = {0};
    sa_val_report rep = {0};
    ck_assert_msg(sa_plan_validate(p, g, true, &rep, &err) == SA_OK, "%s: %d violations, first: %s", what,
                  rep.n_violations, err.msg);
    sa_val_report_free(&rep);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert(r.makespan_us == p->predicted.iteration_us);
    ck_assert_int_eq(r.n_recompute, count_nodes(p, SA_PLAN_RECOMPUTE));
    sa_sim_ws_free(ws);
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    ro.iterations = 2;
    if (cap > 0)
        ro.cap_bytes = cap;
    sa_runner_report rr;
    ck_assert_msg(sa_runner_run(p, g, &ro, &rr, &err) == SA_OK, "%s: replay: %s", what, err.msg);
    ck_assert(rr.valid);
    ck_assert_int_gt(rr.verified_checksums, 0);
    ck_assert_int_eq(rr.plan_d2h_bytes, p->predicted.d2h_bytes);
    sa_runner_report_free(&rr);
}

/* A flagged tensor made in the backward phase: the pool drops h (8 MB) after
 * b0 makes it and rebuilds it by re-running b0 before b4, over its gap (b1 to
 * b3, while k takes 16 MB), instead of swapping it out and in. */
START_TEST(test_pool_recomputes_a_backward_intermediate)
{
    int32_t h;
    sa_dfg_graph *g = tu_backward_gap(&h);
    sa_plan *p0 = pool_rc_plan(g, 22 * MB, NULL);
    ck_assert_ptr_nonnull(p0);
    ck_assert_int_eq(count_nodes(p0, SA_PLAN_RECOMPUTE), 0);
    ck_assert_int_ge(p0->predicted.d2h_bytes, 8 * MB); /* h goes over the link */
    uint8_t *rc = calloc((size_t)g->n_tensors, 1);
    rc[h] = 1;
    sa_plan *p1 = pool_rc_plan(g, 22 * MB, rc);
    ck_assert_ptr_nonnull(p1);
    ck_assert_int_eq(count_nodes(p1, SA_PLAN_RECOMPUTE), 1);
    for (int32_t v = 0; v < p1->n_nodes; v++)
        if (p1->nodes[v].kind == SA_PLAN_RECOMPUTE)
            ck_assert_str_eq(g->ops[p1->nodes[v].ref].name, "b0");
    ck_assert_int_lt(p1->predicted.d2h_bytes, 8 * MB);
    check_rc_plan(p1, g, 0, "backward gap");
    free(rc);
    sa_plan_free(p0);
    sa_plan_free(p1);
    sa_dfg_free(g);
}
END_TEST

/* No recompute node re-runs an op that updates a persistent tensor in place. */
static void assert_no_in_place_recompute(const sa_plan *p, const sa_dfg_graph *g, const char *what)
{
    for (int32_t v = 0; v < p->n_nodes; v++)
        if (p->nodes[v].kind == SA_PLAN_RECOMPUTE) {
            const sa_dfg_op *o = &g->ops[p->nodes[v].ref];
            for (int32_t k = 0; k < o->n_out; k++)
                ck_assert_msg(!sa_dfg_kind_persistent(g->tensors[o->out[k]].kind), "%s: recomputes in-place update %s",
                              what, o->name);
        }
}

static uint8_t *forward_flags(const sa_dfg_graph *g)
{
    uint8_t *rc = calloc((size_t)g->n_tensors + 1, 1);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t op = g->tensors[t].producer;
        rc[t] = g->tensors[t].kind == SA_DFG_ACTIVATION && op >= 0 && g->ops[op].phase == SA_DFG_FORWARD;
    }
    return rc;
}

/* No flags, or flags all clear: the plan is byte for byte the planner's
 * without recomputation. */
START_TEST(test_pool_no_recompute_flags_change_nothing)
{
    sa_dfg_graph *g = tu_ladder(8);
    uint8_t *zero = calloc((size_t)g->n_tensors + 1, 1);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    for (int pct = 40; pct <= 100; pct += 20) {
        sa_plan *a = pool_rc_plan(g, peak * pct / 100, NULL), *b = pool_rc_plan(g, peak * pct / 100, zero);
        ck_assert_int_eq(a == NULL, b == NULL);
        if (!a)
            continue;
        char *ja = plan_json(a), *jb = plan_json(b);
        ck_assert_str_eq(ja, jb);
        ck_assert_int_eq(count_nodes(a, SA_PLAN_RECOMPUTE), 0);
        free(ja);
        free(jb);
        sa_plan_free(a);
        sa_plan_free(b);
    }
    free(zero);
    sa_dfg_free(g);
}
END_TEST

/* Every forward activation of the ladder flagged.  Only x' = add(a, b) has
 * a backward use (a and b die at the add), so its recompute reads two
 * tensors that live on only for it: they stay resident or are swapped out
 * and back in for it.  Under pressure the plans recompute, take more compute
 * time, stay strictly valid and replay exactly. */
START_TEST(test_pool_recompute_chains_valid_and_replay)
{
    sa_dfg_graph *g = tu_ladder(8);
    uint8_t *rc = forward_flags(g);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    int planned = 0;
    for (int pct = 30; pct <= 80; pct += 10) {
        sa_plan *p0 = pool_rc_plan(g, peak * pct / 100, NULL);
        sa_plan *p = pool_rc_plan(g, peak * pct / 100, rc);
        ck_assert_int_eq(p0 == NULL, p == NULL); /* recomputing never makes a pool unfit */
        if (!p)
            continue;
        char what[64];
        snprintf(what, sizeof what, "ladder(8) at %d %%", pct);
        check_rc_plan(p, g, 0, what);
        ck_assert_msg(count_nodes(p, SA_PLAN_RECOMPUTE) > 0, "%s: nothing recomputed", what);
        ck_assert(p->predicted.compute_us > p0->predicted.compute_us);
        planned++;
        sa_plan_free(p0);
        sa_plan_free(p);
    }
    ck_assert_int_ge(planned, 3);
    free(rc);
    sa_dfg_free(g);
}
END_TEST

/* A hand graph where batchnorm updates its running statistics in place:
 * x -> fc(W) -> a -> bn(S) -> b -> relu -> c -> loss, backward, sgd.  With
 * every activation flagged, b (made by the in-place update) is never
 * recomputed and the default rule does not flag it; a and c are, and the
 * plans replay exactly. */
static sa_dfg_graph *bn_graph(void)
{
    sa_dfg_graph *g = sa_dfg_new("bn");
    const int64_t KB = 1024;
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, 64 * KB), w = sa_dfg_add_tensor(g, "W", SA_DFG_PARAM, 32 * KB);
    int32_t st = sa_dfg_add_tensor(g, "S", SA_DFG_STATE, 4 * KB);
    int32_t a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, 256 * KB), b = sa_dfg_add_tensor(g, "b", SA_DFG_ACTIVATION, 256 * KB);
    int32_t c = sa_dfg_add_tensor(g, "c", SA_DFG_ACTIVATION, 256 * KB), dl = sa_dfg_add_tensor(g, "dl", SA_DFG_GRADIENT, 256 * KB);
    int32_t db = sa_dfg_add_tensor(g, "db", SA_DFG_GRADIENT, 256 * KB), da = sa_dfg_add_tensor(g, "da", SA_DFG_GRADIENT, 256 * KB);
    int32_t dw = sa_dfg_add_tensor(g, "dW", SA_DFG_GRADIENT, 32 * KB);
    int32_t i0[] = {x, w}, o0[] = {a}, i1[] = {a, st}, o1[] = {b, st}, i2[] = {b}, o2[] = {c}, i3[] = {c}, o3[] = {dl};
    int32_t i4[] = {dl, c}, o4[] = {db}, i5[] = {db, a}, o5[] = {da}, i6[] = {da, x, w}, o6[] = {dw}, i7[] = {w, dw};
    int32_t o7[] = {w};
    sa_dfg_add_op(g, "fc", "matmul", SA_DFG_FORWARD, i0, 2, o0, 1);
    sa_dfg_add_op(g, "bn", "batchnorm", SA_DFG_FORWARD, i1, 2, o1, 2);
    sa_dfg_add_op(g, "relu", "relu", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, i3, 1, o3, 1);
    sa_dfg_add_op(g, "relu_bwd", "relu_bwd", SA_DFG_BACKWARD, i4, 2, o4, 1);
    sa_dfg_add_op(g, "bn_bwd", "batchnorm_bwd", SA_DFG_BACKWARD, i5, 2, o5, 1);
    sa_dfg_add_op(g, "fc_bwd", "matmul_bwd", SA_DFG_BACKWARD, i6, 3, o6, 1);
    sa_dfg_add_op(g, "sgd", "sgd_update", SA_DFG_UPDATE, i7, 2, o7, 1);
    tu_unit_finalize(g);
    return g;
}

START_TEST(test_pool_never_recomputes_in_place_updates)
{
    sa_dfg_graph *g = bn_graph();
    uint8_t *rc = forward_flags(g), rule[16];
    int32_t pos[16], bn = 1, b = 4;
    ck_assert_int_eq(g->tensors[b].producer, bn);
    ck_assert(rc[b]);
    sa_dfg_device slow = tu_policy_dev(1 << 30);
    slow.h2d_bytes_per_s = slow.d2h_bytes_per_s = 1e6; /* every transfer costs more than an op */
    ck_assert_int_gt(swp_recompute_rule(g, &slow, NULL, 1e9, pos, rule), 0);
    ck_assert(!rule[b]);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    int recomputed = 0;
    for (int pct = 40; pct <= 100; pct += 5) {
        sa_plan *p = pool_rc_plan(g, peak * pct / 100, rc);
        if (!p)
            continue;
        assert_no_in_place_recompute(p, g, "bn graph");
        check_rc_plan(p, g, 0, "bn graph");
        recomputed += count_nodes(p, SA_PLAN_RECOMPUTE);
        sa_plan_free(p);
    }
    ck_assert_int_gt(recomputed, 0); /* the other flags were carried out */
    free(rc);
    sa_dfg_free(g);
}
END_TEST

/* Recompute nodes right after another on the compute stream that read an
 * output of it: chains. */
static int32_t count_chains(const sa_plan *p, const sa_dfg_graph *g)
{
    int32_t n = 0, prev = -1;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (sa_plan_kind_stream(p->nodes[v].kind) != SA_PLAN_STREAM_COMPUTE)
            continue;
        if (prev >= 0 && p->nodes[v].kind == SA_PLAN_RECOMPUTE && p->nodes[prev].kind == SA_PLAN_RECOMPUTE) {
            const sa_dfg_op *a = &g->ops[p->nodes[prev].ref], *b = &g->ops[p->nodes[v].ref];
            bool link = false;
            for (int32_t i = 0; i < b->n_in; i++)
                for (int32_t k = 0; k < a->n_out; k++)
                    link |= b->in[i] == a->out[k];
            n += link;
        }
        prev = v;
    }
    return n;
}

/* A zoo ResNet (batchnorm's statistics in their own op): the default rule's
 * flags and every forward activation flagged, at half and a quarter of the
 * peak (raised in 5 % steps where the pool cannot fit; recomputing does not
 * change where that is); replayed with scaled bytes.  Every activation
 * flagged makes chains (ReLU's input is batchnorm's output, flagged too);
 * the rule's flags move fewer bytes out than swapping alone.  The topo-rc
 * row plans the same way. */
START_TEST(test_pool_recompute_on_zoo_resnet)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 0);
    sa_err err = {0};
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    uint8_t *all = forward_flags(g), *rule = calloc((size_t)g->n_tensors + 1, 1);
    int32_t *pos = calloc((size_t)g->n_ops + 1, sizeof *pos);
    sa_dfg_device d = tu_policy_dev(peak);
    ck_assert_int_gt(swp_recompute_rule(g, &d, NULL, SWP_RECOMPUTE_US_PER_MB, pos, rule), 0);
    const double fr[] = {0.5, 0.25};
    int recomputed = 0, chains = 0;
    for (size_t f = 0; f < SA_ARRAY_LEN(fr); f++) {
        const uint8_t *sets[] = {rule, all};
        double x = fr[f];
        sa_plan *p0;
        while (!(p0 = pool_rc_plan(g, (int64_t)(x * (double)peak), NULL)) && x < 1)
            x += 0.05;
        ck_assert_ptr_nonnull(p0);
        for (size_t k = 0; k < 2; k++) {
            sa_plan *p = pool_rc_plan(g, (int64_t)(x * (double)peak), sets[k]);
            ck_assert_ptr_nonnull(p);
            char what[64];
            snprintf(what, sizeof what, "resnet-18 at %.2f, %s", x, k ? "all" : "rule");
            assert_no_in_place_recompute(p, g, what);
            check_rc_plan(p, g, 48 << 20, what);
            recomputed += count_nodes(p, SA_PLAN_RECOMPUTE);
            chains += count_chains(p, g);
            if (k == 0)
                ck_assert_msg(p->predicted.d2h_bytes < p0->predicted.d2h_bytes, "%s: %lld bytes out, %lld without",
                              what, (long long)p->predicted.d2h_bytes, (long long)p0->predicted.d2h_bytes);
            sa_plan_free(p);
        }
        sa_plan_free(p0);
    }
    ck_assert_int_gt(recomputed, 0);
    ck_assert_int_gt(chains, 0);
    sa_plan *p = NULL;
    d = tu_policy_dev(peak / 2);
    ck_assert_msg(sa_policy_run("topo-rc", g, &d, &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_gt(count_nodes(p, SA_PLAN_RECOMPUTE), 0);
    tu_check_policy_plan(p, g, "topo-rc on resnet-18", false);
    sa_plan_free(p);
    free(all);
    free(rule);
    free(pos);
    sa_dfg_free(g);
}
END_TEST

/* A small zoo GPT: the rule rebuilds the attention probabilities through
 * chains (softmax <- mask <- scores, the last two intermediates with no use
 * of their own after the forward pass); the plans are strictly valid, leave
 * no intermediate behind and replay exactly. */
START_TEST(test_pool_recompute_intermediates_on_zoo_gpt)
{
    sa_dfg_graph *g = tu_zoo_roofline("gpt-2-256", 0);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    uint8_t *rule = calloc((size_t)g->n_tensors + 1, 1);
    int32_t *pos = calloc((size_t)g->n_ops + 1, sizeof *pos);
    sa_dfg_device d = tu_policy_dev(peak);
    ck_assert_int_gt(swp_recompute_rule(g, &d, NULL, SWP_RECOMPUTE_US_PER_MB, pos, rule), 0);
    int32_t inter = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t lf, nx;
        dec_gap(g, pos, t, &lf, &nx);
        inter += rule[t] && nx < 0;
    }
    ck_assert_int_gt(inter, 0);
    int chains = 0, planned = 0;
    for (int pct = 40; pct <= 100 && planned < 2; pct += 10) {
        sa_plan *p = pool_rc_plan(g, peak * pct / 100, rule);
        if (!p)
            continue;
        char what[64];
        snprintf(what, sizeof what, "gpt-2-256 at %d %%", pct);
        assert_no_in_place_recompute(p, g, what);
        check_rc_plan(p, g, 48 << 20, what);
        chains += count_chains(p, g);
        planned++;
        sa_plan_free(p);
    }
    ck_assert_int_eq(planned, 2);
    ck_assert_int_gt(chains, 0);
    free(rule);
    free(pos);
    sa_dfg_free(g);
}
END_TEST

/* A recomputed feature map evicted again in the backward pass is dropped
 * and rebuilt once more at its next use when its chain reads only inputs
 * and parameters not yet updated, and rebuilding costs less than the stall
 * the round trip would cause (swp.h, "Recomputation"): a zoo VGG-16 with
 * every forward activation flagged, across memories, rebuilds some op twice
 * (the first block's convolution and ReLU, from the batch); every plan is
 * strictly valid and replays exactly. */
START_TEST(test_pool_recompute_drops_rebuilt_again)
{
    sa_dfg_graph *g = tu_zoo_roofline("vgg-16", 0);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    uint8_t *all = forward_flags(g);
    int32_t *seen = calloc((size_t)g->n_ops + 1, sizeof *seen);
    int twice = 0, planned = 0;
    for (int pct = 50; pct <= 90; pct += 10) {
        sa_plan *p = pool_rc_plan(g, peak * pct / 100, all);
        if (!p)
            continue;
        char what[64];
        snprintf(what, sizeof what, "vgg-16 at %d %%", pct);
        assert_no_in_place_recompute(p, g, what);
        check_rc_plan(p, g, 48 << 20, what);
        memset(seen, 0, (size_t)g->n_ops * sizeof *seen);
        for (int32_t v = 0; v < p->n_nodes; v++)
            if (p->nodes[v].kind == SA_PLAN_RECOMPUTE && ++seen[p->nodes[v].ref] == 2)
                twice++;
        planned++;
        sa_plan_free(p);
    }
    ck_assert_int_gt(planned, 0);
    ck_assert_int_gt(twice, 0);
    free(seen);
    free(all);
    sa_dfg_free(g);
}
END_TEST

/* The id of g's tensor called name (the test fails when there is none). */
static int32_t tensor_named(const sa_dfg_graph *g, const char *name)
{
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (!strcmp(g->tensors[t].name, name))
            return t;
    ck_abort_msg("no tensor %s in %s", name, g->name);
    return -1;
}

/* A chain input rebuilt for a recompute and read by it (vgg-16's conv1_1_relu,
 * rebuilt from the batch to rebuild conv1_2 before pool1/bwd) is dropped
 * again rather than swapped out when the memory is needed before its next
 * use, and rebuilt a second time there (at 50 % to 90 % of the peak; a planner that
 * never redrops a tensor read at the current position swapped it out at 50,
 * 70 and 80 %). */
START_TEST(test_pool_recompute_chain_input_dropped_after_its_reader)
{
    sa_dfg_graph *g = tu_zoo_roofline("vgg-16", 0);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    uint8_t *rc = calloc((size_t)g->n_tensors + 1, 1);
    const char *block1[] = {"conv1_1", "conv1_1_relu", "conv1_2", "conv1_2_relu"};
    for (int k = 0; k < 4; k++)
        rc[tensor_named(g, block1[k])] = 1;
    int32_t c11r = tensor_named(g, "conv1_1_relu"), c12 = tensor_named(g, "conv1_2");
    int planned = 0;
    for (int pct = 50; pct <= 90; pct += 10) {
        sa_plan *p = pool_rc_plan(g, peak * pct / 100, rc);
        if (!p)
            continue;
        char what[64];
        snprintf(what, sizeof what, "vgg-16 at %d %%", pct);
        check_rc_plan(p, g, 48 << 20, what);
        bool chain = false, swapped = false;
        int rebuilt = 0;
        for (int32_t v = 0; v < p->n_nodes; v++) {
            const sa_plan_node *nd = &p->nodes[v];
            if (nd->kind == SA_PLAN_RECOMPUTE && nd->ref == g->tensors[c12].producer)
                chain = true;
            if (nd->kind == SA_PLAN_RECOMPUTE && nd->ref == g->tensors[c11r].producer)
                rebuilt++;
            if (chain && nd->kind == SA_PLAN_SWAP_OUT && nd->ref == c11r)
                swapped = true;
        }
        ck_assert_msg(chain && !swapped && rebuilt >= 2, "%s: conv1_2 rebuilt %d, conv1_1_relu swapped out after %d, "
                      "rebuilt %d times", what, chain, swapped, rebuilt);
        planned++;
        sa_plan_free(p);
    }
    ck_assert_int_gt(planned, 0);
    free(rc);
    sa_dfg_free(g);
}
END_TEST

/* swp_recompute_intermediates flags what a chain may rebuild: a flag on
 * vgg-16's conv2_1_relu alone keeps its producer's input conv2_1 alive to
 * the backward pass; with the intermediates flagged, conv2_1 is rebuilt from
 * pool1 there instead. */
START_TEST(test_pool_recompute_intermediates_let_a_chain_rebuild)
{
    sa_dfg_graph *g = tu_zoo_roofline("vgg-16", 0);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    int32_t *pos = calloc((size_t)g->n_ops, sizeof *pos);
    uint8_t *one = calloc((size_t)g->n_tensors + 1, 1), *chain = calloc((size_t)g->n_tensors + 1, 1);
    int32_t c21 = tensor_named(g, "conv2_1"), c21r = tensor_named(g, "conv2_1_relu");
    for (int32_t i = 0; i < g->n_ops; i++)
        pos[g->topo[i]] = i;
    one[c21r] = chain[c21r] = 1;
    ck_assert_int_gt(swp_recompute_intermediates(g, pos, chain), 0);
    ck_assert(chain[c21] && chain[c21r]);
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (chain[t] && t != c21r)
            ck_assert_msg(g->tensors[t].kind == SA_DFG_ACTIVATION, "%s flagged", g->tensors[t].name);
    int with = 0;
    for (int pct = 50; pct <= 90; pct += 10)
        for (int k = 0; k < 2; k++) {
            sa_plan *p = pool_rc_plan(g, peak * pct / 100, k ? chain : one);
            if (!p)
                continue;
            char what[64];
            snprintf(what, sizeof what, "vgg-16 at %d %%, %s", pct, k ? "intermediates" : "alone");
            int rebuilt = 0;
            for (int32_t v = 0; v < p->n_nodes; v++)
                rebuilt += p->nodes[v].kind == SA_PLAN_RECOMPUTE && p->nodes[v].ref == g->tensors[c21].producer;
            ck_assert_msg(k || rebuilt == 0, "%s: conv2_1 rebuilt %d times", what, rebuilt);
            with += k && rebuilt > 0;
            if (k && pct == 50)
                check_rc_plan(p, g, 48 << 20, what);
            sa_plan_free(p);
        }
    ck_assert_int_gt(with, 0);
    free(pos);
    free(one);
    free(chain);
    sa_dfg_free(g);
}
END_TEST

/* The search with pool_recompute: the same plan at 1 and 2 threads, seeded
 * or not; the answer is strictly valid and replays. */
START_TEST(test_pool_recompute_search_same_plan_any_thread_count)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 4 / 10);
    for (int seeded = 0; seeded < 2; seeded++) {
        char *json[2];
        for (int k = 0; k < 2; k++) {
            sa_policy_opts po;
            sa_policy_opts_default(&po);
            po.search.generations = 4;
            po.search.population = 8;
            po.search.threads = 1 + k;
            po.search.pool_recompute = true;
            po.search_seeds = seeded;
            sa_plan *p = NULL;
            sa_err err = {0};
            ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
            ck_assert_msg(strstr(p->search_json, "\"pool_recompute\":true") != NULL, "%s", p->search_json);
            if (k == 0)
                check_rc_plan(p, g, 0, seeded ? "seeded search" : "search");
            sa_plan_set_search_json(p, NULL); /* wall-clock and thread fields differ */
            json[k] = plan_json(p);
            sa_plan_free(p);
        }
        tu_same_text(json[0], json[1]);
    }
    sa_dfg_free(g);
}
END_TEST

/* x (an input) -> op1 -> A1, x -> op2 -> A2, op3(A1, A2) -> A3, op4(x, A3)
 * -> A4: nothing persistent, so the first pass already ends steady (no
 * resident at the end); under 3 units x leaves for op3 and comes back. */
static sa_dfg_graph *no_params(void)
{
    sa_dfg_graph *g = sa_dfg_new("no_params");
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, MB), a1 = sa_dfg_add_tensor(g, "A1", SA_DFG_ACTIVATION, MB);
    int32_t a2 = sa_dfg_add_tensor(g, "A2", SA_DFG_ACTIVATION, MB), a3 = sa_dfg_add_tensor(g, "A3", SA_DFG_ACTIVATION, MB);
    int32_t a4 = sa_dfg_add_tensor(g, "A4", SA_DFG_ACTIVATION, MB);
    int32_t i1[] = {x}, o1[] = {a1}, o2[] = {a2}, i3[] = {a1, a2}, o3[] = {a3}, i4[] = {x, a3}, o4[] = {a4};
    sa_dfg_add_op(g, "op1", "matmul", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "op2", "matmul", SA_DFG_FORWARD, i1, 1, o2, 1);
    sa_dfg_add_op(g, "op3", "add", SA_DFG_FORWARD, i3, 2, o3, 1);
    sa_dfg_add_op(g, "op4", "add", SA_DFG_FORWARD, i4, 2, o4, 1);
    tu_unit_finalize(g);
    return g;
}

/* The plan of swp_plan with workspace ws (NULL: a fresh one) on `units` MiB,
 * as JSON (the caller frees it); NULL when the pool does not fit. */
static char *swp_json(const sa_dfg_graph *g, int64_t units, swp_ws *ws)
{
    sa_dfg_device d = tu_unit_dev(units);
    pool_alloc a;
    sa_err err = {0};
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    char *json = NULL;
    if (pool_fine_grained(&a, g, g->topo, d.memory_bytes, &err) == SA_OK) {
        swp_opts o;
        swp_opts_default(&o);
        swp_ws *own = ws ? NULL : swp_ws_new(g);
        sa_plan *p = sa_plan_new(g, &d);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(swp_plan(g, &d, g->topo, &a, &o, ws ? ws : own, p, &err), SA_OK);
        ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
        json = plan_json(p);
        sa_plan_free(p);
        swp_ws_free(own);
    }
    pool_alloc_free(&a);
    return json;
}

/* The first of several passes walks dry (no plan) and is walked again in
 * full when it ends steady; a workspace whose last first pass was steady
 * walks the next one in full at once.  Either way the plan is the same, byte
 * for byte: a workspace reused across memory sizes and graphs plans as a
 * fresh one does. */
START_TEST(test_dry_first_pass_same_plan)
{
    sa_dfg_graph *gs[2] = {no_params(), figure3()};
    swp_ws *ws[2] = {swp_ws_new(gs[0]), swp_ws_new(gs[1])};
    const int64_t units[] = {3, 4, 3, 7, 5, 3, 4};
    int planned = 0;
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < sizeof units / sizeof *units; i++)
            for (int k = 0; k < 2; k++) {
                char *fresh = swp_json(gs[k], units[i], NULL), *reused = swp_json(gs[k], units[i], ws[k]);
                ck_assert_int_eq(fresh == NULL, reused == NULL);
                if (fresh) {
                    ck_assert_str_eq(fresh, reused);
                    planned++;
                }
                free(fresh);
                free(reused);
            }
    ck_assert_int_ge(planned, 20);
    for (int k = 0; k < 2; k++) {
        swp_ws_free(ws[k]);
        sa_dfg_free(gs[k]);
    }
}
END_TEST

/* A tensor rebuilt for a recompute chain after its own last use leaves with
 * the chain's recompute node.  The search met this walk on vgg-11 b16 (the
 * bundled graph profiled for the H100, 0.5x): pool1 is rebuilt for conv2_1's
 * filter gradient, scheduled after conv1_1's backward, so conv1_1_relu is
 * rebuilt past its last use.  Kept on the device to the iteration's end, it
 * was swapped out there; at offset 0 of its object it was also carried into
 * the next pass, where its producer placed it into its own object, a cycle
 * that the next sharing walked forever (this walk's does not reach one). */
START_TEST(test_pool_chain_intermediate_past_its_last_use_leaves)
{
    static const int32_t sched[] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 26, 27, 28, 29, 84, 85, 30, 31, 32, 33, 34, 83, 82, 36, 35, 81, 80, 37,
        39, 38, 79, 40, 41, 78, 42, 76, 77, 43, 44, 45, 46, 47, 75, 49, 74, 48, 73, 50, 51, 53,
        71, 72, 52, 54, 70, 55, 56, 57, 69, 58, 59, 61, 68, 62, 63, 60, 66, 67, 64, 65};
    static const int32_t flagged[] = {4, 6, 7, 10, 13, 16, 21, 27, 32, 38, 43, 49, 53, 57};
    static const int32_t cls[] = {0, 1, 2, 3, 4, 4, 4, 5, 6, 6, 6, 6, 6, 7, 8, 9,
                                  9, 9, 10, 11, 12, 12, 12, 12, 12, 12, 12, 12, 13, 14, 14};
    static const int32_t cnt[] = {6, 7, 7, 9, 17, 9, 0, 1, 0, 0, 0, 2, 0, 0, 2};
    sa_dfg_graph *g = tu_bundled("graphs/vgg-11-b16.json", "profiles/h100-sxm5-80gb.json", 844548000);
    sa_err err = {0};
    ck_assert_int_eq(g->n_ops, (int32_t)SA_ARRAY_LEN(sched));
    ck_assert_int_eq(g->n_sizes, (int32_t)SA_ARRAY_LEN(cls));
    ck_assert_str_eq(g->tensors[6].name, "conv1_1_relu");
    uint8_t *rc = calloc((size_t)g->n_tensors + 1, 1);
    for (size_t k = 0; k < SA_ARRAY_LEN(flagged); k++)
        rc[flagged[k]] = 1;
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    memcpy(a.cls, cls, sizeof cls);
    memcpy(a.cnt, cnt, sizeof cnt);
    pool_repair_cls(&a);
    ck_assert_int_eq(a.n_classes, (int32_t)SA_ARRAY_LEN(cnt));
    ck_assert(pool_layout(&a, g));
    ck_assert_int_eq(a.obj_bytes[14], 411041792); /* the walk's objects: two of 411 MB */
    ck_assert_int_eq(a.cnt[14], 2);
    swp_opts o;
    swp_opts_default(&o);
    o.recompute = rc;
    sa_plan *p = sa_plan_new(g, &g->device);
    ck_assert_ptr_nonnull(p);
    planner_req q = {.schedule = sched, .layout = PLANNER_POOL, .pool = &a, .evict = &o};
    ck_assert_msg(planner_plan(g, &g->device, &q, p, &err) == SA_OK, "%s", err.msg);
    check_rc_plan(p, g, 48 << 20, "vgg-11 at 0.5x, the search's walk");
    int32_t rebuilt = 0, saved = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        rebuilt += p->nodes[v].kind == SA_PLAN_RECOMPUTE && p->nodes[v].ref == g->tensors[6].producer;
        saved += p->nodes[v].kind == SA_PLAN_SWAP_OUT && p->nodes[v].ref == 6;
    }
    ck_assert_int_ge(rebuilt, 2); /* for pool1/bwd, and again for conv2_1's filter gradient */
    /* it leaves with the second rebuild's reader; kept to the end, it was swapped out there */
    ck_assert_int_eq(saved, 0);
    sa_plan_free(p);
    pool_alloc_free(&a);
    free(rc);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_swp(void)
{
    Suite *s = suite_create("swp");
    TCase *tc = tcase_create("planner");
    tcase_add_test(tc, test_figure3_w1_makes_room_for_w3_and_w2_for_a3);
    tcase_add_test(tc, test_figure3_steady_state);
    tcase_add_test(tc, test_share_spare_end_before_borrowing);
    tcase_add_test(tc, test_share_waits_for_overlapping_tenants_only);
    tcase_add_test(tc, test_split_keeps_shared_resident);
    tcase_add_test(tc, test_op_larger_than_memory_is_refused);
    tcase_add_test(tc, test_policies_on_tiny_under_pressure);
    tcase_add_test(tc, test_figure1_right_first_fine);
    tcase_add_test(tc, test_figure1_right_first_coarse);
    tcase_add_test(tc, test_figure1_left_first_fine);
    tcase_add_test(tc, test_figure1_left_first_coarse);
    tcase_add_test(tc, test_figure1_pool_and_schedule_each_matter);
    tcase_add_test(tc, test_figure1_steady_state);
    tcase_add_test(tc, test_dry_first_pass_same_plan);
    tcase_add_test(tc, test_pool_chain_intermediate_past_its_last_use_leaves);
    suite_add_tcase(s, tc);
    TCase *rc = tcase_create("recompute");
    tcase_set_timeout(rc, 120);
    tcase_add_test(rc, test_pool_no_recompute_flags_change_nothing);
    tcase_add_test(rc, test_pool_recompute_chains_valid_and_replay);
    tcase_add_test(rc, test_pool_recomputes_a_backward_intermediate);
    tcase_add_test(rc, test_pool_never_recomputes_in_place_updates);
    tcase_add_test(rc, test_pool_recompute_on_zoo_resnet);
    tcase_add_test(rc, test_pool_recompute_intermediates_on_zoo_gpt);
    tcase_add_test(rc, test_pool_recompute_drops_rebuilt_again);
    tcase_add_test(rc, test_pool_recompute_chain_input_dropped_after_its_reader);
    tcase_add_test(rc, test_pool_recompute_intermediates_let_a_chain_rebuild);
    tcase_add_test(rc, test_pool_recompute_search_same_plan_any_thread_count);
    suite_add_tcase(s, rc);
    return s;
}
