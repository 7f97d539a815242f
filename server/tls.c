/*
 * tls.c — see tls.h.
 *
 * Writes: conn_io_writev gathers the iovecs into records of at most
 * TLS_RECORD_BYTES (a 16 KiB staging copy) and SSL_writes each. With
 * SSL_MODE_ENABLE_PARTIAL_WRITE and SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, a
 * write that returned WANT_WRITE may be retried from another buffer holding
 * the same first bytes and at least as many of them, which is what a write
 * queue retried from its head gives.
 */
#include "server/tls.h"

#include <assert.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"

#define TLS_RECORD_BYTES 16384

struct tls_ctx {
    SSL_CTX *ssl_ctx;
    int refs;
};

/* ------------------------------------------------------------- config -- */

static int cfg_str(const qconfig_t *q, const char *key, char *out, size_t cap, char *err,
                   size_t err_len)
{
    const char *v = qconfig_get(q, key, "");
    if (strncmp(v, "file://", 7) == 0)
        v += 7;
    if (strlen(v) >= cap) {
        snprintf(err, err_len, "%s: longer than %zu bytes", key, cap - 1);
        return QE_INVALID;
    }
    snprintf(out, cap, "%s", v);
    return 0;
}

int tls_config_load(const qconfig_t *q, tls_config_t *cfg, char *err, size_t err_len)
{
    memset(cfg, 0, sizeof *cfg);
    if (cfg_str(q, "tlsCertificateFilePath", cfg->cert_file, sizeof cfg->cert_file, err, err_len) <
            0 ||
        cfg_str(q, "tlsKeyFilePath", cfg->key_file, sizeof cfg->key_file, err, err_len) < 0 ||
        cfg_str(q, "tlsTrustCertsFilePath", cfg->trust_certs_file, sizeof cfg->trust_certs_file,
                err, err_len) < 0 ||
        cfg_str(q, "tlsProtocols", cfg->protocols, sizeof cfg->protocols, err, err_len) < 0 ||
        cfg_str(q, "tlsCiphers", cfg->ciphers, sizeof cfg->ciphers, err, err_len) < 0)
        return QE_INVALID;
    if (qconfig_get_bool(q, "tlsRequireTrustedClientCertOnConnect", false,
                         &cfg->require_trusted_client_cert) < 0) {
        snprintf(err, err_len, "tlsRequireTrustedClientCertOnConnect: expected true or false");
        return QE_INVALID;
    }
    int64_t v;
    if (qconfig_get_int(q, "tlsHandshakeTimeoutSeconds", 10, 1, 3600, &v) < 0) {
        snprintf(err, err_len, "tlsHandshakeTimeoutSeconds: expected a whole number in [1, 3600]");
        return QE_INVALID;
    }
    cfg->handshake_timeout_s = (double)v;
    return 0;
}

/* ---------------------------------------------------------------- ctx -- */

static void ssl_err_text(char *err, size_t err_len, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(err, err_len, "%s: %s", what, buf);
}

/* tlsProtocols: the lowest and highest of the listed versions; only 1.2, 1.3. */
static int set_protocols(SSL_CTX *ctx, const char *list, char *err, size_t err_len)
{
    int lo = TLS1_3_VERSION, hi = TLS1_2_VERSION;
    if (!*list)
        list = "TLSv1.3,TLSv1.2";
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int v;
        if (strcmp(tok, "TLSv1.2") == 0)
            v = TLS1_2_VERSION;
        else if (strcmp(tok, "TLSv1.3") == 0)
            v = TLS1_3_VERSION;
        else {
            snprintf(err, err_len, "tlsProtocols: '%s' is not offered (TLSv1.2, TLSv1.3)", tok);
            return QE_INVALID;
        }
        if (v < lo)
            lo = v;
        if (v > hi)
            hi = v;
    }
    if (lo > hi) {
        snprintf(err, err_len, "tlsProtocols: empty");
        return QE_INVALID;
    }
    SSL_CTX_set_min_proto_version(ctx, lo);
    SSL_CTX_set_max_proto_version(ctx, hi);
    return 0;
}

