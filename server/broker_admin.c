/*
 * broker_admin.c — see broker_admin.h. The broker's side of the REST admin
 * API: it reads broker_int.h state to build views, and runs the topic
 * operations that need the broker's registries.
 *
 * Invariants kept here:
 *   1. Views are built on the stack from live state and handed to the
 *      visitor; nothing of the broker escapes the call.
 *   2. An operation that waits on storage with a topic in hand holds
 *      topic->busy for the wait, so the topic is not freed beneath it.
 *   3. Unload only touches an idle topic (ready, busy == 0, no producers, no
 *      consumers, no read or cursor open in flight); while it runs the topic
 *      is CLOSING, so broker_topic_get answers QE_BUSY and clients retry.
 * Callbacks never run inline: synchronous answers go through broker_defer.
 */
#include "server/broker_admin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/codec/frame.h"
#include "server/dedup.h"
#include "server/delayed.h"
#include "server/maintenance.h"
#include "server/limits_int.h"
#include "server/subscription_meta.h"

#define PEEK_MAX 10000

static const char *sub_type_name(int type)
{
    switch (type) {
    case PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared:
        return "Shared";
    case PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover:
        return "Failover";
    case PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared:
        return "Key_Shared";
    default:
        return "Exclusive";
    }
}

/* A deferred rc callback (never inline). */
typedef struct defer_rc {
    broker_done_rc_cb cb;
    void *arg;
    int rc;
} defer_rc_t;

static void defer_rc_run(void *p)
{
    defer_rc_t *d = p;
    d->cb(d->rc, d->arg);
    free(d);
}

static int answer_later(broker_t *b, int rc, broker_done_rc_cb cb, void *arg)
{
    defer_rc_t *d = malloc(sizeof *d);
    if (!d)
        return -ENOMEM;
    *d = (defer_rc_t){cb, arg, rc};
    int r = broker_defer(b, defer_rc_run, d);
    if (r < 0)
        free(d);
    return r;
}

static topic_t *ready_topic(broker_t *b, const char *name)
{
    return name ? broker_topic_find(b, name) : NULL;
}

static subscription_t *find_sub(broker_t *b, const char *topic, const char *sub, topic_t **tp)
{
    topic_t *t = ready_topic(b, topic);
    if (tp)
        *tp = t;
    return t && sub ? qmap_get(t->subscriptions, sub) : NULL;
}

/* ------------------------------------------------------------------ views -- */

/* Measured rates of a producer, consumer or subscription: traffic since the
 * previous sample (at least one second back; the first sample counts from
 * start_ms, when it connected or was loaded). */
static void rate_sample(traffic_rate_t *r, uint64_t msgs, uint64_t bytes, int64_t start_ms,
                        int64_t now_ms)
{
    int64_t since = r->sample_ms ? r->sample_ms : start_ms;
    if (now_ms - since < 1000 && r->sample_ms)
        return; /* keep the last window's rate */
    double secs = (double)(now_ms - since) / 1000.0;
    if (secs <= 0)
        return;
    r->msgs = (double)(msgs - r->sample_msgs) / secs;
    r->bytes = (double)(bytes - r->sample_bytes) / secs;
    r->sample_ms = now_ms;
    r->sample_msgs = msgs;
    r->sample_bytes = bytes;
}

static void sub_view(subscription_t *s, broker_admin_subscription_view_t *v)
{
    memset(v, 0, sizeof *v);
    v->name = s->name;
    v->type = sub_type_name(s->type);
    v->durable = s->durable;
    v->msg_out = s->msg_out;
    v->bytes_out = s->bytes_out;
    v->consumers = s->consumers_count;
    for (size_t i = 0; i < s->consumers_count; i++)
        v->unacked_messages += s->consumers[i]->unacked_messages;
    if (s->cursor) {
        v->has_cursor = true;
        v->backlog_entries = ml_cursor_backlog(s->cursor);
        v->mark_delete = ml_cursor_mark_delete_pos(s->cursor);
        v->read_pos = ml_cursor_read_pos(s->cursor);
    }
    v->meta_json = subscription_meta_json(s);
    v->delayed_messages = delayed_count(s);
    v->msg_expired = s->msg_expired;
    int64_t now = clock_wall_ms();
    rate_sample(&s->rate_redeliver, s->msg_redelivered, 0, s->loaded_ms, now);
    rate_sample(&s->rate_expired, s->msg_expired, 0, s->loaded_ms, now);
    v->rate_redeliver = s->rate_redeliver.msgs;
    v->rate_expired = s->rate_expired.msgs;
    v->blocked_on_unacked = limits_subscription_blocked(s);
}

