/* search_policy.c - the swapadvisor row: SwapAdvisor's genetic search
 * (ga.h) with the options of sa_policy_opts.search, started from the plans of
 * every other row that plans the graph in the memory (its seeds), so that
 * its answer is never slower than theirs; with seeds its pool individuals
 * recompute too (sa_ga_opts.pool_recompute), as the topo-rc seed does.  When
 * the build has a MILP solver and the model is small enough
 * (sa_policy_opts.seed_milp), the MILP rows are seeds too and the answer is
 * polished: the MILP's keep / swap / recompute decisions on the search's
 * best schedule replace its own when they simulate faster. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/ga.h"
#include "policies_internal.h"

/* The default effort: no generation count given (docs/policies.md). */
static bool default_effort(const sa_policy_opts *o)
{
    return o->search.generations == SA_GA_GENERATIONS_AUTO;
}

/* c's options for the seeding and polishing solves: a node limit and one
 * solver thread whatever the search's thread count, so that their plans do
 * not depend on --threads nor, without a deadline, on the machine's speed
 * (optimal.c reads no clock under a node limit unless deadline_s is set);
 * with pump, each space solved with the feasibility pump too. */
static void milp_effort(const sa_policy_call *c, bool pump, sa_policy_opts *po)
{
    po->optimal.threads = 1;
    po->optimal.max_nodes = c->opts->seed_milp.max_nodes;
    po->optimal.pump = pump;
    /* the default effort refines half as far (unless a cap is given) */
    if (default_effort(c->opts) && !(po->optimal.refine_plans > 0))
        po->optimal.refine_plans = SA_POLICY_AUTO_REFINE_PLANS;
    /* and with running sums: CBC then stops on other near-optimal solutions,
     * which carried the default further on the cells measured (docs/policies.md) */
    po->optimal.sums |= default_effort(c->opts);
}

/* Whether the MILP may run on schedule sch: a solver in the build, seeds on
 * and the model within max_cells (*cells: its size, 0 when not measured). */
static sa_status milp_fits(const sa_policy_call *c, const int32_t *sch, double max_cells, bool *fits, double *cells,
                           sa_err *err)
{
    *fits = false;
    *cells = 0;
    if (!c->opts->search_seeds || !sa_milp_have(c->opts->optimal.solver) || !(max_cells > 0))
        return SA_OK;
    sa_status st = sa_policy_milp_cells(c->g, c->dev, sch, cells, err);
    if (!st)
        *fits = *cells <= max_cells;
    return st;
}

/* Runs every row but this one and those flagged SA_POLICY_NO_SEED (and the
 * SA_POLICY_SEED_MILP rows unless with_milp) on c's graph and memory, the
 * SA_POLICY_SEED_FIRST rows before the others; the plans
 * that fit go to seeds (n_rows entries), the rows that refuse
 * (SA_EINFEASIBLE) are left out.  On any other error returns it with the
 * plans made so far in seeds[0 .. *n). */
/* The row's clock (sa_policy_opts.deadline_s): the deadline, the seeds' share
 * of it, what one plan of the first seed took (the estimate of a row's
 * cost: a row is skipped when it would not end before its deadline), and
 * what the clock did, for the search block. */
typedef struct budget {
    double start, deadline, seed_deadline, one_plan;
    char cut[256], skipped[512]; /* JSON arrays' contents: the seed rows cut and skipped */
    /* the "phases" array's contents: each seed row, the search and the polish with
     * its wall time and result (where the run's time went) */
    char phases[4096];
    const char *polish;          /* "ran", "cut", "skipped" or NULL (not attempted) */
} budget;

/* Under a deadline the MILP (the optimal rows as seeds, the polish) runs only
 * with at least this many seconds left for it: CBC reads its time limit
 * between nodes, and its root alone (model, relaxation, cuts) has overrun
 * a short budget by seconds (inception-4, wresnet-152-10 under
 * --time-limit 5). */
#define BUDGET_MILP_MIN_S 30.0

static void budget_note(char *list, size_t cap, const char *name)
{
    size_t at = strlen(list);
    if (at + strlen(name) + 4 < cap)
        snprintf(list + at, cap - at, "%s\"%s\"", at ? "," : "", name);
}

/* Appends one object to b->phases; one that does not fit is left out (the array
 * stays valid JSON: a few hundred bytes per row against twenty-odd rows). */
