/* emit_svg.c - the memory-in-use plot (emit.h): the plan's curve, the same
 * schedule without swapping, and the device capacity, on labelled axes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit_util.h"
#include "swapadvisor/emit.h"

/* Canvas and plot area in SVG user units (pixels). */
enum { SVG_W = 960, SVG_H = 560, PAD_L = 96, PAD_R = 32, PAD_T = 64, PAD_B = 120, INSET_H = 110 };
#define PLOT_W ((double)(SVG_W - PAD_L - PAD_R))
#define PLOT_H ((double)(SVG_H - PAD_T - PAD_B))

#define COL_PLAN "#1f77b4"
#define COL_NOSWAP "#7f7f7f"
#define COL_CAP "#d62728"

/* Width of text in Helvetica at font size px (the AFM widths, per 1000 em,
 * of printable ASCII; other bytes count as a wide letter): the legend and
 * labels are laid out with it, since SVG has no text measurement of its own. */
static double text_width(const char *s, double px)
{
    static const unsigned short W[95] = {
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, /*  !"#$%&'()*+,-./ */
        556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, /* 0-9:;<=>? */
        1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, /* @A-O */
        667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,  /* P-_ */
        333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,  /* `a-o */
        556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584};      /* p-~ */
    double w = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c >= 0x80 && (*c & 0xC0) == 0x80)
            continue; /* a UTF-8 continuation byte: counted with its lead */
        w += *c >= 32 && *c < 127 ? W[*c - 32] : 667;
    }
    return w * px / 1000.0;
}

typedef struct axes {
    double x0, y0, w, h;   /* the plot area: left, top, width, height */
    double tmax;           /* microseconds at the right edge */
    double tdiv, ydiv;     /* display units: us, ms or s; B, KB, MB or GB */
    const char *tunit, *yunit;
    double ytop;           /* bytes at the top edge */
} axes;

static double px(const axes *a, double t_us) { return a->x0 + t_us / a->tmax * a->w; }
static double py(const axes *a, double bytes) { return a->y0 + a->h - fmin(bytes, a->ytop * 1.02) / a->ytop * a->h; }

/* The step function as a path; the last value holds to end_us. */
static void step_path_to(FILE *out, const axes *a, const sa_emit_curve *c, double end_us)
{
    fprintf(out, "M%.1f %.1f", px(a, c->time_us[0]), py(a, (double)c->bytes[0]));
    for (int32_t i = 1; i < c->n; i++)
        fprintf(out, " H%.1f V%.1f", px(a, c->time_us[i]), py(a, (double)c->bytes[i]));
    fprintf(out, " H%.1f", px(a, end_us));
}

/* The same, holding the last value to the right edge. */
static void step_path(FILE *out, const axes *a, const sa_emit_curve *c) { step_path_to(out, a, c, a->tmax); }

static void draw_axes(FILE *out, const axes *a)
{
    double x0 = a->x0, x1 = a->x0 + a->w, y0 = a->y0 + a->h, y1 = a->y0;
    /* y: gridlines and labels in the chosen unit */
    double ymax = a->ytop / a->ydiv, ystep = eu_nice_step(ymax, 6);
    int yd = eu_step_decimals(ystep);
    fputs("<g font-size=\"12\" fill=\"#333\">\n", out);
    for (int i = 0; i * ystep <= ymax * (1 + 1e-9); i++) {
        double v = i * ystep, y = py(a, v * a->ydiv);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", x0, y, x1, y);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x0 - 5, y, x0, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", x0 - 8, y + 4, yd, v);
    }
    double tmax = a->tmax / a->tdiv, tstep = eu_nice_step(tmax, 8);
    int td = eu_step_decimals(tstep);
    for (int i = 0; i * tstep <= tmax * (1 + 1e-9); i++) {
        double v = i * tstep, x = px(a, v * a->tdiv);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, y0, x, y0 + 5);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", x, y0 + 20, td, v);
    }
    fputs("</g>\n", out);
    fprintf(out, "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#333\"/>\n", x0, y1, y0, x1);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">time (%s)</text>\n",
            x0 + a->w / 2, y0 + 44, a->tunit);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f "
                 "%.1f)\">device memory in use (%s)</text>\n",
            28.0, y1 + a->h / 2, 28.0, y1 + a->h / 2, a->yunit);
}

