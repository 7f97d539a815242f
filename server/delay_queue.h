/*
 * delay_queue.h — the time-ordered index under delayed delivery (delayed.c):
 * held positions ordered by the time they become due. A pure data structure:
 * no broker type, no clock, no I/O; the caller says what "now" is. Unit-tested
 * directly (tests/unit/delayed/).
 *
 * A position is an opaque uint64_t whose numeric order is the log's order
 * (delayed.c passes pos_pack(ml_pos_t)); taken entries come out sorted by it.
 *
 * Layout: buckets of width bucket_ms sorted by start time (start = deliver_at
 * rounded down to a multiple of bucket_ms); each bucket an unsorted array of
 * 16-byte items
 *
 *   offset size meaning
 *   0      8    position
 *   8      4    deliver_at - bucket start, ms (< bucket_ms)
 *   12     2    Key_Shared hash slot (0..65535)
 *   14     2    reserved, 0
 *
 * plus the bucket's earliest deliver_at. Invariants:
 *   1. buckets[i].start < buckets[i+1].start; no bucket is empty;
 *   2. every item of bucket i is due in [start, start + bucket_ms);
 *   3. count = the sum of the buckets' item counts;
 *   4. bytes = what the arrays hold allocated (items and buckets, caps).
 * So if bucket 0 still holds an item that is not due, no later bucket holds a
 * due one.
 *
 * Memory: 16 bytes per item, plus per bucket 32 bytes and array slack (an
 * array grows by a quarter plus 4 items, so a bucket of n items holds at most
 * n + n/4 + 4 slots); the bucket array grows the same way. The queue bounds
 * nothing itself: its owner stops adding at its limit (delayed.c:
 * quireDelayedDeliveryMaxIndexedMessages). Single-threaded.
 */
#ifndef QUIRE_SERVER_DELAY_QUEUE_H
#define QUIRE_SERVER_DELAY_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct delay_item {
    uint64_t pos;
    uint32_t offset_ms;
    uint16_t key_hash;
    uint16_t reserved;
} delay_item_t;

typedef struct delay_bucket {
    int64_t start_ms;
    int64_t min_at_ms;
    delay_item_t *items;
    uint32_t n, cap;
} delay_bucket_t;

typedef struct delay_queue {
    delay_bucket_t *buckets;
    size_t nbuckets, bucket_cap;
    uint64_t count;
    size_t bytes;
    uint32_t bucket_ms;
} delay_queue_t;

/* An entry taken out of the queue. */
typedef struct delay_entry {
    uint64_t pos;
    int64_t deliver_at_ms;
    uint16_t key_hash;
} delay_entry_t;

/* An empty queue with buckets of bucket_ms (> 0; delayedDeliveryTickTimeMillis). */
void delay_queue_init(delay_queue_t *q, uint32_t bucket_ms);
/* Frees every array; q is empty and reusable (same bucket width). */
void delay_queue_clear(delay_queue_t *q);

/* Adds pos, due at deliver_at_ms (>= 0). 0, or -ENOMEM (q unchanged). The same
 * position added twice is held twice (the caller's replay set drops copies). */
int delay_queue_add(delay_queue_t *q, uint64_t pos, int64_t deliver_at_ms, uint16_t key_hash);

/* Takes up to max entries with deliver_at_ms <= now_ms, earliest buckets
 * first, and returns them sorted by position in *out (malloc'd, the caller
 * frees; NULL when none), their number in *n. An entry not yet due is never
 * taken. 0, or -ENOMEM (q unchanged). */
int delay_queue_take_due(delay_queue_t *q, int64_t now_ms, size_t max, delay_entry_t **out,
                         size_t *n);

/* Removes the entries drop(pos, arg) says are gone (acknowledged); returns
 * how many were removed. */
uint64_t delay_queue_remove_if(delay_queue_t *q, bool (*drop)(uint64_t pos, void *arg), void *arg);

/* The earliest deliver_at_ms held, or INT64_MAX when empty. */
int64_t delay_queue_next_ms(const delay_queue_t *q);
/* Entries held. */
uint64_t delay_queue_count(const delay_queue_t *q);
/* Bytes allocated by the queue's arrays (not counting the delay_queue_t). */
size_t delay_queue_memory_bytes(const delay_queue_t *q);

#endif
