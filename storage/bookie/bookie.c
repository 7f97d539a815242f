/*
 * bookie.c — the bookie API (bookie.h): open (index rebuild + journal replay),
 * adds and their group completions, reads (write cache, read cache, entry log
 * on a reader thread), fencing, LAC, deletion, GC scheduling, close.
 *
 * State machine of the write path, per add:
 *   bookie_add        refused synchronously (QE_FENCED, QE_BUSY, ...) or put
 *                     in a journal ring slot (the slot holds a qbuf reference)
 *   journal thread    written + fdatasynced with its group (a large entry:
 *                     its record to the direct entry log, an ADD_REF to the
 *                     journal, both fdatasynced)
 *   bookie_group_done on the loop: entry moved into the active write cache,
 *                     LAC / last entry updated, callback with rc
 *   flush             active cache frozen, written to an entry log (a large
 *                     entry: only its idx record, to its direct log), indexed
 * Fencing and deletion change the in-memory flags at once (so later adds are
 * refused at once) and answer only after their journal record is synced.
 *
 * Bounds: adds queued or in flight <= pending_adds_max; bytes in both write
 * caches + in flight <= 2 * write_cache_bytes (one cache flushing, one
 * filling); reads in flight <= BOOKIE_READS_PENDING_MAX; read cache bytes <=
 * read_cache_bytes. Reaching a bound is QE_BUSY, logged (rate-limited).
 * Disk reads given to the reader threads and not yet delivered on the loop
 * hold at most read_bytes_inflight_max bytes (one read whatever its size) and
 * fit the executor's queue; further ones wait in order (read_wait_*), holding
 * no data, and are given to the readers as deliveries make room. Disk reads
 * asked for in one loop iteration are handed over when the loop is about to
 * wait, a ledger's next entries joined into runs (read_form_cb) that a reader
 * reads with one read where their records follow one another.
 *
 * Disk usage: checked at open, every disk_check_interval_ms and after every
 * disk_check_bytes of adds, on the loop (statvfs of both directories,
 * microseconds). Above the high mark plain adds are refused; what the bookie
 * already accepted completes, and recovery adds, fences and deletes (a few
 * bytes of journal each, and what frees space) go on, in the headroom the
 * mark leaves.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_int.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/idx_summary.h"
#include "storage/bookie/trash.h"

void bookie_config_defaults(bookie_config_t *cfg)
{
    *cfg = (bookie_config_t){
        .data_dir = "data/bookie",
        .journal_sync = true,
        .journal_group_wait_us_max = 1000,
        .journal_group_bytes_max = 512u << 10,
        .journal_group_entries_max = 10000,
        .journal_file_size_bytes = 256ull << 20,
        .entry_log_size_bytes = 1ull << 30,
        .entry_log_cache_keep_bytes = 256ull << 20,
        .write_cache_bytes = 16ull << 20, /* docs/bookie.md, "Cache sizes" */
        .read_cache_bytes = 16ull << 20,
        .read_bytes_inflight_max = 64ull << 20,
        .flush_interval_ms = 1000,
        .pending_adds_max = 100000,
        .gc_interval_ms = 60000,
        .minor_compaction_threshold = 0.2,
        .minor_compaction_interval_ms = 3600ull * 1000,
        .major_compaction_threshold = 0.5,
        .major_compaction_interval_ms = 86400ull * 1000,
        .gc_compact_bytes_per_s = 32u << 20,
        .journal_large_entry_bytes = 16u << 10,
        .journal_large_entry_odirect = true,
        .journal_large_entry_one_sync = true,
        .journal_odirect = true,
        .journal_format_version = JOURNAL_FORMAT_VERSION,
        .spare_zero_rate_bytes = 128ull << 20,
        .spare_idle_ms = 1000,
        .read_yield_us = 1000,
        .stats_window_s = 60,
        .disk_usage_threshold = 0.95,
        .disk_usage_lwm_threshold = 0.90,
        .disk_usage_warn_threshold = 0.90,
        .disk_check_interval_ms = 10000,
        .disk_check_bytes = 256u << 20,
    };
}

#define BOOKIE_DISK_CHECK_MS_MAX (86400u * 1000) /* disk_check_interval_ms at most */

/* NULL if the disk marks and interval are valid, else what is wrong. */
static const char *disk_config_error(double threshold, double lwm, double warn, int64_t interval_ms)
{
    if (!(threshold > 0 && threshold <= 1))
        return "diskUsageThreshold: a fraction of the disk, above 0 and at most 1";
    if (!(lwm > 0 && lwm <= threshold))
        return "diskUsageLwmThreshold: a fraction of the disk, above 0 and at most "
               "diskUsageThreshold";
    if (!(warn > 0 && warn <= 1))
        return "diskUsageWarnThreshold: a fraction of the disk, above 0 and at most 1";
    if (interval_ms < 0 || interval_ms > BOOKIE_DISK_CHECK_MS_MAX)
        return "diskCheckInterval: milliseconds, 0 (never) to a day";
    return NULL;
}

int bookie_config_disk(bookie_config_t *cfg, double threshold, double lwm, double warn,
                       int64_t interval_ms, char *err, size_t err_len)
{
    const char *bad = disk_config_error(threshold, lwm, warn, interval_ms);
    if (bad) {
        snprintf(err, err_len, "%s", bad);
        return QE_INVALID;
    }
    cfg->disk_usage_threshold = threshold;
    cfg->disk_usage_lwm_threshold = lwm;
    cfg->disk_usage_warn_threshold = warn;
    cfg->disk_check_interval_ms = (uint32_t)interval_ms;
    return 0;
}

int bookie_config_compaction(bookie_config_t *cfg, double minor_threshold, int64_t minor_interval_s,
                             double major_threshold, int64_t major_interval_s, char *err,
                             size_t err_len)
{
    const int64_t max_s = 10ll * 365 * 86400;
    const char *bad = !(minor_threshold <= 1)   ? "minorCompactionThreshold"
                      : !(major_threshold <= 1) ? "majorCompactionThreshold"
                                                : NULL;
    if (bad) {
        snprintf(err, err_len, "%s: a fraction of a log, at most 1", bad);
        return QE_INVALID;
    }
    bad = minor_interval_s > max_s   ? "minorCompactionInterval"
          : major_interval_s > max_s ? "majorCompactionInterval"
                                     : NULL;
    if (bad) {
        snprintf(err, err_len, "%s: at most ten years (%" PRId64 " s)", bad, max_s);
        return QE_INVALID;
    }
    bool minor = minor_threshold > 0 && minor_interval_s > 0;
    bool major = major_threshold > 0 && major_interval_s > 0;
    if (minor && major && minor_threshold > major_threshold) {
        snprintf(err, err_len,
                 "minorCompactionThreshold %.2f is above majorCompactionThreshold %.2f",
                 minor_threshold, major_threshold);
        return QE_INVALID;
    }
    cfg->minor_compaction_threshold = minor ? minor_threshold : 0;
    cfg->minor_compaction_interval_ms = minor ? (uint64_t)minor_interval_s * 1000 : 0;
    cfg->major_compaction_threshold = major ? major_threshold : 0;
    cfg->major_compaction_interval_ms = major ? (uint64_t)major_interval_s * 1000 : 0;
    return 0;
}

/* Logs a refused call; at most one line per second, counting the rest. */
static int bookie_refuse(bookie_t *bk, int rc, const char *what, int64_t ledger_id,
                         int64_t entry_id)
{
    uint64_t now = clock_mono_us();
    if (now - bk->refusal_log_us >= 1000000u || bk->refusal_log_us == 0) {
        log_warn("bookie",
                 "%s refused for ledger %" PRId64 " entry %" PRId64 ": %s"
                 " (%" PRIu64 " similar refusals not logged)",
                 what, ledger_id, entry_id, q_strerror(rc), bk->refusals_suppressed);
        bk->refusal_log_us = now;
        bk->refusals_suppressed = 0;
    } else {
        bk->refusals_suppressed++;
    }
    return rc;
}

/* ------------------------------------------------ immediate completions -- */

enum { IMM_READ, IMM_LAC, IMM_DONE };

typedef struct bk_imm {
    int kind;
    int rc;
    int64_t ledger_id, entry_id, lac;
    qbuf_t *entry; /* IMM_READ: one reference, dropped after the callback */
    union {
        bookie_read_cb read;
        bookie_lac_cb lac;
        bookie_done_cb done;
    } cb;
    void *arg;
    bookie_t *bk;
} bk_imm_t;

static void bookie_imm_run(void *p)
{
    bk_imm_t *m = p;
    switch (m->kind) {
    case IMM_READ:
        m->bk->reads_pending--;
        m->cb.read(m->rc, m->ledger_id, m->entry_id, m->entry, m->lac, m->arg);
        qbuf_unref(m->entry);
        break;
    case IMM_LAC:
        m->cb.lac(m->rc, m->ledger_id, m->lac, m->arg);
        break;
    default:
        m->cb.done(m->rc, m->arg);
        break;
    }
    free(m);
}

/* Posts m to run on the loop (never inline). Takes over m and m->entry. */
static int bookie_imm_post(bookie_t *bk, bk_imm_t *m)
{
    m->bk = bk;
    if (m->kind == IMM_READ)
        bk->reads_pending++;
    int rc = qloop_post(bk->mb, bookie_imm_run, m);
    if (rc) {
        if (m->kind == IMM_READ)
            bk->reads_pending--;
        qbuf_unref(m->entry);
        free(m);
    }
    return rc;
}

static int bookie_post_lac(bookie_t *bk, int rc, int64_t ledger_id, int64_t lac, bookie_lac_cb cb,
                           void *arg)
{
    bk_imm_t *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    *m = (bk_imm_t){.kind = IMM_LAC, .rc = rc, .ledger_id = ledger_id, .lac = lac, .arg = arg};
    m->cb.lac = cb;
    return bookie_imm_post(bk, m);
}

static int bookie_post_done(bookie_t *bk, int rc, bookie_done_cb cb, void *arg)
{
    bk_imm_t *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    *m = (bk_imm_t){.kind = IMM_DONE, .rc = rc, .arg = arg};
    m->cb.done = cb;
    return bookie_imm_post(bk, m);
}

static void bookie_adds_resume(bookie_t *bk);
static void bookie_disk_check(bookie_t *bk);

/* ----------------------------------------------------- flush scheduling -- */

/* Freezes the active cache and hands it to the flush thread when it is full
 * (or, with periodic, when anything was journaled since the last freeze). */
