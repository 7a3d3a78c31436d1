/* test_runner.c - the plan runner: the host backend verifies real plans, catches
 * the corruption of forced invalid plans, scales bytes safely; the CUDA backend
 * fails cleanly without a GPU; the front end's exit codes. */
#include <check.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapadvisor/ga.h"
#include "swapadvisor/gpu.h"
#include "swapadvisor/policy.h"
#include "swapadvisor/runner.h"
#include "swapadvisor/sa_io.h"
#include "swapadvisor/sim.h"
#include "swapadvisor/validate.h"
#include "swapadvisor/zoo.h"
#include "test_util.h"

/* ---------------------------------------------------------------- graphs */

static sa_dfg_graph *tiny(void)
{
    sa_dfg_graph *g;
    sa_err err;
    const char *t = tu_tiny_json();
    ck_assert_int_eq(sa_dfg_parse(t, strlen(t), "tiny.json", &g, &err), SA_OK);
    return g;
}


static sa_dfg_device dev_with(int64_t mem)
{
    /* 4 GB/s links: transfers are not free next to microsecond ops */
    sa_dfg_device d = {"runner-dev", mem, 4e9, 4e9, 6e9, 5.0, 0};
    return d;
}

/* A plan by policy ("topo", "odswap" or "ga") at frac of the no-swap peak,
 * raised in steps of 5 % of the peak while the planner finds it infeasible
 * (an op's working set, or a size class, can need more than a small frac;
 * tiny's 16-byte tensors need more than their peak for the pool's objects). */
static sa_plan *plan_at(const sa_dfg_graph *g, const char *policy, double frac, int64_t *mem_out)
{
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    sa_err err = {0};
    for (double f = frac; f <= 64; f = f < 1 ? f + 0.05 : f * 1.25) {
        sa_dfg_device d = dev_with((int64_t)((double)peak * f));
        sa_plan *p = NULL;
        sa_status st;
        if (strcmp(policy, "ga") == 0) {
            sa_ga_opts o;
            sa_ga_opts_default(&o);
            o.threads = 2;
            o.seed = 3;
            o.population = 8;
            o.generations = 3;
            sa_ga_result r;
            st = sa_ga_search(g, &d, &o, &r, &err);
            p = r.best;
        } else {
            st = sa_policy_run(policy, g, &d, &p, &err);
        }
        if (st == SA_EINFEASIBLE)
            continue;
        ck_assert_msg(st == SA_OK, "%s on %s at %.2f: %s", policy, g->name, f, err.msg);
        ck_assert_msg(sa_plan_validate(p, g, true, NULL, &err) == SA_OK, "%s: %s", policy, err.msg);
        if (mem_out)
            *mem_out = d.memory_bytes;
        return p;
    }
    ck_abort_msg("%s on %s: infeasible up to 64 times the no-swap peak", policy, g->name);
    return NULL;
}

static sa_plan *copy_plan(const sa_plan *p)
{
    char *json;
    sa_plan *q;
    sa_err err = {0};
    ck_assert_int_eq(sa_plan_to_json(p, &json, &err), SA_OK);
    ck_assert_msg(sa_plan_parse(json, strlen(json), "copy", &q, &err) == SA_OK, "%s", err.msg);
    free(json);
    return q;
}

static sa_runner_opts host_opts(bool force)
{
    sa_runner_opts o;
    sa_runner_opts_default(&o);
    o.backend = SA_RUNNER_HOST;
    o.force = force;
    return o;
}

/* Runs the host backend and checks that it verified everything. */
static void expect_verified(const sa_plan *p, const sa_dfg_graph *g, const sa_runner_opts *o, const char *what)
{
    sa_runner_report r;
    sa_err err = {0};
    sa_status st = sa_runner_run(p, g, o, &r, &err);
    ck_assert_msg(st == SA_OK, "%s: %s", what, err.msg);
    ck_assert(r.valid);
    int32_t expect = 0;
    for (int32_t t = 0; t < g->n_tensors; t++)
        expect += g->tensors[t].kind != SA_DFG_INPUT;
    ck_assert_int_eq(r.verified_tensors, expect);
    ck_assert_int_gt(r.verified_checksums, 0);
    ck_assert_int_eq(r.plan_h2d_bytes, p->predicted.h2d_bytes);
    ck_assert_int_eq(r.plan_d2h_bytes, p->predicted.d2h_bytes);
    for (int i = 0; i < r.iterations; i++)
        ck_assert(r.iter_us[i] >= 0);
    sa_runner_report_free(&r);
}

