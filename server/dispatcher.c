/*
 * dispatcher.c — what a subscription sends to its consumers, and when.
 *
 * subscription_dispatch() is called whenever sending may have become possible:
 * permits granted (FLOW), an entry added to the topic, an acknowledgement, a
 * consumer joining or leaving, a connection's write queue draining. It starts
 * at most one read at a time (s->reading):
 *   1. the replay set first (entries redelivered, or held back), sorted by
 *      position, read in runs of consecutive entries;
 *   2. then new entries from the cursor's read position.
 * Each entry read goes to one consumer chosen by the subscription type:
 *   Exclusive/Failover  the active consumer;
 *   Shared              round robin among consumers with permits;
 *   Key_Shared          by the hash of the entry's sticky key: STICKY by the
 *                       consumers' declared ranges, AUTO_SPLIT by a consistent
 *                       hash ring of the consumers' names.
 * An entry that its consumer cannot take now (no permits, a slow connection,
 * a Key_Shared hold) goes to the replay set; in Key_Shared, a later entry with
 * the same key hash follows it there, so each key stays in order.
 *
 * Permits count messages: an entry of a batch of n costs n, and may take a
 * consumer's permits below zero (whole entries are sent), as Pulsar does.
 * The replay set is bounded (REPLAY_MAX); new entries are not read while it
 * is full.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "common/errors.h"
#include "common/log.h"
#include "common/murmur3.h"
#include "server/broker_int.h"
#include "server/codec/commands.h"
#include "server/codec/frame.h"
#include "server/limits_int.h"
#include "server/compaction.h"
#include "server/delayed.h"
#include "server/termination.h"

#define REPLAY_MAX 100000
#define KEY_HASH_RANGE 65536
#define RING_POINTS_PER_CONSUMER 100

static void dispatch_continue(subscription_t *s);

/* ------------------------------------------------------------ replay set -- */

