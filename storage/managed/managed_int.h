/*
 * managed_int.h — private to storage/managed/: the ledger list, the cursor
 * acknowledgement state, the entry cache, and the structs behind
 * managed_ledger_t, ml_factory_t and ml_cursor_t. Nothing outside this folder
 * includes it (tests excepted, for stats and the pure data structures).
 *
 * Invariants (asserted where they are relied on):
 *  1. ml_ledger_list_t.v is sorted by ledger id, ids unique; the current
 *     ledger, if any, is the last element.
 *  2. A ledger's `entries` only grows while it is current; once closed it is
 *     fixed. Entry ids inside a ledger are 0..entries-1, contiguous; across
 *     ledgers positions jump, so "the next position" is asked of the list.
 *  3. Ack state: mark_delete M; ranges are closed intervals [first, last] of
 *     acknowledged positions, sorted, disjoint, each first > M, never adjacent
 *     to M (M advances over them) and never adjacent to each other at the time
 *     they were merged. A batch bitset exists only for a position > M not
 *     inside a range, and is never all-zero.
 *  4. Every asynchronous call made on behalf of a managed ledger (metadata,
 *     ledger, posted callback) holds it (ml_hold/ml_release): it is freed only
 *     once closing and holds == 0.
 */
#ifndef QUIRE_STORAGE_MANAGED_INT_H
#define QUIRE_STORAGE_MANAGED_INT_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/exec.h"
#include "common/hashmap.h"
#include "storage/managed/cursor.h"
#include "storage/managed/managed_ledger.h"

/* ------------------------------------------------------------ bounds -- */

#define ML_LEDGERS_MAX 10000     /* ledgers in one managed ledger's list */
#define ML_ADDS_PENDING_MAX 8192 /* adds queued + in flight per managed ledger */
/* After a ledger could not be created (no writable bookie: a full disk), adds
 * fail at once with that error for this long before the next attempt, as
 * Pulsar's WaitTimeAfterLedgerCreationFailureMs did, unless enough bookies are
 * writable again: clients resending at once neither try a creation each nor
 * log two lines each. */
#define ML_CREATE_RETRY_S 1.0
#define ML_READS_PENDING_MAX 1024            /* ml_read calls in flight per managed ledger */
#define ML_READ_ENTRIES_MAX 10000            /* one ml_read returns at most this many */
#define ML_READ_BATCH_MAX 256                /* one ledger_read asks for at most this many */
#define ML_READ_HANDLES_MAX 8                /* cached read handles per managed ledger */
#define ML_READ_HANDLE_IDLE_S 60.0           /* a cached read handle idle this long is released */
#define ML_CURSORS_MAX 1024                  /* cursors per managed ledger */
#define ML_NAME_MAX 1024                     /* bytes in a managed ledger or cursor name */
#define ML_PROPERTIES_MAX 256                /* properties of one managed ledger */
#define ML_ACK_RANGES_MEM_MAX 100000         /* ack ranges kept in memory per cursor */
#define ML_ACK_SET_WORDS_MAX 128             /* 64-bit words in one batch-index bitset */
#define ML_CURSOR_STATE_BYTES_MAX (3u << 20) /* a persisted cursor state */
#define ML_TRIM_INTERVAL_S 60.0              /* periodic retention check */
#define ML_CACHE_AGE_S 1.0                   /* cached entries older than this are evicted */
#define ML_CACHE_READERS_MAX 64              /* cursors walked to evict what all have read */
#define ML_CACHE_BACKLOG_ENTRIES 1000 /* a cursor further behind is not served by the cache */

/* memmove that accepts NULL pointers when n == 0 (empty arrays). */
static inline void ml_move(void *dst, const void *src, size_t n)
{
    if (n)
        memmove(dst, src, n);
}

/* ------------------------------------------------------- ledger list -- */

typedef struct ml_ledger_list {
    ml_ledger_info_t *v; /* owned; sorted by ledger_id (invariant 1) */
    size_t n, cap;
    int64_t current_id; /* ledger being written (last of v), -1 if none */
} ml_ledger_list_t;

void ml_list_free(ml_ledger_list_t *l);
/* Appends ledger id (greater than every id present) with 0 entries. */
int ml_list_append(ml_ledger_list_t *l, int64_t id);
/* Index of the first ledger with ledger_id >= id (n if none). */
size_t ml_list_lower_bound(const ml_ledger_list_t *l, int64_t id);
ml_ledger_info_t *ml_list_find(const ml_ledger_list_t *l, int64_t id);
/* Removes the k oldest ledgers. */
void ml_list_drop_front(ml_ledger_list_t *l, size_t k);
/* Position after pos (see ml_next_position): entries of the current ledger
 * continue past its end; empty closed ledgers are skipped. */
