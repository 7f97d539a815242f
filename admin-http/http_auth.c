/*
 * http_auth.c — authentication and authorization of the REST admin API, and
 * its https listener (webServicePortTls).
 *
 * Every matched route goes through admin_authorize() before its handler:
 *
 *   1. authentication (authenticationEnabled): Authorization: Bearer <jwt>,
 *      Basic <base64>, or the https client certificate (server/auth.h);
 *      missing or bad credentials -> 401. /metrics is open unless
 *      authenticateMetricsEndpoint=true.
 *   2. authorization (authorizationEnabled): the route's class, below, is
 *      checked by server/authz.h. Not a superuser / not a tenant admin ->
 *      401 (Pulsar's answer for administrative operations); a topic or
 *      namespace operation without the produce/consume grant -> 403.
 *
 * Proxies: a role in proxyRoles must name the client it acts for in
 * X-Original-Principal (401 otherwise); both roles are then authorized. Any
 * other role may only name itself there (Pulsar's isValidOriginalPrincipal).
 *
 * Route classes (Pulsar's PulsarAuthorizationProvider):
 *   superuser     clusters (write), tenants (list, create, update, delete),
 *                 brokers (except ready/version/health)
 *   tenant admin  tenant read, namespaces and every namespace policy,
 *                 namespace, subscription and topic permissions, topic
 *                 create/delete/partitions/unload/terminate/compaction,
 *                 schema upload and delete
 *   consume       subscriptions, peek, examinemessage, message by id or
 *                 time, skip/reset/expire, lastMessageId (a {subscription}
 *                 in the route also meets that subscription's roles)
 *   lookup        (produce or consume) topic lists, stats, partitions,
 *                 lookup, schema reads
 *   authenticated clusters (read), brokers ready/version/health, /metrics
 * Anything not listed needs a superuser (deny by default).
 */
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/auth.h"
#include "server/authz.h"
#include "server/broker_security.h"

typedef struct route_need {
    authz_action_t action;
    bool open; /* no authentication needed */
    char tenant[TOPIC_NAME_MAX + 1];
    char ns[2 * TOPIC_NAME_MAX + 2];
    char topic[TOPIC_NAME_MAX + 1];
    char subscription[TOPIC_NAME_MAX + 1]; /* consume routes naming one */
} route_need_t;

/* ------------------------------------------------------------- classes -- */

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The part of pattern after "{topic}", or NULL. */
static const char *after_topic(const char *pattern)
{
    const char *t = strstr(pattern, "{topic}");
    return t ? t + 7 : NULL;
}

static authz_action_t topic_route_action(int method, const char *rest)
{
    if (!*rest) /* the topic itself: create, delete */
        return AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/partitions") == 0)
        return method == HTTP_GET ? AUTHZ_LOOKUP : AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/stats") == 0 || strcmp(rest, "/internalStats") == 0 ||
        strcmp(rest, "/partitioned-stats") == 0 || strcmp(rest, "/schema") == 0 ||
        strcmp(rest, "/schemas") == 0 || starts(rest, "/schema/"))
        return method == HTTP_GET ? AUTHZ_LOOKUP : AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/compatibility") == 0 || strcmp(rest, "/version") == 0)
        return AUTHZ_LOOKUP;
    if (strcmp(rest, "/compaction") == 0)
        return method == HTTP_GET ? AUTHZ_LOOKUP : AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/permissions") == 0 || starts(rest, "/permissions/"))
        return AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/unload") == 0 || strcmp(rest, "/terminate") == 0)
        return AUTHZ_TENANT_ADMIN;
    if (strcmp(rest, "/subscriptions") == 0 || starts(rest, "/subscription/") ||
        starts(rest, "/all_subscription/") || strcmp(rest, "/examinemessage") == 0 ||
        starts(rest, "/messageid/") || starts(rest, "/ledger/") ||
        strcmp(rest, "/lastMessageId") == 0)
        return AUTHZ_CONSUME;
    return AUTHZ_SUPERUSER;
}

