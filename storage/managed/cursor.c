/*
 * cursor.c — cursors on a managed ledger (cursor.h): opening, reading with
 * acknowledged entries skipped, acknowledging, seeking, and persisting the
 * acknowledgement state (ack_state.c) to the metadata store.
 *
 * Every durable cursor of a managed ledger is loaded when the managed ledger
 * opens (so a subscription with no consumer still holds back trimming) and
 * lives until the managed ledger closes or the cursor is deleted;
 * ml_cursor_open/close count handles on it. Non-durable cursors live from
 * open to their last close and are never written anywhere.
 *
 * Persistence contract: the state is stored at
 * /managed-ledgers/<ml>/cursors/<escaped cursor> (encoding in ack_state.c),
 * written with compare-and-set on the version last read or written. Each
 * change bumps change_gen; a write records the generation it serialized
 * (writing_gen) and, once durable, persisted_gen. At most one write is in
 * flight per cursor; a change schedules a write no sooner than
 * cursor_persist_interval_ms after the previous one (ev_timer); a flush (or a
 * close) waits for a write whose generation covers the flush call, issuing
 * one at once if needed. Changes made while a write is in flight are covered
 * by the next write.
 *
 * A deleted (or closed non-durable) cursor moves to ml->zombies and is freed
 * when no handle, read or write refers to it any more.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

static void cursor_write(ml_cursor_t *c);
static void cursor_schedule_persist(ml_cursor_t *c);
static void persist_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ---------------------------------------------------------- objects -- */

static char *cursor_path(const managed_ledger_t *ml, const char *name)
{
    char *esc = ml_escape_name(name), *path = NULL;
    if (esc && asprintf(&path, "%s/cursors/%s", ml->path, esc) < 0)
        path = NULL;
    free(esc);
    return path;
}

