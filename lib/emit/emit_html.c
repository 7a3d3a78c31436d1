/* sa_emit_html.c - one self-contained HTML page of one or several plans (emit.h):
 * the data as JSON in a <script type="application/json">, the page's script
 * (lib/emit/report.js, made a C string by the build) and styles inline, and
 * the comparison SVG inline when there are several plans.  Nothing refers
 * to the network. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit_util.h"
#include "report_js.h" /* static const char *const REPORT_JS[], report.js line by line, NULL-terminated */
#include "swapadvisor/emit.h"

/* A JSON string that is also safe inside <script>: '<', '>' and '&' as \u
 * escapes, so no name can close the element. */
static void js_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&')
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

const char *sa_emit_plan_label(const sa_plan *p, const char *fallback, bool with_memory, char *buf, size_t size)
{
    const char *name = fallback;
    cJSON *s = p->search_json ? cJSON_Parse(p->search_json) : NULL;
    const cJSON *alg = s ? cJSON_GetObjectItem(s, "algorithm") : NULL;
    if (cJSON_IsString(alg) && alg->valuestring[0])
        name = alg->valuestring;
    char b[64];
    if (with_memory)
        snprintf(buf, size, "%s @ %s", name ? name : "plan", sa_emit_fmt_bytes(b, sizeof b, p->device.memory_bytes, false));
    else
        snprintf(buf, size, "%s", name ? name : "plan");
    cJSON_Delete(s);
    return buf;
}

static void graph_json(FILE *out, const sa_dfg_graph *g)
{
    fputs("\"graph\":{\"name\":", out);
    js_str(out, g->name);
    fputs(",\"ops\":[", out);
    for (int32_t i = 0; i < g->n_ops; i++) {
        fputs(i ? "," : "", out);
        js_str(out, g->ops[i].name);
    }
    fputs("],\"types\":[", out);
    for (int32_t i = 0; i < g->n_ops; i++) {
        fputs(i ? "," : "", out);
        js_str(out, g->ops[i].type);
    }
    fputs("],\"tensors\":[", out);
    for (int32_t i = 0; i < g->n_tensors; i++) {
        fputs(i ? "," : "", out);
        js_str(out, g->tensors[i].name);
    }
    fputs("],\"kind\":[", out);
    for (int32_t i = 0; i < g->n_tensors; i++)
        fprintf(out, "%s%d", i ? "," : "", (int)g->tensors[i].kind);
    fputs("],\"bytes\":[", out);
    for (int32_t i = 0; i < g->n_tensors; i++)
        fprintf(out, "%s%lld", i ? "," : "", (long long)g->tensors[i].bytes);
    fputs("]},\"kinds\":[", out);
    for (int k = 0; k < SA_DFG_KIND_COUNT; k++) {
        fputs(k ? "," : "", out);
        js_str(out, sa_dfg_kind_name((sa_dfg_kind)k));
    }
    fputc(']', out);
}

/* One plan's numbers and arrays; times in us with three decimals (whole ns). */
static sa_status plan_json(FILE *out, const sa_plan *p, const char *label, const sa_dfg_graph *g, sa_err *err)
{
    sa_emit_timeline tl;
    sa_emit_curve mem = {0}, ns = {0};
    sa_emit_stall *st = NULL;
    int32_t n_st = 0;
    sa_status s = sa_emit_timeline_run(p, g, &tl, err);
    if (!s)
        s = sa_emit_memory_curve(p, g, &tl, &mem, err);
    if (!s)
        s = sa_emit_noswap_curve(p, g, &tl, &ns, err);
    if (!s)
        s = sa_emit_stalls(p, &tl, &st, &n_st, err);
    if (s) {
        sa_err e2 = *err;
        sa_fail(err, s, "%s: %s", label, e2.msg);
        sa_emit_curve_free(&mem);
        sa_emit_curve_free(&ns);
        sa_emit_timeline_free(&tl);
        return s;
    }
    const sa_sim_result *r = &tl.sim;
    fputs("{\"label\":", out);
    js_str(out, label);
    fputs(",\"device\":", out);
    js_str(out, p->device.name);
    fprintf(out, ",\"memory_bytes\":%lld,\"arena_bytes\":%lld,\"peak_bytes\":%lld,\"noswap_peak\":%lld,"
                 "\"h2d_bytes\":%lld,\"d2h_bytes\":%lld,\"n_swap_in\":%d,\"n_swap_out\":%d,\"n_recompute\":%d,",
            (long long)p->device.memory_bytes, (long long)p->arena_bytes, (long long)mem.peak, (long long)ns.peak,
            (long long)r->h2d_bytes, (long long)r->d2h_bytes, r->n_swap_in, r->n_swap_out, r->n_recompute);
    fputs("\"iteration_us\":", out);
    eu_print_us(out, eu_ns(r->makespan_us));
    fputs(",\"ideal_us\":", out);
    eu_print_us(out, eu_ns(sa_dfg_total_time_us(g)));
    fputs(",\"stall_us\":", out);
    eu_print_us(out, eu_ns(r->stall_us));
    fputs(",\n\"nk\":[", out);
    for (int32_t v = 0; v < p->n_nodes; v++)
        fprintf(out, "%s%d", v ? "," : "", (int)p->nodes[v].kind);
    fputs("],\n\"nr\":[", out);
    for (int32_t v = 0; v < p->n_nodes; v++)
        fprintf(out, "%s%d", v ? "," : "", p->nodes[v].ref);
    fputs("],\n\"ns\":[", out);
    for (int32_t v = 0; v < p->n_nodes; v++) {
        fputs(v ? "," : "", out);
        eu_print_us(out, eu_ns(tl.start[v]));
    }
    fputs("],\n\"ne\":[", out);
    for (int32_t v = 0; v < p->n_nodes; v++) {
        fputs(v ? "," : "", out);
        eu_print_us(out, eu_ns(tl.end[v]));
    }
    /* deps as offsets into one array: node v's are deps[dOff[v] .. dOff[v + 1]) */
    fputs("],\n\"dOff\":[", out);
    int32_t off = 0;
    for (int32_t v = 0; v <= p->n_nodes; v++) {
        fprintf(out, "%s%d", v ? "," : "", off);
        if (v < p->n_nodes)
            off += p->nodes[v].n_deps;
    }
    fputs("],\n\"deps\":[", out);
    bool first = true;
    for (int32_t v = 0; v < p->n_nodes; v++)
        for (int32_t k = 0; k < p->nodes[v].n_deps; k++) {
            fprintf(out, "%s%d", first ? "" : ",", p->deps[p->nodes[v].dep_off + k]);
            first = false;
        }
    fputs("],\n\"pl\":[", out);
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        fprintf(out, "%s%d,%lld,%d,%d", i ? "," : "", q->tensor, (long long)q->offset, q->begin, q->end);
    }
    fputs("],\n\"stalls\":[", out);
    for (int32_t i = 0; i < n_st; i++) {
        fprintf(out, "%s%d,%d,", i ? "," : "", st[i].node, st[i].waited_for);
        eu_print_us(out, eu_ns(st[i].gap_us));
    }
    fputs("],\n\"mem\":[", out);
    for (int32_t i = 0; i < mem.n; i++) {
        fputs(i ? "," : "", out);
        eu_print_us(out, eu_ns(mem.time_us[i]));
        fprintf(out, ",%lld", (long long)mem.bytes[i]);
    }
    fputs("]}", out);
    free(st);
    sa_emit_curve_free(&mem);
    sa_emit_curve_free(&ns);
    sa_emit_timeline_free(&tl);
    return SA_OK;
}

