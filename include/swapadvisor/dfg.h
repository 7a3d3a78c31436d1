/*
 * dfg.h - the dataflow graph of one training iteration (docs/formats.md section 1)
 * and the device block / device profiles (section 2).
 *
 * A graph is plain flat arrays indexed by id.  After dfg_finalize() (which the
 * loaders call) the derived fields are filled and the graph is read-only: any
 * number of threads may read it at once.
 *
 * Ownership: a dfg_graph owns every array and string it points to; free it with
 * dfg_free().  Pointers into it stay valid until then.
 */
#ifndef DFG_H
#define DFG_H

#include <stdbool.h>
#include <stdint.h>

#include "sa_common.h"

#define DFG_FORMAT_VERSION 1
#define DFG_PROFILE_VERSION 1
#define DFG_MAX_EXACT_INT 9007199254740992.0 /* 2^53 */
/* The largest time (us) a document may give or the cost model may produce: an op's
 * time_us, transfer_latency_us, launch_overhead_us (about 3e16 years). Sums of
 * 2^31 such times and their products with byte counts stay finite in a double. */
#define DFG_MAX_TIME_US 1e30

typedef enum dfg_kind {
    DFG_PARAM,
    DFG_STATE,
    DFG_INPUT,
    DFG_ACTIVATION,
    DFG_GRADIENT,
    DFG_WORKSPACE,
    DFG_KIND_COUNT
} dfg_kind;

typedef enum dfg_phase { DFG_FORWARD, DFG_BACKWARD, DFG_UPDATE, DFG_PHASE_COUNT } dfg_phase;

typedef struct dfg_tensor {
    char *name;
    dfg_kind kind;
    int64_t bytes;
    char *dtype;       /* NULL when absent */
    int32_t ndim;      /* 0 when shape absent */
    int64_t *shape;
    char *extra_json;  /* unknown fields as a JSON object text, or NULL */
    /* derived by dfg_finalize */
    int32_t producer;  /* op writing a non-persistent tensor, else -1 */
    int32_t updater;   /* op updating a persistent tensor in place, else -1 */
    int32_t size_idx;  /* index into dfg_graph.sizes */
    int32_t n_readers; /* readers in dfg_graph.readers[reader_off ..] */
    int32_t reader_off;
} dfg_tensor;

typedef struct dfg_op {
    char *name;
    char *type;
    dfg_phase phase;
    int32_t n_in, n_out;
    int32_t *in, *out;
    double flops;          /* < 0 when absent */
    double bytes_accessed; /* < 0 when absent */
    double time_us;        /* < 0 when absent (not profiled) */
    char *extra_json;
    /* derived: the distinct tensors the op touches (inputs then new outputs) */
    int32_t n_use;
    int32_t *use;
} dfg_op;

/* The device block of a graph or plan (docs/formats.md section 2). */
typedef struct dfg_device {
    char name[96];
    int64_t memory_bytes;
    double h2d_bytes_per_s;
    double d2h_bytes_per_s;
    double duplex_bytes_per_s;
    double transfer_latency_us;
} dfg_device;

typedef struct dfg_graph {
    char *name;
    int64_t batch;             /* -1 when absent */
    int32_t n_tensors, n_ops, n_control;
    dfg_tensor *tensors;
    dfg_op *ops;
    int32_t (*control)[2];     /* [before, after] op pairs */
    bool has_device;
    dfg_device device;
    char *extra_json;          /* unknown top-level fields */
    /* derived by dfg_finalize */
    bool finalized;
    int32_t *readers;          /* flat reader lists, see dfg_tensor */
    int32_t *pred_off, *pred;  /* CSR: op -> predecessor ops (deduplicated) */
    int32_t *succ_off, *succ;  /* CSR: op -> successor ops (deduplicated) */
    int32_t *topo;             /* default schedule: Kahn's order, smallest id first */
    int32_t n_sizes;
    int64_t *sizes;            /* sorted distinct tensor sizes (TS in the paper) */
    int32_t capacity_tensors, capacity_ops, capacity_control; /* builder growth */
} dfg_graph;

