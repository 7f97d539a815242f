/*
 * quire_perf_conn.c — quire-perf's connections to brokers, as a Pulsar
 * client's ClientCnx and ConnectionPool: the non-blocking socket, its write
 * queue, the CONNECT handshake, PING/PONG, and the dispatch of every received
 * frame to the producer/consumer (a perf_link_t) it is for.
 *
 * Two modes (perf_pool_create's per_url):
 *   0   every perf_link_attach opens its own connection, closed when the link
 *       detaches: one TCP connection per producer/consumer (and resolver).
 *   N   N connections per broker URL ("host:port"), shared by every link to
 *       that broker, handed out round-robin; a connection stays open until
 *       perf_pool_close_all, or until it is lost (its slot is then refilled
 *       by the next attach).
 *
 * Connection states:
 *   CONNECTING (TCP connect in progress) -> HANDSHAKE (CONNECT sent) -> READY
 *   (CONNECTED received: waiting links get ready()) -> CLOSED.
 * Links attached before READY wait; nothing but CONNECT is written before the
 * handshake, so CONNECT is always the first frame.
 *
 * Dispatch (as ClientCnx's pendingRequests, producers and consumers maps):
 *   by request_id  PARTITIONED_METADATA_RESPONSE, LOOKUP_RESPONSE,
 *                  PRODUCER_SUCCESS, SUCCESS, ERROR
 *   ERROR without request_id (UINT64_MAX): every link on the connection
 *   by producer_id SEND_RECEIPT, SEND_ERROR, CLOSE_PRODUCER, TOPIC_MIGRATED
 *   by consumer_id MESSAGE, CLOSE_CONSUMER, TOPIC_MIGRATED
 *   here           CONNECTED, PING (-> PONG), AUTH_CHALLENGE (method "none")
 *   ignored        PONG, ACK_RESPONSE, ACTIVE_CONSUMER_CHANGE, ...
 * A link keeps one range of pending request ids (a new request replaces the
 * old range); a frame for an id no attached link owns is dropped.
 *
 * Invariants:
 *   - l->conn == c  <=>  c->links[l->slot] == l.
 *   - The request, producer and consumer maps only hold links attached to c.
 *   - A connection is freed only when CLOSED and no callback of it is on the
 *     stack (busy == 0): a frame handler may close or fail its own connection.
 *   - A lost connection detaches all its links first, then calls lost() on
 *     each: a link is never called back for a connection it left.
 *
 * Bounds: links per connection (LINKS_MAX), frames queued per connection
 * (WQ_MAX_ITEMS; producers stop filling it past WQ_HIGH_BYTES, and are called
 * back under WQ_HIGH_BYTES / 2), a frame (the broker's max_message_size +
 * 10 KiB), broker URLs of a shared pool (PERF_MAX_BROKERS).
 */
#include <assert.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/hashmap.h"
#include "common/ring.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "tools/quire_perf.h"

#define WQ_MAX_ITEMS (1u << 20)
#define WQ_HIGH_BYTES (8u * 1024u * 1024u)
#define RBUF_INITIAL (64u * 1024u)
#define READ_ROUNDS 16
#define LINKS_MAX (PERF_MAX_ENDPOINTS + 1u)

typedef enum { CONN_CONNECTING, CONN_HANDSHAKE, CONN_READY, CONN_CLOSED } conn_state_t;

typedef struct wq {
    qbuf_t **items;
    size_t cap, head, count;
    size_t off; /* bytes of items[head] already written */
    size_t bytes;
} wq_t;

/* The shared connections to one broker. */
typedef struct group {
    char key[PERF_MAX_URL + 8]; /* "host:port" */
    perf_conn_t **slots;        /* per_url of them, NULL when not open */
    uint32_t next;              /* round-robin cursor */
} group_t;

struct perf_conn {
    perf_pool_t *pool;
    perf_conn_t *prev, *next; /* the pool's open connections */
    group_t *group;           /* NULL: a connection of its own link */
    uint32_t group_slot;
    char url[PERF_MAX_URL];
    conn_state_t state;
    int fd;
    ev_io rio, wio;
    uint8_t *rbuf;
    size_t rlen, rcap, max_frame;
    wq_t wq;
    bool corked;    /* reading: frames queued by handlers are written after the round */
    bool congested; /* a producer found the write queue above WQ_HIGH_BYTES */
    int busy;       /* callbacks of this connection on the stack */
    perf_link_t **links;
    size_t n_links, links_cap;
    qmap64_t *requests, *producers, *consumers; /* id -> perf_link_t* */
};

