/*
 * compaction.c — topic compaction and the compacted view read_compacted
 * subscriptions see (Pulsar's TwoPhaseCompactor, RawBatchConverter and
 * CompactedTopicImpl, read from their sources).
 *
 * DESIGN
 *
 * A run (one per topic at a time) goes through
 *   phase 1  read the input, remember key -> (position, batch index) of the
 *            latest message of each key; a tombstone (null_value or empty
 *            payload) forgets its key; messages without a key are dropped
 *            (Pulsar's topicCompactionRetainNullKey=false default);
 *   phase 2  create a ledger, read the input again and append every entry
 *            holding a latest message: unchanged when all its messages are
 *            latest, else re-encoded uncompressed with the others marked
 *            compacted_out and emptied (batch indexes, and so message ids,
 *            stay the originals);
 *   commit   close the ledger, store COMPACTION_PROPERTY = "ledger:hL:hE"
 *            (durable when ml_set_property completes), install the new view,
 *            move the "__compaction" cursor to the horizon, and let the old
 *            compacted ledger be deleted once no read uses it.
 * The input is the previous compacted view followed by the topic's entries
 * after its horizon up to the last entry when the run started (the new
 * horizon). Memory: one map entry per live key (bounded by
 * COMPACTION_KEYS_MAX, else the run fails), one 16-byte index slot per
 * compacted entry; reads are chunked, appends wait for the previous chunk's.
 *
 * Compacted ledger entry (one per surviving entry, in position order):
 *
 *   | offset | size | meaning                                        |
 *   |--------|------|------------------------------------------------|
 *   | 0      | 2    | magic 0x0c01                                   |
 *   | 2      | 8    | original ledger id, big-endian                 |
 *   | 10     | 8    | original entry id, big-endian                  |
 *   | 18     | rest | the stored slice as dispatched (frame.h)       |
 *
 * The view (cview_t) of a topic is its compacted ledger open for reading
 * with an in-memory index of original positions (entry i of the ledger has
 * position index[i]), read once when the topic loads. Reads hold a
 * reference, so a view replaced by a newer run stays readable until its
 * last read completes; then its ledger is deleted.
 *
 * Reading compacted: each read_compacted subscription keeps `next`, the
 * original position its compacted reads continue from (earliest when its
 * cursor starts at the topic's first entry, so entries of ledgers trimmed
 * since compaction are still seen). While the view holds an entry at or
 * after `next` the dispatcher reads from it; then the cursor is moved past
 * the horizon and the topic is read as usual. Compacted batches go out with
 * an ack_set that marks their compacted-out messages as acknowledged, which
 * every client skips (the C++ and Python clients do not know compacted_out).
 *
 * Acknowledging compacted (durable subscriptions): clients never acknowledge
 * the messages they skipped, so when a compacted batch is dispatched its
 * compacted-out messages are recorded as acknowledged (the cursor's
 * batch-index bitset of the entry, or `trimmed` for an entry of a ledger
 * trimmed since compaction, which the cursor cannot hold: compaction_acks.c).
 * After acknowledgements, `prefix` counts the view's leading entries known
 * acknowledged; the cursor's mark-delete position moves to the last of them
 * (the horizon once the whole view is), over the entries compaction removed
 * and nobody will acknowledge: the progress that survives a restart.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "server/batch_codec.h"
#include "server/broker_admin.h"
#include "server/codec/frame.h"
#include "server/compaction.h"
#include "server/compaction_acks.h"
#include "server/ns_policies.h"

#define CENTRY_MAGIC 0x0c01u
#define CENTRY_HEADER_BYTES 18u
#define COMPACTION_KEYS_MAX 4000000u
#define RUN_READ_ENTRIES 100u
#define RUN_READ_BYTES (4u << 20)
#define VIEW_READ_ENTRIES 64u
/* The longest batch-index bitset a cursor records (storage/managed's
 * ML_ACK_SET_WORDS_MAX): masks of larger batches are not pre-recorded. */
#define CURSOR_ACK_SET_WORDS_MAX 128u

enum { CV_LOADING = 0, CV_READY = 1, CV_FAILED = 2 };

typedef struct cview {
    int refs;
    broker_t *broker;
    char *topic; /* full name, to find the topic again when loaded */
    int64_t ledger_id;
    ml_pos_t horizon;
    ledger_t *lh; /* read handle; NULL until open */
    int state;
    bool indexed; /* index built (by the run that wrote it, or by the load) */
    ml_pos_t *index;
    size_t n, cap;
    int32_t last_batch_index; /* of the last entry: last retained index, -1 if not a batch */
    bool delete_on_free;
} cview_t;

typedef struct crun crun_t;

typedef struct compaction_state {
    topic_t *topic;
    cview_t *view; /* NULL: never compacted */
    int status;    /* BROKER_COMPACTION_* */
    char last_error[256];
    crun_t *run;
} compaction_state_t;

struct compaction_sub {
    ml_pos_t next;       /* next original position to read from the view */
    bool done;           /* past the view: the cursor reads the topic */
    bool from_start;     /* reads the view from its beginning, trimmed ledgers included */
    bool rewound;        /* the cursor was reset: start again at the next read */
    cacks_t *trimmed;    /* acknowledgements of view entries in trimmed ledgers */
    int64_t prefix_view; /* ledger of the view `prefix` counts in */
    size_t prefix;       /* leading view entries known acknowledged */
    uint64_t *mask;      /* the last ack_set compaction_ack_set built (owned) */
};

static ledger_client_t *lc_of(const topic_t *t)
{
    return ml_factory_ledger_client(t->broker->mlf);
}

/* --------------------------------------------------------- entry format -- */

