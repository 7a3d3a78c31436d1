/*
 * sim.h - the three-stream event simulator (docs/formats.md section 2).
 *
 * Streams compute, h2d and d2h run their nodes in plan order.  A node starts
 * when its stream is free and all its deps have finished.  Compute and
 * recompute nodes last the op's time_us.  A transfer waits the link latency,
 * then moves its bytes at its own rate, or at min(own rate, duplex / 2) while
 * the other direction is also moving bytes (a fluid model: rates change when
 * the other side starts or stops).
 *
 * It is the search's fitness function: after the workspace has grown to the
 * largest plan seen, sa_sim_run allocates nothing.
 *
 * Ownership: sa_sim_ws is opaque and owned by its creator (sa_sim_ws_free).  The
 * time arrays it hands out belong to it and stay valid until the next run.
 */
#ifndef SWAPADVISOR_SIM_H
#define SWAPADVISOR_SIM_H

#include <stdint.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sa_sim_result {
    double makespan_us;   /* end of the last node */
    double compute_us;    /* busy time of the compute stream */
    double stall_us;      /* compute stream idle time before its last node ends */
    int64_t h2d_bytes, d2h_bytes;
    int32_t n_swap_in, n_swap_out, n_recompute;
} sa_sim_result;

typedef struct sa_sim_ws sa_sim_ws;

sa_sim_ws *sa_sim_ws_new(void);
void sa_sim_ws_free(sa_sim_ws *ws);

/* Simulates p's nodes with g's op times and p->device's links.
 * SA_EINVALID when the nodes deadlock (a dependency cycle across streams);
 * err then names a node that never started. */
sa_status sa_sim_run(const sa_plan *p, const sa_dfg_graph *g, sa_sim_ws *ws, sa_sim_result *out, sa_err *err);

/* Start and end times of every node of the last run (n_nodes entries). */
const double *sa_sim_start(const sa_sim_ws *ws);
const double *sa_sim_end(const sa_sim_ws *ws);

/* Duration a transfer of `bytes` takes alone on a link (latency included). */
double sa_sim_transfer_alone_us(const sa_dfg_device *dev, int64_t bytes, sa_plan_stream s);

#ifdef __cplusplus
}
#endif

#endif
