/*
 * frame.c — Pulsar frame decoder and encoders (formats and contract: frame.h).
 *
 * Decoding goes in three steps, each bounded by the one before:
 *   1. sizes: total against max_frame_bytes (from the first byte on), then
 *      cmdSize against total; return QE_AGAIN until the whole frame is in;
 *   2. the BaseCommand, unpacked by protobuf-c through a budget allocator that
 *      refuses to allocate more than FRAME_PB_BUDGET_FACTOR * cmdSize +
 *      FRAME_PB_BUDGET_BASE bytes for this frame;
 *   3. for SEND and MESSAGE, the payload part: optional 0x0e02 block, optional
 *      0x0e01 block (CRC32C verified), metaSize within what remains. Nothing of
 *      the payload is copied: the frame holds slices of the caller's buffer.
 * Any other command must end exactly where its BaseCommand ends.
 */
#include "server/codec/frame.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "server/codec/varint.h"

/* ---------------------------------------------------------------- helpers */

static inline uint32_t frame_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline uint16_t frame_rd16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static inline void frame_wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void frame_wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* ---------------------------------------------------------------- bounded allocator */

/* One per unpack call, on the caller's stack. Frees go straight to free(), so
 * the unpacked message can later be freed with frame_plain_allocator. */
typedef struct frame_budget {
    ProtobufCAllocator alloc;
    size_t used;
    size_t budget;
    bool refused;     /* the budget said no */
    bool out_of_heap; /* malloc said no */
} frame_budget_t;

static void *frame_budget_alloc(void *data, size_t size)
{
    frame_budget_t *b = data;
    if (size > b->budget - b->used) {
        b->refused = true;
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    if (!p) {
        b->out_of_heap = true;
        return NULL;
    }
    b->used += size;
    return p;
}

static void frame_heap_free(void *data, void *p)
{
    (void)data;
    free(p);
}

static void *frame_heap_alloc(void *data, size_t size)
{
    (void)data;
    return malloc(size ? size : 1);
}

static ProtobufCAllocator frame_plain_allocator = {
    .alloc = frame_heap_alloc,
    .free = frame_heap_free,
    .allocator_data = NULL,
};

static void frame_budget_init(frame_budget_t *b, size_t packed_len)
{
    memset(b, 0, sizeof *b);
    b->alloc.alloc = frame_budget_alloc;
    b->alloc.free = frame_heap_free;
    b->alloc.allocator_data = b;
    size_t factor = FRAME_PB_BUDGET_FACTOR;
    b->budget = packed_len > (SIZE_MAX - FRAME_PB_BUDGET_BASE) / factor
                    ? SIZE_MAX
                    : packed_len * factor + FRAME_PB_BUDGET_BASE;
}

/* The error of an unpack that returned NULL. */
static int frame_budget_error(const frame_budget_t *b)
{
    if (b->out_of_heap)
        return -ENOMEM;
    if (b->refused)
        return QE_TOO_LARGE;
    return QE_CORRUPT;
}

/* ------------------------------------------------- the BaseCommand wrapper */

/* A BaseCommand is, in all the broker writes and stock clients send, its
 * required type (field 1) and the one message field whose number is that
 * type. protobuf-c packs, sizes, checks, unpacks and frees it by walking all
 * of its ~70 field descriptors: that walk was a third of the loop thread's
 * instructions while creating topics. A command of that plain shape is
 * wrapped and unwrapped here, with protobuf-c doing only the inner message;
 * the bytes are the ones protobuf-c writes (fields in number order). Any
 * other shape (unknown fields, a second message set, repeated fields) takes
 * protobuf-c's generic path. */

/* The message field that type names, or NULL. */
static const ProtobufCFieldDescriptor *type_field(uint64_t type)
{
    if (type < 2 || type > INT32_MAX)
        return NULL;
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
        &pulsar__proto__base_command__descriptor, (unsigned)type);
    return fd && fd->type == PROTOBUF_C_TYPE_MESSAGE ? fd : NULL;
}

static ProtobufCMessage **field_slot(const Pulsar__Proto__BaseCommand *cmd,
                                     const ProtobufCFieldDescriptor *fd)
{
    return (ProtobufCMessage **)((char *)cmd + fd->offset);
}