static void bookie_maybe_flush(bookie_t *bk, bool periodic)
{
    if (bk->flushing || bk->closing || bk->flush_stalled || atomic_load(&bk->flush_failed))
        return;
    bool full = bk->active->bytes >= bk->cfg.write_cache_bytes;
    if (!full && !(periodic && (bk->active->count || bk->journal_dirty)))
        return;
    assert(bk->frozen == NULL);
    bk->frozen = bk->active;
    bk->active = bk->frozen == &bk->caches[0] ? &bk->caches[1] : &bk->caches[0];
    assert(bk->active->count == 0);
    bk->flushing = true;
    bk->journal_dirty = false;
    bk->cp_pos = bk->acked_pos;
    /* The pace (flush.c, "Pacing"): FLUSH_PACE_FACTOR times the rate this
     * cache filled at. */
    uint64_t now = clock_mono_us(), fill_us = now - bk->freeze_us;
    uint64_t pace = 0;
    if (fill_us > 0) {
        pace = bk->frozen->bytes * FLUSH_PACE_FACTOR * 1000000u / fill_us;
        if (pace < FLUSH_PACE_MIN)
            pace = FLUSH_PACE_MIN;
    }
    if (bk->test_flush_pace)
        pace = bk->test_flush_pace;
    bk->freeze_us = now;
    atomic_store(&bk->flush_hurry, false);
    flusher_request_flush(bk, bk->frozen, bk->cp_pos, pace);
}

/* While a flush runs, adds waiting for room or the next cache half full: the
 * flush stops pacing. */
static void bookie_flush_hurry(bookie_t *bk)
{
    if (bk->flushing && (bk->wait_head || bk->active->bytes >= bk->cfg.write_cache_bytes / 2) &&
        !atomic_load(&bk->flush_hurry))
        atomic_store(&bk->flush_hurry, true);
}

/* Marks the checkpoint in the journal (for journal dumps; replay skips it). */
static void bookie_journal_checkpoint(bookie_t *bk, journal_pos_t cp)
{
    journal_req_t *r = bk->read_only ? NULL : journal_next_slot(bk->journal);
    if (!r)
        return;
    r->type = JREC_CHECKPOINT;
    r->ledger_id = -1;
    r->entry_id = (int64_t)cp.seq;
    r->lac = (int64_t)cp.off;
    journal_submit(bk->journal);
}

/* A flush that failed for lack of room runs again after
 * FLUSH_RETRY_FIRST_US, then at twice the wait each time, up to
 * FLUSH_RETRY_MAX_US (on the flush timer's ticks). */
#define FLUSH_RETRY_FIRST_US 1000000u
#define FLUSH_RETRY_MAX_US 16000000u

static void bookie_flush_stall(bookie_t *bk, int rc)
{
    uint64_t now = clock_mono_us();
    bk->stats.flush_stalls++;
    bk->flush_stall_attempts++;
    if (!bk->flush_stalled) {
        bk->flush_retry_wait_us = FLUSH_RETRY_FIRST_US;
        log_warn("bookie",
                 "no room to flush the write cache (%s): adds are refused (recovery adds, fences "
                 "and deletes go on) until the flush goes through; it runs again in %.0f s, "
                 "then at growing intervals up to %.0f s",
                 q_strerror(rc), FLUSH_RETRY_FIRST_US / 1e6, FLUSH_RETRY_MAX_US / 1e6);
    }
    bk->flush_stalled = rc;
    bk->flush_retry_at_us = now + bk->flush_retry_wait_us;
    bk->flush_retry_wait_us *= 2;
    if (bk->flush_retry_wait_us > FLUSH_RETRY_MAX_US)
        bk->flush_retry_wait_us = FLUSH_RETRY_MAX_US;
    bookie_adds_resume(bk); /* the waiting plain adds fail */
    if (bk->cfg.disk_check_interval_ms)
        bookie_disk_check(bk); /* GC frees what it can */
}

/* The flush timer while a flush waits to run again. */
static void bookie_flush_retry(bookie_t *bk)
{
    if (bk->flushing || bk->closing || clock_mono_us() < bk->flush_retry_at_us)
        return;
    bk->flushing = true;
    flusher_request_flush(bk, bk->frozen, bk->cp_pos, 0); /* unpaced */
}

void bookie_flush_done(bookie_t *bk, int rc)
{
    assert(bk->flushing && bk->frozen);
    bk->flushing = false;
    if (rc && flush_error_retryable(rc) && !bk->closing) {
        bookie_flush_stall(bk, rc);
        return;
    }
    if (rc == 0 && bk->flush_stalled) {
        log_info("bookie",
                 "the write cache is flushed (after %" PRIu32 " failed attempts): adds "
                 "are taken again",
                 bk->flush_stall_attempts);
        bk->flush_stalled = 0;
        bk->flush_stall_attempts = 0;
    }
    if (rc) {
        /* The frozen cache stays readable (its entries are in the journal). */
        if (!bk->read_only)
            bk->read_only = rc;
        bookie_adds_resume(bk); /* the waiting adds fail */
        return;
    }
    write_cache_clear(bk->frozen);
    bk->frozen = NULL;
    if (!bk->closing) {
        bookie_journal_checkpoint(bk, bk->cp_pos);
        bookie_maybe_flush(bk, false);
        bookie_adds_resume(bk);
    }
}

static void bookie_flush_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_t *bk = w->data;
    if (bk->flush_stalled)
        bookie_flush_retry(bk);
    else
        bookie_maybe_flush(bk, true);
}

/* ------------------------------------------------------------------ GC -- */

/* The compaction threshold of a GC pass starting now (0: none), as BookKeeper
 * decides it: major when due, else minor when due; a pass someone waits for
 * (bookie_gc_now) compacts at once, and so does every pass while the disk is
 * almost full, as a minor one (BookKeeper's forced GC at diskAlmostFull). */
static double bookie_gc_threshold(bookie_t *bk, bool forced)
{
    const bookie_config_t *c = &bk->cfg;
    /* Compaction writes the copies first: not while the disk is full (as
     * BookKeeper suspends it); it runs when due once the disk has room. While
     * it is almost full, minor compaction only: it copies the least. */
    bool major = c->major_compaction_threshold > 0 && c->major_compaction_interval_ms > 0 &&
                 !bk->disk_full && !bk->disk_almost_full;
    bool minor = c->minor_compaction_threshold > 0 && c->minor_compaction_interval_ms > 0 &&
                 !bk->disk_full && !bk->flush_stalled;
    /* nor while a flush waits for room: that flush's copies, not indexed
     * yet, would not be copied by a compaction of their log (flush.c) */
    major = major && !bk->flush_stalled;
    int64_t now = clock_wall_ms();
    if (bk->gc_minor_ms > now) /* the clock went back: count from now */
        bk->gc_minor_ms = now;
    if (bk->gc_major_ms > now)
        bk->gc_major_ms = now;
    if (major && (forced || (uint64_t)(now - bk->gc_major_ms) >= c->major_compaction_interval_ms)) {
        bk->gc_major_ms = bk->gc_minor_ms = now;
        return c->major_compaction_threshold;
    }
    if (minor && (forced || bk->disk_almost_full ||
                  (uint64_t)(now - bk->gc_minor_ms) >= c->minor_compaction_interval_ms)) {
        bk->gc_minor_ms = now;
        return c->minor_compaction_threshold;
    }
    return 0;
}

static void bookie_gc_start(bookie_t *bk)
{
    assert(!bk->gc_running);
    double threshold = bookie_gc_threshold(bk, bk->n_gc_next > 0);
    memcpy(bk->gc_cur, bk->gc_next, bk->n_gc_next * sizeof *bk->gc_next);
    bk->n_gc_cur = bk->n_gc_next;
    bk->n_gc_next = 0;
    bk->gc_running = true;
    flusher_request_gc(bk, threshold, bk->gc_minor_ms, bk->gc_major_ms);
}

void bookie_gc_done(bookie_t *bk, int rc)
{
    assert(bk->gc_running);
    bk->gc_running = false;
    if (rc)
        log_warn("bookie", "gc pass failed: %s", q_strerror(rc));
    uint32_t n = bk->n_gc_cur;
    gc_waiter_t w[BOOKIE_GC_WAITERS_MAX];
    memcpy(w, bk->gc_cur, n * sizeof *w);
    bk->n_gc_cur = 0;
    if (bk->n_gc_next && !bk->closing)
        bookie_gc_start(bk);
    for (uint32_t i = 0; i < n; i++)
        w[i].cb(rc, w[i].arg);
}

static void bookie_gc_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_t *bk = w->data;
    if (!bk->gc_running && !bk->closing)
        bookie_gc_start(bk);
}

int bookie_gc_now(bookie_t *bk, bookie_done_cb cb, void *arg)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, "gc", -1, -1);
    if (!cb)
        return QE_INVALID;
    if (bk->n_gc_next >= BOOKIE_GC_WAITERS_MAX)
        return bookie_refuse(bk, QE_BUSY, "gc", -1, -1);
    bk->gc_next[bk->n_gc_next++] = (gc_waiter_t){cb, arg};
    if (!bk->gc_running)
        bookie_gc_start(bk);
    return 0;
}

/* ---------------------------------------------------------- completions -- */

/* Applies one completed record (bookie lock held); sets r->rc. */
static void bookie_apply_completed(bookie_t *bk, journal_req_t *r, int rc)
{
    r->rc = rc;
    if (r->type == JREC_CHECKPOINT)
        return;
    bk->journal_dirty = true;
    if (r->type != JREC_ADD)
        return;
    uint32_t len = r->data->len;
    assert(bk->adds_pending > 0 && bk->pending_bytes >= len + WRITE_CACHE_ITEM_OVERHEAD);
    bk->adds_pending--;
    bk->pending_bytes -= len + WRITE_CACHE_ITEM_OVERHEAD;
    if (rc)
        return;
    ledger_t *l = ledger_find(&bk->ledgers, r->ledger_id);
    if (!l || l->deleted) {
        r->rc = QE_NO_LEDGER; /* deleted while the add was in the journal */
        return;
    }
    if (write_cache_put_at(bk->active, r->ledger_id, r->entry_id, r->data, r->log_id, r->log_off) !=
        0) {
        log_error("bookie", "out of memory in the write cache");
        abort(); /* the entry is durable in the journal: failing it would be a lie */
    }
    r->data = NULL; /* moved into the write cache */
    /* A re-add (before fencing, or recovery) replaces a copy the read cache may
     * hold. An entry past the ledger's last one was never stored, so never read:
     * the lookup (a cache miss per add, 4 % of the server's CPU with unbatched
     * messages) is skipped for it. */
    if (r->entry_id <= l->last_entry)
        read_cache_remove(&bk->rcache, r->ledger_id, r->entry_id);
    bk->stats.adds++;
    bk->stats.add_bytes += len;
    bk->disk_bytes += len;
    if (r->lac > l->lac) {
        l->lac = r->lac;
        ledger_set_dirty(&bk->ledgers, l);
    }
    if (r->entry_id > l->last_entry) {
        l->last_entry = r->entry_id;
        ledger_set_dirty(&bk->ledgers, l);
    }
}

