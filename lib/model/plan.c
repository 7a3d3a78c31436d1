/* plan.c - swapplan v1 documents <-> plan (docs/formats.md section 3). */
#include "swapadvisor/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "swapadvisor/sa_io.h"

static const char *const kind_names[SA_PLAN_KIND_COUNT] = {"compute", "swap_in", "swap_out", "recompute"};
static const char *const stream_names[SA_PLAN_STREAM_COUNT] = {"compute", "h2d", "d2h"};
static const char *const plan_known[] = {"format", "version", "graph", "device", "arena_bytes", "schedule", "nodes",
                                         "placements", "resident_at_start", "predicted", "search", NULL};

const char *sa_plan_kind_name(sa_plan_kind k) { return (unsigned)k < SA_PLAN_KIND_COUNT ? kind_names[k] : "?"; }
const char *sa_plan_stream_name(sa_plan_stream s) { return (unsigned)s < SA_PLAN_STREAM_COUNT ? stream_names[s] : "?"; }

bool sa_plan_kind_from_name(const char *s, sa_plan_kind *out)
{
    for (int i = 0; i < SA_PLAN_KIND_COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (sa_plan_kind)i;
            return true;
        }
    return false;
}

sa_plan *sa_plan_new(const sa_dfg_graph *g, const sa_dfg_device *dev)
{
    sa_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->graph_name = sa_strdup(g ? g->name : "graph");
    if (!p->graph_name) {
        free(p);
        return NULL;
    }
    if (g) {
        p->graph_ops = g->n_ops;
        p->graph_tensors = g->n_tensors;
    }
    if (dev)
        p->device = *dev;
    return p;
}

void sa_plan_free(sa_plan *p)
{
    if (!p)
        return;
    free(p->graph_name);
    free(p->schedule);
    free(p->nodes);
    free(p->deps);
    free(p->place);
    free(p->res);
    free(p->search_json);
    free(p->extra_json);
    free(p);
}

void sa_plan_reset(sa_plan *p)
{
    p->n_nodes = p->n_deps = p->n_place = p->n_res = 0;
    p->arena_bytes = 0;
    memset(&p->predicted, 0, sizeof p->predicted);
}

/* The growing half of reserve, out of line: the planners add nodes and
 * placements in their inner loops, where there is almost always room. */
static __attribute__((noinline)) bool grow_to(void **arr, int32_t *cap, int32_t need, size_t elem)
{
    int32_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*arr, (size_t)nc * elem);
    if (!q)
        return false;
    *arr = q;
    *cap = nc;
    return true;
}

static inline bool reserve(void **arr, int32_t *cap, int32_t need, size_t elem)
{
    return need <= *cap || grow_to(arr, cap, need, elem);
}

