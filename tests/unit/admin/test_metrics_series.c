/* Unit tests of admin-http/metrics_series.c: rates over the window, checked
 * against a reference model that samples every key at every tick (the
 * sampler's former, O(keys) way), and the cost bound: a tick touches only the
 * keys reported and those it forgets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/metrics_series.h"
#include "tests/unit/admin/test_admin.h"
#include "tests/unit/support/test_support.h"

#define KEYS 40
#define TICKS 400

/* ------------------------------------------------ the reference model -- */

typedef struct ref_sample {
    double t;
    uint64_t v[MSERIES_COUNTERS];
} ref_sample_t;

typedef struct ref_series {
    bool live;
    ref_sample_t ring[MSERIES_WINDOW];
    unsigned head, count;
} ref_series_t;

static void ref_push(ref_series_t *s, double t, const uint64_t v[MSERIES_COUNTERS])
{
    s->ring[s->head].t = t;
    memcpy(s->ring[s->head].v, v, sizeof s->ring[0].v);
    s->head = (s->head + 1) % MSERIES_WINDOW;
    if (s->count < MSERIES_WINDOW)
        s->count++;
}

static const ref_sample_t *ref_at(const ref_series_t *s, unsigned back)
{
    return &s->ring[(s->head + MSERIES_WINDOW - 1 - back) % MSERIES_WINDOW];
}

/* A report in tick t (previous tick at last_t, 0 if none). */
static void ref_report(ref_series_t *s, double t, double last_t, const uint64_t before[],
                       const uint64_t now[], bool *seen)
{
    size_t n = MSERIES_COUNTERS * sizeof now[0];
    if (!s->live && memcmp(before, now, n) == 0)
        return;
    if (!s->live)
        *s = (ref_series_t){.live = true};
    else if (s->count > 0 && memcmp(ref_at(s, 0)->v, before, n) != 0)
        s->count = s->head = 0;
    if (s->count == 0 && last_t > 0)
        ref_push(s, last_t, before);
    ref_push(s, t, now);
    *seen = true;
}

/* End of tick t: every live series not reported gets its newest values
 * again; a series flat over its ring is dropped. */
static void ref_tick_end(ref_series_t *s, double t, bool seen)
{
    if (!s->live)
        return;
    if (!seen)
        ref_push(s, t, ref_at(s, 0)->v);
    if (s->count >= 2 &&
        memcmp(ref_at(s, 0)->v, ref_at(s, s->count - 1)->v, sizeof s->ring[0].v) == 0)
        s->live = false;
}

static void ref_rates(const ref_series_t *s, double out[MSERIES_COUNTERS])
{
    memset(out, 0, MSERIES_COUNTERS * sizeof out[0]);
    if (!s->live || s->count < 2)
        return;
    const ref_sample_t *nw = ref_at(s, 0), *old = ref_at(s, s->count - 1);
    double dt = nw->t - old->t;
    for (int i = 0; i < MSERIES_COUNTERS && dt > 0; i++)
        out[i] = nw->v[i] >= old->v[i] ? (double)(nw->v[i] - old->v[i]) / dt : 0.0;
}

/* ------------------------------------------------------------- tests -- */

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Random traffic: bursts, quiet spells longer than the window, restarts
 * (counters back to 0), reports of keys that did not move (a subscription of
 * a topic that did), and uneven tick spacing. Every key's rates match the
 * model's after every tick, and the series known are the model's live ones. */
static void test_rates_match_reference(void)
{
    mseries_t *ms = mseries_new();
    TEST_REQUIRE(ms != NULL);
    static ref_series_t ref[KEYS];
    memset(ref, 0, sizeof ref);
    uint64_t counters[KEYS][MSERIES_COUNTERS] = {{0}};
    uint64_t base[KEYS][MSERIES_COUNTERS] = {{0}};
    int busy[KEYS] = {0}; /* ticks left in the current burst */
    double t = 100.0, last_t = 0;
    int mismatches = 0, nonzero = 0, restarts = 0;
    for (int tick = 0; tick < TICKS; tick++) {
        t += 0.9 + (double)(rnd() % 300) / 1000.0;
        mseries_tick_begin(ms, t);
        bool seen[KEYS] = {false};
        for (int k = 0; k < KEYS; k++) {
            char key[32];
            snprintf(key, sizeof key, "persistent://t/n/k%d", k);
            memcpy(base[k], counters[k], sizeof base[k]);
            if (busy[k] == 0 && rnd() % 10 == 0)
                busy[k] = 1 + (int)(rnd() % 8);
            bool report = false;
            if (busy[k] > 0) {
                busy[k]--;
                for (int i = 0; i < MSERIES_COUNTERS; i++)
                    if (rnd() % 3)
                        counters[k][i] += rnd() % 5000;
                report = true;
            } else if (rnd() % 7 == 0) {
                report = true; /* reported without moving */
            }
            if (rnd() % 150 == 0) { /* loaded again: counters restart */
                memset(counters[k], 0, sizeof counters[k]);
                counters[k][0] = rnd() % 3;
                memcpy(base[k], counters[k], sizeof base[k]);
                if (rnd() % 2)
                    counters[k][1] = 1 + rnd() % 100; /* else: restarted, not moved since */
                report = true;
                restarts++;
            }
            if (!report)
                continue;
            CU_ASSERT_EQUAL(mseries_report(ms, key, base[k], counters[k]), 0);
            ref_report(&ref[k], t, last_t, base[k], counters[k], &seen[k]);
        }
        mseries_tick_end(ms);
        size_t live = 0;
        for (int k = 0; k < KEYS; k++) {
            ref_tick_end(&ref[k], t, seen[k]);
            live += ref[k].live;
        }
        last_t = t;
        /* (keys first seen in the very first tick, with no tick before, may
         * stay up to the window where the model drops them at once) */
        if (tick >= MSERIES_WINDOW)
            CU_ASSERT_EQUAL(mseries_count(ms), live);
        for (int k = 0; k < KEYS; k++) {
            char key[32];
            snprintf(key, sizeof key, "persistent://t/n/k%d", k);
            double a[MSERIES_COUNTERS], b[MSERIES_COUNTERS];
            mseries_rates(ms, key, a);
            ref_rates(&ref[k], b);
            for (int i = 0; i < MSERIES_COUNTERS; i++) {
                if (fabs(a[i] - b[i]) > 1e-9 * (1 + fabs(b[i])))
                    mismatches++;
                nonzero += b[i] > 0;
            }
        }
    }
    CU_ASSERT_EQUAL(mismatches, 0);
    CU_ASSERT_TRUE(nonzero > 1000); /* the traffic did make rates */
    CU_ASSERT_TRUE(restarts > 10);
    mseries_free(ms);
}

