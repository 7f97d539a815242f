/*
 * auth.c — see auth.h.
 *
 * Providers are tried by the method the client names ("token", "basic",
 * "tls"); a method whose provider is not configured is refused. Without a
 * method: the TLS provider when a verified client certificate is there,
 * else the anonymous role, else refusal (Pulsar's order).
 *
 * htpasswd (basicAuthConf: a path, file://, data:;base64, or base64 text):
 * "user:hash" lines, '#' comments. Pulsar's provider accepts crypt and
 * Apache MD5 ($apr1$); crypt(3) of libxcrypt adds $1$, $5$, $6$, $2b$
 * (bcrypt) and $y$ (yescrypt). A hash that crypt cannot use never matches.
 */
#include "server/auth.h"

#include <crypt.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/jwt.h"

#define AUTH_SUPERUSERS_MAX 64
#define AUTH_USERS_MAX 10000

typedef struct htpasswd_user {
    char *name;
    char *hash;
} htpasswd_user_t;

struct auth_service {
    bool enabled, authz;
    bool token, basic, tls;
    jwt_key_t *token_key;
    char token_role_claim[64];
    char token_audience_claim[64];
    char token_audience[256];
    htpasswd_user_t *users;
    size_t users_count;
    char anonymous_role[AUTH_ROLE_MAX];
    char *superusers[AUTH_SUPERUSERS_MAX];
    size_t superusers_count;
    char *proxy_roles[AUTH_SUPERUSERS_MAX]; /* proxyRoles */
    size_t proxy_roles_count;
    bool wildcards;          /* authorizationAllowWildcardsMatching */
    bool auth_original_data; /* authenticateOriginalAuthData */
    double refresh_check_s;
    bool metrics_auth;
};

/* -------------------------------------------------------------- htpasswd -- */

/* Apache's MD5 crypt ($apr1$): the FreeBSD md5crypt with magic "$apr1$". */
static const char ITOA64[] = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static void to64(char *s, unsigned long v, int n)
{
    while (--n >= 0) {
        *s++ = ITOA64[v & 0x3f];
        v >>= 6;
    }
}

static void md5_update(EVP_MD_CTX *c, const void *p, size_t n)
{
    EVP_DigestUpdate(c, p, n);
}

static bool apr1_crypt(const char *pw, const char *salt_in, char *out, size_t cap)
{
    const char *magic = "$apr1$";
    const char *sp = salt_in + strlen(magic);
    size_t sl = 0;
    while (sp[sl] && sp[sl] != '$' && sl < 8)
        sl++;
    size_t pl = strlen(pw);
    unsigned char fin[16];
    EVP_MD_CTX *c = EVP_MD_CTX_new(), *c1 = EVP_MD_CTX_new();
    const EVP_MD *md5 = EVP_md5();
    bool ok = c && c1 && md5;
    if (ok) {
        EVP_DigestInit_ex(c, md5, NULL);
        md5_update(c, pw, pl);
        md5_update(c, magic, strlen(magic));
        md5_update(c, sp, sl);
        EVP_DigestInit_ex(c1, md5, NULL);
        md5_update(c1, pw, pl);
        md5_update(c1, sp, sl);
        md5_update(c1, pw, pl);
        EVP_DigestFinal_ex(c1, fin, NULL);
        for (long i = (long)pl; i > 0; i -= 16)
            md5_update(c, fin, i > 16 ? 16 : (size_t)i);
        memset(fin, 0, sizeof fin);
        for (size_t i = pl; i; i >>= 1)
            md5_update(c, (i & 1) ? (const void *)fin : (const void *)pw, 1);
        EVP_DigestFinal_ex(c, fin, NULL);
        for (int i = 0; i < 1000; i++) {
            EVP_DigestInit_ex(c1, md5, NULL);
            if (i & 1)
                md5_update(c1, pw, pl);
            else
                md5_update(c1, fin, 16);
            if (i % 3)
                md5_update(c1, sp, sl);
            if (i % 7)
                md5_update(c1, pw, pl);
            if (i & 1)
                md5_update(c1, fin, 16);
            else
                md5_update(c1, pw, pl);
            EVP_DigestFinal_ex(c1, fin, NULL);
        }
    }
    EVP_MD_CTX_free(c);
    EVP_MD_CTX_free(c1);
    if (!ok || cap < strlen(magic) + sl + 1 + 22 + 1)
        return false;
    char *p = out + snprintf(out, cap, "%s%.*s$", magic, (int)sl, sp);
    to64(p, ((unsigned long)fin[0] << 16) | ((unsigned long)fin[6] << 8) | fin[12], 4);
    to64(p + 4, ((unsigned long)fin[1] << 16) | ((unsigned long)fin[7] << 8) | fin[13], 4);
    to64(p + 8, ((unsigned long)fin[2] << 16) | ((unsigned long)fin[8] << 8) | fin[14], 4);
    to64(p + 12, ((unsigned long)fin[3] << 16) | ((unsigned long)fin[9] << 8) | fin[15], 4);
    to64(p + 16, ((unsigned long)fin[4] << 16) | ((unsigned long)fin[10] << 8) | fin[5], 4);
    to64(p + 20, fin[11], 2);
    p[22] = '\0';
    OPENSSL_cleanse(fin, sizeof fin);
    return true;
}

