/*
 * quire_perf_client.c — quire-perf's protocol client: one libev loop, the
 * producers and consumers (endpoints) and their state machines, all built on
 * server/codec. Their connections (one each, or a pool of N per broker shared
 * by all, --max-connections) are quire_perf_conn.c's: an endpoint holds a
 * perf_link_t to its connection, which calls it back with its frames.
 *
 * Run phases:
 *   RESOLVE   the resolver asks PARTITIONED_METADATA for every topic, and
 *             the topic list is expanded to its partitions
 *   SETUP     consumers subscribe first (so that a Latest subscription sees
 *             every message of the run), then producers are created
 *   RUN       producers send (paced or as fast as max-pending allows),
 *             consumers receive, a timer prints a line every interval
 *   DRAIN     no new messages; wait (bounded) for the in-flight receipts and,
 *             in `both` mode, for the consumers to catch up
 *   CLOSE     CLOSE_PRODUCER / CLOSE_CONSUMER, answered or timed out
 *   DONE      the loop is broken
 * A failure anywhere (refused connection, ERROR, SEND_ERROR, timeout) records
 * the first error and goes to CLOSE.
 *
 * Endpoint (producer/consumer) states:
 *   CONNECTING (attached to a connection to the service URL, waiting for its
 *   CONNECTED) -> LOOKUP -> [Redirect: attach to the given broker, LOOKUP
 *   again | Connect elsewhere: attach there] -> CREATING -> READY -> CLOSING
 *   -> CLOSED; any -> FAILED. A CLOSE_PRODUCER/CLOSE_CONSUMER from the broker
 *   sends a READY endpoint back to CONNECTING (epoch + 1); a producer then
 *   resends its in-flight SEND frames, kept for that purpose. A lost
 *   connection fails every endpoint on it (a CLOSING one is just CLOSED).
 *
 * Bounds: in-flight messages per producer (max-pending), pending acks
 * (ACK_MAX), every operation (op-timeout-s), the drain (DRAIN_MAX_S); the
 * connections bound their write queues and frames (quire_perf_conn.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/ring.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "server/codec/topic_name.h"
#include "tools/quire_perf.h"

#define ACK_MAX 1000u
#define EP_FIRST_CAP 16u /* first size of a producer's rings and a consumer's acks */
#define ACK_INTERVAL_S 0.1
#define DRAIN_MAX_S 10.0
#define MAX_REDIRECTS 8

typedef enum { EP_RESOLVER, EP_PRODUCER, EP_CONSUMER } ep_kind_t;
typedef enum {
    ST_IDLE,
    ST_CONNECTING,
    ST_LOOKUP,
    ST_CREATING,
    ST_READY,
    ST_CLOSING,
    ST_CLOSED,
    ST_FAILED,
} ep_state_t;

typedef enum { P_RESOLVE, P_SETUP, P_RUN, P_DRAIN, P_CLOSE, P_DONE } phase_t;

typedef struct inflight {
    uint64_t first_seq;
    uint32_t n;
    qbuf_t *frame; /* kept to resend after a reconnect */
} inflight_t;

typedef struct ep {
    perf_run_t *run;
    ep_kind_t kind;
    size_t index;
    char topic[TOPIC_NAME_MAX + 1];
    ep_state_t state;
    /* the connection */
    perf_link_t link;
    char url[PERF_MAX_URL]; /* of the broker the endpoint is attached to */
    ev_timer op_timer;
    int redirects;
    bool lookup_authoritative;
    bool lookup_after_connect; /* else create at once */
    uint64_t request_id;       /* of the pending request */
    uint64_t id;               /* producer or consumer id */
    uint64_t epoch;
    /* producer */
    char producer_name[PERF_MAX_NAME];
    bool have_name;
    perf_pace_t pace;
    perf_ptimer_t pace_timer, batch_timer; /* precise: run->timers */
    perf_batch_t batch;
    uint64_t next_seq;
    uint64_t msgs_issued; /* taken into batches by this producer */
    /* sched_ns, inflight and acks start small and double up to their bound
     * (max-pending, ACK_MAX) as needed: with 100,000 endpoints that send one
     * message each, allocating the bounds up front cost more (page faults) than
     * the rest of the client did. */
    uint64_t *sched_ns; /* by seq & ring_mask; holds the pending seqs */
    size_t ring_mask;
    uint32_t pending_msgs; /* seqs next_seq - pending_msgs .. next_seq - 1 */
    inflight_t *inflight;
    size_t if_cap, if_head, if_count;
    uint8_t *payload;
    uint32_t key_state;
    /* consumer */
    uint32_t permits_unsent;
    int64_t *acks; /* ledger, entry pairs */
    size_t n_acks, cap_acks;
    bool has_cumulative;
    ev_timer ack_timer;
    /* resolver */
    size_t resolved;
    uint32_t *partitions;
} ep_t;

struct perf_run {
    struct ev_loop *loop;
    const perf_opts_t *o;
    FILE *out;
    phase_t phase;
    perf_pool_t *pool;
    ep_t *resolver;
    ep_t **eps; /* consumers first, then producers */
    size_t n_eps, n_cons, n_prod;
    char **topics; /* after partition expansion */
    size_t n_topics;
    uint64_t next_id, next_request;
    perf_stats_t iv, tot;
    bool warmup;
    uint64_t mono_base_ns;
    int64_t wall_base_us;
    uint64_t run_start_ns, measure_start_ns, end_ns, last_report_ns;
    ev_timer report_timer, phase_timer, drain_timer;
    uint64_t issued, produced_total, consumed_total;
    uint64_t issue_cap;     /* messages to issue in all: --messages, or all producers' share */
    uint64_t pending_total; /* sum of the producers' pending_msgs */
    size_t close_next;      /* P_CLOSE: eps before it are no longer closing */
    int status;
    char err[512];
    perf_scratch_t z, dz;
    size_t ready;
    perf_ptimers_t timers; /* the producers' pace and batch timers */
    perf_witness_t *witness; /* --host-witness, until the run is done */
};

