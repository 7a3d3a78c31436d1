/* ga_ops.c - the genetic search's operators (paper section 5.2): walks and
 * crossovers of schedules, crossover and mutation of pool allocations; and
 * ours: the joint genes' (layout, timing, decisions) crossover and mutation. */
#include <string.h>

#include "swapadvisor/planner.h"
#include "ga_internal.h"

/* ---- schedules ---- */

/* Min-heap of ready ops keyed by rank (position in the schedule being followed). */
static void heap_swap(tws *w, int32_t i, int32_t j)
{
    int32_t a = w->heap[i], b = w->heap[j];
    w->heap[i] = b; w->heap[j] = a;
    w->hpos[b] = i; w->hpos[a] = j;
}

static void heap_fix(tws *w, int32_t i, int32_t len)
{
    while (i > 0 && w->rank[w->heap[(i - 1) / 2]] > w->rank[w->heap[i]]) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < len && w->rank[w->heap[l]] < w->rank[w->heap[m]]) m = l;
        if (r < len && w->rank[w->heap[r]] < w->rank[w->heap[m]]) m = r;
        if (m == i)
            break;
        heap_swap(w, i, m);
        i = m;
    }
}

/* The paper's mutation, which mimics a dataflow scheduler: walk the graph
 * keeping a ready set; with probability p take a random ready op, otherwise
 * the one that comes first in `base`.  p = 1 gives a random topological order. */
void gx_walk_schedule(const gctx *c, tws *w, rng *r, const int32_t *base, double p, int32_t *out)
{
    const sa_dfg_graph *g = c->g;
    int32_t n = c->n, len = 0;
    for (int32_t i = 0; i < n; i++) {
        w->rank[base[i]] = i;
        w->indeg[i] = g->pred_off[i + 1] - g->pred_off[i];
    }
    for (int32_t v = 0; v < n; v++)
        if (w->indeg[v] == 0) {
            w->heap[len] = v;
            w->hpos[v] = len;
            heap_fix(w, len, len + 1);
            len++;
        }
    for (int32_t k = 0; k < n; k++) {
        int32_t at = (p > 0 && rng_unit(r) < p) ? rng_below(r, len) : 0;
        int32_t v = w->heap[at];
        heap_swap(w, at, len - 1);
        len--;
        if (at < len)
            heap_fix(w, at, len);
        out[k] = v;
        for (int32_t e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            int32_t s = g->succ[e];
            if (--w->indeg[s] == 0) {
                w->heap[len] = s;
                w->hpos[s] = len;
                len++;
                heap_fix(w, len - 1, len);
            }
        }
    }
}

/* Figure 4: the first cr ops of `head`, then the rest in `tail`'s order.
 * Both parents are topological orders, so the child is one too. */
void gx_cross_schedule(const gctx *c, tws *w, const int32_t *head, const int32_t *tail, int32_t cr,
                           int32_t *out)
{
    int32_t n = c->n, k = 0;
    for (int32_t i = 0; i < n; i++)
        w->mark[i] = 0;
    for (int32_t i = 0; i < cr; i++) {
        out[k++] = head[i];
        w->mark[head[i]] = 1;
    }
    for (int32_t i = 0; i < n; i++)
        if (!w->mark[tail[i]])
            out[k++] = tail[i];
}

/* ---- allocations ---- */

/* CNT_EXT: the object count each tensor size can use. */
static void gx_extend_cnt(const pool_alloc *a, int32_t *ext)
{
    for (int32_t i = 0; i < a->n_sizes; i++)
        ext[i] = a->cnt[a->cls[i]];
}

/* Rebuilds cnt from a CNT_EXT by averaging within each class of a->cls. */
static void gx_collapse_cnt(pool_alloc *a, tws *w, const int32_t *ext)
{
    for (int32_t c = 0; c < a->n_classes; c++)
        w->sum[c] = w->num[c] = 0;
    for (int32_t i = 0; i < a->n_sizes; i++) {
        w->sum[a->cls[i]] += ext[i];
        w->num[a->cls[i]]++;
    }
    for (int32_t c = 0; c < a->n_classes; c++)
        a->cnt[c] = w->num[c] ? (int32_t)lround((double)w->sum[c] / w->num[c]) : 0;
}

