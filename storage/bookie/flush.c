/*
 * flush.c — the bookie's flush thread: moves a frozen write cache into entry
 * logs, updates the index, persists ledger metadata, writes the checkpoint and
 * trims the journal; and garbage collection, run on the same thread so that a
 * GC pass never races a flush.
 *
 * Flush steps (flush_run), each durable before the next starts:
 *   1. entries of the frozen cache, sorted by (ledger, entry), skipping
 *      ledgers deleted meanwhile, appended to the current entry log;
 *      elog_sync (log fdatasync, idx append, idx fdatasync). Entries the
 *      journal thread already wrote to a direct log are not copied: their idx
 *      records are appended to that log's .idx (fdatasync), unless the index
 *      already points at that very record (journal replayed after a crash
 *      that followed their flush);
 *   2. index updated under the bookie lock (a ledger deleted meanwhile is
 *      skipped, so deletion always wins);
 *   3. dirty ledger metadata appended to ledgers.meta, fdatasync (rewritten
 *      whole, tmp + rename, when mostly stale or tombstones were collected);
 *   4. checkpoint file (tmp + rename) = the journal position of the freeze;
 *   5. journal files before the checkpoint's file deleted.
 * A crash between any two steps leaves the previous checkpoint in force, and
 * the journal replays the same adds again (idempotent: a later location wins).
 *
 * Location order: the index is rebuilt at open from the .idx files, logs in id
 * order, so a new location of an entry must come after every earlier one on
 * disk. Two writers make that non-trivial (a direct log may have a higher id
 * than the flush writer's current log, or a lower one). Kept by induction on
 * the indexed location: a copy (flush or compaction) goes to a log whose id is
 * at least that of the entry's indexed location (elog_ensure_after retires
 * the current log otherwise, so the copy starts a new, highest, log); a
 * direct record is indexed in place only when it is after the indexed
 * location, and copied otherwise (a re-add of an entry whose previous version
 * sits in a newer log: rare).
 *
 * checkpoint file (ledgers/checkpoint, 32 bytes, little-endian):
 *
 *   offset size meaning
 *   0      4    magic 0x31504351 ("QCP1")
 *   4      4    version: 1, or 2 when the journal may hold ADD_REF records
 *                (journal_large_entry_bytes != 0; an older binary refuses 2),
 *                or 3 when the journal files from this position on are of
 *                format 3 (journal.h; every earlier binary refuses 3)
 *   8      8    journal file seq to replay from
 *   16     8    offset in that file
 *   24     4    reserved, zero
 *   28     4    crc32c of bytes 0..27
 *
 * GC pass (gc_run): pinned direct logs (entry_log.h) are skipped until the
 * durable checkpoint passes their seal position. Per entry log, live bytes =
 * bytes of ledgers that still exist (per-log ledger map). A log with none is
 * deleted; in a pass that compacts (bookie.c decides: BookKeeper's minor and
 * major compactions), a log with live/size below the pass's threshold is
 * compacted: its index-live records are
 * read back (checksum verified), appended to the current log, synced, the
 * index moved to the copies (only where it still points at the old record),
 * then the old log deleted. Copies are synced and moved a step of
 * GC_COMPACT_STEP_BYTES at a time, paced to gc_compact_bytes_per_s; a stop of
 * the flush thread abandons the compaction between steps (the log stays, the
 * copies made so far are where the index points). The current log is never
 * compacted; if it holds no live data it is retired (the next flush starts a
 * new log) and deleted. Finally tombstones of deleted ledgers no log mentions
 * any more are dropped.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/trash.h"

#define CHECKPOINT_MAGIC 0x31504351u
#define CHECKPOINT_BYTES 32u
#define FLUSH_APPLY_BATCH 4096u
#define META_REWRITE_MIN_BYTES (4u << 20)
#define GC_CHUNK_RECORDS 4096u
#define GC_COMPACT_STEP_BYTES (1u << 20) /* compaction copies synced together */

/* ----------------------------------------------------------- checkpoint -- */

int checkpoint_load(const char *ldir, journal_pos_t *out, uint32_t *version_out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", ldir, BOOKIE_CHECKPOINT_FILE);
    *out = (journal_pos_t){0, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    uint8_t b[CHECKPOINT_BYTES];
    int rc = bk_pread_all(fd, b, sizeof b, 0);
    close(fd);
    uint32_t version = rc == 0 ? get_le32(b + 4) : 0;
    if (rc == 0 &&
        (get_le32(b) != CHECKPOINT_MAGIC || version < 1 ||
         version > BOOKIE_CHECKPOINT_VERSION_MAX || crc32c(0, b, 28) != get_le32(b + 28)))
        rc = QE_CORRUPT;
    if (rc) {
        log_error("bookie", "%s is unreadable or corrupt (%s): refusing to open", path,
                  q_strerror(rc));
        return rc;
    }
    *out = (journal_pos_t){get_le64(b + 8), get_le64(b + 16)};
    *version_out = version;
    return 0;
}

static int checkpoint_write(bookie_t *bk, journal_pos_t cp)
{
    uint8_t b[CHECKPOINT_BYTES] = {0};
    put_le32(b, CHECKPOINT_MAGIC);
    put_le32(b + 4, bk->cfg.journal_format_version >= 3 ? 3
                    : bk->cfg.journal_large_entry_bytes ? 2
                                                        : 1);
    put_le64(b + 8, cp.seq);
    put_le64(b + 16, cp.off);
    put_le32(b + 28, crc32c(0, b, 28));
    int rc = bk_write_file_atomic(bk->ldir, BOOKIE_CHECKPOINT_FILE, b, sizeof b);
    if (rc)
        log_error("bookie", "cannot write the checkpoint in %s: %s", bk->ldir, q_strerror(rc));
    else
        bk->cp_durable = cp;
    return rc;
}

/* ------------------------------------------------ errors and injection -- */

bool flush_error_retryable(int rc)
{
    return rc == -ENOSPC || rc == -EDQUOT;
}

/* An undo that failed: its error, never one that reads as retryable. */
static int flush_undo_failed(int rc)
{
    return flush_error_retryable(rc) ? -EIO : rc;
}

/* The error a test asked the given step to fail with (once), else 0. */
static int flush_inject(bookie_t *bk, int step)
{
    pthread_mutex_lock(&bk->flock);
    int rc = bk->test_flush_step == step ? bk->test_flush_err : 0;
    if (rc)
        bk->test_flush_step = bk->test_flush_err = 0;
    pthread_mutex_unlock(&bk->flock);
    return rc;
}

/* ------------------------------------------------------------ meta file -- */

int meta_file_open(bookie_t *bk)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", bk->ldir, LEDGER_META_FILE);
    if (bk->meta_fd >= 0)
        close(bk->meta_fd);
    bk->meta_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (bk->meta_fd < 0) {
        int rc = -errno;
        log_error("bookie", "cannot open %s: %s", path, q_strerror(rc));
        return rc;
    }
    return 0;
}

