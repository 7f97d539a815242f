/*
 * storage_bench.c — the storage engine's benchmark: appends entries through
 * the ledger client to a local bookie (E = Qw = Qa = 1) with fdatasync before
 * acknowledgement, and prints entries/s, MB/s and add latency percentiles;
 * first it measures the disk's own durable sequential bandwidth (1 MiB writes,
 * each followed by fdatasync) and fdatasync latency in the same run, so the
 * figures can be compared with what the disk can do.
 *
 *   storage-bench [--dir DIR] [--sizes 100,1024,65536] [--seconds S]
 *                 [--inflight N] [--rate R] [--large-entry-bytes B]
 *                 [--group-bytes B] [--journal-format F] [--timer T] [--timeline FILE]
 *
 * --rate R: adds are issued at a fixed R per second and latency is measured
 * from each add's scheduled time (no coordinated omission): this is the
 * latency figure. The adds due are issued every 200 us from a timerfd (since
 * session 32; --timer libev: an ev_timer, as before, which libev's epoll
 * backend fires a millisecond apart when nothing else wakes the loop); how
 * late each was issued is part of its latency and printed on its own line.
 * Without it, N adds are kept in flight (max throughput): the latency printed
 * then is mostly queueing behind the other N-1 adds (Little's law: N /
 * throughput) and says how deep the queue was, not how fast an add is.
 *
 * --large-entry-bytes B: the bookie's journal_large_entry_bytes (default: the
 * bookie's default, 16 KiB; 0 turns it off): entries at least this large are
 * written once, to a direct entry log, with a reference in the journal.
 * --group-bytes B: the bookie's journal_group_bytes_max (default 512 KiB).
 * --journal-format F: the journal format written (journalFormatVersionToWrite,
 * 2 or 3; default 3: trimmed journal files written over as the next ones).
 * --timeline FILE (with --rate): one CSV line per 10 ms of schedule: the
 * entry size, the adds scheduled in it, their worst latency, how many took
 * over 1 and over 2 ms, and the bookie's counters sampled then (a flush
 * running, write-cache bytes, entry-log bytes, journal syncs, files being
 * freed), to place slow adds beside what the bookie did (mono_ms: the slot's
 * start on CLOCK_MONOTONIC, to line it up with samplers); one run after the
 * other when --sizes names several.
 * DIR is created when it does not exist.
 *
 * After each run the bookie's own counters are printed: journal fdatasyncs,
 * their mean duration, adds per fdatasync (the group commit batch), direct
 * entry log fdatasyncs and bytes, the bytes written to entry logs, and all
 * bytes the bookie wrote to the disk per second, so a result can be explained
 * (an entry below the threshold is written twice on the data disk: journal,
 * then entry log; a large one once, plus a 64-byte journal reference).
 *
 *   storage-bench --crc [--seconds S]
 *
 * measures CRC-32C alone (every SEND, journal record, entry-log record and
 * read is checksummed): GB/s of crc32c() (hardware path when the CPU has one)
 * and of the table path, over buffers of 1 KiB, 64 KiB and 1 MiB in cache.
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/hist.h"
#include "common/log.h"
#include "storage/bookie/bookie.h"
#include "storage/ledger/bookie_client.h"
#include "storage/ledger/ledger.h"
#include "storage/metadata/metadata.h"

typedef struct bench {
    struct ev_loop *loop;
    ledger_t *ledger;
    qbuf_t *payload;
    size_t size;
    double seconds;
    double rate; /* 0 = max throughput */
    int inflight_max;
    int inflight;
    uint64_t issued, acked, failed;
    uint64_t start_ns, stop_ns, end_ns;
    uint64_t *issue_ns; /* ring of scheduled times by entry id */
    size_t ring;
    hist_t hist;        /* microseconds */
    hist_t late;        /* fixed rate: how late each add was issued (us), part of its latency */
    ev_timer tick;      /* --timer libev */
    ev_io tick_io;      /* the timerfd's (default) */
    struct tl_slot *tl; /* --timeline: one slot per TL_SLOT_NS of schedule */
    size_t tl_n;
    bool done;
} bench_t;

/* ------------------------------------------------------------- the disk -- */

