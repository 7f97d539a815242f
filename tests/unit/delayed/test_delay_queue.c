/*
 * test_delay_queue.c — the time-ordered index under delayed delivery
 * (server/delay_queue.c): release by deliver time and never before it,
 * the max per take, the rebuild after a restart (delayed.c persists nothing:
 * the cursor re-reads the unacknowledged entries and they are indexed again
 * with the same absolute times), removal of acknowledged entries, the memory
 * accounting, and a million held entries against the bytes per entry that
 * docs/broker.md states.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/delay_queue.h"
#include "tests/unit/support/test_support.h"

#define W 1000 /* bucket width, ms: delayedDeliveryTickTimeMillis's default */
#define T0 1700000000000LL

/* ------------------------------------------------------------- helpers -- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) /* xorshift64*: reproducible */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* What the arrays hold, recomputed from the structure (delay_queue.h: 4). */
static size_t bytes_walked(const delay_queue_t *q)
{
    size_t b = q->bucket_cap * sizeof(delay_bucket_t);
    for (size_t i = 0; i < q->nbuckets; i++)
        b += (size_t)q->buckets[i].cap * sizeof(delay_item_t);
    return b;
}

/* The structure's invariants (delay_queue.h 1-4). */
static void check_invariants(const delay_queue_t *q)
{
    uint64_t count = 0;
    for (size_t i = 0; i < q->nbuckets; i++) {
        const delay_bucket_t *b = &q->buckets[i];
        CU_ASSERT(b->n > 0);
        CU_ASSERT(b->start_ms % q->bucket_ms == 0);
        if (i + 1 < q->nbuckets)
            CU_ASSERT(b->start_ms < q->buckets[i + 1].start_ms);
        int64_t min_at = INT64_MAX;
        for (uint32_t k = 0; k < b->n; k++) {
            CU_ASSERT(b->items[k].offset_ms < q->bucket_ms);
            if (b->start_ms + b->items[k].offset_ms < min_at)
                min_at = b->start_ms + b->items[k].offset_ms;
        }
        CU_ASSERT_EQUAL(b->min_at_ms, min_at);
        count += b->n;
    }
    CU_ASSERT_EQUAL(count, q->count);
    CU_ASSERT_EQUAL(bytes_walked(q), delay_queue_memory_bytes(q));
}

/* Takes what is due at now; checks every entry is due, sorted by position. */
static size_t take(delay_queue_t *q, int64_t now, size_t max, delay_entry_t **out)
{
    size_t n = 99;
    TEST_REQUIRE(delay_queue_take_due(q, now, max, out, &n) == 0);
    CU_ASSERT(n <= max);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT((*out)[i].deliver_at_ms <= now);
        if (i > 0)
            CU_ASSERT((*out)[i - 1].pos < (*out)[i].pos);
    }
    return n;
}

/* ---------------------------------------------------------------- tests -- */

/* Entries come out when their time has come, never before, each once. */
static void test_release_by_time(void)
{
    delay_queue_t q;
    delay_queue_init(&q, W);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), INT64_MAX);
    enum { N = 5000 };
    static int64_t at[N];
    static bool taken[N];
    int64_t earliest = INT64_MAX;
    for (int i = 0; i < N; i++) { /* out of order, 0..60 s ahead, many per bucket */
        at[i] = T0 + (int64_t)(rng() % 60000);
        taken[i] = false;
        if (at[i] < earliest)
            earliest = at[i];
        TEST_REQUIRE(delay_queue_add(&q, (uint64_t)i, at[i], (uint16_t)(i % 65536)) == 0);
    }
    CU_ASSERT_EQUAL(delay_queue_count(&q), N);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), earliest);
    check_invariants(&q);
    delay_entry_t *out;
    CU_ASSERT_EQUAL(take(&q, earliest - 1, N, &out), 0); /* one ms early: nothing */
    CU_ASSERT_PTR_NULL(out);
    int64_t prev = earliest - 1;
    size_t total = 0;
    for (int64_t now = earliest; total < N; now += 1 + (int64_t)(rng() % 700)) {
        size_t n = take(&q, now, N, &out);
        for (size_t k = 0; k < n; k++) {
            uint64_t i = out[k].pos;
            TEST_REQUIRE(i < N);
            CU_ASSERT(!taken[i]);
            taken[i] = true;
            CU_ASSERT_EQUAL(out[k].deliver_at_ms, at[i]);
            CU_ASSERT(at[i] > prev && at[i] <= now); /* due since the last take, not before */
            CU_ASSERT_EQUAL(out[k].key_hash, i % 65536);
        }
        free(out);
        total += n;
        /* What is left is all later than now, and next_ms is the earliest of it. */
        int64_t next = INT64_MAX;
        for (int i = 0; i < N; i++)
            if (!taken[i] && at[i] < next)
                next = at[i];
        CU_ASSERT(next > now);
        CU_ASSERT_EQUAL(delay_queue_next_ms(&q), next);
        CU_ASSERT_EQUAL(delay_queue_count(&q), N - total);
        prev = now;
    }
    check_invariants(&q);
    CU_ASSERT_EQUAL(delay_queue_count(&q), 0);
    CU_ASSERT_EQUAL(q.nbuckets, 0);
    delay_queue_clear(&q);
    CU_ASSERT_EQUAL(delay_queue_memory_bytes(&q), 0);
}

