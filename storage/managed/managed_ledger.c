/*
 * managed_ledger.c — the factory, and a managed ledger's life: open (with
 * recovery of a crashed writer's ledger), adds, rollover, close and delete.
 * Reads are in ml_read.c, trimming in ml_trim.c, cursors in cursor.c.
 *
 * Writer state machine (ml->state):
 *
 *   OPENING --open done--> READY --ledger full / add failed / timer--> ROLLING
 *   ROLLING: wait for adds and reads in flight on the current ledger, close it,
 *            create the next, record it in metadata --> READY (queued adds go)
 *   ROLLING --create failed--> NO_LEDGER --next add--> ROLLING
 *   any --QE_FENCED add / lost metadata CAS--> FENCED (adds fail QE_FENCED)
 *
 * Adds: ml_add queues an op; ops are given to the current ledger in order
 * while READY and the ledger is not full, and complete in that order (the
 * ledger client completes in entry order; queued ops are only failed once
 * nothing is in flight). A new ledger takes adds only once the metadata names
 * it, so an acknowledged entry is always reachable after a crash.
 *
 * Closing (ml->closing, the last ml_close): drain adds, flush durable cursors,
 * close the current ledger, record it closed, wait until no call is in flight
 * (holds == 0), then free on a posted call. Steps advance in ml_close_step,
 * which every completion calls through ml_release.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

enum {
    CLOSE_DRAIN = 0,
    CLOSE_FLUSHING,
    CLOSE_LEDGER,
    CLOSE_LEDGER_WAIT,
    CLOSE_MD,
    CLOSE_MD_WAIT,
    CLOSE_FINAL,
};

static void rollover_step(managed_ledger_t *ml);
static void rollover_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ----------------------------------------------------------- config -- */

void ml_config_defaults(ml_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->quorum = (ledger_quorum_t){1, 1, 1};
    cfg->max_entries_per_ledger = 50000;
    cfg->max_ledger_size_bytes = 2048ull << 20;
    cfg->max_ledger_rollover_time_s = 240 * 60;
    cfg->retention_time_s = 0;
    cfg->retention_size_bytes = 0;
    cfg->cursor_persist_interval_ms = 100;
}

static int config_check(const ml_config_t *cfg)
{
    const ledger_quorum_t *q = &cfg->quorum;
    if (q->ensemble < 1 || q->write_quorum < 1 || q->write_quorum > q->ensemble ||
        q->ack_quorum < 1 || q->ack_quorum > q->write_quorum || cfg->max_entries_per_ledger == 0 ||
        cfg->max_ledger_size_bytes == 0) {
        log_warn("managed", "invalid managed ledger config refused");
        return QE_INVALID;
    }
    return 0;
}

/* ---------------------------------------------------------- factory -- */

/* Age eviction: one factory timer, running only while the cache holds entries
 * (an idle broker does not wake for it). */
static void cache_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    ml_factory_t *f = w->data;
    ml_cache_keep_t keep = {.expected = ml_cache_expected_read,
                            .extensions_max = f->cache_by_expected ? f->cache_extensions_max : 0};
    double now = ev_now(loop);
    ml_cache_evict_older(f->cache, now - f->cache_age_s, now, &keep);
    if (ml_cache_empty(f->cache))
        ev_timer_stop(loop, w);
}

static void cache_timer_arm(ml_factory_t *f)
{
    if (f->cache_age_s <= 0 || ev_is_active(&f->cache_timer))
        return;
    double every = f->cache_age_s / 4 > 0.01 ? f->cache_age_s / 4 : 0.01;
    ev_timer_set(&f->cache_timer, every, every);
    ev_timer_start(f->loop, &f->cache_timer);
}

void ml_factory_cache_info(const ml_factory_t *f, ml_cache_info_t *out)
{
    ml_cache_stats_t st;
    ml_cache_get_stats(f->cache, &st);
    *out = (ml_cache_info_t){.entries = st.entries,
                             .bytes = st.bytes,
                             .hits = f->reads_hit,
                             .hit_bytes = f->reads_hit_bytes,
                             .misses = f->reads_missed,
                             .miss_bytes = f->reads_missed_bytes,
                             .evictions_size = st.evictions,
                             .evictions_read = st.evictions_read,
                             .evictions_age = st.evictions_age,
                             .extensions = st.extensions,
                             .reads_bytes = f->reads_bytes,
                             .reads_waiting = f->reads_parked,
                             .reads_waited = f->reads_parked_total};
}

void ml_factory_set_cache_age(ml_factory_t *f, double seconds)
{
    f->cache_age_s = seconds > 0 ? seconds : 0;
    ev_timer_stop(f->loop, &f->cache_timer);
    if (!ml_cache_empty(f->cache))
        cache_timer_arm(f);
}

void ml_factory_set_cache_expected_reads(ml_factory_t *f, bool on, uint32_t extensions)
{
    f->cache_by_expected = on;
    f->cache_extensions_max = extensions;
}

