/* test_dfg.c - graph loader rules (docs/formats.md section 1), derived data, round trips. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swapadvisor/dfg.h"
#include "swapadvisor/sa_io.h"
#include "test_util.h"

#define TINY tu_tiny_json()

static sa_status parse(const char *text, sa_dfg_graph **g, sa_err *err)
{
    return sa_dfg_parse(text, strlen(text), "t.json", g, err);
}

/* Parses TINY with one substitution and expects a format error mentioning needle. */
static void expect_reject(const char *from, const char *to, const char *needle)
{
    char *text = tu_replace(TINY, from, to);
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    sa_status st = parse(text, &g, &err);
    ck_assert_msg(st == SA_EFORMAT, "'%s' -> '%s' gave status %d (%s)", from, to, st, err.msg);
    ck_assert_ptr_null(g);
    ck_assert_msg_contains(err, needle);
    ck_assert_msg_contains(err, "t.json");
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    free(text);
}

START_TEST(test_tiny_loads_with_derived_data)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    ck_assert_int_eq(parse(TINY, &g, &err), SA_OK);
    ck_assert_int_eq(g->n_tensors, 6);
    ck_assert_int_eq(g->n_ops, 4);
    ck_assert_int_eq(g->tensors[2].producer, 0);
    ck_assert_int_eq(g->tensors[1].producer, -1);
    ck_assert_int_eq(g->tensors[1].updater, 3);
    ck_assert_int_eq(g->tensors[0].n_readers, 2);
    /* sizes 8, 16, 32 */
    ck_assert_int_eq(g->n_sizes, 3);
    ck_assert_int_eq(g->sizes[0], 8);
    ck_assert_int_eq(g->sizes[2], 32);
    ck_assert_int_eq(g->tensors[1].size_idx, 2);
    /* edges: fc->loss, loss->fc_bw, fc->sgd (WAR on w), fc_bw->sgd */
    ck_assert_int_eq(g->succ_off[1] - g->succ_off[0], 2);
    ck_assert_int_eq(g->pred_off[4] - g->pred_off[3], 2);
    int32_t want[] = {0, 1, 2, 3};
    ck_assert_mem_eq(g->topo, want, sizeof want);
    ck_assert(sa_dfg_is_topological(g, g->topo));
    int32_t bad[] = {1, 0, 2, 3};
    ck_assert(!sa_dfg_is_topological(g, bad));
    ck_assert_int_eq(g->ops[3].n_use, 2); /* w listed in and out: one use */
    ck_assert_int_eq(sa_dfg_total_bytes(g), 16 + 32 + 16 + 16 + 32 + 8);
    ck_assert_double_eq_tol(sa_dfg_total_time_us(g), 4.5, 1e-9);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_peak_bytes_counts_live_tensors)
{
    sa_dfg_graph *g;
    sa_err err = {0};
    ck_assert_int_eq(parse(TINY, &g, &err), SA_OK);
    /* w (32) always; at fc: x 16 + y 16 + ws 8 => 72; at fc_bw: x, dy, dw => 32+16+16+32 = 96 */
    ck_assert_int_eq(sa_dfg_peak_bytes(g, NULL), 96);
    int32_t op;
    ck_assert_int_eq(sa_dfg_max_op_bytes(g, &op), 72);
    ck_assert_int_eq(op, 0);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_reject_truncated_json)
{
    sa_dfg_graph *g = NULL;
    sa_err err = {0};
    ck_assert_int_eq(sa_dfg_parse(TINY, strlen(TINY) / 2, "t.json", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "t.json: truncated JSON");
    ck_assert_int_eq(sa_dfg_parse("", 0, "t.json", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "empty");
    ck_assert_int_eq(parse("{\"format\": dfg}", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "line 1 column");
    ck_assert_int_eq(parse("[1,2]", &g, &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "object");
}
END_TEST

START_TEST(test_reject_header)
{
    expect_reject("\"format\":\"dfg\"", "\"format\":\"dfx\"", "\"format\" is \"dfx\", expected \"dfg\"");
    expect_reject("\"format\":\"dfg\",", "", "missing \"format\"");
    expect_reject("\"version\":1", "\"version\":2", "newer than the supported dfg v1");
    expect_reject("\"version\":1", "\"version\":\"1\"", "\"version\" must be a positive integer");
}
END_TEST

START_TEST(test_reject_sizes)
{
    expect_reject("\"bytes\":32,\"note\"", "\"bytes\":18446744073709551616,\"note\"", "beyond 2^53");
    expect_reject("\"bytes\":32,\"note\"", "\"bytes\":-4,\"note\"", "bytes must be positive");
    expect_reject("\"bytes\":32,\"note\"", "\"bytes\":0,\"note\"", "bytes must be positive");
    expect_reject("\"bytes\":32,\"note\"", "\"bytes\":16.5,\"note\"", "must be an integer");
    expect_reject("\"bytes\":32,\"note\"", "\"bytes\":\"32\",\"note\"", "must be an integer");
    expect_reject("\"bytes\":32,\"note\"", "\"note\"", "missing field \"bytes\"");
}
END_TEST

START_TEST(test_reject_ids)
{
    expect_reject("\"inputs\":[2],", "\"inputs\":[9],", "dangling id");
    expect_reject("\"inputs\":[2],", "\"inputs\":[-1],", "dangling id");
    expect_reject("{\"id\":3,\"name\":\"dy\"", "{\"id\":2,\"name\":\"dy\"", "tensors[3]: id 2 must equal its index 3");
    expect_reject("{\"id\":2,\"name\":\"fc_bw\"", "{\"id\":1,\"name\":\"fc_bw\"", "ops[2]: id 1 must equal its index");
    expect_reject("\"control_deps\":[]", "\"control_deps\":[[0,7]]", "control_deps[0]");
    expect_reject("\"inputs\":[3,0]", "\"inputs\":[3,3]", "twice");
}
END_TEST

START_TEST(test_reject_producers)
{
    expect_reject("\"outputs\":[2,5]", "\"outputs\":[5]", "tensors[2] (\"y\"): activation has no producer");
    expect_reject("\"inputs\":[3,0],\"outputs\":[4]", "\"inputs\":[3,0],\"outputs\":[4,2]", "has two producers (ops 0 and 2)");
    expect_reject("\"outputs\":[2,5]", "\"outputs\":[2]", "workspace has no producer");
}
END_TEST

START_TEST(test_reject_cycle)
{
    expect_reject("\"control_deps\":[]", "\"control_deps\":[[3,0]]", "lies on a cycle");
    expect_reject("\"control_deps\":[]", "\"control_deps\":[[1,1]]", "depends on itself");
}
END_TEST

START_TEST(test_reject_write_rules)
{
    expect_reject("\"inputs\":[0,1],\"outputs\":[2,5]", "\"inputs\":[0,1,2],\"outputs\":[2,5]",
                  "reads activation tensors[2] (\"y\") before it is written");
    expect_reject("\"inputs\":[1,4],\"outputs\":[1]", "\"inputs\":[1,4],\"outputs\":[1,0]", "writes input");
    expect_reject("\"inputs\":[3,0],\"outputs\":[4]", "\"inputs\":[3,0],\"outputs\":[4,1]", "out-of-place write");
    expect_reject("\"inputs\":[3,0],\"outputs\":[4]", "\"inputs\":[3,0,5],\"outputs\":[4]", "reads workspace");
    expect_reject("\"kind\":\"gradient\",\"bytes\":32", "\"kind\":\"grad\",\"bytes\":32", "unknown kind \"grad\"");
    expect_reject("\"phase\":\"update\"", "\"phase\":\"optimizer\"", "unknown phase");
}
END_TEST

START_TEST(test_round_trip_keeps_everything)
{
    sa_dfg_graph *g, *h;
    sa_err err = {0};
    char *a, *b;
    ck_assert_int_eq(parse(TINY, &g, &err), SA_OK);
    ck_assert_int_eq(sa_dfg_to_json(g, true, &a, &err), SA_OK);
    ck_assert_int_eq(sa_dfg_parse(a, strlen(a), "rt.json", &h, &err), SA_OK);
    ck_assert_int_eq(sa_dfg_to_json(h, true, &b, &err), SA_OK);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_nonnull(strstr(a, "\"custom\": {\"a\":[1,2]}"));
    ck_assert_ptr_nonnull(strstr(a, "\"note\":\"kept\""));
    ck_assert_ptr_nonnull(strstr(a, "\"extra_op\":true"));
    ck_assert_ptr_nonnull(strstr(a, "\"shape\":[2,2]"));
    ck_assert_int_eq(h->ops[0].flops, 128);
    ck_assert_double_eq(h->ops[0].time_us, 1.5);
    ck_assert_double_lt(h->ops[0].bytes_accessed, 0); /* stays absent */
    ck_assert_int_eq(h->batch, 2);
    free(a);
    free(b);
    sa_dfg_free(g);
    sa_dfg_free(h);
}
END_TEST

START_TEST(test_big_sizes_are_exact)
{
    char *text = tu_replace(TINY, "\"bytes\":32,\"note\"", "\"bytes\":9007199254740992,\"note\"");
    sa_dfg_graph *g;
    sa_err err = {0};
    char *out;
    ck_assert_int_eq(parse(text, &g, &err), SA_OK);
    ck_assert_int_eq(g->tensors[1].bytes, 9007199254740992LL);
    ck_assert_int_eq(sa_dfg_to_json(g, false, &out, &err), SA_OK);
    ck_assert_ptr_nonnull(strstr(out, "9007199254740992"));
    free(out);
    free(text);
    sa_dfg_free(g);
}
END_TEST

START_TEST(test_file_io_atomic_and_errors)
{
    char *dir = tu_tmpdir(), path[512];
    sa_dfg_graph *g, *h;
    sa_err err = {0};
    ck_assert_int_eq(parse(TINY, &g, &err), SA_OK);
    snprintf(path, sizeof path, "%s/g.json", dir);
    ck_assert_int_eq(sa_dfg_write_file(g, path, &err), SA_OK);
    ck_assert_int_eq(sa_dfg_load_file(path, &h, &err), SA_OK);
    ck_assert_int_eq(h->n_ops, 4);
    sa_dfg_free(h);
    /* a folder that does not exist: an I/O error naming it, no stray files */
    snprintf(path, sizeof path, "%s/missing/g.json", dir);
    ck_assert_int_eq(sa_dfg_write_file(g, path, &err), SA_EIO);
    ck_assert_msg_contains(err, "missing/g.json");
    ck_assert_int_eq(sa_dfg_load_file("/nonexistent/x.json", &h, &err), SA_EIO);
    ck_assert_msg_contains(err, "/nonexistent/x.json: cannot open");
    sa_dfg_free(g);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    ck_assert_int_eq(system(path), 0);
    free(dir);
}
END_TEST

START_TEST(test_builder_matches_parser)
{
    sa_dfg_graph *g = sa_dfg_new("built");
    sa_err err = {0};
    int32_t x = sa_dfg_add_tensor(g, "x", SA_DFG_INPUT, 16);
    int32_t w = sa_dfg_add_tensor(g, "w", SA_DFG_PARAM, 32);
    int32_t y = sa_dfg_add_tensor(g, "y", SA_DFG_ACTIVATION, 16);
    int32_t in[] = {x, w}, out[] = {y}, upd[] = {w};
    int32_t in2[] = {w, y};
    ck_assert_int_eq(sa_dfg_add_op(g, "fc", "matmul", SA_DFG_FORWARD, in, 2, out, 1), 0);
    ck_assert_int_eq(sa_dfg_add_op(g, "upd", "sgd_update", SA_DFG_UPDATE, in2, 2, upd, 1), 1);
    ck_assert_int_eq(sa_dfg_finalize(g, "built", &err), SA_OK);
    ck_assert_int_eq(g->tensors[w].updater, 1);
    ck_assert_int_eq(g->tensors[y].producer, 0);
    ck_assert_int_eq(g->n_sizes, 2);
    /* a second write makes it invalid again */
    ck_assert_int_eq(sa_dfg_add_op(g, "upd2", "sgd_update", SA_DFG_UPDATE, in2, 2, upd, 1), 2);
    ck_assert_int_eq(sa_dfg_finalize(g, "built", &err), SA_EFORMAT);
    ck_assert_msg_contains(err, "updated in place by two ops");
    sa_dfg_free(g);
}
END_TEST

Suite *suite_dfg(void)
{
    Suite *s = suite_create("dfg");
    TCase *tc = tcase_create("loader");
    tcase_add_test(tc, test_tiny_loads_with_derived_data);
    tcase_add_test(tc, test_peak_bytes_counts_live_tensors);
    tcase_add_test(tc, test_reject_truncated_json);
    tcase_add_test(tc, test_reject_header);
    tcase_add_test(tc, test_reject_sizes);
    tcase_add_test(tc, test_reject_ids);
    tcase_add_test(tc, test_reject_producers);
    tcase_add_test(tc, test_reject_cycle);
    tcase_add_test(tc, test_reject_write_rules);
    tcase_add_test(tc, test_round_trip_keeps_everything);
    tcase_add_test(tc, test_big_sizes_are_exact);
    tcase_add_test(tc, test_file_io_atomic_and_errors);
    tcase_add_test(tc, test_builder_matches_parser);
    suite_add_tcase(s, tc);
    return s;
}
