/*
 * Unit tests of the bookie clients and the bookie RPC server: round trips of
 * every call through bk_client_remote -> TCP -> bookie_server -> bookie (and
 * through bk_client_local), fencing, timeouts against a socket that never
 * answers, a killed server (forked child) and reconnection, garbage and
 * oversized frames, a request split byte by byte, and the in-flight bound.
 * Everything listens on 127.0.0.1 with port 0 and runs on the test's loop,
 * except the server that gets killed, which runs in a forked child.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>

#include "common/errors.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/bookie_int.h" /* bookie_test_disk_usage */
#include "storage/bookie/bookie_rpc.h"
#include "storage/bookie/bookie_server.h"
#include "storage/ledger/bookie_client.h"
#include "tests/unit/bkrpc/test_bkrpc.h"

#define WAIT_S 10.0

/* ------------------------------------------------------------- fixtures -- */

typedef struct env {
    struct ev_loop *loop;
    char *dir;
    bookie_t *bk;
    bookie_server_t *srv;
    char addr[64];
} env_t;

static void bookie_test_config(bookie_config_t *cfg, const char *dir)
{
    bookie_config_defaults(cfg);
    cfg->data_dir = dir;
    cfg->journal_sync = false;
    cfg->journal_file_size_bytes = 4u << 20;
    cfg->entry_log_size_bytes = 16u << 20;
    cfg->write_cache_bytes = 16u << 20;
    cfg->read_cache_bytes = 4u << 20;
}

/* A bookie in a temp dir, served on 127.0.0.1:port (0: any). */
static void env_open(env_t *e, int port)
{
    memset(e, 0, sizeof *e);
    e->loop = ev_loop_new(0);
    e->dir = test_tmpdir("bkrpc");
    TEST_REQUIRE(e->loop && e->dir);
    bookie_config_t cfg;
    bookie_test_config(&cfg, e->dir);
    TEST_REQUIRE(bookie_open(e->loop, &cfg, &e->bk) == 0);
    if (port >= 0) {
        TEST_REQUIRE(bookie_server_start(e->loop, e->bk, "127.0.0.1", port, &e->srv) == 0);
        snprintf(e->addr, sizeof e->addr, "127.0.0.1:%d", bookie_server_port(e->srv));
    }
}

static void env_close(env_t *e)
{
    if (e->srv)
        bookie_server_stop(e->srv);
    if (e->bk)
        bookie_close(e->bk);
    test_rm_rf(e->dir);
    free(e->dir);
    ev_loop_destroy(e->loop);
}

/* ------------------------------------------------------------- results -- */

/* Set while a bk_client_* call runs: a callback seeing it was called inline. */
static bool in_call;
static int inline_callbacks;

typedef struct res {
    volatile bool done;
    int rc;
    int64_t lac;
    qbuf_t *entry; /* a reference taken in the callback */
    int seq;       /* order of arrival */
} res_t;

static int arrival;

static void res_mark(res_t *r, int rc)
{
    if (in_call)
        inline_callbacks++;
    CU_ASSERT_FALSE(r->done); /* exactly one callback per call */
    r->rc = rc;
    r->seq = arrival++;
    r->done = true;
}

static void add_cb(int rc, void *arg)
{
    res_mark(arg, rc);
}

static void read_cb(int rc, qbuf_t *entry, int64_t lac, void *arg)
{
    res_t *r = arg;
    r->entry = entry ? qbuf_ref(entry) : NULL;
    r->lac = lac;
    res_mark(r, rc);
}

static void lac_cb(int rc, int64_t lac, void *arg)
{
    res_t *r = arg;
    r->lac = lac;
    res_mark(r, rc);
}

static void done_cb(int rc, void *arg)
{
    res_mark(arg, rc);
}

static void res_reset(res_t *r)
{
    qbuf_unref(r->entry);
    memset(r, 0, sizeof *r);
}

/* Each wrapper makes the call, waits (bounded) for its callback, returns rc. */
static int do_add(struct ev_loop *loop, bk_client_t *c, int64_t l, int64_t e, int64_t lac,
                  qbuf_t *data)
{
    res_t r = {0};
    in_call = true;
    int rc = bk_client_add(c, l, e, lac, data, add_cb, &r);
    in_call = false;
    if (rc < 0)
        return rc;
    CU_ASSERT_TRUE(test_run_until(loop, &r.done, WAIT_S));
    return r.done ? r.rc : 1;
}

