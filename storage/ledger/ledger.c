/*
 * ledger.c — the ledger client: bookies, ensemble choice, ledger ids, create,
 * delete, handle lifetime and accessors. The add path and ensemble change are in
 * ledger_write.c, open and recovery in ledger_recovery.c, reads in
 * ledger_read.c, the metadata encoding in ledger_metadata.c; docs/ledger.md
 * puts them together.
 *
 * Ledger ids. The key /ledgers/counter holds, in decimal ASCII, the first id no
 * client has reserved (1 when absent). A client reserves a block of ids at once
 * by compare-and-set of counter -> counter + block and hands them out from
 * memory; the block is LEDGER_ID_BLOCK, or twice the creates waiting when more
 * wait (lc_id_block_size), so a burst of creates needs one or two updates. The
 * counter only grows, so an id is never handed out twice, across clients and
 * restarts; ids reserved by a client that stops are skipped. Creates that
 * arrive while a block is being reserved wait in a FIFO (bounded by
 * LEDGER_CREATES_WAITING_MAX: QE_BUSY beyond).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/ledger/ledger_int.h"

/* ------------------------------------------------------------ lifetime -- */

void lobj_list_init(lobj_t *head)
{
    head->prev = head->next = head;
}

void lobj_link(lobj_t *head, lobj_t *o)
{
    o->next = head->next;
    o->prev = head;
    head->next->prev = o;
    head->next = o;
}

void lobj_hold(lobj_t *o)
{
    assert(!o->dead);
    o->inflight++;
}

bool lobj_back(lobj_t *o)
{
    assert(o->inflight > 0);
    o->inflight--;
    if (!o->dead)
        return true;
    if (o->inflight == 0)
        o->destroy(o);
    return false;
}

void lobj_kill(lobj_t *o)
{
    if (o->dead)
        return;
    o->dead = true;
    if (o->next) {
        o->prev->next = o->next;
        o->next->prev = o->prev;
        o->next = o->prev = NULL;
    }
    if (o->on_kill)
        o->on_kill(o);
    if (o->inflight == 0)
        o->destroy(o);
}

void lc_post(ledger_client_t *lc, lobj_t *o, void (*fn)(void *))
{
    lobj_hold(o);
    if (qloop_post(lc->mailbox, fn, o) != 0) {
        log_error("ledger", "out of memory posting a callback");
        abort();
    }
}

/* ------------------------------------------------------------- client -- */

void ledger_client_config_defaults(ledger_client_config_t *cfg)
{
    cfg->add_timeout_ms = 5000;
    cfg->pending_adds_max = 10000;
    cfg->ensemble_changes_max = 32;
}

int ledger_client_new(struct ev_loop *loop, md_store_t *md, const ledger_client_config_t *cfg,
                      ledger_client_t **out)
{
    ledger_client_t *lc = calloc(1, sizeof *lc);
    if (!lc)
        return -ENOMEM;
    lc->loop = loop;
    lc->md = md;
    if (cfg)
        lc->cfg = *cfg;
    else
        ledger_client_config_defaults(&lc->cfg);
    if (lc->cfg.add_timeout_ms == 0 || lc->cfg.pending_adds_max == 0) {
        log_warn("ledger", "client config refused: zero timeout or pending bound");
        free(lc);
        return QE_INVALID;
    }
    lc->mailbox = qloop_mailbox_new(loop);
    if (!lc->mailbox) {
        free(lc);
        return -ENOMEM;
    }
    lobj_list_init(&lc->objs);
    *out = lc;
    return 0;
}

void ledger_client_free(ledger_client_t *lc)
{
    if (!lc)
        return;
    while (lc->objs.next != &lc->objs)
        lobj_kill(lc->objs.next);
    if (lc->id_alloc)
        lobj_kill(lc->id_alloc);
    /* Runs posted functions: they find their objects dead. */
    qloop_mailbox_free(lc->mailbox);
    free(lc);
}