/* One ledgers.meta record of l into out; l is then clean (lock held). */
static void ledger_encode_clean(ledger_table_t *lt, ledger_t *l, uint8_t *out)
{
    ledger_meta_encode(l, out);
    ledger_clear_dirty(lt, l);
}

/* Encodes the ledgers selected under the lock and clears their dirty flags:
 * all of them (a rewrite, rare), or only those on the dirty list, so that a
 * checkpoint costs O(ledgers changed), not O(ledgers known). */
static int meta_snapshot(bookie_t *bk, bool all, uint8_t **out, uint64_t *n_out)
{
    pthread_mutex_lock(&bk->lock);
    ledger_table_t *lt = &bk->ledgers;
    size_t cap = all ? qmap64_size(lt->map) : lt->ndirty, n = 0;
    uint8_t *buf = malloc((cap ? cap : 1) * LEDGER_META_RECORD_BYTES);
    if (buf && all) {
        qmap_iter_t it = {0};
        uint64_t key;
        void *v;
        while (qmap64_next(lt->map, &it, &key, &v) && n < cap) {
            ledger_encode_clean(lt, v, buf + n++ * LEDGER_META_RECORD_BYTES);
        }
        assert(lt->ndirty == 0);
    } else if (buf) {
        while (lt->dirty_head && n < cap)
            ledger_encode_clean(lt, lt->dirty_head, buf + n++ * LEDGER_META_RECORD_BYTES);
        assert(lt->dirty_head == NULL);
    }
    pthread_mutex_unlock(&bk->lock);
    *out = buf;
    *n_out = n;
    return buf ? 0 : -ENOMEM;
}

static int meta_rewrite(bookie_t *bk)
{
    uint8_t *buf;
    uint64_t n;
    int rc = meta_snapshot(bk, true, &buf, &n);
    if (rc == 0)
        rc = bk_write_file_atomic(bk->ldir, LEDGER_META_FILE, buf, n * LEDGER_META_RECORD_BYTES);
    free(buf);
    if (rc == 0)
        rc = meta_file_open(bk);
    if (rc == 0) {
        bk->meta_size = n * LEDGER_META_RECORD_BYTES;
        bk->meta_records = n;
        bk->meta_rewrite = false;
    }
    return rc;
}

