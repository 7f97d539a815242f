/*
 * quire_perf.h — quire-perf, a load generator for any server that speaks
 * Apache Pulsar's binary protocol (Quire or Apache Pulsar itself), in the
 * spirit of pulsar-perf. The pieces live in quire_perf_lib so that the pure
 * parts can be unit-tested without a socket:
 *
 *   quire_perf_opts.c    command line: options, service URL, topic list
 *   quire_perf_wire.c    client commands (CONNECT, LOOKUP, PRODUCER, SUBSCRIBE,
 *                        FLOW, ACK, CLOSE_*), batch building, compression,
 *                        parsing of a received entry (batch aware)
 *   quire_perf_report.c  rate pacing arithmetic, statistics, the interval line,
 *                        the final report and its JSON form
 *   quire_perf_conn.c    connections to brokers: socket I/O, write queue,
 *                        CONNECT handshake, PING/PONG, and the dispatch of
 *                        every received frame to its producer/consumer by
 *                        producer_id/consumer_id/request_id; one connection
 *                        per producer/consumer, or a pool of N per broker URL
 *                        shared by all of them (--max-connections)
 *   quire_perf_timer.c   timers of sub-millisecond precision (pacing, batches)
 *   quire_perf_witness.c the host witness: a sleeping thread's lateness
 *   quire_perf_client.c  the protocol client: one libev loop, the run's
 *                        phases, producers'/consumers' state machines
 *   quire_perf_main.c    main(): SIGINT, exit status
 *
 * Payload of every message quire-perf produces (when size >= 12 bytes):
 *   | offset | size | meaning                                              |
 *   |--------|------|------------------------------------------------------|
 *   | 0      | 4    | "QPRF"                                               |
 *   | 4      | 8    | scheduled send time, wall clock, microseconds (BE)   |
 *   | 12     | rest | pseudo-random capital letters (compressible as text) |
 * A consumer that finds the magic measures end-to-end latency in
 * microseconds; otherwise it falls back to MessageMetadata.publish_time (ms).
 *
 * Latencies are recorded in microseconds into common/hist.h histograms.
 */
#ifndef QUIRE_TOOLS_QUIRE_PERF_H
#define QUIRE_TOOLS_QUIRE_PERF_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "PulsarApi.pb-c.h"
#include "common/buf.h"
#include "common/hist.h"
#include "server/codec/frame.h"

#define PERF_CLIENT_VERSION "quire-perf 0.1"
#define PERF_PROTOCOL_VERSION 21

/* Bounds on what the command line may ask for. */
#define PERF_MAX_TOPICS 1024
#define PERF_MAX_PER_TOPIC 256
#define PERF_MAX_ENDPOINTS 4096 /* producers + consumers after partition expansion */
#define PERF_MAX_PARTITIONS 4096
#define PERF_MAX_SIZE_BYTES (5u * 1024u * 1024u)
#define PERF_MAX_PENDING 100000u
#define PERF_MAX_BATCH_MESSAGES 100000u
#define PERF_MAX_URL 256
#define PERF_MAX_CONNECTIONS 1024 /* --max-connections: per broker URL */
#define PERF_MAX_BROKERS 64       /* distinct broker URLs a shared pool connects to */
#define PERF_MAX_NAME 256

#define PERF_PAYLOAD_MAGIC "QPRF"
#define PERF_PAYLOAD_HEADER_BYTES 12u

/* ================================================================ options */

typedef enum { PERF_MODE_PRODUCE = 1, PERF_MODE_CONSUME = 2, PERF_MODE_BOTH = 3 } perf_mode_t;
typedef enum { PERF_ACK_INDIVIDUAL = 0, PERF_ACK_CUMULATIVE = 1 } perf_ack_t;

