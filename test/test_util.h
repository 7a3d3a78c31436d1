/* test_util.h - small helpers shared by the test files. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dfg.h"
#include "test_suites.h" /* generated: every suite_NAME prototype */

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

#endif
