/*
 * partitions.c — see partitions.h.
 *
 * Creation order: refuse if a non-partitioned topic of the name exists;
 * write the partitioned metadata (compare-and-set: fails if it exists); then
 * register each partition as a topic. A crash between the last two steps
 * leaves partitions unregistered; they are registered again on first use
 * (auto-creation of a partition of a known partitioned topic is allowed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <errno.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/broker_int.h"
#include "server/partitions.h"

static int partitions_path(const topic_name_t *tn, char *out, size_t len)
{
    int n = snprintf(out, len, "/admin/partitioned-topics/%s/%s/%s/%s", tn->tenant, tn->ns,
                     tn->domain == TOPIC_PERSISTENT ? "persistent" : "non-persistent", tn->local);
    return n < 0 || (size_t)n >= len ? QE_TOO_LARGE : 0;
}

static int partitions_parse(const void *value, size_t len)
{
    json_error_t err;
    json_t *root = json_loadb(value, len, 0, &err);
    json_t *p = root ? json_object_get(root, "partitions") : NULL;
    int n = json_is_integer(p) ? (int)json_integer_value(p) : QE_CORRUPT;
    json_decref(root);
    return n;
}

/* ----------------------------------------------------------------- create -- */

typedef struct create_ctx {
    broker_t *broker;
    topic_name_t tn;
    int partitions;
    int pending;
    int rc;
    broker_done_rc_cb cb;
    void *arg;
} create_ctx_t;

static void create_finish(create_ctx_t *ctx)
{
    ctx->cb(ctx->rc, ctx->arg);
    free(ctx);
}

static void partition_registered(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    create_ctx_t *ctx = arg;
    if (rc < 0 && rc != QE_EXISTS && ctx->rc == 0)
        ctx->rc = rc;
    if (--ctx->pending == 0)
        create_finish(ctx);
}

static void metadata_written(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    create_ctx_t *ctx = arg;
    if (rc < 0) {
        ctx->rc = rc;
        create_finish(ctx);
        return;
    }
    ctx->pending = 1; /* held until every put is queued */
    for (int i = 0; i < ctx->partitions; i++) {
        char name[TOPIC_NAME_MAX + 32], path[3 * TOPIC_NAME_MAX + 64];
        topic_name_t part;
        if (topic_name_partition(&ctx->tn, i, name, sizeof name) < 0 ||
            topic_name_parse(name, &part) < 0 ||
            topic_registry_path(&part, path, sizeof path) < 0) {
            ctx->rc = QE_INVALID;
            break;
        }
        ctx->pending++;
        if (md_put(ctx->broker->md, path, "{}", 2, MD_VERSION_NEW, NULL, partition_registered,
                   ctx) < 0) {
            ctx->pending--;
            ctx->rc = QE_BUSY;
            break;
        }
    }
    if (--ctx->pending == 0)
        create_finish(ctx);
}

static void base_checked(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    create_ctx_t *ctx = arg;
    if (rc == 0 || rc != QE_NOT_FOUND) {
        ctx->rc = rc == 0 ? QE_EXISTS : rc;
        create_finish(ctx);
        return;
    }
    char path[3 * TOPIC_NAME_MAX + 64], body[64];
    partitions_path(&ctx->tn, path, sizeof path);
    int n = snprintf(body, sizeof body, "{\"partitions\":%d}", ctx->partitions);
    /* Its partitions count against the namespace's topic quota (limits.c). */
    rc = broker_topic_quota_put(ctx->broker, &ctx->tn, ctx->partitions, path, body, (size_t)n,
                                metadata_written, ctx);
    if (rc < 0) {
        ctx->rc = rc;
        create_finish(ctx);
    }
}

int broker_partitions_create(broker_t *b, const topic_name_t *tn, int n, broker_done_rc_cb cb,
                             void *arg)
{
    if (n < 1 || n > BROKER_PARTITIONS_MAX || tn->partition >= 0)
        return QE_INVALID;
    char path[3 * TOPIC_NAME_MAX + 64];
    int rc = topic_registry_path(tn, path, sizeof path);
    if (rc < 0)
        return rc;
    create_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -ENOMEM;
    ctx->broker = b;
    ctx->tn = *tn;
    ctx->partitions = n;
    ctx->cb = cb;
    ctx->arg = arg;
    rc = md_get(b->md, path, base_checked, ctx);
    if (rc < 0)
        free(ctx);
    return rc;
}