void ml_cache_added(managed_ledger_t *ml, ml_pos_t pos, qbuf_t *data)
{
    if (!ml_cache_wanted(ml, pos))
        return; /* no reader for it: a later reader reads the ledger */
    ml_cache_put(ml->f->cache, ml, pos, data, ev_now(ml->f->loop));
    cache_timer_arm(ml->f);
}

int ml_factory_new(struct ev_loop *loop, md_store_t *md, ledger_client_t *lc,
                   uint64_t cache_bytes_max, ml_factory_t **out)
{
    ml_factory_t *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->loop = loop;
    f->md = md;
    f->lc = lc;
    f->mb = qloop_mailbox_new(loop);
    f->cache = ml_cache_new(cache_bytes_max);
    f->cache_bytes_max = cache_bytes_max;
    f->by_name = qmap_new();
    ml_trim_timer_init(f);
    f->cache_age_s = ML_CACHE_AGE_S;
    f->cache_by_expected = true;
    f->cache_extensions_max = ML_CACHE_EXTENSIONS_DEFAULT;
    ev_init(&f->cache_timer, cache_timer_cb);
    f->cache_timer.data = f;
    if (!f->mb || !f->cache || !f->by_name) {
        ml_factory_free(f);
        return -ENOMEM;
    }
    *out = f;
    return 0;
}

ledger_client_t *ml_factory_ledger_client(ml_factory_t *f)
{
    return f->lc;
}

void ml_factory_free(ml_factory_t *f)
{
    if (!f)
        return;
    if (f->mb)
        qloop_mailbox_free(f->mb); /* runs what is still posted */
    if (f->mls)
        log_error("managed", "factory freed with managed ledger %s still open", f->mls->name);
    assert(!f->mls && f->trim_ticking == 0 && !f->parked);
    ev_timer_stop(f->loop, &f->cache_timer);
    ml_cache_free(f->cache);
    qmap_free(f->by_name);
    free(f);
}

const ml_cache_t *ml_factory_cache(const ml_factory_t *f)
{
    return f->cache;
}

/* By name in O(1): with 100,000 topics a walk of f->mls per open was the
 * largest cost of creating topics. */
static managed_ledger_t *factory_find(ml_factory_t *f, const char *name)
{
    return qmap_get(f->by_name, name);
}

static void factory_unlink(ml_factory_t *f, managed_ledger_t *ml)
{
    managed_ledger_t *removed = qmap_remove(f->by_name, ml->name);
    assert(removed == ml);
    (void)removed;
    if (ml->prev)
        ml->prev->next = ml->next;
    else
        f->mls = ml->next;
    if (ml->next)
        ml->next->prev = ml->prev;
}

/* ---------------------------------------------------------- helpers -- */

static char *ml_path_of(const char *name)
{
    char *esc = ml_escape_name(name), *path = NULL;
    if (esc && asprintf(&path, "/managed-ledgers/%s", esc) < 0)
        path = NULL;
    free(esc);
    return path;
}

static bool ledger_full(const managed_ledger_t *ml)
{
    if (ml->ledger_failed || (ml->cfg.entries_per_ledger_limit &&
                              ml->issued_entries >= ml->cfg.entries_per_ledger_limit))
        return true;
    if (ml->issued_entries < ml->cfg.max_entries_per_ledger &&
        ml->issued_bytes < ml->cfg.max_ledger_size_bytes && !ml->rollover_due)
        return false;
    /* as Pulsar: a full ledger is kept until it is min_ledger_rollover_time_s
     * old (checked again at the next add) */
    return ev_now(ml->f->loop) - ml->current_since >= (double)ml->cfg.min_ledger_rollover_time_s;
}

static void ledger_closed_ignored(int rc, void *arg)
{
    (void)arg;
    if (rc < 0)
        log_warn("managed", "closing an unused ledger failed: %s", q_strerror(rc));
}

static void add_op_free(ml_add_op_t *op)
{
    qbuf_unref(op->data);
    free(op);
}

static void add_fail_run(void *p)
{
    ml_add_op_t *op = p;
    managed_ledger_t *ml = op->ml;
    op->cb((int)op->ledger_id, ML_POS_EARLIEST, op->arg); /* ledger_id carries rc */
    add_op_free(op);
    ml_release(ml);
}

/* Fails every queued (never issued) add with rc, in order, each on a posted
 * call. Only when nothing is in flight, so the order of callbacks holds. */
static void fail_queued(managed_ledger_t *ml, int rc)
{
    assert(ml->ninflight == 0);
    ml_add_op_t *op;
    while ((op = ml->queued)) {
        ml->queued = op->next;
        ml->nqueued--;
        op->ledger_id = rc;
        ml_hold(ml);
        if (qloop_post(ml->f->mb, add_fail_run, op) < 0) {
            ml->holds--;
            add_op_free(op); /* out of memory: the callback is lost, logged */
            log_error("managed", "%s: add failure not delivered (out of memory)", ml->name);
        }
    }
    ml->queued_tail = NULL;
}

