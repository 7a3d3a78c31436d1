/* runner_host.c - the host backend: replays a plan with three threads standing
 * in for the streams and checks every byte against a reference run.
 *
 * Contents.  Every op writes into each output a pattern derived from one
 * 64-bit value: a mix of the op id, the iteration, the output's index and the
 * hashes of all its inputs' bytes (an in-place update hashes the old contents,
 * so the new ones depend on them).  The pattern varies with the position in
 * the tensor, so a copy to the wrong offset or of the wrong length shows.
 * Inputs get fresh contents on the host before every iteration, persistent
 * tensors a fixed initial value, and everything that holds no valid data (the
 * arena, host copies of activations, host copies of tensors resident at start)
 * holds a poison pattern, re-laid over the arena between iterations except
 * where the residents live.
 *
 * Verification.  A reference run gives every tensor its own buffer and runs
 * the ops in the schedule's order with no swaps.  The replay must produce, for
 * every compute and recompute node of every iteration, the same input hashes
 * and output values as the reference produced for that op, and at the end the
 * same bytes in every persistent tensor (read from the arena for residents,
 * from the host copy for the others).  The first difference in replay order
 * is reported as the tensor that was lost or corrupted.
 *
 * Threads.  A node waits until its deps are done (one mutex, one condition
 * variable, a done flag per node).  For a plan that passed strict validation
 * the data work runs outside the lock: the dependency graph orders every
 * conflicting access, so the three threads really overlap (and a sanitizer
 * would flag a plan the validator wrongly passed).  A forced, invalid plan may
 * race by construction, and a data race is undefined behaviour in C, so then
 * the data work runs under the lock: the nodes still interleave in any order
 * the deps allow, one at a time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swapadvisor/runner.h"

#define M1 0x9E3779B97F4A7C15ULL
#define M2 0xC2B2AE3D27D4EB4FULL
#define M3 0x165667B19E3779F9ULL
#define SEED_OP 0x5157A9DB1EC5A11DULL
#define SEED_INIT 0x1217A11E5EED0001ULL
#define SEED_INPUT 0x1A9B7C0DE0000002ULL
#define POISON 0xDEADBEEFBADC0FFEULL

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof v); }

/* Every byte counts.  Four independent lanes keep the multiplier busy; each
 * step is a bijection of the lane, so two different words never map a lane to
 * the same state. */
static uint64_t hash_bytes(const uint8_t *p, int64_t n)
{
    uint64_t a = 0x243F6A8885A308D3ULL, b = 0x13198A2E03707344ULL, c = 0xA4093822299F31D0ULL,
             d = 0x082EFA98EC4E6C89ULL;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = rotl((a ^ ld64(p + i)) * M1, 31);
        b = rotl((b ^ ld64(p + i + 8)) * M1, 29);
        c = rotl((c ^ ld64(p + i + 16)) * M1, 27);
        d = rotl((d ^ ld64(p + i + 24)) * M1, 25);
    }
    for (; i + 8 <= n; i += 8)
        a = rotl((a ^ ld64(p + i)) * M2, 31);
    uint64_t tail = 0;
    for (int64_t k = 0; i + k < n; k++)
        tail |= (uint64_t)p[i + k] << (8 * k);
    a = rotl((a ^ tail) * M2, 23);
    return mix64(a ^ rotl(b, 17) ^ rotl(c, 33) ^ rotl(d, 47) ^ (uint64_t)n * M3);
}

/* The pattern of value v: word w holds v ^ (w+1) * M1, so it depends on the
 * position; a partial last word takes the low bytes of the next word. */
static void fill(uint8_t *p, int64_t n, uint64_t v)
{
    int64_t i = 0;
    uint64_t w = 1;
    for (; i + 8 <= n; i += 8, w++)
        st64(p + i, v ^ (w * M1));
    uint64_t last = v ^ (w * M1);
    for (int64_t k = 0; i + k < n; k++)
        p[i + k] = (uint8_t)(last >> (8 * k));
}

