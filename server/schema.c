/*
 * schema.c — the schema registry: versions stored in the metadata store, one
 * cached subject per schema id, the operations of schema.h, and the broker's
 * hooks for PRODUCER, SUBSCRIBE, GET_SCHEMA and GET_OR_CREATE_SCHEMA.
 *
 * Storage (metadata store), one key per version:
 *
 *   /schemas/<tenant>/<ns>/<topic>/<version, 19 digits zero-padded>
 *     {"version": N, "type": "AVRO", "deleted": false, "timestamp": ms,
 *      "data": "<base64 of the schema data>", "properties": {"k": "v"}}
 *
 * A key is created once (MD_VERSION_NEW) and never rewritten, so the list of
 * children, read in bytewise order, is the history. Durable when the put's
 * callback runs (metadata.h).
 *
 * Subjects. The first operation on an id loads its history (md_list + one
 * md_get per version) into a subject_t; later operations use the cache. The
 * operations of a subject run one at a time in arrival order (a queue), so two
 * producers of two partitions registering the same new schema get one version.
 * A lost create (QE_EXISTS: another broker wrote the version) reloads the
 * subject and retries. Idle subjects are evicted past SCHEMA_SUBJECTS_MAX.
 *
 * Visible versions: those after the last "deleted" marker (Pulsar's
 * trimDeletedSchemaAndGetList). Loop thread only.
 */
#include "server/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/codec/commands.h"
#include "server/ns_policies.h"
#include "server/schema_int.h"

#define SCHEMA_SUBJECTS_MAX 4096   /* cached subjects before idle ones are evicted */
#define SCHEMA_VERSIONS_MAX 10000  /* versions of one subject */
#define SCHEMA_DATA_MAX (2u << 20) /* bytes of one schema definition */
#define SCHEMA_QUEUE_MAX 10000     /* operations waiting on one subject */
#define SCHEMA_RETRIES 3           /* reloads after a lost create */
#define SCHEMA_ROOT "/schemas"

typedef struct schema_registry {
    qmap_t *subjects; /* id -> subject_t */
} schema_registry_t;

enum { SUBJ_UNLOADED = 0, SUBJ_LOADING = 1, SUBJ_READY = 2 };

enum { OP_GET, OP_GET_ALL, OP_PUT, OP_CHECK, OP_CONSUMER, OP_DELETE };

typedef struct schema_op {
    struct schema_op *next;
    int kind;
    int64_t version; /* get */
    bool force;      /* delete */
    bool idle;       /* consumer: the topic has no producers, consumers or data */
    int type;        /* put/check/consumer: a copy of the schema */
    uint8_t *data;
    size_t len;
    json_t *props;
    schema_strategy_t strategy;
    bool auto_update; /* isAllowAutoUpdateSchema */
    int retries;
    schema_cb cb;
    void *arg;
} schema_op_t;

typedef struct subject {
    broker_t *broker;
    char *id;
    char path[TOPIC_NAME_MAX * 2];
    int state;
    schema_version_t *v; /* the history, in version order */
    size_t n, cap;
    schema_op_t *head, *tail;
    size_t queued;
    bool running;   /* an operation is in progress (waiting on storage) */
    bool scheduled; /* a pump is deferred */
    int load_pending;
    int load_rc;
    bool orphan; /* the registry is gone: free once nothing is in flight */
} subject_t;

