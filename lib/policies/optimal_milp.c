/* optimal_milp.c - the optimal planner's MILP (docs/bound.md, "The optimal
 * planner"): one column per open action of each candidate, one memory row per
 * position (on a large model over a running-sum column), so that every integer
 * solution's decisions fit the cap the model was built for, before packing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimal_internal.h"

/* The widened space's gap columns (y, z) and their rows, and the rows that
 * keep a parameter a recompute reads on the device where it runs.  False
 * when out of memory. */
static bool add_gap_cols(octx *o, sa_milp *m, double eps)
{
    /* a persistent tensor's gaps: each dropped (y: swapped in where the
     * compute covers it, z: when the op before the next use ends) only when
     * it is on the host at the boundary (its host copy is current) or it
     * leaves over its gaps (e: its first leave swaps out) */
    bool ok = true;
    for (int32_t k = 0; k < o->ngp && ok; k++) {
        ogap *gp = &o->gp[k];
        const ocand *c = &o->c[gp->cand];
        gp->y_col = gp->z_col = -1;
        if (gp->y_to >= gp->from)
            ok = (gp->y_col = sa_milp_add_col(m, 0, 1, eps * gp->h, true)) >= 0;
        if (ok && gp->z_to > gp->y_to && gp->z_to >= gp->from)
            ok = (gp->z_col = sa_milp_add_col(m, 0, 1, eps * gp->h, true)) >= 0;
        int32_t ix[6], nx = 0;
        double v[6];
        if (gp->y_col >= 0)
            ix[nx] = gp->y_col, v[nx++] = 1;
        if (gp->z_col >= 0)
            ix[nx] = gp->z_col, v[nx++] = 1;
        if (c->s_col >= 0)
            ix[nx] = c->s_col, v[nx++] = -1;
        if (c->l_col >= 0)
            ix[nx] = c->l_col, v[nx++] = -1;
        if (c->e_col >= 0)
            ix[nx] = c->e_col, v[nx++] = -1;
        if (ok)
            ok = sa_milp_add_row(m, -HUGE_VAL, 0, nx, ix, v);
        /* left over its gaps (e), a later gap only after the first: the
         * first leave is the swap-out, priced over the first gap (e_to) */
        const ogap *g0 = &o->gp[c->gp_first];
        if (ok && c->e_col >= 0 && k > c->gp_first && (g0->y_col >= 0 || g0->z_col >= 0)) {
            nx -= 1; /* not e */
            if (g0->y_col >= 0)
                ix[nx] = g0->y_col, v[nx++] = -1;
            if (g0->z_col >= 0)
                ix[nx] = g0->z_col, v[nx++] = -1;
            ok = sa_milp_add_row(m, -HUGE_VAL, 0, nx, ix, v);
        }
    }
    /* a recompute whose producer reads a parameter needs it on the device
     * where it runs: not both the recompute and a drop over that position */
    for (int32_t k = 0; k < o->nc && ok; k++) {
        const ocand *c = &o->c[k];
        if (c->r_col < 0)
            continue;
        const sa_dfg_op *po = &o->g->ops[o->g->tensors[c->t].producer];
        for (int32_t j = 0; j < o->ngp && ok; j++) {
            const ogap *gp = &o->gp[j];
            bool reads = false;
            for (int32_t q = 0; q < po->n_in; q++)
                reads |= po->in[q] == o->c[gp->cand].t;
            if (!reads || c->next_use < gp->from || c->next_use > gp->z_to)
                continue;
            for (int32_t w = 0; w < 2 && ok; w++) {
                int32_t col = w ? gp->z_col : gp->y_col;
                if (col < 0)
                    continue;
                int32_t ix[2] = {c->r_col, col};
                double v[2] = {1, 1};
                ok = sa_milp_add_row(m, -HUGE_VAL, 1, 2, ix, v);
            }
        }
    }
    return ok;
}

/* The memory rows' running sum (opt_build_milp): the previous position's
 * coefficients, dense by column (pv, with pin marking the columns in plist)
 * and listed (plist), and the row being built (ri, rv).  Columns are added
 * before the first row; each position's row adds its own column F. */
