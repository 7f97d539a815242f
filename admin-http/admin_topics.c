/*
 * admin_topics.c — topics in the REST admin API (persistent and
 * non-persistent alike: the route's constant names the domain), partitioned
 * topics, stats, subscriptions, and the HTTP lookup the clients built with an
 * http:// service URL use.
 *
 * Topic names come from three URL-decoded path parameters and are parsed
 * with topic_name_parse before anything else (412 "Topic name is not valid"
 * otherwise). State is read and changed only through server/broker_admin.h
 * and server/partitions.h. Stats load the topic when it exists and is not
 * loaded (as Pulsar does); rates come from the admin metrics sampler.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin-http/admin_int.h"
#include "admin-http/admin_policies.h"
#include "common/errors.h"
#include "common/json_out.h"
#include "common/log.h"
#include "server/broker_admin.h"
#include "server/partitions.h"
#include "server/schema.h"

#define ADMIN_LEDGERS_SHOWN 1024

/* ----------------------------------------------------------------- shared -- */

static bool topic_from_params(admin_req_t *req, const char *domain)
{
    char full[3 * TOPIC_NAME_MAX + 32];
    const char *t = admin_param(req, "tenant"), *ns = admin_param(req, "namespace"),
               *local = admin_param(req, "topic");
    if (!admin_name_valid(t) || !admin_name_valid(ns)) {
        admin_reply_error(req, 412, "Namespace name is not valid");
        return false;
    }
    if (strcmp(domain, "persistent") != 0 && strcmp(domain, "non-persistent") != 0) {
        admin_reply_error(req, 412, "Topic domain '%.32s' is not valid", domain);
        return false;
    }
    snprintf(full, sizeof full, "%s://%s/%s/%s", domain, t, ns, local);
    if (topic_name_parse(full, &req->tn) < 0) {
        admin_reply_error(req, 412, "Topic name is not valid");
        return false;
    }
    return true;
}

static bool req_topic(admin_req_t *req)
{
    return topic_from_params(req, req->route->arg);
}

