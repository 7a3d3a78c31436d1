/* test_emit.c - the plan views: golden summary and memory CSV of a hand plan,
 * a trace that parses with the expected tracks, DOT that Graphviz accepts, an
 * SVG that is well-formed XML, the swapexec graph, and check's verdicts.
 *
 * Golden files live in test/golden/ (make test runs from the repository
 * root).  To regenerate them after an intended change of format, run
 *   SA_UPDATE_GOLDEN=1 CK_RUN_SUITE=emit build/test/run_tests
 * and review the diff. */
#include <check.h>
#include <math.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/planner.h"
#include "swapadvisor/zoo.h"
#include "swapadvisor/emit.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/sa_io.h"
#include "test_util.h"

static sa_dfg_graph *tiny(void)
{
    sa_dfg_graph *g;
    sa_err err;
    const char *t = tu_tiny_json();
    ck_assert_int_eq(sa_dfg_parse(t, strlen(t), "tiny.json", &g, &err), SA_OK);
    return g;
}

/* The hand plan of test_plan.c: 16 bytes/us each way, so 16-byte tensors take
 * 1 us and 32-byte ones 2 us.  Tensors 0 x input 16, 1 w param 32, 2 y 16,
 * 3 dy 16, 4 dw 32, 5 ws 8; ops 0 fc, 1 loss, 2 fc_bw, 3 sgd.
 * Timeline: x in [0,1], w in [1,3], fc [3,4.5], loss [4.5,5.5], fc_bw
 * [5.5,6.5], sgd [6.5,7.5], w out [7.5,9.5].  With overlap set, dy lands on y. */
static sa_plan *hand_plan(const sa_dfg_graph *g, bool overlap)
{
    sa_dfg_device d = {"hand", 256, 16e6, 16e6, 32e6, 0, 0};
    sa_plan *p = sa_plan_new(g, &d);
    int32_t sched[] = {0, 1, 2, 3};
    sa_plan_set_schedule(p, sched, 4);
    int32_t d01[] = {0, 1}, d5[] = {5};
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 0, NULL, 0);   /* 0 */
    sa_plan_add_node(p, SA_PLAN_SWAP_IN, 1, NULL, 0);   /* 1 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 0, d01, 2);    /* 2 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 1, NULL, 0);   /* 3 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 2, NULL, 0);   /* 4 */
    sa_plan_add_node(p, SA_PLAN_COMPUTE, 3, NULL, 0);   /* 5 */
    sa_plan_add_node(p, SA_PLAN_SWAP_OUT, 1, d5, 1);    /* 6 */
    sa_plan_add_placement(p, 0, 0, 0, 4);            /* x */
    sa_plan_add_placement(p, 1, 16, 1, 6);           /* w */
    sa_plan_add_placement(p, 2, 48, 2, 3);           /* y */
    sa_plan_add_placement(p, 5, 64, 2, 2);           /* ws */
    sa_plan_add_placement(p, 3, overlap ? 48 : 80, 3, 4); /* dy */
    sa_plan_add_placement(p, 4, 96, 4, 5);           /* dw */
    p->arena_bytes = 128;
    sa_err err;
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    return p;
}

/* A chain of fully connected layers with a loss and sgd updates: big enough
 * for the topo policy to swap when memory is short. */
static sa_dfg_graph *chain(int layers)
{
    sa_dfg_graph *g = sa_dfg_new("chain");
    const int64_t KB = 1024;
    int32_t *x = calloc((size_t)layers + 1, sizeof *x), *w = calloc((size_t)layers, sizeof *w);
    char name[64];
    x[0] = sa_dfg_add_tensor(g, "x0", SA_DFG_INPUT, 64 * KB);
    for (int l = 0; l < layers; l++) {
        snprintf(name, sizeof name, "W%d", l);
        w[l] = sa_dfg_add_tensor(g, name, SA_DFG_PARAM, (32 + 16 * (l % 2)) * KB);
        snprintf(name, sizeof name, "x%d", l + 1);
        x[l + 1] = sa_dfg_add_tensor(g, name, SA_DFG_ACTIVATION, (64 + 32 * (l % 3)) * KB);
        int32_t in[] = {x[l], w[l]}, out[] = {x[l + 1]};
        snprintf(name, sizeof name, "fc%d", l);
        sa_dfg_add_op(g, name, "matmul", SA_DFG_FORWARD, in, 2, out, 1);
    }
    int32_t dx = sa_dfg_add_tensor(g, "dloss", SA_DFG_GRADIENT, g->tensors[x[layers]].bytes);
    int32_t il[] = {x[layers]}, ol[] = {dx};
    sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, il, 1, ol, 1);
    for (int l = layers - 1; l >= 0; l--) {
        snprintf(name, sizeof name, "grad/W%d", l);
        int32_t dw = sa_dfg_add_tensor(g, name, SA_DFG_GRADIENT, g->tensors[w[l]].bytes);
        snprintf(name, sizeof name, "grad/x%d", l);
        int32_t ndx = sa_dfg_add_tensor(g, name, SA_DFG_GRADIENT, g->tensors[x[l]].bytes);
        int32_t in[] = {dx, x[l], w[l]}, out[] = {ndx, dw}, ui[] = {w[l], dw}, uo[] = {w[l]};
        snprintf(name, sizeof name, "fc%d/bwd", l);
        sa_dfg_add_op(g, name, "matmul_bwd", SA_DFG_BACKWARD, in, 3, out, 2);
        snprintf(name, sizeof name, "sgd/W%d", l);
        sa_dfg_add_op(g, name, "sgd_update", SA_DFG_UPDATE, ui, 2, uo, 1);
        dx = ndx;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 3.0 + (i * 5 % 7);
    sa_err err;
    ck_assert_msg(sa_dfg_finalize(g, "chain", &err) == SA_OK, "%s", err.msg);
    free(x);
    free(w);
    return g;
}

/* A topo plan of chain(layers) in the least memory, in twentieths of what the
 * schedule needs without swapping, that the size-class pool can run (it may
 * need more than that peak: objects are rounded up to their class). */