typedef struct cmd_shape {
    bool plain;                  /* type and its own message only */
    const ProtobufCMessage *sub; /* that message (NULL: a PING/PONG without it) */
    uint32_t field;
    size_t sub_size;
    size_t size; /* of the packed BaseCommand */
} cmd_shape_t;

/* Where BaseCommand's message pointers lie: protoc-c declares them one after
 * the other, so they tile [first, first + n); checked once against the
 * descriptor (plain_layout_ok false: no plain shape, everything generic). */
static struct {
    size_t first, n;
    bool ok;
} plain_layout;

static void plain_layout_init(void)
{
    const ProtobufCMessageDescriptor *d = &pulsar__proto__base_command__descriptor;
    size_t lo = SIZE_MAX, hi = 0, n = 0;
    bool ok = true;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE) {
            ok = ok && f->id == 1; /* type: the one field besides messages */
            continue;
        }
        ok = ok && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->offset % sizeof(void *) == 0;
        lo = f->offset < lo ? f->offset : lo;
        hi = f->offset > hi ? f->offset : hi;
        n++;
    }
    ok = ok && n > 0 && hi - lo == (n - 1) * sizeof(void *);
    plain_layout.first = lo;
    plain_layout.n = n;
    plain_layout.ok = ok;
}

static bool cmd_shape_plain(const Pulsar__Proto__BaseCommand *cmd, cmd_shape_t *s)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, plain_layout_init);
    const ProtobufCFieldDescriptor *fd = type_field((uint64_t)(int64_t)cmd->type);
    if (!fd || cmd->base.n_unknown_fields || !plain_layout.ok)
        return false;
    /* No message set but (at most) the type's own. */
    void *const *ptrs = (void *const *)((const char *)cmd + plain_layout.first);
    size_t set = 0;
    for (size_t i = 0; i < plain_layout.n; i++)
        set += ptrs[i] != NULL;
    if (set != (*field_slot(cmd, fd) != NULL))
        return false;
    s->sub = *field_slot(cmd, fd);
    if (s->sub ? !protobuf_c_message_check(s->sub)
               : cmd->type != PULSAR__PROTO__BASE_COMMAND__TYPE__PING &&
                     cmd->type != PULSAR__PROTO__BASE_COMMAND__TYPE__PONG)
        return false;
    s->field = fd->id;
    s->sub_size = s->sub ? protobuf_c_message_get_packed_size(s->sub) : 0;
    s->size = 1 + pb_varint_size((uint64_t)cmd->type);
    if (s->sub)
        s->size +=
            pb_varint_size((uint64_t)s->field << 3 | 2) + pb_varint_size(s->sub_size) + s->sub_size;
    s->plain = true;
    return true;
}

bool frame_command_plain(const Pulsar__Proto__BaseCommand *cmd)
{
    cmd_shape_t s;
    return cmd_shape_plain(cmd, &s);
}

/* Unpacks a plain command: 0 with *out, 1 if data is not of the plain shape
 * (the caller unpacks it generically), or the error. */
static int unpack_plain(frame_budget_t *b, size_t len, const uint8_t *data,
                        Pulsar__Proto__BaseCommand **out)
{
    uint64_t type = 0, key, sub_len = 0;
    bool has_type = false;
    const uint8_t *sub = NULL;
    uint32_t sub_field = 0;
    size_t o = 0;
    while (o < len) {
        size_t n = pb_varint_get(data + o, len - o, &key);
        if (n == 0)
            return 1;
        o += n;
        if (key == (1 << 3 | 0) && !has_type) {
            n = pb_varint_get(data + o, len - o, &type);
            has_type = true;
        } else if ((key & 7) == 2 && key >> 3 > 1 && key >> 3 <= UINT32_MAX && !sub) {
            n = pb_varint_get(data + o, len - o, &sub_len);
            if (n == 0 || sub_len > len - o - n)
                return 1;
            sub = data + o + n;
            sub_field = (uint32_t)(key >> 3);
            n += (size_t)sub_len;
        } else {
            return 1;
        }
        if (n == 0)
            return 1;
        o += n;
    }
    const ProtobufCFieldDescriptor *fd = has_type ? type_field(type) : NULL;
    if (!fd || (sub && sub_field != fd->id))
        return 1;
    Pulsar__Proto__BaseCommand *cmd = b->alloc.alloc(b->alloc.allocator_data, sizeof *cmd);
    if (!cmd)
        return frame_budget_error(b);
    pulsar__proto__base_command__init(cmd);
    cmd->type = (Pulsar__Proto__BaseCommand__Type)type;
    if (sub) {
        ProtobufCMessage *m =
            protobuf_c_message_unpack(fd->descriptor, &b->alloc, (size_t)sub_len, sub);
        if (!m) {
            free(cmd);
            return frame_budget_error(b);
        }
        *field_slot(cmd, fd) = m;
    }
    *out = cmd;
    return 0;
}

