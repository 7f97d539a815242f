/*
 * bookie_client.c — the bk_client_* calls: thin dispatch through the ops
 * vtable of a handle (bookie_client.h), so the ledger client is written once
 * for local bookies, remote bookies and the fake bookies of tests.
 *
 * Implementations: bookie_client_local.c (an in-process bookie_t),
 * bookie_client_remote.c (the bookie RPC over TCP). Every call returns 0 when
 * its callback will be called (later, never inline), or a negative code and
 * then the callback is never called.
 */
#include "storage/ledger/bookie_client.h"

#include <assert.h>
#include <stddef.h>

void bk_client_free(bk_client_t *c)
{
    if (!c)
        return;
    assert(c->ops && c->ops->free);
    c->ops->free(c);
}

const char *bk_client_id(const bk_client_t *c)
{
    return c->id;
}

int bk_client_add(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac, qbuf_t *data,
                  bk_add_cb cb, void *arg)
{
    assert(c && c->ops->add && cb);
    return c->ops->add(c, ledger_id, entry_id, lac, data, cb, arg);
}

int bk_client_recovery_add(bk_client_t *c, int64_t ledger_id, int64_t entry_id, int64_t lac,
                           qbuf_t *data, bk_add_cb cb, void *arg)
{
    assert(c && c->ops->add && cb);
    if (!c->ops->recovery_add)
        return c->ops->add(c, ledger_id, entry_id, lac, data, cb, arg);
    return c->ops->recovery_add(c, ledger_id, entry_id, lac, data, cb, arg);
}

int bk_client_read(bk_client_t *c, int64_t ledger_id, int64_t entry_id, bk_read_cb cb, void *arg)
{
    assert(c && c->ops->read && cb);
    return c->ops->read(c, ledger_id, entry_id, cb, arg);
}

int bk_client_read_lac(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    assert(c && c->ops->read_lac && cb);
    return c->ops->read_lac(c, ledger_id, cb, arg);
}

int bk_client_fence(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    assert(c && c->ops->fence && cb);
    return c->ops->fence(c, ledger_id, cb, arg);
}

int bk_client_last_entry(bk_client_t *c, int64_t ledger_id, bk_lac_cb cb, void *arg)
{
    assert(c && c->ops->last_entry && cb);
    return c->ops->last_entry(c, ledger_id, cb, arg);
}

int bk_client_delete_ledger(bk_client_t *c, int64_t ledger_id, bk_done_cb cb, void *arg)
{
    assert(c && c->ops->delete_ledger && cb);
    return c->ops->delete_ledger(c, ledger_id, cb, arg);
}

bool bk_client_writable(bk_client_t *c)
{
    assert(c);
    return !c->ops->writable || c->ops->writable(c);
}
