/* test_bound.c - the lower bound (bound.h): never above the simulated
 * makespan of any policy's plan, on the bundled graphs and small zoo graphs at
 * several memories; exact on hand-built cases; refusals when no plan exists. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policies/optimal_internal.h"
#include "swapadvisor/bound.h"
#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/emit.h"
#include "swapadvisor/milp.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

/* Every policy of the table on g at frac of its no-swap peak (a short search
 * for swapadvisor and a short solve for optimal): each plan's simulated
 * makespan is at least the bound for its schedule and memory, combinatorial
 * and LP.  Returns how many plans were checked. */
static int check_every_policy(const sa_dfg_graph *g, double frac)
{
    int n;
    const sa_policy_def *t = sa_policy_table(&n);
    sa_dfg_device d = g->device;
    d.memory_bytes = (int64_t)((double)sa_dfg_peak_bytes(g, NULL) * frac);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.search.generations = 2;
    po.search.population = 8;
    po.search.threads = 1;
    po.optimal.time_limit_s = 5;
    po.optimal.refine_plans = 1000; /* these check the bound, not how far the refinement goes */
    /* the MILP rows are checked on their own in this loop: as the search's
     * seeds and polish they would solve and refine the same models again */
    po.seed_milp.max_cells = 0;
    po.seed_milp.polish_cells = 0;
    sa_sim_ws *ws = sa_sim_ws_new();
    int checked = 0;
    for (int k = 0; k < n; k++) {
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run_opts(t[k].name, g, &d, &po, &p, &err);
        if (st == SA_EINFEASIBLE || (st == SA_EUSAGE && !bound_have_lp()))
            continue;
        ck_assert_msg(st == SA_OK, "%s on %s at %.2f: %s", t[k].name, g->name, frac, err.msg);
        sa_sim_result r;
        ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
        bound_result b;
        ck_assert_msg(bound_cheap(g, &p->device, p->schedule, &b, &err) == SA_OK, "%s", err.msg);
        ck_assert_msg(b.lower_bound_us <= r.makespan_us * (1 + 1e-9),
                      "%s on %s at %.2f: combinatorial bound %.3f above the makespan %.3f (compute %.3f forced %.3f "
                      "start %.3f memory %.3f)", t[k].name, g->name, frac, b.lower_bound_us, r.makespan_us,
                      b.compute_us, b.forced_us, b.start_us, b.memory_us);
        ck_assert(b.lower_bound_us >= b.compute_us && b.compute_us > 0);
        if (bound_have_lp()) {
            bound_result bl;
            ck_assert_msg(bound_lp(g, &p->device, p->schedule, 0, &bl, &err) == SA_OK, "%s", err.msg);
            ck_assert_msg(bl.lower_bound_us <= r.makespan_us * (1 + 1e-9),
                          "%s on %s at %.2f: LP bound %.3f above the makespan %.3f", t[k].name, g->name, frac,
                          bl.lower_bound_us, r.makespan_us);
            ck_assert(bl.lower_bound_us >= b.lower_bound_us * (1 - 1e-6));
        }
        sa_plan_free(p);
        checked++;
    }
    sa_sim_ws_free(ws);
    return checked;
}

/* p's simulated makespan, asserted to be at least the LP bound for its own
 * schedule and memory (left in *b); what says which plan it is. */
