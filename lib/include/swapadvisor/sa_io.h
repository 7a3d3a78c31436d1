/*
 * sa_io.h - whole-file reads and atomic writes ("-" means stdin / stdout).
 */
#ifndef SWAPADVISOR_SA_IO_H
#define SWAPADVISOR_SA_IO_H

#include <stddef.h>

#include "swapadvisor/sa_common.h"

/* Reads all of path ("-" = stdin) into a NUL-terminated malloc'd buffer the
 * caller frees; *len gets the byte count (without the NUL). */
sa_status sa_read_file(const char *path, char **out, size_t *len, sa_err *err);

/* Writes len bytes to path atomically: a temporary file in the same folder,
 * fsync'd, then renamed over path, so a failure never leaves a partial file.
 * "-" writes to stdout. */
sa_status sa_write_file(const char *path, const char *data, size_t len, sa_err *err);

/* An output stream that lands atomically.  sa_out_open gives a FILE* to write to;
 * sa_out_commit renames it into place (or flushes stdout); sa_out_abort removes
 * the temporary file.  The sa_out owns the FILE*.  A symlink is followed (the
 * file it names is replaced and the link kept); a target that is not a regular
 * file (a device such as /dev/stdout or /dev/null, a FIFO) is written in place,
 * without a temporary file; a directory is refused (SA_EIO).  A regular file
 * that is replaced keeps its mode (and its owner where the caller may set
 * it); one with other hard links is written in place, so that every name
 * sees the new contents. */
typedef struct sa_out {
    void *fp;          /* FILE* */
    char *path;        /* final path, NULL for stdout */
    char *tmp;         /* temporary path */
} sa_out;
sa_status sa_out_open(sa_out *o, const char *path, sa_err *err);
sa_status sa_out_commit(sa_out *o, sa_err *err);
void sa_out_abort(sa_out *o);

/* Unlinks the temporary files of every sa_out still open: async-signal-safe,
 * for the CLIs' handler of the signals that end a process (SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1/2, SIGALRM, SIGVTALRM, SIGPROF), so an
 * interrupted write leaves no OUT.tmp.XXXXXX behind. */
void sa_out_remove_temps(void);

#endif
