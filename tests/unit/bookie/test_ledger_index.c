/*
 * Tests of the bookie's entry index (ledger_index.h): runs of entries whose
 * idx records follow one another in one .idx file. Covered: appends from one
 * file make one run; a re-add in the middle splits a run and putting the old
 * place back merges it; random puts agree with a per-entry model and leave the
 * fewest runs that model allows; and, through a bookie, that the index of many
 * flushed entries is a few runs per flush, that reads find the entries through
 * their idx records before and after a reopen, and that a damaged idx record
 * makes the read fail rather than serve another entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "storage/bookie/bookie_int.h"
#include "tests/unit/bookie/bookie_test.h"

#define REC ELOG_IDX_RECORD_BYTES

static ledger_t *li_new(void)
{
    ledger_t *l = calloc(1, sizeof *l);
    TEST_REQUIRE(l != NULL);
    l->last_entry = -1;
    return l;
}

static void li_free(ledger_t *l)
{
    free(l->runs);
    free(l);
}

/* The index says entry e is at (log_id, pos). */
static bool li_at(const ledger_t *l, int64_t e, uint32_t log_id, uint64_t pos)
{
    idx_ref_t r;
    return ledger_index_find(l, e, &r) && r.log_id == log_id && r.pos == pos;
}

static void test_index_append_one_run(void)
{
    ledger_t *l = li_new();
    for (int64_t e = 0; e < 100000; e++)
        TEST_REQUIRE(ledger_index_put(l, e, 3, 4096 + (uint64_t)e * REC, 100) == 0);
    CU_ASSERT_EQUAL(l->nruns, 1);
    CU_ASSERT_TRUE(li_at(l, 0, 3, 4096));
    CU_ASSERT_TRUE(li_at(l, 77777, 3, 4096 + 77777u * REC));
    CU_ASSERT_EQUAL(ledger_index_last(l), 99999);
    idx_ref_t r;
    CU_ASSERT_FALSE(ledger_index_find(l, 100000, &r));
    CU_ASSERT_FALSE(ledger_index_find(l, -1, &r));
    CU_ASSERT_EQUAL(ledger_index_max_length(l), 100);
    TEST_REQUIRE(ledger_index_put(l, 5, 9, 0, 70000) == 0); /* a re-add, larger */
    CU_ASSERT_EQUAL(ledger_index_max_length(l), 70000);
    TEST_REQUIRE(ledger_index_put(l, 5, 3, 4096 + 5 * REC, 100) == 0); /* back: one run */
    CU_ASSERT_EQUAL(l->nruns, 1);
    /* The next flush's records in another file, then a gap in the ids. */
    for (int64_t e = 100000; e < 100010; e++)
        TEST_REQUIRE(ledger_index_put(l, e, 4, (uint64_t)(e - 100000) * REC, 100) == 0);
    TEST_REQUIRE(ledger_index_put(l, 100020, 4, 10 * REC, 100) == 0);
    CU_ASSERT_EQUAL(l->nruns, 3);
    CU_ASSERT_FALSE(ledger_index_find(l, 100015, &r));
    CU_ASSERT_TRUE(li_at(l, 100020, 4, 10 * REC));
    CU_ASSERT_EQUAL(ledger_index_last(l), 100020);
    li_free(l);
}

static void test_index_split_and_merge(void)
{
    ledger_t *l = li_new();
    for (int64_t e = 0; e < 10; e++)
        TEST_REQUIRE(ledger_index_put(l, e, 1, (uint64_t)e * REC, 10) == 0);
    /* A re-add of entry 4, copied to log 2: three runs. */
    TEST_REQUIRE(ledger_index_put(l, 4, 2, 0, 10) == 0);
    CU_ASSERT_EQUAL(l->nruns, 3);
    CU_ASSERT_TRUE(li_at(l, 3, 1, 3 * REC));
    CU_ASSERT_TRUE(li_at(l, 4, 2, 0));
    CU_ASSERT_TRUE(li_at(l, 5, 1, 5 * REC));
    /* The same put again changes nothing. */
    TEST_REQUIRE(ledger_index_put(l, 4, 2, 0, 10) == 0);
    CU_ASSERT_EQUAL(l->nruns, 3);
    /* Its old place back: one run again. */
    TEST_REQUIRE(ledger_index_put(l, 4, 1, 4 * REC, 10) == 0);
    CU_ASSERT_EQUAL(l->nruns, 1);
    /* The first and the last entry move: their runs split off at the edges. */
    TEST_REQUIRE(ledger_index_put(l, 0, 5, 0, 10) == 0);
    TEST_REQUIRE(ledger_index_put(l, 9, 5, REC, 10) == 0);
    CU_ASSERT_EQUAL(l->nruns, 3);
    CU_ASSERT_TRUE(li_at(l, 0, 5, 0));
    CU_ASSERT_TRUE(li_at(l, 1, 1, REC));
    CU_ASSERT_TRUE(li_at(l, 8, 1, 8 * REC));
    CU_ASSERT_TRUE(li_at(l, 9, 5, REC));
    /* A gap filled from both sides joins the runs around it. */
    ledger_t *g = li_new();
    TEST_REQUIRE(ledger_index_put(g, 0, 1, 0, 1) == 0);
    TEST_REQUIRE(ledger_index_put(g, 2, 1, 2 * REC, 1) == 0);
    CU_ASSERT_EQUAL(g->nruns, 2);
    TEST_REQUIRE(ledger_index_put(g, 1, 1, REC, 1) == 0);
    CU_ASSERT_EQUAL(g->nruns, 1);
    CU_ASSERT_TRUE(li_at(g, 2, 1, 2 * REC));
    li_free(g);
    li_free(l);
}

