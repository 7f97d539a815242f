/*
 * limits.c — multi-tenant rate limits and quotas (limits.h, limits_int.h).
 *
 * What is enforced, and where (docs/broker.md, "Rate limits and quotas"):
 *
 *   publish rate      per topic (publishMaxMessageRate policy, else
 *                     maxPublishRatePerTopicIn{Messages,Bytes}): a token bucket
 *                     charged by every accepted SEND. When it is empty the
 *                     broker stops reading every connection that carries a
 *                     producer of the topic (back-pressure: nothing is dropped
 *                     or refused) and a timer resumes them when the bucket
 *                     holds a token again.
 *   dispatch rate     per topic (topicDispatchRate) and per subscription
 *                     (subscriptionDispatchRate), messages and bytes per
 *                     ratePeriodInSecond: a read asks no more entries/bytes
 *                     than both buckets hold; an empty bucket arms the
 *                     subscription's timer, which dispatches it again.
 *                     relativeToPublishRate: the rate is the configured one
 *                     plus the topic's publish rate of the last second.
 *   max producers     per topic: PRODUCER refused with ProducerBusy.
 *   max consumers     per topic and per subscription: ConsumerBusy.
 *   max unacked       per consumer and per subscription, Shared and Key_Shared
 *                     only (as Pulsar): a consumer (subscription) that holds
 *                     the limit is blocked — nothing more is dispatched to it —
 *                     until acknowledgements bring it down to half the limit.
 *   max topics        per namespace: creating one more (auto-creation or REST)
 *                     fails with QE_TOO_LARGE (NotAllowedError / 412).
 *
 * State machine of a topic's publish throttle:
 *   OPEN --bucket empty after a SEND--> THROTTLED (conns paused, timer armed)
 *   THROTTLED --timer, bucket positive (or the limit removed)--> OPEN (resumed)
 * Invariants: tl->paused holds each connection at most once, with one
 * reference and one count in conn->publish_throttles; the timer is armed iff
 * tl->paused_count > 0.
 */
#include "server/limits_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/ns_policies.h"
#include "server/rate_limit.h"

#define TIMER_MIN_S 0.001
#define RATE_WINDOW_US 1000000

/* Limits of a topic after resolving the namespace policies against the broker
 * defaults; 0 (or less) means none. */
typedef struct limits_values {
    int64_t publish_msgs, publish_bytes;
    ns_rate_t topic_dispatch, sub_dispatch;
    int64_t max_producers, max_consumers, max_consumers_per_sub;
    int64_t max_unacked_per_consumer, max_unacked_per_sub;
} limits_values_t;

struct topic_limits {
    topic_t *topic;
    limits_values_t v;
    rate_limiter_t publish;
    rate_limiter_t dispatch;
    ev_timer timer; /* resumes paused connections */
    conn_t **paused;
    size_t paused_count, paused_cap;
    /* the publish rate of the last whole window (relativeToPublishRate) */
    int64_t window_start_us, window_msgs, window_bytes;
    int64_t rate_in_msgs, rate_in_bytes; /* per second */
    uint64_t throttle_events;
};

struct sub_limits {
    subscription_t *sub;
    rate_limiter_t dispatch;
    ev_timer timer; /* dispatches again when tokens refill */
    bool blocked_on_unacked;
};

/* --------------------------------------------------------------- config -- */

