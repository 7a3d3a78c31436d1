/* test_zoo.c - the model zoo: hand-checked op costs, gradient shapes, parameter
 * counts, Table 1 op counts, and that every model builds a valid graph. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "swapadvisor/decide.h"
#include "swapadvisor/dfg.h"
#include "swapadvisor/plan.h"
#include "test_util.h"
#include "swapadvisor/zoo.h"
#include "zoo/zoo_tape.h"

static sa_dfg_graph *build(const char *name, int64_t batch, int64_t seq)
{
    zoo_opts o = {.batch = batch, .seq = seq};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    sa_status st = zoo_build(name, &o, &g, &err);
    ck_assert_msg(st == SA_OK, "%s: %s", name, err.msg);
    ck_assert(g->finalized);
    return g;
}

static int32_t op_named(const sa_dfg_graph *g, const char *name)
{
    for (int32_t i = 0; i < g->n_ops; i++)
        if (strcmp(g->ops[i].name, name) == 0)
            return i;
    ck_abort_msg("%s has no op '%s'", g->name, name);
    return -1;
}

static const sa_dfg_tensor *in_t(const sa_dfg_graph *g, int32_t op, int k) { return &g->tensors[g->ops[op].in[k]]; }
static const sa_dfg_tensor *out_t(const sa_dfg_graph *g, int32_t op, int k) { return &g->tensors[g->ops[op].out[k]]; }

START_TEST(test_convolution_by_hand)
{
    sa_dfg_graph *g = build("resnet-50", 2, 0);
    /* stem: [2,3,224,224] * [64,3,7,7], stride 2, pad 3 -> [2,64,112,112] */
    int32_t c = op_named(g, "conv1");
    ck_assert_str_eq(g->ops[c].type, "conv2d");
    ck_assert_int_eq(g->ops[c].n_in, 2);
    ck_assert_int_eq(in_t(g, c, 0)->bytes, 2 * 3 * 224 * 224 * 4);
    ck_assert_int_eq(in_t(g, c, 1)->bytes, 64 * 3 * 7 * 7 * 4);
    ck_assert_int_eq(in_t(g, c, 1)->kind, SA_DFG_PARAM);
    ck_assert_int_eq(out_t(g, c, 0)->bytes, 2 * 64 * 112 * 112 * 4);
    /* scratch: one image's im2col, (3*7*7) x (112*112) floats */
    ck_assert_int_eq(out_t(g, c, 1)->kind, SA_DFG_WORKSPACE);
    ck_assert_int_eq(out_t(g, c, 1)->bytes, 3 * 7 * 7 * 112 * 112 * 4);
    ck_assert_double_eq(g->ops[c].flops, 2.0 * 2 * 64 * 112 * 112 * 3 * 7 * 7); /* 472,055,808 */
    ck_assert_double_eq(g->ops[c].bytes_accessed, 1204224.0 + 37632 + 6422528 + 7375872);
    /* a 3x3 at 56x56, 64 -> 64 channels */
    c = op_named(g, "layer1.0.conv2");
    ck_assert_double_eq(g->ops[c].flops, 2.0 * 2 * 64 * 56 * 56 * 64 * 3 * 3);
    ck_assert_int_eq(out_t(g, c, 1)->bytes, 64 * 9 * 56 * 56 * 4);
    /* its backward: data and filter gradients cost the same MACs, each with scratch */
    int32_t bd = op_named(g, "layer1.0.conv2/bwd_data"), bf = op_named(g, "layer1.0.conv2/bwd_filter");
    ck_assert_str_eq(g->ops[bd].type, "conv2d_bwd_data");
    ck_assert_str_eq(g->ops[bf].type, "conv2d_bwd_filter");
    ck_assert_double_eq(g->ops[bd].flops, g->ops[c].flops);
    ck_assert_double_eq(g->ops[bf].flops, g->ops[c].flops);
    ck_assert_int_eq(out_t(g, bf, 0)->bytes, 64 * 64 * 9 * 4);
    ck_assert_int_eq(out_t(g, bf, 1)->kind, SA_DFG_WORKSPACE);
    ck_assert_int_eq(out_t(g, bd, 0)->bytes, 2 * 64 * 56 * 56 * 4);
    /* a 1x1 stride-1 convolution is a plain GEMM: no scratch */
    c = op_named(g, "layer1.0.conv1");
    ck_assert_int_eq(g->ops[c].n_out, 1);
    /* the stem's input gradient is never needed */
    for (int32_t i = 0; i < g->n_ops; i++)
        ck_assert_str_ne(g->ops[i].name, "conv1/bwd_data");
    sa_dfg_free(g);

    /* VGG convolutions carry a bias: + one add per output element */
    g = build("vgg-11", 1, 0);
    c = op_named(g, "conv1_1");
    ck_assert_int_eq(g->ops[c].n_in, 3);
    ck_assert_double_eq(g->ops[c].flops, 2.0 * 64 * 224 * 224 * 3 * 9 + 64 * 224 * 224);
    sa_dfg_free(g);

    /* f16 halves every float tensor */
    zoo_opts o = {.batch = 2, .dtype = ZOO_F16};
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("resnet-50", &o, &g, &err), SA_OK);
    c = op_named(g, "conv1");
    ck_assert_int_eq(out_t(g, c, 0)->bytes, 2 * 64 * 112 * 112 * 2);
    ck_assert_str_eq(out_t(g, c, 0)->dtype, "f16");
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_lstm_cell_by_hand)
{
    /* B = 4, H = 1024, 3 steps, 1 layer */
    sa_dfg_graph *g = build("rnn-1-1k", 4, 3);
    int32_t xg = op_named(g, "l0.t1.xg"), hg = op_named(g, "l0.t1.hg"), c = op_named(g, "l0.t1.cell");
    ck_assert_str_eq(g->ops[xg].type, "matmul");
    ck_assert_double_eq(g->ops[xg].flops, 2.0 * 4 * 1024 * 4096);
    ck_assert_double_eq(g->ops[hg].flops, 2.0 * 4 * 1024 * 4096);
    ck_assert_int_eq(in_t(g, xg, 1)->bytes, 1024 * 4096 * 4); /* W_x */
    ck_assert_double_eq(g->ops[xg].bytes_accessed, 4 * 1024 * 4 + 1024 * 4096 * 4 + 4 * 4096 * 4);
    /* cell: xg, hg [4,4096], b [4096], c_prev [4,1024] -> h, c [4,1024], gates [4,4096] */
    ck_assert_str_eq(g->ops[c].type, "lstm_cell");
    ck_assert_int_eq(g->ops[c].n_in, 4);
    ck_assert_int_eq(g->ops[c].n_out, 3);
    ck_assert_int_eq(in_t(g, c, 0)->bytes, 65536);
    ck_assert_int_eq(in_t(g, c, 2)->bytes, 16384);
    ck_assert_int_eq(in_t(g, c, 3)->bytes, 16384);
    ck_assert_int_eq(out_t(g, c, 0)->bytes, 16384);
    ck_assert_int_eq(out_t(g, c, 2)->bytes, 65536);
    ck_assert_double_eq(g->ops[c].bytes_accessed, 65536.0 * 2 + 16384 * 2 + 16384 * 2 + 65536);
    ck_assert_double_eq(g->ops[c].flops, 32.0 * 4 * 1024);
    /* the weights are shared: every step reads the same W_h */
    ck_assert_int_eq(g->ops[hg].in[1], g->ops[op_named(g, "l0.t2.hg")].in[1]);
    /* one gradient per shared weight, accumulated over all 3 steps in one GEMM */
    int32_t wg = op_named(g, "l0.w_x/bwd_weight");
    ck_assert_str_eq(g->ops[wg].type, "matmul_bwd_weight");
    ck_assert_int_eq(g->ops[wg].n_in, 6);
    ck_assert_double_eq(g->ops[wg].flops, 2.0 * 3 * 4 * 1024 * 4096);
    ck_assert_str_eq(out_t(g, wg, 0)->name, "grad/l0.w_x");
    int32_t w = g->ops[xg].in[1], readers_bwd = 0;
    for (int32_t k = 0; k < g->tensors[w].n_readers; k++)
        readers_bwd += g->ops[g->readers[g->tensors[w].reader_off + k]].phase == SA_DFG_BACKWARD;
    ck_assert_int_eq(readers_bwd, 3); /* the data gradient of each step */
    int32_t cb = op_named(g, "l0.t1.cell/bwd");
    ck_assert_str_eq(g->ops[cb].type, "lstm_cell_bwd");
    ck_assert_int_eq(out_t(g, cb, 0)->bytes, 65536); /* d(gates) */
    ck_assert_int_eq(out_t(g, cb, 1)->bytes, 16384); /* d(c_prev) */
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_attention_by_hand)
{
    /* B = 2, S = 16, H = 128, 2 heads of 64 */
    zoo_opts o = {.batch = 2, .seq = 16, .heads = 2};
    sa_dfg_graph *g;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("gpt-1-128", &o, &g, &err), SA_OK);
    int32_t qkv = op_named(g, "h0.attn.c_attn"), sc = op_named(g, "h0.attn.scores");
    int32_t mk = op_named(g, "h0.attn.mask"), sm = op_named(g, "h0.attn.softmax"), cx = op_named(g, "h0.attn.context");
    ck_assert_double_eq(g->ops[qkv].flops, 2.0 * 32 * 128 * 384 + 32 * 384);
    ck_assert_str_eq(g->ops[op_named(g, "h0.attn.split")].type, "split");
    ck_assert_str_eq(g->ops[sc].type, "batched_matmul");
    ck_assert_int_eq(in_t(g, sc, 0)->bytes, 2 * 16 * 128 * 4); /* q */
    ck_assert_int_eq(out_t(g, sc, 0)->bytes, 2 * 2 * 16 * 16 * 4);
    ck_assert_double_eq(g->ops[sc].flops, 2.0 * 2 * 2 * 16 * 16 * 64);
    ck_assert_double_eq(g->ops[sc].bytes_accessed, 16384.0 * 2 + 4096); /* read q, k; write scores */
    ck_assert_str_eq(g->ops[mk].type, "mask");
    ck_assert_int_eq(g->ops[mk].in[0], g->ops[sc].out[0]);
    ck_assert_str_eq(g->ops[sm].type, "softmax");
    ck_assert_double_eq(g->ops[sm].flops, 5.0 * 2 * 2 * 16 * 16);
    ck_assert_str_eq(g->ops[cx].type, "batched_matmul");
    ck_assert_int_eq(g->ops[cx].in[0], g->ops[sm].out[0]);
    ck_assert_double_eq(g->ops[cx].flops, 2.0 * 2 * 2 * 16 * 64 * 16);
    ck_assert_int_eq(out_t(g, cx, 0)->bytes, 2 * 16 * 128 * 4);
    int32_t sb = op_named(g, "h0.attn.scores/bwd");
    ck_assert_str_eq(g->ops[sb].type, "batched_matmul_bwd");
    ck_assert_double_eq(g->ops[sb].flops, 2 * g->ops[sc].flops); /* dq and dk */
    ck_assert_str_eq(g->ops[op_named(g, "h0.attn.softmax/bwd")].type, "softmax_bwd");
    ck_assert_str_eq(g->ops[op_named(g, "h0.attn.mask/bwd")].type, "mask");
    /* tied embedding: two partial gradients summed by an explicit add */
    int32_t sum = op_named(g, "wte/grad_sum");
    ck_assert_str_eq(g->ops[sum].type, "add");
    ck_assert_int_eq(g->ops[sum].n_in, 2);
    ck_assert_int_eq(g->ops[sum].phase, SA_DFG_BACKWARD);
    sa_dfg_free(g);
}
END_TEST

