/*
 * latq.h — latency quantiles over a rolling window, for /metrics summaries.
 *
 * Pulsar's broker and BookKeeper expose their latencies as Prometheus
 * summaries: quantiles over the last window (the broker rotates its
 * DataSketches every statsUpdateFrequencyInSecs, 60 s by default; a bookie
 * every prometheusStatsLatencyRolloverSeconds, 60 s), with a count and a sum
 * since the start. A latq_t keeps one: a cumulative histogram of hist.h's
 * log-linear buckets (a quantile within 0.8 % of the true value), counted
 * with relaxed atomics so that any thread may record; at each rotation the
 * window's counts (the cumulative ones minus those at the rotation before)
 * give the quantiles read until the next. A rotation is due window_us after
 * the one before and is made by the first record or read that sees it due:
 * a recorder pays one comparison per value, and one walk of the buckets per
 * window (about 7,400 of them). A window in which nothing was recorded has
 * no quantiles (NaN, as Pulsar and BookKeeper print them).
 *
 * Values are microseconds; quantiles and the sum are read in milliseconds,
 * the unit both servers use. Memory: two arrays of HIST_BUCKETS counters
 * (about 118 KB), so one per broker or bookie, not per topic.
 */
#ifndef QUIRE_COMMON_LATQ_H
#define QUIRE_COMMON_LATQ_H

#include <stdbool.h>
#include <stdint.h>

/* The quantiles kept for each window: Pulsar's summaries print 0.0, 0.5,
 * 0.95, 0.99, 0.999, 0.9999 and 1.0; BookKeeper's OpStats 0.5, 0.75, 0.95,
 * 0.99, 0.999, 0.9999 and 1.0. */
#define LATQ_NQ 8
extern const double latq_quantiles[LATQ_NQ]; /* 0.0, 0.5, 0.75, ..., 1.0 */

typedef struct latq latq_t;

typedef struct latq_view {
    uint64_t count;       /* values recorded since the start */
    double sum_ms;        /* their sum */
    double q_ms[LATQ_NQ]; /* the last window's quantiles (latq_quantiles); NaN: none */
    double window_s;      /* how long that window was (0 before the first) */
} latq_view_t;

/* window_us: how long a window lasts (at least 1). NULL when out of memory. */
latq_t *latq_new(uint64_t window_us);
void latq_free(latq_t *q);
/* Records a latency of us microseconds; now_us is clock_mono_us() (the
 * caller has it). Any thread. */
void latq_record(latq_t *q, uint64_t us, uint64_t now_us);
/* The count, the sum and the last complete window's quantiles, rotating
 * first if a rotation is due. Any thread. */
void latq_read(latq_t *q, uint64_t now_us, latq_view_t *out);
/* The view of a latq_t that does not exist (a summary with nothing yet). */
void latq_view_empty(latq_view_t *out);
/* A quantile's label as Prometheus clients print it ("0.5", "1.0"). */
const char *latq_label(int i);

#endif
