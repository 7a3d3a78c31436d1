/* optimal_internal.h - what the optimal planner's files share: the decision
 * space (the candidates, their windows and the persistent tensors' gaps, built
 * by optimal.c) and the MILP over it (optimal_milp.c).  Internal to
 * lib/policies. */
#ifndef SA_OPTIMAL_INTERNAL_H
#define SA_OPTIMAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/milp.h"
#include "swapadvisor/sa_common.h"

/* What the MILP knows of one candidate tensor. */
typedef struct ocand {
    int32_t t;
    int32_t first, last;     /* resident span when kept */
    int32_t s_from, s_to;    /* positions a swap frees it over its gap (inclusive; s_from > s_to: never) */
    int32_t l_from, l_to;    /* the same with the late swap-in (decide.h's dec_opts.late; l_to -1: not open) */
    int32_t s2_from, s2_to;  /* a persistent tensor's further windows (either swap): before its first */
    int32_t s3_from, s3_to;  /* use and after its last use (the late swap: from l3_from) */
    int32_t l3_from;
    int32_t l2_to;           /* the late swap's head: 0 .. l2_to (-1: the hidden swap's head) */
    bool l_open;             /* the late swap is open */
    bool late_tail;          /* it frees the tail from l3_from */
    bool pers;               /* a parameter or state: s and l are its boundary swaps, its gaps are ogaps */
    int32_t r_from, r_to;    /* positions a recompute frees it */
    int32_t next_use;        /* where a recompute runs (just before it) */
    int64_t r_in;            /* bytes of the producer's other inputs a recompute needs there */
    int64_t r_ext;           /* of those, the bytes of inputs dead before next_use: decide.h keeps them */
    int32_t r_ext_from;      /* from the earliest of their deaths on (their bytes all counted from there) */
    int32_t s_col, l_col, r_col; /* columns (swap, late swap, recompute), -1 when the action is not open */
    double h, d, rc;         /* h2d us, d2h us (0 for inputs), recompute us */
    double sh, sd, sb;       /* a swap's h2d us, d2h us and bytes over both directions, all transfers */
    double lh, lsb, stall;   /* the late swap's h2d us and bytes, and the compute stream's estimated wait */
} ocand;

/* A gap of a persistent candidate: dropped after the use at reader slot
 * `slot`, swapped in again where the compute covers it (y: free from .. y_to)
 * or when the op before the next use ends (z: free from .. z_to). */
typedef struct ogap {
    int32_t cand, slot, from, y_to, z_to;
    int32_t y_col, z_col;
    double h, b;
} ogap;

typedef struct octx {
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    const int32_t *sch;
    int32_t n;
    int32_t *pos;
    double *tstart;          /* tstart[i] = sum of op times before position i */
    ocand *c;
    int32_t nc;
    int64_t *base;           /* bytes resident at each position whatever the decisions */
    ogap *gp;                /* the persistent candidates' gaps */
    int32_t ngp;
    int32_t *slot_scratch;
    int32_t nslots;
    double compute_us, forced_h, forced_bytes, r_comb;
} octx;

/* The MILP for memory cap mem over o's candidates (optimal_milp.c): minimize
 * T + eps * (moved time) subject to the memory at each position and T over
 * each resource.  *out is the caller's (sa_milp_free).  SA_ENOMEM. */
sa_status opt_build_milp(octx *o, int64_t mem, sa_milp **out, sa_err *err);

#endif
