/*
 * The io gate (storage/bookie/io_gate.h): large reads yield to the journal's
 * group writes. Blocking is checked by a thread that must not get through
 * while the gate holds it (generous bounds: the wait limit is far above the
 * test's pause) and must get through once it is released; every join is
 * bounded.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/io_gate.h"
#include "tests/unit/bookie/bookie_test.h"

typedef struct reader {
    io_gate_t *g;
    atomic_bool through;
    pthread_t t;
} reader_t;

static void *reader_main(void *p)
{
    reader_t *r = p;
    io_gate_read_begin(r->g);
    atomic_store(&r->through, true);
    return NULL;
}

static void reader_start(reader_t *r, io_gate_t *g)
{
    r->g = g;
    atomic_init(&r->through, false);
    TEST_REQUIRE(pthread_create(&r->t, NULL, reader_main, r) == 0);
}

/* Joins r within 10 s; false if it did not end. */
static bool reader_join(reader_t *r)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    return pthread_timedjoin_np(r->t, NULL, &dl) == 0;
}

static void test_gate_off(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 0) == 0);
    TEST_REQUIRE(io_gate_write_begin(&g, 64u << 10));
    for (int i = 0; i < 3; i++)
        io_gate_read_begin(&g); /* never waits */
    CU_ASSERT_EQUAL(atomic_load(&g.reads), 3);
    uint64_t waits, us;
    io_gate_stats(&g, &waits, &us);
    CU_ASSERT_EQUAL(waits, 0);
    CU_ASSERT_FALSE(io_gate_writes_recent(&g, 60u * 1000 * 1000)); /* reads never kept small */
    for (int i = 0; i < 3; i++)
        io_gate_read_end(&g);
    io_gate_write_end(&g);
    io_gate_destroy(&g);
}

static void test_gate_no_write(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 30u * 1000 * 1000) == 0);
    for (int i = 0; i < 4; i++) /* no group write in flight: every read starts */
        io_gate_read_begin(&g);
    CU_ASSERT_EQUAL(atomic_load(&g.reads), 4);
    uint64_t waits, us;
    io_gate_stats(&g, &waits, &us);
    CU_ASSERT_EQUAL(waits, 0);
    for (int i = 0; i < 4; i++)
        io_gate_read_end(&g);
    CU_ASSERT_EQUAL(atomic_load(&g.reads), 0);
    io_gate_destroy(&g);
}

/* During a write, one read starts; the next waits for the write's end. */
static void test_gate_waits_for_write(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 30u * 1000 * 1000) == 0);
    TEST_REQUIRE(io_gate_write_begin(&g, 64u << 10));
    for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_begin(&g); /* these start */
    reader_t r;
    reader_start(&r, &g);
    usleep(50 * 1000);
    CU_ASSERT_FALSE(atomic_load(&r.through));
    io_gate_write_end(&g);
    TEST_REQUIRE(reader_join(&r));
    CU_ASSERT_TRUE(atomic_load(&r.through));
    CU_ASSERT_EQUAL(atomic_load(&g.reads), IO_GATE_READS_DURING_WRITE + 1);
    uint64_t waits, us;
    io_gate_stats(&g, &waits, &us);
    CU_ASSERT_EQUAL(waits, 1);
    for (int i = 0; i <= IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_end(&g);
    io_gate_destroy(&g);
}

/* During a write, a waiting read starts when a read in flight ends. */
static void test_gate_waits_for_read(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 30u * 1000 * 1000) == 0);
    TEST_REQUIRE(io_gate_write_begin(&g, 64u << 10));
    for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_begin(&g);
    reader_t r;
    reader_start(&r, &g);
    usleep(50 * 1000);
    CU_ASSERT_FALSE(atomic_load(&r.through));
    io_gate_read_end(&g);
    TEST_REQUIRE(reader_join(&r));
    CU_ASSERT_TRUE(atomic_load(&r.through));
    CU_ASSERT_EQUAL(atomic_load(&g.reads), IO_GATE_READS_DURING_WRITE);
    CU_ASSERT_EQUAL(atomic_load(&g.writes), 1);
    for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_end(&g);
    io_gate_write_end(&g);
    io_gate_destroy(&g);
}

/* A write that lasts: the waiting read starts after wait_us_max anyway. */
static void test_gate_bounded(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 20 * 1000) == 0);
    TEST_REQUIRE(io_gate_write_begin(&g, 64u << 10));
    for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_begin(&g);
    uint64_t t0 = clock_mono_us();
    io_gate_read_begin(&g);
    CU_ASSERT_TRUE(clock_mono_us() - t0 >= 20 * 1000);
    CU_ASSERT_EQUAL(atomic_load(&g.reads), IO_GATE_READS_DURING_WRITE + 1);
    uint64_t waits, us;
    io_gate_stats(&g, &waits, &us);
    CU_ASSERT_EQUAL(waits, 1);
    CU_ASSERT_TRUE(us >= 20 * 1000);
    for (int i = 0; i <= IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_end(&g);
    io_gate_write_end(&g);
    io_gate_destroy(&g);
}

