/*
 * batch_codec.h — reading inside stored entries: decompression with the four
 * codecs Pulsar clients use, the messages of a batch, and re-encoding a batch
 * with some of its messages marked compacted out. Used only by topic
 * compaction (compaction.c): everywhere else the broker passes payloads
 * through untouched.
 *
 * Knows bytes and protobuf, nothing of topics (unit tests in
 * tests/unit/compaction/).
 *
 * A stored entry (frame.h, "stored slice") is
 *   [0x0e01][crc32c] (optional) [u32 metaSize][MessageMetadata][payload].
 * The payload is compressed as MessageMetadata.compression says
 * (uncompressed_size gives the size after decompression):
 *
 *   | codec  | format of the payload                               |
 *   |--------|-----------------------------------------------------|
 *   | NONE   | raw bytes                                           |
 *   | LZ4    | one raw LZ4 block (LZ4_compress_default)            |
 *   | ZLIB   | one zlib stream (deflate with the zlib header)      |
 *   | ZSTD   | one zstd frame                                      |
 *   | SNAPPY | one raw snappy block                                |
 *
 * An entry is a batch iff its metadata has num_messages_in_batch (Pulsar's
 * clients' rule). The uncompressed payload of a batch of n messages is n
 * records, each:
 *
 *   | offset | size    | meaning                                   |
 *   |--------|---------|-------------------------------------------|
 *   | 0      | 4       | smSize, big-endian                        |
 *   | 4      | smSize  | SingleMessageMetadata (protobuf)          |
 *   | 4+sm   | payload_size | the message's payload                |
 *
 * Parsers never trust a size: every length is checked against what remains,
 * a declared uncompressed size above BATCH_RAW_MAX is refused (QE_TOO_LARGE).
 */
#ifndef QUIRE_SERVER_BATCH_CODEC_H
#define QUIRE_SERVER_BATCH_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "PulsarApi.pb-c.h"
#include "common/buf.h"

/* Largest uncompressed payload accepted (Pulsar's default maxMessageSize is
 * 5 MiB; a batch is at most that, compressed or not, but an uncompressed size
 * field may claim more). */
#define BATCH_RAW_MAX (64u << 20)
/* Messages in one batch accepted (Pulsar's batchingMaxMessages default is 1000). */
#define BATCH_MESSAGES_MAX 100000

/* Decompresses in[0..in_len) written with codec `compression` (a
 * Pulsar__Proto__CompressionType) into a new malloc'd buffer of exactly
 * raw_len bytes (*out, owned by the caller; NONE copies). QE_CORRUPT when the
 * data does not decompress to raw_len bytes, QE_INVALID for an unknown codec,
 * QE_TOO_LARGE above BATCH_RAW_MAX. */
int batch_decompress(int compression, const uint8_t *in, size_t in_len, size_t raw_len,
                     uint8_t **out);

typedef struct batch_msg {
    Pulsar__Proto__SingleMessageMetadata *smd; /* owned by the batch; NULL if not batched */
    const uint8_t *payload;                    /* into the batch's uncompressed payload */
    size_t payload_len;
} batch_msg_t;

/* A parsed entry. A non-batched entry has n = 1 and msgs[0].smd = NULL. */
typedef struct batch {
    Pulsar__Proto__MessageMetadata *md; /* owned */
    bool batched;
    bool encrypted;         /* encryption_keys present: the payload is opaque */
    uint8_t *raw;           /* the decompressed payload when compressed (owned) */
    const uint8_t *payload; /* uncompressed payload (raw, or borrowed from the entry) */
    size_t payload_len;
    batch_msg_t *msgs; /* owned */
    size_t n;
} batch_t;

/* Parses the stored slice entry[0..len) (borrowed: the batch points into it
 * and must not outlive it). Encrypted entries are not opened: a batch of them
 * is one message whose key is the entry's. 0, QE_CORRUPT, QE_TOO_LARGE,
 * -ENOMEM. On error *out is cleared (batch_free is safe). */
int batch_parse(const uint8_t *entry, size_t len, batch_t *out);
void batch_free(batch_t *b);

/* The key of message i (partition_key), or NULL when it has none. */
const char *batch_msg_key(const batch_t *b, size_t i);
/* True when message i deletes its key: null_value set or an empty payload. */
bool batch_msg_is_tombstone(const batch_t *b, size_t i);

/* A new stored slice ([0x0e01][crc32c][metaSize][md][payload], one reference
 * owned by the caller) holding the batch b uncompressed (compression cleared,
 * uncompressed_size set) in which each message i with keep[i] false is marked
 * compacted_out with an empty payload, as Pulsar's RawBatchConverter writes
 * compacted batches. Batch indexes, and so message ids, are unchanged. */
int batch_encode_compacted(const batch_t *b, const bool *keep, qbuf_t **out);

/* Bit i set for each message i of a compacted batch (entry: a stored slice)
 * that is not compacted_out, as java.util.BitSet words: the MESSAGE ack_set
 * with which clients skip the others. Sized from num_messages_in_batch (any
 * batch up to BATCH_MESSAGES_MAX). Returns the number of words and sets
 * *words to a new malloc'd array (owned by the caller), or returns 0 with
 * *words NULL when the entry is not a batch with compacted-out messages (no
 * mask needed) or cannot be read. */
size_t batch_retained_mask(const uint8_t *entry, size_t len, uint64_t **words);

#endif