/* ---------------------------------------------------------------- base64 -- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const uint8_t *in, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) |
                     (i + 2 < len ? in[i + 2] : 0);
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? b64[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int b64_value(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

/* Decodes NUL-terminated base64; *out malloc'd. 0 or QE_CORRUPT. */
static int b64_decode(const char *in, uint8_t **out, size_t *out_len)
{
    size_t len = strlen(in);
    if (len % 4)
        return QE_CORRUPT;
    uint8_t *buf = malloc(len / 4 * 3 + 1), *o = buf;
    if (!buf)
        return -ENOMEM;
    for (size_t i = 0; i < len; i += 4) {
        int a = b64_value(in[i]), b = b64_value(in[i + 1]);
        int c = in[i + 2] == '=' ? 0 : b64_value(in[i + 2]);
        int d = in[i + 3] == '=' ? 0 : b64_value(in[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0) {
            free(buf);
            return QE_CORRUPT;
        }
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        *o++ = (uint8_t)(v >> 16);
        if (in[i + 2] != '=')
            *o++ = (uint8_t)(v >> 8);
        if (in[i + 3] != '=')
            *o++ = (uint8_t)v;
    }
    *out = buf;
    *out_len = (size_t)(o - buf);
    return 0;
}

/* -------------------------------------------------------------- versions -- */

static void version_clear(schema_version_t *v)
{
    free(v->data);
    json_decref(v->props);
    memset(v, 0, sizeof *v);
}

static char *version_encode(const schema_version_t *v)
{
    char *data = b64_encode(v->data, v->len);
    if (!data)
        return NULL;
    const char *tn = schema_type_name(v->type);
    json_t *j = json_pack("{sIsssbsIsssO}", "version", (json_int_t)v->version, "type",
                          tn ? tn : "NONE", "deleted", v->deleted, "timestamp",
                          (json_int_t)v->timestamp_ms, "data", data, "properties", v->props);
    free(data);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

static int version_decode(const void *value, size_t len, schema_version_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *j = json_loadb(value, len, 0, NULL);
    json_t *ver = json_object_get(j, "version"), *props = json_object_get(j, "properties");
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *data = json_string_value(json_object_get(j, "data"));
    int rc = json_is_integer(ver) && type && data ? 0 : QE_CORRUPT;
    if (rc == 0)
        rc = b64_decode(data, &out->data, &out->len);
    if (rc == 0) {
        out->version = json_integer_value(ver);
        out->type = schema_type_parse(type);
        out->deleted = json_is_true(json_object_get(j, "deleted"));
        out->timestamp_ms = json_integer_value(json_object_get(j, "timestamp"));
        out->props = json_is_object(props) ? json_incref(props) : json_object();
        if (out->type < 0)
            out->type = SCHEMA_TYPE_NONE;
    }
    json_decref(j);
    return rc;
}

static schema_data_t version_view(const schema_version_t *v)
{
    return (schema_data_t){v->type, v->data, v->len, v->props};
}

/* Index of the first visible version (after the last deleted marker). */
static size_t subject_visible_from(const subject_t *s)
{
    for (size_t i = s->n; i-- > 0;)
        if (s->v[i].deleted)
            return i + 1;
    return 0;
}

static int64_t subject_next_version(const subject_t *s)
{
    return s->n ? s->v[s->n - 1].version + 1 : 0;
}

static int subject_append(subject_t *s, schema_version_t *v)
{
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 4;
        schema_version_t *nv = realloc(s->v, ncap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        s->v = nv;
        s->cap = ncap;
    }
    s->v[s->n++] = *v;
    memset(v, 0, sizeof *v);
    return 0;
}

static void subject_clear_versions(subject_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        version_clear(&s->v[i]);
    s->n = 0;
}

/* ------------------------------------------------------------- registry -- */

static schema_registry_t *registry(broker_t *b)
{
    if (!b->schemas) {
        b->schemas = calloc(1, sizeof *b->schemas);
        if (b->schemas)
            b->schemas->subjects = qmap_new();
        if (b->schemas && !b->schemas->subjects) {
            free(b->schemas);
            b->schemas = NULL;
        }
    }
    return b->schemas;
}

static void op_free(schema_op_t *op)
{
    free(op->data);
    json_decref(op->props);
    free(op);
}

static void subject_free(subject_t *s)
{
    subject_clear_versions(s);
    free(s->v);
    while (s->head) {
        schema_op_t *op = s->head;
        s->head = op->next;
        op_free(op);
    }
    free(s->id);
    free(s);
}

/* A subject whose registry was freed: drops it once no storage callback or
 * deferred pump can reach it. true if s is orphaned (the caller stops). */
static bool subject_orphaned(subject_t *s)
{
    if (!s->orphan)
        return false;
    if (s->load_pending <= 0 && !s->running && !s->scheduled)
        subject_free(s);
    return true;
}

void schema_registry_free(broker_t *b)
{
    if (!b->schemas)
        return;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(b->schemas->subjects, &it, NULL, &v)) {
        subject_t *s = v;
        /* Waiting operations are dropped: their callers are being freed too. */
        while (s->head) {
            schema_op_t *op = s->head;
            s->head = op->next;
            op_free(op);
        }
        s->tail = NULL;
        s->orphan = true;
        subject_orphaned(s);
    }
    qmap_free(b->schemas->subjects);
    free(b->schemas);
    b->schemas = NULL;
}

static bool subject_idle(const subject_t *s)
{
    return !s->head && !s->running && !s->scheduled && s->state != SUBJ_LOADING;
}

static void registry_evict(schema_registry_t *r)
{
    if (qmap_size(r->subjects) < SCHEMA_SUBJECTS_MAX)
        return;
    qmap_iter_t it = {0};
    const char *key;
    void *v;
    while (qmap_size(r->subjects) > SCHEMA_SUBJECTS_MAX / 2 &&
           qmap_next(r->subjects, &it, &key, &v)) {
        subject_t *s = v;
        if (subject_idle(s)) {
            qmap_remove(r->subjects, key);
            subject_free(s);
        }
    }
}

int schema_id_of_topic(const char *topic, char *out, size_t cap)
{
    topic_name_t tn;
    int rc = topic_name_parse(topic, &tn);
    if (rc == 0) {
        const char *base = strstr(tn.base, "://");
        base = base ? base + 3 : tn.base;
        rc = (size_t)snprintf(out, cap, "%s", base) < cap ? 0 : QE_TOO_LARGE;
    }
    return rc < 0 ? QE_INVALID : 0;
}

static subject_t *subject_get(broker_t *b, const char *id)
{
    schema_registry_t *r = registry(b);
    if (!r)
        return NULL;
    subject_t *s = qmap_get(r->subjects, id);
    if (s)
        return s;
    registry_evict(r);
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->broker = b;
    s->id = strdup(id);
    if (!s->id ||
        (size_t)snprintf(s->path, sizeof s->path, SCHEMA_ROOT "/%s", id) >= sizeof s->path ||
        qmap_put(r->subjects, id, s) < 0) {
        free(s->id);
        free(s);
        return NULL;
    }
    return s;
}

/* ------------------------------------------------------------ operations -- */

static void subject_pump(void *arg);
static void subject_load(subject_t *s);

static void subject_schedule(subject_t *s)
{
    if (s->scheduled || s->running || s->state == SUBJ_LOADING)
        return;
    if (broker_defer(s->broker, subject_pump, s) == 0)
        s->scheduled = true;
}

/* Ends the head operation with res (cb called) and moves on. */
static void op_finish(subject_t *s, schema_result_t *res)
{
    schema_op_t *op = s->head;
    s->head = op->next;
    if (!s->head)
        s->tail = NULL;
    s->queued--;
    s->running = false;
    if (res->rc < 0 && res->reason[0] == '\0')
        snprintf(res->reason, sizeof res->reason, "%s", q_strerror(res->rc));
    op->cb(res, op->arg);
    op_free(op);
    subject_schedule(s);
}

static void op_fail(subject_t *s, int rc, const char *reason)
{
    schema_result_t res = {.rc = rc, .version = -1};
    snprintf(res.reason, sizeof res.reason, "%s", reason ? reason : "");
    op_finish(s, &res);
}

static void put_done(int rc, const md_stat_t *st, void *arg);

/* Writes version v (taken) for the head operation; its result on completion. */
static void subject_write(subject_t *s, schema_version_t *v)
{
    char key[TOPIC_NAME_MAX * 2 + 32];
    snprintf(key, sizeof key, "%s/%019lld", s->path, (long long)v->version);
    char *doc = version_encode(v);
    if (!doc) {
        version_clear(v);
        op_fail(s, -ENOMEM, "out of memory");
        return;
    }
    /* The version rides on the subject until the put completes. */
    if (subject_append(s, v) < 0) {
        free(doc);
        version_clear(v);
        op_fail(s, -ENOMEM, "out of memory");
        return;
    }
    s->running = true;
    int rc = md_put(s->broker->md, key, doc, strlen(doc), MD_VERSION_NEW, NULL, put_done, s);
    free(doc);
    if (rc < 0) {
        version_clear(&s->v[--s->n]);
        op_fail(s, rc, NULL);
    }
}

static void put_done(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    subject_t *s = arg;
    s->running = false;
    if (subject_orphaned(s))
        return;
    s->running = true;
    schema_op_t *op = s->head;
    schema_version_t *v = &s->v[s->n - 1];
    if (rc == QE_EXISTS && op->retries++ < SCHEMA_RETRIES) {
        /* Another broker wrote this version: read the history again, retry. */
        s->running = false;
        subject_clear_versions(s);
        s->state = SUBJ_UNLOADED;
        subject_load(s);
        return;
    }
    if (rc < 0) {
        log_warn("schema", "%s: storing version %lld failed: %s", s->id, (long long)v->version,
                 q_strerror(rc));
        version_clear(&s->v[--s->n]);
        op_fail(s, rc, NULL);
        return;
    }
    log_info("schema", "%s: version %lld %s (%s)", s->id, (long long)v->version,
             v->deleted ? "deleted the schema" : "registered",
             v->deleted ? "marker" : schema_type_name(v->type));
    schema_result_t res = {.rc = 0, .version = v->version, .strategy = op->strategy};
    op_finish(s, &res);
}

static void op_get(subject_t *s, schema_op_t *op)
{
    size_t from = subject_visible_from(s);
    schema_result_t res = {.rc = QE_NOT_FOUND, .version = -1};
    for (size_t i = s->n; i-- > from;) {
        if (op->version < 0 || s->v[i].version == op->version) {
            res.rc = 0;
            res.schema = &s->v[i];
            res.version = s->v[i].version;
            break;
        }
    }
    if (res.rc < 0)
        snprintf(res.reason, sizeof res.reason, "Schema not found");
    op_finish(s, &res);
}

static void op_get_all(subject_t *s)
{
    size_t from = subject_visible_from(s);
    const schema_version_t **all = calloc(s->n - from + 1, sizeof *all);
    if (!all) {
        op_fail(s, -ENOMEM, "out of memory");
        return;
    }
    for (size_t i = from; i < s->n; i++)
        all[i - from] = &s->v[i];
    schema_result_t res = {.rc = 0, .version = -1, .all = all, .n_all = s->n - from};
    op_finish(s, &res);
    free(all);
}

/* The visible version equal to the op's schema, or NULL. */
static const schema_version_t *subject_find_equal(const subject_t *s, const schema_data_t *d)
{
    for (size_t i = subject_visible_from(s); i < s->n; i++) {
        schema_data_t e = version_view(&s->v[i]);
        if (schema_equal(&e, d))
            return &s->v[i];
    }
    return NULL;
}

/* Checks d against the visible versions with strategy; 0 or the error, whose
 * reason names the version that refused d. */
static int subject_check(const subject_t *s, const schema_data_t *d, schema_strategy_t strategy,
                         char *reason, size_t cap)
{
    size_t from = subject_visible_from(s);
    size_t n = s->n - from;
    schema_data_t *views = calloc(n + 1, sizeof *views);
    int64_t *versions = calloc(n + 1, sizeof *versions);
    int rc = -ENOMEM;
    if (views && versions) {
        for (size_t i = 0; i < n; i++) {
            views[i] = version_view(&s->v[from + i]);
            versions[i] = s->v[from + i].version;
        }
        rc = schema_check_compatible_versions(views, versions, n, d, strategy, reason, cap);
    }
    free(views);
    free(versions);
    return rc;
}

static void op_register(subject_t *s, schema_op_t *op)
{
    if (s->n >= SCHEMA_VERSIONS_MAX) {
        op_fail(s, QE_TOO_LARGE, "Too many schema versions for this topic");
        return;
    }
    schema_version_t v = {.version = subject_next_version(s),
                          .type = op->type,
                          .timestamp_ms = clock_wall_ms(),
                          .data = op->data,
                          .len = op->len,
                          .props = op->props ? op->props : json_object()};
    op->data = NULL;
    op->props = NULL;
    subject_write(s, &v);
}

static void op_put(subject_t *s, schema_op_t *op)
{
    schema_data_t d = {op->type, op->data, op->len, op->props};
    schema_result_t res = {.rc = 0, .version = -1, .strategy = op->strategy};
    res.rc = schema_validate(&d, res.reason, sizeof res.reason);
    if (res.rc < 0) {
        op_finish(s, &res);
        return;
    }
    const schema_version_t *eq = subject_find_equal(s, &d);
    if (eq) {
        res.version = eq->version;
        op_finish(s, &res);
        return;
    }
    if (op->kind == OP_PUT && !op->auto_update) {
        op_fail(s, SCHEMA_E_INCOMPATIBLE, "Schema not found and schema auto updating is disabled.");
        return;
    }
    res.rc = subject_check(s, &d, op->strategy, res.reason, sizeof res.reason);
    if (res.rc < 0 || op->kind == OP_CHECK) {
        op_finish(s, &res);
        return;
    }
    op_register(s, op);
}

/* ALWAYS_INCOMPATIBLE for a consumer: Pulsar checks it against every visible
 * version with no equality shortcut, so even an identical schema is refused
 * (a type change is reported as such first). */
static int consumer_always_incompatible(const subject_t *s, const schema_data_t *d, char *reason,
                                        size_t cap)
{
    for (size_t i = subject_visible_from(s); i < s->n; i++) {
        if (s->v[i].type == d->type)
            continue;
        snprintf(reason, cap,
                 "Incompatible schema: exists schema type %s, new schema type %s (schema version "
                 "%lld)",
                 schema_type_name(s->v[i].type),
                 schema_type_name(d->type) ? schema_type_name(d->type) : "?",
                 (long long)s->v[i].version);
        return SCHEMA_E_INCOMPATIBLE;
    }
    snprintf(reason, cap, "Schema compatibility strategy is ALWAYS_INCOMPATIBLE");
    return SCHEMA_E_INCOMPATIBLE;
}

/* Pulsar's checkConsumerCompatibility / addSchemaIfIdleOrCheckCompatible: on
 * a topic without a schema, the consumer's is registered if the topic is
 * idle, else refused (Pulsar's wording); with one, BACKWARD, FORWARD,
 * FORWARD_TRANSITIVE and FULL check the consumer's schema
 * BACKWARD against the latest (an identical latest lets it in); the others
 * check it against every visible version with the strategy itself, with no
 * equality shortcut. */
static void op_consumer(subject_t *s, schema_op_t *op)
{
    schema_data_t d = {op->type, op->data, op->len, op->props};
    bool has_schema = subject_visible_from(s) < s->n;
    if (!has_schema) {
        if (op->idle) {
            op->kind = OP_PUT;
            op_put(s, op); /* the first schema of an idle topic comes from its consumer */
        } else {           /* an active topic without a schema: nothing it could read */
            const char *tn = schema_type_name(op->type);
            schema_result_t res = {.rc = SCHEMA_E_INCOMPATIBLE, .version = -1};
            snprintf(res.reason, sizeof res.reason,
                     "Failed to add schema to an active topic with empty(BYTES) schema: new "
                     "schema type %s",
                     tn ? tn : "?");
            op_finish(s, &res);
        }
        return;
    }
    schema_result_t res = {.rc = 0, .version = -1, .strategy = op->strategy};
    schema_strategy_t st = op->strategy;
    bool latest = st == SCHEMA_BACKWARD || st == SCHEMA_FORWARD ||
                  st == SCHEMA_FORWARD_TRANSITIVE || st == SCHEMA_FULL;
    if (st == SCHEMA_ALWAYS_COMPATIBLE) {
        op_finish(s, &res);
        return;
    }
    res.rc = schema_validate(&d, res.reason, sizeof res.reason);
    if (res.rc == 0 && st == SCHEMA_ALWAYS_INCOMPATIBLE)
        res.rc = consumer_always_incompatible(s, &d, res.reason, sizeof res.reason);
    else if (res.rc == 0) /* against the latest, an identical one is accepted */
        res.rc = subject_check(s, &d, latest ? SCHEMA_BACKWARD : st, res.reason, sizeof res.reason);
    op_finish(s, &res);
}

static void delete_done(int rc, void *arg)
{
    subject_t *s = arg;
    s->running = false;
    if (subject_orphaned(s))
        return;
    s->running = true;
    if (rc < 0 && rc != QE_NOT_FOUND) {
        op_fail(s, rc, NULL);
        return;
    }
    int64_t last = s->n ? s->v[s->n - 1].version : -1;
    subject_clear_versions(s);
    log_info("schema", "%s: every schema version removed", s->id);
    schema_result_t res = {.rc = 0, .version = last};
    op_finish(s, &res);
}

static void op_delete(subject_t *s, schema_op_t *op)
{
    if (op->force) {
        s->running = true;
        int rc = md_delete_recursive(s->broker->md, s->path, delete_done, s);
        if (rc < 0) {
            s->running = false;
            op_fail(s, rc, NULL);
        }
        return;
    }
    if (subject_visible_from(s) >= s->n) {
        schema_result_t res = {.rc = 0, .version = -1};
        op_finish(s, &res); /* nothing visible to delete */
        return;
    }
    schema_version_t v = {.version = subject_next_version(s),
                          .type = SCHEMA_TYPE_NONE,
                          .deleted = true,
                          .timestamp_ms = clock_wall_ms(),
                          .props = json_object()};
    subject_write(s, &v);
}

static void subject_pump(void *arg)
{
    subject_t *s = arg;
    s->scheduled = false;
    if (subject_orphaned(s))
        return;
    while (s->head && !s->running && s->state == SUBJ_READY) {
        schema_op_t *op = s->head;
        s->running = true; /* op_finish clears it */
        switch (op->kind) {
        case OP_GET:
            op_get(s, op);
            break;
        case OP_GET_ALL:
            op_get_all(s);
            break;
        case OP_PUT:
        case OP_CHECK:
            s->running = false;
            op_put(s, op);
            break;
        case OP_CONSUMER:
            s->running = false;
            op_consumer(s, op);
            break;
        default:
            s->running = false;
            op_delete(s, op);
            break;
        }
        /* op_finish schedules the next pump: let it run from the mailbox. */
        if (s->scheduled)
            return;
    }
    if (s->state == SUBJ_UNLOADED && s->head)
        subject_load(s);
}

/* ----------------------------------------------------------------- load -- */

static void load_finish(subject_t *s)
{
    if (s->load_pending > 0)
        return;
    if (s->load_rc < 0) {
        log_warn("schema", "%s: loading the schemas failed: %s", s->id, q_strerror(s->load_rc));
        subject_clear_versions(s);
        s->state = SUBJ_UNLOADED;
        /* Every waiting operation fails; the next one loads again. */
        int rc = s->load_rc;
        while (s->head) {
            s->running = true;
            op_fail(s, rc, "cannot read the schema registry");
        }
        return;
    }
    s->state = SUBJ_READY;
    subject_schedule(s);
}

static void load_get_done(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    subject_t *s = arg;
    s->load_pending--;
    if (subject_orphaned(s))
        return;
    if (rc == 0) {
        schema_version_t v;
        if (version_decode(value, len, &v) < 0) {
            log_warn("schema", "%s: a stored version does not decode; skipped", s->id);
        } else if (s->n && v.version <= s->v[s->n - 1].version) {
            version_clear(&v); /* out of order: impossible with zero-padded keys */
        } else if (subject_append(s, &v) < 0) {
            version_clear(&v);
            s->load_rc = -ENOMEM;
        }
    } else if (rc != QE_NOT_FOUND && s->load_rc == 0) {
        s->load_rc = rc;
    }
    load_finish(s);
}

static void load_list_done(int rc, const char *const *children, size_t n, void *arg)
{
    subject_t *s = arg;
    s->load_pending--;
    if (subject_orphaned(s))
        return;
    if (rc < 0 && rc != QE_NOT_FOUND)
        s->load_rc = rc;
    for (size_t i = 0; rc == 0 && i < n && i < SCHEMA_VERSIONS_MAX; i++) {
        char key[TOPIC_NAME_MAX * 2 + 64];
        if ((size_t)snprintf(key, sizeof key, "%s/%s", s->path, children[i]) >= sizeof key)
            continue;
        s->load_pending++;
        int grc = md_get(s->broker->md, key, load_get_done, s);
        if (grc < 0) {
            s->load_pending--;
            s->load_rc = grc;
            break;
        }
    }
    load_finish(s);
}

static void subject_load(subject_t *s)
{
    if (s->state != SUBJ_UNLOADED)
        return;
    s->state = SUBJ_LOADING;
    s->load_rc = 0;
    s->load_pending = 1;
    int rc = md_list(s->broker->md, s->path, load_list_done, s);
    if (rc < 0) /* fail the waiting operations from the mailbox, never inline */
        load_list_done(rc, NULL, 0, s);
}

/* --------------------------------------------------------------- queueing -- */

static int op_enqueue(broker_t *b, const char *id, schema_op_t *op)
{
    if (b->shutting_down) {
        op_free(op);
        return QE_SHUTDOWN;
    }
    subject_t *s = subject_get(b, id);
    if (!s || s->queued >= SCHEMA_QUEUE_MAX) {
        op_free(op);
        return s ? QE_BUSY : -ENOMEM;
    }
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->queued++;
    subject_schedule(s); /* the pump loads the subject first if needed */
    return 0;
}

static schema_op_t *op_new(int kind, const schema_data_t *d, schema_cb cb, void *arg)
{
    schema_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->kind = kind;
    op->version = -1;
    op->cb = cb;
    op->arg = arg;
    op->strategy = SCHEMA_STRATEGY_DEFAULT;
    op->auto_update = true;
    if (d) {
        op->type = d->type;
        op->len = d->len;
        op->data = malloc(d->len ? d->len : 1);
        op->props = d->props ? json_deep_copy(d->props) : json_object();
        if (!op->data || !op->props) {
            op_free(op);
            return NULL;
        }
        if (d->len)
            memcpy(op->data, d->data, d->len);
    }
    return op;
}

int schema_registry_get(broker_t *b, const char *id, int64_t version, schema_cb cb, void *arg)
{
    schema_op_t *op = op_new(OP_GET, NULL, cb, arg);
    if (!op)
        return -ENOMEM;
    op->version = version;
    return op_enqueue(b, id, op);
}

int schema_registry_get_all(broker_t *b, const char *id, schema_cb cb, void *arg)
{
    schema_op_t *op = op_new(OP_GET_ALL, NULL, cb, arg);
    return op ? op_enqueue(b, id, op) : -ENOMEM;
}

int schema_registry_delete(broker_t *b, const char *id, bool force, schema_cb cb, void *arg)
{
    schema_op_t *op = op_new(OP_DELETE, NULL, cb, arg);
    if (!op)
        return -ENOMEM;
    op->force = force;
    return op_enqueue(b, id, op);
}

static void topic_schema_deleted(const schema_result_t *res, void *arg)
{
    (void)arg;
    if (res->rc < 0)
        log_warn("schema", "deleting the schema of a deleted topic failed: %s", res->reason);
}

void schema_registry_delete_topic(broker_t *b, const char *topic)
{
    topic_name_t tn;
    char id[TOPIC_NAME_MAX + 1];
    if (topic_name_parse(topic, &tn) == 0 && tn.partition < 0 &&
        schema_id_of_topic(topic, id, sizeof id) == 0)
        schema_registry_delete(b, id, true, topic_schema_deleted, NULL);
}

/* Operations that need the namespace's policies load them first. */
typedef struct policy_wait {
    broker_t *b;
    char *id;
    schema_op_t *op;
} policy_wait_t;

static void policies_loaded(int rc, const ns_policies_t *p, void *arg)
{
    policy_wait_t *w = arg;
    schema_op_t *op = w->op;
    if (rc == 0 && p) {
        if (schema_strategy_parse(p->schema_compatibility_strategy, &op->strategy) < 0)
            op->strategy = SCHEMA_STRATEGY_DEFAULT;
        op->auto_update = p->allow_auto_update_schema != 0;
    }
    schema_cb cb = op->cb;
    void *cb_arg = op->arg;
    rc = op_enqueue(w->b, w->id, op);
    if (rc < 0) {
        schema_result_t res = {.rc = rc, .version = -1};
        snprintf(res.reason, sizeof res.reason, "%s", q_strerror(rc));
        cb(&res, cb_arg);
    }
    free(w->id);
    free(w);
}

static int op_enqueue_with_policies(broker_t *b, const char *id, schema_op_t *op)
{
    char ns[TOPIC_NAME_MAX * 2];
    snprintf(ns, sizeof ns, "%s", id);
    char *slash = strchr(ns, '/');
    slash = slash ? strchr(slash + 1, '/') : NULL;
    if (!slash) {
        op_free(op);
        return QE_INVALID;
    }
    *slash = '\0';
    policy_wait_t *w = calloc(1, sizeof *w);
    if (w)
        w->id = strdup(id);
    if (!w || !w->id) {
        if (w)
            free(w);
        op_free(op);
        return -ENOMEM;
    }
    w->b = b;
    w->op = op;
    int rc = broker_ns_policies_load(b, ns, policies_loaded, w);
    if (rc < 0) {
        free(w->id);
        free(w);
        op_free(op);
    }
    return rc;
}

int schema_registry_put(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                        void *arg)
{
    if (s->len > SCHEMA_DATA_MAX)
        return QE_TOO_LARGE;
    schema_op_t *op = op_new(OP_PUT, s, cb, arg);
    return op ? op_enqueue_with_policies(b, id, op) : -ENOMEM;
}

int schema_registry_check(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                          void *arg)
{
    if (s->len > SCHEMA_DATA_MAX)
        return QE_TOO_LARGE;
    schema_op_t *op = op_new(OP_CHECK, s, cb, arg);
    return op ? op_enqueue_with_policies(b, id, op) : -ENOMEM;
}

static int schema_registry_consumer(broker_t *b, const char *id, const schema_data_t *s, bool idle,
                                    schema_cb cb, void *arg)
{
    if (s->len > SCHEMA_DATA_MAX)
        return QE_TOO_LARGE;
    schema_op_t *op = op_new(OP_CONSUMER, s, cb, arg);
    if (!op)
        return -ENOMEM;
    op->idle = idle;
    return op_enqueue_with_policies(b, id, op);
}

/* ------------------------------------------------------------ wire hooks -- */

/* A wire schema as a schema_data_t; props built into *props (caller decrefs). */
static schema_data_t wire_schema(const Pulsar__Proto__Schema *ps, json_t **props)
{
    *props = json_object();
    for (size_t i = 0; *props && i < ps->n_properties; i++) {
        const Pulsar__Proto__KeyValue *kv = ps->properties[i];
        if (kv && kv->key && kv->value)
            json_object_set_new(*props, kv->key, json_string(kv->value));
    }
    return (schema_data_t){(int)ps->type, ps->schema_data.data, ps->schema_data.len, *props};
}

/* "No schema": absent, None (what Java sends for BYTES), or AUTO_CONSUME. */
static bool wire_schema_none(const Pulsar__Proto__Schema *ps)
{
    return !ps || ps->type == PULSAR__PROTO__SCHEMA__TYPE__None ||
           ps->type == PULSAR__PROTO__SCHEMA__TYPE__AutoConsume;
}

static void version_bytes(int64_t v, uint8_t out[8])
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

/* Wire errors: a refused or malformed schema is IncompatibleSchema. */
static int schema_rc_for_client(int rc)
{
    return rc == QE_INVALID || rc == SCHEMA_E_INCOMPATIBLE ? QE_INCOMPATIBLE : rc;
}

/* The reason of the refusal being reported (schema_refusal_reason): set only
 * while attach_done calls its topic_ready_cb with QE_INCOMPATIBLE. */
static const char *refusal_now;

const char *schema_refusal_reason(int rc)
{
    return rc == QE_INCOMPATIBLE && refusal_now ? refusal_now : q_strerror(rc);
}

/* What Pulsar's ServerCnx answers a producer without a schema on a topic with
 * one when the namespace enforces schemas. */
#define ENFORCED_REASON                                                                            \
    "Producers cannot connect or send message without a schema to topics with a schema when "      \
    "SchemaValidationEnforced is enabled"

typedef struct attach_ctx {
    conn_t *conn; /* one reference */
    broker_t *b;
    uint64_t id; /* producer or consumer id */
    bool producer;
    bool enforce;         /* a producer without a schema: refused if the topic has one */
    bool enforce_unknown; /* ... and the namespace's policies were not loaded yet */
    json_t *props;
    schema_data_t schema; /* data owned (copied) */
    uint8_t *data;
    topic_t *topic; /* busy held while the registry works */
    topic_ready_cb cb;
    void *arg;
} attach_ctx_t;

static void attach_ctx_free(attach_ctx_t *a)
{
    conn_unref(a->conn);
    json_decref(a->props);
    free(a->data);
    free(a);
}

/* Calls the caller's callback with a refusal whose reason the caller reads
 * with schema_refusal_reason(). */
static void attach_refuse(attach_ctx_t *a, int rc, const char *reason)
{
    rc = schema_rc_for_client(rc);
    log_info("schema", "%s: %s %llu on %s refused: %s", a->conn->peer,
             a->producer ? "producer" : "consumer", (unsigned long long)a->id, a->topic->name,
             reason);
    refusal_now = rc == QE_INCOMPATIBLE ? reason : NULL;
    a->cb(rc, NULL, a->arg);
    refusal_now = NULL;
}

static void attach_done(const schema_result_t *res, void *arg)
{
    attach_ctx_t *a = arg;
    topic_t *t = a->topic;
    t->busy--;
    int rc = res->rc;
    if (a->enforce) /* schemaValidationEnforced: no schema on a topic with one */
        rc = rc == 0 ? SCHEMA_E_INCOMPATIBLE : rc == QE_NOT_FOUND ? 0 : rc;
    if (rc < 0) {
        attach_refuse(a, rc,
                      a->enforce && rc == SCHEMA_E_INCOMPATIBLE ? ENFORCED_REASON : res->reason);
    } else {
        if (a->producer && !a->enforce && res->version >= 0) {
            producer_t *p = qmap64_get(a->conn->producers, a->id);
            if (p && !p->ready) {
                version_bytes(res->version, p->schema_version);
                p->has_schema_version = true;
            }
        }
        a->cb(0, t, a->arg);
    }
    attach_ctx_free(a);
}

static bool topic_is_idle(const topic_t *t)
{
    if (t->producers_count > 0)
        return false;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        const subscription_t *s = v;
        for (size_t i = 0; i < s->consumers_count; i++)
            if (!s->consumers[i]->auto_consume) /* as Pulsar counts them */
                return false;
    }
    if (t->ml) {
        ml_stats_t st;
        ml_get_stats(t->ml, &st);
        if (st.entries > 0 || st.size_bytes > 0)
            return false;
    }
    return true;
}

