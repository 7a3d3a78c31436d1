/* emit.c - the simulated timeline and memory curves every view draws from,
 * and the check, summary and memory CSV views (emit.h). */
#include "swapadvisor/planner.h"
#include "swapadvisor/emit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit_util.h"
#include "swapadvisor/validate.h"

static sa_status out_status(FILE *out, sa_err *err)
{
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}

/* ---- timeline ---- */

void sa_emit_timeline_free(sa_emit_timeline *tl)
{
    if (!tl)
        return;
    free(tl->start);
    free(tl->end);
    memset(tl, 0, sizeof *tl);
}

/* The simulator and the curves index graph arrays with plan ids; a plan built
 * in memory has not been through sa_plan_parse's range checks, so repeat the
 * ones the views rely on. */
static sa_status check_refs(const sa_plan *p, const sa_dfg_graph *g, sa_err *err)
{
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *n = &p->nodes[i];
        bool op = n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE;
        if (n->ref < 0 || n->ref >= (op ? g->n_ops : g->n_tensors))
            return sa_fail(err, SA_EFORMAT, "plan: nodes[%d]: %s %d does not exist", i, op ? "op" : "tensor", n->ref);
        for (int32_t k = 0; k < n->n_deps; k++) {
            int32_t d = p->deps[n->dep_off + k];
            if (d < 0 || d >= p->n_nodes)
                return sa_fail(err, SA_EFORMAT, "plan: nodes[%d]: dep %d does not exist", i, d);
        }
    }
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        if (q->tensor < 0 || q->tensor >= g->n_tensors || q->begin < -1 || q->begin >= p->n_nodes || q->end < -1 ||
            q->end >= p->n_nodes)
            return sa_fail(err, SA_EFORMAT, "plan: placements[%d]: tensor %d or node %d..%d does not exist", i,
                           q->tensor, q->begin, q->end);
    }
    return SA_OK;
}

sa_status sa_emit_timeline_run(const sa_plan *p, const sa_dfg_graph *g, sa_emit_timeline *tl, sa_err *err)
{
    memset(tl, 0, sizeof *tl);
    sa_status st = sa_plan_check_graph(p, g, "plan", err);
    if (!st)
        st = check_refs(p, g, err);
    if (!st)
        st = planner_check_graph(g, NULL, err);
    if (st)
        return st;
    sa_sim_ws *ws = sa_sim_ws_new();
    size_t n = (size_t)(p->n_nodes > 0 ? p->n_nodes : 1);
    tl->start = malloc(n * sizeof *tl->start);
    tl->end = malloc(n * sizeof *tl->end);
    if (!ws || !tl->start || !tl->end) {
        sa_sim_ws_free(ws);
        sa_emit_timeline_free(tl);
        return sa_fail(err, SA_ENOMEM, "out of memory simulating %d nodes", p->n_nodes);
    }
    st = sa_sim_run(p, g, ws, &tl->sim, err);
    if (!st) {
        tl->n_nodes = p->n_nodes;
        if (p->n_nodes > 0) {
            memcpy(tl->start, sa_sim_start(ws), (size_t)p->n_nodes * sizeof *tl->start);
            memcpy(tl->end, sa_sim_end(ws), (size_t)p->n_nodes * sizeof *tl->end);
        }
    }
    sa_sim_ws_free(ws);
    if (st)
        sa_emit_timeline_free(tl);
    return st;
}

/* Runs the simulation unless the caller already did. */
static sa_status need_timeline(const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline **tl, sa_emit_timeline *own,
                               sa_err *err)
{
    memset(own, 0, sizeof *own);
    if (*tl)
        return SA_OK;
    sa_status st = sa_emit_timeline_run(p, g, own, err);
    *tl = own;
    return st;
}

/* ---- memory curves ---- */

void sa_emit_curve_free(sa_emit_curve *c)
{
    if (!c)
        return;
    free(c->time_us);
    free(c->bytes);
    memset(c, 0, sizeof *c);
}

