/* Unit tests of server/rate_limit (token bucket arithmetic) and of the
 * rate-limit keys of broker.conf (server/limits.h). */
#include <stdint.h>
#include <string.h>

#include "common/config.h"
#include "common/errors.h"
#include "server/broker_limits.h"
#include "server/rate_limit.h"
#include "tests/unit/support/test_support.h"

#define S 1000000LL /* microseconds per second */

static void test_unlimited(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, -1, 0, 1, 0);
    CU_ASSERT_FALSE(rate_limiter_enabled(&rl));
    rate_limiter_consume(&rl, 1000000, 1 << 30, 0);
    CU_ASSERT_TRUE(rate_limiter_allows(&rl, 0));
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 0), INT64_MAX);
    CU_ASSERT_EQUAL(rate_limiter_bytes_left(&rl, 0), INT64_MAX);
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 0), 0);
}

static void test_starts_full_and_empties(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, 200, -1, 1, 5 * S);
    CU_ASSERT_TRUE(rate_limiter_enabled(&rl));
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 5 * S), 200);
    CU_ASSERT_EQUAL(rate_limiter_bytes_left(&rl, 5 * S), INT64_MAX);
    rate_limiter_consume(&rl, 199, 1 << 20, 5 * S);
    CU_ASSERT_TRUE(rate_limiter_allows(&rl, 5 * S));
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 5 * S), 1);
    rate_limiter_consume(&rl, 1, 0, 5 * S);
    CU_ASSERT_FALSE(rate_limiter_allows(&rl, 5 * S));
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 5 * S), 0);
    /* One token every 5 ms. */
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 5 * S), 5000);
    CU_ASSERT_FALSE(rate_limiter_allows(&rl, 5 * S + 4999));
    CU_ASSERT_TRUE(rate_limiter_allows(&rl, 5 * S + 5000));
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 5 * S + 5000), 1);
}

static void test_refill_exact_with_carry(void)
{
    /* 3 per second: a token every 333333.33 us; refills of 1 us lose nothing. */
    rate_limiter_t rl;
    rate_limiter_init(&rl, 3, -1, 1, 0);
    rate_limiter_consume(&rl, 3, 0, 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 333333), 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 333334), 1);
    rate_limiter_consume(&rl, 1, 0, 333334);
    for (int64_t t = 333335; t <= S; t++)
        rate_limiter_refill(&rl, t);
    /* 3 earned by 1 s, 1 of them spent: exactly 2, nothing left over. */
    CU_ASSERT_EQUAL(rl.msgs.tokens, 2);
    CU_ASSERT_EQUAL(rl.msgs.carry, 0);
}

static void test_capacity_after_idle(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, 100, 1000, 1, 0);
    rate_limiter_consume(&rl, 50, 500, 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 3600 * S), 100);
    CU_ASSERT_EQUAL(rate_limiter_bytes_left(&rl, 3600 * S), 1000);
    CU_ASSERT_EQUAL(rl.msgs.carry, 0);
}

static void test_debt_and_wait(void)
{
    /* A 10-message batch on a 2 msg/s bucket: 8 in debt, positive again after 4.5 s. */
    rate_limiter_t rl;
    rate_limiter_init(&rl, 2, -1, 1, 0);
    rate_limiter_consume(&rl, 10, 0, 0);
    CU_ASSERT_EQUAL(rl.msgs.tokens, -8);
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 0), 4500000);
    CU_ASSERT_FALSE(rate_limiter_allows(&rl, 4499999));
    CU_ASSERT_TRUE(rate_limiter_allows(&rl, 4500000));
    /* Bytes limit the wait when they are the deeper debt. */
    rate_limiter_init(&rl, 1000, 100, 1, 0);
    rate_limiter_consume(&rl, 1, 1000, 0); /* 900 bytes in debt */
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 0), 999);
    CU_ASSERT_FALSE(rate_limiter_allows(&rl, 0));
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 0), 9010000);
}

static void test_period(void)
{
    /* 10 messages per 5 seconds: a token every 0.5 s, capacity 10. */
    rate_limiter_t rl;
    rate_limiter_init(&rl, 10, -1, 5, 0);
    rate_limiter_consume(&rl, 10, 0, 0);
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 0), 500000);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 2 * S), 4);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 60 * S), 10);
    /* period < 1 counts as 1 */
    rate_limiter_init(&rl, 10, -1, 0, 0);
    CU_ASSERT_EQUAL(rl.period_us, S);
}

static void test_time_backwards_ignored(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, 10, -1, 1, 10 * S);
    rate_limiter_consume(&rl, 10, 0, 10 * S);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 9 * S), 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 10 * S + S / 10), 1);
}

static void test_set_live(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, 100, -1, 1, 0);
    rate_limiter_consume(&rl, 40, 0, 0);
    /* Lowered below the balance: capped. */
    rate_limiter_set(&rl, 20, -1, 1, 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 0), 20);
    /* Raised: the balance stays, the refill is faster. */
    rate_limiter_set(&rl, 1000, -1, 1, 0);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, 0), 20);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, S / 100), 30);
    /* A debt survives a change. */
    rate_limiter_consume(&rl, 100, 0, S / 100);
    rate_limiter_set(&rl, 10, -1, 1, S / 100);
    CU_ASSERT_EQUAL(rl.msgs.tokens, -70);
    /* Removed: unlimited. Enabled again: starts full. */
    rate_limiter_set(&rl, 0, -1, 1, S);
    CU_ASSERT_FALSE(rate_limiter_enabled(&rl));
    CU_ASSERT_TRUE(rate_limiter_allows(&rl, S));
    rate_limiter_set(&rl, 5, 500, 1, S);
    CU_ASSERT_EQUAL(rate_limiter_msgs_left(&rl, S), 5);
    CU_ASSERT_EQUAL(rate_limiter_bytes_left(&rl, S), 500);
}

