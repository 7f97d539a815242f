/* Unit tests of server/codec/frame: decoding, rejection, checksums, encoders. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "tests/unit/codec/codec_tests.h"
#include "tests/unit/support/test_support.h"

#define MAXF FRAME_DEFAULT_MAX_FRAME_BYTES

static const uint8_t test_payload[] = "hello, quire: payload bytes \x00\x01\x02\xff";

/* A SEND frame {producer_id 7, sequence_id 42} with metadata and payload. */
static qbuf_t *make_send(bool with_checksum)
{
    Pulsar__Proto__CommandSend send = PULSAR__PROTO__COMMAND_SEND__INIT;
    send.producer_id = 7;
    send.sequence_id = 42;
    send.has_num_messages = 1;
    send.num_messages = 1;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND;
    cmd.send = &send;
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "prod-1";
    md.sequence_id = 42;
    md.publish_time = 1700000000000ull;
    md.partition_key = "k";
    qbuf_t *b = NULL;
    int rc = frame_encode_payload(&cmd, &md, test_payload, sizeof test_payload, with_checksum, &b);
    CU_ASSERT_EQUAL(rc, 0);
    return b;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void test_send_with_checksum_exact_slice(void)
{
    qbuf_t *b = make_send(true);
    TEST_REQUIRE(b != NULL);
    frame_t f;
    size_t consumed = 0;
    TEST_REQUIRE(frame_decode(b->data, b->len, MAXF, &f, &consumed) == 0);
    CU_ASSERT_EQUAL(consumed, b->len);
    CU_ASSERT_EQUAL(f.frame_len, b->len);
    CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__SEND);
    CU_ASSERT_EQUAL(f.cmd->send->producer_id, 7);
    CU_ASSERT_EQUAL(f.cmd->send->sequence_id, 42);
    uint32_t cmd_size = rd32(b->data + 4);
    /* The slice starts at the 0x0e01 magic and runs to the frame's end. */
    CU_ASSERT_PTR_EQUAL(f.payload, b->data + 8 + cmd_size);
    CU_ASSERT_EQUAL(f.payload_len, b->len - 8 - cmd_size);
    CU_ASSERT_EQUAL(f.payload[0], 0x0e);
    CU_ASSERT_EQUAL(f.payload[1], 0x01);
    CU_ASSERT_TRUE(f.has_checksum);
    CU_ASSERT_TRUE(f.checksum_ok);
    CU_ASSERT_PTR_NULL(f.broker_entry_metadata);
    CU_ASSERT_EQUAL(frame_verify_checksum(f.payload, f.payload_len), 1);

    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    TEST_REQUIRE(frame_parse_metadata(f.payload, f.payload_len, &md, &off) == 0);
    CU_ASSERT_STRING_EQUAL(md->producer_name, "prod-1");
    CU_ASSERT_EQUAL(md->sequence_id, 42);
    CU_ASSERT_EQUAL(md->publish_time, 1700000000000ull);
    CU_ASSERT_STRING_EQUAL(md->partition_key, "k");
    CU_ASSERT_EQUAL(md->num_messages_in_batch, 1); /* the default */
    CU_ASSERT_EQUAL(f.payload_len - off, sizeof test_payload);
    CU_ASSERT_EQUAL(memcmp(f.payload + off, test_payload, sizeof test_payload), 0);
    frame_metadata_free(md);
    frame_free(&f);
    CU_ASSERT_PTR_NULL(f.cmd);
    frame_free(&f); /* idempotent */
    qbuf_unref(b);
}

/* A frame received in two pieces (head, then the payload part in a buffer of
 * its own) decodes as it does whole; sizes that disagree are refused. */
static void test_split_decode(void)
{
    qbuf_t *b = make_send(true);
    TEST_REQUIRE(b != NULL);
    size_t head = 0;
    CU_ASSERT_EQUAL(frame_head_size(b->data, 7, MAXF, &head), QE_AGAIN);
    TEST_REQUIRE(frame_head_size(b->data, 8, MAXF, &head) == 0);
    CU_ASSERT_EQUAL(head, 8 + rd32(b->data + 4));
    qbuf_t *rest = qbuf_copy(b->data + head, b->len - head);
    TEST_REQUIRE(rest != NULL);

    frame_t f;
    TEST_REQUIRE(frame_decode_split(b->data, head, rest->data, rest->len, MAXF, &f) == 0);
    CU_ASSERT_EQUAL(f.frame_len, b->len);
    CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__SEND);
    CU_ASSERT_EQUAL(f.cmd->send->sequence_id, 42);
    CU_ASSERT_PTR_EQUAL(f.payload, rest->data); /* borrows the second piece */
    CU_ASSERT_EQUAL(f.payload_len, rest->len);
    CU_ASSERT_TRUE(f.has_checksum);
    CU_ASSERT_TRUE(f.checksum_ok);
    CU_ASSERT_PTR_NULL(f.payload_buf); /* the reader sets it */
    frame_free(&f);

    /* One byte short, one too many, a head that is not exactly the head. */
    CU_ASSERT_EQUAL(frame_decode_split(b->data, head, rest->data, rest->len - 1, MAXF, &f),
                    QE_CORRUPT);
    qbuf_t *longer = qbuf_new(rest->len + 1);
    TEST_REQUIRE(longer != NULL);
    memcpy(longer->data, rest->data, rest->len);
    longer->len = rest->len + 1;
    CU_ASSERT_EQUAL(frame_decode_split(b->data, head, longer->data, longer->len, MAXF, &f),
                    QE_CORRUPT);
    CU_ASSERT_EQUAL(frame_decode_split(b->data, head + 1, rest->data + 1, rest->len - 1, MAXF, &f),
                    QE_CORRUPT);
    CU_ASSERT_EQUAL(frame_decode_split(b->data, 4, rest->data, rest->len, MAXF, &f), QE_AGAIN);

    /* A corrupted payload byte: decoded, checksum reported bad. */
    rest->data[rest->len - 1] ^= 0xff;
    TEST_REQUIRE(frame_decode_split(b->data, head, rest->data, rest->len, MAXF, &f) == 0);
    CU_ASSERT_TRUE(f.has_checksum);
    CU_ASSERT_FALSE(f.checksum_ok);
    frame_free(&f);
    qbuf_unref(longer);
    qbuf_unref(rest);
    qbuf_unref(b);
}

