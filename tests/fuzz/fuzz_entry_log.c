/*
 * fuzz_entry_log.c — libFuzzer target for the bookie's entry-log open and read
 * path: what a bookie trusts when it starts on entry logs and index files left
 * by a crash, a bad disk or a hostile hand.
 *
 * Each input becomes one entry log and its index file in a scratch directory,
 * then log_table_load opens them (as bookie start does) and every index record
 * it accepts is looked up at its position (entry_log_locate, as a bookie read
 * does) and read back with entry_log_read. Checked:
 *   - loading never crashes, leaks or reads out of bounds (ASan/UBSan);
 *   - an accepted index record never points past the end of its log;
 *   - a read either fails (QE_CORRUPT or -errno) or returns exactly the
 *     record's payload bytes as they are in the log file;
 *   - a summary's accepted runs lie inside the .idx, and looking up their
 *     records fails cleanly or finds a record inside the log;
 *   - entry_log_read_run over every record read above (in that order, so
 *     records that follow one another share one read, O_DIRECT for large
 *     ones and buffered for small ones, and a record past the log's end makes
 *     a shared read fail) gives each record exactly the result its own read
 *     gave: the same error, or the same bytes.
 *
 * Input layout (so the fuzzer reaches past the checksums, the harness can
 * write valid ones itself):
 *   byte 0      flags: bit 0 index records keep the fuzzer's crc (else valid)
 *                      bit 1 log records at indexed offsets get a valid
 *                            header and crc
 *                      bit 2 a torn tail of (flags >> 4) bytes ends the index
 *                      bit 3 an index summary (idx_summary.h) is written too:
 *                            the first bytes of the entry log's (the
 *                            fuzzer's), with a valid magic, log id, last
 *                            record (when it covers whole records of the
 *                            .idx) and (unless bit 0) crc; its runs must stay
 *                            inside the .idx
 *   byte 1      bits 0-4: k, the number of index records (k % 17);
 *               bits 5-7: s, the log is the rest of the input repeated 1 << s
 *               times (so records reach the O_DIRECT reads' sizes,
 *               ELOG_DIO_READ_MIN and up)
 *   k x 28      ledger id (8), entry id (8), offset (8), length (4), all LE;
 *               with bit 0, 4 more bytes each: the crc to store
 *   the rest    the entry log's bytes
 *
 *   CC=clang cmake -S . -B build-fuzz -G Ninja -DQUIRE_FUZZ=ON
 *   ninja -C build-fuzz fuzz_entry_log
 *   ./build-fuzz/tests/fuzz/fuzz_entry_log -max_total_time=300 SCRATCH tests/fuzz/corpus/entry_log
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/entry_log.h"
#include "storage/bookie/idx_summary.h"

#define MAX_RECORDS 16

typedef struct seen {
    int64_t ledger_id, entry_id;
    uint32_t log_id, length;
    uint64_t offset, pos;
} seen_t;

#define MAX_RUNS 64
#define MAX_READS (MAX_RECORDS + MAX_RUNS)

typedef struct ctx {
    seen_t recs[MAX_RECORDS];
    size_t n;
    seen_t runs[MAX_RUNS]; /* entry_id: first; length: count; offset: max_length */
    size_t nruns;
    seen_t scanruns[MAX_RECORDS]; /* the same, for runs of scanned records */
    size_t nscanruns, nscanned;
    elog_read_t reads[MAX_READS]; /* each read made alone, with its result */
    size_t nreads;
} ctx_t;

static char dir[PATH_MAX];

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

/* A run of scanned records: kept, and expanded into its records after the
 * load (entry_log_locate needs the loaded table). */
static int on_scanned(void *arg, int64_t ledger_id, int64_t first, uint32_t count, uint32_t log_id,
                      uint64_t pos, uint32_t max_length)
{
    ctx_t *c = arg;
    if (count == 0 || c->nscanned + count > MAX_RECORDS || c->nscanruns >= MAX_RECORDS)
        abort(); /* an empty run, or more records accepted than the index held */
    c->nscanned += count;
    c->scanruns[c->nscanruns++] = (seen_t){ledger_id, first, log_id, count, max_length, pos};
    return 0;
}

