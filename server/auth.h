/*
 * auth.h — authentication: who a client is (its role), from the credentials
 * of a CONNECT (binary protocol) or of an HTTP request, with Pulsar's
 * providers and configuration keys:
 *
 *   provider (authenticationProviders)                 method  credentials
 *   ...authentication.AuthenticationProviderToken      token   a JWT (jwt.h)
 *   ...authentication.AuthenticationProviderBasic      basic   "user:password", htpasswd
 *   ...authentication.AuthenticationProviderTls        tls     the client certificate's CN
 *
 * With authenticationEnabled=false every client has the role "" (nothing is
 * checked). With it, a client that presents no credentials gets
 * anonymousUserRole when set, and is refused otherwise.
 *
 * Independent of the broker's objects (admin-http uses it for HTTP): the
 * service is built from the configuration once and read-only after.
 */
#ifndef QUIRE_SERVER_AUTH_H
#define QUIRE_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define AUTH_ROLE_MAX 256

typedef struct auth_service auth_service_t;

/* Reads authenticationEnabled, authenticationProviders, token*, basicAuthConf,
 * anonymousUserRole, superUserRoles, proxyRoles, authorizationEnabled,
 * authorizationAllowWildcardsMatching, authenticateOriginalAuthData,
 * authenticationRefreshCheckSeconds and loads the keys. A configuration error:
 * QE_INVALID with "key: reason" in err. */
int auth_service_new(const qconfig_t *q, auth_service_t **out, char *err, size_t err_len);
void auth_service_free(auth_service_t *a);

bool auth_enabled(const auth_service_t *a);
bool authz_enabled(const auth_service_t *a);
/* anonymousUserRole, or NULL when unset. */
const char *auth_anonymous_role(const auth_service_t *a);
bool auth_is_superuser(const auth_service_t *a, const char *role);
/* role is in proxyRoles: it must name an original principal, and both are
 * authorized (authz.h). */
bool auth_is_proxy_role(const auth_service_t *a, const char *role);
bool auth_has_proxy_roles(const auth_service_t *a);
/* authorizationAllowWildcardsMatching (false). */
bool authz_wildcards(const auth_service_t *a);
/* authenticateOriginalAuthData (false): a proxy's original_auth_data is
 * authenticated and its role is the original principal. */
bool auth_original_auth_data(const auth_service_t *a);
/* authenticationRefreshCheckSeconds (60). */
double auth_refresh_check_s(const auth_service_t *a);
/* authenticateMetricsEndpoint (false). */
bool auth_metrics_need_auth(const auth_service_t *a);

typedef struct auth_result {
    char role[AUTH_ROLE_MAX];
    char method[16];    /* "token", "basic", "tls", "anonymous" */
    int64_t expires_ms; /* 0: never (token without exp, basic, tls) */
} auth_result_t;

/* The binary protocol's CONNECT (or AUTH_RESPONSE): method and data as sent
 * (either may be NULL/empty), tls_cn the verified client certificate's CN
 * ("" when none). 0 and *res filled; QE_INVALID / QE_TIMEOUT (expired) with
 * the reason. now_ms: the wall clock. */
int auth_authenticate(const auth_service_t *a, const char *method, const uint8_t *data, size_t len,
                      const char *tls_cn, int64_t now_ms, auth_result_t *res, char *reason,
                      size_t cap);
/* HTTP: the Authorization header value (or NULL): "Bearer <jwt>" or
 * "Basic <base64(user:password)>"; tls_cn as above. */
int auth_authenticate_http(const auth_service_t *a, const char *authorization, const char *tls_cn,
                           int64_t now_ms, auth_result_t *res, char *reason, size_t cap);

/* htpasswd line check (exposed for tests and fuzzing): hash is crypt(3) text
 * ($1$, $5$, $6$, $2b$, $y$, DES) or Apache's $apr1$. */
bool auth_password_matches(const char *password, const char *hash);

#endif
