/*
 * consumer.c — SUBSCRIBE, FLOW, ACK, REDELIVER, UNSUBSCRIBE, SEEK,
 * GET_LAST_MESSAGE_ID and CLOSE_CONSUMER: consumers and their subscriptions.
 *
 * A subscription is created by its first SUBSCRIBE; for a persistent topic it
 * owns a cursor of the topic's managed ledger (durable for subscriptions,
 * non-durable for readers). Opening the cursor is asynchronous: consumers that
 * arrive meanwhile wait on the subscription (opening = true) and are attached
 * when it is open. A durable subscription outlives its consumers; a
 * non-durable one is removed with its last consumer.
 *
 * Each consumer records what it was sent and has not acknowledged (unacked:
 * position -> batch size and key hash, in a map that keeps neighbouring
 * positions in neighbouring slots: they come and go about in order). Those
 * entries go back to the subscription's replay set when the consumer closes or
 * asks for redelivery; the dispatcher (dispatcher.c) serves the replay set
 * before new entries. Key_Shared: "draining hashes", below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include <errno.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "server/compaction.h"
#include "server/limits_int.h"
#include "server/schema_int.h"
#include "server/subscription_meta.h"

typedef struct subscribe_ctx {
    conn_t *conn; /* one reference */
    uint64_t consumer_id;
    uint64_t request_id;
    char *subscription;
    int sub_type;
    bool durable;
    int initial_position;
    ml_pos_t start;
    int key_shared_mode;
    char *meta;                 /* subscription_properties etc. as JSON (subscription_meta.c) */
    bool read_compacted;        /* the consumer reads the compacted view (compaction.c) */
    struct subscribe_ctx *next; /* waiting on an opening subscription */
} subscribe_ctx_t;

static void send_buf_or_log(conn_t *c, int rc, qbuf_t *buf)
{
    if (rc < 0) {
        log_error("consumer", "%s: cannot encode a response: %s", c->peer, q_strerror(rc));
        return;
    }
    conn_send_buf(c, buf, 0, buf->len);
}

static void subscribe_ctx_free(subscribe_ctx_t *ctx)
{
    conn_unref(ctx->conn);
    free(ctx->subscription);
    free(ctx->meta);
    free(ctx);
}

static consumer_t *pending_consumer(conn_t *c, uint64_t id)
{
    consumer_t *cons = qmap64_get(c->consumers, id);
    return cons && !cons->sub ? cons : NULL;
}

static void consumer_free(consumer_t *cons)
{
    qmap64_free(cons->unacked);
    free(cons->ranges);
    free(cons->ring_points);
    free(cons->name);
    free(cons);
}

static void subscribe_fail(subscribe_ctx_t *ctx, pb_error_t err, const char *why)
{
    conn_t *c = ctx->conn;
    consumer_t *cons = pending_consumer(c, ctx->consumer_id);
    if (cons) {
        qmap64_remove(c->consumers, ctx->consumer_id);
        consumer_free(cons);
    }
    if (c->state != CONN_CLOSED)
        conn_send_error(c, ctx->request_id, err, why);
    subscribe_ctx_free(ctx);
}

/* ------------------------------------------------------ attach / failover -- */

/* Failover: the active consumer is the first by (priority, name); on a
 * partition, index partition % n among them (as Pulsar spreads partitions). */
consumer_t *subscription_active_consumer(subscription_t *s)
{
    if (s->consumers_count == 0)
        return NULL;
    if (s->type != PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover)
        return s->consumers[0];
    int part = s->topic->partition;
    size_t idx = part >= 0 ? (size_t)part % s->consumers_count : 0;
    return s->consumers[idx];
}