static void bookie_complete_one(bookie_t *bk, journal_req_t *r)
{
    switch (r->type) {
    case JREC_ADD:
        r->cb.add(r->rc, r->ledger_id, r->entry_id, r->arg);
        break;
    case JREC_FENCE: {
        pthread_mutex_lock(&bk->lock);
        const ledger_t *l = ledger_find(&bk->ledgers, r->ledger_id);
        int64_t lac = l ? l->lac : -1;
        pthread_mutex_unlock(&bk->lock);
        r->cb.lac(r->rc, r->ledger_id, lac, r->arg);
        break;
    }
    case JREC_DELETE:
        r->cb.done(r->rc, r->arg);
        break;
    default:
        break;
    }
}

/* One journal group is durable (rc == 0) or failed: complete its records in
 * journal order. */
static void bookie_group_done(void *ctx, uint64_t begin, uint64_t end, int rc, journal_pos_t pos)
{
    bookie_t *bk = ctx;
    if (rc && rc != QE_READ_ONLY && !bk->read_only)
        bk->read_only = rc;
    if (rc == QE_READ_ONLY && bk->cfg.disk_check_interval_ms) /* no room for a journal file */
        bookie_disk_check(bk);
    if (rc == 0)
        bk->acked_pos = pos;
    pthread_mutex_lock(&bk->lock);
    for (uint64_t i = begin; i < end; i++)
        bookie_apply_completed(bk, journal_slot(bk->journal, i), rc);
    pthread_mutex_unlock(&bk->lock);
    uint64_t now = clock_mono_us();
    for (uint64_t i = begin; i < end; i++) {
        journal_req_t *r = journal_slot(bk->journal, i);
        if (r->type == JREC_ADD && r->rc == 0) { /* JOURNAL_ADD_ENTRY: submitted to durable */
            latq_record(bk->lat_add, now - r->submit_us, now);
            latq_record(bk->lat_queue, r->pick_us - r->submit_us, now);
            latq_record(bk->lat_group, r->durable_us - r->pick_us, now);
            latq_record(bk->lat_cb, now - r->durable_us, now);
        }
        bookie_complete_one(bk, r);
        qbuf_unref(r->data);
        r->data = NULL;
    }
    journal_release(bk->journal, end);
    bookie_flush_hurry(bk);
    if (bk->cfg.disk_check_interval_ms && bk->cfg.disk_check_bytes &&
        bk->disk_bytes >= bk->cfg.disk_check_bytes)
        bookie_disk_check(bk);
    bookie_maybe_flush(bk, false);
    bookie_adds_resume(bk);
}

/* ----------------------------------------------------------------- adds -- */

/* Refusals of an add: 0 if it may go on (room or not). */
static int bookie_check_add(bookie_t *bk, int64_t ledger_id, int64_t entry_id, qbuf_t *data,
                            bookie_add_cb cb, bool recovery)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, "add", ledger_id, entry_id);
    if (!data || !cb || ledger_id < 0 || entry_id < 0)
        return bookie_refuse(bk, QE_INVALID, "add", ledger_id, entry_id);
    if (data->len > BOOKIE_ENTRY_BYTES_MAX)
        return bookie_refuse(bk, QE_TOO_LARGE, "add", ledger_id, entry_id);
    if (bk->read_only)
        return bookie_refuse(bk, QE_READ_ONLY, "add (bookie read-only after an I/O error)",
                             ledger_id, entry_id);
    if (bk->disk_full && !recovery)
        return bookie_refuse(bk, QE_READ_ONLY, "add (disk usage above diskUsageThreshold)",
                             ledger_id, entry_id);
    if (bk->flush_stalled && !recovery)
        return bookie_refuse(bk, QE_READ_ONLY, "add (no room to flush the write cache)", ledger_id,
                             entry_id);
    return 0;
}

/* The write caches (one filling, one flushing) and the journal have room for
 * an add of len bytes. */
static bool bookie_add_fits(const bookie_t *bk, uint32_t len)
{
    uint64_t need = len + WRITE_CACHE_ITEM_OVERHEAD;
    uint64_t held = bk->active->bytes + (bk->frozen ? bk->frozen->bytes : 0) + bk->pending_bytes;
    return held + need <= 2 * bk->cfg.write_cache_bytes;
}

/* 0 if the ledger takes adds, else why not; *first (unless NULL): no add of it
 * has completed since open (journal.h: such an add syncs the journal). */
static int bookie_ledger_check(bookie_t *bk, int64_t ledger_id, bool recovery, bool *first)
{
    pthread_mutex_lock(&bk->lock);
    ledger_t *l = ledger_get_or_create(&bk->ledgers, ledger_id);
    int rc = !l ? -ENOMEM : l->deleted ? QE_NO_LEDGER : (l->fenced && !recovery) ? QE_FENCED : 0;
    if (first)
        *first = l && l->last_entry < 0; /* none completed yet: not known from the disk */
    pthread_mutex_unlock(&bk->lock);
    return rc;
}

/* Hands a checked add to the journal: 0, 1 when the journal ring is full (the
 * caller waits for a group to complete), or the ledger's refusal. */
static int bookie_add_submit(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac,
                             qbuf_t *data, bookie_add_cb cb, void *arg, bool recovery)
{
    bool first;
    int rc = bookie_ledger_check(bk, ledger_id, recovery, &first);
    if (rc)
        return rc;
    journal_req_t *r = journal_next_slot(bk->journal);
    if (!r)
        return 1;
    r->type = JREC_ADD;
    r->sync_journal = first;
    r->ledger_id = ledger_id;
    r->entry_id = entry_id;
    r->lac = lac;
    r->data = qbuf_ref(data);
    r->cb.add = cb;
    r->arg = arg;
    bk->adds_pending++;
    bk->pending_bytes += data->len + WRITE_CACHE_ITEM_OVERHEAD;
    journal_submit(bk->journal);
    return 0;
}

/* ------------------------------------------------- adds waiting for room -- */

/* An add that found the write caches full waits here instead of being refused
 * (BookKeeper throttles such adds too): a refused add was sent again by its
 * ledger client every 10 ms, thousands of times a second under a heavy load,
 * and whichever retry came first after a flush won. Waiting adds go on oldest
 * first as flushes and journal groups complete; while any waits, a new add
 * waits behind it. Bounded with the others by pending_adds_max. */
typedef struct add_wait {
    struct add_wait *next;
    int64_t ledger_id, entry_id, lac;
    qbuf_t *data;
    bookie_add_cb cb;
    void *arg;
    bool recovery;
} add_wait_t;

static int bookie_add_wait(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac,
                           qbuf_t *data, bookie_add_cb cb, void *arg, bool recovery)
{
    add_wait_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (add_wait_t){.ledger_id = ledger_id,
                      .entry_id = entry_id,
                      .lac = lac,
                      .data = qbuf_ref(data),
                      .cb = cb,
                      .arg = arg,
                      .recovery = recovery};
    if (bk->wait_tail)
        bk->wait_tail->next = w;
    else
        bk->wait_head = w;
    bk->wait_tail = w;
    bk->adds_waiting++;
    bk->stats.adds_waited++;
    bookie_flush_hurry(bk);
    return 0;
}

static add_wait_t *bookie_wait_pop(bookie_t *bk)
{
    add_wait_t *w = bk->wait_head;
    bk->wait_head = w->next;
    if (!bk->wait_head)
        bk->wait_tail = NULL;
    bk->adds_waiting--;
    return w;
}

/* Submits waiting adds while there is room; a refused one (the ledger fenced
 * or deleted meanwhile, the bookie read-only) gets its callback now. */
static void bookie_adds_resume(bookie_t *bk)
{
    while (bk->wait_head && !bk->closing) {
        add_wait_t *w = bk->wait_head;
        int rc = bk->read_only || (bk->flush_stalled && !w->recovery) ? QE_READ_ONLY : 0;
        if (rc == 0 && !bookie_add_fits(bk, w->data->len)) {
            bookie_flush_hurry(bk); /* they wait for the flush */
            return;
        }
        if (rc == 0)
            rc = bookie_add_submit(bk, w->ledger_id, w->entry_id, w->lac, w->data, w->cb, w->arg,
                                   w->recovery);
        if (rc == 1)
            return; /* journal ring full: the next group's completion resumes */
        bookie_wait_pop(bk);
        if (rc)
            w->cb(rc, w->ledger_id, w->entry_id, w->arg);
        qbuf_unref(w->data);
        free(w);
    }
}

/* Shutdown: every waiting add fails. */
static void bookie_adds_fail_waiting(bookie_t *bk, int rc)
{
    while (bk->wait_head) {
        add_wait_t *w = bookie_wait_pop(bk);
        w->cb(rc, w->ledger_id, w->entry_id, w->arg);
        qbuf_unref(w->data);
        free(w);
    }
}

/* An add; recovery: accepted on a fenced ledger (BookKeeper's RECOVERY_ADD). */
static int bookie_add_flags(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac,
                            qbuf_t *data, bookie_add_cb cb, void *arg, bool recovery)
{
    int rc = bookie_check_add(bk, ledger_id, entry_id, data, cb, recovery);
    if (rc)
        return rc;
    if (bk->adds_pending + bk->adds_waiting >= bk->cfg.pending_adds_max)
        return bookie_refuse(bk, QE_BUSY, "add (pending adds bound)", ledger_id, entry_id);
    if (bk->wait_head || !bookie_add_fits(bk, data->len)) {
        rc = bookie_ledger_check(bk, ledger_id, recovery, NULL); /* refused now if later */
        if (rc == 0)
            rc = bookie_add_wait(bk, ledger_id, entry_id, lac, data, cb, arg, recovery);
    } else {
        rc = bookie_add_submit(bk, ledger_id, entry_id, lac, data, cb, arg, recovery);
        if (rc == 1)
            rc = QE_BUSY; /* the journal ring is full */
    }
    if (rc)
        return bookie_refuse(bk, rc, recovery ? "recovery add" : "add", ledger_id, entry_id);
    return 0;
}

