/*
 * metadata_embedded.c — the embedded backend of metadata.h: the loop side.
 *
 * Every call is checked on the loop thread, copied into an md_op_t (path and
 * value included, so the caller's memory is free again on return) and queued.
 * One batch at a time goes to a one-thread qexec_t: the worker runs the whole
 * batch in one SQLite transaction (a lost compare-and-set writes nothing, so it
 * fails alone; an operation failing half-written fails the batch) and commits
 * once with fsync — group commit: while a batch commits, later calls pile up
 * and form the next one.
 * The batch's done function runs on the loop: for each operation, in call
 * order, the watches its change concerns fire, then its callback.
 *
 * State machine of an operation:
 *
 *   call --checks--> PENDING --batch_take--> IN BATCH --commit--> DONE
 *          (refused: rc < 0,        (worker)            (loop: watches, callback,
 *           no callback)                                 then freed)
 *
 * Invariants:
 *   - At most one batch is in flight (store->batch_busy); ops of a batch were
 *     all queued before any op of a later batch, so callbacks come in call order.
 *   - outstanding_ops / outstanding_bytes count every op not yet freed; they are
 *     bounded by MD_PENDING_MAX / MD_PENDING_BYTES_MAX (QE_BUSY beyond).
 *   - While a batch is in flight the loop holds one ev_ref, so ev_run() does not
 *     return with work outstanding.
 *   - A watch fires only for operations called after md_watch() returned
 *     (op->seq >= watch->from_seq). An unwatched watch is never called again;
 *     while callbacks run (dispatching > 0) its memory is kept until they end.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/exec.h"
#include "common/log.h"
#include "storage/metadata/metadata_int.h"

struct md_session {
    md_store_t *store;
    md_session_t *prev, *next;
    int64_t id;
};

struct md_watch {
    md_store_t *store;
    md_watch_t *prev, *next;
    int kind;
    bool removed;
    uint64_t from_seq;
    md_watch_cb cb;
    void *arg;
    char path[];
};

struct md_store {
    struct ev_loop *loop;
    md_db_t db;    /* the worker's (see metadata_int.h) */
    qexec_t *exec; /* one thread */
    md_filter_t filter;

    /* [loop] */
    md_op_t *pending_head, *pending_tail;
    md_op_t *batch_head; /* handed to the worker while batch_busy */
    bool batch_busy;
    bool closing;
    int dispatching; /* depth of callbacks running from batch_finish */
    size_t outstanding_ops, outstanding_bytes;
    uint64_t commits; /* batches handed to the worker and finished */
    uint64_t next_seq;
    int64_t next_session_id;
    md_session_t *sessions;
    md_watch_t *watches_head, *watches_tail;
    size_t n_watches;
    char *test_fail_prefix; /* md_store_test_fail_puts */
    int test_fail_count, test_fail_err;
};

/* ---------------------------------------------------------- watch filter -- */

static unsigned filter_hash(int kind, const char *path)
{
    uint32_t h = 2166136261u ^ (uint32_t)kind; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % MD_FILTER_BUCKETS;
}

static md_filter_entry_t **filter_find(md_filter_t *f, int kind, const char *path)
{
    md_filter_entry_t **pe = &f->buckets[filter_hash(kind, path)];
    while (*pe && ((*pe)->kind != kind || strcmp((*pe)->path, path) != 0))
        pe = &(*pe)->next;
    return pe;
}

void md_filter_init(md_filter_t *f)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
}