static int consumer_order(const void *a, const void *b)
{
    const consumer_t *x = *(consumer_t *const *)a, *y = *(consumer_t *const *)b;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void notify_active_consumers(subscription_t *s)
{
    if (s->type != PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover)
        return;
    consumer_t *active = subscription_active_consumer(s);
    for (size_t i = 0; i < s->consumers_count; i++) {
        consumer_t *cons = s->consumers[i];
        qbuf_t *buf = NULL;
        int rc = cmd_encode_active_consumer_change(cons->consumer_id, cons == active, &buf);
        send_buf_or_log(cons->conn, rc, buf);
    }
}

static bool ranges_overlap(const consumer_t *a, const consumer_t *b)
{
    for (size_t i = 0; i < a->ranges_count; i++)
        for (size_t j = 0; j < b->ranges_count; j++)
            if (a->ranges[i][0] <= b->ranges[j][1] && b->ranges[j][0] <= a->ranges[i][1])
                return true;
    return false;
}

/* Checks that cons may join s; 0 or the error to send. */
static int subscription_admit(subscription_t *s, consumer_t *cons, int type, pb_error_t *err,
                              const char **why)
{
    if (limits_admit_consumer(s, err, why) < 0)
        return -1;
    if (s->consumers_count > 0 && s->type != type) {
        *err = PULSAR__PROTO__SERVER_ERROR__ConsumerBusy;
        *why = "Subscription is of different type";
        return -1;
    }
    if (type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive && s->consumers_count > 0) {
        *err = PULSAR__PROTO__SERVER_ERROR__ConsumerBusy;
        *why = "Exclusive consumer is already connected";
        return -1;
    }
    if (type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared) {
        for (size_t i = 0; i < s->consumers_count; i++) {
            if (cons->ranges_count && ranges_overlap(cons, s->consumers[i])) {
                *err = PULSAR__PROTO__SERVER_ERROR__ConsumerAssignError;
                *why = "Range conflict with an existing consumer";
                return -1;
            }
        }
    }
    return 0;
}

static void draining_rebuild(subscription_t *s);

static int subscription_add_consumer(subscription_t *s, consumer_t *cons)
{
    if (s->consumers_count == s->consumers_cap) {
        size_t ncap = s->consumers_cap ? s->consumers_cap * 2 : 4;
        consumer_t **n = realloc(s->consumers, ncap * sizeof *n);
        if (!n)
            return -ENOMEM;
        s->consumers = n;
        s->consumers_cap = ncap;
    }
    s->consumers[s->consumers_count++] = cons;
    if (s->cursor)
        ml_cursor_set_active(s->cursor, true);
    s->ring_len = 0; /* the Key_Shared ring is built again */
    cons->sub = s;
    qsort(s->consumers, s->consumers_count, sizeof *s->consumers, consumer_order);
    draining_rebuild(s); /* keys it takes over drain from their old owners */
    return 0;
}

static void subscribe_attach(subscribe_ctx_t *ctx, subscription_t *s)
{
    conn_t *c = ctx->conn;
    consumer_t *cons = pending_consumer(c, ctx->consumer_id);
    if (c->state == CONN_CLOSED || !cons) {
        subscribe_ctx_free(ctx);
        return;
    }
    pb_error_t err;
    const char *why;
    if (subscription_admit(s, cons, ctx->sub_type, &err, &why) < 0) {
        subscribe_fail(ctx, err, why);
        return;
    }
    s->type = ctx->sub_type;
    if (ctx->sub_type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared &&
        s->consumers_count == 0)
        s->key_shared_mode = ctx->key_shared_mode;
    if (subscription_add_consumer(s, cons) < 0) {
        subscribe_fail(ctx, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady, "out of memory");
        return;
    }
    if (s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared && s->cursor) {
        /* Keys that move to the new consumer wait until what was sent before it
         * joined is acknowledged: per-key order holds across joins. */
        cons->join_limit = ml_cursor_read_pos(s->cursor);
        cons->has_join_limit = s->consumers_count > 1;
    }
    if (s->keep_without_consumers) {
        s->keep_without_consumers = false;
        ev_timer_stop(c->broker->loop, &s->orphan_timer);
    }
    compaction_sub_attach(s, ctx->read_compacted); /* compaction.c */
    conn_send_success(c, ctx->request_id);
    log_info("consumer", "%s: consumer %s joined %s / %s (type %d)", c->peer, cons->name,
             s->topic->name, s->name, s->type);
    notify_active_consumers(s);
    subscribe_ctx_free(ctx);
    subscription_dispatch(s);
}

/* ------------------------------------------------------- open subscription -- */

static subscription_t *subscription_new(topic_t *t, const subscribe_ctx_t *ctx)
{
    subscription_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->topic = t;
    s->name = strdup(ctx->subscription);
    s->type = ctx->sub_type;
    s->durable = ctx->durable;
    s->key_shared_mode = ctx->key_shared_mode;
    s->loaded_ms = clock_wall_ms();
    s->redelivery_counts = qmap64_new();
    s->replay_hashes = qmap64_new();
    s->draining = qmap64_new();
    if (!s->name || !s->redelivery_counts || !s->replay_hashes || !s->draining ||
        qmap_put(t->subscriptions, s->name, s) < 0) {
        qmap64_free(s->redelivery_counts);
        qmap64_free(s->replay_hashes);
        qmap64_free(s->draining);
        free(s->name);
        free(s);
        return NULL;
    }
    return s;
}

void subscription_remove(subscription_t *s)
{
    qmap_remove(s->topic->subscriptions, s->name);
    if (s->cursor && !s->durable) {
        ml_cursor_delete(s->topic->ml, s->name, broker_ignore_done, NULL);
        s->cursor = NULL;
    }
    subscription_free(s);
}

static void orphan_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    subscription_t *s = w->data;
    s->keep_without_consumers = false;
    if (s->consumers_count == 0 && !s->durable)
        subscription_remove(s);
}

