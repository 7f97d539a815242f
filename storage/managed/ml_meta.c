/*
 * ml_meta.c — the managed ledger's metadata record and the plumbing shared by
 * the other files: name escaping, holds, deferred callbacks, and the queue of
 * metadata writes.
 *
 * Record at /managed-ledgers/<escaped name>, JSON (docs/managed-ledger.md):
 *
 *   {"version": 1,
 *    "ledgers": [{"ledger_id": 12, "entries": 10, "size_bytes": 1230,
 *                 "closed_ms": 1700000000000}, ...],      oldest first
 *    "properties": {"key": "value", ...}}
 *
 * A ledger with closed_ms == 0 was still open when the record was written:
 * opening recovers it (fencing) before trusting its entries/size.
 *
 * Writes: one md_put in flight per managed ledger, with compare-and-set on
 * the version read or last written. A write always serializes the in-memory
 * state at the time it is issued; requests arriving while one is in flight
 * are all served by the next write. A lost compare-and-set (QE_BAD_VERSION,
 * QE_EXISTS) means another writer owns the log: the managed ledger is fenced.
 *
 * Names: '%' -> "%25" and '/' -> "%2F", nothing else, so any name is one path
 * component and escaping is reversible.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/json_out.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

#define ML_MD_FORMAT_VERSION 1

/* ------------------------------------------------------------- names -- */

char *ml_escape_name(const char *name)
{
    size_t n = strlen(name);
    char *out = malloc(3 * n + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '/' || name[i] == '%') {
            *p++ = '%';
            *p++ = '2';
            *p++ = name[i] == '/' ? 'F' : '5';
        } else {
            *p++ = name[i];
        }
    }
    *p = '\0';
    return out;
}

char *ml_unescape_name(const char *esc)
{
    size_t n = strlen(esc);
    char *out = malloc(n + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (esc[i] == '%' && i + 2 < n + 1 && esc[i + 1] == '2' &&
            (esc[i + 2] == 'F' || esc[i + 2] == '5')) {
            *p++ = esc[i + 2] == 'F' ? '/' : '%';
            i += 2;
        } else {
            *p++ = esc[i];
        }
    }
    *p = '\0';
    return out;
}

/* ------------------------------------------------- holds and posting -- */

void ml_hold(managed_ledger_t *ml)
{
    ml->holds++;
}

void ml_release(managed_ledger_t *ml)
{
    assert(ml->holds > 0);
    ml->holds--;
    if (ml->closing)
        ml_close_step(ml);
}

typedef struct ml_posted {
    managed_ledger_t *ml;
    ml_done_cb cb;
    void *arg;
    int rc;
} ml_posted_t;

static void posted_run(void *p)
{
    ml_posted_t *d = p;
    managed_ledger_t *ml = d->ml;
    d->cb(d->rc, d->arg);
    free(d);
    ml_release(ml);
}

int ml_post_done(managed_ledger_t *ml, ml_done_cb cb, void *arg, int rc)
{
    ml_posted_t *d = malloc(sizeof *d);
    if (!d)
        return -ENOMEM;
    *d = (ml_posted_t){ml, cb, arg, rc};
    ml_hold(ml);
    if (qloop_post(ml->f->mb, posted_run, d) < 0) {
        free(d);
        ml->holds--;
        return -ENOMEM;
    }
    return 0;
}

/* ------------------------------------------------------------- codec -- */

char *ml_md_encode(const ml_ledger_list_t *l, const json_t *properties, size_t *len)
{
    json_out_t o;
    jo_init(&o, 96 + l->n * 96);
    jo_obj(&o);
    jo_key(&o, "version");
    jo_int(&o, ML_MD_FORMAT_VERSION);
    jo_key(&o, "ledgers");
    jo_arr(&o);
    for (size_t i = 0; i < l->n; i++) {
        const ml_ledger_info_t *li = &l->v[i];
        jo_obj(&o);
        jo_key(&o, "ledger_id");
        jo_int(&o, li->ledger_id);
        jo_key(&o, "entries");
        jo_int(&o, li->entries);
        jo_key(&o, "size_bytes");
        jo_int(&o, li->size_bytes);
        jo_key(&o, "closed_ms");
        jo_int(&o, li->closed_ms);
        jo_end(&o);
    }
    jo_end(&o);
    if (properties) {
        jo_key(&o, "properties");
        if (json_object_size(properties) == 0) {
            jo_raw(&o, "{}", 2);
        } else {
            char *p = json_dumps(properties, JSON_COMPACT);
            if (!p && !o.err)
                o.err = -ENOMEM;
            if (p)
                jo_raw(&o, p, strlen(p));
            free(p);
        }
    }
    jo_end(&o);
    return jo_finish(&o, len, NULL);
}

