/*
 * termination.c — terminating a topic (see termination.h).
 *
 * States of a topic:
 *   open --terminate--> TERMINATING --appends drained, property durable--> TERMINATED
 * TERMINATING (t->terminated && t->terminating): new SENDs are refused at
 * once (broker_send_gate); the admin requests wait, on t->terminating, for
 * the appends already in flight (t->adds_pending) so that the last message id
 * they are given is really the last. Then TERMINATION_PROP is written and,
 * once durable, the requests are answered, the producers are disconnected
 * (CLOSE_PRODUCER: they come back and get TopicTerminatedError) and every
 * subscription dispatches, so consumers that already have everything learn it.
 * A failed property write returns the topic to open.
 */
#include "server/termination.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_admin.h"

typedef struct terminate_op {
    struct terminate_op *next;
    topic_t *topic; /* topic->busy held */
    broker_terminate_cb cb;
    void *arg;
    int rc;
    ml_pos_t last;
} terminate_op_t;

void termination_topic_load(topic_t *t)
{
    const char *v = t->ml ? ml_get_property(t->ml, TERMINATION_PROP) : NULL;
    int64_t l, e;
    if (!v)
        return;
    if (sscanf(v, "%" SCNd64 ":%" SCNd64, &l, &e) != 2) {
        log_warn("topic", "%s: unreadable %s '%s'; taken as the end of the log", t->name,
                 TERMINATION_PROP, v);
        l = ml_last_confirmed(t->ml).ledger_id;
        e = ml_last_confirmed(t->ml).entry_id;
    }
    t->terminated = true;
    t->terminated_pos = (ml_pos_t){l, e};
}

static void op_answer(void *arg)
{
    terminate_op_t *op = arg;
    op->topic->busy--;
    op->cb(op->rc, op->last, op->arg);
    free(op);
}

static void disconnect_producers(topic_t *t)
{
    while (t->producers) {
        producer_t *q = t->producers;
        Pulsar__Proto__CommandCloseProducer cp = PULSAR__PROTO__COMMAND_CLOSE_PRODUCER__INIT;
        cp.producer_id = q->producer_id;
        pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
        cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER;
        cmd.close_producer = &cp;
        conn_send_command(q->conn, &cmd);
        producer_destroy(q);
    }
}

typedef struct persist_ctx {
    topic_t *topic;
    terminate_op_t *ops;
    ml_pos_t last;
} persist_ctx_t;

static void termination_persisted(int rc, void *arg)
{
    persist_ctx_t *pc = arg;
    topic_t *t = pc->topic;
    t->busy--;
    if (rc < 0) {
        log_error("topic", "%s: termination not recorded: %s", t->name, q_strerror(rc));
        t->terminated = false;
    } else {
        t->terminated_pos = pc->last;
        log_info("topic", "%s: terminated at %lld:%lld", t->name, (long long)pc->last.ledger_id,
                 (long long)pc->last.entry_id);
        disconnect_producers(t);
        qmap_iter_t it = {0};
        void *v;
        while (qmap_next(t->subscriptions, &it, NULL, &v))
            subscription_dispatch(v);
    }
    terminate_op_t *op = pc->ops;
    while (op) {
        terminate_op_t *next = op->next;
        op->rc = rc;
        op->last = pc->last;
        op_answer(op);
        op = next;
    }
    free(pc);
}

void termination_adds_drained(topic_t *t)
{
    terminate_op_t *ops = t->terminating;
    t->terminating = NULL;
    if (!ops)
        return;
    persist_ctx_t *pc = malloc(sizeof *pc);
    char value[64];
    ml_pos_t last = t->ml ? ml_last_confirmed(t->ml) : ML_POS_EARLIEST;
    snprintf(value, sizeof value, "%lld:%lld", (long long)last.ledger_id, (long long)last.entry_id);
    int rc = pc && t->ml ? 0 : -ENOMEM;
    if (pc)
        *pc = (persist_ctx_t){t, ops, last};
    if (rc == 0) {
        t->busy++;
        rc = ml_set_property(t->ml, TERMINATION_PROP, value, termination_persisted, pc);
        if (rc == 0)
            return;
        t->busy--;
    }
    if (pc) {
        t->busy++; /* termination_persisted releases it */
        termination_persisted(rc, pc);
        return;
    }
    t->terminated = false;
    while (ops) {
        terminate_op_t *next = ops->next;
        ops->rc = rc;
        op_answer(ops);
        ops = next;
    }
}

static void drained_later(void *arg)
{
    topic_t *t = arg;
    t->busy--;
    if (t->adds_pending == 0)
        termination_adds_drained(t);
}

int broker_admin_topic_terminate(broker_t *b, const char *topic, broker_terminate_cb cb, void *arg)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t)
        return QE_NOT_FOUND;
    if (!t->ml)
        return QE_INVALID; /* non-persistent topics cannot be terminated */
    terminate_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (terminate_op_t){.topic = t, .cb = cb, .arg = arg, .last = t->terminated_pos};
    if (t->terminated && !t->terminating) {
        t->busy++;
        if (broker_defer(b, op_answer, op) < 0) {
            t->busy--;
            free(op);
            return -ENOMEM;
        }
        return 0;
    }
    if (!t->terminating) {
        t->busy++;
        if (broker_defer(b, drained_later, t) < 0) {
            t->busy--;
            free(op);
            return -ENOMEM;
        }
    }
    t->terminated = true; /* new SENDs are refused from now on */
    t->busy++;
    op->next = t->terminating;
    t->terminating = op;
    return 0;
}

void termination_check_end(subscription_t *s)
{
    topic_t *t = s->topic;
    if (!t->terminated || t->terminating || !s->cursor || s->replay_count > 0 ||
        ml_cursor_has_more(s->cursor))
        return;
    for (size_t i = 0; i < s->consumers_count; i++) {
        consumer_t *cons = s->consumers[i];
        if (cons->end_of_topic_sent || !cons->conn->is_java_client)
            continue;
        Pulsar__Proto__CommandReachedEndOfTopic end =
            PULSAR__PROTO__COMMAND_REACHED_END_OF_TOPIC__INIT;
        end.consumer_id = cons->consumer_id;
        pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
        cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__REACHED_END_OF_TOPIC;
        cmd.reachedendoftopic = &end;
        conn_send_command(cons->conn, &cmd);
        cons->end_of_topic_sent = true;
    }
}