static double makespan_above_lp(const sa_dfg_graph *g, const sa_plan *p, bound_result *b, const char *what)
{
    sa_err err = {0};
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    sa_sim_ws_free(ws);
    ck_assert_msg(bound_lp(g, &p->device, p->schedule, 0, b, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(b->lower_bound_us <= r.makespan_us, "%s: LP bound %.9f above the plan's %.9f", what,
                  b->lower_bound_us, r.makespan_us);
    return r.makespan_us;
}

/* The profile every graph here is planned for. */
static const char *const V100 = "profiles/v100-pcie3-16gb.json";

static sa_dfg_graph *zoo(const char *name, int64_t batch, int64_t seq)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    zoo_opts zo = {0};
    zo.batch = batch;
    zo.seq = seq;
    ck_assert_msg(zoo_build(name, &zo, &g, &err) == SA_OK, "%s", err.msg);
    return tu_profiled(g, V100, 0);
}

static const double FRACS[] = {1.0, 0.5, 0.25};

/* The bundled graphs, smallest first.  SA_BOUND_BUNDLED=N checks the first N
 * (`make test` all 3).  `make asan-test` checks vgg-11 alone: rnn-2-1k and
 * resnet-50 cost 9 minutes there, most of it in the LP and MILP solvers,
 * which the sanitizers do not instrument; every policy and both bounds still
 * run under them on vgg-11, the ladder and the zoo models above (an LSTM
 * among them), and the search on resnet-50 in test/cli/cases.tsv. */
static const char *const BUNDLED[] = {"graphs/vgg-11-b16.json", "graphs/rnn-2-1k.json", "graphs/resnet-50-b32.json"};

START_TEST(test_bound_below_every_policy_bundled)
{
    sa_dfg_graph *g = tu_bundled(BUNDLED[_i], V100, 0);
    int checked = 0;
    for (size_t f = 0; f < SA_ARRAY_LEN(FRACS); f++)
        checked += check_every_policy(g, FRACS[f]);
    ck_assert_int_gt(checked, 10);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_bound_below_every_policy_zoo)
{
    static const struct { const char *name; int64_t batch, seq; } M[] = {
        {"resnet-18", 4, 0}, {"gpt-2-256", 2, 4}, {"rnn-2-1k", 16, 4}, {"brnn-2-1k", 8, 4}};
    sa_dfg_graph *g = zoo(M[_i].name, M[_i].batch, M[_i].seq);
    int checked = 0;
    for (size_t f = 0; f < SA_ARRAY_LEN(FRACS); f++)
        checked += check_every_policy(g, FRACS[f]);
    ck_assert_int_gt(checked, 10);
    sa_dfg_free(g);
}
END_TEST

/* The ladder on the unit device, every memory from the peak down in 10 %
 * steps: the hand-built graph has ops of unequal times and tensors of unequal
 * sizes, so every term of the bound gets its turn. */
START_TEST(test_bound_below_every_policy_ladder)
{
    sa_dfg_graph *g = tu_ladder(6);
    g->has_device = true;
    g->device = tu_policy_dev(0);
    int checked = 0;
    for (double f = 1.0; f > 0.15; f -= 0.1)
        checked += check_every_policy(g, f);
    ck_assert_int_gt(checked, 30);
    sa_dfg_free(g);
}
END_TEST

/* By hand: the tiny graph (x 16 B input, w 32 B param, ops 1.5 + 1 + 1 + 1 us)
 * on a link of 16 B/us with 1 us latency.  With room for everything the bound
 * is the start term: x arrives after 1 + 1 us, then every op runs (6.5 us).
 * No plan does better: odswap's plan is checked against it. */
START_TEST(test_bound_by_hand)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    const char *js = tu_tiny_json();
    ck_assert_int_eq(sa_dfg_parse(js, strlen(js), "tiny", &g, &err), SA_OK);
    sa_dfg_device d = {"hand", 1 << 20, 16e6, 16e6, 32e6, 1.0, 0};
    bound_result b;
    ck_assert_int_eq(bound_cheap(g, &d, NULL, &b, &err), SA_OK);
    ck_assert(fabs(b.compute_us - 4.5) < 1e-12);
    ck_assert(fabs(b.start_us - 6.5) < 1e-12);
    ck_assert(fabs(b.forced_us - 2.0) < 1e-12);
    ck_assert(fabs(b.lower_bound_us - 6.5) < 1e-12);
    ck_assert_int_eq(b.max_excess, 0);
    ck_assert_str_eq(b.method, "combinatorial");
    /* memory for the largest op only (fc: x 16 + w 32 + y 16 + ws 8 = 72 B):
     * across loss, w and x are alive beside y and dy (80 B) */
    d.memory_bytes = 72;
    ck_assert_int_eq(bound_cheap(g, &d, NULL, &b, &err), SA_OK);
    ck_assert_int_gt(b.max_excess, 0);
    ck_assert(b.memory_us >= b.compute_us);
    /* below it no plan exists: the bound refuses, naming the op */
    ck_assert_int_eq(b.max_excess, 24); /* across fc_bw: dy, x, dw and w in 72 B */
    d.memory_bytes = 71;
    ck_assert_int_eq(bound_cheap(g, &d, NULL, &b, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "\"fc\"");
    sa_dfg_free(g);
}
END_TEST

/* A chain whose middle tensor must leave: x -> a (big) -> b -> loss, with a
 * read again at the end, in a memory that cannot hold a across the middle.
 * Its producer (1 us) is cheaper than its swap round trip, so the memory term
 * charges the recompute: 1 us on top of the compute. */
START_TEST(test_bound_memory_term_charges_the_cheapest_way)
{
    sa_dfg_graph *g = sa_dfg_new("chain");
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, 1000);
    int32_t a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, 1000000);
    int32_t b1 = sa_dfg_add_tensor(g, "b1", SA_DFG_ACTIVATION, 1000000);
    int32_t b2 = sa_dfg_add_tensor(g, "b2", SA_DFG_ACTIVATION, 1000000);
    int32_t c = sa_dfg_add_tensor(g, "c", SA_DFG_ACTIVATION, 1000);
    int32_t o0[] = {a}, i1[] = {a}, o1[] = {b1}, i2[] = {b1}, o2[] = {b2}, i3[] = {b2, a}, o3[] = {c}, i0[] = {x};
    sa_dfg_add_op(g, "f0", "relu", SA_DFG_FORWARD, i0, 1, o0, 1);
    sa_dfg_add_op(g, "f1", "relu", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "f2", "relu", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "f3", "add", SA_DFG_FORWARD, i3, 2, o3, 1);
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 1;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "chain", &err), SA_OK);
    /* f2 holds b1, b2; a is alive across it: 3 MB in 2.5 MB */
    sa_dfg_device d = {"hand", 2500000, 1e9, 1e9, 2e9, 0, 0};
    bound_result b;
    ck_assert_int_eq(bound_cheap(g, &d, NULL, &b, &err), SA_OK);
    ck_assert_int_eq(b.max_excess, 500000);
    /* half of a must go: recomputing it (1 us) beats moving it out and in
     * (1 ms each way); the covering is fractional, so half a recompute, less
     * the sliver of a swap the links hide behind the compute: the LP optimum
     * is T = 4.5 - s with 1 + 1000 s = T, s = 3.5 / 1001 */
    double lp = 4.5 - 3.5 / 1001;
    ck_assert_msg(b.memory_us >= lp - 1e-6 && b.memory_us <= lp + 1e-6, "memory term %.9f", b.memory_us);
    /* boundary: between f2 and f3, f3 reads a beside f2's b1 and b2: half of a
     * (0.5 MB) comes back in the window, by the cheaper recompute (1 us);
     * recomputes and swap-ins may share the window, so half of that */
    ck_assert_msg(fabs(b.boundary_us - 4.25) < 1e-9, "boundary term %.9f", b.boundary_us);
    if (bound_have_lp()) {
        bound_result bl;
        ck_assert_int_eq(bound_lp(g, &d, NULL, 0, &bl, &err), SA_OK);
        ck_assert_str_eq(bl.method, "lp");
        ck_assert(bl.lower_bound_us >= b.lower_bound_us - 1e-6 && bl.lower_bound_us <= 5 + 1e-6);
        ck_assert(fabs(bl.lower_bound_us - 5) < 1e-5); /* the start term (x, then four ops) floors it */
    }
    sa_dfg_free(g);
}
END_TEST

/* The boundary term prices one recompute per producer: p (1 us) makes t1, t2
 * and t3 (100 B each), which r reads after big fills all 1000 B; a valid
 * plan drops the three across big and recomputes p once: 13 us.  Priced per
 * tensor (1 us each, half of it as recomputes and swap-ins may share the
 * window) the bound said 13.5 us. */