int ledger_client_add_bookie(ledger_client_t *lc, bk_client_t *bookie)
{
    assert(bookie && bookie->ops);
    if (lc_bookie_by_id(lc, bookie->id)) {
        log_warn("ledger", "bookie %s already added", bookie->id);
        return QE_EXISTS;
    }
    if (lc->nbookies >= LEDGER_BOOKIES_MAX) {
        log_warn("ledger", "bookie %s refused: %d bookies already", bookie->id, lc->nbookies);
        return QE_TOO_LARGE;
    }
    lc->bookies[lc->nbookies++] = (ledger_bookie_t){.client = bookie, .down = false};
    return 0;
}

void ledger_client_mark_bookie_down(ledger_client_t *lc, const char *bookie_id)
{
    for (int i = 0; i < lc->nbookies; i++)
        if (strcmp(lc->bookies[i].client->id, bookie_id) == 0)
            lc->bookies[i].down = true;
}

/* A bookie new ensembles and replacements may use: not marked down, and
 * taking adds as far as its handle knows (not read-only). */
static bool lc_bookie_usable(const ledger_client_t *lc, int i)
{
    return !lc->bookies[i].down && bk_client_writable(lc->bookies[i].client);
}

int ledger_client_bookies_available(const ledger_client_t *lc)
{
    int n = 0;
    for (int i = 0; i < lc->nbookies; i++)
        n += lc_bookie_usable(lc, i);
    return n;
}

void ledger_quorum_default(int nbookies, ledger_quorum_t *out)
{
    if (nbookies >= 3)
        *out = (ledger_quorum_t){.ensemble = 3, .write_quorum = 3, .ack_quorum = 2};
    else
        *out = (ledger_quorum_t){.ensemble = 1, .write_quorum = 1, .ack_quorum = 1};
}

bk_client_t *lc_bookie_by_id(ledger_client_t *lc, const char *id)
{
    for (int i = 0; i < lc->nbookies; i++)
        if (strcmp(lc->bookies[i].client->id, id) == 0)
            return lc->bookies[i].client;
    return NULL;
}

int lc_bookie_index(ledger_client_t *lc, const bk_client_t *c)
{
    for (int i = 0; i < lc->nbookies; i++)
        if (lc->bookies[i].client == c)
            return i;
    return -1;
}

int lc_choose_bookies(ledger_client_t *lc, int n, uint64_t avoid, bk_client_t **out)
{
    int got = 0;
    for (int i = 0; i < lc->nbookies && got < n; i++) {
        int b = (lc->rr_next + i) % lc->nbookies;
        if (lc_bookie_usable(lc, b) && !(avoid & (UINT64_C(1) << b)))
            out[got++] = lc->bookies[b].client;
    }
    if (got < n)
        return QE_UNAVAILABLE;
    lc->rr_next = (lc->rr_next + 1) % lc->nbookies;
    return 0;
}

/* ------------------------------------------------------- id allocation -- */

typedef struct id_alloc {
    lobj_t obj;
    ledger_client_t *lc;
    int retries;
    int rc;        /* a failure reported from the loop */
    int64_t first; /* the counter value read */
    int64_t block; /* ids this update reserves */
} id_alloc_t;

static void id_alloc_destroy(lobj_t *o)
{
    free(o);
}

static void id_alloc_get(id_alloc_t *a);

/* Serves waiters from the reserved block; rc < 0 fails them all. */
static void id_waiters_serve(ledger_client_t *lc, int rc)
{
    while (lc->id_waiters_head && (rc < 0 || lc->id_next < lc->id_limit)) {
        ledger_t *l = lc->id_waiters_head;
        lc->id_waiters_head = l->id_next_waiter;
        if (!lc->id_waiters_head)
            lc->id_waiters_tail = NULL;
        lc->id_waiters--;
        l->id_next_waiter = NULL;
        ledger_id_ready(l, rc, rc < 0 ? -1 : lc->id_next++);
    }
}

static void id_alloc_finish(id_alloc_t *a, int rc)
{
    ledger_client_t *lc = a->lc;
    lc->id_alloc = NULL;
    lobj_kill(&a->obj);
    if (rc < 0)
        log_error("ledger", "ledger id block not reserved: %s", q_strerror(rc));
    id_waiters_serve(lc, rc);
    if (lc->id_waiters_head)
        lc_id_request(lc, NULL); /* more waiters than one block */
}

