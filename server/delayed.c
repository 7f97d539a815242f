/*
 * delayed.c — the delayed-delivery index of a subscription (delayed.h).
 *
 * Layout: buckets sorted by start time (start = deliver_at rounded down to
 * the bucket width W); each bucket an unsorted array of 16-byte items
 *
 *   offset size meaning
 *   0      8    packed position (pos_pack: ledger << 24 | entry)
 *   8      4    deliver_at - bucket start, ms (< W)
 *   12     2    Key_Shared hash slot (0..65535)
 *   14     2    reserved, 0
 *
 * plus the bucket's earliest deliver_at. Invariants:
 *   1. buckets[i].start < buckets[i+1].start; no bucket is empty;
 *   2. every item of bucket i is due in [start, start + W);
 *   3. count = the sum of the buckets' item counts <= cfg.delayed_max (+1
 *      read batch: the dispatcher stops reading once full);
 *   4. the timer, when armed, fires at buckets[0].min_at.
 * So if bucket 0 still holds an item that is not due, no later bucket holds a
 * due one. Releasing collects due items (up to RELEASE_MAX per call and while
 * the replay set is below RELEASE_REPLAY_MAX), sorts them by position and
 * merges them into the replay set in one pass.
 */
#include "server/delayed.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

#define RELEASE_MAX 10000
#define RELEASE_REPLAY_MAX 50000
#define RETRY_S 0.2

typedef struct delayed_item {
    uint64_t pos;
    uint32_t offset_ms;
    uint16_t key_hash;
    uint16_t reserved;
} delayed_item_t;

typedef struct delayed_bucket {
    int64_t start_ms;
    int64_t min_at_ms;
    delayed_item_t *items;
    uint32_t n, cap;
} delayed_bucket_t;

typedef struct delayed_index {
    subscription_t *sub;
    delayed_bucket_t *buckets;
    size_t nbuckets, bucket_cap;
    uint64_t count;
    ev_timer timer;
    bool timer_armed;
    int64_t timer_at_ms;
} delayed_index_t;

_Static_assert(sizeof(delayed_item_t) == 16, "delayed index items are 16 bytes");

static void delayed_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ------------------------------------------------------------- buckets -- */

static delayed_index_t *index_get(subscription_t *s)
{
    if (s->delayed)
        return s->delayed;
    delayed_index_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->sub = s;
    ev_timer_init(&d->timer, delayed_timer_cb, 0, 0);
    d->timer.data = d;
    s->delayed = d;
    return d;
}

/* Index of the bucket starting at start, or where it would go. */
static size_t bucket_find(const delayed_index_t *d, int64_t start, bool *found)
{
    size_t lo = 0, hi = d->nbuckets;
    if (hi > 0 && d->buckets[hi - 1].start_ms == start) { /* common: increasing times */
        *found = true;
        return hi - 1;
    }
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->buckets[mid].start_ms == start) {
            *found = true;
            return mid;
        }
        if (d->buckets[mid].start_ms < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static delayed_bucket_t *bucket_get(delayed_index_t *d, int64_t start)
{
    bool found;
    size_t i = bucket_find(d, start, &found);
    if (found)
        return &d->buckets[i];
    if (d->nbuckets == d->bucket_cap) {
        size_t ncap = d->bucket_cap ? d->bucket_cap + d->bucket_cap / 4 + 4 : 16;
        delayed_bucket_t *nb = realloc(d->buckets, ncap * sizeof *nb);
        if (!nb)
            return NULL;
        d->buckets = nb;
        d->bucket_cap = ncap;
    }
    memmove(&d->buckets[i + 1], &d->buckets[i], (d->nbuckets - i) * sizeof *d->buckets);
    d->buckets[i] = (delayed_bucket_t){.start_ms = start, .min_at_ms = INT64_MAX};
    d->nbuckets++;
    return &d->buckets[i];
}

static void bucket_remove(delayed_index_t *d, size_t i)
{
    free(d->buckets[i].items);
    memmove(&d->buckets[i], &d->buckets[i + 1], (d->nbuckets - i - 1) * sizeof *d->buckets);
    d->nbuckets--;
}

static int bucket_push(delayed_bucket_t *b, delayed_item_t it)
{
    if (b->n == b->cap) {
        uint32_t ncap = b->cap ? b->cap + b->cap / 4 + 4 : 4;
        delayed_item_t *ni = realloc(b->items, (size_t)ncap * sizeof *ni);
        if (!ni)
            return -1;
        b->items = ni;
        b->cap = ncap;
    }
    b->items[b->n++] = it;
    return 0;
}

/* --------------------------------------------------------------- timer -- */

static void timer_arm(delayed_index_t *d, int64_t now_ms)
{
    struct ev_loop *loop = d->sub->topic->broker->loop;
    if (d->nbuckets == 0) {
        if (d->timer_armed)
            ev_timer_stop(loop, &d->timer);
        d->timer_armed = false;
        return;
    }
    int64_t at = d->buckets[0].min_at_ms;
    if (d->timer_armed && d->timer_at_ms == at)
        return;
    if (d->timer_armed)
        ev_timer_stop(loop, &d->timer);
    /* +1 ms: the wall clock must have passed deliver_at when it fires. */
    double after = at > now_ms ? (double)(at - now_ms + 1) / 1000.0 : RETRY_S;
    ev_timer_set(&d->timer, after, 0);
    ev_timer_start(loop, &d->timer);
    d->timer_armed = true;
    d->timer_at_ms = at;
}

static void delayed_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    delayed_index_t *d = w->data;
    d->timer_armed = false;
    subscription_t *s = d->sub;
    delayed_release_due(s);
    subscription_dispatch(s);
}

