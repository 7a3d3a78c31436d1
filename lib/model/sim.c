/* sim.c - discrete-event simulation of the three streams with fluid duplex sharing. */
#include "swapadvisor/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sa_sim_ws {
    int32_t cap;
    double *start, *end;
    int32_t *next_dep;  /* per node: index of the first dep not yet seen finished */
    int32_t *queue[SA_PLAN_STREAM_COUNT];
    int32_t qlen[SA_PLAN_STREAM_COUNT];
    unsigned char *done;
};

sa_sim_ws *sa_sim_ws_new(void) { return calloc(1, sizeof(sa_sim_ws)); }

void sa_sim_ws_free(sa_sim_ws *ws)
{
    if (!ws)
        return;
    free(ws->start);
    free(ws->end);
    free(ws->next_dep);
    free(ws->done);
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++)
        free(ws->queue[s]);
    free(ws);
}

const double *sa_sim_start(const sa_sim_ws *ws) { return ws->start; }
const double *sa_sim_end(const sa_sim_ws *ws) { return ws->end; }

static bool ws_reserve(sa_sim_ws *ws, int32_t n)
{
    if (n <= ws->cap)
        return true;
    int32_t nc = ws->cap ? ws->cap : 256;
    while (nc < n)
        nc *= 2;
    double *s = realloc(ws->start, (size_t)nc * sizeof *s);
    if (s) ws->start = s;
    double *e = realloc(ws->end, (size_t)nc * sizeof *e);
    if (e) ws->end = e;
    int32_t *d = realloc(ws->next_dep, (size_t)nc * sizeof *d);
    if (d) ws->next_dep = d;
    unsigned char *dn = realloc(ws->done, (size_t)nc);
    if (dn) ws->done = dn;
    bool ok = s && e && d && dn;
    for (int k = 0; k < SA_PLAN_STREAM_COUNT; k++) {
        int32_t *q = realloc(ws->queue[k], (size_t)nc * sizeof *q);
        if (q) ws->queue[k] = q;
        ok = ok && q;
    }
    if (ok)
        ws->cap = nc;
    return ok;
}

double sa_sim_transfer_alone_us(const sa_dfg_device *dev, int64_t bytes, sa_plan_stream s)
{
    double rate = s == SA_PLAN_STREAM_H2D ? dev->h2d_bytes_per_s : dev->d2h_bytes_per_s;
    return dev->transfer_latency_us + (double)bytes / rate * 1e6;
}

/* A transfer in flight: it is in its latency phase until lat_end, then moves
 * `left` bytes at the rate the other direction allows. */
typedef struct xfer {
    int32_t node;   /* -1 when the stream is idle */
    double lat_end;
    double left;    /* bytes */
    double crumbs;  /* bytes left that count as done: SIM_EPS (1 + its bytes) */
} xfer;

/* Relative slack for "has this finished by now": times are sums of many terms. */
#define SIM_EPS 1e-9

/* fmin(a, b) for the event times, inline: a is never NaN, and a NaN b
 * leaves a, as fmin does; no time is -0. */
static inline double min_time(double a, double b) { return b < a ? b : a; }

/* Transfer x's part of the next event: its latency's end, or when it is
 * moving (at rate) its finish, which *fin receives. */
static inline __attribute__((always_inline)) double xfer_next(const xfer *x, bool moving, double rate, double now,
                                                              double next, double *fin)
{
    if (!moving)
        return min_time(next, x->lat_end);
    *fin = now + x->left / rate;
    return min_time(next, *fin);
}

/* A moving transfer is done when its own end was the event (exact even when
 * now is so large that now + left / rate rounds to now) or when rounding left
 * crumbs: its node ends at now and its stream goes idle. */
static inline __attribute__((always_inline)) void xfer_retire(xfer *x, double fin, double now, int32_t *running,
                                                              double *t_end, unsigned char *done, int32_t *finished)
{
    if (fin > now && x->left > x->crumbs)
        return;
    t_end[x->node] = now;
    done[x->node] = 1;
    *running = -1;
    x->node = -1;
    (*finished)++;
}

