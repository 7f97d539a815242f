/*
 * idx_summary.c — encoding and checking of index summaries (idx_summary.h).
 */
#include "storage/bookie/idx_summary.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/entry_log.h"

void idx_summary_name(uint32_t log_id, char *out, size_t len)
{
    snprintf(out, len, "%08" PRIx32 ".sum", log_id);
}

int idx_summary_encode(const idx_summary_t *s, uint8_t **out, size_t *len)
{
    size_t n = IDX_SUMMARY_HEADER_BYTES + (size_t)s->nledgers * IDX_SUMMARY_LEDGER_BYTES +
               (size_t)s->nruns * IDX_SUMMARY_RUN_BYTES + 4;
    uint8_t *b = calloc(1, n), *p = b;
    if (!b)
        return -ENOMEM;
    put_le32(p, IDX_SUMMARY_MAGIC);
    put_le32(p + 4, s->log_id);
    put_le64(p + 8, s->idx_size);
    put_le64(p + 16, s->log_size);
    put_le32(p + 24, s->nledgers);
    put_le32(p + 28, s->nruns);
    memcpy(p + 32, s->last_record, sizeof s->last_record);
    p += IDX_SUMMARY_HEADER_BYTES;
    for (uint32_t i = 0; i < s->nledgers; i++, p += IDX_SUMMARY_LEDGER_BYTES) {
        put_le64(p, (uint64_t)s->ledgers[i].id);
        put_le64(p + 8, s->ledgers[i].bytes);
    }
    for (uint32_t i = 0; i < s->nruns; i++, p += IDX_SUMMARY_RUN_BYTES) {
        put_le64(p, (uint64_t)s->runs[i].ledger_id);
        put_le64(p + 8, (uint64_t)s->runs[i].first);
        put_le64(p + 16, s->runs[i].pos);
        put_le32(p + 24, s->runs[i].count);
        put_le32(p + 28, s->runs[i].max_length);
    }
    put_le32(p, crc32c(0, b, n - 4));
    *out = b;
    *len = n;
    return 0;
}

void idx_summary_free(idx_summary_t *s)
{
    free(s->ledgers);
    free(s->runs);
    s->ledgers = NULL;
    s->runs = NULL;
    s->nledgers = s->nruns = 0;
}

static int bad(const char **why, const char *reason)
{
    *why = reason;
    return QE_CORRUPT;
}

int idx_summary_decode(const uint8_t *buf, size_t len, uint32_t log_id, idx_summary_t *s,
                       const char **why)
{
    *s = (idx_summary_t){0};
    if (len < IDX_SUMMARY_HEADER_BYTES + 4)
        return bad(why, "too short");
    if (crc32c(0, buf, len - 4) != get_le32(buf + len - 4))
        return bad(why, "checksum mismatch");
    if (get_le32(buf) != IDX_SUMMARY_MAGIC)
        return bad(why, "bad magic");
    if (get_le32(buf + 4) != log_id)
        return bad(why, "written for another log");
    s->log_id = log_id;
    s->idx_size = get_le64(buf + 8);
    s->log_size = get_le64(buf + 16);
    uint32_t nl = get_le32(buf + 24), nr = get_le32(buf + 28);
    memcpy(s->last_record, buf + 32, sizeof s->last_record);
    if (s->idx_size % ELOG_IDX_RECORD_BYTES)
        return bad(why, "covers part of an idx record");
    if ((len - IDX_SUMMARY_HEADER_BYTES - 4) !=
        (uint64_t)nl * IDX_SUMMARY_LEDGER_BYTES + (uint64_t)nr * IDX_SUMMARY_RUN_BYTES)
        return bad(why, "counts do not match its length");
    s->ledgers = nl ? calloc(nl, sizeof *s->ledgers) : NULL;
    s->runs = nr ? calloc(nr, sizeof *s->runs) : NULL;
    if ((nl && !s->ledgers) || (nr && !s->runs)) {
        idx_summary_free(s);
        return -ENOMEM;
    }
    const uint8_t *p = buf + IDX_SUMMARY_HEADER_BYTES;
    for (uint32_t i = 0; i < nl; i++, p += IDX_SUMMARY_LEDGER_BYTES)
        s->ledgers[i] = (idx_sum_ledger_t){(int64_t)get_le64(p), get_le64(p + 8)};
    s->nledgers = nl;
    s->nruns = nr;
    for (uint32_t i = 0; i < nr; i++, p += IDX_SUMMARY_RUN_BYTES) {
        idx_sum_run_t *r = &s->runs[i];
        *r = (idx_sum_run_t){(int64_t)get_le64(p), (int64_t)get_le64(p + 8), get_le64(p + 16),
                             get_le32(p + 24), get_le32(p + 28)};
        /* In the covered prefix, whole records, entry ids that do not wrap. */
        if (r->count == 0 || r->first < 0 || r->first > INT64_MAX - (int64_t)r->count ||
            r->pos % ELOG_IDX_RECORD_BYTES || r->pos > s->idx_size ||
            (s->idx_size - r->pos) / ELOG_IDX_RECORD_BYTES < r->count) {
            idx_summary_free(s);
            return bad(why, "a run outside the covered records");
        }
    }
    return 0;
}