static void id_alloc_put_done(int rc, const md_stat_t *stat, void *arg)
{
    (void)stat;
    id_alloc_t *a = arg;
    if (!lobj_back(&a->obj))
        return;
    if ((rc == QE_BAD_VERSION || rc == QE_EXISTS) && ++a->retries < LEDGER_MD_RETRIES_MAX) {
        id_alloc_get(a); /* another client moved the counter: read again */
        return;
    }
    if (rc == 0) {
        a->lc->id_next = a->first;
        a->lc->id_limit = a->first + a->block;
    }
    id_alloc_finish(a, rc == QE_BAD_VERSION || rc == QE_EXISTS ? QE_BUSY : rc);
}

static int64_t counter_parse(const void *value, size_t len)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, value, len);
    buf[len] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    return (*end || v < 1) ? -1 : (int64_t)v;
}

static void id_alloc_get_done(int rc, const void *value, size_t len, const md_stat_t *stat,
                              void *arg)
{
    id_alloc_t *a = arg;
    if (!lobj_back(&a->obj))
        return;
    int64_t version = MD_VERSION_NEW;
    a->first = 1;
    if (rc == 0) {
        version = stat->version;
        a->first = counter_parse(value, len);
        if (a->first < 0) {
            log_error("ledger", "%s holds no counter", LEDGER_COUNTER_PATH);
            id_alloc_finish(a, QE_CORRUPT);
            return;
        }
    } else if (rc != QE_NOT_FOUND) {
        id_alloc_finish(a, rc);
        return;
    }
    a->block = lc_id_block_size(a->lc->id_waiters);
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRId64, a->first + a->block);
    lobj_hold(&a->obj);
    rc = md_put(a->lc->md, LEDGER_COUNTER_PATH, text, (size_t)n, version, NULL, id_alloc_put_done,
                a);
    if (rc < 0) {
        lobj_back(&a->obj);
        id_alloc_finish(a, rc);
    }
}

/* Ids one counter update reserves: twice the creates waiting when it reads the
 * counter (those arriving during its put are served too), at least
 * LEDGER_ID_BLOCK. 1,000 creates at once cost one update (two metadata round
 * trips) instead of ten in sequence. Ids unused at a restart are skipped,
 * never reused (the counter only grows). */
int64_t lc_id_block_size(uint32_t waiters)
{
    int64_t n = 2 * (int64_t)waiters;
    return n < LEDGER_ID_BLOCK       ? LEDGER_ID_BLOCK
           : n > LEDGER_ID_BLOCK_MAX ? LEDGER_ID_BLOCK_MAX
                                     : n;
}

static void id_alloc_failed_posted(void *arg)
{
    id_alloc_t *a = arg;
    if (!lobj_back(&a->obj))
        return;
    id_alloc_finish(a, a->rc);
}

static void id_alloc_get(id_alloc_t *a)
{
    lobj_hold(&a->obj);
    int rc = md_get(a->lc->md, LEDGER_COUNTER_PATH, id_alloc_get_done, a);
    if (rc < 0) {
        /* Maybe inside ledger_create: the failure is reported from the loop. */
        lobj_back(&a->obj);
        a->rc = rc;
        lc_post(a->lc, &a->obj, id_alloc_failed_posted);
    }
}

static void id_alloc_serve_posted(void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    ledger_client_t *lc = l->lc;
    id_waiters_serve(lc, 0);
    /* A burst that outlasts the block: the rest wait for the next one (without
     * this they waited for some later create to ask for it). */
    if (lc->id_waiters_head) {
        int rc = lc_id_request(lc, NULL);
        if (rc < 0)
            id_waiters_serve(lc, rc);
    }
}