static void ep_fail(ep_t *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ep_connect(ep_t *e, const char *url, bool lookup_after);
static void ep_begin(ep_t *e);
static void producer_pump(ep_t *p);
static void producer_flush(ep_t *p);
static void run_close_begin(perf_run_t *r);
static void run_check_drain(perf_run_t *r);
static void run_done(perf_run_t *r);
static void run_setup(perf_run_t *r);
static void run_ep_ready(perf_run_t *r);

static const char *kind_name(ep_kind_t k)
{
    return k == EP_PRODUCER ? "producer" : k == EP_CONSUMER ? "consumer" : "resolver";
}

static const char *server_error_name(int v)
{
    const ProtobufCEnumValue *ev =
        protobuf_c_enum_descriptor_get_value(&pulsar__proto__server_error__descriptor, v);
    return ev ? ev->name : "UnknownError";
}

static int64_t run_wall_us(const perf_run_t *r, uint64_t mono_ns)
{
    return r->wall_base_us + (int64_t)(mono_ns - r->mono_base_ns) / 1000;
}

/* ================================================================ failures */

static void run_fail(perf_run_t *r, int rc, const char *msg)
{
    if (r->status == 0) {
        r->status = rc ? rc : QE_INVALID;
        snprintf(r->err, sizeof r->err, "%s", msg);
        fprintf(stderr, "quire-perf: error: %s\n", msg);
    }
    if (r->phase < P_CLOSE)
        run_close_begin(r);
}

static void ep_fail(ep_t *e, int rc, const char *fmt, ...)
{
    char full[512];
    int n = snprintf(full, sizeof full, "%s on %.200s: ", kind_name(e->kind), e->topic);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(full + n, sizeof full - (size_t)n, fmt, ap);
    va_end(ap);
    ev_timer_stop(e->run->loop, &e->op_timer);
    perf_link_detach(&e->link);
    e->state = ST_FAILED;
    run_fail(e->run, rc, full);
}

static void op_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ep_t *e = w->data;
    if (e->state == ST_CLOSING) {
        perf_link_detach(&e->link);
        e->state = ST_CLOSED;
        run_check_drain(e->run);
        return;
    }
    static const char *const what[] = {"idle",  "connecting", "lookup", "creating",
                                       "ready", "closing",    "closed"};
    const char *state = e->state <= ST_CLOSED ? what[e->state] : "failed";
    if (e->state == ST_CONNECTING)
        state = perf_link_state(&e->link); /* connecting or handshake */
    ep_fail(e, QE_TIMEOUT, "timed out after %.1f s (%s, %s)", e->run->o->op_timeout_s, state,
            e->url);
}

static void op_timer_start(ep_t *e)
{
    ev_timer_stop(e->run->loop, &e->op_timer);
    ev_timer_set(&e->op_timer, e->run->o->op_timeout_s, 0);
    ev_timer_start(e->run->loop, &e->op_timer);
}

/* ================================================================ connection */

/* Sends a frame built by an encoder on e's connection (taking b); an encoder
 * failure or the write queue's bound fails the endpoint. A detached endpoint
 * (its connection was just lost) drops the frame. */
static void ep_send(ep_t *e, int rc, qbuf_t *b, const char *what)
{
    if (rc != 0) {
        ep_fail(e, rc, "cannot encode %s: %s", what, q_strerror(rc));
        return;
    }
    rc = perf_link_send(&e->link, b);
    if (rc == QE_BUSY)
        ep_fail(e, rc, "write queue bound reached");
    else if (rc != 0 && rc != -ENOTCONN)
        ep_fail(e, rc, "cannot send %s: %s", what, q_strerror(rc));
}

static void ep_on_connected(ep_t *e);

/* Attaches e to a connection to url (its own, or a shared one); once that is
 * CONNECTED (now or later), e sends LOOKUP (lookup_after) or creates itself. */
static void ep_connect(ep_t *e, const char *url, bool lookup_after)
{
    char target[PERF_MAX_URL];
    snprintf(target, sizeof target, "%s", url);
    perf_link_detach(&e->link);
    snprintf(e->url, sizeof e->url, "%s", target);
    e->lookup_after_connect = lookup_after;
    e->state = ST_CONNECTING;
    char err[512];
    int rc = perf_link_attach(e->run->pool, &e->link, target, err, sizeof err);
    if (rc < 0)
        ep_fail(e, rc, "%s", err);
    else if (rc == 1)
        ep_on_connected(e);
}

/* The pool's callbacks (quire_perf_conn.c). */
static void ep_on_frame(ep_t *e, frame_t *f);

static void ep_conn_ready(void *owner)
{
    ep_on_connected(owner);
}

static void ep_conn_frame(void *owner, frame_t *f)
{
    ep_on_frame(owner, f);
}

/* e's connection is gone (e is detached): a closing endpoint is closed, any
 * other fails, as when it had the connection to itself. */
static void ep_conn_lost(void *owner, int rc, const char *why)
{
    ep_t *e = owner;
    if ((e->state == ST_CLOSING || e->state == ST_CLOSED) && rc == -ECONNRESET) {
        ev_timer_stop(e->run->loop, &e->op_timer);
        e->state = ST_CLOSED;
        run_check_drain(e->run);
        return;
    }
    if (e->state == ST_FAILED || e->state == ST_CLOSED)
        return;
    ep_fail(e, rc, "%s", why);
}

static void ep_conn_writable(void *owner)
{
    producer_pump(owner);
}

static const perf_conn_cbs_t ep_conn_cbs = {
    .ready = ep_conn_ready,
    .frame = ep_conn_frame,
    .lost = ep_conn_lost,
    .writable = ep_conn_writable,
};

/* ================================================================ requests */

static uint64_t next_request(perf_run_t *r)
{
    return r->next_request++;
}

static void ep_send_lookup(ep_t *e)
{
    e->state = ST_LOOKUP;
    e->request_id = next_request(e->run);
    perf_link_request(&e->link, e->request_id, 1);
    qbuf_t *b = NULL;
    int rc = perf_cmd_lookup(e->topic, e->request_id, e->lookup_authoritative, &b);
    ep_send(e, rc, b, "LOOKUP");
}

static void ep_send_create(ep_t *e)
{
    perf_run_t *r = e->run;
    e->state = ST_CREATING;
    e->request_id = next_request(r);
    perf_link_request(&e->link, e->request_id, 1);
    qbuf_t *b = NULL;
    int rc;
    if (e->kind == EP_PRODUCER) {
        rc = perf_cmd_producer(e->topic, e->id, e->request_id,
                               e->have_name ? e->producer_name : NULL, e->epoch, &b);
    } else {
        char name[64];
        snprintf(name, sizeof name, "quire-perf-c%zu", e->index);
        rc = perf_cmd_subscribe(e->topic, r->o->subscription, r->o->sub_type, e->id, e->request_id,
                                name, r->o->sub_earliest, &b);
    }
    ep_send(e, rc, b, e->kind == EP_PRODUCER ? "PRODUCER" : "SUBSCRIBE");
}