static uint64_t init_value(int32_t t) { return mix64(SEED_INIT ^ (uint64_t)t * M2); }
static uint64_t input_value(int32_t t, int it) { return mix64(SEED_INPUT ^ (uint64_t)t * M2 ^ ((uint64_t)it + 1) * M3); }

/* Runs op on buffers at base + use[k] (inputs then outputs); rec gets the
 * inputs' hashes then the outputs' values. */
static void op_exec(const sa_dfg_graph *g, const int64_t *tbytes, int32_t op, int it, uint8_t *base, const int64_t *use,
                    uint64_t *rec)
{
    const sa_dfg_op *o = &g->ops[op];
    uint64_t h = mix64(SEED_OP ^ (uint64_t)op * M1 ^ ((uint64_t)it + 1) * M2);
    for (int32_t j = 0; j < o->n_in; j++) {
        uint64_t x = hash_bytes(base + use[j], tbytes[o->in[j]]);
        rec[j] = x;
        h = mix64(h ^ x ^ ((uint64_t)j + 1) * M3);
    }
    for (int32_t k = 0; k < o->n_out; k++) {
        uint64_t v = mix64(h ^ ((uint64_t)k + 1) * M1);
        fill(base + use[o->n_in + k], tbytes[o->out[k]], v);
        rec[o->n_in + k] = v;
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

typedef struct hrun {
    const sa_plan *p;
    const sa_dfg_graph *g;
    const sa_runner_layout *l;
    uint8_t *arena, *host;
    int it;
    bool serialize;
    bool abort;              /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *done;           /* per node, under mu */
    int32_t *next_dep;       /* per node: first dep not yet seen done (touched by its stream's thread, under mu) */
    int32_t *snodes[SA_PLAN_STREAM_COUNT];
    int32_t nsnodes[SA_PLAN_STREAM_COUNT];
    int32_t *io_off;         /* per compute-stream node: its records in rec (-1 for transfers) */
    int64_t n_io;            /* records per iteration */
    uint64_t *rec;           /* [it * n_io + io_off[node] + k], written by the compute thread */
} hrun;

typedef struct sthr {
    hrun *h;
    int s;
    int64_t moved;
    pthread_t tid;
} sthr;

static void run_node(hrun *h, int32_t n, sthr *me)
{
    const sa_plan_node *nd = &h->p->nodes[n];
    const sa_runner_layout *l = h->l;
    const int64_t *use = l->use + l->use_off[n];
    switch (nd->kind) {
    case SA_PLAN_COMPUTE:
    case SA_PLAN_RECOMPUTE:
        op_exec(h->g, l->tbytes, nd->ref, h->it, h->arena, use, h->rec + (int64_t)h->it * h->n_io + h->io_off[n]);
        break;
    case SA_PLAN_SWAP_IN:
        memcpy(h->arena + use[0], h->host + l->host_off[nd->ref], (size_t)l->tbytes[nd->ref]);
        me->moved += l->tbytes[nd->ref];
        break;
    case SA_PLAN_SWAP_OUT:
        memcpy(h->host + l->host_off[nd->ref], h->arena + use[0], (size_t)l->tbytes[nd->ref]);
        me->moved += l->tbytes[nd->ref];
        break;
    default:
        break;
    }
}

static void *stream_main(void *arg)
{
    sthr *me = arg;
    hrun *h = me->h;
    const sa_plan *p = h->p;
    for (int32_t i = 0; i < h->nsnodes[me->s]; i++) {
        int32_t n = h->snodes[me->s][i];
        const sa_plan_node *nd = &p->nodes[n];
        pthread_mutex_lock(&h->mu);
        for (;;) {
            if (h->abort) {
                pthread_mutex_unlock(&h->mu);
                return NULL;
            }
            while (h->next_dep[n] < nd->n_deps && h->done[p->deps[nd->dep_off + h->next_dep[n]]])
                h->next_dep[n]++;
            if (h->next_dep[n] == nd->n_deps)
                break;
            pthread_cond_wait(&h->cv, &h->mu);
        }
        if (!h->serialize)
            pthread_mutex_unlock(&h->mu);
        run_node(h, n, me);
        if (!h->serialize)
            pthread_mutex_lock(&h->mu);
        h->done[n] = 1;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    return NULL;
}

/* One iteration on three threads; false when a thread could not be started. */
static bool replay_iteration(hrun *h, sthr *thr)
{
    memset(h->done, 0, (size_t)h->p->n_nodes);
    memset(h->next_dep, 0, (size_t)h->p->n_nodes * sizeof *h->next_dep);
    h->abort = false;
    int started = 0;
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++) {
        thr[s].h = h;
        thr[s].s = s;
        if (pthread_create(&thr[s].tid, NULL, stream_main, &thr[s]) != 0)
            break;
        started++;
    }
    if (started < SA_PLAN_STREAM_COUNT) {
        /* the missing stream's nodes never finish: release the others */
        pthread_mutex_lock(&h->mu);
        h->abort = true;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    for (int s = 0; s < started; s++)
        pthread_join(thr[s].tid, NULL);
    return started == SA_PLAN_STREAM_COUNT;
}

/* Lays the poison over the arena except where the residents live. */
static void poison_arena(const sa_plan *p, const sa_runner_layout *l, uint8_t *arena, const int32_t *res_sorted)
{
    int64_t at = 0;
    for (int32_t i = 0; i < p->n_res; i++) {
        int32_t r = res_sorted[i];
        int64_t b = l->res_off[r], e = b + l->tbytes[p->res[r].tensor];
        if (b > at)
            fill(arena + at, b - at, POISON ^ (uint64_t)at);
        if (e > at)
            at = e;
    }
    if (l->arena_bytes > at)
        fill(arena + at, l->arena_bytes - at, POISON ^ (uint64_t)at);
}

static int cmp_res(const void *a, const void *b, void *ctx)
{
    const sa_runner_layout *l = ctx;
    int64_t x = l->res_off[*(const int32_t *)a], y = l->res_off[*(const int32_t *)b];
    return (x > y) - (x < y);
}

static const char *kind_word(sa_plan_kind k) { return k == SA_PLAN_RECOMPUTE ? "recompute" : "compute"; }

/* The reference run: every tensor in its own buffer, the ops in one
 * topological order, no swaps. */
typedef struct href {
    int64_t *off;    /* per tensor: its buffer in buf */
    int64_t bytes;   /* of buf */
    int64_t *op_io;  /* per op: its first record in an iteration's records */
    int64_t n_io;    /* records per iteration */
    int64_t *use;    /* per record: the buffer of the op's input or output */
    uint8_t *buf;
    uint64_t *rec;   /* [it * n_io + op_io[op] + k], as hrun's rec */
} href;

static void href_free(href *r)
{
    free(r->off);
    free(r->op_io);
    free(r->use);
    free(r->buf);
    free(r->rec);
}

/* Lays out and allocates the reference's buffers and records for iters
 * iterations; false when out of memory (r then holds what was allocated). */
static bool href_alloc(href *r, const sa_dfg_graph *g, const sa_runner_layout *l, int iters)
{
    int32_t nt = g->n_tensors;
    r->off = calloc((size_t)nt + 1, sizeof *r->off);
    r->op_io = calloc((size_t)g->n_ops + 1, sizeof *r->op_io);
    if (!r->off || !r->op_io)
        return false;
    for (int32_t t = 0; t < nt; t++) {
        r->off[t] = r->bytes;
        r->bytes += (l->tbytes[t] + 7) / 8 * 8;
    }
    for (int32_t op = 0; op < g->n_ops; op++) {
        r->op_io[op] = r->n_io;
        r->n_io += g->ops[op].n_in + g->ops[op].n_out;
    }
    r->use = malloc(((size_t)r->n_io + 1) * sizeof *r->use);
    if (!r->use)
        return false;
    for (int32_t op = 0; op < g->n_ops; op++)
        for (int32_t k = 0; k < g->ops[op].n_in + g->ops[op].n_out; k++) {
            const sa_dfg_op *x = &g->ops[op];
            r->use[r->op_io[op] + k] = r->off[k < x->n_in ? x->in[k] : x->out[k - x->n_in]];
        }
    r->buf = malloc((size_t)r->bytes + 8);
    r->rec = malloc(((size_t)iters * (size_t)r->n_io + 1) * sizeof *r->rec);
    return r->buf && r->rec;
}

/* Runs the reference: unlimited memory, the ops in order, no swaps. */
static void href_run(href *r, const sa_dfg_graph *g, const sa_runner_layout *l, const int32_t *order, int iters)
{
    for (int32_t t = 0; t < g->n_tensors; t++)
        fill(r->buf + r->off[t], l->tbytes[t], sa_dfg_kind_persistent(g->tensors[t].kind) ? init_value(t) : POISON);
    for (int it = 0; it < iters; it++) {
        for (int32_t t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].kind == SA_DFG_INPUT)
                fill(r->buf + r->off[t], l->tbytes[t], input_value(t, it));
        for (int32_t k = 0; k < g->n_ops; k++) {
            int32_t op = order[k];
            op_exec(g, l->tbytes, op, it, r->buf, r->use + r->op_io[op], r->rec + (int64_t)it * r->n_io + r->op_io[op]);
        }
    }
}

/* Allocates h's per-node arrays and sorts the nodes by stream; ncomp[op]
 * counts op's compute nodes.  False when out of memory (h and *ncomp then
 * hold what was allocated). */
static bool hrun_index_nodes(hrun *h, int32_t **ncomp)
{
    const sa_plan *p = h->p;
    const sa_dfg_graph *g = h->g;
    int32_t nn = p->n_nodes;
    *ncomp = calloc((size_t)g->n_ops + 1, sizeof **ncomp);
    h->done = calloc((size_t)nn + 1, 1);
    h->next_dep = calloc((size_t)nn + 1, sizeof *h->next_dep);
    h->io_off = calloc((size_t)nn + 1, sizeof *h->io_off);
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++)
        h->snodes[s] = calloc((size_t)nn + 1, sizeof *h->snodes[s]);
    if (!*ncomp || !h->done || !h->next_dep || !h->io_off || !h->snodes[0] || !h->snodes[1] || !h->snodes[2])
        return false;
    for (int32_t i = 0; i < nn; i++) {
        const sa_plan_node *nd = &p->nodes[i];
        sa_plan_stream s = sa_plan_kind_stream(nd->kind);
        h->snodes[s][h->nsnodes[s]++] = i;
        h->io_off[i] = -1;
        if (s == SA_PLAN_STREAM_COMPUTE) {
            h->io_off[i] = (int32_t)h->n_io;
            h->n_io += g->ops[nd->ref].n_in + g->ops[nd->ref].n_out;
            if (nd->kind == SA_PLAN_COMPUTE)
                (*ncomp)[nd->ref]++;
        }
    }
    return true;
}

static void hrun_free(hrun *h)
{
    free(h->done);
    free(h->next_dep);
    free(h->io_off);
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++)
        free(h->snodes[s]);
    free(h->rec);
    free(h->arena);
    free(h->host);
}

