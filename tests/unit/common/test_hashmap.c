/* Unit tests of common/hashmap: insert, replace, remove, growth, iteration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "tests/unit/support/test_support.h"

void register_hashmap_suite(void);

static void test_qmap_basic_and_growth(void)
{
    qmap_t *m = qmap_new();
    char key[32];
    static int values[5000];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "topic-%d", i);
        values[i] = i;
        CU_ASSERT_EQUAL(qmap_put(m, key, &values[i]), 0);
    }
    CU_ASSERT_EQUAL(qmap_size(m), 5000);
    for (int i = 0; i < 5000; i += 2) {
        snprintf(key, sizeof key, "topic-%d", i);
        CU_ASSERT_PTR_EQUAL(qmap_remove(m, key), &values[i]);
    }
    CU_ASSERT_EQUAL(qmap_size(m), 2500);
    int found = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "topic-%d", i);
        int *v = qmap_get(m, key);
        if (i % 2) {
            CU_ASSERT_PTR_EQUAL(v, &values[i]);
            found += v != NULL;
        } else {
            CU_ASSERT_PTR_NULL(v);
        }
    }
    CU_ASSERT_EQUAL(found, 2500);
    qmap_iter_t it = {0};
    const char *k;
    void *v;
    int n = 0;
    while (qmap_next(m, &it, &k, &v)) {
        CU_ASSERT_EQUAL(*(int *)v % 2, 1);
        n++;
    }
    CU_ASSERT_EQUAL(n, 2500);
    CU_ASSERT_EQUAL(qmap_put(m, "topic-1", &values[0]), 0); /* replace */
    CU_ASSERT_PTR_EQUAL(qmap_get(m, "topic-1"), &values[0]);
    CU_ASSERT_EQUAL(qmap_size(m), 2500);
    qmap_free(m);
}

static void test_qmap64_churn(void)
{
    qmap64_t *m = qmap64_new();
    static int v;
    /* Insert/remove churn leaves tombstones; the table must stay usable and small. */
    for (uint64_t i = 0; i < 100000; i++) {
        CU_ASSERT_EQUAL(qmap64_put(m, i, &v), 0);
        if (i >= 10)
            CU_ASSERT_PTR_EQUAL(qmap64_remove(m, i - 10), &v);
    }
    CU_ASSERT_EQUAL(qmap64_size(m), 10);
    CU_ASSERT_PTR_EQUAL(qmap64_get(m, 99999), &v);
    CU_ASSERT_PTR_NULL(qmap64_get(m, 5));
    qmap64_free(m);
}

/* qmap64_slot: a value read and written in place; created (NULL) only when
 * asked; the same entry as get/put see, across growth. */
static void test_qmap64_slot(void)
{
    qmap64_t *m = qmap64_new();
    TEST_REQUIRE(m != NULL);
    CU_ASSERT_PTR_NULL(qmap64_slot(m, 7, false)); /* empty map: nothing created */
    CU_ASSERT_EQUAL(qmap64_size(m), 0);
    for (uint64_t k = 0; k < 1000; k++) { /* counts: 1 for each, 2 for multiples of 3 */
        int adds = k % 3 == 0 ? 2 : 1;
        for (int a = 0; a < adds; a++) {
            void **v = qmap64_slot(m, k, true);
            TEST_REQUIRE(v != NULL);
            *v = (void *)((uintptr_t)*v + 1);
        }
    }
    CU_ASSERT_EQUAL(qmap64_size(m), 1000);
    CU_ASSERT_EQUAL((uintptr_t)qmap64_get(m, 3), 2);
    CU_ASSERT_EQUAL((uintptr_t)qmap64_get(m, 4), 1);
    CU_ASSERT_PTR_NULL(qmap64_slot(m, 5000, false));
    CU_ASSERT_EQUAL(qmap64_size(m), 1000);
    void **v = qmap64_slot(m, 4, false);
    TEST_REQUIRE(v != NULL);
    *v = (void *)(uintptr_t)9;
    CU_ASSERT_EQUAL((uintptr_t)qmap64_get(m, 4), 9);
    CU_ASSERT_EQUAL(qmap64_put(m, 4, (void *)(uintptr_t)10), 0);
    CU_ASSERT_EQUAL((uintptr_t)*qmap64_slot(m, 4, false), 10);
    CU_ASSERT_EQUAL((uintptr_t)qmap64_remove(m, 4), 10);
    CU_ASSERT_PTR_NULL(qmap64_slot(m, 4, false));
    void **again = qmap64_slot(m, 4, true); /* in a tombstone's place or not: new, NULL */
    TEST_REQUIRE(again != NULL);
    CU_ASSERT_PTR_NULL(*again);
    CU_ASSERT_EQUAL(qmap64_size(m), 1000);
    qmap64_free(m);
}

void register_hashmap_suite(void)
{
    CU_pSuite s = CU_add_suite("hashmap", NULL, NULL);
    CU_add_test(s, "qmap basic and growth", test_qmap_basic_and_growth);
    CU_add_test(s, "qmap64 churn", test_qmap64_churn);
    CU_add_test(s, "qmap64 slot: in place, created on demand", test_qmap64_slot);
}
