/* sa_io.c - file reads and atomic writes. */
#define _POSIX_C_SOURCE 200809L
#include "swapadvisor/sa_io.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }

/* A write error on stdout is reported once, through err: what stdio still
 * buffers is dropped and the error flag cleared, so a later flush (exit's)
 * neither retries nor reports it again. */
static sa_status stdout_failed(sa_err *err, const char *what)
{
    int e = errno;
    __fpurge(stdout);
    clearerr(stdout);
    return sa_fail(err, SA_EIO, "<stdout>: %s%s%s", what, e ? ": " : "", e ? strerror(e) : "");
}

/* The temporary files being written right now, for sa_out_remove_temps (a
 * signal handler's cleanup).  The one process-wide table of the library: a
 * signal handler has no other way to find them. */
#define SA_LIVE_TMP 16
static char *volatile live_tmp[SA_LIVE_TMP];

static void live_add(char *tmp)
{
    for (int i = 0; i < SA_LIVE_TMP; i++)
        if (!live_tmp[i]) {
            live_tmp[i] = tmp;
            return;
        }
}

static void live_remove(const char *tmp)
{
    for (int i = 0; i < SA_LIVE_TMP; i++)
        if (live_tmp[i] == tmp)
            live_tmp[i] = NULL;
}

void sa_out_remove_temps(void)
{
    for (int i = 0; i < SA_LIVE_TMP; i++) {
        char *t = live_tmp[i];
        if (t)
            unlink(t);
    }
}

/* Opens a target that is not a regular file (a device, a FIFO, a socket, or a
 * path through a dangling symlink) for writing in place: renaming a
 * temporary file over it would replace the device or the link. */
static sa_status open_direct(sa_out *o, const char *path, sa_err *err)
{
    o->fp = fopen(path, "wb");
    if (!o->fp) {
        int e = errno;
        sa_out_abort(o);
        return sa_fail(err, SA_EIO, "%s: cannot open output: %s", path, strerror(e));
    }
    return SA_OK;
}

sa_status sa_read_file(const char *path, char **out, size_t *len, sa_err *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = is_stdio(path) ? stdin : fopen(path, "rb");
    const char *name = is_stdio(path) ? "<stdin>" : path;
    if (!f)
        return sa_fail(err, SA_EIO, "%s: cannot open: %s", name, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    int rerr = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory reading", name);
    if (rerr) {
        free(buf);
        return sa_fail(err, SA_EIO, "%s: read error", name);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return SA_OK;
}

sa_status sa_out_open(sa_out *o, const char *path, sa_err *err)
{
    memset(o, 0, sizeof *o);
    if (!path || is_stdio(path)) {
        o->fp = stdout;
        return SA_OK;
    }
    struct stat sb;
    char *real = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        /* /dev/stdout, /dev/fd/N, /proc/self/fd/N name whatever the descriptor
         * is (a pipe, a terminal, a file the shell opened): written in place */
        if (strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0) {
            o->path = sa_strdup(path);
            return o->path ? open_direct(o, path, err) : sa_fail(err, SA_ENOMEM, "%s: out of memory", path);
        }
        /* any other symlink is followed: the file it names is replaced, the link stays */
        real = realpath(path, NULL);
        if (!real) {
            o->path = sa_strdup(path);
            return o->path ? open_direct(o, path, err) : sa_fail(err, SA_ENOMEM, "%s: out of memory", path);
        }
    }
    o->path = real ? real : sa_strdup(path);
    if (!o->path)
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", path);
    bool exists = stat(o->path, &sb) == 0;
    if (exists && !S_ISREG(sb.st_mode)) {
        if (S_ISDIR(sb.st_mode)) {
            sa_out_abort(o);
            return sa_fail(err, SA_EIO, "%s: cannot write output: it is a directory", path);
        }
        return open_direct(o, o->path, err);
    }
    /* a file with other hard links is written in place: a rename would
     * leave the other names on the old contents */
    if (exists && sb.st_nlink > 1)
        return open_direct(o, o->path, err);
    size_t n = strlen(o->path);
    o->tmp = malloc(n + 16);
    if (!o->tmp) {
        sa_out_abort(o);
        return sa_fail(err, SA_ENOMEM, "%s: out of memory", path);
    }
    snprintf(o->tmp, n + 16, "%s.tmp.XXXXXX", o->path);
    /* no signal between creating the file and recording it for the
     * handler's cleanup: it would leave the file behind */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGALRM);
    sigaddset(&block, SIGVTALRM);
    sigaddset(&block, SIGPROF);
    sigprocmask(SIG_BLOCK, &block, &old);
    int fd = mkstemp(o->tmp);
    if (fd >= 0)
        live_add(o->tmp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        sa_out_abort(o);
        return sa_fail(err, SA_EIO, "%s: cannot create output: %s", path, strerror(e));
    }
    /* mkstemp makes the file 0600; give it the mode of the file it replaces
     * (and, where allowed, its owner), else the mode a plain fopen would */
    mode_t um = umask(0);
    umask(um);
    if (exists && fchown(fd, sb.st_uid, sb.st_gid) != 0) {
        /* not ours to give away: the new file keeps our ownership */
    }
    if (fchmod(fd, exists ? sb.st_mode & 07777 : 0666 & ~um) != 0) {
        int e = errno;
        close(fd);
        sa_out_abort(o);
        return sa_fail(err, SA_EIO, "%s: cannot set mode: %s", path, strerror(e));
    }
    o->fp = fdopen(fd, "wb");
    if (!o->fp) {
        close(fd);
        sa_out_abort(o);
        return sa_fail(err, SA_EIO, "%s: cannot open output", path);
    }
    return SA_OK;
}

sa_status sa_out_commit(sa_out *o, sa_err *err)
{
    FILE *f = o->fp;
    if (f == stdout) {
        o->fp = NULL;
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout))
            return stdout_failed(err, "write error");
        return SA_OK;
    }
    if (!o->tmp) {
        /* written in place (a device or a FIFO) */
        bool ok = f && fflush(f) == 0 && !ferror(f);
        int e = errno;
        if (f && fclose(f) != 0) {
            ok = false;
            e = errno;
        }
        o->fp = NULL;
        sa_status st = ok ? SA_OK : sa_fail(err, SA_EIO, "%s: write failed: %s", o->path, strerror(e));
        sa_out_abort(o);
        return st;
    }
    bool ok = f && fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0)
        ok = false;
    o->fp = NULL;
    if (!ok || rename(o->tmp, o->path) != 0) {
        int e = errno;
        sa_status st = sa_fail(err, SA_EIO, "%s: write failed: %s", o->path, strerror(e));
        sa_out_abort(o);
        return st;
    }
    live_remove(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return SA_OK;
}

void sa_out_abort(sa_out *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    o->fp = NULL;
    if (o->tmp) {
        unlink(o->tmp);
        live_remove(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

sa_status sa_write_file(const char *path, const char *data, size_t len, sa_err *err)
{
    sa_out o;
    sa_status st = sa_out_open(&o, path, err);
    if (st != SA_OK)
        return st;
    errno = 0;
    if (fwrite(data, 1, len, o.fp) != len) {
        if (o.fp == stdout)
            return stdout_failed(err, "write error");
        sa_out_abort(&o);
        return sa_fail(err, SA_EIO, "%s: write failed", path);
    }
    return sa_out_commit(&o, err);
}