static ml_cursor_t *cursor_find(const managed_ledger_t *ml, const char *name)
{
    for (ml_cursor_t *c = ml->cursors; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

size_t ml_cursor_names(const managed_ledger_t *ml, const char **names, size_t max)
{
    size_t n = 0;
    for (ml_cursor_t *c = ml->cursors; c; c = c->next) {
        if (!c->durable || c->deleted)
            continue;
        if (n < max)
            names[n] = c->name;
        n++;
    }
    return n;
}

static ml_cursor_t *cursor_new(managed_ledger_t *ml, const char *name, bool durable,
                               ml_pos_t mark_delete)
{
    ml_cursor_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->ml = ml;
    c->name = strdup(name);
    c->path = cursor_path(ml, name);
    if (!c->name || !c->path) {
        free(c->name);
        free(c->path);
        free(c);
        return NULL;
    }
    c->durable = durable;
    c->md_version = MD_VERSION_NEW;
    ml_ack_init(&c->acks, &ml->ledgers, mark_delete);
    c->read_pos = ml_list_next(&ml->ledgers, mark_delete);
    ev_timer_init(&c->persist_timer, persist_timer_cb, 0., 0.);
    c->persist_timer.data = c;
    c->next = ml->cursors;
    ml->cursors = c;
    ml->ncursors++;
    return c;
}

static void cursor_free(ml_cursor_t *c)
{
    assert(!c->writing && !c->reading && !c->flush_waiters);
    ev_timer_stop(c->ml->f->loop, &c->persist_timer);
    ml_ack_free(&c->acks);
    free(c->name);
    free(c->path);
    free(c);
}

static void list_remove(ml_cursor_t **head, ml_cursor_t *c)
{
    while (*head != c)
        head = &(*head)->next;
    *head = c->next;
}

/* Takes c out of the managed ledger's cursors (deleted or closed reader). */
static void cursor_retire(ml_cursor_t *c)
{
    managed_ledger_t *ml = c->ml;
    assert(!c->deleted);
    c->deleted = true;
    ev_timer_stop(ml->f->loop, &c->persist_timer);
    c->timer_armed = false;
    list_remove(&ml->cursors, c);
    ml->ncursors--;
    c->next = ml->zombies;
    ml->zombies = c;
}

static void cursor_maybe_free(ml_cursor_t *c)
{
    if (!c->deleted || c->handle_refs > 0 || c->reading || c->writing || c->flush_waiters)
        return;
    list_remove(&c->ml->zombies, c);
    cursor_free(c);
}

void ml_cursors_free_all(managed_ledger_t *ml)
{
    ml_cursor_t *c;
    while ((c = ml->cursors)) {
        ml->cursors = c->next;
        cursor_free(c);
    }
    while ((c = ml->zombies)) {
        ml->zombies = c->next;
        cursor_free(c);
    }
    ml->ncursors = 0;
}

bool ml_cursors_slowest(const managed_ledger_t *ml, ml_pos_t *mark_delete)
{
    bool any = false;
    for (const ml_cursor_t *c = ml->cursors; c; c = c->next) {
        if (!c->durable)
            continue;
        if (!any || ml_pos_cmp(c->acks.mark_delete, *mark_delete) < 0)
            *mark_delete = c->acks.mark_delete;
        any = true;
    }
    return any;
}

/* A reader at `at` reads pos soon: it is at most ML_CACHE_BACKLOG_ENTRIES before
 * it. A reader two ledgers or more behind the current one is far behind whatever the count
 * (and counting would walk the ledger list on every add). */
static bool reader_tails(const managed_ledger_t *ml, ml_pos_t at, ml_pos_t pos)
{
    if (ml_pos_cmp(at, pos) >= 0)
        return true;
    const ml_ledger_list_t *l = &ml->ledgers;
    if (l->n >= 2 && at.ledger_id < l->v[l->n - 2].ledger_id)
        return false;
    return ml_list_count(l, at, pos) <= ML_CACHE_BACKLOG_ENTRIES;
}

bool ml_cursors_any_tailing(const managed_ledger_t *ml, ml_pos_t pos)
{
    for (const ml_cursor_t *c = ml->cursors; c; c = c->next)
        if (!c->deleted && c->handle_refs > 0 && reader_tails(ml, c->read_pos, pos))
            return true;
    return false;
}

/* Where c still reads from, for the cache: its read position, or its user's
 * hold when that is before it. */
static ml_pos_t cursor_cache_pos(const ml_cursor_t *c)
{
    return c->has_hold && ml_pos_cmp(c->hold, c->read_pos) < 0 ? c->hold : c->read_pos;
}

void ml_cursor_set_active(ml_cursor_t *c, bool active)
{
    c->inactive = !active;
}

/* 1 if an open, active cursor has not read pos, or holds it for a redelivery
 * (PIP-430 counts the active cursors at or before an entry), and is at most
 * the cache's size behind it; 0 if none; -1 past ML_CACHE_READERS_MAX cursors
 * (not walked further). */
static int expected_read(const managed_ledger_t *ml, ml_pos_t pos)
{
    size_t n = 0;
    for (const ml_cursor_t *c = ml->cursors; c; c = c->next) {
        if (c->deleted || c->handle_refs <= 0)
            continue;
        if (++n > ML_CACHE_READERS_MAX)
            return -1;
        ml_pos_t at = cursor_cache_pos(c);
        if (!c->inactive && ml_pos_cmp(at, pos) <= 0 &&
            ml_list_bytes(&ml->ledgers, at, pos) <= ml->f->cache_bytes_max)
            return 1;
    }
    return 0;
}

/* An aged cached entry at pos is kept if a cursor expects it; past
 * ML_CACHE_READERS_MAX cursors it is left to age. */
bool ml_cache_expected_read(const void *owner, ml_pos_t pos, void *arg)
{
    (void)arg;
    return expected_read(owner, pos) == 1;
}

bool ml_cache_wanted(const managed_ledger_t *ml, ml_pos_t pos)
{
    int e = ml->f->cache_by_expected ? expected_read(ml, pos) : -1;
    return e >= 0 ? e == 1 : ml_cursors_any_tailing(ml, pos);
}

void ml_cursor_set_cache_hold(ml_cursor_t *c, const ml_pos_t *from)
{
    bool moved_on = c->has_hold && (!from || ml_pos_cmp(*from, c->hold) > 0);
    if (from && c->has_hold && ml_pos_cmp(*from, c->hold) == 0)
        return;
    c->has_hold = from != NULL;
    if (from)
        c->hold = *from;
    if (moved_on)
        ml_cache_read_past(c->ml);
}

/* Evicts the cached entries below every tailing cursor's read position (or hold). Stops
 * early (nothing to evict) at the first tailing cursor still at or before the
 * oldest cached entry, so with tailing cursors only the last to read one walks
 * them all; a backlogged cursor (far behind the oldest cached entry) reads
 * from the ledgers and holds nothing. Past ML_CACHE_READERS_MAX cursors it
 * leaves eviction to age and size. */
void ml_cache_read_past(managed_ledger_t *ml)
{
    ml_pos_t oldest, slowest = ML_POS_EARLIEST;
    if (!ml_cache_oldest(ml->f->cache, ml, &oldest))
        return;
    size_t n = 0;
    bool any = false;
    for (const ml_cursor_t *c = ml->cursors; c; c = c->next) {
        if (c->deleted || c->handle_refs <= 0)
            continue;
        if (++n > ML_CACHE_READERS_MAX)
            return;
        ml_pos_t at = cursor_cache_pos(c);
        if (ml_pos_cmp(at, oldest) <= 0) {
            if (reader_tails(ml, at, oldest))
                return;
            continue;
        }
        if (!any || ml_pos_cmp(at, slowest) < 0)
            slowest = at;
        any = true;
    }
    if (any)
        ml_cache_evict_before(ml->f->cache, ml, slowest);
}

/* ------------------------------------------------------ persistence -- */

static void flush_waiters_complete(ml_cursor_t *c, uint64_t upto, int rc)
{
    ml_flush_waiter_t **pp = &c->flush_waiters, *done = NULL;
    while (*pp) {
        ml_flush_waiter_t *w = *pp;
        if (w->gen <= upto) {
            *pp = w->next;
            w->next = done;
            done = w;
        } else {
            pp = &w->next;
        }
    }
    while (done) {
        ml_flush_waiter_t *w = done;
        done = w->next;
        w->cb(rc, w->arg);
        free(w);
    }
}

static void cursor_written(int rc, const md_stat_t *stat, void *arg)
{
    ml_cursor_t *c = arg;
    managed_ledger_t *ml = c->ml;
    c->writing = false;
    c->last_write_at = ev_now(ml->f->loop);
    if (rc == 0) {
        c->md_version = stat->version;
        c->persisted_gen = c->writing_gen;
    } else {
        log_error("managed", "%s: cursor %s not persisted: %s", ml->name, c->name, q_strerror(rc));
    }
    flush_waiters_complete(c, c->writing_gen, rc);
    /* A waiter's callback may itself have started the next write (a close
     * flushes): then that write serves the remaining waiters. */
    if (!c->deleted && !c->writing) {
        if (c->flush_waiters)
            cursor_write(c);
        else if (rc == 0 && c->change_gen > c->persisted_gen)
            cursor_schedule_persist(c);
    }
    cursor_maybe_free(c);
    ml_release(ml);
}

static void cursor_write(ml_cursor_t *c)
{
    managed_ledger_t *ml = c->ml;
    assert(c->durable && !c->writing);
    ev_timer_stop(ml->f->loop, &c->persist_timer);
    c->timer_armed = false;
    size_t len = ml_ack_encode(&c->acks, NULL, 0);
    uint8_t *buf = malloc(len);
    int rc = buf ? 0 : -ENOMEM;
    if (rc == 0) {
        ml_ack_encode(&c->acks, buf, len);
        if (c->acks.nranges > ML_CURSOR_RANGES_MAX)
            log_warn("managed", "%s: cursor %s has %zu ack ranges, persisting %d", ml->name,
                     c->name, c->acks.nranges, ML_CURSOR_RANGES_MAX);
        c->writing = true;
        c->writing_gen = c->change_gen;
        ml_hold(ml);
        rc = md_put(ml->f->md, c->path, buf, len, c->md_version, NULL, cursor_written, c);
        if (rc < 0) {
            ml->holds--;
            c->writing = false;
        }
    }
    free(buf);
    if (rc < 0) {
        log_error("managed", "%s: cursor %s write refused: %s", ml->name, c->name, q_strerror(rc));
        /* Deliver the failure to flush waiters on posted calls. */
        ml_flush_waiter_t *w = c->flush_waiters;
        c->flush_waiters = NULL;
        while (w) {
            ml_flush_waiter_t *next = w->next;
            ml_post_done(ml, w->cb, w->arg, rc);
            free(w);
            w = next;
        }
    }
}

static void persist_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ml_cursor_t *c = w->data;
    c->timer_armed = false;
    if (!c->writing && !c->deleted && c->change_gen > c->persisted_gen)
        cursor_write(c);
}

static void cursor_schedule_persist(ml_cursor_t *c)
{
    if (!c->durable || c->deleted || c->writing || c->timer_armed)
        return;
    struct ev_loop *loop = c->ml->f->loop;
    double delay = c->last_write_at + c->ml->cfg.cursor_persist_interval_ms / 1000.0 - ev_now(loop);
    ev_timer_set(&c->persist_timer, delay > 0 ? delay : 0., 0.);
    ev_timer_start(loop, &c->persist_timer);
    c->timer_armed = true;
}

/* cb once the state as of now is durable (posted if it already is). */
static int cursor_flush(ml_cursor_t *c, ml_done_cb cb, void *arg)
{
    if (!c->durable || c->persisted_gen >= c->change_gen)
        return ml_post_done(c->ml, cb, arg, 0);
    ml_flush_waiter_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (ml_flush_waiter_t){.next = c->flush_waiters, .gen = c->change_gen, .cb = cb, .arg = arg};
    c->flush_waiters = w;
    if (!c->writing)
        cursor_write(c);
    return 0;
}

/* A change to the state: persist later; trim if M entered another ledger. */
static void cursor_changed(ml_cursor_t *c, ml_pos_t md_before)
{
    managed_ledger_t *ml = c->ml;
    c->change_gen++;
    if (ml_pos_cmp(c->read_pos, c->acks.mark_delete) <= 0)
        c->read_pos = ml_list_next(&ml->ledgers, c->acks.mark_delete);
    cursor_schedule_persist(c);
    if (c->durable && ml_list_next(&ml->ledgers, md_before).ledger_id !=
                          ml_list_next(&ml->ledgers, c->acks.mark_delete).ledger_id)
        ml_trim_schedule(ml);
}

typedef struct flush_all {
    managed_ledger_t *ml;
    size_t pending;
    int rc;
    ml_done_cb cb;
    void *arg;
} flush_all_t;

static void flush_all_one(int rc, void *arg)
{
    flush_all_t *fa = arg;
    if (rc < 0)
        fa->rc = rc;
    if (--fa->pending > 0)
        return;
    fa->cb(fa->rc, fa->arg);
    free(fa);
}

int ml_cursors_flush_all(managed_ledger_t *ml, ml_done_cb cb, void *arg)
{
    flush_all_t *fa = calloc(1, sizeof *fa);
    if (!fa)
        return -ENOMEM;
    *fa = (flush_all_t){.ml = ml, .pending = 1, .cb = cb, .arg = arg};
    for (ml_cursor_t *c = ml->cursors; c; c = c->next)
        if (c->durable && c->persisted_gen < c->change_gen &&
            cursor_flush(c, flush_all_one, fa) == 0)
            fa->pending++;
    int rc = ml_post_done(ml, flush_all_one, fa, 0); /* the initial count of 1 */
    if (rc < 0)
        fa->pending--; /* out of memory: completes with the last cursor, if any */
    return 0;
}

/* ------------------------------------------------------------- load -- */

typedef struct cursor_load {
    managed_ledger_t *ml;
    char *dir;
    char **names;
    size_t n, i;
    ml_done_cb cb;
    void *arg;
} cursor_load_t;

static void load_finish(cursor_load_t *op, int rc)
{
    if (rc < 0)
        log_error("managed", "%s: loading cursors failed: %s", op->ml->name, q_strerror(rc));
    op->cb(rc, op->arg);
    for (size_t i = 0; i < op->n; i++)
        free(op->names[i]);
    free(op->names);
    free(op->dir);
    free(op);
}

static void load_next(cursor_load_t *op);

static void load_got(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    cursor_load_t *op = arg;
    managed_ledger_t *ml = op->ml;
    if (rc == 0) {
        char *name = ml_unescape_name(op->names[op->i]);
        ml_cursor_t *c = name ? cursor_new(ml, name, true, ML_POS_EARLIEST) : NULL;
        free(name);
        rc = c ? ml_ack_decode(&c->acks, value, len) : -ENOMEM;
        if (rc == 0) {
            c->md_version = stat->version;
            c->read_pos = ml_list_next(&ml->ledgers, c->acks.mark_delete);
        }
    } else if (rc == QE_NOT_FOUND) {
        rc = 0; /* deleted since the listing */
    }
    op->i++;
    if (rc < 0)
        load_finish(op, rc);
    else
        load_next(op);
    ml_release(ml);
}

static void load_next(cursor_load_t *op)
{
    if (op->i == op->n) {
        load_finish(op, 0);
        return;
    }
    char *path = NULL;
    int rc = asprintf(&path, "%s/%s", op->dir, op->names[op->i]) < 0 ? -ENOMEM : 0;
    if (rc == 0) {
        ml_hold(op->ml);
        rc = md_get(op->ml->f->md, path, load_got, op);
        if (rc < 0)
            op->ml->holds--;
    }
    free(path);
    if (rc < 0)
        load_finish(op, rc);
}

static void load_listed(int rc, const char *const *children, size_t n, void *arg)
{
    cursor_load_t *op = arg;
    managed_ledger_t *ml = op->ml;
    if (rc == QE_NOT_FOUND) {
        rc = 0;
        n = 0;
    }
    if (rc == 0 && n > ML_CURSORS_MAX)
        rc = QE_TOO_LARGE;
    if (rc == 0 && n > 0 && !(op->names = calloc(n, sizeof *op->names)))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++, op->n++)
        if (!(op->names[i] = strdup(children[i])))
            rc = -ENOMEM;
    if (rc < 0)
        load_finish(op, rc);
    else
        load_next(op);
    ml_release(ml);
}