static size_t replay_find(const subscription_t *s, ml_pos_t pos, bool *found)
{
    size_t lo = 0, hi = s->replay_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = ml_pos_cmp(s->replay[mid], pos);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void replay_hash_count(subscription_t *s, uint32_t hash, int delta)
{
    uintptr_t n = (uintptr_t)qmap64_get(s->replay_hashes, hash);
    n = delta > 0 ? n + 1 : (n > 0 ? n - 1 : 0);
    if (n)
        qmap64_put(s->replay_hashes, hash, (void *)n);
    else
        qmap64_remove(s->replay_hashes, hash);
}

static bool is_key_shared(const subscription_t *s)
{
    return s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
}

void subscription_replay_count_key(subscription_t *s, uint32_t key_hash)
{
    if (is_key_shared(s))
        replay_hash_count(s, key_hash, +1);
}

int subscription_replay_reserve(subscription_t *s, size_t need)
{
    if (need <= s->replay_cap)
        return 0;
    size_t ncap = s->replay_cap ? s->replay_cap : 64;
    while (ncap < need)
        ncap *= 2;
    /* Both grow or the capacity stays: a larger first array is harmless. */
    uint32_t *k = realloc(s->replay_keys, ncap * sizeof *k);
    if (!k)
        return -1;
    s->replay_keys = k;
    ml_pos_t *p = realloc(s->replay, ncap * sizeof *p);
    if (!p)
        return -1;
    s->replay = p;
    s->replay_cap = ncap;
    return 0;
}

/* The entry cache keeps what the replay set will read (ml_cursor_set_cache_hold):
 * an entry held back for a busy Key_Shared consumer is sent from memory later
 * instead of being read back from the bookie. */
static void replay_hold_sync(subscription_t *s)
{
    if (s->cursor)
        ml_cursor_set_cache_hold(s->cursor, s->replay_count ? &s->replay[0] : NULL);
}

void subscription_replay_add(subscription_t *s, ml_pos_t pos, uint32_t key_hash)
{
    bool found;
    size_t i = replay_find(s, pos, &found);
    if (found)
        return; /* already there, and counted once */
    if (subscription_replay_reserve(s, s->replay_count + 1) < 0) {
        log_error("dispatch", "%s / %s: out of memory for redelivery; rewinding", s->topic->name,
                  s->name);
        ml_cursor_rewind(s->cursor);
        return;
    }
    size_t tail = s->replay_count - i;
    memmove(&s->replay[i + 1], &s->replay[i], tail * sizeof *s->replay);
    memmove(&s->replay_keys[i + 1], &s->replay_keys[i], tail * sizeof *s->replay_keys);
    s->replay[i] = pos;
    s->replay_keys[i] = key_hash;
    s->replay_count++;
    if (is_key_shared(s))
        replay_hash_count(s, key_hash, +1);
    /* Key_Shared: a replay read in flight may hold a newer entry of the same
     * key (a consumer closed and its entries came back meanwhile); its entries
     * are not sent, and the set is read again from its head (read_done). */
    if (is_key_shared(s) && s->replay_reading && ml_pos_cmp(pos, s->replay_read_from) < 0)
        s->replay_read_stale = true;
    if (i == 0)
        replay_hold_sync(s);
}

void subscription_replay_remove(subscription_t *s, ml_pos_t pos)
{
    bool found;
    size_t i = replay_find(s, pos, &found);
    if (!found)
        return;
    if (is_key_shared(s))
        replay_hash_count(s, s->replay_keys[i], -1);
    size_t tail = s->replay_count - i - 1;
    memmove(&s->replay[i], &s->replay[i + 1], tail * sizeof *s->replay);
    memmove(&s->replay_keys[i], &s->replay_keys[i + 1], tail * sizeof *s->replay_keys);
    s->replay_count--;
    if (i == 0)
        replay_hold_sync(s);
}

void subscription_replay_trim(subscription_t *s)
{
    size_t w = 0;
    for (size_t r = 0; r < s->replay_count; r++) {
        if (!s->cursor || !ml_cursor_is_acked(s->cursor, s->replay[r]) ||
            compaction_entry_pending(s, s->replay[r])) {
            s->replay[w] = s->replay[r];
            s->replay_keys[w++] = s->replay_keys[r];
        } else if (is_key_shared(s)) {
            replay_hash_count(s, s->replay_keys[r], -1);
        }
    }
    s->replay_count = w;
    replay_hold_sync(s);
}

void subscription_replay_clear(subscription_t *s)
{
    s->replay_count = 0;
    replay_hold_sync(s);
    qmap64_free(s->replay_hashes);
    s->replay_hashes = qmap64_new();
    delayed_clear(s); /* the cursor was reset: held entries are read again */
    compaction_sub_reset(s);
}

/* -------------------------------------------------------- entry metadata -- */

typedef struct entry_info {
    int32_t num_messages;
    uint32_t key_hash;  /* 0..65535 */
    int64_t deliver_at; /* deliver_at_time, 0 if none (delayed.h) */
} entry_info_t;

static int b64_value(int ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+' || ch == '-')
        return 62;
    if (ch == '/' || ch == '_')
        return 63;
    return -1;
}

/* Decodes base64 (standard or URL alphabet, padding optional) of in[0..len)
 * into out. */
static size_t b64_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len && in[i] != '='; i++) {
        int v = b64_value(in[i]);
        if (v < 0)
            continue;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n < cap)
                out[n++] = (uint8_t)(acc >> bits);
        }
    }
    return n;
}

/* Pulsar's sticky key: ordering_key, else partition_key (base64-decoded when
 * flagged), else "NONE_KEY"; hashed with Murmur3 x86_32, & INT32_MAX, % 65536.
 * All of the key's bytes, as Pulsar hashes them. */
