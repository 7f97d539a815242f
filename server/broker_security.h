/*
 * broker_security.h — the broker's security settings, for main and
 * admin-http: the TLS context and TLS listener of the binary protocol
 * (brokerServicePortTls), the authentication service (auth.h), and the
 * connection limits against abuse.
 *
 * main calls broker_security_configure after broker_new and before
 * broker_listen (which then also opens the TLS port when configured).
 * Without it the broker serves plain TCP with no authentication, as before.
 */
#ifndef QUIRE_SERVER_BROKER_SECURITY_H
#define QUIRE_SERVER_BROKER_SECURITY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "server/auth.h"
#include "server/broker.h"
#include "server/tls.h"

/* Connection limits (brokerMaxConnections stays in broker_config_t). */
typedef struct conn_limits_config {
    uint32_t max_per_ip;             /* brokerMaxConnectionsPerIp (0 = unlimited) */
    uint32_t max_pending_handshakes; /* brokerMaxPendingHandshakes (1000; 0 = unlimited) */
    double handshake_timeout_s;      /* brokerHandshakeTimeoutSeconds (10): CONNECT must come */
    uint32_t max_producers_per_conn; /* maxProducersPerConnection (10000; 0 = unlimited) */
    uint32_t max_consumers_per_conn; /* maxConsumersPerConnection (10000; 0 = unlimited) */
} conn_limits_config_t;

/* Reads the tls*, authentication*, authorization*, token*, basicAuthConf,
 * brokerServicePortTls, webServicePortTls and connection-limit keys of q,
 * loads certificates and keys. A configuration error: negative and
 * "key: reason" in err. */
int broker_security_configure(broker_t *b, const qconfig_t *q, char *err, size_t err_len);

/* The authentication service (never NULL after configure; NULL before). */
auth_service_t *broker_auth(const broker_t *b);
/* The TLS context (borrowed), NULL when no certificate is configured. */
tls_ctx_t *broker_tls_ctx(const broker_t *b);
/* webServicePortTls from the configuration: -1 when unset. */
int broker_web_port_tls(const broker_t *b);
/* The bound TLS port of the binary protocol, -1 when not listening. */
int broker_port_tls(const broker_t *b);
/* "pulsar+ssl://advertisedAddress:port", or NULL when not listening. */
const char *broker_service_url_tls(const broker_t *b);

/* broker.c hooks: listen on brokerServicePortTls (no-op when unset), stop
 * listening (shutdown), free (broker_free). */
int broker_security_listen(broker_t *b);
void broker_security_stop(broker_t *b);
void broker_security_free(broker_t *b);

#endif
