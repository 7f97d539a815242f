/*
 * backlog_quota.c — backlog quotas (Pulsar's BacklogQuotaManager and the
 * checks of PersistentTopic/ServerCnx).
 *
 * Two quotas per topic, from the namespace's backlog_quota_map (else the
 * broker's backlogQuotaDefault* keys):
 *   destination_storage  limitSize bytes: the estimated backlog size of the
 *                        slowest durable subscription (bytes of the entries
 *                        after its mark-delete position: whole ledgers, and a
 *                        pro-rata share of the mark-delete's ledger), exceeded
 *                        when >= limitSize (Pulsar's getEstimatedBacklogSize);
 *   message_age          limitTime seconds: the age (publish time) of the
 *                        oldest unacknowledged entry, i.e. the entry after the
 *                        slowest durable mark-delete position, exceeded when
 *                        older than limitTime (the "precise" check: the entry
 *                        is read).
 * and three policies when exceeded:
 *   producer_request_hold      producers are disconnected; a PRODUCER is
 *                              refused with ProducerBlockedQuotaExceededError,
 *                              which a client retries (its sends wait) until
 *                              the backlog drops;
 *   producer_exception         the same, refused with
 *                              ProducerBlockedQuotaExceededException (clients
 *                              fail the producer);
 *   consumer_backlog_eviction  subscriptions are advanced (mark-delete moved):
 *                              for size, each subscription over 90% of the
 *                              limit skips its oldest entries until under it;
 *                              for age, every entry older than the limit is
 *                              expired (expiry.c).
 *
 * When: every backlogQuotaCheckIntervalInSeconds on every loaded topic, and
 * the size quota also on publish (at most once a second per topic). The age
 * check needs a read, so it runs only on the timer; its result (the oldest
 * entry's position and publish time) is kept in the topic and used by the
 * producer admission while the oldest position stays the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/broker_admin.h"
#include "server/codec/frame.h"
#include "server/delayed.h"
#include "server/maintenance.h"
#include "server/ns_policies.h"

#define EVICT_TARGET_PCT 90
#define PUBLISH_CHECK_MS 1000

/* ------------------------------------------------------------- quotas -- */

static void quota_limits(topic_t *t, backlog_quota_state_t *st)
{
    const broker_delivery_config_t *c = &t->broker->cfg.delivery;
    st->limit_size_bytes = c->quota_default_bytes;
    st->size_policy = c->quota_default_policy;
    st->limit_time_s = c->quota_default_s;
    st->time_policy = c->quota_default_policy;
    topic_name_t tn;
    if (topic_name_parse(t->name, &tn) < 0)
        return;
    const ns_policies_t *p = broker_ns_policies(t->broker, tn.namespace_name);
    if (p->backlog_storage.set) {
        st->limit_size_bytes = p->backlog_storage.limit_size_bytes;
        st->size_policy = p->backlog_storage.policy;
    }
    if (p->backlog_age.set) {
        st->limit_time_s = p->backlog_age.limit_time_s;
        st->time_policy = p->backlog_age.policy;
    }
}

/* The ledgers of t (caller frees); NULL when none or out of memory. */
static ml_ledger_info_t *ledgers_of(topic_t *t, size_t *n)
{
    *n = ml_get_ledgers(t->ml, NULL, 0);
    ml_ledger_info_t *li = *n ? malloc(*n * sizeof *li) : NULL;
    if (!li)
        *n = 0;
    else
        *n = ml_get_ledgers(t->ml, li, *n);
    return li;
}

/* Estimated bytes of the entries after md. */
static uint64_t backlog_bytes_after(const ml_ledger_info_t *li, size_t n, ml_pos_t md)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (li[i].ledger_id < md.ledger_id || li[i].entries <= 0)
            continue;
        if (li[i].ledger_id > md.ledger_id) {
            bytes += (uint64_t)li[i].size_bytes;
            continue;
        }
        int64_t after = li[i].entries - (md.entry_id + 1);
        if (after > 0)
            bytes += (uint64_t)((double)li[i].size_bytes * (double)after / (double)li[i].entries);
    }
    return bytes;
}

static bool sub_counts(const subscription_t *s)
{
    return s->durable && s->cursor && !s->opening && !s->closing;
}

/* The slowest durable subscription (smallest mark-delete), or NULL. */
static subscription_t *slowest_sub(topic_t *t)
{
    subscription_t *slowest = NULL;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        if (!sub_counts(s))
            continue;
        if (!slowest || ml_pos_cmp(ml_cursor_mark_delete_pos(s->cursor),
                                   ml_cursor_mark_delete_pos(slowest->cursor)) < 0)
            slowest = s;
    }
    return slowest;
}

/* The oldest unacknowledged entry's position (after the slowest mark-delete),
 * false when there is none. */
