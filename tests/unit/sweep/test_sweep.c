/*
 * test_sweep.c — the broker's periodic walks over its topics in slices
 * (server/sweep.c): every entry visited once per walk, at most SWEEP_SLICE
 * of them per loop iteration, a period that comes during a walk does not
 * restart it, entries removed before their turn are not visited, and a stop
 * ends a walk in progress; a walk asked for at once (no period), and asked
 * again during it, walks again from the start after it; a walk during which
 * the map rehashes starts again and skips nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/sweep.h"
#include "tests/unit/support/test_support.h"

enum { N = 5000 };

typedef struct fixture {
    qmap_t *map;
    int count[N];     /* visits of entry i */
    int idx[N];       /* the values: &idx[i] == i */
    uint32_t visited; /* since the last loop iteration */
    uint32_t iter_max, iters_visiting;
    sweep_t sw;
    bool removing; /* remove the odd entries not yet visited after the first slice */
    bool stop_after_first;
    bool done;
    uint64_t later; /* visits of walks after the first */
} fixture_t;

static void key_of(int i, char *k, size_t n)
{
    snprintf(k, n, "persistent://t/ns/topic-%d", i);
}

static void visit(void *ctx, void *value)
{
    fixture_t *f = ctx;
    if (f->sw.sweeps > 0) { /* the next period's walk, begun before the test stopped */
        f->later++;
        return;
    }
    f->visited++; /* of the first walk, in this loop iteration */
    f->count[*(int *)value]++;
}

/* Before the loop waits (after every iteration): what this iteration visited. */
static void prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    fixture_t *f = w->data;
    if (f->visited) {
        f->iters_visiting++;
        if (f->visited > f->iter_max)
            f->iter_max = f->visited;
    }
    f->visited = 0;
    if (f->iters_visiting == 1 && f->removing) {
        f->removing = false;
        for (int i = 1; i < N; i += 2) {
            if (f->count[i] == 0) {
                char k[64];
                key_of(i, k, sizeof k);
                qmap_remove(f->map, k);
                f->count[i] = -1000; /* must stay below 0 */
            }
        }
    }
    if (f->iters_visiting == 1 && f->stop_after_first)
        sweep_stop(&f->sw);
    if (f->sw.sweeps >= 1 || (f->stop_after_first && f->iters_visiting >= 1))
        f->done = true;
}

static void fixture_run(fixture_t *f, double period_s)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    f->map = qmap_new();
    TEST_REQUIRE(loop != NULL && f->map != NULL);
    for (int i = 0; i < N; i++) {
        char k[64];
        key_of(i, k, sizeof k);
        f->idx[i] = i;
        TEST_REQUIRE(qmap_put(f->map, k, &f->idx[i]) == 0);
    }
    ev_prepare prep;
    ev_prepare_init(&prep, prepare_cb);
    prep.data = f;
    ev_prepare_start(loop, &prep);
    sweep_init(&f->sw, loop, &f->map, period_s, visit, f);
    sweep_start(&f->sw);
    CU_ASSERT_TRUE(test_run_until(loop, &f->done, 10.0));
    sweep_stop(&f->sw);
    ev_prepare_stop(loop, &prep);
    test_run_for(loop, 0.02); /* nothing more may run */
    qmap_free(f->map);
    ev_loop_destroy(loop);
}

static void test_walk_in_slices(void)
{
    static fixture_t f;
    memset(&f, 0, sizeof f);
    fixture_run(&f, 0.001); /* periods come during the walk: it goes on, once */
    int once = 0;
    for (int i = 0; i < N; i++)
        once += f.count[i] == 1;
    CU_ASSERT_EQUAL(once, N);
    CU_ASSERT_EQUAL(f.sw.visits, (uint64_t)N + f.later);
    CU_ASSERT_TRUE(f.sw.slice_max >= 1 && f.sw.slice_max <= SWEEP_SLICE);
    CU_ASSERT_TRUE(f.iter_max <= SWEEP_SLICE);
    CU_ASSERT_TRUE(f.iters_visiting >= (N + SWEEP_SLICE - 1) / SWEEP_SLICE);
}

static void test_removed_not_visited(void)
{
    static fixture_t f;
    memset(&f, 0, sizeof f);
    f.removing = true;
    fixture_run(&f, 0.001);
    int removed = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        if (f.count[i] < 0)
            removed++, bad += f.count[i] != -1000;
        else
            bad += f.count[i] != 1;
    }
    CU_ASSERT_TRUE(removed > 0);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(f.sw.visits, (uint64_t)(N - removed) + f.later);
}

static void test_stop_ends_walk(void)
{
    static fixture_t f;
    memset(&f, 0, sizeof f);
    f.stop_after_first = true;
    fixture_run(&f, 0.001);
    CU_ASSERT_TRUE(f.sw.visits >= 1 && f.sw.visits == f.sw.slice_max); /* one slice */
    CU_ASSERT_EQUAL(f.sw.sweeps, 0);
    CU_ASSERT_FALSE(f.sw.walking);
}

/* A map of N entries, entry i's value &idx[i] (idx[i] = i). */
static qmap_t *map_of_n(int *idx)
{
    qmap_t *map = qmap_new();
    TEST_REQUIRE(map != NULL);
    for (int i = 0; i < N; i++) {
        char k[64];
        key_of(i, k, sizeof k);
        idx[i] = i;
        TEST_REQUIRE(qmap_put(map, k, &idx[i]) == 0);
    }
    return map;
}

