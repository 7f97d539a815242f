/*
 * tls.h — the transport under a connection: plain socket I/O, or TLS through
 * OpenSSL, behind one pair of functions (conn_io_read, conn_io_writev) with
 * read()/writev() semantics, so the binary protocol (connection.c) and the
 * web service (admin-http/http_server.c) serve both with the same code.
 *
 * A TLS connection is a server-side SSL object in accept state: the first
 * conn_io_read drives the handshake (non-blocking; SSL_ERROR_WANT_READ and
 * WANT_WRITE come back as -1 with errno EAGAIN), and the connection's usual
 * handshake timeout bounds how long it may take. Only TLS 1.2 and 1.3 are
 * offered; renegotiation and session tickets are off, so after the
 * handshake a read never needs to write and a write never needs to read.
 *
 * Decrypted bytes may wait inside OpenSSL while the socket is not readable:
 * after reading, a caller must look at conn_io_pending() and come back
 * (ev_feed_event) instead of waiting for the socket.
 *
 * Ownership: tls_ctx_t is reference counted (the broker's listener and the
 * web service's share one); conn_io_t is embedded in its connection and owns
 * the socket from conn_io_init to conn_io_close. Loop thread only.
 */
#ifndef QUIRE_SERVER_TLS_H
#define QUIRE_SERVER_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "common/config.h"

typedef struct tls_ctx tls_ctx_t;
typedef struct ssl_st tls_ssl_t; /* OpenSSL's SSL */

/* The tls* keys of broker.conf (Pulsar's names). */
typedef struct tls_config {
    char cert_file[1024];             /* tlsCertificateFilePath (PEM chain) */
    char key_file[1024];              /* tlsKeyFilePath (PEM) */
    char trust_certs_file[1024];      /* tlsTrustCertsFilePath: CAs of client certificates */
    bool require_trusted_client_cert; /* tlsRequireTrustedClientCertOnConnect (false) */
    char protocols[128];              /* tlsProtocols: "TLSv1.3,TLSv1.2" (the default: both) */
    char ciphers[1024];         /* tlsCiphers: OpenSSL cipher list for TLS 1.2 ("" = default) */
    double handshake_timeout_s; /* tlsHandshakeTimeoutSeconds (10) */
} tls_config_t;

/* Fills cfg from q. Malformed: negative, "key: reason" in err. */
int tls_config_load(const qconfig_t *q, tls_config_t *cfg, char *err, size_t err_len);

/* Loads certificate, key and trust store; QE_INVALID with the reason in err. */
int tls_ctx_new(const tls_config_t *cfg, tls_ctx_t **out, char *err, size_t err_len);
void tls_ctx_ref(tls_ctx_t *ctx);
void tls_ctx_unref(tls_ctx_t *ctx); /* NULL is ignored */

/* ---------------------------------------------------------------- conn_io -- */

typedef struct conn_io {
    int fd;
    tls_ssl_t *ssl; /* NULL: plain */
    bool handshake_done;
    bool want_write; /* the last read stopped because the socket was not writable */
} conn_io_t;

/* Takes ownership of fd. ctx NULL: plain I/O. 0, or -ENOMEM (fd not closed). */
int conn_io_init(conn_io_t *io, int fd, tls_ctx_t *ctx);
/* read(2) semantics: >0 bytes, 0 end of stream, -1 with errno (EAGAIN: come
 * back later; ECONNRESET/EPROTO: failed, e.g. a failed handshake). */
ssize_t conn_io_read(conn_io_t *io, void *buf, size_t len);
/* writev(2) semantics; with TLS the data is framed in records of up to 16 KiB
 * and a retry after EAGAIN must start with the same bytes (a write queue
 * naturally does). */
ssize_t conn_io_writev(conn_io_t *io, const struct iovec *iov, int iovcnt);
ssize_t conn_io_write(conn_io_t *io, const void *buf, size_t len);
/* Decrypted bytes are waiting inside OpenSSL (read again without polling). */
bool conn_io_pending(const conn_io_t *io);
bool conn_io_is_tls(const conn_io_t *io);
/* The common name of the client's verified certificate ("" when none):
 * the role of TLS authentication. */
void conn_io_peer_cn(const conn_io_t *io, char *out, size_t cap);
/* Sends close_notify (best effort) and closes the socket. Idempotent. */
void conn_io_close(conn_io_t *io);

#endif
