/* swapadvisor-search-mpi - the genetic search as an island model over MPI.
 *
 * Rank 0 reads the graph and sends it to every rank (so GRAPH may be '-').
 * Each rank runs the library's search (sa_ga_search, with its own OpenMP
 * threads) on its own population and random seed; every
 * --migrate-every generations each rank sends its best --migrants genomes to
 * the next rank in a ring and takes the previous rank's in place of its
 * worst (sa_ga_opts.migrate).  Rank 0 sends but takes none in: it evolves
 * exactly as swapadvisor-search does with the same options, so the answer,
 * the best individual of all ranks, which goes to rank 0 after the last
 * generation, is never slower than the one-process search's.  All MPI is in
 * this file: the library knows only the hook.
 *
 * Determinism: rank r searches with seed S (r = 0) or splitmix(S + r); the
 * exchanges happen at fixed generations in a fixed order, so for a given
 * seed, rank count and generation count the plan is the same on every run and
 * any --threads.  With --time-limit, rank 0's clock decides at each exchange
 * whether every rank stops (the plan then depends on the machine, as with
 * the serial tool). */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "search_cli.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/sa_io.h"

static const cli_tool TOOL = {
    "swapadvisor-search-mpi",
    "Usage: mpirun -np N swapadvisor-search-mpi GRAPH [options] -o PLAN\n"
    "SwapAdvisor's genetic search as an island model: each MPI rank evolves its\n"
    "own population (with --threads OpenMP threads) and every --migrate-every\n"
    "generations sends its best --migrants individuals to the next rank in a ring,\n"
    "where they replace the worst.  Rank 0 writes the best plan of all ranks.\n"
    "Same seed, rank count and --generations: same plan.  One rank is\n"
    "swapadvisor-search.  Other policies run on rank 0 alone.\n"
    "\n" SEARCH_CLI_OPTIONS_HELP
    "  --migrate-every N     generations between two exchanges (default 5);\n"
    "                        --time-limit is checked (on rank 0's clock) at each\n"
    "                        exchange\n"
    "  --migrants K          individuals each rank sends per exchange (default 2,\n"
    "                        below the population)\n"
    "\n"
    "Every plan is checked by the library validator before rank 0 writes it; the\n"
    "output file appears whole or not at all.  --log records rank 0's generations.\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage, 3 bad input document, 4 I/O error,\n"
    "5 infeasible (the graph cannot run in that memory).\n"
    "Signals: as swapadvisor-search's.\n"};

enum { TAG_RING = 1, TAG_BEST = 2 };

typedef struct island {
    int rank, size;
    int32_t *in;          /* migrants * words: what the previous rank sent */
    double t0, time_limit_s;
    int exchanges;
} island;

static sa_status mpi_failed(sa_err *err, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return sa_fail(err, SA_EINTERNAL, "%s failed: %s", what, msg);
}

/* sa_ga_opts.migrate: the ring, a stop decision, and at the end the best to rank 0. */
static sa_status migrate(sa_ga_migration *m, void *ctx, sa_err *err)
{
    island *is = ctx;
    int rc;
    if (!m->final) {
        int n = m->n_out * m->words;
        rc = MPI_Sendrecv(m->out, n, MPI_INT32_T, (is->rank + 1) % is->size, TAG_RING, is->in, n, MPI_INT32_T,
                          (is->rank + is->size - 1) % is->size, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_failed(err, "MPI_Sendrecv (migration)", rc);
        m->in = is->in;
        m->n_in = is->rank == 0 ? 0 : m->n_out; /* rank 0 stays the one-process search */
        is->exchanges++;
        if (is->time_limit_s > 0) {
            int stop = is->rank == 0 && MPI_Wtime() - is->t0 >= is->time_limit_s;
            if ((rc = MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD)) != MPI_SUCCESS)
                return mpi_failed(err, "MPI_Bcast (time limit)", rc);
            m->stop = stop != 0;
        }
        return SA_OK;
    }
    /* the fastest individual of all ranks (the lowest rank on a tie) joins rank 0 */
    struct { double t; int rank; } mine = {m->out_us[0], is->rank}, best;
    if ((rc = MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD)) != MPI_SUCCESS)
        return mpi_failed(err, "MPI_Allreduce (best rank)", rc);
    if (best.rank == 0)
        return SA_OK;
    if (is->rank == best.rank && (rc = MPI_Send(m->out, m->words, MPI_INT32_T, 0, TAG_BEST, MPI_COMM_WORLD)))
        return mpi_failed(err, "MPI_Send (best)", rc);
    if (is->rank == 0) {
        rc = MPI_Recv(is->in, m->words, MPI_INT32_T, best.rank, TAG_BEST, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_failed(err, "MPI_Recv (best)", rc);
        m->in = is->in;
        m->n_in = 1;
    }
    return SA_OK;
}

