/*
 * producer_access.c — producer access modes and topic epochs (see
 * producer_access.h).
 *
 * Invariants:
 *   1. A queued producer has p->waiting, p->topic set, is on
 *      t->waiting_producers (FIFO) and not on t->producers; it holds one
 *      t->busy so the topic is not unloaded beneath it.
 *   2. Promotion runs deferred (never inside producer_destroy, which may be
 *      iterating a connection's producers) and only when t has no producer.
 */
#include "server/producer_access.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"

#define TOPIC_EPOCH_PROP "pulsar.topic.epoch"

enum {
    MODE_SHARED = PULSAR__PROTO__PRODUCER_ACCESS_MODE__Shared,
    MODE_EXCLUSIVE = PULSAR__PROTO__PRODUCER_ACCESS_MODE__Exclusive,
    MODE_WAIT = PULSAR__PROTO__PRODUCER_ACCESS_MODE__WaitForExclusive,
    MODE_FENCING = PULSAR__PROTO__PRODUCER_ACCESS_MODE__ExclusiveWithFencing,
};

/* ------------------------------------------------------------- epochs -- */

static void epoch_load(topic_t *t)
{
    if (t->epoch_loaded)
        return;
    t->epoch_loaded = true;
    const char *v = t->ml ? ml_get_property(t->ml, TOPIC_EPOCH_PROP) : NULL;
    uint64_t e;
    if (v && sscanf(v, "%" SCNu64, &e) == 1) {
        t->producer_epoch = e;
        t->epoch_set = true;
    }
}

/* An exclusive producer takes the topic: its epoch, or the next one. */
static void epoch_take(topic_t *t, const producer_t *p)
{
    if (p->has_topic_epoch)
        t->producer_epoch = p->topic_epoch;
    else
        t->producer_epoch = t->epoch_set ? t->producer_epoch + 1 : 0;
    t->epoch_set = true;
    if (t->ml && t->state == TOPIC_READY) {
        char v[32];
        snprintf(v, sizeof v, "%" PRIu64, t->producer_epoch);
        if (ml_set_property(t->ml, TOPIC_EPOCH_PROP, v, broker_ignore_done, NULL) < 0)
            log_warn("producer", "%s: cannot persist the topic epoch", t->name);
    }
}

static bool epoch_is_old(const topic_t *t, const producer_t *p)
{
    return p->has_topic_epoch && t->epoch_set && p->topic_epoch < t->producer_epoch;
}

/* ----------------------------------------------------------- the queue -- */

static void queue_push(topic_t *t, producer_t *p)
{
    p->waiting = true;
    p->topic = t;
    p->wait_next = NULL;
    producer_t **pp = &t->waiting_producers;
    while (*pp)
        pp = &(*pp)->wait_next;
    *pp = p;
    t->busy++;
}

void producer_access_unqueue(producer_t *p)
{
    topic_t *t = p->topic;
    if (!p->waiting || !t)
        return;
    for (producer_t **pp = &t->waiting_producers; *pp; pp = &(*pp)->wait_next) {
        if (*pp == p) {
            *pp = p->wait_next;
            break;
        }
    }
    p->waiting = false;
    p->wait_next = NULL;
    p->topic = NULL;
    t->busy--;
}

/* Fails every queued producer (ExclusiveWithFencing came). */
static void queue_fence_all(topic_t *t)
{
    while (t->waiting_producers) {
        producer_t *q = t->waiting_producers;
        producer_access_unqueue(q);
        if (q->conn->state != CONN_CLOSED)
            conn_send_error(q->conn, q->request_id, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                            "Fenced out");
        producer_destroy(q);
    }
}

/* ---------------------------------------------------------- admission -- */

static bool has_exclusive(const topic_t *t)
{
    for (const producer_t *q = t->producers; q; q = q->topic_next)
        if (q->access_mode != MODE_SHARED)
            return true;
    return false;
}

