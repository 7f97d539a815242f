/*
 * admin_metrics.c — rates from counters, and /metrics in Prometheus text
 * exposition format 0.0.4 with Apache Pulsar's metric names.
 *
 * Rates are never made up: a 1-second ev_timer hears the topics and
 * subscriptions whose counters moved since the previous tick
 * (server/broker_admin.h, broker_admin_traffic_drain), with their values at
 * the previous tick and now, and keeps them in metrics_series.h's windows: a
 * rate is the change over the last 5 s (or since the series began) / the time
 * between those ticks, 0 until two ticks exist. A tick costs O(topics active
 * in the last 5 s): 100,000 topics cost nothing while quiet, with or without
 * clients connected. (Until 2026-11-30 every topic with a client was read
 * every second: 6.5 % of a core with 10,000 idle producers and consumers
 * connected; until 2026-12-01 every series of the window was walked each
 * second.)
 *
 * Rendering takes a snapshot of the views first, then prints each metric
 * family once (# TYPE line, then every sample), as the format requires.
 * Labels: cluster, namespace, topic (full name), subscription, consumer.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin-http/admin_int.h"
#include "admin-http/metrics_series.h"
#include "common/exec.h"
#include "common/hashmap.h"
#include "common/heap.h"
#include "common/log.h"
#include "server/broker_admin.h"

#define METRICS_INTERVAL_S 1.0
/* A scrape takes its snapshot of the topics in steps of about this long, the
 * loop serving its sockets between them: in one go, 100,000 topics took the
 * loop 0.4-2 s (docs/performance.md, session 22). */
#define METRICS_STEP_US 200
/* Scrapes taking their snapshot at once; more are refused (503): each holds
 * a record of every topic (about 40 MB at 100,000 topics). */
#define METRICS_TAKING_MAX 4

struct metrics_job;

struct admin_metrics {
    admin_service_t *a;
    qexec_t *exec; /* renders scrapes off the loop (NULL: on the loop) */
    ev_timer timer;
    mseries_t *series;          /* "topic" or "topic\x1fsub" */
    struct metrics_job *taking; /* scrapes still taking their snapshot (list) */
    uint32_t ntaking;
    uint32_t step_us; /* METRICS_STEP_US; tests set it lower */
};

/* --------------------------------------------------------------- sampling -- */

/* A topic whose counters moved since the previous tick, or a subscription of
 * such a topic. */
static void sample_traffic(const broker_admin_traffic_t *v, void *arg)
{
    admin_metrics_t *m = arg;
    char buf[3 * TOPIC_NAME_MAX];
    const char *key = v->topic;
    if (v->sub) {
        snprintf(buf, sizeof buf, "%s\x1f%s", v->topic, v->sub);
        key = buf;
    }
    if (mseries_report(m->series, key, v->before, v->now) < 0)
        log_warn("admin", "metrics: no memory for the rates of %s", key);
}

/* Each tick hears only what moved (broker_admin_traffic_drain), and forgets
 * what has been flat for the window: O(topics active in the window), in
 * total, whatever the number of topics and of idle clients
 * (metrics_series.h). */
static void metrics_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    admin_metrics_t *m = w->data;
    mseries_tick_begin(m->series, ev_now(loop));
    broker_admin_traffic_drain(m->a->broker, sample_traffic, m);
    mseries_tick_end(m->series);
}

admin_metrics_t *admin_metrics_new(admin_service_t *a)
{
    admin_metrics_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->a = a;
    m->step_us = METRICS_STEP_US;
    m->series = mseries_new();
    if (!m->series) {
        free(m);
        return NULL;
    }
    /* One thread, a few scrapes queued: more are rendered on the loop. */
    m->exec = qexec_new(a->loop, "metrics", 1, 4);
    if (!m->exec)
        log_warn("admin", "metrics: no thread to render scrapes: they run on the loop");
    ev_timer_init(&m->timer, metrics_tick, 0.0, METRICS_INTERVAL_S);
    m->timer.data = m;
    ev_timer_start(a->loop, &m->timer);
    ev_unref(a->loop); /* the sampler alone does not keep the loop running */
    return m;
}

void admin_metrics_topic_rates(admin_metrics_t *m, const char *topic, double *msg_in,
                               double *bytes_in, double *msg_out, double *bytes_out)
{
    double r[4];
    mseries_rates(m ? m->series : NULL, topic, r);
    *msg_in = r[0];
    *bytes_in = r[1];
    *msg_out = r[2];
    *bytes_out = r[3];
}

void admin_metrics_sub_rates(admin_metrics_t *m, const char *topic, const char *sub,
                             double *msg_out, double *bytes_out)
{
    char key[3 * TOPIC_NAME_MAX];
    snprintf(key, sizeof key, "%s\x1f%s", topic, sub);
    double r[4];
    mseries_rates(m ? m->series : NULL, key, r);
    *msg_out = r[2];
    *bytes_out = r[3];
}

/* -------------------------------------------------------------- snapshot -- */

