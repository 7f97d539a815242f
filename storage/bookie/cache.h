/*
 * cache.h — the bookie's in-memory entry caches (private to storage/bookie/).
 *
 * write_cache_t ("memtable"): entries acknowledged by the journal and not yet
 * in an entry log. The bookie keeps two: the active one, filled on the loop
 * thread, and a frozen one, immutable while the flush thread writes it to an
 * entry log. Lookups of a frozen cache from the loop are safe because nobody
 * mutates it; the loop frees it only after the flush has reported back.
 * Items live in an array (insertion order) plus an open-addressing table of
 * item indices keyed by (ledger, entry). A replaced entry reuses its item.
 * bytes counts payload + WRITE_CACHE_ITEM_OVERHEAD per item, so even empty
 * entries count against the bound (the caller enforces the bound). An entry
 * already durable in a direct entry log keeps no payload here (only its
 * location): reads of it go to that log, and its memory is freed as soon as
 * the broker and its readers are done with it, not at the next flush.
 *
 * read_cache_t: an LRU of entries read from disk, bounded by max_bytes
 * (payload + READ_CACHE_NODE_OVERHEAD each); loop thread only.
 *
 * Ownership: *_put takes over (write cache) or takes its own (read cache)
 * reference on the qbuf; *_get returns a borrowed pointer, valid until the
 * next change of that cache.
 */
#ifndef QUIRE_STORAGE_BOOKIE_CACHE_H
#define QUIRE_STORAGE_BOOKIE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"

#define WRITE_CACHE_ITEM_OVERHEAD 64u
#define READ_CACHE_NODE_OVERHEAD 64u

typedef struct wc_item {
    int64_t ledger_id;
    int64_t entry_id;
    qbuf_t *data;    /* one reference owned by the cache; NULL for a direct entry or once dropped */
    uint32_t log_id; /* != 0: already durable in this (direct) entry log... */
    uint64_t log_off; /* ... at this offset: the flush indexes it, rarely copies it */
    uint32_t len;     /* payload bytes */
    bool dropped;     /* its ledger was deleted */
} wc_item_t;

typedef struct write_cache {
    wc_item_t *items;
    uint32_t count, cap;
    uint32_t *slots; /* item index + 1; 0 = empty; nslots a power of two */
    uint32_t nslots;
    uint64_t bytes;
} write_cache_t;

void write_cache_init(write_cache_t *wc);
/* Drops every reference and frees the arrays; the cache is empty and reusable. */
void write_cache_clear(write_cache_t *wc);
/* Inserts or replaces (ledger, entry); takes over the caller's reference on data.
 * 0, or -ENOMEM (then the reference stays with the caller). */
int write_cache_put(write_cache_t *wc, int64_t ledger_id, int64_t entry_id, qbuf_t *data);
/* The same for an entry already written to entry log log_id (!= 0) at log_off:
 * only its location and length are kept (the reference on data is dropped). */
int write_cache_put_at(write_cache_t *wc, int64_t ledger_id, int64_t entry_id, qbuf_t *data,
                       uint32_t log_id, uint64_t log_off);
/* The payload, borrowed, or NULL (absent, or a direct entry: write_cache_find). */
qbuf_t *write_cache_get(const write_cache_t *wc, int64_t ledger_id, int64_t entry_id);
/* The item of (ledger, entry), borrowed, or NULL (absent or dropped). */
const wc_item_t *write_cache_find(const write_cache_t *wc, int64_t ledger_id, int64_t entry_id);
/* Drops every entry of the ledger (deleted ledger). */
void write_cache_drop_ledger(write_cache_t *wc, int64_t ledger_id);

typedef struct rc_node rc_node_t;

typedef struct read_cache {
    rc_node_t **buckets;
    uint32_t nbuckets; /* power of two */
    uint32_t count;
    uint64_t bytes, max_bytes;
    rc_node_t *mru, *lru; /* doubly linked, most recently used first */
} read_cache_t;

int read_cache_init(read_cache_t *rc, uint64_t max_bytes);
void read_cache_free(read_cache_t *rc);
/* Borrowed, or NULL; a hit becomes the most recently used. */
qbuf_t *read_cache_get(read_cache_t *rc, int64_t ledger_id, int64_t entry_id);
/* Keeps its own reference on data; evicts least recently used entries to stay
 * within max_bytes (an entry larger than max_bytes is not cached). */
void read_cache_put(read_cache_t *rc, int64_t ledger_id, int64_t entry_id, qbuf_t *data);
void read_cache_remove(read_cache_t *rc, int64_t ledger_id, int64_t entry_id);

static inline uint64_t cache_hash(int64_t ledger_id, int64_t entry_id)
{
    uint64_t x = (uint64_t)ledger_id * 0x9E3779B97F4A7C15ull ^ (uint64_t)entry_id;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

#endif
