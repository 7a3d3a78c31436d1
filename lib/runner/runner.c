/* runner.c - what both replay backends share: options, validation, the replay
 * layout (placement resolution and byte scaling) and the dispatch. */
#include "swapadvisor/runner.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/sim.h"

#define RUNNER_DEFAULT_CAP ((int64_t)1 << 30)
#define RUNNER_DEFAULT_ITER 2
#define RUNNER_DEFAULT_LINES 10
/* Host copies start on 8-byte boundaries so the hashing and filling code mostly
 * works on aligned words (it is correct either way). */
#define HOST_ALIGN 8

void sa_runner_opts_default(sa_runner_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = SA_RUNNER_HOST;
    o->iterations = RUNNER_DEFAULT_ITER;
}

const char *sa_runner_backend_name(sa_runner_backend b) { return b == SA_RUNNER_CUDA ? "cuda" : "host"; }

bool sa_runner_backend_from_name(const char *s, sa_runner_backend *out)
{
    if (strcmp(s, "host") == 0)
        *out = SA_RUNNER_HOST;
    else if (strcmp(s, "cuda") == 0)
        *out = SA_RUNNER_CUDA;
    else
        return false;
    return true;
}

void sa_runner_report_free(sa_runner_report *r)
{
    if (!r)
        return;
    sa_val_report_free(&r->violations);
    free(r->iter_us);
    r->iter_us = NULL;
}

void sa_runner_layout_free(sa_runner_layout *l)
{
    if (!l)
        return;
    free(l->tbytes);
    free(l->host_off);
    free(l->place_off);
    free(l->res_off);
    free(l->use_off);
    free(l->use);
    free(l->order);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ scaling */

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

static int64_t scaled_bytes(int64_t bytes, int64_t k)
{
    if (k == 1)
        return bytes;
    int64_t s = ceil_div(bytes, k);
    return s < 8 ? 8 : s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The sorted, deduplicated addresses that bound placements and residents. */
typedef struct bounds {
    int64_t *x;
    size_t n;
} bounds;

static bool bounds_build(const sa_plan *p, const sa_dfg_graph *g, bounds *b)
{
    size_t cap = 2 * ((size_t)p->n_place + (size_t)p->n_res) + 2;
    b->x = malloc(cap * sizeof *b->x);
    b->n = 0;
    if (!b->x)
        return false;
    b->x[b->n++] = 0;
    b->x[b->n++] = p->arena_bytes;
    for (int32_t i = 0; i < p->n_place; i++) {
        b->x[b->n++] = p->place[i].offset;
        b->x[b->n++] = p->place[i].offset + g->tensors[p->place[i].tensor].bytes;
    }
    for (int32_t i = 0; i < p->n_res; i++) {
        b->x[b->n++] = p->res[i].offset;
        b->x[b->n++] = p->res[i].offset + g->tensors[p->res[i].tensor].bytes;
    }
    qsort(b->x, b->n, sizeof *b->x, cmp_i64);
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (m == 0 || b->x[i] != b->x[m - 1])
            b->x[m++] = b->x[i];
    b->n = m;
    return true;
}

/* x' = floor(x / K) + 8 * rank(x); x must be one of the bounds. */
static int64_t bounds_map(const bounds *b, int64_t x, int64_t k)
{
    if (k == 1)
        return x;
    size_t lo = 0, hi = b->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (b->x[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return x / k + 8 * (int64_t)lo;
}

static bool *host_needs(const sa_plan *p, const sa_dfg_graph *g)
{
    bool *need = calloc((size_t)g->n_tensors + 1, sizeof *need);
    if (!need)
        return NULL;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        sa_dfg_kind k = g->tensors[t].kind;
        need[t] = k == SA_DFG_INPUT || sa_dfg_kind_persistent(k);
    }
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == SA_PLAN_SWAP_IN || p->nodes[i].kind == SA_PLAN_SWAP_OUT)
            need[p->nodes[i].ref] = true;
    return need;
}

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static int64_t footprint(const sa_plan *p, const sa_dfg_graph *g, const bounds *b, const bool *need, int64_t k)
{
    int64_t total = bounds_map(b, p->arena_bytes, k);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int64_t s = scaled_bytes(g->tensors[t].bytes, k);
        total += align_up(s, HOST_ALIGN); /* the reference run's buffer */
        if (need[t])
            total += align_up(s, HOST_ALIGN);
    }
    return total;
}

/* Ids and address ranges a replay indexes with: anything out of range would
 * make it read or write outside its buffers, so this holds even under force. */
static sa_status check_ranges(const sa_plan *p, const sa_dfg_graph *g, sa_err *err)
{
    if (p->graph_ops != g->n_ops || p->graph_tensors != g->n_tensors)
        return sa_plan_check_graph(p, g, "plan", err);
    if (p->arena_bytes < 0)
        return sa_fail(err, SA_EINVALID, "plan: arena_bytes %lld is negative: cannot replay", (long long)p->arena_bytes);
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        bool op = nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE;
        if ((unsigned)nd->kind >= SA_PLAN_KIND_COUNT || nd->ref < 0 || nd->ref >= (op ? g->n_ops : g->n_tensors))
            return sa_fail(err, SA_EINVALID, "plan: nodes[%d] refers to %s %d, which does not exist: cannot replay", i,
                           op ? "op" : "tensor", nd->ref);
        if (nd->n_deps < 0 || nd->dep_off < 0 || (int64_t)nd->dep_off + nd->n_deps > p->n_deps)
            return sa_fail(err, SA_EINVALID, "plan: nodes[%d] has a dependency list out of range: cannot replay", i);
        for (int32_t k = 0; k < nd->n_deps; k++) {
            int32_t d = p->deps[nd->dep_off + k];
            if (d < 0 || d >= p->n_nodes || d == i)
                return sa_fail(err, SA_EINVALID, "plan: nodes[%d] depends on node %d, which %s: cannot replay", i, d,
                               d == i ? "is itself" : "does not exist");
        }
    }
    for (int32_t i = 0; i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        if (q->tensor < 0 || q->tensor >= g->n_tensors || q->begin < -1 || q->begin >= p->n_nodes || q->end < -1 ||
            q->end >= p->n_nodes)
            return sa_fail(err, SA_EINVALID, "plan: placement %d refers to a tensor or node that does not exist: "
                           "cannot replay", i);
        if (q->offset < 0 || q->offset > p->arena_bytes - g->tensors[q->tensor].bytes)
            return sa_fail(err, SA_EINVALID, "plan: placement %d of tensor %d (\"%s\") at offset %lld does not lie "
                           "inside the %lld-byte arena: cannot replay", i, q->tensor, g->tensors[q->tensor].name,
                           (long long)q->offset, (long long)p->arena_bytes);
    }
    for (int32_t i = 0; i < p->n_res; i++) {
        const sa_plan_resident *r = &p->res[i];
        if (r->tensor < 0 || r->tensor >= g->n_tensors)
            return sa_fail(err, SA_EINVALID, "plan: resident_at_start[%d] names tensor %d, which does not exist: "
                           "cannot replay", i, r->tensor);
        if (r->offset < 0 || r->offset > p->arena_bytes - g->tensors[r->tensor].bytes)
            return sa_fail(err, SA_EINVALID, "plan: resident_at_start[%d] (tensor %d) at offset %lld does not lie "
                           "inside the %lld-byte arena: cannot replay", i, r->tensor, (long long)r->offset,
                           (long long)p->arena_bytes);
    }
    return SA_OK;
}

