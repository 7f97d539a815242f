/*
 * exec.h — blocking work off the event loop, completions back on it.
 *
 * The loop thread owns all broker and storage state (no locks on it). Work that
 * blocks (fdatasync, pread of cold data, SQLite commits) is handed to a qexec_t:
 * a pool of worker threads with a bounded queue. Each job has a work function,
 * run on a worker, and a done function, run afterwards on the loop thread that
 * owns the qexec_t (delivered through one ev_async). Jobs submitted to a
 * single-thread executor run in submission order, and their done functions are
 * called in that same order.
 *
 * qloop_post() is the same path without work: any thread may ask for a function
 * to run on the loop. Both are safe to call from any thread.
 */
#ifndef QUIRE_COMMON_EXEC_H
#define QUIRE_COMMON_EXEC_H

#include <ev.h>
#include <stddef.h>

typedef struct qexec qexec_t;
typedef struct qloop_mailbox qloop_mailbox_t;

typedef void (*qexec_fn)(void *arg);

/* A mailbox delivers functions to one loop. Create it on the loop thread. */
qloop_mailbox_t *qloop_mailbox_new(struct ev_loop *loop);
/* Stops delivery and frees; functions still queued are run first. Loop thread only. */
void qloop_mailbox_free(qloop_mailbox_t *mb);
/* Runs fn(arg) on the mailbox's loop thread, soon. Returns 0, or -ENOMEM. */
int qloop_post(qloop_mailbox_t *mb, qexec_fn fn, void *arg);
/* Keeps the loop alive while something waits on it (ev_ref/ev_unref semantics):
 * a mailbox alone does not keep ev_run() from returning. */

/* nthreads workers; at most queue_max jobs waiting (further submits get -EAGAIN). */
qexec_t *qexec_new(struct ev_loop *loop, const char *name, int nthreads, size_t queue_max);
/* Runs every job already submitted, joins the workers, frees. Loop thread only. */
void qexec_free(qexec_t *ex);
/* work(arg) on a worker, then done(arg) on the loop. Either may be NULL. */
int qexec_submit(qexec_t *ex, qexec_fn work, qexec_fn done, void *arg);

#endif
