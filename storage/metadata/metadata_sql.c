/*
 * metadata_sql.c — the worker side of the embedded metadata store: the SQLite
 * schema and the execution of one operation inside a batch's transaction.
 *
 * Everything here runs on the store's single worker thread (or on the loop
 * thread at open/close, when no worker job is in flight); it never calls a
 * user callback.
 *
 * Schema (one file; PRAGMA application_id = 0x51554952 "QUIR", user_version = 3):
 *
 *   table keys (WITHOUT ROWID: rows live in the primary key's B-tree)
 *   | column          | type    | meaning                                        |
 *   |-----------------|---------|------------------------------------------------|
 *   | path            | TEXT PK | the key, "/a/b" (no trailing '/', no "//")      |
 *   | parent          | TEXT    | the path above it; "/" for a top-level key      |
 *   | value           | BLOB    | the value (NULL for an implicit row)            |
 *   | version         | INTEGER | 0 at creation, +1 per put                       |
 *   | created_ms      | INTEGER | wall clock at creation                          |
 *   | modified_ms     | INTEGER | wall clock at the last put                      |
 *   | ephemeral_owner | INTEGER | session id of an ephemeral key, 0 otherwise     |
 *   | implicit        | INTEGER | 1: not a key, only the ancestor of some keys    |
 *
 *   index keys_ephemeral (ephemeral_owner) WHERE ephemeral_owner != 0
 *
 * md_list(p) reads the primary key's range of p's descendants, [p + "/",
 * p + "0") ('0' follows '/'), and skips the subtree below each child it
 * finds (by I1 the child's own row comes first); a child without children
 * costs one step of the scan. Format 2 kept an index on (parent, path) for
 * it, a second B-tree written by every insert and delete; without it the
 * worker needs about 40 % less CPU to create topics (format 3).
 *
 * Invariants (kept by every operation below, each inside one transaction):
 *   I1. Every row other than a top-level one has a row at its parent path
 *       (explicit or implicit), so in path order a child's row comes
 *       before its subtree (md_list), and a row with a descendant has a child.
 *   I2. An implicit row has at least one child row; the operation that
 *       removes its last child removes it too (and so on up the tree).
 *   I3. An implicit row is never reported as a key: md_get and md_delete see
 *       it as absent, md_put over it makes it explicit with version 0.
 *   I4. ephemeral_owner != 0 only on explicit rows.
 * The root "/" has no row; md_list("/") lists the top-level rows.
 */
#include "storage/metadata/metadata_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"

#define MD_APPLICATION_ID 0x51554952 /* "QUIR" */
#define MD_SCHEMA_VERSION 3

/* The columns of table keys (name given by the caller). Format 2 stores the
 * rows in the primary key's B-tree (WITHOUT ROWID); format 1 had a rowid
 * table beside an index on path, one B-tree more to write per row and one
 * more lookup per read. */
#define MD_KEYS_COLUMNS                                                                            \
    " (path TEXT PRIMARY KEY NOT NULL,"                                                            \
    " parent TEXT NOT NULL,"                                                                       \
    " value BLOB,"                                                                                 \
    " version INTEGER NOT NULL,"                                                                   \
    " created_ms INTEGER NOT NULL,"                                                                \
    " modified_ms INTEGER NOT NULL,"                                                               \
    " ephemeral_owner INTEGER NOT NULL DEFAULT 0,"                                                 \
    " implicit INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"

static const char md_schema_sql[] =
    "CREATE TABLE IF NOT EXISTS keys" MD_KEYS_COLUMNS
    "DROP INDEX IF EXISTS keys_parent;" /* format 2's */
    "CREATE INDEX IF NOT EXISTS keys_ephemeral ON keys(ephemeral_owner)"
    " WHERE ephemeral_owner != 0;"
    "PRAGMA application_id = 1364543826;" /* MD_APPLICATION_ID */
    "PRAGMA user_version = 3;";

/* Format 1 -> 2, inside the opening transaction: the rows move to a WITHOUT
 * ROWID table (the old table's indexes go with it; md_schema_sql makes the
 * one format 3 keeps). Format 2 -> 3 is md_schema_sql's DROP INDEX. */
static const char md_upgrade_1_sql[] =
    "CREATE TABLE keys_v2" MD_KEYS_COLUMNS
    "INSERT INTO keys_v2 (path, parent, value, version, created_ms, modified_ms,"
    " ephemeral_owner, implicit) SELECT path, parent, value, version, created_ms,"
    " modified_ms, ephemeral_owner, implicit FROM keys;"
    "DROP TABLE keys;"
    "ALTER TABLE keys_v2 RENAME TO keys;";

