/*
 * Tests of the bookie's entry index (ledger_index.h): runs of entries whose
 * idx records follow one another in one .idx file. Covered: appends from one
 * file make one run; a re-add in the middle splits a run and putting the old
 * place back merges it; random puts agree with a per-entry model and leave the
 * fewest runs that model allows; and, through a bookie, that the index of many
 * flushed entries is a few runs per flush, that reads find the entries through
 * their idx records before and after a reopen, and that a damaged idx record
 * makes the read fail rather than serve another entry. Index summaries
 * (idx_summary.h): an open from summaries, from summaries of a prefix plus the
 * .idx tails, and from the .idx files alone build the same index; damaged,
 * stale or oversized summaries are set aside; GC removes a log's summary.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/idx_summary.h"
#include "storage/bookie/trash.h"
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
        uint32_t log, count = 1;
        uint64_t pos;
        switch (li_rand(&seed) % 4) {
        case 0: /* where a sequential layout in log 1 puts it: runs join */
            log = 1;
            pos = (uint64_t)e * REC;
            break;
        case 1: /* a sequential layout of log 2, shifted */
            log = 2;
            pos = (uint64_t)(e + 7) * REC;
            break;
        case 2: /* anywhere */
            log = 3 + (uint32_t)(li_rand(&seed) % 3);
            pos = (li_rand(&seed) % 1000) * REC;
            break;
        default: /* a run of up to 40 (an index summary's), anywhere */
            count = 1 + (uint32_t)(li_rand(&seed) % 40);
            if (e + count > LI_N)
                count = (uint32_t)(LI_N - e);
            log = (uint32_t)(li_rand(&seed) % 2) ? 1 : 6;
            pos = (li_rand(&seed) % 2) ? (uint64_t)e * REC : (li_rand(&seed) % 1000) * REC;
            break;
        }
        ok = (count == 1 ? ledger_index_put(l, e, log, pos, 1)
                         : ledger_index_put_run(l, e, count, log, pos, 1)) == 0;
        for (uint32_t i = 0; i < count; i++) {
            m.set[e + i] = true;
            m.log[e + i] = log;
            m.pos[e + i] = pos + (uint64_t)i * REC;
        }
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
    ev_run(bt_loop, EVRUN_NOWAIT); /* large reads go to the readers before the loop waits */
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

/* ------------------------------------------------------ index summaries -- */

static int li_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct li_text {
    char *p;
    size_t len, cap;
} li_text_t;

static void li_printf(li_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void li_printf(li_text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->len + (size_t)n + 1);
        t->p = realloc(t->p, t->cap);
        TEST_REQUIRE(t->p != NULL);
    }
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* Everything an open builds from the entry logs, as text: each ledger's
 * flags, last entry, largest length and runs, each log's bytes per ledger. */
static char *li_dump(bookie_t *bk)
{
    li_text_t t = {0};
    li_printf(&t, "%s", "");
    pthread_mutex_lock(&bk->lock);
    size_t n = qmap64_size(bk->ledgers.map), k = 0;
    int64_t *ids = calloc(n + 1, sizeof *ids);
    TEST_REQUIRE(ids != NULL);
    qmap_iter_t it = {0};
    uint64_t key;
    while (qmap64_next(bk->ledgers.map, &it, &key, NULL))
        ids[k++] = (int64_t)key;
    qsort(ids, k, sizeof *ids, li_cmp_i64);
    for (size_t i = 0; i < k; i++) {
        const ledger_t *l = ledger_find(&bk->ledgers, ids[i]);
        li_printf(&t, "ledger %lld deleted %d fenced %d last %lld max %u:", (long long)l->id,
                  l->deleted, l->fenced, (long long)l->last_entry, l->max_length);
        for (uint32_t r = 0; r < l->nruns; r++)
            li_printf(&t, " %lld+%u@%u:%llu", (long long)l->runs[r].first, l->runs[r].count,
                      l->runs[r].log_id, (unsigned long long)l->runs[r].pos);
        li_printf(&t, "\n");
    }
    for (uint32_t i = 0; i < bk->logs.count; i++) {
        const entry_log_t *log = bk->logs.logs[i];
        li_printf(&t, "log %u idx %llu:", log->id, (unsigned long long)log->idx_size);
        int64_t *pairs = calloc(2 * (size_t)log->ledgers.count + 2, sizeof *pairs);
        TEST_REQUIRE(pairs != NULL);
        uint32_t np = 0;
        for (uint32_t j = 0; j < log->ledgers.cap; j++)
            if (log->ledgers.keys[j]) {
                pairs[2 * np] = (int64_t)log->ledgers.keys[j] - 1;
                pairs[2 * np + 1] = (int64_t)log->ledgers.vals[j];
                np++;
            }
        qsort(pairs, np, 2 * sizeof *pairs, li_cmp_i64);
        for (uint32_t j = 0; j < np; j++)
            li_printf(&t, " %lld=%lld", (long long)pairs[2 * j], (long long)pairs[2 * j + 1]);
        li_printf(&t, "\n");
        free(pairs);
    }
    pthread_mutex_unlock(&bk->lock);
    free(ids);
    return t.p;
}