static void wr64(uint8_t *p, int64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

static int64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

static qbuf_t *centry_encode(ml_pos_t pos, const uint8_t *stored, size_t len)
{
    qbuf_t *q = qbuf_new(CENTRY_HEADER_BYTES + len);
    if (!q)
        return NULL;
    q->data[0] = CENTRY_MAGIC >> 8;
    q->data[1] = CENTRY_MAGIC & 0xff;
    wr64(q->data + 2, pos.ledger_id);
    wr64(q->data + 10, pos.entry_id);
    memcpy(q->data + CENTRY_HEADER_BYTES, stored, len);
    q->len = (uint32_t)(CENTRY_HEADER_BYTES + len);
    return q;
}

static int centry_decode(const qbuf_t *q, ml_pos_t *pos, const uint8_t **stored, size_t *len)
{
    if (q->len <= CENTRY_HEADER_BYTES || q->data[0] != (CENTRY_MAGIC >> 8) ||
        q->data[1] != (CENTRY_MAGIC & 0xff))
        return QE_CORRUPT;
    *pos = (ml_pos_t){rd64(q->data + 2), rd64(q->data + 10)};
    *stored = q->data + CENTRY_HEADER_BYTES;
    *len = q->len - CENTRY_HEADER_BYTES;
    return 0;
}

/* The batch index of the last message a compacted entry delivers (-1 when
 * it is not a batch). */
static int32_t stored_last_index(const uint8_t *stored, size_t len)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off;
    if (frame_parse_metadata(stored, len, &md, &off) < 0)
        return -1;
    int32_t n = md->has_num_messages_in_batch ? md->num_messages_in_batch : 0;
    frame_metadata_free(md);
    if (n < 1)
        return -1;
    uint64_t *words;
    size_t k = batch_retained_mask(stored, len, &words);
    int32_t last = n - 1; /* no mask: every message is delivered */
    for (size_t i = k * 64; i-- > 0;) {
        if (words[i / 64] >> (i % 64) & 1) {
            last = (int32_t)i;
            break;
        }
    }
    free(words);
    return last;
}

/* ---------------------------------------------------------------- views -- */

static void view_deleted(int rc, void *arg)
{
    int64_t id = (int64_t)(intptr_t)arg;
    if (rc < 0 && rc != QE_NO_LEDGER)
        log_warn("compaction", "cannot delete compacted ledger %lld: %s", (long long)id,
                 q_strerror(rc));
}

static void cview_unref(cview_t *v)
{
    if (!v || --v->refs > 0)
        return;
    if (v->lh)
        ledger_release(v->lh);
    if (v->delete_on_free && v->ledger_id >= 0) {
        ledger_client_t *lc = NULL;
        topic_t *t = broker_topic_find(v->broker, v->topic);
        if (t)
            lc = lc_of(t);
        if (lc && ledger_delete(lc, v->ledger_id, view_deleted, (void *)(intptr_t)v->ledger_id) < 0)
            log_warn("compaction", "%s: compacted ledger %lld left behind", v->topic,
                     (long long)v->ledger_id);
    }
    free(v->index);
    free(v->topic);
    free(v);
}

static cview_t *cview_new(topic_t *t, int64_t ledger_id, ml_pos_t horizon)
{
    cview_t *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->topic = strdup(t->name);
    if (!v->topic) {
        free(v);
        return NULL;
    }
    v->refs = 1;
    v->broker = t->broker;
    v->ledger_id = ledger_id;
    v->horizon = horizon;
    v->last_batch_index = -1;
    return v;
}

static int cview_append(cview_t *v, ml_pos_t pos)
{
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 256;
        ml_pos_t *n = realloc(v->index, ncap * sizeof *n);
        if (!n)
            return -ENOMEM;
        v->index = n;
        v->cap = ncap;
    }
    v->index[v->n++] = pos;
    return 0;
}

/* First index slot whose position is >= pos. */
static size_t cview_lower_bound(const cview_t *v, ml_pos_t pos)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ml_pos_cmp(v->index[mid], pos) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The view is usable (or failed): dispatch the topic's read_compacted
 * subscriptions that waited for it. */
static void cview_settled(cview_t *v, int state)
{
    v->state = state;
    topic_t *t = broker_topic_find(v->broker, v->topic);
    if (!t || !t->compaction || t->compaction->view != v)
        return;
    qmap_iter_t it = {0};
    void *val;
    while (qmap_next(t->subscriptions, &it, NULL, &val)) {
        subscription_t *s = val;
        if (s->compacted)
            subscription_dispatch(s);
    }
}

static void cview_load_chunk(cview_t *v);

static void cview_chunk_read(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    cview_t *v = arg;
    int64_t last = ledger_last_add_confirmed(v->lh);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ml_pos_t pos;
        const uint8_t *stored;
        size_t len;
        rc = centry_decode(entries[i], &pos, &stored, &len);
        if (rc == 0)
            rc = cview_append(v, pos);
        if (rc == 0 && first + (int64_t)i == last)
            v->last_batch_index = stored_last_index(stored, len);
    }
    if (rc < 0 || (n == 0 && first <= last)) {
        log_error("compaction", "%s: cannot read compacted ledger %lld: %s", v->topic,
                  (long long)v->ledger_id, q_strerror(rc < 0 ? rc : QE_NO_ENTRY));
        cview_settled(v, CV_FAILED);
        cview_unref(v);
        return;
    }
    cview_load_chunk(v);
}

static void cview_load_chunk(cview_t *v)
{
    int64_t last = ledger_last_add_confirmed(v->lh);
    int64_t first = (int64_t)v->n;
    if (v->indexed || first > last) {
        v->indexed = true;
        log_info("compaction",
                 "%s: compacted view of ledger %lld ready: %zu entries up to %lld:%lld", v->topic,
                 (long long)v->ledger_id, v->n, (long long)v->horizon.ledger_id,
                 (long long)v->horizon.entry_id);
        cview_settled(v, CV_READY);
        cview_unref(v);
        return;
    }
    int64_t to = first + VIEW_READ_ENTRIES - 1 < last ? first + VIEW_READ_ENTRIES - 1 : last;
    int rc = ledger_read(v->lh, first, to, cview_chunk_read, v);
    if (rc < 0)
        cview_chunk_read(rc, first, NULL, 0, v);
}

static void cview_opened(int rc, ledger_t *l, void *arg)
{
    cview_t *v = arg;
    if (rc < 0) {
        log_error("compaction", "%s: cannot open compacted ledger %lld: %s", v->topic,
                  (long long)v->ledger_id, q_strerror(rc));
        cview_settled(v, CV_FAILED);
        cview_unref(v);
        return;
    }
    v->lh = l;
    cview_load_chunk(v);
}

