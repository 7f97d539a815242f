/*
 * broker.c — the broker object: configuration, the listening socket, the
 * error table, deferral, and shutdown.
 *
 * Shutdown order: stop accepting; close every connection (producers and
 * consumers detach; unacknowledged messages stay unacknowledged in the
 * cursors); then close each topic's cursors (persisting their positions) and
 * managed ledger (sealing the current ledger, so the next start needs no
 * recovery); then the caller's callback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/compaction.h"
#include "server/dedup.h"
#include "server/limits_int.h"
#include "server/maintenance.h"
#include "server/ns_policies.h"
#include "server/schema.h"
#include "server/broker_security.h"

/* ------------------------------------------------------------- config -- */

typedef struct int_key {
    const char *key;
    int64_t def, min, max;
} int_key_t;

static int get_int(const qconfig_t *q, const int_key_t *k, int64_t *out, char *err, size_t len)
{
    int rc = qconfig_get_int(q, k->key, k->def, k->min, k->max, out);
    if (rc < 0)
        snprintf(err, len, "%s: expected a whole number in [%lld, %lld], got '%s'", k->key,
                 (long long)k->min, (long long)k->max, qconfig_get(q, k->key, ""));
    return rc;
}

static int get_bool(const qconfig_t *q, const char *key, bool def, bool *out, char *err, size_t len)
{
    int rc = qconfig_get_bool(q, key, def, out);
    if (rc < 0)
        snprintf(err, len, "%s: expected true or false, got '%s'", key, qconfig_get(q, key, ""));
    return rc;
}

static int get_str(const qconfig_t *q, const char *key, const char *def, char *out, size_t cap,
                   char *err, size_t len)
{
    const char *v = qconfig_get(q, key, def);
    if (!v || !*v)
        v = def;
    if (strlen(v) >= cap) {
        snprintf(err, len, "%s: longer than %zu bytes", key, cap - 1);
        return QE_INVALID;
    }
    snprintf(out, cap, "%s", v);
    return 0;
}

