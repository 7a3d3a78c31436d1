/* milp.c - the model builder and the CBC / GLPK back ends (milp.h): a model is
 * built once, solver-neutral, and each back end reads the same rows and columns. */
#include "swapadvisor/milp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef SA_HAVE_CBC
#define SA_HAVE_CBC 0
#endif
#ifndef SA_HAVE_GLPK
#define SA_HAVE_GLPK 0
#endif

#if SA_HAVE_CBC
#include <Cbc_C_Interface.h>
#endif
#if SA_HAVE_GLPK
#include <glpk.h>
#endif

struct sa_milp {
    int32_t nc, cap_c;
    double *clb, *cub, *obj;
    uint8_t *integer;
    int32_t nr, cap_r;
    double *rlb, *rub;
    int32_t *rstart; /* nr + 1 entries */
    int64_t nz, cap_nz;
    int32_t *ridx;
    double *rval;
};

sa_milp *sa_milp_new(void)
{
    sa_milp *m = calloc(1, sizeof *m);
    if (m && !(m->rstart = calloc(1, sizeof *m->rstart))) {
        free(m);
        return NULL;
    }
    return m;
}

void sa_milp_free(sa_milp *m)
{
    if (!m)
        return;
    free(m->clb);
    free(m->cub);
    free(m->obj);
    free(m->integer);
    free(m->rlb);
    free(m->rub);
    free(m->rstart);
    free(m->ridx);
    free(m->rval);
    free(m);
}

int32_t sa_milp_n_cols(const sa_milp *m) { return m->nc; }
int64_t sa_milp_n_nonzeros(const sa_milp *m) { return m->nz; }

#define GROW(ptr, cap_new) ((ptr) = realloc((ptr), (size_t)(cap_new) * sizeof *(ptr)))

int32_t sa_milp_add_col(sa_milp *m, double lb, double ub, double obj, bool integer)
{
    if (m->nc == m->cap_c) {
        int32_t c = m->cap_c ? 2 * m->cap_c : 256;
        double *a = realloc(m->clb, (size_t)c * sizeof *a);
        if (a) m->clb = a;
        double *b = realloc(m->cub, (size_t)c * sizeof *b);
        if (b) m->cub = b;
        double *o = realloc(m->obj, (size_t)c * sizeof *o);
        if (o) m->obj = o;
        uint8_t *in = realloc(m->integer, (size_t)c);
        if (in) m->integer = in;
        if (!a || !b || !o || !in)
            return -1;
        m->cap_c = c;
    }
    m->clb[m->nc] = lb;
    m->cub[m->nc] = ub;
    m->obj[m->nc] = obj;
    m->integer[m->nc] = integer;
    return m->nc++;
}

bool sa_milp_add_row(sa_milp *m, double lb, double ub, int32_t n, const int32_t *idx, const double *val)
{
    if (m->nr == m->cap_r) {
        int32_t c = m->cap_r ? 2 * m->cap_r : 256;
        double *a = realloc(m->rlb, (size_t)c * sizeof *a);
        if (a) m->rlb = a;
        double *b = realloc(m->rub, (size_t)c * sizeof *b);
        if (b) m->rub = b;
        int32_t *s = realloc(m->rstart, (size_t)(c + 1) * sizeof *s);
        if (s) m->rstart = s;
        if (!a || !b || !s)
            return false;
        m->cap_r = c;
    }
    if (m->nz + n > m->cap_nz) {
        int64_t c = m->cap_nz ? 2 * m->cap_nz : 4096;
        while (c < m->nz + n)
            c *= 2;
        int32_t *i = realloc(m->ridx, (size_t)c * sizeof *i);
        if (i) m->ridx = i;
        double *v = realloc(m->rval, (size_t)c * sizeof *v);
        if (v) m->rval = v;
        if (!i || !v)
            return false;
        m->cap_nz = c;
    }
    if (n > 0) { /* an empty row may come with NULL arrays */
        memcpy(m->ridx + m->nz, idx, (size_t)n * sizeof *idx);
        memcpy(m->rval + m->nz, val, (size_t)n * sizeof *val);
    }
    m->nz += n;
    m->rlb[m->nr] = lb;
    m->rub[m->nr] = ub;
    m->nr++;
    m->rstart[m->nr] = (int32_t)m->nz;
    return true;
}