sa_status sa_sim_run(const sa_plan *p, const sa_dfg_graph *g, sa_sim_ws *ws, sa_sim_result *out, sa_err *err)
{
    int32_t n = p->n_nodes;
    memset(out, 0, sizeof *out);
    if (!ws_reserve(ws, n))
        return sa_fail(err, SA_ENOMEM, "out of memory simulating %d nodes", n);
    const sa_dfg_device *dev = &p->device;
    double rate_alone[SA_PLAN_STREAM_COUNT] = {0, dev->h2d_bytes_per_s * 1e-6, dev->d2h_bytes_per_s * 1e-6};
    double rate_shared[SA_PLAN_STREAM_COUNT] = {0, fmin(rate_alone[1], dev->duplex_bytes_per_s * 0.5e-6),
                                             fmin(rate_alone[2], dev->duplex_bytes_per_s * 0.5e-6)};
    for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++)
        ws->qlen[s] = 0;
    for (int32_t i = 0; i < n; i++) {
        sa_plan_stream s = sa_plan_kind_stream(p->nodes[i].kind);
        ws->queue[s][ws->qlen[s]++] = i;
        ws->next_dep[i] = 0;
        ws->done[i] = 0;
        ws->start[i] = ws->end[i] = -1;
    }
    int32_t head[SA_PLAN_STREAM_COUNT] = {0, 0, 0};
    int32_t running[SA_PLAN_STREAM_COUNT] = {-1, -1, -1};
    double comp_end = 0;
    xfer xf[SA_PLAN_STREAM_COUNT] = {{-1, 0, 0, 0}, {-1, 0, 0, 0}, {-1, 0, 0, 0}};
    double now = 0, busy = 0;
    int32_t finished = 0;
    /* the loop's arrays in locals: its stores could alias them for all the
     * compiler knows */
    const sa_plan_node *nodes = p->nodes;
    const int32_t *pdeps = p->deps;
    unsigned char *done = ws->done;
    int32_t *next_dep = ws->next_dep;
    double *t_start = ws->start, *t_end = ws->end;
    /* the dep a stream's head was last found waiting for (-1: none yet):
     * until that one is done, the head stays where it is */
    int32_t wait[SA_PLAN_STREAM_COUNT] = {-1, -1, -1};
    while (finished < n) {
        /* start every stream head whose deps are done */
        for (int s = 0; s < SA_PLAN_STREAM_COUNT; s++) {
            if (running[s] >= 0 || head[s] >= ws->qlen[s] || (wait[s] >= 0 && !done[wait[s]]))
                continue;
            int32_t v = ws->queue[s][head[s]];
            const sa_plan_node *nd = &nodes[v];
            /* indexed, not pdeps + dep_off: a plan without deps has pdeps NULL */
            int32_t k = next_dep[v], nk = nd->n_deps, off = nd->dep_off;
            while (k < nk && done[pdeps[off + k]])
                k++;
            next_dep[v] = k;
            if (k < nk) {
                wait[s] = pdeps[off + k];
                continue;
            }
            wait[s] = -1;
            running[s] = v;
            head[s]++;
            t_start[v] = now;
            if (s == SA_PLAN_STREAM_COMPUTE) {
                double d = g->ops[nd->ref].time_us;
                comp_end = now + (d > 0 ? d : 0);
                busy += comp_end - now;
                if (nd->kind == SA_PLAN_RECOMPUTE)
                    out->n_recompute++;
            } else {
                int64_t bytes = g->tensors[nd->ref].bytes;
                xf[s] = (xfer){v, now + dev->transfer_latency_us, (double)bytes,
                               SIM_EPS * (1.0 + (double)bytes)};
                if (s == SA_PLAN_STREAM_H2D) {
                    out->h2d_bytes = sa_add_sat(out->h2d_bytes, bytes);
                    out->n_swap_in++;
                } else {
                    out->d2h_bytes = sa_add_sat(out->d2h_bytes, bytes);
                    out->n_swap_out++;
                }
            }
        }
        /* the next event: a compute end, a latency end, or a transfer end
         * (the two transfer streams written out; min_time is fmin here) */
        double next = running[SA_PLAN_STREAM_COMPUTE] >= 0 ? comp_end : (double)INFINITY;
        bool mv1 = running[1] >= 0 && xf[1].lat_end <= now, mv2 = running[2] >= 0 && xf[2].lat_end <= now;
        double rate1 = mv2 ? rate_shared[1] : rate_alone[1], rate2 = mv1 ? rate_shared[2] : rate_alone[2];
        double fin1 = 0, fin2 = 0;
        if (running[1] >= 0)
            next = xfer_next(&xf[1], mv1, rate1, now, next, &fin1);
        if (running[2] >= 0)
            next = xfer_next(&xf[2], mv2, rate2, now, next, &fin2);
        if (!isfinite(next)) {
            int32_t stuck = -1;
            for (int s = 0; s < SA_PLAN_STREAM_COUNT && stuck < 0; s++)
                if (head[s] < ws->qlen[s])
                    stuck = ws->queue[s][head[s]];
            if (stuck < 0)
                return sa_fail(err, SA_EINVALID, "the simulated time does not advance past %g us (a time too large "
                               "to simulate)", now);
            return sa_fail(err, SA_EINVALID, "nodes[%d] (%s) can never start: its deps wait on a later node of "
                           "its own stream (a dependency cycle)", stuck, sa_plan_kind_name(nodes[stuck].kind));
        }
        double dt = next - now;
        now = next;
        if (mv1)
            xf[1].left -= rate1 * dt;
        if (mv2)
            xf[2].left -= rate2 * dt;
        /* retire what ended */
        if (running[SA_PLAN_STREAM_COMPUTE] >= 0 && comp_end <= now) {
            int32_t v = running[SA_PLAN_STREAM_COMPUTE];
            t_end[v] = comp_end;
            done[v] = 1;
            running[SA_PLAN_STREAM_COMPUTE] = -1;
            finished++;
        }
        if (mv1)
            xfer_retire(&xf[1], fin1, now, &running[1], t_end, done, &finished);
        if (mv2)
            xfer_retire(&xf[2], fin2, now, &running[2], t_end, done, &finished);
    }
    double makespan = 0;
    for (int32_t i = 0; i < n; i++)
        if (ws->end[i] > makespan)
            makespan = ws->end[i];
    out->makespan_us = makespan;
    out->compute_us = busy;
    out->stall_us = makespan - busy;
    return SA_OK;
}
