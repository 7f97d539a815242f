/*
 * dedup.c — message deduplication (see dedup.h for the rules), and the gate
 * every SEND to a persistent topic passes (termination, duplicates).
 *
 * State machine of a topic's deduplication:
 *   (none) --load or policy on--> ENABLED --policy off--> (none)
 * Loading with the policy on recovers first (snapshot, then replay of the log
 * after it); the topic is ready only afterwards, so no SEND is checked against
 * a partial state. Turning it on at run time starts empty at the end of the
 * log (as Pulsar opens its dedup cursor there).
 *
 * Snapshot document (metadata store, DEDUP_MD_ROOT + managed-ledger name):
 *   {"ledgerId": L, "entryId": E,          position P: every entry <= P is
 *    "producers": {"name": seq, ...}}      reflected in `persisted`
 * Writes are fire-and-forget with self-contained contexts: the metadata
 * store applies calls in order and completes queued ones before it closes,
 * so a topic may close (and free this state) with a write in flight.
 */
#include "server/dedup.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/codec/frame.h"
#include "server/ns_policies.h"
#include "server/termination.h"

#define DEDUP_NAME_MAX 1024                 /* longer producer names are not tracked */
#define DEDUP_SNAPSHOT_BYTES_MAX (3u << 20) /* below the metadata store's value bound */
#define DEDUP_REPLAY_BATCH 100

typedef struct dedup_entry {
    int64_t pushed;    /* highest sequence id appended */
    int64_t persisted; /* highest sequence id durable */
    uint64_t used;     /* LRU clock of the last SEND */
} dedup_entry_t;

typedef struct dedup_state {
    topic_t *topic;
    bool enabled;
    qmap_t *names; /* producer name -> dedup_entry_t */
    uint64_t clock;
    ml_pos_t last_pos; /* entries <= last_pos are reflected in `persisted` */
    bool dirty;        /* changed since the last snapshot */
    uint32_t since_snapshot;
    ev_timer timer;
    bool timer_on;
    /* recovery at load */
    void (*load_done)(topic_t *t, int rc);
    ml_pos_t replay_from, replay_end;
    uint64_t replayed;
} dedup_state_t;

/* ------------------------------------------------------------- config -- */

int dedup_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len)
{
    static const struct {
        const char *key;
        int64_t def, min, max;
    } keys[] = {
        {"brokerDeduplicationMaxNumberOfProducers", 10000, 1, 1000000},
        {"brokerDeduplicationEntriesInterval", 1000, 1, INT32_MAX},
        {"brokerDeduplicationSnapshotIntervalSeconds", 120, 1, 86400},
    };
    int64_t v[3];
    for (size_t i = 0; i < 3; i++) {
        if (qconfig_get_int(q, keys[i].key, keys[i].def, keys[i].min, keys[i].max, &v[i]) < 0) {
            snprintf(err, err_len, "%s: expected a whole number in [%lld, %lld], got '%s'",
                     keys[i].key, (long long)keys[i].min, (long long)keys[i].max,
                     qconfig_get(q, keys[i].key, ""));
            return QE_INVALID;
        }
    }
    if (qconfig_get_bool(q, "brokerDeduplicationEnabled", false, &cfg->dedup_enabled) < 0) {
        snprintf(err, err_len, "brokerDeduplicationEnabled: expected true or false, got '%s'",
                 qconfig_get(q, "brokerDeduplicationEnabled", ""));
        return QE_INVALID;
    }
    cfg->dedup_max_producers = (uint32_t)v[0];
    cfg->dedup_entries_interval = (uint32_t)v[1];
    cfg->dedup_snapshot_interval_s = (uint32_t)v[2];
    return 0;
}

/* -------------------------------------------------------------- state -- */

static bool policy_enabled(const topic_t *t, const ns_policies_t *p)
{
    return p->deduplication == 1 || (p->deduplication < 0 && t->broker->cfg.dedup_enabled);
}

static const ns_policies_t *topic_policies(topic_t *t)
{
    topic_name_t tn;
    int rc = topic_name_parse(t->name, &tn);
    assert(rc == 0);
    return broker_ns_policies(t->broker, tn.namespace_name);
}

static void state_free(dedup_state_t *d)
{
    if (d->timer_on)
        ev_timer_stop(d->topic->broker->loop, &d->timer);
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(d->names, &it, NULL, &v))
        free(v);
    qmap_free(d->names);
    free(d);
}

static void snapshot_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

