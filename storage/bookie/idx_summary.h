/*
 * idx_summary.h — index summaries: what an entry log's .idx says, in runs
 * (private to storage/bookie/).
 *
 * Rebuilding the index at open from every .idx record is O(entries): 1.2 s
 * for 22 million small entries (4.4 GB of logs), growing with the data kept.
 * So <id>.sum is written next to <id>.idx: by the flush when it retires the
 * log it appends to, from the runs it noted while appending (entry_log.c,
 * in append order: a re-add in the same log comes after what it replaces),
 * and at a clean close for each .idx that grew since its last summary, from
 * the runs of the in-memory index that point into it (ledger_index.h). Both
 * carry the bytes per ledger the log holds (for GC).
 * An open applies a valid summary in O(runs) and then reads only the .idx
 * records after the prefix it covers; a log without one (none written yet, a
 * crash since, a damaged file) is read record by record, as before.
 *
 * Why a summary of a prefix stays right: .idx files are only appended to,
 * and a later location of an entry is always after its earlier one (higher
 * log id, or later in the same .idx; entry_log.h). A close's summary holds,
 * for the entries whose newest location then was in its log, that location;
 * a retired log's holds every record's, in order, which applies the same. At
 * open, logs are applied in id order, each summary then its .idx's tail:
 * an entry's newest location overall is either in a summary (it was already
 * the newest at that close) or in a tail, and nothing applied after it can
 * name the same entry. Entries a summary leaves out were newer elsewhere;
 * that newer record is in a later log or later in the same .idx, and wins.
 *
 * <id>.sum (little-endian), written with bk_write_file_atomic:
 *
 *   offset size meaning
 *   0      4    magic 0x31534951 ("QIS1")
 *   4      4    log id
 *   8      8    bytes of <id>.idx covered (a multiple of 32)
 *   16     8    bytes of <id>.log then (the log is never shorter)
 *   24     4    ledgers: L
 *   28     4    runs: R
 *   32     32   the last idx record covered, as in <id>.idx (zero if none):
 *               ties the summary to that file, not to a later one of the
 *               same name (an older binary's GC does not remove summaries,
 *               and log ids can come back after the highest log is removed)
 *   64     16*L per ledger: id (8), bytes of its records in the log (8)
 *   ...    32*R per run: ledger id (8), first entry id (8), byte position of
 *               its first idx record in <id>.idx (8), entries (4), largest
 *               payload (4: of the run's entries, or of its ledger's; at
 *               least theirs, which a read is counted as and checked
 *               against before its idx record is read; ledger_index.h)
 *   ...    4    crc32c of everything before it
 *
 * A summary is used only when its checksum, magic and log id match, its
 * counts fit the file, every run lies inside the covered prefix, the .idx
 * and .log on disk are at least as long as it says and the .idx holds its
 * last record where it says; otherwise it is
 * removed with a warning and the .idx is read whole.
 */
#ifndef QUIRE_STORAGE_BOOKIE_IDX_SUMMARY_H
#define QUIRE_STORAGE_BOOKIE_IDX_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#define IDX_SUMMARY_MAGIC 0x31534951u
#define IDX_SUMMARY_HEADER_BYTES 64u
#define IDX_SUMMARY_LEDGER_BYTES 16u
#define IDX_SUMMARY_RUN_BYTES 32u

typedef struct idx_sum_ledger {
    int64_t id;
    uint64_t bytes;
} idx_sum_ledger_t;

typedef struct idx_sum_run {
    int64_t ledger_id;
    int64_t first;
    uint64_t pos;
    uint32_t count;
    uint32_t max_length;
} idx_sum_run_t;

typedef struct idx_summary {
    uint32_t log_id;
    uint64_t idx_size, log_size;
    uint8_t last_record[32]; /* ELOG_IDX_RECORD_BYTES */
    idx_sum_ledger_t *ledgers;
    uint32_t nledgers;
    idx_sum_run_t *runs;
    uint32_t nruns;
} idx_summary_t;

/* Encodes s into a new buffer (*out, *len; the caller frees it). 0 or -ENOMEM. */
int idx_summary_encode(const idx_summary_t *s, uint8_t **out, size_t *len);
/* Decodes and checks buf (the whole file) for log_id; s's arrays are new
 * (idx_summary_free). 0, or QE_CORRUPT with *why set to a short reason, or
 * -ENOMEM. */
int idx_summary_decode(const uint8_t *buf, size_t len, uint32_t log_id, idx_summary_t *s,
                       const char **why);
void idx_summary_free(idx_summary_t *s);

/* The file's name for log id: "<8 hex digits>.sum" (out of at least 13 bytes). */
void idx_summary_name(uint32_t log_id, char *out, size_t len);

#endif