static int do_read(struct ev_loop *loop, bk_client_t *c, int64_t l, int64_t e, res_t *r)
{
    res_reset(r);
    in_call = true;
    int rc = bk_client_read(c, l, e, read_cb, r);
    in_call = false;
    if (rc < 0)
        return rc;
    CU_ASSERT_TRUE(test_run_until(loop, &r->done, WAIT_S));
    return r->done ? r->rc : 1;
}

typedef int (*lac_call_fn)(bk_client_t *, int64_t, bk_lac_cb, void *);

static int do_lac(struct ev_loop *loop, lac_call_fn fn, bk_client_t *c, int64_t l, int64_t *lac)
{
    res_t r = {0};
    in_call = true;
    int rc = fn(c, l, lac_cb, &r);
    in_call = false;
    if (rc < 0)
        return rc;
    CU_ASSERT_TRUE(test_run_until(loop, &r.done, WAIT_S));
    *lac = r.lac;
    return r.done ? r.rc : 1;
}

static int do_delete(struct ev_loop *loop, bk_client_t *c, int64_t l)
{
    res_t r = {0};
    in_call = true;
    int rc = bk_client_delete_ledger(c, l, done_cb, &r);
    in_call = false;
    if (rc < 0)
        return rc;
    CU_ASSERT_TRUE(test_run_until(loop, &r.done, WAIT_S));
    return r.done ? r.rc : 1;
}

static qbuf_t *entry_bytes(int64_t ledger, int64_t entry, size_t len)
{
    qbuf_t *b = qbuf_new(len);
    for (size_t i = 0; i < len; i++)
        b->data[i] = (uint8_t)(ledger * 31 + entry * 7 + (int64_t)i);
    b->len = (uint32_t)len;
    return b;
}

