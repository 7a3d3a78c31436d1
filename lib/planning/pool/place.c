/* place.c - which object a tensor takes: its own class's free or evicted object,
 * else the spare end of one its op holds, else a larger class's, else (the last
 * resort) the op's tensors split objects largest first; an op whose tensors pass
 * pool_fits_split is always placed. */
#include "planning/pool/walk.h"

/* Where tensor t would start at the spare end of object o (above every
 * current tenant), or -1 when it does not fit or o has had POOL_SPLIT_MAX
 * tenants this period. */
static int64_t spare_end(const ctx *c, int32_t o, int32_t t)
{
    const swp_ws *w = c->w;
    const sa_dfg_graph *g = c->g;
    int64_t top = 0;
    int32_t n = w->pe_n[o];
    for (int32_t u = w->occ[o]; u >= 0; u = w->tnext[u], n++)
        if (w->toff[u] + g->tensors[u].bytes > top)
            top = w->toff[u] + g->tensors[u].bytes;
    top = pool_align(top);
    return n < POOL_SPLIT_MAX && top + g->tensors[t].bytes <= c->a->obj_bytes[w->ocls[o]] ? top : -1;
}

/* t joins object o at offset off, beside its tenants (all SPLIT from now);
 * its node waits for the tenants that left o this period where their bytes
 * overlap t's (add_obj_deps). */
static void join(ctx *c, int32_t t, int32_t o, int64_t off)
{
    swp_ws *w = c->w;
    int32_t h = w->occ[o];
    w->toff[t] = off;
    w->tnext[t] = w->tnext[h];
    w->tnext[h] = t;
    w->away[t] = w->away[h] = SPLIT;
    w->obj_of[t] = o;
}

/* Places t at the spare end of an object a tensor of op already holds, the
 * one it fits tightest (as pool_split_fit).  false when none has room. */
static bool share(ctx *c, const sa_dfg_op *op, int32_t t, int32_t *obj)
{
    swp_ws *w = c->w;
    int64_t best_left = 0, best_off = 0;
    int32_t best = -1;
    w->stamp++;
    for (int32_t k = 0; k < op->n_use; k++) {
        int32_t ob = w->obj_of[op->use[k]];
        if (ob < 0 || w->mark[ob] == w->stamp)
            continue;
        w->mark[ob] = w->stamp;
        int64_t off = spare_end(c, ob, t), left = c->a->obj_bytes[w->ocls[ob]] - off;
        if (off >= 0 && (best < 0 || left < best_left)) {
            best = ob;
            best_left = left;
            best_off = off;
        }
    }
    if (best < 0)
        return false;
    join(c, t, best, best_off);
    *obj = best;
    return true;
}

/* A free object (oldest freed first) or an evicted one, from the smallest
 * class in [k0, k1) that has one; -1 when every object there holds a tensor
 * of the running op. */
static inline __attribute__((always_inline)) sa_status take_whole(ctx *c, int32_t k0, int32_t k1, int32_t *obj)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    int32_t o = -1;
    for (int32_t k = k0; k < k1 && o < 0; k++) {
        if (w->fq_len[k] > 0) {
            o = fq_pop(w, a, k);
        } else if ((o = swp_pick_victim(c, k)) >= 0) {
            sa_status st = swp_evict(c, o);
            if (st)
                return st;
        }
    }
    *obj = o;
    return SA_OK;
}

static sa_status no_room(ctx *c, int32_t t)
{
    int32_t op = c->sch[c->pos], k0 = class_of(c, t);
    return sa_fail(c->err, SA_EINFEASIBLE,
                   "op %d (\"%s\") needs more tensors of %lld bytes or more at once than the pool's %d objects "
                   "that can hold them",
                   op, c->g->ops[op].name, (long long)c->g->sizes[c->g->tensors[t].size_idx],
                   c->a->first_obj[c->a->n_classes] - c->a->first_obj[k0]);
}

/* Finds an object for t: in its own class a free one or an evicted one; when
 * every object of the class holds a tensor of the running op op, the spare
 * end of an object op holds (share), else the same in the next larger class,
 * and so on.  Borrowing only then makes the per-op floors of pool_need_shared
 * (suffix sums) enough; sharing first keeps a larger object (vgg-16's 822 MB
 * ones) for what needs it instead of evicting its tenant for a small one. */
sa_status swp_acquire_slow(ctx *c, const sa_dfg_op *op, int32_t t, int32_t *obj)
{
    int32_t k = class_of(c, t);
    sa_status st = take_whole(c, k, k + 1, obj);
    if (st)
        return st;
    if (*obj < 0 && share(c, op, t, obj))
        return SA_OK;
    if (*obj < 0 && (st = take_whole(c, k + 1, c->a->n_classes, obj)))
        return st;
    if (*obj < 0)
        return no_room(c, t);
    settle(c, t, *obj);
    return SA_OK;
}

