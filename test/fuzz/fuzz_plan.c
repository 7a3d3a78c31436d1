/* fuzz_plan.c - libFuzzer target: the plan loader and the validator (plain and
 * strict) against a fixed graph, and every view of swapplan-emit (check,
 * summary, trace, memory CSV and SVG, DOT, the exec graph), on valid and
 * invalid plans alike: whatever the plan says, the tools refuse it with a
 * reason or describe it, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/emit.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the graph of docs/formats.md section 1, with a zero-time view */
static const char *graph_json =
    "{\"format\":\"dfg\",\"version\":1,\"name\":\"tiny\",\"tensors\":["
    "{\"id\":0,\"name\":\"x\",\"kind\":\"input\",\"bytes\":16},{\"id\":1,\"name\":\"w\",\"kind\":\"param\",\"bytes\":32},"
    "{\"id\":2,\"name\":\"y\",\"kind\":\"activation\",\"bytes\":16},{\"id\":3,\"name\":\"dy\",\"kind\":\"gradient\",\"bytes\":16},"
    "{\"id\":4,\"name\":\"dw\",\"kind\":\"gradient\",\"bytes\":32},{\"id\":5,\"name\":\"ws\",\"kind\":\"workspace\",\"bytes\":8}],"
    "\"ops\":[{\"id\":0,\"name\":\"fc\",\"type\":\"matmul\",\"phase\":\"forward\",\"inputs\":[0,1],\"outputs\":[2,5],\"time_us\":1.5},"
    "{\"id\":1,\"name\":\"loss\",\"type\":\"softmax_xent\",\"phase\":\"forward\",\"inputs\":[2],\"outputs\":[3],\"time_us\":1},"
    "{\"id\":2,\"name\":\"fc_bw\",\"type\":\"matmul\",\"phase\":\"backward\",\"inputs\":[3,0],\"outputs\":[4],\"time_us\":1},"
    "{\"id\":3,\"name\":\"view\",\"type\":\"view\",\"phase\":\"backward\",\"inputs\":[4],\"outputs\":[],\"time_us\":0},"
    "{\"id\":4,\"name\":\"sgd\",\"type\":\"sgd_update\",\"phase\":\"update\",\"inputs\":[1,4],\"outputs\":[1],\"time_us\":1}],"
    "\"control_deps\":[]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sa_dfg_graph *g;
    sa_err err;
    if (!g && sa_dfg_parse(graph_json, strlen(graph_json), "g", &g, &err) != SA_OK)
        abort();
    sa_plan *p = NULL;
    sa_status st = sa_plan_parse((const char *)data, size, "fuzz", &p, &err);
    if (st != SA_OK) {
        if (st != SA_EFORMAT && st != SA_ENOMEM)
            abort();
        return 0;
    }
    if (sa_plan_check_graph(p, g, "fuzz", &err) == SA_OK) {
        for (int strict = 0; strict < 2; strict++) {
            sa_val_report rep = {0};
            st = sa_plan_validate(p, g, strict, &rep, &err);
            sa_val_report_free(&rep);
            if (st != SA_OK && st != SA_EINVALID && st != SA_ENOMEM)
                abort();
        }
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            /* swapplan-emit draws every view of a plan that fits the graph's
             * counts, valid or not (it warns when not) */
            int32_t nv = 0;
            (void)sa_emit_check(p, g, true, 5, null, &nv, &err);
            (void)sa_emit_summary(p, g, null, &err);
            (void)sa_emit_trace(p, g, null, &err);
            (void)sa_emit_memory_csv(p, g, null, &err);
            (void)sa_emit_memory_svg(p, g, null, &err);
            (void)sa_emit_dot(p, g, 0, -1, null, &err);
            (void)sa_emit_graph_json(p, g, null, &err);
            fclose(null);
        }
    }
    char *text = NULL;
    if (sa_plan_to_json(p, &text, &err) == SA_OK) {
        sa_plan *q = NULL;
        if (sa_plan_parse(text, strlen(text), "written", &q, &err) != SA_OK)
            abort(); /* what we write, we read */
        sa_plan_free(q);
        free(text);
    }
    sa_plan_free(p);
    return 0;
}