static int meta_persist(bookie_t *bk)
{
    pthread_mutex_lock(&bk->lock);
    uint64_t live = qmap64_size(bk->ledgers.map);
    pthread_mutex_unlock(&bk->lock);
    if (bk->meta_rewrite ||
        (bk->meta_size > META_REWRITE_MIN_BYTES && bk->meta_records > 2 * live)) {
        int rc = flush_inject(bk, FLUSH_STEP_META);
        if (rc == 0)
            rc = meta_rewrite(bk);
        if (rc)
            bk->meta_rewrite = true; /* a snapshot of all cleared every dirty flag */
        return rc;
    }
    uint8_t *buf;
    uint64_t n;
    int rc = meta_snapshot(bk, false, &buf, &n);
    if (rc == 0 && n) {
        rc = bk_pwrite_all(bk->meta_fd, buf, n * LEDGER_META_RECORD_BYTES, bk->meta_size);
        if (rc == 0)
            rc = flush_inject(bk, FLUSH_STEP_META);
        if (rc == 0 && fdatasync(bk->meta_fd) < 0)
            rc = -errno;
        if (rc == 0) {
            bk->meta_size += n * LEDGER_META_RECORD_BYTES;
            bk->meta_records += n;
        }
    }
    free(buf);
    if (rc) {
        log_error("bookie", "cannot persist ledger metadata: %s", q_strerror(rc));
        /* the records' dirty flags are gone: the next time rewrites them all */
        bk->meta_rewrite = true;
        if (n && ftruncate(bk->meta_fd, (off_t)bk->meta_size) < 0) {
            int trc = -errno;
            log_error("bookie", "cannot cut %s back to %" PRIu64 " bytes: %s", LEDGER_META_FILE,
                      bk->meta_size, q_strerror(trc));
            rc = flush_undo_failed(trc);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------- flush -- */

enum flush_how {
    FLUSH_COPY,   /* appended to the flush writer's log */
    FLUSH_DIRECT, /* already in a direct log: idx record only */
    FLUSH_SAME,   /* already in a direct log and indexed there */
};

typedef struct flush_loc {
    uint32_t item;
    uint32_t log_id;
    uint64_t offset;
    uint32_t prev_log; /* log of the entry's indexed location (0: none) */
    uint32_t how;      /* enum flush_how */
    uint64_t prev_pos; /* its idx record in <prev_log>.idx */
    uint64_t prev_off; /* its offset in prev_log, when prev_log == the item's direct log */
    uint64_t pos;      /* the new idx record's position (COPY, DIRECT) */
} flush_loc_t;

static int flush_loc_cmp(const void *a, const void *b, void *ctx)
{
    const write_cache_t *wc = ctx;
    const wc_item_t *x = &wc->items[((const flush_loc_t *)a)->item];
    const wc_item_t *y = &wc->items[((const flush_loc_t *)b)->item];
    if (x->ledger_id != y->ledger_id)
        return x->ledger_id < y->ledger_id ? -1 : 1;
    return x->entry_id < y->entry_id ? -1 : x->entry_id > y->entry_id;
}

/* Items of wc whose ledger still exists, with their indexed location, sorted
 * by (ledger, entry). Only this thread and deletions change the index, and a
 * deletion is checked again when the index is updated. */
static uint32_t flush_order(bookie_t *bk, const write_cache_t *wc, flush_loc_t *locs)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < wc->count;) {
        pthread_mutex_lock(&bk->lock); /* in batches: the loop takes this lock per add */
        for (uint32_t k = 0; k < FLUSH_APPLY_BATCH && i < wc->count; k++, i++) {
            const wc_item_t *it = &wc->items[i];
            const ledger_t *l = !it->dropped ? ledger_find(&bk->ledgers, it->ledger_id) : NULL;
            if (!l || l->deleted)
                continue;
            idx_ref_t prev;
            bool had = ledger_index_find(l, it->entry_id, &prev);
            locs[n++] = (flush_loc_t){
                .item = i, .prev_log = had ? prev.log_id : 0, .prev_pos = had ? prev.pos : 0};
        }
        pthread_mutex_unlock(&bk->lock);
    }
    qsort_r(locs, n, sizeof *locs, flush_loc_cmp, (void *)wc);
    return n;
}

/* The offset of the indexed version of a direct entry re-added to the same
 * direct log (flush_place compares the two): read from its idx record. GC,
 * the only remover of logs, runs on this thread. */
static int flush_prev_offset(bookie_t *bk, const wc_item_t *it, flush_loc_t *loc)
{
    pthread_mutex_lock(&bk->lock);
    const entry_log_t *log = log_table_find(&bk->logs, loc->prev_log);
    pthread_mutex_unlock(&bk->lock);
    uint32_t len;
    return log ? entry_log_locate(log, loc->prev_pos, it->ledger_id, it->entry_id, &loc->prev_off,
                                  &len)
               : QE_CORRUPT;
}

/* The payload of a direct entry of the write cache, read from its log (which
 * the write cache's unflushed references keep on disk). */
static int flush_read_direct(bookie_t *bk, const wc_item_t *it, qbuf_t **out)
{
    pthread_mutex_lock(&bk->lock);
    entry_log_t *log = log_table_find(&bk->logs, it->log_id);
    if (log)
        log->refs++;
    pthread_mutex_unlock(&bk->lock);
    if (!log)
        return QE_CORRUPT;
    int rc = entry_log_read(log, it->log_off, it->len, it->ledger_id, it->entry_id, out);
    pthread_mutex_lock(&bk->lock);
    entry_log_unref(log);
    pthread_mutex_unlock(&bk->lock);
    return rc;
}

/* Where one item goes (see "Location order" above); copies are appended. */
static int flush_place(bookie_t *bk, const wc_item_t *it, flush_loc_t *loc)
{
    if (it->log_id && loc->prev_log == it->log_id) {
        int rc = flush_prev_offset(bk, it, loc);
        if (rc)
            return rc;
    }
    if (it->log_id) {
        loc->log_id = it->log_id;
        loc->offset = it->log_off;
        if (loc->prev_log == it->log_id && loc->prev_off == it->log_off) {
            loc->how = FLUSH_SAME;
            return 0;
        }
        if (loc->prev_log < it->log_id ||
            (loc->prev_log == it->log_id && loc->prev_off < it->log_off)) {
            loc->how = FLUSH_DIRECT;
            return 0;
        }
    }
    loc->how = FLUSH_COPY;
    int rc = loc->prev_log ? elog_ensure_after(&bk->writer, loc->prev_log) : 0;
    qbuf_t *b = it->data ? qbuf_ref(it->data) : NULL;
    if (rc == 0 && !b) /* a direct entry re-added behind its indexed copy: read it back */
        rc = flush_read_direct(bk, it, &b);
    if (rc == 0)
        rc = elog_append(&bk->writer, it->ledger_id, it->entry_id, b->data, b->len, &loc->log_id,
                         &loc->offset, &loc->pos);
    qbuf_unref(b);
    return rc;
}

/* By log, then (ledger, entry) as flush_order sorted them: a ledger's idx
 * records of one flush are then together and in order, one index run (the
 * records in the log are in arrival order, interleaving the ledgers). */
static int flush_direct_cmp(const void *a, const void *b)
{
    const flush_loc_t *x = *(const flush_loc_t *const *)a, *y = *(const flush_loc_t *const *)b;
    if (x->log_id != y->log_id)
        return x->log_id < y->log_id ? -1 : 1;
    return x < y ? -1 : x > y; /* locs[] is in (ledger, entry) order */
}

/* One log's .idx before flush_direct_index appended to it, and the items
 * d[from..counted) counted in its ledger map. */
typedef struct idx_undo {
    entry_log_t *log;
    uint64_t idx_size;
    uint32_t from, counted;
} idx_undo_t;

/* Appends the idx records of the FLUSH_DIRECT items to their logs' .idx
 * (one append + fdatasync per log) and counts them in the logs' ledger maps. */
static int flush_direct_index(bookie_t *bk, const write_cache_t *wc, flush_loc_t *locs, uint32_t n)
{
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++)
        nd += locs[i].how == FLUSH_DIRECT;
    if (nd == 0)
        return 0;
    flush_loc_t **d = malloc(nd * sizeof *d);
    uint8_t *recs = malloc((size_t)nd * ELOG_IDX_RECORD_BYTES);
    int rc = d && recs ? 0 : -ENOMEM;
    nd = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++)
        if (locs[i].how == FLUSH_DIRECT)
            d[nd++] = &locs[i];
    if (rc == 0)
        qsort(d, nd, sizeof *d, flush_direct_cmp); /* by log, then offset: file order */
    /* what each log had before: undone if a later one fails */
    idx_undo_t *undo = rc == 0 ? malloc(nd * sizeof *undo) : NULL;
    uint32_t nundo = 0;
    if (rc == 0 && !undo)
        rc = -ENOMEM;
    for (uint32_t i = 0; i < nd && rc == 0;) {
        uint32_t k = i;
        pthread_mutex_lock(&bk->lock);
        entry_log_t *log = log_table_find(&bk->logs, d[i]->log_id);
        pthread_mutex_unlock(&bk->lock);
        assert(log != NULL); /* GC never removes a log the write cache points into */
        for (; k < nd && d[k]->log_id == d[i]->log_id; k++) {
            const wc_item_t *it = &wc->items[d[k]->item];
            elog_idx_encode(recs + (size_t)(k - i) * ELOG_IDX_RECORD_BYTES, it->ledger_id,
                            it->entry_id, d[k]->offset, it->len);
            d[k]->pos = log->idx_size + (uint64_t)(k - i) * ELOG_IDX_RECORD_BYTES;
        }
        undo[nundo] = (idx_undo_t){log, log->idx_size, i, i};
        rc = elog_idx_append(bk->ldir, log, recs, (size_t)(k - i) * ELOG_IDX_RECORD_BYTES);
        if (rc == 0)
            nundo++;
        for (uint32_t m = i; m < k && rc == 0; m++) {
            const wc_item_t *it = &wc->items[d[m]->item];
            rc = lb_map_add(&log->ledgers, it->ledger_id, ELOG_HEADER_BYTES + it->len);
            if (rc == 0)
                undo[nundo - 1].counted = m + 1;
        }
        i = k;
    }
    if (rc == 0)
        rc = flush_inject(bk, FLUSH_STEP_DIRECT_IDX);
    /* A failure leaves every .idx as it was, so that the step can run again
     * (a flush that failed for lack of room: flush_run). */
    for (uint32_t u = 0; rc && u < nundo; u++) {
        for (uint32_t m = undo[u].from; m < undo[u].counted; m++) {
            const wc_item_t *it = &wc->items[d[m]->item];
            lb_map_sub(&undo[u].log->ledgers, it->ledger_id, ELOG_HEADER_BYTES + it->len);
        }
        int crc = elog_idx_cut(bk->ldir, undo[u].log, undo[u].idx_size);
        if (crc)
            rc = flush_undo_failed(crc);
    }
    free(undo);
    free(d);
    free(recs);
    return rc;
}