static sa_plan *chain_plan(const sa_dfg_graph *g)
{
    sa_dfg_device d = {"chain-dev", 1LL << 40, 4e9, 4e9, 6e9, 5.0, 0};
    sa_plan *ideal, *p = NULL;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run("ideal", g, &d, &ideal, &err) == SA_OK, "%s", err.msg);
    sa_emit_curve ns;
    ck_assert_msg(sa_emit_noswap_curve(ideal, g, NULL, &ns, &err) == SA_OK, "%s", err.msg);
    for (int k = 10; k <= 40 && !p; k++) {
        d.memory_bytes = ns.peak * k / 20;
        sa_status st = sa_policy_run("topo", g, &d, &p, &err);
        ck_assert_msg(st == SA_OK || st == SA_EINFEASIBLE, "%s", err.msg);
    }
    ck_assert_msg(p != NULL, "%s", err.msg);
    sa_emit_curve_free(&ns);
    sa_plan_free(ideal);
    return p;
}

typedef sa_status (*emitter)(const sa_plan *, const sa_dfg_graph *, FILE *, sa_err *);

/* Runs an emitter into a malloc'd string (caller frees). */
static char *emit_str(emitter fn, const sa_plan *p, const sa_dfg_graph *g, sa_status want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    sa_err err = {0};
    sa_status st = fn(p, g, f, &err);
    fclose(f);
    ck_assert_msg(st == want, "status %d, wanted %d: %s", st, want, err.msg);
    return buf;
}

/* Compares with test/golden/NAME exactly, or rewrites it under SA_UPDATE_GOLDEN. */
static void golden(const char *name, const char *got)
{
    char path[256];
    snprintf(path, sizeof path, "test/golden/%s", name);
    sa_err err = {0};
    if (getenv("SA_UPDATE_GOLDEN")) {
        ck_assert_msg(sa_write_file(path, got, strlen(got), &err) == SA_OK, "%s", err.msg);
        return;
    }
    char *want;
    size_t len;
    ck_assert_msg(sa_read_file(path, &want, &len, &err) == SA_OK, "%s (run from the repository root)", err.msg);
    ck_assert_msg(strcmp(got, want) == 0, "%s differs from the golden file:\n--- got ---\n%s--- want ---\n%s", path,
                  got, want);
    free(want);
}

/* Writes text to a file in a fresh temporary directory; *dir to remove. */
static char *tmp_file(const char *text, const char *name, char **dir)
{
    *dir = tu_tmpdir();
    size_t n = strlen(*dir) + strlen(name) + 2;
    char *path = malloc(n);
    snprintf(path, n, "%s/%s", *dir, name);
    sa_err err = {0};
    ck_assert_msg(sa_write_file(path, text, strlen(text), &err) == SA_OK, "%s", err.msg);
    return path;
}

static void tmp_remove(char *path, char *dir)
{
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

static bool have_tool(const char *name)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

START_TEST(test_summary_golden)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    char *s = emit_str(sa_emit_summary, p, g, SA_OK);
    golden("emit_hand_summary.txt", s);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_memory_csv_golden)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    char *s = emit_str(sa_emit_memory_csv, p, g, SA_OK);
    golden("emit_hand_memory.csv", s);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_memory_curves)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    sa_err err = {0};
    sa_emit_curve c, ns;
    ck_assert_int_eq(sa_emit_memory_curve(p, g, NULL, &c, &err), SA_OK);
    /* x from 0, w from 1, y+ws at fc's start (3), ws gone at 4.5, dy at 4.5,
     * y gone at 5.5, dw at 5.5, x and dy gone at 6.5, dw at 7.5, w at 9.5 */
    static const double t[] = {0, 1, 3, 4.5, 5.5, 6.5, 7.5, 9.5};
    static const int64_t b[] = {16, 48, 72, 80, 96, 64, 32, 0};
    ck_assert_int_eq(c.n, 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_double_eq_tol(c.time_us[i], t[i], 1e-9);
        ck_assert_int_eq(c.bytes[i], b[i]);
    }
    ck_assert_int_eq(c.peak, 96);
    /* without swapping: w always (32); x at fc..fc_bw, y fc..loss, ws fc,
     * dy loss..fc_bw, dw fc_bw..sgd */
    ck_assert_int_eq(sa_emit_noswap_curve(p, g, NULL, &ns, &err), SA_OK);
    ck_assert_int_eq(ns.peak, 32 + 16 + 16 + 32);
    ck_assert_int_eq(ns.peak, sa_dfg_peak_bytes(g, p->schedule));
    ck_assert_double_eq_tol(ns.time_us[0], 0, 1e-9);
    ck_assert_int_eq(ns.bytes[0], 32);
    ck_assert_int_eq(ns.bytes[ns.n - 1], 32);
    ck_assert_double_eq_tol(ns.time_us[ns.n - 1], 7.5, 1e-9);
    sa_emit_curve_free(&c);
    sa_emit_curve_free(&ns);
    sa_plan_free(p);
    sa_dfg_free(g);

    /* a plan that swaps stays under its capacity, and the no-swap curve
     * agrees with the graph's own peak for the same schedule */
    g = chain(6);
    p = chain_plan(g);
    ck_assert_int_eq(sa_emit_memory_curve(p, g, NULL, &c, &err), SA_OK);
    ck_assert_int_eq(sa_emit_noswap_curve(p, g, NULL, &ns, &err), SA_OK);
    ck_assert_int_le(c.peak, p->device.memory_bytes);
    ck_assert_int_eq(ns.peak, sa_dfg_peak_bytes(g, p->schedule));
    for (int32_t i = 1; i < c.n; i++) {
        ck_assert(c.time_us[i] > c.time_us[i - 1]);
        ck_assert_int_ne(c.bytes[i], c.bytes[i - 1]);
    }
    ck_assert_int_eq(c.bytes[c.n - 1], 0);
    ck_assert_double_eq_tol(c.time_us[c.n - 1], p->predicted.iteration_us, 1e-6);
    sa_emit_curve_free(&c);
    sa_emit_curve_free(&ns);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

