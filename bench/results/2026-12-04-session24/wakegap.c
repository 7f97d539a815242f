/* wakegap.c — a SCHED_FIFO thread (the guest's scheduler cannot hold it back)
 * sleeps 1 ms at a time and prints every wake-up later than LATE_MS, with the
 * wall-clock time, so that stalls seen by a benchmark can be set against the
 * host's pauses of the VM. Runs for the seconds given (default 600).
 * Build: cc -O2 -o wakegap wakegap.c; run as root: ./wakegap 600 > gaps.txt */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LATE_MS 5.0

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double run_s = argc > 1 ? atof(argv[1]) : 600;
    struct sched_param sp = {.sched_priority = 50};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
        perror("sched_setscheduler (running without SCHED_FIFO)");
    double start = now_s(CLOCK_MONOTONIC), worst = 0;
    long wakes = 0, late = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (now_s(CLOCK_MONOTONIC) - start < run_s) {
        double before = now_s(CLOCK_MONOTONIC);
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
        double after = now_s(CLOCK_MONOTONIC), lateness = (after - before) * 1e3 - 1.0;
        wakes++;
        if (lateness > worst)
            worst = lateness;
        if (lateness > LATE_MS) {
            late++;
            time_t t = (time_t)now_s(CLOCK_REALTIME);
            struct tm tm;
            gmtime_r(&t, &tm);
            printf("%02d:%02d:%02d late %.1f ms\n", tm.tm_hour, tm.tm_min, tm.tm_sec, lateness);
        }
    }
    printf("wakes %ld, later than %.0f ms: %ld, worst %.1f ms\n", wakes, LATE_MS, late, worst);
    return 0;
}