/* A small deterministic generator (xorshift64*). */
static uint64_t li_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

#define LI_N 600

typedef struct li_model {
    bool set[LI_N];
    uint32_t log[LI_N];
    uint64_t pos[LI_N];
} li_model_t;

/* The fewest runs the model can be cut into. */
static uint32_t li_model_runs(const li_model_t *m)
{
    uint32_t n = 0;
    for (int e = 0; e < LI_N; e++)
        if (m->set[e] && !(e > 0 && m->set[e - 1] && m->log[e - 1] == m->log[e] &&
                           m->pos[e - 1] + REC == m->pos[e]))
            n++;
    return n;
}

static void test_index_random_against_model(void)
{
    static li_model_t m;
    memset(&m, 0, sizeof m);
    ledger_t *l = li_new();
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    bool ok = true;
    for (int op = 0; op < 20000 && ok; op++) {
        int64_t e = (int64_t)(li_rand(&seed) % LI_N);
        uint32_t log;
        uint64_t pos;
        switch (li_rand(&seed) % 3) {
        case 0: /* where a sequential layout in log 1 puts it: runs join */
            log = 1;
            pos = (uint64_t)e * REC;
            break;
        case 1: /* a sequential layout of log 2, shifted */
            log = 2;
            pos = (uint64_t)(e + 7) * REC;
            break;
        default: /* anywhere */
            log = 3 + (uint32_t)(li_rand(&seed) % 3);
            pos = (li_rand(&seed) % 1000) * REC;
            break;
        }
        ok = ledger_index_put(l, e, log, pos, 1) == 0;
        m.set[e] = true;
        m.log[e] = log;
        m.pos[e] = pos;
        for (int64_t x = 0; x < LI_N && ok; x++) {
            idx_ref_t r;
            bool found = ledger_index_find(l, x, &r);
            ok = found == m.set[x] && (!found || (r.log_id == m.log[x] && r.pos == m.pos[x]));
        }
        ok = ok && l->nruns == li_model_runs(&m);
        for (uint32_t i = 1; i < l->nruns && ok; i++)
            ok = l->runs[i - 1].first + (int64_t)l->runs[i - 1].count <= l->runs[i].first;
        if (!ok)
            fprintf(stderr, "index and model differ after op %d (entry %lld)\n", op, (long long)e);
    }
    CU_ASSERT_TRUE(ok);
    li_free(l);
}

/* Runs held for ledger id (bookie lock). */
static uint32_t li_bookie_runs(bookie_t *bk, int64_t id)
{
    pthread_mutex_lock(&bk->lock);
    const ledger_t *l = ledger_find(&bk->ledgers, id);
    uint32_t n = l ? l->nruns : 0;
    pthread_mutex_unlock(&bk->lock);
    return n;
}

/* Three ledgers written in turn, 200-byte entries, 64 KiB write caches: each
 * ledger's entries of one flush are one run. */