bool sa_milp_have(sa_milp_backend b)
{
    switch (b) {
    case SA_MILP_CBC: return SA_HAVE_CBC;
    case SA_MILP_GLPK: return SA_HAVE_GLPK;
    default: return SA_HAVE_CBC || SA_HAVE_GLPK;
    }
}

const char *sa_milp_auto_name(void) { return SA_HAVE_CBC ? "cbc" : SA_HAVE_GLPK ? "glpk" : NULL; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sa_milp_result_free(sa_milp_result *r)
{
    free(r->x);
    r->x = NULL;
}

#if SA_HAVE_CBC
static sa_status solve_cbc(const sa_milp *m, const sa_milp_opts *o, sa_milp_result *r, sa_err *err)
{
    /* CBC loads columns: transpose the rows */
    int32_t *cstart = calloc((size_t)m->nc + 1, sizeof *cstart);
    int *cidx = malloc((size_t)(m->nz ? m->nz : 1) * sizeof *cidx);
    double *cval = malloc((size_t)(m->nz ? m->nz : 1) * sizeof *cval);
    int32_t *fill = calloc((size_t)m->nc + 1, sizeof *fill);
    double *clb = malloc((size_t)(m->nc ? m->nc : 1) * sizeof *clb);
    double *cub = malloc((size_t)(m->nc ? m->nc : 1) * sizeof *cub);
    double *rlb = malloc((size_t)(m->nr ? m->nr : 1) * sizeof *rlb);
    double *rub = malloc((size_t)(m->nr ? m->nr : 1) * sizeof *rub);
    Cbc_Model *cm = NULL;
    sa_status st = SA_OK;
    if (!cstart || !cidx || !cval || !fill || !clb || !cub || !rlb || !rub || !(cm = Cbc_newModel())) {
        st = sa_fail(err, SA_ENOMEM, "out of memory loading the model into CBC");
        goto out;
    }
    for (int64_t k = 0; k < m->nz; k++)
        cstart[m->ridx[k] + 1]++;
    for (int32_t c = 0; c < m->nc; c++)
        cstart[c + 1] += cstart[c];
    for (int32_t i = 0; i < m->nr; i++)
        for (int32_t k = m->rstart[i]; k < m->rstart[i + 1]; k++) {
            int32_t c = m->ridx[k];
            int32_t at = cstart[c] + fill[c]++;
            cidx[at] = i;
            cval[at] = m->rval[k];
        }
    /* CBC's infinity is COIN_DBL_MAX */
    for (int32_t c = 0; c < m->nc; c++) {
        clb[c] = isinf(m->clb[c]) ? -1.7976931348623157e308 : m->clb[c];
        cub[c] = isinf(m->cub[c]) ? 1.7976931348623157e308 : m->cub[c];
    }
    for (int32_t i = 0; i < m->nr; i++) {
        rlb[i] = isinf(m->rlb[i]) ? -1.7976931348623157e308 : m->rlb[i];
        rub[i] = isinf(m->rub[i]) ? 1.7976931348623157e308 : m->rub[i];
    }
    Cbc_loadProblem(cm, m->nc, m->nr, cstart, cidx, cval, clb, cub, m->obj, rlb, rub);
    if (!o->relax)
        for (int32_t c = 0; c < m->nc; c++)
            if (m->integer[c])
                Cbc_setInteger(cm, c);
    Cbc_setLogLevel(cm, 0);
    if (o->time_limit_s > 0)
        Cbc_setMaximumSeconds(cm, o->time_limit_s);
    if (o->rel_gap > 0)
        Cbc_setAllowableFractionGap(cm, o->rel_gap);
    if (o->threads > 1) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", o->threads);
        Cbc_setParameter(cm, "threads", buf);
    }
    if (o->max_nodes > 0)
        Cbc_setMaximumNodes(cm, o->max_nodes);
    if (o->no_pump)
        Cbc_setParameter(cm, "feas", "off");
    else if (o->pump_passes > 0) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", o->pump_passes);
        Cbc_setParameter(cm, "passF", buf);
    }
    Cbc_solve(cm);
    r->solver = "cbc";
    r->timed_out = Cbc_secondaryStatus(cm) == 4; /* 4: stopped on time (3: on nodes) */
    int ncols = Cbc_getNumCols(cm);
    const double *sol = Cbc_getColSolution(cm);
    bool optimal = Cbc_isProvenOptimal(cm), infeasible = Cbc_isProvenInfeasible(cm);
    double best = Cbc_getBestPossibleObjValue(cm);
    if (infeasible) {
        r->status = SA_MILP_INFEASIBLE;
        goto out;
    }
    bool have = sol && ncols == m->nc && (optimal || Cbc_numberSavedSolutions(cm) > 0 || Cbc_bestSolution(cm));
    if (o->relax) /* a pure LP: the solution is optimal or not usable */
        have = sol && optimal;
    if (!have) {
        r->status = SA_MILP_NO_SOLUTION;
        r->best_bound = isfinite(best) && !o->relax ? best : -HUGE_VAL;
        goto out;
    }
    const double *bs = o->relax ? sol : (Cbc_bestSolution(cm) ? Cbc_bestSolution(cm) : sol);
    if (!(r->x = malloc((size_t)(m->nc ? m->nc : 1) * sizeof *r->x))) {
        st = sa_fail(err, SA_ENOMEM, "out of memory reading CBC's solution");
        goto out;
    }
    memcpy(r->x, bs, (size_t)m->nc * sizeof *r->x);
    r->objective = 0;
    for (int32_t c = 0; c < m->nc; c++)
        r->objective += m->obj[c] * r->x[c];
    r->status = optimal ? SA_MILP_OPTIMAL : SA_MILP_FEASIBLE;
    r->best_bound = o->relax ? r->objective : (optimal && !(o->rel_gap > 0) ? r->objective : best);
