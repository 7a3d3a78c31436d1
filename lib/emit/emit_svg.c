/* emit_svg.c - the memory-in-use plot (emit.h): the plan's curve, the same
 * schedule without swapping, and the device capacity, on labelled axes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/emit.h"

/* Canvas and plot area in SVG user units (pixels). */
enum { SVG_W = 960, SVG_H = 560, PAD_L = 96, PAD_R = 32, PAD_T = 64, PAD_B = 120 };
#define PLOT_W ((double)(SVG_W - PAD_L - PAD_R))
#define PLOT_H ((double)(SVG_H - PAD_T - PAD_B))

#define COL_PLAN "#1f77b4"
#define COL_NOSWAP "#7f7f7f"
#define COL_CAP "#d62728"

/* Text content or attribute value: the XML specials escaped, and control
 * characters (not allowed in XML 1.0) shown as '?'. */
static void xml_str(FILE *out, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*c < 0x20 ? '?' : *c, out);
        }
    }
}

/* A 1, 2 or 5 times a power of ten near range / target: round tick labels. */
static double nice_step(double range, int target)
{
    double raw = range / target;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Enough decimals to tell ticks step apart. */
static int step_decimals(double step) { return step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9); }

typedef struct axes {
    double tmax;           /* microseconds at the right edge */
    double tdiv, ydiv;     /* display units: us or ms; B, KB, MB or GB */
    const char *tunit, *yunit;
    double ytop;           /* bytes at the top edge */
} axes;

static double px(const axes *a, double t_us) { return PAD_L + t_us / a->tmax * PLOT_W; }
static double py(const axes *a, double bytes) { return PAD_T + PLOT_H - bytes / a->ytop * PLOT_H; }

/* The step function as a path; the last value holds to the right edge. */
static void step_path(FILE *out, const axes *a, const emit_curve *c)
{
    fprintf(out, "M%.1f %.1f", px(a, c->time_us[0]), py(a, (double)c->bytes[0]));
    for (int32_t i = 1; i < c->n; i++)
        fprintf(out, " H%.1f V%.1f", px(a, c->time_us[i]), py(a, (double)c->bytes[i]));
    fprintf(out, " H%.1f", px(a, a->tmax));
}

static void draw_axes(FILE *out, const axes *a)
{
    double x0 = PAD_L, x1 = PAD_L + PLOT_W, y0 = PAD_T + PLOT_H, y1 = PAD_T;
    /* y: gridlines and labels in the chosen unit */
    double ymax = a->ytop / a->ydiv, ystep = nice_step(ymax, 6);
    int yd = step_decimals(ystep);
    fputs("<g font-size=\"12\" fill=\"#333\">\n", out);
    for (int i = 0; i * ystep <= ymax * (1 + 1e-9); i++) {
        double v = i * ystep, y = py(a, v * a->ydiv);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", x0, y, x1, y);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0 - 5, y, x0, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", x0 - 8, y + 4, yd, v);
    }
    double tmax = a->tmax / a->tdiv, tstep = nice_step(tmax, 8);
    int td = step_decimals(tstep);
    for (int i = 0; i * tstep <= tmax * (1 + 1e-9); i++) {
        double v = i * tstep, x = px(a, v * a->tdiv);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, y0, x, y0 + 5);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", x, y0 + 20, td, v);
    }
    fputs("</g>\n", out);
    fprintf(out, "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\"/>\n", x0, y1, y0, x1);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">time (%s)</text>\n",
            x0 + PLOT_W / 2, y0 + 44, a->tunit);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f "
                 "%.1f)\">device memory in use (%s)</text>\n",
            28.0, y1 + PLOT_H / 2, 28.0, y1 + PLOT_H / 2, a->yunit);
}

static void legend_item(FILE *out, double x, double y, const char *colour, const char *dash, double width,
                        const char *text)
{
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s/>\n",
            x, y, x + 28, y, colour, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", x + 34, y + 4);
    xml_str(out, text);
    fputs("</text>\n", out);
}

