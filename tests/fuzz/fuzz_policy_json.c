/*
 * fuzz_policy_json.c — libFuzzer target for JSON request bodies of the admin
 * API: the first byte picks a namespace-policy endpoint, the rest is the
 * body, parsed as the service parses bodies (admin_json_parse) and validated
 * by that endpoint's check, by the namespace-creation merge
 * (admin_policies_from_body) and by the permission-actions check; a valid
 * value is stored into and read back from a default Policies document.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_policies.h"

static const char *ENDPOINTS[] = {
    "retention",
    "messageTTL",
    "deduplication",
    "backlogQuota",
    "publishRate",
    "dispatchRate",
    "subscriptionDispatchRate",
    "maxProducersPerTopic",
    "maxConsumersPerTopic",
    "maxConsumersPerSubscription",
    "maxUnackedMessagesPerConsumer",
    "schemaCompatibilityStrategy",
    "offloadThreshold",
    "offloadPolicies",
    "isAllowAutoUpdateSchema",
    "maxTopicsPerNamespace",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *ep = ENDPOINTS[data[0] % (sizeof ENDPOINTS / sizeof ENDPOINTS[0])];
    json_t *body = NULL;
    char reason[256];
    if (admin_json_parse((const char *)data + 1, size - 1, true, &body, reason, sizeof reason) < 0)
        return 0;
    const admin_policy_def_t *def = admin_policy_find(ep);
    json_t *doc = admin_policies_default("standalone");
    if (def && doc) {
        json_t *v = NULL;
        if (def->check(body, &v, reason, sizeof reason) == 0 && v) {
            const char *key = def->key == POLICY_KEY_CLUSTER ? "standalone" : NULL;
            if (admin_policy_set(doc, def, key, v) == 0) {
                (void)admin_policy_get(doc, def, key);
                admin_policy_remove(doc, def, key);
            }
        }
    }
    json_t *merged = NULL;
    if (admin_policies_from_body(body, "standalone", &merged, reason, sizeof reason) == 0)
        json_decref(merged);
    json_t *actions = NULL;
    if (admin_policy_check_actions(body, &actions, reason, sizeof reason) == 0)
        json_decref(actions);
    json_t *roles = NULL;
    if (admin_policy_check_roles(body, &roles, reason, sizeof reason) == 0) {
        json_t *u = admin_actions_union(roles, body);
        json_decref(u);
        json_decref(roles);
    }
    json_decref(doc);
    json_decref(body);
    return 0;
}
