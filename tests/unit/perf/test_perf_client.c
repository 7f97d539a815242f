/* Unit tests of quire-perf's client state machine against a small fake broker
 * on loopback (built with our codec, on the same loop): CONNECT, partitioned
 * metadata, a lookup Redirect, PRODUCER/SEND/receipt, SUBSCRIBE/FLOW/MESSAGE/
 * ACK, PING/PONG, CLOSE_*; and the failures: ProducerBusy, refused connection. */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "server/codec/commands.h"
#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"
#include "tools/quire_perf.h"

#define FAKE_MAX 32
#define FAKE_BUF (1u << 20)
#define FAKE_HELD 1024

typedef struct fake fake_t;

typedef struct fconn {
    fake_t *srv;
    int fd;
    ev_io rio;
    uint8_t *buf;
    size_t len;
} fconn_t;

typedef struct fend { /* a producer or consumer the fake knows */
    fconn_t *c;
    uint64_t id;
    char topic[256];
    int64_t permits;
    int sends; /* producer: SEND frames received */
} fend_t;

struct fake {
    struct ev_loop *loop;
    int lfd;
    ev_io lio;
    char url[64];
    fconn_t *conns[FAKE_MAX];
    int n_conns;
    fend_t prods[FAKE_MAX], cons[FAKE_MAX];
    int n_prods, n_cons;
    uint32_t partitions;
    bool redirect;
    bool producer_busy;
    int close_at_send; /* the Nth SEND: CLOSE_PRODUCER and CLOSE_CONSUMER (unload) */
    int drop_at_send;  /* the Nth SEND: close the connection */
    int hold_receipts; /* receipts wait until this many SENDs arrived, then go in order */
    qbuf_t *held[FAKE_HELD];
    fconn_t *held_on[FAKE_HELD];
    int n_held;
    int connects, lookups, redirects, sends, flows, pongs, close_prod, close_cons;
    int64_t acked_ids, entry_id;
    int keyed_batches; /* SENDs whose batch names a key that all its messages have */
    int mixed_batches; /* SENDs whose batch names a key that some message lacks */
};

static void fake_write(fconn_t *c, qbuf_t *b)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t w = send(c->fd, b->data + off, b->len - off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    qbuf_unref(b);
}

static fend_t *fake_find(fend_t *v, int n, fconn_t *c, uint64_t id)
{
    for (int i = 0; i < n; i++)
        if (v[i].c == c && v[i].id == id)
            return &v[i];
    return NULL;
}

/* A batch that names a key in its metadata: do all its messages have it?
 * (uncompressed batches: [u32 BE size][SingleMessageMetadata][payload]...) */
static void fake_check_batch_key(fake_t *s, const frame_t *f)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    if (frame_parse_metadata(f->payload, f->payload_len, &md, &off) != 0)
        return;
    if (md->has_num_messages_in_batch && md->partition_key && md->partition_key[0]) {
        bool same = true;
        const uint8_t *p = f->payload + off, *end = f->payload + f->payload_len;
        for (int i = 0; i < md->num_messages_in_batch && p + 4 <= end; i++) {
            uint32_t n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
            if ((size_t)(end - p) - 4 < n) {
                same = false; /* a metadata length past the entry */
                break;
            }
            Pulsar__Proto__SingleMessageMetadata *smm =
                pulsar__proto__single_message_metadata__unpack(NULL, n, p + 4);
            if (!smm)
                break;
            same = same && smm->partition_key && strcmp(smm->partition_key, md->partition_key) == 0;
            size_t skip = 4 + n + (size_t)smm->payload_size;
            pulsar__proto__single_message_metadata__free_unpacked(smm, NULL);
            if ((size_t)(end - p) < skip) {
                same = false; /* a payload past the entry */
                break;
            }
            p += skip;
        }
        if (same)
            s->keyed_batches++;
        else
            s->mixed_batches++;
    }
    frame_metadata_free(md);
}