static void phase_note(budget *b, const char *name, const char *policy, double wall_s, const char *result,
                       double iteration_us)
{
    char one[256], it[64] = "";
    if (iteration_us > 0)
        snprintf(it, sizeof it, ",\"iteration_us\":%.3f", iteration_us);
    int n = snprintf(one, sizeof one, "{\"phase\":\"%s\"%s%s%s,\"wall_s\":%.3f%s%s%s%s}", name,
                     policy ? ",\"policy\":\"" : "", policy ? policy : "", policy ? "\"" : "", wall_s,
                     result ? ",\"result\":\"" : "", result ? result : "", result ? "\"" : "", it);
    size_t at = strlen(b->phases);
    if (n > 0 && (size_t)n < sizeof one && at + (size_t)n + 2 < sizeof b->phases)
        snprintf(b->phases + at, sizeof b->phases - at, "%s%s", at ? "," : "", one);
}

static void phase(const sa_policy_call *c, const char *what, int index, int count)
{
    if (c->opts->on_phase)
        c->opts->on_phase(what, index, count, c->opts->phase_ctx);
}

/* One seed row's outcome, noted after the rows have run. */
typedef struct row_run {
    int row;          /* its index in the policy table */
    sa_status st;
    sa_err e;
    double wall_s;
} row_run;

/* Runs the rows of todo[0 .. k) on threads workers at once, each row on one
 * (search.threads 1: a row's plan is the same on any thread count) but the
 * MILP rows, which run one after another (one solver at a time: GLPK keeps
 * global state) as the first job, the dearest, and keep their threads for
 * their refinement (nested: they share the cores with the other rows until
 * those end).  Only without a deadline, so each row's plan is what it would
 * be alone.  The calling thread announces the rows it starts
 * (sa_policy_opts.on_phase). */
static void run_rows_at_once(const sa_policy_call *c, const sa_policy_def *t, const sa_policy_opts *so, row_run *todo,
                             int k, int threads, sa_plan **got)
{
    /* ord: the MILP rows (job 0 when there are any), then one job per other row */
    int *ord = malloc((size_t)(k > 0 ? k : 1) * sizeof *ord), n_milp = 0, m = 0;
    if (!ord) {
        for (int j = 0; j < k; j++)
            todo[j].st = sa_fail(&todo[j].e, SA_ENOMEM, "out of memory");
        return;
    }
    for (int milp = 1; milp >= 0; milp--)
        for (int j = 0; j < k; j++)
            if (((t[todo[j].row].flags & SA_POLICY_SEED_MILP) != 0) == milp)
                ord[m++] = j, n_milp += milp;
    int jobs = k - n_milp + (n_milp > 0);
    sa_policy_opts one = *so, all = *so;
    one.search.threads = 1;
    all.search.threads = threads;
    int levels = omp_get_max_active_levels(), started = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int x = 0; x < jobs; x++) {
        bool group = n_milp > 0 && x == 0;
        int from = group ? 0 : x - (n_milp > 0) + n_milp, to = group ? n_milp : from + 1;
        for (int y = from; y < to; y++) {
            row_run *r = &todo[ord[y]];
            int index;
#pragma omp atomic capture
            index = started++;
            if (omp_get_thread_num() == 0)
                phase(c, t[r->row].name, index, k);
            double t0 = sa_now_s();
            r->st = sa_policy_run_opts(t[r->row].name, c->g, c->dev, group ? &all : &one, &got[r->row], &r->e);
            r->wall_s = sa_now_s() - t0;
        }
    }
    omp_set_max_active_levels(levels);
    free(ord);
}

/* Under a deadline, whether the row should not start at t0 (it would not end
 * before the seeds' deadline; a MILP row, with less than BUDGET_MILP_MIN_S
 * left); a skipped row is noted in b. */
static bool skip_row(budget *b, const sa_policy_def *row, double t0)
{
    if (!(b->deadline > 0) || (t0 + b->one_plan < b->seed_deadline &&
                               (!(row->flags & SA_POLICY_SEED_MILP) || b->seed_deadline - t0 >= BUDGET_MILP_MIN_S)))
        return false;
    budget_note(b->skipped, sizeof b->skipped, row->name);
    phase_note(b, "seed", row->name, 0.0, "skipped", 0.0);
    return true;
}

/* Notes row r's outcome (its plan in got[r->row]) in b; an error other than a
 * refusal goes to *st and *err. */
