/*
 * admin_messages.c — REST admin routes that find messages in a persistent
 * topic or move a subscription by publish time:
 *
 *   POST T/subscription/{s}/resetcursor/{ts}    reset to the first entry published after ts
 *   POST T/subscription/{s}/expireMessages/{n}  acknowledge what is older than n seconds
 *   POST T/all_subscription/expireMessages/{n}  the same for every subscription
 *   GET  T/examinemessage?initialPosition=earliest|latest&messagePosition=N
 *   GET  T/messageid/{ts}                       first entry published at or after ts
 *   GET  T/ledger/{ledgerId}/entry/{entryId}    one entry by id
 *
 * Messages are answered as peek does (admin_reply_message: the payload as
 * stored, X-Pulsar-* headers). Statuses and reasons follow Pulsar's
 * PersistentTopicsBase. The work is done by server/broker_admin_msgs.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "server/partitions.h"
#include "common/errors.h"
#include "server/broker_admin.h"

/* A whole number in [min, INT64_MAX] from text: 0, or -1. */
static int parse_i64(const char *s, int64_t min, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

static bool persistent_only(admin_req_t *req)
{
    if (req->tn.domain == TOPIC_PERSISTENT)
        return true;
    admin_reply_error(req, 405, "This operation is not supported on non-persistent topics");
    return false;
}

static void sub_done(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Subscription not found");
    else if (rc == QE_BUSY)
        admin_reply_error(req, 409, "Another operation on subscription %s is in progress; retry",
                          admin_param(req, "subscription"));
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

/* ------------------------------------------------------- reset by time -- */

static void reset_time_ready(admin_req_t *req)
{
    int rc = broker_admin_reset_cursor_time(
        req->a->broker, req->tn.full, admin_param(req, "subscription"), req->i64, sub_done, req);
    if (rc < 0)
        sub_done(rc, req);
}

/* req->tn is parsed (admin_subscription_reset). */
void admin_subscription_reset_time(admin_req_t *req)
{
    if (!persistent_only(req))
        return;
    if (parse_i64(admin_param(req, "ts"), 0, &req->i64) < 0) {
        admin_reply_error(req, 400, "The timestamp must be a whole number of milliseconds");
        return;
    }
    admin_with_loaded_topic(req, reset_time_ready);
}

/* -------------------------------------------------------------- expiry -- */

static void expire_ready(admin_req_t *req)
{
    const char *sub = req->flag ? NULL : admin_param(req, "subscription");
    int rc = broker_admin_expire(req->a->broker, req->tn.full, sub, req->i64, sub_done, req);
    if (rc < 0)
        sub_done(rc, req);
}

static void expire_start(admin_req_t *req, bool all)
{
    if (!admin_req_topic(req) || !persistent_only(req))
        return;
    if (parse_i64(admin_param(req, "seconds"), 0, &req->i64) < 0) {
        admin_reply_error(req, 400, "The expiry time must be a whole number of seconds");
        return;
    }
    req->flag = all;
    admin_with_loaded_topic(req, expire_ready);
}

void admin_subscription_expire(admin_req_t *req)
{
    expire_start(req, false);
}

void admin_expire_all_subscriptions(admin_req_t *req)
{
    expire_start(req, true);
}

/* Pulsar refuses some message lookups on a partitioned topic (only its
 * partitions hold messages): 405 with Pulsar's reason, else load and go on. */
static void partitions_checked(int rc, int partitions, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == 0 && partitions > 0) {
        admin_reply_error(req, 405, "%s", req->partitioned_refusal);
        return;
    }
    admin_with_loaded_topic(req, req->next);
}

static void unless_partitioned(admin_req_t *req, const char *refusal, admin_handler_fn next)
{
    req->partitioned_refusal = refusal;
    req->next = next;
    int rc = broker_partitions_lookup(req->a->broker, &req->tn, false, partitions_checked, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

/* ------------------------------------------------------------ examine -- */

static void examine_ready(admin_req_t *req)
{
    int rc = broker_admin_examine(req->a->broker, req->tn.full, req->flag, req->i64,
                                  admin_reply_message, req);
    if (rc == QE_NO_ENTRY)
        admin_reply_error(req, 412, "Could not examine messages due to the total message is zero");
    else if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

void admin_examine_message(admin_req_t *req)
{
    if (!admin_req_topic(req) || !persistent_only(req))
        return;
    const char *url = http_request_url(req->ex);
    char pos[32] = "latest", n[32] = "1";
    http_query_get(url, "initialPosition", pos, sizeof pos);
    http_query_get(url, "messagePosition", n, sizeof n);
    if (strcmp(pos, "latest") != 0 && strcmp(pos, "earliest") != 0) {
        admin_reply_error(req, 412, "initialPosition %s is not valid (latest or earliest)", pos);
        return;
    }
    if (parse_i64(n, 1, &req->i64) < 0) {
        admin_reply_error(req, 412, "Invalid message position %s (a whole number >= 1)", n);
        return;
    }
    req->flag = strcmp(pos, "latest") == 0;
    unless_partitioned(req,
                       "Examine messages on a partitioned topic is not allowed, please try "
                       "examine message on specific topic partition",
                       examine_ready);
}

/* ---------------------------------------------------------- id by time -- */

static void id_found(int rc, ml_pos_t pos, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == QE_NOT_FOUND || (rc == 0 && pos.ledger_id == INT64_MAX)) {
        admin_reply_error(req, 404, "Message ID not found");
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    admin_reply_json(req, 200,
                     json_pack("{sIsIsi}", "ledgerId", (json_int_t)pos.ledger_id, "entryId",
                               (json_int_t)pos.entry_id, "partitionIndex", req->tn.partition));
}

static void id_by_time_ready(admin_req_t *req)
{
    int rc = broker_admin_find_by_time(req->a->broker, req->tn.full, req->i64, true, id_found, req);
    if (rc < 0)
        id_found(rc, ML_POS_LATEST, req);
}

void admin_message_id_by_time(admin_req_t *req)
{
    if (!admin_req_topic(req) || !persistent_only(req))
        return;
    if (parse_i64(admin_param(req, "ts"), 0, &req->i64) < 0) {
        admin_reply_error(req, 400, "The timestamp must be a whole number of milliseconds");
        return;
    }
    unless_partitioned(req,
                       "Get message ID by timestamp on a partitioned topic is not allowed, "
                       "please try get message ID by timestamp on specific topic partition",
                       id_by_time_ready);
}

/* ---------------------------------------------------------- by message id -- */

static void by_id_ready(admin_req_t *req)
{
    ml_pos_t pos = {req->i64, 0};
    int64_t entry;
    if (parse_i64(admin_param(req, "entryId"), 0, &entry) < 0) {
        admin_reply_error(req, 400, "The entry id must be a whole number");
        return;
    }
    pos.entry_id = entry;
    int rc = broker_admin_read_message(req->a->broker, req->tn.full, pos, admin_reply_message, req);
    if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Message not found");
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

void admin_message_by_id(admin_req_t *req)
{
    if (!admin_req_topic(req) || !persistent_only(req))
        return;
    if (parse_i64(admin_param(req, "ledgerId"), 0, &req->i64) < 0) {
        admin_reply_error(req, 400, "The ledger id must be a whole number");
        return;
    }
    admin_with_loaded_topic(req, by_id_ready);
}
