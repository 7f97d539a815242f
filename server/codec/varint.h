/*
 * varint.h — protobuf base-128 varints, for the messages written or read by
 * hand (the BaseCommand wrapper in frame.c, quire-perf's
 * SingleMessageMetadata).
 */
#ifndef QUIRE_SERVER_CODEC_VARINT_H
#define QUIRE_SERVER_CODEC_VARINT_H

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

#endif