out:
    if (cm)
        Cbc_deleteModel(cm);
    free(cstart);
    free(cidx);
    free(cval);
    free(fill);
    free(clb);
    free(cub);
    free(rlb);
    free(rub);
    return st;
}
#endif

#if SA_HAVE_GLPK
static int glp_silent(void *info, const char *s)
{
    (void)info;
    (void)s;
    return 1;
}

static sa_status solve_glpk(const sa_milp *m, const sa_milp_opts *o, sa_milp_result *r, sa_err *err)
{
    glp_term_hook(glp_silent, NULL);
    glp_prob *lp = glp_create_prob();
    int *ind = malloc((size_t)(m->nc + 1) * sizeof *ind);
    double *val = malloc((size_t)(m->nc + 1) * sizeof *val);
    sa_status st = SA_OK;
    r->solver = "glpk";
    if (!lp || !ind || !val) {
        st = sa_fail(err, SA_ENOMEM, "out of memory loading the model into GLPK");
        goto out;
    }
    glp_set_obj_dir(lp, GLP_MIN);
    if (m->nc)
        glp_add_cols(lp, m->nc);
    if (m->nr)
        glp_add_rows(lp, m->nr);
    bool any_int = false;
    for (int32_t c = 0; c < m->nc; c++) {
        double lb = m->clb[c], ub = m->cub[c];
        int type = isinf(lb) && isinf(ub) ? GLP_FR : isinf(ub) ? GLP_LO : isinf(lb) ? GLP_UP : lb == ub ? GLP_FX : GLP_DB;
        glp_set_col_bnds(lp, c + 1, type, isinf(lb) ? 0 : lb, isinf(ub) ? 0 : ub);
        glp_set_obj_coef(lp, c + 1, m->obj[c]);
        if (m->integer[c] && !o->relax) {
            glp_set_col_kind(lp, c + 1, GLP_IV);
            any_int = true;
        }
    }
    for (int32_t i = 0; i < m->nr; i++) {
        double lb = m->rlb[i], ub = m->rub[i];
        int type = isinf(lb) && isinf(ub) ? GLP_FR : isinf(ub) ? GLP_LO : isinf(lb) ? GLP_UP : lb == ub ? GLP_FX : GLP_DB;
        glp_set_row_bnds(lp, i + 1, type, isinf(lb) ? 0 : lb, isinf(ub) ? 0 : ub);
        int n = m->rstart[i + 1] - m->rstart[i];
        for (int k = 0; k < n; k++) {
            ind[k + 1] = m->ridx[m->rstart[i] + k] + 1;
            val[k + 1] = m->rval[m->rstart[i] + k];
        }
        glp_set_mat_row(lp, i + 1, n, ind, val);
    }
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.presolve = GLP_ON;
    if (o->time_limit_s > 0)
        sp.tm_lim = (int)fmin(o->time_limit_s * 1000.0, 2e9);
    int rc = glp_simplex(lp, &sp);
    int lpst = glp_get_status(lp);
    if (lpst == GLP_NOFEAS || (rc == GLP_ENOPFS)) {
        r->status = SA_MILP_INFEASIBLE;
        goto out;
    }
    if (rc != 0 || lpst != GLP_OPT) {
        r->status = SA_MILP_NO_SOLUTION;
        goto out;
    }
    double lp_obj = glp_get_obj_val(lp);
    if (!any_int) {
        if (!(r->x = malloc((size_t)(m->nc ? m->nc : 1) * sizeof *r->x))) {
            st = sa_fail(err, SA_ENOMEM, "out of memory reading GLPK's solution");
            goto out;
        }
        for (int32_t c = 0; c < m->nc; c++)
            r->x[c] = glp_get_col_prim(lp, c + 1);
        r->objective = r->best_bound = lp_obj;
        r->status = SA_MILP_OPTIMAL;
        goto out;
    }
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = GLP_MSG_OFF;
    if (o->time_limit_s > 0)
        ip.tm_lim = (int)fmin(o->time_limit_s * 1000.0, 2e9);
    if (o->rel_gap > 0)
        ip.mip_gap = o->rel_gap;
    ip.fp_heur = GLP_ON;
    rc = glp_intopt(lp, &ip);
    r->timed_out = rc == GLP_ETMLIM;
    int mst = glp_mip_status(lp);
    if (mst == GLP_NOFEAS) {
        r->status = SA_MILP_INFEASIBLE;
        goto out;
    }
    r->best_bound = lp_obj; /* the root relaxation: GLPK does not expose the tree's bound */
    if (mst != GLP_OPT && mst != GLP_FEAS) {
        r->status = SA_MILP_NO_SOLUTION;
        goto out;
    }
    if (!(r->x = malloc((size_t)(m->nc ? m->nc : 1) * sizeof *r->x))) {
        st = sa_fail(err, SA_ENOMEM, "out of memory reading GLPK's solution");
        goto out;
    }
    for (int32_t c = 0; c < m->nc; c++)
        r->x[c] = glp_mip_col_val(lp, c + 1);
    r->objective = glp_mip_obj_val(lp);
    r->status = (mst == GLP_OPT && rc == 0) || rc == GLP_EMIPGAP ? SA_MILP_OPTIMAL : SA_MILP_FEASIBLE;
    if (r->status == SA_MILP_OPTIMAL && !(o->rel_gap > 0))
        r->best_bound = r->objective;
out:
    if (lp)
        glp_delete_prob(lp);
    glp_term_hook(NULL, NULL);
    free(ind);
    free(val);
    return st;
}
#endif

