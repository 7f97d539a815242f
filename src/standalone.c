/*
 * standalone.c — `quire standalone`: one process holding the metadata store
 * (SQLite under <data>/metadata), one bookie (<data>/bookie), the ledger
 * client and managed-ledger factory over it (E = Qw = Qa = 1), the broker and
 * (when built) the admin HTTP service.
 *
 * Start order: configuration (file, then --KEY=VALUE overrides), data
 * directory, metadata store, bookie, ledger client, managed-ledger factory,
 * broker, listeners. Stop (SIGTERM/SIGINT): broker shutdown (connections
 * closed, cursors persisted, ledgers sealed), then the layers below in
 * reverse order, each completing its pending work. A second signal during
 * shutdown exits at once (the journal makes that safe).
 */
#include "src/standalone.h"

#include <errno.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/mem_trim.h"
#include "server/broker.h"
#include "server/broker_security.h"
#include "src/services.h"
#include "storage/bookie/bookie.h"
#include "storage/ledger/bookie_client.h"
#include "storage/ledger/ledger.h"
#include "storage/managed/managed_ledger.h"
#include "storage/metadata/metadata.h"

typedef struct standalone {
    struct ev_loop *loop;
    qconfig_t *conf;
    char data_dir[4096];
    md_store_t *md;
    bookie_t *bookie;
    bk_client_t *bk;
    ledger_client_t *lc;
    ml_factory_t *mlf;
    broker_t *broker;
    services_t *services;
    ev_signal sigterm, sigint;
    qtrim_t trim; /* freed memory back to the system when quiet after a burst */
    bool stopping;
} standalone_t;

static uint64_t sa_activity(void *arg)
{
    return broker_bytes_written(arg);
}

static void sa_usage(FILE *f)
{
    fprintf(f, "usage: quire standalone [-c FILE] [--data-dir DIR] [--KEY=VALUE ...]\n");
}

/* -c FILE, --data-dir DIR (or --data-dir=DIR), --KEY=VALUE; file first, then
 * the overrides in order. */
static int sa_parse_args(standalone_t *sa, int argc, char **argv)
{
    const char *file = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strncmp(argv[i], "--data-dir=", 11) == 0)
            dir = argv[i] + 11;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            sa_usage(stdout);
            exit(0);
        }
    }
    char err[512];
    if (file && qconfig_load_file(sa->conf, file, err, sizeof err) < 0) {
        fprintf(stderr, "quire: configuration: %s\n", err);
        return -1;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0 ||
            strcmp(argv[i], "--data-dir") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--data-dir=", 11) == 0)
            continue;
        const char *eq = strchr(argv[i], '=');
        if (strncmp(argv[i], "--", 2) != 0 || !eq || eq == argv[i] + 2) {
            fprintf(stderr, "quire: unexpected argument '%s'\n", argv[i]);
            sa_usage(stderr);
            return -1;
        }
        char key[256];
        size_t klen = (size_t)(eq - argv[i] - 2);
        if (klen >= sizeof key) {
            fprintf(stderr, "quire: option name too long: %s\n", argv[i]);
            return -1;
        }
        memcpy(key, argv[i] + 2, klen);
        key[klen] = '\0';
        if (qconfig_set(sa->conf, key, eq + 1) < 0) {
            fprintf(stderr, "quire: too many options\n");
            return -1;
        }
    }
    if (!dir)
        dir = qconfig_get(sa->conf, "dataDir", "data");
    if (strlen(dir) >= sizeof sa->data_dir - 64) {
        fprintf(stderr, "quire: --data-dir path too long\n");
        return -1;
    }
    snprintf(sa->data_dir, sizeof sa->data_dir, "%s", dir);
    return 0;
}

static int mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -errno;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* ---------------------------------------------------------------- stop -- */

static void sa_teardown(standalone_t *sa)
{
    if (sa->loop)
        qtrim_stop(&sa->trim, sa->loop);
    services_stop(sa->services);
    sa->services = NULL;
    broker_free(sa->broker);
    sa->broker = NULL;
    ml_factory_free(sa->mlf);
    sa->mlf = NULL;
    ledger_client_free(sa->lc);
    sa->lc = NULL;
    bk_client_free(sa->bk);
    sa->bk = NULL;
    bookie_close(sa->bookie);
    sa->bookie = NULL;
    md_store_close(sa->md);
    sa->md = NULL;
}