int broker_limits_config_load(const qconfig_t *q, broker_limits_config_t *out, char *err,
                              size_t err_len)
{
    static const struct {
        const char *key;
        int64_t def, max;
        size_t off;
    } keys[] = {
#define K(name, def, max, field) {name, def, max, offsetof(broker_limits_config_t, field)}
        K("maxPublishRatePerTopicInMessages", 0, INT32_MAX, publish_rate_msgs),
        K("maxPublishRatePerTopicInBytes", 0, INT64_MAX, publish_rate_bytes),
        K("dispatchThrottlingRatePerTopicInMsg", 0, INT32_MAX, dispatch_rate_topic_msgs),
        K("dispatchThrottlingRatePerTopicInByte", 0, INT64_MAX, dispatch_rate_topic_bytes),
        K("dispatchThrottlingRatePerSubscriptionInMsg", 0, INT32_MAX, dispatch_rate_sub_msgs),
        K("dispatchThrottlingRatePerSubscriptionInByte", 0, INT64_MAX, dispatch_rate_sub_bytes),
        K("maxProducersPerTopic", 0, INT32_MAX, max_producers_per_topic),
        K("maxConsumersPerTopic", 0, INT32_MAX, max_consumers_per_topic),
        K("maxConsumersPerSubscription", 0, INT32_MAX, max_consumers_per_sub),
        K("maxUnackedMessagesPerConsumer", 50000, INT32_MAX, max_unacked_per_consumer),
        K("maxUnackedMessagesPerSubscription", 4 * 50000, INT32_MAX, max_unacked_per_sub),
        K("maxTopicsPerNamespace", 0, INT32_MAX, max_topics_per_namespace),
#undef K
    };
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t *field = (int64_t *)((char *)out + keys[i].off);
        if (qconfig_get_int(q, keys[i].key, keys[i].def, 0, keys[i].max, field) < 0) {
            snprintf(err, err_len, "%s: expected a whole number in [0, %lld], got '%s'",
                     keys[i].key, (long long)keys[i].max, qconfig_get(q, keys[i].key, ""));
            return QE_INVALID;
        }
    }
    const char *rel = "dispatchThrottlingRateRelativeToPublishRate";
    if (qconfig_get_bool(q, rel, false, &out->dispatch_relative_to_publish) < 0) {
        snprintf(err, err_len, "%s: expected true or false, got '%s'", rel,
                 qconfig_get(q, rel, ""));
        return QE_INVALID;
    }
    return 0;
}

/* ------------------------------------------------------------ resolving -- */

static ns_rate_t broker_rate(int64_t msgs, int64_t bytes, bool relative)
{
    return (ns_rate_t){.set = true,
                       .msgs_per_period = msgs,
                       .bytes_per_period = bytes,
                       .period_s = 1,
                       .relative_to_publish_rate = relative};
}

static int64_t pick(int64_t ns_value, int64_t broker_value)
{
    return ns_value >= 0 ? ns_value : broker_value;
}

static void limits_resolve(const broker_limits_config_t *d, const ns_policies_t *p,
                           limits_values_t *v)
{
    v->publish_msgs = p->publish_rate.set ? p->publish_rate.msgs_per_period : d->publish_rate_msgs;
    v->publish_bytes =
        p->publish_rate.set ? p->publish_rate.bytes_per_period : d->publish_rate_bytes;
    v->topic_dispatch = p->dispatch_rate.set
                            ? p->dispatch_rate
                            : broker_rate(d->dispatch_rate_topic_msgs, d->dispatch_rate_topic_bytes,
                                          d->dispatch_relative_to_publish);
    v->sub_dispatch = p->subscription_dispatch_rate.set
                          ? p->subscription_dispatch_rate
                          : broker_rate(d->dispatch_rate_sub_msgs, d->dispatch_rate_sub_bytes,
                                        d->dispatch_relative_to_publish);
    v->max_producers = pick(p->max_producers_per_topic, d->max_producers_per_topic);
    v->max_consumers = pick(p->max_consumers_per_topic, d->max_consumers_per_topic);
    v->max_consumers_per_sub = pick(p->max_consumers_per_subscription, d->max_consumers_per_sub);
    v->max_unacked_per_consumer =
        pick(p->max_unacked_messages_per_consumer, d->max_unacked_per_consumer);
    v->max_unacked_per_sub = pick(p->max_unacked_messages_per_subscription, d->max_unacked_per_sub);
}

static bool rate_same(const ns_rate_t *a, const ns_rate_t *b)
{
    return a->set == b->set && a->msgs_per_period == b->msgs_per_period &&
           a->bytes_per_period == b->bytes_per_period && a->period_s == b->period_s &&
           a->relative_to_publish_rate == b->relative_to_publish_rate;
}

