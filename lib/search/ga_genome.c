/* ga_genome.c - an individual as a genome, int32 words that travel between
 * islands (ga.h, sa_ga_migration).  The genome is described once, by the table of
 * gene kinds below: the word count, export, import and the checks are all
 * derived from it, so a gene added to the table is exported, imported and
 * checked, and a genome that passes the checks imports into an individual the
 * search can evaluate.  The individual's allocation lives here too. */
#include "swapadvisor/ga.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/planner.h"
#include "ga_internal.h"

bool gx_indiv_init(indiv *x, const gctx *c)
{
    x->sch = calloc((size_t)c->n + 1, sizeof *x->sch);
    x->act = calloc((size_t)c->g->n_tensors + 1, 1);
    x->t = HUGE_VAL;
    x->layout = PLANNER_POOL;
    x->timing = 0;
    x->origin = ORIGIN_NONE;
    return x->sch && x->act && pool_alloc_init(&x->a, c->ns);
}

void gx_indiv_free(indiv *x)
{
    free(x->sch);
    free(x->act);
    pool_alloc_free(&x->a);
}

/* What a gene's check sees: the genome, where each gene starts in it, and
 * n_ops words of scratch. */
typedef struct gview {
    const sa_dfg_graph *g;
    const int32_t *w;
    int32_t at[GENE_COUNT];
    int32_t *pos;
} gview;

/* One kind of gene: its words for g, how an individual writes and reads
 * them, and the check of their form (v->at[kind] is where they start). */
typedef struct gene_kind {
    int32_t (*words)(const sa_dfg_graph *g);
    void (*put)(const gctx *c, const indiv *x, int32_t *w);
    void (*get)(const gctx *c, const int32_t *w, indiv *x);
    sa_status (*check)(const gview *v, sa_err *err);
} gene_kind;

static int32_t one_word(const sa_dfg_graph *g)
{
    (void)g;
    return 1;
}
static int32_t op_words(const sa_dfg_graph *g) { return g->n_ops; }
static int32_t size_words(const sa_dfg_graph *g) { return g->n_sizes; }
static int32_t tensor_words(const sa_dfg_graph *g) { return g->n_tensors; }

/* the schedule: op ids, a topological order */
static void put_schedule(const gctx *c, const indiv *x, int32_t *w) { memcpy(w, x->sch, (size_t)c->n * sizeof *w); }
static void get_schedule(const gctx *c, const int32_t *w, indiv *x) { memcpy(x->sch, w, (size_t)c->n * sizeof *w); }
static sa_status check_schedule(const gview *v, sa_err *err)
{
    const sa_dfg_graph *g = v->g;
    const int32_t *w = v->w + v->at[GENE_SCHEDULE];
    int32_t n = g->n_ops, *pos = v->pos;
    for (int32_t i = 0; i < n; i++)
        pos[i] = -1;
    for (int32_t i = 0; i < n; i++) {
        if (w[i] < 0 || w[i] >= n || pos[w[i]] >= 0)
            return sa_fail(err, SA_EFORMAT, "genome word %d: op %d is not a new op id below %d", i, w[i], n);
        pos[w[i]] = i;
    }
    for (int32_t u = 0; u < n; u++)
        for (int32_t e = g->succ_off[u]; e < g->succ_off[u + 1]; e++)
            if (pos[g->succ[e]] < pos[u])
                return sa_fail(err, SA_EFORMAT, "genome word %d: op %d runs before its input op %d",
                               pos[g->succ[e]], g->succ[e], u);
    return SA_OK;
}

/* the layout: planner_layout, pool or best fit */
static void put_layout(const gctx *c, const indiv *x, int32_t *w)
{
    (void)c;
    *w = x->layout;
}
static void get_layout(const gctx *c, const int32_t *w, indiv *x)
{
    (void)c;
    x->layout = (uint8_t)*w;
}
static sa_status check_layout(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_LAYOUT], x = v->w[at];
    if (x != PLANNER_POOL && x != PLANNER_BESTFIT)
        return sa_fail(err, SA_EFORMAT, "genome word %d: layout %d is neither pool nor best fit", at, x);
    return SA_OK;
}