static void fill_names(const admin_req_t *req, const char *domain, route_need_t *n)
{
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace");
    const char *topic = admin_param(req, "topic");
    snprintf(n->tenant, sizeof n->tenant, "%s", t);
    if (*t && *ns)
        snprintf(n->ns, sizeof n->ns, "%s/%s", t, ns);
    if (*t && *ns && *topic && domain)
        snprintf(n->topic, sizeof n->topic, "%s://%s/%s/%s", domain, t, ns, topic);
}

static void classify(const admin_req_t *req, route_need_t *n)
{
    const char *p = req->route->route.pattern;
    int m = req->route->route.method;
    memset(n, 0, sizeof *n);
    n->action = AUTHZ_SUPERUSER;
    if (strcmp(p, "/metrics") == 0) {
        n->open = true;
        n->action = AUTHZ_AUTHENTICATED;
    } else if (starts(p, "/admin/v2/clusters")) {
        n->action = m == HTTP_GET ? AUTHZ_AUTHENTICATED : AUTHZ_SUPERUSER;
    } else if (starts(p, "/admin/v2/tenants/{tenant}")) {
        fill_names(req, NULL, n);
        n->action = m == HTTP_GET ? AUTHZ_TENANT_ADMIN : AUTHZ_SUPERUSER;
    } else if (starts(p, "/admin/v2/namespaces/{tenant}")) {
        fill_names(req, NULL, n);
        n->action =
            strstr(p, "{namespace}/topics") && m == HTTP_GET ? AUTHZ_LOOKUP : AUTHZ_TENANT_ADMIN;
    } else if (starts(p, "/admin/v2/persistent/") || starts(p, "/admin/v2/non-persistent/")) {
        const char *domain = starts(p, "/admin/v2/persistent/") ? "persistent" : "non-persistent";
        fill_names(req, domain, n);
        const char *rest = after_topic(p);
        n->action = rest ? topic_route_action(m, rest) : AUTHZ_LOOKUP; /* topic lists */
        if (n->action == AUTHZ_CONSUME)
            snprintf(n->subscription, sizeof n->subscription, "%s",
                     admin_param(req, "subscription"));
    } else if (starts(p, "/admin/v2/schemas/")) {
        fill_names(req, "persistent", n);
        n->action = topic_route_action(m, after_topic(p));
    } else if (starts(p, "/lookup/v2/topic/")) {
        const char *d = admin_param(req, "domain");
        fill_names(req, strcmp(d, "non-persistent") == 0 ? "non-persistent" : "persistent", n);
        n->action = AUTHZ_LOOKUP;
    } else if (strcmp(p, "/admin/v2/brokers/ready") == 0 ||
               strcmp(p, "/admin/v2/brokers/version") == 0 ||
               strcmp(p, "/admin/v2/brokers/health") == 0) {
        n->action = AUTHZ_AUTHENTICATED;
    }
}

/* ----------------------------------------------------------- authorize -- */

static void authz_answered(int rc, bool allowed, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0 && rc != QE_NOT_FOUND) {
        admin_reply_error(req, 503, "Authorization could not be checked: %s", q_strerror(rc));
        return;
    }
    if (allowed) {
        req->route->fn(req);
        return;
    }
    route_need_t n;
    classify(req, &n);
    if (n.action == AUTHZ_SUPERUSER)
        admin_reply_error(req, 401, "This operation requires super-user access");
    else if (n.action == AUTHZ_TENANT_ADMIN)
        admin_reply_error(req, 401,
                          "Don't have permission to administrate resources on this "
                          "tenant");
    else
        admin_reply_error(req, 403, "Client is not authorized to perform this operation");
}

