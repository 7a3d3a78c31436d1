/* dfg.c - graph model: building, validation (docs/formats.md section 1) and derived data. */
#include "swapadvisor/dfg.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[SA_DFG_KIND_COUNT] = {
    "param", "state", "input", "activation", "gradient", "workspace"};
static const char *const phase_names[SA_DFG_PHASE_COUNT] = {"forward", "backward", "update"};

const char *sa_dfg_kind_name(sa_dfg_kind k) { return (unsigned)k < SA_DFG_KIND_COUNT ? kind_names[k] : "?"; }
const char *sa_dfg_phase_name(sa_dfg_phase p) { return (unsigned)p < SA_DFG_PHASE_COUNT ? phase_names[p] : "?"; }

bool sa_dfg_kind_from_name(const char *s, sa_dfg_kind *out)
{
    for (int i = 0; i < SA_DFG_KIND_COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (sa_dfg_kind)i;
            return true;
        }
    return false;
}

bool sa_dfg_phase_from_name(const char *s, sa_dfg_phase *out)
{
    for (int i = 0; i < SA_DFG_PHASE_COUNT; i++)
        if (strcmp(s, phase_names[i]) == 0) {
            *out = (sa_dfg_phase)i;
            return true;
        }
    return false;
}

sa_dfg_graph *sa_dfg_new(const char *name)
{
    sa_dfg_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = sa_strdup(name ? name : "graph");
    g->batch = -1;
    if (!g->name) {
        free(g);
        return NULL;
    }
    return g;
}

/* Grows *arr (of elem bytes each) so that index n fits; doubles the capacity. */
static bool grow(void **arr, int32_t *cap, int32_t n, size_t elem)
{
    if (n < *cap)
        return true;
    int32_t nc = *cap ? *cap * 2 : 64;
    while (nc <= n)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return false;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *arr = p;
    *cap = nc;
    return true;
}

int32_t sa_dfg_add_tensor(sa_dfg_graph *g, const char *name, sa_dfg_kind kind, int64_t bytes)
{
    if (!grow((void **)&g->tensors, &g->capacity_tensors, g->n_tensors, sizeof *g->tensors))
        return -1;
    sa_dfg_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = sa_strdup(name ? name : "");
    if (!t->name)
        return -1;
    t->kind = kind;
    t->bytes = bytes;
    t->producer = t->updater = -1;
    g->finalized = false;
    return g->n_tensors++;
}

bool sa_dfg_set_shape(sa_dfg_graph *g, int32_t tensor, int32_t ndim, const int64_t *shape, const char *dtype)
{
    sa_dfg_tensor *t = &g->tensors[tensor];
    free(t->shape);
    free(t->dtype);
    t->shape = NULL;
    t->dtype = NULL;
    t->ndim = 0;
    if (ndim > 0) {
        t->shape = malloc((size_t)ndim * sizeof *t->shape);
        if (!t->shape)
            return false;
        memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
        t->ndim = ndim;
    }
    if (dtype && !(t->dtype = sa_strdup(dtype)))
        return false;
    return true;
}

static int32_t *dup_ids(const int32_t *ids, int32_t n)
{
    int32_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (p && n > 0)
        memcpy(p, ids, (size_t)n * sizeof *p);
    return p;
}

int32_t sa_dfg_add_op(sa_dfg_graph *g, const char *name, const char *type, sa_dfg_phase phase,
                   const int32_t *in, int32_t n_in, const int32_t *out, int32_t n_out)
{
    if (!grow((void **)&g->ops, &g->capacity_ops, g->n_ops, sizeof *g->ops))
        return -1;
    sa_dfg_op *o = &g->ops[g->n_ops];
    memset(o, 0, sizeof *o);
    o->name = sa_strdup(name ? name : "");
    o->type = sa_strdup(type ? type : "op");
    o->in = dup_ids(in, n_in);
    o->out = dup_ids(out, n_out);
    if (!o->name || !o->type || !o->in || !o->out)
        return -1;
    o->phase = phase;
    o->n_in = n_in;
    o->n_out = n_out;
    o->flops = o->bytes_accessed = o->time_us = -1.0;
    g->finalized = false;
    return g->n_ops++;
}

bool sa_dfg_add_control(sa_dfg_graph *g, int32_t before, int32_t after)
{
    if (!grow((void **)&g->control, &g->capacity_control, g->n_control, sizeof *g->control))
        return false;
    g->control[g->n_control][0] = before;
    g->control[g->n_control][1] = after;
    g->n_control++;
    g->finalized = false;
    return true;
}

