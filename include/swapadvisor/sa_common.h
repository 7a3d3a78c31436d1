/*
 * sa_common.h - status codes and the error record shared by every module.
 *
 * Library functions never print and never exit: they return an sa_status and,
 * on failure, fill the caller's sa_err with one line that names the file, the
 * item and the problem.  Only cmd/ turns a status into an exit code.
 */
#ifndef SWAPADVISOR_SA_COMMON_H
#define SWAPADVISOR_SA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SA_VERSION "0.1.0"

typedef enum sa_status {
    SA_OK = 0,
    SA_EUSAGE,      /* bad argument from the caller (exit 2) */
    SA_EFORMAT,     /* input document malformed or violates docs/formats.md (exit 3) */
    SA_EIO,         /* cannot read or write a file (exit 4) */
    SA_EINFEASIBLE, /* the graph cannot run in the memory given (exit 5) */
    SA_EINVALID,    /* a plan fails validation (exit 6) */
    SA_EDEVICE,     /* CUDA/GPU failure or no GPU where one is needed (exit 7) */
    SA_EVERIFY,     /* a replay produced wrong contents (exit 8) */
    SA_ENOMEM,      /* out of host memory (exit 1) */
    SA_EINTERNAL    /* a bug: an invariant did not hold (exit 1) */
} sa_status;

/* One line of diagnosis.  The buffer is owned by whoever declares the sa_err. */
typedef struct sa_err {
    sa_status status;
    char msg[1024];
} sa_err;

/* Records status and a printf-style message in err (err may be NULL); returns status. */
sa_status sa_fail(sa_err *err, sa_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (used to add a file name). */
void sa_err_prefix(sa_err *err, const char *prefix);

/* Rewrites the control characters of the NUL-terminated line s (cap bytes of
 * room) as \n, \t, \r or \xNN, so a name from a document can neither split a
 * one-line error nor reach a terminal as an escape sequence; cut to fit cap.
 * sa_fail and sa_err_prefix apply it to every error line. */
void sa_escape_controls(char *s, size_t cap);

/* Process exit code documented in README.md for a status. */
int sa_exit_code(sa_status status);

/* Short name of a status ("format error", ...). Static string. */
const char *sa_status_name(sa_status status);

/* Whether s[0 .. len) is well-formed UTF-8 (no overlong forms, surrogates
 * or code points past U+10FFFF); when not, *bad (may be NULL) gets the
 * offset of the first byte of the bad sequence. */
int sa_utf8_valid(const char *s, size_t len, size_t *bad);

/* Copies the NUL-terminated UTF-8 string src into dst (cap bytes of room,
 * cap >= 1), cut to fit on a character boundary, never inside a sequence. */
void sa_utf8_copy(char *dst, size_t cap, const char *src);

/* Seconds on the monotonic clock (CLOCK_MONOTONIC; an arbitrary origin):
 * the one clock that deadlines (sa_policy_opts.deadline_s, sa_ga_opts.deadline_s)
 * are stated in. */
double sa_now_s(void);

/* A deadline checked inside a long loop at no cost: the loop counts its work
 * (positions walked) and the clock is read once per SA_DEADLINE_STRIDE units;
 * once passed it stays passed.  at <= 0: no deadline, no clock read. */
#define SA_DEADLINE_STRIDE 2048
typedef struct sa_deadline {
    double at;
    int64_t work, next;
    bool passed;
} sa_deadline;

static inline sa_deadline sa_deadline_at(double at) { return (sa_deadline){at, 0, 0, false}; }

static inline bool sa_deadline_passed(sa_deadline *d, int64_t units)
{
    if (!(d->at > 0))
        return false;
    if (d->passed)
        return true;
    d->work += units;
    if (d->work < d->next)
        return false;
    d->next = d->work + SA_DEADLINE_STRIDE;
    return d->passed = sa_now_s() >= d->at;
}

/* Allocation helpers: they return NULL on failure like malloc; callers check. */
void *sa_calloc(size_t n, size_t size);
char *sa_strdup(const char *s);

#define SA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Saturating int64 arithmetic for sums and products of byte counts: a result
 * past INT64_MAX (or below INT64_MIN) is clamped there, never wraps. */
static inline int64_t sa_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}
static inline int64_t sa_mul_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

#ifdef __cplusplus
}
#endif

#endif