ml_pos_t ml_list_next(const ml_ledger_list_t *l, ml_pos_t pos);
/* Existing entries in (a, b]. */
uint64_t ml_list_count(const ml_ledger_list_t *l, ml_pos_t a, ml_pos_t b);
/* Their bytes, each ledger's counted at its average entry size. */
uint64_t ml_list_bytes(const ml_ledger_list_t *l, ml_pos_t a, ml_pos_t b);
/* The first existing entry >= pos into *out; false when there is none. */
bool ml_list_seek(const ml_ledger_list_t *l, ml_pos_t pos, ml_pos_t *out);
/* Last existing entry, (-1,-1) if none. */
ml_pos_t ml_list_last(const ml_ledger_list_t *l);
uint64_t ml_list_total_size(const ml_ledger_list_t *l);
uint64_t ml_list_total_entries(const ml_ledger_list_t *l);

/* -------------------------------------------------------- ack state -- */

typedef struct ml_ack_range {
    ml_pos_t first, last; /* both acknowledged, and every entry between */
} ml_ack_range_t;

typedef struct ml_batch_ack {
    ml_pos_t pos;
    uint32_t words;
    uint64_t *bits; /* owned; bit set = batch index still unacknowledged */
} ml_batch_ack_t;

typedef struct ml_ack_state {
    ml_pos_t mark_delete;
    ml_ack_range_t *ranges; /* owned, sorted */
    size_t nranges, ranges_cap;
    ml_batch_ack_t *batches; /* owned, sorted by pos */
    size_t nbatches, batches_cap;
    size_t ranges_max;               /* in memory; ML_ACK_RANGES_MEM_MAX by default */
    const ml_ledger_list_t *ledgers; /* borrowed: the managed ledger's list */
} ml_ack_state_t;

void ml_ack_init(ml_ack_state_t *st, const ml_ledger_list_t *ledgers, ml_pos_t mark_delete);
void ml_ack_free(ml_ack_state_t *st);
bool ml_ack_is_acked(const ml_ack_state_t *st, ml_pos_t pos);
/* Acknowledges one whole entry. QE_BUSY when it would need a range past
 * ranges_max (the entry stays unacknowledged and will be redelivered). */
int ml_ack_one(ml_ack_state_t *st, ml_pos_t pos);
/* ANDs the stored bitset of pos with words[0..n) (or stores them); an all-zero
 * result acknowledges the whole entry. QE_TOO_LARGE past ML_ACK_SET_WORDS_MAX. */
int ml_ack_batch(ml_ack_state_t *st, ml_pos_t pos, const uint64_t *words, size_t n);
void ml_ack_cumulative(ml_ack_state_t *st, ml_pos_t pos);
/* Forgets every individual ack; M = mark_delete. */
void ml_ack_reset(ml_ack_state_t *st, ml_pos_t mark_delete);
/* Stored bitset for pos or NULL. Borrowed until the next change. */
const uint64_t *ml_ack_bitset(const ml_ack_state_t *st, ml_pos_t pos, size_t *words);
/* The first position >= pos that is neither <= M nor inside a range. */
ml_pos_t ml_ack_skip(const ml_ack_state_t *st, ml_pos_t pos);
/* The first range starting after pos (NULL if none). */
const ml_ack_range_t *ml_ack_range_after(const ml_ack_state_t *st, ml_pos_t pos);
/* Entries in (M, last] not acknowledged. */
uint64_t ml_ack_backlog(const ml_ack_state_t *st, ml_pos_t last);
size_t ml_ack_format_ranges(const ml_ack_state_t *st, char *buf, size_t len);

/* Serialization (format in docs/managed-ledger.md, "Cursor state"). Writes at
 * most ML_CURSOR_RANGES_MAX ranges (the oldest) and as many bitsets as fit in
 * ML_CURSOR_STATE_BYTES_MAX. Returns the bytes needed; writes only if <= cap. */
size_t ml_ack_encode(const ml_ack_state_t *st, uint8_t *buf, size_t cap);
/* Replaces st's content with the decoded state; QE_CORRUPT on any mismatch
 * (then st is unchanged). */
int ml_ack_decode(ml_ack_state_t *st, const uint8_t *buf, size_t len);

/* ------------------------------------------------------ entry cache -- */

typedef struct ml_cache ml_cache_t;

