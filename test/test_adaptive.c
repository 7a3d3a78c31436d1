/* test_adaptive.c - the profile-guided policies (autoswap, capuchin, pooch)
 * and the Bayesian optimiser behind autoswap: valid plans (strict, simulated,
 * one with recomputation replayed on the host) below the no-swap peak, clear
 * refusals, a deterministic optimiser. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policies/adaptive_internal.h"
#include "swapadvisor/bayesopt.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/validate.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

static const char *const ADAPT[] = {"autoswap", "capuchin", "pooch"};

static int32_t count_kind(const sa_plan *p, sa_plan_kind k)
{
    int32_t n = 0;
    for (int32_t i = 0; i < p->n_nodes; i++)
        n += p->nodes[i].kind == k;
    return n;
}

START_TEST(test_adaptive_plan_the_ladder)
{
    sa_dfg_graph *g = tu_ladder(8);
    for (size_t i = 0; i < SA_ARRAY_LEN(ADAPT); i++) {
        double f = tu_plan_lowest(g, ADAPT[i], 0.3, false);
        ck_assert_msg(f < 0.95, "%s needs %.2f of the no-swap peak", ADAPT[i], f);
    }
    sa_dfg_free(g);
}
END_TEST

/* With room for everything none of them moves a byte (pooch used to start
 * from everything swapped and keep only what its search put back). */
START_TEST(test_adaptive_keep_everything_when_it_fits)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_dfg_device d = tu_policy_dev(4 * sa_dfg_peak_bytes(g, NULL));
    sa_err err = {0};
    for (size_t i = 0; i < SA_ARRAY_LEN(ADAPT); i++) {
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run(ADAPT[i], g, &d, &p, &err) == SA_OK, "%s: %s", ADAPT[i], err.msg);
        tu_check_policy_plan(p, g, ADAPT[i], false);
        /* the only transfers: the iteration's inputs coming in once */
        int32_t moved = count_kind(p, SA_PLAN_SWAP_OUT) + count_kind(p, SA_PLAN_RECOMPUTE);
        for (int32_t n = 0; n < p->n_nodes; n++)
            moved += p->nodes[n].kind == SA_PLAN_SWAP_IN && g->tensors[p->nodes[n].ref].kind != SA_DFG_INPUT;
        ck_assert_msg(moved == 0, "%s moves %d tensors with room for all of them", ADAPT[i], moved);
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_adaptive_plan_a_zoo_model)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 4);
    for (size_t i = 0; i < SA_ARRAY_LEN(ADAPT); i++) {
        double f = tu_plan_lowest(g, ADAPT[i], 0.4, false);
        ck_assert_msg(f < 0.95, "%s needs %.2f of the no-swap peak", ADAPT[i], f);
    }
    sa_dfg_free(g);
}
END_TEST

/* capuchin or pooch recompute somewhere on the small resnet (where the
 * link is slow against the ops: recomputing beats swapping); such a plan
 * replays on the host. */
START_TEST(test_adaptive_recompute_replays)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 4);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    bool found = false;
    for (int pi = 1; pi <= 2 && !found; pi++)
        for (double f = 0.85; f < 1.0 && !found; f += 0.05) {
            sa_dfg_device d = tu_policy_dev((int64_t)((double)peak * f));
            sa_plan *p = NULL;
            sa_err err = {0};
            if (sa_policy_run(ADAPT[pi], g, &d, &p, &err) != SA_OK)
                continue;
            if (count_kind(p, SA_PLAN_RECOMPUTE) > 0) {
                char what[96];
                snprintf(what, sizeof what, "%s at %.2f (recomputes)", ADAPT[pi], f);
                tu_check_policy_plan(p, g, what, true);
                found = true;
            }
            sa_plan_free(p);
        }
    ck_assert_msg(found, "neither capuchin nor pooch recomputed anything");
    sa_dfg_free(g);
}
END_TEST

/* Under an effort budget (the search's seeds) autoswap's optimiser and
 * pooch's rounds stop improving once it is spent and still plan; a rule
 * with nothing to improve refuses a build past twice the budget, naming
 * the limit. */
