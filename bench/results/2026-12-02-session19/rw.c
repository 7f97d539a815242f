// rw DIR NREADERS BLOCK_KB SECONDS [WRITER 0/1]: O_DIRECT sequential reads of DIR/r (2 GB,
// made if absent) by NREADERS threads (each its own region), while a writer thread does
// 52-KB O_DIRECT write + fdatasync to DIR/w every 1 ms. Prints read MB/s and the writer's
// write+sync latency p50/p99/max.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static atomic_int wact; static int gate;
static char dir[256]; static int nr; static size_t bs; static double secs; static atomic_int stop; static atomic_ullong rbytes;
#define FSZ (2048ull<<20)
static void *reader(void *a){ long i=(long)a; char p[300]; snprintf(p,sizeof p,"%s/r",dir);
 int fd=open(p,O_RDONLY|O_DIRECT); char*b; posix_memalign((void**)&b,4096,bs);
 unsigned long long reg=FSZ/nr, off=reg*i, end=off+reg;
 while(!atomic_load(&stop)){ if(gate){int k=0; while(atomic_load(&wact)&&k<5000){usleep(20);k+=20;}} if(off+bs>end) off=reg*i; ssize_t n=pread(fd,b,bs,off); if(n<=0){perror("pread");break;} off+=n; atomic_fetch_add(&rbytes,n);} return NULL;}
static double lat[200000]; static int nl;
static void *writer(void *a){(void)a; char p[300]; snprintf(p,sizeof p,"%s/w",dir);
 int fd=open(p,O_RDWR|O_CREAT|O_TRUNC|O_DIRECT,0644); fallocate(fd,0,0,1ull<<30); char*b; posix_memalign((void**)&b,4096,53248); memset(b,7,53248);
 unsigned long long off=0; double next=now();
 while(!atomic_load(&stop)){ double t=now(); if(t<next){usleep((useconds_t)((next-t)*1e6));} next+=0.001;
  atomic_store(&wact,1); double a0=now(); pwrite(fd,b,53248,off); off+=53248; if(off>(1ull<<30)-53248) off=0; fdatasync(fd); double d=now()-a0; atomic_store(&wact,0); if(nl<200000) lat[nl++]=d; if(now()>next) next=now(); }
 return NULL;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){ snprintf(dir,sizeof dir,"%s",v[1]); nr=atoi(v[2]); bs=(size_t)atoi(v[3])<<10; secs=atof(v[4]); int w=c>5?atoi(v[5]):1; gate=c>6?atoi(v[6]):0;
 char p[300]; snprintf(p,sizeof p,"%s/r",dir);
 if(access(p,F_OK)){int fd=open(p,O_RDWR|O_CREAT|O_DIRECT,0644);char*b;posix_memalign((void**)&b,4096,4<<20);memset(b,3,4<<20);for(unsigned long long o=0;o<FSZ;o+=4<<20)pwrite(fd,b,4<<20,o);fsync(fd);close(fd);}
 pthread_t t[64],wt; double t0=now();
 for(long i=0;i<nr;i++) pthread_create(&t[i],0,reader,(void*)i);
 if(w) pthread_create(&wt,0,writer,0);
 usleep((useconds_t)(secs*1e6)); atomic_store(&stop,1); double el=now()-t0;
 for(int i=0;i<nr;i++) pthread_join(t[i],0); if(w) pthread_join(wt,0);
 qsort(lat,nl,sizeof(double),cmp);
 printf("readers %d bs %zuK: read %.0f MB/s", nr, bs>>10, rbytes/1e6/el);
 if(w&&nl) printf(" | writes %d p50 %.2f p99 %.2f max %.2f ms", nl, lat[nl/2]*1e3, lat[nl*99/100]*1e3, lat[nl-1]*1e3);
 printf("\n"); return 0;}