int ml_cursors_load(managed_ledger_t *ml, ml_done_cb cb, void *arg)
{
    cursor_load_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (cursor_load_t){.ml = ml, .cb = cb, .arg = arg};
    if (asprintf(&op->dir, "%s/cursors", ml->path) < 0) {
        free(op);
        return -ENOMEM;
    }
    ml_hold(ml);
    int rc = md_list(ml->f->md, op->dir, load_listed, op);
    if (rc < 0) {
        ml->holds--;
        free(op->dir);
        free(op);
    }
    return rc;
}

/* ------------------------------------------------------ open, close -- */

typedef struct cursor_open_op {
    ml_cursor_t *c;
    ml_cursor_open_cb cb;
    void *arg;
} cursor_open_op_t;

static void cursor_opened(int rc, void *arg)
{
    cursor_open_op_t *op = arg;
    ml_cursor_t *c = op->c;
    if (rc < 0) {
        c->handle_refs--;
        if (c->md_version == MD_VERSION_NEW && c->handle_refs == 0 && !c->deleted) {
            cursor_retire(c); /* never persisted: forget it */
            cursor_maybe_free(c);
        }
        c = NULL;
    }
    op->cb(rc, c, op->arg);
    free(op);
}

/* The mark-delete position of a new cursor whose first read is `initial`. */
static ml_pos_t initial_mark_delete(const managed_ledger_t *ml, ml_pos_t initial)
{
    if (initial.ledger_id == INT64_MAX) { /* ML_POS_LATEST */
        ml_pos_t last = ml_list_last(&ml->ledgers);
        if (last.ledger_id >= 0)
            return last;
        initial = ML_POS_EARLIEST;
    }
    if (initial.ledger_id < 0)
        initial = ml_first_position(ml);
    return (ml_pos_t){initial.ledger_id, initial.entry_id - 1};
}

