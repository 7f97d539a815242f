/*
 * http_server.c — see http_server.h.
 *
 * A connection's life:
 *
 *   accept ──> IDLE ──first byte──> RECEIVING ──message complete──> IDLE ...
 *                │                     │ deadline: request_timeout_s
 *                │ idle_timeout_s      │ from the first byte
 *                v                     v
 *              closed               closed (slow client)
 *
 * Each complete request is appended to the connection's queue of exchanges
 * and given to the handler. Responses leave strictly from the head of the
 * queue: an exchange answered out of order waits for those before it.
 * Invariants:
 *   1. queue_count <= pipeline_max + 1 (the +1: an error answer, which ends
 *      the connection); reading stops while queue_count >= pipeline_max, and
 *      bytes already read but not parsed wait in `stash`.
 *   2. The parser is paused after every complete message, so at most one
 *      request is being built at a time (c->cur).
 *   3. A connection is freed only when no callback of it is on the stack
 *      (depth == 0); conn_close() inside a callback marks it and the
 *      outermost frame frees it.
 *   4. Exchanges in the queue point back to their connection; closing the
 *      connection frees the answered ones and orphans the others (conn =
 *      NULL), which http_respond*() then frees.
 * After an error answer (400, 413, 431, ...) the connection stops reading
 * requests, sends what is queued, half-closes and drains the client's bytes
 * for a short while so that the answer is not lost to a TCP reset.
 */
#include "admin-http/http_server.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/accept_pause.h"
#include "common/log.h"
#include "server/tls.h"

#define HTTP_SCRATCH_BYTES (64u * 1024u)
#define HTTP_RESP_HEADERS_MAX 8192u
#define HTTP_LINGER_S 2.0
/* An answer's body from this size on is written from its own buffer, not
 * copied behind the head: a /metrics answer of 100,000 topics is hundreds of
 * MB, and its copy (with the write buffer's growth and page faults) held the
 * loop for a second or more (docs/performance.md, session 22). */
#define HTTP_BODY_ADOPT_MIN (64u * 1024u)

typedef struct http_conn http_conn_t;

struct http_exchange {
    http_conn_t *conn; /* NULL once orphaned */
    http_exchange_t *next;
    http_server_t *server;
    int method;
    bool keep_alive;
    /* request: url\0, then headers as "name\0value\0" pairs (names lowercased) */
    char *head;
    size_t head_len, head_cap, url_len;
    bool in_value; /* the last header bytes were a value */
    char *body;
    size_t body_len, body_cap;
    /* response */
    bool answered;
    bool close_after; /* the connection ends after this answer */
    int status;
    char content_type[96];
    char *resp_headers; /* "Name: value\r\n"... */
    size_t resp_headers_len;
    char *resp_body;
    size_t resp_len;
};

struct http_conn {
    http_server_t *server;
    http_conn_t *prev, *next;
    int fd;
    conn_io_t io; /* plain or TLS (server/tls.h) */
    ev_io rio, wio;
    ev_timer timer;
    http_parser parser;
    http_exchange_t *cur; /* request being received */
    http_exchange_t *queue_head, *queue_tail;
    uint32_t queue_count;
    int err_status; /* set by a parser callback that refused the request */
    /* written bytes: wbuf[wpos..wlen) still to send, then body[body_pos..body_len)
     * (a large answer's own body, HTTP_BODY_ADOPT_MIN; no answer is serialized
     * behind it until it is written) */
    char *wbuf;
    size_t wpos, wlen, wcap;
    char *body;
    size_t body_pos, body_len;
    unsigned int write_iter; /* the loop iteration write_iter_bytes counts */
    size_t write_iter_bytes; /* written in it, at most HTTP_WRITE_SLICE_BYTES */
    /* read but not parsed while the pipeline was full */
    char *stash;
    size_t stash_len;
    ev_tstamp request_started, last_activity, last_write;
    int depth;
    bool receiving; /* a request's first byte came, not yet its last */
    bool read_done; /* no more requests will be read (EOF, error, close) */
    bool closing;   /* freed when depth reaches 0 */
    bool ending;    /* an answer that ends the connection was queued */
    bool lingering; /* half-closed after the last answer; draining */
    bool reading;   /* rio started */
    char peer[64];
};