static uint32_t sticky_key_hash(const frame_meta_scan_t *md)
{
    const uint8_t *key = (const uint8_t *)"NONE_KEY";
    size_t len = 8;
    uint8_t decoded[1024];
    if (md->has_ordering_key && md->ordering_key_len > 0) {
        key = md->ordering_key;
        len = md->ordering_key_len;
    } else if (md->has_partition_key) {
        if (md->partition_key_b64_encoded) {
            len = b64_decode(md->partition_key, md->partition_key_len, decoded, sizeof decoded);
            key = decoded;
        } else {
            key = md->partition_key;
            len = md->partition_key_len;
        }
    }
    uint32_t h = murmur3_x86_32(key, len, 0) & 0x7fffffffu;
    return h % KEY_HASH_RANGE;
}

/* One pass over the entry's metadata bytes (frame_scan_metadata), not an
 * unpack: this runs for every entry dispatched. */
static void entry_info_read(const ml_entry_t *e, entry_info_t *info)
{
    frame_meta_scan_t md;
    info->num_messages = 1;
    info->key_hash = 0;
    info->deliver_at = 0;
    if (frame_scan_metadata(e->data->data, e->data->len, &md) < 0) {
        log_warn("dispatch", "entry %lld:%lld has unreadable metadata", (long long)e->pos.ledger_id,
                 (long long)e->pos.entry_id);
        return;
    }
    info->num_messages = md.num_messages;
    info->key_hash = sticky_key_hash(&md);
    if (md.has_deliver_at_time)
        info->deliver_at = md.deliver_at_time;
}

/* ------------------------------------------------------ consumer selection -- */

static bool consumer_can_take(consumer_t *cons)
{
    return cons->permits > 0 && conn_writable(cons->conn) && !limits_consumer_blocked(cons);
}

static bool in_ranges(const consumer_t *cons, uint32_t hash)
{
    for (size_t i = 0; i < cons->ranges_count; i++)
        if ((int32_t)hash >= cons->ranges[i][0] && (int32_t)hash <= cons->ranges[i][1])
            return true;
    return false;
}

/* AUTO_SPLIT: the consumer owning the first ring point at or after hash. The
 * ring has RING_POINTS_PER_CONSUMER points per consumer, at the hashes of
 * "<name><i>", so a consumer joining or leaving moves only its share of keys. */
static uint32_t ring_point(const consumer_t *cons, int k)
{
    char buf[600];
    int n =
        snprintf(buf, sizeof buf, "%s%llu%d", cons->name, (unsigned long long)cons->consumer_id, k);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    return (murmur3_x86_32(buf, (size_t)n, 0) & 0x7fffffffu) % KEY_HASH_RANGE;
}

/* The consumer's points, computed once (a Key_Shared dispatch asks for every
 * consumer's points per entry; formatting and hashing them each time was ~30% of
 * the loop thread at 100 topics x 2 consumers). NULL if out of memory. */
static const uint32_t *ring_points(consumer_t *cons)
{
    if (!cons->ring_points) {
        cons->ring_points = malloc(RING_POINTS_PER_CONSUMER * sizeof *cons->ring_points);
        if (!cons->ring_points)
            return NULL;
        for (int k = 0; k < RING_POINTS_PER_CONSUMER; k++)
            cons->ring_points[k] = ring_point(cons, k);
    }
    return cons->ring_points;
}

typedef struct ring_slot {
    uint32_t point;
    uint32_t idx; /* in s->consumers */
} ring_slot_t;

static int ring_slot_cmp(const void *a, const void *b)
{
    const ring_slot_t *x = a, *y = b;
    if (x->point != y->point)
        return x->point < y->point ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx; /* a tie: the earlier consumer */
}

/* Every consumer's points in one sorted array, so an owner is a binary search
 * instead of a scan of consumers x RING_POINTS_PER_CONSUMER points per entry
 * (2.7 % of the server's CPU in (e) with two consumers a subscription). */