static void test_send_without_checksum(void)
{
    qbuf_t *b = make_send(false);
    TEST_REQUIRE(b != NULL);
    frame_t f;
    size_t consumed = 0;
    TEST_REQUIRE(frame_decode(b->data, b->len, MAXF, &f, &consumed) == 0);
    uint32_t cmd_size = rd32(b->data + 4);
    CU_ASSERT_FALSE(f.has_checksum);
    CU_ASSERT_FALSE(f.checksum_ok);
    /* Without the block, the slice starts at metaSize. */
    CU_ASSERT_PTR_EQUAL(f.payload, b->data + 8 + cmd_size);
    CU_ASSERT_EQUAL(f.payload_len, b->len - 8 - cmd_size);
    CU_ASSERT_EQUAL(frame_verify_checksum(f.payload, f.payload_len), QE_NOT_FOUND);
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    TEST_REQUIRE(frame_parse_metadata(f.payload, f.payload_len, &md, &off) == 0);
    CU_ASSERT_EQUAL(off, 4 + rd32(f.payload));
    CU_ASSERT_EQUAL(memcmp(f.payload + off, test_payload, sizeof test_payload), 0);
    frame_metadata_free(md);
    frame_free(&f);
    qbuf_unref(b);
}

static void test_wrong_checksum_detected(void)
{
    qbuf_t *b = make_send(true);
    TEST_REQUIRE(b != NULL);
    size_t positions[] = {b->len - 1, b->len - sizeof test_payload, 8 + rd32(b->data + 4) + 3};
    for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++) {
        b->data[positions[i]] ^= 0x20; /* a payload byte, or the crc itself */
        frame_t f;
        size_t consumed = 0;
        TEST_REQUIRE(frame_decode(b->data, b->len, MAXF, &f, &consumed) == 0);
        CU_ASSERT_TRUE(f.has_checksum);
        CU_ASSERT_FALSE(f.checksum_ok);
        CU_ASSERT_EQUAL(frame_verify_checksum(f.payload, f.payload_len), 0);
        frame_free(&f);
        b->data[positions[i]] ^= 0x20;
    }
    qbuf_unref(b);
}

static void test_split_at_every_byte(void)
{
    qbuf_t *s = make_send(true);
    qbuf_t *p = NULL;
    TEST_REQUIRE(s != NULL);
    TEST_REQUIRE(cmd_encode_ping(&p) == 0);
    /* Two frames back to back, arriving one byte more at a time. */
    size_t total = s->len + p->len;
    uint8_t *stream = malloc(total);
    TEST_REQUIRE(stream != NULL);
    memcpy(stream, s->data, s->len);
    memcpy(stream + s->len, p->data, p->len);
    size_t start = 0;
    int frames = 0;
    for (size_t have = 0; have <= total; have++) {
        for (;;) {
            frame_t f;
            size_t consumed = 99;
            int rc = frame_decode(stream + start, have - start, MAXF, &f, &consumed);
            if (rc == QE_AGAIN) {
                CU_ASSERT_EQUAL(consumed, 0);
                break;
            }
            TEST_REQUIRE(rc == 0);
            /* A frame decodes only once all its bytes are in. */
            CU_ASSERT_EQUAL(have - start >= consumed, true);
            if (frames == 0) {
                CU_ASSERT_EQUAL(have, s->len);
                CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__SEND);
                CU_ASSERT_TRUE(f.checksum_ok);
            } else {
                CU_ASSERT_EQUAL(have, total);
                CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__PING);
            }
            frames++;
            start += consumed;
            frame_free(&f);
            if (start == have)
                break;
        }
    }
    CU_ASSERT_EQUAL(frames, 2);
    CU_ASSERT_EQUAL(start, total);
    free(stream);
    qbuf_unref(s);
    qbuf_unref(p);
}

static void test_truncated_needs_more(void)
{
    qbuf_t *b = make_send(true);
    TEST_REQUIRE(b != NULL);
    for (size_t n = 0; n < b->len; n++) {
        frame_t f;
        size_t consumed = 5;
        CU_ASSERT_EQUAL(frame_decode(b->data, n, MAXF, &f, &consumed), QE_AGAIN);
        CU_ASSERT_EQUAL(consumed, 0);
    }
    size_t need = 0;
    CU_ASSERT_EQUAL(frame_peek_size(b->data, 3, MAXF, &need), QE_AGAIN);
    CU_ASSERT_EQUAL(frame_peek_size(b->data, 4, MAXF, &need), 0);
    CU_ASSERT_EQUAL(need, b->len);
    qbuf_unref(b);
}

