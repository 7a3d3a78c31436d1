/* swapplan-emit - swap plan -> views for people (summary, trace, dot, memory)
 * and programs (check, graph).  The work is in lib/emit*.c. */
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/emit.h"
#include "swapadvisor/plan.h"
#include "swapadvisor/sa_io.h"
#include "swapadvisor/validate.h"

/* The help before the views (the view table prints them). */
static const cli_tool TOOL = {
    "swapplan-emit",
    "Usage: swapplan-emit PLAN --graph GRAPH [--format F] [options] [-o OUT]\n"
    "       swapplan-emit PLAN... --graph GRAPH --format html|compare [-o OUT]\n"
    "Show a swap plan (swapadvisor-search output) in another form.\n"
    "\n"
    "  PLAN                  swapplan JSON, '-' for stdin\n"
    "  -g, --graph GRAPH     the profiled dfg graph the plan was made for\n"
    "                        (required)\n"
    "  -f, --format F        what to write (default summary):\n"};

/* The help after the views. */
static const char HELP_TAIL[] =
    "  -o, --output OUT      where to write ('-' = stdout, the default); written\n"
    "                        whole or not at all\n"
    "  --strict              check: also require every ordering the plan relies\n"
    "                        on to be enforced by dependencies, not by timing\n"
    "  --window A:B          dot: only schedule positions A..B (0-based,\n"
    "                        inclusive) and the swaps linked to them\n"
    "  --svg                 memory: an SVG plot (capacity line, the curve\n"
    "                        without swapping)\n"
    "  --scale S             memory --svg: auto (default), full, or zoom (the\n"
    "                        y axis stops near the capacity; an inset shows all)\n"
    "  -q, --quiet           check: no verdict on stderr\n"
    "  -h, --help            this help;  --version  the version\n"
    "\n"
    "docs/emit.md describes every format and what to look for in a trace.\n"
    "Exit codes: 0 ok (check: the plan is valid), 1 internal error, 2 usage,\n"
    "3 bad input document (also: the plan is not for GRAPH, or GRAPH lacks op\n"
    "times), 4 I/O error, 6 the plan is invalid (check) or its nodes deadlock.\n"
    "A signal (SIGINT, SIGTERM, SIGHUP) ends it with one line on stderr, no partial\n"
    "output, and $? 128 + the signal (130, 143, 129).\n";

/* What a view reads: the plans (one unless the view is VIEW_MULTI), their
 * labels, the graph, and the options that apply to some view. */
typedef struct view_args {
    const sa_plan *const *plans;
    const char *const *labels;
    int n_plans;
    const sa_dfg_graph *g;
    bool strict, svg;
    sa_emit_scale scale;
    int32_t wa, wb;
    int32_t *n_viol; /* check: the violations written */
} view_args;

enum {
    VIEW_MULTI = 1, /* takes several PLANs */
    VIEW_CHECK = 2, /* a verdict: its lines are kept when the plan is invalid, the verdict goes to stderr */
};

/* One row per view, as the policy table: --help, the check of --format, the
 * options' checks and the dispatch read it; nothing else lists the views. */
typedef struct view {
    const char *name;
    const char *summary; /* --help's lines, '\n' between them */
    int flags;
    const char *option;  /* the option that applies to this view alone, or NULL */
    sa_status (*run)(const view_args *a, FILE *fp, sa_err *err);
} view;

static sa_status run_summary(const view_args *a, FILE *fp, sa_err *err) { return sa_emit_summary(a->plans[0], a->g, fp, err); }
static sa_status run_check(const view_args *a, FILE *fp, sa_err *err)
{
    return sa_emit_check(a->plans[0], a->g, a->strict, 0, fp, a->n_viol, err);
}
static sa_status run_trace(const view_args *a, FILE *fp, sa_err *err) { return sa_emit_trace(a->plans[0], a->g, fp, err); }
static sa_status run_dot(const view_args *a, FILE *fp, sa_err *err)
{
    return sa_emit_dot(a->plans[0], a->g, a->wa, a->wb, fp, err);
}
static sa_status run_memory(const view_args *a, FILE *fp, sa_err *err)
{
    return a->svg ? sa_emit_memory_svg_scaled(a->plans[0], a->g, a->scale, fp, err)
                  : sa_emit_memory_csv(a->plans[0], a->g, fp, err);
}
static sa_status run_graph(const view_args *a, FILE *fp, sa_err *err) { return sa_emit_graph_json(a->plans[0], a->g, fp, err); }
static sa_status run_html(const view_args *a, FILE *fp, sa_err *err)
{
    return sa_emit_html(a->plans, a->labels, a->n_plans, a->g, fp, err);
}
static sa_status run_compare(const view_args *a, FILE *fp, sa_err *err)
{
    return sa_emit_compare_svg(a->plans, a->labels, a->n_plans, a->g, fp, err);
}

