/* test_pool.c - pool floors with borrowing, and the planner borrowing an
 * object of a larger class when its own class is exhausted; splitting
 * objects, by hand and in a randomized stress test (fuzz). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/swp.h"
#include "swapadvisor/zoo.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/validate.h"
#include "test_util.h"

#define MB 1048576

/* opA(W1) -> A1, A2 (three 1 MiB tensors at once); opB(W2) -> B (two 2 MiB);
 * opC(A1, A2, B) -> Y (three 1 MiB and one 2 MiB: 5 MiB, the largest op). */
static sa_dfg_graph *two_sizes(void)
{
    sa_dfg_graph *g = sa_dfg_new("two_sizes");
    int32_t w1 = sa_dfg_add_tensor(g, "W1", SA_DFG_PARAM, MB), w2 = sa_dfg_add_tensor(g, "W2", SA_DFG_PARAM, 2 * MB);
    int32_t a1 = sa_dfg_add_tensor(g, "A1", SA_DFG_ACTIVATION, MB), a2 = sa_dfg_add_tensor(g, "A2", SA_DFG_ACTIVATION, MB);
    int32_t b = sa_dfg_add_tensor(g, "B", SA_DFG_ACTIVATION, 2 * MB), y = sa_dfg_add_tensor(g, "Y", SA_DFG_ACTIVATION, MB);
    int32_t ia[] = {w1}, oa[] = {a1, a2}, ib[] = {w2}, ob[] = {b}, ic[] = {a1, a2, b}, oc[] = {y};
    sa_dfg_add_op(g, "opA", "matmul", SA_DFG_FORWARD, ia, 1, oa, 2);
    sa_dfg_add_op(g, "opB", "matmul", SA_DFG_FORWARD, ib, 1, ob, 1);
    sa_dfg_add_op(g, "opC", "matmul", SA_DFG_FORWARD, ic, 3, oc, 1);
    tu_unit_finalize(g);
    return g;
}

START_TEST(test_shared_need_counts_what_larger_objects_can_hold)
{
    sa_dfg_graph *g = two_sizes();
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
    sa_dfg_free(g);
}
END_TEST

static bool placed_in_large_object(const sa_plan *p, const sa_dfg_graph *g)
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
    sa_dfg_graph *g = two_sizes();
    sa_dfg_device d = tu_unit_dev(6);
    sa_err err = {0};
    const char *names[] = {"topo", "odswap"};
    for (int i = 0; i < 2; i++) {
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run(names[i], g, &d, &p, &err) == SA_OK, "%s: %s", names[i], err.msg);
        ck_assert_int_le(p->arena_bytes, 6 * MB);
        /* 6 MiB fits neither 3 x 1 MiB + 2 x 2 MiB nor one class of 4 x 2 MiB, so
     * the pool has two 1 MiB objects and opC's third borrows a 2 MiB one */
        ck_assert_msg(placed_in_large_object(p, g), "%s: no 1 MiB tensor borrowed a 2 MiB object", names[i]);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s: %s", names[i], err.msg);
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

/* Counts for the two classes of two_sizes (1 MiB, 2 MiB), laid out. */
static void set_counts(pool_alloc *a, const sa_dfg_graph *g, int32_t n1, int32_t n2)
{
    a->cls[0] = 0;
    a->cls[1] = 1;
    pool_repair_cls(a);
    a->cnt[0] = n1;
    a->cnt[1] = n2;
    ck_assert(pool_layout(a, g));
}

