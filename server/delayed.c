/*
 * delayed.c — the delayed-delivery index of a subscription (delayed.h): a
 * delay_queue_t (delay_queue.c: the time-ordered index itself, no broker
 * types) plus the subscription's timer and the hooks the dispatcher calls.
 *
 * Invariants, on top of delay_queue.h's:
 *   1. the queue holds at most cfg.delayed_max entries (+1 read batch: the
 *      dispatcher stops reading once delayed_full);
 *   2. the timer, when armed, fires at delay_queue_next_ms(), +1 ms.
 * Releasing takes the due entries (up to RELEASE_MAX per call and while the
 * replay set is below RELEASE_REPLAY_MAX), sorted by position, and merges them
 * into the replay set in one pass.
 */
#include "server/delayed.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "server/delay_queue.h"

#define RELEASE_MAX 10000
#define RELEASE_REPLAY_MAX 50000
#define RETRY_S 0.2

typedef struct delayed_index {
    subscription_t *sub;
    delay_queue_t q;
    ev_timer timer;
    bool timer_armed;
    int64_t timer_at_ms;
} delayed_index_t;

static void delayed_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* --------------------------------------------------------------- index -- */

static delayed_index_t *index_get(subscription_t *s)
{
    if (s->delayed)
        return s->delayed;
    delayed_index_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->sub = s;
    /* The bucket width is fixed for the index's life (delay_queue invariant 2). */
    uint32_t w = s->topic->broker->cfg.delivery.delayed_bucket_ms;
    delay_queue_init(&d->q, w ? w : 1000);
    ev_timer_init(&d->timer, delayed_timer_cb, 0, 0);
    d->timer.data = d;
    s->delayed = d;
    return d;
}

/* --------------------------------------------------------------- timer -- */

static void timer_arm(delayed_index_t *d, int64_t now_ms)
{
    struct ev_loop *loop = d->sub->topic->broker->loop;
    if (delay_queue_count(&d->q) == 0) {
        if (d->timer_armed)
            ev_timer_stop(loop, &d->timer);
        d->timer_armed = false;
        return;
    }
    int64_t at = delay_queue_next_ms(&d->q);
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
    if (!d || delay_queue_add(&d->q, pos_pack(pos), deliver_at_ms, (uint16_t)key_hash) < 0)
        goto no_memory;
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

/* Merges sorted items into the sorted replay set (duplicates dropped). */
static int replay_merge(subscription_t *s, const delay_entry_t *items, size_t n)
{
    if (subscription_replay_reserve(s, s->replay_count + n) < 0)
        return -1;
    /* Merge from the back, in place (positions and their key hashes). */
    size_t i = s->replay_count, j = n, w = s->replay_count + n;
    while (j > 0) {
        ml_pos_t p = pos_unpack(items[j - 1].pos);
        int c = i > 0 ? ml_pos_cmp(s->replay[i - 1], p) : -1;
        if (c > 0) {
            --w, --i;
            s->replay[w] = s->replay[i];
            s->replay_keys[w] = s->replay_keys[i];
        } else {
            j--;
            if (c == 0)
                continue; /* already queued for replay, and counted */
            --w;
            s->replay[w] = p;
            s->replay_keys[w] = items[j].key_hash;
            subscription_replay_count_key(s, items[j].key_hash);
        }
    }
    /* w - i slots were left unused by duplicates: close the gap. */
    if (w > i) {
        size_t tail = s->replay_count + n - w;
        memmove(&s->replay[i], &s->replay[w], tail * sizeof *s->replay);
        memmove(&s->replay_keys[i], &s->replay_keys[w], tail * sizeof *s->replay_keys);
    }
    s->replay_count = i + (s->replay_count + n - w);
    return 0;
}

void delayed_release_due(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d || delay_queue_count(&d->q) == 0)
        return;
    int64_t now = clock_wall_ms();
    if (s->replay_count >= RELEASE_REPLAY_MAX || !s->cursor) {
        timer_arm(d, now - 1000); /* retry soon */
        return;
    }
    size_t room = RELEASE_REPLAY_MAX - s->replay_count;
    if (room > RELEASE_MAX)
        room = RELEASE_MAX;
    delay_entry_t *out = NULL;
    size_t nout = 0;
    if (delay_queue_take_due(&d->q, now, room, &out, &nout) < 0) {
        timer_arm(d, now - 1000); /* no memory now: retry soon, never early */
        return;
    }
    if (nout > 0) {
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
    return s->delayed &&
           delay_queue_count(&s->delayed->q) >= s->topic->broker->cfg.delivery.delayed_max;
}

uint64_t delayed_count(const subscription_t *s)
{
    return s->delayed ? delay_queue_count(&s->delayed->q) : 0;
}

static bool pos_acked(uint64_t pos, void *arg)
{
    return ml_cursor_is_acked(arg, pos_unpack(pos));
}

void delayed_trim(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d || !s->cursor)
        return;
    delay_queue_remove_if(&d->q, pos_acked, s->cursor);
    timer_arm(d, clock_wall_ms());
}

void delayed_clear(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d)
        return;
    delay_queue_clear(&d->q);
    timer_arm(d, clock_wall_ms());
}

void delayed_free(subscription_t *s)
{
    delayed_index_t *d = s->delayed;
    if (!d)
        return;
    if (d->timer_armed)
        ev_timer_stop(s->topic->broker->loop, &d->timer);
    delay_queue_clear(&d->q);
    free(d);
    s->delayed = NULL;
}
