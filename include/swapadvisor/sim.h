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
 * largest plan seen, sim_run allocates nothing.
 *
 * Ownership: sim_ws is opaque and owned by its creator (sim_ws_free).  The
 * time arrays it hands out belong to it and stay valid until the next run.
 */
#ifndef SIM_H
#define SIM_H

#include <stdint.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"

typedef struct sim_result {
    double makespan_us;   /* end of the last node */
    double compute_us;    /* busy time of the compute stream */
    double stall_us;      /* compute stream idle time before its last node ends */
    int64_t h2d_bytes, d2h_bytes;
    int32_t n_swap_in, n_swap_out, n_recompute;
} sim_result;

typedef struct sim_ws sim_ws;

sim_ws *sim_ws_new(void);
void sim_ws_free(sim_ws *ws);

/* Simulates p's nodes with g's op times and p->device's links.
 * SA_EINVALID when the nodes deadlock (a dependency cycle across streams);
 * err then names a node that never started. */
sa_status sim_run(const plan *p, const dfg_graph *g, sim_ws *ws, sim_result *out, sa_err *err);

/* Start and end times of every node of the last run (n_nodes entries). */
const double *sim_start(const sim_ws *ws);
const double *sim_end(const sim_ws *ws);

/* Duration a transfer of `bytes` takes alone on a link (latency included). */
double sim_transfer_alone_us(const dfg_device *dev, int64_t bytes, plan_stream s);

#endif
