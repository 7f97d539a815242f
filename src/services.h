/*
 * services.h — the services main starts beside the broker: the admin HTTP
 * server (REST admin API, HTTP lookup, /metrics) when it is built.
 */
#ifndef QUIRE_SRC_SERVICES_H
#define QUIRE_SRC_SERVICES_H

#include <ev.h>

#include "common/config.h"
#include "server/broker.h"
#include "storage/bookie/bookie.h"
#include "storage/metadata/metadata.h"

typedef struct services services_t;

/* bookie: the process's own bookie (standalone) for /metrics, or NULL. */
int services_start(struct ev_loop *loop, const qconfig_t *conf, broker_t *broker, md_store_t *md,
                   bookie_t *bookie, services_t **out);
/* "http://host:port", or "(not built)". */
const char *services_web_url(const services_t *s);
/* Stops listening and closes connections; NULL is ignored. */
void services_stop(services_t *s);

#endif