static void note_row(budget *b, const sa_policy_def *t, const row_run *r, sa_plan **got, sa_status *st, sa_err *err)
{
    int i = r->row;
    phase_note(b, "seed", t[i].name, r->wall_s, got[i] ? "plan" : r->st == SA_EINFEASIBLE ? "refused" : "error",
               got[i] ? got[i]->predicted.iteration_us : 0.0);
    if (r->st && r->st != SA_EINFEASIBLE) { /* SA_EINFEASIBLE: refused */
        *err = r->e;
        *st = r->st;
    }
}

/* The MILP rows after the others (milp_if_needed): each runs, on all the
 * search's threads, refining SA_POLICY_AUTO_REFINE_LARGE plans and each space
 * solved with CBC's feasibility pump too (optimal.pump), only when
 * no other row came within seed_milp.auto_need of the ideal (got: the other
 * rows' plans; the ideal bounds every plan, so the MILP could win back at
 * most that); else its phase reads "unneeded". */
static sa_status run_milp_if_needed(const sa_policy_call *c, const sa_policy_opts *so, unsigned out, budget *b,
                                    sa_plan **got, sa_err *err)
{
    int n_rows;
    const sa_policy_def *t = sa_policy_table(&n_rows);
    double best = HUGE_VAL, ideal = 0;
    for (int i = 0; i < n_rows; i++)
        if (got[i]) {
            best = fmin(best, got[i]->predicted.iteration_us);
            ideal = got[i]->predicted.ideal_us;
        }
    bool need = !(best <= (1.0 + c->opts->seed_milp.auto_need) * ideal);
    sa_policy_opts lo = *so;
    if (!(c->opts->optimal.refine_plans > 0))
        lo.optimal.refine_plans = SA_POLICY_AUTO_REFINE_LARGE;
    lo.optimal.pump = true;
    if (!(lo.optimal.pump_passes > 0))
        lo.optimal.pump_passes = SA_POLICY_AUTO_PUMP_PASSES;
    sa_status st = SA_OK;
    for (int i = 0; i < n_rows && !st; i++) {
        if (!(t[i].flags & SA_POLICY_SEED_MILP) || (t[i].flags & out) || !strcmp(t[i].name, c->name))
            continue;
        if (!need) {
            phase_note(b, "seed", t[i].name, 0.0, "unneeded", 0.0);
            continue;
        }
        double t0 = sa_now_s();
        if (skip_row(b, &t[i], t0))
            continue;
        phase(c, t[i].name, 0, 1);
        row_run r = {.row = i};
        r.st = sa_policy_run_opts(t[i].name, c->g, c->dev, &lo, &got[i], &r.e);
        r.wall_s = sa_now_s() - t0;
        note_row(b, t, &r, got, &st, err);
    }
    return st;
}

/* with_milp: the MILP rows are seeds, after the others and only where needed
 * with milp_if_needed (run_milp_if_needed); with pump: with optimal.pump. */