int broker_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len)
{
    memset(cfg, 0, sizeof *cfg);
    ml_config_defaults(&cfg->ml);
    int64_t v[24];
    const int_key_t keys[] = {
        {"brokerServicePort", 6650, 0, 65535},
        {"webServicePort", 8080, 0, 65535},
        {"defaultNumPartitions", 1, 1, 10000},
        {"maxMessageSize", 5242880, 1024, 100 << 20},
        {"keepAliveIntervalSeconds", 30, 1, 3600},
        {"brokerMaxConnections", 0, 0, 1000000},
        {"maxPendingPublishRequestsBytesPerConnection", 32 << 20, 1 << 20, 1 << 30},
        {"dispatcherMaxReadBatchSize", 100, 1, 10000},
        {"dispatcherMaxReadSizeBytes", 5 << 20, 1024, 100 << 20},
        {"maxMessagePublishBufferSizeInMB", 32, 0, 1 << 20},
        {"managedLedgerDefaultEnsembleSize", 1, 1, 64},
        {"managedLedgerDefaultWriteQuorum", 1, 1, 64},
        {"managedLedgerDefaultAckQuorum", 1, 1, 64},
        {"managedLedgerMaxEntriesPerLedger", 50000, 1, (1 << POS_ENTRY_BITS) - 1},
        {"managedLedgerMaxSizePerLedgerMbytes", 2048, 1, 1 << 20},
        {"managedLedgerMaxLedgerRolloverTimeMinutes", 240, 1, 1 << 20},
        {"managedLedgerMinLedgerRolloverTimeMinutes", 10, 0, 1 << 20},
        {"defaultRetentionTimeInMinutes", 0, -1, INT32_MAX},
        {"defaultRetentionSizeInMB", 0, -1, INT32_MAX},
        {"dispatcherReadFailureBackoffInitialTimeInMs", 15000, 1, 3600000},
        {"dispatcherReadFailureBackoffMaxTimeInMs", 60000, 1, 3600000},
        {"statsUpdateFrequencyInSecs", 60, 1, 3600},
    };
    size_t nkeys = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < nkeys; i++)
        if (get_int(q, &keys[i], &v[i], err, err_len) < 0)
            return QE_INVALID;
    cfg->broker_service_port = (int)v[0];
    cfg->web_service_port = (int)v[1];
    cfg->default_num_partitions = (int)v[2];
    cfg->max_message_size = (uint32_t)v[3];
    cfg->keep_alive_interval_s = (uint32_t)v[4];
    cfg->max_connections = (uint32_t)v[5];
    cfg->max_pending_publish_bytes = (uint32_t)v[6];
    cfg->dispatcher_max_read_batch = (uint32_t)v[7];
    cfg->dispatcher_max_read_bytes = (uint32_t)v[8];
    cfg->max_publish_buffer_bytes = (uint64_t)v[9] << 20;
    cfg->ml.quorum = (ledger_quorum_t){(int)v[10], (int)v[11], (int)v[12]};
    cfg->ml.max_entries_per_ledger = (uint64_t)v[13];
    cfg->ml.max_ledger_size_bytes = (uint64_t)v[14] << 20;
    cfg->ml.max_ledger_rollover_time_s = (uint32_t)v[15] * 60;
    cfg->ml.min_ledger_rollover_time_s = (uint32_t)v[16] * 60;
    cfg->ml.entries_per_ledger_limit = (1u << POS_ENTRY_BITS) - 1; /* pos_pack */
    cfg->default_retention_time_min = v[17];
    cfg->default_retention_size_mb = v[18];
    cfg->read_failure_backoff_ms = (uint32_t)v[19];
    cfg->read_failure_backoff_max_ms = (uint32_t)(v[20] > v[19] ? v[20] : v[19]);
    cfg->stats_window_s = (uint32_t)v[21];
    if (!(v[12] <= v[11] && v[11] <= v[10])) {
        snprintf(err, err_len,
                 "managedLedgerDefault{AckQuorum <= WriteQuorum <= EnsembleSize} does not hold: "
                 "%lld, %lld, %lld",
                 (long long)v[12], (long long)v[11], (long long)v[10]);
        return QE_INVALID;
    }
    if (get_bool(q, "allowAutoTopicCreation", true, &cfg->allow_auto_topic_creation, err, err_len) <
        0)
        return QE_INVALID;
    const char *type = qconfig_get(q, "allowAutoTopicCreationType", "non-partitioned");
    if (strcmp(type, "partitioned") == 0)
        cfg->auto_topic_creation_partitioned = true;
    else if (strcmp(type, "non-partitioned") != 0) {
        snprintf(err, err_len,
                 "allowAutoTopicCreationType: expected partitioned or non-partitioned, got '%s'",
                 type);
        return QE_INVALID;
    }
    if (get_str(q, "bindAddress", "127.0.0.1", cfg->bind_address, sizeof cfg->bind_address, err,
                err_len) < 0 ||
        get_str(q, "advertisedAddress", cfg->bind_address, cfg->advertised_address,
                sizeof cfg->advertised_address, err, err_len) < 0 ||
        get_str(q, "clusterName", "standalone", cfg->cluster_name, sizeof cfg->cluster_name, err,
                err_len) < 0)
        return QE_INVALID;
    /* The cluster's name is a path segment of its metadata and namespaces and a
     * label value in /metrics: the characters Pulsar allows its named entities. */
    if (!topic_name_valid_entity(cfg->cluster_name, strlen(cfg->cluster_name))) {
        snprintf(err, err_len,
                 "clusterName: '%s' is not a valid name (letters, digits and -_=:. only)",
                 cfg->cluster_name);
        return QE_INVALID;
    }
    if (strcmp(cfg->advertised_address, "0.0.0.0") == 0)
        snprintf(cfg->advertised_address, sizeof cfg->advertised_address, "127.0.0.1");
    if (broker_limits_config_load(q, &cfg->limits, err, err_len) < 0) /* limits.c */
        return QE_INVALID;
    if (broker_delivery_config_load(q, &cfg->delivery, err, err_len) < 0) /* delivery_config.c */
        return QE_INVALID;
    if (dedup_config_load(q, cfg, err, err_len) < 0) /* dedup.c */
        return QE_INVALID;
    if (compaction_config_load(q, cfg, err, err_len) < 0) /* compaction.c */
        return QE_INVALID;
    return 0;
}

