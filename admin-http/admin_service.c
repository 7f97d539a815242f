/*
 * admin_service.c — the admin HTTP service: lifecycle, the one route table,
 * request dispatch, answers, and the helpers every handler shares
 * (compare-and-set document updates, namespace checks).
 *
 * The route table is the whole REST surface: each line is method + pattern
 * -> handler (admin_int.h); docs/admin-api.md lists the same routes. Every
 * {tenant}, {namespace}, {cluster} and topic parameter is validated before it
 * becomes part of a metadata path (a decoded "%2F" must never reach
 * another key).
 */
#include "admin-http/admin_service.h"

#include <errno.h>
#include <http_parser.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"

/* ------------------------------------------------------------ route table -- */

#define NS "/admin/v2/namespaces/{tenant}/{namespace}"
#define SCHEMAS "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
#define POLICY_ROUTES(ep)                                                                          \
    {{HTTP_GET, NS "/" ep}, admin_policy_get_h, ep},                                               \
        {{HTTP_POST, NS "/" ep}, admin_policy_set_h, ep},                                          \
        {{HTTP_PUT, NS "/" ep}, admin_policy_set_h, ep},                                           \
    {                                                                                              \
        {HTTP_DELETE, NS "/" ep}, admin_policy_delete_h, ep                                        \
    }

