/*
 * ledger_index.c — ledger table, per-ledger sorted entry index, ledgers.meta
 * records (formats in ledger_index.h).
 *
 * Invariants of a ledger's index: runs[0..nruns) are non-empty, ordered and
 * disjoint (runs[i].first + runs[i].count <= runs[i + 1].first); nruns <= cap;
 * a deleted ledger has nruns == 0.
 */
#include "storage/bookie/ledger_index.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/entry_log.h"

/* ---------------------------------------------------------------- table -- */

int ledger_table_init(ledger_table_t *lt)
{
    lt->map = qmap64_new();
    lt->live = 0;
    return lt->map ? 0 : -ENOMEM;
}

void ledger_table_free(ledger_table_t *lt)
{
    if (!lt->map)
        return;
    qmap_iter_t it = {0};
    uint64_t key;
    void *v;
    while (qmap64_next(lt->map, &it, &key, &v)) {
        ledger_t *l = v;
        free(l->runs);
        free(l);
    }
    qmap64_free(lt->map);
    lt->map = NULL;
}

ledger_t *ledger_find(const ledger_table_t *lt, int64_t id)
{
    return qmap64_get(lt->map, (uint64_t)id);
}

ledger_t *ledger_get_or_create(ledger_table_t *lt, int64_t id)
{
    ledger_t *l = ledger_find(lt, id);
    if (l)
        return l;
    l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->id = id;
    l->lac = -1;
    l->last_entry = -1;
    if (qmap64_put(lt->map, (uint64_t)id, l) != 0) {
        free(l);
        return NULL;
    }
    ledger_set_dirty(lt, l);
    lt->live++;
    return l;
}

void ledger_set_dirty(ledger_table_t *lt, ledger_t *l)
{
    if (l->dirty)
        return;
    l->dirty = true;
    l->dirty_prev = NULL;
    l->dirty_next = lt->dirty_head;
    if (lt->dirty_head)
        lt->dirty_head->dirty_prev = l;
    lt->dirty_head = l;
    lt->ndirty++;
}

void ledger_clear_dirty(ledger_table_t *lt, ledger_t *l)
{
    if (!l->dirty)
        return;
    assert(lt->ndirty > 0);
    if (l->dirty_prev)
        l->dirty_prev->dirty_next = l->dirty_next;
    else
        lt->dirty_head = l->dirty_next;
    if (l->dirty_next)
        l->dirty_next->dirty_prev = l->dirty_prev;
    l->dirty_prev = l->dirty_next = NULL;
    l->dirty = false;
    lt->ndirty--;
}

void ledger_mark_deleted(ledger_table_t *lt, ledger_t *l)
{
    if (!l->deleted) {
        assert(lt->live > 0);
        lt->live--;
    }
    l->deleted = true;
    ledger_set_dirty(lt, l);
    free(l->runs);
    l->runs = NULL;
    l->nruns = l->cap = 0;
}

void ledger_forget(ledger_table_t *lt, ledger_t *l)
{
    void *v = qmap64_remove(lt->map, (uint64_t)l->id);
    assert(v == l);
    (void)v;
    ledger_clear_dirty(lt, l);
    if (!l->deleted)
        lt->live--;
    free(l->runs);
    free(l);
}

/* ---------------------------------------------------------------- index -- */

#define REC ELOG_IDX_RECORD_BYTES

static int64_t run_end(const idx_run_t *r) /* one past the last entry */
{
    return r->first + (int64_t)r->count;
}

/* The run holding entry_id, else the last run before it: its index, or -1. */
static int64_t run_at_or_before(const ledger_t *l, int64_t entry_id)
{
    uint32_t lo = 0, hi = l->nruns; /* first run with first > entry_id */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->runs[mid].first <= entry_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo - 1;
}

/* b's records follow a's in the same idx file, and its entries a's. */
static bool runs_join(const idx_run_t *a, const idx_run_t *b)
{
    return a->log_id == b->log_id && run_end(a) == b->first &&
           a->pos + (uint64_t)a->count * REC == b->pos &&
           (uint64_t)a->count + b->count <= UINT32_MAX;
}

/* Room for n more runs. */
static int runs_reserve(ledger_t *l, uint32_t n)
{
    if (l->nruns + n <= l->cap)
        return 0;
    uint32_t cap = l->cap ? l->cap : 4;
    while (cap < l->nruns + n)
        cap *= 2;
    idx_run_t *r = realloc(l->runs, (size_t)cap * sizeof *r);
    if (!r)
        return -ENOMEM;
    l->runs = r;
    l->cap = cap;
    return 0;
}

/* Replaces runs[at .. at + del) with the n runs of add. Room reserved. */
static void runs_splice(ledger_t *l, uint32_t at, uint32_t del, const idx_run_t *add, uint32_t n)
{
    memmove(&l->runs[at + n], &l->runs[at + del], (l->nruns - at - del) * sizeof *l->runs);
    if (n)
        memcpy(&l->runs[at], add, n * sizeof *add);
    l->nruns = l->nruns - del + n;
}

/* Merges runs[i] into runs[i - 1] when they line up (i in 1 .. nruns - 1). */
static void runs_merge_prev(ledger_t *l, uint32_t i)
{
    if (i == 0 || i >= l->nruns || !runs_join(&l->runs[i - 1], &l->runs[i]))
        return;
    l->runs[i - 1].count += l->runs[i].count;
    runs_splice(l, i, 1, NULL, 0);
}

