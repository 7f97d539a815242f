/* Unit tests of quire-perf's command line: defaults, every option, bounds,
 * service URLs, topic lists. */
#include <string.h>

#include "common/errors.h"
#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"
#include "tools/quire_perf.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int parse(int argc, char **argv, perf_opts_t *o, char *err)
{
    return perf_opts_parse(argc, argv, o, err, 256);
}

static void test_defaults(void)
{
    char *argv[] = {"quire-perf", "produce"};
    perf_opts_t o;
    char err[256];
    TEST_REQUIRE(parse(ARGC(argv), argv, &o, err) == 0);
    CU_ASSERT_EQUAL(o.mode, PERF_MODE_PRODUCE);
    CU_ASSERT_STRING_EQUAL(o.service_url, "pulsar://localhost:6650");
    TEST_REQUIRE(o.n_topics == 1);
    CU_ASSERT_STRING_EQUAL(o.topics[0], "persistent://public/default/perf-topic");
    CU_ASSERT_TRUE(o.partitions);
    CU_ASSERT_EQUAL(o.size_bytes, 1024);
    CU_ASSERT_DOUBLE_EQUAL(o.rate, 100, 1e-9);
    CU_ASSERT_EQUAL(o.batch_max_messages, 1000);
    CU_ASSERT_EQUAL(o.max_pending, 1000);
    CU_ASSERT_EQUAL(o.compression, PULSAR__PROTO__COMPRESSION_TYPE__NONE);
    CU_ASSERT_DOUBLE_EQUAL(o.report_interval_s, 5, 1e-9);
    CU_ASSERT_PTR_NULL(o.json_path);
    CU_ASSERT_FALSE(o.host_witness);
    perf_opts_free(&o);
}

