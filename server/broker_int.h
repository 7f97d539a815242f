/*
 * broker_int.h — the broker's private types, shared by the files of server/
 * and by nothing else.
 *
 * Ownership, all on the loop thread:
 *   broker ─┬─ conns (list)  ── conn ─┬─ producers (by producer_id)
 *           │                         └─ consumers (by consumer_id)
 *           └─ topics (by full name) ─┬─ producers (list; a producer is owned by its conn)
 *                                     └─ subscriptions (by name) ── consumers (array)
 * A conn is reference counted: asynchronous operations it started (an add, a
 * topic load) hold a reference, so their completion finds it, closed or not.
 * A topic lives from its first use until unload/shutdown; it is never freed
 * while an operation on it is pending (topic->busy counts them).
 */
#ifndef QUIRE_SERVER_BROKER_INT_H
#define QUIRE_SERVER_BROKER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "PulsarApi.pb-c.h"
#include "common/accept_pause.h"
#include "common/buf.h"
#include "common/exec.h"
#include "common/hashmap.h"
#include "common/latq.h"
#include "server/broker.h"
#include "server/codec/topic_name.h"
#include "server/sweep.h"
#include "server/auth.h"
#include "server/tls.h"
#include "storage/managed/cursor.h"
#include "storage/managed/managed_ledger.h"

typedef struct conn conn_t;
typedef struct topic topic_t;
typedef struct producer producer_t;
typedef struct subscription subscription_t;
typedef struct consumer consumer_t;

typedef Pulsar__Proto__BaseCommand pb_command_t;
typedef Pulsar__Proto__ServerError pb_error_t;

/* ------------------------------------------------------------------ broker -- */

struct broker {
    struct ev_loop *loop;
    broker_config_t cfg;
    md_store_t *md;
    ml_factory_t *mlf;
    int listen_fd;
    latq_t *publish_latency; /* pulsar_broker_publish_latency: SEND to durable append */
    /* Each loop iteration's time from the poll's return (loop_check, first of
     * the iteration) to the end of flush_prepare (the last work before the
     * next poll): what a request arriving meanwhile may wait to be read. */
    latq_t *loop_latency;
    ev_check loop_check;
    uint64_t loop_woke_us; /* 0: not stamped this iteration */
    ev_io accept_watcher;
    accept_pause_t accept_pause; /* accept() out of descriptors: pause, do not spin */
    conn_t *conns;               /* doubly linked */
    uint32_t conns_count;
    qmap_t *topics; /* full topic name -> topic_t */
    /* Topics whose traffic counters moved since the last
     * broker_admin_traffic_drain: listed iff topic->traffic_gen == traffic_gen
     * (doubly linked via traffic_prev/next); a drain empties the list by
     * moving traffic_gen on. Starts at 1 (0 = never listed). */
    topic_t *traffic_head;
    uint64_t traffic_gen;
    uint64_t producer_name_seq;
    bool shutting_down;
    broker_done_cb shutdown_cb;
    void *shutdown_arg;
    int shutdown_pending;
    /* appends in flight over all connections (maxMessagePublishBufferSizeInMB),
     * and the connections paused because of it (list through buffer_next,
     * oldest first: resumed in that order) */
    uint64_t pending_publish_bytes;
    conn_t *buffer_paused, *buffer_paused_tail;
    size_t buffer_paused_n;        /* connections on that list */
    bool buffer_resume_due;        /* room opened: resume them before the loop waits */
    uint64_t buffer_granted_bytes; /* room promised to resumed connections not yet read */
    uint64_t wq_bytes_total;       /* bytes queued for clients, all connections */
    /* connections with frames queued in this loop iteration, written together
     * before the loop next waits (flush_prepare; list through flush_next) */
    ev_prepare flush_prepare;
    conn_t *flush_list;
    uint64_t socket_writes;    /* writev calls to client sockets that wrote bytes */
    uint64_t socket_bytes;     /* bytes those writes took */
    uint64_t socket_slice_max; /* most bytes one connection wrote in one loop iteration */
    uint64_t buffer_pauses;    /* connections paused by it, ever */
    char **shutdown_names;     /* topics still to close, in waves (broker.c) */
    size_t shutdown_n, shutdown_next;
    bool shutdown_starting; /* in shutdown_next_topics */
    size_t shutdown_calls;  /* metadata calls the closing topics may queue */
    char service_url[256];
    qloop_mailbox_t *mailbox;        /* defers callbacks so none runs inline */
    qmap_t *ns_policies;             /* namespace -> cached policies (ns_policies.c) */
    struct schema_registry *schemas; /* schema registry cache (schema.c), made on first use */
    /* periodic checks of every loaded topic (maintenance.h), in slices (sweep.h):
     * TTL, subscription expiry, backlog quotas, the compaction threshold */
    sweep_t expiry_sweep, sub_expiry_sweep, quota_sweep, compaction_sweep;
    struct broker_security *sec; /* TLS listener, authentication, limits (security.c) */
};

