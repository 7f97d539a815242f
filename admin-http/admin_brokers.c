/*
 * admin_brokers.c — /admin/v2/brokers/... (this broker is the only one of
 * its cluster: the list, the leader and the owner of every topic are itself),
 * the health check, version, effective configuration, and GET /metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/admin_int.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/broker_admin.h"

#ifndef QUIRE_VERSION
#define QUIRE_VERSION "0.1.0"
#endif

static void reply_text(admin_req_t *req, int status, const char *text)
{
    char *s = strdup(text);
    admin_reply_raw(req, status, "text/plain", s, s ? strlen(s) : 0);
}

static void broker_id(const admin_req_t *req, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%d", broker_config(req->a->broker)->advertised_address,
             req->a->web_port);
}

void admin_brokers_list(admin_req_t *req)
{
    if (strcmp(admin_param(req, "cluster"), req->a->cluster) != 0) {
        admin_reply_error(req, 404, "Cluster does not exist");
        return;
    }
    char id[256];
    broker_id(req, id, sizeof id);
    admin_reply_json(req, 200, json_pack("[s]", id));
}

void admin_broker_leader(admin_req_t *req)
{
    char id[256];
    broker_id(req, id, sizeof id);
    admin_reply_json(req, 200, json_pack("{ssss}", "serviceUrl", req->a->web_url, "brokerId", id));
}

void admin_broker_ready(admin_req_t *req)
{
    reply_text(req, 200, "ok");
}

static void health_done(int rc, void *arg)
{
    admin_req_t *req = arg;
    if (rc < 0) {
        admin_reply_error(req, 500, "Health check failed: %s", q_strerror(rc));
        return;
    }
    reply_text(req, 200, "ok");
}

void admin_broker_health(admin_req_t *req)
{
    int rc = broker_admin_health_check(req->a->broker, req->a->web_port, health_done, req);
    if (rc < 0)
        health_done(rc, req);
}

void admin_broker_version(admin_req_t *req)
{
    reply_text(req, 200, QUIRE_VERSION);
}

static void config_put(const char *key, const char *value, void *arg)
{
    json_object_set_new(arg, key, json_string(value));
}

/* The effective configuration: every key given (file and command line), then
 * the values the broker actually runs with. */
void admin_broker_config(admin_req_t *req)
{
    const char *what = req->route->arg;
    if (strcmp(what, "names") == 0) {
        admin_reply_json(req, 200, json_array()); /* no dynamic configuration yet */
        return;
    }
    if (strcmp(what, "values") == 0) {
        admin_reply_json(req, 200, json_object());
        return;
    }
    json_t *j = json_object();
    qconfig_foreach(req->a->conf, config_put, j);
    const broker_config_t *bc = broker_config(req->a->broker);
    char v[64];
#define SET_INT(k, x)                                                                              \
    do {                                                                                           \
        snprintf(v, sizeof v, "%lld", (long long)(x));                                             \
        json_object_set_new(j, k, json_string(v));                                                 \
    } while (0)
    json_object_set_new(j, "bindAddress", json_string(bc->bind_address));
    json_object_set_new(j, "advertisedAddress", json_string(bc->advertised_address));
    json_object_set_new(j, "clusterName", json_string(bc->cluster_name));
    SET_INT("brokerServicePort", bc->broker_service_port);
    SET_INT("webServicePort", req->a->web_port);
    json_object_set_new(j, "allowAutoTopicCreation",
                        json_string(bc->allow_auto_topic_creation ? "true" : "false"));
    json_object_set_new(
        j, "allowAutoTopicCreationType",
        json_string(bc->auto_topic_creation_partitioned ? "partitioned" : "non-partitioned"));
    SET_INT("defaultNumPartitions", bc->default_num_partitions);
    SET_INT("maxMessageSize", bc->max_message_size);
    SET_INT("keepAliveIntervalSeconds", bc->keep_alive_interval_s);
    SET_INT("brokerMaxConnections", bc->max_connections);
    SET_INT("maxPendingPublishRequestsBytesPerConnection", bc->max_pending_publish_bytes);
    SET_INT("dispatcherMaxReadBatchSize", bc->dispatcher_max_read_batch);
    SET_INT("managedLedgerDefaultEnsembleSize", bc->ml.quorum.ensemble);
    SET_INT("managedLedgerDefaultWriteQuorum", bc->ml.quorum.write_quorum);
    SET_INT("managedLedgerDefaultAckQuorum", bc->ml.quorum.ack_quorum);
    SET_INT("managedLedgerMaxEntriesPerLedger", bc->ml.max_entries_per_ledger);
    SET_INT("managedLedgerMaxSizePerLedgerMbytes", bc->ml.max_ledger_size_bytes >> 20);
    SET_INT("managedLedgerMaxLedgerRolloverTimeMinutes", bc->ml.max_ledger_rollover_time_s / 60);
#undef SET_INT
    admin_reply_json(req, 200, j);
}

void admin_metrics_get(admin_req_t *req)
{
    if (!req->a->metrics) {
        admin_reply_error(req, 503, "The service is stopping");
        return;
    }
    admin_metrics_serve(req->a->metrics, req);
}
