/* test_serve.c - the serving planner: share planning, the arrival simulation
 * against hand-computed latencies, the split search, determinism, the figure. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "swapadvisor/serve.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

/* resnet-18 inference at batch b, times from a simple roofline, on a device
 * with a 4 GB/s link (so reloading its 47 MB of parameters takes ~12 ms, far
 * longer than a pass). */
static sa_dfg_graph *model(int64_t b)
{
    zoo_opts zo = {.batch = b, .inference = true};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("resnet-18", &zo, &g, &err), SA_OK);
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 5 + g->ops[i].flops / 5e13 * 1e6 + g->ops[i].bytes_accessed / 2e12 * 1e6;
    g->has_device = true;
    g->device = tu_policy_dev(1 << 30);
    return g;
}

static serve_opts opts(int64_t mem)
{
    serve_opts o;
    serve_opts_default(&o);
    o.memory_bytes = mem;
    o.steps = 8;
    o.policy = "topo";
    o.requests = 600;
    return o;
}

static double ideal_us(const sa_dfg_graph *g)
{
    sa_dfg_device d = g->device;
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("ideal", g, &d, &p, &err), SA_OK);
    double us = p->predicted.iteration_us;
    sa_plan_free(p);
    return us;
}

/* One model, one variant, a trickle of requests: every request runs alone,
 * so its latency is the batch time (partitioned) and, time-shared, the batch
 * time plus a reload only for the first batch (nothing else ever runs). */
