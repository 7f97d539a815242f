/*
 * ns_policies.c — see ns_policies.h.
 *
 * Cache entries live in broker->ns_policies (namespace -> ns_cache_t) for the
 * broker's lifetime: a namespace's entry is small, and it must outlive its
 * watch. Loading: md_get of the document; callers that ask meanwhile wait on
 * the entry. A watch on the key re-reads it after every change, and a walk
 * over the loaded topics in slices (sweep.h) hands the new policies to the
 * namespace's: at 100,000 topics, in one go, a change held the loop ~320 ms.
 */
#include "server/ns_policies.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"

typedef struct ns_waiter {
    struct ns_waiter *next;
    ns_policies_cb cb;
    void *arg;
} ns_waiter_t;

typedef struct ns_cache {
    broker_t *broker;
    char *ns;
    ns_policies_t p;
    md_watch_t *watch;
    bool loading;
    bool reload; /* a change arrived while loading */
    bool dead;   /* the broker is gone; freed when the load in flight completes */
    ns_waiter_t *waiters;
    sweep_t notify; /* the walk handing the policies to the loaded topics */
} ns_cache_t;

/* ------------------------------------------------------------- parsing -- */

void ns_policies_defaults(ns_policies_t *p)
{
    memset(p, 0, sizeof *p);
    p->deduplication = -1;
    p->max_producers_per_topic = -1;
    p->max_consumers_per_topic = -1;
    p->max_consumers_per_subscription = -1;
    p->max_unacked_messages_per_consumer = -1;
    p->max_unacked_messages_per_subscription = -1;
    p->max_topics_per_namespace = -1;
    p->subscription_expiration_min = -1;
    p->compaction_threshold = -1;
    p->allow_auto_update_schema = 1;
}

void ns_policies_release(ns_policies_t *p)
{
    json_decref(p->auth);
    p->auth = NULL;
}

