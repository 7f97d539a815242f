/*
 * bookie_server.h — serves one in-process bookie (bookie.h) to ledger clients
 * over TCP with the bookie RPC (proto/bookie_rpc.proto, framing in
 * storage/bookie/bookie_rpc.h, docs/bookie-rpc.md).
 *
 * The server runs on the bookie's loop thread: every request becomes one
 * bookie_* call, and its completion one response frame carrying the request's
 * id. Responses go out in completion order (adds of a ledger complete in the
 * order they arrived, so their responses do too). A response with status OK
 * to an add means the entry is durable on this bookie (bookie.h).
 *
 * Bounds: at most BOOKIE_SERVER_CONNS_MAX connections (further ones are
 * accepted and closed at once). Per connection the server stops reading (a
 * client that does not read its responses stalls itself, not the bookie)
 * while any of these is reached, and resumes when it falls back:
 *   BOOKIE_SERVER_CONN_PENDING_MAX     requests inside the bookie;
 *   BOOKIE_SERVER_CONN_READS_MAX       reads inside the bookie (each may
 *                                      answer up to 5 MiB);
 *   BOOKIE_SERVER_CONN_ADD_BYTES_MAX   bytes of entries being added;
 *   BOOKIE_SERVER_CONN_OUT_BYTES_MAX   bytes of responses not yet written.
 * So a connection holds at most about ADD_BYTES_MAX + READS_MAX * 5 MiB +
 * OUT_BYTES_MAX + one frame. A frame that breaks the framing bounds or does
 * not decode closes that connection only.
 */
#ifndef QUIRE_STORAGE_BOOKIE_SERVER_H
#define QUIRE_STORAGE_BOOKIE_SERVER_H

#include <ev.h>

#include "storage/bookie/bookie.h"

#define BOOKIE_SERVER_CONNS_MAX 1024
#define BOOKIE_SERVER_CONN_PENDING_MAX 10000
#define BOOKIE_SERVER_CONN_READS_MAX 64
#define BOOKIE_SERVER_CONN_ADD_BYTES_MAX (64u << 20)
#define BOOKIE_SERVER_CONN_OUT_BYTES_MAX (32u << 20)

typedef struct bookie_server bookie_server_t;

/* Listens on host:port (port 0: the kernel picks a free one, see
 * bookie_server_port) and serves bk, which is borrowed and must stay open
 * until bookie_server_stop() returns. Synchronous: returns 0 once listening,
 * or a negative code (-EADDRINUSE, QE_INVALID for an unresolvable host, ...). */
int bookie_server_start(struct ev_loop *loop, bookie_t *bk, const char *host, int port,
                        bookie_server_t **out);
/* The port actually listened on. */
int bookie_server_port(const bookie_server_t *s);

typedef struct bookie_server_stats {
    uint64_t connections;         /* open now */
    uint64_t connections_paused;  /* open and not read, a bound being reached */
    uint64_t connections_total;   /* accepted since start */
    uint64_t connections_refused; /* over BOOKIE_SERVER_CONNS_MAX */
    uint64_t bad_frames;          /* connections closed for a bad frame */
    uint64_t requests;            /* requests decoded */
    uint64_t out_bytes;           /* response bytes queued, all connections */
} bookie_server_stats_t;
void bookie_server_get_stats(const bookie_server_t *s, bookie_server_stats_t *out);
/* Closes the listening socket and every connection, then frees the server.
 * Requests still inside the bookie complete later without an answer (their
 * connection is gone); close the bookie after this, never before. */
void bookie_server_stop(bookie_server_t *s);

#endif
