/* server_test.c — see server_test.h. */
#include "tests/unit/server/server_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "server/codec/frame.h"
#include "storage/bookie/bookie.h"
#include "storage/ledger/bookie_client.h"
#include "storage/ledger/ledger.h"
#include "storage/managed/managed_ledger.h"
#include "storage/metadata/metadata.h"

/* The bookie handle the broker reads through: the local one, with reads
 * that can be made to fail (tbroker_fail_reads). */
typedef struct flaky_bk {
    bk_client_t base;
    bk_client_t *inner;
    int fail_reads, fail_rc, failed;
} flaky_bk_t;

static int flaky_add(bk_client_t *c, int64_t l, int64_t e, int64_t lac, qbuf_t *d, bk_add_cb cb,
                     void *arg)
{
    return bk_client_add(((flaky_bk_t *)c)->inner, l, e, lac, d, cb, arg);
}

static int flaky_read(bk_client_t *c, int64_t l, int64_t e, bk_read_cb cb, void *arg)
{
    flaky_bk_t *f = (flaky_bk_t *)c;
    if (f->fail_reads > 0) {
        f->fail_reads--;
        f->failed++;
        return f->fail_rc;
    }
    return bk_client_read(f->inner, l, e, cb, arg);
}

static int flaky_read_lac(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_read_lac(((flaky_bk_t *)c)->inner, l, cb, arg);
}

static int flaky_fence(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_fence(((flaky_bk_t *)c)->inner, l, cb, arg);
}

static int flaky_last_entry(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_last_entry(((flaky_bk_t *)c)->inner, l, cb, arg);
}

static int flaky_delete(bk_client_t *c, int64_t l, bk_done_cb cb, void *arg)
{
    return bk_client_delete_ledger(((flaky_bk_t *)c)->inner, l, cb, arg);
}

static int flaky_recovery_add(bk_client_t *c, int64_t l, int64_t e, int64_t lac, qbuf_t *d,
                              bk_add_cb cb, void *arg)
{
    return bk_client_recovery_add(((flaky_bk_t *)c)->inner, l, e, lac, d, cb, arg);
}

static void flaky_free(bk_client_t *c)
{
    bk_client_free(((flaky_bk_t *)c)->inner);
    free(c);
}

static bool flaky_writable(bk_client_t *c)
{
    return bk_client_writable(((flaky_bk_t *)c)->inner);
}

static const bk_client_ops_t flaky_ops = {
    .add = flaky_add,
    .read = flaky_read,
    .read_lac = flaky_read_lac,
    .fence = flaky_fence,
    .last_entry = flaky_last_entry,
    .delete_ledger = flaky_delete,
    .free = flaky_free,
    .recovery_add = flaky_recovery_add, /* as the local handle: fenced ledgers recover */
    .writable = flaky_writable,
};

struct tbroker {
    struct ev_loop *loop;
    char *dir;
    md_store_t *md;
    bookie_t *bookie;
    bk_client_t *bk;
    flaky_bk_t *flaky;
    ledger_client_t *lc;
    ml_factory_t *mlf;
    broker_t *broker;
};

#define TFRAMES_MAX 4096

struct tclient {
    tbroker_t *tb;
    int fd;
    ev_io w;
    uint8_t *buf;
    size_t len, cap;
    tframe_t *frames[TFRAMES_MAX];
    size_t nframes;
    bool closed;
    uint64_t next_request_id;
};

/* ---------------------------------------------------------------- broker -- */

static bool flag_done;

static void flag_cb(void *arg)
{
    (void)arg;
    flag_done = true;
}

tbroker_t *tbroker_start(void)
{
    return tbroker_start_with(NULL, 0);
}

broker_t *tbroker_broker(tbroker_t *tb)
{
    return tb->broker;
}

