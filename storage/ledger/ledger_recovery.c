/*
 * ledger_recovery.c — ledger_open: for reading, and for recovery.
 *
 * One phase runs at a time; requests carry the phase token and answers with an
 * older token, or for a position no longer waited for, are ignored. Bookie
 * phases are bounded by a timer of add_timeout_ms: positions still waiting then
 * count as QE_TIMEOUT.
 *
 *   MD_GET --CLOSED----------------------------------------------> done (reader)
 *     |--NO_RECOVERY--> READ_LAC (all E of the last segment) ----> done (reader)
 *     \--RECOVER--> MARK (CAS state=IN_RECOVERY; lost CAS: MD_GET again)
 *          --> FENCE (all E; go on at E-Qa+1 ok, fail if that cannot happen)
 *          --> for e = first entry of the last segment, e+1, ...:
 *                ENTRY_READ (all Qw of e's write set)
 *                  some have e  --> ENTRY_WRITE to the others (recovery add)
 *                                   --> >= Qa have it: length += size, next e
 *                  none, and >= Qw-Qa+1 say missing, and e > max LAC
 *                               --> e was never acknowledged: stop at e-1
 *                  otherwise    --> QE_UNAVAILABLE (cannot decide)
 *          --> CLOSE (CAS state=CLOSED, last_entry_id, length; a lost CAS
 *              re-reads: already CLOSED by another recovery => adopt it)
 *
 * Why the scan starts at the last segment's first entry and not at max LAC + 1
 * as BookKeeper does: entries carry no length of their own here, so the ledger
 * length is the segment's length_before plus the size of every entry read; and
 * each of those entries is brought back to Qw copies on the way (repair). The
 * cost is reading the last segment once, only when a writer died unclosed.
 * Entries up to max LAC were acknowledged, so a missing one there is an error,
 * never the end.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/ledger/ledger_int.h"

enum {
    PHASE_MD_GET = 1,
    PHASE_READ_LAC,
    PHASE_MARK,
    PHASE_FENCE,
    PHASE_ENTRY_READ,
    PHASE_ENTRY_WRITE,
    PHASE_CLOSE,
};

enum { ST_IDLE = 0, ST_WAIT, ST_OK, ST_MISSING, ST_ERR };

typedef struct open_req {
    ledger_t *l;
    uint32_t token;
    int k;
} open_req_t;

static void open_get(ledger_t *l);
static void open_entry_read(ledger_t *l);
static void open_answer(ledger_t *l, int k, int rc, int64_t lac, qbuf_t *entry);

static const ledger_segment_t *last_segment(const ledger_t *l)
{
    return &l->md.segments[l->md.nsegments - 1];
}

/* ------------------------------------------------------------- phases -- */

static void open_finish(ledger_t *l, int rc)
{
    ledger_open_state_t *o = l->open;
    ev_timer_stop(l->lc->loop, &l->timer);
    o->phase = 0;
    o->token++;
    qbuf_unref(o->entry);
    o->entry = NULL;
    if (rc < 0) {
        log_warn("ledger", "open of ledger %" PRId64 " failed: %s", l->id, q_strerror(rc));
        o->cb(rc, NULL, o->arg);
        ledger_kill(l);
        return;
    }
    l->role = LEDGER_ROLE_READER;
    log_debug("ledger", "ledger %" PRId64 " open (%s, lac %" PRId64 ")", l->id,
              ledger_state_name(l->md.state), l->lac);
    o->cb(0, l, o->arg);
}

/* Starts a phase: a new token, counters reset, the timer for bookie phases. */
static void phase_start(ledger_t *l, int phase)
{
    ledger_open_state_t *o = l->open;
    o->phase = phase;
    o->token++;
    o->waiting = o->ok = o->missing = o->errors = 0;
    memset(o->status, 0, sizeof o->status);
    ev_timer_stop(l->lc->loop, &l->timer);
    if (phase != PHASE_MD_GET && phase != PHASE_MARK && phase != PHASE_CLOSE) {
        ev_timer_set(&l->timer, l->lc->cfg.add_timeout_ms / 1000.0, 0.0);
        ev_timer_start(l->lc->loop, &l->timer);
    }
}

static void open_lac_done(int rc, int64_t lac, void *arg)
{
    open_req_t r = *(open_req_t *)arg;
    free(arg);
    if (!lobj_back(&r.l->obj) || r.token != r.l->open->token)
        return;
    open_answer(r.l, r.k, rc, lac, NULL);
}

static void open_read_done(int rc, qbuf_t *entry, int64_t lac, void *arg)
{
    open_req_t r = *(open_req_t *)arg;
    free(arg);
    if (!lobj_back(&r.l->obj) || r.token != r.l->open->token)
        return;
    open_answer(r.l, r.k, rc, lac, entry);
}