static void resolver_send(ep_t *e)
{
    perf_run_t *r = e->run;
    e->state = ST_LOOKUP;
    e->request_id = r->next_request;
    r->next_request += r->o->n_topics;
    perf_link_request(&e->link, e->request_id, (uint32_t)r->o->n_topics);
    for (size_t i = 0; i < r->o->n_topics && e->link.conn; i++) {
        qbuf_t *b = NULL;
        int rc = perf_cmd_partitioned_metadata(r->o->topics[i], e->request_id + i, &b);
        ep_send(e, rc, b, "PARTITIONED_METADATA");
    }
}

static bool same_broker(const char *a, const char *b)
{
    char ha[PERF_MAX_URL], hb[PERF_MAX_URL];
    uint16_t pa, pb;
    if (perf_parse_url(a, ha, sizeof ha, &pa) != 0 || perf_parse_url(b, hb, sizeof hb, &pb) != 0)
        return strcmp(a, b) == 0;
    return pa == pb && strcasecmp(ha, hb) == 0;
}

/* ================================================================ frames */

/* e's connection is CONNECTED: go on with what e attached for. */
static void ep_on_connected(ep_t *e)
{
    if (e->state != ST_CONNECTING)
        return;
    if (e->kind == EP_RESOLVER)
        resolver_send(e);
    else if (e->lookup_after_connect)
        ep_send_lookup(e);
    else
        ep_send_create(e);
}

static void on_lookup(ep_t *e, const Pulsar__Proto__CommandLookupTopicResponse *l)
{
    if (e->state != ST_LOOKUP || l->request_id != e->request_id)
        return;
    int type = l->has_response
                   ? (int)l->response
                   : (int)PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed;
    if (type == PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed) {
        ep_fail(e, QE_UNAVAILABLE, "lookup failed: %s: %s",
                l->has_error ? server_error_name(l->error) : "no response",
                l->message ? l->message : "");
        return;
    }
    const char *url = l->brokerserviceurl;
    if (!url || !*url) {
        ep_fail(e, QE_INVALID, "lookup answered without brokerServiceUrl (TLS only?)");
        return;
    }
    char target[PERF_MAX_URL];
    snprintf(target, sizeof target, "%s", url);
    if (type == PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Redirect) {
        if (++e->redirects > MAX_REDIRECTS) {
            ep_fail(e, QE_INVALID, "more than %d lookup redirects", MAX_REDIRECTS);
            return;
        }
        e->lookup_authoritative = l->has_authoritative && l->authoritative;
        ep_connect(e, target, true);
        return;
    }
    if ((l->has_proxy_through_service_url && l->proxy_through_service_url) ||
        same_broker(target, e->url))
        ep_send_create(e);
    else
        ep_connect(e, target, false);
}

static void on_partitions(ep_t *e, const Pulsar__Proto__CommandPartitionedTopicMetadataResponse *m)
{
    perf_run_t *r = e->run;
    if (e->kind != EP_RESOLVER || m->request_id < e->request_id ||
        m->request_id >= e->request_id + r->o->n_topics)
        return;
    size_t i = (size_t)(m->request_id - e->request_id);
    if (m->has_response &&
        m->response ==
            PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__LOOKUP_TYPE__Failed) {
        ep_fail(e, QE_UNAVAILABLE, "partitioned metadata of %s: %s: %s", r->o->topics[i],
                m->has_error ? server_error_name(m->error) : "failed",
                m->message ? m->message : "");
        return;
    }
    if (m->has_partitions && m->partitions > PERF_MAX_PARTITIONS) {
        ep_fail(e, QE_TOO_LARGE, "%s has %u partitions (bound %d)", r->o->topics[i], m->partitions,
                PERF_MAX_PARTITIONS);
        return;
    }
    e->partitions[i] = m->has_partitions ? m->partitions : 0;
    if (++e->resolved == r->o->n_topics) {
        ev_timer_stop(r->loop, &e->op_timer);
        perf_link_detach(&e->link);
        e->state = ST_CLOSED;
        run_setup(r);
    }
}

static void ep_ready(ep_t *e)
{
    ev_timer_stop(e->run->loop, &e->op_timer);
    e->state = ST_READY;
    run_ep_ready(e->run);
}

static void on_producer_success(ep_t *e, const Pulsar__Proto__CommandProducerSuccess *s)
{
    if (e->kind != EP_PRODUCER || e->state != ST_CREATING || s->request_id != e->request_id)
        return;
    if (s->has_producer_ready && !s->producer_ready)
        return; /* pending (WaitForExclusive): a second PRODUCER_SUCCESS follows */
    snprintf(e->producer_name, sizeof e->producer_name, "%s", s->producer_name);
    e->have_name = true;
    bool reconnect = e->epoch > 0;
    /* Resend what was in flight when the broker closed the producer. */
    for (size_t i = 0; i < e->if_count && e->link.conn; i++)
        ep_send(e, 0, qbuf_ref(e->inflight[(e->if_head + i) % e->if_cap].frame), "SEND");
    if (reconnect) {
        ev_timer_stop(e->run->loop, &e->op_timer);
        e->state = ST_READY;
        producer_pump(e);
        return;
    }
    ep_ready(e);
}

static void on_success(ep_t *e, uint64_t request_id)
{
    if (request_id != e->request_id)
        return;
    if (e->state == ST_CLOSING) {
        ev_timer_stop(e->run->loop, &e->op_timer);
        perf_link_detach(&e->link);
        e->state = ST_CLOSED;
        run_check_drain(e->run);
        return;
    }
    if (e->kind != EP_CONSUMER || e->state != ST_CREATING)
        return;
    bool reconnect = e->epoch > 0;
    qbuf_t *b = NULL;
    int rc = perf_cmd_flow(e->id, e->run->o->receiver_queue_size, &b);
    ep_send(e, rc, b, "FLOW");
    e->permits_unsent = 0;
    if (reconnect) {
        ev_timer_stop(e->run->loop, &e->op_timer);
        e->state = ST_READY;
        return;
    }
    ep_ready(e);
}

static void on_error(ep_t *e, const Pulsar__Proto__CommandError *er)
{
    if (er->request_id != e->request_id && er->request_id != UINT64_MAX)
        return;
    if (e->state == ST_CLOSING) {
        on_success(e, er->request_id);
        return;
    }
    ep_fail(e, QE_INVALID, "%s: %s", server_error_name(er->error), er->message);
}

/* The broker closed our producer/consumer (unload, fencing): look it up again. */
static void on_broker_close(ep_t *e)
{
    if (e->state == ST_CLOSING) {
        on_success(e, e->request_id);
        return;
    }
    fprintf(stderr, "quire-perf: %s on %s closed by the broker, reconnecting\n", kind_name(e->kind),
            e->topic);
    e->epoch++;
    if (e->kind == EP_PRODUCER)
        perf_ptimer_stop(&e->run->timers, &e->pace_timer);
    ep_begin(e);
}