static void iso_time(int64_t ms, char *buf, size_t cap)
{
    if (ms <= 0) {
        snprintf(buf, cap, "%s", "");
        return;
    }
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

/* ---------------------------------------------------------------- listing -- */

/* Written as text at once: at 100,000 topics a jansson array and its dump
 * held the loop ~40 ms. */
static void topics_listed(int rc, const char *const *topics, size_t n, void *arg)
{
    admin_req_t *req = arg;
    if (rc < 0) {
        admin_reply_rc(req, rc, "topics");
        return;
    }
    json_out_t o;
    jo_init(&o, 16 + n * 64);
    jo_arr(&o);
    for (size_t i = 0; i < n; i++)
        jo_str(&o, topics[i]);
    jo_end(&o);
    size_t len = 0;
    int err = 0;
    char *text = jo_finish(&o, &len, &err);
    if (!text) {
        if (err == QE_INVALID) /* jansson would have dropped the name */
            admin_reply_error(req, 500, "A topic name is not valid UTF-8");
        else
            admin_reply_rc(req, err, "topics");
        return;
    }
    admin_reply_raw(req, 200, "application/json", text, len);
}

static void topics_list_checked(admin_req_t *req)
{
    char ns[2 * TOPIC_NAME_MAX + 2];
    snprintf(ns, sizeof ns, "%s/%s", admin_param(req, "tenant"), admin_param(req, "namespace"));
    int domains = req->n; /* set from ?mode= by admin_namespace_topics */
    if (!domains)
        domains = strcmp(req->route->arg, "persistent") == 0 ? BROKER_DOMAIN_PERSISTENT
                                                             : BROKER_DOMAIN_NON_PERSISTENT;
    int rc = broker_namespace_topics(req->a->broker, ns, domains, topics_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "topics");
}

void admin_topics_list(admin_req_t *req)
{
    admin_require_namespace(req, topics_list_checked);
}

void admin_namespace_topics(admin_req_t *req)
{
    char mode[32] = "PERSISTENT";
    http_query_get(http_request_url(req->ex), "mode", mode, sizeof mode);
    if (strcmp(mode, "PERSISTENT") == 0)
        req->n = BROKER_DOMAIN_PERSISTENT;
    else if (strcmp(mode, "NON_PERSISTENT") == 0)
        req->n = BROKER_DOMAIN_NON_PERSISTENT;
    else if (strcmp(mode, "ALL") == 0)
        req->n = BROKER_DOMAIN_PERSISTENT | BROKER_DOMAIN_NON_PERSISTENT;
    else {
        admin_reply_error(req, 400, "Unknown mode '%.32s' (PERSISTENT, NON_PERSISTENT, ALL)", mode);
        return;
    }
    admin_require_namespace(req, topics_list_checked);
}

static void partitioned_listed(int rc, const char *const *topics, size_t n, void *arg)
{
    topics_listed(rc, topics, n, arg);
}

static void partitioned_list_checked(admin_req_t *req)
{
    char ns[2 * TOPIC_NAME_MAX + 2];
    snprintf(ns, sizeof ns, "%s/%s", admin_param(req, "tenant"), admin_param(req, "namespace"));
    topic_domain_t d =
        strcmp(req->route->arg, "persistent") == 0 ? TOPIC_PERSISTENT : TOPIC_NON_PERSISTENT;
    int rc = broker_admin_partitioned_list(req->a->broker, ns, d, partitioned_listed, req);
    if (rc < 0)
        admin_reply_rc(req, rc, "topics");
}

void admin_partitioned_list(admin_req_t *req)
{
    admin_require_namespace(req, partitioned_list_checked);
}

/* ------------------------------------------------------- create and delete -- */

static void topic_created(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_EXISTS)
        admin_reply_error(req, 409, "This topic already exists");
    else if (rc == QE_TOO_LARGE) /* the namespace's topic quota (server/limits.h) */
        admin_reply_error(req, 412, BROKER_TOPIC_QUOTA_REASON);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

static void topic_create_checked(admin_req_t *req)
{
    int rc = broker_admin_topic_create(req->a->broker, &req->tn, topic_created, req);
    if (rc < 0)
        topic_created(rc, req);
}

void admin_topic_create(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (req->tn.partition >= 0) {
        admin_reply_error(req, 412, "Cannot create a topic named like a partition");
        return;
    }
    admin_require_namespace(req, topic_create_checked);
}

static void topic_deleted(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
    else if (rc == QE_BUSY)
        admin_reply_error(req, 412, "Topic has active producers/subscriptions");
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else {
        schema_registry_delete_topic(req->a->broker, req->tn.full); /* admin_schemas.c */
        admin_reply_empty(req, 204);
    }
}

void admin_topic_delete(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    bool force = http_query_bool(http_request_url(req->ex), "force", false);
    int rc = broker_admin_topic_delete(req->a->broker, &req->tn, force, topic_deleted, req);
    if (rc < 0)
        topic_deleted(rc, req);
}

/* ------------------------------------------------------------- partitions -- */

/* The body of PUT/POST .../partitions: an integer. -1 (answered) otherwise. */
static int partitions_body(admin_req_t *req)
{
    if (admin_parse_body(req, false) < 0)
        return -1;
    if (!json_is_integer(req->body)) {
        admin_reply_error(req, 400, "The number of partitions must be an integer");
        return -1;
    }
    json_int_t n = json_integer_value(req->body);
    if (n <= 0) {
        admin_reply_error(req, 406, "Number of partitions should be more than 0");
        return -1;
    }
    if (n > BROKER_PARTITIONS_MAX) {
        admin_reply_error(req, 406, "Number of partitions should be less than or equal to %d",
                          BROKER_PARTITIONS_MAX);
        return -1;
    }
    return (int)n;
}

static void partitions_created(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_EXISTS)
        admin_reply_error(req, 409, "This topic already exists");
    else if (rc == QE_TOO_LARGE) /* the namespace's topic quota (server/limits.h) */
        admin_reply_error(req, 412, BROKER_TOPIC_QUOTA_REASON);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

static void partitions_create_checked(admin_req_t *req)
{
    int rc = broker_partitions_create(req->a->broker, &req->tn, req->n, partitions_created, req);
    if (rc < 0)
        partitions_created(rc, req);
}

void admin_partitions_create(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (req->tn.partition >= 0) {
        admin_reply_error(req, 412, "Cannot create a partitioned topic named like a partition");
        return;
    }
    req->n = partitions_body(req);
    if (req->n < 0)
        return;
    admin_require_namespace(req, partitions_create_checked);
}

static void partitions_updated(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_INVALID)
        admin_reply_error(req, 422, "Number of partitions can only be increased");
    else if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Partitioned topic %s does not exist", req->tn.full);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

void admin_partitions_update(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    int n = partitions_body(req);
    if (n < 0)
        return;
    int rc = broker_admin_partitions_update(req->a->broker, &req->tn, n, partitions_updated, req);
    if (rc < 0)
        partitions_updated(rc, req);
}

static void partitions_got(int rc, int partitions, void *arg)
{
    admin_req_t *req = arg;
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    admin_reply_json(req, 200, json_pack("{si}", "partitions", partitions));
}

void admin_partitions_get(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    bool create = http_query_bool(http_request_url(req->ex), "checkAllowAutoCreation", false);
    int rc = broker_partitions_lookup(req->a->broker, &req->tn, create, partitions_got, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

static void partitions_deleted(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Partitioned topic does not exist");
    else if (rc == QE_BUSY)
        admin_reply_error(req, 412, "Topic has active producers/subscriptions");
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else {
        schema_registry_delete_topic(req->a->broker, req->tn.full);
        admin_reply_empty(req, 204);
    }
}

void admin_partitions_delete(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    bool force = http_query_bool(http_request_url(req->ex), "force", false);
    int rc =
        broker_admin_partitioned_delete(req->a->broker, &req->tn, force, partitions_deleted, req);
    if (rc < 0)
        partitions_deleted(rc, req);
}

/* ------------------------------------------------------------------ stats -- */

typedef struct stats_build {
    admin_req_t *req;
    json_t *root;
    json_t *current_sub; /* the consumers array being filled */
    const char *topic;
} stats_build_t;

static void stats_publisher(const broker_admin_producer_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    char since[40];
    iso_time(v->connected_since_ms, since, sizeof since);
    static const char *const modes[] = {"Shared", "Exclusive", "WaitForExclusive",
                                        "ExclusiveWithFencing"};
    const char *mode = v->access_mode >= 0 && v->access_mode < 4 ? modes[v->access_mode] : "Shared";
    double avg = v->msg_in ? (double)v->bytes_in / (double)v->msg_in : 0.0;
    json_array_append_new(
        json_object_get(sb->root, "publishers"),
        json_pack("{sfsfsfsIsssssssssss{}}", "msgRateIn", v->rate_in, "msgThroughputIn",
                  v->throughput_in, "averageMsgSize", avg, "producerId", (json_int_t)v->producer_id,
                  "producerName", v->name, "accessMode", mode, "address", v->address,
                  "clientVersion", v->client_version, "connectedSince", since, "metadata"));
}

static void stats_consumer(const broker_admin_consumer_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    char since[40];
    iso_time(v->connected_since_ms, since, sizeof since);
    json_array_append_new(
        sb->current_sub,
        json_pack("{sfsfsIsIsfsssIsIsIsbsssssss{}}", "msgRateOut", v->rate_out, "msgThroughputOut",
                  v->throughput_out, "bytesOutCounter", (json_int_t)v->bytes_out, "msgOutCounter",
                  (json_int_t)v->msg_out, "msgRateRedeliver", v->rate_redeliver, "consumerName",
                  v->name, "availablePermits", (json_int_t)v->available_permits, "unackedMessages",
                  (json_int_t)v->unacked_messages, "avgMessagesPerEntry",
                  (json_int_t)v->avg_msgs_per_entry, "blockedConsumerOnUnackedMsgs",
                  (int)v->blocked_on_unacked, "address", v->address, "connectedSince", since,
                  "clientVersion", v->client_version, "metadata"));
}

static void stats_subscription(const broker_admin_subscription_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    double rate = 0, tput = 0;
    admin_metrics_sub_rates(sb->req->a->metrics, sb->topic, v->name, &rate, &tput);
    json_t *consumers = json_array();
    json_t *s =
        json_pack("{sfsfsIsIsfsIsIsbsIsssbsbsfsIso}", "msgRateOut", rate, "msgThroughputOut", tput,
                  "bytesOutCounter", (json_int_t)v->bytes_out, "msgOutCounter",
                  (json_int_t)v->msg_out, "msgRateRedeliver", v->rate_redeliver, "msgBacklog",
                  (json_int_t)v->backlog_entries, "msgBacklogNoDelayed",
                  (json_int_t)(v->backlog_entries > v->delayed_messages
                                   ? v->backlog_entries - v->delayed_messages
                                   : 0),
                  "blockedSubscriptionOnUnackedMsgs", (int)v->blocked_on_unacked, "unackedMessages",
                  (json_int_t)v->unacked_messages, "type", v->type, "isDurable", v->durable,
                  "isReplicated", 0, "msgRateExpired", v->rate_expired, "msgDelayed",
                  (json_int_t)v->delayed_messages, "consumers", consumers);
    json_object_set_new(s, "totalMsgExpired", json_integer((json_int_t)v->msg_expired));
    json_t *meta = v->meta_json ? json_loads(v->meta_json, 0, NULL) : NULL;
    json_t *props = json_object_get(meta, "properties");
    json_object_set_new(s, "subscriptionProperties",
                        json_is_object(props) ? json_incref(props) : json_object());
    json_object_set_new(s, "isReplicated",
                        json_boolean(json_is_true(json_object_get(meta, "replicated"))));
    json_decref(meta);
    sb->current_sub = consumers;
    broker_admin_consumers(sb->req->a->broker, sb->topic, v->name, stats_consumer, sb);
    json_object_set_new(json_object_get(sb->root, "subscriptions"), v->name, s);
}

static void stats_topic(const broker_admin_topic_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    double rin = 0, tin = 0, rout = 0, tout = 0;
    admin_metrics_topic_rates(sb->req->a->metrics, v->name, &rin, &tin, &rout, &tout);
    uint64_t storage = v->has_ledger ? v->ml.size_bytes : 0;
    uint64_t entries = v->has_ledger ? v->ml.entries : 0;
    /* backlogSize in bytes: the slowest durable subscription's, estimated from
     * the ledgers' sizes (backlog_quota.c; Pulsar's getEstimatedBacklogSize). */
    uint64_t backlog_bytes = v->has_ledger ? v->backlog_size_bytes : 0;
    (void)entries;
    sb->root = json_pack(
        "{sfsfsfsfsIsIsIsIsfsbsIsIsIs[]sIs{}s{}sssI}", "msgRateIn", rin, "msgThroughputIn", tin,
        "msgRateOut", rout, "msgThroughputOut", tout, "bytesInCounter", (json_int_t)v->bytes_in,
        "msgInCounter", (json_int_t)v->msg_in, "bytesOutCounter", (json_int_t)v->bytes_out,
        "msgOutCounter", (json_int_t)v->msg_out, "averageMsgSize", rin > 0 ? tin / rin : 0.0,
        "msgChunkPublished", 0, "storageSize", (json_int_t)storage, "backlogSize",
        (json_int_t)backlog_bytes, "offloadedStorageSize", (json_int_t)0, "publishers",
        "waitingPublishers", (json_int_t)0, "subscriptions", "replication", "deduplicationStatus",
        v->dedup_enabled ? "Enabled" : "Disabled", "nonContiguousDeletedMessagesRanges",
        (json_int_t)0);
    json_object_set_new(sb->root, "backlogQuotaLimitSize",
                        json_integer((json_int_t)v->backlog_quota_limit_size));
    json_object_set_new(sb->root, "backlogQuotaLimitTime",
                        json_integer((json_int_t)v->backlog_quota_limit_time_s));
    json_object_set_new(sb->root, "oldestBacklogMessageAgeSeconds",
                        json_integer((json_int_t)v->oldest_backlog_age_s));
    sb->topic = v->name;
    broker_admin_producers(sb->req->a->broker, v->name, stats_publisher, sb);
    broker_admin_subscriptions(sb->req->a->broker, v->name, stats_subscription, sb);
}

/* The TopicStats JSON of a loaded topic (new), or NULL. */
static json_t *topic_stats_json(admin_req_t *req, const char *topic)
{
    stats_build_t sb = {.req = req};
    if (broker_admin_topic(req->a->broker, topic, stats_topic, &sb) < 0)
        return NULL;
    return sb.root;
}

typedef void (*loaded_fn)(admin_req_t *req);

static void stats_loaded(int rc, void *arg);

/* Loads req->tn (if it exists), then calls the route's next step. */
static void with_loaded_topic(admin_req_t *req, loaded_fn next)
{
    req->next = next;
    if (req->tn.domain == TOPIC_NON_PERSISTENT) {
        /* A non-persistent topic exists only while loaded: never create it here. */
        stats_loaded(broker_admin_topic(req->a->broker, req->tn.full, NULL, NULL) == QE_NOT_FOUND
                         ? QE_NOT_FOUND
                         : 0,
                     req);
        return;
    }
    int rc = broker_admin_topic_load(req->a->broker, req->tn.full, false, stats_loaded, req);
    if (rc < 0)
        stats_loaded(rc, req);
}

static void stats_loaded(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
        return;
    }
    if (rc == QE_BUSY) {
        admin_reply_error(req, 503, "Topic %s is being loaded or unloaded; retry", req->tn.full);
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    req->next(req);
}

static void stats_ready(admin_req_t *req)
{
    json_t *j = topic_stats_json(req, req->tn.full);
    if (!j) {
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
        return;
    }
    admin_reply_json(req, 200, j);
}

void admin_topic_stats(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, stats_ready);
}

static void pos_text(ml_pos_t p, char *buf, size_t cap)
{
    snprintf(buf, cap, "%lld:%lld", (long long)p.ledger_id, (long long)p.entry_id);
}

static void internal_cursor(const broker_admin_subscription_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    if (!v->has_cursor)
        return;
    char md[48], rp[48];
    pos_text(v->mark_delete, md, sizeof md);
    pos_text(v->read_pos, rp, sizeof rp);
    char *ranges = malloc(64 * 1024);
    if (ranges) {
        ranges[0] = '\0';
        broker_admin_cursor_ranges(sb->req->a->broker, sb->topic, v->name, ranges, 64 * 1024);
    }
    json_object_set_new(
        json_object_get(sb->root, "cursors"), v->name,
        json_pack("{sssssbsisIsIsIsssssIsIs{}}", "markDeletePosition", md, "readPosition", rp,
                  "waitingReadOp", 0, "pendingReadOps", 0, "messagesConsumedCounter",
                  (json_int_t)v->msg_out, "cursorLedger", (json_int_t)-1, "cursorLedgerLastEntry",
                  (json_int_t)-1, "individuallyDeletedMessages", ranges ? ranges : "[]", "state",
                  "Open", "numberOfEntriesSinceFirstNotAckedMessage",
                  (json_int_t)v->backlog_entries, "totalNonContiguousDeletedMessagesRange",
                  (json_int_t)0, "properties"));
    free(ranges);
}

static void internal_topic(const broker_admin_topic_view_t *v, void *arg)
{
    stats_build_t *sb = arg;
    char lce[48];
    pos_text(v->last_confirmed, lce, sizeof lce);
    sb->topic = v->name;
    sb->root =
        json_pack("{sIsIsIsIsIsssisisssss[]s{}s[]s{sIsIsIsbsb}}", "entriesAddedCounter",
                  (json_int_t)v->ml.entries_added, "numberOfEntries", (json_int_t)v->ml.entries,
                  "totalSize", (json_int_t)v->ml.size_bytes, "currentLedgerEntries",
                  (json_int_t)v->ml.current_ledger_entries, "currentLedgerSize",
                  (json_int_t)v->ml.current_ledger_size_bytes, "lastLedgerCreatedTimestamp", "",
                  "waitingCursorsCount", 0, "pendingAddEntriesCount", 0, "lastConfirmedEntry", lce,
                  "state", v->has_ledger ? "LedgerOpened" : "None", "ledgers", "cursors",
                  "schemaLedgers", "compactedLedger", "ledgerId", (json_int_t)-1, "entries",
                  (json_int_t)-1, "size", (json_int_t)-1, "offloaded", 0, "underReplicated", 0);
    int64_t cl; /* the compacted ledger (server/compaction.c) */
    ml_pos_t horizon;
    uint64_t centries;
    json_t *cj = json_object_get(sb->root, "compactedLedger");
    if (cj &&
        broker_admin_compaction_info(sb->req->a->broker, v->name, &cl, &horizon, &centries) == 0 &&
        cl >= 0) {
        json_object_set_new(cj, "ledgerId", json_integer(cl));
        json_object_set_new(cj, "entries", json_integer((json_int_t)centries));
    }
}

static void internal_ready(admin_req_t *req)
{
    stats_build_t sb = {.req = req};
    if (broker_admin_topic(req->a->broker, req->tn.full, internal_topic, &sb) < 0 || !sb.root) {
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
        return;
    }
    ml_ledger_info_t *ls = calloc(ADMIN_LEDGERS_SHOWN, sizeof *ls);
    size_t count = 0;
    if (ls &&
        broker_admin_ledgers(req->a->broker, req->tn.full, ls, ADMIN_LEDGERS_SHOWN, &count) == 0) {
        json_t *arr = json_object_get(sb.root, "ledgers");
        for (size_t i = 0; i < count && i < ADMIN_LEDGERS_SHOWN; i++)
            json_array_append_new(
                arr, json_pack("{sIsIsIsbsb}", "ledgerId", (json_int_t)ls[i].ledger_id, "entries",
                               (json_int_t)ls[i].entries, "size", (json_int_t)ls[i].size_bytes,
                               "offloaded", 0, "underReplicated", 0));
    }
    free(ls);
    broker_admin_subscriptions(req->a->broker, req->tn.full, internal_cursor, &sb);
    admin_reply_json(req, 200, sb.root);
}

void admin_topic_internal_stats(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (req->tn.domain != TOPIC_PERSISTENT) {
        admin_reply_error(req, 405, "Internal stats exist for persistent topics only");
        return;
    }
    with_loaded_topic(req, internal_ready);
}

/* partitioned-stats: partition count, then each partition loaded in turn
 * (req->pending = next index), then the sum. */
static void pstats_next(admin_req_t *req);

static void pstats_loaded(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0 && rc != QE_NOT_FOUND) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    req->pending++;
    pstats_next(req);
}

static void sum_field(json_t *into, json_t *from, const char *name)
{
    json_t *a = json_object_get(into, name), *b = json_object_get(from, name);
    if (json_is_integer(a) && json_is_integer(b))
        json_integer_set(a, json_integer_value(a) + json_integer_value(b));
    else if (json_is_real(a) && json_is_real(b))
        json_real_set(a, json_real_value(a) + json_real_value(b));
}

static void pstats_finish(admin_req_t *req)
{
    static const char *const summed[] = {"msgRateIn",
                                         "msgThroughputIn",
                                         "msgRateOut",
                                         "msgThroughputOut",
                                         "bytesInCounter",
                                         "msgInCounter",
                                         "bytesOutCounter",
                                         "msgOutCounter",
                                         "storageSize",
                                         "backlogSize",
                                         NULL};
    json_t *total =
        json_pack("{sfsfsfsfsIsIsIsIsfsIsIs[]s{}s{}s{si}s{}}", "msgRateIn", 0.0, "msgThroughputIn",
                  0.0, "msgRateOut", 0.0, "msgThroughputOut", 0.0, "bytesInCounter", (json_int_t)0,
                  "msgInCounter", (json_int_t)0, "bytesOutCounter", (json_int_t)0, "msgOutCounter",
                  (json_int_t)0, "averageMsgSize", 0.0, "storageSize", (json_int_t)0, "backlogSize",
                  (json_int_t)0, "publishers", "subscriptions", "replication", "metadata",
                  "partitions", req->n, "partitions");
    bool per_partition = http_query_bool(http_request_url(req->ex), "perPartition", true);
    for (int i = 0; i < req->n; i++) {
        char name[TOPIC_NAME_MAX + 32];
        if (topic_name_partition(&req->tn, i, name, sizeof name) < 0)
            continue;
        json_t *p = topic_stats_json(req, name);
        if (!p)
            continue;
        for (size_t k = 0; summed[k]; k++)
            sum_field(total, p, summed[k]);
        const char *sname;
        json_t *sv;
        json_object_foreach(json_object_get(p, "subscriptions"), sname, sv)
        {
            json_t *have = json_object_get(json_object_get(total, "subscriptions"), sname);
            if (!have) {
                json_object_set(json_object_get(total, "subscriptions"), sname, sv);
                continue;
            }
            static const char *const sub_summed[] = {"msgRateOut",       "msgThroughputOut",
                                                     "msgBacklog",       "unackedMessages",
                                                     "msgOutCounter",    "bytesOutCounter",
                                                     "msgRateRedeliver", "msgRateExpired",
                                                     "totalMsgExpired",  NULL};
            for (size_t k = 0; sub_summed[k]; k++)
                sum_field(have, sv, sub_summed[k]);
            json_array_extend(json_object_get(have, "consumers"), json_object_get(sv, "consumers"));
        }
        json_array_extend(json_object_get(total, "publishers"), json_object_get(p, "publishers"));
        if (per_partition)
            json_object_set(json_object_get(total, "partitions"), name, p);
        json_decref(p);
    }
    double rin = json_real_value(json_object_get(total, "msgRateIn"));
    json_object_set_new(
        total, "averageMsgSize",
        json_real(rin > 0 ? json_real_value(json_object_get(total, "msgThroughputIn")) / rin
                          : 0.0));
    admin_reply_json(req, 200, total);
}

static void pstats_next(admin_req_t *req)
{
    while (req->pending < req->n) {
        char name[TOPIC_NAME_MAX + 32];
        if (topic_name_partition(&req->tn, req->pending, name, sizeof name) < 0) {
            admin_reply_error(req, 412, "Topic name is not valid");
            return;
        }
        if (req->tn.domain != TOPIC_PERSISTENT) {
            req->pending++;
            continue;
        }
        int rc = broker_admin_topic_load(req->a->broker, name, false, pstats_loaded, req);
        if (rc == 0)
            return;
        req->pending++;
    }
    pstats_finish(req);
}

static void pstats_partitions(int rc, int partitions, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    if (partitions <= 0) {
        admin_reply_error(req, 404, "Partitioned Topic not found: %s is not a partitioned topic",
                          req->tn.full);
        return;
    }
    req->n = partitions;
    req->pending = 0;
    pstats_next(req);
}

void admin_partitioned_stats(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    int rc = broker_partitions_lookup(req->a->broker, &req->tn, false, pstats_partitions, req);
    if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

static void sub_name(const broker_admin_subscription_view_t *v, void *arg)
{
    json_array_append_new(arg, json_string(v->name));
}

static void subscriptions_ready(admin_req_t *req)
{
    json_t *arr = json_array();
    broker_admin_subscriptions(req->a->broker, req->tn.full, sub_name, arr);
    admin_reply_json(req, 200, arr);
}

void admin_topic_subscriptions(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, subscriptions_ready);
}

static void last_id_view(const broker_admin_topic_view_t *v, void *arg)
{
    admin_req_t *req = arg;
    req->doc = json_pack("{sIsIsi}", "ledgerId", (json_int_t)v->last_confirmed.ledger_id, "entryId",
                         (json_int_t)v->last_confirmed.entry_id, "partitionIndex", v->partition);
}

static void last_id_ready(admin_req_t *req)
{
    broker_admin_topic(req->a->broker, req->tn.full, last_id_view, req);
    json_t *j = req->doc;
    req->doc = NULL;
    if (!j) {
        admin_reply_error(req, 404, "Topic %s not found", req->tn.full);
        return;
    }
    admin_reply_json(req, 200, j);
}

void admin_last_message_id(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, last_id_ready);
}

