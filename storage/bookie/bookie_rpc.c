/*
 * bookie_rpc.c — the bookie RPC codec (see bookie_rpc.h for the frame table).
 *
 * Reader invariants:
 *   - 0 <= start <= end <= BKRPC_READ_BUF_BYTES;
 *   - in BODY state, buf[start .. start + 8 + header_len) holds the prefix and
 *     header of the frame in progress and end == start + 8 + header_len: every
 *     body byte lives in `body`, never in buf;
 *   - body->len < body_len while in BODY state.
 * Since 8 + BKRPC_HEADER_MAX < BKRPC_READ_BUF_BYTES, a prefix and header always
 * fit in the buffer once it is compacted.
 */
#include "storage/bookie/bookie_rpc.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/errors.h"
#include "common/log.h"

#define BKRPC_PREFIX 8u
#define BKRPC_IOV_MAX 64

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ---------------------------------------------------------------- reader -- */

int bkrpc_reader_init(bkrpc_reader_t *r)
{
    memset(r, 0, sizeof *r);
    r->buf = malloc(BKRPC_READ_BUF_BYTES);
    return r->buf ? 0 : -ENOMEM;
}

void bkrpc_reader_free(bkrpc_reader_t *r)
{
    free(r->buf);
    qbuf_unref(r->body);
    memset(r, 0, sizeof *r);
}

/* Drops the bytes of the frame handed out by the previous next(). */
static void reader_drop_consumed(bkrpc_reader_t *r)
{
    r->start += r->consume;
    r->consume = 0;
    assert(r->start <= r->end);
    if (r->start == r->end)
        r->start = r->end = 0;
}

void bkrpc_reader_space(bkrpc_reader_t *r, uint8_t **ptr, size_t *len)
{
    if (r->in_body) {
        assert(r->body && r->body->len < r->body_len);
        *ptr = r->body->data + r->body->len;
        *len = r->body_len - r->body->len;
        return;
    }
    reader_drop_consumed(r);
    /* Compact when the tail is short: the frame in progress must fit. */
    if (r->start > 0 && BKRPC_READ_BUF_BYTES - r->end < 8u + BKRPC_HEADER_MAX) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    assert(r->end < BKRPC_READ_BUF_BYTES);
    *ptr = r->buf + r->end;
    *len = BKRPC_READ_BUF_BYTES - r->end;
}

void bkrpc_reader_commit(bkrpc_reader_t *r, size_t n)
{
    if (r->in_body) {
        assert(n <= r->body_len - r->body->len);
        r->body->len += (uint32_t)n;
        return;
    }
    assert(n <= BKRPC_READ_BUF_BYTES - r->end);
    r->end += n;
}

/* Validates the prefix at p; sets the header and body lengths. */
static int reader_check_prefix(const uint8_t *p, uint32_t *header_len, uint32_t *body_len)
{
    uint32_t frame_len = get_be32(p);
    uint32_t hlen = get_be32(p + 4);
    if (frame_len > BKRPC_FRAME_MAX) {
        log_warn("bkrpc", "frame of %u bytes refused (max %u)", frame_len, BKRPC_FRAME_MAX);
        return QE_TOO_LARGE;
    }
    if (frame_len < 4 || hlen == 0 || hlen > BKRPC_HEADER_MAX || hlen > frame_len - 4) {
        log_warn("bkrpc", "inconsistent frame: frame_len %u header_len %u", frame_len, hlen);
        return QE_CORRUPT;
    }
    *header_len = hlen;
    *body_len = frame_len - 4 - hlen;
    return 0;
}

static void reader_emit(bkrpc_reader_t *r, bkrpc_frame_t *out, qbuf_t *body, size_t consume)
{
    out->header = r->buf + r->start + BKRPC_PREFIX;
    out->header_len = get_be32(r->buf + r->start + 4);
    out->body = body;
    r->consume = consume;
}

/* BODY state: hands out the frame once its body is complete. */
static int reader_next_body(bkrpc_reader_t *r, bkrpc_frame_t *out)
{
    if (r->body->len < r->body_len)
        return 0;
    assert(r->end == r->start + BKRPC_PREFIX + r->header_len);
    qbuf_t *body = r->body;
    r->body = NULL;
    r->in_body = false;
    reader_emit(r, out, body, BKRPC_PREFIX + r->header_len);
    return 1;
}