bool auth_password_matches(const char *password, const char *hash)
{
    size_t hl = strlen(hash);
    if (hl == 0)
        return false;
    if (strncmp(hash, "$apr1$", 6) == 0) {
        char out[128];
        if (!apr1_crypt(password, hash, out, sizeof out))
            return false;
        return strlen(out) == hl && CRYPTO_memcmp(out, hash, hl) == 0;
    }
    struct crypt_data *cd = calloc(1, sizeof *cd);
    if (!cd)
        return false;
    const char *out = crypt_r(password, hash, cd);
    /* libxcrypt returns "*0"/"*1" (or NULL) for a hash it cannot use */
    bool ok = out && out[0] != '*' && strlen(out) == hl && CRYPTO_memcmp(out, hash, hl) == 0;
    OPENSSL_cleanse(cd, sizeof *cd);
    free(cd);
    return ok;
}

static int htpasswd_parse(auth_service_t *a, char *text, char *err, size_t err_len)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (!*line || *line == '#')
            continue;
        char *colon = strchr(line, ':');
        if (!colon || colon == line) {
            snprintf(err, err_len, "basicAuthConf: a line is not user:hash");
            return QE_INVALID;
        }
        if (a->users_count == AUTH_USERS_MAX) {
            snprintf(err, err_len, "basicAuthConf: more than %d users", AUTH_USERS_MAX);
            return QE_INVALID;
        }
        *colon = '\0';
        htpasswd_user_t *nu = realloc(a->users, (a->users_count + 1) * sizeof *nu);
        if (!nu)
            return -ENOMEM;
        a->users = nu;
        nu[a->users_count].name = strdup(line);
        nu[a->users_count].hash = strdup(colon + 1);
        a->users_count++;
        if (!nu[a->users_count - 1].name || !nu[a->users_count - 1].hash)
            return -ENOMEM;
    }
    return 0;
}