static void sa_broker_stopped(void *arg)
{
    standalone_t *sa = arg;
    log_info("standalone", "broker stopped; closing storage");
    qtrim_stop(&sa->trim, sa->loop);
    ev_signal_stop(sa->loop, &sa->sigterm);
    ev_signal_stop(sa->loop, &sa->sigint);
    ev_break(sa->loop, EVBREAK_ALL);
}

static void sa_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    standalone_t *sa = w->data;
    if (sa->stopping) {
        log_warn("standalone", "second signal: exiting now");
        _exit(1);
    }
    sa->stopping = true;
    log_info("standalone", "signal %d: shutting down", w->signum);
    services_stop(sa->services);
    sa->services = NULL;
    broker_shutdown(sa->broker, sa_broker_stopped, sa);
}

/* --------------------------------------------------------------- start -- */

/* BookKeeper's compaction schedule: minor/majorCompactionThreshold (fractions)
 * and minor/majorCompactionInterval (seconds); <= 0 turns a kind off. */
static int sa_compaction_config(const qconfig_t *conf, bookie_config_t *bc)
{
    static const char *const thr_key[2] = {"minorCompactionThreshold", "majorCompactionThreshold"};
    static const char *const int_key[2] = {"minorCompactionInterval", "majorCompactionInterval"};
    double thr[2] = {bc->minor_compaction_threshold, bc->major_compaction_threshold};
    int64_t secs[2] = {(int64_t)(bc->minor_compaction_interval_ms / 1000),
                       (int64_t)(bc->major_compaction_interval_ms / 1000)};
    for (int i = 0; i < 2; i++) {
        if (qconfig_get_double(conf, thr_key[i], thr[i], -1e9, 1e9, &thr[i]) < 0) {
            log_error("standalone", "%s: expected a number (a fraction of a log)", thr_key[i]);
            return QE_INVALID;
        }
        if (qconfig_get_int(conf, int_key[i], secs[i], INT64_MIN, INT64_MAX, &secs[i]) < 0) {
            log_error("standalone", "%s: expected whole seconds", int_key[i]);
            return QE_INVALID;
        }
    }
    char err[160];
    if (bookie_config_compaction(bc, thr[0], secs[0], thr[1], secs[1], err, sizeof err) < 0) {
        log_error("standalone", "%s", err);
        return QE_INVALID;
    }
    return 0;
}

/* BookKeeper's disk-usage keys: diskUsageThreshold, diskUsageLwmThreshold,
 * diskUsageWarnThreshold (fractions of the disk) and diskCheckInterval (ms). */
static int sa_disk_config(const qconfig_t *conf, bookie_config_t *bc)
{
    double thr = bc->disk_usage_threshold, lwm = bc->disk_usage_lwm_threshold;
    double warn = bc->disk_usage_warn_threshold;
    int64_t every_ms = bc->disk_check_interval_ms;
    if (qconfig_get_double(conf, "diskUsageThreshold", thr, -1e9, 1e9, &thr) < 0 ||
        qconfig_get_double(conf, "diskUsageLwmThreshold", lwm, -1e9, 1e9, &lwm) < 0 ||
        qconfig_get_double(conf, "diskUsageWarnThreshold", warn, -1e9, 1e9, &warn) < 0) {
        log_error("standalone", "diskUsageThreshold, diskUsageLwmThreshold, "
                                "diskUsageWarnThreshold: expected a fraction of the disk");
        return QE_INVALID;
    }
    if (qconfig_get_int(conf, "diskCheckInterval", every_ms, INT64_MIN, INT64_MAX, &every_ms) < 0) {
        log_error("standalone", "diskCheckInterval: expected whole milliseconds");
        return QE_INVALID;
    }
    char err[160];
    if (bookie_config_disk(bc, thr, lwm, warn, every_ms, err, sizeof err) < 0) {
        log_error("standalone", "%s", err);
        return QE_INVALID;
    }
    return 0;
}