static dedup_state_t *state_new(topic_t *t)
{
    dedup_state_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->topic = t;
    d->names = qmap_new();
    if (!d->names) {
        free(d);
        return NULL;
    }
    d->last_pos = ML_POS_EARLIEST;
    double every =
        t->broker->cfg.dedup_snapshot_interval_s ? t->broker->cfg.dedup_snapshot_interval_s : 120;
    ev_timer_init(&d->timer, snapshot_timer_cb, every, every);
    d->timer.data = d;
    return d;
}

static void timer_start(dedup_state_t *d)
{
    if (!d->timer_on) {
        ev_timer_start(d->topic->broker->loop, &d->timer);
        d->timer_on = true;
    }
}

/* Forgets the least recently used name with nothing in flight. */
static void evict_one(dedup_state_t *d)
{
    qmap_iter_t it = {0};
    const char *key, *victim = NULL;
    void *v;
    uint64_t oldest = UINT64_MAX;
    while (qmap_next(d->names, &it, &key, &v)) {
        dedup_entry_t *e = v;
        if (e->pushed == e->persisted && e->used < oldest) {
            oldest = e->used;
            victim = key;
        }
    }
    if (victim)
        free(qmap_remove(d->names, victim));
}

/* The entry of name, created (pushed = persisted = -1) if absent; NULL when
 * the name is not tracked (too long, out of memory, no room). */
static dedup_entry_t *entry_get(dedup_state_t *d, const char *name, bool create)
{
    dedup_entry_t *e = qmap_get(d->names, name);
    if (e || !create || strlen(name) > DEDUP_NAME_MAX)
        return e;
    if (qmap_size(d->names) >= d->topic->broker->cfg.dedup_max_producers)
        evict_one(d);
    if (qmap_size(d->names) >= d->topic->broker->cfg.dedup_max_producers)
        return NULL;
    e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->pushed = e->persisted = -1;
    if (qmap_put(d->names, name, e) < 0) {
        free(e);
        return NULL;
    }
    return e;
}

static void entry_record(dedup_state_t *d, const char *name, int64_t seq)
{
    dedup_entry_t *e = entry_get(d, name, true);
    if (!e)
        return;
    if (seq > e->persisted)
        e->persisted = seq;
    if (e->persisted > e->pushed)
        e->pushed = e->persisted;
    e->used = ++d->clock;
}

/* ----------------------------------------------------------- snapshots -- */

static char *snapshot_path(const topic_t *t)
{
    char *p = NULL;
    if (asprintf(&p, DEDUP_MD_ROOT "%s", ml_name(t->ml)) < 0)
        return NULL;
    return p;
}

static char *snapshot_encode(const dedup_state_t *d, size_t *len)
{
    json_t *producers = json_object();
    json_t *root = json_pack("{sIsIso}", "ledgerId", (json_int_t)d->last_pos.ledger_id, "entryId",
                             (json_int_t)d->last_pos.entry_id, "producers", producers);
    if (!root)
        return NULL;
    size_t bytes = 64;
    qmap_iter_t it = {0};
    const char *key;
    void *v;
    while (qmap_next(d->names, &it, &key, &v)) {
        const dedup_entry_t *e = v;
        bytes += strlen(key) + 32;
        if (bytes > DEDUP_SNAPSHOT_BYTES_MAX)
            break;
        if (e->persisted >= 0)
            json_object_set_new(producers, key, json_integer(e->persisted));
    }
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (s)
        *len = strlen(s);
    return s;
}

typedef struct snap_ctx {
    topic_t *topic; /* only when chained (topic->busy held) */
    char *path;
    bool chain; /* then set the marker property */
} snap_ctx_t;

static void load_finish(dedup_state_t *d);

static void marker_set(int rc, void *arg)
{
    topic_t *t = arg;
    t->busy--;
    if (rc < 0)
        log_warn("dedup", "%s: cannot record the snapshot marker: %s", t->name, q_strerror(rc));
    dedup_state_t *d = t->dedup;
    if ((!d || !d->enabled) && t->ml && t->state != TOPIC_CLOSING)
        ml_set_property(t->ml, DEDUP_PROP_MARKER, NULL, broker_ignore_done, NULL);
    if (d && d->load_done)
        load_finish(d);
}

static void snapshot_written(int rc, const md_stat_t *st, void *arg)
{
    (void)st;
    snap_ctx_t *sc = arg;
    if (rc < 0)
        log_warn("dedup", "%s: snapshot write failed: %s", sc->path, q_strerror(rc));
    if (sc->chain) {
        topic_t *t = sc->topic;
        int r = QE_CLOSED;
        if (rc == 0 && t->ml && t->state != TOPIC_CLOSING)
            r = ml_set_property(t->ml, DEDUP_PROP_MARKER, "1", marker_set, t);
        if (r < 0)
            marker_set(rc < 0 ? rc : r, t);
    }
    free(sc->path);
    free(sc);
}