/* ------------------------------------------------------------- open -- */

static void open_fail(managed_ledger_t *ml, int rc);
static void open_recover_next(managed_ledger_t *ml);

static void opener_complete_all(managed_ledger_t *ml, int rc)
{
    ml_opener_t *o;
    while ((o = ml->openers)) {
        ml->openers = o->next;
        if (rc == 0)
            ml->refs++;
        o->cb(rc, rc == 0 ? ml : NULL, o->arg);
        free(o);
    }
}

static void open_md_written(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc < 0) {
        open_fail(ml, rc);
        return;
    }
    ml->state = ml->current ? ML_READY : ML_NO_LEDGER;
    ml_trim_start_timer(ml);
    if (ml->current)
        log_info("managed", "%s: open, %zu ledgers, writing ledger %lld", ml->name, ml->ledgers.n,
                 (long long)ml->ledgers.current_id);
    else
        log_warn("managed", "%s: open for reads, %zu ledgers: no ledger to write to yet (%s)",
                 ml->name, ml->ledgers.n, q_strerror(ml->create_rc));
    opener_complete_all(ml, 0);
    ml_adds_pump(ml);
}

static void open_created(int rc, ledger_t *l, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc == 0 && (rc = ml_list_append(&ml->ledgers, ledger_id(l))) < 0)
        ledger_close(l, ledger_closed_ignored, NULL);
    if (rc == 0) {
        ml->current = l;
        ml->current_since = ev_now(ml->f->loop);
        ml->ledgers.current_id = ledger_id(l);
        rc = ml_md_write(ml, open_md_written, ml);
    }
    if (rc < 0)
        open_fail(ml, rc);
    ml_release(ml);
}

static void open_cursors_loaded(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc == 0) {
        ml_hold(ml);
        rc = ledger_create(ml->f->lc, &ml->cfg.quorum, open_created, ml);
        if (rc < 0)
            ml->holds--;
    }
    if (rc == QE_UNAVAILABLE) {
        /* No writable bookie (their disks full, or down): open for reads, so
         * that consumers drain what is stored (and trimming frees space);
         * adds fail as after a failed rollover, a creation tried again at
         * most every ML_CREATE_RETRY_S (ml_adds_pump). */
        ml->create_failed_at = ev_now(ml->f->loop);
        ml->create_rc = rc;
        ml->create_failures++;
        rc = ml_md_write(ml, open_md_written, ml);
    }
    if (rc < 0)
        open_fail(ml, rc);
}

static void open_recovered(int rc, ledger_t *l, void *arg)
{
    managed_ledger_t *ml = arg;
    ml_ledger_info_t *li = &ml->ledgers.v[ml->open_idx];
    if (rc == 0) {
        li->entries = ledger_last_add_confirmed(l) + 1;
        li->size_bytes = (int64_t)ledger_length_bytes(l);
        ledger_release(l);
    } else if (rc == QE_NO_LEDGER) {
        li->entries = 0; /* created, never written: nothing to recover */
        li->size_bytes = 0;
        rc = 0;
    }
    if (rc < 0) {
        open_fail(ml, rc);
    } else {
        li->closed_ms = clock_wall_ms();
        log_info("managed", "%s: recovered ledger %lld with %lld entries", ml->name,
                 (long long)li->ledger_id, (long long)li->entries);
        ml->open_idx++;
        open_recover_next(ml);
    }
    ml_release(ml);
}

/* Recovers (fences and closes) every ledger the record shows still open. */
static void open_recover_next(managed_ledger_t *ml)
{
    while (ml->open_idx < ml->ledgers.n && ml->ledgers.v[ml->open_idx].closed_ms != 0)
        ml->open_idx++;
    if (ml->open_idx == ml->ledgers.n) {
        int rc = ml_cursors_load(ml, open_cursors_loaded, ml);
        if (rc < 0)
            open_fail(ml, rc);
        return;
    }
    ml_hold(ml);
    int rc = ledger_open(ml->f->lc, ml->ledgers.v[ml->open_idx].ledger_id, LEDGER_OPEN_RECOVER,
                         open_recovered, ml);
    if (rc < 0) {
        ml->holds--;
        open_fail(ml, rc);
    }
}

static void open_md_got(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc == QE_NOT_FOUND) {
        ml->md_version = MD_VERSION_NEW;
        ml->properties = json_object();
        rc = ml->properties ? 0 : -ENOMEM;
    } else if (rc == 0) {
        ml->md_version = stat->version;
        rc = ml_md_decode(value, len, &ml->ledgers, &ml->properties);
    }
    if (rc < 0)
        open_fail(ml, rc);
    else
        open_recover_next(ml);
    ml_release(ml);
}

