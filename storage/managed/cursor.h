/*
 * cursor.h — a subscription's position in a managed ledger (Pulsar's
 * ManagedCursor).
 *
 * State: the mark-delete position M (every entry <= M is acknowledged), the
 * individually acknowledged entries after M as ranges, and for partly
 * acknowledged batches a bitset per entry (bit i set = batch index i still
 * unacknowledged, java.util.BitSet words as Pulsar's ack_set). When the entry
 * right after M becomes acknowledged, M advances over every contiguous
 * acknowledged entry. The read position R is where the next read starts (R > M);
 * reads skip acknowledged entries.
 *
 * Durable cursors persist their state to the metadata store: at most every
 * cursor_persist_interval_ms after a change, on ml_cursor_flush(), and on close.
 * After any restart a durable cursor resumes at its last persisted state: an
 * acknowledgement is durable once a flush that followed it completed. Non-durable
 * cursors (readers) persist nothing and do not hold back trimming.
 *
 * The number of individually acknowledged ranges kept is bounded
 * (ML_CURSOR_RANGES_MAX); past it the oldest holes are still tracked in memory
 * but persisted as a prefix, so a restart may redeliver, never lose.
 *
 * Threads and memory: loop thread only; callbacks on it, never inline.
 */
#ifndef QUIRE_STORAGE_CURSOR_H
#define QUIRE_STORAGE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/managed/managed_ledger.h"

typedef struct ml_cursor ml_cursor_t;

#define ML_CURSOR_RANGES_MAX 10000

typedef void (*ml_cursor_open_cb)(int rc, ml_cursor_t *c, void *arg);

/* Opens the cursor `name`, creating it if new at `initial` (ML_POS_EARLIEST:
 * before the first entry; ML_POS_LATEST: after the last; or a position, read
 * inclusive). An existing durable cursor keeps its persisted state and ignores
 * `initial`. */
int ml_cursor_open(managed_ledger_t *ml, const char *name, ml_pos_t initial, bool durable,
                   ml_cursor_open_cb cb, void *arg);
/* The names of the managed ledger's durable cursors (loaded at open), at most
 * max of them into names (borrowed: valid until a cursor is deleted); returns
 * how many exist. */
size_t ml_cursor_names(const managed_ledger_t *ml, const char **names, size_t max);
/* Persists (if durable) and frees the handle; the cursor stays in metadata. */
int ml_cursor_close(ml_cursor_t *c, ml_done_cb cb, void *arg);
/* Removes a cursor (open or not) from the managed ledger and its metadata. */
int ml_cursor_delete(managed_ledger_t *ml, const char *name, ml_done_cb cb, void *arg);

/* Reads up to max_entries from the read position, skipping acknowledged ones, and
 * advances the read position past what it returns. n == 0: nothing available. */
int ml_cursor_read(ml_cursor_t *c, size_t max_entries, size_t max_bytes, ml_read_cb cb, void *arg);
bool ml_cursor_has_more(const ml_cursor_t *c);
/* The cursor's user will read entries again from *from (its redelivery set's
 * first position): the entry cache keeps the entries from there as if the read
 * position were there, within the cache's age and size bounds. NULL: no such
 * entries. A hold that moves on lets what it kept be evicted. */
void ml_cursor_set_cache_hold(ml_cursor_t *c, const ml_pos_t *from);
/* Whether c's user has readers now (Pulsar's active cursor: a subscription with
 * consumers; true from open). Only for an active cursor are added entries cached
 * and aged ones it has yet to read kept (ml_factory_set_cache_expected_reads). */
void ml_cursor_set_active(ml_cursor_t *c, bool active);
/* Moves the read position (redelivery: rewind to the first unacknowledged). */
void ml_cursor_seek_read(ml_cursor_t *c, ml_pos_t pos);
void ml_cursor_rewind(ml_cursor_t *c);

/* Individual ack. ack_set NULL (or all-zero words): the whole entry; else the
 * words of the bitset of batch indexes still unacknowledged (ANDed with what is
 * stored). Returns 0, or QE_INVALID for a position beyond the log. */
int ml_cursor_ack(ml_cursor_t *c, ml_pos_t pos, const uint64_t *ack_set, size_t words);
/* Cumulative ack: everything <= pos. */
int ml_cursor_ack_cumulative(ml_cursor_t *c, ml_pos_t pos);
/* Resets the cursor so that `pos` is the next entry read and everything before
 * it counts as acknowledged (SEEK, resetcursor); clears individual acks. */
int ml_cursor_reset(ml_cursor_t *c, ml_pos_t pos, ml_done_cb cb, void *arg);
/* Persists the current state now. */
int ml_cursor_flush(ml_cursor_t *c, ml_done_cb cb, void *arg);

bool ml_cursor_is_acked(const ml_cursor_t *c, ml_pos_t pos);
/* The stored unacked-batch-index words for pos (NULL if none); *words set. */
const uint64_t *ml_cursor_ack_set(const ml_cursor_t *c, ml_pos_t pos, size_t *words);
const char *ml_cursor_name(const ml_cursor_t *c);
bool ml_cursor_is_durable(const ml_cursor_t *c);
ml_pos_t ml_cursor_mark_delete_pos(const ml_cursor_t *c);
ml_pos_t ml_cursor_read_pos(const ml_cursor_t *c);
/* Entries after the mark-delete position not individually acknowledged. */
uint64_t ml_cursor_backlog(const ml_cursor_t *c);
/* Number of individually-acknowledged ranges after M (for internal stats), and
 * a textual form "[(L:E1, L:E2], ...]" into buf. */
size_t ml_cursor_ack_ranges(const ml_cursor_t *c, char *buf, size_t buf_len);

#endif