/* Adds the island figures to the plan's search block. */
static sa_status record_islands(sa_plan *p, const island *is, const search_args *a, sa_err *err)
{
    const char *old = p->search_json;
    size_t len = old ? strlen(old) : 0;
    if (len < 2 || old[len - 1] != '}')
        return SA_OK;
    char tail[160];
    int n = snprintf(tail, sizeof tail, ",\"ranks\":%d,\"migrate_every\":%d,\"migrants\":%d,\"exchanges\":%d}",
                     is->size, a->migrate_every, a->migrants, is->exchanges);
    char *json = malloc(len + (size_t)n);
    if (!json)
        return sa_fail(err, SA_ENOMEM, "out of memory");
    memcpy(json, old, len - 1);
    memcpy(json + len - 1, tail, (size_t)n + 1);
    bool ok = sa_plan_set_search_json(p, json);
    free(json);
    return ok ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory");
}

/* Rank 0 reads GRAPH ('-': mpirun gives stdin to rank 0 only) and sends the
 * text to every rank, so that all parse the same bytes and fail or go on
 * together.  Returns -1 to go on (*text: len bytes, the caller frees), else
 * the exit code (rank 0 prints the failure). */
static int read_graph(const search_args *a, bool root, char **text, size_t *len)
{
    sa_err err = {0};
    long long head[2] = {0, 0}; /* status, length */
    if (root) {
        sa_status st = sa_read_file(a->graph, text, len, &err);
        head[0] = st;
        head[1] = st ? 0 : (long long)*len;
    }
    if (MPI_Bcast(head, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Bcast of the graph failed\n", TOOL.name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (head[0] != SA_OK)
        return root ? cli_fail(&TOOL, &err) : sa_exit_code((sa_status)head[0]);
    *len = (size_t)head[1];
    if (!root && !(*text = malloc(*len + 1))) {
        fprintf(stderr, "%s: out of memory for the graph\n", TOOL.name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t off = 0; off < *len;) {
        int n = *len - off > (1u << 30) ? 1 << 30 : (int)(*len - off);
        if (MPI_Bcast(*text + off, n, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
            fprintf(stderr, "%s: MPI_Bcast of the graph failed\n", TOOL.name);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        off += (size_t)n;
    }
    (*text)[*len] = '\0';
    return -1;
}

static int run(int argc, char **argv, const island *is0)
{
    island is = *is0;
    bool root = is.rank == 0;
    search_args a;
    search_args_init(&a);
    int rc;
    if (root) {
        rc = search_parse_args(argc, argv, &TOOL, true, &a);
    } else { /* the same parse, without rank 0's messages and --help */
        fflush(stdout);
        fflush(stderr);
        int null = open("/dev/null", O_WRONLY), o = dup(STDOUT_FILENO), e = dup(STDERR_FILENO);
        if (null >= 0 && o >= 0 && e >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        rc = search_parse_args(argc, argv, &TOOL, true, &a);
        fflush(stdout);
        fflush(stderr);
        if (null >= 0 && o >= 0 && e >= 0) {
            dup2(o, STDOUT_FILENO);
            dup2(e, STDERR_FILENO);
        }
        for (int fd = 0, fds[3] = {null, o, e}; fd < 3; fd++)
            if (fds[fd] >= 0)
                close(fds[fd]);
    }
    if (rc >= 0)
        return rc;
    sa_dfg_graph *g;
    sa_dfg_device dev;
    char *text = NULL;
    size_t len = 0;
    if ((rc = read_graph(&a, root, &text, &len)) >= 0)
        return rc;
    rc = search_load(&TOOL, &a, text, len, root, &g, &dev);
    free(text);
    if (rc >= 0)
        return rc;
    bool ga = strcmp(a.policy, "swapadvisor") == 0;
    if (!ga && !root) {
        sa_dfg_free(g);
        return 0;
    }
    search_log lg = {NULL, false};
    if (root)
        rc = search_log_open(&TOOL, &a, cli_stderr_tty() && !a.quiet && ga, &lg);
    if (ga && MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Bcast failed\n", TOOL.name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rc >= 0) { /* the log cannot be opened: every rank stops here */
        sa_dfg_free(g);
        return rc;
    }
    sa_ga_opts *o = &a.po.search;
    o->threads = cli_threads(a.threads);
    if (root) {
        o->on_generation = search_log_generation;
        o->ctx = &lg;
    }
    if (ga && is.size > 1) {
        if (is.rank > 0) {
            uint64_t x = o->seed + (uint64_t)is.rank;
            o->seed = rng_splitmix(&x);
        }
        is.in = calloc((size_t)a.migrants * (size_t)sa_ga_genome_words(g), sizeof *is.in);
        if (!is.in) {
            fprintf(stderr, "%s: rank %d: out of memory\n", TOOL.name, is.rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (o->time_limit_s > 0) { /* rank 0's clock decides, at the exchanges */
            is.time_limit_s = o->time_limit_s;
            o->time_limit_s = 0;
            if (o->generations <= 0)
                o->generations = 1000000;
        }
        o->migrate = migrate;
        o->migrate_ctx = &is;
        o->migrate_every = a.migrate_every;
        o->migrants = a.migrants;
    }
    /* the seed policies and the polish share the time limit with the search
     * (an island search stops at the exchanges, by rank 0's clock instead) */
    if ((is.time_limit_s > 0 || o->time_limit_s > 0) && strcmp(a.policy, "swapadvisor") == 0)
        a.po.deadline_s = sa_now_s() + (is.time_limit_s > 0 ? is.time_limit_s : o->time_limit_s);
    sa_err err = {0};
    sa_plan *p = NULL;
    is.t0 = MPI_Wtime();
    sa_status st = sa_policy_run_opts(a.policy, g, &dev, &a.po, &p, &err);
    if (lg.tty)
        fputc('\n', stderr);
    if (st && st != SA_EINFEASIBLE && is.size > 1) {
        /* the other ranks may wait in an exchange this rank will not reach */
        fprintf(stderr, "%s: rank %d: %s\n", TOOL.name, is.rank, err.msg);
        MPI_Abort(MPI_COMM_WORLD, sa_exit_code(st));
    }
    if (!st && ga && is.size > 1)
        st = record_islands(p, &is, &a, &err);
    if (root)
        rc = st ? cli_fail(&TOOL, &err) : search_finish(&TOOL, &a, g, p);
    else
        rc = 0; /* only rank 0's plan counts: another rank's infeasible island is no failure */
    rc = search_log_close(&TOOL, &a, &lg, rc);
    free(is.in);
    sa_plan_free(p);
    sa_dfg_free(g);
    return rc;
}

int main(int argc, char **argv)
{
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "%s: MPI_Init failed\n", TOOL.name);
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    island is = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &is.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &is.size);
    int rc = run(argc, argv, &is);
    MPI_Finalize();
    return rc;
}