static const view VIEWS[] = {
    {"summary",
     "iteration time, % of ideal, stall, traffic, peak\narena use, swaps by tensor kind, recomputes, and\n"
     "the ten longest compute stalls with their causes",
     0, NULL, run_summary},
    {"check",
     "validate the plan (docs/formats.md section 3): one\nline per violation to OUT, a verdict on stderr,\n"
     "exit 6 when invalid",
     VIEW_CHECK, "--strict", run_check},
    {"trace",
     "Chrome Trace Event JSON for Perfetto: tracks\ncompute, h2d, d2h, dependency arrows, stall\n"
     "markers and a \"device memory\" counter",
     0, NULL, run_trace},
    {"dot", "Graphviz DOT of the augmented dataflow graph", 0, "--window", run_dot},
    {"memory", "memory in use over time as CSV time_us,bytes\n(or --svg)", 0, "--svg", run_memory},
    {"graph", "the augmented graph as \"swapexec\" JSON", 0, NULL, run_graph},
    {"html",
     "one self-contained page: summary, stalls,\ntimeline and per-tensor memory (zoom, hover);\n"
     "with several PLANs also the comparison",
     VIEW_MULTI, NULL, run_html},
    {"compare", "SVG: every PLAN's iteration time, stall, traffic\nand memory in one picture", VIEW_MULTI, NULL,
     run_compare},
};

static const view *find_view(const char *name)
{
    for (size_t i = 0; i < SA_ARRAY_LEN(VIEWS); i++)
        if (strcmp(VIEWS[i].name, name) == 0)
            return &VIEWS[i];
    return NULL;
}

static const view *view_with_option(const char *option)
{
    for (size_t i = 0; i < SA_ARRAY_LEN(VIEWS); i++)
        if (VIEWS[i].option && strcmp(VIEWS[i].option, option) == 0)
            return &VIEWS[i];
    return NULL;
}

/* The names of the views with all of flags, joined by sep and, last, by
 * last ("a, b or c"). */
static void view_names(int flags, const char *sep, const char *last, char *buf, size_t len)
{
    size_t n = 0, k = 0, m = 0;
    for (size_t i = 0; i < SA_ARRAY_LEN(VIEWS); i++)
        m += (VIEWS[i].flags & flags) == flags;
    buf[0] = '\0';
    for (size_t i = 0; i < SA_ARRAY_LEN(VIEWS) && n < len; i++) {
        if ((VIEWS[i].flags & flags) != flags)
            continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k == 0 ? "" : k + 1 == m ? last : sep, VIEWS[i].name);
        k++;
    }
}

/* --help: the head, the views, the tail. */
static int help(void)
{
    cli_help(&TOOL);
    for (size_t i = 0; i < SA_ARRAY_LEN(VIEWS); i++) {
        const char *s = VIEWS[i].summary;
        printf("      %-17s ", VIEWS[i].name);
        for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
            printf("%.*s\n%24s", (int)(nl - s), s, "");
        printf("%s\n", s);
    }
    fputs(HELP_TAIL, stdout);
    return 0;
}

/* One line of usage when an option set for a view other than v: "--strict
 * applies to --format check". */
static int option_misplaced(const view *v, bool set, const char *option)
{
    const view *owner = view_with_option(option);
    if (!set || v == owner)
        return 0;
    return cli_usage(&TOOL, "%s applies to --format %s", option, owner ? owner->name : "?");
}

static bool parse_window(const char *s, int32_t *a, int32_t *b)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s)
        return false;
    char left[32];
    size_t n = (size_t)(colon - s);
    if (n >= sizeof left)
        return false;
    memcpy(left, s, n);
    left[n] = '\0';
    int64_t x, y;
    if (!cli_parse_i64(left, 0, INT32_MAX, &x) || !cli_parse_i64(colon + 1, 0, INT32_MAX, &y) || y < x)
        return false;
    *a = (int32_t)x;
    *b = (int32_t)y;
    return true;
}

/* Loads the n PLANs and checks each against g (the counts; with views, a
 * warning when it does not validate).  On error the plans loaded so far stay
 * in plans[] for the caller to free. */
