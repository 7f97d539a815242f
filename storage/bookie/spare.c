/*
 * spare.c — the bk-zero thread and the spare files it zeroes (spare.h).
 *
 * State is under mu. The thread holds mu while it writes a chunk, so a take
 * waits for at most one chunk (SPARE_CHUNK_BYTES) and never finds a write in
 * flight into the file it renames; it releases mu while it syncs. Every
 * TICK_US it samples what the bookie wrote per kind (a moving average for
 * the targets); before every chunk it looks whether the bookie wrote at all
 * (zeros only after idle_us without a write), and between chunks it
 * sleeps so that its writes stay at the configured rate.
 */
#include "storage/bookie/spare.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_io.h"

#define TICK_US 100000u
/* A kind's average rate: over about ten seconds (an average of ticks). */
#define AVG_TICKS 100u
/* After ENOSPC or another write error: no zeroing for this long. */
#define BACKOFF_US (60u * 1000000u)

typedef struct spare {
    char path[PATH_MAX];
    int fd;          /* O_DIRECT, or -1: no file */
    uint32_t align;  /* fd's alignment */
    uint64_t zeroed; /* zeros written from offset 0 */
    uint64_t synced; /* of which fdatasynced */
    uint64_t target; /* what the kind's rate asks for (mu) */
    atomic_bool ready;
    atomic_uint_fast64_t written; /* the bookie's bytes of this kind */
    uint64_t seen;                /* written at the last tick */
    uint64_t looked;              /* written at the last look (idle or not) */
    double avg;                   /* bytes per tick, moving average */
    uint64_t taken;
    bool no_direct; /* its directory refuses O_DIRECT: never a spare */
    bool syncing;   /* the thread syncs fd without mu */
    int close_fd;   /* taken or removed while syncing: the thread closes it after */
} spare_t;

struct spares {
    spare_config_t cfg;
    spare_t k[SPARE_KINDS];
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    pthread_t thread;
    bool started, stop, paused;
    uint8_t *zeros; /* SPARE_CHUNK_BYTES, aligned; while zeroing */
    uint32_t align;
    uint64_t zeroed_bytes;
    uint64_t reused[SPARE_KINDS];
    uint64_t backoff_until_us;
};

/* mu held: fd is done with (closed now, or by the thread after its sync). */
static void spare_release_fd(spare_t *p)
{
    if (p->syncing)
        p->close_fd = p->fd;
    else
        close(p->fd);
    p->fd = -1;
}

static void spare_remove(spare_t *p)
{
    if (p->fd >= 0) {
        unlink(p->path);
        spare_release_fd(p); /* fd -1 */
    }
    p->zeroed = p->synced = 0;
    atomic_store(&p->ready, false);
}

/* mu held. The spare exists, and the buffer of zeros for its alignment.
 * -EOPNOTSUPP: its file system takes no O_DIRECT (or wants larger blocks
 * than a chunk). */
static int spare_open(spares_t *s, spare_t *p)
{
    if (p->fd < 0) {
        int fd = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return -errno;
        close(fd);
        p->fd = bk_open_direct(p->path, O_WRONLY, &p->align);
        if (p->fd < 0 || p->align > SPARE_CHUNK_BYTES) {
            if (p->fd >= 0)
                close(p->fd);
            p->fd = -1;
            unlink(p->path);
            return -EOPNOTSUPP;
        }
    }
    if (!s->zeros || p->align > s->align) {
        free(s->zeros);
        void *z = NULL;
        s->zeros = posix_memalign(&z, p->align, SPARE_CHUNK_BYTES) == 0 ? z : NULL;
        if (!s->zeros)
            return -ENOMEM;
        memset(s->zeros, 0, SPARE_CHUNK_BYTES);
        s->align = p->align;
    }
    return 0;
}

