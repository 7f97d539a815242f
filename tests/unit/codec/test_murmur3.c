/* Unit tests of common/murmur3: published MurmurHash3 x86_32 vectors. */
#include <string.h>

#include "common/murmur3.h"
#include "tests/unit/codec/codec_tests.h"
#include "tests/unit/support/test_support.h"

static void test_murmur3_vectors(void)
{
    /* Vectors of the reference implementation (SMHasher), as collected in
     * the well-known verification tables. */
    CU_ASSERT_EQUAL(murmur3_x86_32("", 0, 0), 0u);
    CU_ASSERT_EQUAL(murmur3_x86_32(NULL, 0, 0), 0u);
    CU_ASSERT_EQUAL(murmur3_x86_32("", 0, 1), 0x514E28B7u);
    CU_ASSERT_EQUAL(murmur3_x86_32("", 0, 0xffffffffu), 0x81F16F39u);
    CU_ASSERT_EQUAL(murmur3_x86_32("\xff\xff\xff\xff", 4, 0), 0x76293B50u);
    CU_ASSERT_EQUAL(murmur3_x86_32("\x21\x43\x65\x87", 4, 0), 0xF55B516Bu);
    CU_ASSERT_EQUAL(murmur3_x86_32("\x21\x43\x65\x87", 4, 0x5082EDEEu), 0x2362F9DEu);
    CU_ASSERT_EQUAL(murmur3_x86_32("\x21\x43\x65", 3, 0), 0x7E4A8634u);
    CU_ASSERT_EQUAL(murmur3_x86_32("\x21\x43", 2, 0), 0xA0F7B07Au);
    CU_ASSERT_EQUAL(murmur3_x86_32("\x21", 1, 0), 0x72661CF4u);
    CU_ASSERT_EQUAL(murmur3_x86_32("\0\0\0\0", 4, 0), 0x2362F9DEu);
    CU_ASSERT_EQUAL(murmur3_x86_32("aaaa", 4, 0x9747b28cu), 0x5A97808Au);
    CU_ASSERT_EQUAL(murmur3_x86_32("abc", 3, 0), 0xB3DD93FAu);
    CU_ASSERT_EQUAL(murmur3_x86_32("Hello, world!", 13, 0x9747b28cu), 0x24884CBAu);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    CU_ASSERT_EQUAL(murmur3_x86_32(fox, strlen(fox), 0x9747b28cu), 0x2FA826CDu);
}

static void test_murmur3_unaligned_and_key_hash(void)
{
    char buf[64];
    const char *s = "The quick brown fox jumps over the lazy dog";
    for (size_t off = 1; off < 8; off++) {
        memcpy(buf + off, s, strlen(s));
        CU_ASSERT_EQUAL(murmur3_x86_32(buf + off, strlen(s), 0x9747b28cu), 0x2FA826CDu);
    }
    /* The Key_Shared hash drops the sign bit and is stable. */
    uint32_t h = murmur3_key_hash("key-1", 5);
    CU_ASSERT_EQUAL(h, murmur3_x86_32("key-1", 5, 0) & 0x7fffffffu);
    CU_ASSERT_TRUE(h <= 0x7fffffffu);
    CU_ASSERT_EQUAL(murmur3_key_hash("\xff\xff\xff\xff", 4), 0x76293B50u);
}

void codec_register_murmur3(void)
{
    CU_pSuite s = CU_add_suite("murmur3", NULL, NULL);
    CU_add_test(s, "murmur3 vectors", test_murmur3_vectors);
    CU_add_test(s, "murmur3 unaligned, key hash", test_murmur3_unaligned_and_key_hash);
}