/* Opens v's ledger for reading (and indexes it unless already indexed);
 * subscriptions waiting on it are dispatched when it settles. */
static void cview_load(topic_t *t, cview_t *v)
{
    v->state = CV_LOADING;
    v->refs++;
    int rc = ledger_open(lc_of(t), v->ledger_id, LEDGER_OPEN_NO_RECOVERY, cview_opened, v);
    if (rc < 0)
        cview_opened(rc, NULL, v);
}

/* ------------------------------------------------------- state and load -- */

static compaction_state_t *state_of(topic_t *t)
{
    if (!t->compaction) {
        t->compaction = calloc(1, sizeof *t->compaction);
        if (t->compaction)
            t->compaction->topic = t;
    }
    return t->compaction;
}

static int property_parse(const char *s, int64_t *ledger, ml_pos_t *horizon)
{
    long long l, hl, he;
    if (!s || sscanf(s, "%lld:%lld:%lld", &l, &hl, &he) != 3 || l < 0 || hl < 0 || he < 0)
        return QE_CORRUPT;
    *ledger = l;
    *horizon = (ml_pos_t){hl, he};
    return 0;
}

void compaction_topic_load(topic_t *t)
{
    if (!t->ml)
        return;
    compaction_state_t *st = state_of(t);
    if (!st) {
        log_error("compaction", "%s: out of memory", t->name);
        return;
    }
    const char *prop = ml_get_property(t->ml, COMPACTION_PROPERTY);
    if (!prop)
        return;
    int64_t ledger;
    ml_pos_t horizon;
    if (property_parse(prop, &ledger, &horizon) < 0) {
        log_error("compaction", "%s: unreadable %s property '%s': ignored", t->name,
                  COMPACTION_PROPERTY, prop);
        return;
    }
    st->view = cview_new(t, ledger, horizon);
    if (st->view)
        cview_load(t, st->view);
}

void compaction_topic_free(topic_t *t)
{
    compaction_state_t *st = t->compaction;
    if (!st)
        return;
    assert(!st->run); /* a run holds the topic busy */
    cview_unref(st->view);
    free(st);
    t->compaction = NULL;
}

/* ------------------------------------------------------------------ run -- */

typedef struct latest {
    ml_pos_t pos;
    int32_t idx;
} latest_t;

struct crun {
    compaction_state_t *st;
    topic_t *t;
    cview_t *prev; /* the previous view, READY, referenced; or NULL */
    ml_pos_t start, end;
    int phase; /* 1, 2 */
    size_t prev_next;
    ml_pos_t ml_next;
    bool ml_done;
    qmap_t *latest; /* key -> latest_t */
    ledger_t *out;  /* phase 2: open for writing */
    int64_t out_id;
    bool out_closed;
    int adds_pending;
    bool waiting_adds;
    cview_t *view;       /* the new view being written */
    ml_cursor_t *cursor; /* COMPACTION_CURSOR while moving it */
    uint64_t messages_in, entries_out;
    int rc;
    char err[200];
};

static void run_next(crun_t *r);

static void run_fail(crun_t *r, int rc, const char *what)
{
    if (r->rc == 0) {
        r->rc = rc < 0 ? rc : QE_CORRUPT;
        snprintf(r->err, sizeof r->err, "%s: %s", what, q_strerror(r->rc));
    }
}

static void latest_free_all(qmap_t *m)
{
    if (!m)
        return;
    qmap_iter_t it = {0};
    void *v;
    while (qmap_next(m, &it, NULL, &v))
        free(v);
    qmap_free(m);
}

typedef struct abandoned {
    ledger_client_t *lc;
    int64_t id;
} abandoned_t;

/* A failed run's ledger: closed, then deleted. */
static void run_abandoned_closed(int rc, void *arg)
{
    (void)rc;
    abandoned_t *a = arg;
    if (ledger_delete(a->lc, a->id, view_deleted, (void *)(intptr_t)a->id) < 0)
        log_warn("compaction", "ledger %lld left behind", (long long)a->id);
    free(a);
}

static void run_abandon_ledger(crun_t *r)
{
    ledger_client_t *lc = lc_of(r->t);
    if (r->out && !r->out_closed) {
        abandoned_t *a = malloc(sizeof *a);
        if (a) {
            *a = (abandoned_t){lc, r->out_id};
            if (ledger_close(r->out, run_abandoned_closed, a) == 0)
                return;
            free(a);
        }
        log_warn("compaction", "%s: ledger %lld left behind", r->t->name, (long long)r->out_id);
        return;
    }
    if (r->out_id >= 0 &&
        ledger_delete(lc, r->out_id, view_deleted, (void *)(intptr_t)r->out_id) < 0)
        log_warn("compaction", "%s: ledger %lld left behind", r->t->name, (long long)r->out_id);
}

static void run_finish(crun_t *r)
{
    compaction_state_t *st = r->st;
    topic_t *t = r->t;
    if (r->rc < 0) {
        st->status = BROKER_COMPACTION_ERROR;
        snprintf(st->last_error, sizeof st->last_error, "%s", r->err);
        log_error("compaction", "%s: compaction failed: %s", t->name, r->err);
        if (r->out_id >= 0)
            run_abandon_ledger(r);
        cview_unref(r->view);
    } else {
        st->status = BROKER_COMPACTION_SUCCESS;
        st->last_error[0] = '\0';
    }
    latest_free_all(r->latest);
    cview_unref(r->prev);
    st->run = NULL;
    t->busy--;
    free(r);
}

/* ---- input: the previous view, then the topic after its horizon ---- */

static bool run_keep(crun_t *r, const batch_t *b, ml_pos_t pos, size_t i)
{
    const Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
    if (smd && smd->has_compacted_out && smd->compacted_out)
        return false;
    const char *key = batch_msg_key(b, i);
    if (!key || batch_msg_is_tombstone(b, i))
        return false;
    const latest_t *l = qmap_get(r->latest, key);
    return l && ml_pos_cmp(l->pos, pos) == 0 && l->idx == (int32_t)i;
}

