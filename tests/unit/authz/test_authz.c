/*
 * Unit tests of authorization's pure rules (server/authz.h): wildcard role
 * matching, grant bits from namespace / topic / partitioned-topic grants,
 * subscription roles, and the proxy's original-principal pairing.
 */
#include <jansson.h>
#include <string.h>

#include "common/config.h"
#include "server/authz.h"
#include "server/ns_policies.h"
#include "tests/unit/support/test_support.h"

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    TEST_REQUIRE(j != NULL);
    return j;
}

static void test_role_matches(void)
{
    CU_ASSERT_TRUE(authz_role_matches("app", "app", false));
    CU_ASSERT_FALSE(authz_role_matches("app", "app2", false));
    CU_ASSERT_FALSE(authz_role_matches("app.*", "app.1", false)); /* off: exact only */
    CU_ASSERT_TRUE(authz_role_matches("app.*", "app.1", true));
    CU_ASSERT_TRUE(authz_role_matches("app.*", "app.", true));
    CU_ASSERT_FALSE(authz_role_matches("app.*", "app", true));
    CU_ASSERT_FALSE(authz_role_matches("app.*", "xapp.1", true));
    CU_ASSERT_TRUE(authz_role_matches("*.prod", "svc.prod", true));
    CU_ASSERT_TRUE(authz_role_matches("*.prod", ".prod", true));
    CU_ASSERT_FALSE(authz_role_matches("*.prod", "prod", true));
    CU_ASSERT_FALSE(authz_role_matches("*.prod", "svc.prod2", true));
    /* only at the start or end, as Pulsar */
    CU_ASSERT_FALSE(authz_role_matches("my.*.role", "my.1.role", true));
    CU_ASSERT_TRUE(authz_role_matches("my.*.role", "my.*.role", true));
    CU_ASSERT_TRUE(authz_role_matches("*", "anyone", true));
    CU_ASSERT_FALSE(authz_role_matches("", "anyone", true));
    CU_ASSERT_FALSE(authz_role_matches("*", "", true));
    CU_ASSERT_FALSE(authz_role_matches(NULL, "a", true));
}

static void test_grant_bits(void)
{
    json_t *g = parse("{\"alice\":[\"produce\"],\"svc.*\":[\"consume\"],\"*.ro\":[\"consume\"],"
                      "\"bob\":[\"produce\",\"consume\",\"bogus\"],\"x\":\"notalist\"}");
    CU_ASSERT_EQUAL(authz_grant_bits(g, "alice", false), NS_AUTH_PRODUCE);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "bob", false), NS_AUTH_PRODUCE | NS_AUTH_CONSUME);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "svc.a", false), 0);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "svc.a", true), NS_AUTH_CONSUME);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "me.ro", true), NS_AUTH_CONSUME);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "x", true), 0);
    CU_ASSERT_EQUAL(authz_grant_bits(g, "", true), 0);
    CU_ASSERT_EQUAL(authz_grant_bits(NULL, "alice", true), 0);
    CU_ASSERT_EQUAL(authz_action_bit("packages"), NS_AUTH_PACKAGES);
    CU_ASSERT_EQUAL(authz_action_bit("lookup"), 0);
    json_decref(g);
}

static void test_policy_bits(void)
{
    json_t *auth =
        parse("{\"namespace_auth\":{\"nsrole\":[\"consume\"]},"
              "\"destination_auth\":{"
              "\"persistent://t/ns/a\":{\"topicrole\":[\"produce\"],\"w.*\":[\"produce\"]},"
              "\"persistent://t/ns/p\":{\"prole\":[\"consume\"],\"pw.*\":[\"consume\"]},"
              "\"persistent://t/ns/p-partition-1\":{\"onlyone\":[\"produce\"]}}}");
    const char *a = "persistent://t/ns/a", *b = "persistent://t/ns/b";
    CU_ASSERT_EQUAL(authz_policy_bits(auth, a, NULL, "nsrole", false), NS_AUTH_CONSUME);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, a, NULL, "topicrole", false), NS_AUTH_PRODUCE);
    /* a topic grant covers that topic only */
    CU_ASSERT_EQUAL(authz_policy_bits(auth, b, NULL, "topicrole", false), 0);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, NULL, NULL, "topicrole", false), 0);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, a, NULL, "w.1", false), 0);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, a, NULL, "w.1", true), NS_AUTH_PRODUCE);
    /* a partition takes its partitioned topic's grant (exactly) and its own */
    const char *p0 = "persistent://t/ns/p-partition-0", *p1 = "persistent://t/ns/p-partition-1";
    const char *base = "persistent://t/ns/p";
    CU_ASSERT_EQUAL(authz_policy_bits(auth, p0, base, "prole", false), NS_AUTH_CONSUME);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, p0, base, "pw.x", true), 0);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, p1, base, "onlyone", false), NS_AUTH_PRODUCE);
    CU_ASSERT_EQUAL(authz_policy_bits(auth, p0, base, "onlyone", false), 0);
    CU_ASSERT_EQUAL(authz_policy_bits(NULL, a, NULL, "nsrole", true), 0);
    json_decref(auth);
}

