/* test_util.h - small helpers shared by the test files. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/validate.h"
#include "swapadvisor/zoo.h"
#include "test_suites.h" /* generated: every suite_NAME prototype */

/* Op times from a fast GPU's roofline (5 us a launch, 50 TFLOP/s, 2 TB/s):
 * the times only shape the plans. */
static inline void tu_roofline_times(sa_dfg_graph *g)
{
    for (int32_t i = 0; i < g->n_ops; i++) {
        double f = g->ops[i].flops > 0 ? g->ops[i].flops : 0;
        double b = g->ops[i].bytes_accessed > 0 ? g->ops[i].bytes_accessed : 0;
        g->ops[i].time_us = 5 + f / 5e13 * 1e6 + b / 2e12 * 1e6;
    }
}

/* Zoo model name at batch (0: its default) with tu_roofline_times; the
 * caller frees it (sa_dfg_free). */
static inline sa_dfg_graph *tu_zoo_roofline(const char *name, int batch)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    zoo_opts zo = {0};
    zo.batch = batch;
    ck_assert_msg(zoo_build(name, &zo, &g, &err) == SA_OK, "%s: %s", name, err.msg);
    tu_roofline_times(g);
    return g;
}

/* g's op times and device block from the profile file at profile (memory:
 * the device's, as dfg-profile --memory; 0 = the profile's); returns g. */
static inline sa_dfg_graph *tu_profiled(sa_dfg_graph *g, const char *profile, int64_t memory)
{
    sa_devprof *prof;
    sa_err err = {0};
    ck_assert_msg(sa_devprof_load_file(profile, &prof, &err) == SA_OK, "%s", err.msg);
    ck_assert_msg(sa_cost_profile_graph(g, prof, memory, &err) == SA_OK, "%s", err.msg);
    sa_devprof_free(prof);
    return g;
}

/* The graph file at path (relative to the repository root, where the tests
 * run), tu_profiled; the caller frees it (sa_dfg_free). */
static inline sa_dfg_graph *tu_bundled(const char *path, const char *profile, int64_t memory)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    ck_assert_msg(sa_dfg_load_file(path, &g, &err) == SA_OK, "%s", err.msg);
    return tu_profiled(g, profile, memory);
}

/* The number after key (say "\"refine_plans\":") at its first occurrence
 * in json, a search block's text; HUGE_VAL for null.  Fails the test where
 * json or the key is missing. */
static inline double tu_json_num(const char *json, const char *key)
{
    const char *at = json ? strstr(json, key) : NULL;
    ck_assert_msg(at != NULL, "no %s in the search block", key);
    at += strlen(key);
    return strncmp(at, "null", 4) ? strtod(at, NULL) : HUGE_VAL;
}

/* tu_json_num's number where it must be a finite count (the test fails on
null). */
static inline long tu_json_count(const char *json, const char *key)
{
    double v = tu_json_num(json, key);
    ck_assert_msg(isfinite(v), "%s is null in the search block", key);
    return (long)v;
}

/* p as JSON less its search block (whose wall-clock, thread and exchange
 * fields differ between runs that plan alike); p's block is dropped, the
 * text is the caller's. */
static inline char *tu_plan_text(sa_plan *p)
{
    char *json;
    sa_err err = {0};
    sa_plan_set_search_json(p, NULL);
    ck_assert_int_eq(sa_plan_to_json(p, &json, &err), SA_OK);
    return json;
}

/* Asserts that the two texts (tu_plan_text's, say) are the same, and frees
 * them. */
static inline void tu_same_text(char *a, char *b)
{
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
}

/* Runs a shell command made from fmt; returns its exit status (fails the
 * test when it could not run). */
static inline int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int tu_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st), "could not run: %s", cmd);
    return WEXITSTATUS(st);
}

/* The test runner is ROOT/BUILD/test/run_tests: root = ROOT; bin = ROOT/bin
 * for BUILD=build, else BUILD/bin (both PATH_MAX buffers). */
static inline void tu_tool_paths(char *root, char *bin)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    for (int up = 0; up < 2; up++)
        *strrchr(exe, '/') = '\0'; /* ROOT/BUILD */
    char *slash = strrchr(exe, '/');
    bool plain = strcmp(slash + 1, "build") == 0;
    snprintf(bin, PATH_MAX, "%s/bin", exe);
    *slash = '\0';
    snprintf(root, PATH_MAX, "%s", exe);
    if (plain)
        snprintf(bin, PATH_MAX, "%s/bin", root);
}

/* Returns a malloc'd copy of s with the first occurrence of from replaced by to. */
static inline char *tu_replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    ck_assert_msg(p != NULL, "test bug: '%s' not found", from);
    size_t a = (size_t)(p - s), lf = strlen(from), lt = strlen(to), ls = strlen(s);
    char *r = malloc(ls - lf + lt + 1);
    memcpy(r, s, a);
    memcpy(r + a, to, lt);
    memcpy(r + a + lt, p + lf, ls - a - lf + 1);
    return r;
}

