/*
 * conn_security.c — the per-connection half of security (conn_security.h).
 *
 * Authentication at CONNECT: the role goes to c->role. Credentials that
 * expire (a token's exp) are watched by a timer every
 * authenticationRefreshCheckSeconds: once expired, a client that announced
 * supports_auth_refresh gets AUTH_CHALLENGE and must answer with
 * AUTH_RESPONSE carrying fresh credentials for the same role before the next
 * check; any other client, a refused answer, or no answer, is disconnected.
 *
 * Proxies (proxyRoles): a proxy role must name the client it connects for in
 * CONNECT's original_principal (with authenticateOriginalAuthData, its
 * original_auth_data is authenticated and gives that role); a role that is
 * not a proxy may only name itself. A bad pair is refused with
 * AuthorizationError and the connection closed (Pulsar's
 * isValidOriginalPrincipal). Commands of a proxied connection are authorized
 * for both roles; LOOKUP and PARTITIONED_METADATA may carry their own
 * original_principal (a proxy's shared lookup connection).
 *
 * Authorization of a command needs the namespace's policies and perhaps the
 * tenant's TenantInfo, both asynchronous: the command is packed (protobuf),
 * the check runs, and the command is unpacked and handed to its usual
 * handler when allowed, or answered with AuthorizationError when not. The
 * connection is referenced meanwhile; a connection closed by then drops it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/authz.h"
#include "server/codec/commands.h"
#include "server/conn_security.h"
#include "server/ns_policies.h"
#include "server/schema_int.h"
#include "server/security_int.h"

#define AUTH_REFRESH_DATA "PulsarAuthRefresh"

/* -------------------------------------------------------------- accept -- */

static void refresh_cb(struct ev_loop *loop, ev_timer *w, int revents);

int conn_security_accept(conn_t *c, int fd, bool tls, const struct sockaddr_in *peer)
{
    broker_t *b = c->broker;
    broker_security_t *s = b->sec;
    int rc = conn_io_init(&c->io, fd, tls && s ? s->tls : NULL);
    if (rc < 0)
        return rc;
    if (!s)
        return 0;
    conn_security_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        c->io.fd = -1; /* the caller closes fd */
        conn_io_close(&c->io);
        return -ENOMEM;
    }
    c->sec = cs;
    cs->ip = peer->sin_addr.s_addr;
    uintptr_t n = (uintptr_t)qmap64_get(s->ip_counts, cs->ip);
    if (qmap64_put(s->ip_counts, cs->ip, (void *)(n + 1)) == 0)
        cs->counted_ip = true;
    cs->pending = true;
    s->pending_handshakes++;
    ev_init(&cs->refresh_timer, refresh_cb);
    cs->refresh_timer.data = c;
    /* The first keepalive tick is the handshake deadline. */
    double ka = b->cfg.keep_alive_interval_s, hs = s->limits.handshake_timeout_s;
    ev_timer_set(&c->keepalive_timer, hs < ka ? hs : ka, ka);
    return 0;
}

static void handshake_left(conn_t *c)
{
    conn_security_t *cs = c->sec;
    if (cs && cs->pending) {
        cs->pending = false;
        c->broker->sec->pending_handshakes--;
    }
}

void conn_security_closed(conn_t *c)
{
    conn_security_t *cs = c->sec;
    if (!cs)
        return;
    broker_security_t *s = c->broker->sec;
    handshake_left(c);
    if (cs->counted_ip) {
        uintptr_t n = (uintptr_t)qmap64_get(s->ip_counts, cs->ip);
        if (n <= 1)
            qmap64_remove(s->ip_counts, cs->ip);
        else
            qmap64_put(s->ip_counts, cs->ip, (void *)(n - 1));
    }
    ev_timer_stop(c->broker->loop, &cs->refresh_timer);
    free(cs);
    c->sec = NULL;
}

/* ------------------------------------------------------ authentication -- */

static void refuse_auth(conn_t *c, const char *reason)
{
    log_warn("auth", "%s: authentication failed: %s", c->peer, reason);
    conn_send_error(c, UINT64_MAX, PULSAR__PROTO__SERVER_ERROR__AuthenticationError, reason);
    conn_close(c, "authentication failed");
}

