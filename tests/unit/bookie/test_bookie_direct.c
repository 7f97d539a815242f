/*
 * Tests of large entries written once (journal_large_entry_bytes): the
 * journal thread writes the entry's record to a direct entry log and only an
 * ADD_REF record to the journal. Covered: replay of references after a crash
 * (reopen without close), small and large entries mixed in order, a torn or
 * missing direct record behind the journal's last reference (truncated, never
 * served), a corrupt one (the journal ends there; after a checkpoint: the read
 * fails with QE_CORRUPT), re-adds across direct and flushed logs (the newest
 * version wins after reopen), GC removal and compaction of direct logs and
 * their pinning while the journal may reference them, the checkpoint version,
 * and switching the feature off and on over the same store.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/journal.h"
#include "tests/unit/bookie/bookie_test.h"

#define DT_LARGE 20000u
#define DT_REC (ELOG_HEADER_BYTES + DT_LARGE) /* one direct record */

static void dt_config(bookie_config_t *cfg, const char *dir)
{
    bt_config(cfg, dir);
    cfg->journal_large_entry_bytes = 16u << 10;
}

/* Entry e of the mixed tests: every third one large. */
static size_t dt_len(int64_t e)
{
    return e % 3 == 0 ? 20000 + (size_t)e * 1000 : 100 + (size_t)e;
}

/* Where the index says (l, e) is, resolved through its idx record. */
typedef struct dt_loc {
    uint32_t log_id;
    uint64_t offset;
    uint32_t length;
} dt_loc_t;

/* The indexed location of (l, e), if any. */
static bool dt_loc(bookie_t *bk, int64_t l, int64_t e, dt_loc_t *out)
{
    pthread_mutex_lock(&bk->lock);
    const ledger_t *led = ledger_find(&bk->ledgers, l);
    idx_ref_t ref;
    bool found = led && !led->deleted && ledger_index_find(led, e, &ref);
    const entry_log_t *log = found ? log_table_find(&bk->logs, ref.log_id) : NULL;
    found = log && entry_log_locate(log, ref.pos, l, e, &out->offset, &out->length) == 0;
    if (found)
        out->log_id = ref.log_id;
    pthread_mutex_unlock(&bk->lock);
    return found;
}

/* Runs the loop until (l, e) is indexed with length len (a flush ran). */
static dt_loc_t dt_wait_indexed(bookie_t *bk, int64_t l, int64_t e, uint32_t len)
{
    dt_loc_t loc = {0};
    for (int i = 0; i < 500; i++) {
        if (dt_loc(bk, l, e, &loc) && loc.length == len)
            return loc;
        test_run_for(bt_loop, 0.01);
    }
    TEST_REQUIRE(dt_loc(bk, l, e, &loc) && loc.length == len);
    return loc;
}

static uint32_t dt_checkpoint_version(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ledgers/checkpoint", dir);
    int fd = open(path, O_RDONLY);
    TEST_REQUIRE(fd >= 0);
    uint8_t b[8];
    TEST_REQUIRE(pread(fd, b, sizeof b, 0) == (ssize_t)sizeof b);
    close(fd);
    return get_le32(b + 4);
}

/* ---------------------------------------------------------------- tests -- */

static void test_direct_replay_mixed(void)
{
    char *dir = bt_dir("bk-direct");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    uint64_t large = 0, small = 0, n = 0;
    for (int l = 1; l <= 2; l++)
        for (int e = 0; e < 30; e++) {
            CU_ASSERT_EQUAL(bt_add(bk, l, e, e - 1, dt_len(e)), 0);
            *(dt_len(e) >= cfg.journal_large_entry_bytes ? &large : &small) +=
                ELOG_HEADER_BYTES + dt_len(e);
            n++;
        }
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_bytes, large);
    CU_ASSERT_TRUE(st.direct_syncs >= 1);
    CU_ASSERT_EQUAL(st.entry_logs, 1); /* only the direct log: nothing flushed yet */
    CU_ASSERT_EQUAL(st.entry_log_bytes, large);
    CU_ASSERT_EQUAL(bt_verify(bk, 1, 3, dt_len(3)), 0); /* from the write cache */
    bookie_test_abandon(bk);                            /* crash: only the journal knows */

    bk = bt_open(&cfg);
    int bad = 0;
    for (int l = 1; l <= 2; l++) {
        for (int e = 0; e < 30; e++)
            bad += bt_verify(bk, l, e, dt_len(e)) != 0;
        int64_t lac = -2, last = -2;
        CU_ASSERT_EQUAL(bt_read_lac(bk, l, &lac), 0);
        CU_ASSERT_EQUAL(lac, 28);
        CU_ASSERT_EQUAL(bt_last_entry(bk, l, &last), 0);
        CU_ASSERT_EQUAL(last, 29);
    }
    CU_ASSERT_EQUAL(bad, 0);
    /* The recovery flush copied the small entries only: large ones stay where
     * the journal thread wrote them. The crash left the direct log with its
     * last O_DIRECT write's padding: cut at open (log_table_cut_tails). */
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.entry_log_bytes, large + small);
    CU_ASSERT_EQUAL(st.entry_logs, 2);
    bookie_close(bk);

    bk = bt_open(&cfg); /* from .idx files only (the journal was trimmed) */
    for (int l = 1; l <= 2; l++)
        for (int e = 0; e < 30; e++)
            bad += bt_verify(bk, l, e, dt_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.entry_log_bytes, large + small);
    CU_ASSERT_EQUAL(st.read_cache_hits, 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 3); /* journal format 3 (the default) */
    bookie_close(bk);
    (void)n;
    test_rm_rf(dir);
    free(dir);
}

/* Five large adds (each its own group) then a crash; *lpath: the direct log. */
static void dt_five_large(const bookie_config_t *cfg, char *lpath, size_t n, bool crash)
{
    bookie_t *bk = bt_open(cfg);
    for (int e = 0; e < 5; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    if (crash)
        bookie_test_abandon(bk);
    else
        bookie_close(bk);
    TEST_REQUIRE(bt_count_files(cfg->data_dir, "ledgers", ".log", lpath, n) == 1);
}

enum { TEAR_MID_PAYLOAD, TEAR_WHOLE_RECORD, TEAR_ZEROS };

/* The crash tore the direct record of the last reference: replay truncates
 * the journal there and never serves the entry; the bookie writes again. */
static void dt_torn(int how)
{
    char *dir = bt_dir("bk-dtorn");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    char lpath[4096];
    dt_five_large(&cfg, lpath, sizeof lpath, true);
    off_t rec4 = 4 * (off_t)DT_REC;
    if (how == TEAR_MID_PAYLOAD) {
        TEST_REQUIRE(truncate(lpath, rec4 + ELOG_HEADER_BYTES + 5000) == 0);
    } else if (how == TEAR_WHOLE_RECORD) {
        TEST_REQUIRE(truncate(lpath, rec4) == 0);
    } else {
        int fd = open(lpath, O_WRONLY);
        TEST_REQUIRE(fd >= 0);
        uint8_t z[4096] = {0};
        TEST_REQUIRE(pwrite(fd, z, sizeof z, rec4 + 8192) == (ssize_t)sizeof z);
        close(fd);
    }
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    qbuf_t *b = NULL;
    CU_ASSERT_EQUAL(bt_read(bk, 7, 4, &b, NULL), QE_NO_ENTRY);
    CU_ASSERT_PTR_NULL(b);
    int64_t last = -2;
    CU_ASSERT_EQUAL(bt_last_entry(bk, 7, &last), 0);
    CU_ASSERT_EQUAL(last, 3);
    CU_ASSERT_EQUAL(bt_add(bk, 7, 4, 3, 30000), 0); /* writable again */
    bookie_close(bk);
    bk = bt_open(&cfg);
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 7, 4, 30000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_direct_torn_mid_payload(void)
{
    dt_torn(TEAR_MID_PAYLOAD);
}

static void test_direct_torn_missing_record(void)
{
    dt_torn(TEAR_WHOLE_RECORD);
}

static void test_direct_torn_zeros(void)
{
    dt_torn(TEAR_ZEROS);
}

/* The journal file of a store with one (the tests' journal files hold all). */
static void dt_journal_path(const char *dir, char *path, size_t n)
{
    TEST_REQUIRE(bt_count_files(dir, "journal", ".jnl", path, n) == 1);
}

/* Zeros from off to off + len of path: what a crash loses of writes that no
 * fdatasync covered. */
static void dt_zero(const char *path, off_t off, size_t len)
{
    int fd = open(path, O_WRONLY);
    TEST_REQUIRE(fd >= 0);
    uint8_t *z = calloc(1, len);
    TEST_REQUIRE(z != NULL);
    TEST_REQUIRE(pwrite(fd, z, len, off) == (ssize_t)len);
    free(z);
    close(fd);
}

#define DT_REF_REC 64 /* an ADD_REF in the journal: 40-byte header, 24-byte payload */

/* Five large adds, a crash, a flipped byte in the third's record; with
 * refs_lost the journal's references of the last four zeroed too (written
 * without a sync, journalLargeEntryOneSync). Either way entries 2-4 are not
 * served: the journal ends at the bad record's reference, or the direct log's
 * read-back ends at the record. The bookie, open, is returned. */
static bookie_t *dt_corrupt_third(const bookie_config_t *cfg, const char *dir, bool refs_lost)
{
    char lpath[4096];
    dt_five_large(cfg, lpath, sizeof lpath, true);
    if (refs_lost) {
        char jpath[4096];
        dt_journal_path(dir, jpath, sizeof jpath);
        dt_zero(jpath, DT_REF_REC, 4 * DT_REF_REC);
    }
    bt_flip_byte(lpath, 2 * (off_t)DT_REC + ELOG_HEADER_BYTES + 100);
    bookie_t *bk = bt_open(cfg);
    for (int e = 0; e < 2; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    for (int e = 2; e < 5; e++)
        CU_ASSERT_EQUAL(bt_read(bk, 7, e, NULL, NULL), QE_NO_ENTRY);
    return bk;
}

/* A flipped byte in the record of a reference in the middle of the journal:
 * the journal ends there, as at a corrupt journal record; the entry is not
 * served. After a checkpoint (read from the log by the index): QE_CORRUPT. */
static void test_direct_corrupt_payload(void)
{
    char *dir = bt_dir("bk-dflip");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    bookie_t *bk = dt_corrupt_third(&cfg, dir, false);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);

    dir = bt_dir("bk-dflip2");
    dt_config(&cfg, dir);
    char lpath[4096];
    dt_five_large(&cfg, lpath, sizeof lpath, false); /* indexed by the checkpoint */
    bt_flip_byte(lpath, 2 * (off_t)DT_REC + ELOG_HEADER_BYTES + 100);
    bk = bt_open(&cfg);
    qbuf_t *b = NULL;
    CU_ASSERT_EQUAL(bt_read(bk, 7, 2, &b, NULL), QE_CORRUPT);
    CU_ASSERT_PTR_NULL(b);
    for (int e = 0; e < 5; e++)
        if (e != 2)
            CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A large entry, durable in its direct log when acknowledged, keeps no payload
 * in the write cache: 2.4 MB of them fit a 256 KiB cache with no flush and no
 * add waiting, and reads of them (not indexed yet) come from the direct log. */
static void test_direct_no_payload_in_write_cache(void)
{
    char *dir = bt_dir("bk-dmem");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.write_cache_bytes = 256u << 10; /* flush interval: an hour (bt_config) */
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 40; e++) /* one at a time: only the write cache could fill */
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, 60000), 0);
    CU_ASSERT_TRUE(bk->active->bytes <= 40u * WRITE_CACHE_ITEM_OVERHEAD);
    bookie_stats_t st0, st1;
    bookie_get_stats(bk, &st0);
    CU_ASSERT_EQUAL(st0.adds_waited, 0);
    dt_loc_t loc;
    CU_ASSERT_FALSE(dt_loc(bk, 7, 39, &loc)); /* not flushed, not indexed */
    for (int e = 0; e < 40; e += 13)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, 60000), 0);
    bookie_get_stats(bk, &st1);
    CU_ASSERT_EQUAL(st1.read_cache_hits, st0.read_cache_hits); /* none from memory */
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 7, 39, 60000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

