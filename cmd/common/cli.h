/*
 * cli.h - conventions shared by every front end in cmd/ (only cmd/ prints or exits).
 *
 *   --help      usage to stdout, exit 0
 *   --version   "NAME swapadvisor VERSION" to stdout, exit 0
 *   usage error message + hint to stderr, exit 2
 *   failures    "NAME: <one line>" to stderr, exit sa_exit_code(status)
 *   "-"         stdin / stdout
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/sa_common.h"

typedef struct cli_tool {
    const char *name;
    const char *help; /* full --help text */
} cli_tool;

/* Prints help to stdout; returns 0. */
int cli_help(const cli_tool *t);
/* Prints the version to stdout; returns 0. */
int cli_version(const cli_tool *t);
/* Prints "NAME: message" and a --help hint to stderr; returns 2. */
int cli_usage(const cli_tool *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For getopt_long's '?' and ':' returns (the caller sets opterr = 0 and starts
 * its optstring with ':'): one line "unknown option '-x'" or "option '--graph'
 * needs an argument" and the --help hint, as cli_usage; returns 2. */
int cli_bad_option(const cli_tool *t, char *const *argv, int c);
/* Prints "NAME: err->msg" to stderr; returns the documented exit code. */
int cli_fail(const cli_tool *t, const sa_err *err);

/* True when stderr is a terminal (progress and colour only then). */
bool cli_stderr_tty(void);

/* Whether output names the same existing file as input (output not "-"; an
 * input "-" is the file or pipe on stdin, so -o /dev/stdin matches it): a
 * tool refuses to write over one of its inputs (exit 2). */
bool cli_same_file(const char *output, const char *input);
/* Refuses (cli_usage, exit 2) an output that is one of the n inputs (by
 * device and inode, cli_same_file), before anything is written; option names
 * the output in the message ("-o").  Returns -1 when none is. */
int cli_refuse_input_output(const cli_tool *t, const char *option, const char *output, const char *const *inputs,
                            int n);

/* Parses an integer in [min, max]. */
bool cli_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* Parses a finite number in [min, max]. */
bool cli_parse_f64(const char *s, double min, double max, double *out);

/* Parses a memory size: plain bytes, with a unit (B, KB, MB, GB, TB = 1e3 steps;
 * KiB, MiB, GiB, TiB = 2^10 steps), or a fraction of reference written "0.25x"
 * (at least 1 byte, also when reference is 0).  reference < 0 means fractions
 * are not allowed here. */
sa_status cli_parse_size(const char *s, int64_t reference, int64_t *out, sa_err *err);

/* Threads to use: requested > 0, else OMP_NUM_THREADS / the OpenMP default. */
int cli_threads(int64_t requested);

#endif