START_TEST(test_bound_boundary_one_recompute_per_producer)
{
    static const char *gj =
        "{\"format\":\"dfg\",\"version\":1,\"name\":\"b3\",\"tensors\":["
        "{\"id\":0,\"name\":\"t1\",\"kind\":\"activation\",\"bytes\":100},"
        "{\"id\":1,\"name\":\"t2\",\"kind\":\"activation\",\"bytes\":100},"
        "{\"id\":2,\"name\":\"t3\",\"kind\":\"activation\",\"bytes\":100},"
        "{\"id\":3,\"name\":\"W\",\"kind\":\"workspace\",\"bytes\":1000},"
        "{\"id\":4,\"name\":\"y\",\"kind\":\"activation\",\"bytes\":100}],\"ops\":["
        "{\"id\":0,\"name\":\"p\",\"type\":\"relu\",\"phase\":\"forward\",\"inputs\":[],\"outputs\":[0,1,2],\"time_us\":1},"
        "{\"id\":1,\"name\":\"big\",\"type\":\"matmul\",\"phase\":\"forward\",\"inputs\":[],\"outputs\":[3],\"time_us\":10},"
        "{\"id\":2,\"name\":\"r\",\"type\":\"add\",\"phase\":\"forward\",\"inputs\":[0,1,2],\"outputs\":[4],\"time_us\":1}],"
        "\"control_deps\":[[0,1]]}";
    static const char *pj =
        "{\"format\":\"swapplan\",\"version\":1,\"graph\":{\"name\":\"b3\",\"ops\":3,\"tensors\":5},"
        "\"device\":{\"name\":\"hand\",\"memory_bytes\":1000,\"h2d_bytes_per_s\":1e9,\"d2h_bytes_per_s\":1e9,"
        "\"duplex_bytes_per_s\":2e9,\"transfer_latency_us\":10},\"arena_bytes\":1000,\"schedule\":[0,1,2],\"nodes\":["
        "{\"id\":0,\"kind\":\"compute\",\"op\":0,\"deps\":[]},{\"id\":1,\"kind\":\"compute\",\"op\":1,\"deps\":[]},"
        "{\"id\":2,\"kind\":\"recompute\",\"op\":0,\"deps\":[]},{\"id\":3,\"kind\":\"compute\",\"op\":2,\"deps\":[]}],"
        "\"placements\":[{\"tensor\":0,\"offset\":0,\"begin\":0,\"end\":0},{\"tensor\":1,\"offset\":256,\"begin\":0,\"end\":0},"
        "{\"tensor\":2,\"offset\":512,\"begin\":0,\"end\":0},{\"tensor\":3,\"offset\":0,\"begin\":1,\"end\":1},"
        "{\"tensor\":0,\"offset\":0,\"begin\":2,\"end\":3},{\"tensor\":1,\"offset\":256,\"begin\":2,\"end\":3},"
        "{\"tensor\":2,\"offset\":512,\"begin\":2,\"end\":3},{\"tensor\":4,\"offset\":768,\"begin\":3,\"end\":3}],"
        "\"resident_at_start\":[],\"predicted\":{\"iteration_us\":13,\"ideal_us\":12,\"compute_us\":13,\"stall_us\":0,"
        "\"h2d_bytes\":0,\"d2h_bytes\":0},\"search\":{\"algorithm\":\"hand\"}}";
    sa_dfg_graph *g;
    sa_plan *p;
    sa_err err = {0};
    ck_assert_msg(sa_dfg_parse(gj, strlen(gj), "b3", &g, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_plan_parse(pj, strlen(pj), "b3 plan", &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert(fabs(r.makespan_us - 13) < 1e-9);
    bound_result b;
    ck_assert_int_eq(bound_cheap(g, &p->device, p->schedule, &b, &err), SA_OK);
    ck_assert_msg(b.boundary_us <= r.makespan_us, "boundary term %.9f above the plan's %.9f", b.boundary_us,
                  r.makespan_us);
    ck_assert(b.lower_bound_us <= r.makespan_us);
    sa_sim_ws_free(ws);
    if (bound_have_lp())
        makespan_above_lp(g, p, &b, "b3");
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Many outputs alive at once: ten ops of eight outputs each, all read again in
 * the backward pass, so the two-way link's row holds two columns (P, Q) for
 * nearly every tensor -- more than tensors + ops + windows (it overran its
 * index arrays; the sanitizer builds catch a relapse).  The bound stays below
 * topo's plan. */
START_TEST(test_bound_lp_many_outputs)
{
    if (!bound_have_lp())
        return;
    enum { N = 10, W = 8 };
    sa_dfg_graph *g = sa_dfg_new("fan");
    int32_t prev = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, 256), fw[N][W];
    char name[32];
    for (int32_t j = 0; j < N; j++) {
        for (int32_t k = 0; k < W; k++) {
            snprintf(name, sizeof name, "a%d.%d", j, k);
            fw[j][k] = sa_dfg_add_tensor(g, name, SA_DFG_ACTIVATION, 256);
        }
        snprintf(name, sizeof name, "f%d", j);
        sa_dfg_add_op(g, name, "relu", SA_DFG_FORWARD, &prev, 1, fw[j], W);
        prev = fw[j][0];
    }
    int32_t gr = sa_dfg_add_tensor(g, "g", SA_DFG_GRADIENT, 256);
    sa_dfg_add_op(g, "loss", "relu", SA_DFG_FORWARD, fw[N - 1], W, &gr, 1);
    for (int32_t j = N - 1; j >= 0; j--) {
        int32_t in[W + 1];
        in[0] = gr;
        memcpy(in + 1, fw[j], sizeof fw[j]);
        snprintf(name, sizeof name, "d%d", j);
        gr = sa_dfg_add_tensor(g, name, SA_DFG_GRADIENT, 256);
        snprintf(name, sizeof name, "b%d", j);
        sa_dfg_add_op(g, name, "relu", SA_DFG_BACKWARD, in, W + 1, &gr, 1);
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 1;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "fan", &err), SA_OK);
    sa_dfg_device d = {"hand", 256 * 20, 1e9, 1e9, 2e9, 1, 0};
    sa_plan *p = NULL;
    ck_assert_msg(sa_policy_run("topo", g, &d, &p, &err) == SA_OK, "%s", err.msg);
    bound_result b;
    makespan_above_lp(g, p, &b, "fan");
    ck_assert(b.lower_bound_us > b.compute_us);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* The LP's time windows (docs/bound.md): a (1 MB) is made by f0, which also
 * updates the state s, so a cannot be recomputed; it must be gone across f1
 * and f2, which hold b (1.505 MB) in 1.51 MB.  Its swap-out (1000 us) can only
 * run between f0's end and f1, all within the first window (f0, f1, f2: 102 us
 * of compute), while its swap-in may hide behind f2b (2000 us).  Sixteen
 * windows of about equal compute give T >= 996 + 2000 + 1 us (0.996 of a
 * must go, the 8 B of s the rest); one window (the whole iteration) gives
 * only the start term, 2104 us.  Every plan of the table is at least as slow
 * as the bound for its own schedule (the search runs f0 late and needs no
 * swap-out). */
START_TEST(test_bound_lp_windows_see_when_a_swap_out_must_run)
{
    if (!bound_have_lp())
        return;
    sa_dfg_graph *g = sa_dfg_new("windows");
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, 1000);
    int32_t y = sa_dfg_add_tensor(g, "y", SA_DFG_INPUT, 1000);
    int32_t s = sa_dfg_add_tensor(g, "s", SA_DFG_STATE, 8);
    int32_t a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, 1000000);
    int32_t b = sa_dfg_add_tensor(g, "b", SA_DFG_ACTIVATION, 1505000);
    int32_t c = sa_dfg_add_tensor(g, "c", SA_DFG_ACTIVATION, 1000);
    int32_t e = sa_dfg_add_tensor(g, "e", SA_DFG_ACTIVATION, 1000);
    int32_t z = sa_dfg_add_tensor(g, "z", SA_DFG_ACTIVATION, 1000);
    int32_t i0[] = {x, s}, o0[] = {a, s}, i1[] = {y}, o1[] = {b}, i2[] = {b}, o2[] = {c}, i3[] = {c}, o3[] = {e};
    int32_t i4[] = {a, e}, o4[] = {z};
    sa_dfg_add_op(g, "f0", "step", SA_DFG_FORWARD, i0, 2, o0, 2);
    sa_dfg_add_op(g, "f1", "relu", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "f2", "relu", SA_DFG_FORWARD, i2, 1, o2, 1);
    sa_dfg_add_op(g, "f2b", "relu", SA_DFG_FORWARD, i3, 1, o3, 1);
    sa_dfg_add_op(g, "f3", "add", SA_DFG_FORWARD, i4, 2, o4, 1);
    const double times[] = {1, 1, 100, 2000, 1};
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = times[i];
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "windows", &err), SA_OK);
    sa_dfg_device d = {"hand", 1510000, 1e9, 1e9, 2e9, 0, 0};
    bound_result bl;
    ck_assert_int_eq(bound_lp(g, &d, NULL, 0, &bl, &err), SA_OK);
    ck_assert(fabs(bl.start_us - 2104) < 1e-9);
    ck_assert_msg(fabs(bl.lower_bound_us - 2997) < 1e-3, "LP bound %.9f", bl.lower_bound_us);
    ck_assert_int_eq(bl.lp_windows, 16);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.search.generations = 2;
    po.search.population = 8;
    po.search.threads = 1;
    po.optimal.time_limit_s = 5;
    po.optimal.refine_plans = 1000; /* these check the bound, not how far the refinement goes */
    int n, planned = 0;
    const sa_policy_def *t = sa_policy_table(&n);
    for (int k = 0; k < n; k++) {
        sa_plan *p = NULL;
        if (sa_policy_run_opts(t[k].name, g, &d, &po, &p, &err) != SA_OK)
            continue;
        if (p->device.memory_bytes == d.memory_bytes) { /* not ideal's unlimited memory */
            bound_result bp;
            makespan_above_lp(g, p, &bp, t[k].name);
            planned++;
        }
        sa_plan_free(p);
    }
    ck_assert_int_gt(planned, 0);
    sa_dfg_free(g);
}
END_TEST