/* ------------------------------------------------------------ errors -- */

pb_error_t broker_server_error(int rc)
{
    switch (rc) {
    case QE_INCOMPATIBLE: /* schema.c: a refused or malformed schema */
        return PULSAR__PROTO__SERVER_ERROR__IncompatibleSchema;
    case QE_NOT_FOUND:
        return PULSAR__PROTO__SERVER_ERROR__TopicNotFound;
    case QE_INVALID:
        return PULSAR__PROTO__SERVER_ERROR__InvalidTopicName;
    case QE_TOO_LARGE:
        return PULSAR__PROTO__SERVER_ERROR__NotAllowedError;
    case QE_FENCED:
        return PULSAR__PROTO__SERVER_ERROR__ProducerFenced;
    case QE_CORRUPT:
    case QE_NO_LEDGER:
    case QE_NO_ENTRY:
        return PULSAR__PROTO__SERVER_ERROR__PersistenceError;
    case QE_BAD_VERSION:
    case QE_EXISTS:
        return PULSAR__PROTO__SERVER_ERROR__MetadataError;
    default:
        /* Transient: clients retry ServiceNotReady. */
        return PULSAR__PROTO__SERVER_ERROR__ServiceNotReady;
    }
}

/* -------------------------------------------------------------- defer -- */

void broker_ignore_done(int rc, void *arg)
{
    (void)arg;
    if (rc < 0 && rc != QE_NOT_FOUND)
        log_warn("broker", "background storage operation failed: %s", q_strerror(rc));
}

int broker_defer(broker_t *b, void (*fn)(void *), void *arg)
{
    return qloop_post(b->mailbox, fn, arg);
}

/* ------------------------------------------------------------ lifecycle -- */

int broker_new(struct ev_loop *loop, const broker_config_t *cfg, md_store_t *md, ml_factory_t *mlf,
               broker_t **out)
{
    broker_t *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->loop = loop;
    b->cfg = *cfg;
    b->md = md;
    b->mlf = mlf;
    b->listen_fd = -1;
    b->traffic_gen = 1;
    accept_pause_init(&b->accept_pause, loop);
    b->topics = qmap_new();
    b->ns_policies = qmap_new();
    b->mailbox = qloop_mailbox_new(loop);
    uint64_t window_us = (uint64_t)(cfg->stats_window_s ? cfg->stats_window_s : 60) * 1000000u;
    b->publish_latency = latq_new(window_us);
    b->loop_latency = latq_new(window_us);
    if (!b->topics || !b->mailbox || !b->ns_policies || !b->publish_latency || !b->loop_latency) {
        qmap_free(b->topics);
        qmap_free(b->ns_policies);
        qloop_mailbox_free(b->mailbox);
        latq_free(b->publish_latency);
        latq_free(b->loop_latency);
        free(b);
        return -ENOMEM;
    }
    ev_prepare_init(&b->flush_prepare, broker_flush_cb);
    b->flush_prepare.data = b;
    ev_prepare_start(loop, &b->flush_prepare);
    ev_unref(loop); /* it alone does not keep ev_run() going */
    ev_check_init(&b->loop_check, broker_loop_check_cb);
    ev_set_priority(&b->loop_check, EV_MAXPRI); /* before the iteration's other callbacks */
    b->loop_check.data = b;
    ev_check_start(loop, &b->loop_check);
    ev_unref(loop);
    broker_maintenance_start(b); /* TTL, subscription expiry, backlog quotas */
    *out = b;
    return 0;
}

