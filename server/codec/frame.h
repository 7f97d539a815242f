/*
 * frame.h — Pulsar binary protocol framing: decode a frame from bytes, encode
 * commands into frames. Knows bytes and protobuf, nothing of connections.
 *
 * Wire format (all integers big-endian):
 *
 *   Simple frame
 *   | offset | size    | meaning                                         |
 *   |--------|---------|-------------------------------------------------|
 *   | 0      | 4       | total: bytes that follow this field             |
 *   | 4      | 4       | cmdSize: bytes of the BaseCommand               |
 *   | 8      | cmdSize | BaseCommand (protobuf)                          |
 *
 *   Frame with payload (SEND, MESSAGE), after the BaseCommand at o = 8 + cmdSize:
 *   | offset   | size    | meaning                                           |
 *   |----------|---------|---------------------------------------------------|
 *   | o        | 2       | 0x0e02: broker entry metadata follows (optional)  |
 *   | o+2      | 4       | bemSize                                           |
 *   | o+6      | bemSize | BrokerEntryMetadata (protobuf); not in the CRC    |
 *   | p        | 2       | 0x0e01: checksum follows (optional)               |
 *   | p+2      | 4       | CRC32C of every byte after this field to the end  |
 *   | q        | 4       | metaSize                                          |
 *   | q+4      | metaSize| MessageMetadata (protobuf)                        |
 *   | q+4+m    | rest    | payload (possibly compressed, batched, encrypted) |
 *
 * The "stored slice" of a SEND/MESSAGE frame is the bytes from p (the 0x0e01
 * magic, or q when there is no checksum block) to the frame's end: the broker
 * stores it verbatim and sends it back behind a new MESSAGE command.
 *
 * Invariants of frame_decode:
 *  1. It never trusts a length field: total is checked against max_frame_bytes
 *     as soon as the bytes that can exceed it have arrived (even before all four
 *     size bytes are in), cmdSize against total, each inner size against what
 *     remains; nothing is allocated before the whole frame is in the buffer.
 *  2. It is stateless and resumable: QE_AGAIN means "call again with the same
 *     bytes plus more"; *consumed is then 0.
 *  3. Protobuf allocations are bounded per frame (FRAME_PB_BUDGET of cmdSize).
 *  4. A decoded frame borrows buf: the slices point into it; only cmd is owned.
 */
#ifndef QUIRE_SERVER_CODEC_FRAME_H
#define QUIRE_SERVER_CODEC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "PulsarApi.pb-c.h"
#include "common/buf.h"

#define FRAME_MAGIC_CRC32C 0x0e01u
#define FRAME_MAGIC_BROKER_ENTRY_METADATA 0x0e02u
/* Pulsar's defaults: maxMessageSize and the slack a frame may add to it. */
#define FRAME_DEFAULT_MAX_MESSAGE_BYTES 5242880u
#define FRAME_DEFAULT_MAX_FRAME_BYTES (FRAME_DEFAULT_MAX_MESSAGE_BYTES + 10240u)
/* Bytes of [total][cmdSize]. */
#define FRAME_PREFIX_BYTES 8u
/* Bytes of [0x0e01][crc32c]. */
#define FRAME_CHECKSUM_BLOCK_BYTES 6u
/* protobuf-c may allocate at most this many bytes per byte unpacked, plus
 * FRAME_PB_BUDGET_BASE: a hostile frame of many tiny submessages cannot make it
 * allocate more than a small multiple of its own size. */
#define FRAME_PB_BUDGET_FACTOR 16u
#define FRAME_PB_BUDGET_BASE (256u * 1024u)

typedef struct frame {
    /* The command, owned by the frame (freed by frame_free). Never NULL after a
     * successful decode; cmd->type's field is set (PING/PONG may omit theirs). */
    Pulsar__Proto__BaseCommand *cmd;
    /* Bytes of the whole frame in buf (4 + total). */
    size_t frame_len;
    /* SEND/MESSAGE: the stored slice (see above), borrowed from buf; NULL/0 for
     * other commands. */
    const uint8_t *payload;
    size_t payload_len;
    /* Set by a reader that received the payload part into a buffer of its own
     * (frame_decode_split): that buffer, borrowed; a handler may keep a
     * reference to it instead of copying the payload. NULL otherwise. */
    qbuf_t *payload_buf;
    /* The BrokerEntryMetadata protobuf bytes when the 0x0e02 block is present
     * (borrowed; NULL/0 otherwise). */
    const uint8_t *broker_entry_metadata;
    size_t broker_entry_metadata_len;
    bool has_checksum; /* the 0x0e01 block is present */
    bool checksum_ok;  /* it matched (false when absent) */
    bool cmd_plain;    /* cmd holds only its type's message (frame_free frees that) */
} frame_t;

/* Decodes one frame from the front of buf[0..len).
 *   0            out holds the frame, *consumed = out->frame_len.
 *   QE_AGAIN     the frame is incomplete (*consumed = 0, out untouched).
 *   QE_TOO_LARGE total > max_frame_bytes (e.g. TLS or HTTP on the plain port).
 *   QE_CORRUPT   inconsistent sizes or magic, a protobuf that does not parse.
 *   QE_INVALID   a command whose type names no set field, or an unknown type.
 *   -ENOMEM      allocation failed.
 * On error the connection should be closed: there is no way to resynchronise.
 * A checksum mismatch is not an error here: see out->checksum_ok. The caller
 * owns out->cmd and must call frame_free; the slices borrow buf. */
int frame_decode(const uint8_t *buf, size_t len, size_t max_frame_bytes, frame_t *out,
                 size_t *consumed);

