// dpair DIR MODE ROUNDS: per round, in parallel: thread D writes 56 KiB (aligned, O_DIRECT)
// at the end of what it wrote in file d + fdatasync; thread J writes 128 B into the
// fallocated file j + fdatasync (as a (c) group: direct record and ADD_REF). MODE for d:
// o = appending (file grows), f = into fallocate'd blocks (unwritten extents), w = over
// blocks written before. Prints p50/p99/p99.9/max of the round and of D's pwrite alone.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int dfd, jfd, rounds; static char *dbuf, jbuf[128]; static off_t doff, joff;
static pthread_barrier_t b1, b2; static double *wt;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void *jt(void*a){(void)a;for(int i=0;i<rounds;i++){pthread_barrier_wait(&b1);pwrite(jfd,jbuf,sizeof jbuf,joff);joff+=sizeof jbuf;fdatasync(jfd);pthread_barrier_wait(&b2);}return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void pr(const char*n,double*r){qsort(r,rounds,sizeof *r,cmp);printf("%s p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms  ",n,r[rounds/2],r[rounds*99/100],r[rounds*999/1000],r[rounds-1]);}
int main(int c,char**v){
  (void)c; char p[512]; rounds=atoi(v[3]); char m=v[2][0]; size_t dl=56<<10;
  snprintf(p,sizeof p,"%s/d",v[1]); int bfd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
  snprintf(p,sizeof p,"%s/j",v[1]); jfd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
  size_t dsz=(size_t)rounds*dl+(1<<20);
  posix_memalign((void**)&dbuf,4096,dl); memset(dbuf,'x',dl); memset(jbuf,'y',sizeof jbuf);
  fallocate(jfd,0,0,64<<20);
  if(m=='f') fallocate(bfd,0,0,dsz);
  if(m=='w'){char*z=calloc(1,1<<20);for(size_t o=0;o<dsz;o+=1<<20)pwrite(bfd,z,1<<20,o);}
  fsync(bfd); fsync(jfd); sync(); sleep(1);
  dfd=open(p[0]?(snprintf(p,sizeof p,"%s/d",v[1]),p):p,O_RDWR|O_DIRECT);
  pthread_barrier_init(&b1,0,2); pthread_barrier_init(&b2,0,2);
  pthread_t t; pthread_create(&t,0,jt,0);
  double *r=malloc(rounds*sizeof *r); wt=malloc(rounds*sizeof *wt);
  for(int i=0;i<rounds;i++){pthread_barrier_wait(&b1);double t0=now();pwrite(dfd,dbuf,dl,doff);wt[i]=now()-t0;doff+=dl;fdatasync(dfd);pthread_barrier_wait(&b2);r[i]=now()-t0;usleep(500);}
  pthread_join(t,0); printf("%c ",m); pr("round",r); pr("dwrite",wt); printf("\n"); return 0;}