/* ---------------------------------------------------------------- verified replays */

START_TEST(test_host_verifies_policies_on_tiny)
{
    sa_dfg_graph *g = tiny();
    const char *pol[] = {"topo", "odswap", "ga"};
    const double fr[] = {0.5, 0.25};
    int64_t moved = 0;
    for (size_t i = 0; i < SA_ARRAY_LEN(pol); i++)
        for (size_t f = 0; f < SA_ARRAY_LEN(fr); f++) {
            sa_plan *p = plan_at(g, pol[i], fr[f], NULL);
            sa_runner_opts o = host_opts(false);
            o.iterations = 3;
            expect_verified(p, g, &o, pol[i]);
            moved += p->predicted.h2d_bytes;
            sa_plan_free(p);
        }
    ck_assert_int_gt(moved, 0);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_host_verifies_policies_on_ladder)
{
    sa_dfg_graph *g = tu_ladder(8);
    const char *pol[] = {"topo", "odswap", "ga"};
    const double fr[] = {0.5, 0.25};
    for (size_t i = 0; i < SA_ARRAY_LEN(pol); i++)
        for (size_t f = 0; f < SA_ARRAY_LEN(fr); f++) {
            int64_t mem;
            sa_plan *p = plan_at(g, pol[i], fr[f], &mem);
            ck_assert_int_gt(p->predicted.h2d_bytes + p->predicted.d2h_bytes, 0); /* it really swaps */
            sa_runner_opts o = host_opts(false);
            expect_verified(p, g, &o, pol[i]);
            /* scaled: odd factors round every offset and size */
            const int64_t ks[] = {3, 1000};
            for (size_t k = 0; k < SA_ARRAY_LEN(ks); k++) {
                o.scale_bytes = ks[k];
                expect_verified(p, g, &o, pol[i]);
            }
            sa_plan_free(p);
        }
    sa_dfg_free(g);
}
END_TEST

/* The scaled layout keeps disjoint ranges disjoint (what makes a valid plan
 * stay valid), keeps ranges that start at the same address overlapping, and
 * fits every scaled tensor where it was placed (8 bytes at least); at K = 1
 * it is the plan's own layout. */
