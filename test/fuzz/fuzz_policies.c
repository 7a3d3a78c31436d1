/* fuzz_policies.c - libFuzzer target: graph -> every policy -> strict
 * validation.  The input is a graph document; the first bytes of it also pick
 * the memory (a fraction of the no-swap peak).  Every policy either plans a
 * plan that validates strictly and reads back, or refuses with
 * SA_EINFEASIBLE and a reason; anything else is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0; /* the planners' work grows with the graph: keep runs short */
    sa_dfg_graph *g = NULL;
    sa_err err;
    if (sa_dfg_parse((const char *)data, size, "fuzz", &g, &err) != SA_OK)
        return 0;
    if (g->n_ops > 200) {
        sa_dfg_free(g);
        return 0;
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].time_us < 0)
            g->ops[i].time_us = (double)(i % 3); /* zero-time ops included */
    unsigned pick = size ? data[size / 2] : 0;
    double frac[] = {0.3, 0.6, 1.0, 2.0};
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    double m = (double)peak * frac[pick % 4] + 1;
    sa_dfg_device d = {"fuzz", m > 9e15 ? (int64_t)9e15 : (int64_t)m, 12e9, 12e9, 20e9, (pick & 4) ? 0 : 10, 0};
    int n = 0;
    const sa_policy_def *tab = sa_policy_table(&n);
    for (int i = 0; i < n; i++) {
        sa_policy_opts o;
        sa_policy_opts_default(&o);
        o.search.generations = 1;
        o.search.population = 4;
        o.search.threads = 1;
        sa_plan *p = NULL;
        sa_status st = sa_policy_run_opts(tab[i].name, g, &d, &o, &p, &err);
        if (st == SA_OK) {
            if (sa_plan_validate(p, g, true, NULL, &err) != SA_OK)
                abort();
            char *text = NULL;
            if (sa_plan_to_json(p, &text, &err) == SA_OK) {
                sa_plan *q = NULL;
                if (sa_plan_parse(text, strlen(text), "written", &q, &err) != SA_OK)
                    abort();
                sa_plan_free(q);
                free(text);
            }
            sa_plan_free(p);
        } else if (st != SA_EINFEASIBLE && st != SA_ENOMEM) {
            abort();
        } else if (st == SA_EINFEASIBLE && !err.msg[0]) {
            abort();
        }
    }
    sa_dfg_free(g);
    return 0;
}
