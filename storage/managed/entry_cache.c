/*
 * entry_cache.c — the factory-wide cache of recently added entries, so that
 * tailing readers are served from memory and never reach a bookie.
 *
 * Keyed by (owner managed ledger, ledger id, entry id); a chained hash table
 * for lookups plus one insertion-ordered list for eviction (oldest first), and
 * a list per owner, oldest first (found in a map by owner), so that dropping or
 * evicting one managed ledger's entries costs those entries, not the whole
 * cache: with 100,000 topics each holding an entry, closing them all walked
 * 10^10 nodes. Every entry is charged its payload plus ML_CACHE_OVERHEAD bytes
 * against bytes_max, so the number of entries is bounded too. The cache holds
 * one reference on each qbuf_t; readers borrow it and qbuf_ref what they keep.
 *
 * Three ways out besides drops: the size bound (oldest first, on put), age
 * (ml_cache_evict_older: the FIFO is in insertion time order, so it pops from
 * the head) and readers' progress (ml_cache_evict_before: an owner's entries
 * below a position, from the oldest end of its list). An entry that has aged
 * but that a reader is still expected to read is given another period instead,
 * a bounded number of times (Pulsar's PIP-430 "expected read count": moved to
 * the FIFO's tail with the time of the pass).
 *
 * Invariants: bytes <= bytes_max after every put; every node is in exactly one
 * bucket chain, in the FIFO list and in its owner's list; count == nodes in the
 * list; an owner is in the owners map iff its list is not empty; added_at does
 * not decrease along the FIFO.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "storage/managed/managed_int.h"

#define ML_CACHE_OVERHEAD 64u
#define ML_CACHE_BUCKETS_MIN 1024u

typedef struct owner_list owner_list_t;

typedef struct cache_node {
    struct cache_node *hnext;         /* bucket chain */
    struct cache_node *prev, *next;   /* FIFO, oldest at head */
    struct cache_node *older, *newer; /* the owner's list */
    owner_list_t *ol;
    const void *owner;
    ml_pos_t pos;
    double added_at; /* or the time of its last extension */
    uint32_t extensions;
    qbuf_t *data;
} cache_node_t;

struct owner_list {
    cache_node_t *oldest, *newest;
};

struct ml_cache {
    uint64_t bytes_max;
    cache_node_t **buckets;
    size_t nbuckets; /* power of two */
    cache_node_t *head, *tail;
    qmap64_t *owners; /* owner -> its owner_list_t (owned) */
    ml_cache_stats_t st;
};

static size_t node_cost(const qbuf_t *b)
{
    return (size_t)b->len + ML_CACHE_OVERHEAD;
}

static size_t hash_key(const void *owner, ml_pos_t pos)
{
    uint64_t h = (uint64_t)(uintptr_t)owner * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)pos.ledger_id * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)pos.entry_id * 0x165667B19E3779F9ull;
    return (size_t)(h ^ (h >> 29));
}

ml_cache_t *ml_cache_new(uint64_t bytes_max)
{
    ml_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->bytes_max = bytes_max;
    c->nbuckets = ML_CACHE_BUCKETS_MIN;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    c->owners = qmap64_new();
    if (!c->buckets || !c->owners) {
        free(c->buckets);
        qmap64_free(c->owners);
        free(c);
        return NULL;
    }
    return c;
}

static cache_node_t **bucket_of(ml_cache_t *c, const void *owner, ml_pos_t pos)
{
    return &c->buckets[hash_key(owner, pos) & (c->nbuckets - 1)];
}

static void fifo_unlink(ml_cache_t *c, cache_node_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        c->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        c->tail = n->prev;
}

static void fifo_append(ml_cache_t *c, cache_node_t *n)
{
    n->prev = c->tail;
    n->next = NULL;
    if (c->tail)
        c->tail->next = n;
    else
        c->head = n;
    c->tail = n;
}

static void node_unlink(ml_cache_t *c, cache_node_t *n)
{
    cache_node_t **pp = bucket_of(c, n->owner, n->pos);
    while (*pp != n)
        pp = &(*pp)->hnext;
    *pp = n->hnext;
    fifo_unlink(c, n);
    owner_list_t *ol = n->ol;
    if (n->older)
        n->older->newer = n->newer;
    else
        ol->oldest = n->newer;
    if (n->newer)
        n->newer->older = n->older;
    else
        ol->newest = n->older;
    if (!ol->oldest) {
        qmap64_remove(c->owners, (uint64_t)(uintptr_t)n->owner);
        free(ol);
    }
    c->st.bytes -= node_cost(n->data);
    c->st.entries--;
    qbuf_unref(n->data);
    free(n);
}

void ml_cache_free(ml_cache_t *c)
{
    if (!c)
        return;
    while (c->head)
        node_unlink(c, c->head);
    assert(c->st.bytes == 0 && c->st.entries == 0 && qmap64_size(c->owners) == 0);
    qmap64_free(c->owners);
    free(c->buckets);
    free(c);
}

