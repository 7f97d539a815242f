/*
 * jwt.c — see jwt.h.
 *
 * Compact JWS: base64url(header) "." base64url(claims) "." base64url(sig);
 * the signature covers the first two parts as sent. Verification order:
 * split (exactly two dots), decode and parse the header, choose the digest
 * from "alg" only if it belongs to the key's kind, check the signature, and
 * only then parse and check the claims (nothing of an unverified payload is
 * trusted or even parsed).
 */
#include "server/jwt.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errors.h"

#define JWT_KEY_FILE_MAX (1u << 20)

struct jwt_key {
    jwt_key_kind_t kind;
    uint8_t *secret; /* HMAC */
    size_t secret_len;
    EVP_PKEY *pkey; /* RSA or EC */
    char expected_alg[16];
};

/* -------------------------------------------------------------- base64 -- */

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+' || ch == '-')
        return 62;
    if (ch == '/' || ch == '_')
        return 63;
    return -1;
}

ssize_t jwt_b64_decode(const char *in, size_t len, uint8_t *out)
{
    while (len > 0 && in[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    return (ssize_t)o;
}

/* ----------------------------------------------------------------- keys -- */

void jwt_key_free(jwt_key_t *key)
{
    if (!key)
        return;
    if (key->secret) {
        OPENSSL_cleanse(key->secret, key->secret_len);
        free(key->secret);
    }
    EVP_PKEY_free(key->pkey);
    free(key);
}

jwt_key_kind_t jwt_key_kind(const jwt_key_t *key)
{
    return key->kind;
}

int jwt_key_from_bytes(const uint8_t *bytes, size_t len, bool secret, const char *expected_alg,
                       jwt_key_t **out, char *reason, size_t cap)
{
    *out = NULL;
    jwt_key_t *k = calloc(1, sizeof *k);
    if (!k)
        return -ENOMEM;
    snprintf(k->expected_alg, sizeof k->expected_alg, "%s", expected_alg ? expected_alg : "");
    if (secret) {
        if (len < 16) {
            snprintf(reason, cap, "the token secret key is shorter than 16 bytes");
            free(k);
            return QE_INVALID;
        }
        k->kind = JWT_KEY_HMAC;
        k->secret = malloc(len);
        if (!k->secret) {
            free(k);
            return -ENOMEM;
        }
        memcpy(k->secret, bytes, len);
        k->secret_len = len;
        *out = k;
        return 0;
    }
    EVP_PKEY *pk = NULL;
    if (len > 10 && memcmp(bytes, "-----BEGIN", 10) == 0) {
        BIO *bio = BIO_new_mem_buf(bytes, (int)len);
        pk = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
    } else {
        const unsigned char *p = bytes;
        pk = d2i_PUBKEY(NULL, &p, (long)len);
    }
    ERR_clear_error();
    if (!pk) {
        snprintf(reason, cap, "the token public key is not a DER or PEM public key");
        free(k);
        return QE_INVALID;
    }
    if (EVP_PKEY_is_a(pk, "RSA") || EVP_PKEY_is_a(pk, "RSA-PSS"))
        k->kind = JWT_KEY_RSA;
    else if (EVP_PKEY_is_a(pk, "EC"))
        k->kind = JWT_KEY_EC;
    else {
        snprintf(reason, cap, "the token public key is neither RSA nor EC");
        EVP_PKEY_free(pk);
        free(k);
        return QE_INVALID;
    }
    k->pkey = pk;
    *out = k;
    return 0;
}

static int read_file(const char *path, uint8_t **buf, size_t *len, char *reason, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(reason, cap, "cannot open %s: %s", path, strerror(errno));
        return QE_INVALID;
    }
    uint8_t *b = malloc(JWT_KEY_FILE_MAX);
    size_t n = b ? fread(b, 1, JWT_KEY_FILE_MAX, f) : 0;
    bool too_big = b && n == JWT_KEY_FILE_MAX;
    fclose(f);
    if (!b || too_big || n == 0) {
        free(b);
        snprintf(reason, cap, "%s: empty, unreadable or larger than 1 MiB", path);
        return QE_INVALID;
    }
    *buf = b;
    *len = n;
    return 0;
}

static int b64_dup(const char *text, size_t len, uint8_t **buf, size_t *out_len)
{
    /* surrounding whitespace (a trailing newline in a config) is ignored */
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    uint8_t *b = malloc(len * 3 / 4 + 3);
    if (!b)
        return -ENOMEM;
    ssize_t n = jwt_b64_decode(text, len, b);
    if (n <= 0) {
        free(b);
        return QE_INVALID;
    }
    *buf = b;
    *out_len = (size_t)n;
    return 0;
}

int jwt_key_load(const char *source, bool secret, const char *expected_alg, jwt_key_t **out,
                 char *reason, size_t cap)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc;
    struct stat st;
    if (strncmp(source, "data:", 5) == 0) {
        const char *comma = strchr(source, ',');
        if (!comma || !strstr(source, ";base64")) {
            snprintf(reason, cap, "a data: key must be data:;base64,<base64>");
            return QE_INVALID;
        }
        rc = b64_dup(comma + 1, strlen(comma + 1), &bytes, &len);
        if (rc < 0)
            snprintf(reason, cap, "the data: key is not valid base64");
    } else if (strncmp(source, "file://", 7) == 0) {
        rc = read_file(source + 7, &bytes, &len, reason, cap);
    } else if (stat(source, &st) == 0) {
        rc = read_file(source, &bytes, &len, reason, cap);
    } else {
        rc = b64_dup(source, strlen(source), &bytes, &len);
        if (rc < 0)
            snprintf(reason, cap, "the key is neither a file nor base64 text");
    }
    if (rc < 0)
        return rc;
    rc = jwt_key_from_bytes(bytes, len, secret, expected_alg, out, reason, cap);
    OPENSSL_cleanse(bytes, len);
    free(bytes);
    return rc;
}

