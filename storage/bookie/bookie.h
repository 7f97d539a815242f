/*
 * bookie.h — a BookKeeper-style storage node, in process.
 *
 * A bookie stores entries (ledgerId, entryId) -> bytes for many ledgers. Its
 * write path: an add goes into the write cache and the journal queue; the
 * journal thread writes a whole group of adds, fdatasyncs once, and only then
 * completes them (group commit). So an add is DURABLE when its callback reports
 * rc == 0, and not before. A background flush moves the write cache into entry
 * log files (entries of many ledgers appended together) and the persistent
 * index (ledgerId, entryId) -> (log, offset); after that checkpoint the journal
 * files it covers are trimmed. On open, the journal is replayed from the last
 * checkpoint: every add that was acknowledged before a crash is readable again;
 * a torn or corrupt tail is detected by checksum and truncated, never served.
 *
 * Per ledger the bookie keeps a fenced flag and the last-add-confirmed (LAC)
 * piggybacked on adds. Fencing is journaled before it is acknowledged; an add to
 * a fenced ledger fails with QE_FENCED.
 *
 * Threads: every call is made on the loop thread given to bookie_open(), and
 * every callback runs on that loop thread. Reads of entries still in memory
 * complete without touching disk (still through the callback, never inline);
 * older entries are read on a reader thread.
 *
 * Memory: the qbuf_t handed to bookie_add() is referenced (qbuf_ref) by the
 * bookie for as long as it needs it; the caller keeps its own reference. A
 * qbuf_t handed to a read callback is borrowed: qbuf_ref() it to keep it.
 */
#ifndef QUIRE_STORAGE_BOOKIE_H
#define QUIRE_STORAGE_BOOKIE_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/latq.h"

typedef struct bookie bookie_t;

#define BOOKIE_LARGE_ENTRY_BYTES_MAX (32u << 20) /* journal_large_entry_bytes at most */
#define BOOKIE_READ_YIELD_US_MAX 1000000u        /* read_yield_us at most */
#define BOOKIE_SPARE_ZERO_RATE_MB_MAX 65536u     /* spare_zero_rate_bytes at most, in MiB/s */
#define BOOKIE_JOURNAL_FORMAT_MIN 2u             /* journal_format_version: 2 .. */
#define BOOKIE_JOURNAL_FORMAT_MAX 3u             /* ... 3 (storage/bookie/journal.h) */
#define BOOKIE_CACHE_MB_MAX 65536u               /* the cache sizes' keys, in MB, at most */

