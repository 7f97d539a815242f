/*
 * test_ack_state.c — the pure data structures of storage/managed/: the ledger
 * list's position arithmetic, the cursor acknowledgement state (holes, mark-
 * delete advance, cumulative acks, batch-index bitsets, backlog, encoding and
 * its bounds) and the entry cache. No I/O: a ledger list is built by hand.
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "storage/managed/managed_int.h"
#include "tests/unit/managed/test_managed.h"
#include "tests/unit/support/test_support.h"

#define P(l, e) ((ml_pos_t){(l), (e)})
#define POS_EQ(a, b) CU_ASSERT_EQUAL(ml_pos_cmp((a), (b)), 0)

/* Ledgers 3 (10 entries), 5 (empty, closed), 7 (5 entries), 9 (current, 4). */
static void make_list(ml_ledger_list_t *l)
{
    memset(l, 0, sizeof *l);
    l->current_id = -1;
    int64_t ids[] = {3, 5, 7, 9}, entries[] = {10, 0, 5, 4};
    for (int i = 0; i < 4; i++) {
        TEST_REQUIRE(ml_list_append(l, ids[i]) == 0);
        l->v[i].entries = entries[i];
        l->v[i].size_bytes = entries[i] * 100;
        l->v[i].closed_ms = i < 3 ? 1000 : 0;
    }
    l->current_id = 9;
}

static void test_list_next_and_count(void)
{
    ml_ledger_list_t l;
    make_list(&l);
    POS_EQ(ml_list_next(&l, ML_POS_EARLIEST), P(3, 0));
    POS_EQ(ml_list_next(&l, P(3, 4)), P(3, 5));
    POS_EQ(ml_list_next(&l, P(3, 9)), P(7, 0)); /* skips empty ledger 5 */
    POS_EQ(ml_list_next(&l, P(5, -1)), P(7, 0));
    POS_EQ(ml_list_next(&l, P(7, 4)), P(9, 0));
    POS_EQ(ml_list_next(&l, P(9, 3)), P(9, 4)); /* current: where the next add lands */
    POS_EQ(ml_list_next(&l, P(1, 7)), P(3, 0)); /* trimmed ledger */
    CU_ASSERT_EQUAL(ml_list_count(&l, ML_POS_EARLIEST, P(9, 3)), 19);
    CU_ASSERT_EQUAL(ml_list_count(&l, P(3, 4), P(7, 1)), 7);
    CU_ASSERT_EQUAL(ml_list_count(&l, P(3, 9), P(7, 0)), 1);
    CU_ASSERT_EQUAL(ml_list_count(&l, P(7, 0), P(3, 9)), 0);
    CU_ASSERT_EQUAL(ml_list_count(&l, P(9, 3), ML_POS_LATEST), 0);
    /* Bytes at each ledger's average (100 a entry here). */
    CU_ASSERT_EQUAL(ml_list_bytes(&l, P(3, 4), P(7, 1)), 700);
    CU_ASSERT_EQUAL(ml_list_bytes(&l, ML_POS_EARLIEST, P(9, 3)), 1900);
    CU_ASSERT_EQUAL(ml_list_bytes(&l, P(7, 0), P(3, 9)), 0);
    ml_pos_t p;
    CU_ASSERT_TRUE(ml_list_seek(&l, P(3, 10), &p));
    POS_EQ(p, P(7, 0));
    CU_ASSERT_TRUE(ml_list_seek(&l, P(4, 0), &p));
    POS_EQ(p, P(7, 0));
    CU_ASSERT_FALSE(ml_list_seek(&l, P(9, 4), &p));
    POS_EQ(ml_list_last(&l), P(9, 3));
    CU_ASSERT_EQUAL(ml_list_total_entries(&l), 19);
    ml_list_free(&l);
}