/* ---------------------------------------------------------------- decoding */

int frame_peek_size(const uint8_t *buf, size_t len, size_t max_frame_bytes, size_t *need)
{
    if (len < 4) {
        /* The smallest total these first bytes allow: if even that is too
         * large (a TLS record, "GET "), say so now instead of waiting. */
        uint64_t min_total = 0;
        for (size_t i = 0; i < 4; i++)
            min_total = min_total << 8 | (i < len ? buf[i] : 0);
        return min_total > max_frame_bytes ? QE_TOO_LARGE : QE_AGAIN;
    }
    uint32_t total = frame_rd32(buf);
    if (total > max_frame_bytes)
        return QE_TOO_LARGE;
    if (total < 5) /* cmdSize (4) + at least one byte of command */
        return QE_CORRUPT;
    *need = 4 + (size_t)total;
    return 0;
}

/* Checks that the field named by cmd->type is set (field numbers equal type
 * values in BaseCommand). */
static int frame_check_type(const Pulsar__Proto__BaseCommand *cmd)
{
    const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(
        &pulsar__proto__base_command__descriptor, (unsigned)cmd->type);
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE)
        return QE_INVALID;
    const void *sub = *(const void *const *)((const char *)cmd + fd->offset);
    if (sub)
        return 0;
    /* CommandPing/Pong have no fields: tolerate a client that omits them. */
    if (cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__PING ||
        cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__PONG)
        return 0;
    return QE_INVALID;
}

/* Parses the payload part p[0..n) of a SEND/MESSAGE frame into f. */
static int frame_decode_payload(const uint8_t *p, size_t n, frame_t *f)
{
    if (n >= 2 && frame_rd16(p) == FRAME_MAGIC_BROKER_ENTRY_METADATA) {
        if (n < 6)
            return QE_CORRUPT;
        uint32_t bem = frame_rd32(p + 2);
        if (bem > n - 6)
            return QE_CORRUPT;
        f->broker_entry_metadata = p + 6;
        f->broker_entry_metadata_len = bem;
        p += 6 + (size_t)bem;
        n -= 6 + (size_t)bem;
    }
    f->payload = p;
    f->payload_len = n;
    if (n >= 2 && frame_rd16(p) == FRAME_MAGIC_CRC32C) {
        if (n < FRAME_CHECKSUM_BLOCK_BYTES)
            return QE_CORRUPT;
        uint32_t want = frame_rd32(p + 2);
        p += FRAME_CHECKSUM_BLOCK_BYTES;
        n -= FRAME_CHECKSUM_BLOCK_BYTES;
        f->has_checksum = true;
        f->checksum_ok = crc32c(0, p, n) == want;
    }
    if (n < 4)
        return QE_CORRUPT;
    uint32_t meta = frame_rd32(p);
    if (meta == 0 || meta > n - 4)
        return QE_CORRUPT;
    return 0;
}

/* Decodes a frame whose [total][cmdSize][command] bytes are head[0..head_len)
 * and whose payload part is rest[0..rest_len): the sizes are already checked. */
static int frame_decode_parts(const uint8_t *head, size_t head_len, const uint8_t *rest,
                              size_t rest_len, frame_t *out)
{
    size_t cmd_size = head_len - FRAME_PREFIX_BYTES;
    frame_t f = {.frame_len = head_len + rest_len};
    frame_budget_t b;
    frame_budget_init(&b, cmd_size);
    int prc = unpack_plain(&b, cmd_size, head + FRAME_PREFIX_BYTES, &f.cmd);
    if (prc < 0)
        return prc;
    f.cmd_plain = prc == 0;
    if (prc == 1) {
        f.cmd = pulsar__proto__base_command__unpack(&b.alloc, cmd_size, head + FRAME_PREFIX_BYTES);
        if (!f.cmd)
            return frame_budget_error(&b);
    }
    int rc = frame_check_type(f.cmd);
    if (rc == 0) {
        if (f.cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__SEND ||
            f.cmd->type == PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE)
            rc = frame_decode_payload(rest, rest_len, &f);
        else if (rest_len != 0)
            rc = QE_CORRUPT;
    }
    if (rc != 0) {
        frame_free(&f);
        return rc;
    }
    *out = f;
    return 0;
}