static int on_run(void *arg, int64_t ledger_id, int64_t first, uint32_t count, uint32_t log_id,
                  uint64_t pos, uint32_t max_length)
{
    ctx_t *c = arg;
    if (count == 0 || first < 0)
        abort(); /* a run the summary's checks should have refused */
    if (c->nruns < MAX_RUNS)
        c->runs[c->nruns++] = (seen_t){ledger_id, first, log_id, count, max_length, pos};
    return 0;
}

/* A read made alone (entry_log_read) and its result, for check_run. */
static void keep_read(ctx_t *c, uint64_t offset, uint32_t length, int64_t ledger_id,
                      int64_t entry_id, int rc, qbuf_t *out)
{
    if (c->nreads >= MAX_READS)
        abort();
    c->reads[c->nreads++] = (elog_read_t){.offset = offset,
                                          .length = length,
                                          .ledger_id = ledger_id,
                                          .entry_id = entry_id,
                                          .rc = rc,
                                          .out = out};
}

/* The reads kept, again through entry_log_read_run: each record's result
 * must be the one its own read gave (the same error, or the same bytes). */
static void check_run(const log_table_t *table, ctx_t *c)
{
    entry_log_t *log = log_table_find(table, 1);
    elog_read_t run[MAX_READS];
    size_t n = c->nreads;
    if (n == 0)
        return;
    if (!log)
        abort(); /* reads were made of it */
    for (size_t i = 0; i < n; i++)
        run[i] = (elog_read_t){.offset = c->reads[i].offset,
                               .length = c->reads[i].length,
                               .ledger_id = c->reads[i].ledger_id,
                               .entry_id = c->reads[i].entry_id,
                               .rc = 1};
    size_t ops = entry_log_read_run(log, run, n);
    if (ops < 1 || ops > 2 * n)
        abort(); /* at least one read; at most one shared and one each */
    for (size_t i = 0; i < n; i++) {
        elog_read_t *a = &c->reads[i], *r = &run[i];
        if (r->rc != a->rc || (r->rc == 0) != (r->out != NULL))
            abort(); /* a result differs from the record's own read */
        if (r->rc == 0 &&
            (r->out->len != a->out->len || memcmp(r->out->data, a->out->data, a->out->len) != 0))
            abort(); /* served other bytes than its own read */
        qbuf_unref(r->out);
        qbuf_unref(a->out);
    }
    c->nreads = 0;
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    if (n && write(fd, p, n) != (ssize_t)n)
        abort();
    close(fd);
}

static void clean_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* At exit: the scratch directory goes too (runs left one each before). */
static void remove_dir(void)
{
    clean_dir();
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level((log_level_t)(LOG_ERROR + 1)); /* refusals are expected: keep them quiet */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/fuzz_entry_log.XXXXXX", base);
    if (!mkdtemp(dir))
        abort();
    atexit(remove_dir);
    return 0;
}
/* entry_log_locate_run over a run's idx records (at most 130 of them: three
 * shared reads) must give each record exactly what entry_log_locate gives it
 * alone, whatever the bytes (a damaged record fails alone, the others are
 * found). */