/* The replay's starting state: poison in the arena but for the residents,
 * which hold their initial values; host copies of persistent tensors that are
 * not resident hold theirs, every other host copy poison.  res_sorted gets the
 * residents by arena offset. */
static void hrun_start_state(hrun *h, int32_t *res_sorted)
{
    const sa_plan *p = h->p;
    const sa_dfg_graph *g = h->g;
    const sa_runner_layout *l = h->l;
    for (int32_t i = 0; i < p->n_res; i++)
        res_sorted[i] = i;
    qsort_r(res_sorted, (size_t)p->n_res, sizeof *res_sorted, cmp_res, (void *)l);
    fill(h->arena, l->arena_bytes, POISON);
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (l->host_off[t] < 0)
            continue;
        bool resident = false;
        for (int32_t i = 0; i < p->n_res; i++)
            resident |= p->res[i].tensor == t;
        /* a resident's only valid copy is on the device */
        bool valid = sa_dfg_kind_persistent(g->tensors[t].kind) && !resident;
        fill(h->host + l->host_off[t], l->tbytes[t], valid ? init_value(t) : POISON);
    }
    for (int32_t i = 0; i < p->n_res; i++)
        fill(h->arena + l->res_off[i], l->tbytes[p->res[i].tensor], init_value(p->res[i].tensor));
}

