/*
 * config.h — Pulsar-style configuration: `key=value` lines from a file, then
 * overrides, with Pulsar's own key names (brokerServicePort, webServicePort,
 * managedLedgerDefaultEnsembleSize, ...) so an operator's broker.conf carries over.
 *
 * Later settings win: load the file first, then apply command-line overrides.
 * Keys are case-sensitive. Values are kept as strings; typed getters parse them
 * and report a malformed value as QE_INVALID (the caller says which key).
 * Bounded: at most QCONFIG_KEYS_MAX keys, lines of at most 4096 bytes.
 */
#ifndef QUIRE_COMMON_CONFIG_H
#define QUIRE_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QCONFIG_KEYS_MAX 4096

typedef struct qconfig qconfig_t;

qconfig_t *qconfig_new(void);
void qconfig_free(qconfig_t *cfg);

/* Reads `key=value` lines; '#' starts a comment line; blank lines skipped;
 * whitespace around key and value trimmed. On error returns a negative code and
 * writes "file:line: reason" into err. */
int qconfig_load_file(qconfig_t *cfg, const char *path, char *err, size_t err_len);
/* Copies key and value. QE_TOO_LARGE past QCONFIG_KEYS_MAX. */
int qconfig_set(qconfig_t *cfg, const char *key, const char *value);
/* The value, or def when the key is absent (borrowed; valid until the key is set again). */
const char *qconfig_get(const qconfig_t *cfg, const char *key, const char *def);
bool qconfig_has(const qconfig_t *cfg, const char *key);
/* 0, or QE_INVALID for a value that is not a whole number in [min, max]. */
int qconfig_get_int(const qconfig_t *cfg, const char *key, int64_t def, int64_t min, int64_t max,
                    int64_t *out);
/* 0, or QE_INVALID for a value that is not a finite number in [min, max]. */
int qconfig_get_double(const qconfig_t *cfg, const char *key, double def, double min, double max,
                       double *out);
/* Accepts true/false (any case); QE_INVALID otherwise. */
int qconfig_get_bool(const qconfig_t *cfg, const char *key, bool def, bool *out);
/* Calls fn for each key in insertion order. */
void qconfig_foreach(const qconfig_t *cfg,
                     void (*fn)(const char *key, const char *value, void *arg), void *arg);

#endif