static int decode_bytes(const void *bytes, size_t n)
{
    frame_t f;
    size_t consumed = 0;
    int rc = frame_decode(bytes, n, MAXF, &f, &consumed);
    if (rc == 0)
        frame_free(&f);
    return rc;
}

static void test_rejects_bad_sizes_at_once(void)
{
    /* total < cmdSize + 4: rejected from the 8-byte prefix alone. */
    CU_ASSERT_EQUAL(decode_bytes("\x00\x00\x00\x10\x00\x00\x00\x20", 8), QE_CORRUPT);
    /* cmdSize 0. */
    CU_ASSERT_EQUAL(decode_bytes("\x00\x00\x00\x10\x00\x00\x00\x00", 8), QE_CORRUPT);
    /* total too small to hold cmdSize and one byte. */
    CU_ASSERT_EQUAL(decode_bytes("\x00\x00\x00\x04\x00\x00\x00\x00", 8), QE_CORRUPT);
    CU_ASSERT_EQUAL(decode_bytes("\x00\x00\x00\x00", 4), QE_CORRUPT);
    /* Above the maximum: known from 4 bytes, and from 1 when that suffices. */
    CU_ASSERT_EQUAL(decode_bytes("\x00\x60\x00\x00", 4), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(decode_bytes("\x7f", 1), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(decode_bytes("\x00", 1), QE_AGAIN);
    /* A smaller configured maximum is honoured exactly. */
    frame_t f;
    size_t c = 0;
    CU_ASSERT_EQUAL(frame_decode((const uint8_t *)"\x00\x00\x01\x01", 4, 256, &f, &c),
                    QE_TOO_LARGE);
    CU_ASSERT_EQUAL(frame_decode((const uint8_t *)"\x00\x00\x01\x00", 4, 256, &f, &c), QE_AGAIN);
}

static void test_rejects_tls_and_http(void)
{
    /* A TLS 1.2 ClientHello record header and an HTTP request line: each is
     * rejected from its first byte, before any allocation could happen (the
     * decoder has not even seen a whole length field). */
    static const uint8_t tls[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};
    const char *http = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    for (size_t n = 1; n <= sizeof tls; n++)
        CU_ASSERT_EQUAL(decode_bytes(tls, n), QE_TOO_LARGE);
    for (size_t n = 1; n <= strlen(http); n++)
        CU_ASSERT_EQUAL(decode_bytes(http, n), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(decode_bytes("POST /admin", 11), QE_TOO_LARGE);
}

/* Writes a frame around an arbitrary command body. */
static size_t wrap(uint8_t *out, const uint8_t *body, size_t n, size_t extra)
{
    uint32_t total = (uint32_t)(4 + n + extra), cs = (uint32_t)n;
    for (int i = 0; i < 4; i++) {
        out[i] = (uint8_t)(total >> (24 - 8 * i));
        out[4 + i] = (uint8_t)(cs >> (24 - 8 * i));
    }
    memcpy(out + 8, body, n);
    memset(out + 8 + n, 0, extra);
    return 8 + n + extra;
}

static void test_rejects_bad_commands(void)
{
    uint8_t buf[256], body[64];
    /* Garbage protobuf. */
    memset(body, 0xff, 16);
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 16, 0)), QE_CORRUPT);
    /* type = SUCCESS (13) without its field: 08 0d. */
    body[0] = 0x08;
    body[1] = 13;
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 2, 0)), QE_INVALID);
    /* Unknown type 99. */
    body[1] = 99;
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 2, 0)), QE_INVALID);
    /* PING with its empty field is fine; trailing bytes after it are not. */
    body[1] = 18;
    body[2] = 0x92; /* field 18, wire type 2: tag 146 = 0x92 0x01 */
    body[3] = 0x01;
    body[4] = 0x00;
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 5, 0)), 0);
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 5, 3)), QE_CORRUPT);
    /* PING without the field is tolerated. */
    CU_ASSERT_EQUAL(decode_bytes(buf, wrap(buf, body, 2, 0)), 0);
}

static void test_rejects_bad_payload_sizes(void)
{
    qbuf_t *b = make_send(true);
    TEST_REQUIRE(b != NULL);
    uint32_t cs = rd32(b->data + 4);
    uint8_t *meta = b->data + 8 + cs + 6;
    uint32_t good = rd32(meta);
    /* metaSize beyond the frame, and 0. */
    uint32_t bad[] = {0, (uint32_t)(b->len - (8 + cs + 6 + 4)) + 1, 0xffffffffu};
    for (size_t i = 0; i < 3; i++) {
        for (int k = 0; k < 4; k++)
            meta[k] = (uint8_t)(bad[i] >> (24 - 8 * k));
        CU_ASSERT_EQUAL(decode_bytes(b->data, b->len), QE_CORRUPT);
        Pulsar__Proto__MessageMetadata *md = NULL;
        size_t off;
        CU_ASSERT_EQUAL(frame_parse_metadata(b->data + 8 + cs, b->len - 8 - cs, &md, &off),
                        QE_CORRUPT);
    }
    for (int k = 0; k < 4; k++)
        meta[k] = (uint8_t)(good >> (24 - 8 * k));
    CU_ASSERT_EQUAL(decode_bytes(b->data, b->len), 0);
    qbuf_unref(b);

    /* A SEND with no payload part at all. */
    Pulsar__Proto__CommandSend send = PULSAR__PROTO__COMMAND_SEND__INIT;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND;
    cmd.send = &send;
    qbuf_t *s = NULL;
    TEST_REQUIRE(frame_encode_command(&cmd, &s) == 0);
    CU_ASSERT_EQUAL(decode_bytes(s->data, s->len), QE_CORRUPT);
    qbuf_unref(s);
}

