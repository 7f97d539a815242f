/*
 * entry_log.h — entry log files and their index files (private to
 * storage/bookie/).
 *
 * <data_dir>/ledgers/<id as 8 hex digits>.log holds entries of many ledgers
 * appended by the flush thread (sorted by ledger then entry within one flush),
 * each record verifiable on its own:
 *
 *   offset size meaning
 *   0      4    magic 0x314c4551 ("QEL1")
 *   4      4    payload length in bytes
 *   8      4    crc32c of the 32 header bytes (this field as 0) then the payload
 *   12     4    stamp: the log's id in records of the direct writer (since
 *               session 45), else zero (elog_direct_stamped)
 *   16     8    ledger id
 *   24     8    entry id
 *   32     len  payload (the entry bytes)
 *
 * <id>.idx lists the records of <id>.log, 32 bytes each, in the order they
 * were appended; the in-memory index (ledger_index.h) is rebuilt from all of
 * them at open (logs in id order, records in file order: a later location of
 * the same (ledger, entry) replaces an earlier one, which is how re-adds and
 * compaction copies win), or from <id>.sum, the runs a clean close saw in
 * that .idx, and the records after what it covers (idx_summary.h). That index holds where each
 * entry's idx record is, and a read looks the record up (entry_log_locate) to find the entry. A
 * flush appends each ledger's records together, in entry order, so that one
 * index run covers them:
 *
 *   offset size meaning
 *   0      8    ledger id
 *   8      8    entry id
 *   16     8    offset of the record in <id>.log
 *   24     4    payload length
 *   28     4    crc32c of bytes 0..27
 *
 * Durability order (elog_sync): log data, fdatasync(log), idx records,
 * fdatasync(idx). A log is only ever written by one writer and only at its
 * end. Two writers exist, each with its own current log:
 *   - the flush thread's elog_writer_t: copies of the write cache and
 *     compaction copies;
 *   - the journal thread's elog_direct_t: "direct" logs holding large entries
 *     written once (journal.h): the record is written and fdatasynced by the
 *     journal thread before the add is acknowledged, while the journal only
 *     holds a reference record to it. Their idx records are appended later by
 *     the flush thread (elog_idx_append), before the checkpoint passes the
 *     reference, so that at open the index is rebuilt from .idx files alone.
 * Log ids come from one counter (log_table_t.next_id, bookie lock) and the
 * table stays sorted by id, so a log created later always has a higher id.
 * Rebuild order relies on this rule, kept by the flush thread: a new location
 * of an entry is always after its previous one (higher log id, or later in
 * the same log) - see flush.c.
 *
 * Direct logs are pinned: while the journal may still be replayed over a
 * reference into one, GC must not remove or compact it. A pinned log is
 * unpinned by GC once it is sealed (the journal thread moved to a newer log,
 * all references being before the journal position seal_seq:seal_off) and the
 * durable checkpoint is at or after that position.
 *
 * Threads: log_table_t (which logs exist, their fds, sizes, reader refs, pins)
 * is guarded by the bookie lock. A log removed by GC while a read is in flight
 * keeps its fd until the last reader drops its reference. The per-log ledger
 * map (bytes per ledger, for GC) and idx_size belong to the flush thread.
 */
#ifndef QUIRE_STORAGE_BOOKIE_ENTRY_LOG_H
#define QUIRE_STORAGE_BOOKIE_ENTRY_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/buf.h"

#define ELOG_MAGIC 0x314c4551u
#define ELOG_HEADER_BYTES 32u
#define ELOG_IDX_RECORD_BYTES 32u
/* No record's payload is larger: the bookie refuses larger adds (BOOKIE_ENTRY_BYTES_MAX). */
#define ELOG_PAYLOAD_MAX (32u << 20)

/* ledger id -> bytes of its records in one log (open addressing). */
typedef struct lb_map {
    uint64_t *keys; /* ledger id + 1; 0 = empty */
    uint64_t *vals;
    uint32_t cap, count;
} lb_map_t;