typedef struct bookie_config {
    const char *data_dir;               /* journal/ and ledgers/ are created below */
    bool journal_sync;                  /* fdatasync before acknowledging (journalSyncData) */
    uint32_t journal_group_wait_us_max; /* longest an add waits for its group (1000) */
    uint32_t journal_group_bytes_max;   /* a group is written at this size (512 KiB) */
    uint32_t journal_group_entries_max; /* ... or this many adds (10000) */
    uint64_t journal_file_size_bytes;   /* preallocated size of a journal file (256 MiB) */
    uint64_t entry_log_size_bytes;      /* an entry log rolls over at this size (1 GiB) */
    /* The flush's copies in the current entry log stay in the page cache
     * this far behind its end once on the device; the rest, and a retired
     * log's all, are dropped (256 MiB; 0: nothing dropped; entry_log.c,
     * elog_cache_drop_behind). */
    uint64_t entry_log_cache_keep_bytes;
    /* Flush to entry logs when this full (16 MiB; dbStorage_writeCacheMaxSizeMb). Two
     * exist: one filling, one being flushed. Direct entries hold no payload here. */
    uint64_t write_cache_bytes;
    uint64_t read_cache_bytes;        /* recently read entries kept (16 MiB;
                                         dbStorage_readAheadCacheMaxSizeMb; 0: none) */
    uint64_t read_bytes_inflight_max; /* disk reads given to the readers and not yet
                                         delivered (64 MiB); more wait their turn */
    uint32_t flush_interval_ms;       /* checkpoint at least this often (1000) */
    uint32_t pending_adds_max;        /* adds queued beyond this get QE_BUSY (100000) */
    uint32_t gc_interval_ms;          /* garbage collection period (60000) */
    /* Compaction, scheduled as BookKeeper's: a GC pass compacts the logs whose
     * live bytes are below a threshold of their size; the major threshold once
     * every major interval, else the minor threshold once every minor
     * interval (counted from the times kept in the ledgers directory, so a
     * restart does not start them again); other passes only remove logs with
     * nothing live. A threshold or an interval of 0 turns its kind off.
     * bookie_gc_now() passes compact at once, at the major threshold (the
     * minor one if major is off). Compacting a log a fifth live copies a
     * fifth of it to free the rest, one half live copies as much as it frees,
     * and a log whose ledgers are consumed and about to be trimmed is better
     * left for the pass that removes it. */
    double minor_compaction_threshold;     /* minorCompactionThreshold (0.2) */
    uint64_t minor_compaction_interval_ms; /* minorCompactionInterval (3600 s) */
    double major_compaction_threshold;     /* majorCompactionThreshold (0.5) */
    uint64_t major_compaction_interval_ms; /* majorCompactionInterval (86400 s) */
    /* Compaction copies at most this many bytes a second, synced a step of
     * GC_COMPACT_STEP_BYTES at a time (compactionRateByBytes; 32 MiB/s; 0:
     * unpaced): unpaced, a compaction wrote hundreds of MB and synced them at
     * once, and every add's fdatasync queued behind that write-out. */
    uint64_t gc_compact_bytes_per_s;
    /* Adds of at least this many bytes are written once: to a "direct" entry
     * log by the journal thread (fdatasynced before the acknowledgement, like
     * the journal), with only a reference in the journal, and are never copied
     * again by the flush (journalLargeEntryThreshold; 16 KiB; 0: every entry
     * is journaled whole and copied to an entry log later). */
    uint32_t journal_large_entry_bytes;
    /* Direct logs are written with O_DIRECT from an aligned stage, and
     * records of ELOG_DIO_READ_MIN bytes or more read with O_DIRECT, where the
     * file system allows it (journalLargeEntryDirectIo; true): no copy into
     * the page cache either way (entry_log.h). */
    bool journal_large_entry_odirect;
    /* A journal group of large adds only (none the first of its ledger here,
     * none opening a direct log) syncs its direct log and not the journal, whose
     * references it writes all the same: one device flush per group instead of
     * two (journalLargeEntryOneSync; true). Their direct log's records are the
     * durable copy: at open the newest direct log's records after the last one
     * the journal or the indexes know are read back (journal.h). */
    bool journal_large_entry_one_sync;
    /* The journal written with O_DIRECT from an aligned buffer, where the file
     * system allows it (journalDirectIo; true): none of it in the page cache
     * (journal.c). */
    bool journal_odirect;
    /* The journal format written (journalFormatVersionToWrite; 3): 3 puts
     * each file's seq under its records' checksums, so a trimmed journal file
     * can be written over as the next one (reused: no blocks to free, an
     * fdatasync without metadata writes; with spare files on); 2 is what
     * Quire wrote before session 32 and still reads, for going back to it
     * (journal.h). */
    uint32_t journal_format_version;
    /* Spare journal files and direct entry logs are zeroed ahead of their use
     * at up to this many bytes a second, while the bookie is idle
     * (spareFileZeroRateMB; 128 MiB; 0: never): a group's fdatasync over
     * zeros written before is one cache flush, without a metadata write
     * (spare.h). */
    uint64_t spare_zero_rate_bytes;
    /* ... only after the bookie wrote nothing for this long (1 s; tests less). */
    uint32_t spare_idle_ms;
    /* While the journal writes and syncs a group of up to
     * IO_GATE_GROUP_BYTES_MAX, an O_DIRECT read of a large record starts only
     * if fewer than IO_GATE_READS_DURING_WRITE (1) are in flight, else waits for
     * the group (or for one of them) at most this long (readYieldToJournalUs;
     * 1000; 0: reads never wait): catch-up reads queued on the disk ahead of
     * the journal's fdatasync delay every acknowledgement (io_gate.h). */
    uint32_t read_yield_us;
    /* The window of the latency summaries (bookie_stats_t's latq views:
     * quantiles over the last window; 60 s, statsUpdateFrequencyInSecs in
     * standalone; 0: 60 s). */
    uint32_t stats_window_s;
    /* Disk usage (1 - available / total blocks of the file system, as
     * BookKeeper's LedgerDirsMonitor counts it), checked at open, every
     * disk_check_interval_ms (diskCheckInterval; 10000; 0: never, none of
     * these checks) and after every disk_check_bytes of adds (256 MiB; 0: not
     * by bytes; at 1 GB/s ten
     * seconds are 10 GB, more than the last 5 % of a small disk) on the
     * journal's and the ledgers' directories: at disk_usage_threshold or
     * above (diskUsageThreshold; 0.95) the bookie refuses adds (QE_READ_ONLY)
     * and starts a GC pass; below disk_usage_lwm_threshold
     * (diskUsageLwmThreshold; 0.90; at most the threshold) it takes them
     * again. Meanwhile recovery adds, fences, deletes and reads are served,
     * as by a read-only BookKeeper bookie (docs/bookie.md "Disk full"). At
     * disk_usage_warn_threshold or above (diskUsageWarnThreshold; 0.90) the
     * disk is almost full, as BookKeeper's diskAlmostFull: a warning is
     * logged, every check starts a GC pass (when none runs) that compacts as
     * a minor one does, and major compaction waits until usage is below the
     * mark again; adds are still taken. */
    double disk_usage_threshold;
    double disk_usage_lwm_threshold;
    double disk_usage_warn_threshold;
    uint32_t disk_check_interval_ms;
    uint64_t disk_check_bytes;
} bookie_config_t;