static bool same_bytes(const qbuf_t *a, const qbuf_t *b)
{
    return a && b && a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* ------------------------------------------------------ the round trips -- */

/* Adds entries 0..n-1 of ledger l, all in flight at once; their callbacks
 * must arrive in call order. */
static void add_many(struct ev_loop *loop, bk_client_t *c, int64_t l, int n, size_t len)
{
    res_t r[16] = {0};
    TEST_REQUIRE(n <= 16);
    for (int i = 0; i < n; i++) {
        qbuf_t *b = entry_bytes(l, i, len);
        in_call = true;
        CU_ASSERT_EQUAL(bk_client_add(c, l, i, i - 1, b, add_cb, &r[i]), 0);
        in_call = false;
        qbuf_unref(b);
    }
    CU_ASSERT_TRUE(test_run_until(loop, &r[n - 1].done, WAIT_S));
    for (int i = 0; i < n; i++) {
        CU_ASSERT_TRUE(r[i].done);
        CU_ASSERT_EQUAL(r[i].rc, 0);
        if (i > 0)
            CU_ASSERT_TRUE(r[i].seq > r[i - 1].seq);
    }
}

/* Every call of the API against a fresh bookie behind handle c. */
static void exercise_client(struct ev_loop *loop, bk_client_t *c)
{
    const int64_t l = 7;
    inline_callbacks = 0;
    add_many(loop, c, l, 10, 1000);
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(loop, c, l, 3, &r), 0);
    qbuf_t *want = entry_bytes(l, 3, 1000);
    CU_ASSERT_TRUE(same_bytes(r.entry, want));
    qbuf_unref(want);
    CU_ASSERT_EQUAL(r.lac, 8); /* the LAC piggybacked on the add of entry 9 */

    /* A large entry, and an empty one. */
    qbuf_t *big = entry_bytes(l, 10, 3u << 20);
    CU_ASSERT_EQUAL(do_add(loop, c, l, 10, 9, big), 0);
    CU_ASSERT_EQUAL(do_read(loop, c, l, 10, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, big));
    qbuf_unref(big);
    qbuf_t *empty = qbuf_new(0);
    CU_ASSERT_EQUAL(do_add(loop, c, l, 11, 10, empty), 0);
    CU_ASSERT_EQUAL(do_read(loop, c, l, 11, &r), 0);
    CU_ASSERT_TRUE(r.entry && r.entry->len == 0);

    int64_t lac = -2;
    CU_ASSERT_EQUAL(do_lac(loop, bk_client_read_lac, c, l, &lac), 0);
    CU_ASSERT_EQUAL(lac, 10);
    CU_ASSERT_EQUAL(do_lac(loop, bk_client_last_entry, c, l, &lac), 0);
    CU_ASSERT_EQUAL(lac, 11);
    CU_ASSERT_EQUAL(do_read(loop, c, l, 100, &r), QE_NO_ENTRY);
    int rc = do_read(loop, c, 999, 0, &r);
    CU_ASSERT(rc == QE_NO_LEDGER || rc == QE_NO_ENTRY);

    /* Fence: reports the LAC; the old writer's next add is refused. */
    CU_ASSERT_EQUAL(do_lac(loop, bk_client_fence, c, l, &lac), 0);
    CU_ASSERT_EQUAL(lac, 10);
    CU_ASSERT_EQUAL(do_add(loop, c, l, 12, 11, empty), QE_FENCED);
    CU_ASSERT_EQUAL(do_read(loop, c, l, 5, &r), 0); /* still readable */
    /* Recovery adds (BookKeeper's RECOVERY_ADD) pass the fence. */
    TEST_REQUIRE(c->ops->recovery_add != NULL);
    qbuf_t *rec = entry_bytes(l, 12, 500);
    res_t ra = {0};
    in_call = true;
    CU_ASSERT_EQUAL(bk_client_recovery_add(c, l, 12, 11, rec, add_cb, &ra), 0);
    in_call = false;
    CU_ASSERT_TRUE(test_run_until(loop, &ra.done, WAIT_S));
    CU_ASSERT_EQUAL(ra.rc, 0);
    CU_ASSERT_EQUAL(do_read(loop, c, l, 12, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, rec));
    qbuf_unref(rec);
    CU_ASSERT_EQUAL(do_add(loop, c, l, 13, 12, empty), QE_FENCED);

    CU_ASSERT_EQUAL(do_delete(loop, c, l), 0);
    rc = do_read(loop, c, l, 5, &r);
    CU_ASSERT(rc == QE_NO_LEDGER || rc == QE_NO_ENTRY);
    qbuf_unref(empty);
    res_reset(&r);
    CU_ASSERT_EQUAL(inline_callbacks, 0);
}

static void test_remote_round_trips(void)
{
    env_t e;
    env_open(&e, 0);
    bk_client_t *c = bk_client_remote(e.loop, e.addr, 5000);
    TEST_REQUIRE(c != NULL);
    CU_ASSERT_STRING_EQUAL(bk_client_id(c), e.addr);
    exercise_client(e.loop, c);
    bk_client_free(c);
    env_close(&e);
}

static void test_local_round_trips(void)
{
    env_t e;
    env_open(&e, -1);
    bk_client_t *c = bk_client_local(e.bk, "local-0");
    TEST_REQUIRE(c != NULL);
    CU_ASSERT_STRING_EQUAL(bk_client_id(c), "local-0");
    exercise_client(e.loop, c);

    /* Freeing with a call still in the bookie fails it with QE_CLOSED at once;
     * the bookie's own answer later is dropped. */
    res_t r = {0};
    qbuf_t *b = entry_bytes(8, 0, 10);
    CU_ASSERT_EQUAL(bk_client_add(c, 8, 0, -1, b, add_cb, &r), 0);
    qbuf_unref(b);
    bk_client_free(c);
    CU_ASSERT_TRUE(r.done);
    CU_ASSERT_EQUAL(r.rc, QE_CLOSED);
    test_run_for(e.loop, 0.05);
    env_close(&e);
}

/* ------------------------------------------------------ raw connections -- */

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

typedef struct eof_wait {
    ev_io io;
    volatile bool closed;
} eof_wait_t;

static void eof_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    eof_wait_t *ew = (eof_wait_t *)w;
    char buf[4096];
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        ew->closed = true;
        ev_io_stop(loop, w);
    }
}

