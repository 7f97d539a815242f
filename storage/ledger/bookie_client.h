/*
 * bookie_client.h — one handle per bookie for the ledger client, the same API
 * whether the bookie is in this process (standalone) or across TCP (cluster).
 *
 * Semantics are those of bookie.h: an add's callback with rc == 0 means the
 * bookie has the entry durably. A remote handle reconnects by itself; while it
 * cannot reach its bookie, and for any operation not answered within its
 * timeout, callbacks report QE_UNAVAILABLE or QE_TIMEOUT, and the ledger client
 * decides (ensemble change). Every call on the loop thread, every callback on it,
 * never inline. Callbacks of one handle arrive in the order the calls were made
 * for adds of one ledger.
 */
#ifndef QUIRE_STORAGE_BOOKIE_CLIENT_H
#define QUIRE_STORAGE_BOOKIE_CLIENT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/bookie/bookie.h"

typedef struct bk_client bk_client_t;

typedef void (*bk_add_cb)(int rc, void *arg);
typedef void (*bk_read_cb)(int rc, qbuf_t *entry, int64_t lac, void *arg); /* entry borrowed */
typedef void (*bk_lac_cb)(int rc, int64_t lac, void *arg);
typedef void (*bk_done_cb)(int rc, void *arg);

/* The operations behind a handle. Local and remote handles implement them; tests
 * implement them too (fault injection: a bookie that fails, stalls, or loses). */
typedef struct bk_client_ops {
    int (*add)(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac, qbuf_t *data,
               bk_add_cb cb, void *arg);
    int (*read)(bk_client_t *c, int64_t ledger_id, int64_t entry_id, bk_read_cb cb, void *arg);
    int (*read_lac)(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
    int (*fence)(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
    int (*last_entry)(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
    int (*delete_ledger)(bk_client_t *c, int64_t ledger_id, bk_done_cb cb, void *arg);
    void (*free)(bk_client_t *c);
    /* Optional (NULL if unsupported): an add that a FENCED ledger still accepts,
     * made only by ledger recovery to re-replicate an entry it found on some
     * bookies of the write set (BookKeeper's RECOVERY_ADD flag). Same contract
     * as add otherwise. Without it recovery uses add, which fenced bookies refuse. */
    int (*recovery_add)(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac,
                        qbuf_t *data, bk_add_cb cb, void *arg);
    /* Optional (NULL: always): whether the bookie is believed to take new
     * adds. The ledger client leaves bookies that do not out of new ensembles
     * and replacements (BookKeeper's read-only bookies). */
    bool (*writable)(bk_client_t *c);
} bk_client_ops_t;

/* Every handle starts with this header; implementations embed it first. */
struct bk_client {
    const bk_client_ops_t *ops;
    char id[64]; /* "host:port" or a local name; unique among a client's bookies */
};

/* A handle on an in-process bookie (borrowed: it must outlive the handle). */
bk_client_t *bk_client_local(bookie_t *bookie, const char *id);
/* A handle on the bookie server at "host:port"; connects lazily. */
bk_client_t *bk_client_remote(struct ev_loop *loop, const char *host_port, uint32_t timeout_ms);
/* Fails pending calls with QE_CLOSED (through their callbacks), frees. */
void bk_client_free(bk_client_t *c);
/* "host:port" or the id given to bk_client_local. */
const char *bk_client_id(const bk_client_t *c);

/* The calls below dispatch through c->ops. */
int bk_client_add(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac, qbuf_t *data,
                  bk_add_cb cb, void *arg);
/* ops->recovery_add when the handle has it, else a plain add (which a bookie
 * that fenced the ledger refuses with QE_FENCED). */
int bk_client_recovery_add(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac,
                           qbuf_t *data, bk_add_cb cb, void *arg);
int bk_client_read(bk_client_t *c, int64_t ledger_id, int64_t entry_id, bk_read_cb cb, void *arg);
int bk_client_read_lac(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
int bk_client_fence(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
int bk_client_last_entry(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg);
int bk_client_delete_ledger(bk_client_t *c, int64_t ledger_id, bk_done_cb cb, void *arg);
/* ops->writable when the handle has it, else true. */
bool bk_client_writable(bk_client_t *c);

#endif