/* Starts the registry operation of a (topic loaded, policies known). */
static int attach_start(attach_ctx_t *a, topic_t *t)
{
    char id[TOPIC_NAME_MAX + 1];
    int rc = schema_id_of_topic(t->name, id, sizeof id);
    if (rc < 0)
        return rc;
    a->topic = t;
    t->busy++;
    rc = a->enforce ? schema_registry_get(a->b, id, -1, attach_done, a)
         : a->producer
             ? schema_registry_put(a->b, id, &a->schema, attach_done, a)
             : schema_registry_consumer(a->b, id, &a->schema, topic_is_idle(t), attach_done, a);
    if (rc < 0)
        t->busy--;
    return rc;
}

/* The namespace's policies, loaded for a producer without a schema: enforced
 * or not, as the namespace says (not the defaults of an unloaded cache). */
static void attach_policies_loaded(int rc, const ns_policies_t *p, void *arg)
{
    attach_ctx_t *a = arg;
    topic_t *t = a->topic;
    t->busy--;
    a->enforce_unknown = false;
    a->enforce = rc == 0 && p && p->schema_validation_enforced;
    if (a->conn->state != CONN_CLOSED && a->enforce) {
        rc = attach_start(a, t);
        if (rc == 0)
            return;
    } else {
        rc = 0;
    }
    if (rc < 0)
        a->cb(schema_rc_for_client(rc), NULL, a->arg);
    else
        a->cb(0, t, a->arg);
    attach_ctx_free(a);
}