typedef struct dt_reads {
    int done, ok, corrupt;
    int64_t bad;      /* the entry whose record was damaged (-1: none) */
    uint32_t size;    /* the entries' size (0: DT_LARGE) */
    uint64_t idx_ops; /* the idx reads the bookie issued for them */
} dt_reads_t;

static void dt_read_cb(int rc, int64_t l, int64_t e, qbuf_t *b, int64_t lac, void *arg)
{
    (void)lac;
    dt_reads_t *st = arg;
    st->done++;
    if (rc == 0 && b && bt_check(l, e, b, st->size ? st->size : DT_LARGE))
        st->ok++;
    else if (rc == QE_CORRUPT && !b && e == st->bad)
        st->corrupt++;
}

/* Asks for entries 0..n-1 of ledger 7 (of size bytes each) in one loop
 * iteration, as a ledger read does: from the test itself, or (late) from a
 * check watcher that runs before the bookie's, i.e. after its prepare watcher
 * formed this iteration's runs, as the broker's socket flush does; waits for
 * them all; *ops: the disk reads the bookie issued (the idx reads: in the
 * result's idx_ops). */
typedef struct dt_late {
    ev_check w;
    bookie_t *bk;
    int n;
    dt_reads_t *st;
} dt_late_t;

static void dt_late_cb(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)revents;
    dt_late_t *late = w->data;
    ev_check_stop(loop, w);
    for (int e = 0; e < late->n; e++)
        CU_ASSERT_EQUAL(bookie_read(late->bk, 7, e, dt_read_cb, late->st), 0);
}

static dt_reads_t dt_read_all_as(bookie_t *bk, int n, uint32_t size, bool late_ask, int64_t bad,
                                 uint64_t *ops)
{
    dt_reads_t st = {.bad = bad, .size = size};
    bookie_stats_t s0, s1;
    /* no small group journaled within BOOKIE_READ_RUN_QUIET_US: runs allowed */
    test_run_for(bt_loop, 2.0 * BOOKIE_READ_RUN_QUIET_US / 1e6);
    bookie_get_stats(bk, &s0);
    dt_late_t late = {.bk = bk, .n = n, .st = &st};
    if (late_ask) {
        ev_check_init(&late.w, dt_late_cb);
        late.w.data = &late;
        ev_check_start(bt_loop, &late.w);
    } else {
        for (int e = 0; e < n; e++)
            CU_ASSERT_EQUAL(bookie_read(bk, 7, e, dt_read_cb, &st), 0);
    }
    for (int i = 0; i < 1000 && st.done < n; i++)
        test_run_for(bt_loop, 0.01);
    ev_check_stop(bt_loop, &late.w);
    bookie_get_stats(bk, &s1);
    CU_ASSERT_EQUAL(st.done, n);
    CU_ASSERT_EQUAL(s1.disk_read_entries - s0.disk_read_entries, (uint64_t)n);
    *ops = s1.disk_read_ops - s0.disk_read_ops;
    st.idx_ops = s1.disk_idx_read_ops - s0.disk_idx_read_ops;
    return st;
}

static dt_reads_t dt_read_all(bookie_t *bk, int n, int64_t bad, uint64_t *ops)
{
    return dt_read_all_as(bk, n, DT_LARGE, false, bad, ops);
}

/* Large reads of a ledger's next entries, asked for together while the journal
 * writes no small group, share one disk read where the file system takes
 * O_DIRECT (their records follow one another in the direct log): before the
 * flush indexed them (locations from the write cache) and after (idx records);
 * every record is still checked alone, so a damaged one fails its own read and
 * no other. While the journal writes a small group, each is read alone. */