static int count_events(const cJSON *evs, const char *ph, int tid)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        const cJSON *p = cJSON_GetObjectItem(e, "ph"), *t = cJSON_GetObjectItem(e, "tid");
        if (cJSON_IsString(p) && strcmp(p->valuestring, ph) == 0 && (tid < 0 || (cJSON_IsNumber(t) && t->valueint == tid)))
            n++;
    }
    return n;
}

/* A trace time back in integer nanoseconds: sa_emit_trace prints whole ns as
 * microseconds with three decimals, so this is exact. */
static int64_t trace_ns(const cJSON *e, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(e, key);
    ck_assert_msg(cJSON_IsNumber(v), "event without %s", key);
    double ns = v->valuedouble * 1000.0;
    int64_t r = llround(ns);
    ck_assert_msg(fabs(ns - (double)r) < 1e-3, "%s %.6f is not a whole nanosecond", key, v->valuedouble);
    return r;
}

typedef struct slice {
    int64_t t0, t1;
    int32_t node;
} slice;

static int cmp_slice(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* No two slices of one track overlap (Perfetto cannot draw that); one flow
 * "s"/"f" pair per cross-stream dependency, each end inside its node's slice;
 * one stall instant per sa_emit_stalls entry, naming the dependency it waited for. */
static void check_trace_tracks(const sa_plan *p, const sa_dfg_graph *g, const cJSON *evs)
{
    slice *sl = calloc((size_t)p->n_nodes + 1, sizeof *sl);
    int32_t *tid = calloc((size_t)p->n_nodes + 1, sizeof *tid);
    int32_t n = 0, flows_s = 0, flows_f = 0, instants = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X"))
            continue;
        int32_t v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "node")->valueint;
        ck_assert(v >= 0 && v < p->n_nodes);
        sl[v] = (slice){trace_ns(e, "ts"), trace_ns(e, "ts") + trace_ns(e, "dur"), v};
        tid[v] = cJSON_GetObjectItem(e, "tid")->valueint;
        n++;
    }
    ck_assert_int_eq(n, p->n_nodes);
    for (int t = 1; t <= SA_PLAN_STREAM_COUNT; t++) {
        slice *track = calloc((size_t)n + 1, sizeof *track);
        int32_t k = 0;
        for (int32_t v = 0; v < n; v++)
            if (tid[v] == t)
                track[k++] = sl[v];
        qsort(track, (size_t)k, sizeof *track, cmp_slice);
        for (int32_t i = 1; i < k; i++)
            ck_assert_msg(track[i].t0 >= track[i - 1].t1, "track %d: node %d [%lld, %lld] overlaps node %d from %lld ns",
                          t, track[i - 1].node, (long long)track[i - 1].t0, (long long)track[i - 1].t1, track[i].node,
                          (long long)track[i].t0);
        free(track);
    }
    int32_t cross = 0;
    for (int32_t v = 0; v < p->n_nodes; v++)
        for (int32_t k = 0; k < p->nodes[v].n_deps; k++)
            cross += sa_plan_kind_stream(p->nodes[p->deps[p->nodes[v].dep_off + k]].kind) !=
                     sa_plan_kind_stream(p->nodes[v].kind);
    sa_emit_timeline tl;
    sa_emit_stall *st = NULL;
    int32_t n_st = 0;
    sa_err err = {0};
    ck_assert_int_eq(sa_emit_timeline_run(p, g, &tl, &err), SA_OK);
    ck_assert_int_eq(sa_emit_stalls(p, &tl, &st, &n_st, &err), SA_OK);
    int32_t *stall_of = malloc(((size_t)p->n_nodes + 1) * sizeof *stall_of);
    for (int32_t v = 0; v < p->n_nodes; v++)
        stall_of[v] = -2;
    for (int32_t i = 0; i < n_st; i++)
        stall_of[st[i].node] = st[i].waited_for;
    int32_t *dep_owner = malloc(((size_t)p->n_deps + 1) * sizeof *dep_owner);
    for (int32_t k = 0; k < p->n_deps; k++)
        dep_owner[k] = -1;
    for (int32_t v = 0; v < p->n_nodes; v++)
        for (int32_t k = 0; k < p->nodes[v].n_deps; k++)
            dep_owner[p->nodes[v].dep_off + k] = v;
    cJSON_ArrayForEach(e, evs)
    {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            int32_t id = cJSON_GetObjectItem(e, "id")->valueint;
            ck_assert(id >= 0 && id < p->n_deps);
            int32_t owner = dep_owner[id]; /* the node whose deps list holds index id */
            ck_assert_int_ge(owner, 0);
            int32_t v = ph[0] == 's' ? p->deps[id] : owner;
            int64_t t = trace_ns(e, "ts");
            ck_assert_int_eq(cJSON_GetObjectItem(e, "tid")->valueint, tid[v]);
            ck_assert_msg(t >= sl[v].t0 && t <= sl[v].t1, "flow %d end outside node %d", id, v);
            if (ph[0] == 's')
                flows_s++;
            else
                flows_f++;
        } else if (strcmp(ph, "i") == 0) {
            const cJSON *args = cJSON_GetObjectItem(e, "args");
            ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, "stall");
            ck_assert_int_eq(cJSON_GetObjectItem(e, "tid")->valueint, 1);
            int32_t v = cJSON_GetObjectItem(args, "node")->valueint;
            ck_assert_int_eq(trace_ns(e, "ts"), sl[v].t0);
            ck_assert(cJSON_IsString(cJSON_GetObjectItem(args, "waited_for")));
            ck_assert_int_ne(stall_of[v], -2);
            ck_assert_int_eq(cJSON_GetObjectItem(args, "waited_for_node")->valueint, stall_of[v]);
            instants++;
        }
    }
    ck_assert_int_eq(flows_s, cross);
    ck_assert_int_eq(flows_f, cross);
    ck_assert_int_eq(instants, n_st);
    free(stall_of);
    free(dep_owner);
    free(st);
    sa_emit_timeline_free(&tl);
    free(sl);
    free(tid);
}

