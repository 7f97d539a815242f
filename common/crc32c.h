/*
 * crc32c.h — CRC-32C (Castagnoli), as Pulsar frames and our disk records use it.
 *
 * crc32c(0, buf, n) is the checksum of buf; crc32c(c, more, m) extends a running
 * checksum c, so crc32c(crc32c(0, a, n), b, m) == crc32c of a||b. Uses the SSE4.2
 * instruction when the CPU has it, a table otherwise; both give the same values.
 */
#ifndef QUIRE_COMMON_CRC32C_H
#define QUIRE_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* Copies len bytes of src to dst (not overlapping) and returns crc32c(crc,
 * src, len): one pass over the bytes instead of a memcpy and a checksum. */
uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);
/* The table version, exported so tests can compare both paths. */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