/* A storage completion whose result nobody waits for (logged if an error). */
void broker_ignore_done(int rc, void *arg);
/* Runs fn(arg) on the loop soon (never inline). */
int broker_defer(broker_t *b, void (*fn)(void *), void *arg);

/* ------------------------------------------------------------ connections -- */

typedef struct wq_item {
    qbuf_t *buf; /* one reference held */
    uint32_t off, len;
} wq_item_t;

enum { CONN_AWAIT_CONNECT = 0, CONN_READY = 1, CONN_CLOSED = 2 };

struct conn {
    broker_t *broker;
    conn_t *prev, *next;
    int fd;
    int state;
    int refs;
    ev_io read_watcher, write_watcher;
    ev_timer keepalive_timer;
    bool seen_since_ping; /* any frame received since the last keepalive tick */
    bool ping_outstanding;
    bool reads_paused;
    /* read buffer: bytes [rpos, rlen) not yet decoded */
    uint8_t *rbuf;
    size_t rpos, rlen, rcap;
    /* A large SEND being received: its head stays at rbuf[rpos, rpos +
     * big_head) and its payload part fills big (connection.c). */
    qbuf_t *big;
    size_t big_head;
    /* write queue: ring of items, bytes bounded */
    wq_item_t *wq;
    size_t wq_head, wq_count, wq_cap;
    uint64_t wq_bytes;
    unsigned int write_iter;   /* ev_iteration() of the last write */
    uint64_t write_iter_bytes; /* bytes written to the socket in that iteration */
    bool flush_queued;         /* on broker->flush_list, holding a reference */
    conn_t *flush_next;
    uint64_t pending_publish_bytes;
    int publish_throttles; /* topics whose publish rate paused reads here (limits.c) */
    bool buffer_paused;    /* paused by the broker-wide publish buffer bound */
    conn_t *buffer_prev, *buffer_next;
    uint32_t last_publish_bytes; /* its last append: what a resume lets in next */
    uint32_t buffer_granted;     /* room a resume promised it, not used yet (bytes) */
    qmap64_t *producers;
    qmap64_t *consumers;
    char peer[64];
    char client_version[128];
    int protocol_version;
    bool is_java_client;
    bool supports_broker_entry_metadata;
    int64_t connected_since_ms;
    conn_io_t io;              /* the socket, plain or TLS (tls.h) */
    char role[AUTH_ROLE_MAX];  /* authenticated role, "" when authentication is off */
    struct conn_security *sec; /* auth refresh, limits (conn_security.c) */
};

/* Queues bytes for the client; takes the caller's reference to buf. Returns 0,
 * or QE_CLOSED (buf released) once the connection is closed. */
int conn_send_buf(conn_t *c, qbuf_t *buf, size_t off, size_t len);
/* Encodes and queues one command frame. */
int conn_send_command(conn_t *c, const pb_command_t *cmd);
void conn_send_error(conn_t *c, uint64_t request_id, pb_error_t err, const char *message);
void conn_send_success(conn_t *c, uint64_t request_id);
/* Bytes queued and not yet written: dispatchers stop sending above this. */
#define CONN_WQ_HIGH_BYTES (8u << 20)
/* A connection writes at most this much to its socket per loop iteration; the
 * rest goes when the loop comes round again (connection.c, conn_flush). */
