/*
 * metadata.h — the metadata store: a versioned key/value tree shared by every
 * Quire process of a cluster (ZooKeeper's model).
 *
 * Keys are '/'-separated paths ("/ledgers/L00000000000000000042"); a key's
 * parent need not exist (missing parents are implied, as in Pulsar's
 * MetadataStore), and md_list() names the direct children of a path.
 *
 * Versions: a key created gets version 0; every put bumps it by one. A put or
 * delete with expected_version >= 0 succeeds only if the stored version equals
 * it (compare-and-set), else QE_BAD_VERSION; MD_VERSION_ANY skips the check;
 * MD_VERSION_NEW succeeds only if the key does not exist (else QE_EXISTS).
 *
 * Ephemeral keys belong to a session (md_session_t) and vanish when the session
 * ends: md_session_close(), process death (the embedded backend deletes them on
 * its next open), or a ZooKeeper session expiry.
 *
 * Watches fire once per change on the loop thread after the change is durable:
 * MD_WATCH_DATA for a key's create/update/delete, MD_WATCH_CHILDREN for a child
 * added or removed under a path. They stay until md_unwatch().
 *
 * Every call is asynchronous: it returns 0 once queued (or a negative code,
 * and then the callback is never called) and calls back on the store's loop
 * thread when the result is durable (embedded: committed to the SQLite file
 * with fsync; ZooKeeper: acknowledged by the quorum). Callbacks for calls made
 * from the loop thread arrive in the order the calls were made. Memory handed
 * to a callback is borrowed for the duration of the callback only.
 */
#ifndef QUIRE_STORAGE_METADATA_H
#define QUIRE_STORAGE_METADATA_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct md_store md_store_t;
typedef struct md_session md_session_t;
typedef struct md_watch md_watch_t;

#define MD_VERSION_ANY (-1)
#define MD_VERSION_NEW (-2)
#define MD_VALUE_MAX (4u << 20) /* bigger values are refused with QE_TOO_LARGE */

typedef struct md_stat {
    int64_t version;
    int64_t created_ms;  /* wall clock */
    int64_t modified_ms; /* wall clock */
    bool ephemeral;
} md_stat_t;

typedef void (*md_get_cb)(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg);
typedef void (*md_put_cb)(int rc, const md_stat_t *stat, void *arg);
typedef void (*md_done_cb)(int rc, void *arg);
/* children: names relative to the listed path, sorted bytewise. */
typedef void (*md_list_cb)(int rc, const char *const *children, size_t n, void *arg);

enum { MD_WATCH_DATA = 1, MD_WATCH_CHILDREN = 2 };
/* kind: MD_WATCH_DATA or MD_WATCH_CHILDREN; path: the key that changed (for
 * children, the parent path watched). */
typedef void (*md_watch_cb)(int kind, const char *path, void *arg);

/* Embedded backend: one SQLite file at `path` (created if missing). Opening
 * deletes ephemeral keys left by an earlier process. Synchronous; call at start. */
int md_store_open_embedded(struct ev_loop *loop, const char *path, md_store_t **out);
/* Waits for every queued call to complete (callbacks run), then frees. */
void md_store_close(md_store_t *store);
/* Tests only: the next count puts of a path starting with prefix fail with
 * err (as a refusal: nothing written), e.g. -ENOSPC for a full disk. */
void md_store_test_fail_puts(md_store_t *store, const char *prefix, int count, int err);

int md_get(md_store_t *store, const char *path, md_get_cb cb, void *arg);
/* session: NULL for a persistent key, else the owner of an ephemeral one. */
int md_put(md_store_t *store, const char *path, const void *value, size_t len,
           int64_t expected_version, md_session_t *session, md_put_cb cb, void *arg);
/* QE_NOT_FOUND if absent; QE_BAD_VERSION on a lost compare-and-set. */
int md_delete(md_store_t *store, const char *path, int64_t expected_version, md_done_cb cb,
              void *arg);
/* Deletes path and every key below it. */
int md_delete_recursive(md_store_t *store, const char *path, md_done_cb cb, void *arg);
int md_list(md_store_t *store, const char *path, md_list_cb cb, void *arg);

md_session_t *md_session_open(md_store_t *store);
/* Deletes the session's ephemeral keys (asynchronously) and frees the session. */
void md_session_close(md_session_t *session);

md_watch_t *md_watch(md_store_t *store, const char *path, int kind, md_watch_cb cb, void *arg);
void md_unwatch(md_watch_t *watch);

#endif
