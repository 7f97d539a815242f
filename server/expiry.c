/*
 * expiry.c — message TTL (Pulsar's PersistentMessageExpiryMonitor),
 * expiry of inactive subscriptions, and the broker's periodic checks of every
 * loaded topic, walked in slices (sweep.h; maintenance.h).
 *
 * TTL: every expiry_check_s, for each loaded persistent topic whose TTL
 * (namespace message_ttl_in_seconds, else ttlDurationDefaultInSeconds) is
 * positive, each subscription with a cursor gets expiry_expire_before(now -
 * TTL): a binary search over the entries after its mark-delete position,
 * reading one entry per probe (log2 of the backlog reads), for the last entry
 * published before the cutoff; the cursor is then acknowledged cumulatively
 * up to it. An entry of a batch expires with its batch (one publish time).
 *
 * Search state machine (one per subscription at a time, s->expiring):
 *   candidates = the existing entries in (mark-delete, last confirmed], as
 *   segments of consecutive entry ids per ledger; lo = 0, hi = count;
 *   invariant: candidates [0, lo) expired, [hi, count) not expired;
 *   probe mid = (lo + hi) / 2 -> read -> lo = mid + 1 or hi = mid;
 *   lo == hi -> mark-delete at candidate lo - 1 (if lo > 0), done.
 * The topic is held (busy) while a read is in flight; the subscription is
 * found again by name after each read (it may be gone: the search stops).
 *
 * Subscription expiry (subscriptionExpirationTimeMinutes, or the namespace's
 * subscription_expiration_time_minutes): a durable subscription without
 * consumers for longer than that is deleted. "Active" is sampled by the
 * check: a subscription seen with consumers counts as active until the next
 * check, so a subscription is never deleted early, at most one interval late.
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
#include "server/compaction.h"
#include "server/delayed.h"
#include "server/maintenance.h"
#include "server/ns_policies.h"

/* ------------------------------------------------------------- segments -- */

typedef struct seg {
    int64_t ledger_id;
    int64_t first, count; /* entry ids [first, first + count) */
} seg_t;

typedef struct expire_op {
    broker_t *broker;
    topic_t *topic; /* held (busy) */
    char *sub;
    int64_t cutoff_ms;
    seg_t *segs;
    size_t nsegs;
    uint64_t lo, hi, count;
    expiry_done_fn cb;
    void *arg;
    int rc;
} expire_op_t;

/* The existing entries of ml in (after, last confirmed]. */
static int segs_build(managed_ledger_t *ml, ml_pos_t after, seg_t **out, size_t *nout,
                      uint64_t *count)
{
    *out = NULL;
    *nout = 0;
    *count = 0;
    ml_pos_t lac = ml_last_confirmed(ml);
    if (lac.ledger_id < 0 || ml_pos_cmp(after, lac) >= 0)
        return 0;
    size_t n = ml_get_ledgers(ml, NULL, 0);
    ml_ledger_info_t *li = n ? malloc(n * sizeof *li) : NULL;
    seg_t *segs = n ? malloc(n * sizeof *segs) : NULL;
    if (n && (!li || !segs)) {
        free(li);
        free(segs);
        return -ENOMEM;
    }
    n = ml_get_ledgers(ml, li, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (li[i].ledger_id < after.ledger_id || li[i].ledger_id > lac.ledger_id)
            continue;
        int64_t first = li[i].ledger_id == after.ledger_id ? after.entry_id + 1 : 0;
        int64_t end = li[i].ledger_id == lac.ledger_id ? lac.entry_id + 1 : li[i].entries;
        if (end > first) {
            segs[k++] = (seg_t){li[i].ledger_id, first, end - first};
            *count += (uint64_t)(end - first);
        }
    }
    free(li);
    *out = segs;
    *nout = k;
    return 0;
}

static ml_pos_t segs_pos(const seg_t *segs, size_t n, uint64_t idx)
{
    for (size_t i = 0; i < n; i++) {
        if (idx < (uint64_t)segs[i].count)
            return (ml_pos_t){segs[i].ledger_id, segs[i].first + (int64_t)idx};
        idx -= (uint64_t)segs[i].count;
    }
    return ML_POS_LATEST; /* not reached: idx < count */
}

/* ----------------------------------------------------------- the search -- */

static void expire_step(expire_op_t *op);

static void expire_finish(expire_op_t *op, int rc, uint64_t expired)
{
    topic_t *t = op->topic;
    subscription_t *s = qmap_get(t->subscriptions, op->sub);
    if (s)
        s->expiring = false;
    if (op->cb)
        op->cb(rc, expired, op->arg);
    t->busy--;
    free(op->segs);
    free(op->sub);
    free(op);
}

