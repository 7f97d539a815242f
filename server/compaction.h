/*
 * compaction.h — topic compaction (Pulsar's TwoPhaseCompactor and
 * CompactedTopic): the broker-internal hooks. The REST side is in
 * broker_admin.h (broker_admin_compaction_*).
 *
 * A compaction of topic t reads its compacted view so far (the previous
 * compacted ledger) and then t's entries after the previous horizon up to the
 * last entry when it starts (the new horizon), keeps the latest message of
 * each key and writes the survivors into a new ledger of their own, each
 * compacted entry carrying its original position. The managed-ledger
 * property COMPACTION_PROPERTY then names the new ledger and horizon; the old
 * compacted ledger is deleted once no read uses it. The durable cursor
 * "__compaction" is moved to the horizon so retention may trim what the
 * compacted ledger now holds.
 *
 * Subscriptions whose consumer asked read_compacted (Exclusive and Failover,
 * as Pulsar) read the compacted ledger up to the horizon, then the topic's
 * entries after it: the dispatcher asks compaction_covers() before each read
 * and reads through compaction_cursor_read() / compaction_replay_read().
 * Loop thread only.
 */
#ifndef QUIRE_SERVER_COMPACTION_H
#define QUIRE_SERVER_COMPACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "server/broker_int.h"

/* "<compacted ledger id>:<horizon ledger id>:<horizon entry id>" */
#define COMPACTION_PROPERTY "quire.compactedTopic"
/* The durable cursor that holds the entries not compacted yet (Pulsar's name). */
#define COMPACTION_CURSOR "__compaction"

/* brokerServiceCompactionThresholdInBytes (0: no automatic compaction) and
 * brokerServiceCompactionMonitorIntervalInSeconds (60) into cfg. */
int compaction_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len);

/* topic.c: the managed ledger is open (reads the property, loads the
 * compacted view's index) / the topic is being freed. */
void compaction_topic_load(topic_t *t);
void compaction_topic_free(topic_t *t);
/* The automatic-compaction check of loaded topic t (the broker's maintenance
 * sweep, every brokerServiceCompactionMonitorIntervalInSeconds). */
void compaction_check_topic(topic_t *t);

/* consumer.c SUBSCRIBE on persistent topic t: NULL when allowed, else the
 * reason to refuse it with NotAllowedError (read_compacted on a Shared or
 * Key_Shared subscription, as Pulsar's PersistentTopic.subscribe). */
const char *compaction_subscribe_refusal(const topic_t *t, bool read_compacted, int sub_type);
/* consumer.c: a consumer joined s; read_compacted as its SUBSCRIBE asked. */
void compaction_sub_attach(subscription_t *s, bool read_compacted);
/* dispatcher.c subscription_replay_clear: s's cursor was reset (SEEK,
 * resetcursor); its compacted reads start again from the cursor. */
void compaction_sub_reset(subscription_t *s);
/* dispatcher.c subscription_free. */
void compaction_sub_free(subscription_t *s);

/* consumer.c, before an acknowledgement of pos (ack_set: the words still
 * unacknowledged, NULL for the whole entry; cumulative: everything <= pos)
 * reaches the cursor. Entries of the compacted view in trimmed ledgers lie
 * before the cursor, which cannot hold their acknowledgements; s records
 * them itself. Returns 1 when pos stays partly unacknowledged (the consumer
 * keeps it), else 0 (the usual path follows). */
int compaction_ack(subscription_t *s, ml_pos_t pos, const uint64_t *ack_set, size_t words,
                   bool cumulative);
/* consumer.c, after acknowledgements of s: once the view's first entries up
 * to some entry (or all of it) are acknowledged, the cursor's mark-delete
 * position moves to that entry (or to the horizon) over the entries
 * compaction removed, where a ledger still holds it. That is what makes the
 * progress through the view durable. */
void compaction_acked(subscription_t *s);

/* dispatcher.c. compaction_covers: the next new entries of s come from the
 * compacted view. compaction_cursor_read: reads them (cb(rc, entries, n, s)
 * with the entries' original positions), 0 when started, 1 when nothing can
 * be read now (the view is loading: s is dispatched again when it is ready),
 * or a negative error. compaction_replay_read: reads the head run of s's
 * replay set, from the compacted ledger for positions within the horizon,
 * else from the managed ledger (same returns). */
bool compaction_covers(subscription_t *s);
int compaction_cursor_read(subscription_t *s, size_t max_entries, ml_read_cb cb);
int compaction_replay_read(subscription_t *s, size_t max_entries, size_t max_bytes, ml_read_cb cb);
/* True when pos, which the cursor of s counts as acknowledged (it lies in a
 * trimmed ledger), is still to be delivered from the compacted view: s reads
 * the view from its beginning and no consumer acknowledged pos wholly. */
bool compaction_entry_pending(const subscription_t *s, ml_pos_t pos);
/* The ack_set to send with entry e: the cursor's (ack_set, *words) ANDed with
 * the messages a compacted batch retained (any batch size; the result is
 * owned by s and valid until the next call). Returns ack_set unchanged for
 * other entries. For a durable subscription the compacted-out messages are
 * recorded as acknowledged (in the cursor's batch-index bitset of e, when it
 * has none yet), so acknowledging every message delivered completes e. */
const uint64_t *compaction_ack_set(subscription_t *s, const ml_entry_t *e, const uint64_t *ack_set,
                                   size_t *words);

/* seek.c GET_LAST_MESSAGE_ID: for a read_compacted subscription with nothing
 * after the horizon, the last message of the compacted view (pos (-1,-1)
 * when it is empty). False when the usual answer applies. */
bool compaction_last_message_id(const subscription_t *s, ml_pos_t *pos, int32_t *batch_index);

#endif