/* A journal spare's zeros must be on the disk before records are written
 * over them (with journal format 2, a record of an older journal in a block
 * whose zeros were lost would read as a record; format 3's records are valid
 * in their own file only, journal.h). The journal's first group lands within the first
 * SPARE_EARLY_MIN_BYTES and its fdatasync flushes every zero written before
 * the take, so a take syncs only a spare that has not that much synced. A
 * direct log's records are found by reference and checksum. */
static bool spare_needs_sync(int kind)
{
    return kind == SPARE_JOURNAL;
}

/* A whole file, or SPARE_EARLY_MIN_BYTES: what a spare must hold to be
 * rolled to early. */
static uint64_t spare_early_min(const spares_t *s, int kind)
{
    uint64_t size = s->cfg.size[kind] / SPARE_CHUNK_BYTES * SPARE_CHUNK_BYTES;
    return size < SPARE_EARLY_MIN_BYTES ? size : SPARE_EARLY_MIN_BYTES;
}

/* mu held. Ready: enough zeros synced to be worth an early roll (the thread
 * stops between two syncs when the bookie writes again). */
static void spare_note_ready(spares_t *s, spare_t *p, int kind)
{
    uint64_t min = spare_early_min(s, kind);
    atomic_store(&p->ready, p->fd >= 0 && min > 0 && p->synced >= min);
}

/* mu held: one chunk of zeros into p. A take waits for it (never for a
 * sync: spare_sync). */
static int spare_zero_chunk(spares_t *s, spare_t *p)
{
    int rc = spare_open(s, p);
    if (rc)
        return rc;
    uint64_t n = p->target - p->zeroed;
    if (n > SPARE_CHUNK_BYTES)
        n = SPARE_CHUNK_BYTES;
    n = (n + p->align - 1) / p->align * p->align;
    rc = bk_pwrite_all(p->fd, s->zeros, (size_t)n, p->zeroed);
    if (rc)
        return rc;
    p->zeroed += n;
    s->zeroed_bytes += n;
    spare_note_ready(s, p, (int)(p - s->k));
    return 0;
}

/* mu held, released during the fdatasync: a spare's zeros since its last
 * sync (every SPARE_BURST_BYTES and at its target), flushed while the bookie
 * is idle, not by the bookie's next fdatasync. */
static int spare_sync(spares_t *s, spare_t *p)
{
    int fd = p->fd;
    uint64_t upto = p->zeroed;
    p->syncing = true;
    p->close_fd = -1;
    pthread_mutex_unlock(&s->mu);
    int rc = fdatasync(fd) < 0 ? -errno : 0;
    pthread_mutex_lock(&s->mu);
    p->syncing = false;
    if (p->close_fd >= 0) { /* taken or removed meanwhile */
        close(p->close_fd);
        p->close_fd = -1;
        return 0;
    }
    if (rc == 0 && upto > p->synced)
        p->synced = upto;
    spare_note_ready(s, p, (int)(p - s->k));
    return rc;
}

/* mu held, every tick: each kind's average rate and target. */
static void spares_tick(spares_t *s)
{
    for (int i = 0; i < SPARE_KINDS; i++) {
        spare_t *p = &s->k[i];
        uint64_t w = atomic_load(&p->written), d = w - p->seen;
        p->seen = w;
        p->avg += ((double)d - p->avg) / AVG_TICKS;
        double want = p->avg * (SPARE_AHEAD_S * 1e6 / TICK_US);
        uint64_t t = want >= (double)s->cfg.size[i] ? s->cfg.size[i] : (uint64_t)want;
        t = t / SPARE_CHUNK_BYTES * SPARE_CHUNK_BYTES; /* whole chunks: none below one */
        if (t > p->target) /* never lowered: zeros written stay useful */
            p->target = t;
        spare_note_ready(s, p, i);
    }
}

/* mu held: whether the bookie wrote anything since the last look. */
static bool spares_wrote(spares_t *s)
{
    bool any = false;
    for (int i = 0; i < SPARE_KINDS; i++) {
        uint64_t w = atomic_load(&s->k[i].written);
        any |= w != s->k[i].looked;
        s->k[i].looked = w;
    }
    return any;
}