/* One legend entry (a line sample and its text) at x, y; returns its width. */
static double legend_item(FILE *out, double x, double y, const char *colour, const char *dash, double width,
                          const char *text)
{
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s/>\n",
            x, y, x + 28, y, colour, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", x + 34, y + 4);
    eu_xml_str(out, text);
    fputs("</text>\n", out);
    return 34 + text_width(text, 12);
}

typedef struct legend_entry {
    const char *colour, *dash;
    double width;
    char text[200];
} legend_entry;

/* Lays the entries out left to right by their measured widths, starting a
 * new row when the next would pass the right edge; returns the rows used. */
static int draw_legend(FILE *out, const legend_entry *e, int n, double x0, double y, double right)
{
    double x = x0;
    int rows = 1;
    for (int i = 0; i < n; i++) {
        double w = 34 + text_width(e[i].text, 12);
        if (x > x0 && x + w > right) {
            x = x0;
            y += 20;
            rows++;
        }
        x += legend_item(out, x, y, e[i].colour, e[i].dash, e[i].width, e[i].text) + 24;
    }
    return rows;
}

/* "17.18 GB", with " = 16 GiB" (or MiB) when the size is a whole number of
 * binary units, as a size given in GiB is. */
static const char *fmt_capacity(char *buf, size_t size, int64_t b)
{
    char d[64];
    sa_emit_fmt_bytes(d, sizeof d, b, false);
    if (b >= (1LL << 30) && b % (1LL << 30) == 0)
        snprintf(buf, size, "%s = %lld GiB", d, (long long)(b >> 30));
    else if (b >= (1LL << 20) && b % (1LL << 20) == 0 && b % 1000000 != 0)
        snprintf(buf, size, "%s = %lld MiB", d, (long long)(b >> 20));
    else
        snprintf(buf, size, "%s", d);
    return buf;
}

/* Draws the curves and the capacity line into the plot area of a (clipped to
 * it, so a zoomed plot cuts the no-swap curve at its top edge). */
static void draw_curves(FILE *out, const axes *a, const sa_emit_curve *mem, const sa_emit_curve *ns, int64_t cap,
                        const char *clip_id, double scale)
{
    fprintf(out, "<clipPath id=\"%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
            clip_id, a->x0, a->y0 - 1, a->w + 1, a->h + 1);
    fprintf(out, "<g clip-path=\"url(#%s)\">\n", clip_id);
    fputs("<path d=\"", out);
    step_path(out, a, ns);
    fprintf(out, "\" fill=\"none\" stroke=\"" COL_NOSWAP "\" stroke-width=\"%.1f\" stroke-dasharray=\"5 3\"/>\n",
            1.5 * scale);
    fputs("<path d=\"", out);
    step_path(out, a, mem);
    fprintf(out, " V%.1f H%.1f Z\" fill=\"" COL_PLAN "\" fill-opacity=\"0.15\" stroke=\"none\"/>\n", py(a, 0),
            px(a, 0));
    fputs("<path d=\"", out);
    step_path(out, a, mem);
    fprintf(out, "\" fill=\"none\" stroke=\"" COL_PLAN "\" stroke-width=\"%.1f\"/>\n", 1.8 * scale);
    if (cap > 0) {
        double y = py(a, (double)cap);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_CAP "\" stroke-width=\"%.1f\" "
                     "stroke-dasharray=\"8 4\"/>\n",
                a->x0, y, a->x0 + a->w, y, 1.5 * scale);
    }
    fputs("</g>\n", out);
}

/* Bytes at the top edge: headroom above top, rounded up to a whole tick, in
 * the largest decimal unit top reaches. */
static void y_scale(axes *a, double top)
{
    static const struct { double div; const char *unit; } units[] = {{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1, "B"}};
    size_t u = 0;
    if (top <= 0)
        top = 1;
    while (u + 1 < SA_ARRAY_LEN(units) && top < units[u].div)
        u++;
    a->ydiv = units[u].div;
    a->yunit = units[u].unit;
    double ystep = eu_nice_step(top * 1.08 / a->ydiv, 6);
    a->ytop = ceil(top * 1.08 / a->ydiv / ystep) * ystep * a->ydiv;
}

sa_status sa_emit_memory_svg(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err)
{
    return sa_emit_memory_svg_scaled(p, g, SA_EMIT_SCALE_AUTO, out, err);
}