static void topic_view(topic_t *t, broker_admin_topic_view_t *v)
{
    memset(v, 0, sizeof *v);
    v->name = t->name;
    v->dedup_enabled = dedup_is_enabled(t);
    v->terminated = t->terminated;
    v->persistent = t->persistent;
    v->partition = t->partition;
    v->msg_in = t->msg_in;
    v->bytes_in = t->bytes_in;
    v->write_latency_buckets = t->write_latency_buckets;
    v->write_latency_count = t->write_latency_count;
    v->write_latency_sum_ms = t->write_latency_sum_ms;
    v->entry_size_buckets = t->entry_size_buckets;
    v->entry_size_count = t->entry_size_count;
    v->entry_size_sum = t->entry_size_sum;
    v->msg_out = t->msg_out;
    v->bytes_out = t->bytes_out;
    v->last_publish_ms = t->last_publish_ms;
    v->producers = t->producers_count;
    v->subscriptions = qmap_size(t->subscriptions);
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
        subscription_t *s = sv;
        v->consumers += s->consumers_count;
        if (s->cursor) {
            uint64_t bl = ml_cursor_backlog(s->cursor);
            if (bl > v->backlog_entries)
                v->backlog_entries = bl;
        }
    }
    if (t->ml) {
        v->has_ledger = true;
        ml_get_stats(t->ml, &v->ml);
        v->last_confirmed = ml_last_confirmed(t->ml);
    }
    backlog_quota_view(t, v); /* backlog_quota.c */
}

void broker_admin_counts_no_topics(broker_t *b, broker_admin_counts_t *out)
{
    memset(out, 0, sizeof *out);
    out->connections = b->conns_count;
    out->buffer_paused = b->buffer_paused_n;
    out->buffer_pauses = b->buffer_pauses;
    out->pending_publish_bytes = b->pending_publish_bytes;
    out->write_queue_bytes = b->wq_bytes_total;
    out->socket_writes = b->socket_writes;
    if (b->mlf)
        ml_factory_cache_info(b->mlf, &out->cache);
    uint64_t now = clock_mono_us();
    latq_read(b->publish_latency, now, &out->publish_latency);
    latq_read(b->loop_latency, now, &out->loop_latency);
}

size_t broker_admin_topics_count(broker_t *b)
{
    return qmap_size(b->topics);
}

void broker_admin_counts(broker_t *b, broker_admin_counts_t *out)
{
    broker_admin_counts_no_topics(b, out);
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(b->topics, &it, NULL, &v)) {
        topic_t *t = v;
        if (t->state != TOPIC_READY)
            continue;
        out->topics++;
        out->producers += t->producers_count;
        out->subscriptions += qmap_size(t->subscriptions);
        qmap_iter_t si = {0};
        void *sv;
        while (qmap_next(t->subscriptions, &si, NULL, &sv))
            out->consumers += ((subscription_t *)sv)->consumers_count;
    }
}

void broker_admin_topics(broker_t *b, broker_admin_topic_fn fn, void *arg)
{
    broker_admin_walk_t w = {0};
    broker_admin_topics_step(b, &w, UINT32_MAX, fn, arg); /* no budget: all at once */
}

broker_walk_rc_t broker_admin_topics_step(broker_t *b, broker_admin_walk_t *w, uint32_t budget_us,
                                          broker_admin_topic_fn fn, void *arg)
{
    if (!w->started) {
        *w = (broker_admin_walk_t){.rehashes = qmap_rehashes(b->topics), .started = true};
    } else if (qmap_rehashes(b->topics) != w->rehashes) {
        *w = (broker_admin_walk_t){0};
        return BROKER_WALK_AGAIN;
    }
    uint64_t t0 = clock_mono_us();
    qmap_iter_t it = {w->pos};
    void *v;
    bool more;
    while ((more = qmap_next(b->topics, &it, NULL, &v))) {
        topic_t *t = v;
        if (t->state != TOPIC_READY)
            continue;
        broker_admin_topic_view_t view;
        topic_view(t, &view);
        fn(&view, arg);
        if (clock_mono_us() - t0 >= budget_us)
            break;
    }
    w->pos = it.pos;
    return more ? BROKER_WALK_MORE : BROKER_WALK_DONE;
}

void broker_admin_traffic_drain(broker_t *b, broker_admin_traffic_fn fn, void *arg)
{
    uint64_t gen = b->traffic_gen;
    topic_t *t = b->traffic_head;
    b->traffic_head = NULL;
    b->traffic_gen++; /* every topic and subscription is off the list now */
    for (; t; t = t->traffic_next) {
        broker_admin_traffic_t v = {.topic = t->name,
                                    .now = {t->msg_in, t->bytes_in, t->msg_out, t->bytes_out}};
        memcpy(v.before, t->traffic_base, sizeof v.before);
        fn(&v, arg);
        qmap_iter_t it = {0};
        void *sv;
        while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
            subscription_t *s = sv;
            v = (broker_admin_traffic_t){
                .topic = t->name, .sub = s->name, .now = {0, 0, s->msg_out, s->bytes_out}};
            bool moved = s->traffic_gen == gen;
            v.before[2] = moved ? s->traffic_base[0] : s->msg_out;
            v.before[3] = moved ? s->traffic_base[1] : s->bytes_out;
            fn(&v, arg);
        }
    }
}

int broker_admin_topic(broker_t *b, const char *topic, broker_admin_topic_fn fn, void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    if (fn) {
        broker_admin_topic_view_t view;
        topic_view(t, &view);
        fn(&view, arg);
    }
    return 0;
}

