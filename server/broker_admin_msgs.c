/*
 * broker_admin_msgs.c — the message-finding operations of the REST admin API
 * (broker_admin.h): read one entry by id, examine the n-th entry from the
 * earliest or latest, find a message id by publish time, reset a
 * subscription's cursor by publish time, and expire a subscription's
 * messages older than some seconds.
 *
 * Searches by publish time are binary searches over the topic's readable
 * entries, flattened to an index space: the retained ledgers from the first
 * readable position to the last confirmed entry, as segments of consecutive
 * entry ids (one per ledger). Each probe reads one entry and parses its
 * metadata: log2(n) reads. Publish times are taken as non-decreasing, as
 * Pulsar's PersistentMessageFinder does; with several producers the answer
 * is the position the search lands on.
 *
 * Search state machine (find_op_t):
 *   window [lo, hi) over the flattened entries; invariant: entries [0, lo)
 *   are "before" the target, [hi, count) are not;
 *   probe mid -> read -> lo = mid + 1 or hi = mid; lo == hi -> done, the
 *   answer is entry lo (count: past the last entry).
 * The topic is held (topic->busy) while a read is in flight, so it is not
 * freed beneath the search (broker_admin.c invariant 2). Callbacks never run
 * inline: an answer known at once goes through broker_defer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "server/broker_admin.h"
#include "server/broker_int.h"
#include "server/codec/frame.h"
#include "server/maintenance.h"

/* ---------------------------------------------------------------- segments -- */

typedef struct span {
    int64_t ledger_id;
    int64_t first, count; /* entry ids [first, first + count) */
} span_t;

/* The readable entries of ml (first readable .. last confirmed) as spans;
 * *out malloc'd (caller frees), *count the number of entries. */
static int spans_build(managed_ledger_t *ml, span_t **out, size_t *nout, uint64_t *count)
{
    *out = NULL;
    *nout = 0;
    *count = 0;
    ml_pos_t lac = ml_last_confirmed(ml), first = ml_first_position(ml);
    if (lac.ledger_id < 0)
        return 0;
    size_t n = ml_get_ledgers(ml, NULL, 0);
    ml_ledger_info_t *li = calloc(n ? n : 1, sizeof *li);
    span_t *sp = calloc(n ? n : 1, sizeof *sp);
    if (!li || !sp) {
        free(li);
        free(sp);
        return -ENOMEM;
    }
    size_t got = ml_get_ledgers(ml, li, n);
    if (got > n)
        got = n;
    size_t k = 0;
    for (size_t i = 0; i < got; i++) {
        if (li[i].ledger_id < first.ledger_id || li[i].ledger_id > lac.ledger_id)
            continue;
        int64_t from =
            li[i].ledger_id == first.ledger_id && first.entry_id > 0 ? first.entry_id : 0;
        int64_t end = li[i].ledger_id == lac.ledger_id ? lac.entry_id + 1 : li[i].entries;
        if (end > from) {
            sp[k++] = (span_t){li[i].ledger_id, from, end - from};
            *count += (uint64_t)(end - from);
        }
    }
    free(li);
    *out = sp;
    *nout = k;
    return 0;
}

static ml_pos_t span_pos(const span_t *sp, size_t n, uint64_t idx)
{
    for (size_t i = 0; i < n; i++) {
        if (idx < (uint64_t)sp[i].count)
            return (ml_pos_t){sp[i].ledger_id, sp[i].first + (int64_t)idx};
        idx -= (uint64_t)sp[i].count;
    }
    return ML_POS_LATEST;
}

static bool spans_hold(const span_t *sp, size_t n, ml_pos_t pos)
{
    for (size_t i = 0; i < n; i++)
        if (sp[i].ledger_id == pos.ledger_id && pos.entry_id >= sp[i].first &&
            pos.entry_id - sp[i].first < sp[i].count)
            return true;
    return false;
}

/* --------------------------------------------------------- read one entry -- */

typedef struct read_op {
    topic_t *topic; /* held */
    broker_admin_message_cb cb;
    void *arg;
} read_op_t;

static void read_one_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    read_op_t *op = arg;
    op->topic->busy--;
    if (rc == 0 && n == 0)
        rc = QE_NOT_FOUND;
    if (rc == 0)
        rc = broker_admin_deliver_entry(&entries[0], op->cb, op->arg);
    if (rc < 0)
        op->cb(rc == QE_NO_ENTRY || rc == QE_NO_LEDGER ? QE_NOT_FOUND : rc, NULL, op->arg);
    free(op);
}