sa_status sa_emit_memory_svg_scaled(const sa_plan *p, const sa_dfg_graph *g, sa_emit_scale scale, FILE *out, sa_err *err)
{
    sa_emit_timeline tl;
    sa_emit_curve mem = {0}, ns = {0};
    sa_status st = sa_emit_timeline_run(p, g, &tl, err);
    if (!st)
        st = sa_emit_memory_curve(p, g, &tl, &mem, err);
    if (!st)
        st = sa_emit_noswap_curve(p, g, &tl, &ns, err);
    if (st) {
        sa_emit_curve_free(&mem);
        sa_emit_timeline_free(&tl);
        return st;
    }
    int64_t cap = p->device.memory_bytes;
    double near = (double)(mem.peak > cap ? mem.peak : cap), full = fmax(near, (double)ns.peak);
    bool zoom = scale == SA_EMIT_SCALE_ZOOM || (scale == SA_EMIT_SCALE_AUTO && full > SA_EMIT_ZOOM_RATIO * near);
    /* a zoomed plot puts its inset in a taller header, right of the title */
    int extra = zoom ? INSET_H : 0, height = SVG_H + extra;
    axes a = {PAD_L, PAD_T + extra, PLOT_W, PLOT_H, 0, 0, 0, NULL, NULL, 0};
    a.tmax = tl.sim.makespan_us > 0 ? tl.sim.makespan_us : 1;
    a.tunit = eu_time_unit(a.tmax, &a.tdiv);
    y_scale(&a, zoom ? near : full);

    char b1[64], b2[64], b3[96], line[320];
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "font-family=\"Helvetica, Arial, sans-serif\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            SVG_W, height, SVG_W, height);
    fputs("<title>", out);
    eu_xml_str(out, g->name);
    fputs(": device memory in use over one iteration</title>\n", out);
    fprintf(out, "<text x=\"%d\" y=\"26\" font-size=\"16\" font-weight=\"bold\">Device memory in use: ", PAD_L);
    eu_xml_str(out, g->name);
    fputs("</text>\n", out);
    snprintf(line, sizeof line, "one iteration of %s on %s; ideal %s", eu_fmt_time(b1, sizeof b1, tl.sim.makespan_us),
             p->device.name, eu_fmt_time(b2, sizeof b2, sa_dfg_total_time_us(g)));
    fprintf(out, "<text x=\"%d\" y=\"46\" font-size=\"12\" fill=\"#555\">", PAD_L);
    eu_xml_str(out, line);
    fputs("</text>\n", out);
    draw_axes(out, &a);
    draw_curves(out, &a, &mem, &ns, cap, "plot", 1.0);
    if (cap > 0) {
        snprintf(line, sizeof line, "capacity %s", fmt_capacity(b3, sizeof b3, cap));
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" fill=\"" COL_CAP "\">",
                a.x0 + a.w - 4, py(&a, (double)cap) - 5);
        eu_xml_str(out, line);
        fputs("</text>\n", out);
    }
    if (zoom) {
        /* the whole picture, small, with the zoomed band marked */
        axes in = a;
        in.x0 = SVG_W - PAD_R - 260;
        in.y0 = 14;
        in.w = 256;
        in.h = INSET_H - 20;
        y_scale(&in, full);
        fprintf(out, "<g class=\"inset\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" "
                     "stroke=\"#999\"/>\n",
                in.x0 - 4, in.y0 - 4, in.w + 8, in.h + 22);
        draw_curves(out, &in, &mem, &ns, cap, "inset", 0.6);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\" "
                     "stroke-dasharray=\"2 2\"/>\n",
                in.x0, py(&in, a.ytop), in.w, py(&in, 0) - py(&in, a.ytop));
        snprintf(line, sizeof line, "full scale: no-swap peak %s = %.1fx capacity",
                 sa_emit_fmt_bytes(b1, sizeof b1, ns.peak, false), cap > 0 ? (double)ns.peak / (double)cap : 0.0);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#333\">", in.x0, in.y0 + in.h + 13);
        eu_xml_str(out, line);
        fputs("</text></g>\n", out);
    }
    legend_entry le[3] = {{COL_PLAN, NULL, 1.8, ""}, {COL_NOSWAP, "5 3", 1.5, ""}, {COL_CAP, "8 4", 1.5, ""}};
    snprintf(le[0].text, sizeof le[0].text, "this plan (peak %s)", sa_emit_fmt_bytes(b1, sizeof b1, mem.peak, false));
    snprintf(le[1].text, sizeof le[1].text, "same schedule without swapping (peak %s%s)",
             sa_emit_fmt_bytes(b2, sizeof b2, ns.peak, false), zoom ? ", cut off: see the inset" : "");
    snprintf(le[2].text, sizeof le[2].text, "capacity, memory_bytes (%s)", fmt_capacity(b3, sizeof b3, cap));
    draw_legend(out, le, 3, PAD_L, height - 52, SVG_W - PAD_R);
    fputs("</svg>\n", out);
    sa_emit_curve_free(&mem);
    sa_emit_curve_free(&ns);
    sa_emit_timeline_free(&tl);
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}

