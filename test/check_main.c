/* check_main.c - one Check runner for every suite in test/test_*.c. */
#include <check.h>
#include <stdlib.h>

#include "test_suites.h"

int main(void)
{
    SRunner *sr = srunner_create(NULL);
#define ADD_SUITE(fn) srunner_add_suite(sr, fn());
    SA_ALL_SUITES(ADD_SUITE)
#undef ADD_SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
