/*
 * limits_int.h — the broker's enforcement of rate limits and quotas, as
 * hooks called from the files that own the objects (producer.c, consumer.c,
 * dispatcher.c, topic.c, connection.c). Private to server/.
 *
 * State: a topic's limiter state (t->limits) and a subscription's (s->limits)
 * are allocated on first use from the namespace's cached policies (resolved
 * against the broker defaults) and re-resolved by limits_topic_policies_changed
 * whenever the namespace's Policies document changes. They are freed with
 * their object (limits_topic_free, limits_subscription_free). Loop thread only.
 */
#ifndef QUIRE_SERVER_LIMITS_INT_H
#define QUIRE_SERVER_LIMITS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/broker_int.h"
#include "server/broker_limits.h"

struct ns_policies;

/* ------------------------------------------------------------ lifecycle -- */

/* The namespace's policies changed (topic_policies_changed): re-resolve the
 * limits of t and of its subscriptions, at once. */
void limits_topic_policies_changed(topic_t *t, const struct ns_policies *p);
/* Before a topic is freed: stops its timer and resumes the connections it
 * paused. */
void limits_topic_free(topic_t *t);
/* Before a subscription is freed. */
void limits_subscription_free(subscription_t *s);

/* ---------------------------------------------------------- publishing -- */

/* A SEND of msgs messages, bytes bytes was accepted on t from connection c
 * (never refused): charges t's publish rate; when it is exhausted, stops
 * reading every connection that carries a producer of t until the bucket
 * refills (a timer). A paused connection carries all its producers' SENDs,
 * whatever their topic: as Pulsar's disabled auto-read. now_us: the monotonic
 * clock when the SEND was taken (the caller has read it already). */
void limits_on_publish(topic_t *t, conn_t *c, int64_t msgs, int64_t bytes, uint64_t now_us);

/* ----------------------------------------------------------- admission -- */

/* May one more producer join t? 0, or -1 with ProducerBusy and Pulsar's reason. */
int limits_admit_producer(topic_t *t, pb_error_t *err, const char **why);
/* May one more consumer join s (of its topic)? 0, or -1 with ConsumerBusy. */
int limits_admit_consumer(subscription_t *s, pb_error_t *err, const char **why);

/* ------------------------------------------------------------ dispatch -- */

/* Shared/Key_Shared: true while cons has reached max unacked messages per
 * consumer (blocked at the limit, unblocked at half of it, as Pulsar). */
bool limits_consumer_blocked(consumer_t *cons);
/* Whether the subscription was blocked at its max unacked messages when last
 * checked (for stats; the check itself is limits_dispatch_allowance). */
bool limits_subscription_blocked(const subscription_t *s);
/* Before a read for s: narrows *max_entries / *max_bytes to what the topic's
 * and the subscription's dispatch rates allow now. false: nothing may be read
 * now (rate exhausted: a timer dispatches s again when tokens refill; or the
 * subscription has max unacked messages: acks dispatch it again). */
bool limits_dispatch_allowance(subscription_t *s, size_t *max_entries, size_t *max_bytes);
/* An entry of msgs messages, bytes bytes was sent to a consumer of s. */
void limits_on_dispatch(subscription_t *s, int64_t msgs, int64_t bytes);

#endif
