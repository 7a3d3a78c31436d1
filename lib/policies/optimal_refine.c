/* optimal_refine.c - the optimal planner's last step: the MILP's decisions
 * changed one at a time against the simulator (docs/bound.md, "The
 * refinement against the simulator"). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "optimal_internal.h"
#include "swapadvisor/planner.h"

/* The most values a key takes (actions, drops, waiting ops). */
enum { OPT_NVALUES = (int)OPT_NACTIONS > (int)OPT_NSYNC ? (int)OPT_NACTIONS : (int)OPT_NSYNC };

static bool action_open(const ocand *c, int a)
{
    return a == OPT_KEEP || (a == OPT_SWAP && c->s_col >= 0) || (a == OPT_LATE && c->l_col >= 0) ||
           (a == OPT_RECOMPUTE && c->r_col >= 0) || (a == OPT_GAPS && c->e_col >= 0) ||
           (a == OPT_WAIT && c->w_col >= 0);
}

/* Whether d drops candidate k's tensor over one of its gaps (OPT_GAPS
 * without one is OPT_KEEP: not worth a try). */
static bool drops_some(const octx *o, const odec *d, int32_t k)
{
    for (int32_t j = o->c[k].gp_first; j < o->c[k].gp_first + o->c[k].gp_n; j++)
        if (d->drop[o->gp[j].slot])
            return true;
    return false;
}

/* Whether action a swaps the tensor out. */
static bool swapped(int a)
{
    return a == OPT_SWAP || a == OPT_LATE || a == OPT_GAPS || a == OPT_WAIT;
}

/* The op before the one the model frees the memory at waits for a swap-out
 * (pack.h: a transfer ends at the compute node that waits for it, so the
 * memory serves placements after it); OPT_WAIT's first freed op waits itself. */
static int32_t model_sync(const ocand *c, int a)
{
    return a == OPT_SWAP ? (c->pers ? c->s3_from : c->s_from) - 1
         : a == OPT_LATE ? (c->pers ? (c->late_tail ? c->l3_from : c->s3_from) : c->l_from) - 1
         : a == OPT_GAPS ? c->e_to : a == OPT_WAIT ? c->w_from : 0;
}

void opt_set_action(const ocand *c, int a, uint8_t *act, uint8_t *late, int32_t *sync_at)
{
    act[c->t] = a == OPT_KEEP ? DEC_KEEP : a == OPT_RECOMPUTE ? DEC_RECOMPUTE : a == OPT_GAPS ? DEC_EVICT : DEC_SWAP;
    late[c->t] = a == OPT_LATE || a == OPT_WAIT;
    sync_at[c->t] = model_sync(c, a);
}

/* One decision the refinement may change: candidate k's action (KEY_CAND),
 * the drop after reader slot gp[k].slot (KEY_GAP), the exchange of the
 * actions of candidate k and candidate k2, one of the tensors a recompute of
 * k's tensor would read (KEY_PAIR: "swap the relu's output, recompute the
 * convolution's" becomes "swap the convolution's, recompute the relu's",
 * which no single change reaches when neither half alone fits or gains), or
 * which op waits for candidate k's swap-out (KEY_SYNC, an OPT_SYNC_ value).
 * Ordered by bytes, largest first, then by tensor, kind and k. */
enum { KEY_CAND, KEY_GAP, KEY_PAIR, KEY_SYNC };
typedef struct okey {
    int64_t bytes;
    int32_t t, k, k2;
    int kind;
} okey;

static int by_bytes(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->k != y->k)
        return x->k < y->k ? -1 : 1;
    return (x->k2 > y->k2) - (x->k2 < y->k2);
}

/* The value of key at in d, and setting it: a candidate's action (its
 * swap-out then waited for where the model says), a gap's drop (0 kept, 1
 * and 2 dropped, see dec_opts.drop), a pair's exchange (its value reads 0;
 * setting any value exchanges, so setting it twice undoes it), or a swap-out's
 * waiting op (its value reads -1: it is whichever gives the current sync_at,
 * and key_open turns down every value that gives that one). */
static int key_get(const octx *o, const odec *d, const okey *at)
{
    return at->kind == KEY_GAP ? d->drop[o->gp[at->k].slot] : at->kind == KEY_CAND ? d->chosen[at->k]
           : at->kind == KEY_SYNC ? -1 : 0;
}

/* The sync_at that waiting-op value v gives candidate k under its action
 * (the last op at most: decide.h stops there). */
