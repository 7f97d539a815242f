/* buf.c — see buf.h. */
#include "common/buf.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

qbuf_t *qbuf_new(size_t cap)
{
    if (cap > QBUF_MAX)
        return NULL;
    qbuf_t *b = malloc(sizeof *b + cap);
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    b->len = 0;
    b->cap = (uint32_t)cap;
    b->pad = 0;
    return b;
}

qbuf_t *qbuf_copy(const void *src, size_t len)
{
    qbuf_t *b = qbuf_new(len);
    if (!b)
        return NULL;
    if (len)
        memcpy(b->data, src, len);
    b->len = (uint32_t)len;
    return b;
}

void qbuf_unref(qbuf_t *b)
{
    if (!b)
        return;
    unsigned prev = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel);
    assert(prev > 0);
    if (prev == 1)
        free(b);
}
