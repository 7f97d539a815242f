/*
 * bookie_client_local.c — a bk_client_t on an in-process bookie (standalone).
 *
 * Each call becomes one bookie_* call whose callback (on the loop, never
 * inline: bookie.h) forwards the result. The handle tracks its calls still
 * inside the bookie (a doubly linked list, at most BK_LOCAL_PENDING_MAX, past
 * which calls get QE_BUSY) so that bk_client_free() can fail them with
 * QE_CLOSED: it unlinks each, marks it orphaned (owner == NULL) and calls its
 * callback; the bookie's later callback then only frees the orphan. So an
 * orphan lives until the bookie answers it, which bookie_close() guarantees.
 *
 * Memory: a data buffer given to add is referenced by the bookie; an entry
 * given to a read callback is the bookie's, borrowed for the callback only.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/ledger/bookie_client.h"

#define BK_LOCAL_PENDING_MAX 100000

typedef struct bk_local bk_local_t;

typedef enum { BKL_ADD, BKL_READ, BKL_LAC, BKL_DONE } bkl_kind_t;

/* The callback of a call; the member used is the one of its kind. */
typedef union bkl_cb {
    bk_add_cb add;
    bk_read_cb read;
    bk_lac_cb lac;
    bk_done_cb done;
} bkl_cb_t;

typedef struct bkl_call {
    struct bkl_call *prev, *next;
    bk_local_t *owner; /* NULL once orphaned by bk_client_free */
    bkl_kind_t kind;
    bkl_cb_t cb;
    void *arg;
} bkl_call_t;

struct bk_local {
    bk_client_t base;
    bookie_t *bookie;               /* borrowed */
    bkl_call_t *calls, *calls_tail; /* in call order */
    size_t ncalls;
};

/* ----------------------------------------------------------------- calls -- */

static bkl_call_t *call_new(bk_local_t *l, bkl_kind_t kind, bkl_cb_t cb, void *arg, int *rc)
{
    if (l->ncalls >= BK_LOCAL_PENDING_MAX) {
        log_warn("bk-local", "%s: %zu calls pending, refused", l->base.id, l->ncalls);
        *rc = QE_BUSY;
        return NULL;
    }
    bkl_call_t *c = calloc(1, sizeof *c);
    if (!c) {
        *rc = -ENOMEM;
        return NULL;
    }
    c->owner = l;
    c->kind = kind;
    c->arg = arg;
    c->cb = cb;
    c->prev = l->calls_tail;
    if (l->calls_tail)
        l->calls_tail->next = c;
    else
        l->calls = c;
    l->calls_tail = c;
    l->ncalls++;
    return c;
}

static void call_unlink(bkl_call_t *c)
{
    bk_local_t *l = c->owner;
    assert(l && l->ncalls > 0);
    if (c->prev)
        c->prev->next = c->next;
    else
        l->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->calls_tail = c->prev;
    c->prev = c->next = NULL;
    l->ncalls--;
}

/* The bookie refused at once: undo the call, pass rc on. */
static int call_started(bkl_call_t *c, int rc)
{
    if (rc < 0) {
        call_unlink(c);
        free(c);
    }
    return rc;
}

/* Takes the call out of its handle; false if it was orphaned (then freed). */
static bool call_claim(bkl_call_t *c)
{
    if (!c->owner) {
        free(c);
        return false;
    }
    call_unlink(c);
    return true;
}

/* ------------------------------------------------------- bookie callbacks -- */

static void local_add_done(int rc, int64_t ledger_id, int64_t entry_id, void *arg)
{
    (void)ledger_id;
    (void)entry_id;
    bkl_call_t *c = arg;
    if (call_claim(c)) {
        c->cb.add(rc, c->arg);
        free(c);
    }
}

static void local_read_done(int rc, int64_t ledger_id, int64_t entry_id, qbuf_t *entry, int64_t lac,
                            void *arg)
{
    (void)ledger_id;
    (void)entry_id;
    bkl_call_t *c = arg;
    if (call_claim(c)) {
        c->cb.read(rc, rc == 0 ? entry : NULL, lac, c->arg);
        free(c);
    }
}

static void local_lac_done(int rc, int64_t ledger_id, int64_t lac, void *arg)
{
    (void)ledger_id;
    bkl_call_t *c = arg;
    if (call_claim(c)) {
        c->cb.lac(rc, lac, c->arg);
        free(c);
    }
}

static void local_done(int rc, void *arg)
{
    bkl_call_t *c = arg;
    if (call_claim(c)) {
        c->cb.done(rc, c->arg);
        free(c);
    }
}

/* ------------------------------------------------------------------- ops -- */

