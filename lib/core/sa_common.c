#include "swapadvisor/sa_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sa_escape_controls(char *s, size_t cap)
{
    size_t n = strlen(s), extra = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            extra += (c == '\n' || c == '\t' || c == '\r') ? 1 : 3;
    }
    if (!extra || cap == 0)
        return;
    /* from the end, so the line is rewritten in place; what does not fit is cut */
    size_t m = n + extra;
    char *tmp = malloc(m + 1);
    if (!tmp) {
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                s[i] = '?';
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7f) {
            tmp[k++] = (char)c;
            continue;
        }
        tmp[k++] = '\\';
        if (c == '\n' || c == '\t' || c == '\r') {
            tmp[k++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else {
            static const char hex[] = "0123456789abcdef";
            tmp[k++] = 'x';
            tmp[k++] = hex[c >> 4];
            tmp[k++] = hex[c & 15];
        }
    }
    tmp[k] = '\0';
    snprintf(s, cap, "%s", tmp);
    free(tmp);
}

sa_status sa_fail(sa_err *err, sa_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        sa_escape_controls(err->msg, sizeof err->msg);
        err->status = status;
    }
    return status;
}

void sa_err_prefix(sa_err *err, const char *prefix)
{
    if (!err || !prefix || !*prefix)
        return;
    char tmp[sizeof err->msg];
    snprintf(tmp, sizeof tmp, "%s: %s", prefix, err->msg);
    memcpy(err->msg, tmp, sizeof tmp);
    sa_escape_controls(err->msg, sizeof err->msg);
}

int sa_exit_code(sa_status status)
{
    switch (status) {
    case SA_OK: return 0;
    case SA_EUSAGE: return 2;
    case SA_EFORMAT: return 3;
    case SA_EIO: return 4;
    case SA_EINFEASIBLE: return 5;
    case SA_EINVALID: return 6;
    case SA_EDEVICE: return 7;
    case SA_EVERIFY: return 8;
    case SA_ENOMEM:
    case SA_EINTERNAL:
    default: return 1;
    }
}

const char *sa_status_name(sa_status status)
{
    switch (status) {
    case SA_OK: return "ok";
    case SA_EUSAGE: return "usage error";
    case SA_EFORMAT: return "format error";
    case SA_EIO: return "I/O error";
    case SA_EINFEASIBLE: return "infeasible";
    case SA_EINVALID: return "invalid plan";
    case SA_EDEVICE: return "device error";
    case SA_EVERIFY: return "verification failed";
    case SA_ENOMEM: return "out of memory";
    case SA_EINTERNAL: return "internal error";
    }
    return "unknown error";
}

void *sa_calloc(size_t n, size_t size)
{
    if (n == 0 || size == 0)
        return calloc(1, 1);
    return calloc(n, size);
}

char *sa_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

double sa_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