static void free_derived(sa_dfg_graph *g)
{
    free(g->readers);
    free(g->pred_off);
    free(g->pred);
    free(g->succ_off);
    free(g->succ);
    free(g->topo);
    free(g->sizes);
    g->readers = g->pred_off = g->pred = g->succ_off = g->succ = g->topo = NULL;
    g->sizes = NULL;
    for (int32_t i = 0; i < g->n_ops; i++) {
        free(g->ops[i].use);
        g->ops[i].use = NULL;
        g->ops[i].n_use = 0;
    }
    g->finalized = false;
}

void sa_dfg_free(sa_dfg_graph *g)
{
    if (!g)
        return;
    free_derived(g);
    for (int32_t i = 0; i < g->n_tensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].dtype);
        free(g->tensors[i].shape);
        free(g->tensors[i].extra_json);
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        free(g->ops[i].name);
        free(g->ops[i].type);
        free(g->ops[i].in);
        free(g->ops[i].out);
        free(g->ops[i].extra_json);
    }
    free(g->tensors);
    free(g->ops);
    free(g->control);
    free(g->name);
    free(g->extra_json);
    free(g);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Describes op i for messages: ops[i] ("name"). */
#define OPF "ops[%d] (\"%s\")"
#define TF "tensors[%d] (\"%s\")"

/* Per-op checks of ids and write rules; fills producer/updater. */
static sa_status check_ops(sa_dfg_graph *g, const char *src, sa_err *err)
{
    for (int32_t i = 0; i < g->n_tensors; i++) {
        sa_dfg_tensor *t = &g->tensors[i];
        if (t->bytes <= 0 || (double)t->bytes > SA_DFG_MAX_EXACT_INT)
            return sa_fail(err, SA_EFORMAT, "%s: " TF ": bytes must be a positive integer up to 2^53, got %lld",
                           src, i, t->name, (long long)t->bytes);
        t->producer = t->updater = -1;
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        sa_dfg_op *o = &g->ops[i];
        for (int32_t k = 0; k < o->n_in; k++) {
            int32_t t = o->in[k];
            if (t < 0 || t >= g->n_tensors)
                return sa_fail(err, SA_EFORMAT, "%s: " OPF ": input %d is not a tensor id (0..%d)", src, i,
                               o->name, t, g->n_tensors - 1);
            for (int32_t j = 0; j < k; j++)
                if (o->in[j] == t)
                    return sa_fail(err, SA_EFORMAT, "%s: " OPF ": lists tensor %d twice in inputs", src, i, o->name, t);
            if (g->tensors[t].kind == SA_DFG_WORKSPACE)
                return sa_fail(err, SA_EFORMAT, "%s: " OPF ": reads workspace " TF ", which nobody may read", src, i,
                               o->name, t, g->tensors[t].name);
        }
        for (int32_t k = 0; k < o->n_out; k++) {
            int32_t t = o->out[k];
            if (t < 0 || t >= g->n_tensors)
                return sa_fail(err, SA_EFORMAT, "%s: " OPF ": output %d is not a tensor id (0..%d)", src, i,
                               o->name, t, g->n_tensors - 1);
            for (int32_t j = 0; j < k; j++)
                if (o->out[j] == t)
                    return sa_fail(err, SA_EFORMAT, "%s: " OPF ": lists tensor %d twice in outputs", src, i, o->name, t);
            sa_dfg_tensor *tt = &g->tensors[t];
            bool also_read = false;
            for (int32_t j = 0; j < o->n_in; j++)
                also_read |= o->in[j] == t;
            if (tt->kind == SA_DFG_INPUT)
                return sa_fail(err, SA_EFORMAT, "%s: " OPF ": writes input " TF "; inputs are never written", src, i,
                               o->name, t, tt->name);
            if (sa_dfg_kind_persistent(tt->kind)) {
                if (!also_read)
                    return sa_fail(err, SA_EFORMAT,
                                   "%s: " OPF ": out-of-place write to persistent " TF " (list it in inputs too)", src,
                                   i, o->name, t, tt->name);
                if (tt->updater >= 0)
                    return sa_fail(err, SA_EFORMAT, "%s: " TF ": updated in place by two ops (%d and %d)", src, t,
                                   tt->name, tt->updater, i);
                tt->updater = i;
            } else {
                if (also_read)
                    return sa_fail(err, SA_EFORMAT, "%s: " OPF ": reads %s " TF " before it is written", src, i,
                                   o->name, sa_dfg_kind_name(tt->kind), t, tt->name);
                if (tt->producer >= 0)
                    return sa_fail(err, SA_EFORMAT, "%s: " TF ": has two producers (ops %d and %d)", src, t, tt->name,
                                   tt->producer, i);
                tt->producer = i;
            }
        }
    }
    for (int32_t i = 0; i < g->n_tensors; i++) {
        sa_dfg_tensor *t = &g->tensors[i];
        if ((t->kind == SA_DFG_ACTIVATION || t->kind == SA_DFG_GRADIENT || t->kind == SA_DFG_WORKSPACE) && t->producer < 0)
            return sa_fail(err, SA_EFORMAT, "%s: " TF ": %s has no producer", src, i, t->name, sa_dfg_kind_name(t->kind));
    }
    for (int32_t i = 0; i < g->n_control; i++) {
        int32_t a = g->control[i][0], b = g->control[i][1];
        if (a < 0 || a >= g->n_ops || b < 0 || b >= g->n_ops)
            return sa_fail(err, SA_EFORMAT, "%s: control_deps[%d]: [%d, %d] names an op that does not exist (0..%d)",
                           src, i, a, b, g->n_ops - 1);
        if (a == b)
            return sa_fail(err, SA_EFORMAT, "%s: control_deps[%d]: op %d depends on itself", src, i, a);
    }
    return SA_OK;
}

