/*
 * validate.h - checks a plan against its graph, rules 1-6 of docs/formats.md
 * section 3, independently of the planner's bookkeeping: it re-simulates the
 * nodes, replays starts and ends in time order while tracking which version of
 * every tensor the device and the host hold, and checks placements in
 * address x time.
 *
 * With strict set it also demands that every ordering the plan relies on is
 * enforced by the dependency graph (stream order plus deps), not only by the
 * simulated timing: what a real device needs, since its timings differ.
 *
 * Ownership: a sa_val_report owns its lines; sa_val_report_free.
 */
#ifndef SWAPADVISOR_VALIDATE_H
#define SWAPADVISOR_VALIDATE_H

#include <stdbool.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sa_val_report {
    int32_t n_violations;   /* all found */
    int32_t n_lines, cap_lines;
    char **lines;           /* the first max_lines violations, one line each */
    int32_t max_lines;      /* set before the call; 0 = 100 */
    double makespan_us;     /* of the re-simulation */
} sa_val_report;

void sa_val_report_free(sa_val_report *r);

/* SA_OK when valid; SA_EINVALID when not (err holds the first violation and
 * rep, when given, all of them); other codes for OOM or a plan that does not
 * belong to g (SA_EFORMAT). */
sa_status sa_plan_validate(const sa_plan *p, const sa_dfg_graph *g, bool strict, sa_val_report *rep, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