static void check_trace(const sa_plan *p, const sa_dfg_graph *g)
{
    char *s = emit_str(sa_emit_trace, p, g, SA_OK);
    cJSON *root = cJSON_Parse(s);
    ck_assert_msg(root != NULL, "the trace is not JSON near: %.60s", cJSON_GetErrorPtr());
    const cJSON *evs = cJSON_GetObjectItem(root, "traceEvents");
    ck_assert(cJSON_IsArray(evs));
    int want[SA_PLAN_STREAM_COUNT] = {0};
    for (int32_t v = 0; v < p->n_nodes; v++)
        want[sa_plan_kind_stream(p->nodes[v].kind)]++;
    for (int s2 = 0; s2 < SA_PLAN_STREAM_COUNT; s2++)
        ck_assert_int_eq(count_events(evs, "X", s2 + 1), want[s2]);
    /* each track named once */
    const char *names[] = {"compute", "h2d", "d2h"};
    int named = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        const cJSON *nm = cJSON_GetObjectItem(e, "name"), *args = cJSON_GetObjectItem(e, "args");
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "M") || strcmp(nm->valuestring, "thread_name"))
            continue;
        int tid = cJSON_GetObjectItem(e, "tid")->valueint;
        ck_assert_int_ge(tid, 1);
        ck_assert_int_le(tid, 3);
        ck_assert_str_eq(cJSON_GetObjectItem(args, "name")->valuestring, names[tid - 1]);
        named++;
    }
    ck_assert_int_eq(named, 3);
    /* the counter follows the memory curve and every X event has ts, dur, args */
    sa_emit_curve c;
    sa_err err = {0};
    ck_assert_int_eq(sa_emit_memory_curve(p, g, NULL, &c, &err), SA_OK);
    ck_assert_int_eq(count_events(evs, "C", -1), c.n);
    int64_t top = 0;
    cJSON_ArrayForEach(e, evs)
    {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        const cJSON *args = cJSON_GetObjectItem(e, "args");
        if (strcmp(ph, "C") == 0) {
            ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, "device memory");
            int64_t b = (int64_t)cJSON_GetObjectItem(args, "bytes")->valuedouble;
            top = b > top ? b : top;
        } else if (strcmp(ph, "X") == 0) {
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "ts")));
            ck_assert(cJSON_GetObjectItem(e, "dur")->valuedouble >= 0);
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(args, "node")));
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(args, "bytes")));
            ck_assert(cJSON_IsString(cJSON_GetObjectItem(args, "kind")));
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(args, "op")) ||
                      cJSON_IsNumber(cJSON_GetObjectItem(args, "tensor")));
        }
    }
    ck_assert_int_eq(top, c.peak);
    check_trace_tracks(p, g, evs);
    sa_emit_curve_free(&c);
    cJSON_Delete(root);
    free(s);
}

/* Placements that last no time still hold their memory while their nodes run
 * (docs/formats.md, "Equal times"): with every op at 0 us the hand plan's
 * activations and gradients are all placed and freed at one instant (t = 3,
 * after w's swap-in), in the order of the nodes: fc opens y and ws and closes
 * ws, loss opens dy and closes y, fc_bw opens dw and closes x and dy, sgd
 * closes dw.  The peak is x + w + y + dy (+ dw after y) = 96, as with times;
 * the curve's rows only see x and w. */
START_TEST(test_memory_peak_counts_zero_time_placements)
{
    sa_dfg_graph *g = tiny();
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 0;
    sa_plan *p = hand_plan(g, false);
    sa_err err = {0};
    sa_emit_curve c;
    ck_assert_int_eq(sa_emit_memory_curve(p, g, NULL, &c, &err), SA_OK);
    ck_assert_int_eq(c.peak, 96);
    for (int32_t i = 0; i < c.n; i++)
        ck_assert_int_le(c.bytes[i], 48);
    sa_emit_curve_free(&c);
    char *s = emit_str(sa_emit_summary, p, g, SA_OK);
    ck_assert_msg(strstr(s, "memory      peak 96 B in use") != NULL, "%s", s);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_trace_parses_with_tracks_and_counter)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    check_trace(p, g);
    sa_plan_free(p);
    sa_dfg_free(g);
    g = chain(6);
    p = chain_plan(g);
    ck_assert_int_gt(p->predicted.h2d_bytes, 0); /* the point: a plan that swaps */
    check_trace(p, g);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Zoo plans at half and a quarter of their peak: the real shapes whose
 * traces overlapped by a rounding nanosecond (issue 17). */
START_TEST(test_trace_zoo_plans_never_overlap)
{
    const char *models[] = {"resnet-50", "rnn-2-1k", "gpt-2-256"};
    sa_devprof *prof;
    sa_err err = {0};
    ck_assert_int_eq(sa_devprof_load_file("profiles/v100-pcie3-16gb.json", &prof, &err), SA_OK);
    for (size_t i = 0; i < SA_ARRAY_LEN(models); i++) {
        sa_dfg_graph *g;
        zoo_opts zo = {0};
        zo.batch = 8;
        ck_assert_int_eq(zoo_build(models[i], &zo, &g, &err), SA_OK);
        ck_assert_int_eq(sa_cost_profile_graph(g, prof, 0, &err), SA_OK);
        for (int frac = 2; frac <= 4; frac *= 2) {
            sa_dfg_device d = g->device;
            d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / frac;
            sa_plan *p = NULL;
            sa_status st = sa_policy_run("odswap", g, &d, &p, &err);
            ck_assert_msg(st == SA_OK || st == SA_EINFEASIBLE, "%s: %s", models[i], err.msg);
            if (st == SA_OK) {
                ck_assert_int_gt(p->predicted.h2d_bytes, 0);
                check_trace(p, g);
            }
            sa_plan_free(p);
        }
        sa_dfg_free(g);
    }
    sa_devprof_free(prof);
}
END_TEST

/* A stall names the transfer that held the compute stream up: when the
 * waiting node's last dependency is a transfer queued behind others on its
 * stream, the one of them that ran longest inside the stall (a small swap-in
 * behind a large one is not blamed for the large one's time).  Checked on
 * odswap's zoo plans: no transfer overlapping the stall from that queue ran
 * longer in it, and at least one stall blames a transfer other than a direct
 * dependency (the last dependency was named before). */
