/*
 * admin_service.h — the admin HTTP service: Pulsar's REST admin API
 * (/admin/v2/...), the HTTP lookup (/lookup/v2/...) and /metrics, served on
 * webServicePort beside the broker, on the broker's loop.
 *
 * Resources live in the metadata store (layout in docs/admin-api.md):
 *   /admin/clusters/<cluster>            ClusterData JSON
 *   /admin/policies/<tenant>             TenantInfo JSON
 *   /admin/policies/<tenant>/<ns>        Policies JSON (Pulsar's field names)
 *   /admin/partitioned-topics/...        owned by server/partitions.h
 *   /topics/...                          the broker's topic registry
 * Topic state is read through server/broker_admin.h only.
 */
#ifndef QUIRE_ADMIN_SERVICE_H
#define QUIRE_ADMIN_SERVICE_H

#include <ev.h>

#include "admin-http/http_server.h"
#include "common/config.h"
#include "server/broker.h"
#include "storage/bookie/bookie.h"
#include "storage/metadata/metadata.h"

typedef struct admin_service admin_service_t;

/* Listens on bindAddress:webServicePort (from conf, via the broker's config;
 * port 0 picks one), creates the default cluster/tenant/namespace when
 * missing, starts the metrics sampler. conf, broker and md are borrowed and
 * must outlive the service. http_cfg NULL: defaults, with the config keys
 * httpMaxRequestSize and httpRequestTimeoutSeconds if set. */
int admin_service_start(struct ev_loop *loop, const qconfig_t *conf, broker_t *broker,
                        md_store_t *md, const http_server_config_t *http_cfg,
                        admin_service_t **out);
/* The bookie figures /metrics exposes (bookie_journal_*, bookkeeper_server_*):
 * standalone runs a bookie in the process and hands its stats over here. */
typedef void (*admin_bookie_stats_fn)(void *arg, bookie_stats_t *out);
void admin_service_set_bookie_stats(admin_service_t *a, admin_bookie_stats_fn fn, void *arg);
/* How long a /metrics scrape's snapshot of the topics takes per loop
 * iteration, about (200 us; tests: 0 = one topic a step). */
void admin_service_set_metrics_step_us(admin_service_t *a, uint32_t us);
/* "http://advertisedAddress:port". */
const char *admin_service_url(const admin_service_t *a);
int admin_service_port(const admin_service_t *a);
/* Stops listening and closes connections; frees once requests in flight have
 * answered. NULL is ignored. */
void admin_service_stop(admin_service_t *a);

#endif