int lc_id_request(ledger_client_t *lc, ledger_t *l)
{
    if (l) {
        if (lc->id_waiters >= LEDGER_CREATES_WAITING_MAX) {
            log_warn("ledger", "create refused: %u creates waiting for ids", lc->id_waiters);
            return QE_BUSY;
        }
        if (lc->id_waiters_tail)
            lc->id_waiters_tail->id_next_waiter = l;
        else
            lc->id_waiters_head = l;
        lc->id_waiters_tail = l;
        lc->id_waiters++;
    }
    if (lc->id_next < lc->id_limit) {
        if (l)
            lc_post(lc, &l->obj, id_alloc_serve_posted); /* never inline */
        return 0;
    }
    if (lc->id_alloc)
        return 0;
    id_alloc_t *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    a->obj.destroy = id_alloc_destroy;
    a->lc = lc;
    lc->id_alloc = &a->obj;
    id_alloc_get(a);
    return 0;
}

/* Removes l from the waiters (it is being killed). */
static void id_waiters_remove(ledger_client_t *lc, ledger_t *l)
{
    ledger_t **pp = &lc->id_waiters_head, *prev = NULL;
    while (*pp && *pp != l) {
        prev = *pp;
        pp = &(*pp)->id_next_waiter;
    }
    if (!*pp)
        return;
    *pp = l->id_next_waiter;
    if (lc->id_waiters_tail == l)
        lc->id_waiters_tail = prev;
    lc->id_waiters--;
}

/* --------------------------------------------------------- ledger handle -- */

static void ledger_on_kill(lobj_t *o)
{
    ledger_t *l = (ledger_t *)o;
    ev_timer_stop(l->lc->loop, &l->timer);
    ev_timer_stop(l->lc->loop, &l->retry);
    while (l->reads.next != &l->reads)
        lobj_kill(l->reads.next);
    if (l->role == LEDGER_ROLE_CREATING)
        id_waiters_remove(l->lc, l);
}

static void ledger_destroy(lobj_t *o)
{
    ledger_t *l = (ledger_t *)o;
    ledger_writer_free(l);
    ledger_md_free(&l->md);
    ledger_change_free(l);
    if (l->open) {
        qbuf_unref(l->open->entry);
        free(l->open);
    }
    free(l);
}

ledger_t *ledger_alloc(ledger_client_t *lc, int64_t id, int role)
{
    ledger_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->obj.on_kill = ledger_on_kill;
    l->obj.destroy = ledger_destroy;
    l->lc = lc;
    l->id = id;
    l->role = role;
    l->lac = -1;
    l->md_version = -1;
    lobj_list_init(&l->reads);
    lobj_link(&lc->objs, &l->obj);
    return l;
}

void ledger_kill(ledger_t *l)
{
    lobj_kill(&l->obj);
}

void ledger_release(ledger_t *l)
{
    if (!l)
        return;
    if (l->role == LEDGER_ROLE_WRITER && l->npending)
        log_warn("ledger", "ledger %" PRId64 " released with %u adds pending (no callbacks)", l->id,
                 l->npending);
    ledger_kill(l);
}

bk_client_t *ledger_bookie_for(ledger_t *l, int64_t entry_id, int k)
{
    const ledger_segment_t *s = &l->md.segments[ledger_md_segment_of(&l->md, entry_id)];
    return lc_bookie_by_id(l->lc, s->bookies[ledger_slot_of(l, entry_id, k)]);
}

int64_t ledger_id(const ledger_t *l)
{
    return l->id;
}

int64_t ledger_last_add_confirmed(const ledger_t *l)
{
    return l->lac;
}

void ledger_raise_lac(ledger_t *l, int64_t lac)
{
    if (l->role == LEDGER_ROLE_READER && l->md.state != LEDGER_STATE_CLOSED && lac > l->lac)
        l->lac = lac;
}

bool ledger_is_closed(const ledger_t *l)
{
    return l->md.state == LEDGER_STATE_CLOSED;
}

uint64_t ledger_length_bytes(const ledger_t *l)
{
    return l->length;
}

/* ------------------------------------------------------------- create -- */

static void ledger_create_done(int rc, const md_stat_t *stat, void *arg)
{
    ledger_t *l = arg;
    if (!lobj_back(&l->obj))
        return;
    if (rc < 0) {
        log_error("ledger", "ledger %" PRId64 " metadata not created: %s", l->id, q_strerror(rc));
        l->create_cb(rc, NULL, l->create_arg);
        ledger_kill(l);
        return;
    }
    l->md_version = stat->version;
    l->role = LEDGER_ROLE_WRITER;
    log_debug("ledger", "ledger %" PRId64 " created (E=%d Qw=%d Qa=%d)", l->id, l->md.q.ensemble,
              l->md.q.write_quorum, l->md.q.ack_quorum);
    l->create_cb(0, l, l->create_arg);
}

