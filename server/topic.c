/*
 * topic.c — the broker's topics: the registry (full name -> topic), loading
 * a persistent topic over its managed ledger, and what a topic does for its
 * producers and subscriptions (tailing wake-ups, non-persistent fan-out).
 *
 * Existence: a persistent topic exists once it has been created (auto-created
 * on first use when allowAutoTopicCreation, or through the admin API); the
 * metadata key /topics/<tenant>/<ns>/persistent/<local> records it, so lookups
 * and namespace listings know it without loading its ledger. Its managed
 * ledger is named "<tenant>/<ns>/persistent/<local>", as Pulsar names it.
 *
 * Loading: the first request creates a topic_t in state LOADING and starts
 * (registry check) -> (register if creating) -> ml_open. Requests arriving
 * meanwhile wait on the topic's waiter list; all are answered when it
 * completes. A failed load removes the topic from the registry again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/compaction.h"
#include "server/dedup.h"
#include "server/limits_int.h"
#include "server/ns_policies.h"
#include "server/termination.h"

typedef struct defer_topic {
    topic_ready_cb cb;
    void *arg;
    topic_t *topic;
    int rc;
} defer_topic_t;

static void defer_topic_run(void *p)
{
    defer_topic_t *d = p;
    d->topic->busy--;
    d->cb(d->rc, d->rc < 0 ? NULL : d->topic, d->arg);
    free(d);
}

static int topic_answer_later(topic_t *t, int rc, topic_ready_cb cb, void *arg)
{
    defer_topic_t *d = malloc(sizeof *d);
    if (!d)
        return -ENOMEM;
    *d = (defer_topic_t){cb, arg, t, rc};
    t->busy++;
    int r = broker_defer(t->broker, defer_topic_run, d);
    if (r < 0) {
        t->busy--;
        free(d);
    }
    return r;
}

void topic_destroy(topic_t *t)
{
    assert(t->producers == NULL);
    broker_t *b = t->broker;
    if (t->traffic_gen == b->traffic_gen) { /* off the traffic list */
        if (t->traffic_prev)
            t->traffic_prev->traffic_next = t->traffic_next;
        else
            b->traffic_head = t->traffic_next;
        if (t->traffic_next)
            t->traffic_next->traffic_prev = t->traffic_prev;
    }
    dedup_topic_close(t); /* after shutdown: already closed (no-op) */
    limits_topic_free(t);
    compaction_topic_free(t);
    if (t->subscriptions) {
        qmap_iter_t it = {0};
        void *v;
        while (qmap_next(t->subscriptions, &it, NULL, &v))
            subscription_free(v);
        qmap_free(t->subscriptions);
    }
    free(t->name);
    free(t);
}

static void topic_load_finish(topic_t *t, int rc)
{
    broker_t *b = t->broker;
    t->load_rc = rc;
    t->state = rc < 0 ? TOPIC_FAILED : TOPIC_READY;
    if (rc < 0) {
        qmap_remove(b->topics, t->name);
        if (rc != QE_NOT_FOUND)
            log_error("topic", "%s: load failed: %s", t->name, q_strerror(rc));
    } else {
        log_info("topic", "%s: loaded", t->name);
    }
    topic_waiter_t *w = t->waiters;
    t->waiters = NULL;
    t->busy++;
    while (w) {
        topic_waiter_t *next = w->next;
        w->cb(rc, rc < 0 ? NULL : t, w->arg);
        free(w);
        w = next;
    }
    t->busy--;
    if (rc < 0 && t->busy == 0)
        topic_destroy(t);
}

static void topic_ml_added(managed_ledger_t *ml, ml_pos_t pos, void *arg)
{
    (void)ml;
    (void)pos;
    topic_on_entry_added(arg);
}

/* Durable subscriptions persisted by an earlier run exist again at once. */
static void topic_restore_subscriptions(topic_t *t)
{
    const char *names[256];
    size_t n = ml_cursor_names(t->ml, names, 256);
    if (n > 256) {
        const char **all = malloc(n * sizeof *all);
        if (!all) {
            log_error("topic", "%s: out of memory restoring subscriptions", t->name);
            return;
        }
        n = ml_cursor_names(t->ml, all, n);
        for (size_t i = 0; i < n; i++)
            subscription_restore(t, all[i]);
        free(all);
        return;
    }
    for (size_t i = 0; i < n; i++)
        subscription_restore(t, names[i]);
}

