/*
 * admin_permissions.c — topic grants and subscription roles, kept where
 * Pulsar keeps them: in the namespace's Policies document
 * (/admin/policies/<tenant>/<ns>), field auth_policies:
 *
 *   destination_auth         topic full name -> {role -> [actions]}
 *   subscription_auth_roles  subscription -> [roles]
 *
 * Routes (every one needs a tenant admin, http_auth.c):
 *
 *   GET    /admin/v2/<domain>/{t}/{ns}/{topic}/permissions         role -> actions:
 *          the namespace grants merged (union) with the topic's own
 *   POST   /admin/v2/<domain>/{t}/{ns}/{topic}/permissions/{role}  body [actions]:
 *          replaces role's grant on the topic and, for a partitioned
 *          topic, on every partition
 *   DELETE /admin/v2/<domain>/{t}/{ns}/{topic}/permissions/{role}: removes
 *          it (412 when the topic itself has no grant for role; partitions
 *          without one are skipped), as PersistentTopicsBase does
 *   GET    /admin/v2/namespaces/{t}/{ns}/permissions/subscription   sub -> roles
 *   POST   /admin/v2/namespaces/{t}/{ns}/permissions/subscription/{sub}  body
 *          [roles]: replaces the subscription's roles
 *   DELETE /admin/v2/namespaces/{t}/{ns}/permissions/{sub}/{role}: removes one
 *
 * Changes are compare-and-set updates of the document (admin_doc_update);
 * the broker's policies cache sees them through its watch (authz.h).
 */
#include <stdio.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/errors.h"
#include "server/partitions.h"

/* ----------------------------------------------------------------- shared -- */

/* doc[name] as an object, created when missing; NULL without memory. */
static json_t *object_at(json_t *doc, const char *name)
{
    json_t *o = json_object_get(doc, name);
    if (json_is_object(o))
        return o;
    o = json_object();
    if (!o || json_object_set_new(doc, name, o) < 0)
        return NULL;
    return o;
}

static bool role_param_valid(admin_req_t *req, const char *name)
{
    size_t len = strlen(admin_param(req, name));
    if (len == 0 || len > ADMIN_NAME_MAX) {
        admin_reply_error(req, 412, "Role name is not valid");
        return false;
    }
    return true;
}

/* req->path = the Policies key of the topic's namespace (names checked by
 * admin_req_topic). false: answered. */
static bool topic_policies_path(admin_req_t *req)
{
    if (!admin_req_topic(req))
        return false;
    snprintf(req->path, sizeof req->path, "/admin/policies/%s", req->tn.namespace_name);
    req->not_found_reason = "Namespace does not exist";
    return true;
}

static bool ns_policies_path(admin_req_t *req)
{
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace");
    if (!admin_name_valid(t) || !admin_name_valid(ns)) {
        admin_reply_error(req, 412, "Namespace name is not valid");
        return false;
    }
    snprintf(req->path, sizeof req->path, "/admin/policies/%s/%s", t, ns);
    req->not_found_reason = "Namespace does not exist";
    return true;
}

/* Reads the Policies document at req->path into req->doc, then next. */
static void doc_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    admin_req_t *req = arg;
    if (!admin_md_ok(req, rc, "Namespace does not exist", "namespace"))
        return;
    json_error_t err;
    req->doc = json_loadb(value, len, 0, &err);
    if (!json_is_object(req->doc)) {
        admin_reply_error(req, 500, "Stored policies of %s are not JSON", req->path);
        return;
    }
    req->next(req);
}