static bool ring_build(subscription_t *s)
{
    size_t n = s->consumers_count * RING_POINTS_PER_CONSUMER;
    ring_slot_t *r = realloc(s->ring, n * sizeof *r);
    if (!r)
        return false;
    s->ring = r;
    for (size_t i = 0; i < s->consumers_count; i++) {
        const uint32_t *points = ring_points(s->consumers[i]);
        if (!points)
            return false;
        for (int k = 0; k < RING_POINTS_PER_CONSUMER; k++)
            r[i * RING_POINTS_PER_CONSUMER + (size_t)k] = (ring_slot_t){points[k], (uint32_t)i};
    }
    qsort(r, n, sizeof *r, ring_slot_cmp);
    s->ring_len = n;
    return true;
}

/* The slow way, without memory for the ring: the same owner. */
static consumer_t *ring_owner_scan(subscription_t *s, uint32_t hash)
{
    consumer_t *best = NULL, *first = NULL;
    uint32_t best_point = UINT32_MAX, first_point = UINT32_MAX;
    for (size_t i = 0; i < s->consumers_count; i++) {
        consumer_t *cons = s->consumers[i];
        const uint32_t *points = ring_points(cons);
        for (int k = 0; k < RING_POINTS_PER_CONSUMER; k++) {
            uint32_t point = points ? points[k] : ring_point(cons, k);
            if (point >= hash && point < best_point) {
                best_point = point;
                best = cons;
            }
            if (point < first_point) {
                first_point = point;
                first = cons;
            }
        }
    }
    return best ? best : first;
}

static consumer_t *ring_owner(subscription_t *s, uint32_t hash)
{
    if (s->consumers_count == 0)
        return NULL;
    if (s->ring_len == 0 && !ring_build(s))
        return ring_owner_scan(s, hash);
    size_t lo = 0, hi = s->ring_len; /* the first point >= hash, else the first */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ring[mid].point < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    return s->consumers[s->ring[lo < s->ring_len ? lo : 0].idx];
}

consumer_t *subscription_key_shared_owner(subscription_t *s, uint32_t hash)
{
    if (s->key_shared_mode == PULSAR__PROTO__KEY_SHARED_MODE__STICKY) {
        for (size_t i = 0; i < s->consumers_count; i++)
            if (in_ranges(s->consumers[i], hash))
                return s->consumers[i];
        return NULL; /* keys no consumer declared wait */
    }
    return ring_owner(s, hash);
}

static consumer_t *choose_consumer(subscription_t *s, const entry_info_t *info, ml_pos_t pos)
{
    switch (s->type) {
    case PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared:
        for (size_t k = 0; k < s->consumers_count; k++) {
            consumer_t *cons = s->consumers[(s->rr_next + k) % s->consumers_count];
            if (consumer_can_take(cons)) {
                s->rr_next = (s->rr_next + k + 1) % s->consumers_count;
                return cons;
            }
        }
        return NULL;
    case PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared: {
        consumer_t *cons = subscription_key_shared_owner(s, info->key_hash);
        if (!cons || !consumer_can_take(cons))
            return NULL;
        /* The key's earlier entries are still with a consumer it moved from
         * (a join, a close): it waits until they are acknowledged or come back. */
        if (subscription_hash_held_elsewhere(s, cons, info->key_hash))
            return NULL;
        if (cons->has_join_limit) {
            /* Released once everything before join_limit is acknowledged. */
            ml_pos_t after_md =
                ml_next_position(s->topic->ml, ml_cursor_mark_delete_pos(s->cursor));
            if (ml_pos_cmp(after_md, cons->join_limit) >= 0)
                cons->has_join_limit = false;
            else if (ml_pos_cmp(pos, cons->join_limit) >= 0)
                return NULL;
        }
        return cons;
    }
    default: {
        consumer_t *cons = subscription_active_consumer(s);
        return cons && consumer_can_take(cons) ? cons : NULL;
    }
    }
}

/* ------------------------------------------------------------------ send -- */

/* Messages per entry, averaged as Pulsar's Consumer.avgMessagesPerEntry: each
 * entry sent moves the average a tenth of the way (the first one sets it). */