#define CONN_WRITE_SLICE_BYTES (512u << 10)
static inline bool conn_writable(const conn_t *c)
{
    return c->state == CONN_READY && c->wq_bytes < CONN_WQ_HIGH_BYTES;
}
void conn_ref(conn_t *c);
void conn_unref(conn_t *c);
void conn_close(conn_t *c, const char *why);
void conn_pause_reads(conn_t *c);
void conn_resume_reads(conn_t *c);
/* Broker-wide publish buffer (producer.c): count an append's bytes in or out;
 * past the bound the sending connection stops being read, and every paused
 * one resumes once the total is below half. */
void broker_publish_bytes_add(conn_t *c, uint64_t bytes);
void broker_publish_bytes_release(broker_t *b, uint64_t bytes);
void broker_accept_cb(struct ev_loop *loop, ev_io *w, int revents);
/* Writes the frames queued in this loop iteration (connection.c). */
void broker_flush_cb(struct ev_loop *loop, ev_prepare *w, int revents);
void broker_loop_check_cb(struct ev_loop *loop, ev_check *w, int revents);
/* Releases the connections still waiting for broker_flush_cb (broker_free). */
void broker_flush_drop(broker_t *b);

/* ----------------------------------------------------------------- topics -- */

enum { TOPIC_LOADING = 0, TOPIC_READY = 1, TOPIC_FAILED = 2, TOPIC_CLOSING = 3 };

typedef void (*topic_ready_cb)(int rc, topic_t *t, void *arg);

typedef struct topic_waiter {
    struct topic_waiter *next;
    topic_ready_cb cb;
    void *arg;
} topic_waiter_t;

/* Bucket upper bounds of Pulsar's StatsBuckets; the last bucket is overflow. */
#define TOPIC_LATENCY_BUCKETS 10 /* 0.5 1 5 10 20 50 100 200 1000 ms, overflow */
#define TOPIC_SIZE_BUCKETS 9     /* 128 512 1K 2K 4K 16K 100K 1M bytes, overflow */
/* Records one durable append: its latency and its stored size. */
void topic_record_append(topic_t *t, double latency_ms, uint64_t bytes);

struct topic {
    broker_t *broker;
    char *name;    /* full: persistent://tenant/ns/local[-partition-N] */
    int partition; /* -1 unless the topic is a partition */
    bool persistent;
    int state;
    int load_rc;
    topic_waiter_t *waiters;
    managed_ledger_t *ml;  /* NULL for non-persistent topics */
    producer_t *producers; /* doubly linked via producer->topic_prev/next */
    uint32_t producers_count;
    qmap_t *subscriptions;   /* name -> subscription_t */
    int busy;                /* pending operations that reference the topic */
    uint64_t producer_epoch; /* topic epoch for exclusive access modes */
    /* counters since load; before they move, topic_traffic_moving() */
    uint64_t msg_in, bytes_in, msg_out, bytes_out;
    uint64_t traffic_gen;     /* == broker->traffic_gen: on the broker's traffic list */
    uint64_t traffic_base[4]; /* the counters at the last drain (valid while listed) */
    topic_t *traffic_prev, *traffic_next;
    int64_t last_publish_ms;
    int64_t non_persistent_seq; /* message ids of non-persistent topics */
    /* Pulsar's per-topic histograms (dashboards): bucket counts, as
     * pulsar_storage_write_latency_le_* (ms) and pulsar_entry_size_le_* (bytes) */
    uint64_t write_latency_buckets[TOPIC_LATENCY_BUCKETS];
    uint64_t write_latency_count;
    double write_latency_sum_ms;
    uint64_t entry_size_buckets[TOPIC_SIZE_BUCKETS];
    uint64_t entry_size_count, entry_size_sum;
    struct topic_limits *limits; /* rate limits and quotas (limits.c); NULL until used */
    /* producer access modes (producer_access.c) */
    bool epoch_loaded, epoch_set;  /* producer_epoch read from the ledger / ever set */
    producer_t *waiting_producers; /* WaitForExclusive queue, via producer->wait_next */
    bool promote_scheduled;
    /* termination (termination.c) and deduplication (dedup.c) */
    bool terminated;
    ml_pos_t terminated_pos;
    struct terminate_op *terminating; /* admin requests waiting for adds to drain */
    uint32_t adds_pending;            /* persistent SENDs appended, not yet released */
    struct dedup_state *dedup;        /* NULL unless deduplication is or was enabled */
    /* backlog quotas (backlog_quota.c) */
    int64_t quota_publish_check_ms;  /* last size check on publish */
    ml_pos_t quota_oldest_pos;       /* oldest unacknowledged entry at the last age check */
    int64_t quota_oldest_publish_ms; /* its publish time; 0 = unknown */
    bool quota_reading;              /* the age check's read is in flight */
    uint64_t quota_evictions_size, quota_evictions_time;
    struct compaction_state *compaction; /* compacted view, runs (compaction.c); NULL until used */
};