static sa_status curve_alloc(sa_emit_curve *c, size_t rows, sa_err *err)
{
    memset(c, 0, sizeof *c);
    c->time_us = malloc(rows * sizeof *c->time_us);
    c->bytes = malloc(rows * sizeof *c->bytes);
    if (!c->time_us || !c->bytes) {
        sa_emit_curve_free(c);
        return sa_fail(err, SA_ENOMEM, "out of memory building a memory curve of %zu rows", rows);
    }
    return SA_OK;
}

/* Appends a step; a step at (or, out of order, before) the last time replaces
 * the last value, and a step that changes nothing is dropped, so rows stay
 * strictly increasing in time and every row is a change.  The peak counts
 * replaced values too (an op that takes no time still needs its memory). */
static void curve_push(sa_emit_curve *c, double t, int64_t b)
{
    if (b > c->peak)
        c->peak = b;
    if (c->n > 0 && t <= c->time_us[c->n - 1]) {
        c->bytes[c->n - 1] = b;
        if (c->n >= 2 && c->bytes[c->n - 2] == b)
            c->n--;
        return;
    }
    if (c->n > 0 && c->bytes[c->n - 1] == b)
        return;
    c->time_us[c->n] = t;
    c->bytes[c->n] = b;
    c->n++;
}

/* A placement's begin (+bytes) or end (-bytes), ordered as the validator orders
 * events (docs/formats.md, "Equal times"): by time; at one instant first the
 * placements that close with a node that lasted, then node by node in a
 * topological order of stream order + deps, each node's opened placements before
 * the ones closing with it when it took no time; placements held from the
 * iteration's start open before everything, those held to its end close after. */
typedef struct mem_event {
    double t;
    int32_t grp;   /* -1: iteration start, 0: end of a node that lasted, 1: the rest, 2: iteration end */
    int32_t rank;  /* the node's topological position */
    int32_t sub;   /* 0: opens, 1: closes */
    int64_t delta;
} mem_event;

static int cmp_event(const void *a, const void *b)
{
    const mem_event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->grp != y->grp)
        return x->grp < y->grp ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->sub > y->sub) - (x->sub < y->sub);
}

/* *rank (n_nodes entries, the caller frees it): each node's position in a
 * topological order of stream order + deps.  SA_ENOMEM, or sa_plan_node_order's
 * failure; *rank stays NULL then. */
static sa_status node_ranks(const sa_plan *p, int32_t **rank, sa_err *err)
{
    int32_t *r = malloc(((size_t)p->n_nodes + 1) * sizeof *r);
    int32_t *order = malloc(((size_t)p->n_nodes + 1) * sizeof *order), stuck;
    sa_status st = r && order ? sa_plan_node_order(p, order, &stuck, err)
                              : sa_fail(err, SA_ENOMEM, "out of memory building the memory curve");
    for (int32_t i = 0; !st && i < p->n_nodes; i++)
        r[order[i]] = i;
    free(order);
    if (st) {
        free(r);
        return st;
    }
    *rank = r;
    return SA_OK;
}

