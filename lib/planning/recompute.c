/* recompute.c - the recompute rules both layouts share (recompute.h): whether a
 * tensor's producer may be re-run at a position, the gap it may leave the device
 * over, and the default cost rule; a tensor one layout may recompute the other
 * may too, since neither has rules of its own. */
#include "swapadvisor/recompute.h"

#include "swapadvisor/plan.h"

bool dec_recomputable(const sa_dfg_graph *g, int32_t t)
{
    int32_t op = g->tensors[t].producer;
    if (op < 0)
        return false;
    for (int32_t k = 0; k < g->ops[op].n_out; k++)
        if (sa_dfg_kind_persistent(g->tensors[g->ops[op].out[k]].kind))
            return false; /* the validator forbids re-running an in-place update */
    return true;
}

bool dec_recompute_ok(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t next_use)
{
    if (!dec_recomputable(g, t))
        return false;
    const sa_dfg_op *po = &g->ops[g->tensors[t].producer];
    for (int32_t k = 0; k < po->n_in; k++) {
        int32_t u = g->tensors[po->in[k]].updater;
        if (sa_dfg_kind_persistent(g->tensors[po->in[k]].kind) && u >= 0 && pos[u] <= next_use)
            return false; /* it would read the updated value */
    }
    return true;
}

void dec_gap(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t *last_fwd, int32_t *next_use)
{
    const sa_dfg_tensor *x = &g->tensors[t];
    int32_t lf = -1;
    if (x->producer >= 0 && g->ops[x->producer].phase == SA_DFG_FORWARD)
        lf = pos[x->producer];
    for (int32_t k = 0; k < x->n_readers; k++) {
        int32_t op = g->readers[x->reader_off + k];
        if (g->ops[op].phase == SA_DFG_FORWARD && pos[op] > lf)
            lf = pos[op];
    }
    int32_t nx = -1;
    if (lf >= 0)
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t p = pos[g->readers[x->reader_off + k]];
            if (p > lf && (nx < 0 || p < nx))
                nx = p;
        }
    *last_fwd = lf;
    *next_use = nx;
}

void dec_gap_longest(const sa_dfg_graph *g, const int32_t *pos, const double *tstart, int32_t t, int32_t *before,
                     int32_t *after)
{
    const sa_dfg_tensor *x = &g->tensors[t];
    *before = *after = -1;
    if (sa_dfg_kind_persistent(x->kind) || x->kind == SA_DFG_WORKSPACE || x->producer < 0 ||
        g->ops[x->producer].phase == SA_DFG_FORWARD)
        return;
    /* for each use q, the nearest use after it: the readers are few, so the
     * quadratic walk costs less than sorting them; past DEC_GAP_READERS
     * readers only the gap after the producer is looked at */
    double best = 0;
    int32_t p = pos[x->producer], nq = x->n_readers <= DEC_GAP_READERS ? x->n_readers : 0;
    for (int32_t k = -1; k < nq; k++) {
        int32_t q = k < 0 ? p : pos[g->readers[x->reader_off + k]], nx = -1;
        for (int32_t j = 0; j < x->n_readers; j++) {
            int32_t r = pos[g->readers[x->reader_off + j]];
            if (r > q && (nx < 0 || r < nx))
                nx = r;
        }
        if (nx < q + 2)
            continue; /* no op between: nothing to leave the device over */
        double span = tstart[nx] - tstart[q + 1];
        if (*before < 0 || span > best || (span == best && q < *before)) {
            best = span;
            *before = q;
            *after = nx;
        }
    }
}

/* Whether the default rule may rebuild t at position p (swp_recompute_rule):
 * a forward activation whose producer may be re-run then and takes at most
 * us_per_mb per MB of t, whose non-persistent inputs are live at p or may
 * be rebuilt in turn (flagged in out), depth links deep at most; *cost
 * receives the chain's compute time. */
static bool rule_ok(const sa_dfg_graph *g, const int32_t *pos, double us_per_mb, int32_t t, int32_t p, int depth,
                    double *cost, uint8_t *out)
{
    const sa_dfg_tensor *x = &g->tensors[t];
    if (depth > SWP_RECOMPUTE_CHAIN_MAX || x->kind != SA_DFG_ACTIVATION || x->producer < 0 ||
        g->ops[x->producer].phase != SA_DFG_FORWARD)
        return false;
    const sa_dfg_op *po = &g->ops[x->producer];
    double tu = po->time_us > 0 ? po->time_us : 0;
    if (tu > us_per_mb * ((double)x->bytes / 1e6) || !dec_recompute_ok(g, pos, t, p))
        return false; /* the cheap test first: neither has side effects */
    *cost += tu;
    for (int32_t j = 0; j < po->n_in; j++) {
        int32_t u = po->in[j], first, last;
        if (sa_dfg_kind_persistent(g->tensors[u].kind) || (sa_dfg_tensor_span(g, pos, u, &first, &last) && last >= p))
            continue; /* there anyway */
        if (!rule_ok(g, pos, us_per_mb, u, p, depth + 1, cost, out))
            return false;
        out[u] = 1; /* an intermediate of the chain */
    }
    return true;
}

int32_t swp_recompute_rule(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double us_per_mb,
                           int32_t *pos, uint8_t *out)
{
    const int32_t *sch = schedule ? schedule : g->topo;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        pos[sch[i]] = i;
    for (int32_t t = 0; t < g->n_tensors; t++)
        out[t] = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        int32_t lf, nx, po = g->tensors[t].producer;
        double cost = 0;
        if (g->tensors[t].kind != SA_DFG_ACTIVATION || po < 0 || g->ops[po].phase != SA_DFG_FORWARD)
            continue; /* rule_ok refuses it at once */
        double tu = g->ops[po].time_us > 0 ? g->ops[po].time_us : 0;
        if (tu > us_per_mb * ((double)g->tensors[t].bytes / 1e6))
            continue; /* so does its cost test, whatever the gap */
        dec_gap(g, pos, t, &lf, &nx);
        if (lf < 0 || nx < 0 || !rule_ok(g, pos, us_per_mb, t, nx, 1, &cost, out))
            continue;
        int64_t b = g->tensors[t].bytes;
        if (cost < recompute_round_trip_us(dev, b)) {
            out[t] = 1;
            n++;
        }
    }
    return n;
}

int32_t swp_recompute_intermediates(const sa_dfg_graph *g, const int32_t *pos, uint8_t *out)
{
    int32_t n = 0;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        const sa_dfg_tensor *x = &g->tensors[t];
        int32_t p = x->producer;
        if (out[t] || x->kind != SA_DFG_ACTIVATION || p < 0 || g->ops[p].phase != SA_DFG_FORWARD)
            continue;
        /* dec_gap's last forward use lf (>= the producer's position) and
         * whether some use follows it, in one walk over the readers */
        int32_t lf = pos[p], last = -1;
        for (int32_t k = 0; k < x->n_readers; k++) {
            int32_t op = g->readers[x->reader_off + k], q = pos[op];
            if (g->ops[op].phase == SA_DFG_FORWARD && q > lf)
                lf = q;
            if (q > last)
                last = q;
        }
        if (last <= lf) {
            out[t] = 1;
            n++;
        }
    }
    return n;
}