START_TEST(test_split_floors_by_hand)
{
    sa_dfg_graph *g = two_sizes();
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    /* 1 + 2 x 2 MiB: opA's second and third 1 MiB tensors share a 2 MiB
     * object; opC's B takes one, A1 the 1 MiB one, A2 and Y share the other */
    set_counts(&a, g, 1, 2);
    sa_err e;
    ck_assert_int_eq(pool_fits_split(&a, g, &e), SA_OK);
    /* 2 + 1 x 2 MiB: opB's two 2 MiB tensors cannot share anything */
    set_counts(&a, g, 2, 1);
    ck_assert_int_eq(pool_fits_split(&a, g, &e), SA_EINFEASIBLE);
    /* 2 x 2 MiB alone: opC's B fills one, A1 and A2 the other, Y is left */
    set_counts(&a, g, 0, 2);
    ck_assert_int_eq(pool_fits_split(&a, g, &e), SA_EINFEASIBLE);
    /* the floors: from the borrowing ones (2 + 2, 6 MiB) a 2 MiB object
     * cannot go (opB), a 1 MiB one can */
    int32_t need[2];
    set_counts(&a, g, 7, 7);
    ck_assert_int_eq(pool_need_split(&a, g, 5 * MB, need, &e), SA_OK);
    ck_assert_int_eq(need[0], 1);
    ck_assert_int_eq(need[1], 2);
    ck_assert_int_eq(a.cnt[0], 7); /* cnt is left as it was */
    ck_assert_int_eq(pool_need_split(&a, g, 4 * MB, need, &e), SA_EINFEASIBLE);
    pool_alloc_free(&a);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_planner_splits_objects_when_no_fixed_pool_fits)
{
    /* 5 MiB holds opC alone, but fixed objects need 2 x 1 MiB + 2 x 2 MiB even
     * with borrowing (7 MiB by own classes, 8 MiB as one class of 2 MiB).
     * With one 1 MiB object at 0 and 2 MiB objects at 1 and 3 MiB, opA's and
     * opC's third 1 MiB tensor starts 1 MiB into a 2 MiB object while
     * another tensor of the same op holds its first half. */
    sa_dfg_graph *g = two_sizes();
    sa_dfg_device d = tu_unit_dev(5);
    bool fits = true;
    ck_assert(pool_fixed_fits(g, d.memory_bytes, &fits));
    ck_assert(!fits);
    const char *names[] = {"topo", "odswap"};
    for (int i = 0; i < 2; i++) {
        sa_plan *p = NULL;
        sa_err err = {0};
        ck_assert_msg(sa_policy_run(names[i], g, &d, &p, &err) == SA_OK, "%s: %s", names[i], err.msg);
        ck_assert_int_le(p->arena_bytes, 5 * MB);
        bool inside = false;
        for (int32_t k = 0; k < p->n_place; k++)
            inside |= g->tensors[p->place[k].tensor].bytes == MB &&
                      (p->place[k].offset == 2 * MB || p->place[k].offset == 4 * MB);
        ck_assert_msg(inside, "%s: no 1 MiB tensor in the second half of a 2 MiB object", names[i]);
        tu_check_policy_plan(p, g, names[i], true);
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_refusal_names_the_lowest_floor_and_the_largest_op)
{
    /* opA(X, 3 MiB) -> A (1 MiB), opB(Y, 2 MiB) -> B (2 MiB): 4 MiB each.
     * Whole objects need 3 + 2 MiB; splitting cannot do better: without the
     * 2 MiB object opB's second tensor finds no room beside its first in the
     * 3 MiB one. */
    sa_dfg_graph *g = sa_dfg_new("lopsided");
    int32_t x = sa_dfg_add_tensor(g, "X", SA_DFG_INPUT, 3 * MB), at = sa_dfg_add_tensor(g, "A", SA_DFG_ACTIVATION, MB);
    int32_t y = sa_dfg_add_tensor(g, "Y", SA_DFG_INPUT, 2 * MB), bt = sa_dfg_add_tensor(g, "B", SA_DFG_ACTIVATION, 2 * MB);
    int32_t ia[] = {x}, oa[] = {at}, ib[] = {y}, ob[] = {bt};
    sa_dfg_add_op(g, "opA", "relu", SA_DFG_FORWARD, ia, 1, oa, 1);
    sa_dfg_add_op(g, "opB", "relu", SA_DFG_FORWARD, ib, 1, ob, 1);
    g->ops[0].time_us = g->ops[1].time_us = 1.0;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "lopsided", &err), SA_OK);
    sa_dfg_device d = tu_unit_dev(4);
    sa_plan *p = NULL;
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg_contains(err, "the pool needs at least 5242880 bytes");
    ck_assert_msg_contains(err, "the largest op, 0 \"opA\", needs 4194304 alone");
    d = tu_unit_dev(5);
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_OK);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* op1(X) -> B: X takes the only 1 MiB object, so B borrows the only 2 MiB
 * one.  op2(B) -> C (2 MiB): every op fits whole objects by count, yet B
 * still holds the 2 MiB object C needs; it has to move to the 1 MiB one
 * (free since X died).  The planner used to give up here. */
START_TEST(test_tensor_in_a_borrowed_object_moves_for_a_larger_one)
{
    sa_dfg_graph *g = sa_dfg_new("borrowed");
    int32_t x = sa_dfg_add_tensor(g, "X", SA_DFG_INPUT, MB), b = sa_dfg_add_tensor(g, "B", SA_DFG_ACTIVATION, MB);
    int32_t c = sa_dfg_add_tensor(g, "C", SA_DFG_ACTIVATION, 2 * MB), y = sa_dfg_add_tensor(g, "Y", SA_DFG_ACTIVATION, MB);
    int32_t i1[] = {x}, o1[] = {b}, i2[] = {b}, o2[] = {c}, i3[] = {c}, o3[] = {y};
    sa_dfg_add_op(g, "op1", "relu", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "op2", "matmul", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "op3", "matmul", SA_DFG_FORWARD, i3, 1, o3, 1);
    for (int i = 0; i < 3; i++)
        g->ops[i].time_us = 1.0;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "borrowed", &err), SA_OK);
    sa_dfg_device d = tu_unit_dev(3);
    const char *names[] = {"topo", "odswap"};
    for (int i = 0; i < 2; i++) {
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run(names[i], g, &d, &p, &err) == SA_OK, "%s: %s", names[i], err.msg);
        /* B: first at 1 MiB (the 2 MiB object), then back in at 0 */
        int32_t where = 0;
        for (int32_t k = 0; k < p->n_place; k++)
            if (p->place[k].tensor == b)
                where |= p->place[k].offset == MB ? 1 : p->place[k].offset == 0 ? 2 : 4;
        ck_assert_int_eq(where, 3);
        tu_check_policy_plan(p, g, names[i], true);
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