static int read_one(topic_t *t, ml_pos_t pos, broker_admin_message_cb cb, void *arg)
{
    read_op_t *op = malloc(sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (read_op_t){t, cb, arg};
    t->busy++;
    int rc = ml_read(t->ml, pos, 1, 16u << 20, read_one_done, op);
    if (rc < 0) {
        t->busy--;
        free(op);
    }
    return rc;
}

int broker_admin_read_message(broker_t *b, const char *topic, ml_pos_t pos,
                              broker_admin_message_cb cb, void *arg)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    /* Ledger ids are global: an id between this topic's first and last ledgers
     * may belong to another topic (CVE-2021-41571). Only this topic's own
     * ledgers, within their readable entries, name a message here. */
    span_t *sp;
    size_t nsp;
    uint64_t count;
    int rc = spans_build(t->ml, &sp, &nsp, &count);
    if (rc < 0)
        return rc;
    bool mine = spans_hold(sp, nsp, pos);
    free(sp);
    if (!mine)
        return QE_NOT_FOUND;
    return read_one(t, pos, cb, arg);
}

int broker_admin_examine(broker_t *b, const char *topic, bool from_latest, int64_t n,
                         broker_admin_message_cb cb, void *arg)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    if (n < 1)
        return QE_INVALID;
    span_t *sp;
    size_t nsp;
    uint64_t count;
    int rc = spans_build(t->ml, &sp, &nsp, &count);
    if (rc < 0)
        return rc;
    if (count == 0) {
        free(sp);
        return QE_NO_ENTRY;
    }
    uint64_t k = (uint64_t)n > count ? count : (uint64_t)n; /* Pulsar clamps */
    ml_pos_t pos = span_pos(sp, nsp, from_latest ? count - k : k - 1);
    free(sp);
    return read_one(t, pos, cb, arg);
}

/* ------------------------------------------------------ search by time -- */

typedef struct find_op {
    broker_t *broker;
    topic_t *topic; /* held */
    int64_t ts_ms;
    bool inclusive; /* "before" = publish_time < ts (else <= ts) */
    span_t *spans;
    size_t nspans;
    uint64_t lo, hi, count;
    broker_admin_pos_cb cb;
    void *arg;
    int rc;
} find_op_t;

static void find_finish(find_op_t *op, int rc)
{
    ml_pos_t pos = ML_POS_LATEST;
    if (rc == 0 && op->lo < op->count)
        pos = span_pos(op->spans, op->nspans, op->lo);
    op->topic->busy--;
    op->cb(rc, pos, op->arg);
    free(op->spans);
    free(op);
}

static void find_finish_deferred(void *arg)
{
    find_op_t *op = arg;
    find_finish(op, op->rc);
}

static void find_step(find_op_t *op);

static void find_probe_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    find_op_t *op = arg;
    if (rc == 0 && n == 0)
        rc = QE_NO_ENTRY;
    if (rc < 0 || op->topic->state != TOPIC_READY || !op->topic->ml) {
        find_finish(op, rc < 0 ? rc : QE_CLOSED);
        return;
    }
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    int64_t t = INT64_MAX; /* unreadable metadata: never "before" */
    if (frame_parse_metadata(entries[0].data->data, entries[0].data->len, &md, &off) == 0) {
        t = (int64_t)md->publish_time;
        frame_metadata_free(md);
    }
    uint64_t mid = op->lo + (op->hi - op->lo) / 2;
    bool before = op->inclusive ? t < op->ts_ms : t <= op->ts_ms;
    if (before)
        op->lo = mid + 1;
    else
        op->hi = mid;
    find_step(op);
}

static void find_step(find_op_t *op)
{
    if (op->lo >= op->hi) {
        find_finish(op, 0);
        return;
    }
    uint64_t mid = op->lo + (op->hi - op->lo) / 2;
    int rc = ml_read(op->topic->ml, span_pos(op->spans, op->nspans, mid), 1, 16u << 20,
                     find_probe_done, op);
    if (rc < 0)
        find_finish(op, rc);
}

int broker_admin_find_by_time(broker_t *b, const char *topic, int64_t ts_ms, bool inclusive,
                              broker_admin_pos_cb cb, void *arg)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    span_t *spans;
    size_t nspans;
    uint64_t count;
    int rc = spans_build(t->ml, &spans, &nspans, &count);
    if (rc < 0)
        return rc;
    find_op_t *op = malloc(sizeof *op);
    if (!op) {
        free(spans);
        return -ENOMEM;
    }
    *op = (find_op_t){.broker = b,
                      .topic = t,
                      .ts_ms = ts_ms,
                      .inclusive = inclusive,
                      .spans = spans,
                      .nspans = nspans,
                      .hi = count,
                      .count = count,
                      .cb = cb,
                      .arg = arg};
    t->busy++;
    if (op->count == 0) {
        rc = broker_defer(b, find_finish_deferred, op);
        if (rc < 0) {
            t->busy--;
            free(op->spans);
            free(op);
        }
        return rc;
    }
    find_step(op);
    return 0;
}

