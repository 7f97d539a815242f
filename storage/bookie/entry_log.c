/*
 * entry_log.c — entry log records, idx files, the log table and the flush
 * thread's log writer (formats and threading in entry_log.h).
 *
 * Writer invariants: buf holds the bytes [buf_off, buf_off + buf_len) of the
 * current log, not yet written; wr_off == buf_off + buf_len; every record
 * appended since the last elog_sync has its idx record in ibuf.
 */
#include "storage/bookie/entry_log.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/idx_summary.h"
#include "storage/bookie/io_gate.h"
#include "storage/bookie/spare.h"

#define ELOG_STAGE_BYTES (1u << 20)
/* A direct log's blocks are allocated ahead this many bytes at a time. */
#define ELOG_DIRECT_ALLOC_BYTES (16ull << 20)
/* A flush's bytes are sent to the device as they are written, this many at a
 * time (elog_writeback): see there. */
#define ELOG_WRITEBACK_BYTES (256u << 10)
/* ... and dropped from the page cache behind the kept tail this many at a time
 * (elog_cache_drop_behind). */
#define ELOG_CACHE_DROP_STEP_BYTES (4u << 20)

static void elog_cache_drop_behind(elog_writer_t *w, bool whole);

/* --------------------------------------------------------- ledger bytes -- */