int ml_cursor_open(managed_ledger_t *ml, const char *name, ml_pos_t initial, bool durable,
                   ml_cursor_open_cb cb, void *arg)
{
    if (ml->closing || ml->state == ML_OPENING) {
        log_warn("managed", "%s: cursor open refused: closed", ml->name);
        return QE_CLOSED;
    }
    if (!name || !*name || strlen(name) > ML_NAME_MAX)
        return QE_INVALID;
    ml_cursor_t *c = cursor_find(ml, name);
    if (!c && ml->ncursors >= ML_CURSORS_MAX) {
        log_warn("managed", "%s: cursor %s refused: %d cursors", ml->name, name, ML_CURSORS_MAX);
        return QE_BUSY;
    }
    cursor_open_op_t *op = malloc(sizeof *op);
    if (!op)
        return -ENOMEM;
    if (!c) {
        c = cursor_new(ml, name, durable, initial_mark_delete(ml, initial));
        if (!c) {
            free(op);
            return -ENOMEM;
        }
        if (durable)
            c->change_gen = 1; /* created: written before the open completes */
    }
    *op = (cursor_open_op_t){c, cb, arg};
    c->handle_refs++;
    int rc = cursor_flush(c, cursor_opened, op);
    if (rc < 0) {
        free(op);
        c->handle_refs--;
    }
    return rc;
}