/* Appends name="value" to f with \, " and newline escaped (exposition format). */
static void put_label(FILE *f, const char *name, const char *value)
{
    fputs(name, f);
    fputs("=\"", f);
    const char *p = value ? value : "", *run = p;
    for (; *p; p++) {
        if (*p != '\\' && *p != '"' && *p != '\n')
            continue;
        fwrite(run, 1, (size_t)(p - run), f);
        fputs(*p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", f);
        run = p + 1;
    }
    fwrite(run, 1, (size_t)(p - run), f);
    fputc('"', f);
}

/* The labels of a series, rendered once per topic or subscription (a
 * /metrics with 100 topics printed them some 5,000 times, a character at a
 * time): open ('{' to start the set, ',' to add to it), then name="value"
 * pairs. NULL if out of memory. */
static char *labels_render(char open, int n, const char *const *names, const char *const *values)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    for (int i = 0; i < n; i++) {
        fputc(i == 0 ? open : ',', f);
        put_label(f, names[i], values[i]);
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

typedef struct topic_rec {
    char *name, *ns;
    char *labels; /* {cluster="..",namespace="..",topic=".." escaped, without the closing } */
    uint64_t c[4];
    double r[4];
    uint64_t storage, backlog;
    /* backlog quotas (server/backlog_quota.c) */
    double backlog_size, quota_limit, quota_limit_time, backlog_age, evict_size, evict_time;
    uint32_t producers;
    size_t subs, consumers;
    uint64_t lat[10], size[9]; /* Pulsar's append histograms, per bucket */
    uint64_t lat_count, size_count, size_sum;
    double lat_sum_ms;
} topic_rec_t;

typedef struct sub_rec {
    size_t topic; /* index into topics */
    char *name;
    char *label; /* ,subscription=".." escaped */
    uint64_t backlog, unacked;
    double rate_out, tput_out;
} sub_rec_t;

typedef struct cons_rec {
    size_t sub; /* index into subs */
    char *name;
    uint64_t id;
    int64_t permits;
    uint64_t unacked;
} cons_rec_t;

typedef struct snapshot {
    admin_metrics_t *m;
    topic_rec_t *topics;
    size_t ntopics, captopics;
    sub_rec_t *subs;
    size_t nsubs, capsubs;
    cons_rec_t *cons;
    size_t ncons, capcons;
    bool oom;
    bool topic_level; /* false: topics summed per namespace, no subscriptions */
} snapshot_t;

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

static char *topic_namespace(const char *topic)
{
    const char *p = strstr(topic, "://");
    p = p ? p + 3 : topic;
    const char *slash = strchr(p, '/');
    slash = slash ? strchr(slash + 1, '/') : NULL;
    return slash ? strndup(p, (size_t)(slash - p)) : strdup(p);
}

static void snap_consumer(const broker_admin_consumer_view_t *v, void *arg)
{
    snapshot_t *sn = arg;
    if (!grow((void **)&sn->cons, &sn->capcons, sn->ncons, sizeof *sn->cons)) {
        sn->oom = true;
        return;
    }
    sn->cons[sn->ncons++] = (cons_rec_t){sn->nsubs - 1, strdup(v->name), v->consumer_id,
                                         v->available_permits, v->unacked_messages};
}

static void snap_sub(const broker_admin_subscription_view_t *v, void *arg)
{
    snapshot_t *sn = arg;
    if (!grow((void **)&sn->subs, &sn->capsubs, sn->nsubs, sizeof *sn->subs)) {
        sn->oom = true;
        return;
    }
    const char *topic = sn->topics[sn->ntopics - 1].name;
    sub_rec_t *s = &sn->subs[sn->nsubs++];
    *s = (sub_rec_t){sn->ntopics - 1,
                     strdup(v->name),
                     labels_render(',', 1, (const char *const[]){"subscription"}, &v->name),
                     v->backlog_entries,
                     v->unacked_messages,
                     0,
                     0};
    if (!s->name || !s->label)
        sn->oom = true;
    admin_metrics_sub_rates(sn->m, topic, v->name, &s->rate_out, &s->tput_out);
    broker_admin_consumers(sn->m->a->broker, topic, v->name, snap_consumer, sn);
}

static void snap_topic(const broker_admin_topic_view_t *v, void *arg)
{
    snapshot_t *sn = arg;
    if (!grow((void **)&sn->topics, &sn->captopics, sn->ntopics, sizeof *sn->topics)) {
        sn->oom = true;
        return;
    }
    topic_rec_t *t = &sn->topics[sn->ntopics++];
    memset(t, 0, sizeof *t);
    t->name = strdup(v->name);
    t->ns = topic_namespace(v->name);
    if (t->name && t->ns)
        t->labels = labels_render('{', 3, (const char *const[]){"cluster", "namespace", "topic"},
                                  (const char *const[]){sn->m->a->cluster, t->ns, t->name});
    t->c[0] = v->msg_in;
    t->c[1] = v->bytes_in;
    t->c[2] = v->msg_out;
    t->c[3] = v->bytes_out;
    mseries_rates(sn->m ? sn->m->series : NULL, v->name, t->r);
    t->storage = v->has_ledger ? v->ml.size_bytes : 0;
    t->backlog = v->backlog_entries;
    t->backlog_size = (double)v->backlog_size_bytes;
    t->quota_limit = (double)v->backlog_quota_limit_size;
    t->quota_limit_time = (double)v->backlog_quota_limit_time_s;
    t->backlog_age = v->oldest_backlog_age_s > 0 ? (double)v->oldest_backlog_age_s : 0;
    t->evict_size = (double)v->backlog_evictions_size;
    t->evict_time = (double)v->backlog_evictions_time;
    if (v->write_latency_buckets)
        memcpy(t->lat, v->write_latency_buckets, sizeof t->lat);
    if (v->entry_size_buckets)
        memcpy(t->size, v->entry_size_buckets, sizeof t->size);
    t->lat_count = v->write_latency_count;
    t->lat_sum_ms = v->write_latency_sum_ms;
    t->size_count = v->entry_size_count;
    t->size_sum = v->entry_size_sum;
    t->producers = v->producers;
    t->subs = v->subscriptions;
    t->consumers = v->consumers;
    if (!t->name || !t->ns || !t->labels) {
        sn->oom = true;
        return;
    }
    if (sn->topic_level)
        broker_admin_subscriptions(sn->m->a->broker, v->name, snap_sub, sn);
}

/* exposeTopicLevelMetricsInPrometheus=false: one record per namespace (in the
 * order namespaces first appear), labelled {cluster, namespace}, with the sum
 * of its topics' figures (the largest, for quota limits and backlog age), as
 * Pulsar aggregates them. Returns false when out of memory. */
static bool snapshot_by_namespace(const snapshot_t *sn, const char *cluster, snapshot_t *out)
{
    memset(out, 0, sizeof *out);
    out->topic_level = false;
    qmap_t *index = qmap_new(); /* namespace -> 1 + its record's index */
    bool ok = index != NULL;
    for (size_t i = 0; ok && i < sn->ntopics; i++) {
        const topic_rec_t *t = &sn->topics[i];
        uintptr_t k = (uintptr_t)qmap_get(index, t->ns);
        if (k == 0) {
            ok = grow((void **)&out->topics, &out->captopics, out->ntopics, sizeof *out->topics);
            if (!ok)
                break;
            topic_rec_t *n = &out->topics[out->ntopics];
            memset(n, 0, sizeof *n);
            n->ns = strdup(t->ns);
            n->labels = labels_render('{', 2, (const char *const[]){"cluster", "namespace"},
                                      (const char *const[]){cluster, t->ns});
            out->ntopics++;
            ok = n->ns && n->labels && qmap_put(index, n->ns, (void *)(out->ntopics)) == 0;
            k = out->ntopics;
        }
        if (!ok)
            break;
        topic_rec_t *n = &out->topics[k - 1];
        for (int c = 0; c < 4; c++) {
            n->c[c] += t->c[c];
            n->r[c] += t->r[c];
        }
        n->storage += t->storage;
        n->backlog += t->backlog;
        n->backlog_size += t->backlog_size;
        n->quota_limit = t->quota_limit > n->quota_limit ? t->quota_limit : n->quota_limit;
        n->quota_limit_time =
            t->quota_limit_time > n->quota_limit_time ? t->quota_limit_time : n->quota_limit_time;
        n->backlog_age = t->backlog_age > n->backlog_age ? t->backlog_age : n->backlog_age;
        n->evict_size += t->evict_size;
        n->evict_time += t->evict_time;
        n->producers += t->producers;
        n->subs += t->subs;
        n->consumers += t->consumers;
        for (int b = 0; b < 10; b++)
            n->lat[b] += t->lat[b];
        for (int b = 0; b < 9; b++)
            n->size[b] += t->size[b];
        n->lat_count += t->lat_count;
        n->lat_sum_ms += t->lat_sum_ms;
        n->size_count += t->size_count;
        n->size_sum += t->size_sum;
    }
    qmap_free(index);
    return ok;
}

/* The records taken so far are freed; their arrays stay for more. */
static void snapshot_drop_records(snapshot_t *sn)
{
    for (size_t i = 0; i < sn->ntopics; i++) {
        free(sn->topics[i].name);
        free(sn->topics[i].ns);
        free(sn->topics[i].labels);
    }
    for (size_t i = 0; i < sn->nsubs; i++) {
        free(sn->subs[i].name);
        free(sn->subs[i].label);
    }
    for (size_t i = 0; i < sn->ncons; i++)
        free(sn->cons[i].name);
    sn->ntopics = sn->nsubs = sn->ncons = 0;
}

static void snapshot_free(snapshot_t *sn)
{
    snapshot_drop_records(sn);
    free(sn->topics);
    free(sn->subs);
    free(sn->cons);
}

/* ------------------------------------------------------------- rendering -- */

/* The entry cache: Pulsar's gauge of its size, and counters of what reads
 * found in it (Pulsar publishes rates of these; a counter's rate is the
 * scraper's to take). */
static void render_cache(FILE *f, const char *cl, const ml_cache_info_t *c)
{
    const struct {
        const char *name, *type, *help;
        uint64_t v;
    } rows[] = {
        {"pulsar_ml_cache_used_size", "gauge", "Bytes of entries in the broker's entry cache",
         c->bytes},
        {"quire_ml_cache_entries", "gauge", "Entries in the broker's entry cache", c->entries},
        {"quire_ml_cache_hits_total", "counter", "Entries reads found in the entry cache", c->hits},
        {"quire_ml_cache_hit_bytes_total", "counter", "Bytes of the entries found in the cache",
         c->hit_bytes},
        {"quire_ml_cache_misses_total", "counter",
         "Entries reads did not find in the entry cache (read from ledgers)", c->misses},
        {"quire_ml_cache_miss_bytes_total", "counter", "Bytes of the entries read from ledgers",
         c->miss_bytes},
        {"quire_ml_reads_inflight_bytes", "gauge",
         "Bytes reads from ledgers hold now (reserved or read, not yet handed over)",
         c->reads_bytes},
        {"quire_ml_cache_ttl_extensions_total", "counter",
         "Aged entries kept another managedLedgerCacheEvictionTimeThresholdMillis because a "
         "cursor was still to read them (cacheEvictionByExpectedReadCount)",
         c->extensions},
        {"quire_ml_reads_waiting", "gauge",
         "Reads waiting for managedLedgerMaxReadsInFlightSizeInMB", c->reads_waiting},
        {"quire_ml_reads_waited_total", "counter",
         "Reads that waited for managedLedgerMaxReadsInFlightSizeInMB", c->reads_waited},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s{cluster=\"%s\"} %llu\n", rows[i].name,
                rows[i].help, rows[i].name, rows[i].type, rows[i].name, cl,
                (unsigned long long)rows[i].v);
    fputs("# HELP quire_ml_cache_evictions_total Entries evicted from the entry cache, by why: "
          "size (the bound), read (every reader past it), age (the time threshold)\n"
          "# TYPE quire_ml_cache_evictions_total counter\n",
          f);
    const char *why[] = {"size", "read", "age"};
    uint64_t n[] = {c->evictions_size, c->evictions_read, c->evictions_age};
    for (size_t i = 0; i < 3; i++)
        fprintf(f, "quire_ml_cache_evictions_total{cluster=\"%s\",reason=\"%s\"} %llu\n", cl,
                why[i], (unsigned long long)n[i]);
}

static void topic_labels(FILE *f, const topic_rec_t *t)
{
    fputs(t->labels, f);
}

/* A sample's value: integers (most of them) without printf's float path. */
static void put_value(FILE *f, double v)
{
    if (v == v && v >= -9e15 && v <= 9e15 && v == (double)(long long)v) {
        char buf[24], *p = buf + sizeof buf;
        long long x = (long long)v;
        unsigned long long u = x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
        do
            *--p = (char)('0' + u % 10);
        while (u /= 10);
        if (x < 0)
            *--p = '-';
        fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
    } else {
        fprintf(f, "%.17g", v);
    }
}

/* "} value\n" closing a sample. */
static void put_end(FILE *f, double v)
{
    fputs("} ", f);
    put_value(f, v);
    fputc('\n', f);
}

typedef enum {
    TV_PRODUCERS,
    TV_SUBS,
    TV_CONSUMERS,
    TV_RATE_IN,
    TV_RATE_OUT,
    TV_TPUT_IN,
    TV_TPUT_OUT,
    TV_IN_MSG,
    TV_IN_BYTES,
    TV_OUT_MSG,
    TV_OUT_BYTES,
    TV_STORAGE,
    TV_BACKLOG,
    TV_BACKLOG_SIZE,
    TV_QUOTA_LIMIT,
    TV_QUOTA_LIMIT_TIME,
    TV_BACKLOG_AGE
} topic_value_t;

static double topic_value(const topic_rec_t *t, topic_value_t which)
{
    switch (which) {
    case TV_PRODUCERS:
        return t->producers;
    case TV_SUBS:
        return (double)t->subs;
    case TV_CONSUMERS:
        return (double)t->consumers;
    case TV_RATE_IN:
        return t->r[0];
    case TV_RATE_OUT:
        return t->r[2];
    case TV_TPUT_IN:
        return t->r[1];
    case TV_TPUT_OUT:
        return t->r[3];
    case TV_IN_MSG:
        return (double)t->c[0];
    case TV_IN_BYTES:
        return (double)t->c[1];
    case TV_OUT_MSG:
        return (double)t->c[2];
    case TV_OUT_BYTES:
        return (double)t->c[3];
    case TV_STORAGE:
        return (double)t->storage;
    case TV_BACKLOG:
        return (double)t->backlog;
    case TV_BACKLOG_SIZE:
        return t->backlog_size;
    case TV_QUOTA_LIMIT:
        return t->quota_limit;
    case TV_QUOTA_LIMIT_TIME:
        return t->quota_limit_time;
    case TV_BACKLOG_AGE:
        return t->backlog_age;
    }
    return 0;
}

static void render_topic_family(FILE *f, const snapshot_t *sn, const char *name, const char *type,
                                const char *help, topic_value_t which)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (size_t i = 0; i < sn->ntopics; i++) {
        fputs(name, f);
        topic_labels(f, &sn->topics[i]);
        put_end(f, topic_value(&sn->topics[i], which));
    }
}

/* Pulsar's per-topic append histograms, one gauge family per bucket (as its
 * dashboards read them): pulsar_storage_write_latency_le_* (ms) and
 * pulsar_entry_size_le_* (bytes), with _count and _sum. */
static void render_topic_buckets(FILE *f, const snapshot_t *sn)
{
    static const char *const lat[10] = {"0_5", "1",   "5",   "10",   "20",
                                        "50",  "100", "200", "1000", "overflow"};
    static const char *const size[9] = {"128",   "512",    "1_kb", "2_kb",    "4_kb",
                                        "16_kb", "100_kb", "1_mb", "overflow"};
    for (int b = 0; b < 12; b++) {
        char name[64];
        if (b < 10)
            snprintf(name, sizeof name, "pulsar_storage_write_latency_le_%s", lat[b]);
        else
            snprintf(name, sizeof name, "pulsar_storage_write_latency_%s",
                     b == 10 ? "count" : "sum");
        fprintf(f, "# TYPE %s gauge\n", name);
        for (size_t i = 0; i < sn->ntopics; i++) {
            const topic_rec_t *t = &sn->topics[i];
            fputs(name, f);
            topic_labels(f, t);
            put_end(f, b < 10 ? (double)t->lat[b] : b == 10 ? (double)t->lat_count : t->lat_sum_ms);
        }
    }
    for (int b = 0; b < 11; b++) {
        char name[64];
        if (b < 9)
            snprintf(name, sizeof name, "pulsar_entry_size_le_%s", size[b]);
        else
            snprintf(name, sizeof name, "pulsar_entry_size_%s", b == 9 ? "count" : "sum");
        fprintf(f, "# TYPE %s gauge\n", name);
        for (size_t i = 0; i < sn->ntopics; i++) {
            const topic_rec_t *t = &sn->topics[i];
            fputs(name, f);
            topic_labels(f, t);
            put_end(f, b < 9 ? (double)t->size[b] : (double)(b == 9 ? t->size_count : t->size_sum));
        }
    }
}

static void render_process(FILE *f)
{
    long page = sysconf(_SC_PAGESIZE), ticks = sysconf(_SC_CLK_TCK);
    unsigned long long size = 0, rss = 0, utime = 0, stime = 0;
    FILE *sf = fopen("/proc/self/statm", "r");
    if (sf) {
        if (fscanf(sf, "%llu %llu", &size, &rss) != 2)
            rss = 0;
        fclose(sf);
    }
    char buf[1024];
    sf = fopen("/proc/self/stat", "r");
    if (sf) {
        size_t n = fread(buf, 1, sizeof buf - 1, sf);
        buf[n] = '\0';
        fclose(sf);
        /* Fields after the ")" closing the command name: state is field 3;
         * utime and stime are fields 14 and 15. */
        char *p = strrchr(buf, ')');
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                        &stime) != 2)
            utime = stime = 0;
    }
    fprintf(f,
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes %llu\n"
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
            "# TYPE process_virtual_memory_bytes gauge\n"
            "process_virtual_memory_bytes %llu\n"
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total %.2f\n",
            rss * (unsigned long long)page, size * (unsigned long long)page,
            ticks > 0 ? (double)(utime + stime) / (double)ticks : 0.0);
    /* What the allocator holds: in use by the program, and resident in the
     * allocator but not allocated (heap.h; a walk under the allocator's locks:
     * scrape-time cost only). */
    qheap_stats_t hs;
    if (qheap_stats(&hs))
        fprintf(f,
                "# HELP quire_process_heap_bytes Heap memory held by the allocator: in use, or "
                "resident but free.\n"
                "# TYPE quire_process_heap_bytes gauge\n"
                "quire_process_heap_bytes{allocator=\"%s\",state=\"in_use\"} %zu\n"
                "quire_process_heap_bytes{allocator=\"%s\",state=\"free\"} %zu\n",
                hs.allocator, hs.in_use, hs.allocator, hs.free_kept);
}