/* ---------------------------------------------------------------- producer */

static void on_receipt(ep_t *p, const Pulsar__Proto__CommandSendReceipt *s)
{
    perf_run_t *r = p->run;
    if (p->kind != EP_PRODUCER || p->if_count == 0)
        return;
    inflight_t *f = &p->inflight[p->if_head];
    if (s->sequence_id < f->first_seq)
        return; /* a duplicate receipt after a resend */
    if (s->sequence_id != f->first_seq) {
        ep_fail(p, QE_CORRUPT, "SEND_RECEIPT for sequence %llu, expected %llu",
                (unsigned long long)s->sequence_id, (unsigned long long)f->first_seq);
        return;
    }
    uint64_t now = clock_mono_ns();
    for (uint64_t q = f->first_seq; q < f->first_seq + f->n; q++) {
        uint64_t sched = p->sched_ns[q & p->ring_mask];
        hist_record(&r->iv.pub_us, now > sched ? (now - sched) / 1000 : 0);
    }
    r->iv.produced_msgs += f->n;
    r->iv.produced_bytes += (uint64_t)f->n * r->o->size_bytes;
    r->produced_total += f->n;
    p->pending_msgs -= f->n;
    r->pending_total -= f->n;
    qbuf_unref(f->frame);
    f->frame = NULL;
    p->if_head = (p->if_head + 1) % p->if_cap;
    p->if_count--;
    producer_pump(p);
    run_check_drain(r);
}

static void on_send_error(ep_t *p, const Pulsar__Proto__CommandSendError *s)
{
    p->run->iv.send_errors++;
    ep_fail(p, QE_INVALID, "SEND_ERROR for sequence %llu: %s: %s",
            (unsigned long long)s->sequence_id, server_error_name(s->error), s->message);
}

/* ---------------------------------------------------------------- consumer */

typedef struct msg_ctx {
    perf_run_t *r;
    int64_t now_us;
    uint32_t unstamped;
} msg_ctx_t;

static void on_single_message(void *ctx, uint64_t ts_us)
{
    msg_ctx_t *m = ctx;
    if (ts_us == 0) {
        m->unstamped++;
        return;
    }
    hist_record(&m->r->iv.e2e_us, m->now_us > (int64_t)ts_us ? (uint64_t)m->now_us - ts_us : 0);
}

static void consumer_flush_acks(ep_t *c)
{
    ev_timer_stop(c->run->loop, &c->ack_timer);
    if (c->n_acks == 0 || (c->state != ST_READY && c->state != ST_CLOSING))
        return;
    qbuf_t *b = NULL;
    int rc = perf_cmd_ack(c->id, c->run->o->ack_type, c->acks, c->n_acks, &b);
    c->n_acks = 0;
    ep_send(c, rc, b, "ACK");
}

static void ack_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    consumer_flush_acks(w->data);
}

static void consumer_ack(ep_t *c, int64_t ledger, int64_t entry)
{
    if (c->run->o->ack_type == PERF_ACK_CUMULATIVE) {
        c->acks[0] = ledger;
        c->acks[1] = entry;
        c->n_acks = 1;
    } else {
        if (c->n_acks == c->cap_acks) { /* < ACK_MAX: flushed there */
            size_t cap = c->cap_acks * 2 < ACK_MAX ? c->cap_acks * 2 : ACK_MAX;
            int64_t *a = realloc(c->acks, 2 * cap * sizeof *a);
            if (!a) {
                ep_fail(c, -ENOMEM, "out of memory");
                return;
            }
            c->acks = a;
            c->cap_acks = cap;
        }
        c->acks[2 * c->n_acks] = ledger;
        c->acks[2 * c->n_acks + 1] = entry;
        if (++c->n_acks >= ACK_MAX) {
            consumer_flush_acks(c);
            return;
        }
    }
    if (!ev_is_active(&c->ack_timer)) {
        ev_timer_set(&c->ack_timer, ACK_INTERVAL_S, 0);
        ev_timer_start(c->run->loop, &c->ack_timer);
    }
}

static void on_message(ep_t *c, const Pulsar__Proto__CommandMessage *m, const frame_t *f)
{
    perf_run_t *r = c->run;
    if (c->kind != EP_CONSUMER || !f->payload)
        return;
    if (f->has_checksum && !f->checksum_ok)
        r->iv.checksum_errors++;
    msg_ctx_t ctx = {.r = r, .now_us = run_wall_us(r, clock_mono_ns())};
    perf_entry_t ent;
    int rc = perf_parse_entry(f->payload, f->payload_len, &r->dz, on_single_message, &ctx, &ent);
    if (rc != 0) {
        ep_fail(c, rc, "unparsable entry %lld:%lld: %s", (long long)m->message_id->ledgerid,
                (long long)m->message_id->entryid, q_strerror(rc));
        return;
    }
    for (uint32_t i = 0; i < ctx.unstamped; i++) {
        int64_t d_ms = ctx.now_us / 1000 - ent.publish_time_ms;
        hist_record(&r->iv.e2e_us, d_ms > 0 ? (uint64_t)d_ms * 1000 : 0);
    }
    r->iv.consumed_msgs += ent.n_msgs;
    r->iv.consumed_bytes += ent.payload_bytes;
    r->consumed_total += ent.n_msgs;
    consumer_ack(c, (int64_t)m->message_id->ledgerid, (int64_t)m->message_id->entryid);
    c->permits_unsent += ent.n_msgs ? ent.n_msgs : 1;
    if (c->permits_unsent >= r->o->receiver_queue_size / 2) {
        qbuf_t *b = NULL;
        rc = perf_cmd_flow(c->id, c->permits_unsent, &b);
        c->permits_unsent = 0;
        ep_send(c, rc, b, "FLOW");
    }
    if (r->o->mode == PERF_MODE_CONSUME && r->o->messages && r->consumed_total >= r->o->messages &&
        r->phase == P_RUN)
        perf_run_stop(r);
    run_check_drain(r);
}

/* ---------------------------------------------------------------- dispatch */

