/*
 * quire_perf_report.c — the arithmetic and the printing of quire-perf: the
 * fixed-rate schedule, statistics over an interval or a run, the interval
 * line, the final report and its JSON form. No I/O but the FILE given.
 *
 * Latencies are kept in microseconds in common/hist.h histograms (relative
 * error below 0.8%) and printed in milliseconds with three decimals.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "tools/quire_perf.h"

/* ------------------------------------------------------------ pacing */

void perf_pace_init(perf_pace_t *p, uint64_t start_ns, double rate)
{
    p->start_ns = start_ns;
    p->rate = rate;
    p->issued = 0;
}

uint64_t perf_pace_due(const perf_pace_t *p, uint64_t now_ns)
{
    if (p->rate <= 0 || now_ns < p->start_ns)
        return 0;
    /* Messages 0..k are due where k = floor(elapsed * rate). */
    double k = floor((double)(now_ns - p->start_ns) * p->rate / 1e9);
    if (k >= 1.8e19)
        k = 1.8e19;
    uint64_t due = (uint64_t)k + 1;
    return due > p->issued ? due - p->issued : 0;
}

uint64_t perf_pace_sched_ns(const perf_pace_t *p, uint64_t i)
{
    if (p->rate <= 0)
        return p->start_ns;
    return p->start_ns + (uint64_t)ceil((double)i * 1e9 / p->rate);
}

uint64_t perf_pace_wake_ns(const perf_pace_t *p, const perf_batch_t *b, const perf_opts_t *o,
                           uint64_t now_ns)
{
    uint64_t next = perf_pace_sched_ns(p, p->issued);
    if (!b->batching)
        return next > now_ns + PERF_PACE_QUANTUM_NS ? next : now_ns + PERF_PACE_QUANTUM_NS;
    if (b->n == 0)
        return next; /* the first message of the next batch, on time */
    /* Messages until the batch is full: by count, and by bytes at the mean
     * size of those it holds. */
    uint64_t room = o->batch_max_messages > b->n ? o->batch_max_messages - b->n : 1;
    size_t per_msg = b->len / b->n;
    if (per_msg && o->batch_max_bytes > b->len) {
        uint64_t by_bytes = (o->batch_max_bytes - b->len + per_msg - 1) / per_msg;
        if (by_bytes < room)
            room = by_bytes;
    }
    uint64_t fill = perf_pace_sched_ns(p, p->issued + room - 1);
    if (o->batch_max_delay_ms > 0 &&
        fill >= b->first_add_ns + (uint64_t)(o->batch_max_delay_ms * 1e6))
        return 0;
    return fill;
}

/* ------------------------------------------------------------ stats */

void perf_stats_reset(perf_stats_t *s)
{
    s->produced_msgs = s->produced_bytes = 0;
    s->consumed_msgs = s->consumed_bytes = 0;
    s->send_errors = s->checksum_errors = 0;
    hist_init(&s->pub_us);
    hist_init(&s->e2e_us);
    hist_init(&s->late_us);
    hist_init(&s->witness_us);
}

void perf_stats_merge(perf_stats_t *dst, const perf_stats_t *src)
{
    dst->produced_msgs += src->produced_msgs;
    dst->produced_bytes += src->produced_bytes;
    dst->consumed_msgs += src->consumed_msgs;
    dst->consumed_bytes += src->consumed_bytes;
    dst->send_errors += src->send_errors;
    dst->checksum_errors += src->checksum_errors;
    hist_merge(&dst->pub_us, &src->pub_us);
    hist_merge(&dst->e2e_us, &src->e2e_us);
    hist_merge(&dst->late_us, &src->late_us);
    hist_merge(&dst->witness_us, &src->witness_us);
}

/* ------------------------------------------------------------ printing */

static const double percentiles[] = {50, 95, 99, 99.9, 99.99};
static const char *const percentile_names[] = {"p50", "p95", "p99", "p99.9", "p99.99"};
#define N_PERCENTILES 5

static double ms(uint64_t us)
{
    return (double)us / 1000.0;
}

