/*
 * Unit tests of storage/bookie/: add/read round trips, reads from entry logs
 * after reopen and from journal replay, torn and corrupt journal tails,
 * corrupt entry log records, fencing, LAC, last entry, deletion, GC and
 * compaction, write cache overflow, group commit, bounds, I/O errors.
 * The crash test (fork + SIGKILL) is in test_bookie_crash.c.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/journal.h"
#include "storage/bookie/trash.h"
#include "tests/unit/bookie/bookie_test.h"

struct ev_loop *bt_loop;

/* ------------------------------------------------------------- helpers -- */

void bt_fill(int64_t ledger_id, int64_t entry_id, uint8_t *p, size_t n)
{
    uint64_t x =
        (uint64_t)ledger_id * 0x9E3779B97F4A7C15ull ^ (uint64_t)entry_id * 0xBF58476D1CE4E5B9ull;
    x |= 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)(x >> 24);
    }
}

qbuf_t *bt_entry(int64_t ledger_id, int64_t entry_id, size_t n)
{
    qbuf_t *b = qbuf_new(n);
    TEST_REQUIRE(b != NULL);
    bt_fill(ledger_id, entry_id, b->data, n);
    b->len = (uint32_t)n;
    return b;
}

bool bt_check(int64_t ledger_id, int64_t entry_id, const qbuf_t *b, size_t n)
{
    if (!b || b->len != n)
        return false;
    uint8_t *want = malloc(n + 1);
    bt_fill(ledger_id, entry_id, want, n);
    bool ok = memcmp(want, b->data, n) == 0;
    free(want);
    return ok;
}

bool bt_fs_takes_odirect(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/odirect-probe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
    bool ok = false;
    void *b;
    if (fd >= 0 && posix_memalign(&b, 4096, 4096) == 0) {
        memset(b, 0, 4096);
        ok = pwrite(fd, b, 4096, 0) == 4096;
        free(b);
    }
    if (fd >= 0)
        close(fd);
    unlink(path);
    return ok;
}

void bt_config(bookie_config_t *cfg, const char *dir)
{
    bookie_config_defaults(cfg);
    cfg->data_dir = dir;
    cfg->journal_file_size_bytes = 1u << 20;
    cfg->entry_log_size_bytes = 4u << 20;
    cfg->write_cache_bytes = 8u << 20;
    cfg->read_cache_bytes = 1u << 20;
    cfg->flush_interval_ms = 3600 * 1000; /* flushes only when a test asks */
    cfg->gc_interval_ms = 3600 * 1000;
    cfg->pending_adds_max = 10000;
    cfg->disk_check_interval_ms = 0; /* whatever this machine's disk: tests apply usages */
    cfg->spare_zero_rate_bytes = 0;  /* tests that count files: no early rolls to spares */
}

static void bt_add_cb(int rc, int64_t l, int64_t e, void *arg)
{
    (void)l;
    (void)e;
    bt_res_t *r = arg;
    r->rc = rc;
    r->done = true;
}

void bt_read_cb(int rc, int64_t l, int64_t e, qbuf_t *entry, int64_t lac, void *arg)
{
    (void)l;
    (void)e;
    bt_res_t *r = arg;
    r->rc = rc;
    r->value = lac;
    r->buf = entry ? qbuf_ref(entry) : NULL;
    r->done = true;
}

static void bt_lac_cb(int rc, int64_t l, int64_t lac, void *arg)
{
    (void)l;
    bt_res_t *r = arg;
    r->rc = rc;
    r->value = lac;
    r->done = true;
}

void bt_done_cb(int rc, void *arg)
{
    bt_res_t *r = arg;
    r->rc = rc;
    r->done = true;
}

static int bt_wait(int call_rc, bt_res_t *r)
{
    if (call_rc)
        return call_rc;
    CU_ASSERT_FALSE(r->done); /* never completed inline */
    TEST_REQUIRE(test_run_until(bt_loop, &r->done, BT_WAIT_S));
    return r->rc;
}

int bt_add(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, size_t n)
{
    return bt_add_as(bk, ledger_id, entry_id, lac, ledger_id, n);
}

int bt_add_as(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, int64_t fill_ledger,
              size_t n)
{
    bt_res_t r = {0};
    qbuf_t *b = bt_entry(fill_ledger, entry_id, n);
    int rc = bookie_add(bk, ledger_id, entry_id, lac, b, bt_add_cb, &r);
    qbuf_unref(b); /* the bookie holds its own reference */
    return bt_wait(rc, &r);
}

int bt_verify_as(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t fill_ledger, size_t n)
{
    qbuf_t *b = NULL;
    int rc = bt_read(bk, ledger_id, entry_id, &b, NULL);
    if (rc == 0 && !bt_check(fill_ledger, entry_id, b, n))
        rc = QE_CORRUPT;
    qbuf_unref(b);
    return rc;
}

int bt_read(bookie_t *bk, int64_t ledger_id, int64_t entry_id, qbuf_t **out, int64_t *lac)
{
    bt_res_t r = {0};
    int rc = bt_wait(bookie_read(bk, ledger_id, entry_id, bt_read_cb, &r), &r);
    if (lac)
        *lac = r.value;
    if (out)
        *out = r.buf;
    else
        qbuf_unref(r.buf);
    return rc;
}

int bt_fence(bookie_t *bk, int64_t ledger_id, int64_t *lac)
{
    bt_res_t r = {0};
    int rc = bt_wait(bookie_fence(bk, ledger_id, bt_lac_cb, &r), &r);
    if (lac)
        *lac = r.value;
    return rc;
}

int bt_read_lac(bookie_t *bk, int64_t ledger_id, int64_t *lac)
{
    bt_res_t r = {0};
    int rc = bt_wait(bookie_read_lac(bk, ledger_id, bt_lac_cb, &r), &r);
    *lac = r.value;
    return rc;
}

int bt_last_entry(bookie_t *bk, int64_t ledger_id, int64_t *last)
{
    bt_res_t r = {0};
    int rc = bt_wait(bookie_last_entry(bk, ledger_id, bt_lac_cb, &r), &r);
    *last = r.value;
    return rc;
}

int bt_delete(bookie_t *bk, int64_t ledger_id)
{
    bt_res_t r = {0};
    return bt_wait(bookie_delete_ledger(bk, ledger_id, bt_done_cb, &r), &r);
}

int bt_gc(bookie_t *bk)
{
    bt_res_t r = {0};
    return bt_wait(bookie_gc_now(bk, bt_done_cb, &r), &r);
}

int bt_verify(bookie_t *bk, int64_t ledger_id, int64_t entry_id, size_t n)
{
    return bt_verify_as(bk, ledger_id, entry_id, ledger_id, n);
}

bookie_t *bt_open(const bookie_config_t *cfg)
{
    bookie_t *bk = NULL;
    TEST_REQUIRE(bookie_open(bt_loop, cfg, &bk) == 0);
    return bk;
}

int bt_count_files(const char *dir, const char *sub, const char *ext, char *last_path, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), el = strlen(ext);
        if (l > el && strcmp(de->d_name + l - el, ext) == 0) {
            count++;
            if (last_path && strlen(path) + l + 2 <= n) {
                memcpy(last_path, path, strlen(path));
                last_path[strlen(path)] = '/';
                memcpy(last_path + strlen(path) + 1, de->d_name, l + 1);
            }
        }
    }
    closedir(d);
    return count;
}

#define RB_N 40

typedef struct rb_state {
    int done, ok;
} rb_state_t;

static void rb_cb(int rc, int64_t l, int64_t e, qbuf_t *entry, int64_t lac, void *arg)
{
    (void)lac;
    rb_state_t *st = arg;
    st->done++;
    st->ok += rc == 0 && entry && bt_check(l, e, entry, 32000);
}

#define RQ_N 5000
static rb_state_t rq_state;

static void rq_cb(int rc, int64_t l, int64_t e, qbuf_t *entry, int64_t lac, void *arg)
{
    (void)lac;
    rb_state_t *st = arg;
    st->done++;
    st->ok += rc == 0 && entry && bt_check(l, e, entry, 200);
}

/* Disk reads hold at most read_bytes_inflight_max between the readers and
 * the loop: the others wait their turn (not refused), in order, and all are
 * delivered. */
