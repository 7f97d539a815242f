/*
 * delivery_config.c — loads the keys listed in delivery_config.h.
 */
#include "server/delivery_config.h"

#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "server/ns_policies.h"

typedef struct int_key {
    const char *key;
    int64_t def, min, max;
} int_key_t;

static const int_key_t keys[] = {
    {"delayedDeliveryTickTimeMillis", 1000, 1, 3600 * 1000},
    {"quireDelayedDeliveryMaxIndexedMessages", 10000000, 1000, 1000000000},
    {"messageExpiryCheckIntervalInMinutes", 5, 1, 24 * 60},
    {"quireMessageExpiryCheckIntervalSeconds", 0, 0, 24 * 3600},
    {"ttlDurationDefaultInSeconds", 0, 0, INT32_MAX},
    {"subscriptionExpirationTimeMinutes", 0, 0, INT32_MAX},
    {"subscriptionExpiryCheckIntervalInMinutes", 5, 1, 24 * 60},
    {"quireSubscriptionExpiryCheckIntervalSeconds", 0, 0, 24 * 3600},
    {"backlogQuotaCheckIntervalInSeconds", 60, 1, 24 * 3600},
    {"backlogQuotaDefaultLimitBytes", -1, -1, INT64_MAX},
    {"backlogQuotaDefaultLimitSecond", -1, -1, INT32_MAX},
    {"quireSubscriptionExpirationTimeSeconds", 0, 0, INT32_MAX},
};

int broker_delivery_config_load(const qconfig_t *q, broker_delivery_config_t *out, char *err,
                                size_t err_len)
{
    int64_t v[sizeof keys / sizeof keys[0]];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (qconfig_get_int(q, keys[i].key, keys[i].def, keys[i].min, keys[i].max, &v[i]) < 0) {
            snprintf(err, err_len, "%s: expected a whole number in [%lld, %lld], got '%s'",
                     keys[i].key, (long long)keys[i].min, (long long)keys[i].max,
                     qconfig_get(q, keys[i].key, ""));
            return QE_INVALID;
        }
    }
    memset(out, 0, sizeof *out);
    out->delayed_bucket_ms = (uint32_t)v[0];
    out->delayed_max = (uint64_t)v[1];
    out->expiry_check_s = v[3] > 0 ? (uint32_t)v[3] : (uint32_t)v[2] * 60;
    out->ttl_default_s = v[4];
    out->sub_expiration_s = v[11] > 0 ? v[11] : v[5] * 60;
    out->sub_expiry_check_s = v[7] > 0 ? (uint32_t)v[7] : (uint32_t)v[6] * 60;
    out->quota_check_s = (uint32_t)v[8];
    out->quota_default_bytes = v[9];
    out->quota_default_s = v[10];
    const char *bools[] = {"delayedDeliveryEnabled", "backlogQuotaCheckEnabled"};
    bool *dst[] = {&out->delayed_enabled, &out->quota_check_enabled};
    for (size_t i = 0; i < 2; i++) {
        if (qconfig_get_bool(q, bools[i], true, dst[i]) < 0) {
            snprintf(err, err_len, "%s: expected true or false, got '%s'", bools[i],
                     qconfig_get(q, bools[i], ""));
            return QE_INVALID;
        }
    }
    const char *pol = qconfig_get(q, "backlogQuotaDefaultRetentionPolicy", "producer_request_hold");
    if (strcmp(pol, "producer_request_hold") == 0)
        out->quota_default_policy = BACKLOG_POLICY_PRODUCER_REQUEST_HOLD;
    else if (strcmp(pol, "producer_exception") == 0)
        out->quota_default_policy = BACKLOG_POLICY_PRODUCER_EXCEPTION;
    else if (strcmp(pol, "consumer_backlog_eviction") == 0)
        out->quota_default_policy = BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION;
    else {
        snprintf(err, err_len,
                 "backlogQuotaDefaultRetentionPolicy: expected producer_request_hold, "
                 "producer_exception or consumer_backlog_eviction, got '%s'",
                 pol);
        return QE_INVALID;
    }
    return 0;
}