void subscription_keep_orphan(subscription_t *s, double seconds)
{
    struct ev_loop *loop = s->topic->broker->loop;
    s->keep_without_consumers = true;
    ev_timer_stop(loop, &s->orphan_timer);
    ev_timer_init(&s->orphan_timer, orphan_timer_cb, seconds, 0);
    s->orphan_timer.data = s;
    ev_timer_start(loop, &s->orphan_timer);
}

static void cursor_opened(int rc, ml_cursor_t *cursor, void *arg)
{
    subscription_t *s = arg;
    s->opening = false;
    s->topic->busy--;
    subscribe_ctx_t *w = s->waiting;
    s->waiting = NULL;
    if (rc < 0) {
        log_error("consumer", "%s / %s: cursor open failed: %s", s->topic->name, s->name,
                  q_strerror(rc));
        while (w) {
            subscribe_ctx_t *next = w->next;
            subscribe_fail(w, broker_server_error(rc), q_strerror(rc));
            w = next;
        }
        subscription_remove(s);
        return;
    }
    s->cursor = cursor;
    ml_cursor_set_active(cursor, false); /* until a consumer attaches */
    while (w) {
        subscribe_ctx_t *next = w->next;
        subscribe_attach(w, s);
        w = next;
    }
    if (s->consumers_count == 0 && !s->durable)
        subscription_remove(s);
}

static void subscribe_topic_ready(int rc, topic_t *t, void *arg)
{
    subscribe_ctx_t *ctx = arg;
    if (rc < 0) {
        subscribe_fail(ctx, broker_server_error(rc), schema_refusal_reason(rc)); /* schema.c */
        return;
    }
    if (ctx->conn->state == CONN_CLOSED) {
        subscribe_ctx_free(ctx);
        return;
    }
    const char *refusal = compaction_subscribe_refusal(t, ctx->read_compacted, ctx->sub_type);
    if (refusal) { /* read_compacted on Shared / Key_Shared (compaction.c) */
        subscribe_fail(ctx, PULSAR__PROTO__SERVER_ERROR__NotAllowedError, refusal);
        return;
    }
    subscription_t *s = qmap_get(t->subscriptions, ctx->subscription);
    if (s && s->opening) {
        ctx->next = s->waiting;
        s->waiting = ctx;
        return;
    }
    if (s) {
        subscribe_attach(ctx, s);
        return;
    }
    s = subscription_new(t, ctx);
    if (!s) {
        subscribe_fail(ctx, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady, "out of memory");
        return;
    }
    subscription_meta_attach(s, ctx->meta); /* takes it */
    ctx->meta = NULL;
    if (!t->ml) { /* non-persistent: no cursor */
        subscribe_attach(ctx, s);
        return;
    }
    ml_pos_t initial =
        ctx->durable
            ? (ctx->initial_position == PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Earliest
                   ? ML_POS_EARLIEST
                   : ML_POS_LATEST)
            : ctx->start;
    s->opening = true;
    s->waiting = ctx;
    t->busy++;
    rc = ml_cursor_open(t->ml, s->name, initial, ctx->durable, cursor_opened, s);
    if (rc < 0) {
        t->busy--;
        s->opening = false;
        s->waiting = NULL;
        subscription_remove(s);
        subscribe_fail(ctx, broker_server_error(rc), q_strerror(rc));
    }
}

