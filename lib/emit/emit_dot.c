/* sa_emit_dot.c - the augmented dataflow graph in Graphviz DOT (emit.h). */
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/emit.h"

/* The longest name a label shows, in bytes: Graphviz refuses a label past
 * 16384 bytes, and a longer one would not be read anyway. */
#define DOT_NAME_MAX 200

/* Writes s inside a DOT double-quoted string: quotes and backslashes escaped
 * (a lone backslash would start a DOT escape such as \n or \N); past
 * DOT_NAME_MAX bytes the name is cut, between UTF-8 characters, and ends
 * with "...". */
static void dot_str(FILE *out, const char *s)
{
    size_t n = 0;
    for (const char *c = s ? s : ""; *c; c++, n++) {
        if (n >= DOT_NAME_MAX && ((unsigned char)*c & 0xc0) != 0x80) {
            fputs("...", out);
            break;
        }
        if (*c == '"' || *c == '\\')
            fputc('\\', out);
        if (*c == '\n')
            fputs("\\n", out);
        else
            fputc(*c, out);
    }
}

typedef struct node_style {
    const char *shape, *fill, *line;
} node_style;

/* Shape and colour tell the kinds apart even in grey print; the stream-order
 * edges take the stream's line colour. */
static const node_style STYLE[SA_PLAN_KIND_COUNT] = {
    [SA_PLAN_COMPUTE] = {"box", "#cfe2f3", "#3d85c6"},
    [SA_PLAN_SWAP_IN] = {"invhouse", "#d9ead3", "#38761d"},
    [SA_PLAN_SWAP_OUT] = {"house", "#f4cccc", "#990000"},
    [SA_PLAN_RECOMPUTE] = {"octagon", "#fce5cd", "#b45f06"},
};

static const char *stream_colour(sa_plan_stream s)
{
    return s == SA_PLAN_STREAM_H2D ? STYLE[SA_PLAN_SWAP_IN].line
           : s == SA_PLAN_STREAM_D2H ? STYLE[SA_PLAN_SWAP_OUT].line
                                  : STYLE[SA_PLAN_COMPUTE].line;
}

