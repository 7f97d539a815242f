/*
 * ledger.h — the ledger client: quorum-replicated, append-only ledgers on an
 * ensemble of bookies (BookKeeper's model).
 *
 * A ledger is written by exactly one writer. ledger_create() picks an ensemble
 * of E bookies and records the ledger's metadata (ensemble segments, quorums,
 * state) in the metadata store under /ledgers/<id>. Entry e goes to the write
 * set of Qw bookies starting at index e % E of the current ensemble (striping);
 * it is acknowledged to the caller once Qa of them have it durably AND every
 * earlier entry is acknowledged: add callbacks arrive strictly in entry order.
 *
 * Ensemble change: when a bookie of the write set fails or times out, the
 * writer replaces it by a bookie not in the ensemble, records a new segment
 * (first entry id -> ensemble) in the metadata with compare-and-set, and re-sends
 * to the new bookie every entry not yet acknowledged. An entry acknowledged is
 * never lost while fewer than Qa bookies of its write set are lost.
 *
 * Close writes state=CLOSED and last_entry_id into the metadata. Opening with
 * LEDGER_OPEN_RECOVER an unclosed ledger fences it on its bookies (the old
 * writer's next add fails with QE_FENCED, and it fails all its pending adds),
 * finds the last entry readable from Qa bookies, re-replicates entries that
 * reached fewer than Qw, and closes the ledger at that entry.
 *
 * Threads and memory: loop thread only, callbacks on it, never inline. Data
 * buffers given to ledger_add are referenced for as long as needed; buffers
 * given to read callbacks are borrowed.
 */
#ifndef QUIRE_STORAGE_LEDGER_H
#define QUIRE_STORAGE_LEDGER_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/ledger/bookie_client.h"
#include "storage/metadata/metadata.h"

typedef struct ledger_client ledger_client_t;
typedef struct ledger ledger_t;

typedef struct ledger_client_config {
    uint32_t add_timeout_ms;       /* a bookie that has not acked by then is replaced (5000) */
    uint32_t pending_adds_max;     /* per ledger; more gets QE_BUSY (10000) */
    uint32_t ensemble_changes_max; /* per ledger before adds fail QE_UNAVAILABLE (32) */
} ledger_client_config_t;

void ledger_client_config_defaults(ledger_client_config_t *cfg);

/* The client borrows md and the bookie handles added to it. */
int ledger_client_new(struct ev_loop *loop, md_store_t *md, const ledger_client_config_t *cfg,
                      ledger_client_t **out);
/* Makes a bookie available for new ensembles (and for reading ledgers whose
 * metadata names its id). The client borrows the handle. */
int ledger_client_add_bookie(ledger_client_t *lc, bk_client_t *bookie);
/* Stops choosing this bookie for new ensembles (it stays usable for reads). */
void ledger_client_mark_bookie_down(ledger_client_t *lc, const char *bookie_id);
void ledger_client_free(ledger_client_t *lc);

typedef struct ledger_quorum {
    int ensemble;     /* E */
    int write_quorum; /* Qw <= E */
    int ack_quorum;   /* Qa <= Qw */
} ledger_quorum_t;

/* The default quorum for a deployment with nbookies bookies: E=3, Qw=3, Qa=2
 * (BookKeeper's and Pulsar's cluster defaults: an entry survives the loss of
 * one bookie, and writes go on with one bookie of the ensemble down) when
 * there are 3 or more, else E=Qw=Qa=1 (standalone: one local bookie). The
 * broker's managedLedgerDefault{EnsembleSize,WriteQuorum,AckQuorum} keys,
 * when set, override it. */
void ledger_quorum_default(int nbookies, ledger_quorum_t *out);
/* Bookies added, not marked down and writable (bk_client_writable): the
 * largest E ledger_create accepts now. */
int ledger_client_bookies_available(const ledger_client_t *lc);

typedef void (*ledger_open_cb)(int rc, ledger_t *ledger, void *arg);
typedef void (*ledger_add_cb)(int rc, int64_t entry_id, void *arg);
/* entries[i] is entry first+i, borrowed. */
typedef void (*ledger_read_cb)(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg);
typedef void (*ledger_done_cb)(int rc, void *arg);

/* Creates a ledger open for writing. QE_INVALID for a quorum that does not
 * hold 1 <= Qa <= Qw <= E <= 16; QE_UNAVAILABLE (logged with both numbers) when
 * E is larger than the bookies available (ledger_client_bookies_available). */
int ledger_create(ledger_client_t *lc, const ledger_quorum_t *q, ledger_open_cb cb, void *arg);
/* Appends; entry ids are 0, 1, 2 ... Returns QE_FENCED / QE_READ_ONLY / QE_BUSY
 * at once when known, else reports through cb. After one failed add, every later
 * pending add fails too (the ledger is then unusable for writing). */
int ledger_add(ledger_t *l, qbuf_t *data, ledger_add_cb cb, void *arg);
/* Waits for pending adds, seals the ledger in metadata, frees the handle after cb. */
int ledger_close(ledger_t *l, ledger_done_cb cb, void *arg);

enum { LEDGER_OPEN_NO_RECOVERY = 0, LEDGER_OPEN_RECOVER = 1 };
int ledger_open(ledger_client_t *lc, int64_t ledger_id, int flags, ledger_open_cb cb, void *arg);
/* Frees a handle opened for reading (no effect on the ledger). */
void ledger_release(ledger_t *l);
/* A handle opened for reading a ledger that is not closed: its LAC (what the
 * bookies had seen confirmed: each add carries the LAC before it, and a writer
 * whose close failed never sends a later one) raised to lac, an entry the
 * caller knows was confirmed to its writer (the managed ledger that wrote
 * it), so that reads go up to it. No effect on a closed ledger, a writer, or
 * with a lower lac. */
void ledger_raise_lac(ledger_t *l, int64_t lac);

/* Reads first..last inclusive (at most LAC, or last_entry_id once closed). */
int ledger_read(ledger_t *l, int64_t first, int64_t last, ledger_read_cb cb, void *arg);
/* Deletes the ledger on its bookies and its metadata. */
int ledger_delete(ledger_client_t *lc, int64_t ledger_id, ledger_done_cb cb, void *arg);

int64_t ledger_id(const ledger_t *l);
/* Last entry id acknowledged to the writer (or, for a reader, known confirmed). */
int64_t ledger_last_add_confirmed(const ledger_t *l);
bool ledger_is_closed(const ledger_t *l);
uint64_t ledger_length_bytes(const ledger_t *l);

#endif
