/*
 * rate_limit.c — see rate_limit.h.
 *
 * Invariants, per enabled bucket, after every call:
 *   1. tokens <= rate (capacity: one period's worth);
 *   2. 0 <= carry < period_us, and carry == 0 whenever tokens == rate;
 *   3. tokens only grow by refills, whose sum over [t0, t1] is exactly
 *      floor((t1 - t0) * rate / period_us) while the bucket is below capacity.
 */
#include "server/rate_limit.h"

#include <assert.h>

#define US_PER_S 1000000LL

typedef __int128 i128;

static int64_t period_us_of(int64_t period_s)
{
    if (period_s < 1)
        period_s = 1;
    if (period_s > RATE_PERIOD_S_MAX)
        period_s = RATE_PERIOD_S_MAX;
    return period_s * US_PER_S;
}

static void bucket_fill(rate_bucket_t *b, int64_t rate)
{
    b->rate = rate > 0 ? rate : 0;
    b->tokens = b->rate;
    b->carry = 0;
}

static void bucket_refill(rate_bucket_t *b, int64_t elapsed_us, int64_t period_us)
{
    if (b->rate <= 0 || b->tokens >= b->rate)
        return;
    i128 earned = (i128)elapsed_us * b->rate + b->carry;
    i128 add = earned / period_us;
    i128 room = (i128)b->rate - b->tokens;
    if (add >= room) {
        b->tokens = b->rate;
        b->carry = 0;
    } else {
        b->tokens += (int64_t)add;
        b->carry = (int64_t)(earned % period_us);
    }
    assert(b->tokens <= b->rate && b->carry >= 0 && b->carry < period_us);
}

static void bucket_take(rate_bucket_t *b, int64_t n)
{
    if (b->rate <= 0 || n <= 0)
        return;
    /* Saturating: a debt never wraps around. */
    b->tokens = b->tokens < INT64_MIN + n ? INT64_MIN : b->tokens - n;
}

/* Microseconds until the balance reaches 1 (0 if it is positive). */
static int64_t bucket_wait_us(const rate_bucket_t *b, int64_t period_us)
{
    if (b->rate <= 0 || b->tokens > 0)
        return 0;
    /* Need (1 - tokens) tokens: (1 - tokens) * period_us - carry units earned
     * at `rate` units per microsecond. */
    i128 need = ((i128)1 - b->tokens) * period_us - b->carry;
    i128 us = (need + b->rate - 1) / b->rate;
    return us > INT64_MAX ? INT64_MAX : (int64_t)us;
}

void rate_limiter_init(rate_limiter_t *rl, int64_t msgs_per_period, int64_t bytes_per_period,
                       int64_t period_s, int64_t now_us)
{
    rl->period_us = period_us_of(period_s);
    rl->last_us = now_us;
    bucket_fill(&rl->msgs, msgs_per_period);
    bucket_fill(&rl->bytes, bytes_per_period);
}

static void bucket_set(rate_bucket_t *b, int64_t rate)
{
    if (rate <= 0) {
        bucket_fill(b, 0);
        return;
    }
    if (b->rate <= 0) {
        bucket_fill(b, rate);
        return;
    }
    b->rate = rate;
    if (b->tokens >= rate) {
        b->tokens = rate;
        b->carry = 0;
    }
}

void rate_limiter_set(rate_limiter_t *rl, int64_t msgs_per_period, int64_t bytes_per_period,
                      int64_t period_s, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    int64_t period_us = period_us_of(period_s);
    if (period_us != rl->period_us) {
        rl->msgs.carry = 0;
        rl->bytes.carry = 0;
        rl->period_us = period_us;
    }
    bucket_set(&rl->msgs, msgs_per_period);
    bucket_set(&rl->bytes, bytes_per_period);
}

bool rate_limiter_enabled(const rate_limiter_t *rl)
{
    return rl->msgs.rate > 0 || rl->bytes.rate > 0;
}

void rate_limiter_refill(rate_limiter_t *rl, int64_t now_us)
{
    if (now_us <= rl->last_us)
        return;
    int64_t elapsed = now_us - rl->last_us;
    rl->last_us = now_us;
    bucket_refill(&rl->msgs, elapsed, rl->period_us);
    bucket_refill(&rl->bytes, elapsed, rl->period_us);
}

void rate_limiter_consume(rate_limiter_t *rl, int64_t msgs, int64_t bytes, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    bucket_take(&rl->msgs, msgs);
    bucket_take(&rl->bytes, bytes);
}

bool rate_limiter_allows(rate_limiter_t *rl, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    return (rl->msgs.rate <= 0 || rl->msgs.tokens > 0) &&
           (rl->bytes.rate <= 0 || rl->bytes.tokens > 0);
}

static int64_t bucket_left(const rate_bucket_t *b)
{
    if (b->rate <= 0)
        return INT64_MAX;
    return b->tokens > 0 ? b->tokens : 0;
}

int64_t rate_limiter_msgs_left(rate_limiter_t *rl, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    return bucket_left(&rl->msgs);
}

int64_t rate_limiter_bytes_left(rate_limiter_t *rl, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    return bucket_left(&rl->bytes);
}

int64_t rate_limiter_wait_us(rate_limiter_t *rl, int64_t now_us)
{
    rate_limiter_refill(rl, now_us);
    int64_t a = bucket_wait_us(&rl->msgs, rl->period_us);
    int64_t b = bucket_wait_us(&rl->bytes, rl->period_us);
    return a > b ? a : b;
}