/* True if the server closes fd within the bound. */
static bool wait_closed(struct ev_loop *loop, int fd)
{
    eof_wait_t ew = {.closed = false};
    ev_io_init(&ew.io, eof_cb, fd, EV_READ);
    ev_io_start(loop, &ew.io);
    bool ok = test_run_until(loop, &ew.closed, WAIT_S);
    ev_io_stop(loop, &ew.io);
    return ok;
}

static void test_garbage_closes_only_that_connection(void)
{
    env_t e;
    env_open(&e, 0);
    int port = bookie_server_port(e.srv);
    bk_client_t *c = bk_client_remote(e.loop, e.addr, 5000);
    qbuf_t *b = entry_bytes(3, 0, 100);
    CU_ASSERT_EQUAL(do_add(e.loop, c, 3, 0, -1, b), 0);

    /* Lengths that agree, but a header that is no protobuf message. */
    int g = raw_connect(port);
    TEST_REQUIRE(g >= 0);
    uint8_t junk[8 + 12] = {0, 0, 0, 16, 0, 0, 0, 12};
    memset(junk + 8, 0xff, 12);
    CU_ASSERT_EQUAL(write(g, junk, sizeof junk), (ssize_t)sizeof junk);
    /* A length prefix far past the maximum frame. */
    int o = raw_connect(port);
    TEST_REQUIRE(o >= 0);
    const uint8_t huge[8] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 8};
    CU_ASSERT_EQUAL(write(o, huge, sizeof huge), (ssize_t)sizeof huge);
    /* Plain text. */
    int t = raw_connect(port);
    TEST_REQUIRE(t >= 0);
    const char *text = "GET / HTTP/1.1\r\nHost: bookie\r\n\r\n";
    CU_ASSERT_EQUAL(write(t, text, strlen(text)), (ssize_t)strlen(text));

    CU_ASSERT_TRUE(wait_closed(e.loop, g));
    CU_ASSERT_TRUE(wait_closed(e.loop, o));
    CU_ASSERT_TRUE(wait_closed(e.loop, t));
    close(g);
    close(o);
    close(t);

    bookie_server_stats_t st;
    bookie_server_get_stats(e.srv, &st);
    CU_ASSERT_EQUAL(st.bad_frames, 3);
    CU_ASSERT_EQUAL(st.connections, 1);

    /* The well-behaved client never noticed. */
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(e.loop, c, 3, 0, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, b));
    CU_ASSERT_EQUAL(do_add(e.loop, c, 3, 1, 0, b), 0);
    res_reset(&r);
    qbuf_unref(b);
    bk_client_free(c);
    env_close(&e);
}

/* Runs the loop until one response frame can be read from the raw socket
 * fd (bounded); NULL if none came. One response per call, none pipelined. */
static Quire__Bookie__Response *raw_response(struct ev_loop *loop, int fd)
{
    bkrpc_reader_t rd;
    TEST_REQUIRE(bkrpc_reader_init(&rd) == 0);
    Quire__Bookie__Response *resp = NULL;
    for (int i = 0; i < 2000 && !resp; i++) {
        test_run_for(loop, 0.005);
        uint8_t *p;
        size_t room;
        bkrpc_reader_space(&rd, &p, &room);
        ssize_t n = read(fd, p, room);
        if (n <= 0)
            continue;
        bkrpc_reader_commit(&rd, (size_t)n);
        bkrpc_frame_t f;
        if (bkrpc_reader_next(&rd, &f) == 1) {
            CU_ASSERT_EQUAL(bkrpc_decode_response(&f, &resp), 0);
            qbuf_unref(f.body);
        }
    }
    bkrpc_reader_free(&rd);
    return resp;
}

/* A whole Add request written one byte per loop iteration; the response is
 * read back from the raw socket with the codec. */