tbroker_t *tbroker_start_with(const char *const (*settings)[2], size_t n)
{
    log_set_level(LOG_WARN);
    tbroker_t *tb = calloc(1, sizeof *tb);
    tb->loop = ev_loop_new(0);
    tb->dir = test_tmpdir("broker");
    char path[4200];
    snprintf(path, sizeof path, "%s/md.db", tb->dir);
    if (md_store_open_embedded(tb->loop, path, &tb->md) < 0)
        return NULL;
    bookie_config_t bc;
    bookie_config_defaults(&bc);
    snprintf(path, sizeof path, "%s/bookie", tb->dir);
    bc.data_dir = path;
    if (bookie_open(tb->loop, &bc, &tb->bookie) < 0)
        return NULL;
    tb->flaky = calloc(1, sizeof *tb->flaky);
    if (!tb->flaky || !(tb->flaky->inner = bk_client_local(tb->bookie, "local")))
        return NULL;
    tb->flaky->base.ops = &flaky_ops;
    snprintf(tb->flaky->base.id, sizeof tb->flaky->base.id, "local");
    tb->bk = &tb->flaky->base;
    ledger_client_config_t lcc;
    ledger_client_config_defaults(&lcc);
    if (ledger_client_new(tb->loop, tb->md, &lcc, &tb->lc) < 0 ||
        ledger_client_add_bookie(tb->lc, tb->bk) < 0 ||
        ml_factory_new(tb->loop, tb->md, tb->lc, 64u << 20, &tb->mlf) < 0)
        return NULL;
    qconfig_t *q = qconfig_new();
    qconfig_set(q, "brokerServicePort", "0");
    for (size_t i = 0; i < n; i++)
        qconfig_set(q, settings[i][0], settings[i][1]);
    broker_config_t cfg;
    char err[256];
    int rc = broker_config_load(q, &cfg, err, sizeof err);
    qconfig_free(q);
    if (rc < 0 || broker_new(tb->loop, &cfg, tb->md, tb->mlf, &tb->broker) < 0 ||
        broker_listen(tb->broker) < 0)
        return NULL;
    return tb;
}

void tbroker_stop(tbroker_t *tb)
{
    flag_done = false;
    broker_shutdown(tb->broker, flag_cb, NULL);
    test_run_until(tb->loop, &flag_done, 10.0);
    broker_free(tb->broker);
    ml_factory_free(tb->mlf);
    ledger_client_free(tb->lc);
    bk_client_free(tb->bk);
    bookie_close(tb->bookie);
    md_store_close(tb->md);
    ev_loop_destroy(tb->loop);
    test_rm_rf(tb->dir);
    free(tb->dir);
    free(tb);
}

struct ev_loop *tbroker_loop(tbroker_t *tb)
{
    return tb->loop;
}

struct md_store *tbroker_md(tbroker_t *tb)
{
    return tb->md;
}

struct bookie *tbroker_bookie(tbroker_t *tb)
{
    return tb->bookie;
}

void tbroker_fail_reads(tbroker_t *tb, int n, int rc)
{
    tb->flaky->fail_reads = n;
    tb->flaky->fail_rc = rc;
    tb->flaky->failed = 0;
}

int tbroker_reads_failed(const tbroker_t *tb)
{
    return tb->flaky->failed;
}

/* ---------------------------------------------------------------- client -- */

void tframe_free(tframe_t *f)
{
    if (!f)
        return;
    pulsar__proto__base_command__free_unpacked(f->cmd, NULL);
    free(f->payload);
    free(f);
}

static void tclient_decode(tclient_t *c)
{
    size_t off = 0;
    while (off < c->len) {
        frame_t f;
        size_t used = 0;
        int rc = frame_decode(c->buf + off, c->len - off, 64u << 20, &f, &used);
        if (rc != 0)
            break;
        tframe_t *t = calloc(1, sizeof *t);
        /* Keep an owned copy of the command: re-pack and unpack it. */
        size_t n = pulsar__proto__base_command__get_packed_size(f.cmd);
        uint8_t *tmp = malloc(n ? n : 1);
        pulsar__proto__base_command__pack(f.cmd, tmp);
        t->cmd = pulsar__proto__base_command__unpack(NULL, n, tmp);
        free(tmp);
        if (f.payload) {
            t->payload = malloc(f.payload_len);
            memcpy(t->payload, f.payload, f.payload_len);
            t->payload_len = f.payload_len;
        }
        frame_free(&f);
        if (c->nframes < TFRAMES_MAX)
            c->frames[c->nframes++] = t;
        else
            tframe_free(t);
        off += used;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
}

static void tclient_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    tclient_t *c = w->data;
    for (;;) {
        if (c->cap - c->len < 65536) {
            c->cap = c->cap * 2 + 65536;
            c->buf = realloc(c->buf, c->cap);
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n > 0) {
            c->len += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            c->closed = true;
            ev_io_stop(loop, w);
        }
        break;
    }
    tclient_decode(c);
}

tclient_t *tclient_open(tbroker_t *tb)
{
    tclient_t *c = calloc(1, sizeof *c);
    c->tb = tb;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(broker_port(tb->broker))};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(c->fd);
        free(c);
        return NULL;
    }
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
    ev_io_init(&c->w, tclient_read_cb, c->fd, EV_READ);
    c->w.data = c;
    ev_io_start(tb->loop, &c->w);
    c->next_request_id = 1;
    return c;
}

int tclient_fd(const tclient_t *c)
{
    return c->fd;
}

void tclient_close(tclient_t *c)
{
    if (!c)
        return;
    ev_io_stop(c->tb->loop, &c->w);
    close(c->fd);
    for (size_t i = 0; i < c->nframes; i++)
        tframe_free(c->frames[i]);
    free(c->buf);
    free(c);
    /* Let the broker notice. */
}