static void topic_ml_opened(int rc, managed_ledger_t *ml, void *arg)
{
    topic_t *t = arg;
    t->busy--;
    if (rc == 0) {
        t->ml = ml;
        ml_set_added_listener(ml, topic_ml_added, t);
        topic_restore_subscriptions(t);
        termination_topic_load(t);
        compaction_topic_load(t); /* compacted view, automatic compaction */
        if (dedup_topic_load(t, topic_load_finish) == 0)
            return; /* dedup.c finishes the load once its state is recovered */
    }
    topic_load_finish(t, rc);
}

void topic_ml_config(const topic_t *t, const ns_policies_t *p, ml_config_t *out)
{
    const broker_config_t *cfg = &t->broker->cfg;
    *out = cfg->ml;
    int64_t minutes = p->has_retention ? p->retention_time_min : cfg->default_retention_time_min;
    int64_t mb = p->has_retention ? p->retention_size_mb : cfg->default_retention_size_mb;
    out->retention_time_s = minutes < 0 ? -1 : minutes * 60;
    out->retention_size_bytes = mb < 0 ? -1 : mb << 20;
}

void topic_policies_changed(topic_t *t, const ns_policies_t *p)
{
    limits_topic_policies_changed(t, p); /* rates and quotas, at once */
    dedup_policies_changed(t, p);        /* deduplicationEnabled */
    if (!t->ml)
        return;
    ml_config_t mc;
    topic_ml_config(t, p, &mc);
    int rc = ml_update_config(t->ml, &mc);
    if (rc < 0)
        log_warn("topic", "%s: cannot apply new policies: %s", t->name, q_strerror(rc));
}

static void topic_open_ledger_with(int rc, const ns_policies_t *p, void *arg);

/* Loads the namespace's policies first: the managed ledger opens with them. */
static void topic_open_ledger(topic_t *t)
{
    topic_name_t tn;
    int rc = topic_name_parse(t->name, &tn);
    assert(rc == 0);
    t->busy++;
    rc = broker_ns_policies_load(t->broker, tn.namespace_name, topic_open_ledger_with, t);
    if (rc < 0) {
        t->busy--;
        topic_load_finish(t, rc);
    }
}

static void topic_open_ledger_with(int rc, const ns_policies_t *p, void *arg)
{
    topic_t *t = arg;
    t->busy--;
    (void)rc;
    topic_name_t tn;
    char ml_name[3 * TOPIC_NAME_MAX + 32];
    rc = topic_name_parse(t->name, &tn);
    assert(rc == 0); /* the registry only holds parsed names */
    snprintf(ml_name, sizeof ml_name, "%s/%s/persistent/%s", tn.tenant, tn.ns, tn.local);
    ml_config_t mc;
    topic_ml_config(t, p, &mc);
    t->busy++;
    /* A broker without storage (the admin service's tests) loads no topic. */
    rc =
        t->broker->mlf ? ml_open(t->broker->mlf, ml_name, &mc, topic_ml_opened, t) : QE_UNAVAILABLE;
    if (rc < 0) {
        t->busy--;
        topic_load_finish(t, rc);
    }
}

static void topic_registered(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    topic_t *t = arg;
    t->busy--;
    if (rc < 0 && rc != QE_EXISTS) {
        topic_load_finish(t, rc);
        return;
    }
    topic_open_ledger(t);
}

int topic_registry_path(const topic_name_t *tn, char *out, size_t len)
{
    int n = snprintf(out, len, "/topics/%s/%s/%s/%s", tn->tenant, tn->ns,
                     tn->domain == TOPIC_PERSISTENT ? "persistent" : "non-persistent", tn->local);
    return n < 0 || (size_t)n >= len ? QE_TOO_LARGE : 0;
}

static void topic_registry_checked(int rc, const void *value, size_t len, const md_stat_t *st,
                                   void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    topic_t *t = arg;
    t->busy--;
    if (rc == 0)
        topic_open_ledger(t);
    else
        topic_load_finish(t, rc); /* QE_NOT_FOUND: not created on first use */
}