typedef struct entry_log {
    uint32_t id;
    int fd;                /* read and (for the current log) written */
    int dio_fd;            /* read with O_DIRECT (large records), or -1: elog_read_* */
    uint32_t dio_align;    /* dio_fd's alignment of offsets, lengths and memory */
    struct io_gate *gate;  /* dio_fd's reads wait for journal writes here, or NULL */
    int idx_fd;            /* <id>.idx: read by entry_log_locate, appended by the writers */
    uint64_t size;         /* bytes of records known durable */
    uint32_t refs;         /* reads in flight (bookie lock) */
    bool removed;          /* unlinked by GC; freed at refs == 0 */
    lb_map_t ledgers;      /* flush thread */
    uint64_t idx_size;     /* valid bytes of <id>.idx (flush thread) */
    uint64_t sum_idx_size; /* bytes of <id>.idx its <id>.sum covers, 0: none (idx_summary.h) */
    bool pinned;           /* direct log the journal may still reference (bookie lock) */
    bool sealed;           /* pinned log no longer appended; references end at seal pos */
    uint64_t seal_seq, seal_off;
    /* at open: the end of the last record indexed or referenced by the
     * journal, when every record's end was seen (no summary) */
    uint64_t rec_end;
    bool rec_end_known;
} entry_log_t;

typedef struct log_table {
    entry_log_t **logs; /* sorted by id */
    uint32_t count, cap;
    uint64_t bytes;       /* sum of sizes */
    uint32_t next_id;     /* the next log created gets this id (above every log) */
    bool dio_reads;       /* logs opened from here on read large records with O_DIRECT */
    struct io_gate *gate; /* ... after the journal's writes in flight (io_gate.h), or NULL */
} log_table_t;

/* ------------------------------------------------------------ log table -- */

entry_log_t *log_table_find(const log_table_t *t, uint32_t id);
/* Removes log from the table (GC) and frees it unless reads hold it; the
 * caller unlinks the files. Bookie lock held. */
void log_table_remove(log_table_t *t, entry_log_t *log);
/* Drops a reader reference (bookie lock held); frees a removed log at 0. */
void entry_log_unref(entry_log_t *log);
void log_table_free(log_table_t *t);
/* At open, once the journal is replayed: cuts every log loaded without a
 * summary after its rec_end (bytes no index record and no journal reference
 * points at: what a crash left after the last acknowledged record, a spare's
 * zeros or an O_DIRECT write's padding) and forgets rec_end. */
void log_table_cut_tails(log_table_t *t);

int lb_map_add(lb_map_t *m, int64_t ledger_id, uint64_t bytes);
/* Takes bytes off ledger_id's count (a record appended, then abandoned). */
void lb_map_sub(lb_map_t *m, int64_t ledger_id, uint64_t bytes);
bool lb_map_has(const lb_map_t *m, int64_t ledger_id);

/* Opens every <id>.log under dir (removing .idx and .sum files without a
 * log) and indexes it, logs in id order. From its summary first, when <id>.sum
 * is there and valid (idx_summary.h): summary_run per run of it. Then the idx
 * records after what the summary covered (all of them without one), each
 * checked (its checksum; its entry within the log), in runs: scanned_run per
 * stretch of consecutive records of one ledger with consecutive entry ids, in
 * record order. In both, pos is the byte offset of the run's first record in
 * <log_id>.idx and max_length the largest entry of the run. A torn idx tail
 * is truncated; a record pointing past the end of its log is skipped with a
 * warning. *next_id (and t->next_id) receives an id above every log. */
typedef int (*elog_run_fn)(void *ctx, int64_t ledger_id, int64_t first, uint32_t count,
                           uint32_t log_id, uint64_t pos, uint32_t max_length);