int32_t sa_plan_add_node(sa_plan *p, sa_plan_kind kind, int32_t ref, const int32_t *deps, int32_t n_deps)
{
    if (!reserve((void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes) ||
        !reserve((void **)&p->deps, &p->cap_deps, p->n_deps + n_deps, sizeof *p->deps))
        return -1;
    sa_plan_node *n = &p->nodes[p->n_nodes];
    n->kind = kind;
    n->ref = ref;
    n->dep_off = p->n_deps;
    n->n_deps = n_deps;
    if (n_deps > 0)
        memcpy(p->deps + p->n_deps, deps, (size_t)n_deps * sizeof *deps);
    p->n_deps += n_deps;
    return p->n_nodes++;
}

bool sa_plan_add_dep_to_last(sa_plan *p, int32_t dep)
{
    if (p->n_nodes == 0 || !reserve((void **)&p->deps, &p->cap_deps, p->n_deps + 1, sizeof *p->deps))
        return false;
    p->deps[p->n_deps++] = dep;
    p->nodes[p->n_nodes - 1].n_deps++;
    return true;
}

bool sa_plan_add_placement(sa_plan *p, int32_t tensor, int64_t offset, int32_t begin, int32_t end)
{
    if (!reserve((void **)&p->place, &p->cap_place, p->n_place + 1, sizeof *p->place))
        return false;
    p->place[p->n_place++] = (sa_plan_placement){tensor, offset, begin, end};
    return true;
}

bool sa_plan_add_resident(sa_plan *p, int32_t tensor, int64_t offset)
{
    if (!reserve((void **)&p->res, &p->cap_res, p->n_res + 1, sizeof *p->res))
        return false;
    p->res[p->n_res++] = (sa_plan_resident){tensor, offset};
    return true;
}

bool sa_plan_set_schedule(sa_plan *p, const int32_t *schedule, int32_t n)
{
    int32_t *s = sa_calloc((size_t)n, sizeof *s);
    if (!s)
        return false;
    if (n > 0)
        memcpy(s, schedule, (size_t)n * sizeof *s);
    free(p->schedule);
    p->schedule = s;
    p->n_schedule = n;
    return true;
}

bool sa_plan_set_search_json(sa_plan *p, const char *json)
{
    char *s = json ? sa_strdup(json) : NULL;
    if (json && !s)
        return false;
    free(p->search_json);
    p->search_json = s;
    return true;
}

sa_status sa_plan_node_order(const sa_plan *p, int32_t *order, int32_t *stuck, sa_err *err)
{
    int32_t n = p->n_nodes;
    int32_t *indeg = calloc((size_t)n + 1, sizeof *indeg), *snext = calloc((size_t)n + 1, sizeof *snext);
    int32_t *roff = calloc((size_t)n + 2, sizeof *roff), *radj = calloc((size_t)p->n_deps + 1, sizeof *radj);
    int32_t *fill = calloc((size_t)n + 1, sizeof *fill);
    sa_status st = SA_OK;
    *stuck = -1;
    if (!indeg || !snext || !roff || !radj || !fill) {
        st = sa_fail(err, SA_ENOMEM, "out of memory ordering %d plan nodes", n);
        goto done;
    }
    int32_t last[SA_PLAN_STREAM_COUNT] = {-1, -1, -1};
    for (int32_t i = 0; i < n; i++) {
        sa_plan_stream s = sa_plan_kind_stream(p->nodes[i].kind);
        snext[i] = -1;
        if (last[s] >= 0) {
            snext[last[s]] = i;
            indeg[i]++;
        }
        last[s] = i;
        for (int32_t k = 0; k < p->nodes[i].n_deps; k++) {
            roff[p->deps[p->nodes[i].dep_off + k] + 1]++;
            indeg[i]++;
        }
    }
    for (int32_t i = 0; i < n; i++)
        roff[i + 1] += roff[i];
    for (int32_t i = 0; i < n; i++)
        for (int32_t k = 0; k < p->nodes[i].n_deps; k++) {
            int32_t d = p->deps[p->nodes[i].dep_off + k];
            radj[roff[d] + fill[d]++] = i;
        }
    int32_t head = 0, tail = 0;
    for (int32_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        int32_t a = order[head++];
        for (int32_t k = -1; k < roff[a + 1] - roff[a]; k++) {
            int32_t b = k < 0 ? snext[a] : radj[roff[a] + k];
            if (b >= 0 && --indeg[b] == 0)
                order[tail++] = b;
        }
    }
    if (tail < n) {
        for (int32_t i = 0; i < n && *stuck < 0; i++)
            if (indeg[i] > 0)
                *stuck = i;
        st = sa_fail(err, SA_EINVALID, "nodes[%d] (%s) is on a dependency cycle (stream order + deps): the streams "
                     "would deadlock", *stuck, sa_plan_kind_name(p->nodes[*stuck].kind));
    }
done:
    free(indeg);
    free(snext);
    free(roff);
    free(radj);
    free(fill);
    return st;
}

/* ---- parsing ---- */

static sa_status parse_nodes(sa_plan *p, const cJSON *nodes, const char *src, sa_err *err)
{
    int n = cJSON_GetArraySize(nodes), i = 0;
    for (const cJSON *e = nodes->child; e; e = e->next, i++) {
        ju_where w = {src, "nodes", i};
        int64_t id = -1, ref = -1;
        const char *kind = NULL;
        const cJSON *deps = NULL;
        sa_status st;
        if (!cJSON_IsObject(e))
            return ju_fail(err, SA_EFORMAT, w, "must be an object");
        if ((st = ju_int(e, "id", 0, true, &id, w, err)) || (st = ju_str(e, "kind", true, &kind, w, err)) ||
            (st = ju_arr(e, "deps", true, &deps, w, err)))
            return st;
        if (id != i)
            return ju_fail(err, SA_EFORMAT, w, "id %lld must equal its index %d", (long long)id, i);
        sa_plan_kind k;
        if (!sa_plan_kind_from_name(kind, &k))
            return ju_fail(err, SA_EFORMAT, w, "unknown kind \"%s\" (compute, swap_in, swap_out, recompute)", kind);
        const char *refkey = (k == SA_PLAN_COMPUTE || k == SA_PLAN_RECOMPUTE) ? "op" : "tensor";
        int32_t limit = (k == SA_PLAN_COMPUTE || k == SA_PLAN_RECOMPUTE) ? p->graph_ops : p->graph_tensors;
        if ((st = ju_int(e, refkey, 0, true, &ref, w, err)))
            return st;
        if (ref >= limit)
            return ju_fail(err, SA_EFORMAT, w, "%s %lld does not exist (graph has %d)", refkey, (long long)ref, limit);
        int32_t *d = NULL, nd = 0;
        if ((st = ju_id_list(deps, "deps", n - 1, &d, &nd, w, err)))
            return st;
        int32_t nid = sa_plan_add_node(p, k, (int32_t)ref, d, nd);
        free(d);
        if (nid < 0)
            return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    return SA_OK;
}

static sa_status parse_placements(sa_plan *p, const cJSON *arr, const char *src, sa_err *err)
{
    int i = 0;
    for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next, i++) {
        ju_where w = {src, "placements", i};
        int64_t t = -1, off = -1, b = -1, en = -1;
        sa_status st;
        if (!cJSON_IsObject(e))
            return ju_fail(err, SA_EFORMAT, w, "must be an object");
        if ((st = ju_int(e, "tensor", 0, true, &t, w, err)) || (st = ju_int(e, "offset", 0, true, &off, w, err)) ||
            (st = ju_int(e, "begin", -1, true, &b, w, err)) || (st = ju_int(e, "end", -1, true, &en, w, err)))
            return st;
        if (t >= p->graph_tensors)
            return ju_fail(err, SA_EFORMAT, w, "tensor %lld does not exist", (long long)t);
        if (b >= p->n_nodes || en >= p->n_nodes)
            return ju_fail(err, SA_EFORMAT, w, "begin/end %lld/%lld name nodes that do not exist (0..%d)",
                           (long long)b, (long long)en, p->n_nodes - 1);
        if (!sa_plan_add_placement(p, (int32_t)t, off, (int32_t)b, (int32_t)en))
            return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    return SA_OK;
}

static sa_status parse_plan(const cJSON *root, const char *src, sa_plan *p, sa_err *err)
{
    ju_where top = {src, NULL, 0};
    sa_status st;
    const cJSON *gr, *dev, *sched, *nodes, *pl, *res, *pred;
    if ((st = ju_header(root, "swapplan", SA_PLAN_FORMAT_VERSION, src, err)))
        return st;
    gr = cJSON_GetObjectItemCaseSensitive(root, "graph");
    if (!cJSON_IsObject(gr))
        return sa_fail(err, SA_EFORMAT, "%s: missing object \"graph\" {name, ops, tensors}", src);
    char where[512];
    snprintf(where, sizeof where, "%s: graph", src);
    ju_where wg = {where, NULL, 0};
    const char *name = "graph";
    int64_t nops = 0, nt = 0, arena = 0;
    if ((st = ju_str(gr, "name", false, &name, wg, err)) || (st = ju_int(gr, "ops", 0, true, &nops, wg, err)) ||
        (st = ju_int(gr, "tensors", 0, true, &nt, wg, err)))
        return st;
    free(p->graph_name);
    if (!(p->graph_name = sa_strdup(name)))
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    p->graph_ops = (int32_t)nops;
    p->graph_tensors = (int32_t)nt;
    dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    snprintf(where, sizeof where, "%s: device", src);
    if ((st = ju_device(dev, &p->device, wg, err)))
        return st;
    if ((st = ju_int(root, "arena_bytes", 0, true, &arena, top, err)) ||
        (st = ju_arr(root, "schedule", true, &sched, top, err)) ||
        (st = ju_arr(root, "nodes", true, &nodes, top, err)) ||
        (st = ju_arr(root, "placements", true, &pl, top, err)) ||
        (st = ju_arr(root, "resident_at_start", false, &res, top, err)))
        return st;
    p->arena_bytes = arena;
    int32_t *s = NULL, ns = 0;
    if ((st = ju_id_list(sched, "schedule", p->graph_ops - 1, &s, &ns, top, err)))
        return st;
    p->schedule = s;
    p->n_schedule = ns;
    if ((st = parse_nodes(p, nodes, src, err)) || (st = parse_placements(p, pl, src, err)))
        return st;
    int i = 0;
    for (const cJSON *e = res ? res->child : NULL; e; e = e->next, i++) {
        ju_where w = {src, "resident_at_start", i};
        int64_t t = -1, off = -1;
        if (!cJSON_IsObject(e))
            return ju_fail(err, SA_EFORMAT, w, "must be an object {tensor, offset}");
        if ((st = ju_int(e, "tensor", 0, true, &t, w, err)) || (st = ju_int(e, "offset", 0, true, &off, w, err)))
            return st;
        if (t >= p->graph_tensors)
            return ju_fail(err, SA_EFORMAT, w, "tensor %lld does not exist", (long long)t);
        if (!sa_plan_add_resident(p, (int32_t)t, off))
            return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    pred = cJSON_GetObjectItemCaseSensitive(root, "predicted");
    if (cJSON_IsObject(pred)) {
        snprintf(where, sizeof where, "%s: predicted", src);
        sa_plan_predicted *q = &p->predicted;
        /* byte totals count a tensor once per transfer: they may pass 2^53
         * (then they are written rounded) and are read back as numbers */
        double h2d = -1, d2h = -1;
        if ((st = ju_num(pred, "iteration_us", 0, false, &q->iteration_us, wg, err)) ||
            (st = ju_num(pred, "ideal_us", 0, false, &q->ideal_us, wg, err)) ||
            (st = ju_num(pred, "compute_us", 0, false, &q->compute_us, wg, err)) ||
            (st = ju_num(pred, "stall_us", 0, false, &q->stall_us, wg, err)) ||
            (st = ju_num(pred, "h2d_bytes", 0, false, &h2d, wg, err)) ||
            (st = ju_num(pred, "d2h_bytes", 0, false, &d2h, wg, err)))
            return st;
        if (h2d >= 0)
            q->h2d_bytes = h2d >= 0x1p63 ? INT64_MAX : (int64_t)h2d;
        if (d2h >= 0)
            q->d2h_bytes = d2h >= 0x1p63 ? INT64_MAX : (int64_t)d2h;
    }
    const cJSON *search = cJSON_GetObjectItemCaseSensitive(root, "search");
    if (search && !(p->search_json = cJSON_PrintUnformatted(search)))
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    p->extra_json = ju_extra(root, plan_known);
    return SA_OK;
}

sa_status sa_plan_parse(const char *text, size_t len, const char *source, sa_plan **out, sa_err *err)
{
    const char *src = source ? source : "<plan>";
    cJSON *root;
    *out = NULL;
    sa_status st = ju_parse(text, len, src, &root, err);
    if (st)
        return st;
    sa_plan *p = sa_plan_new(NULL, NULL);
    if (!p) {
        cJSON_Delete(root);
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    st = parse_plan(root, src, p, err);
    cJSON_Delete(root);
    if (st) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

sa_status sa_plan_load_file(const char *path, sa_plan **out, sa_err *err)
{
    char *text;
    size_t len;
    *out = NULL;
    sa_status st = sa_read_file(path, &text, &len, err);
    if (st)
        return st;
    st = sa_plan_parse(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, out, err);
    free(text);
    return st;
}

sa_status sa_plan_check_graph(const sa_plan *p, const sa_dfg_graph *g, const char *source, sa_err *err)
{
    const char *src = source ? source : "<plan>";
    if (p->graph_ops != g->n_ops || p->graph_tensors != g->n_tensors)
        return sa_fail(err, SA_EFORMAT, "%s: graph: plan is for %d ops / %d tensors (\"%s\"), the graph has %d / %d (\"%s\")",
                       src, p->graph_ops, p->graph_tensors, p->graph_name, g->n_ops, g->n_tensors, g->name);
    return SA_OK;
}

/* ---- writing ---- */

sa_status sa_plan_to_json(const sa_plan *p, char **out, sa_err *err)
{
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sa_fail(err, SA_ENOMEM, "out of memory writing plan");
    cJSON_AddStringToObject(root, "format", "swapplan");
    ju_add_number(root, "version", SA_PLAN_FORMAT_VERSION);
    cJSON *gr = cJSON_AddObjectToObject(root, "graph");
    cJSON_AddStringToObject(gr, "name", p->graph_name);
    ju_add_number(gr, "ops", p->graph_ops);
    ju_add_number(gr, "tensors", p->graph_tensors);
    cJSON_AddItemToObject(root, "device", ju_device_json(&p->device));
    ju_add_number(root, "arena_bytes", (double)p->arena_bytes);
    cJSON *s = cJSON_AddArrayToObject(root, "schedule");
    for (int32_t i = 0; s && i < p->n_schedule; i++)
        cJSON_AddItemToArray(s, ju_number(p->schedule[i]));
    cJSON *ns = cJSON_AddArrayToObject(root, "nodes");
    for (int32_t i = 0; ns && i < p->n_nodes; i++) {
        const sa_plan_node *n = &p->nodes[i];
        cJSON *o = cJSON_CreateObject();
        ju_add_number(o, "id", i);
        cJSON_AddStringToObject(o, "kind", sa_plan_kind_name(n->kind));
        ju_add_number(o, (n->kind == SA_PLAN_COMPUTE || n->kind == SA_PLAN_RECOMPUTE) ? "op" : "tensor", n->ref);
        cJSON *d = cJSON_AddArrayToObject(o, "deps");
        for (int32_t k = 0; d && k < n->n_deps; k++)
            cJSON_AddItemToArray(d, ju_number(p->deps[n->dep_off + k]));
        cJSON_AddItemToArray(ns, o);
    }
    cJSON *pl = cJSON_AddArrayToObject(root, "placements");
    for (int32_t i = 0; pl && i < p->n_place; i++) {
        const sa_plan_placement *q = &p->place[i];
        cJSON *o = cJSON_CreateObject();
        ju_add_number(o, "tensor", q->tensor);
        ju_add_number(o, "offset", (double)q->offset);
        ju_add_number(o, "begin", q->begin);
        ju_add_number(o, "end", q->end);
        cJSON_AddItemToArray(pl, o);
    }
    cJSON *rs = cJSON_AddArrayToObject(root, "resident_at_start");
    for (int32_t i = 0; rs && i < p->n_res; i++) {
        cJSON *o = cJSON_CreateObject();
        ju_add_number(o, "tensor", p->res[i].tensor);
        ju_add_number(o, "offset", (double)p->res[i].offset);
        cJSON_AddItemToArray(rs, o);
    }
    cJSON *pr = cJSON_AddObjectToObject(root, "predicted");
    ju_add_number(pr, "iteration_us", p->predicted.iteration_us);
    ju_add_number(pr, "ideal_us", p->predicted.ideal_us);
    ju_add_number(pr, "compute_us", p->predicted.compute_us);
    ju_add_number(pr, "stall_us", p->predicted.stall_us);
    ju_add_number(pr, "h2d_bytes", (double)p->predicted.h2d_bytes);
    ju_add_number(pr, "d2h_bytes", (double)p->predicted.d2h_bytes);
    cJSON *search = p->search_json ? cJSON_Parse(p->search_json) : NULL;
    cJSON_AddItemToObject(root, "search", search ? search : cJSON_CreateObject());
    ju_merge_extra(root, p->extra_json);
    *out = ju_print(root, true);
    cJSON_Delete(root);
    return *out ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory writing plan");
}

sa_status sa_plan_write_file(const sa_plan *p, const char *path, sa_err *err)
{
    char *text;
    sa_status st = sa_plan_to_json(p, &text, err);
    if (st)
        return st;
    st = sa_write_file(path, text, strlen(text), err);
    free(text);
    return st;
}

sa_status sa_plan_clocks(const sa_plan *p, int32_t *spos, int32_t (*vc)[SA_PLAN_STREAM_COUNT], sa_err *err)
{
    int32_t n = p->n_nodes, stuck;
    /* when every dep names an earlier node (as the planners emit them), the
     * index order already follows stream order and deps: no sort, and no
     * cycle.  The clocks do not depend on which such order computes them. */
    bool forward = true;
    for (int32_t i = 0; i < n && forward; i++)
        for (int32_t k = 0; k < p->nodes[i].n_deps; k++)
            if (p->deps[p->nodes[i].dep_off + k] >= i) {
                forward = false;
                break;
            }
    int32_t *order = forward ? NULL : calloc((size_t)n + 1, sizeof *order);
    int32_t *sprev = calloc((size_t)n + 1, sizeof *sprev);
    sa_status st = ((!forward && !order) || !sprev) ? sa_fail(err, SA_ENOMEM, "out of memory ordering the plan's nodes")
                   : forward ? SA_OK : sa_plan_node_order(p, order, &stuck, err);
    if (st) {
        free(order);
        free(sprev);
        return st;
    }
    int32_t last[SA_PLAN_STREAM_COUNT] = {-1, -1, -1}, cnt[SA_PLAN_STREAM_COUNT] = {0, 0, 0};
    for (int32_t i = 0; i < n; i++) {
        sa_plan_stream s = sa_plan_kind_stream(p->nodes[i].kind);
        spos[i] = cnt[s]++;
        sprev[i] = last[s];
        last[s] = i;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t b = order ? order[i] : i;
        const sa_plan_node *nd = &p->nodes[b];
        for (int32_t k = -1; k < nd->n_deps; k++) {
            int32_t a = k < 0 ? sprev[b] : p->deps[nd->dep_off + k];
            if (a < 0)
                continue;
            for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++)
                if (vc[a][s] > vc[b][s])
                    vc[b][s] = vc[a][s];
            sa_plan_stream sa_ = sa_plan_kind_stream(p->nodes[a].kind);
            if (spos[a] + 1 > vc[b][sa_])
                vc[b][sa_] = spos[a] + 1;
        }
    }
    free(order);
    free(sprev);
    return SA_OK;
}
