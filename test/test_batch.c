/* test_batch.c - batch planning with make -j (scripts/batch.mk): the CSV
 * table, resumability, failed cells and their exit status. */
#include <check.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapadvisor/sa_io.h"
#include "test_util.h"

typedef struct benv {
    char root[PATH_MAX], bin[PATH_MAX];
    char *dir;
} benv;


/* The tools (tu_tool_paths); false (with a note) when they are not built. */
static bool setup(benv *e)
{
    tu_tool_paths(e->root, e->bin);
    if (tu_sh("test -x %s/swapadvisor-search -a -x %s/swapplan-emit && command -v make >/dev/null", e->bin, e->bin)) {
        fprintf(stderr, "note: tools in %s not built (or no make); batch checks skipped\n", e->bin);
        return false;
    }
    e->dir = tu_tmpdir();
    const char *graphs[] = {"rnn-2-1k", "vgg-11-b16"};
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(tu_sh("%s/dfg-profile %s/graphs/%s.json --device %s/profiles/v100-pcie3-16gb.json -o %s/%s.json",
                            e->bin, e->root, graphs[i], e->root, e->dir, graphs[i]),
                         0);
    return true;
}

/* Runs the batch in e->dir with MEMORIES; stdout+stderr to log.txt; returns make's exit code. */
static int batch(const benv *e, const char *memories)
{
    return tu_sh("cd %s && make --no-print-directory -f %s/scripts/batch.mk -j2 BIN=%s GRAPHS='rnn-2-1k.json "
              "vgg-11-b16.json' MEMORIES='%s' POLICIES='topo swapadvisor' ARGS='--generations 2 --population 4 "
              "--threads 1' OUT=out >log.txt 2>&1",
              e->dir, e->root, e->bin, memories);
}

static char *slurp(const benv *e, const char *name)
{
    char path[PATH_MAX + 64], *text;
    size_t len;
    sa_err err = {0};
    snprintf(path, sizeof path, "%s/%s", e->dir, name);
    ck_assert_msg(sa_read_file(path, &text, &len, &err) == SA_OK, "%s", err.msg);
    return text;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

START_TEST(test_batch_table_resume_and_failures)
{
    benv e;
    if (!setup(&e))
        return;
    /* 2 graphs x 2 memories x 2 policies, all plannable */
    ck_assert_int_eq(batch(&e, "0.5x 0.75x"), 0);
    char *csv = slurp(&e, "out/batch.csv"), *log = slurp(&e, "log.txt");
    ck_assert_int_eq(count(log, "batch: planning"), 8);
    ck_assert_int_eq(count(csv, "\n"), 9);
    ck_assert_ptr_eq(strstr(csv, "graph,memory,policy,iteration_us,pct_of_ideal,validity,exit_code\n"), csv);
    ck_assert_int_eq(count(csv, ",valid,0\n"), 8);
    /* graph by graph, memory by memory, policy by policy */
    const char *order[] = {"rnn-2-1k.json,0.5x,topo,", "rnn-2-1k.json,0.5x,swapadvisor,",
                           "rnn-2-1k.json,0.75x,topo,", "rnn-2-1k.json,0.75x,swapadvisor,",
                           "vgg-11-b16.json,0.5x,topo,", "vgg-11-b16.json,0.5x,swapadvisor,",
                           "vgg-11-b16.json,0.75x,topo,", "vgg-11-b16.json,0.75x,swapadvisor,"};
    const char *at = csv;
    for (size_t i = 0; i < SA_ARRAY_LEN(order); i++) {
        const char *row = strstr(at, order[i]);
        ck_assert_msg(row != NULL, "row %zu (%s) missing or out of order:\n%s", i, order[i], csv);
        /* iteration time and % of ideal are numbers */
        double t, pct;
        ck_assert_int_eq(sscanf(row + strlen(order[i]), "%lf,%lf,", &t, &pct), 2);
        ck_assert(t > 0 && pct > 0 && pct <= 100.0);
        at = row + 1;
    }
    free(log);
    /* the same rows agree with the plans written beside them */
    ck_assert_int_eq(tu_sh("%s/swapplan-emit %s/out/plans/vgg-11-b16__0.5x__swapadvisor.json --graph "
                        "%s/vgg-11-b16.json --format check --strict -q",
                        e.bin, e.dir, e.dir),
                     0);

    /* resumable: a second run plans nothing and writes the same table */
    ck_assert_int_eq(batch(&e, "0.5x 0.75x"), 0);
    char *csv2 = slurp(&e, "out/batch.csv");
    log = slurp(&e, "log.txt");
    ck_assert_int_eq(count(log, "batch: planning"), 0);
    ck_assert_str_eq(csv, csv2);
    free(log);
    free(csv2);
    /* a lost row (an interrupted run) is the only cell planned again */
    ck_assert_int_eq(tu_sh("rm %s/out/rows/rnn-2-1k__0.75x__topo.csv", e.dir), 0);
    ck_assert_int_eq(batch(&e, "0.5x 0.75x"), 0);
    log = slurp(&e, "log.txt");
    ck_assert_int_eq(count(log, "batch: planning"), 1);
    ck_assert_ptr_nonnull(strstr(log, "batch: planning rnn-2-1k at 0.75x with topo"));
    csv2 = slurp(&e, "out/batch.csv");
    ck_assert_str_eq(csv, csv2);
    free(log);
    free(csv2);
    free(csv);

    /* 1000 bytes fits no graph: those cells fail (exit 5), the table still
     * lists every cell, and make exits non-zero */
    ck_assert_int_ne(batch(&e, "0.5x 1000"), 0);
    csv = slurp(&e, "out/batch.csv");
    log = slurp(&e, "log.txt");
    ck_assert_int_eq(count(log, "batch: planning"), 4); /* 0.5x rows were kept */
    ck_assert_int_eq(count(csv, "\n"), 9);
    ck_assert_int_eq(count(csv, ",valid,0\n"), 4);
    ck_assert_int_eq(count(csv, ",1000,"), 4);
    ck_assert_ptr_nonnull(strstr(csv, "rnn-2-1k.json,1000,topo,,,-,5\n"));
    ck_assert_ptr_nonnull(strstr(log, "batch: 4 of 8 cells failed"));
    free(csv);
    free(log);
    /* failed cells are results too: a rerun plans nothing and still fails */
    ck_assert_int_ne(batch(&e, "0.5x 1000"), 0);
    log = slurp(&e, "log.txt");
    ck_assert_int_eq(count(log, "batch: planning"), 0);
    free(log);
    /* clean-failed removes only the failed rows (8 of 0.5x and 0.75x stay) */
    ck_assert_int_eq(tu_sh("cd %s && make -s -f %s/scripts/batch.mk OUT=out clean-failed >/dev/null && ls out/rows | "
                        "grep -c 1000 | grep -qx 0 && test $(ls out/rows | wc -l) -eq 8",
                        e.dir, e.root),
                     0);
    /* usage: the three lists are required */
    ck_assert_int_ne(tu_sh("cd %s && make -s -f %s/scripts/batch.mk GRAPHS=x.json >/dev/null 2>&1", e.dir, e.root), 0);
    ck_assert_int_eq(tu_sh("rm -rf %s", e.dir), 0);
    free(e.dir);
}
END_TEST

Suite *suite_batch(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_batch_table_resume_and_failures);
    suite_add_tcase(s, tc);
    return s;
}
