/* test_baselines.c - the rule-based policies (smartpool, vdnn, tflms,
 * checkpoint-sqrt, superneurons, memory-budget, dtr, and the house's hybrid): valid plans (strict, simulated, replayed on
 * the host) where they apply, clear refusals where they do not. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/cost.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/validate.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

static const char *const RULES[] = {"smartpool",    "vdnn",   "tflms",         "checkpoint-sqrt",
                                    "superneurons", "hybrid", "memory-budget", "dtr"};

START_TEST(test_rules_plan_the_ladder)
{
    sa_dfg_graph *g = tu_ladder(8);
    double low[SA_ARRAY_LEN(RULES)];
    for (size_t i = 0; i < SA_ARRAY_LEN(RULES); i++)
        low[i] = tu_plan_lowest(g, RULES[i], 0.3, true);
    /* smartpool does not swap: it needs about the whole peak; the others less */
    ck_assert(low[0] >= 0.95);
    for (size_t i = 1; i < SA_ARRAY_LEN(RULES); i++)
        ck_assert_msg(low[i] < low[0], "%s needs %.2f of the peak, smartpool %.2f", RULES[i], low[i], low[0]);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_rules_plan_a_zoo_model)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 4);
    for (size_t i = 0; i < SA_ARRAY_LEN(RULES); i++) {
        double f = tu_plan_lowest(g, RULES[i], 0.4, i == 3);
        ck_assert(f <= 1.1);
    }
    sa_dfg_free(g);
}
END_TEST

/* The house's hybrid rule on a CNN at 0.6x and 0.8x of its peak: it
 * recomputes the cheap layers (batchnorm, ReLU) in bounded chains, its plans
 * validate and replay, and it is no slower than the two rules that also
 * recompute (superneurons, checkpoint-sqrt) wherever they plan (at 0.6x
 * neither does). */
START_TEST(test_hybrid_recomputes_cheap_layers)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 32);
    sa_err err = {0};
    int compared = 0;
    for (double frac = 0.6; frac < 0.95; frac += 0.2) {
        sa_dfg_device d = tu_policy_dev((int64_t)((double)sa_dfg_peak_bytes(g, NULL) * frac));
        sa_plan *h = NULL;
        ck_assert_msg(sa_policy_run("hybrid", g, &d, &h, &err) == SA_OK, "%.1fx: %s", frac, err.msg);
        tu_check_policy_plan(h, g, "hybrid on resnet-18", true);
        int32_t cheap = 0;
        for (int32_t n = 0; n < h->n_nodes; n++)
            if (h->nodes[n].kind == SA_PLAN_RECOMPUTE) {
                const char *ty = g->ops[h->nodes[n].ref].type;
                ck_assert_str_ne(ty, "batchnorm_stats");
                cheap += !strcmp(ty, "batchnorm") || !strcmp(ty, "relu");
            }
        ck_assert_int_gt(cheap, 0);
        ck_assert_ptr_nonnull(strstr(h->search_json, "\"max_chain\""));
        const char *others[] = {"superneurons", "checkpoint-sqrt"};
        for (size_t i = 0; i < SA_ARRAY_LEN(others); i++) {
            sa_plan *p = NULL;
            sa_status st = sa_policy_run(others[i], g, &d, &p, &err);
            ck_assert_msg(st == SA_OK || st == SA_EINFEASIBLE, "%s: %s", others[i], err.msg);
            if (st == SA_OK) {
                compared++;
                ck_assert_msg(h->predicted.iteration_us <= p->predicted.iteration_us, "%.1fx: hybrid %.1f us, %s %.1f us",
                              frac, h->predicted.iteration_us, others[i], p->predicted.iteration_us);
            }
            sa_plan_free(p);
        }
        sa_plan_free(h);
    }
    ck_assert_int_gt(compared, 0);
    sa_dfg_free(g);
}
END_TEST

/* Where everything kept fits, hybrid plans it in one build and says so: its
 * search block carries "kept_all" and none of a combination's knobs. */
START_TEST(test_hybrid_reports_kept_all)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 4);
    sa_dfg_device d = tu_policy_dev(2 * sa_dfg_peak_bytes(g, NULL));
    sa_plan *h = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run("hybrid", g, &d, &h, &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(h->search_json, "\"kept_all\":true"));
    ck_assert_ptr_nonnull(strstr(h->search_json, "\"builds\":1,"));
    ck_assert_ptr_null(strstr(h->search_json, "\"max_chain\""));
    ck_assert_ptr_null(strstr(h->search_json, "\"recompute_below_us_per_mb\""));
    sa_plan_free(h);
    /* below the peak a combination wins and its knobs are reported */
    d = tu_policy_dev((int64_t)(0.8 * (double)sa_dfg_peak_bytes(g, NULL)));
    ck_assert_msg(sa_policy_run("hybrid", g, &d, &h, &err) == SA_OK, "%s", err.msg);
    ck_assert_ptr_null(strstr(h->search_json, "\"kept_all\""));
    ck_assert_ptr_nonnull(strstr(h->search_json, "\"max_chain\""));
    sa_plan_free(h);
    sa_dfg_free(g);
}
END_TEST

