/*
 * ga.h - SwapAdvisor's genetic search over (schedule, CLS, CNT) (paper section 5).
 *
 * Each generation pairs the parents, crosses every pair over into two
 * schedules and two allocations (4 children), mutates the children, plans and
 * simulates them in parallel (OpenMP, one workspace per thread, a random stream
 * per child so the result does not depend on the thread count), and keeps N_p
 * survivors drawn by softmax over t_norm = (T_best - t) / T_best at the
 * temperature sa_ga_temperature gives (the best is always kept).  Every
 * individual is planned and simulated by the planner core (planner.h, the
 * size-class pool layout).  Children the memory cannot hold (the core answers
 * SA_EINFEASIBLE) score +infinity and die out; out of memory and internal
 * errors end the search as errors.
 *
 * Joint search.  An individual is (schedule, layout, pool,
 * decisions): its layout gene picks the planner core's size-class pool
 * (planned by Belady eviction in its pool genes CLS / CNT) or best fit (its
 * per-tensor keep / swap / recompute genes, laid out by SmartPool's best
 * fit, with the swap timing of its timing gene: 24 values, see the genome
 * below).  Children take the layout, timing, pool and decisions of their
 * allocation parent, crossed with the other parent's at a random point and
 * mutated (a timing change and a layout flip with probability P each, up to
 * four decisions changed, each to keep, swap, recompute or evict: the cost
 * rule of decide.h picks swap or recompute).  The best parent of the other
 * layout survives each generation beside the overall best (the search
 * block's "layout_best_us" gives each layout's fastest last parent).
 *
 * Seeds.  The caller may hand in plans of other policies for the same graph
 * and memory (sa_ga_opts.seeds; the swapadvisor policy row passes every other
 * row's).  Each becomes an individual of the first generation: its schedule
 * and, in the best-fit layout, the decisions its plan carries out (swapped:
 * it has a swap_out; recomputed: a placement begins at a recompute node);
 * a seed made with the pool layout (sa_ga_seed.pool) stays a pool individual
 * with the topo individual's pool genes.  The cost rule's individual (every
 * forward activation DEC_EVICT, best fit) joins them.  A best-fit one that
 * does not fit with timing 0 takes the fastest timing that fits (the search
 * block's "retimed" counts them), as the baselines' own plans fall back to
 * synchronous swap-outs and late swap-ins.  Each seed's individual also gets
 * a twin in the other layout (a best-fit twin at the fastest of its first
 * timings); a twin faster than every individual of the generation takes a
 * random individual's place, the fastest first ("twins" counts them): a pool
 * seed's decisions packed by best fit can beat every seed's own individual.
 * After the last generation the best best-fit individual's swapped,
 * recomputed and evicted tensors are set back to keep, costliest first, where
 * the plan still fits and gets faster (the fill: memory left idle is spent),
 * and then the next best-fit individuals' (SA_GA_END_FILLS); the search
 * block's "fill" says how many were filled, which one's fill was fastest
 * (rank), what it kept of what all of them tried and that individual's time
 * before and after (from_us, to_us); with deadline_s the generations stop at
 * nine tenths of the time to it and the fills have the rest.
 * The answer is never slower than the fastest seed: when no individual beats
 * it, that seed's plan itself is the answer.  The search block then records
 * the fastest seed, the gain over it and where the answer came from.
 *
 * Islands: with sa_ga_opts.migrate set, the search exchanges individuals with
 * other searches (swapadvisor-search-mpi runs one per MPI rank) through that
 * hook; the library itself knows nothing of how they travel.  See
 * sa_ga_migration below.
 *
 * Ownership: sa_ga_result.best is a plan the caller frees (sa_plan_free).  Seeds
 * stay the caller's (a winning seed is copied).
 */
#ifndef SWAPADVISOR_GA_H
#define SWAPADVISOR_GA_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sa_ga_mode { SA_GA_BOTH, SA_GA_SCHEDULE_ONLY, SA_GA_ALLOC_ONLY } sa_ga_mode;

typedef struct sa_ga_gen_stats {
    int generation;
    int64_t evaluations;
    double elapsed_s;
    double best_us, mean_us, worst_us; /* over the feasible survivors */
    double ideal_us;
} sa_ga_gen_stats;

/* One exchange with other searches (islands).  A genome is one individual
 * as sa_ga_genome_words(g) int32 words, plain data that can be sent anywhere:
 *   [0, n_ops)              the schedule: op ids, a topological order
 *   [n_ops]                 the layout gene (planner_layout: pool or best fit)
 *   [n_ops + 1]             the best-fit swap timing gene, 0 .. 23: bits 0-1 the swap-out's
 *                           (timed, or waited for 1, 4 or 16 ops after its issue), the
 *                           rest the swap-in's (where the compute covers it, or 8, 4,
 *                           3, 2 or 1 ops ahead); 0 timed and covered, 1 synchronous
 *   [n_ops + 2]             origin: the seed (sa_ga_opts.seeds index) its layout and
 *                           decisions descend from, -1 none, -2 the cost rule,
 *                           -3 the pool recompute rule (pool_recompute)
 *   [n_ops + 3]             n_classes
 *   then n_sizes words      CLS: the class of each distinct size (0 first,
 *                           each next one +0 or +1)
 *   then n_sizes words      CNT: objects of each class (>= 0; the words past
 *                           n_classes are written 0 and ignored)
 *   then n_tensors words    the decision genes (dec_action per tensor)
 * The layout belongs to this build: only searches of the same build (the
 * ranks of one job, with the same seeds) exchange genomes, so new genes may
 * change it freely.  sa_ga_genome_check checks its form, not that the planner
 * takes every decision.
 * The search fills the first group; the hook fills the second. */
