/*
 * bookie_server.c — the bookie RPC server (see bookie_server.h; framing in
 * bookie_rpc.h; docs/bookie-rpc.md).
 *
 * Connection life cycle:
 *
 *   accept -> OPEN (in the server's list, fd and watchers live)
 *          -> CLOSED by EOF, a socket error, a bad frame or bookie_server_stop:
 *             fd closed, buffers freed, server == NULL
 *          -> FREED when the last reference goes.
 *
 * References on a connection: one while OPEN, one per request inside the
 * bookie (bks_req_t), one while a watcher callback runs. So a bookie callback
 * that arrives after the connection closed still finds its bks_req_t's
 * connection in memory, sees server == NULL and drops the answer.
 *
 * Reading stops (rio stopped) while a connection has
 * BOOKIE_SERVER_CONN_PENDING_MAX requests in the bookie or
 * BOOKIE_SERVER_CONN_OUT_BYTES_MAX bytes queued for writing; whenever either
 * falls back under its bound, frames already buffered are parsed first, then
 * reading resumes. Frames are handled in arrival order. Responses are queued
 * and written by the EV_WRITE watcher, so those of one loop iteration share
 * a sendmsg.
 */
#include "storage/bookie/bookie_server.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_rpc.h"

#define BKS_ACCEPTS_PER_WAKEUP 64
#define BKS_READS_PER_WAKEUP 16
#define BKS_LISTEN_BACKLOG 128

typedef struct bks_conn {
    struct bks_conn *prev, *next; /* the server's list, while OPEN */
    bookie_server_t *server;      /* NULL once CLOSED */
    int fd;
    ev_io rio, wio;
    bkrpc_reader_t rd;
    bkrpc_outq_t outq;
    unsigned refs;
    uint32_t pending;           /* requests inside the bookie */
    uint32_t pending_reads;     /* of which reads */
    uint64_t pending_add_bytes; /* bytes of the adds among them */
    bool reading;               /* rio started */
    char peer[64];
} bks_conn_t;

/* One request inside the bookie; holds a reference on its connection. */
typedef struct bks_req {
    bks_conn_t *conn;
    uint64_t request_id;
    Quire__Bookie__OpType op;
    int64_t ledger_id;
    int64_t entry_id;
    uint32_t add_bytes; /* ADD: body size, counted in pending_add_bytes */
} bks_req_t;

struct bookie_server {
    struct ev_loop *loop;
    bookie_t *bk;
    int fd;
    int port;
    ev_io accept_io;
    bks_conn_t *conns;
    size_t nconns;
    bookie_server_stats_t stats; /* counters; gauges computed on demand */
};

static void conn_close(bks_conn_t *c, const char *why);
static void conn_process(bks_conn_t *c);

/* ------------------------------------------------------------ references -- */

static void conn_ref(bks_conn_t *c)
{
    c->refs++;
}

static void conn_unref(bks_conn_t *c)
{
    assert(c->refs > 0);
    if (--c->refs > 0)
        return;
    assert(c->server == NULL && c->pending == 0);
    free(c);
}

/* ------------------------------------------------------------ flow control -- */

static bool conn_may_read(const bks_conn_t *c)
{
    return c->server && c->pending < BOOKIE_SERVER_CONN_PENDING_MAX &&
           c->pending_reads < BOOKIE_SERVER_CONN_READS_MAX &&
           c->pending_add_bytes < BOOKIE_SERVER_CONN_ADD_BYTES_MAX &&
           c->outq.bytes < BOOKIE_SERVER_CONN_OUT_BYTES_MAX;
}

/* Starts or stops reading as the bounds allow; on resume, parses what is
 * already buffered first. */
static void conn_update_reading(bks_conn_t *c)
{
    if (!c->server)
        return;
    struct ev_loop *loop = c->server->loop;
    if (conn_may_read(c) && !c->reading) {
        conn_process(c);
        if (c->server && conn_may_read(c)) {
            ev_io_start(loop, &c->rio);
            c->reading = true;
        }
    } else if (!conn_may_read(c) && c->reading) {
        ev_io_stop(loop, &c->rio);
        c->reading = false;
        log_debug("bookie-server", "%s: reading paused (%u pending, %zu bytes queued)", c->peer,
                  c->pending, c->outq.bytes);
    }
}

static void conn_flush(bks_conn_t *c)
{
    int rc = bkrpc_outq_write(&c->outq, c->fd);
    if (rc < 0) {
        conn_close(c, strerror(-rc));
        return;
    }
    if (rc == 1)
        ev_io_start(c->server->loop, &c->wio);
    else
        ev_io_stop(c->server->loop, &c->wio);
}

/* ------------------------------------------------------- pending counts -- */