int broker_admin_producers(broker_t *b, const char *topic, broker_admin_producer_fn fn, void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    int64_t now = clock_wall_ms();
    for (producer_t *p = t->producers; p; p = p->topic_next) {
        rate_sample(&p->rate_in, p->msg_in, p->bytes_in,
                    p->conn ? p->conn->connected_since_ms : now, now);
        broker_admin_producer_view_t v = {
            .name = p->name ? p->name : "",
            .producer_id = p->producer_id,
            .access_mode = p->access_mode,
            .address = p->conn ? p->conn->peer : "",
            .client_version = p->conn ? p->conn->client_version : "",
            .connected_since_ms = p->conn ? p->conn->connected_since_ms : 0,
            .msg_in = p->msg_in,
            .bytes_in = p->bytes_in,
            .rate_in = p->rate_in.msgs,
            .throughput_in = p->rate_in.bytes,
        };
        fn(&v, arg);
    }
    return 0;
}

int broker_admin_subscriptions(broker_t *b, const char *topic, broker_admin_subscription_fn fn,
                               void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
        broker_admin_subscription_view_t v;
        sub_view(sv, &v);
        fn(&v, arg);
    }
    return 0;
}

static void consumers_of(subscription_t *s, broker_admin_consumer_fn fn, void *arg)
{
    int64_t now = clock_wall_ms();
    for (size_t i = 0; i < s->consumers_count; i++) {
        consumer_t *c = s->consumers[i];
        rate_sample(&c->rate_out, c->msg_out, c->bytes_out, c->connected_since_ms, now);
        rate_sample(&c->rate_redeliver, c->msg_redelivered, 0, c->connected_since_ms, now);
        broker_admin_consumer_view_t v = {
            .name = c->name ? c->name : "",
            .consumer_id = c->consumer_id,
            .available_permits = c->permits,
            .unacked_messages = c->unacked_messages,
            .msg_out = c->msg_out,
            .bytes_out = c->bytes_out,
            .rate_out = c->rate_out.msgs,
            .throughput_out = c->rate_out.bytes,
            .rate_redeliver = c->rate_redeliver.msgs,
            .avg_msgs_per_entry = (int64_t)(c->avg_msgs_per_entry + 0.5),
            .blocked_on_unacked = c->blocked_on_unacked,
            .address = c->conn ? c->conn->peer : "",
            .client_version = c->conn ? c->conn->client_version : "",
            .connected_since_ms = c->connected_since_ms,
        };
        fn(&v, arg);
    }
}

int broker_admin_consumers(broker_t *b, const char *topic, const char *sub,
                           broker_admin_consumer_fn fn, void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    if (sub) {
        subscription_t *s = qmap_get(t->subscriptions, sub);
        if (!s)
            return QE_NOT_FOUND;
        consumers_of(s, fn, arg);
        return 0;
    }
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv))
        consumers_of(sv, fn, arg);
    return 0;
}

int broker_admin_ledgers(broker_t *b, const char *topic, ml_ledger_info_t *out, size_t max,
                         size_t *count)
{
    topic_t *t = ready_topic(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    *count = ml_get_ledgers(t->ml, out, max);
    return 0;
}

int broker_admin_cursor_ranges(broker_t *b, const char *topic, const char *sub, char *buf,
                               size_t len)
{
    subscription_t *s = find_sub(b, topic, sub, NULL);
    if (!s || !s->cursor)
        return QE_NOT_FOUND;
    ml_cursor_ack_ranges(s->cursor, buf, len);
    return 0;
}

/* ------------------------------------------------------------------- load -- */

typedef struct load_ctx {
    broker_done_rc_cb cb;
    void *arg;
} load_ctx_t;

static void load_done(int rc, topic_t *t, void *arg)
{
    (void)t;
    load_ctx_t *lc = arg;
    lc->cb(rc, lc->arg);
    free(lc);
}

int broker_admin_topic_load(broker_t *b, const char *topic, bool create, broker_done_rc_cb cb,
                            void *arg)
{
    load_ctx_t *lc = malloc(sizeof *lc);
    if (!lc)
        return -ENOMEM;
    *lc = (load_ctx_t){cb, arg};
    int rc = broker_topic_get(b, topic, create, load_done, lc);
    if (rc < 0)
        free(lc);
    return rc;
}

/* ----------------------------------------------------------------- create -- */

typedef struct op_ctx {
    broker_t *broker;
    topic_name_t tn;
    int n, old_n, pending, rc;
    bool force;
    ml_pos_t pos;
    char *sub;
    topic_t *topic;
    broker_done_rc_cb cb;
    void *arg;
} op_ctx_t;

static op_ctx_t *op_new(broker_t *b, const topic_name_t *tn, broker_done_rc_cb cb, void *arg)
{
    op_ctx_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->broker = b;
    if (tn)
        op->tn = *tn;
    op->cb = cb;
    op->arg = arg;
    return op;
}

static void op_finish(op_ctx_t *op, int rc)
{
    if (op->topic)
        op->topic->busy--;
    op->cb(rc, op->arg);
    free(op->sub);
    free(op);
}

static int partitioned_path(const topic_name_t *tn, char *out, size_t len)
{
    int n = snprintf(out, len, "/admin/partitioned-topics/%s/%s/%s/%s", tn->tenant, tn->ns,
                     tn->domain == TOPIC_PERSISTENT ? "persistent" : "non-persistent", tn->local);
    return n < 0 || (size_t)n >= len ? QE_TOO_LARGE : 0;
}

static void create_registered(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    op_finish(arg, rc);
}

static void create_checked(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    op_ctx_t *op = arg;
    if (rc != QE_NOT_FOUND) {
        op_finish(op, rc == 0 ? QE_EXISTS : rc);
        return;
    }
    char path[3 * TOPIC_NAME_MAX + 64];
    topic_registry_path(&op->tn, path, sizeof path);
    /* Counts against the namespace's topic quota (limits.c). */
    rc = broker_topic_quota_put(op->broker, &op->tn, 1, path, "{}", 2, create_registered, op);
    if (rc < 0)
        op_finish(op, rc);
}

int broker_admin_topic_create(broker_t *b, const topic_name_t *tn, broker_done_rc_cb cb, void *arg)
{
    char path[3 * TOPIC_NAME_MAX + 64];
    if (tn->domain != TOPIC_PERSISTENT)
        return answer_later(b, 0, cb, arg); /* non-persistent: exists when used */
    int rc = partitioned_path(tn, path, sizeof path);
    if (rc < 0)
        return rc;
    op_ctx_t *op = op_new(b, tn, cb, arg);
    if (!op)
        return -ENOMEM;
    rc = md_get(b->md, path, create_checked, op);
    if (rc < 0)
        free(op);
    return rc;
}

/* ----------------------------------------------------------------- unload -- */

static bool topic_idle(const topic_t *t)
{
    if (t->state != TOPIC_READY || t->busy > 0 || t->producers_count > 0 || t->waiters)
        return false;
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
        const subscription_t *s = sv;
        if (s->consumers_count > 0 || s->reading || s->opening || s->waiting)
            return false;
    }
    return true;
}

