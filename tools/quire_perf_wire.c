/*
 * quire_perf_wire.c — what quire-perf puts on the wire and reads back, with no
 * socket: the client's commands, the client-side batch, the compression codecs
 * Pulsar names, and the parsing of a received entry.
 *
 * Batch payload (uncompressed), as Java/C++/Go clients build it:
 *   | size    | meaning                                  |
 *   |---------|------------------------------------------|
 *   | 4       | smmSize (big-endian)                     |
 *   | smmSize | SingleMessageMetadata {payload_size, ..} |
 *   | n       | the message's payload                    |
 *   ... repeated num_messages_in_batch times. The whole is then compressed and
 *   the MessageMetadata says compression and uncompressed_size.
 *
 * Codecs, as Pulsar's CompressionCodec* write them: LZ4 = raw LZ4 block,
 * ZLIB = zlib stream (deflate with zlib header), ZSTD = zstd frame (level 3),
 * SNAPPY = raw snappy.
 */
#include <errno.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "common/errors.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "server/codec/varint.h"
#include "tools/quire_perf.h"

/* Bound on a decompressed entry: a batch is at most a few max-size messages. */
#define PERF_MAX_RAW_BYTES (64u * 1024u * 1024u)

/* ------------------------------------------------------------ commands */

static int encode(Pulsar__Proto__BaseCommand *cmd, qbuf_t **out)
{
    return frame_encode_command(cmd, out);
}

int perf_cmd_connect(qbuf_t **out)
{
    Pulsar__Proto__FeatureFlags ff = PULSAR__PROTO__FEATURE_FLAGS__INIT;
    ff.has_supports_auth_refresh = 1;
    ff.supports_auth_refresh = 1;
    ff.has_supports_broker_entry_metadata = 1;
    ff.supports_broker_entry_metadata = 1;
    ff.has_supports_partial_producer = 1;
    ff.supports_partial_producer = 1;
    Pulsar__Proto__CommandConnect c = PULSAR__PROTO__COMMAND_CONNECT__INIT;
    c.client_version = (char *)PERF_CLIENT_VERSION;
    c.has_protocol_version = 1;
    c.protocol_version = PERF_PROTOCOL_VERSION;
    c.feature_flags = &ff;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT;
    b.connect = &c;
    return encode(&b, out);
}

int perf_cmd_partitioned_metadata(const char *topic, uint64_t request_id, qbuf_t **out)
{
    if (!topic)
        return QE_INVALID;
    Pulsar__Proto__CommandPartitionedTopicMetadata c =
        PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA__INIT;
    c.topic = (char *)topic;
    c.request_id = request_id;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA;
    b.partitionmetadata = &c;
    return encode(&b, out);
}

int perf_cmd_lookup(const char *topic, uint64_t request_id, bool authoritative, qbuf_t **out)
{
    if (!topic)
        return QE_INVALID;
    Pulsar__Proto__CommandLookupTopic c = PULSAR__PROTO__COMMAND_LOOKUP_TOPIC__INIT;
    c.topic = (char *)topic;
    c.request_id = request_id;
    c.has_authoritative = 1;
    c.authoritative = authoritative;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP;
    b.lookuptopic = &c;
    return encode(&b, out);
}

int perf_cmd_producer(const char *topic, uint64_t producer_id, uint64_t request_id,
                      const char *producer_name, uint64_t epoch, qbuf_t **out)
{
    if (!topic)
        return QE_INVALID;
    Pulsar__Proto__CommandProducer c = PULSAR__PROTO__COMMAND_PRODUCER__INIT;
    c.topic = (char *)topic;
    c.producer_id = producer_id;
    c.request_id = request_id;
    c.producer_name = (char *)producer_name;
    c.has_epoch = 1;
    c.epoch = epoch;
    c.has_user_provided_producer_name = 1;
    c.user_provided_producer_name = 0;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER;
    b.producer = &c;
    return encode(&b, out);
}

