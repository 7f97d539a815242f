// syncpair DIR MODE ROUNDS: each round, in parallel: thread D writes 51 KiB at the end of
// file d (appending, or over pre-written blocks) + fdatasync; thread J writes 128 B into
// file j (fallocated, or pre-written) + fdatasync. Prints p50/p99/p99.9/max of the round.
// MODE: aa (d append, j fallocated), az (d append, j prewritten), zz (both prewritten)
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int dfd, jfd; static char dbuf[51*1024], jbuf[128];
static off_t doff, joff; static pthread_barrier_t b1, b2;
static int rounds;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static int nojournal;
static void *jt(void*a){(void)a;for(int i=0;i<rounds;i++){pthread_barrier_wait(&b1);if(!nojournal){pwrite(jfd,jbuf,sizeof jbuf,joff);joff+=sizeof jbuf;fdatasync(jfd);}pthread_barrier_wait(&b2);}return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){
  char p[512]; rounds=atoi(v[3]); const char*m=v[2]; nojournal = m[1]=='-';
  snprintf(p,sizeof p,"%s/d",v[1]); dfd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
  snprintf(p,sizeof p,"%s/j",v[1]); jfd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
  size_t dsz=(size_t)rounds*sizeof dbuf, jsz=64<<20;
  memset(dbuf,'x',sizeof dbuf); memset(jbuf,'y',sizeof jbuf);
  char *z=calloc(1,1<<20);
  if(m[1]=='z'){for(size_t o=0;o<jsz;o+=1<<20)pwrite(jfd,z,1<<20,o);} else fallocate(jfd,0,0,jsz);
  if(m[0]=='z'){for(size_t o=0;o<dsz+(1<<20);o+=1<<20)pwrite(dfd,z,1<<20,o);}
  fsync(dfd); fsync(jfd); sync(); sleep(1);
  pthread_barrier_init(&b1,0,2); pthread_barrier_init(&b2,0,2);
  pthread_t t; pthread_create(&t,0,jt,0);
  double *lat=malloc(sizeof(double)*rounds);
  for(int i=0;i<rounds;i++){double t0=now();pthread_barrier_wait(&b1);pwrite(dfd,dbuf,sizeof dbuf,doff);doff+=sizeof dbuf;fdatasync(dfd);pthread_barrier_wait(&b2);lat[i]=now()-t0;usleep(200);}
  pthread_join(t,0); qsort(lat,rounds,sizeof*lat,cmp);
  printf("%s p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms\n",m,lat[rounds/2],lat[rounds*99/100],lat[rounds*999/1000],lat[rounds-1]);
  close(dfd);close(jfd);snprintf(p,sizeof p,"%s/d",v[1]);unlink(p);snprintf(p,sizeof p,"%s/j",v[1]);unlink(p);
}
