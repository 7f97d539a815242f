/* Unit tests of quire-perf's precise timers (tools/quire_perf_timer.c): the
 * order they fire in, never before their time, stop and restart, timers
 * started and stopped by callbacks, and the lateness they record.
 * Correctness only, no timing bound. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"
#include "tools/quire_perf.h"

#define N_MANY 500

typedef struct fired {
    struct ev_loop *loop;
    perf_ptimers_t *ts;
    size_t n, expect;
    perf_ptimer_t *order[N_MANY + 8];
    size_t early;           /* fired before its deadline */
    perf_ptimer_t *restart; /* the first callback starts it again */
    perf_ptimer_t *stop;    /* ... and stops this one */
    uint64_t restart_due_ns;
} fired_t;

static void on_fire(perf_ptimer_t *t)
{
    fired_t *f = t->data;
    uint64_t now = clock_mono_ns();
    if (now < t->due_ns)
        f->early++;
    f->order[f->n++] = t;
    if (f->restart) {
        perf_ptimer_t *r = f->restart;
        f->restart = NULL;
        CU_ASSERT_EQUAL(perf_ptimer_start(f->ts, r, f->restart_due_ns), 0);
        perf_ptimer_stop(f->ts, f->stop);
        CU_ASSERT_FALSE(perf_ptimer_active(f->stop));
    }
    if (f->n == f->expect)
        ev_break(f->loop, EVBREAK_ALL);
}

static void on_safety(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

static void run_until_fired(fired_t *f)
{
    ev_timer safety; /* a bound, not a measurement: the test fails if it fires */
    ev_timer_init(&safety, on_safety, 5.0, 0);
    ev_timer_start(f->loop, &safety);
    ev_run(f->loop, 0);
    ev_timer_stop(f->loop, &safety);
}

static void test_order_stop_restart(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    TEST_REQUIRE(loop != NULL);
    perf_ptimers_t ts;
    TEST_REQUIRE(perf_ptimers_init(&ts, loop) == 0);
    fired_t f = {.loop = loop, .ts = &ts, .expect = 4};
    perf_ptimer_t a, b, c, d, e;
    perf_ptimer_t *all[] = {&a, &b, &c, &d, &e};
    for (size_t i = 0; i < 5; i++)
        perf_ptimer_init(all[i], on_fire, &f);
    uint64_t now = clock_mono_ns(), ms = 1000000;
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &a, now + 3 * ms), 0);
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &b, now + 1 * ms), 0);
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &c, now + 2 * ms), 0);
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &d, now + 1 * ms), 0); /* same time: after b */
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &e, now + 4 * ms), 0);
    CU_ASSERT_TRUE(perf_ptimer_active(&e));
    perf_ptimer_stop(&ts, &c);
    perf_ptimer_stop(&ts, &c); /* stopped twice: a no-op */
    CU_ASSERT_FALSE(perf_ptimer_active(&c));
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &a, now + 5 * ms), 0); /* restarted later */
    /* b's callback starts c again (after a) and stops e. */
    f.restart = &c;
    f.restart_due_ns = now + 6 * ms;
    f.stop = &e;
    run_until_fired(&f);
    CU_ASSERT_EQUAL(f.n, 4);
    CU_ASSERT_TRUE(f.order[0] == &b && f.order[1] == &d && f.order[2] == &a && f.order[3] == &c);
    CU_ASSERT_EQUAL(f.early, 0);
    CU_ASSERT_EQUAL(ts.n, 0);
    perf_ptimers_free(&ts);
    ev_loop_destroy(loop);
}

static int by_due(const void *x, const void *y)
{
    const perf_ptimer_t *a = *(perf_ptimer_t *const *)x, *b = *(perf_ptimer_t *const *)y;
    if (a->due_ns != b->due_ns)
        return a->due_ns < b->due_ns ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Many timers in a pseudo-random order, some stopped: the others fire in
 * deadline order (the heap), each once. */
static void test_many(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    TEST_REQUIRE(loop != NULL);
    perf_ptimers_t ts;
    TEST_REQUIRE(perf_ptimers_init(&ts, loop) == 0);
    fired_t *f = calloc(1, sizeof *f);
    perf_ptimer_t *t = calloc(N_MANY, sizeof *t);
    perf_ptimer_t **want = calloc(N_MANY, sizeof *want);
    TEST_REQUIRE(f != NULL && t != NULL && want != NULL);
    f->loop = loop;
    f->ts = &ts;
    uint64_t now = clock_mono_ns(), x = 12345;
    size_t n_want = 0;
    for (size_t i = 0; i < N_MANY; i++) {
        perf_ptimer_init(&t[i], on_fire, f);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &t[i], now + (x >> 33) % 3000000), 0);
    }
    for (size_t i = 0; i < N_MANY; i += 7)
        perf_ptimer_stop(&ts, &t[i]);
    for (size_t i = 0; i < N_MANY; i++)
        if (perf_ptimer_active(&t[i]))
            want[n_want++] = &t[i];
    qsort(want, n_want, sizeof *want, by_due);
    f->expect = n_want;
    run_until_fired(f);
    CU_ASSERT_EQUAL(f->n, n_want);
    size_t same = 0;
    for (size_t i = 0; i < n_want && i < f->n; i++)
        same += f->order[i] == want[i];
    CU_ASSERT_EQUAL(same, n_want);
    CU_ASSERT_EQUAL(f->early, 0);
    perf_ptimers_free(&ts);
    ev_loop_destroy(loop);
    free(want);
    free(t);
    free(f);
}