static bool topic_has_clients(const topic_t *t)
{
    if (t->producers_count > 0)
        return true;
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv))
        if (((const subscription_t *)sv)->consumers_count > 0)
            return true;
    return false;
}

typedef struct unload_ctx {
    broker_t *broker;
    topic_t *topic;
    int pending;
    broker_done_rc_cb cb;
    void *arg;
} unload_ctx_t;

static void unload_finish(unload_ctx_t *uc)
{
    topic_t *t = uc->topic;
    qmap_remove(uc->broker->topics, t->name);
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv))
        ((subscription_t *)sv)->cursor = NULL; /* closed above */
    log_info("topic", "%s: unloaded", t->name);
    t->ml = NULL; /* closed above */
    topic_destroy(t);
    uc->cb(0, uc->arg);
    free(uc);
}

static void unload_ml_closed(int rc, void *arg)
{
    (void)rc;
    unload_finish(arg);
}

static void unload_step(int rc, void *arg)
{
    (void)rc;
    unload_ctx_t *uc = arg;
    if (--uc->pending > 0)
        return;
    topic_t *t = uc->topic;
    if (t->ml) {
        managed_ledger_t *ml = t->ml;
        t->ml = NULL;
        if (ml_close(ml, unload_ml_closed, uc) == 0)
            return;
    }
    unload_finish(uc);
}

static void unload_first_step(void *arg)
{
    unload_step(0, arg);
}

/* Unloads an idle topic (checked by the caller). */
static int topic_unload(broker_t *b, topic_t *t, broker_done_rc_cb cb, void *arg)
{
    unload_ctx_t *uc = calloc(1, sizeof *uc);
    if (!uc)
        return -ENOMEM;
    *uc = (unload_ctx_t){b, t, 1, cb, arg};
    if (broker_defer(b, unload_first_step, uc) < 0) {
        free(uc);
        return -ENOMEM;
    }
    t->state = TOPIC_CLOSING;
    dedup_topic_close(t); /* last snapshot */
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
        subscription_t *s = sv;
        if (!s->cursor)
            continue;
        uc->pending++;
        if (ml_cursor_close(s->cursor, unload_step, uc) < 0)
            uc->pending--;
        s->cursor = NULL;
    }
    return 0;
}

int broker_admin_topic_unload(broker_t *b, const char *topic, broker_done_rc_cb cb, void *arg)
{
    topic_t *t = qmap_get(b->topics, topic);
    if (!t)
        return answer_later(b, 0, cb, arg);
    if (!topic_idle(t))
        return QE_BUSY;
    return topic_unload(b, t, cb, arg);
}

/* ----------------------------------------------------------------- delete -- */

static void delete_ml_done(int rc, void *arg)
{
    op_ctx_t *op = arg;
    if (rc == QE_NOT_FOUND)
        rc = 0;
    if (rc < 0)
        log_warn("admin", "%s: deleting its data: %s", op->tn.full, q_strerror(rc));
    op_finish(op, 0);
}

static void delete_registry_done(int rc, void *arg)
{
    op_ctx_t *op = arg;
    if (rc < 0) {
        op_finish(op, rc);
        return;
    }
    char ml_name[3 * TOPIC_NAME_MAX + 32];
    snprintf(ml_name, sizeof ml_name, "%s/%s/persistent/%s", op->tn.tenant, op->tn.ns,
             op->tn.local);
    rc = ml_delete(op->broker->mlf, ml_name, delete_ml_done, op);
    if (rc < 0)
        delete_ml_done(rc, op);
}