static void fake_send(fconn_t *c, const frame_t *f)
{
    fake_t *s = c->srv;
    const Pulsar__Proto__CommandSend *sd = f->cmd->send;
    fend_t *p = fake_find(s->prods, s->n_prods, c, sd->producer_id);
    qbuf_t *b = NULL;
    cmd_message_id_t id = {1, s->entry_id++, -1, -1};
    s->sends++;
    if (p)
        p->sends++;
    CU_ASSERT_TRUE(f->checksum_ok);
    fake_check_batch_key(s, f);
    if (s->sends == s->drop_at_send) {
        shutdown(c->fd, SHUT_RDWR);
        return;
    }
    CU_ASSERT_EQUAL(
        cmd_encode_send_receipt(sd->producer_id, sd->sequence_id, sd->highest_sequence_id, &id, &b),
        0);
    if (s->sends <= s->hold_receipts && s->n_held < FAKE_HELD) {
        s->held_on[s->n_held] = c;
        s->held[s->n_held++] = b;
        if (s->sends < s->hold_receipts)
            b = NULL;
    }
    if (b && s->n_held > 0) {
        for (int i = 0; i < s->n_held; i++)
            fake_write(s->held_on[i], s->held[i]);
        s->n_held = 0;
    } else if (b) {
        fake_write(c, b);
    }
    for (int i = 0; p && i < s->n_cons; i++) {
        if (strcmp(s->cons[i].topic, p->topic) != 0)
            continue;
        s->cons[i].permits -= sd->num_messages;
        CU_ASSERT_EQUAL(
            cmd_encode_message(s->cons[i].id, &id, 0, NULL, 0, f->payload, f->payload_len, &b), 0);
        fake_write(s->cons[i].c, b);
        if (s->sends == s->close_at_send) {
            CU_ASSERT_EQUAL(cmd_encode_close_consumer(s->cons[i].id, 0, NULL, NULL, &b), 0);
            fake_write(s->cons[i].c, b);
        }
        break;
    }
    if (p && s->sends == s->close_at_send) {
        CU_ASSERT_EQUAL(cmd_encode_close_producer(p->id, 0, NULL, NULL, &b), 0);
        fake_write(c, b);
    }
}

static void fake_frame(fconn_t *c, const frame_t *f)
{
    fake_t *s = c->srv;
    const Pulsar__Proto__BaseCommand *cmd = f->cmd;
    qbuf_t *b = NULL;
    switch (cmd->type) {
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT:
        s->connects++;
        CU_ASSERT_STRING_EQUAL(cmd->connect->client_version, "quire-perf 0.1");
        cmd_encode_connected("fake", 21, 5242880, NULL, &b);
        fake_write(c, b);
        cmd_encode_ping(&b);
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA:
        cmd_encode_partitioned_metadata_response(cmd->partitionmetadata->request_id, s->partitions,
                                                 &b);
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP:
        s->lookups++;
        if (s->redirect && !cmd->lookuptopic->authoritative) {
            s->redirects++;
            cmd_encode_lookup_response(
                cmd->lookuptopic->request_id,
                PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Redirect, s->url, NULL,
                true, &b);
        } else {
            cmd_encode_lookup_response(
                cmd->lookuptopic->request_id,
                PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Connect, s->url, NULL,
                true, &b);
        }
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER:
        if (s->producer_busy) {
            cmd_encode_error(cmd->producer->request_id, PULSAR__PROTO__SERVER_ERROR__ProducerBusy,
                             "busy", &b);
        } else if (s->n_prods < FAKE_MAX) {
            fend_t *p = &s->prods[s->n_prods++];
            p->c = c;
            p->id = cmd->producer->producer_id;
            snprintf(p->topic, sizeof p->topic, "%s", cmd->producer->topic);
            cmd_encode_producer_success(cmd->producer->request_id, "fake-producer", -1, NULL, 0, -1,
                                        true, &b);
        }
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE:
        if (s->n_cons < FAKE_MAX) {
            fend_t *e = &s->cons[s->n_cons++];
            e->c = c;
            e->id = cmd->subscribe->consumer_id;
            snprintf(e->topic, sizeof e->topic, "%s", cmd->subscribe->topic);
        }
        cmd_encode_success(cmd->subscribe->request_id, NULL, &b);
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__FLOW: {
        s->flows++;
        fend_t *e = fake_find(s->cons, s->n_cons, c, cmd->flow->consumer_id);
        if (e)
            e->permits += cmd->flow->messagepermits;
        break;
    }
    case PULSAR__PROTO__BASE_COMMAND__TYPE__SEND:
        fake_send(c, f);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__ACK:
        s->acked_ids += (int64_t)cmd->ack->n_message_id;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__PONG:
        s->pongs++;
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER:
        s->close_prod++;
        cmd_encode_success(cmd->close_producer->request_id, NULL, &b);
        fake_write(c, b);
        break;
    case PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER:
        s->close_cons++;
        cmd_encode_success(cmd->close_consumer->request_id, NULL, &b);
        fake_write(c, b);
        break;
    default:
        break;
    }
}