static void expire_finish_deferred(void *arg)
{
    expire_op_t *op = arg;
    expire_finish(op, op->rc, 0);
}

static subscription_t *op_sub(expire_op_t *op)
{
    topic_t *t = op->topic;
    if (t->state != TOPIC_READY || !t->ml)
        return NULL;
    subscription_t *s = qmap_get(t->subscriptions, op->sub);
    return s && s->cursor && !s->closing ? s : NULL;
}

static int64_t entry_publish_ms(const ml_entry_t *e)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(e->data->data, e->data->len, &md, &off) < 0)
        return INT64_MAX; /* unreadable: never expired by time */
    int64_t t = (int64_t)md->publish_time;
    frame_metadata_free(md);
    return t;
}

static void expire_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    expire_op_t *op = arg;
    if (!op_sub(op)) {
        expire_finish(op, QE_CLOSED, 0);
        return;
    }
    if (rc < 0 || n == 0) {
        expire_finish(op, rc < 0 ? rc : QE_NO_ENTRY, 0);
        return;
    }
    uint64_t mid = (op->lo + op->hi) / 2;
    if (entry_publish_ms(&entries[0]) < op->cutoff_ms)
        op->lo = mid + 1;
    else
        op->hi = mid;
    expire_step(op);
}

static void expire_step(expire_op_t *op)
{
    subscription_t *s = op_sub(op);
    if (!s) {
        expire_finish(op, QE_CLOSED, 0);
        return;
    }
    if (op->lo < op->hi) {
        ml_pos_t p = segs_pos(op->segs, op->nsegs, (op->lo + op->hi) / 2);
        int rc = ml_read(op->topic->ml, p, 1, 1u << 20, expire_read_done, op);
        if (rc < 0)
            expire_finish(op, rc, 0);
        return;
    }
    uint64_t expired = 0;
    if (op->lo > 0) {
        ml_pos_t last = segs_pos(op->segs, op->nsegs, op->lo - 1);
        ml_pos_t md_before = ml_cursor_mark_delete_pos(s->cursor);
        if (ml_pos_cmp(last, md_before) > 0) {
            uint64_t backlog_before = ml_cursor_backlog(s->cursor);
            ml_cursor_ack_cumulative(s->cursor, last);
            uint64_t backlog_after = ml_cursor_backlog(s->cursor);
            expired = backlog_before > backlog_after ? backlog_before - backlog_after : 0;
            s->msg_expired += expired;
            subscription_replay_trim(s);
            delayed_trim(s);
            log_info("expiry", "%s / %s: expired %llu entries up to %lld:%lld", op->topic->name,
                     s->name, (unsigned long long)expired, (long long)last.ledger_id,
                     (long long)last.entry_id);
            subscription_dispatch(s);
        }
    }
    expire_finish(op, 0, expired);
}

int expiry_expire_before(subscription_t *s, int64_t cutoff_ms, expiry_done_fn cb, void *arg)
{
    topic_t *t = s->topic;
    if (!s->cursor || !t->ml)
        return QE_INVALID;
    if (s->expiring)
        return QE_BUSY;
    expire_op_t *op = calloc(1, sizeof *op);
    if (!op || !(op->sub = strdup(s->name))) {
        free(op);
        return -ENOMEM;
    }
    op->broker = t->broker;
    op->topic = t;
    op->cutoff_ms = cutoff_ms;
    op->cb = cb;
    op->arg = arg;
    int rc =
        segs_build(t->ml, ml_cursor_mark_delete_pos(s->cursor), &op->segs, &op->nsegs, &op->count);
    if (rc < 0) {
        free(op->sub);
        free(op);
        return rc;
    }
    op->hi = op->count;
    s->expiring = true;
    t->busy++;
    if (op->count == 0) {
        /* Nothing to search: answer on the loop, never inline. */
        rc = broker_defer(t->broker, expire_finish_deferred, op);
        if (rc < 0) {
            s->expiring = false;
            t->busy--;
            free(op->segs);
            free(op->sub);
            free(op);
        }
        return rc;
    }
    expire_step(op);
    return 0;
}

/* ------------------------------------------------------------ TTL check -- */

static const ns_policies_t *topic_policies(topic_t *t)
{
    topic_name_t tn;
    if (topic_name_parse(t->name, &tn) < 0)
        return NULL;
    return broker_ns_policies(t->broker, tn.namespace_name);
}

