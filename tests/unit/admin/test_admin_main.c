/* unit_admin: route matching, validation, HTTP framing, admin REST service. */
#include "tests/unit/admin/test_admin.h"
#include "tests/unit/support/test_support.h"

static void register_suites(void)
{
    admin_register_pure_suite();
    admin_register_series_suite();
    admin_register_http_suite();
    admin_register_service_suite();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
