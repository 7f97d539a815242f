/*
 * ledger_write.c — the writer: add path, ensemble change, close.
 *
 * Add. ledger_add() gives the entry the next id e and sends it to the write set:
 * ensemble slots (e + k) % E for k < Qw. Each answer is matched to the one
 * request that counts for (e, k) by a sequence number (stale answers, e.g. from
 * a bookie replaced since, are ignored). The drain — always run from the loop,
 * never inside a caller's call — completes the head of the pending ring while it
 * has >= Qa acks, so callbacks come strictly in entry order, and the LAC sent
 * with later adds is the last entry completed. While an ensemble change is in
 * flight nothing completes (as BookKeeper): every entry of the new segment is
 * then still pending when the change commits, and is sent to the replacement.
 *
 *   entry states:  sent --Qa acks--> quorum --all earlier done--> acked (cb 0)
 *                    \--fail_rc set, not acked-------------------> failed (cb rc)
 *
 * Ensemble change. A failure of an outstanding request (QE_TIMEOUT from the add
 * timer, QE_UNAVAILABLE, -EIO, ...) marks its slot failed: its acks and
 * requests for pending entries are dropped, the bookie is never chosen again by
 * this ledger. Then, one change at a time:
 *
 *   failed slots --choose replacements--> metadata CAS: segment {lac+1 -> new
 *   ensemble} (replacing the last segment if it started at lac+1 too)
 *     --ok--> install, re-send every unsent (entry, position) to its bookie
 *     --QE_BAD_VERSION--> re-read: not OPEN => fenced (recovery runs), else retry
 *     --no replacement / too many changes / other error--> fail_rc
 *
 * QE_FENCED from any bookie sets fail_rc = QE_FENCED at once. Once fail_rc is
 * set, entries already holding Qa acks at the head still complete, then every
 * pending add fails with fail_rc and later adds are refused.
 *
 * Close. Waits until no add is pending and no change is in flight, then CAS
 * state=CLOSED, last_entry_id=lac, length. A lost CAS re-reads: closed by a
 * recovery at the same entry counts as success, any other recovery as QE_FENCED.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/ledger/ledger_int.h"

typedef struct add_req {
    ledger_t *l;
    bk_client_t *bookie;
    int64_t entry_id;
    uint64_t seq;
    int k;
} add_req_t;

static void ledger_change_ensemble(ledger_t *l);
static void ledger_close_check(ledger_t *l);

/* -------------------------------------------------------- pending ring -- */

static pending_add_t *pending_at(const ledger_t *l, uint32_t i)
{
    assert(i < l->npending);
    return l->ring[(l->ring_head + i) & (l->ring_cap - 1)];
}

static pending_add_t *pending_find(const ledger_t *l, int64_t entry_id)
{
    if (l->npending == 0)
        return NULL;
    int64_t first = pending_at(l, 0)->entry_id;
    if (entry_id < first || entry_id >= first + l->npending)
        return NULL;
    pending_add_t *p = pending_at(l, (uint32_t)(entry_id - first));
    assert(p->entry_id == entry_id);
    return p;
}

static int ring_push(ledger_t *l, pending_add_t *p)
{
    if (l->npending == l->ring_cap) {
        uint32_t cap = l->ring_cap ? l->ring_cap * 2 : 16;
        pending_add_t **ring = malloc(cap * sizeof *ring);
        if (!ring)
            return -ENOMEM;
        for (uint32_t i = 0; i < l->npending; i++)
            ring[i] = pending_at(l, i);
        free(l->ring);
        l->ring = ring;
        l->ring_cap = cap;
        l->ring_head = 0;
    }
    l->ring[(l->ring_head + l->npending) & (l->ring_cap - 1)] = p;
    l->npending++;
    return 0;
}

static pending_add_t *ring_pop(ledger_t *l)
{
    pending_add_t *p = pending_at(l, 0);
    l->ring_head = (l->ring_head + 1) & (l->ring_cap - 1);
    l->npending--;
    return p;
}

void ledger_writer_free(ledger_t *l)
{
    while (l->npending) {
        pending_add_t *p = ring_pop(l);
        qbuf_unref(p->data);
        free(p);
    }
    free(l->ring);
    l->ring = NULL;
    l->ring_cap = 0;
}

/* ---------------------------------------------------------------- drain -- */

