/* bound_lp.c - the memory term as one linear program over every position
 * (bound.h, docs/bound.md "The linear program"). */
#include "swapadvisor/bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/milp.h"
#include "bound_internal.h"

bool bound_have_lp(void) { return sa_milp_have(SA_MILP_AUTO); }

/* bytes enter the rows in MB, so that the coefficients stay near 1 */
#define BND_MB 1e-6

sa_status bound_lp(const sa_dfg_graph *g, const sa_dfg_device *dev, const int32_t *schedule, double time_limit_s,
                   bound_result *out, sa_err *err)
{
    if (!sa_milp_have(SA_MILP_AUTO))
        return sa_fail(err, SA_EUSAGE, "this build has no LP solver for the LP bound (install coinor-libcbc-dev "
                       "or libglpk-dev and rebuild; scripts/setup.sh does)");
    sa_status st = bound_cheap(g, dev, schedule, out, err);
    if (st)
        return st;
    if (out->max_excess <= 0)
        return SA_OK; /* everything fits: the memory term is empty */
    double t_cheap = out->seconds;
    bnd_model m;
    if ((st = bnd_build(g, dev, schedule, &m, err)))
        return st;
    sa_milp *lp = sa_milp_new();
    int32_t *scol = malloc((size_t)m.nt * sizeof *scol), *ycol = malloc((size_t)m.nt * sizeof *ycol);
    int32_t *rcol = malloc((size_t)m.n * sizeof *rcol);
    uint8_t *used = calloc((size_t)m.nt, 1);
    int32_t *idx = malloc((size_t)(2 * m.nt + m.n + 4) * sizeof *idx);
    double *val = malloc((size_t)(2 * m.nt + m.n + 4) * sizeof *val);
    sa_milp_result res = {0};
    if (!lp || !scol || !ycol || !rcol || !used || !idx || !val) {
        st = sa_fail(err, SA_ENOMEM, "out of memory building the LP bound");
        goto out;
    }
    /* which tensors are alive across some position over memory */
    for (int32_t i = 0; i < m.n; i++) {
        if (m.excess[i] <= 0 || !(g->ops[m.sch[i]].time_us > 0))
            continue;
        bnd_mark(&m, g, i);
        for (int32_t t = 0; t < m.nt; t++)
            if (bnd_alive(&m, t, i))
                used[t] = 1;
    }
    double floor_us = fmax(fmax(fmax(out->compute_us, out->forced_us), out->start_us), out->boundary_us);
    int32_t T = sa_milp_add_col(lp, floor_us, HUGE_VAL, 1.0, false);
    bool ok = T >= 0;
    for (int32_t p = 0; p < m.n; p++)
        rcol[p] = -1;
    for (int32_t t = 0; t < m.nt && ok; t++) {
        scol[t] = ycol[t] = -1;
        if (!used[t])
            continue;
        ok = (scol[t] = sa_milp_add_col(lp, 0, 1, 0, true)) >= 0;
        int32_t p = m.rec_op[t];
        if (ok && p >= 0 && rcol[p] < 0)
            ok = (rcol[p] = sa_milp_add_col(lp, 0, 1, 0, true)) >= 0;
        if (ok && p >= 0) {
            /* y_t <= s_t + r_p: absent somewhere, paid by a swap or a recompute */
            ok = (ycol[t] = sa_milp_add_col(lp, 0, 1, 0, false)) >= 0;
            int32_t ix[3] = {ycol[t], scol[t], rcol[p]};
            double v[3] = {1, -1, -1};
            ok = ok && sa_milp_add_row(lp, -HUGE_VAL, 0, 3, ix, v);
        } else if (ok) {
            ycol[t] = scol[t];
        }
    }
    /* memory: at each position over memory, the absent alive bytes cover the excess */
    for (int32_t i = 0; i < m.n && ok; i++) {
        if (m.excess[i] <= 0 || !(g->ops[m.sch[i]].time_us > 0))
            continue;
        bnd_mark(&m, g, i);
        int32_t k = 0;
        for (int32_t t = 0; t < m.nt; t++)
            if (bnd_alive(&m, t, i)) {
                idx[k] = ycol[t];
                val[k++] = (double)g->tensors[t].bytes * BND_MB;
            }
        ok = sa_milp_add_row(lp, (double)m.excess[i] * BND_MB, HUGE_VAL, k, idx, val);
    }
    /* the four resources: T >= base + what the choices add */
    for (int res_k = 0; res_k < 4 && ok; res_k++) {
        int32_t k = 0;
        idx[k] = T;
        val[k++] = 1;
        double base = res_k == 0 ? m.compute_us : res_k == 1 ? m.forced_h_us : res_k == 2 ? 0
                    : m.forced_bytes / m.r_comb;
        if (res_k == 0) {
            for (int32_t p = 0; p < m.n; p++)
                if (rcol[p] >= 0) {
                    idx[k] = rcol[p];
                    val[k++] = -(g->ops[p].time_us > 0 ? g->ops[p].time_us : 0);
                }
        } else {
            for (int32_t t = 0; t < m.nt; t++) {
                double c = res_k == 1 ? m.h[t] : res_k == 2 ? m.d[t] : m.x[t];
                if (scol[t] >= 0 && c > 0) {
                    idx[k] = scol[t];
                    val[k++] = -c;
                }
            }
        }
        ok = sa_milp_add_row(lp, base, HUGE_VAL, k, idx, val);
    }
    if (!ok) {
        st = sa_fail(err, SA_ENOMEM, "out of memory building the LP bound");
        goto out;
    }
    sa_milp_opts mo = {SA_MILP_AUTO, time_limit_s, 0, 1, true, 0};
    if ((st = sa_milp_solve(lp, &mo, &res, err)))
        goto out;
    if (res.status == SA_MILP_OPTIMAL) {
        /* the simplex's optimum, less its feasibility tolerance */
        double v = res.objective * (1.0 - 1e-7);
        out->method = "lp";
        if (v > out->memory_us) {
            out->memory_us = v;
            out->memory_pos = -1;
        }
        out->lower_bound_us = fmax(out->lower_bound_us, v);
    } else if (res.status == SA_MILP_INFEASIBLE) {
        st = sa_fail(err, SA_EINTERNAL, "internal error: the LP bound is infeasible although every op fits");
    }
    /* SA_MILP_NO_SOLUTION (time limit): the combinatorial bound stands */
    out->seconds = t_cheap + res.seconds;
out:
    sa_milp_result_free(&res);
    sa_milp_free(lp);
    free(scol);
    free(ycol);
    free(rcol);
    free(used);
    free(idx);
    free(val);
    bnd_free(&m);
    return st;
}