/* bound_attach writes the block's fields after the policy's own. */
START_TEST(test_bound_attach)
{
    sa_dfg_graph *g = tu_ladder(3);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL));
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_OK);
    bound_result b;
    ck_assert_int_eq(bound_cheap(g, &p->device, p->schedule, &b, &err), SA_OK);
    ck_assert_int_eq(bound_attach(p, &b, &err), SA_OK);
    ck_assert_ptr_nonnull(strstr(p->search_json, "\"algorithm\":\"topo\""));
    ck_assert_ptr_nonnull(strstr(p->search_json, ",\"lower_bound_us\":"));
    ck_assert_ptr_nonnull(strstr(p->search_json, "\"bound_method\":\"combinatorial\""));
    char *js = NULL;
    ck_assert_int_eq(sa_plan_to_json(p, &js, &err), SA_OK);
    sa_plan *q = NULL;
    ck_assert_int_eq(sa_plan_parse(js, strlen(js), "re", &q, &err), SA_OK);
    free(js);
    sa_plan_free(q);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* The optimal rows: a valid plan (strict validation, simulation, host
 * replay) on resnet-18 (batch 16, 0.9x) where decide.h's decisions fit; the
 * MILP's status and gap in the search block; with a solver missing, a usage
 * refusal that names it. */
START_TEST(test_optimal_plans)
{
    sa_dfg_graph *g = zoo("resnet-18", 16, 0);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.optimal.time_limit_s = 20;
    po.search.generations = 2;
    po.search.population = 8;
    po.search.threads = 1;
    static const char *const ROWS[] = {"optimal", "optimal-search"};
    for (size_t r = 0; r < 2; r++) {
        sa_dfg_device d = g->device;
        d.memory_bytes = (int64_t)((double)sa_dfg_peak_bytes(g, NULL) * 0.9);
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run_opts(ROWS[r], g, &d, &po, &p, &err);
        if (!sa_milp_have(SA_MILP_AUTO)) {
            ck_assert_int_eq(st, SA_EUSAGE);
            ck_assert_msg_contains(err, "no");
            ck_assert_msg_contains(err, "solver");
            continue;
        }
        ck_assert_msg(st == SA_OK, "%s: %s", ROWS[r], err.msg);
        tu_check_policy_plan(p, g, ROWS[r], r == 0);
        if (r == 0) {
            ck_assert_ptr_nonnull(strstr(p->search_json, "\"milp_status\":\"optimal\""));
            ck_assert_ptr_nonnull(strstr(p->search_json, "\"swapped\":"));
        }
        /* the summary prints the distance to the bound once it is attached */
        bound_result b;
        ck_assert_int_eq(bound_cheap(g, &p->device, p->schedule, &b, &err), SA_OK);
        ck_assert_int_eq(bound_attach(p, &b, &err), SA_OK);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        ck_assert_int_eq(sa_emit_summary(p, g, f, &err), SA_OK);
        fclose(f);
        ck_assert_msg(strstr(buf, "lower bound (combinatorial) for this schedule and memory: within ") != NULL, "%s",
                      buf);
        free(buf);
        sa_plan_free(p);
    }
    for (sa_milp_backend mb = SA_MILP_CBC; mb <= SA_MILP_GLPK; mb++) {
        if (sa_milp_have(mb))
            continue;
        po.optimal.solver = mb;
        sa_dfg_device d = g->device;
        sa_plan *p = NULL;
        sa_err err = {0};
        ck_assert_int_eq(sa_policy_run_opts("optimal", g, &d, &po, &p, &err), SA_EUSAGE);
        ck_assert_msg_contains(err, mb == SA_MILP_CBC ? "no CBC MILP solver" : "no GLPK MILP solver");
        ck_assert_ptr_null(p);
    }
    sa_dfg_free(g);
}
END_TEST