START_TEST(test_stall_blames_the_queue_ahead)
{
    sa_devprof *prof;
    sa_err err = {0};
    ck_assert_int_eq(sa_devprof_load_file("profiles/v100-pcie3-16gb.json", &prof, &err), SA_OK);
    sa_dfg_graph *g;
    zoo_opts zo = {0};
    zo.batch = 8;
    ck_assert_int_eq(zoo_build("resnet-50", &zo, &g, &err), SA_OK);
    ck_assert_int_eq(sa_cost_profile_graph(g, prof, 0, &err), SA_OK);
    int indirect = 0;
    for (int frac = 2; frac <= 4; frac *= 2) {
        sa_dfg_device d = g->device;
        d.memory_bytes = sa_dfg_peak_bytes(g, NULL) / frac;
        sa_plan *p = NULL;
        ck_assert_int_eq(sa_policy_run("odswap", g, &d, &p, &err), SA_OK);
        sa_emit_timeline tl;
        sa_emit_stall *st = NULL;
        int32_t n = 0;
        ck_assert_int_eq(sa_emit_timeline_run(p, g, &tl, &err), SA_OK);
        ck_assert_int_eq(sa_emit_stalls(p, &tl, &st, &n, &err), SA_OK);
        for (int32_t i = 0; i < n; i++) {
            int32_t v = st[i].node, w = st[i].waited_for;
            if (w < 0 || sa_plan_kind_stream(p->nodes[w].kind) == SA_PLAN_STREAM_COMPUTE)
                continue;
            double s0 = tl.start[v] - st[i].gap_us, s1 = tl.start[v];
            double mine = fmin(tl.end[w], s1) - fmax(tl.start[w], s0);
            int32_t last = -1; /* the dependency that finished last */
            for (int32_t k = 0; k < p->nodes[v].n_deps; k++) {
                int32_t u = p->deps[p->nodes[v].dep_off + k];
                if (last < 0 || tl.end[u] > tl.end[last])
                    last = u;
            }
            indirect += last != w;
            for (int32_t u = 0; u < p->n_nodes; u++)
                if (sa_plan_kind_stream(p->nodes[u].kind) == sa_plan_kind_stream(p->nodes[w].kind) &&
                    tl.end[u] <= tl.end[last] && tl.end[u] > s0 && u != w)
                    ck_assert_msg(fmin(tl.end[u], s1) - fmax(tl.start[u], s0) <= mine + 1e-9,
                                  "stall before node %d blames node %d (%.3f us in it), node %d ran longer in it", v, w,
                                  mine, u);
        }
        free(st);
        sa_emit_timeline_free(&tl);
        sa_plan_free(p);
    }
    ck_assert_int_gt(indirect, 0);
    sa_dfg_free(g);
    sa_devprof_free(prof);
}
END_TEST

static char *dot_str(const sa_plan *p, const sa_dfg_graph *g, int32_t a, int32_t b, sa_status want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sa_err err = {0};
    sa_status st = sa_emit_dot(p, g, a, b, f, &err);
    fclose(f);
    ck_assert_msg(st == want, "status %d, wanted %d: %s", st, want, err.msg);
    return buf;
}

static void expect_dot_accepts(const char *text)
{
    if (!have_tool("dot"))
        return; /* Graphviz missing: only the structure checks below run */
    char *dir, *path = tmp_file(text, "plan.dot", &dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o /dev/null 2>&1", path);
    ck_assert_msg(system(cmd) == 0, "dot rejects:\n%s", text);
    tmp_remove(path, dir);
}

static int count_str(const char *s, const char *needle)
{
    int n = 0;
    for (const char *q = strstr(s, needle); q; q = strstr(q + 1, needle))
        n++;
    return n;
}

START_TEST(test_dot_renders_and_windows)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    char *s = dot_str(p, g, 0, -1, SA_OK);
    ck_assert_int_eq(count_str(s, "shape=box"), 4);
    ck_assert_int_eq(count_str(s, "shape=invhouse"), 2);
    ck_assert_int_eq(count_str(s, "shape=house"), 1);
    ck_assert_int_eq(count_str(s, "style=dashed"), 3); /* deps 0->2, 1->2, 5->6 */
    expect_dot_accepts(s);
    free(s);
    /* position 0 (fc) and the two swap-ins it waits for; the update's swap-out is out */
    s = dot_str(p, g, 0, 0, SA_OK);
    ck_assert_int_eq(count_str(s, "shape=box"), 1);
    ck_assert_int_eq(count_str(s, "shape=invhouse"), 2);
    ck_assert_int_eq(count_str(s, "shape=house"), 0);
    expect_dot_accepts(s);
    free(s);
    s = dot_str(p, g, 2, 4, SA_EUSAGE);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);

    g = chain(6);
    p = chain_plan(g);
    s = dot_str(p, g, 0, -1, SA_OK);
    expect_dot_accepts(s);
    free(s);
    s = dot_str(p, g, 5, 9, SA_OK);
    ck_assert_int_eq(count_str(s, "shape=box"), 5);
    ck_assert_ptr_nonnull(strstr(s, "schedule positions 5..9"));
    expect_dot_accepts(s);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_memory_svg_is_xml)
{
    sa_dfg_graph *g = chain(6);
    sa_plan *p = chain_plan(g);
    char *s = emit_str(sa_emit_memory_svg, p, g, SA_OK);
    ck_assert_ptr_nonnull(strstr(s, "<svg"));
    ck_assert_ptr_nonnull(strstr(s, "time (us)"));
    ck_assert_ptr_nonnull(strstr(s, "device memory in use (MB)"));
    ck_assert_ptr_nonnull(strstr(s, "capacity"));
    ck_assert_ptr_nonnull(strstr(s, "without swapping"));
    ck_assert_ptr_null(strstr(s, "class=\"inset\"")); /* the chain plan's no-swap peak is near its capacity */
    if (have_tool("xmllint")) {
        char *dir, *path = tmp_file(s, "memory.svg", &dir);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>&1", path);
        ck_assert_msg(system(cmd) == 0, "xmllint rejects the SVG");
        tmp_remove(path, dir);
    }
    free(s);
    /* zoomed: the inset and its note; a capacity of whole GiB says so */
    p->device.memory_bytes = 1LL << 30;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sa_err err = {0};
    ck_assert_int_eq(sa_emit_memory_svg_scaled(p, g, SA_EMIT_SCALE_ZOOM, f, &err), SA_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "class=\"inset\""));
    ck_assert_ptr_nonnull(strstr(buf, "full scale: no-swap peak"));
    ck_assert_ptr_nonnull(strstr(buf, "1.07 GB = 1 GiB"));
    free(buf);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* Legend entries never overlap: each starts right of the previous one's
 * measured end, or on a new row. */