static bool oldest_unacked(topic_t *t, ml_pos_t *pos)
{
    subscription_t *s = slowest_sub(t);
    if (!s)
        return false;
    ml_pos_t next = ml_next_position(t->ml, ml_cursor_mark_delete_pos(s->cursor));
    ml_pos_t lac = ml_last_confirmed(t->ml);
    if (lac.ledger_id < 0 || ml_pos_cmp(next, lac) > 0)
        return false;
    *pos = next;
    return true;
}

void backlog_quota_state(topic_t *t, backlog_quota_state_t *st)
{
    memset(st, 0, sizeof *st);
    quota_limits(t, st);
    st->oldest_age_s = -1;
    if (!t->ml)
        return;
    subscription_t *s = slowest_sub(t);
    if (s) {
        size_t n;
        ml_ledger_info_t *li = ledgers_of(t, &n);
        st->backlog_bytes = backlog_bytes_after(li, n, ml_cursor_mark_delete_pos(s->cursor));
        free(li);
    }
    ml_pos_t oldest;
    if (oldest_unacked(t, &oldest)) {
        if (t->quota_oldest_publish_ms > 0 && ml_pos_cmp(oldest, t->quota_oldest_pos) == 0) {
            int64_t age = (clock_wall_ms() - t->quota_oldest_publish_ms) / 1000;
            st->oldest_age_s = age < 0 ? 0 : age;
            st->oldest_sub_name = s ? s->name : NULL;
        }
    } else {
        st->oldest_age_s = 0;
    }
}

static bool size_exceeded(const backlog_quota_state_t *st)
{
    return st->limit_size_bytes >= 0 && st->backlog_bytes >= (uint64_t)st->limit_size_bytes &&
           st->backlog_bytes > 0;
}

static bool age_exceeded(const backlog_quota_state_t *st)
{
    return st->limit_time_s >= 0 && st->oldest_age_s > st->limit_time_s;
}

/* ---------------------------------------------------------- producers -- */

int backlog_quota_admit_producer(topic_t *t, pb_error_t *err, const char **why)
{
    if (!t->ml)
        return 0;
    backlog_quota_state_t st;
    backlog_quota_state(t, &st);
    int policy;
    if (size_exceeded(&st))
        policy = st.size_policy;
    else if (age_exceeded(&st))
        policy = st.time_policy;
    else
        return 0;
    if (policy == BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION)
        return 0;
    *err = policy == BACKLOG_POLICY_PRODUCER_EXCEPTION
               ? PULSAR__PROTO__SERVER_ERROR__ProducerBlockedQuotaExceededException
               : PULSAR__PROTO__SERVER_ERROR__ProducerBlockedQuotaExceededError;
    *why = "Cannot create producer on topic with backlog quota exceeded";
    log_info("quota", "%s: producer refused: backlog quota exceeded", t->name);
    return -1;
}

/* Closes every producer of t from the broker's side; clients reconnect and
 * meet backlog_quota_admit_producer. */
static void disconnect_producers(topic_t *t)
{
    if (!t->producers)
        return;
    log_info("quota", "%s: backlog quota exceeded: disconnecting %u producers", t->name,
             t->producers_count);
    while (t->producers) {
        producer_t *q = t->producers;
        Pulsar__Proto__CommandCloseProducer cp = PULSAR__PROTO__COMMAND_CLOSE_PRODUCER__INIT;
        cp.producer_id = q->producer_id;
        pb_command_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
        cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER;
        cmd.close_producer = &cp;
        conn_send_command(q->conn, &cmd);
        producer_destroy(q);
    }
}

/* ----------------------------------------------------------- eviction -- */

/* Moves s's mark-delete forward until its estimated backlog is <= target. */
static void evict_sub_to(topic_t *t, subscription_t *s, const ml_ledger_info_t *li, size_t n,
                         uint64_t target)
{
    ml_pos_t md = ml_cursor_mark_delete_pos(s->cursor);
    uint64_t remaining = backlog_bytes_after(li, n, md);
    if (remaining <= target)
        return;
    ml_pos_t lac = ml_last_confirmed(t->ml);
    ml_pos_t to = md;
    for (size_t i = 0; i < n && remaining > target; i++) {
        if (li[i].ledger_id < md.ledger_id || li[i].entries <= 0)
            continue;
        int64_t first = li[i].ledger_id == md.ledger_id ? md.entry_id + 1 : 0;
        int64_t end = li[i].entries;
        if (li[i].ledger_id == lac.ledger_id && lac.entry_id + 1 < end)
            end = lac.entry_id + 1;
        if (end <= first)
            continue;
        double avg = (double)li[i].size_bytes / (double)li[i].entries;
        if (avg < 1)
            avg = 1;
        double here = avg * (double)(end - first);
        if ((double)remaining - here > (double)target) {
            remaining -= (uint64_t)here;
            to = (ml_pos_t){li[i].ledger_id, end - 1};
            continue;
        }
        int64_t k = (int64_t)(((double)remaining - (double)target) / avg + 0.999999);
        if (k < 1)
            k = 1;
        if (k > end - first)
            k = end - first;
        to = (ml_pos_t){li[i].ledger_id, first + k - 1};
        remaining = 0;
    }
    if (ml_pos_cmp(to, md) <= 0)
        return;
    uint64_t before = ml_cursor_backlog(s->cursor);
    ml_cursor_ack_cumulative(s->cursor, to);
    uint64_t after = ml_cursor_backlog(s->cursor);
    t->quota_evictions_size++;
    subscription_replay_trim(s);
    delayed_trim(s);
    log_info("quota", "%s / %s: backlog quota eviction skipped %llu entries (to %lld:%lld)",
             t->name, s->name, (unsigned long long)(before > after ? before - after : 0),
             (long long)to.ledger_id, (long long)to.entry_id);
    subscription_dispatch(s);
}

