/* fuzz_graph.c - libFuzzer target: the graph loader (sa_dfg_parse, the loader
 * rules of docs/formats.md section 1) and, for what it accepts, the writer and
 * a second read of what it wrote (every written document must read back). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/dfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sa_dfg_graph *g = NULL;
    sa_err err;
    sa_status st = sa_dfg_parse((const char *)data, size, "fuzz", &g, &err);
    if (st == SA_ENOMEM)
        return 0;
    if (st != SA_OK) {
        if (st != SA_EFORMAT || !err.msg[0])
            abort(); /* a loader refuses bad input as SA_EFORMAT, with a reason */
        return 0;
    }
    (void)sa_dfg_peak_bytes(g, NULL);
    (void)sa_dfg_max_op_bytes(g, NULL);
    char *text = NULL;
    if (sa_dfg_to_json(g, false, &text, &err) == SA_OK) {
        sa_dfg_graph *h = NULL;
        if (sa_dfg_parse(text, strlen(text), "written", &h, &err) != SA_OK)
            abort(); /* what we write, we read */
        sa_dfg_free(h);
        free(text);
    }
    sa_dfg_free(g);
    return 0;
}
