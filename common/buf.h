/*
 * buf.h — reference-counted byte buffers shared between a frame, a cache and
 * many consumers without copying.
 *
 * A qbuf_t is one allocation: header + bytes. qbuf_new returns it with one
 * reference, owned by the caller. Whoever keeps a pointer beyond the call that
 * handed it over takes a reference (qbuf_ref) and drops it with qbuf_unref; the
 * last unref frees. The count is atomic, so a buffer may be released on another
 * thread (the journal thread, a reader thread) than the loop that made it.
 * The bytes are not locked: by convention a buffer is immutable once shared.
 */
#ifndef QUIRE_COMMON_BUF_H
#define QUIRE_COMMON_BUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qbuf {
    atomic_uint refs;
    uint32_t len; /* bytes in data[] that are valid */
    uint32_t cap; /* bytes allocated for data[] */
    uint32_t pad;
    uint8_t data[];
} qbuf_t;

/* A new buffer of cap bytes with len = 0 and one reference; NULL if out of memory
 * or cap exceeds QBUF_MAX. */
#define QBUF_MAX (1u << 30)
qbuf_t *qbuf_new(size_t cap);
/* A new buffer holding a copy of len bytes of src (len = cap). */
qbuf_t *qbuf_copy(const void *src, size_t len);

static inline qbuf_t *qbuf_ref(qbuf_t *b)
{
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}
/* Drops one reference; frees on the last. NULL is ignored. */
void qbuf_unref(qbuf_t *b);

#endif