static const char CSS[] =
    "body{font:14px/1.4 Helvetica,Arial,sans-serif;margin:16px 24px;color:#222}"
    "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}"
    "table{border-collapse:collapse}th,td{text-align:left;padding:2px 10px 2px 0;vertical-align:top}"
    "#stalls td,#stalls th{font-size:12px;border-bottom:1px solid #eee}"
    ".wrap{position:relative;width:100%}canvas{display:block;cursor:crosshair;border:1px solid #ddd}"
    "#tip{position:absolute;display:none;background:#fffff0;border:1px solid #999;padding:6px 8px;font-size:12px;"
    "max-width:360px;pointer-events:none;box-shadow:2px 2px 6px rgba(0,0,0,.2);z-index:2}"
    ".stall{color:#c00}.note{color:#555;font-size:12px}#legend span{margin-right:14px;font-size:12px}"
    "#legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}"
    "svg.compare{max-width:100%;height:auto}";

sa_status sa_emit_html(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g, FILE *out,
                    sa_err *err)
{
    if (n < 1)
        return sa_fail(err, SA_EUSAGE, "html: no plans");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
          "style-src 'unsafe-inline'; img-src data:\">\n<title>",
          out);
    eu_xml_str(out, g->name);
    fprintf(out, ": swap plan%s</title>\n<style>%s</style></head>\n<body>\n", n > 1 ? "s" : "", CSS);
    fputs("<h1 id=\"title\">", out);
    eu_xml_str(out, g->name);
    fputs("</h1>\n<p class=\"note\">swapplan-emit --format html: times are simulated with the transfer model of "
          "docs/formats.md section 2. Wheel over a chart zooms its time axis, drag pans, double click resets.</p>\n",
          out);
    if (n > 1) {
        fputs("<h2>Plans compared</h2>\n<div id=\"compare\">\n", out);
        sa_status st = eu_compare_svg(plans, labels, n, g, false, out, err);
        if (st)
            return st;
        fputs("</div>\n", out);
    }
    fputs("<p id=\"picker\"><label>plan shown below: <select id=\"pick\"></select></label></p>\n"
          "<h2>Summary</h2>\n<table id=\"summary\"></table>\n"
          "<h2>Longest stalls</h2>\n<table id=\"stalls\"></table>\n"
          "<h2>Timeline <button id=\"reset\">reset zoom</button></h2>\n"
          "<p class=\"note\">three streams; red marks: the compute stream waiting; hover a node for its "
          "dependencies</p>\n<div class=\"wrap\"><canvas id=\"timeline\"></canvas></div>\n"
          "<h2>Device memory: one band per placement, at its arena offset</h2>\n"
          "<p id=\"legend\"></p>\n<div class=\"wrap\"><canvas id=\"memory\"></canvas></div>\n"
          "<div id=\"tip\"></div>\n<script type=\"application/json\" id=\"plan-data\">{",
          out);
    graph_json(out, g);
    fputs(",\n\"plans\":[", out);
    for (int32_t i = 0; i < n; i++) {
        if (i)
            fputs(",\n", out);
        sa_status st = plan_json(out, plans[i], labels[i], g, err);
        if (st)
            return st;
    }
    fputs("]}</script>\n<script>\n", out);
    for (const char *const *line = REPORT_JS; *line; line++)
        fputs(*line, out);
    fputs("</script>\n</body></html>\n", out);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}
