#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
struct sa { uint32_t size; uint32_t policy; uint64_t flags; int32_t nice; uint32_t prio; uint64_t runtime, deadline, period; uint32_t umin, umax; };
int main(int argc, char **argv) {
    uint64_t ns = strtoull(argv[1], 0, 10);
    for (int i = 2; i < argc; i++) {
        struct sa a; memset(&a, 0, sizeof a); a.size = sizeof a; a.policy = 0; a.runtime = ns;
        pid_t t = atoi(argv[i]);
        if (syscall(SYS_sched_setattr, t, &a, 0) < 0) { perror("sched_setattr"); return 1; }
        struct sa g; memset(&g, 0, sizeof g);
        syscall(SYS_sched_getattr, t, &g, sizeof g, 0);
        printf("%d runtime %llu\n", t, (unsigned long long)g.runtime);
    }
    return 0;
}
