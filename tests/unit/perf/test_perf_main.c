/* Unit tests of quire-perf's library (tools/quire_perf*.c): main and helpers. */
#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"

int perf_test_decode(const qbuf_t *b, frame_t *f)
{
    size_t used = 0;
    int rc = frame_decode(b->data, b->len, FRAME_DEFAULT_MAX_FRAME_BYTES, f, &used);
    if (rc == 0 && used != b->len) {
        frame_free(f);
        return -1;
    }
    return rc;
}

static void register_suites(void)
{
    perf_register_opts();
    perf_register_report();
    perf_register_wire();
    perf_register_client();
    perf_register_timer();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
