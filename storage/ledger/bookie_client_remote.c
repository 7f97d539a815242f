/*
 * bookie_client_remote.c — a bk_client_t on a bookie server across TCP (the
 * bookie RPC: proto/bookie_rpc.proto, framing in storage/bookie/bookie_rpc.h,
 * docs/bookie-rpc.md).
 *
 * Connection state machine (one TCP connection per handle):
 *
 *   IDLE --call--> CONNECTING --writable, SO_ERROR 0--> CONNECTED
 *     ^               |  connect error / timeout_ms         |  EOF, socket error,
 *     |               v                                     v  bad frame
 *     +--backoff-- BACKOFF <------------------------------- +
 *
 *   - IDLE: no socket. The first call starts a non-blocking connect (lazily).
 *   - CONNECTING / CONNECTED: calls are queued (their frames wait in the
 *     out-queue until connected) and matched to responses by request id.
 *   - A failure closes the socket and fails every pending call with
 *     QE_UNAVAILABLE, then waits backoff_s (BKR_BACKOFF_MIN_S doubling to
 *     BKR_BACKOFF_MAX_S; reset by a successful connect). While in BACKOFF,
 *     calls fail fast with QE_UNAVAILABLE (through the callback). When the
 *     backoff ends the handle is IDLE and the next call reconnects.
 *
 * Timeouts: every call has a deadline timeout_ms after it was made. Pending
 * calls are kept in call order, so the first one is always the first to
 * expire; one ev_timer watches it. An expired call completes with QE_TIMEOUT
 * and leaves the table; a late response for it is dropped. The connection
 * stays up (one slow request does not fail the others).
 *
 * Callbacks are never inline: a finished call moves to the done list and a
 * zero-delay ev_timer delivers the list on the next loop iteration, in the
 * order the calls finished (responses arrive in the bookie's completion order,
 * which for adds of one ledger is their order).
 *
 * Bounds: BKR_INFLIGHT_MAX calls pending and BKR_OUT_BYTES_MAX bytes not yet
 * written; past either, calls return QE_BUSY (and no callback).
 *
 * Memory: add references its data buffer until the frame is written; an entry
 * given to a read callback is borrowed for the callback only.
 *
 * Read-only bookies: a plain add answered READ_ONLY (the bookie's disk above
 * its mark, or an I/O error) makes the handle report the bookie not writable
 * for BKR_READ_ONLY_HOLD_S (its disk check's default period), so new
 * ensembles leave it out meanwhile; a plain add it takes again clears that.
 *
 * Host names are resolved with getaddrinfo() when connecting, on the loop:
 * use IP addresses (or /etc/hosts names) to keep the loop from waiting on DNS.
 */
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
#include "storage/ledger/bookie_client.h"

#define BKR_INFLIGHT_MAX 10000
#define BKR_OUT_BYTES_MAX (64u << 20)
#define BKR_HASH_BUCKETS 1024u
#define BKR_BACKOFF_MIN_S 0.1
#define BKR_BACKOFF_MAX_S 5.0
#define BKR_TIMEOUT_DEFAULT_MS 5000u
#define BKR_READS_PER_WAKEUP 16
#define BKR_READ_ONLY_HOLD_S 10.0

typedef enum { BKR_IDLE, BKR_CONNECTING, BKR_CONNECTED, BKR_BACKOFF } bkr_state_t;

/* The callback of a call; the member used is the one of its op. */
typedef union bkr_cb {
    bk_add_cb add;
    bk_read_cb read;
    bk_lac_cb lac;
    bk_done_cb done;
} bkr_cb_t;

typedef struct bkr_call {
    struct bkr_call *prev, *next; /* pending list, or done list */
    struct bkr_call *hnext;       /* hash chain, while pending */
    uint64_t id;
    Quire__Bookie__OpType op;
    bool recovery; /* a recovery add (taken by a read-only bookie too) */
    ev_tstamp deadline;
    bkr_cb_t cb;
    void *arg;
    int rc;        /* result, once done */
    int64_t lac;   /* READ, READ_LAC, FENCE: the LAC; LAST_ENTRY: the last entry */
    qbuf_t *entry; /* READ: owned, freed after the callback */
} bkr_call_t;