typedef struct diffrow {
    double *pv, *rv;
    uint8_t *pin;
    int32_t *plist, *ri, np, f_prev;
} diffrow;

static bool diffrow_init(diffrow *d, int32_t ncols)
{
    memset(d, 0, sizeof *d);
    d->f_prev = -1;
    d->pv = calloc((size_t)ncols + 1, sizeof *d->pv);
    d->pin = calloc((size_t)ncols + 1, 1);
    d->plist = malloc(((size_t)ncols + 1) * sizeof *d->plist);
    d->ri = malloc((2 * (size_t)ncols + 2) * sizeof *d->ri);
    d->rv = malloc((2 * (size_t)ncols + 2) * sizeof *d->rv);
    return d->pv && d->pin && d->plist && d->ri && d->rv;
}

static void diffrow_free(diffrow *d)
{
    free(d->pv);
    free(d->pin);
    free(d->plist);
    free(d->ri);
    free(d->rv);
}

/* The row of a position whose memory is sum val[q] x[idx[q]] (k distinct
 * columns, all below the count diffrow_init was given), at least lb: a new
 * column F = that sum, the row F - F_prev - (this sum - the previous one) =
 * 0.  False when out of memory. */
static bool diffrow_add(diffrow *d, sa_milp *m, double lb, int32_t k, const int32_t *idx, const double *val)
{
    int32_t f = sa_milp_add_col(m, lb, HUGE_VAL, 0, false);
    if (f < 0)
        return false;
    int32_t n = 0;
    /* this position's columns (pin: 2 where also in the previous row) */
    for (int32_t q = 0; q < k; q++) {
        int32_t c = idx[q];
        double dv = val[q] - (d->pin[c] ? d->pv[c] : 0);
        if (d->pin[c])
            d->pin[c] = 2;
        if (dv != 0)
            d->ri[n] = c, d->rv[n++] = -dv;
    }
    /* the previous position's that are gone */
    for (int32_t q = 0; q < d->np; q++) {
        int32_t c = d->plist[q];
        if (d->pin[c] == 1 && d->pv[c] != 0)
            d->ri[n] = c, d->rv[n++] = d->pv[c];
        d->pin[c] = 0;
    }
    d->ri[n] = f, d->rv[n++] = 1;
    if (d->f_prev >= 0)
        d->ri[n] = d->f_prev, d->rv[n++] = -1;
    for (int32_t q = 0; q < k; q++) {
        d->pin[idx[q]] = 1;
        d->pv[idx[q]] = val[q];
        d->plist[q] = idx[q];
    }
    d->np = k;
    d->f_prev = f;
    return sa_milp_add_row(m, 0, 0, n, d->ri, d->rv);
}

/* Position i's memory row: its coefficients into idx, val (one per column);
 * returns their count. */
static int32_t memory_row(const octx *o, int32_t i, int32_t *idx, double *val)
{
    int32_t k = 0;
    for (int32_t j = 0; j < o->nc; j++) {
        const ocand *c = &o->c[j];
        double b = (double)o->g->tensors[c->t].bytes * 1e-6;
        bool head = c->s2_from <= i && i <= c->s2_to;
        bool tail = c->s3_from <= i && i <= c->s3_to;
        bool ltail = c->late_tail ? c->l3_from <= i && i <= c->s3_to : tail;
        bool lhead = c->l2_to >= 0 ? i <= c->l2_to : head;
        if (c->s_col >= 0 && (head || tail || (c->s_from <= i && i <= c->s_to))) {
            idx[k] = c->s_col;
            val[k++] = b;
        }
        if (c->l_col >= 0 && (lhead || ltail || (c->l_from <= i && i <= c->l_to))) {
            idx[k] = c->l_col;
            val[k++] = b;
        }
        if (c->w_col >= 0 && c->w_from <= i && i <= c->w_to) {
            idx[k] = c->w_col;
            val[k++] = b;
        }
        /* its first gap's memory is held until the swap-out ends */
        if (c->e_col >= 0 && o->gp[c->gp_first].from <= i && i <= c->e_to) {
            idx[k] = c->e_col;
            val[k++] = -b;
        }
        /* a recompute frees t over its window; its producer's inputs
         * that died before it stay until it runs, and when it runs (just
         * before the use) they and the workspace are there too (counted
         * whole: they may be); one coefficient per column and row */
        if (c->r_col >= 0) {
            double rv = 0;
            if (c->r_from <= i && i <= c->r_to)
                rv += b;
            if (c->r_ext > 0 && c->r_ext_from <= i && i < c->next_use)
                rv -= (double)c->r_ext * 1e-6;
            if (i == c->next_use && c->r_in > 0)
                rv -= (double)c->r_in * 1e-6;
            if (rv != 0) {
                idx[k] = c->r_col;
                val[k++] = rv;
            }
        }
    }
    for (int32_t j = 0; j < o->ngp; j++) {
        const ogap *gp = &o->gp[j];
        if (gp->y_col >= 0 && gp->from <= i && i <= gp->y_to) {
            idx[k] = gp->y_col;
            val[k++] = gp->b * 1e-6;
        }
        if (gp->z_col >= 0 && gp->from <= i && i <= gp->z_to) {
            idx[k] = gp->z_col;
            val[k++] = gp->b * 1e-6;
        }
    }
    return k;
}

