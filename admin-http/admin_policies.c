/*
 * admin_policies.c — see admin_policies.h.
 *
 * Validators never trust the body: every field is type-checked (integers
 * must be JSON integers within their Java type's range, booleans booleans,
 * enums one of Pulsar's names); fields a policy does not know are ignored
 * and not stored. The value stored is rebuilt from the checked fields, so a
 * document only ever holds what the validator accepted.
 */
#include "admin-http/admin_policies.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/codec/topic_name.h"

#define INT32_MIN_ ((json_int_t)INT32_MIN)
#define INT32_MAX_ ((json_int_t)INT32_MAX)
#define INT64_MIN_ ((json_int_t)INT64_MIN)
#define INT64_MAX_ ((json_int_t)INT64_MAX)

static int fail(int status, char *reason, size_t cap, const char *fmt, const char *arg)
{
    snprintf(reason, cap, fmt, arg);
    return -status;
}

/* obj[name] as an integer in [min, max]; def when absent or null.
 * -400 for a non-integer, -412 out of [lo, hi] (the accepted range). */
static int field_int(const json_t *obj, const char *name, json_int_t def, json_int_t min,
                     json_int_t max, json_int_t lo, json_int_t *out, char *reason, size_t cap)
{
    json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v))
        return fail(400, reason, cap, "%s must be an integer", name);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return fail(400, reason, cap, "%s is out of range", name);
    if (x < lo) {
        snprintf(reason, cap, "%s must be %lld or more", name, (long long)lo);
        return -412;
    }
    *out = x;
    return 0;
}

static int field_bool(const json_t *obj, const char *name, bool def, bool *out, char *reason,
                      size_t cap)
{
    json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return fail(400, reason, cap, "%s must be true or false", name);
    *out = json_is_true(v);
    return 0;
}

static int need_object(const json_t *body, char *reason, size_t cap)
{
    if (!json_is_object(body))
        return fail(400, reason, cap, "%s", "Expected a JSON object");
    return 0;
}

/* ------------------------------------------------------------ validators -- */

static int check_retention(const json_t *body, json_t **out, char *reason, size_t cap)
{
    json_int_t t = 0, s = 0;
    int rc = need_object(body, reason, cap);
    if (rc == 0)
        rc = field_int(body, "retentionTimeInMinutes", 0, INT32_MIN_, INT32_MAX_, -1, &t, reason,
                       cap);
    if (rc == 0)
        rc = field_int(body, "retentionSizeInMB", 0, INT64_MIN_, INT64_MAX_, -1, &s, reason, cap);
    if (rc < 0)
        return rc;
    if ((t == 0) != (s == 0))
        return fail(412, reason, cap, "%s",
                    "Invalid retention policy: Setting a single time or size limit to 0 is "
                    "invalid when one of the limits has a non-zero value. Use the value of -1 "
                    "instead of 0 to ignore a specific limit. To disable retention both limits "
                    "must be set to 0.");
    *out = json_pack("{sIsI}", "retentionTimeInMinutes", t, "retentionSizeInMB", s);
    return *out ? 0 : -500;
}

static int check_int_ttl(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_integer(body))
        return fail(400, reason, cap, "%s", "messageTTL must be an integer");
    json_int_t v = json_integer_value(body);
    if (v > INT32_MAX_ || v < INT32_MIN_)
        return fail(400, reason, cap, "%s", "messageTTL is out of range");
    if (v < 0)
        return fail(412, reason, cap, "%s", "Invalid value for message TTL");
    *out = json_integer(v);
    return 0;
}

static int check_bool(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_boolean(body))
        return fail(400, reason, cap, "%s", "Expected true or false");
    *out = json_boolean(json_is_true(body));
    return 0;
}

static int check_nonneg_int(const json_t *body, json_t **out, char *reason, size_t cap,
                            const char *what)
{
    if (!json_is_integer(body))
        return fail(400, reason, cap, "%s must be an integer", what);
    json_int_t v = json_integer_value(body);
    if (v > INT32_MAX_ || v < INT32_MIN_)
        return fail(400, reason, cap, "%s is out of range", what);
    if (v < 0)
        return fail(412, reason, cap, "%s must be 0 or more", what);
    *out = json_integer(v);
    return 0;
}

