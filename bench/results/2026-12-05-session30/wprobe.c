/* wprobe MODE CHUNK_KIB RATE_MBS SECS DIR: a journal-like writer (4 KiB O_DIRECT
 * write + fdatasync in a loop, into a preallocated... no: an appending file) and a
 * background writer at RATE_MBS: mode 0 none, 1 buffered + sync_file_range per chunk,
 * 2 O_DIRECT chunks, 3 O_DIRECT chunks + fdatasync each. Prints the journal's
 * write+sync latency percentiles (us). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static uint64_t now_us(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000ull+t.tv_nsec/1000;}
static int mode; static size_t chunk; static double rate; static double secs; static const char *dir;
static volatile int stop;
static void *bg(void *p){(void)p;
  char path[512]; snprintf(path,sizeof path,"%s/bg.dat",dir);
  int fd=open(path,O_CREAT|O_TRUNC|O_WRONLY|(mode>=2?O_DIRECT:0),0644);
  void *buf; posix_memalign(&buf,4096,chunk); memset(buf,'b',chunk);
  uint64_t t0=now_us(), off=0, done=0;
  while(!stop){
    uint64_t due=(uint64_t)((double)(now_us()-t0)/1e6*rate*1e6);
    if(done>=due){usleep(200);continue;}
    if(pwrite(fd,buf,chunk,off)!=(ssize_t)chunk){perror("bg pwrite");break;}
    if(mode==1) sync_file_range(fd,off,chunk,SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER);
    if(mode==3) fdatasync(fd);
    off+=chunk; done+=chunk;
  }
  if(mode==1||mode==2) fdatasync(fd);
  close(fd); unlink(path); return NULL;}
static int cmp(const void*a,const void*b){uint32_t x=*(const uint32_t*)a,y=*(const uint32_t*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  if(argc<6){fprintf(stderr,"usage\n");return 2;}
  mode=atoi(argv[1]); chunk=(size_t)atoi(argv[2])<<10; rate=atof(argv[3]); secs=atof(argv[4]); dir=argv[5];
  char path[512]; snprintf(path,sizeof path,"%s/j.dat",dir);
  int fd=open(path,O_CREAT|O_TRUNC|O_WRONLY|O_DIRECT,0644);
  void *buf; posix_memalign(&buf,4096,8192); memset(buf,'j',8192);
  pthread_t t; if(mode) pthread_create(&t,NULL,bg,NULL);
  size_t cap=2000000,n=0; uint32_t *lat=malloc(cap*4);
  uint64_t end=now_us()+(uint64_t)(secs*1e6), off=0;
  while(now_us()<end && n<cap){
    uint64_t s=now_us();
    if(pwrite(fd,buf,8192,off)!=8192){perror("pwrite");return 1;}
    fdatasync(fd); off+=8192;
    lat[n++]=(uint32_t)(now_us()-s);
  }
  stop=1; if(mode) pthread_join(t,NULL);
  qsort(lat,n,4,cmp);
  size_t over1=0; for(size_t i=0;i<n;i++) over1+=lat[i]>1000;
  printf("mode %d chunk %zuK rate %.0f MB/s: %zu syncs (%.0f/s) us p50 %u p90 %u p99 %u p99.9 %u max %u; over 1 ms %.2f%%\n",mode,chunk>>10,rate,n,n/secs,lat[n/2],lat[n*9/10],lat[n*99/100],lat[n*999/1000],lat[n-1],100.0*over1/n);
  close(fd); unlink(path); return 0;}