static void test_direct_reads_in_runs(void)
{
    char *dir = bt_dir("bk-druns");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.read_cache_bytes = 0; /* every read from disk */
    bool dio = bt_fs_takes_odirect(dir);
    enum { N = 24 }; /* 24 records of 20,032 bytes: within one run's 1 MiB */
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < N; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    dt_loc_t loc;
    CU_ASSERT_FALSE(dt_loc(bk, 7, 0, &loc)); /* not indexed yet */
    uint64_t ops;
    dt_reads_t st = dt_read_all(bk, N, -1, &ops);
    CU_ASSERT_EQUAL(st.done, N);
    CU_ASSERT_EQUAL(st.ok, N);
    CU_ASSERT_EQUAL(ops, dio ? 1u : (uint64_t)N);
    CU_ASSERT_EQUAL(st.idx_ops, 0); /* locations from the write cache */
    bookie_close(bk);

    char lpath[4096];
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".log", lpath, sizeof lpath) == 1);
    bt_flip_byte(lpath, 5 * (off_t)DT_REC + ELOG_HEADER_BYTES + 100); /* entry 5's payload */
    bk = bt_open(&cfg);
    CU_ASSERT_TRUE(dt_loc(bk, 7, N - 1, &loc)); /* indexed at close */
    st = dt_read_all(bk, N, 5, &ops);
    CU_ASSERT_EQUAL(st.done, N);
    CU_ASSERT_EQUAL(st.ok, N - 1);
    CU_ASSERT_EQUAL(st.corrupt, 1);
    CU_ASSERT_EQUAL(ops, dio ? 1u : (uint64_t)N);
    CU_ASSERT_EQUAL(st.idx_ops, 1); /* their idx records follow one another */
    /* while the journal writes a small group (marked in flight): a read each */
    TEST_REQUIRE(io_gate_write_begin(&bk->gate, 4096));
    st = dt_read_all(bk, N, 5, &ops);
    io_gate_write_end(&bk->gate);
    CU_ASSERT_EQUAL(st.ok, N - 1);
    CU_ASSERT_EQUAL(st.corrupt, 1);
    CU_ASSERT_EQUAL(ops, (uint64_t)N);
    /* one at a time (each delivered before the next is asked): a read each */
    for (int e = 0; e < 3; e++) {
        dt_reads_t one = {.bad = -1};
        bookie_stats_t s0, s1;
        bookie_get_stats(bk, &s0);
        CU_ASSERT_EQUAL(bookie_read(bk, 7, e, dt_read_cb, &one), 0);
        for (int i = 0; i < 1000 && one.done < 1; i++)
            test_run_for(bt_loop, 0.01);
        bookie_get_stats(bk, &s1);
        CU_ASSERT_EQUAL(one.ok, 1);
        CU_ASSERT_EQUAL(s1.disk_read_ops - s0.disk_read_ops, 1);
    }
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Small entries a flush wrote back to back are read in runs too (one buffered
 * read for the 40, their records checked alone: a damaged one fails its own
 * read and no other; their idx records with one read as well, each checked
 * alone likewise), also when they are asked for after the loop's prepare
 * watcher ran (the broker's socket flush asks for more then): they wait for
 * the next iteration, which does not block, instead of going one by one. */
static void test_small_reads_in_runs(void)
{
    char *dir = bt_dir("bk-sruns");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.read_cache_bytes = 0; /* every read from disk */
    enum { N = 40, SIZE = 1000 };
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < N; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, SIZE), 0);
    bookie_close(bk); /* flushed: now in a log, read from the disk */
    bk = bt_open(&cfg);
    uint64_t ops;
    dt_reads_t st = dt_read_all_as(bk, N, SIZE, false, -1, &ops);
    CU_ASSERT_EQUAL(st.ok, N);
    CU_ASSERT_EQUAL(ops, 1);
    CU_ASSERT_EQUAL(st.idx_ops, 1);
    st = dt_read_all_as(bk, N, SIZE, true, -1, &ops);
    CU_ASSERT_EQUAL(st.ok, N);
    CU_ASSERT_EQUAL(ops, 1);
    CU_ASSERT_EQUAL(st.idx_ops, 1);
    bookie_close(bk);

    char lpath[4096];
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".log", lpath, sizeof lpath) == 1);
    bt_flip_byte(lpath, 5 * (off_t)(ELOG_HEADER_BYTES + SIZE) + ELOG_HEADER_BYTES + 100);
    bk = bt_open(&cfg);
    st = dt_read_all_as(bk, N, SIZE, false, 5, &ops);
    CU_ASSERT_EQUAL(st.ok, N - 1);
    CU_ASSERT_EQUAL(st.corrupt, 1);
    CU_ASSERT_EQUAL(ops, 1);
    CU_ASSERT_EQUAL(st.idx_ops, 1);
    bookie_close(bk);

    /* entry 9's idx record damaged (its offset field): the shared idx read still
     * checks each record alone, so entry 9 fails and no other */
    char ipath[4096];
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".idx", ipath, sizeof ipath) == 1);
    bt_flip_byte(ipath, 9 * (off_t)ELOG_IDX_RECORD_BYTES + 16);
    bk = bt_open(&cfg);
    st = dt_read_all_as(bk, N, SIZE, false, 9, &ops);
    CU_ASSERT_EQUAL(st.done, N);
    CU_ASSERT_EQUAL(st.ok, N - 2); /* entry 5's record is still damaged */
    CU_ASSERT_EQUAL(st.corrupt, 1);
    CU_ASSERT_EQUAL(st.idx_ops, 1);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_run_shared_read_fails(void)
{
    char *dir = bt_dir("elog-run");
    bool dio = bt_fs_takes_odirect(dir);
    enum { N = 6 };
    char path[4096];
    snprintf(path, sizeof path, "%s/00000001.log", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    TEST_REQUIRE(fd >= 0);
    uint8_t *data = malloc(DT_LARGE);
    TEST_REQUIRE(data != NULL);
    elog_read_t recs[N];
    for (int e = 0; e < N; e++) {
        memset(data, 'a' + e, DT_LARGE);
        uint8_t h[ELOG_HEADER_BYTES];
        elog_header_make(h, 9, e, data, DT_LARGE);
        TEST_REQUIRE(write(fd, h, sizeof h) == (ssize_t)sizeof h);
        TEST_REQUIRE(write(fd, data, DT_LARGE) == (ssize_t)DT_LARGE);
        recs[e] = (elog_read_t){
            .offset = (uint64_t)e * DT_REC, .length = DT_LARGE, .ledger_id = 9, .entry_id = e};
    }
    close(fd);
    log_table_t t = {.dio_reads = true};
    uint32_t next_id;
    TEST_REQUIRE(log_table_load(&t, dir, &(elog_load_fns_t){0}, &next_id) == 0);
    entry_log_t *log = log_table_find(&t, 1);
    TEST_REQUIRE(log != NULL);
    CU_ASSERT_EQUAL(log->dio_fd >= 0, dio);

    /* whole: one read for the six (with O_DIRECT) */
    CU_ASSERT_EQUAL(entry_log_read_run(log, recs, N), dio ? 1u : (size_t)N);
    for (int e = 0; e < N; e++) {
        CU_ASSERT_EQUAL(recs[e].rc, 0);
        CU_ASSERT_TRUE(recs[e].out && recs[e].out->len == DT_LARGE &&
                       recs[e].out->data[0] == 'a' + e &&
                       recs[e].out->data[DT_LARGE - 1] == 'a' + e);
        qbuf_unref(recs[e].out);
    }
    /* cut inside the last record: the shared read comes up short */
    TEST_REQUIRE(truncate(path, (off_t)(N - 1) * DT_REC + DT_REC / 2) == 0);
    CU_ASSERT_EQUAL(entry_log_read_run(log, recs, N), dio ? 1u + N : (size_t)N);
    for (int e = 0; e < N - 1; e++) {
        CU_ASSERT_EQUAL(recs[e].rc, 0);
        CU_ASSERT_TRUE(recs[e].out && recs[e].out->len == DT_LARGE &&
                       recs[e].out->data[0] == 'a' + e &&
                       recs[e].out->data[DT_LARGE - 1] == 'a' + e);
        qbuf_unref(recs[e].out);
    }
    CU_ASSERT_EQUAL(recs[N - 1].rc, QE_CORRUPT);
    CU_ASSERT_PTR_NULL(recs[N - 1].out);
    /* the records before the cut still share one read */
    CU_ASSERT_EQUAL(entry_log_read_run(log, recs, N - 1), dio ? 1u : (size_t)N - 1);
    for (int e = 0; e < N - 1; e++) {
        CU_ASSERT_EQUAL(recs[e].rc, 0);
        qbuf_unref(recs[e].out);
    }
    log_table_free(&t);
    free(data);
    test_rm_rf(dir);
    free(dir);
}

/* Re-adds (before fencing, or recovery adds) move an entry between a direct
 * log and the flush's log, both ways, whichever has the higher id: after a
 * crash and after a clean reopen, the newest version is the one read. */
static void test_direct_readd_newest_wins(void)
{
    char *dir = bt_dir("bk-dreadd");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.flush_interval_ms = 20;
    cfg.entry_log_size_bytes = 64u << 10; /* direct logs roll after 60 KiB */
    bookie_t *bk = bt_open(&cfg);
    /* Direct log first (id 1), then the flush's log (id 2). */
    CU_ASSERT_EQUAL(bt_add(bk, 5, 0, -1, DT_LARGE), 0);
    dt_loc_t d = dt_wait_indexed(bk, 5, 0, DT_LARGE);
    CU_ASSERT_EQUAL(bt_add(bk, 5, 1, 0, 100), 0);
    dt_loc_t f = dt_wait_indexed(bk, 5, 1, 100);
    CU_ASSERT_TRUE(f.log_id > d.log_id);
    /* Large again: written to direct log 1, below its previous location: copied. */
    CU_ASSERT_EQUAL(bt_add(bk, 5, 1, 0, 30000), 0);
    dt_loc_t c = dt_wait_indexed(bk, 5, 1, 30000);
    CU_ASSERT_TRUE(c.log_id >= f.log_id);
    /* Small again over a direct record: after it. */
    CU_ASSERT_EQUAL(bt_add(bk, 5, 0, 0, 50), 0);
    dt_wait_indexed(bk, 5, 0, 50);

    /* The flush's log first, then newer direct logs. */
    CU_ASSERT_EQUAL(bt_add(bk, 6, 9, -1, 100), 0);
    dt_wait_indexed(bk, 6, 9, 100);
    for (int e = 0; e < 4; e++) /* each in a new direct log */
        CU_ASSERT_EQUAL(bt_add(bk, 6, e, -1, 60000), 0);
    dt_loc_t d2 = dt_wait_indexed(bk, 6, 3, 60000);
    /* Small over it: the flush's current log is older: retired, copy in a new one. */
    CU_ASSERT_EQUAL(bt_add(bk, 6, 3, -1, 10), 0);
    dt_loc_t s2 = dt_wait_indexed(bk, 6, 3, 10);
    CU_ASSERT_TRUE(s2.log_id > d2.log_id);
    bookie_test_abandon(bk);

    for (int round = 0; round < 2; round++) { /* after the crash, then after a clean close */
        bk = bt_open(&cfg);
        CU_ASSERT_EQUAL(bt_verify(bk, 5, 0, 50), 0);
        CU_ASSERT_EQUAL(bt_verify(bk, 5, 1, 30000), 0);
        CU_ASSERT_EQUAL(bt_verify(bk, 6, 3, 10), 0);
        CU_ASSERT_EQUAL(bt_verify(bk, 6, 2, 60000), 0);
        CU_ASSERT_EQUAL(bt_verify(bk, 6, 9, 100), 0);
        bookie_close(bk);
    }
    test_rm_rf(dir);
    free(dir);
}

/* Whether (l, e) is in a write cache still (active or being flushed). */
static bool dt_in_write_cache(bookie_t *bk, int64_t l, int64_t e)
{
    pthread_mutex_lock(&bk->lock);
    bool in =
        write_cache_find(bk->active, l, e) || (bk->frozen && write_cache_find(bk->frozen, l, e));
    pthread_mutex_unlock(&bk->lock);
    return in;
}

/* A re-add replaces a version the read cache holds: once the new one has left
 * the write cache, a read returns it, not the old copy read from disk before.
 * (Adds skip the read cache for entries past the ledger's last one, which it
 * cannot hold; a re-add is not past it.) */
static void test_readd_forgets_read_cache(void)
{
    char *dir = bt_dir("bk-rcreadd");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.flush_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 0, -1, 100), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 1, 0, 110), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 1, 110), 0); /* from disk: now in the read cache */
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 1, 110), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.read_cache_hits, 1);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 1, 0, 120), 0); /* re-added before fencing */
    dt_wait_indexed(bk, 4, 1, 120);
    for (int i = 0; i < 500 && dt_in_write_cache(bk, 4, 1); i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_FALSE(dt_in_write_cache(bk, 4, 1));
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 1, 120), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 4, 2, 1, 130), 0); /* a new entry: past the last one */
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 2, 130), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Direct logs are removed and compacted like any entry log once nothing in
 * the journal can refer to them; before that GC leaves them alone. */
static void test_direct_gc_and_compaction(void)
{
    char *dir = bt_dir("bk-dgc");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 9; e++) /* ledger 10: 90% of the direct log, deleted */
        CU_ASSERT_EQUAL(bt_add(bk, 10, e, e - 1, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 11, 0, -1, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 11, 1, 0, 100), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_delete(bk, 10), 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_compacted, 1);
    CU_ASSERT_EQUAL(st.entry_logs, 2); /* the flush's log, and the copy's new log */
    CU_ASSERT_TRUE(st.entry_log_bytes < 2 * DT_REC + 1000);
    CU_ASSERT_EQUAL(bt_verify(bk, 11, 0, DT_LARGE), 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_verify(bk, 11, 0, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 11, 1, 100), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);

    /* In one run: small direct logs roll (3 records each); deleted, the sealed
     * ones go once a checkpoint is past them, the current one stays pinned. */
    dir = bt_dir("bk-dpin");
    dt_config(&cfg, dir);
    cfg.entry_log_size_bytes = 64u << 10;
    cfg.flush_interval_ms = 20;
    bk = bt_open(&cfg);
    for (int e = 0; e < 10; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 12, e, e - 1, DT_LARGE), 0);
    dt_wait_indexed(bk, 12, 9, DT_LARGE);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 4);
    CU_ASSERT_EQUAL(bt_delete(bk, 12), 0);
    test_run_for(bt_loop, 0.3); /* periodic checkpoints after the delete */
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 3);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 1); /* current: pinned */
    bookie_close(bk);
    bk = bt_open(&cfg); /* nothing in the journal refers to it any more */
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Off (0): entries journaled whole, checkpoint version 1 (journal format 2).
 * A store written either way opens either way: old journals replay, and
 * references replay whatever the setting. Then journal format 3 (version 3)
 * over the same store, and back to format 2. */