/* Replays iters iterations on the stream threads, timing each into rep, and
 * the bytes moved per iteration each way.  SA_EINTERNAL when a mutex, a
 * condition variable or a thread cannot be created. */
static sa_status hrun_iterations(hrun *h, int iters, const int32_t *res_sorted, sa_runner_report *rep, sa_err *err)
{
    const sa_dfg_graph *g = h->g;
    const sa_runner_layout *l = h->l;
    if (pthread_mutex_init(&h->mu, NULL) != 0)
        return sa_fail(err, SA_EINTERNAL, "host replay: cannot create a mutex");
    if (pthread_cond_init(&h->cv, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        return sa_fail(err, SA_EINTERNAL, "host replay: cannot create a condition variable");
    }
    sa_status st = SA_OK;
    sthr thr[SA_PLAN_STREAM_COUNT];
    memset(thr, 0, sizeof thr);
    for (int it = 0; it < iters && !st; it++) {
        for (int32_t t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].kind == SA_DFG_INPUT && l->host_off[t] >= 0)
                fill(h->host + l->host_off[t], l->tbytes[t], input_value(t, it));
        if (it > 0)
            poison_arena(h->p, l, h->arena, res_sorted); /* only the residents survive an iteration */
        h->it = it;
        double t0 = now_us();
        if (!replay_iteration(h, thr))
            st = sa_fail(err, SA_EINTERNAL, "host replay: cannot start the stream threads");
        else
            rep->iter_us[it] = now_us() - t0;
    }
    if (!st) {
        rep->h2d_bytes = thr[SA_PLAN_STREAM_H2D].moved / iters;
        rep->d2h_bytes = thr[SA_PLAN_STREAM_D2H].moved / iters;
    }
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    return st;
}

