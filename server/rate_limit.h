/*
 * rate_limit.h — a token bucket in two dimensions (messages and bytes), the
 * arithmetic behind publish and dispatch throttling (limits.c).
 *
 * Model (Pulsar's AsyncTokenBucket): each enabled dimension holds tokens,
 * refilled continuously at `rate` tokens per period, up to a capacity of one
 * period's worth (`rate`: the largest burst). Work is admitted while every
 * enabled dimension has a positive balance, and charged after the fact with
 * rate_limiter_consume(), so a balance may go below zero (a 1 MB message on a
 * 100 KB/s bucket leaves ten seconds of debt); rate_limiter_wait_us() says when
 * the balance is positive again. Averaged over time, admitted work never
 * exceeds rate per period plus one capacity.
 *
 * Exactness: time is in microseconds; a refill adds floor((elapsed * rate +
 * carry) / period_us) tokens and keeps the remainder in `carry`, so no token
 * is lost to rounding however often it is refilled. Products are computed in
 * 128 bits (rates up to INT64_MAX, periods up to INT32_MAX seconds).
 *
 * A rate <= 0 means "unlimited" for that dimension (Pulsar's -1 and 0). No
 * allocation, no clock of its own (the caller passes now_us): unit-testable.
 */
#ifndef QUIRE_SERVER_RATE_LIMIT_H
#define QUIRE_SERVER_RATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rate_bucket {
    int64_t rate;   /* tokens per period; <= 0: unlimited */
    int64_t tokens; /* balance, in [-inf, rate] */
    int64_t carry;  /* refill remainder, in 1/period_us of a token, < period_us */
} rate_bucket_t;

typedef struct rate_limiter {
    rate_bucket_t msgs, bytes;
    int64_t period_us;
    int64_t last_us; /* time of the last refill */
} rate_limiter_t;

#define RATE_PERIOD_S_MAX 2147483647LL

/* Configures rl with full buckets. period_s < 1 counts as 1. */
void rate_limiter_init(rate_limiter_t *rl, int64_t msgs_per_period, int64_t bytes_per_period,
                       int64_t period_s, int64_t now_us);
/* Changes the rates of a live limiter: balances are refilled under the old
 * rates first, then capped at the new capacity (a debt is kept); a dimension
 * that was unlimited starts full. */
void rate_limiter_set(rate_limiter_t *rl, int64_t msgs_per_period, int64_t bytes_per_period,
                      int64_t period_s, int64_t now_us);
/* True if at least one dimension is limited. */
bool rate_limiter_enabled(const rate_limiter_t *rl);
/* Adds the tokens earned since the last refill. Time going backwards is ignored. */
void rate_limiter_refill(rate_limiter_t *rl, int64_t now_us);
/* Charges msgs and bytes (after refilling); balances may go negative. */
void rate_limiter_consume(rate_limiter_t *rl, int64_t msgs, int64_t bytes, int64_t now_us);
/* True when every limited dimension has a positive balance (after refilling). */
bool rate_limiter_allows(rate_limiter_t *rl, int64_t now_us);
/* The positive balance of a dimension, 0 when in debt, INT64_MAX when unlimited. */
int64_t rate_limiter_msgs_left(rate_limiter_t *rl, int64_t now_us);
int64_t rate_limiter_bytes_left(rate_limiter_t *rl, int64_t now_us);
/* Microseconds until rate_limiter_allows() becomes true (0: now). */
int64_t rate_limiter_wait_us(rate_limiter_t *rl, int64_t now_us);

#endif
