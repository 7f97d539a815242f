/*
 * security_int.h — private to security.c and conn_security.c: the broker's
 * security state and a connection's.
 */
#ifndef QUIRE_SERVER_SECURITY_INT_H
#define QUIRE_SERVER_SECURITY_INT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "server/auth.h"
#include "server/broker_security.h"
#include "server/tls.h"

typedef struct broker_security {
    auth_service_t *auth;
    tls_config_t tls_cfg;
    tls_ctx_t *tls; /* NULL without a certificate */
    conn_limits_config_t limits;
    int tls_port_cfg; /* brokerServicePortTls, -1 unset */
    int tls_port;     /* bound, -1 when not listening */
    int web_port_tls; /* webServicePortTls, -1 unset */
    int tls_listen_fd;
    ev_io tls_accept_watcher;
    char service_url_tls[256];
    qmap64_t *ip_counts; /* IPv4 address -> open connections (uintptr_t) */
    uint32_t pending_handshakes;
    uint64_t refused;
    int64_t last_refusal_log_s;
} broker_security_t;

typedef struct conn_security {
    uint32_t ip;           /* network order */
    bool counted_ip;       /* counted in ip_counts */
    bool pending;          /* counted in pending_handshakes */
    bool supports_refresh; /* CONNECT's feature_flags.supports_auth_refresh */
    bool challenge_sent;   /* an AUTH_CHALLENGE waits for its AUTH_RESPONSE */
    int64_t expires_ms;    /* the credentials' expiry, 0 = none */
    char method[16];
    char original[AUTH_ROLE_MAX]; /* a proxy's original principal, "" when none */
    ev_timer refresh_timer;
    bool refresh_started;
} conn_security_t;

#endif
