/*
 * connection.c — one client connection: socket I/O, frame decoding, the
 * handshake, keepalive and the dispatch of commands to their handlers.
 *
 * State machine:
 *   AWAIT_CONNECT --CONNECT--> READY --(error, EOF, idle, shutdown)--> CLOSED
 * Before CONNECT only CONNECT is accepted; anything else closes the
 * connection. The first frame the broker sends is CONNECTED.
 *
 * Reading: bytes accumulate in rbuf; complete frames are decoded in place
 * (a SEND's payload is a slice of rbuf until the producer copies it into the
 * entry buffer); a frame larger than maxMessageSize + 10 KiB, or malformed,
 * closes the connection without allocating for it.
 *
 * Writing: frames are queued as qbuf slices and written with writev. The
 * frames a loop iteration queues for one connection leave together, in one
 * writev, just before the loop next waits (broker_flush_cb), or at once when
 * CONN_FLUSH_BYTES are queued: a client that sends a thousand commands in one
 * read gets its replies in a few writes, not a thousand. A connection writes
 * at most CONN_WRITE_SLICE_BYTES per loop iteration; the rest waits for its
 * write watcher, so a consumer catching up at gigabytes a second does not hold
 * the loop (and every producer's receipts) in one long copy into its socket.
 * The queue's bytes are bounded for dispatch (conn_writable) — a consumer
 * whose client does not read stops receiving — and hard-bounded overall: a
 * client that lets CONN_WQ_MAX_BYTES pile up is disconnected.
 *
 * Keepalive: every keepAliveIntervalSeconds the broker sends PING if nothing
 * arrived since the last tick; a connection silent for two ticks, or that has
 * not completed the handshake by the first tick, is closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/ring.h"
#include "server/broker_int.h"
#include "server/codec/frame.h"
#include "server/schema_int.h"
#include "server/conn_security.h"

#define CONN_WQ_MAX_BYTES (256u << 20)
#define CONN_FLUSH_BYTES (64u << 10)  /* queued this much: written without waiting */
#define CONN_WRITE_IOV 256            /* frame pieces per writev (IOV_MAX is 1024) */
#define CONN_RBUF_INITIAL (16u << 10) /* one read; most connections never need more */
#define CONN_RBUF_BUSY (64u << 10)    /* grown to when a read fills the buffer */
/* A SEND larger than this is received into a buffer of its own (big_start). */
#define CONN_BIG_FRAME CONN_RBUF_INITIAL
#define PROTOCOL_VERSION_MAX 21

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents);
static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents);
static void conn_keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ------------------------------------------------------------- lifecycle -- */

static conn_t *conn_new(broker_t *b, int fd, const struct sockaddr_in *peer)
{
    conn_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->broker = b;
    c->fd = fd;
    c->refs = 1;
    c->state = CONN_AWAIT_CONNECT;
    c->producers = qmap64_new();
    c->consumers = qmap64_new();
    c->rcap = CONN_RBUF_INITIAL;
    c->rbuf = malloc(c->rcap);
    if (!c->producers || !c->consumers || !c->rbuf) {
        qmap64_free(c->producers);
        qmap64_free(c->consumers);
        free(c->rbuf);
        free(c);
        return NULL;
    }
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer->sin_addr, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(peer->sin_port));
    c->connected_since_ms = clock_wall_ms();
    ev_io_init(&c->read_watcher, conn_read_cb, fd, EV_READ);
    ev_io_init(&c->write_watcher, conn_write_cb, fd, EV_WRITE);
    c->read_watcher.data = c->write_watcher.data = c;
    double ka = b->cfg.keep_alive_interval_s;
    ev_timer_init(&c->keepalive_timer, conn_keepalive_cb, ka, ka);
    c->keepalive_timer.data = c;
    return c;
}

void conn_ref(conn_t *c)
{
    c->refs++;
}

void conn_unref(conn_t *c)
{
    assert(c->refs > 0);
    if (--c->refs > 0)
        return;
    assert(c->state == CONN_CLOSED);
    for (size_t i = 0; i < c->wq_count; i++)
        qbuf_unref(c->wq[(c->wq_head + i) % c->wq_cap].buf);
    c->broker->wq_bytes_total -= c->wq_bytes;
    free(c->wq);
    free(c->rbuf);
    qbuf_unref(c->big);
    qmap64_free(c->producers);
    qmap64_free(c->consumers);
    free(c);
}

static int conn_flush(conn_t *c);
static void buffer_unlink(conn_t *c);
static bool buffer_over(const conn_t *c);
static void buffer_pause(conn_t *c);
static void buffer_grant_end(conn_t *c);

