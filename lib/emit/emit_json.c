/* emit_json.c - the JSON views: Chrome trace events and the "swapexec" graph (emit.h). */
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/emit.h"
#include "emit/emit_util.h"
#include "model/json_util.h"

/* Bytes an op touches: the distinct tensors of its working set. */
static int64_t op_bytes(const sa_dfg_graph *g, int32_t op)
{
    int64_t b = 0;
    const sa_dfg_op *o = &g->ops[op];
    for (int32_t k = 0; k < o->n_use; k++)
        b = sa_add_sat(b, g->tensors[o->use[k]].bytes);
    return b;
}

/* The midpoint of node v in integer ns: a flow event placed there binds to
 * v's slice and to no neighbour that touches it. */
static int64_t mid_ns(const sa_emit_timeline *tl, int32_t v)
{
    int64_t a = eu_ns(tl->start[v]), b = eu_ns(tl->end[v]);
    return a + (b - a) / 2;
}

/* "nodes[3] swap_in w" for the stall markers' names and args. */
static void node_label(char *buf, size_t size, const sa_plan *p, const sa_dfg_graph *g, int32_t v)
{
    const sa_plan_node *n = &p->nodes[v];
    bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
    snprintf(buf, size, "nodes[%d] %s %s", v, sa_plan_kind_name(n->kind), op ? g->ops[n->ref].name : g->tensors[n->ref].name);
}

static void trace_slice(FILE *out, const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, int32_t v)
{
    const sa_plan_node *n = &p->nodes[v];
    bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
    int64_t t0 = eu_ns(tl->start[v]), t1 = eu_ns(tl->end[v]);
    fputs(",\n{\"name\":", out);
    eu_json_str(out, op ? g->ops[n->ref].name : g->tensors[n->ref].name);
    fprintf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":", sa_plan_kind_name(n->kind),
            sa_plan_kind_stream(n->kind) + 1);
    eu_print_us(out, t0);
    fputs(",\"dur\":", out);
    eu_print_us(out, t1 - t0);
    fprintf(out, ",\"args\":{\"node\":%d,\"kind\":\"%s\",", v, sa_plan_kind_name(n->kind));
    if (op) {
        fprintf(out, "\"op\":%d,\"type\":", n->ref);
        eu_json_str(out, g->ops[n->ref].type);
        fprintf(out, ",\"phase\":\"%s\",\"bytes\":%lld", sa_dfg_phase_name(g->ops[n->ref].phase),
                (long long)op_bytes(g, n->ref));
    } else {
        fprintf(out, "\"tensor\":%d,\"tensor_kind\":\"%s\",\"bytes\":%lld", n->ref,
                sa_dfg_kind_name(g->tensors[n->ref].kind), (long long)g->tensors[n->ref].bytes);
    }
    fputs(",\"deps\":[", out);
    for (int32_t k = 0; k < n->n_deps; k++)
        fprintf(out, "%s%d", k ? "," : "", p->deps[n->dep_off + k]);
    fputs("]}}", out);
}

/* One arrow per dependency that crosses streams: "s" inside the slice it
 * leaves, "f" (binding point "e": the enclosing slice) inside the slice that
 * waited.  Flow ids are the dependency's index in p->deps, unique. */
static void trace_flows(FILE *out, const sa_plan *p, const sa_emit_timeline *tl)
{
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const sa_plan_node *n = &p->nodes[v];
        sa_plan_stream sv = sa_plan_kind_stream(n->kind);
        for (int32_t k = 0; k < n->n_deps; k++) {
            int32_t u = p->deps[n->dep_off + k];
            sa_plan_stream su = sa_plan_kind_stream(p->nodes[u].kind);
            if (su == sv)
                continue;
            int32_t id = n->dep_off + k;
            fprintf(out, ",\n{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"s\",\"id\":%d,\"pid\":1,\"tid\":%d,"
                         "\"ts\":",
                    id, su + 1);
            eu_print_us(out, mid_ns(tl, u));
            fprintf(out, "},\n{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%d,"
                         "\"pid\":1,\"tid\":%d,\"ts\":",
                    id, sv + 1);
            eu_print_us(out, mid_ns(tl, v));
            fputc('}', out);
        }
    }
}