int broker_listen(broker_t *b)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(b->cfg.broker_service_port)};
    if (inet_pton(AF_INET, b->cfg.bind_address, &sa.sin_addr) != 1) {
        close(fd);
        log_error("broker", "bindAddress '%s' is not an IPv4 address", b->cfg.bind_address);
        return QE_INVALID;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 1024) < 0) {
        int rc = -errno;
        log_error("broker", "cannot listen on %s:%d: %s", b->cfg.bind_address,
                  b->cfg.broker_service_port, strerror(errno));
        close(fd);
        return rc;
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    b->cfg.broker_service_port = ntohs(sa.sin_port);
    b->listen_fd = fd;
    snprintf(b->service_url, sizeof b->service_url, "pulsar://%s:%d", b->cfg.advertised_address,
             b->cfg.broker_service_port);
    ev_io_init(&b->accept_watcher, broker_accept_cb, fd, EV_READ);
    b->accept_watcher.data = b;
    ev_io_start(b->loop, &b->accept_watcher);
    return broker_security_listen(b); /* brokerServicePortTls, when configured */
}

uint64_t broker_bytes_written(const broker_t *b)
{
    return b->socket_bytes;
}

int broker_port(const broker_t *b)
{
    return b->cfg.broker_service_port;
}

const broker_config_t *broker_config(const broker_t *b)
{
    return &b->cfg;
}

/* Shutdown closes topics a wave at a time: each topic queues a dedup
 * snapshot, a flush per cursor, its ledger's close and a ledger-list write to
 * the metadata store, and closing 100,000 at once overflowed its bounded call
 * queue (MD_PENDING_MAX). A wave is at most BROKER_SHUTDOWN_WAVE topics whose
 * estimated calls (3 + subscriptions each) stay under BROKER_SHUTDOWN_CALLS;
 * each store batch then carries a few thousand calls (512 topics at a time
 * left it mostly waiting). A finished topic starts the next; shutdown_pending
 * counts the topics in flight plus one for the wave starter itself. */
#define BROKER_SHUTDOWN_WAVE 4096
#define BROKER_SHUTDOWN_CALLS 16384

static void shutdown_next_topics(broker_t *b);

static void shutdown_step_done(void *arg)
{
    broker_t *b = arg;
    shutdown_next_topics(b);
    if (--b->shutdown_pending == 0 && b->shutdown_cb) {
        for (size_t i = 0; i < b->shutdown_n; i++)
            free(b->shutdown_names[i]);
        free(b->shutdown_names);
        b->shutdown_names = NULL;
        b->shutdown_n = b->shutdown_next = 0;
        b->shutdown_cb(b->shutdown_arg);
    }
}

typedef struct close_ctx {
    broker_t *broker;
    topic_t *topic;
    int pending;
    size_t calls; /* counted in broker->shutdown_calls */
} close_ctx_t;

static void shutdown_ml_closed(int rc, void *arg)
{
    (void)rc;
    close_ctx_t *cc = arg;
    broker_t *b = cc->broker;
    b->shutdown_calls -= cc->calls;
    free(cc);
    shutdown_step_done(b);
}

static void cursor_closed(int rc, void *arg)
{
    (void)rc;
    close_ctx_t *cc = arg;
    if (--cc->pending > 0)
        return;
    if (ml_close(cc->topic->ml, shutdown_ml_closed, cc) < 0)
        shutdown_ml_closed(0, cc);
}

/* Closes t's cursors, then its managed ledger; one shutdown step. False if t
 * had nothing to close. */