void md_filter_destroy(md_filter_t *f)
{
    for (size_t i = 0; i < MD_FILTER_BUCKETS; i++) {
        md_filter_entry_t *e = f->buckets[i];
        while (e) {
            md_filter_entry_t *next = e->next;
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&f->lock);
}

int md_filter_add(md_filter_t *f, int kind, const char *path)
{
    pthread_mutex_lock(&f->lock);
    md_filter_entry_t **pe = filter_find(f, kind, path);
    int rc = 0;
    if (*pe) {
        (*pe)->count++;
    } else {
        size_t n = strlen(path) + 1;
        md_filter_entry_t *e = malloc(sizeof *e + n);
        if (e) {
            *e = (md_filter_entry_t){.next = NULL, .kind = kind, .count = 1};
            memcpy(e->path, path, n);
            *pe = e;
        } else {
            rc = -ENOMEM;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

void md_filter_remove(md_filter_t *f, int kind, const char *path)
{
    pthread_mutex_lock(&f->lock);
    md_filter_entry_t **pe = filter_find(f, kind, path);
    assert(*pe != NULL && (*pe)->count > 0);
    if (--(*pe)->count == 0) {
        md_filter_entry_t *e = *pe;
        *pe = e->next;
        free(e);
    }
    pthread_mutex_unlock(&f->lock);
}

bool md_filter_has(md_filter_t *f, int kind, const char *path)
{
    pthread_mutex_lock(&f->lock);
    bool has = *filter_find(f, kind, path) != NULL;
    pthread_mutex_unlock(&f->lock);
    return has;
}

/* --------------------------------------------------------------- batches -- */

static void batch_start(md_store_t *store);

static void op_free(md_store_t *store, md_op_t *op)
{
    assert(store->outstanding_ops > 0 && store->outstanding_bytes >= op->len);
    store->outstanding_ops--;
    store->outstanding_bytes -= op->len;
    md_op_free_results(op);
    free(op);
}

/* Moves up to one batch's worth of pending ops into store->batch_head. */
static void batch_take(md_store_t *store)
{
    assert(!store->batch_busy && store->pending_head);
    md_op_t *head = store->pending_head, *last = head;
    size_t n = 1, bytes = head->len;
    while (last->next && n < MD_BATCH_OPS_MAX && bytes + last->next->len <= MD_BATCH_BYTES_MAX) {
        last = last->next;
        n++;
        bytes += last->len;
    }
    store->pending_head = last->next;
    if (!store->pending_head)
        store->pending_tail = NULL;
    last->next = NULL;
    store->batch_head = head;
    store->batch_busy = true;
}

/* Worker thread: the whole batch in one transaction, one fsync. */
static void batch_work(void *arg)
{
    md_store_t *store = arg;
    md_op_t *op;
    int rc = md_db_begin(&store->db);
    for (op = store->batch_head; op && !rc; op = op->next)
        rc = md_db_exec(&store->db, op); /* != 0: the batch fails as a whole */
    if (!rc)
        rc = md_db_commit(&store->db);
    if (!rc)
        return;
    md_db_rollback(&store->db);
    for (op = store->batch_head; op; op = op->next) { /* nothing of it is durable */
        md_op_free_results(op);
        op->rc = rc; /* a refusal, too, was decided on state now rolled back */
    }
}

static void watches_fire(md_store_t *store, const md_op_t *op)
{
    for (size_t i = 0; i < op->n_events; i++) {
        const md_event_t *ev = &op->events[i];
        for (md_watch_t *w = store->watches_head; w; w = w->next) {
            if (!w->removed && w->kind == ev->kind && op->seq >= w->from_seq &&
                strcmp(w->path, ev->path) == 0)
                w->cb(ev->kind, ev->path, w->arg);
        }
    }
}

static void op_complete(const md_op_t *op)
{
    switch (op->kind) {
    case MD_OP_GET:
        if (op->cb.get)
            op->cb.get(op->rc, op->out_value, op->out_len, op->rc ? NULL : &op->stat, op->arg);
        break;
    case MD_OP_PUT:
        if (op->cb.put)
            op->cb.put(op->rc, op->rc ? NULL : &op->stat, op->arg);
        break;
    case MD_OP_DELETE:
    case MD_OP_DELETE_RECURSIVE:
    case MD_OP_SESSION_CLOSE:
        if (op->cb.done)
            op->cb.done(op->rc, op->arg);
        break;
    case MD_OP_LIST:
        if (op->cb.list)
            op->cb.list(op->rc, (const char *const *)op->children, op->n_children, op->arg);
        break;
    }
}

/* Unlinks and frees the watches md_unwatch'ed while callbacks were running. */
static void watches_sweep(md_store_t *store)
{
    md_watch_t *w = store->watches_head;
    while (w) {
        md_watch_t *next = w->next;
        if (w->removed) {
            if (w->prev)
                w->prev->next = w->next;
            else
                store->watches_head = w->next;
            if (w->next)
                w->next->prev = w->prev;
            else
                store->watches_tail = w->prev;
            free(w);
        }
        w = next;
    }
}

/* Loop thread: watches and callbacks of a finished batch, in call order. */
static void batch_finish(md_store_t *store, md_op_t *ops)
{
    store->commits++;
    store->dispatching++;
    while (ops) {
        md_op_t *op = ops;
        ops = op->next;
        if (op->rc == 0)
            watches_fire(store, op);
        else if (op->rc != QE_NOT_FOUND)
            log_debug("metadata", "%s: %s", op->path ? op->path : "(session)", q_strerror(op->rc));
        op_complete(op);
        op_free(store, op);
    }
    if (--store->dispatching == 0)
        watches_sweep(store);
}

static void batch_done(void *arg)
{
    md_store_t *store = arg;
    ev_unref(store->loop);
    md_op_t *ops = store->batch_head;
    store->batch_head = NULL;
    store->batch_busy = false;
    batch_start(store); /* the next batch commits while these callbacks run */
    batch_finish(store, ops);
}

static void batch_start(md_store_t *store)
{
    if (store->batch_busy || !store->pending_head || store->closing)
        return; /* md_store_close drains what is left itself */
    batch_take(store);
    ev_ref(store->loop);
    int rc = qexec_submit(store->exec, batch_work, batch_done, store);
    /* The executor holds at most this one job: its queue cannot be full. */
    assert(rc != -EAGAIN);
    if (rc) {
        ev_unref(store->loop);
        log_error("metadata", "cannot hand a batch to the worker: %s", q_strerror(rc));
        for (md_op_t *op = store->batch_head; op; op = op->next)
            op->rc = rc;
        md_op_t *ops = store->batch_head;
        store->batch_head = NULL;
        store->batch_busy = false;
        batch_finish(store, ops); /* only reached on -ENOMEM */
    }
}

/* ------------------------------------------------------------- queueing -- */

/* A new operation with room for a copy of path and value (NULL: -ENOMEM). */
static md_op_t *op_new(md_op_kind_t kind, const char *path, const void *value, size_t len)
{
    size_t plen = path ? strlen(path) + 1 : 0;
    md_op_t *op = calloc(1, sizeof *op + plen + len);
    if (!op)
        return NULL;
    op->kind = kind;
    char *tail = (char *)(op + 1);
    if (path) {
        op->path = memcpy(tail, path, plen);
        tail += plen;
    }
    if (len)
        op->value = memcpy(tail, value, len);
    op->len = len;
    return op;
}

static void op_push(md_store_t *store, md_op_t *op)
{
    op->seq = store->next_seq++;
    store->outstanding_ops++;
    store->outstanding_bytes += op->len;
    if (store->pending_tail)
        store->pending_tail->next = op;
    else
        store->pending_head = op;
    store->pending_tail = op;
    batch_start(store);
}

/* Queues op, or frees it and returns why not. */
static int op_enqueue(md_store_t *store, md_op_t *op)
{
    int rc = 0;
    if (store->closing)
        rc = QE_CLOSED;
    else if (store->outstanding_ops >= MD_PENDING_MAX ||
             store->outstanding_bytes + op->len > MD_PENDING_BYTES_MAX)
        rc = QE_BUSY;
    if (rc) {
        log_warn("metadata", "refused an operation on %s: %s (%zu queued, %zu bytes)",
                 op->path ? op->path : "(session)", q_strerror(rc), store->outstanding_ops,
                 store->outstanding_bytes);
        free(op);
        return rc;
    }
    op_push(store, op);
    return 0;
}

static int check_path(const char *what, const char *path, bool allow_root)
{
    if (md_path_valid(path, allow_root))
        return 0;
    char shown[81] = "(null)"; /* the first 80 bytes, control characters as '?' */
    if (path) {
        size_t i = 0;
        for (; i < sizeof shown - 1 && path[i]; i++)
            shown[i] = (unsigned char)path[i] < 0x20 ? '?' : path[i];
        shown[i] = '\0';
    }
    log_warn("metadata",
             "%s: invalid path \"%s\" (must be /-separated, non-empty components, "
             "no . or .., at most %d bytes)",
             what, shown, MD_PATH_MAX);
    return QE_INVALID;
}

/* ----------------------------------------------------------- public API -- */

int md_get(md_store_t *store, const char *path, md_get_cb cb, void *arg)
{
    int rc = check_path("get", path, false);
    if (rc)
        return rc;
    md_op_t *op = op_new(MD_OP_GET, path, NULL, 0);
    if (!op)
        return -ENOMEM;
    op->cb.get = cb;
    op->arg = arg;
    return op_enqueue(store, op);
}

int md_put(md_store_t *store, const char *path, const void *value, size_t len,
           int64_t expected_version, md_session_t *session, md_put_cb cb, void *arg)
{
    int rc = check_path("put", path, false);
    if (rc)
        return rc;
    if (len > MD_VALUE_MAX) {
        log_warn("metadata", "put %s: value of %zu bytes exceeds %u", path, len, MD_VALUE_MAX);
        return QE_TOO_LARGE;
    }
    const char *bad = (len && !value)                        ? "no value bytes"
                      : expected_version < MD_VERSION_NEW    ? "bad expected version"
                      : (session && session->store != store) ? "session of another store"
                                                             : NULL;
    if (bad) {
        log_warn("metadata", "put %s: %s (len %zu, version %lld)", path, bad, len,
                 (long long)expected_version);
        return QE_INVALID;
    }
    md_op_t *op = op_new(MD_OP_PUT, path, value, len);
    if (!op)
        return -ENOMEM;
    if (store->test_fail_count > 0 &&
        strncmp(path, store->test_fail_prefix, strlen(store->test_fail_prefix)) == 0) {
        store->test_fail_count--;
        op->test_rc = store->test_fail_err;
    }
    op->expected_version = expected_version;
    op->session_id = session ? session->id : 0;
    op->cb.put = cb;
    op->arg = arg;
    return op_enqueue(store, op);
}

void md_store_test_fail_puts(md_store_t *store, const char *prefix, int count, int err)
{
    free(store->test_fail_prefix);
    store->test_fail_prefix = strdup(prefix);
    store->test_fail_count = store->test_fail_prefix ? count : 0;
    store->test_fail_err = err;
}

int md_delete(md_store_t *store, const char *path, int64_t expected_version, md_done_cb cb,
              void *arg)
{
    int rc = check_path("delete", path, false);
    if (rc)
        return rc;
    if (expected_version < MD_VERSION_ANY) {
        log_warn("metadata", "delete %s: invalid expected version %lld", path,
                 (long long)expected_version);
        return QE_INVALID;
    }
    md_op_t *op = op_new(MD_OP_DELETE, path, NULL, 0);
    if (!op)
        return -ENOMEM;
    op->expected_version = expected_version;
    op->cb.done = cb;
    op->arg = arg;
    return op_enqueue(store, op);
}

int md_delete_recursive(md_store_t *store, const char *path, md_done_cb cb, void *arg)
{
    int rc = check_path("delete_recursive", path, false);
    if (rc)
        return rc;
    md_op_t *op = op_new(MD_OP_DELETE_RECURSIVE, path, NULL, 0);
    if (!op)
        return -ENOMEM;
    op->cb.done = cb;
    op->arg = arg;
    return op_enqueue(store, op);
}

int md_list(md_store_t *store, const char *path, md_list_cb cb, void *arg)
{
    int rc = check_path("list", path, true);
    if (rc)
        return rc;
    md_op_t *op = op_new(MD_OP_LIST, path, NULL, 0);
    if (!op)
        return -ENOMEM;
    op->cb.list = cb;
    op->arg = arg;
    return op_enqueue(store, op);
}

/* -------------------------------------------------------------- sessions -- */

md_session_t *md_session_open(md_store_t *store)
{
    if (store->closing) {
        log_warn("metadata", "session open refused: store closing");
        return NULL;
    }
    md_session_t *s = calloc(1, sizeof *s);
    if (!s) {
        log_error("metadata", "session open: out of memory");
        return NULL;
    }
    s->store = store;
    s->id = ++store->next_session_id;
    s->next = store->sessions;
    if (s->next)
        s->next->prev = s;
    store->sessions = s;
    return s;
}

void md_session_close(md_session_t *session)
{
    if (!session)
        return;
    md_store_t *store = session->store;
    if (session->prev)
        session->prev->next = session->next;
    else
        store->sessions = session->next;
    if (session->next)
        session->next->prev = session->prev;
    /* Not subject to the queue bound: the keys must go whatever the load. */
    md_op_t *op = op_new(MD_OP_SESSION_CLOSE, NULL, NULL, 0);
    if (op) {
        op->session_id = session->id;
        op_push(store, op);
    } else {
        log_error("metadata",
                  "session %lld close: out of memory; its ephemeral keys stay "
                  "until the next open",
                  (long long)session->id);
    }
    free(session);
}

/* --------------------------------------------------------------- watches -- */

md_watch_t *md_watch(md_store_t *store, const char *path, int kind, md_watch_cb cb, void *arg)
{
    if (check_path("watch", path, kind == MD_WATCH_CHILDREN) != 0)
        return NULL;
    if ((kind != MD_WATCH_DATA && kind != MD_WATCH_CHILDREN) || !cb || store->closing ||
        store->n_watches >= MD_WATCH_MAX) {
        log_warn("metadata", "watch %s refused (kind %d, %zu watches%s)", path, kind,
                 store->n_watches, store->closing ? ", closing" : "");
        return NULL;
    }
    size_t n = strlen(path) + 1;
    md_watch_t *w = calloc(1, sizeof *w + n);
    if (!w || md_filter_add(&store->filter, kind, path) != 0) {
        log_error("metadata", "watch %s: out of memory", path);
        free(w);
        return NULL;
    }
    memcpy(w->path, path, n);
    w->store = store;
    w->kind = kind;
    w->cb = cb;
    w->arg = arg;
    w->from_seq = store->next_seq;
    w->prev = store->watches_tail;
    if (w->prev)
        w->prev->next = w;
    else
        store->watches_head = w;
    store->watches_tail = w;
    store->n_watches++;
    return w;
}

void md_unwatch(md_watch_t *watch)
{
    if (!watch)
        return;
    md_store_t *store = watch->store;
    assert(!watch->removed);
    watch->removed = true;
    md_filter_remove(&store->filter, watch->kind, watch->path);
    store->n_watches--;
    if (store->dispatching == 0)
        watches_sweep(store);
}

/* ------------------------------------------------------- open and close -- */

uint64_t md_store_commits(const md_store_t *store)
{
    return store->commits;
}

int md_store_open_embedded(struct ev_loop *loop, const char *path, md_store_t **out)
{
    *out = NULL;
    if (!loop || !path || !*path) {
        log_error("metadata", "open: no loop or no path");
        return QE_INVALID;
    }
    md_store_t *store = calloc(1, sizeof *store);
    if (!store)
        return -ENOMEM;
    int rc = md_db_open(&store->db, path);
    if (rc) {
        free(store);
        return rc;
    }
    md_filter_init(&store->filter);
    store->db.filter = &store->filter;
    store->loop = loop;
    store->exec = qexec_new(loop, "metadata", 1, 4);
    if (!store->exec) {
        log_error("metadata", "open %s: cannot start the worker thread", path);
        md_db_close(&store->db);
        md_filter_destroy(&store->filter);
        free(store);
        return -ENOMEM;
    }
    log_info("metadata", "opened embedded metadata store %s", path);
    *out = store;
    return 0;
}

void md_store_close(md_store_t *store)
{
    if (!store)
        return;
    assert(!store->closing && store->dispatching == 0); /* not from a callback */
    while (store->sessions)
        md_session_close(store->sessions); /* queued before closing is set */
    store->closing = true;
    qexec_free(store->exec); /* the batch in flight completes, callbacks included */
    store->exec = NULL;
    while (store->pending_head) { /* the rest, on this thread now */
        batch_take(store);
        batch_work(store);
        md_op_t *ops = store->batch_head;
        store->batch_head = NULL;
        store->batch_busy = false;
        batch_finish(store, ops);
    }
    assert(store->outstanding_ops == 0 && store->outstanding_bytes == 0);
    md_watch_t *w = store->watches_head;
    while (w) {
        md_watch_t *next = w->next;
        free(w);
        w = next;
    }
    md_db_close(&store->db);
    md_filter_destroy(&store->filter);
    free(store->test_fail_prefix);
    free(store);
}