static bool limits_same(const limits_values_t *a, const limits_values_t *b)
{
    return a->publish_msgs == b->publish_msgs && a->publish_bytes == b->publish_bytes &&
           rate_same(&a->topic_dispatch, &b->topic_dispatch) &&
           rate_same(&a->sub_dispatch, &b->sub_dispatch) && a->max_producers == b->max_producers &&
           a->max_consumers == b->max_consumers &&
           a->max_consumers_per_sub == b->max_consumers_per_sub &&
           a->max_unacked_per_consumer == b->max_unacked_per_consumer &&
           a->max_unacked_per_sub == b->max_unacked_per_sub;
}

/* A dispatch rate's effective messages and bytes per period. */
static void dispatch_rate_now(const struct topic_limits *tl, const ns_rate_t *r, int64_t *msgs,
                              int64_t *bytes)
{
    *msgs = r->msgs_per_period;
    *bytes = r->bytes_per_period;
    if (!r->relative_to_publish_rate)
        return;
    if (*msgs > 0)
        *msgs += tl->rate_in_msgs * r->period_s;
    if (*bytes > 0)
        *bytes += tl->rate_in_bytes * r->period_s;
}

static void sub_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void publish_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

static struct topic_limits *topic_limits_get(topic_t *t)
{
    if (t->limits)
        return t->limits;
    topic_name_t tn;
    if (topic_name_parse(t->name, &tn) < 0)
        return NULL;
    struct topic_limits *tl = calloc(1, sizeof *tl);
    if (!tl) {
        log_warn("limits", "%s: out of memory: limits not applied", t->name);
        return NULL;
    }
    broker_t *b = t->broker;
    const ns_policies_t *p = broker_ns_policies(b, tn.namespace_name);
    int64_t now = (int64_t)clock_mono_us();
    tl->topic = t;
    limits_resolve(&b->cfg.limits, p, &tl->v);
    rate_limiter_init(&tl->publish, tl->v.publish_msgs, tl->v.publish_bytes, 1, now);
    int64_t m, by;
    dispatch_rate_now(tl, &tl->v.topic_dispatch, &m, &by);
    rate_limiter_init(&tl->dispatch, m, by, tl->v.topic_dispatch.period_s, now);
    tl->window_start_us = now;
    ev_timer_init(&tl->timer, publish_timer_cb, 1.0, 0.0);
    tl->timer.data = tl;
    t->limits = tl;
    return tl;
}

static struct sub_limits *sub_limits_get(subscription_t *s, struct topic_limits *tl)
{
    if (s->limits)
        return s->limits;
    struct sub_limits *sl = calloc(1, sizeof *sl);
    if (!sl)
        return NULL;
    sl->sub = s;
    int64_t m, by;
    dispatch_rate_now(tl, &tl->v.sub_dispatch, &m, &by);
    rate_limiter_init(&sl->dispatch, m, by, tl->v.sub_dispatch.period_s, (int64_t)clock_mono_us());
    ev_timer_init(&sl->timer, sub_timer_cb, 1.0, 0.0);
    sl->timer.data = sl;
    s->limits = sl;
    return sl;
}

static void arm_timer(struct ev_loop *loop, ev_timer *w, int64_t wait_us)
{
    if (ev_is_active(w))
        return;
    double s = (double)wait_us / 1e6;
    ev_timer_set(w, s < TIMER_MIN_S ? TIMER_MIN_S : s, 0.0);
    ev_timer_start(loop, w);
}

/* ------------------------------------------------------------ publishing -- */

static void publish_release_all(struct topic_limits *tl)
{
    broker_t *b = tl->topic->broker;
    ev_timer_stop(b->loop, &tl->timer);
    size_t n = tl->paused_count;
    tl->paused_count = 0;
    for (size_t i = 0; i < n; i++) {
        conn_t *c = tl->paused[i];
        assert(c->publish_throttles > 0);
        c->publish_throttles--;
        /* Paused for pending bytes too: send_release resumes it below half. */
        if (c->publish_throttles == 0 &&
            c->pending_publish_bytes <= b->cfg.max_pending_publish_bytes)
            conn_resume_reads(c);
        conn_unref(c);
    }
}

static void publish_try_release(struct topic_limits *tl)
{
    if (tl->paused_count == 0)
        return;
    int64_t now = (int64_t)clock_mono_us();
    if (rate_limiter_enabled(&tl->publish) && !rate_limiter_allows(&tl->publish, now)) {
        arm_timer(tl->topic->broker->loop, &tl->timer, rate_limiter_wait_us(&tl->publish, now));
        return;
    }
    publish_release_all(tl);
}