typedef struct elog_load_fns {
    elog_run_fn summary_run;
    elog_run_fn scanned_run;
    void *ctx;
} elog_load_fns_t;
int log_table_load(log_table_t *t, const char *dir, const elog_load_fns_t *fns, uint32_t *next_id);

/* Writes <log id>.sum under dir (idx_summary.h): runs, with log's bytes per
 * ledger, covering its whole .idx (synced); log->sum_idx_size follows. 0 or
 * -errno. Flush thread, or at close. */
struct idx_sum_run;
int elog_write_summary(const char *dir, entry_log_t *log, const struct idx_sum_run *runs,
                       uint32_t nruns);

/* Reads the idx record at byte pos of log's .idx (any thread): *offset and
 * *length receive the location of the entry's record in the log. QE_CORRUPT
 * (logged) when the idx record's checksum or ids do not match; -errno on I/O
 * error. */
int entry_log_locate(const entry_log_t *log, uint64_t pos, int64_t ledger_id, int64_t entry_id,
                     uint64_t *offset, uint32_t *length);
/* One idx record for entry_log_locate_run: whose entry it should describe
 * (in); rc, offset and length (out), as entry_log_locate's. */
typedef struct elog_locate {
    int64_t ledger_id, entry_id;
    uint64_t offset;
    uint32_t length;
    int rc;
} elog_locate_t;
/* Looks up the n idx records that follow one another in log's .idx from byte
 * pos (the entries of one index run) with one pread for up to 64 of them
 * instead of one each; each record is checked alone, as entry_log_locate
 * does, and when a shared read fails each of its records is read again alone
 * (its own error). Returns the number of reads issued. */
size_t entry_log_locate_run(const entry_log_t *log, uint64_t pos, elog_locate_t *l, size_t n);
/* Records of at least ELOG_DIO_READ_MIN bytes are read with O_DIRECT where
 * the file system allows it: one aligned read into the reader thread's own
 * bounce buffer, then the payload copied out. Large records are the direct
 * logs' (written with O_DIRECT, so not in the page cache) and compaction's
 * copies of them; reading them buffered filled the page cache at about 2 ms
 * of CPU per MB on this kind of machine, and the disk takes several reads at
 * once faster than the kernel's read-ahead of one (docs/performance.md,
 * session 18). Smaller records are read buffered (the page cache helps). */
#define ELOG_DIO_READ_MIN (16u << 10)

/* Reads and verifies the record at offset of log (any thread): *out gets a new
 * qbuf (caller owns) with the payload. QE_CORRUPT (logged) when the record's
 * magic, ids, length or checksum do not match; -errno on I/O error. */
int entry_log_read(const entry_log_t *log, uint64_t offset, uint32_t length, int64_t ledger_id,
                   int64_t entry_id, qbuf_t **out);
/* One record to read with entry_log_read_run: where it is and whose it is;
 * rc and out (NULL on failure) are the results, as entry_log_read's. */
typedef struct elog_read {
    uint64_t offset;
    uint32_t length;
    int64_t ledger_id, entry_id;
    int rc;
    qbuf_t *out;
} elog_read_t;
/* Large records that follow one another in a log (each at least
 * ELOG_DIO_READ_MIN bytes, at most ELOG_RUN_GAP_MAX bytes after the one
 * before, ELOG_RUN_BYTES_MAX of blocks in all) are read with one O_DIRECT
 * read instead of one each: under a full write load the disk here shares
 * itself between requests, not bytes, so a catch-up read of 1 MiB gets about
 * twice what one of 128 KiB gets (docs/bookie.md, "Reads"). */
#define ELOG_RUN_BYTES_MAX (1u << 20)
#define ELOG_RUN_GAP_MAX (64u << 10)
/* Small records (below ELOG_DIO_READ_MIN) that follow one another in a log
 * (at most ELOG_RUN_SMALL_GAP_MAX bytes apart, ELOG_RUN_SMALL_BYTES_MAX in all:
 * a flush writes each ledger's entries back to back) are read with one
 * buffered pread instead of two each: a catch-up of small entries is mostly
 * the page cache's, and the per-entry reads were its cost. */