static void test_ack_holes_fill_and_advance(void)
{
    ml_ledger_list_t l;
    make_list(&l);
    ml_ack_state_t st;
    ml_ack_init(&st, &l, P(3, -1));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 19);
    /* Ack 3:2, 3:4, 3:3: one range 3:2..3:4 after filling the hole. */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 2)), 0);
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 4)), 0);
    CU_ASSERT_EQUAL(st.nranges, 2);
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 3)), 0);
    CU_ASSERT_EQUAL(st.nranges, 1);
    POS_EQ(st.mark_delete, P(3, -1));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 16);
    char buf[128];
    CU_ASSERT_EQUAL(ml_ack_format_ranges(&st, buf, sizeof buf), 1);
    CU_ASSERT_STRING_EQUAL(buf, "[(3:1, 3:4]]");
    /* Acking 3:0 then 3:1 advances M over everything contiguous. */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 0)), 0);
    POS_EQ(st.mark_delete, P(3, 0));
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 1)), 0);
    POS_EQ(st.mark_delete, P(3, 4));
    CU_ASSERT_EQUAL(st.nranges, 0);
    /* Across ledgers: 3:5..3:9 and 7:0 are contiguous (5 is empty). */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(7, 0)), 0);
    for (int e = 9; e >= 6; e--)
        CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, e)), 0);
    CU_ASSERT_EQUAL(st.nranges, 1);
    POS_EQ(st.ranges[0].first, P(3, 6));
    POS_EQ(st.ranges[0].last, P(7, 0));
    CU_ASSERT_TRUE(ml_ack_is_acked(&st, P(3, 7)));
    CU_ASSERT_FALSE(ml_ack_is_acked(&st, P(3, 5)));
    POS_EQ(ml_ack_skip(&st, P(3, 0)), P(3, 5));
    POS_EQ(ml_ack_skip(&st, P(3, 6)), P(7, 1));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 9); /* 3:5, 7:1-4, 9:0-3 */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 5)), 0);
    POS_EQ(st.mark_delete, P(7, 0));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 8);
    /* Acking twice changes nothing. */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 5)), 0);
    POS_EQ(st.mark_delete, P(7, 0));
    ml_ack_free(&st);
    ml_list_free(&l);
}

static void test_ack_cumulative(void)
{
    ml_ledger_list_t l;
    make_list(&l);
    ml_ack_state_t st;
    ml_ack_init(&st, &l, P(3, -1));
    ml_ack_one(&st, P(3, 5));
    ml_ack_one(&st, P(3, 7));
    ml_ack_one(&st, P(3, 8));
    ml_ack_one(&st, P(7, 3));
    uint64_t w = 0x6;
    ml_ack_batch(&st, P(7, 1), &w, 1);
    /* Cumulative into the middle of the 3:7..3:8 range takes M to its end. */
    ml_ack_cumulative(&st, P(3, 7));
    POS_EQ(st.mark_delete, P(3, 8));
    CU_ASSERT_EQUAL(st.nranges, 1);
    CU_ASSERT_EQUAL(st.nbatches, 1);
    /* Cumulative to 7:2 meets the range at 7:3; the 7:1 bitset goes. */
    ml_ack_cumulative(&st, P(7, 2));
    POS_EQ(st.mark_delete, P(7, 3));
    CU_ASSERT_EQUAL(st.nranges, 0);
    CU_ASSERT_EQUAL(st.nbatches, 0);
    /* Backwards cumulative is ignored. */
    ml_ack_cumulative(&st, P(3, 0));
    POS_EQ(st.mark_delete, P(7, 3));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 5);
    ml_ack_reset(&st, P(3, 4));
    POS_EQ(st.mark_delete, P(3, 4));
    CU_ASSERT_EQUAL(ml_ack_backlog(&st, ml_list_last(&l)), 14);
    ml_ack_free(&st);
    ml_list_free(&l);
}