/* Issue 4's acceptance pairs that no pool of whole objects fits: vgg-16 at
 * half its peak and gpt-12-768 at a quarter (their largest ops fit). */
START_TEST(test_zoo_models_below_every_fixed_pool_plan)
{
    struct { const char *model; int frac; } cases[] = {{"vgg-16", 2}, {"gpt-12-768", 4}};
    sa_devprof *prof;
    sa_err err = {0};
    ck_assert_int_eq(sa_devprof_load_file("profiles/v100-pcie3-16gb.json", &prof, &err), SA_OK);
    for (int i = 0; i < 2; i++) {
        sa_dfg_graph *g;
        zoo_opts zo = {0};
        ck_assert_int_eq(zoo_build(cases[i].model, &zo, &g, &err), SA_OK);
        ck_assert_int_eq(sa_cost_profile_graph(g, prof, 0, &err), SA_OK);
        sa_dfg_device d = g->device;
        d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / cases[i].frac;
        bool fits = true;
        ck_assert(pool_fixed_fits(g, d.memory_bytes, &fits));
        ck_assert_msg(!fits, "%s: a fixed pool fits", cases[i].model);
        const char *names[] = {"topo", "odswap"};
        for (int k = 0; k < 2; k++) {
            sa_plan *p = NULL;
            ck_assert_msg(sa_policy_run(names[k], g, &d, &p, &err) == SA_OK, "%s %s: %s", cases[i].model, names[k],
                          err.msg);
            tu_check_policy_plan(p, g, names[k], false);
            sa_plan_free(p);
        }
        sa_dfg_free(g);
    }
    sa_devprof_free(prof);
}
END_TEST

/* Regression: a clean tensor dropped right after its reader (its host copy
 * being current) and swapped in again for the next reader must not arrive
 * before that reader is done; it did, and the device held it twice.  The
 * search's individuals at a quarter of resnet-18's peak hit that case. */
