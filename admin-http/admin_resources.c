/*
 * admin_resources.c — clusters, tenants, namespaces and namespace policies
 * of the REST admin API, kept in the metadata store:
 *
 *   /admin/clusters/<cluster>       ClusterData  {"serviceUrl": ..., ...}
 *   /admin/policies/<tenant>        TenantInfo   {"adminRoles": [], "allowedClusters": []}
 *   /admin/policies/<tenant>/<ns>   Policies     (admin_policies.h; Pulsar's field names)
 *
 * Creation uses MD_VERSION_NEW (a concurrent create loses with 409), updates
 * read-modify-write with compare-and-set (admin_doc_update). Deleting a
 * tenant with namespaces, or a namespace with topics (registry keys under
 * /topics/<tenant>/<ns>/persistent or partitioned topics), is refused with
 * 409. Names are validated (Pulsar's NamedEntity) before they form a path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/errors.h"
#include "common/log.h"

#define ADMIN_ROLE_MAX 256

/* ---------------------------------------------------------------- shared -- */

static void reply_names(admin_req_t *req, int rc, const char *const *children, size_t n,
                        const char *prefix)
{
    if (rc < 0 && rc != QE_NOT_FOUND) {
        admin_reply_rc(req, rc, "list");
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (prefix) {
            char name[ADMIN_PATH_MAX];
            snprintf(name, sizeof name, "%s%s", prefix, children[i]);
            json_array_append_new(arr, json_string(name));
        } else {
            json_array_append_new(arr, json_string(children[i]));
        }
    }
    admin_reply_json(req, 200, arr);
}

static void reply_stored_doc(admin_req_t *req, int rc, const void *value, size_t len,
                             const char *missing)
{
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, 404, "%s", missing);
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->path);
        return;
    }
    json_error_t err;
    json_t *doc = json_loadb(value, len, 0, &err);
    if (!doc) {
        admin_reply_error(req, 500, "Stored document %s is not JSON", req->path);
        return;
    }
    admin_reply_json(req, 200, doc);
}

static void doc_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    admin_req_t *req = arg;
    reply_stored_doc(req, rc, value, len, req->not_found_reason);
}

/* Answers the JSON document stored at req->path; missing is the 404 reason. */
static void get_doc(admin_req_t *req, const char *missing)
{
    req->not_found_reason = missing;
    int rc = md_get(req->a->md, req->path, doc_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->path);
}

static void names_listed(int rc, const char *const *children, size_t n, void *arg)
{
    reply_names(arg, rc, children, n, NULL);
}

/* Answers the names of md_path's children as a JSON array. */
static void list_names(admin_req_t *req, const char *md_path)
{
    int rc = md_list(req->a->md, md_path, names_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, md_path);
}

/* req->path = dir/<the route parameter param>; false (answered 412 with
 * invalid) when the name is not valid. */
static bool named_path(admin_req_t *req, const char *param, const char *invalid, const char *dir)
{
    const char *name = admin_param(req, param);
    if (!admin_name_valid(name)) {
        admin_reply_error(req, 412, "%s", invalid);
        return false;
    }
    snprintf(req->path, sizeof req->path, "%s/%s", dir, name);
    return true;
}

/* Replaces the whole document with req->doc. */
static int mutate_replace(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    (void)reason;
    (void)cap;
    json_object_clear(doc);
    json_object_update(doc, req->doc);
    return 0;
}

static void put_new_done(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    admin_req_t *req = arg;
    if (rc == QE_EXISTS) {
        admin_reply_error(req, 409, "%s", req->not_found_reason);
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->path);
        return;
    }
    admin_reply_empty(req, req->ok_status);
}

/* Creates req->path with req->doc; exists_reason for 409. */
static void put_new(admin_req_t *req, const char *exists_reason, int ok_status)
{
    char *s = json_dumps(req->doc, JSON_COMPACT);
    if (!s) {
        admin_reply_error(req, 500, "Out of memory");
        return;
    }
    req->not_found_reason = exists_reason;
    req->ok_status = ok_status;
    int rc = md_put(req->a->md, req->path, s, strlen(s), MD_VERSION_NEW, NULL, put_new_done, req);
    free(s);
    if (rc < 0)
        admin_reply_rc(req, rc, req->path);
}