/* ------------------------------------------------------- topic operations -- */

static void unloaded(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_BUSY)
        admin_reply_error(req, 412, "Topic has active producers/subscriptions");
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

void admin_topic_unload(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    int rc = broker_admin_topic_unload(req->a->broker, req->tn.full, unloaded, req);
    if (rc < 0)
        unloaded(rc, req);
}

/* Pulsar answers the last message id: {ledgerId, entryId, partitionIndex: -1}. */
static void terminated(int rc, ml_pos_t last, void *arg)
{
    admin_req_t *req = arg;
    if (admin_req_stopping(req))
        return;
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    admin_reply_json(req, 200,
                     json_pack("{sIsIsi}", "ledgerId", (json_int_t)last.ledger_id, "entryId",
                               (json_int_t)last.entry_id, "partitionIndex", -1));
}

static void terminate_ready(admin_req_t *req)
{
    int rc = broker_admin_topic_terminate(req->a->broker, req->tn.full, terminated, req);
    if (rc < 0)
        terminated(rc, ML_POS_EARLIEST, req);
}

void admin_topic_terminate(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (req->tn.domain != TOPIC_PERSISTENT) {
        admin_reply_error(req, 405, "Termination of a non-persistent topic is not allowed");
        return;
    }
    with_loaded_topic(req, terminate_ready);
}