static void ledger_drain(ledger_t *l)
{
    if (l->change)
        return;         /* the commit re-sends pending entries to the new bookies, then drains */
    lobj_hold(&l->obj); /* a callback may release the handle */
    int qa = l->md.q.ack_quorum;
    while (l->npending && !l->obj.dead) {
        pending_add_t *p = pending_at(l, 0);
        int rc;
        if (p->acks >= qa && !l->fail_emitted) {
            rc = 0;
            l->lac = p->entry_id;
            l->length += p->data->len;
        } else if (l->fail_rc) {
            rc = l->fail_rc;
            l->fail_emitted = true;
        } else {
            break;
        }
        ring_pop(l);
        int64_t e = p->entry_id;
        ledger_add_cb cb = p->cb;
        void *arg = p->arg;
        qbuf_unref(p->data);
        free(p);
        if (cb)
            cb(rc, e, arg);
    }
    if (!lobj_back(&l->obj))
        return;
    if (l->npending == 0)
        ev_timer_stop(l->lc->loop, &l->timer);
    ledger_close_check(l);
}

static void ledger_drain_posted(void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    l->drain_posted = false;
    ledger_drain(l);
}

static void ledger_schedule_drain(ledger_t *l)
{
    if (l->drain_posted)
        return;
    l->drain_posted = true;
    lc_post(l->lc, &l->obj, ledger_drain_posted);
}

static void ledger_fail_writes(ledger_t *l, int rc)
{
    assert(rc < 0);
    if (l->fail_rc == 0) {
        l->fail_rc = rc;
        log_warn("ledger", "ledger %" PRId64 " writer stops at lac %" PRId64 ": %s", l->id, l->lac,
                 q_strerror(rc));
    }
    ledger_schedule_drain(l);
}

/* ------------------------------------------------------------ sending -- */

static bool slot_usable(const ledger_t *l, int slot)
{
    uint32_t bit = 1u << slot;
    return !l->fail_rc && !(l->failed_slots & bit) && !(l->change && (l->change->slots & bit));
}

static void ledger_slot_failed(ledger_t *l, int slot, int rc)
{
    if (l->fail_rc)
        return;
    if (rc == QE_FENCED) {
        ledger_fail_writes(l, QE_FENCED);
        return;
    }
    log_warn("ledger", "ledger %" PRId64 ": bookie %s failed: %s", l->id, l->ens[slot]->id,
             q_strerror(rc));
    l->failed_slots |= 1u << slot;
    int bi = lc_bookie_index(l->lc, l->ens[slot]);
    if (bi >= 0)
        l->avoid |= UINT64_C(1) << bi;
    for (uint32_t i = 0; i < l->npending; i++) {
        pending_add_t *p = pending_at(l, i);
        for (int k = 0; k < l->md.q.write_quorum; k++) {
            if (ledger_slot_of(l, p->entry_id, k) != slot)
                continue;
            if (p->acked[k])
                p->acks--;
            p->acked[k] = false;
            p->seq[k] = 0;
        }
    }
    if (!l->change)
        ledger_change_ensemble(l);
}

static void ledger_send_unsent(ledger_t *l);

static void retry_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ledger_send_unsent(w->data);
}

/* A bookie refused (entry, position) with QE_BUSY: back-pressure, not a
 * failure. The position stays unsent and is sent again shortly. */
static void ledger_retry_later(ledger_t *l)
{
    if (ev_is_active(&l->retry))
        return;
    ev_timer_init(&l->retry, retry_timer_cb, LEDGER_BUSY_RETRY_S, 0.0);
    l->retry.data = l;
    ev_timer_start(l->lc->loop, &l->retry);
}

static void add_bookie_done(int rc, void *arg)
{
    add_req_t r = *(add_req_t *)arg;
    free(arg);
    ledger_t *l = r.l;
    if (!lobj_back(&l->obj))
        return;
    int slot = ledger_slot_of(l, r.entry_id, r.k);
    pending_add_t *p = pending_find(l, r.entry_id);
    if (!p || p->seq[r.k] != r.seq) {
        /* Stale or already acknowledged by Qa others: a failure still means the
         * bookie is bad for the entries to come. */
        if (rc < 0 && rc != QE_BUSY && l->ens[slot] == r.bookie && slot_usable(l, slot))
            ledger_slot_failed(l, slot, rc);
        return;
    }
    p->seq[r.k] = 0;
    if (rc == QE_BUSY) {
        ledger_retry_later(l);
        return;
    }
    if (rc < 0) {
        ledger_slot_failed(l, slot, rc);
        return;
    }
    p->acked[r.k] = true;
    if (++p->acks >= l->md.q.ack_quorum && p == pending_at(l, 0))
        ledger_schedule_drain(l);
}

