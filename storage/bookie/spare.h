/*
 * spare.h — journal files and direct entry logs zeroed before they are
 * needed (docs/bookie.md, "Zeroed spare files"; private to storage/bookie/).
 *
 * An fdatasync after a write into blocks that are already written and inside
 * the file's size is one cache flush; after a write that extends the file or
 * fills a preallocated (unwritten) extent, the file system writes its
 * metadata too, a second device write before the flush, on every group. So
 * the bk-zero thread writes zeros (O_DIRECT) into one spare file per kind,
 * <dir>/spare.zero (SPARE_FILE_NAME), up to a target of what the bookie is
 * expected to write in that kind soon (its recent rate for SPARE_AHEAD_S
 * seconds, at most the kind's file size), at most rate_bytes_per_s, and
 * **only while the bookie is idle** (nothing written for idle_us, 1 s):
 * zeros written beside the bookie's groups have to be flushed by the groups'
 * own fdatasyncs (the likely mechanism), and on the benchmark VM zeroing
 * under load stalled (c) for 34-44 ms in two runs of four (docs/performance.md,
 * session 26). Zeros are synced every SPARE_BURST_BYTES, so that a burst of
 * adds after an idle time finds at most that much left to flush. The journal
 * and the direct log take the spare when they roll, and roll early to it when
 * their writes are past their file's zeroed bytes and the spare holds
 * SPARE_EARLY_MIN_BYTES (or a whole file) of synced zeros.
 */
#ifndef QUIRE_STORAGE_BOOKIE_SPARE_H
#define QUIRE_STORAGE_BOOKIE_SPARE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum spare_kind { SPARE_JOURNAL, SPARE_DIRECT, SPARE_KINDS } spare_kind_t;

/* Seconds of a kind's recent write rate a spare is zeroed for. */
#define SPARE_AHEAD_S 30
/* Zeros written per O_DIRECT write. */
#define SPARE_CHUNK_BYTES (256u << 10)
/* Zeros are synced every this many bytes. */
#define SPARE_BURST_BYTES (4u << 20)
/* A file is rolled early to a spare only if the spare holds this many
 * synced zeros (or a whole file): fewer, larger files at low rates. */
#define SPARE_EARLY_MIN_BYTES (64ull << 20)

typedef struct spare_config {
    const char *dir[SPARE_KINDS]; /* the directory of each kind's files */
    uint64_t size[SPARE_KINDS];   /* a whole file of the kind: the most zeroed */
    uint64_t rate_bytes_per_s;    /* zeroing rate */
    uint64_t idle_us;             /* zeros only after this long without a write */
} spare_config_t;

typedef struct spares spares_t;

#define SPARE_FILE_NAME "spare.zero"

/* Removes dir's spare left by an earlier run (at open, whatever the rate). */
void spares_remove_left(const char *dir);
/* Starts the bk-zero thread (rate_bytes_per_s > 0). 0 or a negative code. */
int spares_start(const spare_config_t *cfg, spares_t **out);
/* Joins the thread and removes the spares not taken. NULL is a no-op. */
void spares_stop(spares_t *s);

/* Any thread: bytes the bookie wrote to files of kind k (its rate). */
void spares_note_written(spares_t *s, spare_kind_t k, uint64_t bytes);
/* While paused (the disk at its usage mark) spares are removed, none made. */
void spares_set_paused(spares_t *s, bool paused);
/* The spare of kind k has a whole file or at least SPARE_EARLY_MIN_BYTES of
 * synced zeros: worth rolling to before the current file is full. */
bool spares_ready(spares_t *s, spare_kind_t k);
/* Renames the spare of kind k to path and returns its zeroed bytes in *zeroed
 * (durable zeros from offset 0; the rest of the file is absent); the caller
 * opens path and fsyncs the directory. 0, or -ENOENT (no spare with zeros:
 * the caller creates its file as before), or -errno. */
int spares_take(spares_t *s, spare_kind_t k, const char *path, uint64_t *zeroed);

/* A file the bookie removes offered as the spare of kind k, instead of
 * freeing its blocks: an entry log GC removes (nothing live in it, or
 * compacted, once the reads holding it are done), or a journal file a
 * checkpoint trims (a journal of format 3 only: its records are valid only in
 * the file they were written to, so what the old file held never replays; a
 * direct log's records are found by reference and checksum). Its blocks were
 * written and synced long ago: a write over them needs no metadata at its
 * fdatasync, as over zeros, without writing any. Taken (renamed to the
 * spare's name, its written length counted as zeroed: up to its first hole
 * or unwritten extent, SEEK_HOLE) only when kind k has no spare file at all,
 * the spares are not paused, its directory takes O_DIRECT and the file is no
 * larger than a file of the kind, with at least a chunk written. 0 (the file
 * is the spare now), or -EBUSY / -errno (the caller frees it as before). */
int spares_offer(spares_t *s, spare_kind_t k, const char *path);

typedef struct spare_stats {
    uint64_t zeroed_bytes; /* zeros written, all kinds */
    uint64_t taken[SPARE_KINDS];
    uint64_t reused[SPARE_KINDS]; /* files removed, kept as spares (spares_offer) */
} spare_stats_t;
void spares_get_stats(spares_t *s, spare_stats_t *out);

#endif
