/* pipeprobe: what a pipelined journal would give under reads, on the disk alone.
 * Groups arrive every P us (scheduled times); each is a W-KiB O_DIRECT append.
 *   mode s (serial, as the bookie's journal): a write starts when the one before is
 *          durable and takes every group arrived by then (one pwrite, one fdatasync).
 *   mode p (pipelined, as BookKeeper's force-write thread): the writer appends each
 *          group when it arrives (after the previous pwrite returned); a sync thread
 *          runs fdatasync whenever appends are unsynced; a group is durable when a
 *          sync that began after its pwrite returned has finished.
 * Latency: from the group's scheduled arrival to its durability (queueing included).
 * N reader threads read R-KiB O_DIRECT blocks of DIR/big meanwhile, one allowed beside
 * a write in flight when GATE=1 (as io_gate), any number otherwise.
 * usage: pipeprobe DIR MODE NREADERS READ_KB WRITE_KB PERIOD_US SECONDS */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static uint64_t now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000ull + t.tv_nsec / 1000; }
static char dir[256]; static int nr, rkb, wkb, period, secs, gate;
static atomic_int stop, writing, inflight; static atomic_ullong rbytes; static off_t fsize;
static int wfd; static size_t n; static uint64_t *sched, *done;
static atomic_ullong written_n; /* groups whose pwrite returned */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void *reader(void *a) {
    long id = (long)a; char p[512]; snprintf(p, sizeof p, "%s/big", dir);
    int fd = open(p, O_RDONLY | O_DIRECT); void *b; posix_memalign(&b, 4096, rkb * 1024);
    off_t off = (fsize / nr) * id / 4096 * 4096;
    while (!atomic_load(&stop)) {
        if (gate) while (atomic_load(&writing) && atomic_load(&inflight) >= 1 && !atomic_load(&stop)) usleep(20);
        atomic_fetch_add(&inflight, 1);
        ssize_t k = pread(fd, b, rkb * 1024, off);
        atomic_fetch_sub(&inflight, 1);
        if (k <= 0) { off = 0; continue; }
        off += k; if (off + rkb * 1024 > fsize) off = 0;
        atomic_fetch_add(&rbytes, k);
    }
    return NULL;
}
static void *syncer(void *a) {
    (void)a; uint64_t synced = 0;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (atomic_load(&written_n) == synced && !atomic_load(&stop)) pthread_cond_wait(&cv, &mu);
        uint64_t target = atomic_load(&written_n);
        pthread_mutex_unlock(&mu);
        if (target == synced) return NULL;
        atomic_store(&writing, 1);
        fdatasync(wfd);
        atomic_store(&writing, 0);
        uint64_t t = now_us();
        for (uint64_t i = synced; i < target; i++) done[i] = t;
        synced = target;
    }
}
static int jfd = -1; static void *jb; static off_t joff; static int jgo, jdone;
static pthread_mutex_t jmu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t jcv = PTHREAD_COND_INITIALIZER;
static void *jthread(void *a) {
    (void)a;
    for (;;) {
        pthread_mutex_lock(&jmu); while (!jgo) pthread_cond_wait(&jcv, &jmu); jgo = 0; pthread_mutex_unlock(&jmu);
        pwrite(jfd, jb, 4096, joff); fdatasync(jfd); joff = (joff + 4096) % (64 << 20);
        pthread_mutex_lock(&jmu); jdone = 1; pthread_cond_broadcast(&jcv); pthread_mutex_unlock(&jmu);
    }
}
static int cmp(const void *a, const void *b) { uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argv[1]); char mode = argv[2][0]; nr = atoi(argv[3]); rkb = atoi(argv[4]);
    wkb = atoi(argv[5]); period = atoi(argv[6]); secs = atoi(argv[7]); gate = getenv("GATE") ? atoi(getenv("GATE")) : 1;
    char p[512]; snprintf(p, sizeof p, "%s/big", dir);
    int bfd = open(p, O_RDONLY); fsize = lseek(bfd, 0, SEEK_END); close(bfd);
    snprintf(p, sizeof p, "%s/w", dir); wfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    fallocate(wfd, FALLOC_FL_KEEP_SIZE, 0, 1ll << 30);
    void *wb; posix_memalign(&wb, 4096, wkb * 1024); memset(wb, 7, wkb * 1024);
    pthread_t t[16]; for (long i = 0; i < nr; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    n = secs * 1000000ull / period; sched = calloc(n, 8); done = calloc(n, 8);
    pthread_t st; if (mode == 'p') pthread_create(&st, NULL, syncer, NULL);
    if (getenv("J")) { /* the journal file beside the direct log: written over, synced */
        snprintf(p, sizeof p, "%s/j", dir); jfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
        fallocate(jfd, 0, 0, 64 << 20); posix_memalign(&jb, 4096, 4096); memset(jb, 3, 4096);
        for (off_t o = 0; o < (64 << 20); o += 4096) pwrite(jfd, jb, 4096, o);
        fdatasync(jfd); pthread_t jt; pthread_create(&jt, NULL, jthread, NULL); pthread_detach(jt);
        snprintf(p, sizeof p, "%s/w", dir);
    }
    usleep(300000);
    uint64_t start = now_us() + 1000, rb0 = atomic_load(&rbytes); off_t woff = 0;
    for (size_t i = 0; i < n; i++)
        sched[i] = start + i * (uint64_t)period;
    if (mode == 's') { /* as the bookie's journal: every group arrived so far in one write, one sync */
        void *big; posix_memalign(&big, 4096, (size_t)wkb * 1024 * 64); memset(big, 7, (size_t)wkb * 1024 * 64);
        for (size_t i = 0; i < n;) {
            uint64_t nw = now_us(); if (nw < sched[i]) usleep(sched[i] - nw);
            size_t k = 1; nw = now_us();
            while (i + k < n && sched[i + k] <= nw && k < 64) k++;
            atomic_store(&writing, 1);
            if (jfd >= 0) { pthread_mutex_lock(&jmu); jgo = 1; pthread_cond_broadcast(&jcv); pthread_mutex_unlock(&jmu); }
            pwrite(wfd, big, (size_t)wkb * 1024 * k, woff); woff += (off_t)wkb * 1024 * k;
            fdatasync(wfd);
            if (jfd >= 0) { pthread_mutex_lock(&jmu); while (!jdone) pthread_cond_wait(&jcv, &jmu); jdone = 0; pthread_mutex_unlock(&jmu); }
            atomic_store(&writing, 0);
            uint64_t t = now_us(); for (size_t j = i; j < i + k; j++) done[j] = t;
            i += k;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint64_t nw = now_us(); if (nw < sched[i]) usleep(sched[i] - nw);
            pwrite(wfd, wb, wkb * 1024, woff); woff += wkb * 1024;
            pthread_mutex_lock(&mu); atomic_store(&written_n, i + 1); pthread_cond_signal(&cv); pthread_mutex_unlock(&mu);
        }
    }
    if (mode == 'p') { pthread_mutex_lock(&mu); atomic_store(&stop, 1); pthread_cond_signal(&cv); pthread_mutex_unlock(&mu); pthread_join(st, NULL); }
    double el = (now_us() - start) / 1e6; uint64_t rb = atomic_load(&rbytes) - rb0;
    atomic_store(&stop, 1); for (int i = 0; i < nr; i++) pthread_join(t[i], NULL);
    for (size_t i = 0; i < n; i++) done[i] -= sched[i];
    qsort(done, n, 8, cmp);
    printf("%smode %c gate %d readers %d x %d KiB | %d KiB every %d us: n=%zu p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms | read %.0f MB/s\n",
           jfd >= 0 ? "J " : "", mode, gate, nr, rkb, wkb, period, n, done[n / 2] / 1e3, done[n * 99 / 100] / 1e3, done[n * 999 / 1000] / 1e3, done[n - 1] / 1e3, rb / el / 1e6);
    unlink(p); return 0;
}