static void delete_unloaded(int rc, void *arg)
{
    op_ctx_t *op = arg;
    if (rc < 0) {
        op_finish(op, rc);
        return;
    }
    if (op->tn.domain != TOPIC_PERSISTENT) {
        op_finish(op, op->rc); /* unloaded is deleted */
        return;
    }
    char path[3 * TOPIC_NAME_MAX + 64];
    topic_registry_path(&op->tn, path, sizeof path);
    rc = md_delete(op->broker->md, path, MD_VERSION_ANY, delete_registry_done, op);
    if (rc < 0)
        op_finish(op, rc);
}

int broker_admin_topic_delete(broker_t *b, const topic_name_t *tn, bool force, broker_done_rc_cb cb,
                              void *arg)
{
    (void)force; /* closing clients' producers/consumers needs the broker (see the report) */
    topic_t *t = qmap_get(b->topics, tn->full);
    if (t && topic_has_clients(t))
        return QE_BUSY;
    if (t && !topic_idle(t))
        return QE_BUSY;
    op_ctx_t *op = op_new(b, tn, cb, arg);
    if (!op)
        return -ENOMEM;
    /* A non-persistent topic exists only while loaded. */
    op->rc = tn->domain != TOPIC_PERSISTENT && !t ? QE_NOT_FOUND : 0;
    int rc = t ? topic_unload(b, t, delete_unloaded, op) : answer_later(b, 0, delete_unloaded, op);
    if (rc < 0)
        free(op);
    return rc;
}

/* -------------------------------------------------------- partitioned ops -- */

static void grow_registered(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    op_ctx_t *op = arg;
    if (rc < 0 && rc != QE_EXISTS && op->rc == 0)
        op->rc = rc;
    if (--op->pending == 0)
        op_finish(op, op->rc);
}

static void grow_written(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    op_ctx_t *op = arg;
    if (rc < 0) {
        op_finish(op, rc == QE_BAD_VERSION ? QE_BUSY : rc);
        return;
    }
    op->pending = 1;
    for (int i = op->old_n; i < op->n; i++) {
        char name[TOPIC_NAME_MAX + 32], path[3 * TOPIC_NAME_MAX + 64];
        topic_name_t part;
        if (topic_name_partition(&op->tn, i, name, sizeof name) < 0 ||
            topic_name_parse(name, &part) < 0 ||
            topic_registry_path(&part, path, sizeof path) < 0) {
            op->rc = QE_INVALID;
            break;
        }
        if (part.domain != TOPIC_PERSISTENT)
            continue;
        op->pending++;
        if (md_put(op->broker->md, path, "{}", 2, MD_VERSION_NEW, NULL, grow_registered, op) < 0) {
            op->pending--;
            op->rc = QE_BUSY;
            break;
        }
    }
    grow_registered(0, NULL, op);
}

static int parse_partitions(const void *value, size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(value, len, 0, &err);
    json_t *p = root ? json_object_get(root, "partitions") : NULL;
    int n = json_is_integer(p) ? (int)json_integer_value(p) : QE_CORRUPT;
    json_decref(root);
    return n;
}

static void grow_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    op_ctx_t *op = arg;
    if (rc < 0) {
        op_finish(op, rc);
        return;
    }
    op->old_n = parse_partitions(value, len);
    if (op->old_n < 0) {
        op_finish(op, op->old_n);
        return;
    }
    if (op->n <= op->old_n) {
        op_finish(op, QE_INVALID);
        return;
    }
    char path[3 * TOPIC_NAME_MAX + 64], body[64];
    partitioned_path(&op->tn, path, sizeof path);
    int n = snprintf(body, sizeof body, "{\"partitions\":%d}", op->n);
    rc = md_put(op->broker->md, path, body, (size_t)n, st->version, NULL, grow_written, op);
    if (rc < 0)
        op_finish(op, rc);
}

int broker_admin_partitions_update(broker_t *b, const topic_name_t *tn, int n, broker_done_rc_cb cb,
                                   void *arg)
{
    if (n < 1 || n > BROKER_PARTITIONS_MAX || tn->partition >= 0)
        return QE_INVALID;
    char path[3 * TOPIC_NAME_MAX + 64];
    int rc = partitioned_path(tn, path, sizeof path);
    if (rc < 0)
        return rc;
    op_ctx_t *op = op_new(b, tn, cb, arg);
    if (!op)
        return -ENOMEM;
    op->n = n;
    rc = md_get(b->md, path, grow_got, op);
    if (rc < 0)
        free(op);
    return rc;
}

static void pdel_metadata_deleted(int rc, void *arg)
{
    op_finish(arg, rc);
}

static void pdel_partition_deleted(int rc, void *arg)
{
    op_ctx_t *op = arg;
    if (rc < 0 && rc != QE_NOT_FOUND && op->rc == 0)
        op->rc = rc;
    if (--op->pending > 0)
        return;
    if (op->rc < 0) {
        op_finish(op, op->rc);
        return;
    }
    char path[3 * TOPIC_NAME_MAX + 64];
    partitioned_path(&op->tn, path, sizeof path);
    rc = md_delete(op->broker->md, path, MD_VERSION_ANY, pdel_metadata_deleted, op);
    if (rc < 0)
        op_finish(op, rc);
}

