/*
 * test_batch_codec.c — reading inside stored entries for topic compaction
 * (server/batch_codec.c): batches built here as Pulsar clients build them,
 * compressed with each of the four codecs by the libraries themselves, then
 * parsed, re-encoded with messages compacted out, and parsed again.
 */
#include <lz4.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "server/batch_codec.h"
#include "server/codec/frame.h"
#include "tests/unit/support/test_support.h"

/* ------------------------------------------------------------- builders -- */

typedef struct tmsg {
    const char *key; /* NULL: no partition key */
    const char *value;
    bool null_value;
} tmsg_t;

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The uncompressed payload of a batch: [smSize][SingleMessageMetadata][payload]... */
static uint8_t *batch_payload(const tmsg_t *m, size_t n, size_t *len)
{
    size_t cap = 64;
    for (size_t i = 0; i < n; i++)
        cap += 64 + (m[i].key ? strlen(m[i].key) : 0) + strlen(m[i].value);
    uint8_t *p = malloc(cap);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        Pulsar__Proto__SingleMessageMetadata smd = PULSAR__PROTO__SINGLE_MESSAGE_METADATA__INIT;
        smd.partition_key = (char *)m[i].key;
        smd.payload_size = (int32_t)strlen(m[i].value);
        smd.has_null_value = m[i].null_value;
        smd.null_value = m[i].null_value;
        smd.has_sequence_id = 1;
        smd.sequence_id = i;
        size_t sm = pulsar__proto__single_message_metadata__get_packed_size(&smd);
        put32(p + off, (uint32_t)sm);
        pulsar__proto__single_message_metadata__pack(&smd, p + off + 4);
        off += 4 + sm;
        memcpy(p + off, m[i].value, strlen(m[i].value));
        off += strlen(m[i].value);
    }
    *len = off;
    return p;
}