/* Whether op's tensors can all take whole objects: for every class k, no more
 * of its tensors of classes >= k than objects of classes >= k (acquire's
 * smallest-class-first then never runs out, whatever the order). */
bool swp_fits_whole(ctx *c, int32_t op)
{
    const pool_alloc *a = c->a;
    const sa_dfg_op *o = &c->g->ops[op];
    int32_t top = 0, total = a->first_obj[a->n_classes], *n_of = c->w->kused;
    if (total - a->first_obj[a->cls[c->w->top_size[op]]] >= o->n_use)
        return true; /* its largest class and up have an object for each tensor */
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t cl = class_of(c, o->use[k]);
        n_of[cl]++;
        if (cl > top)
            top = cl;
    }
    bool ok = true;
    for (int32_t cl = top, n = 0; cl >= 0; cl--) {
        n += n_of[cl];
        n_of[cl] = 0;
        ok &= n <= total - a->first_obj[cl];
    }
    return ok;
}

/* Whether acquire alone will place the op's missing tensors now: as
 * swp_fits_whole, counting the objects that its resident tensors hold (those may
 * sit in objects of other classes, or share one) as taken. */
bool swp_fits_whole_now(ctx *c, const sa_dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    int32_t *used = w->kused;
    bool ok = true;
    w->stamp++;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t ob = w->obj_of[o->use[k]];
        if (ob >= 0 && w->mark[ob] != w->stamp) {
            w->mark[ob] = w->stamp;
            used[w->ocls[ob]]++;
        }
    }
    for (int32_t k = 0; k < o->n_use && ok; k++) {
        if (w->obj_of[o->use[k]] >= 0)
            continue;
        int32_t cl = class_of(c, o->use[k]);
        while (cl < a->n_classes && used[cl] == a->cnt[cl])
            cl++;
        if (cl == a->n_classes)
            ok = false;
        else
            used[cl]++;
    }
    memset(used, 0, (size_t)a->n_classes * sizeof *used);
    return ok;
}

/* Whether the op's resident tensor t stays where it is in swp_place_split: at
 * home in a class with an object for each of the op's tensors of it, or,
 * with away_too, anywhere. */
static bool split_keeps(ctx *c, const sa_dfg_op *o, int32_t t, bool away_too)
{
    int32_t cl = class_of(c, t), same = 0;
    if (c->w->away[t] != AT_HOME)
        return away_too;
    for (int32_t j = 0; j < o->n_use; j++)
        same += class_of(c, o->use[j]) == cl;
    return same <= c->a->cnt[cl];
}

/* Adds the object of the op's resident tensor t to swp_place_split's objects
 * (once): its bytes, the end of its last tenant, its tenants this period. */
static void split_obj(ctx *c, int32_t t, int32_t *n_obj)
{
    swp_ws *w = c->w;
    int32_t ob = w->obj_of[t], n = w->pe_n[ob];
    for (int32_t i = 0; i < *n_obj; i++)
        if (w->sobj[i] == ob)
            return;
    int64_t top = 0;
    for (int32_t u = w->occ[ob]; u >= 0; u = w->tnext[u], n++)
        if (w->toff[u] + c->g->tensors[u].bytes > top)
            top = w->toff[u] + c->g->tensors[u].bytes;
    w->sobj[*n_obj] = ob;
    w->scap[*n_obj] = c->a->obj_bytes[w->ocls[ob]];
    w->stop[*n_obj] = top;
    w->sten[(*n_obj)++] = n;
}

/* Whether swp_place_split places every tensor of the op when its residents
 * away from home stay too (each kept object pinned, the others of their
 * classes free or evictable): the same walk on counts, no side effect. */