static void read_policies(admin_req_t *req, admin_handler_fn next)
{
    req->next = next;
    int rc = md_get(req->a->md, req->path, doc_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespace");
}

/* ------------------------------------------------------------ topic grants -- */

static void topic_permissions_reply(admin_req_t *req)
{
    json_t *auth = json_object_get(req->doc, "auth_policies");
    json_t *topic = json_object_get(json_object_get(auth, "destination_auth"), req->tn.full);
    json_t *out = json_object();
    const json_t *maps[2] = {json_object_get(auth, "namespace_auth"), topic};
    for (int k = 0; k < 2 && out; k++) {
        const char *role;
        json_t *actions;
        json_object_foreach((json_t *)maps[k], role, actions)
        {
            json_t *merged = admin_actions_union(json_object_get(out, role), actions);
            if (!merged || json_object_set_new(out, role, merged) < 0) {
                json_decref(out);
                out = NULL;
                break;
            }
        }
    }
    if (!out) {
        admin_reply_error(req, 500, "Out of memory");
        return;
    }
    admin_reply_json(req, 200, out);
}

void admin_topic_permissions_get(admin_req_t *req)
{
    if (topic_policies_path(req))
        read_policies(req, topic_permissions_reply);
}

/* Grants (req->flag) or revokes role on the topic and its req->n partitions. */
static int mutate_topic_grant(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    const char *role = admin_param(req, "role");
    json_t *auth = object_at(doc, "auth_policies");
    json_t *dest = auth ? object_at(auth, "destination_auth") : NULL;
    if (!dest)
        return -500;
    if (!req->flag && !json_object_get(json_object_get(dest, req->tn.full), role)) {
        snprintf(reason, cap, "Permissions are not set at the topic level");
        return -412;
    }
    for (int i = -1; i < req->n; i++) {
        char name[TOPIC_NAME_MAX + 32];
        if (i < 0)
            snprintf(name, sizeof name, "%s", req->tn.full);
        else if (topic_name_partition(&req->tn, i, name, sizeof name) < 0)
            continue;
        if (req->flag) {
            json_t *grants = object_at(dest, name);
            if (!grants || json_object_set(grants, role, req->body) < 0)
                return -500;
            continue;
        }
        json_t *grants = json_object_get(dest, name);
        json_object_del(grants, role);
        if (json_is_object(grants) && json_object_size(grants) == 0)
            json_object_del(dest, name);
    }
    return 0;
}

static void partitions_known(int rc, int partitions, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    req->n = partitions > 0 ? partitions : 0;
    admin_doc_update(req, mutate_topic_grant, 204);
}

/* Pulsar grants on each partition of a partitioned topic, then on itself. */
static void topic_grant_update(admin_req_t *req)
{
    req->n = 0;
    if (req->tn.partition >= 0) {
        admin_doc_update(req, mutate_topic_grant, 204);
        return;
    }
    int rc = broker_partitions_lookup(req->a->broker, &req->tn, false, partitions_known, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

void admin_topic_permission_grant(admin_req_t *req)
{
    if (!topic_policies_path(req) || !role_param_valid(req, "role") ||
        admin_parse_body(req, false) < 0)
        return;
    json_t *actions;
    char reason[256];
    int rc = admin_policy_check_actions(req->body, &actions, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    json_decref(req->body);
    req->body = actions;
    req->flag = true;
    topic_grant_update(req);
}

void admin_topic_permission_revoke(admin_req_t *req)
{
    if (!topic_policies_path(req) || !role_param_valid(req, "role"))
        return;
    req->flag = false;
    topic_grant_update(req);
}

/* ------------------------------------------------------ subscription roles -- */

static void subscription_permissions_reply(admin_req_t *req)
{
    json_t *subs =
        json_object_get(json_object_get(req->doc, "auth_policies"), "subscription_auth_roles");
    admin_reply_json(req, 200, json_is_object(subs) ? json_incref(subs) : json_object());
}

void admin_subscription_permissions_get(admin_req_t *req)
{
    if (ns_policies_path(req))
        read_policies(req, subscription_permissions_reply);
}

/* Sets (req->flag: req->body is the roles) or removes one role. */
static int mutate_subscription_roles(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    (void)reason;
    (void)cap;
    const char *sub = admin_param(req, "subscription");
    json_t *auth = object_at(doc, "auth_policies");
    json_t *subs = auth ? object_at(auth, "subscription_auth_roles") : NULL;
    if (!subs)
        return -500;
    if (req->flag)
        return json_object_set(subs, sub, req->body) < 0 ? -500 : 0;
    /* Pulsar removes the role and keeps the (maybe empty) set: an empty set
     * restricts nothing. */
    json_t *roles = json_object_get(subs, sub);
    const char *role = admin_param(req, "role");
    for (size_t i = json_array_size(roles); i-- > 0;) {
        const char *r = json_string_value(json_array_get(roles, i));
        if (r && strcmp(r, role) == 0)
            json_array_remove(roles, i);
    }
    return 0;
}

static bool subscription_param_valid(admin_req_t *req)
{
    size_t len = strlen(admin_param(req, "subscription"));
    if (len == 0 || len > TOPIC_NAME_MAX) {
        admin_reply_error(req, 412, "Subscription name is not valid");
        return false;
    }
    return true;
}

void admin_subscription_permission_grant(admin_req_t *req)
{
    if (!ns_policies_path(req) || !subscription_param_valid(req) ||
        admin_parse_body(req, false) < 0)
        return;
    json_t *roles;
    char reason[256];
    int rc = admin_policy_check_roles(req->body, &roles, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    json_decref(req->body);
    req->body = roles;
    req->flag = true;
    admin_doc_update(req, mutate_subscription_roles, 204);
}

void admin_subscription_permission_revoke(admin_req_t *req)
{
    if (!ns_policies_path(req) || !subscription_param_valid(req) || !role_param_valid(req, "role"))
        return;
    req->flag = false;
    admin_doc_update(req, mutate_subscription_roles, 204);
}