static int flush_apply(bookie_t *bk, const write_cache_t *wc, const flush_loc_t *locs, uint32_t n)
{
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0;) {
        pthread_mutex_lock(&bk->lock);
        for (uint32_t k = 0; k < FLUSH_APPLY_BATCH && i < n && rc == 0; k++, i++) {
            const wc_item_t *it = &wc->items[locs[i].item];
            ledger_t *l = ledger_find(&bk->ledgers, it->ledger_id);
            if (!l || l->deleted || locs[i].how == FLUSH_SAME)
                continue;
            rc = ledger_index_put(l, it->entry_id, locs[i].log_id, locs[i].pos, it->len);
        }
        pthread_mutex_unlock(&bk->lock);
    }
    return rc;
}

/* Pacing. The copies a flush appends reach the device as they are written
 * (elog_writeback), and on a device with a volatile write cache the journal's
 * next fdatasync has to flush whatever reached it since its last one: copies
 * written as fast as the CPU goes (16 MiB in 12 ms on the benchmark VM) made
 * each journal sync meanwhile carry 1-2 MB, the adds' p99 3.5-4 ms at 50,000
 * 1-KiB adds a second. So the loop gives each flush a pace, FLUSH_PACE_FACTOR
 * times the rate its cache filled at (at least FLUSH_PACE_MIN), and the copies
 * keep to it, sleeping when ahead; the loop sets flush_hurry (no more pacing)
 * when adds wait for room or the next cache is half full, and at close. */
#define FLUSH_PACE_SLACK_US 1000
#define FLUSH_PACE_SLEEP_MAX_US 5000

typedef struct flush_pace {
    uint64_t bytes_per_s, t0_us, bytes;
} flush_pace_t;

static void flush_pace(bookie_t *bk, flush_pace_t *p, uint64_t bytes)
{
    p->bytes += bytes;
    if (!p->bytes_per_s)
        return;
    uint64_t due_us = p->bytes * 1000000u / p->bytes_per_s;
    while (!atomic_load(&bk->flush_hurry)) {
        uint64_t spent_us = clock_mono_us() - p->t0_us;
        if (due_us <= spent_us + FLUSH_PACE_SLACK_US)
            return;
        uint64_t us = due_us - spent_us;
        if (us > FLUSH_PACE_SLEEP_MAX_US)
            us = FLUSH_PACE_SLEEP_MAX_US; /* then look at flush_hurry again */
        nanosleep(&(struct timespec){0, (long)us * 1000L}, NULL);
    }
}

/* A flush that failed for lack of room after its copies were durable: where
 * it goes on when the loop hands the same frozen cache over again. */
struct flush_resume {
    const write_cache_t *wc;
    flush_loc_t *locs;
    uint32_t n;
    int step; /* enum flush_step: the first one still to do */
};

void flush_resume_drop(bookie_t *bk)
{
    if (bk->flush_resume) {
        free(bk->flush_resume->locs);
        free(bk->flush_resume);
        bk->flush_resume = NULL;
    }
}

/* Step 1 (FLUSH_STEP_COPIES): each item placed, the copies appended and
 * synced. On failure the writer forgets what it appended since its last sync
 * (elog_writer_abandon): nothing of the attempt is indexed or counted, and
 * the flush starts again from here. */
static int flush_copies(bookie_t *bk, const write_cache_t *wc, flush_loc_t *locs, uint32_t n,
                        uint64_t pace_bytes_per_s)
{
    int rc = 0;
    uint32_t copies = 0;
    flush_pace_t pace = {pace_bytes_per_s, clock_mono_us(), 0};
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const wc_item_t *it = &wc->items[locs[i].item];
        rc = flush_place(bk, it, &locs[i]);
        if (rc == 0 && locs[i].how == FLUSH_COPY) {
            copies++;
            flush_pace(bk, &pace, ELOG_HEADER_BYTES + (uint64_t)it->len);
        }
    }
    if (rc == 0 && copies)
        rc = elog_sync(&bk->writer);
    if (rc) {
        int arc = elog_writer_abandon(&bk->writer);
        if (arc)
            rc = flush_undo_failed(arc);
    }
    return rc;
}