static sa_status run_seed_rows(const sa_policy_call *c, bool with_milp, bool milp_if_needed, bool pump, budget *b,
                               sa_ga_seed *seeds, int *n, sa_err *err)
{
    int n_rows;
    const sa_policy_def *t = sa_policy_table(&n_rows);
    /* the seed rows' own searches (optimal-search) report to no one and
     * exchange nothing: the log, the progress line and the islands are this
     * search's */
    sa_policy_opts so = *c->opts;
    so.search.on_generation = NULL;
    so.search.ctx = NULL;
    so.search.migrate = NULL;
    so.search.migrate_ctx = NULL;
    so.search.seeds = NULL;
    so.search.n_seeds = 0;
    milp_effort(c, pump, &so);
    so.on_phase = NULL;
    so.search.time_limit_s = 0; /* the seed deadline instead */
    /* the default effort and --generations 0 ("at once") bound the rules' work */
    if (sa_ga_work_bounded(c->opts->search.generations) && !(so.rule_work_max > 0))
        so.rule_work_max = SA_POLICY_AUTO_RULE_WORK;
    so.search.deadline_s = so.deadline_s = b->seed_deadline;
    /* the default effort leaves out the rows with a search of their own */
    unsigned never = SA_POLICY_NO_SEED | (default_effort(c->opts) ? SA_POLICY_SEED_SEARCH : 0u);
    unsigned out = never | (with_milp && !milp_if_needed ? 0u : SA_POLICY_SEED_MILP);
    sa_plan **got = calloc((size_t)n_rows, sizeof *got); /* each row's plan, handed on in the table's order */
    row_run *todo = calloc((size_t)n_rows, sizeof *todo);
    if (!got || !todo) {
        free(got);
        free(todo);
        return sa_fail(err, SA_ENOMEM, "out of memory");
    }
    /* the SA_POLICY_SEED_FIRST rows first, then the rest */
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n_rows; i++)
            if (!(!strcmp(t[i].name, c->name) || (t[i].flags & out) ||
                  ((t[i].flags & SA_POLICY_SEED_FIRST) != 0) != (pass == 0)))
                todo[k++].row = i;
    int threads = c->opts->search.threads > 0 ? c->opts->search.threads : omp_get_max_threads();
    /* without a deadline no row reads the clock, and the rows run at once */
    bool at_once = !(b->deadline > 0) && threads > 1 && k > 1;
    if (at_once)
        run_rows_at_once(c, t, &so, todo, k, threads, got);
    sa_status st = SA_OK;
    for (int j = 0; j < k && !st; j++) {
        row_run *r = &todo[j];
        int i = r->row;
        if (!at_once) {
            phase(c, t[i].name, j, k);
            double t0 = sa_now_s();
            if (skip_row(b, &t[i], t0))
                continue;
            r->st = sa_policy_run_opts(t[i].name, c->g, c->dev, &so, &got[i], &r->e);
            r->wall_s = sa_now_s() - t0;
            /* one plan's time: the first ordinary row's (a peer row may build many) */
            if (b->deadline > 0 && !(t[i].flags & SA_POLICY_SEED_FIRST) && !(b->one_plan > 0))
                b->one_plan = r->wall_s;
            if (r->st && b->deadline > 0 && sa_now_s() >= b->seed_deadline) {
                sa_plan_free(got[i]);
                got[i] = NULL;
                budget_note(b->cut, sizeof b->cut, t[i].name);
                phase_note(b, "seed", t[i].name, r->wall_s, "cut", 0.0);
                continue; /* cut by the deadline, whatever it said */
            }
        }
        note_row(b, t, r, got, &st, err);
    }
    if (!st && with_milp && milp_if_needed)
        st = run_milp_if_needed(c, &so, never, b, got, err);
    *n = 0;
    for (int i = 0; i < n_rows; i++)
        if (got[i])
            seeds[(*n)++] = (sa_ga_seed){t[i].name, got[i], (t[i].flags & SA_POLICY_POOL_LAYOUT) != 0};
    free(got);
    free(todo);
    return st;
}

/* The polish: the MILP's decisions on *best's schedule; *best becomes that
 * plan when it simulates faster.  Either way *best's search block (the
 * search's) gains a "polish" member saying what the MILP reached.  A MILP
 * refusal (SA_EINFEASIBLE) leaves *best's plan; other errors are returned
 * with *best untouched. */
static sa_status polish(const sa_policy_call *c, double cells, double deadline, sa_plan **best, sa_err *err)
{
    sa_policy_opts po = *c->opts;
    milp_effort(c, false, &po); /* the seeds' pump would double the polish's time too */
    po.deadline_s = deadline;
    sa_policy_call pc = *c;
    pc.opts = &po;
    sa_plan *m = NULL;
    bool timed_out = false;
    sa_err e = {0};
    sa_status st = optimal_on_schedule(&pc, "swapadvisor-polish", (*best)->schedule, NULL, &m, &timed_out, &e);
    if (st && st != SA_EINFEASIBLE) {
        *err = e;
        return st;
    }
    double su = (*best)->predicted.iteration_us, mu = st ? HUGE_VAL : m->predicted.iteration_us;
    bool won = !st && mu < su;
    const char *gj = (*best)->search_json ? (*best)->search_json : "{}";
    size_t gl = strlen(gj);
    while (gl > 0 && gj[gl - 1] != '}')
        gl--;
    const char *mj = !st && m->search_json ? m->search_json : "null";
    size_t len = gl + strlen(mj) + 512;
    char *json = malloc(len);
    if (!json) {
        sa_plan_free(m);
        return sa_fail(err, SA_ENOMEM, "out of memory");
    }
    /* the search's block without its closing brace, then the polish */
    snprintf(json, len,
             "%.*s%s\"polish\":{\"cells\":%.0f,\"max_nodes\":%d,\"search_us\":%.3f,\"milp_us\":%.3f,"
             "\"gain_pct\":%.3f,\"answer\":\"%s\",\"timed_out\":%s,\"milp\":%s}}",
             (int)(gl ? gl - 1 : 0), gj, gl > 2 ? "," : "", cells, po.optimal.max_nodes, su, st ? 0.0 : mu,
             won ? 100.0 * (su - mu) / su : 0.0, st ? "refused" : won ? "milp" : "search",
             timed_out ? "true" : "false", mj);
    sa_plan *keep = won ? m : *best;
    if (!sa_plan_set_search_json(keep, json)) {
        free(json);
        sa_plan_free(m);
        return sa_fail(err, SA_ENOMEM, "out of memory");
    }
    free(json);
    if (won) {
        sa_plan_free(*best);
        *best = m;
    } else {
        sa_plan_free(m);
    }
    return SA_OK;
}

