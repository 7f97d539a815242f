/*
 * producer.c — PRODUCER, SEND and CLOSE_PRODUCER.
 *
 * A producer is created in two steps: registered on its connection at once
 * (so a repeated PRODUCER with the same id is answered ServiceNotReady while
 * pending, and success again once ready), then attached to its topic when the
 * topic is loaded. SEND copies the stored bytes (from the 0x0e01 checksum
 * magic, or the metadata size, to the end: exactly what the client sent) into
 * one entry buffer and appends it to the topic's managed ledger; the receipt
 * goes out when the entry is durable. Managed-ledger completions arrive in
 * append order, so receipts leave in the order of the SENDs.
 *
 * Back-pressure: the bytes of a connection's appends in flight are bounded by
 * max_pending_publish_bytes; past it the broker stops reading that
 * connection (never drops or refuses a message) and resumes below half. The
 * bytes over all connections are bounded by max_publish_buffer_bytes the same
 * way (connection.c, "publish buffer bound").
 * A failed append closes the connection: the client reconnects and resends
 * what was not acknowledged (a SEND_ERROR would make the C++ client give up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/codec/frame.h"
#include "server/dedup.h"
#include "server/limits_int.h"
#include "server/maintenance.h"
#include "server/producer_access.h"
#include "server/schema_int.h"

typedef struct send_ctx {
    conn_t *conn; /* one reference */
    uint64_t producer_id;
    uint64_t sequence_id;
    uint64_t highest_sequence_id;
    uint32_t bytes;
    int32_t num_messages;
    topic_t *topic;
    char *dedup_name;  /* producer name while deduplication tracks this send (dedup.c) */
    uint64_t start_us; /* when the append was asked for (write latency) */
} send_ctx_t;

typedef struct create_ctx {
    conn_t *conn; /* one reference */
    uint64_t producer_id;
    uint64_t request_id;
} create_ctx_t;

static void producer_free(producer_t *p)
{
    free(p->name);
    free(p);
}

void producer_destroy(producer_t *p)
{
    topic_t *t = p->topic;
    if (p->waiting)
        producer_access_unqueue(p);
    else if (p->topic)
        topic_remove_producer(p->topic, p);
    qmap64_remove(p->conn->producers, p->producer_id);
    /* Sends in flight find their producer by id, never by pointer. */
    producer_free(p);
    if (t)
        producer_access_removed(t); /* a WaitForExclusive producer may go now */
}

void producer_send_success(conn_t *c, producer_t *p, uint64_t request_id)
{
    Pulsar__Proto__CommandProducerSuccess ok = PULSAR__PROTO__COMMAND_PRODUCER_SUCCESS__INIT;
    ok.request_id = request_id;
    ok.producer_name = p->name;
    ok.has_last_sequence_id = true;
    ok.last_sequence_id = p->topic ? dedup_last_sequence_id(p->topic, p->name) : -1;
    /* Java clients read schema_version unconditionally: a topic without a
     * schema answers an empty version, as Pulsar's SchemaVersion.Empty. */
    ok.has_schema_version = true;
    ok.schema_version.len = p->has_schema_version ? sizeof p->schema_version : 0; /* schema.c */
    ok.schema_version.data = p->has_schema_version ? p->schema_version : NULL;
    ok.has_producer_ready = true;
    ok.producer_ready = !p->waiting; /* WaitForExclusive: queued (producer_access.c) */
    ok.has_topic_epoch = !p->waiting && p->topic && p->topic->epoch_set;
    ok.topic_epoch = ok.has_topic_epoch ? p->topic->producer_epoch : 0;
    pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS;
    cmd.producer_success = &ok;
    conn_send_command(c, &cmd);
}

static void topic_add_producer(topic_t *t, producer_t *p)
{
    p->topic = t;
    p->topic_prev = NULL;
    p->topic_next = t->producers;
    if (t->producers)
        t->producers->topic_prev = p;
    t->producers = p;
    t->producers_count++;
}