static void attach_topic_ready(int rc, topic_t *t, void *arg)
{
    attach_ctx_t *a = arg;
    if (rc < 0 || a->conn->state == CONN_CLOSED) {
        a->cb(rc, t, a->arg);
        attach_ctx_free(a);
        return;
    }
    if (a->enforce_unknown) {
        topic_name_t tn;
        rc = topic_name_parse(t->name, &tn);
        if (rc == 0) {
            a->topic = t;
            t->busy++;
            rc = broker_ns_policies_load(a->b, tn.namespace_name, attach_policies_loaded, a);
            if (rc < 0)
                t->busy--;
        }
    } else {
        rc = attach_start(a, t);
    }
    if (rc < 0) {
        a->cb(schema_rc_for_client(rc), NULL, a->arg);
        attach_ctx_free(a);
    }
}

static int schema_attach(conn_t *c, const char *topic, bool create, bool producer, uint64_t id,
                         const Pulsar__Proto__Schema *ps, topic_ready_cb cb, void *arg)
{
    bool enforce = false, unknown = false;
    if (wire_schema_none(ps)) {
        /* schemaValidationEnforced: from the cache when the namespace's
         * policies are loaded, else loaded once the topic is (attach_topic_ready). */
        topic_name_t tn;
        if (producer && topic_name_parse(topic, &tn) == 0) {
            const ns_policies_t *p = broker_ns_policies(c->broker, tn.namespace_name);
            enforce = p->loaded && p->schema_validation_enforced;
            unknown = !p->loaded;
        }
        if (!enforce && !unknown)
            return broker_topic_get(c->broker, topic, create, cb, arg);
    }
    attach_ctx_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->enforce = enforce;
    a->enforce_unknown = unknown;
    Pulsar__Proto__Schema none = PULSAR__PROTO__SCHEMA__INIT;
    schema_data_t d = wire_schema(enforce || unknown ? &none : ps, &a->props);
    a->data = malloc(d.len ? d.len : 1);
    if (!a->props || !a->data) {
        json_decref(a->props);
        free(a->data);
        free(a);
        return -ENOMEM;
    }
    if (d.len)
        memcpy(a->data, d.data, d.len);
    a->schema = (schema_data_t){d.type, a->data, d.len, a->props};
    a->conn = c;
    a->b = c->broker;
    a->id = id;
    a->producer = producer;
    a->cb = cb;
    a->arg = arg;
    conn_ref(c);
    int rc = broker_topic_get(c->broker, topic, create, attach_topic_ready, a);
    if (rc < 0)
        attach_ctx_free(a);
    return rc;
}