int frame_decode(const uint8_t *buf, size_t len, size_t max_frame_bytes, frame_t *out,
                 size_t *consumed)
{
    size_t need = 0;
    *consumed = 0;
    int rc = frame_peek_size(buf, len, max_frame_bytes, &need);
    if (rc != 0)
        return rc;
    if (len >= FRAME_PREFIX_BYTES) {
        /* Reject an impossible cmdSize before waiting for the rest. */
        uint32_t cmd_size = frame_rd32(buf + 4);
        if (cmd_size == 0 || cmd_size > need - FRAME_PREFIX_BYTES)
            return QE_CORRUPT;
    }
    if (len < need)
        return QE_AGAIN;
    size_t head_len = FRAME_PREFIX_BYTES + frame_rd32(buf + 4);
    rc = frame_decode_parts(buf, head_len, buf + head_len, need - head_len, out);
    if (rc == 0)
        *consumed = need;
    return rc;
}

int frame_head_size(const uint8_t *buf, size_t len, size_t max_frame_bytes, size_t *head_len)
{
    size_t need = 0;
    int rc = frame_peek_size(buf, len, max_frame_bytes, &need);
    if (rc != 0)
        return rc;
    if (len < FRAME_PREFIX_BYTES)
        return QE_AGAIN;
    uint32_t cmd_size = frame_rd32(buf + 4);
    if (cmd_size == 0 || cmd_size > need - FRAME_PREFIX_BYTES)
        return QE_CORRUPT;
    *head_len = FRAME_PREFIX_BYTES + (size_t)cmd_size;
    return 0;
}

int frame_decode_split(const uint8_t *head, size_t head_len, const uint8_t *rest, size_t rest_len,
                       size_t max_frame_bytes, frame_t *out)
{
    size_t hl = 0, need = 0;
    int rc = frame_head_size(head, head_len, max_frame_bytes, &hl);
    if (rc == 0)
        rc = frame_peek_size(head, head_len, max_frame_bytes, &need);
    if (rc != 0)
        return rc;
    if (hl != head_len || need != head_len + rest_len)
        return QE_CORRUPT;
    return frame_decode_parts(head, head_len, rest, rest_len, out);
}

void frame_free(frame_t *f)
{
    if (f->cmd && f->cmd_plain) {
        const ProtobufCFieldDescriptor *fd = type_field((uint64_t)(int64_t)f->cmd->type);
        if (fd && *field_slot(f->cmd, fd))
            protobuf_c_message_free_unpacked(*field_slot(f->cmd, fd), &frame_plain_allocator);
        free(f->cmd);
    } else if (f->cmd) {
        pulsar__proto__base_command__free_unpacked(f->cmd, &frame_plain_allocator);
    }
    memset(f, 0, sizeof *f);
}

/* Finds the metadata of a stored slice: *meta_at = offset of metaSize. */
static int frame_locate_metadata(const uint8_t *s, size_t len, size_t *meta_at, size_t *meta_len)
{
    size_t o = 0;
    if (len - o >= 2 && frame_rd16(s + o) == FRAME_MAGIC_BROKER_ENTRY_METADATA) {
        if (len - o < 6)
            return QE_CORRUPT;
        uint32_t bem = frame_rd32(s + o + 2);
        if (bem > len - o - 6)
            return QE_CORRUPT;
        o += 6 + (size_t)bem;
    }
    if (len - o >= 2 && frame_rd16(s + o) == FRAME_MAGIC_CRC32C) {
        if (len - o < FRAME_CHECKSUM_BLOCK_BYTES)
            return QE_CORRUPT;
        o += FRAME_CHECKSUM_BLOCK_BYTES;
    }
    if (len - o < 4)
        return QE_CORRUPT;
    uint32_t meta = frame_rd32(s + o);
    if (meta == 0 || meta > len - o - 4)
        return QE_CORRUPT;
    *meta_at = o;
    *meta_len = meta;
    return 0;
}