/* ----------------------------------------------------------------- lookup -- */

/* Holds the canonical name, not a topic_name_t (6 KiB): one lookup runs per
 * new topic, and the name is parsed again only to create the partitions. */
typedef struct lookup_ctx {
    broker_t *broker;
    bool may_create;
    broker_partitions_cb cb;
    void *arg;
    char full[]; /* the topic's canonical name */
} lookup_ctx_t;

static void lookup_created(int rc, void *arg)
{
    lookup_ctx_t *ctx = arg;
    int n = ctx->broker->cfg.default_num_partitions;
    if (rc == QE_EXISTS) /* raced with another creation, or a plain topic */
        rc = 0, n = 0;
    ctx->cb(rc, rc < 0 ? 0 : n, ctx->arg);
    free(ctx);
}

static void lookup_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    lookup_ctx_t *ctx = arg;
    if (rc == 0) {
        int n = partitions_parse(value, len);
        ctx->cb(n < 0 ? n : 0, n < 0 ? 0 : n, ctx->arg);
        free(ctx);
        return;
    }
    broker_t *b = ctx->broker;
    if (rc == QE_NOT_FOUND && ctx->may_create && b->cfg.allow_auto_topic_creation &&
        b->cfg.auto_topic_creation_partitioned) {
        topic_name_t tn;
        rc = topic_name_parse(ctx->full, &tn);
        if (rc == 0)
            rc = broker_partitions_create(b, &tn, b->cfg.default_num_partitions, lookup_created,
                                          ctx);
        if (rc == 0)
            return;
    }
    /* Not partitioned (or unknown: the producer or consumer will find out). */
    ctx->cb(rc == QE_NOT_FOUND ? 0 : rc, 0, ctx->arg);
    free(ctx);
}

typedef struct defer_pm {
    broker_partitions_cb cb;
    void *arg;
} defer_pm_t;

static void defer_pm_run(void *p)
{
    defer_pm_t *d = p;
    d->cb(0, 0, d->arg);
    free(d);
}

int broker_partitions_lookup(broker_t *b, const topic_name_t *tn, bool may_create,
                             broker_partitions_cb cb, void *arg)
{
    if (tn->partition >= 0) {
        /* A partition is never itself partitioned. */
        defer_pm_t *d = malloc(sizeof *d);
        if (!d)
            return -ENOMEM;
        *d = (defer_pm_t){cb, arg};
        int rc = broker_defer(b, defer_pm_run, d);
        if (rc < 0)
            free(d);
        return rc;
    }
    char path[3 * TOPIC_NAME_MAX + 64];
    int rc = partitions_path(tn, path, sizeof path);
    if (rc < 0)
        return rc;
    size_t n = strlen(tn->full) + 1;
    lookup_ctx_t *ctx = malloc(sizeof *ctx + n);
    if (!ctx)
        return -ENOMEM;
    ctx->broker = b;
    memcpy(ctx->full, tn->full, n);
    ctx->may_create = may_create;
    ctx->cb = cb;
    ctx->arg = arg;
    rc = md_get(b->md, path, lookup_got, ctx);
    if (rc < 0)
        free(ctx);
    return rc;
}

/* ------------------------------------------------------ namespace topics -- */

/* The names of a listing in one allocation: the pointers, then their text.
 * At 100,000 topics a name each by asprintf, a qsort of them all and (in the
 * admin API) a jansson array held the loop ~55 ms per listing. */
typedef struct names {
    char **v;
    size_t n, cap;
    char *text, *end; /* where the next name goes; the end of the allocation */
} names_t;

static int names_init(names_t *nm, size_t cap, size_t bytes)
{
    nm->v = malloc(cap * sizeof *nm->v + bytes + 1);
    if (!nm->v)
        return -ENOMEM;
    nm->n = 0;
    nm->cap = cap;
    nm->text = (char *)(nm->v + cap);
    nm->end = nm->text + bytes + 1;
    return 0;
}

