/*
 * bound_internal.h - the model the bounds share (bound.c, bound_lp.c): per
 * tensor, when its absence from the device costs something and what it costs
 * on each resource; per schedule position, the bytes over memory.
 *
 * Ownership: bnd_build fills a bnd_model whose arrays it owns (bnd_free);
 * on failure nothing is left allocated.  sch points at the caller's schedule
 * (or g->topo) and must outlive the model.
 */
#ifndef SA_BOUND_INTERNAL_H
#define SA_BOUND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_common.h"

typedef enum bnd_class {
    BND_NONE = 0,  /* its absence never costs (workspace, unread, untouched) */
    BND_TRANSIENT, /* activation / gradient: swap out + in, or recompute */
    BND_INPUT,     /* fed from the host: a second swap-in */
    BND_PERSIST    /* parameter / state: a swap-in (+ a swap-out once updated) */
} bnd_class;

typedef struct bnd_model {
    int32_t n, nt;
    const int32_t *sch;
    int32_t *pos;          /* pos[op] = schedule position */
    uint8_t *cls;          /* bnd_class per tensor */
    int32_t *from, *to;    /* alive across positions from < i < to */
    double *h, *d, *x;     /* h2d us, d2h us, duplex-link us of clearing it by swapping */
    int32_t *rec_op;       /* producer a recompute may re-run, -1 */
    int32_t *use_mark;     /* use_mark[t] == i + 1: op at position i uses t (bnd_mark) */
    int64_t *base_bytes;   /* bytes of the op's own tensors */
    int64_t *excess;       /* own + alive - memory (may be <= 0) */
    int64_t max_excess;
    double compute_us;     /* sum of op times */
    double forced_h_us;    /* one swap-in per input read */
    double forced_bytes;   /* their bytes */
    double r_comb;         /* bytes / us both directions together move at most */
    double start_us;
    double boundary_us;    /* compute + the windows between ops (docs/bound.md) */
} bnd_model;

sa_status bnd_build(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, bnd_model *m, sa_err *err);
void bnd_free(bnd_model *m);

/* Op p's time, an absent one (< 0) as 0. */
static inline double bnd_op_time(const sa_dfg_graph *g, int32_t p)
{
    return g->ops[p].time_us > 0 ? g->ops[p].time_us : 0;
}

/* Marks the tensors of the op at position i (bnd_alive reads the marks). */
static inline void bnd_mark(bnd_model *m, const sa_dfg_graph *g, int32_t i)
{
    const sa_dfg_op *op = &g->ops[m->sch[i]];
    for (int32_t k = 0; k < op->n_use; k++)
        m->use_mark[op->use[k]] = i + 1;
}

/* Is t alive across position i (its absence there costs), given bnd_mark(i)? */
static inline bool bnd_alive(const bnd_model *m, int32_t t, int32_t i)
{
    if (m->cls[t] == BND_NONE || m->use_mark[t] == i + 1)
        return false;
    return m->cls[t] == BND_PERSIST || (m->from[t] < i && i < m->to[t]);
}

#endif