START_TEST(test_memory_svg_legend_and_units)
{
    sa_dfg_graph *g = chain(6);
    sa_plan *p = chain_plan(g);
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us *= 3e5; /* seconds-long ops: the axis switches to s */
    sa_err err = {0};
    ck_assert_int_eq(planner_predict(p, g, NULL, NULL, &err), SA_OK);
    char *s = emit_str(sa_emit_memory_svg, p, g, SA_OK);
    ck_assert_ptr_nonnull(strstr(s, "time (s)"));
    /* legend items: "<line x1=X y1=Y x2=X+28" then "<text x=X+34 y=Y+4 font-size=12>TEXT" */
    double prev_end = -1, prev_y = -1;
    int items = 0;
    for (const char *q = strstr(s, "<text x=\""); q; q = strstr(q + 1, "<text x=\"")) {
        double x, y;
        int used = 0;
        if (sscanf(q, "<text x=\"%lf\" y=\"%lf\"%n", &x, &y, &used) != 2 ||
            strncmp(q + used, " font-size=\"12\">", 16) != 0 || y < 500)
            continue;
        const char *t = q + used + 16, *e = strstr(t, "</text>");
        /* 6 px a character: Helvetica's average at 12 px is about 5.6 */
        double end = x + 6.0 * (double)(e - t);
        if (y == prev_y)
            ck_assert_msg(x - 34 > prev_end, "legend item at %.1f overlaps the previous one ending at %.1f", x, prev_end);
        prev_end = end;
        prev_y = y;
        items++;
    }
    ck_assert_int_eq(items, 3);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

typedef sa_status (*multi_emitter)(const sa_plan *const *, const char *const *, int32_t, const sa_dfg_graph *, FILE *,
                                   sa_err *);

static char *multi_str(multi_emitter fn, const sa_plan *const *plans, const char *const *labels, int32_t n,
                       const sa_dfg_graph *g, sa_status want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    sa_err err = {0};
    sa_status st = fn(plans, labels, n, g, f, &err);
    fclose(f);
    ck_assert_msg(st == want, "status %d, wanted %d: %s", st, want, err.msg);
    return buf;
}

/* Two plans of one chain: topo in little memory and the same in plenty. */
static void two_plans(const sa_dfg_graph *g, sa_plan **a, sa_plan **b)
{
    *a = chain_plan(g);
    sa_dfg_device d = (*a)->device;
    d.memory_bytes *= 4;
    sa_err err = {0};
    ck_assert_msg(sa_policy_run("topo", g, &d, b, &err) == SA_OK, "%s", err.msg);
}

START_TEST(test_compare_svg)
{
    sa_dfg_graph *g = chain(6);
    sa_plan *a, *b;
    two_plans(g, &a, &b);
    const sa_plan *plans[] = {a, b};
    const char *labels[] = {"tight <topo>", "roomy"};
    char *s = multi_str(sa_emit_compare_svg, plans, labels, 2, g, SA_OK);
    ck_assert_int_eq(count_str(s, "class=\"plan-row\""), 2);
    ck_assert_ptr_nonnull(strstr(s, "tight &lt;topo&gt;"));
    ck_assert_int_eq(count_str(s, "capacity "), 2); /* two budgets, two lines */
    ck_assert_int_ge(count_str(s, "<path d=\"M"), 2);
    if (have_tool("xmllint")) {
        char *dir, *path = tmp_file(s, "compare.svg", &dir);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>&1", path);
        ck_assert_msg(system(cmd) == 0, "xmllint rejects the comparison SVG");
        tmp_remove(path, dir);
    }
    free(s);
    s = multi_str(sa_emit_compare_svg, plans, labels, 0, g, SA_EUSAGE);
    free(s);
    sa_plan_free(a);
    sa_plan_free(b);
    sa_dfg_free(g);
}
END_TEST

/* The page is one file that reaches nothing outside itself, and its data
 * block is JSON describing every node and placement of every plan. */
START_TEST(test_html_self_contained)
{
    sa_dfg_graph *g = chain(6);
    sa_plan *a, *b;
    two_plans(g, &a, &b);
    const sa_plan *plans[] = {a, b};
    const char *labels[] = {"a</script><b>", "b"};
    char *s = multi_str(sa_emit_html, plans, labels, 2, g, SA_OK);
    const char *forbidden[] = {"src=", "href=", "<link", "@import", "url(http", "fetch(", "XMLHttpRequest"};
    for (size_t i = 0; i < SA_ARRAY_LEN(forbidden); i++)
        ck_assert_msg(strstr(s, forbidden[i]) == NULL, "the page refers outside itself: %s", forbidden[i]);
    ck_assert_int_eq(count_str(s, "</script>"), 2); /* the data and the code; a name cannot close them */
    ck_assert_ptr_nonnull(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"compare\""));
    const char *open_tag = "<script type=\"application/json\" id=\"plan-data\">";
    const char *d0 = strstr(s, open_tag);
    ck_assert_ptr_nonnull(d0);
    d0 += strlen(open_tag);
    const char *d1 = strstr(d0, "</script>");
    cJSON *root = cJSON_ParseWithLength(d0, (size_t)(d1 - d0));
    ck_assert_msg(root != NULL, "the data block is not JSON near %.60s", cJSON_GetErrorPtr());
    const cJSON *ps = cJSON_GetObjectItem(root, "plans");
    ck_assert_int_eq(cJSON_GetArraySize(ps), 2);
    for (int i = 0; i < 2; i++) {
        const cJSON *pj = cJSON_GetArrayItem(ps, i);
        ck_assert_str_eq(cJSON_GetObjectItem(pj, "label")->valuestring, labels[i]);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "nk")), plans[i]->n_nodes);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "ns")), plans[i]->n_nodes);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "dOff")), plans[i]->n_nodes + 1);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "deps")), plans[i]->n_deps);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "pl")), 4 * plans[i]->n_place);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pj, "stalls")) % 3, 0);
    }
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "graph"), "tensors")),
                     g->n_tensors);
    cJSON_Delete(root);
    free(s);
    sa_plan_free(a);
    sa_plan_free(b);
    sa_dfg_free(g);
}
END_TEST