static void pdel_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    op_ctx_t *op = arg;
    broker_t *b = op->broker;
    if (rc < 0) {
        op_finish(op, rc);
        return;
    }
    int n = parse_partitions(value, len);
    if (n < 0) {
        op_finish(op, n);
        return;
    }
    /* Refuse before touching anything when a partition has clients. */
    topic_name_t *parts = calloc((size_t)(n > 0 ? n : 1), sizeof *parts);
    if (!parts) {
        op_finish(op, -ENOMEM);
        return;
    }
    for (int i = 0; i < n; i++) {
        char name[TOPIC_NAME_MAX + 32];
        if (topic_name_partition(&op->tn, i, name, sizeof name) < 0 ||
            topic_name_parse(name, &parts[i]) < 0) {
            free(parts);
            op_finish(op, QE_INVALID);
            return;
        }
        topic_t *t = qmap_get(b->topics, parts[i].full);
        if (t && (topic_has_clients(t) || !topic_idle(t))) {
            free(parts);
            op_finish(op, QE_BUSY);
            return;
        }
    }
    op->pending = 1;
    for (int i = 0; i < n; i++) {
        op->pending++;
        if (broker_admin_topic_delete(b, &parts[i], op->force, pdel_partition_deleted, op) < 0) {
            op->pending--;
            op->rc = QE_BUSY;
        }
    }
    free(parts);
    pdel_partition_deleted(0, op);
}

int broker_admin_partitioned_delete(broker_t *b, const topic_name_t *tn, bool force,
                                    broker_done_rc_cb cb, void *arg)
{
    char path[3 * TOPIC_NAME_MAX + 64];
    int rc = partitioned_path(tn, path, sizeof path);
    if (rc < 0)
        return rc;
    op_ctx_t *op = op_new(b, tn, cb, arg);
    if (!op)
        return -ENOMEM;
    op->force = force;
    rc = md_get(b->md, path, pdel_got, op);
    if (rc < 0)
        free(op);
    return rc;
}

typedef struct plist_ctx {
    char prefix[2 * TOPIC_NAME_MAX + 32];
    broker_topics_cb cb;
    void *arg;
} plist_ctx_t;

static void plist_listed(int rc, const char *const *children, size_t n, void *arg)
{
    plist_ctx_t *pc = arg;
    char **names = NULL;
    int count = rc == 0 ? broker_prefixed_names(pc->prefix, children, n, &names) : 0;
    if (count < 0)
        rc = count;
    pc->cb(rc == QE_NOT_FOUND ? 0 : rc, (const char *const *)names, rc < 0 ? 0 : (size_t)count,
           pc->arg);
    free(names);
    free(pc);
}

int broker_admin_partitioned_list(broker_t *b, const char *ns, topic_domain_t domain,
                                  broker_topics_cb cb, void *arg)
{
    const char *d = domain == TOPIC_PERSISTENT ? "persistent" : "non-persistent";
    plist_ctx_t *pc = calloc(1, sizeof *pc);
    if (!pc)
        return -ENOMEM;
    snprintf(pc->prefix, sizeof pc->prefix, "%s://%s/", d, ns);
    pc->cb = cb;
    pc->arg = arg;
    char path[2 * TOPIC_NAME_MAX + 64];
    snprintf(path, sizeof path, "/admin/partitioned-topics/%s/%s", ns, d);
    int rc = md_list(b->md, path, plist_listed, pc);
    if (rc < 0)
        free(pc);
    return rc;
}

/* ----------------------------------------------------------- subscriptions -- */

typedef struct msg_ctx {
    topic_t *topic;
    broker_admin_message_cb cb;
    void *arg;
} msg_ctx_t;

/* Hands one stored entry to cb as a broker_admin_message_t (payload, publish
 * time, properties, producer); the view is valid during the call only.
 * Returns 0, or the metadata parse error (cb not called). */
int broker_admin_deliver_entry(const ml_entry_t *e, broker_admin_message_cb cb, void *arg)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    int rc = frame_parse_metadata(e->data->data, e->data->len, &md, &off);
    if (rc < 0)
        return rc;
    size_t np = md->n_properties;
    const char **keys = calloc(np + 1, sizeof *keys), **values = calloc(np + 1, sizeof *values);
    for (size_t i = 0; keys && values && i < np; i++) {
        keys[i] = md->properties[i]->key;
        values[i] = md->properties[i]->value;
    }
    broker_admin_message_t m = {
        .pos = e->pos,
        .payload = e->data->data + off,
        .payload_len = e->data->len - off,
        .publish_time_ms = (int64_t)md->publish_time,
        .num_messages = md->has_num_messages_in_batch ? md->num_messages_in_batch : 1,
        .property_keys = keys,
        .property_values = values,
        .properties = keys && values ? np : 0,
        .producer_name = md->producer_name ? md->producer_name : "",
        .sequence_id = md->sequence_id,
    };
    cb(0, &m, arg);
    free(keys);
    free(values);
    frame_metadata_free(md);
    return 0;
}