static void test_request_split_byte_by_byte(void)
{
    env_t e;
    env_open(&e, 0);
    int fd = raw_connect(bookie_server_port(e.srv));
    TEST_REQUIRE(fd >= 0);
    qbuf_t *body = entry_bytes(5, 0, 300);
    Quire__Bookie__AddRequest add = QUIRE__BOOKIE__ADD_REQUEST__INIT;
    add.ledger_id = 5;
    add.entry_id = 0;
    add.lac = -1;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.version = BKRPC_PROTOCOL_VERSION;
    q.op = QUIRE__BOOKIE__OP_TYPE__ADD;
    q.request_id = 77;
    q.add = &add;
    bkrpc_out_t *m;
    TEST_REQUIRE(bkrpc_encode(&q.base, body, &m) == 0);
    size_t len = bkrpc_out_size(m);
    uint8_t *bytes = malloc(len);
    memcpy(bytes, m->head, m->head_len);
    memcpy(bytes + m->head_len, body->data, body->len);
    bkrpc_out_free(m);
    for (size_t i = 0; i < len; i++) {
        CU_ASSERT_EQUAL(write(fd, bytes + i, 1), 1);
        ev_run(e.loop, EVRUN_NOWAIT);
        ev_run(e.loop, EVRUN_NOWAIT);
    }
    free(bytes);

    Quire__Bookie__Response *resp = raw_response(e.loop, fd);
    TEST_REQUIRE(resp != NULL);
    CU_ASSERT_EQUAL(resp->request_id, 77);
    CU_ASSERT_EQUAL(resp->op, QUIRE__BOOKIE__OP_TYPE__ADD);
    CU_ASSERT_EQUAL(resp->status, QUIRE__BOOKIE__STATUS__OK);
    CU_ASSERT_EQUAL(resp->entry_id, 0);
    quire__bookie__response__free_unpacked(resp, NULL);

    /* A request of another protocol version is answered INVALID, and the
     * connection stays usable. */
    Quire__Bookie__ReadLacRequest rl = QUIRE__BOOKIE__READ_LAC_REQUEST__INIT;
    rl.ledger_id = 5;
    Quire__Bookie__Request v2 = QUIRE__BOOKIE__REQUEST__INIT;
    v2.version = BKRPC_PROTOCOL_VERSION + 1;
    v2.op = QUIRE__BOOKIE__OP_TYPE__READ_LAC;
    v2.request_id = 78;
    v2.read_lac = &rl;
    TEST_REQUIRE(bkrpc_encode(&v2.base, NULL, &m) == 0);
    CU_ASSERT_EQUAL(write(fd, m->head, m->head_len), (ssize_t)m->head_len);
    bkrpc_out_free(m);
    resp = raw_response(e.loop, fd);
    TEST_REQUIRE(resp != NULL);
    CU_ASSERT_EQUAL(resp->request_id, 78);
    CU_ASSERT_EQUAL(resp->status, QUIRE__BOOKIE__STATUS__INVALID);
    quire__bookie__response__free_unpacked(resp, NULL);
    v2.version = BKRPC_PROTOCOL_VERSION;
    v2.request_id = 79;
    TEST_REQUIRE(bkrpc_encode(&v2.base, NULL, &m) == 0);
    CU_ASSERT_EQUAL(write(fd, m->head, m->head_len), (ssize_t)m->head_len);
    bkrpc_out_free(m);
    resp = raw_response(e.loop, fd);
    TEST_REQUIRE(resp != NULL);
    CU_ASSERT_EQUAL(resp->request_id, 79);
    CU_ASSERT_EQUAL(resp->status, QUIRE__BOOKIE__STATUS__OK);
    CU_ASSERT_TRUE(resp->has_lac && resp->lac == -1);
    quire__bookie__response__free_unpacked(resp, NULL);
    close(fd);

    /* What arrived byte by byte is what is stored. */
    bk_client_t *c = bk_client_local(e.bk, "local");
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(e.loop, c, 5, 0, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, body));
    res_reset(&r);
    bk_client_free(c);
    qbuf_unref(body);
    env_close(&e);
}

/* A client that sends many reads of a 1 MiB entry and never reads the
 * answers: the server stops reading it (bounded memory) and keeps serving
 * another client; closing the stalled client frees its connection. */