int tls_ctx_new(const tls_config_t *cfg, tls_ctx_t **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!cfg->cert_file[0] || !cfg->key_file[0]) {
        snprintf(err, err_len, "TLS needs tlsCertificateFilePath and tlsKeyFilePath");
        return QE_INVALID;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_err_text(err, err_len, "SSL_CTX_new");
        return -ENOMEM;
    }
    int rc = set_protocols(ctx, cfg->protocols, err, err_len);
    if (rc < 0)
        goto fail;
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    rc = QE_INVALID;
    if (cfg->ciphers[0] && SSL_CTX_set_cipher_list(ctx, cfg->ciphers) != 1) {
        ssl_err_text(err, err_len, "tlsCiphers");
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1) {
        ssl_err_text(err, err_len, cfg->cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        ssl_err_text(err, err_len, cfg->key_file);
        goto fail;
    }
    if (cfg->trust_certs_file[0]) {
        if (SSL_CTX_load_verify_locations(ctx, cfg->trust_certs_file, NULL) != 1) {
            ssl_err_text(err, err_len, cfg->trust_certs_file);
            goto fail;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->trust_certs_file);
        if (names)
            SSL_CTX_set_client_CA_list(ctx, names);
        /* A client certificate is asked for and, when sent, must verify. */
        int mode = SSL_VERIFY_PEER;
        if (cfg->require_trusted_client_cert)
            mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        SSL_CTX_set_verify(ctx, mode, NULL);
        SSL_CTX_set_verify_depth(ctx, 8);
    } else if (cfg->require_trusted_client_cert) {
        snprintf(err, err_len, "tlsRequireTrustedClientCertOnConnect needs tlsTrustCertsFilePath");
        goto fail;
    }
    tls_ctx_t *t = calloc(1, sizeof *t);
    if (!t) {
        rc = -ENOMEM;
        goto fail;
    }
    t->ssl_ctx = ctx;
    t->refs = 1;
    *out = t;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return rc;
}

void tls_ctx_ref(tls_ctx_t *ctx)
{
    ctx->refs++;
}

void tls_ctx_unref(tls_ctx_t *ctx)
{
    if (!ctx)
        return;
    assert(ctx->refs > 0);
    if (--ctx->refs > 0)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

/* ------------------------------------------------------------ conn_io -- */

int conn_io_init(conn_io_t *io, int fd, tls_ctx_t *ctx)
{
    memset(io, 0, sizeof *io);
    io->fd = fd;
    if (!ctx) {
        io->handshake_done = true;
        return 0;
    }
    SSL *ssl = SSL_new(ctx->ssl_ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ERR_clear_error();
        return -ENOMEM;
    }
    SSL_set_accept_state(ssl);
    io->ssl = ssl;
    return 0;
}

bool conn_io_is_tls(const conn_io_t *io)
{
    return io->ssl != NULL;
}

/* Maps an SSL_get_error result to errno; -1 always. */
static ssize_t ssl_fail(conn_io_t *io, int ret, bool reading)
{
    int e = SSL_get_error(io->ssl, ret);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        if (reading)
            io->want_write = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        errno = 0;
        return 0; /* close_notify: end of stream */
    case SSL_ERROR_SYSCALL:
        if (errno == EAGAIN || errno == EINTR)
            return -1;
        ERR_clear_error();
        if (errno == 0)
            errno = ECONNRESET; /* EOF without close_notify */
        return -1;
    default: {
        unsigned long err = ERR_peek_error();
        char buf[200] = "";
        if (err)
            ERR_error_string_n(err, buf, sizeof buf);
        ERR_clear_error();
        log_debug("tls", "fd %d: %s failed: %s", io->fd,
                  io->handshake_done ? (reading ? "read" : "write") : "handshake", buf);
        errno = EPROTO;
        return -1;
    }
    }
}