/* Which of latq_quantiles a summary prints (bit i: latq_quantiles[i]): Pulsar's
 * broker summaries 0.0, 0.5, 0.95, ..., 1.0; BookKeeper's OpStats 0.5, 0.75,
 * 0.95, ..., 1.0. */
#define QUANTILES_PULSAR (0xffu & ~(1u << 2))
#define QUANTILES_BOOKKEEPER (0xffu & ~1u)

/* A latency summary: a sample per quantile of the last window (NaN when it
 * had none), then _count and _sum since the start (ms), each with labels
 * (escaped, without braces). */
static void render_summary(FILE *f, const char *name, const char *help, const char *labels,
                           const latq_view_t *v, unsigned which)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s summary\n", name, help, name);
    for (int i = 0; i < LATQ_NQ; i++) {
        if (!(which & (1u << i)))
            continue;
        fprintf(f, "%s{%s,quantile=\"%s\"} ", name, labels, latq_label(i));
        if (isnan(v->q_ms[i]))
            fputs("NaN\n", f);
        else
            fprintf(f, "%.3f\n", v->q_ms[i]);
    }
    fprintf(f, "%s_count{%s} %llu\n%s_sum{%s} %.3f\n", name, labels, (unsigned long long)v->count,
            name, labels, v->sum_ms);
}