static int htpasswd_load(auth_service_t *a, const char *src, char *err, size_t err_len)
{
    char *text = NULL;
    struct stat st;
    const char *path = strncmp(src, "file://", 7) == 0 ? src + 7 : src;
    if (path != src || stat(path, &st) == 0) {
        FILE *f = fopen(path, "rb");
        if (!f || fstat(fileno(f), &st) < 0 || st.st_size > (1 << 24)) {
            if (f)
                fclose(f);
            snprintf(err, err_len, "basicAuthConf: cannot read %s", path);
            return QE_INVALID;
        }
        text = calloc(1, (size_t)st.st_size + 1);
        size_t n = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
        fclose(f);
        if (!text)
            return -ENOMEM;
        text[n] = '\0';
    } else {
        const char *b64 = src;
        if (strncmp(src, "data:", 5) == 0 && strchr(src, ','))
            b64 = strchr(src, ',') + 1;
        size_t len = strlen(b64);
        text = calloc(1, len * 3 / 4 + 4);
        ssize_t n = text ? jwt_b64_decode(b64, len, (uint8_t *)text) : -1;
        if (n <= 0) {
            free(text);
            snprintf(err, err_len, "basicAuthConf: neither a readable file nor base64 text");
            return QE_INVALID;
        }
        text[n] = '\0';
    }
    int rc = htpasswd_parse(a, text, err, err_len);
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- config -- */

static int load_token(auth_service_t *a, const qconfig_t *q, char *err, size_t err_len)
{
    const char *secret = qconfig_get(q, "tokenSecretKey", "");
    const char *pub = qconfig_get(q, "tokenPublicKey", "");
    const char *alg = qconfig_get(q, "tokenPublicAlg", "");
    if (*secret && *pub) {
        snprintf(err, err_len, "tokenSecretKey and tokenPublicKey: set only one");
        return QE_INVALID;
    }
    if (!*secret && !*pub) {
        snprintf(err, err_len,
                 "AuthenticationProviderToken needs tokenSecretKey or tokenPublicKey");
        return QE_INVALID;
    }
    char reason[256];
    int rc = jwt_key_load(*secret ? secret : pub, *secret != '\0', *secret ? "" : alg,
                          &a->token_key, reason, sizeof reason);
    if (rc < 0) {
        snprintf(err, err_len, "%s: %s", *secret ? "tokenSecretKey" : "tokenPublicKey", reason);
        return rc;
    }
    snprintf(a->token_role_claim, sizeof a->token_role_claim, "%s",
             qconfig_get(q, "tokenAuthClaim", "sub"));
    if (!a->token_role_claim[0])
        snprintf(a->token_role_claim, sizeof a->token_role_claim, "sub");
    snprintf(a->token_audience_claim, sizeof a->token_audience_claim, "%s",
             qconfig_get(q, "tokenAudienceClaim", ""));
    snprintf(a->token_audience, sizeof a->token_audience, "%s",
             qconfig_get(q, "tokenAudience", ""));
    if (a->token_audience_claim[0] && !a->token_audience[0]) {
        snprintf(err, err_len, "tokenAudienceClaim is set: tokenAudience must be too");
        return QE_INVALID;
    }
    return 0;
}

/* "a.b.AuthenticationProviderToken, ..." -> the provider flags. */
static int load_providers(auth_service_t *a, const char *list, char *err, size_t err_len)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        const char *dot = strrchr(tok, '.');
        const char *cls = dot ? dot + 1 : tok;
        if (strcmp(cls, "AuthenticationProviderToken") == 0)
            a->token = true;
        else if (strcmp(cls, "AuthenticationProviderBasic") == 0)
            a->basic = true;
        else if (strcmp(cls, "AuthenticationProviderTls") == 0)
            a->tls = true;
        else {
            snprintf(err, err_len, "authenticationProviders: %s is not supported", tok);
            return QE_INVALID;
        }
    }
    return 0;
}

/* A comma-separated list of roles (superUserRoles, proxyRoles). */
static int load_roles(char **roles, size_t *count, const char *list)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ", \t", &save); tok && *count < AUTH_SUPERUSERS_MAX;
         tok = strtok_r(NULL, ", \t", &save)) {
        roles[*count] = strdup(tok);
        if (!roles[*count])
            return -ENOMEM;
        (*count)++;
    }
    return 0;
}

static int get_bool(const qconfig_t *q, const char *key, bool *out, char *err, size_t err_len)
{
    if (qconfig_get_bool(q, key, false, out) == 0)
        return 0;
    snprintf(err, err_len, "%s: expected true or false", key);
    return QE_INVALID;
}