/* Makes a fresh temporary directory path (caller frees); tests write there. */
static inline char *tu_tmpdir(void)
{
    char *d = strdup("/tmp/sa_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(d));
    return d;
}

#define ck_assert_msg_contains(err, needle)                                                                  \
    ck_assert_msg(strstr((err).msg, (needle)) != NULL, "message '%s' lacks '%s'", (err).msg, (needle))

/* A test's size knob: the count in environment variable name (1 to max), or
 * dflt when it is unset.  A value out of range stops the run, naming it: a
 * misspelt size must not shrink a test to nothing.  Works outside a test
 * too (a suite's builder). */
static inline int tu_env_count(const char *name, int dflt, int max)
{
    const char *v = getenv(name);
    if (!v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 1 || n > max) {
        fprintf(stderr, "%s=%s: expected a count from 1 to %d\n", name, v, max);
        exit(EXIT_FAILURE);
    }
    return (int)n;
}

/* A tiny but complete training iteration: fc -> loss -> fc backward -> sgd. */
static inline const char *tu_tiny_json(void)
{
    return
    "{\"format\":\"dfg\",\"version\":1,\"name\":\"tiny\",\"batch\":2,\"custom\":{\"a\":[1,2]},\n"
    " \"tensors\":[{\"id\":0,\"name\":\"x\",\"kind\":\"input\",\"bytes\":16,\"shape\":[2,2],\"dtype\":\"f32\"},\n"
    "  {\"id\":1,\"name\":\"w\",\"kind\":\"param\",\"bytes\":32,\"note\":\"kept\"},\n"
    "  {\"id\":2,\"name\":\"y\",\"kind\":\"activation\",\"bytes\":16},\n"
    "  {\"id\":3,\"name\":\"dy\",\"kind\":\"gradient\",\"bytes\":16},\n"
    "  {\"id\":4,\"name\":\"dw\",\"kind\":\"gradient\",\"bytes\":32},\n"
    "  {\"id\":5,\"name\":\"ws\",\"kind\":\"workspace\",\"bytes\":8}],\n"
    " \"ops\":[{\"id\":0,\"name\":\"fc\",\"type\":\"matmul\",\"phase\":\"forward\",\"inputs\":[0,1],\"outputs\":[2,5],"
    "\"flops\":128,\"time_us\":1.5,\"extra_op\":true},\n"
    "  {\"id\":1,\"name\":\"loss\",\"type\":\"softmax_xent\",\"phase\":\"forward\",\"inputs\":[2],\"outputs\":[3],\"time_us\":1},\n"
    "  {\"id\":2,\"name\":\"fc_bw\",\"type\":\"matmul\",\"phase\":\"backward\",\"inputs\":[3,0],\"outputs\":[4],\"time_us\":1},\n"
    "  {\"id\":3,\"name\":\"sgd\",\"type\":\"sgd_update\",\"phase\":\"update\",\"inputs\":[1,4],\"outputs\":[1],\"time_us\":1}],\n"
    " \"control_deps\":[]}";
}

/* A training graph with two branches per layer and layer-dependent sizes:
 * forward a = fa(x, Wa), b = fb(x, Wb), x' = add(a, b); backward in reverse;
 * one sgd update per weight. */
static inline sa_dfg_graph *tu_ladder(int layers)
{
    sa_dfg_graph *g = sa_dfg_new("ladder");
    int32_t *x = calloc((size_t)layers + 1, sizeof *x), *wa = calloc((size_t)layers, sizeof *wa);
    int32_t *wb = calloc((size_t)layers, sizeof *wb);
    char name[64];
    const int64_t KB = 1024;
    x[0] = sa_dfg_add_tensor(g, "x0", SA_DFG_INPUT, 64 * KB);
    for (int l = 0; l < layers; l++) {
        int64_t act = (64 + 32 * (l % 3)) * KB, w = (16 + 16 * (l % 2)) * KB;
        snprintf(name, sizeof name, "Wa%d", l);
        wa[l] = sa_dfg_add_tensor(g, name, SA_DFG_PARAM, w);
        snprintf(name, sizeof name, "Wb%d", l);
        wb[l] = sa_dfg_add_tensor(g, name, SA_DFG_PARAM, w);
        int32_t a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, act), b = sa_dfg_add_tensor(g, "b", SA_DFG_ACTIVATION, act);
        x[l + 1] = sa_dfg_add_tensor(g, "x", SA_DFG_ACTIVATION, act);
        int32_t ia[] = {x[l], wa[l]}, ib[] = {x[l], wb[l]}, oa[] = {a}, ob[] = {b}, is[] = {a, b}, os[] = {x[l + 1]};
        sa_dfg_add_op(g, "fa", "matmul", SA_DFG_FORWARD, ia, 2, oa, 1);
        sa_dfg_add_op(g, "fb", "matmul", SA_DFG_FORWARD, ib, 2, ob, 1);
        sa_dfg_add_op(g, "add", "add", SA_DFG_FORWARD, is, 2, os, 1);
    }
    int32_t dx = sa_dfg_add_tensor(g, "dloss", SA_DFG_GRADIENT, g->tensors[x[layers]].bytes);
    int32_t il[] = {x[layers]}, ol[] = {dx};
    sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, il, 1, ol, 1);
    for (int l = layers - 1; l >= 0; l--) {
        int64_t in_b = g->tensors[x[l]].bytes, w = g->tensors[wa[l]].bytes;
        int32_t dwa = sa_dfg_add_tensor(g, "dWa", SA_DFG_GRADIENT, w), dwb = sa_dfg_add_tensor(g, "dWb", SA_DFG_GRADIENT, w);
        int32_t dxa = sa_dfg_add_tensor(g, "dxa", SA_DFG_GRADIENT, in_b), dxb = sa_dfg_add_tensor(g, "dxb", SA_DFG_GRADIENT, in_b);
        int32_t ndx = sa_dfg_add_tensor(g, "dx", SA_DFG_GRADIENT, in_b);
        int32_t ia[] = {dx, x[l], wa[l]}, ib[] = {dx, x[l], wb[l]}, oa[] = {dxa, dwa}, ob[] = {dxb, dwb};
        int32_t is[] = {dxa, dxb}, os[] = {ndx};
        sa_dfg_add_op(g, "fa_bwd", "matmul_bwd_data", SA_DFG_BACKWARD, ia, 3, oa, 2);
        sa_dfg_add_op(g, "fb_bwd", "matmul_bwd_data", SA_DFG_BACKWARD, ib, 3, ob, 2);
        sa_dfg_add_op(g, "sum", "add", SA_DFG_BACKWARD, is, 2, os, 1);
        int32_t ua[] = {wa[l], dwa}, ub[] = {wb[l], dwb}, wao[] = {wa[l]}, wbo[] = {wb[l]};
        sa_dfg_add_op(g, "sgd_a", "sgd_update", SA_DFG_UPDATE, ua, 2, wao, 1);
        sa_dfg_add_op(g, "sgd_b", "sgd_update", SA_DFG_UPDATE, ub, 2, wbo, 1);
        dx = ndx;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 2.0 + (i * 7 % 11);
    sa_err err;
    ck_assert_msg(sa_dfg_finalize(g, "ladder", &err) == SA_OK, "%s", err.msg);
    free(x);
    free(wa);
    free(wb);
    return g;
}

