/*
 * emit.h - views of a swap plan for people and for other programs
 * (swapplan-emit; docs/emit.md describes every format and how to read it).
 *
 *   check     plan_validate's verdict, one line per violation
 *   summary   predicted time, stalls, traffic, peak arena use, swaps by kind
 *   trace     Chrome Trace Event JSON (Perfetto, chrome://tracing)
 *   dot       the augmented dataflow graph in Graphviz DOT
 *   memory    the device memory in use over time, CSV or an SVG plot
 *   graph     the augmented dataflow graph as "swapexec" JSON for an executor
 *
 * Every emitter takes a plan and the graph it was made for (checked with
 * plan_check_graph: SA_EFORMAT otherwise) and writes to a FILE* the caller
 * opened; it neither opens, flushes nor closes it, and returns SA_EIO when the
 * stream reports a write error.  Times come from sim_run on the plan's own
 * nodes and device (docs/formats.md section 2), not from plan->predicted, so a view
 * never trusts numbers a planner may have got wrong.  A plan whose nodes
 * deadlock gives SA_EINVALID, and a graph op without time_us SA_EFORMAT.
 *
 * Ownership: emit_timeline and emit_curve own their arrays; free them with
 * emit_timeline_free / emit_curve_free (both accept zeroed structs).
 */
#ifndef EMIT_H
#define EMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"
#include "sim.h"

/* ---- the simulated timeline every view is drawn from ---- */

typedef struct emit_timeline {
    int32_t n_nodes;
    double *start, *end;     /* per node, microseconds from the iteration start */
    sim_result sim;          /* makespan, stall, bytes and counts */
} emit_timeline;

/* Simulates p (after plan_check_graph and a check that every op has time_us). */
sa_status emit_timeline_run(const plan *p, const dfg_graph *g, emit_timeline *tl, sa_err *err);
void emit_timeline_free(emit_timeline *tl);

/* ---- memory in use over time ---- */

/* A step function: bytes[i] are in use from time_us[i] until time_us[i + 1]
 * (the last value holds from its time on).  Row 0 is at time 0; every later
 * row marks a change.  Times increase strictly. */
typedef struct emit_curve {
    int32_t n;
    double *time_us;
    int64_t *bytes;
    int64_t peak;            /* the most bytes ever in use (can exceed every bytes[i] only
                              * in the no-swap curve, for ops that take no time) */
} emit_curve;

/* The plan's arena use: each placement occupies its tensor's bytes from the
 * start of its begin node (0 when begin = -1) to the end of its end node (the
 * makespan when end = -1).  tl may be NULL (the plan is simulated). */
sa_status emit_memory_curve(const plan *p, const dfg_graph *g, const emit_timeline *tl, emit_curve *out,
                            sa_err *err);

/* What the same schedule would need without swapping: persistent tensors
 * always, every other tensor from its first to its last use in schedule order
 * (the liveness dfg_peak_bytes documents), with schedule position i drawn at
 * the start time of op schedule[i]'s compute node in the plan; the last row,
 * at the end of the last compute node, keeps only the persistent tensors.
 * SA_EFORMAT when the schedule is not a permutation of the ops. */
sa_status emit_noswap_curve(const plan *p, const dfg_graph *g, const emit_timeline *tl, emit_curve *out,
                            sa_err *err);
void emit_curve_free(emit_curve *c);

/* ---- the views ---- */

/* Validates p against g (strict: orderings enforced by dependencies too) and
 * writes one line per violation found (val_report lines, at most max_lines; 0
 * means all).  SA_OK when valid, SA_EINVALID when not (err holds the first
 * violation); *n_violations (may be NULL) gets the count found. */
sa_status emit_check(const plan *p, const dfg_graph *g, bool strict, int32_t max_lines, FILE *out,
                     int32_t *n_violations, sa_err *err);

/* Human-readable report: iteration time, % of ideal, stall, bytes each way,
 * peak arena use against memory_bytes, swaps by tensor kind, recomputes, and
 * the ten longest stalls of the compute stream with the dependency each one
 * waited for. */
sa_status emit_summary(const plan *p, const dfg_graph *g, FILE *out, sa_err *err);

/* How many stalls emit_summary lists. */
#define EMIT_TOP_STALLS 10

/* Chrome Trace Event JSON: tracks compute (tid 1), h2d (tid 2), d2h (tid 3)
 * of pid 1 named with "M" thread_name events; one "X" event per node; a "C"
 * counter "device memory" following emit_memory_curve. */
sa_status emit_trace(const plan *p, const dfg_graph *g, FILE *out, sa_err *err);

/* Graphviz DOT of the augmented graph.  With a window, only schedule
 * positions first..last (inclusive, 0-based: the first..last compute nodes of
 * the compute stream, which run schedule[first..last]) are shown, with the
 * recompute nodes between them and the swap nodes a dependency links to them;
 * first = 0, last = -1 shows everything.  SA_EUSAGE for a window outside the
 * schedule.  A plan whose nodes deadlock is still drawn (without times), since
 * the picture is how one finds the cycle. */
sa_status emit_dot(const plan *p, const dfg_graph *g, int32_t first, int32_t last, FILE *out, sa_err *err);

/* Memory-in-use CSV "time_us,bytes" (emit_memory_curve, one row per change). */
sa_status emit_memory_csv(const plan *p, const dfg_graph *g, FILE *out, sa_err *err);

/* An SVG plot of emit_memory_curve with emit_noswap_curve for comparison, the
 * capacity line (device memory_bytes), labelled axes and a legend. */
sa_status emit_memory_svg(const plan *p, const dfg_graph *g, FILE *out, sa_err *err);

/* The augmented graph as {"format": "swapexec", "version": 1, ...}: nodes per
 * stream in run order with their deps, every tensor with its placements, the
 * tensors resident at start and the arena size (docs/emit.md). */
sa_status emit_graph_json(const plan *p, const dfg_graph *g, FILE *out, sa_err *err);

#define EMIT_GRAPH_FORMAT_VERSION 1

/* Bytes for people, in decimal units as docs/formats.md counts them: "48 B" below
 * 1000, else "1.23 GB", or with exact set "1.23 GB (1234567890 B)".  Writes
 * into buf (size bytes) and returns it. */
const char *emit_fmt_bytes(char *buf, size_t size, int64_t bytes, bool exact);

#endif