/* best fit's swap timing (ga_internal.h, GA_TIMINGS) */
static void put_timing(const gctx *c, const indiv *x, int32_t *w)
{
    (void)c;
    *w = x->timing;
}
static void get_timing(const gctx *c, const int32_t *w, indiv *x)
{
    (void)c;
    x->timing = (uint8_t)*w;
}
static sa_status check_timing(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_TIMING], x = v->w[at];
    if (x < 0 || x >= GA_TIMINGS)
        return sa_fail(err, SA_EFORMAT, "genome word %d: swap timing %d is not in 0 .. %d", at, x, GA_TIMINGS - 1);
    return SA_OK;
}

/* origin: the seed the layout and decisions descend from, or ORIGIN_* */
static void put_origin(const gctx *c, const indiv *x, int32_t *w)
{
    (void)c;
    *w = x->origin;
}
static void get_origin(const gctx *c, const int32_t *w, indiv *x)
{
    (void)c;
    x->origin = *w;
}
static sa_status check_origin(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_ORIGIN], x = v->w[at];
    if (x < ORIGIN_POOL_RULE) /* any seed index: another search's seeds may outnumber ours */
        return sa_fail(err, SA_EFORMAT, "genome word %d: origin %d is no seed (origins are %d and up)", at, x,
                       ORIGIN_POOL_RULE);
    return SA_OK;
}

/* the pool's class count */
static void put_classes(const gctx *c, const indiv *x, int32_t *w)
{
    (void)c;
    *w = x->a.n_classes;
}
static void get_classes(const gctx *c, const int32_t *w, indiv *x)
{
    (void)c;
    x->a.n_classes = *w;
}
static sa_status check_classes(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_CLASSES], ncls = v->w[at], ns = v->g->n_sizes;
    if (ns > 0 && (ncls < 1 || ncls > ns))
        return sa_fail(err, SA_EFORMAT, "genome word %d: %d classes for %d sizes", at, ncls, ns);
    return SA_OK;
}

/* CLS: the class of each distinct size, 0 first, each next one +0 or +1 */
static void put_cls(const gctx *c, const indiv *x, int32_t *w) { memcpy(w, x->a.cls, (size_t)c->ns * sizeof *w); }
static void get_cls(const gctx *c, const int32_t *w, indiv *x) { memcpy(x->a.cls, w, (size_t)c->ns * sizeof *w); }
static sa_status check_cls(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_CLS], ns = v->g->n_sizes, ncls = v->w[v->at[GENE_CLASSES]];
    const int32_t *cls = v->w + at;
    for (int32_t i = 0; i < ns; i++) {
        int32_t step = i ? cls[i] - cls[i - 1] : cls[i] + 1;
        if (step < 0 || step > 1 || (i == 0 && cls[0] != 0))
            return sa_fail(err, SA_EFORMAT,
                           "genome word %d: class %d after class %d (CLS starts at 0 and steps by 0 or 1)", at + i,
                           cls[i], i ? cls[i - 1] : 0);
    }
    if (ns > 0 && cls[ns - 1] != ncls - 1)
        return sa_fail(err, SA_EFORMAT, "genome word %d: %d classes but the last size is in class %d",
                       v->at[GENE_CLASSES], ncls, cls[ns - 1]);
    return SA_OK;
}