static bool shutdown_topic(broker_t *b, topic_t *t)
{
    if (t->state != TOPIC_READY || !t->ml)
        return false;
    t->state = TOPIC_CLOSING;
    dedup_topic_close(t); /* last snapshot (the metadata store completes it) */
    close_ctx_t *cc = calloc(1, sizeof *cc);
    if (!cc)
        return false;
    cc->broker = b;
    cc->topic = t;
    cc->pending = 1;
    cc->calls = 3 + qmap_size(t->subscriptions);
    b->shutdown_calls += cc->calls;
    b->shutdown_pending++;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        if (s->cursor && !s->reading) {
            cc->pending++;
            if (ml_cursor_close(s->cursor, cursor_closed, cc) < 0)
                cc->pending--;
            s->cursor = NULL;
        }
    }
    cursor_closed(0, cc);
    return true;
}

/* Starts closing topics until a wave is in flight. By name: a topic may have
 * gone (unloaded) since the list was taken. */
static void shutdown_next_topics(broker_t *b)
{
    if (b->shutdown_starting)
        return; /* a topic finished inline: the loop below goes on */
    b->shutdown_starting = true;
    while (b->shutdown_next < b->shutdown_n && b->shutdown_pending <= BROKER_SHUTDOWN_WAVE &&
           b->shutdown_calls < BROKER_SHUTDOWN_CALLS) {
        topic_t *t = qmap_get(b->topics, b->shutdown_names[b->shutdown_next++]);
        if (t)
            shutdown_topic(b, t);
    }
    b->shutdown_starting = false;
}

void broker_shutdown(broker_t *b, broker_done_cb cb, void *arg)
{
    b->shutting_down = true;
    broker_maintenance_stop(b);
    b->shutdown_cb = cb;
    b->shutdown_arg = arg;
    b->shutdown_pending = 1;
    accept_pause_cancel(&b->accept_pause);
    if (b->listen_fd >= 0) {
        ev_io_stop(b->loop, &b->accept_watcher);
        close(b->listen_fd);
        b->listen_fd = -1;
    }
    broker_security_stop(b); /* the TLS listener */
    while (b->conns)
        conn_close(b->conns, "broker shutting down");
    size_t n = qmap_size(b->topics);
    b->shutdown_names = n ? calloc(n, sizeof *b->shutdown_names) : NULL;
    qmap_iter_t it = {0};
    const char *name;
    void *v;
    while (qmap_next(b->topics, &it, &name, &v)) {
        if (b->shutdown_names && b->shutdown_n < n &&
            (b->shutdown_names[b->shutdown_n] = strdup(name)) != NULL) {
            b->shutdown_n++;
            continue;
        }
        shutdown_topic(b, v); /* out of memory for the list: close it now */
    }
    shutdown_next_topics(b);
    broker_defer(b, shutdown_step_done, b);
}

void broker_free(broker_t *b)
{
    if (!b)
        return;
    broker_maintenance_stop(b);
    ev_ref(b->loop);
    ev_prepare_stop(b->loop, &b->flush_prepare);
    ev_ref(b->loop);
    ev_check_stop(b->loop, &b->loop_check);
    broker_flush_drop(b);
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(b->topics, &it, NULL, &v)) {
        topic_t *t = v;
        qmap_iter_t si = {0};
        void *sv;
        while (qmap_next(t->subscriptions, &si, NULL, &sv)) {
            subscription_t *s = sv;
            s->cursor = NULL; /* closed by shutdown */
            s->reading = false;
        }
        t->ml = NULL; /* closed by shutdown */
        topic_destroy(t);
    }
    qmap_free(b->topics);
    for (size_t i = 0; i < b->shutdown_n; i++)
        free(b->shutdown_names[i]);
    free(b->shutdown_names);
    broker_ns_policies_free(b);
    schema_registry_free(b);
    broker_security_free(b);
    qloop_mailbox_free(b->mailbox);
    latq_free(b->publish_latency);
    latq_free(b->loop_latency);
    free(b);
}