static int authenticate(conn_t *c, const Pulsar__Proto__AuthData *d, const char *method,
                        const ProtobufCBinaryData *data, auth_result_t *res)
{
    (void)d;
    char cn[AUTH_ROLE_MAX];
    conn_io_peer_cn(&c->io, cn, sizeof cn);
    char reason[256];
    int rc =
        auth_authenticate(broker_auth(c->broker), method, data ? data->data : NULL,
                          data ? data->len : 0, cn, clock_wall_ms(), res, reason, sizeof reason);
    if (rc < 0)
        refuse_auth(c, reason);
    return rc;
}

static void arm_refresh(conn_t *c)
{
    conn_security_t *cs = c->sec;
    if (!cs || cs->expires_ms == 0)
        return;
    double every = auth_refresh_check_s(broker_auth(c->broker));
    ev_timer_stop(c->broker->loop, &cs->refresh_timer);
    ev_timer_set(&cs->refresh_timer, every, every);
    ev_timer_start(c->broker->loop, &cs->refresh_timer);
}

static void refuse_authz(conn_t *c, const char *reason)
{
    log_warn("auth", "%s: role '%s' refused: %s", c->peer, c->role, reason);
    conn_send_error(c, UINT64_MAX, PULSAR__PROTO__SERVER_ERROR__AuthorizationError, reason);
    conn_close(c, "invalid original principal");
}

/* The original principal of a proxied CONNECT into cs->original: 0, or
 * refused (answered, closed) < 0. */
static int connect_original(conn_t *c, const Pulsar__Proto__CommandConnect *cmd)
{
    auth_service_t *a = broker_auth(c->broker);
    conn_security_t *cs = c->sec;
    const char *orig = cmd->original_principal;
    char authed[AUTH_ROLE_MAX] = "";
    if (!authz_enabled(a) || !cs)
        return 0;
    if (auth_is_proxy_role(a, c->role) && auth_original_auth_data(a)) {
        /* The proxy forwards the client's credentials: they decide. */
        if (!cmd->original_auth_data || !*cmd->original_auth_data) {
            refuse_auth(c, "original_auth_data must be provided when connecting with a proxy role");
            return QE_INVALID;
        }
        auth_result_t res;
        char reason[256];
        int rc = auth_authenticate(
            a, cmd->original_auth_method, (const uint8_t *)cmd->original_auth_data,
            strlen(cmd->original_auth_data), "", clock_wall_ms(), &res, reason, sizeof reason);
        if (rc < 0) {
            refuse_auth(c, reason);
            return rc;
        }
        if (orig && *orig && strcmp(orig, res.role) != 0) {
            refuse_auth(c, "original_principal does not match original_auth_data");
            return QE_INVALID;
        }
        snprintf(authed, sizeof authed, "%s", res.role);
        orig = authed;
    }
    const char *err = authz_original_principal_error(a, c->role, orig);
    if (err) {
        refuse_authz(c, err);
        return QE_INVALID;
    }
    /* A role naming itself is authorized as itself alone. */
    snprintf(cs->original, sizeof cs->original, "%s",
             orig && auth_is_proxy_role(a, c->role) ? orig : "");
    if (cs->original[0])
        log_info("auth", "%s: proxy role '%s' connects for '%s'", c->peer, c->role, cs->original);
    return 0;
}

int conn_security_connect(conn_t *c, const Pulsar__Proto__CommandConnect *cmd)
{
    handshake_left(c);
    auth_service_t *a = broker_auth(c->broker);
    if (!auth_enabled(a))
        return 0;
    auth_result_t res;
    int rc = authenticate(c, NULL, cmd->auth_method_name,
                          cmd->has_auth_data ? &cmd->auth_data : NULL, &res);
    if (rc < 0)
        return rc;
    snprintf(c->role, sizeof c->role, "%s", res.role);
    conn_security_t *cs = c->sec;
    if (cs) {
        cs->expires_ms = res.expires_ms;
        snprintf(cs->method, sizeof cs->method, "%s", res.method);
        cs->supports_refresh = cmd->feature_flags &&
                               cmd->feature_flags->has_supports_auth_refresh &&
                               cmd->feature_flags->supports_auth_refresh;
        arm_refresh(c);
    }
    log_info("auth", "%s: authenticated as '%s' (%s)", c->peer, c->role, res.method);
    return connect_original(c, cmd);
}

