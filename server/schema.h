/*
 * schema.h — the schema registry: versioned schemas per topic, and the
 * compatibility rules that decide whether a new schema may join them.
 *
 * Two halves:
 *
 *  - schema_compat.c, pure (no I/O, no broker): Avro schema parsing with
 *    jansson, Avro's reader/writer compatibility rules, the eight strategies,
 *    KEY_VALUE schema data. Unit-tested directly (tests/unit/schema/).
 *  - schema.c, the registry: schemas stored in the metadata store, a cache per
 *    schema id, the broker's hooks (PRODUCER, SUBSCRIBE, GET_SCHEMA,
 *    GET_OR_CREATE_SCHEMA) and the operations admin-http calls.
 *
 * Schema id: "tenant/ns/local" of the topic's base name (partitions share the
 * schema of their partitioned topic; persistent and non-persistent topics of
 * the same name share one, as Pulsar's TopicName.getSchemaName does).
 *
 * Versions: 0, 1, 2... in order of registration, never reused. A deletion
 * (REST DELETE without force) is itself a version, a "deleted" marker: the
 * versions before it are no longer visible, the next schema gets the next
 * number (Pulsar's non-forced delete). A forced delete, and the deletion of
 * the topic, remove every version: numbering starts again at 0. On the wire a
 * version is 8 bytes, big-endian int64.
 *
 * Types are the wire enum Pulsar__Proto__Schema__Type (None = 0, String = 1,
 * Json = 2, Protobuf = 3, Avro = 4, ..., KeyValue = 15, ProtobufNative = 20);
 * names as Pulsar's SchemaType ("AVRO", "KEY_VALUE", ...).
 */
#ifndef QUIRE_SERVER_SCHEMA_H
#define QUIRE_SERVER_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "PulsarApi.pb-c.h"
#include "common/errors.h"
#include "server/broker.h"

/* ------------------------------------------------------------ strategies -- */

typedef enum schema_strategy {
    SCHEMA_ALWAYS_INCOMPATIBLE = 0,
    SCHEMA_ALWAYS_COMPATIBLE = 1,
    SCHEMA_BACKWARD = 2,
    SCHEMA_FORWARD = 3,
    SCHEMA_FULL = 4,
    SCHEMA_BACKWARD_TRANSITIVE = 5,
    SCHEMA_FORWARD_TRANSITIVE = 6,
    SCHEMA_FULL_TRANSITIVE = 7,
} schema_strategy_t;

/* The broker default (Pulsar's schemaCompatibilityStrategy = FULL). */
#define SCHEMA_STRATEGY_DEFAULT SCHEMA_FULL

/* Parses a strategy name (any case). "" and "UNDEFINED" give the default.
 * 0, or QE_INVALID for an unknown name. */
int schema_strategy_parse(const char *name, schema_strategy_t *out);
const char *schema_strategy_name(schema_strategy_t s);
bool schema_strategy_transitive(schema_strategy_t s);

/* ----------------------------------------------------------------- types -- */

#define SCHEMA_TYPE_NONE 0
#define SCHEMA_TYPE_STRING 1
#define SCHEMA_TYPE_JSON 2
#define SCHEMA_TYPE_PROTOBUF 3
#define SCHEMA_TYPE_AVRO 4
#define SCHEMA_TYPE_KEY_VALUE 15
#define SCHEMA_TYPE_PROTOBUF_NATIVE 20
#define SCHEMA_TYPE_AUTO_CONSUME 21
#define SCHEMA_TYPE_MAX 22

/* "AVRO" for 4 etc.; NULL for an unknown type. */
const char *schema_type_name(int type);
/* The type named (Pulsar's SchemaType names, any case); -1 if unknown.
 * "BYTES" gives -1 too: it is "no schema" (see schema_is_none). */
int schema_type_parse(const char *name);

/* A schema as the checker sees it: all borrowed. props: a JSON object of
 * string values, or NULL. */
typedef struct schema_data {
    int type;
    const uint8_t *data;
    size_t len;
    const json_t *props;
} schema_data_t;

/* ----------------------------------------------------------- the checker -- */

/* A schema refused by the strategy (IncompatibleSchema; REST 409). Definitions
 * that do not parse are QE_INVALID (IncompatibleSchema on the binary
 * protocol, as Pulsar does for old clients; REST 422). */
#define SCHEMA_E_INCOMPATIBLE QE_INCOMPATIBLE

/* Checks that s is a well-formed definition for its type: AVRO, JSON and
 * PROTOBUF carry an Avro schema (JSON also accepts the old JSON-schema
 * documents of pre-2.1 clients: any JSON object); KEY_VALUE carries its two
 * halves (each checked by its type). Other types are not checked.
 * 0, or QE_INVALID with a reason. */
int schema_validate(const schema_data_t *s, char *reason, size_t cap);