int subscription_restore(topic_t *t, const char *name)
{
    if (qmap_get(t->subscriptions, name))
        return 0;
    subscribe_ctx_t tmpl = {0};
    tmpl.subscription = (char *)name;
    tmpl.sub_type = PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive;
    tmpl.durable = true;
    tmpl.key_shared_mode = PULSAR__PROTO__KEY_SHARED_MODE__AUTO_SPLIT;
    subscription_t *s = subscription_new(t, &tmpl);
    if (!s)
        return -ENOMEM;
    s->opening = true;
    t->busy++;
    int rc = ml_cursor_open(t->ml, s->name, ML_POS_EARLIEST, true, cursor_opened, s);
    if (rc < 0) {
        t->busy--;
        s->opening = false;
        qmap_remove(t->subscriptions, s->name);
        subscription_free(s);
    }
    return rc;
}

static ml_pos_t start_position(const Pulsar__Proto__MessageIdData *id)
{
    if (!id)
        return ML_POS_LATEST;
    int64_t l = (int64_t)id->ledgerid, e = (int64_t)id->entryid;
    if (l == INT64_MAX && e == INT64_MAX)
        return ML_POS_LATEST;
    if (l < 0 || e < 0)
        return ML_POS_EARLIEST;
    return (ml_pos_t){l, e};
}

static int consumer_set_ranges(consumer_t *cons, const Pulsar__Proto__KeySharedMeta *ks)
{
    if (!ks || ks->keysharedmode != PULSAR__PROTO__KEY_SHARED_MODE__STICKY)
        return 0;
    if (ks->n_hashranges == 0 || ks->n_hashranges > 65536)
        return QE_INVALID;
    cons->ranges = calloc(ks->n_hashranges, sizeof *cons->ranges);
    if (!cons->ranges)
        return -ENOMEM;
    for (size_t i = 0; i < ks->n_hashranges; i++) {
        int32_t lo = ks->hashranges[i]->start, hi = ks->hashranges[i]->end;
        if (lo < 0 || hi > 65535 || lo > hi)
            return QE_INVALID;
        cons->ranges[i][0] = lo;
        cons->ranges[i][1] = hi;
    }
    cons->ranges_count = ks->n_hashranges;
    return 0;
}