static int local_add(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, int64_t lac,
                     qbuf_t *data, bk_add_cb cb, void *arg)
{
    bk_local_t *l = (bk_local_t *)bc;
    int rc;
    bkl_call_t *c = call_new(l, BKL_ADD, (bkl_cb_t){.add = cb}, arg, &rc);
    if (!c)
        return rc;
    return call_started(c,
                        bookie_add(l->bookie, ledger_id, entry_id, lac, data, local_add_done, c));
}

/* BookKeeper's RECOVERY_ADD: accepted by a bookie that fenced the ledger. */
static int local_recovery_add(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, int64_t lac,
                              qbuf_t *data, bk_add_cb cb, void *arg)
{
    bk_local_t *l = (bk_local_t *)bc;
    int rc;
    bkl_call_t *c = call_new(l, BKL_ADD, (bkl_cb_t){.add = cb}, arg, &rc);
    if (!c)
        return rc;
    return call_started(
        c, bookie_add_recovery(l->bookie, ledger_id, entry_id, lac, data, local_add_done, c));
}

static int local_read(bk_client_t *bc, int64_t ledger_id, int64_t entry_id, bk_read_cb cb,
                      void *arg)
{
    bk_local_t *l = (bk_local_t *)bc;
    int rc;
    bkl_call_t *c = call_new(l, BKL_READ, (bkl_cb_t){.read = cb}, arg, &rc);
    if (!c)
        return rc;
    return call_started(c, bookie_read(l->bookie, ledger_id, entry_id, local_read_done, c));
}

typedef int (*bookie_lac_fn)(bookie_t *, int64_t, bookie_lac_cb, void *);

static int local_lac_call(bk_client_t *bc, bookie_lac_fn fn, int64_t ledger_id, bk_lac_cb cb,
                          void *arg)
{
    bk_local_t *l = (bk_local_t *)bc;
    int rc;
    bkl_call_t *c = call_new(l, BKL_LAC, (bkl_cb_t){.lac = cb}, arg, &rc);
    if (!c)
        return rc;
    return call_started(c, fn(l->bookie, ledger_id, local_lac_done, c));
}

static int local_read_lac(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    return local_lac_call(bc, bookie_read_lac, ledger_id, cb, arg);
}

static int local_fence(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    return local_lac_call(bc, bookie_fence, ledger_id, cb, arg);
}

static int local_last_entry(bk_client_t *bc, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    return local_lac_call(bc, bookie_last_entry, ledger_id, cb, arg);
}

static int local_delete_ledger(bk_client_t *bc, int64_t ledger_id, bk_done_cb cb, void *arg)
{
    bk_local_t *l = (bk_local_t *)bc;
    int rc;
    bkl_call_t *c = call_new(l, BKL_DONE, (bkl_cb_t){.done = cb}, arg, &rc);
    if (!c)
        return rc;
    return call_started(c, bookie_delete_ledger(l->bookie, ledger_id, local_done, c));
}

/* Fails every call still in the bookie with QE_CLOSED, in call order; they
 * become orphans. */
static void local_free(bk_client_t *bc)
{
    bk_local_t *l = (bk_local_t *)bc;
    while (l->calls) {
        bkl_call_t *c = l->calls;
        call_unlink(c);
        c->owner = NULL;
        switch (c->kind) {
        case BKL_ADD:
            c->cb.add(QE_CLOSED, c->arg);
            break;
        case BKL_READ:
            c->cb.read(QE_CLOSED, NULL, -1, c->arg);
            break;
        case BKL_LAC:
            c->cb.lac(QE_CLOSED, -1, c->arg);
            break;
        case BKL_DONE:
            c->cb.done(QE_CLOSED, c->arg);
            break;
        }
    }
    free(l);
}

static bool local_writable(bk_client_t *bc)
{
    return bookie_writable(((bk_local_t *)bc)->bookie);
}

static const bk_client_ops_t local_ops = {
    .add = local_add,
    .read = local_read,
    .read_lac = local_read_lac,
    .fence = local_fence,
    .last_entry = local_last_entry,
    .delete_ledger = local_delete_ledger,
    .free = local_free,
    .recovery_add = local_recovery_add,
    .writable = local_writable,
};

bk_client_t *bk_client_local(bookie_t *bookie, const char *id)
{
    if (!bookie || !id || strlen(id) >= sizeof(((bk_client_t *)0)->id)) {
        log_error("bk-local", "handle refused: missing bookie or id too long");
        return NULL;
    }
    bk_local_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->base.ops = &local_ops;
    snprintf(l->base.id, sizeof l->base.id, "%s", id);
    l->bookie = bookie;
    return &l->base;
}
