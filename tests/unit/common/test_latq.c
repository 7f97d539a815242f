/* Unit tests of common/latq: a window's quantiles, rotation, empty windows,
 * the count and sum since the start, and recorders on several threads. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/hist.h"
#include "common/latq.h"
#include "tests/unit/support/test_support.h"

void register_latq_suite(void);

#define S 1000000ull /* a second, in microseconds */

/* Within hist.h's relative error of want (ms). */
static int near(double got, double want)
{
    return fabs(got - want) <= want / HIST_SUB_COUNT + 0.001;
}

/* 1..10,000 us in the first window: no quantiles until the window ends; then
 * each quantile of those values, the smallest and the largest included. */
static void test_latq_window_quantiles(void)
{
    latq_t *q = latq_new(10 * S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    uint64_t t = 5 * S;
    for (uint64_t v = 1; v <= 10000; v++)
        latq_record(q, v, t);
    latq_view_t w;
    latq_read(q, t + S, &w);
    CU_ASSERT_EQUAL(w.count, 10000);
    CU_ASSERT_DOUBLE_EQUAL(w.sum_ms, 10000.0 * 10001 / 2 / 1000.0, 1e-6);
    for (int i = 0; i < LATQ_NQ; i++)
        CU_ASSERT_TRUE(isnan(w.q_ms[i])); /* the window is not over */
    latq_read(q, t + 10 * S, &w);
    CU_ASSERT_DOUBLE_EQUAL(w.window_s, 10.0, 1e-9);
    for (int i = 0; i < LATQ_NQ; i++) {
        double want = latq_quantiles[i] == 0.0 ? 0.001 : latq_quantiles[i] * 10.0;
        CU_ASSERT_TRUE(near(w.q_ms[i], want));
    }
    CU_ASSERT_STRING_EQUAL(latq_label(0), "0.0");
    CU_ASSERT_STRING_EQUAL(latq_label(LATQ_NQ - 1), "1.0");
    latq_free(q);
}

/* Each window holds only its own values; a window without any has no
 * quantiles; the count and the sum keep everything. */
static void test_latq_windows_apart(void)
{
    latq_t *q = latq_new(S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    latq_view_t w;
    for (int k = 0; k < 100; k++)
        latq_record(q, 50000, 0); /* 50 ms, in the first window (from 0) */
    for (int k = 0; k < 100; k++)
        latq_record(q, 200, S + 10); /* rotates: the first window was [0, S) */
    latq_read(q, S + 20, &w);
    CU_ASSERT_TRUE(near(w.q_ms[1], 50.0));
    CU_ASSERT_TRUE(near(w.q_ms[LATQ_NQ - 1], 50.0));
    latq_read(q, 2 * S + 10, &w); /* the second window: 0.2 ms only */
    CU_ASSERT_TRUE(near(w.q_ms[0], 0.2));
    CU_ASSERT_TRUE(near(w.q_ms[LATQ_NQ - 1], 0.2));
    latq_read(q, 3 * S + 10, &w); /* the third: nothing */
    for (int i = 0; i < LATQ_NQ; i++)
        CU_ASSERT_TRUE(isnan(w.q_ms[i]));
    CU_ASSERT_EQUAL(w.count, 200);
    CU_ASSERT_DOUBLE_EQUAL(w.sum_ms, 100 * 50.0 + 100 * 0.2, 1e-6);
    latq_free(q);
}

/* p99 of 990 fast values and 10 slow ones is the fastest of the slow: the
 * rank is ceil(p * n), not rounded down to the fast ones. */
static void test_latq_tail_rank(void)
{
    latq_t *q = latq_new(S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    for (int k = 0; k < 990; k++)
        latq_record(q, 100, 1);
    for (int k = 0; k < 10; k++)
        latq_record(q, 9000 + (uint64_t)k * 100, 1);
    latq_view_t w;
    latq_read(q, 2 * S, &w);
    CU_ASSERT_TRUE(near(w.q_ms[3], 0.1)); /* 0.95 */
    CU_ASSERT_TRUE(near(w.q_ms[4], 0.1)); /* 0.99: rank 990 */
    CU_ASSERT_TRUE(near(w.q_ms[5], 9.9)); /* 0.999: rank 999 */
    CU_ASSERT_TRUE(near(w.q_ms[7], 9.9)); /* 1.0 */
    latq_free(q);
}

struct rec_arg {
    latq_t *q;
    uint64_t v;
};

static void *recorder(void *p)
{
    struct rec_arg *a = p;
    for (int k = 0; k < 100000; k++)
        latq_record(a->q, a->v, 1);
    return NULL;
}

/* Four threads recording at once: nothing lost. */
static void test_latq_threads(void)
{
    latq_t *q = latq_new(S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    pthread_t th[4];
    struct rec_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct rec_arg){q, 1000u * (uint64_t)(i + 1)};
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, recorder, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    latq_view_t w;
    latq_read(q, 2 * S, &w);
    CU_ASSERT_EQUAL(w.count, 400000);
    CU_ASSERT_DOUBLE_EQUAL(w.sum_ms, 100000.0 * (1 + 2 + 3 + 4), 1e-6);
    CU_ASSERT_TRUE(near(w.q_ms[0], 1.0));
    CU_ASSERT_TRUE(near(w.q_ms[1], 2.0));
    CU_ASSERT_TRUE(near(w.q_ms[7], 4.0));
    latq_view_empty(&w);
    CU_ASSERT_EQUAL(w.count, 0);
    CU_ASSERT_TRUE(isnan(w.q_ms[1]));
    latq_free(q);
}

void register_latq_suite(void)
{
    CU_pSuite s = CU_add_suite("latq", NULL, NULL);
    CU_add_test(s, "a window's quantiles, none before it ends", test_latq_window_quantiles);
    CU_add_test(s, "windows apart; an empty window has none; count and sum kept",
                test_latq_windows_apart);
    CU_add_test(s, "the tail's rank is ceil(p * n)", test_latq_tail_rank);
    CU_add_test(s, "recorders on four threads lose nothing", test_latq_threads);
}