/* Canonical full name of a client-given topic name; QE_INVALID if illegal. */
int broker_topic_canonical(const char *in, char *out, size_t len);
/* "/topics/<tenant>/<ns>/<domain>/<local>": the registry key of a topic. */
int topic_registry_path(const topic_name_t *tn, char *out, size_t len);

/* Finds or loads the topic `name` (a full name); cb on the loop, never inline.
 * create: auto-create when absent (allowAutoTopicCreation and the request). */
int broker_topic_get(broker_t *b, const char *name, bool create, topic_ready_cb cb, void *arg);
topic_t *broker_topic_find(broker_t *b, const char *name);
/* The namespace's policies changed (or were first loaded): apply them to t. */
struct ns_policies;
void topic_policies_changed(topic_t *t, const struct ns_policies *p);
/* The managed-ledger configuration of t under policies p (retention). */
void topic_ml_config(const topic_t *t, const struct ns_policies *p, ml_config_t *out);
/* Called by the managed ledger listener: wake tailing subscriptions. */
void topic_on_entry_added(topic_t *t);
void topic_remove_producer(topic_t *t, producer_t *p);
/* Non-persistent topics: hands the entry to each subscription's consumers that
 * have permits now; dropped for the others (Pulsar's semantics). */
void topic_publish_non_persistent(topic_t *t, qbuf_t *entry, int32_t num_messages);
void topic_close_all(topic_t *t, broker_done_cb cb, void *arg);
/* Frees a topic and everything it owns (subscriptions, limits, compaction and
 * dedup state); its producers must be gone and its ledger closed or NULL. */
void topic_destroy(topic_t *t);

/* Call just before a topic's msg_in/bytes_in/msg_out/bytes_out move: the first
 * time since the last broker_admin_traffic_drain, remembers them and lists the
 * topic for the next drain, so that sampling rates costs O(topics that moved),
 * not O(topics with clients). */
static inline void topic_traffic_moving(topic_t *t)
{
    broker_t *b = t->broker;
    if (t->traffic_gen == b->traffic_gen)
        return;
    t->traffic_gen = b->traffic_gen;
    t->traffic_base[0] = t->msg_in;
    t->traffic_base[1] = t->bytes_in;
    t->traffic_base[2] = t->msg_out;
    t->traffic_base[3] = t->bytes_out;
    t->traffic_prev = NULL;
    t->traffic_next = b->traffic_head;
    if (b->traffic_head)
        b->traffic_head->traffic_prev = t;
    b->traffic_head = t;
}

/* -------------------------------------------------------------- producers -- */

/* A producer's or consumer's rate for topic stats, measured over the time
 * since the previous stats read (at least a second; the first read counts
 * from the connection's start), as Pulsar's publishers[] and consumers[]
 * rates are over its stats interval. */
typedef struct traffic_rate {
    int64_t sample_ms; /* 0: never read */
    uint64_t sample_msgs, sample_bytes;
    double msgs, bytes; /* per second */
} traffic_rate_t;

struct producer {
    conn_t *conn;
    topic_t *topic;
    producer_t *topic_prev, *topic_next;
    uint64_t producer_id;
    char *name;
    uint64_t epoch;
    int access_mode; /* Pulsar__Proto__ProducerAccessMode */
    bool ready;
    int64_t last_sequence_id;
    /* traffic, for stats: totals, and the rate since the previous stats read */
    uint64_t msg_in, bytes_in;
    traffic_rate_t rate_in;
    bool has_schema_version; /* PRODUCER_SUCCESS.schema_version (schema.c) */
    uint8_t schema_version[8];
    /* access modes (producer_access.c) */
    bool has_topic_epoch; /* the client named the topic epoch it last saw */
    uint64_t topic_epoch;
    bool waiting; /* queued by WaitForExclusive; topic set, not in its list */
    producer_t *wait_next;
    uint64_t request_id; /* of the PRODUCER command, answered again when promoted */
};