int perf_cmd_subscribe(const char *topic, const char *subscription,
                       Pulsar__Proto__CommandSubscribe__SubType sub_type, uint64_t consumer_id,
                       uint64_t request_id, const char *consumer_name, bool earliest, qbuf_t **out)
{
    if (!topic || !subscription)
        return QE_INVALID;
    Pulsar__Proto__KeySharedMeta ksm = PULSAR__PROTO__KEY_SHARED_META__INIT;
    ksm.keysharedmode = PULSAR__PROTO__KEY_SHARED_MODE__AUTO_SPLIT;
    Pulsar__Proto__CommandSubscribe c = PULSAR__PROTO__COMMAND_SUBSCRIBE__INIT;
    c.topic = (char *)topic;
    c.subscription = (char *)subscription;
    c.subtype = sub_type;
    c.consumer_id = consumer_id;
    c.request_id = request_id;
    c.consumer_name = (char *)consumer_name;
    c.has_durable = 1;
    c.durable = 1;
    c.has_initialposition = 1;
    c.initialposition = earliest ? PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Earliest
                                 : PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Latest;
    if (sub_type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared)
        c.keysharedmeta = &ksm;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE;
    b.subscribe = &c;
    return encode(&b, out);
}

int perf_cmd_flow(uint64_t consumer_id, uint32_t permits, qbuf_t **out)
{
    Pulsar__Proto__CommandFlow c = PULSAR__PROTO__COMMAND_FLOW__INIT;
    c.consumer_id = consumer_id;
    c.messagepermits = permits;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__FLOW;
    b.flow = &c;
    return encode(&b, out);
}

int perf_cmd_ack(uint64_t consumer_id, perf_ack_t type, const int64_t *ids, size_t n, qbuf_t **out)
{
    if (n == 0 || !ids || (type == PERF_ACK_CUMULATIVE && n != 1) || n > 100000)
        return QE_INVALID;
    Pulsar__Proto__MessageIdData *idd = calloc(n, sizeof *idd);
    Pulsar__Proto__MessageIdData **ptrs = calloc(n, sizeof *ptrs);
    int rc = -ENOMEM;
    if (idd && ptrs) {
        for (size_t i = 0; i < n; i++) {
            pulsar__proto__message_id_data__init(&idd[i]);
            idd[i].ledgerid = (uint64_t)ids[2 * i];
            idd[i].entryid = (uint64_t)ids[2 * i + 1];
            ptrs[i] = &idd[i];
        }
        Pulsar__Proto__CommandAck c = PULSAR__PROTO__COMMAND_ACK__INIT;
        c.consumer_id = consumer_id;
        c.ack_type = type == PERF_ACK_CUMULATIVE ? PULSAR__PROTO__COMMAND_ACK__ACK_TYPE__Cumulative
                                                 : PULSAR__PROTO__COMMAND_ACK__ACK_TYPE__Individual;
        c.n_message_id = n;
        c.message_id = ptrs;
        Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
        b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ACK;
        b.ack = &c;
        rc = encode(&b, out);
    }
    free(idd);
    free(ptrs);
    return rc;
}

int perf_cmd_close_producer(uint64_t producer_id, uint64_t request_id, qbuf_t **out)
{
    Pulsar__Proto__CommandCloseProducer c = PULSAR__PROTO__COMMAND_CLOSE_PRODUCER__INIT;
    c.producer_id = producer_id;
    c.request_id = request_id;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER;
    b.close_producer = &c;
    return encode(&b, out);
}

int perf_cmd_close_consumer(uint64_t consumer_id, uint64_t request_id, qbuf_t **out)
{
    Pulsar__Proto__CommandCloseConsumer c = PULSAR__PROTO__COMMAND_CLOSE_CONSUMER__INIT;
    c.consumer_id = consumer_id;
    c.request_id = request_id;
    Pulsar__Proto__BaseCommand b = PULSAR__PROTO__BASE_COMMAND__INIT;
    b.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER;
    b.close_consumer = &c;
    return encode(&b, out);
}

/* ------------------------------------------------------------ payloads */