/* An ACK of n ids, each as small as protobuf allows. */
static qbuf_t *make_ack(size_t n)
{
    Pulsar__Proto__MessageIdData *ids = calloc(n, sizeof *ids);
    Pulsar__Proto__MessageIdData **ptrs = calloc(n, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        pulsar__proto__message_id_data__init(&ids[i]);
        ptrs[i] = &ids[i];
    }
    Pulsar__Proto__CommandAck ack = PULSAR__PROTO__COMMAND_ACK__INIT;
    ack.consumer_id = 1;
    ack.n_message_id = n;
    ack.message_id = ptrs;
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ACK;
    cmd.ack = &ack;
    qbuf_t *b = NULL;
    int rc = frame_encode_command(&cmd, &b);
    CU_ASSERT_EQUAL(rc, 0);
    free(ids);
    free(ptrs);
    return b;
}

static void test_allocation_budget(void)
{
    /* 1000 ids (a client's ack group): decodes. */
    qbuf_t *b = make_ack(1000);
    TEST_REQUIRE(b != NULL);
    frame_t f;
    TEST_REQUIRE(codec_decode_whole(b, &f) == 0);
    CU_ASSERT_EQUAL(f.cmd->ack->n_message_id, 1000);
    frame_free(&f);
    qbuf_unref(b);
    /* 100,000 six-byte ids would unpack to ~17x their size: refused. */
    b = make_ack(100000);
    TEST_REQUIRE(b != NULL);
    CU_ASSERT_TRUE(b->len < MAXF);
    size_t consumed = 0;
    CU_ASSERT_EQUAL(frame_decode(b->data, b->len, MAXF, &f, &consumed), QE_TOO_LARGE);
    qbuf_unref(b);
}

static void test_random_buffers_never_crash(void)
{
    uint8_t buf[600];
    srand(12345);
    int deep = 0; /* buffers that got past the size checks */
    for (int iter = 0; iter < 5000; iter++) {
        size_t n = (size_t)(rand() % (int)sizeof buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rand();
        if (n >= 8 && (iter & 1)) {
            /* Plausible sizes, so the decoder gets past the prefix. */
            uint32_t total = (uint32_t)(n - 4), cs = (uint32_t)(1 + rand() % (int)(n - 8 + 1));
            for (int k = 0; k < 4; k++) {
                buf[k] = (uint8_t)(total >> (24 - 8 * k));
                buf[4 + k] = (uint8_t)(cs >> (24 - 8 * k));
            }
            if (iter % 4 == 1) {
                buf[8] = 0x08; /* type = SEND or PING */
                buf[9] = (iter % 8 == 1) ? 6 : 18;
            }
        }
        frame_t f;
        size_t consumed = 0;
        int rc = frame_decode(buf, n, MAXF, &f, &consumed);
        CU_ASSERT_TRUE(rc == 0 || rc == QE_AGAIN || rc == QE_CORRUPT || rc == QE_INVALID ||
                       rc == QE_TOO_LARGE);
        if (rc == 0 || rc == QE_CORRUPT || rc == QE_INVALID)
            deep++;
        if (rc == 0) {
            CU_ASSERT_TRUE(consumed <= n && consumed == f.frame_len);
            frame_free(&f);
        } else {
            CU_ASSERT_EQUAL(consumed, 0);
        }
        Pulsar__Proto__MessageMetadata *md = NULL;
        size_t off = 0;
        if (frame_parse_metadata(buf, n, &md, &off) == 0) {
            CU_ASSERT_TRUE(off <= n);
            frame_metadata_free(md);
        }
        frame_meta_scan_t sc;
        if (frame_scan_metadata(buf, n, &sc) == 0)
            CU_ASSERT_TRUE(sc.payload_offset <= n);
        (void)frame_verify_checksum(buf, n);
    }
    CU_ASSERT_TRUE(deep > 1000);
}

/* a[0..an) and b[0..bn) hold the same bytes (either may be NULL when empty). */
static bool same_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* frame_scan_metadata against protobuf-c's unpack (through
 * frame_parse_metadata) on the same slice: both fail, or both read the same
 * fields. Returns 1 if they agree. */
static int scan_agrees(const uint8_t *slice, size_t n)
{
    frame_meta_scan_t sc;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    int rs = frame_scan_metadata(slice, n, &sc), ru = frame_parse_metadata(slice, n, &md, &off);
    if (rs != 0 || ru != 0) {
        frame_metadata_free(md);
        return (rs != 0) == (ru != 0);
    }
    int32_t num = md->has_num_messages_in_batch && md->num_messages_in_batch > 0
                      ? md->num_messages_in_batch
                      : 1;
    bool ok = sc.num_messages == num && sc.payload_offset == off &&
              sc.publish_time == md->publish_time &&
              sc.has_num_messages_in_batch == (bool)md->has_num_messages_in_batch &&
              sc.has_deliver_at_time == (bool)md->has_deliver_at_time &&
              (!sc.has_deliver_at_time || sc.deliver_at_time == md->deliver_at_time) &&
              sc.partition_key_b64_encoded ==
                  (md->has_partition_key_b64_encoded && md->partition_key_b64_encoded) &&
              sc.has_partition_key == (md->partition_key != NULL) &&
              (!sc.has_partition_key ||
               same_bytes(sc.partition_key, sc.partition_key_len,
                          (const uint8_t *)md->partition_key, strlen(md->partition_key))) &&
              sc.has_ordering_key == (bool)md->has_ordering_key &&
              (!sc.has_ordering_key || same_bytes(sc.ordering_key, sc.ordering_key_len,
                                                  md->ordering_key.data, md->ordering_key.len));
    frame_metadata_free(md);
    return ok;
}

