/*
 * plan.h - the swap plan (docs/formats.md section 3, "format": "swapplan"): the
 * augmented dataflow graph of one steady-state iteration plus the arena layout.
 *
 * Ownership: a plan owns all its arrays and strings; free with sa_plan_free().
 * sa_plan_* builders grow the arrays; they return false only on allocation failure.
 */
#ifndef SWAPADVISOR_PLAN_H
#define SWAPADVISOR_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SA_PLAN_FORMAT_VERSION 1

typedef enum sa_plan_kind { SA_PLAN_COMPUTE, SA_PLAN_SWAP_IN, SA_PLAN_SWAP_OUT, SA_PLAN_RECOMPUTE, SA_PLAN_KIND_COUNT } sa_plan_kind;

/* Streams of the transfer model. */
typedef enum sa_plan_stream { SA_PLAN_STREAM_COMPUTE, SA_PLAN_STREAM_H2D, SA_PLAN_STREAM_D2H, SA_PLAN_STREAM_COUNT } sa_plan_stream;

typedef struct sa_plan_node {
    sa_plan_kind kind;
    int32_t ref;      /* op id (compute, recompute) or tensor id (swaps) */
    int32_t dep_off;  /* deps in plan.deps[dep_off .. dep_off + n_deps) */
    int32_t n_deps;
} sa_plan_node;

typedef struct sa_plan_placement {
    int32_t tensor;
    int64_t offset;
    int32_t begin;    /* node id, -1 = from the start of the iteration */
    int32_t end;      /* node id, -1 = until the end */
} sa_plan_placement;

typedef struct sa_plan_resident {
    int32_t tensor;
    int64_t offset;
} sa_plan_resident;

typedef struct sa_plan_predicted {
    double iteration_us, ideal_us, compute_us, stall_us;
    int64_t h2d_bytes, d2h_bytes;
} sa_plan_predicted;

typedef struct sa_plan {
    char *graph_name;
    int32_t graph_ops, graph_tensors;
    sa_dfg_device device;
    int64_t arena_bytes;
    int32_t n_schedule;
    int32_t *schedule;
    int32_t n_nodes, cap_nodes;
    sa_plan_node *nodes;
    int32_t n_deps, cap_deps;
    int32_t *deps;
    int32_t n_place, cap_place;
    sa_plan_placement *place;
    int32_t n_res, cap_res;
    sa_plan_resident *res;
    sa_plan_predicted predicted;
    char *search_json;  /* the free-form "search" object as JSON text, or NULL */
    char *extra_json;   /* unknown top-level fields */
} sa_plan;

const char *sa_plan_kind_name(sa_plan_kind k);          /* "compute", "swap_in", ... */
bool sa_plan_kind_from_name(const char *s, sa_plan_kind *out);
static inline sa_plan_stream sa_plan_kind_stream(sa_plan_kind k)
{
    return k == SA_PLAN_SWAP_IN ? SA_PLAN_STREAM_H2D : k == SA_PLAN_SWAP_OUT ? SA_PLAN_STREAM_D2H : SA_PLAN_STREAM_COMPUTE;
}
const char *sa_plan_stream_name(sa_plan_stream s);      /* "compute", "h2d", "d2h" */

/* New empty plan for graph g (copies its name and counts, and dev). Caller owns it. */
sa_plan *sa_plan_new(const sa_dfg_graph *g, const sa_dfg_device *dev);
void sa_plan_free(sa_plan *p);

/* Empties nodes, deps, placements and residents but keeps their capacity, so a
 * plan reused across evaluations stops allocating once it has grown. */
void sa_plan_reset(sa_plan *p);

/* Builders. sa_plan_add_node returns the node id or -1; deps are copied. */
int32_t sa_plan_add_node(sa_plan *p, sa_plan_kind kind, int32_t ref, const int32_t *deps, int32_t n_deps);
/* Appends one dependency to the last node added (only valid for the last node). */
bool sa_plan_add_dep_to_last(sa_plan *p, int32_t dep);
bool sa_plan_add_placement(sa_plan *p, int32_t tensor, int64_t offset, int32_t begin, int32_t end);
bool sa_plan_add_resident(sa_plan *p, int32_t tensor, int64_t offset);
bool sa_plan_set_schedule(sa_plan *p, const int32_t *schedule, int32_t n);
bool sa_plan_set_search_json(sa_plan *p, const char *json);

/* Orders the nodes so that each comes after its stream predecessor and its deps
 * (Kahn's algorithm); order has n_nodes entries, filled by the caller's buffer.
 * SA_EINVALID when they form a cycle (the streams would deadlock): *stuck then
 * names a node that can never run.  Deps must be in range (sa_plan_parse checks). */
sa_status sa_plan_node_order(const sa_plan *p, int32_t *order, int32_t *stuck, sa_err *err);

/* Vector clocks over the plan's happens-before order (stream order + deps):
 * spos[i] = node i's position in its stream; vc[b][s] = how many nodes of
 * stream s must have finished before node b starts.  The caller gives spos
 * (n_nodes) and vc (n_nodes rows, zeroed); SA_EINVALID on a cycle, SA_ENOMEM. */
sa_status sa_plan_clocks(const sa_plan *p, int32_t *spos, int32_t (*vc)[SA_PLAN_STREAM_COUNT], sa_err *err);

/* Parses a swapplan v1 document. Checks the format and every reference's range
 * against the document itself (not against a graph: see sa_plan_check_graph). */
sa_status sa_plan_parse(const char *text, size_t len, const char *source, sa_plan **out, sa_err *err);
sa_status sa_plan_load_file(const char *path, sa_plan **out, sa_err *err);

/* Checks that p was made for g: the op and tensor counts match (ids were
 * range-checked against those counts when the plan was parsed).  Names may
 * differ: a graph can be renamed between tools. */
sa_status sa_plan_check_graph(const sa_plan *p, const sa_dfg_graph *g, const char *source, sa_err *err);

/* Serializes; *out malloc'd, caller frees. */
sa_status sa_plan_to_json(const sa_plan *p, char **out, sa_err *err);
sa_status sa_plan_write_file(const sa_plan *p, const char *path, sa_err *err);

#ifdef __cplusplus
}
#endif

#endif