/* Bucket edges: the last ms of a bucket and the first of the next. */
static void test_bucket_edges(void)
{
    delay_queue_t q;
    delay_queue_init(&q, W);
    int64_t b = T0 - T0 % W;
    TEST_REQUIRE(delay_queue_add(&q, 3, b + W, 0) == 0);
    TEST_REQUIRE(delay_queue_add(&q, 2, b + W - 1, 0) == 0);
    TEST_REQUIRE(delay_queue_add(&q, 1, b, 0) == 0);
    TEST_REQUIRE(delay_queue_add(&q, 4, b + 5 * W + 17, 0) == 0);
    CU_ASSERT_EQUAL(q.nbuckets, 3);
    check_invariants(&q);
    delay_entry_t *out;
    CU_ASSERT_EQUAL(take(&q, b - 1, 10, &out), 0);
    CU_ASSERT_EQUAL(take(&q, b, 10, &out), 1);
    CU_ASSERT_EQUAL(out[0].pos, 1);
    free(out);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), b + W - 1);
    CU_ASSERT_EQUAL(take(&q, b + W - 2, 10, &out), 0);
    CU_ASSERT_EQUAL(take(&q, b + W - 1, 10, &out), 1);
    CU_ASSERT_EQUAL(out[0].pos, 2);
    free(out);
    CU_ASSERT_EQUAL(take(&q, b + W, 10, &out), 1);
    CU_ASSERT_EQUAL(out[0].pos, 3);
    free(out);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), b + 5 * W + 17);
    CU_ASSERT_EQUAL(take(&q, b + 5 * W + 16, 10, &out), 0);
    CU_ASSERT_EQUAL(take(&q, INT64_MAX, 10, &out), 1);
    CU_ASSERT_EQUAL(out[0].pos, 4);
    free(out);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), INT64_MAX);
    check_invariants(&q);
    delay_queue_clear(&q);
}

/* max bounds a take; earlier buckets go first; the rest waits for the next. */
static void test_take_max(void)
{
    delay_queue_t q;
    delay_queue_init(&q, W);
    for (uint64_t i = 0; i < 30; i++) /* 10 per bucket, three buckets */
        TEST_REQUIRE(delay_queue_add(&q, 100 - i, T0 + (int64_t)(i / 10) * W + (int64_t)i, 0) == 0);
    int64_t now = T0 + 3 * W; /* everything is due */
    delay_entry_t *out;
    size_t got = 0;
    for (int round = 0; got < 30; round++) {
        TEST_REQUIRE(round < 20);
        size_t n = take(&q, now, 7, &out);
        CU_ASSERT(n == 7 || got + n == 30);
        /* nothing left behind is from an earlier bucket than what was taken */
        for (size_t k = 0; k < n && q.nbuckets > 0; k++)
            CU_ASSERT(out[k].deliver_at_ms - out[k].deliver_at_ms % W <= q.buckets[0].start_ms);
        free(out);
        got += n;
        check_invariants(&q);
    }
    CU_ASSERT_EQUAL(delay_queue_count(&q), 0);
    delay_queue_clear(&q);
}

/* Removal on acknowledgement (delayed_trim: expiry, backlog eviction). */
static bool acked_odd(uint64_t pos, void *arg)
{
    (*(int *)arg)++;
    return pos % 2 == 1;
}

static bool acked_all(uint64_t pos, void *arg)
{
    (void)pos;
    (void)arg;
    return true;
}

