/*
 * Unit tests of the bookie RPC codec (storage/bookie/bookie_rpc.h) without a
 * bookie: frames encoded and parsed back whole and byte by byte, every
 * framing bound refused, partial writes through a small socket buffer, and
 * the status <-> error code table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.h"
#include "storage/bookie/bookie_rpc.h"
#include "tests/unit/bkrpc/test_bkrpc.h"

/* The bytes of an encoded frame, in one malloc'd buffer. */
static uint8_t *flatten(bkrpc_out_t *m, size_t *len)
{
    *len = bkrpc_out_size(m);
    uint8_t *p = malloc(*len);
    memcpy(p, m->head, m->head_len);
    if (m->body)
        memcpy(p + m->head_len, m->body->data, m->body->len);
    return p;
}

static bkrpc_out_t *encode_add(uint64_t id, int64_t ledger, int64_t entry, qbuf_t *body)
{
    Quire__Bookie__AddRequest add = QUIRE__BOOKIE__ADD_REQUEST__INIT;
    add.ledger_id = ledger;
    add.entry_id = entry;
    add.lac = entry - 1;
    Quire__Bookie__Request q = QUIRE__BOOKIE__REQUEST__INIT;
    q.version = BKRPC_PROTOCOL_VERSION;
    q.op = QUIRE__BOOKIE__OP_TYPE__ADD;
    q.request_id = id;
    q.add = &add;
    bkrpc_out_t *m = NULL;
    CU_ASSERT_EQUAL(bkrpc_encode(&q.base, body, &m), 0);
    return m;
}

static qbuf_t *pattern_buf(size_t len, uint8_t seed)
{
    qbuf_t *b = qbuf_new(len);
    for (size_t i = 0; i < len; i++)
        b->data[i] = (uint8_t)(seed + i * 7);
    b->len = (uint32_t)len;
    return b;
}

/* Feeds bytes to r in chunks of at most step; collects up to max frames. */
static int feed(bkrpc_reader_t *r, const uint8_t *p, size_t len, size_t step,
                Quire__Bookie__Request **reqs, qbuf_t **bodies, int max)
{
    int n = 0;
    size_t off = 0;
    while (off < len) {
        uint8_t *dst;
        size_t room;
        bkrpc_reader_space(r, &dst, &room);
        size_t k = len - off < step ? len - off : step;
        k = k < room ? k : room;
        memcpy(dst, p + off, k);
        bkrpc_reader_commit(r, k);
        off += k;
        bkrpc_frame_t f;
        int rc;
        while ((rc = bkrpc_reader_next(r, &f)) == 1) {
            TEST_REQUIRE(n < max);
            CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &reqs[n]), 0);
            bodies[n++] = f.body;
        }
        CU_ASSERT_EQUAL(rc, 0);
    }
    return n;
}

static void check_add(Quire__Bookie__Request *q, qbuf_t *body, uint64_t id, int64_t entry,
                      qbuf_t *want)
{
    TEST_REQUIRE(q != NULL && q->add != NULL);
    CU_ASSERT_EQUAL(q->request_id, id);
    CU_ASSERT_EQUAL(q->op, QUIRE__BOOKIE__OP_TYPE__ADD);
    CU_ASSERT_EQUAL(q->add->ledger_id, 42);
    CU_ASSERT_EQUAL(q->add->entry_id, entry);
    CU_ASSERT_EQUAL(q->add->lac, entry - 1);
    TEST_REQUIRE(body != NULL);
    CU_ASSERT_EQUAL(body->len, want->len);
    CU_ASSERT_EQUAL(memcmp(body->data, want->data, want->len), 0);
    quire__bookie__request__free_unpacked(q, NULL);
    qbuf_unref(body);
}

/* A small frame and one whose body is larger than the read buffer (so it goes
 * through the BODY state), fed whole and then one byte at a time. */