int64_t expiry_topic_ttl_s(topic_t *t)
{
    const ns_policies_t *p = topic_policies(t);
    if (p && p->has_message_ttl)
        return p->message_ttl_s > 0 ? p->message_ttl_s : 0;
    return t->broker->cfg.delivery.ttl_default_s;
}

void expiry_check_topic(topic_t *t)
{
    if (t->state != TOPIC_READY || !t->ml)
        return;
    int64_t ttl = expiry_topic_ttl_s(t);
    if (ttl <= 0)
        return;
    int64_t cutoff = clock_wall_ms() - ttl * 1000;
    qmap_iter_t si = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &si, NULL, &sv)) {
        subscription_t *s = sv;
        if (s->cursor && !s->opening && !s->closing && !s->expiring)
            expiry_expire_before(s, cutoff, NULL, NULL);
    }
}

/* ---------------------------------------------------- subscription expiry -- */

static void sub_deleted(int rc, void *arg)
{
    char *what = arg;
    if (rc < 0)
        log_warn("expiry", "cannot delete inactive subscription %s: %s", what, q_strerror(rc));
    else
        log_info("expiry", "deleted inactive subscription %s", what);
    free(what);
}

static void sub_expiry_check_topic(topic_t *t)
{
    broker_t *b = t->broker;
    if (t->state != TOPIC_READY || !t->ml)
        return;
    int64_t now = clock_wall_ms();
    int64_t interval_ms = (int64_t)b->cfg.delivery.sub_expiry_check_s * 1000;
    const ns_policies_t *p = topic_policies(t);
    int64_t limit_s = p && p->subscription_expiration_min >= 0 ? p->subscription_expiration_min * 60
                                                               : b->cfg.delivery.sub_expiration_s;
    /* Collect first: deleting changes the map being walked. */
    char **victims = NULL;
    size_t nv = 0;
    qmap_iter_t si = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &si, NULL, &sv)) {
        subscription_t *s = sv;
        if (s->consumers_count > 0 || s->active_until_ms == 0) {
            s->active_until_ms = now + interval_ms;
            continue;
        }
        if (limit_s <= 0 || !s->durable || !s->cursor || s->opening || s->closing)
            continue;
        if (now - s->active_until_ms < limit_s * 1000)
            continue;
        char **nvv = realloc(victims, (nv + 1) * sizeof *nvv);
        if (!nvv)
            break;
        victims = nvv;
        victims[nv] = strdup(s->name);
        if (victims[nv])
            nv++;
    }
    for (size_t i = 0; i < nv; i++) {
        char *what = NULL;
        if (asprintf(&what, "%s / %s", t->name, victims[i]) < 0)
            what = NULL;
        if (what && broker_admin_subscription_delete(b, t->name, victims[i], sub_deleted, what) < 0)
            free(what);
        free(victims[i]);
    }
    free(victims);
}

/* --------------------------------------------------------------- sweeps -- */

/* Each check visits every loaded topic, a slice per loop iteration
 * (sweep.h): at 100,000 topics a check in one go held the loop 40-60 ms. */
static void expiry_visit(void *ctx, void *topic)
{
    (void)ctx;
    expiry_check_topic(topic);
}

static void sub_expiry_visit(void *ctx, void *topic)
{
    (void)ctx;
    sub_expiry_check_topic(topic);
}

static void quota_visit(void *ctx, void *topic)
{
    (void)ctx;
    backlog_quota_check_topic(topic);
}

static void compaction_visit(void *ctx, void *topic)
{
    (void)ctx;
    compaction_check_topic(topic);
}

void broker_maintenance_start(broker_t *b)
{
    const broker_delivery_config_t *c = &b->cfg.delivery;
    sweep_init(&b->expiry_sweep, b->loop, &b->topics, c->expiry_check_s, expiry_visit, b);
    sweep_start(&b->expiry_sweep);
    sweep_init(&b->sub_expiry_sweep, b->loop, &b->topics, c->sub_expiry_check_s, sub_expiry_visit,
               b);
    sweep_start(&b->sub_expiry_sweep);
    sweep_init(&b->quota_sweep, b->loop, &b->topics, c->quota_check_s, quota_visit, b);
    if (c->quota_check_enabled)
        sweep_start(&b->quota_sweep);
    double every = b->cfg.compaction_monitor_s;
    sweep_init(&b->compaction_sweep, b->loop, &b->topics, every, compaction_visit, b);
    if (every > 0)
        sweep_start(&b->compaction_sweep);
}

void broker_maintenance_stop(broker_t *b)
{
    sweep_stop(&b->expiry_sweep);
    sweep_stop(&b->sub_expiry_sweep);
    sweep_stop(&b->quota_sweep);
    sweep_stop(&b->compaction_sweep);
}