/* Compaction (server/compaction.c): PUT starts a run, GET is Pulsar's
 * LongRunningProcessStatus {status, lastError}. */
static void compaction_status_ready(admin_req_t *req)
{
    static const char *const names[] = {"NOT_RUN", "RUNNING", "SUCCESS", "ERROR"};
    int status = BROKER_COMPACTION_NOT_RUN;
    char err[256];
    int rc = broker_admin_compaction_status(req->a->broker, req->tn.full, &status, err, sizeof err);
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    admin_reply_json(req, 200, json_pack("{ssss}", "status", names[status & 3], "lastError", err));
}

void admin_compaction_get(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, compaction_status_ready);
}

static void compaction_put_ready(admin_req_t *req)
{
    int rc = broker_admin_compaction_trigger(req->a->broker, req->tn.full);
    if (rc == QE_EXISTS)
        admin_reply_error(req, 409, "Compaction already in progress");
    else if (rc == QE_INVALID)
        admin_reply_error(req, 405, "Compaction of a non-persistent topic is not allowed");
    else if (rc == QE_BUSY)
        admin_reply_error(req, 503, "The compacted view of %s is loading; retry", req->tn.full);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

void admin_compaction_put(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (req->tn.domain != TOPIC_PERSISTENT) {
        admin_reply_error(req, 405, "Compaction of a non-persistent topic is not allowed");
        return;
    }
    with_loaded_topic(req, compaction_put_ready);
}

static void sub_op_done(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_EXISTS)
        admin_reply_error(req, 409, "Subscription already exists for topic");
    else if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Subscription %s not found for topic %s",
                          admin_param(req, "subscription"), req->tn.full);
    else if (rc == QE_BUSY)
        admin_reply_error(req, 412, "Subscription has active connected consumers");
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
    else
        admin_reply_empty(req, 204);
}

