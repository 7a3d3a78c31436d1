/* sim.c - discrete-event simulation of the three streams with fluid duplex sharing. */
#include "swapadvisor/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sim_ws {
    int32_t cap;
    double *start, *end;
    int32_t *next_dep;  /* per node: index of the first dep not yet seen finished */
    int32_t *queue[PLAN_STREAM_COUNT];
    int32_t qlen[PLAN_STREAM_COUNT];
    unsigned char *done;
};

sim_ws *sim_ws_new(void) { return calloc(1, sizeof(sim_ws)); }

void sim_ws_free(sim_ws *ws)
{
    if (!ws)
        return;
    free(ws->start);
    free(ws->end);
    free(ws->next_dep);
    free(ws->done);
    for (int s = 0; s < PLAN_STREAM_COUNT; s++)
        free(ws->queue[s]);
    free(ws);
}

const double *sim_start(const sim_ws *ws) { return ws->start; }
const double *sim_end(const sim_ws *ws) { return ws->end; }

static bool ws_reserve(sim_ws *ws, int32_t n)
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
    for (int k = 0; k < PLAN_STREAM_COUNT; k++) {
        int32_t *q = realloc(ws->queue[k], (size_t)nc * sizeof *q);
        if (q) ws->queue[k] = q;
        ok = ok && q;
    }
    if (ok)
        ws->cap = nc;
    return ok;
}

double sim_transfer_alone_us(const dfg_device *dev, int64_t bytes, plan_stream s)
{
    double rate = s == PLAN_STREAM_H2D ? dev->h2d_bytes_per_s : dev->d2h_bytes_per_s;
    return dev->transfer_latency_us + (double)bytes / rate * 1e6;
}

/* A transfer in flight: it is in its latency phase until lat_end, then moves
 * `left` bytes at the rate the other direction allows. */
typedef struct xfer {
    int32_t node;   /* -1 when the stream is idle */
    double lat_end;
    double left;    /* bytes */
} xfer;

/* Relative slack for "has this finished by now": times are sums of many terms. */
#define SIM_EPS 1e-9

