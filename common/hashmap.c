/*
 * hashmap.c — linear-probing hash table with tombstones (see hashmap.h).
 *
 * Invariants: cap is 0 (no slots yet) or a power of two; used (live +
 * tombstones) <= cap * 3/4, so a probe always ends at an empty slot. Growth
 * rehashes live entries only.
 *
 * A slot is three words (24 bytes; 40 until 2026-12-02, when the maps of key
 * hashes and unacknowledged entries of a hundred Key_Shared subscriptions held
 * 24 MB in scenario (e) of the benchmark). String maps: the key's hash, the
 * value, the key (NULL: empty; DEAD_KEY: removed). Integer maps: the key
 * itself (its hash is recomputed when the table grows), the value, the state.
 */
#include "common/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_EMPTY = 0, SLOT_LIVE = 1, SLOT_DEAD = 2 };

/* Slots of the first allocation (a power of two). With 100,000 topics every
 * topic's and subscription's maps add up: an empty map holds no slots. */
#define MAP_CAP_FIRST 4

typedef struct {
    uint64_t k; /* string maps: the key's hash; integer maps: the key */
    void *value;
    union {
        char *skey;    /* string maps: the key (copy), NULL or DEAD_KEY */
        uintptr_t tag; /* integer maps: SLOT_EMPTY, SLOT_LIVE or SLOT_DEAD */
    } u;
} slot_t;

static char dead_key_mark;
#define DEAD_KEY (&dead_key_mark)

struct qmap {
    slot_t *slots;
    size_t cap, live, used;
    bool string_keys;
    bool runs;         /* integer maps: keys placed in blocks of RUN_KEYS (qmap64_new_runs) */
    uint32_t rehashes; /* grows and purges so far: each moved the entries */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static int slot_state(const qmap_t *m, const slot_t *s)
{
    if (!m->string_keys)
        return (int)s->u.tag;
    return s->u.skey == NULL ? SLOT_EMPTY : s->u.skey == DEAD_KEY ? SLOT_DEAD : SLOT_LIVE;
}

/* qmap64_new_runs: RUN_KEYS consecutive keys (the same key but for its low
 * RUN_BITS bits) share one hash but for those bits, so they fill neighbouring
 * slots (a block aligned on RUN_KEYS when the table has that many). Blocks are
 * spread over the table as single keys are, so probes stay as short as with
 * keys mixed whole; a window of keys that moves forward touches a block's
 * cache lines one after the other instead of one line per key. */
#define RUN_BITS 4
#define RUN_KEYS (1u << RUN_BITS)

/* An integer key's hash. */
static uint64_t hash_key(const qmap_t *m, uint64_t k)
{
    if (!m->runs)
        return hash_u64(k);
    return hash_u64(k >> RUN_BITS) << RUN_BITS | (k & (RUN_KEYS - 1));
}

/* The hash a live slot was placed by. */
static uint64_t slot_hash(const qmap_t *m, const slot_t *s)
{
    return m->string_keys ? s->k : hash_key(m, s->k);
}

static qmap_t *map_new(bool string_keys)
{
    qmap_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->string_keys = string_keys; /* no slots until the first put: most maps stay tiny */
    return m;
}

static void map_free(qmap_t *m)
{
    if (!m)
        return;
    if (m->string_keys)
        for (size_t i = 0; i < m->cap; i++)
            if (slot_state(m, &m->slots[i]) == SLOT_LIVE)
                free(m->slots[i].u.skey);
    free(m->slots);
    free(m);
}

/* h: the key's hash; sk (string maps) or ik (integer maps): the key. */
static bool key_eq(const qmap_t *m, const slot_t *s, uint64_t h, const char *sk, uint64_t ik)
{
    if (!m->string_keys)
        return s->k == ik;
    return s->k == h && strcmp(s->u.skey, sk) == 0;
}

static slot_t *find(const qmap_t *m, uint64_t h, const char *sk, uint64_t ik)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        slot_t *s = &m->slots[i];
        int st = slot_state(m, s);
        if (st == SLOT_EMPTY)
            return NULL;
        if (st == SLOT_LIVE && key_eq(m, s, h, sk, ik))
            return s;
    }
}

static int grow(qmap_t *m)
{
    size_t ncap = m->cap == 0                 ? MAP_CAP_FIRST
                  : m->live * 2 >= m->cap / 2 ? m->cap * 2
                                              : m->cap; /* else just purge tombstones */
    slot_t *ns = calloc(ncap, sizeof(slot_t));          /* all empty: NULL keys, tag 0 */
    if (!ns)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        slot_t *s = &m->slots[i];
        if (slot_state(m, s) != SLOT_LIVE)
            continue;
        size_t j = slot_hash(m, s) & (ncap - 1);
        while (slot_state(m, &ns[j]) != SLOT_EMPTY)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->used = m->live;
    m->rehashes++;
    return 0;
}