/* CNT: objects of each class; the words past n_classes are written 0 and ignored */
static void put_cnt(const gctx *c, const indiv *x, int32_t *w)
{
    for (int32_t i = 0; i < c->ns; i++)
        w[i] = i < x->a.n_classes ? x->a.cnt[i] : 0;
}
static void get_cnt(const gctx *c, const int32_t *w, indiv *x)
{
    for (int32_t i = 0; i < c->ns; i++)
        x->a.cnt[i] = i < x->a.n_classes ? w[i] : 0;
}
static sa_status check_cnt(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_CNT], ncls = v->w[v->at[GENE_CLASSES]];
    for (int32_t k = 0; k < ncls; k++)
        if (v->w[at + k] < 0)
            return sa_fail(err, SA_EFORMAT, "genome word %d: %d objects in class %d", at + k, v->w[at + k], k);
    return SA_OK;
}

/* the decisions: dec_action per tensor */
static void put_act(const gctx *c, const indiv *x, int32_t *w)
{
    for (int32_t t = 0; t < c->g->n_tensors; t++)
        w[t] = x->act[t];
}
static void get_act(const gctx *c, const int32_t *w, indiv *x)
{
    for (int32_t t = 0; t < c->g->n_tensors; t++)
        x->act[t] = (uint8_t)w[t];
}
static sa_status check_act(const gview *v, sa_err *err)
{
    int32_t at = v->at[GENE_ACT];
    for (int32_t t = 0; t < v->g->n_tensors; t++)
        if (v->w[at + t] < 0 || v->w[at + t] >= DEC_ACTION_COUNT)
            return sa_fail(err, SA_EFORMAT, "genome word %d: decision %d for tensor %d", at + t, v->w[at + t], t);
    return SA_OK;
}

/* The genome, in order (ga.h, sa_ga_migration, lists the same words): a gene's
 * check may read the genes before it. */
static const gene_kind genes[GENE_COUNT] = {
    [GENE_SCHEDULE] = {op_words, put_schedule, get_schedule, check_schedule},
    [GENE_LAYOUT] = {one_word, put_layout, get_layout, check_layout},
    [GENE_TIMING] = {one_word, put_timing, get_timing, check_timing},
    [GENE_ORIGIN] = {one_word, put_origin, get_origin, check_origin},
    [GENE_CLASSES] = {one_word, put_classes, get_classes, check_classes},
    [GENE_CLS] = {size_words, put_cls, get_cls, check_cls},
    [GENE_CNT] = {size_words, put_cnt, get_cnt, check_cnt},
    [GENE_ACT] = {tensor_words, put_act, get_act, check_act},
};

int32_t sa_ga_genome_words(const sa_dfg_graph *g)
{
    int32_t n = 0;
    for (int k = 0; k < GENE_COUNT; k++)
        n += genes[k].words(g);
    return n;
}

void gx_genome_export(const gctx *c, const indiv *x, int32_t *w)
{
    for (int k = 0; k < GENE_COUNT; k++) {
        genes[k].put(c, x, w);
        w += genes[k].words(c->g);
    }
}

void gx_genome_import(const gctx *c, const int32_t *w, indiv *x)
{
    for (int k = 0; k < GENE_COUNT; k++) {
        genes[k].get(c, w, x);
        w += genes[k].words(c->g);
    }
}

sa_status gx_genome_check(const sa_dfg_graph *g, const int32_t *w, int32_t *pos, sa_err *err)
{
    gview v = {g, w, {0}, pos};
    for (int k = 1; k < GENE_COUNT; k++)
        v.at[k] = v.at[k - 1] + genes[k - 1].words(g);
    sa_status st = SA_OK;
    for (int k = 0; k < GENE_COUNT && !st; k++)
        st = genes[k].check(&v, err);
    return st;
}

sa_status sa_ga_genome_check(const sa_dfg_graph *g, const int32_t *genome, sa_err *err)
{
    int32_t *pos = malloc(((size_t)g->n_ops + 1) * sizeof *pos);
    if (!pos)
        return sa_fail(err, SA_ENOMEM, "out of memory checking a genome");
    sa_status st = gx_genome_check(g, genome, pos, err);
    free(pos);
    return st;
}
