/* rwprobe: O_DIRECT appends of W bytes + fdatasync every P us (one thread) while
 * N threads read R-byte O_DIRECT blocks sequentially from a large file.
 * usage: rwprobe DIR NREADERS READ_KB WRITE_KB PERIOD_US SECONDS [MAXQD]
 * MAXQD: reads held (not issued) while a write is in progress beyond this many in flight (-1: no gate) */
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
static char dir[256]; static int nr, rkb, wkb, period, secs, maxqd = -1;
static atomic_int stop, writing, inflight; static atomic_ullong rbytes;
static off_t fsize;
static int jfd = -1; static void *jb; static atomic_int jgo, jdone; static off_t joff;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void *jthread(void *a) { (void)a;
    for (;;) { pthread_mutex_lock(&mu); while (!atomic_load(&jgo)) pthread_cond_wait(&cv, &mu); atomic_store(&jgo, 0); pthread_mutex_unlock(&mu);
        pwrite(jfd, jb, 4096, joff); fdatasync(jfd); joff = (joff + 4096) % (64 << 20);
        pthread_mutex_lock(&mu); atomic_store(&jdone, 1); pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu); } }
static void *reader(void *a) {
    long id = (long)a; char p[512]; snprintf(p, sizeof p, "%s/big", dir);
    int fd = open(p, O_RDONLY | O_DIRECT); void *b; posix_memalign(&b, 4096, rkb * 1024);
    off_t off = (fsize / nr) * id / 4096 * 4096;
    while (!atomic_load(&stop)) {
        if (maxqd >= 0) while (atomic_load(&writing) && atomic_load(&inflight) >= maxqd && !atomic_load(&stop)) usleep(20);
        atomic_fetch_add(&inflight, 1);
        ssize_t n = pread(fd, b, rkb * 1024, off);
        atomic_fetch_sub(&inflight, 1);
        if (n <= 0) { off = 0; continue; }
        off += n; if (off + rkb * 1024 > fsize) off = 0;
        atomic_fetch_add(&rbytes, n);
    }
    return NULL;
}
static int cmp(const void *a, const void *b) { uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argv[1]); nr = atoi(argv[2]); rkb = atoi(argv[3]); wkb = atoi(argv[4]); period = atoi(argv[5]); secs = atoi(argv[6]);
    if (argc > 7) maxqd = atoi(argv[7]);
    char p[512]; snprintf(p, sizeof p, "%s/big", dir);
    int bfd = open(p, O_RDONLY); fsize = lseek(bfd, 0, SEEK_END); close(bfd);
    snprintf(p, sizeof p, "%s/w", dir); int wfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    void *wb; posix_memalign(&wb, 4096, wkb * 1024); memset(wb, 7, wkb * 1024);
    if (getenv("J")) { snprintf(p, sizeof p, "%s/j", dir); jfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644); fallocate(jfd, 0, 0, 64 << 20); fdatasync(jfd);
        posix_memalign(&jb, 4096, 4096); memset(jb, 3, 4096); pthread_t jt; pthread_create(&jt, NULL, jthread, NULL); pthread_detach(jt); }
    int ahead = getenv("A") != NULL; off_t aend = 0;
    pthread_t t[16]; for (long i = 0; i < nr; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    usleep(300000);
    size_t cap = secs * 1000000ull / period + 10, n = 0; uint64_t *lat = malloc(cap * 8);
    uint64_t start = now_us(), next = start; off_t woff = 0; uint64_t rb0 = atomic_load(&rbytes);
    while (now_us() - start < secs * 1000000ull && n < cap) {
        { uint64_t nw = now_us(); if (nw < next) usleep(next - nw); }
        uint64_t t0 = now_us(); atomic_store(&writing, 1);
        if (jfd >= 0) { pthread_mutex_lock(&mu); atomic_store(&jgo, 1); pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu); }
        if (ahead && woff + wkb * 1024 > aend) { fallocate(wfd, FALLOC_FL_KEEP_SIZE, aend, 16 << 20); aend += 16 << 20; }
        pwrite(wfd, wb, wkb * 1024, woff); fdatasync(wfd); woff += wkb * 1024;
        if (jfd >= 0) { pthread_mutex_lock(&mu); while (!atomic_load(&jdone)) pthread_cond_wait(&cv, &mu); atomic_store(&jdone, 0); pthread_mutex_unlock(&mu); }
        atomic_store(&writing, 0);
        lat[n++] = now_us() - t0; next += period; if (next < now_us()) next = now_us();
    }
    double el = (now_us() - start) / 1e6; uint64_t rb = atomic_load(&rbytes) - rb0;
    atomic_store(&stop, 1); for (int i = 0; i < nr; i++) pthread_join(t[i], NULL);
    qsort(lat, n, 8, cmp);
    printf("%s%sreaders %d x %d KiB gate %d | write %d KiB every %d us: n=%zu p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms | read %.0f MB/s\n", jfd >= 0 ? "J " : "", ahead ? "A " : "",
           nr, rkb, maxqd, wkb, period, n, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3, lat[n * 999 / 1000] / 1e3, lat[n - 1] / 1e3, rb / el / 1e6);
    unlink(p); return 0;
}