#define NONNEG_CHECK(fn, what)                                                                     \
    static int fn(const json_t *body, json_t **out, char *reason, size_t cap)                      \
    {                                                                                              \
        return check_nonneg_int(body, out, reason, cap, what);                                     \
    }
NONNEG_CHECK(check_max_producers, "maxProducersPerTopic")
NONNEG_CHECK(check_max_consumers, "maxConsumersPerTopic")
NONNEG_CHECK(check_max_consumers_sub, "maxConsumersPerSubscription")
NONNEG_CHECK(check_max_unacked, "maxUnackedMessagesPerConsumer")
NONNEG_CHECK(check_max_unacked_sub, "maxUnackedMessagesPerSubscription")
NONNEG_CHECK(check_max_topics, "maxTopicsPerNamespace")
NONNEG_CHECK(check_sub_expiration, "subscriptionExpirationTime") /* minutes; server/expiry.c */

static int check_long(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_integer(body))
        return fail(400, reason, cap, "%s", "Expected an integer");
    *out = json_integer(json_integer_value(body));
    return 0;
}

/* Pulsar's internalSetCompactionThreshold: a long, 412 when negative. */
static int check_compaction_threshold(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_integer(body))
        return fail(400, reason, cap, "%s", "compactionThreshold must be an integer");
    json_int_t v = json_integer_value(body);
    if (v < 0)
        return fail(412, reason, cap, "%s", "compactionThreshold must be 0 or more");
    *out = json_integer(v);
    return 0;
}

static const char *const quota_policies[] = {"producer_request_hold", "producer_exception",
                                             "consumer_backlog_eviction", NULL};
static const char *const schema_strategies[] = {
    "UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE",  "BACKWARD",        "FORWARD",
    "FULL",      "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE", NULL};

static const char *const sub_auth_modes[] = {"None", "Prefix", NULL};

static bool in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static int check_backlog_quota(const json_t *body, json_t **out, char *reason, size_t cap)
{
    json_int_t limit = -1, size = -1, t = -1;
    int rc = need_object(body, reason, cap);
    if (rc == 0)
        rc = field_int(body, "limit", -1, INT64_MIN_, INT64_MAX_, INT64_MIN_, &limit, reason, cap);
    if (rc == 0)
        rc = field_int(body, "limitSize", limit, INT64_MIN_, INT64_MAX_, -1, &size, reason, cap);
    if (rc == 0)
        rc = field_int(body, "limitTime", -1, INT32_MIN_, INT32_MAX_, -1, &t, reason, cap);
    if (rc < 0)
        return rc;
    json_t *p = json_object_get(body, "policy");
    const char *policy = "producer_request_hold";
    if (p && !json_is_null(p)) {
        if (!json_is_string(p))
            return fail(400, reason, cap, "%s", "policy must be a string");
        policy = json_string_value(p);
        if (!in_list(policy, quota_policies))
            return fail(400, reason, cap, "Unknown backlog quota policy '%.64s'", policy);
    }
    *out =
        json_pack("{sIsIsIss}", "limit", size, "limitSize", size, "limitTime", t, "policy", policy);
    return *out ? 0 : -500;
}

static int check_publish_rate(const json_t *body, json_t **out, char *reason, size_t cap)
{
    json_int_t msg = -1, bytes = -1;
    int rc = need_object(body, reason, cap);
    if (rc == 0)
        rc = field_int(body, "publishThrottlingRateInMsg", -1, INT32_MIN_, INT32_MAX_, -1, &msg,
                       reason, cap);
    if (rc == 0)
        rc = field_int(body, "publishThrottlingRateInByte", -1, INT64_MIN_, INT64_MAX_, -1, &bytes,
                       reason, cap);
    if (rc < 0)
        return rc;
    *out = json_pack("{sIsI}", "publishThrottlingRateInMsg", msg, "publishThrottlingRateInByte",
                     bytes);
    return *out ? 0 : -500;
}