/* --------------------------------------------------- reset by timestamp -- */

typedef struct reset_time {
    broker_t *broker;
    char *topic, *sub;
    broker_done_rc_cb cb;
    void *arg;
} reset_time_t;

static void reset_time_free(reset_time_t *rt)
{
    free(rt->topic);
    free(rt->sub);
    free(rt);
}

static void reset_time_done(int rc, void *arg)
{
    reset_time_t *rt = arg;
    rt->cb(rc, rt->arg);
    reset_time_free(rt);
}

static void reset_time_found(int rc, ml_pos_t pos, void *arg)
{
    reset_time_t *rt = arg;
    if (rc == 0) {
        /* The first entry published after the timestamp; none: the end. */
        if (pos.ledger_id == INT64_MAX) {
            topic_t *t = broker_topic_find(rt->broker, rt->topic);
            pos = t && t->ml ? ml_next_position(t->ml, ml_last_confirmed(t->ml)) : pos;
        }
        rc = broker_admin_reset_cursor(rt->broker, rt->topic, rt->sub, pos, reset_time_done, rt);
        if (rc == 0)
            return;
    }
    rt->cb(rc, rt->arg);
    reset_time_free(rt);
}

int broker_admin_reset_cursor_time(broker_t *b, const char *topic, const char *sub, int64_t ts_ms,
                                   broker_done_rc_cb cb, void *arg)
{
    topic_t *t;
    t = broker_topic_find(b, topic);
    if (!t || !t->ml || !qmap_get(t->subscriptions, sub))
        return QE_NOT_FOUND;
    reset_time_t *rt = calloc(1, sizeof *rt);
    if (!rt || !(rt->topic = strdup(topic)) || !(rt->sub = strdup(sub))) {
        if (rt)
            reset_time_free(rt);
        return -ENOMEM;
    }
    rt->broker = b;
    rt->cb = cb;
    rt->arg = arg;
    /* Pulsar: the newest entry published at or before ts, then the next. */
    int rc = broker_admin_find_by_time(b, topic, ts_ms, false, reset_time_found, rt);
    if (rc < 0)
        reset_time_free(rt);
    return rc;
}

/* ------------------------------------------------------------- expiry -- */

typedef struct expire_all {
    broker_t *broker;
    int pending;
    int rc;
    broker_done_rc_cb cb;
    void *arg;
} expire_all_t;

static void expire_one_done(int rc, uint64_t expired, void *arg)
{
    (void)expired;
    expire_all_t *ea = arg;
    if (rc < 0 && rc != QE_CLOSED && ea->rc == 0)
        ea->rc = rc;
    if (--ea->pending > 0)
        return;
    ea->cb(ea->rc, ea->arg);
    free(ea);
}

static void expire_all_deferred(void *arg)
{
    expire_all_t *ea = arg;
    ea->cb(ea->rc, ea->arg);
    free(ea);
}

int broker_admin_expire(broker_t *b, const char *topic, const char *sub, int64_t secs,
                        broker_done_rc_cb cb, void *arg)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || !t->ml)
        return QE_NOT_FOUND;
    if (secs < 0)
        return QE_INVALID;
    subscription_t *one = NULL;
    if (sub) {
        one = qmap_get(t->subscriptions, sub);
        if (!one || !one->cursor)
            return QE_NOT_FOUND;
        if (one->expiring)
            return QE_BUSY;
    }
    expire_all_t *ea = calloc(1, sizeof *ea);
    if (!ea)
        return -ENOMEM;
    *ea = (expire_all_t){.broker = b, .pending = 1, .cb = cb, .arg = arg};
    int64_t cutoff = clock_wall_ms() - secs * 1000;
    if (one) {
        int rc = expiry_expire_before(one, cutoff, expire_one_done, ea);
        if (rc < 0)
            free(ea);
        return rc;
    }
    /* Every subscription with a cursor; pending holds one extra count until
     * all are started, so the callback cannot run before the loop ends. */
    qmap_iter_t it = {0};
    void *sv;
    while (qmap_next(t->subscriptions, &it, NULL, &sv)) {
        subscription_t *s = sv;
        if (!s->cursor || s->expiring)
            continue;
        ea->pending++;
        if (expiry_expire_before(s, cutoff, expire_one_done, ea) < 0)
            ea->pending--;
    }
    if (--ea->pending > 0)
        return 0;
    int rc = broker_defer(b, expire_all_deferred, ea);
    if (rc < 0)
        free(ea);
    return rc;
}
