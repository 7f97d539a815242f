/*
 * services.c — the services main starts beside the broker: the admin HTTP
 * service (admin-http/: REST admin API, HTTP lookup, /metrics) on
 * bindAddress:webServicePort, on the broker's loop.
 *
 * The service is stopped before the broker shuts down (no new admin request
 * reaches a stopping broker); admin requests still waiting on the metadata
 * store then answer 503 and the service frees itself after the last one.
 */
#include "src/services.h"

#include <errno.h>
#include <stdlib.h>

#include "admin-http/admin_service.h"
#include "common/errors.h"
#include "common/log.h"

struct services {
    admin_service_t *admin;
};

static void services_bookie_stats(void *arg, bookie_stats_t *out)
{
    bookie_get_stats(arg, out);
}

int services_start(struct ev_loop *loop, const qconfig_t *conf, broker_t *broker, md_store_t *md,
                   bookie_t *bookie, services_t **out)
{
    *out = NULL;
    services_t *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    int rc = admin_service_start(loop, conf, broker, md, NULL, &s->admin);
    if (rc < 0) {
        log_error("services", "admin HTTP service: %s", q_strerror(rc));
        free(s);
        return rc;
    }
    if (bookie)
        admin_service_set_bookie_stats(s->admin, services_bookie_stats, bookie);
    *out = s;
    return 0;
}

const char *services_web_url(const services_t *s)
{
    return s && s->admin ? admin_service_url(s->admin) : "(admin HTTP not started)";
}

void services_stop(services_t *s)
{
    if (!s)
        return;
    admin_service_stop(s->admin);
    free(s);
}