static void run_two_frames(size_t step)
{
    qbuf_t *small = pattern_buf(100, 1), *big = pattern_buf(300 * 1024, 9);
    bkrpc_out_t *m1 = encode_add(1, 42, 0, small), *m2 = encode_add(2, 42, 1, big);
    size_t l1, l2;
    uint8_t *f1 = flatten(m1, &l1), *f2 = flatten(m2, &l2);
    uint8_t *all = malloc(l1 + l2);
    memcpy(all, f1, l1);
    memcpy(all + l1, f2, l2);
    bkrpc_reader_t r;
    TEST_REQUIRE(bkrpc_reader_init(&r) == 0);
    Quire__Bookie__Request *reqs[4];
    qbuf_t *bodies[4];
    int n = feed(&r, all, l1 + l2, step, reqs, bodies, 4);
    CU_ASSERT_EQUAL(n, 2);
    if (n == 2) {
        check_add(reqs[0], bodies[0], 1, 0, small);
        check_add(reqs[1], bodies[1], 2, 1, big);
    }
    bkrpc_reader_free(&r);
    free(all);
    free(f1);
    free(f2);
    bkrpc_out_free(m1);
    bkrpc_out_free(m2);
    qbuf_unref(small);
    qbuf_unref(big);
}

static void test_codec_round_trip_whole(void)
{
    run_two_frames((size_t)1 << 30);
}

static void test_codec_round_trip_byte_by_byte(void)
{
    run_two_frames(1);
}

/* Feeds raw bytes; returns the first non-zero result of next(). */
static int feed_raw(const uint8_t *p, size_t len, bkrpc_frame_t *f)
{
    bkrpc_reader_t r;
    TEST_REQUIRE(bkrpc_reader_init(&r) == 0);
    uint8_t *dst;
    size_t room;
    bkrpc_reader_space(&r, &dst, &room);
    memcpy(dst, p, len);
    bkrpc_reader_commit(&r, len);
    int rc = bkrpc_reader_next(&r, f);
    if (rc == 1) { /* keep the header: copy it out before freeing the reader */
        uint8_t *h = malloc(f->header_len);
        memcpy(h, f->header, f->header_len);
        f->header = h;
    }
    bkrpc_reader_free(&r);
    return rc;
}

static void test_codec_refuses_bad_lengths(void)
{
    bkrpc_frame_t f;
    const uint8_t huge[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1};
    CU_ASSERT_EQUAL(feed_raw(huge, 8, &f), QE_TOO_LARGE);
    const uint8_t just_over[8] = {0x00, 0x51, 0x00, 0x01, 0, 0, 0, 1}; /* 5 MiB + 64 KiB + 1 */
    CU_ASSERT_EQUAL(feed_raw(just_over, 8, &f), QE_TOO_LARGE);
    const uint8_t tiny[8] = {0, 0, 0, 3, 0, 0, 0, 1};
    CU_ASSERT_EQUAL(feed_raw(tiny, 8, &f), QE_CORRUPT);
    const uint8_t no_header[8] = {0, 0, 0, 10, 0, 0, 0, 0};
    CU_ASSERT_EQUAL(feed_raw(no_header, 8, &f), QE_CORRUPT);
    const uint8_t header_past_frame[8] = {0, 0, 0, 10, 0, 0, 0, 7};
    CU_ASSERT_EQUAL(feed_raw(header_past_frame, 8, &f), QE_CORRUPT);
    const uint8_t header_too_big[8] = {0, 0x10, 0, 0, 0, 1, 0, 1};
    CU_ASSERT_EQUAL(feed_raw(header_too_big, 8, &f), QE_CORRUPT);
    /* A prefix alone is not yet an error: more bytes are needed. */
    const uint8_t partial[6] = {0, 0, 0, 20, 0, 0};
    CU_ASSERT_EQUAL(feed_raw(partial, 6, &f), 0);
}