/* With waited swap-outs (OPT_WAITS): a memory row for the boundary before
 * each position a waited swap-out frees its tensor at, over the tensors live
 * across it, each column freeing the least it frees at the positions on
 * either side (a swap-in issued at the boundary overlaps the swap-out in the
 * packing, pack.h): the decisions then fit the cap at the boundary too, where
 * the positions' rows alone left the packed arena over it.  idx and val: room
 * for a memory row.  False when out of memory. */
static bool boundary_rows(const octx *o, sa_milp *m, int64_t mem, int32_t *idx, double *val)
{
    int32_t n = o->n, ncol = sa_milp_n_cols(m);
    int64_t *born = calloc((size_t)n + 1, sizeof *born); /* bytes whose span starts at each position */
    uint8_t *at = calloc((size_t)n + 1, 1);              /* a waited swap-out frees there */
    uint8_t *seen = calloc((size_t)ncol + 1, 1);
    double *c0 = calloc((size_t)ncol + 1, sizeof *c0), *c1 = calloc((size_t)ncol + 1, sizeof *c1);
    int32_t *cols = malloc(((size_t)ncol + 1) * sizeof *cols), *ri = malloc(((size_t)ncol + 1) * sizeof *ri);
    double *rv = malloc(((size_t)ncol + 1) * sizeof *rv);
    bool ok = born && at && seen && c0 && c1 && cols && ri && rv, any = false;
    for (int32_t j = 0; ok && j < o->nc; j++)
        if (o->c[j].w_col >= 0 && o->c[j].w_from > 0 && o->c[j].w_from < n) {
            at[o->c[j].w_from] = 1;
            any = true;
        }
    for (int32_t t = 0; ok && any && t < o->g->n_tensors; t++) {
        int32_t f, l;
        if (!sa_dfg_kind_persistent(o->g->tensors[t].kind) && sa_dfg_tensor_span(o->g, o->pos, t, &f, &l))
            born[f] += o->g->tensors[t].bytes;
    }
    for (int32_t i = 1; ok && any && i < n; i++) {
        if (!at[i])
            continue;
        int32_t nu = 0, kk = 0;
        for (int side = 0; side < 2; side++) {
            double *c = side ? c1 : c0;
            int32_t k = memory_row(o, i - 1 + side, idx, val);
            for (int32_t q = 0; q < k; q++) {
                c[idx[q]] = val[q];
                if (!seen[idx[q]])
                    seen[idx[q]] = 1, cols[nu++] = idx[q];
            }
        }
        /* freed (> 0) where both sides free it, a cost (< 0) where either has it */
        for (int32_t q = 0; q < nu; q++) {
            int32_t col = cols[q];
            double a = c0[col] < c1[col] ? c0[col] : c1[col];
            if (a != 0)
                ri[kk] = col, rv[kk++] = a;
            c0[col] = c1[col] = 0;
            seen[col] = 0;
        }
        ok = sa_milp_add_row(m, ((double)(o->base[i] - born[i]) - (double)mem) * 1e-6, HUGE_VAL, kk, ri, rv);
    }
    free(born);
    free(at);
    free(seen);
    free(c0);
    free(c1);
    free(cols);
    free(ri);
    free(rv);
    return ok;
}

