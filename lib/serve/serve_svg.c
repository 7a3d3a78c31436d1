/* serve_svg.c - Figure 8 of the SwapAdvisor paper: p99 latency against
 * throughput, partitioned memory against time-shared memory (serve.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/serve.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (m < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->n + (size_t)m < b->cap) {
            b->n += (size_t)m;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + (size_t)m + 1)
            nc *= 2;
        char *q = realloc(b->p, nc);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = nc;
    }
}

enum { W = 720, H = 460, L = 80, R = 30, T = 50, B = 60 };

static double xpos(double v, double xmax) { return L + (W - L - R) * v / xmax; }
static double ypos(double ms, double lo, double hi)
{
    double f = (log10(ms) - lo) / (hi - lo);
    return T + (H - T - B) * (1 - f);
}

static void series(sbuf *b, const serve_point *pts, int32_t n, bool part, double xmax, double lo, double hi,
                   const char *colour)
{
    sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
    for (int32_t i = 0; i < n; i++) {
        const serve_stats *s = part ? &pts[i].part : &pts[i].shared;
        if (s->p99_ms > 0)
            sb_printf(b, "%s%.1f,%.1f", i ? " " : "", xpos(s->throughput_rps, xmax), ypos(s->p99_ms, lo, hi));
    }
    sb_printf(b, "\"/>\n");
    for (int32_t i = 0; i < n; i++) {
        const serve_stats *s = part ? &pts[i].part : &pts[i].shared;
        if (s->p99_ms > 0)
            sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>rate %.1f/s: %.1f req/s, p99 "
                      "%.1f ms</title></circle>\n",
                      xpos(s->throughput_rps, xmax), ypos(s->p99_ms, lo, hi), colour, pts[i].rate_rps,
                      s->throughput_rps, s->p99_ms);
    }
}

static void escape(sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '<')
            sb_printf(b, "&lt;");
        else if (*s == '>')
            sb_printf(b, "&gt;");
        else if (*s == '&')
            sb_printf(b, "&amp;");
        else
            sb_printf(b, "%c", *s);
    }
}

sa_status serve_svg(const serve_point *pts, int32_t n, const char *title, char **svg, sa_err *err)
{
    *svg = NULL;
    double xmax = 0, lo = INFINITY, hi = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        for (int m = 0; m < 2; m++) {
            const serve_stats *s = m ? &pts[i].part : &pts[i].shared;
            if (!(s->p99_ms > 0))
                continue;
            xmax = fmax(xmax, s->throughput_rps);
            lo = fmin(lo, log10(s->p99_ms));
            hi = fmax(hi, log10(s->p99_ms));
        }
    if (!(xmax > 0)) {
        xmax = 1;
        lo = 0;
        hi = 1;
    }
    xmax *= 1.05;
    lo = floor(lo);
    hi = fmax(ceil(hi), lo + 1);
    sbuf b = {0};
    sb_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
              "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
    sb_printf(&b, "<text x=\"%d\" y=\"24\" font-size=\"15\">", L);
    escape(&b, title);
    sb_printf(&b, "</text>\n");
    /* axes, grid and ticks */
    sb_printf(&b, "<g stroke=\"#999\" stroke-width=\"1\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
              "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n", L, H - B, W - R, H - B, L, T, L, H - B);
    for (double e = lo; e <= hi + 1e-9; e += 1) {
        double y = ypos(pow(10, e), lo, hi);
        sb_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                  "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                  L, y, W - R, y, L - 6, y + 4, pow(10, e));
    }
    double step = pow(10, floor(log10(xmax / 5)));
    if (xmax / step > 10)
        step *= 2;
    for (double v = 0; v <= xmax; v += step)
        sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", xpos(v, xmax), H - B + 18, v);
    sb_printf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">throughput (requests/s)</text>\n", (L + W - R) / 2,
              H - 16);
    sb_printf(&b, "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 18 %d)\">p99 latency (ms, "
              "log)</text>\n", (T + H - B) / 2, (T + H - B) / 2);
    series(&b, pts, n, true, xmax, lo, hi, "#1f77b4");
    series(&b, pts, n, false, xmax, lo, hi, "#d62728");
    sb_printf(&b, "<g><rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"#1f77b4\"/><text x=\"%d\" y=\"%d\">"
              "partitioned memory + swapping</text>\n<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" "
              "fill=\"#d62728\"/><text x=\"%d\" y=\"%d\">time-shared memory (reload on switch)</text></g>\n",
              L + 12, T + 8, L + 32, T + 13, L + 12, T + 26, L + 32, T + 31);
    sb_printf(&b, "</svg>\n");
    if (b.oom) {
        free(b.p);
        return sa_fail(err, SA_ENOMEM, "serve: out of memory drawing the figure");
    }
    *svg = b.p;
    return SA_OK;
}
