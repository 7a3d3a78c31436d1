/* workspace.c - the pool walk's workspace (walk.h): every per-tensor, per-op and
 * per-class array is sized for its graph when made, and the per-object arrays grow
 * with the pool before a run, so the walk itself never allocates but for plan
 * nodes and virtual uses. */
#include "planning/pool/walk.h"

#include "swapadvisor/sim.h"

void swp_opts_default(swp_opts *o)
{
    o->victim = SWP_BELADY;
    o->on_demand = false;
    o->threshold_scale = 1.0;
    o->max_passes = 3;
    o->recompute = NULL;
    o->deadline_s = 0;
}

swp_ws *swp_ws_new(const sa_dfg_graph *g)
{
    swp_ws *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    size_t nt = (size_t)g->n_tensors + 1, no = (size_t)g->n_ops + 1, uses = 1;
    for (int32_t i = 0; i < g->n_ops; i++)
        uses += (size_t)g->ops[i].n_use;
    int32_t maxuse = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].n_use > maxuse)
            maxuse = g->ops[i].n_use;
    w->n_ops = g->n_ops;
    w->n_tensors = g->n_tensors;
    w->use_off = calloc(nt + 1, sizeof(int32_t));
    w->use_pos = calloc(uses, sizeof(int32_t));
    w->tprefix = calloc(no + 1, sizeof(double));
    w->cursor = calloc(nt, sizeof(int32_t));
    w->obj_of = calloc(nt, sizeof(int32_t));
    w->last_use_node = calloc(nt, sizeof(int32_t));
    w->last_use_pos = calloc(nt, sizeof(int32_t));
    w->host_ready = calloc(nt, sizeof(int32_t));
    w->place_begin = calloc(nt, sizeof(int32_t));
    w->pin = calloc(nt, sizeof(int32_t));
    w->prev_end = calloc(nt, sizeof(int32_t));
    w->host_valid = calloc(nt, 1);
    w->wasted = calloc(nt, 1);
    w->s_obj = calloc(nt, sizeof(int32_t));
    w->e_obj = calloc(nt, sizeof(int32_t));
    w->cap_deps = (2 * POOL_SPLIT_MAX + 3) * maxuse + 8;
    w->deps = calloc((size_t)w->cap_deps, sizeof(int32_t));
    w->fq_head = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->fq_len = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->hlen = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->hoff = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->yhead = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->kused = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->thr = calloc((size_t)g->n_sizes + 1, sizeof(double));
    w->tnext = calloc(nt, sizeof(int32_t));
    w->fresh = calloc(nt, sizeof(int32_t));
    w->away = calloc(nt, 1);
    w->toff = calloc(nt, sizeof(int64_t));
    w->tight = calloc(no, 1);
    w->top_size = calloc(no, sizeof(int32_t));
    w->tcls = calloc(nt, sizeof(int32_t));
    w->tpers = calloc(nt, 1);
    w->tin = calloc(nt, 1);
    for (int32_t t = 0; w->tpers && w->tin && t < g->n_tensors; t++) {
        w->tpers[t] = sa_dfg_kind_persistent(g->tensors[t].kind);
        w->tin[t] = g->tensors[t].kind == SA_DFG_INPUT;
    }
    for (int32_t i = 0; w->top_size && i < g->n_ops; i++)
        for (int32_t k = 0; k < g->ops[i].n_use; k++)
            if (g->tensors[g->ops[i].use[k]].size_idx > w->top_size[i])
                w->top_size[i] = g->tensors[g->ops[i].use[k]].size_idx;
    w->ord = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->sobj = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->sten = calloc((size_t)maxuse + 1, sizeof(int32_t));
    w->scap = calloc((size_t)maxuse + 1, sizeof(int64_t));
    w->stop = calloc((size_t)maxuse + 1, sizeof(int64_t));
    w->ytail = calloc((size_t)g->n_sizes + 1, sizeof(int32_t));
    w->cap_uses = (int64_t)uses;
    w->rcm = calloc(nt, 1);
    w->gone = calloc(nt, 1);
    w->hold = calloc(nt, sizeof(int32_t));
    w->lfwd = calloc(nt, sizeof(int32_t));
    w->rnx = calloc(nt, sizeof(int32_t));
    w->rdepth = calloc(nt, sizeof(int32_t));
    w->cmark = calloc(nt, sizeof(int32_t));
    w->wl = calloc(nt, sizeof(int32_t));
    w->opos = calloc(no, sizeof(int32_t));
    w->vu_off = calloc(no + 1, sizeof(int32_t));
    if (!w->rcm || !w->gone || !w->hold || !w->lfwd || !w->rnx || !w->rdepth || !w->cmark || !w->wl || !w->opos || !w->vu_off) {
        swp_ws_free(w);
        return NULL;
    }
    if (!w->hlen || !w->hoff || !w->yhead || !w->ytail || !w->kused || !w->thr || !w->tnext || !w->fresh || !w->away || !w->toff ||
        !w->tight || !w->top_size || !w->tcls || !w->tpers || !w->tin || !w->ord || !w->sobj || !w->sten || !w->scap || !w->stop || !w->use_off || !w->use_pos || !w->tprefix || !w->cursor || !w->obj_of || !w->last_use_node ||
        !w->last_use_pos || !w->host_ready || !w->place_begin || !w->pin || !w->prev_end ||
        !w->host_valid || !w->wasted ||
        !w->s_obj || !w->e_obj || !w->deps || !w->fq_head || !w->fq_len) {
        swp_ws_free(w);
        return NULL;
    }
    return w;
}

