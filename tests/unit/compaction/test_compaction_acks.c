/*
 * test_compaction_acks.c — the acknowledgements of compacted-view entries a
 * cursor cannot hold (server/compaction_acks.c): whole and batch-index
 * acknowledgements, compacted-out messages recorded in advance, cumulative
 * bounds, the size bound. Registered by test_batch_codec.c's main.
 */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "server/compaction_acks.h"
#include "tests/unit/support/test_support.h"

void compaction_acks_register(void);

#define POS(l, e) ((ml_pos_t){(l), (e)})

static void test_whole_entries(void)
{
    cacks_t *a = cacks_new();
    TEST_REQUIRE(a != NULL);
    CU_ASSERT(!cacks_is_acked(a, POS(3, 4)));
    CU_ASSERT_EQUAL(cacks_ack(a, POS(3, 4), NULL, 0), 1);
    CU_ASSERT(cacks_is_acked(a, POS(3, 4)));
    CU_ASSERT(!cacks_is_acked(a, POS(3, 5)));
    CU_ASSERT(!cacks_is_acked(a, POS(2, 4)));
    /* all-zero words acknowledge the whole entry, as in Pulsar */
    uint64_t zero[2] = {0, 0};
    CU_ASSERT_EQUAL(cacks_ack(a, POS(3, 5), zero, 2), 1);
    CU_ASSERT(cacks_is_acked(a, POS(3, 5)));
    /* again: still acknowledged */
    CU_ASSERT_EQUAL(cacks_ack(a, POS(3, 4), NULL, 0), 1);
    CU_ASSERT_EQUAL(cacks_size(a), 2);
    cacks_clear(a);
    CU_ASSERT(!cacks_is_acked(a, POS(3, 4)));
    CU_ASSERT_EQUAL(cacks_size(a), 0);
    cacks_free(a);
    cacks_free(NULL);
}

/* A compacted batch of 130 messages of which 3 survive (0, 64, 129): the
 * client acknowledges only those three, one at a time, each ack_set naming
 * every other index as still unacknowledged. */
static void test_prerecorded_batch(void)
{
    cacks_t *a = cacks_new();
    TEST_REQUIRE(a != NULL);
    uint64_t retained[3] = {1ull, 1ull, 1ull << 1};
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(7, 0), retained, 3), 0);
    size_t w;
    const uint64_t *bits = cacks_bits(a, POS(7, 0), &w);
    TEST_REQUIRE(bits != NULL);
    CU_ASSERT_EQUAL(w, 3);
    CU_ASSERT_EQUAL(memcmp(bits, retained, sizeof retained), 0);
    static const int delivered[3] = {64, 0, 129};
    for (int k = 0; k < 3; k++) {
        uint64_t ack_set[3] = {~0ull, ~0ull, (1ull << 2) - 1}; /* 130 bits set */
        ack_set[delivered[k] / 64] &= ~(1ull << (delivered[k] % 64));
        int rc = cacks_ack(a, POS(7, 0), ack_set, 3);
        CU_ASSERT_EQUAL(rc, k == 2 ? 1 : 0);
        CU_ASSERT_EQUAL(cacks_is_acked(a, POS(7, 0)), k == 2);
    }
    CU_ASSERT_PTR_NULL(cacks_bits(a, POS(7, 0), &w));
    CU_ASSERT_EQUAL(w, 0);
    /* a second prerecord of an acknowledged entry changes nothing */
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(7, 0), retained, 3), 0);
    CU_ASSERT(cacks_is_acked(a, POS(7, 0)));

    /* without the prerecord, the compacted-out bits the client never clears
     * keep the entry unacknowledged: what the prerecord is for */
    uint64_t ack_set[3] = {~0ull & ~1ull, ~0ull, 3};
    CU_ASSERT_EQUAL(cacks_ack(a, POS(7, 1), ack_set, 3), 0);
    CU_ASSERT(!cacks_is_acked(a, POS(7, 1)));
    /* a shorter ack_set: the words past it count as acknowledged */
    uint64_t short_set[1] = {0};
    CU_ASSERT_EQUAL(cacks_ack(a, POS(7, 1), short_set, 1), 1);
    CU_ASSERT(cacks_is_acked(a, POS(7, 1)));
    /* a prerecord with nothing retained acknowledges the entry */
    uint64_t none[2] = {0, 0};
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(7, 2), none, 2), 0);
    CU_ASSERT(cacks_is_acked(a, POS(7, 2)));
    cacks_free(a);
}

static void test_cumulative(void)
{
    cacks_t *a = cacks_new();
    TEST_REQUIRE(a != NULL);
    uint64_t retained[1] = {5};
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(4, 9), retained, 1), 0);
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(5, 2), retained, 1), 0);
    cacks_ack_cumulative(a, POS(5, 0));
    CU_ASSERT(cacks_is_acked(a, POS(1, 0)));
    CU_ASSERT(cacks_is_acked(a, POS(4, 9)));
    CU_ASSERT(cacks_is_acked(a, POS(5, 0)));
    CU_ASSERT(!cacks_is_acked(a, POS(5, 1)));
    CU_ASSERT(!cacks_is_acked(a, POS(5, 2)));
    CU_ASSERT_EQUAL(cacks_size(a), 1); /* (4, 9)'s bits are gone */
    /* a lower bound later moves nothing back */
    cacks_ack_cumulative(a, POS(2, 0));
    CU_ASSERT(cacks_is_acked(a, POS(4, 9)));
    cacks_ack_cumulative(a, POS(5, 2));
    CU_ASSERT(cacks_is_acked(a, POS(5, 2)));
    CU_ASSERT_EQUAL(cacks_size(a), 0);
    cacks_clear(a);
    CU_ASSERT(!cacks_is_acked(a, POS(1, 0)));
    cacks_free(a);
}

static void test_bound(void)
{
    cacks_t *a = cacks_new();
    TEST_REQUIRE(a != NULL);
    int rc = 0;
    uint32_t i;
    for (i = 0; i < CACKS_ENTRIES_MAX && rc == 0; i++)
        rc = cacks_ack(a, POS(1 + i / 1000, i % 1000), NULL, 0) == 1 ? 0 : -1;
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(cacks_size(a), CACKS_ENTRIES_MAX);
    CU_ASSERT_EQUAL(cacks_ack(a, POS(99999, 0), NULL, 0), QE_BUSY);
    CU_ASSERT(!cacks_is_acked(a, POS(99999, 0)));
    uint64_t w[1] = {1};
    CU_ASSERT_EQUAL(cacks_prerecord(a, POS(99999, 1), w, 1), QE_BUSY);
    /* a known position still changes */
    CU_ASSERT_EQUAL(cacks_ack(a, POS(1, 0), NULL, 0), 1);
    cacks_free(a);
}

void compaction_acks_register(void)
{
    CU_pSuite s = CU_add_suite("compaction_acks", NULL, NULL);
    CU_add_test(s, "whole entries", test_whole_entries);
    CU_add_test(s, "compacted-out messages recorded in advance", test_prerecorded_batch);
    CU_add_test(s, "cumulative acknowledgements", test_cumulative);
    CU_add_test(s, "size bound", test_bound);
}
