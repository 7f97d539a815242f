/*
 * batch_codec.c — decompression, batch parsing and compacted re-encoding of
 * stored entries (formats in batch_codec.h). Pure functions over bytes; the
 * only allocations are the decompressed payload, the unpacked protobufs and
 * the re-encoded entry, all bounded by BATCH_RAW_MAX / BATCH_MESSAGES_MAX.
 */
#include <errno.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "server/batch_codec.h"
#include "server/codec/frame.h"

/* ------------------------------------------------------------ helpers -- */

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* ------------------------------------------------------- decompression -- */

int batch_decompress(int compression, const uint8_t *in, size_t in_len, size_t raw_len,
                     uint8_t **out)
{
    *out = NULL;
    if (raw_len > BATCH_RAW_MAX || in_len > BATCH_RAW_MAX)
        return QE_TOO_LARGE;
    uint8_t *p = malloc(raw_len ? raw_len : 1);
    if (!p)
        return -ENOMEM;
    bool ok = false;
    switch (compression) {
    case PULSAR__PROTO__COMPRESSION_TYPE__NONE:
        ok = in_len == raw_len;
        if (ok && raw_len)
            memcpy(p, in, raw_len);
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__LZ4:
        ok = LZ4_decompress_safe((const char *)in, (char *)p, (int)in_len, (int)raw_len) ==
             (int)raw_len;
        break;
    case PULSAR__PROTO__COMPRESSION_TYPE__ZLIB: {
        uLongf k = (uLongf)raw_len;
        ok = uncompress(p, &k, in, (uLong)in_len) == Z_OK && k == raw_len;
        break;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__ZSTD: {
        size_t k = ZSTD_decompress(p, raw_len, in, in_len);
        ok = !ZSTD_isError(k) && k == raw_len;
        break;
    }
    case PULSAR__PROTO__COMPRESSION_TYPE__SNAPPY: {
        size_t k = raw_len;
        ok =
            snappy_uncompress((const char *)in, in_len, (char *)p, &k) == SNAPPY_OK && k == raw_len;
        break;
    }
    default:
        free(p);
        return QE_INVALID;
    }
    if (!ok) {
        free(p);
        return QE_CORRUPT;
    }
    *out = p;
    return 0;
}

/* ------------------------------------------------------------- parsing -- */

void batch_free(batch_t *b)
{
    if (b->msgs)
        for (size_t i = 0; i < b->n; i++)
            if (b->msgs[i].smd)
                pulsar__proto__single_message_metadata__free_unpacked(b->msgs[i].smd, NULL);
    free(b->msgs);
    free(b->raw);
    if (b->md)
        frame_metadata_free(b->md);
    memset(b, 0, sizeof *b);
}

/* Splits b->payload into its n single-message records. */
static int batch_split(batch_t *b, size_t n)
{
    b->msgs = calloc(n, sizeof *b->msgs);
    if (!b->msgs)
        return -ENOMEM;
    b->n = n;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (b->payload_len - off < 4)
            return QE_CORRUPT;
        uint32_t sm = rd32(b->payload + off);
        off += 4;
        if (sm > b->payload_len - off)
            return QE_CORRUPT;
        b->msgs[i].smd = pulsar__proto__single_message_metadata__unpack(NULL, sm, b->payload + off);
        if (!b->msgs[i].smd)
            return QE_CORRUPT;
        off += sm;
        int32_t ps = b->msgs[i].smd->payload_size;
        if (ps < 0 || (size_t)ps > b->payload_len - off)
            return QE_CORRUPT;
        b->msgs[i].payload = b->payload + off;
        b->msgs[i].payload_len = (size_t)ps;
        off += (size_t)ps;
    }
    return 0;
}

int batch_parse(const uint8_t *entry, size_t len, batch_t *out)
{
    memset(out, 0, sizeof *out);
    size_t off = 0;
    int rc = frame_parse_metadata(entry, len, &out->md, &off);
    if (rc < 0) {
        out->md = NULL;
        return rc;
    }
    const Pulsar__Proto__MessageMetadata *md = out->md;
    out->batched = md->has_num_messages_in_batch;
    out->encrypted = md->n_encryption_keys > 0;
    out->payload = entry + off;
    out->payload_len = len - off;
    int codec = md->has_compression ? (int)md->compression : PULSAR__PROTO__COMPRESSION_TYPE__NONE;
    if (!out->encrypted && codec != PULSAR__PROTO__COMPRESSION_TYPE__NONE) {
        rc = batch_decompress(codec, out->payload, out->payload_len, md->uncompressed_size,
                              &out->raw);
        if (rc < 0)
            goto fail;
        out->payload = out->raw;
        out->payload_len = md->uncompressed_size;
    }
    if (!out->batched || out->encrypted) {
        out->msgs = calloc(1, sizeof *out->msgs);
        if (!out->msgs) {
            rc = -ENOMEM;
            goto fail;
        }
        out->n = 1;
        out->msgs[0].payload = out->payload;
        out->msgs[0].payload_len = out->payload_len;
        return 0;
    }
    if (md->num_messages_in_batch < 1 || md->num_messages_in_batch > BATCH_MESSAGES_MAX) {
        rc = QE_CORRUPT;
        goto fail;
    }
    rc = batch_split(out, (size_t)md->num_messages_in_batch);
    if (rc == 0)
        return 0;
fail:
    batch_free(out);
    return rc;
}