/* Chains (docs/bound.md, "Recompute chains"): on resnet-50 b32 at 0.25x a
 * relu output the backward pass reads is rebuilt from the convolution's
 * output through the batchnorm output, which no later op reads.  Without
 * chains decide.h kept such an intermediate alive until the recompute, so
 * the MILP priced every batchnorm / relu recompute as if it saved nothing,
 * and optimal planned 219.3 ms; with them the plan recomputes intermediates
 * and runs under 182 ms. */
START_TEST(test_optimal_chains_rebuild_intermediates)
{
    /* resnet-50 is left out where SA_BOUND_BUNDLED keeps the bundled vgg-11
     * alone (the sanitizer build: the solvers' time, not our code's) */
    if (!sa_milp_have(SA_MILP_AUTO) || tu_env_count("SA_BOUND_BUNDLED", 3, 3) < 3)
        return;
    sa_dfg_graph *g = tu_bundled("graphs/resnet-50-b32.json", V100, 0);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.optimal.max_nodes = 200; /* the effort limit: no clock decides the plan */
    po.optimal.refine_plans = 1000;
    sa_dfg_device d = g->device;
    d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / 4;
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run_opts("optimal", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
    tu_check_policy_plan(p, g, "optimal", true);
    ck_assert_ptr_nonnull(strstr(p->search_json, "\"chains\":true"));
    ck_assert(p->arena_bytes <= d.memory_bytes);
    /* 181.1 ms under the effort limit, whose solves run without CBC's feasibility pump */
    ck_assert_msg(p->predicted.iteration_us < 182000.0, "%.1f us", p->predicted.iteration_us);
    /* a recompute of an op whose outputs no backward op reads */
    int rebuilt = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const sa_plan_node *nd = &p->nodes[v];
        if (nd->kind != SA_PLAN_RECOMPUTE)
            continue;
        const sa_dfg_op *o = &g->ops[nd->ref];
        bool later = false;
        for (int32_t k = 0; k < o->n_out; k++) {
            const sa_dfg_tensor *x = &g->tensors[o->out[k]];
            for (int32_t r = 0; r < x->n_readers; r++)
                later = later || g->ops[g->readers[x->reader_off + r]].phase != SA_DFG_FORWARD;
        }
        rebuilt += !later;
    }
    ck_assert_int_gt(rebuilt, 0);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* The bundled vgg-11 b16 (*d: its device at half its no-swap peak) and the
 * optimal rows' options under the effort limit, no clock deciding the plan:
 * 200 nodes, 1,000 refined plans (an eighth of them stops the first
 * refinement short of its end). */
static sa_dfg_graph *vgg11_half(sa_policy_opts *po, sa_dfg_device *d)
{
    sa_dfg_graph *g = tu_bundled("graphs/vgg-11-b16.json", V100, 0);
    sa_policy_opts_default(po);
    po->optimal.max_nodes = 200;
    po->optimal.refine_plans = 1000;
    *d = g->device;
    d->memory_bytes = sa_dfg_peak_bytes(g, NULL) / 2;
    return g;
}

/* The memory rows as running sums (opt_build_milp's sums, docs/bound.md) are
 * the same model as the direct rows with far fewer coefficients: on resnet-50
 * b32 at 0.25x (widened, with chains) their LP relaxations have the same
 * optimum, and on vgg-11 b16 at 0.5x (widened) so do the MILPs solved to
 * optimality. */
START_TEST(test_optimal_memory_sums_same_model)
{
    if (!sa_milp_have(SA_MILP_CBC))
        return;
    static const struct {
        const char *path;
        int div;
        unsigned space;
        bool relax;
    } cases[] = {{"graphs/resnet-50-b32.json", 4, OPT_WIDEN | OPT_CHAINS, true},
                 {"graphs/vgg-11-b16.json", 2, OPT_WIDEN, false}};
    for (size_t c = 0; c < SA_ARRAY_LEN(cases); c++) {
        sa_dfg_graph *g = tu_bundled(cases[c].path, V100, 0);
        sa_dfg_device d = g->device;
        d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / cases[c].div;
        octx o;
        sa_err err = {0};
        ck_assert_msg(opt_build_ctx(&o, g, &d, g->topo, cases[c].space, &err) == SA_OK, "%s", err.msg);
        double obj[2];
        int64_t nnz[2];
        for (int sums = 0; sums < 2; sums++) {
            sa_milp *m = NULL;
            ck_assert_msg(opt_build_milp(&o, d.memory_bytes, sums, &m, &err) == SA_OK, "%s", err.msg);
            nnz[sums] = sa_milp_n_nonzeros(m);
            sa_milp_opts mo = {.backend = SA_MILP_CBC, .rel_gap = 1e-9, .threads = 1, .relax = cases[c].relax};
            sa_milp_result r;
            ck_assert_msg(sa_milp_solve(m, &mo, &r, &err) == SA_OK, "%s", err.msg);
            ck_assert_int_eq(r.status, SA_MILP_OPTIMAL);
            obj[sums] = r.objective;
            sa_milp_result_free(&r);
            sa_milp_free(m);
        }
        ck_assert_msg(fabs(obj[1] - obj[0]) <= 1e-6 * fabs(obj[0]), "%s: %.6f with sums, %.6f without",
                      cases[c].path, obj[1], obj[0]);
        ck_assert_msg(nnz[1] < nnz[0], "%s: %lld coefficients with sums, %lld without", cases[c].path,
                      (long long)nnz[1], (long long)nnz[0]);
        opt_free_ctx(&o);
        sa_dfg_free(g);
    }
}
END_TEST

/* The refinement (docs/bound.md, "The optimal planner"): on vgg-11 b16 at 0.5x
 * the MILP's decisions simulate to 290.8 ms, and changing them one at a time
 * (and exchanging pairs, and moving the op that waits for a swap-out) against
 * the simulator reaches 255.2 ms, within 2 % of the MILP's bound.  fc6.w's
 * swap-out after its update (411 MB) is waited for by the last op only, so
 * the updates after it run beside it (the model has the next op wait).  The
 * plan reports both times, is valid (strict, host replay), fits the memory,
 * and is the same (nodes, arena, tries) with one thread and with two; a
 * refinement that stopped and went on tries what one that did not tries. */
START_TEST(test_optimal_refine_beats_the_milp_plan)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return;
    sa_policy_opts po;
    sa_dfg_device d;
    sa_dfg_graph *g = vgg11_half(&po, &d);
    sa_plan *p[2] = {NULL, NULL};
    sa_err err = {0};
    for (int k = 0; k < 2; k++) {
        po.search.threads = k + 1;
        ck_assert_msg(sa_policy_run_opts("optimal", g, &d, &po, &p[k], &err) == SA_OK, "%s", err.msg);
    }
    tu_check_policy_plan(p[0], g, "optimal", true);
    double milp_us = tu_json_num(p[0]->search_json, "\"milp_plan_us\":");
    long plans = tu_json_count(p[0]->search_json, "\"refine_plans\":");
    ck_assert_msg(p[0]->predicted.iteration_us < 0.97 * milp_us, "polished %.1f us, the MILP's plan %.1f us",
                  p[0]->predicted.iteration_us, milp_us);
    /* only the widened space without chains plans here: its refinement
     * stops at an eighth of the cap (125) and goes on from there, ending
     * after the 538 tries one refinement straight to the cap ends after
     * (593 when the solves ran CBC's feasibility pump) */
    ck_assert_int_eq(plans, 538);
    double bound_us = tu_json_num(p[0]->search_json, "\"milp_bound_us\":");
    /* 2.0 % above it without the pump (256.8 against 251.8 ms) */
    ck_assert_msg(p[0]->predicted.iteration_us <= 1.025 * bound_us, "%.1f us, the MILP's bound %.1f us",
                  p[0]->predicted.iteration_us, bound_us);
    int32_t w = -1, upd = -1, last = g->topo[g->n_ops - 1], waits = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        if (strcmp(g->tensors[t].name, "fc6.w") == 0)
            w = t;
    for (int32_t v = 0; v < p[0]->n_nodes; v++) {
        const sa_plan_node *nd = &p[0]->nodes[v];
        if (nd->kind == SA_PLAN_COMPUTE && strcmp(g->ops[nd->ref].name, "update/fc6.w") == 0)
            upd = v;
        if (nd->kind != SA_PLAN_COMPUTE || upd < 0)
            continue;
        for (int32_t k = 0; k < nd->n_deps; k++) {
            const sa_plan_node *dn = &p[0]->nodes[p[0]->deps[nd->dep_off + k]];
            if (dn->kind == SA_PLAN_SWAP_OUT && dn->ref == w && p[0]->deps[nd->dep_off + k] > upd) {
                ck_assert_msg(nd->ref == last, "%s waits for fc6.w's swap-out", g->ops[nd->ref].name);
                waits++;
            }
        }
    }
    ck_assert_int_ge(upd, 0);
    ck_assert_int_eq(waits, 1);
    ck_assert(p[0]->arena_bytes <= d.memory_bytes);
    ck_assert(p[0]->predicted.iteration_us == p[1]->predicted.iteration_us);
    ck_assert_int_eq(p[0]->n_nodes, p[1]->n_nodes);
    ck_assert_int_eq(p[0]->arena_bytes, p[1]->arena_bytes);
    for (int32_t v = 0; v < p[0]->n_nodes; v++)
        ck_assert(p[0]->nodes[v].kind == p[1]->nodes[v].kind && p[0]->nodes[v].ref == p[1]->nodes[v].ref);
    ck_assert_int_eq(tu_json_count(p[1]->search_json, "\"refine_plans\":"), plans);
    for (int k = 0; k < 2; k++)
        sa_plan_free(p[k]);
    sa_dfg_free(g);
}
END_TEST