typedef struct perf_opts {
    perf_mode_t mode;
    char service_url[PERF_MAX_URL];
    char **topics; /* canonical full names, owned (perf_opts_free) */
    size_t n_topics;
    bool partitions; /* ask PARTITIONED_METADATA, use every partition */
    uint32_t producers_per_topic;
    uint32_t consumers_per_topic;
    char subscription[PERF_MAX_NAME];
    Pulsar__Proto__CommandSubscribe__SubType sub_type;
    bool sub_earliest; /* initial position of a new subscription */
    uint32_t size_bytes;
    double rate; /* messages/s over all producers; 0 = as fast as possible */
    double batch_max_delay_ms;
    uint32_t batch_max_messages; /* 1 = no batching (plain messages) */
    uint32_t batch_max_bytes;
    Pulsar__Proto__CompressionType compression;
    uint32_t max_pending; /* messages in flight per producer */
    double seconds;       /* measured duration after warm-up; 0 = until stopped */
    uint64_t messages;    /* messages to produce (consume in consume mode); 0 = no limit */
    uint64_t messages_per_producer; /* each producer stops after this many; 0 = no limit */
    double warmup_seconds;
    uint32_t keys;  /* 0 = no key; N = partition_key cycles over N keys */
    bool key_based; /* --batcher key-based: a batch holds one key (Pulsar's KEY_BASED) */
    char *json_path;
    double report_interval_s;
    uint32_t receiver_queue_size;
    perf_ack_t ack_type;
    double op_timeout_s;      /* bound on connect, lookup, create, close, drain */
    uint32_t max_connections; /* per broker URL, shared; 0 = one per producer/consumer */
    bool host_witness;        /* run the host witness (perf_witness_start) */
} perf_opts_t;

/* Parses argv (argv[0] is the program, argv[1] the mode) into *o (which it
 * initialises; free with perf_opts_free even on error). Returns 0, 1 when
 * --help was asked, or QE_INVALID with a one-line reason in err. */
int perf_opts_parse(int argc, char **argv, perf_opts_t *o, char *err, size_t err_len);
void perf_opts_free(perf_opts_t *o);
void perf_usage(FILE *f);

/* "pulsar://host:port" -> host, port (6650 when absent). pulsar+ssl:// is
 * refused (no TLS). 0 or QE_INVALID. */
int perf_parse_url(const char *url, char *host, size_t host_len, uint16_t *port);

/* Parsers of single option values: 0 or QE_INVALID. */
int perf_parse_sub_type(const char *s, Pulsar__Proto__CommandSubscribe__SubType *out);
int perf_parse_compression(const char *s, Pulsar__Proto__CompressionType *out);
const char *perf_compression_name(Pulsar__Proto__CompressionType c);

/* ================================================================ pacing */

/* Fixed-rate schedule: message i is due at start_ns + i * 1e9 / rate. The
 * sender keeps the schedule even when it falls behind, and latency is taken
 * from the scheduled time, so a stall shows in the figures (no coordinated
 * omission). rate <= 0 means "no schedule". */
typedef struct perf_pace {
    uint64_t start_ns;
    double rate;
    uint64_t issued; /* messages taken from the schedule so far */
} perf_pace_t;

void perf_pace_init(perf_pace_t *p, uint64_t start_ns, double rate);
/* Messages due at now_ns and not yet issued. */
uint64_t perf_pace_due(const perf_pace_t *p, uint64_t now_ns);
/* The scheduled time of message i. */
uint64_t perf_pace_sched_ns(const perf_pace_t *p, uint64_t i);

/* Precise timers (quire_perf_timer.c): libev's epoll backend sleeps whole
 * milliseconds, rounded up, so its timers fire up to a millisecond late; the
 * pace and batch timers use these instead: a min-heap of deadlines behind one
 * timerfd (CLOCK_MONOTONIC, nanoseconds, the clock of clock_mono_ns). A timer
 * fires once (a callback may start it again); its callback may start and stop
 * any timer. */
typedef struct perf_ptimer perf_ptimer_t;
typedef void (*perf_ptimer_cb)(perf_ptimer_t *t);
struct perf_ptimer {
    uint64_t due_ns; /* clock_mono_ns() time */
    uint64_t seq;    /* start order: equal deadlines fire in it */
    uint64_t round;  /* the last expiry round that fired it */
    size_t slot;     /* 1 + index in the heap; 0: not started */
    perf_ptimer_cb cb;
    void *data;
};