void consumer_handle_subscribe(conn_t *c, const Pulsar__Proto__CommandSubscribe *cmd)
{
    consumer_t *existing = qmap64_get(c->consumers, cmd->consumer_id);
    if (existing) {
        if (existing->sub)
            conn_send_success(c, cmd->request_id);
        else
            conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                            "Consumer is being created");
        return;
    }
    char full[TOPIC_NAME_MAX];
    if (broker_topic_canonical(cmd->topic, full, sizeof full) < 0) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                        "Invalid topic name");
        return;
    }
    if (!cmd->subscription || !cmd->subscription[0] || strlen(cmd->subscription) > 512) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                        "Invalid subscription name");
        return;
    }
    consumer_t *cons = calloc(1, sizeof *cons);
    subscribe_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (cons) {
        cons->unacked = qmap64_new_runs();
        cons->name =
            strdup(cmd->consumer_name && cmd->consumer_name[0] ? cmd->consumer_name : "consumer");
    }
    if (ctx)
        ctx->subscription = strdup(cmd->subscription);
    int rc = cons && ctx && cons->unacked && cons->name && ctx->subscription ? 0 : -ENOMEM;
    if (rc == 0)
        rc = consumer_set_ranges(cons, cmd->keysharedmeta);
    if (rc == 0)
        rc = qmap64_put(c->consumers, cmd->consumer_id, cons);
    if (rc < 0) {
        if (cons)
            consumer_free(cons);
        if (ctx)
            free(ctx->subscription);
        free(ctx);
        conn_send_error(c, cmd->request_id,
                        rc == QE_INVALID ? PULSAR__PROTO__SERVER_ERROR__ConsumerAssignError
                                         : PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                        rc == QE_INVALID ? "Invalid hash ranges" : "out of memory");
        return;
    }
    cons->conn = c;
    cons->consumer_id = cmd->consumer_id;
    cons->priority = cmd->has_priority_level ? cmd->priority_level : 0;
    cons->connected_since_ms = clock_wall_ms();
    cons->auto_consume =
        cmd->schema && cmd->schema->type == PULSAR__PROTO__SCHEMA__TYPE__AutoConsume;
    ctx->conn = c;
    ctx->consumer_id = cmd->consumer_id;
    ctx->request_id = cmd->request_id;
    ctx->sub_type = (int)cmd->subtype;
    ctx->durable = !cmd->has_durable || cmd->durable;
    ctx->initial_position = cmd->has_initialposition
                                ? (int)cmd->initialposition
                                : PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Latest;
    ctx->start = start_position(cmd->start_message_id);
    ctx->key_shared_mode = cmd->keysharedmeta ? (int)cmd->keysharedmeta->keysharedmode
                                              : PULSAR__PROTO__KEY_SHARED_MODE__AUTO_SPLIT;
    ctx->meta = subscription_meta_from_subscribe(cmd);
    ctx->read_compacted = cmd->has_read_compacted && cmd->read_compacted;
    conn_ref(c);
    bool create = !cmd->has_force_topic_creation || cmd->force_topic_creation;
    rc = schema_consumer_topic_get(c, full, create, cmd, subscribe_topic_ready, ctx); /* schema.c */
    if (rc < 0)
        subscribe_fail(ctx, broker_server_error(rc), q_strerror(rc));
}

/* ------------------------------------------------------------------- flow -- */

void consumer_handle_flow(conn_t *c, const Pulsar__Proto__CommandFlow *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub)
        return;
    /* Bounded: a client may grant at most 2^31 outstanding permits. */
    int64_t p = cons->permits + (int64_t)cmd->messagepermits;
    cons->permits = p > INT32_MAX ? INT32_MAX : p;
    subscription_dispatch(cons->sub);
}

/* -------------------------------------------------------------- acks -- */

static ml_pos_t id_pos(const Pulsar__Proto__MessageIdData *id)
{
    return (ml_pos_t){(int64_t)id->ledgerid, (int64_t)id->entryid};
}

static bool consumer_counts_hashes(const consumer_t *cons)
{
    return cons->sub && cons->sub->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
}

/* ------------------------------------------------------ draining hashes -- */

/* Key_Shared keeps each key's order when keys move between consumers (a join,
 * a close) as Pulsar's "draining hashes" (PIP-379): s->draining counts, per
 * key hash, the unacknowledged entries held by consumers that no longer own
 * it, and an entry of such a hash waits until they are acknowledged or come
 * back (subscription_hash_held_elsewhere). A consumer is only ever sent
 * entries of hashes it owns, so a hash starts draining only when the owners
 * change: the map is built again then, from every consumer's unacknowledged
 * entries, and taken down as they leave. In between, nothing is counted per
 * entry (the map is empty but for keys that moved). */

/* Moves hash's count in m down by one, removing it at zero. */
static void draining_count_down(qmap64_t *m, uint32_t hash)
{
    void **v = qmap64_slot(m, hash, false);
    if (!v)
        return;
    uintptr_t n = (uintptr_t)*v;
    if (n <= 1)
        qmap64_remove(m, hash);
    else
        *v = (void *)(n - 1);
}