/* Figure 5: CLS and CNT_EXT crossed at cr, CLS repaired, CNT averaged. */
void gx_cross_alloc(tws *w, const pool_alloc *head, const pool_alloc *tail, int32_t cr, pool_alloc *out)
{
    gx_extend_cnt(head, w->ext1);
    gx_extend_cnt(tail, w->ext2);
    for (int32_t i = 0; i < out->n_sizes; i++) {
        out->cls[i] = i < cr ? head->cls[i] : tail->cls[i];
        w->ext[i] = i < cr ? w->ext1[i] : w->ext2[i];
    }
    pool_repair_cls(out);
    gx_collapse_cnt(out, w, w->ext);
}

void gx_mutate_alloc(const gctx *c, tws *w, rng *r, pool_alloc *a)
{
    double p = c->o->mutation;
    gx_extend_cnt(a, w->ext);
    for (int32_t i = 1; i < a->n_sizes; i++) {
        if (rng_unit(r) >= p)
            continue;
        /* +1 or -1 at i shifts every later class too, keeping CLS monotone */
        int32_t d = a->cls[i] == a->cls[i - 1] ? 1 : -1;
        for (int32_t j = i; j < a->n_sizes; j++)
            a->cls[j] += d;
    }
    pool_repair_cls(a);
    gx_collapse_cnt(a, w, w->ext);
    for (int32_t k = 0; k < a->n_classes; k++)
        if (rng_unit(r) < p) {
            double sd = fmax(1.0, 0.2 * a->cnt[k]);
            long v = lround(a->cnt[k] + sd * rng_gauss(r));
            a->cnt[k] = v < 0 ? 0 : (int32_t)v;
        }
}

int32_t gx_population(int population)
{
    return population < 2 ? 2 : population + (population & 1);
}

/* ---- layout and decisions ---- */

/* The joint genes of child j of generation gen (layout, timing and
 * decisions), from its allocation parents head and tail, with a stream of
 * their own (so the schedule and pool genes draw as without seeds): head's
 * layout and timing, decisions crossed at a random tensor when both parents
 * plan by best fit (else head's), then a timing mutation (bit 0 flipped) and
 * a layout flip, each with probability P
 * (to best fit only when some decision is not keep) and, in the best-fit
 * layout, up to four decision changes, each with probability one half, to
 * evict (the cost rule) with probability one half, else to keep, swap or
 * recompute alike. */
void gx_joint_genes(const gctx *c, int gen, int32_t j, const indiv *head, const indiv *tail, indiv *kid)
{
    rng r;
    rng_seed(&r, c->o->seed, (uint64_t)gen, UINT64_C(0x20000) + (uint64_t)j);
    int32_t nt = c->g->n_tensors, cr = nt > 1 ? 1 + rng_below(&r, nt - 1) : 0;
    bool prc = c->o->pool_recompute; /* pool individuals read their decisions too */
    if (!prc && (tail->layout != PLANNER_BESTFIT || head->layout != PLANNER_BESTFIT))
        cr = nt; /* a pool parent's decisions are no one's choice: head's whole */
    memcpy(kid->act, head->act, (size_t)cr);
    memcpy(kid->act + cr, tail->act + cr, (size_t)(nt - cr));
    kid->layout = head->layout;
    kid->timing = head->timing;
    if (rng_unit(&r) < c->o->mutation)
        kid->timing ^= 1;
    if (c->joint && rng_unit(&r) < c->o->mutation) {
        bool moved = false;
        for (int32_t k = 0; k < c->n_cand && !moved; k++)
            moved = kid->act[c->cand[k]] != DEC_KEEP;
        if (kid->layout == PLANNER_BESTFIT)
            kid->layout = PLANNER_POOL;
        else if (moved)
            kid->layout = PLANNER_BESTFIT;
    }
    if ((kid->layout != PLANNER_BESTFIT && !prc) || c->n_cand == 0)
        return;
    for (int k = 0; k < GA_DECISION_TRIES; k++)
        if (rng_unit(&r) < 0.5) {
            uint8_t v = rng_unit(&r) < 0.5 ? DEC_EVICT : (uint8_t)rng_below(&r, DEC_EVICT);
            kid->act[c->cand[rng_below(&r, c->n_cand)]] = v;
        }
}