sa_status sa_emit_memory_curve(const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, sa_emit_curve *out,
                            sa_err *err)
{
    memset(out, 0, sizeof *out);
    sa_emit_timeline own;
    sa_status st = need_timeline(p, g, &tl, &own, err);
    if (st)
        return st;
    size_t cap = 2 * (size_t)p->n_place + 1;
    mem_event *ev = malloc(cap * sizeof *ev);
    int32_t *rank = NULL;
    st = ev ? node_ranks(p, &rank, err) : sa_fail(err, SA_ENOMEM, "out of memory building the memory curve");
    if (st || (st = curve_alloc(out, cap, err))) {
        free(ev);
        free(rank);
        sa_emit_timeline_free(&own);
        return st;
    }
    size_t n = 0;
    double makespan = tl->sim.makespan_us;
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        double t0 = q->begin < 0 ? 0 : tl->start[q->begin];
        double t1 = q->end < 0 ? makespan : tl->end[q->end];
        if (t1 < t0)
            continue; /* a placement that ends before it begins is the validator's business */
        int64_t b = g->tensors[q->tensor].bytes;
        ev[n++] = q->begin < 0 ? (mem_event){0, -1, -1, 0, b} : (mem_event){t0, 1, rank[q->begin], 0, b};
        if (q->end < 0)
            ev[n++] = (mem_event){t1, 2, 0, 1, -b};
        else if (tl->end[q->end] > tl->start[q->end])
            ev[n++] = (mem_event){t1, 0, rank[q->end], 1, -b};
        else
            ev[n++] = (mem_event){t1, 1, rank[q->end], 1, -b};
    }
    free(rank);
    qsort(ev, n, sizeof *ev, cmp_event);
    /* the rows hold what is in use after each instant; the peak also counts what
     * is in use in between, at an instant (a placement that lasts no time) */
    int64_t cur = 0, top = 0;
    size_t i = 0;
    while (i < n && ev[i].t <= 0) {
        cur += ev[i++].delta;
        top = cur > top ? cur : top;
    }
    curve_push(out, 0, cur);
    while (i < n) {
        double t = ev[i].t;
        while (i < n && ev[i].t == t) {
            cur += ev[i++].delta;
            top = cur > top ? cur : top;
        }
        curve_push(out, t, cur);
    }
    if (top > out->peak)
        out->peak = top;
    free(ev);
    sa_emit_timeline_free(&own);
    return SA_OK;
}

/* Compute node of every op (-1 when the plan lacks one); caller frees. */
static int32_t *op_nodes(const sa_plan *p, const sa_dfg_graph *g)
{
    int32_t *node = malloc((size_t)(g->n_ops > 0 ? g->n_ops : 1) * sizeof *node);
    if (!node)
        return NULL;
    for (int32_t i = 0; i < g->n_ops; i++)
        node[i] = -1;
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == SA_PLAN_COMPUTE && node[p->nodes[i].ref] < 0)
            node[p->nodes[i].ref] = i;
    return node;
}

sa_status sa_emit_noswap_curve(const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, sa_emit_curve *out,
                            sa_err *err)
{
    memset(out, 0, sizeof *out);
    sa_emit_timeline own;
    sa_status st = need_timeline(p, g, &tl, &own, err);
    if (st)
        return st;
    int32_t n = g->n_ops;
    int32_t *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos);
    int64_t *delta = calloc((size_t)n + 1, sizeof *delta);
    int32_t *node = op_nodes(p, g);
    if (!pos || !delta || !node || (st = curve_alloc(out, (size_t)n + 2, err))) {
        free(pos);
        free(delta);
        free(node);
        sa_emit_timeline_free(&own);
        return st ? st : sa_fail(err, SA_ENOMEM, "out of memory building the no-swap curve");
    }
    for (int32_t i = 0; i < n; i++)
        pos[i] = -1;
    bool perm = p->n_schedule == n;
    for (int32_t i = 0; perm && i < n; i++) {
        int32_t o = p->schedule[i];
        perm = o >= 0 && o < n && pos[o] < 0;
        if (perm)
            pos[o] = i;
    }
    if (!perm) {
        free(pos);
        free(delta);
        free(node);
        sa_emit_timeline_free(&own);
        sa_emit_curve_free(out);
        return sa_fail(err, SA_EFORMAT, "plan: schedule: not a permutation of the graph's %d ops", n);
    }
    /* the liveness sa_dfg_peak_bytes documents */
    int64_t base = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *tt = &g->tensors[t];
        int32_t first, last;
        if (sa_dfg_kind_persistent(tt->kind)) {
            base = sa_add_sat(base, tt->bytes);
            continue;
        }
        if (!sa_dfg_tensor_span(g, pos, t, &first, &last))
            continue;
        delta[first] = sa_add_sat(delta[first], tt->bytes);
        delta[last + 1] = sa_add_sat(delta[last + 1], -tt->bytes);
    }
    curve_push(out, 0, base);
    int64_t cur = base;
    double t = 0, last_end = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t v = node[p->schedule[i]];
        /* stays monotone even when the plan runs ops out of schedule order */
        if (v >= 0) {
            t = fmax(t, tl->start[v]);
            last_end = fmax(last_end, tl->end[v]);
        }
        cur = sa_add_sat(cur, delta[i]);
        curve_push(out, t, cur);
    }
    curve_push(out, fmax(t, last_end), base);
    free(pos);
    free(delta);
    free(node);
    sa_emit_timeline_free(&own);
    return SA_OK;
}