static void avg_update(double *avg, int32_t num_messages)
{
    double n = num_messages > 0 ? (double)num_messages : 1.0;
    *avg = *avg > 0 ? *avg * 0.9 + n * 0.1 : n;
}

static int send_entry(subscription_t *s, consumer_t *cons, const ml_entry_t *e,
                      const entry_info_t *info)
{
    uint64_t key = pos_pack(e->pos);
    uint32_t redelivery = (uint32_t)(uintptr_t)qmap64_get(s->redelivery_counts, key);
    size_t words = 0;
    const uint64_t *ack_set = s->cursor ? ml_cursor_ack_set(s->cursor, e->pos, &words) : NULL;
    ack_set = compaction_ack_set(s, e, ack_set, &words); /* compacted-out messages skipped */
    cmd_message_id_t id = {e->pos.ledger_id, e->pos.entry_id, s->topic->partition, -1};
    qbuf_t *hdr = qbuf_new(256 + words * 11);
    if (!hdr)
        return -ENOMEM;
    size_t hdr_len = 0;
    int rc = cmd_encode_message_header(cons->consumer_id, &id, redelivery, (const int64_t *)ack_set,
                                       words, NULL, 0, e->data->data, e->data->len, hdr->data,
                                       hdr->cap, &hdr_len);
    if (rc < 0) {
        qbuf_unref(hdr);
        return rc;
    }
    hdr->len = (uint32_t)hdr_len;
    conn_t *c = cons->conn;
    if (conn_send_buf(c, hdr, 0, hdr_len) < 0)
        return QE_CLOSED;
    if (conn_send_buf(c, qbuf_ref(e->data), 0, e->data->len) < 0)
        return QE_CLOSED;
    cons->permits -= info->num_messages;
    if (s->cursor) {
        consumer_unacked_put(cons, key, unacked_value(info->num_messages, info->key_hash));
        cons->unacked_messages += (uint64_t)info->num_messages;
    }
    cons->msg_out += (uint64_t)info->num_messages;
    cons->bytes_out += e->data->len;
    if (redelivery > 0) {
        cons->msg_redelivered += (uint64_t)info->num_messages;
        s->msg_redelivered += (uint64_t)info->num_messages;
    }
    avg_update(&cons->avg_msgs_per_entry, info->num_messages);
    avg_update(&s->avg_msgs_per_entry, info->num_messages);
    subscription_traffic_moving(s);
    topic_traffic_moving(s->topic);
    s->msg_out += (uint64_t)info->num_messages;
    s->bytes_out += e->data->len;
    s->topic->msg_out += (uint64_t)info->num_messages;
    s->topic->bytes_out += e->data->len;
    limits_on_dispatch(s, info->num_messages, e->data->len);
    return 0;
}

/* Hands one entry to a consumer, or to the replay set. Returns true if sent. */
static bool dispatch_entry(subscription_t *s, const ml_entry_t *e, bool from_replay)
{
    bool key_shared = s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
    entry_info_t info;
    if (s->cursor && ml_cursor_is_acked(s->cursor, e->pos) &&
        !compaction_entry_pending(s, e->pos)) {
        if (from_replay)
            subscription_replay_remove(s, e->pos);
        return false;
    }
    entry_info_read(e, &info);
    if (!from_replay && info.deliver_at > 0 &&
        delayed_hold(s, e->pos, info.deliver_at, info.key_hash))
        return false; /* held until deliver_at_time (delayed.c) */
    consumer_t *cons = NULL;
    if (!(key_shared && !from_replay && qmap64_get(s->replay_hashes, info.key_hash)))
        cons = choose_consumer(s, &info, e->pos);
    if (cons && send_entry(s, cons, e, &info) == 0) {
        if (from_replay)
            subscription_replay_remove(s, e->pos);
        return true;
    }
    if (!from_replay)
        subscription_replay_add(s, e->pos, info.key_hash);
    return false;
}