typedef struct sa_ga_migration {
    int generation;          /* generations done so far */
    bool final;              /* the last exchange, after the last generation */
    int32_t words;           /* sa_ga_genome_words(g) */
    int n_out;               /* the best n_out of the population, best first */
    const int32_t *out;      /* n_out * words; owned by the search, valid during the call */
    const double *out_us;    /* their simulated iteration times (us) */
    /* set by the hook */
    const int32_t *in;       /* n_in * words taken in; owned by the hook, copied as the hook returns */
    int n_in;                /* 0 .. population - 1 genomes replace the worst individuals */
    bool stop;               /* end the search after this exchange (ignored when final) */
} sa_ga_migration;

/* Returns SA_OK, or a failure that ends the search with that status and err. */
typedef sa_status (*sa_ga_migrate_fn)(sa_ga_migration *m, void *ctx, sa_err *err);

typedef struct sa_ga_seed {
    const char *name;    /* the policy that made it (kept as a pointer) */
    const sa_plan *plan;    /* a plan of the same graph within the same memory, predicted block filled */
    bool pool;           /* made with the size-class pool layout: seeded as a pool individual */
} sa_ga_seed;

typedef struct sa_ga_opts {
    uint64_t seed;
    int threads;           /* >= 1 */
    int population;        /* N_p, even, >= 2 */
    int generations;       /* > 0: stop after this many; SA_GA_GENERATIONS_AUTO (the default):
                            * after the first generation whose evaluations, with those before
                            * it, reach auto_effort (SA_GA_AUTO_MIN .. SA_GA_AUTO_MAX of them,
                            * or none: SA_GA_AUTO_FEW;
                            * not with migrate: islands stop together) */
    double auto_effort;    /* SA_GA_GENERATIONS_AUTO's budget in the planner's effort units (an op
                            * or tensor of a best-fit plan 5, of a pool plan 8, a step of the
                            * packing's walk 1); <= 0: SA_GA_AUTO_EFFORT */
    double time_limit_s;   /* > 0: stop after the first generation past it */
    double deadline_s;     /* > 0: a time on sa_now_s()'s clock.  Past it no further individual is
                            * evaluated (one that is not counts as unplanned), the generation under
                            * way is dropped and the search ends; the search block then says
                            * "cut":true.  0: no clock (with time_limit_s 0 the plan depends on the
                            * inputs and the seed only) */
    double mutation;       /* P: per-pick / per-element mutation probability */
    double temperature;    /* softmax temperature on t_norm; <= 0 (the default): sa_ga_temperature's */
    sa_ga_mode mode;
    /* called after every generation from the calling thread; may be NULL */
    void (*on_generation)(const sa_ga_gen_stats *s, void *ctx);
    void *ctx;
    const sa_ga_seed *seeds;  /* n_seeds plans of other policies to start from; may be NULL */
    int n_seeds;
    /* islands: every migrate_every generations (after survival) and once
     * after the last one, the search offers its best `migrants` individuals
     * to migrate(m, migrate_ctx) and takes in the genomes it returns in
     * place of its worst ones (each checked, SA_EFORMAT when malformed, and
     * evaluated; an origin past this search's seeds, from an island whose
     * deadline kept more of them, is taken in as none).  The exchanges are
     * part of the result: the same genomes in give the same plan.  NULL: no
     * exchanges. */
    sa_ga_migrate_fn migrate;
    void *migrate_ctx;
    int migrate_every;     /* >= 1 with migrate */
    int migrants;          /* 1 .. population with migrate */
    /* Pool individuals recompute (swp_opts.recompute): a decision gene
     * recompute forces it, evict leaves it to swp_recompute_rule on the
     * individual's schedule, keep and swap leave the tensor to Belady;
     * forward activations with no use after their forward ones are flagged
     * as intermediates, so a forced recompute's chain can rebuild them.  The
     * first generation gains the rule's pool individual (the default order,
     * every forward activation evict), and pool children cross and mutate
     * their decision genes as best-fit ones do.  false (the default): pool
     * individuals never recompute, and plans are as without this field. */
    bool pool_recompute;
    /* when not NULL (n_ops entries, the caller's): the schedule of the first
     * generation's fastest individual, written when one planned (else left
     * as it was) */
    int32_t *first_schedule;
} sa_ga_opts;

typedef struct sa_ga_result {
    sa_plan *best;
    int generations;
    int64_t evaluations;
    int64_t effort;           /* the planner's effort of the generations' evaluations (auto_effort's unit) */
    double wall_s;
    double first_us;          /* best of the first generation */
    double time_to_1pct_s;    /* search time until within 1 % of the final best */
} sa_ga_result;

