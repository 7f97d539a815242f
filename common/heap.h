/*
 * heap.h — what the allocator holds, and giving freed memory back.
 *
 * The quire binary is linked with jemalloc (docs/dependencies.md); tests and
 * sanitizer builds run on glibc's malloc. Which one is in use is found at run
 * time: jemalloc's mallctl, if the process has it, else glibc's mallinfo2 and
 * malloc_trim. Both walk the allocator's state under its locks: for a metrics
 * scrape or a quiet moment, never the data path.
 */
#ifndef QUIRE_COMMON_HEAP_H
#define QUIRE_COMMON_HEAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct qheap_stats {
    const char *allocator; /* "jemalloc", "glibc" */
    size_t in_use;         /* allocated by the program */
    size_t free_kept;      /* resident in the allocator but not allocated */
} qheap_stats_t;

/* false when the allocator tells nothing (neither of the two). */
bool qheap_stats(qheap_stats_t *out);

/* Gives freed memory back to the system (jemalloc: purges every arena; glibc:
 * malloc_trim). Returns true if the allocator did something. */
bool qheap_release(void);

#endif