void perf_format_percentiles(char *buf, size_t cap, const hist_t *h)
{
    if (h->total == 0) {
        snprintf(buf, cap, "-");
        return;
    }
    size_t o = 0;
    for (int i = 0; i < N_PERCENTILES && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s %.3f ", percentile_names[i],
                              ms(hist_percentile(h, percentiles[i])));
    if (o < cap)
        snprintf(buf + o, cap - o, "max %.3f", ms(h->max));
}

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0;
}

void perf_format_interval(char *buf, size_t cap, double elapsed_s, double interval_s,
                          const perf_stats_t *iv, perf_mode_t mode, uint64_t pending, bool warmup)
{
    char lat[256];
    size_t o = (size_t)snprintf(buf, cap, "[%7.1fs]%s", elapsed_s, warmup ? " (warm-up)" : "");
    if ((mode & PERF_MODE_PRODUCE) && o < cap) {
        perf_format_percentiles(lat, sizeof lat, &iv->pub_us);
        o += (size_t)snprintf(
            buf + o, cap - o, " prod %.1f msg/s %.2f MB/s pending %llu | pub ms %s",
            per_s(iv->produced_msgs, interval_s), per_s(iv->produced_bytes, interval_s) / 1e6,
            (unsigned long long)pending, lat);
    }
    if ((mode & PERF_MODE_CONSUME) && o < cap) {
        perf_format_percentiles(lat, sizeof lat, &iv->e2e_us);
        o += (size_t)snprintf(buf + o, cap - o, "%s cons %.1f msg/s %.2f MB/s | e2e ms %s",
                              (mode & PERF_MODE_PRODUCE) ? " |" : "",
                              per_s(iv->consumed_msgs, interval_s),
                              per_s(iv->consumed_bytes, interval_s) / 1e6, lat);
    }
    if (iv->late_us.total && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, " | late ms p99 %.3f max %.3f",
                              ms(hist_percentile(&iv->late_us, 99)), ms(iv->late_us.max));
    if (iv->witness_us.total && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, " | witness ms p99 %.3f max %.3f",
                              ms(hist_percentile(&iv->witness_us, 99)), ms(iv->witness_us.max));
    if ((iv->send_errors || iv->checksum_errors) && o < cap)
        snprintf(buf + o, cap - o, " | errors send %llu checksum %llu",
                 (unsigned long long)iv->send_errors, (unsigned long long)iv->checksum_errors);
}

static void print_hist(FILE *f, const char *what, const hist_t *h)
{
    if (h->total == 0) {
        fprintf(f, "  %-22s no samples\n", what);
        return;
    }
    fprintf(f, "  %-22s mean %.3f", what, hist_mean(h) / 1000.0);
    for (int i = 0; i < N_PERCENTILES; i++)
        fprintf(f, "  %s %.3f", percentile_names[i], ms(hist_percentile(h, percentiles[i])));
    fprintf(f, "  max %.3f  (n=%llu)\n", ms(h->max), (unsigned long long)h->total);
}

void perf_print_final(FILE *f, const perf_opts_t *o, const perf_stats_t *t, double d)
{
    fprintf(f,
            "\n==== quire-perf %s: %.1f s measured, %zu topic(s), size %u B, rate %s, "
            "batch %u msgs/%.1f ms, compression %s ====\n",
            o->mode == PERF_MODE_PRODUCE   ? "produce"
            : o->mode == PERF_MODE_CONSUME ? "consume"
                                           : "both",
            d, o->n_topics, o->size_bytes, o->rate > 0 ? "fixed" : "max", o->batch_max_messages,
            o->batch_max_delay_ms, perf_compression_name(o->compression));
    if (o->mode & PERF_MODE_PRODUCE) {
        fprintf(f, "  produced               %llu msgs  %.1f msg/s  %.2f MB/s\n",
                (unsigned long long)t->produced_msgs, per_s(t->produced_msgs, d),
                per_s(t->produced_bytes, d) / 1e6);
        print_hist(f, "publish latency (ms)", &t->pub_us);
    }
    if (o->mode & PERF_MODE_CONSUME) {
        fprintf(f, "  consumed               %llu msgs  %.1f msg/s  %.2f MB/s\n",
                (unsigned long long)t->consumed_msgs, per_s(t->consumed_msgs, d),
                per_s(t->consumed_bytes, d) / 1e6);
        print_hist(f, "end-to-end latency (ms)", &t->e2e_us);
    }
    if (t->late_us.total)
        print_hist(f, "timer lateness (ms)", &t->late_us);
    if (t->witness_us.total)
        print_hist(f, "host witness (ms)", &t->witness_us);
    if (t->send_errors || t->checksum_errors)
        fprintf(f, "  errors                 send %llu  checksum %llu\n",
                (unsigned long long)t->send_errors, (unsigned long long)t->checksum_errors);
}