int frame_parse_metadata(const uint8_t *slice, size_t len, Pulsar__Proto__MessageMetadata **md,
                         size_t *payload_offset)
{
    size_t at = 0, meta = 0;
    int rc = frame_locate_metadata(slice, len, &at, &meta);
    if (rc != 0)
        return rc;
    frame_budget_t b;
    frame_budget_init(&b, meta);
    Pulsar__Proto__MessageMetadata *m =
        pulsar__proto__message_metadata__unpack(&b.alloc, meta, slice + at + 4);
    if (!m)
        return frame_budget_error(&b);
    *md = m;
    *payload_offset = at + 4 + meta;
    return 0;
}

/* MessageMetadata's fields frame_scan_metadata reads (PulsarApi.proto). */
enum {
    MD_PRODUCER_NAME = 1,
    MD_SEQUENCE_ID = 2,
    MD_PUBLISH_TIME = 3,
    MD_PARTITION_KEY = 6,
    MD_NUM_MESSAGES_IN_BATCH = 11,
    MD_PARTITION_KEY_B64_ENCODED = 17,
    MD_ORDERING_KEY = 18,
    MD_DELIVER_AT_TIME = 19,
};

int frame_scan_metadata(const uint8_t *slice, size_t len, frame_meta_scan_t *out)
{
    size_t at = 0, meta = 0;
    int rc = frame_locate_metadata(slice, len, &at, &meta);
    if (rc != 0)
        return rc;
    const uint8_t *p = slice + at + 4;
    *out = (frame_meta_scan_t){.num_messages = 1};
    bool has_name = false, has_seq = false, has_time = false;
    size_t o = 0;
    while (o < meta) {
        pb_field_t f;
        if (!pb_field_next(p, meta, &o, &f))
            return QE_CORRUPT;
        uint32_t field = f.number;
        uint64_t v = f.v;
        const uint8_t *bytes = f.bytes;
        /* the fields read must have their own wire type; the others are
         * skipped unchecked (the entry goes out as it was sent either way) */
        bool want_len =
            field == MD_PRODUCER_NAME || field == MD_PARTITION_KEY || field == MD_ORDERING_KEY;
        bool want_varint = field == MD_SEQUENCE_ID || field == MD_PUBLISH_TIME ||
                           field == MD_NUM_MESSAGES_IN_BATCH ||
                           field == MD_PARTITION_KEY_B64_ENCODED || field == MD_DELIVER_AT_TIME;
        if ((want_len && f.wire != PB_WIRE_LEN) || (want_varint && f.wire != PB_WIRE_VARINT))
            return QE_CORRUPT;
        switch (field) { /* a field given twice: the last one counts, as in protobuf */
        case MD_PRODUCER_NAME:
            has_name = true;
            break;
        case MD_SEQUENCE_ID:
            has_seq = true;
            break;
        case MD_PUBLISH_TIME:
            has_time = true;
            out->publish_time = v;
            break;
        case MD_PARTITION_KEY:
            out->has_partition_key = true;
            out->partition_key = bytes;
            out->partition_key_len = (size_t)v;
            break;
        case MD_NUM_MESSAGES_IN_BATCH:
            out->num_messages_in_batch = (int32_t)(uint32_t)v;
            out->has_num_messages_in_batch = true;
            break;
        case MD_PARTITION_KEY_B64_ENCODED:
            out->partition_key_b64_encoded = v != 0;
            break;
        case MD_ORDERING_KEY:
            out->has_ordering_key = true;
            out->ordering_key = bytes;
            out->ordering_key_len = (size_t)v;
            break;
        case MD_DELIVER_AT_TIME:
            out->has_deliver_at_time = true;
            out->deliver_at_time = (int64_t)v;
            break;
        default:
            break;
        }
    }
    if (!has_name || !has_seq || !has_time)
        return QE_CORRUPT; /* required, as protobuf-c's unpack checks */
    out->num_messages = out->has_num_messages_in_batch && out->num_messages_in_batch > 0
                            ? out->num_messages_in_batch
                            : 1;
    out->payload_offset = at + 4 + meta;
    return 0;
}

void frame_metadata_free(Pulsar__Proto__MessageMetadata *md)
{
    if (md)
        pulsar__proto__message_metadata__free_unpacked(md, &frame_plain_allocator);
}

