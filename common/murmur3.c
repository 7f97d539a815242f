/*
 * murmur3.c — MurmurHash3 x86_32 (see murmur3.h).
 *
 * Body: 4-byte little-endian blocks mixed into h1; tail: the last 1..3 bytes
 * mixed as one partial block; finalisation: length xor and fmix32. Blocks are
 * read with memcpy, so unaligned input and strict aliasing are safe.
 */
#include "common/murmur3.h"

#include <string.h>

static inline uint32_t murmur3_rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static inline uint32_t murmur3_fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

uint32_t murmur3_x86_32(const void *data, size_t len, uint32_t seed)
{
    const uint8_t *p = data;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h1 = seed;
    size_t nblocks = len / 4;

    for (size_t i = 0; i < nblocks; i++) {
        uint8_t b[4];
        memcpy(b, p + i * 4, 4);
        uint32_t k1 =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        k1 *= c1;
        k1 = murmur3_rotl32(k1, 15);
        k1 *= c2;
        h1 ^= k1;
        h1 = murmur3_rotl32(h1, 13);
        h1 = h1 * 5 + 0xe6546b64u;
    }

    const uint8_t *tail = p + nblocks * 4;
    uint32_t k1 = 0;
    switch (len & 3) {
    case 3:
        k1 ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        k1 ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        k1 ^= tail[0];
        k1 *= c1;
        k1 = murmur3_rotl32(k1, 15);
        k1 *= c2;
        h1 ^= k1;
    }

    h1 ^= (uint32_t)len;
    return murmur3_fmix32(h1);
}