void conn_close(conn_t *c, const char *why)
{
    if (c->state == CONN_CLOSED)
        return;
    broker_t *b = c->broker;
    log_info("conn", "%s: closing: %s", c->peer, why);
    if (c->wq_count > 0 && !ev_is_active(&c->write_watcher)) {
        c->write_iter_bytes = 0; /* a last write: this iteration's slice does not apply */
        conn_flush(c);           /* what it was last sent (an error, say), if the socket takes it */
    }
    c->state = CONN_CLOSED;
    ev_io_stop(b->loop, &c->read_watcher);
    ev_io_stop(b->loop, &c->write_watcher);
    ev_timer_stop(b->loop, &c->keepalive_timer);
    conn_security_closed(c); /* conn_security.c: limits, refresh timer */
    if (c->buffer_paused)
        buffer_unlink(c);
    buffer_grant_end(c);
    conn_io_close(&c->io);
    c->fd = -1;

    /* Producers and consumers go first: their topics must not send here. */
    qmap_iter_t it = {0};
    void *v;
    while (qmap64_next(c->producers, &it, NULL, &v))
        producer_destroy(v);
    it = (qmap_iter_t){0};
    while (qmap64_next(c->consumers, &it, NULL, &v))
        consumer_destroy(v, true);

    if (c->prev)
        c->prev->next = c->next;
    else
        b->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    b->conns_count--;
    conn_unref(c);
}

/* ---------------------------------------------------------------- accept -- */

void broker_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    broker_t *b = w->data;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_in peer;
        socklen_t len = sizeof peer;
        int fd = accept4(w->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR &&
                !accept_pause_if_exhausted(&b->accept_pause, w, errno, "broker"))
                log_warn("broker", "accept: %s", strerror(errno));
            return;
        }
        uint32_t max = b->cfg.max_connections ? b->cfg.max_connections : 10000;
        if (b->shutting_down || b->conns_count >= max) {
            log_warn("broker", "refusing a connection: %s",
                     b->shutting_down ? "shutting down" : "brokerMaxConnections reached");
            close(fd);
            continue;
        }
        bool tls = false; /* conn_security.c: per-IP and pending-handshake bounds */
        if (!conn_security_admit(b, w, &peer, &tls)) {
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = conn_new(b, fd, &peer);
        if (!c) {
            close(fd);
            continue;
        }
        if (conn_security_accept(c, fd, tls, &peer) < 0) { /* plain or TLS transport */
            close(fd);
            c->state = CONN_CLOSED;
            conn_unref(c);
            continue;
        }
        c->next = b->conns;
        if (b->conns)
            b->conns->prev = c;
        b->conns = c;
        b->conns_count++;
        ev_io_start(b->loop, &c->read_watcher);
        ev_timer_start(b->loop, &c->keepalive_timer);
        log_debug("conn", "%s: accepted", c->peer);
    }
}

/* --------------------------------------------------------------- writing -- */

static int wq_push(conn_t *c, qbuf_t *buf, size_t off, size_t len)
{
    if (c->wq_count == c->wq_cap &&
        ring_grow((void **)&c->wq, sizeof *c->wq, &c->wq_head, c->wq_count, &c->wq_cap,
                  c->wq_cap ? c->wq_cap * 2 : 64) < 0)
        return -ENOMEM;
    c->wq[(c->wq_head + c->wq_count) % c->wq_cap] = (wq_item_t){buf, (uint32_t)off, (uint32_t)len};
    c->wq_count++;
    c->wq_bytes += len;
    c->broker->wq_bytes_total += len;
    return 0;
}

/* Writes as much as the socket takes, up to this iteration's slice. Returns 0,
 * or a negative errno on a broken connection. */
