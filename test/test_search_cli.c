/* test_search_cli.c - the two search front ends: swapadvisor-search's options,
 * and swapadvisor-search-mpi under mpirun (2 and 3 ranks: the same plan twice,
 * valid, never worse than one process given the same generations; 1 rank is
 * the serial tool).  The MPI checks pass with a note when mpirun or the MPI
 * tool is missing (the build has it only where mpicc is).  CI runs them:
 * scripts/setup.sh installs Open MPI. */
#include <check.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapadvisor/plan.h"
#include "swapadvisor/sa_io.h"
#include "test_util.h"

typedef struct env {
    char root[PATH_MAX], bin[PATH_MAX];
    char *dir;
    char graph[PATH_MAX + 16];
} env;



/* false when the tool is not built (the caller passes with a note) */
static bool setup(env *e, const char *tool)
{
    tu_tool_paths(e->root, e->bin);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", e->bin, tool);
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "note: %s not built; its checks skipped\n", path);
        return false;
    }
    e->dir = tu_tmpdir();
    snprintf(e->graph, sizeof e->graph, "%s/g.json", e->dir);
    ck_assert_int_eq(tu_sh("%s/dfg-profile %s/graphs/rnn-2-1k.json --device %s/profiles/v100-pcie3-16gb.json -o %s",
                        e->bin, e->root, e->root, e->graph),
                     0);
    return true;
}

static void teardown(env *e)
{
    ck_assert_int_eq(tu_sh("rm -rf %s", e->dir), 0);
    free(e->dir);
}

/* The plan's text without the search block's wall-clock figures (every one: the
 * search's, the phases', a MILP's). */
static char *plan_text(const char *path)
{
    char *text;
    size_t len;
    sa_err err = {0};
    ck_assert_msg(sa_read_file(path, &text, &len, &err) == SA_OK, "%s", err.msg);
    static const char *const clocks[] = {"\"wall_s\":", "\"time_to_1pct_s\":"};
    for (size_t i = 0; i < SA_ARRAY_LEN(clocks); i++) {
        char *at = strstr(text, clocks[i]);
        ck_assert_ptr_nonnull(at);
        for (; at; at = strstr(at, clocks[i])) {
            char *end = at + strlen(clocks[i]);
            while (*end && *end != ',' && *end != '}')
                end++;
            memmove(at, end, strlen(end) + 1);
        }
    }
    return text;
}

static double iteration_us(const char *path)
{
    sa_plan *p;
    sa_err err = {0};
    ck_assert_msg(sa_plan_load_file(path, &p, &err) == SA_OK, "%s", err.msg);
    double t = p->predicted.iteration_us;
    sa_plan_free(p);
    return t;
}

#define SEARCH_ARGS "--memory 0.5x --threads 1 --generations 8 --population 12 --seed 3 -q"
/* The islands' runs and the log's leave the seeds out: every rank would solve
 * the same MILP seeds (7 s each here), whose plan is the answer whatever the
 * islands do; without them the islands' answers differ from one process's.
 * The seeded path under MPI is checked by one rank against the serial
 * search. */
#define UNSEEDED_ARGS SEARCH_ARGS " --no-seeds"
/* Open MPI does not free its own allocations at MPI_Finalize, some of them in
 * plugins it has unloaded by then, so LeakSanitizer is off for the MPI runs
 * (AddressSanitizer and UBSan stay on); suite ga checks the hook for leaks. */
#define MPIRUN "mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS=detect_leaks=0"

START_TEST(test_serial_options)
{
    env e;
    if (!setup(&e, "swapadvisor-search"))
        return;
    /* the islands' options belong to the MPI tool only */
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s --migrants 2 -o %s/p.json 2>/dev/null", e.bin, e.graph, e.dir), 2);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s --migrate-every 2 2>/dev/null", e.bin, e.graph), 2);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s --generations x 2>/dev/null", e.bin, e.graph), 2);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s --memory 0.5q 2>/dev/null", e.bin, e.graph), 2);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s --policy nope 2>/dev/null", e.bin, e.graph), 2);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s/none.json 2>/dev/null", e.bin, e.dir), 4);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search --help | grep -q 'checkpoint-sqrt'", e.bin), 0);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search --help | grep -q migrate", e.bin), 1);
    /* the log has its header and one line a generation (0..8) */
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s " UNSEEDED_ARGS " --log %s/log.csv -o %s/p.json", e.bin, e.graph,
                        e.dir, e.dir),
                     0);
    ck_assert_int_eq(tu_sh("test $(wc -l < %s/log.csv) -eq 10 && head -1 %s/log.csv | grep -q '^generation,'", e.dir,
                        e.dir),
                     0);
    ck_assert_int_eq(tu_sh("%s/swapplan-emit %s/p.json --graph %s --format check --strict >/dev/null 2>&1", e.bin, e.dir,
                        e.graph),
                     0);
    teardown(&e);
}
END_TEST

