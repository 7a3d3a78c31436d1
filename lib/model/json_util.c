/* json_util.c - typed, range-checked access to cJSON trees with located errors. */
#include "json_util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sa_status ju_fail(sa_err *err, sa_status st, ju_where w, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w.arr)
        return sa_fail(err, st, "%s: %s[%d]: %s", w.src, w.arr, w.idx, msg);
    return sa_fail(err, st, "%s: %s", w.src, msg);
}

/* ---- duplicate keys: found with a path stack, reported with the path ---- */

typedef struct dup_comp {
    const char *key; /* object member, or NULL for an array element */
    int idx;
} dup_comp;

typedef struct dup_ctx {
    dup_comp stack[1100]; /* cJSON nests at most CJSON_NESTING_LIMIT (1000) deep */
    int depth;
    const char **keys;
    size_t cap;
    bool oom;
    const char *dup;      /* the duplicate key found */
} dup_ctx;

static int cmp_key(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool find_dup(dup_ctx *c, const cJSON *o)
{
    if (cJSON_IsObject(o) && o->child && o->child->next) {
        size_t n = 0;
        for (const cJSON *e = o->child; e; e = e->next)
            n++;
        if (n > c->cap) {
            const char **k = realloc(c->keys, n * sizeof *k);
            if (!k) {
                c->oom = true;
                return true;
            }
            c->keys = k;
            c->cap = n;
        }
        n = 0;
        for (const cJSON *e = o->child; e; e = e->next)
            c->keys[n++] = e->string ? e->string : "";
        qsort(c->keys, n, sizeof *c->keys, cmp_key);
        for (size_t i = 1; i < n; i++)
            if (strcmp(c->keys[i - 1], c->keys[i]) == 0) {
                c->dup = c->keys[i];
                return true;
            }
    }
    if (!cJSON_IsObject(o) && !cJSON_IsArray(o))
        return false;
    if (c->depth >= (int)SA_ARRAY_LEN(c->stack))
        return false;
    int i = 0;
    for (const cJSON *e = o->child; e; e = e->next, i++) {
        if (!cJSON_IsObject(e) && !cJSON_IsArray(e))
            continue;
        c->stack[c->depth++] = (dup_comp){cJSON_IsObject(o) ? e->string : NULL, i};
        if (find_dup(c, e))
            return true;
        c->depth--;
    }
    return false;
}

static sa_status check_dups(const cJSON *root, const char *src, sa_err *err)
{
    dup_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
    sa_status st = SA_OK;
    if (find_dup(c, root)) {
        if (c->oom) {
            st = sa_fail(err, SA_ENOMEM, "%s: out of memory", src);
        } else {
            char path[512] = "";
            size_t n = 0;
            for (int d = 0; d < c->depth && n < sizeof path - 1; d++) {
                int w = c->stack[d].key ? snprintf(path + n, sizeof path - n, "%s%s", d ? "." : "", c->stack[d].key)
                                        : snprintf(path + n, sizeof path - n, "[%d]", c->stack[d].idx);
                n += w > 0 ? (size_t)w : 0;
                if (n >= sizeof path)
                    n = sizeof path - 1;
            }
            st = sa_fail(err, SA_EFORMAT, "%s: %s%sduplicate key \"%s\" in one object", src, path, n ? ": " : "",
                         c->dup);
        }
    }
    free(c->keys);
    free(c);
    return st;
}

static void line_col(const char *text, const char *at, int *line, int *col)
{
    *line = *col = 1;
    for (const char *p = text; p < at; p++) {
        if (*p == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

sa_status ju_parse(const char *text, size_t len, const char *src, cJSON **out, sa_err *err)
{
    const char *end = NULL;
    size_t bad;
    *out = NULL;
    /* JSON text is UTF-8 (RFC 8259): names copied from invalid text would make
     * every document and view written from them invalid too */
    if (!sa_utf8_valid(text, len, &bad)) {
        int line, col;
        line_col(text, text + bad, &line, &col);
        return sa_fail(err, SA_EFORMAT, "%s: invalid UTF-8 at line %d column %d (byte 0x%02x)", src, line, col,
                       (unsigned)(unsigned char)text[bad]);
    }
    *out = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (*out) {
        /* one document: nothing but white space after it */
        const char *p = end && end >= text && end <= text + len ? end : text + len;
        while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        sa_status st = SA_OK;
        if (p < text + len) {
            int line, col;
            line_col(text, p, &line, &col);
            st = sa_fail(err, SA_EFORMAT, "%s: trailing data after the JSON document at line %d column %d", src,
                         line, col);
        } else {
            st = check_dups(*out, src, err);
        }
        if (st) {
            cJSON_Delete(*out);
            *out = NULL;
        }
        return st;
    }
    if (!end || end < text || end > text + len)
        end = text + len;
    /* An unclosed string, object or array at the end means the text was cut short. */
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    bool truncated = in_str || depth > 0;
    int line = 1, col = 1;
    for (const char *p = text; p < end; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (len == 0)
        return sa_fail(err, SA_EFORMAT, "%s: empty document, expected a JSON object", src);
    if (truncated) {
        line = 1;
        for (size_t i = 0; i < len; i++)
            line += text[i] == '\n';
        return sa_fail(err, SA_EFORMAT, "%s: truncated JSON: the document ends inside an unclosed %s (line %d)", src,
                       in_str ? "string" : "object or array", line);
    }
    return sa_fail(err, SA_EFORMAT, "%s: invalid JSON at line %d column %d", src, line, col);
}

sa_status ju_header(const cJSON *root, const char *format, int max_version, const char *src, sa_err *err)
{
    if (!cJSON_IsObject(root))
        return sa_fail(err, SA_EFORMAT, "%s: expected a JSON object at top level", src);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(f))
        return sa_fail(err, SA_EFORMAT, "%s: missing \"format\" (expected \"%s\")", src, format);
    if (strcmp(f->valuestring, format) != 0)
        return sa_fail(err, SA_EFORMAT, "%s: \"format\" is \"%s\", expected \"%s\"", src, f->valuestring, format);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1)
        return sa_fail(err, SA_EFORMAT, "%s: \"version\" must be a positive integer (this reader supports %s v1..v%d)",
                       src, format, max_version);
    if (v->valuedouble > max_version)
        return sa_fail(err, SA_EFORMAT, "%s: \"version\" is %.0f, newer than the supported %s v%d", src,
                       v->valuedouble, format, max_version);
    return SA_OK;
}

sa_status ju_int(const cJSON *o, const char *key, int64_t min, bool required, int64_t *out, ju_where w, sa_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return ju_fail(err, SA_EFORMAT, w, "missing field \"%s\"", key);
        return SA_OK;
    }
    if (!cJSON_IsNumber(v))
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be an integer", key);
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be an integer, got %.17g", key, d);
    if (fabs(d) > SA_DFG_MAX_EXACT_INT)
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" = %.17g is beyond 2^53 and cannot be exact", key, d);
    if (d < (double)min)
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be at least %lld, got %.17g", key, (long long)min, d);
    *out = (int64_t)d;
    return SA_OK;
}

sa_status ju_num(const cJSON *o, const char *key, double min, bool required, double *out, ju_where w, sa_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return ju_fail(err, SA_EFORMAT, w, "missing field \"%s\"", key);
        return SA_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be a number", key);
    if (v->valuedouble < min)
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be at least %g, got %g", key, min, v->valuedouble);
    *out = v->valuedouble;
    return SA_OK;
}

sa_status ju_time(const cJSON *o, const char *key, bool required, double *out, ju_where w, sa_err *err)
{
    double d = -1;
    sa_status st = ju_num(o, key, 0, required, &d, w, err);
    if (st)
        return st;
    if (d > SA_DFG_MAX_TIME_US)
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" = %g us is beyond the largest time the tools accept (%g us)", key,
                       d, SA_DFG_MAX_TIME_US);
    if (d >= 0)
        *out = d;
    return SA_OK;
}

