/*
 * emit.h - views of a swap plan for people and for other programs
 * (swapplan-emit; docs/emit.md describes every format and how to read it).
 *
 *   check     sa_plan_validate's verdict, one line per violation
 *   summary   predicted time, stalls, traffic, peak arena use, swaps by kind
 *   trace     Chrome Trace Event JSON (Perfetto, chrome://tracing)
 *   dot       the augmented dataflow graph in Graphviz DOT
 *   memory    the device memory in use over time, CSV or an SVG plot
 *   graph     the augmented dataflow graph as "swapexec" JSON for an executor
 *
 * Every emitter takes a plan and the graph it was made for (checked with
 * sa_plan_check_graph: SA_EFORMAT otherwise) and writes to a FILE* the caller
 * opened; it neither opens, flushes nor closes it, and returns SA_EIO when the
 * stream reports a write error.  Times come from sa_sim_run on the plan's own
 * nodes and device (docs/formats.md section 2), not from plan->predicted, so a view
 * never trusts numbers a planner may have got wrong.  A plan whose nodes
 * deadlock gives SA_EINVALID, and a graph op without time_us SA_EFORMAT.
 *
 * Ownership: sa_emit_timeline and sa_emit_curve own their arrays; free them with
 * sa_emit_timeline_free / sa_emit_curve_free (both accept zeroed structs).
 */
#ifndef SWAPADVISOR_EMIT_H
#define SWAPADVISOR_EMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dfg.h"
#include "plan.h"
#include "sa_common.h"
#include "sim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the simulated timeline every view is drawn from ---- */

typedef struct sa_emit_timeline {
    int32_t n_nodes;
    double *start, *end;     /* per node, microseconds from the iteration start */
    sa_sim_result sim;          /* makespan, stall, bytes and counts */
} sa_emit_timeline;

/* Simulates p (after sa_plan_check_graph and a check that every op has time_us). */
sa_status sa_emit_timeline_run(const sa_plan *p, const sa_dfg_graph *g, sa_emit_timeline *tl, sa_err *err);
void sa_emit_timeline_free(sa_emit_timeline *tl);

/* A stall: the compute stream idle before a compute or recompute node.  The
 * stream stood still from gap_us before the node's start; waited_for is what
 * it waited for: the node's dependency that finished last or, when that is a
 * transfer, of it and the transfers queued ahead of it on its stream the one
 * that ran longest within the stall (a small swap-in queued behind a large
 * one is not blamed for the large one's time); -1 when it has none. */
typedef struct sa_emit_stall {
    int32_t node;
    int32_t waited_for;
    double gap_us;
} sa_emit_stall;

/* Every stall of tl's compute stream, in stream order, into *out (the caller
 * frees it with free(); NULL when *n is 0).  A gap counts when it is longer
 * than 1e-9 of its start time (rounding noise is not a stall).  SA_ENOMEM
 * leaves *out NULL and *n 0. */
sa_status sa_emit_stalls(const sa_plan *p, const sa_emit_timeline *tl, sa_emit_stall **out, int32_t *n, sa_err *err);

/* ---- memory in use over time ---- */

/* A step function: bytes[i] are in use from time_us[i] until time_us[i + 1]
 * (the last value holds from its time on).  Row 0 is at time 0; every later
 * row marks a change.  Times increase strictly. */
typedef struct sa_emit_curve {
    int32_t n;
    double *time_us;
    int64_t *bytes;
    int64_t peak;            /* the most bytes ever in use; it can exceed every bytes[i]
                              * where memory is taken and given back at one instant (ops
                              * that take no time) */
} sa_emit_curve;

/* The plan's arena use: each placement occupies its tensor's bytes from the
 * start of its begin node (0 when begin = -1) to the end of its end node (the
 * makespan when end = -1).  The rows hold what is in use after each instant; the
 * peak also counts placements that last no time, taken and given back at one
 * instant in the order docs/formats.md gives equal times (node by node in a
 * topological order of stream order + deps, after the ends of nodes that lasted).
 * tl may be NULL (the plan is simulated). */
sa_status sa_emit_memory_curve(const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, sa_emit_curve *out,
                            sa_err *err);

/* What the same schedule would need without swapping: persistent tensors
 * always, every other tensor from its first to its last use in schedule order
 * (the liveness sa_dfg_peak_bytes documents), with schedule position i drawn at
 * the start time of op schedule[i]'s compute node in the plan; the last row,
 * at the end of the last compute node, keeps only the persistent tensors.
 * SA_EFORMAT when the schedule is not a permutation of the ops. */
sa_status sa_emit_noswap_curve(const sa_plan *p, const sa_dfg_graph *g, const sa_emit_timeline *tl, sa_emit_curve *out,
                            sa_err *err);
void sa_emit_curve_free(sa_emit_curve *c);

/* ---- the views ---- */

/* Validates p against g (strict: orderings enforced by dependencies too) and
 * writes one line per violation found (sa_val_report lines, at most max_lines; 0
 * means all).  SA_OK when valid, SA_EINVALID when not (err holds the first
 * violation); *n_violations (may be NULL) gets the count found. */
