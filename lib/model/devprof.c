/* devprof.c - device profile documents. */
#include "swapadvisor/devprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "swapadvisor/sa_io.h"

static const char *const prof_known[] = {"format", "version", "name", "memory_bytes", "h2d_bytes_per_s",
                                         "d2h_bytes_per_s", "duplex_bytes_per_s", "transfer_latency_us",
                                         "peak_flops", "memory_bandwidth_bytes_per_s", "launch_overhead_us",
                                         "efficiency", "workspace_reserve_bytes", NULL};

bool sa_devprof_set_eff(sa_devprof *p, const char *type, double compute, double memory)
{
    for (int32_t i = 0; i < p->n_eff; i++)
        if (strcmp(p->eff[i].type, type) == 0) {
            p->eff[i].compute = compute;
            p->eff[i].memory = memory;
            return true;
        }
    sa_devprof_eff *ne = realloc(p->eff, (size_t)(p->n_eff + 1) * sizeof *ne);
    if (!ne)
        return false;
    p->eff = ne;
    char *t = sa_strdup(type);
    if (!t)
        return false;
    p->eff[p->n_eff++] = (sa_devprof_eff){t, compute, memory};
    return true;
}

const sa_devprof_eff *sa_devprof_eff_for(const sa_devprof *p, const char *type)
{
    for (int32_t i = 1; i < p->n_eff; i++)
        if (strcmp(p->eff[i].type, type) == 0)
            return &p->eff[i];
    return &p->eff[0];
}

void sa_devprof_free(sa_devprof *p)
{
    if (!p)
        return;
    for (int32_t i = 0; i < p->n_eff; i++)
        free(p->eff[i].type);
    free(p->eff);
    free(p->extra_json);
    free(p);
}

static sa_status parse_eff(const cJSON *o, const char *type, double *c, double *m, const char *src, sa_err *err)
{
    char where[512];
    snprintf(where, sizeof where, "%s: efficiency.%s", src, type);
    ju_where w = {where, NULL, 0};
    sa_status st;
    if (!cJSON_IsObject(o))
        return ju_fail(err, SA_EFORMAT, w, "must be an object {\"compute\": f, \"memory\": f}");
    if ((st = ju_num(o, "compute", 1e-6, true, c, w, err)) || (st = ju_num(o, "memory", 1e-6, true, m, w, err)))
        return st;
    if (*c > 1 || *m > 1)
        return ju_fail(err, SA_EFORMAT, w, "efficiencies are fractions in (0, 1]");
    return SA_OK;
}

static sa_status parse_profile(const cJSON *root, const char *src, sa_devprof *p, sa_err *err)
{
    ju_where top = {src, NULL, 0};
    sa_status st;
    if ((st = ju_header(root, "device-profile", SA_DFG_PROFILE_VERSION, src, err)) ||
        (st = ju_device(root, &p->dev, top, err)))
        return st;
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(root, "peak_flops");
    if (!cJSON_IsObject(pf))
        return sa_fail(err, SA_EFORMAT, "%s: missing object \"peak_flops\" ({\"f32\": FLOP/s, ...})", src);
    char where[512];
    snprintf(where, sizeof where, "%s: peak_flops", src);
    ju_where wp = {where, NULL, 0};
    if ((st = ju_num(pf, "f32", 1, true, &p->peak_flops_f32, wp, err)) ||
        (st = ju_num(pf, "f16", 0, false, &p->peak_flops_f16, wp, err)) ||
        (st = ju_num(root, "memory_bandwidth_bytes_per_s", 1, true, &p->mem_bytes_per_s, top, err)) ||
        (st = ju_time(root, "launch_overhead_us", true, &p->launch_us, top, err)))
        return st;
    const cJSON *eff = cJSON_GetObjectItemCaseSensitive(root, "efficiency");
    const cJSON *def = eff ? cJSON_GetObjectItemCaseSensitive(eff, "default") : NULL;
    if (!cJSON_IsObject(eff) || !def)
        return sa_fail(err, SA_EFORMAT, "%s: missing \"efficiency\" object with a \"default\" entry", src);
    double c, m;
    if ((st = parse_eff(def, "default", &c, &m, src, err)))
        return st;
    if (!sa_devprof_set_eff(p, "default", c, m))
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    for (const cJSON *e = eff->child; e; e = e->next) {
        if (!e->string || strcmp(e->string, "default") == 0)
            continue;
        if ((st = parse_eff(e, e->string, &c, &m, src, err)))
            return st;
        if (!sa_devprof_set_eff(p, e->string, c, m))
            return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    p->extra_json = ju_extra(root, prof_known);
    return SA_OK;
}

sa_status sa_devprof_parse(const char *text, size_t len, const char *source, sa_devprof **out, sa_err *err)
{
    const char *src = source ? source : "<profile>";
    cJSON *root;
    *out = NULL;
    sa_status st = ju_parse(text, len, src, &root, err);
    if (st)
        return st;
    sa_devprof *p = calloc(1, sizeof *p);
    if (!p) {
        cJSON_Delete(root);
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    }
    st = parse_profile(root, src, p, err);
    cJSON_Delete(root);
    if (st) {
        sa_devprof_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

sa_status sa_devprof_load_file(const char *path, sa_devprof **out, sa_err *err)
{
    char *text;
    size_t len;
    *out = NULL;
    sa_status st = sa_read_file(path, &text, &len, err);
    if (st)
        return st;
    st = sa_devprof_parse(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, out, err);
    free(text);
    return st;
}

sa_status sa_devprof_to_json(const sa_devprof *p, char **out, sa_err *err)
{
    *out = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return sa_fail(err, SA_ENOMEM, "out of memory writing profile");
    cJSON_AddStringToObject(root, "format", "device-profile");
    ju_add_number(root, "version", SA_DFG_PROFILE_VERSION);
    cJSON *dev = ju_device_json(&p->dev);
    for (cJSON *e = dev ? dev->child : NULL; e; e = e->next)
        cJSON_AddItemToObject(root, e->string, cJSON_Duplicate(e, true));
    cJSON_Delete(dev);
    cJSON *pf = cJSON_AddObjectToObject(root, "peak_flops");
    ju_add_number(pf, "f32", p->peak_flops_f32);
    if (p->peak_flops_f16 > 0)
        ju_add_number(pf, "f16", p->peak_flops_f16);
    ju_add_number(root, "memory_bandwidth_bytes_per_s", p->mem_bytes_per_s);
    ju_add_number(root, "launch_overhead_us", p->launch_us);
    cJSON *eff = cJSON_AddObjectToObject(root, "efficiency");
    for (int32_t i = 0; eff && i < p->n_eff; i++) {
        cJSON *e = cJSON_AddObjectToObject(eff, p->eff[i].type);
        ju_add_number(e, "compute", p->eff[i].compute);
        ju_add_number(e, "memory", p->eff[i].memory);
    }
    ju_merge_extra(root, p->extra_json);
    *out = cJSON_Print(root);
    cJSON_Delete(root);
    return *out ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory writing profile");
}

sa_status sa_devprof_write_file(const sa_devprof *p, const char *path, sa_err *err)
{
    char *text;
    sa_status st = sa_devprof_to_json(p, &text, err);
    if (st)
        return st;
    st = sa_write_file(path, text, strlen(text), err);
    free(text);
    return st;
}