/* With late_us set, each firing records how long after its deadline it ran:
 * a timer due while the thread is held (30 ms here) records at least that; a
 * timer whose deadline is still ahead when the loop runs is recorded too (no
 * bound on how late: a held host may delay it); nothing without late_us. */
static void test_lateness(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    TEST_REQUIRE(loop != NULL);
    perf_ptimers_t ts;
    TEST_REQUIRE(perf_ptimers_init(&ts, loop) == 0);
    hist_t *late = malloc(sizeof *late);
    TEST_REQUIRE(late != NULL);
    hist_init(late);
    ts.late_us = late;
    fired_t f = {.loop = loop, .ts = &ts, .expect = 1};
    perf_ptimer_t a, b;
    perf_ptimer_init(&a, on_fire, &f);
    perf_ptimer_init(&b, on_fire, &f);
    uint64_t ms = 1000000;
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &a, clock_mono_ns() + 1 * ms), 0);
    nanosleep(&(struct timespec){0, 31 * 1000 * 1000}, NULL); /* held: a is due meanwhile */
    run_until_fired(&f);
    CU_ASSERT_EQUAL(f.n, 1);
    CU_ASSERT_EQUAL(late->total, 1);
    CU_ASSERT_TRUE(late->max >= 30000);
    /* Not held: b fires after its deadline, never before, and is recorded. */
    f.expect = 2;
    uint64_t before_max = late->max;
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &b, clock_mono_ns() + 2 * ms), 0);
    run_until_fired(&f);
    CU_ASSERT_EQUAL(f.n, 2);
    CU_ASSERT_EQUAL(f.early, 0);
    CU_ASSERT_EQUAL(late->total, 2);
    CU_ASSERT_TRUE(late->max >= before_max);
    /* Without late_us nothing is recorded. */
    ts.late_us = NULL;
    f.expect = 3;
    CU_ASSERT_EQUAL(perf_ptimer_start(&ts, &a, clock_mono_ns() + 1 * ms), 0);
    run_until_fired(&f);
    CU_ASSERT_EQUAL(f.n, 3);
    CU_ASSERT_EQUAL(late->total, 2);
    perf_ptimers_free(&ts);
    ev_loop_destroy(loop);
    free(late);
}

/* The host witness's threads (one per CPU) wake every millisecond and record
 * each wake-up; a take hands over what they recorded and starts again from
 * nothing. */
static void test_witness(void)
{
    hist_t *h = malloc(sizeof *h);
    TEST_REQUIRE(h != NULL);
    hist_init(h);
    perf_witness_t *w = NULL;
    uint64_t t0 = clock_mono_ns();
    TEST_REQUIRE(perf_witness_start(&w) == 0 && w != NULL);
    unsigned n = perf_witness_threads(w);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    CU_ASSERT_TRUE(n >= 1 && (cpus < 1 || n <= (unsigned)cpus));
    nanosleep(&(struct timespec){0, 60 * 1000 * 1000}, NULL);
    perf_witness_take(w, h);
    uint64_t steps = (clock_mono_ns() - t0) / 1000000u;
    /* Some wake-ups in 60 ms, never more than one a 1-ms step a thread. */
    CU_ASSERT_TRUE(h->total >= 5 && h->total <= steps * n);
    nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    hist_t *h2 = malloc(sizeof *h2);
    TEST_REQUIRE(h2 != NULL);
    hist_init(h2);
    perf_witness_take(w, h2); /* only what came after the first take */
    CU_ASSERT_TRUE(h2->total >= 1 && h2->total <= (clock_mono_ns() - t0) / 1000000u * n - h->total);
    perf_witness_stop(w);
    CU_ASSERT_EQUAL(perf_witness_threads(NULL), 0);
    free(h2);
    perf_witness_stop(NULL);
    free(h);
}

void perf_register_timer(void)
{
    CU_pSuite s = CU_add_suite("perf_timer", NULL, NULL);
    CU_add_test(s, "order, stop, restart, callbacks", test_order_stop_restart);
    CU_add_test(s, "many timers fire in deadline order", test_many);
    CU_add_test(s, "each firing's lateness recorded", test_lateness);
    CU_add_test(s, "the host witness's wake-ups", test_witness);
}