static int conn_flush(conn_t *c)
{
    unsigned int iter = ev_iteration(c->broker->loop);
    if (c->write_iter != iter) {
        c->write_iter = iter;
        c->write_iter_bytes = 0;
    }
    while (c->wq_count > 0 && c->write_iter_bytes < CONN_WRITE_SLICE_BYTES) {
        struct iovec iov[CONN_WRITE_IOV];
        int n = 0;
        size_t room = CONN_WRITE_SLICE_BYTES - c->write_iter_bytes;
        for (size_t i = 0; i < c->wq_count && n < CONN_WRITE_IOV && room > 0; i++, n++) {
            wq_item_t *it = &c->wq[(c->wq_head + i) % c->wq_cap];
            iov[n].iov_base = it->buf->data + it->off;
            iov[n].iov_len = it->len < room ? it->len : room;
            room -= iov[n].iov_len;
        }
        ssize_t w = conn_io_writev(&c->io, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            return -errno;
        }
        c->write_iter_bytes += (uint64_t)w;
        if (c->write_iter_bytes > c->broker->socket_slice_max)
            c->broker->socket_slice_max = c->write_iter_bytes;
        c->wq_bytes -= (uint64_t)w;
        c->broker->wq_bytes_total -= (uint64_t)w;
        c->broker->socket_writes++;
        c->broker->socket_bytes += (uint64_t)w;
        while (w > 0) {
            wq_item_t *it = &c->wq[c->wq_head];
            if ((size_t)w >= it->len) {
                w -= it->len;
                qbuf_unref(it->buf);
                c->wq_head = (c->wq_head + 1) % c->wq_cap;
                c->wq_count--;
            } else {
                it->off += (uint32_t)w;
                it->len -= (uint32_t)w;
                w = 0;
            }
        }
    }
    if (c->wq_count > 0)
        ev_io_start(c->broker->loop, &c->write_watcher);
    else
        ev_io_stop(c->broker->loop, &c->write_watcher);
    return 0;
}

/* Writes what the socket takes; consumers held back by a full queue send again
 * once it drains below CONN_WQ_HIGH_BYTES. */
static void conn_write_out(conn_t *c)
{
    bool was_full = !conn_writable(c);
    int rc = conn_flush(c);
    if (rc < 0) {
        conn_close(c, strerror(-rc));
        return;
    }
    if (was_full && conn_writable(c)) {
        qmap_iter_t it = {0};
        void *v;
        conn_ref(c);
        while (c->state == CONN_READY && qmap64_next(c->consumers, &it, NULL, &v))
            subscription_dispatch(((consumer_t *)v)->sub);
        conn_unref(c);
    }
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_write_out(w->data);
}

/* Takes the first connection off the flush list; the caller owns its reference. */
static conn_t *flush_list_pop(broker_t *b)
{
    conn_t *c = b->flush_list;
    if (c) {
        b->flush_list = c->flush_next;
        c->flush_next = NULL;
        c->flush_queued = false;
    }
    return c;
}

static void buffer_resume_now(broker_t *b);

/* The loop's poll returned: an iteration starts (b->loop_latency). */
void broker_loop_check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)revents;
    broker_t *b = w->data;
    b->loop_woke_us = clock_mono_us();
}

/* The loop is about to wait: resume the connections waiting for the publish
 * buffer if room opened, then write what this iteration queued. Writing may let
 * consumers dispatch, which queues more; the list is empty when this returns.
 * The iteration ends here (b->loop_latency). */
void broker_flush_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    broker_t *b = w->data;
    if (b->buffer_resume_due)
        buffer_resume_now(b); /* publish buffer bound, below */
    conn_t *c;
    while ((c = flush_list_pop(b))) {
        if (c->state != CONN_CLOSED && !ev_is_active(&c->write_watcher))
            conn_write_out(c);
        conn_unref(c);
    }
    if (b->loop_woke_us) {
        uint64_t now = clock_mono_us();
        latq_record(b->loop_latency, now - b->loop_woke_us, now);
        b->loop_woke_us = 0;
    }
}

void broker_flush_drop(broker_t *b)
{
    conn_t *c;
    while ((c = flush_list_pop(b)))
        conn_unref(c);
}

int conn_send_buf(conn_t *c, qbuf_t *buf, size_t off, size_t len)
{
    if (c->state == CONN_CLOSED) {
        qbuf_unref(buf);
        return QE_CLOSED;
    }
    if (c->wq_bytes + len > CONN_WQ_MAX_BYTES) {
        qbuf_unref(buf);
        conn_close(c, "client does not read: write queue limit reached");
        return QE_CLOSED;
    }
    if (wq_push(c, buf, off, len) < 0) {
        qbuf_unref(buf);
        conn_close(c, "out of memory for the write queue");
        return QE_CLOSED;
    }
    if (ev_is_active(&c->write_watcher))
        return 0; /* the socket is full: conn_write_cb writes when it has room */
    if (c->wq_bytes >= CONN_FLUSH_BYTES) {
        int rc = conn_flush(c);
        if (rc < 0) {
            conn_close(c, strerror(-rc));
            return QE_CLOSED;
        }
    } else if (!c->flush_queued) {
        broker_t *b = c->broker;
        conn_ref(c);
        c->flush_queued = true;
        c->flush_next = b->flush_list;
        b->flush_list = c;
    }
    return 0;
}

