/*
 * clock.h — time in the units the code names: monotonic for intervals and
 * timeouts, wall-clock milliseconds for what Pulsar calls publish/event time.
 */
#ifndef QUIRE_COMMON_CLOCK_H
#define QUIRE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_mono_us(void)
{
    return clock_mono_ns() / 1000u;
}

static inline int64_t clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
