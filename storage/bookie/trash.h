/*
 * trash.h — removed files whose blocks are freed in the background, a step at
 * a time (private to storage/bookie/; docs/bookie.md, "Deletion and garbage collection").
 *
 * Unlinking a file of hundreds of MB frees all its blocks at once, and on a
 * file system mounted with `discard` every freed block is trimmed on the
 * device there and then: everyone's writes and syncs wait meanwhile (a 256-MiB
 * journal file: 69 ms, the journal's fdatasync beside it 64 ms). So the
 * bookie renames such a file to <name>.del (no open loads it, every open
 * deletes what is left) and a background thread cuts it from the end, one
 * step every BK_TRASH_STEP_MS, one file at a time, then unlinks it (without
 * the pauses while a bookie's disk is full: bk_trash_urgent). Used for
 * entry logs GC removes and journal files a checkpoint no longer needs.
 */
#ifndef QUIRE_STORAGE_BOOKIE_TRASH_H
#define QUIRE_STORAGE_BOOKIE_TRASH_H

#include <stdint.h>

/* The name of a removed file while its blocks are freed. */
#define BK_TRASH_SUFFIX ".del"

/* Removes path from its directory now (renamed to path BK_TRASH_SUFFIX; the
 * caller syncs the directory) and frees its blocks in the background. If it
 * cannot be renamed it is unlinked at once. 0, or a negative errno when the
 * file could be neither renamed nor unlinked (logged; it stays). */
int bk_trash(const char *path);

/* Deletes <dir>/<anything><ext>BK_TRASH_SUFFIX: what background removals left
 * at a crash or a stop. At open. */
void bk_trash_sweep(const char *dir, const char *ext);

/* Files (of every bookie of the process) given to bk_trash whose blocks are
 * still being freed. */
uint64_t bk_trash_waiting(void);

/* A bookie whose disk is full (adds refused) adds 1 while it is, and takes it
 * back after: while any is, removed files are freed without pacing (their
 * space matters more than the discard's stall then; at a journal rate of R
 * MB/s the paced removal keeps about R/10 files of 256 MiB waiting). Not while
 * only almost full: a 256-MiB removal at once stalls the journal's syncs (add
 * p99.9 2 -> 8 ms at 50,000 1-KiB adds/s, docs/performance.md session 31). */
void bk_trash_urgent(int delta);
/* The sum of those (tests). */
int bk_trash_urgency(void);

#endif
