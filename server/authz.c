/*
 * authz.c — see authz.h.
 *
 * A check starts on the loop (never inline) and is a small chain of
 * asynchronous steps per role, each completing on the loop:
 *
 *   (1) superuser -> allow;
 *   (2) produce/consume/lookup: the namespace's cached policies -> allow on
 *       a matching grant (namespace, topic, wildcard, partitioned topic),
 *       unless the subscription's roles exclude the role;
 *   (3) the tenant's TenantInfo -> allow when the role is in adminRoles;
 *   otherwise deny.
 *
 * A proxied request runs the chain twice, for the original principal and
 * then for the proxy role; both must allow. A missing tenant or namespace
 * denies (never reveals which).
 */
#include "server/authz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/broker_security.h"
#include "server/codec/topic_name.h"
#include "server/ns_policies.h"

typedef struct authz_op {
    broker_t *broker;
    char role[AUTH_ROLE_MAX];
    char original[AUTH_ROLE_MAX]; /* "" when not proxied */
    const char *cur;              /* the role being checked: original, then role */
    char tenant[TOPIC_NAME_MAX + 1];
    char ns[2 * TOPIC_NAME_MAX + 2];
    char topic[TOPIC_NAME_MAX + 1];
    char base[TOPIC_NAME_MAX + 1]; /* the partitioned topic of a partition, or "" */
    char subscription[TOPIC_NAME_MAX + 1];
    authz_action_t action;
    authz_cb cb;
    void *arg;
    bool allowed;
    int rc;
} authz_op_t;

/* ------------------------------------------------------------- rules -- */

int authz_action_bit(const char *s)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"produce", NS_AUTH_PRODUCE},     {"consume", NS_AUTH_CONSUME},
                 {"functions", NS_AUTH_FUNCTIONS}, {"sources", NS_AUTH_SOURCES},
                 {"sinks", NS_AUTH_SINKS},         {"packages", NS_AUTH_PACKAGES}};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].bit;
    return 0;
}

bool authz_role_matches(const char *granted, const char *role, bool wildcards)
{
    if (!granted || !role || !*role)
        return false;
    if (strcmp(granted, role) == 0)
        return true;
    size_t g = strlen(granted), r = strlen(role);
    if (!wildcards || g == 0)
        return false;
    if (granted[g - 1] == '*' && strncmp(role, granted, g - 1) == 0)
        return true;
    return granted[0] == '*' && r >= g - 1 && strcmp(role + r - (g - 1), granted + 1) == 0;
}

static int actions_bits(const json_t *actions)
{
    int bits = 0;
    size_t i;
    json_t *a;
    json_array_foreach(actions, i, a) bits |= authz_action_bit(json_string_value(a));
    return bits;
}

int authz_grant_bits(const json_t *grants, const char *role, bool wildcards)
{
    if (!json_is_object(grants) || !role || !*role)
        return 0;
    if (!wildcards)
        return actions_bits(json_object_get(grants, role));
    int bits = 0;
    const char *granted;
    json_t *actions;
    json_object_foreach((json_t *)grants, granted, actions)
    {
        if (authz_role_matches(granted, role, true))
            bits |= actions_bits(actions);
    }
    return bits;
}

int authz_policy_bits(const json_t *auth, const char *topic, const char *base, const char *role,
                      bool wildcards)
{
    const json_t *dest = json_object_get(auth, "destination_auth");
    int bits = authz_grant_bits(json_object_get(auth, "namespace_auth"), role, wildcards);
    if (topic && *topic)
        bits |= authz_grant_bits(json_object_get(dest, topic), role, wildcards);
    /* Pulsar reads the partitioned topic's grant exactly (no wildcard), so a
     * partition added after a grant is covered. */
    if (base && *base)
        bits |= authz_grant_bits(json_object_get(dest, base), role, false);
    return bits;
}

bool authz_subscription_allows(const json_t *auth, const char *subscription, const char *role)
{
    if (!subscription || !*subscription)
        return true;
    const json_t *roles =
        json_object_get(json_object_get(auth, "subscription_auth_roles"), subscription);
    if (!json_is_array(roles) || json_array_size(roles) == 0)
        return true;
    size_t i;
    json_t *r;
    json_array_foreach(roles, i, r)
    {
        if (json_is_string(r) && role && strcmp(json_string_value(r), role) == 0)
            return true;
    }
    return false;
}

bool authz_subscription_prefix_allows(bool prefix_mode, const char *subscription, const char *role)
{
    if (!prefix_mode || !subscription || !*subscription)
        return true;
    return role && strncmp(subscription, role, strlen(role)) == 0;
}

const char *authz_original_principal_error(const auth_service_t *a, const char *role,
                                           const char *original)
{
    bool has = original && *original;
    if (auth_is_proxy_role(a, role)) {
        if (!has)
            return "originalPrincipal must be provided when connecting with a proxy role.";
        if (auth_is_proxy_role(a, original))
            return "originalPrincipal cannot be a proxy role.";
        return NULL;
    }
    if (has && (!role || strcmp(original, role) != 0))
        return "cannot specify originalPrincipal when connecting without valid proxy role";
    return NULL;
}

void ns_policies_parse_auth(const struct json_t *doc, ns_policies_t *out)
{
    json_t *auth = json_object_get(doc, "auth_policies");
    out->auth = json_is_object(auth) ? json_incref(auth) : NULL;
}

/* ------------------------------------------------------------- steps -- */

static void check_role(authz_op_t *op);

