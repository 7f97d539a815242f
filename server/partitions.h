/*
 * partitions.h — partitioned-topic metadata and namespace topic listings, for
 * the binary protocol (lookup.c) and the admin API alike.
 *
 * A partitioned topic "T" with N partitions is metadata only (stored at
 * /admin/partitioned-topics/<tenant>/<ns>/<domain>/<local>, value
 * {"partitions":N}); its partitions "T-partition-0".."T-partition-<N-1>" are
 * ordinary topics, registered when the partitioned topic is created.
 * All calls on the loop thread; callbacks on it, never inline.
 */
#ifndef QUIRE_SERVER_PARTITIONS_H
#define QUIRE_SERVER_PARTITIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/broker.h"
#include "server/codec/topic_name.h"

#define BROKER_PARTITIONS_MAX 10000

typedef void (*broker_partitions_cb)(int rc, int partitions, void *arg);
typedef void (*broker_done_rc_cb)(int rc, void *arg);
/* topics: full names, sorted; borrowed for the callback. */
typedef void (*broker_topics_cb)(int rc, const char *const *topics, size_t n, void *arg);

/* The partition count of tn (0 = not partitioned). With may_create and the
 * broker configured for partitioned auto-creation, creates an unknown topic
 * with defaultNumPartitions partitions. */
int broker_partitions_lookup(broker_t *b, const topic_name_t *tn, bool may_create,
                             broker_partitions_cb cb, void *arg);
/* Creates a partitioned topic with n partitions (1..BROKER_PARTITIONS_MAX):
 * QE_EXISTS if it (or a non-partitioned topic of that name) exists. */
int broker_partitions_create(broker_t *b, const topic_name_t *tn, int n, broker_done_rc_cb cb,
                             void *arg);

enum { BROKER_DOMAIN_PERSISTENT = 1, BROKER_DOMAIN_NON_PERSISTENT = 2 };
/* prefix + children[i] for each child, sorted, in one allocation (the array
 * and the text: one free()); their count, or -ENOMEM. */
int broker_prefixed_names(const char *prefix, const char *const *children, size_t n, char ***out);
/* Topics of namespace "tenant/ns" in the given domains: every registered
 * persistent topic (partitions by their own names) and loaded non-persistent
 * ones. */
int broker_namespace_topics(broker_t *b, const char *ns, int domains, broker_topics_cb cb,
                            void *arg);

#endif