sa_status sa_emit_check(const sa_plan *p, const sa_dfg_graph *g, bool strict, int32_t max_lines, FILE *out,
                     int32_t *n_violations, sa_err *err);

/* Human-readable report: iteration time, % of ideal, stall, bytes each way,
 * peak arena use against memory_bytes, swaps by tensor kind, recomputes, and
 * the ten longest stalls of the compute stream with the dependency each one
 * waited for. */
sa_status sa_emit_summary(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err);

/* How many stalls sa_emit_summary lists. */
#define SA_EMIT_TOP_STALLS 10

/* Chrome Trace Event JSON: tracks compute (tid 1), h2d (tid 2), d2h (tid 3)
 * of pid 1 named with "M" thread_name events; one "X" event per node; a "C"
 * counter "device memory" following sa_emit_memory_curve. */
sa_status sa_emit_trace(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err);

/* Graphviz DOT of the augmented graph.  With a window, only schedule
 * positions first..last (inclusive, 0-based: the first..last compute nodes of
 * the compute stream, which run schedule[first..last]) are shown, with the
 * recompute nodes between them and the swap nodes a dependency links to them;
 * first = 0, last = -1 shows everything.  SA_EUSAGE for a window outside the
 * schedule.  A plan whose nodes deadlock is still drawn (without times), since
 * the picture is how one finds the cycle. */
sa_status sa_emit_dot(const sa_plan *p, const sa_dfg_graph *g, int32_t first, int32_t last, FILE *out, sa_err *err);

/* Memory-in-use CSV "time_us,bytes" (sa_emit_memory_curve, one row per change). */
sa_status sa_emit_memory_csv(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err);

/* An SVG plot of sa_emit_memory_curve with sa_emit_noswap_curve for comparison, the
 * capacity line (device memory_bytes, with its GiB value when it is a whole
 * number of GiB), labelled axes (time in us, ms or s) and a legend laid out
 * by measured text width.  sa_emit_memory_svg is sa_emit_memory_svg_scaled with
 * SA_EMIT_SCALE_AUTO. */
typedef enum sa_emit_scale {
    SA_EMIT_SCALE_AUTO, /* ZOOM when the no-swap peak exceeds SA_EMIT_ZOOM_RATIO x max(plan peak, capacity) */
    SA_EMIT_SCALE_FULL, /* the y axis reaches the highest curve */
    SA_EMIT_SCALE_ZOOM  /* the y axis reaches the plan's peak or the capacity; the no-swap curve is cut
                      * there, and an inset shows the whole picture with the zoomed band marked */
} sa_emit_scale;
#define SA_EMIT_ZOOM_RATIO 3.0
sa_status sa_emit_memory_svg(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err);
sa_status sa_emit_memory_svg_scaled(const sa_plan *p, const sa_dfg_graph *g, sa_emit_scale scale, FILE *out, sa_err *err);

/* Several plans of one graph (labels[i] names plans[i]; each is checked
 * against g as every view does) in one SVG: per plan a bar of iteration time
 * (compute + stall) and one of traffic (h2d + d2h) on common scales with the
 * figures beside them, then every plan's memory in use on one time axis with
 * the capacity lines.  SA_EUSAGE when n < 1; a failing plan's error names
 * its label. */
sa_status sa_emit_compare_svg(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g,
                           FILE *out, sa_err *err);

/* One self-contained HTML page (no network access: data, script and styles
 * inline) showing plans[0..n) of g: a plan picker when n > 1 and then the
 * comparison SVG; for the chosen plan its summary, the ten longest stalls,
 * the three-stream timeline (canvas; stalls marked; hovering a node names it
 * and draws its dependencies) and the arena over time with one band per
 * placement at its offset (hover: tensor, kind, size, why it arrived and
 * why it left), the capacity and the bytes in use.  Wheel zooms the time
 * axis of both, dragging pans, double click resets.  Drawing touches only
 * what is visible, so 40k-node plans stay interactive. */
sa_status sa_emit_html(const sa_plan *const *plans, const char *const *labels, int32_t n, const sa_dfg_graph *g, FILE *out,
                    sa_err *err);

/* A label for a plan: its search block's "algorithm" (with " @ SIZE" of its
 * memory_bytes when with_memory), else fallback.  Writes into buf. */
const char *sa_emit_plan_label(const sa_plan *p, const char *fallback, bool with_memory, char *buf, size_t size);

/* The augmented graph as {"format": "swapexec", "version": 1, ...}: nodes per
 * stream in run order with their deps, every tensor with its placements, the
 * tensors resident at start and the arena size (docs/emit.md). */
sa_status sa_emit_graph_json(const sa_plan *p, const sa_dfg_graph *g, FILE *out, sa_err *err);

#define SA_EMIT_GRAPH_FORMAT_VERSION 1

/* Bytes for people, in decimal units as docs/formats.md counts them: "48 B" below
 * 1000, else "1.23 GB", or with exact set "1.23 GB (1234567890 B)".  Writes
 * into buf (size bytes) and returns it. */
const char *sa_emit_fmt_bytes(char *buf, size_t size, int64_t bytes, bool exact);

#ifdef __cplusplus
}
#endif

#endif