/* A request enters the bookie: counted against the bounds, holds a reference. */
static void conn_track(bks_conn_t *c, const bks_req_t *req)
{
    c->pending++;
    c->pending_reads += req->op == QUIRE__BOOKIE__OP_TYPE__READ;
    c->pending_add_bytes += req->add_bytes;
    conn_ref(c);
}

/* The reference stays until the caller's conn_unref (after answering). */
static void conn_untrack(bks_conn_t *c, const bks_req_t *req)
{
    assert(c->pending > 0 && c->pending_add_bytes >= req->add_bytes);
    c->pending--;
    c->pending_reads -= req->op == QUIRE__BOOKIE__OP_TYPE__READ;
    c->pending_add_bytes -= req->add_bytes;
}

/* ------------------------------------------------------------- responses -- */

/* Queues a response; body (borrowed, may be NULL) is referenced by the frame. */
static void conn_send(bks_conn_t *c, const Quire__Bookie__Response *resp, qbuf_t *body)
{
    if (!c->server)
        return;
    bkrpc_out_t *m;
    int rc = bkrpc_encode(&resp->base, body, &m);
    if (rc < 0) {
        conn_close(c, q_strerror(rc));
        return;
    }
    bkrpc_outq_push(&c->outq, m);
    /* Written when the loop next polls: the answers completed in one loop
     * iteration (a journal group) leave in one sendmsg. */
    ev_io_start(c->server->loop, &c->wio);
}

static void resp_init(Quire__Bookie__Response *resp, Quire__Bookie__OpType op, uint64_t id, int rc)
{
    quire__bookie__response__init(resp);
    resp->op = op;
    resp->request_id = id;
    resp->status = bkrpc_status_from_rc(rc);
}

/* Answers req (if its connection is still open) and frees it. */
static void req_finish(bks_req_t *req, const Quire__Bookie__Response *resp, qbuf_t *body)
{
    bks_conn_t *c = req->conn;
    conn_untrack(c, req);
    conn_send(c, resp, body);
    conn_update_reading(c);
    conn_unref(c);
    free(req);
}

static void req_done_simple(bks_req_t *req, int rc, bool has_lac, int64_t lac)
{
    Quire__Bookie__Response resp;
    resp_init(&resp, req->op, req->request_id, rc);
    resp.has_ledger_id = true;
    resp.ledger_id = req->ledger_id;
    resp.has_lac = has_lac && rc == 0;
    resp.lac = lac;
    req_finish(req, &resp, NULL);
}

static void server_add_done(int rc, int64_t ledger_id, int64_t entry_id, void *arg)
{
    bks_req_t *req = arg;
    Quire__Bookie__Response resp;
    resp_init(&resp, req->op, req->request_id, rc);
    resp.has_ledger_id = resp.has_entry_id = true;
    resp.ledger_id = ledger_id;
    resp.entry_id = entry_id;
    req_finish(req, &resp, NULL);
}

static void server_read_done(int rc, int64_t ledger_id, int64_t entry_id, qbuf_t *entry,
                             int64_t lac, void *arg)
{
    bks_req_t *req = arg;
    Quire__Bookie__Response resp;
    resp_init(&resp, req->op, req->request_id, rc);
    resp.has_ledger_id = resp.has_entry_id = resp.has_lac = true;
    resp.ledger_id = ledger_id;
    resp.entry_id = entry_id;
    resp.lac = lac;
    req_finish(req, &resp, rc == 0 ? entry : NULL);
}

static void server_lac_done(int rc, int64_t ledger_id, int64_t lac, void *arg)
{
    bks_req_t *req = arg;
    assert(ledger_id == req->ledger_id);
    req_done_simple(req, rc, true, lac);
}

static void server_delete_done(int rc, void *arg)
{
    req_done_simple(arg, rc, false, 0);
}

/* -------------------------------------------------------------- requests -- */

/* Calls the bookie for q; returns its immediate result. */
static int req_dispatch(bookie_t *bk, bks_req_t *req, const Quire__Bookie__Request *q, qbuf_t *body)
{
    switch (q->op) {
    case QUIRE__BOOKIE__OP_TYPE__ADD: {
        qbuf_t *empty = NULL;
        if (!body && !(body = empty = qbuf_new(0)))
            return -ENOMEM;
        bool recovery = q->add->has_recovery && q->add->recovery;
        int rc = (recovery ? bookie_add_recovery : bookie_add)(
            bk, q->add->ledger_id, q->add->entry_id, q->add->lac, body, server_add_done, req);
        qbuf_unref(empty);
        return rc;
    }
    case QUIRE__BOOKIE__OP_TYPE__READ:
        return bookie_read(bk, q->read->ledger_id, q->read->entry_id, server_read_done, req);
    case QUIRE__BOOKIE__OP_TYPE__READ_LAC:
        return bookie_read_lac(bk, q->read_lac->ledger_id, server_lac_done, req);
    case QUIRE__BOOKIE__OP_TYPE__FENCE:
        return bookie_fence(bk, q->fence->ledger_id, server_lac_done, req);
    case QUIRE__BOOKIE__OP_TYPE__LAST_ENTRY:
        return bookie_last_entry(bk, q->last_entry->ledger_id, server_lac_done, req);
    case QUIRE__BOOKIE__OP_TYPE__DELETE_LEDGER:
        return bookie_delete_ledger(bk, q->delete_ledger->ledger_id, server_delete_done, req);
    default:
        return QE_INVALID; /* bkrpc_decode_request lets no other op through */
    }
}

