/* Unit tests of quire-perf's wire pieces: the client commands decode as the
 * broker will see them; batches built, compressed with every codec, framed
 * with a CRC32C and parsed back count every message and its timestamp. */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "server/codec/commands.h"
#include "tests/unit/perf/perf_tests.h"
#include "tests/unit/support/test_support.h"
#include "tools/quire_perf.h"

static frame_t decode(qbuf_t *b, int rc, Pulsar__Proto__BaseCommand__Type type)
{
    frame_t f = {0};
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0 || !b)
        return f;
    int drc = perf_test_decode(b, &f);
    CU_ASSERT_EQUAL(drc, 0);
    if (drc == 0)
        CU_ASSERT_EQUAL(f.cmd->type, type);
    qbuf_unref(b);
    return f;
}

static void test_connect(void)
{
    qbuf_t *b = NULL;
    int rc = perf_cmd_connect(&b);
    frame_t f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT);
    TEST_REQUIRE(f.cmd != NULL && f.cmd->connect != NULL);
    CU_ASSERT_STRING_EQUAL(f.cmd->connect->client_version, "quire-perf 0.1");
    CU_ASSERT_EQUAL(f.cmd->connect->protocol_version, 21);
    TEST_REQUIRE(f.cmd->connect->feature_flags != NULL);
    CU_ASSERT_TRUE(f.cmd->connect->feature_flags->supports_auth_refresh);
    CU_ASSERT_TRUE(f.cmd->connect->feature_flags->supports_broker_entry_metadata);
    CU_ASSERT_FALSE(f.cmd->connect->feature_flags->supports_topic_watchers);
    frame_free(&f);
}