int bkrpc_reader_next(bkrpc_reader_t *r, bkrpc_frame_t *out)
{
    if (r->in_body)
        return reader_next_body(r, out);
    reader_drop_consumed(r);
    size_t avail = r->end - r->start;
    if (avail < BKRPC_PREFIX)
        return 0;
    uint32_t hlen, blen;
    int rc = reader_check_prefix(r->buf + r->start, &hlen, &blen);
    if (rc < 0)
        return rc;
    size_t head = BKRPC_PREFIX + hlen;
    if (avail < head)
        return 0;
    if (blen == 0) {
        reader_emit(r, out, NULL, head);
        return 1;
    }
    const uint8_t *body_bytes = r->buf + r->start + head;
    if (avail >= head + blen) { /* small body, already here: one copy */
        qbuf_t *body = qbuf_copy(body_bytes, blen);
        if (!body)
            return -ENOMEM;
        reader_emit(r, out, body, head + blen);
        return 1;
    }
    r->body = qbuf_new(blen);
    if (!r->body)
        return -ENOMEM;
    memcpy(r->body->data, body_bytes, avail - head);
    r->body->len = (uint32_t)(avail - head);
    r->end = r->start + head;
    r->header_len = hlen;
    r->body_len = blen;
    r->in_body = true;
    return 0;
}

/* ---------------------------------------------------------------- decode -- */

static bool request_has_op(const Quire__Bookie__Request *q)
{
    switch (q->op) {
    case QUIRE__BOOKIE__OP_TYPE__ADD:
        return q->add != NULL;
    case QUIRE__BOOKIE__OP_TYPE__READ:
        return q->read != NULL;
    case QUIRE__BOOKIE__OP_TYPE__READ_LAC:
        return q->read_lac != NULL;
    case QUIRE__BOOKIE__OP_TYPE__FENCE:
        return q->fence != NULL;
    case QUIRE__BOOKIE__OP_TYPE__LAST_ENTRY:
        return q->last_entry != NULL;
    case QUIRE__BOOKIE__OP_TYPE__DELETE_LEDGER:
        return q->delete_ledger != NULL;
    default:
        return false;
    }
}

int bkrpc_decode_request(const bkrpc_frame_t *f, Quire__Bookie__Request **out)
{
    Quire__Bookie__Request *q = quire__bookie__request__unpack(NULL, f->header_len, f->header);
    if (!q) {
        log_warn("bkrpc", "request header of %u bytes does not decode", f->header_len);
        return QE_CORRUPT;
    }
    bool body_ok = f->body == NULL || q->op == QUIRE__BOOKIE__OP_TYPE__ADD;
    if (!request_has_op(q) || !body_ok) {
        log_warn("bkrpc", "malformed request: op %d, body %s", (int)q->op,
                 f->body ? "present" : "absent");
        quire__bookie__request__free_unpacked(q, NULL);
        return QE_CORRUPT;
    }
    *out = q;
    return 0;
}

int bkrpc_decode_response(const bkrpc_frame_t *f, Quire__Bookie__Response **out)
{
    Quire__Bookie__Response *p = quire__bookie__response__unpack(NULL, f->header_len, f->header);
    if (!p) {
        log_warn("bkrpc", "response header of %u bytes does not decode", f->header_len);
        return QE_CORRUPT;
    }
    bool op_ok =
        p->op >= QUIRE__BOOKIE__OP_TYPE__ADD && p->op <= QUIRE__BOOKIE__OP_TYPE__DELETE_LEDGER;
    bool status_ok =
        p->status >= QUIRE__BOOKIE__STATUS__OK && p->status <= QUIRE__BOOKIE__STATUS__ERROR;
    bool body_ok = f->body == NULL || (p->op == QUIRE__BOOKIE__OP_TYPE__READ &&
                                       p->status == QUIRE__BOOKIE__STATUS__OK);
    if (!op_ok || !status_ok || !body_ok) {
        log_warn("bkrpc", "malformed response: op %d status %d", (int)p->op, (int)p->status);
        quire__bookie__response__free_unpacked(p, NULL);
        return QE_CORRUPT;
    }
    *out = p;
    return 0;
}

/* ---------------------------------------------------------------- writer -- */

int bkrpc_encode(const ProtobufCMessage *hdr, qbuf_t *body, bkrpc_out_t **out)
{
    size_t hlen = protobuf_c_message_get_packed_size(hdr);
    size_t blen = body ? body->len : 0;
    if (hlen == 0 || hlen > BKRPC_HEADER_MAX || blen > BKRPC_BODY_MAX) {
        log_warn("bkrpc", "cannot encode: header %zu bytes, body %zu bytes", hlen, blen);
        return QE_TOO_LARGE;
    }
    bkrpc_out_t *m = malloc(sizeof *m + BKRPC_PREFIX + hlen);
    if (!m)
        return -ENOMEM;
    put_be32(m->head, (uint32_t)(4 + hlen + blen));
    put_be32(m->head + 4, (uint32_t)hlen);
    size_t packed = protobuf_c_message_pack(hdr, m->head + BKRPC_PREFIX);
    assert(packed == hlen);
    (void)packed;
    m->next = NULL;
    m->body = blen ? qbuf_ref(body) : NULL;
    m->head_len = (uint32_t)(BKRPC_PREFIX + hlen);
    m->sent = 0;
    *out = m;
    return 0;
}

void bkrpc_out_free(bkrpc_out_t *m)
{
    if (!m)
        return;
    qbuf_unref(m->body);
    free(m);
}

