/* Unit tests of admin-http's pure parts: route matching, URL decoding, query
 * parameters, name validation, JSON body parsing and policy validation. */
#include <http_parser.h>
#include <string.h>

#include "admin-http/admin_policies.h"
#include "admin-http/http_router.h"
#include "common/errors.h"
#include "tests/unit/admin/test_admin.h"
#include "tests/unit/support/test_support.h"

typedef struct route {
    http_route_t r;
    int id;
} route_t;

static const route_t routes[] = {
    {{HTTP_GET, "/admin/v2/tenants"}, 1},
    {{HTTP_GET, "/admin/v2/tenants/{tenant}"}, 2},
    {{HTTP_PUT, "/admin/v2/tenants/{tenant}"}, 3},
    {{HTTP_GET, "/admin/v2/persistent/{tenant}/{namespace}/{topic}"}, 4},
    {{HTTP_GET, "/admin/v2/persistent/{tenant}/{namespace}/partitioned"}, 5},
    {{HTTP_GET, "/admin/v2/brokers/{cluster}"}, 6},
    {{HTTP_GET, "/admin/v2/brokers/health"}, 7},
};
#define NROUTES (sizeof routes / sizeof routes[0])

static int find(int method, const char *url, http_route_params_t *p)
{
    int idx = http_route_find(routes, NROUTES, sizeof routes[0], method, url, p);
    return idx < 0 ? idx : routes[idx].id;
}

static void test_route_literal_and_params(void)
{
    http_route_params_t p;
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants", &p), 1);
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants/", &p), 1); /* trailing slash */
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants/acme?x=1", &p), 2);
    CU_ASSERT_STRING_EQUAL(http_route_param(&p, "tenant"), "acme");
    CU_ASSERT_PTR_NULL(http_route_param(&p, "nope"));
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_PUT, "/admin/v2/tenants/acme", &p), 3);
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "http://host:8080/admin/v2/tenants/x", &p), 2);
    http_route_params_free(&p);
}

static void test_route_specificity(void)
{
    http_route_params_t p;
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/persistent/t/ns/partitioned", &p), 5);
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/persistent/t/ns/my-topic", &p), 4);
    CU_ASSERT_STRING_EQUAL(http_route_param(&p, "topic"), "my-topic");
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/brokers/health", &p), 7);
    http_route_params_free(&p);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/brokers/standalone", &p), 6);
    http_route_params_free(&p);
}

static void test_route_errors(void)
{
    http_route_params_t p;
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/nothing", &p), -404);
    CU_ASSERT_EQUAL(find(HTTP_DELETE, "/admin/v2/tenants", &p), -405);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants//", &p), -404); /* empty segment */
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants/a%zz", &p), -400);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/tenants/a%00b", &p), -400);
    CU_ASSERT_EQUAL(find(HTTP_GET, "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r", &p), -414);
}

static void test_route_decoding(void)
{
    http_route_params_t p;
    CU_ASSERT_EQUAL(find(HTTP_GET, "/admin/v2/persistent/t/ns/a%20b%2Fc+d", &p), 4);
    CU_ASSERT_STRING_EQUAL(http_route_param(&p, "topic"), "a b/c+d"); /* '+' kept in paths */
    http_route_params_free(&p);
    char out[64];
    CU_ASSERT_EQUAL(http_url_decode("a+b%41", 6, out, true), 4);
    CU_ASSERT_STRING_EQUAL(out, "a bA");
    CU_ASSERT_EQUAL(http_url_decode("%4", 2, out, false), -1);
    CU_ASSERT_EQUAL(http_url_decode("%", 1, out, false), -1);
}

