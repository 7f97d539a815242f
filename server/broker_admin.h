/*
 * broker_admin.h — what the admin HTTP service (admin-http/) needs from the
 * broker: read-only views of loaded topics, producers, subscriptions and
 * consumers for stats and /metrics, and the topic operations of the REST API
 * (create, delete, grow partitions, unload, peek, skip, reset, health check).
 *
 * Views: the visitor functions call fn once per object with a view whose
 * strings and numbers are borrowed for the duration of that call only (they
 * point into broker state). Nothing is retained by the broker for the caller.
 * Counters are the broker's own since the topic was loaded: rates are the
 * caller's business (admin-http samples them).
 *
 * Asynchronous operations call back on the loop thread, never inline, with 0
 * or a negative code: QE_NOT_FOUND (no such topic/subscription), QE_EXISTS,
 * QE_BUSY (the topic has active producers or consumers, or an operation on it
 * is in flight), QE_INVALID, QE_SHUTDOWN. Loop thread only.
 */
#ifndef QUIRE_SERVER_BROKER_ADMIN_H
#define QUIRE_SERVER_BROKER_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/latq.h"
#include "server/broker.h"
#include "server/codec/topic_name.h"
#include "server/partitions.h"
#include "storage/managed/managed_ledger.h"

/* ------------------------------------------------------------------ views -- */

typedef struct broker_admin_topic_view {
    const char *name; /* full name */
    bool persistent;
    int partition;
    uint64_t msg_in, bytes_in, msg_out, bytes_out; /* since loaded */
    int64_t last_publish_ms;
    uint32_t producers;
    size_t subscriptions;
    size_t consumers;
    bool has_ledger; /* persistent and loaded: ml and last_confirmed valid */
    ml_stats_t ml;
    ml_pos_t last_confirmed;
    uint64_t backlog_entries; /* the largest subscription backlog */
    bool dedup_enabled;       /* deduplication in effect (dedup.c) */
    bool terminated;
    /* backlog quotas (backlog_quota.c); limits -1 = none */
    int64_t backlog_quota_limit_size, backlog_quota_limit_time_s;
    uint64_t backlog_size_bytes;  /* the slowest durable subscription's, estimated */
    int64_t oldest_backlog_age_s; /* -1 unknown (not checked yet) */
    uint64_t backlog_evictions_size, backlog_evictions_time;
    /* append histograms: Pulsar's buckets (broker_int.h), counts per bucket */
    const uint64_t *write_latency_buckets; /* TOPIC_LATENCY_BUCKETS = 10 */
    uint64_t write_latency_count;
    double write_latency_sum_ms;
    const uint64_t *entry_size_buckets; /* TOPIC_SIZE_BUCKETS = 9 */
    uint64_t entry_size_count, entry_size_sum;
} broker_admin_topic_view_t;

typedef struct broker_admin_producer_view {
    const char *name;
    uint64_t producer_id;
    int access_mode; /* Pulsar's ProducerAccessMode */
    const char *address;
    const char *client_version;
    int64_t connected_since_ms;
    uint64_t msg_in, bytes_in; /* acknowledged sends since it connected */
    double rate_in;            /* msg/s since the previous stats read (or since connecting) */
    double throughput_in;      /* bytes/s, same window */
} broker_admin_producer_view_t;

typedef struct broker_admin_subscription_view {
    const char *name;
    const char *type; /* "Exclusive", "Shared", "Failover", "Key_Shared" */
    bool durable;
    uint64_t backlog_entries;
    uint64_t unacked_messages; /* sum over consumers */
    uint64_t msg_out, bytes_out;
    size_t consumers;
    bool has_cursor;
    ml_pos_t mark_delete, read_pos;
    /* {"properties": {k: v, ...}, "replicated": bool} (subscription_meta.c), or NULL */
    const char *meta_json;
    uint64_t delayed_messages; /* held until their deliver_at_time (delayed.c) */
    uint64_t msg_expired;      /* by TTL or backlog age eviction since loaded */
    double rate_redeliver;     /* msg/s sent again, since the previous stats read */
    double rate_expired;       /* msg/s expired, since the previous stats read */
    bool blocked_on_unacked;   /* at maxUnackedMessagesPerSubscription */
} broker_admin_subscription_view_t;