int64_t sa_runner_host_footprint(const sa_plan *p, const sa_dfg_graph *g, int64_t scale)
{
    if (scale < 1 || check_ranges(p, g, NULL) != SA_OK)
        return -1;
    bounds b;
    bool *need = host_needs(p, g);
    if (!need || !bounds_build(p, g, &b)) {
        free(need);
        return -1;
    }
    int64_t f = footprint(p, g, &b, need, scale);
    free(b.x);
    free(need);
    return f;
}

sa_status sa_runner_auto_scale(const sa_plan *p, const sa_dfg_graph *g, int64_t cap, int64_t *scale, sa_err *err)
{
    sa_status st = check_ranges(p, g, err);
    if (st)
        return st;
    bounds b;
    bool *need = host_needs(p, g);
    if (!need || !bounds_build(p, g, &b)) {
        free(need);
        return sa_fail(err, SA_ENOMEM, "out of memory laying out the replay");
    }
    int64_t k = 1, f = footprint(p, g, &b, need, 1);
    /* Doubling from the ratio: the footprint shrinks about as 1/K until the
     * 8-byte floors dominate, so few steps are needed. */
    if (f > cap) {
        while (k < ((int64_t)1 << 50) && k < f / (cap > 0 ? cap : 1))
            k *= 2;
        while (k < ((int64_t)1 << 50) && (f = footprint(p, g, &b, need, k)) > cap)
            k *= 2;
    }
    free(b.x);
    free(need);
    if (f > cap)
        return sa_fail(err, SA_EINFEASIBLE, "the host replay needs %lld bytes even with sizes divided by %lld "
                       "(8 bytes at least per tensor), more than the cap of %lld", (long long)f, (long long)k,
                       (long long)cap);
    *scale = k;
    return SA_OK;
}