static int check_dispatch_rate(const json_t *body, json_t **out, char *reason, size_t cap)
{
    json_int_t msg = -1, bytes = -1, period = 1;
    bool relative = false;
    int rc = need_object(body, reason, cap);
    if (rc == 0)
        rc = field_int(body, "dispatchThrottlingRateInMsg", -1, INT32_MIN_, INT32_MAX_, -1, &msg,
                       reason, cap);
    if (rc == 0)
        rc = field_int(body, "dispatchThrottlingRateInByte", -1, INT64_MIN_, INT64_MAX_, -1, &bytes,
                       reason, cap);
    if (rc == 0)
        rc = field_int(body, "ratePeriodInSecond", 1, INT32_MIN_, INT32_MAX_, 1, &period, reason,
                       cap);
    if (rc == 0)
        rc = field_bool(body, "relativeToPublishRate", false, &relative, reason, cap);
    if (rc < 0)
        return rc;
    *out =
        json_pack("{sIsIsbsI}", "dispatchThrottlingRateInMsg", msg, "dispatchThrottlingRateInByte",
                  bytes, "relativeToPublishRate", relative, "ratePeriodInSecond", period);
    return *out ? 0 : -500;
}

static int check_schema_strategy(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_string(body))
        return fail(400, reason, cap, "%s", "Expected a schema compatibility strategy name");
    const char *s = json_string_value(body);
    if (!in_list(s, schema_strategies))
        return fail(400, reason, cap, "Unknown schema compatibility strategy '%.64s'", s);
    *out = json_string(s);
    return 0;
}

static int check_sub_auth_mode(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_string(body))
        return fail(400, reason, cap, "%s", "Expected a subscription auth mode: None or Prefix");
    const char *s = json_string_value(body);
    if (!in_list(s, sub_auth_modes))
        return fail(400, reason, cap, "Unknown subscription auth mode '%.64s' (None or Prefix)", s);
    *out = json_string(s);
    return 0;
}

static int check_offload_policies(const json_t *body, json_t **out, char *reason, size_t cap)
{
    int rc = need_object(body, reason, cap);
    if (rc < 0)
        return rc;
    json_t *res = json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (!(json_is_string(v) || json_is_integer(v) || json_is_boolean(v) || json_is_null(v) ||
              json_is_object(v) || json_is_array(v))) {
            json_decref(res);
            return fail(400, reason, cap, "offloadPolicies.%.64s has an unsupported type", key);
        }
        json_object_set(res, key, v);
    }
    json_t *driver = json_object_get(res, "managedLedgerOffloadDriver");
    if (driver && !json_is_string(driver) && !json_is_null(driver)) {
        json_decref(res);
        return fail(400, reason, cap, "%s", "managedLedgerOffloadDriver must be a string");
    }
    json_t *th = json_object_get(res, "managedLedgerOffloadThresholdInBytes");
    if (th && !json_is_integer(th) && !json_is_null(th)) {
        json_decref(res);
        return fail(400, reason, cap, "%s",
                    "managedLedgerOffloadThresholdInBytes must be an integer");
    }
    *out = res;
    return 0;
}