int schema_producer_topic_get(conn_t *c, const char *topic,
                              const Pulsar__Proto__CommandProducer *cmd, topic_ready_cb cb,
                              void *arg)
{
    return schema_attach(c, topic, true, true, cmd->producer_id, cmd->schema, cb, arg);
}

int schema_consumer_topic_get(conn_t *c, const char *topic, bool create,
                              const Pulsar__Proto__CommandSubscribe *cmd, topic_ready_cb cb,
                              void *arg)
{
    return schema_attach(c, topic, create, false, cmd->consumer_id, cmd->schema, cb, arg);
}

/* ------------------------------------------------------------ GET_SCHEMA -- */

typedef struct get_ctx {
    conn_t *conn; /* one reference */
    uint64_t request_id;
    char id[TOPIC_NAME_MAX + 1];
    char topic[TOPIC_NAME_MAX + 1];
} get_ctx_t;

static void send_buf(conn_t *c, int rc, qbuf_t *buf)
{
    if (rc < 0) {
        log_error("schema", "%s: cannot encode a response: %s", c->peer, q_strerror(rc));
        return;
    }
    conn_send_buf(c, buf, 0, buf->len);
}

static void get_schema_done(const schema_result_t *res, void *arg)
{
    get_ctx_t *g = arg;
    conn_t *c = g->conn;
    if (c->state != CONN_CLOSED) {
        qbuf_t *buf = NULL;
        int rc;
        if (res->rc == QE_NOT_FOUND) {
            char msg[TOPIC_NAME_MAX + 64];
            snprintf(msg, sizeof msg, "Topic not found or no-schema %s", g->topic);
            rc = cmd_encode_get_schema_error(g->request_id,
                                             PULSAR__PROTO__SERVER_ERROR__TopicNotFound, msg, &buf);
        } else if (res->rc < 0) {
            rc = cmd_encode_get_schema_error(
                g->request_id, PULSAR__PROTO__SERVER_ERROR__UnknownError, res->reason, &buf);
        } else {
            const schema_version_t *v = res->schema;
            size_t n = json_object_size(v->props), i = 0;
            Pulsar__Proto__KeyValue *kvs = calloc(n + 1, sizeof *kvs);
            Pulsar__Proto__KeyValue **kvp = calloc(n + 1, sizeof *kvp);
            const char *k;
            json_t *val;
            json_object_foreach(v->props, k, val)
            {
                if (!kvs || !kvp || !json_is_string(val))
                    continue;
                pulsar__proto__key_value__init(&kvs[i]);
                kvs[i].key = (char *)k;
                kvs[i].value = (char *)json_string_value(val);
                kvp[i] = &kvs[i];
                i++;
            }
            Pulsar__Proto__Schema ps = PULSAR__PROTO__SCHEMA__INIT;
            ps.name = g->id;
            ps.schema_data.data = v->data;
            ps.schema_data.len = v->len;
            ps.type = (Pulsar__Proto__Schema__Type)v->type;
            ps.n_properties = i;
            ps.properties = kvp;
            uint8_t ver[8];
            version_bytes(v->version, ver);
            rc = cmd_encode_get_schema_response(g->request_id, &ps, ver, sizeof ver, &buf);
            free(kvs);
            free(kvp);
        }
        send_buf(c, rc, buf);
    }
    conn_unref(c);
    free(g);
}