struct http_server {
    struct ev_loop *loop;
    http_server_config_t cfg;
    http_handler_fn handler;
    void *arg;
    int fd;
    int port;
    ev_io accept_io;
    accept_pause_t accept_pause; /* accept() out of descriptors: pause, do not spin */
    http_conn_t *conns;
    uint32_t conns_count;
    char *scratch;
    ev_tstamp last_refusal_log;
    http_parser_settings settings;
    tls_ctx_t *tls;   /* https: every connection is TLS (http_server_set_tls) */
    size_t slice_max; /* most bytes one connection wrote in one loop iteration */
};

void http_server_config_defaults(http_server_config_t *cfg)
{
    cfg->header_bytes_max = 16u * 1024u;
    cfg->body_bytes_max = 5u * 1024u * 1024u;
    cfg->pipeline_max = 16;
    cfg->connections_max = 10000;
    cfg->request_timeout_s = 30.0;
    cfg->idle_timeout_s = 60.0;
    cfg->write_timeout_s = 30.0;
    cfg->response_bytes_max = 8u * 1024u * 1024u;
}

const char *http_status_text(int status)
{
    switch (status) {
#define XX(num, name, string)                                                                      \
    case num:                                                                                      \
        return #string;
        HTTP_STATUS_MAP(XX)
#undef XX
    default:
        return "Unknown";
    }
}

static void conn_close(http_conn_t *c, const char *why);
static void conn_flush(http_conn_t *c);

/* Bytes of answers not yet written. */
static size_t conn_unwritten(const http_conn_t *c)
{
    return c->wlen - c->wpos + (c->body ? c->body_len - c->body_pos : 0);
}

static void conn_feed(http_conn_t *c, const char *data, size_t len);
static void conn_arm_timer(http_conn_t *c);

/* ------------------------------------------------------------ exchanges -- */

static void exchange_free(http_exchange_t *ex)
{
    free(ex->head);
    free(ex->body);
    free(ex->resp_headers);
    free(ex->resp_body);
    free(ex);
}

static http_exchange_t *exchange_new(http_conn_t *c)
{
    http_exchange_t *ex = calloc(1, sizeof *ex);
    if (!ex)
        return NULL;
    ex->conn = c;
    ex->server = c->server;
    return ex;
}