/* Reader lists, use sets, sizes. */
static sa_status derive_tensors(sa_dfg_graph *g, sa_err *err)
{
    int64_t total_in = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        g->tensors[i].n_readers = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        total_in += g->ops[i].n_in;
        for (int32_t k = 0; k < g->ops[i].n_in; k++)
            g->tensors[g->ops[i].in[k]].n_readers++;
    }
    g->readers = sa_calloc((size_t)total_in, sizeof *g->readers);
    g->sizes = sa_calloc((size_t)g->n_tensors, sizeof *g->sizes);
    if (!g->readers || !g->sizes)
        return sa_fail(err, SA_ENOMEM, "out of memory deriving graph data");
    int32_t off = 0;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        g->tensors[i].reader_off = off;
        off += g->tensors[i].n_readers;
        g->tensors[i].n_readers = 0;
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        sa_dfg_op *o = &g->ops[i];
        for (int32_t k = 0; k < o->n_in; k++) {
            sa_dfg_tensor *t = &g->tensors[o->in[k]];
            g->readers[t->reader_off + t->n_readers++] = i;
        }
        o->use = sa_calloc((size_t)(o->n_in + o->n_out), sizeof *o->use);
        if (!o->use)
            return sa_fail(err, SA_ENOMEM, "out of memory deriving graph data");
        o->n_use = 0;
        for (int32_t k = 0; k < o->n_in; k++)
            o->use[o->n_use++] = o->in[k];
        for (int32_t k = 0; k < o->n_out; k++) {
            bool dup = false;
            for (int32_t j = 0; j < o->n_in; j++)
                dup |= o->in[j] == o->out[k];
            if (!dup)
                o->use[o->n_use++] = o->out[k];
        }
    }
    for (int32_t i = 0; i < g->n_tensors; i++)
        g->sizes[i] = g->tensors[i].bytes;
    qsort(g->sizes, (size_t)g->n_tensors, sizeof *g->sizes, cmp_i64);
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (n == 0 || g->sizes[n - 1] != g->sizes[i])
            g->sizes[n++] = g->sizes[i];
    g->n_sizes = n;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        int64_t *p = bsearch(&g->tensors[i].bytes, g->sizes, (size_t)n, sizeof *g->sizes, cmp_i64);
        g->tensors[i].size_idx = (int32_t)(p - g->sizes);
    }
    return SA_OK;
}