/* ---------------------------------------------------------------- paths -- */

bool md_path_valid(const char *path, bool allow_root)
{
    if (!path || path[0] != '/')
        return false;
    size_t n = strnlen(path, MD_PATH_MAX + 1);
    if (n > MD_PATH_MAX)
        return false;
    if (n == 1)
        return allow_root;
    if (path[n - 1] == '/')
        return false;
    /* Every component non-empty, not "." or "..", no control characters. */
    const char *c = path + 1;
    while (*c) {
        const char *end = strchr(c, '/');
        size_t clen = end ? (size_t)(end - c) : strlen(c);
        if (clen == 0 || (clen == 1 && c[0] == '.') || (clen == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        for (size_t i = 0; i < clen; i++)
            if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
                return false;
        c += clen + (end ? 1 : 0);
    }
    return true;
}

void md_path_parent(const char *path, char *out)
{
    const char *slash = strrchr(path, '/');
    assert(slash != NULL && path[1] != '\0');
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* top-level key: parent is "/" */
    assert(n <= MD_PATH_MAX);
    memcpy(out, path, n);
    out[n] = '\0';
}

/* The range of the paths below path: [lo, hi). '0' follows '/', so every
 * descendant p + "/..." sorts before p + "0", and nothing else does. */
static void subtree_bounds(const char *path, char lo[MD_PATH_MAX + 2], char hi[MD_PATH_MAX + 2])
{
    if (strcmp(path, "/") == 0) {
        memcpy(lo, "/", 2);
        memcpy(hi, "0", 2);
        return;
    }
    snprintf(lo, MD_PATH_MAX + 2, "%s/", path);
    snprintf(hi, MD_PATH_MAX + 2, "%s0", path);
}

/* ------------------------------------------------------- SQLite helpers -- */

/* Maps a SQLite result code to ours and logs it (every SQLite failure is
 * unexpected: it is an I/O problem, a full disk or a damaged file). */
static int db_fail(md_db_t *d, int src, const char *what)
{
    int sys = sqlite3_system_errno(d->db);
    log_error("metadata", "%s: %s (sqlite %d, errno %d)", what, sqlite3_errmsg(d->db), src, sys);
    switch (src & 0xff) {
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return QE_CORRUPT;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return QE_BUSY;
    case SQLITE_TOOBIG:
        return QE_TOO_LARGE;
    case SQLITE_READONLY:
        return -EROFS;
    default:
        return sys > 0 ? -sys : -EIO;
    }
}

static void stmt_reset(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Steps a statement that returns no row; resets it. */
static int stmt_run(md_db_t *d, sqlite3_stmt *st, const char *what)
{
    int src = sqlite3_step(st);
    stmt_reset(st);
    return src == SQLITE_DONE ? 0 : db_fail(d, src, what);
}

static int db_exec(md_db_t *d, const char *sql)
{
    int src = sqlite3_exec(d->db, sql, NULL, NULL, NULL);
    return src == SQLITE_OK ? 0 : db_fail(d, src, sql);
}

/* Runs a PRAGMA that returns one row; copies its first column as text. */
static int db_pragma(md_db_t *d, const char *sql, char *out, size_t outlen)
{
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(d->db, sql, -1, &st, NULL);
    if (src != SQLITE_OK)
        return db_fail(d, src, sql);
    src = sqlite3_step(st);
    if (src != SQLITE_ROW) {
        int rc = db_fail(d, src, sql);
        sqlite3_finalize(st);
        return rc;
    }
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, outlen, "%s", t ? (const char *)t : "");
    sqlite3_finalize(st);
    return 0;
}

/* ------------------------------------------------------------ row access -- */

typedef struct {
    bool found;
    bool implicit;
    int64_t version, created_ms, modified_ms, owner;
} md_row_t;

/* Reads the row at path. With value != NULL also copies the value (owned by
 * the caller; NULL when empty). */
static int row_read(md_db_t *d, const char *path, md_row_t *r, void **value, size_t *len)
{
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st = d->get;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    int rc = 0;
    if (src == SQLITE_ROW) {
        r->found = true;
        r->version = sqlite3_column_int64(st, 1);
        r->created_ms = sqlite3_column_int64(st, 2);
        r->modified_ms = sqlite3_column_int64(st, 3);
        r->owner = sqlite3_column_int64(st, 4);
        r->implicit = sqlite3_column_int(st, 5) != 0;
        if (value) {
            int n = sqlite3_column_bytes(st, 0);
            const void *b = sqlite3_column_blob(st, 0);
            *value = NULL;
            *len = 0;
            if (n > 0) {
                *value = malloc((size_t)n);
                if (!*value)
                    rc = -ENOMEM;
                else
                    memcpy(*value, b, (size_t)n);
                *len = rc ? 0 : (size_t)n;
            }
        }
    } else if (src != SQLITE_DONE) {
        rc = db_fail(d, src, "read key");
    }
    stmt_reset(st);
    return rc;
}

static int row_has_child(md_db_t *d, const char *path, bool *has)
{
    char lo[MD_PATH_MAX + 2], hi[MD_PATH_MAX + 2];
    subtree_bounds(path, lo, hi); /* a descendant means a child (I1) */
    sqlite3_stmt *st = d->has_child;
    sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
    int src = sqlite3_step(st);
    *has = src == SQLITE_ROW;
    stmt_reset(st);
    return (src == SQLITE_ROW || src == SQLITE_DONE) ? 0 : db_fail(d, src, "look for children");
}

/* ------------------------------------------------------ known rows -- */

static size_t known_slot(const char *path)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        h = (h ^ *c) * 16777619u;
    return h % MD_KNOWN_SLOTS;
}

static bool known_has(const md_db_t *d, const char *path)
{
    const char *k = d->known[known_slot(path)];
    return k && strcmp(k, path) == 0;
}

/* Records that a row exists at path (a failed copy only forgets). */
static void known_add(md_db_t *d, const char *path)
{
    char **slot = &d->known[known_slot(path)];
    if (*slot && strcmp(*slot, path) == 0)
        return;
    if (*slot)
        d->n_known--;
    free(*slot);
    *slot = strdup(path);
    d->n_known += *slot != NULL;
}

static void known_clear(md_db_t *d)
{
    for (size_t i = 0; d->n_known && i < MD_KNOWN_SLOTS; i++)
        if (d->known[i]) {
            free(d->known[i]);
            d->known[i] = NULL;
            d->n_known--;
        }
}

static int row_delete(md_db_t *d, const char *path)
{
    known_clear(d);
    sqlite3_bind_text(d->del, 1, path, -1, SQLITE_STATIC);
    return stmt_run(d, d->del, "delete key");
}

/* ---------------------------------------------------------------- events -- */

/* Records that (kind, path) changed, if someone watches it and it is not
 * already recorded for this operation. */
static int event_add(md_db_t *d, md_op_t *op, int kind, const char *path)
{
    if (!d->filter || !md_filter_has(d->filter, kind, path))
        return 0;
    for (size_t i = 0; i < op->n_events; i++)
        if (op->events[i].kind == kind && strcmp(op->events[i].path, path) == 0)
            return 0;
    if (op->n_events == op->cap_events) {
        size_t cap = op->cap_events ? op->cap_events * 2 : 4;
        md_event_t *e = realloc(op->events, cap * sizeof *e);
        if (!e)
            return -ENOMEM;
        op->events = e;
        op->cap_events = cap;
    }
    char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    op->events[op->n_events++] = (md_event_t){.kind = kind, .path = copy};
    return 0;
}

static void events_drop(md_op_t *op)
{
    for (size_t i = 0; i < op->n_events; i++)
        free(op->events[i].path);
    free(op->events);
    op->events = NULL;
    op->n_events = op->cap_events = 0;
}

/* -------------------------------------------------------- tree upkeep -- */

/* Makes sure every ancestor of a new row at child (whose parent is p) has a
 * row (I1), inserting implicit ones as needed, from p upwards: the first one
 * found (remembered in d->known, or read) ends the walk, as every row above
 * it has one too (I1 again). */
static int tree_add_ancestors(md_db_t *d, md_op_t *op, const char *p, int64_t now)
{
    char cur[MD_PATH_MAX + 1], up[MD_PATH_MAX + 1];
    snprintf(cur, sizeof cur, "%s", p);
    while (strcmp(cur, "/") != 0) {
        if (known_has(d, cur))
            return 0;
        /* A read first: an "INSERT OR IGNORE" refused by the primary key
         * costs more. */
        sqlite3_bind_text(d->exists, 1, cur, -1, SQLITE_STATIC);
        int src = sqlite3_step(d->exists);
        stmt_reset(d->exists);
        if (src == SQLITE_ROW) {
            known_add(d, cur);
            return 0;
        }
        if (src != SQLITE_DONE)
            return db_fail(d, src, "look for a parent");
        md_path_parent(cur, up);
        sqlite3_stmt *st = d->insert_implicit;
        sqlite3_bind_text(st, 1, cur, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, up, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        int rc = stmt_run(d, st, "insert implicit key");
        if (!rc)
            known_add(d, cur);
        if (rc || sqlite3_changes(d->db) == 0)
            return rc;
        rc = event_add(d, op, MD_WATCH_CHILDREN, up);
        if (rc)
            return rc;
        memcpy(cur, up, sizeof cur);
    }
    return 0;
}

/* Removes implicit rows left without children, from p upwards (I2). */
static int tree_drop_ancestors(md_db_t *d, md_op_t *op, const char *p)
{
    char cur[MD_PATH_MAX + 1], up[MD_PATH_MAX + 1];
    snprintf(cur, sizeof cur, "%s", p);
    while (strcmp(cur, "/") != 0) {
        md_row_t r;
        bool has = false;
        int rc = row_read(d, cur, &r, NULL, NULL);
        if (!rc && r.found && r.implicit)
            rc = row_has_child(d, cur, &has);
        if (rc || !r.found || !r.implicit || has)
            return rc;
        md_path_parent(cur, up);
        rc = row_delete(d, cur);
        if (!rc)
            rc = event_add(d, op, MD_WATCH_CHILDREN, up);
        if (rc)
            return rc;
        memcpy(cur, up, sizeof cur);
    }
    return 0;
}

/* Deletes the childless row at path and tidies the ancestors. */
static int tree_delete_leaf(md_db_t *d, md_op_t *op, const char *path, bool was_key)
{
    char parent[MD_PATH_MAX + 1];
    md_path_parent(path, parent);
    int rc = row_delete(d, path);
    if (!rc && was_key)
        rc = event_add(d, op, MD_WATCH_DATA, path);
    if (!rc)
        rc = event_add(d, op, MD_WATCH_CHILDREN, parent);
    if (!rc)
        rc = tree_drop_ancestors(d, op, parent);
    return rc;
}

/* An ephemeral key whose owner is gone: deleted, or kept as an implicit row
 * when keys were created below it (their listing must not change). */
static int tree_drop_ephemeral(md_db_t *d, md_op_t *op, const char *path)
{
    bool has = false;
    int rc = row_has_child(d, path, &has);
    if (rc)
        return rc;
    if (!has)
        return tree_delete_leaf(d, op, path, true);
    sqlite3_bind_text(d->make_implicit, 1, path, -1, SQLITE_STATIC);
    rc = stmt_run(d, d->make_implicit, "make key implicit");
    return rc ? rc : event_add(d, op, MD_WATCH_DATA, path);
}

/* Drops every ephemeral key of session_id (0: of any session). One at a time,
 * re-querying, so no list of paths is held in memory. */
static int tree_drop_session(md_db_t *d, md_op_t *op, int64_t session_id)
{
    sqlite3_stmt *st = session_id ? d->ephemeral_of : d->ephemeral_any;
    char path[MD_PATH_MAX + 1];
    for (;;) {
        if (session_id)
            sqlite3_bind_int64(st, 1, session_id);
        int src = sqlite3_step(st);
        if (src == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            snprintf(path, sizeof path, "%s", t ? (const char *)t : "");
        }
        stmt_reset(st);
        if (src == SQLITE_DONE)
            return 0;
        if (src != SQLITE_ROW)
            return db_fail(d, src, "find ephemeral keys");
        int rc = tree_drop_ephemeral(d, op, path);
        if (rc)
            return rc;
    }
}

/* ------------------------------------------------------------ operations -- */

static int exec_get(md_db_t *d, md_op_t *op)
{
    md_row_t r;
    int rc = row_read(d, op->path, &r, &op->out_value, &op->out_len);
    if (rc)
        return rc;
    if (!r.found || r.implicit)
        return QE_NOT_FOUND;
    op->stat = (md_stat_t){r.version, r.created_ms, r.modified_ms, r.owner != 0};
    return 0;
}

static int exec_put_update(md_db_t *d, md_op_t *op, const md_row_t *r, int64_t now)
{
    if (op->expected_version == MD_VERSION_NEW)
        return QE_EXISTS;
    if (op->expected_version >= 0 && op->expected_version != r->version)
        return QE_BAD_VERSION;
    sqlite3_stmt *st = d->update;
    sqlite3_bind_text(st, 1, op->path, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 2, op->value ? op->value : "", op->len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, r->version + 1);
    sqlite3_bind_int64(st, 4, now);
    int rc = stmt_run(d, st, "update key");
    if (rc)
        return rc;
    op->stat = (md_stat_t){r->version + 1, r->created_ms, now, r->owner != 0};
    return event_add(d, op, MD_WATCH_DATA, op->path);
}

/* Inserts op's key (no row at its path) and any missing ancestors. With
 * exists != NULL a row already there is not an error: *exists is set and
 * nothing is written (the primary key refuses the insert first). */
static int key_insert(md_db_t *d, md_op_t *op, int64_t now, bool *exists)
{
    char parent[MD_PATH_MAX + 1];
    md_path_parent(op->path, parent);
    sqlite3_stmt *st = d->insert;
    sqlite3_bind_text(st, 1, op->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, parent, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(st, 3, op->value ? op->value : "", op->len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, now);
    sqlite3_bind_int64(st, 5, op->session_id);
    sqlite3_bind_int(st, 6, 0);
    int src = sqlite3_step(st);
    int ext = sqlite3_extended_errcode(d->db);
    stmt_reset(st);
    if (exists && (src & 0xff) == SQLITE_CONSTRAINT && ext == SQLITE_CONSTRAINT_PRIMARYKEY) {
        *exists = true;
        return 0;
    }
    if (src != SQLITE_DONE)
        return db_fail(d, src, "insert key");
    int rc = event_add(d, op, MD_WATCH_CHILDREN, parent);
    return rc ? rc : tree_add_ancestors(d, op, parent, now);
}

/* Creates op's key over nothing (r not found) or over an implicit row. With
 * exists != NULL (a create-only put that did not read first) a row already
 * there sets *exists and changes nothing. */
static int exec_put_create(md_db_t *d, md_op_t *op, const md_row_t *r, int64_t now, bool *exists)
{
    if (op->expected_version >= 0)
        return QE_BAD_VERSION; /* a compare-and-set against a key that is not there */
    int rc;
    if (r->found) { /* implicit row: it becomes the key */
        sqlite3_stmt *st = d->make_explicit;
        sqlite3_bind_text(st, 1, op->path, -1, SQLITE_STATIC);
        sqlite3_bind_blob64(st, 2, op->value ? op->value : "", op->len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        sqlite3_bind_int64(st, 4, op->session_id);
        rc = stmt_run(d, st, "create key over implicit row");
    } else {
        rc = key_insert(d, op, now, exists);
    }
    if (rc || (exists && *exists))
        return rc;
    op->stat = (md_stat_t){0, now, now, op->session_id != 0};
    return event_add(d, op, MD_WATCH_DATA, op->path);
}

static int exec_put(md_db_t *d, md_op_t *op)
{
    int64_t now = clock_wall_ms();
    if (op->expected_version == MD_VERSION_NEW) { /* insert first; read only if refused */
        bool exists = false;
        int rc = exec_put_create(d, op, &(md_row_t){0}, now, &exists);
        if (rc || !exists)
            return rc;
    }
    md_row_t r;
    int rc = row_read(d, op->path, &r, NULL, NULL);
    if (rc)
        return rc;
    if (r.found && !r.implicit)
        return exec_put_update(d, op, &r, now);
    return exec_put_create(d, op, &r, now, NULL);
}

static int exec_delete(md_db_t *d, md_op_t *op)
{
    md_row_t r;
    bool has = false;
    int rc = row_read(d, op->path, &r, NULL, NULL);
    if (rc)
        return rc;
    if (!r.found || r.implicit)
        return QE_NOT_FOUND;
    if (op->expected_version >= 0 && op->expected_version != r.version)
        return QE_BAD_VERSION;
    rc = row_has_child(d, op->path, &has);
    if (rc)
        return rc;
    if (has)
        return QE_NOT_EMPTY;
    return tree_delete_leaf(d, op, op->path, true);
}

/* Records the events of the rows below op->path that are about to go. */
static int subtree_events(md_db_t *d, md_op_t *op, const char *lo, const char *hi)
{
    sqlite3_stmt *st = d->subtree;
    sqlite3_bind_text(st, 1, lo, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
    int src, rc = 0;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(st, 0);
        const char *parent = (const char *)sqlite3_column_text(st, 1);
        if (!path || !parent)
            continue;
        if (sqlite3_column_int(st, 2) == 0)
            rc = event_add(d, op, MD_WATCH_DATA, path);
        if (!rc)
            rc = event_add(d, op, MD_WATCH_CHILDREN, parent);
    }
    stmt_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = db_fail(d, src, "scan subtree");
    return rc;
}

static int exec_delete_recursive(md_db_t *d, md_op_t *op)
{
    char lo[MD_PATH_MAX + 2], hi[MD_PATH_MAX + 2];
    subtree_bounds(op->path, lo, hi);
    int rc = subtree_events(d, op, lo, hi);
    if (rc)
        return rc;
    known_clear(d);
    sqlite3_bind_text(d->del_subtree, 1, lo, -1, SQLITE_STATIC);
    sqlite3_bind_text(d->del_subtree, 2, hi, -1, SQLITE_STATIC);
    rc = stmt_run(d, d->del_subtree, "delete subtree");
    md_row_t r;
    if (!rc)
        rc = row_read(d, op->path, &r, NULL, NULL);
    if (rc || !r.found)
        return rc; /* nothing there is not an error: the subtree is gone */
    return tree_delete_leaf(d, op, op->path, !r.implicit);
}

static int list_add(md_op_t *op, const char *name, size_t *cap)
{
    if (op->n_children == MD_LIST_MAX) {
        log_warn("metadata", "list %s: more than %u children", op->path, MD_LIST_MAX);
        return QE_TOO_LARGE;
    }
    if (op->n_children == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        char **c = realloc(op->children, ncap * sizeof *c);
        if (!c)
            return -ENOMEM;
        op->children = c;
        *cap = ncap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    op->children[op->n_children++] = copy;
    return 0;
}

/* The rows in [lo, hi) in path order: each child, then its subtree, which is
 * skipped by starting the scan again at child + "0". */
static int exec_list(md_db_t *d, md_op_t *op)
{
    char lo[MD_PATH_MAX + 2], hi[MD_PATH_MAX + 2], from[MD_PATH_MAX + 2];
    subtree_bounds(op->path, lo, hi);
    size_t prefix = strlen(lo), cap = 0;
    memcpy(from, lo, prefix + 1);
    sqlite3_stmt *st = d->list;
    sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hi, -1, SQLITE_STATIC);
    int src, rc = 0;
    while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(st, 0);
        if (!path || strlen(path) <= prefix)
            continue;
        const char *slash = strchr(path + prefix, '/');
        if (!slash) {
            rc = list_add(op, path + prefix, &cap);
            continue;
        }
        size_t child = (size_t)(slash - path); /* below a child already listed */
        if (child + 1 >= sizeof from)
            continue;
        memcpy(from, path, child);
        memcpy(from + child, "0", 2);
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC); /* its length changed */
    }
    stmt_reset(st);
    if (!rc && src != SQLITE_DONE)
        rc = db_fail(d, src, "list children");
    return rc;
}

int md_db_exec(md_db_t *d, md_op_t *op)
{
    /* Every refusal (QE_EXISTS, QE_BAD_VERSION, QE_NOT_FOUND, QE_NOT_EMPTY,
     * QE_TOO_LARGE) is decided before the operation's first write, so a refused
     * operation leaves no trace without a savepoint of its own (a savepoint
     * copied every page the operation touched into a statement journal; the
     * worker needed about twice the CPU to create topics with them). What
     * fails after a write (no memory, I/O) makes the whole transaction
     * unusable. */
    int64_t changes = sqlite3_total_changes64(d->db);
    int rc = 0;
    switch (op->kind) {
    case MD_OP_GET:
        rc = exec_get(d, op);
        break;
    case MD_OP_PUT:
        rc = op->test_rc ? op->test_rc : exec_put(d, op);
        break;
    case MD_OP_DELETE:
        rc = exec_delete(d, op);
        break;
    case MD_OP_DELETE_RECURSIVE:
        rc = exec_delete_recursive(d, op);
        break;
    case MD_OP_LIST:
        rc = exec_list(d, op);
        break;
    case MD_OP_SESSION_CLOSE:
        rc = tree_drop_session(d, op, op->session_id);
        break;
    }
    op->rc = rc;
    if (!rc)
        return 0;
    md_op_free_results(op);
    if (!sqlite3_get_autocommit(d->db) && sqlite3_total_changes64(d->db) == changes)
        return 0;
    return rc < 0 ? rc : -EIO; /* written in part, or SQLite ended the transaction */
}

void md_op_free_results(md_op_t *op)
{
    free(op->out_value);
    op->out_value = NULL;
    op->out_len = 0;
    for (size_t i = 0; i < op->n_children; i++)
        free(op->children[i]);
    free(op->children);
    op->children = NULL;
    op->n_children = 0;
    events_drop(op);
}

/* ---------------------------------------------------------- transactions -- */

int md_db_begin(md_db_t *d)
{
    return stmt_run(d, d->begin, "BEGIN IMMEDIATE");
}

int md_db_commit(md_db_t *d)
{
    return stmt_run(d, d->commit, "COMMIT");
}

void md_db_rollback(md_db_t *d)
{
    known_clear(d); /* rows this transaction inserted are gone */
    if (!sqlite3_get_autocommit(d->db))
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
}

/* -------------------------------------------------------- open and close -- */

static const struct {
    size_t offset;
    const char *sql;
} md_statements[] = {
    {offsetof(md_db_t, get), "SELECT value, version, created_ms, modified_ms, ephemeral_owner,"
                             " implicit FROM keys WHERE path = ?1"},
    {offsetof(md_db_t, exists), "SELECT 1 FROM keys WHERE path = ?1"},
    {offsetof(md_db_t, insert),
     "INSERT INTO keys (path, parent, value, version, created_ms, modified_ms,"
     " ephemeral_owner, implicit) VALUES (?1, ?2, ?3, 0, ?4, ?4, ?5, ?6)"},
    {offsetof(md_db_t, insert_implicit),
     "INSERT OR IGNORE INTO keys (path, parent, value, version, created_ms, modified_ms,"
     " ephemeral_owner, implicit) VALUES (?1, ?2, NULL, 0, ?3, ?3, 0, 1)"},
    {offsetof(md_db_t, update), "UPDATE keys SET value = ?2, version = ?3, modified_ms = ?4"
                                " WHERE path = ?1"},
    {offsetof(md_db_t, make_explicit),
     "UPDATE keys SET value = ?2, version = 0, created_ms = ?3, modified_ms = ?3,"
     " ephemeral_owner = ?4, implicit = 0 WHERE path = ?1"},
    {offsetof(md_db_t, make_implicit), "UPDATE keys SET value = NULL, ephemeral_owner = 0,"
                                       " implicit = 1 WHERE path = ?1"},
    {offsetof(md_db_t, has_child), "SELECT 1 FROM keys WHERE path >= ?1 AND path < ?2 LIMIT 1"},
    {offsetof(md_db_t, del), "DELETE FROM keys WHERE path = ?1"},
    {offsetof(md_db_t, list), "SELECT path FROM keys WHERE path >= ?1 AND path < ?2 ORDER BY path"},
    {offsetof(md_db_t, subtree),
     "SELECT path, parent, implicit FROM keys WHERE path >= ?1 AND path < ?2"},
    {offsetof(md_db_t, del_subtree), "DELETE FROM keys WHERE path >= ?1 AND path < ?2"},
    {offsetof(md_db_t, ephemeral_of), "SELECT path FROM keys WHERE ephemeral_owner = ?1 LIMIT 1"},
    {offsetof(md_db_t, ephemeral_any), "SELECT path FROM keys WHERE ephemeral_owner != 0 LIMIT 1"},
    {offsetof(md_db_t, begin), "BEGIN IMMEDIATE"},
    {offsetof(md_db_t, commit), "COMMIT"},
};

#define MD_N_STATEMENTS (sizeof md_statements / sizeof md_statements[0])

static sqlite3_stmt **stmt_slot(md_db_t *d, size_t i)
{
    return (sqlite3_stmt **)((char *)d + md_statements[i].offset);
}

static int db_prepare_all(md_db_t *d)
{
    for (size_t i = 0; i < MD_N_STATEMENTS; i++) {
        int src = sqlite3_prepare_v3(d->db, md_statements[i].sql, -1, SQLITE_PREPARE_PERSISTENT,
                                     stmt_slot(d, i), NULL);
        if (src != SQLITE_OK)
            return db_fail(d, src, md_statements[i].sql);
    }
    return 0;
}

/* Refuses a file that is an SQLite database but not ours, or of a newer
 * format; *format: its format, 0 for a new file. */
static int db_check_format(md_db_t *d, const char *path, long *format)
{
    char app[32], ver[32];
    int rc = db_pragma(d, "PRAGMA application_id", app, sizeof app);
    if (!rc)
        rc = db_pragma(d, "PRAGMA user_version", ver, sizeof ver);
    if (rc)
        return rc;
    long a = strtol(app, NULL, 10), v = strtol(ver, NULL, 10);
    if ((a != 0 && a != MD_APPLICATION_ID) || v > MD_SCHEMA_VERSION) {
        log_error("metadata",
                  "%s: not a Quire metadata store of a known format "
                  "(application_id %ld, user_version %ld)",
                  path, a, v);
        return QE_CORRUPT;
    }
    *format = v;
    return 0;
}

/* Makes the file's directory entry durable (a new database must survive a power
 * loss right after its first commit). */
static void db_sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync(fd) != 0)
            log_warn("metadata", "fsync of the directory of %s failed", path);
        close(fd);
    }
    free(copy);
}