/* Gives every op of the hand-built g 1 us and finalizes it, which must pass. */
static inline void tu_unit_finalize(sa_dfg_graph *g)
{
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 1.0;
    sa_err err = {0};
    ck_assert_msg(sa_dfg_finalize(g, g->name, &err) == SA_OK, "%s: %s", g->name, err.msg);
}

/* A backward intermediate with a gap: h (8 MB) is made by the backward op b0
 * and read again by b4, four ops later, while b2 makes k (16 MB).  f (x -> a),
 * loss (a -> d), b0 (d, a -> h), b1 (h -> e), b2 (e -> k), b3 (k -> m),
 * b4 (h, m -> out); every op 1 us.  *h_out receives h. */
static inline sa_dfg_graph *tu_backward_gap(int32_t *h_out)
{
    const int64_t MB = 1 << 20;
    sa_dfg_graph *g = sa_dfg_new("bwd-gap");
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, MB), a = sa_dfg_add_tensor(g, "a", SA_DFG_ACTIVATION, MB);
    int32_t d = sa_dfg_add_tensor(g, "d", SA_DFG_GRADIENT, MB), h = sa_dfg_add_tensor(g, "h", SA_DFG_ACTIVATION, 8 * MB);
    int32_t e = sa_dfg_add_tensor(g, "e", SA_DFG_GRADIENT, MB), k = sa_dfg_add_tensor(g, "k", SA_DFG_ACTIVATION, 16 * MB);
    int32_t m = sa_dfg_add_tensor(g, "m", SA_DFG_GRADIENT, MB), out = sa_dfg_add_tensor(g, "out", SA_DFG_GRADIENT, MB);
    int32_t i0[] = {x}, o0[] = {a}, i1[] = {a}, o1[] = {d}, i2[] = {d, a}, o2[] = {h}, i3[] = {h}, o3[] = {e};
    int32_t i4[] = {e}, o4[] = {k}, i5[] = {k}, o5[] = {m}, i6[] = {h, m}, o6[] = {out};
    sa_dfg_add_op(g, "f", "relu", SA_DFG_FORWARD, i0, 1, o0, 1);
    sa_dfg_add_op(g, "loss", "softmax_xent", SA_DFG_FORWARD, i1, 1, o1, 1);
    sa_dfg_add_op(g, "b0", "mul", SA_DFG_BACKWARD, i2, 2, o2, 1);
    sa_dfg_add_op(g, "b1", "relu_bwd", SA_DFG_BACKWARD, i3, 1, o3, 1);
    sa_dfg_add_op(g, "b2", "expand", SA_DFG_BACKWARD, i4, 1, o4, 1);
    sa_dfg_add_op(g, "b3", "reduce", SA_DFG_BACKWARD, i5, 1, o5, 1);
    sa_dfg_add_op(g, "b4", "add", SA_DFG_BACKWARD, i6, 2, o6, 1);
    tu_unit_finalize(g);
    *h_out = h;
    return g;
}

