/*
 * security.c — the broker-wide half of broker_security.h: configuration,
 * the TLS listener, and admission of new connections (conn_security_admit).
 *
 * Admission bounds, checked at accept before anything is allocated:
 * brokerMaxConnections overall, brokerMaxConnectionsPerIp, and
 * brokerMaxPendingHandshakes (connections that have not completed CONNECT —
 * TLS handshakes included — so a flood of idle sockets cannot starve real
 * clients); each pending connection is closed after
 * brokerHandshakeTimeoutSeconds (conn_security.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_security.h"
#include "server/conn_security.h"
#include "server/security_int.h"

/* ------------------------------------------------------------- config -- */

static int get_u32(const qconfig_t *q, const char *key, int64_t def, int64_t max, uint32_t *out,
                   char *err, size_t err_len)
{
    int64_t v;
    if (qconfig_get_int(q, key, def, 0, max, &v) < 0) {
        snprintf(err, err_len, "%s: expected a whole number in [0, %lld]", key, (long long)max);
        return QE_INVALID;
    }
    *out = (uint32_t)v;
    return 0;
}

static int load_limits(const qconfig_t *q, conn_limits_config_t *l, char *err, size_t err_len)
{
    uint32_t hs = 10;
    if (get_u32(q, "brokerMaxConnectionsPerIp", 0, 1000000, &l->max_per_ip, err, err_len) < 0 ||
        get_u32(q, "brokerMaxPendingHandshakes", 1000, 1000000, &l->max_pending_handshakes, err,
                err_len) < 0 ||
        get_u32(q, "brokerHandshakeTimeoutSeconds", 10, 3600, &hs, err, err_len) < 0 ||
        get_u32(q, "maxProducersPerConnection", 10000, 1000000, &l->max_producers_per_conn, err,
                err_len) < 0 ||
        get_u32(q, "maxConsumersPerConnection", 10000, 1000000, &l->max_consumers_per_conn, err,
                err_len) < 0)
        return QE_INVALID;
    l->handshake_timeout_s = hs ? (double)hs : 10.0;
    return 0;
}

static int port_key(const qconfig_t *q, const char *key, int *out, char *err, size_t err_len)
{
    *out = -1;
    if (!qconfig_has(q, key) || !*qconfig_get(q, key, ""))
        return 0;
    int64_t v;
    if (qconfig_get_int(q, key, -1, 0, 65535, &v) < 0) {
        snprintf(err, err_len, "%s: expected a port in [0, 65535]", key);
        return QE_INVALID;
    }
    *out = (int)v;
    return 0;
}

int broker_security_configure(broker_t *b, const qconfig_t *q, char *err, size_t err_len)
{
    broker_security_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->tls_listen_fd = -1;
    s->tls_port = -1;
    s->ip_counts = qmap64_new();
    int rc = s->ip_counts ? 0 : -ENOMEM;
    if (rc == 0)
        rc = load_limits(q, &s->limits, err, err_len);
    if (rc == 0)
        rc = port_key(q, "brokerServicePortTls", &s->tls_port_cfg, err, err_len);
    if (rc == 0)
        rc = port_key(q, "webServicePortTls", &s->web_port_tls, err, err_len);
    if (rc == 0)
        rc = tls_config_load(q, &s->tls_cfg, err, err_len);
    bool want_tls = s->tls_port_cfg >= 0 || s->web_port_tls >= 0;
    if (rc == 0 && (want_tls || s->tls_cfg.cert_file[0]))
        rc = tls_ctx_new(&s->tls_cfg, &s->tls, err, err_len);
    if (rc == 0)
        rc = auth_service_new(q, &s->auth, err, err_len);
    if (rc < 0) {
        auth_service_free(s->auth);
        tls_ctx_unref(s->tls);
        qmap64_free(s->ip_counts);
        free(s);
        return rc;
    }
    broker_security_free(b);
    b->sec = s;
    return 0;
}

void broker_security_free(broker_t *b)
{
    broker_security_t *s = b->sec;
    if (!s)
        return;
    broker_security_stop(b);
    auth_service_free(s->auth);
    tls_ctx_unref(s->tls);
    qmap64_free(s->ip_counts);
    free(s);
    b->sec = NULL;
}

auth_service_t *broker_auth(const broker_t *b)
{
    return b->sec ? b->sec->auth : NULL;
}

tls_ctx_t *broker_tls_ctx(const broker_t *b)
{
    return b->sec ? b->sec->tls : NULL;
}

int broker_web_port_tls(const broker_t *b)
{
    return b->sec ? b->sec->web_port_tls : -1;
}

int broker_port_tls(const broker_t *b)
{
    return b->sec ? b->sec->tls_port : -1;
}

const char *broker_service_url_tls(const broker_t *b)
{
    return b->sec && b->sec->tls_port >= 0 ? b->sec->service_url_tls : NULL;
}

/* ------------------------------------------------------------ listener -- */

int broker_security_listen(broker_t *b)
{
    broker_security_t *s = b->sec;
    if (!s || s->tls_port_cfg < 0 || s->tls_listen_fd >= 0)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->tls_port_cfg)};
    if (inet_pton(AF_INET, b->cfg.bind_address, &sa.sin_addr) != 1 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
        int rc = errno ? -errno : QE_INVALID;
        log_error("broker", "cannot listen (TLS) on %s:%d: %s", b->cfg.bind_address,
                  s->tls_port_cfg, strerror(errno));
        close(fd);
        return rc;
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    s->tls_port = ntohs(sa.sin_port);
    s->tls_listen_fd = fd;
    snprintf(s->service_url_tls, sizeof s->service_url_tls, "pulsar+ssl://%s:%d",
             b->cfg.advertised_address, s->tls_port);
    ev_io_init(&s->tls_accept_watcher, broker_accept_cb, fd, EV_READ);
    s->tls_accept_watcher.data = b;
    ev_io_start(b->loop, &s->tls_accept_watcher);
    log_info("broker", "TLS broker service on %s", s->service_url_tls);
    return 0;
}

void broker_security_stop(broker_t *b)
{
    broker_security_t *s = b->sec;
    if (!s || s->tls_listen_fd < 0)
        return;
    ev_io_stop(b->loop, &s->tls_accept_watcher);
    close(s->tls_listen_fd);
    s->tls_listen_fd = -1;
}

/* ----------------------------------------------------------- admission -- */

static void refuse_log(broker_security_t *s, const struct sockaddr_in *peer, const char *why)
{
    int64_t now = (int64_t)ev_time();
    s->refused++;
    if (now == s->last_refusal_log_s)
        return;
    s->last_refusal_log_s = now;
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer->sin_addr, ip, sizeof ip);
    log_warn("broker", "refusing a connection from %s: %s (%llu refused so far)", ip, why,
             (unsigned long long)s->refused);
}

bool conn_security_admit(broker_t *b, ev_io *w, const struct sockaddr_in *peer, bool *tls)
{
    broker_security_t *s = b->sec;
    *tls = s && w == &s->tls_accept_watcher;
    if (!s)
        return true;
    const conn_limits_config_t *l = &s->limits;
    if (l->max_pending_handshakes && s->pending_handshakes >= l->max_pending_handshakes) {
        refuse_log(s, peer, "brokerMaxPendingHandshakes reached");
        return false;
    }
    if (l->max_per_ip) {
        uintptr_t n = (uintptr_t)qmap64_get(s->ip_counts, peer->sin_addr.s_addr);
        if (n >= l->max_per_ip) {
            refuse_log(s, peer, "brokerMaxConnectionsPerIp reached");
            return false;
        }
    }
    return true;
}