static void test_direct_switch_off_and_on(void)
{
    char *dir = bt_dir("bk-dswitch");
    bookie_config_t off, on, v3;
    dt_config(&off, dir);
    off.journal_large_entry_bytes = 0;
    off.journal_format_version = 2;
    dt_config(&on, dir);
    on.journal_format_version = 2;
    dt_config(&v3, dir);
    bookie_t *bk = bt_open(&off);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 0, -1, DT_LARGE), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_bytes, 0);
    CU_ASSERT_EQUAL(st.entry_logs, 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 1);
    bookie_test_abandon(bk);

    bk = bt_open(&on); /* a version 1 journal */
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 0, DT_LARGE), 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 2);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 1, 0, DT_LARGE), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_bytes, DT_REC);
    bookie_test_abandon(bk);

    bk = bt_open(&off); /* references replay with the feature off too */
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 0, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 1, DT_LARGE), 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 1);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 2, 1, 1000), 0);
    bookie_test_abandon(bk);

    bk = bt_open(&v3); /* a format 2 journal replayed, format 3 written */
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 2, 1000), 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 3);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 3, 2, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 4, 3, 1000), 0);
    bookie_test_abandon(bk);

    bk = bt_open(&on); /* a format 3 journal replayed, format 2 written */
    for (int e = 0; e <= 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 20, e, e == 2 || e == 4 ? 1000 : DT_LARGE), 0);
    CU_ASSERT_EQUAL(dt_checkpoint_version(dir), 2);
    CU_ASSERT_EQUAL(bt_add(bk, 20, 5, 4, 1000), 0);
    bookie_test_abandon(bk);
    bk = bt_open(&v3);
    CU_ASSERT_EQUAL(bt_verify(bk, 20, 5, 1000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Whether dir's file system takes an aligned O_DIRECT write. */
static uint8_t dt_byte(int64_t e, uint32_t i)
{
    return (uint8_t)(e * 131 + i * 7 + (i >> 9));
}

/* The direct log writer alone, with and without O_DIRECT: groups of records
 * of odd lengths across several logs (a small max size), each group written
 * from where the last one ended (mid-block), two of 17 and 9 MiB among them,
 * read back (with O_DIRECT, or buffered); a sealed log and, after
 * elog_direct_trim, the current one end exactly after their last record. */
static void dt_writer_run(bool odirect)
{
    char *dir = bt_dir("bk-dwriter");
    bool expect_dio = odirect && bt_fs_takes_odirect(dir);
    log_table_t table = {.dio_reads = odirect}; /* large records read with O_DIRECT too */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    elog_direct_t d;
    TEST_REQUIRE(elog_direct_init(&d, dir, 200000, odirect, &mu, &table) == 0);
    enum { N = 60 };
    uint32_t ids[N], lens[N];
    uint64_t offs[N];
    uint8_t hdr[N][ELOG_HEADER_BYTES];
    uint8_t *data[N];
    for (int e = 0; e < N; e++) {
        lens[e] = 16384 + (uint32_t)(e * 7919 % 30000) + (uint32_t)e;
        if (e == N - 3) /* the stage grows past 16 MiB, and goes back to 1 MiB after */
            lens[e] = 17u << 20;
        if (e == N - 2) /* a reader's buffer grows past 8 MiB, and is freed after */
            lens[e] = 9u << 20;
        data[e] = malloc(lens[e]);
        for (uint32_t i = 0; i < lens[e]; i++)
            data[e][i] = dt_byte(e, i);
    }
    int e = 0, bad = 0;
    while (e < N) {
        struct iovec iov[16];
        int cnt = 0;
        uint64_t start = 0;
        for (int k = 0; k < 1 + e % 4 && e < N; k++, e++) {
            if (k > 0 && elog_direct_needs_roll(&d, lens[e]))
                break; /* a group's records stay in one log */
            uint32_t crc;
            TEST_REQUIRE(elog_direct_reserve(&d, 30, e, data[e], lens[e], 1, (uint64_t)e, hdr[e],
                                             &ids[e], &offs[e], &crc) == 0);
            if (k == 0)
                start = offs[e];
            iov[cnt++] = (struct iovec){hdr[e], ELOG_HEADER_BYTES};
            iov[cnt++] = (struct iovec){data[e], lens[e]};
        }
        CU_ASSERT_EQUAL(elog_direct_write(&d, iov, cnt, start, true), 0);
        elog_direct_publish(&d);
        CU_ASSERT_EQUAL(elog_direct_is_odirect(&d), expect_dio);
    }
    elog_direct_trim(&d);
    for (int i = 0; i < N; i++) {
        const entry_log_t *log = log_table_find(&table, ids[i]);
        qbuf_t *b = NULL;
        if (!log || entry_log_read(log, offs[i], lens[i], 30, i, &b) != 0 || b->len != lens[i] ||
            memcmp(b->data, data[i], lens[i]) != 0)
            bad++;
        if (b)
            qbuf_unref(b);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(table.count >= 3); /* it rolled */
    int dio_readable = 0; /* the records (all >= ELOG_DIO_READ_MIN) were read with O_DIRECT */
    for (uint32_t i = 0; i < table.count; i++)
        dio_readable += table.logs[i]->dio_fd >= 0;
    CU_ASSERT_EQUAL(dio_readable, expect_dio ? (int)table.count : 0);
    for (uint32_t i = 0; i < table.count; i++) {
        const entry_log_t *log = table.logs[i];
        uint64_t end = 0;
        for (int k = 0; k < N; k++)
            if (ids[k] == log->id && offs[k] + ELOG_HEADER_BYTES + lens[k] > end)
                end = offs[k] + ELOG_HEADER_BYTES + lens[k];
        struct stat st;
        CU_ASSERT_TRUE(fstat(log->fd, &st) == 0 && (uint64_t)st.st_size == end);
        CU_ASSERT_EQUAL(log->size, end);
    }
    elog_direct_free(&d);
    log_table_free(&table);
    for (int i = 0; i < N; i++)
        free(data[i]);
    test_rm_rf(dir);
    free(dir);
}

/* ------------------------------------------------------ spare files -- */

static bool dt_exists(const char *dir, const char *sub, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    return access(path, F_OK) == 0;
}

static uint64_t dt_file_size(const char *path)
{
    struct stat st;
    TEST_REQUIRE(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* Spares on (spare.h), with files of a few chunks. */
static void dt_spare_config(bookie_config_t *cfg, const char *dir)
{
    dt_config(cfg, dir);
    cfg->spare_zero_rate_bytes = 256u << 20;
    cfg->spare_idle_ms = 100;
    cfg->journal_file_size_bytes = 1u << 20;
    cfg->entry_log_size_bytes = 2u << 20;
}

/* Entry e of the spare tests: every other one large. */
static size_t dt_spare_len(int64_t e)
{
    return e % 2 ? 20000 + (size_t)(e % 7) * 1000 : 1500 + (size_t)(e % 5);
}

/* Journal files and direct logs taken from zeroed spares (zeroed while the
 * bookie idles between bursts of adds), early and at rolls:
 * the records in them replay and read back; a sealed direct log ends at its
 * last record; after a crash, the zeros after the current direct log's last
 * record are cut at open. */
static void dt_spares_run(bool odirect)
{
    char *dir = bt_dir("bk-spare");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.journal_large_entry_odirect = odirect; /* buffered: no padding to cut the zeros with */
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st;
    int64_t n = 0;
    bool enough = false;
    uint64_t deadline = clock_mono_us() + 30 * 1000000ull;
    while (!enough && clock_mono_us() < deadline) {
        for (int i = 0; i < 150; i++, n++) /* ~1.8 MB: a journal file, most of a log */
            TEST_REQUIRE(bt_add(bk, 1, n, n - 1, dt_spare_len(n)) == 0);
        bookie_get_stats(bk, &st);
        /* the journal thread is idle: every add was acknowledged */
        enough = st.spares_taken_journal >= 2 && st.spares_taken_direct >= 2 &&
                 bk->direct.zeroed_end > bk->direct.wr_off + 4096;
        if (!enough)
            test_run_for(bt_loop, 0.25); /* idle: the spares are zeroed */
    }
    TEST_REQUIRE(enough);
    CU_ASSERT_TRUE(st.spare_zeroed_bytes >= 4 * SPARE_CHUNK_BYTES);
    int bad = 0;
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    /* sealed direct logs end at their last record, as after buffered appends;
     * the first one (no spare yet when it was made) rolled early, not full:
     * its first burst (about 1.7 MB) left room for more */
    uint32_t cur = bk->direct.cur->id;
    uint64_t cur_end = bk->direct.wr_off;
    const entry_log_t *first = NULL;
    pthread_mutex_lock(&bk->lock);
    for (uint32_t i = 0; i < bk->logs.count; i++) {
        const entry_log_t *log = bk->logs.logs[i];
        struct stat fs;
        if (log->id != cur && log->pinned)
            CU_ASSERT_TRUE(fstat(log->fd, &fs) == 0 && (uint64_t)fs.st_size == log->size);
        if (log->pinned && (!first || log->id < first->id))
            first = log;
    }
    CU_ASSERT_TRUE(first && first->id != cur &&
                   first->size + ELOG_HEADER_BYTES + 30000 < cfg.entry_log_size_bytes);
    pthread_mutex_unlock(&bk->lock);
    char lpath[4096];
    snprintf(lpath, sizeof lpath, "%s/ledgers/%08x.log", dir, cur);
    CU_ASSERT_TRUE(dt_file_size(lpath) > cur_end + 4096); /* the spare's zeros after it */
    bookie_test_abandon(bk);                              /* crash */

    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(dt_file_size(lpath), cur_end); /* cut at its last record */
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    pthread_mutex_lock(&bk->lock);
    const entry_log_t *log = log_table_find(&bk->logs, cur);
    CU_ASSERT_TRUE(log && log->size == cur_end);
    pthread_mutex_unlock(&bk->lock);
    CU_ASSERT_EQUAL(bt_add(bk, 1, n, n - 1, 30000), 0); /* writable again */
    bookie_close(bk);
    CU_ASSERT_FALSE(dt_exists(dir, "journal", SPARE_FILE_NAME)); /* removed at close */
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    bk = bt_open(&cfg);
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 1, n, 30000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_spares_taken_and_cut_after_crash(void)
{
    dt_spares_run(true);
    dt_spares_run(false);
}

/* The newest journal file: its seq and path, its size, and in *end where its
 * records end (format 3, checked against its seq). */
typedef struct dt_jfile {
    char path[4096 + 64];
    uint64_t seq, size, end;
    uint8_t *p;
} dt_jfile_t;

static void dt_newest_journal(const char *dir, dt_jfile_t *f)
{
    char jdir[4096];
    snprintf(jdir, sizeof jdir, "%s/journal", dir);
    struct dirent **names;
    int cnt = scandir(jdir, &names, NULL, alphasort);
    TEST_REQUIRE(cnt > 0);
    f->seq = 0;
    for (int i = 0; i < cnt; i++) {
        const char *nm = names[i]->d_name;
        if (strlen(nm) == 20 && strcmp(nm + 16, ".jnl") == 0) {
            f->seq = strtoull(nm, NULL, 16);
            snprintf(f->path, sizeof f->path, "%s/%.20s", jdir, nm);
        }
        free(names[i]);
    }
    free(names);
    TEST_REQUIRE(f->seq > 0);
    f->size = dt_file_size(f->path);
    free(f->p);
    f->p = malloc(f->size ? f->size : 1);
    int fd = open(f->path, O_RDONLY);
    TEST_REQUIRE(f->p && fd >= 0 && bk_pread_all(fd, f->p, f->size, 0) == 0);
    close(fd);
    const char *why;
    int64_t r;
    for (f->end = 0; f->end < f->size && (r = journal_check_record(f->p + f->end, f->size - f->end,
                                                                   3, f->seq, &why)) > 0;)
        f->end += (uint64_t)r;
}

/* Entries of ledger 1 whose records, written for an older file, lie in f at
 * or after `from` (up to max; valid in the file they were written to); in
 * *first, the offset of the first such record. */
static int dt_stale_entries(const dt_jfile_t *f, uint64_t from, int64_t *out, int max,
                            uint64_t *first)
{
    int n = 0;
    *first = UINT64_MAX;
    for (uint64_t o = from; o + JOURNAL_HEADER_BYTES <= f->size && n < max; o++) {
        if (get_le32(f->p + o) != JOURNAL_MAGIC_V3)
            continue;
        const char *why;
        for (uint64_t s = f->seq - 1; s >= 1; s--) {
            int64_t r = journal_check_record(f->p + o, f->size - o, 3, s, &why);
            if (r > 0) {
                if (*first == UINT64_MAX)
                    *first = o;
                if (get_le32(f->p + o + 12) == JREC_ADD && get_le64(f->p + o + 16) == 1)
                    out[n++] = (int64_t)get_le64(f->p + o + 24);
                o += (uint64_t)r - 1;
                break;
            }
        }
    }
    return n;
}

static bool dt_in(const int64_t *v, int n, int64_t x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* Journal format 3: a checkpoint's trimmed journal file is kept as the
 * journal's spare and written over as a next one (no zeros written: the
 * spares are never idle here). A crash in such a file, with older records
 * of ledger 1 after its end whose entries were since re-added with other
 * bytes of the same length: those records are not replayed, every entry
 * reads back as last written. Written buffered (no padding after a group),
 * the crash comes when the file's end is exactly where such an older record
 * starts, which only the seq under the checksum tells from a record of this
 * file (test_journal_format3_file_ends has the record-level cases). */
static void dt_reuse_run(bool odirect)
{
    char *dir = bt_dir("bk-jreuse");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.spare_idle_ms = 3600u * 1000; /* never zeroes: a spare is a trimmed file */
    cfg.flush_interval_ms = 20;
    cfg.journal_odirect = odirect;
    bookie_t *bk = bt_open(&cfg);
    char jdir[4096 + 16];
    snprintf(jdir, sizeof jdir, "%s/journal", dir);
    if (!bt_fs_takes_odirect(jdir)) { /* no spares there */
        bookie_close(bk);
        test_rm_rf(dir);
        free(dir);
        return;
    }
    bookie_stats_t st;
    int64_t n = 0;
    uint64_t deadline = clock_mono_us() + 30 * 1000000ull;
    do { /* about 0.2 MB a burst, files of 1 MiB */
        for (int i = 0; i < 200; i++, n++)
            TEST_REQUIRE(bt_add(bk, 1, n, n - 1, 1000) == 0);
        test_run_for(bt_loop, 0.05); /* flushes: checkpoints trim the journal */
        bookie_get_stats(bk, &st);
    } while (st.spares_taken_journal < 3 && clock_mono_us() < deadline);
    TEST_REQUIRE(st.spares_taken_journal >= 3);
    CU_ASSERT_TRUE(st.spare_jnl_reused >= 3);
    CU_ASSERT_EQUAL(st.spare_zeroed_bytes, 0);
    CU_ASSERT_TRUE(bt_count_files(dir, "journal", ".jnl", NULL, 0) <= 3);

    /* Adds to ledger 2 until the newest file is a reused one with older
     * records of ledger 1 well after its end (384 KiB: the re-adds below
     * take about 67 KB, the search after them up to 300 KB); those entries
     * re-added with ledger 100's bytes. */
    dt_jfile_t f = {.p = NULL};
    int64_t stale[64], m = 0;
    int ns = 0;
    uint64_t first;
    while (ns < 64 && clock_mono_us() < deadline) {
        dt_newest_journal(dir, &f);
        ns = dt_stale_entries(&f, f.end + (384u << 10), stale, 64, &first);
        for (int i = 0; ns < 64 && i < 50; i++, m++)
            TEST_REQUIRE(bt_add(bk, 2, m, m - 1, 1000) == 0);
        test_run_for(bt_loop, 0.01);
    }
    TEST_REQUIRE(ns == 64);
    uint64_t seq = f.seq;
    for (int i = 0; i < ns; i++)
        CU_ASSERT_EQUAL(bt_add_as(bk, 1, stale[i], n - 1, 100, 1000), 0);
    /* buffered: one add (1,040 bytes, as every older record of ledger 1) and
     * a flush (its 40-byte checkpoint marker moves the end's offset modulo
     * 1,040 by one of 26 steps) at a time, until an older record starts
     * right at the end */
    static int64_t after[1024];
    int na = 0;
    while (clock_mono_us() < deadline) {
        dt_newest_journal(dir, &f);
        TEST_REQUIRE(f.seq == seq); /* the same file, the older records still after the end */
        na = dt_stale_entries(&f, f.end, after, 1024, &first);
        if (odirect || first == f.end)
            break;
        TEST_REQUIRE(bt_add(bk, 2, m, m - 1, 1000) == 0);
        m++;
        test_run_for(bt_loop, 0.025);
    }
    CU_ASSERT_TRUE(odirect || first == f.end);
    int reverted = 0; /* re-added entries whose older record lies after the end */
    for (int i = 0; i < na; i++)
        reverted += dt_in(stale, ns, after[i]);
    CU_ASSERT_TRUE(reverted > 0);
    bookie_test_abandon(bk); /* crash */

    bk = bt_open(&cfg);
    int bad = 0;
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify_as(bk, 1, e, dt_in(stale, ns, e) ? 100 : 1, 1000) != 0;
    for (int64_t e = 0; e < m; e++)
        bad += bt_verify(bk, 2, e, 1000) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    free(f.p);
    test_rm_rf(dir);
    free(dir);
}

/* Journal format 2 (journalFormatVersionToWrite=2): trimmed files are freed,
 * never written over (their records would replay). */
static void dt_reuse_format2(void)
{
    char *dir = bt_dir("bk-jreuse2");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.spare_idle_ms = 3600u * 1000;
    cfg.flush_interval_ms = 20;
    cfg.journal_format_version = 2;
    bookie_t *bk = bt_open(&cfg);
    for (int64_t n = 0; n < 4000;) {
        for (int i = 0; i < 200; i++, n++)
            TEST_REQUIRE(bt_add(bk, 1, n, n - 1, 1000) == 0);
        test_run_for(bt_loop, 0.05);
    }
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.spare_jnl_reused, 0);
    CU_ASSERT_EQUAL(st.spares_taken_journal, 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    for (int64_t e = 0; e < 4000; e += 97)
        CU_ASSERT_EQUAL(bt_verify(bk, 1, e, 1000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_journal_files_reused(void)
{
    dt_reuse_run(true);
    dt_reuse_run(false);
    dt_reuse_format2();
}

/* A spare left by an earlier run is removed at open, spares on or off; above
 * the disk's low mark the spares go, below it they come back. */
static void test_spares_left_and_disk_mark(void)
{
    char *dir = bt_dir("bk-spare2");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    for (int off = 0; off <= 1; off++) {
        bookie_t *bk = bt_open(&cfg); /* creates the directories */
        bookie_close(bk);
        const char *subs[] = {"journal", "ledgers"};
        for (int i = 0; i < 2; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s/%s", dir, subs[i], SPARE_FILE_NAME);
            FILE *f = fopen(path, "w");
            TEST_REQUIRE(f != NULL);
            fputs("left by an earlier run", f);
            fclose(f);
        }
        cfg.spare_zero_rate_bytes = off ? 0 : 256u << 20;
        bk = bt_open(&cfg);
        CU_ASSERT_FALSE(dt_exists(dir, "journal", SPARE_FILE_NAME));
        CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
        bookie_close(bk);
    }
    cfg.spare_zero_rate_bytes = 256u << 20;
    bookie_t *bk = bt_open(&cfg);
    int64_t e = 0;
    bool both = false;
    for (int i = 0; i < 100 && !both; i++) { /* writes make the spares' targets */
        for (int k = 0; k < 20; k++, e++)
            TEST_REQUIRE(bt_add(bk, 2, e, e - 1, dt_spare_len(e)) == 0);
        test_run_for(bt_loop, 0.25); /* idle: zeroed */
        both = dt_exists(dir, "journal", SPARE_FILE_NAME) &&
               dt_exists(dir, "ledgers", SPARE_FILE_NAME);
    }
    CU_ASSERT_TRUE(both);
    bookie_test_disk_usage(bk, 0.92); /* above diskUsageLwmThreshold, below the mark */
    for (int i = 0; i < 500 && (dt_exists(dir, "journal", SPARE_FILE_NAME) ||
                                dt_exists(dir, "ledgers", SPARE_FILE_NAME));
         i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_FALSE(dt_exists(dir, "journal", SPARE_FILE_NAME));
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    CU_ASSERT_EQUAL(bt_add(bk, 2, e, e - 1, 100), 0); /* adds are still taken */
    e++;
    bookie_test_disk_usage(bk, 0.5);
    for (int i = 0; i < 500 && !(dt_exists(dir, "journal", SPARE_FILE_NAME) &&
                                 dt_exists(dir, "ledgers", SPARE_FILE_NAME));
         i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_TRUE(dt_exists(dir, "journal", SPARE_FILE_NAME));
    CU_ASSERT_TRUE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* The thread zeroes only while the bookie idles: none under continuous
 * adds (whose rate sets the targets), some once they stop. */
static void test_spares_not_zeroed_under_load(void)
{
    char *dir = bt_dir("bk-spare3");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.spare_idle_ms = 1000;
    bookie_t *bk = bt_open(&cfg);
    bookie_stats_t st;
    int64_t e = 0;
    uint64_t end = clock_mono_us() + 2500000; /* gaps between adds: well below a second */
    while (clock_mono_us() < end && e < 200000) {
        TEST_REQUIRE(bt_add(bk, 3, e, e - 1, dt_spare_len(e)) == 0);
        e++;
    }
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.spare_zeroed_bytes, 0);
    for (int i = 0; i < 60 && st.spare_zeroed_bytes == 0; i++) { /* idle: zeroed */
        test_run_for(bt_loop, 0.1);
        bookie_get_stats(bk, &st);
    }
    CU_ASSERT_TRUE(st.spare_zeroed_bytes > 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* Adds large entries to ledger l from *e on until the direct log rolls to the
 * spare (asserting it took exactly one), then five more: records written over
 * what the spare's file held. */
static void dt_add_until_spare_taken(bookie_t *bk, int64_t l, int64_t *e)
{
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    uint64_t taken = st.spares_taken_direct;
    while (st.spares_taken_direct == taken && *e < 2000) {
        TEST_REQUIRE(bt_add(bk, l, *e, *e - 1, DT_LARGE) == 0);
        (*e)++;
        bookie_get_stats(bk, &st);
    }
    CU_ASSERT_EQUAL(st.spares_taken_direct, taken + 1);
    for (int i = 0; i < 5; i++, (*e)++)
        TEST_REQUIRE(bt_add(bk, l, *e, *e - 1, DT_LARGE) == 0);
}

/* A direct log GC removes with nothing live in it becomes the direct spare
 * instead of being freed (one at a time: a second is freed), and the next
 * direct log is that file written over: every entry reads back, also after a
 * crash, which cuts the old bytes after the last record; above the disk's low
 * mark GC frees such logs as before. */
static void test_gc_log_reused_as_spare(void)
{
    char *dir = bt_dir("bk-reuse");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.spare_idle_ms = 3600u * 1000; /* never idle: the only spare is a reused log */
    cfg.flush_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    int64_t e1 = 0, e2 = 0;
    while (bt_count_files(dir, "ledgers", ".log", NULL, 0) < 4 && e1 < 2000) {
        TEST_REQUIRE(bt_add(bk, 1, e1, e1 - 1, DT_LARGE) == 0);
        e1++;
    }
    TEST_REQUIRE(bt_add(bk, 2, e2, e2 - 1, DT_LARGE) == 0); /* keeps the current log live */
    e2++;
    CU_ASSERT_EQUAL(bt_delete(bk, 1), 0);
    test_run_for(bt_loop, 0.3); /* checkpoints past the sealed logs */
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.spare_logs_reused, 1);
    CU_ASSERT_TRUE(st.gc_logs_removed >= 3);
    CU_ASSERT_EQUAL(st.spare_zeroed_bytes, 0);
    char spath[4096];
    snprintf(spath, sizeof spath, "%s/ledgers/%s", dir, SPARE_FILE_NAME);
    TEST_REQUIRE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    uint64_t spare_size = dt_file_size(spath);
    CU_ASSERT_TRUE(spare_size > cfg.entry_log_size_bytes / 2);
    dt_add_until_spare_taken(bk, 2, &e2);
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    uint32_t cur = bk->direct.cur->id;
    uint64_t cur_end = bk->direct.wr_off;
    char lpath[4096];
    snprintf(lpath, sizeof lpath, "%s/ledgers/%08x.log", dir, cur);
    CU_ASSERT_TRUE(dt_file_size(lpath) >= spare_size); /* its old bytes after the records */
    int bad = 0;
    for (int64_t e = 0; e < e2; e++)
        bad += bt_verify(bk, 2, e, DT_LARGE) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_test_abandon(bk); /* crash */

    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(dt_file_size(lpath), cur_end); /* cut at its last record */
    for (int64_t e = 0; e < e2; e++)
        bad += bt_verify(bk, 2, e, DT_LARGE) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(bt_read(bk, 1, 0, NULL, NULL), QE_NO_LEDGER);
    CU_ASSERT_EQUAL(bt_add(bk, 2, e2, e2 - 1, DT_LARGE), 0);
    e2++;
    /* above the low mark: GC frees what it removes, as before */
    for (int64_t e = 0; e < 300; e++) /* about three logs' worth */
        TEST_REQUIRE(bt_add(bk, 3, e, e - 1, DT_LARGE) == 0);
    TEST_REQUIRE(bt_add(bk, 2, e2, e2 - 1, DT_LARGE) == 0); /* the current log stays live */
    e2++;
    test_run_for(bt_loop, 0.3);
    bookie_get_stats(bk, &st);
    uint64_t removed = st.gc_logs_removed;
    /* (0.92 is above diskUsageWarnThreshold too: the check starts a pass, which
     * may remove ledger 3's logs before the one asked for below) */
    bookie_test_disk_usage(bk, 0.92);
    CU_ASSERT_EQUAL(bt_delete(bk, 3), 0);
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.gc_logs_removed > removed);
    CU_ASSERT_EQUAL(st.spare_logs_reused, 0); /* counted since this open */
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    bookie_test_disk_usage(bk, 0.5);
    for (int64_t e = 0; e < e2; e++)
        bad += bt_verify(bk, 2, e, DT_LARGE) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A log GC compacts becomes the spare too, once a read that found an entry
 * in it before the index moved (held across the pass) is done: the read gets
 * the entry, the next direct log is that file written over, and every entry
 * reads back, also after a crash. */
static void test_compacted_log_reused(void)
{
    char *dir = bt_dir("bk-compreuse");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.spare_idle_ms = 3600u * 1000; /* no zeros: no spare but a reused log */
    cfg.flush_interval_ms = 20;
    bookie_t *bk = bt_open(&cfg);
    int64_t e = 0;
    for (; e < 80; e++) /* ledger 10: most of the first log, deleted */
        TEST_REQUIRE(bt_add(bk, 10, e, e - 1, DT_LARGE) == 0);
    TEST_REQUIRE(bt_add(bk, 11, 0, -1, DT_LARGE) == 0); /* live: the log is compacted */
    int64_t n12 = 0;
    for (; n12 < 150; n12++) /* ledger 12 (live): the first log sealed */
        TEST_REQUIRE(bt_add(bk, 12, n12, n12 - 1, DT_LARGE) == 0);
    CU_ASSERT_EQUAL(bt_delete(bk, 10), 0);
    test_run_for(bt_loop, 0.3); /* checkpoints past the sealed logs */
    bookie_test_hold_reads(bk, true);
    bt_res_t rd = {0}, gc = {0};
    CU_ASSERT_EQUAL(bookie_read(bk, 11, 0, bt_read_cb, &rd), 0);
    CU_ASSERT_EQUAL(bookie_gc_now(bk, bt_done_cb, &gc), 0);
    test_run_for(bt_loop, 0.5);
    CU_ASSERT_FALSE(rd.done); /* from the disk, held */
    CU_ASSERT_FALSE(gc.done); /* waiting for it */
    bookie_test_hold_reads(bk, false);
    TEST_REQUIRE(test_run_until(bt_loop, &rd.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(rd.rc, 0);
    CU_ASSERT_TRUE(bt_check(11, 0, rd.buf, DT_LARGE));
    qbuf_unref(rd.buf);
    TEST_REQUIRE(test_run_until(bt_loop, &gc.done, BT_WAIT_S));
    CU_ASSERT_EQUAL(gc.rc, 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.gc_logs_compacted >= 1);
    CU_ASSERT_EQUAL(st.gc_logs_removed, 0);
    CU_ASSERT_EQUAL(st.spare_logs_reused, 1);
    CU_ASSERT_TRUE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    dt_add_until_spare_taken(bk, 12, &n12);
    int bad = bt_verify(bk, 11, 0, DT_LARGE) != 0;
    for (int64_t k = 0; k < n12; k++)
        bad += bt_verify(bk, 12, k, DT_LARGE) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_test_abandon(bk); /* crash */
    bk = bt_open(&cfg);
    bad = bt_verify(bk, 11, 0, DT_LARGE) != 0;
    for (int64_t k = 0; k < n12; k++)
        bad += bt_verify(bk, 12, k, DT_LARGE) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(bt_read(bk, 10, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A file of n bytes (not zeros) at dir/sub/name. */
static void dt_make_file(const char *dir, const char *sub, const char *name, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    TEST_REQUIRE(fd >= 0);
    char b[4096];
    memset(b, 0x5a, sizeof b);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof b ? n - done : sizeof b;
        TEST_REQUIRE(write(fd, b, k) == (ssize_t)k);
        done += k;
    }
    close(fd);
}

/* fallocate()s ledgers/name to n bytes (its rest unwritten); false where the
 * file system cannot. */
static bool dt_preallocate(const char *dir, const char *name, off_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ledgers/%s", dir, name);
    int fd = open(path, O_WRONLY);
    TEST_REQUIRE(fd >= 0);
    bool ok = fallocate(fd, 0, 0, n) == 0;
    close(fd);
    return ok;
}

static int dt_offer(spares_t *sp, spare_kind_t k, const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ledgers/%s", dir, name);
    return spares_offer(sp, k, path);
}

/* What spares_offer takes (spare.h): a file of the direct kind, at most a
 * direct log's size and at least a chunk, when there is no spare file, the
 * spares are not paused and the directory takes O_DIRECT; anything else is
 * refused and left where it is (GC then frees it). */
static void test_spare_offer_limits(void)
{
    char *dir = bt_dir("bk-offer");
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/ledgers", dir);
    TEST_REQUIRE(mkdir(sub, 0755) == 0);
    if (!bt_fs_takes_odirect(sub)) { /* nothing is ever offered there */
        test_rm_rf(dir);
        free(dir);
        return;
    }
    spare_config_t sc = {.dir = {sub, sub},
                         .size = {4u << 20, 4u << 20},
                         .rate_bytes_per_s = 1u << 20,
                         .idle_us = 3600ull * 1000 * 1000}; /* never zeroes: only offers */
    spares_t *sp = NULL;
    TEST_REQUIRE(spares_start(&sc, &sp) == 0);
    dt_make_file(dir, "ledgers", "big.log", (4u << 20) + 4096);
    dt_make_file(dir, "ledgers", "small.log", SPARE_CHUNK_BYTES - 4096);
    dt_make_file(dir, "ledgers", "a.log", (3u << 20) + 1000);
    dt_make_file(dir, "ledgers", "b.log", 4u << 20);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "big.log"), -EBUSY);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "small.log"), -EBUSY);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "none.log"), -ENOENT);
    spares_set_paused(sp, true);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "a.log"), -EBUSY);
    spares_set_paused(sp, false);
    bk_io_test_refuse_direct(BK_IO_REFUSE_DIRECT_OPEN);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "a.log"), -EBUSY);
    bk_io_test_refuse_direct(0);
    CU_ASSERT_TRUE(dt_exists(dir, "ledgers", "big.log") && dt_exists(dir, "ledgers", "small.log") &&
                   dt_exists(dir, "ledgers", "a.log"));
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));

    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "a.log"), 0);
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", "a.log"));
    CU_ASSERT_TRUE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "b.log"), -EBUSY); /* one spare at a time */
    CU_ASSERT_FALSE(spares_ready(sp, SPARE_DIRECT)); /* 3 MiB: neither a whole log nor 64 MiB */
    char taken[4096 + 16];
    snprintf(taken, sizeof taken, "%s/00000009.log", sub);
    uint64_t zeroed = 0;
    CU_ASSERT_EQUAL(spares_take(sp, SPARE_DIRECT, taken, &zeroed), 0);
    CU_ASSERT_EQUAL(zeroed, 3u << 20); /* its length, whole blocks */
    CU_ASSERT_EQUAL(dt_file_size(taken), (3u << 20) + 1000);
    CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "b.log"), 0); /* the spare was taken */
    CU_ASSERT_TRUE(spares_ready(sp, SPARE_DIRECT)); /* a whole log: worth an early roll */
    spare_stats_t st;
    spares_get_stats(sp, &st);
    CU_ASSERT_EQUAL(st.reused[SPARE_DIRECT], 2);
    CU_ASSERT_EQUAL(st.reused[SPARE_JOURNAL], 0);
    CU_ASSERT_EQUAL(st.taken[SPARE_DIRECT], 1);
    CU_ASSERT_EQUAL(st.zeroed_bytes, 0);
    /* Only its written blocks count (up to the first unwritten extent: a
     * journal file rolled early is preallocated past them), at least a chunk. */
    snprintf(taken, sizeof taken, "%s/0000000a.log", sub);
    CU_ASSERT_EQUAL(spares_take(sp, SPARE_DIRECT, taken, &zeroed), 0);
    dt_make_file(dir, "ledgers", "part.log", SPARE_CHUNK_BYTES / 2);
    dt_make_file(dir, "ledgers", "part2.log", 2u << 20);
    dt_make_file(dir, "ledgers", "unwritten.log", 0);
    if (dt_preallocate(dir, "part.log", 4u << 20) && dt_preallocate(dir, "part2.log", 4u << 20) &&
        dt_preallocate(dir, "unwritten.log", 4u << 20)) {
        CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "unwritten.log"),
                        -EBUSY); /* nothing written */
        CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "part.log"), -EBUSY);
        CU_ASSERT_EQUAL(dt_offer(sp, SPARE_DIRECT, dir, "part2.log"), 0);
        snprintf(taken, sizeof taken, "%s/0000000b.log", sub);
        CU_ASSERT_EQUAL(spares_take(sp, SPARE_DIRECT, taken, &zeroed), 0);
        CU_ASSERT_EQUAL(zeroed, 2u << 20);
        CU_ASSERT_EQUAL(dt_file_size(taken), 4u << 20);
    }
    spares_stop(sp); /* removes the spare not taken */
    CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    test_rm_rf(dir);
    free(dir);
}