static void publish_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    publish_try_release(w->data);
}

static void publish_pause(struct topic_limits *tl, conn_t *c)
{
    if (c->state == CONN_CLOSED)
        return;
    for (size_t i = 0; i < tl->paused_count; i++)
        if (tl->paused[i] == c)
            return;
    if (tl->paused_count == tl->paused_cap) {
        size_t ncap = tl->paused_cap ? tl->paused_cap * 2 : 4;
        conn_t **n = realloc(tl->paused, ncap * sizeof *n);
        if (!n)
            return; /* not throttled rather than never resumed */
        tl->paused = n;
        tl->paused_cap = ncap;
    }
    tl->paused[tl->paused_count++] = c;
    conn_ref(c);
    c->publish_throttles++;
    conn_pause_reads(c);
}

static void measure_publish(struct topic_limits *tl, int64_t msgs, int64_t bytes, int64_t now)
{
    tl->window_msgs += msgs;
    tl->window_bytes += bytes;
    int64_t elapsed = now - tl->window_start_us;
    if (elapsed < RATE_WINDOW_US)
        return;
    tl->rate_in_msgs = tl->window_msgs * 1000000 / elapsed;
    tl->rate_in_bytes = tl->window_bytes * 1000000 / elapsed;
    tl->window_msgs = tl->window_bytes = 0;
    tl->window_start_us = now;
}

void limits_on_publish(topic_t *t, conn_t *c, int64_t msgs, int64_t bytes, uint64_t now_us)
{
    struct topic_limits *tl = topic_limits_get(t);
    if (!tl)
        return;
    int64_t now = (int64_t)now_us;
    measure_publish(tl, msgs, bytes, now);
    if (!rate_limiter_enabled(&tl->publish))
        return;
    rate_limiter_consume(&tl->publish, msgs, bytes, now);
    if (rate_limiter_allows(&tl->publish, now))
        return;
    /* Exhausted: every connection producing to t waits for the refill. */
    if (tl->paused_count == 0)
        tl->throttle_events++;
    publish_pause(tl, c);
    for (producer_t *p = t->producers; p; p = p->topic_next)
        publish_pause(tl, p->conn);
    if (tl->paused_count > 0)
        arm_timer(t->broker->loop, &tl->timer, rate_limiter_wait_us(&tl->publish, now));
}

/* ------------------------------------------------------------- admission -- */

int limits_admit_producer(topic_t *t, pb_error_t *err, const char **why)
{
    struct topic_limits *tl = topic_limits_get(t);
    if (tl && tl->v.max_producers > 0 && (int64_t)t->producers_count >= tl->v.max_producers) {
        *err = PULSAR__PROTO__SERVER_ERROR__ProducerBusy;
        *why = "Topic reached max producers limit";
        log_warn("limits", "%s: producer refused: max producers %lld reached", t->name,
                 (long long)tl->v.max_producers);
        return -1;
    }
    return 0;
}

static size_t topic_consumers(topic_t *t)
{
    size_t n = 0;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v))
        n += ((subscription_t *)v)->consumers_count;
    return n;
}

