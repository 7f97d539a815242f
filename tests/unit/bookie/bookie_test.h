/*
 * bookie_test.h — helpers shared by the bookie unit tests: deterministic
 * entry contents, synchronous wrappers (bounded waits on the loop) around the
 * asynchronous bookie calls, and a small test configuration.
 */
#ifndef QUIRE_TEST_BOOKIE_H
#define QUIRE_TEST_BOOKIE_H

#include <stdint.h>
#include <sys/types.h>

#include "storage/bookie/bookie.h"
#include "tests/unit/support/test_support.h"

#define BT_WAIT_S 10.0

extern struct ev_loop *bt_loop;

/* Bytes of entry (ledger, entry): a function of the pair only. */
void bt_fill(int64_t ledger_id, int64_t entry_id, uint8_t *p, size_t n);
qbuf_t *bt_entry(int64_t ledger_id, int64_t entry_id, size_t n);
/* True when b holds exactly the n bytes bt_fill gives. */
bool bt_check(int64_t ledger_id, int64_t entry_id, const qbuf_t *b, size_t n);

/* A small configuration for tests under dir. */
void bt_config(bookie_config_t *cfg, const char *dir);

/* What an asynchronous call's callback gave (bt_read_cb, bt_done_cb): a test
 * that keeps a call in flight waits for done with test_run_until. */
typedef struct bt_res {
    volatile bool done;
    int rc;
    int64_t value; /* the LAC a read gave */
    qbuf_t *buf;   /* a read's entry (a reference: the test unrefs) */
} bt_res_t;
void bt_read_cb(int rc, int64_t l, int64_t e, qbuf_t *entry, int64_t lac, void *arg);
void bt_done_cb(int rc, void *arg);

/* Synchronous wrappers: each returns the rc given to the callback (or the
 * call's own refusal), TEST_REQUIRE-ing that the callback came in time. */
int bt_add(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, size_t n);
/* *out gets a reference (caller unrefs) when rc == 0. */
int bt_read(bookie_t *bk, int64_t ledger_id, int64_t entry_id, qbuf_t **out, int64_t *lac);
int bt_fence(bookie_t *bk, int64_t ledger_id, int64_t *lac);
int bt_read_lac(bookie_t *bk, int64_t ledger_id, int64_t *lac);
int bt_last_entry(bookie_t *bk, int64_t ledger_id, int64_t *last);
int bt_delete(bookie_t *bk, int64_t ledger_id);
int bt_gc(bookie_t *bk);
/* Reads and compares against bt_fill: 0, or the read's rc, or QE_CORRUPT on a mismatch. */
int bt_verify(bookie_t *bk, int64_t ledger_id, int64_t entry_id, size_t n);
/* bt_add and bt_verify with the bytes bt_fill gives (fill_ledger, entry_id). */
int bt_add_as(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t lac, int64_t fill_ledger,
              size_t n);
int bt_verify_as(bookie_t *bk, int64_t ledger_id, int64_t entry_id, int64_t fill_ledger, size_t n);

/* bookie_open that TEST_REQUIREs success. */
bookie_t *bt_open(const bookie_config_t *cfg);
/* A fresh temporary directory (caller frees; test_rm_rf removes it). */
char *bt_dir(const char *tag);
/* Files in dir/sub ending with ext; the path of one of them into last_path. */
int bt_count_files(const char *dir, const char *sub, const char *ext, char *last_path, size_t n);
/* True when dir's file system takes an aligned O_DIRECT write. */
bool bt_fs_takes_odirect(const char *dir);
/* XORs the byte at off of path with 0x5a. */
void bt_flip_byte(const char *path, off_t off);

void bookie_direct_register(void);
void bookie_io_gate_register(void);
void bookie_crash_register(void);
void bookie_index_register(void);

#endif
