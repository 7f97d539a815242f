/*
 * varint.h — protobuf base-128 varints and fields, for the messages written or
 * read by hand (the BaseCommand wrapper and the metadata scan in frame.c,
 * quire-perf's SingleMessageMetadata).
 */
#ifndef QUIRE_SERVER_CODEC_VARINT_H
#define QUIRE_SERVER_CODEC_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline size_t pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v at p (up to 10 bytes); returns the bytes written. */
static inline size_t pb_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads a varint from p[0..len): the bytes it takes, or 0 if it is cut short
 * or longer than 10 bytes. */
static inline size_t pb_varint_get(const uint8_t *p, size_t len, uint64_t *v)
{
    uint64_t r = 0;
    for (size_t i = 0; i < len && i < 10; i++) {
        r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *v = r;
            return i + 1;
        }
    }
    return 0;
}

enum { PB_WIRE_VARINT = 0, PB_WIRE_FIXED64 = 1, PB_WIRE_LEN = 2, PB_WIRE_FIXED32 = 5 };

/* One field of a protobuf message. */
typedef struct pb_field {
    uint32_t number, wire; /* PB_WIRE_* */
    uint64_t v;            /* a varint's value; a length-delimited field's length */
    const uint8_t *bytes;  /* a length-delimited field's bytes, else NULL */
} pb_field_t;

/* Reads the field at p[*o..len) into *f and moves *o past it (fixed-size
 * values are skipped, not read). False if it is cut short, its number is
 * beyond 32 bits, or its wire type is a group's (none in Pulsar's messages).
 * Number 0, which protobuf forbids, is read as any other field: protobuf-c's
 * unpack skips it too when its key takes more than one byte, so whatever that
 * unpack reads, this reads. */
static inline bool pb_field_next(const uint8_t *p, size_t len, size_t *o, pb_field_t *f)
{
    uint64_t key;
    size_t n = pb_varint_get(p + *o, len - *o, &key), h;
    if (n == 0 || key >> 3 > UINT32_MAX)
        return false;
    *o += n;
    f->number = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    f->v = 0;
    f->bytes = NULL;
    switch (f->wire) {
    case PB_WIRE_VARINT:
        n = pb_varint_get(p + *o, len - *o, &f->v);
        break;
    case PB_WIRE_FIXED64:
        n = len - *o >= 8 ? 8 : 0;
        break;
    case PB_WIRE_FIXED32:
        n = len - *o >= 4 ? 4 : 0;
        break;
    case PB_WIRE_LEN:
        h = pb_varint_get(p + *o, len - *o, &f->v);
        if (h == 0 || f->v > len - *o - h)
            return false;
        f->bytes = p + *o + h;
        n = h + (size_t)f->v;
        break;
    default:
        return false;
    }
    if (n == 0)
        return false;
    *o += n;
    return true;
}

#endif
