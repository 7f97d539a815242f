// hiccup SECONDS: one thread per CPU, pinned, reads CLOCK_MONOTONIC in a loop and counts gaps
// between consecutive reads (the thread was not running: the vCPU paused or the thread preempted)
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double secs;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void *run(void *a){long cpu=(long)a;cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  double t0=now(),prev=t0,mx=0;long g[4]={0};
  for(;;){double t=now(),d=t-prev;prev=t;if(d>0.5)g[0]++;if(d>1)g[1]++;if(d>2)g[2]++;if(d>5)g[3]++;if(d>mx)mx=d;if(t-t0>secs*1e3)break;}
  printf("cpu %ld: gaps >0.5ms %ld, >1ms %ld, >2ms %ld, >5ms %ld, max %.2f ms\n",cpu,g[0],g[1],g[2],g[3],mx);return 0;}
int main(int c,char**v){secs=c>1?atof(v[1]):10;pthread_t t[2];for(long i=0;i<2;i++)pthread_create(&t[i],0,run,(void*)i);for(int i=0;i<2;i++)pthread_join(t[i],0);return 0;}