static int cmp_name(const void *a, const void *b, void *arg)
{
    const sa_dfg_graph *g = arg;
    return strcmp(g->tensors[*(const int32_t *)a].name, g->tensors[*(const int32_t *)b].name);
}

static const sa_dfg_graph *g_sorted;
static int32_t *g_order;

static int32_t find_tensor(const char *name, size_t len)
{
    int32_t lo = 0, hi = g_sorted->n_tensors - 1;
    while (lo <= hi) {
        int32_t mid = (lo + hi) / 2;
        const char *m = g_sorted->tensors[g_order[mid]].name;
        int c = strncmp(m, name, len);
        if (c == 0 && m[len])
            c = 1;
        if (c == 0)
            return g_order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Every gradient is named grad/TARGET[#k|#sum] and has TARGET's size; names are
 * unique; kinds follow the conventions; ids ascending is a valid schedule with
 * forward before backward before update. */
static void check_conventions(const sa_dfg_graph *g)
{
    int32_t n = g->n_tensors;
    g_order = malloc((size_t)n * sizeof *g_order);
    for (int32_t i = 0; i < n; i++)
        g_order[i] = i;
    qsort_r(g_order, (size_t)n, sizeof *g_order, cmp_name, (void *)g);
    g_sorted = g;
    for (int32_t i = 1; i < n; i++)
        ck_assert_msg(strcmp(g->tensors[g_order[i - 1]].name, g->tensors[g_order[i]].name) != 0,
                      "%s: tensor name %s twice", g->name, g->tensors[g_order[i]].name);
    int32_t grads = 0;
    for (int32_t i = 0; i < n; i++) {
        const sa_dfg_tensor *t = &g->tensors[i];
        if (t->kind != SA_DFG_GRADIENT) {
            ck_assert_msg(strncmp(t->name, "grad/", 5) != 0, "%s: %s is not a gradient", g->name, t->name);
            continue;
        }
        grads++;
        ck_assert_msg(strncmp(t->name, "grad/", 5) == 0, "%s: gradient %s", g->name, t->name);
        const char *target = t->name + 5, *hash = strrchr(target, '#');
        int32_t x = find_tensor(target, hash ? (size_t)(hash - target) : strlen(target));
        ck_assert_msg(x >= 0, "%s: %s differentiates nothing", g->name, t->name);
        ck_assert_msg(g->tensors[x].kind != SA_DFG_GRADIENT && g->tensors[x].kind != SA_DFG_WORKSPACE, "%s: %s", g->name,
                      t->name);
        ck_assert_msg(g->tensors[x].bytes == t->bytes, "%s: %s has %lld bytes, %s %lld", g->name, t->name,
                      (long long)t->bytes, g->tensors[x].name, (long long)g->tensors[x].bytes);
        ck_assert_int_eq(g->ops[t->producer].phase, SA_DFG_BACKWARD);
        ck_assert_msg(t->n_readers > 0, "%s: %s is never used", g->name, t->name);
    }
    ck_assert_int_gt(grads, 0);
    int32_t updates = 0;
    for (int32_t i = 0; i < n; i++) {
        const sa_dfg_tensor *t = &g->tensors[i];
        if (t->kind == SA_DFG_WORKSPACE) {
            ck_assert_int_eq(t->n_readers, 0);
            ck_assert_msg(strncmp(g->ops[t->producer].type, "conv2d", 6) == 0, "%s: %s", g->name, t->name);
        }
        if (t->kind == SA_DFG_ACTIVATION)
            ck_assert_int_eq(g->ops[t->producer].phase, SA_DFG_FORWARD);
        if (t->kind == SA_DFG_PARAM) {
            ck_assert_msg(t->updater >= 0, "%s: param %s is never updated", g->name, t->name);
            ck_assert_int_eq(g->ops[t->updater].phase, SA_DFG_UPDATE);
            updates++;
        }
        if (t->kind == SA_DFG_STATE)
            ck_assert_msg(t->updater >= 0, "%s: state %s is never updated", g->name, t->name);
        if (t->kind == SA_DFG_INPUT)
            ck_assert_msg(t->n_readers > 0, "%s: input %s is never read", g->name, t->name);
    }
    int32_t *ids = malloc((size_t)g->n_ops * sizeof *ids);
    for (int32_t i = 0; i < g->n_ops; i++) {
        ids[i] = i;
        if (i)
            ck_assert_int_ge(g->ops[i].phase, g->ops[i - 1].phase);
        ck_assert_msg(g->ops[i].flops >= 0 && g->ops[i].bytes_accessed > 0, "%s: %s lacks costs", g->name,
                      g->ops[i].name);
    }
    ck_assert(sa_dfg_is_topological(g, ids));
    int32_t n_update_ops = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        n_update_ops += g->ops[i].phase == SA_DFG_UPDATE;
    ck_assert_int_eq(n_update_ops, updates);
    free(ids);
    free(g_order);
}

START_TEST(test_gradients_match_what_they_differentiate)
{
    static const struct { const char *name; int64_t batch, seq; } m[] = {
        {"resnet-18", 2, 0},    {"resnet-50", 2, 0},    {"wresnet-50-2", 1, 0}, {"vgg-16", 2, 0},
        {"inception-1", 1, 0},  {"nasnet-2", 1, 0},     {"rnn-2-1k", 2, 5},     {"brnn-2-1k", 2, 4},
        {"gpt-2-256", 2, 32},
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(m); i++) {
        sa_dfg_graph *g = build(m[i].name, m[i].batch, m[i].seq);
        check_conventions(g);
        sa_dfg_free(g);
    }
}
END_TEST

START_TEST(test_optimizers_add_state)
{
    sa_dfg_graph *g[3];
    static const char *const type[] = {"sgd_update", "momentum_update", "adam_update"};
    for (int k = 0; k < 3; k++) {
        zoo_opts o = {.batch = 2, .optimizer = (zoo_optimizer)k};
        sa_err err = {0};
        ck_assert_int_eq(zoo_build("resnet-18", &o, &g[k], &err), SA_OK);
        check_conventions(g[k]);
        int32_t last = g[k]->n_ops - 1;
        ck_assert_str_eq(g[k]->ops[last].type, type[k]);
        ck_assert_int_eq(g[k]->ops[last].n_in, 2 + k);
        ck_assert_int_eq(g[k]->ops[last].n_out, 1 + k);
        ck_assert_int_eq(g[k]->ops[last].in[0], g[k]->ops[last].out[0]);
    }
    int64_t params = sa_dfg_param_count_elems(g[0], 1);
    ck_assert_int_eq(sa_dfg_total_bytes(g[1]), sa_dfg_total_bytes(g[0]) + params);
    ck_assert_int_eq(sa_dfg_total_bytes(g[2]), sa_dfg_total_bytes(g[0]) + 2 * params);
    ck_assert_int_eq(g[0]->n_ops, g[2]->n_ops);
    for (int k = 0; k < 3; k++)
        sa_dfg_free(g[k]);
}
END_TEST

START_TEST(test_parameter_counts)
{
    static const struct { const char *name; double want; } m[] = {
        {"resnet-50", 25.6e6}, {"vgg-16", 138e6}, {"gpt-12-768", 124e6},
        {"resnet-152", 60.2e6}, {"inception-1", 42.7e6}, {"nasnet-6", 88.9e6},
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(m); i++) {
        sa_dfg_graph *g = build(m[i].name, 1, strncmp(m[i].name, "gpt", 3) == 0 ? 16 : 0);
        double got = (double)sa_dfg_param_count_elems(g, 4);
        ck_assert_msg(got > 0.99 * m[i].want && got < 1.01 * m[i].want, "%s: %.0f parameters, want %.0f", m[i].name,
                      got, m[i].want);
        sa_dfg_free(g);
    }
    /* exact figures of the reference implementations */
    sa_dfg_graph *g = build("resnet-50", 1, 0);
    ck_assert_int_eq(sa_dfg_param_count_elems(g, 4), 25557032);
    sa_dfg_free(g);
    g = build("vgg-16", 1, 0);
    ck_assert_int_eq(sa_dfg_param_count_elems(g, 4), 138357544);
    sa_dfg_free(g);
    g = build("gpt-12-768", 1, 8);
    ck_assert_int_eq(sa_dfg_param_count_elems(g, 4), 124439808);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_every_model_builds)
{
    static const char *const names[] = {"resnet-18", "resnet-34", "resnet-101", "resnet-152", "vgg-11", "vgg-13",
                                        "vgg-19", "wresnet-152-10", "wresnet-101-2.5", "resnet-200", "inception-4",
                                        "inception-0.5", "nasnet-25", "rnn-8-8k", "brnn-4-8k", "gpt-12-768"};
    for (size_t i = 0; i < SA_ARRAY_LEN(names); i++) {
        sa_dfg_graph *g = build(names[i], 1, strncmp(names[i], "gpt", 3) == 0 ? 64 : 0);
        ck_assert_int_eq(g->batch, 1);
        ck_assert_int_gt(g->n_ops, 50);
        sa_dfg_free(g);
    }
}
END_TEST

/* Table 1 of the paper: op counts do not depend on the batch. */
START_TEST(test_table1_op_counts)
{
    static const struct { const char *name; int32_t ops, paper; } m[] = {
        {"wresnet-152-10", 1807, 882}, {"inception-4", 1758, 830}, {"nasnet-25", 14916, 5533},
        {"rnn-8-8k", 8606, 8594},      {"brnn-4-8k", 9014, 9034},
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(m); i++) {
        sa_dfg_graph *g = build(m[i].name, 1, 0);
        ck_assert_msg(g->n_ops == m[i].ops, "%s: %d ops (docs/zoo.md says %d)", m[i].name, g->n_ops, m[i].ops);
        sa_dfg_free(g);
    }
    /* the recurrent models' default unrolling was chosen to match the paper */
    for (size_t i = 3; i < 5; i++) {
        int64_t batch, seq;
        sa_err err = {0};
        ck_assert_int_eq(zoo_defaults(m[i].name, &batch, &seq, &err), SA_OK);
        ck_assert_int_lt(abs(m[i].ops - m[i].paper), m[i].paper / 100);
        ck_assert_int_eq(batch, i == 3 ? 256 : 128);
    }
    /* and the byte totals at the paper's batch sizes stay what docs/zoo.md reports */
    sa_dfg_graph *g = build("wresnet-152-10", 0, 0);
    ck_assert_int_eq(g->batch, 64);
    ck_assert_int_eq(g->n_sizes, 40);
    sa_dfg_free(g);
    g = build("rnn-8-8k", 0, 0);
    ck_assert_int_eq(g->batch, 256);
    ck_assert_int_eq(g->n_sizes, 9);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_rejects_bad_names_and_options)
{
    sa_dfg_graph *g = (sa_dfg_graph *)1;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("alexnet", NULL, &g, &err), SA_EUSAGE);
    ck_assert_ptr_null(g);
    ck_assert_msg_contains(err, "unknown model 'alexnet'");
    ck_assert_msg_contains(err, "wresnet-D-X");
    ck_assert_msg_contains(err, "rnn-L-XK");
    ck_assert_msg_contains(err, "gpt-L-H");
    static const char *const bad[] = {"resnet-51", "resnet-50-2", "wresnet-50", "wresnet-50-0", "vgg-12",
                                      "rnn-8-8",   "rnn-0-8k",    "brnn-4-k",   "gpt-12",       "nasnet-0",
                                      "inception-", "resnet",     "res net-50", "inception-1e3"};
    for (size_t i = 0; i < SA_ARRAY_LEN(bad); i++) {
        ck_assert_msg(zoo_build(bad[i], NULL, &g, &err) == SA_EUSAGE, "%s accepted", bad[i]);
        ck_assert_ptr_null(strchr(err.msg, '\n'));
    }
    zoo_opts o = {.seq = 8};
    ck_assert_int_eq(zoo_build("resnet-50", &o, &g, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "--seq");
    o = (zoo_opts){.heads = 5};
    ck_assert_int_eq(zoo_build("gpt-2-128", &o, &g, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "divide");
    o = (zoo_opts){.batch = -1};
    ck_assert_int_eq(zoo_build("vgg-16", &o, &g, &err), SA_EUSAGE);
    /* a model too big for exact byte counts is refused, not wrapped */
    o = (zoo_opts){.batch = 1 << 20, .seq = 1 << 20}; /* scores: 2^20 * 2^40 floats */
    ck_assert_int_eq(zoo_build("gpt-1-64", &o, &g, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "2^53");
    int32_t n;
    const zoo_model_info *mi = zoo_models(&n);
    ck_assert_int_eq(n, 8);
    for (int32_t i = 0; i < n; i++) {
        bool seq = strstr(mi[i].pattern, "rnn") || strstr(mi[i].pattern, "gpt");
        ck_assert_msg(zoo_build(mi[i].example, &(zoo_opts){.batch = 1, .seq = seq ? 4 : 0}, &g, &err) == SA_OK, "%s",
                      err.msg);
        sa_dfg_free(g);
    }
}
END_TEST

START_TEST(test_cli)
{
    if (access("bin/dfg-zoo", X_OK) != 0)
        return; /* built by `make`, which `make test` runs first */
    char *dir = tu_tmpdir(), cmd[1024];
    ck_assert_int_eq(system("bin/dfg-zoo --list > /dev/null"), 0);
    ck_assert_int_eq(system("bin/dfg-zoo --help > /dev/null"), 0);
    ck_assert_int_eq(WEXITSTATUS(system("bin/dfg-zoo alexnet 2> /dev/null")), 2);
    ck_assert_int_eq(WEXITSTATUS(system("bin/dfg-zoo resnet-18 --dtype f64 2> /dev/null")), 2);
    ck_assert_int_eq(WEXITSTATUS(system("bin/dfg-zoo 2> /dev/null")), 2);
    snprintf(cmd, sizeof cmd, "bin/dfg-zoo resnet-18 --batch 2 --optimizer adam -o %s/missing/g.json 2> /dev/null",
             dir);
    ck_assert_int_eq(WEXITSTATUS(system(cmd)), 4);
    snprintf(cmd, sizeof cmd, "bin/dfg-zoo rnn-2-1k --batch 2 --seq 3 --dtype f16 -o %s/g.json", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/g.json", dir);
    sa_dfg_graph *g, *h = build("rnn-2-1k", 2, 3);
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_load_file(cmd, &g, &err), SA_OK);
    ck_assert_int_eq(g->n_ops, h->n_ops);
    ck_assert_int_eq(sa_dfg_total_bytes(g) * 2 - sa_dfg_total_bytes(h), 4 * 2 * 3 * 2 * 1); /* i32 tokens, labels */
    sa_dfg_free(g);
    sa_dfg_free(h);
    snprintf(cmd, sizeof cmd, "bin/dfg-zoo vgg-11 --batch 1 --stats > %s/s.txt && grep -q '^params 132863336$' %s/s.txt",
             dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* Batchnorm's running-statistics update is an op of its own (batchnorm_stats,
 * in place on the running tensors); the normalization reads x and the saved
 * statistics only, so its output is recomputable and superneurons, which
 * recomputes the cheap layers' outputs, now recomputes batchnorms too (it had
 * to swap them while one op did both).  Plans stay valid and replay. */
START_TEST(test_batchnorm_output_recomputable)
{
    sa_dfg_graph *g = build("resnet-18", 4, 0);
    int32_t st = op_named(g, "conv1_bn/stats"), bn = op_named(g, "conv1_bn");
    ck_assert_str_eq(g->ops[st].type, "batchnorm_stats");
    ck_assert_str_eq(g->ops[bn].type, "batchnorm");
    ck_assert_int_eq(g->ops[bn].n_out, 1);
    for (int32_t k = 0; k < g->ops[bn].n_in; k++)
        ck_assert(!sa_dfg_kind_persistent(g->tensors[g->ops[bn].in[k]].kind) ||
                  g->tensors[g->ops[bn].in[k]].kind == SA_DFG_PARAM); /* gamma, beta: read only */
    ck_assert(dec_recomputable(g, g->ops[bn].out[0]));
    ck_assert(!dec_recomputable(g, g->ops[st].out[0])); /* saved_mean: made by the in-place op */
    ck_assert_int_eq(g->tensors[g->ops[st].out[2]].updater, st);
    tu_roofline_times(g);
    int64_t peak = sa_dfg_peak_bytes(g, NULL);
    int32_t bn_recomputes = 0;
    for (double f = 0.4; f <= 1.0 && !bn_recomputes; f += 0.1) {
        sa_dfg_device d = tu_policy_dev((int64_t)((double)peak * f));
        sa_plan *p = NULL;
        sa_err err = {0};
        sa_status rc = sa_policy_run("superneurons", g, &d, &p, &err);
        if (rc == SA_EINFEASIBLE)
            continue;
        ck_assert_msg(rc == SA_OK, "%s", err.msg);
        for (int32_t n = 0; n < p->n_nodes; n++)
            if (p->nodes[n].kind == SA_PLAN_RECOMPUTE) {
                const sa_dfg_op *o = &g->ops[p->nodes[n].ref];
                ck_assert_str_ne(o->type, "batchnorm_stats");
                bn_recomputes += strcmp(o->type, "batchnorm") == 0;
            }
        tu_check_policy_plan(p, g, "superneurons on resnet-18", true);
        /* the same plan re-running the statistics op instead is rejected (rule 1) */
        for (int32_t n = 0; n < p->n_nodes; n++)
            if (p->nodes[n].kind == SA_PLAN_RECOMPUTE && strcmp(g->ops[p->nodes[n].ref].type, "batchnorm") == 0) {
                int32_t stats = p->nodes[n].ref - 1;
                ck_assert_str_eq(g->ops[stats].type, "batchnorm_stats");
                p->nodes[n].ref = stats;
                sa_val_report rep = {0};
                ck_assert_int_eq(sa_plan_validate(p, g, false, &rep, &err), SA_EINVALID);
                bool rule1 = false;
                for (int32_t l = 0; l < rep.n_lines; l++)
                    rule1 |= strstr(rep.lines[l], "rule 1") != NULL && strstr(rep.lines[l], "in place") != NULL;
                ck_assert_msg(rule1, "%s", rep.n_lines ? rep.lines[0] : "no violation");
                sa_val_report_free(&rep);
                break;
            }
        sa_plan_free(p);
    }
    ck_assert_int_gt(bn_recomputes, 0);
    sa_dfg_free(g);
}
END_TEST

/* --inference: one forward pass; nothing backward, no optimizer, nothing kept
 * for a backward (no saved statistics, gates or labels); persistent tensors
 * read only.  Training graphs are what they were. */
START_TEST(test_inference_graphs)
{
    static const char *const names[] = {"resnet-18", "vgg-11", "inception-0.5", "nasnet-1", "rnn-2-1k", "brnn-1-1k",
                                        "gpt-2-128"};
    for (size_t i = 0; i < SA_ARRAY_LEN(names); i++) {
        bool seq = strncmp(names[i], "rnn", 3) == 0 || strncmp(names[i], "brnn", 4) == 0 ||
                   strncmp(names[i], "gpt", 3) == 0;
        zoo_opts o = {.batch = 2, .seq = seq ? 8 : 0, .inference = true};
        sa_dfg_graph *g = NULL, *t = NULL;
        sa_err err = {0};
        ck_assert_msg(zoo_build(names[i], &o, &g, &err) == SA_OK, "%s: %s", names[i], err.msg);
        o.inference = false;
        ck_assert_int_eq(zoo_build(names[i], &o, &t, &err), SA_OK);
        /* a folded batchnorm leaves a bias of its channels: training's gamma,
         * beta and running statistics become one [C] parameter */
        int64_t folded = 0;
        for (int32_t k = 0; k < t->n_tensors; k++)
            if (strstr(t->tensors[k].name, ".running_mean"))
                folded += t->tensors[k].bytes / 4;
        ck_assert_int_eq(sa_dfg_param_count_elems(g, 4), sa_dfg_param_count_elems(t, 4) - folded);
        ck_assert_int_lt(g->n_ops, t->n_ops / 2 + 1);
        ck_assert_ptr_nonnull(strstr(g->extra_json, "\"mode\":\"inference\""));
        for (int32_t k = 0; k < g->n_ops; k++) {
            const sa_dfg_op *op = &g->ops[k];
            ck_assert_int_eq(op->phase, SA_DFG_FORWARD);
            ck_assert_str_ne(op->type, "batchnorm_stats");
            ck_assert_str_ne(op->type, "softmax_xent");
            for (int32_t j = 0; j < op->n_out; j++)
                ck_assert_msg(!sa_dfg_kind_persistent(g->tensors[op->out[j]].kind), "%s: %s writes %s", names[i],
                              op->name, g->tensors[op->out[j]].name);
            if (strcmp(op->type, "lstm_cell") == 0 || strcmp(op->type, "layernorm") == 0 ||
                strcmp(op->type, "batchnorm") == 0)
                ck_assert_int_eq(op->n_out, 1 + (strcmp(op->type, "lstm_cell") == 0)); /* h and c; y */
        }
        for (int32_t k = 0; k < g->n_tensors; k++) {
            const sa_dfg_tensor *x = &g->tensors[k];
            ck_assert_int_ne(x->kind, SA_DFG_GRADIENT);
            ck_assert_str_ne(x->name, "labels");
            /* every activation dies in the forward pass: something reads it, or it
             * is the result (probabilities) or an LSTM layer's final cell state */
            if (x->kind == SA_DFG_ACTIVATION && x->n_readers == 0)
                ck_assert_msg(strcmp(g->ops[x->producer].type, "softmax") == 0 ||
                                  strcmp(g->ops[x->producer].type, "lstm_cell") == 0,
                              "%s: %s is never read", names[i], x->name);
        }
        sa_dfg_free(g);
        sa_dfg_free(t);
    }
    zoo_opts o = {.inference = true, .optimizer = ZOO_ADAM};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("resnet-18", &o, &g, &err), SA_EUSAGE);
    ck_assert_msg_contains(err, "no optimizer");
}
END_TEST

/* Fails when p has a recompute node: on an mxnet-engine graph it would re-run
 * only a map's producer, not the in-place ops after it (docs/zoo.md). */
static void no_recompute(const sa_plan *p, const char *what)
{
    for (int32_t i = 0; i < p->n_nodes; i++)
        ck_assert_msg(p->nodes[i].kind != SA_PLAN_RECOMPUTE, "%s recomputes on an inference graph", what);
}

/* Every planner handles an inference graph: the swapping ones plan it below
 * its parameters' size (streaming parameters, which never need a swap-out),
 * strictly valid and replayed on the host; the others plan it at its peak
 * or refuse, naming themselves.  None recomputes, with either engine. */
static void plan_inference_graph(zoo_engine engine)
{
    zoo_opts zo = {.batch = 2, .inference = true, .engine = engine};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("resnet-18", &zo, &g, &err), SA_OK);
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 5 + g->ops[i].flops / 5e13 * 1e6 + g->ops[i].bytes_accessed / 2e12 * 1e6;
    int64_t peak = sa_dfg_peak_bytes(g, NULL), params = sa_dfg_persistent_bytes(g);
    static const char *const swappers[] = {"topo", "odswap", "swapadvisor"};
    for (size_t i = 0; i < SA_ARRAY_LEN(swappers); i++) {
        sa_dfg_device d = tu_policy_dev(params / 2);
        sa_policy_opts po;
        sa_policy_opts_default(&po);
        po.search.generations = 2;
        po.search.threads = 1;
        sa_plan *p = NULL;
        ck_assert_msg(sa_policy_run_opts(swappers[i], g, &d, &po, &p, &err) == SA_OK, "%s: %s", swappers[i], err.msg);
        tu_check_policy_plan(p, g, swappers[i], true);
        no_recompute(p, swappers[i]);
        ck_assert_int_gt(p->predicted.h2d_bytes, params / 2); /* parameters stream in */
        sa_plan_free(p);
    }
    int n;
    const sa_policy_def *t = sa_policy_table(&n);
    sa_policy_opts po; /* a short search: the default's spends its effort, not more checks */
    sa_policy_opts_default(&po);
    po.search.generations = 2;
    po.search.threads = 1;
    for (double f = 1.0; f >= 0.6; f -= 0.4)
        for (int i = 0; i < n; i++) {
            sa_dfg_device d = tu_policy_dev((int64_t)((double)peak * f));
            sa_plan *p = NULL;
            sa_status st = sa_policy_run_opts(t[i].name, g, &d, &po, &p, &err);
            if (st == SA_EINFEASIBLE) {
                ck_assert_msg(strstr(err.msg, t[i].name) == err.msg, "%s", err.msg);
                continue;
            }
            ck_assert_msg(st == SA_OK, "%s at %.1f: %s", t[i].name, f, err.msg);
            tu_check_policy_plan(p, g, t[i].name, true);
            no_recompute(p, t[i].name);
            sa_plan_free(p);
        }
    /* capuchin keeps parameters resident and evicts only what a backward pass
     * would read later: with no backward it plans at the peak and refuses below */
    sa_dfg_device d = tu_policy_dev(peak + peak / 20); /* + alignment */
    sa_plan *p = NULL;
    ck_assert_msg(sa_policy_run("capuchin", g, &d, &p, &err) == SA_OK, "%s", err.msg);
    tu_check_policy_plan(p, g, "capuchin", true);
    sa_plan_free(p);
    sa_dfg_free(g);
}

START_TEST(test_inference_graphs_plan)
{
    plan_inference_graph(ZOO_ENGINE_FUSED);
    plan_inference_graph(ZOO_ENGINE_MXNET);
}
END_TEST

static int count_type(const sa_dfg_graph *g, const char *type)
{
    int n = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        n += strcmp(g->ops[i].type, type) == 0;
    return n;
}

/* Inference CNNs as an inference engine runs them (docs/zoo.md, Inference):
 * batchnorm folded into the conv before it (a bias [C], no batchnorm op),
 * relu fused into the conv before it, a residual unit's shortcut add and
 * relu fused into its last conv.  A fused op's flops are its conv's plus one
 * per output element per epilogue step (bias, add, relu). */
START_TEST(test_inference_fusion)
{
    static const struct { const char *name; int units, plain_relu; } m[] = {
        {"resnet-18", 8, 0}, {"resnet-50", 16, 0}, {"wresnet-50-2", 16, 0}, {"vgg-11", 0, 2},
        {"inception-0.5", 0, 0}, {"nasnet-1", 0, -1}};
    for (size_t i = 0; i < SA_ARRAY_LEN(m); i++) {
        zoo_opts o = {.batch = 2, .inference = true};
        sa_dfg_graph *g = NULL, *t = NULL;
        sa_err err = {0};
        ck_assert_msg(zoo_build(m[i].name, &o, &g, &err) == SA_OK, "%s: %s", m[i].name, err.msg);
        o.inference = false;
        ck_assert_int_eq(zoo_build(m[i].name, &o, &t, &err), SA_OK);
        ck_assert_int_eq(count_type(g, "batchnorm"), 0);
        ck_assert_int_eq(count_type(g, "conv2d_bias_add_relu"), m[i].units);
        if (m[i].plain_relu >= 0)
            ck_assert_int_eq(count_type(g, "relu"), m[i].plain_relu);
        if (m[i].units)
            ck_assert_int_eq(count_type(g, "add"), 0);
        for (int32_t k = 0; k < g->n_tensors; k++)
            ck_assert_msg(g->tensors[k].kind != SA_DFG_STATE, "%s: %s", m[i].name, g->tensors[k].name);
        for (int32_t k = 0; k < g->n_ops; k++) {
            const sa_dfg_op *op = &g->ops[k];
            bool add = strcmp(op->type, "conv2d_bias_add_relu") == 0, relu = strcmp(op->type, "conv2d_bias_relu") == 0;
            if (!add && !relu && strcmp(op->type, "conv2d") != 0)
                continue;
            const sa_dfg_tensor *y = &g->tensors[op->out[0]];
            int32_t want_in = add ? 4 : relu || op->n_in == 3 ? 3 : 2;
            ck_assert_int_eq(op->n_in, want_in);
            ck_assert_int_eq(g->tensors[op->in[1]].kind, SA_DFG_PARAM); /* weights */
            if (want_in >= 3) {                                      /* the (folded) bias [cout] */
                const sa_dfg_tensor *b = &g->tensors[op->in[2]];
                ck_assert_int_eq(b->kind, SA_DFG_PARAM);
                ck_assert_int_eq(b->ndim, 1);
                ck_assert_int_eq(b->shape[0], y->shape[1]);
            }
            if (add) { /* the shortcut: an activation shaped like the output */
                const sa_dfg_tensor *sc = &g->tensors[op->in[3]];
                ck_assert_int_eq(sc->kind, SA_DFG_ACTIVATION);
                ck_assert_int_eq(sc->bytes, y->bytes);
                ck_assert(op->bytes_accessed >= (double)(sc->bytes + y->bytes + g->tensors[op->in[0]].bytes));
            }
            /* the training graph's conv of the same name: same weights shape, the
             * epilogue adds one flop per output element per step */
            int32_t tk = op_named(t, op->name);
            ck_assert_msg(tk >= 0, "%s: %s has no training twin", m[i].name, op->name);
            const sa_dfg_op *top = &t->ops[tk];
            ck_assert_str_eq(top->type, "conv2d");
            ck_assert_int_eq(g->tensors[op->in[1]].bytes, t->tensors[top->in[1]].bytes);
            ck_assert_int_eq(y->bytes, t->tensors[top->out[0]].bytes);
            double steps = (want_in >= 3 && top->n_in == 2) + relu + 2 * add;
            double numel = (double)y->bytes / 4;
            ck_assert_double_eq_tol(op->flops, top->flops + steps * numel, 1e-6 * op->flops);
        }
        sa_dfg_free(g);
        sa_dfg_free(t);
    }
}
END_TEST

/* ResNet-152 inference at batch 16 plans in 128 MiB (the paper's Table 2
 * cell) with either engine: fused, the residual op holds x + shortcut + y +
 * weights; as MXNet runs it, the batchnorm holds its input and output and the
 * in-place add the sum and the shortcut.  An out-of-place add would need two
 * 51 MB feature maps in and a third out at once.  The plan is strictly valid,
 * replays on the host and recomputes nothing (a recompute would re-run only a
 * map's producer, not the in-place ops after it). */
static void plan_r152_b16_in_128mib(zoo_engine engine)
{
    zoo_opts zo = {.batch = 16, .inference = true, .engine = engine};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_int_eq(zoo_build("resnet-152", &zo, &g, &err), SA_OK);
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].time_us = 30 + g->ops[i].flops / 2e13 * 1e6 + g->ops[i].bytes_accessed / 1e12 * 1e6;
    /* the largest op's working set: over 100 MB, under 128 MiB */
    int64_t most = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        const sa_dfg_op *op = &g->ops[i];
        int64_t ws = 0;
        for (int32_t k = 0; k < op->n_in; k++)
            ws += g->tensors[op->in[k]].bytes;
        for (int32_t k = 0; k < op->n_out; k++)
            ws += g->tensors[op->out[k]].bytes;
        most = ws > most ? ws : most;
    }
    ck_assert_int_gt(most, 100000000);
    ck_assert_int_lt(most, 128 << 20);
    sa_dfg_device d = {"v100-like", 128 << 20, 12e9, 12e9, 20e9, 10.0, 0};
    sa_policy_opts po;
    sa_policy_opts_default(&po);
    po.search.generations = 2;
    po.search.threads = 1;
    sa_plan *p = NULL;
    ck_assert_msg(sa_policy_run_opts("swapadvisor", g, &d, &po, &p, &err) == SA_OK, "%s", err.msg);
    tu_check_policy_plan(p, g, "swapadvisor on resnet-152 b16 inference in 128 MiB", true);
    ck_assert_int_le(p->arena_bytes, 128 << 20);
    for (int32_t i = 0; i < p->n_nodes; i++)
        ck_assert_int_ne(p->nodes[i].kind, SA_PLAN_RECOMPUTE);
    sa_plan_free(p);
    sa_dfg_free(g);
}

START_TEST(test_inference_resnet152_b16_in_128mib)
{
    plan_r152_b16_in_128mib(ZOO_ENGINE_FUSED);
    plan_r152_b16_in_128mib(ZOO_ENGINE_MXNET);
}
END_TEST

/* --engine mxnet: the CNN layers as MXNet's executor runs them (docs/zoo.md,
 * Inference).  ResNet-152: 155 conv2d, 155 batchnorm (reading the running
 * statistics, which nothing writes), 151 relu and 50 add, 515 ops.  relu and
 * the residual add write their first input in place: no outputs, and every op
 * that reads the map later is ordered after them (reachable through
 * producer-reader edges and control_deps); nobody reads the map's old value. */
START_TEST(test_inference_mxnet_engine)
{
    zoo_opts o = {.batch = 2, .inference = true, .engine = ZOO_ENGINE_MXNET};
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_msg(zoo_build("resnet-152", &o, &g, &err) == SA_OK, "%s", err.msg);
    ck_assert_int_eq(g->n_ops, 515);
    ck_assert_int_eq(count_type(g, "conv2d"), 155);
    ck_assert_int_eq(count_type(g, "batchnorm"), 155);
    ck_assert_int_eq(count_type(g, "relu"), 151);
    ck_assert_int_eq(count_type(g, "add"), 50);
    ck_assert_ptr_nonnull(strstr(g->extra_json, "\"engine\":\"mxnet\""));
    for (int32_t k = 0; k < g->n_tensors; k++)
        if (g->tensors[k].kind == SA_DFG_STATE)
            ck_assert_int_lt(g->tensors[k].updater, 0);
    int32_t n = g->n_ops;
    uint8_t *reach = calloc((size_t)n * (size_t)n, 1); /* reach[a * n + b]: a path a -> b; ops are topological */
    ck_assert_ptr_nonnull(reach);
    for (int32_t b = 0; b < n; b++) {
        const sa_dfg_op *op = &g->ops[b];
        for (int32_t k = 0; k < op->n_in; k++) {
            int32_t a = g->tensors[op->in[k]].producer;
            if (a >= 0)
                reach[(size_t)a * (size_t)n + (size_t)b] = 1;
        }
    }
    for (int32_t c = 0; c < g->n_control; c++)
        reach[(size_t)g->control[c][0] * (size_t)n + (size_t)g->control[c][1]] = 1;
    for (int32_t b = 0; b < n; b++) /* closure in topological order */
        for (int32_t a = b - 1; a >= 0; a--)
            if (reach[(size_t)a * (size_t)n + (size_t)b])
                for (int32_t x = 0; x < a; x++)
                    if (reach[(size_t)x * (size_t)n + (size_t)a])
                        reach[(size_t)x * (size_t)n + (size_t)b] = 1;
    int inplace = 0;
    for (int32_t k = 0; k < n; k++) {
        const sa_dfg_op *op = &g->ops[k];
        bool ip = strcmp(op->type, "relu") == 0 || strcmp(op->type, "add") == 0;
        ck_assert_int_eq(op->n_out == 0, ip);
        if (!ip)
            continue;
        inplace++;
        int32_t x = op->in[0];
        ck_assert_int_eq(g->tensors[x].kind, SA_DFG_ACTIVATION);
        ck_assert_double_eq_tol(op->bytes_accessed, (double)g->tensors[x].bytes * (op->n_in + 1), 1);
        for (int32_t r = 0; r < n; r++) {
            const sa_dfg_op *ro = &g->ops[r];
            for (int32_t j = 0; j < ro->n_in; j++) {
                if (ro->in[j] != x || r == k)
                    continue;
                if (r < k) /* before: only an earlier in-place op on the same map */
                    ck_assert_msg(ro->n_out == 0 && ro->in[0] == x, "%s reads %s before %s", ro->name,
                                  g->tensors[x].name, op->name);
                else
                    ck_assert_msg(reach[(size_t)k * (size_t)n + (size_t)r], "%s not ordered after %s", ro->name,
                                  op->name);
            }
        }
    }
    ck_assert_int_eq(inplace, 201);
    free(reach);
    sa_dfg_free(g);
    /* the other CNNs build, and an engine without --inference is refused */
    static const char *cnn[] = {"vgg-11", "inception-0.5", "nasnet-1", "wresnet-50-2"};
    for (size_t i = 0; i < SA_ARRAY_LEN(cnn); i++) {
        ck_assert_msg(zoo_build(cnn[i], &o, &g, &err) == SA_OK, "%s: %s", cnn[i], err.msg);
        ck_assert_int_eq(count_type(g, "conv2d_bias_relu") + count_type(g, "conv2d_bias_add_relu"), 0);
        sa_dfg_free(g);
    }
    o.inference = false;
    ck_assert_int_eq(zoo_build("resnet-18", &o, &g, &err), SA_EUSAGE);
    ck_assert_ptr_nonnull(strstr(err.msg, "inference"));
}
END_TEST

/* An in-place op on a map another op already reads would overwrite the value
 * that reader needs: the builder refuses it (an internal error). */
START_TEST(test_inplace_refuses_a_read_map)
{
    zoo_opts o = {.inference = true, .engine = ZOO_ENGINE_MXNET};
    sa_err err = {0};
    zb z;
    zb_init(&z, "t", &o, 1, &err);
    int64_t shape[] = {1, 4};
    int32_t i = zb_tensor(&z, SA_DFG_INPUT, 2, shape, "i"), x = zb_tensor(&z, SA_DFG_ACTIVATION, 2, shape, "x");
    int32_t y = zb_tensor(&z, SA_DFG_ACTIVATION, 2, shape, "y");
    ck_assert_int_ge(zb_op(&z, "a", "copy", SA_DFG_FORWARD, &i, 1, &x, 1, 0), 0);
    ck_assert_int_ge(zb_op(&z, "b", "copy", SA_DFG_FORWARD, &x, 1, &y, 1, 0), 0);
    ck_assert_int_eq(zb_op_inplace(&z, "r", "relu", &y, 1, 0), y); /* y: read by nobody yet */
    ck_assert_int_eq(zb_op_inplace(&z, "r2", "relu", &y, 1, 0), y); /* after an in-place op: fine */
    ck_assert_int_eq(zb_op_inplace(&z, "bad", "relu", &x, 1, 0), -1);
    ck_assert_int_eq(z.st, SA_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "which b also reads"));
    zb_release(&z);
    sa_dfg_free(z.g);
}
END_TEST