int limits_admit_consumer(subscription_t *s, pb_error_t *err, const char **why)
{
    struct topic_limits *tl = topic_limits_get(s->topic);
    if (!tl)
        return 0;
    if (tl->v.max_consumers > 0 && (int64_t)topic_consumers(s->topic) >= tl->v.max_consumers) {
        *err = PULSAR__PROTO__SERVER_ERROR__ConsumerBusy;
        *why = "Topic reached max consumers limit";
        return -1;
    }
    if (tl->v.max_consumers_per_sub > 0 &&
        (int64_t)s->consumers_count >= tl->v.max_consumers_per_sub) {
        *err = PULSAR__PROTO__SERVER_ERROR__ConsumerBusy;
        *why = "Subscription reached max consumers limit";
        return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- dispatch -- */

static bool individual_ack_mode(const subscription_t *s)
{
    return s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared ||
           s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
}

/* Blocked at max, unblocked at max / 2 or below. */
static bool unacked_blocked(bool *blocked, uint64_t unacked, int64_t max)
{
    if (max <= 0)
        *blocked = false;
    else if (*blocked && unacked <= (uint64_t)max / 2)
        *blocked = false;
    else if (!*blocked && unacked >= (uint64_t)max)
        *blocked = true;
    return *blocked;
}

bool limits_consumer_blocked(consumer_t *cons)
{
    subscription_t *s = cons->sub;
    if (!s || !s->cursor || !individual_ack_mode(s)) {
        cons->blocked_on_unacked = false;
        return false;
    }
    struct topic_limits *tl = topic_limits_get(s->topic);
    int64_t max = tl ? tl->v.max_unacked_per_consumer : 0;
    bool was = cons->blocked_on_unacked;
    bool now = unacked_blocked(&cons->blocked_on_unacked, cons->unacked_messages, max);
    if (now != was)
        log_debug("limits", "%s / %s: consumer %s %s at %llu unacked messages", s->topic->name,
                  s->name, cons->name, now ? "blocked" : "unblocked",
                  (unsigned long long)cons->unacked_messages);
    return now;
}

static void sub_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct sub_limits *sl = w->data;
    subscription_dispatch(sl->sub);
}

bool limits_subscription_blocked(const subscription_t *s)
{
    return s->limits && s->limits->blocked_on_unacked;
}

static bool sub_unacked_blocked(subscription_t *s, struct topic_limits *tl)
{
    if (!s->cursor || !individual_ack_mode(s) || tl->v.max_unacked_per_sub <= 0) {
        if (s->limits)
            s->limits->blocked_on_unacked = false;
        return false;
    }
    struct sub_limits *sl = sub_limits_get(s, tl);
    if (!sl)
        return false;
    uint64_t total = 0;
    for (size_t i = 0; i < s->consumers_count; i++)
        total += s->consumers[i]->unacked_messages;
    return unacked_blocked(&sl->blocked_on_unacked, total, tl->v.max_unacked_per_sub);
}

/* Narrows the read to what rl holds; returns the wait (us) if it is empty. */
static int64_t narrow(rate_limiter_t *rl, int64_t now, size_t *max_entries, size_t *max_bytes)
{
    if (!rate_limiter_enabled(rl))
        return 0;
    if (!rate_limiter_allows(rl, now))
        return rate_limiter_wait_us(rl, now);
    int64_t m = rate_limiter_msgs_left(rl, now), by = rate_limiter_bytes_left(rl, now);
    if ((uint64_t)m < *max_entries)
        *max_entries = (size_t)m;
    if ((uint64_t)by < *max_bytes)
        *max_bytes = (size_t)by;
    return 0;
}

bool limits_dispatch_allowance(subscription_t *s, size_t *max_entries, size_t *max_bytes)
{
    struct topic_limits *tl = topic_limits_get(s->topic);
    if (!tl)
        return true;
    if (sub_unacked_blocked(s, tl))
        return false;
    bool topic_rate =
        tl->v.topic_dispatch.msgs_per_period > 0 || tl->v.topic_dispatch.bytes_per_period > 0;
    bool sub_rate =
        tl->v.sub_dispatch.msgs_per_period > 0 || tl->v.sub_dispatch.bytes_per_period > 0;
    if (!topic_rate && !sub_rate)
        return true;
    struct sub_limits *sl = sub_limits_get(s, tl);
    if (!sl)
        return true;
    int64_t now = (int64_t)clock_mono_us(), m, by;
    if (tl->v.topic_dispatch.relative_to_publish_rate) {
        dispatch_rate_now(tl, &tl->v.topic_dispatch, &m, &by);
        rate_limiter_set(&tl->dispatch, m, by, tl->v.topic_dispatch.period_s, now);
    }
    if (tl->v.sub_dispatch.relative_to_publish_rate) {
        dispatch_rate_now(tl, &tl->v.sub_dispatch, &m, &by);
        rate_limiter_set(&sl->dispatch, m, by, tl->v.sub_dispatch.period_s, now);
    }
    int64_t wait_topic = narrow(&tl->dispatch, now, max_entries, max_bytes);
    int64_t wait_sub = narrow(&sl->dispatch, now, max_entries, max_bytes);
    int64_t wait = wait_topic > wait_sub ? wait_topic : wait_sub;
    if (wait > 0) {
        arm_timer(s->topic->broker->loop, &sl->timer, wait);
        return false;
    }
    if (*max_entries == 0)
        *max_entries = 1;
    if (*max_bytes == 0)
        *max_bytes = 1;
    return true;
}

void limits_on_dispatch(subscription_t *s, int64_t msgs, int64_t bytes)
{
    struct topic_limits *tl = s->topic->limits;
    if (!tl)
        return;
    bool topic_on = rate_limiter_enabled(&tl->dispatch);
    bool sub_on = s->limits && rate_limiter_enabled(&s->limits->dispatch);
    if (!topic_on && !sub_on)
        return; /* no clock read per entry without a dispatch rate */
    int64_t now = (int64_t)clock_mono_us();
    if (topic_on)
        rate_limiter_consume(&tl->dispatch, msgs, bytes, now);
    if (sub_on)
        rate_limiter_consume(&s->limits->dispatch, msgs, bytes, now);
}

/* ------------------------------------------------------------- lifecycle -- */

void limits_topic_policies_changed(topic_t *t, const ns_policies_t *p)
{
    struct topic_limits *tl = t->limits;
    if (!tl)
        return; /* resolved from the cache on first use */
    limits_values_t nv;
    limits_resolve(&t->broker->cfg.limits, p, &nv);
    /* Another policy changed (a TTL, a retention): nothing to do here, nor to
     * log for each of the namespace's topics (100,000 lines a change). */
    if (limits_same(&nv, &tl->v))
        return;
    tl->v = nv;
    int64_t now = (int64_t)clock_mono_us(), m, by;
    rate_limiter_set(&tl->publish, tl->v.publish_msgs, tl->v.publish_bytes, 1, now);
    dispatch_rate_now(tl, &tl->v.topic_dispatch, &m, &by);
    rate_limiter_set(&tl->dispatch, m, by, tl->v.topic_dispatch.period_s, now);
    log_info("limits",
             "%s: publish %lld msg/s %lld B/s; dispatch %lld msg %lld B per %llds; "
             "max producers %lld consumers %lld/sub %lld unacked %lld/sub %lld",
             t->name, (long long)tl->v.publish_msgs, (long long)tl->v.publish_bytes,
             (long long)tl->v.topic_dispatch.msgs_per_period,
             (long long)tl->v.topic_dispatch.bytes_per_period,
             (long long)tl->v.topic_dispatch.period_s, (long long)tl->v.max_producers,
             (long long)tl->v.max_consumers, (long long)tl->v.max_consumers_per_sub,
             (long long)tl->v.max_unacked_per_consumer, (long long)tl->v.max_unacked_per_sub);
    /* A raised or removed publish limit frees paused producers now. */
    ev_timer_stop(t->broker->loop, &tl->timer);
    publish_try_release(tl);
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        struct sub_limits *sl = s->limits;
        if (sl) {
            dispatch_rate_now(tl, &tl->v.sub_dispatch, &m, &by);
            rate_limiter_set(&sl->dispatch, m, by, tl->v.sub_dispatch.period_s, now);
            ev_timer_stop(t->broker->loop, &sl->timer);
        }
        subscription_dispatch(s);
    }
}

