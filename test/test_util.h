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

#endif
