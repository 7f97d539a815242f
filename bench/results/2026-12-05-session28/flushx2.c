#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int jfd,dfd; static char *jb,*db; static long joff,doff; static int mode; static size_t dsz=53248;
static pthread_mutex_t mu=PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t cv=PTHREAD_COND_INITIALIZER; static int go,done;
static void *dth(void*p){(void)p;for(;;){pthread_mutex_lock(&mu);while(!go)pthread_cond_wait(&cv,&mu);go=0;pthread_mutex_unlock(&mu);
 if(pwrite(dfd,db,dsz,doff)!=(ssize_t)dsz)abort(); if(mode==0) fdatasync(dfd);
 pthread_mutex_lock(&mu);done=1;pthread_cond_broadcast(&cv);pthread_mutex_unlock(&mu);}return 0;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){mode=atoi(v[1]);int n=atoi(v[2]);const char*dir=v[3];char p[256];
 snprintf(p,256,"%s/j",dir);jfd=open(p,O_RDWR|O_CREAT|O_DIRECT,0644);
 posix_memalign((void**)&jb,4096,1<<20);memset(jb,0,1<<20);for(int i=0;i<64;i++)pwrite(jfd,jb,1<<20,(long)i<<20);fsync(jfd);
 snprintf(p,256,"%s/d",dir);unlink(p);dfd=open(p,O_RDWR|O_CREAT|O_DIRECT,0644);posix_memalign((void**)&db,4096,dsz);memset(db,7,dsz);
 pthread_t t;pthread_create(&t,0,dth,0);double *lat=malloc(n*sizeof(double));
 for(int i=0;i<n;i++){double t0=now();pthread_mutex_lock(&mu);go=1;done=0;pthread_cond_broadcast(&cv);pthread_mutex_unlock(&mu);
  pwrite(jfd,jb,4096,joff); joff=((i/64)*4096)%(64<<20); if(mode==0)fdatasync(jfd);
  pthread_mutex_lock(&mu);while(!done)pthread_cond_wait(&cv,&mu);pthread_mutex_unlock(&mu);
  if(mode==1) fdatasync(dfd);
  doff+=dsz; lat[i]=now()-t0; usleep(700);}
 qsort(lat,n,sizeof(double),cmpd);printf("mode %d: p50 %.0f p90 %.0f p99 %.0f p99.9 %.0f max %.0f us\n",mode,lat[n/2],lat[n*9/10],lat[n*99/100],lat[n*999/1000],lat[n-1]);return 0;}