/* ---- names ---- */
const char *dfg_kind_name(dfg_kind k);            /* static string */
const char *dfg_phase_name(dfg_phase p);          /* static string */
bool dfg_kind_from_name(const char *s, dfg_kind *out);
bool dfg_phase_from_name(const char *s, dfg_phase *out);
static inline bool dfg_kind_persistent(dfg_kind k) { return k == DFG_PARAM || k == DFG_STATE; }

/* ---- building a graph in memory (the zoo and the tests use this) ---- */

/* New empty graph; caller owns it (dfg_free). NULL on allocation failure. */
dfg_graph *dfg_new(const char *name);

/* Appends a tensor; returns its id, or -1 on allocation failure. name is copied. */
int32_t dfg_add_tensor(dfg_graph *g, const char *name, dfg_kind kind, int64_t bytes);

/* Sets a tensor's shape and dtype (both copied). Returns false on allocation failure. */
bool dfg_set_shape(dfg_graph *g, int32_t tensor, int32_t ndim, const int64_t *shape, const char *dtype);

/* Appends an op; returns its id, or -1 on allocation failure. Arrays are copied.
 * flops, bytes_accessed and time_us start absent (-1). */
int32_t dfg_add_op(dfg_graph *g, const char *name, const char *type, dfg_phase phase,
                   const int32_t *in, int32_t n_in, const int32_t *out, int32_t n_out);

/* Appends a control dependency before -> after. */
bool dfg_add_control(dfg_graph *g, int32_t before, int32_t after);

/* Checks every loader rule of docs/formats.md section 1 and fills the derived fields.
 * source names the document in error messages. Idempotent. */
sa_status dfg_finalize(dfg_graph *g, const char *source, sa_err *err);

/* Frees a graph and everything it owns. NULL is fine. */
void dfg_free(dfg_graph *g);

/* ---- JSON I/O (cJSON stays inside these) ---- */

/* Parses a dfg v1 document of len bytes; source names it in errors.
 * On success *out is a finalized graph the caller owns. */
sa_status dfg_parse(const char *text, size_t len, const char *source, dfg_graph **out, sa_err *err);

/* Reads path ("-" = stdin) and parses it. */
sa_status dfg_load_file(const char *path, dfg_graph **out, sa_err *err);

/* Serializes g as a dfg v1 document (unknown fields kept). *out is malloc'd, caller frees. */
sa_status dfg_to_json(const dfg_graph *g, bool pretty, char **out, sa_err *err);

/* Writes g to path atomically ("-" = stdout). */
sa_status dfg_write_file(const dfg_graph *g, const char *path, sa_err *err);

/* ---- whole-graph figures ---- */
int64_t dfg_total_bytes(const dfg_graph *g);      /* sum of all tensor bytes (Table 1 MemUsage) */
int64_t dfg_persistent_bytes(const dfg_graph *g); /* params and optimizer state: resident all iteration */
double dfg_total_time_us(const dfg_graph *g);     /* sum of op time_us (ideal compute stream) */
int64_t dfg_param_count_elems(const dfg_graph *g, int64_t elem_bytes); /* param bytes / elem_bytes */
/* Largest working set of a single op (its distinct tensors' bytes). */
int64_t dfg_max_op_bytes(const dfg_graph *g, int32_t *op_out);
/* Where non-persistent tensor t is live in a schedule, given pos[op] = the
 * op's position: from its producer (an input: its first reader) to its last
 * reader, inclusive.  false for persistent tensors (always live) and for
 * inputs nobody reads (never live). */
bool dfg_tensor_span(const dfg_graph *g, const int32_t *pos, int32_t t, int32_t *first, int32_t *last);

/* Peak of live bytes when running the schedule with unlimited memory: every
 * persistent tensor resident throughout, activations from producer to last
 * reader in schedule order. schedule NULL = g->topo. */
int64_t dfg_peak_bytes(const dfg_graph *g, const int32_t *schedule);

/* True when schedule (n_ops entries) is a topological order of g. */
bool dfg_is_topological(const dfg_graph *g, const int32_t *schedule);

#endif
