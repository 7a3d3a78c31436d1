/* baselines.c - the rule-based baselines over one graph model: each turns its
 * paper's rule into per-tensor keep / swap / recompute decisions for
 * decide.h (lib/planning/bestfit/nodes.c), which emits and packs the plan.  Where a rule has a knob the
 * paper leaves to the user (how many tensors, how far ahead), the policy
 * picks the setting that fits the memory and runs fastest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/pack.h"
#include "swapadvisor/planner.h"
#include "baselines_internal.h"
#include "policies_internal.h"

bool bl_is_conv(const sa_dfg_op *o) { return strncmp(o->type, "conv", 4) == 0; }


bool bl_has_gap(const rctx *r, int32_t t)
{
    int32_t lf, nx;
    dec_gap(r->g, r->pos, t, &lf, &nx);
    return nx >= 0;
}

int32_t bl_gap_len(const rctx *r, int32_t t)
{
    int32_t lf, nx;
    dec_gap(r->g, r->pos, t, &lf, &nx);
    return nx >= 0 ? nx - lf : -1;
}

/* Candidates: activations written in the forward pass (the feature maps
 * every baseline here works on), in producer order; with gap_only, only
 * those read again after their last forward use (the others are dropped
 * only when recomputation reads them later: decide.h). */
void bl_forward_activations(rctx *r, bool gap_only)
{
    const sa_dfg_graph *g = r->g;
    r->n_cand = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *o = &g->ops[g->topo[i]];
        if (o->phase != SA_DFG_FORWARD)
            continue;
        for (int32_t k = 0; k < o->n_out; k++) {
            int32_t t = o->out[k];
            if (g->tensors[t].kind == SA_DFG_ACTIVATION && (!gap_only || bl_has_gap(r, t)))
                r->cand[r->n_cand++] = t;
        }
    }
}

void bl_all_keep(rctx *r) { memset(r->act, DEC_KEEP, (size_t)r->g->n_tensors + 1); }

sa_status bl_oom(rctx *r) { return sa_fail(r->err, SA_ENOMEM, "out of memory planning %s", r->name); }

/* Builds act's plan; with pack false only the peak load (a lower bound on
 * the arena) is computed. */
sa_status bl_build(rctx *r, const dec_opts *base, bool pack, sa_plan **p, dec_stats *ds)
{
    *p = NULL;
    if (r->deadline_s > 0 && sa_now_s() >= r->deadline_s)
        return sa_fail(r->err, SA_EINFEASIBLE, "%s: cut at the time limit", r->name);
    if (r->work_max > 0 && (double)r->effort > BL_WORK_BACKSTOP * r->work_max)
        return sa_fail(r->err, SA_EINFEASIBLE, "%s: stopped after %lld units of work, past its effort limit (the "
                       "budget of a seed)", r->name, (long long)r->effort);
    dec_opts o = *base;
    o.pack_offsets = pack;
    *p = sa_plan_new(r->g, r->dev);
    if (!*p)
        return bl_oom(r);
    /* a build the deadline stops part-way is cut as one that starts past it */
    planner_req q = {.schedule = r->g->topo, .layout = PLANNER_BESTFIT, .act = r->act, .dec = &o, .stats = ds,
                     .deadline_s = r->deadline_s};
    sa_status st = planner_plan(r->g, r->dev, &q, *p, r->err);
    if (st) {
        sa_plan_free(*p);
        *p = NULL;
        return st;
    }
    bl_count_build(r, ds->pack_work);
    return SA_OK;
}

void bl_count_build(rctx *r, int64_t pack_work)
{
    int64_t ids = (int64_t)r->g->n_ops + r->g->n_tensors;
    r->work += ids + pack_work;
    r->effort += PLANNER_ID_EFFORT * ids + pack_work;
}

bool bl_spent(const rctx *r)
{
    return r->work_max > 0 && (double)r->effort >= r->work_max;
}

/* A family of decisions set(r, k, ...) whose memory falls as k grows, k in
 * [lo, hi]: the smallest k whose packed arena fits the memory.  The peak
 * load (cheap, no packing) narrows k by bisection; packing then walks up
 * from there.  *out is NULL when even hi does not fit (*ds then describes hi). */
