/*
 * ledger_index.c — ledger table, per-ledger sorted entry index, ledgers.meta
 * records (formats in ledger_index.h).
 *
 * Invariants of a ledger's index: locs[0..nlocs) strictly increasing by
 * entry_id; nlocs <= cap; a deleted ledger has nlocs == 0.
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
        free(l->locs);
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
    free(l->locs);
    l->locs = NULL;
    l->nlocs = l->cap = 0;
}

void ledger_forget(ledger_table_t *lt, ledger_t *l)
{
    void *v = qmap64_remove(lt->map, (uint64_t)l->id);
    assert(v == l);
    (void)v;
    ledger_clear_dirty(lt, l);
    if (!l->deleted)
        lt->live--;
    free(l->locs);
    free(l);
}

/* ---------------------------------------------------------------- index -- */

/* First position whose entry_id >= entry_id. */
static uint32_t index_lower_bound(const ledger_t *l, int64_t entry_id)
{
    uint32_t lo = 0, hi = l->nlocs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->locs[mid].entry_id < entry_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ledger_index_put(ledger_t *l, int64_t entry_id, uint32_t log_id, uint64_t offset,
                     uint32_t length)
{
    assert(!l->deleted);
    idx_loc_t loc = {entry_id, offset, log_id, length};
    uint32_t pos = l->nlocs;
    if (l->nlocs && l->locs[l->nlocs - 1].entry_id >= entry_id) {
        pos = index_lower_bound(l, entry_id);
        if (l->locs[pos].entry_id == entry_id) {
            l->locs[pos] = loc;
            return 0;
        }
    }
    if (l->nlocs == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        idx_loc_t *n = realloc(l->locs, (size_t)cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        l->locs = n;
        l->cap = cap;
    }
    memmove(&l->locs[pos + 1], &l->locs[pos], (size_t)(l->nlocs - pos) * sizeof loc);
    l->locs[pos] = loc;
    l->nlocs++;
    assert(pos == 0 || l->locs[pos - 1].entry_id < entry_id);
    return 0;
}

const idx_loc_t *ledger_index_find(const ledger_t *l, int64_t entry_id)
{
    if (l->nlocs == 0)
        return NULL;
    uint32_t pos = index_lower_bound(l, entry_id);
    return pos < l->nlocs && l->locs[pos].entry_id == entry_id ? &l->locs[pos] : NULL;
}

int64_t ledger_index_last(const ledger_t *l)
{
    return l->nlocs ? l->locs[l->nlocs - 1].entry_id : -1;
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
