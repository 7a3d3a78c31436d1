/* test_robust.c - graphs as real frameworks export them and hostile numbers:
 * zero-time ops (views, sinks), ops with no inputs or no outputs, huge and tiny
 * sizes and times, byte sums past 2^63, the search's memory at huge budgets; and a
 * randomized property test: every policy plans validly (strict validation, a
 * document the tools read back, a host replay) or refuses with SA_EINFEASIBLE. */
#include <math.h>
#include <stdint.h>

#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/sa_io.h"
#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>

static sa_dfg_device rb_dev(int64_t mem)
{
    sa_dfg_device d = {"rb", mem, 12e9, 12e9, 20e9, 10.0, 0};
    return d;
}

static sa_dfg_graph *rb_parse(const char *json)
{
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_dfg_parse(json, strlen(json), "rb", &g, &err) == SA_OK, "%s", err.msg);
    return g;
}

#define RB_MAX_POLICIES 64

typedef struct rb_stats {
    int planned, refused, replayed;
    int policy_planned[RB_MAX_POLICIES], policy_refused[RB_MAX_POLICIES]; /* by row of the policy table */
} rb_stats;

/* On a failure, the graph and plan land in /tmp to reproduce it with the tools. */
static void rb_dump(const sa_plan *p, const sa_dfg_graph *g)
{
    sa_err e;
    sa_dfg_write_file(g, "/tmp/robust_fail_graph.json", &e);
    sa_plan_write_file(p, "/tmp/robust_fail_plan.json", &e);
    fprintf(stderr, "robust: wrote /tmp/robust_fail_graph.json and /tmp/robust_fail_plan.json\n");
}

/* Every written plan must read back, validate strictly and, when cheap, replay. */
static void rb_check_plan(const sa_plan *p, const sa_dfg_graph *g, bool replay, const char *what, rb_stats *s)
{
    sa_err err = {0};
    sa_val_report rep = {0};
    sa_status st = sa_plan_validate(p, g, true, &rep, &err);
    if (st)
        rb_dump(p, g);
    ck_assert_msg(st == SA_OK, "%s: invalid plan: %s", what, err.msg);
    sa_val_report_free(&rep);
    char *text = NULL;
    ck_assert_msg(sa_plan_to_json(p, &text, &err) == SA_OK, "%s: %s", what, err.msg);
    sa_plan *q = NULL;
    st = sa_plan_parse(text, strlen(text), "written", &q, &err);
    ck_assert_msg(st == SA_OK, "%s: the written plan does not read back: %s", what, err.msg);
    ck_assert_msg(sa_plan_validate(q, g, true, NULL, &err) == SA_OK, "%s: re-read plan: %s", what, err.msg);
    sa_plan_free(q);
    free(text);
    if (!replay)
        return;
    sa_runner_opts o;
    sa_runner_opts_default(&o);
    o.backend = SA_RUNNER_HOST;
    o.cap_bytes = 1 << 20;
    sa_runner_report r;
    st = sa_runner_run(p, g, &o, &r, &err);
    if (st != SA_OK && st != SA_EINFEASIBLE)
        rb_dump(p, g);
    /* a host replay may refuse only sizes it cannot scale into the cap */
    ck_assert_msg(st == SA_OK || (st == SA_EINFEASIBLE && strstr(err.msg, "host replay")), "%s: replay: %d %s",
                  what, st, err.msg);
    if (st == SA_OK) {
        ck_assert_msg(r.valid, "%s: replay says invalid", what);
        s->replayed++;
        sa_runner_report_free(&r);
    }
}

/* Every row of the policy table on g: a valid plan or SA_EINFEASIBLE. */
static void rb_all_policies(const sa_dfg_graph *g, const sa_dfg_device *d, bool must_plan, bool replay, uint64_t seed,
                            const char *what, rb_stats *s)
{
    int n = 0;
    const sa_policy_def *tab = sa_policy_table(&n);
    ck_assert_int_le(n, RB_MAX_POLICIES);
    for (int i = 0; i < n; i++) {
        sa_policy_opts o;
        sa_policy_opts_default(&o);
        o.search.generations = 2;
        o.search.population = 6;
        o.search.threads = 1;
        o.search.seed = seed;
        o.search.time_limit_s = 0;
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run_opts(tab[i].name, g, d, &o, &p, &err);
        char w[256];
        snprintf(w, sizeof w, "%s, policy %s, memory %lld", what, tab[i].name, (long long)d->memory_bytes);
        ck_assert_msg(st == SA_OK || (st == SA_EINFEASIBLE && !must_plan), "%s: status %s: %s", w,
                      sa_status_name(st), err.msg);
        ck_assert_msg(st != SA_EINFEASIBLE || err.msg[0], "%s: refused without a reason", w);
        if (st == SA_OK) {
            ck_assert_ptr_nonnull(p);
            rb_check_plan(p, g, replay, w, s);
            s->planned++;
            s->policy_planned[i]++;
        } else {
            ck_assert_ptr_null(p);
            s->refused++;
            s->policy_refused[i]++;
        }
        sa_plan_free(p);
    }
}

