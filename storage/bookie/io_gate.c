/*
 * io_gate.c — large reads wait for the journal's group writes in flight
 * (io_gate.h).
 *
 * The counters are sequentially consistent: a reader registers as a waiter
 * before it looks at them again under the mutex, and whoever lowers one
 * looks at the waiters after, so a wake-up is never lost (and each wait is
 * bounded by wait_us_max anyway).
 */
#include "storage/bookie/io_gate.h"

#include <errno.h>
#include <time.h>

#include "common/clock.h"

int io_gate_init(io_gate_t *g, uint32_t wait_us_max)
{
    atomic_init(&g->writes, 0);
    atomic_init(&g->reads, 0);
    atomic_init(&g->waiters, 0);
    atomic_init(&g->waits, 0);
    atomic_init(&g->wait_us, 0);
    atomic_init(&g->marked, 0);
    atomic_init(&g->marked_us, 0);
    g->wait_us_max = wait_us_max;
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);
    if (rc != 0)
        return -rc;
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -rc;
    rc = pthread_mutex_init(&g->mu, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&g->cv);
        return -rc;
    }
    return 0;
}

void io_gate_destroy(io_gate_t *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* Wakes every waiter (all: the write is over), or one (a read's place). */
static void wake(io_gate_t *g, bool all)
{
    if (atomic_load(&g->waiters) > 0) {
        pthread_mutex_lock(&g->mu);
        if (all)
            pthread_cond_broadcast(&g->cv);
        else
            pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
    }
}

bool io_gate_write_begin(io_gate_t *g, uint64_t bytes)
{
    if (bytes > IO_GATE_GROUP_BYTES_MAX)
        return false;
    atomic_fetch_add(&g->writes, 1);
    atomic_fetch_add(&g->marked, 1);
    atomic_store(&g->marked_us, clock_mono_us());
    return true;
}

void io_gate_write_end(io_gate_t *g)
{
    atomic_fetch_sub(&g->writes, 1);
    wake(g, true);
}

/* Counts the read in if it may start now. */
static bool try_enter(io_gate_t *g)
{
    int r = atomic_load(&g->reads);
    for (;;) {
        if (atomic_load(&g->writes) > 0 && r >= IO_GATE_READS_DURING_WRITE)
            return false;
        if (atomic_compare_exchange_weak(&g->reads, &r, r + 1))
            return true;
    }
}

void io_gate_read_begin(io_gate_t *g)
{
    if (g->wait_us_max == 0) {
        atomic_fetch_add(&g->reads, 1);
        return;
    }
    if (try_enter(g))
        return;
    uint64_t t0 = clock_mono_us();
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)g->wait_us_max * 1000u;
    dl.tv_sec += (time_t)(ns / 1000000000u);
    dl.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&g->mu);
    atomic_fetch_add(&g->waiters, 1);
    bool in = false;
    while (!(in = try_enter(g)))
        if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT)
            break;
    if (!in) /* waited long enough: the read goes anyway */
        atomic_fetch_add(&g->reads, 1);
    atomic_fetch_sub(&g->waiters, 1);
    pthread_mutex_unlock(&g->mu);
    atomic_fetch_add(&g->waits, 1);
    atomic_fetch_add(&g->wait_us, clock_mono_us() - t0);
}

void io_gate_read_end(io_gate_t *g)
{
    atomic_fetch_sub(&g->reads, 1);
    wake(g, false);
}

void io_gate_stats(io_gate_t *g, uint64_t *waits, uint64_t *wait_us)
{
    *waits = atomic_load(&g->waits);
    *wait_us = atomic_load(&g->wait_us);
}

uint64_t io_gate_marked(io_gate_t *g)
{
    return atomic_load(&g->marked);
}

bool io_gate_writes_recent(io_gate_t *g, uint64_t us)
{
    if (g->wait_us_max == 0)
        return false;
    if (atomic_load(&g->writes) > 0)
        return true; /* one is in flight now */
    uint64_t t = atomic_load(&g->marked_us);
    return t != 0 && clock_mono_us() - t < us;
}