int tclient_send_raw(tclient_t *c, const void *bytes, size_t len)
{
    const uint8_t *p = bytes;
    uint64_t deadline = clock_mono_ns() + 5000000000ull;
    while (len > 0 && clock_mono_ns() < deadline) {
        ssize_t n = write(c->fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -errno;
        } else {
            ev_run(c->tb->loop, EVRUN_NOWAIT);
        }
    }
    return len == 0 ? 0 : -ETIMEDOUT;
}

int tclient_send(tclient_t *c, const Pulsar__Proto__BaseCommand *cmd)
{
    qbuf_t *b = NULL;
    int rc = frame_encode_command(cmd, &b);
    if (rc < 0)
        return rc;
    rc = tclient_send_raw(c, b->data, b->len);
    qbuf_unref(b);
    return rc;
}

tframe_t *tclient_wait(tclient_t *c, Pulsar__Proto__BaseCommand__Type type, double timeout_s)
{
    uint64_t deadline = clock_mono_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        for (size_t i = 0; i < c->nframes; i++) {
            if (c->frames[i]->cmd->type == type) {
                tframe_t *f = c->frames[i];
                memmove(&c->frames[i], &c->frames[i + 1],
                        (c->nframes - i - 1) * sizeof c->frames[0]);
                c->nframes--;
                return f;
            }
        }
        if (c->closed || clock_mono_ns() >= deadline)
            return NULL;
        test_run_for(c->tb->loop, 0.005);
    }
}

bool tclient_wait_closed(tclient_t *c, double timeout_s)
{
    uint64_t deadline = clock_mono_ns() + (uint64_t)(timeout_s * 1e9);
    while (!c->closed && clock_mono_ns() < deadline)
        test_run_for(c->tb->loop, 0.005);
    return c->closed;
}

tclient_t *tclient_connect(tbroker_t *tb, const char *client_version)
{
    tclient_t *c = tclient_open(tb);
    if (!c)
        return NULL;
    Pulsar__Proto__CommandConnect con = PULSAR__PROTO__COMMAND_CONNECT__INIT;
    con.client_version = (char *)client_version;
    con.has_protocol_version = true;
    con.protocol_version = 21;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT;
    cmd.connect = &con;
    tframe_t *f = NULL;
    if (tclient_send(c, &cmd) == 0)
        f = tclient_wait(c, PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED, 5.0);
    if (!f) {
        tclient_close(c);
        return NULL;
    }
    tframe_free(f);
    return c;
}

/* Waits for SUCCESS-like answers: returns 0 for the wanted type, -1 for ERROR. */
static int wait_answer(tclient_t *c, Pulsar__Proto__BaseCommand__Type ok_type)
{
    uint64_t deadline = clock_mono_ns() + 10000000000ull;
    while (clock_mono_ns() < deadline) {
        tframe_t *f = tclient_wait(c, ok_type, 0.01);
        if (f) {
            tframe_free(f);
            return 0;
        }
        f = tclient_wait(c, PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR, 0.0);
        if (f) {
            int err = (int)f->cmd->error->error;
            tframe_free(f);
            return -1000 - err;
        }
        if (c->closed)
            return -1;
    }
    return -2;
}

int tclient_create_producer(tclient_t *c, const char *topic, uint64_t producer_id)
{
    Pulsar__Proto__CommandProducer p = PULSAR__PROTO__COMMAND_PRODUCER__INIT;
    p.topic = (char *)topic;
    p.producer_id = producer_id;
    p.request_id = c->next_request_id++;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER;
    cmd.producer = &p;
    if (tclient_send(c, &cmd) < 0)
        return -1;
    return wait_answer(c, PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS);
}

int tclient_subscribe(tclient_t *c, const char *topic, const char *sub, uint64_t consumer_id,
                      Pulsar__Proto__CommandSubscribe__SubType type, const char *consumer_name,
                      const int32_t (*ranges)[2], size_t nranges)
{
    Pulsar__Proto__CommandSubscribe s = PULSAR__PROTO__COMMAND_SUBSCRIBE__INIT;
    s.topic = (char *)topic;
    s.subscription = (char *)sub;
    s.subtype = type;
    s.consumer_id = consumer_id;
    s.request_id = c->next_request_id++;
    s.consumer_name = (char *)consumer_name;
    s.has_initialposition = true;
    s.initialposition = PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Earliest;
    Pulsar__Proto__KeySharedMeta ks = PULSAR__PROTO__KEY_SHARED_META__INIT;
    Pulsar__Proto__IntRange r[8], *rp[8];
    if (nranges > 0) {
        ks.keysharedmode = PULSAR__PROTO__KEY_SHARED_MODE__STICKY;
        for (size_t i = 0; i < nranges && i < 8; i++) {
            pulsar__proto__int_range__init(&r[i]);
            r[i].start = ranges[i][0];
            r[i].end = ranges[i][1];
            rp[i] = &r[i];
        }
        ks.n_hashranges = nranges;
        ks.hashranges = rp;
        s.keysharedmeta = &ks;
    }
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE;
    cmd.subscribe = &s;
    if (tclient_send(c, &cmd) < 0)
        return -1;
    return wait_answer(c, PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS);
}