static void test_read_bytes_bound(void)
{
    char *dir = bt_dir("rbytes");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.read_bytes_inflight_max = 64u << 10; /* two 32-KB entries */
    bookie_t *bk = bt_open(&cfg);
    for (int64_t e = 0; e < RB_N; e++) /* large: to a direct log, read from disk */
        TEST_REQUIRE(bt_add(bk, 9, e, e - 1, 32000) == 0);
    rb_state_t st = {0};
    for (int64_t e = 0; e < RB_N; e++)
        CU_ASSERT_EQUAL(bookie_read(bk, 9, e, rb_cb, &st), 0);
    ev_run(bt_loop, EVRUN_NOWAIT); /* large reads go to the readers before the loop waits */
    bookie_stats_t bs;
    bookie_get_stats(bk, &bs);
    /* runs of two (64,000 bytes, within the bound) */
    CU_ASSERT_TRUE(bs.reads_waited >= RB_N / 2 - 2);
    /* the gauge: the two reads handed to the readers, within the bound */
    CU_ASSERT_TRUE(bs.reads_inflight_bytes > 0 &&
                   bs.reads_inflight_bytes <= cfg.read_bytes_inflight_max);
    for (int i = 0; i < 1000 && st.done < RB_N; i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_EQUAL(st.done, RB_N);
    CU_ASSERT_EQUAL(st.ok, RB_N);
    bookie_get_stats(bk, &bs);
    CU_ASSERT_EQUAL(bs.reads_inflight_bytes, 0);
    /* reads still waiting when the bookie closes fail, none is lost */
    rb_state_t late = {0};
    for (int64_t e = 0; e < RB_N; e++)
        CU_ASSERT_EQUAL(bookie_read(bk, 9, e, rb_cb, &late), 0);
    bookie_close(bk);
    CU_ASSERT_EQUAL(late.done, RB_N);
    test_rm_rf(dir);
    free(dir);

    /* more small reads at once than the readers' queue holds (4,096): within
     * the byte bound, the ones that do not fit wait too, none is refused
     * (whether the queue fills depends on how fast the readers drain it, so
     * only the outcome is asserted; on the release build it fills here) */
    dir = bt_dir("rqueue");
    bt_config(&cfg, dir);
    cfg.journal_large_entry_bytes = 64; /* 200-byte entries go to a direct log */
    bk = bt_open(&cfg);
    for (int64_t e = 0; e < RQ_N; e++)
        TEST_REQUIRE(bt_add(bk, 11, e, e - 1, 200) == 0);
    rq_state = (rb_state_t){0};
    int refused = 0;
    for (int64_t e = 0; e < RQ_N; e++)
        refused += bookie_read(bk, 11, e, rq_cb, &rq_state) != 0;
    CU_ASSERT_EQUAL(refused, 0);
    for (int i = 0; i < 2000 && rq_state.done < RQ_N; i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_EQUAL(rq_state.done, RQ_N);
    CU_ASSERT_EQUAL(rq_state.ok, RQ_N);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* What the caches hold, as bookie_get_stats reports it (the /metrics gauges):
 * a small entry's payload and its item in the write cache, a large (direct)
 * entry's item alone; at most the two caches' bound while flushes run; an
 * entry read back from an entry log, in the read cache. */
static void test_cache_gauges(void)
{
    char *dir = bt_dir("bk-gauges");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10;
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.write_cache_bytes, 0);
    CU_ASSERT_EQUAL(st.read_cache_bytes, 0);
    for (int64_t e = 0; e < 10; e++)
        TEST_REQUIRE(bt_add(bk, 1, e, e - 1, 1000) == 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.write_cache_bytes, 10 * (1000 + WRITE_CACHE_ITEM_OVERHEAD));
    TEST_REQUIRE(bt_add(bk, 2, 0, -1, 32000) == 0); /* large: to a direct log */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.write_cache_bytes,
                    10 * (1000 + WRITE_CACHE_ITEM_OVERHEAD) + WRITE_CACHE_ITEM_OVERHEAD);
    uint64_t most = 0;
    for (int64_t e = 10; e < 200; e++) { /* 200 KB through a 64 KiB cache: flushes */
        TEST_REQUIRE(bt_add(bk, 1, e, e - 1, 1000) == 0);
        bookie_get_stats(bk, &st);
        if (st.write_cache_bytes > most)
            most = st.write_cache_bytes;
    }
    CU_ASSERT_TRUE(most > cfg.write_cache_bytes / 2);
    CU_ASSERT_TRUE(most <= 2 * cfg.write_cache_bytes);
    /* entry 0 was flushed long ago: read from its entry log, then kept */
    CU_ASSERT_EQUAL(bt_verify(bk, 1, 0, 1000), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.read_cache_bytes, 1000 + READ_CACHE_NODE_OVERHEAD);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* The latency summaries (bookie_stats_t's latq views, /metrics' JOURNAL_ADD_ENTRY,
 * JOURNAL_SYNC, direct-log writes, an add's three parts and journal rolls): every
 * add, journal fdatasync, direct write and roll counted once, with its time; an
 * add's parts add up to its whole; after a window (1 s here), quantiles in order. */
static void test_latency_summaries(void)
{
    char *dir = bt_dir("bk-latq");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.stats_window_s = 1;
    cfg.journal_file_size_bytes = 64u << 10; /* the small adds roll it */
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_add_latency.count, 0);
    CU_ASSERT_TRUE(isnan(st.journal_add_latency.q_ms[1]));
    CU_ASSERT_EQUAL(st.journal_creation_latency.count, 0);
    for (int64_t e = 0; e < 100; e++)
        TEST_REQUIRE(bt_add(bk, 1, e, e - 1, 1000) == 0);
    for (int64_t e = 0; e < 5; e++) /* large: each group writes the direct log */
        TEST_REQUIRE(bt_add(bk, 2, e, e - 1, 40000) == 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_add_latency.count, 105);
    CU_ASSERT_TRUE(st.journal_add_latency.sum_ms > 0);
    const latq_view_t *part[] = {&st.journal_queue_latency, &st.journal_group_latency,
                                 &st.add_callback_latency};
    double parts_ms = 0;
    for (size_t k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(part[k]->count, 105);
        parts_ms += part[k]->sum_ms;
    }
    /* each add's queue + group + callback is its submission to its completion */
    CU_ASSERT_DOUBLE_EQUAL(parts_ms, st.journal_add_latency.sum_ms, 0.0005);
    /* a group's time holds its sync */
    CU_ASSERT_TRUE(st.journal_group_latency.sum_ms >= st.journal_sync_us_total / 1000.0 * 0.99);
    CU_ASSERT_TRUE(st.journal_creation_latency.count >= 1); /* 100 KB through 64-KiB files */
    CU_ASSERT_EQUAL(st.direct_roll_latency.count, 1);       /* the first log (4 MiB, no spares) */
    CU_ASSERT_TRUE(st.journal_syncs >= 1);
    CU_ASSERT_EQUAL(st.journal_sync_latency.count, st.journal_syncs);
    CU_ASSERT_DOUBLE_EQUAL(st.journal_sync_latency.sum_ms, st.journal_sync_us_total / 1000.0, 0.01);
    CU_ASSERT_TRUE(st.direct_syncs >= 5);
    CU_ASSERT_EQUAL(st.direct_latency.count, st.direct_syncs);
    usleep(1100 * 1000); /* the window ends; the next read rotates it */
    bookie_get_stats(bk, &st);
    const latq_view_t *v[] = {&st.journal_add_latency,      &st.journal_sync_latency,
                              &st.direct_latency,           &st.journal_queue_latency,
                              &st.journal_group_latency,    &st.add_callback_latency,
                              &st.journal_creation_latency, &st.direct_roll_latency};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        CU_ASSERT_TRUE(v[k]->window_s >= 1.0);
        for (int i = 0; i < LATQ_NQ; i++) {
            CU_ASSERT_FALSE(isnan(v[k]->q_ms[i]));
            CU_ASSERT_TRUE(i == 0 || v[k]->q_ms[i] >= v[k]->q_ms[i - 1]);
        }
        CU_ASSERT_TRUE(v[k]->q_ms[LATQ_NQ - 1] > 0);
    }
    /* an add includes its group's journal sync: the slowest add at least the fastest sync */
    CU_ASSERT_TRUE(st.journal_add_latency.q_ms[LATQ_NQ - 1] >=
                   st.journal_sync_latency.q_ms[0] * 0.99);
    /* each part of an add within the whole (a stamp missing would wrap to years);
     * part[] points into st, read again above */
    for (size_t k = 0; k < 3; k++)
        CU_ASSERT_TRUE(part[k]->q_ms[LATQ_NQ - 1] <=
                       st.journal_add_latency.q_ms[LATQ_NQ - 1] * 1.01 + 0.01);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

void bt_flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    TEST_REQUIRE(fd >= 0);
    uint8_t c;
    TEST_REQUIRE(pread(fd, &c, 1, off) == 1);
    c ^= 0x5a;
    TEST_REQUIRE(pwrite(fd, &c, 1, off) == 1);
    close(fd);
}

char *bt_dir(const char *tag)
{
    char *d = test_tmpdir(tag);
    TEST_REQUIRE(d != NULL);
    return d;
}

/* --------------------------------------------------------------- tests -- */

static const size_t rt_sizes[] = {0, 1, 100, 4095, 65536, 65537, 300000, 1u << 20};
#define RT_N (sizeof rt_sizes / sizeof rt_sizes[0])

static void test_roundtrip_sizes(void)
{
    char *dir = bt_dir("bk-rt"), *data = NULL;
    TEST_REQUIRE(asprintf(&data, "%s/data/bookie", dir) > 0); /* parents created too */
    bookie_config_t cfg;
    bt_config(&cfg, data);
    bookie_t *bk = bt_open(&cfg);
    for (size_t i = 0; i < RT_N; i++)
        CU_ASSERT_EQUAL(bt_add(bk, 1, (int64_t)i, (int64_t)i - 1, rt_sizes[i]), 0);
    for (size_t i = 0; i < RT_N; i++)
        CU_ASSERT_EQUAL(bt_verify(bk, 1, (int64_t)i, rt_sizes[i]), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.adds, RT_N);
    /* Small entries from the write cache; large ones (written once, to a
     * direct entry log) keep no payload in memory and are read from that log. */
    size_t small = 0;
    for (size_t i = 0; i < RT_N; i++)
        small += rt_sizes[i] < cfg.journal_large_entry_bytes;
    CU_ASSERT_EQUAL(small, 4);
    CU_ASSERT_EQUAL(st.read_cache_hits, small);
    CU_ASSERT_EQUAL(bt_read(bk, 1, 99, NULL, NULL), QE_NO_ENTRY);
    CU_ASSERT_EQUAL(bt_read(bk, 2, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);

    /* After close + reopen: from the entry log, on a reader thread. */
    bk = bt_open(&cfg);
    for (size_t i = 0; i < RT_N; i++)
        CU_ASSERT_EQUAL(bt_verify(bk, 1, (int64_t)i, rt_sizes[i]), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.read_cache_hits, 0);
    CU_ASSERT_EQUAL(st.entry_logs, 2); /* the flush's log and the direct log (large entries) */
    CU_ASSERT_TRUE(st.entry_log_bytes > 1400000);
    /* A second read of a small entry hits the read cache. */
    CU_ASSERT_EQUAL(bt_verify(bk, 1, 2, 100), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.read_cache_hits, 1);
    bookie_close(bk);
    test_rm_rf(dir);
    free(data);
    free(dir);
}

static void test_replay_before_flush(void)
{
    char *dir = bt_dir("bk-replay");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int l = 1; l <= 3; l++)
        for (int e = 0; e < 50; e++)
            CU_ASSERT_EQUAL(bt_add(bk, l, e, e - 1, (size_t)(100 + e * 37)), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.entry_logs, 0); /* nothing flushed: only the journal has them */
    bookie_test_abandon(bk);

    bk = bt_open(&cfg);
    for (int l = 1; l <= 3; l++) {
        for (int e = 0; e < 50; e++)
            CU_ASSERT_EQUAL(bt_verify(bk, l, e, (size_t)(100 + e * 37)), 0);
        int64_t lac = -2, last = -2;
        CU_ASSERT_EQUAL(bt_read_lac(bk, l, &lac), 0);
        CU_ASSERT_EQUAL(lac, 48);
        CU_ASSERT_EQUAL(bt_last_entry(bk, l, &last), 0);
        CU_ASSERT_EQUAL(last, 49);
    }
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

#define TORN_LEN 1000u
#define TORN_REC (40u + TORN_LEN)

/* Ten adds of TORN_LEN, each its own group, then a crash; returns the journal path. */
static void torn_setup(const bookie_config_t *cfg, char *jpath, size_t n)
{
    bookie_t *bk = bt_open(cfg);
    for (int e = 0; e < 10; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, TORN_LEN), 0);
    bookie_test_abandon(bk);
    TEST_REQUIRE(bt_count_files(cfg->data_dir, "journal", ".jnl", jpath, n) == 1);
}

static void test_torn_tail_truncated(void)
{
    char *dir = bt_dir("bk-torn");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char jpath[4096];
    torn_setup(&cfg, jpath, sizeof jpath);
    /* Cut record 7 in the middle of its payload. */
    TEST_REQUIRE(truncate(jpath, 7 * TORN_REC + 500) == 0);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 7; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, TORN_LEN), 0);
    for (int e = 7; e < 10; e++)
        CU_ASSERT_EQUAL(bt_read(bk, 7, e, NULL, NULL), QE_NO_ENTRY);
    int64_t last = -2;
    CU_ASSERT_EQUAL(bt_last_entry(bk, 7, &last), 0);
    CU_ASSERT_EQUAL(last, 6);
    /* The bookie is writable again after the truncation. */
    CU_ASSERT_EQUAL(bt_add(bk, 7, 7, 6, TORN_LEN), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 7, 7, TORN_LEN), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 7, 8, NULL, NULL), QE_NO_ENTRY);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_corrupt_journal_record(void)
{
    char *dir = bt_dir("bk-flip");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char jpath[4096];
    torn_setup(&cfg, jpath, sizeof jpath);
    bt_flip_byte(jpath, 4 * TORN_REC + 40 + 10); /* payload of entry 4 */
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, TORN_LEN), 0);
    for (int e = 4; e < 10; e++) /* the bad record ends the journal */
        CU_ASSERT_EQUAL(bt_read(bk, 7, e, NULL, NULL), QE_NO_ENTRY);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* One ADD record of the given format for journal file seq at p; its size. */
static size_t jf_record(uint8_t *p, uint32_t format, uint64_t seq, int64_t ledger, int64_t entry)
{
    uint32_t len = 100;
    put_le32(p, format >= 3 ? JOURNAL_MAGIC_V3 : JOURNAL_MAGIC);
    put_le32(p + 4, len);
    put_le32(p + 8, 0);
    put_le32(p + 12, JREC_ADD);
    put_le64(p + 16, (uint64_t)ledger);
    put_le64(p + 24, (uint64_t)entry);
    put_le64(p + 32, (uint64_t)-1);
    memset(p + JOURNAL_HEADER_BYTES, (int)(entry & 0xff), len);
    put_le32(p + 8, crc32c(journal_crc_seed(format, seq), p, JOURNAL_HEADER_BYTES + len));
    return JOURNAL_HEADER_BYTES + len;
}

/* A journal file made of records (format, seq written for, ledger, entry),
 * then `zeros` zero bytes. */
typedef struct jf_rec {
    uint32_t format;
    uint64_t seq;
    int64_t ledger, entry;
} jf_rec_t;

static uint64_t jf_file(const char *jdir, uint64_t seq, const jf_rec_t *r, int n, size_t zeros)
{
    uint8_t buf[4096] = {0};
    size_t off = 0;
    for (int i = 0; i < n; i++)
        off += jf_record(buf + off, r[i].format, r[i].seq, r[i].ledger, r[i].entry);
    TEST_REQUIRE(off + zeros <= sizeof buf);
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%016llx.jnl", jdir, (unsigned long long)seq);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    TEST_REQUIRE(fd >= 0 && bk_pwrite_all(fd, buf, off + zeros, 0) == 0);
    close(fd);
    return off + zeros;
}

typedef struct jf_seen {
    int n;
    int64_t ledger[16], entry[16];
    uint64_t seq[16];
} jf_seen_t;

static int jf_collect(void *ctx, const journal_record_t *rec)
{
    jf_seen_t *s = ctx;
    if (s->n < 16) {
        s->ledger[s->n] = rec->ledger_id;
        s->entry[s->n] = rec->entry_id;
        s->seq[s->n++] = rec->pos.seq;
    }
    return 0;
}

