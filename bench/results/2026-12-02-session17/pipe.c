// pipe DIR MODE CHUNK_MB TOTAL_MB: serial (write chunk; fdatasync) or pipelined
// (writer keeps writing chunks while a syncer fdatasyncs; at most 2 chunks unsynced)
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int fd; static char *buf; static size_t chunk, total;
static atomic_size_t written, synced;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void *syncer(void*a){(void)a;while(atomic_load(&synced)<total){size_t w=atomic_load(&written);if(w==atomic_load(&synced)){usleep(50);continue;}fdatasync(fd);atomic_store(&synced,w);}return 0;}
int main(int c,char**v){(void)c;char p[512];snprintf(p,sizeof p,"%s/f",v[1]);fd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
 chunk=(size_t)atoi(v[3])<<20; total=(size_t)atoi(v[4])<<20; buf=malloc(chunk); memset(buf,'x',chunk);
 double t0=now();
 if(v[2][0]=='s'){for(size_t o=0;o<total;o+=chunk){pwrite(fd,buf,chunk,o);fdatasync(fd);}}
 else{pthread_t t;pthread_create(&t,0,syncer,0);for(size_t o=0;o<total;o+=chunk){while(o-atomic_load(&synced)>=2*chunk)usleep(20);pwrite(fd,buf,chunk,o);atomic_store(&written,o+chunk);}pthread_join(t,0);}
 double s=now()-t0; printf("%s chunk %s MB: %.0f MB/s\n",v[2],v[3],total/1e6/s); unlink(p);}
