/*
 * pool.h - SwapAdvisor's memory allocation encoding (paper section 5.3).
 *
 * TS is the graph's sorted distinct tensor sizes (sa_dfg_graph.sizes).  CLS maps
 * each size index to a size class: CLS[0] = 0 and each step is +0 or +1, so
 * classes are contiguous runs of sizes.  A class's object size is the largest
 * size mapped to it (rounded up to POOL_ALIGN).  CNT[c] objects of class c are
 * laid out class after class from offset 0; the pool must fit memory_bytes.
 * The planner may put a tensor in an object of a larger class, and, as a last
 * resort, several of one op's tensors in one object (pool_split_fit).
 *
 * Object counts are capped by demand, never by memory: a class never gets
 * more objects than the tensors that could use them (its own tensors plus the
 * most one op can hold, for the tensors of smaller classes that borrow), so
 * the pool's size in objects, and the memory the search uses, scale with the
 * graph whatever memory_bytes is.
 *
 * Failures: the functions that answer "does it fit" return SA_OK when it
 * fits, SA_EINFEASIBLE when it does not (err says why) and SA_ENOMEM when the
 * host ran out of memory; a bool return means false = out of memory only.
 *
 * Ownership: pool_alloc owns its arrays; pool_alloc_init/pool_alloc_free.
 */
#ifndef SWAPADVISOR_POOL_H
#define SWAPADVISOR_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_common.h"

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
    int64_t pool_bytes;   /* sum of cnt * obj_bytes (saturates at INT64_MAX) */
    /* caps, derived by pool_layout_sizes from the graph */
    int32_t *size_tensors; /* [n_sizes] tensors of each size (filled once per graph) */
    int32_t max_use;       /* the most tensors one op uses; 0 until filled */
    int32_t *cls_cap;      /* [n_sizes] the most objects class c can use */
} pool_alloc;

/* Allocates arrays for a graph with n_sizes distinct sizes. false on OOM. */
bool pool_alloc_init(pool_alloc *a, int32_t n_sizes);
void pool_alloc_free(pool_alloc *a);
bool pool_alloc_copy(pool_alloc *dst, const pool_alloc *src);

static inline int64_t pool_align(int64_t b) { return (b + POOL_ALIGN - 1) / POOL_ALIGN * POOL_ALIGN; }

/* Makes cls monotone with +0/+1 steps starting at 0 by raising (or lowering)
 * elements minimally, as the paper's repair; sets n_classes. */
void pool_repair_cls(pool_alloc *a);

/* Computes object sizes, offsets and pool_bytes from cls/cnt (g->sizes gives TS),
 * first lowering every cnt[c] above cls_cap[c] to it.  Returns false on OOM only. */
bool pool_layout(pool_alloc *a, const sa_dfg_graph *g);

/* Only the object sizes (obj_bytes) and the caps (cls_cap) from cls.  true. */
bool pool_layout_sizes(pool_alloc *a, const sa_dfg_graph *g);

/* Per-class demand figures for a schedule (NULL = g->topo):
 *   need[c]   the most tensors of class c one op touches at once (a floor on cnt)
 *   demand[c] the most tensors of class c live at once without swapping
 *             (persistent tensors count as always live)
 * Arrays have n_sizes entries; classes from a->cls. */
void pool_class_demand(const pool_alloc *a, const sa_dfg_graph *g, const int32_t *schedule, int32_t *need,
                       int32_t *demand);

/* need[c] only (see pool_class_demand): the most tensors of class c one op
 * touches.  Allocation-free: the search calls it for every child. */
void pool_need(const pool_alloc *a, const sa_dfg_graph *g, int32_t *need);

/* Floors when a tensor may borrow an object of a larger class once its own
 * class is full (the planner does, as a last resort): for every k,
 * need[k] + need[k+1] + ... is the most tensors of classes >= k one op
 * touches.  The smallest floors in bytes that let every op run; lower than
 * pool_need's, but a pool sized by them makes small tensors crowd large
 * objects, so pools are sized by pool_need where memory allows. */
void pool_need_shared(const pool_alloc *a, const sa_dfg_graph *g, int32_t *need);

/* Splitting an object between tensors (the planner's last resort, lib/planning/pool/place.c).
 * When an op's tensors outnumber the objects that could hold them whole, the
 * planner places them largest first: an object of the tensor's own class,
 * else the spare end of an object the op already holds (the best fit: the
 * least spare that is enough, at a POOL_ALIGN-aligned offset, at most
 * POOL_SPLIT_MAX tensors per object), else a whole object of the next larger
 * class that has one.  pool_split_fit is that choice among the op's objects:
 * cap[i] object bytes, top[i] end of its last tensor, n_ten[i] its tensors;
 * -1 when none has room. */