sa_status sim_run(const plan *p, const dfg_graph *g, sim_ws *ws, sim_result *out, sa_err *err)
{
    int32_t n = p->n_nodes;
    memset(out, 0, sizeof *out);
    if (!ws_reserve(ws, n))
        return sa_fail(err, SA_ENOMEM, "out of memory simulating %d nodes", n);
    const dfg_device *dev = &p->device;
    double rate_alone[PLAN_STREAM_COUNT] = {0, dev->h2d_bytes_per_s * 1e-6, dev->d2h_bytes_per_s * 1e-6};
    double rate_shared[PLAN_STREAM_COUNT] = {0, fmin(rate_alone[1], dev->duplex_bytes_per_s * 0.5e-6),
                                             fmin(rate_alone[2], dev->duplex_bytes_per_s * 0.5e-6)};
    for (int s = 0; s < PLAN_STREAM_COUNT; s++)
        ws->qlen[s] = 0;
    for (int32_t i = 0; i < n; i++) {
        plan_stream s = plan_kind_stream(p->nodes[i].kind);
        ws->queue[s][ws->qlen[s]++] = i;
        ws->next_dep[i] = 0;
        ws->done[i] = 0;
        ws->start[i] = ws->end[i] = -1;
    }
    int32_t head[PLAN_STREAM_COUNT] = {0, 0, 0};
    int32_t running[PLAN_STREAM_COUNT] = {-1, -1, -1};
    double comp_end = 0;
    xfer xf[PLAN_STREAM_COUNT] = {{-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};
    double now = 0, busy = 0;
    int32_t finished = 0;
    while (finished < n) {
        /* start every stream head whose deps are done */
        for (int s = 0; s < PLAN_STREAM_COUNT; s++) {
            if (running[s] >= 0 || head[s] >= ws->qlen[s])
                continue;
            int32_t v = ws->queue[s][head[s]];
            const plan_node *nd = &p->nodes[v];
            int32_t k = ws->next_dep[v];
            while (k < nd->n_deps && ws->done[p->deps[nd->dep_off + k]])
                k++;
            ws->next_dep[v] = k;
            if (k < nd->n_deps)
                continue;
            running[s] = v;
            head[s]++;
            ws->start[v] = now;
            if (s == PLAN_STREAM_COMPUTE) {
                double d = g->ops[nd->ref].time_us;
                comp_end = now + (d > 0 ? d : 0);
                busy += comp_end - now;
                if (nd->kind == PLAN_RECOMPUTE)
                    out->n_recompute++;
            } else {
                int64_t bytes = g->tensors[nd->ref].bytes;
                xf[s] = (xfer){v, now + dev->transfer_latency_us, (double)bytes};
                if (s == PLAN_STREAM_H2D) {
                    out->h2d_bytes = sa_add_sat(out->h2d_bytes, bytes);
                    out->n_swap_in++;
                } else {
                    out->d2h_bytes = sa_add_sat(out->d2h_bytes, bytes);
                    out->n_swap_out++;
                }
            }
        }
        /* the next event: a compute end, a latency end, or a transfer end */
        double next = INFINITY;
        if (running[PLAN_STREAM_COMPUTE] >= 0)
            next = comp_end;
        bool moving[PLAN_STREAM_COUNT] = {false, false, false};
        for (int s = 1; s < PLAN_STREAM_COUNT; s++)
            moving[s] = running[s] >= 0 && xf[s].lat_end <= now;
        double rate[PLAN_STREAM_COUNT] = {0, 0, 0}, fin[PLAN_STREAM_COUNT] = {0, 0, 0};
        for (int s = 1; s < PLAN_STREAM_COUNT; s++) {
            if (running[s] < 0)
                continue;
            if (!moving[s]) {
                next = fmin(next, xf[s].lat_end);
                continue;
            }
            rate[s] = moving[3 - s] ? rate_shared[s] : rate_alone[s];
            fin[s] = now + xf[s].left / rate[s];
            next = fmin(next, fin[s]);
        }
        if (!isfinite(next)) {
            int32_t stuck = -1;
            for (int s = 0; s < PLAN_STREAM_COUNT && stuck < 0; s++)
                if (head[s] < ws->qlen[s])
                    stuck = ws->queue[s][head[s]];
            if (stuck < 0)
                return sa_fail(err, SA_EINVALID, "the simulated time does not advance past %g us (a time too large "
                               "to simulate)", now);
            return sa_fail(err, SA_EINVALID, "nodes[%d] (%s) can never start: its deps wait on a later node of "
                           "its own stream (a dependency cycle)", stuck, plan_kind_name(p->nodes[stuck].kind));
        }
        double dt = next - now;
        now = next;
        for (int s = 1; s < PLAN_STREAM_COUNT; s++)
            if (moving[s])
                xf[s].left -= rate[s] * dt;
        /* retire what ended */
        if (running[PLAN_STREAM_COMPUTE] >= 0 && comp_end <= now) {
            int32_t v = running[PLAN_STREAM_COMPUTE];
            ws->end[v] = comp_end;
            ws->done[v] = 1;
            running[PLAN_STREAM_COMPUTE] = -1;
            finished++;
        }
        for (int s = 1; s < PLAN_STREAM_COUNT; s++) {
            /* done when its own end was the event (exact even when now is so large
             * that now + left / rate rounds to now) or when rounding left crumbs */
            if (!moving[s] ||
                (fin[s] > now && xf[s].left > SIM_EPS * (1.0 + (double)g->tensors[p->nodes[xf[s].node].ref].bytes)))
                continue;
            int32_t v = xf[s].node;
            ws->end[v] = now;
            ws->done[v] = 1;
            running[s] = -1;
            xf[s].node = -1;
            finished++;
        }
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