static void test_slow_reader_is_paused(void)
{
    env_t e;
    env_open(&e, 0);
    bk_client_t *c = bk_client_remote(e.loop, e.addr, 5000);
    qbuf_t *big = entry_bytes(4, 0, 1u << 20);
    CU_ASSERT_EQUAL(do_add(e.loop, c, 4, 0, -1, big), 0);

    int fd = raw_connect(bookie_server_port(e.srv));
    TEST_REQUIRE(fd >= 0);
    enum { N = 300 };
    for (int i = 0; i < N; i++) {
        Quire__Bookie__ReadRequest rd = QUIRE__BOOKIE__READ_REQUEST__INIT;
        rd.ledger_id = 4;
        rd.entry_id = 0;
        Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
        q.version = BKRPC_PROTOCOL_VERSION;
        q.op = QUIRE__BOOKIE__OP_TYPE__READ;
        q.request_id = (uint64_t)i + 1;
        q.read = &rd;
        bkrpc_out_t *m;
        TEST_REQUIRE(bkrpc_encode(&q.base, NULL, &m) == 0);
        CU_ASSERT_EQUAL(write(fd, m->head, m->head_len), (ssize_t)m->head_len);
        bkrpc_out_free(m);
    }
    bookie_server_stats_t st = {0};
    for (int i = 0; i < 400 && st.connections_paused == 0; i++) {
        test_run_for(e.loop, 0.025);
        bookie_server_get_stats(e.srv, &st);
    }
    CU_ASSERT_EQUAL(st.connections_paused, 1);
    CU_ASSERT(st.requests < N); /* it stopped reading before the end */
    CU_ASSERT(st.out_bytes <= BOOKIE_SERVER_CONN_OUT_BYTES_MAX +
                                  (BOOKIE_SERVER_CONN_READS_MAX + 2) * (size_t)(1u << 20));

    /* The other client is served meanwhile. */
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(e.loop, c, 4, 0, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, big));
    res_reset(&r);

    close(fd);
    for (int i = 0; i < 400 && st.connections != 1; i++) {
        test_run_for(e.loop, 0.025);
        bookie_server_get_stats(e.srv, &st);
    }
    CU_ASSERT_EQUAL(st.connections, 1);
    CU_ASSERT_EQUAL(st.out_bytes, 0);

    /* Stopping the server while the bookie still holds requests of a
     * connection: their answers arrive after it and are dropped. */
    in_call = false;
    res_t pend[8] = {{0}};
    uint64_t before = st.requests;
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(bk_client_read(c, 4, 0, read_cb, &pend[i]), 0);
    for (int i = 0; i < 100000 && st.requests < before + 8; i++) {
        ev_run(e.loop, EVRUN_NOWAIT);
        bookie_server_get_stats(e.srv, &st);
    }
    CU_ASSERT_EQUAL(st.requests, before + 8);
    bookie_server_stop(e.srv);
    e.srv = NULL;
    CU_ASSERT_TRUE(test_run_until(e.loop, &pend[7].done, WAIT_S));
    for (int i = 0; i < 8; i++) {
        CU_ASSERT(pend[i].rc == 0 || pend[i].rc == QE_UNAVAILABLE);
        res_reset(&pend[i]);
    }
    qbuf_unref(big);
    bk_client_free(c);
    env_close(&e);
}

/* ------------------------------------------------ timeouts and failures -- */

/* A socket that listens (the kernel completes connects) and never answers. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

static void test_remote_timeout(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    int port;
    int lfd = silent_listener(&port);
    TEST_REQUIRE(lfd >= 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    bk_client_t *c = bk_client_remote(loop, addr, 200);
    TEST_REQUIRE(c != NULL);
    int64_t lac = 0;
    CU_ASSERT_EQUAL(do_lac(loop, bk_client_read_lac, c, 1, &lac), QE_TIMEOUT);
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(loop, c, 1, 0, &r), QE_TIMEOUT);
    CU_ASSERT_PTR_NULL(r.entry);

    /* Freeing the handle fails what is pending with QE_CLOSED. */
    res_reset(&r);
    CU_ASSERT_EQUAL(bk_client_read(c, 1, 0, read_cb, &r), 0);
    bk_client_free(c);
    CU_ASSERT_TRUE(r.done);
    CU_ASSERT_EQUAL(r.rc, QE_CLOSED);
    close(lfd);
    ev_loop_destroy(loop);
}

typedef struct counter {
    int n;
    int timeouts;
    volatile bool all;
    int want;
} counter_t;

static void count_cb(int rc, int64_t lac, void *arg)
{
    (void)lac;
    counter_t *k = arg;
    k->n++;
    k->timeouts += rc == QE_TIMEOUT;
    if (k->n == k->want)
        k->all = true;
}