int auth_service_new(const qconfig_t *q, auth_service_t **out, char *err, size_t err_len)
{
    *out = NULL;
    auth_service_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    int64_t refresh = 60;
    int rc = get_bool(q, "authenticationEnabled", &a->enabled, err, err_len);
    if (rc == 0)
        rc = get_bool(q, "authorizationEnabled", &a->authz, err, err_len);
    if (rc == 0)
        rc = get_bool(q, "authenticateMetricsEndpoint", &a->metrics_auth, err, err_len);
    if (rc == 0 &&
        qconfig_get_int(q, "authenticationRefreshCheckSeconds", 60, 1, 86400, &refresh) < 0) {
        snprintf(err, err_len, "authenticationRefreshCheckSeconds: expected [1, 86400]");
        rc = QE_INVALID;
    }
    a->refresh_check_s = (double)refresh;
    if (rc == 0 && strlen(qconfig_get(q, "anonymousUserRole", "")) >= AUTH_ROLE_MAX) {
        snprintf(err, err_len, "anonymousUserRole: too long");
        rc = QE_INVALID;
    }
    snprintf(a->anonymous_role, sizeof a->anonymous_role, "%s",
             qconfig_get(q, "anonymousUserRole", ""));
    if (rc == 0)
        rc = load_roles(a->superusers, &a->superusers_count, qconfig_get(q, "superUserRoles", ""));
    if (rc == 0)
        rc = load_roles(a->proxy_roles, &a->proxy_roles_count, qconfig_get(q, "proxyRoles", ""));
    if (rc == 0)
        rc = get_bool(q, "authorizationAllowWildcardsMatching", &a->wildcards, err, err_len);
    if (rc == 0)
        rc = get_bool(q, "authenticateOriginalAuthData", &a->auth_original_data, err, err_len);
    if (rc == 0 && a->enabled)
        rc = load_providers(a, qconfig_get(q, "authenticationProviders", ""), err, err_len);
    if (rc == 0 && a->enabled && !a->token && !a->basic && !a->tls) {
        snprintf(err, err_len, "authenticationEnabled=true needs authenticationProviders");
        rc = QE_INVALID;
    }
    if (rc == 0 && a->token)
        rc = load_token(a, q, err, err_len);
    if (rc == 0 && a->basic) {
        const char *src = qconfig_get(q, "basicAuthConf", "");
        if (!*src) {
            snprintf(err, err_len, "AuthenticationProviderBasic needs basicAuthConf");
            rc = QE_INVALID;
        } else {
            rc = htpasswd_load(a, src, err, err_len);
        }
    }
    if (rc < 0) {
        auth_service_free(a);
        return rc;
    }
    if (a->authz && !a->enabled)
        log_warn("auth", "authorizationEnabled without authenticationEnabled: every client has "
                         "the anonymous role");
    *out = a;
    return 0;
}

void auth_service_free(auth_service_t *a)
{
    if (!a)
        return;
    jwt_key_free(a->token_key);
    for (size_t i = 0; i < a->users_count; i++) {
        free(a->users[i].name);
        if (a->users[i].hash)
            OPENSSL_cleanse(a->users[i].hash, strlen(a->users[i].hash));
        free(a->users[i].hash);
    }
    free(a->users);
    for (size_t i = 0; i < a->superusers_count; i++)
        free(a->superusers[i]);
    for (size_t i = 0; i < a->proxy_roles_count; i++)
        free(a->proxy_roles[i]);
    free(a);
}

bool auth_enabled(const auth_service_t *a)
{
    return a && a->enabled;
}

bool authz_enabled(const auth_service_t *a)
{
    return a && a->authz;
}

const char *auth_anonymous_role(const auth_service_t *a)
{
    return a && a->anonymous_role[0] ? a->anonymous_role : NULL;
}

bool auth_is_superuser(const auth_service_t *a, const char *role)
{
    if (!a || !role || !*role)
        return false;
    for (size_t i = 0; i < a->superusers_count; i++)
        if (strcmp(a->superusers[i], role) == 0)
            return true;
    return false;
}

bool auth_is_proxy_role(const auth_service_t *a, const char *role)
{
    if (!a || !role || !*role)
        return false;
    for (size_t i = 0; i < a->proxy_roles_count; i++)
        if (strcmp(a->proxy_roles[i], role) == 0)
            return true;
    return false;
}

bool auth_has_proxy_roles(const auth_service_t *a)
{
    return a && a->proxy_roles_count > 0;
}

bool authz_wildcards(const auth_service_t *a)
{
    return a && a->wildcards;
}

bool auth_original_auth_data(const auth_service_t *a)
{
    return a && a->auth_original_data;
}

double auth_refresh_check_s(const auth_service_t *a)
{
    return a ? a->refresh_check_s : 60.0;
}

bool auth_metrics_need_auth(const auth_service_t *a)
{
    return a && a->enabled && a->metrics_auth;
}

/* ------------------------------------------------------ authentication -- */

static int set_role(auth_result_t *res, const char *method, const char *role, size_t len)
{
    if (len == 0 || len >= sizeof res->role)
        return QE_INVALID;
    memcpy(res->role, role, len);
    res->role[len] = '\0';
    snprintf(res->method, sizeof res->method, "%s", method);
    return 0;
}

static int auth_token(const auth_service_t *a, const char *tok, size_t len, int64_t now_ms,
                      auth_result_t *res, char *reason, size_t cap)
{
    jwt_check_t chk = {a->token_role_claim, a->token_audience_claim, a->token_audience,
                       now_ms / 1000};
    int64_t exp_s = 0;
    int rc =
        jwt_verify(tok, len, a->token_key, &chk, res->role, sizeof res->role, &exp_s, reason, cap);
    if (rc < 0)
        return rc;
    snprintf(res->method, sizeof res->method, "token");
    res->expires_ms = exp_s > 0 ? exp_s * 1000 : 0;
    return 0;
}