/* false (with a note) when the MPI tool or mpirun is missing */
static bool mpi_setup(env *e)
{
    if (tu_sh("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "note: mpirun not found; swapadvisor-search-mpi checks skipped\n");
        return false;
    }
    return setup(e, "swapadvisor-search-mpi");
}

START_TEST(test_mpi_islands)
{
    env e;
    if (!mpi_setup(&e))
        return;
    char serial[PATH_MAX + 32], one[PATH_MAX + 32];
    snprintf(serial, sizeof serial, "%s/serial.json", e.dir);
    snprintf(one, sizeof one, "%s/np1.json", e.dir);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s " SEARCH_ARGS " -o %s", e.bin, e.graph, serial), 0);
    /* one rank is the serial search */
    ck_assert_int_eq(tu_sh(MPIRUN " -np 1 %s/swapadvisor-search-mpi %s " SEARCH_ARGS " -o %s", e.bin, e.graph, one), 0);
    char *s = plan_text(serial), *o = plan_text(one);
    ck_assert_str_eq(s, o);
    free(s);
    free(o);
    ck_assert_int_eq(tu_sh("%s/swapadvisor-search %s " UNSEEDED_ARGS " -o %s", e.bin, e.graph, serial), 0);
    s = plan_text(serial);
    double t1 = iteration_us(serial);
    for (int np = 2; np <= 3; np++) {
        char a[PATH_MAX + 32], b[PATH_MAX + 32];
        snprintf(a, sizeof a, "%s/np%da.json", e.dir, np);
        snprintf(b, sizeof b, "%s/np%db.json", e.dir, np);
        for (int run = 0; run < 2; run++)
            ck_assert_int_eq(tu_sh(MPIRUN " -np %d %s/swapadvisor-search-mpi %s " UNSEEDED_ARGS
                                " --migrate-every 3 --migrants 2 -o %s",
                                np, e.bin, e.graph, run ? b : a),
                             0);
        char *ta = plan_text(a), *tb = plan_text(b);
        ck_assert_str_eq(ta, tb); /* the same plan twice */
        free(tb);
        if (np == 2) { /* and with two threads a rank */
            ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s " UNSEEDED_ARGS
                                " --migrate-every 3 --migrants 2 --threads 2 -o %s",
                                e.bin, e.graph, b),
                             0);
            tb = plan_text(b);
            char *two = tu_replace(ta, "\"threads\":1", "\"threads\":2");
            ck_assert_str_eq(two, tb);
            free(two);
            free(tb);
        }
        char want[64];
        snprintf(want, sizeof want, "\"ranks\":%d,\"migrate_every\":3,\"migrants\":2,\"exchanges\":2", np);
        ck_assert_msg(strstr(ta, want) != NULL, "search block lacks %s", want);
        ck_assert_str_ne(ta, s); /* other islands took part */
        free(ta);
        ck_assert_int_eq(tu_sh("%s/swapplan-emit %s --graph %s --format check --strict -q", e.bin, a, e.graph), 0);
        double tn = iteration_us(a);
        /* the migrants found what one process did not (49.7 ms; 2 ranks 42.6, 3 ranks 39.9) */
        ck_assert_msg(tn < t1, "%d ranks: %.3f us, one process %.3f us", np, tn, t1);
    }
    free(s);
    teardown(&e);
}
END_TEST

START_TEST(test_mpi_options)
{
    env e;
    if (!mpi_setup(&e))
        return;
    /* usage errors on every rank, printed once */
    ck_assert_int_ne(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s --population 12 --migrants 12 2>%s/err.txt "
                        ">/dev/null",
                        e.bin, e.graph, e.dir),
                     0);
    ck_assert_int_eq(tu_sh("test $(grep -c 'must be below the population' %s/err.txt) -eq 1", e.dir), 0);
    /* a missing graph and an unwritable log: exit 4 on every rank, one message */
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s/none.json 2>%s/err.txt", e.bin, e.dir, e.dir), 4);
    ck_assert_int_eq(tu_sh("test $(grep -c 'none.json: cannot open' %s/err.txt) -eq 1", e.dir), 0);
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s --log %s/no/log.csv -o %s/x.json 2>%s/err.txt",
                        e.bin, e.graph, e.dir, e.dir, e.dir),
                     4);
    ck_assert_int_eq(tu_sh("test $(grep -c 'cannot open log' %s/err.txt) -eq 1 && test ! -e %s/x.json", e.dir, e.dir), 0);
    /* GRAPH '-': rank 0 reads stdin and sends the graph on; the same plan as from the file */
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s " UNSEEDED_ARGS " -o %s/file.json", e.bin, e.graph,
                        e.dir),
                     0);
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi - " UNSEEDED_ARGS " -o %s/stdin.json < %s", e.bin,
                        e.dir, e.graph),
                     0);
    char f[PATH_MAX + 32], i[PATH_MAX + 32];
    snprintf(f, sizeof f, "%s/file.json", e.dir);
    snprintf(i, sizeof i, "%s/stdin.json", e.dir);
    char *tf = plan_text(f), *ti = plan_text(i);
    ck_assert_str_eq(tf, ti);
    free(tf);
    free(ti);
    ck_assert_int_eq(
        tu_sh("ASAN_OPTIONS=detect_leaks=0 %s/swapadvisor-search-mpi --help | grep -q -- '--migrate-every'", e.bin), 0);
    /* a baseline policy runs on rank 0 alone and writes its plan */
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s --policy odswap --memory 0.5x -q -o %s/od.json",
                        e.bin, e.graph, e.dir),
                     0);
    ck_assert_int_eq(tu_sh("%s/swapplan-emit %s/od.json --graph %s --format check --strict >/dev/null 2>&1", e.bin, e.dir,
                        e.graph),
                     0);
    /* a time limit stops every rank together (at an exchange) */
    ck_assert_int_eq(tu_sh(MPIRUN " -np 2 %s/swapadvisor-search-mpi %s --memory 0.5x --threads 1 --time-limit 0.2 "
                        "--migrate-every 2 -q -o %s/tl.json",
                        e.bin, e.graph, e.dir),
                     0);
    ck_assert_int_eq(tu_sh("grep -q '\"ranks\":2' %s/tl.json", e.dir), 0);
    teardown(&e);
}
END_TEST

Suite *suite_search_cli(void)
{
    Suite *s = suite_create("search_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_serial_options);
    tcase_add_test(tc, test_mpi_islands);
    tcase_add_test(tc, test_mpi_options);
    suite_add_tcase(s, tc);
    return s;
}