static int64_t json_int_or(const json_t *obj, const char *key, int64_t def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

static void parse_quota(const json_t *q, ns_backlog_quota_t *out)
{
    if (!json_is_object(q))
        return;
    out->set = true;
    /* Pulsar writes both "limit" (deprecated) and "limitSize". */
    out->limit_size_bytes = json_int_or(q, "limitSize", json_int_or(q, "limit", -1));
    out->limit_time_s = json_int_or(q, "limitTime", -1);
    const char *policy = json_string_value(json_object_get(q, "policy"));
    out->policy = BACKLOG_POLICY_PRODUCER_REQUEST_HOLD;
    if (policy && strcmp(policy, "producer_exception") == 0)
        out->policy = BACKLOG_POLICY_PRODUCER_EXCEPTION;
    else if (policy && strcmp(policy, "consumer_backlog_eviction") == 0)
        out->policy = BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION;
}

static void parse_rate(const json_t *map, const char *cluster, bool publish, ns_rate_t *out)
{
    const json_t *r = json_object_get(map, cluster);
    if (!json_is_object(r))
        return;
    out->set = true;
    if (publish) {
        out->msgs_per_period = json_int_or(r, "publishThrottlingRateInMsg", -1);
        out->bytes_per_period = json_int_or(r, "publishThrottlingRateInByte", -1);
        out->period_s = 1;
    } else {
        out->msgs_per_period = json_int_or(r, "dispatchThrottlingRateInMsg", -1);
        out->bytes_per_period = json_int_or(r, "dispatchThrottlingRateInByte", -1);
        out->period_s = json_int_or(r, "ratePeriodInSecond", 1);
        if (out->period_s < 1)
            out->period_s = 1;
        out->relative_to_publish_rate = json_is_true(json_object_get(r, "relativeToPublishRate"));
    }
}

int ns_policies_parse(const char *text, size_t len, const char *cluster, ns_policies_t *out)
{
    ns_policies_defaults(out);
    json_error_t err;
    json_t *doc = json_loadb(text, len, 0, &err);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return QE_CORRUPT;
    }
    out->loaded = true;
    json_t *ret = json_object_get(doc, "retention_policies");
    if (json_is_object(ret)) {
        out->has_retention = true;
        out->retention_time_min = json_int_or(ret, "retentionTimeInMinutes", 0);
        out->retention_size_mb = json_int_or(ret, "retentionSizeInMB", 0);
    }
    json_t *ttl = json_object_get(doc, "message_ttl_in_seconds");
    if (json_is_integer(ttl)) {
        out->has_message_ttl = true;
        out->message_ttl_s = (int64_t)json_integer_value(ttl);
    }
    json_t *dedup = json_object_get(doc, "deduplicationEnabled");
    if (json_is_boolean(dedup))
        out->deduplication = json_is_true(dedup) ? 1 : 0;
    json_t *quotas = json_object_get(doc, "backlog_quota_map");
    parse_quota(json_object_get(quotas, "destination_storage"), &out->backlog_storage);
    parse_quota(json_object_get(quotas, "message_age"), &out->backlog_age);
    parse_rate(json_object_get(doc, "publishMaxMessageRate"), cluster, true, &out->publish_rate);
    parse_rate(json_object_get(doc, "topicDispatchRate"), cluster, false, &out->dispatch_rate);
    parse_rate(json_object_get(doc, "subscriptionDispatchRate"), cluster, false,
               &out->subscription_dispatch_rate);
    out->max_producers_per_topic = json_int_or(doc, "max_producers_per_topic", -1);
    out->max_consumers_per_topic = json_int_or(doc, "max_consumers_per_topic", -1);
    out->max_consumers_per_subscription = json_int_or(doc, "max_consumers_per_subscription", -1);
    out->max_unacked_messages_per_consumer =
        json_int_or(doc, "max_unacked_messages_per_consumer", -1);
    out->max_unacked_messages_per_subscription =
        json_int_or(doc, "max_unacked_messages_per_subscription", -1);
    out->max_topics_per_namespace = json_int_or(doc, "max_topics_per_namespace", -1);
    out->compaction_threshold = json_int_or(doc, "compaction_threshold", -1);
    out->subscription_expiration_min = json_int_or(doc, "subscription_expiration_time_minutes", -1);
    const char *sc = json_string_value(json_object_get(doc, "schema_compatibility_strategy"));
    if (sc && strcmp(sc, "UNDEFINED") != 0)
        snprintf(out->schema_compatibility_strategy, sizeof out->schema_compatibility_strategy,
                 "%s", sc);
    out->allow_auto_update_schema =
        json_is_false(json_object_get(doc, "is_allow_auto_update_schema")) ? 0 : 1;
    out->schema_validation_enforced =
        json_is_true(json_object_get(doc, "schema_validation_enforced")) ? 1 : 0;
    const char *am = json_string_value(json_object_get(doc, "subscription_auth_mode"));
    out->subscription_auth_prefix = am && strcmp(am, "Prefix") == 0;
    ns_policies_parse_auth(doc, out); /* authz.c */
    json_decref(doc);
    return 0;
}

/* ------------------------------------------------------------- loading -- */

static void notify_topic(void *ctx, void *value)
{
    ns_cache_t *e = ctx;
    topic_t *t = value;
    const char *rest = strstr(t->name, "://");
    if (!rest || t->state != TOPIC_READY)
        return;
    rest += 3;
    size_t nslen = strlen(e->ns);
    if (strncmp(rest, e->ns, nslen) == 0 && rest[nslen] == '/')
        topic_policies_changed(t, &e->p);
}