/* Every compute and recompute node of every iteration read and wrote what
 * the reference's op did; SA_EVERIFY names the first difference in replay
 * order (or an op that no compute node runs). */
static sa_status verify_records(const hrun *h, const href *r, const int32_t *ncomp, int iters, sa_err *err)
{
    const sa_plan *p = h->p;
    const sa_dfg_graph *g = h->g;
    for (int32_t op = 0; op < g->n_ops; op++)
        if (ncomp[op] == 0)
            return sa_fail(err, SA_EVERIFY, "verification failed: op %d (\"%s\") has no compute node, so its "
                           "outputs were never written", op, g->ops[op].name);
    for (int it = 0; it < iters; it++)
        for (int32_t i = 0; i < h->nsnodes[SA_PLAN_STREAM_COMPUTE]; i++) {
            int32_t n = h->snodes[SA_PLAN_STREAM_COMPUTE][i], op = p->nodes[n].ref;
            const sa_dfg_op *x = &g->ops[op];
            const uint64_t *a = h->rec + (int64_t)it * h->n_io + h->io_off[n];
            const uint64_t *b = r->rec + (int64_t)it * r->n_io + r->op_io[op];
            for (int32_t k = 0; k < x->n_in + x->n_out; k++) {
                if (a[k] == b[k])
                    continue;
                int32_t t = k < x->n_in ? x->in[k] : x->out[k - x->n_in];
                return sa_fail(err, SA_EVERIFY, "verification failed: tensor %d (\"%s\") differs from the "
                               "reference: iteration %d, nodes[%d] (%s of op %d \"%s\") %s it with contents that "
                               "were lost or corrupted", t, g->tensors[t].name, it + 1, n,
                               kind_word(p->nodes[n].kind), op, x->name, k < x->n_in ? "read" : "wrote");
            }
        }
    return SA_OK;
}