static bool split_fits_keeping(ctx *c, const sa_dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    const sa_dfg_graph *g = c->g;
    int32_t n_obj = 0, n = 0, *avail = w->kused;
    bool ok = true;
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k];
        if (w->obj_of[t] >= 0 && split_keeps(c, o, t, true))
            split_obj(c, t, &n_obj);
    }
    for (int32_t i = 0; i < n_obj; i++)
        avail[w->ocls[w->sobj[i]]]++; /* taken: counted up, compared with cnt below */
    for (int32_t k = 0; k < o->n_use; k++) { /* the missing ones and those that leave, as swp_place_split */
        int32_t t = o->use[k], j = n;
        if (w->obj_of[t] >= 0 && split_keeps(c, o, t, true))
            continue;
        for (; j > 0 && g->tensors[w->ord[j - 1]].bytes < g->tensors[t].bytes; j--)
            w->ord[j] = w->ord[j - 1];
        w->ord[j] = t;
        n++;
    }
    for (int32_t i = 0; i < n && ok; i++) {
        int32_t t = w->ord[i], cl = class_of(c, t), s;
        int64_t bytes = g->tensors[t].bytes;
        if (avail[cl] < a->cnt[cl]) {
            avail[cl]++;
        } else if ((s = pool_split_fit(w->scap, w->stop, w->sten, n_obj, bytes)) >= 0) {
            w->stop[s] = pool_align(w->stop[s]) + bytes;
            w->sten[s]++;
            continue;
        } else {
            while (cl < a->n_classes && avail[cl] == a->cnt[cl])
                cl++;
            if (cl == a->n_classes) {
                ok = false;
                break;
            }
            avail[cl]++;
        }
        w->sobj[n_obj] = -1;
        w->scap[n_obj] = a->obj_bytes[cl];
        w->stop[n_obj] = bytes;
        w->sten[n_obj++] = 1;
    }
    memset(avail, 0, (size_t)a->n_classes * sizeof *avail);
    return ok;
}

/* The last resort, for an op whose tensors cannot all take whole objects:
 * they are placed as pool_fits_split counts them, largest first, each in an
 * object of its own class, else in the spare end of an object the op holds,
 * else in a whole object of a larger class.  Resident tensors stay only
 * where that order would have put them (AT_HOME, in a class with an
 * object for each of the op's tensors of it), and those away from home
 * (shared, borrowed) too when split_fits_keeping says the walk still places
 * every tensor around them; the others leave and come back.  A pool that
 * passes pool_fits_split never fails here (keeping is only tried, the dry
 * run exact).  Sets fresh[t] for the tensors placed, whose swap-ins plan_op
 * adds. */
sa_status swp_place_split(ctx *c, const sa_dfg_op *o)
{
    swp_ws *w = c->w;
    const pool_alloc *a = c->a;
    const sa_dfg_graph *g = c->g;
    int32_t n_obj = 0, n = 0;
    sa_status st;
    bool away = false;
    for (int32_t k = 0; k < o->n_use; k++)
        away |= w->obj_of[o->use[k]] >= 0 && w->away[o->use[k]] != AT_HOME;
    /* residents away from home (shared, borrowed) stay where the walk
     * still places every tensor; else they leave and come back */
    bool keep = away && split_fits_keeping(c, o);
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k], ob = w->obj_of[t];
        if (ob < 0)
            continue;
        if (split_keeps(c, o, t, keep)) {
            split_obj(c, t, &n_obj);
            continue;
        }
        if ((st = swp_evict_tensor(c, t)))
            return st;
        if (w->occ[ob] < 0)
            release(c, ob);
    }
    /* the others, largest first, equal sizes in use order */
    for (int32_t k = 0; k < o->n_use; k++) {
        int32_t t = o->use[k], j = n;
        if (w->obj_of[t] >= 0)
            continue;
        for (; j > 0 && g->tensors[w->ord[j - 1]].bytes < g->tensors[t].bytes; j--)
            w->ord[j] = w->ord[j - 1];
        w->ord[j] = t;
        n++;
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t t = w->ord[i], cl = class_of(c, t), ob;
        int64_t bytes = g->tensors[t].bytes;
        if ((st = take_whole(c, cl, cl + 1, &ob)))
            return st;
        if (ob < 0) {
            int32_t s = pool_split_fit(w->scap, w->stop, w->sten, n_obj, bytes);
            if (s >= 0) {
                ob = w->sobj[s];
                w->toff[t] = pool_align(w->stop[s]);
                w->stop[s] = w->toff[t] + bytes;
                w->sten[s]++;
                w->tnext[t] = w->tnext[w->occ[ob]];
                w->tnext[w->occ[ob]] = t;
                w->away[t] = w->away[w->occ[ob]] = SPLIT;
                w->obj_of[t] = ob;
                w->fresh[t] = c->pos;
                continue;
            }
            if ((st = take_whole(c, cl + 1, a->n_classes, &ob)))
                return st;
            if (ob < 0)
                return no_room(c, t);
        }
        settle(c, t, ob);
        w->fresh[t] = c->pos;
        w->sobj[n_obj] = ob;
        w->scap[n_obj] = a->obj_bytes[w->ocls[ob]];
        w->stop[n_obj] = bytes;
        w->sten[n_obj++] = 1;
    }
    return SA_OK;
}
