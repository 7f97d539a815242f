/* Unit tests of server/codec/topic_name: Pulsar's topic name rules. */
#include <string.h>

#include "common/errors.h"
#include "server/codec/topic_name.h"
#include "tests/unit/codec/codec_tests.h"
#include "tests/unit/support/test_support.h"

static topic_name_t tn; /* large: keep it off the stack */

static void test_full_names(void)
{
    TEST_REQUIRE(topic_name_parse("persistent://my-tenant/my-ns/my-topic", &tn) == 0);
    CU_ASSERT_EQUAL(tn.domain, TOPIC_PERSISTENT);
    CU_ASSERT_STRING_EQUAL(tn.tenant, "my-tenant");
    CU_ASSERT_STRING_EQUAL(tn.ns, "my-ns");
    CU_ASSERT_STRING_EQUAL(tn.local, "my-topic");
    CU_ASSERT_STRING_EQUAL(tn.full, "persistent://my-tenant/my-ns/my-topic");
    CU_ASSERT_STRING_EQUAL(tn.base, tn.full);
    CU_ASSERT_STRING_EQUAL(tn.namespace_name, "my-tenant/my-ns");
    CU_ASSERT_EQUAL(tn.partition, -1);

    TEST_REQUIRE(topic_name_parse("non-persistent://t/n/x.y:z=1_2", &tn) == 0);
    CU_ASSERT_EQUAL(tn.domain, TOPIC_NON_PERSISTENT);
    CU_ASSERT_STRING_EQUAL(tn.full, "non-persistent://t/n/x.y:z=1_2");
}

static void test_short_names(void)
{
    TEST_REQUIRE(topic_name_parse("my-topic", &tn) == 0);
    CU_ASSERT_STRING_EQUAL(tn.full, "persistent://public/default/my-topic");
    CU_ASSERT_STRING_EQUAL(tn.namespace_name, "public/default");
    TEST_REQUIRE(topic_name_parse("tenant/ns/topic", &tn) == 0);
    CU_ASSERT_STRING_EQUAL(tn.full, "persistent://tenant/ns/topic");
    CU_ASSERT_EQUAL(tn.domain, TOPIC_PERSISTENT);
}

static void test_partitions(void)
{
    TEST_REQUIRE(topic_name_parse("persistent://t/n/orders-partition-3", &tn) == 0);
    CU_ASSERT_EQUAL(tn.partition, 3);
    CU_ASSERT_STRING_EQUAL(tn.base, "persistent://t/n/orders");
    CU_ASSERT_STRING_EQUAL(tn.local, "orders-partition-3");
    char buf[TOPIC_NAME_MAX + 1];
    CU_ASSERT_EQUAL(topic_name_partition(&tn, 11, buf, sizeof buf), 0);
    CU_ASSERT_STRING_EQUAL(buf, "persistent://t/n/orders-partition-11");
    CU_ASSERT_EQUAL(topic_name_partition(&tn, -1, buf, sizeof buf), QE_INVALID);
    CU_ASSERT_EQUAL(topic_name_partition(&tn, 1, buf, 10), QE_TOO_LARGE);

    /* The last suffix counts. */
    TEST_REQUIRE(topic_name_parse("a-partition-1-partition-22", &tn) == 0);
    CU_ASSERT_EQUAL(tn.partition, 22);
    CU_ASSERT_STRING_EQUAL(tn.base, "persistent://public/default/a-partition-1");
    TEST_REQUIRE(topic_name_parse("t-partition-0", &tn) == 0);
    CU_ASSERT_EQUAL(tn.partition, 0);
    /* Not canonical ints: not partitions (Java's getPartitionIndex). */
    const char *notp[] = {"t-partition-01",          "t-partition-",
                          "t-partition-x",           "t-partition--1",
                          "t-partition-99999999999", "t-partition-1a"};
    for (size_t i = 0; i < sizeof notp / sizeof notp[0]; i++) {
        TEST_REQUIRE(topic_name_parse(notp[i], &tn) == 0);
        CU_ASSERT_EQUAL(tn.partition, -1);
        CU_ASSERT_STRING_EQUAL(tn.base, tn.full);
    }
}

static void test_invalid_names(void)
{
    const char *bad[] = {
        "",                                /* empty */
        "persistent://",                   /* no parts */
        "persistent://t/n/",               /* empty local name */
        "persistent://t//x",               /* empty namespace */
        "persistent:///n/x",               /* empty tenant */
        "persistent://t/n",                /* two parts */
        "a/b",                             /* short form with two parts */
        "persistent://p/cluster/ns/topic", /* legacy v1, unsupported */
        "a/b/c/d",                         /* four parts */
        "kafka://t/n/x",                   /* unknown domain */
        "Persistent://t/n/x",              /* domain is case-sensitive */
        "persistent://te nant/n/x",        /* space in tenant */
        "persistent://t/n$s/x",            /* '$' in namespace */
        "persistent://t/n/x\ny",           /* control byte in local name */
        "persistent://t/n/   ",            /* blank local name */
        "/",
        "//",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL_FATAL(topic_name_parse(bad[i], &tn), QE_INVALID);
    CU_ASSERT_EQUAL(topic_name_parse(NULL, &tn), QE_INVALID);
    CU_ASSERT_TRUE(topic_name_valid_entity("a-b_c.d:e=f9", 12));
    CU_ASSERT_FALSE(topic_name_valid_entity("", 0));
    CU_ASSERT_FALSE(topic_name_valid_entity("a/b", 3));
}

static void test_too_long(void)
{
    static char big[TOPIC_NAME_MAX + 64];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CU_ASSERT_EQUAL(topic_name_parse(big, &tn), QE_TOO_LARGE);
    /* A local name that fits alone but not with the implied prefix. */
    big[TOPIC_NAME_MAX - 5] = '\0';
    CU_ASSERT_EQUAL(topic_name_parse(big, &tn), QE_TOO_LARGE);
    big[100] = '\0';
    CU_ASSERT_EQUAL(topic_name_parse(big, &tn), 0);
    /* The canonical name exactly at the limit, then one byte past it (which
     * leaves the last good parse as it was). */
    const char *prefix = "persistent://public/default/";
    size_t local = TOPIC_NAME_MAX - strlen(prefix);
    memset(big, 'b', sizeof big - 1);
    big[local] = '\0';
    CU_ASSERT_EQUAL(topic_name_parse(big, &tn), 0);
    CU_ASSERT_EQUAL(strlen(tn.full), TOPIC_NAME_MAX);
    CU_ASSERT_EQUAL(strncmp(tn.full, prefix, strlen(prefix)), 0);
    CU_ASSERT_STRING_EQUAL(tn.base, tn.full);
    CU_ASSERT_STRING_EQUAL(tn.namespace_name, "public/default");
    big[local] = 'b';
    big[local + 1] = '\0';
    CU_ASSERT_EQUAL(topic_name_parse(big, &tn), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(strlen(tn.full), TOPIC_NAME_MAX);
}

void codec_register_topic_name(void)
{
    CU_pSuite s = CU_add_suite("topic_name", NULL, NULL);
    CU_add_test(s, "full names", test_full_names);
    CU_add_test(s, "short names", test_short_names);
    CU_add_test(s, "partition suffix", test_partitions);
    CU_add_test(s, "invalid names", test_invalid_names);
    CU_add_test(s, "too long", test_too_long);
}
