/*
 * authz.h — authorization: may this role do this to that tenant, namespace
 * or topic (Pulsar's PulsarAuthorizationProvider rules).
 *
 *   superUserRoles                      everything
 *   a tenant's adminRoles (TenantInfo)  everything in the tenant, but not
 *                                       creating/changing/deleting tenants,
 *                                       clusters, or broker-wide resources
 *   namespace grants                    produce / consume on the namespace's
 *   (auth_policies.namespace_auth)      topics; lookup = produce or consume
 *   topic grants                        the same on one topic; a partition
 *   (auth_policies.destination_auth)    "...-partition-N" also takes its base
 *                                       topic's grant
 *   subscription roles                  when a subscription lists roles,
 *   (auth_policies.                     only they (or superusers and tenant
 *    subscription_auth_roles)           admins) may consume through it
 *   subscription_auth_mode Prefix       other roles consume only through
 *                                       subscriptions named "<role>..."
 *
 * authorizationAllowWildcardsMatching=true: a granted role ending in '*'
 * matches every role with that prefix, one starting with '*' every role
 * with that suffix (namespace and topic grants; not subscription roles).
 *
 * Proxies (proxyRoles): a request of a proxy role carries the original
 * principal; both the proxy role and the original principal must be
 * allowed (Pulsar's AuthorizationService).
 *
 * The grants come from the broker's policies cache (ns_policies.h: loaded
 * on first use, watched, so a revocation reaches new operations once the
 * watch fires), the tenant's adminRoles from the metadata store
 * (/admin/policies/<tenant>, read per check). With authorizationEnabled=false
 * every check allows.
 */
#ifndef QUIRE_SERVER_AUTHZ_H
#define QUIRE_SERVER_AUTHZ_H

#include <jansson.h>
#include <stdbool.h>

#include "server/auth.h"
#include "server/broker.h"

typedef enum {
    AUTHZ_LOOKUP = 1,       /* produce or consume */
    AUTHZ_PRODUCE = 2,      /* produce */
    AUTHZ_CONSUME = 3,      /* consume (and the subscription's roles) */
    AUTHZ_TENANT_ADMIN = 4, /* tenant admin (or superuser) */
    AUTHZ_SUPERUSER = 5,    /* superuser only */
    AUTHZ_AUTHENTICATED = 6 /* any authenticated role */
} authz_action_t;

/* allowed: the answer; rc < 0 when it could not be determined (refuse). */
typedef void (*authz_cb)(int rc, bool allowed, void *arg);

/* One question. Strings are borrowed for the call only (copied). */
typedef struct authz_request {
    const char *role;         /* the authenticated role */
    const char *original;     /* a proxy's original principal (also checked), or NULL */
    const char *tenant;       /* required except for SUPERUSER and AUTHENTICATED */
    const char *ns;           /* "tenant/ns", for LOOKUP/PRODUCE/CONSUME */
    const char *topic;        /* full name, or NULL */
    const char *subscription; /* CONSUME through this subscription, or NULL */
    authz_action_t action;
} authz_request_t;

/* cb is called exactly once, never inline. 0, or -ENOMEM (cb not called). */
int authz_check_request(broker_t *b, const authz_request_t *r, authz_cb cb, void *arg);
/* The same without original principal or subscription. */
int authz_check(broker_t *b, const char *role, const char *tenant, const char *ns,
                const char *topic, authz_action_t action, authz_cb cb, void *arg);

/* ------------------------------------------------ pure rules (tested) -- */

/* An action name ("produce", "consume", "functions", "sources", "sinks",
 * "packages") as its NS_AUTH_* bit, 0 for an unknown name. */
int authz_action_bit(const char *name);
/* Whether a grant to `granted` applies to role: equal, or with wildcards
 * "prefix*" / "*suffix" (Pulsar's checkWildcardPermission). */
bool authz_role_matches(const char *granted, const char *role, bool wildcards);
/* The NS_AUTH_* bits that grants (a JSON object role -> [action names])
 * give role: its own entry, plus wildcard entries when wildcards. */
int authz_grant_bits(const json_t *grants, const char *role, bool wildcards);
/* The bits auth_policies gives role on topic (full name; base: its base
 * topic when it is a partition, else NULL; both may be NULL for a
 * namespace-only question), in Pulsar's order: namespace grant, topic
 * grant, wildcards, then the partitioned topic's exact grant. */
int authz_policy_bits(const json_t *auth_policies, const char *topic, const char *base,
                      const char *role, bool wildcards);
/* false when subscription_auth_roles lists roles for subscription and role
 * is not one of them (exact match, as Pulsar). */
bool authz_subscription_allows(const json_t *auth_policies, const char *subscription,
                               const char *role);
/* subscription_auth_mode Prefix (prefix_mode): false when subscription does
 * not start with role (Pulsar's startsWith: "role-x" and "rolex" both pass;
 * an empty subscription, as in a lookup, always passes). */
bool authz_subscription_prefix_allows(bool prefix_mode, const char *subscription, const char *role);
/* Pulsar's isValidOriginalPrincipal for the binary protocol: NULL when
 * role / original (NULL or "" = none) form a valid pair, else the reason.
 * A proxy role needs an original principal that is not a proxy role; any
 * other role may only name itself. */
const char *authz_original_principal_error(const auth_service_t *a, const char *role,
                                           const char *original);

#endif