/* BookKeeper's names for the in-process bookie (its OpStats are summaries:
 * quantiles of the last window, count and sum, success="true"). */
static void render_bookie(FILE *f, const bookie_stats_t *stp)
{
    if (!stp)
        return;
    const bookie_stats_t st = *stp;
    /* BookKeeper's OpStats where it has the figure, Quire's names where not; an
     * add's time in three parts (queue, group, callback: their sums add up to
     * JOURNAL_ADD_ENTRY's) */
    const struct {
        const char *name, *help;
        const latq_view_t *v;
    } sums[] = {
        {"bookie_journal_JOURNAL_SYNC", "Journal fdatasync calls and their time (ms).",
         &st.journal_sync_latency},
        {"bookie_journal_JOURNAL_ADD_ENTRY",
         "Adds made durable by the journal: from their submission to their group's durability "
         "(ms).",
         &st.journal_add_latency},
        {"quire_bookie_direct_sync_latency",
         "A journal group's large entries: their write and fdatasync in a direct entry log (ms).",
         &st.direct_latency},
        {"bookie_journal_JOURNAL_QUEUE_LATENCY",
         "Adds from their submission to the journal until the journal thread takes them into a "
         "group (ms).",
         &st.journal_queue_latency},
        {"quire_bookie_journal_group_latency",
         "Adds from the journal thread taking them into a group until that group is written and "
         "synced: its forming, writes and syncs (ms).",
         &st.journal_group_latency},
        {"quire_bookie_add_callback_latency",
         "Adds from their group's durability until the loop thread completes them (ms).",
         &st.add_callback_latency},
        {"bookie_journal_JOURNAL_CREATION_LATENCY",
         "Rolls to a new journal file: its creation, or the taking of a spare (ms).",
         &st.journal_creation_latency},
        {"quire_bookie_direct_log_roll_latency",
         "Rolls to a new direct entry log on the journal thread: its creation or a spare's "
         "taking, its directory's fsync, the old log's padding cut (ms).",
         &st.direct_roll_latency},
    };
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        render_summary(f, sums[i].name, sums[i].help, "success=\"true\"", sums[i].v,
                       QUANTILES_BOOKKEEPER);
    fprintf(f,
            "# HELP bookkeeper_server_ADD_ENTRY Adds acknowledged by the bookie.\n"
            "# TYPE bookkeeper_server_ADD_ENTRY summary\n"
            "bookkeeper_server_ADD_ENTRY_count{success=\"true\"} %llu\n"
            "# HELP bookkeeper_server_ADD_ENTRY_BYTES_total Bytes of the adds acknowledged.\n"
            "# TYPE bookkeeper_server_ADD_ENTRY_BYTES_total counter\n"
            "bookkeeper_server_ADD_ENTRY_BYTES_total %llu\n"
            "# HELP bookkeeper_server_READ_ENTRY Reads served by the bookie.\n"
            "# TYPE bookkeeper_server_READ_ENTRY summary\n"
            "bookkeeper_server_READ_ENTRY_count{success=\"true\"} %llu\n"
            "# HELP bookie_read_cache_hits_total Reads served from the write or read cache.\n"
            "# TYPE bookie_read_cache_hits_total counter\n"
            "bookie_read_cache_hits_total %llu\n"
            "# HELP bookie_ledgers_count Ledgers stored by the bookie.\n"
            "# TYPE bookie_ledgers_count gauge\n"
            "bookie_ledgers_count %llu\n"
            "# HELP bookie_entry_log_bytes Bytes in the bookie's entry log files.\n"
            "# TYPE bookie_entry_log_bytes gauge\n"
            "bookie_entry_log_bytes %llu\n",
            (unsigned long long)st.adds, (unsigned long long)st.add_bytes,
            (unsigned long long)st.reads, (unsigned long long)st.read_cache_hits,
            (unsigned long long)st.ledgers, (unsigned long long)st.entry_log_bytes);
    fprintf(f,
            "# HELP bookkeeper_server_ADD_ENTRY_BLOCKED Adds waiting for write cache room now.\n"
            "# TYPE bookkeeper_server_ADD_ENTRY_BLOCKED gauge\n"
            "bookkeeper_server_ADD_ENTRY_BLOCKED %llu\n"
            "# HELP quire_bookie_adds_waited_total Adds that waited for write cache room.\n"
            "# TYPE quire_bookie_adds_waited_total counter\n"
            "quire_bookie_adds_waited_total %llu\n"
            "# HELP quire_bookie_reads_waited_total Disk reads that waited for room among the "
            "reads in flight.\n"
            "# TYPE quire_bookie_reads_waited_total counter\n"
            "quire_bookie_reads_waited_total %llu\n"
            "# HELP quire_bookie_reads_yielded_total Large reads that waited for the journal's "
            "writes in flight (readYieldToJournalUs).\n"
            "# TYPE quire_bookie_reads_yielded_total counter\n"
            "quire_bookie_reads_yielded_total %llu\n"
            "# HELP quire_bookie_reads_yielded_seconds_total Their time waiting.\n"
            "# TYPE quire_bookie_reads_yielded_seconds_total counter\n"
            "quire_bookie_reads_yielded_seconds_total %.6f\n"
            "# HELP quire_bookie_disk_read_entries_total Entries the bookie read from disk.\n"
            "# TYPE quire_bookie_disk_read_entries_total counter\n"
            "quire_bookie_disk_read_entries_total %llu\n"
            "# HELP quire_bookie_disk_reads_total Reads it issued for them (records that "
            "follow one another in a log: one read).\n"
            "# TYPE quire_bookie_disk_reads_total counter\n"
            "quire_bookie_disk_reads_total %llu\n"
            "# HELP quire_bookie_disk_idx_reads_total Reads of index records it issued to find "
            "them (records that follow one another in an index file: one read).\n"
            "# TYPE quire_bookie_disk_idx_reads_total counter\n"
            "quire_bookie_disk_idx_reads_total %llu\n"
            "# HELP quire_bookie_write_cache_bytes Entries in the bookie's write caches (active "
            "and being flushed), as counted against their bound.\n"
            "# TYPE quire_bookie_write_cache_bytes gauge\n"
            "quire_bookie_write_cache_bytes %llu\n"
            "# HELP quire_bookie_read_cache_bytes Entries in the bookie's read cache.\n"
            "# TYPE quire_bookie_read_cache_bytes gauge\n"
            "quire_bookie_read_cache_bytes %llu\n"
            "# HELP quire_bookie_reads_inflight_bytes Bytes of the disk reads in flight.\n"
            "# TYPE quire_bookie_reads_inflight_bytes gauge\n"
            "quire_bookie_reads_inflight_bytes %llu\n"
            "# HELP quire_bookie_gc_passes_total GC passes done.\n"
            "# TYPE quire_bookie_gc_passes_total counter\n"
            "quire_bookie_gc_passes_total %llu\n"
            "# HELP quire_bookie_gc_logs_removed_total Entry logs GC removed (no live data).\n"
            "# TYPE quire_bookie_gc_logs_removed_total counter\n"
            "quire_bookie_gc_logs_removed_total %llu\n"
            "# HELP quire_bookie_gc_logs_compacted_total Entry logs GC compacted and removed.\n"
            "# TYPE quire_bookie_gc_logs_compacted_total counter\n"
            "quire_bookie_gc_logs_compacted_total %llu\n"
            "# HELP quire_bookie_gc_compacted_bytes_total Entry bytes compaction copied.\n"
            "# TYPE quire_bookie_gc_compacted_bytes_total counter\n"
            "quire_bookie_gc_compacted_bytes_total %llu\n"
            "# HELP quire_bookie_gc_logs_freeing Removed entry logs and journal files whose blocks "
            "are being freed.\n"
            "# TYPE quire_bookie_gc_logs_freeing gauge\n"
            "quire_bookie_gc_logs_freeing %llu\n",
            (unsigned long long)st.adds_waiting, (unsigned long long)st.adds_waited,
            (unsigned long long)st.reads_waited, (unsigned long long)st.reads_yielded,
            (double)st.reads_yielded_us / 1e6, (unsigned long long)st.disk_read_entries,
            (unsigned long long)st.disk_read_ops, (unsigned long long)st.disk_idx_read_ops,
            (unsigned long long)st.write_cache_bytes, (unsigned long long)st.read_cache_bytes,
            (unsigned long long)st.reads_inflight_bytes, (unsigned long long)st.gc_passes,
            (unsigned long long)st.gc_logs_removed, (unsigned long long)st.gc_logs_compacted,
            (unsigned long long)st.gc_compacted_bytes, (unsigned long long)st.gc_logs_freeing);
    fprintf(f,
            "# HELP quire_bookie_direct_syncs_total Writes of large entries to direct entry "
            "logs with their fdatasync (journalLargeEntryThreshold).\n"
            "# TYPE quire_bookie_direct_syncs_total counter\n"
            "quire_bookie_direct_syncs_total %llu\n"
            "# HELP quire_bookie_direct_sync_seconds_total Their time (write and fdatasync).\n"
            "# TYPE quire_bookie_direct_sync_seconds_total counter\n"
            "quire_bookie_direct_sync_seconds_total %.6f\n"
            "# HELP quire_bookie_direct_bytes_total Bytes written to direct entry logs.\n"
            "# TYPE quire_bookie_direct_bytes_total counter\n"
            "quire_bookie_direct_bytes_total %llu\n"
            "# HELP quire_bookie_spare_zeroed_bytes_total Zeros written into spare files ahead of "
            "their use (spareFileZeroRateMB).\n"
            "# TYPE quire_bookie_spare_zeroed_bytes_total counter\n"
            "quire_bookie_spare_zeroed_bytes_total %llu\n"
            "# HELP quire_bookie_spare_files_taken_total Journal files and direct entry logs that "
            "were spares (zeroed, or an entry log GC removed).\n"
            "# TYPE quire_bookie_spare_files_taken_total counter\n"
            "quire_bookie_spare_files_taken_total{kind=\"journal\"} %llu\n"
            "quire_bookie_spare_files_taken_total{kind=\"direct\"} %llu\n"
            "# HELP quire_bookie_spare_logs_reused_total Entry logs GC removed and kept as the "
            "direct logs' spare instead of freeing their blocks.\n"
            "# TYPE quire_bookie_spare_logs_reused_total counter\n"
            "quire_bookie_spare_logs_reused_total %llu\n"
            "# HELP quire_bookie_spare_journal_files_reused_total Journal files a checkpoint "
            "trimmed and kept as the journal's spare, written over as the next one (journal "
            "format 3).\n"
            "# TYPE quire_bookie_spare_journal_files_reused_total counter\n"
            "quire_bookie_spare_journal_files_reused_total %llu\n",
            (unsigned long long)st.direct_syncs, (double)st.direct_sync_us_total / 1e6,
            (unsigned long long)st.direct_bytes, (unsigned long long)st.spare_zeroed_bytes,
            (unsigned long long)st.spares_taken_journal, (unsigned long long)st.spares_taken_direct,
            (unsigned long long)st.spare_logs_reused, (unsigned long long)st.spare_jnl_reused);
    fprintf(f,
            "# HELP bookie_SERVER_STATUS 1 while the bookie takes adds, 0 while read-only "
            "(disk usage at its mark, no room for a flush, or an I/O error).\n"
            "# TYPE bookie_SERVER_STATUS gauge\n"
            "bookie_SERVER_STATUS %d\n"
            "# HELP quire_bookie_disk_usage_ratio Disk usage at the last check (1 - available / "
            "total), the fuller of the journal's and the ledgers' file systems.\n"
            "# TYPE quire_bookie_disk_usage_ratio gauge\n"
            "quire_bookie_disk_usage_ratio %.4f\n"
            "# HELP quire_bookie_disk_full 1 while adds are refused for disk usage "
            "(diskUsageThreshold until below diskUsageLwmThreshold).\n"
            "# TYPE quire_bookie_disk_full gauge\n"
            "quire_bookie_disk_full %d\n"
            "# HELP quire_bookie_disk_almost_full 1 while disk usage is at or above "
            "diskUsageWarnThreshold (GC at every check, no major compaction).\n"
            "# TYPE quire_bookie_disk_almost_full gauge\n"
            "quire_bookie_disk_almost_full %d\n"
            "# HELP quire_bookie_flush_stalled 1 while adds are refused because a flush failed "
            "for lack of room and waits to run again.\n"
            "# TYPE quire_bookie_flush_stalled gauge\n"
            "quire_bookie_flush_stalled %d\n"
            "# HELP quire_bookie_flush_stalls_total Flushes that failed for lack of room (ENOSPC, "
            "EDQUOT), each run again later.\n"
            "# TYPE quire_bookie_flush_stalls_total counter\n"
            "quire_bookie_flush_stalls_total %llu\n",
            !(st.disk_full || st.read_only || st.flush_stalled), st.disk_usage,
            st.disk_full ? 1 : 0, st.disk_almost_full ? 1 : 0, st.flush_stalled ? 1 : 0,
            (unsigned long long)st.flush_stalls);
}