/* Unit device for hand-computed timelines: 1 MiB tensors move in 1 us each way
 * (full duplex), no latency; memory of `units` MiB. */
static inline sa_dfg_device tu_unit_dev(int64_t units)
{
    sa_dfg_device d = {"unit", units * 1048576, 1e6 * 1048576, 1e6 * 1048576, 2e6 * 1048576, 0, 0};
    return d;
}

/* What every policy plan must satisfy: strict validation, an arena within
 * memory, a prediction the simulator reproduces, a search block; with replay,
 * a host-runner replay that loses nothing. */
static inline void tu_check_policy_plan(const sa_plan *p, const sa_dfg_graph *g, const char *what, bool replay)
{
    sa_err err = {0};
    sa_val_report rep = {0};
    ck_assert_msg(sa_plan_validate(p, g, true, &rep, &err) == SA_OK, "%s: %d violations, first: %s", what,
                  rep.n_violations, err.msg);
    sa_val_report_free(&rep);
    ck_assert_int_le(p->arena_bytes, p->device.memory_bytes);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    ck_assert_int_eq(sa_sim_run(p, g, ws, &r, &err), SA_OK);
    ck_assert(r.makespan_us == p->predicted.iteration_us);
    sa_sim_ws_free(ws);
    ck_assert_ptr_nonnull(p->search_json);
    if (!replay)
        return;
    sa_runner_opts ro;
    sa_runner_opts_default(&ro);
    ro.backend = SA_RUNNER_HOST;
    ro.cap_bytes = 48 << 20;
    ck_assert_msg(sa_runner_run(p, g, &ro, NULL, &err) == SA_OK, "%s replay: %s", what, err.msg);
}

/* A device with a mid-range PCIe link and a memory of mem bytes. */
static inline sa_dfg_device tu_policy_dev(int64_t mem)
{
    sa_dfg_device d = {"policy-dev", mem, 4e9, 4e9, 6e9, 5.0, 0};
    return d;
}

/* The smallest memory (in 5 % steps of the no-swap peak, from frac up) where
 * policy pol plans g, each plan checked by tu_check_policy_plan; refusals on
 * the way must name the policy.  Returns that fraction. */
static inline double tu_plan_lowest(const sa_dfg_graph *g, const char *pol, double frac, bool replay)
{
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    for (double f = frac; f <= 2.0; f += 0.05) {
        sa_dfg_device d = tu_policy_dev((int64_t)((double)peak * f));
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status st = sa_policy_run(pol, g, &d, &p, &err);
        if (st == SA_EINFEASIBLE) {
            ck_assert_msg(strstr(err.msg, pol) == err.msg, "refusal names the policy: %s", err.msg);
            continue;
        }
        ck_assert_msg(st == SA_OK, "%s at %.2f: %s", pol, f, err.msg);
        char what[96];
        snprintf(what, sizeof what, "%s on %s at %.2f", pol, g->name, f);
        tu_check_policy_plan(p, g, what, replay);
        sa_plan_free(p);
        return f;
    }
    ck_abort_msg("%s on %s: no plan up to twice the peak", pol, g->name);
    return 0;
}

/* Below the persistent bytes every named policy refuses with a message that
 * starts with its name and says why. */
static inline void tu_refuse_below_params(const sa_dfg_graph *g, const char *const *names, size_t n)
{
    sa_dfg_device d = tu_policy_dev(sa_dfg_persistent_bytes(g) - 1);
    for (size_t i = 0; i < n; i++) {
        sa_plan *p = NULL;
        sa_err err = {0};
        ck_assert_int_eq(sa_policy_run_unchecked(names[i], g, &d, NULL, &p, &err), SA_EINFEASIBLE);
        ck_assert_ptr_null(p);
        ck_assert_msg_contains(err, "parameters and optimizer state alone need");
        ck_assert_msg(strstr(err.msg, names[i]) == err.msg, "%s", err.msg);
    }
}

#endif