static void test_ack_batch_bitsets(void)
{
    ml_ledger_list_t l;
    make_list(&l);
    ml_ack_state_t st;
    ml_ack_init(&st, &l, P(3, -1));
    /* Batch of 70 messages at 3:1: two words, all set = nothing acked. */
    uint64_t a[2] = {~0ull, 0x3full};
    a[0] &= ~0x5ull; /* indexes 0 and 2 acked */
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 1), a, 2), 0);
    size_t words = 0;
    const uint64_t *bits = ml_ack_bitset(&st, P(3, 1), &words);
    TEST_REQUIRE(bits != NULL);
    CU_ASSERT_EQUAL(words, 2);
    CU_ASSERT_EQUAL(bits[0], ~0ull & ~0x5ull);
    CU_ASSERT_FALSE(ml_ack_is_acked(&st, P(3, 1)));
    /* A second ack ANDs: indexes 1 and 64 acked too. */
    uint64_t b[2] = {~0x2ull, ~0x1ull};
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 1), b, 2), 0);
    bits = ml_ack_bitset(&st, P(3, 1), &words);
    CU_ASSERT_EQUAL(bits[0], ~0x7ull);
    CU_ASSERT_EQUAL(bits[1], 0x3eull);
    /* Everything else acked: the entry completes and the bitset goes. */
    uint64_t z[2] = {0, 0};
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 1), z, 2), 0);
    CU_ASSERT_TRUE(ml_ack_is_acked(&st, P(3, 1)));
    CU_ASSERT_PTR_NULL(ml_ack_bitset(&st, P(3, 1), &words));
    CU_ASSERT_EQUAL(st.nbatches, 0);
    /* AND completing to zero through a shorter word list also completes. */
    uint64_t c = 0x10;
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 0), &c, 1), 0);
    uint64_t d = 0x01;
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 0), &d, 1), 0);
    CU_ASSERT_TRUE(ml_ack_is_acked(&st, P(3, 0)));
    POS_EQ(st.mark_delete, P(3, 1));
    /* A whole-entry ack drops a pending bitset. */
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 4), &c, 1), 0);
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(3, 4)), 0);
    CU_ASSERT_EQUAL(st.nbatches, 0);
    uint64_t big[ML_ACK_SET_WORDS_MAX + 1];
    memset(big, 0xff, sizeof big);
    CU_ASSERT_EQUAL(ml_ack_batch(&st, P(3, 6), big, ML_ACK_SET_WORDS_MAX + 1), QE_TOO_LARGE);
    ml_ack_free(&st);
    ml_list_free(&l);
}

static void test_ack_encode_round_trip(void)
{
    ml_ledger_list_t l;
    make_list(&l);
    ml_ack_state_t st, back;
    ml_ack_init(&st, &l, P(3, 1));
    ml_ack_one(&st, P(3, 3));
    ml_ack_one(&st, P(3, 4));
    ml_ack_one(&st, P(7, 2));
    uint64_t w[3] = {0xf0, 0, 0x1};
    ml_ack_batch(&st, P(3, 8), w, 3);
    uint8_t buf[1024];
    size_t n = ml_ack_encode(&st, buf, sizeof buf);
    TEST_REQUIRE(n > 0 && n <= sizeof buf);
    CU_ASSERT_EQUAL(memcmp(buf, "QCUR", 4), 0);
    ml_ack_init(&back, &l, ML_POS_EARLIEST);
    CU_ASSERT_EQUAL(ml_ack_decode(&back, buf, n), 0);
    POS_EQ(back.mark_delete, P(3, 1));
    CU_ASSERT_EQUAL(back.nranges, 2);
    POS_EQ(back.ranges[0].first, P(3, 3));
    POS_EQ(back.ranges[0].last, P(3, 4));
    POS_EQ(back.ranges[1].first, P(7, 2));
    size_t words;
    const uint64_t *bits = ml_ack_bitset(&back, P(3, 8), &words);
    TEST_REQUIRE(bits != NULL);
    CU_ASSERT_EQUAL(words, 3);
    CU_ASSERT_EQUAL(bits[0], 0xf0);
    CU_ASSERT_EQUAL(bits[2], 0x1);
    CU_ASSERT_EQUAL(ml_ack_backlog(&back, ml_list_last(&l)), ml_ack_backlog(&st, ml_list_last(&l)));
    /* Every flipped byte is detected; the state is left unchanged. */
    for (size_t i = 0; i < n; i++) {
        buf[i] ^= 0x40;
        CU_ASSERT_EQUAL(ml_ack_decode(&back, buf, n), QE_CORRUPT);
        buf[i] ^= 0x40;
    }
    CU_ASSERT_EQUAL(ml_ack_decode(&back, buf, n - 1), QE_CORRUPT);
    CU_ASSERT_EQUAL(back.nranges, 2);
    ml_ack_free(&back);
    ml_ack_free(&st);
    ml_list_free(&l);
}

