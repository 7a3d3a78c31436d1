/* policies_internal.h - the run functions of the policy table's rows
 * (policy.h), one per row, defined in the family's file.  Internal to
 * lib/policies/: not installed, not stable.  Each follows sa_policy_run_fn's
 * contract (policy.h): on failure *out stays NULL. */
#ifndef SA_POLICIES_INTERNAL_H
#define SA_POLICIES_INTERNAL_H

#include "swapadvisor/policy.h"

/* search_policy.c */
sa_status policy_run_swapadvisor(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* pool_policies.c */
sa_status policy_run_ideal(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_topo(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_odswap(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_topo_rc(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* baselines.c */
sa_status policy_run_smartpool(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_vdnn(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_tflms(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_checkpoint_sqrt(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_superneurons(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* adaptive.c */
sa_status policy_run_autoswap(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_capuchin(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* pooch.c */
sa_status policy_run_pooch(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* hybrid.c */
sa_status policy_run_hybrid(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* budget.c */
sa_status policy_run_memory_budget(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* dtr.c */
sa_status policy_run_dtr(const sa_policy_call *c, sa_plan **out, sa_err *err);

/* optimal.c */
sa_status policy_run_optimal(const sa_policy_call *c, sa_plan **out, sa_err *err);
sa_status policy_run_optimal_search(const sa_policy_call *c, sa_plan **out, sa_err *err);
/* The MILP's keep / swap / recompute decisions on schedule sch (both decision
 * spaces, the faster plan, as the optimal row on its order) under
 * c->opts->optimal's limits, the plan's search block naming name and
 * carrying extra (a JSON fragment or NULL).  *timed_out: whether the time
 * limit cut a solve (the plan then depends on the machine's speed).  Same
 * refusals as the optimal row (SA_EUSAGE without a solver, SA_EINFEASIBLE);
 * on failure *out is NULL. */
sa_status optimal_on_schedule(const sa_policy_call *c, const char *name, const int32_t *sch, const char *extra,
                              sa_plan **out, bool *timed_out, sa_err *err);

#endif
