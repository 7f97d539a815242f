/*
 * server_test.h — an in-process broker over a real storage stack (metadata
 * store, bookie, ledger client, managed ledgers in a temporary directory) and
 * a minimal protocol client built from our codec, on one libev loop, for the
 * broker's unit tests. Every wait is bounded.
 */
#ifndef QUIRE_TEST_SERVER_H
#define QUIRE_TEST_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "PulsarApi.pb-c.h"
#include "server/broker.h"
#include "tests/unit/support/test_support.h"

typedef struct tbroker tbroker_t;
typedef struct tclient tclient_t;

/* A received frame: the command (owned) and, for MESSAGE, a copy of the payload. */
typedef struct tframe {
    Pulsar__Proto__BaseCommand *cmd;
    uint8_t *payload;
    size_t payload_len;
} tframe_t;

tbroker_t *tbroker_start(void);
/* The same with broker settings (key, value) applied over the defaults. */
tbroker_t *tbroker_start_with(const char *const (*settings)[2], size_t n);
broker_t *tbroker_broker(tbroker_t *tb);
void tbroker_stop(tbroker_t *tb);
struct ev_loop *tbroker_loop(tbroker_t *tb);
struct md_store *tbroker_md(tbroker_t *tb);
/* The in-process bookie (fault injection through bookie_int.h). */
struct bookie *tbroker_bookie(tbroker_t *tb);
/* The next n reads from the bookie fail with rc (returned at once); how many
 * did since. */
void tbroker_fail_reads(tbroker_t *tb, int n, int rc);
int tbroker_reads_failed(const tbroker_t *tb);

/* Connects and completes the handshake (CONNECT / CONNECTED); NULL on failure. */
tclient_t *tclient_connect(tbroker_t *tb, const char *client_version);
/* Connects without a handshake (raw bytes tests). */
tclient_t *tclient_open(tbroker_t *tb);
void tclient_close(tclient_t *c);
/* The client's socket (to set socket options in a test). */
int tclient_fd(const tclient_t *c);
int tclient_send_raw(tclient_t *c, const void *bytes, size_t len);
int tclient_send(tclient_t *c, const Pulsar__Proto__BaseCommand *cmd);
/* SEND of one message (or a batch of n when n > 1) with the given key. */
int tclient_send_message(tclient_t *c, uint64_t producer_id, uint64_t seq, const char *key,
                         const char *payload, int32_t batch_n);
/* The SEND frame tclient_send_message writes, for a writer of its own. */
int tclient_encode_message(uint64_t producer_id, uint64_t seq, const char *key, const char *payload,
                           int32_t batch_n, qbuf_t **out);
/* Runs the loop until a frame of `type` arrives (returned, caller frees with
 * tframe_free) or timeout; NULL on timeout or when the broker closed. */
tframe_t *tclient_wait(tclient_t *c, Pulsar__Proto__BaseCommand__Type type, double timeout_s);
/* True once the broker has closed the connection (runs the loop up to timeout). */
bool tclient_wait_closed(tclient_t *c, double timeout_s);
void tframe_free(tframe_t *f);
bool tclient_closed(const tclient_t *c);

/* Request helpers: each sends and waits for the answer; 0 on success. */
int tclient_create_producer(tclient_t *c, const char *topic, uint64_t producer_id);
int tclient_subscribe(tclient_t *c, const char *topic, const char *sub, uint64_t consumer_id,
                      Pulsar__Proto__CommandSubscribe__SubType type, const char *consumer_name,
                      const int32_t (*ranges)[2], size_t nranges);
int tclient_flow(tclient_t *c, uint64_t consumer_id, uint32_t permits);
int tclient_ack(tclient_t *c, uint64_t consumer_id, int64_t ledger, int64_t entry);
/* REDELIVER_UNACKNOWLEDGED_MESSAGES of n (<= 8) {ledger, entry} ids; n = 0: all. */
int tclient_redeliver(tclient_t *c, uint64_t consumer_id, const int64_t (*ids)[2], size_t n);
/* Sends a message and waits for its receipt; fills the id. */
int tclient_produce(tclient_t *c, uint64_t producer_id, uint64_t seq, const char *key,
                    const char *payload, int64_t *ledger, int64_t *entry);

#endif