/* Random printable bytes (no NUL: protobuf-c hands strings back NUL-ended). */
static char *rand_text(size_t max)
{
    size_t n = (size_t)rand() % (max + 1);
    char *t = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        t[i] = (char)(' ' + rand() % 94);
    t[n] = 0;
    return t;
}

/* A random MessageMetadata, packed into buf: its length. */
static size_t rand_metadata(uint8_t *buf, size_t cap)
{
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    Pulsar__Proto__KeyValue kv[3], *kvs[3];
    char *texts[9] = {0};
    int nt = 0;
    md.producer_name = texts[nt++] = rand_text(20);
    md.sequence_id = (uint64_t)rand() * 977u;
    md.publish_time = (uint64_t)rand() * 1000003u;
    if (rand() % 2)
        md.partition_key = texts[nt++] = rand_text(40);
    if (rand() % 3 == 0) {
        md.has_partition_key_b64_encoded = true;
        md.partition_key_b64_encoded = rand() % 2;
    }
    if (rand() % 2) {
        md.has_ordering_key = true;
        md.ordering_key.data = (uint8_t *)(texts[nt++] = rand_text(30));
        md.ordering_key.len = strlen((char *)md.ordering_key.data);
    }
    if (rand() % 2) {
        md.has_num_messages_in_batch = true;
        md.num_messages_in_batch = rand() % 4 == 0 ? -(rand() % 5) : rand() % 2000;
    }
    if (rand() % 3 == 0) {
        md.has_deliver_at_time = true;
        md.deliver_at_time = rand() % 5 == 0 ? -(int64_t)rand() : (int64_t)rand() * 1000;
    }
    md.n_properties = (size_t)rand() % 4;
    for (size_t i = 0; i < md.n_properties; i++) {
        pulsar__proto__key_value__init(&kv[i]);
        kv[i].key = texts[nt++] = rand_text(10);
        kv[i].value = texts[nt++] = rand_text(10);
        kvs[i] = &kv[i];
    }
    md.properties = kvs;
    if (rand() % 2) {
        md.has_event_time = true;
        md.event_time = (uint64_t)rand();
    }
    if (rand() % 3 == 0) {
        md.has_compression = true;
        md.compression = PULSAR__PROTO__COMPRESSION_TYPE__ZSTD;
        md.has_uncompressed_size = true;
        md.uncompressed_size = (uint32_t)rand();
    }
    size_t n = pulsar__proto__message_metadata__get_packed_size(&md);
    TEST_REQUIRE(n <= cap);
    pulsar__proto__message_metadata__pack(&md, buf);
    for (int i = 0; i < nt; i++)
        free(texts[i]);
    return n;
}

/* A stored slice around metadata md[0..n): maybe a 0x0e02 block and a 0x0e01
 * block first, then metaSize, md, a payload. Its length. */
static size_t slice_around(uint8_t *out, const uint8_t *md, size_t n, int shape)
{
    size_t o = 0;
    if (shape & 1) { /* broker entry metadata, 3 bytes of it */
        const uint8_t bem[] = {0x0e, 0x02, 0, 0, 0, 3, 0x08, 0x07, 0x10};
        memcpy(out, bem, sizeof bem);
        o += sizeof bem;
    }
    if (shape & 2) { /* the checksum block (its value is not checked here) */
        const uint8_t crc[] = {0x0e, 0x01, 1, 2, 3, 4};
        memcpy(out + o, crc, sizeof crc);
        o += sizeof crc;
    }
    for (int k = 0; k < 4; k++)
        out[o + (size_t)k] = (uint8_t)(n >> (24 - 8 * k));
    o += 4;
    memcpy(out + o, md, n);
    o += n;
    memcpy(out + o, "payload", 7);
    return o + 7;
}

/* frame_scan_metadata reads what protobuf-c's unpack reads: 2,000 random
 * metadata, in every slice shape; two metadata one after the other (a field
 * given twice: the last counts); every cut of one (metaSize cut with it); a
 * field read with another wire type; a field numbered 0. */