/* optimal.sums (what the default effort's seeds ask for) builds the models of
 * a small graph with running sums too: on vgg-11 b16 at 0.5x under the seeds'
 * node limit the plan is valid, says so, fits, is the same on one thread and
 * two, and its MILP objective is the direct rows' within CBC's gap. */
START_TEST(test_optimal_sums_option)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return;
    sa_policy_opts po;
    sa_dfg_device d;
    sa_dfg_graph *g = vgg11_half(&po, &d);
    sa_plan *p[3] = {NULL, NULL, NULL};
    sa_err err = {0};
    for (int k = 0; k < 3; k++) { /* the direct rows; sums on 1 and 2 threads */
        po.optimal.sums = k > 0;
        po.search.threads = k == 2 ? 2 : 1;
        ck_assert_msg(sa_policy_run_opts("optimal", g, &d, &po, &p[k], &err) == SA_OK, "%s", err.msg);
        ck_assert(p[k]->arena_bytes <= d.memory_bytes);
        ck_assert_int_eq(strstr(p[k]->search_json, "\"sums\":true") != NULL, k > 0);
    }
    tu_check_policy_plan(p[1], g, "optimal with sums", true);
    double obj[2];
    for (int k = 0; k < 2; k++)
        obj[k] = tu_json_num(p[k]->search_json, "\"milp_objective_us\":");
    ck_assert_msg(fabs(obj[1] - obj[0]) <= 0.02 * obj[0], "objective %.1f with sums, %.1f without", obj[1], obj[0]);
    ck_assert(p[1]->predicted.iteration_us == p[2]->predicted.iteration_us);
    ck_assert_int_eq(p[1]->n_nodes, p[2]->n_nodes);
    for (int k = 0; k < 3; k++)
        sa_plan_free(p[k]);
    sa_dfg_free(g);
}
END_TEST

/* Under the effort limit, optimal.pump solves each space a second time with
 * CBC's feasibility pump and refines on the faster: on vgg-11 b16 at 0.5x
 * the pump's solution refines to 255.2 ms against 256.8 without.  The plan
 * says so, is valid and is the same with one thread and with two.  The
 * search row's optimal seed solves so under a generation count (its model,
 * 10 k positions x candidates, is within seed_milp.pump_cells), and without
 * the pump where pump_cells is 0. */
