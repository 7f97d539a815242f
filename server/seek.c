/*
 * seek.c — SEEK (by message id or publish time) and GET_LAST_MESSAGE_ID.
 *
 * SEEK, as Pulsar does it: the subscription's consumers are disconnected
 * (CLOSE_CONSUMER; clients reconnect and resubscribe), the cursor is reset so
 * the target is the next entry read and everything before it counts as
 * acknowledged, then SUCCESS answers the request. A reader's (non-durable)
 * subscription goes away with its consumer; the reader resubscribes from the
 * sought position, so nothing is reset on the broker.
 *
 * Seek by publish time finds the first entry whose publish_time >= t by a
 * binary search over the topic's entries (log2(n) single-entry reads); publish
 * times are not strictly monotonic across producers, so the result is the
 * position a binary search lands on, as in Pulsar.
 */
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/compaction.h"
#include "server/broker_int.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"

typedef struct seek_ctx {
    conn_t *conn; /* one reference */
    topic_t *topic;
    char *subscription;
    uint64_t request_id;
    /* by time: the ledgers and the search window [lo, hi) over their entries */
    ml_ledger_info_t *ledgers;
    size_t ledgers_count;
    uint64_t lo, hi;
    uint64_t target_ms;
} seek_ctx_t;

static void seek_ctx_free(seek_ctx_t *ctx)
{
    ctx->topic->busy--;
    conn_unref(ctx->conn);
    free(ctx->ledgers);
    free(ctx->subscription);
    free(ctx);
}

static void seek_reply(seek_ctx_t *ctx, int rc)
{
    if (ctx->conn->state != CONN_CLOSED) {
        if (rc < 0)
            conn_send_error(ctx->conn, ctx->request_id, broker_server_error(rc), q_strerror(rc));
        else
            conn_send_success(ctx->conn, ctx->request_id);
    }
    seek_ctx_free(ctx);
}

static void seek_reset_done(int rc, void *arg)
{
    seek_ctx_t *ctx = arg;
    subscription_t *s = qmap_get(ctx->topic->subscriptions, ctx->subscription);
    if (s) {
        subscription_replay_clear(s);
        qmap64_free(s->redelivery_counts);
        s->redelivery_counts = qmap64_new();
    }
    seek_reply(ctx, rc);
}

/* Disconnects every consumer of subscription `name`; returns whether the
 * subscription survives (a non-durable one goes with its last consumer). */
static bool disconnect_consumers(topic_t *t, const char *name)
{
    subscription_t *s = qmap_get(t->subscriptions, name);
    /* Readers come back to the reset cursor (the C++ client resubscribes with
     * its old start id after a seek by time): keep it for them. */
    if (s && !s->durable)
        subscription_keep_orphan(s, 30.0);
    while ((s = qmap_get(t->subscriptions, name)) && s->consumers_count > 0) {
        consumer_t *cons = s->consumers[s->consumers_count - 1];
        qbuf_t *buf = NULL;
        if (cmd_encode_close_consumer(cons->consumer_id, 0, NULL, NULL, &buf) == 0)
            conn_send_buf(cons->conn, buf, 0, buf->len);
        consumer_destroy(cons, false);
    }
    return s != NULL;
}

static void seek_apply(seek_ctx_t *ctx, ml_pos_t pos)
{
    subscription_t *s = qmap_get(ctx->topic->subscriptions, ctx->subscription);
    if (!s) {
        seek_reply(ctx, QE_NOT_FOUND);
        return;
    }
    if (!disconnect_consumers(ctx->topic, ctx->subscription) ||
        !(s = qmap_get(ctx->topic->subscriptions, ctx->subscription)) || !s->cursor) {
        seek_reply(ctx, 0);
        return;
    }
    int rc = ml_cursor_reset(s->cursor, pos, seek_reset_done, ctx);
    if (rc < 0)
        seek_reply(ctx, rc);
}

/* ------------------------------------------------------------- by time -- */

static ml_pos_t flat_position(const seek_ctx_t *ctx, uint64_t idx)
{
    for (size_t i = 0; i < ctx->ledgers_count; i++) {
        uint64_t n = (uint64_t)ctx->ledgers[i].entries;
        if (idx < n)
            return (ml_pos_t){ctx->ledgers[i].ledger_id, (int64_t)idx};
        idx -= n;
    }
    return ML_POS_LATEST;
}

static void seek_time_step(seek_ctx_t *ctx);

static void seek_time_probe_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    seek_ctx_t *ctx = arg;
    if (rc < 0 || n == 0) {
        seek_reply(ctx, rc < 0 ? rc : QE_NO_ENTRY);
        return;
    }
    uint64_t mid = ctx->lo + (ctx->hi - ctx->lo) / 2;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    uint64_t t = 0;
    if (frame_parse_metadata(entries[0].data->data, entries[0].data->len, &md, &off) == 0) {
        t = md->publish_time;
        frame_metadata_free(md);
    }
    if (t >= ctx->target_ms)
        ctx->hi = mid;
    else
        ctx->lo = mid + 1;
    seek_time_step(ctx);
}

static void seek_time_step(seek_ctx_t *ctx)
{
    if (ctx->lo >= ctx->hi) {
        seek_apply(ctx, flat_position(ctx, ctx->lo));
        return;
    }
    uint64_t mid = ctx->lo + (ctx->hi - ctx->lo) / 2;
    int rc =
        ml_read(ctx->topic->ml, flat_position(ctx, mid), 1, 1u << 30, seek_time_probe_done, ctx);
    if (rc < 0)
        seek_reply(ctx, rc);
}