static sa_status load_plans(const char *gpath, const char *const *paths, int n_plans, bool views, const sa_dfg_graph *g,
                            sa_plan **plans, sa_err *err)
{
    sa_status st = SA_OK;
    for (int i = 0; !st && i < n_plans; i++) {
        const char *path = paths[i], *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
        st = sa_plan_load_file(path, &plans[i], err);
        if (!st && (st = sa_plan_check_graph(plans[i], g, name, err)) != SA_OK) {
            sa_err e2 = *err;
            st = sa_fail(err, st, "%s; pass --graph the graph the plan was made for", e2.msg);
        }
        if (!st && strcmp(plans[i]->graph_name, g->name) != 0)
            fprintf(stderr, "%s: warning: %s is for graph \"%s\", %s is \"%s\" (same sizes, going on)\n", TOOL.name,
                    name, plans[i]->graph_name, gpath, g->name);
        if (!st && views) {
            /* a view of a plan that does not hold on this graph (another graph of
             * the same counts, a hand-edited plan) would draw nonsense silently */
            sa_err verr = {0};
            sa_val_report vr = {0};
            vr.max_lines = 1;
            sa_status vs = sa_plan_validate(plans[i], g, false, &vr, &verr);
            if (vs == SA_EINVALID)
                fprintf(stderr, "%s: warning: %s does not validate against %s (%d violation%s; first: %s); the "
                        "view may not mean much: see --format check\n", TOOL.name, name, gpath, vr.n_violations,
                        vr.n_violations == 1 ? "" : "s", verr.msg);
            sa_val_report_free(&vr);
            if (vs != SA_OK && vs != SA_EINVALID) {
                *err = verr;
                st = vs;
            }
        }
    }
    return st;
}

/* Labels for the views of several plans. */
static void make_labels(sa_plan *const *plans, const char *const *paths, int n_plans, char (*label_buf)[128],
                        const char **labels)
{
    /* labels: the search block's algorithm, with the memory when budgets
     * differ, and the file name when that still leaves two alike */
    bool budgets_differ = false;
    for (int i = 1; i < n_plans; i++)
        budgets_differ |= plans[i]->device.memory_bytes != plans[0]->device.memory_bytes;
    for (int i = 0; i < n_plans; i++) {
        const char *path = paths[i], *base = strrchr(path, '/');
        labels[i] = sa_emit_plan_label(plans[i], base ? base + 1 : path, budgets_differ, label_buf[i], sizeof label_buf[i]);
    }
    for (int i = 0; i < n_plans; i++)
        for (int k = 0; k < n_plans; k++)
            if (k != i && strcmp(label_buf[i], label_buf[k]) == 0) {
                const char *path = paths[i], *base = strrchr(path, '/');
                char tmp[128];
                snprintf(tmp, sizeof tmp, "%s (%s)", label_buf[i], base ? base + 1 : path);
                memcpy(label_buf[i], tmp, sizeof tmp);
                break;
            }
}

