/*
 * bookie_int.h — the bookie's private state, shared by bookie.c (API, read
 * path, completions) and flush.c (flush thread, checkpoint, GC). Not included
 * outside storage/bookie/ (tests may, for fault injection).
 *
 * Who owns what:
 *   loop thread   — active/frozen write caches (the frozen one is immutable
 *                   while flushing), read cache, journal ring head/tail,
 *                   pending counters, timers, GC waiters, acked_pos.
 *   bookie lock   — ledger table (metadata + index) and log table; taken by
 *                   the loop (adds, reads, fence, delete) and the flush thread
 *                   (index updates, metadata snapshots, GC). Held briefly,
 *                   never across I/O.
 *   flush thread  — entry log writer, ledgers.meta fd, per-log ledger maps;
 *                   runs flushes and GC passes one at a time (never both).
 *   journal thread— journal files (journal.c) and the direct entry log
 *                   writer (large entries written once; entry_log.h).
 *
 * Checkpoint rule: when the loop freezes the active write cache it records
 * cp = acked_pos, the journal end after the last group it completed. Every add
 * acknowledged before cp is in the frozen cache or already in an entry log, so
 * once the frozen cache, the index and ledgers.meta are durable, replay can
 * start at cp and journal files before cp.seq can be deleted. An entry the
 * journal thread wrote to a direct log is in the frozen cache too, with its
 * location: the flush appends its idx record to that log's .idx (durable)
 * instead of copying it, so after the checkpoint the index finds it without
 * the journal's ADD_REF. GC leaves a direct log alone while an ADD_REF into
 * it may still be replayed (pinned until the durable checkpoint cp_durable
 * is past its seal position).
 */
#ifndef QUIRE_STORAGE_BOOKIE_INT_H
#define QUIRE_STORAGE_BOOKIE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/exec.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/cache.h"
#include "storage/bookie/entry_log.h"
#include "storage/bookie/io_gate.h"
#include "storage/bookie/journal.h"
#include "storage/bookie/ledger_index.h"
#include "storage/bookie/spare.h"

#define BOOKIE_ENTRY_BYTES_MAX (32u << 20) /* larger adds get QE_TOO_LARGE */
_Static_assert(BOOKIE_ENTRY_BYTES_MAX <= ELOG_PAYLOAD_MAX,
               "a direct log's read-back takes every add");
#define BOOKIE_READS_PENDING_MAX 65536     /* reads in flight; beyond: QE_BUSY */
/* Reader threads: large records are read with O_DIRECT, one read per entry,
 * and the disk here takes 4 reads at once about 1.7x faster than 2 (catch-up
 * 620-664 MB/s against 424-493; 8 gave 660-776 MB/s but the live producer's
 * p99 rose to 10-12 ms from 7-7.5: docs/performance.md, session 18). */
#define BOOKIE_READER_THREADS 4
/* Large disk reads of a ledger's next entries asked for in one loop iteration
 * go to a reader together, at most this many and this many bytes (counted as
 * at submit), and are read with one read where their records follow one
 * another (entry_log_read_run, docs/bookie.md "Reads"). */
#define BOOKIE_READ_RUN_MAX 64
#define BOOKIE_READ_RUN_BYTES ELOG_RUN_BYTES_MAX
/* ... but not while the journal writes small groups (one in flight, or one
 * within the last 10 ms: io_gate_writes_recent): a read of 1 MiB ahead of a group's write delays
 * its acknowledgement more than one of a single entry. */
#define BOOKIE_READ_RUN_QUIET_US 10000
#define BOOKIE_GC_WAITERS_MAX 64
#define BOOKIE_RING_HEADROOM 1024 /* ring slots beyond pending_adds_max for fence/delete */
#define BOOKIE_CHECKPOINT_FILE "checkpoint"
/* When the last minor and major compactions ran (wall-clock ms), so that a
 * restart does not start the intervals again: text, "minor <ms>\nmajor <ms>\n",
 * replaced whole (rename) after each pass that compacts. */
#define BOOKIE_COMPACTION_TIMES_FILE "compaction-times"
/* 2: the journal may hold ADD_REF records; 3: its files are of format 3 */
#define BOOKIE_CHECKPOINT_VERSION_MAX 3

typedef struct gc_waiter {
    bookie_done_cb cb;
    void *arg;
} gc_waiter_t;

struct bookie {
    struct ev_loop *loop;
    bookie_config_t cfg;
    char *dir, *jdir, *ldir;
    qloop_mailbox_t *mb;
    qexec_t *readers;
    journal_t *journal;
    elog_direct_t direct; /* journal thread (once open) */
    spares_t *spares;     /* zeroed files for the journal and direct logs, or NULL */
    latq_t *lat_add, *lat_sync, *lat_direct; /* bookie_stats_t's latency views */
    latq_t *lat_queue, *lat_group, *lat_cb, *lat_roll, *lat_droll;
    io_gate_t gate;       /* large reads wait for the journal's writes (io_gate.h) */
    bool gate_ok;         /* gate initialised */

