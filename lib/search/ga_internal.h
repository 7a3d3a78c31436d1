/* ga_internal.h - what the genetic search's files share: the individual,
 * the per-thread scratch, the search context, and the schedule and
 * allocation operators of ga_ops.c (crossover and mutation).  Internal to
 * lib/search/: not installed, not stable.  The operators allocate nothing:
 * they work in the caller's per-thread scratch (tws) and cannot fail. */
#ifndef SA_GA_INTERNAL_H
#define SA_GA_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/ga.h"
#include "swapadvisor/pool.h"
#include "swapadvisor/rng.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/swp.h"

enum { ORIGIN_NONE = -1, ORIGIN_RULE = -2, ORIGIN_POOL_RULE = -3 };

/* decision changes tried per best-fit child, each with probability 1/2: most
 * single changes make a feasible child slower or unfit, so a few per child
 * search better than many (docs/benchmarks.md has the figures) */
enum { GA_DECISION_TRIES = 4 };

/* Best fit's timing gene: the low two bits index GA_OUT_SYNC (dec_opts.out_sync:
 * 0 timed, else the op that many positions after the swap-out's issue waits for
 * it), timing / 4 GA_PREFETCH (dec_opts.prefetch: 0 where the compute covers
 * the swap-in, else that many ops ahead).  0 and 1 are the timed and
 * synchronous swap-outs with the covering swap-in; the others combine the
 * values the baselines fall back to in little memory (adaptive.c, hybrid.c),
 * so that their plans' decisions fit in the search as in their own plans.  A
 * mutation flips bit 0 (timed and synchronous; 4 and 16 ops). */
static const int32_t GA_OUT_SYNC[] = {0, 1, 4, 16};
static const int32_t GA_PREFETCH[] = {0, 8, 4, 3, 2, 1};
enum { GA_TIMINGS = 4 * 6 };
_Static_assert(sizeof GA_OUT_SYNC / sizeof GA_OUT_SYNC[0] == 4 &&
                   GA_TIMINGS == 4 * sizeof GA_PREFETCH / sizeof GA_PREFETCH[0],
               "GA_TIMINGS covers both tables");
static inline void gx_timing(dec_opts *d, uint8_t timing)
{
    d->out_sync = GA_OUT_SYNC[timing & 3];
    d->prefetch = GA_PREFETCH[timing >> 2];
}

/* The j-th timing a search of the fastest timing tries, from timing first (0,
 * or 1 where timing 0 is known not to fit): 0, 1, then from the latest back,
 * the values the baselines' plans fall back to in little memory coming first. */
static inline uint8_t gx_timing_try(int32_t j, int32_t first)
{
    int32_t k = j + first;
    return (uint8_t)(k <= 1 ? k : GA_TIMINGS + 1 - k);
}

typedef struct indiv {
    int32_t *sch;
    pool_alloc a;
    uint8_t layout;  /* planner_layout: PLANNER_POOL plans with a, PLANNER_BESTFIT with act */
    uint8_t *act;    /* dec_action per tensor (n_tensors + 1) */
    uint8_t timing;  /* best fit's swap timing (GA_TIMINGS values, gx_timing) */
    int32_t origin;  /* the seed its layout and decisions descend from; ORIGIN_NONE (topo or random),
                      * ORIGIN_RULE (the cost rule's individual) */
    double t;        /* simulated iteration time; HUGE_VAL when infeasible */
} indiv;

/* Per-thread scratch: allocated once, reused for every child. */
typedef struct tws {
    swp_ws *swp;
    sa_sim_ws *sim;
    pack_ws *pack;   /* best fit's packing */
    sa_plan *p;
    int32_t *need, *demand, *ext1, *ext2, *ext, *sum, *num;
    int32_t *mark, *heap, *hpos, *indeg, *rank, *tmp;
    uint8_t *rc;      /* a pool individual's recompute flags (sa_ga_opts.pool_recompute) */
    int32_t *rpos;    /* swp_recompute_rule's scratch */
    int64_t effort;   /* the planner's effort (planner_req.effort) of this thread's evaluations */
} tws;

typedef struct gctx {
    const sa_dfg_graph *g;
    const sa_dfg_device *dev;
    const sa_ga_opts *o;
    swp_opts so;
    int32_t n;       /* ops */
    int32_t ns;      /* distinct sizes */
    bool split;      /* no fixed-object pool fits: pools rely on splitting objects */
    bool joint;      /* seeds given: layout and decision genes evolve too */
    dec_opts dec;    /* the best-fit layout's packing; its timing is each individual's gene (gx_timing) */
    int32_t *cand;   /* tensors whose decision genes may change (activations, gradients) */
    int32_t n_cand;
} gctx;

void gx_walk_schedule(const gctx *c, tws *w, rng *r, const int32_t *base, double p, int32_t *out);
void gx_cross_schedule(const gctx *c, tws *w, const int32_t *head, const int32_t *tail, int32_t cr,
                           int32_t *out);