/* ------------------------------------------------------------ layout */


/* The placement of tensor t that node n uses: the one active when n starts
 * (begun by then, not ended before), latest begun first, as the validator's
 * event replay sees it: times first, and at equal times the topological rank
 * of the nodes (a zero-time node starts and ends at one instant, and the
 * nodes around it at that instant run in dependency order).  A forced plan
 * may have none active: then the latest begun before n, else the first; -1
 * only when t has no placement at all. */
static bool later(double b, int32_t rb, double x, int32_t rx) { return b > x || (b == x && rb > rx); }

static int32_t resolve(const sa_plan *p, const int32_t *poff, const int32_t *plist, int32_t t, int32_t n,
                       const double *ts, const double *te, const int32_t *rank, double makespan)
{
    int32_t best = -1, any_before = -1, best_r = -2, before_r = -2;
    double best_b = -1, before_b = -1;
    for (int32_t k = poff[t]; k < poff[t + 1]; k++) {
        const sa_plan_placement *q = &p->place[plist[k]];
        double b = q->begin < 0 ? 0 : ts[q->begin], e = q->end < 0 ? makespan : te[q->end];
        int32_t rb = q->begin < 0 ? -1 : rank[q->begin];
        if (q->begin != n && later(b, rb, ts[n], rank[n]))
            continue;
        if (!later(before_b, before_r, b, rb)) {
            before_b = b;
            before_r = rb;
            any_before = plist[k];
        }
        /* ended before n starts: earlier, or at that instant by a node that lasted
         * (its end precedes every start there) or a zero-time one ranked before n */
        bool ended = q->end >= 0 && q->end != n &&
                     (e < ts[n] || (e == ts[n] && (te[q->end] > ts[q->end] || rank[q->end] < rank[n])));
        if (!ended && !later(best_b, best_r, b, rb)) {
            best_b = b;
            best_r = rb;
            best = plist[k];
        }
    }
    if (best >= 0)
        return best;
    if (any_before >= 0)
        return any_before;
    return poff[t] < poff[t + 1] ? plist[poff[t]] : -1;
}

/* Scaled sizes, host copies (for the tensors need marks) and arena offsets. */
static void layout_addresses(sa_runner_layout *out, const sa_plan *p, const sa_dfg_graph *g, const bounds *b, const bool *need,
                             int64_t scale)
{
    for (int32_t t = 0; t < g->n_tensors; t++) {
        out->tbytes[t] = scaled_bytes(g->tensors[t].bytes, scale);
        out->host_off[t] = -1;
        if (need[t]) {
            out->host_off[t] = out->host_bytes;
            out->host_bytes += align_up(out->tbytes[t], HOST_ALIGN);
        }
    }
    out->arena_bytes = bounds_map(b, p->arena_bytes, scale);
    for (int32_t i = 0; i < p->n_place; i++)
        out->place_off[i] = bounds_map(b, p->place[i].offset, scale);
    for (int32_t i = 0; i < p->n_res; i++)
        out->res_off[i] = bounds_map(b, p->res[i].offset, scale);
}

/* Placements by tensor: plist[poff[t] .. poff[t + 1]) are t's, in plan order
 * (poff and pfill zeroed, nt + 2 and nt entries). */
static void index_placements(const sa_plan *p, int32_t nt, int32_t *poff, int32_t *plist, int32_t *pfill)
{
    for (int32_t i = 0; i < p->n_place; i++)
        poff[p->place[i].tensor + 1]++;
    for (int32_t t = 0; t < nt; t++)
        poff[t + 1] += poff[t];
    for (int32_t i = 0; i < p->n_place; i++) {
        int32_t t = p->place[i].tensor;
        plist[poff[t] + pfill[t]++] = i;
    }
}

/* Each node's tensors (out->use_off, out->use): the arena offset of the
 * placement it uses at its simulated start ts[n].  SA_EINVALID when a node
 * uses a tensor without a placement or there are too many uses, SA_ENOMEM. */
