/*
 * delay_queue.c — the time-ordered index of delayed delivery (delay_queue.h):
 * buckets by due time, unsorted 16-byte items within a bucket.
 *
 * Adding finds the bucket by binary search (the last bucket first: times
 * mostly increase) and appends. Taking walks bucket 0 onwards while buckets
 * start at or before now; a bucket that keeps a not-yet-due item ends the walk
 * (invariant 2 of the header). It counts what it will take first, so it
 * allocates once and leaves the queue untouched when that fails.
 */
#include "server/delay_queue.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(delay_item_t) == 16, "delayed index items are 16 bytes");
_Static_assert(sizeof(delay_bucket_t) == 32, "delayed index buckets are 32 bytes");

/* ------------------------------------------------------------- buckets -- */

void delay_queue_init(delay_queue_t *q, uint32_t bucket_ms)
{
    assert(bucket_ms > 0);
    memset(q, 0, sizeof *q);
    q->bucket_ms = bucket_ms;
}

/* Index of the bucket starting at start, or where it would go. */
static size_t bucket_find(const delay_queue_t *q, int64_t start, bool *found)
{
    size_t lo = 0, hi = q->nbuckets;
    if (hi > 0 && q->buckets[hi - 1].start_ms == start) { /* common: increasing times */
        *found = true;
        return hi - 1;
    }
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (q->buckets[mid].start_ms == start) {
            *found = true;
            return mid;
        }
        if (q->buckets[mid].start_ms < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* The bucket starting at start, made (empty) if missing; NULL: no memory. */
static delay_bucket_t *bucket_get(delay_queue_t *q, int64_t start)
{
    bool found;
    size_t i = bucket_find(q, start, &found);
    if (found)
        return &q->buckets[i];
    if (q->nbuckets == q->bucket_cap) {
        size_t ncap = q->bucket_cap ? q->bucket_cap + q->bucket_cap / 4 + 4 : 16;
        delay_bucket_t *nb = realloc(q->buckets, ncap * sizeof *nb);
        if (!nb)
            return NULL;
        q->bytes += (ncap - q->bucket_cap) * sizeof *nb;
        q->buckets = nb;
        q->bucket_cap = ncap;
    }
    memmove(&q->buckets[i + 1], &q->buckets[i], (q->nbuckets - i) * sizeof *q->buckets);
    q->buckets[i] = (delay_bucket_t){.start_ms = start, .min_at_ms = INT64_MAX};
    q->nbuckets++;
    return &q->buckets[i];
}

static void bucket_remove(delay_queue_t *q, size_t i)
{
    q->bytes -= (size_t)q->buckets[i].cap * sizeof(delay_item_t);
    free(q->buckets[i].items);
    memmove(&q->buckets[i], &q->buckets[i + 1], (q->nbuckets - i - 1) * sizeof *q->buckets);
    q->nbuckets--;
}

static int bucket_push(delay_queue_t *q, delay_bucket_t *b, delay_item_t it)
{
    if (b->n == b->cap) {
        uint32_t ncap = b->cap ? b->cap + b->cap / 4 + 4 : 4;
        delay_item_t *ni = realloc(b->items, (size_t)ncap * sizeof *ni);
        if (!ni)
            return -ENOMEM;
        q->bytes += (size_t)(ncap - b->cap) * sizeof *ni;
        b->items = ni;
        b->cap = ncap;
    }
    b->items[b->n++] = it;
    return 0;
}

/* Recomputes b's earliest time after items left it. */
static void bucket_rescan(delay_bucket_t *b)
{
    int64_t min_at = INT64_MAX;
    for (uint32_t k = 0; k < b->n; k++)
        if (b->start_ms + b->items[k].offset_ms < min_at)
            min_at = b->start_ms + b->items[k].offset_ms;
    b->min_at_ms = min_at;
}

void delay_queue_clear(delay_queue_t *q)
{
    for (size_t i = 0; i < q->nbuckets; i++)
        free(q->buckets[i].items);
    free(q->buckets);
    delay_queue_init(q, q->bucket_ms);
}

/* ----------------------------------------------------------------- add -- */

int delay_queue_add(delay_queue_t *q, uint64_t pos, int64_t deliver_at_ms, uint16_t key_hash)
{
    assert(deliver_at_ms >= 0);
    int64_t start = deliver_at_ms - deliver_at_ms % q->bucket_ms;
    delay_bucket_t *b = bucket_get(q, start);
    if (!b)
        return -ENOMEM;
    delay_item_t it = {pos, (uint32_t)(deliver_at_ms - start), key_hash, 0};
    if (bucket_push(q, b, it) < 0) {
        if (b->n == 0) { /* made for this item: invariant 1 */
            bool found;
            bucket_remove(q, bucket_find(q, start, &found));
        }
        return -ENOMEM;
    }
    if (deliver_at_ms < b->min_at_ms)
        b->min_at_ms = deliver_at_ms;
    q->count++;
    return 0;
}

/* ---------------------------------------------------------------- take -- */

static int entry_pos_cmp(const void *a, const void *b)
{
    uint64_t x = ((const delay_entry_t *)a)->pos, y = ((const delay_entry_t *)b)->pos;
    return x < y ? -1 : x > y;
}

/* How many entries delay_queue_take_due(now, max) takes. */
static size_t due_count(const delay_queue_t *q, int64_t now_ms, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < q->nbuckets && q->buckets[i].start_ms <= now_ms && n < max; i++) {
        const delay_bucket_t *b = &q->buckets[i];
        uint32_t kept = 0;
        for (uint32_t k = 0; k < b->n; k++) {
            if (b->start_ms + b->items[k].offset_ms <= now_ms && n < max)
                n++;
            else
                kept++;
        }
        if (kept > 0)
            break;
    }
    return n;
}

int delay_queue_take_due(delay_queue_t *q, int64_t now_ms, size_t max, delay_entry_t **out,
                         size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t want = due_count(q, now_ms, max);
    if (want == 0)
        return 0;
    delay_entry_t *e = malloc(want * sizeof *e);
    if (!e)
        return -ENOMEM;
    size_t got = 0;
    while (q->nbuckets > 0 && q->buckets[0].start_ms <= now_ms && got < want) {
        delay_bucket_t *b = &q->buckets[0];
        uint32_t keep = 0;
        for (uint32_t k = 0; k < b->n; k++) {
            delay_item_t it = b->items[k];
            int64_t at = b->start_ms + it.offset_ms;
            if (at <= now_ms && got < want)
                e[got++] = (delay_entry_t){it.pos, at, it.key_hash};
            else
                b->items[keep++] = it;
        }
        q->count -= b->n - keep;
        b->n = keep;
        if (keep > 0) {
            bucket_rescan(b);
            break; /* invariant 2: nothing later is due */
        }
        bucket_remove(q, 0);
    }
    assert(got == want);
    qsort(e, got, sizeof *e, entry_pos_cmp);
    *out = e;
    *n = got;
    return 0;
}

/* -------------------------------------------------------------- others -- */

uint64_t delay_queue_remove_if(delay_queue_t *q, bool (*drop)(uint64_t pos, void *arg), void *arg)
{
    uint64_t removed = 0;
    for (size_t i = 0; i < q->nbuckets;) {
        delay_bucket_t *b = &q->buckets[i];
        uint32_t keep = 0;
        for (uint32_t k = 0; k < b->n; k++)
            if (!drop(b->items[k].pos, arg))
                b->items[keep++] = b->items[k];
        removed += b->n - keep;
        b->n = keep;
        if (keep == 0) {
            bucket_remove(q, i);
            continue;
        }
        bucket_rescan(b);
        i++;
    }
    q->count -= removed;
    return removed;
}

int64_t delay_queue_next_ms(const delay_queue_t *q)
{
    return q->nbuckets ? q->buckets[0].min_at_ms : INT64_MAX;
}

uint64_t delay_queue_count(const delay_queue_t *q)
{
    return q->count;
}

size_t delay_queue_memory_bytes(const delay_queue_t *q)
{
    return q->bytes;
}
