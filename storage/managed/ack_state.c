/*
 * ack_state.c — a cursor's acknowledgement state as a pure data structure:
 * the mark-delete position M, the individually acknowledged ranges after it,
 * and the batch-index bitsets of partly acknowledged entries (Pulsar's
 * markDeletePosition, individualDeletedMessages, batchDeletedIndexes).
 *
 * Ranges are closed intervals [first, last] of positions. Whether two
 * positions are adjacent is asked of the ledger list (ml_list_next), since
 * ledger ids jump: (L1, 9) and (L2, 0) are adjacent when L1 ends at entry 9
 * and no non-empty ledger lies between. After every change M advances over a
 * range that starts at next(M), so ranges never touch M (managed_int.h,
 * invariant 3). Bitsets use Pulsar's ack_set convention: bit i set = batch
 * index i still unacknowledged; acknowledging ANDs, and an all-zero result
 * acknowledges the entry.
 *
 * Bounds: ranges_max ranges and as many bitsets in memory (QE_BUSY past it:
 * the ack is dropped, the entry will be redelivered), ML_ACK_SET_WORDS_MAX
 * words per bitset. The encoding (below) keeps the oldest
 * ML_CURSOR_RANGES_MAX ranges, so a restart may redeliver, never lose.
 *
 * Encoding, little-endian (also in docs/managed-ledger.md):
 *
 *   offset      size  meaning
 *   0           4     magic "QCUR"
 *   4           1     format version (1)
 *   5           3     reserved, 0
 *   8           8     mark-delete ledger id
 *   16          8     mark-delete entry id
 *   24          4     R: number of ranges (<= ML_CURSOR_RANGES_MAX)
 *   28          4     B: number of bitsets (<= ML_CURSOR_RANGES_MAX)
 *   32          32*R  ranges: first ledger, first entry, last ledger, last entry
 *   ...         var   B bitsets: ledger (8), entry (8), words W (4), 0 (4), W*8
 *   end-4       4     CRC-32C of every byte before it
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

#define ACK_MAGIC 0x52554351u /* "QCUR" little-endian */
#define ACK_VERSION 1u
#define ACK_HEADER_BYTES 32u
#define ACK_RANGE_BYTES 32u
#define ACK_BITSET_HEADER_BYTES 24u

/* ------------------------------------------------------------ basics -- */

void ml_ack_init(ml_ack_state_t *st, const ml_ledger_list_t *ledgers, ml_pos_t mark_delete)
{
    memset(st, 0, sizeof *st);
    st->mark_delete = mark_delete;
    st->ranges_max = ML_ACK_RANGES_MEM_MAX;
    st->ledgers = ledgers;
}

static void batches_clear(ml_ack_state_t *st)
{
    for (size_t i = 0; i < st->nbatches; i++)
        free(st->batches[i].bits);
    st->nbatches = 0;
}

void ml_ack_free(ml_ack_state_t *st)
{
    batches_clear(st);
    free(st->batches);
    free(st->ranges);
    st->batches = NULL;
    st->ranges = NULL;
    st->nranges = st->ranges_cap = st->batches_cap = 0;
}

