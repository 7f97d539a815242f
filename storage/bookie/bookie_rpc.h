/*
 * bookie_rpc.h — the codec of the bookie RPC (proto/bookie_rpc.proto): frames
 * in and out of a byte stream, with no socket and no bookie in sight, so the
 * server (bookie_server.c), the remote client (storage/ledger/
 * bookie_client_remote.c) and a fuzzer share one parser.
 *
 * Frame (every integer big-endian):
 *
 *   offset       size         meaning
 *   0            4            frame_len: bytes after this field = 4 + header_len + body_len
 *   4            4            header_len: 1 .. BKRPC_HEADER_MAX
 *   8            header_len   a packed Request (client -> bookie) or Response (bookie -> client)
 *   8+header_len body_len     raw entry body: Add request, Read response (OK); else empty
 *
 * frame_len is at most BKRPC_FRAME_MAX. A frame that breaks a bound or whose
 * lengths disagree is refused (QE_TOO_LARGE / QE_CORRUPT) and the connection
 * that sent it must be closed: after a bad length nothing on the stream can be
 * trusted.
 *
 * Reader state machine (resumes across partial reads, never trusts a length):
 *   PREFIX: waiting for 8 bytes + header_len bytes in the read buffer;
 *   BODY:   the header is complete and stays in the read buffer; the body is
 *           read straight into its own qbuf_t (one copy: kernel -> qbuf).
 * The caller asks bkrpc_reader_space() where to read() into, commits what it
 * got, then calls bkrpc_reader_next() until it returns 0.
 *
 * Writer: a bkrpc_out_t is one encoded frame: its 8-byte prefix and packed
 * header in one allocation, plus a reference on the body (never copied). An
 * out-queue writes frames with sendmsg(MSG_NOSIGNAL) and an iovec per piece.
 */
#ifndef QUIRE_STORAGE_BOOKIE_RPC_H
#define QUIRE_STORAGE_BOOKIE_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bookie_rpc.pb-c.h"
#include "common/buf.h"

#define BKRPC_PROTOCOL_VERSION 1u
#define BKRPC_HEADER_MAX (64u << 10)
#define BKRPC_BODY_MAX (5u << 20) /* Pulsar's default maxMessageSize */
#define BKRPC_FRAME_MAX (BKRPC_BODY_MAX + BKRPC_HEADER_MAX)
#define BKRPC_READ_BUF_BYTES (8u + BKRPC_HEADER_MAX + (64u << 10))

/* --------------------------------------------------------------- reader -- */

typedef struct bkrpc_reader {
    uint8_t *buf;        /* BKRPC_READ_BUF_BYTES, owned */
    size_t start;        /* first unconsumed byte */
    size_t end;          /* one past the last byte read */
    size_t consume;      /* bytes of the frame handed out last, dropped on the next call */
    bool in_body;        /* BODY state */
    uint32_t header_len; /* of the frame in progress (BODY state) */
    uint32_t body_len;
    qbuf_t *body; /* being filled in BODY state; owned until handed out */
} bkrpc_reader_t;

typedef struct bkrpc_frame {
    const uint8_t *header; /* borrowed: valid until the next bkrpc_reader_* call */
    uint32_t header_len;
    qbuf_t *body; /* NULL if empty; the caller owns this reference */
} bkrpc_frame_t;

/* Returns 0 or -ENOMEM. */
int bkrpc_reader_init(bkrpc_reader_t *r);
void bkrpc_reader_free(bkrpc_reader_t *r);
/* Where the next read() should put bytes (never 0 bytes long). */
void bkrpc_reader_space(bkrpc_reader_t *r, uint8_t **ptr, size_t *len);
/* n bytes were written at the place bkrpc_reader_space() gave. */
void bkrpc_reader_commit(bkrpc_reader_t *r, size_t n);
/* 1: *out holds a frame; 0: more bytes needed; QE_TOO_LARGE / QE_CORRUPT: the
 * stream is broken (close it); -ENOMEM. */
int bkrpc_reader_next(bkrpc_reader_t *r, bkrpc_frame_t *out);

/* Unpacks and validates a request frame: a known op with its sub-message, a
 * body only for ADD. Returns 0 (caller frees *out with
 * quire__bookie__request__free_unpacked), or QE_CORRUPT. A request of another
 * protocol version decodes (the server answers INVALID). */
int bkrpc_decode_request(const bkrpc_frame_t *f, Quire__Bookie__Request **out);
/* Same for a response: known op and status, a body only for an OK READ. */
int bkrpc_decode_response(const bkrpc_frame_t *f, Quire__Bookie__Response **out);

/* ---------------------------------------------------------------- writer -- */

typedef struct bkrpc_out {
    struct bkrpc_out *next;
    qbuf_t *body;      /* one reference, or NULL */
    uint32_t head_len; /* 8 + header_len */
    size_t sent;       /* bytes of head + body already written */
    uint8_t head[];    /* prefix + packed header */
} bkrpc_out_t;

/* Encodes hdr (a Request or Response) + body (referenced, may be NULL) into a
 * new frame owned by the caller. QE_TOO_LARGE past the bounds, -ENOMEM. */
int bkrpc_encode(const ProtobufCMessage *hdr, qbuf_t *body, bkrpc_out_t **out);
void bkrpc_out_free(bkrpc_out_t *m);
static inline size_t bkrpc_out_size(const bkrpc_out_t *m)
{
    return m->head_len + (m->body ? m->body->len : 0);
}

typedef struct bkrpc_outq {
    bkrpc_out_t *head, *tail;
    size_t count;
    size_t bytes; /* not yet written */
} bkrpc_outq_t;

/* Takes ownership of m. */
void bkrpc_outq_push(bkrpc_outq_t *q, bkrpc_out_t *m);
/* A call writes at most this much: a peer on the same machine reads as fast as
 * the loop writes, so the socket never fills, and one call with a catch-up's
 * megabytes of entries queued would hold every other connection of the loop. */
#define BKRPC_WRITE_SLICE_BYTES (512u << 10)
/* Writes what the socket takes, at most BKRPC_WRITE_SLICE_BYTES: 0 when the
 * queue is empty, 1 when bytes remain (the socket full or the slice written:
 * wait for EV_WRITE), -errno on a broken connection. */
int bkrpc_outq_write(bkrpc_outq_t *q, int fd);
/* Frees every queued frame. */
void bkrpc_outq_clear(bkrpc_outq_t *q);

/* ---------------------------------------------------------------- status -- */

/* QE_* / -errno -> wire status, and back (IO_ERROR and ERROR come back -EIO). */
Quire__Bookie__Status bkrpc_status_from_rc(int rc);
int bkrpc_status_to_rc(Quire__Bookie__Status status);

#endif
