/*
 * mem_trim.h — gives freed heap memory back to the system after a burst.
 *
 * glibc's malloc returns memory to the system only from the top of a heap; the
 * free space a burst leaves inside its heaps stays resident. After (a)-(e) of
 * the benchmark an idle `quire standalone` showed 372 MB resident with 88 MB in
 * use. Nothing is lost (the next load reuses it), but it is what `ps` and the
 * memory figures of a monitoring system show.
 *
 * qtrim_t watches an activity counter (bytes the broker wrote to clients) every
 * interval: once at least QTRIM_BURST_BYTES went by since the last trim and an
 * interval then passes with less than QTRIM_QUIET_BYTES, it calls
 * qheap_release() once (heap.h: jemalloc's purge, or glibc's malloc_trim). Trimming walks the heaps and
 * holds each arena's lock meanwhile, so it runs only when the process is quiet,
 * not on a clock: keepalive pings alone never trigger it.
 */
#ifndef QUIRE_COMMON_MEM_TRIM_H
#define QUIRE_COMMON_MEM_TRIM_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#define QTRIM_BURST_BYTES (64ull << 20)
#define QTRIM_QUIET_BYTES (64ull << 10)

/* The decision, apart from the timer (unit-tested). */
typedef struct qtrim_state {
    bool started;
    uint64_t last;       /* the counter at the previous tick */
    uint64_t since_trim; /* counted since the last trim */
} qtrim_state_t;

/* One tick with the counter's value now: true when a trim is due. */
bool qtrim_due(qtrim_state_t *s, uint64_t activity_now);

typedef uint64_t (*qtrim_activity_fn)(void *arg);

typedef struct qtrim {
    ev_timer timer;
    qtrim_state_t state;
    qtrim_activity_fn activity;
    void *arg;
} qtrim_t;

/* Ticks every interval_s on loop (the timer does not keep ev_run() going). */
void qtrim_start(qtrim_t *t, struct ev_loop *loop, double interval_s, qtrim_activity_fn activity,
                 void *arg);
void qtrim_stop(qtrim_t *t, struct ev_loop *loop);

#endif
