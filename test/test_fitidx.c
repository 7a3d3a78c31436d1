/* test_fitidx.c - the best-fit index (lib/planning/bestfit/fitidx.h) against the walk
 * it replaced: for blocks with random sizes and one or two random lifetimes,
 * placed in a given order, every offset must equal the offset the naive walk
 * (every placed block in offset order, the holes between the conflicting
 * ones) gives. */
#include <check.h>
#include <stdlib.h>

#include "planning/bestfit/fitidx.h"
#include "swapadvisor/rng.h"
#include "test_util.h"

typedef struct tblk {
    int64_t size, off;
    int32_t s[2], a[2];
    int n;
} tblk;

static bool ov(int32_t s0, int32_t a0, int32_t s1, int32_t a1) { return s0 < a1 && s1 < a0; }

static bool conflict(const tblk *x, const tblk *y)
{
    for (int i = 0; i < x->n; i++)
        for (int j = 0; j < y->n; j++)
            if (ov(x->s[i], x->a[i], y->s[j], y->a[j]))
                return true;
    return false;
}

/* pack.c's former best fit: placed[] by ascending offset (equal offsets in
 * placing order), the smallest hole between conflicting blocks that fits,
 * the lowest of equals, else the highest end. */
static void naive_pack(tblk *b, int32_t n)
{
    int32_t *placed = calloc((size_t)n + 1, sizeof *placed), np = 0;
    ck_assert_ptr_nonnull(placed);
    for (int32_t i = 0; i < n; i++) {
        tblk *x = &b[i];
        int64_t cursor = 0, best = -1, best_gap = 0;
        for (int32_t k = 0; k < np; k++) {
            const tblk *y = &b[placed[k]];
            if (!conflict(x, y))
                continue;
            int64_t gap = y->off - cursor;
            if (gap >= x->size && (best < 0 || gap < best_gap)) {
                best = cursor;
                best_gap = gap;
            }
            if (y->off + y->size > cursor)
                cursor = y->off + y->size;
        }
        x->off = best >= 0 ? best : cursor;
        int32_t at = np;
        while (at > 0 && b[placed[at - 1]].off > x->off)
            at--;
        for (int32_t k = np; k > at; k--)
            placed[k] = placed[k - 1];
        placed[at] = i;
        np++;
    }
    free(placed);
}

static void index_pack(fit_ws *w, tblk *b, int32_t n, int32_t lo, int32_t hi)
{
    sa_err err;
    ck_assert_msg(fit_reset(w, lo, hi, &err) == SA_OK, "%s", err.msg);
    for (int32_t i = 0; i < n; i++) {
        b[i].off = fit_find(w, b[i].size, b[i].s, b[i].a, b[i].n);
        ck_assert_msg(fit_insert(w, b[i].off, b[i].size, b[i].s, b[i].a, b[i].n, &err) == SA_OK, "%s", err.msg);
    }
}

/* A random lifetime within [lo, hi): mostly short, some long, some pinned
 * to either end of the range. */
static void random_life(rng *r, int32_t lo, int32_t hi, int32_t *s, int32_t *a)
{
    int32_t span = hi - lo;
    double u = rng_unit(r);
    int32_t len = u < 0.6 ? 1 + (int32_t)rng_below(r, 4) : u < 0.9 ? 1 + (int32_t)rng_below(r, span / 4 + 1)
                                                            : 1 + (int32_t)rng_below(r, span);
    if (len > span)
        len = span;
    int32_t st = lo + (int32_t)rng_below(r, (span - len + 1));
    if (rng_unit(r) < 0.05)
        st = lo;
    if (rng_unit(r) < 0.05)
        st = hi - len;
    *s = st;
    *a = st + len;
}