static void run_phase1(crun_t *r, const batch_t *b, ml_pos_t pos)
{
    for (size_t i = 0; i < b->n && r->rc == 0; i++) {
        const Pulsar__Proto__SingleMessageMetadata *smd = b->msgs[i].smd;
        if (smd && smd->has_compacted_out && smd->compacted_out)
            continue;
        r->messages_in++;
        const char *key = batch_msg_key(b, i);
        if (!key)
            continue;
        if (batch_msg_is_tombstone(b, i)) {
            free(qmap_remove(r->latest, key));
            continue;
        }
        latest_t *l = qmap_get(r->latest, key);
        if (!l) {
            if (qmap_size(r->latest) >= COMPACTION_KEYS_MAX) {
                run_fail(r, QE_TOO_LARGE, "too many keys");
                return;
            }
            l = malloc(sizeof *l);
            if (!l || qmap_put(r->latest, key, l) < 0) {
                free(l);
                run_fail(r, -ENOMEM, "key map");
                return;
            }
        }
        l->pos = pos;
        l->idx = (int32_t)i;
    }
}

static void run_added(int rc, int64_t entry_id, void *arg)
{
    (void)entry_id;
    crun_t *r = arg;
    r->adds_pending--;
    if (rc < 0)
        run_fail(r, rc, "append to the compacted ledger");
    if (r->adds_pending == 0 && r->waiting_adds) {
        r->waiting_adds = false;
        run_next(r);
    }
}

static void run_write(crun_t *r, ml_pos_t pos, const uint8_t *stored, size_t len, int32_t last)
{
    qbuf_t *q = centry_encode(pos, stored, len);
    if (!q || cview_append(r->view, pos) < 0) {
        qbuf_unref(q);
        run_fail(r, -ENOMEM, "compacted entry");
        return;
    }
    r->view->last_batch_index = last;
    r->adds_pending++;
    int rc = ledger_add(r->out, q, run_added, r);
    qbuf_unref(q);
    if (rc < 0) {
        r->adds_pending--;
        run_fail(r, rc, "append to the compacted ledger");
    }
    r->entries_out++;
}

static void run_phase2(crun_t *r, const batch_t *b, ml_pos_t pos, const uint8_t *stored, size_t len)
{
    bool *keep = calloc(b->n, sizeof *keep);
    if (!keep) {
        run_fail(r, -ENOMEM, "phase two");
        return;
    }
    size_t kept = 0;
    int32_t last = -1;
    for (size_t i = 0; i < b->n; i++) {
        keep[i] = run_keep(r, b, pos, i);
        if (keep[i]) {
            kept++;
            last = (int32_t)i;
        }
    }
    if (kept == b->n) {
        run_write(r, pos, stored, len, b->batched ? last : -1);
    } else if (kept > 0) {
        qbuf_t *q = NULL;
        int rc = batch_encode_compacted(b, keep, &q);
        if (rc < 0)
            run_fail(r, rc, "re-encoding a batch");
        else
            run_write(r, pos, q->data, q->len, last);
        qbuf_unref(q);
    }
    free(keep);
}

static void run_entry(crun_t *r, ml_pos_t pos, const uint8_t *stored, size_t len)
{
    batch_t b;
    int rc = batch_parse(stored, len, &b);
    if (rc < 0) {
        /* Unreadable (corrupt, unknown codec): kept whole, never lost. */
        log_warn("compaction", "%s: entry %lld:%lld unreadable (%s): kept as is", r->t->name,
                 (long long)pos.ledger_id, (long long)pos.entry_id, q_strerror(rc));
        if (r->phase == 2)
            run_write(r, pos, stored, len, -1);
        return;
    }
    if (r->phase == 1)
        run_phase1(r, &b, pos);
    else
        run_phase2(r, &b, pos, stored, len);
    batch_free(&b);
}

static void run_prev_read(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    crun_t *r = arg;
    if (rc < 0 || n == 0) {
        run_fail(r, rc < 0 ? rc : QE_NO_ENTRY, "reading the previous compacted ledger");
        run_next(r);
        return;
    }
    (void)first;
    for (size_t i = 0; i < n && r->rc == 0; i++) {
        ml_pos_t pos;
        const uint8_t *stored;
        size_t len;
        if (centry_decode(entries[i], &pos, &stored, &len) < 0) {
            run_fail(r, QE_CORRUPT, "reading the previous compacted ledger");
            break;
        }
        run_entry(r, pos, stored, len);
    }
    r->prev_next += n;
    run_next(r);
}

static void run_ml_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    crun_t *r = arg;
    if (rc < 0) {
        run_fail(r, rc, "reading the topic");
        run_next(r);
        return;
    }
    if (n == 0)
        r->ml_done = true;
    for (size_t i = 0; i < n && r->rc == 0; i++) {
        ml_pos_t pos = entries[i].pos;
        if (ml_pos_cmp(pos, r->end) > 0) {
            r->ml_done = true;
            break;
        }
        run_entry(r, pos, entries[i].data->data, entries[i].data->len);
        r->ml_next = (ml_pos_t){pos.ledger_id, pos.entry_id + 1};
        if (ml_pos_cmp(pos, r->end) == 0)
            r->ml_done = true;
    }
    run_next(r);
}

/* ---- commit ---- */

static void run_cursor_closed(int rc, void *arg)
{
    crun_t *r = arg;
    if (rc < 0)
        log_warn("compaction", "%s: %s cursor not persisted: %s", r->t->name, COMPACTION_CURSOR,
                 q_strerror(rc));
    run_finish(r);
}

static void run_cursor_ack(void *arg)
{
    crun_t *r = arg;
    ml_cursor_ack_cumulative(r->cursor, r->end);
    if (ml_cursor_close(r->cursor, run_cursor_closed, r) < 0)
        run_finish(r);
}

