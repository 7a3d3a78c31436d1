/*
 * dfg.h - the dataflow graph of one training iteration (docs/formats.md section 1)
 * and the device block / device profiles (section 2).
 *
 * A graph is plain flat arrays indexed by id.  After sa_dfg_finalize() (which the
 * loaders call) the derived fields are filled and the graph is read-only: any
 * number of threads may read it at once.
 *
 * Ownership: a sa_dfg_graph owns every array and string it points to; free it with
 * sa_dfg_free().  Pointers into it stay valid until then.
 */
#ifndef SWAPADVISOR_DFG_H
#define SWAPADVISOR_DFG_H

#include <stdbool.h>
#include <stdint.h>

#include "sa_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SA_DFG_FORMAT_VERSION 1
#define SA_DFG_PROFILE_VERSION 1
#define SA_DFG_MAX_EXACT_INT 9007199254740992.0 /* 2^53 */
/* The largest time (us) a document may give or the cost model may produce: an op's
 * time_us, transfer_latency_us, launch_overhead_us (about 3e16 years). Sums of
 * 2^31 such times and their products with byte counts stay finite in a double. */
#define SA_DFG_MAX_TIME_US 1e30

typedef enum sa_dfg_kind {
    SA_DFG_PARAM,
    SA_DFG_STATE,
    SA_DFG_INPUT,
    SA_DFG_ACTIVATION,
    SA_DFG_GRADIENT,
    SA_DFG_WORKSPACE,
    SA_DFG_KIND_COUNT
} sa_dfg_kind;

typedef enum sa_dfg_phase { SA_DFG_FORWARD, SA_DFG_BACKWARD, SA_DFG_UPDATE, SA_DFG_PHASE_COUNT } sa_dfg_phase;

typedef struct sa_dfg_tensor {
    char *name;
    sa_dfg_kind kind;
    int64_t bytes;
    char *dtype;       /* NULL when absent */
    int32_t ndim;      /* 0 when shape absent */
    int64_t *shape;
    char *extra_json;  /* unknown fields as a JSON object text, or NULL */
    /* derived by sa_dfg_finalize */
    int32_t producer;  /* op writing a non-persistent tensor, else -1 */
    int32_t updater;   /* op updating a persistent tensor in place, else -1 */
    int32_t size_idx;  /* index into sa_dfg_graph.sizes */
    int32_t n_readers; /* readers in sa_dfg_graph.readers[reader_off ..] */
    int32_t reader_off;
} sa_dfg_tensor;

typedef struct sa_dfg_op {
    char *name;
    char *type;
    sa_dfg_phase phase;
    int32_t n_in, n_out;
    int32_t *in, *out;
    double flops;          /* < 0 when absent */
    double bytes_accessed; /* < 0 when absent */
    double time_us;        /* < 0 when absent (not profiled) */
    char *extra_json;
    /* derived: the distinct tensors the op touches (inputs then new outputs) */
    int32_t n_use;
    int32_t *use;
} sa_dfg_op;

/* The device block of a graph or plan (docs/formats.md section 2). */
typedef struct sa_dfg_device {
    char name[96];
    int64_t memory_bytes;
    double h2d_bytes_per_s;
    double d2h_bytes_per_s;
    double duplex_bytes_per_s;
    double transfer_latency_us;
    /* bytes of device memory the kernels' own workspaces (cuBLAS, cuDNN) take
     * beside the graph's tensors; 0 when the block has none.  A planner plans
     * in memory_bytes less this reserve (docs/formats.md, the device block) */
    int64_t workspace_reserve_bytes;
} sa_dfg_device;

typedef struct sa_dfg_graph {
    char *name;
    int64_t batch;             /* -1 when absent */
    int32_t n_tensors, n_ops, n_control;
    sa_dfg_tensor *tensors;
    sa_dfg_op *ops;
    int32_t (*control)[2];     /* [before, after] op pairs */
    bool has_device;
    sa_dfg_device device;
    char *extra_json;          /* unknown top-level fields */
    /* derived by sa_dfg_finalize */
    bool finalized;
    int32_t *readers;          /* flat reader lists, see sa_dfg_tensor */
    int32_t *pred_off, *pred;  /* CSR: op -> predecessor ops (deduplicated) */
    int32_t *succ_off, *succ;  /* CSR: op -> successor ops (deduplicated) */
    int32_t *topo;             /* default schedule: Kahn's order, smallest id first */
    int32_t n_sizes;
    int64_t *sizes;            /* sorted distinct tensor sizes (TS in the paper) */
    int32_t capacity_tensors, capacity_ops, capacity_control; /* builder growth */
} sa_dfg_graph;