/* The slot of key: found, or a new one holding NULL; NULL when out of memory. */
static slot_t *find_or_insert(qmap_t *m, uint64_t h, const char *sk, uint64_t ik)
{
    slot_t *s = find(m, h, sk, ik);
    if (s)
        return s;
    if ((m->used + 1) * 4 > m->cap * 3 && grow(m) < 0)
        return NULL;
    char *copy = NULL;
    if (m->string_keys && !(copy = strdup(sk)))
        return NULL;
    size_t mask = m->cap - 1, i = h & mask;
    while (slot_state(m, &m->slots[i]) == SLOT_LIVE)
        i = (i + 1) & mask;
    if (slot_state(m, &m->slots[i]) == SLOT_EMPTY)
        m->used++;
    slot_t *n = &m->slots[i];
    n->value = NULL;
    if (m->string_keys) {
        n->k = h;
        n->u.skey = copy;
    } else {
        n->k = ik;
        n->u.tag = SLOT_LIVE;
    }
    m->live++;
    return n;
}

static int put(qmap_t *m, uint64_t h, const char *sk, uint64_t ik, void *value)
{
    slot_t *s = find_or_insert(m, h, sk, ik);
    if (!s)
        return -ENOMEM;
    s->value = value;
    return 0;
}

static void *remove_slot(qmap_t *m, slot_t *s)
{
    if (!s)
        return NULL;
    void *v = s->value;
    s->value = NULL;
    if (m->string_keys) {
        free(s->u.skey);
        s->u.skey = DEAD_KEY;
    } else {
        s->u.tag = SLOT_DEAD;
    }
    m->live--;
    return v;
}

static bool next(const qmap_t *m, qmap_iter_t *it, slot_t **out)
{
    while (it->pos < m->cap) {
        slot_t *s = &m->slots[it->pos++];
        if (slot_state(m, s) == SLOT_LIVE) {
            *out = s;
            return true;
        }
    }
    return false;
}

qmap_t *qmap_new(void)
{
    return map_new(true);
}
void qmap_free(qmap_t *m)
{
    map_free(m);
}
void *qmap_get(const qmap_t *m, const char *key)
{
    slot_t *s = find(m, hash_str(key), key, 0);
    return s ? s->value : NULL;
}
int qmap_put(qmap_t *m, const char *key, void *value)
{
    return put(m, hash_str(key), key, 0, value);
}
void *qmap_remove(qmap_t *m, const char *key)
{
    return remove_slot(m, find(m, hash_str(key), key, 0));
}
size_t qmap_size(const qmap_t *m)
{
    return m->live;
}

uint32_t qmap_rehashes(const qmap_t *m)
{
    return m->rehashes;
}
bool qmap_next(const qmap_t *m, qmap_iter_t *it, const char **key, void **value)
{
    slot_t *s;
    if (!next(m, it, &s))
        return false;
    if (key)
        *key = s->u.skey;
    if (value)
        *value = s->value;
    return true;
}

qmap64_t *qmap64_new(void)
{
    return map_new(false);
}
void qmap64_free(qmap64_t *m)
{
    map_free(m);
}
qmap64_t *qmap64_new_runs(void)
{
    qmap_t *m = map_new(false);
    if (m)
        m->runs = true;
    return m;
}
void *qmap64_get(const qmap64_t *m, uint64_t key)
{
    slot_t *s = find(m, hash_key(m, key), NULL, key);
    return s ? s->value : NULL;
}
int qmap64_put(qmap64_t *m, uint64_t key, void *value)
{
    return put(m, hash_key(m, key), NULL, key, value);
}
void **qmap64_slot(qmap64_t *m, uint64_t key, bool create)
{
    uint64_t h = hash_key(m, key);
    slot_t *s = create ? find_or_insert(m, h, NULL, key) : find(m, h, NULL, key);
    return s ? &s->value : NULL;
}
void *qmap64_remove(qmap64_t *m, uint64_t key)
{
    return remove_slot(m, find(m, hash_key(m, key), NULL, key));
}
size_t qmap64_size(const qmap64_t *m)
{
    return m->live;
}
bool qmap64_next(const qmap64_t *m, qmap_iter_t *it, uint64_t *key, void **value)
{
    slot_t *s;
    if (!next(m, it, &s))
        return false;
    if (key)
        *key = s->k;
    if (value)
        *value = s->value;
    return true;
}