/* Builds pred/succ CSR from the implied edges, deduplicated. */
static sa_status derive_edges(sa_dfg_graph *g, sa_err *err)
{
    /* Count edges generously first, then fill, sort and dedupe per op. */
    int64_t m = g->n_control;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *o = &g->ops[i];
        m += o->n_in; /* producer -> o, or o -> updater */
    }
    int32_t(*e)[2] = sa_calloc((size_t)m, sizeof *e);
    if (!e)
        return sa_fail(err, SA_ENOMEM, "out of memory building edges");
    int64_t ne = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *o = &g->ops[i];
        for (int32_t k = 0; k < o->n_in; k++) {
            const sa_dfg_tensor *t = &g->tensors[o->in[k]];
            if (sa_dfg_kind_persistent(t->kind)) {
                if (t->updater >= 0 && t->updater != i) {
                    e[ne][0] = i;
                    e[ne][1] = t->updater;
                    ne++;
                }
            } else if (t->producer >= 0) {
                e[ne][0] = t->producer;
                e[ne][1] = i;
                ne++;
            }
        }
    }
    for (int32_t i = 0; i < g->n_control; i++) {
        e[ne][0] = g->control[i][0];
        e[ne][1] = g->control[i][1];
        ne++;
    }
    g->succ_off = sa_calloc((size_t)g->n_ops + 1, sizeof(int32_t));
    g->pred_off = sa_calloc((size_t)g->n_ops + 1, sizeof(int32_t));
    g->succ = sa_calloc((size_t)ne, sizeof(int32_t));
    g->pred = sa_calloc((size_t)ne, sizeof(int32_t));
    int32_t *fill = sa_calloc((size_t)g->n_ops + 1, sizeof(int32_t));
    if (!g->succ_off || !g->pred_off || !g->succ || !g->pred || !fill) {
        free(e);
        free(fill);
        return sa_fail(err, SA_ENOMEM, "out of memory building edges");
    }
    for (int pass = 0; pass < 2; pass++) {
        int32_t *off = pass ? g->pred_off : g->succ_off, *lst = pass ? g->pred : g->succ;
        memset(off, 0, ((size_t)g->n_ops + 1) * sizeof *off);
        for (int64_t k = 0; k < ne; k++)
            off[e[k][pass] + 1]++;
        for (int32_t i = 0; i < g->n_ops; i++)
            off[i + 1] += off[i];
        memcpy(fill, off, ((size_t)g->n_ops + 1) * sizeof *fill);
        for (int64_t k = 0; k < ne; k++)
            lst[fill[e[k][pass]]++] = e[k][1 - pass];
        /* sort + dedupe each list, compacting in place */
        int32_t w = 0;
        for (int32_t i = 0; i < g->n_ops; i++) {
            int32_t b = off[i], en = off[i + 1];
            qsort(lst + b, (size_t)(en - b), sizeof *lst, cmp_i32);
            off[i] = w;
            for (int32_t k = b; k < en; k++)
                if (k == b || lst[k] != lst[k - 1])
                    lst[w++] = lst[k];
        }
        off[g->n_ops] = w;
    }
    free(e);
    free(fill);
    return SA_OK;
}

/* Kahn's algorithm with a min-heap on op id: the default schedule. */
static sa_status derive_topo(sa_dfg_graph *g, const char *src, sa_err *err)
{
    int32_t n = g->n_ops;
    int32_t *indeg = sa_calloc((size_t)n, sizeof *indeg);
    int32_t *heap = sa_calloc((size_t)n, sizeof *heap);
    g->topo = sa_calloc((size_t)n, sizeof *g->topo);
    if (!indeg || !heap || !g->topo) {
        free(indeg);
        free(heap);
        return sa_fail(err, SA_ENOMEM, "out of memory ordering the graph");
    }
    int32_t hn = 0, done = 0;
    for (int32_t i = 0; i < n; i++)
        indeg[i] = g->pred_off[i + 1] - g->pred_off[i];
    for (int32_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap[hn++] = i; /* ascending ids already form a heap */
    while (hn > 0) {
        int32_t v = heap[0];
        heap[0] = heap[--hn];
        for (int32_t i = 0;;) { /* sift down */
            int32_t l = 2 * i + 1, r = l + 1, m = i;
            if (l < hn && heap[l] < heap[m]) m = l;
            if (r < hn && heap[r] < heap[m]) m = r;
            if (m == i) break;
            int32_t tmp = heap[i]; heap[i] = heap[m]; heap[m] = tmp;
            i = m;
        }
        g->topo[done++] = v;
        for (int32_t k = g->succ_off[v]; k < g->succ_off[v + 1]; k++) {
            int32_t s = g->succ[k];
            if (--indeg[s] == 0) {
                int32_t i = hn++;
                heap[i] = s;
                while (i > 0 && heap[(i - 1) / 2] > heap[i]) { /* sift up */
                    int32_t p = (i - 1) / 2, tmp = heap[i];
                    heap[i] = heap[p]; heap[p] = tmp;
                    i = p;
                }
            }
        }
    }
    sa_status st = SA_OK;
    if (done < n) {
        int32_t bad = 0;
        for (int32_t i = 0; i < n; i++)
            if (indeg[i] > 0) { bad = i; break; }
        st = sa_fail(err, SA_EFORMAT, "%s: " OPF ": lies on a cycle (%d of %d ops cannot be ordered)", src, bad,
                     g->ops[bad].name, n - done, n);
    }
    free(indeg);
    free(heap);
    return st;
}

sa_status sa_dfg_finalize(sa_dfg_graph *g, const char *source, sa_err *err)
{
    const char *src = source ? source : g->name;
    if (g->finalized)
        return SA_OK;
    free_derived(g);
    sa_status st = check_ops(g, src, err);
    if (st == SA_OK)
        st = derive_tensors(g, err);
    if (st == SA_OK)
        st = derive_edges(g, err);
    if (st == SA_OK)
        st = derive_topo(g, src, err);
    if (st != SA_OK) {
        free_derived(g);
        return st;
    }
    g->finalized = true;
    return SA_OK;
}

int64_t sa_dfg_total_bytes(const sa_dfg_graph *g)
{
    int64_t s = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        s = sa_add_sat(s, g->tensors[i].bytes);
    return s;
}

int64_t sa_dfg_persistent_bytes(const sa_dfg_graph *g)
{
    int64_t s = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (sa_dfg_kind_persistent(g->tensors[i].kind))
            s = sa_add_sat(s, g->tensors[i].bytes);
    return s;
}

double sa_dfg_total_time_us(const sa_dfg_graph *g)
{
    double s = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].time_us > 0)
            s += g->ops[i].time_us;
    return s;
}