/* The owners changed (s's consumers did): which held entries drain now. Out
 * of memory, every hash counts as draining until the next rebuild that
 * succeeds (subscription_hash_held_elsewhere tries again). */
static void draining_rebuild(subscription_t *s)
{
    if (s->type != PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared)
        return;
    qmap64_t *m = qmap64_new();
    bool ok = m != NULL;
    for (size_t i = 0; ok && i < s->consumers_count; i++) {
        consumer_t *cons = s->consumers[i];
        qmap_iter_t it = {0};
        void *v;
        while (ok && qmap64_next(cons->unacked, &it, NULL, &v)) {
            uint32_t hash = unacked_key_hash_of(v);
            if (subscription_key_shared_owner(s, hash) == cons)
                continue;
            void **n = qmap64_slot(m, hash, true);
            if (n)
                *n = (void *)((uintptr_t)*n + 1);
            ok = n != NULL;
        }
    }
    if (!ok) {
        qmap64_free(m);
        if (!s->draining_unknown)
            log_error("consumer", "%s: out of memory counting draining key hashes", s->name);
        s->draining_unknown = true;
        return;
    }
    qmap64_free(s->draining);
    s->draining = m;
    s->draining_unknown = false;
}

/* cons no longer holds the entry v (acknowledged, sent back, replaced). */
static void draining_forget(consumer_t *cons, const void *v)
{
    subscription_t *s = cons->sub;
    if (!s || qmap64_size(s->draining) == 0)
        return;
    uint32_t hash = unacked_key_hash_of(v);
    if (subscription_key_shared_owner(s, hash) != cons)
        draining_count_down(s->draining, hash);
}

void consumer_unacked_put(consumer_t *cons, uint64_t key, void *v)
{
    void **slot = qmap64_slot(cons->unacked, key, true);
    if (!slot)
        return;
    void *old = *slot;
    *slot = v;
    if (old && consumer_counts_hashes(cons))
        draining_forget(cons, old);
}

void *consumer_unacked_take(consumer_t *cons, uint64_t key)
{
    void *v = qmap64_remove(cons->unacked, key);
    if (v && consumer_counts_hashes(cons))
        draining_forget(cons, v);
    return v;
}

bool subscription_hash_held_elsewhere(subscription_t *s, const consumer_t *cons, uint32_t hash)
{
    (void)cons; /* the hash's owner: it never holds what drains */
    if (s->draining_unknown) {
        draining_rebuild(s);
        if (s->draining_unknown)
            return true; /* still no memory: wait, keeping the order */
    }
    return qmap64_size(s->draining) > 0 && qmap64_get(s->draining, hash) != NULL;
}

/* Forgets pos in whichever consumer of s holds it (cons first). */
static void unacked_forget(subscription_t *s, consumer_t *cons, ml_pos_t pos)
{
    uint64_t key = pos_pack(pos);
    void *v = consumer_unacked_take(cons, key);
    if (!v) {
        for (size_t i = 0; i < s->consumers_count && !v; i++) {
            cons = s->consumers[i];
            v = consumer_unacked_take(cons, key);
        }
    }
    if (v) {
        uint64_t n = unacked_messages_of(v);
        cons->unacked_messages = cons->unacked_messages > n ? cons->unacked_messages - n : 0;
    }
    qmap64_remove(s->redelivery_counts, key);
}

static bool ack_set_is_partial(const Pulsar__Proto__MessageIdData *id)
{
    for (size_t i = 0; i < id->n_ack_set; i++)
        if (id->ack_set[i] != 0)
            return true;
    return false;
}