static void test_remove_acked(void)
{
    delay_queue_t q;
    delay_queue_init(&q, W);
    for (uint64_t i = 0; i < 1000; i++)
        TEST_REQUIRE(delay_queue_add(&q, i, T0 + (int64_t)i * 37, 0) == 0);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), T0);
    int calls = 0;
    /* the earliest (pos 0) stays; pos 1 goes */
    CU_ASSERT_EQUAL(delay_queue_remove_if(&q, acked_odd, &calls), 500);
    CU_ASSERT_EQUAL(calls, 1000);
    CU_ASSERT_EQUAL(delay_queue_count(&q), 500);
    check_invariants(&q);
    delay_entry_t *out;
    size_t n = take(&q, INT64_MAX, 2000, &out);
    CU_ASSERT_EQUAL(n, 500);
    for (size_t k = 0; k < n; k++) /* an acknowledged entry is never released */
        CU_ASSERT_EQUAL(out[k].pos % 2, 0);
    free(out);
    /* removing the earliest moves next_ms; removing all empties every bucket */
    TEST_REQUIRE(delay_queue_add(&q, 1, T0 + 10, 0) == 0);
    TEST_REQUIRE(delay_queue_add(&q, 2, T0 + 5000, 0) == 0);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), T0 + 10);
    calls = 0;
    CU_ASSERT_EQUAL(delay_queue_remove_if(&q, acked_odd, &calls), 1);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), T0 + 5000);
    CU_ASSERT_EQUAL(delay_queue_remove_if(&q, acked_all, NULL), 1);
    CU_ASSERT_EQUAL(q.nbuckets, 0);
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), INT64_MAX);
    check_invariants(&q);
    delay_queue_clear(&q);
}

/* delayed.c persists nothing: after a restart the cursor re-reads the entries
 * after its mark-delete position that are not acknowledged, and the dispatcher
 * indexes them again with the absolute deliver_at_time of their metadata. The
 * rebuilt index releases the same entries at the same times, and those whose
 * time passed during the outage at once. */
static void test_rebuild_after_restart(void)
{
    enum { N = 2000 };
    static int64_t at[N];
    static bool acked[N];
    delay_queue_t q;
    delay_queue_init(&q, W);
    for (int i = 0; i < N; i++) {
        at[i] = T0 + 1000 + (int64_t)(rng() % 120000);
        acked[i] = false;
        TEST_REQUIRE(delay_queue_add(&q, (uint64_t)i, at[i], (uint16_t)i) == 0);
    }
    /* 30 s pass: what is due is delivered; the consumer acknowledges half of it */
    int64_t now = T0 + 30000;
    delay_entry_t *out;
    size_t n = take(&q, now, N, &out);
    for (size_t k = 0; k < n; k++)
        acked[out[k].pos] = out[k].pos % 2 == 0;
    free(out);
    /* kill -9: the index is gone */
    delay_queue_clear(&q);
    CU_ASSERT_EQUAL(delay_queue_count(&q), 0);
    CU_ASSERT_EQUAL(delay_queue_memory_bytes(&q), 0);
    /* restart 10 s later: the cursor re-reads every unacknowledged entry */
    now += 10000;
    uint64_t unacked = 0;
    for (int i = 0; i < N; i++) {
        if (acked[i])
            continue;
        unacked++;
        TEST_REQUIRE(delay_queue_add(&q, (uint64_t)i, at[i], (uint16_t)i) == 0);
    }
    CU_ASSERT_EQUAL(delay_queue_count(&q), unacked);
    check_invariants(&q);
    /* the delivered-but-unacknowledged ones and those due during the outage go
     * at once (the dispatcher's replay set would take them); the rest at their
     * time, never before */
    n = take(&q, now, N, &out);
    for (size_t k = 0; k < n; k++) {
        CU_ASSERT(!acked[out[k].pos]);
        CU_ASSERT(at[out[k].pos] <= now);
        CU_ASSERT_EQUAL(out[k].key_hash, (uint16_t)out[k].pos);
    }
    free(out);
    uint64_t due = 0;
    for (int i = 0; i < N; i++)
        due += !acked[i] && at[i] <= now;
    CU_ASSERT_EQUAL(n, due);
    int64_t later = INT64_MAX;
    for (int i = 0; i < N; i++)
        if (at[i] > now && at[i] < later)
            later = at[i];
    CU_ASSERT_EQUAL(delay_queue_next_ms(&q), later);
    CU_ASSERT_EQUAL(delay_queue_count(&q), unacked - due);
    n = take(&q, later - 1, N, &out);
    CU_ASSERT_EQUAL(n, 0);
    delay_queue_clear(&q);
}