START_TEST(test_scaled_layout_keeps_address_relations)
{
    sa_dfg_graph *g = tu_ladder(6);
    sa_plan *p = plan_at(g, "topo", 0.4, NULL);
    /* plus a collision, a partial overlap and an exact adjacency */
    int64_t b0 = g->tensors[p->place[0].tensor].bytes;
    const int64_t shift[] = {0, 8, b0};
    for (int i = 0; i < 3; i++) {
        sa_plan_placement *q = &p->place[i + 1];
        q->offset = p->place[0].offset + shift[i];
        if (q->offset + g->tensors[q->tensor].bytes > p->arena_bytes)
            q->offset = 0;
    }
    const int64_t ks[] = {1, 2, 7, 4096, 65536, (int64_t)1 << 40};
    for (size_t k = 0; k < SA_ARRAY_LEN(ks); k++) {
        sa_runner_layout l;
        sa_err err = {0};
        ck_assert_msg(sa_runner_layout_build(p, g, ks[k], &l, &err) == SA_OK, "%s", err.msg);
        ck_assert_int_eq(l.scale, ks[k]);
        if (ks[k] == 1)
            ck_assert_int_eq(l.arena_bytes, p->arena_bytes);
        for (int32_t i = 0; i < p->n_place; i++) {
            const sa_plan_placement *a = &p->place[i];
            int64_t ab = g->tensors[a->tensor].bytes, sb = l.tbytes[a->tensor];
            ck_assert_int_ge(sb, ks[k] == 1 ? 1 : 8);
            ck_assert_int_ge(sb * ks[k], ab);
            ck_assert_int_le(l.place_off[i] + sb, l.arena_bytes);
            if (ks[k] == 1)
                ck_assert_int_eq(l.place_off[i], a->offset);
            for (int32_t j = 0; j < p->n_place; j++) {
                if (i == j)
                    continue;
                const sa_plan_placement *b = &p->place[j];
                int64_t bb = g->tensors[b->tensor].bytes;
                bool orig = a->offset < b->offset + bb && b->offset < a->offset + ab;
                bool scaled = l.place_off[i] < l.place_off[j] + l.tbytes[b->tensor] &&
                              l.place_off[j] < l.place_off[i] + sb;
                if (!orig || a->offset == b->offset || ks[k] == 1)
                    ck_assert_msg(orig == scaled, "K=%lld placements %d and %d: overlap %d became %d",
                                  (long long)ks[k], i, j, orig, scaled);
            }
        }
        sa_runner_layout_free(&l);
    }
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_auto_scale_fits_the_cap)
{
    sa_dfg_graph *g = tu_ladder(8);
    sa_plan *p = plan_at(g, "odswap", 0.5, NULL);
    int64_t k = 0, full = sa_runner_host_footprint(p, g, 1);
    sa_err err = {0};
    ck_assert_int_gt(full, 0);
    ck_assert_int_eq(sa_runner_auto_scale(p, g, full, &k, &err), SA_OK);
    ck_assert_int_eq(k, 1);
    int64_t cap = full / 50;
    ck_assert_int_eq(sa_runner_auto_scale(p, g, cap, &k, &err), SA_OK);
    ck_assert_int_gt(k, 1);
    ck_assert_int_eq(k & (k - 1), 0); /* a power of two */
    ck_assert_int_le(sa_runner_host_footprint(p, g, k), cap);
    ck_assert_int_gt(sa_runner_host_footprint(p, g, k / 2), cap); /* the smallest that fits */
    ck_assert_int_eq(sa_runner_auto_scale(p, g, 64, &k, &err), SA_EINFEASIBLE);
    /* and the replay at that cap verifies */
    sa_runner_opts o = host_opts(false);
    o.cap_bytes = cap;
    sa_runner_report r;
    ck_assert_msg(sa_runner_run(p, g, &o, &r, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_gt(r.scale, 1);
    sa_runner_report_free(&r);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* ---------------------------------------------------------------- refusals and corruption */

static void add_dep(sa_plan *q, int32_t node, int32_t dep)
{
    sa_plan_node *nd = &q->nodes[node];
    int32_t need = q->n_deps + nd->n_deps + 1;
    if (need > q->cap_deps) {
        int32_t *d = realloc(q->deps, (size_t)need * sizeof *d);
        ck_assert_ptr_nonnull(d);
        q->deps = d;
        q->cap_deps = need;
    }
    memmove(q->deps + q->n_deps, q->deps + nd->dep_off, (size_t)nd->n_deps * sizeof *q->deps);
    q->deps[q->n_deps + nd->n_deps] = dep;
    nd->dep_off = q->n_deps;
    nd->n_deps++;
    q->n_deps = need;
}

START_TEST(test_invalid_plan_refused_without_force)
{
    sa_dfg_graph *g = tu_ladder(6);
    sa_plan *p = plan_at(g, "topo", 0.4, NULL);
    /* a compute that no longer waits for anything: it may read tensors still in flight */
    int32_t victim = -1;
    for (int32_t i = 0; i < p->n_nodes && victim < 0; i++)
        if (p->nodes[i].kind == SA_PLAN_COMPUTE && p->nodes[i].n_deps > 0) {
            for (int32_t k = 0; k < p->nodes[i].n_deps; k++)
                if (p->nodes[p->deps[p->nodes[i].dep_off + k]].kind == SA_PLAN_SWAP_IN)
                    victim = i;
        }
    ck_assert_int_ge(victim, 0);
    p->nodes[victim].n_deps = 0;
    sa_runner_opts o = host_opts(false);
    sa_runner_report r;
    sa_err err = {0};
    ck_assert_int_eq(sa_runner_run(p, g, &o, &r, &err), SA_EINVALID);
    ck_assert_int_gt(r.violations.n_violations, 0);
    ck_assert_int_gt(r.violations.n_lines, 0);
    ck_assert_int_le(r.violations.n_lines, 10);
    ck_assert_ptr_null(r.iter_us); /* nothing ran */
    ck_assert_str_eq(err.msg, r.violations.lines[0]);
    sa_runner_report_free(&r);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_cycle_refused_even_with_force)
{
    sa_dfg_graph *g = tiny();
    sa_plan *p = plan_at(g, "topo", 0.5, NULL);
    /* the first compute node waits for the last node of the compute stream */
    int32_t first = -1, last = -1;
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == SA_PLAN_COMPUTE) {
            if (first < 0)
                first = i;
            last = i;
        }
    ck_assert_int_ne(first, last);
    add_dep(p, first, last);
    sa_runner_opts o = host_opts(true);
    sa_err err = {0};
    ck_assert_int_eq(sa_runner_run(p, g, &o, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "cycle");
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* (a) A swap_in moved before the swap_out that saves its contents: its deps
 * are dropped and the swap_out made to wait for it, so it always copies the
 * stale host copy (poison in the first iteration). */
static int stale_swap_in_cases(const sa_dfg_graph *g, const sa_plan *p)
{
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result res;
    sa_err err = {0};
    ck_assert_int_eq(sa_sim_run(p, g, ws, &res, &err), SA_OK);
    const double *ts = sa_sim_start(ws), *te = sa_sim_end(ws);
    int caught = 0;
    for (int32_t s = 0; s < p->n_nodes; s++) {
        if (p->nodes[s].kind != SA_PLAN_SWAP_IN)
            continue;
        int32_t t = p->nodes[s].ref, o = -1;
        for (int32_t i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].kind == SA_PLAN_SWAP_OUT && p->nodes[i].ref == t && te[i] <= ts[s] &&
                (o < 0 || te[i] > te[o]))
                o = i;
        if (o < 0)
            continue; /* the host copy is the initial one: nothing to get wrong */
        sa_plan *q = copy_plan(p);
        q->nodes[s].n_deps = 0;
        add_dep(q, o, s);
        ck_assert_int_eq(sa_plan_validate(q, g, true, NULL, &err), SA_EINVALID);
        sa_runner_opts ro = host_opts(true);
        sa_runner_report r;
        sa_status st = sa_runner_run(q, g, &ro, &r, &err);
        if (st == SA_EINVALID) {
            ck_assert_msg_contains(err, "cycle"); /* this reordering cannot exist; try the next */
        } else {
            ck_assert_msg(st == SA_EVERIFY, "swap_in nodes[%d] of tensor %d before swap_out nodes[%d]: %s (%s)", s, t,
                          o, sa_status_name(st), err.msg);
            ck_assert(!r.valid);
            ck_assert_msg_contains(err, "verification failed");
            caught++;
        }
        sa_runner_report_free(&r);
        sa_plan_free(q);
    }
    sa_sim_ws_free(ws);
    return caught;
}

START_TEST(test_force_catches_swap_in_before_its_swap_out)
{
    sa_dfg_graph *g = tu_ladder(6);
    int caught = 0;
    const char *pol[] = {"topo", "odswap"};
    for (size_t i = 0; i < SA_ARRAY_LEN(pol); i++) {
        sa_plan *p = plan_at(g, pol[i], 0.3, NULL);
        caught += stale_swap_in_cases(g, p);
        sa_plan_free(p);
    }
    ck_assert_int_gt(caught, 0);
    sa_dfg_free(g);
}
END_TEST

/* (b) The placement of an output moved onto a live tensor: B is produced by
 * compute node cb and read by compute node d; an op computed in between now
 * writes its output A over B's bytes. */
START_TEST(test_force_catches_placement_over_a_live_tensor)
{
    sa_dfg_graph *g = tu_ladder(6);
    sa_plan *p = plan_at(g, "topo", 0.4, NULL);
    int32_t *nplace = calloc((size_t)g->n_tensors, sizeof *nplace), *cnode = calloc((size_t)g->n_ops, sizeof *cnode);
    for (int32_t i = 0; i < p->n_place; i++)
        nplace[p->place[i].tensor]++;
    for (int32_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].kind == SA_PLAN_COMPUTE)
            cnode[p->nodes[i].ref] = i;
    int32_t found_b = -1, found_a = -1;
    for (int32_t bi = 0; bi < p->n_place && found_a < 0; bi++) {
        int32_t tb = p->place[bi].tensor, cb = p->place[bi].begin;
        const sa_dfg_tensor *T = &g->tensors[tb];
        if (nplace[tb] != 1 || cb < 0 || p->nodes[cb].kind != SA_PLAN_COMPUTE || sa_dfg_kind_persistent(T->kind))
            continue;
        for (int32_t r = 0; r < T->n_readers && found_a < 0; r++) {
            int32_t d = cnode[g->readers[T->reader_off + r]];
            for (int32_t ai = 0; ai < p->n_place && found_a < 0; ai++) {
                const sa_plan_placement *A = &p->place[ai];
                int32_t c = A->begin;
                if (A->tensor == tb || c <= cb || c >= d || p->nodes[c].kind != SA_PLAN_COMPUTE ||
                    sa_dfg_kind_persistent(g->tensors[A->tensor].kind) ||
                    p->place[bi].offset + g->tensors[A->tensor].bytes > p->arena_bytes)
                    continue;
                found_b = bi;
                found_a = ai;
            }
        }
    }
    ck_assert_msg(found_a >= 0, "no live tensor to write over in this plan");
    p->place[found_a].offset = p->place[found_b].offset;
    sa_err err = {0};
    sa_runner_opts o = host_opts(false);
    ck_assert_int_eq(sa_runner_run(p, g, &o, NULL, &err), SA_EINVALID);
    ck_assert_msg_contains(err, "overlap");
    o.force = true;
    sa_runner_report r;
    ck_assert_int_eq(sa_runner_run(p, g, &o, &r, &err), SA_EVERIFY);
    ck_assert(!r.valid);
    char needle[128];
    snprintf(needle, sizeof needle, "tensor %d (", p->place[found_b].tensor);
    ck_assert_msg_contains(err, needle); /* names the tensor written over */
    /* the same with the bytes scaled: the overlap survives the rounding */
    o.scale_bytes = 1000;
    ck_assert_int_eq(sa_runner_run(p, g, &o, NULL, &err), SA_EVERIFY);
    sa_runner_report_free(&r);
    free(nplace);
    free(cnode);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* (c) The swap_out that saves an updated weight made to run before the
 * update: the host keeps the old contents, which the final check reads. */
START_TEST(test_force_catches_a_lost_update)
{
    sa_dfg_graph *g = tu_ladder(6);
    sa_plan *p = plan_at(g, "topo", 0.3, NULL);
    sa_sim_ws *ws = sa_sim_ws_new();
    sa_sim_result res;
    sa_err err = {0};
    ck_assert_int_eq(sa_sim_run(p, g, ws, &res, &err), SA_OK);
    const double *ts = sa_sim_start(ws), *te = sa_sim_end(ws);
    int caught = 0;
    for (int32_t so = 0; so < p->n_nodes; so++) {
        int32_t w = p->nodes[so].ref;
        if (p->nodes[so].kind != SA_PLAN_SWAP_OUT || !sa_dfg_kind_persistent(g->tensors[w].kind))
            continue;
        bool resident = false, last = true;
        for (int32_t i = 0; i < p->n_res; i++)
            resident |= p->res[i].tensor == w;
        for (int32_t i = so + 1; i < p->n_nodes; i++)
            last &= !(p->nodes[i].kind == SA_PLAN_SWAP_OUT && p->nodes[i].ref == w);
        int32_t upd = -1;
        for (int32_t i = 0; i < p->n_nodes; i++)
            if (p->nodes[i].kind == SA_PLAN_COMPUTE && p->nodes[i].ref == g->tensors[w].updater)
                upd = i;
        ck_assert_int_ge(upd, 0);
        if (resident || !last || ts[so] < te[upd])
            continue; /* not the swap_out that saves the update for the next iteration */
        sa_plan *q = copy_plan(p);
        q->nodes[so].n_deps = 0;
        add_dep(q, upd, so);
        sa_runner_opts o = host_opts(true);
        sa_status st = sa_runner_run(q, g, &o, NULL, &err);
        if (st == SA_EINVALID) {
            ck_assert_msg_contains(err, "cycle");
        } else {
            ck_assert_msg(st == SA_EVERIFY, "swap_out nodes[%d] of %d before its update: %s", so, w, err.msg);
            caught++;
        }
        sa_plan_free(q);
    }
    sa_sim_ws_free(ws);
    ck_assert_int_gt(caught, 0);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* ---------------------------------------------------------------- CUDA */

START_TEST(test_cuda_backend_without_gpu)
{
    sa_err err = {0};
    if (gpu_available(&err) == SA_OK) {
        fprintf(stderr, "note: a CUDA device is present; the no-GPU check is skipped\n");
        return;
    }
    ck_assert_int_eq(err.status, SA_EDEVICE);
    ck_assert_msg_contains(err, "no CUDA device");
    sa_dfg_graph *g = tiny();
    sa_plan *p = plan_at(g, "topo", 0.5, NULL);
    sa_runner_opts o;
    sa_runner_opts_default(&o);
    o.backend = SA_RUNNER_CUDA;
    sa_runner_report r;
    ck_assert_int_eq(sa_runner_run(p, g, &o, &r, &err), SA_EDEVICE);
    ck_assert_msg_contains(err, "no CUDA device");
    sa_runner_report_free(&r);
    o.real_ops = true;
    o.scale_bytes = 4;
    ck_assert_int_eq(sa_runner_run(p, g, &o, NULL, &err), SA_EUSAGE);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

/* ---------------------------------------------------------------- the zoo */

/* Every model family of the zoo, by its example name, topo and odswap plans at
 * 50 % and 25 % of the no-swap peak (raised in 5 % steps where the pool cannot
 * fit), replayed on the host backend with scaled bytes. */
START_TEST(test_zoo_plans_verify)
{
    int32_t nm;
    const zoo_model_info *mi = zoo_models(&nm);
    int verified = 0;
    for (int32_t m = 0; m < nm; m++) {
        sa_dfg_graph *g;
        sa_err err = {0};
        ck_assert_msg(zoo_build(mi[m].example, NULL, &g, &err) == SA_OK, "%s: %s", mi[m].example, err.msg);
        /* a fast GPU's roofline: the times only shape the plans */
        tu_roofline_times(g);
        const char *pol[] = {"topo", "odswap"};
        const double fr[] = {0.5, 0.25};
        for (size_t i = 0; i < SA_ARRAY_LEN(pol); i++)
            for (size_t f = 0; f < SA_ARRAY_LEN(fr); f++) {
                sa_plan *p = plan_at(g, pol[i], fr[f], NULL);
                sa_runner_opts o = host_opts(false);
                o.cap_bytes = 48 << 20; /* scaled down: about a second per plan at most */
                char what[160];
                snprintf(what, sizeof what, "%s %s at %.2f", mi[m].example, pol[i], fr[f]);
                expect_verified(p, g, &o, what);
                verified++;
                sa_plan_free(p);
            }
        sa_dfg_free(g);
    }
    ck_assert_int_ge(verified, 4 * nm);
}
END_TEST

/* ---------------------------------------------------------------- the front end */

/* ROOT/BUILD/test/run_tests -> the bin folder (ROOT/bin for BUILD=build, else BUILD/bin). */
static bool tool_path(char *out, size_t n)
{
    char exe[PATH_MAX];
    snprintf(out, n, "bin/swapplan-run");
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    char build[PATH_MAX], base[PATH_MAX], rootbuf[PATH_MAX];
    snprintf(build, sizeof build, "%s", dirname(dirname(exe)));
    snprintf(base, sizeof base, "%s", build);
    snprintf(rootbuf, sizeof rootbuf, "%s", build);
    const char *root = dirname(rootbuf);
    if (strcmp(basename(base), "build") == 0)
        snprintf(out, n, "%s/bin/swapplan-run", root);
    else
        snprintf(out, n, "%s/bin/swapplan-run", build);
    return access(out, X_OK) == 0;
}

static int run_cli(const char *tool, const char *args, const char *outfile)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "%s %s >%s 2>&1", tool, args, outfile);
    int st = system(cmd);
    ck_assert_msg(st != -1 && WIFEXITED(st), "could not run: %s", cmd);
    return WEXITSTATUS(st);
}

START_TEST(test_cli_exit_codes)
{
    char tool[PATH_MAX];
    if (!tool_path(tool, sizeof tool)) {
        fprintf(stderr, "note: %s not built; CLI checks skipped\n", tool);
        return;
    }
    sa_dfg_graph *g = tu_ladder(4);
    g->has_device = true;
    g->device = dev_with(1 << 30);
    sa_plan *p = plan_at(g, "odswap", 0.4, NULL);
    char *dir = tu_tmpdir(), gp[PATH_MAX], pp[PATH_MAX], bad[PATH_MAX], out[PATH_MAX], args[4 * PATH_MAX];
    snprintf(gp, sizeof gp, "%s/g.json", dir);
    snprintf(pp, sizeof pp, "%s/p.json", dir);
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_write_file(g, gp, &err), SA_OK);
    ck_assert_int_eq(sa_plan_write_file(p, pp, &err), SA_OK);
    /* a placement onto another live tensor: invalid */
    int32_t a = -1, b = -1;
    for (int32_t i = 0; i < p->n_place && a < 0; i++)
        for (int32_t j = 0; j < p->n_place && a < 0; j++)
            if (p->place[i].begin >= 0 && p->place[i].begin == p->place[j].begin && i != j &&
                p->place[j].offset + g->tensors[p->place[i].tensor].bytes <= p->arena_bytes &&
                p->place[j].offset != p->place[i].offset) {
                a = i;
                b = j;
            }
    ck_assert_int_ge(a, 0);
    p->place[a].offset = p->place[b].offset;
    ck_assert_int_eq(sa_plan_write_file(p, bad, &err), SA_OK);

    snprintf(args, sizeof args, "%s --graph %s --backend host --iterations 3", pp, gp);
    ck_assert_int_eq(run_cli(tool, args, out), 0);
    char *text;
    size_t len;
    ck_assert_int_eq(sa_read_file(out, &text, &len, &err), SA_OK);
    ck_assert_msg(strstr(text, "verified: ") && strstr(text, "iteration 3:"), "%s", text);
    free(text);

    snprintf(args, sizeof args, "%s --graph %s --backend host", bad, gp);
    ck_assert_int_eq(run_cli(tool, args, out), 6);
    ck_assert_int_eq(sa_read_file(out, &text, &len, &err), SA_OK);
    ck_assert_msg(strstr(text, "rule 4") && strstr(text, "--force"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "%s --graph %s --backend host --force", bad, gp);
    ck_assert_int_eq(run_cli(tool, args, out), 8);

    if (gpu_available(&err) != SA_OK) {
        snprintf(args, sizeof args, "%s --graph %s --backend cuda", pp, gp);
        ck_assert_int_eq(run_cli(tool, args, out), 7);
        ck_assert_int_eq(sa_read_file(out, &text, &len, &err), SA_OK);
        ck_assert_msg(strstr(text, "no CUDA device"), "%s", text);
        free(text);
    }
    snprintf(args, sizeof args, "%s --backend host", pp);
    ck_assert_int_eq(run_cli(tool, args, out), 2);

    snprintf(args, sizeof args, "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
    free(dir);
    sa_plan_free(p);
    sa_dfg_free(g);
}
END_TEST

Suite *suite_runner(void)
{
    Suite *s = suite_create("runner");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_host_verifies_policies_on_tiny);
    tcase_add_test(tc, test_host_verifies_policies_on_ladder);
    tcase_add_test(tc, test_scaled_layout_keeps_address_relations);
    tcase_add_test(tc, test_auto_scale_fits_the_cap);
    tcase_add_test(tc, test_invalid_plan_refused_without_force);
    tcase_add_test(tc, test_cycle_refused_even_with_force);
    tcase_add_test(tc, test_force_catches_swap_in_before_its_swap_out);
    tcase_add_test(tc, test_force_catches_placement_over_a_live_tensor);
    tcase_add_test(tc, test_force_catches_a_lost_update);
    tcase_add_test(tc, test_cuda_backend_without_gpu);
    tcase_add_test(tc, test_cli_exit_codes);
    suite_add_tcase(s, tc);
    TCase *tz = tcase_create("zoo");
    tcase_set_timeout(tz, 120);
    tcase_add_test(tz, test_zoo_plans_verify);
    suite_add_tcase(s, tz);
    return s;
}
