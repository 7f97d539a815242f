/*
 * hist.h — a latency histogram in the manner of HdrHistogram: log-linear
 * buckets with a bounded relative error, constant memory, O(1) record.
 *
 * Values are unsigned integers (we use nanoseconds or microseconds). Bucket
 * index: values below 2^HIST_SUB_BITS are exact; above, each power of two is
 * split into 2^HIST_SUB_BITS sub-buckets, so a reported percentile is within
 * 1/2^HIST_SUB_BITS (0.8% with 7 bits) of the true value. Values up to 2^63
 * are accepted. Not thread-safe: one recorder, or merge per-thread copies.
 */
#ifndef QUIRE_COMMON_HIST_H
#define QUIRE_COMMON_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB_COUNT)

typedef struct hist {
    uint64_t counts[HIST_BUCKETS];
    uint64_t total;
    uint64_t min, max;
    double sum;
} hist_t;

void hist_init(hist_t *h);
void hist_record(hist_t *h, uint64_t value);
/* The value at percentile p (0..100): the upper bound of the bucket holding
 * the p-th percent value, capped at max. 0 for an empty histogram. */
uint64_t hist_percentile(const hist_t *h, double p);
double hist_mean(const hist_t *h);
/* Adds src's counts into dst. */
void hist_merge(hist_t *dst, const hist_t *src);
/* The bucket a value falls into (0 .. HIST_BUCKETS - 1), and the smallest and
 * largest values of bucket i (for histograms kept elsewhere: latq.h). */
unsigned hist_bucket(uint64_t v);
uint64_t hist_bucket_min(unsigned i);
uint64_t hist_bucket_max(unsigned i);

#endif
