/*
 * compaction_acks.h — acknowledgements of compacted-view entries that a
 * subscription's cursor cannot hold (compaction.c).
 *
 * A read_compacted subscription that starts at the topic's first entry is
 * given the compacted view from its beginning, including entries of ledgers
 * trimmed since the compaction. Those positions lie before the cursor's
 * mark-delete position, so the cursor counts them as acknowledged and drops
 * acknowledgements of them; this set remembers, per position, whether the
 * consumers acknowledged it wholly or which batch indexes are still to be
 * acknowledged. It lives in memory with the subscription (compaction.c moves
 * the cursor's mark-delete position once the view is acknowledged, which is
 * what survives a restart).
 *
 * State per position, in Pulsar's ack_set convention (java.util.BitSet words,
 * bit i set = batch index i still unacknowledged):
 *   absent          nothing acknowledged
 *   bits            part of a batch acknowledged; acknowledging ANDs, and
 *                   an all-zero result acknowledges the entry
 *   acknowledged    wholly (also every position <= the cumulative bound)
 * cacks_prerecord() starts an entry's bits as its retained messages, so the
 * messages compaction removed count as acknowledged from the start.
 *
 * Pure data: no topic, no I/O. Bounded by CACKS_ENTRIES_MAX positions
 * (QE_BUSY past it: the acknowledgement is not recorded, the entry will be
 * delivered again, never lost).
 */
#ifndef QUIRE_SERVER_COMPACTION_ACKS_H
#define QUIRE_SERVER_COMPACTION_ACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/managed/managed_ledger.h"

#define CACKS_ENTRIES_MAX (1u << 22)

typedef struct cacks cacks_t;

/* A new empty set (NULL when out of memory); cacks_free(NULL) is a no-op. */
cacks_t *cacks_new(void);
void cacks_free(cacks_t *a);
/* Forgets everything (the cursor was reset). */
void cacks_clear(cacks_t *a);
/* Positions with a state (acknowledged or partial), not counting the
 * cumulative bound. */
size_t cacks_size(const cacks_t *a);

/* pos, a compacted batch, has its messages other than `retained` (words,
 * bit i set = message i kept by compaction) acknowledged. No-op when pos
 * already has a state. 0, QE_BUSY, -ENOMEM. The words are copied. */
int cacks_prerecord(cacks_t *a, ml_pos_t pos, const uint64_t *retained, size_t words);
/* An acknowledgement of pos: ack_set NULL (or all zero words) for the whole
 * entry, else the words of batch indexes still unacknowledged, ANDed with
 * what is recorded (words past the end count as zero). Returns 1 when pos is
 * now wholly acknowledged, 0 when part of it is not, QE_BUSY or -ENOMEM. */
int cacks_ack(cacks_t *a, ml_pos_t pos, const uint64_t *ack_set, size_t words);
/* Every position <= pos is acknowledged. */
void cacks_ack_cumulative(cacks_t *a, ml_pos_t pos);

bool cacks_is_acked(const cacks_t *a, ml_pos_t pos);
/* The recorded still-unacknowledged words of a partly acknowledged pos
 * (borrowed: valid until the next change of pos), or NULL with *words 0. */
const uint64_t *cacks_bits(const cacks_t *a, ml_pos_t pos, size_t *words);

#endif