static int db_setup(md_db_t *d, const char *path)
{
    char mode[16];
    /* EXCLUSIVE: one process per file (a second one fails to open: busy); it
     * also means no -shm file. */
    int rc = db_exec(d, "PRAGMA locking_mode = EXCLUSIVE");
    if (!rc)
        rc = db_pragma(d, "PRAGMA journal_mode = WAL", mode, sizeof mode);
    if (!rc && strcmp(mode, "wal") != 0) {
        log_error("metadata", "%s: cannot switch to WAL mode (got %s)", path, mode);
        rc = -EIO;
    }
    if (!rc)
        rc = db_exec(d, "PRAGMA synchronous = FULL");
    if (!rc)
        rc = db_pragma(d, "PRAGMA synchronous", mode, sizeof mode);
    if (!rc && strcmp(mode, "2") != 0) { /* 2 = FULL: every commit fsyncs the WAL */
        log_error("metadata", "%s: synchronous is %s, not FULL", path, mode);
        rc = -EIO;
    }
    long format = 0;
    if (!rc)
        rc = db_check_format(d, path, &format);
    if (!rc)
        rc = db_exec(d, "BEGIN IMMEDIATE");
    if (!rc && format == 1) {
        rc = db_exec(d, md_upgrade_1_sql);
        if (!rc)
            log_info("metadata", "%s: upgraded from format 1 to %d (rows stored by path)", path,
                     MD_SCHEMA_VERSION);
    }
    if (!rc)
        rc = db_exec(d, md_schema_sql);
    if (!rc && format == 2)
        log_info("metadata", "%s: upgraded from format 2 to %d (no index on parent)", path,
                 MD_SCHEMA_VERSION);
    if (rc)
        return rc;
    rc = db_prepare_all(d);
    if (!rc) {
        md_op_t cleanup = {.kind = MD_OP_SESSION_CLOSE};
        rc = tree_drop_session(d, &cleanup, 0); /* ephemeral keys of earlier processes */
    }
    if (!rc)
        rc = db_exec(d, "COMMIT");
    return rc;
}