/* ---------------------------------------------------------------- hold -- */

static const broker_delivery_config_t *dcfg(const subscription_t *s)
{
    return &s->topic->broker->cfg.delivery;
}

bool delayed_hold(subscription_t *s, ml_pos_t pos, int64_t deliver_at_ms, uint32_t key_hash)
{
    if (deliver_at_ms <= 0 || !dcfg(s)->delayed_enabled || !s->cursor)
        return false;
    if (s->type != PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared &&
        s->type != PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared)
        return false;
    int64_t now = clock_wall_ms();
    if (deliver_at_ms <= now)
        return false;
    delayed_index_t *d = index_get(s);
    if (!d)
        goto no_memory;
    int64_t w = dcfg(s)->delayed_bucket_ms;
    int64_t start = deliver_at_ms - deliver_at_ms % w;
    delayed_bucket_t *b = bucket_get(d, start);
    if (!b)
        goto no_memory;
    delayed_item_t it = {pos_pack(pos), (uint32_t)(deliver_at_ms - start), (uint16_t)key_hash, 0};
    if (bucket_push(b, it) < 0) {
        if (b->n == 0) {
            bool found;
            bucket_remove(d, bucket_find(d, start, &found));
        }
        goto no_memory;
    }
    if (deliver_at_ms < b->min_at_ms)
        b->min_at_ms = deliver_at_ms;
    d->count++;
    timer_arm(d, now);
    return true;
no_memory:
    /* Sending early would break the contract: re-read it later instead. */
    log_error("delayed", "%s / %s: out of memory for the delayed index; rewinding", s->topic->name,
              s->name);
    ml_cursor_rewind(s->cursor);
    return true;
}

/* ------------------------------------------------------------- release -- */

static int pos_key_cmp(const void *a, const void *b)
{
    uint64_t x = ((const delayed_item_t *)a)->pos, y = ((const delayed_item_t *)b)->pos;
    return x < y ? -1 : x > y;
}

/* Merges sorted items into the sorted replay set (duplicates dropped). */
static int replay_merge(subscription_t *s, const delayed_item_t *items, size_t n)
{
    size_t need = s->replay_count + n;
    if (need > s->replay_cap) {
        size_t ncap = s->replay_cap ? s->replay_cap : 64;
        while (ncap < need)
            ncap *= 2;
        ml_pos_t *nr = realloc(s->replay, ncap * sizeof *nr);
        if (!nr)
            return -1;
        s->replay = nr;
        s->replay_cap = ncap;
    }
    bool key_shared = s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
    /* Merge from the back, in place. */
    size_t i = s->replay_count, j = n, w = s->replay_count + n;
    while (j > 0) {
        ml_pos_t p = pos_unpack(items[j - 1].pos);
        int c = i > 0 ? ml_pos_cmp(s->replay[i - 1], p) : -1;
        if (c > 0) {
            s->replay[--w] = s->replay[--i];
        } else {
            j--;
            if (c == 0)
                continue; /* already queued for replay */
            s->replay[--w] = p;
            if (key_shared)
                subscription_replay_count_key(s, items[j].key_hash);
        }
    }
    /* w - i slots were left unused by duplicates: close the gap. */
    if (w > i) {
        memmove(&s->replay[i], &s->replay[w], (s->replay_count + n - w) * sizeof *s->replay);
    }
    s->replay_count = i + (s->replay_count + n - w);
    return 0;
}

