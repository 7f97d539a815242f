// dio DIR MODE CHUNK_MB TOTAL_MB: b = buffered pwritev of 100-KB pieces from a cold
// 256-MB pool + fdatasync; d = the same pieces memcpy'd into an aligned buffer, pwrite
// O_DIRECT + fdatasync; n = O_DIRECT without the memcpy. File preallocated (fallocate).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_utime.tv_usec/1e6+r.ru_stime.tv_sec+r.ru_stime.tv_usec/1e6;}
int main(int c,char**v){(void)c;char p[512];snprintf(p,sizeof p,"%s/f",v[1]);char m=v[2][0];
 size_t chunk=(size_t)atoi(v[3])<<20,total=(size_t)atoi(v[4])<<20,piece=100*1024,pool=256u<<20;
 int fd=open(p,O_RDWR|O_CREAT|O_TRUNC|(m!='b'?O_DIRECT:0),0644); if(fd<0){perror("open");return 1;}
 if(fallocate(fd,0,0,total+chunk)){perror("fallocate");}
 char*src=malloc(pool); for(size_t i=0;i<pool;i++)src[i]=(char)i;
 char*al; if(posix_memalign((void**)&al,4096,chunk+4096))return 1; memset(al,1,chunk);
 size_t np=chunk/piece; struct iovec*iov=calloc(np,sizeof*iov); size_t so=0;
 double t0=now(),c0=cpu(),ws=0,ss=0;
 for(size_t o=0;o<total;o+=chunk){
  for(size_t i=0;i<np;i++){if(so+piece>pool)so=0;iov[i].iov_base=src+so;iov[i].iov_len=piece;so+=piece+64;}
  double a=now();
  if(m=='b'){if(pwritev(fd,iov,(int)np,(off_t)o)<0){perror("pwritev");return 1;}}
  else{ if(m=='d'){char*q=al;for(size_t i=0;i<np;i++){memcpy(q,iov[i].iov_base,piece);q+=piece;}}
   size_t len=(np*piece+4095)&~(size_t)4095; if(pwrite(fd,al,len,(off_t)o)<0){perror("pwrite");return 1;}}
  double b=now(); fdatasync(fd); ws+=b-a; ss+=now()-b;}
 double s=now()-t0,cs=cpu()-c0; size_t rounds=total/chunk;
 printf("%c chunk %s MB: %.0f MB/s, write %.2f ms sync %.2f ms per round, cpu %.2f ms/MB\n",m,v[3],total/1e6/s,ws*1e3/rounds,ss*1e3/rounds,cs*1e3/(total/1e6));
 unlink(p);}
