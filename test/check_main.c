/* check_main.c - one Check runner for every suite in test/test_*.c.
 *
 * SA_CHECK_SUITES="a b" runs only the suites named; "-a -b" runs every suite
 * but those (scripts/check.sh splits the sanitizer build's run in two this
 * way).  A name that is no suite, or a selection of none, is an error, so
 * that a misspelt selection cannot pass by running nothing. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_suites.h"

#define SUITE_NAME(fn) #fn,
static const char *const NAMES[] = {SA_ALL_SUITES(SUITE_NAME)};
#undef SUITE_NAME
#define N_SUITES (sizeof NAMES / sizeof NAMES[0])

/* Marks want[i] for the suites SA_CHECK_SUITES selects; false on a bad name. */
static bool select_suites(const char *spec, bool want[N_SUITES])
{
    bool exclude = false, first = true;
    for (size_t i = 0; i < N_SUITES; i++)
        want[i] = true;
    char *copy = strdup(spec);
    if (!copy)
        return false;
    bool ok = true;
    for (char *save = NULL, *tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
        bool minus = tok[0] == '-';
        if (first) {
            exclude = minus;
            if (!exclude)
                for (size_t i = 0; i < N_SUITES; i++)
                    want[i] = false;
            first = false;
        } else if (minus != exclude) {
            fprintf(stderr, "SA_CHECK_SUITES: '%s': names are all included or all excluded (-NAME)\n", tok);
            ok = false;
            break;
        }
        const char *name = tok + minus;
        size_t i = 0;
        while (i < N_SUITES && strcmp(NAMES[i] + strlen("suite_"), name) != 0)
            i++;
        if (i == N_SUITES) {
            fprintf(stderr, "SA_CHECK_SUITES: no suite '%s'\n", name);
            ok = false;
            break;
        }
        want[i] = !exclude;
    }
    free(copy);
    size_t n = 0;
    for (size_t i = 0; i < N_SUITES; i++)
        n += want[i];
    if (ok && n == 0) {
        fprintf(stderr, "SA_CHECK_SUITES: '%s' leaves no suite to run\n", spec);
        ok = false;
    }
    return ok;
}

int main(void)
{
    bool want[N_SUITES];
    const char *spec = getenv("SA_CHECK_SUITES");
    if (!select_suites(spec ? spec : "", want))
        return EXIT_FAILURE;
    SRunner *sr = srunner_create(NULL);
    size_t k = 0;
#define ADD_SUITE(fn)                                                                                                  \
    if (want[k++])                                                                                                     \
        srunner_add_suite(sr, fn());
    SA_ALL_SUITES(ADD_SUITE)
#undef ADD_SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
