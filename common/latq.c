/* latq.c — see latq.h. */
#include "common/latq.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/hist.h"

const double latq_quantiles[LATQ_NQ] = {0.0, 0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0};
static const char *const labels[LATQ_NQ] = {"0.0",  "0.5",   "0.75",   "0.95",
                                            "0.99", "0.999", "0.9999", "1.0"};

struct latq {
    _Atomic uint64_t counts[HIST_BUCKETS]; /* since the start */
    _Atomic uint64_t count, sum_us;
    _Atomic uint64_t due_us; /* when the next rotation is due */
    uint64_t window_us;
    pthread_mutex_t mu; /* the rest: the rotation's */
    uint64_t at_rotation[HIST_BUCKETS];
    uint64_t window_from_us; /* when the current window began */
    double q_ms[LATQ_NQ];
    double window_s;
};

const char *latq_label(int i)
{
    return labels[i];
}

latq_t *latq_new(uint64_t window_us)
{
    latq_t *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->window_us = window_us ? window_us : 1;
    pthread_mutex_init(&q->mu, NULL);
    for (int i = 0; i < LATQ_NQ; i++)
        q->q_ms[i] = NAN;
    return q;
}

void latq_free(latq_t *q)
{
    if (!q)
        return;
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* The window's counts while a rotation reads them: one array for every latq
 * (rotations are rare), under its own lock. */
static uint64_t window[HIST_BUCKETS];
static pthread_mutex_t window_mu = PTHREAD_MUTEX_INITIALIZER;

/* The window since the rotation before: its counts, their quantiles. Under mu. */
static void rotate(latq_t *q, uint64_t now_us)
{
    pthread_mutex_lock(&window_mu);
    uint64_t n = 0;
    unsigned first = HIST_BUCKETS, last = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        uint64_t c = atomic_load_explicit(&q->counts[i], memory_order_relaxed);
        window[i] = c - q->at_rotation[i];
        q->at_rotation[i] = c;
        if (window[i]) {
            n += window[i];
            if (first == HIST_BUCKETS)
                first = i;
            last = i;
        }
    }
    for (int k = 0; k < LATQ_NQ; k++) {
        double p = latq_quantiles[k];
        if (n == 0) {
            q->q_ms[k] = NAN;
            continue;
        }
        if (p <= 0.0) { /* the smallest: its bucket's lower bound */
            q->q_ms[k] = (double)hist_bucket_min(first) / 1000.0;
            continue;
        }
        /* The value of rank ceil(p * n): its bucket's upper bound. */
        double want = p * (double)n;
        uint64_t rank = (uint64_t)want, seen = 0;
        if ((double)rank < want || rank == 0)
            rank++;
        unsigned i = first;
        for (; i < last; i++) {
            seen += window[i];
            if (seen >= rank)
                break;
        }
        q->q_ms[k] = (double)hist_bucket_max(i) / 1000.0;
    }
    pthread_mutex_unlock(&window_mu);
    q->window_s = (double)(now_us - q->window_from_us) / 1e6;
    q->window_from_us = now_us;
    atomic_store_explicit(&q->due_us, now_us + q->window_us, memory_order_relaxed);
}

static void rotate_if_due(latq_t *q, uint64_t now_us)
{
    if (now_us < atomic_load_explicit(&q->due_us, memory_order_relaxed))
        return;
    pthread_mutex_lock(&q->mu);
    uint64_t due = atomic_load_explicit(&q->due_us, memory_order_relaxed);
    if (due == 0) { /* the first value or read: the first window begins */
        q->window_from_us = now_us;
        atomic_store_explicit(&q->due_us, now_us + q->window_us, memory_order_relaxed);
    } else if (now_us >= due)
        rotate(q, now_us);
    pthread_mutex_unlock(&q->mu);
}

void latq_record(latq_t *q, uint64_t us, uint64_t now_us)
{
    rotate_if_due(q, now_us);
    atomic_fetch_add_explicit(&q->counts[hist_bucket(us)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&q->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&q->sum_us, us, memory_order_relaxed);
}

void latq_read(latq_t *q, uint64_t now_us, latq_view_t *out)
{
    rotate_if_due(q, now_us);
    out->count = atomic_load_explicit(&q->count, memory_order_relaxed);
    out->sum_ms = (double)atomic_load_explicit(&q->sum_us, memory_order_relaxed) / 1000.0;
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < LATQ_NQ; i++)
        out->q_ms[i] = q->q_ms[i];
    out->window_s = q->window_s;
    pthread_mutex_unlock(&q->mu);
}

void latq_view_empty(latq_view_t *out)
{
    out->count = 0;
    out->sum_ms = 0.0;
    for (int i = 0; i < LATQ_NQ; i++)
        out->q_ms[i] = NAN;
    out->window_s = 0.0;
}