static uint64_t jf_size(const char *jdir, uint64_t seq)
{
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%016llx.jnl", jdir, (unsigned long long)seq);
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Format 3 (journal.h): a record is valid only in the file it was written
 * for, so the bytes of an older file that one was written over (records of
 * another seq, of format 2) end that file, and replay goes on with the next;
 * the last file is truncated at its end. Format 2: the first bad record ends
 * the journal. */
static void test_journal_format3_file_ends(void)
{
    char *dir = bt_dir("bk-jfmt");
    char jdir[4096];
    snprintf(jdir, sizeof jdir, "%s/j", dir);
    TEST_REQUIRE(mkdir(jdir, 0755) == 0);
    jf_rec_t f7[] = {{3, 7, 1, 0}, {3, 7, 1, 1}, {3, 5, 9, 0}, {3, 7, 1, 2}};
    jf_rec_t f8[] = {{3, 8, 1, 3}, {2, 8, 9, 1}, {3, 8, 1, 4}};
    jf_rec_t f9[] = {{3, 9, 1, 5}};
    jf_rec_t f10[] = {{3, 10, 1, 6}, {3, 9, 9, 2}, {3, 10, 1, 7}};
    uint64_t s7 = jf_file(jdir, 7, f7, 4, 0), s8 = jf_file(jdir, 8, f8, 3, 0);
    uint64_t s9 = jf_file(jdir, 9, f9, 1, 300);
    jf_file(jdir, 10, f10, 3, 0);
    jf_seen_t seen = {0};
    uint64_t next = 0;
    CU_ASSERT_EQUAL(journal_replay(jdir, (journal_pos_t){7, 0}, 3, jf_collect, &seen, &next), 0);
    CU_ASSERT_EQUAL(next, 11);
    int64_t want[] = {0, 1, 3, 5, 6};
    uint64_t want_seq[] = {7, 7, 8, 9, 10};
    CU_ASSERT_EQUAL(seen.n, 5);
    for (int i = 0; i < 5 && i < seen.n; i++) {
        CU_ASSERT_EQUAL(seen.ledger[i], 1);
        CU_ASSERT_EQUAL(seen.entry[i], want[i]);
        CU_ASSERT_EQUAL(seen.seq[i], want_seq[i]);
    }
    /* not the last: left as they are; the last: cut after its one record */
    CU_ASSERT_EQUAL(jf_size(jdir, 7), s7);
    CU_ASSERT_EQUAL(jf_size(jdir, 8), s8);
    CU_ASSERT_EQUAL(jf_size(jdir, 9), s9);
    CU_ASSERT_EQUAL(jf_size(jdir, 10), JOURNAL_HEADER_BYTES + 100);

    /* the same records checked as format 2: none is valid (another magic) */
    uint8_t rec[256];
    const char *why = NULL;
    jf_record(rec, 3, 7, 1, 0);
    CU_ASSERT_EQUAL(journal_check_record(rec, sizeof rec, 2, 7, &why), -1);
    CU_ASSERT_EQUAL(journal_check_record(rec, sizeof rec, 3, 7, &why), JOURNAL_HEADER_BYTES + 100);
    CU_ASSERT_EQUAL(journal_check_record(rec, sizeof rec, 3, 6, &why), -1);
    CU_ASSERT_EQUAL(journal_check_record(rec, sizeof rec, 3, 7 + (1ull << 31), &why), -1);
    jf_record(rec, 2, 7, 1, 0);
    CU_ASSERT_EQUAL(journal_check_record(rec, sizeof rec, 2, 99, &why), JOURNAL_HEADER_BYTES + 100);

    /* format 2: a bad record in file 20 ends the journal; file 21 is not replayed */
    jf_rec_t g20[] = {{2, 20, 1, 0}, {3, 20, 9, 0}, {2, 20, 1, 1}};
    jf_rec_t g21[] = {{2, 21, 1, 2}};
    jf_file(jdir, 20, g20, 3, 0);
    jf_file(jdir, 21, g21, 1, 0);
    memset(&seen, 0, sizeof seen);
    CU_ASSERT_EQUAL(journal_replay(jdir, (journal_pos_t){20, 0}, 2, jf_collect, &seen, &next), 0);
    CU_ASSERT_EQUAL(seen.n, 1);
    CU_ASSERT_EQUAL(jf_size(jdir, 20), JOURNAL_HEADER_BYTES + 100);
    test_rm_rf(dir);
    free(dir);
}

static void test_corrupt_entry_log_record(void)
{
    char *dir = bt_dir("bk-elog");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 10; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 3, e, e - 1, 500), 0);
    bookie_close(bk);
    char lpath[4096];
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".log", lpath, sizeof lpath) == 1);
    bt_flip_byte(lpath, 5 * (32 + 500) + 32 + 77); /* payload of entry 5 */
    bk = bt_open(&cfg);
    qbuf_t *b = NULL;
    CU_ASSERT_EQUAL(bt_read(bk, 3, 5, &b, NULL), QE_CORRUPT);
    CU_ASSERT_PTR_NULL(b);
    for (int e = 0; e < 10; e++)
        if (e != 5)
            CU_ASSERT_EQUAL(bt_verify(bk, 3, e, 500), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_fencing(void)
{
    char *dir = bt_dir("bk-fence");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 5; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 4, e, e - 1, 64), 0);
    int64_t lac = -2;
    CU_ASSERT_EQUAL(bt_fence(bk, 4, &lac), 0);
    CU_ASSERT_EQUAL(lac, 3);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 5, 4, 64), QE_FENCED);
    CU_ASSERT_EQUAL(bt_fence(bk, 99, &lac), 0); /* unknown ledger: recorded fenced */
    CU_ASSERT_EQUAL(lac, -1);
    CU_ASSERT_EQUAL(bt_add(bk, 99, 0, -1, 64), QE_FENCED);
    bookie_test_abandon(bk); /* fences only in the journal */

    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 5, 4, 64), QE_FENCED);
    CU_ASSERT_EQUAL(bt_add(bk, 99, 0, -1, 64), QE_FENCED);
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 4, 64), 0);
    bookie_close(bk); /* fences now in ledgers.meta */

    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 5, 4, 64), QE_FENCED);
    CU_ASSERT_EQUAL(bt_add(bk, 99, 0, -1, 64), QE_FENCED);
    CU_ASSERT_EQUAL(bt_read_lac(bk, 4, &lac), 0);
    CU_ASSERT_EQUAL(lac, 3);
    CU_ASSERT_EQUAL(bt_add(bk, 5, 0, -1, 64), 0); /* other ledgers unaffected */
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_lac_and_last_entry(void)
{
    char *dir = bt_dir("bk-lac");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    int64_t v = -2;
    CU_ASSERT_EQUAL(bt_read_lac(bk, 6, &v), QE_NO_LEDGER);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 6, &v), QE_NO_LEDGER);
    CU_ASSERT_EQUAL(bt_add(bk, 6, 0, -1, 10), 0);
    CU_ASSERT_EQUAL(bt_read_lac(bk, 6, &v), 0);
    CU_ASSERT_EQUAL(v, -1);
    CU_ASSERT_EQUAL(bt_add(bk, 6, 5, 2, 10), 0); /* striped: out of order */
    CU_ASSERT_EQUAL(bt_add(bk, 6, 3, 1, 10), 0); /* a lower piggybacked LAC never lowers it */
    CU_ASSERT_EQUAL(bt_read_lac(bk, 6, &v), 0);
    CU_ASSERT_EQUAL(v, 2);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 6, &v), 0);
    CU_ASSERT_EQUAL(v, 5);
    int64_t lac = -2;
    CU_ASSERT_EQUAL(bt_read(bk, 6, 3, NULL, &lac), 0); /* LAC piggybacked on reads */
    CU_ASSERT_EQUAL(lac, 2);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_read_lac(bk, 6, &v), 0);
    CU_ASSERT_EQUAL(v, 2);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 6, &v), 0);
    CU_ASSERT_EQUAL(v, 5);
    CU_ASSERT_EQUAL(bt_read(bk, 6, 4, NULL, NULL), QE_NO_ENTRY);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_delete_and_gc_removes_log(void)
{
    char *dir = bt_dir("bk-gc");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 100; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 8, e, e - 1, 2000), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 1);
    CU_ASSERT_EQUAL(bt_delete(bk, 8), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 8, 1, NULL, NULL), QE_NO_LEDGER);
    CU_ASSERT_EQUAL(bt_add(bk, 8, 100, 99, 10), QE_NO_LEDGER);
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 1);
    CU_ASSERT_EQUAL(st.entry_logs, 0);
    CU_ASSERT_EQUAL(st.ledgers, 0);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 0);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".idx", NULL, 0), 0);
    /* Its blocks are freed in the background (renamed *.log.del meanwhile). */
    for (int i = 0; i < 500 && bt_count_files(dir, "ledgers", ".del", NULL, 0) > 0; i++)
        usleep(10000);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".del", NULL, 0), 0);
    bookie_close(bk);
    /* One left by a run that stopped meanwhile is deleted at open, unread. */
    char trash[4200];
    snprintf(trash, sizeof trash, "%s/ledgers/00000063.log.del", dir);
    FILE *f = fopen(trash, "w");
    TEST_REQUIRE(f != NULL);
    fputs("not an entry log", f);
    fclose(f);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".del", NULL, 0), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 8, 1, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Adds n1 entries of 3000 bytes to ledger l1 and n2 to l2, then closes and
 * reopens the bookie, so that the log they are in is no longer the current
 * one; returns the reopened bookie. */
static bookie_t *log_of_two_ledgers(const bookie_config_t *cfg, bookie_t *bk, int64_t l1, int n1,
                                    int64_t l2, int n2)
{
    for (int e = 0; e < n1; e++)
        CU_ASSERT_EQUAL(bt_add(bk, l1, e, e - 1, 3000), 0);
    for (int e = 0; e < n2; e++)
        CU_ASSERT_EQUAL(bt_add(bk, l2, e, e - 1, 3000), 0);
    bookie_close(bk);
    return bt_open(cfg);
}

/* Runs the loop until what(stats) reaches want (at most 10 s); returns the
 * stats then. */
static bookie_stats_t stats_wait(bookie_t *bk, uint64_t (*what)(const bookie_stats_t *),
                                 uint64_t want)
{
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    for (int i = 0; i < 1000 && what(&st) < want; i++) {
        test_run_for(bt_loop, 0.01);
        bookie_get_stats(bk, &st);
    }
    CU_ASSERT_TRUE(what(&st) >= want);
    return st;
}

static uint64_t st_passes(const bookie_stats_t *st)
{
    return st->gc_passes;
}

static uint64_t st_compacted(const bookie_stats_t *st)
{
    return st->gc_logs_compacted;
}

static uint64_t st_compacted_bytes(const bookie_stats_t *st)
{
    return st->gc_compacted_bytes;
}

/* Ledger 11's ten entries of 3000 bytes (the live ledger compaction_setup and
 * schedule_setup write with log_of_two_ledgers) all read back. */
static void compacted_reads_back(bookie_t *bk)
{
    for (int e = 0; e < 10; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 11, e, 3000), 0);
}

/* Lets the reads held on their reader threads go; rd, a read of ledger 11's
 * entry, then gets it. */
static void held_read_gets(bookie_t *bk, bt_res_t *rd, int64_t entry)
{
    bookie_test_hold_reads(bk, false);
    TEST_REQUIRE(test_run_until(bt_loop, &rd->done, BT_WAIT_S));
    CU_ASSERT_EQUAL(rd->rc, 0);
    CU_ASSERT_TRUE(bt_check(11, entry, rd->buf, 3000));
    qbuf_unref(rd->buf);
}

/* One entry log, 90 % of it ledger 10 (deleted) and 10 % ledger 11 (10
 * entries of 3000 bytes, live), reopened so that the log is not the current
 * one: the next GC compacts it. *before is the log's path. */
static bookie_t *compaction_setup(const bookie_config_t *cfg, char *before, size_t n)
{
    bookie_t *bk = log_of_two_ledgers(cfg, bt_open(cfg), 10, 90, 11, 10);
    TEST_REQUIRE(bt_count_files(cfg->data_dir, "ledgers", ".log", before, n) == 1);
    CU_ASSERT_EQUAL(bt_delete(bk, 10), 0);
    return bk;
}