static int sa_open_storage(standalone_t *sa, const broker_config_t *bcfg)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/metadata", sa->data_dir);
    if (mkdir_p(path) < 0)
        return -errno;
    snprintf(path, sizeof path, "%s/metadata/store.db", sa->data_dir);
    int rc = md_store_open_embedded(sa->loop, path, &sa->md);
    if (rc < 0) {
        log_error("standalone", "metadata store %s: %s", path, q_strerror(rc));
        return rc;
    }
    bookie_config_t bc;
    bookie_config_defaults(&bc);
    snprintf(path, sizeof path, "%s/bookie", sa->data_dir);
    bc.data_dir = path;
    bool sync = true;
    if (qconfig_get_bool(sa->conf, "journalSyncData", true, &sync) < 0) {
        log_error("standalone", "journalSyncData: expected true or false");
        return QE_INVALID;
    }
    bc.journal_sync = sync;
    int64_t large = 0;
    if (qconfig_get_int(sa->conf, "journalLargeEntryThreshold", bc.journal_large_entry_bytes, 0,
                        BOOKIE_LARGE_ENTRY_BYTES_MAX, &large) < 0) {
        log_error("standalone", "journalLargeEntryThreshold: expected 0..%u bytes",
                  BOOKIE_LARGE_ENTRY_BYTES_MAX);
        return QE_INVALID;
    }
    bc.journal_large_entry_bytes = (uint32_t)large;
    bool odirect = bc.journal_large_entry_odirect;
    if (qconfig_get_bool(sa->conf, "journalLargeEntryDirectIo", odirect, &odirect) < 0) {
        log_error("standalone", "journalLargeEntryDirectIo: expected true or false");
        return QE_INVALID;
    }
    bc.journal_large_entry_odirect = odirect;
    bool one_sync = bc.journal_large_entry_one_sync;
    if (qconfig_get_bool(sa->conf, "journalLargeEntryOneSync", one_sync, &one_sync) < 0) {
        log_error("standalone", "journalLargeEntryOneSync: expected true or false");
        return QE_INVALID;
    }
    bc.journal_large_entry_one_sync = one_sync;
    bool jdirect = bc.journal_odirect;
    if (qconfig_get_bool(sa->conf, "journalDirectIo", jdirect, &jdirect) < 0) {
        log_error("standalone", "journalDirectIo: expected true or false");
        return QE_INVALID;
    }
    bc.journal_odirect = jdirect;
    int64_t jformat = 0;
    if (qconfig_get_int(sa->conf, "journalFormatVersionToWrite", bc.journal_format_version,
                        BOOKIE_JOURNAL_FORMAT_MIN, BOOKIE_JOURNAL_FORMAT_MAX, &jformat) < 0) {
        log_error("standalone", "journalFormatVersionToWrite: expected %u..%u",
                  BOOKIE_JOURNAL_FORMAT_MIN, BOOKIE_JOURNAL_FORMAT_MAX);
        return QE_INVALID;
    }
    bc.journal_format_version = (uint32_t)jformat;
    int64_t yield_us = 0;
    if (qconfig_get_int(sa->conf, "readYieldToJournalUs", bc.read_yield_us, 0,
                        BOOKIE_READ_YIELD_US_MAX, &yield_us) < 0) {
        log_error("standalone", "readYieldToJournalUs: expected 0..%u microseconds",
                  BOOKIE_READ_YIELD_US_MAX);
        return QE_INVALID;
    }
    bc.read_yield_us = (uint32_t)yield_us;
    int64_t stats_s = 0; /* the broker reads it too: one window for every summary */
    if (qconfig_get_int(sa->conf, "statsUpdateFrequencyInSecs", 60, 1, 3600, &stats_s) < 0) {
        log_error("standalone", "statsUpdateFrequencyInSecs: expected 1..3600 seconds");
        return QE_INVALID;
    }
    bc.stats_window_s = (uint32_t)stats_s;
    int64_t zero_mb = 0;
    if (qconfig_get_int(sa->conf, "spareFileZeroRateMB", (int64_t)(bc.spare_zero_rate_bytes >> 20),
                        0, BOOKIE_SPARE_ZERO_RATE_MB_MAX, &zero_mb) < 0) {
        log_error("standalone", "spareFileZeroRateMB: expected 0..%u MB per second (0: off)",
                  BOOKIE_SPARE_ZERO_RATE_MB_MAX);
        return QE_INVALID;
    }
    bc.spare_zero_rate_bytes = (uint64_t)zero_mb << 20;
    int64_t compact_rate = 0;
    if (qconfig_get_int(sa->conf, "compactionRateByBytes", (int64_t)bc.gc_compact_bytes_per_s, 0,
                        INT64_MAX, &compact_rate) < 0) {
        log_error("standalone", "compactionRateByBytes: expected bytes per second, 0 = unpaced");
        return QE_INVALID;
    }
    bc.gc_compact_bytes_per_s = (uint64_t)compact_rate;
    int64_t wc_mb = 0, rc_mb = 0;
    if (qconfig_get_int(sa->conf, "dbStorage_writeCacheMaxSizeMb",
                        (int64_t)(bc.write_cache_bytes >> 20), 1, BOOKIE_CACHE_MB_MAX,
                        &wc_mb) < 0 ||
        qconfig_get_int(sa->conf, "dbStorage_readAheadCacheMaxSizeMb",
                        (int64_t)(bc.read_cache_bytes >> 20), 0, BOOKIE_CACHE_MB_MAX, &rc_mb) < 0) {
        log_error("standalone",
                  "dbStorage_writeCacheMaxSizeMb (1..%u) and "
                  "dbStorage_readAheadCacheMaxSizeMb (0..%u): expected megabytes",
                  BOOKIE_CACHE_MB_MAX, BOOKIE_CACHE_MB_MAX);
        return QE_INVALID;
    }
    bc.write_cache_bytes = (uint64_t)wc_mb << 20;
    bc.read_cache_bytes = (uint64_t)rc_mb << 20;
    if ((rc = sa_compaction_config(sa->conf, &bc)) < 0)
        return rc;
    if ((rc = sa_disk_config(sa->conf, &bc)) < 0)
        return rc;
    rc = bookie_open(sa->loop, &bc, &sa->bookie);
    if (rc < 0) {
        log_error("standalone", "bookie %s: %s", path, q_strerror(rc));
        return rc;
    }
    sa->bk = bk_client_local(sa->bookie, "local");
    ledger_client_config_t lcc;
    ledger_client_config_defaults(&lcc);
    /* Pulsar's bound on a bookie add or read (default 30 s). With the one local
     * bookie a timeout cannot be mended by another bookie: it fails the
     * ledger, so a bookie that is only slow (write cache full, a long
     * fdatasync) must not hit it early. */
    int64_t bk_timeout_s = 0;
    if (qconfig_get_int(sa->conf, "bookkeeperClientTimeoutInSeconds", 30, 1, 3600, &bk_timeout_s) <
        0) {
        log_error("standalone", "bookkeeperClientTimeoutInSeconds: expected 1..3600 seconds");
        return QE_INVALID;
    }
    lcc.add_timeout_ms = (uint32_t)(bk_timeout_s * 1000);
    rc = ledger_client_new(sa->loop, sa->md, &lcc, &sa->lc);
    if (rc == 0)
        rc = ledger_client_add_bookie(sa->lc, sa->bk);
    int64_t cache_mb = 0;
    if (rc == 0 &&
        qconfig_get_int(sa->conf, "managedLedgerCacheSizeMB", 128, 0, 1 << 20, &cache_mb) < 0) {
        log_error("standalone", "managedLedgerCacheSizeMB: expected a whole number");
        return QE_INVALID;
    }
    int64_t cache_age_ms = 0;
    if (rc == 0 && qconfig_get_int(sa->conf, "managedLedgerCacheEvictionTimeThresholdMillis", 1000,
                                   0, 24 * 3600 * 1000, &cache_age_ms) < 0) {
        log_error("standalone", "managedLedgerCacheEvictionTimeThresholdMillis: expected "
                                "0..86400000 milliseconds");
        return QE_INVALID;
    }
    if (rc == 0)
        rc = ml_factory_new(sa->loop, sa->md, sa->lc, (uint64_t)cache_mb << 20, &sa->mlf);
    if (rc == 0)
        ml_factory_set_cache_age(sa->mlf, (double)cache_age_ms / 1000.0);
    bool by_expected = true;
    int64_t extensions = ML_CACHE_EXTENSIONS_DEFAULT;
    if (rc == 0 &&
        qconfig_get_bool(sa->conf, "cacheEvictionByExpectedReadCount", true, &by_expected) < 0) {
        log_error("standalone", "cacheEvictionByExpectedReadCount: expected true or false");
        return QE_INVALID;
    }
    if (rc == 0 &&
        qconfig_get_int(
            sa->conf,
            "managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes",
            ML_CACHE_EXTENSIONS_DEFAULT, 0, 1000, &extensions) < 0) {
        log_error("standalone", "managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpected"
                                "ReadsMaxTimes: expected 0..1000");
        return QE_INVALID;
    }
    if (rc == 0)
        ml_factory_set_cache_expected_reads(sa->mlf, by_expected, (uint32_t)extensions);
    int64_t reads_mb = 0;
    if (rc == 0 && qconfig_get_int(sa->conf, "managedLedgerMaxReadsInFlightSizeInMB", 32, 0,
                                   1 << 20, &reads_mb) < 0) {
        log_error("standalone", "managedLedgerMaxReadsInFlightSizeInMB: expected 0..1048576 MiB");
        return QE_INVALID;
    }
    if (rc == 0)
        ml_factory_set_reads_bytes_max(sa->mlf, (uint64_t)reads_mb << 20);
    (void)bcfg;
    if (rc < 0)
        log_error("standalone", "storage: %s", q_strerror(rc));
    return rc;
}