void producer_handle_create(conn_t *c, const Pulsar__Proto__CommandProducer *cmd);
/* stored_buf: when the stored slice is all of a buffer the reader made for it
 * (frame_t.payload_buf), the entry keeps a reference to it instead of a copy. */
void producer_handle_send(conn_t *c, const Pulsar__Proto__CommandSend *cmd, const uint8_t *stored,
                          size_t stored_len, qbuf_t *stored_buf, bool checksum_ok);
void producer_handle_close(conn_t *c, const Pulsar__Proto__CommandCloseProducer *cmd);
/* Detaches the producer from its topic and frees it (conn close, unload). */
void producer_destroy(producer_t *p);

/* ---------------------------------------------------- subscriptions/consumers -- */

typedef struct pending_ack {
    ml_pos_t pos;
    int32_t batch_size;
} pending_ack_t;

struct consumer {
    conn_t *conn;
    subscription_t *sub;
    uint64_t consumer_id;
    char *name;
    int priority;
    int64_t permits; /* may go negative: whole entries are sent */
    bool closed;
    /* packed position -> unacked_value(batch size, key hash); positions put
     * and removed about in order (qmap64_new_runs) */
    qmap64_t *unacked;
    uint64_t unacked_messages;
    /* Key_Shared STICKY ranges, inclusive, in 0..65535 */
    int32_t (*ranges)[2];
    size_t ranges_count;
    /* Key_Shared AUTO_SPLIT: this consumer's hash-ring points, computed on first
     * use from name and consumer_id (which never change); owned, NULL until then
     * (dispatcher.c ring_owner) */
    uint32_t *ring_points;
    uint64_t msg_out, bytes_out;
    uint64_t msg_redelivered; /* messages sent again (their redelivery count > 0) */
    traffic_rate_t rate_out;  /* since the previous stats read (broker_admin.c) */
    traffic_rate_t rate_redeliver;
    double avg_msgs_per_entry; /* moving average of the entries sent (Pulsar's stat) */
    int64_t connected_since_ms;
    /* Key_Shared: a consumer that joined while others held unacknowledged
     * entries gets nothing at or after join_limit until the mark-delete
     * position passes it (per-key order across joins). */
    ml_pos_t join_limit;
    bool has_join_limit;
    bool blocked_on_unacked; /* max unacked messages reached (limits.c) */
    bool end_of_topic_sent;  /* REACHED_END_OF_TOPIC sent (termination.c) */
    bool auto_consume;       /* subscribed with AUTO_CONSUME: not "active" for schemas */
};