int tclient_flow(tclient_t *c, uint64_t consumer_id, uint32_t permits)
{
    Pulsar__Proto__CommandFlow fl = PULSAR__PROTO__COMMAND_FLOW__INIT;
    fl.consumer_id = consumer_id;
    fl.messagepermits = permits;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__FLOW;
    cmd.flow = &fl;
    return tclient_send(c, &cmd);
}

int tclient_ack(tclient_t *c, uint64_t consumer_id, int64_t ledger, int64_t entry)
{
    Pulsar__Proto__MessageIdData id = PULSAR__PROTO__MESSAGE_ID_DATA__INIT, *ids[1] = {&id};
    id.ledgerid = (uint64_t)ledger;
    id.entryid = (uint64_t)entry;
    Pulsar__Proto__CommandAck a = PULSAR__PROTO__COMMAND_ACK__INIT;
    a.consumer_id = consumer_id;
    a.ack_type = PULSAR__PROTO__COMMAND_ACK__ACK_TYPE__Individual;
    a.n_message_id = 1;
    a.message_id = ids;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ACK;
    cmd.ack = &a;
    return tclient_send(c, &cmd);
}

int tclient_redeliver(tclient_t *c, uint64_t consumer_id, const int64_t (*ids)[2], size_t n)
{
    Pulsar__Proto__MessageIdData id[8], *idp[8];
    if (n > 8)
        return -1;
    for (size_t i = 0; i < n; i++) {
        pulsar__proto__message_id_data__init(&id[i]);
        id[i].ledgerid = (uint64_t)ids[i][0];
        id[i].entryid = (uint64_t)ids[i][1];
        idp[i] = &id[i];
    }
    Pulsar__Proto__CommandRedeliverUnacknowledgedMessages rd =
        PULSAR__PROTO__COMMAND_REDELIVER_UNACKNOWLEDGED_MESSAGES__INIT;
    rd.consumer_id = consumer_id;
    rd.n_message_ids = n;
    rd.message_ids = n ? idp : NULL;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__REDELIVER_UNACKNOWLEDGED_MESSAGES;
    cmd.redeliverunacknowledgedmessages = &rd;
    return tclient_send(c, &cmd);
}

int tclient_encode_message(uint64_t producer_id, uint64_t seq, const char *key, const char *payload,
                           int32_t batch_n, qbuf_t **out)
{
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "test-producer";
    md.sequence_id = seq;
    md.publish_time = (uint64_t)clock_wall_ms();
    md.partition_key = (char *)key;
    if (batch_n > 1) {
        md.has_num_messages_in_batch = true;
        md.num_messages_in_batch = batch_n;
    }
    Pulsar__Proto__CommandSend s = PULSAR__PROTO__COMMAND_SEND__INIT;
    s.producer_id = producer_id;
    s.sequence_id = seq;
    s.has_num_messages = true;
    s.num_messages = batch_n > 1 ? batch_n : 1;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND;
    cmd.send = &s;
    return frame_encode_payload(&cmd, &md, (const uint8_t *)payload, strlen(payload), true, out);
}

int tclient_send_message(tclient_t *c, uint64_t producer_id, uint64_t seq, const char *key,
                         const char *payload, int32_t batch_n)
{
    qbuf_t *b = NULL;
    int rc = tclient_encode_message(producer_id, seq, key, payload, batch_n, &b);
    if (rc < 0)
        return rc;
    rc = tclient_send_raw(c, b->data, b->len);
    qbuf_unref(b);
    return rc;
}

int tclient_produce(tclient_t *c, uint64_t producer_id, uint64_t seq, const char *key,
                    const char *payload, int64_t *ledger, int64_t *entry)
{
    if (tclient_send_message(c, producer_id, seq, key, payload, 1) < 0)
        return -1;
    tframe_t *f = tclient_wait(c, PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT, 10.0);
    if (!f)
        return -1;
    if (ledger)
        *ledger = (int64_t)f->cmd->send_receipt->message_id->ledgerid;
    if (entry)
        *entry = (int64_t)f->cmd->send_receipt->message_id->entryid;
    int rc = f->cmd->send_receipt->sequence_id == seq ? 0 : -1;
    tframe_free(f);
    return rc;
}

bool tclient_closed(const tclient_t *c)
{
    return c->closed;
}