static void ep_on_frame(ep_t *e, frame_t *f)
{
    const Pulsar__Proto__BaseCommand *c = f->cmd;
    switch (c->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE:
        on_partitions(e, c->partitionmetadataresponse);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE:
        on_lookup(e, c->lookuptopicresponse);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS:
        on_producer_success(e, c->producer_success);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS:
        on_success(e, c->success->request_id);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR:
        on_error(e, c->error);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT:
        on_receipt(e, c->send_receipt);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR:
        on_send_error(e, c->send_error);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE:
        on_message(e, c->message, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER:
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER:
    case PULSAR__PROTO__BASE_COMMAND__TYPE__TOPIC_MIGRATED:
        if (e->state == ST_READY || e->state == ST_CLOSING)
            on_broker_close(e);
        break;
    default: /* the connection routes nothing else to an endpoint */
        break;
    }
}

/* ================================================================ producers */

static bool producer_batch_full(const ep_t *p)
{
    const perf_opts_t *o = p->run->o;
    return p->batch.n >= o->batch_max_messages || p->batch.len >= o->batch_max_bytes;
}

/* Doubles the sched_ns ring (pending_msgs fills it; max_pending bounds it). */
static int producer_grow_ring(ep_t *p)
{
    size_t cap = (p->ring_mask + 1) * 2;
    uint64_t *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return -ENOMEM;
    for (uint64_t q = p->next_seq - p->pending_msgs; q < p->next_seq; q++)
        ring[q & (cap - 1)] = p->sched_ns[q & p->ring_mask];
    free(p->sched_ns);
    p->sched_ns = ring;
    p->ring_mask = cap - 1;
    return 0;
}

/* Doubles the in-flight ring (full), up to max_pending entries. */
static int producer_grow_inflight(ep_t *p)
{
    size_t bound = p->run->o->max_pending;
    if (p->if_cap >= bound)
        return QE_BUSY;
    size_t cap = p->if_cap * 2 < bound ? p->if_cap * 2 : bound;
    return ring_grow((void **)&p->inflight, sizeof *p->inflight, &p->if_head, p->if_count,
                     &p->if_cap, cap);
}

static void producer_flush(ep_t *p)
{
    perf_run_t *r = p->run;
    perf_ptimer_stop(&r->timers, &p->batch_timer);
    if (p->batch.n == 0 || p->state != ST_READY)
        return;
    qbuf_t *frame = NULL;
    int rc = perf_encode_send(&p->batch, p->id, p->producer_name, clock_wall_ms(),
                              r->o->compression, &r->z, &frame);
    if (rc != 0) {
        ep_fail(p, rc, "cannot build SEND: %s", q_strerror(rc));
        return;
    }
    int grc = p->if_count == p->if_cap ? producer_grow_inflight(p) : 0;
    if (grc != 0) { /* QE_BUSY cannot happen: each batch holds >= 1 pending message */
        qbuf_unref(frame);
        ep_fail(p, grc, grc == QE_BUSY ? "in-flight bound broken" : "out of memory");
        return;
    }
    inflight_t *f = &p->inflight[(p->if_head + p->if_count) % p->if_cap];
    f->first_seq = p->batch.first_seq;
    f->n = p->batch.n;
    f->frame = qbuf_ref(frame);
    p->if_count++;
    perf_batch_reset(&p->batch);
    ep_send(p, 0, frame, "SEND");
}

/* The messages due by now join the batch before it leaves (perf_pace_wake_ns);
 * then the pacer is armed again for the next one. */
static void batch_timer_cb(perf_ptimer_t *t)
{
    ep_t *p = t->data;
    producer_pump(p);
    producer_flush(p);
    producer_pump(p);
}

static void pace_timer_cb(perf_ptimer_t *t)
{
    producer_pump(t->data);
}

static void producer_add(ep_t *p, uint64_t sched_ns, uint64_t now_ns)
{
    perf_run_t *r = p->run;
    const perf_opts_t *o = r->o;
    if (p->pending_msgs > p->ring_mask && producer_grow_ring(p) != 0) {
        ep_fail(p, -ENOMEM, "out of memory");
        return;
    }
    uint64_t seq = p->next_seq++;
    perf_payload_stamp(p->payload, o->size_bytes, (uint64_t)run_wall_us(r, sched_ns));
    char key[32];
    const char *k = NULL;
    if (o->keys) {
        p->key_state = p->key_state * 1664525u + 1013904223u;
        snprintf(key, sizeof key, "key-%u", (p->key_state >> 8) % o->keys);
        k = key;
    }
    /* Key-based: a message of another key sends the open batch first. Pulsar's
     * KEY_BASED batcher keeps an open batch per key instead; the two make the
     * same batches when a key's messages rarely meet within the batch delay. */
    if (k && p->batch.key_based && p->batch.n > 0 && strcmp(p->batch.first_key, k) != 0) {
        producer_flush(p);
        if (p->state != ST_READY)
            return;
    }
    int rc = perf_batch_add(&p->batch, p->payload, o->size_bytes, k, seq, now_ns);
    if (rc != 0) {
        ep_fail(p, rc, "cannot add to batch: %s", q_strerror(rc));
        return;
    }
    p->sched_ns[seq & p->ring_mask] = sched_ns;
    p->pending_msgs++;
    r->pending_total++;
    r->issued++;
    p->msgs_issued++;
}

/* Takes due messages into the batch while max-pending and the write queue
 * allow; flushes full batches; arms the pace and batch timers. */
static void producer_pump(ep_t *p)
{
    perf_run_t *r = p->run;
    const perf_opts_t *o = r->o;
    if (p->state != ST_READY || r->phase != P_RUN)
        return;
    uint64_t now = clock_mono_ns();
    while (p->state == ST_READY && r->phase == P_RUN) {
        if (p->pending_msgs >= o->max_pending || perf_link_congested(&p->link))
            break;
        if (r->issue_cap && r->issued >= r->issue_cap) {
            perf_run_stop(r);
            return;
        }
        if (o->messages_per_producer && p->msgs_issued >= o->messages_per_producer)
            break; /* this one is done; the others finish the run */
        uint64_t sched = now;
        if (o->rate > 0) {
            if (perf_pace_due(&p->pace, now) == 0) {
                uint64_t next = perf_pace_wake_ns(&p->pace, &p->batch, o, now);
                if (next == 0)
                    perf_ptimer_stop(&r->timers, &p->pace_timer);
                else if (perf_ptimer_start(&r->timers, &p->pace_timer, next) != 0)
                    ep_fail(p, -ENOMEM, "out of memory");
                break;
            }
            sched = perf_pace_sched_ns(&p->pace, p->pace.issued);
            p->pace.issued++;
        }
        producer_add(p, sched, now);
        if (producer_batch_full(p))
            producer_flush(p);
    }
    if (p->batch.n > 0 && p->state == ST_READY && !perf_ptimer_active(&p->batch_timer)) {
        uint64_t due = p->batch.first_add_ns + (uint64_t)(o->batch_max_delay_ms * 1e6);
        if (o->batch_max_delay_ms <= 0 || due <= now)
            producer_flush(p);
        else if (perf_ptimer_start(&r->timers, &p->batch_timer, due) != 0)
            ep_fail(p, -ENOMEM, "out of memory");
    }
}

/* ================================================================ endpoints */

static void ep_begin(ep_t *e)
{
    e->redirects = 0;
    e->lookup_authoritative = false;
    op_timer_start(e);
    ep_connect(e, e->run->o->service_url, true);
}

static ep_t *ep_new(perf_run_t *r, ep_kind_t kind, size_t index, const char *topic)
{
    ep_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->run = r;
    e->kind = kind;
    e->index = index;
    e->id = r->next_id++;
    snprintf(e->topic, sizeof e->topic, "%s", topic ? topic : "(partitioned metadata)");
    e->link.owner = e;
    e->link.kind = kind == EP_PRODUCER   ? PERF_LINK_PRODUCER
                   : kind == EP_CONSUMER ? PERF_LINK_CONSUMER
                                         : PERF_LINK_RESOLVER;
    e->link.id = e->id;
    ev_timer_init(&e->op_timer, op_timer_cb, 1, 0);
    perf_ptimer_init(&e->pace_timer, pace_timer_cb, e);
    perf_ptimer_init(&e->batch_timer, batch_timer_cb, e);
    ev_timer_init(&e->ack_timer, ack_timer_cb, 1, 0);
    e->op_timer.data = e->ack_timer.data = e;
    const perf_opts_t *o = r->o;
    if (kind == EP_PRODUCER) {
        e->ring_mask = EP_FIRST_CAP - 1;
        e->sched_ns = calloc(EP_FIRST_CAP, sizeof *e->sched_ns);
        e->if_cap = o->max_pending < EP_FIRST_CAP ? o->max_pending : EP_FIRST_CAP;
        e->inflight = calloc(e->if_cap, sizeof *e->inflight);
        e->payload = malloc(o->size_bytes);
        e->batch.batching = o->batch_max_messages > 1;
        e->batch.key_based = e->batch.batching && o->key_based && o->keys > 0;
        e->key_state = (uint32_t)index * 2654435761u + 7;
        if (!e->sched_ns || !e->inflight || !e->payload)
            return e; /* caller checks via ep_ok */
        perf_payload_fill(e->payload, o->size_bytes, (uint32_t)index);
    } else if (kind == EP_CONSUMER) {
        e->cap_acks = EP_FIRST_CAP;
        e->acks = calloc(2 * e->cap_acks, sizeof *e->acks);
    } else {
        e->partitions = calloc(o->n_topics, sizeof *e->partitions);
    }
    return e;
}

static bool ep_ok(const ep_t *e)
{
    if (!e)
        return false;
    if (e->kind == EP_PRODUCER)
        return e->sched_ns && e->inflight && e->payload;
    if (e->kind == EP_CONSUMER)
        return e->acks != NULL;
    return e->partitions != NULL;
}

static void ep_free(ep_t *e)
{
    if (!e)
        return;
    struct ev_loop *loop = e->run->loop;
    perf_link_detach(&e->link);
    ev_timer_stop(loop, &e->op_timer);
    perf_ptimer_stop(&e->run->timers, &e->pace_timer);
    perf_ptimer_stop(&e->run->timers, &e->batch_timer);
    ev_timer_stop(loop, &e->ack_timer);
    for (size_t i = 0; i < e->if_count; i++)
        qbuf_unref(e->inflight[(e->if_head + i) % e->if_cap].frame);
    free(e->sched_ns);
    free(e->inflight);
    free(e->payload);
    free(e->acks);
    free(e->partitions);
    perf_batch_free(&e->batch);
    free(e);
}

/* ================================================================ the run */

static uint64_t run_pending(const perf_run_t *r)
{
    return r->pending_total;
}

/* The host witness's wake-ups since the last take go into this interval. */
static void witness_take(perf_run_t *r)
{
    if (r->witness)
        perf_witness_take(r->witness, &r->iv.witness_us);
}

static void report_line(perf_run_t *r, uint64_t now)
{
    witness_take(r);
    double iv_s = (double)(now - r->last_report_ns) / 1e9;
    char line[1024];
    perf_format_interval(line, sizeof line, (double)(now - r->run_start_ns) / 1e9, iv_s, &r->iv,
                         r->o->mode, run_pending(r), r->warmup);
    fprintf(r->out, "%s\n", line);
    fflush(r->out);
    if (!r->warmup)
        perf_stats_merge(&r->tot, &r->iv);
    perf_stats_reset(&r->iv);
    r->last_report_ns = now;
}

static void report_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    report_line(w->data, clock_mono_ns());
}