static void add_send(ledger_t *l, pending_add_t *p, int k)
{
    int slot = ledger_slot_of(l, p->entry_id, k);
    assert(!p->acked[k] && p->seq[k] == 0 && slot_usable(l, slot));
    add_req_t *r = malloc(sizeof *r);
    if (!r) {
        ledger_fail_writes(l, -ENOMEM);
        return;
    }
    *r = (add_req_t){
        .l = l, .bookie = l->ens[slot], .entry_id = p->entry_id, .seq = ++l->send_seq, .k = k};
    p->seq[k] = r->seq;
    p->sent_at[k] = ev_now(l->lc->loop);
    lobj_hold(&l->obj);
    int rc = bk_client_add(r->bookie, l->id, p->entry_id, l->lac, p->data, add_bookie_done, r);
    if (rc < 0) {
        lobj_back(&l->obj);
        free(r);
        p->seq[k] = 0;
        if (rc == QE_BUSY)
            ledger_retry_later(l);
        else
            ledger_slot_failed(l, slot, rc);
    }
}

/* Sends every (entry, position) neither acked nor outstanding, if its slot works. */
static void ledger_send_unsent(ledger_t *l)
{
    for (uint32_t i = 0; i < l->npending && !l->fail_rc; i++) {
        pending_add_t *p = pending_at(l, i);
        for (int k = 0; k < l->md.q.write_quorum; k++)
            if (!p->acked[k] && !p->seq[k] && slot_usable(l, ledger_slot_of(l, p->entry_id, k)))
                add_send(l, p, k);
    }
}

static void add_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    ledger_t *l = w->data;
    double now = ev_now(loop), limit = l->lc->cfg.add_timeout_ms / 1000.0;
    for (uint32_t i = 0; i < l->npending && !l->fail_rc; i++) {
        pending_add_t *p = pending_at(l, i);
        for (int k = 0; k < l->md.q.write_quorum; k++)
            if (p->seq[k] && now - p->sent_at[k] >= limit)
                ledger_slot_failed(l, ledger_slot_of(l, p->entry_id, k), QE_TIMEOUT);
    }
    if (l->npending == 0)
        ev_timer_stop(loop, w);
}

int ledger_add(ledger_t *l, qbuf_t *data, ledger_add_cb cb, void *arg)
{
    assert(data);
    if (l->role != LEDGER_ROLE_WRITER || l->closing) {
        log_warn("ledger", "add refused: ledger %" PRId64 " is read-only", l->id);
        return QE_READ_ONLY;
    }
    if (l->fail_rc) {
        log_warn("ledger", "add refused: ledger %" PRId64 ": %s", l->id, q_strerror(l->fail_rc));
        return l->fail_rc;
    }
    if (l->npending >= l->lc->cfg.pending_adds_max) {
        log_warn("ledger", "add refused: ledger %" PRId64 " has %u adds pending", l->id,
                 l->npending);
        return QE_BUSY;
    }
    pending_add_t *p = calloc(1, sizeof *p);
    if (!p || ring_push(l, p) < 0) {
        free(p);
        return -ENOMEM;
    }
    p->entry_id = l->next_entry_id++;
    p->data = qbuf_ref(data);
    p->cb = cb;
    p->arg = arg;
    if (!ev_is_active(&l->timer)) {
        double iv = l->lc->cfg.add_timeout_ms / 2000.0;
        ev_timer_init(&l->timer, add_timer_cb, iv, iv);
        l->timer.data = l;
        ev_timer_start(l->lc->loop, &l->timer);
    }
    for (int k = 0; k < l->md.q.write_quorum; k++)
        if (!p->acked[k] && !p->seq[k] && slot_usable(l, ledger_slot_of(l, p->entry_id, k)))
            add_send(l, p, k);
    return 0;
}

/* ---------------------------------------------------- ensemble change -- */

static void change_write(ledger_t *l);

void ledger_change_free(ledger_t *l)
{
    if (l->change) {
        ledger_md_free(&l->change->md);
        free(l->change);
        l->change = NULL;
    }
}

static void change_abort(ledger_t *l, int rc)
{
    ledger_change_free(l);
    ledger_fail_writes(l, rc);
}