void limits_topic_free(topic_t *t)
{
    struct topic_limits *tl = t->limits;
    if (!tl)
        return;
    publish_release_all(tl);
    free(tl->paused);
    free(tl);
    t->limits = NULL;
}

void limits_subscription_free(subscription_t *s)
{
    struct sub_limits *sl = s->limits;
    if (!sl)
        return;
    ev_timer_stop(s->topic->broker->loop, &sl->timer);
    free(sl);
    s->limits = NULL;
}

/* ---------------------------------------------------------- topic quota -- */

/* One per topic registered: sized to its namespace's name (a fixed buffer made
 * it a 1 KiB allocation, glibc's slow path). */
typedef struct quota_ctx {
    broker_t *broker;
    int new_topics;
    bool may_exist; /* broker_topic_register: QE_EXISTS before the quota check */
    int64_t max;
    char *path;
    void *value;
    size_t len;
    md_put_cb cb;
    void *arg;
    char ns[]; /* "tenant/namespace" */
} quota_ctx_t;

static void quota_ctx_free(quota_ctx_t *q)
{
    free(q->path);
    free(q->value);
    free(q);
}

static void quota_put_done(int rc, const md_stat_t *st, void *arg)
{
    quota_ctx_t *q = arg;
    q->cb(rc, st, q->arg);
    quota_ctx_free(q);
}