/* Calls fn(dir/ledgers, name) for each file of dir/ledgers ending in ext. */
static int li_each_file(const char *dir, const char *ext, void (*fn)(const char *, const char *))
{
    char ldir[4096];
    snprintf(ldir, sizeof ldir, "%s/ledgers", dir);
    DIR *d = opendir(ldir);
    TEST_REQUIRE(d != NULL);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), el = strlen(ext);
        if (l > el && strcmp(de->d_name + l - el, ext) == 0) {
            fn(ldir, de->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static void li_unlink(const char *ldir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", ldir, name);
    TEST_REQUIRE(unlink(path) == 0);
}

/* Replaces <id>.sum by one covering the first half of <id>.idx's records,
 * one run per record (what the open must merge), read from the .idx itself. */
static void li_half_summary(const char *ldir, const char *name)
{
    char path[4200];
    uint32_t id = (uint32_t)strtoul(name, NULL, 16);
    snprintf(path, sizeof path, "%s/%08x.idx", ldir, id);
    int fd = open(path, O_RDONLY);
    TEST_REQUIRE(fd >= 0);
    struct stat st, lst;
    TEST_REQUIRE(fstat(fd, &st) == 0);
    size_t n = (size_t)st.st_size / REC / 2;
    uint8_t *recs = malloc(n * REC + 1);
    TEST_REQUIRE(recs != NULL && bk_pread_all(fd, recs, n * REC, 0) == 0);
    close(fd);
    snprintf(path, sizeof path, "%s/%08x.log", ldir, id);
    TEST_REQUIRE(stat(path, &lst) == 0);
    idx_summary_t s = {.log_id = id, .idx_size = n * REC, .log_size = (uint64_t)lst.st_size};
    s.runs = calloc(n + 1, sizeof *s.runs);
    s.ledgers = calloc(n + 1, sizeof *s.ledgers);
    TEST_REQUIRE(s.runs && s.ledgers);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *r = recs + i * REC;
        int64_t lid = (int64_t)get_le64(r);
        uint32_t len = get_le32(r + 24);
        s.runs[s.nruns++] = (idx_sum_run_t){lid, (int64_t)get_le64(r + 8), i * REC, 1, len};
        uint32_t j = 0;
        while (j < s.nledgers && s.ledgers[j].id != lid)
            j++;
        if (j == s.nledgers)
            s.ledgers[s.nledgers++] = (idx_sum_ledger_t){lid, 0};
        s.ledgers[j].bytes += ELOG_HEADER_BYTES + len;
    }
    uint8_t *buf;
    size_t len;
    TEST_REQUIRE(idx_summary_encode(&s, &buf, &len) == 0);
    TEST_REQUIRE(bk_write_file_atomic(ldir, name, buf, len) == 0);
    free(buf);
    free(s.runs);
    free(s.ledgers);
    free(recs);
}

/* Rewrites the summary's header field at off (8 bytes) with v and seals it
 * with a valid checksum: a summary that says more than is there. */
static uint64_t li_set_v;
static size_t li_set_off;
static void li_summary_set(const char *ldir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", ldir, name);
    int fd = open(path, O_RDWR);
    TEST_REQUIRE(fd >= 0);
    struct stat st;
    TEST_REQUIRE(fstat(fd, &st) == 0);
    size_t n = (size_t)st.st_size;
    uint8_t *b = malloc(n);
    TEST_REQUIRE(b && bk_pread_all(fd, b, n, 0) == 0);
    put_le64(b + li_set_off, li_set_v);
    put_le32(b + n - 4, crc32c(0, b, n - 4));
    TEST_REQUIRE(bk_pwrite_all(fd, b, n, 0) == 0);
    close(fd);
    free(b);
}

static void li_flip_summary(const char *ldir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", ldir, name);
    bt_flip_byte(path, IDX_SUMMARY_HEADER_BYTES + 3);
}

/* Entry sizes: ledger 3's vary within its first runs, which only summaries
 * describe after a crash: their largest must be carried (a read of an entry
 * longer than its ledger's largest is refused). */
static size_t li_size(int64_t l, int64_t e)
{
    return 200 + (size_t)(l * 10) + (l == 3 && e < 600 ? (size_t)(e % 7) : 0);
}

/* Several ledgers over many flushes (64-KiB write cache), large entries in
 * direct logs, a re-added entry and a deleted ledger: what a summary has to
 * carry. */
static void li_summary_workload(bookie_t *bk)
{
    for (int64_t e = 0; e < 1500; e++)
        for (int64_t l = 1; l <= 3; l++)
            TEST_REQUIRE(bt_add(bk, l, e, e - 1, li_size(l, e)) == 0);
    for (int64_t e = 0; e < 12; e++)
        TEST_REQUIRE(bt_add(bk, 5, e, e - 1, 20000 + (size_t)e) == 0); /* direct logs */
    for (int64_t e = 0; e < 100; e++)
        TEST_REQUIRE(bt_add(bk, 4, e, e - 1, 300) == 0);
    TEST_REQUIRE(bt_add(bk, 2, 700, 1498, 250) == 0); /* a re-add, bigger */
    TEST_REQUIRE(bt_delete(bk, 4) == 0);
}

/* A bookie on dir after li_summary_workload: 64-KiB write cache, no read
 * cache, 256-KiB entry logs (several: the order between them counts). */
static bookie_t *li_summary_start(bookie_config_t *cfg, const char *dir)
{
    bt_config(cfg, dir);
    cfg->write_cache_bytes = 64u << 10;
    cfg->read_cache_bytes = 0;
    cfg->entry_log_size_bytes = 256u << 10;
    bookie_t *bk = bt_open(cfg);
    li_summary_workload(bk);
    return bk;
}

static void li_summary_verify(bookie_t *bk)
{
    for (int64_t l = 1; l <= 3; l++)
        for (int64_t e = 0; e < 1500; e += 13)
            CU_ASSERT_EQUAL(bt_verify(bk, l, e, l == 2 && e == 700 ? 250 : li_size(l, e)), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 2, 700, 250), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 3, 1499, li_size(3, 1499)), 0);
    for (int64_t e = 0; e < 12; e++)
        CU_ASSERT_EQUAL(bt_verify(bk, 5, e, 20000 + (size_t)e), 0);
    CU_ASSERT_NOT_EQUAL(bt_read(bk, 4, 0, NULL, NULL), 0);
}