/* The bytes of [total][cmdSize][command] of the frame at the front of buf: 0
 * and *head_len once its first 8 bytes are in, QE_AGAIN before, or
 * frame_decode's size errors. Lets a reader receive a large payload apart. */
int frame_head_size(const uint8_t *buf, size_t len, size_t max_frame_bytes, size_t *head_len);

/* frame_decode of a frame received in two pieces: head[0..head_len) exactly its
 * [total][cmdSize][command] bytes, rest[0..rest_len) what follows (a SEND's
 * payload part). Same results, but never QE_AGAIN: sizes that disagree are
 * QE_CORRUPT. The slices borrow rest. */
int frame_decode_split(const uint8_t *head, size_t head_len, const uint8_t *rest, size_t rest_len,
                       size_t max_frame_bytes, frame_t *out);

/* How many bytes the frame at the front of buf needs in all: 0 and *need once
 * the 4-byte size is in (even if the frame is not), QE_AGAIN before, or the
 * same size errors as frame_decode. Lets a reader size its buffer. */
int frame_peek_size(const uint8_t *buf, size_t len, size_t max_frame_bytes, size_t *need);

/* Frees out->cmd and clears out. Safe on a zeroed or already freed frame. */
void frame_free(frame_t *f);

/* Unpacks the MessageMetadata of a stored slice (optionally preceded by a 0x0e02
 * block, then an optional 0x0e01 block, then metaSize) without touching the
 * payload. *md is owned by the caller (frame_metadata_free); *payload_offset is
 * where the payload starts in slice. Returns 0, QE_CORRUPT, or -ENOMEM. */
int frame_parse_metadata(const uint8_t *slice, size_t len, Pulsar__Proto__MessageMetadata **md,
                         size_t *payload_offset);
void frame_metadata_free(Pulsar__Proto__MessageMetadata *md);

/* What the dispatcher needs of a stored slice's MessageMetadata, read in one
 * pass over its bytes without unpacking it (frame_parse_metadata allocates
 * every field): the keys point into slice. */
typedef struct frame_meta_scan {
    int32_t num_messages; /* num_messages_in_batch when set and > 0, else 1 */
    bool has_num_messages_in_batch;
    int32_t num_messages_in_batch;
    uint64_t publish_time;
    bool has_partition_key, partition_key_b64_encoded;
    const uint8_t *partition_key;
    size_t partition_key_len;
    bool has_ordering_key;
    const uint8_t *ordering_key;
    size_t ordering_key_len;
    bool has_deliver_at_time;
    int64_t deliver_at_time;
    size_t payload_offset; /* where the payload starts in slice */
} frame_meta_scan_t;

/* Fills *out from the slice's metadata: 0, or QE_CORRUPT where protobuf-c's
 * unpack would fail too (a cut field or varint, a required field missing, a
 * field read here with another wire type). Fields not read here are skipped
 * by their wire type without being checked, so it may read metadata that
 * protobuf-c refuses (a broken nested message), never the reverse. */
int frame_scan_metadata(const uint8_t *slice, size_t len, frame_meta_scan_t *out);

/* Checks the 0x0e01 block of a stored slice: 1 if present and matching, 0 if
 * present and wrong, QE_NOT_FOUND if absent, QE_CORRUPT if truncated. */
int frame_verify_checksum(const uint8_t *slice, size_t len);

/* ---------------------------------------------------------------- encoders */

/* Encodes a simple frame. Checks required fields first (QE_INVALID if one is
 * missing). *out is a new buffer with one reference, owned by the caller. */
int frame_encode_command(const Pulsar__Proto__BaseCommand *cmd, qbuf_t **out);
/* Whether cmd has the plain shape (its type and that type's message, nothing
 * else) that the encoder wraps by hand instead of through protobuf-c. */
bool frame_command_plain(const Pulsar__Proto__BaseCommand *cmd);

/* Bytes frame_encode_message_header will write for these arguments. */
size_t frame_message_header_size(const Pulsar__Proto__BaseCommand *cmd, size_t bem_len,
                                 const uint8_t *stored, size_t stored_len);

/* Zero-copy send path: writes into hdr[0..hdr_cap) the bytes that, followed by
 * stored[0..stored_len), form one frame: [total][cmdSize][cmd], and when stored
 * lacks the 0x0e01 block a checksum block computed over stored (Go consumers
 * require one). The caller writes [hdr][stored] with writev. stored is
 * borrowed. Returns 0, QE_TOO_LARGE (hdr_cap too small or frame > 4 GiB),
 * QE_INVALID (missing required fields, empty stored, stored starting with
 * 0x0e02). */
int frame_encode_message_header(const Pulsar__Proto__BaseCommand *cmd, const uint8_t *stored,
                                size_t stored_len, uint8_t *hdr, size_t hdr_cap, size_t *hdr_len);

/* The same, with a BrokerEntryMetadata block (bem: packed protobuf bytes,
 * borrowed) placed between the command and the checksum block, as brokers do
 * for clients that announced supports_broker_entry_metadata. */
int frame_encode_message_header_bem(const Pulsar__Proto__BaseCommand *cmd, const uint8_t *bem,
                                    size_t bem_len, const uint8_t *stored, size_t stored_len,
                                    uint8_t *hdr, size_t hdr_cap, size_t *hdr_len);

/* A whole payload frame in one buffer (client side of SEND, tools, tests):
 * [prefix][cmd][0x0e01 crc if with_checksum][metaSize][md][payload]. *out is
 * owned by the caller. */
int frame_encode_payload(const Pulsar__Proto__BaseCommand *cmd,
                         const Pulsar__Proto__MessageMetadata *md, const uint8_t *payload,
                         size_t payload_len, bool with_checksum, qbuf_t **out);

#endif