int bookie_add(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, qbuf_t *data,
               bookie_add_cb cb, void *arg)
{
    return bookie_add_flags(bk, ledger_id, entry_id, lac, data, cb, arg, false);
}

int bookie_add_recovery(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac,
                        qbuf_t *data, bookie_add_cb cb, void *arg)
{
    return bookie_add_flags(bk, ledger_id, entry_id, lac, data, cb, arg, true);
}

/* ---------------------------------------------------------------- reads -- */

/* Where a read finds an entry on disk: its idx record (pos), or, for a
 * direct entry not indexed yet, the record itself (pos = READ_POS_NONE). */
#define READ_POS_NONE UINT64_MAX
typedef struct read_loc {
    uint32_t log_id;
    uint32_t length; /* known (READ_POS_NONE), else the ledger's largest */
    uint64_t pos;
    uint64_t offset; /* READ_POS_NONE only */
} read_loc_t;

typedef struct read_job {
    struct read_job *next;  /* waiting for room (read_wait_*), or forming (read_form_*) */
    struct read_job *chain; /* the next entry of a run read together (read_form_cb) */
    bookie_t *bk;
    int64_t ledger_id, entry_id;
    entry_log_t *log; /* one reader reference */
    read_loc_t loc;
    uint32_t counted; /* bytes counted in read_bytes_inflight (loc.length at submit;
                       * a run's first: the whole run's) */
    uint32_t ops;     /* reads issued (a run's first: for the whole run) */
    uint32_t idx_ops; /* idx reads issued (likewise) */
    qbuf_t *out;
    int rc;
    bookie_read_cb cb;
    void *arg;
} read_job_t;

/* Reader thread: locates each entry of the run j heads (its idx record,
 * unless the location is known; idx records that follow one another with one
 * read: entry_log_locate_run), then reads them all (entry_log_read_run:
 * records that follow one another in the log with one read). */
static void bookie_read_work(void *p)
{
    read_job_t *head = p;
    elog_read_t recs[BOOKIE_READ_RUN_MAX];
    elog_locate_t locs[BOOKIE_READ_RUN_MAX];
    read_job_t *jobs[BOOKIE_READ_RUN_MAX];
    size_t n = 0, m = 0;
    for (int i = 0; atomic_load(&head->bk->test_hold_reads) && i < 10000; i++)
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    for (read_job_t *j = head; j; j = j->chain) {
        assert(m < BOOKIE_READ_RUN_MAX);
        jobs[m] = j;
        locs[m++] = (elog_locate_t){.ledger_id = j->ledger_id,
                                    .entry_id = j->entry_id,
                                    .offset = j->loc.offset,
                                    .length = j->loc.length};
    }
    uint32_t idx_ops = 0;
    for (size_t i = 0, k; i < m; i = k) {
        read_job_t *j = jobs[i];
        for (k = i + 1; k < m && j->loc.pos != READ_POS_NONE &&
                        jobs[k]->loc.pos == j->loc.pos + (k - i) * ELOG_IDX_RECORD_BYTES;
             k++)
            ;
        if (j->loc.pos != READ_POS_NONE)
            idx_ops += (uint32_t)entry_log_locate_run(j->log, j->loc.pos, locs + i, k - i);
    }
    head->idx_ops = idx_ops;
    for (size_t i = 0; i < m; i++) {
        read_job_t *j = jobs[i];
        j->rc = locs[i].rc;
        if (j->rc == 0 && j->loc.pos != READ_POS_NONE && locs[i].length > j->loc.length) {
            /* Every entry indexed raised its ledger's largest length: an idx record
             * saying more does not describe what was indexed (nor is it read). */
            log_error("bookie",
                      "entry %" PRId64 ":%" PRId64 ": idx record of %" PRIu32 " bytes, above"
                      " the %" PRIu32 " of the ledger's largest entry",
                      j->ledger_id, j->entry_id, locs[i].length, j->loc.length);
            j->rc = QE_CORRUPT;
        }
        if (j->rc == 0) {
            recs[n] = (elog_read_t){.offset = locs[i].offset,
                                    .length = locs[i].length,
                                    .ledger_id = j->ledger_id,
                                    .entry_id = j->entry_id};
            jobs[n++] = j;
        }
    }
    head->ops = (uint32_t)entry_log_read_run(head->log, recs, n);
    for (size_t i = 0; i < n; i++) {
        jobs[i]->rc = recs[i].rc;
        jobs[i]->out = recs[i].out;
    }
}

static void bookie_read_done(void *p);

/* Gives the run j heads to the reader threads (loop thread). */
static int read_submit(bookie_t *bk, read_job_t *j)
{
    if (qexec_submit(bk->readers, bookie_read_work, bookie_read_done, j) != 0)
        return QE_BUSY;
    bk->read_bytes_inflight += j->counted;
    return 0;
}

static bool read_room(const bookie_t *bk, const read_job_t *j)
{
    return bk->read_bytes_inflight == 0 ||
           bk->read_bytes_inflight + j->counted <= bk->cfg.read_bytes_inflight_max;
}

/* Fails every read of the run j heads, none of which reached the readers
 * (lock not held). */
static void read_fail(bookie_t *bk, read_job_t *j, int rc)
{
    while (j) {
        read_job_t *next = j->chain;
        pthread_mutex_lock(&bk->lock);
        entry_log_unref(j->log);
        pthread_mutex_unlock(&bk->lock);
        bk->reads_pending--;
        j->cb(rc, j->ledger_id, j->entry_id, NULL, -1, j->arg);
        free(j);
        j = next;
    }
}

/* Gives waiting reads to the readers while there is room (loop thread). A
 * full executor queue is no room either: the next delivery pumps again. */
static void read_wait_pump(bookie_t *bk)
{
    while (bk->read_wait_head && !bk->readers_stopping && read_room(bk, bk->read_wait_head)) {
        read_job_t *j = bk->read_wait_head;
        int rc = read_submit(bk, j);
        if (rc != 0 && bk->read_bytes_inflight > 0)
            return; /* the executor's queue is full: the next delivery pumps again */
        bk->read_wait_head = j->next;
        if (!bk->read_wait_head)
            bk->read_wait_tail = NULL;
        j->next = NULL;
        if (rc != 0)
            read_fail(bk, j, QE_BUSY); /* nothing in flight would pump it again */
    }
}

/* At close, after the readers stopped: reads still waiting or forming fail. */
static void read_wait_fail_all(bookie_t *bk)
{
    while (bk->read_wait_head) {
        read_job_t *j = bk->read_wait_head;
        bk->read_wait_head = j->next;
        read_fail(bk, j, QE_SHUTDOWN);
    }
    bk->read_wait_tail = NULL;
    while (bk->read_form_head) {
        read_job_t *j = bk->read_form_head;
        bk->read_form_head = j->next;
        read_fail(bk, j, QE_SHUTDOWN);
    }
    bk->read_form_tail = NULL;
}

/* Delivers one read of a run (loop thread). */
static void read_deliver(bookie_t *bk, read_job_t *j)
{
    pthread_mutex_lock(&bk->lock);
    const ledger_t *l = ledger_find(&bk->ledgers, j->ledger_id);
    int64_t lac = l ? l->lac : -1;
    if (j->rc == 0 && (!l || l->deleted)) {
        j->rc = QE_NO_LEDGER; /* deleted while the read was in flight */
        qbuf_unref(j->out);
        j->out = NULL;
    }
    /* Cache only if no newer version was added meanwhile (re-add before fence). */
    idx_ref_t ref;
    bool current = j->rc == 0 && j->loc.pos != READ_POS_NONE &&
                   ledger_index_find(l, j->entry_id, &ref) && ref.log_id == j->loc.log_id &&
                   ref.pos == j->loc.pos &&
                   !write_cache_find(bk->active, j->ledger_id, j->entry_id) &&
                   !write_cache_find(bk->frozen, j->ledger_id, j->entry_id);
    entry_log_unref(j->log); /* last: j->log may be freed */
    pthread_mutex_unlock(&bk->lock);
    if (current)
        read_cache_put(&bk->rcache, j->ledger_id, j->entry_id, j->out);
    bk->reads_pending--;
    bk->stats.disk_read_entries++;
    j->cb(j->rc, j->ledger_id, j->entry_id, j->rc == 0 ? j->out : NULL, lac, j->arg);
    qbuf_unref(j->out);
    free(j);
}

static void bookie_read_done(void *p)
{
    read_job_t *j = p;
    bookie_t *bk = j->bk;
    bk->read_bytes_inflight -= j->counted;
    bk->stats.disk_read_ops += j->ops;
    bk->stats.disk_idx_read_ops += j->idx_ops;
    while (j) {
        read_job_t *next = j->chain;
        read_deliver(bk, j);
        j = next;
    }
    read_wait_pump(bk);
}

/* Where entry_id of l is, newest first: its payload in memory (a new
 * reference), else its location on disk in *loc (true in *on_disk): a direct
 * entry of a write cache (in its direct log, not indexed yet) or the index. */
static qbuf_t *bookie_read_lookup(bookie_t *bk, const ledger_t *l, int64_t entry_id,
                                  read_loc_t *loc, bool *on_disk)
{
    const write_cache_t *wcs[2] = {bk->active, bk->frozen};
    *on_disk = false;
    for (int i = 0; i < 2; i++) {
        const wc_item_t *it = write_cache_find(wcs[i], l->id, entry_id);
        if (!it)
            continue;
        if (it->data)
            return qbuf_ref(it->data);
        *loc = (read_loc_t){
            .log_id = it->log_id, .length = it->len, .pos = READ_POS_NONE, .offset = it->log_off};
        *on_disk = true;
        return NULL;
    }
    qbuf_t *b = read_cache_get(&bk->rcache, l->id, entry_id);
    if (b)
        return qbuf_ref(b);
    idx_ref_t ref;
    if (ledger_index_find(l, entry_id, &ref)) {
        *loc = (read_loc_t){
            .log_id = ref.log_id, .length = ledger_index_max_length(l), .pos = ref.pos};
        *on_disk = true;
    }
    return NULL;
}

/* Gives the run j heads to the readers, or queues it behind the reads waiting
 * for room. QE_BUSY: the executor's queue is full and nothing in flight would
 * make room (j untouched). */