void gx_cross_alloc(tws *w, const pool_alloc *head, const pool_alloc *tail, int32_t cr, pool_alloc *out);
void gx_mutate_alloc(const gctx *c, tws *w, rng *r, pool_alloc *a);
void gx_joint_genes(const gctx *c, int gen, int32_t j, const indiv *head, const indiv *tail, indiv *kid);
/* N_p as the search runs it: sa_ga_opts.population, at least 2, rounded up to even. */
int32_t gx_population(int population);

/* ga_eval.c: a thread's scratch for c (false on OOM; gx_tws_free frees what
 * was made); x's fitness, x->t = the simulated iteration time, or HUGE_VAL
 * when x cannot run in the memory (no pool repair fits, or the planner
 * refuses: SA_EINFEASIBLE), SA_OK then, SA_ENOMEM or SA_EINTERNAL (err says
 * why) end the search; a pool individual's recompute flags (ga.h,
 * pool_recompute) in w->rc.  deadline_s > 0 (sa_now_s()'s clock) stops the
 * planner part-way past it: x is then unplanned too and *cut is set. */
bool gx_tws_init(tws *w, const gctx *c);
/* The planner effort of the evaluations in ws[0 .. threads) so far. */
static inline int64_t gx_effort(const tws *ws, int threads)
{
    int64_t e = 0;
    for (int i = 0; i < threads; i++)
        e += ws[i].effort;
    return e;
}
void gx_tws_free(tws *w);
/* ga_first.c: the first generation's individuals (x allocated by the caller).
 * A random individual: random topological order, random monotone CLS, CNT
 * filling memory in proportion to demand; SA_ENOMEM. */
sa_status gx_random_indiv(const gctx *c, tws *w, rng *r, const indiv *seed0, indiv *x, sa_err *err);
/* From seed k (ga.h); pool genes from base.  SA_EINTERNAL for a seed that is
 * not a plan of this graph; SA_ENOMEM. */
sa_status gx_seed_indiv(const gctx *c, tws *w, int32_t k, const indiv *base, indiv *x, sa_err *err);
/* The cost rule's best-fit individual and the recompute rule's pool one. */
sa_status gx_rule_indiv(const gctx *c, const indiv *base, indiv *x, sa_err *err);
sa_status gx_pool_rule_indiv(const gctx *c, const indiv *base, indiv *x, sa_err *err);
/* qsort_r's order of indices into the individuals ctx: by time, then index
 * (so that ties resolve alike whatever the thread count). */
int gx_cmp_time(const void *a, const void *b, void *ctx);
/* The fastest seed (ga.h): its index, or -1 when none has a finite time. */
int32_t gx_best_seed(const sa_ga_opts *o);
/* Generation 0's twins (ga.h): pop[1 .. n_seeds] are the seeds' individuals
 * (the rules' after them have none), pop[from .. np) the random ones,
 * twins[0 .. n_seeds) allocated individuals to build in, est, eerr and order
 * scratch of as many. */
typedef struct gx_twin_job {
    indiv *pop, *twins;
    int32_t from, np;
    tws *ws;
    int threads;
    double deadline_s;   /* > 0: no evaluation starts past it (sa_now_s()'s clock)... */
    bool *cut;           /* ...and one it skips or stops sets *cut */
    sa_status *est;
    sa_err *eerr;
    int32_t *order;
} gx_twin_job;
/* Each seed's individual in the other layout (a best-fit twin at the
 * fastest of its first timings, the lowest on a tie, as many as the fill's
 * cap allows over the pool individuals, at least one, at most all; a pool
 * twin keeps its seed's timing gene); the twins faster than every individual
 * of pop, fastest first (ties: the earlier seed), take the random
 * individuals' places, as many as there are.  *entered: those;
 * *evaluations: the plans tried.  SA_ENOMEM or an evaluation's error (the
 * first in seed order, whatever the threads): pop is then unchanged. */
sa_status gx_seed_twins(const gctx *c, const gx_twin_job *job, int32_t *entered, int64_t *evaluations, sa_err *err);
sa_status gx_evaluate(const gctx *c, tws *w, indiv *x, double deadline_s, bool *cut, sa_err *err);
/* x's first n timings from first (gx_timing_try's order) evaluated, x left at
 * the fastest (the lowest timing on a tie; the first tried where none plans);
 * the same at any thread count.  No evaluation starts past deadline_s (> 0),
 * and one it skips or stops sets *cut (atomically: threads share it) and ends
 * the tries.  *tries counts the plans evaluated.  An evaluation's error (err
 * says why): x is then half-tried. */
sa_status gx_fastest_timing(const gctx *c, tws *w, indiv *x, int32_t first, int32_t n, double deadline_s, bool *cut,
                            int64_t *tries, sa_err *err);
const uint8_t *gx_pool_flags(const gctx *c, const tws *w, const indiv *x);

