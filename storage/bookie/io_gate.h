/*
 * io_gate.h — the bookie's large reads yield to its journal writes on a
 * shared disk.
 *
 * A write and its fdatasync wait behind the reads the device has queued
 * ahead of them, so a consumer catching up a backlog (hundreds of MB/s of
 * O_DIRECT reads, none from the page cache) adds that queue to every
 * acknowledgement. The journal thread marks its small group writes (journal
 * and direct records, with their syncs) in flight; while one is, a reader
 * about to read a large record with O_DIRECT starts only if fewer than
 * IO_GATE_READS_DURING_WRITE such reads are in flight, else it waits, for at
 * most wait_us_max (readYieldToJournalUs). Between groups the readers run
 * freely. Reads of small records and from caches never wait.
 *
 * Groups above IO_GATE_GROUP_BYTES_MAX are not marked: the journal is then
 * busy with throughput, not latency (scenario (a): 4-5 MB groups back to
 * back), the reads ahead add little to such a group's own transfer, and a
 * consumer that fell behind the broker's cache needs its share of the disk
 * to catch up. Yielding to them let the producer outrun such a consumer for
 * good (session 19). Measured in
 * docs/performance.md (session 19): under scenario (f) the live publish p50
 * and p99 fell by about a third, the catch-up's rate by about a tenth.
 */
#ifndef QUIRE_STORAGE_BOOKIE_IO_GATE_H
#define QUIRE_STORAGE_BOOKIE_IO_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Large reads that may be in flight while a group write is. Session 19: 2
 * kept most of the catch-up's rate (-9 %) and cut the live p99 by a third,
 * 1 cost a quarter of the rate for the same p99. Session 28 (the journal
 * with O_DIRECT, reads in runs; six pairs of (f) alternating): 1 gave the
 * live producer a p99 of 3.38-4.38 ms against 3.63-10.9 with 2 (medians
 * 3.46, 4.17), p50 -10 %, for 4 % of the catch-up's rate (median 840 MB/s
 * against 877; 15 % when (f) follows (a)-(e) on one server); 0 cost a fifth
 * of the rate (docs/performance.md). */
#define IO_GATE_READS_DURING_WRITE 1
/* Groups of more bytes than this (journal and direct records) do not hold
 * reads back. (f)'s live groups are ~60 KB, (a)'s 4-5 MB. */
#define IO_GATE_GROUP_BYTES_MAX (1u << 20)

typedef struct io_gate {
    atomic_int writes;  /* group writes in flight */
    atomic_int reads;   /* large reads in flight */
    atomic_int waiters; /* readers waiting */
    pthread_mutex_t mu;
    pthread_cond_t cv;                   /* CLOCK_MONOTONIC */
    uint32_t wait_us_max;                /* 0: reads never wait */
    atomic_uint_fast64_t waits, wait_us; /* reads that waited; their time */
    atomic_uint_fast64_t marked;         /* groups marked in flight */
    atomic_uint_fast64_t marked_us;      /* clock_mono_us() of the last one marked */
} io_gate_t;

int io_gate_init(io_gate_t *g, uint32_t wait_us_max);
void io_gate_destroy(io_gate_t *g);
/* The journal thread, around a group's writes and syncs: write_begin marks
 * a group of up to IO_GATE_GROUP_BYTES_MAX in flight and says whether it did;
 * write_end follows a write_begin that did. */
bool io_gate_write_begin(io_gate_t *g, uint64_t bytes);
void io_gate_write_end(io_gate_t *g);
/* A reader thread, around one large read: read_begin returns when the read
 * may start (or after wait_us_max); every read_begin has its read_end. */
void io_gate_read_begin(io_gate_t *g);
void io_gate_read_end(io_gate_t *g);
/* Reads that waited, and their time waiting. */
void io_gate_stats(io_gate_t *g, uint64_t *waits, uint64_t *wait_us);
/* Groups write_begin marked so far. */
uint64_t io_gate_marked(io_gate_t *g);
/* Whether a group is marked in flight or was within the last us microseconds
 * (reads yielding, wait_us_max != 0): the journal is then writing for latency,
 * and large reads are kept small (the bookie's read runs, docs/bookie.md
 * "Reads"). */
bool io_gate_writes_recent(io_gate_t *g, uint64_t us);

#endif