sa_status sa_emit_dot(const sa_plan *p, const sa_dfg_graph *g, int32_t first, int32_t last, FILE *out, sa_err *err)
{
    sa_status st = sa_plan_check_graph(p, g, "plan", err);
    if (st)
        return st;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *n = &p->nodes[i];
        bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
        if ((unsigned)n->kind >= SA_PLAN_KIND_COUNT || n->ref < 0 || n->ref >= (op ? g->n_ops : g->n_tensors))
            return sa_fail(err, SA_EFORMAT, "plan: nodes[%d]: %s %d does not exist", i, op ? "op" : "tensor", n->ref);
        for (int32_t k = 0; k < n->n_deps; k++)
            if (p->deps[n->dep_off + k] < 0 || p->deps[n->dep_off + k] >= p->n_nodes)
                return sa_fail(err, SA_EFORMAT, "plan: nodes[%d]: dep %d does not exist", i, p->deps[n->dep_off + k]);
    }
    int32_t n_comp = 0;
    for (int32_t i = 0; i < p->n_nodes; i++)
        n_comp += p->nodes[i].kind == SA_PLAN_COMPUTE;
    bool window = !(first == 0 && last == -1);
    if (!window)
        last = n_comp - 1;
    else if (first < 0 || last < first || last >= n_comp)
        return sa_fail(err, SA_EUSAGE, "window %d:%d: the schedule has positions 0..%d", first, last, n_comp - 1);

    /* A plan that deadlocks is drawn without times: the picture is how one
     * finds the cycle.  So is a graph without op times. */
    sa_emit_timeline tl;
    sa_err terr;
    st = sa_emit_timeline_run(p, g, &tl, &terr);
    bool timed = st == SA_OK;
    if (st && st != SA_EINVALID && st != SA_EFORMAT)
        return sa_fail(err, st, "%s", terr.msg);

    unsigned char *show = calloc((size_t)(p->n_nodes > 0 ? p->n_nodes : 1), 1);
    if (!show) {
        sa_emit_timeline_free(&tl);
        return sa_fail(err, SA_ENOMEM, "out of memory drawing %d nodes", p->n_nodes);
    }
    /* compute stream: positions first..last, and the recomputes that run
     * just before any of them */
    int32_t seen = 0, shown = 0;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        sa_plan_kind k = p->nodes[v].kind;
        if (k == SA_PLAN_COMPUTE) {
            show[v] = seen >= first && seen <= last;
            seen++;
        } else if (k == SA_PLAN_RECOMPUTE) {
            show[v] = !window || (seen >= first && seen <= last);
        }
    }
    /* transfers that feed or wait for a shown compute-stream node (marked 2 so
     * that swap-to-swap deps do not pull in more of the graph) */
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const sa_plan_node *n = &p->nodes[v];
        bool xfer = sa_plan_kind_stream(n->kind) != SA_PLAN_STREAM_COMPUTE;
        for (int32_t k = 0; k < n->n_deps; k++) {
            int32_t u = p->deps[n->dep_off + k];
            bool uxfer = sa_plan_kind_stream(p->nodes[u].kind) != SA_PLAN_STREAM_COMPUTE;
            if (xfer && !uxfer && show[u] == 1 && !show[v])
                show[v] = 2;
            if (!xfer && uxfer && show[v] == 1 && !show[u])
                show[u] = 2;
        }
    }
    for (int32_t v = 0; v < p->n_nodes; v++)
        shown += show[v] != 0;

    fputs("digraph swapplan {\n  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=\"", out);
    dot_str(out, g->name);
    fprintf(out, ": %d of %d plan nodes", shown, p->n_nodes);
    if (window)
        fprintf(out, " (schedule positions %d..%d of %d)", first, last, n_comp);
    if (timed)
        fprintf(out, ", %.3f us", tl.sim.makespan_us);
    else
        fputs(", not simulated", out);
    fputs("\\nboxes compute, octagons recompute, green swap_in (h2d), red swap_out (d2h); "
          "solid edges stream order, dashed edges deps", out);
    if (timed)
        fputs("\\n\\\"a + b us\\\" under a node: it starts a us into the iteration and runs b us (simulated)",
              out);
    fputs("\"];\n"
          "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n"
          "  edge [fontname=\"Helvetica\", fontsize=8];\n",
          out);
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (!show[v])
            continue;
        const sa_plan_node *n = &p->nodes[v];
        const node_style *s = &STYLE[n->kind];
        char b[64];
        fprintf(out, "  n%d [shape=%s, fillcolor=\"%s\", color=\"%s\", label=\"", v, s->shape, s->fill, s->line);
        if (n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE) {
            if (n->kind == SA_PLAN_RECOMPUTE)
                fputs("recompute ", out);
            dot_str(out, g->ops[n->ref].name);
            fprintf(out, "\\nop %d, node %d", n->ref, v);
        } else {
            fprintf(out, "%s ", sa_plan_kind_name(n->kind));
            dot_str(out, g->tensors[n->ref].name);
            fprintf(out, "\\ntensor %d, %s, node %d", n->ref, sa_emit_fmt_bytes(b, sizeof b, g->tensors[n->ref].bytes, false),
                    v);
        }
        if (timed)
            fprintf(out, "\\n%.3f + %.3f us", tl.start[v], tl.end[v] - tl.start[v]);
        fputs("\"];\n", out);
    }
    /* stream order between consecutive shown nodes; a gap says how many it skips */
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++) {
        int32_t prev = -1, skipped = 0;
        for (int32_t v = 0; v < p->n_nodes; v++) {
            if (sa_plan_kind_stream(p->nodes[v].kind) != (sa_plan_stream)s)
                continue;
            if (!show[v]) {
                skipped += prev >= 0;
                continue;
            }
            if (prev >= 0) {
                fprintf(out, "  n%d -> n%d [color=\"%s\"", prev, v, stream_colour((sa_plan_stream)s));
                if (skipped)
                    fprintf(out, ", label=\"%d hidden\"", skipped);
                fputs("];\n", out);
            }
            prev = v;
            skipped = 0;
        }
    }
    for (int32_t v = 0; v < p->n_nodes; v++) {
        if (!show[v])
            continue;
        const sa_plan_node *n = &p->nodes[v];
        for (int32_t k = 0; k < n->n_deps; k++) {
            int32_t u = p->deps[n->dep_off + k];
            if (show[u])
                fprintf(out, "  n%d -> n%d [style=dashed, color=\"#555555\"];\n", u, v);
        }
    }
    fputs("}\n", out);
    free(show);
    sa_emit_timeline_free(&tl);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}
