/*
 * quire_perf_timer.c — timers of sub-millisecond precision for quire-perf's
 * pacing and batching (quire_perf.h, "precise timers").
 *
 * libev's epoll backend waits whole milliseconds, rounded up: a timer due in
 * 0.3 ms fires after 1 ms or more. Every paced message and every batch then
 * waited up to a millisecond longer than asked, and that wait was counted as
 * the server's publish latency. Here one timerfd (CLOCK_MONOTONIC, absolute
 * time, nanoseconds) is armed at the earliest deadline of a binary min-heap of
 * timers, and its readiness is one ev_io of the loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "tools/quire_perf.h"

static bool before(const perf_ptimer_t *a, const perf_ptimer_t *b)
{
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void place(perf_ptimers_t *ts, perf_ptimer_t *t, size_t i)
{
    ts->heap[i] = t;
    t->slot = i + 1;
}

static void sift_up(perf_ptimers_t *ts, size_t i)
{
    perf_ptimer_t *t = ts->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(t, ts->heap[parent]))
            break;
        place(ts, ts->heap[parent], i);
        i = parent;
    }
    place(ts, t, i);
}

static void sift_down(perf_ptimers_t *ts, size_t i)
{
    perf_ptimer_t *t = ts->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= ts->n)
            break;
        if (c + 1 < ts->n && before(ts->heap[c + 1], ts->heap[c]))
            c++;
        if (!before(ts->heap[c], t))
            break;
        place(ts, ts->heap[c], i);
        i = c;
    }
    place(ts, t, i);
}

/* Arms the timerfd at the earliest deadline (disarms it when none), unless it
 * is armed there already. */
static void arm(perf_ptimers_t *ts)
{
    uint64_t due = ts->n ? ts->heap[0]->due_ns : 0;
    if (due == ts->armed_ns)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (due) {
        its.it_value.tv_sec = (time_t)(due / 1000000000u);
        its.it_value.tv_nsec = (long)(due % 1000000000u);
    }
    if (timerfd_settime(ts->fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        ts->armed_ns = due;
}

static void expired_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    perf_ptimers_t *ts = w->data;
    uint64_t ticks;
    while (read(ts->fd, &ticks, sizeof ticks) > 0)
        ;
    ts->armed_ns = 0; /* a fired timerfd is disarmed */
    /* The timers due now, each once: one restarted by its callback for a time
     * already past waits for the next wake-up (the timerfd fires at once). */
    uint64_t now = clock_mono_ns(), round = ++ts->round;
    while (ts->n && ts->heap[0]->due_ns <= now && ts->heap[0]->round != round) {
        perf_ptimer_t *t = ts->heap[0];
        perf_ptimer_stop(ts, t);
        t->round = round;
        if (ts->late_us)
            hist_record(ts->late_us, (now - t->due_ns) / 1000);
        t->cb(t);
    }
    arm(ts);
}

int perf_ptimers_init(perf_ptimers_t *ts, struct ev_loop *loop)
{
    memset(ts, 0, sizeof *ts);
    ts->loop = loop;
    ts->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ts->fd < 0)
        return -errno;
    ev_io_init(&ts->io, expired_cb, ts->fd, EV_READ);
    ts->io.data = ts;
    ev_io_start(loop, &ts->io);
    ev_unref(loop); /* the timers' own watchers decide whether the loop runs on */
    return 0;
}

void perf_ptimers_free(perf_ptimers_t *ts)
{
    if (!ts->loop)
        return;
    ev_ref(ts->loop);
    ev_io_stop(ts->loop, &ts->io);
    close(ts->fd);
    for (size_t i = 0; i < ts->n; i++)
        ts->heap[i]->slot = 0;
    free(ts->heap);
    memset(ts, 0, sizeof *ts);
}

void perf_ptimer_init(perf_ptimer_t *t, perf_ptimer_cb cb, void *data)
{
    memset(t, 0, sizeof *t);
    t->cb = cb;
    t->data = data;
}

int perf_ptimer_start(perf_ptimers_t *ts, perf_ptimer_t *t, uint64_t due_ns)
{
    if (t->slot)
        perf_ptimer_stop(ts, t);
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 64;
        perf_ptimer_t **h = realloc(ts->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        ts->heap = h;
        ts->cap = cap;
    }
    t->due_ns = due_ns ? due_ns : 1; /* 0 would disarm the timerfd */
    t->seq = ++ts->seq;
    ts->heap[ts->n++] = t;
    sift_up(ts, ts->n - 1);
    arm(ts);
    return 0;
}

void perf_ptimer_stop(perf_ptimers_t *ts, perf_ptimer_t *t)
{
    if (!t->slot)
        return;
    size_t i = t->slot - 1;
    t->slot = 0;
    perf_ptimer_t *last = ts->heap[--ts->n];
    if (i < ts->n) {
        ts->heap[i] = last;
        if (i > 0 && before(last, ts->heap[(i - 1) / 2]))
            sift_up(ts, i);
        else
            sift_down(ts, i);
    }
    arm(ts);
}