int ml_cursor_close(ml_cursor_t *c, ml_done_cb cb, void *arg)
{
    if (c->deleted || c->handle_refs <= 0) {
        log_warn("managed", "cursor %s: close refused: not open", c->name);
        return QE_CLOSED;
    }
    managed_ledger_t *ml = c->ml;
    c->handle_refs--;
    if (c->handle_refs == 0)
        c->has_hold = false; /* its user is gone; a reopened cursor starts without */
    if (c->durable)
        return cursor_flush(c, cb, arg);
    if (c->handle_refs == 0) {
        cursor_retire(c);
        cursor_maybe_free(c);
    }
    return ml_post_done(ml, cb, arg, 0);
}

typedef struct cursor_delete_op {
    managed_ledger_t *ml;
    bool known;
    ml_done_cb cb;
    void *arg;
} cursor_delete_op_t;

static void cursor_md_deleted(int rc, void *arg)
{
    cursor_delete_op_t *op = arg;
    managed_ledger_t *ml = op->ml;
    if (rc == QE_NOT_FOUND && op->known)
        rc = 0; /* a reader, or a cursor not yet written */
    op->cb(rc, op->arg);
    free(op);
    ml_release(ml);
}

int ml_cursor_delete(managed_ledger_t *ml, const char *name, ml_done_cb cb, void *arg)
{
    if (ml->closing || !name) {
        log_warn("managed", "%s: cursor delete refused", ml->name);
        return QE_CLOSED;
    }
    cursor_delete_op_t *op = malloc(sizeof *op);
    char *path = cursor_path(ml, name);
    if (!op || !path) {
        free(op);
        free(path);
        return -ENOMEM;
    }
    ml_cursor_t *c = cursor_find(ml, name);
    *op = (cursor_delete_op_t){ml, c != NULL, cb, arg};
    ml_hold(ml);
    int rc = md_delete(ml->f->md, path, MD_VERSION_ANY, cursor_md_deleted, op);
    free(path);
    if (rc < 0) {
        ml->holds--;
        free(op);
        return rc;
    }
    if (c) {
        cursor_retire(c);
        cursor_maybe_free(c);
        ml_trim_schedule(ml);
    }
    return 0;
}

