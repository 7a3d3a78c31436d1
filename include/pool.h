/*
 * pool.h - SwapAdvisor's memory allocation encoding (paper section 5.3).
 *
 * TS is the graph's sorted distinct tensor sizes (dfg_graph.sizes).  CLS maps
 * each size index to a size class: CLS[0] = 0 and each step is +0 or +1, so
 * classes are contiguous runs of sizes.  A class's object size is the largest
 * size mapped to it (rounded up to POOL_ALIGN).  CNT[c] objects of class c are
 * laid out class after class from offset 0; the pool must fit memory_bytes.
 *
 * Ownership: pool_alloc owns its arrays; pool_alloc_init/pool_alloc_free.
 */
#ifndef POOL_H
#define POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "dfg.h"
#include "sa_common.h"

#define POOL_ALIGN 256

typedef struct pool_alloc {
    int32_t n_sizes;      /* length of cls */
    int32_t n_classes;    /* cls[n_sizes - 1] + 1 */
    int32_t *cls;         /* [n_sizes] */
    int32_t *cnt;         /* [n_sizes] (only the first n_classes used) */
    /* derived by pool_layout */
    int64_t *obj_bytes;   /* [n_sizes] object size of each class */
    int32_t *first_obj;   /* [n_sizes + 1] objects of class c: first_obj[c] .. first_obj[c+1]-1 */
    int64_t *obj_offset;  /* [n_objects] */
    int32_t n_objects, cap_objects;
    int64_t pool_bytes;   /* sum of cnt * obj_bytes */
} pool_alloc;

/* Allocates arrays for a graph with n_sizes distinct sizes. false on OOM. */
bool pool_alloc_init(pool_alloc *a, int32_t n_sizes);
void pool_alloc_free(pool_alloc *a);
bool pool_alloc_copy(pool_alloc *dst, const pool_alloc *src);

static inline int64_t pool_align(int64_t b) { return (b + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN; }

/* Makes cls monotone with +0/+1 steps starting at 0 by raising (or lowering)
 * elements minimally, as the paper's repair; sets n_classes. */
void pool_repair_cls(pool_alloc *a);

/* Computes object sizes, offsets and pool_bytes from cls/cnt (g->sizes gives TS).
 * Returns false on OOM. */
bool pool_layout(pool_alloc *a, const dfg_graph *g);

/* Only the object sizes (obj_bytes) from cls. */
bool pool_layout_sizes(pool_alloc *a, const dfg_graph *g);

/* Per-class demand figures for a schedule (NULL = g->topo):
 *   need[c]   the most tensors of class c one op touches at once (a floor on cnt)
 *   demand[c] the most tensors of class c live at once without swapping
 *             (persistent tensors count as always live)
 * Arrays have n_sizes entries; classes from a->cls. */
void pool_class_demand(const pool_alloc *a, const dfg_graph *g, const int32_t *schedule, int32_t *need,
                       int32_t *demand);

/* need[c] only (see pool_class_demand): the most tensors of class c one op
 * touches.  Allocation-free: the search calls it for every child. */
void pool_need(const pool_alloc *a, const dfg_graph *g, int32_t *need);

/* Floors when a tensor may borrow an object of a larger class once its own
 * class is full (the planner does, as a last resort): for every k,
 * need[k] + need[k+1] + ... is the most tensors of classes >= k one op
 * touches.  The smallest floors in bytes that let every op run; lower than
 * pool_need's, but a pool sized by them makes small tensors crowd large
 * objects, so pools are sized by pool_need where memory allows. */
void pool_need_shared(const pool_alloc *a, const dfg_graph *g, int32_t *need);

/* pool_repair_cnt to the own-class floors (pool_need) or, when those do not
 * fit, to the borrowing floors (pool_need_shared): the search's repair.  need
 * is scratch (n_sizes); false when neither fits.  Allocation-free but for
 * pool_layout's growth. */
bool pool_repair_any(pool_alloc *a, const dfg_graph *g, int32_t *need, int64_t memory_bytes);

/* Shrinks cnt to fit memory_bytes as the paper repairs it: every class gives
 * up about the same number of bytes (so counts fall in inverse proportion to
 * object size), never below need[c].  Lays the pool out.  false when even the
 * needs do not fit (or on OOM). */
bool pool_repair_cnt(pool_alloc *a, const dfg_graph *g, const int32_t *need, int64_t memory_bytes);

/* Grows cnt to use the memory a laid-out pool leaves (each class by the same
 * fraction, the remainder to the largest objects that fit); the caller lays
 * the pool out again.  Allocation-free. */
void pool_top_up(pool_alloc *a, int64_t memory_bytes);

/* Sets cnt to fit memory_bytes: every class gets need[c], the rest of memory is
 * shared in proportion to the unmet demand bytes, and leftover objects go to the
 * classes still short of demand.  Never more than demand[c] (no point).
 * Returns SA_EINFEASIBLE when the needs alone do not fit; err names the class. */
sa_status pool_fill_cnt(pool_alloc *a, const dfg_graph *g, const int32_t *need, const int32_t *demand,
                        int64_t memory_bytes, sa_err *err);

/* One class per distinct size (CLS = 0, 1, 2, ...), cnt filled by demand: the
 * `topo` policy's allocation and a starting point for the search.  When the
 * per-class floors do not fit memory, the closest sizes share classes until
 * they do; when not even one class fits, one class per size again with the
 * borrowing floors of pool_need_shared.  SA_EINFEASIBLE (err gives that
 * floor and the largest op) means no fixed-object pool fits memory_bytes. */
sa_status pool_fine_grained(pool_alloc *a, const dfg_graph *g, const int32_t *schedule, int64_t memory_bytes,
                            sa_err *err);

#endif
