/* Unit tests of common/accept_pause: exhausted accepts pause, then resume. */
#include <errno.h>
#include <unistd.h>

#include "common/accept_pause.h"
#include "tests/unit/support/test_support.h"

void register_accept_pause_suite(void);

static void never_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

static void test_accept_pause_and_resume(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    int fds[2];
    TEST_REQUIRE(pipe(fds) == 0);
    ev_io w;
    ev_io_init(&w, never_cb, fds[0], EV_READ);
    ev_io_start(loop, &w);
    accept_pause_t p;
    accept_pause_init(&p, loop);
    CU_ASSERT_FALSE(accept_pause_if_exhausted(&p, &w, ECONNABORTED, "test"));
    CU_ASSERT_TRUE(ev_is_active(&w));
    CU_ASSERT_TRUE(accept_pause_if_exhausted(&p, &w, EMFILE, "test"));
    CU_ASSERT_FALSE(ev_is_active(&w));
    CU_ASSERT_TRUE(accept_pause_if_exhausted(&p, &w, ENFILE, "test")); /* already paused */
    test_run_for(loop, ACCEPT_PAUSE_S * 3);
    CU_ASSERT_TRUE(ev_is_active(&w));
    /* Cancel: a paused watcher is not restarted by a stopping owner's timer. */
    CU_ASSERT_TRUE(accept_pause_if_exhausted(&p, &w, EMFILE, "test"));
    accept_pause_cancel(&p);
    test_run_for(loop, ACCEPT_PAUSE_S * 3);
    CU_ASSERT_FALSE(ev_is_active(&w));
    close(fds[0]);
    close(fds[1]);
    ev_loop_destroy(loop);
}

void register_accept_pause_suite(void)
{
    CU_pSuite s = CU_add_suite("accept_pause", NULL, NULL);
    CU_add_test(s, "pause and resume", test_accept_pause_and_resume);
}
