/* dtr_emit.c - a run of dtr.c's simulated DTR runtime as a plan: its
 * events (ops run, rebuilds, tensors leaving the device) replayed into
 * nodes and placements. */
#include "swapadvisor/plan.h"
#include "dtr_internal.h"

/* The node that writes or reads the tensors of op (compute or recompute):
 * deps on the swap-ins of the inputs it reads (the compute stream orders the
 * rest); its inputs' last user becomes the node.  -1 on out of memory. */
static int32_t emit_node(dtr *d, sa_plan *q, sa_plan_kind kind, int32_t op)
{
    const sa_dfg_op *o = &d->g->ops[op];
    int32_t nd = 0;
    int32_t *deps = d->deps;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t s = d->src[o->use[k]];
        if (d->pbeg[o->use[k]] != -2 && s >= 0 && q->nodes[s].kind == SA_PLAN_SWAP_IN)
            deps[nd++] = s;
    }
    int32_t v = sa_plan_add_node(q, kind, op, deps, nd);
    for (int32_t k = 0; v >= 0 && k < o->n_in; k++)
        d->luser[o->in[k]] = v;
    return v;
}

static bool open_place(dtr *d, int32_t t, int32_t v)
{
    d->pbeg[t] = d->luser[t] = d->src[t] = v;
    return true;
}

static bool close_place(dtr *d, sa_plan *q, int32_t t)
{
    bool ok = sa_plan_add_placement(q, t, 0, d->pbeg[t], d->luser[t]);
    d->pbeg[t] = -2;
    return ok;
}

sa_status dtr_emit(rctx *r, dtr *d, sa_plan *q, dec_stats *ds)
{
    const sa_dfg_graph *g = r->g;
    bool ok = true;
    for (int32_t t = 0; t < g->n_tensors; t++) {
        d->pbeg[t] = -2;
        d->src[t] = -1;
        if (g->tensors[t].producer < 0 && !sa_dfg_kind_persistent(g->tensors[t].kind)) {
            int32_t v = sa_plan_add_node(q, SA_PLAN_SWAP_IN, t, NULL, 0);
            ok = ok && v >= 0 && open_place(d, t, v);
        }
    }
    for (int64_t e = 0; ok && e < d->n_ev; e++) {
        int32_t ref = d->ev_ref[e];
        if (d->ev_kind[e] == EV_OUT) {
            ok = close_place(d, q, ref);
            continue;
        }
        bool re = d->ev_kind[e] == EV_REBUILD;
        int32_t op = re ? g->tensors[ref].producer : ref;
        int32_t v = emit_node(d, q, re ? SA_PLAN_RECOMPUTE : SA_PLAN_COMPUTE, op);
        ok = v >= 0;
        const sa_dfg_op *o = &g->ops[op];
        for (int32_t k = 0; ok && k < o->n_out; k++) {
            int32_t u = o->out[k];
            if (sa_dfg_kind_persistent(g->tensors[u].kind))
                continue;
            if (d->pbeg[u] != -2)
                d->luser[u] = v; /* resident: the same contents written again */
            else if (!re || u == ref)
                ok = open_place(d, u, v);
            else
                ok = sa_plan_add_placement(q, u, 0, v, v); /* scratch for this run only */
        }
        if (re) {
            ds->n_recompute_nodes++;
            ds->n_recomputed += !d->mark[ref];
            ds->recomputed_bytes += d->mark[ref] ? 0 : g->tensors[ref].bytes;
            d->mark[ref] = 1;
        }
    }
    for (int32_t t = 0; ok && t < g->n_tensors; t++) {
        if (sa_dfg_kind_persistent(g->tensors[t].kind))
            ok = sa_plan_add_placement(q, t, 0, -1, -1) && sa_plan_add_resident(q, t, 0);
        else if (d->pbeg[t] != -2)
            ok = close_place(d, q, t);
    }
    if (!ok || !sa_plan_set_schedule(q, g->topo, g->n_ops))
        return bl_oom(r);
    return SA_OK;
}

