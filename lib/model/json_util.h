/*
 * json_util.h - internal helpers over cJSON for the three document loaders.
 * Not installed: cJSON stays inside lib/.
 *
 * Every getter names the place with (src, arr, idx): "src: arr[idx]: ..." or,
 * with arr NULL, "src: ...".
 */
#ifndef JSON_UTIL_H
#define JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_common.h"

typedef struct ju_where {
    const char *src;
    const char *arr; /* NULL at top level */
    int idx;
} ju_where;

sa_status ju_fail(sa_err *err, sa_status st, ju_where w, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Parses text; on a syntax error reports the line and column. Caller deletes the tree. */
sa_status ju_parse(const char *text, size_t len, const char *src, cJSON **out, sa_err *err);

/* Checks root is an object with "format" == format and "version" <= max_version. */
sa_status ju_header(const cJSON *root, const char *format, int max_version, const char *src, sa_err *err);

/* Integer field in [min, 2^53]; absent and !required leaves *out untouched. */
sa_status ju_int(const cJSON *o, const char *key, int64_t min, bool required, int64_t *out, ju_where w, sa_err *err);
/* Finite number >= min; absent and !required leaves *out untouched. */
sa_status ju_num(const cJSON *o, const char *key, double min, bool required, double *out, ju_where w, sa_err *err);
/* A time in us: a number in [0, SA_DFG_MAX_TIME_US]; absent and !required leaves *out untouched. */
sa_status ju_time(const cJSON *o, const char *key, bool required, double *out, ju_where w, sa_err *err);
/* String field; *out points into the tree. */
sa_status ju_str(const cJSON *o, const char *key, bool required, const char **out, ju_where w, sa_err *err);
/* Array field; *out points into the tree (NULL when absent and not required). */
sa_status ju_arr(const cJSON *o, const char *key, bool required, const cJSON **out, ju_where w, sa_err *err);
/* Converts a JSON array of integers in [min, max] into a malloc'd int32 array. */
sa_status ju_id_list(const cJSON *a, const char *key, int32_t max, int32_t **out, int32_t *n, ju_where w, sa_err *err);

/* Unknown fields of o (keys not in known, NULL-terminated) as compact JSON text, or NULL. */
char *ju_extra(const cJSON *o, const char *const *known);
/* Adds the fields of extra (JSON object text) that o lacks. */
void ju_merge_extra(cJSON *o, const char *extra);

/* The device block. */
sa_status ju_device(const cJSON *o, sa_dfg_device *dev, ju_where w, sa_err *err);
cJSON *ju_device_json(const sa_dfg_device *dev);

/* Number items that print exactly: integers in full (cJSON's own printer
 * rounds past 15 digits), other values in the shortest form that reads back
 * bit-for-bit.  NULL on allocation failure. */
cJSON *ju_number(double d);
void ju_add_number(cJSON *o, const char *key, double d);

/* Prints the tree (pretty or compact) into a malloc'd string; NULL on failure. */
char *ju_print(const cJSON *root, bool pretty);

#endif