static uint8_t *compress_with(int codec, const uint8_t *in, size_t n, size_t *out_len)
{
    size_t bound = n + 1024 + n / 2;
    uint8_t *out = malloc(bound);
    switch (codec) {
    case PULSAR__PROTO__COMPRESSION_TYPE__NONE:
        memcpy(out, in, n);
        *out_len = n;
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__LZ4:
        *out_len = (size_t)LZ4_compress_default((const char *)in, (char *)out, (int)n, (int)bound);
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__ZLIB: {
        uLongf k = (uLongf)bound;
        CU_ASSERT_EQUAL(compress2(out, &k, in, (uLong)n, Z_DEFAULT_COMPRESSION), Z_OK);
        *out_len = k;
        break;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__ZSTD:
        *out_len = ZSTD_compress(out, bound, in, n, 3);
        CU_ASSERT(!ZSTD_isError(*out_len));
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY: {
        size_t k = bound;
        CU_ASSERT_EQUAL(snappy_compress((const char *)in, n, (char *)out, &k), SNAPPY_OK);
        *out_len = k;
        break;
    }
    }
    return out;
}

/* A stored slice: [0x0e01][crc32c][metaSize][md][payload]. */
static qbuf_t *stored_slice(Pulsar__Proto__MessageMetadata *md, const uint8_t *payload, size_t len)
{
    size_t ml = pulsar__proto__message_metadata__get_packed_size(md);
    qbuf_t *q = qbuf_new(10 + ml + len);
    q->data[0] = 0x0e;
    q->data[1] = 0x01;
    put32(q->data + 6, (uint32_t)ml);
    pulsar__proto__message_metadata__pack(md, q->data + 10);
    memcpy(q->data + 10 + ml, payload, len);
    q->len = (uint32_t)(10 + ml + len);
    put32(q->data + 2, crc32c(0, q->data + 6, q->len - 6));
    return q;
}

static qbuf_t *make_batch(const tmsg_t *m, size_t n, int codec)
{
    size_t raw_len, z_len;
    uint8_t *raw = batch_payload(m, n, &raw_len);
    uint8_t *z = compress_with(codec, raw, raw_len, &z_len);
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "p";
    md.sequence_id = 7;
    md.publish_time = 1700000000000ull;
    md.has_num_messages_in_batch = 1;
    md.num_messages_in_batch = (int32_t)n;
    if (codec != PULSAR__PROTO__COMPRESSION_TYPE__NONE) {
        md.has_compression = 1;
        md.compression = codec;
    }
    md.has_uncompressed_size = 1;
    md.uncompressed_size = (uint32_t)raw_len;
    qbuf_t *q = stored_slice(&md, z, z_len);
    free(raw);
    free(z);
    return q;
}

static const tmsg_t MSGS[] = {
    {"a", "a-1", false}, {"b", "b-1", false}, {NULL, "no-key", false}, {"a", "a-2", false},
    {"b", "", false},    {"c", "c-1", true},  {"d", "d-1", false},
};
#define NMSGS (sizeof MSGS / sizeof MSGS[0])

static const int CODECS[] = {
    PULSAR__PROTO__COMPRESSION_TYPE__NONE,   PULSAR__PROTO__COMPRESSION_TYPE__LZ4,
    PULSAR__PROTO__COMPRESSION_TYPE__ZLIB,   PULSAR__PROTO__COMPRESSION_TYPE__ZSTD,
    PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY,
};

/* ---------------------------------------------------------------- tests -- */

static void test_decompress_each_codec(void)
{
    uint8_t raw[4000];
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (uint8_t)("compaction "[i % 11] + (i / 500));
    for (size_t c = 0; c < sizeof CODECS / sizeof CODECS[0]; c++) {
        size_t zl;
        uint8_t *z = compress_with(CODECS[c], raw, sizeof raw, &zl);
        uint8_t *out = NULL;
        CU_ASSERT_EQUAL(batch_decompress(CODECS[c], z, zl, sizeof raw, &out), 0);
        TEST_REQUIRE(out != NULL);
        CU_ASSERT_EQUAL(memcmp(out, raw, sizeof raw), 0);
        free(out);
        /* a wrong uncompressed size is corruption, never an overflow */
        CU_ASSERT_EQUAL(batch_decompress(CODECS[c], z, zl, sizeof raw - 1, &out), QE_CORRUPT);
        CU_ASSERT_PTR_NULL(out);
        if (CODECS[c] != PULSAR__PROTO__COMPRESSION_TYPE__NONE)
            CU_ASSERT(batch_decompress(CODECS[c], z, zl / 2, sizeof raw, &out) < 0);
        free(z);
    }
    uint8_t *out = NULL;
    CU_ASSERT_EQUAL(batch_decompress(9, raw, 10, 10, &out), QE_INVALID);
    CU_ASSERT_EQUAL(batch_decompress(1, raw, 10, BATCH_RAW_MAX + 1u, &out), QE_TOO_LARGE);
}

static void test_parse_each_codec(void)
{
    for (size_t c = 0; c < sizeof CODECS / sizeof CODECS[0]; c++) {
        qbuf_t *q = make_batch(MSGS, NMSGS, CODECS[c]);
        batch_t b;
        TEST_REQUIRE(batch_parse(q->data, q->len, &b) == 0);
        CU_ASSERT(b.batched);
        CU_ASSERT_EQUAL(b.n, NMSGS);
        for (size_t i = 0; i < NMSGS; i++) {
            const char *k = batch_msg_key(&b, i);
            if (MSGS[i].key) {
                CU_ASSERT(k && strcmp(k, MSGS[i].key) == 0);
            } else {
                CU_ASSERT_PTR_NULL(k);
            }
            CU_ASSERT_EQUAL(b.msgs[i].payload_len, strlen(MSGS[i].value));
            CU_ASSERT_EQUAL(memcmp(b.msgs[i].payload, MSGS[i].value, b.msgs[i].payload_len), 0);
            bool tomb = MSGS[i].null_value || MSGS[i].value[0] == '\0';
            CU_ASSERT_EQUAL(batch_msg_is_tombstone(&b, i), tomb);
        }
        batch_free(&b);
        qbuf_unref(q);
    }
}

static void test_compacted_round_trip(void)
{
    bool keep[NMSGS] = {false, false, false, true, false, false, true}; /* a-2, d-1 */
    for (size_t c = 0; c < sizeof CODECS / sizeof CODECS[0]; c++) {
        qbuf_t *q = make_batch(MSGS, NMSGS, CODECS[c]);
        batch_t b;
        TEST_REQUIRE(batch_parse(q->data, q->len, &b) == 0);
        qbuf_t *out = NULL;
        TEST_REQUIRE(batch_encode_compacted(&b, keep, &out) == 0);
        batch_free(&b);
        /* a valid stored slice: checksum, uncompressed, same batch size */
        CU_ASSERT_EQUAL(frame_verify_checksum(out->data, out->len), 1);
        batch_t r;
        TEST_REQUIRE(batch_parse(out->data, out->len, &r) == 0);
        CU_ASSERT(!r.md->has_compression ||
                  r.md->compression == PULSAR__PROTO__COMPRESSION_TYPE__NONE);
        CU_ASSERT_EQUAL(r.md->num_messages_in_batch, (int32_t)NMSGS);
        CU_ASSERT_EQUAL(r.md->sequence_id, 7u);
        CU_ASSERT_EQUAL(r.n, NMSGS);
        for (size_t i = 0; i < NMSGS; i++) {
            bool out_flag = r.msgs[i].smd->has_compacted_out && r.msgs[i].smd->compacted_out;
            CU_ASSERT_EQUAL(out_flag, !keep[i]);
            if (keep[i]) {
                CU_ASSERT_EQUAL(r.msgs[i].payload_len, strlen(MSGS[i].value));
                CU_ASSERT_EQUAL(memcmp(r.msgs[i].payload, MSGS[i].value, r.msgs[i].payload_len), 0);
                CU_ASSERT_STRING_EQUAL(batch_msg_key(&r, i), MSGS[i].key);
            } else {
                CU_ASSERT_EQUAL(r.msgs[i].payload_len, 0);
            }
        }
        batch_free(&r);
        uint64_t *words = NULL;
        CU_ASSERT_EQUAL(batch_retained_mask(out->data, out->len, &words), 1);
        TEST_REQUIRE(words != NULL);
        CU_ASSERT_EQUAL(words[0], (1ull << 3) | (1ull << 6));
        free(words);
        /* the original batch has nothing compacted out: no mask */
        CU_ASSERT_EQUAL(batch_retained_mask(q->data, q->len, &words), 0);
        CU_ASSERT_PTR_NULL(words);
        qbuf_unref(out);
        qbuf_unref(q);
    }
}

static void test_single_message(void)
{
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "p";
    md.partition_key = "k";
    const char *v = "value-of-k";
    size_t zl;
    uint8_t *z =
        compress_with(PULSAR__PROTO__COMPRESSION_TYPE__ZSTD, (const uint8_t *)v, strlen(v), &zl);
    md.has_compression = 1;
    md.compression = PULSAR__PROTO__COMPRESSION_TYPE__ZSTD;
    md.has_uncompressed_size = 1;
    md.uncompressed_size = (uint32_t)strlen(v);
    qbuf_t *q = stored_slice(&md, z, zl);
    batch_t b;
    TEST_REQUIRE(batch_parse(q->data, q->len, &b) == 0);
    CU_ASSERT(!b.batched);
    CU_ASSERT_EQUAL(b.n, 1);
    CU_ASSERT_STRING_EQUAL(batch_msg_key(&b, 0), "k");
    CU_ASSERT(!batch_msg_is_tombstone(&b, 0));
    CU_ASSERT_EQUAL(b.msgs[0].payload_len, strlen(v));
    CU_ASSERT_EQUAL(memcmp(b.msgs[0].payload, v, strlen(v)), 0);
    bool keep = false;
    qbuf_t *out = NULL;
    CU_ASSERT_EQUAL(batch_encode_compacted(&b, &keep, &out), QE_INVALID);
    batch_free(&b);
    qbuf_unref(q);
    free(z);
    /* an empty payload is a tombstone; so is null_value */
    md.has_compression = 0;
    md.has_uncompressed_size = 0;
    q = stored_slice(&md, (const uint8_t *)"", 0);
    TEST_REQUIRE(batch_parse(q->data, q->len, &b) == 0);
    CU_ASSERT(batch_msg_is_tombstone(&b, 0));
    batch_free(&b);
    qbuf_unref(q);
}

static void test_corrupt_batches(void)
{
    qbuf_t *q = make_batch(MSGS, NMSGS, PULSAR__PROTO__COMPRESSION_TYPE__NONE);
    batch_t b;
    /* truncated anywhere in the payload: refused, never read past the end */
    size_t meta_end = q->len - 1;
    for (size_t cut = q->len - 1; cut > 40; cut--) {
        int rc = batch_parse(q->data, cut, &b);
        if (rc == 0) {
            meta_end = cut;
            batch_free(&b);
            continue;
        }
        CU_ASSERT(rc == QE_CORRUPT || rc == QE_TOO_LARGE);
        CU_ASSERT_PTR_NULL(b.md);
    }
    (void)meta_end;
    qbuf_unref(q);
    /* a batch that claims more messages than it holds */
    size_t raw_len;
    uint8_t *raw = batch_payload(MSGS, 2, &raw_len);
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "p";
    md.has_num_messages_in_batch = 1;
    md.num_messages_in_batch = 3;
    q = stored_slice(&md, raw, raw_len);
    CU_ASSERT_EQUAL(batch_parse(q->data, q->len, &b), QE_CORRUPT);
    qbuf_unref(q);
    /* compressed with a codec other than the one named */
    size_t zl;
    uint8_t *z = compress_with(PULSAR__PROTO__COMPRESSION_TYPE__ZSTD, raw, raw_len, &zl);
    md.num_messages_in_batch = 2;
    md.has_compression = 1;
    md.compression = PULSAR__PROTO__COMPRESSION_TYPE__LZ4;
    md.has_uncompressed_size = 1;
    md.uncompressed_size = (uint32_t)raw_len;
    q = stored_slice(&md, z, zl);
    CU_ASSERT(batch_parse(q->data, q->len, &b) < 0);
    qbuf_unref(q);
    free(z);
    free(raw);
}

/* Masks are sized from the batch: one of n messages keeping every 7th (and
 * the last) gets ceil(n / 64) words with exactly those bits, for n past the
 * old fixed 1,024 and past 64 Ki. */
static void test_large_batch_masks(void)
{
    static const size_t sizes[] = {63, 64, 65, 1024, 1025, 2000, 70000};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        size_t n = sizes[t];
        tmsg_t *m = calloc(n, sizeof *m);
        char(*keys)[16] = calloc(n, sizeof *keys);
        bool *keep = calloc(n, sizeof *keep);
        TEST_REQUIRE(m && keys && keep);
        for (size_t i = 0; i < n; i++) {
            snprintf(keys[i], sizeof keys[i], "k%zu", i % 300);
            m[i] = (tmsg_t){keys[i], "v", false};
            keep[i] = i % 7 == 0 || i == n - 1;
        }
        qbuf_t *q = make_batch(m, n, PULSAR__PROTO__COMPRESSION_TYPE__LZ4);
        batch_t b;
        TEST_REQUIRE(batch_parse(q->data, q->len, &b) == 0);
        qbuf_t *out = NULL;
        TEST_REQUIRE(batch_encode_compacted(&b, keep, &out) == 0);
        batch_free(&b);
        uint64_t *words = NULL;
        size_t k = batch_retained_mask(out->data, out->len, &words);
        CU_ASSERT_EQUAL(k, (n + 63) / 64);
        TEST_REQUIRE(words != NULL);
        size_t wrong = 0;
        for (size_t i = 0; i < k * 64; i++) {
            bool bit = words[i / 64] >> (i % 64) & 1;
            wrong += bit != (i < n && keep[i]);
        }
        CU_ASSERT_EQUAL(wrong, 0);
        free(words);
        /* cut short: the mask is refused, never read past the end */
        CU_ASSERT_EQUAL(batch_retained_mask(out->data, out->len - 3, &words), 0);
        CU_ASSERT_PTR_NULL(words);
        qbuf_unref(out);
        qbuf_unref(q);
        free(keep);
        free(keys);
        free(m);
    }
}

void compaction_acks_register(void); /* test_compaction_acks.c */

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("batch_codec", NULL, NULL);
    CU_add_test(s, "decompress with each codec", test_decompress_each_codec);
    CU_add_test(s, "parse batches of each codec", test_parse_each_codec);
    CU_add_test(s, "compacted re-encoding round trip", test_compacted_round_trip);
    CU_add_test(s, "single messages and tombstones", test_single_message);
    CU_add_test(s, "corrupt batches", test_corrupt_batches);
    CU_add_test(s, "retained masks of large batches", test_large_batch_masks);
    compaction_acks_register();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
