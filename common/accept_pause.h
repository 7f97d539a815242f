/*
 * accept_pause.h — keeps a listener from spinning when accept() fails for lack
 * of resources.
 *
 * With EMFILE/ENFILE (no file descriptors), ENOBUFS or ENOMEM the pending
 * connection stays in the backlog, the listening socket stays readable, and a
 * level-triggered watcher would be called again at once, forever. Instead the
 * watcher is stopped and restarted ACCEPT_PAUSE_S later; the refusal is logged
 * at most once per pause. Loop thread only.
 */
#ifndef QUIRE_COMMON_ACCEPT_PAUSE_H
#define QUIRE_COMMON_ACCEPT_PAUSE_H

#include <ev.h>
#include <stdbool.h>

#define ACCEPT_PAUSE_S 0.1
#define ACCEPT_PAUSE_WATCHERS_MAX 4

typedef struct accept_pause {
    struct ev_loop *loop;
    ev_timer timer;
    ev_io *paused[ACCEPT_PAUSE_WATCHERS_MAX];
    int npaused;
} accept_pause_t;

void accept_pause_init(accept_pause_t *p, struct ev_loop *loop);
/* err: the errno of a failed accept on watcher w. Returns true (and pauses w)
 * for resource exhaustion; false for anything else. */
bool accept_pause_if_exhausted(accept_pause_t *p, ev_io *w, int err, const char *who);
/* Stops the timer and forgets paused watchers (their owner is stopping). */
void accept_pause_cancel(accept_pause_t *p);

#endif
