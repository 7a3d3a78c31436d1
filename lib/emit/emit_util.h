/*
 * emit_util.h - helpers the emitters of lib/emit share (internal to the layer).
 *
 * Writers escape into a FILE* and leave error checking to the caller's final
 * ferror().  Nothing here allocates.
 */
#ifndef EMIT_UTIL_H
#define EMIT_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* s as a JSON string with quotes; bytes >= 0x80 pass through (names are UTF-8). */
void eu_json_str(FILE *out, const char *s);

/* s as XML/HTML text or attribute value: & < > " escaped, control characters
 * (not allowed in XML 1.0) shown as '?'. */
void eu_xml_str(FILE *out, const char *s);

/* "9.500 us", "12.345 ms", "1.234 s" into buf; returns buf. */
const char *eu_fmt_time(char *buf, size_t size, double us);

/* Integer nanoseconds of a time in microseconds (round half away from zero),
 * clamped to +-(2^63 - 1024) ns (about 292 years: times up to 1e30 us are
 * valid; past the clamp a view draws them at its edge, and llround would be
 * undefined).  Monotone: a <= b gives eu_ns(a) <= eu_ns(b), so rounded slices
 * that did not overlap still do not. */
static inline int64_t eu_ns(double us)
{
    double ns = us * 1000.0;
    if (!(ns < 9.2233720368547748e18))
        return ns != ns ? 0 : INT64_MAX - 1023;
    if (!(ns > -9.2233720368547748e18))
        return -(INT64_MAX - 1023);
    return (int64_t)llround(ns);
}

/* Prints ns as microseconds with exactly three decimals ("12.345"), exact. */
void eu_print_us(FILE *out, int64_t ns);

/* A time axis unit for a span of max_us: us below 1 ms, ms below 10 s, else s.
 * *div is the microseconds per unit. */
const char *eu_time_unit(double max_us, double *div);

/* A 1, 2 or 5 times a power of ten near range / target: round tick steps. */
double eu_nice_step(double range, int target);

/* Enough decimals to tell ticks step apart. */
int eu_step_decimals(double step);

/* sa_emit_compare_svg's body; standalone false leaves out the XML prolog, for
 * an SVG inside an HTML page. */
#include "swapadvisor/emit.h"
sa_status eu_compare_svg(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g,
                         bool standalone, FILE *out, sa_err *err);

#endif
