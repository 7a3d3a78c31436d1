/*
 * ga.h - SwapAdvisor's genetic search over (schedule, CLS, CNT) (paper section 5).
 *
 * Each generation pairs the parents, crosses every pair over into two
 * schedules and two allocations (4 children), mutates the children, plans and
 * simulates them in parallel (OpenMP, one workspace per thread, a random stream
 * per child so the result does not depend on the thread count), and keeps N_p
 * survivors drawn by softmax over t_norm = (T_best - t) / T_best (the best is
 * always kept).  Infeasible children score +infinity and die out.
 *
 * Islands: with ga_opts.migrate set, the search exchanges individuals with
 * other searches (swapadvisor-search-mpi runs one per MPI rank) through that
 * hook; the library itself knows nothing of how they travel.  See
 * ga_migration below.
 *
 * Ownership: ga_result.best is a plan the caller frees (plan_free).
 */
#ifndef GA_H
#define GA_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"

typedef enum ga_mode { GA_BOTH, GA_SCHEDULE_ONLY, GA_ALLOC_ONLY } ga_mode;

typedef struct ga_gen_stats {
    int generation;
    int64_t evaluations;
    double elapsed_s;
    double best_us, mean_us, worst_us; /* over the feasible survivors */
    double ideal_us;
} ga_gen_stats;

/* One exchange with other searches (islands).  A genome is one individual
 * as ga_genome_words(g) int32 words, plain data that can be sent anywhere:
 *   [0, n_ops)                          the schedule: op ids, a topological order
 *   [n_ops]                             n_classes
 *   [n_ops + 1, + n_sizes)              CLS: the class of each distinct size
 *                                       (0 first, each next one +0 or +1)
 *   [n_ops + 1 + n_sizes, + n_sizes)    CNT: objects of each class (>= 0; the
 *                                       words past n_classes are written 0
 *                                       and ignored)
 * The layout belongs to this build: only searches of the same build (the
 * ranks of one job) exchange genomes, so new genes may change it freely.
 * The search fills the first group; the hook fills the second. */
typedef struct ga_migration {
    int generation;          /* generations done so far */
    bool final;              /* the last exchange, after the last generation */
    int32_t words;           /* ga_genome_words(g) */
    int n_out;               /* the best n_out of the population, best first */
    const int32_t *out;      /* n_out * words; owned by the search, valid during the call */
    const double *out_us;    /* their simulated iteration times (us) */
    /* set by the hook */
    const int32_t *in;       /* n_in * words taken in; owned by the hook, copied as the hook returns */
    int n_in;                /* 0 .. population - 1 genomes replace the worst individuals */
    bool stop;               /* end the search after this exchange (ignored when final) */
} ga_migration;

/* Returns SA_OK, or a failure that ends the search with that status and err. */
typedef sa_status (*ga_migrate_fn)(ga_migration *m, void *ctx, sa_err *err);

typedef struct ga_opts {
    uint64_t seed;
    int threads;           /* >= 1 */
    int population;        /* N_p, even, >= 2 */
    int generations;       /* > 0: stop after this many */
    double time_limit_s;   /* > 0: stop after the first generation past it */
    double mutation;       /* P: per-pick / per-element mutation probability */
    double temperature;    /* softmax temperature on t_norm (1 = the paper) */
    ga_mode mode;
    /* called after every generation from the calling thread; may be NULL */
    void (*on_generation)(const ga_gen_stats *s, void *ctx);
    void *ctx;
    /* islands: every migrate_every generations (after survival) and once
     * after the last one, the search offers its best `migrants` individuals
     * to migrate(m, migrate_ctx) and takes in the genomes it returns in
     * place of its worst ones (each checked, SA_EFORMAT when malformed, and
     * evaluated).  The exchanges are part of the result: the same genomes in
     * give the same plan.  NULL: no exchanges. */
    ga_migrate_fn migrate;
    void *migrate_ctx;
    int migrate_every;     /* >= 1 with migrate */
    int migrants;          /* 1 .. population with migrate */
} ga_opts;

typedef struct ga_result {
    plan *best;
    int generations;
    int64_t evaluations;
    double wall_s;
    double first_us;          /* best of the first generation */
    double time_to_1pct_s;    /* search time until within 1 % of the final best */
} ga_result;

void ga_opts_default(ga_opts *o);
const char *ga_mode_name(ga_mode m);

/* Searches for dev (memory_bytes is the budget).  SA_EINFEASIBLE when no
 * individual could be planned at all. */
sa_status ga_search(const dfg_graph *g, const dfg_device *dev, const ga_opts *o, ga_result *res, sa_err *err);

/* Words in one genome of g (see ga_migration). */
int32_t ga_genome_words(const dfg_graph *g);

/* SA_OK when genome (ga_genome_words(g) words) is well formed for g: the
 * schedule a topological order of every op, CLS and CNT as above;
 * SA_EFORMAT naming the first broken word otherwise (SA_ENOMEM on OOM). */
sa_status ga_genome_check(const dfg_graph *g, const int32_t *genome, sa_err *err);

#endif