/* Every persistent tensor ends with the reference's bytes: residents in the
 * arena, the others in their host copy.  SA_EVERIFY names the first that
 * does not. */
static sa_status verify_persistent(const hrun *h, const href *r, int iters, sa_err *err)
{
    const sa_plan *p = h->p;
    const sa_dfg_graph *g = h->g;
    const sa_runner_layout *l = h->l;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        if (!sa_dfg_kind_persistent(g->tensors[t].kind))
            continue;
        int32_t res = -1;
        for (int32_t i = 0; i < p->n_res && res < 0; i++)
            if (p->res[i].tensor == t)
                res = i;
        const uint8_t *got = res >= 0 ? h->arena + l->res_off[res] : h->host + l->host_off[t];
        if (memcmp(got, r->buf + r->off[t], (size_t)l->tbytes[t]) != 0)
            return sa_fail(err, SA_EVERIFY, "verification failed: tensor %d (\"%s\") differs from the reference "
                           "after %d iterations (read back from the %s)", t, g->tensors[t].name, iters,
                           res >= 0 ? "device: it is resident" : "host copy");
    }
    return SA_OK;
}

/* The report's counts of what was verified; false when out of memory. */
static bool count_verified(const hrun *h, int iters, sa_runner_report *rep)
{
    const sa_dfg_graph *g = h->g;
    bool *seen = calloc((size_t)g->n_tensors + 1, sizeof *seen);
    if (!seen)
        return false;
    for (int32_t op = 0; op < g->n_ops; op++)
        for (int32_t k = 0; k < g->ops[op].n_out; k++)
            seen[g->ops[op].out[k]] = true;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        bool pers = sa_dfg_kind_persistent(g->tensors[t].kind);
        rep->verified_persistent += pers;
        rep->verified_tensors += seen[t] || pers;
    }
    free(seen);
    rep->verified_checksums = (int64_t)iters * h->n_io;
    return true;
}

sa_status sa_runner_host_replay(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_layout *l, const sa_runner_opts *o,
                             sa_runner_report *rep, sa_err *err)
{
    sa_status st = SA_OK;
    int iters = o->iterations > 0 ? o->iterations : 2;
    hrun h;
    memset(&h, 0, sizeof h);
    h.p = p;
    h.g = g;
    h.l = l;
    h.serialize = !rep->valid;
    href r;
    memset(&r, 0, sizeof r);
    int32_t *ncomp = NULL, *res_sorted = NULL;
    bool ok = hrun_index_nodes(&h, &ncomp) && href_alloc(&r, g, l, iters);
    if (ok) {
        h.rec = calloc((size_t)iters * (size_t)h.n_io + 1, sizeof *h.rec);
        h.arena = malloc((size_t)l->arena_bytes + 8);
        h.host = malloc((size_t)l->host_bytes + 8);
        res_sorted = malloc(((size_t)p->n_res + 1) * sizeof *res_sorted);
        ok = h.rec && h.arena && h.host && res_sorted;
    }
    if (ok) {
        /* any topological order gives the same contents; take the plan's */
        bool plan_order = p->n_schedule == g->n_ops && sa_dfg_is_topological(g, p->schedule);
        href_run(&r, g, l, plan_order ? p->schedule : g->topo, iters);
        hrun_start_state(&h, res_sorted);
        st = hrun_iterations(&h, iters, res_sorted, rep, err);
        if (!st)
            st = verify_records(&h, &r, ncomp, iters, err);
        if (!st)
            st = verify_persistent(&h, &r, iters, err);
        if (!st)
            ok = count_verified(&h, iters, rep);
    }
    if (!ok)
        st = sa_fail(err, SA_ENOMEM, "host replay: out of memory (arena %lld bytes, host copies %lld bytes; a "
                     "larger byte scale needs less)", (long long)l->arena_bytes, (long long)l->host_bytes);
    href_free(&r);
    hrun_free(&h);
    free(ncomp);
    free(res_sorted);
    return st;
}
