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
/* arrivals every 1 ms of 51 KB; group commit writer(s); latency arrival->synced */
#define N 6000
#define SZ (51 * 1024)
static int64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static int64_t arr[N]; static int64_t done_at[N];
static atomic_int produced; static int fd; static int mode; static int depth;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int next_take; static off_t off; static char buf[SZ * 64];
static int flags;
static _Atomic long zend; static _Atomic int zstop; static long zwin = 32L<<20; static int zsfr = 1;
static void *zeroer(void *a) { (void)a; static char z[128<<10];
  while (!atomic_load(&zstop)) {
    long w; pthread_mutex_lock(&mu); w = off; pthread_mutex_unlock(&mu);
    long ze = atomic_load(&zend);
    if (ze < w) ze = w; /* overtaken */
    if (ze >= w + zwin) { struct timespec s = {0, 1000000}; nanosleep(&s, NULL); continue; }
    pwrite(fd, z, sizeof z, ze);
    if (zsfr) sync_file_range(fd, ze, sizeof z, SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER);
    atomic_store(&zend, ze + (long)sizeof z);
    struct timespec s = {0, 1500000}; nanosleep(&s, NULL); /* ~80 MB/s */
  } return NULL; } static int jfd=-1; static off_t joff; static int par;
static void *js(void*a){(void)a; fdatasync(jfd); return NULL;}
static void *writer(void *a) {
  (void)a;
  for (;;) {
    pthread_mutex_lock(&mu);
    int p;
    while ((p = atomic_load(&produced)) == next_take && next_take < N) pthread_cond_wait(&cv, &mu);
    if (next_take >= N) { pthread_mutex_unlock(&mu); return NULL; }
    int from = next_take, to = p; if (to - from > 64) to = from + 64;
    next_take = to;
    off_t o = off; off += (off_t)(to - from) * SZ; off_t jo = joff; joff += (off_t)(to - from) * 64;
    pthread_mutex_unlock(&mu);
    if (pwrite(fd, buf, (size_t)(to - from) * SZ, o) < 0) { perror("pwrite"); exit(1); }
    if (jfd >= 0) { char rec[64]={1}; for(int i=from;i<to;i++){pwrite(jfd,rec,64,jo);jo+=64;}
      if (par) { pthread_t t; pthread_create(&t,NULL,js,NULL); fdatasync(fd); pthread_join(t,NULL);} else {fdatasync(fd); fdatasync(jfd);} }
    else if (!(flags & O_DSYNC)) fdatasync(fd);
    int64_t t = now_ns();
    for (int i = from; i < to; i++) done_at[i] = t;
  }
}
static int cmp(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
  const char *path = argv[1]; mode = atoi(argv[2]); depth = atoi(argv[3]);
  /* mode 0 append new file, 1 fallocate, 2 overwrite prewritten, 3 O_DSYNC overwrite, 4 O_DSYNC|O_DIRECT overwrite */
  unlink(path);
  flags = O_RDWR | O_CREAT;
  fd = open(path, flags, 0644);
  size_t total = (size_t)N * SZ + SZ * 64;
  if (mode == 1) fallocate(fd, 0, 0, (off_t)total);
  if (mode >= 2) { char *z = calloc(1, 1 << 20); for (size_t o = 0; o < total; o += 1 << 20) pwrite(fd, z, 1 << 20, (off_t)o); fsync(fd); free(z); }
  if (mode >= 3) { close(fd); flags = O_RDWR | O_DSYNC | (mode == 4 ? O_DIRECT : 0); fd = open(path, flags); }
  if (argc > 4) { char jp[256]; snprintf(jp,256,"%s.j",path); unlink(jp); jfd=open(jp,O_RDWR|O_CREAT,0644); fallocate(jfd,0,0,64<<20); par=atoi(argv[4]); if (par==2){char*z=calloc(1,1<<20);for(int i=0;i<64;i++)pwrite(jfd,z,1<<20,(off_t)i<<20);fsync(jfd);par=1;} }
  memset(buf, 'x', sizeof buf);
  pthread_t th[8], zt; int zon = getenv("ZERO") != NULL; if (getenv("NOSFR")) zsfr = 0;
  if (zon) { pthread_create(&zt, NULL, zeroer, NULL); sleep(1); }
  for (int i = 0; i < depth; i++) pthread_create(&th[i], NULL, writer, NULL);
  int64_t t0 = now_ns();
  for (int i = 0; i < N; i++) {
    int64_t due = t0 + (int64_t)i * 1000000;
    while (now_ns() < due) { struct timespec s = {0, 50000}; nanosleep(&s, NULL); }
    arr[i] = now_ns();
    pthread_mutex_lock(&mu); atomic_store(&produced, i + 1); pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
  }
  for (int i = 0; i < depth; i++) pthread_join(th[i], NULL);
  if (zon) { atomic_store(&zstop, 1); pthread_join(zt, NULL); }
  static int64_t lat[N];
  for (int i = 0; i < N; i++) lat[i] = done_at[i] - arr[i];
  qsort(lat, N, sizeof lat[0], cmp);
  printf("mode %d depth %d: p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms\n", mode, depth, lat[N / 2] / 1e6, lat[N * 99 / 100] / 1e6, lat[N * 999 / 1000] / 1e6, lat[N - 1] / 1e6);
  unlink(path);
  return 0;
}
