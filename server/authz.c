/*
 * authz.c — see authz.h.
 *
 * A check is a small chain of asynchronous steps, each completing on the
 * loop: (1) superuser -> allow; (2) for produce/consume/lookup, the
 * namespace's cached policies -> allow on a matching grant; (3) the
 * tenant's TenantInfo -> allow when the role is in adminRoles; otherwise
 * deny. A missing tenant or namespace denies (never reveals which).
 */
#include "server/authz.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/auth.h"
#include "server/broker_int.h"
#include "server/broker_security.h"
#include "server/ns_policies.h"

typedef struct authz_op {
    broker_t *broker;
    char role[AUTH_ROLE_MAX];
    char tenant[TOPIC_NAME_MAX + 1];
    char ns[2 * TOPIC_NAME_MAX + 2];
    authz_action_t action;
    authz_cb cb;
    void *arg;
    bool allowed;
    int rc;
} authz_op_t;

/* ------------------------------------------------------------ grants -- */

static uint8_t action_bit(const char *s)
{
    if (strcmp(s, "produce") == 0)
        return NS_AUTH_PRODUCE;
    if (strcmp(s, "consume") == 0)
        return NS_AUTH_CONSUME;
    if (strcmp(s, "functions") == 0)
        return NS_AUTH_FUNCTIONS;
    if (strcmp(s, "sources") == 0)
        return NS_AUTH_SOURCES;
    if (strcmp(s, "sinks") == 0)
        return NS_AUTH_SINKS;
    if (strcmp(s, "packages") == 0)
        return NS_AUTH_PACKAGES;
    return 0;
}

void ns_policies_parse_auth(const struct json_t *doc, ns_policies_t *out)
{
    out->auth_grants_count = 0;
    out->auth_grants_truncated = false;
    const json_t *auth = json_object_get(doc, "auth_policies");
    const json_t *ns_auth = json_object_get(auth, "namespace_auth");
    if (!json_is_object(ns_auth))
        return;
    const char *role;
    json_t *actions;
    json_object_foreach((json_t *)ns_auth, role, actions)
    {
        if (!json_is_array(actions) || strlen(role) >= sizeof out->auth_grants[0].role)
            continue;
        if (out->auth_grants_count == NS_AUTH_GRANTS_MAX) {
            out->auth_grants_truncated = true;
            break;
        }
        ns_auth_grant_t *g = &out->auth_grants[out->auth_grants_count++];
        snprintf(g->role, sizeof g->role, "%s", role);
        g->actions = 0;
        size_t i;
        json_t *a;
        json_array_foreach(actions, i, a)
        {
            if (json_is_string(a))
                g->actions |= action_bit(json_string_value(a));
        }
    }
}

int authz_grant_actions(const struct ns_policies *p, const char *role)
{
    for (uint32_t i = 0; i < p->auth_grants_count; i++)
        if (strcmp(p->auth_grants[i].role, role) == 0)
            return p->auth_grants[i].actions;
    return 0;
}

/* ------------------------------------------------------------- steps -- */

static void op_finish(authz_op_t *op)
{
    if (!op->allowed)
        log_info("authz", "role '%s' denied %d on %s", op->role, (int)op->action,
                 op->ns[0] ? op->ns : op->tenant);
    op->cb(op->rc, op->allowed, op->arg);
    free(op);
}

static void op_finish_deferred(void *arg)
{
    op_finish(arg);
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
            if (json_is_string(r) && strcmp(json_string_value(r), op->role) == 0)
                op->allowed = true;
        }
        json_decref(doc);
    } else if (rc != QE_NOT_FOUND) {
        op->rc = rc;
    }
    op_finish(op);
}

static void check_tenant(authz_op_t *op)
{
    char path[TOPIC_NAME_MAX + 32];
    snprintf(path, sizeof path, "/admin/policies/%s", op->tenant);
    int rc = op->tenant[0] ? md_get(op->broker->md, path, tenant_read, op) : QE_NOT_FOUND;
    if (rc < 0) {
        op->rc = rc == QE_NOT_FOUND ? 0 : rc;
        op_finish(op);
    }
}

static void ns_loaded(int rc, const ns_policies_t *p, void *arg)
{
    authz_op_t *op = arg;
    int want = op->action == AUTHZ_PRODUCE   ? NS_AUTH_PRODUCE
               : op->action == AUTHZ_CONSUME ? NS_AUTH_CONSUME
                                             : NS_AUTH_PRODUCE | NS_AUTH_CONSUME;
    if (rc == 0 && p && (authz_grant_actions(p, op->role) & want))
        op->allowed = true;
    if (op->allowed)
        op_finish(op);
    else
        check_tenant(op);
}

int authz_check(broker_t *b, const char *role, const char *tenant, const char *ns,
                const char *topic, authz_action_t action, authz_cb cb, void *arg)
{
    (void)topic; /* topic-level grants (destination_auth) are not read yet */
    authz_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    op->broker = b;
    snprintf(op->role, sizeof op->role, "%s", role ? role : "");
    snprintf(op->tenant, sizeof op->tenant, "%s", tenant ? tenant : "");
    snprintf(op->ns, sizeof op->ns, "%s", ns ? ns : "");
    op->action = action;
    op->cb = cb;
    op->arg = arg;
    auth_service_t *a = broker_auth(b);
    bool decided = true;
    if (!authz_enabled(a))
        op->allowed = true;
    else if (auth_is_superuser(a, op->role))
        op->allowed = true;
    else if (!op->role[0] || action == AUTHZ_SUPERUSER)
        op->allowed = false;
    else if (action == AUTHZ_AUTHENTICATED)
        op->allowed = true;
    else
        decided = false;
    int rc;
    if (decided) {
        rc = broker_defer(b, op_finish_deferred, op);
    } else if (action != AUTHZ_TENANT_ADMIN && op->ns[0]) {
        rc = broker_ns_policies_load(b, op->ns, ns_loaded, op);
    } else {
        check_tenant(op);
        return 0;
    }
    if (rc < 0)
        free(op);
    return rc;
}