static void peek_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    msg_ctx_t *mc = arg;
    mc->topic->busy--;
    if (rc == 0 && n == 0)
        rc = QE_NOT_FOUND;
    if (rc < 0) {
        mc->cb(rc, NULL, mc->arg);
        free(mc);
        return;
    }
    rc = broker_admin_deliver_entry(&entries[0], mc->cb, mc->arg);
    if (rc < 0)
        mc->cb(rc, NULL, mc->arg);
    free(mc);
}

int broker_admin_peek(broker_t *b, const char *topic, const char *sub, int n,
                      broker_admin_message_cb cb, void *arg)
{
    topic_t *t;
    subscription_t *s = find_sub(b, topic, sub, &t);
    if (!s || !s->cursor || !t->ml)
        return QE_NOT_FOUND;
    if (n < 1 || n > PEEK_MAX)
        return QE_INVALID;
    ml_pos_t last = ml_last_confirmed(t->ml);
    ml_pos_t pos = ml_cursor_mark_delete_pos(s->cursor);
    int seen = 0;
    for (int steps = 0; steps < 4 * PEEK_MAX; steps++) {
        pos = ml_next_position(t->ml, pos);
        if (last.ledger_id < 0 || ml_pos_cmp(pos, last) > 0)
            return QE_NOT_FOUND;
        if (!ml_cursor_is_acked(s->cursor, pos) && ++seen == n)
            break;
    }
    if (seen != n)
        return QE_NOT_FOUND;
    msg_ctx_t *mc = malloc(sizeof *mc);
    if (!mc)
        return -ENOMEM;
    *mc = (msg_ctx_t){t, cb, arg};
    t->busy++;
    int rc = ml_read(t->ml, pos, 1, 16u << 20, peek_read, mc);
    if (rc < 0) {
        t->busy--;
        free(mc);
    }
    return rc;
}

int broker_admin_skip(broker_t *b, const char *topic, const char *sub, int64_t n,
                      broker_done_rc_cb cb, void *arg)
{
    topic_t *t;
    subscription_t *s = find_sub(b, topic, sub, &t);
    if (!s || !s->cursor || !t->ml)
        return QE_NOT_FOUND;
    ml_pos_t last = ml_last_confirmed(t->ml);
    if (last.ledger_id >= 0) {
        if (n < 0) {
            ml_cursor_ack_cumulative(s->cursor, last);
        } else {
            ml_pos_t pos = ml_cursor_mark_delete_pos(s->cursor);
            for (int64_t done = 0; done < n;) {
                pos = ml_next_position(t->ml, pos);
                if (ml_pos_cmp(pos, last) > 0)
                    break;
                if (!ml_cursor_is_acked(s->cursor, pos)) {
                    ml_cursor_ack(s->cursor, pos, NULL, 0);
                    done++;
                }
            }
        }
        subscription_replay_trim(s);
    }
    return ml_cursor_flush(s->cursor, cb, arg);
}

int broker_admin_reset_cursor(broker_t *b, const char *topic, const char *sub, ml_pos_t pos,
                              broker_done_rc_cb cb, void *arg)
{
    topic_t *t;
    subscription_t *s = find_sub(b, topic, sub, &t);
    if (!s || !s->cursor)
        return QE_NOT_FOUND;
    if (s->reading)
        return QE_BUSY;
    subscription_replay_clear(s);
    return ml_cursor_reset(s->cursor, pos, cb, arg);
}

static void sub_cursor_closed(int rc, void *arg)
{
    op_finish(arg, rc);
}

static void sub_cursor_opened(int rc, ml_cursor_t *c, void *arg)
{
    op_ctx_t *op = arg;
    if (rc < 0) {
        op_finish(op, rc);
        return;
    }
    rc = ml_cursor_close(c, sub_cursor_closed, op);
    if (rc < 0)
        op_finish(op, rc);
}

int broker_admin_subscription_create(broker_t *b, const char *topic, const char *sub, ml_pos_t pos,
                                     broker_done_rc_cb cb, void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    if (qmap_get(t->subscriptions, sub))
        return QE_EXISTS;
    op_ctx_t *op = op_new(b, NULL, cb, arg);
    if (!op)
        return -ENOMEM;
    op->topic = t;
    t->busy++;
    int rc = ml_cursor_open(t->ml, sub, pos, true, sub_cursor_opened, op);
    if (rc < 0) {
        t->busy--;
        free(op);
    }
    return rc;
}

