/*
 * delivery_config.h — the broker keys of delayed delivery, message TTL,
 * subscription expiry and backlog quotas (server/delayed.c, expiry.c,
 * backlog_quota.c). Pulsar's key names and defaults; the few keys named
 * quire* exist only in Quire (seconds granularity, for tests and small
 * deployments) and override the Pulsar key they name.
 *
 *   key                                          default     field
 *   delayedDeliveryEnabled                       true        delayed_enabled
 *   delayedDeliveryTickTimeMillis                1000        delayed_bucket_ms (index bucket width)
 *   quireDelayedDeliveryMaxIndexedMessages       10000000    delayed_max (per subscription)
 *   messageExpiryCheckIntervalInMinutes          5           expiry_check_s (x 60)
 *   quireMessageExpiryCheckIntervalSeconds       0 (unset)   expiry_check_s
 *   ttlDurationDefaultInSeconds                  0 (none)    ttl_default_s
 *   subscriptionExpirationTimeMinutes            0 (never)   sub_expiration_s (x 60)
 *   quireSubscriptionExpirationTimeSeconds       0 (unset)   sub_expiration_s
 *   subscriptionExpiryCheckIntervalInMinutes     5           sub_expiry_check_s (x 60)
 *   quireSubscriptionExpiryCheckIntervalSeconds  0 (unset)   sub_expiry_check_s
 *   backlogQuotaCheckEnabled                     true        quota_check_enabled
 *   backlogQuotaCheckIntervalInSeconds           60          quota_check_s
 *   backlogQuotaDefaultLimitBytes                -1 (none)   quota_default_bytes
 *   backlogQuotaDefaultLimitSecond               -1 (none)   quota_default_s
 *   backlogQuotaDefaultRetentionPolicy  producer_request_hold quota_default_policy
 */
#ifndef QUIRE_SERVER_DELIVERY_CONFIG_H
#define QUIRE_SERVER_DELIVERY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

typedef struct broker_delivery_config {
    bool delayed_enabled;
    uint32_t delayed_bucket_ms;
    uint64_t delayed_max;
    uint32_t expiry_check_s;
    int64_t ttl_default_s;
    int64_t sub_expiration_s;
    uint32_t sub_expiry_check_s;
    bool quota_check_enabled;
    uint32_t quota_check_s;
    int64_t quota_default_bytes;
    int64_t quota_default_s;
    int quota_default_policy; /* BACKLOG_POLICY_* (ns_policies.h) */
} broker_delivery_config_t;

/* Fills out from q (defaults for absent keys). A malformed value: QE_INVALID
 * and "key: reason" in err. */
int broker_delivery_config_load(const qconfig_t *q, broker_delivery_config_t *out, char *err,
                                size_t err_len);

#endif