/* Writes the state now. chain: hold the topic and set the marker once the
 * snapshot is durable (then finish a pending load). */
static int snapshot_write(dedup_state_t *d, bool chain)
{
    topic_t *t = d->topic;
    snap_ctx_t *sc = calloc(1, sizeof *sc);
    size_t len = 0;
    char *doc = snapshot_encode(d, &len);
    if (sc)
        sc->path = snapshot_path(t);
    if (!sc || !doc || !sc->path) {
        if (sc)
            free(sc->path);
        free(sc);
        free(doc);
        return -ENOMEM;
    }
    sc->chain = chain;
    sc->topic = chain ? t : NULL;
    if (chain)
        t->busy++;
    int rc = md_put(t->broker->md, sc->path, doc, len, MD_VERSION_ANY, NULL, snapshot_written, sc);
    free(doc);
    if (rc < 0) {
        if (chain)
            t->busy--;
        free(sc->path);
        free(sc);
        return rc;
    }
    d->dirty = false;
    d->since_snapshot = 0;
    return 0;
}

static void snapshot_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    dedup_state_t *d = w->data;
    if (d->enabled && d->dirty && d->topic->ml)
        snapshot_write(d, false);
}

/* Drops the persisted state of t: marker first, then the key. */
static void persisted_forget(topic_t *t)
{
    if (!t->ml)
        return;
    if (ml_get_property(t->ml, DEDUP_PROP_MARKER))
        ml_set_property(t->ml, DEDUP_PROP_MARKER, NULL, broker_ignore_done, NULL);
    char *path = snapshot_path(t);
    if (path && md_delete(t->broker->md, path, MD_VERSION_ANY, broker_ignore_done, NULL) < 0)
        log_warn("dedup", "%s: cannot delete the snapshot", t->name);
    free(path);
}

/* ------------------------------------------------------------ recovery -- */

static void load_finish(dedup_state_t *d)
{
    topic_t *t = d->topic;
    void (*done)(topic_t *, int) = d->load_done;
    d->load_done = NULL;
    t->busy--;
    timer_start(d);
    log_info("dedup", "%s: deduplication enabled (%zu producers, %llu entries replayed)", t->name,
             qmap_size(d->names), (unsigned long long)d->replayed);
    done(t, 0);
}

static void replay_apply(dedup_state_t *d, const ml_entry_t *e)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(e->data->data, e->data->len, &md, &off) < 0) {
        log_warn("dedup", "%s: entry %lld:%lld has unreadable metadata", d->topic->name,
                 (long long)e->pos.ledger_id, (long long)e->pos.entry_id);
        return;
    }
    if (md->producer_name && md->producer_name[0]) {
        int64_t seq = (int64_t)md->sequence_id;
        if (md->has_highest_sequence_id && (int64_t)md->highest_sequence_id > seq)
            seq = (int64_t)md->highest_sequence_id;
        entry_record(d, md->producer_name, seq);
    }
    frame_metadata_free(md);
    d->last_pos = e->pos;
    d->replayed++;
}

static void replay_step(dedup_state_t *d);

static void replay_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    dedup_state_t *d = arg;
    if (rc < 0)
        log_error("dedup", "%s: replay read failed: %s; continuing with what was read",
                  d->topic->name, q_strerror(rc));
    if (rc < 0 || n == 0) {
        load_finish(d);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (ml_pos_cmp(entries[i].pos, d->replay_end) <= 0)
            replay_apply(d, &entries[i]);
    d->replay_from = ml_next_position(d->topic->ml, entries[n - 1].pos);
    replay_step(d);
}

static void replay_step(dedup_state_t *d)
{
    if (ml_pos_cmp(d->replay_from, d->replay_end) > 0) {
        d->dirty = d->replayed > 0;
        load_finish(d);
        return;
    }
    int rc = ml_read(d->topic->ml, d->replay_from, DEDUP_REPLAY_BATCH, 4u << 20, replay_read, d);
    if (rc < 0) {
        log_error("dedup", "%s: cannot replay: %s", d->topic->name, q_strerror(rc));
        load_finish(d);
    }
}