ssize_t conn_io_read(conn_io_t *io, void *buf, size_t len)
{
    if (!io->ssl)
        return read(io->fd, buf, len);
    io->want_write = false;
    if (len > INT32_MAX)
        len = INT32_MAX;
    ERR_clear_error();
    int n = SSL_read(io->ssl, buf, (int)len);
    if (!io->handshake_done && SSL_is_init_finished(io->ssl))
        io->handshake_done = true;
    if (n > 0)
        return n;
    ssize_t r = ssl_fail(io, n, true);
    if (r == 0 && !io->handshake_done)
        errno = ECONNRESET;
    return r;
}

ssize_t conn_io_write(conn_io_t *io, const void *buf, size_t len)
{
    if (!io->ssl)
        return send(io->fd, buf, len, MSG_NOSIGNAL);
    struct iovec iov = {(void *)buf, len};
    return conn_io_writev(io, &iov, 1);
}

ssize_t conn_io_writev(conn_io_t *io, const struct iovec *iov, int iovcnt)
{
    if (!io->ssl)
        return writev(io->fd, iov, iovcnt);
    unsigned char stage[TLS_RECORD_BYTES];
    ssize_t total = 0;
    int i = 0;
    size_t off = 0; /* into iov[i] */
    while (i < iovcnt) {
        size_t fill = 0;
        int j = i;
        size_t o = off;
        while (j < iovcnt && fill < sizeof stage) {
            size_t take = iov[j].iov_len - o;
            if (take > sizeof stage - fill)
                take = sizeof stage - fill;
            memcpy(stage + fill, (const char *)iov[j].iov_base + o, take);
            fill += take;
            o += take;
            if (o == iov[j].iov_len) {
                j++;
                o = 0;
            }
        }
        if (fill == 0)
            break;
        ERR_clear_error();
        int n = SSL_write(io->ssl, stage, (int)fill);
        if (n <= 0) {
            ssize_t r = ssl_fail(io, n, false);
            if (total > 0)
                return total;
            if (r == 0)
                errno = EPIPE;
            return -1;
        }
        total += n;
        /* advance (i, off) by n bytes */
        size_t adv = (size_t)n;
        while (adv > 0 && i < iovcnt) {
            size_t left = iov[i].iov_len - off;
            if (adv >= left) {
                adv -= left;
                i++;
                off = 0;
            } else {
                off += adv;
                adv = 0;
            }
        }
        while (i < iovcnt && iov[i].iov_len == off) {
            i++;
            off = 0;
        }
    }
    return total;
}

bool conn_io_pending(const conn_io_t *io)
{
    return io->ssl && SSL_pending(io->ssl) > 0;
}

void conn_io_peer_cn(const conn_io_t *io, char *out, size_t cap)
{
    out[0] = '\0';
    if (!io->ssl || !io->handshake_done || cap == 0)
        return;
    X509 *cert = SSL_get1_peer_certificate(io->ssl);
    if (!cert)
        return;
    if (SSL_get_verify_result(io->ssl) == X509_V_OK) {
        X509_NAME *subj = X509_get_subject_name(cert);
        int idx = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
        X509_NAME_ENTRY *e = idx >= 0 ? X509_NAME_get_entry(subj, idx) : NULL;
        ASN1_STRING *s = e ? X509_NAME_ENTRY_get_data(e) : NULL;
        unsigned char *utf8 = NULL;
        int n = s ? ASN1_STRING_to_UTF8(&utf8, s) : -1;
        /* A CN with a NUL inside could impersonate another role: refused. */
        if (n > 0 && (size_t)n < cap && memchr(utf8, '\0', (size_t)n) == NULL) {
            memcpy(out, utf8, (size_t)n);
            out[n] = '\0';
        }
        OPENSSL_free(utf8);
    }
    X509_free(cert);
}

void conn_io_close(conn_io_t *io)
{
    if (io->ssl) {
        if (io->handshake_done) {
            ERR_clear_error();
            SSL_shutdown(io->ssl); /* best effort close_notify; never waits */
        }
        SSL_free(io->ssl);
        io->ssl = NULL;
        ERR_clear_error();
    }
    if (io->fd >= 0)
        close(io->fd);
    io->fd = -1;
}
