/* Unit tests of common/hist: percentiles within the stated relative error. */
#include <stdlib.h>

#include "common/hist.h"
#include "tests/unit/support/test_support.h"

void register_hist_suite(void);

static hist_t h;

static void test_hist_exact_small_values(void)
{
    hist_init(&h);
    for (uint64_t v = 1; v <= 100; v++)
        hist_record(&h, v);
    CU_ASSERT_EQUAL(h.total, 100);
    CU_ASSERT_EQUAL(hist_percentile(&h, 50), 50);
    CU_ASSERT_EQUAL(hist_percentile(&h, 99), 99);
    CU_ASSERT_EQUAL(hist_percentile(&h, 100), 100);
    CU_ASSERT_EQUAL(h.min, 1);
    CU_ASSERT_DOUBLE_EQUAL(hist_mean(&h), 50.5, 1e-9);
}

static void test_hist_relative_error(void)
{
    hist_init(&h);
    /* 1..1,000,000 uniformly: p-th percentile is p * 10,000. */
    for (uint64_t v = 1; v <= 1000000; v++)
        hist_record(&h, v);
    double ps[] = {50, 90, 99, 99.9, 99.99};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        double want = ps[i] * 10000.0;
        double got = (double)hist_percentile(&h, ps[i]);
        CU_ASSERT_TRUE(got >= want * (1 - 1.0 / HIST_SUB_COUNT) - 1);
        CU_ASSERT_TRUE(got <= want * (1 + 1.0 / HIST_SUB_COUNT) + 1);
    }
    CU_ASSERT_EQUAL(hist_percentile(&h, 100), 1000000);
}

static void test_hist_merge_and_huge(void)
{
    static hist_t a, b;
    hist_init(&a);
    hist_init(&b);
    hist_record(&a, 10);
    hist_record(&b, UINT64_MAX / 2);
    hist_merge(&a, &b);
    CU_ASSERT_EQUAL(a.total, 2);
    CU_ASSERT_EQUAL(a.max, UINT64_MAX / 2);
    CU_ASSERT_EQUAL(hist_percentile(&a, 100), UINT64_MAX / 2);
    CU_ASSERT_EQUAL(hist_percentile(&a, 50), 10);
}

void register_hist_suite(void)
{
    CU_pSuite s = CU_add_suite("hist", NULL, NULL);
    CU_add_test(s, "exact small values", test_hist_exact_small_values);
    CU_add_test(s, "relative error", test_hist_relative_error);
    CU_add_test(s, "merge and huge values", test_hist_merge_and_huge);
}