static void test_query(void)
{
    char v[32];
    const char *url = "/x?mode=ALL&checkAllowAutoCreation=true&flag&e=a%20b+c";
    CU_ASSERT_EQUAL(http_query_get(url, "mode", v, sizeof v), 0);
    CU_ASSERT_STRING_EQUAL(v, "ALL");
    CU_ASSERT_EQUAL(http_query_get(url, "flag", v, sizeof v), 0);
    CU_ASSERT_STRING_EQUAL(v, "");
    CU_ASSERT_EQUAL(http_query_get(url, "e", v, sizeof v), 0);
    CU_ASSERT_STRING_EQUAL(v, "a b c");
    CU_ASSERT_EQUAL(http_query_get(url, "missing", v, sizeof v), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(http_query_get("/x", "mode", v, sizeof v), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(http_query_get(url, "mode", v, 3), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(http_query_get("/x?a=%g", "a", v, sizeof v), QE_INVALID);
    CU_ASSERT_TRUE(http_query_bool(url, "checkAllowAutoCreation", false));
    CU_ASSERT_FALSE(http_query_bool(url, "mode", false));
    CU_ASSERT_TRUE(http_query_bool(url, "absent", true));
}

static void test_names(void)
{
    CU_ASSERT_TRUE(admin_name_valid("public"));
    CU_ASSERT_TRUE(admin_name_valid("my-tenant_1.x:y=z"));
    CU_ASSERT_FALSE(admin_name_valid(""));
    CU_ASSERT_FALSE(admin_name_valid("a/b"));
    CU_ASSERT_FALSE(admin_name_valid("a b"));
    CU_ASSERT_FALSE(admin_name_valid("..%"));
    CU_ASSERT_FALSE(admin_name_valid(NULL));
}

static int check(const char *endpoint, const char *body, json_t **out)
{
    const admin_policy_def_t *def = admin_policy_find(endpoint);
    TEST_REQUIRE(def != NULL);
    char reason[256];
    json_t *j = json_loads(body, JSON_DECODE_ANY, NULL);
    TEST_REQUIRE(j != NULL);
    json_t *res = NULL;
    int rc = def->check(j, &res, reason, sizeof reason);
    json_decref(j);
    if (out)
        *out = res;
    else
        json_decref(res);
    return rc;
}

static void test_policy_validation(void)
{
    json_t *v;
    CU_ASSERT_EQUAL(check("messageTTL", "60", NULL), 0);
    CU_ASSERT_EQUAL(check("messageTTL", "-1", NULL), -412);
    CU_ASSERT_EQUAL(check("messageTTL", "\"60\"", NULL), -400);
    CU_ASSERT_EQUAL(check("messageTTL", "1e3", NULL), -400);
    CU_ASSERT_EQUAL(check("messageTTL", "99999999999", NULL), -400);
    CU_ASSERT_EQUAL(check("deduplication", "true", NULL), 0);
    CU_ASSERT_EQUAL(check("deduplication", "1", NULL), -400);
    CU_ASSERT_EQUAL(check("maxProducersPerTopic", "-3", NULL), -412);
    CU_ASSERT_EQUAL(
        check("retention", "{\"retentionTimeInMinutes\":-1,\"retentionSizeInMB\":-1}", NULL), 0);
    CU_ASSERT_EQUAL(
        check("retention", "{\"retentionTimeInMinutes\":0,\"retentionSizeInMB\":5}", NULL), -412);
    CU_ASSERT_EQUAL(check("retention", "{\"retentionTimeInMinutes\":-2}", NULL), -412);
    CU_ASSERT_EQUAL(check("retention", "{\"retentionTimeInMinutes\":\"x\"}", NULL), -400);
    CU_ASSERT_EQUAL(check("retention", "[]", NULL), -400);
    CU_ASSERT_EQUAL(check("backlogQuota", "{\"limitSize\":10,\"policy\":\"nope\"}", NULL), -400);
    CU_ASSERT_EQUAL(
        check("backlogQuota", "{\"limitSize\":10,\"policy\":\"producer_exception\"}", &v), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(v, "limitSize")), 10);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(v, "policy")), "producer_exception");
    json_decref(v);
    CU_ASSERT_EQUAL(check("dispatchRate", "{\"dispatchThrottlingRateInMsg\":5,\"unknown\":1}", &v),
                    0);
    CU_ASSERT_PTR_NULL(json_object_get(v, "unknown")); /* only checked fields are stored */
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(v, "ratePeriodInSecond")), 1);
    json_decref(v);
    CU_ASSERT_EQUAL(check("dispatchRate", "{\"relativeToPublishRate\":3}", NULL), -400);
    CU_ASSERT_EQUAL(check("schemaCompatibilityStrategy", "\"FORWARD\"", NULL), 0);
    CU_ASSERT_EQUAL(check("schemaCompatibilityStrategy", "\"SIDEWAYS\"", NULL), -400);
    CU_ASSERT_EQUAL(check("offloadPolicies", "{\"managedLedgerOffloadDriver\":3}", NULL), -400);
    CU_ASSERT_PTR_NULL(admin_policy_find("noSuchPolicy"));
}