int64_t sa_dfg_param_count_elems(const sa_dfg_graph *g, int64_t elem_bytes)
{
    int64_t s = 0;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].kind == SA_DFG_PARAM)
            s = sa_add_sat(s, g->tensors[i].bytes);
    return elem_bytes > 0 ? s / elem_bytes : s;
}

int64_t sa_dfg_max_op_bytes(const sa_dfg_graph *g, int32_t *op_out)
{
    int64_t best = 0;
    int32_t arg = -1;
    for (int32_t i = 0; i < g->n_ops; i++) {
        int64_t s = 0;
        for (int32_t k = 0; k < g->ops[i].n_use; k++)
            s = sa_add_sat(s, g->tensors[g->ops[i].use[k]].bytes);
        if (s > best) {
            best = s;
            arg = i;
        }
    }
    if (op_out)
        *op_out = arg;
    return best;
}

bool sa_dfg_tensor_span(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t *first, int32_t *last)
{
    const sa_dfg_tensor *tt = &g->tensors[t];
    if (sa_dfg_kind_persistent(tt->kind))
        return false;
    int32_t f = tt->producer >= 0 ? pos[tt->producer] : INT32_MAX, l = tt->producer >= 0 ? f : -1;
    for (int32_t k = 0; k < tt->n_readers; k++) {
        int32_t q = pos[g->readers[tt->reader_off + k]];
        if (q < f) f = q;
        if (q > l) l = q;
    }
    if (l < 0)
        return false; /* an input nobody reads */
    *first = f;
    *last = l;
    return true;
}

int64_t sa_dfg_peak_bytes(const sa_dfg_graph *g, const int32_t *schedule)
{
    const int32_t *sch = schedule ? schedule : g->topo;
    int32_t n = g->n_ops;
    /* every partial sum below is at most the total: exact unless that overflows */
    if (sa_dfg_total_bytes(g) == INT64_MAX)
        return INT64_MAX;
    int32_t *pos = sa_calloc((size_t)n, sizeof *pos);
    int64_t *delta = sa_calloc((size_t)n + 1, sizeof *delta);
    if (!pos || !delta) {
        free(pos);
        free(delta);
        return -1;
    }
    for (int32_t i = 0; i < n; i++)
        pos[sch[i]] = i;
    int64_t base = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t first, last;
        if (sa_dfg_kind_persistent(g->tensors[t].kind))
            base += g->tensors[t].bytes;
        else if (sa_dfg_tensor_span(g, pos, t, &first, &last)) {
            delta[first] += g->tensors[t].bytes;
            delta[last + 1] -= g->tensors[t].bytes;
        }
    }
    int64_t cur = base, peak = base;
    for (int32_t i = 0; i < n; i++) {
        cur += delta[i];
        if (cur > peak)
            peak = cur;
    }
    free(pos);
    free(delta);
    return peak;
}

bool sa_dfg_is_topological(const sa_dfg_graph *g, const int32_t *schedule)
{
    int32_t n = g->n_ops;
    int32_t *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos);
    if (!pos)
        return false;
    for (int32_t i = 0; i < n; i++)
        pos[i] = -1;
    bool ok = true;
    for (int32_t i = 0; i < n && ok; i++) {
        int32_t v = schedule[i];
        if (v < 0 || v >= n || pos[v] >= 0)
            ok = false;
        else
            pos[v] = i;
    }
    for (int32_t v = 0; v < n && ok; v++)
        for (int32_t k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (pos[g->succ[k]] <= pos[v])
                ok = false;
    free(pos);
    return ok;
}