const char *batch_msg_key(const batch_t *b, size_t i)
{
    const Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
    if (smd) {
        if (smd->has_null_partition_key && smd->null_partition_key)
            return NULL;
        return smd->partition_key;
    }
    return b->md->partition_key;
}

bool batch_msg_is_tombstone(const batch_t *b, size_t i)
{
    const Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
    if (smd)
        return (smd->has_null_value && smd->null_value) || b->msgs[i].payload_len == 0;
    if (b->encrypted)
        return b->md->has_null_value && b->md->null_value;
    return (b->md->has_null_value && b->md->null_value) || b->payload_len == 0;
}

/* ------------------------------------------------------------ encoding -- */

int batch_encode_compacted(const batch_t *b, const bool *keep, qbuf_t **out)
{
    *out = NULL;
    if (!b->batched || b->encrypted)
        return QE_INVALID;
    /* Sizes first: every record, then the metadata that announces them. */
    size_t raw = 0;
    for (size_t i = 0; i < b->n; i++) {
        Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
        if (!keep[i]) {
            smd->has_compacted_out = 1;
            smd->compacted_out = 1;
            smd->payload_size = 0;
        }
        raw += 4 + pulsar__proto__single_message_metadata__get_packed_size(smd) +
               (size_t)smd->payload_size;
    }
    if (raw > BATCH_RAW_MAX)
        return QE_TOO_LARGE;
    Pulsar__Proto__MessageMetadata *md = b->md;
    md->has_compression = 0;
    md->compression = PULSAR__PROTO__COMPRESSION_TYPE__NONE;
    md->has_uncompressed_size = 1;
    md->uncompressed_size = (uint32_t)raw;
    size_t mlen = pulsar__proto__message_metadata__get_packed_size(md);
    size_t total = 2 + 4 + 4 + mlen + raw;
    qbuf_t *q = qbuf_new(total);
    if (!q)
        return -ENOMEM;
    uint8_t *p = q->data;
    p[0] = FRAME_MAGIC_CRC32C >> 8;
    p[1] = FRAME_MAGIC_CRC32C & 0xff;
    wr32(p + 6, (uint32_t)mlen);
    pulsar__proto__message_metadata__pack(md, p + 10);
    size_t off = 10 + mlen;
    for (size_t i = 0; i < b->n; i++) {
        const Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
        size_t sm = pulsar__proto__single_message_metadata__get_packed_size(smd);
        wr32(p + off, (uint32_t)sm);
        pulsar__proto__single_message_metadata__pack(smd, p + off + 4);
        off += 4 + sm;
        if (smd->payload_size > 0)
            memcpy(p + off, b->msgs[i].payload, (size_t)smd->payload_size);
        off += (size_t)smd->payload_size;
    }
    assert(off == total);
    wr32(p + 2, crc32c(0, p + 6, total - 6));
    q->len = (uint32_t)total;
    *out = q;
    return 0;
}

size_t batch_retained_mask(const uint8_t *entry, size_t len, uint64_t **words)
{
    *words = NULL;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    if (frame_parse_metadata(entry, len, &md, &off) < 0)
        return 0;
    bool plain = md->has_num_messages_in_batch && md->n_encryption_keys == 0 &&
                 (!md->has_compression || md->compression == PULSAR__PROTO__COMPRESSION_TYPE__NONE);
    int32_t n = md->num_messages_in_batch;
    frame_metadata_free(md);
    if (!plain || n < 1 || n > BATCH_MESSAGES_MAX)
        return 0;
    size_t nwords = (size_t)(n + 63) / 64;
    uint64_t *w = calloc(nwords, sizeof *w);
    if (!w)
        return 0;
    const uint8_t *p = entry + off;
    size_t left = len - off;
    bool any_out = false;
    for (int32_t i = 0; i < n; i++) {
        if (left < 4)
            goto none;
        uint32_t sm = rd32(p);
        if (sm > left - 4)
            goto none;
        Pulsar__Proto__SingleMessageMetadata *smd =
            pulsar__proto__single_message_metadata__unpack(NULL, sm, p + 4);
        if (!smd)
            goto none;
        bool out = smd->has_compacted_out && smd->compacted_out;
        int32_t ps = smd->payload_size;
        pulsar__proto__single_message_metadata__free_unpacked(smd, NULL);
        if (ps < 0 || (size_t)ps > left - 4 - sm)
            goto none;
        if (out)
            any_out = true;
        else
            w[i / 64] |= 1ull << (i % 64);
        p += 4 + sm + (size_t)ps;
        left -= 4 + sm + (size_t)ps;
    }
    if (!any_out)
        goto none;
    *words = w;
    return nwords;
none:
    free(w);
    return 0;
}
