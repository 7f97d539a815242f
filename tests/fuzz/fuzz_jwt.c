/*
 * fuzz_jwt.c — libFuzzer target for token verification (server/jwt.c): the
 * input is a token checked against an HMAC secret, an RSA and an EC public
 * key (generated at start-up), and also read as a key source. A valid
 * signature cannot be forged by the fuzzer, so this exercises splitting,
 * base64url, header parsing, algorithm selection and signature decoding
 * (the claims are reached through the HMAC seed corpus).
 */
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/jwt.h"

static jwt_key_t *keys[3];

static jwt_key_t *public_key(EVP_PKEY *pk)
{
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(pk, &der);
    jwt_key_t *k = NULL;
    char reason[128];
    if (n <= 0 || jwt_key_from_bytes(der, (size_t)n, false, "", &k, reason, sizeof reason) < 0)
        abort();
    OPENSSL_free(der);
    EVP_PKEY_free(pk);
    return k;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char reason[128];
    static const char secret[] = "fuzz-secret-key-0123456789abcdef";
    if (jwt_key_from_bytes((const uint8_t *)secret, strlen(secret), true, "", &keys[0], reason,
                           sizeof reason) < 0)
        abort();
    keys[1] = public_key(EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048));
    keys[2] = public_key(EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jwt_check_t chk = {"sub", size & 1 ? "aud" : NULL, "quire", 1700000000};
    char role[256], reason[256];
    int64_t exp;
    for (int i = 0; i < 3; i++)
        jwt_verify((const char *)data, size, keys[i], &chk, role, sizeof role, &exp, reason,
                   sizeof reason);
    if (size < 4096) {
        uint8_t *out = malloc(size * 3 / 4 + 3);
        jwt_b64_decode((const char *)data, size, out);
        jwt_key_t *k = NULL;
        if (jwt_key_from_bytes(data, size, false, "", &k, reason, sizeof reason) == 0)
            jwt_key_free(k);
        free(out);
    }
    return 0;
}