/* ------------------------------------------------------------- read -- */

typedef struct cursor_read_op {
    ml_cursor_t *c;
    ml_read_cb cb;
    void *arg;
    size_t max_entries, max_bytes;
    uint64_t seek_gen;
    int tries;
} cursor_read_op_t;

static int cursor_read_issue(cursor_read_op_t *op);

static void cursor_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    cursor_read_op_t *op = arg;
    ml_cursor_t *c = op->c;
    bool moved = false;
    if (rc == 0 && n > 0 && c->seek_gen == op->seek_gen) {
        c->read_pos = ml_list_next(&c->ml->ledgers, entries[n - 1].pos);
        moved = true;
    }
    ml_entry_t *kept = n ? malloc(n * sizeof *kept) : NULL;
    size_t k = 0;
    if (n && !kept)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!ml_ack_is_acked(&c->acks, entries[i].pos))
            kept[k++] = entries[i];
    /* Everything read was acknowledged meanwhile: read on (bounded). */
    if (rc == 0 && n > 0 && k == 0 && op->tries++ < 4 && !c->deleted &&
        cursor_read_issue(op) == 0) {
        ml_cache_read_past(c->ml);
        free(kept);
        return;
    }
    c->reading = false;
    op->cb(rc, kept, k, op->arg);
    /* Evicts only now that the user has set its hold on what it keeps to
     * send later (a Key_Shared consumer without permits). */
    if (moved && !c->deleted && c->handle_refs > 0)
        ml_cache_read_past(c->ml);
    free(kept);
    free(op);
    cursor_maybe_free(c);
}