/* ga_fill.c: the best-fit individual x's swapped, recomputed or evicted
 * tensors, costliest first, each set back to DEC_KEEP, and a swapped one to
 * DEC_RECOMPUTE or a recomputed one to DEC_SWAP, where the plan still fits
 * and gets strictly faster (x->act and x->t change in place; at most
 * GA_FILL_TRIES tries, and at most GA_FILL_WORK / ops (GA_FILL_AUTO_WORK / ops
 * under the default effort), but GA_FILL_BATCH,
 * so that the fill's time grows no faster than one plan's); tries run GA_FILL_BATCH at a time on threads
 * workspaces ws[0 .. threads), the result the same for any thread count.
 * Stops at deadline_s (> 0).  *kept and *switched count the changes made
 * (to DEC_KEEP, to the other way of leaving), *tried the plans tried.  A
 * pool individual or an unplanned one is left alone.
 * SA_ENOMEM or an evaluation's error (err says why): x is then unchanged
 * but for the changes already made, each of which gained. */
enum { GA_FILL_TRIES = 512, GA_FILL_BATCH = 8, GA_FILL_BATCH_MIN = 2, GA_FILL_WORK = 512 * 4096 };
/* ...and under the default effort and --generations 0 at most GA_FILL_AUTO_WORK
 * / ops: half, which changes only graphs past 2,048 ops (nasnet-25's 15k: at
 * most 70 tries of 80-120 ms each instead of 140; a 100,000-op chain: 10) */
enum { GA_FILL_AUTO_WORK = 256 * 4096 };
/* The fill's cap on plans tried on c's graph (before its candidates' count):
 * the above's work over the graph's ops, within GA_FILL_BATCH .. GA_FILL_TRIES. */
int32_t gx_fill_cap(const gctx *c);
sa_status gx_fill_memory(const gctx *c, tws *ws, int threads, indiv *x, double deadline_s, int32_t *kept,
                         int32_t *switched, int32_t *tried, sa_err *err);
/* What gx_fill_end did: the filled individual fastest after its fill (-1:
 * none was filled), how many were filled and that one's place among them
 * (0: the best parent; its time before and after are each_from[rank] and
 * each_to[rank]), its changes kept and switched, the plans tried by all the
 * fills, and each fill's individual's time before and after it and its
 * planner effort, in the order they ran. */
typedef struct gx_end_fill {
    int32_t best, filled, rank, kept, switched, tried;
    double each_from[SA_GA_END_FILLS], each_to[SA_GA_END_FILLS];
    int64_t each_effort[SA_GA_END_FILLS];
} gx_end_fill;
/* ga_fill.c: the end fills (ga.h, SA_GA_END_FILLS): gx_fill_memory on the
 * best best-fit individual of pop[0 .. np), then on the next ones, best
 * first and distinct in time (of equal times the lowest index only), while
 * the fills have cost under SA_GA_END_FILL_SHARE of budget (the planner
 * effort the generations spent); the first stops at deadline_s (> 0), the
 * others half-way to it from the call.
 * The filled individuals change in place.  Errors as gx_fill_memory's
 * (r->tried then counts every try, the rest of *r the fills that ended). */
sa_status gx_fill_end(const gctx *c, tws *ws, int threads, indiv *pop, int32_t np, double budget, double deadline_s,
                      gx_end_fill *r, sa_err *err);
/* ga_fill.c: the pool individual x's object counts, memory moved between
 * every ordered pair of its size classes (16 objects of the larger class's
 * size, halved after a pass over the pairs without a gain, down to 1), each
 * move kept where the plan gets strictly faster (x->a and x->t change in
 * place; at most twice gx_fill_cap's plans; tries
 * as gx_fill_memory's, the result the same for any thread count), stopped at
 * deadline_s (> 0); and its member of the search block (",\"pool_fill\":{...}":
 * the moves kept, the plans tried, x's time before and after, their planner
 * effort and wall time) in json[0 .. cap).  A best-fit or unplanned x is left
 * alone, json "".  SA_ENOMEM or an evaluation's error (err says why): x then
 * holds the moves already made, each of which gained. */
sa_status gx_fill_pool_json(const gctx *c, tws *ws, int threads, indiv *x, double deadline_s, char *json, size_t cap,
                            sa_err *err);
/* The most tries gx_fill_memory makes on c's graph (its cap, or two a
 * candidate). */
int32_t gx_fill_most(const gctx *c);

/* ga_genome.c: an individual's arrays for c's graph, unplanned (false on
 * OOM: gx_indiv_free frees what was made). */
bool gx_indiv_init(indiv *x, const gctx *c);
void gx_indiv_free(indiv *x);

/* The genes of a genome, in order (ga_genome.c holds their table). */
enum { GENE_SCHEDULE, GENE_LAYOUT, GENE_TIMING, GENE_ORIGIN, GENE_CLASSES, GENE_CLS, GENE_CNT, GENE_ACT, GENE_COUNT };

/* x as sa_ga_genome_words words at w, and back; the check of a genome's form
 * (any origin from -3 up), pos n_ops words of scratch. */
void gx_genome_export(const gctx *c, const indiv *x, int32_t *w);
void gx_genome_import(const gctx *c, const int32_t *w, indiv *x);
sa_status gx_genome_check(const sa_dfg_graph *g, const int32_t *w, int32_t *pos, sa_err *err);

#endif
