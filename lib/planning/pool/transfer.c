/* transfer.c - evictions as plan nodes: a tensor leaves by a swap-out only when
 * its host copy is stale (else it is dropped after its last reader), and an
 * object is emptied of every tenant.  Swap-ins and the deps of a node that
 * writes an object, on the hot path, are walk.h's inline helpers. */
#include "planning/pool/walk.h"

/* Evicts tensor v: a swap-out when the host copy is stale, otherwise a drop
 * once its last reader is done; a drop too when v is rebuilt at its next use
 * (redrop). */
sa_status swp_evict_tensor(ctx *c, int32_t v)
{
    swp_ws *w = c->w;
    int32_t end;
    if (!w->host_valid[v] && w->last_use_node[v] >= 0 && swp_redrop(c, v)) {
        end = w->last_use_node[v];
        w->gone[v] = 1;
    } else if (w->host_valid[v] && w->last_use_node[v] >= 0) {
        end = w->last_use_node[v];
    } else {
        int32_t deps[2], nd = 0;
        if (w->last_use_node[v] >= 0)
            deps[nd++] = w->last_use_node[v];
        if (c->o->on_demand && c->demand_node >= 0 && c->demand_node != w->last_use_node[v])
            deps[nd++] = c->demand_node;
        end = add_node(c, SA_PLAN_SWAP_OUT, v, deps, nd);
        if (end < 0)
            return swp_oom(c);
        w->host_valid[v] = 1;
        w->host_ready[v] = end;
    }
    if (w->s_obj[v] >= 0 && w->last_use_pos[v] < 0)
        w->wasted[v] = 1; /* resident at start but gone before its first use */
    return close_placement(c, v, end);
}

/* Empties object o: every tenant leaves. */
sa_status swp_evict(ctx *c, int32_t o)
{
    sa_status st = SA_OK;
    while (c->w->occ[o] >= 0 && !(st = swp_evict_tensor(c, c->w->occ[o])))
        ;
    return st;
}
