/*
 * sweep.h — a periodic walk over a map of the loop thread, a slice of
 * entries per loop iteration.
 *
 * The broker's periodic checks (message TTL, subscription expiry, backlog
 * quotas, the compaction threshold: maintenance.h) visit every loaded topic.
 * Done in one go, a walk over 100,000 topics held the loop thread 40-60 ms
 * per check, and two checks on the same 60-s period 100 ms: a publish stall
 * every minute (docs/performance.md, session 22). A sweep visits entries for
 * at most SWEEP_SLICE_US (and at most SWEEP_SLICE of them), then lets the loop
 * serve its sockets before the next slice (a zero-delay timer: due after the
 * loop's next poll). Slices of 1,024 entries (about 0.5 ms each, four checks
 * at once) still doubled a busy topic's publish p99 while the checks ran.
 *
 * The map may change between slices: the walk goes on from the same slot
 * index (qmap_iter_t), so an entry removed before its turn is not visited and
 * one added may or may not be. When the map rehashes (it grows, or purges its
 * removed slots: the entries move), the walk starts again from the first slot,
 * so every entry in the map for a whole walk is visited at least once (those
 * before the rehash twice); until session 23 such entries could be skipped.
 * Every visit is idempotent. A period that comes while the sweep is still
 * walking starts nothing (the walk goes on).
 *
 * A walk can also be asked for at once (sweep_now), with or without a period:
 * a namespace's changed policies reach its loaded topics so (ns_policies.c;
 * in one go, 100,000 topics held the loop ~320 ms, session 23). One asked for
 * during a walk runs again from the start when that walk ends, so the entries
 * visited before the request are visited after it too.
 */
#ifndef QUIRE_SERVER_SWEEP_H
#define QUIRE_SERVER_SWEEP_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"

/* A slice: at most this long (the clock read every SWEEP_CLOCK_EVERY
 * visits), at most this many entries. */
#define SWEEP_SLICE_US 100
#define SWEEP_CLOCK_EVERY 16
#define SWEEP_SLICE 1024

typedef void (*sweep_visit_fn)(void *ctx, void *value);

typedef struct sweep {
    struct ev_loop *loop;
    qmap_t *const *map; /* where the map is (it may be replaced) */
    sweep_visit_fn visit;
    void *ctx;
    ev_timer every; /* the period: starts a walk */
    ev_timer step;  /* the next slice of a walk in progress */
    qmap_iter_t it;
    /* A walk is in progress. Not the step timer's state: a step that is due is
     * already inactive (pending) when the period's callback runs first in the
     * same loop iteration, which then restarted the walk (tried: the sweep's
     * test fails under ASan's slower slices). */
    bool walking;
    bool again;              /* sweep_now during a walk: another from the start after it */
    uint32_t rehashes;       /* the map's when the walk (re)started */
    uint64_t sweeps, visits; /* walks finished; entries visited (ever) */
    uint64_t restarts;       /* walks started again after a rehash */
    uint32_t slice_max;      /* most entries one slice visited */
} sweep_t;

/* Sets s up to walk *map every period_s seconds (the first walk one period
 * from sweep_start; period_s 0: only when asked, no sweep_start), calling
 * visit(ctx, value) for each entry. */
void sweep_init(sweep_t *s, struct ev_loop *loop, qmap_t *const *map, double period_s,
                sweep_visit_fn visit, void *ctx);
void sweep_start(sweep_t *s);
/* A walk now: its first slice before returning, the rest a slice per loop
 * iteration (during a walk: another walk after it). */
void sweep_now(sweep_t *s);
/* Stops the period and any walk in progress. */
void sweep_stop(sweep_t *s);

#endif