void schema_handle_get_schema(conn_t *c, const Pulsar__Proto__CommandGetSchema *cmd)
{
    get_ctx_t *g = calloc(1, sizeof *g);
    qbuf_t *buf = NULL;
    if (!g || schema_id_of_topic(cmd->topic, g->id, sizeof g->id) < 0) {
        free(g);
        int rc = cmd_encode_get_schema_error(cmd->request_id,
                                             PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                                             "Invalid topic name", &buf);
        send_buf(c, rc, buf);
        return;
    }
    int64_t version = -1;
    if (cmd->has_schema_version && cmd->schema_version.len == 8) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | cmd->schema_version.data[i];
        version = (int64_t)v;
    }
    snprintf(g->topic, sizeof g->topic, "%s", cmd->topic);
    g->conn = c;
    g->request_id = cmd->request_id;
    conn_ref(c);
    int rc = schema_registry_get(c->broker, g->id, version, get_schema_done, g);
    if (rc < 0) {
        conn_unref(c);
        free(g);
        rc = cmd_encode_get_schema_error(
            cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady, q_strerror(rc), &buf);
        send_buf(c, rc, buf);
    }
}

/* -------------------------------------------------- GET_OR_CREATE_SCHEMA -- */

typedef struct goc_ctx {
    conn_t *conn; /* one reference */
    uint64_t request_id;
    json_t *props;
    uint8_t *data;
    schema_data_t schema;
    bool none;
    topic_t *topic; /* busy held */
} goc_ctx_t;