static void ack_individual(subscription_t *s, consumer_t *cons,
                           const Pulsar__Proto__MessageIdData *id)
{
    ml_pos_t pos = id_pos(id);
    if (pos.ledger_id < 0 || pos.entry_id < 0)
        return;
    bool partial = ack_set_is_partial(id);
    if (compaction_ack(s, pos, partial ? (const uint64_t *)id->ack_set : NULL, id->n_ack_set,
                       false) > 0)
        return; /* a compacted view's entry in a trimmed ledger, still partly unacked */
    if (partial) {
        ml_cursor_ack(s->cursor, pos, (const uint64_t *)id->ack_set, id->n_ack_set);
        if (!ml_cursor_is_acked(s->cursor, pos))
            return;
    } else {
        ml_cursor_ack(s->cursor, pos, NULL, 0);
    }
    unacked_forget(s, cons, pos);
    subscription_replay_remove(s, pos);
}

static void ack_cumulative(subscription_t *s, consumer_t *cons,
                           const Pulsar__Proto__MessageIdData *id)
{
    ml_pos_t pos = id_pos(id);
    if (ack_set_is_partial(id)) {
        /* Part of a batch: everything before it, and these indexes of it. */
        ack_individual(s, cons, id);
        if (pos.entry_id == 0)
            return;
        pos.entry_id--;
    }
    if (pos.ledger_id < 0 || pos.entry_id < 0)
        return;
    compaction_ack(s, pos, NULL, 0, true); /* trimmed ledgers of the compacted view */
    ml_cursor_ack_cumulative(s->cursor, pos);
    /* Forget everything <= pos that this consumer holds. */
    qmap_iter_t it = {0};
    uint64_t key;
    void *v;
    ml_pos_t *drop = NULL;
    size_t n = 0, cap = 0;
    while (qmap64_next(cons->unacked, &it, &key, &v)) {
        ml_pos_t p = pos_unpack(key);
        if (ml_pos_cmp(p, pos) <= 0) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                ml_pos_t *nd = realloc(drop, cap * sizeof *nd);
                if (!nd)
                    break;
                drop = nd;
            }
            drop[n++] = p;
        }
    }
    for (size_t i = 0; i < n; i++)
        unacked_forget(s, cons, drop[i]);
    free(drop);
    subscription_replay_trim(s);
}

void consumer_handle_ack(conn_t *c, const Pulsar__Proto__CommandAck *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub)
        return; /* unknown consumer: ignored, as Pulsar does */
    subscription_t *s = cons->sub;
    if (s->cursor) {
        bool cumulative = cmd->ack_type == PULSAR__PROTO__COMMAND_ACK__ACK_TYPE__Cumulative;
        bool shared = s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared ||
                      s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
        if (cumulative && !shared && cmd->n_message_id == 1)
            ack_cumulative(s, cons, cmd->message_id[0]);
        else if (!cumulative)
            for (size_t i = 0; i < cmd->n_message_id; i++)
                ack_individual(s, cons, cmd->message_id[i]);
        compaction_acked(s); /* progress through the compacted view (compaction.c) */
    }
    if (cmd->has_request_id) {
        qbuf_t *buf = NULL;
        int rc =
            cmd_encode_ack_response(cmd->consumer_id, cmd->request_id, CMD_NO_ERROR, NULL, &buf);
        send_buf_or_log(c, rc, buf);
    }
    subscription_dispatch(s); /* acks may release Key_Shared holds */
}

/* ------------------------------------------------------------- redelivery -- */

static void redeliver_one(subscription_t *s, consumer_t *cons, ml_pos_t pos, bool count)
{
    uint64_t key = pos_pack(pos);
    void *v = consumer_unacked_take(cons, key);
    if (!v)
        return;
    uint64_t n = unacked_messages_of(v);
    cons->unacked_messages = cons->unacked_messages > n ? cons->unacked_messages - n : 0;
    if (count) {
        uintptr_t rc = (uintptr_t)qmap64_get(s->redelivery_counts, key);
        qmap64_put(s->redelivery_counts, key, (void *)(rc + 1));
    }
    /* Key_Shared: newer entries of this key wait behind it in the replay set
     * (dispatch_entry), as for entries held back at dispatch. */
    subscription_replay_add(s, pos, unacked_key_hash_of(v));
}

