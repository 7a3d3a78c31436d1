/* cli.c - the shared front-end conventions. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "swapadvisor/sa_io.h"

/* ---- what every tool gets by linking this file ---- */

/* The signals whose default action ends the process and that a user or a
 * job runner sends: remove the temporary output files, then die of the
 * signal as before. */
static void cli_on_signal(int sig)
{
    const char *what = sig == SIGINT    ? ": interrupted (SIGINT)\n"
                       : sig == SIGTERM ? ": terminated (SIGTERM)\n"
                       : sig == SIGHUP  ? ": hangup (SIGHUP)\n"
                       : sig == SIGQUIT ? ": quit (SIGQUIT)\n"
                                        : ": ended by a signal\n";
    /* write(2) is async-signal-safe, stdio is not */
    const char *name = program_invocation_short_name;
    ssize_t w = write(2, name, strlen(name));
    w = write(2, what, strlen(what));
    (void)w;
    sa_out_remove_temps();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A write error on stdout (a full disk, /dev/full, a closed pipe) fails the
 * tool with exit 4 like any other output, --help and summaries included. */
static void cli_close_stdout(void)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "%s: <stdout>: write error%s%s\n", program_invocation_short_name, e ? ": " : "",
                e ? strerror(e) : "");
        _exit(4);
    }
}

__attribute__((constructor)) static void cli_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cli_on_signal;
    sigemptyset(&sa.sa_mask);
    static const int fatal[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF};
    for (size_t i = 0; i < SA_ARRAY_LEN(fatal); i++) {
        struct sigaction was;
        /* a signal the caller ignores stays ignored (nohup's SIGHUP) */
        if (sigaction(fatal[i], NULL, &was) == 0 && was.sa_handler == SIG_IGN)
            continue;
        sigaction(fatal[i], &sa, NULL);
    }
    /* a closed pipe and a file size limit (ulimit -f) become write errors,
     * reported and exited with 4 like any other, the temporary file removed */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    atexit(cli_close_stdout);
}

int cli_help(const cli_tool *t)
{
    fputs(t->help, stdout);
    return 0;
}

int cli_version(const cli_tool *t)
{
    printf("%s (swapadvisor) %s\n", t->name, SA_VERSION);
    return 0;
}

int cli_usage(const cli_tool *t, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", t->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", t->name);
    return 2;
}

int cli_bad_option(const cli_tool *t, char *const *argv, int c)
{
    /* a short option names itself through optopt; a long one only through
     * the argument getopt just consumed */
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    bool is_long = strncmp(arg, "--", 2) == 0;
    char shortname[3] = {'-', (char)optopt, '\0'};
    const char *name = !is_long && optopt > 0 && optopt < 128 && isgraph(optopt) ? shortname : arg;
    if (c == ':')
        return cli_usage(t, "option '%s' needs an argument", name);
    return cli_usage(t, "unknown option '%s'", name);
}

int cli_fail(const cli_tool *t, const sa_err *err)
{
    fprintf(stderr, "%s: %s\n", t->name, err->msg);
    return sa_exit_code(err->status);
}

bool cli_stderr_tty(void) { return isatty(STDERR_FILENO) == 1; }

bool cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_f64(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

sa_status cli_parse_size(const char *s, int64_t reference, int64_t *out, sa_err *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v <= 0)
        return sa_fail(err, SA_EUSAGE, "bad size '%s' (examples: 16GiB, 8000MB, 12e9, 0.25x)", s);
    while (isspace((unsigned char)*end))
        end++;
    static const struct { const char *unit; double mul; } units[] = {
        {"", 1}, {"B", 1}, {"K", 1e3}, {"KB", 1e3}, {"M", 1e6}, {"MB", 1e6}, {"G", 1e9}, {"GB", 1e9},
        {"T", 1e12}, {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}};
    double bytes = -1;
    if (strcmp(end, "x") == 0 || strcmp(end, "X") == 0) {
        if (reference < 0)
            return sa_fail(err, SA_EUSAGE, "size '%s': a fraction needs a reference peak here", s);
        /* a fraction of a peak of a few bytes (or of none: a graph without
         * tensors) is at least the one byte a memory has; the planners then
         * plan or refuse it as infeasible rather than the size being refused */
        bytes = fmax(v * (double)reference, 1);
    } else {
        for (size_t i = 0; i < SA_ARRAY_LEN(units); i++)
            if (strcasecmp(end, units[i].unit) == 0 && (strlen(units[i].unit) < 3 || strcmp(end, units[i].unit) == 0))
                bytes = v * units[i].mul;
    }
    if (bytes < 0)
        return sa_fail(err, SA_EUSAGE, "bad unit in size '%s' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, or x)", s);
    if (bytes < 1 || bytes > 9007199254740992.0)
        return sa_fail(err, SA_EUSAGE, "size '%s' out of range (1 byte .. 2^53)", s);
    *out = (int64_t)floor(bytes);
    return SA_OK;
}

int cli_threads(int64_t requested)
{
    if (requested > 0)
        return (int)requested;
    int n = omp_get_max_threads();
    return n > 0 ? n : 1;
}

bool cli_same_file(const char *output, const char *input)
{
    struct stat a, b;
    if (!output || !input || strcmp(output, "-") == 0)
        return false;
    if (strcmp(input, "-") == 0) {
        /* /dev/stdin, /dev/fd/0 or the file stdin comes from: writing it would destroy
         * the input (a file or pipe; a terminal is not an input that can be lost) */
        return stat(output, &a) == 0 && fstat(0, &b) == 0 && (S_ISREG(b.st_mode) || S_ISFIFO(b.st_mode)) &&
               a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    }
    return stat(output, &a) == 0 && stat(input, &b) == 0 && S_ISREG(a.st_mode) && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int cli_refuse_input_output(const cli_tool *t, const char *option, const char *output, const char *const *inputs,
                            int n)
{
    for (int i = 0; i < n; i++)
        if (cli_same_file(output, inputs[i]))
            return cli_usage(t, "%s %s is the input %s: it would be overwritten", option, output,
                             strcmp(inputs[i], "-") == 0 ? "- (stdin)" : inputs[i]);
    return -1;
}