typedef struct bkr_list {
    bkr_call_t *head, *tail;
    size_t count;
} bkr_list_t;

typedef struct bk_remote {
    bk_client_t base;
    struct ev_loop *loop;
    char host[64];
    char port[8];
    double timeout_s;
    bkr_state_t state;
    int fd;
    ev_io rio, wio;
    ev_timer call_timer; /* the first pending call's deadline */
    ev_timer conn_timer; /* connect timeout (CONNECTING), backoff (BACKOFF) */
    ev_timer done_timer; /* zero delay: deliver the done list */
    double backoff_s;
    bkrpc_reader_t rd; /* valid while CONNECTING / CONNECTED */
    bkrpc_outq_t outq;
    bkr_list_t pending; /* in call order */
    bkr_list_t done;    /* in completion order */
    bkr_call_t *table[BKR_HASH_BUCKETS];
    uint64_t next_id;
    ev_tstamp read_only_until; /* not writable before (a READ_ONLY answer) */
} bk_remote_t;

static void bkr_fail_connection(bk_remote_t *r, const char *why);

/* ----------------------------------------------------------------- lists -- */

static void list_push(bkr_list_t *l, bkr_call_t *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
}

static void list_remove(bkr_list_t *l, bkr_call_t *c)
{
    assert(l->count > 0);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->count--;
}

static void table_insert(bk_remote_t *r, bkr_call_t *c)
{
    bkr_call_t **b = &r->table[c->id % BKR_HASH_BUCKETS];
    c->hnext = *b;
    *b = c;
}