struct subscription {
    topic_t *topic;
    char *name;
    int type; /* Pulsar__Proto__CommandSubscribe__SubType */
    bool durable;
    ml_cursor_t *cursor; /* NULL for non-persistent topics */
    consumer_t **consumers;
    size_t consumers_count, consumers_cap;
    /* Key_Shared AUTO_SPLIT: every consumer's ring points, sorted (dispatcher.c
     * ring_owner); ring_len 0: to be built (set so when consumers change). */
    struct ring_slot *ring;
    size_t ring_len;
    size_t rr_next;      /* Shared round robin index */
    bool reading;        /* a cursor read is in flight */
    bool opening;        /* the cursor is being opened */
    int key_shared_mode; /* Pulsar__Proto__KeySharedMode */
    /* positions to send again (redelivered, or held back by Key_Shared) */
    ml_pos_t *replay;
    uint32_t *replay_keys; /* key hash of replay[i], same indexes */
    size_t replay_count, replay_cap;
    qmap64_t *redelivery_counts; /* packed position -> count */
    qmap64_t *replay_hashes;     /* Key_Shared: sticky-key hash -> entries held in replay */
    /* Key_Shared: key hash -> unacknowledged entries of it held by consumers
     * that no longer own it ("draining hashes", consumer.c); draining_unknown:
     * the last rebuild ran out of memory (every key waits until one succeeds) */
    qmap64_t *draining;
    bool draining_unknown;
    struct subscribe_ctx *waiting; /* SUBSCRIBEs waiting for the cursor to open */
    uint64_t msg_out, bytes_out;   /* before they move, subscription_traffic_moving() */
    uint64_t traffic_gen;          /* == broker->traffic_gen: traffic_base is valid */
    uint64_t traffic_base[2];      /* msg_out, bytes_out at the last drain */
    bool replay_stalled;           /* the replay set's head cannot go now; read new entries */
    bool replay_reading;    /* the read in flight is of the replay set, from replay_read_from */
    bool replay_read_stale; /* Key_Shared: an entry below it joined the set meanwhile */
    ml_pos_t replay_read_from;
    ev_timer read_retry;       /* a failed read is tried again (dispatcher.c) */
    uint32_t read_failures;    /* in a row: the back-off doubles */
    double avg_msgs_per_entry; /* moving average of the entries sent: permits -> entries */
    /* A non-durable subscription normally goes with its last consumer; after a
     * SEEK it waits (orphan_timer) for the reader to come back to the reset cursor. */
    bool keep_without_consumers;
    ev_timer orphan_timer;
    bool closing;              /* freed when the read in flight completes */
    struct sub_limits *limits; /* dispatch rate state (limits.c); NULL until used */
    /* subscription_properties and replicate_subscription_state of the SUBSCRIBE
     * that created it, as JSON (subscription_meta.c); NULL: none given, or
     * persisted in the managed ledger's properties (restored subscriptions) */
    char *meta_json;
    struct delayed_index *delayed; /* entries held until deliver_at_time (delayed.c) */
    int64_t active_until_ms;       /* subscription expiry (expiry.c) */
    bool expiring;                 /* a TTL/age search is running (expiry.c) */
    uint64_t msg_expired;          /* entries expired by TTL or age eviction */
    uint64_t msg_redelivered;      /* messages sent again (their redelivery count > 0) */
    int64_t loaded_ms;             /* wall clock when created or loaded: rates from there */
    traffic_rate_t rate_redeliver, rate_expired; /* since the previous stats read */
    struct compaction_sub *compacted; /* read_compacted state (compaction.c); NULL: reads as is */
};

/* Same for a subscription's msg_out/bytes_out (its topic's move with them). */
static inline void subscription_traffic_moving(subscription_t *s)
{
    uint64_t gen = s->topic->broker->traffic_gen;
    if (s->traffic_gen == gen)
        return;
    s->traffic_gen = gen;
    s->traffic_base[0] = s->msg_out;
    s->traffic_base[1] = s->bytes_out;
}

/* Packs a position into 64 bits for the broker's in-memory maps: ledger ids
 * below 2^40 and entry ids below 2^24 (broker_config_load caps
 * managedLedgerMaxEntriesPerLedger below that). Never stored. */
#define POS_ENTRY_BITS 24
static inline uint64_t pos_pack(ml_pos_t p)
{
    return ((uint64_t)p.ledger_id << POS_ENTRY_BITS) | (uint64_t)p.entry_id;
}
static inline ml_pos_t pos_unpack(uint64_t k)
{
    return (ml_pos_t){(int64_t)(k >> POS_ENTRY_BITS), (int64_t)(k & ((1u << POS_ENTRY_BITS) - 1))};
}

void consumer_handle_subscribe(conn_t *c, const Pulsar__Proto__CommandSubscribe *cmd);
void consumer_handle_flow(conn_t *c, const Pulsar__Proto__CommandFlow *cmd);
void consumer_handle_ack(conn_t *c, const Pulsar__Proto__CommandAck *cmd);
void consumer_handle_redeliver(conn_t *c,
                               const Pulsar__Proto__CommandRedeliverUnacknowledgedMessages *cmd);