/* ---- check ---- */

sa_status sa_emit_check(const sa_plan *p, const sa_dfg_graph *g, bool strict, int32_t max_lines, FILE *out,
                     int32_t *n_violations, sa_err *err)
{
    sa_val_report rep = {0};
    rep.max_lines = max_lines > 0 ? max_lines : INT32_MAX;
    sa_status st = sa_plan_validate(p, g, strict, &rep, err);
    /* a deadlock returns before the count is stored, with its line listed */
    int32_t n = rep.n_violations > rep.n_lines ? rep.n_violations : rep.n_lines;
    if (st == SA_EINVALID && n == 0)
        n = 1;
    if (n_violations)
        *n_violations = st == SA_OK || st == SA_EINVALID ? n : 0;
    if (st == SA_OK || st == SA_EINVALID)
        for (int32_t i = 0; i < rep.n_lines; i++)
            fprintf(out, "%s\n", rep.lines[i]);
    sa_val_report_free(&rep);
    if (st != SA_OK && st != SA_EINVALID)
        return st;
    sa_err werr;
    if (out_status(out, &werr))
        return sa_fail(err, SA_EIO, "%s", werr.msg);
    return st;
}

/* ---- summary ---- */

const char *sa_emit_fmt_bytes(char *buf, size_t size, int64_t b, bool exact)
{
    static const char *const unit[] = {"KB", "MB", "GB", "TB", "PB"};
    if (b < 1000 && b > -1000) {
        snprintf(buf, size, "%lld B", (long long)b);
        return buf;
    }
    double v = (double)b / 1e3;
    int u = 0;
    while (fabs(v) >= 1000 && u < 4) {
        v /= 1e3;
        u++;
    }
    if (exact)
        snprintf(buf, size, "%.2f %s (%lld B)", v, unit[u], (long long)b);
    else
        snprintf(buf, size, "%.2f %s", v, unit[u]);
    return buf;
}

/* One node as a reader would name it: "nodes[1] swap_in w (tensor 1, param, 32 B)". */
static void describe_node(char *buf, size_t size, const sa_plan *p, const sa_dfg_graph *g, int32_t v)
{
    const sa_plan_node *n = &p->nodes[v];
    char b[64];
    if (n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE)
        snprintf(buf, size, "nodes[%d] %s %s (op %d)", v, sa_plan_kind_name(n->kind), g->ops[n->ref].name, n->ref);
    else
        snprintf(buf, size, "nodes[%d] %s %s (tensor %d, %s, %s)", v, sa_plan_kind_name(n->kind),
                 g->tensors[n->ref].name, n->ref, sa_dfg_kind_name(g->tensors[n->ref].kind),
                 sa_emit_fmt_bytes(b, sizeof b, g->tensors[n->ref].bytes, false));
}