/* Removes and returns the pending call with this id, or NULL. */
static bkr_call_t *table_take(bk_remote_t *r, uint64_t id)
{
    for (bkr_call_t **p = &r->table[id % BKR_HASH_BUCKETS]; *p; p = &(*p)->hnext) {
        if ((*p)->id == id) {
            bkr_call_t *c = *p;
            *p = c->hnext;
            c->hnext = NULL;
            return c;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ completion -- */

static void call_invoke(bkr_call_t *c)
{
    switch (c->op) {
    case QUIRE__BOOKIE__OP_TYPE__ADD:
        c->cb.add(c->rc, c->arg);
        break;
    case QUIRE__BOOKIE__OP_TYPE__READ:
        c->cb.read(c->rc, c->rc == 0 ? c->entry : NULL, c->lac, c->arg);
        break;
    case QUIRE__BOOKIE__OP_TYPE__DELETE_LEDGER:
        c->cb.done(c->rc, c->arg);
        break;
    default:
        c->cb.lac(c->rc, c->lac, c->arg);
        break;
    }
    qbuf_unref(c->entry);
    free(c);
}

/* Delivers the calls done so far; calls finished by these callbacks wait for
 * the next round (no unbounded recursion, no inline callback). */
static void bkr_on_done_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bk_remote_t *r = w->data;
    bkr_list_t batch = r->done;
    memset(&r->done, 0, sizeof r->done);
    while (batch.head) {
        bkr_call_t *c = batch.head;
        list_remove(&batch, c);
        call_invoke(c);
    }
}

/* Moves a call (already out of pending/table) to the done list with rc. */
static void call_finish(bk_remote_t *r, bkr_call_t *c, int rc)
{
    c->rc = rc;
    list_push(&r->done, c);
    if (!ev_is_active(&r->done_timer)) {
        ev_timer_set(&r->done_timer, 0.0, 0.0);
        ev_timer_start(r->loop, &r->done_timer);
    }
}

/* Takes a pending call out of the list and the table, and finishes it. */
static void pending_finish(bk_remote_t *r, bkr_call_t *c, int rc)
{
    bkr_call_t *t = table_take(r, c->id);
    assert(t == c);
    (void)t;
    list_remove(&r->pending, c);
    call_finish(r, c, rc);
}

static void bkr_arm_call_timer(bk_remote_t *r)
{
    if (ev_is_active(&r->call_timer) || !r->pending.head)
        return;
    double after = r->pending.head->deadline - ev_now(r->loop);
    ev_timer_set(&r->call_timer, after > 0 ? after : 0.0, 0.0);
    ev_timer_start(r->loop, &r->call_timer);
}

static void bkr_on_call_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    bk_remote_t *r = w->data;
    ev_tstamp now = ev_now(loop);
    size_t expired = 0;
    uint64_t first_id = r->pending.head ? r->pending.head->id : 0;
    while (r->pending.head && r->pending.head->deadline <= now) {
        pending_finish(r, r->pending.head, QE_TIMEOUT);
        expired++;
    }
    if (expired)
        log_warn("bk-remote", "%s: %zu requests timed out (first id %llu)", r->base.id, expired,
                 (unsigned long long)first_id);
    bkr_arm_call_timer(r);
}

/* ------------------------------------------------------------- responses -- */

/* What a plain add's answer says of the bookie's writability. */
static void bkr_note_add(bk_remote_t *r, int rc)
{
    if (rc == QE_READ_ONLY) {
        if (ev_now(r->loop) >= r->read_only_until)
            log_warn("bk-remote",
                     "%s: read-only (adds refused): left out of new ensembles "
                     "for %.0f s",
                     r->base.id, BKR_READ_ONLY_HOLD_S);
        r->read_only_until = ev_now(r->loop) + BKR_READ_ONLY_HOLD_S;
    } else if (rc == 0) {
        r->read_only_until = 0;
    }
}

/* Matches one response frame to its call; false if the stream is bad. */
static bool bkr_handle_frame(bk_remote_t *r, bkrpc_frame_t *f)
{
    Quire__Bookie__Response *p;
    if (bkrpc_decode_response(f, &p) < 0) {
        qbuf_unref(f->body);
        return false;
    }
    bkr_call_t *c = table_take(r, p->request_id);
    bool ok = true;
    if (!c) {
        log_debug("bk-remote", "%s: late response %llu dropped", r->base.id,
                  (unsigned long long)p->request_id);
        qbuf_unref(f->body);
    } else if (c->op != p->op) {
        log_warn("bk-remote", "%s: response %llu of op %d to a request of op %d", r->base.id,
                 (unsigned long long)p->request_id, (int)p->op, (int)c->op);
        table_insert(r, c); /* failed with the others by bkr_fail_connection */
        qbuf_unref(f->body);
        ok = false;
    } else {
        int rc = bkrpc_status_to_rc(p->status);
        if (c->op == QUIRE__BOOKIE__OP_TYPE__ADD && !c->recovery)
            bkr_note_add(r, rc);
        c->lac = p->has_lac ? p->lac : -1;
        c->entry = f->body;
        if (rc == 0 && c->op == QUIRE__BOOKIE__OP_TYPE__READ && !c->entry)
            c->entry = qbuf_new(0); /* an empty entry */
        if (rc == 0 && c->op == QUIRE__BOOKIE__OP_TYPE__READ && !c->entry)
            rc = -ENOMEM;
        list_remove(&r->pending, c);
        call_finish(r, c, rc);
    }
    quire__bookie__response__free_unpacked(p, NULL);
    return ok;
}

/* Parses buffered frames; false if the connection was failed. */
static bool bkr_process(bk_remote_t *r)
{
    for (;;) {
        bkrpc_frame_t f;
        int rc = bkrpc_reader_next(&r->rd, &f);
        if (rc == 0)
            return true;
        if (rc < 0 || !bkr_handle_frame(r, &f)) {
            bkr_fail_connection(r, rc < 0 ? q_strerror(rc) : "bad response");
            return false;
        }
    }
}

static void bkr_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    bk_remote_t *r = w->data;
    for (int i = 0; i < BKR_READS_PER_WAKEUP; i++) {
        uint8_t *p;
        size_t len;
        bkrpc_reader_space(&r->rd, &p, &len);
        ssize_t n = read(r->fd, p, len);
        if (n > 0) {
            bkrpc_reader_commit(&r->rd, (size_t)n);
            if (!bkr_process(r))
                return;
        } else if (n == 0) {
            bkr_fail_connection(r, "closed by the bookie");
            return;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return;
        } else if (errno != EINTR) {
            bkr_fail_connection(r, strerror(errno));
            return;
        }
    }
}

/* ------------------------------------------------------------ connection -- */