START_TEST(test_optimal_pump_portfolio)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return;
    sa_policy_opts po;
    sa_dfg_device d;
    sa_dfg_graph *g = vgg11_half(&po, &d);
    sa_plan *p[3];
    sa_err err = {0};
    for (int k = 0; k < 3; k++) { /* without the pump; with it on 1 and 2 threads */
        po.optimal.pump = k > 0;
        po.search.threads = k == 2 ? 2 : 1;
        p[k] = NULL;
        ck_assert_msg(sa_policy_run_opts("optimal", g, &d, &po, &p[k], &err) == SA_OK, "%s", err.msg);
        ck_assert(p[k]->arena_bytes <= d.memory_bytes);
        ck_assert_int_eq(strstr(p[k]->search_json, "\"pump\":true") != NULL, k > 0);
    }
    tu_check_policy_plan(p[1], g, "optimal with the pump", true);
    ck_assert_msg(p[1]->predicted.iteration_us < p[0]->predicted.iteration_us, "%.1f us with the pump, %.1f without",
                  p[1]->predicted.iteration_us, p[0]->predicted.iteration_us);
    double seed_us[2];
    for (int k = 0; k < 2; k++) {
        sa_policy_opts so;
        sa_policy_opts_default(&so);
        so.search.generations = 1;
        so.search.population = 8;
        so.optimal.refine_plans = 1000;
        so.seed_milp.pump_cells = k ? SA_POLICY_PUMP_MILP_CELLS : 0;
        sa_plan *sp = NULL;
        ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &so, &sp, &err) == SA_OK, "%s", err.msg);
        const char *row = strstr(sp->search_json, "\"policy\":\"optimal\",");
        ck_assert_ptr_nonnull(row);
        seed_us[k] = tu_json_num(row, "\"iteration_us\":");
        sa_plan_free(sp);
    }
    ck_assert_double_eq_tol(seed_us[0], p[0]->predicted.iteration_us, 1e-3);
    ck_assert_double_eq_tol(seed_us[1], p[1]->predicted.iteration_us, 1e-3);
    char *text[2] = {tu_plan_text(p[1]), tu_plan_text(p[2])};
    ck_assert_str_eq(text[0], text[1]);
    for (int k = 0; k < 3; k++)
        sa_plan_free(p[k]);
    free(text[0]);
    free(text[1]);
    sa_dfg_free(g);
}
END_TEST

/* The widened space where parameters and their gradients must leave the
 * device (resnet-18 b4 with momentum state at 0.6x of the no-swap peak,
 * gpt-4-512 b1 at 0.5x): optimal plans, the plan is valid (strict), replays on
 * the host with every persistent tensor read back equal to the reference,
 * swaps parameters (some written back after their update), and stays above
 * both bounds. */
/* A model too large for the MILP (positions x candidates past the limit)
 * is refused up front, quickly and with the reason, not built: nasnet-25
 * once ran the machine out of memory. */
START_TEST(test_optimal_refuses_huge_models)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return;
    sa_dfg_graph *g = tu_ladder(3000);
    tu_roofline_times(g);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) / 2);
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("optimal", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg_contains(err, "the MILP would span");
    ck_assert_msg_contains(err, "--bound=combinatorial");
    sa_dfg_free(g);
}
END_TEST

/* Past 4e6 coefficients in its memory rows (an 800-layer ladder at half its
 * peak) the LP bound is not built: the combinatorial bound stands, and says
 * so; a 40-layer ladder gets the LP. */
START_TEST(test_bound_lp_too_large_falls_back)
{
    if (!bound_have_lp())
        return;
    const int layers[] = {800, 40};
    for (int k = 0; k < 2; k++) {
        sa_dfg_graph *g = tu_ladder(layers[k]);
        tu_roofline_times(g);
        sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) / 2);
        bound_result b;
        sa_err err = {0};
        ck_assert_msg(bound_lp(g, &d, NULL, 0, &b, &err) == SA_OK, "%s", err.msg);
        ck_assert_str_eq(b.method, k == 0 ? "combinatorial" : "lp");
        ck_assert(k == 0 ? b.lp_windows == 0 : b.lp_windows > 0);
        ck_assert(b.lower_bound_us > b.compute_us);
        sa_dfg_free(g);
    }
}
END_TEST

START_TEST(test_optimal_widened)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    zoo_opts zo = {0};
    zo.batch = _i == 0 ? 4 : 1;
    zo.optimizer = _i == 0 ? ZOO_MOMENTUM : ZOO_SGD;
    ck_assert_msg(zoo_build(_i == 0 ? "resnet-18" : "gpt-4-512", &zo, &g, &err) == SA_OK, "%s", err.msg);
    tu_profiled(g, V100, 0);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.optimal.time_limit_s = 120; /* both take a few seconds (under ASan longer) */
    sa_dfg_device d = g->device;
    d.memory_bytes = (int64_t)((double)sa_dfg_peak_bytes(g, NULL) * (_i == 0 ? 0.6 : 0.5));
    sa_plan *p = NULL;
    sa_status st = sa_policy_run_opts("optimal", g, &d, &po, &p, &err);
    if (!sa_milp_have(SA_MILP_AUTO)) {
        ck_assert_int_eq(st, SA_EUSAGE);
        sa_dfg_free(g);
        return;
    }
    ck_assert_msg(st == SA_OK, "%s: %s", g->name, err.msg);
    tu_check_policy_plan(p, g, g->name, false);
    int32_t pers_in = 0, pers_out = 0, n_pers = 0;
    for (int32_t v = 0; v < p->n_nodes; v++)
        if (p->nodes[v].kind != SA_PLAN_COMPUTE && p->nodes[v].kind != SA_PLAN_RECOMPUTE &&
            sa_dfg_kind_persistent(g->tensors[p->nodes[v].ref].kind))
            p->nodes[v].kind == SA_PLAN_SWAP_IN ? pers_in++ : pers_out++;
    for (int32_t t = 0; t < g->n_tensors; t++)
        n_pers += sa_dfg_kind_persistent(g->tensors[t].kind);
    ck_assert_int_gt(pers_out, 0);
    ck_assert_int_ge(pers_in, pers_out);
    ck_assert_int_lt(p->n_res, n_pers);
    ck_assert_ptr_nonnull(strstr(p->search_json, "\"persistent_swapped\":"));
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    ro.cap_bytes = 64 << 20;
    sa_runner_report rr;
    ck_assert_msg(sa_runner_run(p, g, &ro, &rr, &err) == SA_OK, "%s replay: %s", g->name, err.msg);
    ck_assert_int_eq(rr.verified_persistent, n_pers);
    ck_assert_int_gt(rr.verified_checksums, 0);
    sa_runner_report_free(&rr);
    bound_result b;
    ck_assert_int_eq(bound_cheap(g, &p->device, p->schedule, &b, &err), SA_OK);
    ck_assert(b.lower_bound_us <= p->predicted.iteration_us * (1 + 1e-9));
    if (bound_have_lp()) {
        ck_assert_int_eq(bound_lp(g, &p->device, p->schedule, 0, &b, &err), SA_OK);
        ck_assert(b.lower_bound_us <= p->predicted.iteration_us * (1 + 1e-9));
    }
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Both solvers the build has agree on a small MILP's optimum (a knapsack
 * whose LP relaxation is fractional) and on its LP relaxation. */