static void test_scan_metadata_as_protobuf_c(void)
{
    uint8_t md[2048], two[4096], slice[4200];
    srand(4242);
    size_t disagree = 0, read = 0;
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = rand_metadata(md, sizeof md);
        size_t len = slice_around(slice, md, n, iter % 4);
        disagree += !scan_agrees(slice, len);
        frame_meta_scan_t sc;
        read += frame_scan_metadata(slice, len, &sc) == 0;
        size_t m = rand_metadata(two, sizeof two / 2);
        memcpy(two + m, md, n);
        len = slice_around(slice, two, m + n, iter % 4);
        disagree += !scan_agrees(slice, len);
        if (iter % 20 == 0)
            for (size_t cut = 0; cut < n; cut++) {
                len = slice_around(slice, md, cut, iter % 4);
                disagree += !scan_agrees(slice, len);
            }
    }
    CU_ASSERT_EQUAL(disagree, 0);
    CU_ASSERT_EQUAL(read, 2000);
    /* a field read here with another wire type: refused, as by protobuf-c */
    const uint8_t bad[] = {0x0a, 1, 'p', 0x10, 1, 0x18, 2, 0x58 | 2, 1, 0}; /* field 11 as bytes */
    size_t len = slice_around(slice, bad, sizeof bad, 0);
    frame_meta_scan_t sc;
    CU_ASSERT_EQUAL(frame_scan_metadata(slice, len, &sc), QE_CORRUPT);
    CU_ASSERT_TRUE(scan_agrees(slice, len));
    /* field number 0 (a fixed32 here, its key written in two bytes), which
     * protobuf forbids and protobuf-c's unpack skips as unknown (found by the
     * frame fuzzer): skipped too */
    const uint8_t zero[] = {0x0a, 1, 'p', 0x10, 1, 0x18, 2, 0x85, 0, 1, 2, 3, 4, 0x58, 3};
    len = slice_around(slice, zero, sizeof zero, 2);
    CU_ASSERT_EQUAL(frame_scan_metadata(slice, len, &sc), 0);
    CU_ASSERT_EQUAL(sc.num_messages, 3);
    CU_ASSERT_TRUE(scan_agrees(slice, len));
}

/* The stored slice of a SEND, as the broker keeps it. */
static qbuf_t *stored_of(bool with_checksum)
{
    qbuf_t *s = make_send(with_checksum);
    uint32_t cs = rd32(s->data + 4);
    qbuf_t *st = qbuf_copy(s->data + 8 + cs, s->len - 8 - cs);
    qbuf_unref(s);
    return st;
}

static void check_message_frame(const uint8_t *frame, size_t n, const qbuf_t *stored,
                                bool stored_has_crc, bool with_bem)
{
    frame_t f;
    size_t consumed = 0;
    TEST_REQUIRE(frame_decode(frame, n, MAXF, &f, &consumed) == 0);
    CU_ASSERT_EQUAL(consumed, n);
    CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE);
    CU_ASSERT_EQUAL(f.cmd->message->consumer_id, 11);
    CU_ASSERT_EQUAL((int64_t)f.cmd->message->message_id->ledgerid, 5);
    CU_ASSERT_EQUAL((int64_t)f.cmd->message->message_id->entryid, 9);
    CU_ASSERT_EQUAL(f.cmd->message->redelivery_count, 2);
    CU_ASSERT_TRUE(f.has_checksum);
    CU_ASSERT_TRUE(f.checksum_ok);
    if (stored_has_crc) {
        CU_ASSERT_EQUAL(f.payload_len, stored->len);
        CU_ASSERT_EQUAL(memcmp(f.payload, stored->data, stored->len), 0);
    } else {
        CU_ASSERT_EQUAL(f.payload_len, stored->len + 6);
        CU_ASSERT_EQUAL(memcmp(f.payload + 6, stored->data, stored->len), 0);
        CU_ASSERT_EQUAL(rd32(f.payload + 2), crc32c(0, stored->data, stored->len));
    }
    if (with_bem) {
        TEST_REQUIRE(f.broker_entry_metadata != NULL);
        Pulsar__Proto__BrokerEntryMetadata *bem = pulsar__proto__broker_entry_metadata__unpack(
            NULL, f.broker_entry_metadata_len, f.broker_entry_metadata);
        TEST_REQUIRE(bem != NULL);
        CU_ASSERT_EQUAL(bem->index, 77);
        pulsar__proto__broker_entry_metadata__free_unpacked(bem, NULL);
    } else {
        CU_ASSERT_PTR_NULL(f.broker_entry_metadata);
    }
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    TEST_REQUIRE(frame_parse_metadata(f.payload, f.payload_len, &md, &off) == 0);
    CU_ASSERT_STRING_EQUAL(md->producer_name, "prod-1");
    CU_ASSERT_EQUAL(memcmp(f.payload + off, test_payload, sizeof test_payload), 0);
    frame_metadata_free(md);
    frame_free(&f);
}