static void open_add_done(int rc, void *arg)
{
    open_lac_done(rc, -1, arg);
}

/* Issues the phase's call for position k to bk; returns a synchronous error. */
static int open_call(ledger_t *l, int k, bk_client_t *bk)
{
    ledger_open_state_t *o = l->open;
    if (!bk)
        return QE_UNAVAILABLE; /* a bookie this client does not know */
    open_req_t *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    *r = (open_req_t){.l = l, .token = o->token, .k = k};
    int rc;
    lobj_hold(&l->obj);
    if (o->phase == PHASE_FENCE)
        rc = bk_client_fence(bk, l->id, open_lac_done, r);
    else if (o->phase == PHASE_READ_LAC)
        rc = bk_client_read_lac(bk, l->id, open_lac_done, r);
    else if (o->phase == PHASE_ENTRY_READ)
        rc = bk_client_read(bk, l->id, o->entry_id, open_read_done, r);
    else
        rc = bk_client_recovery_add(bk, l->id, o->entry_id, o->entry_id - 1, o->entry,
                                    open_add_done, r);
    if (rc < 0) {
        lobj_back(&l->obj);
        free(r);
    }
    return rc;
}

/* Sends the phase's call to every position k < n with status ST_WAIT; the
 * synchronous failures are answered after all are sent (the answer may end the
 * phase). bookie_of(k) gives the bookie of position k. */
static void phase_send(ledger_t *l, int n, bk_client_t *const *bks)
{
    ledger_open_state_t *o = l->open;
    int rcs[LEDGER_ENSEMBLE_MAX] = {0};
    uint32_t token = o->token;
    for (int k = 0; k < n; k++)
        if (o->status[k] == ST_WAIT)
            rcs[k] = open_call(l, k, bks[k]);
    for (int k = 0; k < n && o->token == token; k++)
        if (rcs[k] < 0)
            open_answer(l, k, rcs[k], -1, NULL);
}

static void open_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ledger_t *l = w->data;
    ledger_open_state_t *o = l->open;
    uint32_t token = o->token;
    for (int k = 0; k < LEDGER_ENSEMBLE_MAX && o->token == token; k++)
        if (o->status[k] == ST_WAIT)
            open_answer(l, k, QE_TIMEOUT, -1, NULL);
}

/* --------------------------------------------------------- LAC, fence -- */

/* Fence (RECOVER) or read LAC (NO_RECOVERY) on every bookie of the last segment. */
static void open_lac_phase(ledger_t *l, int phase)
{
    phase_start(l, phase);
    l->open->max_lac = -1;
    bk_client_t *bks[LEDGER_ENSEMBLE_MAX];
    for (int i = 0; i < l->md.q.ensemble; i++) {
        bks[i] = lc_bookie_by_id(l->lc, last_segment(l)->bookies[i]);
        l->open->status[i] = ST_WAIT;
        l->open->waiting++;
    }
    phase_send(l, l->md.q.ensemble, bks);
}

static void open_scan_start(ledger_t *l)
{
    ledger_open_state_t *o = l->open;
    o->entry_id = last_segment(l)->first_entry_id;
    o->length = last_segment(l)->length_before;
    log_info("ledger", "recovering ledger %" PRId64 " from entry %" PRId64 " (max lac %" PRId64 ")",
             l->id, o->entry_id, o->max_lac);
    open_entry_read(l);
}

static void lac_answer(ledger_t *l, int rc, int64_t lac)
{
    ledger_open_state_t *o = l->open;
    int e = l->md.q.ensemble, need = e - l->md.q.ack_quorum + 1;
    if (rc == 0 || rc == QE_NO_LEDGER || rc == QE_NO_ENTRY) {
        o->ok++;
        if (rc == 0 && lac > o->max_lac)
            o->max_lac = lac;
    } else {
        o->errors++;
    }
    if (o->phase == PHASE_FENCE) {
        if (o->ok >= need)
            open_scan_start(l); /* the old writer can no longer reach Qa anywhere */
        else if (o->errors > e - need)
            open_finish(l, QE_UNAVAILABLE);
        return;
    }
    if (o->waiting > 0)
        return;
    if (o->ok == 0) {
        open_finish(l, QE_UNAVAILABLE);
        return;
    }
    /* Entries before the last segment were acknowledged when it was made. */
    int64_t floor = last_segment(l)->first_entry_id - 1;
    l->lac = o->max_lac > floor ? o->max_lac : floor;
    l->length = last_segment(l)->length_before;
    open_finish(l, 0);
}