static bookie_t *bench_bookie; /* for its counters */

/* ------------------------------------------------------------ timeline -- */

#define TL_SLOT_NS 10000000ull /* 10 ms */

typedef struct tl_slot {
    uint32_t adds, slow, slower; /* adds scheduled in the slot; of them, over 1 and 2 ms */
    uint32_t max_us;
    bool sampled, flushing;
    uint64_t wc_bytes, elog_bytes, jsyncs, freeing; /* the bookie's, at the slot's start */
} tl_slot_t;

static void tl_add(bench_t *b, uint64_t sched_ns, uint64_t us)
{
    size_t i = (size_t)((sched_ns - b->start_ns) / TL_SLOT_NS);
    if (!b->tl || i >= b->tl_n)
        return;
    b->tl[i].adds++;
    b->tl[i].slow += us > 1000;
    b->tl[i].slower += us > 2000;
    if (us > b->tl[i].max_us)
        b->tl[i].max_us = (uint32_t)us;
}

static void tl_sample(bench_t *b, uint64_t now)
{
    size_t i = (size_t)((now - b->start_ns) / TL_SLOT_NS);
    if (!b->tl || i >= b->tl_n || b->tl[i].sampled)
        return;
    bookie_stats_t st;
    bookie_get_stats(bench_bookie, &st);
    tl_slot_t *t = &b->tl[i];
    t->sampled = true;
    t->flushing = st.flushing;
    t->wc_bytes = st.write_cache_bytes;
    t->elog_bytes = st.entry_log_bytes;
    t->jsyncs = st.journal_syncs;
    t->freeing = st.gc_logs_freeing;
}

