/*
 * compaction_acks.c — see compaction_acks.h.
 *
 * A hash map from packed position (pos_pack) to either ACKED (a static
 * marker: wholly acknowledged) or a malloc'd bitset of the batch indexes
 * still unacknowledged, plus `upto`, below which everything is acknowledged
 * (cumulative acknowledgements). Invariant: a stored bitset is never all
 * zero (it becomes ACKED instead) and no stored position is <= upto.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/hashmap.h"
#include "server/broker_int.h"
#include "server/compaction_acks.h"

typedef struct cbits {
    size_t words;
    uint64_t w[];
} cbits_t;

struct cacks {
    qmap64_t *map; /* pos_pack(pos) -> &acked_marker or cbits_t* (owned) */
    ml_pos_t upto; /* every position <= upto acknowledged */
};

static char acked_marker;
#define ACKED ((void *)&acked_marker)

cacks_t *cacks_new(void)
{
    cacks_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->map = qmap64_new();
    if (!a->map) {
        free(a);
        return NULL;
    }
    a->upto = ML_POS_EARLIEST;
    return a;
}

static void free_value(void *v)
{
    if (v != ACKED)
        free(v);
}

void cacks_clear(cacks_t *a)
{
    if (!a)
        return;
    qmap_iter_t it = {0};
    uint64_t key;
    void *v;
    while (qmap64_next(a->map, &it, &key, &v)) {
        qmap64_remove(a->map, key);
        free_value(v);
    }
    a->upto = ML_POS_EARLIEST;
}

void cacks_free(cacks_t *a)
{
    if (!a)
        return;
    cacks_clear(a);
    qmap64_free(a->map);
    free(a);
}

size_t cacks_size(const cacks_t *a)
{
    return qmap64_size(a->map);
}

static bool all_zero(const uint64_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i])
            return false;
    return true;
}

/* Stores v (ACKED or a bitset, taken) for pos, replacing and freeing the old. */
static int put(cacks_t *a, ml_pos_t pos, void *v)
{
    uint64_t key = pos_pack(pos);
    void *old = qmap64_get(a->map, key);
    if (!old && qmap64_size(a->map) >= CACKS_ENTRIES_MAX) {
        free_value(v);
        return QE_BUSY;
    }
    if (qmap64_put(a->map, key, v) < 0) {
        free_value(v);
        return -ENOMEM;
    }
    if (old && old != v)
        free_value(old);
    return 0;
}

static cbits_t *bits_new(const uint64_t *w, size_t words)
{
    cbits_t *b = malloc(sizeof *b + words * sizeof b->w[0]);
    if (!b)
        return NULL;
    b->words = words;
    memcpy(b->w, w, words * sizeof b->w[0]);
    return b;
}

int cacks_prerecord(cacks_t *a, ml_pos_t pos, const uint64_t *retained, size_t words)
{
    if (cacks_is_acked(a, pos) || qmap64_get(a->map, pos_pack(pos)))
        return 0;
    while (words > 0 && retained[words - 1] == 0)
        words--;
    if (words == 0)
        return put(a, pos, ACKED);
    cbits_t *b = bits_new(retained, words);
    if (!b)
        return -ENOMEM;
    return put(a, pos, b);
}

int cacks_ack(cacks_t *a, ml_pos_t pos, const uint64_t *ack_set, size_t words)
{
    if (cacks_is_acked(a, pos))
        return 1;
    if (!ack_set || all_zero(ack_set, words)) {
        int rc = put(a, pos, ACKED);
        return rc < 0 ? rc : 1;
    }
    cbits_t *b = qmap64_get(a->map, pos_pack(pos));
    if (!b) {
        b = bits_new(ack_set, words);
        if (!b)
            return -ENOMEM;
        int rc = put(a, pos, b);
        return rc < 0 ? rc : 0;
    }
    if (b->words > words)
        b->words = words;
    for (size_t i = 0; i < b->words; i++)
        b->w[i] &= ack_set[i];
    if (!all_zero(b->w, b->words))
        return 0;
    int rc = put(a, pos, ACKED);
    return rc < 0 ? rc : 1;
}

void cacks_ack_cumulative(cacks_t *a, ml_pos_t pos)
{
    if (ml_pos_cmp(pos, a->upto) <= 0)
        return;
    a->upto = pos;
    qmap_iter_t it = {0};
    uint64_t key;
    void *v;
    while (qmap64_next(a->map, &it, &key, &v)) {
        if (ml_pos_cmp(pos_unpack(key), pos) <= 0) {
            qmap64_remove(a->map, key);
            free_value(v);
        }
    }
}

bool cacks_is_acked(const cacks_t *a, ml_pos_t pos)
{
    if (a->upto.ledger_id >= 0 && ml_pos_cmp(pos, a->upto) <= 0)
        return true;
    return qmap64_get(a->map, pos_pack(pos)) == ACKED;
}

const uint64_t *cacks_bits(const cacks_t *a, ml_pos_t pos, size_t *words)
{
    const cbits_t *b = cacks_is_acked(a, pos) ? NULL : qmap64_get(a->map, pos_pack(pos));
    *words = b ? b->words : 0;
    return b ? b->w : NULL;
}