sa_status ju_str(const cJSON *o, const char *key, bool required, const char **out, ju_where w, sa_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return ju_fail(err, SA_EFORMAT, w, "missing field \"%s\"", key);
        return SA_OK;
    }
    if (!cJSON_IsString(v))
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be a string", key);
    *out = v->valuestring;
    return SA_OK;
}

sa_status ju_arr(const cJSON *o, const char *key, bool required, const cJSON **out, ju_where w, sa_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return ju_fail(err, SA_EFORMAT, w, "missing field \"%s\"", key);
        return SA_OK;
    }
    if (!cJSON_IsArray(v))
        return ju_fail(err, SA_EFORMAT, w, "\"%s\" must be an array", key);
    *out = v;
    return SA_OK;
}

sa_status ju_id_list(const cJSON *a, const char *key, int32_t max, int32_t **out, int32_t *n, ju_where w, sa_err *err)
{
    int len = cJSON_GetArraySize(a);
    int32_t *ids = sa_calloc((size_t)len, sizeof *ids);
    if (!ids)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", w.src);
    int k = 0;
    for (const cJSON *e = a ? a->child : NULL; e; e = e->next, k++) {
        double d = cJSON_IsNumber(e) ? e->valuedouble : -1e300;
        if (!cJSON_IsNumber(e) || d != floor(d))
            return free(ids), ju_fail(err, SA_EFORMAT, w, "\"%s\"[%d] must be an integer id", key, k);
        if (d < 0 || d > max)
            return free(ids), ju_fail(err, SA_EFORMAT, w, "\"%s\"[%d] = %.17g is a dangling id (valid: 0..%d)", key,
                                      k, d, max);
        ids[k] = (int32_t)d;
    }
    *out = ids;
    *n = len;
    return SA_OK;
}

char *ju_extra(const cJSON *o, const char *const *known)
{
    cJSON *extra = NULL;
    for (const cJSON *e = o->child; e; e = e->next) {
        bool k = false;
        for (const char *const *p = known; *p && !k; p++)
            k = e->string && strcmp(e->string, *p) == 0;
        if (k || !e->string)
            continue;
        if (!extra && !(extra = cJSON_CreateObject()))
            return NULL;
        cJSON_AddItemToObject(extra, e->string, cJSON_Duplicate(e, true));
    }
    if (!extra)
        return NULL;
    char *s = cJSON_PrintUnformatted(extra);
    cJSON_Delete(extra);
    return s;
}

