/*
 * journal.h — the bookie's write-ahead journal (private to storage/bookie/).
 *
 * Files: <data_dir>/journal/<seq as 16 hex digits>.jnl, preallocated to
 * journal_file_size_bytes, filled with records back to back from offset 0;
 * zeros after the last record are the normal end of a file. A record never
 * spans two files (a group whose next record does not fit ends before it; the
 * next group opens the next file). A position (seq, off) orders all records
 * ever written.
 *
 * Record (all integers little-endian; header 40 bytes, then the payload):
 *
 *   offset size meaning
 *   0      4    magic 0x334a5251 ("QRJ3"; formats 1 and 2: 0x314a5251, "QRJ1")
 *   4      4    payload length in bytes (<= JOURNAL_PAYLOAD_MAX)
 *   8      4    crc32c of the file's seq (8 bytes; format 3 only), then the
 *               40 header bytes (this field as 0), then the payload
 *   12     4    type: 1 ADD, 2 FENCE, 3 DELETE, 4 CHECKPOINT, 5 ADD_REF
 *   16     8    ledger id (CHECKPOINT: -1)
 *   24     8    entry id (ADD, ADD_REF) / checkpoint journal seq (CHECKPOINT) / -1
 *   32     8    lac piggybacked on the add / checkpoint offset (CHECKPOINT) / -1
 *   40     len  payload (ADD: the entry bytes; ADD_REF: a reference; others: empty)
 *
 * Format version 2 added ADD_REF (version 1 journals hold types 1-4 only and
 * replay unchanged; the checkpoint file says 2 when ADD_REF may be present,
 * so an older binary refuses the store instead of truncating at one).
 * Format version 3 (session 32) changes the magic and puts the file's seq
 * under every record's checksum, so a record is valid only in the file it was
 * written to: a file may then be written over an older journal file (reused:
 * its blocks written before, an fdatasync without metadata writes), whose
 * records fail the checks of the new file (any two seqs below 2^32 give
 * different checksums to the same bytes); the first record that fails ends a
 * file, and replay goes on with the next. The checkpoint file's version says
 * which format every journal file from its position on has. An
 * ADD_REF is an add whose entry (at least large_entry_bytes long) was written
 * once, as an ordinary record of a "direct" entry log (entry_log.h), by the
 * journal thread in the same group; its payload (JOURNAL_REF_BYTES):
 *
 *   offset size meaning
 *   0      4    entry log id
 *   4      4    entry length in bytes
 *   8      8    offset of the record in that entry log
 *   16     4    crc32c of that record (its header with the crc field 0, then
 *               the entry bytes): the value of the record's own crc field
 *   20     4    reserved, zero
 *
 * Group commit with large entries: the group's direct records are written
 * with one pwritev and the direct log fdatasynced, then the journal part is
 * written and fdatasynced; the group completes only after both. So an
 * acknowledged ADD_REF always has its record durable; a reference whose
 * record is missing or damaged can only belong to the last group written
 * before a crash (never acknowledged), and replay ends the journal there,
 * like a torn record. GC keeps direct logs the journal may reference
 * (entry_log.h: pinned).
 *
 * With cfg.large_one_sync (journalLargeEntryOneSync, session 45) a group
 * whose records are all ADD_REFs (and CHECKPOINT markers), none of them the
 * first add of its ledger and none in a direct log the group opened, syncs
 * only its direct log: its ADD_REFs are written, not synced. A later group's
 * fdatasync of the same file, or the roll to the next file (which syncs the
 * old one first), makes them durable; so after a crash the journal can lack
 * only references at its very end, all into the newest direct log, of
 * ledgers the journal or the indexes already know. At open the bookie reads
 * that log's stamped records after the last it knows of back
 * (elog_direct_scan_tail), which puts those entries back. Such a group
 * completes as soon as its direct log's fdatasync returns (session 46),
 * before its ADD_REFs are written: they are not what makes the adds
 * durable. A failure of that write fails no add; it turns the bookie
 * read-only (a completion of no slots with the error).
 *
 * Queue: a ring of journal_req_t slots, allocated once (no per-add malloc).
 * The loop thread fills the slot at tail and publishes it (journal_submit);
 * the journal thread takes every published slot it finds (up to the group
 * bounds), writes them with one pwritev, fdatasyncs once, and posts ONE
 * completion per group to the loop, which walks the group's slots and then
 * releases them. Indices only grow: head <= taken <= tail, tail - head <= cap.
 *   head  — loop: slots before it are free again
 *   taken — journal thread: slots before it are in a written (or failed) group
 *   tail  — loop, published under the lock: slots before it are queued
 * The journal thread never waits to fill a group: it writes as soon as it has
 * drained the queue, so an add at low load costs one write + one fdatasync;
 * under load, adds queue up during that fdatasync and form the next group.
 * A group also closes at group_wait_us_max after it started, group_bytes_max
 * bytes or group_entries_max records.
 *
 * Errors: a failed write or fdatasync (journal or direct log) fails that group with -errno and
 * every later group with the same code (the journal never writes again; the bookie turns
 * read-only); a one-sync group's adds completed before its journal write are not failed. A next
 * file that cannot be made for lack of space (ENOSPC, EDQUOT at its creation or preallocation,
 * before any record of the group is encoded) fails only the adds queued then, with QE_READ_ONLY,
 * and the next group tries again.
 */