#define TOPIC_ROUTES(d)                                                                            \
    {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}"}, admin_topics_list, d},                    \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/partitioned"},                           \
         admin_partitioned_list,                                                                   \
         d},                                                                                       \
        {{HTTP_PUT, "/admin/v2/" d "/{tenant}/{namespace}/{topic}"}, admin_topic_create, d},       \
        {{HTTP_DELETE, "/admin/v2/" d "/{tenant}/{namespace}/{topic}"}, admin_topic_delete, d},    \
        {{HTTP_PUT, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/partitions"},                    \
         admin_partitions_create,                                                                  \
         d},                                                                                       \
        {{HTTP_POST, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/partitions"},                   \
         admin_partitions_update,                                                                  \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/partitions"},                    \
         admin_partitions_get,                                                                     \
         d},                                                                                       \
        {{HTTP_DELETE, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/partitions"},                 \
         admin_partitions_delete,                                                                  \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/stats"}, admin_topic_stats, d},  \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/internalStats"},                 \
         admin_topic_internal_stats,                                                               \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/partitioned-stats"},             \
         admin_partitioned_stats,                                                                  \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscriptions"},                 \
         admin_topic_subscriptions,                                                                \
         d},                                                                                       \
        {{HTTP_PUT, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/unload"},                        \
         admin_topic_unload,                                                                       \
         d},                                                                                       \
        {{HTTP_POST, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/terminate"},                    \
         admin_topic_terminate,                                                                    \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/compaction"},                    \
         admin_compaction_get,                                                                     \
         d},                                                                                       \
        {{HTTP_PUT, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/compaction"},                    \
         admin_compaction_put,                                                                     \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/lastMessageId"},                 \
         admin_last_message_id,                                                                    \
         d},                                                                                       \
        {{HTTP_PUT, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}"},   \
         admin_subscription_create,                                                                \
         d},                                                                                       \
        {{HTTP_DELETE,                                                                             \
          "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}"},             \
         admin_subscription_delete,                                                                \
         d},                                                                                       \
        {{HTTP_POST,                                                                               \
          "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}/skip_all"},    \
         admin_subscription_skip,                                                                  \
         d},                                                                                       \
        {{HTTP_POST,                                                                               \
          "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}/skip/{n}"},    \
         admin_subscription_skip,                                                                  \
         d},                                                                                       \
        {{HTTP_POST,                                                                               \
          "/admin/v2/" d                                                                           \
          "/{tenant}/{namespace}/{topic}/subscription/{subscription}/resetcursor/{ts}"},           \
         admin_subscription_reset,                                                                 \
         d},                                                                                       \
        {{HTTP_POST,                                                                               \
          "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}/resetcursor"}, \
         admin_subscription_reset,                                                                 \
         d},                                                                                       \
        {{HTTP_POST, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}"    \
                     "/expireMessages/{seconds}"},                                                 \
         admin_subscription_expire,                                                                \
         d},                                                                                       \
        {{HTTP_POST, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/all_subscription"               \
                     "/expireMessages/{seconds}"},                                                 \
         admin_expire_all_subscriptions,                                                           \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/permissions"},                   \
         admin_topic_permissions_get,                                                              \
         d},                                                                                       \
        {{HTTP_POST, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/permissions/{role}"},           \
         admin_topic_permission_grant,                                                             \
         d},                                                                                       \
        {{HTTP_DELETE, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/permissions/{role}"},         \
         admin_topic_permission_revoke,                                                            \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/examinemessage"},                \
         admin_examine_message,                                                                    \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/messageid/{ts}"},                \
         admin_message_id_by_time,                                                                 \
         d},                                                                                       \
        {{HTTP_GET, "/admin/v2/" d "/{tenant}/{namespace}/{topic}/ledger/{ledgerId}"               \
                    "/entry/{entryId}"},                                                           \
         admin_message_by_id,                                                                      \
         d},                                                                                       \
    {                                                                                              \
        {HTTP_GET,                                                                                 \
         "/admin/v2/" d "/{tenant}/{namespace}/{topic}/subscription/{subscription}/position/{n}"}, \
            admin_subscription_peek, d                                                             \
    }

static const admin_route_t admin_routes[] = {
    /* clusters */
    {{HTTP_GET, "/admin/v2/clusters"}, admin_clusters_list, NULL},
    {{HTTP_GET, "/admin/v2/clusters/{cluster}"}, admin_cluster_get, NULL},
    {{HTTP_PUT, "/admin/v2/clusters/{cluster}"}, admin_cluster_put, "create"},
    {{HTTP_POST, "/admin/v2/clusters/{cluster}"}, admin_cluster_put, "update"},
    {{HTTP_DELETE, "/admin/v2/clusters/{cluster}"}, admin_cluster_delete, NULL},
    /* tenants */
    {{HTTP_GET, "/admin/v2/tenants"}, admin_tenants_list, NULL},
    {{HTTP_GET, "/admin/v2/tenants/{tenant}"}, admin_tenant_get, NULL},
    {{HTTP_PUT, "/admin/v2/tenants/{tenant}"}, admin_tenant_put, NULL},
    {{HTTP_POST, "/admin/v2/tenants/{tenant}"}, admin_tenant_post, NULL},
    {{HTTP_DELETE, "/admin/v2/tenants/{tenant}"}, admin_tenant_delete, NULL},
    /* namespaces */
    {{HTTP_GET, "/admin/v2/namespaces/{tenant}"}, admin_namespaces_list, NULL},
    {{HTTP_GET, NS}, admin_namespace_get, NULL},
    {{HTTP_PUT, NS}, admin_namespace_put, NULL},
    {{HTTP_DELETE, NS}, admin_namespace_delete, NULL},
    {{HTTP_GET, NS "/topics"}, admin_namespace_topics, NULL},
    POLICY_ROUTES("retention"),
    POLICY_ROUTES("messageTTL"),
    POLICY_ROUTES("subscriptionExpirationTime"),
    POLICY_ROUTES("deduplication"),
    POLICY_ROUTES("backlogQuota"),
    POLICY_ROUTES("publishRate"),
    POLICY_ROUTES("dispatchRate"),
    POLICY_ROUTES("subscriptionDispatchRate"),
    POLICY_ROUTES("maxProducersPerTopic"),
    POLICY_ROUTES("maxConsumersPerTopic"),
    POLICY_ROUTES("maxConsumersPerSubscription"),
    POLICY_ROUTES("maxUnackedMessagesPerConsumer"),
    POLICY_ROUTES("maxUnackedMessagesPerSubscription"),
    POLICY_ROUTES("maxTopicsPerNamespace"),
    POLICY_ROUTES("schemaCompatibilityStrategy"),
    POLICY_ROUTES("isAllowAutoUpdateSchema"),
    POLICY_ROUTES("schemaValidationEnforced"),
    /* Pulsar has no DELETE for it: POST "None" turns it off */
    {{HTTP_GET, NS "/subscriptionAuthMode"}, admin_policy_get_h, "subscriptionAuthMode"},
    {{HTTP_POST, NS "/subscriptionAuthMode"}, admin_policy_set_h, "subscriptionAuthMode"},
    POLICY_ROUTES("offloadThreshold"),
    POLICY_ROUTES("offloadPolicies"),
    POLICY_ROUTES("compactionThreshold"),
    {{HTTP_DELETE, NS "/removeOffloadPolicies"}, admin_policy_delete_h, "offloadPolicies"},
    {{HTTP_GET, NS "/backlogQuotaMap"}, admin_backlog_quota_map, NULL},
    {{HTTP_GET, NS "/permissions"}, admin_permissions_get, NULL},
    {{HTTP_POST, NS "/permissions/{role}"}, admin_permission_grant, NULL},
    {{HTTP_DELETE, NS "/permissions/{role}"}, admin_permission_revoke, NULL},
    {{HTTP_GET, NS "/permissions/subscription"}, admin_subscription_permissions_get, NULL},
    {{HTTP_POST, NS "/permissions/subscription/{subscription}"},
     admin_subscription_permission_grant,
     NULL},
    {{HTTP_DELETE, NS "/permissions/{subscription}/{role}"},
     admin_subscription_permission_revoke,
     NULL},
    /* topics */
    TOPIC_ROUTES("persistent"),
    TOPIC_ROUTES("non-persistent"),
    /* lookup */
    {{HTTP_GET, "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}"}, admin_lookup, NULL},
    /* schemas (admin_schemas.c) */
    {{HTTP_GET, SCHEMAS "/schema"}, admin_schema_get, NULL},
    {{HTTP_GET, SCHEMAS "/schema/{version}"}, admin_schema_get, NULL},
    {{HTTP_GET, SCHEMAS "/schemas"}, admin_schemas_get_all, NULL},
    {{HTTP_POST, SCHEMAS "/schema"}, admin_schema_post, NULL},
    {{HTTP_DELETE, SCHEMAS "/schema"}, admin_schema_delete, NULL},
    {{HTTP_POST, SCHEMAS "/compatibility"}, admin_schema_compatibility, NULL},
    {{HTTP_POST, SCHEMAS "/version"}, admin_schema_version, NULL},
    /* brokers */
    {{HTTP_GET, "/admin/v2/brokers/{cluster}"}, admin_brokers_list, NULL},
    {{HTTP_GET, "/admin/v2/brokers/leaderBroker"}, admin_broker_leader, NULL},
    {{HTTP_GET, "/admin/v2/brokers/ready"}, admin_broker_ready, NULL},
    {{HTTP_GET, "/admin/v2/brokers/health"}, admin_broker_health, NULL},
    {{HTTP_GET, "/admin/v2/brokers/version"}, admin_broker_version, NULL},
    {{HTTP_GET, "/admin/v2/brokers/configuration/runtime"}, admin_broker_config, "runtime"},
    {{HTTP_GET, "/admin/v2/brokers/configuration/values"}, admin_broker_config, "values"},
    {{HTTP_GET, "/admin/v2/brokers/configuration"}, admin_broker_config, "names"},
    /* metrics */
    {{HTTP_GET, "/metrics"}, admin_metrics_get, NULL},
};

#define ADMIN_ROUTES_COUNT (sizeof admin_routes / sizeof admin_routes[0])

/* ---------------------------------------------------------------- replies -- */

static void admin_maybe_free(admin_service_t *a)
{
    if (a->stopping && a->in_flight == 0)
        free(a);
}

static void req_free(admin_req_t *req)
{
    admin_service_t *a = req->a;
    http_route_params_free(&req->params);
    json_decref(req->body);
    json_decref(req->doc);
    free(req);
    a->in_flight--;
    admin_maybe_free(a);
}

void admin_reply_raw(admin_req_t *req, int status, const char *content_type, char *body, size_t len)
{
    http_respond_take(req->ex, status, content_type, body, len);
    req_free(req);
}

void admin_reply_json(admin_req_t *req, int status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!s) {
        admin_reply_error(req, 500, "Out of memory");
        return;
    }
    admin_reply_raw(req, status, "application/json", s, strlen(s));
}