static int read_enqueue(bookie_t *bk, read_job_t *j)
{
    bool wait = bk->read_wait_head || !read_room(bk, j); /* in order, behind those waiting */
    if (!wait && read_submit(bk, j) != 0) {
        if (bk->read_bytes_inflight == 0) /* nothing in flight would pump it later */
            return QE_BUSY;
        wait = true; /* the executor's queue is full: deliveries make room */
    }
    if (wait) {
        if (bk->read_wait_tail)
            bk->read_wait_tail->next = j;
        else
            bk->read_wait_head = j;
        bk->read_wait_tail = j;
        bk->stats.reads_waited++;
    }
    return 0;
}

/* Whether j can be read with the run that head starts and tail ends: the next
 * entry of the same ledger in the same log, both large (only when large_ok)
 * or both small, the run within BOOKIE_READ_RUN_BYTES (ELOG_RUN_SMALL_BYTES_MAX
 * for small ones), read_bytes_inflight_max and BOOKIE_READ_RUN_MAX reads.
 * Whether the records really follow one another is known on the reader
 * (entry_log_read_run). */
static bool read_joins(const bookie_t *bk, const read_job_t *head, const read_job_t *tail, size_t n,
                       const read_job_t *j, bool large_ok)
{
    bool large = j->loc.length >= ELOG_DIO_READ_MIN;
    uint64_t run = (uint64_t)head->counted + j->counted;
    return n < BOOKIE_READ_RUN_MAX && j->ledger_id == tail->ledger_id &&
           j->entry_id == tail->entry_id + 1 && j->loc.log_id == tail->loc.log_id &&
           large == (tail->loc.length >= ELOG_DIO_READ_MIN) && (large_ok || !large) &&
           run <= (large ? BOOKIE_READ_RUN_BYTES : ELOG_RUN_SMALL_BYTES_MAX) &&
           run <= bk->cfg.read_bytes_inflight_max;
}

/* The loop is about to wait: the disk reads asked for during this iteration
 * (read_form_*) go to the readers, the next entries of a ledger joined into
 * runs read together: small entries always (their runs are read buffered,
 * mostly from the page cache), large ones unless the journal wrote a small
 * group within BOOKIE_READ_RUN_QUIET_US (a large run is one larger device
 * read). Reads asked for later in this iteration (another prepare watcher's:
 * the broker's socket flush dispatches more) wait for the next one
 * (read_form_closed, read_idle). */
static void read_form_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_t *bk = w->data;
    bool large_ok =
        bk->read_form_head && !io_gate_writes_recent(&bk->gate, BOOKIE_READ_RUN_QUIET_US);
    while (bk->read_form_head) {
        read_job_t *head = bk->read_form_head, *tail = head;
        size_t n = 1;
        bk->read_form_head = head->next;
        head->next = NULL;
        while (bk->read_form_head && read_joins(bk, head, tail, n, bk->read_form_head, large_ok)) {
            read_job_t *j = bk->read_form_head;
            bk->read_form_head = j->next;
            j->next = NULL;
            head->counted += j->counted;
            tail->chain = j;
            tail = j;
            n++;
        }
        if (!bk->read_form_head)
            bk->read_form_tail = NULL;
        if (bk->readers_stopping || read_enqueue(bk, head) != 0)
            read_fail(bk, head, bk->readers_stopping ? QE_SHUTDOWN : QE_BUSY);
    }
    bk->read_form_closed = true;
}

static void read_form_reopen_cb(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_t *bk = w->data;
    bk->read_form_closed = false;
}

/* Active while reads asked for after read_form_cb wait for the next one: the
 * loop polls without blocking, and the next prepare gives them to the readers. */
static void read_form_idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    ev_idle_stop(loop, w);
}

static int bookie_read_disk(bookie_t *bk, const read_loc_t *loc, int64_t ledger_id,
                            int64_t entry_id, bookie_read_cb cb, void *arg)
{
    read_job_t *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    *j = (read_job_t){.bk = bk,
                      .ledger_id = ledger_id,
                      .entry_id = entry_id,
                      .log = log_table_find(&bk->logs, loc->log_id),
                      .loc = *loc,
                      .counted = loc->length,
                      .cb = cb,
                      .arg = arg};
    assert(j->log != NULL);
    j->log->refs++;
    /* given to the readers when the loop is about to wait, maybe with the next
     * entries (read_form_cb): this iteration's prepare, or (asked for after
     * it) the next one, which the idle watcher keeps from blocking */
    if (bk->read_form_tail)
        bk->read_form_tail->next = j;
    else
        bk->read_form_head = j;
    bk->read_form_tail = j;
    if (bk->read_form_closed && !ev_is_active(&bk->read_idle))
        ev_idle_start(bk->loop, &bk->read_idle);
    bk->reads_pending++;
    return 0;
}

int bookie_read(bookie_t *bk, int64_t ledger_id, int64_t entry_id, bookie_read_cb cb, void *arg)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, "read", ledger_id, entry_id);
    if (!cb)
        return QE_INVALID;
    if (bk->reads_pending >= BOOKIE_READS_PENDING_MAX)
        return bookie_refuse(bk, QE_BUSY, "read (reads in flight bound)", ledger_id, entry_id);
    bk->stats.reads++;
    bk_imm_t *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    *m = (bk_imm_t){.kind = IMM_READ, .ledger_id = ledger_id, .entry_id = entry_id, .arg = arg};
    m->cb.read = cb;
    pthread_mutex_lock(&bk->lock);
    const ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    if (!l || l->deleted) {
        m->rc = QE_NO_LEDGER;
    } else {
        m->lac = l->lac;
        read_loc_t loc;
        bool on_disk;
        m->entry = bookie_read_lookup(bk, l, entry_id, &loc, &on_disk);
        if (m->entry) {
            bk->stats.read_cache_hits++;
        } else if (!on_disk) {
            m->rc = QE_NO_ENTRY;
        } else {
            int rc = bookie_read_disk(bk, &loc, ledger_id, entry_id, cb, arg);
            pthread_mutex_unlock(&bk->lock);
            free(m);
            return rc ? bookie_refuse(bk, rc, "read", ledger_id, entry_id) : 0;
        }
    }
    pthread_mutex_unlock(&bk->lock);
    return bookie_imm_post(bk, m);
}

/* ------------------------------------------------- fence, lac, delete -- */

int bookie_read_lac(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, "read_lac", ledger_id, -1);
    if (!cb)
        return QE_INVALID;
    pthread_mutex_lock(&bk->lock);
    const ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    int rc = !l || l->deleted ? QE_NO_LEDGER : 0;
    int64_t lac = rc ? -1 : l->lac;
    pthread_mutex_unlock(&bk->lock);
    return bookie_post_lac(bk, rc, ledger_id, lac, cb, arg);
}

int bookie_last_entry(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, "last_entry", ledger_id, -1);
    if (!cb)
        return QE_INVALID;
    pthread_mutex_lock(&bk->lock);
    const ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    int rc = !l || l->deleted ? QE_NO_LEDGER : 0;
    int64_t last = rc ? -1 : l->last_entry;
    pthread_mutex_unlock(&bk->lock);
    return bookie_post_lac(bk, rc, ledger_id, last, cb, arg);
}

/* Queues a FENCE or DELETE record; the in-memory change is already made. */
static int bookie_journal_meta(bookie_t *bk, uint32_t type, int64_t ledger_id, void *cb, void *arg)
{
    journal_req_t *r = journal_next_slot(bk->journal);
    if (!r)
        return bookie_refuse(bk, QE_BUSY, type == JREC_FENCE ? "fence" : "delete", ledger_id, -1);
    r->type = type;
    r->ledger_id = ledger_id;
    r->entry_id = -1;
    r->lac = -1;
    if (type == JREC_FENCE)
        r->cb.lac = (bookie_lac_cb)cb;
    else
        r->cb.done = (bookie_done_cb)cb;
    r->arg = arg;
    journal_submit(bk->journal);
    return 0;
}

static int bookie_check_meta_call(bookie_t *bk, const char *what, int64_t ledger_id, bool has_cb)
{
    if (bk->closing)
        return bookie_refuse(bk, QE_SHUTDOWN, what, ledger_id, -1);
    if (!has_cb || ledger_id < 0)
        return bookie_refuse(bk, QE_INVALID, what, ledger_id, -1);
    if (bk->read_only)
        return bookie_refuse(bk, QE_READ_ONLY, what, ledger_id, -1);
    if (journal_next_slot(bk->journal) == NULL)
        return bookie_refuse(bk, QE_BUSY, what, ledger_id, -1);
    return 0;
}

int bookie_fence(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg)
{
    int rc = bookie_check_meta_call(bk, "fence", ledger_id, cb != NULL);
    if (rc)
        return rc;
    pthread_mutex_lock(&bk->lock);
    ledger_t *l = ledger_get_or_create(&bk->ledgers, ledger_id);
    rc = !l ? -ENOMEM : l->deleted ? QE_NO_LEDGER : 0;
    if (rc == 0 && !l->fenced) {
        l->fenced = true;
        ledger_set_dirty(&bk->ledgers, l);
    }
    pthread_mutex_unlock(&bk->lock);
    if (rc)
        return bookie_refuse(bk, rc, "fence", ledger_id, -1);
    return bookie_journal_meta(bk, JREC_FENCE, ledger_id, (void *)cb, arg);
}

int bookie_delete_ledger(bookie_t *bk, int64_t ledger_id, bookie_done_cb cb, void *arg)
{
    int rc = bookie_check_meta_call(bk, "delete", ledger_id, cb != NULL);
    if (rc)
        return rc;
    pthread_mutex_lock(&bk->lock);
    ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    bool known = l && !l->deleted;
    if (known)
        ledger_mark_deleted(&bk->ledgers, l);
    pthread_mutex_unlock(&bk->lock);
    if (!known) /* nothing to forget: done, idempotently */
        return bookie_post_done(bk, 0, cb, arg);
    write_cache_drop_ledger(bk->active, ledger_id);
    log_info("bookie", "ledger %" PRId64 " deleted", ledger_id);
    return bookie_journal_meta(bk, JREC_DELETE, ledger_id, (void *)cb, arg);
}

/* ---------------------------------------------------------------- stats -- */