/* ------------------------------------------------------------ signature -- */

typedef struct alg_info {
    const char *name;
    jwt_key_kind_t kind;
    const char *digest;
    bool pss;
    size_t ec_half; /* ES*: bytes of r and of s */
} alg_info_t;

static const alg_info_t ALGS[] = {
    {"HS256", JWT_KEY_HMAC, "SHA256", false, 0}, {"HS384", JWT_KEY_HMAC, "SHA384", false, 0},
    {"HS512", JWT_KEY_HMAC, "SHA512", false, 0}, {"RS256", JWT_KEY_RSA, "SHA256", false, 0},
    {"RS384", JWT_KEY_RSA, "SHA384", false, 0},  {"RS512", JWT_KEY_RSA, "SHA512", false, 0},
    {"PS256", JWT_KEY_RSA, "SHA256", true, 0},   {"PS384", JWT_KEY_RSA, "SHA384", true, 0},
    {"PS512", JWT_KEY_RSA, "SHA512", true, 0},   {"ES256", JWT_KEY_EC, "SHA256", false, 32},
    {"ES384", JWT_KEY_EC, "SHA384", false, 48},  {"ES512", JWT_KEY_EC, "SHA512", false, 66},
};

static const alg_info_t *alg_find(const char *name)
{
    for (size_t i = 0; i < sizeof ALGS / sizeof ALGS[0]; i++)
        if (strcmp(ALGS[i].name, name) == 0)
            return &ALGS[i];
    return NULL;
}

static bool verify_hmac(const jwt_key_t *k, const alg_info_t *a, const char *msg, size_t msg_len,
                        const uint8_t *sig, size_t sig_len)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    const EVP_MD *md = EVP_get_digestbyname(a->digest);
    if (!md || !HMAC(md, k->secret, (int)k->secret_len, (const unsigned char *)msg, msg_len, mac,
                     &mac_len))
        return false;
    return mac_len == sig_len && CRYPTO_memcmp(mac, sig, sig_len) == 0;
}

/* JWS ECDSA signatures are r || s, fixed width; OpenSSL verifies DER. */
static uint8_t *ecdsa_raw_to_der(const uint8_t *sig, size_t half, size_t *der_len)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)half, NULL), *s = BN_bin2bn(sig + half, (int)half, NULL);
    if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
        ECDSA_SIG_free(es);
        BN_free(r);
        BN_free(s);
        return NULL;
    }
    unsigned char *der = NULL;
    int n = i2d_ECDSA_SIG(es, &der);
    ECDSA_SIG_free(es);
    if (n <= 0)
        return NULL;
    *der_len = (size_t)n;
    return der;
}

static bool verify_pkey(const jwt_key_t *k, const alg_info_t *a, const char *msg, size_t msg_len,
                        const uint8_t *sig, size_t sig_len)
{
    uint8_t *der = NULL;
    if (a->kind == JWT_KEY_EC) {
        if (sig_len != 2 * a->ec_half)
            return false;
        der = ecdsa_raw_to_der(sig, a->ec_half, &sig_len);
        if (!der)
            return false;
        sig = der;
    }
    EVP_MD_CTX *mctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    bool ok = false;
    if (mctx && EVP_DigestVerifyInit_ex(mctx, &pctx, a->digest, NULL, NULL, k->pkey, NULL) == 1 &&
        (!a->pss || (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
                     EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1)))
        ok = EVP_DigestVerify(mctx, sig, sig_len, (const unsigned char *)msg, msg_len) == 1;
    EVP_MD_CTX_free(mctx);
    OPENSSL_free(der);
    ERR_clear_error();
    return ok;
}

/* --------------------------------------------------------------- claims -- */