typedef struct ml_cache_stats {
    uint64_t entries;
    uint64_t bytes;
    uint64_t inserts;
    uint64_t evictions;      /* by the size bound */
    uint64_t evictions_read; /* read past by every reader (ml_cache_evict_before) */
    uint64_t evictions_age;  /* older than the time threshold (ml_cache_evict_older) */
    uint64_t extensions;     /* aged entries given another period (ml_cache_keep_t) */
} ml_cache_stats_t;

/* Which aged entries a reader is still expected to read (Pulsar's PIP-430
 * cacheEvictionByExpectedReadCount): each gets another period, at most
 * extensions_max times (managedLedgerCacheEvictionExtendTTLOfEntriesWith-
 * RemainingExpectedReadsMaxTimes). */
typedef struct ml_cache_keep {
    bool (*expected)(const void *owner, ml_pos_t pos, void *arg);
    void *arg;
    uint32_t extensions_max;
} ml_cache_keep_t;

/* bytes_max == 0 disables the cache. */
ml_cache_t *ml_cache_new(uint64_t bytes_max);
void ml_cache_free(ml_cache_t *c);
/* Takes a reference on data; evicts the oldest entries to stay in bounds. now
 * (seconds, any monotonic clock) is the entry's age reference. */
void ml_cache_put(ml_cache_t *c, const void *owner, ml_pos_t pos, qbuf_t *data, double now);
/* Borrowed; NULL on a miss. */
qbuf_t *ml_cache_get(ml_cache_t *c, const void *owner, ml_pos_t pos);
/* Drops owner's entries of ledger_id (-1: every ledger of owner). */
void ml_cache_drop(ml_cache_t *c, const void *owner, int64_t ledger_id);
/* Evicts owner's entries before pos (every reader is past them); returns how many. */
size_t ml_cache_evict_before(ml_cache_t *c, const void *owner, ml_pos_t pos);
/* Evicts every entry put (or last extended) before time `before`, except those
 * keep (NULL: none) still expects to be read and has extended fewer than
 * extensions_max times: those are given another period from `now` (the time of
 * the pass). Returns how many were evicted. */
size_t ml_cache_evict_older(ml_cache_t *c, double before, double now, const ml_cache_keep_t *keep);
bool ml_cache_empty(const ml_cache_t *c);
/* The position of owner's oldest cached entry; false if it has none. */
bool ml_cache_oldest(const ml_cache_t *c, const void *owner, ml_pos_t *out);
void ml_cache_get_stats(const ml_cache_t *c, ml_cache_stats_t *out);

/* ------------------------------------------------------------ names -- */

/* Percent-encodes '/' and '%' so name is one path component. Caller frees. */
char *ml_escape_name(const char *name);
char *ml_unescape_name(const char *escaped);

/* ----------------------------------------------------------- structs -- */

typedef struct ml_waiter {
    struct ml_waiter *next;
    ml_done_cb cb;
    void *arg;
} ml_waiter_t;

typedef struct ml_opener {
    struct ml_opener *next;
    ml_open_cb cb;
    void *arg;
    ml_config_t cfg;
    managed_ledger_t *ml; /* set when delivered on a posted call */
} ml_opener_t;

typedef struct ml_add_op {
    struct ml_add_op *next;
    managed_ledger_t *ml;
    qbuf_t *data; /* referenced */
    ml_add_cb cb;
    void *arg;
    int64_t ledger_id;
} ml_add_op_t;

typedef struct ml_read_op ml_read_op_t;

typedef enum { ML_HANDLE_EMPTY = 0, ML_HANDLE_OPENING, ML_HANDLE_READY } ml_handle_state_t;

typedef struct ml_read_handle {
    int64_t ledger_id;
    ledger_t *l;
    ml_handle_state_t state;
    int refs;              /* reads in flight on it */
    bool doomed;           /* release when refs drops to 0 */
    bool temporary;        /* not in the table: heap-allocated, released after use */
    double last_used;      /* ev_now */
    ml_read_op_t *waiters; /* reads waiting for the open */
    managed_ledger_t *ml;
} ml_read_handle_t;

typedef enum {
    ML_OPENING = 0,
    ML_READY,     /* adds go to the current ledger */
    ML_ROLLING,   /* closing the current ledger / creating the next: adds queue */
    ML_NO_LEDGER, /* creating a ledger failed: the next add retries */
    ML_FENCED,    /* another writer owns it (or a metadata CAS was lost) */
} ml_state_t;

typedef struct ml_read_stats {
    uint64_t cache_hits;          /* entries served from the entry cache */
    uint64_t ledger_reads;        /* ledger_read calls */
    uint64_t ledger_entries_read; /* entries they returned */
    uint64_t handle_opens;        /* ledger_open calls for reading */
} ml_read_stats_t;