/* The index an open builds is the same from summaries, from summaries of a
 * prefix and the .idx tails, and from the .idx files alone; a summary that
 * is damaged, covers more than its .idx, or belongs to a longer log is set
 * aside (and the .idx read whole). */
static void test_index_summaries_same_index(void)
{
    char *dir = bt_dir("bk-summary");
    bookie_config_t cfg;
    bookie_t *bk = li_summary_start(&cfg, dir);
    bookie_close(bk); /* writes the summaries */
    int logs = bt_count_files(dir, "ledgers", ".idx", NULL, 0);
    CU_ASSERT_TRUE(logs >= 3);
    printf("\n    %d entry logs, each with a summary\n", logs);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), logs);

    bk = bt_open(&cfg); /* from the summaries */
    char *from_sum = li_dump(bk);
    li_summary_verify(bk);
    bookie_close(bk);

    CU_ASSERT_EQUAL(li_each_file(dir, ".sum", li_unlink), logs);
    bk = bt_open(&cfg); /* from the .idx files alone */
    char *from_idx = li_dump(bk);
    li_summary_verify(bk);
    bookie_close(bk); /* writes them again */
    CU_ASSERT_STRING_EQUAL(from_sum, from_idx);
    if (strcmp(from_sum, from_idx) != 0)
        fprintf(stderr, "\nfrom summaries:\n%s\nfrom .idx:\n%s\n", from_sum, from_idx);

    CU_ASSERT_EQUAL(li_each_file(dir, ".sum", li_half_summary), logs);
    bk = bt_open(&cfg); /* half from summaries, one run per record; the rest from the tails */
    char *from_half = li_dump(bk);
    li_summary_verify(bk);
    bookie_close(bk);
    CU_ASSERT_STRING_EQUAL(from_half, from_idx);

    char *bad[3];
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            li_each_file(dir, ".sum", li_flip_summary);
        li_set_off = k == 1 ? 8 : 16; /* idx bytes covered; log bytes then */
        li_set_v = 1ull << 40;
        if (k > 0)
            li_each_file(dir, ".sum", li_summary_set);
        bk = bt_open(&cfg);
        bad[k] = li_dump(bk);
        li_summary_verify(bk);
        CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), 0); /* set aside */
        bookie_close(bk);
        CU_ASSERT_STRING_EQUAL(bad[k], from_idx);
        CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), logs);
    }
    for (int k = 0; k < 3; k++)
        free(bad[k]);
    free(from_sum);
    free(from_idx);
    free(from_half);
    test_rm_rf(dir);
    free(dir);
}