static int auth_basic(const auth_service_t *a, const char *data, size_t len, auth_result_t *res,
                      char *reason, size_t cap)
{
    const char *colon = memchr(data, ':', len);
    if (!colon || memchr(data, '\0', len)) {
        snprintf(reason, cap, "basic credentials are not user:password");
        return QE_INVALID;
    }
    size_t ulen = (size_t)(colon - data);
    char pw[1024];
    size_t plen = len - ulen - 1;
    if (plen >= sizeof pw) {
        snprintf(reason, cap, "basic credentials too long");
        return QE_INVALID;
    }
    memcpy(pw, colon + 1, plen);
    pw[plen] = '\0';
    bool ok = false;
    for (size_t i = 0; i < a->users_count; i++)
        if (strlen(a->users[i].name) == ulen && memcmp(a->users[i].name, data, ulen) == 0) {
            ok = auth_password_matches(pw, a->users[i].hash);
            break;
        }
    OPENSSL_cleanse(pw, sizeof pw);
    if (!ok || set_role(res, "basic", data, ulen) < 0) {
        snprintf(reason, cap, "unknown user or wrong password");
        return QE_INVALID;
    }
    return 0;
}

static int auth_none(const auth_service_t *a, const char *tls_cn, auth_result_t *res, char *reason,
                     size_t cap)
{
    if (a->tls && tls_cn && *tls_cn)
        return set_role(res, "tls", tls_cn, strlen(tls_cn));
    if (a->anonymous_role[0])
        return set_role(res, "anonymous", a->anonymous_role, strlen(a->anonymous_role));
    snprintf(reason, cap, "authentication required");
    return QE_INVALID;
}

int auth_authenticate(const auth_service_t *a, const char *method, const uint8_t *data, size_t len,
                      const char *tls_cn, int64_t now_ms, auth_result_t *res, char *reason,
                      size_t cap)
{
    memset(res, 0, sizeof *res);
    snprintf(reason, cap, "refused");
    if (!a || !a->enabled)
        return 0;
    if (!method || !*method || strcmp(method, "none") == 0)
        return auth_none(a, tls_cn, res, reason, cap);
    if (strcmp(method, "token") == 0 && a->token)
        return auth_token(a, (const char *)data, data ? len : 0, now_ms, res, reason, cap);
    if (strcmp(method, "basic") == 0 && a->basic && data)
        return auth_basic(a, (const char *)data, len, res, reason, cap);
    if (strcmp(method, "tls") == 0 && a->tls) {
        if (tls_cn && *tls_cn)
            return set_role(res, "tls", tls_cn, strlen(tls_cn));
        snprintf(reason, cap, "no verified client certificate");
        return QE_INVALID;
    }
    snprintf(reason, cap, "authentication method '%.32s' is not enabled", method);
    return QE_INVALID;
}

int auth_authenticate_http(const auth_service_t *a, const char *authorization, const char *tls_cn,
                           int64_t now_ms, auth_result_t *res, char *reason, size_t cap)
{
    memset(res, 0, sizeof *res);
    snprintf(reason, cap, "refused");
    if (!a || !a->enabled)
        return 0;
    if (!authorization || !*authorization)
        return auth_none(a, tls_cn, res, reason, cap);
    if (strncasecmp(authorization, "Bearer ", 7) == 0 && a->token) {
        const char *t = authorization + 7;
        while (*t == ' ')
            t++;
        return auth_token(a, t, strlen(t), now_ms, res, reason, cap);
    }
    if (strncasecmp(authorization, "Basic ", 6) == 0 && a->basic) {
        const char *b64 = authorization + 6;
        size_t len = strlen(b64);
        if (len > 4096) {
            snprintf(reason, cap, "basic credentials too long");
            return QE_INVALID;
        }
        uint8_t buf[4096 * 3 / 4 + 4];
        ssize_t n = jwt_b64_decode(b64, len, buf);
        if (n <= 0) {
            snprintf(reason, cap, "basic credentials are not base64");
            return QE_INVALID;
        }
        int rc = auth_basic(a, (const char *)buf, (size_t)n, res, reason, cap);
        OPENSSL_cleanse(buf, sizeof buf);
        return rc;
    }
    snprintf(reason, cap, "unsupported Authorization scheme");
    return QE_INVALID;
}