/* ---- names ---- */
const char *sa_dfg_kind_name(sa_dfg_kind k);            /* static string */
const char *sa_dfg_phase_name(sa_dfg_phase p);          /* static string */
bool sa_dfg_kind_from_name(const char *s, sa_dfg_kind *out);
bool sa_dfg_phase_from_name(const char *s, sa_dfg_phase *out);
static inline bool sa_dfg_kind_persistent(sa_dfg_kind k) { return k == SA_DFG_PARAM || k == SA_DFG_STATE; }

/* ---- building a graph in memory (the zoo and the tests use this) ---- */

/* New empty graph; caller owns it (sa_dfg_free). NULL on allocation failure. */
sa_dfg_graph *sa_dfg_new(const char *name);

/* Appends a tensor; returns its id, or -1 on allocation failure. name is copied. */
int32_t sa_dfg_add_tensor(sa_dfg_graph *g, const char *name, sa_dfg_kind kind, int64_t bytes);

/* Sets a tensor's shape and dtype (both copied). Returns false on allocation failure. */
bool sa_dfg_set_shape(sa_dfg_graph *g, int32_t tensor, int32_t ndim, const int64_t *shape, const char *dtype);

/* Appends an op; returns its id, or -1 on allocation failure. Arrays are copied.
 * flops, bytes_accessed and time_us start absent (-1). */
int32_t sa_dfg_add_op(sa_dfg_graph *g, const char *name, const char *type, sa_dfg_phase phase,
                   const int32_t *in, int32_t n_in, const int32_t *out, int32_t n_out);

/* Appends a control dependency before -> after. */
bool sa_dfg_add_control(sa_dfg_graph *g, int32_t before, int32_t after);

/* Checks every loader rule of docs/formats.md section 1 and fills the derived fields.
 * source names the document in error messages. Idempotent. */
sa_status sa_dfg_finalize(sa_dfg_graph *g, const char *source, sa_err *err);

/* Frees a graph and everything it owns. NULL is fine. */
void sa_dfg_free(sa_dfg_graph *g);

/* ---- JSON I/O (cJSON stays inside these) ---- */

/* Parses a dfg v1 document of len bytes; source names it in errors.
 * On success *out is a finalized graph the caller owns. */
sa_status sa_dfg_parse(const char *text, size_t len, const char *source, sa_dfg_graph **out, sa_err *err);

/* Reads path ("-" = stdin) and parses it. */
sa_status sa_dfg_load_file(const char *path, sa_dfg_graph **out, sa_err *err);

/* Serializes g as a dfg v1 document (unknown fields kept). *out is malloc'd, caller frees. */
sa_status sa_dfg_to_json(const sa_dfg_graph *g, bool pretty, char **out, sa_err *err);

/* Writes g to path atomically ("-" = stdout). */
sa_status sa_dfg_write_file(const sa_dfg_graph *g, const char *path, sa_err *err);

/* ---- whole-graph figures ---- */
int64_t sa_dfg_total_bytes(const sa_dfg_graph *g);      /* sum of all tensor bytes (Table 1 MemUsage) */
int64_t sa_dfg_persistent_bytes(const sa_dfg_graph *g); /* params and optimizer state: resident all iteration */
double sa_dfg_total_time_us(const sa_dfg_graph *g);     /* sum of op time_us (ideal compute stream) */
int64_t sa_dfg_param_count_elems(const sa_dfg_graph *g, int64_t elem_bytes); /* param bytes / elem_bytes */
/* Largest working set of a single op (its distinct tensors' bytes). */
int64_t sa_dfg_max_op_bytes(const sa_dfg_graph *g, int32_t *op_out);
/* Where non-persistent tensor t is live in a schedule, given pos[op] = the
 * op's position: from its producer (an input: its first reader) to its last
 * reader, inclusive.  false for persistent tensors (always live) and for
 * inputs nobody reads (never live). */
bool sa_dfg_tensor_span(const sa_dfg_graph *g, const int32_t *pos, int32_t t, int32_t *first, int32_t *last);

/* Peak of live bytes when running the schedule with unlimited memory: every
 * persistent tensor resident throughout, activations from producer to last
 * reader in schedule order. schedule NULL = g->topo. */
int64_t sa_dfg_peak_bytes(const sa_dfg_graph *g, const int32_t *schedule);

/* True when schedule (n_ops entries) is a topological order of g. */
bool sa_dfg_is_topological(const sa_dfg_graph *g, const int32_t *schedule);

#ifdef __cplusplus
}
#endif

#endif