static void open_fail(managed_ledger_t *ml, int rc)
{
    log_error("managed", "%s: open failed: %s", ml->name, q_strerror(rc));
    opener_complete_all(ml, rc);
    ml->state = ML_FENCED;
    ml->closing = true;
    ml->close_stage = ml->current ? CLOSE_LEDGER : CLOSE_FINAL;
    ml_close_step(ml);
}

static managed_ledger_t *ml_new(ml_factory_t *f, const char *name, const ml_config_t *cfg)
{
    managed_ledger_t *ml = calloc(1, sizeof *ml);
    if (!ml)
        return NULL;
    ml->f = f;
    ml->cfg = *cfg;
    ml->name = strdup(name);
    ml->path = ml_path_of(name);
    ml->ledgers.current_id = -1;
    ml->md_version = MD_VERSION_NEW;
    if (!ml->name || !ml->path || qmap_put(f->by_name, ml->name, ml) < 0) {
        free(ml->name);
        free(ml->path);
        free(ml);
        return NULL;
    }
    ev_timer_init(&ml->rollover_timer, rollover_timer_cb, 0., 0.);
    ml->rollover_timer.data = ml;
    ml->next = f->mls;
    if (f->mls)
        f->mls->prev = ml;
    f->mls = ml;
    return ml;
}

static void open_posted_run(void *p)
{
    ml_opener_t *o = p;
    managed_ledger_t *ml = o->ml;
    o->cb(0, ml, o->arg);
    free(o);
    ml_release(ml);
}

static int open_existing(managed_ledger_t *ml, ml_opener_t *o)
{
    if (ml->closing) {
        o->next = ml->reopeners;
        ml->reopeners = o;
        return 0;
    }
    if (ml->state == ML_OPENING) {
        o->next = ml->openers;
        ml->openers = o;
        return 0;
    }
    /* Open already: one more reference, delivered on a posted call. */
    o->ml = ml;
    ml->cfg = o->cfg;
    ml_hold(ml);
    if (qloop_post(ml->f->mb, open_posted_run, o) < 0) {
        ml->holds--;
        free(o);
        return -ENOMEM;
    }
    ml->refs++;
    return 0;
}

int ml_open(ml_factory_t *f, const char *name, const ml_config_t *cfg, ml_open_cb cb, void *arg)
{
    if (!name || !*name || strlen(name) > ML_NAME_MAX) {
        log_warn("managed", "ml_open: invalid name");
        return QE_INVALID;
    }
    int rc = config_check(cfg);
    if (rc < 0)
        return rc;
    ml_opener_t *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    *o = (ml_opener_t){.cb = cb, .arg = arg, .cfg = *cfg};
    managed_ledger_t *ml = factory_find(f, name);
    if (ml)
        return open_existing(ml, o);
    ml = ml_new(f, name, cfg);
    if (!ml) {
        free(o);
        return -ENOMEM;
    }
    ml->openers = o;
    ml_hold(ml);
    rc = md_get(f->md, ml->path, open_md_got, ml);
    if (rc < 0) {
        ml->openers = NULL;
        free(o);
        ml->holds--;
        factory_unlink(f, ml);
        free(ml->name);
        free(ml->path);
        free(ml);
    }
    return rc;
}

/* ------------------------------------------------------------- adds -- */

static void rollover_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    managed_ledger_t *ml = w->data;
    ml->rollover_due = true;
    double wait = ml->current_since + ml->cfg.min_ledger_rollover_time_s - ev_now(ml->f->loop);
    if (ml->current && wait > 0) { /* min > max: roll at the min time */
        ev_timer_set(&ml->rollover_timer, wait, 0.);
        ev_timer_start(ml->f->loop, &ml->rollover_timer);
        return;
    }
    ml_adds_pump(ml);
}

static void add_done(int rc, int64_t entry_id, void *arg)
{
    ml_add_op_t *op = arg;
    managed_ledger_t *ml = op->ml;
    assert(ml->inflight == op);
    ml->inflight = op->next;
    if (!ml->inflight)
        ml->inflight_tail = NULL;
    ml->ninflight--;
    if (rc == 0) {
        ml_ledger_info_t *li = ml_list_find(&ml->ledgers, op->ledger_id);
        assert(li && entry_id == li->entries);
        li->entries = entry_id + 1;
        li->size_bytes += op->data->len;
        ml->entries_added++;
        ml_pos_t pos = {op->ledger_id, entry_id};
        ml_cache_added(ml, pos, op->data);
        op->cb(0, pos, op->arg);
        if (ml->added_fn)
            ml->added_fn(ml, pos, ml->added_arg);
    } else {
        log_warn("managed", "%s: add to ledger %lld failed: %s", ml->name, (long long)op->ledger_id,
                 q_strerror(rc));
        if (rc == QE_FENCED)
            ml->state = ML_FENCED;
        else
            ml->ledger_failed = true;
        op->cb(rc, ML_POS_EARLIEST, op->arg);
    }
    add_op_free(op);
    ml_adds_pump(ml);
    ml_release(ml);
}

