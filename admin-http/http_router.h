/*
 * http_router.h — one route table: method + path pattern -> handler, with
 * {name} segments captured as URL-decoded parameters; plus URL decoding and
 * query-string lookup.
 *
 * A pattern is a '/'-separated path whose segments are literals or "{name}".
 * A path matches a pattern with as many segments whose literals are equal
 * (byte for byte, compared before decoding) and whose {name} segments are
 * non-empty; a trailing '/' is ignored. When several patterns match, the one
 * with a literal at the first position where they differ wins
 * (".../{ns}/partitioned" before ".../{ns}/{topic}"). When patterns match
 * but none for the method, the answer is 405; none at all, 404.
 *
 * Parameters are percent-decoded ('+' is kept in paths, a space in queries);
 * a malformed escape or an encoded NUL is refused (400). Bounds: at most
 * HTTP_ROUTE_SEGMENTS_MAX segments and HTTP_ROUTE_PARAMS_MAX parameters.
 * No allocation except the parameter buffer of a match (freed with
 * http_route_params_free). Pure functions: no I/O, safe to fuzz.
 */
#ifndef QUIRE_ADMIN_HTTP_ROUTER_H
#define QUIRE_ADMIN_HTTP_ROUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTP_ROUTE_SEGMENTS_MAX 16
#define HTTP_ROUTE_PARAMS_MAX 8

/* The first member of a caller's route type (the table is an array of that
 * type; `stride` is its size). method: enum http_method. */
typedef struct http_route {
    int method;
    const char *pattern;
} http_route_t;

typedef struct http_route_params {
    size_t n;
    const char *name[HTTP_ROUTE_PARAMS_MAX];  /* borrowed from buf */
    const char *value[HTTP_ROUTE_PARAMS_MAX]; /* decoded, borrowed from buf */
    char *buf;                                /* owned: http_route_params_free */
} http_route_params_t;

/* Finds the route for method and url (path, optionally "?query"). Returns the
 * index of the route in the table with *params filled (caller frees), or a
 * negative HTTP status: -404, -405, -400 (malformed path), -414 (too many
 * segments), -503 (out of memory). */
int http_route_find(const void *table, size_t count, size_t stride, int method, const char *url,
                    http_route_params_t *params);
void http_route_params_free(http_route_params_t *params);
/* The value of parameter `name`, or NULL. */
const char *http_route_param(const http_route_params_t *params, const char *name);

/* Percent-decodes in[0..len) into out (room for len + 1 bytes; NUL-ended).
 * plus_is_space: '+' means ' ' (query strings). Returns the decoded length, or
 * -1 for a malformed escape or a decoded NUL byte. */
ssize_t http_url_decode(const char *in, size_t len, char *out, bool plus_is_space);

/* The decoded value of query parameter `key` in url (after '?'): 0 and out
 * filled; QE_NOT_FOUND when absent; QE_INVALID malformed; QE_TOO_LARGE when
 * it does not fit in cap. A key without '=' has the value "". */
int http_query_get(const char *url, const char *key, char *out, size_t cap);
/* true for "true" (any case); def when absent. */
bool http_query_bool(const char *url, const char *key, bool def);

#endif