static const admin_policy_def_t policy_defs[] = {
    {"retention", "retention_policies", POLICY_KEY_NONE, check_retention},
    {"messageTTL", "message_ttl_in_seconds", POLICY_KEY_NONE, check_int_ttl},
    {"subscriptionExpirationTime", "subscription_expiration_time_minutes", POLICY_KEY_NONE,
     check_sub_expiration},
    {"deduplication", "deduplicationEnabled", POLICY_KEY_NONE, check_bool},
    {"backlogQuota", "backlog_quota_map", POLICY_KEY_QUOTA_TYPE, check_backlog_quota},
    {"publishRate", "publishMaxMessageRate", POLICY_KEY_CLUSTER, check_publish_rate},
    {"dispatchRate", "topicDispatchRate", POLICY_KEY_CLUSTER, check_dispatch_rate},
    {"subscriptionDispatchRate", "subscriptionDispatchRate", POLICY_KEY_CLUSTER,
     check_dispatch_rate},
    {"maxProducersPerTopic", "max_producers_per_topic", POLICY_KEY_NONE, check_max_producers},
    {"maxConsumersPerTopic", "max_consumers_per_topic", POLICY_KEY_NONE, check_max_consumers},
    {"maxConsumersPerSubscription", "max_consumers_per_subscription", POLICY_KEY_NONE,
     check_max_consumers_sub},
    {"maxUnackedMessagesPerConsumer", "max_unacked_messages_per_consumer", POLICY_KEY_NONE,
     check_max_unacked},
    {"maxUnackedMessagesPerSubscription", "max_unacked_messages_per_subscription", POLICY_KEY_NONE,
     check_max_unacked_sub},
    {"maxTopicsPerNamespace", "max_topics_per_namespace", POLICY_KEY_NONE, check_max_topics},
    {"schemaCompatibilityStrategy", "schema_compatibility_strategy", POLICY_KEY_NONE,
     check_schema_strategy},
    {"isAllowAutoUpdateSchema", "is_allow_auto_update_schema", POLICY_KEY_NONE, check_bool},
    {"schemaValidationEnforced", "schema_validation_enforced", POLICY_KEY_NONE, check_bool},
    {"subscriptionAuthMode", "subscription_auth_mode", POLICY_KEY_NONE, check_sub_auth_mode},
    {"offloadThreshold", "offload_threshold", POLICY_KEY_NONE, check_long},
    {"offloadPolicies", "offload_policies", POLICY_KEY_NONE, check_offload_policies},
    {"compactionThreshold", "compaction_threshold", POLICY_KEY_NONE, check_compaction_threshold},
};

const admin_policy_def_t *admin_policy_find(const char *endpoint)
{
    for (size_t i = 0; i < sizeof policy_defs / sizeof policy_defs[0]; i++)
        if (strcmp(policy_defs[i].endpoint, endpoint) == 0)
            return &policy_defs[i];
    return NULL;
}

bool admin_policy_quota_type_valid(const char *type)
{
    return !type || strcmp(type, "destination_storage") == 0 || strcmp(type, "message_age") == 0;
}

/* ------------------------------------------------------------- documents -- */

json_t *admin_policies_default(const char *cluster)
{
    return json_pack("{s{s{}s{}s{}}s[s]s{s[ss]si}s{}s{}s{}s{}s{}s{}s{}s{}sbsbsssssbsbsIs{}}",
                     "auth_policies", "namespace_auth", "destination_auth",
                     "subscription_auth_roles", "replication_clusters", cluster, "bundles",
                     "boundaries", "0x00000000", "0xffffffff", "numBundles", 1, "backlog_quota_map",
                     "clusterDispatchRate", "topicDispatchRate", "subscriptionDispatchRate",
                     "replicatorDispatchRate", "clusterSubscribeRate", "publishMaxMessageRate",
                     "latency_stats_sample_rate", "deleted", 0, "encryption_required", 0,
                     "subscription_auth_mode", "None", "schema_compatibility_strategy", "UNDEFINED",
                     "is_allow_auto_update_schema", 1, "schema_validation_enforced", 0,
                     "offload_threshold", (json_int_t)-1, "properties");
}

json_t *admin_policy_get(json_t *doc, const admin_policy_def_t *def, const char *key)
{
    json_t *v = json_object_get(doc, def->field);
    if (v && def->key != POLICY_KEY_NONE)
        v = json_is_object(v) ? json_object_get(v, key) : NULL;
    return v && !json_is_null(v) ? v : NULL;
}

int admin_policy_set(json_t *doc, const admin_policy_def_t *def, const char *key, json_t *value)
{
    if (def->key == POLICY_KEY_NONE)
        return json_object_set_new(doc, def->field, value) == 0 ? 0 : -ENOMEM;
    json_t *map = json_object_get(doc, def->field);
    if (!json_is_object(map)) {
        map = json_object();
        if (!map || json_object_set_new(doc, def->field, map) < 0) {
            json_decref(value);
            return -ENOMEM;
        }
    }
    return json_object_set_new(map, key, value) == 0 ? 0 : -ENOMEM;
}

