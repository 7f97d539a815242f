/*
 * test_support.h — what every CUnit test executable shares: a main that runs the
 * registered suites with CUnit's basic runner (which prints CUnit's own run
 * summary), bounded waits on an event loop, and scratch directories.
 */
#ifndef QUIRE_TEST_SUPPORT_H
#define QUIRE_TEST_SUPPORT_H

#include <CUnit/Basic.h>
#include <ev.h>
#include <stdbool.h>

/* Registers suites with register_suites(), runs them all (or the suite named by
 * argv[1]), returns the process exit status: 0 iff no failure. */
int test_main(int argc, char **argv, void (*register_suites)(void));

/* Runs the loop until *done becomes true or timeout_s passes; returns *done.
 * Never blocks longer than timeout_s. */
bool test_run_until(struct ev_loop *loop, const volatile bool *done, double timeout_s);
/* Runs the loop for about seconds, whatever happens. */
void test_run_for(struct ev_loop *loop, double seconds);

/* A new empty directory under $TMPDIR (or /tmp): caller frees the string. */
char *test_tmpdir(const char *tag);
/* rm -rf path (bounded to paths under the temporary directory). */
void test_rm_rf(const char *path);

/* CU_ASSERT_* that also stops the test at once when false. */
#define TEST_REQUIRE(cond) CU_ASSERT_FATAL(cond)

#endif