sa_status sa_emit_stalls(const sa_plan *p, const sa_emit_timeline *tl, sa_emit_stall **out, int32_t *n, sa_err *err)
{
    *out = NULL;
    *n = 0;
    int32_t count = 0;
    double prev_end = 0;
    /* each node's predecessor on its own stream (nodes are listed in stream
     * order): a transfer the compute stream waits for may itself have waited
     * in its stream's queue, behind the transfer that really held it up */
    int32_t *before = malloc(((size_t)p->n_nodes + 1) * sizeof *before);
    if (!before)
        return sa_fail(err, SA_ENOMEM, "out of memory listing stalls");
    int32_t last_on[SA_PLAN_STREAM_COUNT] = {-1, -1, -1};
    for (int32_t v = 0; v < p->n_nodes; v++) {
        sa_plan_stream s = sa_plan_kind_stream(p->nodes[v].kind);
        before[v] = last_on[s];
        last_on[s] = v;
    }
    /* walks the compute stream */
    for (int pass = 0; pass < 2; pass++) {
        prev_end = 0;
        count = 0;
        for (int32_t v = 0; v < p->n_nodes; v++) {
            const sa_plan_node *nd = &p->nodes[v];
            if (sa_plan_kind_stream(nd->kind) != SA_PLAN_STREAM_COMPUTE)
                continue;
            double gap = tl->start[v] - prev_end;
            prev_end = tl->end[v];
            if (!(gap > 1e-9 * (1.0 + tl->start[v])))
                continue;
            if (pass == 1) {
                int32_t dep = -1;
                for (int32_t k = 0; k < nd->n_deps; k++) {
                    int32_t u = p->deps[nd->dep_off + k];
                    if (dep < 0 || tl->end[u] > tl->end[dep])
                        dep = u;
                }
                /* a transfer: of it and the transfers queued ahead of it on
                 * its stream, the one that ran longest inside the stall */
                double s0 = tl->start[v] - gap, s1 = tl->start[v], best = -1;
                for (int32_t w = dep; w >= 0 && sa_plan_kind_stream(p->nodes[w].kind) != SA_PLAN_STREAM_COMPUTE &&
                                      tl->end[w] > s0;
                     w = before[w]) {
                    double ov = fmin(tl->end[w], s1) - fmax(tl->start[w], s0);
                    if (ov > best) {
                        best = ov;
                        dep = w;
                    }
                }
                (*out)[count] = (sa_emit_stall){v, dep, gap};
            }
            count++;
        }
        if (pass == 0) {
            if (count == 0) {
                free(before);
                return SA_OK;
            }
            *out = malloc((size_t)count * sizeof **out);
            if (!*out) {
                free(before);
                return sa_fail(err, SA_ENOMEM, "out of memory listing %d stalls", count);
            }
        }
    }
    free(before);
    *n = count;
    return SA_OK;
}