static void test_compaction_keeps_live_entries(void)
{
    char *dir = bt_dir("bk-compact");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char before[4096], after[4096];
    bookie_t *bk = compaction_setup(&cfg, before, sizeof before);
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 10 * 3000); /* ledger 11's entries, once */
    CU_ASSERT_EQUAL(st.entry_logs, 1);
    CU_ASSERT_TRUE(st.entry_log_bytes < 11 * 3100);
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".log", after, sizeof after) == 1);
    CU_ASSERT_STRING_NOT_EQUAL(before, after); /* old log gone, copies in a new one */
    compacted_reads_back(bk);
    bookie_close(bk);
    bk = bt_open(&cfg);
    compacted_reads_back(bk);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.ledgers, 1);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* compaction_setup, then a read of ledger 11's entry held on its reader thread
 * (bookie_test_hold_reads) and a GC pass asked for: the read holds the log the
 * pass compacts. GC waits gc_wait_ms for such reads (0: its default). */
static bookie_t *compaction_with_read_held(const bookie_config_t *cfg, char *before, size_t n,
                                           int64_t entry, int gc_wait_ms, bt_res_t *rd,
                                           bt_res_t *gc)
{
    bookie_t *bk = compaction_setup(cfg, before, n);
    bookie_test_gc_reads_wait(bk, gc_wait_ms);
    bookie_test_hold_reads(bk, true);
    *rd = (bt_res_t){0};
    *gc = (bt_res_t){0};
    CU_ASSERT_EQUAL(bookie_read(bk, 11, entry, bt_read_cb, rd), 0);
    CU_ASSERT_EQUAL(bookie_gc_now(bk, bt_done_cb, gc), 0);
    return bk;
}

/* A read located in an entry log just before GC removes the log (held on its
 * reader thread across the GC pass) reads the log as it was: GC waits for the
 * reads in flight before it cuts or reuses the file. First a compaction (the
 * entry live, moved meanwhile: the read must succeed), then a log with nothing
 * live (the ledger deleted meanwhile: the read says so, not "corrupt"). */
static void test_gc_waits_for_reads_in_flight(void)
{
    char *dir = bt_dir("bk-gc-reads");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char before[4096];
    bt_res_t rd, gc;
    bookie_t *bk = compaction_with_read_held(&cfg, before, sizeof before, 3, 0, &rd, &gc);
    bookie_stats_t st = stats_wait(bk, st_compacted_bytes, 10 * 3000);
    test_run_for(bt_loop, 0.3); /* what GC does after its copies */
    CU_ASSERT_FALSE(rd.done);
    held_read_gets(bk, &rd, 3);
    TEST_REQUIRE(test_run_until(bt_loop, &gc.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(gc.rc, 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(bt_verify(bk, 11, 3, 3000), 0);
    bookie_close(bk);
    test_rm_rf(dir);

    bt_config(&cfg, dir);
    bk = log_of_two_ledgers(&cfg, bt_open(&cfg), 20, 50, 21, 50);
    bookie_test_hold_reads(bk, true);
    rd = (bt_res_t){0};
    gc = (bt_res_t){0};
    CU_ASSERT_EQUAL(bookie_read(bk, 20, 7, bt_read_cb, &rd), 0);
    CU_ASSERT_EQUAL(bt_delete(bk, 20), 0);
    CU_ASSERT_EQUAL(bt_delete(bk, 21), 0);
    CU_ASSERT_EQUAL(bookie_gc_now(bk, bt_done_cb, &gc), 0);
    test_run_for(bt_loop, 0.3);
    CU_ASSERT_FALSE(rd.done);
    bookie_test_hold_reads(bk, false);
    TEST_REQUIRE(test_run_until(bt_loop, &rd.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(rd.rc, QE_NO_LEDGER);
    CU_ASSERT_PTR_NULL(rd.buf);
    TEST_REQUIRE(test_run_until(bt_loop, &gc.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(gc.rc, 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 1);
    bookie_close(bk);
    test_rm_rf(dir);

    /* Closed while GC waits for such a read: the close does not wait for it
     * (the loop that completes reads is the one closing), the log's files
     * stay for the next open, every entry reads back, and GC then compacts it. */
    bt_config(&cfg, dir);
    bk = compaction_with_read_held(&cfg, before, sizeof before, 4, 0, &rd, &gc);
    stats_wait(bk, st_compacted_bytes, 10 * 3000);
    test_run_for(bt_loop, 0.1);
    bookie_test_hold_reads(bk, false);
    uint64_t t0 = clock_mono_us();
    bookie_close(bk);
    CU_ASSERT_TRUE(clock_mono_us() - t0 < 5 * 1000 * 1000);
    CU_ASSERT_TRUE(rd.done && gc.done);
    qbuf_unref(rd.buf);
    CU_ASSERT_EQUAL(access(before, F_OK), 0);
    bk = bt_open(&cfg);
    compacted_reads_back(bk);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER); /* still deleted */
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    CU_ASSERT_NOT_EQUAL(access(before, F_OK), 0);
    compacted_reads_back(bk);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A read still held when GC's wait for it ends (a disk stuck for seconds; the
 * wait shortened to 100 ms here) reads the log as it was: GC then only unlinks
 * the file (no background cut, no spare) and its blocks go when the read
 * closes it. */
static void test_gc_wait_ends_unlinked(void)
{
    char *dir = bt_dir("bk-gc-reads-left");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char before[4096];
    bt_res_t rd, gc;
    bookie_t *bk = compaction_with_read_held(&cfg, before, sizeof before, 3, 100, &rd, &gc);
    TEST_REQUIRE(test_run_until(bt_loop, &gc.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(gc.rc, 0);
    CU_ASSERT_FALSE(rd.done);
    CU_ASSERT_NOT_EQUAL(access(before, F_OK), 0); /* gone from the directory */
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", BK_TRASH_SUFFIX, NULL, 0), 0);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".zero", NULL, 0), 0);
    test_run_for(bt_loop, 0.3); /* what a background cut would have done */
    held_read_gets(bk, &rd, 3);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    compacted_reads_back(bk);
    bookie_close(bk);
    bk = bt_open(&cfg);
    compacted_reads_back(bk);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A paced compaction (1 byte a second: it waits after its first step for as
 * long as the test lasts) does not hold back the flushes that adds need
 * meanwhile, and closing the bookie stops it between steps: the log is kept,
 * every entry reads back after a reopen, and an unpaced GC then compacts it. */
static void test_compaction_paced(void)
{
    char *dir = bt_dir("bk-compact-paced");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10; /* the adds below need ~10 flushes */
    cfg.gc_compact_bytes_per_s = 1;
    char before[4096], after[4096];
    bookie_t *bk = compaction_setup(&cfg, before, sizeof before);
    bt_res_t gc = {0};
    CU_ASSERT_EQUAL(bookie_gc_now(bk, bt_done_cb, &gc), 0);
    /* Its first step (all of ledger 11) is copied and counted; then it paces. */
    bookie_stats_t st = stats_wait(bk, st_compacted_bytes, 10 * 3000);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 10 * 3000); /* counted before the end */
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);
    CU_ASSERT_FALSE(gc.done);
    for (int e = 0; e < 200; e++) /* 600 KB through a 64 KiB write cache */
        CU_ASSERT_EQUAL(bt_add(bk, 12, e, e - 1, 3000), 0);
    CU_ASSERT_FALSE(gc.done);
    bookie_close(bk); /* stops the compaction */
    CU_ASSERT_TRUE(gc.done);
    CU_ASSERT_EQUAL(gc.rc, QE_SHUTDOWN);
    cfg.gc_compact_bytes_per_s = 0;
    bk = bt_open(&cfg);
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".log", after, sizeof after) >= 1);
    CU_ASSERT_EQUAL(access(before, F_OK), 0); /* the compacted log was kept */
    compacted_reads_back(bk);
    for (int e = 0; e < 200; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 12, e, 3000), 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 0); /* the copies made before the stop stand */
    CU_ASSERT_NOT_EQUAL(access(before, F_OK), 0);
    compacted_reads_back(bk);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Two entry logs, neither the current one: the first 10 % live (ledger 10
 * deleted, 11 live), the second 30 % live (ledger 12 deleted, 13 live). */
static bookie_t *schedule_setup(const bookie_config_t *cfg)
{
    bookie_t *bk = log_of_two_ledgers(cfg, bt_open(cfg), 10, 90, 11, 10);
    bk = log_of_two_ledgers(cfg, bk, 12, 70, 13, 30);
    TEST_REQUIRE(bt_count_files(cfg->data_dir, "ledgers", ".log", NULL, 0) == 2);
    CU_ASSERT_EQUAL(bt_delete(bk, 10), 0);
    CU_ASSERT_EQUAL(bt_delete(bk, 12), 0);
    return bk;
}

/* Runs the loop until the GC timer has done `passes` more passes. */
static bookie_stats_t gc_passes_wait(bookie_t *bk, uint64_t passes)
{
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    return stats_wait(bk, st_passes, st.gc_passes + passes);
}

/* Timer passes compact nothing until an interval is due (BookKeeper's
 * schedule; the defaults are an hour and a day), but remove logs with
 * nothing live; a pass someone asks for compacts at the major threshold. */
static void test_compaction_waits_for_schedule(void)
{
    char *dir = bt_dir("bk-compact-sched");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.gc_interval_ms = 20;
    bookie_t *bk = schedule_setup(&cfg);
    bookie_stats_t st = gc_passes_wait(bk, 3);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 0);
    CU_ASSERT_EQUAL(st.entry_logs, 2);
    CU_ASSERT_EQUAL(bt_delete(bk, 11), 0); /* the first log: nothing live now */
    st = gc_passes_wait(bk, 2);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 1);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0); /* asked for: major threshold, 0.5 */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 30 * 3000);
    for (int e = 0; e < 30; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 13, e, 3000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* When its interval is due, a minor compaction takes the log below its
 * threshold (0.2) and leaves the 30 %-live one; a major one takes both. */
static void test_compaction_minor_and_major(void)
{
    char *dir = bt_dir("bk-compact-minor");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.gc_interval_ms = 20;
    cfg.minor_compaction_interval_ms = 50;
    bookie_t *bk = schedule_setup(&cfg);
    bookie_stats_t st = stats_wait(bk, st_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 10 * 3000); /* ledger 11: the 10 % log */
    st = gc_passes_wait(bk, 8);                        /* over 150 ms: more minor compactions */
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.entry_logs, 2); /* the 30 % log, and the copies' log */
    bookie_close(bk);
    /* Major due: the 30 % log goes too; minor turned off (threshold 0). */
    cfg.minor_compaction_threshold = 0;
    cfg.major_compaction_interval_ms = 50;
    bk = bt_open(&cfg);
    st = stats_wait(bk, st_compacted, 1); /* counters start again at open */
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 30 * 3000);
    compacted_reads_back(bk);
    for (int e = 0; e < 30; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 13, e, 3000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* The compaction-times file's two values; fails the test if unreadable. */
static void read_times(const char *dir, long long *minor_ms, long long *major_ms)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ledgers/compaction-times", dir);
    FILE *f = fopen(path, "r");
    TEST_REQUIRE(f != NULL);
    CU_ASSERT_EQUAL(fscanf(f, "minor %lld\nmajor %lld\n", minor_ms, major_ms), 2);
    fclose(f);
}

static void write_times(const char *dir, const char *text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ledgers/compaction-times", dir);
    FILE *f = fopen(path, "w");
    TEST_REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* The last compaction times are kept across a restart: a minor compaction
 * due (its last run two hours ago, as the file says) runs after the open, and
 * the time it saves keeps the next open from compacting again. An unreadable
 * file counts the intervals from the open. */
static void test_compaction_times_kept(void)
{
    char *dir = bt_dir("bk-compact-times");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_close(schedule_setup(&cfg));
    int64_t t0 = clock_wall_ms();
    char text[128];
    snprintf(text, sizeof text, "minor %lld\nmajor %lld\n", (long long)(t0 - 2 * 3600 * 1000),
             (long long)t0);
    write_times(dir, text);
    cfg.gc_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st = stats_wait(bk, st_compacted, 1);
    CU_ASSERT_EQUAL(st.gc_compacted_bytes, 10 * 3000); /* minor: the 10 % log only */
    bookie_close(bk);
    long long mi = 0, ma = 0;
    read_times(dir, &mi, &ma);
    CU_ASSERT_TRUE(mi >= t0);
    CU_ASSERT_TRUE(ma <= t0);             /* no major ran */
    cfg.minor_compaction_threshold = 0.5; /* would take the 30 % log if it ran */
    cfg.major_compaction_threshold = 0.5;
    bk = bt_open(&cfg);
    st = gc_passes_wait(bk, 5);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0); /* the minor one ran an instant ago */
    bookie_close(bk);
    write_times(dir, "minor yesterday\n");
    bk = bt_open(&cfg);
    st = gc_passes_wait(bk, 5);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0); /* asked for: compacts, and saves its time */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    bookie_close(bk);
    read_times(dir, &mi, &ma);
    CU_ASSERT_TRUE(ma >= t0);
    test_rm_rf(dir);
    free(dir);
}

/* BookKeeper's keys: <= 0 turns a kind off; a threshold above 1, or a minor
 * threshold above the major one with both on, is refused. */
static void test_compaction_config(void)
{
    bookie_config_t c;
    char err[160];
    bookie_config_defaults(&c);
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, 0.1, 7200, 0.4, 86400, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.minor_compaction_interval_ms, 7200u * 1000);
    CU_ASSERT_EQUAL(c.major_compaction_threshold, 0.4);
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, -1, 3600, 0.5, -1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.minor_compaction_threshold, 0);
    CU_ASSERT_EQUAL(c.major_compaction_interval_ms, 0);
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, 0.6, 3600, 0.5, -1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.minor_compaction_threshold, 0.6); /* major off: no order to keep */
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, 0.6, 3600, 0.5, 86400, err, sizeof err),
                    QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "minorCompactionThreshold"));
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, 0.2, 3600, 1.5, 86400, err, sizeof err),
                    QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "majorCompactionThreshold"));
    CU_ASSERT_EQUAL(bookie_config_compaction(&c, 0.2, 400000000, 0.5, 86400, err, sizeof err),
                    QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "minorCompactionInterval"));
}