void admin_reply_empty(admin_req_t *req, int status)
{
    admin_reply_raw(req, status, NULL, NULL, 0);
}

void admin_reply_error(admin_req_t *req, int status, const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    log_level_t level = status >= 500 ? LOG_WARN : LOG_INFO;
    LOG_AT(level, "admin", "%s: %s %.200s refused: %d %s", http_request_peer(req->ex),
           http_request_method_name(req->ex), http_request_url(req->ex), status, reason);
    json_t *j = json_pack("{ss}", "reason", reason);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    admin_reply_raw(req, status, "application/json", s, s ? strlen(s) : 0);
}

void admin_reply_rc(admin_req_t *req, int rc, const char *what)
{
    switch (rc) {
    case QE_NOT_FOUND:
        admin_reply_error(req, 404, "%s not found", what);
        return;
    case QE_EXISTS:
        admin_reply_error(req, 409, "%s already exists", what);
        return;
    case QE_INVALID:
        admin_reply_error(req, 400, "Invalid argument for %s", what);
        return;
    case QE_BAD_VERSION:
        admin_reply_error(req, 409, "Concurrent modification of %s", what);
        return;
    case QE_NOT_EMPTY:
        admin_reply_error(req, 409, "%s is not empty", what);
        return;
    case QE_TOO_LARGE:
        admin_reply_error(req, 413, "%s: too large", what);
        return;
    case QE_BUSY:
    case QE_SHUTDOWN:
    case QE_UNAVAILABLE:
    case QE_TIMEOUT:
        admin_reply_error(req, 503, "%s: %s", what, q_strerror(rc));
        return;
    default:
        admin_reply_error(req, 500, "%s: %s", what, q_strerror(rc));
    }
}