static json_t *decode_json(const char *part, size_t len)
{
    uint8_t *buf = malloc(len * 3 / 4 + 3);
    if (!buf)
        return NULL;
    ssize_t n = jwt_b64_decode(part, len, buf);
    json_t *j = NULL;
    if (n > 0) {
        json_error_t err;
        j = json_loadb((const char *)buf, (size_t)n, JSON_REJECT_DUPLICATES, &err);
    }
    free(buf);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

static bool audience_ok(const json_t *claims, const jwt_check_t *chk)
{
    if (!chk->audience_claim || !chk->audience_claim[0])
        return true;
    const json_t *aud = json_object_get(claims, chk->audience_claim);
    const char *want = chk->audience ? chk->audience : "";
    if (json_is_string(aud))
        return strcmp(json_string_value(aud), want) == 0;
    if (json_is_array(aud)) {
        size_t i;
        const json_t *v;
        json_array_foreach(aud, i, v) if (json_is_string(v) &&
                                          strcmp(json_string_value(v), want) == 0) return true;
    }
    return false;
}

static int check_claims(const json_t *claims, const jwt_check_t *chk, char *role, size_t cap,
                        int64_t *exp_s, char *reason, size_t rcap)
{
    const json_t *exp = json_object_get(claims, "exp");
    *exp_s = 0;
    if (exp) {
        if (!json_is_number(exp)) {
            snprintf(reason, rcap, "the token's exp is not a number");
            return QE_INVALID;
        }
        double e = json_number_value(exp);
        if ((double)chk->now_s >= e) {
            snprintf(reason, rcap, "the token has expired");
            return QE_TIMEOUT;
        }
        *exp_s = e > 9e15 ? INT64_MAX / 1000 : (int64_t)e;
    }
    const json_t *nbf = json_object_get(claims, "nbf");
    if (nbf && (!json_is_number(nbf) || (double)chk->now_s < json_number_value(nbf))) {
        snprintf(reason, rcap, "the token is not valid yet");
        return QE_TIMEOUT;
    }
    if (!audience_ok(claims, chk)) {
        snprintf(reason, rcap, "the token's audience is not this broker");
        return QE_INVALID;
    }
    const char *claim = chk->role_claim && chk->role_claim[0] ? chk->role_claim : "sub";
    const json_t *r = json_object_get(claims, claim);
    const char *s = json_string_value(r);
    size_t n = s ? json_string_length(r) : 0;
    if (!s || n == 0 || n >= cap || memchr(s, '\0', n)) {
        snprintf(reason, rcap, "the token has no usable '%s' claim", claim);
        return QE_INVALID;
    }
    memcpy(role, s, n + 1);
    return 0;
}

int jwt_verify(const char *token, size_t len, const jwt_key_t *key, const jwt_check_t *chk,
               char *role, size_t cap, int64_t *exp_s, char *reason, size_t rcap)
{
    *exp_s = 0;
    if (len == 0 || len > JWT_MAX_BYTES) {
        snprintf(reason, rcap, "the token is empty or too long");
        return QE_INVALID;
    }
    const char *d1 = memchr(token, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
    if (!d1 || !d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token))) {
        snprintf(reason, rcap, "the token is not a compact JWS (three parts)");
        return QE_INVALID;
    }
    json_t *hdr = decode_json(token, (size_t)(d1 - token));
    const char *alg = hdr ? json_string_value(json_object_get(hdr, "alg")) : NULL;
    const alg_info_t *a = alg ? alg_find(alg) : NULL;
    int rc = QE_INVALID;
    if (!hdr)
        snprintf(reason, rcap, "the token's header is not a JSON object");
    else if (json_object_get(hdr, "crit"))
        snprintf(reason, rcap, "the token has critical headers");
    else if (!a || a->kind != key->kind)
        snprintf(reason, rcap, "the token's algorithm '%.16s' is not accepted with this key",
                 alg ? alg : "(none)");
    else if (key->expected_alg[0] && strcmp(key->expected_alg, a->name) != 0)
        snprintf(reason, rcap, "the token's algorithm is not %s", key->expected_alg);
    else
        rc = 0;
    json_decref(hdr);
    if (rc < 0)
        return rc;

    size_t sig_b64 = len - (size_t)(d2 + 1 - token);
    uint8_t *sig = malloc(sig_b64 * 3 / 4 + 3);
    if (!sig)
        return -ENOMEM;
    ssize_t sig_len = jwt_b64_decode(d2 + 1, sig_b64, sig);
    size_t signed_len = (size_t)(d2 - token);
    bool ok = sig_len > 0 && (a->kind == JWT_KEY_HMAC
                                  ? verify_hmac(key, a, token, signed_len, sig, (size_t)sig_len)
                                  : verify_pkey(key, a, token, signed_len, sig, (size_t)sig_len));
    free(sig);
    if (!ok) {
        snprintf(reason, rcap, "the token's signature does not verify");
        return QE_INVALID;
    }
    json_t *claims = decode_json(d1 + 1, (size_t)(d2 - d1 - 1));
    if (!claims) {
        snprintf(reason, rcap, "the token's claims are not a JSON object");
        return QE_INVALID;
    }
    rc = check_claims(claims, chk, role, cap, exp_s, reason, rcap);
    json_decref(claims);
    return rc;
}