sa_status bl_fit_smallest(rctx *r, set_fn set, const void *arg, int32_t lo, int32_t hi, const dec_opts *o,
                              sa_plan **out, dec_stats *ds, int32_t *k_out)
{
    int64_t mem = r->dev->memory_bytes;
    sa_plan *p = NULL;
    sa_status st;
    *out = NULL;
    set(r, hi, arg);
    if ((st = bl_build(r, o, false, &p, ds)))
        return st;
    sa_plan_free(p);
    if (ds->peak_load > mem) {
        *k_out = hi;
        return SA_OK;
    }
    int32_t a = lo, b = hi; /* peak(b) fits */
    while (a < b) {
        int32_t m = a + (b - a) / 2;
        set(r, m, arg);
        if ((st = bl_build(r, o, false, &p, ds)))
            return st;
        sa_plan_free(p);
        if (ds->peak_load <= mem)
            b = m;
        else
            a = m + 1;
    }
    for (int32_t k = b, step = 1;; step *= 2) {
        set(r, k, arg);
        if ((st = bl_build(r, o, true, &p, ds)))
            return st;
        if (ds->arena_bytes <= mem) {
            *out = p;
            *k_out = k;
            return SA_OK;
        }
        sa_plan_free(p);
        if (k == hi) {
            *k_out = hi;
            return SA_OK;
        }
        k = k + step > hi ? hi : k + step;
    }
}

sa_status bl_finish(rctx *r, sa_plan *p, const dec_stats *ds, const char *extra)
{
    char search[768];
    snprintf(search, sizeof search,
             "{\"algorithm\":\"%s\",\"swapped\":%d,\"swapped_bytes\":%lld,\"recomputed\":%d,\"recomputed_bytes\":%lld,"
             "\"recompute_nodes\":%d,\"demoted\":%d,\"peak_load\":%lld,\"arena\":%lld%s%s}",
             r->name, ds->n_swapped, (long long)ds->swapped_bytes, ds->n_recomputed, (long long)ds->recomputed_bytes,
             ds->n_recompute_nodes, ds->n_demoted, (long long)ds->peak_load, (long long)ds->arena_bytes,
             extra && *extra ? "," : "", extra ? extra : "");
    if (!sa_plan_set_search_json(p, search))
        return bl_oom(r);
    return SA_OK;
}

sa_status bl_too_big(rctx *r, const char *what, const dec_stats *ds)
{
    return sa_fail(r->err, SA_EINFEASIBLE, "%s: %s the arena needs %lld bytes (peak load %lld) > %lld bytes of memory",
                   r->name, what, (long long)(ds->arena_bytes ? ds->arena_bytes : ds->peak_load),
                   (long long)ds->peak_load, (long long)r->dev->memory_bytes);
}

/* ------------------------------------------------------------ smartpool */

/* SmartPool (Zhang et al., ICDE'19 workshops / arXiv:1903.06631, sec. IV):
 * lifetimes from the schedule, sizes descending, best fit into one arena; no
 * swapping.  The competitive ratio is arena / peak load (Definition 3). */
