/*
 * cache.c — write cache (memtable) and read cache (LRU) of the bookie; see
 * cache.h for ownership and threading.
 *
 * Write cache invariants: nslots is a power of two and count <= nslots / 2, so
 * a linear probe always meets an empty slot; every item index appears in
 * exactly one slot; bytes == sum over items with data of len + overhead.
 * Items are never removed from the array (a dropped item keeps its slot with
 * data = NULL), so indices stay stable.
 *
 * Read cache invariants: every node is in exactly one bucket chain and in the
 * LRU list; bytes == sum of len + overhead over nodes, and bytes <= max_bytes
 * after every put.
 */
#include "storage/bookie/cache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ write cache -- */

void write_cache_init(write_cache_t *wc)
{
    memset(wc, 0, sizeof *wc);
}

void write_cache_clear(write_cache_t *wc)
{
    for (uint32_t i = 0; i < wc->count; i++)
        qbuf_unref(wc->items[i].data);
    free(wc->items);
    free(wc->slots);
    write_cache_init(wc);
}

static uint32_t *wc_find_slot(const write_cache_t *wc, int64_t ledger_id, int64_t entry_id)
{
    uint32_t mask = wc->nslots - 1;
    uint32_t i = (uint32_t)cache_hash(ledger_id, entry_id) & mask;
    for (;;) {
        uint32_t v = wc->slots[i];
        if (v == 0)
            return &wc->slots[i];
        const wc_item_t *it = &wc->items[v - 1];
        if (it->ledger_id == ledger_id && it->entry_id == entry_id)
            return &wc->slots[i];
        i = (i + 1) & mask;
    }
}

static int wc_grow(write_cache_t *wc)
{
    if (wc->count + 1 > wc->cap) {
        uint32_t cap = wc->cap ? wc->cap * 2 : 256;
        wc_item_t *items = realloc(wc->items, (size_t)cap * sizeof *items);
        if (!items)
            return -ENOMEM;
        wc->items = items;
        wc->cap = cap;
    }
    if ((wc->count + 1) * 2 > wc->nslots) {
        uint32_t n = wc->nslots ? wc->nslots * 2 : 512;
        uint32_t *slots = calloc(n, sizeof *slots);
        if (!slots)
            return -ENOMEM;
        free(wc->slots);
        wc->slots = slots;
        wc->nslots = n;
        for (uint32_t k = 0; k < wc->count; k++)
            *wc_find_slot(wc, wc->items[k].ledger_id, wc->items[k].entry_id) = k + 1;
    }
    return 0;
}

int write_cache_put(write_cache_t *wc, int64_t ledger_id, int64_t entry_id, qbuf_t *data)
{
    return write_cache_put_at(wc, ledger_id, entry_id, data, 0, 0);
}

static uint64_t wc_item_cost(const wc_item_t *it)
{
    return (it->data ? it->len : 0) + WRITE_CACHE_ITEM_OVERHEAD;
}

int write_cache_put_at(write_cache_t *wc, int64_t ledger_id, int64_t entry_id, qbuf_t *data,
                       uint32_t log_id, uint64_t log_off)
{
    assert(data != NULL);
    wc_item_t nv = {.ledger_id = ledger_id,
                    .entry_id = entry_id,
                    .data = log_id ? NULL : data,
                    .log_id = log_id,
                    .log_off = log_off,
                    .len = data->len};
    if (wc->nslots) {
        uint32_t *s = wc_find_slot(wc, ledger_id, entry_id);
        if (*s) {
            wc_item_t *it = &wc->items[*s - 1];
            if (!it->dropped)
                wc->bytes -= wc_item_cost(it);
            qbuf_unref(it->data);
            *it = nv;
            wc->bytes += wc_item_cost(it);
            if (log_id)
                qbuf_unref(data);
            return 0;
        }
    }
    int rc = wc_grow(wc);
    if (rc)
        return rc;
    uint32_t *s = wc_find_slot(wc, ledger_id, entry_id);
    assert(*s == 0);
    wc->items[wc->count] = nv;
    *s = ++wc->count;
    wc->bytes += wc_item_cost(&nv);
    if (log_id)
        qbuf_unref(data); /* durable in its direct log: reads go there */
    return 0;
}

qbuf_t *write_cache_get(const write_cache_t *wc, int64_t ledger_id, int64_t entry_id)
{
    const wc_item_t *it = write_cache_find(wc, ledger_id, entry_id);
    return it ? it->data : NULL;
}

const wc_item_t *write_cache_find(const write_cache_t *wc, int64_t ledger_id, int64_t entry_id)
{
    if (!wc || wc->count == 0)
        return NULL;
    uint32_t *s = wc_find_slot(wc, ledger_id, entry_id);
    const wc_item_t *it = *s ? &wc->items[*s - 1] : NULL;
    return it && !it->dropped ? it : NULL;
}