int frame_verify_checksum(const uint8_t *slice, size_t len)
{
    size_t o = 0;
    if (len >= 2 && frame_rd16(slice) == FRAME_MAGIC_BROKER_ENTRY_METADATA) {
        if (len < 6 || frame_rd32(slice + 2) > len - 6)
            return QE_CORRUPT;
        o = 6 + (size_t)frame_rd32(slice + 2);
    }
    if (len - o < 2 || frame_rd16(slice + o) != FRAME_MAGIC_CRC32C)
        return QE_NOT_FOUND;
    if (len - o < FRAME_CHECKSUM_BLOCK_BYTES)
        return QE_CORRUPT;
    uint32_t want = frame_rd32(slice + o + 2);
    o += FRAME_CHECKSUM_BLOCK_BYTES;
    return crc32c(0, slice + o, len - o) == want ? 1 : 0;
}

/* ---------------------------------------------------------------- encoding */

/* Packed size of a command whose required fields are all set, or 0; *s says
 * how command_pack packs it. */
static size_t frame_checked_size(const Pulsar__Proto__BaseCommand *cmd, cmd_shape_t *s)
{
    if (cmd && cmd_shape_plain(cmd, s))
        return s->size;
    s->plain = false;
    if (!cmd || !protobuf_c_message_check(&cmd->base) || frame_check_type(cmd) != 0)
        return 0;
    return pulsar__proto__base_command__get_packed_size(cmd);
}

static size_t command_pack(const Pulsar__Proto__BaseCommand *cmd, const cmd_shape_t *s,
                           uint8_t *out)
{
    if (!s->plain)
        return pulsar__proto__base_command__pack(cmd, out);
    size_t o = 0;
    out[o++] = 1 << 3 | 0;
    o += pb_varint_put(out + o, (uint64_t)cmd->type);
    if (s->sub) {
        o += pb_varint_put(out + o, (uint64_t)s->field << 3 | 2);
        o += pb_varint_put(out + o, s->sub_size);
        o += protobuf_c_message_pack(s->sub, out + o);
    }
    return o;
}

int frame_encode_command(const Pulsar__Proto__BaseCommand *cmd, qbuf_t **out)
{
    cmd_shape_t shape;
    size_t size = frame_checked_size(cmd, &shape);
    if (size == 0)
        return QE_INVALID;
    if (size > QBUF_MAX - FRAME_PREFIX_BYTES)
        return QE_TOO_LARGE;
    qbuf_t *b = qbuf_new(FRAME_PREFIX_BYTES + size);
    if (!b)
        return -ENOMEM;
    frame_wr32(b->data, (uint32_t)(4 + size));
    frame_wr32(b->data + 4, (uint32_t)size);
    size_t packed = command_pack(cmd, &shape, b->data + FRAME_PREFIX_BYTES);
    if (packed != size) {
        qbuf_unref(b);
        return QE_INVALID;
    }
    b->len = (uint32_t)(FRAME_PREFIX_BYTES + size);
    *out = b;
    return 0;
}

static bool frame_stored_has_checksum(const uint8_t *stored, size_t stored_len)
{
    return stored && stored_len >= 2 && frame_rd16(stored) == FRAME_MAGIC_CRC32C;
}

size_t frame_message_header_size(const Pulsar__Proto__BaseCommand *cmd, size_t bem_len,
                                 const uint8_t *stored, size_t stored_len)
{
    cmd_shape_t shape;
    size_t n = FRAME_PREFIX_BYTES + (cmd_shape_plain(cmd, &shape)
                                         ? shape.size
                                         : pulsar__proto__base_command__get_packed_size(cmd));
    if (bem_len > 0)
        n += 6 + bem_len;
    if (!frame_stored_has_checksum(stored, stored_len))
        n += FRAME_CHECKSUM_BLOCK_BYTES;
    return n;
}