/* Doubles the table when chains grow long (best effort: on OOM keeps it). */
static void maybe_grow(ml_cache_t *c)
{
    if (c->st.entries <= 2 * c->nbuckets)
        return;
    size_t nb = c->nbuckets * 2;
    cache_node_t **b = calloc(nb, sizeof *b);
    if (!b)
        return;
    for (cache_node_t *n = c->head; n; n = n->next) {
        size_t i = hash_key(n->owner, n->pos) & (nb - 1);
        n->hnext = b[i];
        b[i] = n;
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

qbuf_t *ml_cache_get(ml_cache_t *c, const void *owner, ml_pos_t pos)
{
    for (cache_node_t *n = *bucket_of(c, owner, pos); n; n = n->hnext)
        if (n->owner == owner && ml_pos_cmp(n->pos, pos) == 0)
            return n->data;
    return NULL;
}

/* The owner's list, created empty if absent; NULL when out of memory. */
static owner_list_t *owner_list_of(ml_cache_t *c, const void *owner)
{
    owner_list_t *ol = qmap64_get(c->owners, (uint64_t)(uintptr_t)owner);
    if (ol)
        return ol;
    ol = calloc(1, sizeof *ol);
    if (ol && qmap64_put(c->owners, (uint64_t)(uintptr_t)owner, ol) < 0) {
        free(ol);
        ol = NULL;
    }
    return ol;
}

void ml_cache_put(ml_cache_t *c, const void *owner, ml_pos_t pos, qbuf_t *data, double now)
{
    size_t cost = node_cost(data);
    if (cost > c->bytes_max || ml_cache_get(c, owner, pos))
        return;
    while (c->head && c->st.bytes + cost > c->bytes_max) {
        node_unlink(c, c->head);
        c->st.evictions++;
    }
    if (c->tail && now < c->tail->added_at)
        now = c->tail->added_at; /* keeps the FIFO in time order */
    cache_node_t *n = malloc(sizeof *n);
    owner_list_t *ol = n ? owner_list_of(c, owner) : NULL;
    if (!ol) {
        free(n);
        return; /* a cache may always decline */
    }
    *n = (cache_node_t){.owner = owner,
                        .ol = ol,
                        .pos = pos,
                        .added_at = now,
                        .data = qbuf_ref(data),
                        .older = ol->newest};
    if (ol->newest)
        ol->newest->newer = n;
    else
        ol->oldest = n;
    ol->newest = n;
    cache_node_t **b = bucket_of(c, owner, pos);
    n->hnext = *b;
    *b = n;
    fifo_append(c, n);
    c->st.bytes += cost;
    c->st.entries++;
    c->st.inserts++;
    assert(c->st.bytes <= c->bytes_max);
    maybe_grow(c);
}

void ml_cache_drop(ml_cache_t *c, const void *owner, int64_t ledger_id)
{
    owner_list_t *ol = qmap64_get(c->owners, (uint64_t)(uintptr_t)owner);
    cache_node_t *n = ol ? ol->oldest : NULL;
    while (n) { /* the last unlink frees ol: only nodes are touched */
        cache_node_t *next = n->newer;
        if (ledger_id < 0 || n->pos.ledger_id == ledger_id)
            node_unlink(c, n);
        n = next;
    }
}

size_t ml_cache_evict_before(ml_cache_t *c, const void *owner, ml_pos_t pos)
{
    owner_list_t *ol = qmap64_get(c->owners, (uint64_t)(uintptr_t)owner);
    cache_node_t *n = ol ? ol->oldest : NULL;
    size_t k = 0;
    /* An owner adds in position order, so its list is sorted: stop at the
     * first entry at or past pos. */
    while (n && ml_pos_cmp(n->pos, pos) < 0) {
        cache_node_t *next = n->newer;
        node_unlink(c, n);
        k++;
        n = next;
    }
    c->st.evictions_read += k;
    return k;
}

size_t ml_cache_evict_older(ml_cache_t *c, double before, double now, const ml_cache_keep_t *keep)
{
    size_t k = 0;
    if (c->tail && now < c->tail->added_at)
        now = c->tail->added_at; /* keeps the FIFO in time order */
    /* A kept entry goes behind every entry put so far, with the time `now`: the
     * pass stops at it if it comes round (now >= before); each is kept at most
     * extensions_max times in any case. */
    while (c->head && c->head->added_at < before) {
        cache_node_t *n = c->head;
        if (keep && n->extensions < keep->extensions_max &&
            keep->expected(n->owner, n->pos, keep->arg)) {
            fifo_unlink(c, n);
            n->added_at = now;
            n->extensions++;
            fifo_append(c, n);
            c->st.extensions++;
            continue;
        }
        node_unlink(c, n);
        k++;
    }
    c->st.evictions_age += k;
    return k;
}

bool ml_cache_oldest(const ml_cache_t *c, const void *owner, ml_pos_t *out)
{
    const owner_list_t *ol = qmap64_get(c->owners, (uint64_t)(uintptr_t)owner);
    if (!ol)
        return false;
    *out = ol->oldest->pos;
    return true;
}

bool ml_cache_empty(const ml_cache_t *c)
{
    return c->head == NULL;
}

void ml_cache_get_stats(const ml_cache_t *c, ml_cache_stats_t *out)
{
    *out = c->st;
}
