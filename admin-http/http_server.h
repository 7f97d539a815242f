/*
 * http_server.h — a small HTTP/1.1 server on a libev loop, for the REST admin
 * API, the HTTP lookup and /metrics.
 *
 * Parsing is Debian's libhttp-parser (streaming, resumable). Each request
 * becomes an exchange (http_exchange_t): the request as received, and a
 * response the handler fills, now or later (after metadata-store calls).
 * Requests pipelined on one connection are answered in the order received,
 * whatever order their handlers finish in. Connections are kept alive unless
 * the client (or an error) says otherwise.
 *
 * Bounds (http_server_config_t): header bytes per request (URL included;
 * past it 431), body bytes (past it 413, checked against Content-Length
 * before any body byte is read), requests in flight per connection (past it
 * the connection is not read until answers go out), concurrent connections
 * (past it new ones get 503 and are closed), a deadline for a request to
 * arrive whole once its first byte came (slow clients: closed), the idle time
 * of a kept-alive connection, and the time a response may take to drain.
 * An idle connection holds no buffer: read bytes go through one scratch
 * buffer of the server; a request's URL, headers and body are allocated as
 * they arrive and freed with the exchange.
 *
 * Ownership: the server owns connections and exchanges. A handler borrows
 * the exchange until it calls http_respond*() exactly once; after that the
 * exchange must not be touched. If the connection closes first, the exchange
 * stays valid (orphaned) until the handler responds, and the answer is
 * dropped. Loop thread only.
 */
#ifndef QUIRE_ADMIN_HTTP_SERVER_H
#define QUIRE_ADMIN_HTTP_SERVER_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_server http_server_t;
typedef struct http_exchange http_exchange_t;

typedef struct http_server_config {
    size_t header_bytes_max;   /* request line + headers (16 KiB) */
    size_t body_bytes_max;     /* request body (5 MiB) */
    uint32_t pipeline_max;     /* requests in flight per connection (16) */
    uint32_t connections_max;  /* concurrent connections (10000) */
    double request_timeout_s;  /* first byte to last byte of a request (30) */
    double idle_timeout_s;     /* kept-alive connection with nothing in flight (60) */
    double write_timeout_s;    /* response bytes waiting for the client to read (30) */
    size_t response_bytes_max; /* bytes queued for one connection before reads pause (8 MiB) */
} http_server_config_t;

void http_server_config_defaults(http_server_config_t *cfg);

/* Called once per complete request, on the loop thread. */
typedef void (*http_handler_fn)(http_exchange_t *ex, void *arg);

/* handler and arg are borrowed and must outlive the server. */
int http_server_new(struct ev_loop *loop, const http_server_config_t *cfg, http_handler_fn handler,
                    void *arg, http_server_t **out);
/* Binds address:port (IPv4; port 0 picks a free one) and listens. */
int http_server_listen(http_server_t *s, const char *address, int port);
/* The bound port (after listen). */
int http_server_port(const http_server_t *s);
/* Connections open now (tests and metrics). */
uint32_t http_server_connections(const http_server_t *s);
/* A connection writes at most this much per loop iteration; the rest waits for
 * its write watcher. A local client that reads as fast as the loop writes never
 * fills its socket, so one send of a 600-MB /metrics answer would otherwise copy
 * it all in one call and hold every producer's receipts for 200 ms. */
#define HTTP_WRITE_SLICE_BYTES (512u * 1024u)
/* The most bytes one connection wrote in one loop iteration (tests). */
size_t http_server_slice_max(const http_server_t *s);
/* Stops listening, closes every connection (exchanges still with their
 * handlers are orphaned), frees. NULL is ignored. */
void http_server_free(http_server_t *s);

/* ------------------------------------------------------------- request -- */

/* enum http_method of http_parser.h (HTTP_GET, HTTP_PUT, ...). */
int http_request_method(const http_exchange_t *ex);
const char *http_request_method_name(const http_exchange_t *ex);
/* The request target as sent (path and query, not decoded); borrowed. */
const char *http_request_url(const http_exchange_t *ex);
/* The value of header `name` (case-insensitive), or NULL; borrowed. */
const char *http_request_header(const http_exchange_t *ex, const char *name);
/* The body (NUL-terminated for convenience, not counted in *len); borrowed. */
const char *http_request_body(const http_exchange_t *ex, size_t *len);
/* "ip:port" of the client. */
const char *http_request_peer(const http_exchange_t *ex);
/* https: the verified client certificate's common name ("" when none). */
void http_request_tls_cn(const http_exchange_t *ex, char *out, size_t cap);
bool http_request_is_tls(const http_exchange_t *ex);
/* Serves https on this server's connections from now on (ctx referenced;
 * server/tls.h). Before http_server_listen. */
struct tls_ctx;
void http_server_set_tls(http_server_t *s, struct tls_ctx *ctx);
/* The handler and argument s was made with (a second listener serving the
 * same routes, e.g. https beside http). */
http_handler_fn http_server_handler_of(const http_server_t *s);
void *http_server_arg_of(const http_server_t *s);

/* ------------------------------------------------------------ response -- */

/* Adds a response header (copied). QE_TOO_LARGE past 8 KiB of them. */
int http_response_header(http_exchange_t *ex, const char *name, const char *value);
/* Answers with a copy of body[0..len). content_type NULL for none. Ends the
 * handler's hold on ex. */
void http_respond(http_exchange_t *ex, int status, const char *content_type, const void *body,
                  size_t len);
/* Same, taking ownership of body (malloc'd; freed by the server). */
void http_respond_take(http_exchange_t *ex, int status, const char *content_type, char *body,
                       size_t len);

/* The reason phrase of a status ("Not Found"). */
const char *http_status_text(int status);

#endif