static void test_codec_refuses_bad_headers(void)
{
    bkrpc_frame_t f;
    uint8_t junk[8 + 12] = {0, 0, 0, 16, 0, 0, 0, 12};
    memset(junk + 8, 0xff, 12);
    TEST_REQUIRE(feed_raw(junk, sizeof junk, &f) == 1);
    Quire__Bookie__Request *q;
    CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &q), QE_CORRUPT);
    free((void *)f.header);

    /* A READ whose sub-message is missing, then one that carries a body. */
    Quire__Bookie__Request r = QUIRE__BOOKIE__REQUEST__INIT;
    r.version = BKRPC_PROTOCOL_VERSION;
    r.op = QUIRE__BOOKIE__OP_TYPE__READ;
    r.request_id = 5;
    bkrpc_out_t *m;
    TEST_REQUIRE(bkrpc_encode(&r.base, NULL, &m) == 0);
    f.header = m->head + 8;
    f.header_len = m->head_len - 8;
    f.body = NULL;
    CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &q), QE_CORRUPT);
    bkrpc_out_free(m);
    Quire__Bookie__ReadRequest rd = QUIRE__BOOKIE__READ_REQUEST__INIT;
    r.read = &rd;
    TEST_REQUIRE(bkrpc_encode(&r.base, NULL, &m) == 0);
    f.header = m->head + 8;
    f.header_len = m->head_len - 8;
    CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &q), 0);
    quire__bookie__request__free_unpacked(q, NULL);
    qbuf_t *body = qbuf_copy("x", 1);
    f.body = body;
    CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &q), QE_CORRUPT);
    qbuf_unref(body);
    bkrpc_out_free(m);

    /* An entry body over the bound cannot even be encoded. */
    qbuf_t *too_big = qbuf_new(BKRPC_BODY_MAX + 1);
    too_big->len = BKRPC_BODY_MAX + 1;
    CU_ASSERT_EQUAL(bkrpc_encode(&r.base, too_big, &m), QE_TOO_LARGE);
    qbuf_unref(too_big);
}

/* One read from fd; the ADD frames it completes are checked in order (entry
 * *got, then the next). False when nothing was read. */
static bool read_adds(int fd, bkrpc_reader_t *r, int *got, qbuf_t *body)
{
    uint8_t *dst;
    size_t room;
    bkrpc_reader_space(r, &dst, &room);
    ssize_t n = read(fd, dst, room);
    if (n <= 0)
        return false;
    bkrpc_reader_commit(r, (size_t)n);
    bkrpc_frame_t f;
    while (bkrpc_reader_next(r, &f) == 1) {
        Quire__Bookie__Request *req;
        CU_ASSERT_EQUAL(bkrpc_decode_request(&f, &req), 0);
        check_add(req, f.body, (uint64_t)*got + 1, *got, body);
        (*got)++;
    }
    return true;
}

typedef struct pipe_run {
    int got;      /* frames read back intact, in order */
    int partial;  /* calls that left bytes queued */
    int calls;    /* calls that wrote something */
    int over;     /* calls that wrote more than BKRPC_WRITE_SLICE_BYTES */
    size_t total; /* bytes queued */
    size_t left;  /* bytes still queued at the end */
} pipe_run_t;

/* n ADD frames of body_len bytes through a socketpair (0: the default buffer
 * size), written with bkrpc_outq_write and read back after each call: one
 * read, or (drain) everything there is. */