/* Index of the first range whose last >= pos. */
static size_t range_lower_bound(const ml_ack_state_t *st, ml_pos_t pos)
{
    size_t lo = 0, hi = st->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ml_pos_cmp(st->ranges[mid].last, pos) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the first bitset whose pos >= pos. */
static size_t batch_lower_bound(const ml_ack_state_t *st, ml_pos_t pos)
{
    size_t lo = 0, hi = st->nbatches;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ml_pos_cmp(st->batches[mid].pos, pos) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool ml_ack_is_acked(const ml_ack_state_t *st, ml_pos_t pos)
{
    if (ml_pos_cmp(pos, st->mark_delete) <= 0)
        return true;
    size_t i = range_lower_bound(st, pos);
    return i < st->nranges && ml_pos_cmp(st->ranges[i].first, pos) <= 0;
}

static void ranges_remove(ml_ack_state_t *st, size_t i, size_t k)
{
    assert(i + k <= st->nranges);
    ml_move(st->ranges + i, st->ranges + i + k, (st->nranges - i - k) * sizeof *st->ranges);
    st->nranges -= k;
}

static int ranges_insert(ml_ack_state_t *st, size_t i, ml_ack_range_t r)
{
    if (st->nranges >= st->ranges_max) {
        log_warn("managed", "cursor ack ranges full (%zu): ack of %lld:%lld dropped",
                 st->ranges_max, (long long)r.first.ledger_id, (long long)r.first.entry_id);
        return QE_BUSY;
    }
    if (st->nranges == st->ranges_cap) {
        size_t cap = st->ranges_cap ? st->ranges_cap * 2 : 16;
        ml_ack_range_t *v = realloc(st->ranges, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        st->ranges = v;
        st->ranges_cap = cap;
    }
    ml_move(st->ranges + i + 1, st->ranges + i, (st->nranges - i) * sizeof *st->ranges);
    st->ranges[i] = r;
    st->nranges++;
    return 0;
}

static void batch_remove(ml_ack_state_t *st, size_t i)
{
    free(st->batches[i].bits);
    ml_move(st->batches + i, st->batches + i + 1, (st->nbatches - i - 1) * sizeof *st->batches);
    st->nbatches--;
}

/* Drops bitsets of positions <= M. */
static void batches_drop_through_md(ml_ack_state_t *st)
{
    size_t k = 0;
    while (k < st->nbatches && ml_pos_cmp(st->batches[k].pos, st->mark_delete) <= 0)
        free(st->batches[k++].bits);
    ml_move(st->batches, st->batches + k, (st->nbatches - k) * sizeof *st->batches);
    st->nbatches -= k;
}

/* M advances over every range starting at (or before) next(M). */
static void advance_mark_delete(ml_ack_state_t *st)
{
    size_t k = 0;
    while (k < st->nranges) {
        ml_pos_t nx = ml_list_next(st->ledgers, st->mark_delete);
        if (ml_pos_cmp(st->ranges[k].first, nx) > 0)
            break;
        if (ml_pos_cmp(st->ranges[k].last, st->mark_delete) > 0)
            st->mark_delete = st->ranges[k].last;
        k++;
    }
    ranges_remove(st, 0, k);
    batches_drop_through_md(st);
    assert(st->nranges == 0 || ml_pos_cmp(st->ranges[0].first, st->mark_delete) > 0);
}

/* ------------------------------------------------------------- acks -- */

int ml_ack_one(ml_ack_state_t *st, ml_pos_t pos)
{
    if (ml_ack_is_acked(st, pos))
        return 0;
    size_t i = range_lower_bound(st, pos);
    bool with_prev =
        i > 0 && ml_pos_cmp(ml_list_next(st->ledgers, st->ranges[i - 1].last), pos) == 0;
    bool with_next =
        i < st->nranges && ml_pos_cmp(ml_list_next(st->ledgers, pos), st->ranges[i].first) == 0;
    int rc = 0;
    if (with_prev && with_next) {
        st->ranges[i - 1].last = st->ranges[i].last;
        ranges_remove(st, i, 1);
    } else if (with_prev) {
        st->ranges[i - 1].last = pos;
    } else if (with_next) {
        st->ranges[i].first = pos;
    } else {
        rc = ranges_insert(st, i, (ml_ack_range_t){pos, pos});
        if (rc < 0)
            return rc;
    }
    size_t b = batch_lower_bound(st, pos);
    if (b < st->nbatches && ml_pos_cmp(st->batches[b].pos, pos) == 0)
        batch_remove(st, b);
    advance_mark_delete(st);
    assert(ml_ack_is_acked(st, pos));
    return 0;
}

static bool words_all_zero(const uint64_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i])
            return false;
    return true;
}

int ml_ack_batch(ml_ack_state_t *st, ml_pos_t pos, const uint64_t *words, size_t n)
{
    if (ml_ack_is_acked(st, pos))
        return 0;
    if (!words || words_all_zero(words, n))
        return ml_ack_one(st, pos);
    if (n > ML_ACK_SET_WORDS_MAX) {
        log_warn("managed", "ack set of %zu words refused (max %d)", n, ML_ACK_SET_WORDS_MAX);
        return QE_TOO_LARGE;
    }
    while (n > 0 && words[n - 1] == 0)
        n--;
    size_t b = batch_lower_bound(st, pos);
    if (b < st->nbatches && ml_pos_cmp(st->batches[b].pos, pos) == 0) {
        ml_batch_ack_t *ba = &st->batches[b];
        if (ba->words > n)
            ba->words = (uint32_t)n;
        for (size_t i = 0; i < ba->words; i++)
            ba->bits[i] &= words[i];
        if (words_all_zero(ba->bits, ba->words))
            return ml_ack_one(st, pos);
        return 0;
    }
    if (st->nbatches >= st->ranges_max) {
        log_warn("managed", "cursor batch ack sets full (%zu)", st->ranges_max);
        return QE_BUSY;
    }
    if (st->nbatches == st->batches_cap) {
        size_t cap = st->batches_cap ? st->batches_cap * 2 : 8;
        ml_batch_ack_t *v = realloc(st->batches, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        st->batches = v;
        st->batches_cap = cap;
    }
    uint64_t *bits = malloc(n * sizeof *bits);
    if (!bits)
        return -ENOMEM;
    memcpy(bits, words, n * sizeof *bits);
    ml_move(st->batches + b + 1, st->batches + b, (st->nbatches - b) * sizeof *st->batches);
    st->batches[b] = (ml_batch_ack_t){.pos = pos, .words = (uint32_t)n, .bits = bits};
    st->nbatches++;
    return 0;
}

void ml_ack_cumulative(ml_ack_state_t *st, ml_pos_t pos)
{
    if (ml_pos_cmp(pos, st->mark_delete) <= 0)
        return;
    st->mark_delete = pos;
    size_t k = 0;
    while (k < st->nranges && ml_pos_cmp(st->ranges[k].last, pos) <= 0)
        k++;
    ranges_remove(st, 0, k);
    if (st->nranges > 0 && ml_pos_cmp(st->ranges[0].first, pos) <= 0) {
        st->mark_delete = st->ranges[0].last;
        ranges_remove(st, 0, 1);
    }
    advance_mark_delete(st);
}

void ml_ack_reset(ml_ack_state_t *st, ml_pos_t mark_delete)
{
    st->mark_delete = mark_delete;
    st->nranges = 0;
    batches_clear(st);
}

const uint64_t *ml_ack_bitset(const ml_ack_state_t *st, ml_pos_t pos, size_t *words)
{
    size_t b = batch_lower_bound(st, pos);
    if (b < st->nbatches && ml_pos_cmp(st->batches[b].pos, pos) == 0) {
        *words = st->batches[b].words;
        return st->batches[b].bits;
    }
    *words = 0;
    return NULL;
}

ml_pos_t ml_ack_skip(const ml_ack_state_t *st, ml_pos_t pos)
{
    for (;;) {
        if (ml_pos_cmp(pos, st->mark_delete) <= 0)
            pos = ml_list_next(st->ledgers, st->mark_delete);
        size_t i = range_lower_bound(st, pos);
        if (i >= st->nranges || ml_pos_cmp(st->ranges[i].first, pos) > 0)
            return pos;
        pos = ml_list_next(st->ledgers, st->ranges[i].last);
    }
}

const ml_ack_range_t *ml_ack_range_after(const ml_ack_state_t *st, ml_pos_t pos)
{
    size_t i = range_lower_bound(st, pos);
    while (i < st->nranges && ml_pos_cmp(st->ranges[i].first, pos) <= 0)
        i++;
    return i < st->nranges ? &st->ranges[i] : NULL;
}

uint64_t ml_ack_backlog(const ml_ack_state_t *st, ml_pos_t last)
{
    uint64_t total = ml_list_count(st->ledgers, st->mark_delete, last);
    uint64_t acked = 0;
    for (size_t i = 0; i < st->nranges && ml_pos_cmp(st->ranges[i].first, last) <= 0; i++) {
        ml_pos_t before = {st->ranges[i].first.ledger_id, st->ranges[i].first.entry_id - 1};
        ml_pos_t end = ml_pos_cmp(st->ranges[i].last, last) < 0 ? st->ranges[i].last : last;
        acked += ml_list_count(st->ledgers, before, end);
    }
    return acked >= total ? 0 : total - acked;
}

size_t ml_ack_format_ranges(const ml_ack_state_t *st, char *buf, size_t len)
{
    size_t off = 0;
#define APPEND(...)                                                                                \
    do {                                                                                           \
        if (off < len) {                                                                           \
            int w = snprintf(buf + off, len - off, __VA_ARGS__);                                   \
            off = w < 0 ? len : off + (size_t)w;                                                   \
        }                                                                                          \
    } while (0)
    APPEND("[");
    for (size_t i = 0; i < st->nranges; i++) {
        const ml_ack_range_t *r = &st->ranges[i];
        APPEND("%s(%lld:%lld, %lld:%lld]", i ? ", " : "", (long long)r->first.ledger_id,
               (long long)r->first.entry_id - 1, (long long)r->last.ledger_id,
               (long long)r->last.entry_id);
    }
    APPEND("]");
#undef APPEND
    if (len > 0 && off >= len)
        buf[len - 1] = '\0';
    return st->nranges;
}

/* ----------------------------------------------------- serialization -- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_pos(uint8_t *p, ml_pos_t pos)
{
    put_u64(p, (uint64_t)pos.ledger_id);
    put_u64(p + 8, (uint64_t)pos.entry_id);
}

static ml_pos_t get_pos(const uint8_t *p)
{
    return (ml_pos_t){(int64_t)get_u64(p), (int64_t)get_u64(p + 8)};
}

/* How many ranges and bitsets the encoding keeps, and its size. */
static size_t encode_plan(const ml_ack_state_t *st, size_t *nr, size_t *nb)
{
    *nr = st->nranges < ML_CURSOR_RANGES_MAX ? st->nranges : ML_CURSOR_RANGES_MAX;
    size_t size = ACK_HEADER_BYTES + *nr * ACK_RANGE_BYTES + 4;
    *nb = 0;
    while (*nb < st->nbatches && *nb < ML_CURSOR_RANGES_MAX) {
        size_t add = ACK_BITSET_HEADER_BYTES + st->batches[*nb].words * 8u;
        if (size + add > ML_CURSOR_STATE_BYTES_MAX)
            break;
        size += add;
        (*nb)++;
    }
    return size;
}

size_t ml_ack_encode(const ml_ack_state_t *st, uint8_t *buf, size_t cap)
{
    size_t nr, nb;
    size_t size = encode_plan(st, &nr, &nb);
    if (size > cap)
        return size;
    put_u32(buf, ACK_MAGIC);
    buf[4] = ACK_VERSION;
    buf[5] = buf[6] = buf[7] = 0;
    put_pos(buf + 8, st->mark_delete);
    put_u32(buf + 24, (uint32_t)nr);
    put_u32(buf + 28, (uint32_t)nb);
    uint8_t *p = buf + ACK_HEADER_BYTES;
    for (size_t i = 0; i < nr; i++, p += ACK_RANGE_BYTES) {
        put_pos(p, st->ranges[i].first);
        put_pos(p + 16, st->ranges[i].last);
    }
    for (size_t i = 0; i < nb; i++) {
        const ml_batch_ack_t *b = &st->batches[i];
        put_pos(p, b->pos);
        put_u32(p + 16, b->words);
        put_u32(p + 20, 0);
        p += ACK_BITSET_HEADER_BYTES;
        for (uint32_t w = 0; w < b->words; w++, p += 8)
            put_u64(p, b->bits[w]);
    }
    put_u32(p, crc32c(0, buf, (size_t)(p - buf)));
    assert((size_t)(p + 4 - buf) == size);
    return size;
}

static int decode_ranges(ml_ack_state_t *st, const uint8_t *p, size_t nr)
{
    ml_pos_t prev = st->mark_delete;
    st->ranges = nr ? malloc(nr * sizeof *st->ranges) : NULL;
    if (nr && !st->ranges)
        return -ENOMEM;
    st->ranges_cap = nr;
    for (size_t i = 0; i < nr; i++, p += ACK_RANGE_BYTES) {
        ml_ack_range_t r = {get_pos(p), get_pos(p + 16)};
        if (ml_pos_cmp(r.first, prev) <= 0 || ml_pos_cmp(r.last, r.first) < 0)
            return QE_CORRUPT;
        st->ranges[st->nranges++] = r;
        prev = r.last;
    }
    return 0;
}

static int decode_batches(ml_ack_state_t *st, const uint8_t *p, const uint8_t *end, size_t nb)
{
    st->batches = nb ? calloc(nb, sizeof *st->batches) : NULL;
    if (nb && !st->batches)
        return -ENOMEM;
    st->batches_cap = nb;
    ml_pos_t prev = st->mark_delete;
    for (size_t i = 0; i < nb; i++) {
        if ((size_t)(end - p) < ACK_BITSET_HEADER_BYTES)
            return QE_CORRUPT;
        ml_pos_t pos = get_pos(p);
        uint32_t words = get_u32(p + 16);
        p += ACK_BITSET_HEADER_BYTES;
        if (ml_pos_cmp(pos, prev) <= 0 || words == 0 || words > ML_ACK_SET_WORDS_MAX ||
            (size_t)(end - p) < words * 8u || ml_ack_is_acked(st, pos))
            return QE_CORRUPT;
        uint64_t *bits = malloc(words * sizeof *bits);
        if (!bits)
            return -ENOMEM;
        for (uint32_t w = 0; w < words; w++, p += 8)
            bits[w] = get_u64(p);
        st->batches[st->nbatches++] = (ml_batch_ack_t){pos, words, bits};
        if (words_all_zero(bits, words))
            return QE_CORRUPT;
        prev = pos;
    }
    return p == end ? 0 : QE_CORRUPT;
}

int ml_ack_decode(ml_ack_state_t *st, const uint8_t *buf, size_t len)
{
    if (len < ACK_HEADER_BYTES + 4 || get_u32(buf) != ACK_MAGIC || buf[4] != ACK_VERSION)
        return QE_CORRUPT;
    if (get_u32(buf + len - 4) != crc32c(0, buf, len - 4))
        return QE_CORRUPT;
    size_t nr = get_u32(buf + 24), nb = get_u32(buf + 28);
    if (nr > ML_CURSOR_RANGES_MAX || nb > ML_CURSOR_RANGES_MAX ||
        ACK_HEADER_BYTES + nr * ACK_RANGE_BYTES + 4 > len)
        return QE_CORRUPT;
    ml_ack_state_t tmp;
    ml_ack_init(&tmp, st->ledgers, get_pos(buf + 8));
    tmp.ranges_max = st->ranges_max;
    int rc = decode_ranges(&tmp, buf + ACK_HEADER_BYTES, nr);
    if (rc == 0)
        rc = decode_batches(&tmp, buf + ACK_HEADER_BYTES + nr * ACK_RANGE_BYTES, buf + len - 4, nb);
    if (rc < 0) {
        ml_ack_free(&tmp);
        log_warn("managed", "cursor state rejected: %s", q_strerror(rc));
        return rc;
    }
    ml_ack_free(st);
    *st = tmp;
    advance_mark_delete(st);
    return 0;
}
