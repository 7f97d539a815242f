/*
 * quire_perf_witness.c — the host witness (--host-witness): a thread that does
 * nothing but sleep 1 ms at a time, to absolute deadlines of CLOCK_MONOTONIC,
 * and records how late it wakes. It carries none of the load, so its lateness
 * is neither the load generator's work nor the server's: all of the guest's
 * CPUs were busy with other threads, or the host did not run them. Beside the
 * client's own timer lateness (perf_stats_t.late_us) it tells a stall of the
 * client process from one of the machine.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "tools/quire_perf.h"

#define WITNESS_STEP_NS 1000000u

struct perf_witness {
    pthread_t thread;
    pthread_mutex_t lock;
    hist_t lateness_us; /* since the last perf_witness_take, under lock */
    atomic_bool stop;
};

static void *witness_main(void *arg)
{
    perf_witness_t *w = arg;
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

int perf_witness_start(perf_witness_t **out)
{
    *out = NULL;
    perf_witness_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    hist_init(&w->lateness_us);
    atomic_init(&w->stop, false);
    int rc = pthread_mutex_init(&w->lock, NULL);
    if (rc != 0) {
        free(w);
        return -rc;
    }
    rc = pthread_create(&w->thread, NULL, witness_main, w);
    if (rc != 0) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -rc;
    }
    pthread_setname_np(w->thread, "qperf-witness"); /* in perf and top */
    *out = w;
    return 0;
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
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