static void test_remote_inflight_bound(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    int port;
    int lfd = silent_listener(&port);
    TEST_REQUIRE(lfd >= 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    bk_client_t *c = bk_client_remote(loop, addr, 300);
    counter_t k = {.want = 0};
    int accepted = 0, busy = 0;
    for (int i = 0; i < 10001; i++) {
        int rc = bk_client_read_lac(c, i, count_cb, &k);
        accepted += rc == 0;
        busy += rc == QE_BUSY;
    }
    CU_ASSERT_EQUAL(accepted, 10000);
    CU_ASSERT_EQUAL(busy, 1);
    k.want = accepted;
    CU_ASSERT_TRUE(test_run_until(loop, &k.all, WAIT_S));
    CU_ASSERT_EQUAL(k.timeouts, accepted);
    bk_client_free(c);
    close(lfd);
    ev_loop_destroy(loop);
}

/* Runs a bookie server in a forked child on port 0; returns its pid and
 * port. The child never returns. */
static pid_t fork_server(const char *dir, int *port)
{
    int pfd[2];
    TEST_REQUIRE(pipe(pfd) == 0);
    pid_t pid = fork();
    TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        struct ev_loop *loop = ev_loop_new(0);
        bookie_config_t cfg;
        bookie_test_config(&cfg, dir);
        bookie_t *bk;
        bookie_server_t *srv;
        int p = -1;
        if (bookie_open(loop, &cfg, &bk) == 0 &&
            bookie_server_start(loop, bk, "127.0.0.1", 0, &srv) == 0)
            p = bookie_server_port(srv);
        if (write(pfd[1], &p, sizeof p) != (ssize_t)sizeof p || p < 0)
            _exit(1);
        ev_run(loop, 0);
        _exit(0);
    }
    close(pfd[1]);
    struct pollfd pl = {.fd = pfd[0], .events = POLLIN};
    *port = -1;
    if (poll(&pl, 1, (int)(WAIT_S * 1000)) == 1 && read(pfd[0], port, sizeof *port) != sizeof *port)
        *port = -1;
    close(pfd[0]);
    return pid;
}