void bookie_get_stats(bookie_t *bk, bookie_stats_t *out)
{
    *out = bk->stats;
    out->adds_waiting = bk->adds_waiting;
    out->write_cache_bytes = bk->caches[0].bytes + bk->caches[1].bytes;
    out->flushing = bk->flushing;
    out->read_cache_bytes = bk->rcache.bytes;
    out->reads_inflight_bytes = bk->read_bytes_inflight;
    journal_get_stats(bk->journal, &out->journal_syncs, &out->journal_sync_us_total);
    out->journal_dio_groups = journal_dio_groups(bk->journal);
    out->journal_one_sync_groups = journal_one_sync_groups(bk->journal);
    out->direct_tail_recovered = bk->direct_tail_recovered;
    journal_get_direct_stats(bk->journal, &out->direct_syncs, &out->direct_sync_us_total,
                             &out->direct_bytes);
    uint64_t now = clock_mono_us();
    latq_read(bk->lat_add, now, &out->journal_add_latency);
    latq_read(bk->lat_sync, now, &out->journal_sync_latency);
    latq_read(bk->lat_direct, now, &out->direct_latency);
    latq_read(bk->lat_queue, now, &out->journal_queue_latency);
    latq_read(bk->lat_group, now, &out->journal_group_latency);
    latq_read(bk->lat_cb, now, &out->add_callback_latency);
    latq_read(bk->lat_roll, now, &out->journal_creation_latency);
    latq_read(bk->lat_droll, now, &out->direct_roll_latency);
    pthread_mutex_lock(&bk->lock);
    out->ledgers = bk->ledgers.live;
    out->entry_logs = bk->logs.count;
    out->entry_log_bytes = bk->logs.bytes;
    pthread_mutex_unlock(&bk->lock);
    out->gc_passes = atomic_load(&bk->gc_passes);
    out->gc_logs_removed = atomic_load(&bk->gc_logs_removed);
    out->gc_logs_compacted = atomic_load(&bk->gc_logs_compacted);
    out->gc_compacted_bytes = atomic_load(&bk->gc_compacted_bytes);
    out->gc_logs_freeing = bk_trash_waiting();
    io_gate_stats(&bk->gate, &out->reads_yielded, &out->reads_yielded_us);
    out->disk_usage = bk->disk_usage;
    out->disk_full = bk->disk_full;
    out->disk_almost_full = bk->disk_almost_full;
    out->read_only = bk->read_only != 0;
    out->flush_stalled = bk->flush_stalled != 0;
    out->disk_checks = bk->disk_checks;
    spare_stats_t ss;
    spares_get_stats(bk->spares, &ss);
    out->spare_zeroed_bytes = ss.zeroed_bytes;
    out->spares_taken_journal = ss.taken[SPARE_JOURNAL];
    out->spares_taken_direct = ss.taken[SPARE_DIRECT];
    out->spare_logs_reused = ss.reused[SPARE_DIRECT];
    out->spare_jnl_reused = ss.reused[SPARE_JOURNAL];
}

bool bookie_writable(const bookie_t *bk)
{
    return !bk->closing && !bk->read_only && !bk->disk_full && !bk->flush_stalled;
}

/* ----------------------------------------------------------- disk usage -- */

/* The fraction of dir's file system in use as BookKeeper counts it,
 * 1 - available / total (blocks only root may use count as used); -1 if
 * statvfs fails. */
static double disk_usage_of(const char *dir)
{
    struct statvfs st;
    if (statvfs(dir, &st) < 0 || st.f_blocks == 0)
        return -1;
    return 1.0 - (double)st.f_bavail / (double)st.f_blocks;
}

static void bookie_disk_apply(bookie_t *bk, double usage, const char *dir)
{
    const bookie_config_t *c = &bk->cfg;
    bk->disk_usage = usage;
    if (!bk->disk_full && usage >= c->disk_usage_threshold) {
        bk->disk_full = true;
        bk_trash_urgent(1); /* removed files freed at once while full (trash.h) */
        log_warn("bookie",
                 "disk usage of %s is %.1f %%, at or above diskUsageThreshold (%.1f %%): adds "
                 "are refused until it is below diskUsageLwmThreshold (%.1f %%)",
                 dir, usage * 100, c->disk_usage_threshold * 100,
                 c->disk_usage_lwm_threshold * 100);
    } else if (bk->disk_full && usage < c->disk_usage_lwm_threshold) {
        bk->disk_full = false;
        bk_trash_urgent(-1);
        log_info("bookie",
                 "disk usage of %s is %.1f %%, below diskUsageLwmThreshold (%.1f %%): adds "
                 "are taken again",
                 dir, usage * 100, c->disk_usage_lwm_threshold * 100);
    }
    bool almost = usage >= c->disk_usage_warn_threshold;
    if (almost && !bk->disk_almost_full && !bk->disk_full)
        log_warn("bookie",
                 "disk usage of %s is %.1f %%, at or above diskUsageWarnThreshold (%.1f %%): "
                 "adds are refused from diskUsageThreshold (%.1f %%); GC runs at every check, "
                 "major compaction waits",
                 dir, usage * 100, c->disk_usage_warn_threshold * 100,
                 c->disk_usage_threshold * 100);
    else if (!almost && bk->disk_almost_full)
        log_info("bookie", "disk usage of %s is %.1f %%, below diskUsageWarnThreshold (%.1f %%)",
                 dir, usage * 100, c->disk_usage_warn_threshold * 100);
    bk->disk_almost_full = almost;
    /* no spare files (up to a journal file and an entry log) above the low mark */
    spares_set_paused(bk->spares, bk->disk_full || usage >= c->disk_usage_lwm_threshold);
    /* While full or almost, every check frees what it can: the logs of
     * ledgers deleted since the last pass, compacting as a minor pass while
     * almost full, not at all while full (bookie_gc_threshold). */
    if ((bk->disk_full || bk->disk_almost_full) && !bk->gc_running && !bk->closing)
        bookie_gc_start(bk);
}

static void bookie_disk_check(bookie_t *bk)
{
    bk->disk_bytes = 0;
    bk->disk_checks++;
    double uj = disk_usage_of(bk->jdir), ul = disk_usage_of(bk->ldir);
    if (uj < 0 && ul < 0) {
        log_warn("bookie", "disk usage of %s unknown (statvfs failed): the last state kept",
                 bk->dir);
        return;
    }
    bookie_disk_apply(bk, uj > ul ? uj : ul, uj > ul ? bk->jdir : bk->ldir);
}

static void bookie_disk_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_disk_check(w->data);
}

void bookie_test_disk_usage(bookie_t *bk, double usage)
{
    bookie_disk_apply(bk, usage, bk->dir);
}

void bookie_test_fail_journal(bookie_t *bk, int err)
{
    journal_inject_error(bk->journal, err);
}

void bookie_test_fail_journal_roll(bookie_t *bk, int err)
{
    journal_inject_roll_error(bk->journal, err);
}

void bookie_test_fail_flush(bookie_t *bk, int err)
{
    pthread_mutex_lock(&bk->flock);
    bk->writer.inject = err;
    pthread_mutex_unlock(&bk->flock);
}

void bookie_test_fail_direct_alloc(bookie_t *bk, int count)
{
    atomic_store(&bk->direct.inject_alloc, count);
}

void bookie_test_fail_flush_step(bookie_t *bk, int step, int err)
{
    if (step == FLUSH_STEP_COPIES) {
        bookie_test_fail_flush(bk, err);
        return;
    }
    pthread_mutex_lock(&bk->flock);
    bk->test_flush_step = step;
    bk->test_flush_err = err;
    pthread_mutex_unlock(&bk->flock);
}

/* ------------------------------------------------------- open: rebuild -- */

static int bookie_rebuild_run(void *ctx, int64_t ledger_id, int64_t first, uint32_t count,
                              uint32_t log_id, uint64_t pos, uint32_t max_length)
{
    bookie_t *bk = ctx;
    ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    if (l && l->deleted)
        return 0;
    if (!l && !(l = ledger_get_or_create(&bk->ledgers, ledger_id)))
        return -ENOMEM;
    int64_t last = first + (int64_t)count - 1;
    if (last > l->last_entry)
        l->last_entry = last;
    return ledger_index_put_run(l, first, count, log_id, pos, max_length);
}

/* Replay of an add: data (a new reference, taken over) into the write cache,
 * at its direct log location when log_id != 0. */
static int bookie_replay_put(bookie_t *bk, ledger_t *l, const journal_record_t *rec, qbuf_t *data,
                             uint32_t log_id, uint64_t log_off)
{
    if (l->deleted) {
        qbuf_unref(data);
        return 0;
    }
    if (!data ||
        write_cache_put_at(bk->active, rec->ledger_id, rec->entry_id, data, log_id, log_off) != 0) {
        qbuf_unref(data);
        return -ENOMEM;
    }
    ledger_set_dirty(&bk->ledgers, l);
    if (rec->lac > l->lac)
        l->lac = rec->lac;
    if (rec->entry_id > l->last_entry)
        l->last_entry = rec->entry_id;
    if (bk->active->bytes >= bk->cfg.write_cache_bytes) { /* flush, no checkpoint yet */
        int rc = flush_run(bk, bk->active, (journal_pos_t){0, 0}, false, 0);
        write_cache_clear(bk->active);
        if (rc)
            return rc;
    }
    return 0;
}

/* An ADD_REF: its entry-log record must be there and match, else the
 * reference belongs to a group that was never acknowledged (the record was
 * torn by the crash) and the journal ends here. */
static int bookie_replay_ref(bookie_t *bk, ledger_t *l, const journal_record_t *rec)
{
    journal_ref_t ref;
    journal_ref_decode(rec->payload, &ref);
    entry_log_t *log = log_table_find(&bk->logs, ref.log_id);
    qbuf_t *b = NULL;
    int rc = log ? entry_log_read_expect(log, ref.offset, ref.length, rec->ledger_id, rec->entry_id,
                                         ref.crc, &b)
                 : QE_CORRUPT;
    if (rc == QE_CORRUPT) {
        log_warn("bookie",
                 "journal %016" PRIx64 ":%" PRIu64 ": entry %" PRId64 ":%" PRId64
                 " refers to entry log %08" PRIx32 " offset %" PRIu64 ", %s: "
                 "never acknowledged; not served",
                 rec->pos.seq, rec->pos.off, rec->ledger_id, rec->entry_id, ref.log_id, ref.offset,
                 log ? "which does not hold it intact" : "which does not exist");
        return JOURNAL_REPLAY_END;
    }
    if (rc)
        return rc; /* an I/O error proves nothing: fail the open, truncate nothing */
    if (ref.offset + ELOG_HEADER_BYTES + ref.length > log->rec_end)
        log->rec_end = ref.offset + ELOG_HEADER_BYTES + ref.length;
    return bookie_replay_put(bk, l, rec, b, ref.log_id, ref.offset);
}