typedef struct perf_ptimers {
    struct ev_loop *loop;
    int fd;
    ev_io io;
    perf_ptimer_t **heap;
    size_t n, cap;
    uint64_t armed_ns; /* the timerfd's deadline; 0: disarmed */
    uint64_t seq, round;
    hist_t *late_us; /* when set: each firing's lateness, microseconds */
} perf_ptimers_t;

/* 0 or -errno. The timerfd's watcher does not keep the loop running. With
 * late_us set, each timer's firing records how long after its deadline its
 * callback ran: the loop was busy, or the process or its host was held. */
int perf_ptimers_init(perf_ptimers_t *ts, struct ev_loop *loop);
/* Stops every timer (without callbacks) and closes the timerfd. */
void perf_ptimers_free(perf_ptimers_t *ts);
void perf_ptimer_init(perf_ptimer_t *t, perf_ptimer_cb cb, void *data);
/* (Re)starts t to fire at due_ns (a time already past fires at the loop's
 * next iteration). 0 or -ENOMEM (t is then stopped). */
int perf_ptimer_start(perf_ptimers_t *ts, perf_ptimer_t *t, uint64_t due_ns);
/* No-op when t is not started. */
void perf_ptimer_stop(perf_ptimers_t *ts, perf_ptimer_t *t);
static inline bool perf_ptimer_active(const perf_ptimer_t *t)
{
    return t->slot != 0;
}

/* The host witness (quire_perf_witness.c): one thread per CPU the process may
 * run on, pinned to it, that only sleeps 1 ms at a time and records how late
 * it wakes, in microseconds (all in one histogram). It carries none of the
 * load: its lateness is the machine's (a CPU busy with other threads, or the
 * host not running a vCPU), not the client's work nor the server's. */
typedef struct perf_witness perf_witness_t;
/* 0 or -errno. */
int perf_witness_start(perf_witness_t **out);
/* How many threads it runs (one per CPU; 0 for NULL). */
unsigned perf_witness_threads(const perf_witness_t *w);
/* Merges what it recorded since the last take into `into`, and forgets it. */
void perf_witness_take(perf_witness_t *w, hist_t *into);
/* Stops the threads and frees w. NULL is a no-op. */
void perf_witness_stop(perf_witness_t *w);

/* ================================================================ wire */

/* Client commands, each one encoded frame in a new qbuf_t owned by the caller.
 * Strings are borrowed for the call. Return 0, QE_INVALID or -ENOMEM. */
int perf_cmd_connect(qbuf_t **out);
int perf_cmd_partitioned_metadata(const char *topic, uint64_t request_id, qbuf_t **out);
int perf_cmd_lookup(const char *topic, uint64_t request_id, bool authoritative, qbuf_t **out);
/* producer_name may be NULL (the broker picks one); epoch counts reconnects. */
int perf_cmd_producer(const char *topic, uint64_t producer_id, uint64_t request_id,
                      const char *producer_name, uint64_t epoch, qbuf_t **out);
int perf_cmd_subscribe(const char *topic, const char *subscription,
                       Pulsar__Proto__CommandSubscribe__SubType sub_type, uint64_t consumer_id,
                       uint64_t request_id, const char *consumer_name, bool earliest, qbuf_t **out);
int perf_cmd_flow(uint64_t consumer_id, uint32_t permits, qbuf_t **out);
/* ACK of whole entries: ids[2*i] = ledger, ids[2*i+1] = entry. */
int perf_cmd_ack(uint64_t consumer_id, perf_ack_t type, const int64_t *ids, size_t n, qbuf_t **out);
int perf_cmd_close_producer(uint64_t producer_id, uint64_t request_id, qbuf_t **out);
int perf_cmd_close_consumer(uint64_t consumer_id, uint64_t request_id, qbuf_t **out);