int broker_admin_subscription_delete(broker_t *b, const char *topic, const char *sub,
                                     broker_done_rc_cb cb, void *arg)
{
    topic_t *t = ready_topic(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    subscription_t *s = qmap_get(t->subscriptions, sub);
    if (s && (s->consumers_count > 0 || s->reading || s->opening || s->waiting))
        return QE_BUSY;
    if (!t->ml) {
        if (!s)
            return QE_NOT_FOUND;
        qmap_remove(t->subscriptions, sub);
        subscription_free(s);
        return answer_later(b, 0, cb, arg);
    }
    op_ctx_t *op = op_new(b, NULL, cb, arg);
    if (!op)
        return -ENOMEM;
    op->topic = t;
    t->busy++;
    if (s) {
        qmap_remove(t->subscriptions, sub);
        subscription_free(s); /* closes its cursor */
    }
    subscription_meta_forget(t, sub);
    int rc = ml_cursor_delete(t->ml, sub, sub_cursor_closed, op);
    if (rc < 0) {
        t->busy--;
        free(op);
    }
    return rc;
}

/* ------------------------------------------------------------ health check -- */

typedef struct health_ctx {
    broker_t *broker;
    char topic[TOPIC_NAME_MAX + 1];
    topic_t *t;
    qbuf_t *entry;
    broker_done_rc_cb cb;
    void *arg;
} health_ctx_t;

static void health_finish(health_ctx_t *hc, int rc)
{
    if (hc->t)
        hc->t->busy--;
    if (rc < 0)
        log_warn("admin", "health check on %s failed: %s", hc->topic, q_strerror(rc));
    qbuf_unref(hc->entry);
    hc->cb(rc, hc->arg);
    free(hc);
}

static void health_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    health_ctx_t *hc = arg;
    if (rc == 0 && (n != 1 || entries[0].data->len != hc->entry->len ||
                    memcmp(entries[0].data->data, hc->entry->data, hc->entry->len) != 0))
        rc = QE_CORRUPT;
    health_finish(hc, rc);
}

static void health_added(int rc, ml_pos_t pos, void *arg)
{
    health_ctx_t *hc = arg;
    if (rc == 0 && hc->t->ml)
        rc = ml_read(hc->t->ml, pos, 1, 1u << 20, health_read, hc);
    else if (rc == 0)
        rc = QE_CLOSED;
    if (rc < 0)
        health_finish(hc, rc);
}

/* A stored entry as a client would send it: [0x0e01][crc][metaSize][meta][payload]. */
static qbuf_t *health_entry(void)
{
    char payload[64];
    int plen = snprintf(payload, sizeof payload, "healthcheck-%lld", (long long)clock_wall_ms());
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "quire-healthcheck";
    md.sequence_id = (uint64_t)clock_wall_ms();
    md.publish_time = (uint64_t)clock_wall_ms();
    size_t mlen = pulsar__proto__message_metadata__get_packed_size(&md);
    size_t total = 2 + 4 + 4 + mlen + (size_t)plen;
    qbuf_t *b = qbuf_new(total);
    if (!b)
        return NULL;
    uint8_t *p = b->data;
    p[0] = 0x0e;
    p[1] = 0x01;
    uint8_t *meta = p + 6;
    meta[0] = (uint8_t)(mlen >> 24);
    meta[1] = (uint8_t)(mlen >> 16);
    meta[2] = (uint8_t)(mlen >> 8);
    meta[3] = (uint8_t)mlen;
    pulsar__proto__message_metadata__pack(&md, meta + 4);
    memcpy(meta + 4 + mlen, payload, (size_t)plen);
    uint32_t crc = crc32c(0, meta, 4 + mlen + (size_t)plen);
    p[2] = (uint8_t)(crc >> 24);
    p[3] = (uint8_t)(crc >> 16);
    p[4] = (uint8_t)(crc >> 8);
    p[5] = (uint8_t)crc;
    b->len = (uint32_t)total;
    return b;
}

static void health_topic_ready(int rc, topic_t *t, void *arg)
{
    health_ctx_t *hc = arg;
    if (rc < 0 || !t->ml) {
        health_finish(hc, rc < 0 ? rc : QE_INVALID);
        return;
    }
    hc->t = t;
    t->busy++;
    hc->entry = health_entry();
    if (!hc->entry) {
        health_finish(hc, -ENOMEM);
        return;
    }
    rc = ml_add(t->ml, hc->entry, health_added, hc);
    if (rc < 0)
        health_finish(hc, rc);
}

static void health_registered(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    health_ctx_t *hc = arg;
    if (rc == 0 || rc == QE_EXISTS)
        rc = broker_topic_get(hc->broker, hc->topic, false, health_topic_ready, hc);
    if (rc < 0)
        health_finish(hc, rc);
}

int broker_admin_health_check(broker_t *b, int web_port, broker_done_rc_cb cb, void *arg)
{
    if (b->shutting_down)
        return QE_SHUTDOWN;
    health_ctx_t *hc = calloc(1, sizeof *hc);
    if (!hc)
        return -ENOMEM;
    hc->broker = b;
    hc->cb = cb;
    hc->arg = arg;
    snprintf(hc->topic, sizeof hc->topic, "persistent://pulsar/%s:%d/healthcheck",
             b->cfg.advertised_address, web_port);
    topic_name_t tn;
    char path[3 * TOPIC_NAME_MAX + 64];
    int rc = topic_name_parse(hc->topic, &tn);
    if (rc == 0)
        rc = topic_registry_path(&tn, path, sizeof path);
    if (rc == 0)
        rc = md_put(b->md, path, "{}", 2, MD_VERSION_NEW, NULL, health_registered, hc);
    if (rc < 0)
        free(hc);
    return rc;
}