static int32_t sync_value(const octx *o, const odec *d, int32_t k, int v)
{
    int32_t m = model_sync(&o->c[k], d->chosen[k]);
    if (v == OPT_SYNC_LINK || v == OPT_SYNC_END)
        return v == OPT_SYNC_LINK ? 0 : o->n - 1;
    if (v == OPT_SYNC_MODEL || m <= 0)
        return m;
    m += v == OPT_SYNC_NEXT ? 1 : 2;
    return m < o->n - 1 ? m : o->n - 1;
}

static void key_set(const octx *o, odec *d, const okey *at, int v)
{
    if (at->kind == KEY_GAP) {
        d->drop[o->gp[at->k].slot] = (uint8_t)v;
    } else if (at->kind == KEY_SYNC) {
        d->sync_at[o->c[at->k].t] = sync_value(o, d, at->k, v);
    } else if (at->kind == KEY_CAND) {
        opt_set_action(&o->c[at->k], v, d->act, d->late, d->sync_at);
        d->chosen[at->k] = (uint8_t)v;
    } else {
        int a = d->chosen[at->k], b = d->chosen[at->k2];
        opt_set_action(&o->c[at->k], b, d->act, d->late, d->sync_at);
        opt_set_action(&o->c[at->k2], a, d->act, d->late, d->sync_at);
        d->chosen[at->k] = (uint8_t)b;
        d->chosen[at->k2] = (uint8_t)a;
    }
}

/* May key at take value v?  A gap's drop and a swap-out's waiting op count
 * only while its tensor is swapped (a waiting op only where it moves
 * sync_at); a pair exchanges (v = 1) two different actions each open to the
 * other candidate. */
static bool key_open(const octx *o, const odec *d, const okey *at, int v)
{
    if (at->kind == KEY_CAND)
        return action_open(&o->c[at->k], v) && (v != OPT_GAPS || drops_some(o, d, at->k));
    if (at->kind == KEY_SYNC)
        return v < OPT_NSYNC && swapped(d->chosen[at->k]) && sync_value(o, d, at->k, v) != d->sync_at[o->c[at->k].t];
    if (at->kind == KEY_PAIR) {
        int a = d->chosen[at->k], b = d->chosen[at->k2];
        return v == 1 && a != b && action_open(&o->c[at->k], b) && action_open(&o->c[at->k2], a);
    }
    const ogap *gp = &o->gp[at->k];
    int a = d->chosen[gp->cand];
    return (a == OPT_SWAP || a == OPT_LATE || a == OPT_GAPS) &&
           (v == 0 || (v == 1 && gp->y_col >= 0) || (v == 2 && gp->z_col >= 0));
}

/* The pairs of candidate k (a non-persistent tensor with a producer): the
 * candidates among its producer's inputs, and among the inputs of the
 * producers of inputs that are no candidates (a batchnorm's output, dead
 * after the forward phase), OPT_PAIR_DEPTH producers deep; at most
 * OPT_PAIR_MAX, appended to out.  cand_of[t] = t's candidate or -1. */
#define OPT_PAIR_DEPTH 3
#define OPT_PAIR_MAX 4
static int32_t add_pairs(const octx *o, const int32_t *cand_of, int32_t k, okey *out)
{
    const sa_dfg_graph *g = o->g;
    int32_t t = o->c[k].t, m = 0;
    int32_t stack[OPT_PAIR_DEPTH * 8], depth[OPT_PAIR_DEPTH * 8], ns = 0;
    if (g->tensors[t].producer < 0)
        return 0;
    stack[ns] = g->tensors[t].producer, depth[ns++] = 1;
    while (ns > 0 && m < OPT_PAIR_MAX) {
        int32_t op = stack[--ns], dp = depth[ns];
        for (int32_t j = 0; j < g->ops[op].n_in && m < OPT_PAIR_MAX; j++) {
            int32_t u = g->ops[op].in[j];
            const sa_dfg_tensor *tu = &g->tensors[u];
            if (cand_of[u] >= 0 && !o->c[cand_of[u]].pers && u != t) {
                bool dup = false;
                for (int32_t q = 0; q < m; q++)
                    dup |= out[q].k2 == cand_of[u];
                if (!dup)
                    out[m++] = (okey){g->tensors[t].bytes, t, k, cand_of[u], KEY_PAIR};
            } else if (cand_of[u] < 0 && tu->kind == SA_DFG_ACTIVATION && tu->producer >= 0 && dp < OPT_PAIR_DEPTH &&
                       ns < OPT_PAIR_DEPTH * 8) {
                stack[ns] = tu->producer, depth[ns++] = dp + 1;
            }
        }
    }
    return m;
}

