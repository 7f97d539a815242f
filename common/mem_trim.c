/*
 * mem_trim.c — malloc_trim after a burst, when quiet (rules: mem_trim.h).
 */
#include "common/mem_trim.h"

#include "common/clock.h"
#include "common/heap.h"
#include "common/log.h"

bool qtrim_due(qtrim_state_t *s, uint64_t activity_now)
{
    if (!s->started) {
        s->started = true;
        s->last = activity_now;
        return false;
    }
    uint64_t delta = activity_now >= s->last ? activity_now - s->last : 0;
    s->last = activity_now;
    s->since_trim += delta;
    if (delta >= QTRIM_QUIET_BYTES || s->since_trim < QTRIM_BURST_BYTES)
        return false;
    s->since_trim = 0;
    return true;
}

static void qtrim_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    qtrim_t *t = w->data;
    if (!qtrim_due(&t->state, t->activity(t->arg)))
        return;
    uint64_t t0 = clock_mono_us();
    bool released = qheap_release();
    log_debug("memory", "quiet after a burst: freed heap memory %s in %.1f ms",
              released ? "returned" : "already returned", (double)(clock_mono_us() - t0) / 1000.0);
}

void qtrim_start(qtrim_t *t, struct ev_loop *loop, double interval_s, qtrim_activity_fn activity,
                 void *arg)
{
    *t = (qtrim_t){.activity = activity, .arg = arg};
    ev_timer_init(&t->timer, qtrim_tick, interval_s, interval_s);
    t->timer.data = t;
    ev_timer_start(loop, &t->timer);
    ev_unref(loop);
}

void qtrim_stop(qtrim_t *t, struct ev_loop *loop)
{
    if (!ev_is_active(&t->timer))
        return;
    ev_ref(loop);
    ev_timer_stop(loop, &t->timer);
}