struct ml_factory {
    struct ev_loop *loop;
    md_store_t *md;        /* borrowed */
    ledger_client_t *lc;   /* borrowed */
    qloop_mailbox_t *mb;   /* owned: defers callbacks */
    ml_cache_t *cache;     /* owned */
    managed_ledger_t *mls; /* open (or opening/closing) managed ledgers */
    qmap_t *by_name;       /* owned: name -> the same managed ledgers */
    ev_timer trim_timer;   /* one for all: every ML_TRIM_INTERVAL_S (ml_trim.c) */
    ev_timer cache_timer;  /* age eviction; runs while the cache holds entries */
    double cache_age_s;    /* 0: no age eviction */
    bool cache_by_expected; /* PIP-430 expected reads (ml_factory_set_cache_expected_reads) */
    uint32_t cache_extensions_max; /* aged entries a reader expects: periods more (0: none) */
    uint64_t cache_bytes_max;      /* the cache's bound: how far behind a reader it serves */
    size_t trim_ticking;   /* managed ledgers it serves; it runs while > 0 */
    uint64_t reads_hit, reads_hit_bytes, reads_missed, reads_missed_bytes; /* ml_read.c */
    /* the bound on bytes read from ledgers and not yet handed over (ml_read.c) */
    uint64_t reads_bytes_max;           /* 0: none */
    uint64_t reads_bytes;               /* reserved by ledger reads in flight + held */
    ml_read_op_t *parked, *parked_tail; /* reads waiting for room, in call order */
    uint64_t reads_parked, reads_parked_total;
};

struct managed_ledger {
    ml_factory_t *f;
    managed_ledger_t *prev, *next; /* in f->mls */
    char *name, *path;             /* owned */
    ml_config_t cfg;
    ml_state_t state;
    int refs;  /* ml_open handles */
    int holds; /* asynchronous calls in flight (invariant 4) */
    ml_opener_t *openers;
    ml_ledger_list_t ledgers;
    ledger_t *current;  /* writer handle of ledgers.current_id, NULL while rolling */
    json_t *properties; /* owned object */
    int64_t md_version; /* of /managed-ledgers/<name>; MD_VERSION_NEW if absent */

    /* adds */
    ml_add_op_t *queued, *queued_tail;     /* not yet given to the ledger */
    ml_add_op_t *inflight, *inflight_tail; /* given to the ledger, in entry order */
    size_t nqueued, ninflight;
    uint64_t issued_entries, issued_bytes; /* into the current ledger */
    bool ledger_failed;                    /* an add failed: roll over */
    bool rollover_due;                     /* max_ledger_rollover_time_s reached */
    ev_tstamp current_since;               /* loop time `current` was created or opened */
    ev_tstamp create_failed_at;            /* loop time of the last failed creation */
    int create_rc;                         /* ... and its error (ML_NO_LEDGER) */
    uint64_t create_failures;
    bool roll_busy;            /* rollover: a close or create in flight */
    int64_t rolling_ledger_id; /* rollover: the ledger being closed */
    size_t current_reads;      /* ledger_read calls on `current` in flight */
    ev_timer rollover_timer;
    size_t open_idx; /* opening: next ledger to check for recovery */
    uint64_t entries_added;

    /* metadata writes: one in flight, the next covers every later request */
    bool md_writing;
    ml_waiter_t *md_waiting, *md_next;

    /* reads */
    ml_read_handle_t *handles; /* ML_READ_HANDLES_MAX, allocated by the first read of a
                                  closed ledger (most logs are only tailed) */
    size_t reads_inflight;
    ml_read_stats_t rstats;

    /* cursors */
    ml_cursor_t *cursors; /* known (durable ones loaded at open) */
    ml_cursor_t *zombies; /* deleted, awaiting their last handle/call */
    size_t ncursors;

    /* trimming */
    bool trimming, trim_again, trim_posted;
    bool trim_ticking; /* served by the factory's periodic check */
    ml_waiter_t *trim_waiters, *trim_active;
    int64_t *trim_ids; /* ledgers being deleted */
    size_t trim_nids, trim_next;

    /* closing */
    bool closing;
    int close_stage;
    bool finish_posted;
    ml_waiter_t *close_waiters;
    ml_opener_t *reopeners; /* ml_open while closing: reopened afterwards */

    ml_added_fn added_fn;
    void *added_arg;
};

