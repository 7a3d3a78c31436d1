/* search_policy.c - the swapadvisor row: SwapAdvisor's genetic search
 * (ga.h) with the options of policy_opts.search, started from the plans of
 * every other row that plans the graph in the memory (its seeds), so that
 * its answer is never slower than theirs; with seeds its pool individuals
 * recompute too (ga_opts.pool_recompute), as the topo-rc seed does. */
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/ga.h"
#include "policies_internal.h"

/* Runs every row but this one and those flagged POLICY_NO_SEED (or
 * POLICY_SEED_SMALL on a graph over POLICY_SEED_SMALL_OPS ops) on c's
 * graph and memory; the plans that fit go to seeds (n_rows entries), the
 * rows that refuse (SA_EINFEASIBLE) are left out.  On any other error
 * returns it with the plans made so far in seeds[0 .. *n). */
static sa_status run_seed_rows(const policy_call *c, ga_seed *seeds, int *n, sa_err *err)
{
    int n_rows;
    const policy_def *t = policy_table(&n_rows);
    /* the seed rows' own searches (optimal-search) report to no one and
     * exchange nothing: the log, the progress line and the islands are this
     * search's */
    policy_opts so = *c->opts;
    so.search.on_generation = NULL;
    so.search.ctx = NULL;
    so.search.migrate = NULL;
    so.search.migrate_ctx = NULL;
    so.search.seeds = NULL;
    so.search.n_seeds = 0;
    *n = 0;
    for (int i = 0; i < n_rows; i++) {
        if (!strcmp(t[i].name, c->name) || (t[i].flags & POLICY_NO_SEED) ||
            ((t[i].flags & POLICY_SEED_SMALL) && c->g->n_ops > POLICY_SEED_SMALL_OPS))
            continue;
        plan *p = NULL;
        sa_err e = {0};
        sa_status st = policy_run_opts(t[i].name, c->g, c->dev, &so, &p, &e);
        if (st == SA_EINFEASIBLE || (st == SA_EUSAGE && (t[i].flags & POLICY_SEED_SMALL)))
            continue; /* refused, or a MILP row in a build without a solver */
        if (st) {
            *err = e;
            return st;
        }
        seeds[(*n)++] = (ga_seed){t[i].name, p, (t[i].flags & POLICY_POOL_LAYOUT) != 0};
    }
    return SA_OK;
}

sa_status policy_run_swapadvisor(const policy_call *c, plan **out, sa_err *err)
{
    ga_opts o = c->opts->search;
    int n_rows, n = 0;
    policy_table(&n_rows);
    ga_seed *seeds = NULL;
    sa_status st = SA_OK;
    *out = NULL;
    if (c->opts->search_seeds) {
        if (!(seeds = calloc((size_t)n_rows, sizeof *seeds)))
            return sa_fail(err, SA_ENOMEM, "out of memory");
        st = run_seed_rows(c, seeds, &n, err);
        o.seeds = seeds;
        o.n_seeds = n;
        o.pool_recompute = true; /* with every other row as a seed, topo-rc's among them */
    }
    ga_result res;
    if (!st && !(st = ga_search(c->g, c->dev, &o, &res, err)))
        *out = res.best;
    for (int i = 0; i < n; i++)
        plan_free((plan *)seeds[i].plan);
    free(seeds);
    return st;
}