#define ELOG_RUN_SMALL_BYTES_MAX (128u << 10)
#define ELOG_RUN_SMALL_GAP_MAX (4u << 10)
/* Reads and verifies recs[0..n) of log (any thread), in the order given,
 * runs of them (of large records or of small ones) with one read each
 * (above); every record is checked alone, and when a shared read fails each
 * of its records is read again alone (its own error). Returns the number of
 * reads issued. */
size_t entry_log_read_run(const entry_log_t *log, elog_read_t *recs, size_t n);
/* The same, also requiring the record's crc (header with crc 0, then payload)
 * to be crc: how journal replay checks the target of a reference record. */
int entry_log_read_expect(const entry_log_t *log, uint64_t offset, uint32_t length,
                          int64_t ledger_id, int64_t entry_id, uint32_t crc, qbuf_t **out);
/* Encodes a record header (magic, length, ids) with its crc over the header
 * (crc field 0) then data into h[ELOG_HEADER_BYTES]; returns that crc. */
uint32_t elog_header_make(uint8_t *h, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                          uint32_t len);
/* Encodes one idx record into r[ELOG_IDX_RECORD_BYTES]. */
void elog_idx_encode(uint8_t *r, int64_t ledger_id, int64_t entry_id, uint64_t offset,
                     uint32_t len);
/* Flush thread: appends n idx records (bytes) to <log>.idx at log->idx_size
 * and fdatasyncs it; the records' data must already be durable in the log.
 * Used for direct logs, whose data the journal thread wrote. 0 or -errno. */
int elog_idx_append(const char *dir, entry_log_t *log, const uint8_t *recs, size_t bytes);
/* Cuts log's .idx back to size bytes (records appended and then undone:
 * flush.c) and sets idx_size. A failed append cuts back what it wrote itself
 * (and fails with -EIO if it cannot). 0 or -errno. */
int elog_idx_cut(const char *dir, entry_log_t *log, uint64_t size);

/* ------------------------------------------------------------- writer -- */

typedef struct elog_writer {
    char *dir;
    uint64_t max_size;
    pthread_mutex_t *lock; /* the bookie lock, for table changes */
    log_table_t *table;
    entry_log_t *cur; /* NULL until the first append after open */
    uint64_t wr_off;  /* end of the records appended to cur */
    uint8_t *buf;     /* staged record bytes, at file offset buf_off */
    size_t buf_len, buf_cap;
    uint64_t buf_off;
    uint64_t wb_started, wb_done; /* elog_writeback: device writes started, waited for */
    uint64_t cache_keep;          /* cur's bytes kept in the page cache behind its end; 0: all */
    uint64_t wb_dropped;          /* cur's pages dropped from the page cache below here */
    uint8_t *ibuf;                /* idx records not yet written */
    size_t ibuf_len, ibuf_cap;
    /* The runs appended to cur, in append order: its index summary, written
     * when cur is retired (idx_summary.h), so that a start after a crash
     * reads runs for every log retired before it. */
    struct idx_sum_run *runs;
    uint32_t nruns, runs_cap;
    int runs_off; /* != 0: no summary for cur (too many runs to be worth it, no memory) */
    int inject;   /* test fault injection: next sync fails with this */
} elog_writer_t;

/* New logs take their ids from table->next_id. The pages of the current log
 * written to the device are dropped from the page cache but its last
 * cache_keep bytes (0: none dropped), a retired log's all. */
int elog_writer_init(elog_writer_t *w, const char *dir, uint64_t max_size, uint64_t cache_keep,
                     pthread_mutex_t *lock, log_table_t *table);