void bookie_config_defaults(bookie_config_t *cfg);
/* Sets the compaction schedule from BookKeeper's four keys (thresholds as
 * fractions of a log, intervals in seconds); as in BookKeeper, a threshold or
 * interval <= 0 turns its kind off. QE_INVALID with the reason in err for a
 * threshold above 1, an interval above ten years, or a minor threshold above
 * the major one while both are on. */
int bookie_config_compaction(bookie_config_t *cfg, double minor_threshold, int64_t minor_interval_s,
                             double major_threshold, int64_t major_interval_s, char *err,
                             size_t err_len);
/* Sets the disk-usage marks (fractions of the file system) and the check
 * interval in ms (0: never). QE_INVALID with the reason in err unless
 * 0 < lwm <= threshold <= 1, 0 < warn <= 1 and the interval is at most a day
 * (a warn mark at or above the threshold: the disk goes from below it
 * straight to full). */
int bookie_config_disk(bookie_config_t *cfg, double threshold, double lwm, double warn,
                       int64_t interval_ms, char *err, size_t err_len);

/* Opens (creating if needed) the bookie under cfg->data_dir and replays its
 * journal. Synchronous; logs and returns a negative code for a corrupt or
 * unreadable store (never serves data it cannot verify). */
int bookie_open(struct ev_loop *loop, const bookie_config_t *cfg, bookie_t **out);
/* Completes or fails (QE_SHUTDOWN) every pending call, checkpoints, frees. */
void bookie_close(bookie_t *bk);

typedef void (*bookie_add_cb)(int rc, int64_t ledger_id, int64_t entry_id, void *arg);
/* Adds an entry; lac is the writer's last-add-confirmed for the ledger (-1 if
 * none). Adding an (ledger, entry) that exists replaces it only before the
 * ledger is fenced. Returns 0 if queued, QE_FENCED, QE_BUSY or another
 * negative code (then cb is never called). */
int bookie_add(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, qbuf_t *data,
               bookie_add_cb cb, void *arg);
/* The same add with BookKeeper's RECOVERY_ADD flag: accepted even when the
 * ledger is fenced (never when it is deleted). Only ledger recovery calls it,
 * to bring an entry it found on some bookies of the write set to the others
 * after fencing them; the entry then replaces a stored one of the same id
 * (the bytes are the same: a ledger has one writer). Durable, like any add,
 * when cb reports rc == 0; on replay it is an ordinary ADD record. */
int bookie_add_recovery(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac,
                        qbuf_t *data, bookie_add_cb cb, void *arg);

/* entry: borrowed; lac: the bookie's LAC for the ledger (-1 if none). */
typedef void (*bookie_read_cb)(int rc, int64_t ledger_id, int64_t entry_id, qbuf_t *entry,
                               int64_t lac, void *arg);
/* QE_NO_ENTRY / QE_NO_LEDGER through the callback when absent. */
int bookie_read(bookie_t *bk, int64_t ledger_id, int64_t entry_id, bookie_read_cb cb, void *arg);

typedef void (*bookie_lac_cb)(int rc, int64_t ledger_id, int64_t lac, void *arg);
int bookie_read_lac(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg);
/* Sets the fenced flag durably, then reports the LAC. Fencing an unknown
 * ledger records it as fenced (a late add for it is refused). */
int bookie_fence(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg);
/* Highest entry id stored for the ledger (-1 if none) via lac argument of cb. */
int bookie_last_entry(bookie_t *bk, int64_t ledger_id, bookie_lac_cb cb, void *arg);

typedef void (*bookie_done_cb)(int rc, void *arg);
/* Forgets the ledger durably; its space is reclaimed by garbage collection. */
int bookie_delete_ledger(bookie_t *bk, int64_t ledger_id, bookie_done_cb cb, void *arg);