static void run_cursor_opened(int rc, ml_cursor_t *c, void *arg)
{
    crun_t *r = arg;
    if (rc < 0) {
        log_warn("compaction", "%s: cannot open the %s cursor: %s", r->t->name, COMPACTION_CURSOR,
                 q_strerror(rc));
        run_finish(r);
        return;
    }
    /* Not from inside the open's completion: cursor.c runs flush waiters
     * inline and a close (a flush) from one of them trips its writer. */
    r->cursor = c;
    if (broker_defer(r->t->broker, run_cursor_ack, r) < 0)
        run_cursor_ack(r);
}

static void run_committed(int rc, void *arg)
{
    crun_t *r = arg;
    topic_t *t = r->t;
    if (rc < 0) {
        run_fail(r, rc, "storing the compacted ledger id");
        run_finish(r);
        return;
    }
    compaction_state_t *st = r->st;
    cview_t *old = st->view;
    st->view = r->view;
    r->view = NULL;
    r->out_id = -1; /* the view owns the ledger now */
    st->view->indexed = true;
    cview_load(t, st->view); /* opens it for reading, then READY */
    if (old) {
        old->delete_on_free = true;
        cview_unref(old);
    }
    log_info("compaction",
             "%s: compacted %llu messages into %llu entries of ledger %lld, horizon "
             "%lld:%lld",
             t->name, (unsigned long long)r->messages_in, (unsigned long long)r->entries_out,
             (long long)st->view->ledger_id, (long long)r->end.ledger_id,
             (long long)r->end.entry_id);
    rc = ml_cursor_open(t->ml, COMPACTION_CURSOR, ML_POS_EARLIEST, true, run_cursor_opened, r);
    if (rc < 0)
        run_cursor_opened(rc, NULL, r);
}

static void run_closed(int rc, void *arg)
{
    crun_t *r = arg;
    r->out_closed = true;
    r->out = NULL;
    if (rc < 0) {
        run_fail(r, rc, "closing the compacted ledger");
        run_finish(r);
        return;
    }
    char val[96];
    snprintf(val, sizeof val, "%lld:%lld:%lld", (long long)r->out_id, (long long)r->end.ledger_id,
             (long long)r->end.entry_id);
    rc = ml_set_property(r->t->ml, COMPACTION_PROPERTY, val, run_committed, r);
    if (rc < 0)
        run_committed(rc, r);
}

static void run_created(int rc, ledger_t *l, void *arg)
{
    crun_t *r = arg;
    if (rc < 0) {
        run_fail(r, rc, "creating the compacted ledger");
        run_finish(r);
        return;
    }
    r->out = l;
    r->out_id = ledger_id(l);
    r->view = cview_new(r->t, r->out_id, r->end);
    if (!r->view) {
        run_fail(r, -ENOMEM, "compacted view");
        run_finish(r);
        return;
    }
    r->phase = 2;
    r->prev_next = 0;
    r->ml_next = r->start;
    r->ml_done = false;
    run_next(r);
}

static void run_next(crun_t *r)
{
    if (r->adds_pending > 0) {
        r->waiting_adds = true; /* run_added resumes */
        return;
    }
    if (r->rc < 0) {
        run_finish(r);
        return;
    }
    int rc;
    if (r->prev && r->prev_next < r->prev->n) {
        size_t to = r->prev_next + VIEW_READ_ENTRIES - 1;
        if (to >= r->prev->n)
            to = r->prev->n - 1;
        rc = ledger_read(r->prev->lh, (int64_t)r->prev_next, (int64_t)to, run_prev_read, r);
        if (rc < 0)
            run_prev_read(rc, 0, NULL, 0, r);
        return;
    }
    if (!r->ml_done) {
        rc = ml_read(r->t->ml, r->ml_next, RUN_READ_ENTRIES, RUN_READ_BYTES, run_ml_read, r);
        if (rc < 0)
            run_ml_read(rc, NULL, 0, r);
        return;
    }
    if (r->phase == 1) {
        rc = ledger_create(lc_of(r->t), &r->t->broker->cfg.ml.quorum, run_created, r);
        if (rc < 0)
            run_created(rc, NULL, r);
        return;
    }
    rc = ledger_close(r->out, run_closed, r);
    if (rc < 0) {
        run_fail(r, rc, "closing the compacted ledger");
        run_finish(r);
    }
}

static void run_next_deferred(void *arg)
{
    run_next(arg);
}

static void run_finish_deferred(void *arg)
{
    run_finish(arg);
}

static int run_start(topic_t *t)
{
    compaction_state_t *st = state_of(t);
    if (!st)
        return -ENOMEM;
    if (st->run)
        return QE_EXISTS;
    if (st->view && st->view->state == CV_LOADING)
        return QE_BUSY;
    crun_t *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->latest = qmap_new();
    if (!r->latest) {
        free(r);
        return -ENOMEM;
    }
    r->st = st;
    r->t = t;
    r->phase = 1;
    r->out_id = -1;
    r->end = ml_last_confirmed(t->ml);
    if (st->view && st->view->state == CV_READY) {
        r->prev = st->view;
        r->prev->refs++;
        r->start = (ml_pos_t){r->prev->horizon.ledger_id, r->prev->horizon.entry_id + 1};
    } else {
        r->start = ml_first_position(t->ml);
    }
    r->ml_next = r->start;
    st->run = r;
    st->status = BROKER_COMPACTION_RUNNING;
    t->busy++;
    bool nothing_new = r->prev ? ml_pos_cmp(r->end, r->prev->horizon) <= 0 : r->end.entry_id < 0;
    if (nothing_new) {
        broker_defer(t->broker, run_finish_deferred, r); /* SUCCESS, the view unchanged */
        return 0;
    }
    log_info("compaction", "%s: compaction started, horizon %lld:%lld", t->name,
             (long long)r->end.ledger_id, (long long)r->end.entry_id);
    broker_defer(t->broker, run_next_deferred, r);
    return 0;
}

/* ------------------------------------------------- automatic compaction -- */