int frame_encode_message_header_bem(const Pulsar__Proto__BaseCommand *cmd, const uint8_t *bem,
                                    size_t bem_len, const uint8_t *stored, size_t stored_len,
                                    uint8_t *hdr, size_t hdr_cap, size_t *hdr_len)
{
    cmd_shape_t shape;
    size_t size = frame_checked_size(cmd, &shape);
    if (size == 0 || !stored || stored_len < 4 || (bem_len > 0 && !bem))
        return QE_INVALID;
    if (frame_rd16(stored) == FRAME_MAGIC_BROKER_ENTRY_METADATA)
        return QE_INVALID;
    bool add_crc = !frame_stored_has_checksum(stored, stored_len);
    if (!add_crc && stored_len < FRAME_CHECKSUM_BLOCK_BYTES + 4)
        return QE_INVALID;
    if (bem_len > UINT32_MAX || stored_len > UINT32_MAX)
        return QE_TOO_LARGE;
    size_t n = FRAME_PREFIX_BYTES + size + (bem_len > 0 ? 6 + bem_len : 0) +
               (add_crc ? FRAME_CHECKSUM_BLOCK_BYTES : 0);
    if (n > hdr_cap)
        return QE_TOO_LARGE;
    uint64_t total = (uint64_t)n - 4 + stored_len;
    if (total > UINT32_MAX)
        return QE_TOO_LARGE;

    frame_wr32(hdr, (uint32_t)total);
    frame_wr32(hdr + 4, (uint32_t)size);
    size_t o = FRAME_PREFIX_BYTES;
    o += command_pack(cmd, &shape, hdr + o);
    if (bem_len > 0) {
        frame_wr16(hdr + o, FRAME_MAGIC_BROKER_ENTRY_METADATA);
        frame_wr32(hdr + o + 2, (uint32_t)bem_len);
        memcpy(hdr + o + 6, bem, bem_len);
        o += 6 + bem_len;
    }
    if (add_crc) {
        frame_wr16(hdr + o, FRAME_MAGIC_CRC32C);
        frame_wr32(hdr + o + 2, crc32c(0, stored, stored_len));
        o += FRAME_CHECKSUM_BLOCK_BYTES;
    }
    if (o != n)
        return QE_INVALID;
    *hdr_len = n;
    return 0;
}

int frame_encode_message_header(const Pulsar__Proto__BaseCommand *cmd, const uint8_t *stored,
                                size_t stored_len, uint8_t *hdr, size_t hdr_cap, size_t *hdr_len)
{
    return frame_encode_message_header_bem(cmd, NULL, 0, stored, stored_len, hdr, hdr_cap, hdr_len);
}

int frame_encode_payload(const Pulsar__Proto__BaseCommand *cmd,
                         const Pulsar__Proto__MessageMetadata *md, const uint8_t *payload,
                         size_t payload_len, bool with_checksum, qbuf_t **out)
{
    cmd_shape_t shape;
    size_t size = frame_checked_size(cmd, &shape);
    if (size == 0 || !md || !protobuf_c_message_check(&md->base) || (payload_len && !payload))
        return QE_INVALID;
    size_t meta = pulsar__proto__message_metadata__get_packed_size(md);
    size_t crc_block = with_checksum ? FRAME_CHECKSUM_BLOCK_BYTES : 0;
    if (payload_len > QBUF_MAX || meta > QBUF_MAX)
        return QE_TOO_LARGE;
    size_t n = FRAME_PREFIX_BYTES + size + crc_block + 4 + meta + payload_len;
    if (n > QBUF_MAX)
        return QE_TOO_LARGE;
    qbuf_t *b = qbuf_new(n);
    if (!b)
        return -ENOMEM;
    uint8_t *p = b->data;
    frame_wr32(p, (uint32_t)(n - 4));
    frame_wr32(p + 4, (uint32_t)size);
    size_t o = FRAME_PREFIX_BYTES + command_pack(cmd, &shape, p + FRAME_PREFIX_BYTES);
    size_t crc_at = o;
    o += crc_block;
    frame_wr32(p + o, (uint32_t)meta);
    o += 4;
    o += pulsar__proto__message_metadata__pack(md, p + o);
    if (payload_len)
        memcpy(p + o, payload, payload_len);
    o += payload_len;
    if (with_checksum) {
        frame_wr16(p + crc_at, FRAME_MAGIC_CRC32C);
        frame_wr32(p + crc_at + 2, crc32c(0, p + crc_at + 6, o - crc_at - 6));
    }
    if (o != n) {
        qbuf_unref(b);
        return QE_INVALID;
    }
    b->len = (uint32_t)n;
    *out = b;
    return 0;
}