int flush_run(bookie_t *bk, const write_cache_t *wc, journal_pos_t cp, bool checkpoint,
              uint64_t pace_bytes_per_s)
{
    flush_loc_t *locs;
    uint32_t n = 0;
    int rc = 0, step = FLUSH_STEP_COPIES;
    struct flush_resume *res = bk->flush_resume;
    if (res && res->wc == wc) { /* the same frozen cache again: on from its failed step */
        locs = res->locs;
        n = res->n;
        step = res->step;
        free(res);
        bk->flush_resume = NULL;
    } else {
        flush_resume_drop(bk);
        locs = malloc(((size_t)wc->count + 1) * sizeof *locs);
        rc = locs ? 0 : -ENOMEM;
        n = rc ? 0 : flush_order(bk, wc, locs);
    }
    if (rc == 0 && step == FLUSH_STEP_COPIES &&
        (rc = flush_copies(bk, wc, locs, n, pace_bytes_per_s)) == 0)
        step = FLUSH_STEP_DIRECT_IDX;
    if (rc == 0 && step == FLUSH_STEP_DIRECT_IDX && (rc = flush_direct_index(bk, wc, locs, n)) == 0)
        step = FLUSH_STEP_APPLY;
    if (rc == 0 && step == FLUSH_STEP_APPLY && (rc = flush_apply(bk, wc, locs, n)) == 0)
        step = FLUSH_STEP_META;
    if (rc == 0 && step == FLUSH_STEP_META && (rc = meta_persist(bk)) == 0)
        step = FLUSH_STEP_CHECKPOINT;
    if (rc == 0 && checkpoint) {
        rc = flush_inject(bk, FLUSH_STEP_CHECKPOINT);
        if (rc == 0)
            rc = checkpoint_write(bk, cp);
    }
    if (rc && flush_error_retryable(rc) && step > FLUSH_STEP_COPIES) {
        res = malloc(sizeof *res);
        if (res) {
            *res = (struct flush_resume){wc, locs, n, step};
            bk->flush_resume = res;
            locs = NULL;
        } else {
            rc = -ENOMEM;
        }
    }
    free(locs);
    if (rc == 0 && checkpoint) {
        int trc =
            journal_trim(bk->jdir, cp.seq, bk->cfg.journal_format_version >= 3 ? bk->spares : NULL);
        if (trc)
            log_warn("bookie", "journal trim failed: %s (retried at the next checkpoint)",
                     q_strerror(trc));
    }
    static const char *const steps[] = {"",      "copies",          "idx records of direct entries",
                                        "index", "ledger metadata", "checkpoint"};
    if (rc && flush_error_retryable(rc))
        log_error("bookie",
                  "flush of %u entries failed at its %s: %s; what it wrote of that step is undone "
                  "and it runs again from there",
                  wc->count, steps[step], q_strerror(rc));
    else if (rc)
        log_error("bookie", "flush of %u entries failed at its %s: %s; the bookie turns read-only",
                  wc->count, steps[step], q_strerror(rc));
    return rc;
}

/* ------------------------------------------------------------------- GC -- */

typedef struct gc_move {
    int64_t ledger_id, entry_id;
    uint64_t old_pos, old_off; /* its idx record and record in the log compacted */
    uint64_t new_off, new_pos;
    uint32_t new_log, len;
} gc_move_t;

/* Removes the log from the table and from the directory at once (renamed to
 * <id>.log.del, which no open loads and every open deletes: bookie.c), then
 * frees its blocks in the background (trash.h). A log with nothing live in it (reuse)
 * may instead become the direct logs' spare file (spares_offer: renamed to
 * spare.zero, which every open deletes too): its blocks are written over by
 * the next direct log, none freed; a compacted one too (its live records
 * copied and the index moved to the copies). Either way, reads already given
 * the log finish first (gc_release_log): none is given it after. Reads still
 * holding it after GC's wait (a disk stuck for seconds) keep it readable: the
 * file is only unlinked then, its blocks freed when they close it. */
static void gc_yield_to_flush(bookie_t *bk);

/* Reads given to the readers before the log left the table hold it (refs)
 * and read its descriptors; GC waits this long for them before it cuts,
 * renames or reuses the file under them. */
#define GC_READS_WAIT_MS 10000

typedef enum {
    GC_RELEASED,     /* no read holds the log */
    GC_READS_LEFT,   /* reads still hold it after GC_READS_WAIT_MS */
    GC_READS_AT_STOP /* the flush thread is stopping with reads holding it */
} gc_release_t;

/* Drops the table's hold on log, then waits until no read holds it (running
 * any flush asked for meanwhile). GC_READS_AT_STOP when the flush thread is
 * stopping first: the loop that completes the reads waits for this thread. */
static gc_release_t gc_release_log(bookie_t *bk, entry_log_t *log)
{
    pthread_mutex_lock(&bk->lock);
    log->refs++; /* GC's own, so that the log is not freed under the wait */
    log_table_remove(&bk->logs, log);
    uint32_t reads = log->refs - 1;
    pthread_mutex_unlock(&bk->lock);
    int test_ms = atomic_load(&bk->test_gc_reads_wait_ms);
    uint64_t bound_us = (uint64_t)(test_ms > 0 ? test_ms : GC_READS_WAIT_MS) * 1000u;
    uint64_t t0 = clock_mono_us();
    bool stop = false;
    while (reads > 0 && !stop && clock_mono_us() - t0 < bound_us) {
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        gc_yield_to_flush(bk);
        pthread_mutex_lock(&bk->flock);
        stop = bk->flusher_stopping;
        pthread_mutex_unlock(&bk->flock);
        pthread_mutex_lock(&bk->lock);
        reads = log->refs - 1;
        pthread_mutex_unlock(&bk->lock);
    }
    pthread_mutex_lock(&bk->lock);
    reads = log->refs - 1;
    entry_log_unref(log); /* log may be freed here */
    pthread_mutex_unlock(&bk->lock);
    if (reads == 0)
        return GC_RELEASED;
    return stop ? GC_READS_AT_STOP : GC_READS_LEFT;
}