/* Candidate c's row "at most one action" over its columns.  False when
 * out of memory. */
static bool one_action_row(const ocand *c, sa_milp *m)
{
    int32_t ix[5], nx = 0;
    double v[5] = {1, 1, 1, 1, 1};
    if (c->w_col >= 0)
        ix[nx++] = c->w_col;
    if (c->s_col >= 0)
        ix[nx++] = c->s_col;
    if (c->e_col >= 0)
        ix[nx++] = c->e_col;
    if (c->l_col >= 0)
        ix[nx++] = c->l_col;
    if (c->r_col >= 0)
        ix[nx++] = c->r_col;
    return nx < 2 || sa_milp_add_row(m, -HUGE_VAL, 1, nx, ix, v);
}

/* The waited swap-outs' columns (OPT_WAITS), after every other column, and
 * the one-action rows of the candidates that have one.  A waited swap-out
 * opens only where, before the candidate's other swaps free its tensor, it
 * frees it at a position that the other columns cannot bring under mem even
 * all at once (each candidate freeing there the most any one of its columns,
 * its gaps' included, frees), or with OPT_NEAR within OPT_NEAR_FRAC of mem
 * of it: there no other decision fits (near it, none may once the cap's
 * rounds lower mem by the packing's overshoot), and elsewhere the column
 * would only cost the solver time (docs/bound.md).  *opened: how
 * many opened.  idx and val: room for a memory row.  False when out of
 * memory. */
static bool add_wait_cols(octx *o, sa_milp *m, int64_t mem, double eps, int32_t *idx, double *val,
                          int32_t *opened)
{
    int32_t n = o->n, ncol = sa_milp_n_cols(m);
    int32_t *owner = malloc(((size_t)ncol + 1) * sizeof *owner); /* column -> candidate (T: none) */
    double *most = calloc((size_t)o->nc + 1, sizeof *most);     /* per candidate, at this position */
    int32_t *touched = malloc(((size_t)o->nc + 1) * sizeof *touched);
    int32_t *need = calloc((size_t)n + 1, sizeof *need);        /* positions out of reach before each */
    bool ok = owner && most && touched && need;
    double near = o->near ? OPT_NEAR_FRAC * (double)mem * 1e-6 : 0; /* MB */
    *opened = 0;
    for (int32_t j = 0; ok && j < o->nc; j++) {
        const ocand *c = &o->c[j];
        int32_t cols[4] = {c->s_col, c->l_col, c->r_col, c->e_col};
        for (int q = 0; q < 4; q++)
            if (cols[q] >= 0)
                owner[cols[q]] = j;
    }
    for (int32_t j = 0; ok && j < o->ngp; j++) {
        if (o->gp[j].y_col >= 0)
            owner[o->gp[j].y_col] = o->gp[j].cand;
        if (o->gp[j].z_col >= 0)
            owner[o->gp[j].z_col] = o->gp[j].cand;
    }
    for (int32_t i = 0; ok && i < n; i++) {
        int32_t k = memory_row(o, i, idx, val), nt = 0;
        double freed = 0;
        for (int32_t q = 0; q < k; q++) {
            int32_t j = owner[idx[q]]; /* every memory row column has one */
            if (val[q] <= 0)
                continue;
            if (most[j] == 0)
                touched[nt++] = j;
            if (val[q] > most[j])
                most[j] = val[q];
        }
        for (int32_t q = 0; q < nt; q++) {
            freed += most[touched[q]];
            most[touched[q]] = 0;
        }
        need[i + 1] = need[i] + (((double)o->base[i] - (double)mem) * 1e-6 > freed - near + 1e-9);
    }
    for (int32_t j = 0; ok && j < o->nc; j++) {
        ocand *c = &o->c[j];
        if (!c->w_open)
            continue;
        if (need[c->w_early + 1] > need[c->w_from]) {
            ok = (c->w_col = sa_milp_add_col(m, 0, 1, eps * (c->sh + c->sd), true)) >= 0;
            *opened += ok;
        }
        ok = ok && one_action_row(c, m);
    }
    free(owner);
    free(most);
    free(touched);
    free(need);
    return ok;
}