/* Refusals name the policy and the reason, with the numbers. */
START_TEST(test_rules_refuse_with_reasons)
{
    sa_dfg_graph *g = tu_ladder(6);
    int64_t peak = sa_dfg_peak_bytes(g, NULL), pers = sa_dfg_persistent_bytes(g);
    sa_err err = {0};
    sa_plan *p = NULL;
    sa_dfg_device d = tu_policy_dev(peak / 2);
    ck_assert_int_eq(sa_policy_run("smartpool", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "smartpool: the packed arena needs");
    ck_assert_msg_contains(err, "competitive ratio");
    ck_assert_msg_contains(err, "does not swap");
    /* below the parameters: every one of them refuses, naming why (called
     * past sa_policy_run's check that each op's own tensors fit, which the
     * ladder's small weights would trip first) */
    tu_refuse_below_params(g, RULES, SA_ARRAY_LEN(RULES));
    /* just above the parameters: too little for the activations */
    d = tu_policy_dev(pers + pers / 20);
    ck_assert_int_eq(sa_policy_run_unchecked("checkpoint-sqrt", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "checkpoints");
    ck_assert_int_eq(sa_policy_run_unchecked("tflms", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg_contains(err, "even swapping every activation");
    ck_assert_int_eq(sa_policy_run("no-such", g, &d, &p, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "superneurons");
    sa_dfg_free(g);
}
END_TEST

/* memory-budget: nothing recomputed where everything fits with room to
 * spare; below that it recomputes, every plan strictly valid and replayed,
 * never a swap. */
START_TEST(test_memory_budget_recomputes_as_memory_falls)
{
    sa_dfg_graph *g = tu_zoo_roofline("resnet-18", 32);
    sa_err err = {0};
    int32_t last = -1;
    const double fracs[] = {1.2, 0.95, 0.85};
    for (size_t i = 0; i < SA_ARRAY_LEN(fracs); i++) {
        double frac = fracs[i];
        sa_dfg_device d = tu_policy_dev((int64_t)((double)sa_dfg_peak_bytes(g, NULL) * frac));
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run("memory-budget", g, &d, &p, &err) == SA_OK, "%.1fx: %s", frac, err.msg);
        tu_check_policy_plan(p, g, "memory-budget on resnet-18", true);
        int32_t rc = 0;
        for (int32_t n = 0; n < p->n_nodes; n++) {
            rc += p->nodes[n].kind == SA_PLAN_RECOMPUTE;
            ck_assert(p->nodes[n].kind != SA_PLAN_SWAP_OUT);
        }
        if (i == 0)
            ck_assert_int_eq(rc, 0);
        else
            ck_assert_msg(rc > 0, "%.1fx: no recompute (%d at the memory above)", frac, last);
        ck_assert_ptr_nonnull(strstr(p->search_json, "\"solver\":\"dp\""));
        last = rc;
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

/* dtr's plan at frac of g's peak: valid (strict, simulated; replayed when
 * replay), nothing swapped but the inputs, the heuristic named; *rc gets
 * the recompute nodes.  NULL where dtr refuses (err then names it). */
static sa_plan *dtr_plan_at(const sa_dfg_graph *g, double frac, bool replay, int32_t *rc, sa_err *err)
{
    sa_dfg_device d = tu_policy_dev((int64_t)((double)sa_dfg_peak_bytes(g, NULL) * frac));
    sa_plan *p = NULL;
    if (sa_policy_run("dtr", g, &d, &p, err) != SA_OK)
        return NULL;
    tu_check_policy_plan(p, g, "dtr", replay);
    *rc = 0;
    for (int32_t n = 0; n < p->n_nodes; n++) {
        *rc += p->nodes[n].kind == SA_PLAN_RECOMPUTE;
        ck_assert(p->nodes[n].kind != SA_PLAN_SWAP_OUT);
        if (p->nodes[n].kind == SA_PLAN_SWAP_IN)
            ck_assert_int_eq(g->tensors[p->nodes[n].ref].kind, SA_DFG_INPUT);
    }
    ck_assert_ptr_nonnull(strstr(p->search_json, "\"heuristic\":\"h_dtr_eq\""));
    return p;
}

/* dtr on a zoo model: nothing recomputed with memory to spare; at 0.5x and
 * 0.25x of the peak valid plans that recompute, more at the lower memory;
 * the same plan on every run. */
START_TEST(test_dtr_plans_a_zoo_model)
{
    sa_dfg_graph *g = tu_zoo_roofline("inception-1", 32);
    sa_err err = {0};
    int32_t rc[3];
    const double fracs[] = {2.0, 0.5, 0.25};
    char *first = NULL;
    for (size_t i = 0; i < SA_ARRAY_LEN(fracs); i++) {
        sa_plan *p = dtr_plan_at(g, fracs[i], i < 2, &rc[i], &err);
        ck_assert_msg(p, "%.2fx: %s", fracs[i], err.msg);
        if (i == 2) {
            ck_assert_int_eq(sa_plan_to_json(p, &first, &err), SA_OK);
            sa_plan_free(p);
            ck_assert_ptr_nonnull(p = dtr_plan_at(g, fracs[i], false, &rc[i], &err));
            char *again = NULL;
            ck_assert_int_eq(sa_plan_to_json(p, &again, &err), SA_OK);
            ck_assert_str_eq(first, again);
            free(again);
        }
        sa_plan_free(p);
    }
    ck_assert_int_eq(rc[0], 0);
    ck_assert_int_gt(rc[1], 0);
    ck_assert_int_gt(rc[2], rc[1]);
    free(first);
    sa_dfg_free(g);
}
END_TEST

/* Where one op's needs and what may not be evicted exceed the memory, dtr
 * refuses naming the op (the CLI's exit 5). */
START_TEST(test_dtr_refuses_when_an_op_cannot_fit)
{
    sa_dfg_graph *g = tu_zoo_roofline("inception-1", 32);
    sa_dfg_device d = tu_policy_dev(sa_dfg_persistent_bytes(g) + sa_dfg_persistent_bytes(g) / 50);
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run_unchecked("dtr", g, &d, NULL, &p, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err.msg, "dtr: op ") == err.msg, "%s", err.msg);
    ck_assert_msg_contains(err, "cannot run within");
    sa_dfg_free(g);
}
END_TEST

/* The policy table is the only list of names: every row is unique, findable,
 * summarised within --help's width, and runs; unknown names are usage errors. */
START_TEST(test_policy_table)
{
    int n;
    const sa_policy_def *t = sa_policy_table(&n);
    ck_assert_int_ge(n, 12);
    char names[512];
    sa_policy_names(names, sizeof names);
    sa_dfg_graph *g = tu_ladder(6);
    sa_dfg_device d = tu_policy_dev(sa_dfg_peak_bytes(g, NULL) / 2);
    for (int i = 0; i < n; i++) {
        ck_assert_ptr_eq(sa_policy_find(t[i].name), &t[i]);
        for (int j = 0; j < i; j++)
            ck_assert_str_ne(t[i].name, t[j].name);
        ck_assert_int_le(strlen(t[i].summary), 56);
        ck_assert_ptr_nonnull(strstr(names, t[i].name));
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_policy_opts po;
        sa_policy_opts_default(&po);
        po.search.generations = 2;
        sa_status st = sa_policy_run_opts(t[i].name, g, &d, &po, &p, &err);
        ck_assert_msg(st == SA_OK || st == SA_EINFEASIBLE, "%s: %s", t[i].name, err.msg);
        if (st == SA_OK) {
            ck_assert_int_eq(sa_plan_validate(p, g, true, NULL, &err), SA_OK);
            sa_plan_free(p);
        } else {
            ck_assert_ptr_null(p);
        }
    }
    ck_assert_ptr_null(sa_policy_find("no-such"));
    ck_assert_str_eq(sa_policy_names(names, 12), "swapadvisor");
    sa_dfg_free(g);
}
END_TEST

Suite *suite_baselines(void)
{
    Suite *s = suite_create("baselines");
    TCase *tc = tcase_create("baselines");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_policy_table);
    tcase_add_test(tc, test_rules_plan_the_ladder);
    tcase_add_test(tc, test_rules_plan_a_zoo_model);
    tcase_add_test(tc, test_hybrid_reports_kept_all);
    tcase_add_test(tc, test_rules_refuse_with_reasons);
    tcase_add_test(tc, test_hybrid_recomputes_cheap_layers);
    tcase_add_test(tc, test_memory_budget_recomputes_as_memory_falls);
    tcase_add_test(tc, test_dtr_plans_a_zoo_model);
    tcase_add_test(tc, test_dtr_refuses_when_an_op_cannot_fit);
    suite_add_tcase(s, tc);
    return s;
}