typedef struct broker_admin_consumer_view {
    const char *name;
    uint64_t consumer_id;
    int64_t available_permits;
    uint64_t unacked_messages;
    uint64_t msg_out, bytes_out;
    double rate_out, throughput_out; /* msg/s, bytes/s since the previous stats read */
    double rate_redeliver;           /* msg/s sent again, since the previous stats read */
    int64_t avg_msgs_per_entry;
    bool blocked_on_unacked; /* at maxUnackedMessagesPerConsumer */
    const char *address;
    const char *client_version;
    int64_t connected_since_ms;
} broker_admin_consumer_view_t;

typedef struct broker_admin_counts {
    size_t topics, subscriptions, producers, consumers, connections;
    size_t buffer_paused;           /* connections paused by maxMessagePublishBufferSizeInMB */
    uint64_t buffer_pauses;         /* such pauses since start */
    uint64_t pending_publish_bytes; /* appends in flight, all connections */
    uint64_t write_queue_bytes;     /* queued for clients and not yet written, all connections */
    uint64_t socket_writes; /* writes to client sockets since start (frames leave in them) */
    ml_cache_info_t cache;  /* the managed ledgers' entry cache */
    latq_view_t publish_latency; /* SEND to durable append (pulsar_broker_publish_latency) */
    latq_view_t loop_latency;    /* each loop iteration, poll to poll (broker_int.h) */
} broker_admin_counts_t;

/* Traffic counters of a topic (sub NULL) or of one of its subscriptions, now
 * and at the previous broker_admin_traffic_drain (equal: nothing moved).
 * Order: msg_in, bytes_in, msg_out, bytes_out; a subscription's ins are 0. */
typedef struct broker_admin_traffic {
    const char *topic;
    const char *sub;
    uint64_t now[4], before[4];
} broker_admin_traffic_t;

typedef void (*broker_admin_topic_fn)(const broker_admin_topic_view_t *v, void *arg);
typedef void (*broker_admin_traffic_fn)(const broker_admin_traffic_t *v, void *arg);
typedef void (*broker_admin_producer_fn)(const broker_admin_producer_view_t *v, void *arg);
typedef void (*broker_admin_subscription_fn)(const broker_admin_subscription_view_t *v, void *arg);
typedef void (*broker_admin_consumer_fn)(const broker_admin_consumer_view_t *v, void *arg);

void broker_admin_counts(broker_t *b, broker_admin_counts_t *out);
/* The same without the walk over every topic: topics, subscriptions,
 * producers and consumers left 0. */
void broker_admin_counts_no_topics(broker_t *b, broker_admin_counts_t *out);
/* Topics in the broker's map (loaded or loading). */
size_t broker_admin_topics_count(broker_t *b);
/* Every loaded (ready) topic. */
void broker_admin_topics(broker_t *b, broker_admin_topic_fn fn, void *arg);
/* Where a walk in steps is; {0} to begin. */
typedef struct broker_admin_walk {
    size_t pos;
    uint32_t rehashes; /* the topic map's when the walk began */
    bool started;
} broker_admin_walk_t;
typedef enum { BROKER_WALK_MORE, BROKER_WALK_DONE, BROKER_WALK_AGAIN } broker_walk_rc_t;
/* The same walk in steps, for a caller that lets the loop serve its sockets
 * between them (a /metrics scrape of 100,000 topics took the loop for 0.4-2 s
 * in one go): from where *w left off, views for about budget_us (at least one
 * topic). DONE when every topic has been visited. Topics loaded or unloaded
 * between steps may be visited or not. AGAIN (nothing visited) when the topic
 * map rehashed since the walk began: its topics moved, so some were about to
 * be visited twice or missed; the caller drops what it took, and the next step
 * begins again (a scrape would have listed a topic's series twice). */
broker_walk_rc_t broker_admin_topics_step(broker_t *b, broker_admin_walk_t *w, uint32_t budget_us,
                                          broker_admin_topic_fn fn, void *arg);
/* Every topic whose traffic counters moved since the previous call, then each
 * of its subscriptions; then forgets them. O(topics that moved and their
 * subscriptions): a topic whose clients are idle costs nothing. Between two
 * calls a topic not reported kept its counters (or was unloaded: a reloaded
 * topic counts from 0 again, which shows as before < the last values seen). */
void broker_admin_traffic_drain(broker_t *b, broker_admin_traffic_fn fn, void *arg);
/* One loaded topic by full name: 0, or QE_NOT_FOUND when not loaded (fn
 * NULL: only the check). */