static void rollover_start(managed_ledger_t *ml)
{
    assert(ml->state == ML_READY);
    ml->state = ML_ROLLING;
    ev_timer_stop(ml->f->loop, &ml->rollover_timer);
    rollover_step(ml);
}

/* Gives queued adds to the current ledger; starts rollovers; fails queued adds
 * once a fenced/failed writer has nothing in flight. */
void ml_adds_pump(managed_ledger_t *ml)
{
    if ((ml->state == ML_FENCED || ml->state == ML_NO_LEDGER) && ml->ninflight == 0 &&
        ml->nqueued > 0) {
        if (ml->state == ML_FENCED || ml->closing) {
            fail_queued(ml, ml->state == ML_FENCED ? QE_FENCED : QE_CLOSED);
            return;
        }
        if (ev_now(ml->f->loop) - ml->create_failed_at < ML_CREATE_RETRY_S &&
            ledger_client_bookies_available(ml->f->lc) < ml->cfg.quorum.ensemble) {
            fail_queued(ml, ml->create_rc);
            return;
        }
        ml->state = ML_READY; /* NO_LEDGER: retry with a new ledger */
        ml->ledger_failed = true;
    }
    while (ml->state == ML_READY && ml->queued && ml->current &&
           (!ledger_full(ml) || (ml->closing && !ml->ledger_failed))) {
        ml_add_op_t *op = ml->queued;
        op->ledger_id = ml->ledgers.current_id;
        ml_hold(ml);
        int rc = ledger_add(ml->current, op->data, add_done, op);
        if (rc < 0) {
            ml->holds--;
            log_warn("managed", "%s: ledger_add refused: %s", ml->name, q_strerror(rc));
            if (rc == QE_FENCED)
                ml->state = ML_FENCED;
            ml->ledger_failed = true; /* op stays queued for the next ledger */
            break;
        }
        ml->queued = op->next;
        if (!ml->queued)
            ml->queued_tail = NULL;
        ml->nqueued--;
        op->next = NULL;
        if (ml->inflight_tail)
            ml->inflight_tail->next = op;
        else
            ml->inflight = op;
        ml->inflight_tail = op;
        ml->ninflight++;
        if (ml->issued_entries++ == 0 && ml->cfg.max_ledger_rollover_time_s > 0) {
            ev_timer_set(&ml->rollover_timer, ml->cfg.max_ledger_rollover_time_s, 0.);
            ev_timer_start(ml->f->loop, &ml->rollover_timer);
        }
        ml->issued_bytes += op->data->len;
    }
    if (ml->state == ML_FENCED && ml->ninflight == 0 && ml->nqueued > 0)
        fail_queued(ml, QE_FENCED);
    else if (ml->state == ML_READY && ledger_full(ml) && !ml->closing &&
             (ml->issued_entries > 0 || ml->ledger_failed || !ml->current))
        rollover_start(ml);
    else if (ml->state == ML_ROLLING)
        rollover_step(ml);
}

int ml_add(managed_ledger_t *ml, qbuf_t *data, ml_add_cb cb, void *arg)
{
    if (ml->closing || ml->refs <= 0) {
        log_warn("managed", "%s: add refused: closed", ml->name);
        return QE_CLOSED;
    }
    if (ml->state == ML_FENCED) {
        log_warn("managed", "%s: add refused: fenced", ml->name);
        return QE_FENCED;
    }
    if (ml->nqueued + ml->ninflight >= ML_ADDS_PENDING_MAX) {
        log_warn("managed", "%s: add refused: %d adds pending", ml->name, ML_ADDS_PENDING_MAX);
        return QE_BUSY;
    }
    ml_add_op_t *op = malloc(sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (ml_add_op_t){.ml = ml, .data = qbuf_ref(data), .cb = cb, .arg = arg};
    if (ml->queued_tail)
        ml->queued_tail->next = op;
    else
        ml->queued = op;
    ml->queued_tail = op;
    ml->nqueued++;
    ml_adds_pump(ml);
    return 0;
}

bool ml_can_write(const managed_ledger_t *ml)
{
    /* A fenced or closing log is not this check's business: its adds fail
     * with their own errors (QE_FENCED, QE_CLOSED), which the broker handles. */
    return ml->state != ML_NO_LEDGER ||
           ledger_client_bookies_available(ml->f->lc) >= ml->cfg.quorum.ensemble;
}

void ml_set_added_listener(managed_ledger_t *ml, ml_added_fn fn, void *arg)
{
    ml->added_fn = fn;
    ml->added_arg = arg;
}

/* --------------------------------------------------------- rollover -- */

static void rollover_failed(managed_ledger_t *ml, int rc)
{
    log_error("managed", "%s: cannot start a new ledger: %s", ml->name, q_strerror(rc));
    ml->create_failed_at = ev_now(ml->f->loop);
    ml->create_rc = rc;
    ml->create_failures++;
    if (ml->state != ML_FENCED)
        ml->state = ML_NO_LEDGER;
    if (ml->nqueued > 0 && ml->ninflight == 0)
        fail_queued(ml, rc);
}

static void rollover_md_written(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc < 0) {
        ml->state = ML_FENCED; /* the new ledger is not recorded: stop writing */
        ml_adds_pump(ml);
        return;
    }
    if (ml->state == ML_ROLLING)
        ml->state = ML_READY;
    log_debug("managed", "%s: rolled over to ledger %lld", ml->name,
              (long long)ml->ledgers.current_id);
    ml_adds_pump(ml);
}