static void phase_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    perf_run_t *r = w->data;
    if (r->warmup) { /* warm-up over: forget it, start measuring */
        uint64_t now = clock_mono_ns();
        if (now - r->last_report_ns > 50000000u)
            report_line(r, now);
        witness_take(r); /* the warm-up's: forgotten with it */
        perf_stats_reset(&r->iv);
        perf_stats_reset(&r->tot);
        r->warmup = false;
        r->measure_start_ns = now;
        ev_timer_stop(loop, &r->report_timer);
        ev_timer_set(&r->report_timer, r->o->report_interval_s, r->o->report_interval_s);
        ev_timer_start(loop, &r->report_timer);
        if (r->o->seconds > 0) {
            ev_timer_set(w, r->o->seconds, 0);
            ev_timer_start(loop, w);
        }
        return;
    }
    perf_run_stop(r);
}

static void run_start_measuring(perf_run_t *r)
{
    uint64_t now = clock_mono_ns();
    r->phase = P_RUN;
    witness_take(r); /* the set-up's wake-ups: not the run's */
    perf_stats_reset(&r->iv);
    r->run_start_ns = r->measure_start_ns = r->last_report_ns = now;
    r->warmup = r->o->warmup_seconds > 0;
    ev_timer_set(&r->report_timer, r->o->report_interval_s, r->o->report_interval_s);
    ev_timer_start(r->loop, &r->report_timer);
    double first = r->warmup ? r->o->warmup_seconds : r->o->seconds;
    if (first > 0) {
        ev_timer_set(&r->phase_timer, first, 0);
        ev_timer_start(r->loop, &r->phase_timer);
    }
    fprintf(r->out,
            "quire-perf: %zu producer(s), %zu consumer(s) on %zu topic(s) ready, "
            "%llu connection(s) opened%s\n",
            r->n_prod, r->n_cons, r->n_topics, (unsigned long long)perf_pool_opened(r->pool),
            r->warmup ? "; warming up" : "");
    fflush(r->out);
    r->issue_cap = r->o->messages;
    if (r->o->messages_per_producer) {
        uint64_t all = r->o->messages_per_producer * r->n_prod;
        if (r->issue_cap == 0 || all < r->issue_cap)
            r->issue_cap = all;
    }
    /* Producers start staggered over one period of the total rate. */
    double per = r->n_prod ? r->o->rate / (double)r->n_prod : 0;
    for (size_t i = 0; i < r->n_prod; i++) {
        ep_t *p = r->eps[r->n_cons + i];
        uint64_t offset = r->o->rate > 0 ? (uint64_t)((double)i * 1e9 / r->o->rate) : 0;
        perf_pace_init(&p->pace, now + offset, per);
        producer_pump(p);
    }
}