/* Same type and same definition: Avro-based types compare the parsed JSON
 * documents, the others the bytes. */
bool schema_equal(const schema_data_t *a, const schema_data_t *b);

/* May `to` be registered after `from` (n schemas, oldest first) under
 * strategy? Non-transitive strategies look at from[n-1] only; the transitive
 * ones at all of them. Pulsar's rules: a type change is refused unless
 * ALWAYS_COMPATIBLE; an identical latest schema is accepted; AVRO and JSON are
 * checked by Avro's reader/writer rules (BACKWARD: to reads from; FORWARD:
 * from reads to; FULL both); KEY_VALUE checks key and value apart; other
 * types are accepted unless ALWAYS_INCOMPATIBLE. 0, or SCHEMA_E_INCOMPATIBLE
 * with a reason. n = 0 is compatible. */
int schema_check_compatible(const schema_data_t *from, size_t n, const schema_data_t *to,
                            schema_strategy_t strategy, char *reason, size_t cap);
/* The same, with the version numbers of from (n values): a refusal's reason
 * names the strategy, the stored version that refused the new schema ("schema
 * version 3"; "the existing schema" when versions is NULL), which way the read
 * failed, and Avro's finding (e.g. "READER_FIELD_MISSING_DEFAULT_VALUE: field
 * 'score' of User has no default"), in Pulsar's wording where it has one. */
int schema_check_compatible_versions(const schema_data_t *from, const int64_t *versions, size_t n,
                                     const schema_data_t *to, schema_strategy_t strategy,
                                     char *reason, size_t cap);

/* Avro's rule: can data written with `writer` be read with `reader` (both
 * Avro schema JSON text)? 0, SCHEMA_E_INCOMPATIBLE, or QE_INVALID when
 * either does not parse; reason says why. */
int schema_avro_can_read(const char *reader, size_t reader_len, const char *writer,
                         size_t writer_len, char *reason, size_t cap);

/* KEY_VALUE schema data: [int32 key length][key][int32 value length][value],
 * big-endian; the halves' types in props "key.schema.type" and
 * "value.schema.type" (BYTES when absent). 0, or QE_INVALID. Borrowed views. */
int schema_kv_split(const schema_data_t *kv, schema_data_t *key, schema_data_t *value);

/* --------------------------------------------------------- the registry -- */

/* One stored version, borrowed by callbacks for the call only. */
typedef struct schema_version {
    int64_t version;
    int type;
    bool deleted;
    int64_t timestamp_ms;
    uint8_t *data;
    size_t len;
    json_t *props; /* object, string values; never NULL */
} schema_version_t;

/* What an operation produced; borrowed for the callback only. rc: 0,
 * QE_NOT_FOUND (no such schema/version), SCHEMA_E_INCOMPATIBLE, QE_INVALID
 * (bad definition), or a storage error; reason says why. */
typedef struct schema_result {
    int rc;
    char reason[512];
    int64_t version;                    /* put: the version (new or found); -1 none */
    const schema_version_t *schema;     /* get */
    const schema_version_t *const *all; /* get_all: the visible versions */
    size_t n_all;
    schema_strategy_t strategy; /* the strategy applied (check/put) */
} schema_result_t;

typedef void (*schema_cb)(const schema_result_t *res, void *arg);

/* The schema id of a topic name (any form clients send): 0, or QE_INVALID. */
int schema_id_of_topic(const char *topic, char *out, size_t cap);

/* Every operation: called on the loop thread, cb on the loop, never inline;
 * the schema_data_t is copied at the call. 0 once queued, else a negative code
 * and cb is never called. Operations on one schema id run one at a time, in
 * call order. */

/* The latest visible schema (version < 0), or the given version. */
int schema_registry_get(broker_t *b, const char *id, int64_t version, schema_cb cb, void *arg);
/* Every visible version (after the last deletion). */
int schema_registry_get_all(broker_t *b, const char *id, schema_cb cb, void *arg);
/* Pulsar's putSchemaIfAbsent: the version of an equal visible schema, else a
 * new version if the namespace's strategy allows it. */
int schema_registry_put(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                        void *arg);
/* The check only (REST .../compatibility): rc 0 or SCHEMA_E_INCOMPATIBLE. */
int schema_registry_check(broker_t *b, const char *id, const schema_data_t *s, schema_cb cb,
                          void *arg);
/* force: remove every version; else add a "deleted" marker version.
 * res->version: the marker's version (-1 when there was nothing to delete). */
int schema_registry_delete(broker_t *b, const char *id, bool force, schema_cb cb, void *arg);

/* The topic (any name form) was deleted: removes its schema's every version
 * in the background, as Pulsar does on topic deletion. Partitions are
 * ignored (their partitioned topic owns the schema). */
void schema_registry_delete_topic(broker_t *b, const char *topic);

/* Frees the registry's cache (broker_free). */
void schema_registry_free(broker_t *b);

#endif
