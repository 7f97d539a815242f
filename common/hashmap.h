/*
 * hashmap.h — open-addressing hash maps for the loop thread's registries
 * (topics by name, producers and consumers by id).
 *
 * qmap_t maps strings (copied on insert, freed on remove) to pointers;
 * qmap64_t maps 64-bit integers to pointers. Values are borrowed: the map never
 * frees them. Not thread-safe (loop thread only). Iteration order is
 * unspecified; removing the current key while iterating is allowed.
 */
#ifndef QUIRE_COMMON_HASHMAP_H
#define QUIRE_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qmap qmap_t;
typedef struct qmap qmap64_t;

typedef struct qmap_iter {
    size_t pos;
} qmap_iter_t;

qmap_t *qmap_new(void);
void qmap_free(qmap_t *m);
void *qmap_get(const qmap_t *m, const char *key);
/* Inserts or replaces; 0 or -ENOMEM. */
int qmap_put(qmap_t *m, const char *key, void *value);
/* Returns the removed value (NULL if absent). */
void *qmap_remove(qmap_t *m, const char *key);
size_t qmap_size(const qmap_t *m);
/* it = {0} to start; key and value borrowed until the next change. */
bool qmap_next(const qmap_t *m, qmap_iter_t *it, const char **key, void **value);
/* How many times the map's entries moved (it grew, or purged its removed
 * slots). An iteration resumed across a put may skip entries or see them
 * twice only if this changed in between (qmap or qmap64). */
uint32_t qmap_rehashes(const qmap_t *m);

qmap64_t *qmap64_new(void);
/* A map for keys that come in runs of consecutive values, such as stream
 * positions (ledger << 24 | entry) put and removed about in order: each 16
 * consecutive keys sit in neighbouring slots, so such a window is touched a
 * block at a time instead of one cache line per key. Probes stay as short as
 * in qmap64_new's maps (the blocks are spread as single keys are there). */
qmap64_t *qmap64_new_runs(void);
void qmap64_free(qmap64_t *m);
void *qmap64_get(const qmap64_t *m, uint64_t key);
int qmap64_put(qmap64_t *m, uint64_t key, void *value);
/* Where key's value is kept, for reading and writing it in place: with create,
 * a new entry holding NULL when absent (NULL only when out of memory); without,
 * NULL when absent. Valid until the next put, slot or remove on m. */
void **qmap64_slot(qmap64_t *m, uint64_t key, bool create);
void *qmap64_remove(qmap64_t *m, uint64_t key);
size_t qmap64_size(const qmap64_t *m);
bool qmap64_next(const qmap64_t *m, qmap_iter_t *it, uint64_t *key, void **value);

#endif