static void send_challenge(conn_t *c)
{
    Pulsar__Proto__AuthData d = PULSAR__PROTO__AUTH_DATA__INIT;
    d.auth_method_name = c->sec->method;
    d.has_auth_data = true;
    d.auth_data.data = (uint8_t *)AUTH_REFRESH_DATA;
    d.auth_data.len = strlen(AUTH_REFRESH_DATA);
    Pulsar__Proto__CommandAuthChallenge ch = PULSAR__PROTO__COMMAND_AUTH_CHALLENGE__INIT;
    ch.server_version = "Quire";
    ch.challenge = &d;
    ch.has_protocol_version = true;
    ch.protocol_version = c->protocol_version;
    pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
    out.type = PULSAR__PROTO__BASE_COMMAND__TYPE__AUTH_CHALLENGE;
    out.authchallenge = &ch;
    c->sec->challenge_sent = true;
    conn_send_command(c, &out);
}

static void refresh_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_t *c = w->data;
    conn_security_t *cs = c->sec;
    if (c->state != CONN_READY || !cs || cs->expires_ms == 0 || clock_wall_ms() < cs->expires_ms)
        return;
    if (cs->challenge_sent) {
        conn_close(c, "authentication expired: no fresh credentials after AUTH_CHALLENGE");
        return;
    }
    if (!cs->supports_refresh) {
        conn_close(c, "authentication expired (the client cannot refresh it)");
        return;
    }
    send_challenge(c);
}

static void handle_auth_response(conn_t *c, const Pulsar__Proto__CommandAuthResponse *r)
{
    conn_security_t *cs = c->sec;
    if (!cs || !cs->challenge_sent || !r || !r->response) {
        conn_close(c, "unexpected AUTH_RESPONSE");
        return;
    }
    auth_result_t res;
    const Pulsar__Proto__AuthData *d = r->response;
    if (authenticate(c, d, d->auth_method_name, d->has_auth_data ? &d->auth_data : NULL, &res) < 0)
        return;
    if (strcmp(res.role, c->role) != 0) {
        refuse_auth(c, "refreshed credentials are for another role");
        return;
    }
    cs->challenge_sent = false;
    cs->expires_ms = res.expires_ms;
    log_info("auth", "%s: credentials of '%s' refreshed", c->peer, c->role);
}

/* ------------------------------------------------------- authorization -- */

typedef struct deferred_cmd {
    conn_t *conn;
    uint8_t *packed;
    size_t len;
} deferred_cmd_t;

/* Pulsar's message when a SUBSCRIBE breaks the namespace's Prefix mode
 * (checked again here: authz answers allowed or not), else NULL. */
static const char *prefix_denial(conn_t *c, const Pulsar__Proto__CommandSubscribe *s, char *buf,
                                 size_t n)
{
    topic_name_t *tn = malloc(sizeof *tn);
    const char *msg = NULL;
    if (tn && s->topic && topic_name_parse(s->topic, tn) == 0) {
        const char *role = c->sec && c->sec->original[0] ? c->sec->original : c->role;
        const ns_policies_t *p = broker_ns_policies(c->broker, tn->namespace_name);
        if (!authz_subscription_prefix_allows(p->subscription_auth_prefix, s->subscription, role)) {
            snprintf(buf, n,
                     "Failed to create consumer - The subscription name needs to be prefixed by "
                     "the authentication role, like %s-xxxx for topic: %s",
                     role, tn->full);
            msg = buf;
        }
    }
    free(tn);
    return msg;
}