void consumer_handle_unsubscribe(conn_t *c, const Pulsar__Proto__CommandUnsubscribe *cmd);
void consumer_handle_close(conn_t *c, const Pulsar__Proto__CommandCloseConsumer *cmd);
void consumer_handle_seek(conn_t *c, const Pulsar__Proto__CommandSeek *cmd);
void consumer_handle_get_last_message_id(conn_t *c,
                                         const Pulsar__Proto__CommandGetLastMessageId *cmd);
void consumer_destroy(consumer_t *cons, bool redeliver);

/* Dispatcher: sends what the subscription's consumers have permits for. */
void subscription_dispatch(subscription_t *s);
/* Closes the cursor (if any) and frees; consumers must be gone. */
void subscription_free(subscription_t *s);
consumer_t *subscription_active_consumer(subscription_t *s);
/* The replay set: sorted positions to send again before new entries, each with
 * its entry's Key_Shared key hash; on a Key_Shared subscription replay_hashes
 * counts the entries per hash, kept right by add, remove, trim and clear (a
 * hash with a count holds newer entries of the key behind the replay). */
/* The consumer that owns key hash (0..65535) in a Key_Shared subscription:
 * STICKY by the declared ranges (NULL: nobody), AUTO_SPLIT by the ring. */
consumer_t *subscription_key_shared_owner(subscription_t *s, uint32_t hash);
void subscription_replay_add(subscription_t *s, ml_pos_t pos, uint32_t key_hash);
void subscription_replay_remove(subscription_t *s, ml_pos_t pos);
/* Capacity for `need` positions in both arrays; -1 when out of memory. */
int subscription_replay_reserve(subscription_t *s, size_t need);
/* Drops replay entries the cursor has acknowledged meanwhile. */
void subscription_replay_trim(subscription_t *s);
void subscription_replay_clear(subscription_t *s);
/* A consumer's unacked map value: the entry's message count (low 32 bits,
 * never 0) and its Key_Shared key hash (high 32), so a redelivery can hold
 * newer entries of the same key behind it. */
static inline void *unacked_value(int32_t num_messages, uint32_t key_hash)
{
    return (void *)(uintptr_t)((uint64_t)key_hash << 32 | (uint32_t)num_messages);
}
static inline uint64_t unacked_messages_of(const void *v)
{
    return (uint64_t)(uintptr_t)v & 0xffffffffu;
}
static inline uint32_t unacked_key_hash_of(const void *v)
{
    return (uint32_t)((uint64_t)(uintptr_t)v >> 32);
}
/* Adds or removes an entry of cons->unacked; Key_Shared: one that drains
 * (its hash moved to another consumer) is counted down in s->draining. */
void consumer_unacked_put(consumer_t *cons, uint64_t key, void *v);
void *consumer_unacked_take(consumer_t *cons, uint64_t key);
/* Key_Shared: whether a consumer of s other than cons, hash's owner, holds an
 * entry of hash (s->draining: no lookup at all while no key has moved). */
bool subscription_hash_held_elsewhere(subscription_t *s, const consumer_t *cons, uint32_t hash);

/* Key_Shared: counts one more entry of hash slot key_hash held in the replay
 * set (delayed.c merges released entries into the set directly). */
void subscription_replay_count_key(subscription_t *s, uint32_t key_hash);
/* Opens the persisted durable subscription `name` of a topic being loaded, so
 * it exists (stats, backlog, trimming) before any consumer comes back. */
int subscription_restore(topic_t *t, const char *name);
/* Keeps a non-durable subscription without consumers for a while (SEEK). */
void subscription_keep_orphan(subscription_t *s, double seconds);
/* Removes the subscription from its topic and frees it (cursor closed, or
 * deleted when non-durable). */
void subscription_remove(subscription_t *s);

/* ------------------------------------------------------------------ lookup -- */

void lookup_handle_lookup(conn_t *c, const Pulsar__Proto__CommandLookupTopic *cmd);
void lookup_handle_partitioned_metadata(conn_t *c,
                                        const Pulsar__Proto__CommandPartitionedTopicMetadata *cmd);
void lookup_handle_topics_of_namespace(conn_t *c,
                                       const Pulsar__Proto__CommandGetTopicsOfNamespace *cmd);

/* Maps a Quire error code to the Pulsar ServerError clients react to. */
pb_error_t broker_server_error(int rc);

#endif
