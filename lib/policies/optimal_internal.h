/* optimal_internal.h - what the optimal planner's files share: the decision
 * space (the candidates, their windows and the persistent tensors' gaps, built
 * by optimal.c), the MILP over it (optimal_milp.c) and the refinement of its
 * decisions against the simulator (optimal_refine.c).  Internal to
 * lib/policies. */
#ifndef SA_OPTIMAL_INTERNAL_H
#define SA_OPTIMAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/milp.h"
#include "swapadvisor/plan.h"
#include "policies_internal.h"
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
    int32_t gp_first, gp_n;  /* pers: its gaps, gp[gp_first ..] */
    int32_t e_to;            /* pers, resident at the boundary and off over its gaps: its first gap's memory
                              * is held from there to e_to (the swap-out) */
    double e_d;              /* that swap-out's d2h us */
    int32_t r_from, r_to;    /* positions a recompute frees it */
    int32_t next_use;        /* where a recompute runs (just before it) */
    int64_t r_in;            /* bytes of the producer's other inputs a recompute needs there */
    int64_t r_ext;           /* of those, the bytes of inputs dead before next_use: decide.h keeps them */
    int32_t r_ext_from;      /* from the earliest of their deaths on (their bytes all counted from there) */
    int32_t s_col, l_col, r_col, e_col; /* columns (swap, late swap, recompute, OPT_GAPS), -1 when the
                                         * action is not open */
    double h, d, rc;         /* h2d us, d2h us (0 for inputs), recompute us */
    double sh, sd, sb;       /* a swap's h2d us, d2h us and bytes over both directions, all transfers */
    double lh, lsb, stall;   /* the late swap's h2d us and bytes, and the compute stream's estimated wait */
    double s_stall;          /* pers: the hidden swap's wait at the iteration's start; > 0 also opens OPT_GAPS */
    bool w_open;             /* OPT_WAITS: the waited swap-out is open (it frees earlier than the others) */
    int32_t w_from, w_to;    /* the positions it frees the tensor: from the op after its last use, which
                              * waits for the swap-out, to the op before its next use, which the
                              * swap-in (issued when that op ends) makes wait */
    int32_t w_early;         /* the last position it frees the tensor at before the other swaps do */
    int32_t w_col;           /* its column, -1 when not open */
    double w_stall;          /* the compute stream's wait: the swap-out's d2h, then the swap-in's h2d */
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
    uint8_t *interm;         /* OPT_CHAINS, else NULL: per tensor, an intermediate (a forward activation no
                              * later op reads) whose producer may be re-run: rebuilt by a chain of
                              * recomputes where a recompute reads it */
    int32_t n_chained;       /* candidates whose recompute rebuilds one (0: chains change nothing) */
    int32_t n_gaps;          /* persistent candidates offered OPT_GAPS */
    int32_t n_waits;         /* OPT_WAITS: the waited swap-outs the last model opened (add_wait_cols) */
    bool near;               /* OPT_NEAR */
} octx;

/* A decision space: OPT_WIDEN, decide.h's widened one (parameters, state
 * and their gradients may leave); OPT_CHAINS, a recompute whose producer
 * reads an intermediate that died before it (a forward activation no later
 * op reads) rebuilds it by a chain of recomputes, priced so by the model,
 * instead of keeping it alive until then; OPT_NO_GAPS, no OPT_GAPS offered
 * (and the waits that offer it not priced): the space a second time where
 * none of its plans with them fitted; OPT_PUMP, the same model solved with
 * CBC's feasibility pump under an effort limit (without one the pump is
 * always on): another near-optimal solution, which the refinement may carry
 * further (run_optimal); OPT_WAITS (with OPT_WIDEN), a non-persistent
 * candidate may also be swapped out with the op after its last use waiting
 * for it (OPT_WAIT): it frees its memory for that op, which no other action
 * does where the ops after the last use are shorter than the swap-out;
 * OPT_NEAR (with OPT_WAITS), the waited swap-outs open at the positions
 * within OPT_NEAR_FRAC of the cap of the other columns' reach too
 * (add_wait_cols). */
enum { OPT_WIDEN = 1, OPT_CHAINS = 2, OPT_NO_GAPS = 4, OPT_PUMP = 8, OPT_WAITS = 16, OPT_NEAR = 32 };
#define OPT_NEAR_FRAC 0.1

/* Builds o (zeroed first; the caller's, opt_free_ctx, whatever the status)
 * for schedule sch and the OPT_ flags of space (optimal_space.c).  SA_ENOMEM,
 * or a graph the space cannot describe (err says why). */
sa_status opt_build_ctx(octx *o, const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *sch, unsigned space,
                        sa_err *err);
void opt_free_ctx(octx *o);

