/*
 * exec.c — worker pools and loop mailboxes (see exec.h).
 *
 * A mailbox is a mutex-protected FIFO plus one ev_async. qloop_post appends and
 * signals; the async callback takes the whole list under the lock and runs it
 * outside the lock, so a posted function may post again. The async watcher is
 * ev_unref'd: it does not by itself keep ev_run() alive.
 */
#include "common/exec.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

typedef struct qjob {
    struct qjob *next;
    qexec_fn work;
    qexec_fn done;
    void *arg;
} qjob_t;

typedef struct {
    qjob_t *head, *tail;
    size_t count;
} qjob_list_t;

static void list_push(qjob_list_t *l, qjob_t *j)
{
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->count++;
}

static qjob_t *list_pop(qjob_list_t *l)
{
    qjob_t *j = l->head;
    if (j) {
        l->head = j->next;
        if (!l->head)
            l->tail = NULL;
        l->count--;
    }
    return j;
}

/* ---------------------------------------------------------------- mailbox -- */

struct qloop_mailbox {
    struct ev_loop *loop;
    ev_async async;
    pthread_mutex_t lock;
    qjob_list_t queue;
};

static void mailbox_drain(qloop_mailbox_t *mb)
{
    for (;;) {
        pthread_mutex_lock(&mb->lock);
        qjob_list_t batch = mb->queue;
        memset(&mb->queue, 0, sizeof mb->queue);
        pthread_mutex_unlock(&mb->lock);
        if (!batch.head)
            return;
        qjob_t *j;
        while ((j = list_pop(&batch))) {
            j->done(j->arg);
            free(j);
        }
    }
}

static void mailbox_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)loop;
    (void)revents;
    mailbox_drain(w->data);
}

qloop_mailbox_t *qloop_mailbox_new(struct ev_loop *loop)
{
    qloop_mailbox_t *mb = calloc(1, sizeof *mb);
    if (!mb)
        return NULL;
    mb->loop = loop;
    pthread_mutex_init(&mb->lock, NULL);
    ev_async_init(&mb->async, mailbox_async_cb);
    mb->async.data = mb;
    ev_async_start(loop, &mb->async);
    ev_unref(loop);
    return mb;
}

void qloop_mailbox_free(qloop_mailbox_t *mb)
{
    if (!mb)
        return;
    mailbox_drain(mb);
    ev_ref(mb->loop);
    ev_async_stop(mb->loop, &mb->async);
    pthread_mutex_destroy(&mb->lock);
    free(mb);
}

int qloop_post(qloop_mailbox_t *mb, qexec_fn fn, void *arg)
{
    qjob_t *j = malloc(sizeof *j);
    if (!j)
        return -ENOMEM;
    j->work = NULL;
    j->done = fn;
    j->arg = arg;
    pthread_mutex_lock(&mb->lock);
    list_push(&mb->queue, j);
    pthread_mutex_unlock(&mb->lock);
    ev_async_send(mb->loop, &mb->async);
    return 0;
}

/* ---------------------------------------------------------------- workers -- */

struct qexec {
    qloop_mailbox_t *mailbox;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    qjob_list_t queue;
    size_t queue_max;
    bool stopping;
    int nthreads;
    pthread_t threads[];
};

static void *worker_main(void *p)
{
    qexec_t *ex = p;
    for (;;) {
        pthread_mutex_lock(&ex->lock);
        while (!ex->queue.head && !ex->stopping)
            pthread_cond_wait(&ex->cond, &ex->lock);
        qjob_t *j = list_pop(&ex->queue);
        pthread_mutex_unlock(&ex->lock);
        if (!j)
            return NULL; /* stopping and drained */
        if (j->work)
            j->work(j->arg);
        if (j->done) {
            /* Re-use the job node as the mailbox entry. */
            j->work = NULL;
            pthread_mutex_lock(&ex->mailbox->lock);
            list_push(&ex->mailbox->queue, j);
            pthread_mutex_unlock(&ex->mailbox->lock);
            ev_async_send(ex->mailbox->loop, &ex->mailbox->async);
        } else {
            free(j);
        }
    }
}

qexec_t *qexec_new(struct ev_loop *loop, const char *name, int nthreads, size_t queue_max)
{
    if (nthreads < 1)
        nthreads = 1;
    qexec_t *ex = calloc(1, sizeof *ex + (size_t)nthreads * sizeof(pthread_t));
    if (!ex)
        return NULL;
    ex->mailbox = qloop_mailbox_new(loop);
    if (!ex->mailbox) {
        free(ex);
        return NULL;
    }
    pthread_mutex_init(&ex->lock, NULL);
    pthread_cond_init(&ex->cond, NULL);
    ex->queue_max = queue_max ? queue_max : 1;
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&ex->threads[i], NULL, worker_main, ex) != 0)
            break;
        if (name) {
            char tname[16];
            snprintf(tname, sizeof tname, "%.10s-%d", name, i & 0xff);
            pthread_setname_np(ex->threads[i], tname);
        }
        ex->nthreads++;
    }
    if (ex->nthreads == 0) {
        qloop_mailbox_free(ex->mailbox);
        free(ex);
        return NULL;
    }
    return ex;
}

void qexec_free(qexec_t *ex)
{
    if (!ex)
        return;
    pthread_mutex_lock(&ex->lock);
    ex->stopping = true;
    pthread_cond_broadcast(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    for (int i = 0; i < ex->nthreads; i++)
        pthread_join(ex->threads[i], NULL);
    qloop_mailbox_free(ex->mailbox); /* runs the done functions still queued */
    pthread_cond_destroy(&ex->cond);
    pthread_mutex_destroy(&ex->lock);
    free(ex);
}

int qexec_submit(qexec_t *ex, qexec_fn work, qexec_fn done, void *arg)
{
    qjob_t *j = malloc(sizeof *j);
    if (!j)
        return -ENOMEM;
    j->work = work;
    j->done = done;
    j->arg = arg;
    pthread_mutex_lock(&ex->lock);
    if (ex->stopping || ex->queue.count >= ex->queue_max) {
        int rc = ex->stopping ? -ESHUTDOWN : -EAGAIN;
        pthread_mutex_unlock(&ex->lock);
        free(j);
        return rc;
    }
    list_push(&ex->queue, j);
    pthread_cond_signal(&ex->cond);
    pthread_mutex_unlock(&ex->lock);
    return 0;
}