/* Runs headless chromium on a file; returns its exit status, stdout in *dom
 * and stderr in *log (both malloc'd). */
static int chromium(const char *dir, const char *page, const char *what, char **dom, char **log)
{
    char cmd[2048], out[512], errp[512];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(errp, sizeof errp, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd,
             "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir='%s/profile' "
             "--enable-logging=stderr --v=0 %s 'file://%s' > '%s' 2> '%s'",
             dir, what, page, out, errp);
    int rc = system(cmd);
    size_t len;
    sa_err err = {0};
    if (sa_read_file(out, dom, &len, &err) != SA_OK)
        *dom = strdup("");
    if (sa_read_file(errp, log, &len, &err) != SA_OK)
        *log = strdup("");
    unlink(out);
    unlink(errp);
    return rc;
}

/* The page in a real browser: it loads without a console message, the
 * script fills the summary, the stall table and the plan picker, draws both
 * canvases, and a screenshot is taken (docs/emit.md shows one).  Skipped
 * when chromium is not installed (scripts/setup.sh installs it). */
START_TEST(test_html_in_headless_chromium)
{
    if (!have_tool("chromium")) {
        fprintf(stderr, "test_html_in_headless_chromium: chromium not installed, skipped\n");
        return;
    }
    char *dir = tu_tmpdir(), page[512], *dom, *log;
    /* the harness sees console errors: a broken page must show them */
    snprintf(page, sizeof page, "%s/broken.html", dir);
    sa_err err = {0};
    const char *broken = "<html><body><script>console.error('marker'); notDefined();</script></body></html>";
    ck_assert_int_eq(sa_write_file(page, broken, strlen(broken), &err), SA_OK);
    ck_assert_int_eq(chromium(dir, page, "--dump-dom", &dom, &log), 0);
    ck_assert_msg(strstr(log, ":CONSOLE") && strstr(log, "notDefined"), "chromium does not log console errors:\n%s",
                  log);
    free(dom);
    free(log);
    unlink(page);

    sa_dfg_graph *g = chain(6);
    sa_plan *a, *b;
    two_plans(g, &a, &b);
    const sa_plan *plans[] = {a, b};
    const char *labels[] = {"tight", "roomy"};
    char *s = multi_str(sa_emit_html, plans, labels, 2, g, SA_OK);
    snprintf(page, sizeof page, "%s/plan.html", dir);
    ck_assert_int_eq(sa_write_file(page, s, strlen(s), &err), SA_OK);
    ck_assert_int_eq(chromium(dir, page, "--dump-dom", &dom, &log), 0);
    ck_assert_msg(strstr(log, ":CONSOLE") == NULL, "console messages:\n%s", log);
    ck_assert_msg(strstr(dom, "data-ready=\"1\""), "the script did not finish:\n%.2000s", dom);
    ck_assert_ptr_nonnull(strstr(dom, "<table id=\"summary\"><tbody><tr><th>graph</th>"));
    ck_assert_ptr_nonnull(strstr(dom, "<table id=\"stalls\"><tbody><tr><th>#</th>"));
    ck_assert_int_eq(count_str(dom, "<option "), 2);
    ck_assert_ptr_nonnull(strstr(dom, "class=\"compare\""));
    /* both canvases drew something */
    const char *c = strstr(dom, "<canvas id=\"timeline\"");
    ck_assert_ptr_nonnull(c);
    int drawn = -1;
    const char *q = strstr(c, "data-drawn=\"");
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(sscanf(q, "data-drawn=\"%d", &drawn), 1);
    ck_assert_int_eq(drawn, a->n_nodes);
    c = strstr(dom, "<canvas id=\"memory\"");
    q = c ? strstr(c, "data-drawn=\"") : NULL;
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(sscanf(q, "data-drawn=\"%d", &drawn), 1);
    ck_assert_int_eq(drawn, a->n_place);
    free(dom);
    free(log);
    /* hovering (the page's #selftest): a stalled node names what it waited
     * for and its dependencies; a band names its tensor and why it moved */
    char self[600];
    snprintf(self, sizeof self, "%s#selftest", page);
    ck_assert_int_eq(chromium(dir, self, "--dump-dom", &dom, &log), 0);
    ck_assert_msg(strstr(log, ":CONSOLE") == NULL, "console messages:\n%s", log);
    q = strstr(dom, "data-selftest-timeline=\"");
    ck_assert_msg(q != NULL, "no hover result:\n%.2000s", dom);
    ck_assert_msg(strstr(q, "stalled") && strstr(q, "waiting for nodes[") && strstr(q, "depends on:"),
                  "timeline tooltip: %.300s", q);
    q = strstr(dom, "data-selftest-memory=\"");
    ck_assert_ptr_nonnull(q);
    ck_assert_msg(strstr(q, "(tensor ") && strstr(q, "arrived: ") && strstr(q, "left: "), "memory tooltip: %.300s", q);
    free(dom);
    free(log);

    char what[600], png[512];
    snprintf(png, sizeof png, "%s/plan.png", dir);
    snprintf(what, sizeof what, "--window-size=1200,1800 --screenshot='%s'", png);
    ck_assert_int_eq(chromium(dir, page, what, &dom, &log), 0);
    char *img;
    size_t len = 0;
    ck_assert_msg(sa_read_file(png, &img, &len, &err) == SA_OK, "no screenshot: %s", log);
    ck_assert_int_gt(len, 20000); /* a blank 1200x1800 PNG is a few KB */
    ck_assert(memcmp(img, "\x89PNG", 4) == 0);
    if (getenv("SA_KEEP_SCREENSHOT")) /* to look at it: SA_KEEP_SCREENSHOT=path */
        sa_write_file(getenv("SA_KEEP_SCREENSHOT"), img, len, &err);
    free(img);
    free(dom);
    free(log);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
    free(s);
    sa_plan_free(a);
    sa_plan_free(b);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_graph_json)
{
    sa_dfg_graph *g = chain(4);
    sa_plan *p = chain_plan(g);
    char *s = emit_str(sa_emit_graph_json, p, g, SA_OK);
    cJSON *root = cJSON_Parse(s);
    ck_assert_ptr_nonnull(root);
    ck_assert_str_eq(cJSON_GetObjectItem(root, "format")->valuestring, "swapexec");
    ck_assert_int_eq(cJSON_GetObjectItem(root, "version")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "streams")), 3);
    const cJSON *nodes = cJSON_GetObjectItem(root, "nodes"), *e;
    ck_assert_int_eq(cJSON_GetArraySize(nodes), p->n_nodes);
    int i = 0;
    cJSON_ArrayForEach(e, nodes)
    {
        const sa_plan_node *n = &p->nodes[i];
        ck_assert_int_eq(cJSON_GetObjectItem(e, "id")->valueint, i);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "kind")->valuestring, sa_plan_kind_name(n->kind));
        ck_assert_str_eq(cJSON_GetObjectItem(e, "stream")->valuestring, sa_plan_stream_name(sa_plan_kind_stream(n->kind)));
        bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
        ck_assert_int_eq(cJSON_GetObjectItem(e, op ? "op" : "tensor")->valueint, n->ref);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e, "deps")), n->n_deps);
        i++;
    }
    const cJSON *tensors = cJSON_GetObjectItem(root, "tensors");
    ck_assert_int_eq(cJSON_GetArraySize(tensors), g->n_tensors);
    int places = 0;
    cJSON_ArrayForEach(e, tensors) places += cJSON_GetArraySize(cJSON_GetObjectItem(e, "placements"));
    ck_assert_int_eq(places, p->n_place);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "resident_at_start")), p->n_res);
    ck_assert_int_eq((int64_t)cJSON_GetObjectItem(root, "arena_bytes")->valuedouble, p->arena_bytes);
    cJSON_Delete(root);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