static void change_commit(ledger_t *l, int64_t version)
{
    ledger_md_free(&l->md);
    l->md = l->change->md;
    memset(&l->change->md, 0, sizeof l->change->md);
    l->md_version = version;
    memcpy(l->ens, l->change->ens, sizeof l->ens);
    ledger_change_free(l);
    l->changes++;
    l->md_retries = 0;
    const ledger_segment_t *s = &l->md.segments[l->md.nsegments - 1];
    log_info("ledger", "ledger %" PRId64 ": ensemble changed at entry %" PRId64 " (%zu segments)",
             l->id, s->first_entry_id, l->md.nsegments);
    ledger_send_unsent(l);
    if (l->failed_slots && !l->fail_rc)
        ledger_change_ensemble(l);
    ledger_schedule_drain(l); /* a close may wait for the change */
}

static void change_reread_done(int rc, const void *value, size_t len, const md_stat_t *stat,
                               void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    ledger_md_t md;
    if (rc == 0)
        rc = ledger_md_decode(value, len, &md);
    if (rc < 0) {
        change_abort(l, rc);
        return;
    }
    int state = md.state;
    ledger_md_free(&md);
    if (state != LEDGER_STATE_OPEN) {
        log_warn("ledger", "ledger %" PRId64 " is %s: writer fenced", l->id,
                 ledger_state_name(state));
        change_abort(l, QE_FENCED);
    } else if (++l->md_retries > LEDGER_MD_RETRIES_MAX) {
        change_abort(l, QE_BUSY);
    } else {
        l->md_version = stat->version;
        change_write(l);
    }
}

/* A metadata write lost its compare-and-set: reads the ledger's metadata
 * again into cb (which decides whether to retry). 0, or < 0 if the read could
 * not be started. */
static int md_reread(ledger_t *l, md_get_cb cb)
{
    char path[32];
    ledger_md_path(l->id, path, sizeof path);
    lobj_hold(&l->obj);
    int rc = md_get(l->lc->md, path, cb, l);
    if (rc < 0)
        lobj_back(&l->obj);
    return rc;
}

static void change_done(int rc, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc == 0) {
        change_commit(l, stat->version);
        return;
    }
    if (rc == QE_BAD_VERSION)
        rc = md_reread(l, change_reread_done);
    if (rc < 0)
        change_abort(l, rc);
}

static void change_write(ledger_t *l)
{
    char path[32], *text;
    size_t len;
    ledger_md_path(l->id, path, sizeof path);
    int rc = ledger_md_encode(&l->change->md, &text, &len);
    if (rc == 0) {
        lobj_hold(&l->obj);
        rc = md_put(l->lc->md, path, text, len, l->md_version, NULL, change_done, l);
        if (rc < 0)
            lobj_back(&l->obj);
        free(text);
    }
    if (rc < 0)
        change_abort(l, rc);
}

/* The metadata of the change: the last segment, or a new one, from lac+1. */
static int change_md_build(ledger_t *l)
{
    int rc = ledger_md_copy(&l->md, &l->change->md);
    if (rc < 0)
        return rc;
    ledger_md_t *m = &l->change->md;
    ledger_segment_t *last = &m->segments[m->nsegments - 1];
    if (last->first_entry_id != l->lac + 1) {
        if (m->nsegments >= LEDGER_SEGMENTS_MAX)
            return QE_TOO_LARGE;
        ledger_segment_t *segs = realloc(m->segments, (m->nsegments + 1) * sizeof *segs);
        if (!segs)
            return -ENOMEM;
        m->segments = segs;
        last = &segs[m->nsegments];
        memset(last, 0, sizeof *last);
        if (ledger_segment_alloc(last, m->q.ensemble) < 0)
            return -ENOMEM;
        m->nsegments++;
        last->first_entry_id = l->lac + 1;
        last->length_before = l->length;
    }
    for (int i = 0; i < m->q.ensemble; i++)
        snprintf(last->bookies[i], LEDGER_BOOKIE_ID_MAX, "%s", l->change->ens[i]->id);
    return 0;
}