static int cmp_stall(const void *a, const void *b)
{
    const sa_emit_stall *x = a, *y = b;
    if (x->gap_us != y->gap_us)
        return x->gap_us > y->gap_us ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static const char *plural(int64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

sa_status sa_emit_summary(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err)
{
    sa_emit_timeline tl;
    sa_emit_curve mem = {0}, ns = {0};
    sa_status st = sa_emit_timeline_run(p, g, &tl, err);
    if (!st)
        st = sa_emit_memory_curve(p, g, &tl, &mem, err);
    if (!st)
        st = sa_emit_noswap_curve(p, g, &tl, &ns, err);
    sa_emit_stall *stalls = NULL;
    int32_t n_stalls = 0;
    if (!st)
        st = sa_emit_stalls(p, &tl, &stalls, &n_stalls, err);
    if (st) {
        sa_emit_curve_free(&mem);
        sa_emit_curve_free(&ns);
        sa_emit_timeline_free(&tl);
        return st;
    }
    const sa_sim_result *r = &tl.sim;
    int32_t count[SA_PLAN_KIND_COUNT] = {0};
    int32_t kcount[SA_DFG_KIND_COUNT][2] = {{0}};
    int64_t kbytes[SA_DFG_KIND_COUNT][2] = {{0}};
    double before = 0;
    for (int32_t i = 0; i < n_stalls; i++)
        before += stalls[i].gap_us;
    for (int32_t v = 0; v < p->n_nodes; v++) {
        const sa_plan_node *nd = &p->nodes[v];
        count[nd->kind]++;
        if (nd->kind == SA_PLAN_SWAP_IN || nd->kind == SA_PLAN_SWAP_OUT) {
            int dir = nd->kind == SA_PLAN_SWAP_OUT;
            kcount[g->tensors[nd->ref].kind][dir]++;
            kbytes[g->tensors[nd->ref].kind][dir] =
                sa_add_sat(kbytes[g->tensors[nd->ref].kind][dir], g->tensors[nd->ref].bytes);
        }
    }
    double ideal = sa_dfg_total_time_us(g);
    char a[96], b[96], c[96], d[96];
    fprintf(out, "plan        graph \"%s\": %d ops, %d tensors; %d nodes (%d compute, %d recompute, %d swap-in, "
                 "%d swap-out); device \"%s\"\n",
            g->name, g->n_ops, g->n_tensors, p->n_nodes, count[SA_PLAN_COMPUTE], count[SA_PLAN_RECOMPUTE],
            count[SA_PLAN_SWAP_IN], count[SA_PLAN_SWAP_OUT], p->device.name);
    fprintf(out, "iteration   %s predicted; ideal %s (%.1f%% of ideal)\n", eu_fmt_time(a, sizeof a, r->makespan_us),
            eu_fmt_time(b, sizeof b, ideal), r->makespan_us > 0 ? 100.0 * ideal / r->makespan_us : 100.0);
    const char *lb = p->search_json ? strstr(p->search_json, "\"lower_bound_us\":") : NULL;
    if (lb) {
        double bound = strtod(lb + strlen("\"lower_bound_us\":"), NULL);
        const char *meth = strstr(p->search_json, "\"bound_method\":\"");
        char mname[32] = "";
        if (meth)
            sscanf(meth + strlen("\"bound_method\":\""), "%31[a-z]", mname);
        if (bound > 0)
            fprintf(out, "bound       %s lower bound%s%s%s for this schedule and memory: within %.1f%% of the bound\n",
                    eu_fmt_time(a, sizeof a, bound), *mname ? " (" : "", mname, *mname ? ")" : "",
                    100.0 * (r->makespan_us / bound - 1.0));
    }
    if (fabs(p->predicted.iteration_us - r->makespan_us) > 0.005 * r->makespan_us)
        fprintf(out, "note        the plan's predicted.iteration_us %s differs from this simulation\n",
                eu_fmt_time(a, sizeof a, p->predicted.iteration_us));
    fprintf(out, "stall       %s with the compute stream idle: %s before ops start, %s after the last one ends\n",
            eu_fmt_time(a, sizeof a, r->stall_us), eu_fmt_time(b, sizeof b, before),
            eu_fmt_time(c, sizeof c, fmax(0.0, r->stall_us - before)));
    fprintf(out, "traffic     h2d %s in %d %s; d2h %s in %d %s\n", sa_emit_fmt_bytes(a, sizeof a, r->h2d_bytes, true),
            r->n_swap_in, plural(r->n_swap_in, "swap-in", "swap-ins"), sa_emit_fmt_bytes(b, sizeof b, r->d2h_bytes, true),
            r->n_swap_out, plural(r->n_swap_out, "swap-out", "swap-outs"));
    fprintf(out, "memory      peak %s in use of %s memory_bytes (%.1f%%); arena_bytes %s\n",
            sa_emit_fmt_bytes(a, sizeof a, mem.peak, true), sa_emit_fmt_bytes(b, sizeof b, p->device.memory_bytes, true),
            p->device.memory_bytes > 0 ? 100.0 * (double)mem.peak / (double)p->device.memory_bytes : 0.0,
            sa_emit_fmt_bytes(c, sizeof c, p->arena_bytes, true));
    fprintf(out, "no-swap     this schedule would need a peak of %s without swapping (%.2fx memory_bytes)\n",
            sa_emit_fmt_bytes(a, sizeof a, ns.peak, true),
            p->device.memory_bytes > 0 ? (double)ns.peak / (double)p->device.memory_bytes : 0.0);
    fprintf(out, "recompute   %d %s\n", count[SA_PLAN_RECOMPUTE], plural(count[SA_PLAN_RECOMPUTE], "node", "nodes"));

    fprintf(out, "\nswaps by tensor kind   swap-ins        bytes   swap-outs        bytes\n");
    int32_t tot[2] = {0, 0};
    int64_t totb[2] = {0, 0};
    for (int k = 0; k < SA_DFG_KIND_COUNT; k++) {
        if (kcount[k][0] == 0 && kcount[k][1] == 0)
            continue;
        fprintf(out, "  %-18s %10d %12s %11d %12s\n", sa_dfg_kind_name((sa_dfg_kind)k), kcount[k][0],
                sa_emit_fmt_bytes(a, sizeof a, kbytes[k][0], false), kcount[k][1],
                sa_emit_fmt_bytes(b, sizeof b, kbytes[k][1], false));
        for (int dir = 0; dir < 2; dir++) {
            tot[dir] += kcount[k][dir];
            totb[dir] = sa_add_sat(totb[dir], kbytes[k][dir]);
        }
    }
    fprintf(out, "  %-18s %10d %12s %11d %12s\n", "all", tot[0], sa_emit_fmt_bytes(a, sizeof a, totb[0], false), tot[1],
            sa_emit_fmt_bytes(b, sizeof b, totb[1], false));

    if (n_stalls > 0) /* stalls is NULL when the plan has no compute node */
        qsort(stalls, (size_t)n_stalls, sizeof *stalls, cmp_stall);
    int32_t shown = n_stalls < SA_EMIT_TOP_STALLS ? n_stalls : SA_EMIT_TOP_STALLS;
    fprintf(out, "\nlongest stalls (%d of %d): the compute stream idle before a node, and the dependency that "
                 "ended last\n",
            shown, n_stalls);
    if (shown > 0)
        fprintf(out, "  %2s %10s %10s  %-36s %s\n", "#", "stall_us", "start_us", "waiting", "waited for");
    for (int32_t i = 0; i < shown; i++) {
        int32_t v = stalls[i].node, dep = stalls[i].waited_for;
        describe_node(c, sizeof c, p, g, v);
        if (dep >= 0)
            describe_node(d, sizeof d, p, g, dep);
        else
            snprintf(d, sizeof d, "(no dependency)");
        fprintf(out, "  %2d %10.3f %10.3f  %-36s %s\n", i + 1, stalls[i].gap_us, tl.start[v], c, d);
    }
    free(stalls);
    sa_emit_curve_free(&mem);
    sa_emit_curve_free(&ns);
    sa_emit_timeline_free(&tl);
    return out_status(out, err);
}

/* ---- memory CSV ---- */

sa_status sa_emit_memory_csv(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err)
{
    sa_emit_curve c;
    sa_status st = sa_emit_memory_curve(p, g, NULL, &c, err);
    if (st)
        return st;
    /* Times print to the nanosecond; rows that would print at the same time
     * collapse into the last one so the CSV stays a function of time. */
    char cur[64], next[64];
    int64_t last = -1;
    fprintf(out, "time_us,bytes\n");
    for (int32_t i = 0; i < c.n; i++) {
        snprintf(cur, sizeof cur, "%.3f", c.time_us[i]);
        if (i + 1 < c.n) {
            snprintf(next, sizeof next, "%.3f", c.time_us[i + 1]);
            if (strcmp(cur, next) == 0)
                continue;
        }
        if (c.bytes[i] == last)
            continue;
        fprintf(out, "%s,%lld\n", cur, (long long)c.bytes[i]);
        last = c.bytes[i];
    }
    sa_emit_curve_free(&c);
    return out_status(out, err);
}