static int cursor_read_issue(cursor_read_op_t *op)
{
    ml_cursor_t *c = op->c;
    const ml_ledger_list_t *l = &c->ml->ledgers;
    ml_pos_t from = ml_ack_skip(&c->acks, c->read_pos);
    c->read_pos = from;
    size_t limit = op->max_entries;
    const ml_ack_range_t *r = ml_ack_range_after(&c->acks, from);
    if (r) { /* stop before the next acknowledged range */
        uint64_t gap = ml_list_count(l, (ml_pos_t){from.ledger_id, from.entry_id - 1}, r->first);
        if (gap > 1 && gap - 1 < limit)
            limit = (size_t)(gap - 1);
    }
    op->seek_gen = c->seek_gen;
    return ml_read(c->ml, from, limit, op->max_bytes, cursor_read_done, op);
}

int ml_cursor_read(ml_cursor_t *c, size_t max_entries, size_t max_bytes, ml_read_cb cb, void *arg)
{
    if (c->deleted || c->handle_refs <= 0) {
        log_warn("managed", "cursor %s: read refused: closed", c->name);
        return QE_CLOSED;
    }
    if (c->reading) {
        log_warn("managed", "cursor %s: read refused: one already pending", c->name);
        return QE_BUSY;
    }
    cursor_read_op_t *op = malloc(sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (cursor_read_op_t){
        .c = c, .cb = cb, .arg = arg, .max_entries = max_entries, .max_bytes = max_bytes};
    int rc = cursor_read_issue(op);
    if (rc < 0)
        free(op);
    else
        c->reading = true;
    return rc;
}

bool ml_cursor_has_more(const ml_cursor_t *c)
{
    ml_pos_t p = c->read_pos, found;
    for (int i = 0; i < 8; i++) {
        p = ml_ack_skip(&c->acks, p);
        if (!ml_list_seek(&c->ml->ledgers, p, &found))
            return false;
        if (!ml_ack_is_acked(&c->acks, found))
            return true;
        p = found;
    }
    return true;
}

void ml_cursor_seek_read(ml_cursor_t *c, ml_pos_t pos)
{
    ml_pos_t first = ml_list_next(&c->ml->ledgers, c->acks.mark_delete);
    c->read_pos = ml_pos_cmp(pos, first) < 0 ? first : pos;
    c->seek_gen++;
}

void ml_cursor_rewind(ml_cursor_t *c)
{
    ml_cursor_seek_read(c, ML_POS_EARLIEST);
}

/* -------------------------------------------------------------- ack -- */

/* 0: pos may be acknowledged; 1: it lies in a trimmed ledger (nothing to do);
 * QE_INVALID: no such entry. */
static int ack_check(const ml_cursor_t *c, ml_pos_t pos)
{
    if (c->deleted || c->handle_refs <= 0) {
        log_warn("managed", "cursor %s: ack refused: closed", c->name);
        return QE_CLOSED;
    }
    const ml_ledger_list_t *l = &c->ml->ledgers;
    const ml_ledger_info_t *li = ml_list_find(l, pos.ledger_id);
    if (!li && l->n > 0 && pos.ledger_id < l->v[0].ledger_id && pos.entry_id >= 0)
        return 1;
    if (!li || pos.entry_id < 0 || pos.entry_id >= li->entries) {
        log_warn("managed", "cursor %s: ack of %lld:%lld refused: no such entry", c->name,
                 (long long)pos.ledger_id, (long long)pos.entry_id);
        return QE_INVALID;
    }
    return 0;
}

int ml_cursor_ack(ml_cursor_t *c, ml_pos_t pos, const uint64_t *ack_set, size_t words)
{
    int rc = ack_check(c, pos);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    ml_pos_t before = c->acks.mark_delete;
    rc = ack_set ? ml_ack_batch(&c->acks, pos, ack_set, words) : ml_ack_one(&c->acks, pos);
    if (rc < 0)
        return rc;
    cursor_changed(c, before);
    return 0;
}

int ml_cursor_ack_cumulative(ml_cursor_t *c, ml_pos_t pos)
{
    int rc = ack_check(c, pos);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    ml_pos_t before = c->acks.mark_delete;
    ml_ack_cumulative(&c->acks, pos);
    cursor_changed(c, before);
    return 0;
}

int ml_cursor_reset(ml_cursor_t *c, ml_pos_t pos, ml_done_cb cb, void *arg)
{
    if (c->deleted || c->handle_refs <= 0)
        return QE_CLOSED;
    const ml_ledger_list_t *l = &c->ml->ledgers;
    ml_pos_t end = ml_list_next(l, ml_list_last(l));
    if (pos.ledger_id != INT64_MAX && pos.ledger_id >= 0 &&
        (pos.entry_id < 0 || ml_pos_cmp(pos, end) > 0)) {
        log_warn("managed", "cursor %s: reset to %lld:%lld refused: beyond the log", c->name,
                 (long long)pos.ledger_id, (long long)pos.entry_id);
        return QE_INVALID;
    }
    ml_pos_t before = c->acks.mark_delete;
    ml_ack_reset(&c->acks, initial_mark_delete(c->ml, pos));
    c->read_pos = ml_list_next(l, c->acks.mark_delete);
    c->seek_gen++;
    cursor_changed(c, before);
    return cursor_flush(c, cb, arg);
}

int ml_cursor_flush(ml_cursor_t *c, ml_done_cb cb, void *arg)
{
    if (c->deleted)
        return QE_CLOSED;
    return cursor_flush(c, cb, arg);
}

/* -------------------------------------------------------- accessors -- */

bool ml_cursor_is_acked(const ml_cursor_t *c, ml_pos_t pos)
{
    return ml_ack_is_acked(&c->acks, pos);
}

const uint64_t *ml_cursor_ack_set(const ml_cursor_t *c, ml_pos_t pos, size_t *words)
{
    return ml_ack_bitset(&c->acks, pos, words);
}

const char *ml_cursor_name(const ml_cursor_t *c)
{
    return c->name;
}

bool ml_cursor_is_durable(const ml_cursor_t *c)
{
    return c->durable;
}

ml_pos_t ml_cursor_mark_delete_pos(const ml_cursor_t *c)
{
    return c->acks.mark_delete;
}

ml_pos_t ml_cursor_read_pos(const ml_cursor_t *c)
{
    return ml_ack_skip(&c->acks, c->read_pos);
}

uint64_t ml_cursor_backlog(const ml_cursor_t *c)
{
    return ml_ack_backlog(&c->acks, ml_list_last(&c->ml->ledgers));
}

size_t ml_cursor_ack_ranges(const ml_cursor_t *c, char *buf, size_t buf_len)
{
    return ml_ack_format_ranges(&c->acks, buf, buf_len);
}