/* -------------------------------------------------------------- reading -- */

static void read_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    subscription_dispatch(w->data);
}

/* A failed read is tried again after a back-off, as Pulsar's dispatchers do
 * (readFailureBackoff: dispatcherReadFailureBackoffInitialTimeInMs, doubling up
 * to ...MaxTimeInMs); when the bookie only refused it for load (QE_BUSY: its
 * bound on pending reads), after READ_BUSY_RETRY_MS doubling up to
 * READ_BUSY_RETRY_MAX_MS, since waiting 15 s for a queue to drain would stall
 * the subscription for nothing. Any other event still dispatches at once, and
 * a read that succeeds resets the back-off. (Until 2026-12-01 only the next
 * event retried: a subscription whose consumers had permits and nothing
 * unacknowledged, with no new entries coming, waited for ever.) */
#define READ_BUSY_RETRY_MS 10u
#define READ_BUSY_RETRY_MAX_MS 1000u

static void read_retry_arm(subscription_t *s, int rc)
{
    const broker_config_t *cfg = &s->topic->broker->cfg;
    bool busy = rc == QE_BUSY;
    uint64_t ms = busy ? READ_BUSY_RETRY_MS : cfg->read_failure_backoff_ms;
    uint64_t max = busy ? READ_BUSY_RETRY_MAX_MS : cfg->read_failure_backoff_max_ms;
    for (uint32_t i = 0; i < s->read_failures && ms < max; i++)
        ms *= 2;
    if (ms > max)
        ms = max;
    if (s->read_failures < UINT32_MAX)
        s->read_failures++;
    if (busy)
        log_debug("dispatch", "%s / %s: read failed: %s; again in %llu ms", s->topic->name, s->name,
                  q_strerror(rc), (unsigned long long)ms);
    else
        log_error("dispatch", "%s / %s: read failed: %s; again in %llu ms", s->topic->name, s->name,
                  q_strerror(rc), (unsigned long long)ms);
    struct ev_loop *loop = s->topic->broker->loop;
    if (ev_is_active(&s->read_retry))
        return; /* one retry pending is enough */
    ev_timer_init(&s->read_retry, read_retry_cb, (double)ms / 1000.0, 0.);
    s->read_retry.data = s;
    ev_timer_start(loop, &s->read_retry);
}

static void read_done(int rc, const ml_entry_t *entries, size_t n, void *arg, bool replay)
{
    subscription_t *s = arg;
    bool stale = replay && s->replay_read_stale;
    s->reading = false;
    s->replay_reading = s->replay_read_stale = false;
    s->topic->busy--;
    if (s->closing) {
        subscription_free(s);
        return;
    }
    if (rc < 0) {
        read_retry_arm(s, rc);
        return;
    }
    s->read_failures = 0;
    if (stale) { /* its entries are still in the set, behind the ones that came back */
        dispatch_continue(s);
        return;
    }
    size_t sent = 0;
    for (size_t i = 0; i < n; i++)
        sent += dispatch_entry(s, &entries[i], replay);
    if (replay && sent == 0)
        s->replay_stalled = true;
    if (n > 0)
        dispatch_continue(s);
}

static void replay_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    read_done(rc, entries, n, arg, true);
}

static void cursor_read_done(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    read_done(rc, entries, n, arg, false);
}

static int64_t permits_available(const subscription_t *s)
{
    int64_t total = 0;
    for (size_t i = 0; i < s->consumers_count; i++)
        if (consumer_can_take(s->consumers[i]))
            total += s->consumers[i]->permits;
    return total;
}

/* The run of consecutive entries at the head of the replay set. */
static size_t replay_run(const subscription_t *s, size_t max)
{
    size_t n = 1;
    while (n < s->replay_count && n < max && s->replay[n].ledger_id == s->replay[0].ledger_id &&
           s->replay[n].entry_id == s->replay[n - 1].entry_id + 1)
        n++;
    return n;
}