/* Writes the payload header (magic + ts_us) into p when len allows. */
void perf_payload_stamp(uint8_t *p, size_t len, uint64_t ts_us);
/* The timestamp of a payload written by perf_payload_stamp, or 0. */
uint64_t perf_payload_ts(const uint8_t *p, size_t len);
/* Fills p with deterministic pseudo-random capital letters. */
void perf_payload_fill(uint8_t *p, size_t len, uint32_t seed);

/* A growable scratch buffer with a hard bound. */
typedef struct perf_scratch {
    uint8_t *p;
    size_t cap;
} perf_scratch_t;
int perf_scratch_reserve(perf_scratch_t *s, size_t n);
void perf_scratch_free(perf_scratch_t *s);

/* Compresses in[0..n) with Pulsar's codec c into s; *out_len bytes at s->p.
 * NONE copies. 0, QE_INVALID or -ENOMEM. */
int perf_compress(Pulsar__Proto__CompressionType c, const uint8_t *in, size_t n, perf_scratch_t *s,
                  size_t *out_len);
/* Decompresses exactly raw_len bytes into s (raw_len from uncompressed_size).
 * 0, QE_CORRUPT, QE_TOO_LARGE or -ENOMEM. */
int perf_decompress(Pulsar__Proto__CompressionType c, const uint8_t *in, size_t n, size_t raw_len,
                    perf_scratch_t *s);

/* Client-side batch of one producer: the uncompressed batch payload, made of
 * [u32 BE smmSize][SingleMessageMetadata][payload] per message, as clients
 * build it. A batch of max_messages == 1 holds one plain message instead. */
typedef struct perf_batch {
    perf_scratch_t raw;
    size_t len;
    uint32_t n;
    uint64_t first_seq;
    uint64_t first_add_ns;
    bool batching;
    bool key_based; /* one key per batch, named in the batch's metadata */
    char first_key[32];
    bool has_key;
} perf_batch_t;

/* When a producer paced by p, batching into b, must wake next to take
 * messages (called when none is due at now_ns); 0: not before b's delay ends
 * (its batch timer takes the due messages, then sends). A message taken into
 * an open batch leaves with that batch whenever it is taken, so while a batch
 * is open the pacer sleeps until the batch would be full (it is sent then) or
 * its delay ends: two wake-ups per batch, not one per message. Without
 * batching, PERF_PACE_QUANTUM_NS apart at least: at 50,000 msg/s a wake-up
 * per message would cost more CPU than the messages. */
#define PERF_PACE_QUANTUM_NS 100000u
uint64_t perf_pace_wake_ns(const perf_pace_t *p, const perf_batch_t *b, const perf_opts_t *o,
                           uint64_t now_ns);

/* Appends one message (payload borrowed, key may be NULL). 0, -ENOMEM,
 * QE_TOO_LARGE (a plain batch already holds its message). */
int perf_batch_add(perf_batch_t *b, const uint8_t *payload, size_t len, const char *key,
                   uint64_t seq, uint64_t now_ns);
void perf_batch_reset(perf_batch_t *b);
void perf_batch_free(perf_batch_t *b);

/* SingleMessageMetadata {partition_key (if key), payload_size, sequence_id}
 * written by hand into p (room for 33 + strlen(key) bytes); returns its size.
 * The same bytes protobuf-c packs. */
size_t perf_smm_encode(uint8_t *p, const char *key, size_t payload_size, uint64_t seq);
/* The payload_size of a packed SingleMessageMetadata of len bytes, skipping
 * every other field. 0, or QE_CORRUPT (truncated, bad wire type, no
 * payload_size). */
int perf_smm_payload_size(const uint8_t *p, size_t len, int32_t *payload_size);

/* The SEND frame of batch b: CommandSend {producer_id, sequence_id =
 * first_seq, highest_sequence_id, num_messages} and MessageMetadata
 * {producer_name, sequence_id, publish_time, compression, uncompressed_size,
 * num_messages_in_batch, partition_key}, with the 0x0e01 CRC32C block. The
 * payload is compressed with c through z. *out owned by the caller. */
int perf_encode_send(const perf_batch_t *b, uint64_t producer_id, const char *producer_name,
                     int64_t publish_time_ms, Pulsar__Proto__CompressionType c, perf_scratch_t *z,
                     qbuf_t **out);