void perf_payload_stamp(uint8_t *p, size_t len, uint64_t ts_us)
{
    if (len < PERF_PAYLOAD_HEADER_BYTES)
        return;
    memcpy(p, PERF_PAYLOAD_MAGIC, 4);
    for (int i = 0; i < 8; i++)
        p[4 + i] = (uint8_t)(ts_us >> (56 - 8 * i));
}

uint64_t perf_payload_ts(const uint8_t *p, size_t len)
{
    if (len < PERF_PAYLOAD_HEADER_BYTES || memcmp(p, PERF_PAYLOAD_MAGIC, 4) != 0)
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[4 + i];
    return v;
}

void perf_payload_fill(uint8_t *p, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)('A' + (x >> 16) % 26);
    }
}

/* ------------------------------------------------------------ scratch */

int perf_scratch_reserve(perf_scratch_t *s, size_t n)
{
    if (n <= s->cap)
        return 0;
    if (n > PERF_MAX_RAW_BYTES * 2)
        return QE_TOO_LARGE;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < n)
        cap *= 2;
    uint8_t *p = realloc(s->p, cap);
    if (!p)
        return -ENOMEM;
    s->p = p;
    s->cap = cap;
    return 0;
}

void perf_scratch_free(perf_scratch_t *s)
{
    free(s->p);
    s->p = NULL;
    s->cap = 0;
}

/* ------------------------------------------------------------ compression */