static uint32_t lb_slot(const lb_map_t *m, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

int lb_map_add(lb_map_t *m, int64_t ledger_id, uint64_t bytes)
{
    uint64_t key = (uint64_t)ledger_id + 1;
    if ((m->count + 1) * 2 > m->cap) {
        lb_map_t n = {0};
        n.cap = m->cap ? m->cap * 2 : 16;
        n.keys = calloc(n.cap, sizeof *n.keys);
        n.vals = calloc(n.cap, sizeof *n.vals);
        if (!n.keys || !n.vals) {
            free(n.keys);
            free(n.vals);
            return -ENOMEM;
        }
        for (uint32_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            uint32_t s = lb_slot(&n, m->keys[i]);
            n.keys[s] = m->keys[i];
            n.vals[s] = m->vals[i];
        }
        n.count = m->count;
        free(m->keys);
        free(m->vals);
        *m = n;
    }
    uint32_t s = lb_slot(m, key);
    if (!m->keys[s]) {
        m->keys[s] = key;
        m->count++;
    }
    m->vals[s] += bytes;
    return 0;
}

void lb_map_sub(lb_map_t *m, int64_t ledger_id, uint64_t bytes)
{
    if (!m->cap)
        return;
    uint32_t s = lb_slot(m, (uint64_t)ledger_id + 1);
    if (m->keys[s])
        m->vals[s] = m->vals[s] > bytes ? m->vals[s] - bytes : 0;
}

bool lb_map_has(const lb_map_t *m, int64_t ledger_id)
{
    return m->cap && m->keys[lb_slot(m, (uint64_t)ledger_id + 1)] != 0;
}

/* ------------------------------------------------------------ log table -- */

static void elog_path(char *out, size_t n, const char *dir, uint32_t id, const char *ext)
{
    snprintf(out, n, "%s/%08" PRIx32 ".%s", dir, id, ext);
}

entry_log_t *log_table_find(const log_table_t *t, uint32_t id)
{
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->logs[mid]->id == id)
            return t->logs[mid];
        if (t->logs[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Inserts log at its place by id (two writers create logs: the one that
 * took the higher id may insert first). Bookie lock held. */
static int log_table_insert(log_table_t *t, entry_log_t *log)
{
    assert(!log_table_find(t, log->id));
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        entry_log_t **n = realloc(t->logs, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        t->logs = n;
        t->cap = cap;
    }
    uint32_t i = t->count;
    while (i > 0 && t->logs[i - 1]->id > log->id)
        i--;
    memmove(&t->logs[i + 1], &t->logs[i], (t->count - i) * sizeof *t->logs);
    t->logs[i] = log;
    t->count++;
    t->bytes += log->size;
    if (log->id >= t->next_id)
        t->next_id = log->id + 1;
    return 0;
}

static void entry_log_destroy(entry_log_t *log)
{
    if (log->dio_fd >= 0)
        close(log->dio_fd);
    if (log->fd >= 0)
        close(log->fd);
    if (log->idx_fd >= 0)
        close(log->idx_fd);
    free(log->ledgers.keys);
    free(log->ledgers.vals);
    free(log);
}

void log_table_remove(log_table_t *t, entry_log_t *log)
{
    uint32_t i = 0;
    while (i < t->count && t->logs[i] != log)
        i++;
    assert(i < t->count);
    memmove(&t->logs[i], &t->logs[i + 1], (t->count - i - 1) * sizeof *t->logs);
    t->count--;
    t->bytes -= log->size;
    log->removed = true;
    if (log->refs == 0)
        entry_log_destroy(log);
}

void entry_log_unref(entry_log_t *log)
{
    assert(log->refs > 0);
    if (--log->refs == 0 && log->removed)
        entry_log_destroy(log);
}

void log_table_free(log_table_t *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        assert(t->logs[i]->refs == 0);
        entry_log_destroy(t->logs[i]);
    }
    free(t->logs);
    memset(t, 0, sizeof *t);
}

void log_table_cut_tails(log_table_t *t)
{
    for (uint32_t i = 0; i < t->count; i++) {
        entry_log_t *log = t->logs[i];
        if (log->rec_end_known && log->size > log->rec_end) {
            if (ftruncate(log->fd, (off_t)log->rec_end) == 0) {
                log_info("bookie",
                         "entry log %08" PRIx32 ": %" PRIu64 " bytes after its last record cut",
                         log->id, log->size - log->rec_end);
                t->bytes -= log->size - log->rec_end;
                log->size = log->rec_end;
            } else {
                log_warn("bookie", "entry log %08" PRIx32 ": cannot cut after its last record: %s",
                         log->id, q_strerror(-errno));
            }
        }
        log->rec_end_known = false;
    }
}

/* ---------------------------------------------------------- load at open -- */

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Ids of the files of dir ending in ext; *out freed by the caller. */
static int elog_list(const char *dir, const char *ext, uint32_t **out, uint32_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    uint32_t cap = 64, cnt = 0;
    uint32_t *v = malloc(cap * sizeof *v);
    struct dirent *de;
    char want[8];
    snprintf(want, sizeof want, ".%s", ext);
    while (v && (de = readdir(d))) {
        uint32_t id;
        char tail[8];
        if (strlen(de->d_name) != 12 || sscanf(de->d_name, "%8" SCNx32 "%7s", &id, tail) != 2 ||
            strcmp(tail, want) != 0)
            continue;
        if (cnt == cap) {
            uint32_t *nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
        }
        v[cnt++] = id;
    }
    closedir(d);
    if (!v)
        return -ENOMEM;
    qsort(v, cnt, sizeof *v, u32_cmp);
    *out = v;
    *n = cnt;
    return 0;
}

static bool idx_record_valid(const uint8_t *r)
{
    return crc32c(0, r, 28) == get_le32(r + 28);
}

/* Consecutive idx records of one ledger with consecutive entry ids, gathered
 * by the scan and applied as one run (with the log's bytes of its entries). */
typedef struct idx_run_acc {
    int64_t ledger_id, first;
    uint32_t count, max_length;
    uint64_t pos, bytes;
} idx_run_acc_t;

static int idx_run_flush(entry_log_t *log, idx_run_acc_t *a, const elog_load_fns_t *fns)
{
    if (a->count == 0)
        return 0;
    int rc = lb_map_add(&log->ledgers, a->ledger_id, a->bytes);
    if (rc == 0)
        rc = fns->scanned_run(fns->ctx, a->ledger_id, a->first, a->count, log->id, a->pos,
                              a->max_length);
    a->count = 0;
    return rc;
}

/* Adds the valid record at pos to the run being gathered, or applies that run
 * and starts another. */
static int idx_run_add(entry_log_t *log, idx_run_acc_t *a, const elog_load_fns_t *fns, int64_t lid,
                       int64_t eid, uint64_t pos, uint32_t len)
{
    if (a->count > 0 && a->count < UINT32_MAX && lid == a->ledger_id &&
        eid == a->first + (int64_t)a->count &&
        pos == a->pos + (uint64_t)a->count * ELOG_IDX_RECORD_BYTES) {
        a->count++;
        a->bytes += ELOG_HEADER_BYTES + (uint64_t)len;
        if (len > a->max_length)
            a->max_length = len;
        return 0;
    }
    int rc = idx_run_flush(log, a, fns);
    *a = (idx_run_acc_t){lid, eid, 1, len, pos, ELOG_HEADER_BYTES + (uint64_t)len};
    return rc;
}

/* Reads <id>.idx from byte off on (fd), applying its valid records in runs;
 * truncates a bad tail. Per record, the scan costs a checksum and a few
 * comparisons; the index and the byte counts are updated once per run (after
 * a kill -9 the log being appended to is read this way, up to 1 GiB of it). */
static int elog_load_idx(entry_log_t *log, const char *path, int fd, uint64_t off,
                         const elog_load_fns_t *fns)
{
    enum { CHUNK = 4096 };
    uint8_t *buf = malloc(CHUNK * ELOG_IDX_RECORD_BYTES);
    int rc = buf ? 0 : -ENOMEM;
    bool bad = false;
    idx_run_acc_t run = {0};
    while (rc == 0 && !bad) {
        ssize_t n = pread(fd, buf, CHUNK * ELOG_IDX_RECORD_BYTES, (off_t)off);
        if (n <= 0) {
            rc = n < 0 ? -errno : 0;
            break;
        }
        for (size_t i = 0; i + ELOG_IDX_RECORD_BYTES <= (size_t)n && rc == 0;
             i += ELOG_IDX_RECORD_BYTES) {
            const uint8_t *r = buf + i;
            if (!idx_record_valid(r)) {
                bad = true;
                break;
            }
            int64_t lid = (int64_t)get_le64(r), eid = (int64_t)get_le64(r + 8);
            uint64_t roff = get_le64(r + 16);
            uint32_t len = get_le32(r + 24);
            off += ELOG_IDX_RECORD_BYTES;
            if (roff > log->size || log->size - roff < ELOG_HEADER_BYTES ||
                log->size - roff - ELOG_HEADER_BYTES < len) { /* no overflow */
                log_warn("bookie",
                         "%s: entry %" PRId64 ":%" PRId64 " points past the end of "
                         "its log; skipped",
                         path, lid, eid);
                continue; /* the next record's pos no longer follows the run */
            }
            if (roff + ELOG_HEADER_BYTES + len > log->rec_end)
                log->rec_end = roff + ELOG_HEADER_BYTES + len;
            rc = idx_run_add(log, &run, fns, lid, eid, off - ELOG_IDX_RECORD_BYTES, len);
        }
        if ((size_t)n % ELOG_IDX_RECORD_BYTES)
            bad = true;
    }
    if (rc == 0)
        rc = idx_run_flush(log, &run, fns);
    struct stat st;
    if (rc == 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > off) {
        log_warn("bookie", "%s: torn or corrupt record at offset %" PRIu64 ", truncating", path,
                 off);
        if (ftruncate(fd, (off_t)off) < 0 || fsync(fd) < 0)
            rc = -errno;
    }
    log->idx_size = off;
    free(buf);
    return rc;
}

/* Reads <id>.sum whole into *out. A summary holds at most one run (32
 * bytes) per idx record and half as much per ledger: a larger file is not
 * one (and is not read into memory). */
static int elog_read_summary(const char *path, uint64_t idx_file_size, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    uint8_t *buf = NULL;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (st.st_size == 0 ||
             (uint64_t)st.st_size > IDX_SUMMARY_HEADER_BYTES + 4 + idx_file_size / 2 * 3)
        rc = QE_CORRUPT;
    else if (!(buf = malloc((size_t)st.st_size)))
        rc = -ENOMEM;
    else
        rc = bk_pread_all(fd, buf, (size_t)st.st_size, 0);
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = (size_t)st.st_size;
    return 0;
}

/* Applies <id>.sum when it is there and valid: *off receives the idx bytes it
 * covered (the scan goes on from there), else 0 and the file is removed. */
static int elog_load_summary(entry_log_t *log, const char *dir, uint64_t idx_file_size,
                             const elog_load_fns_t *fns, uint64_t *off)
{
    char name[16], path[PATH_MAX];
    idx_summary_name(log->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *off = 0;
    size_t len = 0;
    uint8_t *buf = NULL;
    idx_summary_t s = {0};
    const char *why = NULL;
    int rc = elog_read_summary(path, idx_file_size, &buf, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc == 0)
        rc = idx_summary_decode(buf, len, log->id, &s, &why);
    else
        why = "unreadable, or not of a summary's size";
    free(buf);
    if (rc == -ENOMEM)
        return rc;
    uint8_t last[ELOG_IDX_RECORD_BYTES] = {0};
    if (rc == 0 && s.idx_size > idx_file_size)
        why = "covers more than its .idx holds", rc = QE_CORRUPT;
    else if (rc == 0 && s.log_size > log->size)
        why = "its .log is shorter than when it was written", rc = QE_CORRUPT;
    else if (rc == 0 && s.idx_size &&
             (bk_pread_all(log->idx_fd, last, sizeof last, s.idx_size - sizeof last) != 0 ||
              memcmp(last, s.last_record, sizeof last) != 0))
        why = "its .idx is not the one it was written for", rc = QE_CORRUPT;
    if (rc) {
        log_warn("bookie", "%s: %s; reading the whole index instead", path, why);
        idx_summary_free(&s);
        unlink(path);
        return 0;
    }
    for (uint32_t i = 0; rc == 0 && i < s.nledgers; i++)
        rc = lb_map_add(&log->ledgers, s.ledgers[i].id, s.ledgers[i].bytes);
    for (uint32_t i = 0; rc == 0 && i < s.nruns; i++) {
        const idx_sum_run_t *r = &s.runs[i];
        rc = fns->summary_run(fns->ctx, r->ledger_id, r->first, r->count, log->id, r->pos,
                              r->max_length);
    }
    if (rc == 0) {
        *off = s.idx_size;
        log->sum_idx_size = s.idx_size;
    }
    idx_summary_free(&s);
    return rc;
}

static int elog_load_one(log_table_t *t, const char *dir, uint32_t id, const elog_load_fns_t *fns)
{
    char path[PATH_MAX];
    elog_path(path, sizeof path, dir, id, "log");
    entry_log_t *log = calloc(1, sizeof *log);
    if (!log)
        return -ENOMEM;
    log->id = id;
    log->idx_fd = -1;
    log->dio_fd = -1;
    log->fd = open(path, O_RDWR | O_CLOEXEC);
    if (log->fd >= 0 && t->dio_reads)
        log->dio_fd = bk_open_direct(path, O_RDONLY, &log->dio_align);
    log->gate = t->gate;
    struct stat st;
    if (log->fd < 0 || fstat(log->fd, &st) < 0) {
        int rc = -errno;
        log_error("bookie", "cannot open entry log %s: %s", path, q_strerror(rc));
        entry_log_destroy(log);
        return rc;
    }
    log->size = (uint64_t)st.st_size;
    int rc = log_table_insert(t, log);
    if (rc) {
        entry_log_destroy(log);
        return rc;
    }
    char ipath[PATH_MAX];
    elog_path(ipath, sizeof ipath, dir, id, "idx");
    log->idx_fd = open(ipath, O_RDWR | O_CREAT | O_CLOEXEC, 0644); /* kept for entry_log_locate */
    uint64_t off = 0;
    if (log->idx_fd < 0 || fstat(log->idx_fd, &st) < 0)
        rc = -errno;
    if (rc == 0)
        rc = elog_load_summary(log, dir, (uint64_t)st.st_size, fns, &off);
    log->rec_end_known = off == 0; /* no summary: elog_load_idx sees every record */
    if (rc == 0)
        rc = elog_load_idx(log, ipath, log->idx_fd, off, fns);
    if (rc)
        log_error("bookie", "cannot load the index of entry log %s: %s", path, q_strerror(rc));
    return rc;
}

/* Removes dir's files ending in ext whose entry log is gone; raises *next_id
 * above their ids. */
static int elog_remove_orphans(const char *dir, const char *ext, const uint32_t *ids, uint32_t n,
                               uint32_t *next_id)
{
    uint32_t *other = NULL, nother = 0;
    int rc = elog_list(dir, ext, &other, &nother);
    for (uint32_t i = 0; rc == 0 && i < nother; i++) {
        if (bsearch(&other[i], ids, n, sizeof *ids, u32_cmp))
            continue;
        char path[PATH_MAX];
        elog_path(path, sizeof path, dir, other[i], ext);
        log_warn("bookie", "removing %s: its entry log is gone", path);
        unlink(path);
        if (other[i] >= *next_id)
            *next_id = other[i] + 1;
    }
    free(other);
    return rc;
}

int log_table_load(log_table_t *t, const char *dir, const elog_load_fns_t *fns, uint32_t *next_id)
{
    uint32_t *ids = NULL, n = 0;
    int rc = elog_list(dir, "log", &ids, &n);
    *next_id = 1;
    if (rc == 0)
        rc = elog_remove_orphans(dir, "sum", ids, n, next_id);
    if (rc == 0)
        rc = elog_remove_orphans(dir, "idx", ids, n, next_id);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = elog_load_one(t, dir, ids[i], fns);
        if (ids[i] >= *next_id)
            *next_id = ids[i] + 1;
    }
    free(ids);
    if (*next_id > t->next_id)
        t->next_id = *next_id;
    return rc;
}

/* ------------------------------------------------------------------ read -- */

static void elog_header_encode(uint8_t *h, int64_t ledger_id, int64_t entry_id, uint32_t len,
                               uint32_t stamp)
{
    put_le32(h, ELOG_MAGIC);
    put_le32(h + 4, len);
    put_le32(h + 8, 0);
    put_le32(h + 12, stamp);
    put_le64(h + 16, (uint64_t)ledger_id);
    put_le64(h + 24, (uint64_t)entry_id);
}

uint32_t elog_header_make(uint8_t *h, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                          uint32_t len)
{
    elog_header_encode(h, ledger_id, entry_id, len, 0);
    uint32_t crc = crc32c(crc32c(0, h, ELOG_HEADER_BYTES), data, len);
    put_le32(h + 8, crc);
    return crc;
}

/* Each reader thread's aligned buffer for O_DIRECT reads, freed when the
 * thread ends; one grown beyond DIO_KEEP_BYTES for a larger record is freed
 * after that read. The direct writer's stage likewise goes back to 1 MiB. */
#define DIO_KEEP_BYTES (8u << 20)
typedef struct dio_bounce {
    uint8_t *buf;
    size_t cap;
} dio_bounce_t;

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;

static void bounce_free(void *p)
{
    dio_bounce_t *b = p;
    free(b->buf);
    free(b);
}

static void bounce_key_init(void)
{
    if (pthread_key_create(&bounce_key, bounce_free) != 0)
        abort();
}

static uint8_t *bounce_get(size_t need, uint32_t align)
{
    pthread_once(&bounce_once, bounce_key_init);
    dio_bounce_t *b = pthread_getspecific(bounce_key);
    if (!b) {
        if (!(b = calloc(1, sizeof *b)))
            return NULL;
        if (pthread_setspecific(bounce_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    if (b->cap < need || (uintptr_t)b->buf % align != 0) {
        size_t cap = need > ((size_t)1 << 20) ? need : (size_t)1 << 20;
        void *p;
        if (posix_memalign(&p, align, cap) != 0)
            return NULL;
        free(b->buf);
        b->buf = p;
        b->cap = cap;
    }
    return b->buf;
}

/* The aligned blocks [start, start + span) of log with O_DIRECT into the
 * thread's bounce buffer (*bufp), at least need bytes of them. 0, QE_CORRUPT
 * (the file ends before need), -EINVAL (refused: read buffered) or -errno. */
static int dio_read_blocks(const entry_log_t *log, uint64_t start, uint64_t span, uint64_t need,
                           uint8_t **bufp)
{
    uint64_t a = log->dio_align;
    uint8_t *buf = bounce_get((size_t)span, log->dio_align);
    if (!buf)
        return -ENOMEM;
    if (log->gate)
        io_gate_read_begin(log->gate);
    size_t got = 0;
    int rc = 0;
    while (got < need) {
        ssize_t n = pread(log->dio_fd, buf + got, (size_t)span - got, (off_t)(start + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0 || (size_t)n % a != 0) { /* the file's end (not a block's) */
            got += (size_t)n;
            break;
        }
        got += (size_t)n;
    }
    if (log->gate)
        io_gate_read_end(log->gate);
    if (rc == 0 && got < need)
        rc = QE_CORRUPT;
    *bufp = buf;
    return rc;
}

/* After a read of span bytes: a bounce buffer grown beyond DIO_KEEP_BYTES
 * goes. */
static void dio_shrink(uint64_t span)
{
    dio_bounce_t *bb = span > DIO_KEEP_BYTES ? pthread_getspecific(bounce_key) : NULL;
    if (bb) { /* NULL: none was allocated (out of memory) */
        free(bb->buf);
        bb->buf = NULL;
        bb->cap = 0;
    }
}

/* One record from a read buffer: h receives its header, b->data its payload
 * (copied while the record's checksum, header with crc 0 then payload, is
 * computed: the return value). */
static uint32_t record_take(const uint8_t *rec, uint32_t length, uint8_t *h, qbuf_t *b)
{
    memcpy(h, rec, ELOG_HEADER_BYTES);
    uint8_t h0[ELOG_HEADER_BYTES];
    memcpy(h0, h, sizeof h0);
    put_le32(h0 + 8, 0);
    return crc32c_copy(crc32c(0, h0, sizeof h0), b->data, rec + ELOG_HEADER_BYTES, length);
}

/* The record at offset with O_DIRECT: the aligned blocks around it read into
 * the thread's bounce buffer; h receives the header, b->data the payload
 * (*crc: its checksum, record_take). 0, QE_CORRUPT (short file), -EINVAL
 * (refused: read it buffered) or -errno. */
static int elog_read_dio(const entry_log_t *log, uint64_t offset, uint32_t length, uint8_t *h,
                         qbuf_t *b, uint32_t *crc)
{
    uint64_t a = log->dio_align, start = offset / a * a;
    uint64_t end = offset + ELOG_HEADER_BYTES + length, span = (end - start + a - 1) / a * a;
    uint8_t *buf;
    int rc = dio_read_blocks(log, start, span, end - start, &buf);
    if (rc == 0)
        *crc = record_take(buf + (offset - start), length, h, b);
    dio_shrink(span);
    return rc;
}

/* Checks a record read (header h, payload b) against its location: magic,
 * length, ids, checksum (got: computed while copying, when have_got), and with
 * want_crc the journal's reference crc. 0 or QE_CORRUPT; why says what. */
static int record_check(uint8_t *h, const qbuf_t *b, uint32_t length, int64_t ledger_id,
                        int64_t entry_id, bool have_got, uint32_t got, bool want_crc,
                        uint32_t crc_want, const char **why)
{
    uint32_t crc = get_le32(h + 8);
    put_le32(h + 8, 0);
    *why = NULL;
    if (get_le32(h) != ELOG_MAGIC)
        *why = "bad magic";
    else if (get_le32(h + 4) != length || (int64_t)get_le64(h + 16) != ledger_id ||
             (int64_t)get_le64(h + 24) != entry_id)
        *why = "header does not match the index";
    else if ((have_got ? got : crc32c(crc32c(0, h, ELOG_HEADER_BYTES), b->data, length)) != crc)
        *why = "checksum mismatch";
    else if (want_crc && crc != crc_want)
        *why = "checksum differs from the journal's reference";
    return *why ? QE_CORRUPT : 0;
}

static void record_log_error(const entry_log_t *log, uint64_t offset, int64_t ledger_id,
                             int64_t entry_id, const char *why)
{
    log_error("bookie",
              "entry log %08" PRIx32 " offset %" PRIu64 " (entry %" PRId64 ":%" PRId64 "): %s",
              log->id, offset, ledger_id, entry_id, why);
}

/* Reads and verifies one record; with want_crc, its crc must also be crc. */
static int elog_read_verify(const entry_log_t *log, uint64_t offset, uint32_t length,
                            int64_t ledger_id, int64_t entry_id, bool want_crc, uint32_t crc_want,
                            qbuf_t **out)
{
    qbuf_t *b = qbuf_new(length);
    if (!b)
        return -ENOMEM;
    uint8_t h[ELOG_HEADER_BYTES];
    uint32_t got = 0; /* the checksum of what was read, when the read computed it */
    bool have_got = false;
    int rc = -EINVAL;
    if (log->dio_fd >= 0 && length >= ELOG_DIO_READ_MIN) {
        rc = elog_read_dio(log, offset, length, h, b, &got);
        have_got = rc == 0;
    }
    if (rc == -EINVAL) {
        rc = bk_pread_all(log->fd, h, sizeof h, offset);
        if (rc == 0)
            rc = bk_pread_all(log->fd, b->data, length, offset + ELOG_HEADER_BYTES);
    }
    const char *why = rc == QE_CORRUPT ? "short file" : NULL;
    if (rc == 0)
        rc = record_check(h, b, length, ledger_id, entry_id, have_got, got, want_crc, crc_want,
                          &why);
    if (rc) {
        record_log_error(log, offset, ledger_id, entry_id, why ? why : q_strerror(rc));
        qbuf_unref(b);
        return rc;
    }
    b->len = length;
    *out = b;
    return 0;
}

/* Where the run of records that can share one read, from recs[i], ends
 * (exclusive): each large, after the one before it by at most
 * ELOG_RUN_GAP_MAX bytes, all within ELOG_RUN_BYTES_MAX of aligned blocks
 * (read with O_DIRECT); or each small, at most ELOG_RUN_SMALL_GAP_MAX bytes
 * after the one before, within ELOG_RUN_SMALL_BYTES_MAX (read buffered). */
static size_t run_end(const entry_log_t *log, const elog_read_t *recs, size_t i, size_t n)
{
    bool large = recs[i].length >= ELOG_DIO_READ_MIN;
    if (large && log->dio_fd < 0)
        return i + 1;
    uint64_t start = large ? recs[i].offset / log->dio_align * log->dio_align : recs[i].offset;
    uint64_t gap_max = large ? ELOG_RUN_GAP_MAX : ELOG_RUN_SMALL_GAP_MAX;
    uint64_t bytes_max = large ? ELOG_RUN_BYTES_MAX : ELOG_RUN_SMALL_BYTES_MAX;
    uint64_t end = recs[i].offset + ELOG_HEADER_BYTES + recs[i].length;
    size_t k = i + 1;
    for (; k < n; k++) {
        uint64_t o = recs[k].offset, e = o + ELOG_HEADER_BYTES + recs[k].length;
        if ((recs[k].length >= ELOG_DIO_READ_MIN) != large || o < end || o - end > gap_max ||
            e - start > bytes_max)
            break;
        end = e;
    }
    return k;
}

/* recs[0..n) with one read of the bytes around them all: O_DIRECT of the
 * aligned blocks for large records, a buffered pread for small ones; each
 * record verified alone. Nonzero: the read itself failed (nothing taken). */
static int run_read(const entry_log_t *log, elog_read_t *recs, size_t n)
{
    bool large = recs[0].length >= ELOG_DIO_READ_MIN;
    uint64_t a = large ? log->dio_align : 1, start = recs[0].offset / a * a;
    uint64_t end = recs[n - 1].offset + ELOG_HEADER_BYTES + recs[n - 1].length;
    uint64_t span = (end - start + a - 1) / a * a;
    uint8_t *buf = NULL;
    int rc;
    if (large) {
        rc = dio_read_blocks(log, start, span, end - start, &buf);
    } else {
        buf = bounce_get((size_t)span, 64);
        rc = buf ? bk_pread_all(log->fd, buf, (size_t)span, start) : -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        elog_read_t *r = &recs[i];
        r->out = NULL;
        qbuf_t *b = qbuf_new(r->length);
        if (!b) {
            r->rc = -ENOMEM;
            continue;
        }
        uint8_t h[ELOG_HEADER_BYTES];
        uint32_t got = record_take(buf + (r->offset - start), r->length, h, b);
        const char *why;
        r->rc = record_check(h, b, r->length, r->ledger_id, r->entry_id, true, got, false, 0, &why);
        if (r->rc) {
            record_log_error(log, r->offset, r->ledger_id, r->entry_id, why);
            qbuf_unref(b);
            continue;
        }
        b->len = r->length;
        r->out = b;
    }
    dio_shrink(span);
    return rc;
}

size_t entry_log_read_run(const entry_log_t *log, elog_read_t *recs, size_t n)
{
    size_t reads = 0;
    for (size_t i = 0; i < n;) {
        size_t k = run_end(log, recs, i, n);
        reads++;
        if (k - i > 1 && run_read(log, recs + i, k - i) == 0) {
            i = k;
            continue;
        }
        if (k - i > 1)
            reads += k - i; /* the shared read failed: each alone, with its own error */
        for (; i < k; i++) {
            recs[i].out = NULL;
            recs[i].rc = elog_read_verify(log, recs[i].offset, recs[i].length, recs[i].ledger_id,
                                          recs[i].entry_id, false, 0, &recs[i].out);
        }
    }
    return reads;
}

int entry_log_read(const entry_log_t *log, uint64_t offset, uint32_t length, int64_t ledger_id,
                   int64_t entry_id, qbuf_t **out)
{
    return elog_read_verify(log, offset, length, ledger_id, entry_id, false, 0, out);
}

int entry_log_read_expect(const entry_log_t *log, uint64_t offset, uint32_t length,
                          int64_t ledger_id, int64_t entry_id, uint32_t crc, qbuf_t **out)
{
    return elog_read_verify(log, offset, length, ledger_id, entry_id, true, crc, out);
}

void elog_idx_encode(uint8_t *r, int64_t ledger_id, int64_t entry_id, uint64_t offset, uint32_t len)
{
    put_le64(r, (uint64_t)ledger_id);
    put_le64(r + 8, (uint64_t)entry_id);
    put_le64(r + 16, offset);
    put_le32(r + 24, len);
    put_le32(r + 28, crc32c(0, r, 28));
}

int elog_idx_cut(const char *dir, entry_log_t *log, uint64_t size)
{
    if (ftruncate(log->idx_fd, (off_t)size) == 0) {
        log->idx_size = size;
        return 0;
    }
    int rc = -errno;
    char path[PATH_MAX];
    elog_path(path, sizeof path, dir, log->id, "idx");
    log_error("bookie", "%s: cannot cut back to %" PRIu64 " bytes: %s", path, size, q_strerror(rc));
    return rc;
}

int elog_idx_append(const char *dir, entry_log_t *log, const uint8_t *recs, size_t bytes)
{
    char path[PATH_MAX];
    elog_path(path, sizeof path, dir, log->id, "idx");
    int rc = bk_pwrite_all(log->idx_fd, recs, bytes, log->idx_size);
    if (rc == 0 && fdatasync(log->idx_fd) < 0)
        rc = -errno;
    if (rc) {
        log_error("bookie", "%s: append of %zu idx records failed: %s", path,
                  bytes / ELOG_IDX_RECORD_BYTES, q_strerror(rc));
        return elog_idx_cut(dir, log, log->idx_size) ? -EIO : rc;
    }
    log->idx_size += bytes;
    return 0;
}

/* Checks the idx record r read from byte pos of log's .idx (rc: that read's
 * result) against the ids asked for; fills *offset and *length. */
static int locate_check(const entry_log_t *log, uint64_t pos, const uint8_t *r, int rc,
                        int64_t ledger_id, int64_t entry_id, uint64_t *offset, uint32_t *length)
{
    const char *why = rc == QE_CORRUPT ? "short file" : NULL;
    if (rc == 0 && !idx_record_valid(r))
        why = "checksum mismatch";
    else if (rc == 0 && ((int64_t)get_le64(r) != ledger_id || (int64_t)get_le64(r + 8) != entry_id))
        why = "ids do not match the index";
    if (why)
        rc = QE_CORRUPT;
    if (rc) {
        log_error("bookie",
                  "entry log %08" PRIx32 ".idx offset %" PRIu64 " (entry %" PRId64 ":%" PRId64
                  "): %s",
                  log->id, pos, ledger_id, entry_id, why ? why : q_strerror(rc));
        return rc;
    }
    *offset = get_le64(r + 16);
    *length = get_le32(r + 24);
    return 0;
}

int entry_log_locate(const entry_log_t *log, uint64_t pos, int64_t ledger_id, int64_t entry_id,
                     uint64_t *offset, uint32_t *length)
{
    uint8_t r[ELOG_IDX_RECORD_BYTES];
    int rc = bk_pread_all(log->idx_fd, r, sizeof r, pos);
    return locate_check(log, pos, r, rc, ledger_id, entry_id, offset, length);
}

size_t entry_log_locate_run(const entry_log_t *log, uint64_t pos, elog_locate_t *l, size_t n)
{
    enum { CHUNK = 64 };
    uint8_t r[CHUNK * ELOG_IDX_RECORD_BYTES];
    size_t ops = 0;
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        uint64_t at = pos + i * ELOG_IDX_RECORD_BYTES;
        int rc = k > 1 ? bk_pread_all(log->idx_fd, r, k * ELOG_IDX_RECORD_BYTES, at) : -1;
        ops++;
        for (size_t j = 0; j < k; j++) {
            elog_locate_t *e = &l[i + j];
            uint64_t p = at + j * ELOG_IDX_RECORD_BYTES;
            if (rc == 0) {
                e->rc = locate_check(log, p, r + j * ELOG_IDX_RECORD_BYTES, 0, e->ledger_id,
                                     e->entry_id, &e->offset, &e->length);
            } else { /* alone (a short shared read: the records before the end are there) */
                e->rc = entry_log_locate(log, p, e->ledger_id, e->entry_id, &e->offset, &e->length);
                ops += k > 1;
            }
        }
    }
    return ops;
}

/* ---------------------------------------------------------------- writer -- */

int elog_writer_init(elog_writer_t *w, const char *dir, uint64_t max_size, uint64_t cache_keep,
                     pthread_mutex_t *lock, log_table_t *table)
{
    memset(w, 0, sizeof *w);
    w->dir = strdup(dir);
    w->max_size = max_size;
    w->cache_keep = cache_keep;
    w->lock = lock;
    w->table = table;
    w->buf_cap = ELOG_STAGE_BYTES;
    w->buf = malloc(w->buf_cap);
    return w->dir && w->buf ? 0 : -ENOMEM;
}

void elog_writer_free(elog_writer_t *w)
{
    free(w->dir);
    free(w->buf);
    free(w->ibuf);
    free(w->runs);
    memset(w, 0, sizeof *w);
}

/* Creates a new log with the table's next id and an empty idx (directory
 * fsynced) and inserts it in the table; *out receives it. With spares, the
 * log is the direct spare when there is one, its zeroed bytes in *zeroed. */
static int elog_create(const char *dir, pthread_mutex_t *lock, log_table_t *table, bool pinned,
                       spares_t *spares, entry_log_t **out, uint64_t *zeroed)
{
    char path[PATH_MAX], ipath[PATH_MAX];
    entry_log_t *log = calloc(1, sizeof *log);
    if (!log)
        return -ENOMEM;
    pthread_mutex_lock(lock);
    if (table->next_id == 0)
        table->next_id = 1; /* 0 is never a log id: "no log" in write cache items */
    uint32_t id = table->next_id++;
    pthread_mutex_unlock(lock);
    log->id = id;
    log->idx_fd = -1;
    log->fd = -1;
    log->dio_fd = -1;
    log->pinned = pinned;
    elog_path(path, sizeof path, dir, id, "log");
    elog_path(ipath, sizeof ipath, dir, id, "idx");
    *zeroed = 0;
    if (spares_take(spares, SPARE_DIRECT, path, zeroed) == 0 &&
        (log->fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        log_warn("bookie", "cannot open entry log %s: %s", path, q_strerror(-errno));
        unlink(path);
    }
    if (log->fd < 0) {
        *zeroed = 0;
        log->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (log->fd >= 0 && table->dio_reads)
        log->dio_fd = bk_open_direct(path, O_RDONLY, &log->dio_align);
    log->gate = table->gate;
    int ifd = log->fd >= 0 ? open(ipath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    int rc = ifd < 0 ? -errno : bk_fsync_dir(dir);
    if (rc == 0) {
        log->idx_fd = ifd; /* the log owns it from here */
        ifd = -1;
        pthread_mutex_lock(lock);
        rc = log_table_insert(table, log);
        pthread_mutex_unlock(lock);
    }
    if (rc) {
        log_error("bookie", "cannot create entry log %s: %s", path, q_strerror(rc));
        if (ifd >= 0)
            close(ifd);
        if (log->fd >= 0) { /* never in the table: nothing points into it */
            unlink(path);
            unlink(ipath);
        }
        entry_log_destroy(log);
        return rc;
    }
    *out = log;
    return 0;
}

/* Below this many runs a log's summary is always kept (see elog_runs_note). */
#define ELOG_SUMMARY_RUNS_FREE 65536u

enum { RUNS_TOO_MANY = 1, RUNS_NO_MEMORY = 2 };

/* No summary from the runs of cur: their memory goes at once. */
static void elog_runs_drop(elog_writer_t *w, int why)
{
    free(w->runs);
    w->runs = NULL;
    w->nruns = w->runs_cap = 0;
    w->runs_off = why;
}

/* Notes an appended record in the runs of cur (joined to the last run when
 * it follows it: a flush appends each ledger's entries in order). */
static void elog_runs_note(elog_writer_t *w, int64_t ledger_id, int64_t entry_id, uint64_t pos,
                           uint32_t len)
{
    idx_sum_run_t *r = w->nruns ? &w->runs[w->nruns - 1] : NULL;
    if (r && r->ledger_id == ledger_id && r->first + (int64_t)r->count == entry_id &&
        r->pos + (uint64_t)r->count * ELOG_IDX_RECORD_BYTES == pos && r->count < UINT32_MAX) {
        r->count++;
        if (len > r->max_length)
            r->max_length = len;
        return;
    }
    if (w->runs_off)
        return;
    /* Runs as many as an eighth of the records (many ledgers, a few entries
     * each per flush) would save little at open and cost memory beside the
     * index's own runs: the log goes without a summary from its runs. */
    uint64_t records = pos / ELOG_IDX_RECORD_BYTES + 1;
    if (w->nruns >= ELOG_SUMMARY_RUNS_FREE && w->nruns >= records / 8) {
        elog_runs_drop(w, RUNS_TOO_MANY);
        return;
    }
    if (w->nruns == w->runs_cap) {
        uint32_t cap = w->runs_cap ? 2 * w->runs_cap : 256;
        idx_sum_run_t *n = realloc(w->runs, (size_t)cap * sizeof *n);
        if (!n) {
            elog_runs_drop(w, RUNS_NO_MEMORY);
            return;
        }
        w->runs = n;
        w->runs_cap = cap;
    }
    w->runs[w->nruns++] = (idx_sum_run_t){ledger_id, entry_id, pos, 1, len};
}

int elog_write_summary(const char *dir, entry_log_t *log, const idx_sum_run_t *runs, uint32_t nruns)
{
    idx_summary_t s = {.log_id = log->id,
                       .idx_size = log->idx_size,
                       .log_size = log->size,
                       .runs = (idx_sum_run_t *)runs,
                       .nruns = nruns};
    int rc = log->idx_size ? bk_pread_all(log->idx_fd, s.last_record, sizeof s.last_record,
                                          log->idx_size - sizeof s.last_record)
                           : 0;
    if (rc)
        return rc;
    if (!(s.ledgers = calloc(log->ledgers.count + 1, sizeof *s.ledgers)))
        return -ENOMEM;
    for (uint32_t i = 0; i < log->ledgers.cap; i++)
        if (log->ledgers.keys[i])
            s.ledgers[s.nledgers++] =
                (idx_sum_ledger_t){(int64_t)(log->ledgers.keys[i] - 1), log->ledgers.vals[i]};
    uint8_t *buf = NULL;
    size_t len = 0;
    char name[16];
    idx_summary_name(log->id, name, sizeof name);
    rc = idx_summary_encode(&s, &buf, &len);
    if (rc == 0)
        rc = bk_write_file_atomic(dir, name, buf, len);
    if (rc == 0)
        log->sum_idx_size = log->idx_size;
    free(buf);
    free(s.ledgers);
    return rc;
}

/* cur, synced, is no longer appended to: its summary, from the runs noted.
 * Failing costs only reading its .idx at the next start. */
static void elog_retire(elog_writer_t *w)
{
    entry_log_t *log = w->cur;
    int rc = w->runs_off == RUNS_NO_MEMORY ? -ENOMEM : 0;
    if (rc == 0 && log->idx_size && !w->runs_off)
        rc = elog_write_summary(w->dir, log, w->runs, w->nruns);
    if (rc)
        log_warn("bookie", "entry log %08" PRIx32 ": no index summary (%s): its .idx will be read",
                 log->id, q_strerror(rc));
    else if (w->runs_off == RUNS_TOO_MANY)
        log_info("bookie",
                 "entry log %08" PRIx32 ": no index summary (runs too short to save much): "
                 "its .idx will be read",
                 log->id);
    w->nruns = 0;
    w->runs_off = 0;
}

/* Creates a new log (+ its idx) and makes it current; the one it replaces is
 * retired. */
static int elog_roll(elog_writer_t *w)
{
    entry_log_t *log;
    uint64_t zeroed;
    int rc = elog_create(w->dir, w->lock, w->table, false, NULL, &log, &zeroed);
    if (rc)
        return rc;
    if (w->cur) {
        elog_retire(w); /* synced by the caller */
        elog_cache_drop_behind(w, true);
    }
    w->cur = log;
    w->wr_off = w->buf_off = 0;
    w->wb_started = w->wb_done = w->wb_dropped = 0;
    w->buf_len = 0;
    return 0;
}

/* Starts the device writes of what the current log was given since the last
 * call, once that is ELOG_WRITEBACK_BYTES, after waiting for the range started
 * the time before. Without it a flush's tens of MB sat in the page cache until
 * elog_sync's fdatasync sent them all at once, and the journal's small writes
 * and syncs, queued on the same device behind them, waited for all of them:
 * an add p99 of 11-17 ms at 50,000 1-KiB adds a second, whose flushes are 16
 * MiB each (storage-bench, session 29: 4-5 ms with this, 1.6-2.2 with the
 * flush's pacing as well, flush.c). Now at most two ranges are on their
 * way while a flush writes, and the final fdatasync finds little left.
 * BookKeeper's flushEntrylogBytes does the same. Errors are left to that
 * fdatasync, which reports them. */
static void elog_writeback(elog_writer_t *w)
{
    uint64_t end = w->buf_off;
    if (end - w->wb_started < ELOG_WRITEBACK_BYTES)
        return;
    int fd = w->cur->fd;
    if (w->wb_started > w->wb_done)
        (void)sync_file_range(fd, (off_t)w->wb_done, (off_t)(w->wb_started - w->wb_done),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                  SYNC_FILE_RANGE_WAIT_AFTER);
    w->wb_done = w->wb_started;
    elog_cache_drop_behind(w, false);
    (void)sync_file_range(fd, (off_t)w->wb_started, (off_t)(end - w->wb_started),
                          SYNC_FILE_RANGE_WRITE);
    w->wb_started = end;
}

/* Drops cur's pages that are on the device from the page cache, but the last
 * cache_keep bytes of them (all with whole, at retirement: synced by then),
 * ELOG_CACHE_DROP_STEP_BYTES or more at a time. Why: the copies would stay
 * cached until memory runs short, and on a VM that hands the guest's free
 * memory back to its host (Firecracker, free page reporting) every new page
 * of a growing page cache costs a host fault: in the benchmark's (e) run a
 * second time on one server, the kernel's copy of the flush's writes took
 * about 5 ms of CPU per MB against 0.15 in the first run, which made
 * 92,500-95,900 messages a second against 153,800-154,900
 * (docs/performance.md, session 37).
 * Dropped pages are reused by the next copies. Entries read again after
 * they left the write cache are served by the broker's cache and the
 * bookie's read cache first; the kept tail serves readers a little behind. */
static void elog_cache_drop_behind(elog_writer_t *w, bool whole)
{
    if (!w->cache_keep || !w->cur)
        return;
    uint64_t to = whole                        ? w->cur->size
                  : w->wb_done > w->cache_keep ? w->wb_done - w->cache_keep
                                               : 0;
    if (to < w->wb_dropped + (whole ? 1 : ELOG_CACHE_DROP_STEP_BYTES))
        return;
    (void)posix_fadvise(w->cur->fd, (off_t)w->wb_dropped, (off_t)(to - w->wb_dropped),
                        POSIX_FADV_DONTNEED);
    w->wb_dropped = to;
}

static int elog_stage_flush(elog_writer_t *w)
{
    int rc = bk_pwrite_all(w->cur->fd, w->buf, w->buf_len, w->buf_off);
    if (rc)
        return rc;
    w->buf_off += w->buf_len;
    w->buf_len = 0;
    elog_writeback(w);
    return 0;
}

static int elog_idx_add(elog_writer_t *w, int64_t ledger_id, int64_t entry_id, uint64_t off,
                        uint32_t len)
{
    if (w->ibuf_len + ELOG_IDX_RECORD_BYTES > w->ibuf_cap) {
        size_t cap = w->ibuf_cap ? w->ibuf_cap * 2 : 64 * 1024;
        uint8_t *n = realloc(w->ibuf, cap);
        if (!n)
            return -ENOMEM;
        w->ibuf = n;
        w->ibuf_cap = cap;
    }
    elog_idx_encode(w->ibuf + w->ibuf_len, ledger_id, entry_id, off, len);
    w->ibuf_len += ELOG_IDX_RECORD_BYTES;
    return 0;
}

int elog_append(elog_writer_t *w, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                uint32_t len, uint32_t *log_id, uint64_t *offset, uint64_t *idx_pos)
{
    uint64_t rec = ELOG_HEADER_BYTES + (uint64_t)len;
    int rc = 0;
    if (w->cur && w->wr_off > 0 && w->wr_off + rec > w->max_size)
        rc = elog_sync(w);
    if (rc == 0 && (!w->cur || (w->wr_off > 0 && w->wr_off + rec > w->max_size)))
        rc = elog_roll(w);
    if (rc == 0 && w->buf_len + rec > w->buf_cap)
        rc = elog_stage_flush(w);
    if (rc)
        return rc;
    uint8_t h[ELOG_HEADER_BYTES];
    elog_header_make(h, ledger_id, entry_id, data, len);
    uint64_t off = w->wr_off;
    if (rec <= w->buf_cap) {
        memcpy(w->buf + w->buf_len, h, sizeof h);
        if (len)
            memcpy(w->buf + w->buf_len + sizeof h, data, len);
        w->buf_len += rec;
    } else {
        assert(w->buf_len == 0);
        struct iovec iov[2] = {{h, sizeof h}, {(void *)data, len}};
        rc = bk_pwritev_all(w->cur->fd, iov, 2, off);
        w->buf_off += rec;
        if (rc == 0)
            elog_writeback(w);
    }
    uint64_t pos = w->cur->idx_size + w->ibuf_len; /* idx_size moves only in elog_sync */
    if (rc == 0)
        rc = elog_idx_add(w, ledger_id, entry_id, off, len);
    if (rc == 0)
        rc = lb_map_add(&w->cur->ledgers, ledger_id, rec);
    if (rc)
        return rc;
    elog_runs_note(w, ledger_id, entry_id, pos, len);
    w->wr_off += rec;
    assert(w->wr_off == w->buf_off + w->buf_len);
    *log_id = w->cur->id;
    *offset = off;
    *idx_pos = pos;
    return 0;
}

int elog_sync(elog_writer_t *w)
{
    if (!w->cur)
        return 0;
    int rc = elog_stage_flush(w);
    if (rc == 0 && w->inject) {
        rc = w->inject;
        w->inject = 0;
    }
    if (rc == 0 && fdatasync(w->cur->fd) < 0)
        rc = -errno;
    if (rc == 0 && w->ibuf_len)
        rc = bk_pwrite_all(w->cur->idx_fd, w->ibuf, w->ibuf_len, w->cur->idx_size);
    if (rc == 0 && w->ibuf_len && fdatasync(w->cur->idx_fd) < 0)
        rc = -errno;
    if (rc) {
        log_error("bookie", "entry log %08" PRIx32 ": write or sync failed: %s", w->cur->id,
                  q_strerror(rc));
        return rc;
    }
    w->cur->idx_size += w->ibuf_len;
    w->ibuf_len = 0;
    pthread_mutex_lock(w->lock);
    w->table->bytes += w->wr_off - w->cur->size;
    w->cur->size = w->wr_off;
    pthread_mutex_unlock(w->lock);
    return 0;
}

int elog_writer_abandon(elog_writer_t *w)
{
    entry_log_t *log = w->cur;
    if (!log)
        return 0;
    for (size_t i = 0; i < w->ibuf_len; i += ELOG_IDX_RECORD_BYTES) {
        const uint8_t *r = w->ibuf + i;
        lb_map_sub(&log->ledgers, (int64_t)get_le64(r),
                   ELOG_HEADER_BYTES + (uint64_t)get_le32(r + 24));
    }
    w->ibuf_len = 0;
    while (w->nruns > 0) { /* runs noted past the durable idx records */
        idx_sum_run_t *r = &w->runs[w->nruns - 1];
        if (r->pos >= log->idx_size) {
            w->nruns--;
            continue;
        }
        uint64_t room = (log->idx_size - r->pos) / ELOG_IDX_RECORD_BYTES;
        if (r->count > room)
            r->count = (uint32_t)room;
        break;
    }
    w->buf_len = 0;
    w->wr_off = w->buf_off = log->size;
    if (w->wb_started > log->size)
        w->wb_started = log->size;
    if (w->wb_done > log->size)
        w->wb_done = log->size;
    if (w->wb_dropped > log->size)
        w->wb_dropped = log->size;
    int rc = ftruncate(log->fd, (off_t)log->size) == 0 ? 0 : -errno;
    if (rc)
        log_error("bookie", "entry log %08" PRIx32 ": cannot cut back to %" PRIu64 " bytes: %s",
                  log->id, log->size, q_strerror(rc));
    else
        rc = elog_idx_cut(w->dir, log, log->idx_size);
    return rc;
}

int elog_ensure_after(elog_writer_t *w, uint32_t id)
{
    if (!w->cur || w->cur->id >= id)
        return 0;
    int rc = elog_sync(w);
    if (rc == 0) {
        elog_retire(w);
        w->cur = NULL; /* retired: stays a log like any other */
    }
    return rc;
}

/* ---------------------------------------------------------- direct writer -- */

int elog_direct_init(elog_direct_t *d, const char *dir, uint64_t max_size, bool odirect,
                     pthread_mutex_t *lock, log_table_t *table)
{
    memset(d, 0, sizeof *d);
    d->dir = strdup(dir);
    d->max_size = max_size;
    d->odirect = odirect;
    d->dio_fd = -1;
    d->lock = lock;
    d->table = table;
    return d->dir ? 0 : -ENOMEM;
}

/* Cuts the padding of the last O_DIRECT write, and the zeros of a spare
 * after the last record, off cur: its size is then the end of its last
 * record, as after buffered appends. */
void elog_direct_trim(elog_direct_t *d)
{
    if (!d->cur || ((d->dio_fd < 0 || d->stage_len == 0) && d->zeroed_end <= d->wr_off &&
                    d->alloc_end <= d->wr_off))
        return;
    assert(d->dio_fd < 0 || d->stage_off + d->stage_len == d->wr_off); /* all written */
    if (ftruncate(d->cur->fd, (off_t)d->wr_off) < 0)
        log_warn("bookie", "direct entry log %08" PRIx32 ": cannot cut its padding: %s", d->cur->id,
                 q_strerror(-errno));
}

static void direct_close_dio(elog_direct_t *d)
{
    if (d->dio_fd >= 0)
        close(d->dio_fd);
    d->dio_fd = -1;
    d->stage_len = 0;
    d->stage_off = 0;
}

void elog_direct_free(elog_direct_t *d)
{
    direct_close_dio(d);
    free(d->dir);
    free(d->stage);
    memset(d, 0, sizeof *d);
}

/* Opens cur (new and empty) a second time with O_DIRECT when asked and the
 * file system allows it. */
static void direct_open_dio(elog_direct_t *d)
{
    direct_close_dio(d);
    if (!d->odirect)
        return;
    char path[PATH_MAX];
    elog_path(path, sizeof path, d->dir, d->cur->id, "log");
    uint32_t align = 0;
    int fd = bk_open_direct(path, O_WRONLY, &align);
    if (fd < 0) {
        log_warn("bookie", "%s: no O_DIRECT here: direct logs are written buffered", path);
        d->odirect = false;
        return;
    }
    d->dio_fd = fd;
    d->align = align;
    if (d->stage && (uintptr_t)d->stage % align != 0) { /* empty here: allocated again */
        free(d->stage);
        d->stage = NULL;
        d->stage_cap = 0;
    }
}

/* The stage can hold need bytes (contents kept). 0 or -ENOMEM. */
static int direct_stage_reserve(elog_direct_t *d, size_t need)
{
    if (need <= d->stage_cap)
        return 0;
    size_t cap = d->stage_cap ? d->stage_cap : (size_t)1 << 20;
    while (cap < need)
        cap *= 2;
    void *p;
    if (posix_memalign(&p, d->align, cap) != 0)
        return -ENOMEM;
    if (d->stage_len)
        memcpy(p, d->stage, d->stage_len);
    free(d->stage);
    d->stage = p;
    d->stage_cap = cap;
    return 0;
}

/* Blocks of cur allocated up to at least end (elog_direct_reserve). 0, or
 * -ENOSPC / -EDQUOT (nothing allocated past what was). */
static int direct_alloc_ahead(elog_direct_t *d, uint64_t end)
{
    if (d->alloc_off || end <= d->zeroed_end || end <= d->alloc_end)
        return 0;
    int left = atomic_load(&d->inject_alloc);
    while (left > 0 && !atomic_compare_exchange_weak(&d->inject_alloc, &left, left - 1))
        ;
    if (left > 0)
        return -ENOSPC;
    uint64_t from = d->alloc_end > d->zeroed_end ? d->alloc_end : d->zeroed_end;
    if (from < d->wr_off)
        from = d->wr_off;
    uint64_t to =
        (end + ELOG_DIRECT_ALLOC_BYTES - 1) / ELOG_DIRECT_ALLOC_BYTES * ELOG_DIRECT_ALLOC_BYTES;
    if (fallocate(d->cur->fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) == 0) {
        d->alloc_end = to;
        return 0;
    }
    int rc = -errno;
    if (rc == -ENOSPC || rc == -EDQUOT)
        return rc;
    log_info("bookie", "direct entry logs: blocks not allocated ahead (%s): appended as written",
             q_strerror(rc));
    d->alloc_off = true;
    return 0;
}

bool elog_direct_needs_roll(const elog_direct_t *d, uint32_t len)
{
    uint64_t end = d->wr_off + ELOG_HEADER_BYTES + len;
    /* full, or past its zeros with a zeroed spare to roll to (spare.h) */
    return !d->cur ||
           (d->wr_off > 0 &&
            (end > d->max_size || (end > d->zeroed_end && spares_ready(d->spares, SPARE_DIRECT))));
}

int elog_direct_reserve(elog_direct_t *d, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                        uint32_t len, uint64_t seal_seq, uint64_t seal_off, uint8_t *h,
                        uint32_t *log_id, uint64_t *offset, uint32_t *crc)
{
    if (elog_direct_needs_roll(d, len)) {
        entry_log_t *log;
        uint64_t zeroed;
        int rc = elog_create(d->dir, d->lock, d->table, true, d->spares, &log, &zeroed);
        if (rc)
            return rc;
        pthread_mutex_lock(d->lock);
        if (d->cur) { /* every reference to it is before this journal position */
            d->cur->seal_seq = seal_seq;
            d->cur->seal_off = seal_off;
            d->cur->sealed = true;
        }
        pthread_mutex_unlock(d->lock);
        if (d->cur)
            elog_direct_trim(d);
        d->cur = log;
        d->wr_off = 0;
        d->zeroed_end = zeroed;
        d->alloc_end = 0;
        direct_open_dio(d);
    }
    int arc = direct_alloc_ahead(d, d->wr_off + ELOG_HEADER_BYTES + len + d->align);
    if (arc)
        return arc;
    if (d->dio_fd >= 0) { /* staged now: copied and checksummed in one pass */
        int rc = direct_stage_reserve(d, d->stage_len + ELOG_HEADER_BYTES + len + d->align);
        if (rc)
            return rc;
        uint8_t *rec = d->stage + d->stage_len;
        elog_header_encode(rec, ledger_id, entry_id, len, d->cur->id);
        *crc = crc32c_copy(crc32c(0, rec, ELOG_HEADER_BYTES), rec + ELOG_HEADER_BYTES, data, len);
        put_le32(rec + 8, *crc);
        memcpy(h, rec, ELOG_HEADER_BYTES);
        d->stage_len += ELOG_HEADER_BYTES + (size_t)len;
    } else {
        elog_header_encode(h, ledger_id, entry_id, len, d->cur->id);
        *crc = crc32c(crc32c(0, h, ELOG_HEADER_BYTES), data, len);
        put_le32(h + 8, *crc);
    }
    *log_id = d->cur->id;
    *offset = d->wr_off;
    d->wr_off += ELOG_HEADER_BYTES + (uint64_t)len;
    return 0;
}

/* The O_DIRECT write: the stage (the last partial block written, then the
 * records reserved since, bytes from off on) padded to whole blocks and
 * written from the block's start; the new last partial block stays in the
 * stage. 0, -EINVAL (nothing written: the caller writes buffered) or -errno. */
static int direct_write_dio(elog_direct_t *d, uint64_t off, size_t bytes)
{
    assert(off + bytes == d->stage_off + d->stage_len);
    (void)off;
    (void)bytes;
    size_t a = d->align, end = d->stage_len;
    assert((end + a - 1) / a * a <= d->stage_cap); /* reserve left a block of room */
    int rc = bk_pwrite_padded(d->dio_fd, d->stage, end, d->stage_off, a);
    if (rc)
        return rc;
    size_t keep_from = end / a * a; /* the last partial block, if any, is kept */
    memmove(d->stage, d->stage + keep_from, end - keep_from);
    d->stage_off += keep_from;
    d->stage_len = end - keep_from;
    if (d->stage_cap > 2 * (size_t)DIO_KEEP_BYTES) { /* grown for a large record: back to 1 MiB */
        void *p;
        if (posix_memalign(&p, d->align, (size_t)1 << 20) == 0) {
            memcpy(p, d->stage, d->stage_len);
            free(d->stage);
            d->stage = p;
            d->stage_cap = (size_t)1 << 20;
        }
    }
    return 0;
}

int elog_direct_write(elog_direct_t *d, struct iovec *iov, int cnt, uint64_t off, bool sync)
{
    assert(d->cur && off < d->wr_off);
    int rc = -EINVAL;
    if (d->dio_fd >= 0) {
        size_t bytes = 0;
        for (int i = 0; i < cnt; i++)
            bytes += iov[i].iov_len;
        rc = direct_write_dio(d, off, bytes);
        if (rc == -EINVAL && off == 0) { /* refused at its first write: buffered from here */
            log_warn("bookie",
                     "direct entry log %08" PRIx32 ": O_DIRECT write refused: "
                     "direct logs are written buffered",
                     d->cur->id);
            direct_close_dio(d);
            d->odirect = false;
        }
    }
    if (d->dio_fd < 0)
        rc = bk_pwritev_all(d->cur->fd, iov, cnt, off);
    if (rc == 0 && sync && fdatasync(d->cur->fd) < 0)
        rc = -errno;
    if (rc)
        log_error("bookie", "direct entry log %08" PRIx32 ": write at %" PRIu64 " failed: %s",
                  d->cur->id, off, q_strerror(rc));
    return rc;
}

/* ------------------------------------------------- a direct log's tail -- */

bool elog_direct_stamped(const entry_log_t *log)
{
    uint8_t h[ELOG_HEADER_BYTES];
    return log->id != 0 && log->size >= ELOG_HEADER_BYTES &&
           pread(log->fd, h, sizeof h, 0) == (ssize_t)sizeof h && get_le32(h) == ELOG_MAGIC &&
           get_le32(h + 12) == log->id;
}

/* The end of the record the last valid idx record of log points at, or 0. */
static uint64_t idx_last_end(const entry_log_t *log)
{
    uint8_t r[ELOG_IDX_RECORD_BYTES];
    if (log->idx_fd < 0 || log->idx_size < ELOG_IDX_RECORD_BYTES ||
        pread(log->idx_fd, r, sizeof r, (off_t)(log->idx_size - ELOG_IDX_RECORD_BYTES)) !=
            (ssize_t)sizeof r ||
        !idx_record_valid(r))
        return 0;
    return get_le64(r + 16) + ELOG_HEADER_BYTES + get_le32(r + 24);
}

int elog_direct_scan_tail(entry_log_t *log, elog_tail_fn fn, void *ctx, uint32_t *found)
{
    uint64_t off = idx_last_end(log);
    if (log->rec_end > off)
        off = log->rec_end;
    *found = 0;
    for (;;) {
        uint8_t h[ELOG_HEADER_BYTES];
        if (off > log->size || log->size - off < ELOG_HEADER_BYTES)
            return 0;
        ssize_t n = pread(log->fd, h, sizeof h, (off_t)off);
        if (n < 0)
            return -errno;
        uint32_t len = get_le32(h + 4);
        if (n != (ssize_t)sizeof h || get_le32(h) != ELOG_MAGIC || get_le32(h + 12) != log->id ||
            len > ELOG_PAYLOAD_MAX || log->size - off - ELOG_HEADER_BYTES < len)
            return 0; /* not one of this log's records (len: no add is larger) */
        int64_t ledger_id = (int64_t)get_le64(h + 16), entry_id = (int64_t)get_le64(h + 24);
        qbuf_t *b = qbuf_new(len);
        if (!b)
            return -ENOMEM;
        int rc = bk_pread_all(log->fd, b->data, len, off + ELOG_HEADER_BYTES);
        if (rc) {
            qbuf_unref(b);
            return rc == QE_CORRUPT ? 0 : rc; /* the file ends within it, or an I/O error */
        }
        b->len = len;
        uint32_t crc = get_le32(h + 8);
        put_le32(h + 8, 0);
        if (crc32c(crc32c(0, h, ELOG_HEADER_BYTES), b->data, len) != crc) {
            qbuf_unref(b); /* torn: the last group written, never acknowledged */
            log_info("bookie",
                     "entry log %08" PRIx32 ": a torn record at offset %" PRIu64 " ends its tail",
                     log->id, off);
            return 0;
        }
        rc = fn(ctx, log, ledger_id, entry_id, off, b);
        if (rc)
            return rc;
        off += ELOG_HEADER_BYTES + (uint64_t)len;
        if (off > log->rec_end)
            log->rec_end = off;
        ++*found;
    }
}

bool elog_direct_is_odirect(const elog_direct_t *d)
{
    return d->dio_fd >= 0;
}

void elog_direct_publish(elog_direct_t *d)
{
    if (!d->cur)
        return;
    pthread_mutex_lock(d->lock);
    d->table->bytes += d->wr_off - d->cur->size;
    d->cur->size = d->wr_off;
    pthread_mutex_unlock(d->lock);
}
