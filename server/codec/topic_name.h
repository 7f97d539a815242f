/*
 * topic_name.h — Pulsar topic names: parse, validate, canonicalise.
 *
 * Accepted forms (Pulsar's TopicName rules):
 *   persistent://tenant/namespace/local      full name
 *   non-persistent://tenant/namespace/local  full name
 *   tenant/namespace/local                   short: persistent:// is implied
 *   local                                    short: persistent://public/default/
 * Tenant and namespace are non-empty and made of [A-Za-z0-9_-=:.] (Pulsar's
 * NamedEntity pattern). The local name is non-empty, has no '/', and no
 * control bytes (Pulsar reads a fourth '/' part as a legacy v1
 * property/cluster/namespace/topic name, which Quire does not support).
 * A local name ending in "-partition-N" (N a canonical non-negative int: no
 * sign, no leading zero) names partition N of the base topic; otherwise
 * partition = -1, as Java's getPartitionIndex decides.
 *
 * Everything is copied into the fixed buffers of topic_name_t: no allocation,
 * the input is borrowed for the call only. Names longer than TOPIC_NAME_MAX
 * bytes in canonical form are refused (QE_TOO_LARGE).
 */
#ifndef QUIRE_SERVER_CODEC_TOPIC_NAME_H
#define QUIRE_SERVER_CODEC_TOPIC_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define TOPIC_NAME_MAX 1024
#define TOPIC_PARTITION_SUFFIX "-partition-"

typedef enum { TOPIC_PERSISTENT = 0, TOPIC_NON_PERSISTENT = 1 } topic_domain_t;

typedef struct topic_name {
    topic_domain_t domain;
    char tenant[TOPIC_NAME_MAX + 1];
    char ns[TOPIC_NAME_MAX + 1];             /* the namespace's local part */
    char local[TOPIC_NAME_MAX + 1];          /* local name, with any -partition-N */
    char full[TOPIC_NAME_MAX + 1];           /* canonical "domain://tenant/ns/local" */
    char base[TOPIC_NAME_MAX + 1];           /* full name without -partition-N */
    char namespace_name[TOPIC_NAME_MAX + 1]; /* "tenant/ns" */
    int partition;                           /* -1 when not a partition */
} topic_name_t;

/* Parses s (NUL-terminated). 0 and *out filled; QE_INVALID for an illegal
 * name; QE_TOO_LARGE past TOPIC_NAME_MAX. */
int topic_name_parse(const char *s, topic_name_t *out);

/* Writes "<base>-partition-<index>" of a parsed name into buf[0..cap).
 * 0, or QE_TOO_LARGE if it does not fit, QE_INVALID for index < 0. */
int topic_name_partition(const topic_name_t *t, int index, char *buf, size_t cap);

/* true iff name is a valid tenant or namespace part (non-empty, NamedEntity). */
bool topic_name_valid_entity(const char *name, size_t len);

#endif