/* Appends bytes to the request head, bounded by header_bytes_max. */
static int exchange_head_append(http_exchange_t *ex, const char *at, size_t len, bool lower)
{
    size_t max = ex->server->cfg.header_bytes_max;
    if (ex->head_len + len + 1 > max)
        return QE_TOO_LARGE;
    if (ex->head_len + len + 1 > ex->head_cap) {
        size_t cap = ex->head_cap ? ex->head_cap : 256;
        while (cap < ex->head_len + len + 1)
            cap *= 2;
        if (cap > max)
            cap = max;
        char *p = realloc(ex->head, cap);
        if (!p)
            return -ENOMEM;
        ex->head = p;
        ex->head_cap = cap;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = at[i];
        if (lower && ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        ex->head[ex->head_len++] = ch;
    }
    ex->head[ex->head_len] = '\0';
    return 0;
}

/* Ends the string being built (url, header name or value) with its NUL. */
static int exchange_head_terminate(http_exchange_t *ex)
{
    int rc = exchange_head_append(ex, "", 0, false);
    if (rc == 0)
        ex->head_len++; /* keep the NUL exchange_head_append wrote */
    return rc;
}

int http_request_method(const http_exchange_t *ex)
{
    return ex->method;
}

const char *http_request_method_name(const http_exchange_t *ex)
{
    return http_method_str((enum http_method)ex->method);
}

const char *http_request_url(const http_exchange_t *ex)
{
    return ex->head ? ex->head : "";
}

const char *http_request_header(const http_exchange_t *ex, const char *name)
{
    if (!ex->head)
        return NULL;
    size_t pos = ex->url_len + 1;
    while (pos < ex->head_len) {
        const char *k = ex->head + pos;
        size_t klen = strlen(k);
        const char *v = k + klen + 1;
        if ((size_t)(v - ex->head) >= ex->head_len)
            return NULL;
        if (strcasecmp(k, name) == 0)
            return v;
        pos = (size_t)(v - ex->head) + strlen(v) + 1;
    }
    return NULL;
}

const char *http_request_body(const http_exchange_t *ex, size_t *len)
{
    *len = ex->body_len;
    return ex->body ? ex->body : "";
}

const char *http_request_peer(const http_exchange_t *ex)
{
    return ex->conn ? ex->conn->peer : "(closed)";
}

void http_request_tls_cn(const http_exchange_t *ex, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (ex->conn)
        conn_io_peer_cn(&ex->conn->io, out, cap);
}

bool http_request_is_tls(const http_exchange_t *ex)
{
    return ex->conn && conn_io_is_tls(&ex->conn->io);
}

http_handler_fn http_server_handler_of(const http_server_t *s)
{
    return s->handler;
}

void *http_server_arg_of(const http_server_t *s)
{
    return s->arg;
}

void http_server_set_tls(http_server_t *s, struct tls_ctx *ctx)
{
    if (ctx)
        tls_ctx_ref(ctx);
    tls_ctx_unref(s->tls);
    s->tls = ctx;
}

int http_response_header(http_exchange_t *ex, const char *name, const char *value)
{
    size_t add = strlen(name) + strlen(value) + 4;
    if (ex->resp_headers_len + add + 1 > HTTP_RESP_HEADERS_MAX)
        return QE_TOO_LARGE;
    for (const char *p = value; *p; p++)
        if (*p == '\r' || *p == '\n')
            return QE_INVALID; /* no header injection */
    char *p = realloc(ex->resp_headers, ex->resp_headers_len + add + 1);
    if (!p)
        return -ENOMEM;
    ex->resp_headers = p;
    ex->resp_headers_len +=
        (size_t)snprintf(p + ex->resp_headers_len, add + 1, "%s: %s\r\n", name, value);
    return 0;
}

void http_respond_take(http_exchange_t *ex, int status, const char *content_type, char *body,
                       size_t len)
{
    assert(!ex->answered);
    ex->answered = true;
    ex->status = status;
    snprintf(ex->content_type, sizeof ex->content_type, "%s", content_type ? content_type : "");
    ex->resp_body = body;
    ex->resp_len = body ? len : 0;
    http_conn_t *c = ex->conn;
    if (!c) {
        exchange_free(ex); /* orphaned: the client is gone */
        return;
    }
    c->depth++;
    conn_flush(c);
    c->depth--;
    if (c->closing && c->depth == 0)
        conn_close(c, NULL);
}

void http_respond(http_exchange_t *ex, int status, const char *content_type, const void *body,
                  size_t len)
{
    char *copy = NULL;
    if (body && len) {
        copy = malloc(len);
        if (!copy) {
            status = 500;
            len = 0;
        } else {
            memcpy(copy, body, len);
        }
    }
    http_respond_take(ex, status, content_type, copy, copy ? len : 0);
}

/* ---------------------------------------------------------------- parser -- */

static int on_message_begin(http_parser *p)
{
    http_conn_t *c = p->data;
    assert(c->cur == NULL);
    c->cur = exchange_new(c);
    if (!c->cur) {
        c->err_status = 503;
        return 1;
    }
    c->receiving = true;
    c->request_started = ev_now(c->server->loop);
    conn_arm_timer(c);
    return 0;
}

static int refuse(http_conn_t *c, int rc)
{
    c->err_status = rc == QE_TOO_LARGE ? 431 : 503;
    return 1;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    http_conn_t *c = p->data;
    int rc = exchange_head_append(c->cur, at, len, false);
    if (rc < 0)
        return refuse(c, rc);
    c->cur->url_len += len;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    http_conn_t *c = p->data;
    http_exchange_t *ex = c->cur;
    int rc = 0;
    if (ex->in_value || ex->head_len == ex->url_len) {
        rc = exchange_head_terminate(ex); /* ends the url or the previous value */
        ex->in_value = false;
    }
    if (rc == 0)
        rc = exchange_head_append(ex, at, len, true);
    return rc < 0 ? refuse(c, rc) : 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    http_conn_t *c = p->data;
    http_exchange_t *ex = c->cur;
    int rc = 0;
    if (!ex->in_value) {
        rc = exchange_head_terminate(ex); /* ends the name */
        ex->in_value = true;
    }
    if (rc == 0)
        rc = exchange_head_append(ex, at, len, false);
    return rc < 0 ? refuse(c, rc) : 0;
}

static void conn_send_continue(http_conn_t *c)
{
    static const char msg[] = "HTTP/1.1 100 Continue\r\n\r\n";
    ssize_t n = conn_io_write(&c->io, msg, sizeof msg - 1);
    (void)n; /* best effort: the client sends the body after a delay anyway */
}

static int on_headers_complete(http_parser *p)
{
    http_conn_t *c = p->data;
    http_exchange_t *ex = c->cur;
    int rc = ex->head_len == ex->url_len || ex->in_value ? exchange_head_terminate(ex) : 0;
    if (rc < 0)
        return refuse(c, rc) ? -1 : 0; /* 1 would mean "no body" here */
    ex->method = p->method;
    ex->keep_alive = http_should_keep_alive(p) != 0;
    if ((p->flags & F_CONTENTLENGTH) && p->content_length > c->server->cfg.body_bytes_max) {
        c->err_status = 413;
        return -1;
    }
    const char *expect = http_request_header(ex, "expect");
    if (expect && strcasecmp(expect, "100-continue") == 0 && c->queue_count == 0 &&
        conn_unwritten(c) == 0)
        conn_send_continue(c);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    http_conn_t *c = p->data;
    http_exchange_t *ex = c->cur;
    size_t max = c->server->cfg.body_bytes_max;
    if (ex->body_len + len > max) {
        c->err_status = 413;
        return 1;
    }
    if (ex->body_len + len + 1 > ex->body_cap) {
        size_t cap = ex->body_cap ? ex->body_cap : 1024;
        if ((p->flags & F_CONTENTLENGTH) && ex->body_cap == 0)
            cap = (size_t)p->content_length + len + 1;
        while (cap < ex->body_len + len + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        char *b = realloc(ex->body, cap);
        if (!b) {
            c->err_status = 503;
            return 1;
        }
        ex->body = b;
        ex->body_cap = cap;
    }
    memcpy(ex->body + ex->body_len, at, len);
    ex->body_len += len;
    ex->body[ex->body_len] = '\0';
    return 0;
}

static void conn_enqueue(http_conn_t *c, http_exchange_t *ex)
{
    ex->next = NULL;
    if (c->queue_tail)
        c->queue_tail->next = ex;
    else
        c->queue_head = ex;
    c->queue_tail = ex;
    c->queue_count++;
}

static int on_message_complete(http_parser *p)
{
    http_conn_t *c = p->data;
    c->receiving = false;
    conn_enqueue(c, c->cur);
    http_parser_pause(p, 1); /* one request at a time (invariant 2) */
    return 0;
}

/* ------------------------------------------------------------ connection -- */

static void conn_stop_reading(http_conn_t *c)
{
    if (c->reading) {
        ev_io_stop(c->server->loop, &c->rio);
        c->reading = false;
    }
}

static void conn_start_reading(http_conn_t *c)
{
    if (!c->reading && !c->closing && (!c->read_done || c->lingering)) {
        ev_io_start(c->server->loop, &c->rio);
        c->reading = true;
        if (conn_io_pending(&c->io))
            ev_feed_event(c->server->loop, &c->rio, EV_READ);
    }
}

static void conn_arm_timer(http_conn_t *c)
{
    http_server_t *s = c->server;
    ev_tstamp now = ev_now(s->loop), deadline;
    if (c->closing)
        return;
    if (c->lingering)
        deadline = c->last_write + HTTP_LINGER_S;
    else if (conn_unwritten(c) > 0)
        deadline = c->last_write + s->cfg.write_timeout_s;
    else if (c->receiving)
        deadline = c->request_started + s->cfg.request_timeout_s;
    else if (c->queue_count > 0)
        deadline = 0; /* waiting on handlers: they answer */
    else
        deadline = c->last_activity + s->cfg.idle_timeout_s;
    ev_timer_stop(s->loop, &c->timer);
    if (deadline > 0) {
        ev_timer_set(&c->timer, deadline > now ? deadline - now : 0.0, 0.0);
        ev_timer_start(s->loop, &c->timer);
    }
}

static void conn_free(http_conn_t *c)
{
    http_server_t *s = c->server;
    ev_io_stop(s->loop, &c->rio);
    ev_io_stop(s->loop, &c->wio);
    ev_timer_stop(s->loop, &c->timer);
    conn_io_close(&c->io);
    if (c->cur)
        exchange_free(c->cur);
    http_exchange_t *ex = c->queue_head;
    while (ex) {
        http_exchange_t *next = ex->next;
        if (ex->answered)
            exchange_free(ex);
        else
            ex->conn = NULL; /* orphaned: freed when its handler answers */
        ex = next;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->conns_count--;
    free(c->wbuf);
    free(c->body);
    free(c->stash);
    free(c);
}

/* why: logged at debug level (NULL: already said). */
static void conn_close(http_conn_t *c, const char *why)
{
    if (why)
        log_debug("http", "%s: closing: %s", c->peer, why);
    c->closing = true;
    c->read_done = true;
    if (c->depth == 0)
        conn_free(c);
}

/* Appends the serialized answer of ex to the write buffer. */
static int conn_serialize(http_conn_t *c, http_exchange_t *ex)
{
    char head[512];
    bool no_body = ex->status == 204 || ex->status == 304 || ex->status < 200;
    size_t body_len = no_body ? 0 : ex->resp_len;
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nServer: Quire\r\n", ex->status,
                     http_status_text(ex->status));
    if (ex->content_type[0] && !no_body)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Type: %s\r\n", ex->content_type);
    if (!no_body)
        n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", body_len);
    if (ex->close_after || !ex->keep_alive)
        n += snprintf(head + n, sizeof head - (size_t)n, "Connection: close\r\n");
    if (ex->method == HTTP_HEAD)
        body_len = 0;
    bool adopt = body_len >= HTTP_BODY_ADOPT_MIN;
    size_t need = (size_t)n + ex->resp_headers_len + 2 + (adopt ? 0 : body_len);
    if (c->wlen + need > c->wcap) {
        if (c->wpos > 0) {
            memmove(c->wbuf, c->wbuf + c->wpos, c->wlen - c->wpos);
            c->wlen -= c->wpos;
            c->wpos = 0;
        }
        size_t cap = c->wcap ? c->wcap : 4096;
        while (cap < c->wlen + need)
            cap *= 2;
        char *p = realloc(c->wbuf, cap);
        if (!p)
            return -ENOMEM;
        c->wbuf = p;
        c->wcap = cap;
    }
    memcpy(c->wbuf + c->wlen, head, (size_t)n);
    c->wlen += (size_t)n;
    if (ex->resp_headers_len) {
        memcpy(c->wbuf + c->wlen, ex->resp_headers, ex->resp_headers_len);
        c->wlen += ex->resp_headers_len;
    }
    memcpy(c->wbuf + c->wlen, "\r\n", 2);
    c->wlen += 2;
    if (adopt) { /* written from its own buffer, after the head */
        c->body = ex->resp_body;
        ex->resp_body = NULL;
        c->body_pos = 0;
        c->body_len = body_len;
    } else if (body_len) {
        memcpy(c->wbuf + c->wlen, ex->resp_body, body_len);
        c->wlen += body_len;
    }
    return 0;
}

/* Writes what the socket takes, up to this iteration's slice; 0, or a
 * negative code when the connection failed. */
static int conn_write(http_conn_t *c)
{
    http_server_t *s = c->server;
    unsigned int iter = ev_iteration(s->loop);
    if (c->write_iter != iter) {
        c->write_iter = iter;
        c->write_iter_bytes = 0;
    }
    while (c->write_iter_bytes < HTTP_WRITE_SLICE_BYTES) {
        bool head = c->wpos < c->wlen; /* the write buffer first, then the body */
        if (!head && !(c->body && c->body_pos < c->body_len))
            break;
        size_t len = head ? c->wlen - c->wpos : c->body_len - c->body_pos;
        size_t room = HTTP_WRITE_SLICE_BYTES - c->write_iter_bytes;
        if (len > room)
            len = room;
        ssize_t n = conn_io_write(&c->io, head ? c->wbuf + c->wpos : c->body + c->body_pos, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0)
            return -errno;
        *(head ? &c->wpos : &c->body_pos) += (size_t)n;
        c->write_iter_bytes += (size_t)n;
        if (c->write_iter_bytes > s->slice_max)
            s->slice_max = c->write_iter_bytes;
        c->last_write = c->last_activity = ev_now(s->loop);
    }
    if (c->body && c->body_pos == c->body_len) {
        free(c->body);
        c->body = NULL;
        c->body_pos = c->body_len = 0;
    }
    if (conn_unwritten(c) == 0) {
        ev_io_stop(s->loop, &c->wio);
        free(c->wbuf); /* lazily allocated again for the next answer */
        c->wbuf = NULL;
        c->wpos = c->wlen = c->wcap = 0;
    } else {
        ev_io_start(s->loop, &c->wio);
    }
    return 0;
}

static void conn_linger(http_conn_t *c)
{
    shutdown(c->fd, SHUT_WR);
    c->lingering = true;
    c->read_done = true;
    c->last_write = ev_now(c->server->loop);
    free(c->stash);
    c->stash = NULL;
    c->stash_len = 0;
    conn_start_reading(c);
    conn_arm_timer(c);
}

/* Moves answered exchanges from the head of the queue to the wire, in order. */
static void conn_flush(http_conn_t *c)
{
    http_server_t *s = c->server;
more:
    while (c->queue_head && c->queue_head->answered && !c->ending && !c->body) {
        http_exchange_t *ex = c->queue_head;
        c->queue_head = ex->next;
        if (!c->queue_head)
            c->queue_tail = NULL;
        c->queue_count--;
        if (conn_serialize(c, ex) < 0) {
            exchange_free(ex);
            conn_close(c, "out of memory");
            return;
        }
        if (ex->close_after || !ex->keep_alive) {
            /* Nothing after this answer is served. */
            c->ending = true;
            c->read_done = true;
            conn_stop_reading(c);
            free(c->stash);
            c->stash = NULL;
            c->stash_len = 0;
        }
        exchange_free(ex);
    }
    if (conn_write(c) < 0) {
        conn_close(c, "write failed");
        return;
    }
    if (!c->body && conn_unwritten(c) == 0 && c->queue_head && c->queue_head->answered &&
        !c->ending)
        goto more; /* a large body went out whole: the answers queued behind it */
    if (c->ending) {
        if (conn_unwritten(c) == 0 && !c->lingering)
            conn_linger(c);
        conn_arm_timer(c);
        return;
    }
    /* Room in the pipeline again: parse what waited (not from inside a
     * parse: the outer conn_feed continues), then read more. */
    if (c->stash && c->queue_count < s->cfg.pipeline_max && c->depth <= 1) {
        char *data = c->stash;
        size_t len = c->stash_len;
        c->stash = NULL;
        c->stash_len = 0;
        conn_feed(c, data, len);
        free(data);
    }
    if (!c->stash && !c->read_done && c->queue_count < s->cfg.pipeline_max &&
        conn_unwritten(c) < s->cfg.response_bytes_max)
        conn_start_reading(c);
    else if (conn_unwritten(c) >= s->cfg.response_bytes_max)
        conn_stop_reading(c);
    conn_arm_timer(c);
}

/* Answers the request the parser refused, then ends the connection. */
static void conn_refuse(http_conn_t *c, int status, const char *reason)
{
    http_server_t *s = c->server;
    ev_tstamp now = ev_now(s->loop);
    if (now - s->last_refusal_log >= 1.0) {
        s->last_refusal_log = now;
        log_warn("http", "%s: refused request: %d %s", c->peer, status, reason);
    }
    http_exchange_t *ex = c->cur ? c->cur : exchange_new(c);
    c->cur = NULL;
    c->receiving = false;
    c->read_done = true;
    conn_stop_reading(c);
    if (!ex) {
        conn_close(c, "out of memory");
        return;
    }
    ex->keep_alive = false;
    ex->close_after = true;
    ex->method = HTTP_GET;
    conn_enqueue(c, ex);
    char body[256];
    int n = snprintf(body, sizeof body, "{\"reason\":\"%s\"}", reason);
    http_respond(ex, status, "application/json", body, (size_t)n);
}

/* Parses data; dispatches each complete request; keeps what the full
 * pipeline cannot take in the stash. */
static void conn_feed(http_conn_t *c, const char *data, size_t len)
{
    http_server_t *s = c->server;
    c->depth++;
    while (len > 0 && !c->closing && !c->read_done) {
        if (c->queue_count >= s->cfg.pipeline_max) {
            char *st = malloc(len);
            if (!st) {
                conn_close(c, "out of memory");
                break;
            }
            memcpy(st, data, len);
            c->stash = st;
            c->stash_len = len;
            conn_stop_reading(c);
            break;
        }
        size_t n = http_parser_execute(&c->parser, &s->settings, data, len);
        enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
        if (err == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            data += n;
            len -= n;
            http_exchange_t *ex = c->cur;
            c->cur = NULL;
            s->handler(ex, s->arg); /* may answer at once */
            continue;
        }
        if (err != HPE_OK) {
            int status = c->err_status ? c->err_status : 400;
            const char *reason = status == 413   ? "Request body too large"
                                 : status == 431 ? "Request header fields too large"
                                 : status == 503 ? "Server out of memory"
                                                 : http_errno_description(err);
            conn_refuse(c, status, reason);
            break;
        }
        if (c->parser.upgrade) {
            conn_refuse(c, 400, "Protocol upgrade is not supported");
            break;
        }
        data += n;
        len -= n;
    }
    c->depth--;
    if (c->closing && c->depth == 0)
        conn_free(c);
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    http_conn_t *c = w->data;
    http_server_t *s = c->server;
    ssize_t n = conn_io_read(&c->io, s->scratch, HTTP_SCRATCH_BYTES);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        if (c->lingering || n < 0 || (c->queue_count == 0 && conn_unwritten(c) == 0)) {
            conn_close(c, n < 0 ? "read failed" : "closed by the client");
            return;
        }
        /* EOF with answers owed: half-closed client, answer then close. */
        c->read_done = true;
        conn_stop_reading(c);
        if (c->cur) { /* an incomplete request is dropped */
            exchange_free(c->cur);
            c->cur = NULL;
            c->receiving = false;
        }
        if (c->queue_tail)
            c->queue_tail->close_after = true;
        else
            c->ending = true;
        conn_arm_timer(c);
        return;
    }
    if (c->lingering)
        return; /* drained and dropped */
    c->last_activity = ev_now(s->loop);
    c->depth++;
    conn_feed(c, s->scratch, (size_t)n);
    if (!c->closing)
        conn_arm_timer(c);
    if (!c->closing && c->reading && conn_io_pending(&c->io)) /* TLS bytes inside OpenSSL */
        ev_feed_event(s->loop, &c->rio, EV_READ);
    c->depth--;
    if (c->closing && c->depth == 0)
        conn_free(c);
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    http_conn_t *c = w->data;
    c->depth++;
    conn_flush(c);
    c->depth--;
    if (c->closing && c->depth == 0)
        conn_free(c);
}

static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    http_conn_t *c = w->data;
    const char *why = c->lingering            ? NULL
                      : conn_unwritten(c) > 0 ? "client does not read its answers"
                      : c->receiving          ? "request not complete in time"
                                              : "idle";
    if (why && strcmp(why, "idle") != 0)
        log_warn("http", "%s: closing: %s", c->peer, why);
    conn_close(c, why);
}