static void deny(conn_t *c, const pb_command_t *cmd)
{
    const char *msg = "Client is not authorized to perform this operation";
    pb_error_t e = PULSAR__PROTO__SERVER_ERROR__AuthorizationError;
    qbuf_t *buf = NULL;
    int rc = -1;
    switch (cmd->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP:
        rc = cmd_encode_lookup_failed(cmd->lookuptopic->request_id, e, msg, &buf);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA:
        rc = cmd_encode_partitioned_metadata_failed(cmd->partitionmetadata->request_id, e, msg,
                                                    &buf);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA:
        rc = cmd_encode_get_schema_error(cmd->getschema->request_id, e, msg, &buf);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER:
        conn_send_error(c, cmd->producer->request_id, e, msg);
        return;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE: {
        char buf[AUTH_ROLE_MAX + TOPIC_NAME_MAX + 160];
        const char *pm = prefix_denial(c, cmd->subscribe, buf, sizeof buf);
        conn_send_error(c, cmd->subscribe->request_id, e, pm ? pm : msg);
        return;
    }
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE:
        conn_send_error(c, cmd->gettopicsofnamespace->request_id, e, msg);
        return;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_OR_CREATE_SCHEMA:
        conn_send_error(c, cmd->getorcreateschema->request_id, e, msg);
        return;
    default:
        conn_close(c, "not authorized");
        return;
    }
    if (rc == 0)
        conn_send_buf(c, buf, 0, buf->len);
}

static void run(conn_t *c, const pb_command_t *cmd)
{
    switch (cmd->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP:
        lookup_handle_lookup(c, cmd->lookuptopic);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA:
        lookup_handle_partitioned_metadata(c, cmd->partitionmetadata);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE:
        lookup_handle_topics_of_namespace(c, cmd->gettopicsofnamespace);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER:
        producer_handle_create(c, cmd->producer);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE:
        consumer_handle_subscribe(c, cmd->subscribe);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA:
        schema_handle_get_schema(c, cmd->getschema);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_OR_CREATE_SCHEMA:
        schema_handle_get_or_create_schema(c, cmd->getorcreateschema);
        break;
    default:
        break;
    }
}

static void authz_done(int rc, bool allowed, void *arg)
{
    deferred_cmd_t *d = arg;
    conn_t *c = d->conn;
    if (c->state == CONN_READY) {
        pb_command_t *cmd = pulsar__proto__base_command__unpack(NULL, d->len, d->packed);
        if (!cmd)
            conn_close(c, "out of memory");
        else if (rc == 0 && allowed)
            run(c, cmd);
        else
            deny(c, cmd);
        if (cmd)
            pulsar__proto__base_command__free_unpacked(cmd, NULL);
    }
    free(d->packed);
    free(d);
    conn_unref(c);
}

/* The topic (or namespace) a command names, the action it needs, the
 * subscription it consumes through and the original principal it names
 * itself (LOOKUP, PARTITIONED_METADATA), if any. */
static bool command_target(const pb_command_t *cmd, const char **name, bool *is_ns,
                           authz_action_t *action, const char **sub, const char **original)
{
    *is_ns = false;
    *name = NULL;
    *sub = NULL;
    *original = NULL;
    switch (cmd->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP:
        *name = cmd->lookuptopic ? cmd->lookuptopic->topic : NULL;
        *original = cmd->lookuptopic ? cmd->lookuptopic->original_principal : NULL;
        *action = AUTHZ_LOOKUP;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA:
        *name = cmd->partitionmetadata ? cmd->partitionmetadata->topic : NULL;
        *original = cmd->partitionmetadata ? cmd->partitionmetadata->original_principal : NULL;
        *action = AUTHZ_LOOKUP;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA:
        *name = cmd->getschema ? cmd->getschema->topic : NULL;
        *action = AUTHZ_LOOKUP;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER:
        *name = cmd->producer ? cmd->producer->topic : NULL;
        *action = AUTHZ_PRODUCE;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_OR_CREATE_SCHEMA:
        *name = cmd->getorcreateschema ? cmd->getorcreateschema->topic : NULL;
        *action = AUTHZ_PRODUCE;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE:
        *name = cmd->subscribe ? cmd->subscribe->topic : NULL;
        *sub = cmd->subscribe ? cmd->subscribe->subscription : NULL;
        *action = AUTHZ_CONSUME;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE:
        *name = cmd->gettopicsofnamespace ? cmd->gettopicsofnamespace->namespace_ : NULL;
        *action = AUTHZ_LOOKUP;
        *is_ns = true;
        break;
    default:
        return false;
    }
    return *name != NULL;
}