static void delete_done(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, 404, "%s", req->not_found_reason);
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->path);
        return;
    }
    admin_reply_empty(req, 204);
}

/* --------------------------------------------------------------- clusters -- */

void admin_clusters_list(admin_req_t *req)
{
    list_names(req, "/admin/clusters");
}

static bool cluster_path(admin_req_t *req)
{
    return named_path(req, "cluster", "Cluster name is not valid", "/admin/clusters");
}

void admin_cluster_get(admin_req_t *req)
{
    if (cluster_path(req))
        get_doc(req, "Cluster does not exist");
}

void admin_cluster_put(admin_req_t *req)
{
    if (!cluster_path(req) || admin_parse_body(req, true) < 0)
        return;
    char reason[256];
    int rc = admin_cluster_data_check(req->body, &req->doc, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    if (strcmp(req->route->arg, "create") == 0) {
        put_new(req, "Cluster already exists", 200);
        return;
    }
    req->not_found_reason = "Cluster does not exist";
    admin_doc_update(req, mutate_replace, 200);
}

void admin_cluster_delete(admin_req_t *req)
{
    if (!cluster_path(req))
        return;
    if (strcmp(admin_param(req, "cluster"), req->a->cluster) == 0) {
        admin_reply_error(req, 412, "Cannot delete the cluster this broker belongs to");
        return;
    }
    req->not_found_reason = "Cluster does not exist";
    int rc = md_delete(req->a->md, req->path, MD_VERSION_ANY, delete_done, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "cluster");
}

/* ---------------------------------------------------------------- tenants -- */

void admin_tenants_list(admin_req_t *req)
{
    list_names(req, "/admin/policies");
}

static bool tenant_path(admin_req_t *req)
{
    return named_path(req, "tenant", "Tenant name is not valid", "/admin/policies");
}

void admin_tenant_get(admin_req_t *req)
{
    if (tenant_path(req))
        get_doc(req, "Tenant does not exist");
}

/* After the allowed clusters are known to exist: create or update. */
static void tenant_store(admin_req_t *req)
{
    if (req->flag) {
        put_new(req, "Tenant already exists", 204);
        return;
    }
    req->not_found_reason = "Tenant does not exist";
    admin_doc_update(req, mutate_replace, 204);
}

static void tenant_clusters_listed(int rc, const char *const *children, size_t n, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0 && rc != QE_NOT_FOUND) {
        admin_reply_rc(req, rc, "clusters");
        return;
    }
    json_t *allowed = json_object_get(req->doc, "allowedClusters");
    size_t i;
    json_t *c;
    json_array_foreach(allowed, i, c)
    {
        bool found = false;
        for (size_t k = 0; rc == 0 && k < n && !found; k++)
            found = strcmp(children[k], json_string_value(c)) == 0;
        if (!found) {
            admin_reply_error(req, 412, "Clusters do not exist");
            return;
        }
    }
    tenant_store(req);
}

static void tenant_write(admin_req_t *req, bool create)
{
    if (!tenant_path(req) || admin_parse_body(req, true) < 0)
        return;
    char reason[256];
    int rc = admin_tenant_info_check(req->body, &req->doc, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    req->flag = create;
    rc = md_list(req->a->md, "/admin/clusters", tenant_clusters_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "clusters");
}

void admin_tenant_put(admin_req_t *req)
{
    tenant_write(req, true);
}

void admin_tenant_post(admin_req_t *req)
{
    tenant_write(req, false);
}

static void tenant_children(int rc, const char *const *children, size_t n, void *arg)
{
    (void)children;
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == 0 && n > 0) {
        admin_reply_error(req, 409, "The tenant still has active namespaces");
        return;
    }
    req->not_found_reason = "Tenant does not exist";
    rc = md_delete(req->a->md, req->path, MD_VERSION_ANY, delete_done, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "tenant");
}