static void run_ep_ready(perf_run_t *r)
{
    if (r->phase != P_SETUP)
        return;
    r->ready++;
    if (r->ready == r->n_cons && r->n_prod > 0) { /* consumers in: start the producers */
        for (size_t i = r->n_cons; i < r->n_eps && r->phase == P_SETUP; i++)
            ep_begin(r->eps[i]);
    }
    if (r->ready == r->n_eps && r->phase == P_SETUP)
        run_start_measuring(r);
}

static int run_expand_topics(perf_run_t *r)
{
    const perf_opts_t *o = r->o;
    size_t n = 0;
    for (size_t i = 0; i < o->n_topics; i++) {
        uint32_t parts = r->resolver ? r->resolver->partitions[i] : 0;
        n += parts ? parts : 1;
    }
    size_t per = (o->mode & PERF_MODE_PRODUCE ? o->producers_per_topic : 0) +
                 (o->mode & PERF_MODE_CONSUME ? o->consumers_per_topic : 0);
    if (n * per > PERF_MAX_ENDPOINTS) {
        run_fail(r, QE_TOO_LARGE, "too many producers+consumers after partition expansion");
        return QE_TOO_LARGE;
    }
    r->topics = calloc(n, sizeof *r->topics);
    if (!r->topics)
        return -ENOMEM;
    for (size_t i = 0; i < o->n_topics; i++) {
        uint32_t parts = r->resolver ? r->resolver->partitions[i] : 0;
        if (parts == 0) {
            r->topics[r->n_topics++] = strdup(o->topics[i]);
            continue;
        }
        topic_name_t *tn = malloc(sizeof *tn);
        if (!tn || topic_name_parse(o->topics[i], tn) != 0) {
            free(tn);
            return QE_INVALID;
        }
        for (uint32_t k = 0; k < parts; k++) {
            char name[TOPIC_NAME_MAX + 32];
            if (topic_name_partition(tn, (int)k, name, sizeof name) == 0)
                r->topics[r->n_topics++] = strdup(name);
        }
        free(tn);
    }
    for (size_t i = 0; i < r->n_topics; i++)
        if (!r->topics[i])
            return -ENOMEM;
    return 0;
}

static void run_setup(perf_run_t *r)
{
    const perf_opts_t *o = r->o;
    int rc = run_expand_topics(r);
    if (rc != 0) {
        run_fail(r, rc, "cannot build the topic list");
        return;
    }
    size_t cpt = o->mode & PERF_MODE_CONSUME ? o->consumers_per_topic : 0;
    size_t ppt = o->mode & PERF_MODE_PRODUCE ? o->producers_per_topic : 0;
    r->eps = calloc(r->n_topics * (cpt + ppt), sizeof *r->eps);
    if (!r->eps) {
        run_fail(r, -ENOMEM, "out of memory");
        return;
    }
    for (size_t t = 0; t < r->n_topics; t++)
        for (size_t k = 0; k < cpt; k++, r->n_cons++)
            r->eps[r->n_eps++] = ep_new(r, EP_CONSUMER, r->n_cons, r->topics[t]);
    for (size_t t = 0; t < r->n_topics; t++)
        for (size_t k = 0; k < ppt; k++, r->n_prod++)
            r->eps[r->n_eps++] = ep_new(r, EP_PRODUCER, r->n_prod, r->topics[t]);
    for (size_t i = 0; i < r->n_eps; i++) {
        if (!ep_ok(r->eps[i])) {
            run_fail(r, -ENOMEM, "out of memory creating producers/consumers");
            return;
        }
    }
    r->phase = P_SETUP;
    /* Consumers first (producers follow when they are ready), else producers. */
    size_t last = r->n_cons > 0 ? r->n_cons : r->n_eps;
    for (size_t i = 0; i < last && r->phase == P_SETUP; i++)
        ep_begin(r->eps[i]);
}

static void drain_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    perf_run_t *r = w->data;
    if (r->phase == P_DRAIN) {
        fprintf(stderr,
                "quire-perf: drain timed out: %llu message(s) without receipt, "
                "%llu produced / %llu consumed\n",
                (unsigned long long)run_pending(r), (unsigned long long)r->produced_total,
                (unsigned long long)r->consumed_total);
        run_close_begin(r);
    } else if (r->phase == P_CLOSE) {
        run_done(r);
    }
}

static void run_check_drain(perf_run_t *r)
{
    if (r->phase == P_DRAIN) {
        if (run_pending(r) > 0)
            return;
        if (r->o->mode == PERF_MODE_BOTH && r->consumed_total < r->produced_total)
            return;
        run_close_begin(r);
    } else if (r->phase == P_CLOSE) {
        /* No endpoint becomes CLOSING again once run_close_begin is done, so
         * the scan resumes where it stopped: linear over the whole close. */
        while (r->close_next < r->n_eps && r->eps[r->close_next]->state != ST_CLOSING)
            r->close_next++;
        if (r->close_next < r->n_eps)
            return;
        run_done(r);
    }
}

