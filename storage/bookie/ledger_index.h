/*
 * ledger_index.h — per-ledger state and the entry index of the bookie
 * (private to storage/bookie/).
 *
 * In memory, each ledger_t holds its metadata (fenced, deleted, lac, last
 * entry) and its index: a sorted array of runs (idx_run_t, 24 bytes each). A
 * run is a range of consecutive entry ids whose idx records (entry_log.h) are
 * consecutive in one <log>.idx file, so the index does not hold an entry's
 * location itself, only where its idx record is: entry first + i is
 * described by the record at byte pos + 32 * i of <log_id>.idx, and a reader
 * reads that record (entry_log_locate) before the entry. A flush writes each
 * ledger's entries in order, their idx records together, so one run covers a
 * ledger's entries of one flush: with 64 MiB write caches the index costs a
 * few bytes per flushed megabyte of a ledger, not 24 bytes per entry (it held
 * every location until session 13: 77 MB after two million small entries,
 * growing for as long as data was retained). A re-add or a compaction copy of
 * an entry in the middle of a run splits the run; neighbours that line up
 * again are merged. Appending the next entry id is O(1); any other change is a
 * binary search and a move of the runs after it. The ledger table maps ledger
 * id -> ledger_t. A deleted ledger stays as a tombstone (deleted = true, no
 * index) until garbage collection has removed every entry log holding its
 * entries.
 *
 * On disk the index is not one file: each entry log <id>.log has a companion
 * <id>.idx listing the entries it holds (entry_log.h), and the whole index is
 * rebuilt from those at open, in runs from <id>.sum where a clean close left
 * one (idx_summary.h). Ledger metadata lives in ledgers.meta, an
 * append-only file of fixed 48-byte records, the last record of a ledger
 * winning; it is rewritten (tmp + rename) when it holds mostly stale records.
 *
 * ledgers.meta record (little-endian):
 *
 *   offset size meaning
 *   0      4    magic 0x314d4c51 ("QLM1")
 *   4      4    flags: bit 0 fenced, bit 1 deleted
 *   8      8    ledger id
 *   16     8    lac (-1 if none)
 *   24     8    last entry id stored (-1 if none)
 *   32     12   reserved, zero
 *   44     4    crc32c of bytes 0..43
 *
 * Threads: the table is shared by the loop thread and the flush thread and is
 * guarded by the bookie's lock (bookie_int.h); these functions take no lock.
 */
#ifndef QUIRE_STORAGE_BOOKIE_LEDGER_INDEX_H
#define QUIRE_STORAGE_BOOKIE_LEDGER_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"

#define LEDGER_META_RECORD_BYTES 48u
#define LEDGER_META_MAGIC 0x314d4c51u
#define LEDGER_META_FILE "ledgers.meta"

/* Entries first .. first + count - 1: their idx records from byte pos of
 * <log_id>.idx on, one after another. */
typedef struct idx_run {
    int64_t first;
    uint64_t pos;
    uint32_t count;
    uint32_t log_id;
} idx_run_t;

/* Where an entry's idx record is. */
typedef struct idx_ref {
    uint32_t log_id;
    uint64_t pos;
} idx_ref_t;

typedef struct ledger {
    int64_t id;
    int64_t lac;
    int64_t last_entry;
    bool fenced, deleted;
    bool dirty; /* metadata changed since it was last persisted: on the dirty list */
    struct ledger *dirty_prev, *dirty_next;
    idx_run_t *runs;
    uint32_t nruns, cap;
    /* The largest payload indexed: what a read is counted as before its idx
     * record gives its length (the bound on reads in flight then holds). */
    uint32_t max_length;
} ledger_t;

/* The dirty list holds exactly the ledgers with dirty set, so a checkpoint
 * persists the changed ledgers in O(changed), not O(ledgers), under the lock. */
typedef struct ledger_table {
    qmap64_t *map;        /* ledger id -> ledger_t* (owned) */
    uint64_t live;        /* ledgers not deleted */
    ledger_t *dirty_head; /* ledgers whose metadata changed since last persisted */
    uint64_t ndirty;
} ledger_table_t;

int ledger_table_init(ledger_table_t *lt);
void ledger_table_free(ledger_table_t *lt);
ledger_t *ledger_find(const ledger_table_t *lt, int64_t id);
/* The ledger, created (empty, not fenced, dirty) when absent; NULL on ENOMEM. */
ledger_t *ledger_get_or_create(ledger_table_t *lt, int64_t id);
/* Marks the ledger deleted and drops its index. */
void ledger_mark_deleted(ledger_table_t *lt, ledger_t *l);
/* Sets / clears l->dirty and keeps the dirty list in step. O(1). */
void ledger_set_dirty(ledger_table_t *lt, ledger_t *l);
void ledger_clear_dirty(ledger_table_t *lt, ledger_t *l);
/* Removes a ledger from the table and frees it (tombstone collected). */
void ledger_forget(ledger_table_t *lt, ledger_t *l);

/* Inserts or replaces where the idx record of an entry (of length payload
 * bytes) is. 0 or -ENOMEM (the index unchanged). */
int ledger_index_put(ledger_t *l, int64_t entry_id, uint32_t log_id, uint64_t pos, uint32_t length);
/* The same for entries first .. first + count - 1, whose idx records follow
 * one another from pos on (an index summary's run), max_length the largest
 * payload among them. */
int ledger_index_put_run(ledger_t *l, int64_t first, uint32_t count, uint32_t log_id, uint64_t pos,
                         uint32_t max_length);
/* True, with *out filled, when the entry is indexed. */
bool ledger_index_find(const ledger_t *l, int64_t entry_id, idx_ref_t *out);
/* Highest entry id in the index, or -1. */
int64_t ledger_index_last(const ledger_t *l);
/* The largest payload put (0 before any). */
uint32_t ledger_index_max_length(const ledger_t *l);

/* Encodes the ledger's metadata as one ledgers.meta record into out[48]. */
void ledger_meta_encode(const ledger_t *l, uint8_t *out);
/* Applies every valid record of ledgers.meta under dir to the table; a torn or
 * corrupt tail is truncated (with a warning). *size_out receives the valid
 * size and *records_out the number of records. 0 or -errno (absent file: 0). */
int ledger_meta_load(ledger_table_t *lt, const char *dir, uint64_t *size_out,
                     uint64_t *records_out);

#endif