static void auto_check(topic_t *t)
{
    compaction_state_t *st = t->compaction;
    if (!st || st->run || !t->ml || t->state != TOPIC_READY)
        return;
    topic_name_t tn;
    if (topic_name_parse(t->name, &tn) < 0)
        return;
    const ns_policies_t *p = broker_ns_policies(t->broker, tn.namespace_name);
    int64_t threshold = p->compaction_threshold >= 0 ? p->compaction_threshold
                                                     : t->broker->cfg.compaction_threshold_bytes;
    if (threshold <= 0)
        return;
    ml_stats_t ms;
    ml_get_stats(t->ml, &ms);
    if (ms.entries == 0)
        return;
    ml_pos_t from = st->view ? st->view->horizon : ML_POS_EARLIEST;
    uint64_t after = ml_count_entries(t->ml, from, ml_last_confirmed(t->ml));
    uint64_t bytes = (uint64_t)((double)ms.size_bytes * (double)after / (double)ms.entries);
    if (bytes < (uint64_t)threshold)
        return;
    log_info("compaction", "%s: %llu bytes not compacted >= threshold %lld: compacting", t->name,
             (unsigned long long)bytes, (long long)threshold);
    int rc = run_start(t);
    if (rc < 0 && rc != QE_BUSY)
        log_warn("compaction", "%s: automatic compaction not started: %s", t->name, q_strerror(rc));
}

/* One broker-wide timer (brokerServiceCompactionMonitorIntervalInSeconds) checks
 * every loaded topic in turn: a timer per topic woke the loop 1,700 times a
 * second at 100,000 idle topics. */
void compaction_check_topic(topic_t *t)
{
    auto_check(t);
}

int compaction_config_load(const qconfig_t *q, broker_config_t *cfg, char *err, size_t err_len)
{
    int64_t threshold, interval;
    if (qconfig_get_int(q, "brokerServiceCompactionThresholdInBytes", 0, 0, INT64_MAX, &threshold) <
            0 ||
        qconfig_get_int(q, "brokerServiceCompactionMonitorIntervalInSeconds", 60, 0, 86400,
                        &interval) < 0) {
        snprintf(err, err_len, "brokerServiceCompaction*: expected a whole number >= 0");
        return QE_INVALID;
    }
    cfg->compaction_threshold_bytes = threshold;
    cfg->compaction_monitor_s = (uint32_t)interval;
    return 0;
}

/* ---------------------------------------------------------------- admin -- */

int broker_admin_compaction_trigger(broker_t *b, const char *topic)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || t->state != TOPIC_READY)
        return QE_NOT_FOUND;
    if (!t->ml)
        return QE_INVALID;
    return run_start(t);
}

int broker_admin_compaction_status(broker_t *b, const char *topic, int *status, char *err,
                                   size_t err_len)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || t->state != TOPIC_READY)
        return QE_NOT_FOUND;
    *status = t->compaction ? t->compaction->status : BROKER_COMPACTION_NOT_RUN;
    snprintf(err, err_len, "%s", t->compaction ? t->compaction->last_error : "");
    return 0;
}

int broker_admin_compaction_info(broker_t *b, const char *topic, int64_t *ledger_id,
                                 ml_pos_t *horizon, uint64_t *entries)
{
    topic_t *t = broker_topic_find(b, topic);
    if (!t || t->state != TOPIC_READY)
        return QE_NOT_FOUND;
    const cview_t *v = t->compaction ? t->compaction->view : NULL;
    *ledger_id = v ? v->ledger_id : -1;
    *horizon = v ? v->horizon : ML_POS_EARLIEST;
    *entries = v ? v->n : 0;
    return 0;
}

/* ------------------------------------------------------ reading compacted -- */

const char *compaction_subscribe_refusal(const topic_t *t, bool read_compacted, int sub_type)
{
    bool allowed = sub_type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive ||
                   sub_type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover;
    if (!read_compacted || allowed || !t->ml)
        return NULL;
    return "readCompacted only allowed on failover or exclusive subscriptions";
}

/* Where the compacted reads of s start: the view's beginning when its cursor
 * stands at the topic's first entry, else the cursor's read position. */
static void sub_start(subscription_t *s)
{
    struct compaction_sub *cs = s->compacted;
    ml_pos_t rp = ml_cursor_read_pos(s->cursor);
    bool at_start = ml_pos_cmp(rp, ml_first_position(s->topic->ml)) <= 0;
    cs->next = at_start ? ML_POS_EARLIEST : rp;
    cs->done = false;
    cs->rewound = false;
    if (at_start)
        cs->from_start = true; /* else kept: a reconnect keeps what was delivered */
}

void compaction_sub_attach(subscription_t *s, bool read_compacted)
{
    bool allowed = s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive ||
                   s->type == PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover;
    if (!read_compacted && s->consumers_count > 1)
        return; /* a Failover subscription follows its first consumers' choice */
    if (!read_compacted || !allowed || !s->cursor) {
        compaction_sub_free(s); /* (Shared and Key_Shared were refused at SUBSCRIBE) */
        return;
    }
    if (!s->compacted) {
        s->compacted = calloc(1, sizeof *s->compacted);
        if (!s->compacted) {
            log_error("compaction", "%s / %s: out of memory: reading the topic uncompacted",
                      s->topic->name, s->name);
            return;
        }
        s->compacted->prefix_view = -1;
    }
    sub_start(s);
}

void compaction_sub_reset(subscription_t *s)
{
    struct compaction_sub *cs = s->compacted;
    if (!cs)
        return;
    cacks_clear(cs->trimmed);
    cs->from_start = false;
    cs->prefix = 0;
    cs->rewound = true; /* sub_start at the next read, once the cursor is reset */
}

void compaction_sub_free(subscription_t *s)
{
    if (s->compacted) {
        cacks_free(s->compacted->trimmed);
        free(s->compacted->mask);
    }
    free(s->compacted);
    s->compacted = NULL;
}

static cview_t *view_of(const subscription_t *s)
{
    return s->topic->compaction ? s->topic->compaction->view : NULL;
}