static void pipe_adds(int sndbuf, int rcvbuf, int n, size_t body_len, bool drain, pipe_run_t *pr)
{
    memset(pr, 0, sizeof *pr);
    int sv[2];
    TEST_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    if (sndbuf)
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    if (rcvbuf)
        setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    qbuf_t *body = pattern_buf(body_len, 3);
    bkrpc_outq_t q = {0};
    for (int i = 0; i < n; i++)
        bkrpc_outq_push(&q, encode_add((uint64_t)i + 1, 42, i, body));
    pr->total = q.bytes;
    bkrpc_reader_t r;
    TEST_REQUIRE(bkrpc_reader_init(&r) == 0);
    for (int rounds = 0; rounds < 100000 && pr->got < n; rounds++) {
        size_t before = q.bytes;
        int wrc = bkrpc_outq_write(&q, sv[0]);
        CU_ASSERT(wrc == 0 || wrc == 1);
        pr->partial += wrc == 1;
        pr->calls += before > q.bytes;
        pr->over += before - q.bytes > BKRPC_WRITE_SLICE_BYTES;
        while (read_adds(sv[1], &r, &pr->got, body) && drain)
            ;
    }
    CU_ASSERT_EQUAL(q.count, 0);
    pr->left = q.bytes;
    bkrpc_outq_clear(&q);
    bkrpc_reader_free(&r);
    qbuf_unref(body);
    close(sv[0]);
    close(sv[1]);
}

/* A call writes at most BKRPC_WRITE_SLICE_BYTES even when the socket takes
 * more (a reader as fast as the writer), then says bytes remain. */
static void test_codec_write_slice(void)
{
    pipe_run_t pr;
    pipe_adds(8 << 20, 8 << 20, 10, 300 * 1024, true, &pr);
    CU_ASSERT_EQUAL(pr.got, 10);
    CU_ASSERT_EQUAL(pr.left, 0);
    CU_ASSERT_EQUAL(pr.over, 0);
    CU_ASSERT_TRUE((size_t)pr.calls >=
                   (pr.total + BKRPC_WRITE_SLICE_BYTES - 1) / BKRPC_WRITE_SLICE_BYTES);
}

/* Many frames through a socketpair with a small send buffer: partial writes
 * resume where they stopped, and the reader sees every frame intact. */
static void test_codec_partial_writes(void)
{
    pipe_run_t pr;
    pipe_adds(4096, 0, 40, 70 * 1024, false, &pr);
    CU_ASSERT_EQUAL(pr.got, 40);
    CU_ASSERT(pr.partial > 0);
    CU_ASSERT_EQUAL(pr.left, 0);
}

static void test_codec_status_table(void)
{
    const int codes[] = {0,           QE_NO_ENTRY,    QE_NO_LEDGER, QE_FENCED,    QE_CORRUPT,
                         QE_BUSY,     QE_UNAVAILABLE, QE_INVALID,   QE_TOO_LARGE, QE_TIMEOUT,
                         QE_SHUTDOWN, QE_READ_ONLY,   QE_CLOSED,    QE_NOT_FOUND, -EIO};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CU_ASSERT_EQUAL(bkrpc_status_to_rc(bkrpc_status_from_rc(codes[i])), codes[i]);
    CU_ASSERT_EQUAL(bkrpc_status_from_rc(-ENOSPC), QUIRE__BOOKIE__STATUS__IO_ERROR);
    CU_ASSERT_EQUAL(bkrpc_status_to_rc(bkrpc_status_from_rc(-ENOSPC)), -EIO);
    CU_ASSERT_EQUAL(bkrpc_status_from_rc(QE_BAD_VERSION), QUIRE__BOOKIE__STATUS__ERROR);
    CU_ASSERT_EQUAL(bkrpc_status_to_rc(QUIRE__BOOKIE__STATUS__ERROR), -EIO);
}

void bkrpc_register_codec_suite(void)
{
    CU_pSuite s = CU_add_suite("codec", NULL, NULL);
    CU_add_test(s, "round trip whole", test_codec_round_trip_whole);
    CU_add_test(s, "round trip byte by byte", test_codec_round_trip_byte_by_byte);
    CU_add_test(s, "bad lengths refused", test_codec_refuses_bad_lengths);
    CU_add_test(s, "bad headers refused", test_codec_refuses_bad_headers);
    CU_add_test(s, "partial writes", test_codec_partial_writes);
    CU_add_test(s, "a write call bounded by the slice", test_codec_write_slice);
    CU_add_test(s, "status table", test_codec_status_table);
}