static void test_requests(void)
{
    qbuf_t *b = NULL;
    int rc = perf_cmd_partitioned_metadata("persistent://p/d/t", 7, &b);
    frame_t f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_STRING_EQUAL(f.cmd->partitionmetadata->topic, "persistent://p/d/t");
    CU_ASSERT_EQUAL(f.cmd->partitionmetadata->request_id, 7);
    frame_free(&f);

    rc = perf_cmd_lookup("persistent://p/d/t", 8, true, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_TRUE(f.cmd->lookuptopic->authoritative);
    CU_ASSERT_EQUAL(f.cmd->lookuptopic->request_id, 8);
    frame_free(&f);

    rc = perf_cmd_producer("persistent://p/d/t", 3, 9, NULL, 0, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->producer->producer_id, 3);
    CU_ASSERT_PTR_NULL(f.cmd->producer->producer_name);
    frame_free(&f);
    rc = perf_cmd_producer("persistent://p/d/t", 3, 10, "standalone-0-3", 2, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_STRING_EQUAL(f.cmd->producer->producer_name, "standalone-0-3");
    CU_ASSERT_EQUAL(f.cmd->producer->epoch, 2);
    frame_free(&f);

    rc = perf_cmd_subscribe("persistent://p/d/t", "sub",
                            PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared, 4, 11, "c0",
                            true, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_STRING_EQUAL(f.cmd->subscribe->subscription, "sub");
    CU_ASSERT_EQUAL(f.cmd->subscribe->subtype,
                    PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared);
    CU_ASSERT_EQUAL(f.cmd->subscribe->initialposition,
                    PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Earliest);
    CU_ASSERT_PTR_NOT_NULL(f.cmd->subscribe->keysharedmeta);
    CU_ASSERT_TRUE(f.cmd->subscribe->durable);
    frame_free(&f);

    rc = perf_cmd_flow(4, 1000, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__FLOW);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->flow->messagepermits, 1000);
    frame_free(&f);

    int64_t ids[] = {5, 0, 5, 1, -1, 7};
    rc = perf_cmd_ack(4, PERF_ACK_INDIVIDUAL, ids, 3, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__ACK);
    TEST_REQUIRE(f.cmd != NULL);
    TEST_REQUIRE(f.cmd->ack->n_message_id == 3);
    CU_ASSERT_EQUAL(f.cmd->ack->message_id[1]->entryid, 1);
    CU_ASSERT_EQUAL((int64_t)f.cmd->ack->message_id[2]->ledgerid, -1);
    CU_ASSERT_EQUAL(f.cmd->ack->ack_type, PULSAR__PROTO__COMMAND_ACK__ACK_TYPE__Individual);
    frame_free(&f);
    CU_ASSERT_EQUAL(perf_cmd_ack(4, PERF_ACK_CUMULATIVE, ids, 2, &b), QE_INVALID);
    CU_ASSERT_EQUAL(perf_cmd_ack(4, PERF_ACK_INDIVIDUAL, ids, 0, &b), QE_INVALID);

    rc = perf_cmd_close_producer(3, 12, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->close_producer->request_id, 12);
    frame_free(&f);
    rc = perf_cmd_close_consumer(4, 13, &b);
    f = decode(b, rc, PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->close_consumer->consumer_id, 4);
    frame_free(&f);
    CU_ASSERT_EQUAL(perf_cmd_lookup(NULL, 1, false, &b), QE_INVALID);
}

static void test_payload_stamp(void)
{
    uint8_t p[64];
    perf_payload_fill(p, sizeof p, 3);
    for (size_t i = 0; i < sizeof p; i++)
        CU_ASSERT_TRUE(p[i] >= 'A' && p[i] <= 'Z');
    CU_ASSERT_EQUAL(perf_payload_ts(p, sizeof p), 0);
    perf_payload_stamp(p, sizeof p, 0x0102030405060708ull);
    CU_ASSERT_EQUAL(memcmp(p, "QPRF", 4), 0);
    CU_ASSERT_EQUAL(perf_payload_ts(p, sizeof p), 0x0102030405060708ull);
    CU_ASSERT_EQUAL(perf_payload_ts(p, 11), 0);
    uint8_t small[8] = {0};
    perf_payload_stamp(small, sizeof small, 5); /* too small: untouched */
    CU_ASSERT_EQUAL(small[0], 0);
}

static void test_codecs(void)
{
    size_t n = 100000;
    uint8_t *raw = malloc(n);
    TEST_REQUIRE(raw != NULL);
    perf_payload_fill(raw, n, 1);
    perf_scratch_t z = {0}, d = {0};
    for (int c = 0; c <= 4; c++) {
        size_t zn = 0;
        CU_ASSERT_EQUAL(perf_compress((Pulsar__Proto__CompressionType)c, raw, n, &z, &zn), 0);
        if (c == PULSAR__PROTO__COMPRESSION_TYPE__ZLIB ||
            c == PULSAR__PROTO__COMPRESSION_TYPE__ZSTD)
            CU_ASSERT_TRUE(zn < n); /* entropy coders compress random letters */
        CU_ASSERT_EQUAL(perf_decompress((Pulsar__Proto__CompressionType)c, z.p, zn, n, &d), 0);
        CU_ASSERT_EQUAL(memcmp(d.p, raw, n), 0);
        /* A wrong uncompressed size or a damaged stream is refused. */
        CU_ASSERT_EQUAL(perf_decompress((Pulsar__Proto__CompressionType)c, z.p, zn, n + 1, &d),
                        QE_CORRUPT);
        if (c != 0) {
            CU_ASSERT_EQUAL(perf_decompress((Pulsar__Proto__CompressionType)c, z.p, zn / 2, n, &d),
                            QE_CORRUPT);
        }
    }
    CU_ASSERT_EQUAL(perf_decompress(PULSAR__PROTO__COMPRESSION_TYPE__LZ4, raw, 10, 1u << 30, &d),
                    QE_TOO_LARGE);
    perf_scratch_free(&z);
    perf_scratch_free(&d);
    free(raw);
}

typedef struct seen {
    uint64_t ts[64];
    int n;
} seen_t;

static void on_msg(void *ctx, uint64_t ts)
{
    seen_t *s = ctx;
    if (s->n < 64)
        s->ts[s->n] = ts;
    s->n++;
}

/* Builds a batch of n messages of size bytes, frames it, decodes the frame
 * and parses the entry back. */
static void roundtrip(Pulsar__Proto__CompressionType c, bool batching, uint32_t n, size_t size)
{
    perf_batch_t b = {0};
    b.batching = batching;
    uint8_t *payload = malloc(size);
    TEST_REQUIRE(payload != NULL);
    perf_payload_fill(payload, size, 9);
    for (uint32_t i = 0; i < n; i++) {
        perf_payload_stamp(payload, size, 1000000 + i);
        CU_ASSERT_EQUAL(perf_batch_add(&b, payload, size, i % 2 ? "k1" : "k0", 40 + i, 77), 0);
    }
    if (!batching)
        CU_ASSERT_EQUAL(perf_batch_add(&b, payload, size, NULL, 99, 77), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(b.n, n);
    CU_ASSERT_EQUAL(b.first_seq, 40);
    CU_ASSERT_EQUAL(b.first_add_ns, 77);
    perf_scratch_t z = {0}, d = {0};
    qbuf_t *q = NULL;
    TEST_REQUIRE(perf_encode_send(&b, 6, "prod-1", 1700000000123, c, &z, &q) == 0);
    frame_t f = {0};
    TEST_REQUIRE(perf_test_decode(q, &f) == 0);
    CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__SEND);
    CU_ASSERT_EQUAL(f.cmd->send->producer_id, 6);
    CU_ASSERT_EQUAL(f.cmd->send->sequence_id, 40);
    CU_ASSERT_EQUAL(f.cmd->send->num_messages, (int32_t)n);
    if (batching)
        CU_ASSERT_EQUAL(f.cmd->send->highest_sequence_id, 40 + n - 1);
    CU_ASSERT_TRUE(f.has_checksum);
    CU_ASSERT_TRUE(f.checksum_ok);
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    TEST_REQUIRE(frame_parse_metadata(f.payload, f.payload_len, &md, &off) == 0);
    CU_ASSERT_STRING_EQUAL(md->producer_name, "prod-1");
    CU_ASSERT_EQUAL(md->publish_time, 1700000000123ull);
    CU_ASSERT_EQUAL(md->has_num_messages_in_batch, batching);
    CU_ASSERT_EQUAL(md->compression, c);
    if (!batching)
        CU_ASSERT_STRING_EQUAL(md->partition_key, "k0");
    frame_metadata_free(md);

    seen_t s = {0};
    perf_entry_t e;
    CU_ASSERT_EQUAL(perf_parse_entry(f.payload, f.payload_len, &d, on_msg, &s, &e), 0);
    CU_ASSERT_EQUAL(e.n_msgs, n);
    CU_ASSERT_EQUAL(s.n, (int)n);
    CU_ASSERT_EQUAL(e.payload_bytes, (uint64_t)n * size);
    CU_ASSERT_EQUAL(e.publish_time_ms, 1700000000123);
    for (int i = 0; i < s.n && i < 64; i++)
        CU_ASSERT_EQUAL(s.ts[i], size >= 12 ? 1000000u + (unsigned)i : 0u);
    /* As a broker dispatches it: the stored slice behind a MESSAGE command. */
    cmd_message_id_t mid = {3, 4, -1, -1};
    qbuf_t *mq = NULL;
    TEST_REQUIRE(cmd_encode_message(1, &mid, 0, NULL, 0, f.payload, f.payload_len, &mq) == 0);
    frame_t mf = {0};
    CU_ASSERT_EQUAL(perf_test_decode(mq, &mf), 0);
    if (mf.cmd) {
        CU_ASSERT_TRUE(mf.checksum_ok);
        CU_ASSERT_EQUAL(perf_parse_entry(mf.payload, mf.payload_len, &d, NULL, NULL, &e), 0);
        CU_ASSERT_EQUAL(e.n_msgs, n);
    }
    frame_free(&mf);
    qbuf_unref(mq);
    /* A damaged entry is refused, not over-read. */
    if (batching && c == PULSAR__PROTO__COMPRESSION_TYPE__NONE) {
        CU_ASSERT_EQUAL(perf_parse_entry(f.payload, f.payload_len - 1, &d, on_msg, &s, &e),
                        QE_CORRUPT);
    }
    frame_free(&f);
    qbuf_unref(q);
    perf_batch_free(&b);
    perf_scratch_free(&z);
    perf_scratch_free(&d);
    free(payload);
}

static void test_batches(void)
{
    for (int c = 0; c <= 4; c++) {
        roundtrip((Pulsar__Proto__CompressionType)c, true, 10, 100);
        roundtrip((Pulsar__Proto__CompressionType)c, false, 1, 1000);
    }
    roundtrip(PULSAR__PROTO__COMPRESSION_TYPE__NONE, true, 3, 5); /* no room for a stamp */
    roundtrip(PULSAR__PROTO__COMPRESSION_TYPE__ZSTD, true, 1000, 64);
    perf_batch_t empty = {0};
    perf_scratch_t z = {0};
    qbuf_t *q = NULL;
    CU_ASSERT_EQUAL(perf_encode_send(&empty, 1, "p", 0, 0, &z, &q), QE_INVALID);
}

/* The hand-written SingleMessageMetadata agrees with protobuf-c both ways. */
static void test_smm_by_hand(void)
{
    const char *keys[] = {NULL, "", "key-17", "a-key-of-thirty-one-characters!"};
    const size_t sizes[] = {0, 1, 127, 128, 100000, 5u << 20};
    const uint64_t seqs[] = {0, 1, 300, UINT64_MAX};
    for (size_t k = 0; k < 4; k++)
        for (size_t z = 0; z < 6; z++)
            for (size_t q = 0; q < 4; q++) {
                uint8_t mine[64], theirs[64];
                size_t n = perf_smm_encode(mine, keys[k], sizes[z], seqs[q]);
                Pulsar__Proto__SingleMessageMetadata smm =
                    PULSAR__PROTO__SINGLE_MESSAGE_METADATA__INIT;
                smm.partition_key = (char *)keys[k];
                smm.payload_size = (int32_t)sizes[z];
                smm.has_sequence_id = 1;
                smm.sequence_id = seqs[q];
                CU_ASSERT_FATAL(pulsar__proto__single_message_metadata__get_packed_size(&smm) == n);
                pulsar__proto__single_message_metadata__pack(&smm, theirs);
                CU_ASSERT(memcmp(mine, theirs, n) == 0);
                int32_t got = -1;
                CU_ASSERT(perf_smm_payload_size(mine, n, &got) == 0);
                CU_ASSERT(got == (int32_t)sizes[z]);
            }
    /* other fields are skipped: properties, ordering key, event time, flags */
    Pulsar__Proto__KeyValue kv = PULSAR__PROTO__KEY_VALUE__INIT, *kvs[] = {&kv};
    kv.key = "k";
    kv.value = "v";
    Pulsar__Proto__SingleMessageMetadata smm = PULSAR__PROTO__SINGLE_MESSAGE_METADATA__INIT;
    smm.n_properties = 1;
    smm.properties = kvs;
    smm.payload_size = 42;
    smm.has_event_time = 1;
    smm.event_time = 1234567;
    smm.has_ordering_key = 1;
    smm.ordering_key = (ProtobufCBinaryData){3, (uint8_t *)"abc"};
    smm.has_null_value = 1;
    smm.null_value = 1;
    uint8_t buf[128];
    size_t n = pulsar__proto__single_message_metadata__pack(&smm, buf);
    int32_t got = -1;
    CU_ASSERT(perf_smm_payload_size(buf, n, &got) == 0 && got == 42);
    /* every truncation of it is refused, never read past */
    for (size_t cut = 0; cut < n; cut++) {
        int rc = perf_smm_payload_size(buf, cut, &got);
        if (rc == 0) /* a cut between fields after payload_size still parses */
            CU_ASSERT(got == 42);
    }
    /* no payload_size, bad wire types: refused */
    uint8_t none[] = {0x40, 0x01};
    CU_ASSERT(perf_smm_payload_size(none, sizeof none, &got) == QE_CORRUPT);
    uint8_t badwt[] = {0x1b, 0x01};
    CU_ASSERT(perf_smm_payload_size(badwt, sizeof badwt, &got) == QE_CORRUPT);
    uint8_t longvar[12];
    memset(longvar, 0xff, sizeof longvar);
    longvar[0] = 0x18;
    CU_ASSERT(perf_smm_payload_size(longvar, sizeof longvar, &got) == QE_CORRUPT);
}

void perf_register_wire(void)
{
    CU_pSuite s = CU_add_suite("perf_wire", NULL, NULL);
    CU_add_test(s, "CONNECT", test_connect);
    CU_add_test(s, "requests", test_requests);
    CU_add_test(s, "payload stamp", test_payload_stamp);
    CU_add_test(s, "compression codecs", test_codecs);
    CU_add_test(s, "batches round trip", test_batches);
    CU_add_test(s, "SingleMessageMetadata by hand", test_smm_by_hand);
}