static int decode_ledger(json_t *item, ml_ledger_list_t *l)
{
    json_int_t id, entries, size, closed;
    if (json_unpack(item, "{s:I,s:I,s:I,s:I}", "ledger_id", &id, "entries", &entries, "size_bytes",
                    &size, "closed_ms", &closed) != 0)
        return QE_CORRUPT;
    if (id < 0 || entries < 0 || size < 0 || closed < 0 ||
        (l->n > 0 && l->v[l->n - 1].ledger_id >= id))
        return QE_CORRUPT;
    int rc = ml_list_append(l, id);
    if (rc < 0)
        return rc;
    l->v[l->n - 1] = (ml_ledger_info_t){id, entries, size, closed};
    return 0;
}

int ml_md_decode(const void *buf, size_t len, ml_ledger_list_t *l, json_t **properties)
{
    json_error_t err;
    json_t *root = json_loadb(buf, len, 0, &err);
    json_t *arr = root ? json_object_get(root, "ledgers") : NULL;
    json_t *props = root ? json_object_get(root, "properties") : NULL;
    int rc = 0;
    if (!root || !json_is_array(arr) || (props && !json_is_object(props)) ||
        json_integer_value(json_object_get(root, "version")) != ML_MD_FORMAT_VERSION)
        rc = QE_CORRUPT;
    for (size_t i = 0; rc == 0 && i < json_array_size(arr); i++)
        rc = decode_ledger(json_array_get(arr, i), l);
    if (rc == 0)
        *properties = props ? json_deep_copy(props) : json_object();
    json_decref(root);
    if (rc < 0)
        log_error("managed", "managed ledger metadata rejected: %s", q_strerror(rc));
    return rc;
}

/* ------------------------------------------------------ write queue -- */

static void md_issue(managed_ledger_t *ml);

static void waiters_complete(ml_waiter_t *w, int rc)
{
    while (w) {
        ml_waiter_t *next = w->next;
        w->cb(rc, w->arg);
        free(w);
        w = next;
    }
}

static void md_written(int rc, const md_stat_t *stat, void *arg)
{
    managed_ledger_t *ml = arg;
    assert(ml->md_writing);
    if (rc == 0) {
        ml->md_version = stat->version;
    } else {
        log_error("managed", "%s: metadata write failed: %s", ml->name, q_strerror(rc));
        if (rc == QE_BAD_VERSION || rc == QE_EXISTS)
            ml->state = ML_FENCED;
    }
    ml_waiter_t *done = ml->md_waiting;
    ml->md_waiting = NULL;
    ml->md_writing = false;
    waiters_complete(done, rc);
    if (ml->md_next)
        md_issue(ml);
    ml_release(ml);
}

static void md_issue(managed_ledger_t *ml)
{
    assert(!ml->md_writing && ml->md_next);
    size_t len = 0;
    char *buf = ml_md_encode(&ml->ledgers, ml->properties, &len);
    ml->md_writing = true;
    ml->md_waiting = ml->md_next;
    ml->md_next = NULL;
    int rc = buf ? 0 : -ENOMEM;
    if (rc == 0) {
        ml_hold(ml);
        rc = md_put(ml->f->md, ml->path, buf, len, ml->md_version, NULL, md_written, ml);
        if (rc < 0)
            ml->holds--;
    }
    free(buf);
    if (rc < 0) {
        log_error("managed", "%s: metadata write refused: %s", ml->name, q_strerror(rc));
        ml_waiter_t *w = ml->md_waiting;
        ml->md_waiting = NULL;
        ml->md_writing = false;
        while (w) {
            ml_waiter_t *next = w->next;
            ml_post_done(ml, w->cb, w->arg, rc);
            free(w);
            w = next;
        }
    }
}

int ml_md_write(managed_ledger_t *ml, ml_done_cb cb, void *arg)
{
    ml_waiter_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (ml_waiter_t){.cb = cb, .arg = arg};
    ml_waiter_t **pp = &ml->md_next;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
    if (!ml->md_writing)
        md_issue(ml);
    return 0;
}