int conn_send_command(conn_t *c, const pb_command_t *cmd)
{
    qbuf_t *buf = NULL;
    int rc = frame_encode_command(cmd, &buf);
    if (rc < 0) {
        log_error("conn", "%s: cannot encode command %d: %s", c->peer, (int)cmd->type,
                  q_strerror(rc));
        return rc;
    }
    return conn_send_buf(c, buf, 0, buf->len);
}

void conn_send_error(conn_t *c, uint64_t request_id, pb_error_t err, const char *message)
{
    Pulsar__Proto__CommandError e = PULSAR__PROTO__COMMAND_ERROR__INIT;
    e.request_id = request_id;
    e.error = err;
    e.message = (char *)message;
    pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR;
    cmd.error = &e;
    conn_send_command(c, &cmd);
}

void conn_send_success(conn_t *c, uint64_t request_id)
{
    Pulsar__Proto__CommandSuccess s = PULSAR__PROTO__COMMAND_SUCCESS__INIT;
    s.request_id = request_id;
    pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS;
    cmd.success = &s;
    conn_send_command(c, &cmd);
}

void conn_pause_reads(conn_t *c)
{
    if (!c->reads_paused && c->state != CONN_CLOSED) {
        c->reads_paused = true;
        ev_io_stop(c->broker->loop, &c->read_watcher);
    }
}

void conn_resume_reads(conn_t *c)
{
    /* A topic's publish rate (limits.c) keeps it paused until it resumes it,
     * and so does the broker-wide publish buffer (below). */
    if (c->reads_paused && c->state != CONN_CLOSED && c->publish_throttles == 0 &&
        !c->buffer_paused) {
        c->reads_paused = false;
        ev_io_start(c->broker->loop, &c->read_watcher);
        /* Frames may already wait in rbuf. */
        ev_feed_event(c->broker->loop, &c->read_watcher, EV_READ);
    }
}

/* ------------------------------------------------- publish buffer bound -- */

/* Pulsar's maxMessagePublishBufferSizeInMB: the bytes of appends in flight over
 * all connections are bounded too, not only per connection, so that a
 * thousand producers each within their own bound cannot make the broker hold
 * gigabytes. Past the bound the connection that sent stops being read (others
 * follow as they send). As appends complete, paused connections resume oldest
 * first, as many as the room left under the bound takes: resuming all at once
 * would let each send another batch, and a thousand batches can be many times
 * the bound. Each is promised an equal share of that room (at least its last
 * append) and reads until it has used it; then it waits again if others wait
 * or the bound is reached. (Until session 35 each was promised its last append
 * only: the room beyond those went to whichever resumed connection the loop
 * read first, up to 256 KiB each, and under scenario (e)'s load some topics
 * were read 6-17 times as often as others.) */
static void buffer_unlink(conn_t *c)
{
    broker_t *b = c->broker;
    if (c->buffer_prev)
        c->buffer_prev->buffer_next = c->buffer_next;
    else
        b->buffer_paused = c->buffer_next;
    if (c->buffer_next)
        c->buffer_next->buffer_prev = c->buffer_prev;
    else
        b->buffer_paused_tail = c->buffer_prev;
    c->buffer_prev = c->buffer_next = NULL;
    c->buffer_paused = false;
    b->buffer_paused_n--;
}

/* c must wait: the bound is reached (counting the room promised to resumed
 * connections), or others wait already (they go first). */
static bool buffer_over(const conn_t *c)
{
    const broker_t *b = c->broker;
    uint64_t max = b->cfg.max_publish_buffer_bytes;
    return max != 0 && !c->buffer_paused && c->state != CONN_CLOSED &&
           (b->pending_publish_bytes + b->buffer_granted_bytes >= max || b->buffer_paused);
}

static void buffer_resume(broker_t *b);

/* c is done with the room a release granted it (or is closed): what it did
 * not use may let the next waiting connection in. */
static void buffer_grant_end(conn_t *c)
{
    if (c->buffer_granted) {
        c->broker->buffer_granted_bytes -= c->buffer_granted;
        c->buffer_granted = 0;
        buffer_resume(c->broker);
    }
}

static void buffer_pause(conn_t *c)
{
    broker_t *b = c->broker;
    c->buffer_paused = true;
    c->buffer_prev = b->buffer_paused_tail;
    if (b->buffer_paused_tail)
        b->buffer_paused_tail->buffer_next = c;
    else
        b->buffer_paused = c;
    b->buffer_paused_tail = c;
    b->buffer_paused_n++;
    b->buffer_pauses++;
    conn_pause_reads(c);
}

