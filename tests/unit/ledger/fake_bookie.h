/*
 * fake_bookie.h — an in-memory bookie behind bk_client_ops_t, for the ledger
 * client's tests, with fault injection (SQLite's test_vfs.c in spirit).
 *
 * Effects (store, fence, delete) happen when the call is made; answers are
 * queued in call order and delivered from an ev_timer after delay_ms (never
 * inline), so answers of one fake keep their order. Faults:
 *   fail(rc)            every call from now answers rc and changes nothing
 *   stall(on)           answers are held while on; turning it off delivers them
 *   partition_adds(on)  plain adds are neither applied nor answered (recovery
 *                       adds, fences, reads still work): a writer cut off
 *   lose(ledger, from)  forgets the ledger's entries >= from
 *   busy(n)             the next n plain adds return QE_BUSY (no callback)
 *   read_only(on)       plain adds answer QE_READ_ONLY and the handle reports
 *                       itself not writable (a bookie whose disk is full)
 * Held answers still pending at free are answered QE_CLOSED (bookie_client.h).
 * Every delivered add answer is appended to a process-wide log (bookie, entry,
 * rc) so tests can check the order in which acks arrived.
 */
#ifndef QUIRE_TESTS_FAKE_BOOKIE_H
#define QUIRE_TESTS_FAKE_BOOKIE_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ledger/bookie_client.h"

typedef struct fake_bookie fake_bookie_t;

fake_bookie_t *fake_bookie_new(struct ev_loop *loop, const char *id);
/* The handle to give to ledger_client_add_bookie (owned by the fake). */
bk_client_t *fake_bookie_client(fake_bookie_t *fb);
/* Answers held calls with QE_CLOSED, frees. */
void fake_bookie_free(fake_bookie_t *fb);

void fake_bookie_fail(fake_bookie_t *fb, int rc);
void fake_bookie_stall(fake_bookie_t *fb, bool on);
void fake_bookie_partition_adds(fake_bookie_t *fb, bool on);
void fake_bookie_set_delay_ms(fake_bookie_t *fb, uint32_t ms);
/* The next n plain adds are refused at once with QE_BUSY (back-pressure). */
void fake_bookie_busy(fake_bookie_t *fb, int n);
void fake_bookie_read_only(fake_bookie_t *fb, bool on);
void fake_bookie_lose(fake_bookie_t *fb, int64_t ledger_id, int64_t from_entry);

bool fake_bookie_has(fake_bookie_t *fb, int64_t ledger_id, int64_t entry_id);
/* Borrowed; NULL when absent. */
qbuf_t *fake_bookie_entry(fake_bookie_t *fb, int64_t ledger_id, int64_t entry_id);
size_t fake_bookie_count(fake_bookie_t *fb, int64_t ledger_id);
bool fake_bookie_fenced(fake_bookie_t *fb, int64_t ledger_id);
bool fake_bookie_knows(fake_bookie_t *fb, int64_t ledger_id);
uint64_t fake_bookie_adds_seen(fake_bookie_t *fb);

typedef struct fake_ack {
    const char *bookie;
    int64_t ledger_id;
    int64_t entry_id;
    int rc;
} fake_ack_t;

void fake_ack_log_reset(void);
size_t fake_ack_log_count(void);
const fake_ack_t *fake_ack_log_get(size_t i);

#endif
