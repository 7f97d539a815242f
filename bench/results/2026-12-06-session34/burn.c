/* burn DUTY_PCT SECONDS: spins DUTY_PCT % of each 2-ms period, sleeps the rest */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static uint64_t now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000ull + t.tv_nsec / 1000; }
int main(int argc, char **argv) {
    int duty = atoi(argv[1]); uint64_t end = now_us() + (uint64_t)atoi(argv[2]) * 1000000ull;
    while (now_us() < end) { uint64_t t = now_us() + (uint64_t)duty * 20; while (now_us() < t) ; usleep((100 - duty) * 20); }
    return 0;
}