/* The index a bookie with like's cache and log sizes builds from the files
 * under dir. */
static char *li_dump_dir(const bookie_config_t *like, const char *dir)
{
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.write_cache_bytes = like->write_cache_bytes;
    cfg.read_cache_bytes = like->read_cache_bytes;
    cfg.entry_log_size_bytes = like->entry_log_size_bytes;
    bookie_t *bk = bt_open(&cfg);
    char *d = li_dump(bk);
    bookie_test_abandon(bk);
    return d;
}

/* Copies the tree from into to (made; what was there removed first), but the
 * removed files whose blocks the process-wide trash thread still frees
 * (BK_TRASH_SUFFIX: no open loads them). That thread outlives a bookie's
 * close, and a file it unlinked under a plain `cp -a` failed the copy. 0 or
 * -1. */
static int li_copy_tree(const char *from, const char *to)
{
    DIR *d = opendir(from);
    int rc = d && mkdir(to, 0755) == 0 ? 0 : -1;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name), sn = strlen(BK_TRASH_SUFFIX);
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            (n > sn && !strcmp(de->d_name + n - sn, BK_TRASH_SUFFIX)))
            continue;
        char src[4400], dst[4400];
        snprintf(src, sizeof src, "%s/%s", from, de->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, de->d_name);
        struct stat st;
        if (lstat(src, &st) != 0) {
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc = li_copy_tree(src, dst);
        } else {
            int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644);
            char buf[65536];
            ssize_t r = 0;
            while (in >= 0 && out >= 0 && (r = read(in, buf, sizeof buf)) > 0 &&
                   write(out, buf, (size_t)r) == r)
                ;
            rc = in >= 0 && out >= 0 && r == 0 ? 0 : -1;
            if (in >= 0)
                close(in);
            if (out >= 0)
                close(out);
        }
    }
    if (d)
        closedir(d);
    return rc;
}

/* A log the flush no longer appends to (full, or retired for a copy) gets its
 * summary then, from the runs the writer noted: a start after a crash reads
 * runs for those and record by record only the current logs, and builds the
 * same index as from the .idx files alone. */
static void test_index_summaries_of_retired_logs(void)
{
    char *dir = bt_dir("bk-summary-retired"), *copy = bt_dir("bk-summary-retired-idx");
    bookie_config_t cfg;
    bookie_t *bk = li_summary_start(&cfg, dir);
    bookie_test_abandon(bk); /* kill -9: no close */
    int logs = bt_count_files(dir, "ledgers", ".idx", NULL, 0);
    int sums = bt_count_files(dir, "ledgers", ".sum", NULL, 0);
    /* all but the flush's current log and the direct log */
    CU_ASSERT_TRUE(logs >= 4 && sums >= logs - 2 && sums < logs);
    test_rm_rf(copy);
    TEST_REQUIRE(li_copy_tree(dir, copy) == 0);
    CU_ASSERT_EQUAL(li_each_file(copy, ".sum", li_unlink), sums);
    bk = bt_open(&cfg);
    char *from_sum = li_dump(bk);
    li_summary_verify(bk);
    bookie_close(bk);
    char *from_idx = li_dump_dir(&cfg, copy); /* the same files, without the summaries */
    CU_ASSERT_STRING_EQUAL(from_sum, from_idx);
    if (strcmp(from_sum, from_idx) != 0)
        fprintf(stderr, "\nfrom summaries:\n%s\nfrom .idx:\n%s\n", from_sum, from_idx);
    free(from_sum);
    free(from_idx);
    test_rm_rf(dir);
    test_rm_rf(copy);
    free(dir);
    free(copy);
}

