/* fuzz_profile.c - libFuzzer target: the device-profile loader, and the cost
 * model on a fixed graph with what it accepts (times stay within the bound or
 * are refused as bad input). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/cost.h"
#include "swapadvisor/devprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *graph_json =
    "{\"format\":\"dfg\",\"version\":1,\"name\":\"g\",\"tensors\":["
    "{\"id\":0,\"name\":\"x\",\"kind\":\"input\",\"bytes\":4096,\"shape\":[32,32],\"dtype\":\"f16\"},"
    "{\"id\":1,\"name\":\"w\",\"kind\":\"param\",\"bytes\":8192},"
    "{\"id\":2,\"name\":\"y\",\"kind\":\"activation\",\"bytes\":4096}],\"ops\":["
    "{\"id\":0,\"name\":\"mm\",\"type\":\"matmul\",\"phase\":\"forward\",\"inputs\":[0,1],\"outputs\":[2],"
    "\"flops\":1e12,\"bytes_accessed\":1e9},"
    "{\"id\":1,\"name\":\"v\",\"type\":\"view\",\"phase\":\"forward\",\"inputs\":[2],\"outputs\":[]}],"
    "\"control_deps\":[]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sa_devprof *p = NULL;
    sa_err err;
    sa_status st = sa_devprof_parse((const char *)data, size, "fuzz", &p, &err);
    if (st != SA_OK) {
        if (st != SA_EFORMAT && st != SA_ENOMEM)
            abort();
        return 0;
    }
    sa_dfg_graph *g = NULL;
    if (sa_dfg_parse(graph_json, strlen(graph_json), "g", &g, &err) != SA_OK)
        abort();
    st = sa_cost_profile_graph(g, p, 0, &err);
    if (st == SA_OK) {
        for (int32_t i = 0; i < g->n_ops; i++)
            if (!(g->ops[i].time_us >= 0 && g->ops[i].time_us <= SA_DFG_MAX_TIME_US))
                abort();
    } else if (st != SA_EFORMAT && st != SA_ENOMEM) {
        abort();
    }
    char *text = NULL;
    if (sa_devprof_to_json(p, &text, &err) == SA_OK) {
        sa_devprof *q = NULL;
        if (sa_devprof_parse(text, strlen(text), "written", &q, &err) != SA_OK)
            abort();
        sa_devprof_free(q);
        free(text);
    }
    sa_dfg_free(g);
    sa_devprof_free(p);
    return 0;
}