static void goc_reply(conn_t *c, uint64_t request_id, int err, const char *msg, int64_t version)
{
    Pulsar__Proto__CommandGetOrCreateSchemaResponse r =
        PULSAR__PROTO__COMMAND_GET_OR_CREATE_SCHEMA_RESPONSE__INIT;
    r.request_id = request_id;
    uint8_t ver[8];
    if (err != CMD_NO_ERROR) {
        r.has_error_code = true;
        r.error_code = (Pulsar__Proto__ServerError)err;
        r.error_message = (char *)msg;
    } else {
        r.has_schema_version = true;
        r.schema_version.len = version >= 0 ? 8 : 0;
        if (version >= 0) {
            version_bytes(version, ver);
            r.schema_version.data = ver;
        }
    }
    pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__GET_OR_CREATE_SCHEMA_RESPONSE;
    cmd.getorcreateschemaresponse = &r;
    conn_send_command(c, &cmd);
}

static void goc_free(goc_ctx_t *g)
{
    conn_unref(g->conn);
    json_decref(g->props);
    free(g->data);
    free(g);
}

static void goc_put_done(const schema_result_t *res, void *arg)
{
    goc_ctx_t *g = arg;
    g->topic->busy--;
    if (g->conn->state != CONN_CLOSED) {
        if (res->rc < 0)
            goc_reply(g->conn, g->request_id, broker_server_error(schema_rc_for_client(res->rc)),
                      res->reason, -1);
        else
            goc_reply(g->conn, g->request_id, CMD_NO_ERROR, NULL, res->version);
    }
    goc_free(g);
}

