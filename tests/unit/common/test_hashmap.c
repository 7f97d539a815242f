/* Unit tests of common/hashmap: insert, replace, remove, growth, iteration. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "tests/unit/support/test_support.h"

/* Random puts, removes and gets on every kind of map against a plain array,
 * over a small key space (so removed keys come back into tombstones' places):
 * every get, the size and a final iteration agree with the array. Integer keys
 * include 0 and UINT64_MAX (a slot keeps the key itself beside its state); the
 * runs map's keys are positions, 40 entries in each of 15 ledgers. */
#define RND_KEYS 600
static uint64_t rnd_key(int i)
{
    return i == 0 ? 0 : i == 1 ? UINT64_MAX : (uint64_t)i * 0x9E3779B97F4A7C15ull;
}
static uint64_t run_key(int i)
{
    return i == 0 ? 0 : i == 1 ? UINT64_MAX : (uint64_t)(i / 40 + 3) << 24 | (uint64_t)(i % 40);
}

/* Iterates m: each entry's key is keyf(i) for some i, seen once, its value
 * ref[i] (else *bad grows). Returns the entries seen. */
static size_t iterate_against(const qmap64_t *m, uint64_t (*keyf)(int), void *const *ref,
                              size_t *bad)
{
    bool seen[RND_KEYS] = {false};
    qmap_iter_t it = {0};
    uint64_t k64;
    void *v;
    size_t n = 0;
    while (qmap64_next(m, &it, &k64, &v)) {
        int i = -1;
        for (int j = 0; j < RND_KEYS && i < 0; j++)
            if (keyf(j) == k64)
                i = j;
        *bad += i < 0 || seen[i] || ref[i] != v;
        if (i >= 0)
            seen[i] = true;
        n++;
    }
    return n;
}

static void test_random_against_array(void)
{
    static int vals[RND_KEYS];
    void *ref64[RND_KEYS] = {0}, *refs[RND_KEYS] = {0};
    qmap64_t *m64 = qmap64_new(), *mr = qmap64_new_runs();
    qmap_t *ms = qmap_new();
    TEST_REQUIRE(m64 && mr && ms);
    uint64_t x = 88172645463325252ull; /* xorshift64 */
    size_t n64 = 0, ns = 0, bad = 0;
    char key[32];
    for (int op = 0; op < 200000; op++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int i = (int)(x % RND_KEYS), what = (int)((x >> 32) % 3);
        snprintf(key, sizeof key, "key-%d", i);
        if (what == 0) { /* put (insert or replace) */
            bad += qmap64_put(m64, rnd_key(i), &vals[(i + op) % RND_KEYS]) != 0;
            bad += qmap64_put(mr, run_key(i), &vals[(i + op) % RND_KEYS]) != 0;
            n64 += ref64[i] == NULL;
            ref64[i] = &vals[(i + op) % RND_KEYS];
            bad += qmap_put(ms, key, &vals[i]) != 0;
            ns += refs[i] == NULL;
            refs[i] = &vals[i];
        } else if (what == 1) { /* remove */
            bad += qmap64_remove(m64, rnd_key(i)) != ref64[i];
            bad += qmap64_remove(mr, run_key(i)) != ref64[i];
            n64 -= ref64[i] != NULL;
            ref64[i] = NULL;
            bad += qmap_remove(ms, key) != refs[i];
            ns -= refs[i] != NULL;
            refs[i] = NULL;
        } else {
            bad += qmap64_get(m64, rnd_key(i)) != ref64[i];
            bad += qmap64_get(mr, run_key(i)) != ref64[i];
            bad += qmap_get(ms, key) != refs[i];
        }
        bad += qmap64_size(m64) != n64 || qmap64_size(mr) != n64 || qmap_size(ms) != ns;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_TRUE(n64 > 0 && ns > 0);
    /* iteration: every live entry once, nothing else */
    CU_ASSERT_EQUAL(iterate_against(m64, rnd_key, ref64, &bad), n64);
    CU_ASSERT_EQUAL(iterate_against(mr, run_key, ref64, &bad), n64);
    qmap_iter_t it = {0};
    uint64_t k64;
    void *v;
    const char *ks;
    size_t n = 0;
    while (qmap_next(ms, &it, &ks, &v)) {
        int i = atoi(ks + 4);
        bad += strncmp(ks, "key-", 4) != 0 || refs[i] != v;
        n++;
    }
    CU_ASSERT_EQUAL(n, ns);
    CU_ASSERT_EQUAL(bad, 0);
    /* removing the current entry while iterating empties the map */
    it = (qmap_iter_t){0};
    while (qmap_next(ms, &it, &ks, NULL)) {
        snprintf(key, sizeof key, "%s", ks);
        bad += qmap_remove(ms, key) == NULL;
    }
    CU_ASSERT_EQUAL(qmap_size(ms), 0);
    it = (qmap_iter_t){0};
    while (qmap64_next(mr, &it, &k64, NULL))
        bad += qmap64_remove(mr, k64) == NULL;
    CU_ASSERT_EQUAL(qmap64_size(mr), 0);
    CU_ASSERT_EQUAL(bad, 0);
    qmap64_free(m64);
    qmap64_free(mr);
    qmap_free(ms);
}

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

/* qmap64_new_runs: consecutive keys sit side by side (iteration walks the
 * slots in order, so an aligned run of 16 comes out in order, which keys mixed
 * whole would not); a window of positions moving forward through several
 * ledgers (put the newest, remove the oldest) keeps every key it should and
 * none it should not. */
static void test_qmap64_runs(void)
{
    qmap64_t *m = qmap64_new_runs();
    TEST_REQUIRE(m != NULL);
    static int v;
    uint64_t base = (uint64_t)77 << 24 | 4096; /* ledger 77, entries 4096..4111 */
    for (uint64_t k = 0; k < 16; k++)
        CU_ASSERT_EQUAL(qmap64_put(m, base + 15 - k, &v), 0); /* put newest first */
    qmap_iter_t it = {0};
    uint64_t key, want = base;
    size_t in_order = 0;
    while (qmap64_next(m, &it, &key, NULL))
        in_order += key == want++;
    CU_ASSERT_EQUAL(in_order, 16);
    qmap64_free(m);

    m = qmap64_new_runs();
    TEST_REQUIRE(m != NULL);
    size_t bad = 0;
    uint64_t ledger = 5, entry = 0, oldest_l = 5, oldest_e = 0;
    for (int i = 0; i < 200000; i++) {
        bad += qmap64_put(m, ledger << 24 | entry, &v) != 0;
        if (++entry == 30000) { /* the next ledger */
            ledger += 3;
            entry = 0;
        }
        if (i >= 1000) { /* the window: the newest 1,000 */
            bad += qmap64_remove(m, oldest_l << 24 | oldest_e) != &v;
            if (++oldest_e == 30000) {
                oldest_l += 3;
                oldest_e = 0;
            }
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(qmap64_size(m), 1000);
    CU_ASSERT_PTR_EQUAL(qmap64_get(m, (ledger << 24 | entry) - 1), &v);
    CU_ASSERT_PTR_NULL(qmap64_get(m, oldest_l << 24 | (oldest_e - 1)));
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
    CU_add_test(s, "qmap64 runs: consecutive keys side by side", test_qmap64_runs);
    CU_add_test(s, "random operations against an array, every kind", test_random_against_array);
}
