/*
 * admin_schemas.c — the schema registry's REST resource (Pulsar's
 * admin/v2/SchemasResource), over server/schema.h:
 *
 *   GET    /admin/v2/schemas/{t}/{ns}/{topic}/schema            latest   -> GetSchemaResponse
 *   GET    /admin/v2/schemas/{t}/{ns}/{topic}/schema/{version}  a version
 *   GET    /admin/v2/schemas/{t}/{ns}/{topic}/schemas           {"getSchemaResponses": [...]}
 *   POST   /admin/v2/schemas/{t}/{ns}/{topic}/schema            upload {type, schema, properties}
 *                                                               -> 202 {"version": {"version": N}}
 *   DELETE /admin/v2/schemas/{t}/{ns}/{topic}/schema[?force]    -> {"version": N}
 *   POST   /admin/v2/schemas/{t}/{ns}/{topic}/compatibility     -> 202 {"compatibility": bool,
 *                                                                  "schemaCompatibilityStrategy":
 * S} POST   /admin/v2/schemas/{t}/{ns}/{topic}/version           -> 202 {"version": N or -1}
 *
 * GetSchemaResponse: {"version", "type", "timestamp", "data" (the definition
 * as text; KEY_VALUE as {"key": ..., "value": ...}), "properties"}.
 * Statuses as Pulsar: 404 no schema / no namespace, 409 incompatible, 422
 * invalid definition, 406 a BYTES upload, 400 a malformed body.
 * The topic is a local name; partitions name their partitioned topic's schema.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/errors.h"
#include "server/schema.h"

/* ----------------------------------------------------------------- JSON -- */

/* The bytes as a JSON string; invalid UTF-8 becomes U+FFFD (as Java's new
 * String(bytes, UTF_8) does). */