/* A message id body {ledgerId, entryId} into pos; false (answered) if bad. */
static bool body_position(admin_req_t *req, ml_pos_t *pos, ml_pos_t def)
{
    *pos = def;
    if (json_is_null(req->body))
        return true;
    json_t *l = json_object_get(req->body, "ledgerId"), *e = json_object_get(req->body, "entryId");
    if (!json_is_object(req->body) || !json_is_integer(l) || !json_is_integer(e)) {
        admin_reply_error(req, 400, "Expected a message id {\"ledgerId\": L, \"entryId\": E}");
        return false;
    }
    pos->ledger_id = json_integer_value(l);
    pos->entry_id = json_integer_value(e);
    if (pos->ledger_id == INT64_MAX || pos->ledger_id < 0)
        *pos = pos->ledger_id < 0 ? ML_POS_EARLIEST : ML_POS_LATEST;
    return true;
}

static void sub_create_ready(admin_req_t *req)
{
    ml_pos_t pos;
    if (!body_position(req, &pos, ML_POS_LATEST))
        return;
    int rc = broker_admin_subscription_create(
        req->a->broker, req->tn.full, admin_param(req, "subscription"), pos, sub_op_done, req);
    if (rc < 0)
        sub_op_done(rc, req);
}

void admin_subscription_create(admin_req_t *req)
{
    if (!req_topic(req) || admin_parse_body(req, true) < 0)
        return;
    if (req->tn.domain != TOPIC_PERSISTENT) {
        admin_reply_error(req, 405, "Subscriptions of non-persistent topics exist while used");
        return;
    }
    with_loaded_topic(req, sub_create_ready);
}

