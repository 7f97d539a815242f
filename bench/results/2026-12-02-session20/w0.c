// w0 DIR SECONDS: 52-KB O_DIRECT write + fdatasync every 1 ms to DIR/w; p50/p99/max
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int c,char**v){char p[300];snprintf(p,sizeof p,"%s/w",v[1]);double secs=atof(v[2]);
 int fd=open(p,O_RDWR|O_CREAT|O_TRUNC|O_DIRECT,0644); fallocate(fd,0,0,256ull<<20); char*b; posix_memalign((void**)&b,4096,53248); memset(b,7,53248);
 static double lat[100000]; int n=0; unsigned long long off=0; double end=now()+secs, next=now();
 while(now()<end&&n<100000){double t=now(); if(t<next) usleep((useconds_t)((next-t)*1e6)); next+=0.001; double a=now(); pwrite(fd,b,53248,off); off=(off+53248)%(250ull<<20); fdatasync(fd); lat[n++]=now()-a; if(now()>next) next=now();}
 qsort(lat,n,sizeof *lat,cmp); printf("writes %d p50 %.2f p99 %.2f max %.2f ms\n",n,lat[n/2]*1e3,lat[n*99/100]*1e3,lat[n-1]*1e3); unlink(p); return 0;}
