/*
 * http_router.c — see http_router.h.
 *
 * Matching splits the path once into at most HTTP_ROUTE_SEGMENTS_MAX raw
 * segments (pointers into the url), then walks each pattern segment by
 * segment; only the winning route's parameters are decoded (into one buffer
 * of the path's size, which bounds them).
 */
#include "admin-http/http_router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"

typedef struct seg {
    const char *p;
    size_t len;
} seg_t;

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

ssize_t http_url_decode(const char *in, size_t len, char *out, bool plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '%') {
            if (i + 2 >= len)
                return -1;
            int hi = hexval(in[i + 1]), lo = hexval(in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi * 16 + lo);
            if (c == '\0')
                return -1;
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        } else if (c == '\0') {
            return -1;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return (ssize_t)o;
}

/* The path part of a request target: skips "scheme://authority" of an
 * absolute-form target; stops at '?' or '#'. */
static void url_path(const char *url, const char **path, size_t *len)
{
    const char *p = url;
    const char *scheme = strstr(url, "://");
    if (url[0] != '/' && scheme) {
        p = strchr(scheme + 3, '/');
        if (!p)
            p = "/";
    }
    *path = p;
    *len = strcspn(p, "?#");
}

/* Splits the path into segments; -1 past the bound. A trailing '/' is
 * ignored; other empty segments are kept (and match no pattern). */
static int split(const char *p, size_t len, seg_t *segs, size_t max)
{
    size_t n = 0, i = 0;
    if (len > 0 && p[0] == '/')
        i = 1;
    while (i < len) {
        size_t j = i;
        while (j < len && p[j] != '/')
            j++;
        if (j == len && j == i)
            break;
        if (n == max)
            return -1;
        segs[n++] = (seg_t){p + i, j - i};
        i = j + 1;
    }
    return (int)n;
}

static bool is_param(const seg_t *s)
{
    return s->len >= 2 && s->p[0] == '{' && s->p[s->len - 1] == '}';
}

/* 0 if pattern matches segs, with *score bit k set for a literal at
 * position k counted from the left (higher bits first). -1 otherwise. */
static int pattern_match(const char *pattern, const seg_t *segs, int n, unsigned *score)
{
    seg_t ps[HTTP_ROUTE_SEGMENTS_MAX];
    int pn = split(pattern, strlen(pattern), ps, HTTP_ROUTE_SEGMENTS_MAX);
    if (pn != n)
        return -1;
    unsigned sc = 0;
    for (int i = 0; i < n; i++) {
        if (is_param(&ps[i])) {
            if (segs[i].len == 0)
                return -1;
            continue;
        }
        if (ps[i].len != segs[i].len || memcmp(ps[i].p, segs[i].p, ps[i].len) != 0)
            return -1;
        sc |= 1u << (HTTP_ROUTE_SEGMENTS_MAX - 1 - i);
    }
    *score = sc;
    return 0;
}

static int decode_params(const char *pattern, const seg_t *segs, int n, size_t path_len,
                         http_route_params_t *out)
{
    seg_t ps[HTTP_ROUTE_SEGMENTS_MAX];
    split(pattern, strlen(pattern), ps, HTTP_ROUTE_SEGMENTS_MAX);
    size_t cap = path_len + strlen(pattern) + 2 * HTTP_ROUTE_PARAMS_MAX + 1;
    out->buf = malloc(cap);
    if (!out->buf)
        return -503;
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (!is_param(&ps[i]))
            continue;
        if (out->n == HTTP_ROUTE_PARAMS_MAX)
            return -414;
        char *name = out->buf + used;
        memcpy(name, ps[i].p + 1, ps[i].len - 2);
        name[ps[i].len - 2] = '\0';
        used += ps[i].len - 1;
        char *value = out->buf + used;
        ssize_t vl = http_url_decode(segs[i].p, segs[i].len, value, false);
        if (vl < 0)
            return -400;
        used += (size_t)vl + 1;
        out->name[out->n] = name;
        out->value[out->n] = value;
        out->n++;
    }
    return 0;
}

int http_route_find(const void *table, size_t count, size_t stride, int method, const char *url,
                    http_route_params_t *params)
{
    memset(params, 0, sizeof *params);
    const char *path;
    size_t len;
    url_path(url, &path, &len);
    seg_t segs[HTTP_ROUTE_SEGMENTS_MAX];
    int n = split(path, len, segs, HTTP_ROUTE_SEGMENTS_MAX);
    if (n < 0)
        return -414;
    int best = -1;
    bool path_known = false;
    unsigned best_score = 0;
    for (size_t i = 0; i < count; i++) {
        const http_route_t *r = (const http_route_t *)((const char *)table + i * stride);
        unsigned score;
        if (pattern_match(r->pattern, segs, n, &score) < 0)
            continue;
        path_known = true;
        if (r->method != method)
            continue;
        if (best < 0 || score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    if (best < 0)
        return path_known ? -405 : -404;
    const http_route_t *r = (const http_route_t *)((const char *)table + (size_t)best * stride);
    int rc = decode_params(r->pattern, segs, n, len, params);
    if (rc < 0) {
        http_route_params_free(params);
        return rc;
    }
    return best;
}

void http_route_params_free(http_route_params_t *params)
{
    free(params->buf);
    memset(params, 0, sizeof *params);
}

const char *http_route_param(const http_route_params_t *params, const char *name)
{
    for (size_t i = 0; i < params->n; i++)
        if (strcmp(params->name[i], name) == 0)
            return params->value[i];
    return NULL;
}

int http_query_get(const char *url, const char *key, char *out, size_t cap)
{
    const char *q = strchr(url, '?');
    if (!q)
        return QE_NOT_FOUND;
    q++;
    size_t klen = strlen(key);
    while (*q && *q != '#') {
        size_t plen = strcspn(q, "&#");
        const char *eq = memchr(q, '=', plen);
        size_t nlen = eq ? (size_t)(eq - q) : plen;
        char name[256];
        if (nlen < sizeof name) {
            ssize_t dn = http_url_decode(q, nlen, name, true);
            if (dn >= 0 && (size_t)dn == klen && memcmp(name, key, klen) == 0) {
                const char *v = eq ? eq + 1 : q + plen;
                size_t vlen = eq ? plen - nlen - 1 : 0;
                if (vlen + 1 > cap)
                    return QE_TOO_LARGE;
                return http_url_decode(v, vlen, out, true) < 0 ? QE_INVALID : 0;
            }
        }
        q += plen;
        if (*q == '&')
            q++;
    }
    return QE_NOT_FOUND;
}

bool http_query_bool(const char *url, const char *key, bool def)
{
    char v[16];
    if (http_query_get(url, key, v, sizeof v) < 0)
        return def;
    return strcasecmp(v, "true") == 0;
}