/* Appends member (`"name":value`) to p's search block.  SA_ENOMEM. */
static sa_status append_member(sa_plan *p, const char *member, sa_err *err)
{
    const char *sj = p->search_json ? p->search_json : "{}";
    size_t gl = strlen(sj);
    while (gl > 0 && sj[gl - 1] != '}')
        gl--;
    size_t len = gl + strlen(member) + 4;
    char *json = malloc(len);
    if (!json)
        return sa_fail(err, SA_ENOMEM, "out of memory");
    snprintf(json, len, "%.*s%s%s}", (int)(gl ? gl - 1 : 0), sj, gl > 2 ? "," : "", member);
    bool ok = sa_plan_set_search_json(p, json);
    free(json);
    return ok ? SA_OK : sa_fail(err, SA_ENOMEM, "out of memory");
}

/* The search block's "time_limit" member: the budget, what it cut. */
static sa_status note_budget(const budget *b, bool search_cut, sa_plan *p, sa_err *err)
{
    char m[1024];
    snprintf(m, sizeof m,
             "\"time_limit\":{\"budget_s\":%.3f,\"used_s\":%.3f,\"seeds_cut\":[%s],\"seeds_skipped\":[%s],"
             "\"search_cut\":%s,\"polish\":\"%s\"}",
             b->deadline - b->start, sa_now_s() - b->start, b->cut, b->skipped, search_cut ? "true" : "false",
             b->polish ? b->polish : "none");
    return append_member(p, m, err);
}

/* The search block's "seed_rows" member for --generations 0 (into m): the
 * rows whose plans were the seeds, and the MILP rows left out.  SA_ENOMEM
 * never; SA_EINTERNAL when m is too small. */
static sa_status note_seed_rows(const sa_ga_seed *seeds, int n, bool milp_left_out, char *m, size_t cap, sa_err *err)
{
    char ran[768] = "", out[256] = "";
    for (int i = 0; i < n; i++)
        budget_note(ran, sizeof ran, seeds[i].name);
    int n_rows;
    const sa_policy_def *t = sa_policy_table(&n_rows);
    for (int i = 0; milp_left_out && i < n_rows; i++)
        if (t[i].flags & SA_POLICY_SEED_MILP)
            budget_note(out, sizeof out, t[i].name);
    int len = snprintf(m, cap, "\"seed_rows\":{\"ran\":[%s],\"left_out\":[%s]}", ran, out);
    return len > 0 && (size_t)len < cap ? SA_OK : sa_fail(err, SA_EINTERNAL, "seed rows: member too long");
}