/* What one received entry held. */
typedef struct perf_entry {
    uint32_t n_msgs;        /* single messages (num_messages_in_batch) */
    uint64_t payload_bytes; /* sum of the single messages' payload sizes */
    int64_t publish_time_ms;
} perf_entry_t;

/* Parses a stored slice (frame.payload of a MESSAGE): the metadata, then the
 * (decompressed) payload, calling on_msg(ctx, ts_us) for each single message,
 * ts_us = its perf_payload_ts or 0. z is scratch for decompression.
 * 0, QE_CORRUPT, -ENOMEM. */
int perf_parse_entry(const uint8_t *slice, size_t len, perf_scratch_t *z,
                     void (*on_msg)(void *ctx, uint64_t ts_us), void *ctx, perf_entry_t *out);

/* ================================================================ stats */

typedef struct perf_stats {
    uint64_t produced_msgs; /* acknowledged by a SEND_RECEIPT */
    uint64_t produced_bytes;
    uint64_t consumed_msgs;
    uint64_t consumed_bytes;
    uint64_t send_errors;
    uint64_t checksum_errors; /* received entries with a bad CRC32C */
    hist_t pub_us;            /* publish latency, scheduled send -> receipt */
    hist_t e2e_us;            /* end-to-end latency, stamped send -> consumer */
    hist_t late_us;           /* the client's own lateness: each pace or batch timer's
                               * firing after its deadline (perf_ptimers_t.late_us) */
    hist_t witness_us;        /* the host witness's wake-ups after their deadline */
} perf_stats_t;

void perf_stats_reset(perf_stats_t *s);
void perf_stats_merge(perf_stats_t *dst, const perf_stats_t *src);

/* One interval line into buf: "[  12.0s] prod 1000.0 msg/s 1.0 MB/s pub ms
 * p50 ... | cons ... e2e ms ...". */
void perf_format_interval(char *buf, size_t cap, double elapsed_s, double interval_s,
                          const perf_stats_t *iv, perf_mode_t mode, uint64_t pending, bool warmup);
/* Writes "p50 p95 p99 p99.9 p99.99 max" of h in ms with microsecond digits. */
void perf_format_percentiles(char *buf, size_t cap, const hist_t *h);
/* The final report, human-readable. */
void perf_print_final(FILE *f, const perf_opts_t *o, const perf_stats_t *tot, double duration_s);
/* The final report as a JSON object; with end_unix_s > 0 (perf_run_end_unix_s)
 * it says when the measured period ended. 0 or -errno. */
int perf_write_json(FILE *f, const perf_opts_t *o, const perf_stats_t *tot, double duration_s,
                    double end_unix_s);

/* ================================================================ connections */

/* What a connection carries a frame to, or the pool's "connection per
 * endpoint" mode keys on. */
typedef enum { PERF_LINK_RESOLVER, PERF_LINK_PRODUCER, PERF_LINK_CONSUMER } perf_link_kind_t;

typedef struct perf_conn perf_conn_t;
typedef struct perf_pool perf_pool_t;

/* An endpoint's (producer, consumer, partition resolver) attachment to a
 * connection, embedded in the endpoint. While attached, the connection keeps a
 * pointer to it and routes to it the frames carrying its id (SEND_RECEIPT,
 * SEND_ERROR, CLOSE_PRODUCER for a producer; MESSAGE, CLOSE_CONSUMER for a
 * consumer) and the responses to its pending requests. */
typedef struct perf_link {
    void *owner; /* the endpoint, handed back to every callback */
    perf_link_kind_t kind;
    uint64_t id;        /* producer_id or consumer_id; unused for the resolver */
    perf_conn_t *conn;  /* NULL when detached */
    size_t slot;        /* index in the connection's link array */
    bool waiting;       /* attached before CONNECTED: ready() is due */
    uint64_t req_first; /* the pending requests: [req_first, req_first + req_count) */
    uint32_t req_count;
} perf_link_t;