static void bkr_flush(bk_remote_t *r)
{
    assert(r->state == BKR_CONNECTED);
    int rc = bkrpc_outq_write(&r->outq, r->fd);
    if (rc < 0) {
        bkr_fail_connection(r, strerror(-rc));
        return;
    }
    if (rc == 1)
        ev_io_start(r->loop, &r->wio);
    else
        ev_io_stop(r->loop, &r->wio);
}

static void bkr_connected(bk_remote_t *r)
{
    ev_timer_stop(r->loop, &r->conn_timer);
    ev_io_stop(r->loop, &r->wio);
    r->state = BKR_CONNECTED;
    r->backoff_s = BKR_BACKOFF_MIN_S;
    log_info("bk-remote", "%s: connected", r->base.id);
    ev_io_start(r->loop, &r->rio);
    bkr_flush(r);
}

static void bkr_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    bk_remote_t *r = w->data;
    if (r->state == BKR_CONNECTED) {
        bkr_flush(r);
        return;
    }
    assert(r->state == BKR_CONNECTING);
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err)
        bkr_fail_connection(r, strerror(err));
    else
        bkr_connected(r);
}

static void bkr_on_conn_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bk_remote_t *r = w->data;
    if (r->state == BKR_CONNECTING) {
        bkr_fail_connection(r, "connect timed out");
    } else {
        assert(r->state == BKR_BACKOFF);
        r->state = BKR_IDLE; /* the next call reconnects */
    }
}

/* A non-blocking socket connecting to host:port; returns fd or < 0. */
static int bkr_socket_connect(bk_remote_t *r, bool *in_progress)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int grc = getaddrinfo(r->host, r->port, &hints, &ai);
    if (grc != 0) {
        log_warn("bk-remote", "%s: cannot resolve: %s", r->base.id, gai_strerror(grc));
        return QE_UNAVAILABLE;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            if (errno == EINPROGRESS)
                *in_progress = true;
            else
                rc = -errno;
        }
    }
    freeaddrinfo(ai);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    return fd;
}

static void bkr_connect(bk_remote_t *r)
{
    assert(r->state == BKR_IDLE && r->fd < 0);
    if (bkrpc_reader_init(&r->rd) < 0) {
        r->state = BKR_CONNECTING; /* so that the failure path frees nothing twice */
        bkr_fail_connection(r, "out of memory");
        return;
    }
    bool in_progress = false;
    int fd = bkr_socket_connect(r, &in_progress);
    r->state = BKR_CONNECTING;
    if (fd < 0) {
        bkr_fail_connection(r, q_strerror(fd));
        return;
    }
    r->fd = fd;
    ev_io_set(&r->rio, fd, EV_READ);
    ev_io_set(&r->wio, fd, EV_WRITE);
    if (!in_progress) {
        bkr_connected(r);
        return;
    }
    ev_io_start(r->loop, &r->wio);
    ev_timer_set(&r->conn_timer, r->timeout_s, 0.0);
    ev_timer_start(r->loop, &r->conn_timer);
}

/* Closes the connection, fails every pending call with QE_UNAVAILABLE (in
 * call order) and enters BACKOFF. */
static void bkr_fail_connection(bk_remote_t *r, const char *why)
{
    assert(r->state == BKR_CONNECTING || r->state == BKR_CONNECTED);
    log_warn("bk-remote", "%s: connection failed (%s); %zu pending calls fail, retry in %.1fs",
             r->base.id, why, r->pending.count, r->backoff_s);
    ev_io_stop(r->loop, &r->rio);
    ev_io_stop(r->loop, &r->wio);
    ev_timer_stop(r->loop, &r->conn_timer);
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    bkrpc_reader_free(&r->rd);
    bkrpc_outq_clear(&r->outq);
    while (r->pending.head)
        pending_finish(r, r->pending.head, QE_UNAVAILABLE);
    r->state = BKR_BACKOFF;
    ev_timer_set(&r->conn_timer, r->backoff_s, 0.0);
    ev_timer_start(r->loop, &r->conn_timer);
    r->backoff_s = r->backoff_s * 2 < BKR_BACKOFF_MAX_S ? r->backoff_s * 2 : BKR_BACKOFF_MAX_S;
}

/* ----------------------------------------------------------------- calls -- */

/* Sends one request; cb is the callback of the op's kind. Returns 0 (cb will
 * be called), QE_BUSY, QE_TOO_LARGE or -ENOMEM (cb will not be called). */
