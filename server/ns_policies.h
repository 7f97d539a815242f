/*
 * ns_policies.h — the broker's view of namespace policies.
 *
 * The admin API stores each namespace's Policies document (Pulsar's JSON) at
 * /admin/policies/<tenant>/<ns> (docs/admin-api.md). The broker keeps a parsed
 * copy per namespace, loaded on first use and kept current by a metadata
 * watch: when the document changes, it is re-read and every loaded topic of
 * the namespace gets topic_policies_changed(), so a policy set through REST
 * takes effect on live topics at once.
 *
 * Absent fields mean "not set" (the broker-wide default applies); the
 * has_* flags say which are set. Loop thread only.
 */
#ifndef QUIRE_SERVER_NS_POLICIES_H
#define QUIRE_SERVER_NS_POLICIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/broker.h"

/* backlog quota policies, as Pulsar names them */
enum {
    BACKLOG_POLICY_PRODUCER_REQUEST_HOLD = 0,
    BACKLOG_POLICY_PRODUCER_EXCEPTION = 1,
    BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION = 2,
};

typedef struct ns_backlog_quota {
    bool set;
    int64_t limit_size_bytes; /* destination_storage; -1 = none */
    int64_t limit_time_s;     /* message_age; -1 = none */
    int policy;               /* BACKLOG_POLICY_* */
} ns_backlog_quota_t;

typedef struct ns_rate {
    bool set;
    int64_t msgs_per_period;  /* -1 or 0 = unlimited */
    int64_t bytes_per_period; /* -1 or 0 = unlimited */
    int64_t period_s;         /* ratePeriodInSecond (1 for publish rates) */
    bool relative_to_publish_rate;
} ns_rate_t;

/* Permission actions of a grant (auth_policies), see authz.h. */
enum {
    NS_AUTH_PRODUCE = 1,
    NS_AUTH_CONSUME = 2,
    NS_AUTH_FUNCTIONS = 4,
    NS_AUTH_SOURCES = 8,
    NS_AUTH_SINKS = 16,
    NS_AUTH_PACKAGES = 32
};

typedef struct ns_policies {
    bool loaded; /* false: the document was not read yet (or does not exist) */
    bool has_retention;
    int64_t retention_time_min; /* -1 unbounded */
    int64_t retention_size_mb;  /* -1 unbounded */
    bool has_message_ttl;
    int64_t message_ttl_s;
    int deduplication; /* -1 unset, 0 off, 1 on */
    ns_backlog_quota_t backlog_storage;
    ns_backlog_quota_t backlog_age;
    ns_rate_t publish_rate;  /* this cluster's entry of publishMaxMessageRate */
    ns_rate_t dispatch_rate; /* topicDispatchRate */
    ns_rate_t subscription_dispatch_rate;
    int64_t max_producers_per_topic;               /* -1 unset, 0 unlimited */
    int64_t max_consumers_per_topic;               /* -1 unset */
    int64_t max_consumers_per_subscription;        /* -1 unset */
    int64_t max_unacked_messages_per_consumer;     /* -1 unset */
    int64_t max_unacked_messages_per_subscription; /* -1 unset */
    int64_t max_topics_per_namespace;              /* -1 unset */
    int64_t subscription_expiration_min;           /* -1 unset (expiry.c) */
    int64_t compaction_threshold;                  /* bytes; -1 unset, 0 off (compaction.c) */
    char schema_compatibility_strategy[48];        /* "" = unset */
    int allow_auto_update_schema;                  /* is_allow_auto_update_schema: 1 (default), 0 */
    int schema_validation_enforced;                /* schema_validation_enforced: 0 (default), 1 */
    /* subscription_auth_mode "Prefix": a role that is neither superuser nor
     * tenant admin consumes only through subscriptions whose names start
     * with the role (authz.c); "None" (default): any name. */
    bool subscription_auth_prefix;
    /* auth_policies (namespace_auth, destination_auth,
     * subscription_auth_roles), read by authz.c: a reference owned by the
     * cache entry (ns_policies_release), NULL when absent. */
    struct json_t *auth;
} ns_policies_t;

/* The cached policies of namespace "tenant/ns" (defaults while not loaded;
 * never NULL). Starts loading and watching it on first use. */
const ns_policies_t *broker_ns_policies(broker_t *b, const char *ns);

typedef void (*ns_policies_cb)(int rc, const ns_policies_t *p, void *arg);
/* Loads the namespace's policies if not loaded, then cb (never inline). */
int broker_ns_policies_load(broker_t *b, const char *ns, ns_policies_cb cb, void *arg);

/* Parses a Policies document (JSON text) for this cluster. 0 or QE_CORRUPT.
 * out->auth holds a reference: ns_policies_release() drops it. */
int ns_policies_parse(const char *json, size_t len, const char *cluster, ns_policies_t *out);
void ns_policies_defaults(ns_policies_t *p);

void ns_policies_release(ns_policies_t *p);

/* Keeps the document's auth_policies in out->auth (authz.c). */
struct json_t;
void ns_policies_parse_auth(const struct json_t *doc, ns_policies_t *out);

/* Frees the cache (broker_free). */
void broker_ns_policies_free(broker_t *b);

#endif