typedef struct ml_flush_waiter {
    struct ml_flush_waiter *next;
    uint64_t gen; /* done once a write of this generation completed */
    ml_done_cb cb;
    void *arg;
} ml_flush_waiter_t;

struct ml_cursor {
    managed_ledger_t *ml;
    ml_cursor_t *next;
    char *name, *path; /* owned */
    bool durable, deleted;
    int handle_refs; /* ml_cursor_open handles */
    ml_ack_state_t acks;
    ml_pos_t read_pos;
    bool has_hold; /* ml_cursor_set_cache_hold: entries from hold read again */
    bool inactive; /* ml_cursor_set_active(false): no readers now */
    ml_pos_t hold;
    uint64_t seek_gen; /* bumped by seeks: a read in flight does not move R */
    bool reading;
    /* persistence */
    int64_t md_version; /* MD_VERSION_NEW until first written */
    uint64_t change_gen, persisted_gen, writing_gen;
    bool writing, timer_armed;
    double last_write_at; /* ev_now */
    ev_timer persist_timer;
    ml_flush_waiter_t *flush_waiters;
};

/* ------------------------------------------------- internal calls -- */

void ml_hold(managed_ledger_t *ml);
void ml_release(managed_ledger_t *ml);
/* Runs cb(rc, arg) on the loop soon (never inline), holding ml meanwhile. */
int ml_post_done(managed_ledger_t *ml, ml_done_cb cb, void *arg, int rc);
/* Persists the managed ledger's in-memory list and properties; cb when durable. */
int ml_md_write(managed_ledger_t *ml, ml_done_cb cb, void *arg);
/* JSON codec of /managed-ledgers/<name> (docs/managed-ledger.md). */
char *ml_md_encode(const ml_ledger_list_t *l, const json_t *properties, size_t *len);
int ml_md_decode(const void *buf, size_t len, ml_ledger_list_t *l, json_t **properties);
/* Asks for a trim soon (coalesced; deferred). */
void ml_trim_schedule(managed_ledger_t *ml);
/* The periodic retention check: one factory timer (ml_trim.c) serves every
 * managed ledger between start (open) and stop (close). */
void ml_trim_timer_init(ml_factory_t *f);
void ml_trim_start_timer(managed_ledger_t *ml);
void ml_trim_stop_timer(managed_ledger_t *ml);
/* Read handles. */
void ml_handles_release_ledger(managed_ledger_t *ml, int64_t ledger_id);
void ml_handles_release_idle(managed_ledger_t *ml, double idle_s);
/* Issues queued adds, starts or continues a rollover (managed_ledger.c). */
void ml_adds_pump(managed_ledger_t *ml);
/* Close progress: called whenever something the close waits for completes. */
void ml_close_step(managed_ledger_t *ml);
/* Cursors (cursor.c). */
int ml_cursors_load(managed_ledger_t *ml, ml_done_cb cb, void *arg);
bool ml_cursors_slowest(const managed_ledger_t *ml, ml_pos_t *mark_delete);
/* True if an open cursor is at most ML_CACHE_BACKLOG_ENTRIES before pos (a
 * reader the entry cache can serve; Pulsar's active, not backlogged, cursor). */
bool ml_cursors_any_tailing(const managed_ledger_t *ml, ml_pos_t pos);
/* Whether an entry added at pos goes into the cache: with expected reads on
 * (ml_factory_set_cache_expected_reads), if an active cursor is still to read
 * it and at most the cache's size behind it (PIP-430 sets the backlogged-cursor
 * rule aside; a reader further behind than the cache holds would find it
 * evicted by size first); else, or past ML_CACHE_READERS_MAX cursors, if an
 * open cursor tails (ml_cursors_any_tailing). */
bool ml_cache_wanted(const managed_ledger_t *ml, ml_pos_t pos);
/* Entry cache: puts an added entry if a cursor may read it (managed_ledger.c);
 * evicts what every open cursor has read (after a cursor's read). */
void ml_cache_added(managed_ledger_t *ml, ml_pos_t pos, qbuf_t *data);
void ml_cache_read_past(managed_ledger_t *ml);
/* ml_cache_keep_t's test for the managed ledger owner (cursor.c). */
bool ml_cache_expected_read(const void *owner, ml_pos_t pos, void *arg);
/* Flushes every durable cursor; cb once all are persisted. */
int ml_cursors_flush_all(managed_ledger_t *ml, ml_done_cb cb, void *arg);
void ml_cursors_free_all(managed_ledger_t *ml);

void ml_get_read_stats(const managed_ledger_t *ml, ml_read_stats_t *out);
const ml_cache_t *ml_factory_cache(const ml_factory_t *f);

#endif
