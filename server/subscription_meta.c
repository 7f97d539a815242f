/*
 * subscription_meta.c — see subscription_meta.h.
 */
#include "server/subscription_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/log.h"

#define SUB_META_PERSIST_MAX 1024 /* a managed-ledger property's value bound */

char *subscription_meta_from_subscribe(const Pulsar__Proto__CommandSubscribe *cmd)
{
    bool replicated = cmd->has_replicate_subscription_state && cmd->replicate_subscription_state;
    if (cmd->n_subscription_properties == 0 && !replicated)
        return NULL;
    json_t *props = json_object();
    for (size_t i = 0; props && i < cmd->n_subscription_properties; i++) {
        const Pulsar__Proto__KeyValue *kv = cmd->subscription_properties[i];
        if (kv && kv->key && kv->value)
            json_object_set_new(props, kv->key, json_string(kv->value));
    }
    json_t *doc = json_pack("{sosb}", "properties", props, "replicated", replicated);
    char *s = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    return s;
}

static char *prop_key(const char *name)
{
    char *key = NULL;
    if (asprintf(&key, SUB_META_PROP_PREFIX "%s", name) < 0)
        return NULL;
    return key;
}

void subscription_meta_attach(subscription_t *s, char *meta)
{
    free(s->meta_json);
    s->meta_json = meta;
    topic_t *t = s->topic;
    if (!meta || !s->durable || !t->ml)
        return;
    char *key = prop_key(s->name);
    if (!key)
        return;
    if (ml_get_property(t->ml, key)) {
        /* created before (e.g. by an earlier run): the stored one stands */
        free(s->meta_json);
        s->meta_json = NULL;
    } else if (strlen(meta) > SUB_META_PERSIST_MAX) {
        log_warn("consumer", "%s / %s: subscription properties over %d bytes are not persisted",
                 t->name, s->name, SUB_META_PERSIST_MAX);
    } else if (ml_set_property(t->ml, key, meta, broker_ignore_done, NULL) < 0) {
        log_warn("consumer", "%s / %s: cannot persist the subscription properties", t->name,
                 s->name);
    }
    free(key);
}

const char *subscription_meta_json(const subscription_t *s)
{
    if (s->meta_json || !s->durable || !s->topic->ml)
        return s->meta_json;
    char *key = prop_key(s->name);
    const char *v = key ? ml_get_property(s->topic->ml, key) : NULL;
    free(key);
    return v;
}

void subscription_meta_forget(topic_t *t, const char *name)
{
    if (!t->ml)
        return;
    char *key = prop_key(name);
    if (key && ml_get_property(t->ml, key))
        ml_set_property(t->ml, key, NULL, broker_ignore_done, NULL);
    free(key);
}
