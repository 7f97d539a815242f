/*
 * lookup.c — LOOKUP, PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE: where a
 * topic lives, how many partitions it has, which topics a namespace holds.
 *
 * Partitioned topics are recorded at /admin/partitioned-topics/<tenant>/<ns>/
 * <domain>/<local> with the value {"partitions": N}, as Pulsar records them.
 * With allowAutoTopicCreationType=partitioned, asking for the metadata of an
 * unknown topic creates it with defaultNumPartitions partitions (unless the
 * client asked not to create it).
 *
 * This broker owns every topic (standalone): LOOKUP answers Connect to its
 * own service URL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/codec/commands.h"
#include "server/partitions.h"
#include "server/broker_security.h"

static void send_or_log(conn_t *c, int rc, qbuf_t *buf)
{
    if (rc < 0) {
        log_error("lookup", "%s: cannot encode a response: %s", c->peer, q_strerror(rc));
        return;
    }
    conn_send_buf(c, buf, 0, buf->len);
}

void lookup_handle_lookup(conn_t *c, const Pulsar__Proto__CommandLookupTopic *cmd)
{
    topic_name_t tn;
    qbuf_t *buf = NULL;
    int rc;
    if (!cmd->topic || topic_name_parse(cmd->topic, &tn) < 0)
        rc =
            cmd_encode_lookup_failed(cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName,
                                     "Invalid topic name", &buf);
    else
        rc = cmd_encode_lookup_response(
            cmd->request_id, PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Connect,
            c->broker->service_url, broker_service_url_tls(c->broker), true, &buf);
    send_or_log(c, rc, buf);
}

/* --------------------------------------------------- partitioned metadata -- */

typedef struct pm_ctx {
    conn_t *conn;
    uint64_t request_id;
} pm_ctx_t;

static void pm_done(int rc, int partitions, void *arg)
{
    pm_ctx_t *ctx = arg;
    conn_t *c = ctx->conn;
    if (c->state != CONN_CLOSED) {
        qbuf_t *buf = NULL;
        int erc = rc < 0 ? cmd_encode_partitioned_metadata_failed(
                               ctx->request_id, broker_server_error(rc), q_strerror(rc), &buf)
                         : cmd_encode_partitioned_metadata_response(
                               ctx->request_id, (uint32_t)(partitions > 0 ? partitions : 0), &buf);
        send_or_log(c, erc, buf);
    }
    conn_unref(c);
    free(ctx);
}

void lookup_handle_partitioned_metadata(conn_t *c,
                                        const Pulsar__Proto__CommandPartitionedTopicMetadata *cmd)
{
    topic_name_t tn;
    if (!cmd->topic || topic_name_parse(cmd->topic, &tn) < 0) {
        qbuf_t *buf = NULL;
        int rc = cmd_encode_partitioned_metadata_failed(
            cmd->request_id, PULSAR__PROTO__SERVER_ERROR__InvalidTopicName, "Invalid topic name",
            &buf);
        send_or_log(c, rc, buf);
        return;
    }
    pm_ctx_t *ctx = malloc(sizeof *ctx);
    if (!ctx) {
        conn_close(c, "out of memory");
        return;
    }
    *ctx = (pm_ctx_t){c, cmd->request_id};
    conn_ref(c);
    bool may_create =
        !cmd->has_metadata_auto_creation_enabled || cmd->metadata_auto_creation_enabled;
    int rc = broker_partitions_lookup(c->broker, &tn, may_create, pm_done, ctx);
    if (rc < 0)
        pm_done(rc, 0, ctx);
}

/* ------------------------------------------------------- namespace topics -- */

typedef struct ns_ctx {
    conn_t *conn;
    uint64_t request_id;
    int mode;
    char ns[2 * TOPIC_NAME_MAX + 2];
} ns_ctx_t;

static void ns_listed(int rc, const char *const *topics, size_t n, void *arg)
{
    ns_ctx_t *ctx = arg;
    conn_t *c = ctx->conn;
    if (c->state != CONN_CLOSED) {
        qbuf_t *buf = NULL;
        int erc;
        if (rc < 0) {
            conn_send_error(c, ctx->request_id, broker_server_error(rc), q_strerror(rc));
        } else {
            erc = cmd_encode_get_topics_of_namespace_response(ctx->request_id, topics, n, false,
                                                              NULL, true, &buf);
            send_or_log(c, erc, buf);
        }
    }
    conn_unref(c);
    free(ctx);
}

void lookup_handle_topics_of_namespace(conn_t *c,
                                       const Pulsar__Proto__CommandGetTopicsOfNamespace *cmd)
{
    const char *ns = cmd->namespace_;
    const char *slash = ns ? strchr(ns, '/') : NULL;
    if (!slash || strchr(slash + 1, '/') || !topic_name_valid_entity(ns, (size_t)(slash - ns)) ||
        !topic_name_valid_entity(slash + 1, strlen(slash + 1))) {
        conn_send_error(c, cmd->request_id, PULSAR__PROTO__SERVER_ERROR__MetadataError,
                        "Invalid namespace name");
        return;
    }
    ns_ctx_t *ctx = malloc(sizeof *ctx);
    if (!ctx) {
        conn_close(c, "out of memory");
        return;
    }
    ctx->conn = c;
    ctx->request_id = cmd->request_id;
    ctx->mode = cmd->has_mode ? (int)cmd->mode
                              : PULSAR__PROTO__COMMAND_GET_TOPICS_OF_NAMESPACE__MODE__PERSISTENT;
    snprintf(ctx->ns, sizeof ctx->ns, "%s", ns);
    conn_ref(c);
    int domains =
        ctx->mode == PULSAR__PROTO__COMMAND_GET_TOPICS_OF_NAMESPACE__MODE__PERSISTENT
            ? BROKER_DOMAIN_PERSISTENT
        : ctx->mode == PULSAR__PROTO__COMMAND_GET_TOPICS_OF_NAMESPACE__MODE__NON_PERSISTENT
            ? BROKER_DOMAIN_NON_PERSISTENT
            : BROKER_DOMAIN_PERSISTENT | BROKER_DOMAIN_NON_PERSISTENT;
    int rc = broker_namespace_topics(c->broker, ctx->ns, domains, ns_listed, ctx);
    if (rc < 0)
        ns_listed(rc, NULL, 0, ctx);
}