static int bkr_call(bk_remote_t *r, Quire__Bookie__Request *q, qbuf_t *body, bkr_cb_t cb, void *arg)
{
    if (r->pending.count >= BKR_INFLIGHT_MAX || r->outq.bytes >= BKR_OUT_BYTES_MAX) {
        log_warn("bk-remote", "%s: refused, %zu calls pending, %zu bytes queued", r->base.id,
                 r->pending.count, r->outq.bytes);
        return QE_BUSY;
    }
    bkr_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->id = r->next_id++;
    c->op = q->op;
    c->recovery = q->add && q->add->has_recovery && q->add->recovery;
    c->lac = -1;
    c->arg = arg;
    c->cb = cb;
    if (r->state == BKR_BACKOFF) {
        call_finish(r, c, QE_UNAVAILABLE); /* fail fast, still through the callback */
        return 0;
    }
    q->version = BKRPC_PROTOCOL_VERSION;
    q->request_id = c->id;
    bkrpc_out_t *m;
    int rc = bkrpc_encode(&q->base, body, &m);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->deadline = ev_now(r->loop) + r->timeout_s;
    list_push(&r->pending, c);
    table_insert(r, c);
    bkr_arm_call_timer(r);
    bkrpc_outq_push(&r->outq, m);
    if (r->state == BKR_IDLE)
        bkr_connect(r);
    else if (r->state == BKR_CONNECTED)
        ev_io_start(r->loop, &r->wio); /* one sendmsg for the calls of this iteration */
    return 0;
}

static int remote_add_flags(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, int64_t lac,
                            qbuf_t *data, bk_add_cb cb, void *arg, bool recovery)
{
    Quire__Bookie__AddRequest add = QUIRE__BOOKIE__ADD_REQUEST__INIT;
    add.ledger_id = ledger_id;
    add.entry_id = entry_id;
    add.lac = lac;
    add.has_recovery = recovery; /* absent on plain adds: the frame stays as before */
    add.recovery = recovery;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__ADD;
    q.add = &add;
    return bkr_call((bk_remote_t *)bc, &q, data, (bkr_cb_t){.add = cb}, arg);
}

static int remote_add(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, int64_t lac,
                      qbuf_t *data, bk_add_cb cb, void *arg)
{
    return remote_add_flags(bc, ledger_id, entry_id, lac, data, cb, arg, false);
}

/* BookKeeper's RECOVERY_ADD: accepted by a bookie that fenced the ledger. */
static int remote_recovery_add(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, int64_t lac,
                               qbuf_t *data, bk_add_cb cb, void *arg)
{
    return remote_add_flags(bc, ledger_id, entry_id, lac, data, cb, arg, true);
}

static int remote_read(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, bk_read_cb cb,
                       void *arg)
{
    Quire__Bookie__ReadRequest read = QUIRE__BOOKIE__READ_REQUEST__INIT;
    read.ledger_id = ledger_id;
    read.entry_id = entry_id;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__READ;
    q.read = &read;
    return bkr_call((bk_remote_t *)bc, &q, NULL, (bkr_cb_t){.read = cb}, arg);
}

static int remote_read_lac(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    Quire__Bookie__ReadLacRequest m = QUIRE__BOOKIE__READ_LAC_REQUEST__INIT;
    m.ledger_id = ledger_id;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__READ_LAC;
    q.read_lac = &m;
    return bkr_call((bk_remote_t *)bc, &q, NULL, (bkr_cb_t){.lac = cb}, arg);
}

static int remote_fence(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    Quire__Bookie__FenceRequest m = QUIRE__BOOKIE__FENCE_REQUEST__INIT;
    m.ledger_id = ledger_id;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__FENCE;
    q.fence = &m;
    return bkr_call((bk_remote_t *)bc, &q, NULL, (bkr_cb_t){.lac = cb}, arg);
}

static int remote_last_entry(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    Quire__Bookie__LastEntryRequest m = QUIRE__BOOKIE__LAST_ENTRY_REQUEST__INIT;
    m.ledger_id = ledger_id;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__LAST_ENTRY;
    q.last_entry = &m;
    return bkr_call((bk_remote_t *)bc, &q, NULL, (bkr_cb_t){.lac = cb}, arg);
}

