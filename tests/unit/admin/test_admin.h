/* test_admin.h — the suites of unit_admin (tests of admin-http/). */
#ifndef QUIRE_TEST_ADMIN_H
#define QUIRE_TEST_ADMIN_H

void admin_register_pure_suite(void);
void admin_register_series_suite(void);
void admin_register_http_suite(void);
void admin_register_service_suite(void);

#endif
