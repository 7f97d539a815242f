/*
 * metadata_int.h — private to storage/metadata/: the shapes shared by the
 * loop side of the embedded backend (metadata_embedded.c: queue, batches,
 * callbacks, watches) and its worker side (metadata_sql.c: SQLite schema and
 * the execution of one operation).
 *
 * Threads and ownership:
 *   - md_store_t fields marked [loop] are touched only on the loop thread.
 *   - An md_op_t belongs to the loop thread while it waits in the pending
 *     queue, to the worker thread while its batch executes, and to the loop
 *     thread again once the batch's done function runs (the qexec_t hand-off
 *     orders these accesses). Its result fields are written by the worker only.
 *   - The sqlite3 handle and its prepared statements are used by the single
 *     worker thread only (and by the loop thread at open and close, when no
 *     worker job is in flight).
 *   - The watch filter (md_filter_t) is the only state both threads touch at
 *     once; it has its own mutex.
 */
#ifndef QUIRE_STORAGE_METADATA_INT_H
#define QUIRE_STORAGE_METADATA_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/metadata/metadata.h"

#define MD_PATH_MAX 1024                 /* bytes of a key path, without the NUL */
#define MD_PENDING_MAX 100000u           /* queued calls; more get QE_BUSY */
#define MD_PENDING_BYTES_MAX (64u << 20) /* queued value bytes; more get QE_BUSY */
#define MD_BATCH_OPS_MAX 1024u           /* calls grouped into one transaction */
#define MD_BATCH_BYTES_MAX (8u << 20)    /* value bytes grouped into one transaction */
#define MD_LIST_MAX 1000000u             /* children one md_list may return */
#define MD_WATCH_MAX 100000u             /* watches registered on one store */
#define MD_FILTER_BUCKETS 1024u
#define MD_KNOWN_SLOTS 256u /* rows the worker knows exist (see md_db_t.known) */

typedef enum {
    MD_OP_GET = 1,
    MD_OP_PUT,
    MD_OP_DELETE,
    MD_OP_DELETE_RECURSIVE,
    MD_OP_LIST,
    MD_OP_SESSION_CLOSE,
} md_op_kind_t;

/* One change a watch may be told about (recorded by the worker only for the
 * (kind, path) pairs present in the filter). path is owned. */
typedef struct md_event {
    int kind;
    char *path;
} md_event_t;

/* --------------------------------------------------------- watch filter -- */

/* The set of watched (kind, path) pairs, with a count per pair, so that the
 * worker records only events somebody listens to (a recursive delete of a
 * large subtree then costs no memory per key). */
typedef struct md_filter_entry {
    struct md_filter_entry *next;
    int kind;
    unsigned count;
    char path[];
} md_filter_entry_t;

typedef struct md_filter {
    pthread_mutex_t lock;
    md_filter_entry_t *buckets[MD_FILTER_BUCKETS];
} md_filter_t;

void md_filter_init(md_filter_t *f);
void md_filter_destroy(md_filter_t *f);
/* Returns 0 or -ENOMEM. */
int md_filter_add(md_filter_t *f, int kind, const char *path);
void md_filter_remove(md_filter_t *f, int kind, const char *path);
bool md_filter_has(md_filter_t *f, int kind, const char *path);

/* ------------------------------------------------------------ operations -- */

typedef struct md_op {
    struct md_op *next;
    md_op_kind_t kind;
    uint64_t seq; /* position in the store's call order */
    char *path;   /* owned; NULL for MD_OP_SESSION_CLOSE */
    void *value;  /* owned copy of a put's value (NULL if len 0) */
    size_t len;
    int64_t expected_version;
    int64_t session_id; /* put: owner (0 = persistent); session close: which */
    union {
        md_get_cb get;
        md_put_cb put;
        md_done_cb done;
        md_list_cb list;
    } cb;
    void *arg;

    int test_rc; /* md_store_test_fail_puts: the worker fails the op with it */

    /* Results, written by the worker. */
    int rc;
    md_stat_t stat;
    void *out_value; /* get: owned copy of the value */
    size_t out_len;
    char **children; /* list: owned array of owned names */
    size_t n_children;
    md_event_t *events; /* owned array, n_events used of cap_events */
    size_t n_events, cap_events;
} md_op_t;

/* The worker's SQLite connection and its prepared statements. */
typedef struct md_db {
    sqlite3 *db;
    sqlite3_stmt *get;
    sqlite3_stmt *exists;
    sqlite3_stmt *insert;
    sqlite3_stmt *insert_implicit;
    sqlite3_stmt *update;
    sqlite3_stmt *make_explicit;
    sqlite3_stmt *make_implicit;
    sqlite3_stmt *has_child;
    sqlite3_stmt *del;
    sqlite3_stmt *list;
    sqlite3_stmt *subtree;
    sqlite3_stmt *del_subtree;
    sqlite3_stmt *ephemeral_of;
    sqlite3_stmt *ephemeral_any;
    /* per operation and per batch: prepared once (sqlite3_exec compiled them
     * every time, a quarter of the worker's time when creating topics) */
    sqlite3_stmt *begin, *commit;
    md_filter_t *filter; /* borrowed from the store; NULL: record no events */
    /* Paths of rows (explicit or implicit) known to exist, direct-mapped by
     * hash, each owned: a put below one of them needs no insert of implicit
     * ancestors (invariant I1 gives the rest of the way up). Emptied whenever
     * a row is deleted or a transaction rolled back. An "INSERT OR IGNORE" of
     * an existing parent was a quarter of the worker's time when creating
     * topics. */
    char *known[MD_KNOWN_SLOTS];
    size_t n_known;
} md_db_t;

/* Opens (creating if missing) the database at path, sets WAL + synchronous=FULL
 * + exclusive locking, creates the schema, deletes ephemeral keys left by an
 * earlier process. Logs and returns a negative code on any failure (nothing is
 * left open then). */
int md_db_open(md_db_t *d, const char *path);
void md_db_close(md_db_t *d);

/* Transactions around a batch. Return 0 or a negative code (logged). */
int md_db_begin(md_db_t *d);
int md_db_commit(md_db_t *d);
void md_db_rollback(md_db_t *d);

/* Executes one operation inside the open transaction; sets op->rc and the
 * result fields. A refused operation (a lost compare-and-set, a missing key...)
 * changes nothing and does not disturb the others: returns 0. Returns a
 * negative code when the transaction cannot be committed any more (the
 * operation failed after writing part of its change, or SQLite ended the
 * transaction after an I/O error): the batch must be rolled back as a whole. */
int md_db_exec(md_db_t *d, md_op_t *op);

/* Frees an operation's result fields (value, children, events). */
void md_op_free_results(md_op_t *op);

/* Transactions committed so far by store (loop thread; for tests and stats). */
uint64_t md_store_commits(const md_store_t *store);

/* Path helpers (pure). */
bool md_path_valid(const char *path, bool allow_root);
/* Writes the parent of path (a valid non-root key) into out[MD_PATH_MAX + 1]. */
void md_path_parent(const char *path, char *out);

#endif