static void test_ack_ranges_bounded(void)
{
    /* One ledger of 4*MAX entries, every second one acked: MAX*2 holes. */
    ml_ledger_list_t l = {.current_id = -1};
    TEST_REQUIRE(ml_list_append(&l, 1) == 0);
    l.v[0].entries = 4 * ML_CURSOR_RANGES_MAX;
    l.current_id = 1;
    ml_ack_state_t st, back;
    ml_ack_init(&st, &l, P(1, -1));
    st.ranges_max = 2 * ML_CURSOR_RANGES_MAX;
    for (int64_t e = 1; e < 4 * ML_CURSOR_RANGES_MAX; e += 2)
        TEST_REQUIRE(ml_ack_one(&st, P(1, e)) == 0);
    CU_ASSERT_EQUAL(st.nranges, 2 * ML_CURSOR_RANGES_MAX);
    /* The in-memory bound refuses one more isolated range... */
    l.v[0].entries += 2;
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(1, 4 * ML_CURSOR_RANGES_MAX + 1)), QE_BUSY);
    CU_ASSERT_FALSE(ml_ack_is_acked(&st, P(1, 4 * ML_CURSOR_RANGES_MAX + 1)));
    /* ... but merging into an existing range still works. */
    CU_ASSERT_EQUAL(ml_ack_one(&st, P(1, 4 * ML_CURSOR_RANGES_MAX)), 0);
    /* The encoding keeps only the oldest MAX ranges: later acks redeliver. */
    size_t need = ml_ack_encode(&st, NULL, 0);
    uint8_t *buf = malloc(need);
    TEST_REQUIRE(buf != NULL);
    CU_ASSERT_EQUAL(ml_ack_encode(&st, buf, need), need);
    ml_ack_init(&back, &l, ML_POS_EARLIEST);
    CU_ASSERT_EQUAL(ml_ack_decode(&back, buf, need), 0);
    CU_ASSERT_EQUAL(back.nranges, ML_CURSOR_RANGES_MAX);
    CU_ASSERT_TRUE(ml_ack_is_acked(&back, P(1, 2 * ML_CURSOR_RANGES_MAX - 1)));
    CU_ASSERT_FALSE(ml_ack_is_acked(&back, P(1, 2 * ML_CURSOR_RANGES_MAX + 1)));
    CU_ASSERT_FALSE(ml_ack_is_acked(&back, P(1, 0)));
    /* Filling the first hole advances M by exactly one range. */
    CU_ASSERT_EQUAL(ml_ack_one(&back, P(1, 0)), 0);
    POS_EQ(back.mark_delete, P(1, 1));
    free(buf);
    ml_ack_free(&back);
    ml_ack_free(&st);
    ml_list_free(&l);
}

static void test_entry_cache_bounded_fifo(void)
{
    int owner_a, owner_b;
    ml_cache_t *c = ml_cache_new(10 * (100 + 64));
    TEST_REQUIRE(c != NULL);
    char payload[100];
    for (int i = 0; i < 15; i++) {
        memset(payload, 'a' + i, sizeof payload);
        qbuf_t *b = qbuf_copy(payload, sizeof payload);
        ml_cache_put(c, &owner_a, P(1, i), b, 0.0);
        qbuf_unref(b);
    }
    ml_cache_stats_t s;
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 10);
    CU_ASSERT_EQUAL(s.evictions, 5);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_a, P(1, 4)));
    qbuf_t *hit = ml_cache_get(c, &owner_a, P(1, 5));
    TEST_REQUIRE(hit != NULL);
    CU_ASSERT_EQUAL(hit->data[0], 'a' + 5);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_b, P(1, 5)));
    ml_cache_drop(c, &owner_a, 1);
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 0);
    CU_ASSERT_EQUAL(s.bytes, 0);
    ml_cache_free(c);
}

/* Entries of several owners interleaved: a drop takes exactly the owner's
 * entries (of one ledger, or all), through its own list; eviction keeps the
 * owners' lists right (the survivors are still dropped by owner). */
static void test_entry_cache_drop_by_owner(void)
{
    int owner_a, owner_b, owner_c;
    ml_cache_t *c = ml_cache_new(12 * (100 + 64));
    TEST_REQUIRE(c != NULL);
    char payload[100];
    memset(payload, 'x', sizeof payload);
    qbuf_t *b = qbuf_copy(payload, sizeof payload);
    TEST_REQUIRE(b != NULL);
    for (int i = 0; i < 4; i++) { /* a: (1,i) (2,i); b: (1,i); c: (1,i), 16 puts */
        ml_cache_put(c, &owner_a, P(1, i), b, 0.0);
        ml_cache_put(c, &owner_b, P(1, i), b, 0.0);
        ml_cache_put(c, &owner_a, P(2, i), b, 0.0);
        ml_cache_put(c, &owner_c, P(1, i), b, 0.0);
    }
    ml_cache_stats_t s;
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 12); /* the 4 oldest evicted: a(1,0) b(1,0) a(2,0) c(1,0) */
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_a, P(1, 0)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_a, P(1, 1)));
    ml_cache_drop(c, &owner_a, 1); /* a's ledger 1: 3 entries */
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 9);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_a, P(1, 2)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_a, P(2, 2)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_b, P(1, 2)));
    ml_cache_drop(c, &owner_b, -1); /* all of b: 3 entries */
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 6);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_b, P(1, 3)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_c, P(1, 3)));
    ml_cache_drop(c, &owner_b, -1); /* nothing left of b: no-op */
    ml_cache_drop(c, &owner_a, -1);
    ml_cache_drop(c, &owner_c, -1);
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.entries, 0);
    CU_ASSERT_EQUAL(s.bytes, 0);
    qbuf_unref(b);
    ml_cache_free(c); /* asserts the owners map is empty */
}