int perf_compress(Pulsar__Proto__CompressionType c, const uint8_t *in, size_t n, perf_scratch_t *s,
                  size_t *out_len)
{
    if (n > PERF_MAX_RAW_BYTES)
        return QE_TOO_LARGE;
    size_t bound;
    switch (c) {
    case PULSAR__PROTO__COMPRESSION_TYPE__NONE:
        bound = n;
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__LZ4:
        bound = (size_t)LZ4_compressBound((int)n);
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__ZLIB:
        bound = compressBound((uLong)n);
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__ZSTD:
        bound = ZSTD_compressBound(n);
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY:
        bound = snappy_max_compressed_length(n);
        break;
    default:
        return QE_INVALID;
    }
    int rc = perf_scratch_reserve(s, bound ? bound : 1);
    if (rc != 0)
        return rc;
    switch (c) {
    case PULSAR__PROTO__COMPRESSION_TYPE__NONE:
        if (n)
            memcpy(s->p, in, n);
        *out_len = n;
        return 0;
    case PULSAR__PROTO__COMPRESSION_TYPE__LZ4: {
        int k = LZ4_compress_default((const char *)in, (char *)s->p, (int)n, (int)bound);
        if (k <= 0)
            return QE_INVALID;
        *out_len = (size_t)k;
        return 0;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__ZLIB: {
        uLongf k = (uLongf)bound;
        if (compress2(s->p, &k, in, (uLong)n, Z_DEFAULT_COMPRESSION) != Z_OK)
            return QE_INVALID;
        *out_len = k;
        return 0;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__ZSTD: {
        size_t k = ZSTD_compress(s->p, bound, in, n, 3);
        if (ZSTD_isError(k))
            return QE_INVALID;
        *out_len = k;
        return 0;
    }
    default: {
        size_t k = bound;
        if (snappy_compress((const char *)in, n, (char *)s->p, &k) != SNAPPY_OK)
            return QE_INVALID;
        *out_len = k;
        return 0;
    }
    }
}

int perf_decompress(Pulsar__Proto__CompressionType c, const uint8_t *in, size_t n, size_t raw_len,
                    perf_scratch_t *s)
{
    if (raw_len > PERF_MAX_RAW_BYTES)
        return QE_TOO_LARGE;
    int rc = perf_scratch_reserve(s, raw_len ? raw_len : 1);
    if (rc != 0)
        return rc;
    switch (c) {
    case PULSAR__PROTO__COMPRESSION_TYPE__NONE:
        if (n != raw_len)
            return QE_CORRUPT;
        if (n)
            memcpy(s->p, in, n);
        return 0;
    case PULSAR__PROTO__COMPRESSION_TYPE__LZ4:
        if (n > INT32_MAX)
            return QE_CORRUPT;
        return LZ4_decompress_safe((const char *)in, (char *)s->p, (int)n, (int)raw_len) ==
                       (int)raw_len
                   ? 0
                   : QE_CORRUPT;
    case PULSAR__PROTO__COMPRESSION_TYPE__ZLIB: {
        uLongf k = (uLongf)raw_len;
        return uncompress(s->p, &k, in, (uLong)n) == Z_OK && k == raw_len ? 0 : QE_CORRUPT;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__ZSTD: {
        size_t k = ZSTD_decompress(s->p, raw_len, in, n);
        return !ZSTD_isError(k) && k == raw_len ? 0 : QE_CORRUPT;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY: {
        size_t k = raw_len;
        return snappy_uncompress((const char *)in, n, (char *)s->p, &k) == SNAPPY_OK && k == raw_len
                   ? 0
                   : QE_CORRUPT;
    }
    default:
        return QE_CORRUPT;
    }
}

/* ------------------------------------------------------------ the batch */

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* SingleMessageMetadata is written and read by hand: it is the one message
 * quire-perf handles per message (not per batch), and protobuf-c's generic
 * pack/unpack of it was the load generator's largest cost at small sizes.
 * The bytes are protobuf-c's (fields in number order): partition_key (2),
 * payload_size (3), sequence_id (8). tests/unit/perf checks them against
 * protobuf-c both ways. */

/* Upper bound of smm_encode's output for a key of klen bytes. */
#define SMM_MAX(klen) (1 + 10 + (klen) + 1 + 10 + 1 + 10)

size_t perf_smm_encode(uint8_t *p, const char *key, size_t payload_size, uint64_t seq)
{
    size_t n = 0;
    if (key) {
        size_t k = strlen(key);
        p[n++] = 2 << 3 | 2;
        n += pb_varint_put(p + n, k);
        memcpy(p + n, key, k);
        n += k;
    }
    p[n++] = 3 << 3 | 0;
    n += pb_varint_put(p + n, (uint64_t)(int64_t)(int32_t)payload_size); /* int32: sign-extended */
    p[n++] = 8 << 3 | 0;
    n += pb_varint_put(p + n, seq);
    return n;
}

int perf_smm_payload_size(const uint8_t *p, size_t len, int32_t *payload_size)
{
    size_t o = 0;
    bool have = false;
    while (o < len) {
        pb_field_t f;
        if (!pb_field_next(p, len, &o, &f))
            return QE_CORRUPT;
        if (f.number == 3 && f.wire == PB_WIRE_VARINT) {
            *payload_size = (int32_t)f.v;
            have = true;
        }
    }
    return have ? 0 : QE_CORRUPT; /* payload_size is required */
}

int perf_batch_add(perf_batch_t *b, const uint8_t *payload, size_t len, const char *key,
                   uint64_t seq, uint64_t now_ns)
{
    if (!b->batching && b->n > 0)
        return QE_TOO_LARGE;
    size_t need = len;
    if (b->batching)
        need += 4 + SMM_MAX(key ? strlen(key) : 0);
    int rc = perf_scratch_reserve(&b->raw, b->len + need);
    if (rc != 0)
        return rc;
    uint8_t *p = b->raw.p + b->len;
    if (b->batching) {
        size_t m = perf_smm_encode(p + 4, key, len, seq);
        wr32(p, (uint32_t)m);
        p += 4 + m;
        need = 4 + m + len;
    }
    memcpy(p, payload, len);
    b->len += need;
    if (b->n == 0) {
        b->first_seq = seq;
        b->first_add_ns = now_ns;
        b->has_key = key != NULL;
        if (key)
            snprintf(b->first_key, sizeof b->first_key, "%s", key);
    }
    b->n++;
    return 0;
}

void perf_batch_reset(perf_batch_t *b)
{
    b->len = 0;
    b->n = 0;
    b->has_key = false;
}

void perf_batch_free(perf_batch_t *b)
{
    perf_scratch_free(&b->raw);
    perf_batch_reset(b);
}

int perf_encode_send(const perf_batch_t *b, uint64_t producer_id, const char *producer_name,
                     int64_t publish_time_ms, Pulsar__Proto__CompressionType c, perf_scratch_t *z,
                     qbuf_t **out)
{
    if (b->n == 0 || !producer_name)
        return QE_INVALID;
    size_t zlen = 0;
    int rc = perf_compress(c, b->raw.p, b->len, z, &zlen);
    if (rc != 0)
        return rc;
    uint64_t last = b->first_seq + b->n - 1;
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = (char *)producer_name;
    md.sequence_id = b->first_seq;
    md.publish_time = (uint64_t)publish_time_ms;
    if (c != PULSAR__PROTO__COMPRESSION_TYPE__NONE) {
        md.has_compression = 1;
        md.compression = c;
        md.has_uncompressed_size = 1;
        md.uncompressed_size = (uint32_t)b->len;
    }
    if (b->batching) {
        md.has_num_messages_in_batch = 1;
        md.num_messages_in_batch = (int32_t)b->n;
        md.has_highest_sequence_id = 1;
        md.highest_sequence_id = last;
        if (b->key_based && b->has_key)
            md.partition_key = (char *)b->first_key; /* the batch's one key */
    } else if (b->has_key) {
        md.partition_key = (char *)b->first_key;
    }
    Pulsar__Proto__CommandSend s = PULSAR__PROTO__COMMAND_SEND__INIT;
    s.producer_id = producer_id;
    s.sequence_id = b->first_seq;
    s.has_num_messages = 1;
    s.num_messages = (int32_t)b->n;
    if (b->batching) {
        s.has_highest_sequence_id = 1;
        s.highest_sequence_id = last;
    }
    Pulsar__Proto__BaseCommand cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND;
    cmd.send = &s;
    return frame_encode_payload(&cmd, &md, z->p, zlen, true, out);
}

/* ------------------------------------------------------------ receiving */

static int parse_batch(const uint8_t *p, size_t len, uint32_t n,
                       void (*on_msg)(void *ctx, uint64_t ts_us), void *ctx, perf_entry_t *out)
{
    size_t o = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (len - o < 4)
            return QE_CORRUPT;
        uint32_t m = rd32(p + o);
        o += 4;
        if (m > len - o)
            return QE_CORRUPT;
        int32_t size;
        if (perf_smm_payload_size(p + o, m, &size) != 0)
            return QE_CORRUPT;
        o += m;
        if (size < 0 || (size_t)size > len - o)
            return QE_CORRUPT;
        if (on_msg)
            on_msg(ctx, perf_payload_ts(p + o, (size_t)size));
        out->payload_bytes += (uint64_t)size;
        o += (size_t)size;
    }
    return 0;
}

int perf_parse_entry(const uint8_t *slice, size_t len, perf_scratch_t *z,
                     void (*on_msg)(void *ctx, uint64_t ts_us), void *ctx, perf_entry_t *out)
{
    memset(out, 0, sizeof *out);
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    int rc = frame_parse_metadata(slice, len, &md, &off);
    if (rc != 0)
        return rc;
    const uint8_t *p = slice + off;
    size_t n = len - off;
    out->publish_time_ms = (int64_t)md->publish_time;
    Pulsar__Proto__CompressionType c =
        md->has_compression ? md->compression : PULSAR__PROTO__COMPRESSION_TYPE__NONE;
    if (c != PULSAR__PROTO__COMPRESSION_TYPE__NONE) {
        rc = perf_decompress(c, p, n, md->uncompressed_size, z);
        p = z->p;
        n = md->uncompressed_size;
    }
    if (rc == 0 && md->has_num_messages_in_batch) {
        if (md->num_messages_in_batch < 0)
            rc = QE_CORRUPT;
        else {
            out->n_msgs = (uint32_t)md->num_messages_in_batch;
            rc = parse_batch(p, n, out->n_msgs, on_msg, ctx, out);
        }
    } else if (rc == 0) {
        out->n_msgs = 1;
        out->payload_bytes = n;
        if (on_msg)
            on_msg(ctx, perf_payload_ts(p, n));
    }
    frame_metadata_free(md);
    return rc;
}
