/*
 * ring.h — growing a ring buffer (an array used circularly from *head).
 *
 * ring_grow moves the count elements of a full or partial ring, oldest first,
 * into a new array of new_cap elements starting at index 0, frees the old one
 * and sets *head = 0. The caller decides the new capacity and its bound.
 * Returns 0, or -ENOMEM with the ring unchanged.
 */
#ifndef QUIRE_COMMON_RING_H
#define QUIRE_COMMON_RING_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline int ring_grow(void **items, size_t elem, size_t *head, size_t count, size_t *cap,
                            size_t new_cap)
{
    char *n = malloc(new_cap * elem);
    if (!n)
        return -ENOMEM;
    if (count) {
        const char *old = *items;
        size_t first = *cap - *head < count ? *cap - *head : count; /* up to the array's end */
        memcpy(n, old + *head * elem, first * elem);
        memcpy(n + first * elem, old, (count - first) * elem);
    }
    free(*items);
    *items = n;
    *head = 0;
    *cap = new_cap;
    return 0;
}

#endif