static int gc_remove_log(bookie_t *bk, entry_log_t *log, bool reuse)
{
    uint32_t id = log->id;
    char path[PATH_MAX];
    gc_release_t rel = gc_release_log(bk, log);
    if (rel == GC_READS_AT_STOP) {
        /* as after a crash before the removal: the pass collects no tombstone */
        log_info("bookie",
                 "gc: entry log %08" PRIx32 " left for the next open (reads in flight at close)",
                 id);
        return QE_SHUTDOWN;
    }
    snprintf(path, sizeof path, "%s/%08" PRIx32 ".sum", bk->ldir, id);
    unlink(path);
    snprintf(path, sizeof path, "%s/%08" PRIx32 ".idx", bk->ldir, id);
    unlink(path);
    snprintf(path, sizeof path, "%s/%08" PRIx32 ".log", bk->ldir, id);
    if (rel == GC_READS_LEFT) {
        /* Not cut, renamed or written over under them: unlinked, its blocks
         * are freed when the last read closes the log's descriptors. */
        if (unlink(path) < 0)
            log_warn("bookie", "gc: cannot remove %s: %s", path, q_strerror(-errno));
        else
            log_warn("bookie",
                     "gc: reads of entry log %08" PRIx32 " still in flight after GC's wait;"
                     " unlinked, its space freed when they finish",
                     id);
        return 0;
    }
    if (reuse && spares_offer(bk->spares, SPARE_DIRECT, path) == 0)
        return 0;
    bk_trash(path);
    log_info("bookie", "gc: removed entry log %s", path);
    return 0;
}

/* Moves the index of the copied records (where it still points at the old). */
static int gc_apply_moves(bookie_t *bk, uint32_t old_id, const gc_move_t *mv, uint32_t n)
{
    int rc = 0;
    pthread_mutex_lock(&bk->lock);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        ledger_t *l = ledger_find(&bk->ledgers, mv[i].ledger_id);
        idx_ref_t ref;
        if (l && !l->deleted && ledger_index_find(l, mv[i].entry_id, &ref) &&
            ref.log_id == old_id && ref.pos == mv[i].old_pos)
            rc = ledger_index_put(l, mv[i].entry_id, mv[i].new_log, mv[i].new_pos, mv[i].len);
    }
    pthread_mutex_unlock(&bk->lock);
    return rc;
}

static void flush_job_run(bookie_t *bk, write_cache_t *wc, journal_pos_t cp, uint64_t pace);

/* A GC pass can take seconds (compacting copies every live record of a log),
 * and the loop's adds are refused once both write caches are full: a flush
 * asked for meanwhile runs between GC steps, on this same thread, so GC never
 * races it and never holds it back for more than one step. */
static void gc_yield_to_flush(bookie_t *bk)
{
    pthread_mutex_lock(&bk->flock);
    bool do_flush = bk->job_flush;
    write_cache_t *wc = bk->job_wc;
    journal_pos_t cp = bk->job_cp;
    uint64_t pace = bk->job_pace;
    bk->job_flush = false;
    pthread_mutex_unlock(&bk->flock);
    if (do_flush)
        flush_job_run(bk, wc, cp, pace);
}

/* Waits until `copied` bytes since t0_us are within gc_compact_bytes_per_s,
 * running any flush asked for meanwhile. QE_SHUTDOWN when the flush thread is
 * stopping. */
static int gc_pace(bookie_t *bk, uint64_t t0_us, uint64_t copied)
{
    uint64_t rate = bk->cfg.gc_compact_bytes_per_s;
    if (!rate)
        return 0;
    uint64_t due = t0_us + (uint64_t)((double)copied * 1e6 / (double)rate);
    for (;;) {
        pthread_mutex_lock(&bk->flock);
        bool stop = bk->flusher_stopping, flush = bk->job_flush;
        uint64_t now = clock_mono_us();
        if (!stop && !flush && now < due) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts); /* fcond's clock */
            uint64_t ns = (uint64_t)ts.tv_nsec + (due - now) * 1000u;
            ts.tv_sec += (time_t)(ns / 1000000000u);
            ts.tv_nsec = (long)(ns % 1000000000u);
            pthread_cond_timedwait(&bk->fcond, &bk->flock, &ts);
            stop = bk->flusher_stopping;
            flush = bk->job_flush;
            now = clock_mono_us();
        }
        pthread_mutex_unlock(&bk->flock);
        if (stop)
            return QE_SHUTDOWN;
        if (flush)
            gc_yield_to_flush(bk);
        else if (now >= due)
            return 0;
    }
}

/* Copies one chunk of a log's idx records: those the index still points at
 * are read back (checksum verified) and appended to the writer's log; every
 * GC_COMPACT_STEP_BYTES the copies are synced, the index moved to them, a
 * waiting flush run and the pace kept. Adds the bytes copied to *copied. */
static int gc_copy_chunk(bookie_t *bk, entry_log_t *log, const uint8_t *recs, uint64_t pos,
                         uint32_t nrec, gc_move_t *mv, uint64_t t0_us, uint64_t *copied)
{
    uint32_t n = 0;
    pthread_mutex_lock(&bk->lock);
    for (uint32_t i = 0; i < nrec; i++) {
        const uint8_t *r = recs + (size_t)i * ELOG_IDX_RECORD_BYTES;
        int64_t lid = (int64_t)get_le64(r), eid = (int64_t)get_le64(r + 8);
        const ledger_t *l = ledger_find(&bk->ledgers, lid);
        uint64_t rpos = pos + (uint64_t)i * ELOG_IDX_RECORD_BYTES;
        idx_ref_t ref;
        if (l && !l->deleted && ledger_index_find(l, eid, &ref) && ref.log_id == log->id &&
            ref.pos == rpos)
            mv[n++] = (gc_move_t){.ledger_id = lid,
                                  .entry_id = eid,
                                  .old_pos = rpos,
                                  .old_off = get_le64(r + 16),
                                  .len = get_le32(r + 24)};
    }
    pthread_mutex_unlock(&bk->lock);
    uint32_t done = 0;
    uint64_t step = 0;
    for (uint32_t i = 0; i < n; i++) {
        qbuf_t *b = NULL;
        int rc = entry_log_read(log, mv[i].old_off, mv[i].len, mv[i].ledger_id, mv[i].entry_id, &b);
        if (rc == 0)
            rc = elog_append(&bk->writer, mv[i].ledger_id, mv[i].entry_id, b->data, b->len,
                             &mv[i].new_log, &mv[i].new_off, &mv[i].new_pos);
        qbuf_unref(b);
        if (rc)
            return rc;
        step += mv[i].len;
        if (step < GC_COMPACT_STEP_BYTES && i + 1 < n)
            continue;
        rc = elog_sync(&bk->writer);
        if (rc == 0)
            rc = gc_apply_moves(bk, log->id, mv + done, i + 1 - done);
        if (rc)
            return rc;
        done = i + 1;
        *copied += step;
        atomic_fetch_add(&bk->gc_compacted_bytes, step);
        step = 0;
        gc_yield_to_flush(bk); /* between steps: the writer is synced */
        rc = gc_pace(bk, t0_us, *copied);
        if (rc)
            return rc;
    }
    return 0;
}