/* A persistent topic whose log cannot be written now (no ledger, and no
 * writable bookie to create one: their disks full) refuses producers with a
 * retriable error: clients back off and their sends time out, where a
 * producer admitted only to have every publish fail would reconnect at once,
 * over and over, the client's send timeout restarting each time. */
static int producer_storage_admit(const topic_t *t, pb_error_t *err, const char **why)
{
    if (!t->ml || ml_can_write(t->ml))
        return 0;
    *err = PULSAR__PROTO__SERVER_ERROR__ServiceNotReady;
    *why = "Topic cannot be written now: not enough writable bookies (disk full?)";
    log_warn("producer", "%s: producer refused: not enough writable bookies", t->name);
    return -1;
}

static void producer_topic_ready(int rc, topic_t *t, void *arg)
{
    create_ctx_t *ctx = arg;
    conn_t *c = ctx->conn;
    producer_t *p = qmap64_get(c->producers, ctx->producer_id);
    if (c->state == CONN_CLOSED || !p || p->ready || p->topic) {
        goto out;
    }
    if (rc < 0) {
        qmap64_remove(c->producers, ctx->producer_id);
        conn_send_error(c, ctx->request_id, broker_server_error(rc),
                        schema_refusal_reason(rc)); /* schema.c: why a schema was refused */
        producer_free(p);
        goto out;
    }
    for (producer_t *q = t->producers; q; q = q->topic_next) {
        if (strcmp(q->name, p->name) == 0) {
            qmap64_remove(c->producers, ctx->producer_id);
            conn_send_error(c, ctx->request_id, PULSAR__PROTO__SERVER_ERROR__ProducerBusy,
                            "Producer with name is already connected to topic");
            producer_free(p);
            goto out;
        }
    }
    pb_error_t err;
    const char *why;
    int access = 0;
    if (limits_admit_producer(t, &err, &why) < 0 ||
        backlog_quota_admit_producer(t, &err, &why) < 0 ||
        producer_storage_admit(t, &err, &why) < 0 ||
        (access = producer_access_admit(t, p, ctx->request_id, &err, &why)) < 0) {
        qmap64_remove(c->producers, ctx->producer_id);
        conn_send_error(c, ctx->request_id, err, why);
        producer_free(p);
        goto out;
    }
    if (access > 0)
        goto out; /* WaitForExclusive: queued, answered producer_ready=false */
    topic_add_producer(t, p);
    p->ready = true;
    producer_send_success(c, p, ctx->request_id);
    log_info("producer", "%s: producer %s on %s", c->peer, p->name, t->name);
out:
    conn_unref(c);
    free(ctx);
}

void producer_handle_create(conn_t *c, const Pulsar__Proto__CommandProducer *cmd)
{
    producer_t *existing = qmap64_get(c->producers, cmd->producer_id);
    if (existing) {
        if (existing->ready)
            producer_send_success(c, existing, cmd->request_id);
        else
            conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                            "Producer is being created");
        return;
    }
    char full[TOPIC_NAME_MAX];
    int rc = broker_topic_canonical(cmd->topic, full, sizeof full);
    if (rc < 0) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                        "Invalid topic name");
        return;
    }
    producer_t *p = calloc(1, sizeof *p);
    create_ctx_t *ctx = calloc(1, sizeof *ctx);
    char gen[160];
    if (!cmd->producer_name || !cmd->producer_name[0])
        snprintf(gen, sizeof gen, "%s-0-%llu", c->broker->cfg.cluster_name,
                 (unsigned long long)++c->broker->producer_name_seq);
    if (p)
        p->name = strdup(cmd->producer_name && cmd->producer_name[0] ? cmd->producer_name : gen);
    if (!p || !ctx || !p->name || qmap64_put(c->producers, cmd->producer_id, p) < 0) {
        if (p)
            free(p->name);
        free(p);
        free(ctx);
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                        "out of memory");
        return;
    }
    p->conn = c;
    p->producer_id = cmd->producer_id;
    p->epoch = cmd->has_epoch ? cmd->epoch : 0;
    p->access_mode = cmd->has_producer_access_mode ? (int)cmd->producer_access_mode
                                                   : PULSAR__PROTO__PRODUCER_ACCESS_MODE__Shared;
    p->has_topic_epoch = cmd->has_topic_epoch;
    p->topic_epoch = cmd->topic_epoch;
    p->last_sequence_id = -1;
    ctx->conn = c;
    ctx->producer_id = cmd->producer_id;
    ctx->request_id = cmd->request_id;
    conn_ref(c);
    rc = schema_producer_topic_get(c, full, cmd, producer_topic_ready, ctx); /* schema.c */
    if (rc < 0) {
        qmap64_remove(c->producers, cmd->producer_id);
        producer_free(p);
        conn_unref(c);
        free(ctx);
        conn_send_error(c, cmd->request_id, broker_server_error(rc), q_strerror(rc));
    }
}