void swp_ws_free(swp_ws *w)
{
    if (!w)
        return;
    free(w->use_off); free(w->use_pos); free(w->tprefix); free(w->cursor); free(w->obj_of);
    free(w->last_use_node); free(w->last_use_pos); free(w->host_ready); free(w->place_begin);
    free(w->pin); free(w->prev_end); free(w->host_valid); free(w->wasted); free(w->s_obj); free(w->e_obj);
    free(w->occ); free(w->free_after); free(w->fq); free(w->fq_head); free(w->fq_len); free(w->deps);
    free(w->heap); free(w->cur); free(w->hoff); free(w->hlen); free(w->scratch); free(w->ocls); free(w->mark);
    free(w->yq); free(w->yhead); free(w->ytail); free(w->yat);
    free(w->tnext); free(w->fresh); free(w->away); free(w->toff); free(w->pe); free(w->pe_lo); free(w->pe_hi); free(w->pe_n); free(w->fx); free(w->nfx);
    free(w->tight); free(w->top_size); free(w->tcls); free(w->tpers); free(w->tin); free(w->ord); free(w->sobj); free(w->sten); free(w->kused); free(w->thr); free(w->scap); free(w->stop);
    free(w->rcm); free(w->gone); free(w->hold); free(w->lfwd); free(w->rnx); free(w->rdepth); free(w->cmark); free(w->wl);
    free(w->opos); free(w->vu_off); free(w->vu_t); free(w->vp); free(w->vt);
    free(w);
}

bool swp_reserve_objects(swp_ws *w, const pool_alloc *a)
{
    int64_t need_heap = 2 * (int64_t)a->n_objects + 16 * (int64_t)a->n_classes;
    if (need_heap > w->cap_heap) {
        size_t nh = (size_t)(need_heap + need_heap / 2);
        if (!swp_grow(&w->heap, nh, sizeof *w->heap) || !swp_grow(&w->yq, nh, sizeof *w->yq) ||
            !swp_grow(&w->scratch, nh, sizeof *w->scratch))
            return false;
        w->cap_heap = (int64_t)nh;
    }
    int32_t n = a->n_objects;
    if (n <= w->cap_obj)
        return true;
    size_t nc = (size_t)n + (size_t)n / 2 + 16;
    if (!swp_grow(&w->occ, nc, sizeof *w->occ) || !swp_grow(&w->free_after, nc, sizeof *w->free_after) ||
        !swp_grow(&w->fq, nc, sizeof *w->fq) || !swp_grow(&w->cur, nc, sizeof *w->cur) ||
        !swp_grow(&w->ocls, nc, sizeof *w->ocls) || !swp_grow(&w->mark, nc, sizeof *w->mark) ||
        !swp_grow(&w->yat, nc, sizeof *w->yat) || !swp_grow(&w->pe_n, nc, sizeof *w->pe_n) ||
        !swp_grow(&w->nfx, nc, sizeof *w->nfx) || !swp_grow(&w->pe, nc * POOL_SPLIT_MAX, sizeof *w->pe) ||
        !swp_grow(&w->pe_lo, nc * POOL_SPLIT_MAX, sizeof *w->pe_lo) || !swp_grow(&w->pe_hi, nc * POOL_SPLIT_MAX, sizeof *w->pe_hi) ||
        !swp_grow(&w->fx, nc * POOL_SPLIT_MAX, sizeof *w->fx))
        return false;
    w->cap_obj = (int32_t)nc;
    return true;
}

sa_status swp_oom(ctx *c) { return sa_fail(c->err, SA_ENOMEM, "out of memory while planning"); }
