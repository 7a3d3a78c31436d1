/* dfg_json.c - dfg v1 documents <-> sa_dfg_graph (docs/formats.md section 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/dfg.h"
#include "json_util.h"
#include "swapadvisor/sa_io.h"

static const char *const top_known[] = {"format", "version", "name", "batch", "tensors", "ops",
                                        "control_deps", "device", NULL};
static const char *const tensor_known[] = {"id", "name", "kind", "bytes", "shape", "dtype", NULL};
static const char *const op_known[] = {"id", "name", "type", "phase", "inputs", "outputs",
                                       "flops", "bytes_accessed", "time_us", NULL};

static sa_status parse_tensor(sa_dfg_graph *g, const cJSON *e, int i, const char *src, sa_err *err)
{
    ju_where w = {src, "tensors", i};
    int64_t id = -1, bytes = 0;
    const char *name = "", *kind = NULL, *dtype = NULL;
    const cJSON *shape = NULL;
    sa_status st;
    if (!cJSON_IsObject(e))
        return ju_fail(err, SA_EFORMAT, w, "must be an object");
    if ((st = ju_int(e, "id", 0, true, &id, w, err)))
        return st;
    if (id != i)
        return ju_fail(err, SA_EFORMAT, w, "id %lld must equal its index %d (duplicate or missing id)",
                       (long long)id, i);
    if ((st = ju_str(e, "name", false, &name, w, err)) || (st = ju_str(e, "kind", true, &kind, w, err)))
        return st;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    if (cJSON_IsNumber(b) && b->valuedouble <= 0)
        return ju_fail(err, SA_EFORMAT, w, "(\"%s\") bytes must be positive, got %.17g", name, b->valuedouble);
    if ((st = ju_int(e, "bytes", 1, true, &bytes, w, err)) || (st = ju_str(e, "dtype", false, &dtype, w, err)) ||
        (st = ju_arr(e, "shape", false, &shape, w, err)))
        return st;
    sa_dfg_kind k;
    if (!sa_dfg_kind_from_name(kind, &k))
        return ju_fail(err, SA_EFORMAT, w,
                       "(\"%s\") unknown kind \"%s\" (param, state, input, activation, gradient, workspace)", name,
                       kind);
    int32_t t = sa_dfg_add_tensor(g, name, k, bytes);
    if (t < 0)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    if (shape || dtype) {
        int n = shape ? cJSON_GetArraySize(shape) : 0;
        int64_t dims[16];
        if (n > 16)
            return ju_fail(err, SA_EFORMAT, w, "shape has %d dimensions, at most 16 supported", n);
        int d = 0;
        for (const cJSON *x = shape ? shape->child : NULL; x; x = x->next, d++) {
            if (cJSON_IsNumber(x) && x->valuedouble > SA_DFG_MAX_EXACT_INT)
                return ju_fail(err, SA_EFORMAT, w, "shape[%d] = %.17g is beyond 2^53 and cannot be exact", d,
                               x->valuedouble);
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble != floor(x->valuedouble))
                return ju_fail(err, SA_EFORMAT, w, "shape[%d] must be a non-negative integer", d);
            dims[d] = (int64_t)x->valuedouble;
        }
        if (!sa_dfg_set_shape(g, t, n, dims, dtype))
            return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    g->tensors[t].extra_json = ju_extra(e, tensor_known);
    return SA_OK;
}

static sa_status parse_op(sa_dfg_graph *g, const cJSON *e, int i, const char *src, sa_err *err)
{
    ju_where w = {src, "ops", i};
    int64_t id = -1;
    const char *name = "", *type = NULL, *phase = NULL;
    const cJSON *ins = NULL, *outs = NULL;
    sa_status st;
    if (!cJSON_IsObject(e))
        return ju_fail(err, SA_EFORMAT, w, "must be an object");
    if ((st = ju_int(e, "id", 0, true, &id, w, err)))
        return st;
    if (id != i)
        return ju_fail(err, SA_EFORMAT, w, "id %lld must equal its index %d (duplicate or missing id)",
                       (long long)id, i);
    if ((st = ju_str(e, "name", false, &name, w, err)) || (st = ju_str(e, "type", true, &type, w, err)) ||
        (st = ju_str(e, "phase", true, &phase, w, err)) || (st = ju_arr(e, "inputs", true, &ins, w, err)) ||
        (st = ju_arr(e, "outputs", true, &outs, w, err)))
        return st;
    sa_dfg_phase ph;
    if (!sa_dfg_phase_from_name(phase, &ph))
        return ju_fail(err, SA_EFORMAT, w, "(\"%s\") unknown phase \"%s\" (forward, backward, update)", name, phase);
    int32_t *in = NULL, *out = NULL, n_in = 0, n_out = 0;
    int32_t maxid = g->n_tensors - 1;
    if ((st = ju_id_list(ins, "inputs", maxid, &in, &n_in, w, err)))
        return st;
    if ((st = ju_id_list(outs, "outputs", maxid, &out, &n_out, w, err))) {
        free(in);
        return st;
    }
    int32_t o = sa_dfg_add_op(g, name, type, ph, in, n_in, out, n_out);
    free(in);
    free(out);
    if (o < 0)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    sa_dfg_op *op = &g->ops[o];
    if ((st = ju_num(e, "flops", 0, false, &op->flops, w, err)) ||
        (st = ju_num(e, "bytes_accessed", 0, false, &op->bytes_accessed, w, err)) ||
        (st = ju_time(e, "time_us", false, &op->time_us, w, err)))
        return st;
    op->extra_json = ju_extra(e, op_known);
    return SA_OK;
}

static sa_status parse_graph(const cJSON *root, const char *src, sa_dfg_graph **out, sa_err *err)
{
    ju_where top = {src, NULL, 0};
    const char *name = "graph";
    const cJSON *tensors, *ops, *ctl = NULL, *dev;
    sa_status st;
    if ((st = ju_header(root, "dfg", SA_DFG_FORMAT_VERSION, src, err)) ||
        (st = ju_str(root, "name", false, &name, top, err)) ||
        (st = ju_arr(root, "tensors", true, &tensors, top, err)) || (st = ju_arr(root, "ops", true, &ops, top, err)) ||
        (st = ju_arr(root, "control_deps", false, &ctl, top, err)))
        return st;
    sa_dfg_graph *g = sa_dfg_new(name);
    if (!g)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    if ((st = ju_int(root, "batch", 1, false, &g->batch, top, err)))
        goto fail;
    int i = 0;
    for (const cJSON *e = tensors->child; e; e = e->next, i++)
        if ((st = parse_tensor(g, e, i, src, err)))
            goto fail;
    i = 0;
    for (const cJSON *e = ops->child; e; e = e->next, i++)
        if ((st = parse_op(g, e, i, src, err)))
            goto fail;
    i = 0;
    for (const cJSON *e = ctl ? ctl->child : NULL; e; e = e->next, i++) {
        ju_where w = {src, "control_deps", i};
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsNumber(e->child) ||
            !cJSON_IsNumber(e->child->next)) {
            st = ju_fail(err, SA_EFORMAT, w, "must be a pair [before, after] of op ids");
            goto fail;
        }
        double a = e->child->valuedouble, b = e->child->next->valuedouble;
        if (a < 0 || b < 0 || a >= g->n_ops || b >= g->n_ops || a != (int32_t)a || b != (int32_t)b) {
            st = ju_fail(err, SA_EFORMAT, w, "[%.17g, %.17g] names an op that does not exist (0..%d)", a, b,
                         g->n_ops - 1);
            goto fail;
        }
        if (!sa_dfg_add_control(g, (int32_t)a, (int32_t)b)) {
            st = sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
            goto fail;
        }
    }
    dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    if (dev && !cJSON_IsNull(dev)) {
        ju_where w = {src, NULL, 0};
        char where[512];
        snprintf(where, sizeof where, "%s: device", src);
        w.src = where;
        if ((st = ju_device(dev, &g->device, w, err)))
            goto fail;
        g->has_device = true;
    }
    g->extra_json = ju_extra(root, top_known);
    if ((st = sa_dfg_finalize(g, src, err)))
        goto fail;
    *out = g;
    return SA_OK;
fail:
    sa_dfg_free(g);
    return st;
}

sa_status sa_dfg_parse(const char *text, size_t len, const char *source, sa_dfg_graph **out, sa_err *err)
{
    const char *src = source ? source : "<graph>";
    cJSON *root;
    *out = NULL;
    sa_status st = ju_parse(text, len, src, &root, err);
    if (st)
        return st;
    st = parse_graph(root, src, out, err);
    cJSON_Delete(root);
    return st;
}

sa_status sa_dfg_load_file(const char *path, sa_dfg_graph **out, sa_err *err)
{
    char *text;
    size_t len;
    *out = NULL;
    sa_status st = sa_read_file(path, &text, &len, err);
    if (st)
        return st;
    st = sa_dfg_parse(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, out, err);
    free(text);
    return st;
}

static cJSON *ids_json(const int32_t *ids, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, ju_number(ids[i]));
    return a;
}

static cJSON *tensor_json(const sa_dfg_tensor *t, int32_t id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    ju_add_number(o, "id", id);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "kind", sa_dfg_kind_name(t->kind));
    ju_add_number(o, "bytes", (double)t->bytes);
    if (t->ndim > 0) {
        cJSON *s = cJSON_AddArrayToObject(o, "shape");
        for (int32_t d = 0; s && d < t->ndim; d++)
            cJSON_AddItemToArray(s, ju_number((double)t->shape[d]));
    }
    if (t->dtype)
        cJSON_AddStringToObject(o, "dtype", t->dtype);
    ju_merge_extra(o, t->extra_json);
    return o;
}

static cJSON *op_json(const sa_dfg_op *op, int32_t id)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    ju_add_number(o, "id", id);
    cJSON_AddStringToObject(o, "name", op->name);
    cJSON_AddStringToObject(o, "type", op->type);
    cJSON_AddStringToObject(o, "phase", sa_dfg_phase_name(op->phase));
    cJSON_AddItemToObject(o, "inputs", ids_json(op->in, op->n_in));
    cJSON_AddItemToObject(o, "outputs", ids_json(op->out, op->n_out));
    if (op->flops >= 0)
        ju_add_number(o, "flops", op->flops);
    if (op->bytes_accessed >= 0)
        ju_add_number(o, "bytes_accessed", op->bytes_accessed);
    if (op->time_us >= 0)
        ju_add_number(o, "time_us", op->time_us);
    ju_merge_extra(o, op->extra_json);
    return o;
}

sa_status sa_dfg_to_json(const sa_dfg_graph *g, bool pretty, char **out, sa_err *err)
{
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sa_fail(err, SA_ENOMEM, "out of memory writing graph");
    cJSON_AddStringToObject(root, "format", "dfg");
    ju_add_number(root, "version", SA_DFG_FORMAT_VERSION);
    cJSON_AddStringToObject(root, "name", g->name);
    if (g->batch > 0)
        ju_add_number(root, "batch", (double)g->batch);
    cJSON *ts = cJSON_AddArrayToObject(root, "tensors");
    for (int32_t i = 0; ts && i < g->n_tensors; i++)
        cJSON_AddItemToArray(ts, tensor_json(&g->tensors[i], i));
    cJSON *os = cJSON_AddArrayToObject(root, "ops");
    for (int32_t i = 0; os && i < g->n_ops; i++)
        cJSON_AddItemToArray(os, op_json(&g->ops[i], i));
    cJSON *cs = cJSON_AddArrayToObject(root, "control_deps");
    for (int32_t i = 0; cs && i < g->n_control; i++)
        cJSON_AddItemToArray(cs, ids_json(g->control[i], 2));
    if (g->has_device)
        cJSON_AddItemToObject(root, "device", ju_device_json(&g->device));
    ju_merge_extra(root, g->extra_json);
    *out = ju_print(root, pretty);
    cJSON_Delete(root);
    return *out ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory writing graph");
}

sa_status sa_dfg_write_file(const sa_dfg_graph *g, const char *path, sa_err *err)
{
    char *text;
    sa_status st = sa_dfg_to_json(g, true, &text, err);
    if (st)
        return st;
    st = sa_write_file(path, text, strlen(text), err);
    free(text);
    return st;
}