/* ------------------------------------------------------------------- send -- */

static void send_receipt(conn_t *c, const send_ctx_t *s, int64_t ledger, int64_t entry)
{
    Pulsar__Proto__MessageIdData id = PULSAR__PROTO__MESSAGE_ID_DATA__INIT;
    id.ledgerid = (uint64_t)ledger;
    id.entryid = (uint64_t)entry;
    Pulsar__Proto__CommandSendReceipt r = PULSAR__PROTO__COMMAND_SEND_RECEIPT__INIT;
    r.producer_id = s->producer_id;
    r.sequence_id = s->sequence_id;
    r.has_highest_sequence_id = true;
    r.highest_sequence_id = s->highest_sequence_id;
    r.message_id = &id;
    pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT;
    cmd.send_receipt = &r;
    conn_send_command(c, &cmd);
}

static void send_release(send_ctx_t *s)
{
    conn_t *c = s->conn;
    c->pending_publish_bytes -= s->bytes;
    if (c->reads_paused && c->pending_publish_bytes < c->broker->cfg.max_pending_publish_bytes / 2)
        conn_resume_reads(c);
    broker_publish_bytes_release(c->broker, s->bytes);
    broker_send_released(s->topic, s->dedup_name);
    s->topic->busy--;
    conn_unref(c);
    free(s);
}

static void send_add_done(int rc, ml_pos_t pos, void *arg)
{
    send_ctx_t *s = arg;
    conn_t *c = s->conn;
    producer_t *p = qmap64_get(c->producers, s->producer_id);
    if (rc < 0) {
        log_error("producer", "%s: append to %s failed: %s", c->peer, s->topic->name,
                  q_strerror(rc));
        broker_send_failed(s->topic);
        if (c->state != CONN_CLOSED)
            conn_close(c, "append failed; the client will resend");
    } else if (p && c->state != CONN_CLOSED) {
        if ((int64_t)s->highest_sequence_id > p->last_sequence_id)
            p->last_sequence_id = (int64_t)s->highest_sequence_id;
        p->msg_in += (uint64_t)s->num_messages;
        p->bytes_in += s->bytes;
        send_receipt(c, s, pos.ledger_id, pos.entry_id);
    }
    if (rc >= 0) {
        uint64_t now = clock_mono_us();
        topic_record_append(s->topic, (double)(now - s->start_us) / 1000.0, s->bytes);
        latq_record(c->broker->publish_latency, now - s->start_us, now);
        broker_send_persisted(s->topic, s->dedup_name, s->highest_sequence_id, pos);
        topic_traffic_moving(s->topic);
        s->topic->msg_in += (uint64_t)s->num_messages;
        s->topic->bytes_in += s->bytes;
        backlog_quota_on_publish(s->topic); /* may disconnect producers */
    }
    send_release(s);
}