static void sub_delete_ready(admin_req_t *req)
{
    int rc = broker_admin_subscription_delete(req->a->broker, req->tn.full,
                                              admin_param(req, "subscription"), sub_op_done, req);
    if (rc < 0)
        sub_op_done(rc, req);
}

void admin_subscription_delete(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, sub_delete_ready);
}

static void sub_skip_ready(admin_req_t *req)
{
    const char *n = http_route_param(&req->params, "n");
    int64_t count = -1;
    if (n) {
        char *end;
        errno = 0;
        long long v = strtoll(n, &end, 10);
        if (errno || *end || v < 0) {
            admin_reply_error(req, 400, "Number of messages to skip must be a whole number");
            return;
        }
        count = v;
    }
    int rc = broker_admin_skip(req->a->broker, req->tn.full, admin_param(req, "subscription"),
                               count, sub_op_done, req);
    if (rc < 0)
        sub_op_done(rc, req);
}

void admin_subscription_skip(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, sub_skip_ready);
}

static void sub_reset_ready(admin_req_t *req)
{
    ml_pos_t pos;
    if (!body_position(req, &pos, ML_POS_EARLIEST))
        return;
    int rc = broker_admin_reset_cursor(req->a->broker, req->tn.full,
                                       admin_param(req, "subscription"), pos, sub_op_done, req);
    if (rc < 0)
        sub_op_done(rc, req);
}

