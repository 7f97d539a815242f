/* Unit tests of server/codec/ and common/murmur3: main and shared helpers. */
#include "tests/unit/codec/codec_tests.h"
#include "tests/unit/support/test_support.h"

int codec_decode_whole(const qbuf_t *b, frame_t *f)
{
    size_t consumed = 0;
    int rc = frame_decode(b->data, b->len, FRAME_DEFAULT_MAX_FRAME_BYTES, f, &consumed);
    if (rc == 0 && consumed != b->len) {
        frame_free(f);
        return -1;
    }
    return rc;
}

static void register_suites(void)
{
    codec_register_frame();
    codec_register_commands();
    codec_register_topic_name();
    codec_register_murmur3();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