bool compaction_covers(subscription_t *s)
{
    struct compaction_sub *cs = s->compacted;
    cview_t *v = view_of(s);
    if (!cs || !v || !s->cursor)
        return false;
    if (cs->rewound)
        sub_start(s);
    if (cs->done) {
        /* A newer compaction may cover where the cursor stands (Pulsar reads
         * compacted whenever the read position is within the horizon). */
        ml_pos_t rp = ml_cursor_read_pos(s->cursor);
        if (ml_pos_cmp(rp, v->horizon) > 0)
            return false;
        cs->next = rp;
        cs->done = false;
    }
    if (v->state == CV_LOADING)
        return true; /* compaction_cursor_read waits for it */
    if (v->state == CV_READY && cview_lower_bound(v, cs->next) < v->n)
        return true;
    /* Past the view (or the view failed): the topic after the horizon. */
    cs->done = true;
    ml_pos_t after = {v->horizon.ledger_id, v->horizon.entry_id + 1};
    if (ml_pos_cmp(ml_cursor_read_pos(s->cursor), after) < 0)
        ml_cursor_seek_read(s->cursor, after);
    return false;
}

typedef struct cread {
    subscription_t *s;
    cview_t *v;
    ml_read_cb cb;
    bool replay;
} cread_t;

static void cread_done(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    (void)first;
    cread_t *cr = arg;
    subscription_t *s = cr->s;
    ml_entry_t *out = n ? calloc(n, sizeof *out) : NULL;
    size_t k = 0;
    if (n && !out)
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const uint8_t *stored;
        size_t len;
        rc = centry_decode(entries[i], &out[k].pos, &stored, &len);
        if (rc == 0) {
            out[k].data = qbuf_copy(stored, len);
            rc = out[k].data ? 0 : -ENOMEM;
        }
        if (rc == 0)
            k++;
    }
    if (rc == 0 && k > 0 && !cr->replay && s->compacted) {
        ml_pos_t last = out[k - 1].pos;
        s->compacted->next = (ml_pos_t){last.ledger_id, last.entry_id + 1};
        if (!s->closing && s->cursor &&
            ml_pos_cmp(ml_cursor_read_pos(s->cursor), s->compacted->next) < 0)
            ml_cursor_seek_read(s->cursor, s->compacted->next);
    }
    if (rc < 0)
        log_error("compaction", "%s / %s: compacted read failed: %s", s->topic->name, s->name,
                  q_strerror(rc));
    cr->cb(rc, rc < 0 ? NULL : out, rc < 0 ? 0 : k, s);
    for (size_t i = 0; i < k; i++)
        qbuf_unref(out[i].data);
    free(out);
    cview_unref(cr->v);
    free(cr);
}

static int cview_read(subscription_t *s, cview_t *v, size_t first, size_t n, ml_read_cb cb,
                      bool replay)
{
    cread_t *cr = malloc(sizeof *cr);
    if (!cr)
        return -ENOMEM;
    *cr = (cread_t){s, v, cb, replay};
    v->refs++;
    int rc = ledger_read(v->lh, (int64_t)first, (int64_t)(first + n - 1), cread_done, cr);
    if (rc < 0) {
        v->refs--;
        free(cr);
    }
    return rc;
}

int compaction_cursor_read(subscription_t *s, size_t max_entries, ml_read_cb cb)
{
    cview_t *v = view_of(s);
    if (!v || v->state != CV_READY)
        return 1; /* dispatched again when the view settles */
    size_t i = cview_lower_bound(v, s->compacted->next);
    if (i >= v->n)
        return 1;
    size_t n = v->n - i;
    if (n > max_entries)
        n = max_entries;
    if (n > VIEW_READ_ENTRIES)
        n = VIEW_READ_ENTRIES;
    return cview_read(s, v, i, n ? n : 1, cb, false);
}

typedef struct redispatch {
    broker_t *b;
    char *topic, *sub;
} redispatch_t;

static void redispatch_run(void *arg)
{
    redispatch_t *rd = arg;
    topic_t *t = broker_topic_find(rd->b, rd->topic);
    subscription_t *s = t ? qmap_get(t->subscriptions, rd->sub) : NULL;
    if (s)
        subscription_dispatch(s);
    free(rd->topic);
    free(rd->sub);
    free(rd);
}

static void redispatch_later(subscription_t *s)
{
    redispatch_t *rd = calloc(1, sizeof *rd);
    if (!rd)
        return;
    rd->b = s->topic->broker;
    rd->topic = strdup(s->topic->name);
    rd->sub = strdup(s->name);
    if (!rd->topic || !rd->sub || broker_defer(rd->b, redispatch_run, rd) < 0) {
        free(rd->topic);
        free(rd->sub);
        free(rd);
    }
}

int compaction_replay_read(subscription_t *s, size_t max_entries, size_t max_bytes, ml_read_cb cb)
{
    cview_t *v = view_of(s);
    if (!s->compacted || !v || ml_pos_cmp(s->replay[0], v->horizon) > 0 || v->state == CV_FAILED)
        return ml_read(s->topic->ml, s->replay[0], max_entries, max_bytes, cb, s);
    if (v->state == CV_LOADING)
        return 1;
    /* Positions a newer compaction removed are gone from the view: dropped. */
    size_t i = 0;
    while (s->replay_count > 0) {
        ml_pos_t head = s->replay[0];
        if (ml_pos_cmp(head, v->horizon) > 0)
            return ml_read(s->topic->ml, head, max_entries, max_bytes, cb, s);
        i = cview_lower_bound(v, head);
        if (i < v->n && ml_pos_cmp(v->index[i], head) == 0)
            break;
        subscription_replay_remove(s, head);
    }
    if (s->replay_count == 0) {
        redispatch_later(s);
        return 1;
    }
    size_t n = 1;
    while (n < max_entries && n < s->replay_count && i + n < v->n &&
           ml_pos_cmp(v->index[i + n], s->replay[n]) == 0)
        n++;
    return cview_read(s, v, i, n, cb, true);
}

/* pos lies in a ledger trimmed from the topic: the cursor cannot hold it. */
static bool pos_trimmed(const subscription_t *s, ml_pos_t pos)
{
    return pos.ledger_id < ml_first_position(s->topic->ml).ledger_id;
}