/* A file system that refuses O_DIRECT, at open or at the first write: the
 * journal and the direct logs are written buffered, no spare is made (their
 * zeros are written with O_DIRECT only), every entry is back after a crash
 * and, O_DIRECT allowed again, after a restart. */
static void dt_refused_run(int how)
{
    char *dir = bt_dir("bk-nodio");
    bookie_config_t cfg;
    dt_spare_config(&cfg, dir);
    cfg.journal_odirect = true;
    cfg.journal_large_entry_odirect = true;
    bk_io_test_refuse_direct(how);
    bookie_t *bk = bt_open(&cfg);
    int64_t n = 0;
    for (int burst = 0; burst < 4; burst++) { /* a few logs; pauses for the spares */
        for (int i = 0; i < 150; i++, n++)
            TEST_REQUIRE(bt_add(bk, 1, n, n - 1, dt_spare_len(n)) == 0);
        test_run_for(bt_loop, 0.25);
    }
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_dio_groups, 0);
    CU_ASSERT_FALSE(elog_direct_is_odirect(&bk->direct));
    CU_ASSERT_TRUE(st.entry_logs >= 2);
    if (how == BK_IO_REFUSE_DIRECT_OPEN) {
        CU_ASSERT_EQUAL(st.spare_zeroed_bytes, 0);
        CU_ASSERT_EQUAL(st.spares_taken_journal + st.spares_taken_direct, 0);
        CU_ASSERT_FALSE(dt_exists(dir, "journal", SPARE_FILE_NAME));
        CU_ASSERT_FALSE(dt_exists(dir, "ledgers", SPARE_FILE_NAME));
    }
    int bad = 0;
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    bookie_test_abandon(bk); /* crash */
    bk = bt_open(&cfg);      /* still refused: replayed buffered */
    for (int64_t e = 0; e < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(bt_add(bk, 1, n, n - 1, 30000), 0);
    n++;
    bookie_close(bk);
    bk_io_test_refuse_direct(0);
    bk = bt_open(&cfg);
    for (int64_t e = 0; e + 1 < n; e++)
        bad += bt_verify(bk, 1, e, dt_spare_len(e)) != 0;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 1, n - 1, 30000), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 1, n, n - 1, 30000), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_TRUE(st.journal_dio_groups > 0); /* O_DIRECT again */
    CU_ASSERT_TRUE(elog_direct_is_odirect(&bk->direct));
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

