/*
 * producer_access.h — Pulsar's producer access modes (AbstractTopic's
 * incrementTopicEpochIfNeeded), private to server/.
 *
 *   Shared                refused (ProducerBusy) while an exclusive producer is
 *                         attached or waiting;
 *   Exclusive             refused (ProducerFenced) while any producer is
 *                         attached or waiting;
 *   WaitForExclusive      while any producer is attached, queued: the broker
 *                         answers PRODUCER_SUCCESS producer_ready=false at once
 *                         and, when the last producer leaves, PRODUCER_SUCCESS
 *                         producer_ready=true to the same request id;
 *   ExclusiveWithFencing  fails the waiting producers (ProducerFenced) and closes
 *                         the attached ones (CLOSE_PRODUCER), then attaches.
 * Topic epoch: an exclusive producer that names a topic epoch older than the
 * topic's is refused with ProducerFenced (a newer exclusive producer came in
 * between); one that names an epoch sets it, one that does not increments it
 * (the first is 0). The epoch is kept in the managed-ledger property
 * "pulsar.topic.epoch", as Pulsar does, and sent in PRODUCER_SUCCESS once the
 * topic has one. A terminated topic refuses every producer
 * (TopicTerminatedError) after these checks. Loop thread only.
 */
#ifndef QUIRE_SERVER_PRODUCER_ACCESS_H
#define QUIRE_SERVER_PRODUCER_ACCESS_H

#include "server/broker_int.h"

/* May p (created, not attached) join t? 0: yes, the caller attaches it and
 * answers; 1: queued (WaitForExclusive), answered producer_ready=false here;
 * -1: refused with *err / *why. */
int producer_access_admit(topic_t *t, producer_t *p, uint64_t request_id, pb_error_t *err,
                          const char **why);
/* p is being destroyed while queued. */
void producer_access_unqueue(producer_t *p);
/* A producer left t: promotes the first waiting one when t has none left
 * (deferred, never inline). */
void producer_access_removed(topic_t *t);
/* PRODUCER_SUCCESS for p (producer.c): producer_ready=false while p is queued;
 * last_sequence_id from deduplication; the topic epoch once the topic has one. */
void producer_send_success(conn_t *c, producer_t *p, uint64_t request_id);

#endif
