/* Unit tests of quire-perf's pacing arithmetic, statistics and reports. */
#include <stdlib.h>
#include <string.h>

#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"
#include "tools/quire_perf.h"

static void test_pace(void)
{
    perf_pace_t p;
    perf_pace_init(&p, 1000000000ull, 1000.0); /* one message per ms */
    CU_ASSERT_EQUAL(perf_pace_due(&p, 999999999ull), 0);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 1000000000ull), 1); /* message 0 at start */
    CU_ASSERT_EQUAL(perf_pace_due(&p, 1000999999ull), 1);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 1001000000ull), 2);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 2000000000ull), 1001); /* 0..1000 after 1 s */
    p.issued = 1001;
    CU_ASSERT_EQUAL(perf_pace_due(&p, 2000000000ull), 0);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 2000500000ull), 0);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 2001000000ull), 1);
    CU_ASSERT_EQUAL(perf_pace_sched_ns(&p, 0), 1000000000ull);
    CU_ASSERT_EQUAL(perf_pace_sched_ns(&p, 1), 1001000000ull);
    CU_ASSERT_EQUAL(perf_pace_sched_ns(&p, 1000), 2000000000ull);
    /* Behind schedule: every missed message stays due with its own time. */
    p.issued = 10;
    CU_ASSERT_EQUAL(perf_pace_due(&p, 1100000000ull), 91);
    CU_ASSERT_EQUAL(perf_pace_sched_ns(&p, 10), 1010000000ull);
    /* A fractional rate: 3 msg/s -> 0, 333.33.., 666.66.. ms. */
    perf_pace_init(&p, 0, 3.0);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 333333333ull), 1);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 333333334ull), 2);
    CU_ASSERT_EQUAL(perf_pace_sched_ns(&p, 1), 333333334ull);
    CU_ASSERT_TRUE(perf_pace_due(&p, perf_pace_sched_ns(&p, 2)) == 3);
    /* No schedule at rate 0. */
    perf_pace_init(&p, 0, 0);
    CU_ASSERT_EQUAL(perf_pace_due(&p, 5000000000ull), 0);
}

/* When the pacer wakes next: on time for a batch's first message, then when
 * the open batch would fill or not before its delay ends; without batching no
 * sooner than the quantum. */
static void test_pace_wake(void)
{
    perf_opts_t o;
    memset(&o, 0, sizeof o);
    o.batch_max_messages = 1000;
    o.batch_max_bytes = 128 * 1024;
    o.batch_max_delay_ms = 1;
    perf_pace_t p;
    perf_pace_init(&p, 1000000000ull, 50000.0); /* one message per 20 us */
    p.issued = 100;                             /* message 100 is due at +2 ms */
    uint64_t t100 = perf_pace_sched_ns(&p, 100), now = t100 - 10000;
    perf_batch_t b;
    memset(&b, 0, sizeof b);
    b.batching = true;
    /* No batch open: the next message opens one, on time. */
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), t100);
    /* An open batch of 10 (1,100 bytes each) opened 0.2 ms ago: 990 more
     * would fill it, long after its delay: the batch timer comes first. */
    b.n = 10;
    b.len = 11000;
    b.first_add_ns = now - 200000;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), 0);
    /* 20 messages at most: full at the 10th more (message 109). */
    o.batch_max_messages = 20;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), perf_pace_sched_ns(&p, 109));
    /* 16 KiB at most: 5,384 bytes of room is 5 messages of 1,100 (message 104). */
    o.batch_max_messages = 1000;
    o.batch_max_bytes = 16384;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), perf_pace_sched_ns(&p, 104));
    /* Filling after the delay ends is the batch timer's. */
    b.first_add_ns = perf_pace_sched_ns(&p, 104) - 1000000;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), 0);
    /* Without batching: the quantum at 50,000 msg/s, on time at 1,000 msg/s. */
    b.batching = false;
    b.n = 0;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, now), now + PERF_PACE_QUANTUM_NS);
    perf_pace_init(&p, 1000000000ull, 1000.0);
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, 999000000ull), 1000000000ull);
    p.issued = 1;
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, 1000000000ull), 1001000000ull);
    /* Due in less than the quantum: the quantum. */
    CU_ASSERT_EQUAL(perf_pace_wake_ns(&p, &b, &o, 1000950000ull),
                    1000950000ull + PERF_PACE_QUANTUM_NS);
}

static void test_stats_merge(void)
{
    perf_stats_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    TEST_REQUIRE(a != NULL && b != NULL);
    perf_stats_reset(a);
    perf_stats_reset(b);
    a->produced_msgs = 10;
    b->produced_msgs = 5;
    b->consumed_bytes = 7;
    b->send_errors = 1;
    hist_record(&a->pub_us, 100);
    hist_record(&b->pub_us, 300);
    hist_record(&b->e2e_us, 50);
    hist_record(&b->late_us, 4000);
    perf_stats_merge(a, b);
    CU_ASSERT_EQUAL(a->produced_msgs, 15);
    CU_ASSERT_EQUAL(a->consumed_bytes, 7);
    CU_ASSERT_EQUAL(a->send_errors, 1);
    CU_ASSERT_EQUAL(a->pub_us.total, 2);
    CU_ASSERT_EQUAL(a->pub_us.max, 300);
    CU_ASSERT_EQUAL(a->e2e_us.total, 1);
    CU_ASSERT_EQUAL(a->late_us.total, 1);
    CU_ASSERT_EQUAL(a->late_us.max, 4000);
    perf_stats_reset(a);
    CU_ASSERT_EQUAL(a->produced_msgs, 0);
    CU_ASSERT_EQUAL(a->pub_us.total, 0);
    CU_ASSERT_EQUAL(a->late_us.total, 0);
    free(a);
    free(b);
}

