/*
 * delayed.h — delayed delivery: a subscription's index of entries whose
 * deliver_at_time (MessageMetadata, absolute ms; the clients' deliverAfter /
 * deliverAt) lies in the future.
 *
 * Only Shared and Key_Shared subscriptions hold entries back (Exclusive and
 * Failover ignore deliver_at_time, as Pulsar does). When the dispatcher reads
 * such an entry it calls delayed_hold() instead of sending it; a timer (and
 * every dispatch) calls delayed_release_due(), which moves the entries whose
 * time has come into the subscription's replay set, in position order. An
 * entry is never released before its deliver_at_time (no look-ahead tick).
 *
 * Persistence: nothing is written. A held entry stays unacknowledged in the
 * cursor, so after a restart (or a crash) the dispatcher reads it again from
 * the mark-delete position and indexes it again with the same absolute time:
 * nothing is lost and nothing is released early.
 *
 * The index itself is a delay_queue_t (delay_queue.h, no broker types).
 * Memory: 16 bytes per held entry (packed position, ms offset in its bucket,
 * Key_Shared hash slot) in per-bucket arrays (bucket width
 * delayedDeliveryTickTimeMillis), plus 32 bytes per bucket and array slack
 * (at most a quarter plus 4 items per bucket): about 18.4 bytes per entry for
 * a million entries over an hour (tests/unit/delayed). At
 * quireDelayedDeliveryMaxIndexedMessages held entries the dispatcher stops
 * reading new entries (back-pressure) until some are released. Loop thread
 * only.
 */
#ifndef QUIRE_SERVER_DELAYED_H
#define QUIRE_SERVER_DELAYED_H

#include <stdbool.h>
#include <stdint.h>

#include "server/broker_int.h"

/* Holds the entry at pos in s's index if s is Shared/Key_Shared, delayed
 * delivery is enabled and deliver_at_ms is in the future. Returns true if
 * held (the caller must not send it). key_hash: Key_Shared slot 0..65535. */
bool delayed_hold(subscription_t *s, ml_pos_t pos, int64_t deliver_at_ms, uint32_t key_hash);
/* Moves due entries into the replay set (bounded per call); re-arms the
 * timer for the next one. */
void delayed_release_due(subscription_t *s);
/* True when the index is full: do not read new entries. */
bool delayed_full(const subscription_t *s);
/* Entries held now (stats: msgDelayed). */
uint64_t delayed_count(const subscription_t *s);
/* Drops held entries the cursor has acknowledged (expiry, eviction). */
void delayed_trim(subscription_t *s);
/* Forgets every held entry (seek/reset: the cursor re-reads them). */
void delayed_clear(subscription_t *s);
/* Frees the index and stops its timer (subscription_free). */
void delayed_free(subscription_t *s);

#endif