/* Adds with a bounded window in flight; counts acks. */
typedef struct window {
    bookie_t *bk;
    int nledgers, per_ledger, next, acked, failed, busy;
    size_t len;
    volatile bool done;
} window_t;

static void window_fill(window_t *w);

static void window_add_cb(int rc, int64_t l, int64_t e, void *arg)
{
    (void)l;
    (void)e;
    window_t *w = arg;
    if (rc)
        w->failed++;
    else
        w->acked++;
    if (w->acked + w->failed == w->nledgers * w->per_ledger)
        w->done = true;
}

static void window_fill(window_t *w)
{
    int total = w->nledgers * w->per_ledger;
    while (w->next < total && w->next - (w->acked + w->failed) < 64) {
        int64_t l = 1000 + w->next % w->nledgers, e = w->next / w->nledgers;
        qbuf_t *b = bt_entry(l, e, w->len);
        int rc = bookie_add(w->bk, l, e, e - 1, b, window_add_cb, w);
        qbuf_unref(b);
        if (rc == QE_BUSY) {
            w->busy++;
            return; /* retried after the loop turns */
        }
        CU_ASSERT_EQUAL(rc, 0);
        w->next++;
    }
}

static void window_run(window_t *w)
{
    for (int i = 0; i < 100000 && !w->done; i++) {
        window_fill(w);
        test_run_for(bt_loop, 0.001);
    }
    TEST_REQUIRE(w->done);
}

static void test_many_ledgers_interleaved(void)
{
    char *dir = bt_dir("bk-many");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.entry_log_size_bytes = 64u << 10; /* many logs */
    cfg.write_cache_bytes = 128u << 10;   /* many flushes */
    cfg.journal_file_size_bytes = 128u << 10;
    bookie_t *bk = bt_open(&cfg);
    window_t w = {.bk = bk, .nledgers = 200, .per_ledger = 20, .len = 300};
    window_run(&w);
    CU_ASSERT_EQUAL(w.acked, 4000);
    CU_ASSERT_EQUAL(w.failed, 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.ledgers, 200);
    CU_ASSERT_TRUE(st.entry_logs > 5);
    bookie_close(bk);
    bk = bt_open(&cfg);
    int bad = 0;
    for (int i = 0; i < 4000; i++)
        bad += bt_verify(bk, 1000 + i % 200, i / 200, 300) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    for (int l = 0; l < 200; l += 37) {
        int64_t last = -2;
        CU_ASSERT_EQUAL(bt_last_entry(bk, 1000 + l, &last), 0);
        CU_ASSERT_EQUAL(last, 19);
    }
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_write_cache_overflow_flushes(void)
{
    char *dir = bt_dir("bk-overflow");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 256u << 10; /* flush interval is an hour: only size flushes */
    bookie_t *bk = bt_open(&cfg);
    window_t w = {.bk = bk, .nledgers = 4, .per_ledger = 500, .len = 1000};
    window_run(&w);
    CU_ASSERT_EQUAL(w.acked, 2000);
    CU_ASSERT_EQUAL(w.failed, 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.entry_log_bytes >= 1000u * 1000u); /* several flushes happened */
    int bad = 0;
    for (int i = 0; i < 2000; i++)
        bad += bt_verify(bk, 1000 + i % 4, i / 4, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Pages of path's [off, off + len) in the page cache (mincore), or -1. */
static long bt_pages_cached(const char *path, uint64_t off, uint64_t len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long page = sysconf(_SC_PAGESIZE), n = -1;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
    unsigned char *vec = malloc((len + (uint64_t)page - 1) / (uint64_t)page);
    if (m != MAP_FAILED && vec && mincore(m, len, vec) == 0) {
        n = 0;
        for (uint64_t i = 0; i < (len + (uint64_t)page - 1) / (uint64_t)page; i++)
            n += vec[i] & 1;
    }
    free(vec);
    if (m != MAP_FAILED)
        munmap(m, len);
    close(fd);
    return n;
}

/* Whether dir's file system drops clean pages on POSIX_FADV_DONTNEED (not
 * tmpfs, for one). */
static bool bt_fs_drops_pages(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/drop-probe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char b[65536] = {1};
    bool ok = fd >= 0 && pwrite(fd, b, sizeof b, 0) == (ssize_t)sizeof b && fdatasync(fd) == 0 &&
              posix_fadvise(fd, 0, sizeof b, POSIX_FADV_DONTNEED) == 0;
    if (fd >= 0)
        close(fd);
    ok = ok && bt_pages_cached(path, 0, sizeof b) == 0;
    unlink(path);
    return ok;
}

/* The flush's copies leave the page cache once on the device, but the last
 * entry_log_cache_keep_bytes of the current log; a retired log's all of them.
 * With 0, nothing is dropped. Every entry reads back either way. */
static void test_flush_copies_leave_page_cache(void)
{
    for (int keep = 1; keep >= 0; keep--) {
        char *dir = bt_dir("bk-pcache");
        if (!bt_fs_drops_pages(dir)) {
            fprintf(stderr, "(no page dropping on this file system: not checked) ");
            test_rm_rf(dir);
            free(dir);
            return;
        }
        bookie_config_t cfg;
        bt_config(&cfg, dir);
        cfg.entry_log_size_bytes = 16u << 20;
        cfg.write_cache_bytes = 1u << 20; /* a flush every MiB */
        cfg.entry_log_cache_keep_bytes = keep ? 1u << 20 : 0;
        bookie_t *bk = bt_open(&cfg);
        window_t w = {.bk = bk, .nledgers = 4, .per_ledger = 750, .len = 8000}; /* 24 MB */
        window_run(&w);
        CU_ASSERT_EQUAL(w.acked, 3000);
        bookie_close(bk); /* the last flush (no reads before: they would cache pages) */
        char log1[4096], log2[4096];
        snprintf(log1, sizeof log1, "%s/ledgers/00000001.log", dir);
        snprintf(log2, sizeof log2, "%s/ledgers/00000002.log", dir);
        struct stat st2;
        TEST_REQUIRE(stat(log2, &st2) == 0 && st2.st_size > (6 << 20)); /* log 1 retired */
        long first1 = bt_pages_cached(log1, 0, 4u << 20),
             first2 = bt_pages_cached(log2, 0, 4u << 20);
        long tail2 =
            bt_pages_cached(log2, (uint64_t)(st2.st_size - (512 << 10)) & ~4095ull, 256 << 10);
        long pages = (4 << 20) / sysconf(_SC_PAGESIZE);
        if (keep) {
            CU_ASSERT_EQUAL(first1, 0); /* retired: dropped whole */
            CU_ASSERT_EQUAL(first2, 0); /* behind the kept MiB */
            CU_ASSERT_TRUE(tail2 > 0);  /* kept */
        } else {
            CU_ASSERT_TRUE(first1 > pages / 2);
            CU_ASSERT_TRUE(first2 > pages / 2);
        }
        bk = bt_open(&cfg); /* from the disk */
        int bad = 0;
        for (int i = 0; i < 3000; i += 7)
            bad += bt_verify(bk, 1000 + i % 4, i / 4, 8000) != 0;
        CU_ASSERT_EQUAL(bad, 0);
        bookie_close(bk);
        test_rm_rf(dir);
        free(dir);
    }
}

typedef struct burst {
    int acked, failed;
    volatile bool done;
    int want;
} burst_t;

static void burst_cb(int rc, int64_t l, int64_t e, void *arg)
{
    (void)l;
    (void)e;
    burst_t *b = arg;
    if (rc)
        b->failed++;
    else
        b->acked++;
    if (b->acked + b->failed == b->want)
        b->done = true;
}

/* Adds entries first..first+n-1 of ledger (size bytes each, lac = entry - 1)
 * without waiting, each completing into bu. */
static void burst_add(bookie_t *bk, int64_t ledger, int64_t first, int n, size_t size, burst_t *bu)
{
    for (int64_t e = first; e < first + n; e++) {
        qbuf_t *b = bt_entry(ledger, e, size);
        CU_ASSERT_EQUAL(bookie_add(bk, ledger, e, e - 1, b, burst_cb, bu), 0);
        qbuf_unref(b);
    }
}

/* The ADD records of the journal files (dir/journal), in file and offset order, into
 * ids/lens (at most max); false when a file has anything but zeros after its
 * last record (a torn record, a bad checksum, or a pad left dirty). */
static bool bt_journal_adds(const char *dir, int64_t *ids, uint32_t *lens, int max, int *n)
{
    char jdir[4096];
    snprintf(jdir, sizeof jdir, "%s/journal", dir);
    struct dirent **names;
    int cnt = scandir(jdir, &names, NULL, alphasort);
    TEST_REQUIRE(cnt >= 0);
    bool clean = true;
    *n = 0;
    for (int f = 0; f < cnt; f++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", jdir, names[f]->d_name);
        size_t len = strlen(names[f]->d_name);
        free(names[f]);
        if (len < 4 || strcmp(path + strlen(path) - 4, ".jnl") != 0)
            continue;
        int fd = open(path, O_RDONLY);
        struct stat sb;
        TEST_REQUIRE(fd >= 0 && fstat(fd, &sb) == 0);
        size_t size = (size_t)sb.st_size;
        uint8_t *p = malloc(size ? size : 1);
        TEST_REQUIRE(p != NULL && bk_pread_all(fd, p, size, 0) == 0);
        close(fd);
        size_t off = 0;
        const char *why = NULL;
        int64_t r;
        uint64_t seq = strtoull(path + strlen(jdir) + 1, NULL, 16); /* <seq>.jnl */
        while (off < size && (r = journal_check_record(p + off, size - off, JOURNAL_FORMAT_VERSION,
                                                       seq, &why)) > 0) {
            if (get_le32(p + off + 12) == JREC_ADD && *n < max) {
                ids[*n] = (int64_t)get_le64(p + off + 24);
                lens[(*n)++] = get_le32(p + off + 4);
            }
            off += (size_t)r;
        }
        for (size_t i = off; i < size; i++)
            clean = clean && p[i] == 0;
        free(p);
    }
    free(names);
    return clean;
}

static uint32_t jdio_len(int64_t e)
{
    if (e % 10 == 9)
        return (70u << 10) + (uint32_t)e; /* above JOURNAL_COPY_MAX: copied whole with O_DIRECT */
    return 1 + (uint32_t)((e * 7919) % 3000);
}

/* The same adds with the journal written buffered and with O_DIRECT: the same
 * records, in order, each file ending in zeros; groups of one add and groups
 * of many, entries larger than a group's copy bound, files rolled every 64
 * KiB. Then the journal alone (nothing flushed) replays every entry. */
static void jdio_run(bool odirect)
{
    char *dir = bt_dir(odirect ? "bk-jdio" : "bk-jbuf");
    bool expect_dio = odirect && bt_fs_takes_odirect(dir);
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_odirect = odirect;
    cfg.journal_file_size_bytes = 64u << 10;
    cfg.journal_large_entry_bytes = 0; /* every entry journaled whole */
    cfg.write_cache_bytes = 64u << 20; /* no flush: the journal holds them all */
    enum { ONE = 40, N = 400 };
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < ONE; e++) /* one add per group */
        CU_ASSERT_EQUAL(bt_add(bk, 40, e, e - 1, jdio_len(e)), 0);
    burst_t many = {.want = N - ONE}; /* then groups of many */
    for (int e = ONE; e < N; e++) {
        qbuf_t *b = bt_entry(40, e, jdio_len(e));
        CU_ASSERT_EQUAL(bookie_add(bk, 40, e, e - 1, b, burst_cb, &many), 0);
        qbuf_unref(b);
    }
    TEST_REQUIRE(test_run_until(bt_loop, &many.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(many.acked, N - ONE);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_dio_groups > 0, expect_dio);
    CU_ASSERT_TRUE(st.journal_syncs < (uint64_t)N); /* the burst was grouped */
    CU_ASSERT_EQUAL(st.entry_logs, 0);

    static int64_t ids[N + 8];
    static uint32_t lens[N + 8];
    int n = 0;
    CU_ASSERT_TRUE(bt_journal_adds(dir, ids, lens, N + 8, &n));
    CU_ASSERT_EQUAL(n, N);
    int wrong = 0;
    for (int i = 0; i < n && i < N; i++)
        wrong += ids[i] != i || lens[i] != jdio_len(i);
    CU_ASSERT_EQUAL(wrong, 0);

    /* kill -9 as far as the entry logs go: the journal is all there is */
    bookie_test_abandon(bk);
    bk = bt_open(&cfg);
    int bad = 0;
    for (int e = 0; e < N; e++)
        bad += bt_verify(bk, 40, e, jdio_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_journal_odirect_and_buffered(void)
{
    jdio_run(false);
    jdio_run(true);
}

/* A burst far beyond the write caches: the adds that find no room wait for a
 * flush instead of being refused, and all are stored; at close, adds still
 * waiting get QE_SHUTDOWN. */
static void test_adds_wait_for_room(void)
{
    char *dir = bt_dir("bk-wait");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10; /* 2 MB of adds: ~16 flushes */
    bookie_t *bk = bt_open(&cfg);
    burst_t many = {.want = 2000};
    burst_add(bk, 30, 0, 2000, 1000, &many);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.adds_waiting > 1000);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &many.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(many.acked, 2000);
    CU_ASSERT_EQUAL(many.failed, 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.adds_waited > 1000);
    CU_ASSERT_EQUAL(st.adds_waiting, 0);
    int bad = 0;
    for (int e = 0; e < 2000; e += 97)
        bad += bt_verify(bk, 30, e, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    /* A fenced ledger's waiting adds are refused when their turn comes. */
    burst_t late = {.want = 500};
    burst_add(bk, 31, 0, 500, 1000, &late);
    bt_res_t fr = {0};
    CU_ASSERT_EQUAL(bt_wait(bookie_fence(bk, 31, bt_lac_cb, &fr), &fr), 0);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &late.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(late.acked + late.failed, 500);
    CU_ASSERT_TRUE(late.failed > 0);
    /* Close with adds waiting: each gets its callback. */
    burst_t cut = {.want = 1000};
    burst_add(bk, 32, 0, 1000, 1000, &cut);
    bookie_close(bk);
    CU_ASSERT_TRUE(cut.failed > 0);
    CU_ASSERT_EQUAL(cut.acked + cut.failed, 1000);
    test_rm_rf(dir);
    free(dir);
}

static void test_group_commit(void)
{
    char *dir = bt_dir("bk-group");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_group_wait_us_max = 5u * 1000 * 1000; /* must not be waited for */
    bookie_t *bk = bt_open(&cfg);
    /* A lone add at idle is acknowledged after one write + sync, far before the max wait. */
    bookie_stats_t st0, st1;
    bookie_get_stats(bk, &st0);
    burst_t one = {.want = 1};
    qbuf_t *b = bt_entry(20, 0, 100);
    CU_ASSERT_EQUAL(bookie_add(bk, 20, 0, -1, b, burst_cb, &one), 0);
    qbuf_unref(b);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &one.done, 2.0));
    bookie_get_stats(bk, &st1);
    CU_ASSERT_EQUAL(st1.journal_syncs - st0.journal_syncs, 1);

    burst_t many = {.want = 2000};
    burst_add(bk, 20, 1, 2000, 1000, &many);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &many.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(many.acked, 2000);
    bookie_stats_t st2;
    bookie_get_stats(bk, &st2);
    uint64_t syncs = st2.journal_syncs - st1.journal_syncs;
    CU_ASSERT_TRUE(syncs >= 1 && syncs <= 200);
    CU_ASSERT_EQUAL(st2.adds, 2001);
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 1999, 1000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_busy_bound(void)
{
    char *dir = bt_dir("bk-busy");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.pending_adds_max = 8;
    bookie_t *bk = bt_open(&cfg);
    burst_t bu = {.want = 8};
    int busy = 0;
    for (int e = 0; e < 100; e++) {
        qbuf_t *b = bt_entry(30, e, 100);
        int rc = bookie_add(bk, 30, e, -1, b, burst_cb, &bu);
        qbuf_unref(b);
        if (rc == QE_BUSY)
            busy++;
        else
            CU_ASSERT_EQUAL(rc, 0);
    }
    CU_ASSERT_EQUAL(busy, 92);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &bu.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(bu.acked, 8);
    for (int e = 0; e < 8; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 30, e, 100), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 30, 8, NULL, NULL), QE_NO_ENTRY);
    CU_ASSERT_EQUAL(bt_add(bk, 30, 8, -1, 100), 0); /* room again */
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_journal_error_turns_read_only(void)
{
    char *dir = bt_dir("bk-enospc");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_add(bk, 40, 0, -1, 100), 0);
    bookie_test_fail_journal(bk, -ENOSPC);
    CU_ASSERT_EQUAL(bt_add(bk, 40, 1, 0, 100), -ENOSPC); /* never acknowledged */
    CU_ASSERT_EQUAL(bt_add(bk, 40, 2, 0, 100), QE_READ_ONLY);
    int64_t lac;
    CU_ASSERT_EQUAL(bookie_fence(bk, 40, bt_lac_cb, &lac), QE_READ_ONLY);
    CU_ASSERT_EQUAL(bt_verify(bk, 40, 0, 100), 0); /* reads still served */
    CU_ASSERT_EQUAL(bt_read(bk, 40, 1, NULL, NULL), QE_NO_ENTRY);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 40, 0, 100), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 40, 2, 0, 100), 0); /* a fresh open writes again */
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* No room for the next journal file (ENOSPC at its creation, before any
 * record of the group is written): the adds queued then fail with
 * QE_READ_ONLY, the bookie stays writable, the next add makes the file, and
 * every add acknowledged is there after a restart. Any other error there is
 * the journal's last (read-only). */