static void test_message_header_plus_stored(void)
{
    cmd_message_id_t id = {.ledger_id = 5, .entry_id = 9, .partition = -1, .batch_index = -1};
    uint8_t bem_bytes[32];
    Pulsar__Proto__BrokerEntryMetadata bem = PULSAR__PROTO__BROKER_ENTRY_METADATA__INIT;
    bem.has_index = 1;
    bem.index = 77;
    size_t bem_len = pulsar__proto__broker_entry_metadata__pack(&bem, bem_bytes);
    for (int with_crc = 0; with_crc <= 1; with_crc++) {
        for (int with_bem = 0; with_bem <= 1; with_bem++) {
            qbuf_t *st = stored_of(with_crc);
            TEST_REQUIRE(st != NULL);
            uint8_t hdr[256];
            size_t hdr_len = 0;
            TEST_REQUIRE(cmd_encode_message_header(11, &id, 2, NULL, 0, with_bem ? bem_bytes : NULL,
                                                   with_bem ? bem_len : 0, st->data, st->len, hdr,
                                                   sizeof hdr, &hdr_len) == 0);
            /* What writev would put on the wire. */
            uint8_t *wire = malloc(hdr_len + st->len);
            memcpy(wire, hdr, hdr_len);
            memcpy(wire + hdr_len, st->data, st->len);
            check_message_frame(wire, hdr_len + st->len, st, with_crc, with_bem);
            /* A header buffer too small is refused, not overrun. */
            CU_ASSERT_EQUAL(cmd_encode_message_header(11, &id, 2, NULL, 0, NULL, 0, st->data,
                                                      st->len, hdr, 10, &hdr_len),
                            QE_TOO_LARGE);
            free(wire);
            qbuf_unref(st);
        }
    }
    /* Stored bytes starting with 0x0e02 or too short are refused. */
    uint8_t hdr[128];
    size_t hl;
    CU_ASSERT_EQUAL(cmd_encode_message_header(11, &id, 0, NULL, 0, NULL, 0,
                                              (const uint8_t *)"\x0e\x02\0\0\0\0", 6, hdr,
                                              sizeof hdr, &hl),
                    QE_INVALID);
    CU_ASSERT_EQUAL(cmd_encode_message_header(11, &id, 0, NULL, 0, NULL, 0, (const uint8_t *)"\0\0",
                                              2, hdr, sizeof hdr, &hl),
                    QE_INVALID);
}

/* A message of descriptor d with every required field set (recursively) and,
 * at the top, every optional scalar and string too. Owned: strings and bytes
 * are malloc'd, so protobuf_c_message_free_unpacked(m, NULL) frees it. */
static ProtobufCMessage *filled(const ProtobufCMessageDescriptor *d, int depth)
{
    ProtobufCMessage *m = calloc(1, d->sizeof_message);
    d->message_init(m);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        bool required = f->label == PROTOBUF_C_LABEL_REQUIRED;
        bool optional = f->label == PROTOBUF_C_LABEL_OPTIONAL && depth == 0 &&
                        f->type != PROTOBUF_C_TYPE_MESSAGE;
        if (!required && !optional)
            continue;
        void *v = (char *)m + f->offset;
        switch (f->type) {
        case PROTOBUF_C_TYPE_ENUM:
            *(int *)v = ((const ProtobufCEnumDescriptor *)f->descriptor)->values[0].value;
            break;
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
            *(uint32_t *)v = 300 + i;
            break;
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
            *(uint64_t *)v = 1234567890123ull + i;
            break;
        case PROTOBUF_C_TYPE_BOOL:
            *(protobuf_c_boolean *)v = 1;
            break;
        case PROTOBUF_C_TYPE_FLOAT:
            *(float *)v = 1.5f;
            break;
        case PROTOBUF_C_TYPE_DOUBLE:
            *(double *)v = 2.5;
            break;
        case PROTOBUF_C_TYPE_STRING:
            *(char **)v = strdup("persistent://t/n/x");
            break;
        case PROTOBUF_C_TYPE_BYTES:
            ((ProtobufCBinaryData *)v)->data = (uint8_t *)strdup("bytes");
            ((ProtobufCBinaryData *)v)->len = 5;
            break;
        case PROTOBUF_C_TYPE_MESSAGE:
            *(ProtobufCMessage **)v = filled(f->descriptor, depth + 1);
            break;
        }
        if (f->quantifier_offset && f->label == PROTOBUF_C_LABEL_OPTIONAL &&
            f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
            *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
    }
    return m;
}

/* Every command type, in the plain shape (its type and its own message): the
 * wrapper writes what protobuf-c writes, and reads it back as protobuf-c does. */
static void test_plain_commands_as_protobuf_c(void)
{
    const ProtobufCMessageDescriptor *d = &pulsar__proto__base_command__descriptor;
    unsigned types = 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
        cmd.type = (Pulsar__Proto__BaseCommand__Type)fd->id;
        ProtobufCMessage *sub = filled(fd->descriptor, 0);
        *(ProtobufCMessage **)((char *)&cmd + fd->offset) = sub;
        CU_ASSERT_TRUE(frame_command_plain(&cmd));
        size_t n = pulsar__proto__base_command__get_packed_size(&cmd);
        uint8_t *want = malloc(n);
        TEST_REQUIRE(pulsar__proto__base_command__pack(&cmd, want) == n);
        qbuf_t *b = NULL;
        TEST_REQUIRE(frame_encode_command(&cmd, &b) == 0);
        CU_ASSERT_EQUAL(b->len, 8 + n);
        CU_ASSERT_EQUAL(memcmp(b->data + 8, want, n), 0);
        if (cmd.type != PULSAR__PROTO__BASE_COMMAND__TYPE__SEND &&
            cmd.type != PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE) { /* no payload here */
            frame_t f;
            size_t used = 0;
            TEST_REQUIRE(frame_decode(b->data, b->len, MAXF, &f, &used) == 0);
            CU_ASSERT_TRUE(f.cmd_plain);
            CU_ASSERT_EQUAL(f.cmd->type, cmd.type);
            uint8_t *again = malloc(n);
            CU_ASSERT_EQUAL(pulsar__proto__base_command__get_packed_size(f.cmd), n);
            TEST_REQUIRE(pulsar__proto__base_command__pack(f.cmd, again) == n);
            CU_ASSERT_EQUAL(memcmp(again, want, n), 0);
            free(again);
            frame_free(&f);
        }
        qbuf_unref(b);
        free(want);
        protobuf_c_message_free_unpacked(sub, NULL);
        types++;
    }
    CU_ASSERT_TRUE(types >= 40);
}