static void ns_loaded(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    ns_cache_t *e = arg;
    if (e->dead) {
        free(e->ns);
        free(e);
        return;
    }
    broker_t *b = e->broker;
    ns_policies_t p;
    if (rc == 0 && ns_policies_parse(value, len, b->cfg.cluster_name, &p) == 0) {
        ns_policies_release(&e->p);
        e->p = p;
    } else {
        ns_policies_release(&e->p);
        if (rc == 0)
            log_warn("policies", "%s: unreadable Policies document; using defaults", e->ns);
        else if (rc != QE_NOT_FOUND)
            log_warn("policies", "%s: cannot read policies: %s", e->ns, q_strerror(rc));
        ns_policies_defaults(&e->p);
    }
    e->loading = false;
    ns_waiter_t *w = e->waiters;
    e->waiters = NULL;
    while (w) {
        ns_waiter_t *next = w->next;
        w->cb(0, &e->p, w->arg);
        free(w);
        w = next;
    }
    sweep_now(&e->notify); /* each topic gets the policies current at its turn */
    if (e->reload) {
        e->reload = false;
        e->loading = true;
        char path[600];
        snprintf(path, sizeof path, "/admin/policies/%s", e->ns);
        if (md_get(b->md, path, ns_loaded, e) < 0)
            e->loading = false;
    }
}

static int ns_start_load(ns_cache_t *e)
{
    char path[600];
    snprintf(path, sizeof path, "/admin/policies/%s", e->ns);
    e->loading = true;
    int rc = md_get(e->broker->md, path, ns_loaded, e);
    if (rc < 0)
        e->loading = false;
    return rc;
}

static void ns_watch_fired(int kind, const char *path, void *arg)
{
    (void)kind;
    (void)path;
    ns_cache_t *e = arg;
    if (e->loading)
        e->reload = true;
    else
        ns_start_load(e);
}

static ns_cache_t *ns_entry(broker_t *b, const char *ns)
{
    ns_cache_t *e = qmap_get(b->ns_policies, ns);
    if (e)
        return e;
    if (strlen(ns) > 512)
        return NULL;
    e = calloc(1, sizeof *e);
    if (!e || !(e->ns = strdup(ns)) || qmap_put(b->ns_policies, ns, e) < 0) {
        if (e)
            free(e->ns);
        free(e);
        return NULL;
    }
    e->broker = b;
    ns_policies_defaults(&e->p);
    sweep_init(&e->notify, b->loop, &b->topics, 0, notify_topic, e);
    char path[600];
    snprintf(path, sizeof path, "/admin/policies/%s", ns);
    e->watch = md_watch(b->md, path, MD_WATCH_DATA, ns_watch_fired, e);
    ns_start_load(e);
    return e;
}

const ns_policies_t *broker_ns_policies(broker_t *b, const char *ns)
{
    static ns_policies_t defaults;
    ns_cache_t *e = ns_entry(b, ns);
    if (!e) {
        ns_policies_defaults(&defaults);
        return &defaults;
    }
    return &e->p;
}

typedef struct ns_defer {
    ns_policies_cb cb;
    void *arg;
    ns_cache_t *e;
} ns_defer_t;

static void ns_defer_run(void *p)
{
    ns_defer_t *d = p;
    d->cb(0, &d->e->p, d->arg);
    free(d);
}

int broker_ns_policies_load(broker_t *b, const char *ns, ns_policies_cb cb, void *arg)
{
    ns_cache_t *e = ns_entry(b, ns);
    if (!e)
        return -ENOMEM;
    if (!e->loading) {
        ns_defer_t *d = malloc(sizeof *d);
        if (!d)
            return -ENOMEM;
        *d = (ns_defer_t){cb, arg, e};
        int rc = broker_defer(b, ns_defer_run, d);
        if (rc < 0)
            free(d);
        return rc;
    }
    ns_waiter_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (ns_waiter_t){e->waiters, cb, arg};
    e->waiters = w;
    return 0;
}

void broker_ns_policies_free(broker_t *b)
{
    if (!b->ns_policies)
        return;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(b->ns_policies, &it, NULL, &v)) {
        ns_cache_t *e = v;
        sweep_stop(&e->notify);
        if (e->watch)
            md_unwatch(e->watch);
        while (e->waiters) {
            ns_waiter_t *next = e->waiters->next;
            free(e->waiters);
            e->waiters = next;
        }
        ns_policies_release(&e->p);
        if (e->loading) {
            e->dead = true; /* its md_get completes later */
            continue;
        }
        free(e->ns);
        free(e);
    }
    qmap_free(b->ns_policies);
    b->ns_policies = NULL;
}