void producer_handle_send(conn_t *c, const Pulsar__Proto__CommandSend *cmd, const uint8_t *stored,
                          size_t stored_len, qbuf_t *stored_buf, bool checksum_ok)
{
    producer_t *p = qmap64_get(c->producers, cmd->producer_id);
    if (!p || !p->ready || !p->topic) {
        conn_close(c, "SEND for a producer that is not ready");
        return;
    }
    if (!stored || stored_len == 0) {
        conn_close(c, "SEND without a payload");
        return;
    }
    if (!checksum_ok) {
        Pulsar__Proto__CommandSendError e = PULSAR__PROTO__COMMAND_SEND_ERROR__INIT;
        e.producer_id = cmd->producer_id;
        e.sequence_id = cmd->sequence_id;
        e.error = PULSAR__PROTO__SERVER_ERROR__ChecksumError;
        e.message = "Checksum failed on the broker";
        pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
        out.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR;
        out.send_error = &e;
        log_warn("producer", "%s: checksum mismatch on %s seq %llu", c->peer, p->topic->name,
                 (unsigned long long)cmd->sequence_id);
        conn_send_command(c, &out);
        return;
    }
    topic_t *t = p->topic;
    send_ctx_t *s = malloc(sizeof *s);
    qbuf_t *entry = stored_buf && stored == stored_buf->data && stored_len == stored_buf->len
                        ? qbuf_ref(stored_buf)
                        : qbuf_copy(stored, stored_len);
    if (!s || !entry) {
        free(s);
        qbuf_unref(entry);
        conn_close(c, "out of memory for a message");
        return;
    }
    char *dedup_name = NULL;
    if (broker_send_gate(c, p, cmd, stored, stored_len, &dedup_name) != 0) {
        free(s); /* answered: a duplicate, in doubt, or the topic terminated (dedup.c) */
        qbuf_unref(entry);
        return;
    }
    *s = (send_ctx_t){.start_us = clock_mono_us(),
                      .conn = c,
                      .producer_id = cmd->producer_id,
                      .sequence_id = cmd->sequence_id,
                      .highest_sequence_id = cmd->has_highest_sequence_id &&
                                                     cmd->highest_sequence_id > cmd->sequence_id
                                                 ? cmd->highest_sequence_id
                                                 : cmd->sequence_id,
                      .bytes = (uint32_t)stored_len,
                      .num_messages = cmd->has_num_messages ? cmd->num_messages : 1,
                      .topic = t,
                      .dedup_name = dedup_name};
    conn_ref(c);
    t->busy++;
    c->pending_publish_bytes += stored_len;
    if (c->pending_publish_bytes > c->broker->cfg.max_pending_publish_bytes)
        conn_pause_reads(c);
    broker_publish_bytes_add(c, stored_len);
    limits_on_publish(t, c, s->num_messages, (int64_t)stored_len,
                      s->start_us); /* may pause reads */
    t->last_publish_ms = 0;
    if (!t->ml) {
        topic_publish_non_persistent(t, entry, s->num_messages);
        send_receipt(c, s, 0, (int64_t)cmd->sequence_id);
        topic_traffic_moving(s->topic);
        s->topic->msg_in += (uint64_t)s->num_messages;
        s->topic->bytes_in += s->bytes;
        qbuf_unref(entry);
        send_release(s);
        return;
    }
    int rc = ml_add(t->ml, entry, send_add_done, s);
    qbuf_unref(entry);
    if (rc < 0) {
        log_error("producer", "%s: append to %s refused: %s", c->peer, t->name, q_strerror(rc));
        send_release(s);
        conn_close(c, "append refused; the client will resend");
    }
}

void producer_handle_close(conn_t *c, const Pulsar__Proto__CommandCloseProducer *cmd)
{
    producer_t *p = qmap64_get(c->producers, cmd->producer_id);
    if (p)
        producer_destroy(p);
    conn_send_success(c, cmd->request_id);
}