/* A record of the newest direct log's tail (elog_direct_scan_tail): an add
 * whose journal reference was written without a sync of its own
 * (journalLargeEntryOneSync) and lost with the crash, or one never
 * acknowledged. Its ledger must be known (replayed, or in the indexes): the
 * first add of a ledger always synced the journal, so an unknown ledger's
 * record is not one of this life's adds to put back (a ledger deleted since,
 * whose tombstone is gone). */
static int bookie_tail_record(void *ctx, entry_log_t *log, int64_t ledger_id, int64_t entry_id,
                              uint64_t offset, qbuf_t *b)
{
    bookie_t *bk = ctx;
    ledger_t *l = ledger_find(&bk->ledgers, ledger_id);
    if (!l || l->deleted) {
        qbuf_unref(b);
        return 0;
    }
    journal_record_t rec = {
        .type = JREC_ADD, .ledger_id = ledger_id, .entry_id = entry_id, .lac = -1};
    bk->direct_tail_recovered++;
    return bookie_replay_put(bk, l, &rec, b, log->id, offset);
}

/* After the journal's replay: the newest direct log (stamped) read after the
 * last record anything points at. */
static int bookie_recover_direct_tail(bookie_t *bk)
{
    for (uint32_t i = bk->logs.count; i > 0; i--) {
        entry_log_t *log = bk->logs.logs[i - 1];
        if (!elog_direct_stamped(log))
            continue;
        uint32_t found = 0;
        int rc = elog_direct_scan_tail(log, bookie_tail_record, bk, &found);
        if (rc)
            log_error("bookie", "entry log %08" PRIx32 ": reading its tail back failed: %s",
                      log->id, q_strerror(rc));
        else if (found)
            log_info("bookie",
                     "entry log %08" PRIx32 ": %u records after the last one referenced or "
                     "indexed; %" PRIu64 " of them (of known ledgers) put back",
                     log->id, found, bk->direct_tail_recovered);
        return rc;
    }
    return 0;
}

static int bookie_replay_record(void *ctx, const journal_record_t *rec)
{
    bookie_t *bk = ctx;
    if (rec->type == JREC_CHECKPOINT)
        return 0;
    ledger_t *l = ledger_get_or_create(&bk->ledgers, rec->ledger_id);
    if (!l)
        return -ENOMEM;
    if (rec->type == JREC_FENCE) {
        if (!l->fenced)
            ledger_set_dirty(&bk->ledgers, l);
        l->fenced = true;
    } else if (rec->type == JREC_DELETE) {
        ledger_mark_deleted(&bk->ledgers, l);
        write_cache_drop_ledger(bk->active, rec->ledger_id);
    } else if (rec->type == JREC_ADD_REF) {
        return bookie_replay_ref(bk, l, rec);
    } else if (!l->deleted) {
        return bookie_replay_put(bk, l, rec, qbuf_copy(rec->payload, rec->len), 0, 0);
    }
    return 0;
}

/* Index from the entry logs, then the journal since the checkpoint, then a
 * checkpoint at the start of a fresh journal file. */
static int bookie_recover(bookie_t *bk, uint64_t *next_seq)
{
    journal_pos_t cp;
    uint64_t records = 0;
    uint32_t next_log = 0, version = 1;
    int rc = checkpoint_load(bk->ldir, &cp, &version);
    if (rc == 0)
        rc = ledger_meta_load(&bk->ledgers, bk->ldir, &bk->meta_size, &records);
    bk->meta_records = records;
    if (rc == 0) { /* files removed whose blocks were still being freed */
        bk_trash_sweep(bk->ldir, ".log");
        bk_trash_sweep(bk->jdir, ".jnl");
    }
    bk->logs.dio_reads = bk->cfg.journal_large_entry_odirect;
    if (rc == 0)
        rc = log_table_load(&bk->logs, bk->ldir,
                            &(elog_load_fns_t){bookie_rebuild_run, bookie_rebuild_run, bk},
                            &next_log);
    (void)next_log; /* also in bk->logs.next_id */
    if (rc == 0)
        rc = elog_writer_init(&bk->writer, bk->ldir, bk->cfg.entry_log_size_bytes,
                              bk->cfg.entry_log_cache_keep_bytes, &bk->lock, &bk->logs);
    if (rc == 0)
        rc = elog_direct_init(&bk->direct, bk->ldir, bk->cfg.entry_log_size_bytes,
                              bk->cfg.journal_large_entry_odirect, &bk->lock, &bk->logs);
    if (rc == 0)
        rc = meta_file_open(bk);
    if (rc == 0)
        rc = journal_replay(bk->jdir, cp, version >= 3 ? 3 : 2, bookie_replay_record, bk, next_seq);
    if (rc == 0)
        rc = bookie_recover_direct_tail(bk);
    if (rc == 0)
        log_table_cut_tails(&bk->logs); /* before any log is appended again */
    if (rc == 0) {
        bk->acked_pos = (journal_pos_t){*next_seq, 0};
        bk->cp_pos = bk->acked_pos;
        rc = flush_run(bk, bk->active, bk->acked_pos, true, 0);
        write_cache_clear(bk->active);
    }
    if (rc == 0)
        log_info("bookie",
                 "opened %s: %" PRIu64 " ledgers, %u entry logs, journal from "
                 "%016" PRIx64 ":%" PRIu64,
                 bk->dir, bk->ledgers.live, bk->logs.count, cp.seq, cp.off);
    return rc;
}

/* ---------------------------------------------------------- open, close -- */

static int bookie_check_config(const bookie_config_t *cfg)
{
    if (!cfg->data_dir || !*cfg->data_dir || strlen(cfg->data_dir) > PATH_MAX - 64 ||
        !cfg->journal_group_bytes_max || !cfg->journal_group_entries_max ||
        !cfg->journal_file_size_bytes || !cfg->entry_log_size_bytes || !cfg->write_cache_bytes ||
        !cfg->flush_interval_ms || !cfg->pending_adds_max || !cfg->gc_interval_ms ||
        cfg->pending_adds_max > (1u << 24) || !(cfg->minor_compaction_threshold >= 0) ||
        cfg->minor_compaction_threshold > 1 || !(cfg->major_compaction_threshold >= 0) ||
        cfg->major_compaction_threshold > 1 || cfg->read_yield_us > BOOKIE_READ_YIELD_US_MAX ||
        cfg->journal_format_version < BOOKIE_JOURNAL_FORMAT_MIN ||
        cfg->journal_format_version > BOOKIE_JOURNAL_FORMAT_MAX ||
        disk_config_error(cfg->disk_usage_threshold, cfg->disk_usage_lwm_threshold,
                          cfg->disk_usage_warn_threshold, cfg->disk_check_interval_ms))
        return QE_INVALID;
    return 0;
}

static int bookie_init_dirs(bookie_t *bk)
{
    if (asprintf(&bk->jdir, "%s/journal", bk->dir) < 0 ||
        asprintf(&bk->ldir, "%s/ledgers", bk->dir) < 0)
        return -ENOMEM;
    int rc = bk_mkdir(bk->dir);
    if (rc == 0)
        rc = bk_mkdir(bk->jdir);
    if (rc == 0)
        rc = bk_mkdir(bk->ldir);
    if (rc)
        log_error("bookie", "cannot create directories under %s: %s", bk->dir, q_strerror(rc));
    return rc;
}

static void bookie_start_timers(bookie_t *bk)
{
    ev_timer_init(&bk->flush_timer, bookie_flush_timer_cb, bk->cfg.flush_interval_ms / 1000.0,
                  bk->cfg.flush_interval_ms / 1000.0);
    bk->flush_timer.data = bk;
    ev_timer_start(bk->loop, &bk->flush_timer);
    ev_unref(bk->loop); /* the bookie alone does not keep ev_run() alive */
    ev_timer_init(&bk->gc_timer, bookie_gc_timer_cb, bk->cfg.gc_interval_ms / 1000.0,
                  bk->cfg.gc_interval_ms / 1000.0);
    bk->gc_timer.data = bk;
    ev_timer_start(bk->loop, &bk->gc_timer);
    ev_unref(bk->loop);
    ev_prepare_init(&bk->read_prepare, read_form_cb);
    bk->read_prepare.data = bk;
    ev_prepare_start(bk->loop, &bk->read_prepare);
    ev_unref(bk->loop);
    ev_check_init(&bk->read_check, read_form_reopen_cb);
    bk->read_check.data = bk;
    ev_check_start(bk->loop, &bk->read_check);
    ev_unref(bk->loop);
    ev_idle_init(&bk->read_idle, read_form_idle_cb);
    bk->read_idle.data = bk;
    if (bk->cfg.disk_check_interval_ms) {
        double every = bk->cfg.disk_check_interval_ms / 1000.0;
        ev_timer_init(&bk->disk_timer, bookie_disk_timer_cb, every, every);
        bk->disk_timer.data = bk;
        ev_timer_start(bk->loop, &bk->disk_timer);
        ev_unref(bk->loop);
    }
}

static void bookie_free(bookie_t *bk)
{
    if (bk->disk_full) /* the trash urgency it holds */
        bk_trash_urgent(-1);
    journal_free(bk->journal);
    write_cache_clear(&bk->caches[0]);
    write_cache_clear(&bk->caches[1]);
    read_cache_free(&bk->rcache);
    ledger_table_free(&bk->ledgers);
    log_table_free(&bk->logs);
    flush_resume_drop(bk);
    elog_writer_free(&bk->writer);
    elog_direct_free(&bk->direct);
    if (bk->gate_ok)
        io_gate_destroy(&bk->gate);
    latq_free(bk->lat_add);
    latq_free(bk->lat_sync);
    latq_free(bk->lat_direct);
    latq_free(bk->lat_queue);
    latq_free(bk->lat_group);
    latq_free(bk->lat_cb);
    latq_free(bk->lat_roll);
    latq_free(bk->lat_droll);
    if (bk->meta_fd >= 0)
        close(bk->meta_fd);
    pthread_mutex_destroy(&bk->lock);
    pthread_mutex_destroy(&bk->flock);
    pthread_cond_destroy(&bk->fcond);
    free(bk->dir);
    free(bk->jdir);
    free(bk->ldir);
    free(bk);
}