static void rollover_created(int rc, ledger_t *l, void *arg)
{
    managed_ledger_t *ml = arg;
    ml->roll_busy = false;
    if (rc == 0 && (rc = ml_list_append(&ml->ledgers, ledger_id(l))) < 0)
        ledger_close(l, ledger_closed_ignored, NULL);
    if (rc == 0) {
        ml->current = l;
        ml->current_since = ev_now(ml->f->loop);
        ml->ledgers.current_id = ledger_id(l);
        ml->issued_entries = ml->issued_bytes = 0;
        ml->ledger_failed = ml->rollover_due = false;
        rc = ml_md_write(ml, rollover_md_written, ml);
    }
    if (rc < 0)
        rollover_failed(ml, rc);
    ml_release(ml);
}

static void rollover_create(managed_ledger_t *ml)
{
    if (ml->closing) {
        ml->state = ML_READY; /* the close records the list without a current ledger */
        ml_close_step(ml);
        return;
    }
    ml_hold(ml);
    ml->roll_busy = true;
    int rc = ledger_create(ml->f->lc, &ml->cfg.quorum, rollover_created, ml);
    if (rc < 0) {
        ml->holds--;
        ml->roll_busy = false;
        rollover_failed(ml, rc);
    }
}

static void rollover_closed(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    ml_ledger_info_t *li = ml_list_find(&ml->ledgers, ml->rolling_ledger_id);
    ml->roll_busy = false;
    if (rc == 0 && li)
        li->closed_ms = clock_wall_ms();
    else if (rc < 0)
        log_warn("managed", "%s: closing ledger failed (%s): recovered at next open", ml->name,
                 q_strerror(rc));
    rollover_create(ml);
    ml_release(ml);
}

/* Waits for the current ledger to be idle, closes it, then creates the next. */
static void rollover_step(managed_ledger_t *ml)
{
    assert(ml->state == ML_ROLLING);
    if (ml->ninflight > 0 || ml->current_reads > 0 || ml->roll_busy)
        return;
    if (!ml->current) {
        rollover_create(ml);
        return;
    }
    ledger_t *l = ml->current;
    ml->current = NULL;
    ml->rolling_ledger_id = ml->ledgers.current_id;
    ml->ledgers.current_id = -1;
    ml_hold(ml);
    ml->roll_busy = true;
    int rc = ledger_close(l, rollover_closed, ml);
    if (rc < 0) {
        ml->holds--;
        ml->roll_busy = false;
        log_warn("managed", "%s: ledger_close refused: %s", ml->name, q_strerror(rc));
        rollover_create(ml);
    }
}

/* ------------------------------------------------------------ close -- */

static void ml_finish(void *arg);

static void close_flushed(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc < 0)
        log_warn("managed", "%s: cursor flush at close failed: %s", ml->name, q_strerror(rc));
    ml->close_stage = CLOSE_LEDGER;
    ml_close_step(ml);
}

static void close_ledger_closed(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    ml_ledger_info_t *li = ml_list_find(&ml->ledgers, ml->rolling_ledger_id);
    if (rc == 0 && li)
        li->closed_ms = clock_wall_ms();
    else if (rc < 0)
        log_warn("managed", "%s: closing ledger failed (%s): recovered at next open", ml->name,
                 q_strerror(rc));
    ml->close_stage = CLOSE_MD;
    ml_release(ml);
}

static void close_md_written(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    (void)rc; /* logged by the write queue */
    ml->close_stage = CLOSE_FINAL;
    ml_close_step(ml);
}

static bool close_drained(managed_ledger_t *ml)
{
    if (ml->state == ML_ROLLING || ml->ninflight > 0 || ml->roll_busy)
        return false;
    if (ml->nqueued > 0) {
        if (ml->state == ML_READY && ml->current) {
            ml_adds_pump(ml);
            return false;
        }
        fail_queued(ml, QE_CLOSED);
    }
    return true;
}