void write_cache_drop_ledger(write_cache_t *wc, int64_t ledger_id)
{
    for (uint32_t i = 0; i < wc->count; i++) {
        wc_item_t *it = &wc->items[i];
        if (it->ledger_id == ledger_id && !it->dropped) {
            wc->bytes -= wc_item_cost(it);
            qbuf_unref(it->data);
            it->data = NULL;
            it->dropped = true;
        }
    }
}

/* ------------------------------------------------------------- read cache -- */

struct rc_node {
    rc_node_t *hnext;       /* bucket chain */
    rc_node_t *prev, *next; /* LRU list: prev is more recently used */
    int64_t ledger_id, entry_id;
    qbuf_t *data;
};

int read_cache_init(read_cache_t *rc, uint64_t max_bytes)
{
    memset(rc, 0, sizeof *rc);
    rc->nbuckets = 1024;
    rc->buckets = calloc(rc->nbuckets, sizeof *rc->buckets);
    rc->max_bytes = max_bytes;
    return rc->buckets ? 0 : -ENOMEM;
}

void read_cache_free(read_cache_t *rc)
{
    rc_node_t *n = rc->mru;
    while (n) {
        rc_node_t *next = n->next;
        qbuf_unref(n->data);
        free(n);
        n = next;
    }
    free(rc->buckets);
    memset(rc, 0, sizeof *rc);
}

static rc_node_t **rc_bucket(read_cache_t *rc, int64_t ledger_id, int64_t entry_id)
{
    return &rc->buckets[cache_hash(ledger_id, entry_id) & (rc->nbuckets - 1)];
}

static void rc_list_unlink(read_cache_t *rc, rc_node_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        rc->mru = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        rc->lru = n->prev;
    n->prev = n->next = NULL;
}

static void rc_list_push_front(read_cache_t *rc, rc_node_t *n)
{
    n->prev = NULL;
    n->next = rc->mru;
    if (rc->mru)
        rc->mru->prev = n;
    rc->mru = n;
    if (!rc->lru)
        rc->lru = n;
}

static void rc_drop(read_cache_t *rc, rc_node_t *n)
{
    rc_node_t **pp = rc_bucket(rc, n->ledger_id, n->entry_id);
    while (*pp != n)
        pp = &(*pp)->hnext;
    *pp = n->hnext;
    rc_list_unlink(rc, n);
    rc->bytes -= n->data->len + READ_CACHE_NODE_OVERHEAD;
    rc->count--;
    qbuf_unref(n->data);
    free(n);
}

static void rc_maybe_grow(read_cache_t *rc)
{
    if (rc->count < rc->nbuckets)
        return;
    uint32_t n = rc->nbuckets * 2;
    rc_node_t **b = calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains; still correct */
    free(rc->buckets);
    rc->buckets = b;
    rc->nbuckets = n;
    for (rc_node_t *x = rc->mru; x; x = x->next) {
        rc_node_t **pp = rc_bucket(rc, x->ledger_id, x->entry_id);
        x->hnext = *pp;
        *pp = x;
    }
}

static rc_node_t *rc_lookup(read_cache_t *rc, int64_t ledger_id, int64_t entry_id)
{
    for (rc_node_t *n = *rc_bucket(rc, ledger_id, entry_id); n; n = n->hnext)
        if (n->ledger_id == ledger_id && n->entry_id == entry_id)
            return n;
    return NULL;
}

qbuf_t *read_cache_get(read_cache_t *rc, int64_t ledger_id, int64_t entry_id)
{
    rc_node_t *n = rc_lookup(rc, ledger_id, entry_id);
    if (!n)
        return NULL;
    rc_list_unlink(rc, n);
    rc_list_push_front(rc, n);
    return n->data;
}

void read_cache_remove(read_cache_t *rc, int64_t ledger_id, int64_t entry_id)
{
    rc_node_t *n = rc_lookup(rc, ledger_id, entry_id);
    if (n)
        rc_drop(rc, n);
}

void read_cache_put(read_cache_t *rc, int64_t ledger_id, int64_t entry_id, qbuf_t *data)
{
    uint64_t need = (uint64_t)data->len + READ_CACHE_NODE_OVERHEAD;
    read_cache_remove(rc, ledger_id, entry_id);
    if (need > rc->max_bytes)
        return;
    while (rc->bytes + need > rc->max_bytes && rc->lru)
        rc_drop(rc, rc->lru);
    rc_node_t *n = calloc(1, sizeof *n);
    if (!n)
        return; /* a cache may forget */
    n->ledger_id = ledger_id;
    n->entry_id = entry_id;
    n->data = qbuf_ref(data);
    rc_node_t **pp = rc_bucket(rc, ledger_id, entry_id);
    n->hnext = *pp;
    *pp = n;
    rc_list_push_front(rc, n);
    rc->bytes += need;
    rc->count++;
    assert(rc->bytes <= rc->max_bytes);
    rc_maybe_grow(rc);
}
