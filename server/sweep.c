/*
 * sweep.c — periodic walks over a map in slices (sweep.h).
 */
#include "server/sweep.h"

#include "common/clock.h"

static void walk_from_start(sweep_t *s)
{
    s->it = (qmap_iter_t){0};
    s->rehashes = qmap_rehashes(*s->map);
}

static void sweep_slice(sweep_t *s)
{
    uint64_t t0 = clock_mono_us();
    uint32_t n = 0;
    bool more = true;
    void *v;
    while (n < SWEEP_SLICE) {
        if (n > 0 && n % SWEEP_CLOCK_EVERY == 0 && clock_mono_us() - t0 >= SWEEP_SLICE_US)
            break;
        if (qmap_rehashes(*s->map) != s->rehashes) { /* the entries moved */
            walk_from_start(s);
            s->restarts++;
        }
        if (!(more = qmap_next(*s->map, &s->it, NULL, &v)))
            break;
        s->visit(s->ctx, v);
        n++;
    }
    s->visits += n;
    if (n > s->slice_max)
        s->slice_max = n;
    if (!more) { /* the map's end */
        s->sweeps++;
        s->walking = s->again;
        if (!s->again)
            return;
        s->again = false; /* from the start, at the next iteration */
        walk_from_start(s);
    }
    ev_timer_set(&s->step, 0., 0.);
    ev_timer_start(s->loop, &s->step);
}

static void step_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    sweep_slice(w->data);
}

static void every_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    sweep_t *s = w->data;
    if (s->walking)
        return; /* the last walk is not done: it goes on */
    s->walking = true;
    walk_from_start(s);
    sweep_slice(s);
}

void sweep_now(sweep_t *s)
{
    if (s->walking) {
        s->again = true;
        return;
    }
    s->walking = true;
    walk_from_start(s);
    sweep_slice(s);
}

void sweep_init(sweep_t *s, struct ev_loop *loop, qmap_t *const *map, double period_s,
                sweep_visit_fn visit, void *ctx)
{
    *s = (sweep_t){.loop = loop, .map = map, .visit = visit, .ctx = ctx};
    ev_timer_init(&s->every, every_cb, period_s, period_s);
    s->every.data = s;
    ev_timer_init(&s->step, step_cb, 0., 0.);
    s->step.data = s;
}

void sweep_start(sweep_t *s)
{
    ev_timer_start(s->loop, &s->every);
}

void sweep_stop(sweep_t *s)
{
    ev_timer_stop(s->loop, &s->every);
    ev_timer_stop(s->loop, &s->step);
    s->walking = false;
    s->again = false;
}