static void cv_wait_us(spares_t *s, uint64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(us / 1000000);
    ts.tv_nsec += (long)(us % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

static void *spares_main(void *arg)
{
    spares_t *s = arg;
    uint64_t chunk_us = (uint64_t)SPARE_CHUNK_BYTES * 1000000 / s->cfg.rate_bytes_per_s;
    uint64_t next_tick = clock_mono_us() + TICK_US, last_write = clock_mono_us();
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        uint64_t now = clock_mono_us();
        if (now >= next_tick) {
            spares_tick(s);
            next_tick = now + TICK_US;
        }
        if (spares_wrote(s))
            last_write = now;
        bool idle = now - last_write >= s->cfg.idle_us;
        if (s->paused) {
            for (int i = 0; i < SPARE_KINDS; i++)
                spare_remove(&s->k[i]);
        }
        spare_t *p = NULL;
        bool synced = false;
        for (int i = 0; i < SPARE_KINDS && !p && idle && !s->paused; i++) {
            spare_t *k = &s->k[i];
            if (k->fd >= 0 && k->synced < k->zeroed &&
                (k->zeroed >= k->target || k->zeroed - k->synced >= SPARE_BURST_BYTES)) {
                if (spare_sync(s, k) != 0) {
                    log_warn("bookie", "%s: cannot sync a spare file: none for %u s", k->path,
                             BACKOFF_US / 1000000);
                    spare_remove(k);
                    s->backoff_until_us = clock_mono_us() + BACKOFF_US;
                }
                synced = true; /* mu was released: look again */
                break;
            }
            if (k->zeroed < k->target && !k->no_direct)
                p = k;
        }
        if (s->stop)
            break;
        if (synced)
            continue;
        if (!p || now < s->backoff_until_us) {
            if (!p && idle && s->zeros) { /* nothing to zero: the buffer goes */
                free(s->zeros);
                s->zeros = NULL;
            }
            uint64_t wait = next_tick > now ? next_tick - now : 1;
            if (!idle && wait > s->cfg.idle_us / 4) /* see the quiet start soon enough */
                wait = s->cfg.idle_us / 4 + 1;
            cv_wait_us(s, wait);
            continue;
        }
        int rc = spare_zero_chunk(s, p);
        if (rc == -EOPNOTSUPP) { /* for good: the journal and logs are buffered there too */
            log_info("bookie", "%s: no O_DIRECT here: no spare files in this directory", p->path);
            p->no_direct = true;
            continue;
        }
        if (rc) {
            log_warn("bookie", "%s: cannot zero a spare file (%s): none for %u s", p->path,
                     q_strerror(rc), BACKOFF_US / 1000000);
            spare_remove(p);
            s->backoff_until_us = clock_mono_us() + BACKOFF_US;
            continue;
        }
        uint64_t after = clock_mono_us() - now;
        if (after < chunk_us)
            cv_wait_us(s, chunk_us - after);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void spares_remove_left(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" SPARE_FILE_NAME, dir);
    if (unlink(path) == 0)
        log_info("bookie", "removed %s, left by an earlier run", path);
}

int spares_start(const spare_config_t *cfg, spares_t **out)
{
    if (!cfg->rate_bytes_per_s)
        return -EINVAL;
    spares_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->cfg = *cfg;
    for (int i = 0; i < SPARE_KINDS; i++) {
        spare_t *p = &s->k[i];
        p->fd = -1;
        snprintf(p->path, sizeof p->path, "%s/" SPARE_FILE_NAME, cfg->dir[i]);
        s->cfg.dir[i] = NULL; /* not owned */
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&s->thread, NULL, spares_main, s) != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return -EAGAIN;
    }
    pthread_setname_np(s->thread, "bk-zero");
    s->started = true;
    *out = s;
    return 0;
}

void spares_stop(spares_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    for (int i = 0; i < SPARE_KINDS; i++)
        spare_remove(&s->k[i]);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->zeros);
    free(s);
}

void spares_note_written(spares_t *s, spare_kind_t k, uint64_t bytes)
{
    if (s)
        atomic_fetch_add(&s->k[k].written, bytes);
}

void spares_set_paused(spares_t *s, bool paused)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->paused = paused;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

bool spares_ready(spares_t *s, spare_kind_t k)
{
    return s && atomic_load(&s->k[k].ready);
}

int spares_take(spares_t *s, spare_kind_t k, const char *path, uint64_t *zeroed)
{
    if (!s)
        return -ENOENT;
    spare_t *p = &s->k[k];
    pthread_mutex_lock(&s->mu);
    int rc = p->fd >= 0 && p->zeroed > 0 ? 0 : -ENOENT;
    /* a journal spare taken before its sync (a roll before it was ready) */
    if (rc == 0 && spare_needs_sync(k) && p->synced < p->zeroed &&
        p->synced < spare_early_min(s, k) && fdatasync(p->fd) < 0)
        rc = -errno;
    if (rc == 0 && rename(p->path, path) < 0)
        rc = -errno;
    if (rc == 0) {
        *zeroed = p->zeroed;
        log_info("bookie", "%s: a spare with %" PRIu64 " MiB written ahead", path, p->zeroed >> 20);
        spare_release_fd(p);
        p->zeroed = p->synced = 0;
        atomic_store(&p->ready, false);
        p->taken++;
        pthread_cond_signal(&s->cv); /* the next one */
    } else if (rc != -ENOENT) {
        log_warn("bookie", "%s: cannot take it as %s: %s", p->path, path, q_strerror(rc));
        spare_remove(p);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int spares_offer(spares_t *s, spare_kind_t k, const char *path)
{
    if (!s)
        return -EBUSY;
    spare_t *p = &s->k[k];
    pthread_mutex_lock(&s->mu);
    int rc = s->stop || s->paused || p->no_direct || p->fd >= 0 ? -EBUSY : 0;
    struct stat st;
    if (rc == 0 && stat(path, &st) < 0)
        rc = -errno;
    if (rc == 0 && ((uint64_t)st.st_size > s->cfg.size[k] || st.st_size < SPARE_CHUNK_BYTES))
        rc = -EBUSY; /* a larger file than the kind's, or too small to matter */
    uint32_t align = 0;
    int fd = rc == 0 ? bk_open_direct(path, O_WRONLY, &align) : -1;
    if (rc == 0 && (fd < 0 || align > SPARE_CHUNK_BYTES))
        rc = -EBUSY;
    /* written blocks from offset 0: up to the first hole or unwritten extent
     * (a journal file rolled early has its preallocated rest unwritten) */
    off_t hole = rc == 0 ? lseek(fd, 0, SEEK_HOLE) : 0;
    uint64_t written = hole >= 0 && hole < st.st_size ? (uint64_t)hole : (uint64_t)st.st_size;
    if (rc == 0 && written < SPARE_CHUNK_BYTES)
        rc = -EBUSY;
    if (rc == 0 && rename(path, p->path) < 0)
        rc = -errno;
    if (rc == 0) {
        p->fd = fd;
        fd = -1;
        p->align = align;
        p->zeroed = p->synced = written / align * align;
        spare_note_ready(s, p, k);
        s->reused[k]++;
        log_info("bookie", "%s kept as the spare %s (%" PRIu64 " MiB written before)", path,
                 p->path, p->zeroed >> 20);
    }
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void spares_get_stats(spares_t *s, spare_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    out->zeroed_bytes = s->zeroed_bytes;
    for (int i = 0; i < SPARE_KINDS; i++)
        out->taken[i] = s->k[i].taken;
    for (int i = 0; i < SPARE_KINDS; i++)
        out->reused[i] = s->reused[i];
    pthread_mutex_unlock(&s->mu);
}