int ledger_index_put_run(ledger_t *l, int64_t first, uint32_t count, uint32_t log_id, uint64_t pos,
                         uint32_t max_length)
{
    assert(!l->deleted && first >= 0);
    if (count == 0)
        return 0;
    idx_run_t add[3];
    uint32_t n = 0, at, del;
    idx_run_t *last = l->nruns ? &l->runs[l->nruns - 1] : NULL;
    idx_run_t run = {.first = first, .pos = pos, .count = count, .log_id = log_id};
    if (last && runs_join(last, &run)) { /* the usual append */
        last->count += count;
        goto done;
    }
    int64_t end = first + (int64_t)count;
    int64_t i = run_at_or_before(l, first);
    /* runs[a .. j] overlap [first, end): the ones cut or replaced. */
    uint32_t a = (uint32_t)(i >= 0 && run_end(&l->runs[i]) > first ? i : i + 1);
    int64_t j = run_at_or_before(l, end - 1);
    del = j >= (int64_t)a ? (uint32_t)(j - (int64_t)a + 1) : 0;
    if (del && l->runs[a].first < first) { /* what stays before it */
        const idx_run_t *r = &l->runs[a];
        add[n++] = (idx_run_t){r->first, r->pos, (uint32_t)(first - r->first), r->log_id};
    }
    at = a + n;
    add[n++] = run;
    if (del && run_end(&l->runs[j]) > end) { /* ... and after it */
        const idx_run_t *r = &l->runs[j];
        uint64_t k = (uint64_t)(end - r->first);
        add[n++] = (idx_run_t){end, r->pos + k * REC, (uint32_t)(r->count - k), r->log_id};
    }
    if (n > del && runs_reserve(l, n - del))
        return -ENOMEM;
    runs_splice(l, a, del, add, n);
    runs_merge_prev(l, at + 1);
    runs_merge_prev(l, at);
done:
    if (max_length > l->max_length)
        l->max_length = max_length;
    return 0;
}

int ledger_index_put(ledger_t *l, int64_t entry_id, uint32_t log_id, uint64_t pos, uint32_t length)
{
    return ledger_index_put_run(l, entry_id, 1, log_id, pos, length);
}

bool ledger_index_find(const ledger_t *l, int64_t entry_id, idx_ref_t *out)
{
    int64_t i = run_at_or_before(l, entry_id);
    if (i < 0 || entry_id >= run_end(&l->runs[i]))
        return false;
    const idx_run_t *r = &l->runs[i];
    *out = (idx_ref_t){r->log_id, r->pos + (uint64_t)(entry_id - r->first) * REC};
    return true;
}

int64_t ledger_index_last(const ledger_t *l)
{
    return l->nruns ? run_end(&l->runs[l->nruns - 1]) - 1 : -1;
}

uint32_t ledger_index_max_length(const ledger_t *l)
{
    return l->max_length;
}

/* ------------------------------------------------------------ meta file -- */

void ledger_meta_encode(const ledger_t *l, uint8_t *out)
{
    memset(out, 0, LEDGER_META_RECORD_BYTES);
    put_le32(out, LEDGER_META_MAGIC);
    put_le32(out + 4, (l->fenced ? 1u : 0u) | (l->deleted ? 2u : 0u));
    put_le64(out + 8, (uint64_t)l->id);
    put_le64(out + 16, (uint64_t)l->lac);
    put_le64(out + 24, (uint64_t)l->last_entry);
    put_le32(out + 44, crc32c(0, out, 44));
}

static int ledger_meta_apply(ledger_table_t *lt, const uint8_t *r)
{
    ledger_t *l = ledger_get_or_create(lt, (int64_t)get_le64(r + 8));
    if (!l)
        return -ENOMEM;
    uint32_t flags = get_le32(r + 4);
    l->fenced = flags & 1u;
    l->lac = (int64_t)get_le64(r + 16);
    l->last_entry = (int64_t)get_le64(r + 24);
    if (flags & 2u) {
        ledger_mark_deleted(lt, l);
    } else if (l->deleted) { /* tombstone collected, then the id used again */
        l->deleted = false;
        lt->live++;
    }
    ledger_clear_dirty(lt, l);
    return 0;
}

static bool ledger_meta_valid(const uint8_t *r)
{
    return get_le32(r) == LEDGER_META_MAGIC && crc32c(0, r, 44) == get_le32(r + 44);
}

int ledger_meta_load(ledger_table_t *lt, const char *dir, uint64_t *size_out, uint64_t *records_out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, LEDGER_META_FILE);
    *size_out = *records_out = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    enum { CHUNK = 1024 };
    uint8_t *buf = malloc(CHUNK * LEDGER_META_RECORD_BYTES);
    uint64_t off = 0;
    int rc = buf ? 0 : -ENOMEM;
    bool bad = false;
    while (rc == 0 && !bad) {
        ssize_t n = pread(fd, buf, CHUNK * LEDGER_META_RECORD_BYTES, (off_t)off);
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        for (size_t i = 0; i + LEDGER_META_RECORD_BYTES <= (size_t)n && !bad && rc == 0;
             i += LEDGER_META_RECORD_BYTES) {
            if (!ledger_meta_valid(buf + i)) {
                bad = true;
                break;
            }
            rc = ledger_meta_apply(lt, buf + i);
            off += LEDGER_META_RECORD_BYTES;
            (*records_out)++;
        }
        if ((size_t)n % LEDGER_META_RECORD_BYTES)
            bad = true; /* partial record at the end */
    }
    struct stat st;
    if (rc == 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > off) {
        log_warn("bookie", "%s: torn or corrupt record at offset %" PRIu64 ", truncating", path,
                 off);
        if (ftruncate(fd, (off_t)off) < 0 || fsync(fd) < 0)
            rc = -errno;
    }
    free(buf);
    close(fd);
    *size_out = off;
    return rc;
}
