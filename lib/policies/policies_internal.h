/* policies_internal.h - the run functions of the policy table's rows
 * (policy.h), one per row, defined in the family's file.  Internal to
 * lib/policies/: not installed, not stable.  Each follows policy_run_fn's
 * contract (policy.h): on failure *out stays NULL. */
#ifndef SA_POLICIES_INTERNAL_H
#define SA_POLICIES_INTERNAL_H

#include "swapadvisor/policy.h"

/* search_policy.c */
sa_status policy_run_swapadvisor(const policy_call *c, plan **out, sa_err *err);

/* pool_policies.c */
sa_status policy_run_ideal(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_topo(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_odswap(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_topo_rc(const policy_call *c, plan **out, sa_err *err);

/* baselines.c */
sa_status policy_run_smartpool(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_vdnn(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_tflms(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_checkpoint_sqrt(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_superneurons(const policy_call *c, plan **out, sa_err *err);

/* adaptive.c */
sa_status policy_run_autoswap(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_capuchin(const policy_call *c, plan **out, sa_err *err);

/* pooch.c */
sa_status policy_run_pooch(const policy_call *c, plan **out, sa_err *err);

/* hybrid.c */
sa_status policy_run_hybrid(const policy_call *c, plan **out, sa_err *err);

/* optimal.c */
sa_status policy_run_optimal(const policy_call *c, plan **out, sa_err *err);
sa_status policy_run_optimal_search(const policy_call *c, plan **out, sa_err *err);

#endif
