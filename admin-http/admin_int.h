/*
 * admin_int.h — private to admin-http/: the admin service object, the
 * per-request context every handler works on, and the answer helpers.
 *
 * Request life: admin_dispatch() matches the route and allocates one
 * admin_req_t; the handler (and the storage callbacks it chains) own it
 * until one admin_reply_*() call answers the exchange and frees it. The
 * service counts requests in flight; admin_service_stop() frees the service
 * only once the last one has answered (storage callbacks may still arrive
 * while the process stops: they see a->stopping and answer 503 without
 * touching the broker).
 */
#ifndef QUIRE_ADMIN_INT_H
#define QUIRE_ADMIN_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "admin-http/admin_service.h"
#include "admin-http/http_router.h"
#include "admin-http/http_server.h"
#include "common/config.h"
#include "server/broker.h"
#include "server/codec/topic_name.h"
#include "storage/metadata/metadata.h"

#define ADMIN_PATH_MAX (3 * TOPIC_NAME_MAX + 128)
#define ADMIN_CAS_RETRIES 8

typedef struct admin_metrics admin_metrics_t;
typedef struct admin_req admin_req_t;
typedef void (*admin_handler_fn)(admin_req_t *req);

struct admin_service {
    struct ev_loop *loop;
    const qconfig_t *conf;
    bool metrics_topic_level; /* exposeTopicLevelMetricsInPrometheus */
    broker_t *broker;
    md_store_t *md;
    http_server_t *http;
    http_server_t *https; /* webServicePortTls (http_auth.c), NULL when unset */
    char web_url_tls[192];
    admin_metrics_t *metrics;
    char cluster[128];
    char web_url[192];
    int web_port;
    uint32_t in_flight;
    bool stopping;
    int64_t started_ms;
    admin_bookie_stats_fn bookie_stats; /* the process's bookie (standalone), or NULL */
    void *bookie_stats_arg;
};

typedef struct admin_route {
    http_route_t route; /* first: the router's view */
    admin_handler_fn fn;
    const char *arg; /* a constant the handler reads (policy endpoint, domain) */
} admin_route_t;

/* A JSON document read-modify-written with compare-and-set. */
typedef int (*admin_mutate_fn)(admin_req_t *req, json_t *doc, char *reason, size_t cap);

struct admin_req {
    admin_service_t *a;
    http_exchange_t *ex;
    const admin_route_t *route;
    http_route_params_t params;
    /* scratch for the handler's chain of callbacks */
    char path[ADMIN_PATH_MAX];
    json_t *body; /* parsed request body (owned), or NULL */
    json_t *doc;  /* a document being built (owned) */
    admin_mutate_fn mutate;
    admin_handler_fn next; /* the step after a topic is loaded */
    int ok_status;
    int not_found_status;
    const char *not_found_reason;
    int retries;
    int pending;
    int rc;
    int n;
    bool flag;
    int64_t i64;                     /* a number from the path or query (admin_messages.c) */
    const char *partitioned_refusal; /* 405 reason when the topic is partitioned */
    topic_name_t tn;
    char role[256]; /* the authenticated role (http_auth.c); "" without authentication */
};

/* ----------------------------------------------------------------- replies -- */