bool admin_req_stopping(admin_req_t *req)
{
    if (!req->a->stopping)
        return false;
    admin_reply_error(req, 503, "The service is stopping");
    return true;
}

bool admin_md_ok(admin_req_t *req, int rc, const char *missing, const char *what)
{
    if (admin_req_stopping(req))
        return false;
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, 404, "%s", missing);
        return false;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, what);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- helpers -- */

const char *admin_param(const admin_req_t *req, const char *name)
{
    const char *v = http_route_param(&req->params, name);
    return v ? v : "";
}

int admin_parse_body(admin_req_t *req, bool allow_empty)
{
    size_t len;
    const char *body = http_request_body(req->ex, &len);
    char reason[256];
    int rc = admin_json_parse(body, len, allow_empty, &req->body, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return -1;
    }
    return 0;
}

static void doc_update_get(int rc, const void *value, size_t len, const md_stat_t *st, void *arg);

static void doc_update_put(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    admin_req_t *req = arg;
    if (rc == QE_BAD_VERSION && req->retries++ < ADMIN_CAS_RETRIES && !req->a->stopping) {
        rc = md_get(req->a->md, req->path, doc_update_get, req);
        if (rc == 0)
            return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->path);
        return;
    }
    admin_reply_empty(req, req->ok_status);
}

static void doc_update_get(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, req->not_found_status ? req->not_found_status : 404, "%s",
                          req->not_found_reason ? req->not_found_reason : "Not found");
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->path);
        return;
    }
    json_error_t err;
    json_t *doc = json_loadb(value, len, 0, &err);
    if (!json_is_object(doc)) {
        json_decref(doc);
        admin_reply_error(req, 500, "Stored document %s is not a JSON object", req->path);
        return;
    }
    char reason[512] = "";
    rc = req->mutate(req, doc, reason, sizeof reason);
    if (rc < 0) {
        json_decref(doc);
        admin_reply_error(req, -rc, "%s", reason[0] ? reason : "Refused");
        return;
    }
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!s) {
        admin_reply_error(req, 500, "Out of memory");
        return;
    }
    rc = md_put(req->a->md, req->path, s, strlen(s), st->version, NULL, doc_update_put, req);
    free(s);
    if (rc < 0)
        admin_reply_rc(req, rc, req->path);
}

void admin_doc_update(admin_req_t *req, admin_mutate_fn fn, int ok_status)
{
    req->mutate = fn;
    req->ok_status = ok_status;
    int rc = md_get(req->a->md, req->path, doc_update_get, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->path);
}

typedef struct ns_check {
    admin_req_t *req;
    admin_handler_fn next;
} ns_check_t;

static void ns_checked(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    ns_check_t *nc = arg;
    admin_req_t *req = nc->req;
    admin_handler_fn next = nc->next;
    free(nc);
    if (admin_md_ok(req, rc, "Namespace does not exist", "namespace"))
        next(req);
}

void admin_require_namespace(admin_req_t *req, admin_handler_fn next)
{
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace");
    if (!admin_name_valid(t) || !admin_name_valid(ns)) {
        admin_reply_error(req, 412, "Namespace name is not valid");
        return;
    }
    char path[ADMIN_PATH_MAX];
    snprintf(path, sizeof path, "/admin/policies/%s/%s", t, ns);
    ns_check_t *nc = malloc(sizeof *nc);
    if (!nc) {
        admin_reply_error(req, 503, "Out of memory");
        return;
    }
    *nc = (ns_check_t){req, next};
    int rc = md_get(req->a->md, path, ns_checked, nc);
    if (rc < 0) {
        free(nc);
        admin_reply_rc(req, rc, "namespace");
    }
}

/* --------------------------------------------------------------- dispatch -- */

