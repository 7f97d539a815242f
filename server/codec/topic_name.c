/*
 * topic_name.c — Pulsar topic name parsing (rules: topic_name.h).
 *
 * The parser splits on "://" and '/', validates each part, checks every
 * length, then builds the canonical names by copying: a long or hostile name
 * can only be refused, never overflow a buffer. It is called several times per
 * request, so it writes only the bytes of the names (the struct is 6 KiB; no
 * clearing, no formatting).
 */
#include "server/codec/topic_name.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"

static const char *const topic_domain_names[] = {"persistent", "non-persistent"};

bool topic_name_valid_entity(const char *name, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '=' || c == ':' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

static bool topic_valid_local(const char *s, size_t len)
{
    if (len == 0)
        return false;
    bool blank = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '/')
            return false;
        if (c != ' ')
            blank = false;
    }
    return !blank; /* Java refuses a blank local name */
}

/* Java's getPartitionIndex: the int after the last "-partition-", only if it
 * is written canonically; -1 otherwise. */
static int topic_partition_index(const char *local, size_t *base_len)
{
    const char *suffix = TOPIC_PARTITION_SUFFIX;
    size_t sl = strlen(suffix), len = strlen(local);
    const char *at = NULL;
    for (const char *p = strstr(local, suffix); p; p = strstr(p + 1, suffix))
        at = p;
    if (!at)
        return -1;
    const char *d = at + sl;
    size_t nd = len - (size_t)(d - local);
    if (nd == 0 || nd > 10 || (nd > 1 && d[0] == '0'))
        return -1;
    long long v = 0;
    for (size_t i = 0; i < nd; i++) {
        if (d[i] < '0' || d[i] > '9')
            return -1;
        v = v * 10 + (d[i] - '0');
    }
    if (v > INT_MAX)
        return -1;
    *base_len = (size_t)(at - local);
    return (int)v;
}

/* len is checked by the caller (<= TOPIC_NAME_MAX). */
static void topic_copy(char *dst, const char *src, size_t len)
{
    memcpy(dst, src, len);
    dst[len] = '\0';
}

int topic_name_parse(const char *s, topic_name_t *out)
{
    if (!s)
        return QE_INVALID;
    size_t slen = strnlen(s, TOPIC_NAME_MAX + 1);
    if (slen > TOPIC_NAME_MAX)
        return QE_TOO_LARGE;
    const char *rest = s;
    topic_domain_t domain = TOPIC_PERSISTENT;
    const char *sep = strstr(s, "://");
    const char *tenant = "public", *ns = "default", *local;
    size_t tl = 6, nl = 7, ll;
    if (sep) {
        size_t dl = (size_t)(sep - s);
        if (dl == 10 && memcmp(s, "persistent", 10) == 0)
            domain = TOPIC_PERSISTENT;
        else if (dl == 14 && memcmp(s, "non-persistent", 14) == 0)
            domain = TOPIC_NON_PERSISTENT;
        else
            return QE_INVALID;
        rest = sep + 3;
    }
    const char *s1 = strchr(rest, '/');
    const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
    if (s2 && strchr(s2 + 1, '/'))
        return QE_INVALID; /* four parts: legacy v1 name, unsupported */
    if (s1 && !s2)
        return QE_INVALID; /* "a/b": neither short nor full form */
    if (sep && !s1)
        return QE_INVALID; /* full form needs tenant/namespace/local */
    if (s1) {
        tenant = rest;
        tl = (size_t)(s1 - rest);
        ns = s1 + 1;
        nl = (size_t)(s2 - ns);
        local = s2 + 1;
    } else {
        local = rest;
    }
    ll = strlen(local);
    if (!topic_name_valid_entity(tenant, tl) || !topic_name_valid_entity(ns, nl) ||
        !topic_valid_local(local, ll))
        return QE_INVALID;

    /* Every length is checked before *out is written: a refused name leaves
     * it as it was. */
    const char *dname = topic_domain_names[domain];
    size_t dnl = strlen(dname);
    size_t nsn_len = tl + 1 + nl;                 /* "tenant/ns" */
    size_t full_len = dnl + 3 + nsn_len + 1 + ll; /* "domain://tenant/ns/local" */
    if (tl > TOPIC_NAME_MAX || nl > TOPIC_NAME_MAX || ll > TOPIC_NAME_MAX ||
        nsn_len > TOPIC_NAME_MAX || full_len > TOPIC_NAME_MAX)
        return QE_TOO_LARGE;
    out->domain = domain;
    topic_copy(out->tenant, tenant, tl);
    topic_copy(out->ns, ns, nl);
    topic_copy(out->local, local, ll);
    char *f = out->full; /* built by copies: no formatting on this hot path */
    memcpy(f, dname, dnl);
    memcpy(f + dnl, "://", 3);
    size_t nsn_at = dnl + 3;
    memcpy(f + nsn_at, tenant, tl);
    f[nsn_at + tl] = '/';
    memcpy(f + nsn_at + tl + 1, ns, nl);
    f[nsn_at + nsn_len] = '/';
    memcpy(f + nsn_at + nsn_len + 1, local, ll);
    f[full_len] = '\0';
    memcpy(out->namespace_name, f + nsn_at, nsn_len);
    out->namespace_name[nsn_len] = '\0';
    size_t base_len = ll;
    out->partition = topic_partition_index(out->local, &base_len);
    size_t prefix = full_len - ll;
    memcpy(out->base, f, prefix + base_len);
    out->base[prefix + base_len] = '\0';
    return 0;
}

int topic_name_partition(const topic_name_t *t, int index, char *buf, size_t cap)
{
    if (index < 0)
        return QE_INVALID;
    int n = snprintf(buf, cap, "%s%s%d", t->base, TOPIC_PARTITION_SUFFIX, index);
    if (n < 0 || (size_t)n >= cap)
        return QE_TOO_LARGE;
    return 0;
}