static void test_odirect_refused_at_open(void)
{
    dt_refused_run(BK_IO_REFUSE_DIRECT_OPEN);
}

static void test_odirect_refused_at_write(void)
{
    dt_refused_run(BK_IO_REFUSE_DIRECT_WRITE);
}

static void test_direct_writer_odirect(void)
{
    dt_writer_run(true);
}

static void test_direct_writer_buffered(void)
{
    dt_writer_run(false);
}

/* A direct log's blocks are allocated ahead of its records (where the file
 * system can), and freed past the last record when the log is trimmed (at
 * close). When that allocation finds no room (an injected ENOSPC, three
 * times), the entries are journaled whole: acknowledged, the bookie still
 * writable, nothing in the direct log; the next one goes to the direct log
 * again; every entry reads back, also after a reopen (from the journal). */
static void test_direct_alloc_ahead(void)
{
    char *dir = bt_dir("bk-dalloc");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_large_entry_bytes = 16u << 10;
    bookie_t *bk = bt_open(&cfg);
    bookie_test_fail_direct_alloc(bk, 3);
    for (int e = 0; e < 3; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 61, e, e - 1, 40000), 0);
    CU_ASSERT_TRUE(bookie_writable(bk));
    TEST_REQUIRE(bk->direct.cur != NULL); /* made, nothing written to it */
    CU_ASSERT_EQUAL(bk->direct.wr_off, 0);
    CU_ASSERT_EQUAL(bt_add(bk, 61, 3, 2, 40000), 0);
    CU_ASSERT_TRUE(bk->direct.wr_off > 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%08x.log", bk->ldir, (unsigned)bk->direct.cur->id);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    if (!bk->direct.alloc_off) /* allocated ahead, past the file's size */
        CU_ASSERT_TRUE((uint64_t)st.st_blocks * 512 >= (16u << 20) &&
                       (uint64_t)st.st_size < (1u << 20));
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 61, e, 40000), 0);
    bookie_close(bk);
    CU_ASSERT_EQUAL(stat(path, &st), 0); /* trimmed: no block far past its records */
    CU_ASSERT_TRUE((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size + (1u << 20));
    bk = bt_open(&cfg);
    for (int e = 0; e < 4; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 61, e, 40000), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* ------------------------------------------- one sync per large group -- */

/* Six large adds of a new ledger: the first (the ledger's first here, and
 * the direct log's) syncs the journal, the five others only the direct log.
 * Their references lost with the journal's unsynced tail, the reopened bookie
 * reads them back from the direct log; after a clean close, from the index. */
static void test_one_sync_tail_read_back(void)
{
    char *dir = bt_dir("bk-onesync");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    TEST_REQUIRE(cfg.journal_large_entry_one_sync); /* the default */
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 6; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_one_sync_groups, 5);
    CU_ASSERT_EQUAL(st.journal_syncs, 1);
    CU_ASSERT_EQUAL(st.direct_syncs, 6);
    bookie_test_abandon(bk);

    char jpath[4096];
    dt_journal_path(dir, jpath, sizeof jpath);
    dt_zero(jpath, DT_REF_REC, 5 * DT_REF_REC); /* entries 1-5's references */
    bk = bt_open(&cfg);
    for (int e = 0; e < 6; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    int64_t last = -2;
    CU_ASSERT_EQUAL(bt_last_entry(bk, 7, &last), 0);
    CU_ASSERT_EQUAL(last, 5);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_tail_recovered, 5);
    CU_ASSERT_EQUAL(bt_add(bk, 7, 6, 5, DT_LARGE), 0); /* writable, into a new direct log */
    bookie_close(bk);

    bk = bt_open(&cfg); /* the recovery's flush indexed them: nothing to read back */
    for (int e = 0; e < 7; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_tail_recovered, 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A direct record at off of path: ids, DT_LARGE bytes of their fill, the
 * stamp (the log's id, or 0 as in records of the flush and older logs). */
static void dt_put_record(const char *path, off_t off, int64_t l, int64_t e, uint32_t stamp)
{
    uint8_t *rec = malloc(DT_REC);
    TEST_REQUIRE(rec != NULL);
    bt_fill(l, e, rec + ELOG_HEADER_BYTES, DT_LARGE);
    elog_header_make(rec, l, e, rec + ELOG_HEADER_BYTES, DT_LARGE);
    put_le32(rec + 8, 0);
    put_le32(rec + 12, stamp);
    put_le32(rec + 8, crc32c(crc32c(0, rec, ELOG_HEADER_BYTES), rec + ELOG_HEADER_BYTES, DT_LARGE));
    int fd = open(path, O_WRONLY);
    TEST_REQUIRE(fd >= 0);
    TEST_REQUIRE(pwrite(fd, rec, DT_REC, off) == (ssize_t)DT_REC);
    close(fd);
    free(rec);
}

/* What is read back from a direct log's tail: stamped records of known
 * ledgers, up to the first record that is not stamped with the log's id (a
 * previous life's, the flush's) or not intact; nothing of a ledger the
 * bookie does not know (its first add always synced the journal). */
static void test_one_sync_tail_limits(void)
{
    char *dir = bt_dir("bk-onesync-lim");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    char lpath[4096];
    dt_five_large(&cfg, lpath, sizeof lpath, true);
    uint32_t id = 0;
    TEST_REQUIRE(sscanf(strrchr(lpath, '/') + 1, "%8" SCNx32, &id) == 1);
    char jpath[4096];
    dt_journal_path(dir, jpath, sizeof jpath);
    dt_zero(jpath, DT_REF_REC, 4 * DT_REF_REC);
    off_t end = 5 * (off_t)DT_REC;
    dt_put_record(lpath, end, 99, 0, id);             /* an unknown ledger: skipped */
    dt_put_record(lpath, end + DT_REC, 7, 5, id);     /* read back */
    dt_put_record(lpath, end + 2 * DT_REC, 7, 6, 0);  /* no stamp: the end */
    dt_put_record(lpath, end + 3 * DT_REC, 7, 7, id); /* after the end: not read */
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 6; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_read(bk, 7, 6, NULL, NULL), QE_NO_ENTRY);
    CU_ASSERT_EQUAL(bt_read(bk, 7, 7, NULL, NULL), QE_NO_ENTRY);
    CU_ASSERT_EQUAL(bt_read(bk, 99, 0, NULL, NULL), QE_NO_LEDGER);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_tail_recovered, 5);
    bookie_close(bk);

    /* A torn record ends the tail too: entry 2 of five flipped, 3 and 4 lost
     * with it (only the last group can be torn by a crash: no later group was
     * acknowledged). */
    test_rm_rf(dir);
    bookie_close(dt_corrupt_third(&cfg, dir, true));
    test_rm_rf(dir);
    free(dir);
}

/* Groups that open a direct log, or hold a ledger's first add, sync the
 * journal; so after a crash only the newest direct log's tail can lack its
 * references. Logs of three records: nine adds make three logs. */
static void test_one_sync_rolls(void)
{
    char *dir = bt_dir("bk-onesync-roll");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.entry_log_size_bytes = 3 * DT_REC + 100;
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 9; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_add(bk, 8, 0, -1, DT_LARGE), 0); /* a new ledger: synced */
    CU_ASSERT_EQUAL(bt_add(bk, 8, 1, 0, DT_LARGE), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".log", NULL, 0), 4);
    /* synced: 7:0 (a new ledger and log), 7:3, 7:6 (new logs), 8:0 (both); and
     * before the groups of 7:3, 7:6 and 8:0 write into their new log, the
     * references written since the last sync (7:1-2, 7:4-5, 7:7-8) */
    CU_ASSERT_EQUAL(st.journal_one_sync_groups, 11 - 4);
    CU_ASSERT_EQUAL(st.journal_syncs, 4 + 3);
    bookie_test_abandon(bk);

    char jpath[4096];
    dt_journal_path(dir, jpath, sizeof jpath);
    dt_zero(jpath, 10 * DT_REF_REC, DT_REF_REC); /* 8:1's reference, the last */
    bk = bt_open(&cfg);
    for (int e = 0; e < 9; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 8, 0, DT_LARGE), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 8, 1, DT_LARGE), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.direct_tail_recovered, 1);
    bookie_close(bk);

    /* Off: every group syncs both. */
    test_rm_rf(dir);
    cfg.journal_large_entry_one_sync = false;
    bk = bt_open(&cfg);
    for (int e = 0; e < 5; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(st.journal_one_sync_groups, 0);
    CU_ASSERT_EQUAL(st.journal_syncs, 5);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A journal roll syncs the old file first when it holds references written
 * without a sync: replay goes on with the next file after a hole in one, and
 * the next file's references would put the read-back's start past the lost
 * ones. 4-KiB journal files (64 references each): 70 large adds roll once. */
static void test_one_sync_journal_roll(void)
{
    char *dir = bt_dir("bk-onesync-jroll");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    cfg.journal_file_size_bytes = 4096;
    bookie_t *bk = bt_open(&cfg);
    for (int e = 0; e < 70; e++)
        CU_ASSERT_EQUAL(bt_add(bk, 7, e, e - 1, DT_LARGE), 0);
    bookie_stats_t st;
    bookie_get_stats(bk, &st);
    CU_ASSERT_EQUAL(bt_count_files(dir, "journal", ".jnl", NULL, 0), 2);
    CU_ASSERT_EQUAL(st.journal_one_sync_groups, 69); /* all but 7:0 (a new ledger and log) */
    CU_ASSERT_EQUAL(st.journal_syncs, 2);            /* 7:0's group, and the roll's */
    bookie_test_abandon(bk);
    bk = bt_open(&cfg);
    for (int e = 0; e < 70; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, DT_LARGE), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A group of large adds that syncs only its direct log completes as soon as
 * that sync returns, before its references are written into the journal:
 * a journal write that fails then turns the bookie read-only but does not
 * fail the adds, which are durable; they are there after a restart, also
 * with the reference lost (read back from the direct log). With the one
 * sync off the same failure fails the add. */
static void test_one_sync_completes_before_refs(void)
{
    char *dir = bt_dir("bk-onesync-early");
    bookie_config_t cfg;
    dt_config(&cfg, dir);
    for (int one = 1; one >= 0; one--) {
        cfg.journal_large_entry_one_sync = one;
        bookie_t *bk = bt_open(&cfg);
        CU_ASSERT_EQUAL(bt_add(bk, 7, 0, -1, DT_LARGE), 0); /* a new ledger: syncs the journal */
        bookie_test_fail_journal(bk, -EIO);
        int rc = bt_add(bk, 7, 1, 0, DT_LARGE);
        CU_ASSERT_EQUAL(rc, one ? 0 : -EIO);
        rc = bt_add(bk, 7, 2, 1, DT_LARGE); /* the failure reached the bookie or the journal */
        CU_ASSERT(rc == QE_READ_ONLY || rc == -EIO);
        CU_ASSERT_EQUAL(bt_add(bk, 7, 2, 1, DT_LARGE), QE_READ_ONLY);
        CU_ASSERT_EQUAL(bt_verify(bk, 7, 0, DT_LARGE), 0);
        CU_ASSERT_EQUAL(bt_verify(bk, 7, 1, DT_LARGE), one ? 0 : QE_NO_ENTRY);
        bookie_test_abandon(bk);
        if (one) {
            char jpath[4096];
            dt_journal_path(dir, jpath, sizeof jpath);
            dt_zero(jpath, DT_REF_REC, DT_REF_REC); /* 7:1's reference */
        }
        bk = bt_open(&cfg);
        CU_ASSERT_EQUAL(bt_verify(bk, 7, 0, DT_LARGE), 0);
        if (one) {
            CU_ASSERT_EQUAL(bt_verify(bk, 7, 1, DT_LARGE), 0);
            bookie_stats_t st;
            bookie_get_stats(bk, &st);
            CU_ASSERT_EQUAL(st.direct_tail_recovered, 1);
        }
        bookie_close(bk);
        test_rm_rf(dir);
    }
    free(dir);
}

void bookie_direct_register(void)
{
    CU_pSuite s = CU_add_suite("bookie_direct", NULL, NULL);
    CU_add_test(s, "large entries: replay of references after a crash, mixed with small",
                test_direct_replay_mixed);
    CU_add_test(s, "direct log blocks allocated ahead; no room there: journaled whole",
                test_direct_alloc_ahead);
    CU_add_test(s, "torn direct record (mid payload) at the tail: truncated",
                test_direct_torn_mid_payload);
    CU_add_test(s, "missing direct record at the tail: truncated", test_direct_torn_missing_record);
    CU_add_test(s, "zeroed direct record at the tail: truncated", test_direct_torn_zeros);
    CU_add_test(s, "corrupt direct record: never served", test_direct_corrupt_payload);
    CU_add_test(s, "one sync per group of large adds: references lost, read back from the log",
                test_one_sync_tail_read_back);
    CU_add_test(s, "a direct log's tail read back: stamped records of known ledgers, intact",
                test_one_sync_tail_limits);
    CU_add_test(s, "a ledger's first add and a direct log's roll sync the journal; off",
                test_one_sync_rolls);
    CU_add_test(s, "a journal roll syncs the references written without a sync first",
                test_one_sync_journal_roll);
    CU_add_test(s, "one sync: adds complete before their references are written",
                test_one_sync_completes_before_refs);
    CU_add_test(s, "large entries keep no payload in the write cache",
                test_direct_no_payload_in_write_cache);
    CU_add_test(s, "large reads of next entries share one disk read; a bad record fails alone",
                test_direct_reads_in_runs);
    CU_add_test(s, "small reads of next entries share one read, also when asked for late",
                test_small_reads_in_runs);
    CU_add_test(s, "a run whose shared read fails: each record read alone, its own result",
                test_run_shared_read_fails);
    CU_add_test(s, "re-adds across direct and flushed logs: newest wins",
                test_direct_readd_newest_wins);
    CU_add_test(s, "a re-add replaces what the read cache holds", test_readd_forgets_read_cache);
    CU_add_test(s, "GC and compaction of direct logs, pinning", test_direct_gc_and_compaction);
    CU_add_test(s, "feature off and on over one store", test_direct_switch_off_and_on);
    CU_add_test(s, "direct log writer with O_DIRECT: odd lengths, several logs, exact ends",
                test_direct_writer_odirect);
    CU_add_test(s, "direct log writer, buffered (journalLargeEntryDirectIo=false)",
                test_direct_writer_buffered);
    CU_add_test(s, "zeroed spares taken by the journal and direct logs; zeros cut after a crash",
                test_spares_taken_and_cut_after_crash);
    CU_add_test(s, "spares left by an earlier run removed; none above the disk's low mark",
                test_spares_left_and_disk_mark);
    CU_add_test(s, "spares zeroed only while the bookie idles", test_spares_not_zeroed_under_load);
    CU_add_test(s, "a log GC removes kept as the direct spare, written over; crash",
                test_gc_log_reused_as_spare);
    CU_add_test(s, "spares_offer: what it takes, what it leaves", test_spare_offer_limits);
    CU_add_test(s, "journal files trimmed are written over as the next ones; crash",
                test_journal_files_reused);
    CU_add_test(s, "a log GC compacts kept as the spare once its reads are done",
                test_compacted_log_reused);
    CU_add_test(s, "O_DIRECT refused at open: buffered journal and logs, no spares",
                test_odirect_refused_at_open);
    CU_add_test(s, "O_DIRECT refused at the first write: buffered from there",
                test_odirect_refused_at_write);
}