START_TEST(test_ready_made_graphs_load)
{
    static const struct { const char *path, *name; int64_t batch, seq; } m[] = {
        {"graphs/resnet-50-b32.json", "resnet-50", 32, 0},
        {"graphs/vgg-11-b16.json", "vgg-11", 16, 0},
        {"graphs/rnn-2-1k.json", "rnn-2-1k", 16, 16},
    };
    for (size_t i = 0; i < SA_ARRAY_LEN(m); i++) {
        if (access(m[i].path, R_OK) != 0)
            continue;
        sa_dfg_graph *g, *h = build(m[i].name, m[i].batch, m[i].seq);
        sa_err err = {0};
        ck_assert_msg(sa_dfg_load_file(m[i].path, &g, &err) == SA_OK, "%s", err.msg);
        ck_assert_int_eq(g->n_ops, h->n_ops);
        ck_assert_int_eq(g->n_tensors, h->n_tensors);
        ck_assert_int_eq(sa_dfg_total_bytes(g), sa_dfg_total_bytes(h));
        sa_dfg_free(g);
        sa_dfg_free(h);
    }
}
END_TEST

Suite *suite_zoo(void)
{
    Suite *s = suite_create("zoo");
    TCase *tc = tcase_create("zoo");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_convolution_by_hand);
    tcase_add_test(tc, test_batchnorm_output_recomputable);
    tcase_add_test(tc, test_inference_graphs);
    tcase_add_test(tc, test_inference_graphs_plan);
    tcase_add_test(tc, test_inference_fusion);
    tcase_add_test(tc, test_inference_resnet152_b16_in_128mib);
    tcase_add_test(tc, test_inference_mxnet_engine);
    tcase_add_test(tc, test_inplace_refuses_a_read_map);
    tcase_add_test(tc, test_lstm_cell_by_hand);
    tcase_add_test(tc, test_attention_by_hand);
    tcase_add_test(tc, test_gradients_match_what_they_differentiate);
    tcase_add_test(tc, test_optimizers_add_state);
    tcase_add_test(tc, test_parameter_counts);
    tcase_add_test(tc, test_every_model_builds);
    tcase_add_test(tc, test_table1_op_counts);
    tcase_add_test(tc, test_rejects_bad_names_and_options);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_ready_made_graphs_load);
    suite_add_tcase(s, tc);
    return s;
}
