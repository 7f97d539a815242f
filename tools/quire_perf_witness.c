/*
 * quire_perf_witness.c — the host witness (--host-witness): one thread per CPU
 * the process may run on, each pinned to its CPU, doing nothing but sleeping
 * 1 ms at a time to absolute deadlines of CLOCK_MONOTONIC and recording how
 * late it wakes. They carry none of the load, so their lateness is neither the
 * load generator's work nor the server's: a CPU busy with other threads, or a
 * vCPU the host did not run. Pinned, one of them sees a hold of any one vCPU
 * (a single thread sees only the CPU its timer is on: session 45 had the
 * server's vCPU held 38 ms while a floating witness saw 6). Beside the
 * client's own timer lateness (perf_stats_t.late_us) it tells a stall of the
 * client process from one of the machine.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "tools/quire_perf.h"

#define WITNESS_STEP_NS 1000000u
#define WITNESS_THREADS_MAX 64u

typedef struct witness_thread {
    struct perf_witness *w;
    pthread_t thread;
    int cpu; /* pinned to it, or -1 */
} witness_thread_t;

struct perf_witness {
    witness_thread_t t[WITNESS_THREADS_MAX];
    unsigned n;
    pthread_mutex_t lock;
    hist_t lateness_us; /* since the last perf_witness_take, under lock */
    atomic_bool stop;
};

static void *witness_main(void *arg)
{
    witness_thread_t *t = arg;
    perf_witness_t *w = t->w;
    uint64_t next = clock_mono_ns() + WITNESS_STEP_NS;
    while (!atomic_load(&w->stop)) {
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (rc == EINTR)
            continue;
        uint64_t now = clock_mono_ns();
        pthread_mutex_lock(&w->lock);
        hist_record(&w->lateness_us, now > next ? (now - next) / 1000 : 0);
        pthread_mutex_unlock(&w->lock);
        next += WITNESS_STEP_NS;
        if (next <= now) /* held for more than a step: no burst of catching up */
            next = now + WITNESS_STEP_NS;
    }
    return NULL;
}

/* Stops and joins the first n threads. */
static void witness_join(perf_witness_t *w, unsigned n)
{
    atomic_store(&w->stop, true);
    for (unsigned i = 0; i < n; i++)
        pthread_join(w->t[i].thread, NULL);
}

int perf_witness_start(perf_witness_t **out)
{
    *out = NULL;
    perf_witness_t *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    hist_init(&w->lateness_us);
    atomic_init(&w->stop, false);
    int rc = pthread_mutex_init(&w->lock, NULL);
    if (rc != 0) {
        free(w);
        return -rc;
    }
    cpu_set_t allowed;
    int cpus[WITNESS_THREADS_MAX], ncpus = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
        for (int c = 0; c < CPU_SETSIZE && ncpus < (int)WITNESS_THREADS_MAX; c++)
            if (CPU_ISSET(c, &allowed))
                cpus[ncpus++] = c;
    if (ncpus == 0)
        cpus[ncpus++] = -1; /* one thread, not pinned */
    for (int i = 0; i < ncpus; i++) {
        witness_thread_t *t = &w->t[i];
        t->w = w;
        t->cpu = cpus[i];
        rc = pthread_create(&t->thread, NULL, witness_main, t);
        if (rc != 0) {
            witness_join(w, w->n);
            pthread_mutex_destroy(&w->lock);
            free(w);
            return -rc;
        }
        w->n++;
        if (t->cpu >= 0) { /* else, or if refused, it floats: it still counts */
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(t->cpu, &one);
            pthread_setaffinity_np(t->thread, sizeof one, &one);
        }
        char name[16]; /* the kernel's limit: the CPU's last two digits */
        snprintf(name, sizeof name, "qperf-witness%u", (unsigned)(t->cpu >= 0 ? t->cpu : 0) % 100u);
        pthread_setname_np(t->thread, name); /* in perf and top */
    }
    *out = w;
    return 0;
}

unsigned perf_witness_threads(const perf_witness_t *w)
{
    return w ? w->n : 0;
}

void perf_witness_take(perf_witness_t *w, hist_t *into)
{
    pthread_mutex_lock(&w->lock);
    hist_merge(into, &w->lateness_us);
    hist_init(&w->lateness_us);
    pthread_mutex_unlock(&w->lock);
}

void perf_witness_stop(perf_witness_t *w)
{
    if (!w)
        return;
    witness_join(w, w->n);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