int quire_standalone_main(int argc, char **argv)
{
    uint64_t t0 = clock_mono_us();
    standalone_t sa = {0};
    sa.conf = qconfig_new();
    if (!sa.conf || sa_parse_args(&sa, argc, argv) < 0)
        return 2;
    log_level_t level;
    if (log_level_parse(qconfig_get(sa.conf, "logLevel", "info"), &level) == 0)
        log_set_level(level);
    broker_config_t bcfg;
    char err[512];
    if (broker_config_load(sa.conf, &bcfg, err, sizeof err) < 0) {
        fprintf(stderr, "quire: configuration: %s\n", err);
        qconfig_free(sa.conf);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sa.loop = ev_default_loop(0);
    int rc = mkdir_p(sa.data_dir);
    if (rc < 0) {
        fprintf(stderr, "quire: cannot create data directory %s: %s\n", sa.data_dir, strerror(-rc));
        return 1;
    }
    rc = sa_open_storage(&sa, &bcfg);
    if (rc == 0)
        rc = broker_new(sa.loop, &bcfg, sa.md, sa.mlf, &sa.broker);
    if (rc == 0 && (rc = broker_security_configure(sa.broker, sa.conf, err, sizeof err)) < 0)
        fprintf(stderr, "quire: configuration: %s\n", err); /* TLS, authentication, limits */
    if (rc == 0)
        rc = broker_listen(sa.broker);
    if (rc == 0)
        rc = services_start(sa.loop, sa.conf, sa.broker, sa.md, sa.bookie, &sa.services);
    if (rc < 0) {
        fprintf(stderr, "quire: cannot start: %s\n", q_strerror(rc));
        sa_teardown(&sa);
        qconfig_free(sa.conf);
        return 1;
    }
    ev_signal_init(&sa.sigterm, sa_signal_cb, SIGTERM);
    ev_signal_init(&sa.sigint, sa_signal_cb, SIGINT);
    sa.sigterm.data = sa.sigint.data = &sa;
    ev_signal_start(sa.loop, &sa.sigterm);
    ev_signal_start(sa.loop, &sa.sigint);
    qtrim_start(&sa.trim, sa.loop, 5.0, sa_activity, sa.broker);

    char real[4096];
    const char *shown = realpath(sa.data_dir, real) ? real : sa.data_dir;
    printf("quire standalone ready in %.1f ms\n"
           "  broker service: pulsar://%s:%d\n"
           "  web service:    %s\n"
           "  data directory: %s\n",
           (double)(clock_mono_us() - t0) / 1000.0, bcfg.advertised_address, broker_port(sa.broker),
           services_web_url(sa.services), shown);
    fflush(stdout);

    ev_run(sa.loop, 0);
    sa_teardown(&sa);
    qconfig_free(sa.conf);
    log_info("standalone", "stopped");
    return 0;
}