START_TEST(test_milp_backends_agree)
{
    for (sa_milp_backend mb = SA_MILP_CBC; mb <= SA_MILP_GLPK; mb++) {
        if (!sa_milp_have(mb))
            continue;
        sa_milp *m = sa_milp_new();
        /* max 5a + 4b + 3c st 2a + 3b + c <= 4, binaries: a + c = 8 (a=1, c=1) */
        int32_t a = sa_milp_add_col(m, 0, 1, -5, true), b = sa_milp_add_col(m, 0, 1, -4, true);
        int32_t c = sa_milp_add_col(m, 0, 1, -3, true);
        int32_t ix[3] = {a, b, c};
        double v[3] = {2, 3, 1};
        ck_assert(sa_milp_add_row(m, -HUGE_VAL, 4, 3, ix, v));
        sa_milp_opts o = {mb, 10, 0, 1, false, 0, false, 0};
        sa_milp_result r;
        sa_err err = {0};
        ck_assert_int_eq(sa_milp_solve(m, &o, &r, &err), SA_OK);
        ck_assert_int_eq(r.status, SA_MILP_OPTIMAL);
        ck_assert(fabs(r.objective + 8) < 1e-6);
        ck_assert(fabs(r.x[a] - 1) < 1e-6 && fabs(r.x[b]) < 1e-6 && fabs(r.x[c] - 1) < 1e-6);
        sa_milp_result_free(&r);
        o.relax = true; /* LP: a = 1, c = 1, b = 1/3: -8 - 4/3 */
        ck_assert_int_eq(sa_milp_solve(m, &o, &r, &err), SA_OK);
        ck_assert_int_eq(r.status, SA_MILP_OPTIMAL);
        ck_assert_msg(fabs(r.objective + 8 - -4.0 / 3) < 1e-6 || fabs(r.objective + 8 + 4.0 / 3) < 1e-6, "%.9f",
                      r.objective);
        sa_milp_result_free(&r);
        /* infeasible: a >= 2 */
        int32_t one[1] = {a};
        double vone[1] = {1};
        ck_assert(sa_milp_add_row(m, 2, HUGE_VAL, 1, one, vone));
        o.relax = false;
        ck_assert_int_eq(sa_milp_solve(m, &o, &r, &err), SA_OK);
        ck_assert_int_eq(r.status, SA_MILP_INFEASIBLE);
        ck_assert_ptr_null(r.x);
        sa_milp_free(m);
    }
}
END_TEST

/* Every option sa_milp_solve hands CBC by name (threads, the pump's passes,
 * the pump off) is one CBC knows: an unknown name is not an error there, only
 * a "No match for NAME" line on stdout, and the solve runs without it. */
START_TEST(test_cbc_knows_every_parameter_named)
{
    if (!sa_milp_have(SA_MILP_CBC))
        return;
    sa_milp *m = sa_milp_new();
    int32_t ix[3];
    double obj[3] = {-5, -4, -3}, v[3] = {2, 3, 1};
    for (int i = 0; i < 3; i++)
        ix[i] = sa_milp_add_col(m, 0, 1, obj[i], true);
    ck_assert(sa_milp_add_row(m, -HUGE_VAL, 4, 3, ix, v));
    /* threads, max_nodes and passF set; then the pump off ("feas") */
    sa_milp_opts set[2] = {{SA_MILP_CBC, 10, 0, 2, false, 5, false, 3}, {SA_MILP_CBC, 10, 0, 1, false, 5, true, 0}};
    for (int k = 0; k < 2; k++) {
        FILE *cap = tmpfile();
        ck_assert_ptr_nonnull(cap);
        fflush(stdout);
        int saved = dup(STDOUT_FILENO);
        ck_assert(saved >= 0 && dup2(fileno(cap), STDOUT_FILENO) >= 0);
        sa_milp_result r;
        sa_err err = {0};
        sa_status st = sa_milp_solve(m, &set[k], &r, &err);
        fflush(stdout);
        ck_assert(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        ck_assert_int_eq(st, SA_OK);
        ck_assert_int_eq(r.status, SA_MILP_OPTIMAL);
        ck_assert(fabs(r.objective + 8) < 1e-6);
        sa_milp_result_free(&r);
        char out[4096] = "";
        rewind(cap);
        size_t n = fread(out, 1, sizeof out - 1, cap);
        out[n] = '\0';
        fclose(cap);
        ck_assert_msg(!strstr(out, "No match"), "options %d: CBC said: %s", k, out);
    }
    sa_milp_free(m);
}
END_TEST

Suite *suite_bound(void)
{
    Suite *s = suite_create("bound");
    /* the hand-built cases alone: CK_RUN_CASE=hand */
    TCase *th = tcase_create("hand");
    tcase_set_timeout(th, 120);
    tcase_add_test(th, test_bound_by_hand);
    tcase_add_test(th, test_bound_boundary_one_recompute_per_producer);
    tcase_add_test(th, test_bound_lp_many_outputs);
    tcase_add_test(th, test_bound_lp_too_large_falls_back);
    tcase_add_test(th, test_bound_memory_term_charges_the_cheapest_way);
    tcase_add_test(th, test_bound_lp_windows_see_when_a_swap_out_must_run);
    tcase_add_test(th, test_bound_attach);
    tcase_add_test(th, test_cbc_knows_every_parameter_named);
    suite_add_tcase(s, th);
    TCase *tr = tcase_create("refine");
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, test_optimal_refine_beats_the_milp_plan);
    tcase_add_test(tr, test_optimal_pump_portfolio);
    tcase_add_test(tr, test_optimal_chains_rebuild_intermediates);
    tcase_add_test(tr, test_optimal_memory_sums_same_model);
    tcase_add_test(tr, test_optimal_sums_option);
    suite_add_tcase(s, tr);
    TCase *tc = tcase_create("bound");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_optimal_plans);
    tcase_add_loop_test(tc, test_optimal_widened, 0, 2);
    tcase_add_test(tc, test_optimal_refuses_huge_models);
    tcase_add_test(tc, test_milp_backends_agree);
    tcase_add_test(tc, test_bound_below_every_policy_ladder);
    tcase_add_loop_test(tc, test_bound_below_every_policy_zoo, 0, 4);
    int n_bundled = tu_env_count("SA_BOUND_BUNDLED", (int)SA_ARRAY_LEN(BUNDLED), (int)SA_ARRAY_LEN(BUNDLED));
    tcase_add_loop_test(tc, test_bound_below_every_policy_bundled, 0, n_bundled);
    suite_add_tcase(s, tc);
    return s;
}