int broker_admin_topic(broker_t *b, const char *topic, broker_admin_topic_fn fn, void *arg);
int broker_admin_producers(broker_t *b, const char *topic, broker_admin_producer_fn fn, void *arg);
int broker_admin_subscriptions(broker_t *b, const char *topic, broker_admin_subscription_fn fn,
                               void *arg);
/* sub NULL: the consumers of every subscription. */
int broker_admin_consumers(broker_t *b, const char *topic, const char *sub,
                           broker_admin_consumer_fn fn, void *arg);
/* Ledgers of a loaded persistent topic (oldest first): up to max into out;
 * *count the number that exist. */
int broker_admin_ledgers(broker_t *b, const char *topic, ml_ledger_info_t *out, size_t max,
                         size_t *count);
/* The individually acknowledged ranges of a subscription's cursor, as text. */
int broker_admin_cursor_ranges(broker_t *b, const char *topic, const char *sub, char *buf,
                               size_t len);

/* -------------------------------------------------------------- operations -- */

/* Loads topic (a full name) if it exists (create: also if it does not and
 * auto-creation allows), then cb. */
int broker_admin_topic_load(broker_t *b, const char *topic, bool create, broker_done_rc_cb cb,
                            void *arg);
/* Registers a non-partitioned topic: QE_EXISTS if it, or a partitioned topic
 * of that name, exists. */
int broker_admin_topic_create(broker_t *b, const topic_name_t *tn, broker_done_rc_cb cb, void *arg);
/* Deletes a non-partitioned topic (or one partition): its data, cursors and
 * registry key. A loaded topic is unloaded first; QE_BUSY if it has
 * producers or consumers (force: not yet supported, same answer). */
int broker_admin_topic_delete(broker_t *b, const topic_name_t *tn, bool force, broker_done_rc_cb cb,
                              void *arg);
/* Grows a partitioned topic to n partitions: QE_NOT_FOUND if it is not
 * partitioned, QE_INVALID if n is not larger (Pulsar answers 422). */
int broker_admin_partitions_update(broker_t *b, const topic_name_t *tn, int n, broker_done_rc_cb cb,
                                   void *arg);
/* Deletes a partitioned topic: every partition (as broker_admin_topic_delete),
 * then its metadata. */
int broker_admin_partitioned_delete(broker_t *b, const topic_name_t *tn, bool force,
                                    broker_done_rc_cb cb, void *arg);
/* Partitioned topics of namespace "tenant/ns" in one domain (full names). */
int broker_admin_partitioned_list(broker_t *b, const char *ns, topic_domain_t domain,
                                  broker_topics_cb cb, void *arg);
/* Closes a loaded topic's cursors and managed ledger and forgets it (the next
 * use loads it again). QE_BUSY with producers, consumers or operations in
 * flight; 0 at once when it is not loaded. */
int broker_admin_topic_unload(broker_t *b, const char *topic, broker_done_rc_cb cb, void *arg);

/* Terminates a loaded persistent topic (termination.h): once the appends in
 * flight are durable, cb gets the last message id (also when it was already
 * terminated). QE_NOT_FOUND when not loaded, QE_INVALID for non-persistent. */
typedef void (*broker_terminate_cb)(int rc, ml_pos_t last, void *arg);
int broker_admin_topic_terminate(broker_t *b, const char *topic, broker_terminate_cb cb, void *arg);

/* A message read back for peek/examine: borrowed for the callback. */
typedef struct broker_admin_message {
    ml_pos_t pos;
    const uint8_t *payload; /* after the metadata (as stored: maybe compressed/batched) */
    size_t payload_len;
    int64_t publish_time_ms;
    int32_t num_messages; /* in a batch; 1 otherwise */
    const char *const *property_keys, *const *property_values;
    size_t properties;
    const char *producer_name;
    uint64_t sequence_id;
} broker_admin_message_t;
typedef void (*broker_admin_message_cb)(int rc, const broker_admin_message_t *m, void *arg);
/* (server/ only) One stored entry handed to cb as a broker_admin_message_t,
 * valid during the call. 0, or the metadata parse error (cb not called). */
int broker_admin_deliver_entry(const ml_entry_t *e, broker_admin_message_cb cb, void *arg);

/* The n-th (1-based) unacknowledged entry of subscription sub: QE_NOT_FOUND
 * past the end (n bounded by 10000). */