/* ------------------------------------------------------ entry recovery -- */

static void open_entry_bookies(ledger_t *l, bk_client_t **bks)
{
    for (int k = 0; k < l->md.q.write_quorum; k++)
        bks[k] = ledger_bookie_for(l, l->open->entry_id, k);
}

static void open_entry_read(ledger_t *l)
{
    ledger_open_state_t *o = l->open;
    phase_start(l, PHASE_ENTRY_READ);
    qbuf_unref(o->entry);
    o->entry = NULL;
    bk_client_t *bks[LEDGER_ENSEMBLE_MAX];
    open_entry_bookies(l, bks);
    for (int k = 0; k < l->md.q.write_quorum; k++) {
        o->status[k] = ST_WAIT;
        o->waiting++;
    }
    phase_send(l, l->md.q.write_quorum, bks);
}

static void open_close_write(ledger_t *l);

static void open_entry_next(ledger_t *l)
{
    ledger_open_state_t *o = l->open;
    if (o->ok < l->md.q.write_quorum)
        log_warn("ledger", "ledger %" PRId64 " entry %" PRId64 " recovered on %d of %d bookies",
                 l->id, o->entry_id, o->ok, l->md.q.write_quorum);
    o->length += o->entry->len;
    o->entry_id++;
    open_entry_read(l);
}

/* Re-replicates the entry to the positions of its write set without it. */
static void open_entry_write(ledger_t *l)
{
    ledger_open_state_t *o = l->open;
    int have[LEDGER_ENSEMBLE_MAX], ok = o->ok;
    memcpy(have, o->status, sizeof have);
    phase_start(l, PHASE_ENTRY_WRITE);
    o->ok = ok;
    bk_client_t *bks[LEDGER_ENSEMBLE_MAX];
    open_entry_bookies(l, bks);
    for (int k = 0; k < l->md.q.write_quorum; k++) {
        o->status[k] = have[k] == ST_OK ? ST_OK : ST_WAIT;
        o->waiting += o->status[k] == ST_WAIT;
    }
    phase_send(l, l->md.q.write_quorum, bks);
}

static void entry_read_decide(ledger_t *l)
{
    ledger_open_state_t *o = l->open;
    int qw = l->md.q.write_quorum, qa = l->md.q.ack_quorum;
    if (o->ok == qw) {
        open_entry_next(l);
    } else if (o->ok > 0) {
        open_entry_write(l);
    } else if (o->missing >= qw - qa + 1 && o->entry_id > o->max_lac) {
        o->entry_id--; /* e was never acknowledged: the ledger ends before it */
        open_close_write(l);
    } else {
        log_warn("ledger",
                 "ledger %" PRId64 " entry %" PRId64 ": %d missing, %d errors, lac %" PRId64, l->id,
                 o->entry_id, o->missing, o->errors, o->max_lac);
        open_finish(l, QE_UNAVAILABLE);
    }
}

static void entry_answer(ledger_t *l, int k, int rc, qbuf_t *entry)
{
    ledger_open_state_t *o = l->open;
    if (rc == 0) {
        o->status[k] = ST_OK;
        o->ok++;
        if (o->phase == PHASE_ENTRY_READ && !o->entry)
            o->entry = qbuf_ref(entry);
    } else if (o->phase == PHASE_ENTRY_READ && (rc == QE_NO_ENTRY || rc == QE_NO_LEDGER)) {
        o->status[k] = ST_MISSING;
        o->missing++;
    } else {
        o->status[k] = ST_ERR;
        o->errors++;
    }
    if (o->waiting > 0)
        return;
    if (o->phase == PHASE_ENTRY_READ)
        entry_read_decide(l);
    else if (o->ok >= l->md.q.ack_quorum)
        open_entry_next(l);
    else
        open_finish(l, QE_UNAVAILABLE);
}

static void open_answer(ledger_t *l, int k, int rc, int64_t lac, qbuf_t *entry)
{
    ledger_open_state_t *o = l->open;
    assert(k >= 0 && k < LEDGER_ENSEMBLE_MAX);
    if (o->status[k] != ST_WAIT)
        return; /* already timed out */
    o->status[k] = ST_ERR;
    o->waiting--;
    if (o->phase == PHASE_FENCE || o->phase == PHASE_READ_LAC)
        lac_answer(l, rc, lac);
    else
        entry_answer(l, k, rc, entry);
}

/* ------------------------------------------------------- metadata CAS -- */

