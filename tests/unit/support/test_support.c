/* test_support.c — see test_support.h. */
#include "tests/unit/support/test_support.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int test_main(int argc, char **argv, void (*register_suites)(void))
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    register_suites();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (argc > 1) {
        CU_pSuite s = CU_get_suite(argv[1]);
        if (!s) {
            fprintf(stderr, "no suite named %s\n", argv[1]);
            CU_cleanup_registry();
            return 2;
        }
        CU_basic_run_suite(s);
    } else {
        CU_basic_run_tests();
    }
    unsigned failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_ErrorCode err = CU_get_error();
    CU_cleanup_registry();
    return (failures || err != CUE_SUCCESS) ? 1 : 0;
}

static void stop_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ONE);
}

static void check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)revents;
    const volatile bool *done = w->data;
    if (*done)
        ev_break(loop, EVBREAK_ONE);
}

bool test_run_until(struct ev_loop *loop, const volatile bool *done, double timeout_s)
{
    if (*done)
        return true;
    ev_timer timer;
    ev_timer_init(&timer, stop_timer_cb, timeout_s, 0);
    ev_timer_start(loop, &timer);
    ev_check check;
    ev_check_init(&check, check_cb);
    check.data = (void *)done;
    ev_check_start(loop, &check);
    /* A periodic wake-up so that *done set by another thread is seen. */
    ev_timer tick;
    ev_timer_init(&tick, stop_timer_cb, 0.0, 0.0);
    ev_now_update(loop);
    double deadline = ev_now(loop) + timeout_s;
    while (!*done && ev_now(loop) < deadline) {
        ev_timer_set(&tick, 0.005, 0.0);
        ev_timer_start(loop, &tick);
        ev_run(loop, EVRUN_ONCE);
        ev_timer_stop(loop, &tick);
        ev_now_update(loop);
    }
    ev_check_stop(loop, &check);
    ev_timer_stop(loop, &timer);
    return *done;
}

void test_run_for(struct ev_loop *loop, double seconds)
{
    static const bool never = false;
    test_run_until(loop, &never, seconds);
}

char *test_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *path = NULL;
    if (asprintf(&path, "%s/quire-test-%s-XXXXXX", base, tag) < 0)
        return NULL;
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void test_rm_rf(const char *path)
{
    if (!path || !strstr(path, "quire-test-"))
        return;
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