sa_status sa_milp_solve(const sa_milp *m, const sa_milp_opts *o, sa_milp_result *r, sa_err *err)
{
    (void)m; /* unread in a build without a solver */
    memset(r, 0, sizeof *r);
    r->objective = HUGE_VAL;
    r->best_bound = -HUGE_VAL;
    r->status = SA_MILP_NO_SOLUTION;
    sa_milp_backend b = o->backend;
    if (b == SA_MILP_AUTO)
        b = SA_HAVE_CBC ? SA_MILP_CBC : SA_MILP_GLPK;
    if (!sa_milp_have(b))
        return sa_fail(err, SA_EUSAGE, "this build has no %s solver (install coinor-libcbc-dev or libglpk-dev and "
                       "rebuild; scripts/setup.sh does)", o->backend == SA_MILP_GLPK ? "GLPK" :
                       o->backend == SA_MILP_CBC ? "CBC" : "MILP");
    double t0 = now_s();
    sa_status st = SA_EINTERNAL;
#if SA_HAVE_CBC
    if (b == SA_MILP_CBC)
        st = solve_cbc(m, o, r, err);
#endif
#if SA_HAVE_GLPK
    if (b == SA_MILP_GLPK)
        st = solve_glpk(m, o, r, err);
#endif
    r->seconds = now_s() - t0;
    if (st)
        sa_milp_result_free(r);
    return st;
}