struct perf_pool {
    struct ev_loop *loop;
    uint32_t per_url;
    perf_conn_cbs_t cbs;
    group_t groups[PERF_MAX_BROKERS];
    size_t n_groups;
    perf_conn_t *open;
    uint64_t opened;
};

static void conn_fail(perf_conn_t *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ================================================================ write queue */

static void wq_clear(wq_t *q)
{
    for (size_t i = 0; i < q->count; i++)
        qbuf_unref(q->items[(q->head + i) % q->cap]);
    q->head = q->count = q->off = q->bytes = 0;
}

static int wq_push(wq_t *q, qbuf_t *b)
{
    if (q->count == q->cap) {
        if (q->cap >= WQ_MAX_ITEMS)
            return QE_BUSY;
        if (ring_grow((void **)&q->items, sizeof *q->items, &q->head, q->count, &q->cap,
                      q->cap ? q->cap * 2 : 64) < 0)
            return -ENOMEM;
    }
    q->items[(q->head + q->count) % q->cap] = b;
    q->count++;
    q->bytes += b->len;
    return 0;
}

/* ================================================================ life cycle */

static void conn_free(perf_conn_t *c)
{
    assert(c->state == CONN_CLOSED && c->busy == 0 && c->n_links == 0);
    free(c->wq.items);
    free(c->rbuf);
    free(c->links);
    qmap64_free(c->requests);
    qmap64_free(c->producers);
    qmap64_free(c->consumers);
    free(c);
}

/* Closes the socket and takes c out of the pool; frees c unless a callback of
 * it is on the stack (conn_release frees it then). Links must be detached. */
static void conn_close(perf_conn_t *c)
{
    perf_pool_t *p = c->pool;
    assert(c->n_links == 0);
    if (c->state == CONN_CLOSED)
        return;
    ev_io_stop(p->loop, &c->rio);
    ev_io_stop(p->loop, &c->wio);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = CONN_CLOSED;
    wq_clear(&c->wq);
    c->rlen = 0;
    if (c->group && c->group->slots[c->group_slot] == c)
        c->group->slots[c->group_slot] = NULL;
    c->group = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        p->open = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    if (c->busy == 0)
        conn_free(c);
}

static void conn_hold(perf_conn_t *c)
{
    c->busy++;
}

static void conn_release(perf_conn_t *c)
{
    assert(c->busy > 0);
    if (--c->busy == 0 && c->state == CONN_CLOSED)
        conn_free(c);
}

/* Takes every link off c (no callbacks); returns the array of them, which the
 * caller frees, and their number in *n. */
static perf_link_t **conn_take_links(perf_conn_t *c, size_t *n)
{
    perf_link_t **links = c->links;
    *n = c->n_links;
    for (size_t i = 0; i < *n; i++) {
        links[i]->conn = NULL;
        links[i]->waiting = false;
        links[i]->req_count = 0;
    }
    c->links = NULL;
    c->n_links = c->links_cap = 0;
    return links;
}

/* The connection failed: detach every link, close, then tell each link. */
static void conn_fail(perf_conn_t *c, int rc, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    perf_pool_t *p = c->pool;
    size_t n = 0;
    perf_link_t **links = conn_take_links(c, &n);
    conn_close(c);
    for (size_t i = 0; i < n; i++)
        p->cbs.lost(links[i]->owner, rc, why);
    free(links);
}

/* A copy of c's links (caller frees), to call back while they may detach. */
static perf_link_t **conn_links_copy(perf_conn_t *c, size_t *n)
{
    *n = c->n_links;
    perf_link_t **v = malloc((*n ? *n : 1) * sizeof *v);
    if (v && *n)
        memcpy(v, c->links, *n * sizeof *v);
    return v;
}

/* ================================================================ writing */

/* Writes what the socket takes; keeps the write watcher on while bytes remain.
 * 0, or -1 when the connection failed (c may be freed then). */
static int conn_flush(perf_conn_t *c)
{
    wq_t *q = &c->wq;
    while (q->count > 0) {
        struct iovec iov[64];
        int n = 0;
        for (size_t i = 0; i < q->count && n < 64; i++) {
            qbuf_t *b = q->items[(q->head + i) % q->cap];
            size_t off = i == 0 ? q->off : 0;
            iov[n].iov_base = b->data + off;
            iov[n].iov_len = b->len - off;
            n++;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            if (errno == EINTR)
                continue;
            conn_fail(c, -ECONNRESET, "connection to %s lost: %s", c->url, strerror(errno));
            return -1;
        }
        size_t left = (size_t)w;
        q->bytes -= left;
        while (left > 0) {
            qbuf_t *b = q->items[q->head];
            size_t rest = b->len - q->off;
            if (left < rest) {
                q->off += left;
                break;
            }
            left -= rest;
            qbuf_unref(b);
            q->head = (q->head + 1) % q->cap;
            q->count--;
            q->off = 0;
        }
    }
    if (q->count > 0)
        ev_io_start(c->pool->loop, &c->wio);
    else
        ev_io_stop(c->pool->loop, &c->wio);
    return 0;
}

/* Queues b (takes the reference) and writes unless corked or still connecting. */
static int conn_send(perf_conn_t *c, qbuf_t *b)
{
    int rc = wq_push(&c->wq, b);
    if (rc != 0) {
        qbuf_unref(b);
        return rc;
    }
    if (c->state != CONN_CONNECTING && !c->corked && !ev_is_active(&c->wio))
        conn_flush(c);
    return 0;
}

/* A frame of the connection itself (CONNECT, PONG, AUTH_RESPONSE). */
static void conn_send_own(perf_conn_t *c, int rc, qbuf_t *b, const char *what)
{
    if (rc == 0)
        rc = conn_send(c, b);
    if (rc != 0)
        conn_fail(c, rc, "cannot send %s to %s: %s", what, c->url, q_strerror(rc));
}

/* ================================================================ dispatch */

static void conn_on_connected(perf_conn_t *c, const Pulsar__Proto__CommandConnected *m)
{
    if (c->state != CONN_HANDSHAKE)
        return;
    if (m->has_max_message_size && m->max_message_size > 0)
        c->max_frame = (size_t)m->max_message_size + 10240u;
    c->state = CONN_READY;
    size_t n = 0;
    perf_link_t **v = conn_links_copy(c, &n);
    if (!v) {
        conn_fail(c, -ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n && c->state == CONN_READY; i++) {
        if (v[i]->conn != c || !v[i]->waiting)
            continue;
        v[i]->waiting = false;
        c->pool->cbs.ready(v[i]->owner);
    }
    free(v);
}

static void conn_on_auth_challenge(perf_conn_t *c)
{
    Pulsar__Proto__AuthData ad = PULSAR__PROTO__AUTH_DATA__INIT;
    ad.auth_method_name = (char *)"none";
    ad.has_auth_data = 1;
    Pulsar__Proto__CommandAuthResponse ar = PULSAR__PROTO__COMMAND_AUTH_RESPONSE__INIT;
    ar.client_version = (char *)PERF_CLIENT_VERSION;
    ar.response = &ad;
    ar.has_protocol_version = 1;
    ar.protocol_version = PERF_PROTOCOL_VERSION;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__AUTH_RESPONSE;
    b.authresponse = &ar;
    qbuf_t *out = NULL;
    int rc = frame_encode_command(&b, &out);
    conn_send_own(c, rc, out, "AUTH_RESPONSE");
}

static void route(perf_conn_t *c, qmap64_t *m, uint64_t id, frame_t *f)
{
    perf_link_t *l = qmap64_get(m, id);
    if (!l)
        return; /* for a link that left, or an id we never used */
    assert(l->conn == c);
    c->pool->cbs.frame(l->owner, f);
}

/* An ERROR without request id: every link on the connection sees it. */
static void route_all(perf_conn_t *c, frame_t *f)
{
    size_t n = 0;
    perf_link_t **v = conn_links_copy(c, &n);
    if (!v) {
        conn_fail(c, -ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n && c->state != CONN_CLOSED; i++)
        if (v[i]->conn == c)
            c->pool->cbs.frame(v[i]->owner, f);
    free(v);
}

static void conn_dispatch(perf_conn_t *c, frame_t *f)
{
    const Pulsar__Proto__BaseCommand *m = f->cmd;
    qbuf_t *b = NULL;
    int rc;
    switch (m->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PING:
        rc = cmd_encode_pong(&b);
        conn_send_own(c, rc, b, "PONG");
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED:
        conn_on_connected(c, m->connected);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__AUTH_CHALLENGE:
        conn_on_auth_challenge(c);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE:
        route(c, c->requests, m->partitionmetadataresponse->request_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE:
        route(c, c->requests, m->lookuptopicresponse->request_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS:
        route(c, c->requests, m->producer_success->request_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS:
        route(c, c->requests, m->success->request_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR:
        if (m->error->request_id == UINT64_MAX)
            route_all(c, f);
        else
            route(c, c->requests, m->error->request_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT:
        route(c, c->producers, m->send_receipt->producer_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR:
        route(c, c->producers, m->send_error->producer_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER:
        route(c, c->producers, m->close_producer->producer_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE:
        route(c, c->consumers, m->message->consumer_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER:
        route(c, c->consumers, m->close_consumer->consumer_id, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__TOPIC_MIGRATED:
        route(c,
              m->topicmigrated->resource_type ==
                      PULSAR__PROTO__COMMAND_TOPIC_MIGRATED__RESOURCE_TYPE__Producer
                  ? c->producers
                  : c->consumers,
              m->topicmigrated->resource_id, f);
        break;
    default: /* PONG, ACK_RESPONSE, ACTIVE_CONSUMER_CHANGE, ...: nothing to do */
        break;
    }
}

/* ================================================================ reading */

/* One read and the frames it completes. 1: read again (the socket may hold
 * more), 0: done for now or the connection failed/closed. */
static int conn_read_round(perf_conn_t *c)
{
    if (c->rlen == c->rcap) {
        size_t need = 0;
        int prc = frame_peek_size(c->rbuf, c->rlen, c->max_frame, &need);
        if (prc != 0 || need <= c->rcap) {
            conn_fail(c, prc ? prc : QE_CORRUPT, "bad frame from %s", c->url);
            return 0;
        }
        uint8_t *nb = realloc(c->rbuf, need);
        if (!nb) {
            conn_fail(c, -ENOMEM, "out of memory");
            return 0;
        }
        c->rbuf = nb;
        c->rcap = need;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n == 0) {
        conn_fail(c, -ECONNRESET, "connection to %s lost: closed by the server", c->url);
        return 0;
    }
    if (n < 0) {
        if (errno == EINTR)
            return 1;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            conn_fail(c, -ECONNRESET, "connection to %s lost: %s", c->url, strerror(errno));
        return 0;
    }
    c->rlen += (size_t)n;
    size_t off = 0;
    c->corked = true;
    while (c->state != CONN_CLOSED) {
        frame_t f = {0};
        size_t used = 0;
        int rc = frame_decode(c->rbuf + off, c->rlen - off, c->max_frame, &f, &used);
        if (rc == QE_AGAIN)
            break;
        if (rc != 0) {
            conn_fail(c, rc, "undecodable frame from %s: %s", c->url, q_strerror(rc));
            break;
        }
        off += used;
        conn_dispatch(c, &f);
        frame_free(&f);
    }
    c->corked = false;
    if (c->state == CONN_CLOSED)
        return 0; /* the buffer went with the connection */
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
    if (!ev_is_active(&c->wio) && conn_flush(c) != 0)
        return 0;
    return (size_t)n >= RBUF_INITIAL / 2 || c->rlen == c->rcap;
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    perf_conn_t *c = w->data;
    conn_hold(c);
    for (int round = 0; round < READ_ROUNDS && c->state != CONN_CLOSED; round++)
        if (!conn_read_round(c))
            break;
    conn_release(c);
}

/* ================================================================ connecting */

static void conn_on_tcp_connected(perf_conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        conn_fail(c, -err, "cannot connect to %s: %s", c->url, strerror(err));
        return;
    }
    ev_io_stop(c->pool->loop, &c->wio);
    c->state = CONN_HANDSHAKE;
    ev_io_start(c->pool->loop, &c->rio);
    assert(c->wq.count == 0); /* CONNECT goes first */
    qbuf_t *b = NULL;
    int rc = perf_cmd_connect(&b);
    conn_send_own(c, rc, b, "CONNECT");
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    perf_conn_t *c = w->data;
    conn_hold(c);
    if (c->state == CONN_CONNECTING) {
        conn_on_tcp_connected(c);
        conn_release(c);
        return;
    }
    conn_flush(c);
    if (c->state != CONN_CLOSED && c->congested && c->wq.bytes < WQ_HIGH_BYTES / 2) {
        c->congested = false;
        size_t n = 0;
        perf_link_t **v = conn_links_copy(c, &n);
        if (!v)
            conn_fail(c, -ENOMEM, "out of memory");
        for (size_t i = 0; v && i < n && c->state != CONN_CLOSED; i++)
            if (v[i]->conn == c && v[i]->kind == PERF_LINK_PRODUCER)
                c->pool->cbs.writable(v[i]->owner);
        free(v);
    }
    conn_release(c);
}

/* Starts a non-blocking connection to url (host name resolution is the one
 * blocking call, made during set-up only). 0, or an error with its reason. */
static int conn_open(perf_pool_t *p, const char *url, perf_conn_t **out, char *err, size_t err_len)
{
    char host[PERF_MAX_URL], port_s[8];
    uint16_t port;
    if (perf_parse_url(url, host, sizeof host, &port) != 0) {
        snprintf(err, err_len, "unusable broker URL '%s'", url);
        return QE_INVALID;
    }
    snprintf(port_s, sizeof port_s, "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    int grc = getaddrinfo(host, port_s, &hints, &ai);
    if (grc != 0 || !ai) {
        snprintf(err, err_len, "cannot resolve %s: %s", host, gai_strerror(grc));
        return -EHOSTUNREACH;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)
        rc = -errno;
    freeaddrinfo(ai);
    perf_conn_t *c = rc == 0 ? calloc(1, sizeof *c) : NULL;
    if (c) {
        c->rcap = RBUF_INITIAL;
        c->rbuf = malloc(c->rcap);
        c->requests = qmap64_new();
        c->producers = qmap64_new();
        c->consumers = qmap64_new();
        if (!c->rbuf || !c->requests || !c->producers || !c->consumers) {
            c->state = CONN_CLOSED;
            conn_free(c);
            c = NULL;
        }
        if (!c)
            rc = -ENOMEM;
    } else if (rc == 0) {
        rc = -ENOMEM;
    }
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        snprintf(err, err_len, "cannot connect to %s: %s", url, strerror(-rc));
        return rc;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->pool = p;
    c->fd = fd;
    c->state = CONN_CONNECTING;
    c->max_frame = FRAME_DEFAULT_MAX_FRAME_BYTES;
    snprintf(c->url, sizeof c->url, "%s", url);
    ev_io_init(&c->rio, conn_read_cb, fd, EV_READ);
    ev_io_init(&c->wio, conn_write_cb, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    ev_io_start(p->loop, &c->wio);
    c->next = p->open;
    if (p->open)
        p->open->prev = c;
    p->open = c;
    p->opened++;
    *out = c;
    return 0;
}

/* ================================================================ the pool */

int perf_pool_create(struct ev_loop *loop, uint32_t per_url, const perf_conn_cbs_t *cbs,
                     perf_pool_t **out)
{
    assert(per_url <= PERF_MAX_CONNECTIONS);
    perf_pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->loop = loop;
    p->per_url = per_url;
    p->cbs = *cbs;
    *out = p;
    return 0;
}

void perf_pool_close_all(perf_pool_t *p)
{
    while (p->open) {
        perf_conn_t *c = p->open;
        size_t n = 0;
        free(conn_take_links(c, &n));
        conn_close(c);
    }
}

void perf_pool_free(perf_pool_t *p)
{
    if (!p)
        return;
    perf_pool_close_all(p);
    for (size_t i = 0; i < p->n_groups; i++)
        free(p->groups[i].slots);
    free(p);
}

uint64_t perf_pool_opened(const perf_pool_t *p)
{
    return p->opened;
}

/* The shared connections to url's broker, added when new. */
static group_t *pool_group(perf_pool_t *p, const char *url, char *err, size_t err_len)
{
    char host[PERF_MAX_URL], key[sizeof p->groups[0].key];
    uint16_t port;
    if (perf_parse_url(url, host, sizeof host, &port) != 0) {
        snprintf(err, err_len, "unusable broker URL '%s'", url);
        return NULL;
    }
    for (char *h = host; *h; h++)
        *h = (char)(*h >= 'A' && *h <= 'Z' ? *h - 'A' + 'a' : *h);
    snprintf(key, sizeof key, "%s:%u", host, port);
    for (size_t i = 0; i < p->n_groups; i++)
        if (strcmp(p->groups[i].key, key) == 0)
            return &p->groups[i];
    if (p->n_groups == PERF_MAX_BROKERS) {
        snprintf(err, err_len, "more than %d broker URLs", PERF_MAX_BROKERS);
        return NULL;
    }
    group_t *g = &p->groups[p->n_groups];
    g->slots = calloc(p->per_url, sizeof *g->slots);
    if (!g->slots) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    snprintf(g->key, sizeof g->key, "%s", key);
    g->next = 0;
    p->n_groups++;
    return g;
}

/* The connection the next link to url gets: its own, or the group's next. */
static int pool_pick(perf_pool_t *p, const char *url, perf_conn_t **out, char *err, size_t err_len)
{
    if (p->per_url == 0)
        return conn_open(p, url, out, err, err_len);
    group_t *g = pool_group(p, url, err, err_len);
    if (!g)
        return QE_INVALID;
    uint32_t slot = g->next;
    g->next = (g->next + 1) % p->per_url;
    if (!g->slots[slot]) {
        perf_conn_t *c = NULL;
        int rc = conn_open(p, url, &c, err, err_len);
        if (rc != 0)
            return rc;
        c->group = g;
        c->group_slot = slot;
        g->slots[slot] = c;
    }
    *out = g->slots[slot];
    return 0;
}

/* ================================================================ links */

static qmap64_t *link_map(perf_conn_t *c, const perf_link_t *l)
{
    return l->kind == PERF_LINK_PRODUCER   ? c->producers
           : l->kind == PERF_LINK_CONSUMER ? c->consumers
                                           : NULL;
}

static void link_forget_requests(perf_link_t *l)
{
    perf_conn_t *c = l->conn;
    for (uint32_t i = 0; i < l->req_count; i++)
        if (qmap64_get(c->requests, l->req_first + i) == l)
            qmap64_remove(c->requests, l->req_first + i);
    l->req_count = 0;
}

int perf_link_attach(perf_pool_t *p, perf_link_t *l, const char *url, char *err, size_t err_len)
{
    assert(l->conn == NULL);
    perf_conn_t *c = NULL;
    int rc = pool_pick(p, url, &c, err, err_len);
    if (rc != 0)
        return rc;
    if (c->n_links == c->links_cap) {
        size_t cap = c->links_cap ? c->links_cap * 2 : 4;
        perf_link_t **v = c->n_links < LINKS_MAX ? realloc(c->links, cap * sizeof *v) : NULL;
        if (v) {
            c->links = v;
            c->links_cap = cap;
        }
    }
    qmap64_t *m = link_map(c, l);
    rc = c->n_links == c->links_cap ? -ENOMEM : m ? qmap64_put(m, l->id, l) : 0;
    if (rc != 0) {
        if (!c->group && c->n_links == 0)
            conn_close(c);
        snprintf(err, err_len, "cannot attach to a connection to %s: %s", url, q_strerror(rc));
        return rc;
    }
    l->conn = c;
    l->slot = c->n_links;
    l->req_count = 0;
    c->links[c->n_links++] = l;
    l->waiting = c->state != CONN_READY;
    return c->state == CONN_READY ? 1 : 0;
}

void perf_link_detach(perf_link_t *l)
{
    perf_conn_t *c = l->conn;
    if (!c)
        return;
    assert(l->slot < c->n_links && c->links[l->slot] == l);
    link_forget_requests(l);
    qmap64_t *m = link_map(c, l);
    if (m && qmap64_get(m, l->id) == l)
        qmap64_remove(m, l->id);
    perf_link_t *last = c->links[--c->n_links];
    c->links[l->slot] = last;
    last->slot = l->slot;
    l->conn = NULL;
    l->waiting = false;
    if (!c->group && c->n_links == 0)
        conn_close(c);
}

void perf_link_request(perf_link_t *l, uint64_t first, uint32_t count)
{
    perf_conn_t *c = l->conn;
    if (!c)
        return;
    assert(count <= PERF_MAX_TOPICS);
    link_forget_requests(l);
    for (uint32_t i = 0; i < count; i++) {
        if (qmap64_put(c->requests, first + i, l) != 0) {
            conn_fail(c, -ENOMEM, "out of memory");
            return;
        }
        l->req_first = first;
        l->req_count = i + 1;
    }
}

int perf_link_send(perf_link_t *l, qbuf_t *b)
{
    if (!l->conn) {
        qbuf_unref(b);
        return -ENOTCONN;
    }
    return conn_send(l->conn, b);
}

bool perf_link_congested(perf_link_t *l)
{
    perf_conn_t *c = l->conn;
    if (!c || c->wq.bytes <= WQ_HIGH_BYTES)
        return false;
    c->congested = true;
    return true;
}

const char *perf_link_state(const perf_link_t *l)
{
    if (!l->conn)
        return "detached";
    static const char *const names[] = {"connecting", "handshake", "connected", "closed"};
    return names[l->conn->state];
}