/* Per-connection bounds on producers and consumers (a new id only). */
static bool over_limits(conn_t *c, const pb_command_t *cmd)
{
    const conn_limits_config_t *l = &c->broker->sec->limits;
    if (cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER && cmd->producer &&
        l->max_producers_per_conn && qmap64_size(c->producers) >= l->max_producers_per_conn &&
        !qmap64_get(c->producers, cmd->producer->producer_id)) {
        conn_send_error(c, cmd->producer->request_id, PULSAR__PROTO__SERVER_ERROR__NotAllowedError,
                        "maxProducersPerConnection reached");
        return true;
    }
    if (cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE && cmd->subscribe &&
        l->max_consumers_per_conn && qmap64_size(c->consumers) >= l->max_consumers_per_conn &&
        !qmap64_get(c->consumers, cmd->subscribe->consumer_id)) {
        conn_send_error(c, cmd->subscribe->request_id, PULSAR__PROTO__SERVER_ERROR__NotAllowedError,
                        "maxConsumersPerConnection reached");
        return true;
    }
    return false;
}

bool conn_security_intercept(conn_t *c, const pb_command_t *cmd)
{
    broker_t *b = c->broker;
    if (!b->sec)
        return false;
    if (cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__AUTH_RESPONSE) {
        handle_auth_response(c, cmd->authresponse);
        return true;
    }
    if (over_limits(c, cmd))
        return true;
    auth_service_t *a = broker_auth(b);
    const char *name, *sub, *original;
    bool is_ns;
    authz_action_t action;
    if (!authz_enabled(a) || !command_target(cmd, &name, &is_ns, &action, &sub, &original))
        return false;
    /* A command's own original principal (a proxy's lookup) replaces the
     * connection's; the same pairing rule applies. */
    bool own_original = original && *original;
    if (!own_original)
        original = c->sec ? c->sec->original : "";
    bool bad_pair = own_original && authz_original_principal_error(a, c->role, original) != NULL;
    if (own_original && !auth_is_proxy_role(a, c->role))
        original = ""; /* a role naming itself */
    if (!bad_pair && !*original && auth_is_superuser(a, c->role))
        return false;
    char tenant[TOPIC_NAME_MAX + 1], ns[2 * TOPIC_NAME_MAX + 2];
    topic_name_t tn;
    if (is_ns) {
        const char *slash = strchr(name, '/');
        if (!slash || (size_t)(slash - name) > TOPIC_NAME_MAX || strlen(name) >= sizeof ns)
            return false; /* the handler refuses the malformed name */
        snprintf(tenant, sizeof tenant, "%.*s", (int)(slash - name), name);
        snprintf(ns, sizeof ns, "%s", name);
    } else {
        if (topic_name_parse(name, &tn) < 0)
            return false;
        snprintf(tenant, sizeof tenant, "%s", tn.tenant);
        snprintf(ns, sizeof ns, "%s", tn.namespace_name);
    }
    deferred_cmd_t *d = calloc(1, sizeof *d);
    size_t len = pulsar__proto__base_command__get_packed_size(cmd);
    uint8_t *packed = d ? malloc(len ? len : 1) : NULL;
    if (!packed) {
        free(d);
        conn_close(c, "out of memory");
        return true;
    }
    pulsar__proto__base_command__pack(cmd, packed);
    *d = (deferred_cmd_t){c, packed, len};
    conn_ref(c);
    if (bad_pair) {
        log_warn("auth", "%s: role '%s' named original principal '%s' in a command: refused",
                 c->peer, c->role, original);
        authz_done(0, false, d);
        return true;
    }
    authz_request_t r = {.role = c->role,
                         .original = *original ? original : NULL,
                         .tenant = tenant,
                         .ns = ns,
                         .topic = is_ns ? NULL : tn.full,
                         .subscription = sub,
                         .action = action};
    int rc = authz_check_request(b, &r, authz_done, d);
    if (rc < 0)
        authz_done(rc, false, d);
    return true;
}