/* Fills the state from a snapshot document; the replay starts after it. */
static void snapshot_parse(dedup_state_t *d, const void *value, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(value, len, 0, &jerr);
    json_t *producers = json_object_get(root, "producers");
    json_t *l = json_object_get(root, "ledgerId"), *e = json_object_get(root, "entryId");
    if (!json_is_object(producers) || !json_is_integer(l) || !json_is_integer(e)) {
        log_warn("dedup", "%s: unreadable snapshot; replaying the whole log", d->topic->name);
        json_decref(root);
        return;
    }
    const char *name;
    json_t *seq;
    json_object_foreach(producers, name, seq)
    {
        if (json_is_integer(seq))
            entry_record(d, name, (int64_t)json_integer_value(seq));
    }
    d->last_pos = (ml_pos_t){(int64_t)json_integer_value(l), (int64_t)json_integer_value(e)};
    json_decref(root);
}

static void snapshot_got(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    dedup_state_t *d = arg;
    managed_ledger_t *ml = d->topic->ml;
    if (rc == 0)
        snapshot_parse(d, value, len);
    else if (rc != QE_NOT_FOUND)
        log_warn("dedup", "%s: cannot read the snapshot (%s); replaying the whole log",
                 d->topic->name, q_strerror(rc));
    ml_pos_t first = ml_first_position(ml);
    d->replay_from = ml_next_position(ml, d->last_pos);
    if (ml_pos_cmp(d->replay_from, first) < 0)
        d->replay_from = first;
    d->replay_end = ml_last_confirmed(ml);
    replay_step(d);
}

int dedup_topic_load(topic_t *t, void (*done)(topic_t *t, int rc))
{
    if (!t->ml)
        return 1;
    bool on = policy_enabled(t, topic_policies(t));
    const char *marker = ml_get_property(t->ml, DEDUP_PROP_MARKER);
    if (!on) {
        if (marker)
            persisted_forget(t);
        return 1;
    }
    dedup_state_t *d = state_new(t);
    if (!d) {
        log_error("dedup", "%s: out of memory; deduplication off", t->name);
        return 1;
    }
    t->dedup = d;
    d->enabled = true;
    d->load_done = done;
    t->busy++;
    int rc;
    if (!marker) {
        /* First enabled on this log: empty, from its end; durable before use. */
        d->last_pos = ml_last_confirmed(t->ml);
        rc = snapshot_write(d, true);
        if (rc == 0)
            return 0; /* marker_set finishes the load */
    } else {
        char *path = snapshot_path(t);
        rc = path ? md_get(t->broker->md, path, snapshot_got, d) : -ENOMEM;
        free(path);
        if (rc == 0)
            return 0;
    }
    log_error("dedup", "%s: cannot recover: %s", t->name, q_strerror(rc));
    d->load_done = NULL;
    t->busy--;
    timer_start(d);
    return 1;
}

void dedup_policies_changed(topic_t *t, const ns_policies_t *p)
{
    if (!t->ml || t->state != TOPIC_READY)
        return;
    bool on = policy_enabled(t, p);
    dedup_state_t *d = t->dedup;
    if (on && !d) {
        d = state_new(t);
        if (!d) {
            log_error("dedup", "%s: out of memory; deduplication off", t->name);
            return;
        }
        t->dedup = d;
        d->enabled = true;
        d->last_pos = ml_last_confirmed(t->ml);
        timer_start(d);
        if (snapshot_write(d, true) < 0)
            log_warn("dedup", "%s: cannot write the first snapshot", t->name);
        log_info("dedup", "%s: deduplication enabled", t->name);
    } else if (!on && d && !d->load_done) {
        t->dedup = NULL;
        state_free(d);
        persisted_forget(t);
        log_info("dedup", "%s: deduplication disabled", t->name);
    }
}

void dedup_topic_close(topic_t *t)
{
    dedup_state_t *d = t->dedup;
    if (!d)
        return;
    if (d->enabled && d->dirty && t->ml)
        snapshot_write(d, false);
    t->dedup = NULL;
    state_free(d);
}

bool dedup_is_enabled(const topic_t *t)
{
    return t->dedup && t->dedup->enabled;
}

int64_t dedup_last_sequence_id(topic_t *t, const char *name)
{
    if (!dedup_is_enabled(t))
        return -1;
    const dedup_entry_t *e = entry_get(t->dedup, name, false);
    return e ? e->persisted : -1;
}

/* ------------------------------------------------------------ the gate -- */