static void tl_write(const bench_t *b, const char *path)
{
    static bool started; /* the first run writes the header, later sizes append */
    FILE *f = fopen(path, started ? "a" : "w");
    if (!f) {
        fprintf(stderr, "storage-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    if (!started)
        fprintf(f, "size,ms,mono_ms,adds,max_us,over_1ms,over_2ms,flushing,"
                   "write_cache_bytes,entry_log_bytes,journal_syncs,files_freeing\n");
    started = true;
    for (size_t i = 0; i < b->tl_n; i++) {
        const tl_slot_t *t = &b->tl[i];
        fprintf(f, "%zu,%llu,%llu,%u,%u,%u,%u,%d,%llu,%llu,%llu,%llu\n", b->size,
                (unsigned long long)i * (TL_SLOT_NS / 1000000),
                (unsigned long long)((b->start_ns + i * TL_SLOT_NS) / 1000000), t->adds, t->max_us,
                t->slow, t->slower, t->flushing, (unsigned long long)t->wc_bytes,
                (unsigned long long)t->elog_bytes, (unsigned long long)t->jsyncs,
                (unsigned long long)t->freeing);
    }
    fclose(f);
}

static void disk_baseline(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/fsync-probe", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        fprintf(stderr, "storage-bench: %s: %s\n", path, strerror(errno));
        return;
    }
    size_t chunk = 1 << 20;
    char *buf = malloc(chunk);
    memset(buf, 'q', chunk);
    uint64_t t0 = clock_mono_ns(), bytes = 0;
    while (clock_mono_ns() - t0 < 2000000000ull) {
        if (write(fd, buf, chunk) != (ssize_t)chunk || fdatasync(fd) != 0)
            break;
        bytes += chunk;
    }
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    static hist_t h;
    hist_init(&h);
    char small[4096];
    memset(small, 'q', sizeof small);
    for (int i = 0; i < 1000; i++) {
        uint64_t s = clock_mono_ns();
        if (write(fd, small, sizeof small) != (ssize_t)sizeof small || fdatasync(fd) != 0)
            break;
        hist_record(&h, (clock_mono_ns() - s) / 1000);
    }
    printf("disk: durable sequential bandwidth %.1f MB/s (1 MiB write + fdatasync, %.1f s); "
           "4 KiB write+fdatasync latency us p50 %llu p99 %llu p99.9 %llu max %llu (%llu "
           "samples)\n",
           (double)bytes / secs / 1e6, secs, (unsigned long long)hist_percentile(&h, 50),
           (unsigned long long)hist_percentile(&h, 99),
           (unsigned long long)hist_percentile(&h, 99.9), (unsigned long long)h.max,
           (unsigned long long)h.total);
    free(buf);
    close(fd);
    unlink(path);
}

/* ---------------------------------------------------------------- adds -- */

static void bench_issue(bench_t *b);

static void add_done(int rc, int64_t entry_id, void *arg)
{
    bench_t *b = arg;
    b->inflight--;
    uint64_t now = clock_mono_ns();
    if (rc < 0) {
        b->failed++;
        fprintf(stderr, "storage-bench: add failed: %s\n", q_strerror(rc));
    } else {
        b->acked++;
        uint64_t t = b->issue_ns[(uint64_t)entry_id % b->ring];
        hist_record(&b->hist, (now - t) / 1000);
        tl_add(b, t, (now - t) / 1000);
    }
    b->end_ns = now;
    if (!b->rate)
        bench_issue(b);
    if (b->inflight == 0 && now >= b->stop_ns)
        b->done = true;
}

static bool bench_add(bench_t *b, uint64_t scheduled_ns)
{
    uint64_t id = b->issued;
    b->issue_ns[id % b->ring] = scheduled_ns;
    if (b->rate > 0) {
        uint64_t now = clock_mono_ns();
        hist_record(&b->late, now > scheduled_ns ? (now - scheduled_ns) / 1000 : 0);
    }
    int rc = ledger_add(b->ledger, b->payload, add_done, b);
    if (rc < 0) {
        if (rc != QE_BUSY)
            fprintf(stderr, "storage-bench: add refused: %s\n", q_strerror(rc));
        return false;
    }
    b->issued++;
    b->inflight++;
    return true;
}

static void bench_issue(bench_t *b)
{
    uint64_t now = clock_mono_ns();
    if (now >= b->stop_ns)
        return;
    while (b->inflight < b->inflight_max && bench_add(b, clock_mono_ns()))
        ;
}

/* Issues the adds due; false once the run's time is over. */
static bool rate_step(bench_t *b)
{
    uint64_t now = clock_mono_ns();
    if (now >= b->stop_ns) {
        if (b->inflight == 0)
            b->done = true;
        return false;
    }
    tl_sample(b, now);
    /* Issue every add whose scheduled time has come, stamped with that time:
     * add i is due at i / rate, so i <= elapsed * rate (until session 33 each
     * was issued one interval late, at (i + 1) / rate: 20 us at 50,000/s, a
     * whole millisecond at 1,000/s, counted in its latency). */
    uint64_t due = (uint64_t)((double)(now - b->start_ns) / 1e9 * b->rate) + 1;
    while (b->issued < due && (int)b->inflight < (int)b->ring - 1) {
        uint64_t sched = b->start_ns + (uint64_t)((double)b->issued / b->rate * 1e9);
        if (!bench_add(b, sched))
            break;
    }
    return true;
}

static void rate_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    if (!rate_step(w->data))
        ev_timer_stop(loop, w);
}

/* The timerfd's tick: libev's epoll backend sleeps whole milliseconds, rounded
 * up, so an ev_timer of 200 us fires a millisecond apart whenever the loop has
 * nothing else to wake it, and the adds due meanwhile are issued late (counted
 * in their latency). A timerfd wakes the loop every 200 us. */