/* Stops threads and delivers everything they posted (loop thread). */
static void bookie_stop_threads(bookie_t *bk)
{
    if (bk->opened) {
        ev_ref(bk->loop);
        ev_timer_stop(bk->loop, &bk->flush_timer);
        ev_ref(bk->loop);
        ev_timer_stop(bk->loop, &bk->gc_timer);
        ev_ref(bk->loop);
        ev_prepare_stop(bk->loop, &bk->read_prepare);
        ev_ref(bk->loop);
        ev_check_stop(bk->loop, &bk->read_check);
        ev_idle_stop(bk->loop, &bk->read_idle);
        if (ev_is_active(&bk->disk_timer)) {
            ev_ref(bk->loop);
            ev_timer_stop(bk->loop, &bk->disk_timer);
        }
    }
    journal_stop(bk->journal);
    spares_stop(bk->spares); /* the journal thread took its last one */
    bk->spares = NULL;
    bk->direct.spares = NULL;
    flusher_stop(bk);
    bk->readers_stopping = true; /* completions below give no waiting read to them */
    qexec_free(bk->readers);     /* runs the read completions */
    bk->readers = NULL;
    read_wait_fail_all(bk);
    qloop_mailbox_free(bk->mb); /* runs journal, flush and GC completions */
    bk->mb = NULL;
}

int bookie_open(struct ev_loop *loop, const bookie_config_t *cfg, bookie_t **out)
{
    if (bookie_check_config(cfg)) {
        log_error("bookie", "invalid bookie configuration");
        return QE_INVALID;
    }
    bookie_t *bk = calloc(1, sizeof *bk);
    if (!bk)
        return -ENOMEM;
    bk->loop = loop;
    bk->cfg = *cfg;
    bk->dir = strdup(cfg->data_dir);
    bk->cfg.data_dir = bk->dir;
    bk->meta_fd = -1;
    pthread_mutex_init(&bk->lock, NULL);
    pthread_mutex_init(&bk->flock, NULL);
    pthread_cond_init(&bk->fcond, NULL);
    write_cache_init(&bk->caches[0]);
    write_cache_init(&bk->caches[1]);
    bk->active = &bk->caches[0];
    uint64_t window_us = (uint64_t)(cfg->stats_window_s ? cfg->stats_window_s : 60) * 1000000u;
    bk->lat_add = latq_new(window_us);
    bk->lat_sync = latq_new(window_us);
    bk->lat_direct = latq_new(window_us);
    bk->lat_queue = latq_new(window_us);
    bk->lat_group = latq_new(window_us);
    bk->lat_cb = latq_new(window_us);
    bk->lat_roll = latq_new(window_us);
    bk->lat_droll = latq_new(window_us);
    bool lat_ok = bk->lat_add && bk->lat_sync && bk->lat_direct && bk->lat_queue && bk->lat_group &&
                  bk->lat_cb && bk->lat_roll && bk->lat_droll;
    int rc = !bk->dir || !lat_ok ? -ENOMEM : bookie_init_dirs(bk);
    if (rc == 0)
        rc = io_gate_init(&bk->gate, cfg->read_yield_us);
    bk->gate_ok = rc == 0;
    bk->logs.gate = &bk->gate;
    if (rc == 0)
        rc = ledger_table_init(&bk->ledgers);
    if (rc == 0)
        rc = read_cache_init(&bk->rcache, cfg->read_cache_bytes);
    bk->mb = rc ? NULL : qloop_mailbox_new(loop);
    bk->readers = bk->mb ? qexec_new(loop, "bk-read", BOOKIE_READER_THREADS, 4096) : NULL;
    if (rc == 0 && !bk->readers)
        rc = -ENOMEM;
    uint64_t seq = 0;
    if (rc == 0)
        rc = bookie_recover(bk, &seq);
    journal_config_t jc = {bk->jdir,
                           cfg->journal_sync,
                           cfg->journal_group_wait_us_max,
                           cfg->journal_group_bytes_max,
                           cfg->journal_group_entries_max,
                           cfg->journal_file_size_bytes,
                           cfg->pending_adds_max + BOOKIE_RING_HEADROOM,
                           cfg->journal_large_entry_bytes,
                           &bk->direct,
                           &bk->gate,
                           cfg->journal_odirect,
                           NULL,
                           cfg->journal_format_version,
                           bk->lat_sync,
                           bk->lat_direct,
                           bk->lat_roll,
                           bk->lat_droll,
                           cfg->journal_large_entry_one_sync};
    if (rc == 0) {
        spares_remove_left(bk->jdir);
        spares_remove_left(bk->ldir);
    }
    if (rc == 0 && cfg->spare_zero_rate_bytes) {
        spare_config_t sc = {{bk->jdir, bk->ldir},
                             {cfg->journal_file_size_bytes, cfg->entry_log_size_bytes},
                             cfg->spare_zero_rate_bytes,
                             (uint64_t)cfg->spare_idle_ms * 1000};
        rc = spares_start(&sc, &bk->spares);
        bk->direct.spares = bk->spares;
        jc.spares = bk->spares;
    }
    if (rc == 0)
        rc = journal_open(&jc, seq, bk->mb, bookie_group_done, bk, &bk->journal);
    if (rc == 0)
        rc = flusher_start(bk);
    if (rc) {
        log_error("bookie", "cannot open the bookie in %s: %s", cfg->data_dir, q_strerror(rc));
        bookie_stop_threads(bk);
        bookie_free(bk);
        return rc;
    }
    gc_times_load(bk->ldir, clock_wall_ms(), &bk->gc_minor_ms, &bk->gc_major_ms);
    bookie_start_timers(bk);
    bk->opened = true;
    bk->freeze_us = clock_mono_us(); /* the first flush is paced too */
    if (bk->cfg.disk_check_interval_ms)
        bookie_disk_check(bk); /* a full disk refuses the first add already */
    *out = bk;
    return 0;
}

/* Stops accepting, completes what is in flight, fails GC waiters left. */
static void bookie_shutdown(bookie_t *bk)
{
    bk->closing = true;
    atomic_store(&bk->flush_hurry, true); /* a paced flush in progress: no more pacing */
    bookie_adds_fail_waiting(bk, QE_SHUTDOWN);
    bookie_stop_threads(bk);
    for (uint32_t i = 0; i < bk->n_gc_cur; i++)
        bk->gc_cur[i].cb(QE_SHUTDOWN, bk->gc_cur[i].arg);
    for (uint32_t i = 0; i < bk->n_gc_next; i++)
        bk->gc_next[i].cb(QE_SHUTDOWN, bk->gc_next[i].arg);
    bk->n_gc_cur = bk->n_gc_next = 0;
}

/* ------------------------------------------------------ index summaries -- */

typedef struct sum_runs {
    idx_sum_run_t *v;
    uint32_t n, cap;
    bool bad; /* a run past the synced .idx, or no memory: no summary */
} sum_runs_t;

static uint32_t log_slot(const log_table_t *t, uint32_t id)
{
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->logs[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void sum_runs_push(sum_runs_t *r, const idx_sum_run_t *run)
{
    if (r->bad)
        return;
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? 2 * r->cap : 64;
        idx_sum_run_t *v = realloc(r->v, (size_t)cap * sizeof *v);
        if (!v) {
            r->bad = true;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *run;
}

/* At a clean close, after the last flush: a summary for each entry log whose
 * .idx grew since its last one, so that the next open reads runs instead of
 * every idx record (idx_summary.h). A summary not written costs only that
 * log's share of the next open. */
static void bookie_write_summaries(bookie_t *bk)
{
    uint64_t t0 = clock_mono_ns();
    log_table_t *t = &bk->logs;
    sum_runs_t *runs = calloc(t->count ? t->count : 1, sizeof *runs);
    if (!runs)
        return;
    bool any = false;
    for (uint32_t i = 0; i < t->count; i++) {
        const entry_log_t *log = t->logs[i];
        runs[i].bad = log->idx_size == 0 || log->idx_size == log->sum_idx_size; /* not wanted */
        any = any || !runs[i].bad;
    }
    qmap_iter_t it = {0};
    void *v;
    while (any && qmap64_next(bk->ledgers.map, &it, NULL, &v)) {
        const ledger_t *l = v;
        for (uint32_t k = 0; k < l->nruns; k++) {
            const idx_run_t *r = &l->runs[k];
            uint32_t i = log_slot(t, r->log_id);
            if (i == t->count || t->logs[i]->id != r->log_id)
                continue; /* cannot happen: a run's log is in the table */
            if (r->pos + (uint64_t)r->count * ELOG_IDX_RECORD_BYTES > t->logs[i]->idx_size)
                runs[i].bad = true;
            sum_runs_push(&runs[i],
                          &(idx_sum_run_t){l->id, r->first, r->pos, r->count, l->max_length});
        }
    }
    uint32_t written = 0, failed = 0;
    uint64_t nruns = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        entry_log_t *log = t->logs[i];
        bool wanted = log->idx_size && log->idx_size != log->sum_idx_size;
        int rc = runs[i].bad ? QE_CORRUPT : 0;
        if (wanted && rc == 0)
            rc = elog_write_summary(bk->ldir, log, runs[i].v, runs[i].n);
        if (wanted && rc == 0)
            written++, nruns += runs[i].n;
        else if (wanted)
            failed++;
        free(runs[i].v);
    }
    free(runs);
    if (written || failed)
        log_info("bookie",
                 "index summaries of %u entry logs written (%" PRIu64 " runs), %u not,"
                 " in %.1f ms",
                 written, nruns, failed, (double)(clock_mono_ns() - t0) / 1e6);
}

void bookie_test_hold_reads(bookie_t *bk, bool hold)
{
    atomic_store(&bk->test_hold_reads, hold);
}

void bookie_test_flush_pace(bookie_t *bk, uint64_t bytes_per_s)
{
    bk->test_flush_pace = bytes_per_s;
}

void bookie_test_gc_reads_wait(bookie_t *bk, int ms)
{
    atomic_store(&bk->test_gc_reads_wait_ms, ms);
}

void bookie_test_abandon(bookie_t *bk)
{
    bookie_shutdown(bk);
    bookie_free(bk);
}

void bookie_close(bookie_t *bk)
{
    if (!bk)
        return;
    bookie_shutdown(bk);
    elog_direct_trim(&bk->direct);
    if (!atomic_load(&bk->flush_failed) && !bk->frozen) {
        int rc = flush_run(bk, bk->active, bk->acked_pos, true, 0);
        if (rc)
            log_warn("bookie", "final checkpoint failed (%s): the journal will be replayed",
                     q_strerror(rc));
        else
            bookie_write_summaries(bk);
    } else if (bk->flush_stalled) {
        log_warn("bookie",
                 "closing with the write cache not flushed (%s): the journal will be replayed",
                 q_strerror(bk->flush_stalled));
    }
    log_info("bookie", "closed %s", bk->dir);
    bookie_free(bk);
}