static void close_all_producers(topic_t *t)
{
    while (t->producers) {
        producer_t *q = t->producers;
        Pulsar__Proto__CommandCloseProducer cp = PULSAR__PROTO__COMMAND_CLOSE_PRODUCER__INIT;
        cp.producer_id = q->producer_id;
        pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
        cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER;
        cmd.close_producer = &cp;
        conn_send_command(q->conn, &cmd);
        log_info("producer", "%s: fencing out producer %s", t->name, q->name);
        producer_destroy(q);
    }
}

static int refuse(pb_error_t *err, const char **why, pb_error_t e, const char *w)
{
    *err = e;
    *why = w;
    return -1;
}

int producer_access_admit(topic_t *t, producer_t *p, uint64_t request_id, pb_error_t *err,
                          const char **why)
{
    epoch_load(t);
    p->request_id = request_id;
    bool exclusive = has_exclusive(t) || t->waiting_producers;
    switch (p->access_mode) {
    case MODE_SHARED:
        if (exclusive)
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerBusy,
                          "Topic has an existing exclusive producer");
        break;
    case MODE_EXCLUSIVE:
        if (exclusive)
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                          "Topic has an existing exclusive producer");
        if (t->producers_count > 0)
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                          "Topic has existing shared producers");
        if (epoch_is_old(t, p))
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                          "Topic epoch has already moved");
        epoch_take(t, p);
        break;
    case MODE_FENCING:
        if (exclusive || t->producers_count > 0) {
            queue_fence_all(t);
            close_all_producers(t);
        }
        if (epoch_is_old(t, p))
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                          "Topic epoch has already moved");
        epoch_take(t, p);
        break;
    case MODE_WAIT:
        if (exclusive || t->producers_count > 0) {
            if (t->terminated)
                break; /* refused below, as a promotion would be */
            queue_push(t, p);
            log_info("producer", "%s: producer %s queued (WaitForExclusive)", t->name, p->name);
            producer_send_success(p->conn, p, request_id); /* producer_ready=false */
            return 1;
        }
        if (epoch_is_old(t, p))
            return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                          "Topic epoch has already moved");
        epoch_take(t, p);
        break;
    default:
        return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__NotAllowedError,
                      "Unknown producer access mode");
    }
    if (t->terminated)
        return refuse(err, why, PULSAR__PROTO__SERVER_ERROR__TopicTerminatedError,
                      "Topic was already terminated");
    return 0;
}

/* ---------------------------------------------------------- promotion -- */

static void attach(topic_t *t, producer_t *p)
{
    p->topic = t;
    p->topic_prev = NULL;
    p->topic_next = t->producers;
    if (t->producers)
        t->producers->topic_prev = p;
    t->producers = p;
    t->producers_count++;
}

static void promote_fail(producer_t *p, pb_error_t err, const char *why)
{
    conn_send_error(p->conn, p->request_id, err, why);
    producer_destroy(p);
}

static void promote_run(void *arg)
{
    topic_t *t = arg;
    t->busy--;
    t->promote_scheduled = false;
    while (t->state == TOPIC_READY && t->producers_count == 0 && t->waiting_producers) {
        producer_t *p = t->waiting_producers;
        producer_access_unqueue(p);
        if (p->conn->state == CONN_CLOSED)
            continue; /* its connection's close destroys it */
        if (t->terminated) {
            promote_fail(p, PULSAR__PROTO__SERVER_ERROR__TopicTerminatedError,
                         "Topic was already terminated");
            continue;
        }
        if (epoch_is_old(t, p)) {
            promote_fail(p, PULSAR__PROTO__SERVER_ERROR__ProducerFenced,
                         "Topic epoch has already moved");
            continue;
        }
        epoch_take(t, p);
        attach(t, p);
        p->ready = true;
        producer_send_success(p->conn, p, p->request_id);
        log_info("producer", "%s: waiting producer %s is now exclusive", t->name, p->name);
    }
}

void producer_access_removed(topic_t *t)
{
    if (!t->waiting_producers || t->producers_count > 0 || t->promote_scheduled)
        return;
    t->busy++;
    if (broker_defer(t->broker, promote_run, t) < 0) {
        t->busy--;
        log_error("producer", "%s: cannot promote a waiting producer", t->name);
        return;
    }
    t->promote_scheduled = true;
}