static void test_percentiles_text(void)
{
    hist_t *h = malloc(sizeof *h);
    TEST_REQUIRE(h != NULL);
    hist_init(h);
    char buf[256];
    perf_format_percentiles(buf, sizeof buf, h);
    CU_ASSERT_STRING_EQUAL(buf, "-");
    for (uint64_t v = 1; v <= 100; v++) /* 1..100 us: exact below 128 */
        hist_record(h, v);
    hist_record(h, 1234567); /* 1234.567 ms */
    perf_format_percentiles(buf, sizeof buf, h);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "p50 0.051 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "p95 0.096 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "p99 0.100 "));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "max 1234.567"));
    free(h);
}

static void test_interval_line(void)
{
    perf_stats_t *s = malloc(sizeof *s);
    TEST_REQUIRE(s != NULL);
    perf_stats_reset(s);
    s->produced_msgs = 5000;
    s->produced_bytes = 5000000;
    s->consumed_msgs = 2500;
    s->consumed_bytes = 2500000;
    hist_record(&s->pub_us, 2000);
    hist_record(&s->e2e_us, 3000);
    char line[1024];
    perf_format_interval(line, sizeof line, 10.0, 5.0, s, PERF_MODE_BOTH, 42, false);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "[   10.0s]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "prod 1000.0 msg/s 1.00 MB/s pending 42"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "pub ms p50 2.000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "cons 500.0 msg/s 0.50 MB/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "e2e ms p50 3.000"));
    CU_ASSERT_PTR_NULL(strstr(line, "errors"));
    CU_ASSERT_PTR_NULL(strstr(line, "late")); /* no timer fired */
    hist_record(&s->late_us, 250);
    hist_record(&s->late_us, 12500);
    perf_format_interval(line, sizeof line, 10.0, 5.0, s, PERF_MODE_BOTH, 42, false);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " | late ms p99 12.500 max 12.500"));
    CU_ASSERT_PTR_NULL(strstr(line, "witness"));
    hist_record(&s->witness_us, 41000);
    perf_format_interval(line, sizeof line, 10.0, 5.0, s, PERF_MODE_BOTH, 42, false);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " | witness ms p99 41.000 max 41.000"));
    perf_format_interval(line, sizeof line, 1.0, 1.0, s, PERF_MODE_PRODUCE, 0, true);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(warm-up)"));
    CU_ASSERT_PTR_NULL(strstr(line, "cons"));
    s->send_errors = 3;
    perf_format_interval(line, sizeof line, 1.0, 1.0, s, PERF_MODE_CONSUME, 0, false);
    CU_ASSERT_PTR_NULL(strstr(line, "prod"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "errors send 3"));
    /* A tiny buffer truncates, never overflows. */
    char tiny[16];
    perf_format_interval(tiny, sizeof tiny, 1.0, 1.0, s, PERF_MODE_BOTH, 0, false);
    CU_ASSERT_EQUAL(strlen(tiny), 15);
    free(s);
}

static void test_final_and_json(void)
{
    perf_opts_t o;
    memset(&o, 0, sizeof o);
    o.mode = PERF_MODE_BOTH;
    o.n_topics = 2;
    o.size_bytes = 1000;
    o.rate = 0;
    o.batch_max_messages = 100;
    o.compression = PULSAR__PROTO__COMPRESSION_TYPE__LZ4;
    perf_stats_t *s = malloc(sizeof *s);
    TEST_REQUIRE(s != NULL);
    perf_stats_reset(s);
    s->produced_msgs = s->consumed_msgs = 2000;
    s->produced_bytes = s->consumed_bytes = 2000000;
    hist_record(&s->pub_us, 1500);
    hist_record(&s->e2e_us, 2500);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    TEST_REQUIRE(f != NULL);
    perf_print_final(f, &o, s, 2.0);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "produced               2000 msgs  1000.0 msg/s  1.00 MB/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "end-to-end latency (ms) mean 2.500"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "compression LZ4"));
    CU_ASSERT_PTR_NULL(strstr(text, "timer lateness")); /* none recorded */
    free(text);
    hist_record(&s->late_us, 7000);
    f = open_memstream(&text, &len);
    TEST_REQUIRE(f != NULL);
    perf_print_final(f, &o, s, 2.0);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "timer lateness (ms)    mean 7.000"));
    CU_ASSERT_PTR_NULL(strstr(text, "host witness"));
    free(text);
    f = open_memstream(&text, &len);
    TEST_REQUIRE(f != NULL);
    CU_ASSERT_EQUAL(perf_write_json(f, &o, s, 2.0, 1765123456.25), 0);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"mode\": \"both\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"duration_s\": 2.000,\n  \"measured_end_unix_s\": "
                                        "1765123456.250,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"produce_msg_per_s\": 1000.000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"publish_latency_ms\": {\"count\": 1, \"mean\": 1.500"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"p99.99\": 2.500"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"timer_lateness_ms\": {\"count\": 1, \"mean\": 7.000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"witness_lateness_ms\": {\"count\": 0,"));
    CU_ASSERT_EQUAL(text[0], '{');
    CU_ASSERT_EQUAL(text[len - 2], '}');
    free(text);
    free(s);
}

void perf_register_report(void)
{
    CU_pSuite s = CU_add_suite("perf_report", NULL, NULL);
    CU_add_test(s, "fixed-rate pacing", test_pace);
    CU_add_test(s, "pacer wake-ups around batches", test_pace_wake);
    CU_add_test(s, "stats merge and reset", test_stats_merge);
    CU_add_test(s, "percentiles in ms", test_percentiles_text);
    CU_add_test(s, "interval line", test_interval_line);
    CU_add_test(s, "final report and JSON", test_final_and_json);
}