void broker_publish_bytes_add(conn_t *c, uint64_t bytes)
{
    broker_t *b = c->broker;
    b->pending_publish_bytes += bytes;
    c->last_publish_bytes = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
    if (c->buffer_granted) { /* the append uses the room promised to it */
        uint32_t use = bytes < c->buffer_granted ? (uint32_t)bytes : c->buffer_granted;
        c->buffer_granted -= use;
        b->buffer_granted_bytes -= use;
        if (c->buffer_granted >= c->last_publish_bytes)
            return; /* room for another such append: it reads on */
        buffer_grant_end(c);
    }
    if (buffer_over(c))
        buffer_pause(c);
}

/* Room opened (appends completed, a grant given back): the waiting
 * connections are resumed once in this loop iteration, before it waits
 * (broker_flush_cb), so that the room of all the appends a journal group
 * completes at once is shared among them, not handed out an append at a time
 * to the oldest while the rest goes to whichever connection the loop reads
 * first. */
static void buffer_resume(broker_t *b)
{
    if (b->buffer_paused)
        b->buffer_resume_due = true;
}

/* Resumes waiting connections, oldest first, while the bound has room for the
 * next append of each (counted at the size of its last one), each promised an
 * equal share of the room there is now (at least that append). */
static void buffer_resume_now(broker_t *b)
{
    b->buffer_resume_due = false;
    uint64_t max = b->cfg.max_publish_buffer_bytes;
    uint64_t used = b->pending_publish_bytes + b->buffer_granted_bytes;
    uint64_t share = b->buffer_paused_n && max > used ? (max - used) / b->buffer_paused_n : 0;
    while (b->buffer_paused) {
        conn_t *c = b->buffer_paused;
        /* Its next append, guessed from its last (a full read buffer before any). */
        uint32_t next = c->last_publish_bytes ? c->last_publish_bytes : CONN_RBUF_BUSY;
        used = b->pending_publish_bytes + b->buffer_granted_bytes;
        if (max && used + next > max && used > 0)
            break; /* no room for it yet */
        uint64_t grant = share > next ? share : next;
        if (max && used + grant > max)
            grant = used + next <= max ? max - used : next; /* all there is, or one append */
        if (grant > UINT32_MAX)
            grant = UINT32_MAX;
        buffer_unlink(c);
        /* Paused for its own pending bytes or a topic's publish rate too: those
         * resume it later (send_release, limits.c). */
        if (c->pending_publish_bytes <= b->cfg.max_pending_publish_bytes &&
            c->publish_throttles == 0) {
            c->buffer_granted = (uint32_t)grant;
            b->buffer_granted_bytes += grant;
            conn_resume_reads(c);
        }
    }
}

void broker_publish_bytes_release(broker_t *b, uint64_t bytes)
{
    b->pending_publish_bytes -= bytes;
    buffer_resume(b);
}

/* ------------------------------------------------------------- handshake -- */

static void handle_connect(conn_t *c, const Pulsar__Proto__CommandConnect *cmd)
{
    if (c->state != CONN_AWAIT_CONNECT) {
        conn_close(c, "CONNECT received twice");
        return;
    }
    if (conn_security_connect(c, cmd) < 0) /* authentication (conn_security.c) */
        return;
    snprintf(c->client_version, sizeof c->client_version, "%s",
             cmd->client_version ? cmd->client_version : "");
    int pv = cmd->has_protocol_version ? cmd->protocol_version : 0;
    c->protocol_version = pv < PROTOCOL_VERSION_MAX ? pv : PROTOCOL_VERSION_MAX;
    /* Java clients send a bare version ("3.3.0"); the others name themselves. */
    c->is_java_client = strncmp(c->client_version, "Pulsar-CPP", 10) != 0 &&
                        strncmp(c->client_version, "Pulsar-Go", 9) != 0 &&
                        strncmp(c->client_version, "Pulsar Go", 9) != 0 &&
                        strncmp(c->client_version, "Pulsar-Python", 13) != 0;
    c->supports_broker_entry_metadata = cmd->feature_flags &&
                                        cmd->feature_flags->has_supports_broker_entry_metadata &&
                                        cmd->feature_flags->supports_broker_entry_metadata;

    Pulsar__Proto__FeatureFlags ff = PULSAR__PROTO__FEATURE_FLAGS__INIT;
    Pulsar__Proto__CommandConnected ok = PULSAR__PROTO__COMMAND_CONNECTED__INIT;
    ok.server_version = "Quire-" QUIRE_VERSION;
    ok.has_protocol_version = true;
    ok.protocol_version = c->protocol_version;
    ok.has_max_message_size = true;
    ok.max_message_size = (int32_t)c->broker->cfg.max_message_size;
    ok.feature_flags = &ff; /* nothing advertised that is not implemented */
    pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
    out.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED;
    out.connected = &ok;
    c->state = CONN_READY;
    conn_send_command(c, &out);
    log_info("conn", "%s: connected, client %s, protocol %d", c->peer, c->client_version,
             c->protocol_version);
}