/* What one scrape prints, taken on the loop in steps (metrics_job_step); the
 * text is rendered from it alone (metrics_job_render), on the metrics thread. */
typedef struct metrics_job {
    admin_req_t *req; /* answered once rendered */
    admin_metrics_t *m;
    ev_timer step;                   /* the snapshot's next step (metrics_job_step) */
    broker_admin_walk_t walk;        /* where the walk over the topics is */
    struct metrics_job *prev, *next; /* m->taking, while taking */
    snapshot_t sn;
    broker_admin_counts_t counts;
    bookie_stats_t bookie;
    bool has_bookie;
    char cluster[sizeof((admin_service_t *)0)->cluster];
    char *out; /* the text, or NULL (out of memory) */
    size_t len;
} metrics_job_t;

static void metrics_job_free(metrics_job_t *j)
{
    snapshot_free(&j->sn);
    free(j->out);
    free(j);
}

static void metrics_job_unlink(metrics_job_t *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        j->m->taking = j->next;
    if (j->next)
        j->next->prev = j->prev;
    j->prev = j->next = NULL;
    j->m->ntaking--;
}

static void metrics_job_finish(metrics_job_t *j);
static void metrics_job_render(void *arg);
static void metrics_job_done(void *arg);

/* One step of a scrape's snapshot; the rest of the job once every topic is
 * in it. */