/* An instant event on the compute track where each stall ends. */
static void trace_stalls(FILE *out, const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, const sa_emit_stall *st,
                         int32_t n)
{
    char a[320], b[320];
    for (int32_t i = 0; i < n; i++) {
        int32_t v = st[i].node, d = st[i].waited_for;
        node_label(a, sizeof a, p, g, v);
        if (d >= 0)
            node_label(b, sizeof b, p, g, d);
        else
            snprintf(b, sizeof b, "(no dependency)");
        fputs(",\n{\"name\":\"stall\",\"cat\":\"stall\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":1,\"ts\":", out);
        eu_print_us(out, eu_ns(tl->start[v]));
        fputs(",\"args\":{\"stall_us\":", out);
        eu_print_us(out, eu_ns(tl->start[v]) - eu_ns(tl->start[v] - st[i].gap_us));
        fprintf(out, ",\"node\":%d,\"waiting\":", v);
        eu_json_str(out, a);
        fprintf(out, ",\"waited_for_node\":%d,\"waited_for\":", d);
        eu_json_str(out, b);
        fputs("}}", out);
    }
}

sa_status sa_emit_trace(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err)
{
    sa_emit_timeline tl;
    sa_emit_curve mem = {0};
    sa_emit_stall *stalls = NULL;
    int32_t n_stalls = 0;
    sa_status st = sa_emit_timeline_run(p, g, &tl, err);
    if (!st)
        st = sa_emit_memory_curve(p, g, &tl, &mem, err);
    if (!st)
        st = sa_emit_stalls(p, &tl, &stalls, &n_stalls, err);
    if (st) {
        sa_emit_curve_free(&mem);
        sa_emit_timeline_free(&tl);
        return st;
    }
    /* One process, one thread per stream: Perfetto and chrome://tracing draw
     * each tid as a named track, in thread_sort_index order. */
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":", out);
    char pname[256];
    snprintf(pname, sizeof pname, "swap plan: %s", g->name);
    eu_json_str(out, pname);
    fputs("}}", out);
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++) {
        fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", s + 1,
                sa_plan_stream_name((sa_plan_stream)s));
        fprintf(out, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                s + 1, s + 1);
    }
    /* Times are whole nanoseconds printed as microseconds with three
     * decimals: a slice ends where the next one on its track starts, never
     * after (rounding start and end separately is monotone). */
    for (int32_t v = 0; v < p->n_nodes; v++)
        trace_slice(out, p, g, &tl, v);
    trace_flows(out, p, &tl);
    trace_stalls(out, p, g, &tl, stalls, n_stalls);
    for (int32_t i = 0; i < mem.n; i++) {
        fputs(",\n{\"name\":\"device memory\",\"ph\":\"C\",\"pid\":1,\"tid\":0,\"ts\":", out);
        eu_print_us(out, eu_ns(mem.time_us[i]));
        fprintf(out, ",\"args\":{\"bytes\":%lld}}", (long long)mem.bytes[i]);
    }
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"graph\":", out);
    eu_json_str(out, g->name);
    fputs(",\"device\":", out);
    eu_json_str(out, p->device.name);
    fprintf(out, ",\"iteration_us\":%.3f,\"ideal_us\":%.3f,\"stall_us\":%.3f,\"memory_bytes\":%lld,"
                 "\"peak_bytes\":%lld,\"stalls\":%d}}\n",
            tl.sim.makespan_us, sa_dfg_total_time_us(g), tl.sim.stall_us, (long long)p->device.memory_bytes,
            (long long)mem.peak, n_stalls);
    free(stalls);
    sa_emit_curve_free(&mem);
    sa_emit_timeline_free(&tl);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}