void elog_writer_free(elog_writer_t *w);
/* Appends one record (rolling to a new log first when the current one is
 * full). Not durable until elog_sync. *log_id and *offset receive its
 * location, *idx_pos where its idx record will be in <log_id>.idx. */
int elog_append(elog_writer_t *w, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                uint32_t len, uint32_t *log_id, uint64_t *offset, uint64_t *idx_pos);
/* Makes every appended record and its idx record durable. 0 or -errno. */
int elog_sync(elog_writer_t *w);
/* After a failed append or sync: forgets what was appended to the current
 * log since its last sync (its bytes off the log's ledger map, its runs off
 * the summary's) and cuts the log and its .idx back to their durable sizes,
 * so the writer goes on from there as if none of it had been appended (a
 * flush that failed for lack of room runs again later: flush.c). Logs retired
 * during the failed appends keep what was synced into them before the roll:
 * records no index points at. 0, or -errno when a cut fails (the writer must
 * not be used again). */
int elog_writer_abandon(elog_writer_t *w);
/* Makes sure the next append lands in a log with an id above id: when the
 * current log's id is below, syncs it and retires it (the next append starts
 * a new log). Keeps "a new location is after the previous one". 0 or -errno. */
int elog_ensure_after(elog_writer_t *w, uint32_t id);

/* --------------------------------------------------- direct log writer -- */

/* The journal thread's writer of direct logs. It reserves a place for each
 * large record in a group (elog_direct_reserve), has the group's records
 * written and fdatasynced (elog_direct_write, on the bk-dsync thread while
 * the journal thread writes and syncs the journal), then publishes the new
 * size (elog_direct_publish) once the group is durable.
 *
 * With odirect (the default) a direct log is written through a second
 * descriptor opened with O_DIRECT: elog_direct_reserve copies each record
 * into an aligned staging buffer (checksumming the payload in the same
 * pass), after the log's last partial block (kept from the previous write),
 * and elog_direct_write writes the stage from that block's start, padded
 * with zeros to a whole block. The file's bytes are those of a buffered
 * append (records back to back; the zeros of the padding lie past the last
 * record, and the next write starts over them), so the format does not
 * change. Rewriting the last partial block writes the same bytes over its
 * records already acknowledged: a torn write leaves each sector old or new,
 * and both hold them. Why: on this kind of machine the kernel's copy into
 * the page cache cost about 2 ms of CPU per MB (docs/performance.md, session
 * 18), the copy into the stage 0.1-0.2 ms. Where the file system refuses
 * O_DIRECT (at open, or EINVAL at the first write) the writer goes on with
 * buffered writes (logged). Readers read large records through their own
 * O_DIRECT descriptor (entry_log.dio_fd, ELOG_DIO_READ_MIN), others through
 * entry_log.fd; the kernel keeps both coherent with the writes. */
typedef struct elog_direct {
    char *dir;
    uint64_t max_size;
    pthread_mutex_t *lock; /* the bookie lock, for table changes */
    log_table_t *table;
    entry_log_t *cur; /* NULL until the first large entry after open */
    uint64_t wr_off;  /* end of the records reserved in cur */
    bool odirect;     /* write with O_DIRECT where the file system allows it */
    int dio_fd;       /* cur opened with O_DIRECT, or -1 (buffered writes) */
    uint32_t align;   /* dio_fd's alignment of offsets, lengths and memory */
    uint8_t *stage;   /* align-aligned: cur's last partial block written, then records */
    size_t stage_cap;
    size_t stage_len;        /* bytes in stage */
    uint64_t stage_off;      /* cur's offset of stage[0], a multiple of align */
    struct spares *spares;   /* zeroed files to roll to (spare.h), or NULL */
    uint64_t zeroed_end;     /* cur's bytes from a spare's zeros */
    uint64_t alloc_end;      /* cur's blocks allocated ahead up to here (elog_direct_reserve) */
    bool alloc_off;          /* the file system does not allocate ahead: appends only */
    atomic_int inject_alloc; /* tests: allocations ahead that fail with -ENOSPC */
} elog_direct_t;