#ifndef QUIRE_STORAGE_BOOKIE_JOURNAL_H
#define QUIRE_STORAGE_BOOKIE_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/exec.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/entry_log.h"

#define JOURNAL_MAGIC 0x314a5251u    /* formats 1 and 2 */
#define JOURNAL_MAGIC_V3 0x334a5251u /* format 3 */
#define JOURNAL_FORMAT_VERSION 3     /* 2: ADD_REF records; 3: the file's seq in the checksum */
_Static_assert(JOURNAL_FORMAT_VERSION == BOOKIE_JOURNAL_FORMAT_MAX, "bookie.h's bound");
#define JOURNAL_REF_BYTES 24u
#define JOURNAL_HEADER_BYTES 40u
#define JOURNAL_PAYLOAD_MAX (64u << 20)
#define JOURNAL_COPY_MAX (64u << 10) /* larger payloads are written from the qbuf (iovec) */
/* Direct-log bytes one group may carry (besides group_bytes_max of journal
 * bytes): large, because each group costs two fdatasyncs and the records are
 * written from their qbufs (no copy, no buffer to size). */
#define JOURNAL_DIRECT_GROUP_BYTES_MAX (8u << 20)

enum journal_rec_type {
    JREC_ADD = 1,
    JREC_FENCE = 2,
    JREC_DELETE = 3,
    JREC_CHECKPOINT = 4,
    JREC_ADD_REF = 5,
};

/* The payload of an ADD_REF record, decoded. */
typedef struct journal_ref {
    uint32_t log_id;
    uint32_t length;
    uint64_t offset;
    uint32_t crc;
} journal_ref_t;

/* Decodes p[JOURNAL_REF_BYTES]. */
void journal_ref_decode(const uint8_t *p, journal_ref_t *out);

typedef struct journal_pos {
    uint64_t seq; /* journal file */
    uint64_t off; /* byte offset in that file */
} journal_pos_t;

static inline int journal_pos_cmp(journal_pos_t a, journal_pos_t b)
{
    if (a.seq != b.seq)
        return a.seq < b.seq ? -1 : 1;
    return a.off < b.off ? -1 : a.off > b.off;
}

/* One queued record; the callback fields belong to the bookie. */
typedef struct journal_req {
    uint32_t type; /* enum journal_rec_type */
    int rc;        /* set by the bookie while completing */
    int64_t ledger_id, entry_id, lac;
    qbuf_t *data;     /* ADD: one reference, owned by the slot until completion */
    uint32_t log_id;  /* set by the journal thread when the entry went to a direct log (else 0) */
    uint64_t log_off; /* ... and the offset of its record there */
    union {
        bookie_add_cb add;
        bookie_lac_cb lac;
        bookie_done_cb done;
    } cb;
    void *arg;
    uint64_t submit_us;  /* clock_mono_us() at journal_submit */
    uint64_t pick_us;    /* ... when the journal thread took it into a group */
    uint64_t durable_us; /* ... when that group's writes and syncs ended */
    /* ADD: its group syncs the journal even if all its adds are large (the
     * ledger's first add here: replay then knows the ledger, and a direct
     * log's tail is read back only for known ledgers). */
    bool sync_journal;
} journal_req_t;

typedef struct journal_config {
    const char *dir; /* <data_dir>/journal */
    bool sync;
    uint32_t group_wait_us_max;
    uint32_t group_bytes_max;
    uint32_t group_entries_max;
    uint64_t file_size_bytes;
    uint32_t ring_slots;        /* queue bound (queued + in flight) */
    uint32_t large_entry_bytes; /* adds this large go to the direct log; 0: never */
    elog_direct_t *direct;      /* the direct log writer (journal thread), or NULL */
    struct io_gate *gate;       /* group writes marked in flight here (io_gate.h), or NULL */
    bool odirect;               /* groups written with O_DIRECT where the file system allows */
    struct spares *spares;      /* zeroed files to roll to (spare.h), or NULL */
    uint32_t format;            /* the format written: 2, or 3 (JOURNAL_FORMAT_VERSION) */
    latq_t *sync_latency;       /* each fdatasync of the journal recorded here, or NULL */
    latq_t *direct_latency;     /* each group's direct records' write and sync, or NULL */
    latq_t *roll_latency;       /* each next journal file's creation (a roll), or NULL */
    latq_t *direct_roll_latency; /* each next direct log's creation, or NULL */
    /* A group of large adds only syncs its direct log, not the journal (its
     * ADD_REFs written all the same): see "Group commit with large entries". */
    bool large_one_sync;
} journal_config_t;