static topic_t *topic_new(broker_t *b, const char *name, const topic_name_t *tn)
{
    topic_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->broker = b;
    t->name = strdup(name);
    t->partition = tn->partition;
    t->persistent = tn->domain == TOPIC_PERSISTENT;
    t->subscriptions = qmap_new();
    if (!t->name || !t->subscriptions || qmap_put(b->topics, name, t) < 0) {
        qmap_free(t->subscriptions);
        free(t->name);
        free(t);
        return NULL;
    }
    return t;
}

int broker_topic_canonical(const char *in, char *out, size_t len)
{
    topic_name_t tn;
    if (!in)
        return QE_INVALID;
    int rc = topic_name_parse(in, &tn);
    if (rc < 0)
        return rc;
    size_t n = strlen(tn.full);
    if (n >= len)
        return QE_TOO_LARGE;
    memcpy(out, tn.full, n + 1);
    return 0;
}

topic_t *broker_topic_find(broker_t *b, const char *name)
{
    topic_t *t = qmap_get(b->topics, name);
    return t && t->state == TOPIC_READY ? t : NULL;
}

int broker_topic_get(broker_t *b, const char *name, bool create, topic_ready_cb cb, void *arg)
{
    if (b->shutting_down)
        return QE_SHUTDOWN;
    topic_t *t = qmap_get(b->topics, name);
    if (t && t->state == TOPIC_READY)
        return topic_answer_later(t, 0, cb, arg);
    if (t && t->state == TOPIC_CLOSING)
        return QE_BUSY;
    if (!t) {
        topic_name_t tn;
        int rc = topic_name_parse(name, &tn);
        if (rc < 0)
            return rc;
        t = topic_new(b, name, &tn);
        if (!t)
            return -ENOMEM;
        if (tn.domain != TOPIC_PERSISTENT) {
            t->state = TOPIC_READY;
            return topic_answer_later(t, 0, cb, arg);
        }
        char path[3 * TOPIC_NAME_MAX + 64];
        if (topic_registry_path(&tn, path, sizeof path) < 0) {
            qmap_remove(b->topics, name);
            topic_destroy(t);
            return QE_INVALID;
        }
        t->busy++;
        /* Created on first use: registered in one write (QE_EXISTS when it is
         * already), counted against the namespace's topic quota. */
        if (create && b->cfg.allow_auto_topic_creation)
            rc = broker_topic_register(b, &tn, path, "{}", 2, topic_registered, t);
        else
            rc = md_get(b->md, path, topic_registry_checked, t);
        if (rc < 0) {
            t->busy--;
            qmap_remove(b->topics, name);
            topic_destroy(t);
            return rc;
        }
    }
    topic_waiter_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    w->cb = cb;
    w->arg = arg;
    w->next = t->waiters;
    t->waiters = w;
    return 0;
}

void topic_remove_producer(topic_t *t, producer_t *p)
{
    if (p->topic_prev)
        p->topic_prev->topic_next = p->topic_next;
    else
        t->producers = p->topic_next;
    if (p->topic_next)
        p->topic_next->topic_prev = p->topic_prev;
    p->topic_prev = p->topic_next = NULL;
    p->topic = NULL;
    t->producers_count--;
}

void topic_on_entry_added(topic_t *t)
{
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v))
        subscription_dispatch(v);
}

/* ----------------------------------------------------------- histograms -- */

void topic_record_append(topic_t *t, double latency_ms, uint64_t bytes)
{
    static const double lat_le[TOPIC_LATENCY_BUCKETS - 1] = {0.5, 1, 5, 10, 20, 50, 100, 200, 1000};
    static const uint64_t size_le[TOPIC_SIZE_BUCKETS - 1] = {128,  512,   1024,   2048,
                                                             4096, 16384, 102400, 1048576};
    int i = 0;
    while (i < TOPIC_LATENCY_BUCKETS - 1 && latency_ms > lat_le[i])
        i++;
    t->write_latency_buckets[i]++;
    t->write_latency_count++;
    t->write_latency_sum_ms += latency_ms;
    i = 0;
    while (i < TOPIC_SIZE_BUCKETS - 1 && bytes > size_le[i])
        i++;
    t->entry_size_buckets[i]++;
    t->entry_size_count++;
    t->entry_size_sum += bytes;
}