static off_t li_file_size(const char *dir, uint32_t id, const char *ext)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ledgers/%08x.%s", dir, id, ext);
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* A summary next to files that are not the ones it was written for (an older
 * binary's GC removed the log, and a new log took its id): its last record
 * is not where it says, so it is set aside, although its log id, sizes and
 * checksum pass. */
static void test_index_summary_of_replaced_files(void)
{
    char *dir = bt_dir("bk-summary-replaced"), *copy = bt_dir("bk-summary-replaced-idx");
    bookie_config_t cfg;
    bookie_t *bk = li_summary_start(&cfg, dir);
    bookie_close(bk);
    uint32_t a = 0, b = 0;
    for (uint32_t x = 1; x < 64 && !a; x++)
        for (uint32_t y = 1; y < 64 && !a; y++)
            if (x != y && li_file_size(dir, x, "sum") > 0 && li_file_size(dir, y, "sum") > 0 &&
                li_file_size(dir, x, "idx") > 0 &&
                li_file_size(dir, x, "idx") <= li_file_size(dir, y, "idx") &&
                li_file_size(dir, x, "log") <= li_file_size(dir, y, "log"))
                a = x, b = y;
    TEST_REQUIRE(a != 0);
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cd '%s/ledgers' && cp %08x.log %08x.log && cp %08x.idx %08x.idx",
             dir, b, a, b, a);
    TEST_REQUIRE(system(cmd) == 0);
    test_rm_rf(copy);
    TEST_REQUIRE(li_copy_tree(dir, copy) == 0);
    int sums = li_each_file(copy, ".sum", li_unlink);
    bk = bt_open(&cfg);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), sums - 1);
    CU_ASSERT_EQUAL(li_file_size(dir, a, "sum"), -1);
    char *from_sum = li_dump(bk);
    bookie_test_abandon(bk);
    char *from_idx = li_dump_dir(&cfg, copy);
    CU_ASSERT_STRING_EQUAL(from_sum, from_idx);
    free(from_sum);
    free(from_idx);
    test_rm_rf(dir);
    test_rm_rf(copy);
    free(dir);
    free(copy);
}

typedef struct li_bulk {
    int done, failed;
} li_bulk_t;

static void li_bulk_cb(int rc, int64_t l, int64_t e, void *arg)
{
    (void)l;
    (void)e;
    li_bulk_t *b = arg;
    b->done++;
    b->failed += rc != 0;
}

/* Entry e of ledgers 1..n, 40 bytes each, in waves of 5,000 in flight. */
static void li_add_wide(bookie_t *bk, int64_t n, int64_t e)
{
    li_bulk_t b = {0};
    int issued = 0;
    for (int64_t l = 1; l <= n; l++) {
        qbuf_t *q = bt_entry(l, e, 40);
        TEST_REQUIRE(bookie_add(bk, l, e, e - 1, q, li_bulk_cb, &b) == 0);
        qbuf_unref(q);
        if (++issued % 5000 == 0 || l == n)
            for (int i = 0; i < 10000 && b.done < issued; i++)
                test_run_for(bt_loop, 0.001);
    }
    TEST_REQUIRE(b.done == issued && b.failed == 0);
}

/* A log of many ledgers with an entry or two each per flush has about as many
 * runs as records: its writer stops noting them past 65,536 (memory beside
 * the index's own runs, for a summary that would save little) and the log
 * is retired without a summary, read record by record at the next start. */
static void test_index_no_summary_for_a_fragmented_log(void)
{
    char *dir = bt_dir("bk-summary-wide");
    bookie_config_t cfg;
    bt_config(&cfg, dir);
    cfg.journal_sync = false; /* 160,000 adds */
    cfg.write_cache_bytes = 4u << 20;
    cfg.read_cache_bytes = 0;
    cfg.entry_log_size_bytes = 6u << 20;
    bookie_t *bk = bt_open(&cfg);
    enum { WIDE = 40000 };
    for (int64_t e = 0; e < 4; e++)
        li_add_wide(bk, WIDE, e);
    bookie_test_abandon(bk);
    /* log 1 filled with ~87,000 records of as many runs, then retired */
    CU_ASSERT_TRUE(bt_count_files(dir, "ledgers", ".idx", NULL, 0) >= 2);
    char path[4200];
    snprintf(path, sizeof path, "%s/ledgers/00000001.sum", dir);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    bk = bt_open(&cfg);
    for (int64_t l = 1; l <= WIDE; l += 997)
        for (int64_t e = 0; e < 4; e++)
            CU_ASSERT_EQUAL(bt_verify(bk, l, e, 40), 0);
    bookie_close(bk);
    test_rm_rf(dir);
    free(dir);
}