static void test_all_options(void)
{
    char *argv[] = {"quire-perf",
                    "both",
                    "--service-url",
                    "pulsar://broker:7000",
                    "--topics",
                    "a,tenant/ns/b,persistent://x/y/c",
                    "--no-partitions",
                    "--producers-per-topic",
                    "3",
                    "--consumers-per-topic",
                    "2",
                    "--subscription",
                    "s1",
                    "--subscription-type",
                    "key_shared",
                    "--subscription-position",
                    "Earliest",
                    "--size",
                    "100",
                    "--rate",
                    "2500.5",
                    "--batch-max-delay-ms",
                    "5",
                    "--batch-max-messages",
                    "50",
                    "--batch-max-bytes",
                    "65536",
                    "--compression",
                    "zstd",
                    "--max-pending",
                    "77",
                    "--seconds",
                    "12",
                    "--messages",
                    "1000",
                    "--warmup-seconds",
                    "0",
                    "--keys",
                    "9",
                    "--json",
                    "/tmp/x.json",
                    "--report-interval-s",
                    "2",
                    "--receiver-queue-size",
                    "500",
                    "--ack",
                    "cumulative",
                    "--host-witness"};
    perf_opts_t o;
    char err[256];
    int rc = parse(ARGC(argv), argv, &o, err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    TEST_REQUIRE(rc == 0);
    CU_ASSERT_EQUAL(o.mode, PERF_MODE_BOTH);
    CU_ASSERT_STRING_EQUAL(o.service_url, "pulsar://broker:7000");
    TEST_REQUIRE(o.n_topics == 3);
    CU_ASSERT_STRING_EQUAL(o.topics[0], "persistent://public/default/a");
    CU_ASSERT_STRING_EQUAL(o.topics[1], "persistent://tenant/ns/b");
    CU_ASSERT_STRING_EQUAL(o.topics[2], "persistent://x/y/c");
    CU_ASSERT_FALSE(o.partitions);
    CU_ASSERT_EQUAL(o.producers_per_topic, 3);
    CU_ASSERT_EQUAL(o.consumers_per_topic, 2);
    CU_ASSERT_STRING_EQUAL(o.subscription, "s1");
    CU_ASSERT_EQUAL(o.sub_type, PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared);
    CU_ASSERT_TRUE(o.sub_earliest);
    CU_ASSERT_EQUAL(o.size_bytes, 100);
    CU_ASSERT_DOUBLE_EQUAL(o.rate, 2500.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(o.batch_max_delay_ms, 5, 1e-9);
    CU_ASSERT_EQUAL(o.batch_max_messages, 50);
    CU_ASSERT_EQUAL(o.batch_max_bytes, 65536);
    CU_ASSERT_EQUAL(o.compression, PULSAR__PROTO__COMPRESSION_TYPE__ZSTD);
    CU_ASSERT_EQUAL(o.max_pending, 77);
    CU_ASSERT_DOUBLE_EQUAL(o.seconds, 12, 1e-9);
    CU_ASSERT_EQUAL(o.messages, 1000);
    CU_ASSERT_DOUBLE_EQUAL(o.warmup_seconds, 0, 1e-9);
    CU_ASSERT_EQUAL(o.keys, 9);
    CU_ASSERT_STRING_EQUAL(o.json_path, "/tmp/x.json");
    CU_ASSERT_DOUBLE_EQUAL(o.report_interval_s, 2, 1e-9);
    CU_ASSERT_EQUAL(o.receiver_queue_size, 500);
    CU_ASSERT_EQUAL(o.ack_type, PERF_ACK_CUMULATIVE);
    CU_ASSERT_TRUE(o.host_witness);
    perf_opts_free(&o);
}

static void test_prefix_and_batching(void)
{
    char *argv[] = {"quire-perf",   "consume", "--topic-prefix",    "t",
                    "--num-topics", "3",       "--disable-batching"};
    perf_opts_t o;
    char err[256];
    TEST_REQUIRE(parse(ARGC(argv), argv, &o, err) == 0);
    TEST_REQUIRE(o.n_topics == 3);
    CU_ASSERT_STRING_EQUAL(o.topics[2], "persistent://public/default/t-2");
    CU_ASSERT_EQUAL(o.batch_max_messages, 1);
    perf_opts_free(&o);
}

static void expect_invalid(int argc, char **argv, const char *needle)
{
    perf_opts_t o;
    char err[256] = "";
    int rc = parse(argc, argv, &o, err);
    CU_ASSERT_EQUAL(rc, QE_INVALID);
    if (needle && !strstr(err, needle)) {
        fprintf(stderr, "error '%s' lacks '%s'\n", err, needle);
        CU_FAIL("error message");
    }
    perf_opts_free(&o);
}

static void test_errors(void)
{
    char *a1[] = {"quire-perf"};
    expect_invalid(ARGC(a1), a1, "missing mode");
    char *a2[] = {"quire-perf", "spray"};
    expect_invalid(ARGC(a2), a2, "unknown mode");
    char *a3[] = {"quire-perf", "produce", "--size", "0"};
    expect_invalid(ARGC(a3), a3, "--size");
    char *a4[] = {"quire-perf", "produce", "--size", "6000000"};
    expect_invalid(ARGC(a4), a4, "--size");
    char *a5[] = {"quire-perf", "produce", "--rate", "-1"};
    expect_invalid(ARGC(a5), a5, "--rate");
    char *a6[] = {"quire-perf", "produce", "--compression", "brotli"};
    expect_invalid(ARGC(a6), a6, "--compression");
    char *a7[] = {"quire-perf", "consume", "--subscription-type", "Broadcast"};
    expect_invalid(ARGC(a7), a7, "--subscription-type");
    char *a8[] = {"quire-perf", "produce", "--service-url", "http://x:80"};
    expect_invalid(ARGC(a8), a8, "--service-url");
    char *a9[] = {"quire-perf", "produce", "--topics", "a", "--topic-prefix", "p"};
    expect_invalid(ARGC(a9), a9, "exclude");
    char *a10[] = {"quire-perf", "produce", "--max-pending", "100001"};
    expect_invalid(ARGC(a10), a10, "--max-pending");
    char *a10b[] = {"quire-perf", "produce", "--messages-per-producer", "0"};
    expect_invalid(ARGC(a10b), a10b, "--messages-per-producer");
    char *a11[] = {"quire-perf", "produce", "--bogus"};
    expect_invalid(ARGC(a11), a11, "unknown option");
    char *a12[] = {"quire-perf", "produce", "--topics", "a/b/c/d/e"};
    expect_invalid(ARGC(a12), a12, "topic");
    char *a13[] = {"quire-perf",
                   "both",
                   "--topic-prefix",
                   "p",
                   "--num-topics",
                   "1000",
                   "--producers-per-topic",
                   "3",
                   "--consumers-per-topic",
                   "2"};
    expect_invalid(ARGC(a13), a13, "too many");
    char *a14[] = {"quire-perf", "produce", "extra"};
    expect_invalid(ARGC(a14), a14, "unexpected");
    char *a15[] = {"quire-perf", "produce", "--batcher", "per-key"};
    expect_invalid(ARGC(a15), a15, "--batcher");
    char *kb[] = {"quire-perf", "produce", "--batcher", "key-based"};
    perf_opts_t ko;
    char kerr[256];
    CU_ASSERT_EQUAL(parse(ARGC(kb), kb, &ko, kerr), 0);
    CU_ASSERT_TRUE(ko.key_based);
    perf_opts_free(&ko);
    char *h[] = {"quire-perf", "produce", "--help"};
    perf_opts_t o;
    char err[256];
    CU_ASSERT_EQUAL(parse(ARGC(h), h, &o, err), 1);
    perf_opts_free(&o);
}

static void test_url(void)
{
    char host[64];
    uint16_t port = 0;
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://localhost:6651", host, sizeof host, &port), 0);
    CU_ASSERT_STRING_EQUAL(host, "localhost");
    CU_ASSERT_EQUAL(port, 6651);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://b1.example.com", host, sizeof host, &port), 0);
    CU_ASSERT_STRING_EQUAL(host, "b1.example.com");
    CU_ASSERT_EQUAL(port, 6650);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://10.0.0.1:1234/", host, sizeof host, &port), 0);
    CU_ASSERT_EQUAL(port, 1234);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://[::1]:6652", host, sizeof host, &port), 0);
    CU_ASSERT_STRING_EQUAL(host, "::1");
    CU_ASSERT_EQUAL(port, 6652);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar+ssl://h:6651", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://h:0", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://h:70000", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://:80", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://h:80x", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url("pulsar://h/path", host, sizeof host, &port), QE_INVALID);
    CU_ASSERT_EQUAL(perf_parse_url(NULL, host, sizeof host, &port), QE_INVALID);
}

static void test_value_names(void)
{
    Pulsar__Proto__CompressionType c;
    CU_ASSERT_EQUAL(perf_parse_compression("Snappy", &c), 0);
    CU_ASSERT_EQUAL(c, PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY);
    CU_ASSERT_STRING_EQUAL(perf_compression_name(PULSAR__PROTO__COMPRESSION_TYPE__LZ4), "LZ4");
    Pulsar__Proto__CommandSubscribe__SubType t;
    CU_ASSERT_EQUAL(perf_parse_sub_type("Failover", &t), 0);
    CU_ASSERT_EQUAL(t, PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover);
}

void perf_register_opts(void)
{
    CU_pSuite s = CU_add_suite("perf_opts", NULL, NULL);
    CU_add_test(s, "defaults", test_defaults);
    CU_add_test(s, "all options", test_all_options);
    CU_add_test(s, "topic prefix and --disable-batching", test_prefix_and_batching);
    CU_add_test(s, "errors and bounds", test_errors);
    CU_add_test(s, "service URL", test_url);
    CU_add_test(s, "value names", test_value_names);
}