static void op_finish(authz_op_t *op)
{
    if (!op->allowed)
        log_info("authz", "role '%s'%s%s%s denied %d on %s", op->role,
                 op->original[0] ? " (for '" : "", op->original, op->original[0] ? "')" : "",
                 (int)op->action,
                 op->topic[0] ? op->topic
                 : op->ns[0]  ? op->ns
                              : op->tenant);
    op->cb(op->rc, op->allowed, op->arg);
    free(op);
}

/* One role's answer: a proxied request goes on with the proxy role. */
static void role_done(authz_op_t *op)
{
    if (op->rc == 0 && op->allowed && op->cur == op->original) {
        op->cur = op->role;
        op->allowed = false;
        check_role(op);
        return;
    }
    op_finish(op);
}

static void tenant_read(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    authz_op_t *op = arg;
    if (rc == 0) {
        json_error_t err;
        json_t *doc = json_loadb(value, len, 0, &err);
        json_t *roles = json_object_get(doc, "adminRoles");
        size_t i;
        json_t *r;
        json_array_foreach(roles, i, r)
        {
            if (json_is_string(r) && strcmp(json_string_value(r), op->cur) == 0)
                op->allowed = true;
        }
        json_decref(doc);
    } else if (rc != QE_NOT_FOUND) {
        op->rc = rc;
    }
    role_done(op);
}

static void check_tenant(authz_op_t *op)
{
    char path[TOPIC_NAME_MAX + 32];
    snprintf(path, sizeof path, "/admin/policies/%s", op->tenant);
    int rc = op->tenant[0] ? md_get(op->broker->md, path, tenant_read, op) : QE_NOT_FOUND;
    if (rc < 0) {
        op->rc = rc == QE_NOT_FOUND ? 0 : rc;
        role_done(op);
    }
}

static void ns_loaded(int rc, const ns_policies_t *p, void *arg)
{
    authz_op_t *op = arg;
    int want = op->action == AUTHZ_PRODUCE   ? NS_AUTH_PRODUCE
               : op->action == AUTHZ_CONSUME ? NS_AUTH_CONSUME
                                             : NS_AUTH_PRODUCE | NS_AUTH_CONSUME;
    const json_t *auth = rc == 0 && p ? p->auth : NULL;
    bool wildcards = authz_wildcards(broker_auth(op->broker));
    if (op->action == AUTHZ_CONSUME &&
        !authz_subscription_allows(auth, op->subscription, op->cur)) {
        log_info("authz", "role '%s' is not one of the roles of subscription '%s' in %s", op->cur,
                 op->subscription, op->ns);
    } else if (op->action == AUTHZ_CONSUME && rc == 0 && p &&
               !authz_subscription_prefix_allows(p->subscription_auth_prefix, op->subscription,
                                                 op->cur)) {
        log_info("authz", "subscription '%s' in %s is not prefixed by role '%s' (Prefix mode)",
                 op->subscription, op->ns, op->cur);
    } else if (authz_policy_bits(auth, op->topic, op->base, op->cur, wildcards) & want) {
        op->allowed = true;
    }
    if (op->allowed)
        role_done(op);
    else
        check_tenant(op); /* tenant admins pass subscription roles too */
}

static void check_role(authz_op_t *op)
{
    auth_service_t *a = broker_auth(op->broker);
    if (auth_is_superuser(a, op->cur)) {
        op->allowed = true;
    } else if (!op->cur[0] || op->action == AUTHZ_SUPERUSER) {
        op->allowed = false;
    } else if (op->action == AUTHZ_AUTHENTICATED) {
        op->allowed = true;
    } else if (op->action != AUTHZ_TENANT_ADMIN && op->ns[0]) {
        int rc = broker_ns_policies_load(op->broker, op->ns, ns_loaded, op);
        if (rc == 0)
            return;
        op->rc = rc;
    } else {
        check_tenant(op);
        return;
    }
    role_done(op);
}

static void op_start(void *arg)
{
    authz_op_t *op = arg;
    if (!authz_enabled(broker_auth(op->broker))) {
        op->allowed = true;
        op_finish(op);
        return;
    }
    check_role(op);
}

int authz_check_request(broker_t *b, const authz_request_t *r, authz_cb cb, void *arg)
{
    authz_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    op->broker = b;
    snprintf(op->role, sizeof op->role, "%s", r->role ? r->role : "");
    snprintf(op->original, sizeof op->original, "%s", r->original ? r->original : "");
    snprintf(op->tenant, sizeof op->tenant, "%s", r->tenant ? r->tenant : "");
    snprintf(op->ns, sizeof op->ns, "%s", r->ns ? r->ns : "");
    snprintf(op->subscription, sizeof op->subscription, "%s",
             r->subscription ? r->subscription : "");
    if (r->topic && strlen(r->topic) < sizeof op->topic) {
        snprintf(op->topic, sizeof op->topic, "%s", r->topic);
        topic_name_t *tn = malloc(sizeof *tn);
        if (!tn) {
            free(op);
            return -ENOMEM;
        }
        if (topic_name_parse(r->topic, tn) == 0 && tn->partition >= 0)
            snprintf(op->base, sizeof op->base, "%s", tn->base);
        free(tn);
    }
    op->cur = op->original[0] ? op->original : op->role;
    op->action = r->action;
    op->cb = cb;
    op->arg = arg;
    int rc = broker_defer(b, op_start, op);
    if (rc < 0)
        free(op);
    return rc;
}

int authz_check(broker_t *b, const char *role, const char *tenant, const char *ns,
                const char *topic, authz_action_t action, authz_cb cb, void *arg)
{
    authz_request_t r = {
        .role = role, .tenant = tenant, .ns = ns, .topic = topic, .action = action};
    return authz_check_request(b, &r, cb, arg);
}