void admin_subscription_reset(admin_req_t *req)
{
    if (!req_topic(req))
        return;
    if (http_route_param(&req->params, "ts")) {
        admin_subscription_reset_time(req); /* admin_messages.c */
        return;
    }
    if (admin_parse_body(req, false) < 0)
        return;
    with_loaded_topic(req, sub_reset_ready);
}

static void peeked(int rc, const broker_admin_message_t *m, void *arg)
{
    admin_req_t *req = arg;
    if (rc == QE_NOT_FOUND) {
        admin_reply_error(req, 404, "No message found at this position");
        return;
    }
    if (rc < 0) {
        admin_reply_rc(req, rc, req->tn.full);
        return;
    }
    char v[64];
    snprintf(v, sizeof v, "%lld:%lld", (long long)m->pos.ledger_id, (long long)m->pos.entry_id);
    http_response_header(req->ex, "X-Pulsar-Message-ID", v);
    iso_time(m->publish_time_ms, v, sizeof v);
    http_response_header(req->ex, "X-Pulsar-publish-time", v);
    if (m->num_messages > 1 || m->num_messages == 0) {
        snprintf(v, sizeof v, "%d", m->num_messages);
        http_response_header(req->ex, "X-Pulsar-num-batch-message", v);
    }
    for (size_t i = 0; i < m->properties; i++) {
        char name[300];
        snprintf(name, sizeof name, "X-Pulsar-PROPERTY-%.256s", m->property_keys[i]);
        http_response_header(req->ex, name, m->property_values[i]); /* refused if CR/LF */
    }
    char *body = m->payload_len ? malloc(m->payload_len) : NULL;
    if (body)
        memcpy(body, m->payload, m->payload_len);
    admin_reply_raw(req, 200, "application/octet-stream", body, body ? m->payload_len : 0);
}