int broker_admin_peek(broker_t *b, const char *topic, const char *sub, int n,
                      broker_admin_message_cb cb, void *arg);
/* Skips n entries (n < 0: all) of a subscription by acknowledging them. */
int broker_admin_skip(broker_t *b, const char *topic, const char *sub, int64_t n,
                      broker_done_rc_cb cb, void *arg);
/* Resets a subscription's cursor to pos (the next entry read). */
int broker_admin_reset_cursor(broker_t *b, const char *topic, const char *sub, ml_pos_t pos,
                              broker_done_rc_cb cb, void *arg);
/* Creates a durable subscription at pos (ML_POS_LATEST / ML_POS_EARLIEST),
 * QE_EXISTS if it exists. */
int broker_admin_subscription_create(broker_t *b, const char *topic, const char *sub, ml_pos_t pos,
                                     broker_done_rc_cb cb, void *arg);
/* Deletes a subscription without consumers (QE_BUSY with consumers). */
int broker_admin_subscription_delete(broker_t *b, const char *topic, const char *sub,
                                     broker_done_rc_cb cb, void *arg);

/* Health: writes an entry to the broker's heartbeat topic
 * persistent://pulsar/<advertisedAddress>:<webServicePort>/healthcheck and
 * reads it back from storage; 0 when both worked. web_port: the admin's. */
int broker_admin_health_check(broker_t *b, int web_port, broker_done_rc_cb cb, void *arg);

/* ------------------------------------------- finding messages (broker_admin_msgs.c) -- */

/* The entry at pos of a loaded persistent topic: QE_NOT_FOUND outside the
 * readable range. */
int broker_admin_read_message(broker_t *b, const char *topic, ml_pos_t pos,
                              broker_admin_message_cb cb, void *arg);
/* The n-th (1-based) readable entry from the earliest, or from the latest
 * (n = 1: the last one); n past the count is clamped, as Pulsar does.
 * QE_NO_ENTRY when the topic has no entry. */
int broker_admin_examine(broker_t *b, const char *topic, bool from_latest, int64_t n,
                         broker_admin_message_cb cb, void *arg);
/* Binary search on publish time: the first readable entry published at or
 * after ts_ms (inclusive), or after ts_ms (!inclusive); ML_POS_LATEST when
 * there is none. */
typedef void (*broker_admin_pos_cb)(int rc, ml_pos_t pos, void *arg);
int broker_admin_find_by_time(broker_t *b, const char *topic, int64_t ts_ms, bool inclusive,
                              broker_admin_pos_cb cb, void *arg);
/* Resets subscription sub to the first entry published after ts_ms (the end
 * when none), as Pulsar's resetcursor/{timestamp}. */
int broker_admin_reset_cursor_time(broker_t *b, const char *topic, const char *sub, int64_t ts_ms,
                                   broker_done_rc_cb cb, void *arg);
/* Acknowledges the entries of subscription sub (NULL: of every subscription)
 * published more than secs seconds ago (Pulsar's expireMessages). QE_BUSY
 * when an expiry of that subscription is already running. */
int broker_admin_expire(broker_t *b, const char *topic, const char *sub, int64_t secs,
                        broker_done_rc_cb cb, void *arg);

/* ------------------------------------------------ compaction (compaction.c) -- */

/* Pulsar's LongRunningProcessStatus of a topic's last compaction. */
enum {
    BROKER_COMPACTION_NOT_RUN = 0,
    BROKER_COMPACTION_RUNNING = 1,
    BROKER_COMPACTION_SUCCESS = 2,
    BROKER_COMPACTION_ERROR = 3,
};
/* Starts compacting a loaded persistent topic (cb-less: poll the status).
 * QE_NOT_FOUND not loaded, QE_INVALID non-persistent, QE_EXISTS already
 * running, QE_BUSY its compacted view is still loading (retry). */
int broker_admin_compaction_trigger(broker_t *b, const char *topic);
/* The last run's status and error text ("" when none) of a loaded topic. */
int broker_admin_compaction_status(broker_t *b, const char *topic, int *status, char *err,
                                   size_t err_len);
/* The compacted ledger (-1 when never compacted), horizon and entries. */
int broker_admin_compaction_info(broker_t *b, const char *topic, int64_t *ledger_id,
                                 ml_pos_t *horizon, uint64_t *entries);

#endif
