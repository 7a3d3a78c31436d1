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

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

int sa_utf8_valid(const char *s, size_t len, size_t *bad)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(u + i, len - i);
        if (!k) {
            if (bad)
                *bad = i;
            return 0;
        }
        i += k;
    }
    return 1;
}

void sa_utf8_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src), at = 0;
    while (at < n) {
        size_t k = utf8_seq((const unsigned char *)src + at, n - at);
        if (!k)
            k = 1; /* not UTF-8: a byte at a time (the loaders refuse such text) */
        if (at + k >= cap)
            break;
        at += k;
    }
    memcpy(dst, src, at);
    dst[at] = '\0';
}