static int64_t request_ledger_id(const Quire__Bookie__Request *q)
{
    switch (q->op) {
    case QUIRE__BOOKIE__OP_TYPE__ADD:
        return q->add->ledger_id;
    case QUIRE__BOOKIE__OP_TYPE__READ:
        return q->read->ledger_id;
    case QUIRE__BOOKIE__OP_TYPE__READ_LAC:
        return q->read_lac->ledger_id;
    case QUIRE__BOOKIE__OP_TYPE__FENCE:
        return q->fence->ledger_id;
    case QUIRE__BOOKIE__OP_TYPE__LAST_ENTRY:
        return q->last_entry->ledger_id;
    default:
        return q->delete_ledger->ledger_id;
    }
}

/* Starts one request in the bookie; refusals are answered at once. */
static void conn_start_request(bks_conn_t *c, const Quire__Bookie__Request *q, qbuf_t *body)
{
    int rc = QE_INVALID;
    bks_req_t *req = NULL;
    if (q->version != BKRPC_PROTOCOL_VERSION) {
        log_warn("bookie-server", "%s: protocol version %u refused", c->peer, q->version);
    } else if (!(req = calloc(1, sizeof *req))) {
        rc = -ENOMEM;
    } else {
        req->conn = c;
        req->request_id = q->request_id;
        req->op = q->op;
        req->ledger_id = request_ledger_id(q);
        req->entry_id = q->op == QUIRE__BOOKIE__OP_TYPE__ADD ? q->add->entry_id : -1;
        req->add_bytes = body ? body->len : 0;
        conn_track(c, req);
        rc = req_dispatch(c->server->bk, req, q, body);
        if (rc == 0)
            return;
        conn_untrack(c, req);
        conn_unref(c);
        free(req);
        log_debug("bookie-server", "%s: request %llu refused: %s", c->peer,
                  (unsigned long long)q->request_id, q_strerror(rc));
    }
    Quire__Bookie__Response resp;
    resp_init(&resp, q->op, q->request_id, rc);
    conn_send(c, &resp, NULL);
}

static void conn_handle_frame(bks_conn_t *c, bkrpc_frame_t *f)
{
    Quire__Bookie__Request *q;
    int rc = bkrpc_decode_request(f, &q);
    if (rc < 0) {
        qbuf_unref(f->body);
        c->server->stats.bad_frames++;
        conn_close(c, "undecodable request");
        return;
    }
    c->server->stats.requests++;
    conn_start_request(c, q, f->body);
    quire__bookie__request__free_unpacked(q, NULL);
    qbuf_unref(f->body); /* the bookie took its own reference */
}

/* Handles the frames already buffered while the bounds allow. */
static void conn_process(bks_conn_t *c)
{
    while (conn_may_read(c)) {
        bkrpc_frame_t f;
        int rc = bkrpc_reader_next(&c->rd, &f);
        if (rc == 0)
            return;
        if (rc < 0) {
            c->server->stats.bad_frames += rc != -ENOMEM;
            conn_close(c, q_strerror(rc));
            return;
        }
        conn_handle_frame(c, &f);
    }
}

/* ------------------------------------------------------------ connection -- */

static void conn_read_once(bks_conn_t *c, bool *again)
{
    uint8_t *p;
    size_t len;
    bkrpc_reader_space(&c->rd, &p, &len);
    ssize_t n = read(c->fd, p, len);
    *again = false;
    if (n > 0) {
        bkrpc_reader_commit(&c->rd, (size_t)n);
        conn_process(c);
        *again = c->server != NULL;
    } else if (n == 0) {
        conn_close(c, "closed by peer");
    } else if (errno == EINTR) {
        *again = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        conn_close(c, strerror(errno));
    }
}

static void conn_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    bks_conn_t *c = w->data;
    conn_ref(c);
    bool again = true;
    for (int i = 0; i < BKS_READS_PER_WAKEUP && again && conn_may_read(c); i++)
        conn_read_once(c, &again);
    conn_update_reading(c);
    conn_unref(c);
}

