/* profiles.c - device profiles by name (profiles.h). */
#include "profiles.h"

#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_DIRS = 16 };

typedef struct dirlist {
    int n;
    char dir[MAX_DIRS][PATH_MAX];
} dirlist;

static void add_dir(dirlist *d, const char *s, size_t len)
{
    if (d->n < MAX_DIRS && len > 0 && len < PATH_MAX) {
        memcpy(d->dir[d->n], s, len);
        d->dir[d->n][len] = '\0';
        d->n++;
    }
}

/* The folders to search, in order (profiles.h). */
static void search_dirs(dirlist *d)
{
    d->n = 0;
    const char *env = getenv("SWAPADVISOR_PROFILES");
    for (const char *s = env; s && *s;) {
        const char *colon = strchr(s, ':');
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        add_dir(d, s, len);
        s = colon ? colon + 1 : s + len;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    char buf[PATH_MAX];
    int k = snprintf(buf, sizeof buf, "%s/../share/swapadvisor/profiles", exe);
    if (k > 0 && (size_t)k < sizeof buf)
        add_dir(d, buf, (size_t)k);
    k = snprintf(buf, sizeof buf, "%s/../profiles", exe);
    if (k > 0 && (size_t)k < sizeof buf)
        add_dir(d, buf, (size_t)k);
}

static bool is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

sa_status cli_find_profile(const char *arg, char *buf, size_t size, sa_err *err)
{
    bool path = strcmp(arg, "-") == 0 || strchr(arg, '/') || ends_with(arg, ".json") || is_file(arg);
    if (path || !*arg) {
        if (strlen(arg) >= size)
            return sa_fail(err, SA_EUSAGE, "profile path too long: %.64s...", arg);
        strcpy(buf, arg);
        return SA_OK;
    }
    dirlist d;
    search_dirs(&d);
    for (int i = 0; i < d.n; i++) {
        int k = snprintf(buf, size, "%s/%s.json", d.dir[i], arg);
        if (k > 0 && (size_t)k < size && is_file(buf))
            return SA_OK;
    }
    return sa_fail(err, SA_EUSAGE, "--device: no file '%s' and no bundled profile of that name (--list-devices "
                                   "shows them)", arg);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_list_profiles(const char *tool)
{
    dirlist d;
    search_dirs(&d);
    char **names = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < d.n; i++) {
        DIR *dir = opendir(d.dir[i]);
        if (!dir)
            continue;
        for (struct dirent *e; (e = readdir(dir)) != NULL;) {
            if (!ends_with(e->d_name, ".json") || e->d_name[0] == '.')
                continue;
            size_t len = strlen(e->d_name) - 5;
            bool seen = false;
            for (int k = 0; k < n && !seen; k++)
                seen = strncmp(names[k], e->d_name, len) == 0 && names[k][len] == '\t';
            if (seen)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                char **grown = realloc(names, (size_t)cap * sizeof *names);
                if (!grown)
                    break;
                names = grown;
            }
            size_t need = len + 1 + strlen(d.dir[i]) + 1 + strlen(e->d_name) + 1;
            names[n] = malloc(need);
            if (!names[n])
                break;
            snprintf(names[n], need, "%.*s\t%s/%s", (int)len, e->d_name, d.dir[i], e->d_name);
            n++;
        }
        closedir(dir);
    }
    if (n == 0) {
        fprintf(stderr, "%s: no bundled device profiles found (set SWAPADVISOR_PROFILES)\n", tool);
        free(names);
        return 4;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        puts(names[i]);
        free(names[i]);
    }
    free(names);
    return 0;
}
