/*
 * ledger_list.c — the ordered list of ledgers of one managed ledger, and the
 * position arithmetic on it.
 *
 * Entry ids are contiguous inside a ledger (0..entries-1) but ledger ids jump,
 * so the position after (L, e) is (L, e+1) while L has more entries, else
 * (L', 0) for the next ledger L' holding entries. The current ledger (the one
 * being written, always the last) is special: the position after its last
 * entry is (current, entries), where the next add will land, even while it is
 * empty. A position may name a ledger no longer in the list (trimmed) or the
 * "before first" entry (L, -1); every function here accepts such positions.
 *
 * Invariants: v sorted by ledger_id, ids unique, current_id (if >= 0) is the
 * last element. Pure data; no I/O.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

void ml_list_free(ml_ledger_list_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
    l->current_id = -1;
}

int ml_list_append(ml_ledger_list_t *l, int64_t id)
{
    assert(l->n == 0 || l->v[l->n - 1].ledger_id < id);
    if (l->n >= ML_LEDGERS_MAX) {
        log_warn("managed", "ledger list full (%d ledgers)", ML_LEDGERS_MAX);
        return QE_TOO_LARGE;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 2; /* most logs hold a ledger or two */
        ml_ledger_info_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (ml_ledger_info_t){.ledger_id = id};
    return 0;
}

size_t ml_list_lower_bound(const ml_ledger_list_t *l, int64_t id)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].ledger_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

ml_ledger_info_t *ml_list_find(const ml_ledger_list_t *l, int64_t id)
{
    size_t i = ml_list_lower_bound(l, id);
    return (i < l->n && l->v[i].ledger_id == id) ? &l->v[i] : NULL;
}

void ml_list_drop_front(ml_ledger_list_t *l, size_t k)
{
    assert(k <= l->n);
    ml_move(l->v, l->v + k, (l->n - k) * sizeof *l->v);
    l->n -= k;
}

ml_pos_t ml_list_next(const ml_ledger_list_t *l, ml_pos_t pos)
{
    for (size_t i = ml_list_lower_bound(l, pos.ledger_id); i < l->n; i++) {
        const ml_ledger_info_t *li = &l->v[i];
        bool current = li->ledger_id == l->current_id;
        if (li->ledger_id == pos.ledger_id) {
            if (pos.entry_id + 1 < li->entries || current)
                return (ml_pos_t){li->ledger_id, pos.entry_id + 1};
        } else if (li->entries > 0 || current) {
            return (ml_pos_t){li->ledger_id, 0};
        }
    }
    return (ml_pos_t){pos.ledger_id, pos.entry_id + 1};
}

/* Entries in (a, b], or their bytes at each ledger's average entry size. */
static uint64_t list_span(const ml_ledger_list_t *l, ml_pos_t a, ml_pos_t b, bool bytes)
{
    uint64_t total = 0;
    if (ml_pos_cmp(a, b) >= 0)
        return 0;
    for (size_t i = ml_list_lower_bound(l, a.ledger_id); i < l->n; i++) {
        const ml_ledger_info_t *li = &l->v[i];
        if (li->ledger_id > b.ledger_id)
            break;
        int64_t lo = li->ledger_id == a.ledger_id ? a.entry_id + 1 : 0;
        int64_t hi = li->entries - 1;
        if (li->ledger_id == b.ledger_id && b.entry_id < hi)
            hi = b.entry_id;
        if (hi < lo)
            continue;
        uint64_t n = (uint64_t)(hi - lo + 1);
        if (!bytes)
            total += n;
        else if (li->size_bytes > 0) /* entries > 0 here: hi >= lo */
            total += n * ((uint64_t)li->size_bytes / (uint64_t)li->entries);
    }
    return total;
}

uint64_t ml_list_count(const ml_ledger_list_t *l, ml_pos_t a, ml_pos_t b)
{
    return list_span(l, a, b, false);
}

uint64_t ml_list_bytes(const ml_ledger_list_t *l, ml_pos_t a, ml_pos_t b)
{
    return list_span(l, a, b, true);
}

bool ml_list_seek(const ml_ledger_list_t *l, ml_pos_t pos, ml_pos_t *out)
{
    for (size_t i = ml_list_lower_bound(l, pos.ledger_id); i < l->n; i++) {
        const ml_ledger_info_t *li = &l->v[i];
        int64_t e = li->ledger_id == pos.ledger_id ? pos.entry_id : 0;
        if (e < 0)
            e = 0;
        if (e < li->entries) {
            *out = (ml_pos_t){li->ledger_id, e};
            return true;
        }
    }
    return false;
}

ml_pos_t ml_list_last(const ml_ledger_list_t *l)
{
    for (size_t i = l->n; i > 0; i--)
        if (l->v[i - 1].entries > 0)
            return (ml_pos_t){l->v[i - 1].ledger_id, l->v[i - 1].entries - 1};
    return (ml_pos_t){-1, -1};
}

uint64_t ml_list_total_size(const ml_ledger_list_t *l)
{
    uint64_t s = 0;
    for (size_t i = 0; i < l->n; i++)
        s += (uint64_t)l->v[i].size_bytes;
    return s;
}

uint64_t ml_list_total_entries(const ml_ledger_list_t *l)
{
    uint64_t s = 0;
    for (size_t i = 0; i < l->n; i++)
        s += (uint64_t)l->v[i].entries;
    return s;
}