/* Called on the loop for each group: slots [begin, end) were written (rc == 0)
 * or failed (rc < 0); end_pos is where the journal ends after the group. */
typedef void (*journal_group_fn)(void *ctx, uint64_t begin, uint64_t end, int rc,
                                 journal_pos_t end_pos);

typedef struct journal journal_t;

/* Creates journal file seq (which must not exist) and starts the journal
 * thread. Completions are posted to mb. 0 or a negative code. */
int journal_open(const journal_config_t *cfg, uint64_t seq, qloop_mailbox_t *mb,
                 journal_group_fn fn, void *ctx, journal_t **out);
/* Writes everything queued, posts those completions, joins the thread. */
void journal_stop(journal_t *j);
/* Frees the ring: call after the completions posted by journal_stop ran. */
void journal_free(journal_t *j);

/* Loop thread: the next free slot (NULL when the ring is full), to be filled
 * then published with journal_submit(). */
journal_req_t *journal_next_slot(journal_t *j);
void journal_submit(journal_t *j);
/* Loop thread: slot of index idx (for a group being completed). */
journal_req_t *journal_slot(journal_t *j, uint64_t idx);
/* Loop thread: every slot before end is free again. */
void journal_release(journal_t *j, uint64_t end);

void journal_get_stats(journal_t *j, uint64_t *syncs, uint64_t *sync_us_total);
/* Groups written with O_DIRECT so far (cfg.odirect where the file system took it). */
uint64_t journal_dio_groups(journal_t *j);
/* Groups whose direct log alone was synced (cfg.large_one_sync). */
uint64_t journal_one_sync_groups(journal_t *j);
/* Direct log: fdatasyncs, time in writes + fdatasyncs, bytes written. */
void journal_get_direct_stats(journal_t *j, uint64_t *syncs, uint64_t *sync_us_total,
                              uint64_t *bytes);
/* Fault injection for tests: the next group write fails with err (< 0). */
void journal_inject_error(journal_t *j, int err);
/* ... the next journal file's creation fails with err (-ENOSPC: the group's
 * adds fail with QE_READ_ONLY, the journal goes on). */
void journal_inject_roll_error(journal_t *j, int err);

/* A record met by replay: payload points into the mapped file (borrowed for
 * the duration of the call). */
typedef struct journal_record {
    uint32_t type;
    int64_t ledger_id, entry_id, lac;
    const uint8_t *payload;
    uint32_t len;
    journal_pos_t pos;
} journal_record_t;
/* Returns 0 to go on, JOURNAL_REPLAY_END when the record cannot be used (an
 * ADD_REF whose entry-log record is missing or damaged: the journal ends there
 * and is truncated, as at a torn record), or a negative code to fail. */
typedef int (*journal_replay_fn)(void *ctx, const journal_record_t *rec);
#define JOURNAL_REPLAY_END 1

/* Replays every record at or after from, in order; every file from there on
 * is of the given format (the checkpoint's version). Formats 1 and 2: the
 * first record that is torn or fails its checksum ends the journal: its file
 * is truncated there (with a warning naming file and offset) and later files
 * are not replayed. Format 3: such a record ends its file (what follows may
 * be an older file's bytes) and replay goes on with the next file; the last
 * file is truncated there. *next_seq receives a sequence number above every
 * journal file present. Returns 0, a negative code of fn, or -errno when a
 * file cannot be read. */
int journal_replay(const char *dir, journal_pos_t from, uint32_t format, journal_replay_fn fn,
                   void *ctx, uint64_t *next_seq);
/* The checksum a record of file seq starts from: 0 for formats 1 and 2, the
 * crc32c of seq's 8 bytes for format 3. */
uint32_t journal_crc_seed(uint32_t format, uint64_t seq);
/* Checks the record at p, with avail bytes left in file seq of the given
 * format (pure: no I/O; used by replay and by tools/journal_dump.c). Returns
 * the record's total size, 0 at the normal end of a file (zeros), or -1 with
 * *why set when the record is torn, corrupt or not this file's (replay ends
 * the file there). */
int64_t journal_check_record(const uint8_t *p, uint64_t avail, uint32_t format, uint64_t seq,
                             const char **why);
/* Removes journal files with seq < before_seq, their blocks freed in the
 * background (trash.h); with reuse (a journal of format 3), the newest of
 * them is offered as the journal's spare file first (spares_offer). 0 or
 * -errno. */
int journal_trim(const char *dir, uint64_t before_seq, struct spares *reuse);

#endif