static void fake_conn_close(fconn_t *c)
{
    ev_io_stop(c->srv->loop, &c->rio);
    close(c->fd);
    c->fd = -1;
}

static void fake_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    fconn_t *c = w->data;
    ssize_t n = read(c->fd, c->buf + c->len, FAKE_BUF - c->len);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN)
            return;
        fake_conn_close(c);
        return;
    }
    c->len += (size_t)n;
    size_t off = 0;
    for (;;) {
        frame_t f = {0};
        size_t used = 0;
        int rc = frame_decode(c->buf + off, c->len - off, FRAME_DEFAULT_MAX_FRAME_BYTES, &f, &used);
        if (rc == QE_AGAIN)
            break;
        CU_ASSERT_EQUAL(rc, 0);
        if (rc != 0) {
            fake_conn_close(c);
            return;
        }
        fake_frame(c, &f);
        frame_free(&f);
        off += used;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
}

static void fake_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    fake_t *s = w->data;
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (s->n_conns >= FAKE_MAX) {
        close(fd);
        return;
    }
    fconn_t *c = calloc(1, sizeof *c);
    c->buf = malloc(FAKE_BUF);
    c->srv = s;
    c->fd = fd;
    ev_io_init(&c->rio, fake_read_cb, fd, EV_READ);
    c->rio.data = c;
    ev_io_start(loop, &c->rio);
    s->conns[s->n_conns++] = c;
}

static fake_t *fake_start(struct ev_loop *loop)
{
    fake_t *s = calloc(1, sizeof *s);
    s->loop = loop;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 64) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&a, &len) != 0)
        CU_FAIL_FATAL("fake broker: cannot listen");
    snprintf(s->url, sizeof s->url, "pulsar://127.0.0.1:%u", ntohs(a.sin_port));
    ev_io_init(&s->lio, fake_accept_cb, s->lfd, EV_READ);
    s->lio.data = s;
    ev_io_start(loop, &s->lio);
    return s;
}

static void fake_stop(fake_t *s)
{
    ev_io_stop(s->loop, &s->lio);
    close(s->lfd);
    for (int i = 0; i < s->n_conns; i++) {
        if (s->conns[i]->fd >= 0)
            fake_conn_close(s->conns[i]);
        free(s->conns[i]->buf);
        free(s->conns[i]);
    }
    for (int i = 0; i < s->n_held; i++)
        qbuf_unref(s->held[i]);
    free(s);
}

/* ---------------------------------------------------------------- runs */

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

/* Runs quire-perf with argv on loop; returns the run (caller frees). */
static perf_run_t *run_perf(struct ev_loop *loop, perf_opts_t *o, int argc, char **argv,
                            double timeout_s)
{
    char err[256] = "";
    int rc = perf_opts_parse(argc, argv, o, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "options: %s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    FILE *devnull = fopen("/dev/null", "w");
    perf_run_t *r = NULL;
    CU_ASSERT_EQUAL_FATAL(perf_run_create(loop, o, devnull, &r), 0);
    ev_timer t;
    ev_timer_init(&t, timeout_cb, timeout_s, 0);
    ev_timer_start(loop, &t);
    perf_run_start(r);
    if (!perf_run_done(r))
        ev_run(loop, 0);
    ev_timer_stop(loop, &t);
    CU_ASSERT_TRUE(perf_run_done(r));
    fclose(devnull);
    return r;
}

/* Runs quire-perf `mode` against url with the given options (NULL-ended),
 * after the tests' defaults: no warm-up, no periodic report, 5-s operation
 * timeout (an option given again overrides them). */
static perf_run_t *run_perf_args(struct ev_loop *loop, perf_opts_t *o, double timeout_s,
                                 const char *mode, const char *url, ...)
{
    char *argv[64] = {"quire-perf",       (char *)mode, "--service-url",       (char *)url,
                      "--warmup-seconds", "0",          "--report-interval-s", "100",
                      "--op-timeout-s",   "5"};
    int argc = 10;
    va_list ap;
    va_start(ap, url);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        CU_ASSERT_FATAL(argc < 64);
        argv[argc++] = a;
    }
    va_end(ap);
    return run_perf(loop, o, argc, argv, timeout_s);
}