static void conn_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    bks_conn_t *c = w->data;
    conn_ref(c);
    conn_flush(c);
    conn_update_reading(c);
    conn_unref(c);
}

static void conn_close(bks_conn_t *c, const char *why)
{
    bookie_server_t *s = c->server;
    if (!s)
        return;
    log_info("bookie-server", "%s: connection closed (%s)", c->peer, why);
    ev_io_stop(s->loop, &c->rio);
    ev_io_stop(s->loop, &c->wio);
    close(c->fd);
    c->fd = -1;
    bkrpc_reader_free(&c->rd);
    bkrpc_outq_clear(&c->outq);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    c->server = NULL;
    c->reading = false;
    conn_unref(c);
}

static void peer_name(int fd, char *out, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, "%s:%s", host, port);
}

static void conn_new(bookie_server_t *s, int fd)
{
    bks_conn_t *c = calloc(1, sizeof *c);
    if (!c || bkrpc_reader_init(&c->rd) < 0) {
        log_error("bookie-server", "out of memory: connection refused");
        free(c);
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->server = s;
    c->fd = fd;
    c->refs = 1;
    peer_name(fd, c->peer, sizeof c->peer);
    ev_io_init(&c->rio, conn_on_read, fd, EV_READ);
    ev_io_init(&c->wio, conn_on_write, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    ev_io_start(s->loop, &c->rio);
    c->reading = true;
    log_debug("bookie-server", "%s: connected", c->peer);
}

static void server_on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    bookie_server_t *s = w->data;
    for (int i = 0; i < BKS_ACCEPTS_PER_WAKEUP; i++) {
        int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                log_warn("bookie-server", "accept: %s", strerror(errno));
            return;
        }
        if (s->nconns >= BOOKIE_SERVER_CONNS_MAX) {
            s->stats.connections_refused++;
            log_warn("bookie-server", "connection refused: %d connections open (max)",
                     BOOKIE_SERVER_CONNS_MAX);
            close(fd);
            continue;
        }
        s->stats.connections_total++;
        conn_new(s, fd);
    }
}

/* ---------------------------------------------------------------- server -- */

/* A non-blocking socket bound to host:port and listening; returns fd or < 0. */
static int server_listen(const char *host, int port)
{
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int grc = getaddrinfo(host, portstr, &hints, &ai);
    if (grc != 0) {
        log_error("bookie-server", "cannot resolve %s: %s", host, gai_strerror(grc));
        return QE_INVALID;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    int one = 1;
    if (rc == 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        rc = -errno;
    if (rc == 0 && bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
        rc = -errno;
    if (rc == 0 && listen(fd, BKS_LISTEN_BACKLOG) < 0)
        rc = -errno;
    freeaddrinfo(ai);
    if (rc < 0) {
        log_error("bookie-server", "cannot listen on %s:%d: %s", host, port, strerror(-rc));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    return fd;
}

static int socket_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return -errno;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int bookie_server_start(struct ev_loop *loop, bookie_t *bk, const char *host, int port,
                        bookie_server_t **out)
{
    if (!loop || !bk || !host || port < 0 || port > 65535 || !out) {
        log_error("bookie-server", "start refused: invalid arguments");
        return QE_INVALID;
    }
    int fd = server_listen(host, port);
    if (fd < 0)
        return fd;
    bookie_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return -ENOMEM;
    }
    s->loop = loop;
    s->bk = bk;
    s->fd = fd;
    s->port = socket_port(fd);
    assert(s->port > 0);
    ev_io_init(&s->accept_io, server_on_accept, fd, EV_READ);
    s->accept_io.data = s;
    ev_io_start(loop, &s->accept_io);
    log_info("bookie-server", "listening on %s:%d", host, s->port);
    *out = s;
    return 0;
}

int bookie_server_port(const bookie_server_t *s)
{
    return s->port;
}

void bookie_server_get_stats(const bookie_server_t *s, bookie_server_stats_t *out)
{
    *out = s->stats;
    out->connections = s->nconns;
    out->connections_paused = 0;
    out->out_bytes = 0;
    for (const bks_conn_t *c = s->conns; c; c = c->next) {
        out->connections_paused += !c->reading;
        out->out_bytes += c->outq.bytes;
    }
}

void bookie_server_stop(bookie_server_t *s)
{
    if (!s)
        return;
    ev_io_stop(s->loop, &s->accept_io);
    close(s->fd);
    while (s->conns)
        conn_close(s->conns, "server stopping");
    assert(s->nconns == 0);
    log_info("bookie-server", "stopped listening on port %d", s->port);
    free(s);
}
