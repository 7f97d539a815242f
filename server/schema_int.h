/*
 * schema_int.h — the schema registry's hooks into the broker (schema.c),
 * private to server/: what producer.c, consumer.c and connection.c call.
 */
#ifndef QUIRE_SERVER_SCHEMA_INT_H
#define QUIRE_SERVER_SCHEMA_INT_H

#include "server/broker_int.h"
#include "server/schema.h"

/* broker_topic_get for a PRODUCER: when the command carries a schema (not
 * None), registers it (or finds its version) once the topic is loaded and
 * stores the version in the pending producer (p->schema_version), then calls
 * cb; a refused schema calls cb with QE_INCOMPATIBLE (IncompatibleSchema) and
 * no topic, and schema_refusal_reason() gives the reason inside cb. Without a
 * schema it is broker_topic_get, unless the namespace has
 * schemaValidationEnforced (read from its policies, loaded if needed) and the
 * topic has a schema: refused. */
int schema_producer_topic_get(conn_t *c, const char *topic,
                              const Pulsar__Proto__CommandProducer *cmd, topic_ready_cb cb,
                              void *arg);
/* The same for SUBSCRIBE: the consumer's schema is checked (BACKWARD against
 * the latest for BACKWARD/FORWARD/FULL, the strategy against all versions for
 * the transitive ones), or registered when the topic is idle and has none. */
int schema_consumer_topic_get(conn_t *c, const char *topic, bool create,
                              const Pulsar__Proto__CommandSubscribe *cmd, topic_ready_cb cb,
                              void *arg);

/* The text to send with an error rc inside the topic_ready_cb of the two
 * calls above: for QE_INCOMPATIBLE, the registry's reason of the refusal
 * (which strategy, which version, which field; borrowed, valid during the
 * callback only); otherwise q_strerror(rc). */
const char *schema_refusal_reason(int rc);

/* GET_SCHEMA -> GET_SCHEMA_RESPONSE (TopicNotFound when there is none). */
void schema_handle_get_schema(conn_t *c, const Pulsar__Proto__CommandGetSchema *cmd);
/* GET_OR_CREATE_SCHEMA -> GET_OR_CREATE_SCHEMA_RESPONSE {schema_version}. */
void schema_handle_get_or_create_schema(conn_t *c,
                                        const Pulsar__Proto__CommandGetOrCreateSchema *cmd);

#endif