static void test_both_partitioned(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->partitions = 2;
    s->redirect = true;
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 15, "both", s->url, "--topics", "t", "--messages", "400", "--rate",
                      "0", "--size", "64", "--batch-max-messages", "10", "--compression", "LZ4",
                      "--receiver-queue-size", "100", "--keys", "4", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    if (perf_run_status(r) != 0)
        fprintf(stderr, "run error: %s\n", perf_run_error(r));
    double d = 0;
    const perf_stats_t *t = perf_run_totals(r, &d);
    CU_ASSERT_EQUAL(t->produced_msgs, 400);
    CU_ASSERT_EQUAL(t->consumed_msgs, 400);
    CU_ASSERT_EQUAL(t->produced_bytes, 400 * 64);
    CU_ASSERT_EQUAL(t->consumed_bytes, 400 * 64);
    CU_ASSERT_EQUAL(t->pub_us.total, 400);
    CU_ASSERT_EQUAL(t->e2e_us.total, 400);
    CU_ASSERT_EQUAL(t->witness_us.total, 0); /* no --host-witness */
    CU_ASSERT_TRUE(d > 0);
    /* the measured period ended before now and after the run began (at most 15 s ago) */
    double end = perf_run_end_unix_s(r), now = (double)clock_wall_ms() / 1000.0;
    CU_ASSERT_TRUE(end <= now + 0.002 && end >= now - 15.0 - d);
    /* resolver + (2 producers + 2 consumers) x (first broker + redirect target) */
    CU_ASSERT_EQUAL(s->connects, 9);
    CU_ASSERT_EQUAL(s->redirects, 4);
    CU_ASSERT_EQUAL(s->n_prods, 2);
    CU_ASSERT_EQUAL(s->n_cons, 2);
    CU_ASSERT_STRING_EQUAL(s->prods[0].topic, "persistent://public/default/t-partition-0");
    CU_ASSERT_TRUE(s->sends >= 40); /* batches of at most 10 */
    CU_ASSERT_EQUAL(s->acked_ids, s->sends);
    CU_ASSERT_TRUE(s->flows >= 2 + 4); /* the first FLOW each, then refills at half */
    CU_ASSERT_TRUE(s->pongs >= 9);
    CU_ASSERT_EQUAL(s->close_prod, 2);
    CU_ASSERT_EQUAL(s->close_cons, 2);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* --batcher key-based: each batch holds one key and names it in its metadata
 * (what Key_Shared dispatches by); the default batcher mixes keys and names
 * none. */
static void test_key_based_batches(void)
{
    for (int key_based = 0; key_based <= 1; key_based++) {
        struct ev_loop *loop = ev_loop_new(0);
        fake_t *s = fake_start(loop);
        perf_opts_t o;
        perf_run_t *r = run_perf_args(loop, &o, 15, "both", s->url, "--topics", "t", "--messages",
                                      "300", "--rate", "0", "--size", "64", "--keys", "3",
                                      "--batch-max-messages", "50", "--batch-max-delay-ms", "50",
                                      "--batcher", key_based ? "key-based" : "default", NULL);
        CU_ASSERT_EQUAL(perf_run_status(r), 0);
        double d = 0;
        const perf_stats_t *t = perf_run_totals(r, &d);
        CU_ASSERT_EQUAL(t->produced_msgs, 300);
        CU_ASSERT_EQUAL(t->consumed_msgs, 300);
        CU_ASSERT_EQUAL(s->mixed_batches, 0);
        if (key_based) {
            CU_ASSERT_EQUAL(s->keyed_batches, s->sends);
            CU_ASSERT_TRUE(s->sends > 6 && s->sends < 300); /* batched, by key */
        } else {
            CU_ASSERT_EQUAL(s->keyed_batches, 0);
            CU_ASSERT_TRUE(s->sends <= 12); /* batches of up to 50, keys mixed */
        }
        perf_run_free(r);
        perf_opts_free(&o);
        fake_stop(s);
        ev_loop_destroy(loop);
    }
}

/* --max-connections 1: the resolver, both partitions' producers and consumers
 * and the redirected lookups share one connection, multiplexed by id. */
static void test_shared_connection(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->partitions = 2;
    s->redirect = true;
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 15, "both", s->url, "--topics", "t,u", "--messages", "400",
                      "--rate", "0", "--size", "64", "--batch-max-messages", "10",
                      "--receiver-queue-size", "100", "--max-connections", "1", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    if (perf_run_status(r) != 0)
        fprintf(stderr, "run error: %s\n", perf_run_error(r));
    double d = 0;
    const perf_stats_t *t = perf_run_totals(r, &d);
    CU_ASSERT_EQUAL(t->produced_msgs, 400);
    CU_ASSERT_EQUAL(t->consumed_msgs, 400);
    CU_ASSERT_EQUAL(t->e2e_us.total, 400);
    CU_ASSERT_EQUAL(s->connects, 1);
    CU_ASSERT_EQUAL(s->n_conns, 1);
    CU_ASSERT_EQUAL(s->redirects, 8);
    CU_ASSERT_EQUAL(s->n_prods, 4);
    CU_ASSERT_EQUAL(s->n_cons, 4);
    for (int i = 0; i < s->n_prods; i++) /* distinct ids on the one connection */
        for (int k = 0; k < s->n_cons; k++)
            CU_ASSERT_NOT_EQUAL(s->prods[i].id, s->cons[k].id);
    CU_ASSERT_EQUAL(s->acked_ids, s->sends);
    CU_ASSERT_EQUAL(s->close_prod, 4);
    CU_ASSERT_EQUAL(s->close_cons, 4);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* --max-connections 3 with 8 endpoints: three connections, round-robin. */
static void test_connection_pool(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    perf_opts_t o;
    perf_run_t *r = run_perf_args(
        loop, &o, 15, "both", s->url, "--topic-prefix", "p", "--num-topics", "4", "--messages",
        "200", "--rate", "0", "--max-connections", "3", "--disable-batching", "--size", "16", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    const perf_stats_t *t = perf_run_totals(r, &(double){0});
    CU_ASSERT_EQUAL(t->produced_msgs, 200);
    CU_ASSERT_EQUAL(t->consumed_msgs, 200);
    CU_ASSERT_EQUAL(s->connects, 3);
    CU_ASSERT_EQUAL(s->n_prods, 4);
    CU_ASSERT_EQUAL(s->n_cons, 4);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* 300 unbatched messages in flight at once (receipts held until the last
 * SEND): the producer's rings grow from their first 16 slots while full, and
 * every receipt still finds its message and its send time. */
static void test_many_in_flight(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->hold_receipts = 300;
    perf_opts_t o;
    perf_run_t *r = run_perf_args(loop, &o, 15, "produce", s->url, "--topics", "h", "--messages",
                                  "300", "--rate", "0", "--disable-batching", "--size", "32",
                                  "--max-pending", "1000", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    if (perf_run_status(r) != 0)
        fprintf(stderr, "run error: %s\n", perf_run_error(r));
    const perf_stats_t *t = perf_run_totals(r, &(double){0});
    CU_ASSERT_EQUAL(s->sends, 300);
    CU_ASSERT_EQUAL(t->produced_msgs, 300);
    CU_ASSERT_EQUAL(t->pub_us.total, 300);
    CU_ASSERT_TRUE(t->pub_us.max < 15u * 1000 * 1000); /* a lost send time reads as ~now */
    CU_ASSERT_TRUE(t->pub_us.max >= t->pub_us.min);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* --messages-per-producer 1 at an unbounded rate: every topic gets exactly one
 * message (without it the first producers would send them all), and the run
 * ends when all have. */
static void test_messages_per_producer(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 15, "both", s->url, "--topic-prefix", "m", "--num-topics", "20",
                      "--messages-per-producer", "1", "--rate", "0", "--disable-batching", "--size",
                      "16", "--max-connections", "1", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    const perf_stats_t *t = perf_run_totals(r, &(double){0});
    CU_ASSERT_EQUAL(t->produced_msgs, 20);
    CU_ASSERT_EQUAL(t->consumed_msgs, 20);
    CU_ASSERT_EQUAL(s->n_prods, 20);
    CU_ASSERT_EQUAL(s->sends, 20);
    for (int i = 0; i < s->n_prods; i++)
        CU_ASSERT_EQUAL(s->prods[i].sends, 1);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* A shared connection: the broker closes a producer and a consumer (as on an
 * unload); both re-create themselves on it and the run completes. */
static void test_shared_broker_close(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->close_at_send = 50;
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 15, "both", s->url, "--topic-prefix", "bc", "--num-topics", "3",
                      "--messages", "300", "--rate", "3000", "--max-connections", "1",
                      "--disable-batching", "--size", "16", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    if (perf_run_status(r) != 0)
        fprintf(stderr, "run error: %s\n", perf_run_error(r));
    const perf_stats_t *t = perf_run_totals(r, &(double){0});
    CU_ASSERT_EQUAL(t->produced_msgs, 300);
    CU_ASSERT_TRUE(t->consumed_msgs >= 300); /* the fake does not dedup resends */
    CU_ASSERT_EQUAL(s->connects, 1);
    CU_ASSERT_EQUAL(s->n_prods, 4); /* 3 + the re-created one */
    CU_ASSERT_EQUAL(s->n_cons, 4);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

/* A shared connection lost: every producer/consumer on it fails the run
 * (as one that had it to itself), which ends at once with the reason. */
static void test_shared_lost(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->drop_at_send = 20;
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 15, "both", s->url, "--topic-prefix", "lost", "--num-topics", "3",
                      "--messages", "300", "--rate", "3000", "--max-connections", "1",
                      "--disable-batching", "--size", "16", NULL);
    CU_ASSERT_NOT_EQUAL(perf_run_status(r), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(perf_run_error(r), "lost"));
    CU_ASSERT_EQUAL(s->connects, 1);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

static void test_paced_produce(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    perf_opts_t o;
    perf_run_t *r =
        run_perf_args(loop, &o, 10, "produce", s->url, "--topics", "paced", "--no-partitions",
                      "--rate", "400", "--seconds", "1", "--warmup-seconds", "0.2",
                      "--disable-batching", "--report-interval-s", "0.5", "--host-witness", NULL);
    CU_ASSERT_EQUAL(perf_run_status(r), 0);
    double d = 0;
    const perf_stats_t *t = perf_run_totals(r, &d);
    /* 400 msg/s for a 1 s measurement after the warm-up. */
    CU_ASSERT_TRUE(d >= 0.99 && d < 1.5);
    CU_ASSERT_TRUE(t->produced_msgs >= 360 && t->produced_msgs <= 440);
    /* The pace timer fired (about once a message), each firing's lateness recorded;
     * the witness's threads (one per CPU) woke through the measured second (1 ms
     * steps; fewer only if held), the warm-up's wake-ups forgotten. */
    CU_ASSERT_TRUE(t->late_us.total >= 100);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    CU_ASSERT_TRUE(t->witness_us.total >= 100 &&
                   t->witness_us.total <= 1600 * (uint64_t)(cpus > 0 ? cpus : 1));
    CU_ASSERT_EQUAL(t->consumed_msgs, 0);
    CU_ASSERT_EQUAL(s->sends, (int)s->entry_id);
    CU_ASSERT_TRUE(s->sends >= 440); /* one SEND per message, warm-up included */
    CU_ASSERT_EQUAL(s->close_prod, 1);
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

static void test_producer_busy(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    fake_t *s = fake_start(loop);
    s->producer_busy = true;
    perf_opts_t o;
    perf_run_t *r = run_perf_args(loop, &o, 10, "produce", s->url, "--seconds", "5", NULL);
    CU_ASSERT_NOT_EQUAL(perf_run_status(r), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(perf_run_error(r), "ProducerBusy"));
    perf_run_free(r);
    perf_opts_free(&o);
    fake_stop(s);
    ev_loop_destroy(loop);
}

static void test_refused(void)
{
    /* A port nobody listens on: bind, read it back, close. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    TEST_REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    TEST_REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "pulsar://127.0.0.1:%u", ntohs(a.sin_port));
    struct ev_loop *loop = ev_loop_new(0);
    perf_opts_t o;
    perf_run_t *r = run_perf_args(loop, &o, 10, "both", url, NULL);
    CU_ASSERT_NOT_EQUAL(perf_run_status(r), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(perf_run_error(r), "cannot connect"));
    perf_run_free(r);
    perf_opts_free(&o);
    ev_loop_destroy(loop);
}

void perf_register_client(void)
{
    CU_pSuite s = CU_add_suite("perf_client", NULL, NULL);
    CU_add_test(s, "both, partitioned, redirect, batches, LZ4", test_both_partitioned);
    CU_add_test(s, "key-based batches: one key each, named", test_key_based_batches);
    CU_add_test(s, "--max-connections 1: one shared connection", test_shared_connection);
    CU_add_test(s, "--max-connections 3: round-robin pool", test_connection_pool);
    CU_add_test(s, "shared connection: broker closes, re-create", test_shared_broker_close);
    CU_add_test(s, "300 in flight: the rings grow", test_many_in_flight);
    CU_add_test(s, "--messages-per-producer 1", test_messages_per_producer);
    CU_add_test(s, "shared connection lost fails the run", test_shared_lost);
    CU_add_test(s, "paced produce with warm-up", test_paced_produce);
    CU_add_test(s, "ProducerBusy fails the run", test_producer_busy);
    CU_add_test(s, "connection refused fails the run", test_refused);
}