/* Through a bookie: the journal marks its small groups and not a large one;
 * a reader of a large record waits while a group is marked and the reads
 * allowed during it are taken (both held here by the test), and not after. */
static void test_gate_bookie(void)
{
    char *dir = bt_dir("gate");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_large_entry_bytes = 16u << 10;
    cfg.read_yield_us = 200u * 1000;
    bookie_t *bk = bt_open(&cfg);
    size_t small = 40u << 10, big = (size_t)IO_GATE_GROUP_BYTES_MAX * 2;
    uint64_t m0 = io_gate_marked(&bk->gate);
    for (int64_t e = 0; e < 4; e++) /* one group each: bt_add waits for its completion */
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, small + (size_t)e * 97), 0);
    uint64_t m1 = io_gate_marked(&bk->gate);
    CU_ASSERT_TRUE(m1 >= m0 + 4);
    CU_ASSERT_EQUAL(bt_add(bk, 7, 4, 3, big), 0);
    CU_ASSERT_EQUAL(io_gate_marked(&bk->gate), m1); /* above IO_GATE_GROUP_BYTES_MAX */
    CU_ASSERT_EQUAL(atomic_load(&bk->gate.writes), 0);
    bookie_stats_t st;
    if (bt_fs_takes_odirect(dir)) { /* large records are read with O_DIRECT */
        io_gate_write_begin(&bk->gate, 1);
        for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
            io_gate_read_begin(&bk->gate);
        uint64_t t0 = clock_mono_us();
        CU_ASSERT_EQUAL(bt_verify(bk, 7, 0, small), 0);
        CU_ASSERT_TRUE(clock_mono_us() - t0 >= cfg.read_yield_us);
        bookie_get_stats(bk, &st);
        CU_ASSERT_EQUAL(st.reads_yielded, 1);
        for (int i = 0; i < IO_GATE_READS_DURING_WRITE; i++)
            io_gate_read_end(&bk->gate);
        io_gate_write_end(&bk->gate);
    }
    bookie_get_stats(bk, &st);
    uint64_t yielded = st.reads_yielded;
    for (int64_t e = 1; e < 4; e++) /* nothing in flight: no read waits */
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, small + (size_t)e * 97), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 7, 4, big), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.reads_yielded, yielded);
    CU_ASSERT_EQUAL(atomic_load(&bk->gate.reads), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A group above IO_GATE_GROUP_BYTES_MAX is not marked: reads go on. */
static void test_gate_large_group(void)
{
    io_gate_t g;
    TEST_REQUIRE(io_gate_init(&g, 30u * 1000 * 1000) == 0);
    CU_ASSERT_FALSE(io_gate_write_begin(&g, (uint64_t)IO_GATE_GROUP_BYTES_MAX + 1));
    CU_ASSERT_EQUAL(atomic_load(&g.writes), 0);
    CU_ASSERT_FALSE(io_gate_writes_recent(&g, 60u * 1000 * 1000)); /* not marked: not recent */
    for (int i = 0; i <= IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_begin(&g);
    uint64_t waits, us;
    io_gate_stats(&g, &waits, &us);
    CU_ASSERT_EQUAL(waits, 0);
    for (int i = 0; i <= IO_GATE_READS_DURING_WRITE; i++)
        io_gate_read_end(&g);
    CU_ASSERT_TRUE(io_gate_write_begin(&g, IO_GATE_GROUP_BYTES_MAX)); /* at the bound: marked */
    CU_ASSERT_EQUAL(atomic_load(&g.writes), 1);
    CU_ASSERT_TRUE(io_gate_writes_recent(&g, 0)); /* in flight: recent whatever the window */
    io_gate_write_end(&g);
    /* marked: recent within a minute, not within no time at all */
    CU_ASSERT_TRUE(io_gate_writes_recent(&g, 60u * 1000 * 1000));
    CU_ASSERT_FALSE(io_gate_writes_recent(&g, 0));
    io_gate_destroy(&g);
}

void bookie_io_gate_register(void)
{
    CU_pSuite s = CU_add_suite("bookie_io_gate", NULL, NULL);
    CU_add_test(s, "readYieldToJournalUs=0: reads never wait", test_gate_off);
    CU_add_test(s, "no write in flight: reads never wait", test_gate_no_write);
    CU_add_test(s, "during a write, reads beyond IO_GATE_READS_DURING_WRITE wait for it",
                test_gate_waits_for_write);
    CU_add_test(s, "during a write, a waiting read starts when a read in flight ends",
                test_gate_waits_for_read);
    CU_add_test(s, "a wait is bounded by readYieldToJournalUs", test_gate_bounded);
    CU_add_test(s, "groups above IO_GATE_GROUP_BYTES_MAX hold no read back, are not recent",
                test_gate_large_group);
    CU_add_test(s, "the journal marks small groups; a large read waits while one is marked",
                test_gate_bookie);
}