static int gc_compact_log(bookie_t *bk, entry_log_t *log)
{
    uint64_t t0 = clock_mono_us(), copied = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%08" PRIx32 ".idx", bk->ldir, log->id);
    int rc = elog_ensure_after(&bk->writer, log->id); /* copies after the originals */
    if (rc)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    uint8_t *recs = malloc(GC_CHUNK_RECORDS * ELOG_IDX_RECORD_BYTES);
    gc_move_t *mv = malloc(GC_CHUNK_RECORDS * sizeof *mv);
    rc = recs && mv ? 0 : -ENOMEM;
    for (uint64_t off = 0; rc == 0 && off < log->idx_size;) {
        uint64_t want = log->idx_size - off;
        if (want > GC_CHUNK_RECORDS * ELOG_IDX_RECORD_BYTES)
            want = GC_CHUNK_RECORDS * ELOG_IDX_RECORD_BYTES;
        rc = bk_pread_all(fd, recs, want, off);
        if (rc == 0)
            rc = gc_copy_chunk(bk, log, recs, off, (uint32_t)(want / ELOG_IDX_RECORD_BYTES), mv, t0,
                               &copied);
        off += want;
    }
    close(fd);
    free(recs);
    free(mv);
    if (rc == QE_SHUTDOWN) {
        log_info("bookie", "gc: compaction of entry log %08" PRIx32 " stopped (closing); log kept",
                 log->id);
        return rc;
    }
    if (rc) {
        log_error("bookie", "gc: compaction of entry log %08" PRIx32 " failed: %s; log kept",
                  log->id, q_strerror(rc));
        /* the copies of the failed step: forgotten, as a failed flush's */
        int arc = elog_writer_abandon(&bk->writer);
        if (arc)
            atomic_store(&bk->flush_failed, flush_undo_failed(arc));
        return rc;
    }
    log_info("bookie",
             "gc: compacted entry log %08" PRIx32 ": %" PRIu64 " of %" PRIu64
             " bytes live, copied in %" PRIu64 " ms",
             log->id, copied, log->size, (clock_mono_us() - t0) / 1000);
    rc = gc_remove_log(bk, log, true);
    if (rc == 0)
        atomic_fetch_add(&bk->gc_logs_compacted, 1);
    return rc;
}

/* False for a direct log the journal may still reference; unpins it once
 * sealed and behind the durable checkpoint. Bookie lock held. */
static bool gc_may_touch(bookie_t *bk, entry_log_t *log)
{
    if (!log->pinned)
        return true;
    journal_pos_t seal = {log->seal_seq, log->seal_off};
    if (!log->sealed || journal_pos_cmp(seal, bk->cp_durable) > 0)
        return false;
    log->pinned = false;
    return true;
}

/* Live bytes of a log: bytes of ledgers that still exist. Bookie lock held. */
static uint64_t gc_live_bytes(bookie_t *bk, const entry_log_t *log)
{
    uint64_t live = 0;
    for (uint32_t i = 0; i < log->ledgers.cap; i++) {
        if (!log->ledgers.keys[i])
            continue;
        const ledger_t *l = ledger_find(&bk->ledgers, (int64_t)(log->ledgers.keys[i] - 1));
        if (l && !l->deleted)
            live += log->ledgers.vals[i];
    }
    return live;
}

/* Drops tombstones no remaining log mentions. Bookie lock held. */
static void gc_collect_tombstones(bookie_t *bk)
{
    qmap_iter_t it = {0};
    uint64_t key;
    void *v;
    while (qmap64_next(bk->ledgers.map, &it, &key, &v)) {
        ledger_t *l = v;
        if (!l->deleted)
            continue;
        bool used = false;
        for (uint32_t i = 0; i < bk->logs.count && !used; i++)
            used = lb_map_has(&bk->logs.logs[i]->ledgers, l->id);
        if (!used) {
            ledger_forget(&bk->ledgers, l);
            bk->meta_rewrite = true;
        }
    }
}

int gc_run(bookie_t *bk, double threshold)
{
    if (atomic_load(&bk->flush_failed))
        return QE_READ_ONLY;
    pthread_mutex_lock(&bk->lock);
    uint32_t n = bk->logs.count, ndead = 0, ncomp = 0;
    entry_log_t **dead = calloc(n + 1, sizeof *dead), **comp = calloc(n + 1, sizeof *comp);
    for (uint32_t i = 0; dead && comp && i < n; i++) {
        entry_log_t *log = bk->logs.logs[i];
        if (!gc_may_touch(bk, log))
            continue;
        uint64_t live = gc_live_bytes(bk, log);
        bool current = log == bk->writer.cur;
        if (live == 0 && log->size > 0 && current) {
            assert(bk->writer.buf_len == 0 && bk->writer.ibuf_len == 0); /* synced */
            bk->writer.cur = NULL; /* retire: the next append starts a new log */
        }
        if (live == 0 && log->size > 0)
            dead[ndead++] = log;
        else if (!current && log->size > 0 && (double)live < threshold * (double)log->size &&
                 !bk->flush_resume)
            comp[ncomp++] = log;
    }
    pthread_mutex_unlock(&bk->lock);
    int rc = dead && comp ? 0 : -ENOMEM;
    for (uint32_t i = 0; i < ndead; i++) {
        int grc = gc_remove_log(bk, dead[i], true);
        if (grc == 0)
            atomic_fetch_add(&bk->gc_logs_removed, 1);
        else if (rc == 0)
            rc = grc;
        gc_yield_to_flush(bk);
    }
    if (ncomp)
        log_info("bookie", "gc: compacting %" PRIu32 " entry log(s) less than %.0f %% live", ncomp,
                 threshold * 100);
    /* Not while a flush that failed for lack of room waits (flush_run): its
     * copies, synced but not indexed yet, may lie in a log a compaction would
     * remove without copying them. Such a flush can also fail between two
     * compactions (gc_yield_to_flush). */
    for (uint32_t i = 0; i < ncomp && rc == 0 && !bk->flush_resume; i++) {
        rc = gc_compact_log(bk, comp[i]);
        gc_yield_to_flush(bk);
    }
    free(dead);
    free(comp);
    if (ndead || ncomp) {
        int drc = bk_fsync_dir(bk->ldir); /* removals durable before tombstones go */
        if (rc == 0)
            rc = drc;
    }
    if (rc == 0) {
        pthread_mutex_lock(&bk->lock);
        gc_collect_tombstones(bk);
        pthread_mutex_unlock(&bk->lock);
        if (bk->meta_rewrite)
            rc = meta_rewrite(bk);
    }
    atomic_fetch_add(&bk->gc_passes, 1);
    return rc;
}

