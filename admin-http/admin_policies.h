/*
 * admin_policies.h — namespace Policies documents (Pulsar's JSON field names)
 * and the validation of every policy endpoint's body: pure functions over
 * jansson values, no I/O.
 *
 * A namespace's Policies is stored whole, as Pulsar serialises it, at
 * /admin/policies/<tenant>/<ns> (docs/admin-api.md lists the fields the
 * broker reads). Each endpoint of ADMIN-API-NOTES ("retention",
 * "messageTTL", ...) is one admin_policy_def_t: the document field it owns,
 * whether that field is a per-cluster or per-type map, and a validator.
 *
 * Error results are negative HTTP statuses with a reason: -400 for a body of
 * the wrong JSON shape or type, -412 for a well-formed value Pulsar refuses
 * (negative TTL, unknown enum).
 */
#ifndef QUIRE_ADMIN_POLICIES_H
#define QUIRE_ADMIN_POLICIES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    POLICY_KEY_NONE = 0,      /* the field holds the value itself */
    POLICY_KEY_CLUSTER = 1,   /* the field is a map cluster -> value */
    POLICY_KEY_QUOTA_TYPE = 2 /* the field is a map backlogQuotaType -> value */
} admin_policy_key_t;

/* Validates body; on success returns 0 and *out a new reference to the value
 * to store; else a negative status and reason. */
typedef int (*admin_policy_check_fn)(const json_t *body, json_t **out, char *reason, size_t cap);

typedef struct admin_policy_def {
    const char *endpoint; /* path segment after /namespaces/{t}/{ns}/ */
    const char *field;    /* Policies field */
    admin_policy_key_t key;
    admin_policy_check_fn check;
} admin_policy_def_t;

/* The definition for an endpoint name, or NULL. */
const admin_policy_def_t *admin_policy_find(const char *endpoint);

/* A new Policies document with Pulsar's defaults; replication_clusters
 * [cluster]. Caller owns it. */
json_t *admin_policies_default(const char *cluster);
/* Validates a Policies body given at namespace creation and merges its known
 * fields over a default document: 0 and *out (new), or a negative status. */
int admin_policies_from_body(const json_t *body, const char *cluster, json_t **out, char *reason,
                             size_t cap);

/* The stored value of def in doc (borrowed), or NULL when unset. key: the
 * cluster or quota type for keyed policies. */
json_t *admin_policy_get(json_t *doc, const admin_policy_def_t *def, const char *key);
/* Stores value (reference stolen) into doc. 0 or -ENOMEM. */
int admin_policy_set(json_t *doc, const admin_policy_def_t *def, const char *key, json_t *value);
/* Removes the policy (back to the default where Pulsar has one). */
void admin_policy_remove(json_t *doc, const admin_policy_def_t *def, const char *key);

/* backlogQuotaType: "destination_storage" (default, NULL) or "message_age". */
bool admin_policy_quota_type_valid(const char *type);
/* Permission actions: a JSON array of "produce", "consume", "functions",
 * "sources", "sinks", "packages" (duplicates removed): 0 and *out, or -400/-412. */
int admin_policy_check_actions(const json_t *body, json_t **out, char *reason, size_t cap);

/* Subscription roles: a JSON array of non-empty role names of at most
 * ADMIN_NAME_MAX bytes (duplicates removed): 0 and *out, or -400. */
int admin_policy_check_roles(const json_t *body, json_t **out, char *reason, size_t cap);
/* The union of two action arrays (either may be NULL): a new array. */
json_t *admin_actions_union(const json_t *a, const json_t *b);

/* Parses a request body as JSON (any value; duplicate keys refused). 0 and
 * *out (new; JSON null for an empty body when allow_empty), or -400 with the
 * parser's reason. */
int admin_json_parse(const char *body, size_t len, bool allow_empty, json_t **out, char *reason,
                     size_t cap);

/* Tenant, namespace and cluster names: Pulsar's NamedEntity [-=:.\w]+, at
 * most ADMIN_NAME_MAX bytes, not "." or "..". */
#define ADMIN_NAME_MAX 255
bool admin_name_valid(const char *name);
/* TenantInfo {adminRoles:[str], allowedClusters:[str]}: 0 and *out (new,
 * normalised), or -400. */
int admin_tenant_info_check(const json_t *body, json_t **out, char *reason, size_t cap);
/* ClusterData {serviceUrl, serviceUrlTls, brokerServiceUrl,
 * brokerServiceUrlTls, ...}: strings where present. 0 and *out, or -400. */
int admin_cluster_data_check(const json_t *body, json_t **out, char *reason, size_t cap);

#endif
