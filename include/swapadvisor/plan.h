/*
 * plan.h - the swap plan (docs/formats.md section 3, "format": "swapplan"): the
 * augmented dataflow graph of one steady-state iteration plus the arena layout.
 *
 * Ownership: a plan owns all its arrays and strings; free with plan_free().
 * plan_* builders grow the arrays; they return false only on allocation failure.
 */
#ifndef PLAN_H
#define PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "sa_common.h"

#define PLAN_FORMAT_VERSION 1

typedef enum plan_kind { PLAN_COMPUTE, PLAN_SWAP_IN, PLAN_SWAP_OUT, PLAN_RECOMPUTE, PLAN_KIND_COUNT } plan_kind;

/* Streams of the transfer model. */
typedef enum plan_stream { PLAN_STREAM_COMPUTE, PLAN_STREAM_H2D, PLAN_STREAM_D2H, PLAN_STREAM_COUNT } plan_stream;

typedef struct plan_node {
    plan_kind kind;
    int32_t ref;      /* op id (compute, recompute) or tensor id (swaps) */
    int32_t dep_off;  /* deps in plan.deps[dep_off .. dep_off + n_deps) */
    int32_t n_deps;
} plan_node;

typedef struct plan_placement {
    int32_t tensor;
    int64_t offset;
    int32_t begin;    /* node id, -1 = from the start of the iteration */
    int32_t end;      /* node id, -1 = until the end */
} plan_placement;

typedef struct plan_resident {
    int32_t tensor;
    int64_t offset;
} plan_resident;

typedef struct plan_predicted {
    double iteration_us, ideal_us, compute_us, stall_us;
    int64_t h2d_bytes, d2h_bytes;
} plan_predicted;

typedef struct plan {
    char *graph_name;
    int32_t graph_ops, graph_tensors;
    dfg_device device;
    int64_t arena_bytes;
    int32_t n_schedule;
    int32_t *schedule;
    int32_t n_nodes, cap_nodes;
    plan_node *nodes;
    int32_t n_deps, cap_deps;
    int32_t *deps;
    int32_t n_place, cap_place;
    plan_placement *place;
    int32_t n_res, cap_res;
    plan_resident *res;
    plan_predicted predicted;
    char *search_json;  /* the free-form "search" object as JSON text, or NULL */
    char *extra_json;   /* unknown top-level fields */
} plan;

const char *plan_kind_name(plan_kind k);          /* "compute", "swap_in", ... */
bool plan_kind_from_name(const char *s, plan_kind *out);
static inline plan_stream plan_kind_stream(plan_kind k)
{
    return k == PLAN_SWAP_IN ? PLAN_STREAM_H2D : k == PLAN_SWAP_OUT ? PLAN_STREAM_D2H : PLAN_STREAM_COMPUTE;
}
const char *plan_stream_name(plan_stream s);      /* "compute", "h2d", "d2h" */

/* New empty plan for graph g (copies its name and counts, and dev). Caller owns it. */
plan *plan_new(const dfg_graph *g, const dfg_device *dev);
void plan_free(plan *p);

/* Empties nodes, deps, placements and residents but keeps their capacity, so a
 * plan reused across evaluations stops allocating once it has grown. */
void plan_reset(plan *p);

/* Builders. plan_add_node returns the node id or -1; deps are copied. */
int32_t plan_add_node(plan *p, plan_kind kind, int32_t ref, const int32_t *deps, int32_t n_deps);
/* Appends one dependency to the last node added (only valid for the last node). */
bool plan_add_dep_to_last(plan *p, int32_t dep);
bool plan_add_placement(plan *p, int32_t tensor, int64_t offset, int32_t begin, int32_t end);
bool plan_add_resident(plan *p, int32_t tensor, int64_t offset);
bool plan_set_schedule(plan *p, const int32_t *schedule, int32_t n);
bool plan_set_search_json(plan *p, const char *json);

/* Orders the nodes so that each comes after its stream predecessor and its deps
 * (Kahn's algorithm); order has n_nodes entries, filled by the caller's buffer.
 * SA_EINVALID when they form a cycle (the streams would deadlock): *stuck then
 * names a node that can never run.  Deps must be in range (plan_parse checks). */
sa_status plan_node_order(const plan *p, int32_t *order, int32_t *stuck, sa_err *err);

/* Vector clocks over the plan's happens-before order (stream order + deps):
 * spos[i] = node i's position in its stream; vc[b][s] = how many nodes of
 * stream s must have finished before node b starts.  The caller gives spos
 * (n_nodes) and vc (n_nodes rows, zeroed); SA_EINVALID on a cycle, SA_ENOMEM. */
sa_status plan_clocks(const plan *p, int32_t *spos, int32_t (*vc)[PLAN_STREAM_COUNT], sa_err *err);

/* Parses a swapplan v1 document. Checks the format and every reference's range
 * against the document itself (not against a graph: see plan_check_graph). */
sa_status plan_parse(const char *text, size_t len, const char *source, plan **out, sa_err *err);
sa_status plan_load_file(const char *path, plan **out, sa_err *err);

/* Checks that p was made for g: the op and tensor counts match (ids were
 * range-checked against those counts when the plan was parsed).  Names may
 * differ: a graph can be renamed between tools. */
sa_status plan_check_graph(const plan *p, const dfg_graph *g, const char *source, sa_err *err);

/* Serializes; *out malloc'd, caller frees. */
sa_status plan_to_json(const plan *p, char **out, sa_err *err);
sa_status plan_write_file(const plan *p, const char *path, sa_err *err);

#endif