void ju_merge_extra(cJSON *o, const char *extra)
{
    if (!extra)
        return;
    cJSON *x = cJSON_Parse(extra);
    if (!x)
        return;
    for (cJSON *e = x->child; e; e = e->next)
        if (e->string && !cJSON_GetObjectItemCaseSensitive(o, e->string))
            cJSON_AddItemToObject(o, e->string, cJSON_Duplicate(e, true));
    cJSON_Delete(x);
}

cJSON *ju_number(double d)
{
    char buf[64];
    if (!isfinite(d))
        return cJSON_CreateNull();
    if (d == floor(d) && fabs(d) <= SA_DFG_MAX_EXACT_INT) {
        snprintf(buf, sizeof buf, "%lld", (long long)d);
    } else {
        snprintf(buf, sizeof buf, "%.15g", d);
        if (strtod(buf, NULL) != d)
            snprintf(buf, sizeof buf, "%.17g", d);
    }
    return cJSON_CreateRaw(buf);
}

void ju_add_number(cJSON *o, const char *key, double d)
{
    cJSON_AddItemToObject(o, key, ju_number(d));
}

sa_status ju_device(const cJSON *o, sa_dfg_device *dev, ju_where w, sa_err *err)
{
    sa_status st;
    const char *name = "device";
    memset(dev, 0, sizeof *dev);
    if (!cJSON_IsObject(o))
        return ju_fail(err, SA_EFORMAT, w, "the device block must be an object");
    if ((st = ju_str(o, "name", false, &name, w, err)) ||
        (st = ju_int(o, "memory_bytes", 1, true, &dev->memory_bytes, w, err)) ||
        (st = ju_num(o, "h2d_bytes_per_s", 1, true, &dev->h2d_bytes_per_s, w, err)) ||
        (st = ju_num(o, "d2h_bytes_per_s", 1, true, &dev->d2h_bytes_per_s, w, err)) ||
        (st = ju_num(o, "duplex_bytes_per_s", 1, true, &dev->duplex_bytes_per_s, w, err)) ||
        (st = ju_time(o, "transfer_latency_us", true, &dev->transfer_latency_us, w, err)) ||
        (st = ju_int(o, "workspace_reserve_bytes", 0, false, &dev->workspace_reserve_bytes, w, err)))
        return st;
    sa_utf8_copy(dev->name, sizeof dev->name, name); /* a long name is cut between characters */
    return SA_OK;
}

cJSON *ju_device_json(const sa_dfg_device *dev)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "name", dev->name);
    ju_add_number(o, "memory_bytes", (double)dev->memory_bytes);
    ju_add_number(o, "h2d_bytes_per_s", dev->h2d_bytes_per_s);
    ju_add_number(o, "d2h_bytes_per_s", dev->d2h_bytes_per_s);
    ju_add_number(o, "duplex_bytes_per_s", dev->duplex_bytes_per_s);
    ju_add_number(o, "transfer_latency_us", dev->transfer_latency_us);
    if (dev->workspace_reserve_bytes > 0)
        ju_add_number(o, "workspace_reserve_bytes", (double)dev->workspace_reserve_bytes);
    return o;
}

/* Growable string for ju_print. */
typedef struct strbuf {
    char *p;
    size_t n, cap;
    bool oom;
} strbuf;

static void sb_put(strbuf *b, const char *s)
{
    size_t k = strlen(s);
    if (b->oom)
        return;
    if (b->n + k + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + k + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

static void sb_item(strbuf *b, const cJSON *e)
{
    char *s = cJSON_PrintUnformatted(e);
    if (!s) {
        b->oom = true;
        return;
    }
    sb_put(b, s);
    cJSON_free(s);
}

/* Layout: one top-level field per line, and one element per line in arrays of
 * objects or arrays, so documents diff and grep well without pretty-printing
 * every number onto its own line. */
char *ju_print(const cJSON *root, bool pretty)
{
    if (!pretty)
        return cJSON_PrintUnformatted(root);
    strbuf b = {0};
    sb_put(&b, "{");
    for (const cJSON *f = root->child; f; f = f->next) {
        sb_put(&b, f == root->child ? "\n  " : ",\n  ");
        cJSON *key = cJSON_CreateString(f->string ? f->string : "");
        sb_item(&b, key);
        cJSON_Delete(key);
        sb_put(&b, ": ");
        bool rows = cJSON_IsArray(f) && f->child && (cJSON_IsObject(f->child) || cJSON_IsArray(f->child));
        if (!rows) {
            sb_item(&b, f);
            continue;
        }
        sb_put(&b, "[");
        for (const cJSON *e = f->child; e; e = e->next) {
            sb_put(&b, e == f->child ? "\n    " : ",\n    ");
            sb_item(&b, e);
        }
        sb_put(&b, "\n  ]");
    }
    sb_put(&b, "\n}\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