    pthread_mutex_t lock;
    ledger_table_t ledgers;
    log_table_t logs;

    /* ---- loop thread ---- */
    write_cache_t caches[2];
    write_cache_t *active, *frozen;
    read_cache_t rcache;
    journal_pos_t acked_pos; /* journal end after the last completed group */
    journal_pos_t cp_pos;    /* checkpoint of the last flush handed over */
    bool journal_dirty;      /* records other than CHECKPOINT since the last freeze */
    bool closing, flushing, opened;
    uint64_t freeze_us;       /* when the active cache was last frozen (flush pacing) */
    uint64_t test_flush_pace; /* bookie_test_flush_pace */
    int read_only;            /* 0, or the error that made the bookie refuse adds */
    /* A flush that failed for lack of room (flush_error_retryable): its error
     * while the frozen cache waits to be flushed again, plain adds refused;
     * the next attempt's time and the wait before the one after. */
    int flush_stalled;
    uint64_t flush_retry_at_us, flush_retry_wait_us;
    uint32_t flush_stall_attempts;
    /* disk usage (bookie.c "Disk usage"): the last check's fraction of the
     * fuller of the two directories' file systems, and whether adds are
     * refused for it (from the high mark until below the low one), and
     * whether it is at or above the warn mark */
    double disk_usage;
    bool disk_full;
    bool disk_almost_full;
    ev_timer disk_timer;
    uint64_t disk_bytes; /* bytes of adds acknowledged since the last check */
    uint64_t disk_checks;
    uint32_t adds_pending;
    uint64_t pending_bytes;
    /* adds waiting for write cache room, oldest first (bookie.c) */
    struct add_wait *wait_head, *wait_tail;
    uint32_t adds_waiting;
    uint32_t reads_pending;
    /* disk reads: bytes given to the readers and not yet delivered on the
     * loop, and the reads waiting for room, oldest first (bookie.c) */
    uint64_t read_bytes_inflight;
    struct read_job *read_wait_head, *read_wait_tail;
    /* disk reads asked for in this loop iteration, given to the readers by
     * read_prepare before the loop waits; asked for after it (another
     * prepare watcher's, until read_check reopens), they wait for the next
     * iteration, which read_idle makes one that does not block */
    struct read_job *read_form_head, *read_form_tail;
    bool read_form_closed;
    ev_prepare read_prepare;
    ev_check read_check;
    ev_idle read_idle;
    bool readers_stopping;
    ev_timer flush_timer, gc_timer;
    bool gc_running;
    int64_t gc_minor_ms, gc_major_ms; /* wall-clock ms of the last minor, major compaction */
    gc_waiter_t gc_cur[BOOKIE_GC_WAITERS_MAX], gc_next[BOOKIE_GC_WAITERS_MAX];
    uint32_t n_gc_cur, n_gc_next;
    uint64_t refusal_log_us; /* rate limit of refusal warnings */
    uint64_t refusals_suppressed;
    bookie_stats_t stats; /* loop-updated fields */

    /* ---- flush thread ---- */
    pthread_t flusher;
    bool flusher_started;
    pthread_mutex_t flock;
    pthread_cond_t fcond;
    write_cache_t *job_wc; /* flush request: the frozen cache and its checkpoint */
    journal_pos_t job_cp;
    uint64_t job_pace;       /* the flush's copies at most this many bytes a second (0: unpaced) */
    atomic_bool flush_hurry; /* the loop needs the flush done: pacing off (flush.c) */
    bool job_flush, job_gc, flusher_stopping;
    double job_gc_threshold; /* GC request: compact logs less live than this (0: none) */
    int64_t job_gc_minor_ms, job_gc_major_ms; /* ... and the compaction times to save */
    elog_writer_t writer;
    journal_pos_t cp_durable; /* the checkpoint file's position (GC unpins direct logs) */
    int meta_fd;
    uint64_t meta_size, meta_records;
    uint64_t direct_tail_recovered;      /* at open: bookie_recover_direct_tail's adds */
    bool meta_rewrite;                   /* tombstones collected: rewrite ledgers.meta */
    atomic_int flush_failed;             /* a flush's error that no later flush can mend */
    struct flush_resume *flush_resume;   /* a flush that failed for lack of room (flush.c) */
    int test_flush_step, test_flush_err; /* bookie_test_fail_flush_step (flock) */
    atomic_bool test_hold_reads;         /* bookie_test_hold_reads */
    atomic_int test_gc_reads_wait_ms;    /* bookie_test_gc_reads_wait (0: 10 s) */
    atomic_uint_fast64_t gc_passes, gc_logs_removed, gc_logs_compacted, gc_compacted_bytes;
};

