/*
 * subscription_meta.h — what a SUBSCRIBE says about the subscription it
 * creates, besides its type and position: subscription_properties
 * (string -> string) and replicate_subscription_state. Private to server/.
 *
 * Kept as one JSON document, {"properties": {k: v, ...}, "replicated": bool},
 * set when the subscription is created (as Pulsar, a later SUBSCRIBE to an
 * existing subscription does not change it). A durable subscription's
 * document is also persisted as the managed-ledger property
 * SUB_META_PROP_PREFIX + name (at most 1 KiB; larger documents stay in
 * memory only), so it survives restarts; unsubscribing or deleting the
 * subscription removes it. Loop thread only.
 */
#ifndef QUIRE_SERVER_SUBSCRIPTION_META_H
#define QUIRE_SERVER_SUBSCRIPTION_META_H

#include "server/broker_int.h"

#define SUB_META_PROP_PREFIX "quire.sub."

/* The document of cmd (owned by the caller), or NULL when it has nothing. */
char *subscription_meta_from_subscribe(const Pulsar__Proto__CommandSubscribe *cmd);
/* s was just created by a SUBSCRIBE whose document is meta (taken; may be NULL). */
void subscription_meta_attach(subscription_t *s, char *meta);
/* The document of s (borrowed until s or the topic's properties change), or NULL. */
const char *subscription_meta_json(const subscription_t *s);
/* The subscription `name` of t is being deleted: drops its persisted document. */
void subscription_meta_forget(topic_t *t, const char *name);

#endif