/* ------------------------------------------------- compaction times -- */

void gc_times_load(const char *ldir, int64_t now_ms, int64_t *minor_ms, int64_t *major_ms)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", ldir, BOOKIE_COMPACTION_TIMES_FILE);
    *minor_ms = *major_ms = now_ms;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    long long mi, ma;
    if (fscanf(f, "minor %lld\nmajor %lld\n", &mi, &ma) == 2 && mi >= 0 && ma >= 0) {
        *minor_ms = mi < now_ms ? mi : now_ms;
        *major_ms = ma < now_ms ? ma : now_ms;
    } else {
        log_warn("bookie", "%s is unreadable: compaction intervals count from now", path);
    }
    fclose(f);
}

void gc_times_save(const char *ldir, int64_t minor_ms, int64_t major_ms)
{
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/%s", ldir, BOOKIE_COMPACTION_TIMES_FILE);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok =
        f && fprintf(f, "minor %lld\nmajor %lld\n", (long long)minor_ms, (long long)major_ms) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) < 0) {
        log_warn("bookie", "cannot save %s: %s (a restart counts the intervals from then)", path,
                 strerror(errno));
        unlink(tmp);
    }
}

/* --------------------------------------------------------- flush thread -- */

typedef struct flusher_done {
    bookie_t *bk;
    int rc;
    bool gc;
} flusher_done_t;

static void flusher_done_on_loop(void *p)
{
    flusher_done_t *d = p;
    if (d->gc)
        bookie_gc_done(d->bk, d->rc);
    else
        bookie_flush_done(d->bk, d->rc);
    free(d);
}

static void flusher_post(bookie_t *bk, int rc, bool gc)
{
    flusher_done_t *d = malloc(sizeof *d);
    if (d)
        *d = (flusher_done_t){bk, rc, gc};
    if (!d || qloop_post(bk->mb, flusher_done_on_loop, d) != 0) {
        log_error("bookie", "flush: out of memory posting a completion");
        abort();
    }
}

static void flush_job_run(bookie_t *bk, write_cache_t *wc, journal_pos_t cp, uint64_t pace)
{
    int rc = atomic_load(&bk->flush_failed) ? QE_READ_ONLY : flush_run(bk, wc, cp, true, pace);
    if (rc && !flush_error_retryable(rc))
        atomic_store(&bk->flush_failed, rc);
    flusher_post(bk, rc, false);
}

static void *flusher_main(void *p)
{
    bookie_t *bk = p;
    for (;;) {
        pthread_mutex_lock(&bk->flock);
        while (!bk->job_flush && !bk->job_gc && !bk->flusher_stopping)
            pthread_cond_wait(&bk->fcond, &bk->flock);
        bool do_flush = bk->job_flush, do_gc = bk->job_gc;
        double threshold = bk->job_gc_threshold;
        int64_t minor_ms = bk->job_gc_minor_ms, major_ms = bk->job_gc_major_ms;
        write_cache_t *wc = bk->job_wc;
        journal_pos_t cp = bk->job_cp;
        uint64_t pace = bk->job_pace;
        bk->job_flush = bk->job_gc = false;
        pthread_mutex_unlock(&bk->flock);
        if (!do_flush && !do_gc)
            return NULL;
        if (do_flush)
            flush_job_run(bk, wc, cp, pace);
        if (do_gc) {
            int rc = gc_run(bk, threshold);
            if (rc == 0 && threshold > 0)
                gc_times_save(bk->ldir, minor_ms, major_ms);
            flusher_post(bk, rc, true);
        }
    }
}

int flusher_start(bookie_t *bk)
{
    if (pthread_create(&bk->flusher, NULL, flusher_main, bk) != 0)
        return -EAGAIN;
    pthread_setname_np(bk->flusher, "bk-flush");
    bk->flusher_started = true;
    return 0;
}

void flusher_stop(bookie_t *bk)
{
    if (!bk->flusher_started)
        return;
    pthread_mutex_lock(&bk->flock);
    bk->flusher_stopping = true;
    pthread_cond_signal(&bk->fcond);
    pthread_mutex_unlock(&bk->flock);
    pthread_join(bk->flusher, NULL);
    bk->flusher_started = false;
}

void flusher_request_flush(bookie_t *bk, write_cache_t *wc, journal_pos_t cp, uint64_t pace)
{
    pthread_mutex_lock(&bk->flock);
    assert(!bk->job_flush);
    bk->job_wc = wc;
    bk->job_cp = cp;
    bk->job_pace = pace;
    bk->job_flush = true;
    pthread_cond_signal(&bk->fcond);
    pthread_mutex_unlock(&bk->flock);
}

void flusher_request_gc(bookie_t *bk, double threshold, int64_t minor_ms, int64_t major_ms)
{
    pthread_mutex_lock(&bk->flock);
    bk->job_gc = true;
    bk->job_gc_threshold = threshold;
    bk->job_gc_minor_ms = minor_ms;
    bk->job_gc_major_ms = major_ms;
    pthread_cond_signal(&bk->fcond);
    pthread_mutex_unlock(&bk->flock);
}
