/*
 * termination.h — topic termination, private to server/ (Pulsar's
 * PersistentTopic.terminate). The admin side is broker_admin_topic_terminate
 * in broker_admin.h.
 *
 * A terminated topic takes no more messages: PRODUCER and SEND get
 * TopicTerminatedError. Its last message id is fixed when termination
 * completes (after the appends in flight are durable) and kept in the managed
 * ledger's property TERMINATION_PROP ("<ledgerId>:<entryId>"), so it survives
 * restarts. Consumers read everything up to it; a Java client's consumer that
 * has been sent everything gets REACHED_END_OF_TOPIC (the released C++ and Go
 * clients drop the connection on that command: they just see no more
 * messages). Loop thread only.
 */
#ifndef QUIRE_SERVER_TERMINATION_H
#define QUIRE_SERVER_TERMINATION_H

#include "server/broker_int.h"

#define TERMINATION_PROP "quire.terminated"

/* Topic load: reads the persisted termination of t's managed ledger. */
void termination_topic_load(topic_t *t);
/* The last append in flight was released while termination waits for it. */
void termination_adds_drained(topic_t *t);
/* Dispatcher: s has nothing more to read; tells Java consumers when t is terminated. */
void termination_check_end(subscription_t *s);

#endif