static void test_large_values_do_not_overflow(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, INT32_MAX, INT64_MAX, RATE_PERIOD_S_MAX, 0);
    CU_ASSERT_EQUAL(rate_limiter_bytes_left(&rl, 0), INT64_MAX);
    rate_limiter_consume(&rl, INT32_MAX, INT64_MAX, 0);
    rate_limiter_consume(&rl, INT64_MAX, INT64_MAX, 0);
    CU_ASSERT_EQUAL(rl.bytes.tokens, -INT64_MAX);
    rate_limiter_consume(&rl, INT64_MAX, INT64_MAX, 0); /* saturates, no wrap */
    CU_ASSERT_EQUAL(rl.bytes.tokens, INT64_MIN);
    CU_ASSERT_EQUAL(rl.msgs.tokens, INT64_MIN);
    CU_ASSERT_FALSE(rate_limiter_allows(&rl, 1));
    CU_ASSERT_TRUE(rate_limiter_wait_us(&rl, 1) > 0);
    CU_ASSERT_TRUE(rate_limiter_msgs_left(&rl, INT64_MAX / 2) >= 0);
    /* 1 byte per INT32_MAX seconds: the wait is finite and exact. */
    rate_limiter_init(&rl, -1, 1, RATE_PERIOD_S_MAX, 0);
    rate_limiter_consume(&rl, 0, 1, 0);
    CU_ASSERT_EQUAL(rate_limiter_wait_us(&rl, 0), RATE_PERIOD_S_MAX * S);
}

/* A producer that sends whenever the bucket allows, checked every millisecond
 * for 10 s, gets rate * 10 plus one capacity: the limit converges. */
static void test_converges_to_rate(void)
{
    rate_limiter_t rl;
    rate_limiter_init(&rl, 200, -1, 1, 0);
    int64_t sent = 0;
    for (int64_t t = 0; t < 10 * S; t += 1000) {
        while (rate_limiter_allows(&rl, t)) {
            rate_limiter_consume(&rl, 1, 100, t);
            sent++;
        }
    }
    CU_ASSERT_TRUE(sent >= 2000 + 200 - 2 && sent <= 2000 + 200);
    /* Batches of 7 (charged after the fact) converge the same way. */
    rate_limiter_init(&rl, 200, -1, 1, 0);
    sent = 0;
    for (int64_t t = 0; t < 10 * S; t += 1000) {
        while (rate_limiter_allows(&rl, t)) {
            rate_limiter_consume(&rl, 7, 700, t);
            sent += 7;
        }
    }
    CU_ASSERT_TRUE(sent >= 2200 - 14 && sent <= 2200 + 7);
}

static void test_config_keys(void)
{
    qconfig_t *q = qconfig_new();
    TEST_REQUIRE(q != NULL);
    broker_limits_config_t c;
    char err[256] = "";
    CU_ASSERT_EQUAL(broker_limits_config_load(q, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.max_unacked_per_consumer, 50000);
    CU_ASSERT_EQUAL(c.max_unacked_per_sub, 200000);
    CU_ASSERT_EQUAL(c.publish_rate_msgs, 0);
    CU_ASSERT_EQUAL(c.max_topics_per_namespace, 0);
    CU_ASSERT_FALSE(c.dispatch_relative_to_publish);
    qconfig_set(q, "maxPublishRatePerTopicInMessages", "500");
    qconfig_set(q, "maxProducersPerTopic", "3");
    qconfig_set(q, "dispatchThrottlingRateRelativeToPublishRate", "true");
    CU_ASSERT_EQUAL(broker_limits_config_load(q, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.publish_rate_msgs, 500);
    CU_ASSERT_EQUAL(c.max_producers_per_topic, 3);
    CU_ASSERT_TRUE(c.dispatch_relative_to_publish);
    qconfig_set(q, "maxConsumersPerTopic", "-5");
    CU_ASSERT_EQUAL(broker_limits_config_load(q, &c, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "maxConsumersPerTopic"));
    qconfig_set(q, "maxConsumersPerTopic", "2.5");
    CU_ASSERT_EQUAL(broker_limits_config_load(q, &c, err, sizeof err), QE_INVALID);
    qconfig_free(q);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("ratelimit", NULL, NULL);
    CU_add_test(s, "unlimited", test_unlimited);
    CU_add_test(s, "starts full and empties", test_starts_full_and_empties);
    CU_add_test(s, "refill exact with carry", test_refill_exact_with_carry);
    CU_add_test(s, "capacity after idle", test_capacity_after_idle);
    CU_add_test(s, "debt and wait", test_debt_and_wait);
    CU_add_test(s, "period", test_period);
    CU_add_test(s, "time backwards ignored", test_time_backwards_ignored);
    CU_add_test(s, "set on a live limiter", test_set_live);
    CU_add_test(s, "large values", test_large_values_do_not_overflow);
    CU_add_test(s, "converges to the rate", test_converges_to_rate);
    CU_add_test(s, "broker.conf keys", test_config_keys);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