static void test_killed_server_then_reconnect(void)
{
    char *child_dir = test_tmpdir("bkrpc-child");
    TEST_REQUIRE(child_dir != NULL);
    int port;
    pid_t pid = fork_server(child_dir, &port);
    TEST_REQUIRE(port > 0);
    struct ev_loop *loop = ev_loop_new(0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    bk_client_t *c = bk_client_remote(loop, addr, 5000);
    qbuf_t *b = entry_bytes(9, 0, 64);
    CU_ASSERT_EQUAL(do_add(loop, c, 9, 0, -1, b), 0);

    /* A request pending in a stopped server; then the server dies. */
    kill(pid, SIGSTOP);
    res_t r = {0};
    CU_ASSERT_EQUAL(bk_client_read(c, 9, 0, read_cb, &r), 0);
    test_run_for(loop, 0.05);
    CU_ASSERT_FALSE(r.done);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CU_ASSERT_TRUE(test_run_until(loop, &r.done, WAIT_S));
    CU_ASSERT_EQUAL(r.rc, QE_UNAVAILABLE);
    /* While it is down, calls fail fast, through the callback. */
    CU_ASSERT_EQUAL(do_read(loop, c, 9, 0, &r), QE_UNAVAILABLE);

    /* A new server on the same port: the handle reconnects by itself. */
    char *dir = test_tmpdir("bkrpc");
    bookie_config_t cfg;
    bookie_test_config(&cfg, dir);
    bookie_t *bk;
    TEST_REQUIRE(bookie_open(loop, &cfg, &bk) == 0);
    bookie_server_t *srv;
    TEST_REQUIRE(bookie_server_start(loop, bk, "127.0.0.1", port, &srv) == 0);
    int rc = QE_UNAVAILABLE;
    for (int i = 0; i < 200 && rc == QE_UNAVAILABLE; i++) {
        rc = do_add(loop, c, 9, 0, -1, b);
        if (rc == QE_UNAVAILABLE)
            test_run_for(loop, 0.05);
    }
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(do_read(loop, c, 9, 0, &r), 0);
    CU_ASSERT_TRUE(same_bytes(r.entry, b));
    res_reset(&r);

    bk_client_free(c);
    qbuf_unref(b);
    bookie_server_stop(srv);
    bookie_close(bk);
    ev_loop_destroy(loop);
    test_rm_rf(dir);
    test_rm_rf(child_dir);
    free(dir);
    free(child_dir);
}

/* Nothing listens: the first call fails with QE_UNAVAILABLE, not inline. */
static void test_remote_refused(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    int port;
    int lfd = silent_listener(&port);
    close(lfd); /* the port is now (very likely) closed */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    bk_client_t *c = bk_client_remote(loop, addr, 2000);
    inline_callbacks = 0;
    res_t r = {0};
    CU_ASSERT_EQUAL(do_read(loop, c, 1, 0, &r), QE_UNAVAILABLE);
    CU_ASSERT_EQUAL(do_read(loop, c, 1, 0, &r), QE_UNAVAILABLE);
    CU_ASSERT_EQUAL(inline_callbacks, 0);
    CU_ASSERT_PTR_NULL(bk_client_remote(loop, "no-port", 100));
    CU_ASSERT_PTR_NULL(bk_client_remote(loop, "host:99999", 100));
    bk_client_free(c);
    ev_loop_destroy(loop);
}

/* ---------------------------------------------------------------- main -- */

/* A bookie whose disk is full: the local handle is not writable at once, the
 * remote one from the first plain add the bookie answers READ_ONLY (a
 * recovery add it takes does not change that), and again from the first plain
 * add it takes. */
static void test_read_only_bookie_not_writable(void)
{
    env_t e;
    env_open(&e, 0);
    bk_client_t *c = bk_client_remote(e.loop, e.addr, 5000);
    bk_client_t *l = bk_client_local(e.bk, "local");
    TEST_REQUIRE(c && l);
    qbuf_t *d = entry_bytes(5, 0, 100);
    CU_ASSERT_EQUAL(do_add(e.loop, c, 5, 0, -1, d), 0);
    CU_ASSERT_TRUE(bk_client_writable(c) && bk_client_writable(l));
    bookie_test_disk_usage(e.bk, 0.99);
    CU_ASSERT_FALSE(bk_client_writable(l));
    CU_ASSERT_EQUAL(do_add(e.loop, c, 5, 1, 0, d), QE_READ_ONLY);
    CU_ASSERT_FALSE(bk_client_writable(c));
    res_t r = {0};
    CU_ASSERT_EQUAL(bk_client_recovery_add(c, 5, 1, 0, d, add_cb, &r), 0);
    CU_ASSERT_TRUE(test_run_until(e.loop, &r.done, WAIT_S));
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_FALSE(bk_client_writable(c));
    bookie_test_disk_usage(e.bk, 0.5);
    CU_ASSERT_TRUE(bk_client_writable(l));
    CU_ASSERT_EQUAL(do_add(e.loop, c, 6, 0, -1, d), 0);
    CU_ASSERT_TRUE(bk_client_writable(c));
    qbuf_unref(d);
    bk_client_free(l);
    bk_client_free(c);
    env_close(&e);
}

static void register_suites(void)
{
    bkrpc_register_codec_suite();
    CU_pSuite s = CU_add_suite("bkrpc", NULL, NULL);
    CU_add_test(s, "remote round trips", test_remote_round_trips);
    CU_add_test(s, "local round trips", test_local_round_trips);
    CU_add_test(s, "garbage closes only that connection", test_garbage_closes_only_that_connection);
    CU_add_test(s, "request split byte by byte", test_request_split_byte_by_byte);
    CU_add_test(s, "slow reader is paused", test_slow_reader_is_paused);
    CU_add_test(s, "remote timeout", test_remote_timeout);
    CU_add_test(s, "remote in-flight bound", test_remote_inflight_bound);
    CU_add_test(s, "remote refused connection", test_remote_refused);
    CU_add_test(s, "read-only bookie not writable", test_read_only_bookie_not_writable);
    CU_add_test(s, "killed server, then reconnect", test_killed_server_then_reconnect);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    return test_main(argc, argv, register_suites);
}