bool compaction_entry_pending(const subscription_t *s, ml_pos_t pos)
{
    const struct compaction_sub *cs = s->compacted;
    const cview_t *v = view_of(s);
    if (!cs || !cs->from_start || !v || ml_pos_cmp(pos, v->horizon) > 0 || !s->topic->ml ||
        !pos_trimmed(s, pos))
        return false;
    return !cs->trimmed || !cacks_is_acked(cs->trimmed, pos);
}

static cacks_t *trimmed_acks(struct compaction_sub *cs)
{
    if (!cs->trimmed)
        cs->trimmed = cacks_new();
    return cs->trimmed;
}

/* e, a compacted batch delivered to s, has its compacted-out messages
 * (those not in mask) recorded as acknowledged: in the cursor's batch-index
 * bitset, or for a trimmed position in s's own set. So acknowledgements of
 * the messages delivered complete the entry (clients never acknowledge the
 * messages they skipped). Only when nothing is recorded for e yet. */
static void record_compacted_out(subscription_t *s, ml_pos_t pos, const uint64_t *mask, size_t k)
{
    struct compaction_sub *cs = s->compacted;
    if (!s->cursor || !ml_cursor_is_durable(s->cursor))
        return;
    if (pos_trimmed(s, pos)) {
        cacks_t *a = cs->from_start ? trimmed_acks(cs) : NULL;
        if (a && cacks_prerecord(a, pos, mask, k) < 0)
            log_warn("compaction", "%s / %s: compacted-out messages of %lld:%lld not recorded",
                     s->topic->name, s->name, (long long)pos.ledger_id, (long long)pos.entry_id);
        return;
    }
    size_t w;
    if (k > CURSOR_ACK_SET_WORDS_MAX || ml_cursor_is_acked(s->cursor, pos) ||
        ml_cursor_ack_set(s->cursor, pos, &w))
        return;
    ml_cursor_ack(s->cursor, pos, mask, k);
}

const uint64_t *compaction_ack_set(subscription_t *s, const ml_entry_t *e, const uint64_t *ack_set,
                                   size_t *words)
{
    struct compaction_sub *cs = s->compacted;
    const cview_t *v = view_of(s);
    if (!cs || !v || ml_pos_cmp(e->pos, v->horizon) > 0)
        return ack_set;
    uint64_t *mask;
    size_t k = batch_retained_mask(e->data->data, e->data->len, &mask);
    if (k == 0)
        return ack_set;
    free(cs->mask);
    cs->mask = mask;
    bool trimmed = s->topic->ml && pos_trimmed(s, e->pos);
    record_compacted_out(s, e->pos, mask, k); /* only where ack_set was NULL */
    size_t have = *words;
    if (trimmed)
        ack_set = cs->trimmed ? cacks_bits(cs->trimmed, e->pos, &have) : NULL;
    if (ack_set)
        for (size_t j = 0; j < k; j++)
            mask[j] &= j < have ? ack_set[j] : 0;
    *words = k;
    return mask;
}

int compaction_ack(subscription_t *s, ml_pos_t pos, const uint64_t *ack_set, size_t words,
                   bool cumulative)
{
    struct compaction_sub *cs = s->compacted;
    if (!cs || !cs->from_start || !s->topic->ml || !pos_trimmed(s, pos))
        return 0;
    cacks_t *a = trimmed_acks(cs);
    if (!a)
        return 1; /* not recorded: stays unacknowledged, delivered again */
    if (cumulative) {
        cacks_ack_cumulative(a, pos);
        return 0;
    }
    return cacks_ack(a, pos, ack_set, words) == 1 ? 0 : 1;
}

/* Entry i of v is acknowledged by s (in the cursor, or for an entry of a
 * trimmed ledger in s's own set; those before s's start count as done). */
static bool view_entry_acked(const subscription_t *s, const cview_t *v, size_t i)
{
    ml_pos_t pos = v->index[i];
    const struct compaction_sub *cs = s->compacted;
    if (pos_trimmed(s, pos))
        return !cs->from_start || (cs->trimmed && cacks_is_acked(cs->trimmed, pos));
    return ml_cursor_is_acked(s->cursor, pos);
}

void compaction_acked(subscription_t *s)
{
    struct compaction_sub *cs = s->compacted;
    const cview_t *v = view_of(s);
    if (!cs || !v || v->state != CV_READY || !s->cursor || !ml_cursor_is_durable(s->cursor) ||
        !s->topic->ml)
        return;
    if (cs->prefix_view != v->ledger_id || cs->prefix > v->n ||
        (cs->prefix > 0 && !view_entry_acked(s, v, cs->prefix - 1))) {
        cs->prefix_view = v->ledger_id;
        cs->prefix = 0;
    }
    while (cs->prefix < v->n && view_entry_acked(s, v, cs->prefix))
        cs->prefix++;
    /* Everything up to the last acknowledged view entry of the prefix (the
     * horizon once the whole view is) was delivered and acknowledged, or
     * compacted away: the mark-delete position may move there. */
    ml_pos_t target;
    if (cs->prefix == v->n)
        target = v->horizon;
    else if (cs->prefix > 0)
        target = v->index[cs->prefix - 1];
    else
        return;
    if (pos_trimmed(s, target) || ml_pos_cmp(target, ml_cursor_mark_delete_pos(s->cursor)) <= 0)
        return; /* a trimmed ledger cannot hold it: the topic's own acks will */
    ml_cursor_ack_cumulative(s->cursor, target);
    subscription_replay_trim(s);
}

bool compaction_last_message_id(const subscription_t *s, ml_pos_t *pos, int32_t *batch_index)
{
    const cview_t *v = view_of(s);
    if (!s->compacted || !v || v->state != CV_READY || !s->topic->ml)
        return false;
    if (ml_pos_cmp(ml_last_confirmed(s->topic->ml), v->horizon) > 0)
        return false;
    if (v->n == 0) {
        *pos = ML_POS_EARLIEST;
        *batch_index = -1;
    } else {
        *pos = v->index[v->n - 1];
        *batch_index = v->last_batch_index;
    }
    return true;
}
