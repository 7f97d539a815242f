/*
 * services.c — starts the admin HTTP service when this build has one; until
 * admin-http/ exists the binary serves the binary protocol only and says so.
 */
#include "src/services.h"

#include <stdlib.h>

struct services {
    int unused;
};

int services_start(struct ev_loop *loop, const qconfig_t *conf, broker_t *broker, md_store_t *md,
                   services_t **out)
{
    (void)loop;
    (void)conf;
    (void)broker;
    (void)md;
    *out = NULL;
    return 0;
}

const char *services_web_url(const services_t *s)
{
    (void)s;
    return "(admin HTTP not built yet)";
}

void services_stop(services_t *s)
{
    (void)s;
}