static void test_journal_roll_without_room(void)
{
    char *dir = bt_dir("bk-rollspace");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_file_size_bytes = 64u << 10;
    bookie_t *bk = bt_open(&cfg);
    bookie_test_fail_journal_roll(bk, -ENOSPC);
    int64_t e = 0, failed = -1;
    for (; e < 200 && failed < 0; e++) {
        int rc = bt_add(bk, 42, e, e - 1, 1000);
        if (rc == QE_READ_ONLY)
            failed = e;
        else
            CU_ASSERT_EQUAL(rc, 0);
    }
    CU_ASSERT_TRUE(failed > 0); /* the first file took some */
    CU_ASSERT_TRUE(bookie_writable(bk));
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_FALSE(st.read_only);
    for (int64_t k = failed; k < failed + 100; k++) /* the next file, and more */
        CU_ASSERT_EQUAL(bt_add(bk, 42, k, k - 1, 1000), 0);
    CU_ASSERT_TRUE(bt_count_files(dir, "journal", ".jnl", NULL, 0) >= 2);
    bookie_close(bk);
    bk = bt_open(&cfg);
    int bad = 0;
    for (int64_t k = 0; k < failed + 100; k++)
        bad += bt_verify(bk, 42, k, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_test_fail_journal_roll(bk, -EIO);
    int rc = 0;
    for (e = failed + 100; e < failed + 300 && rc == 0; e++)
        rc = bt_add(bk, 42, e, e - 1, 1000);
    CU_ASSERT_EQUAL(rc, -EIO);
    CU_ASSERT_EQUAL(bt_add(bk, 42, e, e - 1, 1000), QE_READ_ONLY);
    CU_ASSERT_FALSE(bookie_writable(bk));
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_flush_error_turns_read_only(void)
{
    char *dir = bt_dir("bk-eio");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10;
    cfg.journal_large_entry_bytes = 0; /* every payload in the write cache: 70 KB fills it */
    bookie_t *bk = bt_open(&cfg);
    bookie_test_fail_flush(bk, -EIO);
    for (int e = 0; e < 20; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 41, e, e - 1, 100), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 41, 20, 19, 70000), 0); /* fills the cache: a flush starts */
    int rc = 0;
    for (int i = 0; i < 500 && rc == 0; i++) { /* that flush fails */
        test_run_for(bt_loop, 0.01);
        burst_t bu = {.want = 1};
        qbuf_t *b = bt_entry(41, 100 + i, 10);
        rc = bookie_add(bk, 41, 100 + i, 0, b, burst_cb, &bu);
        qbuf_unref(b);
        if (rc == 0)
            CU_ASSERT_TRUE(test_run_until(bt_loop, &bu.done, BT_WAIT_S));
    }
    CU_ASSERT_EQUAL(rc, QE_READ_ONLY);
    for (int e = 0; e < 20; e++) /* still readable from memory */
        CU_ASSERT_EQUAL(bt_verify(bk, 41, e, 100), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 41, 20, 70000), 0);
    bookie_close(bk);
    bk = bt_open(&cfg); /* from the journal */
    for (int e = 0; e < 20; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 41, e, 100), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 41, 20, 70000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Waits (on the loop) until bookie_writable is want. */
static bool bt_wait_writable(bookie_t *bk, bool want)
{
    for (int i = 0; i < (int)(BT_WAIT_S * 100) && bookie_writable(bk) != want; i++)
        test_run_for(bt_loop, 0.01);
    return bookie_writable(bk) == want;
}

/* Whether every file a flush appends to is as long as what the bookie counts
 * durable in it: each log's .idx, the flush writer's current log, and
 * ledgers.meta (the flush thread idle). */
static bool bt_files_as_counted(bookie_t *bk)
{
    struct stat st;
    bool ok = true;
    pthread_mutex_lock(&bk->lock);
    for (uint32_t i = 0; i < bk->logs.count; i++) {
        const entry_log_t *log = bk->logs.logs[i];
        if (fstat(log->idx_fd, &st) != 0 || (uint64_t)st.st_size != log->idx_size)
            ok = false;
        if (log == bk->writer.cur &&
            (fstat(log->fd, &st) != 0 || (uint64_t)st.st_size != log->size))
            ok = false;
    }
    pthread_mutex_unlock(&bk->lock);
    if (fstat(bk->meta_fd, &st) != 0 || (uint64_t)st.st_size != bk->meta_size)
        ok = false;
    return ok;
}

/* Idx records in the ledger directory's .idx files. */
static uint64_t bt_idx_records(const char *ldir)
{
    DIR *d = opendir(ldir);
    uint64_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        char path[PATH_MAX + 256];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", ldir, de->d_name);
        if (len > 4 && strcmp(de->d_name + len - 4, ".idx") == 0 && stat(path, &st) == 0)
            n += (uint64_t)st.st_size / ELOG_IDX_RECORD_BYTES;
    }
    if (d)
        closedir(d);
    return n;
}

/* A flush whose step fails for lack of room (ENOSPC) after writing: what the
 * step wrote is cut back, plain adds are refused (recovery adds taken), the
 * frozen entries read from memory, and the same flush runs again a second
 * later from that step; then adds are taken, and every entry is in exactly one
 * idx record. */
