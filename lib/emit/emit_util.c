/* emit_util.c - escaping, number formats and axis steps the emitters share. */
#include "emit/emit_util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void eu_json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

void eu_xml_str(FILE *out, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c >= 0x80) {
            /* a whole, valid UTF-8 character that XML allows is copied; a
             * broken or cut sequence, U+FFFE and U+FFFF become '?', so the
             * document stays well-formed whatever the name */
            size_t len = *c >= 0xf0 ? 4 : *c >= 0xe0 ? 3 : 2, have = strnlen((const char *)c, len);
            bool ok = have == len && sa_utf8_valid((const char *)c, len, NULL) &&
                      !(len == 3 && c[0] == 0xef && c[1] == 0xbf && (c[2] == 0xbe || c[2] == 0xbf));
            if (ok) {
                fwrite(c, 1, len, out);
                c += len - 1;
            } else {
                fputc('?', out);
            }
            continue;
        }
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*c < 0x20 ? '?' : *c, out);
        }
    }
}

const char *eu_fmt_time(char *buf, size_t size, double us)
{
    if (us >= 1e6)
        snprintf(buf, size, "%.3f s", us / 1e6);
    else if (us >= 1e3)
        snprintf(buf, size, "%.3f ms", us / 1e3);
    else
        snprintf(buf, size, "%.3f us", us);
    return buf;
}

void eu_print_us(FILE *out, int64_t ns)
{
    uint64_t m = (uint64_t)ns; /* the magnitude, exact even for INT64_MIN */
    if (ns < 0) {
        fputc('-', out);
        m = 0 - m;
    }
    fprintf(out, "%llu.%03llu", (unsigned long long)(m / 1000), (unsigned long long)(m % 1000));
}

const char *eu_time_unit(double max_us, double *div)
{
    if (max_us >= 1e7) {
        *div = 1e6;
        return "s";
    }
    if (max_us >= 1e3) {
        *div = 1e3;
        return "ms";
    }
    *div = 1;
    return "us";
}

double eu_nice_step(double range, int target)
{
    double raw = range / target;
    if (!(raw > 0))
        return 1;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

int eu_step_decimals(double step) { return step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9); }
