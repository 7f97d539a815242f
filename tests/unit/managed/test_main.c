/* test_main.c — unit_managed: the pure ack-state suite and the real-stack suite. */
#include "tests/unit/managed/test_managed.h"
#include "tests/unit/support/test_support.h"

static void register_suites(void)
{
    register_ack_state_suite();
    register_managed_suite();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