static void ledger_change_ensemble(ledger_t *l)
{
    assert(!l->change && l->failed_slots && !l->fail_rc);
    if ((uint32_t)l->changes >= l->lc->cfg.ensemble_changes_max) {
        log_warn("ledger", "ledger %" PRId64 ": %d ensemble changes, no more", l->id, l->changes);
        ledger_fail_writes(l, QE_UNAVAILABLE);
        return;
    }
    int n = 0, e = l->md.q.ensemble;
    uint64_t avoid = l->avoid;
    for (int i = 0; i < e; i++) {
        int bi = lc_bookie_index(l->lc, l->ens[i]);
        if (bi >= 0)
            avoid |= UINT64_C(1) << bi;
        n += (l->failed_slots >> i) & 1;
    }
    bk_client_t *repl[LEDGER_ENSEMBLE_MAX];
    if (lc_choose_bookies(l->lc, n, avoid, repl) < 0) {
        log_warn("ledger", "ledger %" PRId64 ": no bookie to replace %d failed", l->id, n);
        ledger_fail_writes(l, QE_UNAVAILABLE);
        return;
    }
    if (!(l->change = calloc(1, sizeof *l->change))) {
        ledger_fail_writes(l, -ENOMEM);
        return;
    }
    for (int i = 0, j = 0; i < e; i++)
        l->change->ens[i] = ((l->failed_slots >> i) & 1) ? repl[j++] : l->ens[i];
    l->change->slots = l->failed_slots;
    l->failed_slots = 0;
    int rc = change_md_build(l);
    if (rc < 0)
        change_abort(l, rc);
    else
        change_write(l);
}

/* -------------------------------------------------------------- close -- */

static void close_finish(ledger_t *l, int rc)
{
    if (rc < 0)
        log_warn("ledger", "close of ledger %" PRId64 ": %s", l->id, q_strerror(rc));
    else
        log_debug("ledger", "ledger %" PRId64 " closed at entry %" PRId64 " (%" PRIu64 " bytes)",
                  l->id, l->lac, l->length);
    l->close_cb(rc, l->close_arg);
    ledger_kill(l);
}

static void close_write(ledger_t *l);

static void close_reread_done(int rc, const void *value, size_t len, const md_stat_t *stat,
                              void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    ledger_md_t md;
    if (rc == 0)
        rc = ledger_md_decode(value, len, &md);
    if (rc < 0) {
        close_finish(l, rc);
        return;
    }
    int state = md.state;
    int64_t last = md.last_entry_id;
    ledger_md_free(&md);
    if (state == LEDGER_STATE_CLOSED && last == l->lac) {
        close_finish(l, 0); /* closed by a recovery exactly where we stopped */
    } else if (state != LEDGER_STATE_OPEN) {
        close_finish(l, QE_FENCED);
    } else if (++l->md_retries > LEDGER_MD_RETRIES_MAX) {
        close_finish(l, QE_BUSY);
    } else {
        l->md_version = stat->version;
        close_write(l);
    }
}

static void close_done(int rc, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc == 0) {
        l->md.state = LEDGER_STATE_CLOSED;
        l->md.last_entry_id = l->lac;
        l->md.length = l->length;
        l->md_version = stat->version;
        close_finish(l, l->fail_rc == QE_FENCED ? QE_FENCED : 0);
        return;
    }
    if (rc == QE_BAD_VERSION)
        rc = md_reread(l, close_reread_done);
    if (rc < 0)
        close_finish(l, rc);
}

static void close_write(ledger_t *l)
{
    ledger_md_t md;
    char path[32], *text = NULL;
    size_t len;
    int rc = ledger_md_copy(&l->md, &md);
    if (rc == 0) {
        md.state = LEDGER_STATE_CLOSED;
        md.last_entry_id = l->lac;
        md.length = l->length;
        rc = ledger_md_encode(&md, &text, &len);
        ledger_md_free(&md);
    }
    if (rc == 0) {
        ledger_md_path(l->id, path, sizeof path);
        lobj_hold(&l->obj);
        rc = md_put(l->lc->md, path, text, len, l->md_version, NULL, close_done, l);
        if (rc < 0)
            lobj_back(&l->obj);
    }
    free(text);
    if (rc < 0)
        close_finish(l, rc);
}

static void ledger_close_check(ledger_t *l)
{
    if (!l->closing || l->close_started || l->npending || l->change)
        return;
    l->close_started = true;
    close_write(l);
}

static void reader_close_posted(void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    l->close_cb(0, l->close_arg);
    ledger_kill(l);
}

int ledger_close(ledger_t *l, ledger_done_cb cb, void *arg)
{
    if (l->closing) {
        log_warn("ledger", "close refused: ledger %" PRId64 " already closing", l->id);
        return QE_CLOSED;
    }
    if (l->role != LEDGER_ROLE_WRITER && l->role != LEDGER_ROLE_READER) {
        log_warn("ledger", "close refused: ledger %" PRId64 " is not open yet", l->id);
        return QE_INVALID;
    }
    l->closing = true;
    l->close_cb = cb;
    l->close_arg = arg;
    if (l->role == LEDGER_ROLE_READER)
        lc_post(l->lc, &l->obj, reader_close_posted); /* a reader just lets go */
    else
        ledger_schedule_drain(l);
    return 0;
}