static json_t *json_text(const uint8_t *p, size_t len)
{
    json_t *j = json_stringn((const char *)p, len);
    if (j || len == 0)
        return j ? j : json_string("");
    char *out = malloc(len * 3 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        uint8_t c = p[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = n > 0 && i + n <= len && c != 0;
        for (size_t k = 1; ok && k < n; k++)
            ok = (p[i + k] & 0xc0) == 0x80;
        if (ok) {
            memcpy(o, p + i, n);
            o += n;
            i += n;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    j = json_stringn(out, (size_t)(o - out));
    free(out);
    return j;
}

/* A KEY_VALUE definition as Pulsar shows it: {"key": schema or "", "value": ...}. */
static json_t *kv_text(const schema_version_t *v)
{
    schema_data_t kv = {v->type, v->data, v->len, v->props}, k, val;
    if (schema_kv_split(&kv, &k, &val) < 0)
        return json_text(v->data, v->len);
    json_t *kj = k.len ? json_loadb((const char *)k.data, k.len, JSON_DECODE_ANY, NULL) : NULL;
    json_t *vj =
        val.len ? json_loadb((const char *)val.data, val.len, JSON_DECODE_ANY, NULL) : NULL;
    json_t *doc =
        json_pack("{soso}", "key", kj ? kj : json_string(""), "value", vj ? vj : json_string(""));
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    json_t *out = s ? json_string(s) : NULL;
    free(s);
    return out;
}

static json_t *schema_response(const schema_version_t *v)
{
    const char *type = schema_type_name(v->type);
    json_t *data = v->type == SCHEMA_TYPE_KEY_VALUE ? kv_text(v) : json_text(v->data, v->len);
    return json_pack("{sIsssIsoso}", "version", (json_int_t)v->version, "type",
                     type ? type : "NONE", "timestamp", (json_int_t)v->timestamp_ms, "data",
                     data ? data : json_string(""), "properties", json_incref(v->props));
}

/* The uploaded definition of a PostSchemaPayload, as stored bytes (KEY_VALUE
 * gets its binary form). 0, or answers 400 and returns -1. */
static int payload_data(admin_req_t *req, int type, const char *text, char **out, size_t *len)
{
    if (type != SCHEMA_TYPE_KEY_VALUE) {
        *out = strdup(text);
        *len = strlen(text);
        return *out ? 0 : -ENOMEM;
    }
    json_t *doc = json_loads(text, 0, NULL);
    json_t *parts[2] = {json_object_get(doc, "key"), json_object_get(doc, "value")};
    char *txt[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (json_is_string(parts[i]))
            txt[i] = strdup(json_string_value(parts[i]));
        else if (parts[i])
            txt[i] = json_dumps(parts[i], JSON_COMPACT);
    }
    json_decref(doc);
    if (!txt[0] || !txt[1]) {
        free(txt[0]);
        free(txt[1]);
        admin_reply_error(req, 400, "A KEY_VALUE schema is {\"key\": ..., \"value\": ...}");
        return -1;
    }
    size_t kl = strlen(txt[0]), vl = strlen(txt[1]);
    uint8_t *b = malloc(8 + kl + vl);
    if (b) {
        for (int i = 0; i < 4; i++) {
            b[i] = (uint8_t)(kl >> (24 - 8 * i));
            b[4 + kl + i] = (uint8_t)(vl >> (24 - 8 * i));
        }
        memcpy(b + 4, txt[0], kl);
        memcpy(b + 8 + kl, txt[1], vl);
    }
    free(txt[0]);
    free(txt[1]);
    if (!b) {
        admin_reply_error(req, 503, "Out of memory");
        return -1;
    }
    *out = (char *)b;
    *len = 8 + kl + vl;
    return 0;
}

/* ------------------------------------------------------------- requests -- */

/* req->path = the schema id "tenant/ns/topic"; 0, or answers and -1. */
static int schema_id(admin_req_t *req)
{
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace");
    const char *topic = admin_param(req, "topic");
    char full[ADMIN_PATH_MAX];
    if (!admin_name_valid(t) || !admin_name_valid(ns) || !topic[0] ||
        (size_t)snprintf(full, sizeof full, "persistent://%s/%s/%s", t, ns, topic) >= sizeof full ||
        schema_id_of_topic(full, req->path, sizeof req->path) < 0) {
        admin_reply_error(req, 412, "Topic name is not valid");
        return -1;
    }
    return 0;
}

static void reply_registry_error(admin_req_t *req, const schema_result_t *res)
{
    switch (res->rc) {
    case QE_NOT_FOUND:
        admin_reply_error(req, 404, "Schema not found");
        return;
    case QE_INCOMPATIBLE:
        admin_reply_error(req, 409, "%s", res->reason);
        return;
    case QE_INVALID:
        admin_reply_error(req, 422, "%s", res->reason);
        return;
    default:
        admin_reply_rc(req, res->rc, "schema");
    }
}

/* Runs the registry call; a refusal to queue is answered here. */
static void started(admin_req_t *req, int rc)
{
    if (rc < 0)
        admin_reply_rc(req, rc, "schema");
}

/* --------------------------------------------------------------- reads -- */

static void get_done(const schema_result_t *res, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0) {
        reply_registry_error(req, res);
        return;
    }
    admin_reply_json(req, 200, schema_response(res->schema));
}

static void schema_get_step(admin_req_t *req)
{
    int64_t version = -1;
    const char *v = http_route_param(&req->params, "version");
    if (v) {
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || *end || end == v || n < 0) {
            admin_reply_error(req, 400, "Invalid schema version %s", v);
            return;
        }
        version = n;
    }
    started(req, schema_registry_get(req->a->broker, req->path, version, get_done, req));
}

void admin_schema_get(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schema_get_step);
}

static void get_all_done(const schema_result_t *res, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0) {
        reply_registry_error(req, res);
        return;
    }
    json_t *list = json_array();
    for (size_t i = 0; list && i < res->n_all; i++)
        json_array_append_new(list, schema_response(res->all[i]));
    admin_reply_json(req, 200, json_pack("{so}", "getSchemaResponses", list ? list : json_array()));
}

static void schemas_get_all_step(admin_req_t *req)
{
    started(req, schema_registry_get_all(req->a->broker, req->path, get_all_done, req));
}

void admin_schemas_get_all(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schemas_get_all_step);
}

/* -------------------------------------------------------------- uploads -- */

/* Parses the PostSchemaPayload into the registry's form and calls fn. */
typedef int (*schema_call_fn)(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                              void *arg);

