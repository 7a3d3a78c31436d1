/*
 * milp.h - a small mixed-integer linear program and the solvers the build
 * found: COIN-OR CBC (Cbc_C_Interface.h) and GLPK (glpk.h), both optional
 * (the Makefile detects them; docs/bound.md says which one the planners use
 * and why).  Minimizes; rows are lb <= a.x <= ub with -HUGE_VAL / HUGE_VAL
 * for an open side.
 *
 * Ownership: sa_milp_new returns a model the caller frees (sa_milp_free); the
 * builders copy what they are given.  sa_milp_result.x is malloc'd by
 * sa_milp_solve (one value per column) and freed by sa_milp_result_free; on a
 * failed solve it is NULL.
 */
#ifndef SWAPADVISOR_MILP_H
#define SWAPADVISOR_MILP_H

#include <stdbool.h>
#include <stdint.h>

#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sa_milp sa_milp;

typedef enum sa_milp_backend { SA_MILP_AUTO = 0, SA_MILP_CBC, SA_MILP_GLPK } sa_milp_backend;

typedef struct sa_milp_opts {
    sa_milp_backend backend; /* AUTO: the preferred one the build has */
    double time_limit_s;  /* <= 0: none */
    double rel_gap;       /* stop when (incumbent - bound) / incumbent <= this (0: solver default) */
    int threads;          /* CBC only; <= 1: one */
    bool relax;           /* solve the LP relaxation (integers become continuous) */
    int max_nodes;        /* CBC only; > 0: stop after this many branch-and-bound nodes.  Unlike the
                           * time limit this effort limit does not depend on the machine's speed: with
                           * threads <= 1 CBC then returns the same solution on every run (GLPK has no
                           * node limit; its only limit is the time limit) */
    bool no_pump;         /* CBC only: no feasibility pump.  The node limit does not bound CBC's root,
                           * whose pump took most of the time of every root-only solve of the search's
                           * MILPs and, on a 1,259-op graph, over 20 minutes in one (docs/bound.md) */
    int pump_passes;      /* CBC only, with the pump: its passes (CBC's passF; <= 0: CBC's default, 30) */
} sa_milp_opts;

typedef enum sa_milp_status {
    SA_MILP_OPTIMAL,    /* proven optimal (within rel_gap) */
    SA_MILP_FEASIBLE,   /* stopped with an incumbent (time limit) */
    SA_MILP_NO_SOLUTION,/* stopped without one */
    SA_MILP_INFEASIBLE
} sa_milp_status;

typedef struct sa_milp_result {
    sa_milp_status status;
    double objective;  /* of x (HUGE_VAL without one) */
    double best_bound; /* proven lower bound on the optimum (-HUGE_VAL unknown) */
    double seconds;
    bool timed_out;    /* stopped at time_limit_s (the result depends on the machine's speed) */
    double *x;
    const char *solver; /* "cbc" or "glpk" (static) */
} sa_milp_result;

sa_milp *sa_milp_new(void);
void sa_milp_free(sa_milp *m);
int32_t sa_milp_n_cols(const sa_milp *m);
/* The coefficients of its rows. */
int64_t sa_milp_n_nonzeros(const sa_milp *m);

/* Adds a column; returns its index or -1 on allocation failure. */
int32_t sa_milp_add_col(sa_milp *m, double lb, double ub, double obj, bool integer);
/* Adds a row over n (idx, val) pairs; false on allocation failure. */
bool sa_milp_add_row(sa_milp *m, double lb, double ub, int32_t n, const int32_t *idx, const double *val);

/* Whether the build has a backend (AUTO: any). */
bool sa_milp_have(sa_milp_backend b);
/* Name of the backend AUTO picks ("cbc", "glpk"), or NULL. */
const char *sa_milp_auto_name(void);

/* Solves m.  SA_EUSAGE when the build lacks the backend; SA_ENOMEM;
 * SA_EINTERNAL when the solver fails.  Infeasible and time-limit outcomes are
 * statuses in *r, not errors. */
sa_status sa_milp_solve(const sa_milp *m, const sa_milp_opts *o, sa_milp_result *r, sa_err *err);
void sa_milp_result_free(sa_milp_result *r);

#ifdef __cplusplus
}
#endif

#endif