/* memory_bytes follows every allocation; clear returns it all. */
static void test_memory_accounting(void)
{
    delay_queue_t q;
    delay_queue_init(&q, W);
    CU_ASSERT_EQUAL(delay_queue_memory_bytes(&q), 0);
    TEST_REQUIRE(delay_queue_add(&q, 1, T0, 0) == 0);
    /* one bucket array of 16 slots, one item array of 4 */
    CU_ASSERT_EQUAL(delay_queue_memory_bytes(&q), 16 * 32 + 4 * 16);
    for (uint64_t i = 0; i < 10000; i++) {
        TEST_REQUIRE(delay_queue_add(&q, i, T0 + (int64_t)(rng() % 50000), 0) == 0);
        if (i % 997 == 0)
            check_invariants(&q);
    }
    check_invariants(&q);
    delay_entry_t *out;
    size_t n = take(&q, T0 + 25000, 100000, &out);
    free(out);
    CU_ASSERT(n > 0);
    check_invariants(&q); /* emptied buckets gave their items back */
    int dummy = 0;
    delay_queue_remove_if(&q, acked_odd, &dummy);
    check_invariants(&q);
    delay_queue_clear(&q);
    CU_ASSERT_EQUAL(delay_queue_memory_bytes(&q), 0);
    CU_ASSERT_EQUAL(delay_queue_count(&q), 0);
    CU_ASSERT_PTR_NULL(q.buckets);
}

/* A million held entries over an hour of deliver times (docs/broker.md: 16
 * bytes each plus at most 25% slack and 32 bytes per bucket, "ten million
 * take about 200 MB"), then released in order in bounded takes. */
static void test_million_entries(void)
{
    enum { N = 1000000 };
    delay_queue_t q;
    delay_queue_init(&q, W);
    for (uint64_t i = 0; i < N; i++)
        TEST_REQUIRE(delay_queue_add(&q, i, T0 + (int64_t)(rng() % 3600000), (uint16_t)i) == 0);
    CU_ASSERT_EQUAL(delay_queue_count(&q), N);
    check_invariants(&q);
    size_t bytes = delay_queue_memory_bytes(&q);
    double per = (double)bytes / N;
    printf("\n    %d entries in %zu buckets: %zu bytes, %.2f bytes per entry ", N, q.nbuckets,
           bytes, per);
    CU_ASSERT(per >= 16.0);
    CU_ASSERT(per <= 16.0 * 1.25 + 1.0); /* 20 + the buckets' share (~0.1) */
    /* released in takes of at most 10,000 (delayed.c's RELEASE_MAX) */
    delay_entry_t *out;
    size_t total = 0;
    int64_t last_now = T0 - 1;
    for (int64_t now = T0; total < N; now += 15000) {
        size_t n;
        do {
            n = take(&q, now, 10000, &out);
            for (size_t k = 0; k < n; k++)
                CU_ASSERT_FATAL(out[k].deliver_at_ms > last_now && out[k].deliver_at_ms <= now);
            free(out);
            total += n;
        } while (n == 10000);
        CU_ASSERT(delay_queue_next_ms(&q) > now);
        last_now = now;
    }
    CU_ASSERT_EQUAL(total, N);
    CU_ASSERT_EQUAL(delay_queue_count(&q), 0);
    check_invariants(&q);
    delay_queue_clear(&q);

    /* The sparse worst case: every entry alone in its bucket. */
    delay_queue_init(&q, W);
    for (uint64_t i = 0; i < 100000; i++)
        TEST_REQUIRE(delay_queue_add(&q, i, T0 + (int64_t)i * W, 0) == 0);
    per = (double)delay_queue_memory_bytes(&q) / 100000;
    printf("\n    one entry per bucket: %.2f bytes per entry ", per);
    CU_ASSERT(per <= 4 * 16 + 32 * 1.25 + 1.0); /* a 4-slot item array, a bucket + slack */
    delay_queue_clear(&q);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("delay_queue", NULL, NULL);
    CU_add_test(s, "release by deliver time, never before", test_release_by_time);
    CU_add_test(s, "bucket edges", test_bucket_edges);
    CU_add_test(s, "bounded takes, earliest buckets first", test_take_max);
    CU_add_test(s, "removal of acknowledged entries", test_remove_acked);
    CU_add_test(s, "rebuild after a restart", test_rebuild_after_restart);
    CU_add_test(s, "memory accounting", test_memory_accounting);
    CU_add_test(s, "a million held entries", test_million_entries);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