static void metrics_job_step(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    metrics_job_t *j = w->data;
    broker_walk_rc_t rc =
        broker_admin_topics_step(j->m->a->broker, &j->walk, j->m->step_us, snap_topic, &j->sn);
    if (rc == BROKER_WALK_AGAIN) { /* the topics moved: what was taken may repeat */
        snapshot_drop_records(&j->sn);
    }
    if (rc != BROKER_WALK_DONE && !j->sn.oom) {
        ev_timer_set(&j->step, 0., 0.);
        ev_timer_start(loop, &j->step);
        return;
    }
    metrics_job_unlink(j);
    metrics_job_finish(j);
}

/* The snapshot is complete: the broker's and bookie's figures, then the text
 * rendered on the metrics thread (or here) and the answer. */
static void metrics_job_finish(metrics_job_t *j)
{
    admin_metrics_t *m = j->m;
    j->sn.m = NULL; /* the render never reads the service */
    broker_admin_counts_no_topics(m->a->broker, &j->counts);
    j->counts.topics = j->sn.ntopics;
    if (m->a->bookie_stats) {
        m->a->bookie_stats(m->a->bookie_stats_arg, &j->bookie);
        j->has_bookie = true;
    }
    snprintf(j->cluster, sizeof j->cluster, "%s", m->a->cluster);
    if (j->sn.oom) {
        admin_reply_error(j->req, 503, "Out of memory");
        metrics_job_free(j);
        return;
    }
    if (m->exec && qexec_submit(m->exec, metrics_job_render, metrics_job_done, j) == 0)
        return;            /* answered from metrics_job_done */
    metrics_job_render(j); /* no thread, or scrapes queued: here */
    metrics_job_done(j);
}