static void send_simple(conn_t *c, Pulsar__Proto__BaseCommand__Type type)
{
    pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
    Pulsar__Proto__CommandPing ping = PULSAR__PROTO__COMMAND_PING__INIT;
    Pulsar__Proto__CommandPong pong = PULSAR__PROTO__COMMAND_PONG__INIT;
    out.type = type;
    if (type == PULSAR__PROTO__BASE_COMMAND__TYPE__PING)
        out.ping = &ping;
    else
        out.pong = &pong;
    conn_send_command(c, &out);
}

static void conn_keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_t *c = w->data;
    if (c->state == CONN_AWAIT_CONNECT) {
        conn_close(c, "handshake not completed in time");
        return;
    }
    if (c->seen_since_ping) {
        c->seen_since_ping = false;
        c->ping_outstanding = false;
        return;
    }
    if (c->ping_outstanding) {
        conn_close(c, "keepalive: no answer to PING");
        return;
    }
    c->ping_outstanding = true;
    send_simple(c, PULSAR__PROTO__BASE_COMMAND__TYPE__PING);
}

/* -------------------------------------------------------------- dispatch -- */

static void handle_command(conn_t *c, const frame_t *f)
{
    const pb_command_t *cmd = f->cmd;
    if (c->state == CONN_AWAIT_CONNECT) {
        if (cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT && cmd->connect)
            handle_connect(c, cmd->connect);
        else
            conn_close(c, "first command is not CONNECT");
        return;
    }
    if (conn_security_intercept(c, cmd)) /* authorization, AUTH_RESPONSE, limits */
        return;
#define NEED(field)                                                                                \
    do {                                                                                           \
        if (!cmd->field) {                                                                         \
            conn_close(c, "command without its body: " #field);                                    \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    switch (cmd->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PING:
        send_simple(c, PULSAR__PROTO__BASE_COMMAND__TYPE__PONG);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PONG:
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP:
        NEED(lookuptopic);
        lookup_handle_lookup(c, cmd->lookuptopic);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA:
        NEED(partitionmetadata);
        lookup_handle_partitioned_metadata(c, cmd->partitionmetadata);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE:
        NEED(gettopicsofnamespace);
        lookup_handle_topics_of_namespace(c, cmd->gettopicsofnamespace);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER:
        NEED(producer);
        producer_handle_create(c, cmd->producer);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND:
        NEED(send);
        producer_handle_send(c, cmd->send, f->payload, f->payload_len, f->payload_buf,
                             !f->has_checksum || f->checksum_ok);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER:
        NEED(close_producer);
        producer_handle_close(c, cmd->close_producer);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE:
        NEED(subscribe);
        consumer_handle_subscribe(c, cmd->subscribe);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__FLOW:
        NEED(flow);
        consumer_handle_flow(c, cmd->flow);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__ACK:
        NEED(ack);
        consumer_handle_ack(c, cmd->ack);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__REDELIVER_UNACKNOWLEDGED_MESSAGES:
        NEED(redeliverunacknowledgedmessages);
        consumer_handle_redeliver(c, cmd->redeliverunacknowledgedmessages);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__UNSUBSCRIBE:
        NEED(unsubscribe);
        consumer_handle_unsubscribe(c, cmd->unsubscribe);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER:
        NEED(close_consumer);
        consumer_handle_close(c, cmd->close_consumer);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEEK:
        NEED(seek);
        consumer_handle_seek(c, cmd->seek);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_LAST_MESSAGE_ID:
        NEED(getlastmessageid);
        consumer_handle_get_last_message_id(c, cmd->getlastmessageid);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA:
        NEED(getschema);
        schema_handle_get_schema(c, cmd->getschema); /* schema.c */
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__GET_OR_CREATE_SCHEMA:
        NEED(getorcreateschema);
        schema_handle_get_or_create_schema(c, cmd->getorcreateschema);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT:
        conn_close(c, "CONNECT received twice");
        break;
    default:
        /* Requests we do not serve get an error when they carry a request id. */
        log_warn("conn", "%s: unsupported command type %d", c->peer, (int)cmd->type);
        conn_close(c, "unsupported command");
        break;
    }
#undef NEED
}

/* --------------------------------------------------------------- reading -- */

static size_t max_frame_bytes(const conn_t *c)
{
    return (size_t)c->broker->cfg.max_message_size + 10240;
}

/* Decodes and handles every complete frame in rbuf. */
static void conn_process(conn_t *c)
{
    while (c->state != CONN_CLOSED && !c->reads_paused && c->rpos < c->rlen) {
        frame_t f;
        size_t used = 0;
        int rc = frame_decode(c->rbuf + c->rpos, c->rlen - c->rpos, max_frame_bytes(c), &f, &used);
        if (rc == QE_AGAIN)
            break;
        if (rc < 0) {
            char why[96];
            snprintf(why, sizeof why, "bad frame: %s", q_strerror(rc));
            conn_close(c, why);
            return;
        }
        c->seen_since_ping = true;
        handle_command(c, &f);
        frame_free(&f);
        c->rpos += used;
    }
    if (c->rpos == c->rlen)
        c->rpos = c->rlen = 0;
}

/* Makes room for at least `want` more bytes: compacts, then grows up to the
 * frame limit. */
static int rbuf_reserve(conn_t *c, size_t want)
{
    if (c->rpos > 0 && c->rcap - c->rlen < want) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    if (c->rcap - c->rlen >= want)
        return 0;
    size_t limit = max_frame_bytes(c) + 64;
    size_t ncap = c->rcap;
    while (ncap - c->rlen < want && ncap < limit)
        ncap *= 2;
    if (ncap > limit)
        ncap = limit;
    if (ncap == c->rcap)
        return QE_TOO_LARGE;
    uint8_t *nb = realloc(c->rbuf, ncap);
    if (!nb)
        return -ENOMEM;
    c->rbuf = nb;
    c->rcap = ncap;
    return 0;
}

/* A frame's whole length, its 4-byte size prefix included. */
static size_t frame_total(const uint8_t *p)
{
    return ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]) + 4;
}

