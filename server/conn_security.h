/*
 * conn_security.h — private to server/: the hooks connection.c calls so
 * that each connection is admitted within the limits, runs over TLS when
 * accepted on the TLS port, authenticates in CONNECT, refreshes its
 * credentials, and is authorized command by command.
 *
 *   accept  : conn_security_admit (limits: total, per IP, pending handshakes)
 *             conn_security_accept (transport, handshake deadline)
 *   CONNECT : conn_security_connect (authentication; refusal: ERROR with
 *             request_id = (uint64)-1 and AuthenticationError, then close)
 *   command : conn_security_intercept (authorization of LOOKUP,
 *             PARTITIONED_METADATA, PRODUCER, SUBSCRIBE, GET_TOPICS_OF_NAMESPACE,
 *             GET_SCHEMA, GET_OR_CREATE_SCHEMA; AUTH_RESPONSE; per-connection
 *             producer/consumer limits)
 *   close   : conn_security_closed
 */
#ifndef QUIRE_SERVER_CONN_SECURITY_H
#define QUIRE_SERVER_CONN_SECURITY_H

#include <netinet/in.h>
#include <stdbool.h>

#include "server/broker_int.h"

/* May a connection from peer, accepted on listener w, be served? false: the
 * caller closes fd (the reason is logged, rate-limited). *tls: accepted on
 * the TLS port. */
bool conn_security_admit(broker_t *b, ev_io *w, const struct sockaddr_in *peer, bool *tls);
/* Sets up c->io over fd (TLS when tls) and the handshake deadline (before
 * the keepalive timer starts). 0, or -ENOMEM (the caller closes). */
int conn_security_accept(conn_t *c, int fd, bool tls, const struct sockaddr_in *peer);
/* Authenticates the CONNECT. 0: go on (c->role set). <0: refused, answered
 * and closed. */
int conn_security_connect(conn_t *c, const Pulsar__Proto__CommandConnect *cmd);
/* true: the command was taken over (answered now or after an asynchronous
 * authorization check); false: handle it as usual. */
bool conn_security_intercept(conn_t *c, const pb_command_t *cmd);
void conn_security_closed(conn_t *c);

#endif