/* -------------------------------------------------------------- accepting -- */

static void server_refuse_connection(http_server_t *s, int fd)
{
    static const char body[] = "{\"reason\":\"Too many connections\"}";
    char msg[256];
    int len = snprintf(msg, sizeof msg,
                       "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                       sizeof body - 1, body);
    ssize_t n = send(fd, msg, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
    close(fd);
    ev_tstamp now = ev_now(s->loop);
    if (now - s->last_refusal_log >= 1.0) {
        s->last_refusal_log = now;
        log_warn("http", "refused a connection: %u open (the bound)", s->conns_count);
    }
}

static void server_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    http_server_t *s = w->data;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(s->fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                !accept_pause_if_exhausted(&s->accept_pause, w, errno, "http"))
                log_warn("http", "accept: %s", strerror(errno));
            return;
        }
        if (s->cfg.connections_max && s->conns_count >= s->cfg.connections_max) {
            server_refuse_connection(s, fd);
            continue;
        }
        http_conn_t *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->server = s;
        c->fd = fd;
        if (conn_io_init(&c->io, fd, s->tls) < 0) {
            close(fd);
            free(c);
            continue;
        }
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(sa.sin_port));
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        ev_io_init(&c->rio, conn_read_cb, fd, EV_READ);
        ev_io_init(&c->wio, conn_write_cb, fd, EV_WRITE);
        ev_init(&c->timer, conn_timer_cb);
        c->rio.data = c->wio.data = c->timer.data = c;
        c->last_activity = c->last_write = ev_now(loop);
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->conns_count++;
        conn_start_reading(c);
        conn_arm_timer(c);
    }
}