void admin_tenant_delete(admin_req_t *req)
{
    if (!tenant_path(req))
        return;
    int rc = md_list(req->a->md, req->path, tenant_children, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "tenant");
}

/* ------------------------------------------------------------- namespaces -- */

static void namespaces_listed(int rc, const char *const *children, size_t n, void *arg)
{
    admin_req_t *req = arg;
    char prefix[TOPIC_NAME_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s/", admin_param(req, "tenant"));
    reply_names(req, rc, children, n, prefix);
}

static void namespaces_tenant_got(int rc, const void *value, size_t len, const md_stat_t *st,
                                  void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    admin_req_t *req = arg;
    if (!admin_md_ok(req, rc, "Tenant does not exist", "tenant"))
        return;
    rc = md_list(req->a->md, req->path, namespaces_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespaces");
}

void admin_namespaces_list(admin_req_t *req)
{
    if (!tenant_path(req))
        return;
    int rc = md_get(req->a->md, req->path, namespaces_tenant_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "tenant");
}

/* req->path = the namespace's Policies key; false (answered) for bad names. */
static bool namespace_path(admin_req_t *req)
{
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace");
    if (!admin_name_valid(t)) {
        admin_reply_error(req, 412, "Tenant name is not valid");
        return false;
    }
    if (!admin_name_valid(ns)) {
        admin_reply_error(req, 412, "Namespace name is not valid");
        return false;
    }
    snprintf(req->path, sizeof req->path, "/admin/policies/%s/%s", t, ns);
    return true;
}

void admin_namespace_get(admin_req_t *req)
{
    if (namespace_path(req))
        get_doc(req, "Namespace does not exist");
}

static void namespace_tenant_got(int rc, const void *value, size_t len, const md_stat_t *st,
                                 void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    admin_req_t *req = arg;
    if (!admin_md_ok(req, rc, "Tenant does not exist", "tenant"))
        return;
    namespace_path(req); /* validated before */
    put_new(req, "Namespace already exists", 204);
}

void admin_namespace_put(admin_req_t *req)
{
    if (!namespace_path(req) || admin_parse_body(req, true) < 0)
        return;
    char reason[256];
    int rc = admin_policies_from_body(req->body, req->a->cluster, &req->doc, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    char tenant_key[ADMIN_PATH_MAX];
    snprintf(tenant_key, sizeof tenant_key, "/admin/policies/%s", admin_param(req, "tenant"));
    rc = md_get(req->a->md, tenant_key, namespace_tenant_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "tenant");
}

/* Delete: namespace exists -> no topics -> no partitioned topics -> delete. */
static void ns_partitioned_listed(int rc, const char *const *children, size_t n, void *arg)
{
    (void)children;
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == 0 && n > 0) {
        admin_reply_error(req, 409, "Namespace is not empty");
        return;
    }
    namespace_path(req);
    req->not_found_reason = "Namespace does not exist";
    rc = md_delete(req->a->md, req->path, MD_VERSION_ANY, delete_done, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespace");
}

static void ns_topics_listed(int rc, const char *const *children, size_t n, void *arg)
{
    (void)children;
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == 0 && n > 0) {
        admin_reply_error(req, 409, "Namespace is not empty");
        return;
    }
    char path[ADMIN_PATH_MAX];
    snprintf(path, sizeof path, "/admin/partitioned-topics/%s/%s/persistent",
             admin_param(req, "tenant"), admin_param(req, "namespace"));
    rc = md_list(req->a->md, path, ns_partitioned_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespace");
}

static void ns_delete_checked(admin_req_t *req)
{
    char path[ADMIN_PATH_MAX];
    snprintf(path, sizeof path, "/topics/%s/%s/persistent", admin_param(req, "tenant"),
             admin_param(req, "namespace"));
    int rc = md_list(req->a->md, path, ns_topics_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespace");
}

void admin_namespace_delete(admin_req_t *req)
{
    if (!namespace_path(req))
        return;
    admin_require_namespace(req, ns_delete_checked);
}

/* --------------------------------------------------------------- policies -- */

/* The map key of a keyed policy: the cluster, or ?backlogQuotaType. NULL
 * (answered 400) when the quota type is unknown. */
static const char *policy_key(admin_req_t *req, const admin_policy_def_t *def, char *buf,
                              size_t cap)
{
    if (def->key == POLICY_KEY_CLUSTER)
        return req->a->cluster;
    if (def->key != POLICY_KEY_QUOTA_TYPE)
        return "";
    if (http_query_get(http_request_url(req->ex), "backlogQuotaType", buf, cap) < 0)
        snprintf(buf, cap, "destination_storage");
    if (!admin_policy_quota_type_valid(buf)) {
        admin_reply_error(req, 400, "Unknown backlogQuotaType '%.64s'", buf);
        return NULL;
    }
    return buf;
}

static void policy_doc_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    admin_req_t *req = arg;
    if (!admin_md_ok(req, rc, "Namespace does not exist", "namespace"))
        return;
    json_error_t err;
    json_t *doc = json_loadb(value, len, 0, &err);
    if (!doc) {
        admin_reply_error(req, 500, "Stored policies of %s are not JSON", req->path);
        return;
    }
    req->doc = doc;
    const char *what = req->route->arg;
    json_t *v = NULL;
    if (!what) {
        /* backlogQuotaMap / permissions */
        v = req->flag ? json_object_get(json_object_get(doc, "auth_policies"), "namespace_auth")
                      : json_object_get(doc, "backlog_quota_map");
        admin_reply_json(req, 200, v ? json_incref(v) : json_object());
        return;
    }
    const admin_policy_def_t *def = admin_policy_find(what);
    char buf[64];
    const char *key = policy_key(req, def, buf, sizeof buf);
    if (!key)
        return;
    v = admin_policy_get(doc, def, key);
    if (!v) {
        admin_reply_empty(req, 204); /* unset: Pulsar answers null as 204 */
        return;
    }
    admin_reply_json(req, 200, json_incref(v));
}

static void policy_read(admin_req_t *req)
{
    if (!namespace_path(req))
        return;
    int rc = md_get(req->a->md, req->path, policy_doc_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "namespace");
}

void admin_policy_get_h(admin_req_t *req)
{
    policy_read(req);
}

void admin_backlog_quota_map(admin_req_t *req)
{
    req->flag = false;
    policy_read(req);
}

void admin_permissions_get(admin_req_t *req)
{
    req->flag = true;
    policy_read(req);
}

static int mutate_policy_set(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    (void)reason;
    (void)cap;
    const admin_policy_def_t *def = admin_policy_find(req->route->arg);
    char buf[64];
    snprintf(buf, sizeof buf, "%s", json_string_value(json_object_get(req->body, "key")));
    json_t *value = json_incref(json_object_get(req->body, "value"));
    return admin_policy_set(doc, def, buf, value) < 0 ? -500 : 0;
}

static int mutate_policy_remove(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    (void)reason;
    (void)cap;
    const admin_policy_def_t *def = admin_policy_find(req->route->arg);
    admin_policy_remove(doc, def, json_string_value(json_object_get(req->body, "key")));
    return 0;
}

void admin_policy_set_h(admin_req_t *req)
{
    const admin_policy_def_t *def = admin_policy_find(req->route->arg);
    char buf[64];
    if (!namespace_path(req))
        return;
    const char *key = policy_key(req, def, buf, sizeof buf);
    if (!key || admin_parse_body(req, false) < 0)
        return;
    json_t *checked;
    char reason[512];
    int rc = def->check(req->body, &checked, reason, sizeof reason);
    if (rc < 0) {
        admin_reply_error(req, -rc, "%s", reason);
        return;
    }
    /* The body is replaced by {key, value}: what mutate_policy_set stores. */
    json_decref(req->body);
    req->body = json_pack("{ssso}", "key", key, "value", checked);
    if (!req->body) {
        admin_reply_error(req, 500, "Out of memory");
        return;
    }
    req->not_found_reason = "Namespace does not exist";
    admin_doc_update(req, mutate_policy_set, 204);
}

void admin_policy_delete_h(admin_req_t *req)
{
    const admin_policy_def_t *def = admin_policy_find(req->route->arg);
    char buf[64];
    if (!namespace_path(req))
        return;
    const char *key = policy_key(req, def, buf, sizeof buf);
    if (!key)
        return;
    /* Kept as a pseudo parameter for mutate_policy_remove. */
    req->body = json_pack("{ss}", "key", key);
    req->not_found_reason = "Namespace does not exist";
    admin_doc_update(req, mutate_policy_remove, 204);
}

static int mutate_grant(admin_req_t *req, json_t *doc, char *reason, size_t cap)
{
    (void)reason;
    (void)cap;
    json_t *auth = json_object_get(doc, "auth_policies");
    if (!json_is_object(auth)) {
        auth = json_object();
        json_object_set_new(doc, "auth_policies", auth);
    }
    json_t *ns_auth = json_object_get(auth, "namespace_auth");
    if (!json_is_object(ns_auth)) {
        ns_auth = json_object();
        json_object_set_new(auth, "namespace_auth", ns_auth);
    }
    const char *role = admin_param(req, "role");
    if (req->flag)
        json_object_set(ns_auth, role, req->body);
    else
        json_object_del(ns_auth, role);
    return 0;
}

static bool role_valid(admin_req_t *req)
{
    const char *role = admin_param(req, "role");
    size_t len = strlen(role);
    if (len == 0 || len > ADMIN_ROLE_MAX) {
        admin_reply_error(req, 412, "Role name is not valid");
        return false;
    }
    return true;
}

void admin_permission_grant(admin_req_t *req)
{
    if (!namespace_path(req) || !role_valid(req) || admin_parse_body(req, false) < 0)
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
    req->not_found_reason = "Namespace does not exist";
    admin_doc_update(req, mutate_grant, 204);
}

void admin_permission_revoke(admin_req_t *req)
{
    if (!namespace_path(req) || !role_valid(req))
        return;
    req->flag = false;
    req->not_found_reason = "Namespace does not exist";
    admin_doc_update(req, mutate_grant, 204);
}

/* -------------------------------------------------------------- bootstrap -- */

static void bootstrap_put_done(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    char *path = arg;
    if (rc == 0)
        log_info("admin", "created %s", path);
    else if (rc != QE_EXISTS)
        log_error("admin", "cannot create %s: %s", path, q_strerror(rc));
    free(path);
}

static void bootstrap_put(admin_service_t *a, const char *path, json_t *doc /* stolen */)
{
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    char *p = strdup(path);
    json_decref(doc);
    if (!s || !p ||
        md_put(a->md, path, s, strlen(s), MD_VERSION_NEW, NULL, bootstrap_put_done, p) < 0) {
        log_error("admin", "cannot create %s", path);
        free(p);
    }
    free(s);
}

void admin_bootstrap(admin_service_t *a)
{
    const broker_config_t *bc = broker_config(a->broker);
    char path[ADMIN_PATH_MAX], url[256], burl[256];
    snprintf(path, sizeof path, "/admin/clusters/%s", a->cluster);
    snprintf(url, sizeof url, "http://%s:%d", bc->advertised_address, a->web_port);
    snprintf(burl, sizeof burl, "pulsar://%s:%d", bc->advertised_address, bc->broker_service_port);
    bootstrap_put(a, path, json_pack("{ssss}", "serviceUrl", url, "brokerServiceUrl", burl));
    static const char *const tenants[] = {"public", "pulsar"};
    static const char *const namespaces[] = {"public/default", "pulsar/system"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/admin/policies/%s", tenants[i]);
        bootstrap_put(a, path, json_pack("{s[]s[s]}", "adminRoles", "allowedClusters", a->cluster));
        snprintf(path, sizeof path, "/admin/policies/%s", namespaces[i]);
        bootstrap_put(a, path, admin_policies_default(a->cluster));
    }
}
