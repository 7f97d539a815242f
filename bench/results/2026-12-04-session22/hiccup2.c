// hiccup2 SECONDS: one thread per CPU, pinned, sleeps 100 us at a time (as a mostly idle server's
// threads do) and counts how late each wake-up came beyond the 100 us asked for
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double secs;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void *run(void *a){long cpu=(long)a;cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  double t0=now(),mx=0;long g[4]={0},n=0;struct timespec ts={0,100000};
  for(;;){double a0=now();nanosleep(&ts,0);double d=now()-a0-0.1;n++;if(d>0.5)g[0]++;if(d>1)g[1]++;if(d>2)g[2]++;if(d>5)g[3]++;if(d>mx)mx=d;if(now()-t0>secs*1e3)break;}
  printf("cpu %ld: %ld sleeps; late >0.5ms %ld, >1ms %ld, >2ms %ld, >5ms %ld, max %.2f ms\n",cpu,n,g[0],g[1],g[2],g[3],mx);return 0;}
int main(int c,char**v){secs=c>1?atof(v[1]):10;pthread_t t[2];for(long i=0;i<2;i++)pthread_create(&t[i],0,run,(void*)i);for(int i=0;i<2;i++)pthread_join(t[i],0);return 0;}
