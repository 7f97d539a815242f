/*
 * log.h — process-wide logging to stderr.
 *
 * One line per record: "2026-11-30T06:18:44.123Z LEVEL [module] message".
 * Thread-safe (a single fprintf per record under a lock in log.c). The level is
 * set once at start-up; records below it cost one comparison.
 */
#ifndef QUIRE_COMMON_LOG_H
#define QUIRE_COMMON_LOG_H

typedef enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 } log_level_t;

extern log_level_t log_level_min;

void log_set_level(log_level_t level);
/* Parses "debug", "info", "warn", "error"; returns -1 for anything else. */
int log_level_parse(const char *name, log_level_t *out);
void log_write(log_level_t level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_AT(level, module, ...)                                                                 \
    do {                                                                                           \
        if ((level) >= log_level_min)                                                              \
            log_write((level), (module), __VA_ARGS__);                                             \
    } while (0)
#define log_debug(module, ...) LOG_AT(LOG_DEBUG, module, __VA_ARGS__)
#define log_info(module, ...) LOG_AT(LOG_INFO, module, __VA_ARGS__)
#define log_warn(module, ...) LOG_AT(LOG_WARN, module, __VA_ARGS__)
#define log_error(module, ...) LOG_AT(LOG_ERROR, module, __VA_ARGS__)

#endif
