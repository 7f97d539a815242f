/* hist.c — see hist.h. */
#include "common/hist.h"

#include <string.h>

void hist_init(hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

unsigned hist_bucket(uint64_t v)
{
    if (v < HIST_SUB_COUNT)
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
    unsigned shift = msb - HIST_SUB_BITS;
    unsigned sub = (unsigned)(v >> shift) & (HIST_SUB_COUNT - 1);
    return (shift + 1) * HIST_SUB_COUNT + sub;
}

uint64_t hist_bucket_min(unsigned i)
{
    if (i < HIST_SUB_COUNT)
        return i;
    unsigned shift = i / HIST_SUB_COUNT - 1;
    return ((uint64_t)HIST_SUB_COUNT | (i % HIST_SUB_COUNT)) << shift;
}

uint64_t hist_bucket_max(unsigned i)
{
    if (i < HIST_SUB_COUNT)
        return i;
    unsigned shift = i / HIST_SUB_COUNT - 1;
    uint64_t sub = i % HIST_SUB_COUNT;
    uint64_t base = ((uint64_t)HIST_SUB_COUNT | sub) << shift;
    return base + ((1ull << shift) - 1);
}

void hist_record(hist_t *h, uint64_t v)
{
    h->counts[hist_bucket(v)]++;
    h->total++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t hist_percentile(const hist_t *h, double p)
{
    if (h->total == 0)
        return 0;
    uint64_t rank = (uint64_t)((p / 100.0) * (double)h->total + 0.5);
    if (rank < 1)
        rank = 1;
    if (rank > h->total)
        rank = h->total;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t u = hist_bucket_max(i);
            return u > h->max ? h->max : u;
        }
    }
    return h->max;
}

double hist_mean(const hist_t *h)
{
    return h->total ? h->sum / (double)h->total : 0.0;
}

void hist_merge(hist_t *dst, const hist_t *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
    dst->total += src->total;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}
