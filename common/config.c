/*
 * config.c — see config.h. A small array of key/value pairs: configuration
 * is read a handful of times at start-up, so linear search is the simple,
 * sufficient choice.
 */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"

typedef struct {
    char *key;
    char *value;
} qconfig_entry_t;

struct qconfig {
    qconfig_entry_t *entries;
    size_t n, cap;
};

qconfig_t *qconfig_new(void)
{
    return calloc(1, sizeof(qconfig_t));
}

void qconfig_free(qconfig_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++) {
        free(cfg->entries[i].key);
        free(cfg->entries[i].value);
    }
    free(cfg->entries);
    free(cfg);
}

static qconfig_entry_t *find(const qconfig_t *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->n; i++)
        if (strcmp(cfg->entries[i].key, key) == 0)
            return &cfg->entries[i];
    return NULL;
}

int qconfig_set(qconfig_t *cfg, const char *key, const char *value)
{
    qconfig_entry_t *e = find(cfg, key);
    char *v = strdup(value);
    if (!v)
        return -ENOMEM;
    if (e) {
        free(e->value);
        e->value = v;
        return 0;
    }
    if (cfg->n >= QCONFIG_KEYS_MAX) {
        free(v);
        return QE_TOO_LARGE;
    }
    if (cfg->n == cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap * 2 : 64;
        qconfig_entry_t *ne = realloc(cfg->entries, cap * sizeof *ne);
        if (!ne) {
            free(v);
            return -ENOMEM;
        }
        cfg->entries = ne;
        cfg->cap = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return -ENOMEM;
    }
    cfg->entries[cfg->n++] = (qconfig_entry_t){k, v};
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int qconfig_load_file(qconfig_t *cfg, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int rc = -errno;
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return rc;
    }
    char line[4096];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, err_len, "%s:%d: line longer than %zu bytes", path, lineno,
                     sizeof line - 2);
            rc = QE_TOO_LARGE;
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, err_len, "%s:%d: expected key=value", path, lineno);
            rc = QE_INVALID;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (*key == '\0') {
            snprintf(err, err_len, "%s:%d: empty key", path, lineno);
            rc = QE_INVALID;
            break;
        }
        rc = qconfig_set(cfg, key, value);
        if (rc < 0) {
            snprintf(err, err_len, "%s:%d: %s", path, lineno, q_strerror(rc));
            break;
        }
    }
    fclose(f);
    return rc;
}

const char *qconfig_get(const qconfig_t *cfg, const char *key, const char *def)
{
    qconfig_entry_t *e = find(cfg, key);
    return e ? e->value : def;
}

bool qconfig_has(const qconfig_t *cfg, const char *key)
{
    return find(cfg, key) != NULL;
}

int qconfig_get_int(const qconfig_t *cfg, const char *key, int64_t def, int64_t min, int64_t max,
                    int64_t *out)
{
    const char *v = qconfig_get(cfg, key, NULL);
    if (!v || *v == '\0') {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end != '\0' || x < min || x > max)
        return QE_INVALID;
    *out = x;
    return 0;
}

int qconfig_get_double(const qconfig_t *cfg, const char *key, double def, double min, double max,
                       double *out)
{
    const char *v = qconfig_get(cfg, key, NULL);
    if (!v || *v == '\0') {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end != '\0' || !isfinite(x) || x < min || x > max)
        return QE_INVALID;
    *out = x;
    return 0;
}

int qconfig_get_bool(const qconfig_t *cfg, const char *key, bool def, bool *out)
{
    const char *v = qconfig_get(cfg, key, NULL);
    if (!v || *v == '\0') {
        *out = def;
        return 0;
    }
    if (strcasecmp(v, "true") == 0) {
        *out = true;
        return 0;
    }
    if (strcasecmp(v, "false") == 0) {
        *out = false;
        return 0;
    }
    return QE_INVALID;
}

void qconfig_foreach(const qconfig_t *cfg,
                     void (*fn)(const char *key, const char *value, void *arg), void *arg)
{
    for (size_t i = 0; i < cfg->n; i++)
        fn(cfg->entries[i].key, cfg->entries[i].value, arg);
}
