/* log.c — see log.h. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

log_level_t log_level_min = LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void log_set_level(log_level_t level)
{
    log_level_min = level;
}

int log_level_parse(const char *name, log_level_t *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(name, level_names[i]) == 0 ||
            (i == LOG_WARN && strcasecmp(name, "warning") == 0)) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    return -1;
}

void log_write(log_level_t level, const char *module, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s.%03ldZ %-5s [%s] %s\n", when, ts.tv_nsec / 1000000, level_names[level],
            module, msg);
    pthread_mutex_unlock(&log_lock);
}