int elog_direct_init(elog_direct_t *d, const char *dir, uint64_t max_size, bool odirect,
                     pthread_mutex_t *lock, log_table_t *table);
void elog_direct_free(elog_direct_t *d);
/* True when a record of len bytes needs a new log (cur absent or full). */
bool elog_direct_needs_roll(const elog_direct_t *d, uint32_t len);
/* Reserves the place of one record of len bytes at the end of cur, rolling
 * to a new pinned log first when needed (the old one is sealed at
 * seal_seq:seal_off, a journal position after every reference to it). Fills
 * h[ELOG_HEADER_BYTES]; *log_id, *offset and *crc receive the location and
 * the record's crc. Nothing is written. 0 or -errno (nothing reserved).
 *
 * The blocks a record will be written to are allocated first
 * (fallocate, FALLOC_FL_KEEP_SIZE, ELOG_DIRECT_ALLOC_BYTES at a time, past a
 * spare's zeros), so that a full disk shows here, as -ENOSPC or -EDQUOT
 * before anything of the group is encoded (the journal then takes the entry
 * whole), and not as a failed write after the group's journal records are
 * out (a write error ends the journal: read-only until a restart). The
 * blocks allocated past the last record are freed when the log is trimmed. */
int elog_direct_reserve(elog_direct_t *d, int64_t ledger_id, int64_t entry_id, const uint8_t *data,
                        uint32_t len, uint64_t seal_seq, uint64_t seal_off, uint8_t *h,
                        uint32_t *log_id, uint64_t *offset, uint32_t *crc);
/* Writes the records reserved from offset off on (off is where the previous
 * write ended; iov holds them, header and payload each: with O_DIRECT they
 * are written from the stage, iov only when the file system refuses it) to
 * cur; fdatasync when sync. iov is modified. 0 or -errno. */
int elog_direct_write(elog_direct_t *d, struct iovec *iov, int cnt, uint64_t off, bool sync);
/* Cuts cur's padding after its last record (O_DIRECT writes whole blocks):
 * done when cur is sealed, and by a clean close. After a crash a direct log
 * may end in less than a block of zeros, which nothing reads. */
void elog_direct_trim(elog_direct_t *d);
/* Records written by the direct writer carry their log's id in the header's
 * reserved field (the "stamp", under the record's crc; 0 in every other
 * record, and in direct logs written before session 45). So a record left in
 * a reused file by its previous life, whose stamp is another log's id, never
 * reads as one of this log's.
 *
 * True when log's first record is a stamped direct record: one of the direct
 * logs written since (the newest such log is the one the journal thread wrote
 * last). */
bool elog_direct_stamped(const entry_log_t *log);
/* Called for each record of a direct log's tail with its payload (b, a new
 * reference the callee takes over); non-zero stops the scan with that code. */
typedef int (*elog_tail_fn)(void *ctx, entry_log_t *log, int64_t ledger_id, int64_t entry_id,
                            uint64_t offset, qbuf_t *b);
/* At open, before log_table_cut_tails: the stamped records of log after the
 * last one its .idx or the journal's replayed references point at
 * (log->rec_end), read and verified one by one until the first that is not
 * intact or not stamped with log's id (a torn write, an O_DIRECT pad, zeros,
 * a previous life's record). Each goes to fn; rec_end follows, so the cut
 * keeps them. *found: how many. 0, fn's code, or -errno on an I/O error. */
int elog_direct_scan_tail(entry_log_t *log, elog_tail_fn fn, void *ctx, uint32_t *found);
/* True while cur is written with O_DIRECT (tests). */
bool elog_direct_is_odirect(const elog_direct_t *d);
/* The records reserved so far are durable: cur's size (GC, stats) grows. */
void elog_direct_publish(elog_direct_t *d);

#endif
