/* search_policy.c - the swapadvisor row: SwapAdvisor's genetic search
 * (ga.h) with the options of policy_opts.search. */
#include "swapadvisor/ga.h"
#include "policies_internal.h"

sa_status policy_run_swapadvisor(const policy_call *c, plan **out, sa_err *err)
{
    ga_result res;
    sa_status st = ga_search(c->g, c->dev, &c->opts->search, &res, err);
    *out = st ? NULL : res.best;
    return st;
}