static void json_hist(FILE *f, const char *name, const hist_t *h)
{
    fprintf(f, "  \"%s\": {\"count\": %llu, \"mean\": %.3f", name, (unsigned long long)h->total,
            h->total ? hist_mean(h) / 1000.0 : 0.0);
    for (int i = 0; i < N_PERCENTILES; i++)
        fprintf(f, ", \"%s\": %.3f", percentile_names[i], ms(hist_percentile(h, percentiles[i])));
    fprintf(f, ", \"max\": %.3f}", ms(h->total ? h->max : 0));
}

int perf_write_json(FILE *f, const perf_opts_t *o, const perf_stats_t *t, double d,
                    double end_unix_s)
{
    fprintf(f, "{\n  \"tool\": \"%s\",\n", PERF_CLIENT_VERSION);
    fprintf(f, "  \"mode\": \"%s\",\n",
            o->mode == PERF_MODE_PRODUCE   ? "produce"
            : o->mode == PERF_MODE_CONSUME ? "consume"
                                           : "both");
    fprintf(f, "  \"topics\": %zu,\n  \"size_bytes\": %u,\n  \"rate\": %.3f,\n", o->n_topics,
            o->size_bytes, o->rate);
    fprintf(f, "  \"batch_max_messages\": %u,\n  \"batch_max_delay_ms\": %.3f,\n",
            o->batch_max_messages, o->batch_max_delay_ms);
    fprintf(f, "  \"compression\": \"%s\",\n  \"duration_s\": %.3f,\n",
            perf_compression_name(o->compression), d);
    if (end_unix_s > 0)
        fprintf(f, "  \"measured_end_unix_s\": %.3f,\n", end_unix_s);
    fprintf(f, "  \"produced_msgs\": %llu,\n  \"produced_bytes\": %llu,\n",
            (unsigned long long)t->produced_msgs, (unsigned long long)t->produced_bytes);
    fprintf(f, "  \"produce_msg_per_s\": %.3f,\n  \"produce_mb_per_s\": %.3f,\n",
            per_s(t->produced_msgs, d), per_s(t->produced_bytes, d) / 1e6);
    fprintf(f, "  \"consumed_msgs\": %llu,\n  \"consumed_bytes\": %llu,\n",
            (unsigned long long)t->consumed_msgs, (unsigned long long)t->consumed_bytes);
    fprintf(f, "  \"consume_msg_per_s\": %.3f,\n  \"consume_mb_per_s\": %.3f,\n",
            per_s(t->consumed_msgs, d), per_s(t->consumed_bytes, d) / 1e6);
    fprintf(f, "  \"send_errors\": %llu,\n  \"checksum_errors\": %llu,\n",
            (unsigned long long)t->send_errors, (unsigned long long)t->checksum_errors);
    json_hist(f, "publish_latency_ms", &t->pub_us);
    fputs(",\n", f);
    json_hist(f, "end_to_end_latency_ms", &t->e2e_us);
    fputs(",\n", f);
    json_hist(f, "timer_lateness_ms", &t->late_us);
    fputs(",\n", f);
    json_hist(f, "witness_lateness_ms", &t->witness_us);
    fputs("\n}\n", f);
    return ferror(f) ? -EIO : 0;
}
