/*
 * crc32c.c — CRC-32C with a hardware path (SSE4.2 crc32 instruction) chosen at
 * first use, and a slicing-by-8 table path. Polynomial 0x82F63B78 (reflected).
 *
 * The crc32 instruction takes 3 cycles and the next one needs its result, so
 * one stream runs at a third of what the CPU can do. The hardware path runs
 * three streams at once over three consecutive blocks, then joins them: the
 * CRC register (without the inversions) is linear, so the register after
 * blocks A then B is the register after A times x^(8|B|) mod P, xor B's
 * register from zero. The multiplication by a fixed x^(8n) is four table
 * lookups (shift tables, built at first use by GF(2) arithmetic). Blocks of
 * CRC_LONG bytes, then CRC_SHORT, then one stream for the rest.
 */
#include "common/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&table_once, table_init);
    const uint8_t *p = buf;
    crc = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

#define CRC_LONG 8192u /* bytes per stream: 24 KiB per round */
#define CRC_SHORT 256u /* 768 bytes per round */

static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

/* a * b mod P, both reflected (bit 31 is the coefficient of x^0). */
static uint32_t gf_mul(uint32_t a, uint32_t b)
{
    uint32_t p = 0;
    for (uint32_t m = 1u << 31; m; m >>= 1) {
        if (a & m)
            p ^= b;
        b = (b & 1) ? (b >> 1) ^ POLY : b >> 1; /* b *= x */
    }
    return p;
}

/* t[k][v] = (v << 8k) * x^(8n) mod P: what n zero bytes do to a register. */
static void shift_table(uint32_t t[4][256], size_t n)
{
    uint32_t op = 1u << 31; /* x^0 */
    for (size_t i = 0; i < 8 * n; i++)
        op = (op & 1) ? (op >> 1) ^ POLY : op >> 1;
    for (uint32_t k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++)
            t[k][v] = gf_mul(op, v << (8 * k));
}

static void shift_init(void)
{
    shift_table(shift_long, CRC_LONG);
    shift_table(shift_short, CRC_SHORT);
}

static inline uint64_t shift(const uint32_t t[4][256], uint64_t c)
{
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][(c >> 24) & 0xff];
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Three streams over rounds of 3 * n bytes; returns the register and
 * advances *pp and *lenp past the rounds done. */
__attribute__((target("sse4.2"))) static uint64_t
crc_rounds(uint64_t c0, const uint8_t **pp, size_t *lenp, size_t n, const uint32_t t[4][256])
{
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len >= 3 * n) {
        uint64_t c1 = 0, c2 = 0;
        for (const uint8_t *end = p + n; p < end; p += 8) {
            c0 = _mm_crc32_u64(c0, load64(p));
            c1 = _mm_crc32_u64(c1, load64(p + n));
            c2 = _mm_crc32_u64(c2, load64(p + 2 * n));
        }
        c0 = shift(t, c0) ^ c1;
        c0 = shift(t, c0) ^ c2;
        p += 2 * n;
        len -= 3 * n;
    }
    *pp = p;
    *lenp = len;
    return c0;
}

/* crc_rounds that also stores each word it reads at the same place of dst. */
__attribute__((target("sse4.2"))) static uint64_t crc_rounds_copy(uint64_t c0, uint8_t **dp,
                                                                  const uint8_t **pp, size_t *lenp,
                                                                  size_t n,
                                                                  const uint32_t t[4][256])
{
    const uint8_t *p = *pp;
    uint8_t *d = *dp;
    size_t len = *lenp;
    while (len >= 3 * n) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < n; i += 8) {
            uint64_t w0 = load64(p + i), w1 = load64(p + n + i), w2 = load64(p + 2 * n + i);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            memcpy(d + i, &w0, 8);
            memcpy(d + n + i, &w1, 8);
            memcpy(d + 2 * n + i, &w2, 8);
        }
        c0 = shift(t, c0) ^ c1;
        c0 = shift(t, c0) ^ c2;
        p += 3 * n;
        d += 3 * n;
        len -= 3 * n;
    }
    *pp = p;
    *dp = d;
    *lenp = len;
    return c0;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_copy_hw(uint32_t crc, void *dst,
                                                                 const void *src, size_t len)
{
    const uint8_t *p = src;
    uint8_t *d = dst;
    uint64_t c = (uint32_t)~crc;
    if (len >= 3 * CRC_SHORT) {
        pthread_once(&shift_once, shift_init);
        c = crc_rounds_copy(c, &d, &p, &len, CRC_LONG, shift_long);
        c = crc_rounds_copy(c, &d, &p, &len, CRC_SHORT, shift_short);
    }
    while (len >= 8) {
        uint64_t w = load64(p);
        c = _mm_crc32_u64(c, w);
        memcpy(d, &w, 8);
        p += 8;
        d += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--) {
        c32 = _mm_crc32_u8(c32, *p);
        *d++ = *p++;
    }
    return ~c32;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *buf,
                                                            size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = (uint32_t)~crc;
    if (len >= 3 * CRC_SHORT) {
        pthread_once(&shift_once, shift_init);
        c = crc_rounds(c, &p, &len, CRC_LONG, shift_long);
        c = crc_rounds(c, &p, &len, CRC_SHORT, shift_short);
    }
    while (len >= 8) {
        c = _mm_crc32_u64(c, load64(p));
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    if (len >= 4) { /* the tail of a 28-byte .idx record: one step, not four */
        uint32_t w;
        memcpy(&w, p, 4);
        c32 = _mm_crc32_u32(c32, w);
        p += 4;
        len -= 4;
    }
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    static int have_hw = -1;
    if (have_hw < 0)
        have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    return have_hw ? crc32c_hw(crc, buf, len) : crc32c_sw(crc, buf, len);
}

uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    static int have_hw = -1;
    if (have_hw < 0)
        have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    if (have_hw)
        return crc32c_copy_hw(crc, dst, src, len);
    memcpy(dst, src, len);
    return crc32c_sw(crc, dst, len);
}
#else
uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    return crc32c_sw(crc, buf, len);
}

uint32_t crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    return crc32c_sw(crc, dst, len);
}
#endif