void admin_policy_remove(json_t *doc, const admin_policy_def_t *def, const char *key)
{
    if (def->key != POLICY_KEY_NONE) {
        json_t *map = json_object_get(doc, def->field);
        if (json_is_object(map))
            json_object_del(map, key);
        return;
    }
    json_t *defaults = admin_policies_default("");
    json_t *d = json_object_get(defaults, def->field);
    if (d)
        json_object_set(doc, def->field, d);
    else
        json_object_del(doc, def->field);
    json_decref(defaults);
}

int admin_policies_from_body(const json_t *body, const char *cluster, json_t **out, char *reason,
                             size_t cap)
{
    json_t *doc = admin_policies_default(cluster);
    if (!doc)
        return -500;
    if (!body || json_is_null(body)) {
        *out = doc;
        return 0;
    }
    if (!json_is_object(body)) {
        json_decref(doc);
        return fail(400, reason, cap, "%s", "Policies must be a JSON object");
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (json_is_null(v))
            continue;
        const admin_policy_def_t *def = NULL;
        for (size_t i = 0; i < sizeof policy_defs / sizeof policy_defs[0]; i++)
            if (strcmp(policy_defs[i].field, key) == 0)
                def = &policy_defs[i];
        if (!def) {
            /* Fields without a validator: kept when of the default's type. */
            json_t *d = json_object_get(doc, key);
            if (d && json_typeof(d) != json_typeof(v) &&
                !(json_is_boolean(d) && json_is_boolean(v))) {
                json_decref(doc);
                return fail(400, reason, cap, "Policies field %.64s has the wrong type", key);
            }
            json_object_set(doc, key, v);
            continue;
        }
        if (def->key != POLICY_KEY_NONE) {
            if (!json_is_object(v)) {
                json_decref(doc);
                return fail(400, reason, cap, "Policies field %.64s must be an object", key);
            }
            const char *k;
            json_t *item;
            json_object_foreach(v, k, item)
            {
                json_t *checked;
                int rc = def->check(item, &checked, reason, cap);
                if (rc < 0) {
                    json_decref(doc);
                    return rc;
                }
                admin_policy_set(doc, def, k, checked);
            }
            continue;
        }
        json_t *checked;
        int rc = def->check(v, &checked, reason, cap);
        if (rc < 0) {
            json_decref(doc);
            return rc;
        }
        admin_policy_set(doc, def, NULL, checked);
    }
    json_t *rc = json_object_get(doc, "replication_clusters");
    if (!json_is_array(rc)) {
        json_decref(doc);
        return fail(400, reason, cap, "%s", "replication_clusters must be a list of names");
    }
    /* pulsar-admin sends a whole Policies with replication_clusters []:
     * Pulsar's default for a v2 namespace is then the local cluster. */
    if (json_array_size(rc) == 0 && cluster)
        json_array_append_new(rc, json_string(cluster));
    *out = doc;
    return 0;
}

/* ------------------------------------------------------------- names etc -- */

int admin_json_parse(const char *body, size_t len, bool allow_empty, json_t **out, char *reason,
                     size_t cap)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
        i++;
    if (i == len) {
        if (!allow_empty)
            return fail(400, reason, cap, "%s", "Request body is missing");
        *out = json_null();
        return 0;
    }
    json_error_t err;
    *out = json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!*out) {
        snprintf(reason, cap, "Cannot parse the request body as JSON: %s (line %d)", err.text,
                 err.line);
        return -400;
    }
    return 0;
}

