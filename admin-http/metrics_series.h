/*
 * metrics_series.h — rates over a sliding window of ticks, from counters that
 * are reported only in the ticks they move in.
 *
 * A tick (about 1 s apart) hears, for each key whose counters moved, their
 * values at the previous tick and now. A key's rate is (value at the newest
 * tick - value MSERIES_WINDOW - 1 ticks before, or at its first tick if
 * later) / the time between those ticks; a key that did not move in a tick
 * keeps its values there. A key flat over the whole window is forgotten (its
 * rate is 0 either way).
 *
 * Costs: a tick costs O(keys reported + keys forgotten), never O(keys known):
 * only reported keys are touched, and keys are forgotten from the front of a
 * list ordered by their last movement. A rate costs O(MSERIES_WINDOW).
 * Not thread-safe: one thread (the admin loop) calls everything.
 */
#ifndef QUIRE_ADMIN_METRICS_SERIES_H
#define QUIRE_ADMIN_METRICS_SERIES_H

#include <stddef.h>
#include <stdint.h>

#define MSERIES_WINDOW 6 /* ticks: a 5-second window at 1 s */
#define MSERIES_COUNTERS 4

typedef struct mseries mseries_t;

mseries_t *mseries_new(void);
void mseries_free(mseries_t *ms);

/* Starts a tick at time t (seconds; later than the previous tick's). */
void mseries_tick_begin(mseries_t *ms, double t);

/* Within a tick: key's counters were `before` at the previous tick and are
 * `now`. Counters that went back to a value other than the key's last one
 * (the object was loaded again) start the key's series anew. Returns -ENOMEM
 * if a new key could not be kept (its rate then reads 0). */
int mseries_report(mseries_t *ms, const char *key, const uint64_t before[MSERIES_COUNTERS],
                   const uint64_t now[MSERIES_COUNTERS]);

/* Ends the tick: forgets the keys flat over the window. */
void mseries_tick_end(mseries_t *ms);

/* Rates per second as of the last tick; 0 for unknown keys, keys with a
 * single tick, and counters that went down. */
void mseries_rates(const mseries_t *ms, const char *key, double out[MSERIES_COUNTERS]);

/* Keys known (moved within the window). */
size_t mseries_count(const mseries_t *ms);

#endif