static int seek_time_start(seek_ctx_t *ctx)
{
    managed_ledger_t *ml = ctx->topic->ml;
    size_t count = ml_get_ledgers(ml, NULL, 0);
    ctx->ledgers = calloc(count ? count : 1, sizeof *ctx->ledgers);
    if (!ctx->ledgers)
        return -ENOMEM;
    ctx->ledgers_count = ml_get_ledgers(ml, ctx->ledgers, count);
    if (ctx->ledgers_count > count)
        ctx->ledgers_count = count;
    /* Entries before the first readable one are gone (trimmed). */
    ml_pos_t first = ml_first_position(ml);
    uint64_t total = 0, skip = 0;
    for (size_t i = 0; i < ctx->ledgers_count; i++) {
        if (ctx->ledgers[i].ledger_id < first.ledger_id)
            skip += (uint64_t)ctx->ledgers[i].entries;
        total += (uint64_t)ctx->ledgers[i].entries;
    }
    ctx->lo = skip;
    ctx->hi = total;
    seek_time_step(ctx);
    return 0;
}

void consumer_handle_seek(conn_t *c, const Pulsar__Proto__CommandSeek *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Consumer not found");
        return;
    }
    if (!cmd->message_id && !cmd->has_message_publish_time) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Message id and publish time were not present");
        return;
    }
    subscription_t *s = cons->sub;
    if (!s->topic->ml) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__NotAllowedError,
                        "Seek is not supported on non-persistent topics");
        return;
    }
    seek_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx || !(ctx->subscription = strdup(s->name))) {
        free(ctx);
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                        "out of memory");
        return;
    }
    ctx->conn = c;
    ctx->topic = s->topic;
    ctx->request_id = cmd->request_id;
    conn_ref(c);
    s->topic->busy++;
    if (cmd->message_id) {
        int64_t l = (int64_t)cmd->message_id->ledgerid, e = (int64_t)cmd->message_id->entryid;
        ml_pos_t pos = (l < 0 || e < 0)                     ? ml_first_position(s->topic->ml)
                       : (l == INT64_MAX && e == INT64_MAX) ? ML_POS_LATEST
                                                            : (ml_pos_t){l, e};
        seek_apply(ctx, pos);
        return;
    }
    ctx->target_ms = cmd->message_publish_time;
    int rc = seek_time_start(ctx);
    if (rc < 0)
        seek_reply(ctx, rc);
}

/* ------------------------------------------------------ last message id -- */

typedef struct last_id_ctx {
    conn_t *conn;
    topic_t *topic;
    uint64_t request_id;
    ml_pos_t mark_delete;
} last_id_ctx_t;

static void last_id_reply(last_id_ctx_t *ctx, ml_pos_t last, int32_t batch_index)
{
    if (ctx->conn->state != CONN_CLOSED) {
        int32_t part = ctx->topic->partition;
        cmd_message_id_t l = {last.ledger_id, last.entry_id, part, batch_index};
        cmd_message_id_t md = {ctx->mark_delete.ledger_id, ctx->mark_delete.entry_id, part, -1};
        qbuf_t *buf = NULL;
        if (cmd_encode_get_last_message_id_response(ctx->request_id, &l, &md, &buf) == 0)
            conn_send_buf(ctx->conn, buf, 0, buf->len);
    }
    ctx->topic->busy--;
    conn_unref(ctx->conn);
    free(ctx);
}

static void last_id_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    last_id_ctx_t *ctx = arg;
    if (rc < 0 || n == 0) {
        if (ctx->conn->state != CONN_CLOSED)
            conn_send_error(ctx->conn, ctx->request_id,
                            broker_server_error(rc < 0 ? rc : QE_NO_ENTRY),
                            "cannot read the last entry");
        ctx->topic->busy--;
        conn_unref(ctx->conn);
        free(ctx);
        return;
    }
    int32_t batch_index = -1;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(entries[0].data->data, entries[0].data->len, &md, &off) == 0) {
        if (md->has_num_messages_in_batch && md->num_messages_in_batch > 1)
            batch_index = md->num_messages_in_batch - 1;
        frame_metadata_free(md);
    }
    last_id_reply(ctx, entries[0].pos, batch_index);
}

void consumer_handle_get_last_message_id(conn_t *c,
                                         const Pulsar__Proto__CommandGetLastMessageId *cmd)
{
    consumer_t *cons = qmap64_get(c->consumers, cmd->consumer_id);
    if (!cons || !cons->sub) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Consumer not found");
        return;
    }
    topic_t *t = cons->sub->topic;
    last_id_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                        "out of memory");
        return;
    }
    ctx->conn = c;
    ctx->topic = t;
    ctx->request_id = cmd->request_id;
    ctx->mark_delete =
        cons->sub->cursor ? ml_cursor_mark_delete_pos(cons->sub->cursor) : (ml_pos_t){-1, -1};
    conn_ref(c);
    t->busy++;
    ml_pos_t last = t->ml ? ml_last_confirmed(t->ml) : (ml_pos_t){-1, -1};
    int32_t compacted_index;
    if (compaction_last_message_id(cons->sub, &last, &compacted_index)) {
        last_id_reply(ctx, last, compacted_index); /* the compacted view's last (compaction.c) */
        return;
    }
    if (last.entry_id < 0) {
        last_id_reply(ctx, (ml_pos_t){-1, -1}, -1);
        return;
    }
    int rc = ml_read(t->ml, last, 1, 1u << 30, last_id_read_done, ctx);
    if (rc < 0)
        last_id_read_done(rc, NULL, 0, ctx);
}