void admin_authorize(admin_req_t *req)
{
    broker_t *b = req->a->broker;
    auth_service_t *auth = broker_auth(b);
    route_need_t n;
    const char *original = NULL;
    classify(req, &n);
    if (n.open && !auth_metrics_need_auth(auth)) {
        req->route->fn(req);
        return;
    }
    if (auth_enabled(auth)) {
        char cn[AUTH_ROLE_MAX], reason[256];
        http_request_tls_cn(req->ex, cn, sizeof cn);
        auth_result_t res;
        int rc = auth_authenticate_http(auth, http_request_header(req->ex, "authorization"), cn,
                                        clock_wall_ms(), &res, reason, sizeof reason);
        if (rc < 0) {
            log_info("auth", "%s: HTTP authentication failed: %s", http_request_peer(req->ex),
                     reason);
            http_response_header(req->ex, "WWW-Authenticate", "Bearer");
            admin_reply_error(req, 401, "Authentication required");
            return;
        }
        snprintf(req->role, sizeof req->role, "%s", res.role);
        original = http_request_header(req->ex, "x-original-principal");
    } else {
        const char *anon = auth_anonymous_role(auth);
        snprintf(req->role, sizeof req->role, "%s", anon ? anon : "");
    }
    if (!authz_enabled(auth)) {
        req->route->fn(req);
        return;
    }
    const char *bad = authz_original_principal_error(auth, req->role, original);
    if (bad) {
        log_info("auth", "%s: role '%s' with X-Original-Principal '%s': %s",
                 http_request_peer(req->ex), req->role, original ? original : "", bad);
        admin_reply_error(req, 401, "%s", bad);
        return;
    }
    if (!auth_is_proxy_role(auth, req->role))
        original = NULL; /* a role naming itself is authorized as itself */
    /* Names that could reach another metadata key are refused before use. */
    if ((n.tenant[0] && !admin_name_valid(n.tenant)) ||
        (n.ns[0] && !admin_name_valid(admin_param(req, "namespace")))) {
        if (!auth_is_superuser(auth, req->role) || original) {
            authz_answered(0, false, req);
            return;
        }
    }
    authz_request_t r = {.role = req->role,
                         .original = original,
                         .tenant = n.tenant,
                         .ns = n.ns[0] ? n.ns : NULL,
                         .topic = n.topic[0] ? n.topic : NULL,
                         .subscription = n.subscription[0] ? n.subscription : NULL,
                         .action = n.action};
    int rc = authz_check_request(b, &r, authz_answered, req);
    if (rc < 0)
        admin_reply_error(req, 503, "Out of memory");
}

/* --------------------------------------------------------------- https -- */

int admin_https_start(admin_service_t *a)
{
    broker_t *b = a->broker;
    int port = broker_web_port_tls(b);
    tls_ctx_t *tls = broker_tls_ctx(b);
    if (port < 0)
        return 0;
    if (!tls) {
        log_error("admin", "webServicePortTls needs tlsCertificateFilePath and tlsKeyFilePath");
        return QE_INVALID;
    }
    const broker_config_t *bc = broker_config(b);
    http_server_config_t cfg;
    http_server_config_defaults(&cfg);
    int64_t v;
    if (qconfig_get_int(a->conf, "httpMaxRequestSize", (int64_t)cfg.body_bytes_max, 1024,
                        (int64_t)1 << 30, &v) == 0)
        cfg.body_bytes_max = (size_t)v;
    int rc = http_server_new(a->loop, &cfg, http_server_handler_of(a->http),
                             http_server_arg_of(a->http), &a->https);
    if (rc == 0) {
        http_server_set_tls(a->https, tls);
        rc = http_server_listen(a->https, bc->bind_address, port);
    }
    if (rc < 0) {
        http_server_free(a->https);
        a->https = NULL;
        return rc;
    }
    snprintf(a->web_url_tls, sizeof a->web_url_tls, "https://%s:%d", bc->advertised_address,
             http_server_port(a->https));
    log_info("admin", "admin HTTPS service on %s", a->web_url_tls);
    return 0;
}

void admin_https_stop(admin_service_t *a)
{
    http_server_free(a->https);
    a->https = NULL;
}