bool admin_name_valid(const char *name)
{
    /* "." and ".." never name an entity (Pulsar's web server refuses them as
     * path segments); the length bound keeps every metadata key and full
     * topic name within TOPIC_NAME_MAX. */
    size_t len = name ? strlen(name) : 0;
    if (!name || len > ADMIN_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    return topic_name_valid_entity(name, len);
}

static const char *const actions[] = {"produce", "consume",  "functions", "sources",
                                      "sinks",   "packages", NULL};

int admin_policy_check_actions(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_array(body))
        return fail(400, reason, cap, "%s", "Expected a list of actions");
    json_t *res = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(body, i, v)
    {
        if (!json_is_string(v) || !in_list(json_string_value(v), actions)) {
            json_decref(res);
            return fail(400, reason, cap, "Unknown action '%.64s'",
                        json_is_string(v) ? json_string_value(v) : "(not a string)");
        }
        bool dup = false;
        size_t j;
        json_t *w;
        json_array_foreach(res, j, w) dup |=
            strcmp(json_string_value(w), json_string_value(v)) == 0;
        if (!dup)
            json_array_append(res, v);
    }
    *out = res;
    return 0;
}

int admin_policy_check_roles(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!json_is_array(body))
        return fail(400, reason, cap, "%s", "Expected a list of roles");
    json_t *res = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(body, i, v)
    {
        const char *r = json_string_value(v);
        if (!r || !*r || strlen(r) > ADMIN_NAME_MAX) {
            json_decref(res);
            return fail(400, reason, cap, "%s", "Roles must be non-empty strings");
        }
        bool dup = false;
        size_t j;
        json_t *w;
        json_array_foreach(res, j, w) dup |= strcmp(json_string_value(w), r) == 0;
        if (!dup)
            json_array_append(res, v);
    }
    *out = res;
    return 0;
}

json_t *admin_actions_union(const json_t *a, const json_t *b)
{
    json_t *res = json_array();
    const json_t *lists[2] = {a, b};
    for (int k = 0; k < 2 && res; k++) {
        size_t i;
        json_t *v;
        json_array_foreach(lists[k], i, v)
        {
            if (!json_is_string(v))
                continue;
            bool dup = false;
            size_t j;
            json_t *w;
            json_array_foreach(res, j, w) dup |=
                strcmp(json_string_value(w), json_string_value(v)) == 0;
            if (!dup)
                json_array_append(res, v);
        }
    }
    return res;
}

static int string_list(const json_t *body, const char *name, json_t **out, char *reason, size_t cap)
{
    json_t *v = json_object_get(body, name);
    *out = json_array();
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v)) {
        json_decref(*out);
        return fail(400, reason, cap, "%s must be a list of strings", name);
    }
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s)
    {
        if (!json_is_string(s)) {
            json_decref(*out);
            return fail(400, reason, cap, "%s must be a list of strings", name);
        }
        json_array_append(*out, s);
    }
    return 0;
}

int admin_tenant_info_check(const json_t *body, json_t **out, char *reason, size_t cap)
{
    if (!body || json_is_null(body)) {
        *out = json_pack("{s[]s[]}", "adminRoles", "allowedClusters");
        return 0;
    }
    int rc = need_object(body, reason, cap);
    if (rc < 0)
        return rc;
    json_t *roles, *clusters;
    rc = string_list(body, "adminRoles", &roles, reason, cap);
    if (rc < 0)
        return rc;
    rc = string_list(body, "allowedClusters", &clusters, reason, cap);
    if (rc < 0) {
        json_decref(roles);
        return rc;
    }
    *out = json_pack("{soso}", "adminRoles", roles, "allowedClusters", clusters);
    return 0;
}

int admin_cluster_data_check(const json_t *body, json_t **out, char *reason, size_t cap)
{
    int rc = body && !json_is_null(body) ? need_object(body, reason, cap) : 0;
    if (rc < 0)
        return rc;
    json_t *res = json_object();
    if (!body || json_is_null(body)) {
        *out = res;
        return 0;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (json_is_null(v))
            continue;
        if (strstr(key, "Url") && !json_is_string(v)) {
            json_decref(res);
            return fail(400, reason, cap, "%.64s must be a string", key);
        }
        json_object_set(res, key, v);
    }
    *out = res;
    return 0;
}
