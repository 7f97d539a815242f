/*
 * trash.c — removed files freed in the background (trash.h).
 */
#include "storage/bookie/trash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"

/* A step is BK_TRASH_STEP_BYTES while fewer than 4 files wait, and grows with
 * the files waiting (x1 per 4), so that space is reclaimed as fast as a
 * sustained write rate fills it (40 MB/s per 4 waiting); past BK_TRASH_PACED
 * waiting it goes unpaced. (16 MiB steps and unpaced past 8 gave 57-80 ms
 * publish p99 in the seconds after a GC pass; this, 11-22 ms; measured on the
 * first benchmark VM, docs/performance.md.) */
#define BK_TRASH_STEP_BYTES (4u << 20)
#define BK_TRASH_STEP_MS 100
#define BK_TRASH_PACED 32

static pthread_mutex_t trash_one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
static atomic_int trash_waiting; /* files given to trash_main, not yet removed */
static atomic_int trash_hurry;   /* bookies whose disk is full (bk_trash_urgent) */

static void *trash_main(void *p)
{
    char *path = p;
    pthread_mutex_lock(&trash_one_at_a_time);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        off_t size = lseek(fd, 0, SEEK_END);
        while (size > 0) {
            int w = atomic_load(&trash_waiting);
            off_t step = (off_t)BK_TRASH_STEP_BYTES * (w < 4 ? 1 : (w + 3) / 4);
            size = size > step ? size - step : 0;
            if (ftruncate(fd, size) < 0)
                break;
            if (w <= BK_TRASH_PACED && atomic_load(&trash_hurry) <= 0)
                nanosleep(&(struct timespec){0, BK_TRASH_STEP_MS * 1000L * 1000L}, NULL);
        }
        close(fd);
    }
    if (unlink(path) < 0 && errno != ENOENT)
        log_warn("bookie", "cannot remove %s: %s", path, q_strerror(-errno));
    pthread_mutex_unlock(&trash_one_at_a_time);
    atomic_fetch_sub(&trash_waiting, 1);
    free(path);
    return NULL;
}

int bk_trash(const char *path)
{
    char trash[PATH_MAX + 8];
    snprintf(trash, sizeof trash, "%s" BK_TRASH_SUFFIX, path);
    if (rename(path, trash) < 0) {
        if (unlink(path) < 0 && errno != ENOENT) {
            int rc = -errno;
            log_warn("bookie", "cannot remove %s: %s", path, q_strerror(rc));
            return rc;
        }
        return 0;
    }
    char *owned = strdup(trash);
    if (!owned) {
        unlink(trash);
        return 0;
    }
    atomic_fetch_add(&trash_waiting, 1); /* trash_main takes it off */
    pthread_t t;
    pthread_attr_t attr;
    bool started = false;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, trash_main, owned) == 0;
        pthread_attr_destroy(&attr);
    }
    if (!started) /* no thread: remove it here */
        trash_main(owned);
    return 0;
}

void bk_trash_sweep(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char suffix[64];
    snprintf(suffix, sizeof suffix, "%s" BK_TRASH_SUFFIX, ext);
    size_t sl = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= sl || strcmp(de->d_name + l - sl, suffix) != 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) == 0)
            log_info("bookie", "removed %s (left by an earlier run)", path);
    }
    closedir(d);
}

void bk_trash_urgent(int delta)
{
    atomic_fetch_add(&trash_hurry, delta);
}

int bk_trash_urgency(void)
{
    return atomic_load(&trash_hurry);
}

uint64_t bk_trash_waiting(void)
{
    int w = atomic_load(&trash_waiting);
    return w > 0 ? (uint64_t)w : 0;
}