/* ------------------------------------------------------------ zero-time ops */

/* relu for 10 us, then a 0 us sink that reads its output (defect 1) */
static const char *zt_json(const char *relu_us, const char *sink_us)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"format\":\"dfg\",\"version\":1,\"name\":\"zt\",\"tensors\":["
             "{\"id\":0,\"name\":\"x\",\"kind\":\"input\",\"bytes\":1024},"
             "{\"id\":1,\"name\":\"y\",\"kind\":\"activation\",\"bytes\":1024}],\"ops\":["
             "{\"id\":0,\"name\":\"relu\",\"type\":\"relu\",\"phase\":\"forward\",\"inputs\":[0],\"outputs\":[1],"
             "\"time_us\":%s},"
             "{\"id\":1,\"name\":\"sink\",\"type\":\"sink\",\"phase\":\"forward\",\"inputs\":[1],\"outputs\":[],"
             "\"time_us\":%s}],\"control_deps\":[]}",
             relu_us, sink_us);
    return buf;
}

START_TEST(test_zero_time_sink_every_policy)
{
    const char *times[][2] = {{"10", "0"}, {"0", "0"}, {"0", "10"}, {"1e18", "0"}, {"1e18", "1"}, {"1e-300", "0"}};
    for (size_t k = 0; k < SA_ARRAY_LEN(times); k++) {
        sa_dfg_graph *g = rb_parse(zt_json(times[k][0], times[k][1]));
        sa_dfg_device d = rb_dev(1 << 20);
        rb_stats s = {0};
        char what[64];
        snprintf(what, sizeof what, "relu %s us, sink %s us", times[k][0], times[k][1]);
        rb_all_policies(g, &d, true, true, 1, what, &s);
        d.transfer_latency_us = 1e29; /* huge but accepted */
        rb_all_policies(g, &d, true, true, 1, what, &s);
        sa_dfg_free(g);
    }
}
END_TEST