/* ---------------------------------------------------------------- server -- */

int http_server_new(struct ev_loop *loop, const http_server_config_t *cfg, http_handler_fn handler,
                    void *arg, http_server_t **out)
{
    http_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->scratch = malloc(HTTP_SCRATCH_BYTES);
    if (!s->scratch) {
        free(s);
        return -ENOMEM;
    }
    s->loop = loop;
    s->cfg = *cfg;
    if (s->cfg.pipeline_max == 0)
        s->cfg.pipeline_max = 1;
    s->handler = handler;
    s->arg = arg;
    s->fd = -1;
    s->settings.on_message_begin = on_message_begin;
    s->settings.on_url = on_url;
    s->settings.on_header_field = on_header_field;
    s->settings.on_header_value = on_header_value;
    s->settings.on_headers_complete = on_headers_complete;
    s->settings.on_body = on_body;
    s->settings.on_message_complete = on_message_complete;
    s->last_refusal_log = -10.0;
    *out = s;
    return 0;
}

int http_server_listen(http_server_t *s, const char *address, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (port < 0 || port > 65535 || inet_pton(AF_INET, address, &sa.sin_addr) != 1) {
        log_error("http", "cannot listen on '%s:%d': not an IPv4 address and port", address, port);
        return QE_INVALID;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
        int rc = -errno;
        log_error("http", "cannot listen on %s:%d: %s", address, port, strerror(errno));
        close(fd);
        return rc;
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    s->port = ntohs(sa.sin_port);
    s->fd = fd;
    accept_pause_init(&s->accept_pause, s->loop);
    ev_io_init(&s->accept_io, server_accept_cb, fd, EV_READ);
    s->accept_io.data = s;
    ev_io_start(s->loop, &s->accept_io);
    return 0;
}

int http_server_port(const http_server_t *s)
{
    return s->port;
}

size_t http_server_slice_max(const http_server_t *s)
{
    return s->slice_max;
}

uint32_t http_server_connections(const http_server_t *s)
{
    return s->conns_count;
}

void http_server_free(http_server_t *s)
{
    if (!s)
        return;
    accept_pause_cancel(&s->accept_pause);
    if (s->fd >= 0) {
        ev_io_stop(s->loop, &s->accept_io);
        close(s->fd);
    }
    while (s->conns) {
        http_conn_t *c = s->conns;
        c->depth = 0;
        conn_free(c);
    }
    tls_ctx_unref(s->tls);
    free(s->scratch);
    free(s);
}