static void test_policies_document(void)
{
    json_t *doc = admin_policies_default("standalone");
    TEST_REQUIRE(doc != NULL);
    const admin_policy_def_t *ttl = admin_policy_find("messageTTL");
    const admin_policy_def_t *rate = admin_policy_find("publishRate");
    const admin_policy_def_t *schema = admin_policy_find("schemaCompatibilityStrategy");
    CU_ASSERT_PTR_NULL(admin_policy_get(doc, ttl, ""));
    CU_ASSERT_EQUAL(admin_policy_set(doc, ttl, "", json_integer(30)), 0);
    CU_ASSERT_EQUAL(json_integer_value(admin_policy_get(doc, ttl, "")), 30);
    CU_ASSERT_EQUAL(admin_policy_set(doc, rate, "standalone",
                                     json_pack("{si}", "publishThrottlingRateInMsg", 7)),
                    0);
    CU_ASSERT_PTR_NOT_NULL(admin_policy_get(doc, rate, "standalone"));
    CU_ASSERT_PTR_NULL(admin_policy_get(doc, rate, "other"));
    admin_policy_remove(doc, rate, "standalone");
    CU_ASSERT_PTR_NULL(admin_policy_get(doc, rate, "standalone"));
    admin_policy_remove(doc, ttl, "");
    CU_ASSERT_PTR_NULL(admin_policy_get(doc, ttl, ""));
    admin_policy_set(doc, schema, "", json_string("FULL"));
    admin_policy_remove(doc, schema, "");
    CU_ASSERT_STRING_EQUAL(json_string_value(admin_policy_get(doc, schema, "")), "UNDEFINED");
    json_decref(doc);

    char reason[256];
    json_t *body = json_loads("{\"message_ttl_in_seconds\": -5}", 0, NULL);
    CU_ASSERT_EQUAL(admin_policies_from_body(body, "standalone", &doc, reason, sizeof reason),
                    -412);
    json_decref(body);
    body = json_loads("{\"message_ttl_in_seconds\": 5, \"deleted\": \"no\"}", 0, NULL);
    CU_ASSERT_EQUAL(admin_policies_from_body(body, "standalone", &doc, reason, sizeof reason),
                    -400);
    json_decref(body);
    body = json_loads("{\"message_ttl_in_seconds\": 5}", 0, NULL);
    TEST_REQUIRE(admin_policies_from_body(body, "standalone", &doc, reason, sizeof reason) == 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(doc, "message_ttl_in_seconds")), 5);
    CU_ASSERT_STRING_EQUAL(
        json_string_value(json_array_get(json_object_get(doc, "replication_clusters"), 0)),
        "standalone");
    json_decref(doc);
    json_decref(body);
}

static void test_tenant_and_json(void)
{
    char reason[256];
    json_t *out,
        *body = json_loads("{\"adminRoles\":[\"r\"],\"allowedClusters\":[\"c\"]}", 0, NULL);
    CU_ASSERT_EQUAL(admin_tenant_info_check(body, &out, reason, sizeof reason), 0);
    json_decref(out);
    json_decref(body);
    body = json_loads("{\"allowedClusters\":[1]}", 0, NULL);
    CU_ASSERT_EQUAL(admin_tenant_info_check(body, &out, reason, sizeof reason), -400);
    json_decref(body);
    CU_ASSERT_EQUAL(admin_json_parse("{", 1, false, &out, reason, sizeof reason), -400);
    CU_ASSERT_EQUAL(admin_json_parse("  ", 2, false, &out, reason, sizeof reason), -400);
    CU_ASSERT_EQUAL(admin_json_parse("  ", 2, true, &out, reason, sizeof reason), 0);
    CU_ASSERT_TRUE(json_is_null(out));
    CU_ASSERT_EQUAL(admin_json_parse("{\"a\":1,\"a\":2}", 13, false, &out, reason, sizeof reason),
                    -400);
    CU_ASSERT_EQUAL(admin_json_parse("4", 1, false, &out, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(json_integer_value(out), 4);
    json_decref(out);
    json_t *actions;
    body = json_loads("[\"produce\",\"consume\",\"produce\"]", 0, NULL);
    CU_ASSERT_EQUAL(admin_policy_check_actions(body, &actions, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(json_array_size(actions), 2);
    json_decref(actions);
    json_decref(body);
    body = json_loads("[\"fly\"]", 0, NULL);
    CU_ASSERT_EQUAL(admin_policy_check_actions(body, &actions, reason, sizeof reason), -400);
    json_decref(body);
}

void admin_register_pure_suite(void)
{
    CU_pSuite s = CU_add_suite("admin_pure", NULL, NULL);
    CU_add_test(s, "route literal and params", test_route_literal_and_params);
    CU_add_test(s, "route specificity", test_route_specificity);
    CU_add_test(s, "route errors", test_route_errors);
    CU_add_test(s, "route decoding", test_route_decoding);
    CU_add_test(s, "query parameters", test_query);
    CU_add_test(s, "names", test_names);
    CU_add_test(s, "policy validation", test_policy_validation);
    CU_add_test(s, "policies document", test_policies_document);
    CU_add_test(s, "tenant info, json bodies, actions", test_tenant_and_json);
}