/* The MILP for memory cap mem over o's candidates (optimal_milp.c): minimize
 * T + eps * (moved time) subject to the memory at each position and T over
 * each resource; with sums the memory rows are running sums (the same model,
 * O(window ends) coefficients instead of up to positions x candidates).  *out
 * is the caller's (sa_milp_free).  SA_ENOMEM. */
sa_status opt_build_milp(octx *o, int64_t mem, bool sums, sa_milp **out, sa_err *err);
/* Past this many positions x candidates the optimal rows build with sums:
 * resnet-50's and gpt-12-768's models (about 4e5) keep the direct rows, which
 * solve as fast there and stop on the solutions the tables measured;
 * inception-4's, wresnet-152-10's and densenet121's (3.4 to 3.7e6) take the
 * sums, whose solves are up to ten times faster there (docs/bound.md). */
#define OPT_SUM_CELLS 1.0e6

/* The actions a candidate may take: keep, swap (the swap-in where the
 * compute covers it), swap with the late swap-in, recompute; a persistent
 * one, on the device at the boundary and off it over the gaps it drops
 * (decide.h's DEC_EVICT on a param); with OPT_WAITS, swap with the op after
 * the last use waiting for the swap-out and the late swap-in. */
enum { OPT_KEEP, OPT_SWAP, OPT_LATE, OPT_RECOMPUTE, OPT_GAPS, OPT_WAIT, OPT_NACTIONS };

/* decide.h's per-tensor arrays (act, late, sync_at), its per-reader-slot
 * drop, and each candidate's chosen action; all the caller's. */
typedef struct odec {
    uint8_t *act, *late, *drop, *chosen;
    int32_t *sync_at;
} odec;

/* Which op waits for a swapped candidate's swap-out: the one before the
 * position the model frees it at (opt_set_action), the one decide.h picks
 * without sync_at (sync_at 0: its estimate from the d2h link's queue, or the
 * next op for a late tensor), the last op (a write-back after the last use
 * then runs beside the ops after it; a tensor swapped in again has its
 * memory freed at that swap-in anyway), or one or two ops after the
 * model's.  The refinement tries a value only where it moves sync_at. */
enum { OPT_SYNC_MODEL, OPT_SYNC_LINK, OPT_SYNC_END, OPT_SYNC_NEXT, OPT_SYNC_NEXT2, OPT_NSYNC };

/* The decisions of a solution r: act, late and sync_at per tensor, drop per
 * reader slot (decide.h's dec_opts), all rewritten; chosen[k] = candidate k's
 * action. */
void opt_take_solution(const octx *o, const sa_milp_result *r, uint8_t *act, uint8_t *late, int32_t *sync_at,
                       uint8_t *drop, uint8_t *chosen);

/* Sets c's entries of act, late and sync_at to action a (an OPT_ value). */
void opt_set_action(const ocand *c, int a, uint8_t *act, uint8_t *late, int32_t *sync_at);

/* Where a refinement stands: the plans it tried, the sweep, key and value it
 * goes on from (whether that sweep changed a decision), and whether the
 * sweeps have ended.  Zeroed: not begun. */
typedef struct orefine {
    int32_t evals;
    int sweep;
    int32_t i;
    int v;
    bool changed, done;
} orefine;

/* The refinement's cap on plans for pc: SA_POLICY_REFINE_EFFORT_PLANS under
 * its effort limit, else 8,000, or optimal.refine_plans; at most 5e6 / ops. */
int32_t opt_refine_cap(const sa_policy_call *pc);

/* The refinement: the MILP prices transfers by their totals and stalls by an
 * estimate, so its decisions d (whose plan is *p, fitting the memory, with
 * stats *ds) are improved against the simulator.  Sweeps over the decisions
 * (every candidate's action, every gap's drop, every pair's exchange, and in
 * the widened space the op that waits for each swap-out), largest tensor
 * first, try each other open value and keep the first one whose plan fits
 * the memory and simulates strictly faster.  Goes on from *at (updated):
 * the sweeps end after one without a change or after 4 (at->done); it stops
 * when at->evals reaches cap (a later call with a higher cap goes on where
 * it stopped, as if it had not) or at stop_s (> 0, on sa_now_s()'s clock:
 * *cut is then set).  Tries run up to eight at a time on threads, the first
 * that gains in order taken: the result is the same for any thread count,
 * and without stop_s it depends on the inputs only.  *p and *ds are
 * replaced by each better plan (the old one freed), d holds its decisions.
 * Returns SA_OK, or SA_ENOMEM / SA_EINTERNAL (err says why; *p and d then
 * hold the best plan found so far and its decisions); a try that
 * planner_plan refuses otherwise is not taken. */
sa_status opt_refine(const sa_policy_call *pc, const octx *o, const int32_t *sch, const dec_opts *dop, odec *d,
                     double stop_s, int32_t cap, orefine *at, sa_plan **p, dec_stats *ds, bool *cut, sa_err *err);

#endif