sa_status policy_run_swapadvisor(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    sa_ga_opts o = c->opts->search;
    int n_rows, n = 0;
    sa_policy_table(&n_rows);
    sa_ga_seed *seeds = NULL;
    sa_status st = SA_OK;
    *out = NULL;
    /* the whole row runs to the deadline: sa_policy_opts.deadline_s, or the
     * search's time limit from now; the search's own clock is replaced by it */
    budget b = {.start = sa_now_s()};
    b.deadline = c->opts->deadline_s > 0 ? c->opts->deadline_s
                 : o.time_limit_s > 0 ? b.start + o.time_limit_s : 0;
    if (b.deadline > 0 && !o.migrate)
        o.time_limit_s = 0;
    b.seed_deadline = b.deadline > 0 ? b.start + 0.5 * (b.deadline - b.start) : 0;
    bool with_milp = false, milp_left_out = false;
    char seed_rows[1024] = "";
    if (c->opts->search_seeds) {
        double cells;
        if (!(seeds = calloc((size_t)n_rows, sizeof *seeds)))
            return sa_fail(err, SA_ENOMEM, "out of memory");
        st = milp_fits(c, c->g->topo, c->opts->seed_milp.max_cells, &with_milp, &cells, err);
        /* the default effort's MILP seeds on the larger models only where the
         * other rows leave time to win back */
        bool if_needed = default_effort(c->opts) && cells > c->opts->seed_milp.auto_cells;
        /* --generations 0 asks for the seeds' plans at once: the rows that
         * need no solver (a rule of the options, never of the clock) */
        milp_left_out = with_milp && o.generations == 0;
        with_milp &= !milp_left_out;
        /* a generation count given: the small models' solves again with the
         * pump (it doubles their time; the budgets of work do not afford it) */
        bool pump = with_milp && !sa_ga_work_bounded(o.generations) && cells <= c->opts->seed_milp.pump_cells;
        if (!st)
            st = run_seed_rows(c, with_milp, if_needed, pump, &b, seeds, &n, err);
        if (!st && o.generations == 0)
            st = note_seed_rows(seeds, n, milp_left_out, seed_rows, sizeof seed_rows, err);
        o.seeds = seeds;
        o.n_seeds = n;
        o.pool_recompute = true; /* with every other row as a seed, topo-rc's among them */
    }
    /* the search leaves time for its last plan and the caller's checks
     * (about two plans' worth) and, when the polish may run (a quarter of
     * what is left is at least BUDGET_MILP_MIN_S), that quarter for it */
    /* islands (sa_ga_opts.migrate) stop together at an exchange, by their
     * hook's clock: no rank's search may stop on its own */
    if (b.deadline > 0 && !o.migrate) {
        double left = b.deadline - sa_now_s() - 2 * b.one_plan;
        o.deadline_s = b.deadline - 2 * b.one_plan - (with_milp && 0.25 * left >= BUDGET_MILP_MIN_S ? 0.25 * left : 0.0);
        if (!(o.deadline_s > 0))
            o.deadline_s = 1e-9; /* already past: positive, so still a deadline */
    }
    sa_ga_result res = {0};
    phase(c, "search", 0, 1);
    double t_search = sa_now_s();
    if (!st)
        st = sa_ga_search(c->g, c->dev, &o, &res, err);
    if (!st)
        phase_note(&b, "search", NULL, sa_now_s() - t_search, NULL, res.best->predicted.iteration_us);
    for (int i = 0; i < n; i++)
        sa_plan_free((sa_plan *)seeds[i].plan);
    free(seeds);
    if (st)
        return st;
    /* no polish when the answer is a MILP row's own plan: it would solve the
     * same model again */
    const char *sj = res.best->search_json;
    bool milp_seed = sj && strstr(sj, "\"answer\":\"seed\"") && strstr(sj, "\"best_seed\":\"optimal");
    bool fits = false, search_cut = sj && strstr(sj, "\"cut\":true");
    double cells, pd = b.deadline > 0 ? b.deadline - b.one_plan : 0;
    /* --generations 0 asks for the seeds' plans only: no polish either; nor
     * does the default effort, whose time the polish would double (it seldom
     * gains: docs/policies.md) */
    if (!milp_seed && o.generations != 0 && !default_effort(c->opts) &&
        !(st = milp_fits(c, res.best->schedule, c->opts->seed_milp.polish_cells, &fits, &cells, err)) && fits) {
        if (pd > 0 && (sa_now_s() + b.one_plan >= pd || pd - sa_now_s() < BUDGET_MILP_MIN_S)) {
            b.polish = "skipped";
        } else {
            phase(c, "polish", 0, 1);
            double t_polish = sa_now_s();
            st = polish(c, cells, pd, &res.best, err);
            const char *pj = st ? NULL : strstr(res.best->search_json ? res.best->search_json : "", "\"polish\":");
            b.polish = pj && strstr(pj, "\"timed_out\":true") ? "cut" : "ran";
            if (!st)
                phase_note(&b, "polish", NULL, sa_now_s() - t_polish, b.polish, res.best->predicted.iteration_us);
        }
    }
    if (!st) {
        char *m = malloc(sizeof b.phases + 16);
        if (!m) {
            st = sa_fail(err, SA_ENOMEM, "out of memory");
        } else {
            snprintf(m, sizeof b.phases + 16, "\"phases\":[%s]", b.phases);
            st = append_member(res.best, m, err);
            free(m);
        }
    }
    if (!st && b.deadline > 0)
        st = note_budget(&b, search_cut, res.best, err);
    if (!st && seed_rows[0])
        st = append_member(res.best, seed_rows, err);
    if (st) {
        sa_plan_free(res.best);
        return st;
    }
    *out = res.best;
    return SA_OK;
}