typedef struct bookie_stats {
    uint64_t adds; /* adds acknowledged */
    uint64_t add_bytes;
    uint64_t reads;
    uint64_t read_cache_hits;       /* served from write or read cache */
    uint64_t journal_syncs;         /* fdatasync calls on the journal */
    uint64_t journal_sync_us_total; /* time spent in them */
    uint64_t journal_dio_groups;    /* journal groups written with O_DIRECT */
    uint64_t journal_one_sync_groups; /* groups whose direct log alone was synced */
    uint64_t direct_tail_recovered;   /* at open: entries read back from a direct log's tail */
    uint64_t ledgers;               /* ledgers known and not deleted */
    uint64_t entry_logs;            /* entry log files on disk */
    uint64_t entry_log_bytes;
    uint64_t gc_passes; /* GC passes done (timer and bookie_gc_now) */
    uint64_t gc_logs_removed;
    uint64_t gc_logs_compacted;
    uint64_t gc_compacted_bytes;   /* entry bytes compaction copied (counted as it goes) */
    uint64_t gc_logs_freeing;      /* removed logs, journal files: blocks being freed */
    uint64_t direct_syncs;         /* fdatasync calls on direct entry logs */
    uint64_t direct_sync_us_total; /* time in direct log writes + fdatasyncs */
    uint64_t direct_bytes;         /* bytes written to direct entry logs */
    uint64_t adds_waited;          /* adds that waited for write cache room */
    uint64_t adds_waiting;         /* adds waiting now */
    uint64_t reads_waited;         /* disk reads that waited for read_bytes_inflight_max */
    uint64_t reads_yielded;        /* large reads that waited for journal writes (io_gate.h) */
    uint64_t reads_yielded_us;     /* their time waiting */
    uint64_t write_cache_bytes;    /* both write caches, as counted against their bound */
    bool flushing;                 /* a frozen cache is being flushed now */
    uint64_t read_cache_bytes;     /* the read cache, as counted against its bound */
    uint64_t reads_inflight_bytes; /* disk reads given to the reader threads */
    uint64_t disk_read_entries;    /* entries the reader threads read from disk */
    uint64_t disk_read_ops;        /* reads they issued for them (a run of large
                                    * records that follow one another: one) */
    uint64_t disk_idx_read_ops;    /* reads of idx records they issued (a run of
                                    * records that follow one another: one) */
    double disk_usage;             /* the fuller directory's at the last check (0..1) */
    bool disk_full;                /* adds refused until usage is below the low mark */
    bool disk_almost_full;         /* usage at or above diskUsageWarnThreshold */
    bool read_only;                /* adds refused after an I/O error (until a restart) */
    bool flush_stalled;            /* adds refused: a flush failed for lack of room and
                                    * waits to run again */
    uint64_t flush_stalls;         /* flushes that failed for lack of room */
    uint64_t disk_checks;          /* disk usage checks done (open, timer, bytes) */
    uint64_t spare_zeroed_bytes;   /* zeros written into spare files (spare.h) */
    uint64_t spares_taken_journal; /* journal files that were spares */
    uint64_t spares_taken_direct;  /* direct entry logs that were spares */
    uint64_t spare_logs_reused;    /* logs GC removed, kept as the direct spare */
    uint64_t spare_jnl_reused;     /* journal files trimmed, kept as the journal's spare */
    /* Latencies, quantiles over the last stats_window_s (latq.h): an add from
     * its submission to the journal until its group is durable (BookKeeper's
     * JOURNAL_ADD_ENTRY), the journal's fdatasync (JOURNAL_SYNC), and a
     * group's large entries' write and fdatasync in their direct log. */
    latq_view_t journal_add_latency, journal_sync_latency, direct_latency;
    /* An add's time in three parts that sum to journal_add_latency's: queued
     * until the journal thread takes it into a group (BookKeeper's
     * JOURNAL_QUEUE_LATENCY), from there until its group is written and
     * synced (the group's forming, writes and syncs), and from there until
     * the loop thread completes it. And each roll to a new journal file
     * (JOURNAL_CREATION_LATENCY). */
    latq_view_t journal_queue_latency, journal_group_latency, add_callback_latency;
    latq_view_t journal_creation_latency;
    /* Each roll to a new direct entry log on the journal thread: the log's
     * creation (or a spare's taking), its directory's fsync, the old log's
     * padding cut; the group it opens waits for it. */
    latq_view_t direct_roll_latency;
} bookie_stats_t;
/* Loop thread (the caches' sizes are the loop's). */
void bookie_get_stats(bookie_t *bk, bookie_stats_t *out);

/* Whether the bookie takes new (non-recovery) adds now: not read-only after
 * an I/O error, not above its disk-usage mark, not closing. */
bool bookie_writable(const bookie_t *bk);

/* Runs one garbage-collection pass now (tests, admin), compacting at the major
 * threshold whatever the schedule; cb when done. */
int bookie_gc_now(bookie_t *bk, bookie_done_cb cb, void *arg);

#endif