static void gate_receipt(conn_t *c, const Pulsar__Proto__CommandSend *cmd, uint64_t highest)
{
    Pulsar__Proto__MessageIdData id = PULSAR__PROTO__MESSAGE_ID_DATA__INIT;
    id.ledgerid = UINT64_MAX; /* (-1, -1): already stored */
    id.entryid = UINT64_MAX;
    Pulsar__Proto__CommandSendReceipt r = PULSAR__PROTO__COMMAND_SEND_RECEIPT__INIT;
    r.producer_id = cmd->producer_id;
    r.sequence_id = cmd->sequence_id;
    r.has_highest_sequence_id = true;
    r.highest_sequence_id = highest;
    r.message_id = &id;
    pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
    out.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT;
    out.send_receipt = &r;
    conn_send_command(c, &out);
}

static void gate_error(conn_t *c, const Pulsar__Proto__CommandSend *cmd, uint64_t highest,
                       pb_error_t err, const char *why)
{
    Pulsar__Proto__CommandSendError e = PULSAR__PROTO__COMMAND_SEND_ERROR__INIT;
    e.producer_id = cmd->producer_id;
    e.sequence_id = highest; /* as Pulsar: max(sequence id, highest sequence id) */
    e.error = err;
    e.message = (char *)why;
    pb_command_t out = PULSAR__PROTO__BASE_COMMAND__INIT;
    out.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR;
    out.send_error = &e;
    conn_send_command(c, &out);
}

/* A chunk other than the last of its message is not checked (its chunks
 * share one sequence id; the last one decides). */
static bool is_leading_chunk(const Pulsar__Proto__CommandSend *cmd, const uint8_t *stored,
                             size_t len)
{
    if (!cmd->has_is_chunk || !cmd->is_chunk)
        return false;
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(stored, len, &md, &off) < 0)
        return false;
    bool leading = md->has_chunk_id && md->has_num_chunks_from_msg &&
                   md->chunk_id + 1 < md->num_chunks_from_msg;
    frame_metadata_free(md);
    return leading;
}

int broker_send_gate(conn_t *c, producer_t *p, const Pulsar__Proto__CommandSend *cmd,
                     const uint8_t *stored, size_t stored_len, char **dedup_name)
{
    topic_t *t = p->topic;
    *dedup_name = NULL;
    if (!t->ml)
        return 0;
    uint64_t highest = cmd->has_highest_sequence_id && cmd->highest_sequence_id > cmd->sequence_id
                           ? cmd->highest_sequence_id
                           : cmd->sequence_id;
    if (t->terminated) {
        gate_error(c, cmd, highest, PULSAR__PROTO__SERVER_ERROR__TopicTerminatedError,
                   "Topic was already terminated");
        return 1;
    }
    dedup_state_t *d = t->dedup;
    if (d && d->enabled && !is_leading_chunk(cmd, stored, stored_len)) {
        int64_t seq = (int64_t)cmd->sequence_id;
        dedup_entry_t *e = entry_get(d, p->name, true);
        if (e && seq <= e->pushed) {
            e->used = ++d->clock;
            if (seq <= e->persisted) {
                gate_receipt(c, cmd, highest);
            } else {
                gate_error(c, cmd, highest, PULSAR__PROTO__SERVER_ERROR__PersistenceError,
                           "Cannot determine whether the message is a duplicate at this time");
            }
            return 1;
        }
        if (e) {
            e->pushed = (int64_t)highest;
            e->used = ++d->clock;
            *dedup_name = strdup(p->name);
        }
    }
    t->adds_pending++;
    return 0;
}

void broker_send_persisted(topic_t *t, const char *dedup_name, uint64_t highest, ml_pos_t pos)
{
    dedup_state_t *d = t->dedup;
    if (!d || !d->enabled || !dedup_name)
        return;
    entry_record(d, dedup_name, (int64_t)highest);
    d->last_pos = pos;
    d->dirty = true;
    if (++d->since_snapshot >= t->broker->cfg.dedup_entries_interval)
        snapshot_write(d, false);
}

void broker_send_failed(topic_t *t)
{
    dedup_state_t *d = t->dedup;
    if (!d)
        return;
    /* What was pushed may not be stored: only the durable ids count again. */
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(d->names, &it, NULL, &v)) {
        dedup_entry_t *e = v;
        e->pushed = e->persisted;
    }
}

void broker_send_released(topic_t *t, char *dedup_name)
{
    free(dedup_name);
    if (!t->ml)
        return;
    assert(t->adds_pending > 0);
    t->adds_pending--;
    if (t->adds_pending == 0 && t->terminating)
        termination_adds_drained(t);
}