/* Commands of any other shape take protobuf-c's generic path both ways. */
static void test_other_shapes_generic(void)
{
    /* Two messages set: both are written and read back. */
    Pulsar__Proto__CommandSuccess ok = PULSAR__PROTO__COMMAND_SUCCESS__INIT;
    Pulsar__Proto__CommandError err = PULSAR__PROTO__COMMAND_ERROR__INIT;
    err.message = "m";
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS;
    cmd.success = &ok;
    cmd.error = &err;
    CU_ASSERT_FALSE(frame_command_plain(&cmd));
    qbuf_t *b = NULL;
    TEST_REQUIRE(frame_encode_command(&cmd, &b) == 0);
    frame_t f;
    size_t used = 0;
    TEST_REQUIRE(frame_decode(b->data, b->len, MAXF, &f, &used) == 0);
    CU_ASSERT_FALSE(f.cmd_plain);
    CU_ASSERT_PTR_NOT_NULL(f.cmd->success);
    TEST_REQUIRE(f.cmd->error != NULL);
    CU_ASSERT_STRING_EQUAL(f.cmd->error->message, "m");
    frame_free(&f);
    qbuf_unref(b);

    /* A plain command followed by a field unknown to this schema (field 4000,
     * varint 1) or by a second type: read generically, unknown field kept. */
    cmd.error = NULL;
    TEST_REQUIRE(frame_encode_command(&cmd, &b) == 0);
    const uint8_t tails[][4] = {{0x80, 0xfa, 0x01, 0x01}, {0x08, 0x0d}};
    const size_t tail_len[] = {4, 2};
    for (int t = 0; t < 2; t++) {
        uint8_t wire[64];
        size_t n = b->len + tail_len[t];
        TEST_REQUIRE(n <= sizeof wire);
        memcpy(wire, b->data, b->len);
        memcpy(wire + b->len, tails[t], tail_len[t]);
        uint32_t total = (uint32_t)n - 4, cmd_size = (uint32_t)n - 8;
        for (int k = 0; k < 4; k++) {
            wire[k] = (uint8_t)(total >> (24 - 8 * k));
            wire[4 + k] = (uint8_t)(cmd_size >> (24 - 8 * k));
        }
        TEST_REQUIRE(frame_decode(wire, n, MAXF, &f, &used) == 0);
        CU_ASSERT_FALSE(f.cmd_plain);
        CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(f.cmd->success);
        CU_ASSERT_EQUAL(f.cmd->base.n_unknown_fields, t == 0 ? 1u : 0u);
        CU_ASSERT_EQUAL(frame_command_plain(f.cmd), t == 1);
        frame_free(&f);
    }
    qbuf_unref(b);

    /* A message field that is not the type's: refused as before. */
    cmd.success = NULL;
    cmd.error = &err;
    CU_ASSERT_FALSE(frame_command_plain(&cmd));
    CU_ASSERT_EQUAL(frame_encode_command(&cmd, &b), QE_INVALID);
}

static void test_encode_checks_required(void)
{
    Pulsar__Proto__CommandError e = PULSAR__PROTO__COMMAND_ERROR__INIT; /* message NULL */
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR;
    cmd.error = &e;
    qbuf_t *b = NULL;
    CU_ASSERT_EQUAL(frame_encode_command(&cmd, &b), QE_INVALID);
    CU_ASSERT_PTR_NULL(b);
    cmd.error = NULL; /* type without its field */
    CU_ASSERT_EQUAL(frame_encode_command(&cmd, &b), QE_INVALID);
    e.message = "m";
    cmd.error = &e;
    CU_ASSERT_EQUAL(frame_encode_command(&cmd, &b), 0);
    qbuf_unref(b);
}

void codec_register_frame(void)
{
    CU_pSuite s = CU_add_suite("frame", NULL, NULL);
    CU_add_test(s, "plain commands as protobuf-c writes them", test_plain_commands_as_protobuf_c);
    CU_add_test(s, "other command shapes: generic path", test_other_shapes_generic);
    CU_add_test(s, "send with checksum: exact slice", test_send_with_checksum_exact_slice);
    CU_add_test(s, "send without checksum", test_send_without_checksum);
    CU_add_test(s, "wrong checksum detected", test_wrong_checksum_detected);
    CU_add_test(s, "split at every byte boundary", test_split_at_every_byte);
    CU_add_test(s, "truncated frames need more", test_truncated_needs_more);
    CU_add_test(s, "bad sizes rejected at once", test_rejects_bad_sizes_at_once);
    CU_add_test(s, "TLS and HTTP rejected", test_rejects_tls_and_http);
    CU_add_test(s, "bad commands rejected", test_rejects_bad_commands);
    CU_add_test(s, "bad payload sizes rejected", test_rejects_bad_payload_sizes);
    CU_add_test(s, "protobuf allocation budget", test_allocation_budget);
    CU_add_test(s, "random buffers never crash", test_random_buffers_never_crash);
    CU_add_test(s, "metadata scan reads what protobuf-c unpacks", test_scan_metadata_as_protobuf_c);
    CU_add_test(s, "message header + stored bytes", test_message_header_plus_stored);
    CU_add_test(s, "split decode (head, then payload apart)", test_split_decode);
    CU_add_test(s, "encode checks required fields", test_encode_checks_required);
}