/* Advances the close; idempotent; never frees synchronously. */
void ml_close_step(managed_ledger_t *ml)
{
    if (!ml->closing)
        return;
    switch (ml->close_stage) {
    case CLOSE_DRAIN:
        if (!close_drained(ml))
            return;
        ml->close_stage = CLOSE_FLUSHING;
        if (ml_cursors_flush_all(ml, close_flushed, ml) < 0)
            ml->close_stage = CLOSE_LEDGER;
        else
            return;
        /* fall through */
    case CLOSE_LEDGER:
        if (ml->current_reads > 0)
            return;
        if (ml->current) {
            ledger_t *l = ml->current;
            ml->current = NULL;
            ml->rolling_ledger_id = ml->ledgers.current_id;
            ml->ledgers.current_id = -1;
            ml->close_stage = CLOSE_LEDGER_WAIT;
            ml_hold(ml);
            if (ledger_close(l, close_ledger_closed, ml) == 0)
                return;
            ml->holds--;
        }
        ml->close_stage = CLOSE_MD;
        /* fall through */
    case CLOSE_MD:
        ml->close_stage = CLOSE_FINAL;
        if (ml->state != ML_FENCED && ml->state != ML_OPENING) {
            ml->close_stage = CLOSE_MD_WAIT;
            if (ml_md_write(ml, close_md_written, ml) == 0)
                return;
            ml->close_stage = CLOSE_FINAL;
        }
        /* fall through */
    case CLOSE_FINAL:
        if (ml->holds > 0 || ml->finish_posted)
            return;
        ml->finish_posted = true;
        if (qloop_post(ml->f->mb, ml_finish, ml) < 0)
            ml->finish_posted = false; /* retried on the next release */
        return;
    default: /* CLOSE_FLUSHING, CLOSE_LEDGER_WAIT, CLOSE_MD_WAIT: a callback advances */
        return;
    }
}

static void ml_free(managed_ledger_t *ml)
{
    ml_factory_t *f = ml->f;
    assert(ml->holds == 0 && ml->ninflight == 0 && ml->nqueued == 0 && !ml->md_writing);
    ev_timer_stop(f->loop, &ml->rollover_timer);
    ml_trim_stop_timer(ml);
    ml_handles_release_idle(ml, -1.0);
    free(ml->handles);
    ml_cache_drop(f->cache, ml, -1);
    ml_cursors_free_all(ml);
    ml_list_free(&ml->ledgers);
    json_decref(ml->properties);
    free(ml->trim_ids);
    free(ml->name);
    free(ml->path);
    free(ml);
}

static void ml_finish(void *arg)
{
    managed_ledger_t *ml = arg;
    ml->finish_posted = false;
    if (ml->holds > 0)
        return; /* the last release posts again */
    ml_factory_t *f = ml->f;
    factory_unlink(f, ml);
    ml_waiter_t *waiters = ml->close_waiters;
    ml_opener_t *reopen = ml->reopeners;
    char *name = reopen ? strdup(ml->name) : NULL;
    log_info("managed", "%s: closed", ml->name);
    ml_free(ml);
    while (waiters) {
        ml_waiter_t *w = waiters;
        waiters = w->next;
        w->cb(0, w->arg);
        free(w);
    }
    while (reopen) {
        /* ml_open called while it was closing: open it afresh now. */
        ml_opener_t *o = reopen;
        reopen = o->next;
        int rc = name ? ml_open(f, name, &o->cfg, o->cb, o->arg) : -ENOMEM;
        if (rc < 0)
            o->cb(rc, NULL, o->arg);
        free(o);
    }
    free(name);
}

int ml_close(managed_ledger_t *ml, ml_done_cb cb, void *arg)
{
    if (ml->closing || ml->refs <= 0) {
        log_warn("managed", "%s: close refused: already closed", ml->name);
        return QE_CLOSED;
    }
    if (--ml->refs > 0)
        return cb ? ml_post_done(ml, cb, arg, 0) : 0;
    ml_waiter_t *w = calloc(1, sizeof *w);
    if (!w) {
        ml->refs++;
        return -ENOMEM;
    }
    *w = (ml_waiter_t){.cb = cb, .arg = arg};
    ml->close_waiters = cb ? w : NULL;
    if (!cb)
        free(w);
    ml->closing = true;
    ml->close_stage = CLOSE_DRAIN;
    ev_timer_stop(ml->f->loop, &ml->rollover_timer);
    ml_trim_stop_timer(ml);
    ml_close_step(ml);
    return 0;
}

/* ----------------------------------------------------------- delete -- */

typedef struct ml_delete_op {
    ml_factory_t *f;
    char *path;
    ml_ledger_list_t ledgers;
    size_t next;
    ml_done_cb cb;
    void *arg;
} ml_delete_op_t;

static void delete_finish(ml_delete_op_t *op, int rc)
{
    op->cb(rc, op->arg);
    ml_list_free(&op->ledgers);
    free(op->path);
    free(op);
}

static void delete_ledger_done(int rc, void *arg);

static void delete_next_ledger(ml_delete_op_t *op)
{
    while (op->next < op->ledgers.n) {
        int64_t id = op->ledgers.v[op->next++].ledger_id;
        int rc = ledger_delete(op->f->lc, id, delete_ledger_done, op);
        if (rc == 0)
            return;
        log_warn("managed", "delete of ledger %lld refused: %s", (long long)id, q_strerror(rc));
    }
    delete_finish(op, 0);
}