/* Each ends the request: answers and frees req. */
void admin_reply_json(admin_req_t *req, int status, json_t *j /* stolen */);
void admin_reply_error(admin_req_t *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void admin_reply_empty(admin_req_t *req, int status);
void admin_reply_raw(admin_req_t *req, int status, const char *content_type, char *body /* taken */,
                     size_t len);
/* An error answer for a Quire error code (what names the object). */
void admin_reply_rc(admin_req_t *req, int rc, const char *what);
/* true (after answering 503) when the service is stopping. */
bool admin_req_stopping(admin_req_t *req);
/* The common head of a metadata-store callback: true when rc is 0 and the
 * service runs; otherwise the request is answered (503 stopping, 404 with
 * missing, or admin_reply_rc naming what) and false. */
bool admin_md_ok(admin_req_t *req, int rc, const char *missing, const char *what);

/* ----------------------------------------------------------------- helpers -- */

const char *admin_param(const admin_req_t *req, const char *name);
/* Parses the body as JSON (any value) into req->body: 0, or answers 400 and
 * returns -1. An empty body is JSON null when allow_empty, else 400. */
int admin_parse_body(admin_req_t *req, bool allow_empty);
/* Read-modify-write of the JSON document at req->path with fn, retried on a
 * lost compare-and-set; answers ok_status (204/200) or the error. */
void admin_doc_update(admin_req_t *req, admin_mutate_fn fn, int ok_status);
/* Checks that namespace {tenant}/{namespace} exists (404 otherwise), then
 * calls next. */
void admin_require_namespace(admin_req_t *req, admin_handler_fn next);

/* http_auth.c: authentication and authorization of every route, https */
/* Authenticates req (401), authorizes its route (401/403), then runs it. */
void admin_authorize(admin_req_t *req);
/* Listens on webServicePortTls when configured (0 otherwise); stops. */
int admin_https_start(admin_service_t *a);
void admin_https_stop(admin_service_t *a);

/* --------------------------------------------------------------- handlers -- */

/* admin_resources.c: clusters, tenants, namespaces and their policies */
void admin_clusters_list(admin_req_t *req);
void admin_cluster_get(admin_req_t *req);
void admin_cluster_put(admin_req_t *req);
void admin_cluster_delete(admin_req_t *req);
void admin_tenants_list(admin_req_t *req);
void admin_tenant_get(admin_req_t *req);
void admin_tenant_put(admin_req_t *req);
void admin_tenant_post(admin_req_t *req);
void admin_tenant_delete(admin_req_t *req);
void admin_namespaces_list(admin_req_t *req);
void admin_namespace_get(admin_req_t *req);
void admin_namespace_put(admin_req_t *req);
void admin_namespace_delete(admin_req_t *req);
void admin_policy_get_h(admin_req_t *req);
void admin_policy_set_h(admin_req_t *req);
void admin_policy_delete_h(admin_req_t *req);
void admin_backlog_quota_map(admin_req_t *req);
void admin_permissions_get(admin_req_t *req);
void admin_permission_grant(admin_req_t *req);
void admin_permission_revoke(admin_req_t *req);
/* Creates cluster, tenants public/pulsar and namespaces public/default,
 * pulsar/system when missing (start-up). */
void admin_bootstrap(admin_service_t *a);

/* admin_topics.c: topics, partitioned topics, stats, lookup */
void admin_topics_list(admin_req_t *req);
void admin_partitioned_list(admin_req_t *req);
void admin_namespace_topics(admin_req_t *req);
void admin_topic_create(admin_req_t *req);
void admin_topic_delete(admin_req_t *req);
void admin_partitions_create(admin_req_t *req);
void admin_partitions_update(admin_req_t *req);
void admin_partitions_get(admin_req_t *req);
void admin_partitions_delete(admin_req_t *req);
void admin_topic_stats(admin_req_t *req);
void admin_topic_internal_stats(admin_req_t *req);
void admin_partitioned_stats(admin_req_t *req);
void admin_topic_subscriptions(admin_req_t *req);
void admin_topic_unload(admin_req_t *req);
void admin_topic_terminate(admin_req_t *req);
void admin_compaction_get(admin_req_t *req);
void admin_compaction_put(admin_req_t *req);
void admin_subscription_create(admin_req_t *req);
void admin_subscription_delete(admin_req_t *req);
void admin_subscription_skip(admin_req_t *req);
void admin_subscription_reset(admin_req_t *req);
void admin_subscription_peek(admin_req_t *req);
void admin_last_message_id(admin_req_t *req);
void admin_lookup(admin_req_t *req);

/* admin_permissions.c: topic grants (destination_auth) and subscription
 * roles (subscription_auth_roles) */
void admin_topic_permissions_get(admin_req_t *req);
void admin_topic_permission_grant(admin_req_t *req);
void admin_topic_permission_revoke(admin_req_t *req);
void admin_subscription_permissions_get(admin_req_t *req);
void admin_subscription_permission_grant(admin_req_t *req);
void admin_subscription_permission_revoke(admin_req_t *req);

/* admin_schemas.c: the schema registry (/admin/v2/schemas/...) */
void admin_schema_get(admin_req_t *req);
void admin_schemas_get_all(admin_req_t *req);
void admin_schema_post(admin_req_t *req);
void admin_schema_delete(admin_req_t *req);
void admin_schema_compatibility(admin_req_t *req);
void admin_schema_version(admin_req_t *req);

/* For the other topic files: parses the route's topic into req->tn (false:
 * answered 412); loads req->tn if it exists (404 otherwise), then next; a
 * broker_admin_message_cb answering a message as peek does (req = arg). */
bool admin_req_topic(admin_req_t *req);
void admin_with_loaded_topic(admin_req_t *req, admin_handler_fn next);
struct broker_admin_message;
void admin_reply_message(int rc, const struct broker_admin_message *m, void *arg);

/* admin_messages.c: finding messages (by id, position, publish time), reset
 * by time, expiry */
void admin_subscription_reset_time(admin_req_t *req);
void admin_subscription_expire(admin_req_t *req);
void admin_expire_all_subscriptions(admin_req_t *req);
void admin_examine_message(admin_req_t *req);
void admin_message_id_by_time(admin_req_t *req);
void admin_message_by_id(admin_req_t *req);

/* admin_brokers.c: brokers, health, version, configuration, metrics */
void admin_brokers_list(admin_req_t *req);
void admin_broker_leader(admin_req_t *req);
void admin_broker_ready(admin_req_t *req);
void admin_broker_health(admin_req_t *req);
void admin_broker_version(admin_req_t *req);
void admin_broker_config(admin_req_t *req);
void admin_metrics_get(admin_req_t *req);

/* admin_metrics.c: the 1-second sampler of counters, and the exposition */
admin_metrics_t *admin_metrics_new(admin_service_t *a);
void admin_metrics_free(admin_metrics_t *m);
/* The time a scrape's snapshot takes per step (tests: 0 = one topic a step). */
void admin_metrics_set_step_us(admin_metrics_t *m, uint32_t us);
/* Rates over the sampler's window (per second); 0 for unknown names. */
void admin_metrics_topic_rates(admin_metrics_t *m, const char *topic, double *msg_in,
                               double *bytes_in, double *msg_out, double *bytes_out);
void admin_metrics_sub_rates(admin_metrics_t *m, const char *topic, const char *sub,
                             double *msg_out, double *bytes_out);
/* The Prometheus text (version 0.0.4) of the broker now: malloc'd, *len. */
/* Answers a GET /metrics: the snapshot is taken now, on the loop; the text is
 * rendered on the metrics thread and the answer given from the loop (inline
 * when that thread is missing or has scrapes queued). */
void admin_metrics_serve(admin_metrics_t *m, admin_req_t *req);

#endif
