/* accept_pause.c — see accept_pause.h. */
#include "common/accept_pause.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"

static void accept_pause_resume(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)revents;
    accept_pause_t *p = t->data;
    for (int i = 0; i < p->npaused; i++)
        ev_io_start(loop, p->paused[i]);
    p->npaused = 0;
}

void accept_pause_init(accept_pause_t *p, struct ev_loop *loop)
{
    memset(p, 0, sizeof *p);
    p->loop = loop;
    ev_timer_init(&p->timer, accept_pause_resume, ACCEPT_PAUSE_S, 0.0);
    p->timer.data = p;
}

bool accept_pause_if_exhausted(accept_pause_t *p, ev_io *w, int err, const char *who)
{
    if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
        return false;
    for (int i = 0; i < p->npaused; i++)
        if (p->paused[i] == w)
            return true;
    if (p->npaused == ACCEPT_PAUSE_WATCHERS_MAX)
        return true; /* cannot happen with our listeners; the watcher keeps running */
    ev_io_stop(p->loop, w);
    p->paused[p->npaused++] = w;
    log_warn(who, "accept: %s; not accepting for %.0f ms", strerror(err), ACCEPT_PAUSE_S * 1000);
    if (!ev_is_active(&p->timer))
        ev_timer_start(p->loop, &p->timer);
    return true;
}

void accept_pause_cancel(accept_pause_t *p)
{
    if (p->loop)
        ev_timer_stop(p->loop, &p->timer);
    p->npaused = 0;
}