static int remote_delete_ledger(bk_client_t *bc, int64_t ledger_id, bk_done_cb cb, void *arg)
{
    Quire__Bookie__DeleteLedgerRequest m = QUIRE__BOOKIE__DELETE_LEDGER_REQUEST__INIT;
    m.ledger_id = ledger_id;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.op = QUIRE__BOOKIE__OP_TYPE__DELETE_LEDGER;
    q.delete_ledger = &m;
    return bkr_call((bk_remote_t *)bc, &q, NULL, (bkr_cb_t){.done = cb}, arg);
}

/* ------------------------------------------------------------- lifecycle -- */

/* Delivers what is done, fails what is pending with QE_CLOSED, frees. */
static void remote_free(bk_client_t *bc)
{
    bk_remote_t *r = (bk_remote_t *)bc;
    ev_io_stop(r->loop, &r->rio);
    ev_io_stop(r->loop, &r->wio);
    ev_timer_stop(r->loop, &r->conn_timer);
    ev_timer_stop(r->loop, &r->call_timer);
    if (r->fd >= 0)
        close(r->fd);
    if (r->state == BKR_CONNECTING || r->state == BKR_CONNECTED)
        bkrpc_reader_free(&r->rd);
    bkrpc_outq_clear(&r->outq);
    while (r->pending.head)
        pending_finish(r, r->pending.head, QE_CLOSED);
    ev_timer_stop(r->loop, &r->done_timer);
    while (r->done.head) {
        bkr_call_t *c = r->done.head;
        list_remove(&r->done, c);
        call_invoke(c);
    }
    free(r);
}

static bool remote_writable(bk_client_t *bc)
{
    bk_remote_t *r = (bk_remote_t *)bc;
    return ev_now(r->loop) >= r->read_only_until;
}

static const bk_client_ops_t remote_ops = {
    .add = remote_add,
    .read = remote_read,
    .read_lac = remote_read_lac,
    .fence = remote_fence,
    .last_entry = remote_last_entry,
    .delete_ledger = remote_delete_ledger,
    .free = remote_free,
    .recovery_add = remote_recovery_add,
    .writable = remote_writable,
};

/* Splits "host:port" or "[v6]:port". */
static int parse_host_port(const char *hp, char *host, size_t host_len, char *port, size_t port_len)
{
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || !colon[1] || strlen(colon + 1) >= port_len)
        return QE_INVALID;
    const char *h = hp;
    size_t hl = (size_t)(colon - hp);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= host_len)
        return QE_INVALID;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535)
        return QE_INVALID;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, port_len, "%ld", p);
    return 0;
}

bk_client_t *bk_client_remote(struct ev_loop *loop, const char *host_port, uint32_t timeout_ms)
{
    bk_remote_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (!loop || !host_port || strlen(host_port) >= sizeof r->base.id ||
        parse_host_port(host_port, r->host, sizeof r->host, r->port, sizeof r->port) < 0) {
        log_error("bk-remote", "handle refused: bad address \"%s\"",
                  host_port ? host_port : "(null)");
        free(r);
        return NULL;
    }
    r->base.ops = &remote_ops;
    snprintf(r->base.id, sizeof r->base.id, "%s", host_port);
    r->loop = loop;
    r->timeout_s = (timeout_ms ? timeout_ms : BKR_TIMEOUT_DEFAULT_MS) / 1000.0;
    r->state = BKR_IDLE;
    r->fd = -1;
    r->backoff_s = BKR_BACKOFF_MIN_S;
    r->next_id = 1;
    ev_io_init(&r->rio, bkr_on_read, -1, EV_READ);
    ev_io_init(&r->wio, bkr_on_write, -1, EV_WRITE);
    ev_timer_init(&r->call_timer, bkr_on_call_timer, 0.0, 0.0);
    ev_timer_init(&r->conn_timer, bkr_on_conn_timer, 0.0, 0.0);
    ev_timer_init(&r->done_timer, bkr_on_done_timer, 0.0, 0.0);
    r->rio.data = r->wio.data = r->call_timer.data = r->conn_timer.data = r->done_timer.data = r;
    return &r->base;
}