void bkrpc_outq_push(bkrpc_outq_t *q, bkrpc_out_t *m)
{
    m->next = NULL;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    q->count++;
    q->bytes += bkrpc_out_size(m);
}

/* Fills iov from the queue's unsent bytes, at most room of them; returns the
 * count. */
static int outq_fill_iov(const bkrpc_outq_t *q, struct iovec *iov, size_t room)
{
    int n = 0;
    for (const bkrpc_out_t *m = q->head; m && n + 2 <= BKRPC_IOV_MAX; m = m->next) {
        size_t off = m->sent;
        if (off < m->head_len) {
            iov[n].iov_base = (void *)(m->head + off);
            iov[n++].iov_len = m->head_len - off;
            off = m->head_len;
        }
        size_t blen = m->body ? m->body->len : 0;
        if (off - m->head_len < blen) {
            iov[n].iov_base = m->body->data + (off - m->head_len);
            iov[n++].iov_len = blen - (off - m->head_len);
        }
    }
    for (int i = 0; i < n; i++) { /* cut at room */
        if (iov[i].iov_len >= room) {
            iov[i].iov_len = room;
            return i + 1;
        }
        room -= iov[i].iov_len;
    }
    return n;
}

/* Marks n bytes written, freeing the frames written whole. */
static void outq_advance(bkrpc_outq_t *q, size_t n)
{
    assert(n <= q->bytes);
    q->bytes -= n;
    while (n > 0) {
        bkrpc_out_t *m = q->head;
        assert(m);
        size_t left = bkrpc_out_size(m) - m->sent;
        if (n < left) {
            m->sent += n;
            return;
        }
        n -= left;
        q->head = m->next;
        if (!q->head)
            q->tail = NULL;
        q->count--;
        bkrpc_out_free(m);
    }
}

int bkrpc_outq_write(bkrpc_outq_t *q, int fd)
{
    struct iovec iov[BKRPC_IOV_MAX];
    size_t written = 0;
    while (q->head) {
        if (written >= BKRPC_WRITE_SLICE_BYTES)
            return 1; /* the rest at the write watcher, after the loop's other events */
        int n = outq_fill_iov(q, iov, BKRPC_WRITE_SLICE_BYTES - written);
        assert(n > 0);
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 1;
            return -errno;
        }
        outq_advance(q, (size_t)w);
        written += (size_t)w;
    }
    assert(q->bytes == 0 && q->count == 0);
    return 0;
}

void bkrpc_outq_clear(bkrpc_outq_t *q)
{
    bkrpc_out_t *m = q->head;
    while (m) {
        bkrpc_out_t *next = m->next;
        bkrpc_out_free(m);
        m = next;
    }
    memset(q, 0, sizeof *q);
}

/* ---------------------------------------------------------------- status -- */

static const struct {
    int rc;
    Quire__Bookie__Status status;
} status_map[] = {
    {0, QUIRE__BOOKIE__STATUS__OK},
    {QE_NO_ENTRY, QUIRE__BOOKIE__STATUS__NO_ENTRY},
    {QE_NO_LEDGER, QUIRE__BOOKIE__STATUS__NO_LEDGER},
    {QE_FENCED, QUIRE__BOOKIE__STATUS__FENCED},
    {QE_CORRUPT, QUIRE__BOOKIE__STATUS__CORRUPT},
    {QE_BUSY, QUIRE__BOOKIE__STATUS__BUSY},
    {QE_UNAVAILABLE, QUIRE__BOOKIE__STATUS__UNAVAILABLE},
    {-EIO, QUIRE__BOOKIE__STATUS__IO_ERROR},
    {QE_INVALID, QUIRE__BOOKIE__STATUS__INVALID},
    {QE_TOO_LARGE, QUIRE__BOOKIE__STATUS__TOO_LARGE},
    {QE_TIMEOUT, QUIRE__BOOKIE__STATUS__TIMEOUT},
    {QE_SHUTDOWN, QUIRE__BOOKIE__STATUS__SHUTDOWN},
    {QE_READ_ONLY, QUIRE__BOOKIE__STATUS__READ_ONLY},
    {QE_CLOSED, QUIRE__BOOKIE__STATUS__CLOSED},
    {QE_NOT_FOUND, QUIRE__BOOKIE__STATUS__NOT_FOUND},
};

Quire__Bookie__Status bkrpc_status_from_rc(int rc)
{
    for (size_t i = 0; i < sizeof status_map / sizeof status_map[0]; i++)
        if (status_map[i].rc == rc)
            return status_map[i].status;
    if (rc < 0 && rc > QE_BASE)
        return QUIRE__BOOKIE__STATUS__IO_ERROR; /* any errno */
    return QUIRE__BOOKIE__STATUS__ERROR;
}

int bkrpc_status_to_rc(Quire__Bookie__Status status)
{
    for (size_t i = 0; i < sizeof status_map / sizeof status_map[0]; i++)
        if (status_map[i].status == status)
            return status_map[i].rc;
    return -EIO;
}