static void delete_ledger_done(int rc, void *arg)
{
    ml_delete_op_t *op = arg;
    if (rc < 0 && rc != QE_NO_LEDGER)
        log_warn("managed", "delete of a ledger failed: %s", q_strerror(rc));
    delete_next_ledger(op);
}

static void delete_md_done(int rc, void *arg)
{
    ml_delete_op_t *op = arg;
    if (rc < 0)
        delete_finish(op, rc);
    else
        delete_next_ledger(op); /* metadata first: a crash leaks, never dangles */
}

static void delete_md_got(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    ml_delete_op_t *op = arg;
    (void)stat;
    json_t *props = NULL;
    if (rc == 0)
        rc = ml_md_decode(value, len, &op->ledgers, &props);
    json_decref(props);
    if (rc == 0)
        rc = md_delete_recursive(op->f->md, op->path, delete_md_done, op);
    if (rc < 0)
        delete_finish(op, rc);
}

int ml_delete(ml_factory_t *f, const char *name, ml_done_cb cb, void *arg)
{
    if (factory_find(f, name)) {
        log_warn("managed", "%s: delete refused: open", name);
        return QE_BUSY;
    }
    ml_delete_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (ml_delete_op_t){.f = f, .path = ml_path_of(name), .cb = cb, .arg = arg};
    op->ledgers.current_id = -1;
    int rc = op->path ? md_get(f->md, op->path, delete_md_got, op) : -ENOMEM;
    if (rc < 0) {
        free(op->path);
        free(op);
    }
    return rc;
}

/* -------------------------------------------------------- accessors -- */

int ml_update_config(managed_ledger_t *ml, const ml_config_t *cfg)
{
    int rc = config_check(cfg);
    if (rc < 0)
        return rc;
    ml->cfg = *cfg;
    if (!ml->closing) {
        ml_adds_pump(ml);
        ml_trim_schedule(ml);
    }
    return 0;
}

int ml_set_property(managed_ledger_t *ml, const char *key, const char *value, ml_done_cb cb,
                    void *arg)
{
    if (ml->closing || ml->state == ML_FENCED) {
        log_warn("managed", "%s: property update refused: closed or fenced", ml->name);
        return QE_CLOSED;
    }
    if (!key || strlen(key) > ML_NAME_MAX || (value && strlen(value) > ML_NAME_MAX) ||
        (value && !json_object_get(ml->properties, key) &&
         json_object_size(ml->properties) >= ML_PROPERTIES_MAX)) {
        log_warn("managed", "%s: property update refused: invalid or too many", ml->name);
        return QE_INVALID;
    }
    int rc = value ? json_object_set_new(ml->properties, key, json_string(value))
                   : json_object_del(ml->properties, key);
    if (rc != 0 && value)
        return QE_INVALID; /* not UTF-8 */
    return ml_md_write(ml, cb, arg);
}

const char *ml_get_property(const managed_ledger_t *ml, const char *key)
{
    return json_string_value(json_object_get(ml->properties, key));
}

const char *ml_name(const managed_ledger_t *ml)
{
    return ml->name;
}

ml_pos_t ml_last_confirmed(const managed_ledger_t *ml)
{
    return ml_list_last(&ml->ledgers);
}

ml_pos_t ml_first_position(const managed_ledger_t *ml)
{
    ml_pos_t p;
    if (ml_list_seek(&ml->ledgers, ML_POS_EARLIEST, &p))
        return p;
    return ml_list_next(&ml->ledgers, ML_POS_EARLIEST);
}

ml_pos_t ml_next_position(const managed_ledger_t *ml, ml_pos_t pos)
{
    return ml_list_next(&ml->ledgers, pos);
}

uint64_t ml_count_entries(const managed_ledger_t *ml, ml_pos_t a, ml_pos_t b)
{
    return ml_list_count(&ml->ledgers, a, b);
}

void ml_get_stats(const managed_ledger_t *ml, ml_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->entries_added = ml->entries_added;
    out->entries = ml_list_total_entries(&ml->ledgers);
    out->size_bytes = ml_list_total_size(&ml->ledgers);
    out->current_ledger_id = ml->ledgers.current_id;
    const ml_ledger_info_t *cur = ml_list_find(&ml->ledgers, ml->ledgers.current_id);
    if (cur) {
        out->current_ledger_entries = (uint64_t)cur->entries;
        out->current_ledger_size_bytes = (uint64_t)cur->size_bytes;
    }
    out->ledgers_count = ml->ledgers.n;
    out->ledger_create_failures = ml->create_failures;
}

size_t ml_get_ledgers(const managed_ledger_t *ml, ml_ledger_info_t *out, size_t max)
{
    size_t n = ml->ledgers.n < max ? ml->ledgers.n : max;
    ml_move(out, ml->ledgers.v, n * sizeof *out);
    return ml->ledgers.n;
}