static char *check_str(const sa_plan *p, const sa_dfg_graph *g, bool strict, sa_status want, int32_t *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sa_err err = {0};
    sa_status st = sa_emit_check(p, g, strict, 0, f, n, &err);
    fclose(f);
    ck_assert_msg(st == want, "status %d, wanted %d: %s", st, want, err.msg);
    return buf;
}

START_TEST(test_check_verdicts)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = hand_plan(g, false);
    int32_t n = -1;
    char *s = check_str(p, g, true, SA_OK, &n);
    ck_assert_int_eq(n, 0);
    ck_assert_str_eq(s, "");
    free(s);
    sa_plan_free(p);
    p = hand_plan(g, true);
    s = check_str(p, g, false, SA_EINVALID, &n);
    ck_assert_int_ge(n, 1);
    ck_assert_int_eq(count_str(s, "\n"), n);
    ck_assert_ptr_nonnull(strstr(s, "rule 4: placements 2 (tensor 2) and 4 (tensor 3) overlap"));
    free(s);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_views_refuse_foreign_or_deadlocked_plans)
{
    sa_dfg_graph *g = tiny(), *other = chain(2);
    sa_plan *p = hand_plan(g, false);
    sa_err err = {0};
    FILE *f = fopen("/dev/null", "w");
    emitter all[] = {sa_emit_summary, sa_emit_trace, sa_emit_memory_csv, sa_emit_memory_svg, sa_emit_graph_json};
    for (size_t i = 0; i < SA_ARRAY_LEN(all); i++) {
        ck_assert_int_eq(all[i](p, other, f, &err), SA_EFORMAT);
        ck_assert_msg_contains(err, "plan is for 4 ops");
    }
    ck_assert_int_eq(sa_emit_dot(p, other, 0, -1, f, &err), SA_EFORMAT);
    /* fc waits for sgd: a cycle through the compute stream */
    int32_t back = 5;
    p->deps[p->nodes[2].dep_off] = back;
    ck_assert_int_eq(sa_emit_summary(p, g, f, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "can never start");
    fclose(f);
    char *s = dot_str(p, g, 0, -1, SA_OK); /* still drawn, to show the cycle */
    ck_assert_ptr_nonnull(strstr(s, "not simulated"));
    ck_assert_ptr_nonnull(strstr(s, "n5 -> n2 [style=dashed"));
    expect_dot_accepts(s);
    free(s);
    sa_plan_free(p);
    sa_dfg_free(other);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_emit(void)
{
    Suite *s = suite_create("emit");
    TCase *tc = tcase_create("views");
    tcase_add_test(tc, test_summary_golden);
    tcase_add_test(tc, test_memory_csv_golden);
    tcase_add_test(tc, test_memory_curves);
    tcase_add_test(tc, test_memory_peak_counts_zero_time_placements);
    tcase_add_test(tc, test_trace_parses_with_tracks_and_counter);
    tcase_add_test(tc, test_trace_zoo_plans_never_overlap);
    tcase_add_test(tc, test_stall_blames_the_queue_ahead);
    tcase_add_test(tc, test_dot_renders_and_windows);
    tcase_add_test(tc, test_memory_svg_is_xml);
    tcase_add_test(tc, test_memory_svg_legend_and_units);
    tcase_add_test(tc, test_compare_svg);
    tcase_add_test(tc, test_html_self_contained);
    tcase_add_test(tc, test_graph_json);
    tcase_add_test(tc, test_check_verdicts);
    tcase_add_test(tc, test_views_refuse_foreign_or_deadlocked_plans);
    tcase_set_timeout(tc, 60); /* zoo plans under the sanitizers */
    suite_add_tcase(s, tc);
    TCase *tb = tcase_create("browser");
    tcase_add_test(tb, test_html_in_headless_chromium);
    tcase_set_timeout(tb, 300);
    suite_add_tcase(s, tb);
    return s;
}