static void dispatch_continue(subscription_t *s)
{
    if (!s->cursor || s->reading || s->opening || s->closing || s->consumers_count == 0)
        return;
    int64_t permits = permits_available(s);
    if (permits <= 0)
        return;
    /* Permits count messages, reads count entries: with batches, the permits
     * cover fewer entries than messages (Pulsar's preciseDispatcherFlowControl).
     * Entries read beyond what the consumers can take would only be held in the
     * replay set and read again. */
    int64_t entries = permits;
    if (s->avg_msgs_per_entry > 1.0) {
        entries = (int64_t)((double)permits / s->avg_msgs_per_entry);
        if ((double)entries * s->avg_msgs_per_entry < (double)permits)
            entries++; /* rounded up: the last entry may fill the permits */
    }
    size_t max = s->topic->broker->cfg.dispatcher_max_read_batch;
    if ((int64_t)max > entries)
        max = (size_t)entries;
    size_t max_bytes = s->topic->broker->cfg.dispatcher_max_read_bytes;
    if (!limits_dispatch_allowance(s, &max, &max_bytes))
        return;             /* rate or unacked limit: a timer or an ack dispatches again */
    delayed_release_due(s); /* due delayed entries join the replay set */
    int rc;
    s->reading = true;
    s->topic->busy++;
    if (s->replay_count > 0 && !s->replay_stalled) {
        s->replay_reading = true;
        s->replay_read_from = s->replay[0];
        /* compacted positions from the compacted ledger (compaction.c), else ml_read */
        rc = compaction_replay_read(s, replay_run(s, max), max_bytes, replay_read_done);
    } else if (s->replay_count < REPLAY_MAX && !delayed_full(s) && compaction_covers(s)) {
        rc = compaction_cursor_read(s, max, cursor_read_done); /* read_compacted (compaction.c) */
    } else if (s->replay_count < REPLAY_MAX && !delayed_full(s) && ml_cursor_has_more(s->cursor)) {
        rc = ml_cursor_read(s->cursor, max, max_bytes, cursor_read_done, s);
    } else {
        rc = 1;
    }
    if (rc != 0) {
        s->reading = false;
        s->replay_reading = false;
        s->topic->busy--;
        if (rc > 0)
            termination_check_end(s); /* terminated and all read: REACHED_END_OF_TOPIC */
        if (rc < 0)
            read_retry_arm(s, rc);
    }
}

void subscription_dispatch(subscription_t *s)
{
    s->replay_stalled = false; /* something changed: held entries may go now */
    dispatch_continue(s);
}

void subscription_free(subscription_t *s)
{
    if (s->reading) {
        s->closing = true; /* freed when the read completes */
        return;
    }
    limits_subscription_free(s);
    delayed_free(s);
    compaction_sub_free(s);
    ev_timer_stop(s->topic->broker->loop, &s->orphan_timer);
    ev_timer_stop(s->topic->broker->loop, &s->read_retry);
    if (s->cursor)
        ml_cursor_close(s->cursor, broker_ignore_done, NULL);
    free(s->replay);
    free(s->replay_keys);
    free(s->consumers);
    free(s->ring);
    qmap64_free(s->redelivery_counts);
    qmap64_free(s->replay_hashes);
    qmap64_free(s->draining);
    free(s->meta_json);
    free(s->name);
    free(s);
}

/* ---------------------------------------------------------- non-persistent -- */

void topic_publish_non_persistent(topic_t *t, qbuf_t *entry, int32_t num_messages)
{
    (void)num_messages;
    ml_entry_t e = {{0, t->non_persistent_seq++}, entry};
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(t->subscriptions, &it, NULL, &v)) {
        subscription_t *s = v;
        entry_info_t info;
        entry_info_read(&e, &info);
        consumer_t *cons = choose_consumer(s, &info, e.pos);
        if (cons)
            send_entry(s, cons, &e, &info);
        /* else dropped: non-persistent topics keep nothing */
    }
}