/* The callbacks of a pool into its endpoints (owner = perf_link_t.owner). */
typedef struct perf_conn_cbs {
    /* The connection the link waited for is CONNECTED: send on. */
    void (*ready)(void *owner);
    /* A frame for this endpoint (borrowed for the call). */
    void (*frame)(void *owner, frame_t *f);
    /* The connection failed or was lost; the link is already detached.
     * why reads "connection to URL lost: ...", "cannot connect to URL: ...". */
    void (*lost)(void *owner, int rc, const char *why);
    /* A producer's connection write queue fell below its low mark after
     * perf_link_congested said it was full. */
    void (*writable)(void *owner);
} perf_conn_cbs_t;

/* A pool over loop: per_url == 0 gives every attach its own connection,
 * closed when its link detaches (one per producer/consumer); per_url == N
 * shares N connections per broker URL among all links, assigned round-robin,
 * kept open until perf_pool_close_all. cbs is copied. 0 or -ENOMEM. */
int perf_pool_create(struct ev_loop *loop, uint32_t per_url, const perf_conn_cbs_t *cbs,
                     perf_pool_t **out);
/* Detaches every link (without callbacks) and closes every connection. */
void perf_pool_close_all(perf_pool_t *p);
/* perf_pool_close_all, then frees the pool. NULL is a no-op. */
void perf_pool_free(perf_pool_t *p);
/* Connections opened so far (TCP connects started). */
uint64_t perf_pool_opened(const perf_pool_t *p);

/* Attaches l (borrowed until detached; owner, kind, id set) to a connection
 * to url, opening one if needed (host name resolution is the one blocking
 * call). 1: the connection is CONNECTED, send at once; 0: ready() follows;
 * negative: failed, with a one-line reason in err. */
int perf_link_attach(perf_pool_t *p, perf_link_t *l, const char *url, char *err, size_t err_len);
/* Detaches l (no-op when detached) and forgets its pending requests. In
 * per-endpoint mode this closes the connection. */
void perf_link_detach(perf_link_t *l);
/* Records [first, first + count) as l's pending requests (replacing the
 * previous ones): their responses are routed to l. count <= PERF_MAX_TOPICS. */
void perf_link_request(perf_link_t *l, uint64_t first, uint32_t count);
/* Queues frame b (takes the caller's reference) on l's connection and writes
 * what the socket takes. 0; QE_BUSY when the write queue's bound is reached;
 * -ENOTCONN when l is detached (b is dropped). A write error fails the
 * connection (lost() for every link on it, l included) and returns 0. */
int perf_link_send(perf_link_t *l, qbuf_t *b);
/* True when l's connection write queue is above its high mark: a producer
 * stops filling it, and writable() comes when it has drained. */
bool perf_link_congested(perf_link_t *l);
/* "connecting", "handshake", "connected" or "detached", for messages. */
const char *perf_link_state(const perf_link_t *l);

/* ================================================================ client */

typedef struct perf_run perf_run_t;

/* A run over loop with options o (borrowed; must outlive the run). */
int perf_run_create(struct ev_loop *loop, const perf_opts_t *o, FILE *report_out, perf_run_t **out);
/* Starts connecting; the loop then drives everything until the run is done
 * (the loop is broken with ev_break). */
void perf_run_start(perf_run_t *r);
/* Asks the run to stop: stop producing, drain in-flight, close producers and
 * consumers. A second call stops at once. */
void perf_run_stop(perf_run_t *r);
bool perf_run_done(const perf_run_t *r);
/* 0, or a negative code with a message (perf_run_error) after a failure. */
int perf_run_status(const perf_run_t *r);
const char *perf_run_error(const perf_run_t *r);
/* Totals measured after warm-up, and their duration in seconds. */
const perf_stats_t *perf_run_totals(perf_run_t *r, double *duration_s);
/* When the measured period ended (now, while it runs), as wall-clock seconds
 * since the epoch: with perf_run_totals' duration, the period a server's own
 * figures can be lined up with (bench/compare.py). */
double perf_run_end_unix_s(const perf_run_t *r);
void perf_run_free(perf_run_t *r);

#endif
