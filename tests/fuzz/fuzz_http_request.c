/*
 * fuzz_http_request.c — libFuzzer target for the admin HTTP request path
 * without a socket: the bytes go through http-parser with the callbacks the
 * server uses (URL, headers, body collected with the server's bounds), each
 * complete request through the router (a table with the admin API's route
 * shapes), the query-string helpers, and the authentication of its
 * Authorization header (server/auth.c with token and basic providers). The
 * "response sink" is the router's verdict: no handler runs (they need a
 * metadata store and a broker).
 */
#include <http_parser.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin-http/http_router.h"
#include "common/config.h"
#include "server/auth.h"

#define HEAD_MAX 16384

typedef struct req {
    char url[HEAD_MAX];
    size_t url_len;
    char field[256], auth[HEAD_MAX];
    size_t field_len, auth_len;
    bool in_auth;
    size_t body_len;
    int done;
} req_t;

static const http_route_t ROUTES[] = {
    {HTTP_GET, "/admin/v2/clusters"},
    {HTTP_GET, "/admin/v2/tenants/{tenant}"},
    {HTTP_PUT, "/admin/v2/tenants/{tenant}"},
    {HTTP_GET, "/admin/v2/namespaces/{tenant}/{namespace}"},
    {HTTP_POST, "/admin/v2/namespaces/{tenant}/{namespace}/retention"},
    {HTTP_POST, "/admin/v2/namespaces/{tenant}/{namespace}/permissions/{role}"},
    {HTTP_GET, "/admin/v2/persistent/{tenant}/{namespace}"},
    {HTTP_GET, "/admin/v2/persistent/{tenant}/{namespace}/partitioned"},
    {HTTP_PUT, "/admin/v2/persistent/{tenant}/{namespace}/{topic}"},
    {HTTP_GET, "/admin/v2/persistent/{tenant}/{namespace}/{topic}/examinemessage"},
    {HTTP_GET,
     "/admin/v2/persistent/{tenant}/{namespace}/{topic}/ledger/{ledgerId}/entry/{entryId}"},
    {HTTP_GET,
     "/admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{subscription}/position/{n}"},
    {HTTP_GET, "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}"},
    {HTTP_GET, "/metrics"},
};

static auth_service_t *auth;

static int on_url(http_parser *p, const char *at, size_t len)
{
    req_t *r = p->data;
    if (r->url_len + len >= sizeof r->url)
        return 1;
    memcpy(r->url + r->url_len, at, len);
    r->url_len += len;
    r->url[r->url_len] = '\0';
    return 0;
}

static int on_field(http_parser *p, const char *at, size_t len)
{
    req_t *r = p->data;
    if (r->in_auth || r->field_len + len >= sizeof r->field)
        r->field_len = 0;
    r->in_auth = false;
    if (len >= sizeof r->field)
        return 1;
    memcpy(r->field + r->field_len, at, len);
    r->field_len += len;
    r->field[r->field_len] = '\0';
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    req_t *r = p->data;
    if (strcasecmp(r->field, "authorization") != 0)
        return 0;
    r->in_auth = true;
    if (r->auth_len + len >= sizeof r->auth)
        return 1;
    memcpy(r->auth + r->auth_len, at, len);
    r->auth_len += len;
    r->auth[r->auth_len] = '\0';
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    (void)at;
    req_t *r = p->data;
    r->body_len += len;
    return r->body_len > (5u << 20);
}

static int on_complete(http_parser *p)
{
    req_t *r = p->data;
    http_route_params_t params = {0};
    int idx = http_route_find(ROUTES, sizeof ROUTES / sizeof ROUTES[0], sizeof ROUTES[0],
                              (int)p->method, r->url, &params);
    if (idx >= 0) {
        for (size_t i = 0; i < params.n; i++)
            (void)strlen(params.value[i]);
        (void)http_route_param(&params, "topic");
        http_route_params_free(&params);
    }
    char v[256];
    http_query_get(r->url, "initialPosition", v, sizeof v);
    (void)http_query_bool(r->url, "authoritative", false);
    auth_result_t res;
    char reason[256];
    auth_authenticate_http(auth, r->auth_len ? r->auth : NULL, "", 1700000000000LL, &res, reason,
                           sizeof reason);
    memset(r, 0, sizeof *r);
    http_parser_pause(p, 1);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qconfig_t *q = qconfig_new();
    qconfig_set(q, "authenticationEnabled", "true");
    qconfig_set(q, "authenticationProviders",
                "org.apache.pulsar.broker.authentication.AuthenticationProviderToken,"
                "org.apache.pulsar.broker.authentication.AuthenticationProviderBasic");
    /* base64 of "fuzz-secret-key-0123456789abcdef" */
    qconfig_set(q, "tokenSecretKey", "data:;base64,ZnV6ei1zZWNyZXQta2V5LTAxMjM0NTY3ODlhYmNkZWY=");
    /* alice:alice-pw (apr1), bob:bob-pw (SHA-512 crypt) */
    qconfig_set(q, "basicAuthConf",
                "data:;base64,"
                "YWxpY2U6JGFwcjEkUHo5Lk9vR3EkOGphd2dwYkpHSHZUSk8wQWxpOFRhMApib2I6JDYkZnV6enNhbHQkZG"
                "o5dkFWSDY3WXFRRi5TNVZBUGtJYVdZMU1tYTNUMThUQ1BKaGNSc1JXM2NiaE9wSy9rVTV1MjRiSEFkNTlO"
                "QjYuNS9raHkwbUlxNGRvU2M4VEU2eS4K");
    char err[256];
    if (auth_service_new(q, &auth, err, sizeof err) < 0) {
        fprintf(stderr, "fuzz_http_request: %s\n", err);
        abort();
    }
    qconfig_free(q);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static http_parser_settings s = {
        .on_url = on_url,
        .on_header_field = on_field,
        .on_header_value = on_value,
        .on_body = on_body,
        .on_message_complete = on_complete,
    };
    req_t *r = calloc(1, sizeof *r);
    http_parser p;
    http_parser_init(&p, HTTP_REQUEST);
    p.data = r;
    const char *at = (const char *)data;
    size_t left = size;
    while (left > 0) {
        size_t n = http_parser_execute(&p, &s, at, left);
        if (HTTP_PARSER_ERRNO(&p) == HPE_PAUSED) {
            http_parser_pause(&p, 0);
            at += n;
            left -= n;
            continue;
        }
        break;
    }
    free(r);
    return 0;
}