static void sub_peek_ready(admin_req_t *req)
{
    char *end;
    const char *n = admin_param(req, "n");
    long v = strtol(n, &end, 10);
    if (*end || v < 1 || v > 10000) {
        admin_reply_error(req, 412, "Message position must be between 1 and 10000");
        return;
    }
    int rc = broker_admin_peek(req->a->broker, req->tn.full, admin_param(req, "subscription"),
                               (int)v, peeked, req);
    if (rc == QE_NOT_FOUND)
        admin_reply_error(req, 404, "Subscription %s not found for topic %s, or no message",
                          admin_param(req, "subscription"), req->tn.full);
    else if (rc < 0)
        admin_reply_rc(req, rc, req->tn.full);
}

void admin_subscription_peek(admin_req_t *req)
{
    if (req_topic(req))
        with_loaded_topic(req, sub_peek_ready);
}

/* ----------------------------------------------------------------- lookup -- */

void admin_lookup(admin_req_t *req)
{
    if (!topic_from_params(req, admin_param(req, "domain")))
        return;
    const broker_config_t *bc = broker_config(req->a->broker);
    char burl[256];
    snprintf(burl, sizeof burl, "pulsar://%s:%d", bc->advertised_address, bc->broker_service_port);
    admin_reply_json(req, 200,
                     json_pack("{ssssssssss}", "brokerUrl", burl, "brokerUrlTls", "", "httpUrl",
                               req->a->web_url, "httpUrlTls", "", "nativeUrl", burl));
}

/* ------------------------------------------------- shared with other files -- */

bool admin_req_topic(admin_req_t *req)
{
    return req_topic(req);
}

void admin_with_loaded_topic(admin_req_t *req, admin_handler_fn next)
{
    with_loaded_topic(req, next);
}

void admin_reply_message(int rc, const broker_admin_message_t *m, void *arg)
{
    peeked(rc, m, arg);
}