static void goc_topic_ready(int rc, topic_t *t, void *arg)
{
    goc_ctx_t *g = arg;
    conn_t *c = g->conn;
    char id[TOPIC_NAME_MAX + 1];
    if (rc == 0 && c->state != CONN_CLOSED && !g->none) {
        rc = schema_id_of_topic(t->name, id, sizeof id);
        if (rc == 0) {
            g->topic = t;
            t->busy++;
            rc = schema_registry_put(c->broker, id, &g->schema, goc_put_done, g);
            if (rc == 0)
                return;
            t->busy--;
        }
    }
    if (c->state != CONN_CLOSED) {
        if (rc == QE_NOT_FOUND)
            goc_reply(c, g->request_id, PULSAR__PROTO__SERVER_ERROR__TopicNotFound,
                      "Topic not found", -1);
        else if (rc < 0)
            goc_reply(c, g->request_id, broker_server_error(schema_rc_for_client(rc)),
                      q_strerror(rc), -1);
        else
            goc_reply(c, g->request_id, CMD_NO_ERROR, NULL, -1); /* no schema: empty version */
    }
    goc_free(g);
}

void schema_handle_get_or_create_schema(conn_t *c,
                                        const Pulsar__Proto__CommandGetOrCreateSchema *cmd)
{
    char full[TOPIC_NAME_MAX];
    if (broker_topic_canonical(cmd->topic, full, sizeof full) < 0) {
        goc_reply(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                  "Invalid topic name", -1);
        return;
    }
    goc_ctx_t *g = calloc(1, sizeof *g);
    if (!g) {
        goc_reply(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady, "out of memory",
                  -1);
        return;
    }
    g->none = wire_schema_none(cmd->schema);
    if (!g->none) {
        schema_data_t d = wire_schema(cmd->schema, &g->props);
        g->data = malloc(d.len ? d.len : 1);
        if (!g->props || !g->data) {
            json_decref(g->props);
            free(g->data);
            free(g);
            goc_reply(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                      "out of memory", -1);
            return;
        }
        if (d.len)
            memcpy(g->data, d.data, d.len);
        g->schema = (schema_data_t){d.type, g->data, d.len, g->props};
    }
    g->conn = c;
    g->request_id = cmd->request_id;
    conn_ref(c);
    int rc = broker_topic_get(c->broker, full, false, goc_topic_ready, g);
    if (rc < 0) {
        goc_reply(c, cmd->request_id, broker_server_error(rc), q_strerror(rc), -1);
        goc_free(g);
    }
}