void delayed_release_due(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d || d->count == 0)
        return;
    int64_t now = clock_wall_ms();
    if (s->replay_count >= RELEASE_REPLAY_MAX || !s->cursor) {
        timer_arm(d, now - 1000); /* retry soon */
        return;
    }
    size_t room = RELEASE_REPLAY_MAX - s->replay_count;
    if (room > RELEASE_MAX)
        room = RELEASE_MAX;
    delayed_item_t *out = NULL;
    size_t nout = 0, cap = 0;
    while (d->nbuckets > 0 && d->buckets[0].start_ms <= now && nout < room) {
        delayed_bucket_t *b = &d->buckets[0];
        uint32_t keep = 0;
        int64_t min_at = INT64_MAX;
        for (uint32_t k = 0; k < b->n; k++) {
            delayed_item_t it = b->items[k];
            int64_t at = b->start_ms + it.offset_ms;
            if (at <= now && nout < room) {
                if (nout == cap) {
                    size_t ncap = cap ? cap * 2 : 256;
                    delayed_item_t *no = realloc(out, ncap * sizeof *no);
                    if (!no) {
                        b->items[keep++] = it;
                        if (at < min_at)
                            min_at = at;
                        continue;
                    }
                    out = no;
                    cap = ncap;
                }
                out[nout++] = it;
            } else {
                b->items[keep++] = it;
                if (at < min_at)
                    min_at = at;
            }
        }
        d->count -= b->n - keep;
        b->n = keep;
        b->min_at_ms = min_at;
        if (keep > 0)
            break; /* invariant 2: nothing later is due */
        bucket_remove(d, 0);
    }
    if (nout > 0) {
        qsort(out, nout, sizeof *out, pos_key_cmp);
        if (replay_merge(s, out, nout) < 0) {
            log_error("delayed", "%s / %s: out of memory releasing delayed entries; rewinding",
                      s->topic->name, s->name);
            ml_cursor_rewind(s->cursor);
        }
        s->replay_stalled = false;
    }
    free(out);
    timer_arm(d, now);
}

/* -------------------------------------------------------------- others -- */

bool delayed_full(const subscription_t *s)
{
    return s->delayed && s->delayed->count >= s->topic->broker->cfg.delivery.delayed_max;
}

uint64_t delayed_count(const subscription_t *s)
{
    return s->delayed ? s->delayed->count : 0;
}

void delayed_trim(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d || !s->cursor)
        return;
    for (size_t i = 0; i < d->nbuckets;) {
        delayed_bucket_t *b = &d->buckets[i];
        uint32_t keep = 0;
        int64_t min_at = INT64_MAX;
        for (uint32_t k = 0; k < b->n; k++) {
            if (ml_cursor_is_acked(s->cursor, pos_unpack(b->items[k].pos)))
                continue;
            b->items[keep++] = b->items[k];
            if (b->start_ms + b->items[k].offset_ms < min_at)
                min_at = b->start_ms + b->items[k].offset_ms;
        }
        d->count -= b->n - keep;
        b->n = keep;
        b->min_at_ms = min_at;
        if (keep == 0)
            bucket_remove(d, i);
        else
            i++;
    }
    timer_arm(d, clock_wall_ms());
}

void delayed_clear(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d)
        return;
    while (d->nbuckets > 0)
        bucket_remove(d, d->nbuckets - 1);
    d->count = 0;
    timer_arm(d, clock_wall_ms());
}

void delayed_free(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d)
        return;
    if (d->timer_armed)
        ev_timer_stop(s->topic->broker->loop, &d->timer);
    for (size_t i = 0; i < d->nbuckets; i++)
        free(d->buckets[i].items);
    free(d->buckets);
    free(d);
    s->delayed = NULL;
}