sa_status sa_emit_graph_json(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err)
{
    sa_status st = sa_plan_check_graph(p, g, "plan", err);
    if (st)
        return st;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *n = &p->nodes[i];
        bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
        if (n->ref < 0 || n->ref >= (op ? g->n_ops : g->n_tensors))
            return sa_fail(err, SA_EFORMAT, "plan: nodes[%d]: %s %d does not exist", i, op ? "op" : "tensor", n->ref);
    }
    for (int32_t i = 0; i < p->n_place; i++)
        if (p->place[i].tensor < 0 || p->place[i].tensor >= g->n_tensors)
            return sa_fail(err, SA_EFORMAT, "plan: placements[%d]: tensor %d does not exist", i, p->place[i].tensor);
    for (int32_t i = 0; i < p->n_res; i++)
        if (p->res[i].tensor < 0 || p->res[i].tensor >= g->n_tensors)
            return sa_fail(err, SA_EFORMAT, "plan: resident_at_start[%d]: tensor %d does not exist", i, p->res[i].tensor);

    /* cJSON (through json_util) keeps integers exact up to 2^53 */
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sa_fail(err, SA_ENOMEM, "out of memory writing the swapexec graph");
    cJSON_AddStringToObject(root, "format", "swapexec");
    ju_add_number(root, "version", SA_EMIT_GRAPH_FORMAT_VERSION);
    cJSON *gr = cJSON_AddObjectToObject(root, "graph");
    if (gr) {
        cJSON_AddStringToObject(gr, "name", g->name);
        ju_add_number(gr, "ops", g->n_ops);
        ju_add_number(gr, "tensors", g->n_tensors);
    }
    cJSON *streams = cJSON_AddArrayToObject(root, "streams");
    for (int s = 0; streams && s < SA_PLAN_STREAM_COUNT; s++)
        cJSON_AddItemToArray(streams, cJSON_CreateString(sa_plan_stream_name((sa_plan_stream)s)));
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    for (int32_t i = 0; nodes && i < p->n_nodes; i++) {
        const sa_plan_node *n = &p->nodes[i];
        bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        ju_add_number(o, "id", i);
        cJSON_AddStringToObject(o, "kind", sa_plan_kind_name(n->kind));
        cJSON_AddStringToObject(o, "stream", sa_plan_stream_name(sa_plan_kind_stream(n->kind)));
        ju_add_number(o, op ? "op" : "tensor", n->ref);
        cJSON_AddStringToObject(o, "name", op ? g->ops[n->ref].name : g->tensors[n->ref].name);
        cJSON *d = cJSON_AddArrayToObject(o, "deps");
        for (int32_t k = 0; d && k < n->n_deps; k++)
            cJSON_AddItemToArray(d, ju_number(p->deps[n->dep_off + k]));
        cJSON_AddItemToArray(nodes, o);
    }
    /* placements grouped per tensor, in plan order */
    cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
    cJSON **pl = calloc((size_t)(g->n_tensors > 0 ? g->n_tensors : 1), sizeof *pl);
    for (int32_t t = 0; tensors && pl && t < g->n_tensors; t++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        ju_add_number(o, "id", t);
        cJSON_AddStringToObject(o, "name", g->tensors[t].name);
        cJSON_AddStringToObject(o, "kind", sa_dfg_kind_name(g->tensors[t].kind));
        ju_add_number(o, "bytes", (double)g->tensors[t].bytes);
        pl[t] = cJSON_AddArrayToObject(o, "placements");
        cJSON_AddItemToArray(tensors, o);
    }
    for (int32_t i = 0; pl && i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !pl[q->tensor]) {
            cJSON_Delete(o);
            continue;
        }
        ju_add_number(o, "offset", (double)q->offset);
        ju_add_number(o, "begin", q->begin);
        ju_add_number(o, "end", q->end);
        cJSON_AddItemToArray(pl[q->tensor], o);
    }
    cJSON *rs = cJSON_AddArrayToObject(root, "resident_at_start");
    for (int32_t i = 0; rs && i < p->n_res; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        ju_add_number(o, "tensor", p->res[i].tensor);
        ju_add_number(o, "offset", (double)p->res[i].offset);
        cJSON_AddItemToArray(rs, o);
    }
    ju_add_number(root, "arena_bytes", (double)p->arena_bytes);
    char *text = pl ? ju_print(root, true) : NULL;
    free(pl);
    cJSON_Delete(root);
    if (!text)
        return sa_fail(err, SA_ENOMEM, "out of memory writing the swapexec graph");
    fputs(text, out);
    fputc('\n', out);
    free(text);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}
