/*
 * broker.h — the broker: Pulsar's binary protocol served over the managed
 * ledgers of storage/.
 *
 * The broker owns, on one libev loop thread: the listening socket, the client
 * connections, the topics (loaded on first use, each over one managed ledger),
 * their producers and subscriptions. main wires it: it opens the metadata
 * store and the managed-ledger factory, then broker_new + broker_listen.
 * admin-http reads and changes broker state only through the functions this
 * header (and the headers it names) export.
 */
#ifndef QUIRE_SERVER_BROKER_H
#define QUIRE_SERVER_BROKER_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "storage/managed/managed_ledger.h"
#include "server/broker_limits.h"
#include "server/delivery_config.h"
#include "storage/metadata/metadata.h"

typedef struct broker broker_t;

typedef struct broker_config {
    char bind_address[128];               /* bindAddress (127.0.0.1 in standalone) */
    char advertised_address[128];         /* advertisedAddress: host given to clients in lookups */
    int broker_service_port;              /* brokerServicePort (6650) */
    int web_service_port;                 /* webServicePort (8080) */
    char cluster_name[128];               /* clusterName (standalone) */
    bool allow_auto_topic_creation;       /* allowAutoTopicCreation (true) */
    bool auto_topic_creation_partitioned; /* allowAutoTopicCreationType=partitioned */
    int default_num_partitions;           /* defaultNumPartitions (1) */
    uint32_t max_message_size;            /* maxMessageSize (5 MiB) */
    uint32_t keep_alive_interval_s;       /* keepAliveIntervalSeconds (30) */
    uint32_t max_connections;             /* brokerMaxConnections (0 = 10000) */
    uint32_t max_pending_publish_bytes;   /* per connection before reads pause (32 MiB) */
    uint64_t max_publish_buffer_bytes;    /* maxMessagePublishBufferSizeInMB, all connections
                                             (128 MiB; 0 = no bound) */
    uint32_t dispatcher_max_read_batch;   /* dispatcherMaxReadBatchSize (100) */
    uint32_t dispatcher_max_read_bytes;   /* dispatcherMaxReadSizeBytes (5 MiB) */
    uint32_t read_failure_backoff_ms;     /* dispatcherReadFailureBackoffInitialTimeInMs (15 s) */
    uint32_t read_failure_backoff_max_ms; /* dispatcherReadFailureBackoffMaxTimeInMs (60 s) */
    uint32_t stats_window_s; /* statsUpdateFrequencyInSecs (60): latency summaries' window */
    ml_config_t ml;                       /* managedLedger* keys */
    int64_t default_retention_time_min;   /* defaultRetentionTimeInMinutes (0) */
    int64_t default_retention_size_mb;    /* defaultRetentionSizeInMB (0) */
    broker_limits_config_t limits;        /* rate limits and quotas (limits.h) */
    broker_delivery_config_t delivery;    /* delayed delivery, TTL, backlog quotas */
    bool dedup_enabled;                   /* brokerDeduplicationEnabled (false) */
    uint32_t dedup_max_producers;         /* brokerDeduplicationMaxNumberOfProducers (10000) */
    uint32_t dedup_entries_interval;      /* brokerDeduplicationEntriesInterval (1000) */
    uint32_t dedup_snapshot_interval_s;   /* brokerDeduplicationSnapshotIntervalSeconds (120) */
    int64_t compaction_threshold_bytes;   /* brokerServiceCompactionThresholdInBytes (0 = off) */
    uint32_t compaction_monitor_s;        /* brokerServiceCompactionMonitorIntervalInSeconds (60) */
} broker_config_t;

/* Fills cfg from Pulsar-named keys of q (defaults for absent ones). A malformed
 * value: negative return and "key: reason" in err. */
int broker_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len);

/* md and mlf are borrowed and must outlive the broker. */
int broker_new(struct ev_loop *loop, const broker_config_t *cfg, md_store_t *md, ml_factory_t *mlf,
               broker_t **out);
/* Binds and listens on bind_address:broker_service_port (port 0 picks one). */
int broker_listen(broker_t *b);
int broker_port(const broker_t *b);
/* Bytes written to clients since start (messages, receipts, answers). */
uint64_t broker_bytes_written(const broker_t *b);
typedef void (*broker_done_cb)(void *arg);
/* Stops accepting, closes every connection, closes every topic's managed
 * ledger and cursors (so the next start needs no recovery), then calls cb. */
void broker_shutdown(broker_t *b, broker_done_cb cb, void *arg);
void broker_free(broker_t *b);

const broker_config_t *broker_config(const broker_t *b);

#endif