/* The MILP for memory cap mem: minimize T + eps * (moved time) subject to
 * the memory at each position and T over each resource.  With waited
 * swap-outs (OPT_WAITS) SA_EINFEASIBLE where none opens (add_wait_cols). */
sa_status opt_build_milp(octx *o, int64_t mem, bool sums, sa_milp **out, sa_err *err)
{
    sa_milp *m = sa_milp_new();
    int32_t *idx = malloc((size_t)(6 * o->nc + 2 * o->ngp + 2) * sizeof *idx);
    double *val = malloc((size_t)(6 * o->nc + 2 * o->ngp + 2) * sizeof *val);
    bool ok = m && idx && val;
    /* a small weight on the moved time: of two plans with the same bottleneck,
     * the one that moves less leaves more slack to the simulator */
    const double EPS = 0.01;
    bool waits = false;
    int32_t T = ok ? sa_milp_add_col(m, o->compute_us, HUGE_VAL, 1.0, false) : -1;
    ok = ok && T >= 0;
    for (int32_t k = 0; k < o->nc && ok; k++) {
        ocand *c = &o->c[k];
        c->s_col = c->l_col = c->r_col = c->e_col = c->w_col = -1;
        if (c->pers || c->s_from <= c->s_to || c->s2_from <= c->s2_to || c->s3_from <= c->s3_to)
            ok = (c->s_col = sa_milp_add_col(m, 0, 1, EPS * (c->sh + c->sd), true)) >= 0;
        if (ok && c->l_open)
            ok = (c->l_col = sa_milp_add_col(m, 0, 1, EPS * (c->lh + c->sd), true)) >= 0;
        if (ok && c->r_from <= c->r_to)
            ok = (c->r_col = sa_milp_add_col(m, 0, 1, EPS * c->rc, true)) >= 0;
        if (ok && c->pers && c->s_stall > 0)
            ok = (c->e_col = sa_milp_add_col(m, 0, 1, EPS * c->e_d, true)) >= 0;
        waits = waits || c->w_open;
        if (ok && !c->w_open)
            ok = one_action_row(c, m);
    }
    ok = ok && add_gap_cols(o, m, EPS);
    int32_t opened = 0;
    ok = ok && (!waits || add_wait_cols(o, m, mem, EPS, idx, val, &opened));
    o->n_waits = opened;
    if (ok && waits && opened == 0) {
        sa_milp_free(m);
        free(idx);
        free(val);
        return sa_fail(err, SA_EINFEASIBLE, "optimal: no position is out of the other decisions' reach: no waited "
                       "swap-out opens");
    }
    /* memory, in MB: base - freed <= mem at each position i; with sums as
     * F_i = F_{i-1} + (a_i - a_{i-1}) x, F_i >= over_i, so that a window's
     * column enters only the rows where it opens and closes */
    diffrow dr = {0};
    ok = ok && (!sums || diffrow_init(&dr, sa_milp_n_cols(m)));
    for (int32_t i = 0; i < o->n && ok; i++) {
        double over = (double)o->base[i] - (double)mem;
        int32_t k = memory_row(o, i, idx, val);
        if (sums)
            ok = diffrow_add(&dr, m, over * 1e-6, k, idx, val);
        else if (over > 0 || k > 0)
            ok = sa_milp_add_row(m, over * 1e-6, HUGE_VAL, k, idx, val);
    }
    ok = ok && (sums || opened == 0 || boundary_rows(o, m, mem, idx, val));
    /* T over the compute stream, each link direction and the duplex link */
    for (int res = 0; res < 4 && ok; res++) {
        int32_t k = 0;
        idx[k] = T;
        val[k++] = 1;
        for (int32_t j = 0; j < o->nc; j++) {
            const ocand *c = &o->c[j];
            double cs = res == 1 ? c->sh : res == 2 ? c->sd : res == 3 ? c->sb / o->r_comb : 0;
            double cl = res == 0 ? c->stall : res == 1 ? c->lh : res == 2 ? c->sd : c->lsb / o->r_comb;
            if (res == 0 && c->r_col >= 0 && c->rc > 0) {
                idx[k] = c->r_col;
                val[k++] = -c->rc;
            } else if (res > 0 && c->s_col >= 0 && cs > 0) {
                idx[k] = c->s_col;
                val[k++] = -cs;
            } else if (res == 0 && c->s_col >= 0 && c->s_stall > 0) {
                idx[k] = c->s_col;
                val[k++] = -c->s_stall;
            }
            if (c->l_col >= 0 && cl > 0) {
                idx[k] = c->l_col;
                val[k++] = -cl;
            }
            double cw = res == 0 ? c->w_stall : cs;
            if (c->w_col >= 0 && cw > 0) {
                idx[k] = c->w_col;
                val[k++] = -cw;
            }
            double ce = res == 2 ? c->e_d : res == 3 ? (double)o->g->tensors[c->t].bytes / o->r_comb : 0;
            if (c->e_col >= 0 && ce > 0) {
                idx[k] = c->e_col;
                val[k++] = -ce;
            }
        }
        for (int32_t j = 0; j < o->ngp; j++) {
            const ogap *gp = &o->gp[j];
            /* h2d: the swap-in; duplex: its bytes; compute: z's wait */
            double cy = res == 1 ? gp->h : res == 3 ? gp->b / o->r_comb : 0;
            double cz = res == 0 || res == 1 ? gp->h : res == 3 ? gp->b / o->r_comb : 0;
            if (gp->y_col >= 0 && cy > 0) {
                idx[k] = gp->y_col;
                val[k++] = -cy;
            }
            if (gp->z_col >= 0 && cz > 0) {
                idx[k] = gp->z_col;
                val[k++] = -cz;
            }
        }
        double base = res == 0 ? o->compute_us : res == 1 ? o->forced_h : res == 2 ? 0 : o->forced_bytes / o->r_comb;
        ok = sa_milp_add_row(m, base, HUGE_VAL, k, idx, val);
    }
    free(idx);
    free(val);
    diffrow_free(&dr);
    if (!ok) {
        sa_milp_free(m);
        return sa_fail(err, SA_ENOMEM, "optimal: out of memory building the MILP");
    }
    *out = m;
    return SA_OK;
}

