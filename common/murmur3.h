/*
 * murmur3.h — MurmurHash3 x86_32 (Austin Appleby's public-domain algorithm), the
 * hash Pulsar's Key_Shared subscriptions use to place a message key on the
 * 0..65535 hash range.
 *
 * murmur3_x86_32 is the reference function over bytes (little-endian blocks),
 * so its values equal the reference implementation's and Java's
 * Murmur3_32Hash for the same bytes and seed. Pure, thread-safe, no allocation.
 */
#ifndef QUIRE_COMMON_MURMUR3_H
#define QUIRE_COMMON_MURMUR3_H

#include <stddef.h>
#include <stdint.h>

/* The 32-bit MurmurHash3 of len bytes at data (data may be NULL when len is 0). */
uint32_t murmur3_x86_32(const void *data, size_t len, uint32_t seed);

/* Pulsar's sticky-key hash: murmur3_x86_32(key, len, 0) & 0x7fffffff. The
 * Key_Shared slot is this value % 65536 (see PROTOCOL-NOTES.md). */
static inline uint32_t murmur3_key_hash(const void *key, size_t len)
{
    return murmur3_x86_32(key, len, 0) & 0x7fffffffu;
}

#endif