static sa_status layout_uses(sa_runner_layout *out, const sa_plan *p, const sa_dfg_graph *g, const int32_t *poff,
                             const int32_t *plist, const double *ts, const double *te, const int32_t *rank,
                             double makespan, sa_err *err)
{
    int64_t nuse = 0;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        out->use_off[i] = (int32_t)nuse;
        if (nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE)
            nuse += g->ops[nd->ref].n_in + g->ops[nd->ref].n_out;
        else
            nuse++;
        if (nuse > INT32_MAX)
            return sa_fail(err, SA_EINVALID, "plan: too many tensor uses to replay");
    }
    out->use = malloc(((size_t)nuse + 1) * sizeof *out->use);
    if (!out->use)
        return sa_fail(err, SA_ENOMEM, "out of memory laying out the replay");
    for (int32_t i = 0; i < p->n_nodes; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        int64_t *u = out->use + out->use_off[i];
        int32_t cnt = 1, tl[1] = {nd->ref};
        const int32_t *ins = tl, *outs = NULL;
        int32_t n_in = 1, n_out = 0;
        if (nd->kind == SA_PLAN_COMPUTE || nd->kind == SA_PLAN_RECOMPUTE) {
            const sa_dfg_op *o = &g->ops[nd->ref];
            ins = o->in;
            outs = o->out;
            n_in = o->n_in;
            n_out = o->n_out;
            cnt = n_in + n_out;
        }
        for (int32_t k = 0; k < cnt; k++) {
            int32_t t = k < n_in ? ins[k] : outs[k - n_in];
            int32_t q = resolve(p, poff, plist, t, i, ts, te, rank, makespan);
            if (q < 0)
                return sa_fail(err, SA_EINVALID, "plan: nodes[%d] (%s) uses tensor %d (\"%s\"), which has no "
                               "placement: cannot replay", i, sa_plan_kind_name(nd->kind), t, g->tensors[t].name);
            u[k] = out->place_off[q];
        }
    }
    return SA_OK;
}

sa_status sa_runner_layout_build(const sa_plan *p, const sa_dfg_graph *g, int64_t scale, sa_runner_layout *out, sa_err *err)
{
    memset(out, 0, sizeof *out);
    if (scale < 1)
        return sa_fail(err, SA_EUSAGE, "the byte scale must be >= 1, not %lld", (long long)scale);
    sa_status st = check_ranges(p, g, err);
    if (st)
        return st;
    int32_t n = p->n_nodes, nt = g->n_tensors;
    out->scale = scale;
    out->order = malloc(((size_t)n + 1) * sizeof *out->order);
    if (!out->order)
        return sa_fail(err, SA_ENOMEM, "out of memory laying out the replay");
    int32_t stuck = -1;
    if ((st = sa_plan_node_order(p, out->order, &stuck, err))) {
        sa_runner_layout_free(out);
        if (st == SA_EINVALID)
            sa_err_prefix(err, "plan: cannot replay");
        return st;
    }

    /* the simulated timing decides which placement a node uses, as in the validator */
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result r;
    bounds b = {NULL, 0};
    int32_t *poff = calloc((size_t)nt + 2, sizeof *poff), *plist = calloc((size_t)p->n_place + 1, sizeof *plist);
    int32_t *pfill = calloc((size_t)nt + 1, sizeof *pfill);
    int32_t *rank = calloc((size_t)n + 1, sizeof *rank);
    bool *need = host_needs(p, g);
    out->tbytes = calloc((size_t)nt + 1, sizeof *out->tbytes);
    out->host_off = calloc((size_t)nt + 1, sizeof *out->host_off);
    out->place_off = calloc((size_t)p->n_place + 1, sizeof *out->place_off);
    out->res_off = calloc((size_t)p->n_res + 1, sizeof *out->res_off);
    out->use_off = calloc((size_t)n + 1, sizeof *out->use_off);
    if (!ws || !poff || !plist || !pfill || !rank || !need || !out->tbytes || !out->host_off || !out->place_off ||
        !out->res_off || !out->use_off || !bounds_build(p, g, &b)) {
        st = sa_fail(err, SA_ENOMEM, "out of memory laying out the replay");
        goto done;
    }
    st = sa_sim_run(p, g, ws, &r, err);
    if (st)
        goto done;
    const double *ts = sa_sim_start(ws), *te = sa_sim_end(ws);
    for (int32_t i = 0; i < n; i++)
        rank[out->order[i]] = i; /* breaks ties of simulated times, as the validator does */

    layout_addresses(out, p, g, &b, need, scale);
    index_placements(p, nt, poff, plist, pfill);
    st = layout_uses(out, p, g, poff, plist, ts, te, rank, r.makespan_us, err);
done:
    sa_sim_ws_free(ws);
    free(b.x);
    free(poff);
    free(plist);
    free(pfill);
    free(rank);
    free(need);
    if (st)
        sa_runner_layout_free(out);
    return st;
}

