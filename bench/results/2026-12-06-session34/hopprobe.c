/* hopprobe: a journal group's two writes and syncs, handed to a second thread (as the
 * bookie: bk-dsync takes the direct log's, the journal thread does the journal's and
 * waits), both in flight from one thread with Linux AIO writes carrying RWF_DSYNC (a),
 * or one after the other on one thread (q).
 * Groups every P us; latency from each group's scheduled time to both durable. N
 * readers of R-KiB O_DIRECT blocks beside (one allowed to start while a group is in
 * flight). usage: hopprobe DIR MODE(t|a|q) NREADERS READ_KB PERIOD_US SECONDS */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static uint64_t now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000ull + t.tv_nsec / 1000; }
static char dir[256]; static int nr, rkb; static atomic_int stop, writing, inflight; static atomic_ullong rbytes; static off_t fsize;
static void *reader(void *a) {
    long id = (long)a; char p[512]; snprintf(p, sizeof p, "%s/big", dir);
    int fd = open(p, O_RDONLY | O_DIRECT); void *b = NULL; if (posix_memalign(&b, 4096, rkb * 1024)) return NULL;
    off_t off = (fsize / nr) * id / 4096 * 4096;
    while (!atomic_load(&stop)) {
        while (atomic_load(&writing) && atomic_load(&inflight) >= 1 && !atomic_load(&stop)) usleep(20);
        atomic_fetch_add(&inflight, 1);
        ssize_t k = pread(fd, b, rkb * 1024, off);
        atomic_fetch_sub(&inflight, 1);
        if (k <= 0) { off = 0; continue; }
        off += k; if (off + rkb * 1024 > fsize) off = 0;
        atomic_fetch_add(&rbytes, k);
    }
    return NULL;
}
static int dfd, jfd; static void *dbuf, *jbuf; static off_t doff, joff;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER; static int go, done_;
static void *dsync(void *a) {
    (void)a;
    for (;;) {
        pthread_mutex_lock(&mu); while (!go) pthread_cond_wait(&cv, &mu); go = 0; pthread_mutex_unlock(&mu);
        if (pwrite(dfd, dbuf, 53248, doff) < 0 || fdatasync(dfd) < 0) perror("d");
        pthread_mutex_lock(&mu); done_ = 1; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
    }
}
static int cmp(const void *a, const void *b) { uint64_t x = *(uint64_t *)a, y = *(uint64_t *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argv[1]); char mode = argv[2][0]; nr = atoi(argv[3]); rkb = atoi(argv[4]);
    int period = atoi(argv[5]), secs = atoi(argv[6]);
    char p[512]; snprintf(p, sizeof p, "%s/big", dir); int bfd = open(p, O_RDONLY); fsize = lseek(bfd, 0, SEEK_END); close(bfd);
    snprintf(p, sizeof p, "%s/d", dir); dfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    fallocate(dfd, FALLOC_FL_KEEP_SIZE, 0, 1ll << 30);
    snprintf(p, sizeof p, "%s/j", dir); jfd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (posix_memalign(&dbuf, 4096, 53248) || posix_memalign(&jbuf, 4096, 4096)) return 1;
    memset(dbuf, 7, 53248); memset(jbuf, 3, 4096);
    for (off_t o = 0; o < (16 << 20); o += 4096) if (pwrite(jfd, jbuf, 4096, o) < 0) return 1;
    fdatasync(jfd);
    aio_context_t ctx = 0; if (syscall(SYS_io_setup, 8, &ctx) < 0) { perror("io_setup"); return 1; }
    pthread_t th; pthread_create(&th, NULL, dsync, NULL); pthread_detach(th);
    pthread_t t[16]; for (long i = 0; i < nr; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    size_t n = secs * 1000000ull / period; uint64_t *lat = calloc(n, 8);
    usleep(300000);
    uint64_t start = now_us() + 1000, rb0 = atomic_load(&rbytes);
    for (size_t i = 0; i < n; i++) {
        uint64_t due = start + i * (uint64_t)period, nw = now_us();
        if (nw < due) usleep(due - nw);
        atomic_store(&writing, 1);
        if (mode == 'q') { /* one thread, one file after the other: no hand-off */
            if (pwrite(dfd, dbuf, 53248, doff) < 0 || fdatasync(dfd) < 0) perror("d");
            if (pwrite(jfd, jbuf, 4096, joff) < 0 || fdatasync(jfd) < 0) perror("j");
        } else if (mode == 't') {
            pthread_mutex_lock(&mu); go = 1; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
            if (pwrite(jfd, jbuf, 4096, joff) < 0 || fdatasync(jfd) < 0) perror("j");
            pthread_mutex_lock(&mu); while (!done_) pthread_cond_wait(&cv, &mu); done_ = 0; pthread_mutex_unlock(&mu);
        } else {
            struct iocb a = {0}, b = {0}, *pa[2] = {&a, &b};
            a.aio_lio_opcode = IOCB_CMD_PWRITE; a.aio_fildes = dfd; a.aio_buf = (uint64_t)(uintptr_t)dbuf; a.aio_nbytes = 53248; a.aio_offset = doff; a.aio_rw_flags = RWF_DSYNC;
            b.aio_lio_opcode = IOCB_CMD_PWRITE; b.aio_fildes = jfd; b.aio_buf = (uint64_t)(uintptr_t)jbuf; b.aio_nbytes = 4096; b.aio_offset = joff; b.aio_rw_flags = RWF_DSYNC;
            if (syscall(SYS_io_submit, ctx, 2, pa) != 2) { perror("io_submit"); return 1; }
            struct io_event ev[2]; int got = 0;
            while (got < 2) { long k = syscall(SYS_io_getevents, ctx, 2 - got, 2 - got, ev, NULL); if (k < 0) { perror("getevents"); return 1; } for (long x = 0; x < k; x++) if ((long)ev[x].res < 0) fprintf(stderr, "aio res %lld\n", (long long)ev[x].res); got += (int)k; }
        }
        atomic_store(&writing, 0);
        lat[i] = now_us() - due; doff += 53248; joff = (joff + 4096) % (16 << 20);
    }
    double el = (now_us() - start) / 1e6; uint64_t rb = atomic_load(&rbytes) - rb0;
    atomic_store(&stop, 1); for (int i = 0; i < nr; i++) pthread_join(t[i], NULL);
    qsort(lat, n, 8, cmp);
    printf("mode %c readers %d x %d KiB | groups every %d us: n=%zu p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms | read %.0f MB/s\n",
           mode, nr, rkb, period, n, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3, lat[n * 999 / 1000] / 1e3, lat[n - 1] / 1e3, rb / el / 1e6);
    snprintf(p, sizeof p, "%s/d", dir); unlink(p); snprintf(p, sizeof p, "%s/j", dir); unlink(p);
    return 0;
}