static void test_subscription_roles(void)
{
    json_t *auth = parse("{\"subscription_auth_roles\":{\"locked\":[\"r1\",\"r2\"],"
                         "\"open\":[]}}");
    CU_ASSERT_TRUE(authz_subscription_allows(auth, "locked", "r1"));
    CU_ASSERT_TRUE(authz_subscription_allows(auth, "locked", "r2"));
    CU_ASSERT_FALSE(authz_subscription_allows(auth, "locked", "r3"));
    CU_ASSERT_FALSE(authz_subscription_allows(auth, "locked", "r*"));
    CU_ASSERT_TRUE(authz_subscription_allows(auth, "open", "anyone"));
    CU_ASSERT_TRUE(authz_subscription_allows(auth, "unlisted", "anyone"));
    CU_ASSERT_TRUE(authz_subscription_allows(auth, NULL, "anyone"));
    CU_ASSERT_TRUE(authz_subscription_allows(NULL, "locked", "r3"));
    json_decref(auth);
}

static void test_subscription_prefix(void)
{
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(true, "app-orders", "app"));
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(true, "apple", "app")); /* startsWith */
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(true, "app", "app"));
    CU_ASSERT_FALSE(authz_subscription_prefix_allows(true, "orders", "app"));
    CU_ASSERT_FALSE(authz_subscription_prefix_allows(true, "ap", "app"));
    CU_ASSERT_FALSE(authz_subscription_prefix_allows(true, "x-app", "app"));
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(false, "orders", "app")); /* None */
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(true, "", "app"));        /* a lookup */
    CU_ASSERT_TRUE(authz_subscription_prefix_allows(true, NULL, "app"));
    CU_ASSERT_FALSE(authz_subscription_prefix_allows(true, "orders", NULL));
    /* the namespace policy as the broker parses it */
    ns_policies_t p;
    const char *docs[] = {"{\"subscription_auth_mode\":\"Prefix\"}",
                          "{\"subscription_auth_mode\":\"None\"}", "{}",
                          "{\"subscription_auth_mode\":7}"};
    for (int i = 0; i < 4; i++) {
        TEST_REQUIRE(ns_policies_parse(docs[i], strlen(docs[i]), "standalone", &p) == 0);
        CU_ASSERT_EQUAL(p.subscription_auth_prefix, i == 0);
        ns_policies_release(&p);
    }
}

static void test_original_principal(void)
{
    qconfig_t *q = qconfig_new();
    qconfig_set(q, "proxyRoles", "proxy1, proxy2");
    auth_service_t *a = NULL;
    char err[256];
    TEST_REQUIRE(auth_service_new(q, &a, err, sizeof err) == 0);
    CU_ASSERT_TRUE(auth_is_proxy_role(a, "proxy2"));
    CU_ASSERT_FALSE(auth_is_proxy_role(a, "client"));
    CU_ASSERT_PTR_NULL(authz_original_principal_error(a, "client", NULL));
    CU_ASSERT_PTR_NULL(authz_original_principal_error(a, "client", ""));
    CU_ASSERT_PTR_NULL(authz_original_principal_error(a, "client", "client"));
    CU_ASSERT_PTR_NOT_NULL(authz_original_principal_error(a, "client", "admin"));
    CU_ASSERT_PTR_NOT_NULL(authz_original_principal_error(a, "proxy1", NULL));
    CU_ASSERT_PTR_NOT_NULL(authz_original_principal_error(a, "proxy1", ""));
    CU_ASSERT_PTR_NOT_NULL(authz_original_principal_error(a, "proxy1", "proxy2"));
    CU_ASSERT_PTR_NOT_NULL(authz_original_principal_error(a, "proxy1", "proxy1"));
    CU_ASSERT_PTR_NULL(authz_original_principal_error(a, "proxy1", "client"));
    CU_ASSERT_FALSE(authz_wildcards(a));
    auth_service_free(a);
    qconfig_set(q, "authorizationAllowWildcardsMatching", "true");
    TEST_REQUIRE(auth_service_new(q, &a, err, sizeof err) == 0);
    CU_ASSERT_TRUE(authz_wildcards(a));
    auth_service_free(a);
    qconfig_set(q, "authorizationAllowWildcardsMatching", "maybe");
    CU_ASSERT_NOT_EQUAL(auth_service_new(q, &a, err, sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "authorizationAllowWildcardsMatching"));
    qconfig_free(q);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("authz", NULL, NULL);
    CU_add_test(s, "wildcard role matching", test_role_matches);
    CU_add_test(s, "grant bits", test_grant_bits);
    CU_add_test(s, "namespace, topic and partition grants", test_policy_bits);
    CU_add_test(s, "subscription roles", test_subscription_roles);
    CU_add_test(s, "subscription auth mode Prefix", test_subscription_prefix);
    CU_add_test(s, "proxy original principal", test_original_principal);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