/* ------------------------------------------------------------ dispatch */

sa_status sa_runner_run(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_opts *opts, sa_runner_report *rep, sa_err *err)
{
    sa_runner_opts o;
    if (opts)
        o = *opts;
    else
        sa_runner_opts_default(&o);
    if (o.iterations == 0)
        o.iterations = RUNNER_DEFAULT_ITER;
    if (o.cap_bytes == 0)
        o.cap_bytes = RUNNER_DEFAULT_CAP;
    if (o.max_violation_lines == 0)
        o.max_violation_lines = RUNNER_DEFAULT_LINES;
    if (o.iterations < 1 || o.iterations > 1000000)
        return sa_fail(err, SA_EUSAGE, "iterations must be 1..1000000, not %d", o.iterations);
    if (o.scale_bytes < 0 || o.cap_bytes < 0)
        return sa_fail(err, SA_EUSAGE, "the byte scale and the memory cap must not be negative");
    if (o.backend != SA_RUNNER_HOST && o.backend != SA_RUNNER_CUDA)
        return sa_fail(err, SA_EUSAGE, "unknown backend %d", (int)o.backend);
    if (o.backend == SA_RUNNER_CUDA && o.real_ops && o.scale_bytes > 1)
        return sa_fail(err, SA_EUSAGE, "real ops need the tensors' real sizes: do not scale bytes with them");

    sa_runner_report local;
    if (!rep)
        rep = &local;
    memset(rep, 0, sizeof *rep);
    rep->backend = o.backend;
    rep->violations.max_lines = o.max_violation_lines;
    rep->predicted_us = p->predicted.iteration_us;

    sa_err verr = {0};
    sa_status st = sa_plan_validate(p, g, true, &rep->violations, &verr);
    if (st == SA_OK) {
        rep->valid = true;
    } else if (st == SA_EINVALID && o.force) {
        rep->valid = false; /* replay anyway: the host backend shows what the defects do */
    } else {
        if (err)
            *err = verr;
        goto out;
    }

    int64_t k = o.scale_bytes;
    if (k == 0 && o.backend == SA_RUNNER_HOST) {
        st = sa_runner_auto_scale(p, g, o.cap_bytes, &k, err);
        if (st)
            goto out;
    } else if (k == 0) {
        k = 1;
    } else if (o.backend == SA_RUNNER_HOST) {
        /* an explicit K is honoured, but not past the cap: the reference run
         * alone needs every tensor's bytes at once */
        int64_t need = sa_runner_host_footprint(p, g, k);
        if (need > o.cap_bytes) {
            st = sa_fail(err, SA_EINFEASIBLE, "the host replay needs %lld bytes with sizes divided by %lld, more than "
                         "the cap of %lld (raise the cap or the byte scale)", (long long)need, (long long)k,
                         (long long)o.cap_bytes);
            goto out;
        }
    }
    sa_runner_layout l;
    st = sa_runner_layout_build(p, g, k, &l, err);
    if (st)
        goto out;
    rep->iterations = o.iterations;
    rep->scale = k;
    rep->arena_bytes = l.arena_bytes;
    rep->host_bytes = l.host_bytes;
    for (int32_t i = 0; i < p->n_nodes; i++) {
        /* a transfer's ref is a tensor (a compute node's is an op) */
        sa_plan_kind kd = p->nodes[i].kind;
        if (kd != SA_PLAN_SWAP_IN && kd != SA_PLAN_SWAP_OUT)
            continue;
        int64_t b = g->tensors[p->nodes[i].ref].bytes, s = l.tbytes[p->nodes[i].ref];
        if (kd == SA_PLAN_SWAP_IN) {
            rep->plan_h2d_bytes = sa_add_sat(rep->plan_h2d_bytes, b);
            rep->h2d_bytes = sa_add_sat(rep->h2d_bytes, s);
        } else {
            rep->plan_d2h_bytes = sa_add_sat(rep->plan_d2h_bytes, b);
            rep->d2h_bytes = sa_add_sat(rep->d2h_bytes, s);
        }
    }
    rep->iter_us = calloc((size_t)o.iterations, sizeof *rep->iter_us);
    if (!rep->iter_us)
        st = sa_fail(err, SA_ENOMEM, "out of memory");
    else if (o.backend == SA_RUNNER_HOST)
        st = sa_runner_host_replay(p, g, &l, &o, rep, err);
    else
        st = sa_runner_cuda_replay(p, g, &l, &o, rep, err);
    sa_runner_layout_free(&l);
out:
    if (rep == &local)
        sa_runner_report_free(&local);
    return st;
}