/* prefix + name, if there is room (the sizes were counted before). */
static void names_add(names_t *nm, const char *prefix, size_t plen, const char *name)
{
    size_t len = strlen(name);
    if (nm->n == nm->cap || (size_t)(nm->end - nm->text) < plen + len + 1)
        return;
    memcpy(nm->text, prefix, plen);
    memcpy(nm->text + plen, name, len + 1);
    nm->v[nm->n++] = nm->text;
    nm->text += plen + len + 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts v[0..n) unless it is in order already, as the embedded metadata
 * store lists children. */
static void names_sort(char **v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i - 1], v[i]) > 0) {
            qsort(v, n, sizeof *v, cmp_str);
            return;
        }
}

int broker_prefixed_names(const char *prefix, const char *const *children, size_t n, char ***out)
{
    size_t plen = strlen(prefix), bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += plen + strlen(children[i]) + 1;
    names_t nm;
    if (names_init(&nm, n + 1, bytes) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        names_add(&nm, prefix, plen, children[i]);
    names_sort(nm.v, nm.n);
    *out = nm.v;
    return (int)nm.n;
}

typedef struct list_ctx {
    broker_t *broker;
    char ns[2 * TOPIC_NAME_MAX + 2];
    int domains;
    broker_topics_cb cb;
    void *arg;
} list_ctx_t;

static void ns_children(int rc, const char *const *children, size_t n, void *arg)
{
    list_ctx_t *ctx = arg;
    broker_t *b = ctx->broker;
    char pprefix[2 * TOPIC_NAME_MAX + 32], nprefix[2 * TOPIC_NAME_MAX + 32];
    size_t pplen = (size_t)snprintf(pprefix, sizeof pprefix, "persistent://%s/", ctx->ns);
    size_t nplen = (size_t)snprintf(nprefix, sizeof nprefix, "non-persistent://%s/", ctx->ns);
    bool np = rc == 0 && (ctx->domains & BROKER_DOMAIN_NON_PERSISTENT);
    /* Count first: the loaded non-persistent topics of the namespace, then
     * the persistent ones listed. */
    size_t cap = 1, bytes = 0;
    qmap_iter_t it = {0};
    const char *key;
    while (np && qmap_next(b->topics, &it, &key, NULL))
        if (strncmp(key, nprefix, nplen) == 0) {
            cap++;
            bytes += strlen(key) + 1;
        }
    for (size_t i = 0; rc == 0 && i < n; i++)
        bytes += pplen + strlen(children[i]) + 1;
    names_t nm = {0};
    if (rc == 0 && names_init(&nm, cap + n, bytes) < 0)
        rc = -ENOMEM;
    /* Every "non-persistent://" name sorts before every "persistent://" one:
     * each part is sorted on its own. */
    it = (qmap_iter_t){0};
    while (rc == 0 && np && qmap_next(b->topics, &it, &key, NULL))
        if (strncmp(key, nprefix, nplen) == 0)
            names_add(&nm, "", 0, key);
    size_t nonp = nm.n;
    for (size_t i = 0; rc == 0 && i < n; i++)
        names_add(&nm, pprefix, pplen, children[i]);
    if (rc == 0) {
        names_sort(nm.v, nonp);
        names_sort(nm.v + nonp, nm.n - nonp);
    }
    ctx->cb(rc == QE_NOT_FOUND ? 0 : rc, (const char *const *)nm.v, rc < 0 ? 0 : nm.n, ctx->arg);
    free(nm.v);
    free(ctx);
}

int broker_namespace_topics(broker_t *b, const char *ns, int domains, broker_topics_cb cb,
                            void *arg)
{
    list_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -ENOMEM;
    ctx->broker = b;
    snprintf(ctx->ns, sizeof ctx->ns, "%s", ns);
    ctx->domains = domains;
    ctx->cb = cb;
    ctx->arg = arg;
    char path[2 * TOPIC_NAME_MAX + 64];
    if (domains & BROKER_DOMAIN_PERSISTENT)
        snprintf(path, sizeof path, "/topics/%s/persistent", ns);
    else
        snprintf(path, sizeof path, "/topics/%s/none", ns); /* lists nothing */
    int rc = md_list(b->md, path, ns_children, ctx);
    if (rc < 0)
        free(ctx);
    return rc;
}