static void test_index_bookie_runs_per_flush(void)
{
    char *dir = bt_dir("bk-runs");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = 64u << 10;
    cfg.read_cache_bytes = 0; /* every read goes to the entry logs */
    bookie_t *bk = bt_open(&cfg);
    enum { N = 3000 };
    for (int64_t e = 0; e < N; e++)
        for (int64_t l = 1; l <= 3; l++)
            TEST_REQUIRE(bt_add(bk, l, e, e - 1, 200) == 0);
    bookie_close(bk); /* flushes what is left */
    /* (200 + 64) bytes an entry in the write cache: ~248 entries a flush. */
    uint32_t flushes = (uint32_t)(3 * N * (200 + WRITE_CACHE_ITEM_OVERHEAD) / (64u << 10)) + 2;
    for (int round = 0; round < 2; round++) {
        bk = bt_open(&cfg);
        for (int64_t l = 1; l <= 3; l++) {
            uint32_t runs = li_bookie_runs(bk, l);
            CU_ASSERT_TRUE(runs >= 1 && runs <= flushes);
            if (round == 0 && l == 1)
                printf("\n    %d entries of ledger 1: %u index runs (at most %u flushes)\n", N,
                       runs, flushes);
            for (int64_t e = 0; e < N; e += 7)
                CU_ASSERT_EQUAL(bt_verify(bk, l, e, 200), 0);
            CU_ASSERT_EQUAL(bt_verify(bk, l, N - 1, 200), 0);
        }
        CU_ASSERT_EQUAL(bt_read(bk, 1, N, NULL, NULL), QE_NO_ENTRY);
        bookie_close(bk);
    }
    test_rm_rf(dir);
    free(dir);
}

/* An idx record changed under an open bookie: the read fails, and no other
 * entry's bytes are served for it. */
static void test_index_damaged_idx_record(void)
{
    char *dir = bt_dir("bk-idxflip");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.read_cache_bytes = 0;
    bookie_t *bk = bt_open(&cfg);
    for (int64_t e = 0; e < 10; e++)
        TEST_REQUIRE(bt_add(bk, 4, e, e - 1, 300) == 0);
    bookie_close(bk);
    bk = bt_open(&cfg);
    char ipath[4096];
    TEST_REQUIRE(bt_count_files(dir, "ledgers", ".idx", ipath, sizeof ipath) == 1);
    bt_flip_byte(ipath, 6 * REC + 8);  /* the entry id of entry 6's record */
    bt_flip_byte(ipath, 3 * REC + 20); /* the offset of entry 3's record */
    CU_ASSERT_EQUAL(bt_read(bk, 4, 6, NULL, NULL), QE_CORRUPT);
    CU_ASSERT_EQUAL(bt_read(bk, 4, 3, NULL, NULL), QE_CORRUPT);
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 5, 300), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 4, 7, 300), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

typedef struct li_reads {
    int done, ok;
} li_reads_t;

static void li_read_cb(int rc, int64_t l, int64_t e, qbuf_t *data, int64_t lac, void *arg)
{
    (void)lac;
    li_reads_t *st = arg;
    st->done++;
    st->ok += rc == 0 && data && bt_check(l, e, data, e == 20 ? 60000 : 1000);
}

/* A read's length is known only once its idx record is read: it counts as
 * the largest entry of its ledger against the bytes in flight, so the bound
 * holds for a ledger of mixed sizes (counted as the average, 20 reads of
 * 1,000-byte entries would all go at once beside a 60,000-byte one). */
static void test_index_reads_counted_as_largest(void)
{
    char *dir = bt_dir("bk-rlargest");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.read_cache_bytes = 0;
    cfg.read_bytes_inflight_max = 100000;
    bookie_t *bk = bt_open(&cfg);
    for (int64_t e = 0; e <= 20; e++)
        TEST_REQUIRE(bt_add(bk, 12, e, e - 1, e == 20 ? 60000 : 1000) == 0);
    bookie_close(bk);
    bk = bt_open(&cfg); /* everything in the index, nothing in the write cache */
    bookie_stats_t b0, b1;
    bookie_get_stats(bk, &b0);
    li_reads_t st = {0};
    for (int64_t e = 0; e < 20; e++)
        CU_ASSERT_EQUAL(bookie_read(bk, 12, e, li_read_cb, &st), 0);
    bookie_get_stats(bk, &b1);
    CU_ASSERT_TRUE(b1.reads_waited - b0.reads_waited >= 18); /* one at a time */
    for (int i = 0; i < 1000 && st.done < 20; i++)
        test_run_for(bt_loop, 0.01);
    CU_ASSERT_EQUAL(st.done, 20);
    CU_ASSERT_EQUAL(st.ok, 20);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

void bookie_index_register(void)
{
    CU_pSuite s = CU_add_suite("bookie index", NULL, NULL);
    CU_add_test(s, "appends from one idx file are one run", test_index_append_one_run);
    CU_add_test(s, "a re-add splits a run; its old place merges it again",
                test_index_split_and_merge);
    CU_add_test(s, "random puts agree with a per-entry model, in the fewest runs",
                test_index_random_against_model);
    CU_add_test(s, "a ledger's entries of one flush are one run; read back after reopen",
                test_index_bookie_runs_per_flush);
    CU_add_test(s, "a damaged idx record fails the read", test_index_damaged_idx_record);
    CU_add_test(s, "a read counts as its ledger's largest entry in flight",
                test_index_reads_counted_as_largest);
}