#define POOL_SPLIT_MAX 8

static inline int32_t pool_split_fit(const int64_t *cap, const int64_t *top, const int32_t *n_ten, int32_t n,
                                     int64_t bytes)
{
    int32_t best = -1;
    int64_t best_left = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t left = cap[i] - pool_align(top[i]) - bytes;
        if (n_ten[i] < POOL_SPLIT_MAX && left >= 0 && (best < 0 || left < best_left)) {
            best = i;
            best_left = left;
        }
    }
    return best;
}

/* SA_OK when every op of g can place its tensors as above in a's objects
 * (cnt and obj_bytes), all other tensors evicted; SA_EINFEASIBLE when one
 * cannot; SA_ENOMEM (allocates scratch). */
sa_status pool_fits_split(const pool_alloc *a, const sa_dfg_graph *g, sa_err *err);

/* The pool floors with splitting: starting from pool_need_shared's, drops
 * objects, largest first, while the pool still fits by pool_fits_split, until
 * the floors fit memory_bytes.  a's cls and obj_bytes (pool_layout_sizes) are
 * used (cnt is borrowed as scratch and restored).  SA_EINFEASIBLE when they
 * cannot fit (need then holds the lowest floors reached), SA_ENOMEM. */
sa_status pool_need_split(pool_alloc *a, const sa_dfg_graph *g, int64_t memory_bytes, int32_t *need, sa_err *err);

/* pool_repair_cnt to the own-class floors (pool_need) or, when those do not
 * fit, to the borrowing floors (pool_need_shared), or else, when split, to
 * the splitting floors (pool_need_split): the search's repair.  The search
 * sets split only where no fixed-object pool fits (pool_fixed_fits), so it
 * never pays for splitting floors elsewhere.  need is scratch (n_sizes);
 * SA_EINFEASIBLE when none fits, SA_ENOMEM.  Allocation-free but for
 * pool_layout's growth and the splitting floors' scratch. */
sa_status pool_repair_any(pool_alloc *a, const sa_dfg_graph *g, int32_t *need, int64_t memory_bytes, bool split,
                          sa_err *err);

/* *fits = whether some pool of whole objects fits memory_bytes (one class per
 * size at the borrowing floors of pool_need_shared, the lowest there is).
 * false on OOM. */
bool pool_fixed_fits(const sa_dfg_graph *g, int64_t memory_bytes, bool *fits);

/* Shrinks cnt to fit memory_bytes as the paper repairs it: every class gives
 * up about the same number of bytes (so counts fall in inverse proportion to
 * object size), never below need[c].  Lays the pool out.  SA_EINFEASIBLE when
 * even the needs do not fit, SA_ENOMEM. */
sa_status pool_repair_cnt(pool_alloc *a, const sa_dfg_graph *g, const int32_t *need, int64_t memory_bytes, sa_err *err);

/* Grows cnt to use the memory a laid-out pool leaves (each class by the same
 * fraction, the remainder to the largest objects that fit), never past a
 * class's cap (cls_cap): more memory than the graph can use stays unused.
 * The caller lays the pool out again.  Allocation-free. */
void pool_top_up(pool_alloc *a, int64_t memory_bytes);

/* Sets cnt to fit memory_bytes: every class gets need[c], the rest of memory is
 * shared in proportion to the unmet demand bytes, and leftover objects go to the
 * classes still short of demand.  Never more than demand[c] (no point).
 * Returns SA_EINFEASIBLE when the needs alone do not fit; err names the class. */
sa_status pool_fill_cnt(pool_alloc *a, const sa_dfg_graph *g, const int32_t *need, const int32_t *demand,
                        int64_t memory_bytes, sa_err *err);

/* One class per distinct size (CLS = 0, 1, 2, ...), cnt filled by demand: the
 * `topo` policy's allocation and a starting point for the search.  When the
 * per-class floors do not fit memory, the closest sizes share classes until
 * they do; when not even one class fits, one class per size again with the
 * borrowing floors of pool_need_shared, and when those do not fit, with the
 * splitting floors of pool_need_split.  SA_EINFEASIBLE (err gives the lowest
 * floor and the largest op) means no pool fits memory_bytes. */
sa_status pool_fine_grained(pool_alloc *a, const sa_dfg_graph *g, const int32_t *schedule, int64_t memory_bytes,
                            sa_err *err);

#endif
