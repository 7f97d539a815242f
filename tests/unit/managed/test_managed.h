/* test_managed.h — the suites of unit_managed, registered by test_main.c. */
#ifndef QUIRE_TEST_MANAGED_H
#define QUIRE_TEST_MANAGED_H

void register_ack_state_suite(void);
void register_managed_suite(void);

#endif