static void flush_without_room_run(int step)
{
    char *dir = bt_dir("bk-room");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 256u << 10;
    cfg.journal_large_entry_bytes = 16u << 10;
    cfg.flush_interval_ms = 100;
    bookie_t *bk = bt_open(&cfg);
    char ldir[PATH_MAX];
    snprintf(ldir, sizeof ldir, "%s", bk->ldir);
    bookie_test_fail_flush_step(bk, step, -ENOSPC);
    /* copies (ledger 51) and direct entries (ledger 52, in the direct log) */
    for (int e = 0; e < 20; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 51, e, e - 1, 1000), 0);
    for (int e = 0; e < 2; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 52, e, e - 1, 20000), 0);
    CU_ASSERT_TRUE(bt_wait_writable(bk, false)); /* the periodic flush fails */
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.flush_stalled);
    CU_ASSERT_FALSE(st.read_only);
    CU_ASSERT_EQUAL(st.flush_stalls, 1);
    CU_ASSERT_TRUE(bt_files_as_counted(bk));
    CU_ASSERT_EQUAL(bt_add(bk, 51, 20, 19, 1000), QE_READ_ONLY);
    bt_res_t r = {0};
    qbuf_t *b = bt_entry(53, 0, 100);
    CU_ASSERT_EQUAL(bt_wait(bookie_add_recovery(bk, 53, 0, -1, b, bt_add_cb, &r), &r), 0);
    qbuf_unref(b);
    for (int e = 0; e < 20; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 51, e, 1000), 0);
    for (int e = 0; e < 2; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 52, e, 20000), 0);
    CU_ASSERT_TRUE(bt_wait_writable(bk, true)); /* run again: the room is back */
    bookie_get_stats(bk, &st);
    CU_ASSERT_FALSE(st.flush_stalled);
    CU_ASSERT_EQUAL(st.flush_stalls, 1);
    for (int e = 20; e < 30; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 51, e, e - 1, 1000), 0);
    bookie_close(bk);
    CU_ASSERT_EQUAL(bt_idx_records(ldir), 20 + 2 + 1 + 10);
    bk = bt_open(&cfg);
    int bad = 0;
    for (int e = 0; e < 30; e++)
        bad += bt_verify(bk, 51, e, 1000) != 0;
    for (int e = 0; e < 2; e++)
        bad += bt_verify(bk, 52, e, 20000) != 0;
    bad += bt_verify(bk, 53, 0, 100) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_flush_without_room(void)
{
    flush_without_room_run(FLUSH_STEP_COPIES);
    flush_without_room_run(FLUSH_STEP_DIRECT_IDX);
    flush_without_room_run(FLUSH_STEP_META);
    flush_without_room_run(FLUSH_STEP_CHECKPOINT);
}

/* A flush paced to a crawl (1 KiB a second) does not hold adds back: once the
 * next cache is half full the flush stops pacing, so a burst far beyond the
 * caches is stored whole (without that, each 64-KiB flush took a minute); and
 * a close during a paced flush does not wait for the pace. */
static void test_paced_flush_hurries(void)
{
    char *dir = bt_dir("bk-pace");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10;
    bookie_t *bk = bt_open(&cfg);
    bookie_test_flush_pace(bk, 1024);
    burst_t many = {.want = 1000};
    burst_add(bk, 32, 0, 1000, 1000, &many);
    CU_ASSERT_TRUE(test_run_until(bt_loop, &many.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(many.acked, 1000);
    CU_ASSERT_EQUAL(many.failed, 0);
    /* The flushes' copies (most of 1 MB) went to the device range by range as
     * they were written (elog_writeback), not all at their fdatasync. (Read
     * once the flush thread is done: the burst's last flush has had time.) */
    test_run_for(bt_loop, 0.3);
    CU_ASSERT_TRUE(bk->writer.wb_done >= 256u << 10);
    int bad = 0;
    for (int e = 0; e < 1000; e += 37)
        bad += bt_verify(bk, 32, e, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    /* A fresh bookie, one cache's worth and a little (bt_config: no periodic
     * flush): one flush starts and paces (a minute for its 64 KiB; nothing
     * fills the next cache to hurry it); the close ends the pacing. */
    bk = bt_open(&cfg);
    bookie_test_flush_pace(bk, 1024);
    for (int e = 1000; e < 1070; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 32, e, e - 1, 1000), 0);
    test_run_for(bt_loop, 0.2);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.flushing); /* the stats say so (storage-bench's timeline) */
    uint64_t t0 = clock_mono_us();
    bookie_close(bk);
    CU_ASSERT_TRUE(clock_mono_us() - t0 < 5 * 1000 * 1000);
    bk = bt_open(&cfg);
    bad = 0;
    for (int e = 0; e < 1070; e++)
        bad += bt_verify(bk, 32, e, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_periodic_checkpoint_trims_journal(void)
{
    char *dir = bt_dir("bk-trim");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_file_size_bytes = 64u << 10;
    cfg.flush_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 200; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 50, e, e - 1, 2000), 0); /* ~400 KB: several files */
    int files = 99;
    for (int i = 0; i < 500 && files > 2; i++) {
        test_run_for(bt_loop, 0.01);
        files = bt_count_files(dir, "journal", ".jnl", NULL, 0);
    }
    CU_ASSERT_TRUE(files <= 2);
    /* Removed files are freed in the background (trash.h), then gone. */
    int freeing = 99;
    for (int i = 0; i < 500 && freeing > 0; i++) {
        test_run_for(bt_loop, 0.01);
        freeing = bt_count_files(dir, "journal", BK_TRASH_SUFFIX, NULL, 0);
    }
    CU_ASSERT_EQUAL(freeing, 0);
    bookie_test_abandon(bk); /* the checkpoint alone must make them readable */
    /* What a crash left while a removed file was being freed goes at open. */
    char left[4096];
    snprintf(left, sizeof left, "%s/journal/0000000000000001.jnl" BK_TRASH_SUFFIX, dir);
    FILE *f = fopen(left, "w");
    TEST_REQUIRE(f != NULL);
    fputs("freed in part", f);
    fclose(f);
    bk = bt_open(&cfg);
    CU_ASSERT_NOT_EQUAL(access(left, F_OK), 0);
    int bad = 0;
    for (int e = 0; e < 200; e++)
        bad += bt_verify(bk, 50, e, 2000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_replace_before_fence(void)
{
    char *dir = bt_dir("bk-replace");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_add(bk, 60, 0, -1, 100), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 60, 0, 100), 0); /* now in the read cache */
    CU_ASSERT_EQUAL(bt_add(bk, 60, 0, -1, 250), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 60, 0, 250), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 60, 0, 250), 0); /* the later location wins */
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static int bt_add_recovery(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, size_t n)
{
    bt_res_t r = {0};
    qbuf_t *b = bt_entry(ledger_id, entry_id, n);
    int rc = bookie_add_recovery(bk, ledger_id, entry_id, lac, b, bt_add_cb, &r);
    qbuf_unref(b);
    return bt_wait(rc, &r);
}

/* A fenced ledger refuses plain adds and accepts recovery adds, durably (from
 * the journal and from entry logs); a deleted ledger refuses both. */
static void test_recovery_add_on_fenced(void)
{
    char *dir = bt_dir("bk-recadd");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 3; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 70, e, e - 1, 80), 0);
    int64_t lac = -2, last = -2;
    CU_ASSERT_EQUAL(bt_fence(bk, 70, &lac), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 70, 3, 2, 80), QE_FENCED);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 70, 3, 2, 80), 0);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 70, 4, 3, 80), 0);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 70, 2, 1, 80), 0); /* an existing entry again */
    CU_ASSERT_EQUAL(bt_verify(bk, 70, 3, 80), 0);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 70, &last), 0);
    CU_ASSERT_EQUAL(last, 4);
    CU_ASSERT_EQUAL(bt_add(bk, 70, 5, 4, 80), QE_FENCED); /* still fenced */
    /* On a ledger never seen: recovery adds are accepted too. */
    CU_ASSERT_EQUAL(bt_fence(bk, 71, &lac), 0);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 71, 0, -1, 10), 0);
    bookie_test_abandon(bk); /* only in the journal */

    bk = bt_open(&cfg);
    for (int e = 0; e < 5; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 70, e, 80), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 71, 0, 10), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 70, 5, 4, 80), QE_FENCED);
    CU_ASSERT_EQUAL(bt_delete(bk, 71), 0);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 71, 1, 0, 10), QE_NO_LEDGER);
    bookie_close(bk); /* now in entry logs and ledgers.meta */

    bk = bt_open(&cfg);
    for (int e = 0; e < 5; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 70, e, 80), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 70, 5, 4, 80), QE_FENCED);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A GC pass asked for compacts compaction_setup's log (the first compaction
 * of bk) and ledger 11 reads back; then bk is closed and dir removed. */
static void gc_compacts_then_close(bookie_t *bk, char *dir)
{
    bookie_stats_t st;
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    compacted_reads_back(bk);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Marks bk's disk usage as a check would find it (bookie_test_disk_usage) and
 * waits for the GC pass that check starts; the stats after it. */
static bookie_stats_t disk_mark_pass(bookie_t *bk, double usage)
{
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    uint64_t passes = st.gc_passes;
    bookie_test_disk_usage(bk, usage);
    return stats_wait(bk, st_passes, passes + 1);
}

/* The disk above diskUsageThreshold: plain adds refused (QE_READ_ONLY), what
 * frees space or closes ledgers served (recovery adds, fences, deletes, reads),
 * a GC pass started and no compaction while full; below the low mark (not just
 * below the high one) adds are taken again, and the schedule's compaction runs. */
static void test_disk_full_refuses_adds(void)
{
    char *dir = bt_dir("bk-diskfull");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char before[4096];
    bookie_t *bk = compaction_setup(&cfg, before, sizeof before); /* a log to compact */
    for (int e = 0; e < 3; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 80, e, e - 1, 100), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 82, 0, -1, 100), 0);
    CU_ASSERT_TRUE(bookie_writable(bk));

    bookie_stats_t st = disk_mark_pass(bk, 0.96);
    CU_ASSERT_FALSE(bookie_writable(bk));
    CU_ASSERT_TRUE(st.disk_full);
    CU_ASSERT_FALSE(st.read_only);
    CU_ASSERT_EQUAL(bk_trash_urgency(), 1);
    CU_ASSERT_DOUBLE_EQUAL(st.disk_usage, 0.96, 1e-9);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0); /* no compaction while full */
    CU_ASSERT_EQUAL(bt_add(bk, 80, 3, 2, 100), QE_READ_ONLY);
    CU_ASSERT_EQUAL(bt_add(bk, 81, 0, -1, 100), QE_READ_ONLY);
    CU_ASSERT_EQUAL(bt_add_recovery(bk, 80, 3, 2, 100), 0);
    int64_t lac = -2;
    CU_ASSERT_EQUAL(bt_fence(bk, 80, &lac), 0);
    CU_ASSERT_EQUAL(lac, 2);
    CU_ASSERT_EQUAL(bt_delete(bk, 82), 0);
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 80, e, 100), 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0); /* asked for: still no compaction */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);

    bookie_test_disk_usage(bk, 0.92); /* between the marks: still refused */
    CU_ASSERT_FALSE(bookie_writable(bk));
    CU_ASSERT_EQUAL(bt_add(bk, 81, 0, -1, 100), QE_READ_ONLY);
    bookie_test_disk_usage(bk, 0.89);
    CU_ASSERT_TRUE(bookie_writable(bk));
    bookie_get_stats(bk, &st);
    CU_ASSERT_FALSE(st.disk_full);
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 81, 0, -1, 100), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 81, 0, 100), 0);
    gc_compacts_then_close(bk, dir);
}

/* At diskUsageWarnThreshold (0.90), below the full mark (0.95), the disk is
 * almost full, as BookKeeper's diskAlmostFull: adds are still taken, every
 * check starts a GC pass (when none runs) that compacts as a minor pass does
 * although the minor interval is not due, and major compaction waits, also
 * for a pass asked for; below the mark again, major compaction runs. */
static void test_disk_almost_full(void)
{
    char *dir = bt_dir("bk-diskwarn");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char before[4096];
    bookie_t *bk = compaction_setup(&cfg, before, sizeof before); /* a log 10 % live */
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0);
    bookie_stats_t st = disk_mark_pass(bk, 0.92); /* a minor pass */
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0);       /* removals paced: only while full */
    CU_ASSERT_TRUE(bookie_writable(bk));
    CU_ASSERT_TRUE(st.disk_almost_full);
    CU_ASSERT_FALSE(st.disk_full);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    compacted_reads_back(bk);
    CU_ASSERT_EQUAL(bt_add(bk, 81, 0, -1, 100), 0);
    st = disk_mark_pass(bk, 0.93); /* the next check: another pass */
    CU_ASSERT_TRUE(st.disk_almost_full);
    bookie_test_disk_usage(bk, 0.96); /* full: removals at once */
    CU_ASSERT_EQUAL(bk_trash_urgency(), 1);
    bookie_close(bk);
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0); /* taken back at close */
    test_rm_rf(dir);

    /* a minor threshold below the log's 10 %: only a major pass would take it */
    bt_config(&cfg, dir);
    cfg.minor_compaction_threshold = 0.05;
    bk = compaction_setup(&cfg, before, sizeof before);
    bookie_test_disk_usage(bk, 0.91);
    CU_ASSERT_EQUAL(bt_gc(bk), 0); /* asked for: no major compaction either */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 0);
    bookie_test_disk_usage(bk, 0.85);
    bookie_get_stats(bk, &st);
    CU_ASSERT_FALSE(st.disk_almost_full);
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0);
    gc_compacts_then_close(bk, dir);
}

