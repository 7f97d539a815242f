/*
 * dedup.h — message deduplication, private to server/ (Pulsar's
 * MessageDeduplication): what producer.c, topic.c and broker.c call.
 *
 * Keyed by producer name and sequence id. For each producer name a topic
 * tracks two numbers: `pushed`, the highest sequence id appended (not yet
 * durable, maybe), and `persisted`, the highest one durable. A SEND whose
 * (lowest) sequence id is
 *   > pushed                 is new: appended, pushed := its highest id;
 *   <= persisted             is a duplicate already stored: SEND_RECEIPT with
 *                            message id (-1,-1), not stored;
 *   in (persisted, pushed]   is in doubt (the copy in flight may still fail):
 *                            SEND_ERROR PersistenceError, so the client
 *                            reconnects and resends it.
 * A failed append resets pushed to persisted for every name.
 *
 * Durability: a snapshot {position P, name -> persisted} is written to the
 * metadata store (DEDUP_MD_ROOT + managed-ledger name) every
 * brokerDeduplicationEntriesInterval entries, every
 * brokerDeduplicationSnapshotIntervalSeconds if anything changed, and when the
 * topic closes. Loading a topic with deduplication on reads the snapshot and
 * replays the log after P (producer_name, sequence_id and highest_sequence_id
 * of each entry's metadata) before the topic is ready, so a crash loses
 * nothing. The managed-ledger property DEDUP_PROP_MARKER says that the
 * snapshot key belongs to this managed ledger (it is set after the first
 * snapshot is durable); without it a leftover key of a deleted topic of the
 * same name is ignored. Disabling deduplication drops the state, the marker
 * and the key.
 *
 * Bounds: at most brokerDeduplicationMaxNumberOfProducers names per topic;
 * past it the least recently used name without a connected producer is
 * forgotten (its next message is accepted as new).
 *
 * Loop thread only.
 */
#ifndef QUIRE_SERVER_DEDUP_H
#define QUIRE_SERVER_DEDUP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "server/broker_int.h"

#define DEDUP_MD_ROOT "/quire/dedup-snapshots/"
#define DEDUP_PROP_MARKER "quire.dedup.snapshot"

struct ns_policies;

/* Reads the brokerDeduplication* keys into cfg. 0, or QE_INVALID with err. */
int dedup_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len);

/* Topic load, once its managed ledger is open: recovers the state when
 * deduplication is on (snapshot + replay). Returns 1 when there is nothing to
 * wait for (the caller finishes the load), or 0 when done(t, 0) will be
 * called later, on the loop. */
int dedup_topic_load(topic_t *t, void (*done)(topic_t *t, int rc));
/* The namespace policies changed: turns deduplication on or off. */
void dedup_policies_changed(topic_t *t, const struct ns_policies *p);
/* Topic close (unload, shutdown): writes a last snapshot and frees the state. */
void dedup_topic_close(topic_t *t);
bool dedup_is_enabled(const topic_t *t);

/* PRODUCER_SUCCESS.last_sequence_id for name: -1 when unknown or disabled. */
int64_t dedup_last_sequence_id(topic_t *t, const char *name);

/* producer.c, SEND on a persistent topic. Answers the SEND itself and returns
 * 1 for a duplicate, a SEND in doubt, or a terminated topic; else returns 0,
 * counts the append as pending (broker_send_released undoes it) and sets
 * *dedup_name (owned by the caller; NULL when deduplication is off). */
int broker_send_gate(conn_t *c, producer_t *p, const Pulsar__Proto__CommandSend *cmd,
                     const uint8_t *stored, size_t stored_len, char **dedup_name);
/* The append of a gated SEND is durable at pos. */
void broker_send_persisted(topic_t *t, const char *dedup_name, uint64_t highest, ml_pos_t pos);
/* The append of a gated SEND failed. */
void broker_send_failed(topic_t *t);
/* A gated SEND is finished (after persisted/failed, or refused); frees dedup_name. */
void broker_send_released(topic_t *t, char *dedup_name);

#endif