static void run_close_begin(perf_run_t *r)
{
    if (r->phase >= P_CLOSE)
        return;
    uint64_t now = clock_mono_ns();
    if (r->phase >= P_RUN && r->end_ns == 0)
        r->end_ns = now;
    r->phase = P_CLOSE;
    if (r->resolver && r->resolver->state != ST_CLOSED) {
        perf_link_detach(&r->resolver->link);
        ev_timer_stop(r->loop, &r->resolver->op_timer);
        r->resolver->state = ST_CLOSED;
    }
    for (size_t i = 0; i < r->n_eps; i++) {
        ep_t *e = r->eps[i];
        perf_ptimer_stop(&r->timers, &e->pace_timer);
        perf_ptimer_stop(&r->timers, &e->batch_timer);
        if (e->state != ST_READY || !e->link.conn) {
            ev_timer_stop(r->loop, &e->op_timer);
            perf_link_detach(&e->link);
            if (e->state != ST_FAILED)
                e->state = ST_CLOSED;
            continue;
        }
        qbuf_t *b = NULL;
        e->request_id = next_request(r);
        perf_link_request(&e->link, e->request_id, 1);
        int rc;
        if (e->kind == EP_CONSUMER) {
            consumer_flush_acks(e);
            rc = perf_cmd_close_consumer(e->id, e->request_id, &b);
        } else {
            rc = perf_cmd_close_producer(e->id, e->request_id, &b);
        }
        e->state = ST_CLOSING;
        op_timer_start(e);
        ep_send(e, rc, b, "CLOSE");
    }
    ev_timer_stop(r->loop, &r->drain_timer);
    ev_timer_set(&r->drain_timer, r->o->op_timeout_s, 0);
    ev_timer_start(r->loop, &r->drain_timer);
    r->close_next = 0; /* every CLOSING endpoint was set in the loop above */
    run_check_drain(r);
}

static void run_done(perf_run_t *r)
{
    if (r->phase == P_DONE)
        return;
    uint64_t now = clock_mono_ns();
    if (r->phase >= P_RUN && r->end_ns == 0)
        r->end_ns = now;
    bool measured = r->run_start_ns != 0;
    r->phase = P_DONE;
    witness_take(r);
    perf_witness_stop(r->witness);
    r->witness = NULL;
    if (measured && !r->warmup)
        perf_stats_merge(&r->tot, &r->iv);
    perf_stats_reset(&r->iv);
    ev_timer_stop(r->loop, &r->report_timer);
    ev_timer_stop(r->loop, &r->phase_timer);
    ev_timer_stop(r->loop, &r->drain_timer);
    for (size_t i = 0; i < r->n_eps; i++) {
        ep_t *e = r->eps[i];
        ev_timer_stop(r->loop, &e->op_timer);
        ev_timer_stop(r->loop, &e->ack_timer);
        perf_ptimer_stop(&r->timers, &e->pace_timer);
        perf_ptimer_stop(&r->timers, &e->batch_timer);
    }
    if (r->resolver)
        ev_timer_stop(r->loop, &r->resolver->op_timer);
    perf_pool_close_all(r->pool);
    ev_break(r->loop, EVBREAK_ALL);
}

/* ================================================================ public */

int perf_run_create(struct ev_loop *loop, const perf_opts_t *o, FILE *report_out, perf_run_t **out)
{
    perf_run_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->loop = loop;
    r->o = o;
    r->out = report_out ? report_out : stdout;
    r->next_id = 1;
    r->next_request = 1;
    if (perf_pool_create(loop, o->max_connections, &ep_conn_cbs, &r->pool) != 0) {
        free(r);
        return -ENOMEM;
    }
    int rc = perf_ptimers_init(&r->timers, loop);
    if (rc != 0) {
        perf_pool_free(r->pool);
        free(r);
        return rc;
    }
    r->timers.late_us = &r->iv.late_us; /* r->iv is reset in place, never moved */
    if (o->host_witness && (rc = perf_witness_start(&r->witness)) != 0) {
        perf_ptimers_free(&r->timers);
        perf_pool_free(r->pool);
        free(r);
        return rc;
    }
    perf_stats_reset(&r->iv);
    perf_stats_reset(&r->tot);
    ev_timer_init(&r->report_timer, report_timer_cb, 1, 1);
    ev_timer_init(&r->phase_timer, phase_timer_cb, 1, 0);
    ev_timer_init(&r->drain_timer, drain_timer_cb, 1, 0);
    r->report_timer.data = r->phase_timer.data = r->drain_timer.data = r;
    r->mono_base_ns = clock_mono_ns();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->wall_base_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    *out = r;
    return 0;
}

void perf_run_start(perf_run_t *r)
{
    if (!r->o->partitions) {
        run_setup(r);
        return;
    }
    r->phase = P_RESOLVE;
    r->resolver = ep_new(r, EP_RESOLVER, 0, NULL);
    if (!ep_ok(r->resolver)) {
        run_fail(r, -ENOMEM, "out of memory");
        return;
    }
    ep_begin(r->resolver);
}

void perf_run_stop(perf_run_t *r)
{
    if (r->phase == P_RUN) {
        r->phase = P_DRAIN;
        /* Send what is batched, as a client's close() flushes. */
        for (size_t i = r->n_cons; i < r->n_eps; i++) {
            ep_t *p = r->eps[i];
            perf_ptimer_stop(&r->timers, &p->pace_timer);
            producer_flush(p);
        }
        double d = r->o->op_timeout_s < DRAIN_MAX_S ? r->o->op_timeout_s : DRAIN_MAX_S;
        ev_timer_stop(r->loop, &r->drain_timer);
        ev_timer_set(&r->drain_timer, d, 0);
        ev_timer_start(r->loop, &r->drain_timer);
        run_check_drain(r);
    } else if (r->phase < P_RUN) {
        run_close_begin(r);
    } else if (r->phase == P_DRAIN) {
        run_close_begin(r);
    } else {
        run_done(r);
    }
}

bool perf_run_done(const perf_run_t *r)
{
    return r->phase == P_DONE;
}

int perf_run_status(const perf_run_t *r)
{
    return r->status;
}

const char *perf_run_error(const perf_run_t *r)
{
    return r->err;
}

const perf_stats_t *perf_run_totals(perf_run_t *r, double *duration_s)
{
    uint64_t end = r->end_ns ? r->end_ns : clock_mono_ns();
    *duration_s = r->measure_start_ns && end > r->measure_start_ns
                      ? (double)(end - r->measure_start_ns) / 1e9
                      : 0;
    return &r->tot;
}

double perf_run_end_unix_s(const perf_run_t *r)
{
    uint64_t end = r->end_ns ? r->end_ns : clock_mono_ns();
    return (double)r->wall_base_us / 1e6 + ((double)end - (double)r->mono_base_ns) / 1e9;
}

void perf_run_free(perf_run_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_eps; i++)
        ep_free(r->eps[i]);
    ep_free(r->resolver);
    perf_pool_free(r->pool);
    free(r->eps);
    for (size_t i = 0; i < r->n_topics; i++)
        free(r->topics[i]);
    free(r->topics);
    perf_scratch_free(&r->z);
    perf_scratch_free(&r->dz);
    ev_timer_stop(r->loop, &r->report_timer);
    ev_timer_stop(r->loop, &r->phase_timer);
    ev_timer_stop(r->loop, &r->drain_timer);
    perf_ptimers_free(&r->timers);
    perf_witness_stop(r->witness);
    free(r);
}
