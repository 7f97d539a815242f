/*
 * managed_ledger.h — a topic's log: an ordered list of ledgers, appended to at
 * the end, read by position, trimmed at the front (Pulsar's ManagedLedger).
 *
 * Positions are (ledgerId, entryId); they only grow, and are never reused,
 * across restarts. The current ledger rolls over to a new one after
 * max_entries_per_ledger entries, max_ledger_size_bytes bytes, or
 * max_ledger_rollover_time_s seconds (once it holds something), but not before
 * it is min_ledger_rollover_time_s old (Pulsar's currentLedgerIsFull) unless it
 * holds entries_per_ledger_limit entries or an add failed. The list of
 * ledgers lives in the metadata store under /managed-ledgers/<name>; cursors
 * (cursor.h) under /managed-ledgers/<name>/cursors/<cursor>.
 *
 * Opening a managed ledger whose last ledger was not closed (a crash) recovers
 * that ledger through fencing (ledger.h) and starts a new one: every entry
 * acknowledged before the crash stays readable at its position.
 *
 * Retention: a ledger other than the current one is deleted once every durable
 * cursor's mark-delete position is past it AND retention allows: the ledgers
 * kept by retention are the newest ones whose total size stays within
 * retention_size_bytes and that closed less than retention_time_s ago
 * (-1 = unbounded, 0 = keep nothing consumed).
 *
 * Threads and memory: loop thread only; callbacks on it, never inline. Entries
 * are qbuf_t: ml_add references the buffer (the caller keeps its own reference);
 * ml_entry_t.data given to a read callback is borrowed (qbuf_ref to keep; the
 * entry cache and the dispatchers share one copy).
 */
#ifndef QUIRE_STORAGE_MANAGED_LEDGER_H
#define QUIRE_STORAGE_MANAGED_LEDGER_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/ledger/ledger.h"
#include "storage/metadata/metadata.h"

typedef struct ml_factory ml_factory_t;
typedef struct managed_ledger managed_ledger_t;

typedef struct ml_pos {
    int64_t ledger_id;
    int64_t entry_id;
} ml_pos_t;

static inline int ml_pos_cmp(ml_pos_t a, ml_pos_t b)
{
    if (a.ledger_id != b.ledger_id)
        return a.ledger_id < b.ledger_id ? -1 : 1;
    if (a.entry_id != b.entry_id)
        return a.entry_id < b.entry_id ? -1 : 1;
    return 0;
}

#define ML_POS_EARLIEST ((ml_pos_t){-1, -1})
#define ML_POS_LATEST ((ml_pos_t){INT64_MAX, INT64_MAX})

typedef struct ml_config {
    ledger_quorum_t quorum;              /* managedLedgerDefault{EnsembleSize,...} */
    uint64_t max_entries_per_ledger;     /* managedLedgerMaxEntriesPerLedger (50000) */
    uint64_t max_ledger_size_bytes;      /* managedLedgerMaxSizePerLedgerMbytes (2048 MiB) */
    uint32_t max_ledger_rollover_time_s; /* managedLedgerMaxLedgerRolloverTimeMinutes (240) */
    uint32_t min_ledger_rollover_time_s; /* managedLedgerMinLedgerRolloverTimeMinutes (0 here) */
    uint64_t entries_per_ledger_limit;   /* rolls at this many even before the min time (0: none) */
    int64_t retention_time_s;            /* -1 unbounded */
    int64_t retention_size_bytes;        /* -1 unbounded */
    uint32_t cursor_persist_interval_ms; /* mark-delete persisted at most this often (100) */
} ml_config_t;

void ml_config_defaults(ml_config_t *cfg);

typedef struct ml_entry {
    ml_pos_t pos;
    qbuf_t *data;
} ml_entry_t;

/* The factory owns the entry cache shared by all managed ledgers. */
int ml_factory_new(struct ev_loop *loop, md_store_t *md, ledger_client_t *lc,
                   uint64_t cache_bytes_max, ml_factory_t **out);
/* Entries stay in the cache at most this long (Pulsar's
 * managedLedgerCacheEvictionTimeThresholdMillis; 1 s by default, 0: no limit).
 * Independently, entries every open cursor has read are evicted at once. */
void ml_factory_set_cache_age(ml_factory_t *f, double seconds);
/* Pulsar's PIP-430 expected reads (cacheEvictionByExpectedReadCount, on by
 * default). On: an added entry is cached if an active cursor is still to read
 * it, however many entries behind (at most the cache's size behind it), and an
 * aged entry such a cursor has yet to read is given another period instead of
 * being evicted, at most `extensions` times
 * (managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes,
 * 5 by default; 0: added entries cached so, aged ones evicted). Off: the rule
 * before, entries cached for a cursor at most ML_CACHE_BACKLOG_ENTRIES behind
 * and aged out; extensions is then not used. */
#define ML_CACHE_EXTENSIONS_DEFAULT 5
void ml_factory_set_cache_expected_reads(ml_factory_t *f, bool on, uint32_t extensions);
/* Bytes all reads from ledgers may hold at once (Pulsar's
 * managedLedgerMaxReadsInFlightSizeInMB; 0, the factory's default: no bound). A
 * read asking a ledger for entries reserves their size, by the ledger's
 * average entry size, and then holds what came until its callback has run.
 * A read that would pass the bound, or that comes while others wait, waits
 * for others to finish (in call order), or, when it already holds entries, is
 * answered with them. */