static void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* bk_trash frees a removed file's blocks a step every 100 ms (4 MiB a step
 * while few files wait), so a 256-MiB file takes 6 s or more; while a
 * bookie's disk is full (bk_trash_urgent) the steps go without pause. */
static void test_trash_paced_unless_urgent(void)
{
    char *dir = bt_dir("bk-trash");
    char path[4096], del[4200];
    snprintf(path, sizeof path, "%s/big.log", dir);
    snprintf(del, sizeof del, "%s" BK_TRASH_SUFFIX, path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    TEST_REQUIRE(fd >= 0);
    TEST_REQUIRE(ftruncate(fd, 256 << 20) == 0); /* sparse: the steps are by size */
    close(fd);
    CU_ASSERT_EQUAL(bk_trash(path), 0);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0); /* gone from its name at once */
    sleep_ms(300);
    CU_ASSERT_EQUAL(access(del, F_OK), 0); /* still being freed, paced */
    bk_trash_urgent(1);
    for (int i = 0; i < 300 && access(del, F_OK) == 0; i++) /* 3 s, not 6 */
        sleep_ms(10);
    CU_ASSERT_NOT_EQUAL(access(del, F_OK), 0);
    bk_trash_urgent(-1);
    CU_ASSERT_EQUAL(bk_trash_urgency(), 0);
    test_rm_rf(dir);
    free(dir);
}

/* The real check (statvfs): at open, after every disk_check_bytes of adds,
 * and on its timer. A mark below any real usage refuses the first add; with
 * the marks at 1 (a disk never that full here) the timer's next check makes a
 * bookie the test marked full writable again. */
static void test_disk_check_measures(void)
{
    char *dir = bt_dir("bk-diskcheck");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    char err[160];
    TEST_REQUIRE(bookie_config_disk(&cfg, 1e-9, 1e-9, 1e-9, 3600 * 1000, err, sizeof err) == 0);
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.disk_full);
    CU_ASSERT_TRUE(st.disk_usage > 0 && st.disk_usage <= 1);
    CU_ASSERT_EQUAL(bt_add(bk, 90, 0, -1, 100), QE_READ_ONLY);
    bookie_close(bk);

    TEST_REQUIRE(bookie_config_disk(&cfg, 1, 1, 1, 3600 * 1000, err, sizeof err) == 0);
    cfg.disk_check_bytes = 64u << 10; /* and after every 64 KiB of adds */
    bk = bt_open(&cfg);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.disk_checks, 1); /* at open */
    for (int e = 0; e < 10; e++)        /* 30 KB: none */
        CU_ASSERT_EQUAL(bt_add(bk, 91, e, e - 1, 3000), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.disk_checks, 1);
    for (int e = 10; e < 25; e++) /* past 64 KiB: one */
        CU_ASSERT_EQUAL(bt_add(bk, 91, e, e - 1, 3000), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.disk_checks, 2);
    bookie_close(bk);

    TEST_REQUIRE(bookie_config_disk(&cfg, 1, 1, 1, 20, err, sizeof err) == 0);
    bk = bt_open(&cfg);
    CU_ASSERT_TRUE(bookie_writable(bk));
    bookie_test_disk_usage(bk, 1.0);
    CU_ASSERT_FALSE(bookie_writable(bk));
    for (int i = 0; i < 500 && !bookie_writable(bk); i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_TRUE(bookie_writable(bk));
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.disk_usage > 0 && st.disk_usage < 1);
    CU_ASSERT_EQUAL(bt_add(bk, 90, 0, -1, 100), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_disk_config(void)
{
    bookie_config_t c;
    char err[160];
    bookie_config_defaults(&c);
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_threshold, 0.95, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_lwm_threshold, 0.90, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_warn_threshold, 0.90, 1e-12);
    CU_ASSERT_EQUAL(c.disk_check_interval_ms, 10000);
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0.8, 0.7, 0.75, 0, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.disk_check_interval_ms, 0);
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_warn_threshold, 0.75, 1e-12);
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0.8, 0.9, 0.75, 1000, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "diskUsageLwmThreshold"));
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 1.5, 0.9, 0.75, 1000, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "diskUsageThreshold"));
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0, 0, 0.75, 1000, err, sizeof err), QE_INVALID);
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0.9, 0.8, 0, 1000, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "diskUsageWarnThreshold"));
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0.9, 0.8, 1.01, 1000, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "diskUsageWarnThreshold"));
    CU_ASSERT_EQUAL(bookie_config_disk(&c, 0.9, 0.8, 0.75, -1, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "diskCheckInterval"));
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_threshold, 0.8, 1e-12); /* refusals change nothing */
    CU_ASSERT_DOUBLE_EQUAL(c.disk_usage_warn_threshold, 0.75, 1e-12);
    c.disk_usage_lwm_threshold = 0.99; /* set by hand: bookie_open refuses it */
    char *dir = bt_dir("bk-diskcfg");
    c.data_dir = dir;
    bookie_t *bk = NULL;
    CU_ASSERT_EQUAL(bookie_open(bt_loop, &c, &bk), QE_INVALID);
    CU_ASSERT_PTR_NULL(bk);
    test_rm_rf(dir);
    free(dir);
}

static uint64_t bt_ndirty(bookie_t *bk)
{
    pthread_mutex_lock(&bk->lock);
    uint64_t n = bk->ledgers.ndirty;
    pthread_mutex_unlock(&bk->lock);
    return n;
}

/* Nothing left to persist and no flush running (loop thread state). */
static bool bt_settled(bookie_t *bk)
{
    return bt_ndirty(bk) == 0 && !bk->flushing && bk->frozen == NULL;
}

static off_t bt_file_size(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ledgers/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void bt_count_cb(int rc, int64_t l, int64_t e, void *arg)
{
    (void)l;
    (void)e;
    int *n = arg;
    n[rc == 0 ? 0 : 1]++;
}

/* A checkpoint persists only the ledgers that changed (the dirty list): with
 * 5000 ledgers known, one more add appends one 48-byte ledgers.meta record. */
static void test_checkpoint_persists_only_changed_ledgers(void)
{
    char *dir = bt_dir("bk-dirty");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.flush_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    enum { NL = 5000 };
    int counts[2] = {0, 0};
    qbuf_t *b = bt_entry(1, 0, 16);
    for (int i = 0; i < NL; i++)
        TEST_REQUIRE(bookie_add(bk, 1000 + i, 0, -1, b, bt_count_cb, counts) == 0);
    qbuf_unref(b);
    for (int i = 0; i < 1000 && counts[0] + counts[1] < NL; i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_EQUAL(counts[0], NL);
    for (int i = 0; i < 500 && !bt_settled(bk); i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_TRUE(bt_settled(bk));
    off_t before = bt_file_size(dir, "ledgers.meta");
    /* Each ledger at least once (twice if a checkpoint fell between its add
     * being queued and completing). */
    CU_ASSERT_TRUE(before >= (off_t)NL * 48 && before <= (off_t)NL * 2 * 48);

    CU_ASSERT_EQUAL(bt_add(bk, 1003, 1, 0, 16), 0); /* raises LAC and last entry */
    CU_ASSERT_TRUE(bt_ndirty(bk) <= 1);
    for (int i = 0; i < 500 && (bt_file_size(dir, "ledgers.meta") == before || !bt_settled(bk));
         i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_EQUAL(bt_file_size(dir, "ledgers.meta"), before + 48);
    CU_ASSERT_TRUE(bt_settled(bk));
    bookie_test_abandon(bk);

    bk = bt_open(&cfg);
    int64_t lac = -2, last = -2;
    CU_ASSERT_EQUAL(bt_read_lac(bk, 1003, &lac), 0);
    CU_ASSERT_EQUAL(lac, 0);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 1003, &last), 0);
    CU_ASSERT_EQUAL(last, 1);
    CU_ASSERT_EQUAL(bt_last_entry(bk, 1000 + NL - 1, &last), 0);
    CU_ASSERT_EQUAL(last, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("bookie", NULL, NULL);
    CU_add_test(s, "add/read round trip 0 B..1 MiB, reopen", test_roundtrip_sizes);
    CU_add_test(s, "cache gauges: write cache, read cache", test_cache_gauges);
    CU_add_test(s, "latency summaries: adds, journal syncs, direct writes", test_latency_summaries);
    CU_add_test(s, "journal replay before any flush", test_replay_before_flush);
    CU_add_test(s, "torn journal tail truncated", test_torn_tail_truncated);
    CU_add_test(s, "corrupt journal record ends replay", test_corrupt_journal_record);
    CU_add_test(s, "journal format 3: another file's records end a file, not the journal",
                test_journal_format3_file_ends);
    CU_add_test(s, "corrupt entry log record", test_corrupt_entry_log_record);
    CU_add_test(s, "fencing survives reopen", test_fencing);
    CU_add_test(s, "lac and last entry", test_lac_and_last_entry);
    CU_add_test(s, "delete + gc removes the log", test_delete_and_gc_removes_log);
    CU_add_test(s, "compaction keeps live entries", test_compaction_keeps_live_entries);
    CU_add_test(s, "GC waits for the reads in flight in a log it removes",
                test_gc_waits_for_reads_in_flight);
    CU_add_test(s, "GC's wait over: the log unlinked under the read, which still reads it",
                test_gc_wait_ends_unlinked);
    CU_add_test(s, "compaction paced: flushes go on, close stops it", test_compaction_paced);
    CU_add_test(s, "compaction waits for its schedule", test_compaction_waits_for_schedule);
    CU_add_test(s, "minor and major compactions", test_compaction_minor_and_major);
    CU_add_test(s, "compaction times kept across a restart", test_compaction_times_kept);
    CU_add_test(s, "compaction keys", test_compaction_config);
    CU_add_test(s, "many ledgers interleaved", test_many_ledgers_interleaved);
    CU_add_test(s, "write cache overflow flushes", test_write_cache_overflow_flushes);
    CU_add_test(s, "the flush's copies leave the page cache behind a kept tail",
                test_flush_copies_leave_page_cache);
    CU_add_test(s, "adds wait for write cache room", test_adds_wait_for_room);
    CU_add_test(s, "group commit", test_group_commit);
    CU_add_test(s, "read bytes in flight bounded", test_read_bytes_bound);
    CU_add_test(s, "pending adds bound", test_busy_bound);
    CU_add_test(s, "journal error turns read-only", test_journal_error_turns_read_only);
    CU_add_test(s, "no room for the next journal file: those adds fail, the next ones go on",
                test_journal_roll_without_room);
    CU_add_test(s, "flush error turns read-only", test_flush_error_turns_read_only);
    CU_add_test(s, "no room for a flush: adds refused, the same flush runs again, nothing lost",
                test_flush_without_room);
    CU_add_test(s, "periodic checkpoint trims the journal", test_periodic_checkpoint_trims_journal);
    CU_add_test(s, "a paced flush hurries for a full cache and for a close",
                test_paced_flush_hurries);
    CU_add_test(s, "replace before fence", test_replace_before_fence);
    CU_add_test(s, "recovery add on a fenced ledger", test_recovery_add_on_fenced);
    CU_add_test(s, "disk full: adds refused until below the low mark", test_disk_full_refuses_adds);
    CU_add_test(s, "disk almost full: GC at every check, no major compaction",
                test_disk_almost_full);
    CU_add_test(s, "removed files freed a step at a time, at once while the disk is full",
                test_trash_paced_unless_urgent);
    CU_add_test(s, "disk usage measured at open and on a timer", test_disk_check_measures);
    CU_add_test(s, "disk usage keys", test_disk_config);
    CU_add_test(s, "journal with O_DIRECT and buffered: the same records",
                test_journal_odirect_and_buffered);
    CU_add_test(s, "checkpoint persists only changed ledgers",
                test_checkpoint_persists_only_changed_ledgers);
    bookie_direct_register();
    bookie_io_gate_register();
    bookie_crash_register();
    bookie_index_register();
}

int main(int argc, char **argv)
{
    bt_loop = ev_loop_new(0);
    log_set_level(LOG_ERROR);
    int rc = test_main(argc, argv, register_suites);
    ev_loop_destroy(bt_loop);
    return rc;
}