void opt_take_solution(const octx *o, const sa_milp_result *r, uint8_t *act, uint8_t *late, int32_t *sync_at,
                          uint8_t *drop, uint8_t *chosen)
{
    memset(act, DEC_KEEP, (size_t)o->g->n_tensors);
    /* with chains every intermediate is asked to be recomputed: decide.h
     * rebuilds one where a recompute reads it, as the model prices it
     * (chain_in), instead of keeping it alive */
    for (int32_t t = 0; o->interm && t < o->g->n_tensors; t++)
        if (o->interm[t])
            act[t] = DEC_RECOMPUTE;
    memset(late, 0, (size_t)o->g->n_tensors);
    memset(sync_at, 0, (size_t)o->g->n_tensors * sizeof *sync_at);
    for (int32_t k = 0; k < o->nc; k++) {
        const ocand *c = &o->c[k];
        int a = c->s_col >= 0 && r->x[c->s_col] > 0.5   ? OPT_SWAP
              : c->l_col >= 0 && r->x[c->l_col] > 0.5   ? OPT_LATE
              : c->r_col >= 0 && r->x[c->r_col] > 0.5   ? OPT_RECOMPUTE
              : c->e_col >= 0 && r->x[c->e_col] > 0.5   ? OPT_GAPS
              : c->w_col >= 0 && r->x[c->w_col] > 0.5   ? OPT_WAIT : OPT_KEEP;
        opt_set_action(c, a, act, late, sync_at);
        chosen[k] = (uint8_t)a;
    }
    memset(drop, 0, (size_t)o->nslots);
    for (int32_t k = 0; k < o->ngp; k++) {
        const ogap *gp = &o->gp[k];
        if (gp->y_col >= 0 && r->x[gp->y_col] > 0.5)
            drop[gp->slot] = 1;
        else if (gp->z_col >= 0 && r->x[gp->z_col] > 0.5)
            drop[gp->slot] = 2;
    }
}