static void rate_tick_fd(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    uint64_t expirations;
    if (read(w->fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        perror("storage-bench: timerfd read");
    if (!rate_step(w->data))
        ev_io_stop(loop, w); /* run_size closes the timerfd */
}

/* -------------------------------------------------------------- driver -- */

typedef struct open_wait {
    bool done;
    int rc;
    ledger_t *ledger;
} open_wait_t;

static void ledger_created(int rc, ledger_t *l, void *arg)
{
    open_wait_t *w = arg;
    w->rc = rc;
    w->ledger = l;
    w->done = true;
}

static void closed_cb(int rc, void *arg)
{
    (void)rc;
    *(bool *)arg = true;
}

static void run_until(struct ev_loop *loop, volatile bool *flag)
{
    while (!*flag)
        ev_run(loop, EVRUN_ONCE);
}

static bool libev_timer; /* --timer libev: the rate timer an ev_timer (before session 32) */

static int run_size(struct ev_loop *loop, ledger_client_t *lc, size_t size, double seconds,
                    int inflight, double rate, const char *timeline)
{
    static bench_t b;
    memset(&b, 0, sizeof b);
    b.loop = loop;
    b.size = size;
    b.seconds = seconds;
    b.rate = rate;
    b.inflight_max = inflight;
    b.ring = 1 << 20;
    b.issue_ns = calloc(b.ring, sizeof *b.issue_ns);
    b.payload = qbuf_new(size);
    memset(b.payload->data, 'x', size);
    b.payload->len = (uint32_t)size;
    hist_init(&b.hist);
    hist_init(&b.late);
    if (timeline && rate > 0) {
        b.tl_n = (size_t)(seconds * 1e9 / (double)TL_SLOT_NS) + 1;
        b.tl = calloc(b.tl_n, sizeof *b.tl);
    }
    open_wait_t ow = {0};
    ledger_quorum_t q = {1, 1, 1};
    int rc = ledger_create(lc, &q, ledger_created, &ow);
    if (rc == 0)
        run_until(loop, &ow.done);
    if (rc < 0 || ow.rc < 0) {
        fprintf(stderr, "storage-bench: ledger_create: %s\n", q_strerror(rc < 0 ? rc : ow.rc));
        return -1;
    }
    b.ledger = ow.ledger;
    bookie_stats_t st0, st1;
    bookie_get_stats(bench_bookie, &st0);
    b.start_ns = clock_mono_ns();
    b.stop_ns = b.start_ns + (uint64_t)(seconds * 1e9);
    int tfd =
        rate > 0 && !libev_timer ? timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC) : -1;
    struct itimerspec its = {{0, 200000}, {0, 200000}};
    if (tfd >= 0 && timerfd_settime(tfd, 0, &its, NULL) < 0) {
        close(tfd);
        tfd = -1;
    }
    if (rate > 0 && tfd >= 0) {
        ev_io_init(&b.tick_io, rate_tick_fd, tfd, EV_READ);
        b.tick_io.data = &b;
        ev_io_start(loop, &b.tick_io);
    } else if (rate > 0) {
        if (!libev_timer)
            fprintf(stderr, "storage-bench: no timerfd: the rate timer is libev's\n");
        ev_timer_init(&b.tick, rate_tick, 0.0, 0.0002);
        b.tick.data = &b;
        ev_timer_start(loop, &b.tick);
    } else {
        bench_issue(&b);
    }
    run_until(loop, &b.done);
    /* the last add can end the run before the tick has seen its end: the tick
     * is stopped here, before the next size's run clears b */
    ev_timer_stop(loop, &b.tick);
    if (tfd >= 0) {
        ev_io_stop(loop, &b.tick_io);
        close(tfd);
    }
    bookie_get_stats(bench_bookie, &st1);
    double secs = (double)(b.end_ns - b.start_ns) / 1e9;
    uint64_t syncs = st1.journal_syncs - st0.journal_syncs;
    uint64_t sync_us = st1.journal_sync_us_total - st0.journal_sync_us_total;
    uint64_t dsyncs = st1.direct_syncs - st0.direct_syncs;
    uint64_t dsync_us = st1.direct_sync_us_total - st0.direct_sync_us_total;
    uint64_t dbytes = st1.direct_bytes - st0.direct_bytes;
    double elog_mb = ((double)st1.entry_log_bytes - (double)st0.entry_log_bytes) / 1e6;
    /* journal bytes: records are 40-byte headers + payload, or 64-byte references */
    double direct_adds = dbytes ? (double)dbytes / (double)(size + 32) : 0.0;
    double jbytes = ((double)b.acked - direct_adds) * (double)(size + 40) + direct_adds * 64.0;
    double flushed_mb = elog_mb - (double)dbytes / 1e6;
    if (rate > 0)
        printf("fixed rate %.0f/s: ", rate);
    else
        printf("max rate, %d in flight (latency = queueing): ", inflight);
    printf("%7zu B: %10.0f entries/s %8.1f MB/s  add latency us p50 %llu p99 %llu p99.9 "
           "%llu max %llu  (%llu acked, %llu failed)\n",
           size, (double)b.acked / secs, (double)b.acked * (double)size / secs / 1e6,
           (unsigned long long)hist_percentile(&b.hist, 50),
           (unsigned long long)hist_percentile(&b.hist, 99),
           (unsigned long long)hist_percentile(&b.hist, 99.9), (unsigned long long)b.hist.max,
           (unsigned long long)b.acked, (unsigned long long)b.failed);
    if (rate > 0) /* the load generator's own share of that latency */
        printf("    issued late (the rate timer, counted in the latency) us p50 %llu p99 %llu "
               "p99.9 %llu max %llu\n",
               (unsigned long long)hist_percentile(&b.late, 50),
               (unsigned long long)hist_percentile(&b.late, 99),
               (unsigned long long)hist_percentile(&b.late, 99.9), (unsigned long long)b.late.max);
    printf("    bookie: %llu journal fdatasyncs, mean %.0f us (%.0f%% of the run), %.1f adds per "
           "fdatasync; direct log: %llu fdatasyncs, write+sync mean %.0f us, %.1f MB; entry logs "
           "grew %.1f MB (%.1f MB by flushes); bytes written ~%.1f MB/s (journal %.1f + direct "
           "%.1f + flushed %.1f)\n",
           (unsigned long long)syncs, syncs ? (double)sync_us / (double)syncs : 0.0,
           (double)sync_us / 1e4 / secs, syncs ? (double)b.acked / (double)syncs : 0.0,
           (unsigned long long)dsyncs, dsyncs ? (double)dsync_us / (double)dsyncs : 0.0,
           (double)dbytes / 1e6, elog_mb, flushed_mb,
           (jbytes + (double)dbytes + flushed_mb * 1e6) / 1e6 / secs, jbytes / 1e6 / secs,
           (double)dbytes / 1e6 / secs, flushed_mb / secs);
    printf("    spares: journal files %llu taken (%llu trimmed files written over), direct logs "
           "%llu taken (%llu removed logs written over), %.1f MB of zeros written\n",
           (unsigned long long)(st1.spares_taken_journal - st0.spares_taken_journal),
           (unsigned long long)(st1.spare_jnl_reused - st0.spare_jnl_reused),
           (unsigned long long)(st1.spares_taken_direct - st0.spares_taken_direct),
           (unsigned long long)(st1.spare_logs_reused - st0.spare_logs_reused),
           (double)(st1.spare_zeroed_bytes - st0.spare_zeroed_bytes) / 1e6);
    fflush(stdout);
    bool closed = false;
    if (ledger_close(b.ledger, closed_cb, &closed) == 0)
        run_until(loop, &closed);
    if (b.tl)
        tl_write(&b, timeline);
    free(b.tl);
    qbuf_unref(b.payload);
    free(b.issue_ns);
    return b.failed ? -1 : 0;
}

static void crc_bench(double seconds)
{
    static const size_t sizes[] = {1024, 64 * 1024, 1024 * 1024};
    uint8_t *buf = malloc(sizes[2]);
    if (!buf)
        return;
    for (size_t i = 0; i < sizes[2]; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (int sw = 0; sw < 2; sw++)
        for (size_t k = 0; k < 3; k++) {
            uint64_t t0 = clock_mono_ns(), bytes = 0, now;
            uint32_t c = 0;
            do {
                for (int r = 0; r < 64; r++) {
                    c = sw ? crc32c_sw(c, buf, sizes[k]) : crc32c(c, buf, sizes[k]);
                    bytes += sizes[k];
                }
                now = clock_mono_ns();
            } while (now - t0 < (uint64_t)(seconds / 6 * 1e9));
            printf("crc32c %-5s %7zu B: %6.2f GB/s (%08x)\n", sw ? "table" : "hw", sizes[k],
                   (double)bytes / (double)(now - t0), c);
        }
    free(buf);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *sizes = "100,1024,65536", *timeline = NULL;
    double seconds = 5, rate = 0;
    int inflight = 1000;
    long large_entry_bytes = -1, group_bytes = -1, jformat = -1; /* -1: the bookie's default */
    bool crc_only = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--inflight") == 0 && i + 1 < argc)
            inflight = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (strcmp(argv[i], "--large-entry-bytes") == 0 && i + 1 < argc)
            large_entry_bytes = atol(argv[++i]);
        else if (strcmp(argv[i], "--group-bytes") == 0 && i + 1 < argc)
            group_bytes = atol(argv[++i]);
        else if (strcmp(argv[i], "--timer") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "libev") == 0 || strcmp(argv[i + 1], "timerfd") == 0))
            libev_timer = strcmp(argv[++i], "libev") == 0;
        else if (strcmp(argv[i], "--journal-format") == 0 && i + 1 < argc)
            jformat = atol(argv[++i]);
        else if (strcmp(argv[i], "--timeline") == 0 && i + 1 < argc)
            timeline = argv[++i];
        else if (strcmp(argv[i], "--crc") == 0)
            crc_only = true;
        else {
            fprintf(stderr, "usage: storage-bench [--dir DIR] [--sizes 100,1024,65536] "
                            "[--seconds S] [--inflight N] [--rate R] "
                            "[--large-entry-bytes B] [--group-bytes B] [--journal-format F] "
                            "[--timer timerfd|libev] "
                            "[--timeline FILE] | "
                            "--crc [--seconds S]\n");
            return 2;
        }
    }
    if (crc_only) {
        crc_bench(seconds);
        return 0;
    }
    char tmpl[] = "/tmp/quire-storage-bench-XXXXXX";
    if (!dir && !(dir = mkdtemp(tmpl))) {
        perror("mkdtemp");
        return 1;
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "storage-bench: --dir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (timeline && rate <= 0)
        fprintf(stderr, "storage-bench: --timeline needs --rate (a fixed-rate run); ignored\n");
    log_set_level(LOG_WARN);
    disk_baseline(dir);
    struct ev_loop *loop = ev_default_loop(0);
    char path[4200];
    snprintf(path, sizeof path, "%s/metadata.db", dir);
    md_store_t *md = NULL;
    bookie_t *bk = NULL;
    ledger_client_t *lc = NULL;
    int rc = md_store_open_embedded(loop, path, &md);
    bookie_config_t bc;
    bookie_config_defaults(&bc);
    snprintf(path, sizeof path, "%s/bookie", dir);
    mkdir(path, 0755);
    bc.data_dir = path;
    bc.journal_sync = true;
    if (large_entry_bytes >= 0)
        bc.journal_large_entry_bytes = (uint32_t)large_entry_bytes;
    if (group_bytes > 0)
        bc.journal_group_bytes_max = (uint32_t)group_bytes;
    if (jformat >= 0)
        bc.journal_format_version = (uint32_t)jformat; /* bookie_open refuses a bad one */
    printf("bookie: journal_large_entry_bytes %u (entries this large are written once), "
           "journal_group_bytes_max %u, journal format %u\n",
           bc.journal_large_entry_bytes, bc.journal_group_bytes_max, bc.journal_format_version);
    if (rc == 0)
        rc = bookie_open(loop, &bc, &bk);
    bench_bookie = bk;
    bk_client_t *bkc = rc == 0 ? bk_client_local(bk, "local") : NULL;
    ledger_client_config_t lcc;
    ledger_client_config_defaults(&lcc);
    lcc.pending_adds_max = (uint32_t)(inflight > 100000 ? inflight : 100000);
    if (rc == 0)
        rc = ledger_client_new(loop, md, &lcc, &lc);
    if (rc == 0)
        rc = ledger_client_add_bookie(lc, bkc);
    if (rc < 0) {
        fprintf(stderr, "storage-bench: setup: %s\n", q_strerror(rc));
        return 1;
    }
    int status = 0;
    for (const char *p = sizes; *p;) {
        size_t size = strtoul(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        if (size == 0 || size > (5u << 20))
            continue;
        if (run_size(loop, lc, size, seconds, inflight, rate, timeline) < 0)
            status = 1;
    }
    ledger_client_free(lc);
    bk_client_free(bkc);
    bookie_close(bk);
    md_store_close(md);
    return status;
}
