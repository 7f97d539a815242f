/* heap.c — see heap.h. */
#include "common/heap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;
static mallctl_fn heap_ctl;

static void heap_lookup(void)
{
    heap_ctl = (mallctl_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "mallctl");
}

/* jemalloc's mallctl when the process has it (looked up once, from any thread). */
static mallctl_fn heap_mallctl(void)
{
    pthread_once(&heap_once, heap_lookup);
    return heap_ctl;
}

static bool je_size(mallctl_fn ctl, const char *name, size_t *out)
{
    size_t len = sizeof *out;
    return ctl(name, out, &len, NULL, 0) == 0;
}

bool qheap_stats(qheap_stats_t *out)
{
    mallctl_fn ctl = heap_mallctl();
    if (ctl) {
        uint64_t epoch = 1;
        size_t len = sizeof epoch, allocated = 0, resident = 0;
        ctl("epoch", &epoch, &len, &epoch, len); /* refreshes the statistics */
        if (!je_size(ctl, "stats.allocated", &allocated) ||
            !je_size(ctl, "stats.resident", &resident))
            return false;
        *out =
            (qheap_stats_t){"jemalloc", allocated, resident > allocated ? resident - allocated : 0};
        return true;
    }
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2();
    *out = (qheap_stats_t){"glibc", mi.uordblks + mi.hblkhd, mi.fordblks};
    return true;
#else
    (void)out;
    return false;
#endif
}

bool qheap_release(void)
{
    mallctl_fn ctl = heap_mallctl();
    if (ctl) {
        char name[64];
        snprintf(name, sizeof name, "arena.%u.purge", 4096u); /* MALLCTL_ARENAS_ALL */
        return ctl(name, NULL, NULL, NULL, 0) == 0;
    }
#ifdef __GLIBC__
    return malloc_trim(0) != 0;
#else
    return false;
#endif
}