/* A crash writes no summaries: what was added since the last clean close is
 * found in the .idx files (logs without a summary, and tails), and the next
 * clean close summarizes them. GC removes a log's summary with the log. */
static void test_index_summaries_after_crash_and_gc(void)
{
    char *dir = bt_dir("bk-summary-crash");
    bookie_config_t cfg;
    bookie_t *bk = li_summary_start(&cfg, dir);
    bookie_close(bk);
    int logs = bt_count_files(dir, "ledgers", ".sum", NULL, 0);
    bk = bt_open(&cfg);
    for (int64_t e = 0; e < 600; e++)
        TEST_REQUIRE(bt_add(bk, 7, e, e - 1, 180) == 0);
    TEST_REQUIRE(bt_add(bk, 1, 1500, 1499, 210) == 0);
    bookie_test_abandon(bk); /* kill -9: the journal holds what no flush wrote */
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), logs);
    bk = bt_open(&cfg);
    li_summary_verify(bk);
    for (int64_t e = 0; e < 600; e += 7)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, 180), 0);
    CU_ASSERT_EQUAL(bt_verify(bk, 1, 1500, 210), 0);
    char *after_crash = li_dump(bk);
    bookie_close(bk);
    int now = bt_count_files(dir, "ledgers", ".idx", NULL, 0);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), now);
    CU_ASSERT_TRUE(now > logs);
    li_each_file(dir, ".sum", li_unlink);
    bk = bt_open(&cfg);
    char *from_idx = li_dump(bk);
    CU_ASSERT_STRING_EQUAL(after_crash, from_idx);
    bookie_close(bk);
    bk = bt_open(&cfg); /* from summaries again */
    /* Every ledger but 7 deleted: GC removes their logs, summaries included. */
    for (int64_t l = 1; l <= 5; l++)
        if (l != 4)
            TEST_REQUIRE(bt_delete(bk, l) == 0);
    TEST_REQUIRE(bt_gc(bk) == 0);
    CU_ASSERT_TRUE(bt_count_files(dir, "ledgers", ".idx", NULL, 0) < now);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0),
                    bt_count_files(dir, "ledgers", ".idx", NULL, 0));
    bookie_close(bk);
    int left = bt_count_files(dir, "ledgers", ".idx", NULL, 0);
    CU_ASSERT_TRUE(left < now);
    CU_ASSERT_EQUAL(bt_count_files(dir, "ledgers", ".sum", NULL, 0), left);
    bk = bt_open(&cfg);
    for (int64_t e = 0; e < 600; e += 7)
        CU_ASSERT_EQUAL(bt_verify(bk, 7, e, 180), 0);
    CU_ASSERT_NOT_EQUAL(bt_read(bk, 1, 0, NULL, NULL), 0);
    bookie_close(bk);
    free(after_crash);
    free(from_idx);
    test_rm_rf(dir);
    free(dir);
}

void bookie_index_register(void)
{
    CU_pSuite s = CU_add_suite("bookie index", NULL, NULL);
    CU_add_test(s, "appends from one idx file are one run", test_index_append_one_run);
    CU_add_test(s, "a re-add splits a run; its old place merges it again",
                test_index_split_and_merge);
    CU_add_test(s, "random puts and runs agree with a per-entry model, in the fewest runs",
                test_index_random_against_model);
    CU_add_test(s, "a ledger's entries of one flush are one run; read back after reopen",
                test_index_bookie_runs_per_flush);
    CU_add_test(s, "a damaged idx record fails the read", test_index_damaged_idx_record);
    CU_add_test(s, "a read counts as its ledger's largest entry in flight",
                test_index_reads_counted_as_largest);
    CU_add_test(s, "summaries, prefix summaries and .idx files give the same index",
                test_index_summaries_same_index);
    CU_add_test(s, "retired logs get their summary at once; same index after a crash",
                test_index_summaries_of_retired_logs);
    CU_add_test(s, "a summary beside files it was not written for is set aside",
                test_index_summary_of_replaced_files);
    CU_add_test(s, "a log of runs as short as its records gets no summary",
                test_index_no_summary_for_a_fragmented_log);
    CU_add_test(s, "after a crash, tails and new logs are read; GC removes summaries",
                test_index_summaries_after_crash_and_gc);
}