/* SQLite's memory statistics take a global mutex around every allocation it
 * makes (~12 % of the worker's instructions, with the mutex calls, while
 * creating topics); nothing here reads them. Must precede SQLite's
 * initialisation: if something else initialised it first, this fails and
 * changes nothing. */
static void sqlite_configure(void)
{
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int md_db_open(md_db_t *d, const char *path)
{
    static pthread_once_t configured = PTHREAD_ONCE_INIT;
    pthread_once(&configured, sqlite_configure);
    memset(d, 0, sizeof *d);
    int src = sqlite3_open_v2(
        path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    int rc = 0;
    if (src != SQLITE_OK)
        rc = d->db ? db_fail(d, src, "open") : -ENOMEM;
    if (!rc)
        rc = db_setup(d, path);
    if (rc) {
        log_error("metadata", "cannot open the metadata store %s: %s%s", path, q_strerror(rc),
                  rc == QE_BUSY ? " (the file is in use by another process or store)" : "");
        md_db_rollback(d);
        md_db_close(d);
        return rc;
    }
    db_sync_dir(path);
    return 0;
}

void md_db_close(md_db_t *d)
{
    known_clear(d);
    if (d->db)
        for (size_t i = 0; i < MD_N_STATEMENTS; i++)
            sqlite3_finalize(*stmt_slot(d, i));
    if (d->db && sqlite3_close(d->db) != SQLITE_OK)
        log_error("metadata", "close: %s", sqlite3_errmsg(d->db));
    memset(d, 0, sizeof *d);
}