static void with_payload(admin_req_t *req, schema_call_fn fn, schema_cb cb)
{
    if (admin_parse_body(req, false) < 0)
        return;
    const char *type_name = json_string_value(json_object_get(req->body, "type"));
    const char *text = json_string_value(json_object_get(req->body, "schema"));
    json_t *props = json_object_get(req->body, "properties");
    if (!json_is_object(req->body) || !type_name) {
        admin_reply_error(req, 400,
                          "The body is {\"type\": ..., \"schema\": ..., \"properties\": {}}");
        return;
    }
    if (strcmp(type_name, "BYTES") == 0) {
        admin_reply_error(req, 406,
                          "Do not upload a BYTES schema, because it's the default schema type");
        return;
    }
    int type = schema_type_parse(type_name);
    if (type < 0 || type == SCHEMA_TYPE_AUTO_CONSUME) {
        admin_reply_error(req, 400, "Unknown schema type %s", type_name);
        return;
    }
    json_t *clean = json_object();
    const char *k;
    json_t *v;
    if (json_is_object(props)) {
        json_object_foreach(props, k, v)
        {
            if (json_is_string(v))
                json_object_set(clean, k, v);
        }
    }
    char *data = NULL;
    size_t len = 0;
    if (payload_data(req, type, text ? text : "", &data, &len) < 0) {
        json_decref(clean);
        return;
    }
    schema_data_t d = {type, (const uint8_t *)data, len, clean};
    int rc = fn(req->a->broker, req->path, &d, cb, req);
    free(data);
    json_decref(clean);
    started(req, rc);
}

static void post_done(const schema_result_t *res, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0) {
        reply_registry_error(req, res);
        return;
    }
    admin_reply_json(req, 202,
                     json_pack("{s{sI}}", "version", "version", (json_int_t)res->version));
}

static void schema_post_step(admin_req_t *req)
{
    with_payload(req, schema_registry_put, post_done);
}

void admin_schema_post(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schema_post_step);
}

static void compat_done(const schema_result_t *res, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0 && res->rc != QE_INCOMPATIBLE) {
        reply_registry_error(req, res);
        return;
    }
    json_t *body = json_pack("{sbss}", "compatibility", res->rc == 0, "schemaCompatibilityStrategy",
                             schema_strategy_name(res->strategy));
    /* Quire's addition: why not (Pulsar answers an error carrying the reason). */
    if (body && res->rc < 0)
        json_object_set_new(body, "reason", json_string(res->reason));
    admin_reply_json(req, 202, body);
}

static void schema_compat_step(admin_req_t *req)
{
    with_payload(req, schema_registry_check, compat_done);
}

void admin_schema_compatibility(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schema_compat_step);
}

/* POST .../version: the version of an equal visible schema, or -1. */
typedef struct version_ctx {
    admin_req_t *req;
    int type;
    uint8_t *data;
    size_t len;
} version_ctx_t;

static void version_done(const schema_result_t *res, void *arg)
{
    version_ctx_t *vc = arg;
    admin_req_t *req = vc->req;
    schema_data_t w = {vc->type, vc->data, vc->len, NULL};
    json_int_t found = -1;
    for (size_t i = 0; res->rc == 0 && i < res->n_all; i++) {
        const schema_version_t *v = res->all[i];
        schema_data_t d = {v->type, v->data, v->len, v->props};
        if (schema_equal(&d, &w))
            found = v->version;
    }
    free(vc->data);
    free(vc);
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0)
        reply_registry_error(req, res);
    else
        admin_reply_json(req, 202, json_pack("{sI}", "version", found));
}

static int version_lookup(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                          void *arg)
{
    version_ctx_t *vc = calloc(1, sizeof *vc);
    if (vc)
        vc->data = malloc(s->len ? s->len : 1);
    if (!vc || !vc->data) {
        free(vc);
        return -ENOMEM;
    }
    vc->req = arg;
    vc->type = s->type;
    vc->len = s->len;
    if (s->len)
        memcpy(vc->data, s->data, s->len);
    int rc = schema_registry_get_all(b, id, cb, vc);
    if (rc < 0) {
        free(vc->data);
        free(vc);
    }
    return rc;
}

static void schema_version_step(admin_req_t *req)
{
    with_payload(req, version_lookup, version_done);
}

void admin_schema_version(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schema_version_step);
}

/* -------------------------------------------------------------- delete -- */

static void delete_done(const schema_result_t *res, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (res->rc < 0) {
        reply_registry_error(req, res);
        return;
    }
    admin_reply_json(req, 200, json_pack("{sI}", "version", (json_int_t)res->version));
}

static void schema_delete_step(admin_req_t *req)
{
    bool force = http_query_bool(http_request_url(req->ex), "force", false);
    started(req, schema_registry_delete(req->a->broker, req->path, force, delete_done, req));
}

void admin_schema_delete(admin_req_t *req)
{
    if (schema_id(req) == 0)
        admin_require_namespace(req, schema_delete_step);
}
