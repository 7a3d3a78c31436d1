/* dtr_internal.h - the state of dtr.c's simulated DTR runtime, shared with
 * dtr_emit.c, which replays a run's events as a plan.  Internal to
 * lib/policies/: not installed, not stable.  Every array is owned by the dtr
 * (dtr.c's dtr_alloc and dtr_free). */
#ifndef SA_DTR_INTERNAL_H
#define SA_DTR_INTERNAL_H

#include "swapadvisor/decide.h"
#include "baselines_internal.h"

enum { DTR_STEPS = 100, DTR_DEPTH_MAX = 4096 };
enum { T_NEW = 0, T_RES, T_EVICTED, T_DEAD };

typedef struct dtr {
    const sa_dfg_graph *g;
    const int32_t *pos;
    int64_t budget, used;
    double clock;       /* the sum of the op and rebuild times run so far (us) */
    int32_t cur;        /* the program position of the op being run */
    uint8_t *state;     /* T_* per tensor */
    uint8_t *can;       /* a forward activation recompute.h lets us rebuild */
    uint8_t *ever;      /* rebuilt at least once */
    int32_t *lock;      /* > 0: in use by the op or a rebuild under way */
    int32_t *rem;       /* readers (compute nodes) still to run */
    int32_t *last;      /* the program position of the last reader (-1: none) */
    double *touch;      /* the clock of the last access */
    int32_t *uf;        /* union-find parent over evicted tensors (-1: never evicted) */
    double *ucost;      /* a class root's summed compute cost */
    int32_t *res;       /* the resident evictable tensors, res[0 .. n_res) */
    int32_t *ridx;      /* t's index in res, or -1 */
    int32_t n_res;
    int32_t *stack;     /* rebuilds under way (frames) */
    int32_t *dfs;       /* pin_chain's walk (each tensor once) */
    int32_t *hbase;     /* a frame's first entry in hold */
    int32_t *hold;      /* the locks taken for frames and the op being run */
    int32_t n_hold;
    int32_t *opheld;    /* the position of the op that holds t (-1: none) */
    int32_t *keep;      /* not freed before this position (pin_chain; -1: none) */
    int32_t *kept;      /* the tensors pin_chain kept, freed once past it: kept[0 .. n_kept) */
    int32_t n_kept;
    int32_t *gyes;      /* gettable's memo: the latest position t is known gettable at (-1: none) */
    int32_t *gno;       /* ... the earliest it is known not to be (INT32_MAX: none) */
    int32_t *gepoch;    /* ... valid while epoch holds: it moves when a tensor gettable may need
                         * without rebuilding it (not recomputable) leaves the device */
    int32_t epoch;
    int32_t *mark;      /* a stamp per tensor: the neighbour classes already counted */
    int32_t stamp;
    int32_t n_evict, n_remat;
    double remat_us;
    int32_t fail_op;    /* the op whose needs did not fit (-1: none) */
    /* the run's events, replayed into the plan: EV_* in ev_kind, an op or tensor in ev_ref */
    uint8_t *ev_kind;
    int32_t *ev_ref;
    int64_t n_ev, cap_ev;
    bool oom;           /* an event could not be recorded */
    double deadline_s;  /* sa_now_s() past which a run stops (0: none) */
    bool cut;           /* the run stopped at the deadline */
    double scans_max;   /* > 0: the resident scans all runs may make (sa_policy_opts.rule_work_max) */
    double scans;       /* resident scans made so far (each eviction scans every resident) */
    bool over;          /* the runs stopped at scans_max */
    int32_t *pbeg;      /* the plan: the node that opened t's placement (-2: none open) */
    int32_t *luser;     /* ... the last node that used t */
    int32_t *src;       /* ... the node that made t valid */
    int32_t *deps;      /* a node's deps (the most tensors an op uses) */
    void *own[32];      /* the arrays above (dtr_free frees them) */
    int n_own;
} dtr;

enum { EV_COMPUTE, EV_REBUILD, EV_OUT };

/* Replays d's run as the plan q: the inputs swapped in at the start,
 * parameters and state resident all iteration, a compute node per op and a
 * recompute node per rebuild, one placement per stay on the device; counts
 * the rebuilds into ds.  SA_ENOMEM (through r) leaves q part-built. */
sa_status dtr_emit(rctx *r, dtr *d, sa_plan *q, dec_stats *ds);

#endif