/* Writes l->md with state (and the recovery's end when CLOSED), CAS. */
static int open_md_put(ledger_t *l, int state, md_put_cb cb)
{
    ledger_md_t md;
    char path[32], *text = NULL;
    size_t len;
    int rc = ledger_md_copy(&l->md, &md);
    if (rc < 0)
        return rc;
    md.state = state;
    if (state == LEDGER_STATE_CLOSED) {
        md.last_entry_id = l->open->entry_id;
        md.length = l->open->length;
    }
    rc = ledger_md_encode(&md, &text, &len);
    ledger_md_free(&md);
    if (rc < 0)
        return rc;
    ledger_md_path(l->id, path, sizeof path);
    lobj_hold(&l->obj);
    rc = md_put(l->lc->md, path, text, len, l->md_version, NULL, cb, l);
    if (rc < 0)
        lobj_back(&l->obj);
    free(text);
    return rc;
}

/* A lost CAS: start over from the metadata (bounded). */
static void open_retry(ledger_t *l)
{
    if (++l->open->retries > LEDGER_MD_RETRIES_MAX) {
        open_finish(l, QE_BUSY);
        return;
    }
    open_get(l);
}

static void open_close_done(int rc, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc == QE_BAD_VERSION) {
        open_retry(l); /* MD_GET adopts a close made by a concurrent recovery */
        return;
    }
    if (rc == 0) {
        l->md.state = LEDGER_STATE_CLOSED;
        l->md.last_entry_id = l->open->entry_id;
        l->md.length = l->open->length;
        l->md_version = stat->version;
        l->lac = l->md.last_entry_id;
        l->length = l->md.length;
        log_info("ledger", "ledger %" PRId64 " recovered: closed at entry %" PRId64, l->id, l->lac);
    }
    open_finish(l, rc);
}

static void open_close_write(ledger_t *l)
{
    phase_start(l, PHASE_CLOSE);
    int rc = open_md_put(l, LEDGER_STATE_CLOSED, open_close_done);
    if (rc < 0)
        open_finish(l, rc);
}

static void open_mark_done(int rc, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc == QE_BAD_VERSION) {
        open_retry(l);
        return;
    }
    if (rc < 0) {
        open_finish(l, rc);
        return;
    }
    l->md.state = LEDGER_STATE_IN_RECOVERY;
    l->md_version = stat->version;
    open_lac_phase(l, PHASE_FENCE);
}

static void open_get_done(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc == QE_NOT_FOUND)
        rc = QE_NO_LEDGER;
    ledger_md_free(&l->md);
    if (rc == 0)
        rc = ledger_md_decode(value, len, &l->md);
    if (rc < 0) {
        open_finish(l, rc);
        return;
    }
    l->md_version = stat->version;
    if (l->md.state == LEDGER_STATE_CLOSED) {
        l->lac = l->md.last_entry_id;
        l->length = l->md.length;
        open_finish(l, 0);
    } else if (l->open->flags & LEDGER_OPEN_RECOVER) {
        phase_start(l, PHASE_MARK);
        rc = open_md_put(l, LEDGER_STATE_IN_RECOVERY, open_mark_done);
        if (rc < 0)
            open_finish(l, rc);
    } else {
        open_lac_phase(l, PHASE_READ_LAC);
    }
}

static void open_get(ledger_t *l)
{
    char path[32];
    ledger_md_path(l->id, path, sizeof path);
    phase_start(l, PHASE_MD_GET);
    lobj_hold(&l->obj);
    int rc = md_get(l->lc->md, path, open_get_done, l);
    if (rc < 0) {
        lobj_back(&l->obj);
        open_finish(l, rc);
    }
}

int ledger_open(ledger_client_t *lc, int64_t ledger_id, int flags, ledger_open_cb cb, void *arg)
{
    if (ledger_id < 0 || (flags & ~LEDGER_OPEN_RECOVER)) {
        log_warn("ledger", "open refused: ledger %" PRId64 " flags %d", ledger_id, flags);
        return QE_INVALID;
    }
    ledger_t *l = ledger_alloc(lc, ledger_id, LEDGER_ROLE_OPENING);
    if (!l)
        return -ENOMEM;
    /* kept until the handle goes: late answers check its token */
    if (!(l->open = calloc(1, sizeof *l->open))) {
        ledger_kill(l);
        return -ENOMEM;
    }
    l->open->flags = flags;
    l->open->cb = cb;
    l->open->arg = arg;
    ev_init(&l->timer, open_timer_cb);
    l->timer.data = l;
    char path[32];
    ledger_md_path(l->id, path, sizeof path);
    phase_start(l, PHASE_MD_GET);
    lobj_hold(&l->obj);
    int rc = md_get(lc->md, path, open_get_done, l);
    if (rc < 0) {
        lobj_back(&l->obj);
        ledger_kill(l); /* refused at once: cb is never called */
    }
    return rc;
}