void ledger_id_ready(ledger_t *l, int rc, int64_t id)
{
    char path[32];
    char *text = NULL;
    size_t len = 0;
    if (rc == 0) {
        l->id = id;
        rc = ledger_md_encode(&l->md, &text, &len);
    }
    if (rc == 0) {
        ledger_md_path(id, path, sizeof path);
        lobj_hold(&l->obj);
        rc = md_put(l->lc->md, path, text, len, MD_VERSION_NEW, NULL, ledger_create_done, l);
        if (rc < 0)
            lobj_back(&l->obj);
    }
    free(text);
    if (rc < 0) {
        l->create_cb(rc, NULL, l->create_arg);
        ledger_kill(l);
    }
}

static int ledger_md_init(ledger_t *l, const ledger_quorum_t *q, bk_client_t **ens)
{
    l->md.q = *q;
    l->md.state = LEDGER_STATE_OPEN;
    l->md.last_entry_id = -1;
    l->md.ctime_ms = clock_wall_ms();
    l->md.segments = calloc(1, sizeof *l->md.segments);
    if (!l->md.segments)
        return -ENOMEM;
    l->md.nsegments = 1;
    if (ledger_segment_alloc(&l->md.segments[0], q->ensemble) < 0)
        return -ENOMEM; /* ledger_md_free releases the segment */
    for (int i = 0; i < q->ensemble; i++) {
        l->ens[i] = ens[i];
        snprintf(l->md.segments[0].bookies[i], LEDGER_BOOKIE_ID_MAX, "%s", ens[i]->id);
    }
    return 0;
}

int ledger_create(ledger_client_t *lc, const ledger_quorum_t *q, ledger_open_cb cb, void *arg)
{
    if (!ledger_quorum_valid(q)) {
        log_warn("ledger", "create refused: invalid quorum E=%d Qw=%d Qa=%d", q ? q->ensemble : 0,
                 q ? q->write_quorum : 0, q ? q->ack_quorum : 0);
        return QE_INVALID;
    }
    bk_client_t *ens[LEDGER_ENSEMBLE_MAX];
    int rc = lc_choose_bookies(lc, q->ensemble, 0, ens);
    if (rc < 0) {
        log_warn("ledger",
                 "create refused: ensemble size E=%d (Qw=%d Qa=%d) but only %d of %d bookies "
                 "available (the others down or read-only, e.g. a full disk); free disk "
                 "space, lower managedLedgerDefaultEnsembleSize or add bookies",
                 q->ensemble, q->write_quorum, q->ack_quorum, ledger_client_bookies_available(lc),
                 lc->nbookies);
        return rc;
    }
    ledger_t *l = ledger_alloc(lc, -1, LEDGER_ROLE_CREATING);
    if (!l)
        return -ENOMEM;
    l->create_cb = cb;
    l->create_arg = arg;
    rc = ledger_md_init(l, q, ens);
    if (rc == 0)
        rc = lc_id_request(lc, l);
    if (rc < 0) {
        id_waiters_remove(lc, l);
        ledger_kill(l);
    }
    return rc;
}

/* ------------------------------------------------------------- delete -- */

typedef struct ledger_delete_op {
    lobj_t obj;
    ledger_client_t *lc;
    int64_t id;
    ledger_done_cb cb;
    void *arg;
    int64_t md_version;
    int waiting; /* bookie deletes not answered */
    int rc;      /* first bookie error */
} ledger_delete_op_t;

static void delete_destroy(lobj_t *o)
{
    free(o);
}

static void delete_finish(ledger_delete_op_t *d, int rc)
{
    if (rc < 0)
        log_warn("ledger", "delete of ledger %" PRId64 " failed: %s", d->id, q_strerror(rc));
    d->cb(rc, d->arg);
    lobj_kill(&d->obj);
}