START_TEST(test_serve_single_model_by_hand)
{
    sa_dfg_graph *g = model(1);
    const sa_dfg_graph *gs[] = {g};
    serve_model m = {gs, 1, 1};
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    serve_opts o = opts(2 * peak);
    serve_table *t = NULL;
    sa_err err = {0};
    ck_assert_msg(serve_table_build(&m, 1, &o, &t, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(t->n_plans, 8);
    double full = t->pass_us[8];
    ck_assert_double_eq_tol(full, ideal_us(g), 1e-6); /* twice the peak: nothing moves */
    for (int s = 2; s <= 8; s++)
        ck_assert(t->pass_us[s] <= t->pass_us[s - 1]);
    int32_t split[1];
    serve_point pt = {.split = split};
    ck_assert_int_eq(serve_eval(t, 0.5, &o, &pt, &err), SA_OK); /* one request every 2 s */
    ck_assert_int_eq(split[0], 8);
    ck_assert_double_eq_tol(pt.part.p50_ms, full / 1e3, 1e-6);
    ck_assert_double_eq_tol(pt.part.p99_ms, full / 1e3, 1e-6);
    ck_assert_int_eq(pt.part.batches, 600);
    ck_assert_int_eq(pt.shared.switches, 0);
    double reload = (double)t->res_bytes[8] / g->device.h2d_bytes_per_s * 1e3 + g->device.transfer_latency_us / 1e3;
    ck_assert_double_eq_tol(pt.shared.reload_ms, reload, 1e-6);
    ck_assert_double_eq_tol(pt.shared.p99_ms, full / 1e3, 1e-6); /* only request 0 paid the reload */
    ck_assert_double_eq_tol(pt.part.throughput_rps, pt.shared.throughput_rps, 0.01);
    ck_assert_int_eq(serve_eval(t, 0, &o, &pt, &err), SA_EUSAGE);
    serve_table_free(t);
    sa_dfg_free(g);
}
END_TEST

/* Two models with batch variants 1 and 8 in memory for both: time-sharing
 * reloads parameters on every switch, partitioning does not; at high load
 * partitioning serves more with a lower p99, and batching kicks in. */
START_TEST(test_serve_partitioned_beats_time_shared)
{
    sa_dfg_graph *g1 = model(1), *g8 = model(8);
    const sa_dfg_graph *gs[] = {g1, g8};
    serve_model m[] = {{gs, 2, 1}, {gs, 2, 3}};
    int64_t peak = sa_dfg_peak_bytes(g8, NULL);
    serve_opts o = opts(3 * peak);
    serve_table *t = NULL;
    sa_err err = {0};
    ck_assert_msg(serve_table_build(m, 2, &o, &t, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(t->n_plans, 16); /* the second model's graphs are the first's */
    ck_assert_double_eq_tol(t->weight[1], 0.75, 1e-12);
    /* the GPU's capacity with full batches: 8 requests per pass */
    double cap = 8 / (t->pass_us[1 * 9 + 8] / 1e6);
    int32_t split[2], split2[2];
    serve_point hi = {.split = split}, again = {.split = split2};
    ck_assert_int_eq(serve_eval(t, 0.6 * cap, &o, &hi, &err), SA_OK);
    ck_assert_int_eq(split[0] + split[1], 8);
    ck_assert_int_gt(hi.splits_tried, 0);
    ck_assert(hi.part.batches < 600); /* requests were batched */
    ck_assert_int_gt(hi.shared.switches, 10);
    ck_assert_msg(hi.part.p99_ms < hi.shared.p99_ms, "partitioned p99 %.2f ms, time-shared %.2f ms", hi.part.p99_ms,
                  hi.shared.p99_ms);
    /* deterministic for a seed */
    ck_assert_int_eq(serve_eval(t, 0.6 * cap, &o, &again, &err), SA_OK);
    ck_assert(memcmp(split, split2, sizeof split) == 0);
    ck_assert(again.part.p99_ms == hi.part.p99_ms && again.shared.p50_ms == hi.shared.p50_ms);
    o.seed = 2;
    ck_assert_int_eq(serve_eval(t, 0.6 * cap, &o, &again, &err), SA_OK);
    ck_assert(again.shared.p50_ms != hi.shared.p50_ms);

    serve_point pts[2] = {hi, again};
    char *svg = NULL;
    ck_assert_int_eq(serve_svg(pts, 2, "two <models>", &svg, &err), SA_OK);
    ck_assert_ptr_nonnull(strstr(svg, "<svg"));
    ck_assert_ptr_nonnull(strstr(svg, "two &lt;models&gt;"));
    ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
    int lines = 0;
    for (const char *p = svg; (p = strstr(p, "<polyline")); p++)
        lines++;
    ck_assert_int_eq(lines, 2);
    free(svg);
    serve_table_free(t);
    sa_dfg_free(g1);
    sa_dfg_free(g8);
}
END_TEST

START_TEST(test_serve_refusals)
{
    sa_dfg_graph *g = model(4);
    const sa_dfg_graph *gs[] = {g};
    serve_model m[] = {{gs, 1, 1}, {gs, 1, 1}};
    serve_table *t = NULL;
    sa_err err = {0};
    /* below every op's own tensors: no share fits */
    serve_opts o = opts(1 << 20);
    ck_assert_int_eq(serve_table_build(m, 1, &o, &t, &err), SA_EINFEASIBLE);
    ck_assert_ptr_null(t);
    ck_assert_msg_contains(err, "fits in no share");
    o = opts(sa_dfg_peak_bytes(g, NULL));
    o.steps = 1;
    ck_assert_int_eq(serve_table_build(m, 2, &o, &t, &err), SA_EUSAGE);
    o.steps = 8;
    o.policy = "no-such";
    ck_assert_int_eq(serve_table_build(m, 2, &o, &t, &err), SA_EUSAGE);
    const sa_dfg_graph *back[] = {g, g};
    serve_model bad = {back, 2, 1};
    o.policy = "topo";
    ck_assert_int_eq(serve_table_build(&bad, 1, &o, &t, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "ascending batch");
    sa_dfg_free(g);
}
END_TEST

/* The tool: the same seed gives the same report and figure; usage errors
 * exit 2, a model that fits nowhere 5. */
START_TEST(test_serve_cli)
{
    char *dir = tu_tmpdir(), cmd[1024];
    for (int b = 1; b <= 4; b *= 4) {
        snprintf(cmd, sizeof cmd, "bin/dfg-zoo resnet-18 --inference --batch %d | bin/dfg-profile - --device "
                 "profiles/v100-pcie3-16gb.json -o %s/b%d.json", b, dir, b);
        ck_assert_int_eq(system(cmd), 0);
    }
    for (int run = 0; run < 2; run++) {
        snprintf(cmd, sizeof cmd, "bin/swapadvisor-serve %s/b1.json,%s/b4.json %s/b1.json --memory 256MiB --steps 4 "
                 "--rate 400 --policy topo --requests 500 --svg %s/f%d.svg -o %s/r%d.txt", dir, dir, dir, dir, run,
                 dir, run);
        ck_assert_int_eq(system(cmd), 0);
    }
    snprintf(cmd, sizeof cmd, "cmp -s %s/r0.txt %s/r1.txt && cmp -s %s/f0.svg %s/f1.svg && grep -q '^400.00 ' %s/r0.txt",
             dir, dir, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "bin/swapadvisor-serve %s/b4.json,%s/b1.json --memory 1GiB --rate 1 2> /dev/null", dir,
             dir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof cmd, "bin/swapadvisor-serve %s/b4.json --memory 1MiB --rate 1 --policy topo 2> /dev/null",
             dir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 5);
    ck_assert_int_eq(WEXITSTATUS(system("bin/swapadvisor-serve --rate 1 2> /dev/null")), 2);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

Suite *suite_serve(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serve");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_serve_single_model_by_hand);
    tcase_add_test(tc, test_serve_partitioned_beats_time_shared);
    tcase_add_test(tc, test_serve_refusals);
    tcase_add_test(tc, test_serve_cli);
    suite_add_tcase(s, tc);
    return s;
}