static void evict_size(topic_t *t, const backlog_quota_state_t *st)
{
    uint64_t target = (uint64_t)st->limit_size_bytes * EVICT_TARGET_PCT / 100;
    size_t n;
    ml_ledger_info_t *li = ledgers_of(t, &n);
    if (!li)
        return;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        if (sub_counts(s))
            evict_sub_to(t, s, li, n, target);
    }
    free(li);
}

static void evict_age_done(int rc, uint64_t expired, void *arg)
{
    topic_t *t = arg;
    if (rc == 0 && expired > 0)
        t->quota_evictions_time++;
    t->busy--;
}

static void evict_age(topic_t *t, const backlog_quota_state_t *st)
{
    int64_t cutoff = clock_wall_ms() - st->limit_time_s * 1000;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        if (!sub_counts(s) || s->expiring)
            continue;
        t->busy++;
        if (expiry_expire_before(s, cutoff, evict_age_done, t) < 0)
            t->busy--;
    }
}

/* -------------------------------------------------------------- checks -- */

static void enforce_size(topic_t *t, const backlog_quota_state_t *st)
{
    if (!size_exceeded(st))
        return;
    if (st->size_policy == BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION)
        evict_size(t, st);
    else
        disconnect_producers(t);
}

static void age_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    topic_t *t = arg;
    t->quota_reading = false;
    t->busy--;
    if (rc < 0 || n == 0 || t->state != TOPIC_READY || !t->ml)
        return;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(entries[0].data->data, entries[0].data->len, &md, &off) < 0)
        return;
    t->quota_oldest_pos = entries[0].pos;
    t->quota_oldest_publish_ms = (int64_t)md->publish_time;
    frame_metadata_free(md);
    backlog_quota_state_t st;
    backlog_quota_state(t, &st);
    if (!age_exceeded(&st))
        return;
    if (st.time_policy == BACKLOG_POLICY_CONSUMER_BACKLOG_EVICTION)
        evict_age(t, &st);
    else
        disconnect_producers(t);
}

static void check_age(topic_t *t, const backlog_quota_state_t *st)
{
    ml_pos_t oldest;
    if (st->limit_time_s < 0 || t->quota_reading || !oldest_unacked(t, &oldest))
        return;
    t->quota_reading = true;
    t->busy++;
    if (ml_read(t->ml, oldest, 1, 1u << 20, age_read_done, t) < 0) {
        t->quota_reading = false;
        t->busy--;
    }
}

void backlog_quota_on_publish(topic_t *t)
{
    if (!t->ml || t->state != TOPIC_READY)
        return;
    int64_t now = clock_wall_ms();
    if (now - t->quota_publish_check_ms < PUBLISH_CHECK_MS)
        return;
    t->quota_publish_check_ms = now;
    backlog_quota_state_t st;
    backlog_quota_state(t, &st);
    enforce_size(t, &st);
}

void backlog_quota_check_topic(topic_t *t)
{
    if (t->state != TOPIC_READY || !t->ml)
        return;
    backlog_quota_state_t st = {0};
    quota_limits(t, &st);
    if (st.limit_size_bytes < 0 && st.limit_time_s < 0)
        return; /* no quota (the default): skip the backlog walk, 100,000 topics idle */
    backlog_quota_state(t, &st);
    enforce_size(t, &st);
    check_age(t, &st);
}

void backlog_quota_view(topic_t *t, struct broker_admin_topic_view *v)
{
    backlog_quota_state_t st;
    backlog_quota_state(t, &st);
    v->backlog_quota_limit_size = st.limit_size_bytes;
    v->backlog_quota_limit_time_s = st.limit_time_s;
    v->backlog_size_bytes = st.backlog_bytes;
    v->oldest_backlog_age_s = st.oldest_age_s;
    v->backlog_evictions_size = t->quota_evictions_size;
    v->backlog_evictions_time = t->quota_evictions_time;
}