START_TEST(test_reswapped_clean_tensor_waits_for_its_previous_placement)
{
    sa_dfg_graph *g;
    sa_devprof *prof;
    sa_err err = {0};
    zoo_opts zo = {0};
    zo.batch = 4;
    ck_assert_int_eq(zoo_build("resnet-18", &zo, &g, &err), SA_OK);
    ck_assert_int_eq(sa_devprof_load_file("profiles/v100-pcie3-16gb.json", &prof, &err), SA_OK);
    ck_assert_int_eq(sa_cost_profile_graph(g, prof, 0, &err), SA_OK);
    sa_dfg_device d = g->device;
    d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / 4;
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.generations = 3;
    o.threads = 1;
    sa_ga_result r;
    ck_assert_msg(sa_ga_search(g, &d, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_plan_validate(r.best, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    sa_plan_free(r.best);
    sa_devprof_free(prof);
    sa_dfg_free(g);
}
END_TEST

/* ---- randomized stress test of splitting (deterministic) ---- */

#define FZ_GRAPHS 300  /* random graphs */
#define FZ_POOLS 3     /* search-like pools per memory tried */
#define FZ_GA_EVERY 5  /* one graph in this many also gets a short search */
#define FZ_REPLAY_CAP (1 << 15) /* bytes of the scaled host replay */
#define FZ_REPLAY_EVERY 4 /* plans where a fixed pool fits: one in this many replayed */

/* splitmix64: the test's own generator, so runs are the same everywhere */
typedef struct fz_rng { uint64_t s; } fz_rng;

static uint64_t fz_next(fz_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static int fz_int(fz_rng *r, int lo, int hi) { return lo + (int)(fz_next(r) % (uint64_t)(hi - lo + 1)); }

/* true with probability pct % */
static bool fz_pct(fz_rng *r, int pct) { return fz_int(r, 0, 99) < pct; }

#define FZ_USE 6 /* most tensors one op uses */

/* One op being built: at most FZ_USE distinct tensors in all. */
typedef struct fz_op { int32_t in[FZ_USE], out[FZ_USE], n_in, n_out; } fz_op;

static bool fz_has(const fz_op *o, int32_t t)
{
    for (int32_t i = 0; i < o->n_in; i++)
        if (o->in[i] == t)
            return true;
    for (int32_t i = 0; i < o->n_out; i++)
        if (o->out[i] == t)
            return true;
    return false;
}

static bool fz_in(fz_op *o, int32_t t)
{
    if (t < 0 || o->n_in + o->n_out >= FZ_USE || fz_has(o, t))
        return false;
    o->in[o->n_in++] = t;
    return true;
}

static bool fz_out(fz_op *o, int32_t t)
{
    if (o->n_in + o->n_out >= FZ_USE)
        return false;
    o->out[o->n_out++] = t;
    return true;
}

/* A random training-like iteration of 3..30 ops: parameters (some with
 * optimizer state) read by several forward ops, activations with skip
 * connections, workspaces, a loss, a backward pass that reads the forward
 * activations again and accumulates weight gradients, and in-place updates
 * of parameters and state; sometimes an op that reads nothing or an update
 * of one tensor.  Sizes come from a palette of 2-4 sizes, mostly whole MiB,
 * sometimes not a multiple of POOL_ALIGN or a few KiB. */
static sa_dfg_graph *fz_graph(fz_rng *r, int idx)
{
    static const int64_t mib[] = {1, 2, 3, 4, 6, 8};
    int64_t pal[4];
    int npal = fz_int(r, 2, 4);
    for (int i = 0; i < npal;) {
        int64_t b = mib[fz_int(r, 0, 5)] * MB;
        if (fz_pct(r, 10))
            b = b / 2 + 1000 * fz_int(r, 1, 9); /* odd bytes: alignment inside split objects */
        else if (fz_pct(r, 5))
            b = 4096 * fz_int(r, 1, 8) + fz_int(r, 0, 1) * 100; /* small ones fit spare ends */
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup |= pal[j] == b;
        if (!dup)
            pal[i++] = b;
    }
#define FZ_SIZE() pal[fz_int(r, 0, npal - 1)]
    char name[48];
    snprintf(name, sizeof name, "fuzz-%d", idx);
    sa_dfg_graph *g = sa_dfg_new(name);
    int target = fz_int(r, 3, 30);
    int n_param = fz_int(r, 1, 5), n_fwd = fz_int(r, 1, target / 2 > 1 ? target / 2 : 1);
    int32_t param[5], state[5], grad[5], x[2];
    for (int i = 0; i < n_param; i++) {
        snprintf(name, sizeof name, "W%d", i);
        param[i] = sa_dfg_add_tensor(g, name, SA_DFG_PARAM, FZ_SIZE());
        state[i] = -1;
        grad[i] = -1;
        if (fz_pct(r, 35)) {
            snprintf(name, sizeof name, "M%d", i);
            state[i] = sa_dfg_add_tensor(g, name, SA_DFG_STATE, g->tensors[param[i]].bytes);
        }
    }
    int n_x = fz_int(r, 1, 2);
    for (int i = 0; i < n_x; i++) {
        snprintf(name, sizeof name, "X%d", i);
        x[i] = sa_dfg_add_tensor(g, name, SA_DFG_INPUT, FZ_SIZE());
    }
    /* forward: op f reads act[f] (act[0] = the input) and writes act[f + 1] */
    int32_t act[32];
    fz_op fw[32];
    act[0] = x[0];
    int32_t mask = -1; /* an op of one tensor, reading nothing (a random mask) */
    if (fz_pct(r, 25)) {
        mask = sa_dfg_add_tensor(g, "mask", SA_DFG_ACTIVATION, FZ_SIZE());
        sa_dfg_add_op(g, "mask", "rng", SA_DFG_FORWARD, NULL, 0, &mask, 1);
    }
    for (int f = 0; f < n_fwd; f++) {
        fz_op *o = &fw[f];
        memset(o, 0, sizeof *o);
        fz_in(o, act[f]);
        if (fz_pct(r, 30)) /* a skip connection, or the second input */
            fz_in(o, f > 0 && fz_pct(r, 70) ? act[fz_int(r, 0, f - 1)] : x[n_x - 1]);
        if (mask >= 0 && fz_pct(r, 40))
            fz_in(o, mask);
        int np = fz_int(r, 0, 2);
        for (int k = 0; k < np; k++)
            fz_in(o, param[fz_int(r, 0, n_param - 1)]);
        snprintf(name, sizeof name, "a%d", f + 1);
        act[f + 1] = sa_dfg_add_tensor(g, name, SA_DFG_ACTIVATION, FZ_SIZE());
        fz_out(o, act[f + 1]);
        int extra = fz_int(r, 0, 3); /* wide ops: more outputs, a workspace */
        for (int k = 0; k < extra && o->n_in + o->n_out < FZ_USE; k++) {
            bool ws = fz_pct(r, 40);
            snprintf(name, sizeof name, ws ? "ws%d_%d" : "aux%d_%d", f, k);
            fz_out(o, sa_dfg_add_tensor(g, name, ws ? SA_DFG_WORKSPACE : SA_DFG_ACTIVATION, FZ_SIZE()));
        }
        snprintf(name, sizeof name, "fwd%d", f);
        sa_dfg_add_op(g, name, "matmul", SA_DFG_FORWARD, o->in, o->n_in, o->out, o->n_out);
    }
    if (g->n_ops < target) {
        /* the loss, then the backward pass while ops remain */
        fz_op o = {0};
        fz_in(&o, act[n_fwd]);
        if (fz_pct(r, 50))
            fz_in(&o, x[n_x - 1]);
        int32_t dy = sa_dfg_add_tensor(g, "dloss", SA_DFG_GRADIENT, g->tensors[act[n_fwd]].bytes);
        fz_out(&o, dy);
        sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, o.in, o.n_in, o.out, o.n_out);
        for (int f = n_fwd - 1; f >= 0 && g->n_ops < target; f--) {
            fz_op b = {0};
            fz_in(&b, dy);
            for (int k = 0; k < fw[f].n_in; k++) /* the forward inputs again */
                if (!sa_dfg_kind_persistent(g->tensors[fw[f].in[k]].kind) || fz_pct(r, 80))
                    fz_in(&b, fw[f].in[k]);
            int32_t ndy = -1;
            if (g->tensors[act[f]].kind != SA_DFG_INPUT && b.n_in + b.n_out < FZ_USE) {
                snprintf(name, sizeof name, "d%d", f);
                ndy = sa_dfg_add_tensor(g, name, SA_DFG_GRADIENT, g->tensors[act[f]].bytes);
                fz_out(&b, ndy);
            }
            for (int k = 0; k < fw[f].n_in; k++) {
                int p = 0;
                while (p < n_param && param[p] != fw[f].in[k])
                    p++;
                if (p == n_param || b.n_in + b.n_out + (grad[p] >= 0) >= FZ_USE)
                    continue;
                if (grad[p] >= 0) /* accumulate into a new gradient */
                    fz_in(&b, grad[p]);
                snprintf(name, sizeof name, "dW%d_%d", p, f);
                grad[p] = sa_dfg_add_tensor(g, name, SA_DFG_GRADIENT, g->tensors[param[p]].bytes);
                fz_out(&b, grad[p]);
            }
            if (b.n_out == 0) { /* nothing to write: a workspace keeps it an op */
                snprintf(name, sizeof name, "bws%d", f);
                int32_t ws = sa_dfg_add_tensor(g, name, SA_DFG_WORKSPACE, FZ_SIZE());
                if (!fz_out(&b, ws)) {
                    b.n_in--;
                    fz_out(&b, ws);
                }
            }
            snprintf(name, sizeof name, "bwd%d", f);
            sa_dfg_add_op(g, name, "matmul_bwd", SA_DFG_BACKWARD, b.in, b.n_in, b.out, b.n_out);
            if (ndy >= 0)
                dy = ndy;
        }
        /* in-place updates: the parameter (and its state) as input and output */
        for (int p = 0; p < n_param && g->n_ops < 30; p++) {
            if (grad[p] < 0) {
                if (fz_pct(r, 50)) { /* one tensor, in place */
                    snprintf(name, sizeof name, "clip%d", p);
                    sa_dfg_add_op(g, name, "clip", SA_DFG_UPDATE, &param[p], 1, &param[p], 1);
                }
                continue;
            }
            fz_op u = {0};
            fz_in(&u, param[p]);
            fz_in(&u, grad[p]);
            fz_in(&u, state[p]);
            fz_out(&u, param[p]);
            if (state[p] >= 0)
                fz_out(&u, state[p]);
            snprintf(name, sizeof name, "upd%d", p);
            sa_dfg_add_op(g, name, "sgd_update", SA_DFG_UPDATE, u.in, u.n_in, u.out, u.n_out);
        }
    }
    while (g->n_ops < 3) { /* tiny graphs: a few elementwise ops on the input */
        fz_op o = {0};
        fz_in(&o, x[n_x - 1]);
        snprintf(name, sizeof name, "tail%d", g->n_ops);
        fz_out(&o, sa_dfg_add_tensor(g, name, SA_DFG_WORKSPACE, FZ_SIZE()));
        sa_dfg_add_op(g, name, "relu", SA_DFG_FORWARD, o.in, o.n_in, o.out, o.n_out);
    }
#undef FZ_SIZE
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = (double)fz_int(r, 1, 20);
    sa_err err = {0};
    ck_assert_msg(sa_dfg_finalize(g, g->name, &err) == SA_OK, "%s", err.msg);
    return g;
}

/* The failures a planner may answer with: the pool's refusal (no pool fits,
 * even splitting) or the up-front one (an op larger than the memory). */
static bool fz_refusal_ok(sa_status st, const sa_err *err)
{
    return st == SA_EINFEASIBLE && (strncmp(err->msg, "the pool needs", 14) == 0 ||
                                    (strncmp(err->msg, "op ", 3) == 0 && strstr(err->msg, " alone needs ") != NULL));
}

/* What tu_check_policy_plan checks, with the host replay's bytes scaled
 * down to a small cap (the random graphs' tensors are whole MiB; the replay
 * at full size would take most of the test's time).  The replay, whose cost
 * is mostly its threads waking each other, only where asked. */
static void fz_check_plan(const sa_plan *p, const sa_dfg_graph *g, const char *what, bool replay)
{
    tu_check_policy_plan(p, g, what, false);
    if (!replay)
        return;
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    ro.cap_bytes = FZ_REPLAY_CAP;
    sa_err err = {0};
    ck_assert_msg(sa_runner_run(p, g, &ro, NULL, &err) == SA_OK, "%s replay: %s", what, err.msg);
}

/* A random topological order of g. */
static void fz_schedule(fz_rng *r, const sa_dfg_graph *g, int32_t *sch)
{
    int32_t n = g->n_ops, nr = 0, indeg[64], ready[64];
    ck_assert_int_le(n, 64);
    for (int32_t i = 0; i < n; i++)
        if ((indeg[i] = g->pred_off[i + 1] - g->pred_off[i]) == 0)
            ready[nr++] = i;
    for (int32_t k = 0; k < n; k++) {
        ck_assert_int_gt(nr, 0);
        int32_t j = fz_int(r, 0, nr - 1), v = ready[j];
        ready[j] = ready[--nr];
        sch[k] = v;
        for (int32_t e = g->succ_off[v]; e < g->succ_off[v + 1]; e++)
            if (--indeg[g->succ[e]] == 0)
                ready[nr++] = g->succ[e];
    }
    ck_assert(sa_dfg_is_topological(g, sch));
}

typedef struct fz_stats {
    int replays, plans; /* replayed: every plan below every fixed pool, one in FZ_REPLAY_EVERY of the rest */
    int graphs, cases, planned, refused, split_cases, split_planned, ga_runs, ga_split_planned;
    int pools, pools_split_planned, pools_unfit, pools_unfit_failed, nonmonotone;
} fz_stats;

/* Checks a plan made at a memory where a fixed pool fits (fixed) or not. */
static void fz_check(const sa_plan *p, const sa_dfg_graph *g, const char *what, bool fixed, fz_stats *s)
{
    bool replay = !fixed || s->plans++ % FZ_REPLAY_EVERY == 0;
    s->replays += replay;
    fz_check_plan(p, g, what, replay);
}

/* topo and odswap at memory mem: valid plans or the pool's refusal.
 * Returns which planned (bit i for pols[i]). */
static int fz_policies(const sa_dfg_graph *g, const sa_dfg_device *base, int64_t mem, fz_stats *s)
{
    int planned = 0;
    static const char *const pols[] = {"topo", "odswap"};
    bool fixed = true;
    ck_assert(pool_fixed_fits(g, mem, &fixed));
    sa_dfg_device d = *base;
    d.memory_bytes = mem;
    for (int i = 0; i < 2; i++) {
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run(pols[i], g, &d, &p, &err);
        char what[160];
        snprintf(what, sizeof what, "%s on %s at %lld bytes", pols[i], g->name, (long long)mem);
        s->cases++;
        s->split_cases += !fixed;
        if (st != SA_OK) {
            ck_assert_ptr_null(p);
            ck_assert_msg(fz_refusal_ok(st, &err), "%s: status %d: %s", what, st, err.msg);
            s->refused++;
            continue;
        }
        fz_check(p, g, what, fixed, s);
        s->planned++;
        s->split_planned += !fixed;
        planned |= 1 << i;
        sa_plan_free(p);
    }
    return planned;
}

/* The search for a few generations: its best plan is valid. */
static void fz_search(const sa_dfg_graph *g, const sa_dfg_device *base, int64_t mem, uint64_t seed, fz_stats *s)
{
    bool fixed = true;
    ck_assert(pool_fixed_fits(g, mem, &fixed));
    sa_dfg_device d = *base;
    d.memory_bytes = mem;
    sa_ga_opts o;
    sa_ga_opts_default(&o);
    o.seed = seed;
    o.population = 6;
    o.generations = 2;
    o.threads = 1;
    sa_ga_result res;
    sa_err err = {0};
    sa_status st = sa_ga_search(g, &d, &o, &res, &err);
    char what[160];
    snprintf(what, sizeof what, "ga_search on %s at %lld bytes", g->name, (long long)mem);
    s->ga_runs++;
    if (st != SA_OK) {
        ck_assert_msg(fz_refusal_ok(st, &err), "%s: status %d: %s", what, st, err.msg);
        return;
    }
    fz_check(res.best, g, what, fixed, s);
    s->ga_split_planned += !fixed;
    sa_plan_free(res.best);
}

/* A random pool on a random schedule, Belady or LRU on demand, random
 * threshold and passes: either as the search makes them (random classes and
 * counts, repaired with splitting floors where no fixed pool fits, topped up
 * to mem) or the random counts as drawn in a memory of just the pool.
 * Whenever the pool passes pool_fits_split the planner must plan, and
 * validly; when it does not, the planner may only say that an op needs more
 * objects. */
static void fz_pools(fz_rng *r, const sa_dfg_graph *g, const sa_dfg_device *base, int64_t mem, swp_ws *ws, fz_stats *s)
{
    bool fixed = true;
    ck_assert(pool_fixed_fits(g, mem, &fixed));
    sa_dfg_device d = *base;
    d.memory_bytes = mem;
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    int32_t need[16], sch[64];
    ck_assert_int_le(g->n_sizes, 16);
    for (int32_t i = 0; i < g->n_sizes; i++) {
        a.cls[i] = i == 0 ? 0 : a.cls[i - 1] + fz_pct(r, 60);
        a.cnt[i] = fz_int(r, 0, 3);
    }
    pool_repair_cls(&a);
    bool raw = fz_pct(r, 40);
    if (raw) {
        /* the counts as drawn, in a memory of just the pool */
        ck_assert(pool_layout(&a, g));
        if (a.pool_bytes == 0) {
            pool_alloc_free(&a);
            return;
        }
        d.memory_bytes = mem = a.pool_bytes;
        ck_assert(pool_fixed_fits(g, mem, &fixed));
    } else {
        sa_err e;
        sa_status rs = pool_repair_any(&a, g, need, mem, !fixed, &e);
        ck_assert_msg(rs == SA_OK || rs == SA_EINFEASIBLE, "pool_repair_any: %d %s", rs, e.msg);
        if (rs) {
            pool_alloc_free(&a);
            return;
        }
        pool_top_up(&a, mem);
        ck_assert(pool_layout(&a, g));
        ck_assert_int_le(a.pool_bytes, mem);
    }
    fz_schedule(r, g, sch);
    swp_opts so;
    swp_opts_default(&so);
    if (fz_pct(r, 50)) {
        so.victim = SWP_LRU;
        so.on_demand = true;
    }
    so.threshold_scale = 0.25 * fz_int(r, 1, 16);
    so.max_passes = fz_int(r, 1, 3);
    sa_err err = {0};
    sa_status fs = pool_fits_split(&a, g, &err);
    ck_assert(fs == SA_OK || fs == SA_EINFEASIBLE);
    bool fits = fs == SA_OK;
    sa_plan *p = sa_plan_new(g, &d);
    sa_status st = swp_plan(g, &d, sch, &a, &so, ws, p, &err);
    char what[320];
    int n = snprintf(what, sizeof what, "swp_plan (%s, threshold %g, %d passes) on %s at %lld bytes, classes",
                     so.victim == SWP_LRU ? "lru" : "belady", so.threshold_scale, so.max_passes, g->name,
                     (long long)mem);
    for (int32_t i = 0; i < g->n_sizes && n < (int)sizeof what - 16; i++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %d", a.cls[i]);
    n += snprintf(what + n, sizeof what - (size_t)n, ", counts");
    for (int32_t c = 0; c < a.n_classes && n < (int)sizeof what - 16; c++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %d", a.cnt[c]);
    s->pools++;
    s->pools_unfit += !fits;
    if (st == SA_OK) {
        ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
        ck_assert(sa_plan_set_search_json(p, "{}"));
        fz_check(p, g, what, fixed, s);
        s->pools_split_planned += fits && !fixed;
    } else {
        ck_assert_msg(!fits, "%s: passes pool_fits_split, yet: status %d: %s", what, st, err.msg);
        ck_assert_msg(st == SA_EINFEASIBLE && strstr(err.msg, "needs more tensors of") != NULL, "%s: status %d: %s",
                      what, st, err.msg);
        s->pools_unfit_failed++;
    }
    sa_plan_free(p);
    pool_alloc_free(&a);
}

/* The lowest memory that some pool of whole objects fits (bisection on
 * pool_fixed_fits, which is monotone in memory). */
static int64_t fz_fixed_floor(const sa_dfg_graph *g)
{
    int64_t lo = 0, hi = sa_dfg_total_bytes(g) * 2 + MB; /* fits hi, not lo */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        bool fits = false;
        ck_assert(pool_fixed_fits(g, mid, &fits));
        if (fits)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static int fz_cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Random training-like graphs at memories from their largest op to their
 * peak, the band below every fixed pool most of all: topo and odswap (and,
 * for some, the search, and random search-like pools on random schedules)
 * either plan validly or the pool refuses; the planner itself never fails
 * ("needs more tensors of ... at once") nor breaks an invariant. */
START_TEST(test_fuzz_split_plans_are_valid)
{
    /* SA_FUZZ_GRAPHS and SA_FUZZ_SEED run a longer or another search by hand */
    const char *env_seed = getenv("SA_FUZZ_SEED");
    int n_graphs = tu_env_count("SA_FUZZ_GRAPHS", FZ_GRAPHS, INT_MAX);
    fz_rng r = {env_seed ? strtoull(env_seed, NULL, 0) : 0x5eed5eed2024ULL};
    fz_stats s = {0};
    for (int gi = 0; gi < n_graphs; gi++) {
        sa_dfg_graph *g = fz_graph(&r, gi);
        /* the unit device (1 MiB a microsecond each way), its link sometimes
         * 4 times slower or faster, sometimes with a latency */
        sa_dfg_device dev = tu_unit_dev(0);
        double rate = (double[]){0.25, 1.0, 1.0, 4.0}[fz_int(&r, 0, 3)];
        dev.h2d_bytes_per_s *= rate;
        dev.d2h_bytes_per_s *= rate;
        dev.duplex_bytes_per_s *= rate;
        dev.transfer_latency_us = fz_pct(&r, 25) ? 2.0 : 0.0;
        swp_ws *ws = swp_ws_new(g);
        ck_assert_ptr_nonnull(ws);
        s.graphs++;
        int64_t lo = sa_dfg_max_op_bytes(g, NULL), peak = sa_dfg_peak_bytes(g, NULL), fixed = fz_fixed_floor(g);
        int64_t lo_u = (lo + MB - 1) / MB, top_u = ((peak > fixed ? peak : fixed) + MB - 1) / MB;
        int64_t fixed_u = (fixed + MB - 1) / MB;
        int64_t mem[12];
        int nm = 0;
        mem[nm++] = lo;
        mem[nm++] = lo_u * MB;
        if (fixed > lo) {
            mem[nm++] = fixed - 1;
            if (fixed_u - 1 > lo_u)
                mem[nm++] = fz_int(&r, (int)lo_u + 1, (int)fixed_u - 1) * MB;
        }
        mem[nm++] = fixed;
        mem[nm++] = fz_int(&r, (int)fixed_u, (int)top_u) * MB;
        mem[nm++] = top_u * MB;
        qsort(mem, (size_t)nm, sizeof *mem, fz_cmp_i64);
        /* the largest op does not fit: refused up front */
        {
            sa_dfg_device d = dev;
            d.memory_bytes = lo - 1;
            sa_plan *p = NULL;
            sa_err err = {0};
            ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
            ck_assert_msg_contains(err, " alone needs ");
        }
        int64_t split_mem = -1, topo_ok = -1; /* lowest memory topo planned below every fixed pool; planned */
        for (int i = 0; i < nm; i++) {
            if (i > 0 && mem[i] == mem[i - 1])
                continue;
            int planned = fz_policies(g, &dev, mem[i], &s);
            if ((planned & 1) && mem[i] < fixed && split_mem < 0)
                split_mem = mem[i];
            if (planned & 1)
                topo_ok = mem[i];
            else if (topo_ok >= 0)
                s.nonmonotone++; /* refused above a memory that planned: noted, not wrong */
            if (mem[i] < fixed || fz_pct(&r, 30))
                for (int k = 0; k < FZ_POOLS; k++)
                    fz_pools(&r, g, &dev, mem[i], ws, &s);
        }
        if (gi % FZ_GA_EVERY == 0)
            fz_search(g, &dev, split_mem >= 0 ? split_mem : fixed, (uint64_t)gi + 1, &s);
        swp_ws_free(ws);
        sa_dfg_free(g);
    }
    fprintf(stderr,
            "fuzz: %d graphs, %d policy runs (%d planned, %d refused by the pool, %d of those above a memory "
            "that planned), %d below every fixed pool (%d planned); %d searches (%d planned below every fixed "
            "pool); %d search-like pools (%d below every fixed pool passed pool_fits_split and planned; %d did not "
            "pass it, %d of them failed); %d plans replayed\n",
            s.graphs, s.cases, s.planned, s.refused, s.nonmonotone, s.split_cases, s.split_planned, s.ga_runs,
            s.ga_split_planned, s.pools, s.pools_split_planned, s.pools_unfit, s.pools_unfit_failed, s.replays);
    /* not vacuous: plans below every fixed pool, from each source */
    ck_assert_int_gt(s.split_planned, 0);
    ck_assert_int_gt(s.ga_split_planned, 0);
    ck_assert_int_gt(s.pools_split_planned, 0);
}
END_TEST

Suite *suite_pool(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("floors");
    tcase_add_test(tc, test_shared_need_counts_what_larger_objects_can_hold);
    tcase_add_test(tc, test_planner_borrows_a_larger_object_when_its_class_is_full);
    tcase_add_test(tc, test_split_floors_by_hand);
    tcase_add_test(tc, test_planner_splits_objects_when_no_fixed_pool_fits);
    tcase_add_test(tc, test_refusal_names_the_lowest_floor_and_the_largest_op);
    tcase_add_test(tc, test_tensor_in_a_borrowed_object_moves_for_a_larger_one);
    tcase_add_test(tc, test_zoo_models_below_every_fixed_pool_plan);
    tcase_add_test(tc, test_reswapped_clean_tensor_waits_for_its_previous_placement);
    suite_add_tcase(s, tc);
    TCase *fz = tcase_create("fuzz");
    tcase_set_timeout(fz, 120); /* about 2 s in the normal build, 10 s under the sanitizers */
    tcase_add_test(fz, test_fuzz_split_plans_are_valid);
    suite_add_tcase(s, fz);
    return s;
}
