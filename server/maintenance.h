/*
 * maintenance.h — what the broker enforces on its loaded persistent topics
 * besides serving clients: message TTL and inactive-subscription expiry
 * (expiry.c), backlog quotas (backlog_quota.c), and the periodic sweeps that
 * drive them, a slice of topics per loop iteration (expiry.c, sweep.h). Keys
 * and defaults: delivery_config.h. Private to server/; loop thread only.
 *
 * Every change these make to a subscription goes through its cursor's
 * mark-delete position (ml_cursor_ack_cumulative), exactly as a consumer's
 * cumulative acknowledgement would: it is persisted like one, and entries
 * before it are never dispatched again.
 */
#ifndef QUIRE_SERVER_MAINTENANCE_H
#define QUIRE_SERVER_MAINTENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "server/broker_int.h"

/* Starts the periodic checks (broker_new) / stops them (broker_shutdown). */
void broker_maintenance_start(broker_t *b);
void broker_maintenance_stop(broker_t *b);

/* ------------------------------------------------------------ expiry.c -- */

/* Called with the number of entries expired (0 or more), or rc < 0. */
typedef void (*expiry_done_fn)(int rc, uint64_t expired, void *arg);
/* Acknowledges (moves the mark-delete over) every entry of s published
 * before cutoff_ms, found by binary search on publish_time between the
 * mark-delete position and the last entry (publish times are taken as
 * non-decreasing, as Pulsar's PersistentMessageExpiryMonitor does). cb may
 * be NULL; it runs on the loop, never inline. QE_BUSY if a search on s is
 * already running. */
int expiry_expire_before(subscription_t *s, int64_t cutoff_ms, expiry_done_fn cb, void *arg);
/* The TTL in seconds that applies to t (namespace policy, else the broker
 * default); 0 = none. */
int64_t expiry_topic_ttl_s(topic_t *t);
/* The TTL check of loaded topic t (the maintenance sweep's work). */
void expiry_check_topic(topic_t *t);

/* ----------------------------------------------------- backlog_quota.c -- */

typedef struct backlog_quota_state {
    int64_t limit_size_bytes; /* destination_storage; -1 none */
    int size_policy;          /* BACKLOG_POLICY_* */
    int64_t limit_time_s;     /* message_age; -1 none */
    int time_policy;
    uint64_t backlog_bytes;      /* the slowest durable subscription's estimate */
    int64_t oldest_age_s;        /* of the oldest unacknowledged entry; -1 unknown/none */
    const char *oldest_sub_name; /* borrowed; NULL if unknown */
} backlog_quota_state_t;

/* Fills st for t (synchronous; the age comes from the last check). */
void backlog_quota_state(topic_t *t, backlog_quota_state_t *st);
/* May a producer join t? 0, or -1 with the error for the client
 * (ProducerBlockedQuotaExceededError for producer_request_hold,
 * ProducerBlockedQuotaExceededException for producer_exception). */
int backlog_quota_admit_producer(topic_t *t, pb_error_t *err, const char **why);
/* An entry was added to t: checks the size quota (at most once a second). */
void backlog_quota_on_publish(topic_t *t);
/* The quota check of loaded topic t (the maintenance sweep's work). */
void backlog_quota_check_topic(topic_t *t);
/* Fills the quota fields of an admin topic view (stats, metrics). */
struct broker_admin_topic_view;
void backlog_quota_view(topic_t *t, struct broker_admin_topic_view *v);

#endif