/* flush.c */
/* A flush's copies are paced to this many times the rate its cache filled
 * at, at least FLUSH_PACE_MIN bytes a second (flush.c, "Pacing"). */
#define FLUSH_PACE_FACTOR 4u
#define FLUSH_PACE_MIN (64ull << 20)
/* A flush's steps (flush.c). */
enum flush_step {
    FLUSH_STEP_COPIES = 1, /* items placed, copies appended and synced */
    FLUSH_STEP_DIRECT_IDX, /* direct items' idx records appended and synced */
    FLUSH_STEP_APPLY,      /* the index updated */
    FLUSH_STEP_META,       /* ledgers.meta */
    FLUSH_STEP_CHECKPOINT, /* the checkpoint file */
};
/* Flushes wc. A failure for lack of room (flush_error_retryable) leaves the
 * files as the failed step found them; flush_run given the same wc again goes
 * on from that step. Any other failure is final (flush_failed). */
int flush_run(bookie_t *bk, const write_cache_t *wc, journal_pos_t cp, bool checkpoint,
              uint64_t pace_bytes_per_s);
/* ENOSPC or EDQUOT: the flush can run again once there is room. */
bool flush_error_retryable(int rc);
/* Forgets a failed flush's place (its cache is not flushed again). */
void flush_resume_drop(bookie_t *bk);
/* One GC pass: removes logs with nothing live, compacts those whose live bytes
 * are below threshold of their size (0: none). */
int gc_run(bookie_t *bk, double threshold);
/* The compaction times file: load (both now if absent or unreadable, none
 * later than now) and save (flush thread, after a pass that compacted). */
void gc_times_load(const char *ldir, int64_t now_ms, int64_t *minor_ms, int64_t *major_ms);
void gc_times_save(const char *ldir, int64_t minor_ms, int64_t major_ms);
int checkpoint_load(const char *ldir, journal_pos_t *out, uint32_t *version);
int meta_file_open(bookie_t *bk);
int flusher_start(bookie_t *bk);
/* Finishes the job in progress and any queued one, then joins. */
void flusher_stop(bookie_t *bk);
/* pace: bytes a second the flush's copies are paced to (0: unpaced; flush.c,
 * "Pacing"). */
void flusher_request_flush(bookie_t *bk, write_cache_t *wc, journal_pos_t cp, uint64_t pace);
void flusher_request_gc(bookie_t *bk, double threshold, int64_t minor_ms, int64_t major_ms);

/* bookie.c: completions posted by the flush thread, run on the loop. */
void bookie_flush_done(bookie_t *bk, int rc);
void bookie_gc_done(bookie_t *bk, int rc);

/* Fault injection for tests: the next journal group write, or the next entry
 * log sync, fails with err (e.g. -ENOSPC, -EIO). Loop thread. */
void bookie_test_fail_journal(bookie_t *bk, int err);
/* ... the journal's next file cannot be made (err: -ENOSPC, or another). */
void bookie_test_fail_journal_roll(bookie_t *bk, int err);
void bookie_test_fail_flush(bookie_t *bk, int err);
/* ... or the given step (enum flush_step) of the next flush fails with err:
 * FLUSH_STEP_DIRECT_IDX after the direct items' idx records are written,
 * FLUSH_STEP_META after ledgers.meta's records are written (or before its
 * rewrite), FLUSH_STEP_CHECKPOINT before the checkpoint file is written;
 * FLUSH_STEP_COPIES is bookie_test_fail_flush (after the copies are written,
 * before their sync). */
void bookie_test_fail_flush_step(bookie_t *bk, int step, int err);
/* ... the next count allocations ahead in direct logs fail with -ENOSPC. */
void bookie_test_fail_direct_alloc(bookie_t *bk, int count);
/* Applies a disk usage (0..1) as if the periodic check had measured it on
 * both directories (tests: a disk filling and freed without filling one). */
void bookie_test_disk_usage(bookie_t *bk, double usage);
/* Closes like a crash after the last acknowledgement: threads stopped and
 * memory freed, but no final flush or checkpoint (the journal must replay). */
void bookie_test_abandon(bookie_t *bk);
/* While held, reads given to the reader threads wait before touching their
 * log (each for at most 10 s): a read in flight across what a test does. */
void bookie_test_hold_reads(bookie_t *bk, bool hold);
/* Every flush from now on paced to bytes_per_s (0: as computed). Loop thread. */
void bookie_test_flush_pace(bookie_t *bk, uint64_t bytes_per_s);
/* How long GC waits for the reads holding a log it removes (ms; 0: the
 * default, 10 s) before it unlinks the file under them. */
void bookie_test_gc_reads_wait(bookie_t *bk, int ms);

#endif