void ml_factory_set_reads_bytes_max(ml_factory_t *f, uint64_t bytes);
/* All managed ledgers must be closed first. */
void ml_factory_free(ml_factory_t *f);
/* The entry cache, for metrics: what it holds now, and since the factory was
 * made, the entries reads found in it or had to read from ledgers. */
typedef struct ml_cache_info {
    uint64_t entries, bytes;
    uint64_t hits, hit_bytes;
    uint64_t misses, miss_bytes;
    uint64_t evictions_size, evictions_read, evictions_age;
    uint64_t extensions; /* aged entries given another period (expected reads) */
    /* reads from ledgers: bytes held now (reserved or read), reads waiting
     * now and ever for the bound (ml_factory_set_reads_bytes_max) */
    uint64_t reads_bytes, reads_waiting, reads_waited;
} ml_cache_info_t;
void ml_factory_cache_info(const ml_factory_t *f, ml_cache_info_t *out);
/* The ledger client the factory writes with (borrowed): for ledgers a user of
 * the managed ledger keeps beside it, such as a topic's compacted ledger. */
ledger_client_t *ml_factory_ledger_client(ml_factory_t *f);

typedef void (*ml_open_cb)(int rc, managed_ledger_t *ml, void *arg);
typedef void (*ml_add_cb)(int rc, ml_pos_t pos, void *arg);
typedef void (*ml_read_cb)(int rc, const ml_entry_t *entries, size_t n, void *arg);
typedef void (*ml_done_cb)(int rc, void *arg);
/* Called on the loop after each successful add, for tailing readers. */
typedef void (*ml_added_fn)(managed_ledger_t *ml, ml_pos_t pos, void *arg);

/* Opens or creates the managed ledger `name` (any string; a topic's persistence
 * name such as "public/default/persistent/t"). Opening one already open gives
 * the same handle (with one more reference to release with ml_close). */
int ml_open(ml_factory_t *f, const char *name, const ml_config_t *cfg, ml_open_cb cb, void *arg);
/* Appends; durable (on Qa bookies) when cb reports rc == 0. Callbacks arrive in
 * append order. QE_BUSY when too many adds are pending. */
int ml_add(managed_ledger_t *ml, qbuf_t *data, ml_add_cb cb, void *arg);
/* False only while the log has no ledger to write to (its creation failed: no
 * writable bookie, e.g. their disks full) and fewer bookies than its ensemble
 * are writable: adds would fail. The broker refuses new producers then, rather
 * than let them publish only to fail. (A fenced or closing log says true: its
 * adds fail with QE_FENCED / QE_CLOSED, handled as before.) */
bool ml_can_write(const managed_ledger_t *ml);
/* Reads up to max_entries (and about max_bytes) from `from` inclusive, across
 * ledgers; n == 0 when `from` is past the last confirmed entry. */
int ml_read(managed_ledger_t *ml, ml_pos_t from, size_t max_entries, size_t max_bytes,
            ml_read_cb cb, void *arg);
void ml_set_added_listener(managed_ledger_t *ml, ml_added_fn fn, void *arg);
int ml_update_config(managed_ledger_t *ml, const ml_config_t *cfg);
/* Drops a reference; the last one closes the current ledger and frees. */
int ml_close(managed_ledger_t *ml, ml_done_cb cb, void *arg);
/* Deletes every ledger, cursor and the metadata of a closed managed ledger. */
int ml_delete(ml_factory_t *f, const char *name, ml_done_cb cb, void *arg);

const char *ml_name(const managed_ledger_t *ml);
ml_pos_t ml_last_confirmed(const managed_ledger_t *ml); /* (-1,-1) when empty */
ml_pos_t ml_first_position(const managed_ledger_t *ml); /* first readable entry */
/* The position after pos (crossing into the next ledger); pos may be earliest. */
ml_pos_t ml_next_position(const managed_ledger_t *ml, ml_pos_t pos);
/* Entries between a (exclusive) and b (inclusive), across ledgers. */
uint64_t ml_count_entries(const managed_ledger_t *ml, ml_pos_t a, ml_pos_t b);
/* Runs retention/trimming now (tests, admin); also runs on a timer. */
int ml_trim(managed_ledger_t *ml, ml_done_cb cb, void *arg);
/* Managed ledger properties (kept in its metadata record). Setting one
 * (value NULL removes it) is durable when cb reports 0. get: borrowed until
 * the next set, NULL if absent. */
int ml_set_property(managed_ledger_t *ml, const char *key, const char *value, ml_done_cb cb,
                    void *arg);
const char *ml_get_property(const managed_ledger_t *ml, const char *key);

typedef struct ml_ledger_info {
    int64_t ledger_id;
    int64_t entries;
    int64_t size_bytes;
    int64_t closed_ms; /* 0 while open */
} ml_ledger_info_t;

typedef struct ml_stats {
    uint64_t entries_added; /* since open */
    uint64_t entries;       /* in the retained ledgers */
    uint64_t size_bytes;    /* in the retained ledgers */
    int64_t current_ledger_id;
    uint64_t current_ledger_entries;
    uint64_t current_ledger_size_bytes;
    size_t ledgers_count;
    uint64_t ledger_create_failures; /* rollovers that could not create a ledger */
} ml_stats_t;
void ml_get_stats(const managed_ledger_t *ml, ml_stats_t *out);
/* Copies up to max ledger infos (oldest first); returns how many ledgers exist. */
size_t ml_get_ledgers(const managed_ledger_t *ml, ml_ledger_info_t *out, size_t max);

#endif
