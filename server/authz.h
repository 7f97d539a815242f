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
 *
 * The namespace grants come from the broker's policies cache
 * (ns_policies.h: loaded on first use, watched), the tenant's adminRoles
 * from the metadata store (/admin/policies/<tenant>, read per check). With
 * authorizationEnabled=false every check allows.
 */
#ifndef QUIRE_SERVER_AUTHZ_H
#define QUIRE_SERVER_AUTHZ_H

#include <stdbool.h>

#include "server/broker.h"

typedef enum {
    AUTHZ_LOOKUP = 1,       /* produce or consume */
    AUTHZ_PRODUCE = 2,      /* produce */
    AUTHZ_CONSUME = 3,      /* consume */
    AUTHZ_TENANT_ADMIN = 4, /* tenant admin (or superuser) */
    AUTHZ_SUPERUSER = 5,    /* superuser only */
    AUTHZ_AUTHENTICATED = 6 /* any authenticated role */
} authz_action_t;

/* allowed: the answer; rc < 0 when it could not be determined (refuse). */
typedef void (*authz_cb)(int rc, bool allowed, void *arg);

/* Checks role for action on tenant (required except for SUPERUSER and
 * AUTHENTICATED), ns ("tenant/ns", for LOOKUP/PRODUCE/CONSUME) and topic
 * (full name or NULL). cb is called exactly once, never inline. */
int authz_check(broker_t *b, const char *role, const char *tenant, const char *ns,
                const char *topic, authz_action_t action, authz_cb cb, void *arg);

/* The grant of role in cached policies p (NS_AUTH_* bits, 0 for none). */
struct ns_policies;
int authz_grant_actions(const struct ns_policies *p, const char *role);

#endif