/* When the sweeps end (see opt_refine). */
#define OPT_REFINE_SWEEPS 4
/* at most this many plans (under an effort limit SA_POLICY_REFINE_EFFORT_PLANS;
 * sa_policy_opts.optimal.refine_plans sets either) */
#define OPT_REFINE_EVALS 8000
/* and past OPT_REFINE_WORK / ops plans: a plan's cost grows with the ops
 * (resnet-50's 617 take about 2 ms a plan) */
#define OPT_REFINE_WORK 5e6
/* Tries run one per thread at a time (at most OPT_REFINE_BATCH), each against
 * the same decisions, and the first that gains (in order) is taken: the plan
 * and the count of tries are those of one try at a time, for any thread
 * count. */
#define OPT_REFINE_BATCH 8

/* One try of a batch: its own copy of the decisions, its plan and status. */
typedef struct otry {
    odec d;
    sa_plan *p;
    dec_stats ds;
    sa_status st;
    sa_err e;
    int32_t i;  /* its key in the order */
    int v;
} otry;

static void odec_copy(const octx *o, odec *to, const odec *from)
{
    size_t nt = (size_t)o->g->n_tensors;
    memcpy(to->act, from->act, nt);
    memcpy(to->late, from->late, nt);
    memcpy(to->sync_at, from->sync_at, nt * sizeof *to->sync_at);
    memcpy(to->drop, from->drop, (size_t)o->nslots);
    memcpy(to->chosen, from->chosen, (size_t)o->nc);
}

int32_t opt_refine_cap(const sa_policy_call *pc)
{
    int want = pc->opts->optimal.refine_plans > 0 ? pc->opts->optimal.refine_plans
             : pc->opts->optimal.max_nodes > 0    ? SA_POLICY_REFINE_EFFORT_PLANS : OPT_REFINE_EVALS;
    return (int32_t)fmin(want, OPT_REFINE_WORK / (pc->g->n_ops + 1));
}