static void admin_dispatch(http_exchange_t *ex, void *arg)
{
    admin_service_t *a = arg;
    admin_req_t *req = calloc(1, sizeof *req);
    if (!req) {
        http_respond(ex, 503, "application/json", "{\"reason\":\"Out of memory\"}", 26);
        return;
    }
    req->a = a;
    req->ex = ex;
    a->in_flight++;
    if (a->stopping) {
        admin_reply_error(req, 503, "The service is stopping");
        return;
    }
    int method = http_request_method(ex);
    if (method == HTTP_HEAD)
        method = HTTP_GET;
    int idx = http_route_find(admin_routes, ADMIN_ROUTES_COUNT, sizeof admin_routes[0], method,
                              http_request_url(ex), &req->params);
    if (idx < 0) {
        int status = -idx;
        admin_reply_error(req, status, "HTTP %d %s", status, http_status_text(status));
        return;
    }
    req->route = &admin_routes[idx];
    admin_authorize(req); /* http_auth.c: 401/403, or req->route->fn(req) */
}

/* -------------------------------------------------------------- lifecycle -- */

static void admin_http_config(const qconfig_t *conf, http_server_config_t *cfg)
{
    http_server_config_defaults(cfg);
    int64_t v;
    if (qconfig_get_int(conf, "httpMaxRequestSize", (int64_t)cfg->body_bytes_max, 1024,
                        (int64_t)1 << 30, &v) == 0)
        cfg->body_bytes_max = (size_t)v;
    if (qconfig_get_int(conf, "httpRequestTimeoutSeconds", 30, 1, 3600, &v) == 0)
        cfg->request_timeout_s = (double)v;
    if (qconfig_get_int(conf, "httpMaxConnections", cfg->connections_max, 1, 1000000, &v) == 0)
        cfg->connections_max = (uint32_t)v;
}

int admin_service_start(struct ev_loop *loop, const qconfig_t *conf, broker_t *broker,
                        md_store_t *md, const http_server_config_t *http_cfg, admin_service_t **out)
{
    const broker_config_t *bc = broker_config(broker);
    admin_service_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->loop = loop;
    a->conf = conf;
    a->broker = broker;
    a->md = md;
    a->started_ms = clock_wall_ms();
    snprintf(a->cluster, sizeof a->cluster, "%s", bc->cluster_name);
    if (qconfig_get_bool(conf, "exposeTopicLevelMetricsInPrometheus", true,
                         &a->metrics_topic_level) < 0) {
        log_error("admin", "exposeTopicLevelMetricsInPrometheus: expected true or false");
        free(a);
        return QE_INVALID;
    }
    http_server_config_t cfg;
    if (http_cfg)
        cfg = *http_cfg;
    else
        admin_http_config(conf, &cfg);
    int rc = http_server_new(loop, &cfg, admin_dispatch, a, &a->http);
    if (rc == 0)
        rc = http_server_listen(a->http, bc->bind_address, bc->web_service_port);
    if (rc < 0) {
        http_server_free(a->http);
        free(a);
        return rc;
    }
    a->web_port = http_server_port(a->http);
    snprintf(a->web_url, sizeof a->web_url, "http://%s:%d", bc->advertised_address, a->web_port);
    a->metrics = admin_metrics_new(a);
    if (!a->metrics) {
        http_server_free(a->http);
        free(a);
        return -ENOMEM;
    }
    rc = admin_https_start(a); /* http_auth.c: webServicePortTls */
    if (rc < 0) {
        admin_metrics_free(a->metrics);
        http_server_free(a->http);
        free(a);
        return rc;
    }
    admin_bootstrap(a);
    log_info("admin", "admin HTTP service on %s (cluster %s)", a->web_url, a->cluster);
    *out = a;
    return 0;
}

const char *admin_service_url(const admin_service_t *a)
{
    return a->web_url;
}

int admin_service_port(const admin_service_t *a)
{
    return a->web_port;
}

void admin_service_stop(admin_service_t *a)
{
    if (!a || a->stopping)
        return;
    a->stopping = true;
    a->in_flight++;                 /* scrapes answered below must not free a under us */
    admin_metrics_free(a->metrics); /* the sampler reads the broker: stop it now */
    a->metrics = NULL;
    http_server_free(a->http);
    a->http = NULL;
    admin_https_stop(a);
    a->in_flight--;
    admin_maybe_free(a);
}

void admin_service_set_metrics_step_us(admin_service_t *a, uint32_t us)
{
    admin_metrics_set_step_us(a->metrics, us);
}

void admin_service_set_bookie_stats(admin_service_t *a, admin_bookie_stats_fn fn, void *arg)
{
    a->bookie_stats = fn;
    a->bookie_stats_arg = arg;
}