/* For the keep test: owner a's entries at or after (1, expect_from) are still
 * to be read; nothing of any other owner is. */
static int keep_owner_a;
static int64_t keep_expect_from;
static int keep_calls;
static bool keep_expected(const void *owner, ml_pos_t pos, void *arg)
{
    (void)arg;
    keep_calls++;
    return owner == &keep_owner_a && pos.entry_id >= keep_expect_from;
}

/* Aged entries a reader is still expected to read get another period from the
 * pass's time, at most extensions_max times, and go behind newer entries in the
 * FIFO; the others go at once; without keep (or with extensions_max 0) age
 * evicts as before. */
static void test_entry_cache_age_keeps_expected(void)
{
    int owner_b;
    ml_cache_t *c = ml_cache_new(1u << 20);
    TEST_REQUIRE(c != NULL);
    qbuf_t *b = qbuf_copy("payload", 7);
    TEST_REQUIRE(b != NULL);
    for (int i = 0; i < 4; i++) { /* a: (1,0..3) at t=i; b: (1,i) at t=i+0.5 */
        ml_cache_put(c, &keep_owner_a, P(1, i), b, (double)i);
        ml_cache_put(c, &owner_b, P(1, i), b, i + 0.5);
    }
    keep_expect_from = 2; /* a's reader has read (1,0) and (1,1) */
    ml_cache_keep_t keep = {.expected = keep_expected, .extensions_max = 2};
    /* Pass at t=10, everything aged: a's (1,2) and (1,3) kept, 6 evicted. */
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 9.0, 10.0, &keep), 6);
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &keep_owner_a, P(1, 2)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &keep_owner_a, P(1, 3)));
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &keep_owner_a, P(1, 1)));
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_b, P(1, 3)));
    ml_pos_t oldest;
    CU_ASSERT_TRUE(ml_cache_oldest(c, &keep_owner_a, &oldest));
    CU_ASSERT_EQUAL(ml_pos_cmp(oldest, P(1, 2)), 0);
    /* Kept from t=10: a pass for what is older than 10 leaves them. */
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 10.0, 11.0, &keep), 0);
    /* An entry put after the extension (t=10.5) is older in the FIFO than the
     * kept ones' second extension: the size bound and age take it in turn. */
    ml_cache_put(c, &owner_b, P(2, 0), b, 10.5);
    /* Second and last extension at t=12 (b's new entry goes: not expected). */
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 11.0, 12.0, &keep), 1);
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &keep_owner_a, P(1, 2)));
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_b, P(2, 0)));
    /* Extended twice: the next pass evicts them though still expected. */
    keep_calls = 0;
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 13.0, 14.0, &keep), 2);
    CU_ASSERT_EQUAL(keep_calls, 0); /* not even asked */
    CU_ASSERT_TRUE(ml_cache_empty(c));
    ml_cache_stats_t s;
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.extensions, 4);
    CU_ASSERT_EQUAL(s.evictions_age, 9);
    /* extensions_max 0 keeps nothing; no keep keeps nothing. */
    ml_cache_put(c, &keep_owner_a, P(3, 5), b, 20.0);
    keep.extensions_max = 0;
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 21.0, 22.0, &keep), 1);
    ml_cache_put(c, &keep_owner_a, P(3, 6), b, 30.0);
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 31.0, 32.0, NULL), 1);
    CU_ASSERT_TRUE(ml_cache_empty(c));
    qbuf_unref(b);
    ml_cache_free(c);
}

/* Readers' progress evicts one owner's entries below a position, oldest first,
 * and nothing of another owner; age evicts across owners by put time, and a
 * clock that steps back does not reorder the FIFO. */