static void check_locate_run(const entry_log_t *log, const seen_t *r)
{
    enum { MAX = 130 };
    elog_locate_t l[MAX];
    size_t n = r->length < MAX ? r->length : MAX;
    for (size_t k = 0; k < n; k++)
        l[k] = (elog_locate_t){.ledger_id = r->ledger_id, .entry_id = r->entry_id + (int64_t)k};
    size_t ops = entry_log_locate_run(log, r->pos, l, n);
    if (n && (ops < (n + 63) / 64 || ops > (n + 63) / 64 + n))
        abort(); /* one read per 64 records, and one more per record read alone */
    for (size_t k = 0; k < n; k++) {
        uint64_t off = 0;
        uint32_t len = 0;
        int rc = entry_log_locate(log, r->pos + k * ELOG_IDX_RECORD_BYTES, l[k].ledger_id,
                                  l[k].entry_id, &off, &len);
        if (rc != l[k].rc || (rc == 0 && (off != l[k].offset || len != l[k].length)))
            abort(); /* a shared idx read gave a record another result than its own */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    size_t k = (size_t)(data[1] & 0x1f) % (MAX_RECORDS + 1);
    size_t repeat = (size_t)1 << (data[1] >> 5);
    size_t rec_in = (flags & 1) ? 32 : 28;
    if (size < 2 + k * rec_in)
        return 0;
    const uint8_t *recs = data + 2;
    const uint8_t *logp = recs + k * rec_in;
    size_t in_len = size - 2 - k * rec_in, log_len = in_len * repeat;

    uint8_t *log_bytes = malloc(log_len ? log_len : 1);
    uint8_t idx[MAX_RECORDS * ELOG_IDX_RECORD_BYTES + 16];
    size_t idx_len = 0;
    if (!log_bytes)
        abort();
    for (size_t i = 0; i < repeat; i++)
        memcpy(log_bytes + i * in_len, logp, in_len);
    for (size_t i = 0; i < k; i++) {
        const uint8_t *r = recs + i * rec_in;
        uint8_t *o = idx + idx_len;
        memcpy(o, r, 28);
        uint32_t crc = (flags & 1) ? (uint32_t)le(r + 28, 4) : crc32c(0, o, 28);
        put(o + 28, crc, 4);
        idx_len += ELOG_IDX_RECORD_BYTES;
        uint64_t off = le(r + 16, 8);
        uint32_t len = (uint32_t)le(r + 24, 4);
        if ((flags & 2) && off <= log_len && log_len - off >= ELOG_HEADER_BYTES &&
            log_len - off - ELOG_HEADER_BYTES >= len) {
            uint8_t *h = log_bytes + off;
            put(h, ELOG_MAGIC, 4);
            put(h + 4, len, 4);
            put(h + 8, 0, 4);
            put(h + 12, 0, 4);
            memcpy(h + 16, r, 16); /* ledger id, entry id */
            uint32_t c = crc32c(crc32c(0, h, ELOG_HEADER_BYTES), h + ELOG_HEADER_BYTES, len);
            put(h + 8, c, 4);
        }
    }
    if (flags & 4) {
        size_t torn = (size_t)(flags >> 4) % ELOG_IDX_RECORD_BYTES;
        memset(idx + idx_len, 0xa5, torn);
        idx_len += torn;
    }

    write_file("00000001.log", log_bytes, log_len);
    write_file("00000001.idx", idx, idx_len);
    if ((flags & 8) && log_len >= IDX_SUMMARY_HEADER_BYTES + 4) {
        size_t n = log_len < 512 ? log_len : 512;
        uint8_t sum[512];
        memcpy(sum, log_bytes, n);
        put(sum, IDX_SUMMARY_MAGIC, 4);
        put(sum + 4, 1, 4);
        uint64_t covered = le(sum + 8, 8);
        if (n >= IDX_SUMMARY_HEADER_BYTES + 4 && covered >= ELOG_IDX_RECORD_BYTES &&
            covered <= idx_len && covered % ELOG_IDX_RECORD_BYTES == 0)
            memcpy(sum + 32, idx + covered - ELOG_IDX_RECORD_BYTES, ELOG_IDX_RECORD_BYTES);
        if (!(flags & 1))
            put(sum + n - 4, crc32c(0, sum, n - 4), 4);
        write_file("00000001.sum", sum, n);
    }

    log_table_t table = {.dio_reads = true}; /* large records with O_DIRECT, where taken */
    ctx_t c = {0};
    uint32_t next_id = 0;
    int rc = log_table_load(&table, dir, &(elog_load_fns_t){on_run, on_scanned, &c}, &next_id);
    if (rc == 0) {
        if (next_id < 2)
            abort(); /* the next log id must lie above the one loaded */
        /* Each scanned run: consecutive records of one ledger, consecutive
         * entry ids, its largest length; its records checked one by one
         * below. */
        for (size_t i = 0; i < c.nscanruns; i++) {
            seen_t *r = &c.scanruns[i];
            entry_log_t *log = log_table_find(&table, r->log_id);
            if (!log)
                abort();
            uint32_t largest = 0;
            for (uint32_t k = 0; k < r->length; k++) {
                uint64_t pos = r->pos + (uint64_t)k * ELOG_IDX_RECORD_BYTES, off;
                uint32_t len;
                if (entry_log_locate(log, pos, r->ledger_id, r->entry_id + k, &off, &len) != 0)
                    abort(); /* the run claims a record the .idx does not hold there */
                largest = len > largest ? len : largest;
                c.recs[c.n++] = (seen_t){r->ledger_id, r->entry_id + k, r->log_id, len, off, pos};
            }
            if (largest != r->offset)
                abort(); /* the run's largest length is not its records' */
        }
        for (size_t i = 0; i < c.nruns; i++) {
            seen_t *r = &c.runs[i];
            entry_log_t *log = log_table_find(&table, r->log_id);
            if (!log || r->pos % ELOG_IDX_RECORD_BYTES ||
                r->pos + (uint64_t)r->length * ELOG_IDX_RECORD_BYTES > idx_len)
                abort(); /* a run outside the .idx */
            uint64_t off;
            uint32_t len;
            int lr = entry_log_locate(log, r->pos, r->ledger_id, r->entry_id, &off, &len);
            if (lr != 0 && lr != QE_CORRUPT && lr >= 0)
                abort();
            check_locate_run(log, r);
            /* A summary skips the load's bounds check of the records it
             * covers: a read of one past the end of its log must fail
             * cleanly. (The bookie reads no more than the ledger's largest
             * entry, the run's max_length here.) */
            qbuf_t *out = NULL;
            int rr = lr == 0 && len <= r->offset && len <= (1u << 20)
                         ? entry_log_read(log, off, len, r->ledger_id, r->entry_id, &out)
                         : QE_CORRUPT;
            if (rr == 0 && (off > log_len || log_len - off < ELOG_HEADER_BYTES ||
                            log_len - off - ELOG_HEADER_BYTES < len || !out || out->len != len ||
                            memcmp(out->data, log_bytes + off + ELOG_HEADER_BYTES, len) != 0))
                abort(); /* served bytes that are not the record's */
            if (rr != 0 && rr != QE_CORRUPT && rr >= 0)
                abort();
            if (lr == 0 && len <= r->offset && len <= (1u << 20))
                keep_read(&c, off, len, r->ledger_id, r->entry_id, rr, out);
            else
                qbuf_unref(out);
        }
        for (size_t i = 0; i < c.n; i++) {
            seen_t *s = &c.recs[i];
            entry_log_t *log = log_table_find(&table, s->log_id);
            if (!log)
                abort(); /* a record of a log the table does not hold */
            if (s->offset > log_len || log_len - s->offset < ELOG_HEADER_BYTES ||
                log_len - s->offset - ELOG_HEADER_BYTES < s->length)
                abort(); /* accepted a record past the end of its log */
            uint64_t off;
            uint32_t len;
            if (entry_log_locate(log, s->pos, s->ledger_id, s->entry_id, &off, &len) != 0 ||
                off != s->offset || len != s->length)
                abort(); /* the idx record at pos is not the one accepted there */
            if (i > 0 && s->pos <= c.recs[i - 1].pos)
                abort(); /* records applied out of their .idx order */
            qbuf_t *out = NULL;
            int r = entry_log_read(log, s->offset, s->length, s->ledger_id, s->entry_id, &out);
            if (r == 0) {
                if (!out || out->len != s->length ||
                    memcmp(out->data, log_bytes + s->offset + ELOG_HEADER_BYTES, s->length) != 0)
                    abort(); /* served bytes that are not the record's */
            } else if (r != QE_CORRUPT && r >= 0) {
                abort();
            }
            keep_read(&c, s->offset, s->length, s->ledger_id, s->entry_id, r, out);
        }
        check_run(&table, &c);
    }
    log_table_free(&table);
    free(log_bytes);
    clean_dir();
    return 0;
}