/* A buffer grown for a busy connection (CONN_RBUF_BUSY) or a large frame goes
 * back to CONN_RBUF_INITIAL once what was read is handled, unless the bytes
 * left need more: between reads a connection holds at most a frame's tail.
 * A thousand busy producers kept 64 KiB apiece (64 MB in scenario (e), about
 * an eighth of the server's memory there), and one sending a 200 KiB batch
 * kept 256 KiB. */
static void rbuf_shrink(conn_t *c)
{
    size_t have = c->rlen - c->rpos;
    if (c->rcap <= CONN_RBUF_INITIAL || have > CONN_RBUF_INITIAL / 2)
        return;
    if (have >= 4 && frame_total(c->rbuf + c->rpos) > CONN_RBUF_INITIAL / 2)
        return; /* the frame being received wants the room */
    memmove(c->rbuf, c->rbuf + c->rpos, have);
    c->rpos = 0;
    c->rlen = have;
    uint8_t *nb = realloc(c->rbuf, CONN_RBUF_INITIAL);
    if (!nb)
        return; /* keeps the larger buffer */
    c->rbuf = nb;
    c->rcap = CONN_RBUF_INITIAL;
}

/* A frame larger than CONN_BIG_FRAME (a producer's batch): once its head is
 * in, its payload part goes to a buffer of its own, exactly its size, that the
 * producer then stores without a copy (frame_t.payload_buf); rbuf keeps only
 * the head. Returns false when the frame is not one (the caller grows rbuf). */
static bool big_start(conn_t *c, size_t total)
{
    size_t have = c->rlen - c->rpos, head = 0;
    if (total <= CONN_BIG_FRAME || total <= have ||
        frame_head_size(c->rbuf + c->rpos, have, max_frame_bytes(c), &head) != 0 || have < head ||
        head == total)
        return false;
    qbuf_t *b = qbuf_new(total - head);
    if (!b)
        return false;
    b->len = (uint32_t)(have - head);
    memcpy(b->data, c->rbuf + c->rpos + head, b->len);
    c->rlen = c->rpos + head;
    c->big = b;
    c->big_head = head;
    return true;
}

/* Handles the frame whose payload part c->big now holds whole. */
static void big_finish(conn_t *c)
{
    qbuf_t *b = c->big;
    c->big = NULL;
    frame_t f;
    int rc =
        frame_decode_split(c->rbuf + c->rpos, c->big_head, b->data, b->len, max_frame_bytes(c), &f);
    c->rpos += c->big_head;
    if (c->rpos == c->rlen)
        c->rpos = c->rlen = 0;
    if (rc < 0) {
        char why[96];
        snprintf(why, sizeof why, "bad frame: %s", q_strerror(rc));
        conn_close(c, why);
    } else {
        c->seen_since_ping = true;
        f.payload_buf = b;
        handle_command(c, &f);
        frame_free(&f);
    }
    qbuf_unref(b);
}