static void test_entry_cache_evict_read_and_age(void)
{
    int owner_a, owner_b;
    ml_cache_t *c = ml_cache_new(1u << 20);
    TEST_REQUIRE(c != NULL);
    qbuf_t *b = qbuf_copy("payload", 7);
    TEST_REQUIRE(b != NULL);
    for (int i = 0; i < 5; i++) { /* a: (1,0..4) at t=i; b: (1,0..4) at t=i+0.5 */
        ml_cache_put(c, &owner_a, P(1, i), b, (double)i);
        ml_cache_put(c, &owner_b, P(1, i), b, i + 0.5);
    }
    ml_cache_put(c, &owner_a, P(2, 0), b, 5.0);
    ml_pos_t oldest;
    CU_ASSERT_TRUE(ml_cache_oldest(c, &owner_a, &oldest));
    CU_ASSERT_EQUAL(ml_pos_cmp(oldest, P(1, 0)), 0);
    CU_ASSERT_EQUAL(ml_cache_evict_before(c, &owner_a, P(1, 3)), 3);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_a, P(1, 2)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_a, P(1, 3)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_b, P(1, 0)));
    CU_ASSERT_EQUAL(ml_cache_evict_before(c, &owner_a, P(1, 3)), 0);
    CU_ASSERT_EQUAL(ml_cache_evict_before(c, &owner_a, P(1, 2)), 0);
    /* Across ledgers: (1,3) (1,4) before (2,0), which stays. */
    CU_ASSERT_EQUAL(ml_cache_evict_before(c, &owner_a, P(2, 0)), 2);
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_a, P(2, 0)));
    /* A step back in time is taken as the newest entry's time. */
    ml_cache_put(c, &owner_b, P(1, 5), b, 1.0);
    /* Age: b's entries put at 0.5, 1.5, 2.5 go; 3.5, 4.5, (1,5) at 5.0 stay. */
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 3.0, 4.0, NULL), 3);
    CU_ASSERT_PTR_NULL(ml_cache_get(c, &owner_b, P(1, 2)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_b, P(1, 3)));
    CU_ASSERT_TRUE(ml_cache_oldest(c, &owner_b, &oldest));
    CU_ASSERT_EQUAL(ml_pos_cmp(oldest, P(1, 3)), 0);
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 5.0, 6.0, NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_a, P(2, 0)));
    CU_ASSERT_PTR_NOT_NULL(ml_cache_get(c, &owner_b, P(1, 5)));
    CU_ASSERT_EQUAL(ml_cache_evict_older(c, 5.5, 6.5, NULL), 2);
    CU_ASSERT_TRUE(ml_cache_empty(c));
    CU_ASSERT_FALSE(ml_cache_oldest(c, &owner_a, &oldest));
    ml_cache_stats_t s;
    ml_cache_get_stats(c, &s);
    CU_ASSERT_EQUAL(s.evictions_read, 5);
    CU_ASSERT_EQUAL(s.evictions_age, 7);
    CU_ASSERT_EQUAL(s.evictions, 0);
    CU_ASSERT_EQUAL(s.bytes, 0);
    qbuf_unref(b);
    ml_cache_free(c);
}

static void test_escape_name(void)
{
    char *e = ml_escape_name("public/default/persistent/t%1");
    TEST_REQUIRE(e != NULL);
    CU_ASSERT_STRING_EQUAL(e, "public%2Fdefault%2Fpersistent%2Ft%251");
    free(e);
}

void register_ack_state_suite(void)
{
    CU_pSuite s = CU_add_suite("ack_state", NULL, NULL);
    CU_add_test(s, "ledger list next/count/seek", test_list_next_and_count);
    CU_add_test(s, "holes fill, mark-delete advances", test_ack_holes_fill_and_advance);
    CU_add_test(s, "cumulative ack", test_ack_cumulative);
    CU_add_test(s, "batch index bitsets", test_ack_batch_bitsets);
    CU_add_test(s, "encode round trip and corruption", test_ack_encode_round_trip);
    CU_add_test(s, "ranges bounded", test_ack_ranges_bounded);
    CU_add_test(s, "entry cache bounded, oldest evicted", test_entry_cache_bounded_fifo);
    CU_add_test(s, "entry cache drops by owner", test_entry_cache_drop_by_owner);
    CU_add_test(s, "entry cache keeps aged entries a reader still expects, a few periods",
                test_entry_cache_age_keeps_expected);
    CU_add_test(s, "entry cache evicts read-past and aged entries",
                test_entry_cache_evict_read_and_age);
    CU_add_test(s, "name escaping", test_escape_name);
}