/* Known keys are those that moved in the last MSERIES_WINDOW - 1 ticks;
 * rates over a steady flow, and 0 for an unknown key. */
static void test_window_and_forgetting(void)
{
    mseries_t *ms = mseries_new();
    TEST_REQUIRE(ms != NULL);
    uint64_t before[4] = {0}, now[4] = {0};
    double r[4];
    for (int tick = 1; tick <= 10; tick++) {
        mseries_tick_begin(ms, (double)tick);
        memcpy(before, now, sizeof now);
        now[0] += 100;
        now[3] += 1000;
        CU_ASSERT_EQUAL(mseries_report(ms, "a", before, now), 0);
        mseries_tick_end(ms);
    }
    mseries_rates(ms, "a", r);
    CU_ASSERT_DOUBLE_EQUAL(r[0], 100.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r[3], 1000.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(r[1], 0.0, 1e-9);
    mseries_rates(ms, "b", r);
    CU_ASSERT_DOUBLE_EQUAL(r[0], 0.0, 1e-9);
    /* quiet: the rate decays as the window slides, then the key goes */
    double prev = 100.0;
    for (int tick = 11; tick <= 14; tick++) {
        mseries_tick_begin(ms, (double)tick);
        mseries_tick_end(ms);
        CU_ASSERT_EQUAL(mseries_count(ms), 1);
        mseries_rates(ms, "a", r);
        CU_ASSERT_TRUE(r[0] < prev && r[0] > 0);
        prev = r[0];
    }
    mseries_tick_begin(ms, 15.0);
    mseries_tick_end(ms);
    CU_ASSERT_EQUAL(mseries_count(ms), 0);
    mseries_rates(ms, "a", r);
    CU_ASSERT_DOUBLE_EQUAL(r[0], 0.0, 1e-9);
    mseries_free(ms);
}

/* 100,000 keys move once; afterwards ticks forget them all within the
 * window, and a tick with one report leaves only that key. */
static void test_many_keys_forgotten(void)
{
    mseries_t *ms = mseries_new();
    TEST_REQUIRE(ms != NULL);
    uint64_t zero[4] = {0}, one[4] = {1, 100, 0, 0};
    mseries_tick_begin(ms, 1.0);
    mseries_tick_end(ms);
    mseries_tick_begin(ms, 2.0);
    char key[32];
    for (int k = 0; k < 100000; k++) {
        snprintf(key, sizeof key, "t%d", k);
        CU_ASSERT_EQUAL_FATAL(mseries_report(ms, key, zero, one), 0);
    }
    mseries_tick_end(ms);
    CU_ASSERT_EQUAL(mseries_count(ms), 100000);
    double r[4];
    mseries_rates(ms, "t777", r);
    CU_ASSERT_DOUBLE_EQUAL(r[0], 1.0, 1e-9);
    for (int tick = 3; tick <= 7; tick++) {
        mseries_tick_begin(ms, (double)tick);
        if (tick == 7) {
            uint64_t two[4] = {2, 200, 0, 0};
            CU_ASSERT_EQUAL(mseries_report(ms, "t5", one, two), 0);
        }
        mseries_tick_end(ms);
    }
    CU_ASSERT_EQUAL(mseries_count(ms), 1);
    mseries_rates(ms, "t5", r);
    CU_ASSERT_DOUBLE_EQUAL(r[0], 0.2, 1e-9); /* 2 - 1 over ticks 2..7 */
    mseries_free(ms);
}

void admin_register_series_suite(void)
{
    CU_pSuite s = CU_add_suite("metrics_series", NULL, NULL);
    CU_add_test(s, "rates match the reference", test_rates_match_reference);
    CU_add_test(s, "window and forgetting", test_window_and_forgetting);
    CU_add_test(s, "many keys forgotten", test_many_keys_forgotten);
}
