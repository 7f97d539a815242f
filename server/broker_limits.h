/*
 * broker_limits.h — multi-tenant rate limits and quotas: the broker-wide defaults
 * (Pulsar's broker.conf keys) and the topic-count quota check the admin API
 * shares with topic auto-creation. The enforcement itself (publish and
 * dispatch throttling, producer/consumer/unacked limits) is private to the
 * broker: server/limits_int.h, server/limits.c; docs/broker.md, "Rate limits
 * and quotas", describes it.
 *
 * Values: 0 means "no limit" everywhere, as in Pulsar. A namespace policy,
 * when set, replaces the broker default (and its 0 means no limit too).
 */
#ifndef QUIRE_SERVER_BROKER_LIMITS_H
#define QUIRE_SERVER_BROKER_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "server/codec/topic_name.h"
#include "storage/metadata/metadata.h"

typedef struct broker_limits_config {
    int64_t publish_rate_msgs;         /* maxPublishRatePerTopicInMessages (0) */
    int64_t publish_rate_bytes;        /* maxPublishRatePerTopicInBytes (0) */
    int64_t dispatch_rate_topic_msgs;  /* dispatchThrottlingRatePerTopicInMsg (0) */
    int64_t dispatch_rate_topic_bytes; /* dispatchThrottlingRatePerTopicInByte (0) */
    int64_t dispatch_rate_sub_msgs;    /* dispatchThrottlingRatePerSubscriptionInMsg (0) */
    int64_t dispatch_rate_sub_bytes;   /* dispatchThrottlingRatePerSubscriptionInByte (0) */
    bool dispatch_relative_to_publish; /* dispatchThrottlingRateRelativeToPublishRate */
    int64_t max_producers_per_topic;   /* maxProducersPerTopic (0) */
    int64_t max_consumers_per_topic;   /* maxConsumersPerTopic (0) */
    int64_t max_consumers_per_sub;     /* maxConsumersPerSubscription (0) */
    int64_t max_unacked_per_consumer;  /* maxUnackedMessagesPerConsumer (50000) */
    int64_t max_unacked_per_sub;       /* maxUnackedMessagesPerSubscription (200000) */
    int64_t max_topics_per_namespace;  /* maxTopicsPerNamespace (0) */
} broker_limits_config_t;

/* Fills out from Pulsar-named keys of q (defaults for absent ones). A
 * malformed value: QE_INVALID and "key: reason" in err. */
int broker_limits_config_load(const qconfig_t *q, broker_limits_config_t *out, char *err,
                              size_t err_len);

struct broker;
/* Creates the metadata key `path` (value borrowed, MD_VERSION_NEW) for
 * `new_topics` new topics of tn's namespace, after checking the namespace's
 * topic quota (max_topics_per_namespace policy, else maxTopicsPerNamespace):
 * when the registered persistent topics plus new_topics would exceed it, cb
 * gets QE_TOO_LARGE and nothing is written (Pulsar: 412 "Exceed maximum
 * number of topics in namespace." / NotAllowedError). cb on the loop, never
 * inline; a negative return means cb will not be called. */
int broker_topic_quota_put(struct broker *b, const topic_name_t *tn, int new_topics,
                           const char *path, const void *value, size_t len, md_put_cb cb,
                           void *arg);

/* The same for one topic that may already be registered (auto-creation on
 * first use): cb gets QE_EXISTS when it is. Without a topic quota this is the
 * write alone; with one, the key is read first, so that a topic that exists is
 * never refused for the quota. */
int broker_topic_register(struct broker *b, const topic_name_t *tn, const char *path,
                          const void *value, size_t len, md_put_cb cb, void *arg);

#define BROKER_TOPIC_QUOTA_REASON "Exceed maximum number of topics in namespace."

#endif