/* Reads into c->big; false when the socket has nothing more now. */
static bool big_read(conn_t *c)
{
    size_t room = c->big->cap - c->big->len;
    ssize_t n = conn_io_read(&c->io, c->big->data + c->big->len, room);
    if (n == 0) {
        conn_close(c, "closed by the client");
        return false;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            conn_close(c, strerror(errno));
        return false;
    }
    c->big->len += (uint32_t)n;
    if ((size_t)n == room)
        big_finish(c);
    return (size_t)n == room;
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_t *c = w->data;
    /* Over the publish buffer bound, a producer's connection is not read at
     * all: waiting for its next append to pause it would let every producer
     * connection in with one more batch. One that a release resumed has room
     * counted for it until its next append, and reads. */
    if (!c->buffer_granted && buffer_over(c) && qmap64_size(c->producers) > 0) {
        buffer_pause(c);
        return;
    }
    conn_ref(c);
    for (int rounds = 0; rounds < 16 && c->state != CONN_CLOSED && !c->reads_paused; rounds++) {
        if (c->big) {
            if (!big_read(c))
                break;
            continue;
        }
        /* The frame being received needs its whole length in the buffer; read
         * 16 KiB at a time otherwise, or what the buffer holds beside a
         * frame's head if that is at least half of it (asking for 16 KiB more
         * doubled every buffer holding a few bytes), but never ask for more
         * room than the largest frame leaves (a nearly complete maximum-size
         * frame needs only its last bytes). */
        size_t have = c->rlen - c->rpos, want = 16384;
        if (c->rcap - have < want && c->rcap - have >= CONN_RBUF_INITIAL / 2)
            want = c->rcap - have;
        if (have >= 4) {
            size_t total = frame_total(c->rbuf + c->rpos);
            if (total > max_frame_bytes(c)) {
                conn_close(c, "frame larger than the maximum");
                break;
            }
            if (total <= have) { /* complete (left while paused): handle it first */
                conn_process(c);
                continue;
            }
            if (big_start(c, total))
                continue;
            /* A large SEND needs only its head here (big_start then). */
            size_t head = 0, need = total - have;
            if (total > CONN_BIG_FRAME &&
                frame_head_size(c->rbuf + c->rpos, have, max_frame_bytes(c), &head) != 0)
                need = 0; /* the head's size is not in yet */
            else if (total > CONN_BIG_FRAME && have < head && head < total)
                need = head - have;
            if (need > want)
                want = need;
        }
        size_t room_max = max_frame_bytes(c) + 64 - have;
        if (want > room_max)
            want = room_max;
        if (rbuf_reserve(c, want) < 0) {
            conn_close(c, "read buffer limit");
            break;
        }
        size_t room = c->rcap - c->rlen;
        ssize_t n = conn_io_read(&c->io, c->rbuf + c->rlen, room);
        if (n == 0) {
            conn_close(c, "closed by the client");
            break;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                conn_close(c, strerror(errno));
            if (errno == EAGAIN)
                conn_process(c);
            break;
        }
        c->rlen += (size_t)n;
        conn_process(c);
        /* Busy with small frames: fewer, larger reads. (A large frame that is
         * left goes to a buffer of its own instead.) Not while publishes wait
         * for the publish buffer: a connection paused there keeps what it read
         * and did not handle, and a thousand producers each holding a grown
         * buffer held 45 MB beyond the bound in scenario (e). */
        if ((size_t)n == room && c->rcap < CONN_RBUF_BUSY && c->state != CONN_CLOSED &&
            !c->reads_paused && !c->buffer_granted && !c->broker->buffer_paused &&
            !(c->rlen - c->rpos >= 4 && frame_total(c->rbuf + c->rpos) > CONN_BIG_FRAME))
            (void)rbuf_reserve(c, CONN_RBUF_BUSY - c->rlen);
        if ((size_t)n < c->rcap - (c->rlen - (size_t)n) && c->rlen == 0)
            break;
    }
    if (c->state != CONN_CLOSED)
        rbuf_shrink(c);
    /* Resumed with room but has no more appends now (nor is one arriving), or
     * stopped for its own bound or a topic's publish rate: what is left of the
     * room goes to the waiting connections. */
    if (c->buffer_granted && !c->big && (c->rpos == c->rlen || c->reads_paused))
        buffer_grant_end(c);
    /* TLS: decrypted bytes may wait in OpenSSL with nothing left on the socket. */
    if (c->state != CONN_CLOSED && !c->reads_paused && conn_io_pending(&c->io))
        ev_feed_event(c->broker->loop, &c->read_watcher, EV_READ);
    conn_unref(c);
}