/* ---- every plan of one graph in one picture ---- */

static const char *const SERIES[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                     "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define COL_STALL "#ff9f40"
#define COL_H2D "#38761d"
#define COL_D2H "#990000"

typedef struct cmp_row {
    sa_emit_timeline tl;
    sa_emit_curve mem;
} cmp_row;

sa_status eu_compare_svg(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g,
                         bool standalone, FILE *out, sa_err *err)
{
    if (n < 1)
        return sa_fail(err, SA_EUSAGE, "compare: no plans");
    cmp_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows)
        return sa_fail(err, SA_ENOMEM, "out of memory comparing %d plans", n);
    sa_status st = SA_OK;
    double tmax = 0, top = 0, traffic = 0, label_w = 0;
    for (int32_t i = 0; i < n && !st; i++) {
        st = sa_emit_timeline_run(plans[i], g, &rows[i].tl, err);
        if (!st)
            st = sa_emit_memory_curve(plans[i], g, &rows[i].tl, &rows[i].mem, err);
        if (st) {
            sa_err e2 = *err;
            sa_fail(err, st, "%s: %s", labels[i], e2.msg);
            break;
        }
        tmax = fmax(tmax, rows[i].tl.sim.makespan_us);
        top = fmax(top, fmax((double)rows[i].mem.peak, (double)plans[i]->device.memory_bytes));
        traffic = fmax(traffic, (double)(rows[i].tl.sim.h2d_bytes + rows[i].tl.sim.d2h_bytes));
        label_w = fmax(label_w, text_width(labels[i], 12));
    }
    if (st) {
        for (int32_t i = 0; i < n; i++) {
            sa_emit_curve_free(&rows[i].mem);
            sa_emit_timeline_free(&rows[i].tl);
        }
        free(rows);
        return st;
    }
    /* a long label (a plan's file name) takes at most what leaves the bars
     * 200 px: it is clipped at the left edge, a bar never has a negative width */
    const double row_h = 34, bars_y = 70, left = fmin(fmax(PAD_L, 16 + label_w + 12), SVG_W - PAD_R - 330 - 200);
    double bar_w = SVG_W - PAD_R - left - 330;
    double mem_y = bars_y + row_h * n + 40;
    int height = (int)(mem_y + PLOT_H + 64 + 20 * ((n + 3) / 4));
    char b1[64], b2[64], b3[64], b4[64], line[400];
    if (standalone)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"compare\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n"
                 "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<title>",
            SVG_W, height, SVG_W, height);
    eu_xml_str(out, g->name);
    fputs(": plans compared</title>\n<text x=\"16\" y=\"26\" font-size=\"16\" font-weight=\"bold\">", out);
    snprintf(line, sizeof line, "%d plans of %s compared", n, g->name);
    eu_xml_str(out, line);
    fputs("</text>\n<text x=\"16\" y=\"46\" font-size=\"12\" fill=\"#555\">", out);
    snprintf(line, sizeof line, "iteration time = compute (blue) + stall (orange); traffic = h2d (green) + d2h (red); "
                                "ideal %s", eu_fmt_time(b1, sizeof b1, sa_dfg_total_time_us(g)));
    eu_xml_str(out, line);
    fputs("</text>\n", out);
    for (int32_t i = 0; i < n; i++) {
        const sa_sim_result *r = &rows[i].tl.sim;
        double y = bars_y + row_h * i;
        double comp = r->makespan_us - r->stall_us;
        fprintf(out, "<g class=\"plan-row\"><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" "
                     "fill=\"%s\">",
                left - 10, y + 13, SERIES[i % SA_ARRAY_LEN(SERIES)]);
        eu_xml_str(out, labels[i]);
        fputs("</text>\n", out);
        double wc = tmax > 0 ? comp / tmax * bar_w : 0, ws = tmax > 0 ? r->stall_us / tmax * bar_w : 0;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"" COL_PLAN "\"/>"
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"" COL_STALL "\"/>\n",
                left, y + 2, wc, left + wc, y + 2, ws);
        double th = traffic > 0 ? (double)r->h2d_bytes / traffic * bar_w : 0,
               td = traffic > 0 ? (double)r->d2h_bytes / traffic * bar_w : 0;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"6\" fill=\"" COL_H2D "\"/>"
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"6\" fill=\"" COL_D2H "\"/>\n",
                left, y + 19, th, left + th, y + 19, td);
        double ideal = sa_dfg_total_time_us(g);
        snprintf(line, sizeof line, "%s (%.1f%% of ideal), stall %s", eu_fmt_time(b1, sizeof b1, r->makespan_us),
                 r->makespan_us > 0 ? 100.0 * ideal / r->makespan_us : 100.0,
                 eu_fmt_time(b2, sizeof b2, r->stall_us));
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", left + bar_w + 10, y + 13);
        eu_xml_str(out, line);
        snprintf(line, sizeof line, "h2d %s, d2h %s, peak %s", sa_emit_fmt_bytes(b3, sizeof b3, r->h2d_bytes, false),
                 sa_emit_fmt_bytes(b4, sizeof b4, r->d2h_bytes, false),
                 sa_emit_fmt_bytes(b1, sizeof b1, rows[i].mem.peak, false));
        fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555\">", left + bar_w + 10, y + 26);
        eu_xml_str(out, line);
        fputs("</text></g>\n", out);
    }
    /* memory in use of every plan on one time axis */
    axes a = {PAD_L, mem_y, PLOT_W, PLOT_H, 0, 0, 0, NULL, NULL, 0};
    a.tmax = tmax > 0 ? tmax : 1;
    a.tunit = eu_time_unit(a.tmax, &a.tdiv);
    y_scale(&a, top);
    draw_axes(out, &a);
    fprintf(out, "<clipPath id=\"cmpclip\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n"
                 "<g clip-path=\"url(#cmpclip)\">\n",
            a.x0, a.y0 - 1, a.w + 1, a.h + 1);
    for (int32_t i = 0; i < n; i++) {
        fputs("<path d=\"", out);
        step_path_to(out, &a, &rows[i].mem, rows[i].tl.sim.makespan_us); /* each curve ends with its iteration */
        fprintf(out, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\" stroke-opacity=\"0.85\"/>\n",
                SERIES[i % SA_ARRAY_LEN(SERIES)]);
    }
    for (int32_t i = 0; i < n; i++) {
        int64_t cap = plans[i]->device.memory_bytes;
        bool seen = false;
        for (int32_t k = 0; k < i; k++)
            seen |= plans[k]->device.memory_bytes == cap;
        if (seen || cap <= 0)
            continue;
        double y = py(&a, (double)cap);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_CAP "\" stroke-width=\"1.2\" "
                     "stroke-dasharray=\"8 4\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\" "
                     "fill=\"" COL_CAP "\">capacity ",
                a.x0, y, a.x0 + a.w, y, a.x0 + a.w - 4, y - 5);
        eu_xml_str(out, fmt_capacity(b1, sizeof b1, cap));
        fputs("</text>\n", out);
    }
    fputs("</g>\n", out);
    legend_entry *le = calloc((size_t)n, sizeof *le);
    if (le) {
        for (int32_t i = 0; i < n; i++) {
            le[i].colour = SERIES[i % SA_ARRAY_LEN(SERIES)];
            le[i].width = 1.8;
            snprintf(le[i].text, sizeof le[i].text, "%s (peak %s)", labels[i],
                     sa_emit_fmt_bytes(b1, sizeof b1, rows[i].mem.peak, false));
        }
        draw_legend(out, le, n, PAD_L, a.y0 + a.h + 66, SVG_W - PAD_R);
        free(le);
    }
    fputs("</svg>\n", out);
    for (int32_t i = 0; i < n; i++) {
        sa_emit_curve_free(&rows[i].mem);
        sa_emit_timeline_free(&rows[i].tl);
    }
    free(rows);
    if (!le)
        return sa_fail(err, SA_ENOMEM, "out of memory drawing the comparison legend");
    return ferror(out) ? sa_fail(err, SA_EIO, "<output>: write error") : SA_OK;
}

sa_status sa_emit_compare_svg(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g,
                           FILE *out, sa_err *err)
{
    return eu_compare_svg(plans, labels, n, g, true, out, err);
}