/* A hand-made valid plan for the zero-time sink: swap x in, relu, sink. */
START_TEST(test_zero_time_hand_plan_validates)
{
    sa_dfg_graph *g = rb_parse(zt_json("10", "0"));
    const char *pj =
        "{\"format\":\"swapplan\",\"version\":1,\"graph\":{\"name\":\"zt\",\"ops\":2,\"tensors\":2},"
        "\"device\":{\"name\":\"rb\",\"memory_bytes\":4096,\"h2d_bytes_per_s\":12e9,\"d2h_bytes_per_s\":12e9,"
        "\"duplex_bytes_per_s\":20e9,\"transfer_latency_us\":10},\"arena_bytes\":2048,\"schedule\":[0,1],"
        "\"nodes\":[{\"id\":0,\"kind\":\"swap_in\",\"tensor\":0,\"deps\":[]},"
        "{\"id\":1,\"kind\":\"compute\",\"op\":0,\"deps\":[0]},{\"id\":2,\"kind\":\"compute\",\"op\":1,\"deps\":[]}],"
        "\"placements\":[{\"tensor\":0,\"offset\":0,\"begin\":0,\"end\":1},"
        "{\"tensor\":1,\"offset\":1024,\"begin\":1,\"end\":2}],\"resident_at_start\":[]}";
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_plan_parse(pj, strlen(pj), "hand", &p, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
    sa_runner_opts o;
    sa_runner_opts_default(&o);
    o.backend = SA_RUNNER_HOST;
    sa_runner_report r;
    ck_assert_msg(sa_runner_run(p, g, &o, &r, &err) == SA_OK, "%s", err.msg);
    sa_runner_report_free(&r);
    /* the placement of y ending before the sink does is still caught */
    p->place[1].end = 1;
    ck_assert_int_eq(sa_plan_validate(p, g, false, NULL, &err), SA_EINVALID);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* ------------------------------------------------------------ huge numbers */

START_TEST(test_huge_times_refused_as_bad_input)
{
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    const char *j = zt_json("1e31", "0");
    ck_assert_int_eq(sa_dfg_parse(j, strlen(j), "huge", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "time_us");
    char *dj = tu_replace(tu_tiny_json(), "\"control_deps\":[]}",
                          "\"control_deps\":[],\"device\":{\"name\":\"d\",\"memory_bytes\":4096,"
                          "\"h2d_bytes_per_s\":1e9,\"d2h_bytes_per_s\":1e9,\"duplex_bytes_per_s\":1e9,"
                          "\"transfer_latency_us\":1e300}}");
    ck_assert_int_eq(sa_dfg_parse(dj, strlen(dj), "lat", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "transfer_latency_us");
    free(dj);
    const char *prof = "{\"format\":\"device-profile\",\"version\":1,\"name\":\"p\",\"memory_bytes\":1000000,"
                       "\"h2d_bytes_per_s\":1e9,\"d2h_bytes_per_s\":1e9,\"duplex_bytes_per_s\":1e9,"
                       "\"transfer_latency_us\":1,\"peak_flops\":{\"f32\":1e12},"
                       "\"memory_bandwidth_bytes_per_s\":1e11,\"launch_overhead_us\":1.7e308,"
                       "\"efficiency\":{\"default\":{\"compute\":0.5,\"memory\":0.5}}}";
    sa_devprof *pp = NULL;
    ck_assert_int_eq(sa_devprof_parse(prof, strlen(prof), "prof", &pp, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "launch_overhead_us");
    /* a modelled time past the bound: flops 1e308 at 1 FLOP/s */
    char *p1 = tu_replace(prof, "1.7e308", "1");
    char *p2 = tu_replace(p1, "{\"f32\":1e12}", "{\"f32\":1}");
    free(p1);
    ck_assert_msg(sa_devprof_parse(p2, strlen(p2), "prof", &pp, &err) == SA_OK, "%s", err.msg);
    sa_dfg_graph *t = rb_parse(tu_tiny_json());
    t->ops[0].flops = 1e308;
    ck_assert_int_eq(sa_cost_profile_graph(t, pp, 0, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "fc");
    sa_devprof_free(pp);
    sa_dfg_free(t);
    free(p2);
}
END_TEST

/* ------------------------------------------------------------ overflow */

/* n inputs of `bytes` each, all read by one sink */
static sa_dfg_graph *rb_wide(int n, int64_t bytes)
{
    sa_dfg_graph *g = sa_dfg_new("wide");
    int32_t *in = calloc((size_t)n, sizeof *in);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        in[i] = sa_dfg_add_tensor(g, name, SA_DFG_INPUT, bytes);
    }
    ck_assert_int_eq(sa_dfg_add_op(g, "sink", "sink", SA_DFG_FORWARD, in, n, NULL, 0), 0);
    g->ops[0].time_us = 1;
    free(in);
    sa_err err = {0};
    ck_assert_msg(sa_dfg_finalize(g, "wide", &err) == SA_OK, "%s", err.msg);
    return g;
}

START_TEST(test_byte_sums_past_2_63)
{
    int64_t big = (int64_t)1 << 53;
    sa_dfg_graph *g = rb_wide(1100, big);
    int32_t op = -1;
    ck_assert(sa_dfg_max_op_bytes(g, &op) == INT64_MAX);
    ck_assert_int_eq(op, 0);
    ck_assert(sa_dfg_total_bytes(g) == INT64_MAX);
    ck_assert(sa_dfg_peak_bytes(g, NULL) == INT64_MAX);
    sa_dfg_device d = rb_dev(big);
    rb_stats s = {0};
    rb_all_policies(g, &d, false, false, 1, "1100 x 2^53 bytes", &s);
    ck_assert_int_eq(s.planned, 0);
    sa_dfg_free(g);
    /* two 2^52-byte tensors: the ideal plan's arena (2^53 + 2^52) would not be exact */
    g = rb_wide(3, big / 2);
    d = rb_dev(big);
    s = (rb_stats){0};
    rb_all_policies(g, &d, false, false, 1, "3 x 2^52 bytes", &s);
    sa_dfg_free(g);
}
END_TEST

/* byte totals of a plan may pass 2^53: written, they must read back */
START_TEST(test_plan_predicted_bytes_past_2_53_read_back)
{
    sa_dfg_graph *g = rb_parse(tu_tiny_json());
    sa_dfg_device d = rb_dev(1 << 20);
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run("topo", g, &d, &p, &err) == SA_OK, "%s", err.msg);
    p->predicted.h2d_bytes = ((int64_t)1 << 60) + 1;
    p->predicted.d2h_bytes = INT64_MAX;
    char *text = NULL;
    ck_assert_int_eq(sa_plan_to_json(p, &text, &err), SA_OK);
    sa_plan *q = NULL;
    ck_assert_msg(sa_plan_parse(text, strlen(text), "big", &q, &err) == SA_OK, "%s", err.msg);
    ck_assert(q->predicted.h2d_bytes == (int64_t)1 << 60);
    ck_assert(q->predicted.d2h_bytes == INT64_MAX);
    sa_plan_free(q);
    free(text);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* ------------------------------------------------------------ the search's memory */

/* Topping a pool up to a huge budget adds no more objects than the graph can use. */
START_TEST(test_pool_top_up_capped_by_demand)
{
    sa_dfg_graph *g = rb_parse(tu_tiny_json());
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    int32_t need[16];
    sa_err err = {0};
    for (int32_t i = 0; i < g->n_sizes; i++)
        a.cls[i] = i;
    pool_repair_cls(&a);
    int64_t mems[] = {(int64_t)1 << 34, (int64_t)1e12, (int64_t)1 << 53, INT64_MAX / 2};
    for (size_t k = 0; k < SA_ARRAY_LEN(mems); k++) {
        ck_assert_int_eq(pool_repair_any(&a, g, need, mems[k], false, &err), SA_OK);
        pool_top_up(&a, mems[k]);
        ck_assert(pool_layout(&a, g));
        int32_t most_use = 0;
        for (int32_t o = 0; o < g->n_ops; o++)
            if (g->ops[o].n_use > most_use)
                most_use = g->ops[o].n_use;
        ck_assert_int_le(a.n_objects, g->n_tensors + a.n_classes * most_use);
        ck_assert_int_le(a.pool_bytes, mems[k]);
    }
    /* counts far past the caps (a mutation gone wild) are lowered, not laid out */
    for (int32_t c = 0; c < a.n_classes; c++)
        a.cnt[c] = INT32_MAX / 2;
    ck_assert(pool_layout(&a, g));
    ck_assert_int_le(a.n_objects, g->n_tensors + a.n_classes * 8);
    /* the floors not fitting is SA_EINFEASIBLE, not a failure */
    ck_assert_int_eq(pool_repair_any(&a, g, need, 16, true, &err), SA_EINFEASIBLE);
    pool_alloc_free(&a);
    sa_dfg_free(g);
}
END_TEST

/* An op that reads hundreds of tensors (a sink over every activation) takes
 * the counting path of the pool's floors: the same floors as pairwise. */
START_TEST(test_pool_floors_of_a_wide_op)
{
    sa_dfg_graph *g = sa_dfg_new("wide");
    int32_t in[300];
    for (int i = 0; i < 300; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        in[i] = sa_dfg_add_tensor(g, nm, SA_DFG_INPUT, (int64_t)(1 + (i * 7) % 5) * 1000);
    }
    sa_dfg_add_op(g, "sink", "sink", SA_DFG_FORWARD, in, 300, NULL, 0);
    sa_dfg_add_op(g, "small", "x", SA_DFG_FORWARD, in, 3, NULL, 0);
    g->ops[0].time_us = g->ops[1].time_us = 1;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_finalize(g, "wide", &err), SA_OK);
    pool_alloc a;
    ck_assert(pool_alloc_init(&a, g->n_sizes));
    for (int32_t i = 0; i < g->n_sizes; i++)
        a.cls[i] = i / 2; /* classes of two sizes */
    pool_repair_cls(&a);
    int32_t own[8], shared[8];
    pool_need(&a, g, own);
    pool_need_shared(&a, g, shared);
    /* by hand: per class, the sink's count (own) and suffix counts (shared) */
    int32_t cnt[8] = {0}, suffix[8] = {0};
    for (int i = 0; i < 300; i++)
        cnt[a.cls[g->tensors[i].size_idx]]++;
    for (int32_t c = a.n_classes - 1; c >= 0; c--)
        suffix[c] = cnt[c] + (c + 1 < a.n_classes ? suffix[c + 1] : 0);
    for (int32_t c = 0; c < a.n_classes; c++) {
        ck_assert_int_eq(own[c], cnt[c]);
        ck_assert_int_eq(shared[c], suffix[c] - (c + 1 < a.n_classes ? suffix[c + 1] : 0));
    }
    pool_alloc_free(&a);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_search_at_huge_budgets)
{
    sa_dfg_graph *g = rb_parse(tu_tiny_json());
    int64_t mems[] = {(int64_t)16 << 30, (int64_t)1e12, (int64_t)1 << 53};
    for (size_t k = 0; k < SA_ARRAY_LEN(mems); k++) {
        sa_dfg_device d = rb_dev(mems[k]);
        sa_policy_opts o;
        sa_policy_opts_default(&o);
        o.search.generations = 3;
        o.search.threads = 1;
        sa_plan *p = NULL;
        sa_err err = {0};
        ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &o, &p, &err) == SA_OK, "%s", err.msg);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s", err.msg);
        sa_plan_free(p);
    }
    sa_dfg_free(g);
}
END_TEST

/* ------------------------------------------------------- bestfit/nodes.c */

/* The first op reads only persistent tensors (defect 3: run_pass read an
 * uninitialised status there). */
START_TEST(test_first_op_reads_only_persistent)
{
    const char *j =
        "{\"format\":\"dfg\",\"version\":1,\"name\":\"pfirst\",\"tensors\":["
        "{\"id\":0,\"name\":\"w\",\"kind\":\"param\",\"bytes\":4096},"
        "{\"id\":1,\"name\":\"a\",\"kind\":\"activation\",\"bytes\":4096},"
        "{\"id\":2,\"name\":\"l\",\"kind\":\"gradient\",\"bytes\":256},"
        "{\"id\":3,\"name\":\"dw\",\"kind\":\"gradient\",\"bytes\":4096}],\"ops\":["
        "{\"id\":0,\"name\":\"f\",\"type\":\"matmul\",\"phase\":\"forward\",\"inputs\":[0],\"outputs\":[1],\"time_us\":5},"
        "{\"id\":1,\"name\":\"loss\",\"type\":\"loss\",\"phase\":\"forward\",\"inputs\":[1],\"outputs\":[2],\"time_us\":1},"
        "{\"id\":2,\"name\":\"b\",\"type\":\"matmul\",\"phase\":\"backward\",\"inputs\":[2,1],\"outputs\":[3],"
        "\"time_us\":5},"
        "{\"id\":3,\"name\":\"u\",\"type\":\"sgd_update\",\"phase\":\"update\",\"inputs\":[0,3],\"outputs\":[0],"
        "\"time_us\":1}],\"control_deps\":[]}";
    sa_dfg_graph *g = rb_parse(j);
    int64_t mems[] = {1 << 20, 12800, 8192 + 4096 + 256};
    rb_stats s = {0};
    for (size_t k = 0; k < SA_ARRAY_LEN(mems); k++) {
        sa_dfg_device d = rb_dev(mems[k]);
        rb_all_policies(g, &d, k == 0, true, 1, "first op reads only a param", &s);
    }
    sa_dfg_free(g);
}
END_TEST

/* ------------------------------------------------------------ JSON strictness, error lines */

START_TEST(test_json_trailing_data_and_duplicate_keys)
{
    const char *tiny = tu_tiny_json();
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    char *j = malloc(strlen(tiny) * 2 + 16);
    sprintf(j, "%s xyz", tiny);
    ck_assert_int_eq(sa_dfg_parse(j, strlen(j), "t", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "trailing data");
    ck_assert_msg_contains(err, "line 12");
    sprintf(j, "%s\n%s", tiny, tiny);
    ck_assert_int_eq(sa_dfg_parse(j, strlen(j), "t", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "trailing data");
    sprintf(j, "%s \n\t\r ", tiny);
    ck_assert_msg(sa_dfg_parse(j, strlen(j), "t", &g, &err) == SA_OK, "%s", err.msg);
    sa_dfg_free(g);
    free(j);
    char *d = tu_replace(tiny, "\"bytes\":16,\"shape\"", "\"bytes\":16,\"bytes\":-5,\"shape\"");
    ck_assert_int_eq(sa_dfg_parse(d, strlen(d), "t", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "tensors[0]: duplicate key \"bytes\"");
    free(d);
    d = tu_replace(tiny, "\"custom\":{\"a\":[1,2]}", "\"custom\":{\"a\":[{\"k\":1,\"k\":2}]}");
    ck_assert_int_eq(sa_dfg_parse(d, strlen(d), "t", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "custom.a[0]: duplicate key \"k\"");
    free(d);
}
END_TEST

START_TEST(test_error_lines_escape_control_characters)
{
    char *j = tu_replace(tu_tiny_json(), "\"name\":\"fc\"", "\"name\":\"f\\u001b[31mc\\nX\"");
    sa_dfg_graph *g = rb_parse(j);
    sa_dfg_device d = rb_dev(64);
    sa_plan *p = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_policy_run("topo", g, &d, &p, &err), SA_EINFEASIBLE);
    ck_assert_msg(strchr(err.msg, '\n') == NULL && strchr(err.msg, 0x1b) == NULL, "raw control in: %s", err.msg);
    ck_assert_msg_contains(err, "f\\x1b[31mc\\nX");
    char line[16] = "a\tb\x01";
    sa_escape_controls(line, sizeof line);
    ck_assert_str_eq(line, "a\\tb\\x01");
    sa_dfg_free(g);
    free(j);
}
END_TEST

/* ------------------------------------------------------------ outputs */

START_TEST(test_out_temps_removed_and_links_kept)
{
    char *d = tu_tmpdir();
    char path[512], link[512], tmp[600];
    snprintf(path, sizeof path, "%s/out.json", d);
    sa_out o;
    sa_err err = {0};
    ck_assert_int_eq(sa_out_open(&o, path, &err), SA_OK);
    snprintf(tmp, sizeof tmp, "%s", o.tmp);
    ck_assert_int_eq(access(tmp, F_OK), 0);
    sa_out_remove_temps(); /* what the CLIs' SIGINT/SIGTERM handler calls */
    ck_assert_int_ne(access(tmp, F_OK), 0);
    sa_out_abort(&o);
    /* through a symlink: the file it names is written, the link stays */
    ck_assert_int_eq(sa_write_file(path, "old", 3, &err), SA_OK);
    snprintf(link, sizeof link, "%s/link.json", d);
    ck_assert_int_eq(symlink("out.json", link), 0);
    ck_assert_int_eq(sa_write_file(link, "new!", 4, &err), SA_OK);
    struct stat sb;
    ck_assert_int_eq(lstat(link, &sb), 0);
    ck_assert(S_ISLNK(sb.st_mode));
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_size, 4);
    /* a directory is refused */
    ck_assert_int_eq(sa_write_file(d, "x", 1, &err), SA_EIO);
    unlink(link);
    unlink(path);
    rmdir(d);
    free(d);
}
END_TEST

/* ------------------------------------------------------------ property test */

typedef struct rb_rng { uint64_t s; } rb_rng;

static uint64_t rb_next(rb_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static int rb_int(rb_rng *r, int lo, int hi) { return lo + (int)(rb_next(r) % (uint64_t)(hi - lo + 1)); }
static bool rb_pct(rb_rng *r, int pct) { return rb_int(r, 0, 99) < pct; }

/* sizes: mostly ordinary, sometimes 1 byte or a few, sometimes 2^40 and up */
static int64_t rb_bytes(rb_rng *r, bool huge)
{
    int k = rb_int(r, 0, 99);
    if (k < 15)
        return rb_int(r, 1, 64);
    if (huge && k < 22)
        return ((int64_t)1 << rb_int(r, 40, 50)) + rb_int(r, 0, 3);
    if (k < 60)
        return (int64_t)rb_int(r, 1, 64) * 4096;
    return (int64_t)rb_int(r, 1, 1 << 20) + 1;
}

/* times: zero often (views, reshapes, sinks), sometimes tiny or huge */
static double rb_time(rb_rng *r, bool huge)
{
    int k = rb_int(r, 0, 99);
    if (k < 30)
        return 0;
    if (k < 38)
        return 1e-6 * rb_int(r, 1, 1000);
    if (huge && k < 43)
        return pow(10, rb_int(r, 12, 18));
    return rb_int(r, 1, 5000) / 4.0;
}

/* An op being built (no tensor twice). */
typedef struct rb_op { int32_t in[64], out[8], n_in, n_out; } rb_op;

static void rb_add_in(rb_op *o, int32_t t)
{
    for (int32_t i = 0; i < o->n_in; i++)
        if (o->in[i] == t)
            return;
    if (o->n_in < 64)
        o->in[o->n_in++] = t;
}

static int32_t rb_emit(sa_dfg_graph *g, rb_rng *r, bool huge, const char *name, const char *type, sa_dfg_phase ph,
                       const rb_op *o)
{
    int32_t id = sa_dfg_add_op(g, name, type, ph, o->in, o->n_in, o->out, o->n_out);
    ck_assert_int_ge(id, 0);
    g->ops[id].time_us = rb_time(r, huge);
    return id;
}

/* A random training-like iteration: an input or a no-input op starts it, a
 * chain of forward ops (some with params, some with optimizer state, some
 * with workspaces, some reading a skip connection or a constant that an op
 * without inputs made), view-only ops that read an activation and write
 * nothing, a loss, a backward pass that reads the activations again, in-place
 * updates, and sometimes a sink that reads every activation at the end. */
static sa_dfg_graph *rb_graph(rb_rng *r, int idx, bool huge)
{
    char name[64];
    snprintf(name, sizeof name, "rb%d", idx);
    sa_dfg_graph *g = sa_dfg_new(name);
    int L = rb_int(r, 1, 8);
    int32_t act[10], w[10], st[10];
    char nm[32];
    rb_op o;
    if (rb_pct(r, 70)) {
        act[0] = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, rb_bytes(r, huge));
    } else {
        act[0] = sa_dfg_add_tensor(g, "x", SA_DFG_ACTIVATION, rb_bytes(r, huge));
        o = (rb_op){.n_in = 0, .n_out = 1, .out = {act[0]}};
        rb_emit(g, r, huge, "source", "fill", SA_DFG_FORWARD, &o);
    }
    for (int i = 1; i <= L; i++) {
        snprintf(nm, sizeof nm, "w%d", i);
        w[i] = rb_pct(r, 60) ? sa_dfg_add_tensor(g, nm, SA_DFG_PARAM, rb_bytes(r, huge)) : -1;
        snprintf(nm, sizeof nm, "s%d", i);
        st[i] = w[i] >= 0 && rb_pct(r, 30) ? sa_dfg_add_tensor(g, nm, SA_DFG_STATE, rb_bytes(r, huge)) : -1;
        snprintf(nm, sizeof nm, "a%d", i);
        act[i] = sa_dfg_add_tensor(g, nm, SA_DFG_ACTIVATION, rb_bytes(r, huge));
        o = (rb_op){0};
        rb_add_in(&o, act[i - 1]);
        if (w[i] >= 0)
            rb_add_in(&o, w[i]);
        if (i >= 2 && rb_pct(r, 20))
            rb_add_in(&o, act[rb_int(r, 0, i - 2)]);
        if (rb_pct(r, 20)) {
            /* a constant made by an op with no inputs */
            snprintf(nm, sizeof nm, "k%d", i);
            int32_t k = sa_dfg_add_tensor(g, nm, SA_DFG_ACTIVATION, rb_bytes(r, huge));
            rb_op c = {.n_in = 0, .n_out = 1, .out = {k}};
            snprintf(nm, sizeof nm, "const%d", i);
            rb_emit(g, r, huge, nm, "constant", SA_DFG_FORWARD, &c);
            rb_add_in(&o, k);
        }
        o.out[o.n_out++] = act[i];
        if (rb_pct(r, 25)) {
            snprintf(nm, sizeof nm, "ws%d", i);
            o.out[o.n_out++] = sa_dfg_add_tensor(g, nm, SA_DFG_WORKSPACE, rb_bytes(r, huge));
        }
        snprintf(nm, sizeof nm, "f%d", i);
        rb_emit(g, r, huge, nm, "conv2d", SA_DFG_FORWARD, &o);
        if (rb_pct(r, 30)) {
            /* a view that reads and writes nothing new */
            rb_op v = {.n_in = 1, .in = {act[i]}, .n_out = 0};
            snprintf(nm, sizeof nm, "view%d", i);
            rb_emit(g, r, huge, nm, "view", SA_DFG_FORWARD, &v);
        }
    }
    int32_t grad = sa_dfg_add_tensor(g, "dl", SA_DFG_GRADIENT, rb_bytes(r, huge));
    o = (rb_op){.n_in = 1, .in = {act[L]}, .n_out = 1, .out = {grad}};
    rb_emit(g, r, huge, "loss", "softmax_xent", SA_DFG_FORWARD, &o);
    int32_t dw[10];
    for (int i = L; i >= 1; i--) {
        o = (rb_op){0};
        rb_add_in(&o, grad);
        rb_add_in(&o, act[i - 1]);
        if (w[i] >= 0)
            rb_add_in(&o, w[i]);
        int32_t ng = -1;
        if (i > 1) {
            snprintf(nm, sizeof nm, "da%d", i - 1);
            ng = sa_dfg_add_tensor(g, nm, SA_DFG_GRADIENT, rb_bytes(r, huge));
            o.out[o.n_out++] = ng;
        }
        dw[i] = -1;
        if (w[i] >= 0) {
            snprintf(nm, sizeof nm, "dw%d", i);
            dw[i] = sa_dfg_add_tensor(g, nm, SA_DFG_GRADIENT, rb_bytes(r, huge));
            o.out[o.n_out++] = dw[i];
        }
        if (o.n_out == 0)
            continue;
        snprintf(nm, sizeof nm, "b%d", i);
        rb_emit(g, r, huge, nm, "conv2d_bwd", SA_DFG_BACKWARD, &o);
        if (ng >= 0)
            grad = ng;
    }
    if (rb_pct(r, 40)) {
        /* a sink that reads every activation at the end */
        o = (rb_op){0};
        for (int i = 1; i <= L; i++)
            rb_add_in(&o, act[i]);
        rb_emit(g, r, huge, "sink", "sink", SA_DFG_BACKWARD, &o);
    }
    for (int i = 1; i <= L; i++) {
        if (w[i] < 0)
            continue;
        o = (rb_op){0};
        rb_add_in(&o, w[i]);
        rb_add_in(&o, dw[i]);
        o.out[o.n_out++] = w[i];
        if (st[i] >= 0) {
            rb_add_in(&o, st[i]);
            o.out[o.n_out++] = st[i];
        }
        snprintf(nm, sizeof nm, "u%d", i);
        rb_emit(g, r, huge, nm, "adam_update", SA_DFG_UPDATE, &o);
    }
    sa_err err = {0};
    ck_assert_msg(sa_dfg_finalize(g, name, &err) == SA_OK, "generator bug: %s", err.msg);
    return g;
}

#define RB_GRAPHS 300

/* SA_ROBUST_GRAPHS=N plans the first N of the RB_GRAPHS graphs (the same
 * seed; `make test` runs all 300).  `make asan-test` runs 100, at a third of
 * the time under the sanitizers: they already give every policy plans and
 * refusals (asserted below; 45 to 56 plans each) and draw every shape of the
 * generator: 25 huge graphs, each of the four memory bands 20 to 31 times,
 * latency 0 7 times and 1e15 10 times.  SA_ROBUST_COUNTS=1 prints the
 * per-policy counts. */
START_TEST(test_random_graphs_every_policy)
{
    int n_graphs = tu_env_count("SA_ROBUST_GRAPHS", RB_GRAPHS, RB_GRAPHS);
    rb_rng r = {20261123};
    rb_stats s = {0};
    for (int i = 0; i < n_graphs; i++) {
        bool huge = i % 4 == 3;
        sa_dfg_graph *g = rb_graph(&r, i, huge);
        int64_t peak = sa_dfg_peak_bytes(g, NULL), one = sa_dfg_max_op_bytes(g, NULL);
        /* from below the largest op to above the peak, at most 2^53 */
        double f[] = {0.5, 1.0, 1.3, 3.0};
        double base[] = {(double)one, (double)one, (double)one + 0.5 * (double)(peak - one), 1.5 * (double)peak};
        int k = rb_int(&r, 0, 3);
        double m = fmin(f[k] * base[k] + 1, SA_DFG_MAX_EXACT_INT);
        sa_dfg_device d = rb_dev((int64_t)m);
        if (rb_pct(&r, 20))
            d.transfer_latency_us = rb_pct(&r, 50) ? 0 : 1e15;
        char what[64];
        snprintf(what, sizeof what, "random graph %d (%d ops)", i, g->n_ops);
        rb_all_policies(g, &d, false, !huge, (uint64_t)i, what, &s);
        sa_dfg_free(g);
    }
    fprintf(stderr, "robust: %d random graphs: %d plans (valid, read back; %d replayed), %d refusals (infeasible)\n",
            n_graphs, s.planned, s.replayed, s.refused);
    ck_assert_int_gt(s.planned, s.refused / 4);
    /* not vacuous for any policy: each plans some graphs, and each but ideal
     * (unlimited memory) refuses some */
    int n;
    const sa_policy_def *tab = sa_policy_table(&n);
    for (int k = 0; k < n; k++) {
        if (getenv("SA_ROBUST_COUNTS"))
            fprintf(stderr, "robust: %-16s %4d planned %4d refused\n", tab[k].name, s.policy_planned[k],
                    s.policy_refused[k]);
        ck_assert_msg(s.policy_planned[k] > 0, "%s planned none of %d graphs", tab[k].name, n_graphs);
        ck_assert_msg(s.policy_refused[k] > 0 || strcmp(tab[k].name, "ideal") == 0, "%s refused none of %d graphs",
                      tab[k].name, n_graphs);
    }
}
END_TEST

/* A random DAG whose packing fragments: sizes from a byte to a megabyte,
 * every op reading tensors made anywhere before it, forward ops then backward
 * ones.  There one packing costs far more than its ops and tensors, and
 * hybrid, which budgeted builds by ids alone, took 35 s at 800 ops and over 5
 * minutes at 1,900; its budget now charges what packing walked (rctx.work,
 * HY_WORK_MAX).  This checks the charge: the search block's work is more
 * than the builds' ids, and the plan is valid. */
static sa_dfg_graph *rb_fragmenting(rb_rng *r, int n)
{
    sa_dfg_graph *g = sa_dfg_new("frag");
    int32_t *made = malloc((size_t)(2 * n + 1) * sizeof *made), nm = 0;
    ck_assert_ptr_nonnull(made);
    made[nm++] = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, rb_int(r, 1, 1 << 20));
    char nm_[32];
    for (int i = 0; i < n; i++) {
        rb_op o = {0};
        for (int k = rb_int(r, 1, 3); k > 0; k--)
            rb_add_in(&o, made[rb_int(r, 0, nm - 1)]);
        for (int k = rb_int(r, 1, 2); k > 0; k--) {
            snprintf(nm_, sizeof nm_, "t%d_%d", i, k);
            int64_t b = rb_pct(r, 40) ? rb_int(r, 1, 64) : rb_int(r, 1, 1 << 20);
            made[nm] = sa_dfg_add_tensor(g, nm_, i < n * 3 / 5 ? SA_DFG_ACTIVATION : SA_DFG_GRADIENT, b);
            o.out[o.n_out++] = made[nm++];
        }
        snprintf(nm_, sizeof nm_, "op%d", i);
        int32_t id = sa_dfg_add_op(g, nm_, "conv2d", i < n * 3 / 5 ? SA_DFG_FORWARD : SA_DFG_BACKWARD, o.in, o.n_in, o.out,
                                o.n_out);
        ck_assert_int_ge(id, 0);
        g->ops[id].time_us = rb_int(r, 1, 400) / 4.0;
    }
    free(made);
    sa_err err = {0};
    ck_assert_msg(sa_dfg_finalize(g, "frag", &err) == SA_OK, "generator bug: %s", err.msg);
    return g;
}

START_TEST(test_hybrid_charges_packing_work)
{
    rb_rng r = {7};
    int planned = 0;
    for (int i = 0; i < 4; i++) {
        sa_dfg_graph *g = rb_fragmenting(&r, 60 + 20 * i);
        int64_t peak = sa_dfg_peak_bytes(g, NULL);
        sa_dfg_device d = rb_dev(peak * (6 + i) / 10);
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run("hybrid", g, &d, &p, &err);
        ck_assert_msg(st == SA_OK || st == SA_EINFEASIBLE, "hybrid on fragmenting graph %d: %s", i, err.msg);
        if (st == SA_OK) {
            planned++;
            tu_check_policy_plan(p, g, "hybrid on a fragmenting graph", true);
            const char *b = strstr(p->search_json, "\"builds\":"), *w = strstr(p->search_json, "\"work\":");
            ck_assert_msg(b && w, "%s", p->search_json);
            long long builds = atoll(b + 9), work = atoll(w + 7);
            long long ids = (long long)g->n_ops + g->n_tensors;
            ck_assert_msg(work > builds * ids && work <= (long long)1.2e9, "builds %lld x %lld ids, work %lld", builds,
                          ids, work);
        }
        sa_plan_free(p);
        sa_dfg_free(g);
    }
    ck_assert_int_gt(planned, 0);
}
END_TEST

Suite *suite_robust(void)
{
    Suite *s = suite_create("robust");
    TCase *tc = tcase_create("robust");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_zero_time_sink_every_policy);
    tcase_add_test(tc, test_zero_time_hand_plan_validates);
    tcase_add_test(tc, test_huge_times_refused_as_bad_input);
    tcase_add_test(tc, test_byte_sums_past_2_63);
    tcase_add_test(tc, test_plan_predicted_bytes_past_2_53_read_back);
    tcase_add_test(tc, test_pool_top_up_capped_by_demand);
    tcase_add_test(tc, test_pool_floors_of_a_wide_op);
    tcase_add_test(tc, test_search_at_huge_budgets);
    tcase_add_test(tc, test_first_op_reads_only_persistent);
    tcase_add_test(tc, test_json_trailing_data_and_duplicate_keys);
    tcase_add_test(tc, test_error_lines_escape_control_characters);
    tcase_add_test(tc, test_out_temps_removed_and_links_kept);
    tcase_add_test(tc, test_random_graphs_every_policy);
    tcase_add_test(tc, test_hybrid_charges_packing_work);
    suite_add_tcase(s, tc);
    return s;
}