START_TEST(test_adaptive_stop_at_the_effort_budget)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 4);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) * 9 / 10);
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    sa_plan *full[2] = {NULL, NULL}, *cut[2] = {NULL, NULL};
    sa_err err = {0};
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "pooch" : "autoswap";
        po.rule_work_max = 0;
        ck_assert_msg(sa_policy_run_opts(name, g, &d, &po, &full[i], &err) == SA_OK, "%s: %s", name, err.msg);
        po.rule_work_max = 200.0 * (g->n_ops + g->n_tensors); /* some builds: past the first plan */
        ck_assert_msg(sa_policy_run_opts(name, g, &d, &po, &cut[i], &err) == SA_OK, "%s: %s", name, err.msg);
        tu_check_policy_plan(cut[i], g, name, true);
        ck_assert(cut[i]->predicted.iteration_us >= full[i]->predicted.iteration_us);
    }
    ck_assert_int_lt(tu_json_count(cut[0]->search_json, "\"plans_built\":"),
                     tu_json_count(full[0]->search_json, "\"plans_built\":"));
    ck_assert_int_lt(tu_json_count(cut[1]->search_json, "\"leaves\":"),
                     tu_json_count(full[1]->search_json, "\"leaves\":"));
    po.rule_work_max = 1;
    sa_plan *p = NULL;
    ck_assert_int_eq(sa_policy_run_opts("tflms", g, &d, &po, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "tflms: stopped after");
    ck_assert_msg_contains(err, "effort limit");
    for (int i = 0; i < 2; i++) {
        sa_plan_free(full[i]);
        sa_plan_free(cut[i]);
    }
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_adaptive_refuse_with_reasons)
{
    sa_dfg_graph *g = tu_ladder(6);
    int64_t pers = sa_dfg_persistent_bytes(g);
    sa_err err = {0};
    sa_plan *p = NULL;
    tu_refuse_below_params(g, ADAPT, SA_ARRAY_LEN(ADAPT));
    sa_dfg_device d = tu_policy_dev(pers + pers / 20);
    ck_assert_int_eq(sa_policy_run_unchecked("autoswap", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "autoswap: even swapping all");
    ck_assert_msg_contains(err, "across the peak");
    ck_assert_int_eq(sa_policy_run_unchecked("capuchin", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "capuchin: even evicting all");
    ck_assert_int_eq(sa_policy_run_unchecked("pooch", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "pooch: even swapping all");
    ck_assert_ptr_null(p);
    char names[512];
    ck_assert_ptr_nonnull(strstr(sa_policy_names(names, sizeof names), "autoswap, capuchin, pooch"));
    sa_dfg_free(g);
}
END_TEST

static sa_status bowl(const double *x, void *ctx, double *y, sa_err *err)
{
    (void)err;
    int *calls = ctx;
    (*calls)++;
    *y = (x[0] - 0.3) * (x[0] - 0.3) + (x[1] + 0.5) * (x[1] + 0.5) + 0.1 * x[2] * x[2];
    return SA_OK;
}

/* Same seed, same points; the optimiser improves on its random start and
 * lands near the bowl's minimum; the GP interpolates what it saw. */
START_TEST(test_bayesopt_deterministic)
{
    bo_opts o;
    bo_opts_default(&o, 3);
    o.budget = 24;
    o.seed = 7;
    double x1[24 * 3], y1[24], x2[24 * 3], y2[24], bx[3], by;
    int32_t n1, n2;
    int calls = 0;
    sa_err err = {0};
    ck_assert_int_eq(bo_minimize(&o, bowl, &calls, bx, &by, x1, y1, &n1, &err), SA_OK);
    ck_assert_int_eq(bo_minimize(&o, bowl, &calls, bx, &by, x2, y2, &n2, &err), SA_OK);
    ck_assert_int_eq(n1, 24);
    ck_assert_int_eq(calls, 48);
    ck_assert_mem_eq(x1, x2, sizeof x1);
    ck_assert_mem_eq(y1, y2, sizeof y1);
    double best_random = HUGE_VAL;
    for (int i = 0; i < o.n_random; i++)
        best_random = y1[i] < best_random ? y1[i] : best_random;
    ck_assert_msg(by < best_random && by < 0.05, "best %.4f, random start %.4f", by, best_random);
    o.seed = 8;
    ck_assert_int_eq(bo_minimize(&o, bowl, &calls, bx, &by, x2, y2, &n2, &err), SA_OK);
    ck_assert(memcmp(x1, x2, sizeof x1) != 0);
    double mu, sg;
    ck_assert_int_eq(bo_gp_predict(&o, x1, y1, 24, x1 + 3, &mu, &sg, &err), SA_OK);
    ck_assert(fabs(mu - y1[1]) < 0.05);
    ck_assert(sg < 0.05);
    o.budget = 0;
    ck_assert_int_eq(bo_minimize(&o, bowl, &calls, bx, &by, NULL, NULL, NULL, &err), SA_EUSAGE);
}
END_TEST

/* AutoSwap's SWDOA by the lazy heap (swdoa.c) against the greedy it
 * replaced: the largest load area between the accesses picked, its absence
 * taken off the load, the prefix sums rebuilt, again.  Integer durations,
 * loads and sizes keep both sums exact, so ties fall the same way. */
START_TEST(test_swdoa_matches_the_greedy)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        rng r;
        rng_seed(&r, seed, 3, 5);
        int32_t n = 2 + (int32_t)rng_below(&r, seed % 5 ? 60 : 600), nc = 1 + (int32_t)rng_below(&r, 80);
        double *dur = calloc((size_t)n, sizeof *dur), *load = calloc((size_t)n, sizeof *load);
        double *pre = calloc((size_t)n + 1, sizeof *pre), *w0 = calloc((size_t)nc, sizeof *w0);
        double *want = calloc((size_t)nc, sizeof *want), *got = calloc((size_t)nc * 2, sizeof *got);
        ad_cinfo *c = calloc((size_t)nc, sizeof *c);
        uint8_t *taken = calloc((size_t)nc, 1);
        ck_assert(dur && load && pre && w0 && want && got && c && taken);
        for (int32_t p = 0; p < n; p++) {
            dur[p] = (double)rng_below(&r, 4); /* zero-length positions too */
            load[p] = (double)(1000 + rng_below(&r, 1000));
        }
        for (int32_t i = 0; i < nc; i++) {
            c[i].lf = (int32_t)rng_below(&r, (uint64_t)n - 1);
            c[i].nx = c[i].lf + 1 + (int32_t)rng_below(&r, (uint64_t)(n - c[i].lf - 1));
            c[i].a = c[i].lf + 1 + (int32_t)rng_below(&r, 3);
            c[i].b = c[i].nx - 1 - (int32_t)rng_below(&r, 3); /* a > b: no absence */
            c[i].bytes = (double)(1 + rng_below(&r, seed % 2 ? 4 : 900)); /* many ties, or few */
        }
        for (int32_t rank = 0; rank <= nc; rank++) {
            pre[0] = 0;
            for (int32_t p = 0; p < n; p++)
                pre[p + 1] = pre[p] + load[p] * dur[p];
            if (rank == 0)
                for (int32_t i = 0; i < nc; i++)
                    w0[i] = pre[c[i].nx] - pre[c[i].lf + 1];
            if (rank == nc)
                break;
            int32_t bi = -1;
            double bw = 0;
            for (int32_t i = 0; i < nc; i++) {
                double w = pre[c[i].nx] - pre[c[i].lf + 1];
                if (!taken[i] && (bi < 0 || w > bw)) {
                    bi = i;
                    bw = w;
                }
            }
            taken[bi] = 1;
            want[bi] = nc - rank;
            for (int32_t p = c[bi].a; p <= c[bi].b; p++)
                load[p] -= c[bi].bytes;
        }
        sa_err err = {0};
        rctx rc = {.name = "autoswap", .err = &err};
        ck_assert_int_eq(ad_swdoa(&rc, n, dur, w0, nc, c, got + 1, 2), SA_OK);
        for (int32_t i = 0; i < nc; i++)
            ck_assert_msg(got[2 * i + 1] == want[i], "seed %llu: candidate %d ranked %.0f, the greedy %.0f",
                          (unsigned long long)seed, i, got[2 * i + 1], want[i]);
        free(dur);
        free(load);
        free(pre);
        free(w0);
        free(want);
        free(got);
        free(c);
        free(taken);
    }
}
END_TEST

Suite *suite_adaptive(void)
{
    Suite *s = suite_create("adaptive");
    TCase *tc = tcase_create("adaptive");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_adaptive_plan_the_ladder);
    tcase_add_test(tc, test_adaptive_keep_everything_when_it_fits);
    tcase_add_test(tc, test_adaptive_plan_a_zoo_model);
    tcase_add_test(tc, test_adaptive_recompute_replays);
    tcase_add_test(tc, test_adaptive_refuse_with_reasons);
    tcase_add_test(tc, test_bayesopt_deterministic);
    tcase_add_test(tc, test_swdoa_matches_the_greedy);
    tcase_add_test(tc, test_adaptive_stop_at_the_effort_budget);
    suite_add_tcase(s, tc);
    return s;
}