START_TEST(test_index_matches_the_walk_on_random_lifetimes)
{
    fit_ws *w = fit_ws_new();
    ck_assert_ptr_nonnull(w);
    /* sizes: a few classes that tile each other (exact fits, as in the
     * RNNs), odd sizes, and huge ones past 2^32 */
    static const int64_t cls[] = {256, 512, 1024, 4096, 768, 4352, 1LL << 34, (1LL << 33) + 256};
    for (uint64_t seed = 1; seed <= 300; seed++) {
        rng r;
        rng_seed(&r, seed, 7, 11);
        int32_t n = 1 + (int32_t)rng_below(&r, seed % 10 == 0 ? 600 : 120);
        /* short ranges, and ones tall enough for the pc band (heights 7-9) and the cov lists above it */
        int32_t span = seed % 3 == 0 ? 40 : seed % 3 == 1 ? 700 : 5000;
        int32_t lo = -2 + (int32_t)rng_below(&r, 3), hi = lo + 1 + (int32_t)rng_below(&r, span);
        int ncls = 1 + (int)rng_below(&r, 8);
        tblk *b = calloc((size_t)n, sizeof *b), *c = calloc((size_t)n, sizeof *c);
        ck_assert(b && c);
        for (int32_t i = 0; i < n; i++) {
            b[i].size = rng_unit(&r) < 0.8 ? cls[rng_below(&r, ncls)] : 256 * (1 + (int64_t)rng_below(&r, 64));
            b[i].n = rng_unit(&r) < 0.15 ? 2 : 1;
            for (int k = 0; k < b[i].n; k++)
                random_life(&r, lo, hi, &b[i].s[k], &b[i].a[k]);
        }
        /* pack.c's order (size descending) in most runs, any order in some */
        if (seed % 4)
            for (int32_t i = 1; i < n; i++)
                for (int32_t j = i; j > 0 && b[j - 1].size < b[j].size; j--) {
                    tblk t = b[j];
                    b[j] = b[j - 1];
                    b[j - 1] = t;
                }
        for (int32_t i = 0; i < n; i++)
            c[i] = b[i];
        naive_pack(b, n);
        index_pack(w, c, n, lo, hi);
        for (int32_t i = 0; i < n; i++)
            ck_assert_msg(b[i].off == c[i].off, "seed %llu: block %d of %d (size %lld): walk %lld, index %lld",
                          (unsigned long long)seed, i, n, (long long)b[i].size, (long long)b[i].off,
                          (long long)c[i].off);
        free(b);
        free(c);
    }
    fit_ws_free(w);
}
END_TEST

/* Hand-made cases: the smallest hole wins over a lower larger one, the lower
 * of two equal holes wins, a block whose second lifetime alone conflicts is
 * avoided, and a reused workspace forgets the previous packing. */
START_TEST(test_index_hand_made_holes)
{
    fit_ws *w = fit_ws_new();
    sa_err err;
    ck_assert_ptr_nonnull(w);
    tblk b[] = {
        {300, 0, {0, 0}, {10, 0}, 1},   /* [0, 300) */
        {100, 0, {0, 0}, {10, 0}, 1},   /* [300, 400) */
        {200, 0, {0, 0}, {10, 0}, 1},   /* [400, 600) */
        {100, 0, {0, 0}, {10, 0}, 1},   /* [600, 700) */
    };
    index_pack(w, b, 4, 0, 10);
    ck_assert_int_eq(b[0].off, 0);
    ck_assert_int_eq(b[1].off, 300);
    ck_assert_int_eq(b[2].off, 400);
    ck_assert_int_eq(b[3].off, 600);
    /* the same, but the 300 and 200 blocks die early: holes of 300 at 0 and
     * 200 at 400 for a later 150 block, which takes the smaller one */
    tblk c[] = {
        {300, 0, {0, 0}, {2, 0}, 1},
        {100, 0, {0, 0}, {10, 0}, 1},
        {200, 0, {0, 0}, {2, 0}, 1},
        {100, 0, {0, 0}, {10, 0}, 1},
        {150, 0, {5, 0}, {6, 0}, 1},
        {150, 0, {5, 0}, {7, 0}, 1},   /* then the 300 hole at 0, the lowest that fits */
        {50, 0, {5, 0}, {9, 0}, 1},    /* the 50 left at 550 */
        {20, 0, {2, 5}, {3, 6}, 2},    /* its first lifetime alone would take 400; the second meets 0 .. 150 and 400 .. 600 */
    };
    index_pack(w, c, 8, 0, 10);
    ck_assert_int_eq(c[0].off, 0);
    ck_assert_int_eq(c[1].off, 300);
    ck_assert_int_eq(c[2].off, 400);
    ck_assert_int_eq(c[3].off, 600);
    ck_assert_int_eq(c[4].off, 400);
    ck_assert_int_eq(c[5].off, 0);
    ck_assert_int_eq(c[6].off, 550);
    ck_assert_int_eq(c[7].off, 150);
    /* nothing conflicts: offset 0; a one-point range */
    tblk d = {64, 0, {3, 0}, {4, 0}, 1};
    ck_assert(fit_reset(w, 3, 4, &err) == SA_OK);
    ck_assert_int_eq(fit_find(w, d.size, d.s, d.a, 1), 0);
    fit_ws_free(w);
}
END_TEST

Suite *suite_fitidx(void)
{
    Suite *s = suite_create("fitidx");
    TCase *tc = tcase_create("fitidx");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_index_matches_the_walk_on_random_lifetimes);
    tcase_add_test(tc, test_index_hand_made_holes);
    suite_add_tcase(s, tc);
    return s;
}