static sa_status run_smartpool(rctx *r, const dec_opts *o, sa_plan **out)
{
    bl_all_keep(r);
    dec_stats ds;
    sa_plan *p;
    sa_status st = bl_build(r, o, true, &p, &ds);
    if (st)
        return st;
    pack_opts exact = o->pack;
    exact.align = 1;
    int64_t load;
    if ((st = pack_peak_load(p, r->g, &exact, &load, r->err))) {
        sa_plan_free(p);
        return st;
    }
    double ratio = load > 0 ? (double)ds.arena_bytes / (double)load : 1.0;
    if (ds.arena_bytes > r->dev->memory_bytes) {
        sa_plan_free(p);
        return sa_fail(r->err, SA_EINFEASIBLE,
                       "smartpool: the packed arena needs %lld bytes (peak load %lld, competitive ratio %.4f) > %lld "
                       "bytes of memory, and smartpool does not swap",
                       (long long)ds.arena_bytes, (long long)load, ratio, (long long)r->dev->memory_bytes);
    }
    char extra[160];
    snprintf(extra, sizeof extra, "\"peak_load_exact\":%lld,\"competitive_ratio\":%.6f", (long long)load, ratio);
    if ((st = bl_finish(r, p, &ds, extra))) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

/* ------------------------------------------------------------ vdnn */

typedef enum vmode { V_NONE, V_CONV, V_ALL } vmode;
static const char *const vmode_name[] = {"none", "conv", "all"};

static void vdnn_set(rctx *r, vmode m)
{
    const sa_dfg_graph *g = r->g;
    bl_all_keep(r);
    if (m == V_NONE)
        return;
    for (int32_t op = 0; op < g->n_ops; op++) {
        const sa_dfg_op *o = &g->ops[op];
        if (o->phase != SA_DFG_FORWARD || (m == V_CONV && !bl_is_conv(o)))
            continue;
        for (int32_t k = 0; k < o->n_in; k++) {
            int32_t t = o->in[k];
            sa_dfg_kind kd = g->tensors[t].kind;
            if ((kd == SA_DFG_ACTIVATION || kd == SA_DFG_INPUT) && bl_has_gap(r, t))
                r->act[t] = DEC_SWAP;
        }
    }
}

/* vDNN (Rhu et al., MICRO'16, sec. III): in the forward pass, offload each
 * convolution layer's input feature maps to the host, overlapped with the
 * layer's computation, and release them once both are done (the streams
 * synchronise at the layer's end: out_sync = 1); in the backward pass
 * prefetch them one layer ahead (issued when the previous convolution layer
 * starts).  Weights stay on the GPU.  vDNN_dyn's choice among its modes:
 * no offloading if that fits, else vDNN_conv, else vDNN_all (every layer's
 * input). */
static sa_status run_vdnn(rctx *r, const dec_opts *base, sa_plan **out)
{
    dec_opts o = *base;
    o.out_sync = 1;
    o.marks = r->marks;
    o.prefetch = r->marks ? 1 : 0;
    dec_stats ds = {0};
    sa_status st;
    for (vmode m = V_NONE; m <= V_ALL; m++) {
        vdnn_set(r, m);
        sa_plan *p;
        if ((st = bl_build(r, &o, true, &p, &ds)))
            return st;
        if (ds.arena_bytes <= r->dev->memory_bytes) {
            char extra[64];
            snprintf(extra, sizeof extra, "\"mode\":\"%s\"", vmode_name[m]);
            if ((st = bl_finish(r, p, &ds, extra))) {
                sa_plan_free(p);
                return st;
            }
            *out = p;
            return SA_OK;
        }
        sa_plan_free(p);
    }
    return bl_too_big(r, "even offloading every layer's input feature maps (vDNN_all),", &ds);
}

/* ------------------------------------------------------------ tflms */

typedef struct tf_arg {
    int32_t max_gap;
} tf_arg;

/* k = max_gap - threshold: larger k, lower threshold, more swapped */
static void tflms_set(rctx *r, int32_t k, const void *argp)
{
    const tf_arg *a = argp;
    int32_t thr = a->max_gap - k;
    bl_all_keep(r);
    for (int32_t i = 0; i < r->n_cand; i++)
        if (bl_gap_len(r, r->cand[i]) > thr)
            r->act[r->cand[i]] = DEC_SWAP;
}

/* TFLMS / IBM Large Model Support (Le et al., "TFLMS: Large Model Support in
 * TensorFlow by Graph Rewriting", 2018; LMS's swapout_threshold and
 * swapin_ahead): rewrite every edge from a forward op to a backward op that
 * carries an activation into a swap-out after the producer side and a
 * swap-in before the consumer; only activations whose reuse distance (ops
 * between the last forward use and the next use) exceeds swapout_threshold
 * are swapped, and each swap-in is triggered swapin_ahead ops before its
 * consumer.  Parameters are never swapped.  LMS's auto-tuning: for each
 * swapin_ahead tried, the largest threshold that fits; the fastest wins. */
static sa_status run_tflms(rctx *r, const dec_opts *base, sa_plan **out)
{
    bl_forward_activations(r, true);
    int32_t max_gap = 0;
    for (int32_t i = 0; i < r->n_cand; i++) {
        int32_t gl = bl_gap_len(r, r->cand[i]);
        if (gl > max_gap)
            max_gap = gl;
    }
    tf_arg a = {max_gap};
    static const int32_t ahead[] = {1, 2, 4, 8, 16};
    sa_plan *best = NULL;
    dec_stats bs = {0}, ds = {0};
    int32_t best_ahead = 0, best_thr = 0, best_sync = 0;
    sa_status st;
    /* LMS's sync_mode: asynchronous swap-outs first (the memory is reused once
     * the transfer is estimated done); when nothing fits, synchronous ones
     * (the next op waits for the swap-out, trading stalls for memory).  Once
     * a plan exists and the effort budget is spent, the swap-in distances
     * left are not tried */
    for (int sync = 0; sync <= 1 && !best; sync++)
        for (size_t i = 0; i < SA_ARRAY_LEN(ahead) && !(best && bl_spent(r)); i++) {
            dec_opts o = *base;
            o.prefetch = ahead[i];
            o.out_sync = sync;
            sa_plan *p;
            int32_t k;
            if ((st = bl_fit_smallest(r, tflms_set, &a, 0, max_gap + 1, &o, &p, &ds, &k))) {
                sa_plan_free(best);
                return st;
            }
            if (!p)
                continue;
            if (!best || p->predicted.iteration_us < best->predicted.iteration_us) {
                sa_plan_free(best);
                best = p;
                bs = ds;
                best_ahead = ahead[i];
                best_thr = max_gap - k;
                best_sync = sync;
            } else {
                sa_plan_free(p);
            }
        }
    if (!best)
        return bl_too_big(r, "even swapping every activation (swapout_threshold -1, synchronous swap-outs),", &ds);
    char extra[128];
    snprintf(extra, sizeof extra, "\"swapout_threshold\":%d,\"swapin_ahead\":%d,\"sync_mode\":%d", best_thr,
             best_ahead, best_sync);
    if ((st = bl_finish(r, best, &bs, extra))) {
        sa_plan_free(best);
        return st;
    }
    *out = best;
    return SA_OK;
}

/* ------------------------------------------------------------ checkpoint-sqrt */

/* Chen et al., "Training Deep Nets with Sublinear Memory Cost" (2016),
 * sec. 4.1: split the n forward feature maps into segments of about sqrt(n),
 * keep only each segment's last output (the checkpoints) and recompute the
 * rest of a segment from its checkpoint when the backward pass reaches it;
 * recomputation only, no swapping.  Feature maps whose producer cannot be
 * re-run (batchnorm updates its running statistics in place) stay, as
 * extra checkpoints. */
static sa_status run_checkpoint(rctx *r, const dec_opts *o, sa_plan **out)
{
    bl_forward_activations(r, false);
    bl_all_keep(r);
    int32_t n = 0;
    for (int32_t i = 0; i < r->n_cand; i++)
        n += dec_recomputable(r->g, r->cand[i]);
    int32_t seg = (int32_t)ceil(sqrt((double)(n > 0 ? n : 1))), j = 0, kept = 0;
    for (int32_t i = 0; i < r->n_cand; i++) {
        int32_t t = r->cand[i];
        if (!dec_recomputable(r->g, t))
            continue;
        if (j++ % seg == seg - 1)
            kept++;
        else
            r->act[t] = DEC_RECOMPUTE;
    }
    dec_stats ds;
    sa_plan *p;
    sa_status st = bl_build(r, o, true, &p, &ds);
    if (st)
        return st;
    if (ds.arena_bytes > r->dev->memory_bytes) {
        sa_plan_free(p);
        char what[160];
        snprintf(what, sizeof what, "with %d of %d recomputable feature maps kept as checkpoints (segments of %d) and "
                 "%d recomputed,", kept, n, seg, ds.n_recomputed);
        return bl_too_big(r, what, &ds);
    }
    char extra[96];
    snprintf(extra, sizeof extra, "\"segment\":%d,\"checkpoints\":%d", seg, kept);
    if ((st = bl_finish(r, p, &ds, extra))) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

/* ------------------------------------------------------------ superneurons */

/* k = how many feature maps, from the input side, are not kept */
static void sn_set(rctx *r, int32_t k, const void *arg)
{
    (void)arg;
    bl_all_keep(r);
    for (int32_t i = 0; i < k && i < r->n_cand; i++) {
        int32_t t = r->cand[i];
        const sa_dfg_op *o = &r->g->ops[r->g->tensors[t].producer];
        r->act[t] = bl_is_conv(o) || !dec_recomputable(r->g, t) ? DEC_SWAP : DEC_RECOMPUTE;
    }
}

/* SuperNeurons (Wang et al., PPoPP'18; the rule as PooCH, Imai et al. 2019,
 * sec. 3.3 restates it): feature maps stay on the GPU preferentially from the
 * output layer back; of those that do not fit, convolution outputs are
 * swapped and the other layers' outputs recomputed (cost-aware: the cheap
 * layers); each swap-in starts with the computation of the immediately
 * preceding convolution layer.  Outputs we cannot recompute (batchnorm
 * updates its running statistics) are swapped like convolutions'. */
static sa_status run_superneurons(rctx *r, const dec_opts *base, sa_plan **out)
{
    bl_forward_activations(r, false);
    dec_opts o = *base;
    o.marks = r->marks;
    o.prefetch = r->marks ? 1 : 0;
    sa_plan *p = NULL;
    dec_stats ds = {0};
    int32_t k = 0;
    sa_status st = SA_OK;
    /* swap-outs asynchronous first; when that cannot fit, the next op waits
     * for each (stalls for memory) */
    for (int sync = 0; sync <= 1 && !p; sync++) {
        o.out_sync = sync;
        if ((st = bl_fit_smallest(r, sn_set, NULL, 0, r->n_cand, &o, &p, &ds, &k)))
            return st;
    }
    if (!p) {
        char what[192];
        snprintf(what, sizeof what, "even with all %d feature maps swapped (convolutions, synchronously) or "
                 "recomputed,", r->n_cand);
        return bl_too_big(r, what, &ds);
    }
    char extra[96];
    snprintf(extra, sizeof extra, "\"kept_from_output\":%d,\"sync_swap_out\":%s", r->n_cand - k,
             o.out_sync ? "true" : "false");
    if ((st = bl_finish(r, p, &ds, extra))) {
        sa_plan_free(p);
        return st;
    }
    *out = p;
    return SA_OK;
}

/* ------------------------------------------------------------ entry */

sa_status bl_rule_run(const sa_policy_call *c, bl_rule_fn fn, sa_plan **out, sa_err *err)
{
    const char *name = c->name;
    const sa_dfg_graph *g = c->g;
    const sa_dfg_device *dev = c->dev;
    *out = NULL;
    rctx r = {name, g, dev, err, NULL, NULL, 0, NULL, NULL, 0, c->opts->deadline_s, c->opts->rule_work_max, 0};
    int64_t pers = sa_dfg_persistent_bytes(g);
    if (pers > dev->memory_bytes)
        return sa_fail(err, SA_EINFEASIBLE,
                       "%s: parameters and optimizer state alone need %lld bytes > %lld bytes of memory (%s never swaps "
                       "them)", name, (long long)pers, (long long)dev->memory_bytes, name);
    r.pos = calloc((size_t)g->n_ops + 1, sizeof *r.pos);
    r.cand = calloc((size_t)g->n_tensors + 1, sizeof *r.cand);
    r.act = calloc((size_t)g->n_tensors + 1, 1);
    r.marks = calloc((size_t)g->n_ops + 1, 1);
    sa_status st = SA_OK;
    if (!r.pos || !r.cand || !r.act || !r.marks) {
        st = bl_oom(&r);
        goto out;
    }
    bool any_conv = false;
    for (int32_t i = 0; i < g->n_ops; i++) {
        r.pos[g->topo[i]] = i;
        r.marks[i] = bl_is_conv(&g->ops[g->topo[i]]);
        any_conv |= r.marks[i];
    }
    if (!any_conv) { /* no layer boundaries to count: prefetch by time instead */
        free(r.marks);
        r.marks = NULL;
    }
    dec_opts o;
    dec_opts_default(&o);
    st = fn(&r, &o, out);
out:
    free(r.pos);
    free(r.cand);
    free(r.act);
    free(r.marks);
    return st;
}

sa_status policy_run_smartpool(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_smartpool, out, err);
}

sa_status policy_run_vdnn(const sa_policy_call *c, sa_plan **out, sa_err *err) { return bl_rule_run(c, run_vdnn, out, err); }

sa_status policy_run_tflms(const sa_policy_call *c, sa_plan **out, sa_err *err) { return bl_rule_run(c, run_tflms, out, err); }

sa_status policy_run_checkpoint_sqrt(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_checkpoint, out, err);
}

sa_status policy_run_superneurons(const sa_policy_call *c, sa_plan **out, sa_err *err)
{
    return bl_rule_run(c, run_superneurons, out, err);
}