static void delete_md_done(int rc, void *arg)
{
    ledger_delete_op_t *d = arg;
    if (!lobj_back(&d->obj))
        return;
    delete_finish(d, rc == QE_NOT_FOUND ? QE_NO_LEDGER : rc);
}

static void delete_md_key(ledger_delete_op_t *d)
{
    char path[32];
    ledger_md_path(d->id, path, sizeof path);
    lobj_hold(&d->obj);
    int rc = md_delete(d->lc->md, path, d->md_version, delete_md_done, d);
    if (rc < 0) {
        lobj_back(&d->obj);
        delete_finish(d, rc);
    }
}

static void delete_bookie_done(int rc, void *arg)
{
    ledger_delete_op_t *d = arg;
    if (!lobj_back(&d->obj))
        return;
    if (rc < 0 && rc != QE_NO_LEDGER && d->rc == 0)
        d->rc = rc;
    if (--d->waiting > 0)
        return;
    if (d->rc < 0)
        delete_finish(d, d->rc); /* the metadata stays: the delete can be retried */
    else
        delete_md_key(d);
}

/* Collects the distinct bookie ids of every segment into ids (bounded). */
static int delete_collect(const ledger_md_t *md, const char **ids, int max)
{
    int n = 0;
    for (size_t s = 0; s < md->nsegments; s++) {
        for (int i = 0; i < md->q.ensemble; i++) {
            const char *id = md->segments[s].bookies[i];
            int j = 0;
            while (j < n && strcmp(ids[j], id) != 0)
                j++;
            if (j == n && n == max)
                return QE_TOO_LARGE;
            if (j == n)
                ids[n++] = id;
        }
    }
    return n;
}

static void delete_send(ledger_delete_op_t *d, const ledger_md_t *md)
{
    const char *ids[LEDGER_BOOKIES_MAX];
    int n = delete_collect(md, ids, LEDGER_BOOKIES_MAX);
    bk_client_t *bks[LEDGER_BOOKIES_MAX];
    for (int i = 0; i < n; i++) {
        bks[i] = lc_bookie_by_id(d->lc, ids[i]);
        if (!bks[i]) {
            log_warn("ledger", "delete of %" PRId64 ": bookie %s unknown", d->id, ids[i]);
            n = QE_UNAVAILABLE;
        }
    }
    if (n < 0) {
        delete_finish(d, n);
        return;
    }
    d->waiting = n + 1; /* +1 until every call is made */
    for (int i = 0; i < n; i++) {
        lobj_hold(&d->obj);
        int rc = bk_client_delete_ledger(bks[i], d->id, delete_bookie_done, d);
        if (rc < 0) {
            lobj_back(&d->obj);
            d->rc = d->rc ? d->rc : rc;
            d->waiting--;
        }
    }
    lobj_hold(&d->obj); /* delete_bookie_done gives it back */
    delete_bookie_done(0, d);
}

static void delete_get_done(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    ledger_delete_op_t *d = arg;
    if (!lobj_back(&d->obj))
        return;
    if (rc < 0) {
        delete_finish(d, rc == QE_NOT_FOUND ? QE_NO_LEDGER : rc);
        return;
    }
    ledger_md_t md;
    rc = ledger_md_decode(value, len, &md);
    if (rc < 0) {
        delete_finish(d, rc);
        return;
    }
    d->md_version = stat->version;
    delete_send(d, &md);
    ledger_md_free(&md);
}

int ledger_delete(ledger_client_t *lc, int64_t ledger_id, ledger_done_cb cb, void *arg)
{
    if (ledger_id < 0) {
        log_warn("ledger", "delete refused: ledger id %" PRId64, ledger_id);
        return QE_INVALID;
    }
    ledger_delete_op_t *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->obj.destroy = delete_destroy;
    d->lc = lc;
    d->id = ledger_id;
    d->cb = cb;
    d->arg = arg;
    lobj_link(&lc->objs, &d->obj);
    char path[32];
    ledger_md_path(ledger_id, path, sizeof path);
    lobj_hold(&d->obj);
    int rc = md_get(lc->md, path, delete_get_done, d);
    if (rc < 0) {
        lobj_back(&d->obj);
        lobj_kill(&d->obj);
    }
    return rc;
}