sa_status opt_refine(const sa_policy_call *pc, const octx *o, const int32_t *sch, const dec_opts *dop, odec *d,
                     double stop_s, int32_t cap, orefine *at, sa_plan **p, dec_stats *ds, bool *cut, sa_err *err)
{
    const sa_dfg_graph *g = pc->g;
    const sa_dfg_device *dev = pc->dev;
    size_t nt = (size_t)g->n_tensors;
    int threads = pc->opts->search.threads > 0 ? pc->opts->search.threads : omp_get_max_threads();
    if (threads > OPT_REFINE_BATCH)
        threads = OPT_REFINE_BATCH;
    if (threads < 1)
        threads = 1;
    *cut = false;
    okey *order = malloc(((size_t)o->nc * (2 + OPT_PAIR_MAX) + (size_t)o->ngp + 1) * sizeof *order);
    int32_t *cand_of = malloc((nt + 1) * sizeof *cand_of);
    /* try j of a batch runs on its own decisions, plan and workspaces */
    otry tr[OPT_REFINE_BATCH];
    memset(tr, 0, sizeof tr);
    pack_ws *pw[OPT_REFINE_BATCH] = {0};
    sa_sim_ws *sw[OPT_REFINE_BATCH] = {0};
    /* one buffer per try: act, late, drop, chosen, then sync_at (aligned) */
    size_t bytes_u8 = ((2 * nt + (size_t)o->nslots + (size_t)o->nc + 8) / 8) * 8;
    size_t per_try = bytes_u8 + (nt + 1) * sizeof(int32_t);
    uint8_t *buf = malloc((size_t)threads * per_try);
    bool ok = order && cand_of && buf;
    for (int j = 0; ok && j < threads; j++) {
        uint8_t *b = buf + (size_t)j * per_try;
        tr[j].d = (odec){b, b + nt, b + 2 * nt, b + 2 * nt + (size_t)o->nslots, (int32_t *)(void *)(b + bytes_u8)};
        ok = (tr[j].p = sa_plan_new(g, dev)) && (pw[j] = pack_ws_new()) && (sw[j] = sa_sim_ws_new());
    }
    sa_status st = ok ? SA_OK : sa_fail(err, SA_ENOMEM, "%s: out of memory", pc->name);
    int32_t n = 0;
    for (int32_t t = 0; !st && t < g->n_tensors; t++)
        cand_of[t] = -1;
    for (int32_t k = 0; !st && k < o->nc; k++) {
        cand_of[o->c[k].t] = k;
        order[n++] = (okey){g->tensors[o->c[k].t].bytes, o->c[k].t, k, -1, KEY_CAND};
    }
    for (int32_t k = 0; !st && k < o->ngp; k++) {
        int32_t t = o->c[o->gp[k].cand].t;
        order[n++] = (okey){g->tensors[t].bytes, t, k, -1, KEY_GAP};
    }
    for (int32_t k = 0; !st && k < o->nc; k++)
        if (!o->c[k].pers)
            n += add_pairs(o, cand_of, k, order + n);
    /* decide.h reads sync_at only in the widened space; a swap-out there is
     * one of a non-input, or of a persistent tensor's update */
    for (int32_t k = 0; !st && dop->swap_persistent && k < o->nc; k++)
        if (o->c[k].d > 0)
            order[n++] = (okey){g->tensors[o->c[k].t].bytes, o->c[k].t, k, -1, KEY_SYNC};
    if (!st)
        qsort(order, (size_t)n, sizeof *order, by_bytes);
    double best = st ? 0 : (*p)->predicted.iteration_us;
    int32_t *evals = &at->evals;
    int sweep = at->sweep;
    int32_t i = at->i;
    int v = at->v;
    bool changed = at->changed, stop = at->done;
    while (!st && !stop && sweep < OPT_REFINE_SWEEPS) {
        while (!st && !stop && i < n) {
            /* the next tries from key i, value v on, all against d */
            int m = 0;
            for (; i < n && m < threads && *evals + m < cap; i++, v = 0) {
                int was = key_get(o, d, &order[i]);
                for (; v < OPT_NVALUES && m < threads && *evals + m < cap; v++)
                    if (v != was && key_open(o, d, &order[i], v))
                        tr[m].i = i, tr[m++].v = v;
                if (v < OPT_NVALUES)
                    break;
            }
            if (m == 0 || (stop_s > 0 && sa_now_s() >= stop_s)) {
                stop = m > 0 || *evals >= cap;
                *cut = m > 0;
                if (m > 0) /* resumed, the batch runs again */
                    i = tr[0].i, v = tr[0].v;
                break;
            }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
            for (int j = 0; j < m; j++) {
                odec_copy(o, &tr[j].d, d);
                key_set(o, &tr[j].d, &order[tr[j].i], tr[j].v);
                dec_opts dj = *dop;
                dj.late = tr[j].d.late, dj.sync_at = tr[j].d.sync_at, dj.drop = tr[j].d.drop;
                tr[j].ds = (dec_stats){0};
                planner_req q = {.schedule = sch, .layout = PLANNER_BESTFIT, .act = tr[j].d.act, .dec = &dj,
                                 .stats = &tr[j].ds, .pack = pw[j], .sim = sw[j], .within_memory = true};
                tr[j].e = (sa_err){0};
                tr[j].st = planner_plan(g, dev, &q, tr[j].p, &tr[j].e);
            }
            int take = -1;
            for (int j = 0; j < m && take < 0 && !st; j++) {
                if (tr[j].st == SA_ENOMEM || tr[j].st == SA_EINTERNAL) {
                    *err = tr[j].e;
                    st = tr[j].st;
                } else if (!tr[j].st && tr[j].ds.arena_bytes <= dev->memory_bytes &&
                           tr[j].p->predicted.iteration_us < best) {
                    take = j;
                }
            }
            *evals += take < 0 ? m : take + 1;
            if (take < 0)
                continue; /* i, v: past the batch */
            best = tr[take].p->predicted.iteration_us;
            sa_plan *x = *p;
            *p = tr[take].p;
            tr[take].p = x;
            *ds = tr[take].ds;
            odec_copy(o, d, &tr[take].d);
            changed = true;
            i = tr[take].i + 1, v = 0; /* the tries after it ran against the old decisions */
        }
        if (st || stop)
            break;
        /* a sweep without a change ends the refinement */
        stop = !changed;
        at->done = !changed || sweep + 1 == OPT_REFINE_SWEEPS;
        sweep++, i = 0, v = 0, changed = false;
    }
    at->sweep = sweep, at->i = i, at->v = v, at->changed = changed;
    free(order);
    free(cand_of);
    free(buf);
    for (int j = 0; j < threads; j++) {
        sa_plan_free(tr[j].p);
        pack_ws_free(pw[j]);
        sa_sim_ws_free(sw[j]);
    }
    return st;
}