static void quota_put(quota_ctx_t *q)
{
    int rc =
        md_put(q->broker->md, q->path, q->value, q->len, MD_VERSION_NEW, NULL, quota_put_done, q);
    if (rc < 0)
        quota_put_done(rc, NULL, q);
}

static void quota_listed(int rc, const char *const *children, size_t n, void *arg)
{
    (void)children;
    quota_ctx_t *q = arg;
    if (rc == QE_NOT_FOUND)
        n = 0;
    else if (rc < 0) {
        quota_put_done(rc, NULL, q);
        return;
    }
    if ((int64_t)n + q->new_topics > q->max) {
        log_warn("limits", "%s: %zu topics + %d new exceed max topics per namespace %lld", q->ns, n,
                 q->new_topics, (long long)q->max);
        quota_put_done(QE_TOO_LARGE, NULL, q);
        return;
    }
    quota_put(q);
}

static void quota_count(quota_ctx_t *q)
{
    char path[TOPIC_NAME_MAX + 64];
    snprintf(path, sizeof path, "/topics/%s/persistent", q->ns);
    int rc = md_list(q->broker->md, path, quota_listed, q);
    if (rc < 0)
        quota_put_done(rc, NULL, q);
}

static void quota_exists_checked(int rc, const void *value, size_t len, const md_stat_t *st,
                                 void *arg)
{
    (void)value;
    (void)len;
    (void)st;
    quota_ctx_t *q = arg;
    if (rc == 0)
        quota_put_done(QE_EXISTS, NULL, q);
    else if (rc != QE_NOT_FOUND)
        quota_put_done(rc, NULL, q);
    else
        quota_count(q);
}

static void quota_policies(int rc, const ns_policies_t *p, void *arg)
{
    quota_ctx_t *q = arg;
    (void)rc; /* unreadable policies: the defaults apply */
    q->max = pick(p->max_topics_per_namespace, q->broker->cfg.limits.max_topics_per_namespace);
    if (q->max <= 0) {
        quota_put(q); /* QE_EXISTS, if it may exist and does */
        return;
    }
    if (!q->may_exist) {
        quota_count(q);
        return;
    }
    rc = md_get(q->broker->md, q->path, quota_exists_checked, q);
    if (rc < 0)
        quota_put_done(rc, NULL, q);
}

static int quota_start(broker_t *b, const topic_name_t *tn, int new_topics, bool may_exist,
                       const char *path, const void *value, size_t len, md_put_cb cb, void *arg)
{
    size_t ns_len = strlen(tn->namespace_name) + 1;
    quota_ctx_t *q = malloc(sizeof *q + ns_len);
    if (!q)
        return -ENOMEM;
    *q = (quota_ctx_t){.broker = b,
                       .new_topics = new_topics,
                       .may_exist = may_exist,
                       .len = len,
                       .cb = cb,
                       .arg = arg};
    memcpy(q->ns, tn->namespace_name, ns_len);
    q->path = strdup(path);
    q->value = malloc(len ? len : 1);
    if (!q->path || !q->value) {
        quota_ctx_free(q);
        return -ENOMEM;
    }
    memcpy(q->value, value, len);
    int rc = broker_ns_policies_load(b, tn->namespace_name, quota_policies, q);
    if (rc < 0)
        quota_ctx_free(q);
    return rc;
}

int broker_topic_quota_put(broker_t *b, const topic_name_t *tn, int new_topics, const char *path,
                           const void *value, size_t len, md_put_cb cb, void *arg)
{
    return quota_start(b, tn, new_topics, false, path, value, len, cb, arg);
}

int broker_topic_register(broker_t *b, const topic_name_t *tn, const char *path, const void *value,
                          size_t len, md_put_cb cb, void *arg)
{
    return quota_start(b, tn, 1, true, path, value, len, cb, arg);
}