sa_status emit_memory_svg(const plan *p, const dfg_graph *g, FILE *out, sa_err *err)
{
    emit_timeline tl;
    emit_curve mem = {0}, ns = {0};
    sa_status st = emit_timeline_run(p, g, &tl, err);
    if (!st)
        st = emit_memory_curve(p, g, &tl, &mem, err);
    if (!st)
        st = emit_noswap_curve(p, g, &tl, &ns, err);
    if (st) {
        emit_curve_free(&mem);
        emit_timeline_free(&tl);
        return st;
    }
    axes a;
    a.tmax = tl.sim.makespan_us > 0 ? tl.sim.makespan_us : 1;
    bool ms = a.tmax >= 1000;
    a.tdiv = ms ? 1e3 : 1;
    a.tunit = ms ? "ms" : "us";
    int64_t cap = p->device.memory_bytes;
    double top = (double)(mem.peak > ns.peak ? mem.peak : ns.peak);
    if ((double)cap > top)
        top = (double)cap;
    if (top <= 0)
        top = 1;
    static const struct { double div; const char *unit; } units[] = {{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1, "B"}};
    size_t u = 0;
    while (u + 1 < SA_ARRAY_LEN(units) && top < units[u].div)
        u++;
    a.ydiv = units[u].div;
    a.yunit = units[u].unit;
    /* headroom above the highest line, rounded up to a whole tick */
    double ystep = nice_step(top * 1.08 / a.ydiv, 6);
    a.ytop = ceil(top * 1.08 / a.ydiv / ystep) * ystep * a.ydiv;

    char b1[64], b2[64], b3[64], line[256];
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"Helvetica, Arial, sans-serif\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, SVG_H, SVG_W, SVG_H);
    fputs("<title>", out);
    xml_str(out, g->name);
    fputs(": device memory in use over one iteration</title>\n", out);
    fprintf(out, "<text x=\"%d\" y=\"26\" font-size=\"16\" font-weight=\"bold\">Device memory in use: ", PAD_L);
    xml_str(out, g->name);
    fputs("</text>\n", out);
    snprintf(line, sizeof line, "one iteration of %.3f %s on %s; ideal %.3f %s", tl.sim.makespan_us / a.tdiv, a.tunit,
             p->device.name, dfg_total_time_us(g) / a.tdiv, a.tunit);
    fprintf(out, "<text x=\"%d\" y=\"46\" font-size=\"12\" fill=\"#555\">", PAD_L);
    xml_str(out, line);
    fputs("</text>\n", out);
    draw_axes(out, &a);

    double ybase = py(&a, 0);
    fputs("<path d=\"", out);
    step_path(out, &a, &ns);
    fputs("\" fill=\"none\" stroke=\"" COL_NOSWAP "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n", out);
    fputs("<path d=\"", out);
    step_path(out, &a, &mem);
    fprintf(out, " V%.1f H%.1f Z\" fill=\"" COL_PLAN "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n", ybase,
            px(&a, 0));
    fputs("<path d=\"", out);
    step_path(out, &a, &mem);
    fputs("\" fill=\"none\" stroke=\"" COL_PLAN "\" stroke-width=\"1.8\"/>\n", out);
    if (cap > 0) {
        double y = py(&a, (double)cap);
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_CAP "\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"8 4\"/>\n",
                PAD_L, y, PAD_L + PLOT_W, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"" COL_CAP "\">capacity "
                     "%s</text>\n",
                PAD_L + PLOT_W - 4, y - 5, emit_fmt_bytes(b1, sizeof b1, cap, false));
    }
    double ly = SVG_H - 36;
    snprintf(line, sizeof line, "this plan (peak %s)", emit_fmt_bytes(b1, sizeof b1, mem.peak, false));
    legend_item(out, PAD_L, ly, COL_PLAN, NULL, 1.8, line);
    snprintf(line, sizeof line, "same schedule without swapping (peak %s)",
             emit_fmt_bytes(b2, sizeof b2, ns.peak, false));
    legend_item(out, PAD_L + 250, ly, COL_NOSWAP, "5 3", 1.5, line);
    snprintf(line, sizeof line, "capacity, memory_bytes (%s)", emit_fmt_bytes(b3, sizeof b3, cap, false));
    legend_item(out, PAD_L + 590, ly, COL_CAP, "8 4", 1.5, line);
    fputs("</svg>\n", out);
    emit_curve_free(&mem);
    emit_curve_free(&ns);
    emit_timeline_free(&tl);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}