int main(int argc, char **argv)
{
    enum { O_STRICT = 256, O_WINDOW, O_SVG, O_VERSION, O_SCALE };
    static const struct option longopts[] = {
        {"graph", required_argument, 0, 'g'}, {"format", required_argument, 0, 'f'},
        {"output", required_argument, 0, 'o'}, {"strict", no_argument, 0, O_STRICT},
        {"window", required_argument, 0, O_WINDOW}, {"svg", no_argument, 0, O_SVG},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, O_VERSION},
        {"scale", required_argument, 0, O_SCALE}, {0, 0, 0, 0}};
    const char *gpath = NULL, *out = "-";
    const view *v = &VIEWS[0];
    bool fmt_set = false, strict = false, svg = false, quiet = false, window = false, scale_set = false;
    sa_emit_scale scale = SA_EMIT_SCALE_AUTO;
    int32_t wa = 0, wb = -1;
    int c;
    opterr = 0; /* one line per bad option: cli_bad_option's */
    while ((c = getopt_long(argc, argv, ":g:f:o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'g': gpath = optarg; break;
        case 'o': out = optarg; break;
        case 'q': quiet = true; break;
        case 'h': return help();
        case O_VERSION: return cli_version(&TOOL);
        case O_STRICT: strict = true; break;
        case O_SVG: svg = true; break;
        case O_SCALE:
            if (strcmp(optarg, "auto") == 0)
                scale = SA_EMIT_SCALE_AUTO;
            else if (strcmp(optarg, "full") == 0)
                scale = SA_EMIT_SCALE_FULL;
            else if (strcmp(optarg, "zoom") == 0)
                scale = SA_EMIT_SCALE_ZOOM;
            else
                return cli_usage(&TOOL, "--scale takes auto, full or zoom, not '%s'", optarg);
            scale_set = true;
            break;
        case 'f':
            if (!(v = find_view(optarg))) {
                char names[256];
                view_names(0, ", ", ", ", names, sizeof names);
                return cli_usage(&TOOL, "unknown format '%s' (%s)", optarg, names);
            }
            fmt_set = true;
            break;
        case O_WINDOW:
            if (!parse_window(optarg, &wa, &wb))
                return cli_usage(&TOOL, "--window takes A:B with 0 <= A <= B, not '%s'", optarg);
            window = true;
            break;
        case ':':
        default: return cli_bad_option(&TOOL, argv, c);
        }
    }
    int n_plans = argc - optind;
    if (n_plans < 1)
        return cli_usage(&TOOL, "missing PLAN");
    if (n_plans > 1 && !(v->flags & VIEW_MULTI)) {
        char names[256];
        view_names(VIEW_MULTI, ", ", " or ", names, sizeof names);
        return cli_usage(&TOOL, "several PLANs need --format %s", names);
    }
    if (n_plans > 64)
        return cli_usage(&TOOL, "at most 64 PLANs, got %d", n_plans);
    const char *ppath = argv[optind];
    if (!gpath)
        return cli_usage(&TOOL, "missing --graph GRAPH (the graph the plan was made for)");
    int stdin_uses = strcmp(gpath, "-") == 0;
    for (int i = 0; i < n_plans; i++)
        stdin_uses += strcmp(argv[optind + i], "-") == 0;
    if (stdin_uses > 1)
        return cli_usage(&TOOL, "only one of PLAN and GRAPH can be stdin");
    if (svg && !fmt_set)
        v = view_with_option("--svg"); /* --svg alone can only mean the memory plot */
    int bad = option_misplaced(v, strict, "--strict");
    if (!bad)
        bad = option_misplaced(v, window, "--window");
    if (!bad)
        bad = option_misplaced(v, svg, "--svg");
    if (bad)
        return bad;
    if (scale_set && !svg)
        return cli_usage(&TOOL, "--scale applies to --format memory --svg");
    int refused = cli_refuse_input_output(&TOOL, "-o", out, (const char *const *)argv + optind, n_plans);
    if (refused < 0)
        refused = cli_refuse_input_output(&TOOL, "-o", out, &gpath, 1);
    if (refused >= 0)
        return refused;

    sa_err err = {0};
    sa_dfg_graph *g = NULL;
    sa_plan *plans[64] = {NULL};
    char label_buf[64][128];
    const char *labels[64];
    int rc = 0;
    const char *pname = strcmp(ppath, "-") == 0 ? "<stdin>" : ppath;
    sa_status st = sa_dfg_load_file(gpath, &g, &err);
    if (!st)
        st = load_plans(gpath, (const char *const *)argv + optind, n_plans, !(v->flags & VIEW_CHECK), g, plans,
                        &err);
    if (st) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    make_labels(plans, (const char *const *)argv + optind, n_plans, label_buf, labels);

    sa_out o;
    if ((st = sa_out_open(&o, out, &err)) != SA_OK) {
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    FILE *fp = o.fp;
    int32_t n_viol = 0;
    view_args va = {(const sa_plan *const *)plans, labels, n_plans, g, strict, svg, scale, wa, wb, &n_viol};
    st = v->run(&va, fp, &err);
    int werr = errno;
    /* an invalid plan's violation lines are the check's output: keep them */
    bool keep = st == SA_OK || ((v->flags & VIEW_CHECK) && st == SA_EINVALID);
    if (st == SA_EIO && strncmp(err.msg, "<output>", 8) == 0) /* the view's stream failed: name the file */
        sa_fail(&err, SA_EIO, "%s: write failed: %s", o.path ? o.path : "<stdout>", strerror(werr ? werr : EIO));
    if (!keep) {
        sa_out_abort(&o);
        rc = cli_fail(&TOOL, &err);
        goto done;
    }
    sa_err cerr = {0};
    if (sa_out_commit(&o, &cerr) != SA_OK) {
        rc = cli_fail(&TOOL, &cerr);
        goto done;
    }
    if (v->flags & VIEW_CHECK) {
        if (st == SA_OK && !quiet)
            fprintf(stderr, "%s: %s: valid%s\n", TOOL.name, pname, strict ? " (strict: orderings enforced by deps)" : "");
        else if (st && !quiet)
            fprintf(stderr, "%s: %s: invalid, %d violation%s%s (first: %s)\n", TOOL.name, pname, n_viol,
                    n_viol == 1 ? "" : "s", strict ? " with --strict" : "", err.msg);
        rc = sa_exit_code(st);
    }
done:
    for (int i = 0; i < n_plans && i < 64; i++)
        sa_plan_free(plans[i]);
    sa_dfg_free(g);
    return rc;
}