static void redeliver_all(subscription_t *s, consumer_t *cons, bool count)
{
    qmap_iter_t it = {0};
    uint64_t key;
    while (qmap64_next(cons->unacked, &it, &key, NULL))
        redeliver_one(s, cons, pos_unpack(key), count);
}

void consumer_handle_redeliver(conn_t *c,
                               const Pulsar__Proto__CommandRedeliverUnacknowledgedMessages *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub || !cons->sub->cursor)
        return;
    subscription_t *s = cons->sub;
    if (cmd->n_message_ids > 0) {
        for (size_t i = 0; i < cmd->n_message_ids; i++)
            redeliver_one(s, cons, id_pos(cmd->message_ids[i]), true);
    } else {
        redeliver_all(s, cons, true);
    }
    subscription_dispatch(s);
}

/* ---------------------------------------------------------- close/unsub -- */

static void subscription_remove_consumer(subscription_t *s, consumer_t *cons)
{
    for (size_t i = 0; i < s->consumers_count; i++) {
        if (s->consumers[i] == cons) {
            memmove(&s->consumers[i], &s->consumers[i + 1],
                    (s->consumers_count - i - 1) * sizeof *s->consumers);
            s->consumers_count--;
            s->ring_len = 0;
            if (s->cursor && s->consumers_count == 0)
                ml_cursor_set_active(s->cursor, false);
            break;
        }
    }
    cons->sub = NULL;
    /* The keys it owned have new owners; what it still holds (it left
     * without its entries going back) is no longer held. */
    draining_rebuild(s);
}

void consumer_destroy(consumer_t *cons, bool redeliver)
{
    conn_t *c = cons->conn;
    qmap64_remove(c->consumers, cons->consumer_id);
    subscription_t *s = cons->sub;
    if (s) {
        if (redeliver && s->cursor)
            redeliver_all(s, cons, false);
        subscription_remove_consumer(s, cons);
        if (s->consumers_count == 0 && !s->durable && !s->keep_without_consumers) {
            subscription_remove(s);
        } else {
            notify_active_consumers(s);
            subscription_dispatch(s);
        }
    }
    consumer_free(cons);
}

void consumer_handle_close(conn_t *c, const Pulsar__Proto__CommandCloseConsumer *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (cons)
        consumer_destroy(cons, true);
    conn_send_success(c, cmd->request_id);
}

typedef struct unsub_ctx {
    conn_t *conn;
    uint64_t request_id;
} unsub_ctx_t;

static void unsubscribe_done(int rc, void *arg)
{
    unsub_ctx_t *u = arg;
    if (u->conn->state != CONN_CLOSED) {
        if (rc < 0 && rc != QE_NOT_FOUND)
            conn_send_error(u->conn, u->request_id, broker_server_error(rc), q_strerror(rc));
        else
            conn_send_success(u->conn, u->request_id);
    }
    conn_unref(u->conn);
    free(u);
}

void consumer_handle_unsubscribe(conn_t *c, const Pulsar__Proto__CommandUnsubscribe *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Consumer not found");
        return;
    }
    subscription_t *s = cons->sub;
    if (s->consumers_count > 1) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Subscription has other connected consumers");
        return;
    }
    topic_t *t = s->topic;
    bool had_cursor = s->cursor != NULL;
    char *name = strdup(s->name);
    subscription_remove_consumer(s, cons);
    qmap64_remove(c->consumers, cons->consumer_id);
    consumer_free(cons);
    s->cursor = NULL;
    subscription_remove(s);
    unsub_ctx_t *u = malloc(sizeof *u);
    if (!name || !u || !had_cursor) {
        free(u);
        if (name && !had_cursor)
            conn_send_success(c, cmd->request_id);
        else
            conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                            "out of memory");
        free(name);
        return;
    }
    *u = (unsub_ctx_t){c, cmd->request_id};
    conn_ref(c);
    subscription_meta_forget(t, name);
    int rc = ml_cursor_delete(t->ml, name, unsubscribe_done, u);
    free(name);
    if (rc < 0)
        unsubscribe_done(rc, u);
}
