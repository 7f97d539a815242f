/*
 * quire_bookie.c — `quire bookie`: opens the bookie under --data-dir, serves
 * it with bookie_server on --bindAddress:--bookiePort, and runs the loop
 * until SIGTERM or SIGINT. Then, in this order: stop the server (no new
 * requests; connections closed), close the bookie (pending calls complete or
 * fail with QE_SHUTDOWN, the journal is checkpointed), destroy the loop.
 * Option names are Pulsar's/BookKeeper's (bookiePort, journalSyncData) so a
 * bookkeeper.conf reader recognises them.
 */
#include "src/quire_bookie.h"

#include <errno.h>
#include <ev.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/bookie_server.h"

#define QB_DEFAULT_PORT 3181
#define QB_DEFAULT_BIND "127.0.0.1"

typedef struct qb_options {
    const char *data_dir;
    const char *bind;
    int port;
    bool journal_sync;
    uint32_t large_entry_bytes;                 /* journalLargeEntryThreshold */
    bool large_entry_odirect;                   /* journalLargeEntryDirectIo */
    bool large_entry_one_sync;                  /* journalLargeEntryOneSync */
    bool journal_odirect;                       /* journalDirectIo */
    uint32_t journal_format;                    /* journalFormatVersionToWrite */
    uint32_t read_yield_us;                     /* readYieldToJournalUs */
    uint32_t spare_zero_mb;                     /* spareFileZeroRateMB */
    uint32_t compact_rate;                      /* compactionRateByBytes */
    uint32_t write_cache_mb, read_cache_mb;     /* dbStorage_{writeCache,readAheadCache}MaxSizeMb */
    double minor_threshold, major_threshold;    /* minor/majorCompactionThreshold */
    int64_t minor_interval_s, major_interval_s; /* minor/majorCompactionInterval */
    double disk_threshold, disk_lwm, disk_warn; /* diskUsage{,Lwm,Warn}Threshold */
    int64_t disk_check_ms;                      /* diskCheckInterval */
} qb_options_t;

static void qb_usage(FILE *out)
{
    fprintf(
        out,
        "usage: quire bookie --data-dir DIR [--bookiePort=N] [--bindAddress=ADDR]\n"
        "                    [--journalSyncData=true|false]\n"
        "                    [--journalLargeEntryThreshold=BYTES (0: off)]\n"
        "                    [--journalLargeEntryDirectIo=true|false]\n"
        "                    [--journalLargeEntryOneSync=true|false]\n"
        "                    [--journalDirectIo=true|false]\n"
        "                    [--journalFormatVersionToWrite=2|3 (3)]\n"
        "                    [--readYieldToJournalUs=MICROSECONDS (0: never)]\n"
        "                    [--spareFileZeroRateMB=MB_PER_S (128; 0: no spare files)]\n"
        "                    [--compactionRateByBytes=BYTES_PER_S (0: unpaced)]\n"
        "                    [--dbStorage_writeCacheMaxSizeMb=MB (1..65536)]\n"
        "                    [--dbStorage_readAheadCacheMaxSizeMb=MB (0..65536)]\n"
        "                    [--minorCompactionThreshold=F] [--minorCompactionInterval=S]\n"
        "                    [--majorCompactionThreshold=F] [--majorCompactionInterval=S]\n"
        "                    (fractions of a log, seconds; <= 0: that compaction off)\n"
        "                    [--diskUsageThreshold=F (0.95)] [--diskUsageLwmThreshold=F (0.90)]\n"
        "                    [--diskUsageWarnThreshold=F (0.90)]\n"
        "                    [--diskCheckInterval=MS (10000; 0: never)]\n"
        "                    (fractions of the disk: adds refused from the first until\n"
        "                    usage is below the second)\n");
}

/* If argv[*i] is option `name` ("--name=v" or "--name v"), sets *value and
 * returns 1 (advancing *i past a separate value); 0 if another option; -1 if
 * the value is missing. */
static int qb_match(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

static int qb_parse_bool(const char *v, bool *out)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else
        return -1;
    return 0;
}

