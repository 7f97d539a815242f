/*
 * jwt.h — verification of JSON Web Tokens (RFC 7519, JWS compact form) as
 * Pulsar's AuthenticationProviderToken issues and checks them.
 *
 * A verification key is one kind: an HMAC secret (HS256/384/512), an RSA
 * public key (RS256/384/512, PS256/384/512) or an EC public key
 * (ES256/384/512). The token's "alg" must belong to the key's kind — this is
 * what refuses "alg":"none" (CVE-2021-22160) and algorithm confusion (an HS256
 * token "signed" with the bytes of an RSA public key) — and, when the key
 * was loaded with an expected algorithm (tokenPublicAlg), equal it. "crit"
 * headers are refused (none are understood).
 *
 * Claims checked: "exp" (expired at or after it; a non-number refuses),
 * "nbf" (not before), the role claim (a string) and optionally the audience
 * claim (a string or an array of strings containing the expected audience).
 *
 * Pure functions over bytes (no I/O except jwt_key_load reading a key file):
 * fuzzable. Sizes are bounded: tokens longer than JWT_MAX_BYTES are refused.
 */
#ifndef QUIRE_SERVER_JWT_H
#define QUIRE_SERVER_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JWT_MAX_BYTES (64u * 1024u)

typedef enum { JWT_KEY_HMAC = 1, JWT_KEY_RSA = 2, JWT_KEY_EC = 3 } jwt_key_kind_t;

typedef struct jwt_key jwt_key_t;

/* Loads a key from a Pulsar key source: "data:;base64,<b64>", "file:///path",
 * a path to an existing file, or else the base64 text itself. secret: the
 * bytes are an HMAC secret; otherwise a public key, DER (SubjectPublicKeyInfo,
 * as `pulsar tokens create-key-pair` writes) or PEM. expected_alg: "" or an
 * algorithm name every token must use. 0, or QE_INVALID with reason. */
int jwt_key_load(const char *source, bool secret, const char *expected_alg, jwt_key_t **out,
                 char *reason, size_t cap);
/* Same from bytes in memory. */
int jwt_key_from_bytes(const uint8_t *bytes, size_t len, bool secret, const char *expected_alg,
                       jwt_key_t **out, char *reason, size_t cap);
void jwt_key_free(jwt_key_t *key);
jwt_key_kind_t jwt_key_kind(const jwt_key_t *key);

typedef struct jwt_check {
    const char *role_claim;     /* "sub" */
    const char *audience_claim; /* NULL or "": audience not checked */
    const char *audience;       /* required member of the audience claim */
    int64_t now_s;              /* seconds since the epoch */
} jwt_check_t;

/* Verifies token[0..len) against key and chk. 0: the role (NUL-ended) in
 * role[cap] and *exp_s the expiry (0 when the token has none). Otherwise
 * QE_INVALID (malformed, bad signature, wrong algorithm, no role),
 * QE_TIMEOUT (expired or not yet valid), with the reason in reason[rcap]. */
int jwt_verify(const char *token, size_t len, const jwt_key_t *key, const jwt_check_t *chk,
               char *role, size_t cap, int64_t *exp_s, char *reason, size_t rcap);

/* Base64 decoding of standard or URL-safe text, padding optional. Returns
 * the decoded length, or -1 for a character outside the alphabet or a
 * length that cannot be. out needs room for len * 3 / 4 + 3 bytes. */
ssize_t jwt_b64_decode(const char *in, size_t len, uint8_t *out);

#endif