/* Any thread: reads only the job. */
static void metrics_job_render(void *arg)
{
    metrics_job_t *j = arg;
    snapshot_t sn = j->sn;
    const broker_admin_counts_t counts = j->counts;
    size_t *len = &j->len;
    char *out = NULL;
    FILE *f = open_memstream(&out, len);
    if (!f)
        return;
    __fsetlocking(f, FSETLOCKING_BYCALLER); /* this thread only: no lock per call */
    const char *cl = j->cluster;

    /* Namespace level: topics per namespace. */
    fputs("# HELP pulsar_topics_count Number of loaded topics\n"
          "# TYPE pulsar_topics_count gauge\n",
          f);
    /* Counted in one pass (it compared every pair of topics: 100,000 topics
     * were 10^10 string comparisons), printed in the order namespaces first
     * appear. */
    qmap_t *per_ns = qmap_new();
    for (size_t i = 0; per_ns && i < sn.ntopics; i++) {
        uintptr_t n = (uintptr_t)qmap_get(per_ns, sn.topics[i].ns);
        if (qmap_put(per_ns, sn.topics[i].ns, (void *)(n + 1)) != 0) {
            qmap_free(per_ns);
            per_ns = NULL;
        }
    }
    if (!per_ns) {
        fclose(f);
        free(out);
        return;
    }
    for (size_t i = 0; i < sn.ntopics; i++) {
        uintptr_t n = (uintptr_t)qmap_get(per_ns, sn.topics[i].ns);
        if (n == 0)
            continue;                            /* printed */
        qmap_put(per_ns, sn.topics[i].ns, NULL); /* replaces: cannot fail */
        fputs("pulsar_topics_count{", f);
        put_label(f, "cluster", cl);
        fputc(',', f);
        put_label(f, "namespace", sn.topics[i].ns);
        put_end(f, (double)n);
    }
    qmap_free(per_ns);
    /* Without topic-level metrics the families below are printed per
     * namespace: sn then holds one record per namespace. */
    snapshot_t by_ns;
    if (!j->sn.topic_level) {
        if (!snapshot_by_namespace(&j->sn, cl, &by_ns)) {
            snapshot_free(&by_ns);
            fclose(f);
            free(out);
            return;
        }
        sn = by_ns;
    }
    fprintf(f,
            "# HELP pulsar_broker_topics_count Number of topics loaded by the broker\n"
            "# TYPE pulsar_broker_topics_count gauge\n"
            "pulsar_broker_topics_count{cluster=\"%s\"} %zu\n"
            "# HELP pulsar_active_connections Client connections to the broker\n"
            "# TYPE pulsar_active_connections gauge\n"
            "pulsar_active_connections{cluster=\"%s\"} %zu\n"
            "# HELP pulsar_broker_throttled_connections_global_limit Connections not read "
            "while the broker's publish buffer (maxMessagePublishBufferSizeInMB) is full\n"
            "# TYPE pulsar_broker_throttled_connections_global_limit gauge\n"
            "pulsar_broker_throttled_connections_global_limit{cluster=\"%s\"} %zu\n"
            "# HELP quire_broker_publish_buffer_pauses_total Connections paused by the "
            "broker's publish buffer bound since start\n"
            "# TYPE quire_broker_publish_buffer_pauses_total counter\n"
            "quire_broker_publish_buffer_pauses_total{cluster=\"%s\"} %llu\n"
            "# HELP quire_broker_publish_buffer_bytes Bytes of appends in flight, all "
            "connections\n"
            "# TYPE quire_broker_publish_buffer_bytes gauge\n"
            "quire_broker_publish_buffer_bytes{cluster=\"%s\"} %llu\n"
            "# HELP quire_broker_write_queue_bytes Bytes queued for clients (messages "
            "dispatched, answers) and not yet taken by their sockets, all connections\n"
            "# TYPE quire_broker_write_queue_bytes gauge\n"
            "quire_broker_write_queue_bytes{cluster=\"%s\"} %llu\n"
            "# HELP quire_broker_socket_writes_total Writes to client sockets; the frames "
            "queued in one loop iteration leave in one\n"
            "# TYPE quire_broker_socket_writes_total counter\n"
            "quire_broker_socket_writes_total{cluster=\"%s\"} %llu\n",
            cl, counts.topics, cl, counts.connections, cl, counts.buffer_paused, cl,
            (unsigned long long)counts.buffer_pauses, cl,
            (unsigned long long)counts.pending_publish_bytes, cl,
            (unsigned long long)counts.write_queue_bytes, cl,
            (unsigned long long)counts.socket_writes);
    char cl_label[sizeof j->cluster + 16];
    snprintf(cl_label, sizeof cl_label, "cluster=\"%s\"", cl);
    render_summary(f, "pulsar_broker_publish_latency",
                   "Publish latency (ms): from a SEND to its durable append, quantiles over the "
                   "last statsUpdateFrequencyInSecs",
                   cl_label, &counts.publish_latency, QUANTILES_PULSAR);
    render_summary(f, "quire_broker_loop_iteration_latency",
                   "The event loop's iterations (ms): from its poll's return to its next poll, "
                   "the longest a request arriving meanwhile waits to be read",
                   cl_label, &counts.loop_latency, QUANTILES_PULSAR);
    render_cache(f, cl, &counts.cache);

    render_topic_family(f, &sn, "pulsar_subscriptions_count", "gauge", "Number of subscriptions",
                        TV_SUBS);
    render_topic_family(f, &sn, "pulsar_producers_count", "gauge", "Number of producers",
                        TV_PRODUCERS);
    render_topic_family(f, &sn, "pulsar_consumers_count", "gauge", "Number of consumers",
                        TV_CONSUMERS);
    render_topic_family(f, &sn, "pulsar_rate_in", "gauge", "Messages per second published",
                        TV_RATE_IN);
    render_topic_family(f, &sn, "pulsar_rate_out", "gauge", "Messages per second dispatched",
                        TV_RATE_OUT);
    render_topic_family(f, &sn, "pulsar_throughput_in", "gauge", "Bytes per second published",
                        TV_TPUT_IN);
    render_topic_family(f, &sn, "pulsar_throughput_out", "gauge", "Bytes per second dispatched",
                        TV_TPUT_OUT);
    render_topic_family(f, &sn, "pulsar_in_messages_total", "counter",
                        "Messages published since the topic was loaded", TV_IN_MSG);
    render_topic_family(f, &sn, "pulsar_in_bytes_total", "counter",
                        "Bytes published since the topic was loaded", TV_IN_BYTES);
    render_topic_family(f, &sn, "pulsar_out_messages_total", "counter",
                        "Messages dispatched since the topic was loaded", TV_OUT_MSG);
    render_topic_family(f, &sn, "pulsar_out_bytes_total", "counter",
                        "Bytes dispatched since the topic was loaded", TV_OUT_BYTES);
    render_topic_family(f, &sn, "pulsar_storage_size", "gauge",
                        "Bytes of the topic's retained ledgers", TV_STORAGE);
    render_topic_family(f, &sn, "pulsar_msg_backlog", "gauge",
                        "Entries not yet acknowledged by the slowest subscription", TV_BACKLOG);
    render_topic_family(f, &sn, "pulsar_storage_backlog_size", "gauge",
                        "Estimated bytes of the slowest durable subscription's backlog",
                        TV_BACKLOG_SIZE);
    render_topic_family(f, &sn, "pulsar_storage_backlog_quota_limit", "gauge",
                        "destination_storage backlog quota in bytes (-1: none)", TV_QUOTA_LIMIT);
    render_topic_family(f, &sn, "pulsar_storage_backlog_quota_limit_time", "gauge",
                        "message_age backlog quota in seconds (-1: none)", TV_QUOTA_LIMIT_TIME);
    render_topic_family(f, &sn, "pulsar_storage_backlog_age_seconds", "gauge",
                        "Age of the oldest unacknowledged message (at the last quota check)",
                        TV_BACKLOG_AGE);
    fputs("# HELP pulsar_storage_backlog_quota_exceeded_evictions_total Backlog quota evictions\n"
          "# TYPE pulsar_storage_backlog_quota_exceeded_evictions_total counter\n",
          f);
    for (size_t i = 0; i < sn.ntopics; i++) {
        for (int q = 0; q < 2; q++) {
            fputs("pulsar_storage_backlog_quota_exceeded_evictions_total", f);
            topic_labels(f, &sn.topics[i]);
            fputs(q ? ",quota_type=\"time\"" : ",quota_type=\"size\"", f);
            put_end(f, q ? sn.topics[i].evict_time : sn.topics[i].evict_size);
        }
    }

    static const struct {
        const char *name, *help;
        int which;
    } sub_families[] = {
        {"pulsar_subscription_back_log", "Entries the subscription has not acknowledged", 0},
        {"pulsar_subscription_unacked_messages", "Messages sent and not acknowledged", 1},
        {"pulsar_subscription_msg_rate_out", "Messages per second dispatched", 2},
        {"pulsar_subscription_msg_throughput_out", "Bytes per second dispatched", 3},
    };
    for (size_t k = 0; k < sizeof sub_families / sizeof sub_families[0]; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", sub_families[k].name, sub_families[k].help,
                sub_families[k].name);
        for (size_t i = 0; i < sn.nsubs; i++) {
            const sub_rec_t *s = &sn.subs[i];
            fputs(sub_families[k].name, f);
            topic_labels(f, &sn.topics[s->topic]);
            fputs(s->label, f);
            double v = sub_families[k].which == 0   ? (double)s->backlog
                       : sub_families[k].which == 1 ? (double)s->unacked
                       : sub_families[k].which == 2 ? s->rate_out
                                                    : s->tput_out;
            put_end(f, v);
        }
    }
    static const char *const cons_families[] = {"pulsar_consumer_available_permits",
                                                "pulsar_consumer_unacked_messages"};
    for (size_t k = 0; k < 2; k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", cons_families[k],
                k == 0 ? "Permits the consumer has given" : "Messages sent and not acknowledged",
                cons_families[k]);
        for (size_t i = 0; i < sn.ncons; i++) {
            const cons_rec_t *c = &sn.cons[i];
            const sub_rec_t *s = &sn.subs[c->sub];
            char id[32];
            snprintf(id, sizeof id, "%llu", (unsigned long long)c->id);
            fputs(cons_families[k], f);
            topic_labels(f, &sn.topics[s->topic]);
            fputs(s->label, f);
            fputc(',', f);
            put_label(f, "consumer_name", c->name);
            fputc(',', f);
            put_label(f, "consumer_id", id);
            fprintf(f, "} %lld\n", k == 0 ? (long long)c->permits : (long long)c->unacked);
        }
    }
    render_topic_buckets(f, &sn);
    render_process(f);
    render_bookie(f, j->has_bookie ? &j->bookie : NULL);
    if (!j->sn.topic_level)
        snapshot_free(&sn);
    snapshot_free(&j->sn); /* here, off the loop: 100,000 topics are 500,000 frees */
    j->sn = (snapshot_t){0};
    if (fclose(f) != 0) {
        free(out);
        return;
    }
    j->out = out;
}