static int qb_parse_u32(const char *v, uint32_t max, uint32_t *out)
{
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || n > max)
        return -1;
    *out = (uint32_t)n;
    return 0;
}

static int qb_parse_double(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x))
        return -1;
    *out = x;
    return 0;
}

static int qb_parse_i64(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno)
        return -1;
    *out = x;
    return 0;
}

static int qb_parse_port(const char *v, int *out)
{
    char *end;
    long p = strtol(v, &end, 10);
    if (!*v || *end || p < 0 || p > 65535)
        return -1;
    *out = (int)p;
    return 0;
}

/* One option at argv[*i]; returns 0, or -1 after printing why. */
static int qb_parse_one(int argc, char **argv, int *i, qb_options_t *o)
{
    const char *v = NULL;
    int m;
    if ((m = qb_match(argc, argv, i, "--data-dir", &v)) != 0) {
        o->data_dir = v;
    } else if ((m = qb_match(argc, argv, i, "--bookiePort", &v)) != 0) {
        if (m > 0 && qb_parse_port(v, &o->port) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--bindAddress", &v)) != 0) {
        o->bind = v;
    } else if ((m = qb_match(argc, argv, i, "--journalSyncData", &v)) != 0) {
        if (m > 0 && qb_parse_bool(v, &o->journal_sync) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--journalLargeEntryThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_u32(v, BOOKIE_LARGE_ENTRY_BYTES_MAX, &o->large_entry_bytes) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--journalLargeEntryDirectIo", &v)) != 0) {
        if (m > 0 && qb_parse_bool(v, &o->large_entry_odirect) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--journalLargeEntryOneSync", &v)) != 0) {
        if (m > 0 && qb_parse_bool(v, &o->large_entry_one_sync) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--journalDirectIo", &v)) != 0) {
        if (m > 0 && qb_parse_bool(v, &o->journal_odirect) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--journalFormatVersionToWrite", &v)) != 0) {
        if (m > 0 && (qb_parse_u32(v, BOOKIE_JOURNAL_FORMAT_MAX, &o->journal_format) < 0 ||
                      o->journal_format < BOOKIE_JOURNAL_FORMAT_MIN))
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--readYieldToJournalUs", &v)) != 0) {
        if (m > 0 && qb_parse_u32(v, BOOKIE_READ_YIELD_US_MAX, &o->read_yield_us) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--spareFileZeroRateMB", &v)) != 0) {
        if (m > 0 && qb_parse_u32(v, BOOKIE_SPARE_ZERO_RATE_MB_MAX, &o->spare_zero_mb) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--compactionRateByBytes", &v)) != 0) {
        if (m > 0 && qb_parse_u32(v, UINT32_MAX, &o->compact_rate) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--dbStorage_writeCacheMaxSizeMb", &v)) != 0) {
        if (m > 0 && (qb_parse_u32(v, BOOKIE_CACHE_MB_MAX, &o->write_cache_mb) < 0 ||
                      o->write_cache_mb == 0))
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--dbStorage_readAheadCacheMaxSizeMb", &v)) != 0) {
        if (m > 0 && qb_parse_u32(v, BOOKIE_CACHE_MB_MAX, &o->read_cache_mb) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--minorCompactionThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_double(v, &o->minor_threshold) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--majorCompactionThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_double(v, &o->major_threshold) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--minorCompactionInterval", &v)) != 0) {
        if (m > 0 && qb_parse_i64(v, &o->minor_interval_s) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--majorCompactionInterval", &v)) != 0) {
        if (m > 0 && qb_parse_i64(v, &o->major_interval_s) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--diskUsageThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_double(v, &o->disk_threshold) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--diskUsageLwmThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_double(v, &o->disk_lwm) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--diskUsageWarnThreshold", &v)) != 0) {
        if (m > 0 && qb_parse_double(v, &o->disk_warn) < 0)
            m = -2;
    } else if ((m = qb_match(argc, argv, i, "--diskCheckInterval", &v)) != 0) {
        if (m > 0 && qb_parse_i64(v, &o->disk_check_ms) < 0)
            m = -2;
    }
    if (m == 1)
        return 0;
    if (m == 0)
        fprintf(stderr, "quire bookie: unknown option %s\n", argv[*i]);
    else if (m == -1)
        fprintf(stderr, "quire bookie: %s needs a value\n", argv[*i]);
    else
        fprintf(stderr, "quire bookie: bad value \"%s\" for %s\n", v, argv[*i]);
    return -1;
}

static int qb_parse(int argc, char **argv, qb_options_t *o)
{
    o->data_dir = NULL;
    o->bind = QB_DEFAULT_BIND;
    o->port = QB_DEFAULT_PORT;
    o->journal_sync = true;
    bookie_config_t defaults;
    bookie_config_defaults(&defaults);
    o->large_entry_bytes = defaults.journal_large_entry_bytes;
    o->large_entry_odirect = defaults.journal_large_entry_odirect;
    o->large_entry_one_sync = defaults.journal_large_entry_one_sync;
    o->journal_odirect = defaults.journal_odirect;
    o->journal_format = defaults.journal_format_version;
    o->read_yield_us = defaults.read_yield_us;
    o->spare_zero_mb = (uint32_t)(defaults.spare_zero_rate_bytes >> 20);
    o->compact_rate = (uint32_t)defaults.gc_compact_bytes_per_s;
    o->write_cache_mb = (uint32_t)(defaults.write_cache_bytes >> 20);
    o->read_cache_mb = (uint32_t)(defaults.read_cache_bytes >> 20);
    o->minor_threshold = defaults.minor_compaction_threshold;
    o->minor_interval_s = (int64_t)(defaults.minor_compaction_interval_ms / 1000);
    o->major_threshold = defaults.major_compaction_threshold;
    o->major_interval_s = (int64_t)(defaults.major_compaction_interval_ms / 1000);
    o->disk_threshold = defaults.disk_usage_threshold;
    o->disk_lwm = defaults.disk_usage_lwm_threshold;
    o->disk_warn = defaults.disk_usage_warn_threshold;
    o->disk_check_ms = defaults.disk_check_interval_ms;
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "bookie") == 0)
        first = 2; /* called with the program's own argv: "quire bookie ..." */
    for (int i = first; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return 1;
        if (qb_parse_one(argc, argv, &i, o) < 0)
            return -1;
    }
    if (!o->data_dir || !*o->data_dir) {
        fprintf(stderr, "quire bookie: --data-dir is required\n");
        return -1;
    }
    char err[160];
    if (bookie_config_compaction(&defaults, o->minor_threshold, o->minor_interval_s,
                                 o->major_threshold, o->major_interval_s, err, sizeof err) < 0) {
        fprintf(stderr, "quire bookie: %s\n", err);
        return -1;
    }
    o->minor_threshold = defaults.minor_compaction_threshold; /* as applied: 0 when off */
    o->minor_interval_s = (int64_t)(defaults.minor_compaction_interval_ms / 1000);
    o->major_threshold = defaults.major_compaction_threshold;
    o->major_interval_s = (int64_t)(defaults.major_compaction_interval_ms / 1000);
    if (bookie_config_disk(&defaults, o->disk_threshold, o->disk_lwm, o->disk_warn,
                           o->disk_check_ms, err, sizeof err) < 0) {
        fprintf(stderr, "quire bookie: %s\n", err);
        return -1;
    }
    return 0;
}

static void qb_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)revents;
    log_info("bookie", "signal %d: stopping", w->signum);
    ev_break(loop, EVBREAK_ALL);
}

/* Serves bk until a signal; returns the exit status. */
static int qb_serve(struct ev_loop *loop, bookie_t *bk, const qb_options_t *o)
{
    bookie_server_t *srv;
    int rc = bookie_server_start(loop, bk, o->bind, o->port, &srv);
    if (rc < 0) {
        fprintf(stderr, "quire bookie: cannot listen on %s:%d: %s\n", o->bind, o->port,
                q_strerror(rc));
        return 1;
    }
    /* The handlers first: whoever reads the line below may stop us at once. */
    ev_signal sigterm, sigint;
    ev_signal_init(&sigterm, qb_on_signal, SIGTERM);
    ev_signal_init(&sigint, qb_on_signal, SIGINT);
    ev_signal_start(loop, &sigterm);
    ev_signal_start(loop, &sigint);
    printf("quire bookie: listening on %s:%d (data in %s, journalSyncData=%s, "
           "journalLargeEntryThreshold=%u, journalLargeEntryDirectIo=%s, "
           "journalLargeEntryOneSync=%s, journalDirectIo=%s, "
           "journalFormatVersionToWrite=%u, readYieldToJournalUs=%u, spareFileZeroRateMB=%u, "
           "compactionRateByBytes=%u, "
           "minorCompactionThreshold=%g, minorCompactionInterval=%" PRId64
           ", majorCompactionThreshold=%g, majorCompactionInterval=%" PRId64
           ", dbStorage_writeCacheMaxSizeMb=%u, dbStorage_readAheadCacheMaxSizeMb=%u"
           ", diskUsageThreshold=%g, diskUsageLwmThreshold=%g, diskUsageWarnThreshold=%g"
           ", diskCheckInterval=%" PRId64 ")\n",
           o->bind, bookie_server_port(srv), o->data_dir, o->journal_sync ? "true" : "false",
           o->large_entry_bytes, o->large_entry_odirect ? "true" : "false",
           o->large_entry_one_sync ? "true" : "false", o->journal_odirect ? "true" : "false",
           o->journal_format, o->read_yield_us, o->spare_zero_mb, o->compact_rate,
           o->minor_threshold, o->minor_interval_s, o->major_threshold, o->major_interval_s,
           o->write_cache_mb, o->read_cache_mb, o->disk_threshold, o->disk_lwm, o->disk_warn,
           o->disk_check_ms);
    fflush(stdout);
    ev_run(loop, 0);
    ev_signal_stop(loop, &sigterm);
    ev_signal_stop(loop, &sigint);
    bookie_server_stop(srv);
    return 0;
}

int quire_bookie_main(int argc, char **argv)
{
    qb_options_t o;
    int prc = qb_parse(argc, argv, &o);
    if (prc != 0) {
        qb_usage(prc > 0 ? stdout : stderr);
        return prc > 0 ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct ev_loop *loop = ev_default_loop(0);
    if (!loop) {
        fprintf(stderr, "quire bookie: cannot create the event loop\n");
        return 1;
    }
    bookie_config_t cfg;
    bookie_config_defaults(&cfg);
    cfg.data_dir = o.data_dir;
    cfg.journal_sync = o.journal_sync;
    cfg.journal_large_entry_bytes = o.large_entry_bytes;
    cfg.journal_large_entry_odirect = o.large_entry_odirect;
    cfg.journal_large_entry_one_sync = o.large_entry_one_sync;
    cfg.journal_odirect = o.journal_odirect;
    cfg.journal_format_version = o.journal_format;
    cfg.read_yield_us = o.read_yield_us;
    cfg.spare_zero_rate_bytes = (uint64_t)o.spare_zero_mb << 20;
    cfg.gc_compact_bytes_per_s = o.compact_rate;
    cfg.write_cache_bytes = (uint64_t)o.write_cache_mb << 20;
    cfg.read_cache_bytes = (uint64_t)o.read_cache_mb << 20;
    char err[160]; /* checked in qb_parse: cannot fail here */
    bookie_config_compaction(&cfg, o.minor_threshold, o.minor_interval_s, o.major_threshold,
                             o.major_interval_s, err, sizeof err);
    bookie_config_disk(&cfg, o.disk_threshold, o.disk_lwm, o.disk_warn, o.disk_check_ms, err,
                       sizeof err);
    bookie_t *bk;
    int rc = bookie_open(loop, &cfg, &bk);
    if (rc < 0) {
        fprintf(stderr, "quire bookie: cannot open the bookie in %s: %s\n", o.data_dir,
                q_strerror(rc));
        ev_loop_destroy(loop);
        return 1;
    }
    int status = qb_serve(loop, bk, &o);
    bookie_close(bk);
    ev_loop_destroy(loop);
    log_info("bookie", "stopped");
    return status;
}