typedef struct now_fixture {
    sweep_t sw;
    int count[N];
    uint32_t iters_visiting;
    uint64_t seen; /* sw.visits at the last prepare */
    bool done;
} now_fixture_t;

static void now_visit(void *ctx, void *value)
{
    now_fixture_t *f = ctx;
    f->count[*(int *)value]++;
}

/* The second iteration that visits asks for another walk, during the first. */
static void now_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    now_fixture_t *f = w->data;
    if (f->sw.visits > f->seen && ++f->iters_visiting == 2) {
        CU_ASSERT_TRUE(f->sw.walking);
        sweep_now(&f->sw);
    }
    f->seen = f->sw.visits;
    f->done = f->sw.sweeps >= 2 && !f->sw.walking;
}

static void test_walk_now_and_again(void)
{
    static now_fixture_t f;
    static int idx[N];
    memset(&f, 0, sizeof f);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    qmap_t *map = map_of_n(idx);
    TEST_REQUIRE(loop != NULL);
    ev_prepare prep;
    ev_prepare_init(&prep, now_prepare_cb);
    prep.data = &f;
    ev_prepare_start(loop, &prep);
    sweep_init(&f.sw, loop, &map, 0, now_visit, &f); /* no period, no sweep_start */
    test_run_for(loop, 0.02);
    CU_ASSERT_EQUAL(f.sw.visits, 0); /* nothing until asked */
    sweep_now(&f.sw);
    CU_ASSERT_TRUE(f.sw.visits >= 1 && f.sw.visits < N); /* its first slice, at once */
    CU_ASSERT_TRUE(f.sw.walking);
    CU_ASSERT_TRUE(test_run_until(loop, &f.done, 10.0));
    test_run_for(loop, 0.02); /* no third walk */
    int twice = 0;
    for (int i = 0; i < N; i++)
        twice += f.count[i] == 2;
    CU_ASSERT_EQUAL(twice, N);
    CU_ASSERT_EQUAL(f.sw.sweeps, 2);
    CU_ASSERT_EQUAL(f.sw.visits, 2 * (uint64_t)N);
    CU_ASSERT_FALSE(f.sw.walking);
    sweep_stop(&f.sw);
    ev_prepare_stop(loop, &prep);
    qmap_free(map);
    ev_loop_destroy(loop);
}

/* The map grows during a walk (its entries move): the walk starts again from
 * the first slot, so no entry that was there all along is skipped. */
typedef struct grow_fixture {
    sweep_t sw;
    qmap_t *map;
    int count[N];
    int added_idx[4 * N];
    uint32_t iters_visiting;
    uint64_t seen;
    bool done;
} grow_fixture_t;

static void grow_visit(void *ctx, void *value)
{
    grow_fixture_t *f = ctx;
    int i = *(int *)value;
    if (i < N)
        f->count[i]++;
}

static void grow_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    grow_fixture_t *f = w->data;
    if (f->sw.visits > f->seen && ++f->iters_visiting == 1) {
        uint32_t before = qmap_rehashes(f->map);
        for (int i = 0; i < 4 * N; i++) { /* the map grows at least twice */
            char k[64];
            snprintf(k, sizeof k, "persistent://t/ns/added-%d", i);
            f->added_idx[i] = N + i;
            CU_ASSERT_EQUAL(qmap_put(f->map, k, &f->added_idx[i]), 0);
        }
        CU_ASSERT_TRUE(qmap_rehashes(f->map) > before);
    }
    f->seen = f->sw.visits;
    f->done = f->sw.sweeps >= 1 && !f->sw.walking;
}

static void test_walk_restarts_after_rehash(void)
{
    static grow_fixture_t f;
    static int idx[N];
    memset(&f, 0, sizeof f);
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    f.map = map_of_n(idx);
    TEST_REQUIRE(loop != NULL);
    ev_prepare prep;
    ev_prepare_init(&prep, grow_prepare_cb);
    prep.data = &f;
    ev_prepare_start(loop, &prep);
    sweep_init(&f.sw, loop, &f.map, 0, grow_visit, &f);
    sweep_now(&f.sw);
    CU_ASSERT_TRUE(test_run_until(loop, &f.done, 10.0));
    int missed = 0;
    for (int i = 0; i < N; i++)
        missed += f.count[i] == 0;
    CU_ASSERT_EQUAL(missed, 0);
    CU_ASSERT_EQUAL(f.sw.sweeps, 1);
    CU_ASSERT_TRUE(f.sw.restarts >= 1);
    sweep_stop(&f.sw);
    ev_prepare_stop(loop, &prep);
    qmap_free(f.map);
    ev_loop_destroy(loop);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("sweep", NULL, NULL);
    CU_add_test(s, "every entry once, a slice per loop iteration", test_walk_in_slices);
    CU_add_test(s, "entries removed before their turn are not visited", test_removed_not_visited);
    CU_add_test(s, "a stop ends the walk in progress", test_stop_ends_walk);
    CU_add_test(s, "a walk at once; asked again during it, another after it",
                test_walk_now_and_again);
    CU_add_test(s, "the map rehashed during a walk: it starts again, nothing skipped",
                test_walk_restarts_after_rehash);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