static void metrics_job_reply(metrics_job_t *j)
{
    if (j->out)
        admin_reply_raw(j->req, 200, "text/plain; version=0.0.4; charset=utf-8", j->out, j->len);
    else
        admin_reply_error(j->req, 503, "Out of memory");
    j->out = NULL; /* taken */
}

static void metrics_job_done(void *arg)
{
    metrics_job_t *j = arg;
    metrics_job_reply(j);
    metrics_job_free(j);
}

void admin_metrics_serve(admin_metrics_t *m, admin_req_t *req)
{
    if (m->ntaking >= METRICS_TAKING_MAX) {
        admin_reply_error(req, 503, "%u scrapes are already taking their snapshot",
                          (unsigned)m->ntaking);
        return;
    }
    metrics_job_t *j = calloc(1, sizeof *j);
    if (!j) {
        admin_reply_error(req, 503, "Out of memory");
        return;
    }
    j->req = req;
    j->m = m;
    j->sn.m = m;
    j->sn.topic_level = m->a->metrics_topic_level;
    /* Room for every loaded topic (and a subscription each) at once: grown by
     * doubling, 100,000 topics' records were copied on the loop (36 MB). */
    size_t n = broker_admin_topics_count(m->a->broker) + 64;
    j->sn.topics = malloc(n * sizeof *j->sn.topics);
    j->sn.subs = j->sn.topic_level ? malloc(n * sizeof *j->sn.subs) : NULL;
    j->sn.captopics = j->sn.topics ? n : 0;
    j->sn.capsubs = j->sn.subs ? n : 0;
    j->next = m->taking;
    if (m->taking)
        m->taking->prev = j;
    m->taking = j;
    m->ntaking++;
    ev_timer_init(&j->step, metrics_job_step, 0., 0.);
    j->step.data = j;
    metrics_job_step(m->a->loop, &j->step, 0); /* the first step now */
}

void admin_metrics_set_step_us(admin_metrics_t *m, uint32_t us)
{
    m->step_us = us;
}

void admin_metrics_free(admin_metrics_t *m)
{
    if (!m)
        return;
    if (m->exec)
        qexec_free(m->exec); /* renders and answers the scrapes still queued */
    while (m->taking) {      /* scrapes still taking their snapshot */
        metrics_job_t *j = m->taking;
        metrics_job_unlink(j);
        ev_timer_stop(m->a->loop, &j->step);
        admin_reply_error(j->req, 503, "The service is stopping");
        metrics_job_free(j);
    }
    ev_ref(m->a->loop);
    ev_timer_stop(m->a->loop, &m->timer);
    mseries_free(m->series);
    free(m);
}