/* sa_ga_opts.generations: as many as sa_ga_opts.auto_effort allows. */
#define SA_GA_GENERATIONS_AUTO (-1)
/* Whether sa_ga_opts.generations leaves the run's cost to budgets of work: the default
 * (SA_GA_GENERATIONS_AUTO) or 0 (the seeds at once).  The last fill's tries and the
 * rule-based seeds' work are then capped (docs/policies.md, "The default effort"). */
static inline bool sa_ga_work_bounded(int generations)
{
    return generations == SA_GA_GENERATIONS_AUTO || generations == 0;
}
/* The default's effort: the planner's effort units of all evaluations together, generation
 * 0's and the fills' during the search included, the last fill's not.  A count of work,
 * not of time, so the plan does not depend on the machine; a unit costs 19-38 ns on the zoo's graphs (45 on vgg-16, whose plans are
 * so small that breeding shows), so the generations take 5-11 s (docs/policies.md, "The
 * default effort").  A small graph gets many cheap generations (vgg-16's search keeps
 * gaining past a thousand), a large one few dear ones. */
#define SA_GA_AUTO_EFFORT 2.5e8
enum { SA_GA_AUTO_MIN = 3, SA_GA_AUTO_MAX = 3000 };
/* ...but none where the budget buys fewer than SA_GA_AUTO_FEW generations at generation 0's
 * mean effort per evaluation (the search block's affordable_generations), there are seeds
 * and a planned best-fit individual: the fill on that individual gets the time.  A few
 * generations of 24 barely move such a population (nasnet-25, 15k ops, about 7: its 4
 * generations gained 0.05 %, the fill 1.9 %); the other graphs of docs/benchmarks.md's
 * default table afford 43 or more by that estimate (docs/policies.md, "The default effort"). */
enum { SA_GA_AUTO_FEW = 10 };
/* Under the default effort the fill (the search's last step, which keeps resident what
 * idle memory allows) also runs on the best best-fit parent each time the effort passes
 * another (SA_GA_AUTO_FILLS + 1)-th of the budget, at most once a generation, that parent
 * replaced by what it becomes: the generations after it breed from a plan with no idle
 * memory.  Only where one fill's tries, at the mean effort of the evaluations so far, cost
 * at most an eighth of the budget.  Not under a generation count or a time limit, whose
 * cost and plans stay those of the generations asked.  The search block's fill.during
 * lists them. */
enum { SA_GA_AUTO_FILLS = 3 };
/* Under any effort the fill after the last generation (the end fill) runs on the best
 * best-fit parent and then on the next ones, distinct in time, best first, up to
 * SA_GA_END_FILLS, while the end fills have cost under SA_GA_END_FILL_SHARE times the planner
 * effort the generations spent (generation 0's and the fills' during the search included):
 * what a fill reaches depends on the plan it starts from more than on how fast that plan
 * was (docs/policies.md, "The fill").  The fastest filled individual goes on to the answer. */
enum { SA_GA_END_FILLS = 8 };
#define SA_GA_END_FILL_SHARE 1.5
/* The default effort's survival temperature: its few thousand generations at most gain
 * more from a sharper survival than from the paper's 1, which a generation count or a
 * time limit keeps (docs/policies.md, "The default effort"). */
#define SA_GA_AUTO_TEMPERATURE 0.3
/* The temperature a search under o runs at: o->temperature where > 0, else
 * SA_GA_AUTO_TEMPERATURE under SA_GA_GENERATIONS_AUTO and 1 otherwise. */
static inline double sa_ga_temperature(const sa_ga_opts *o)
{
    if (o->temperature > 0)
        return o->temperature;
    return o->generations == SA_GA_GENERATIONS_AUTO ? SA_GA_AUTO_TEMPERATURE : 1.0;
}

void sa_ga_opts_default(sa_ga_opts *o);
const char *sa_ga_mode_name(sa_ga_mode m);

/* Searches for dev (memory_bytes is the budget).  Returns SA_OK with
 * res->best set; SA_EFORMAT when an op has no time (planner_check_graph);
 * SA_EINFEASIBLE when no pool fits the memory or no individual could be
 * planned; SA_ENOMEM, or SA_EINTERNAL when the planner broke an invariant
 * (err says which, from the lowest-numbered individual that failed, so the
 * same whatever the thread count).  On error res->best is NULL and nothing
 * is left allocated. */
sa_status sa_ga_search(const sa_dfg_graph *g, const sa_dfg_device *dev, const sa_ga_opts *o, sa_ga_result *res, sa_err *err);

/* Words in one genome of g (see sa_ga_migration). */
int32_t sa_ga_genome_words(const sa_dfg_graph *g);

/* SA_OK when genome (sa_ga_genome_words(g) words) is well formed for g: the
 * schedule a topological order of every op, CLS and CNT as above;
 * SA_EFORMAT naming the first broken word otherwise (SA_ENOMEM on OOM). */
sa_status sa_ga_genome_check(const sa_dfg_graph *g, const int32_t *genome, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
