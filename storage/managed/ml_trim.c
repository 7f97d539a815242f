/*
 * ml_trim.c — retention: deleting whole ledgers at the front of the list.
 *
 * A ledger is consumed when its id is below the ledger of next(M) for the
 * slowest durable cursor M (every ledger before the current one when there is
 * no durable cursor). Walking consumed ledgers oldest first, one is deleted
 * while retention does not keep it:
 *
 *   expired = retention_time_s >= 0 and it closed retention_time_s or more ago
 *   over    = retention_size_bytes >= 0 and the managed ledger's total size,
 *             less what is already chosen for deletion, exceeds the bound
 *   delete while (expired or over); stop at the first ledger kept.
 *
 * So -1/-1 keeps everything, 0 (either) keeps nothing consumed. The current
 * ledger is never deleted. Order: the trimmed list is written to the metadata
 * store first, then each ledger is deleted (a crash in between leaks a ledger,
 * never leaves the metadata naming a deleted one). One trim runs at a time;
 * requests meanwhile run one more pass after it. Runs every
 * ML_TRIM_INTERVAL_S, after a durable cursor's mark-delete crosses into
 * another ledger, after a cursor is deleted, and on ml_trim().
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "common/clock.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

static void trim_run(managed_ledger_t *ml);

static void waiters_done(ml_waiter_t *w, int rc)
{
    while (w) {
        ml_waiter_t *next = w->next;
        w->cb(rc, w->arg);
        free(w);
        w = next;
    }
}

/* How many ledgers at the front may go now. */
static size_t trim_count(const managed_ledger_t *ml)
{
    const ml_ledger_list_t *l = &ml->ledgers;
    int64_t limit = l->current_id >= 0 ? l->current_id : INT64_MAX;
    ml_pos_t slowest;
    if (ml_cursors_slowest(ml, &slowest)) {
        int64_t consumed_below = ml_list_next(l, slowest).ledger_id;
        if (consumed_below < limit)
            limit = consumed_below;
    }
    int64_t now = clock_wall_ms();
    uint64_t total = ml_list_total_size(l), chosen = 0;
    const ml_config_t *cfg = &ml->cfg;
    size_t k = 0;
    for (; k < l->n && l->v[k].ledger_id < limit && l->v[k].ledger_id != l->current_id; k++) {
        const ml_ledger_info_t *li = &l->v[k];
        bool expired =
            cfg->retention_time_s >= 0 && now - li->closed_ms >= cfg->retention_time_s * 1000;
        bool over =
            cfg->retention_size_bytes >= 0 && total - chosen > (uint64_t)cfg->retention_size_bytes;
        if (!expired && !over)
            break;
        chosen += (uint64_t)li->size_bytes;
    }
    return k;
}

static void trim_done(managed_ledger_t *ml, int rc)
{
    ml->trimming = false;
    free(ml->trim_ids);
    ml->trim_ids = NULL;
    ml->trim_nids = ml->trim_next = 0;
    ml_waiter_t *w = ml->trim_active;
    ml->trim_active = NULL;
    waiters_done(w, rc);
    if (ml->trim_again) {
        ml->trim_again = false;
        ml_trim_schedule(ml);
    }
}

static void trim_ledger_deleted(int rc, void *arg);

static void trim_delete_next(managed_ledger_t *ml)
{
    while (ml->trim_next < ml->trim_nids) {
        int64_t id = ml->trim_ids[ml->trim_next++];
        ml_hold(ml);
        int rc = ledger_delete(ml->f->lc, id, trim_ledger_deleted, ml);
        if (rc == 0)
            return;
        ml->holds--;
        log_warn("managed", "%s: delete of ledger %lld refused: %s", ml->name, (long long)id,
                 q_strerror(rc));
    }
    trim_done(ml, 0);
}

static void trim_ledger_deleted(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc < 0 && rc != QE_NO_LEDGER)
        log_warn("managed", "%s: delete of trimmed ledger %lld failed: %s", ml->name,
                 (long long)ml->trim_ids[ml->trim_next - 1], q_strerror(rc));
    trim_delete_next(ml);
    ml_release(ml);
}

static void trim_md_written(int rc, void *arg)
{
    managed_ledger_t *ml = arg;
    if (rc < 0) {
        trim_done(ml, rc);
        return;
    }
    log_info("managed", "%s: trimmed %zu ledgers", ml->name, ml->trim_nids);
    trim_delete_next(ml);
}

static void trim_run(managed_ledger_t *ml)
{
    assert(!ml->trimming);
    ml->trim_active = ml->trim_waiters;
    ml->trim_waiters = NULL;
    if (ml->state == ML_OPENING || ml->state == ML_FENCED || ml->closing) {
        ml_waiter_t *w = ml->trim_active;
        ml->trim_active = NULL;
        waiters_done(w, ml->state == ML_FENCED ? QE_FENCED : QE_CLOSED);
        return;
    }
    ml_handles_release_idle(ml, ML_READ_HANDLE_IDLE_S);
    size_t k = trim_count(ml);
    if (k == 0) {
        trim_done(ml, 0);
        return;
    }
    ml->trim_ids = malloc(k * sizeof *ml->trim_ids);
    if (!ml->trim_ids) {
        trim_done(ml, -ENOMEM);
        return;
    }
    ml->trimming = true;
    ml->trim_nids = k;
    for (size_t i = 0; i < k; i++) {
        int64_t id = ml->ledgers.v[i].ledger_id;
        ml->trim_ids[i] = id;
        ml_handles_release_ledger(ml, id);
        ml_cache_drop(ml->f->cache, ml, id);
    }
    ml_list_drop_front(&ml->ledgers, k);
    int rc = ml_md_write(ml, trim_md_written, ml);
    if (rc < 0)
        trim_done(ml, rc);
}

static void trim_posted_run(void *arg)
{
    managed_ledger_t *ml = arg;
    ml->trim_posted = false;
    if (ml->trimming)
        ml->trim_again = true;
    else
        trim_run(ml);
    ml_release(ml);
}

void ml_trim_schedule(managed_ledger_t *ml)
{
    if (ml->trim_posted)
        return;
    ml_hold(ml);
    if (qloop_post(ml->f->mb, trim_posted_run, ml) < 0) {
        ml->holds--;
        return;
    }
    ml->trim_posted = true;
}

int ml_trim(managed_ledger_t *ml, ml_done_cb cb, void *arg)
{
    if (ml->closing) {
        log_warn("managed", "%s: trim refused: closed", ml->name);
        return QE_CLOSED;
    }
    ml_waiter_t *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (ml_waiter_t){.next = ml->trim_waiters, .cb = cb, .arg = arg};
    ml->trim_waiters = w;
    if (ml->trimming)
        ml->trim_again = true;
    else
        ml_trim_schedule(ml);
    return 0;
}

/* Whether a periodic check could do anything: a ledger other than the one
 * being written (the only kind trimming deletes), or a read handle to release
 * when idle. A log of one ledger with no reader has nothing to do. */
static bool trim_may_work(const managed_ledger_t *ml)
{
    const ml_ledger_list_t *l = &ml->ledgers;
    if (l->n > 1 || (l->n == 1 && l->v[0].ledger_id != l->current_id))
        return true;
    for (size_t i = 0; ml->handles && i < ML_READ_HANDLES_MAX; i++)
        if (ml->handles[i].state != ML_HANDLE_EMPTY)
            return true;
    return false;
}

/* One timer for the factory, not one per managed ledger: with 100,000 idle
 * topics, per-log timers woke the loop ~1,700 times a second for nothing. The
 * walk is cheap; only logs that may have work get a trim posted. */
static void trim_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ml_factory_t *f = w->data;
    for (managed_ledger_t *ml = f->mls; ml; ml = ml->next)
        if (ml->trim_ticking && !ml->closing && trim_may_work(ml))
            ml_trim_schedule(ml);
}

void ml_trim_timer_init(ml_factory_t *f)
{
    ev_timer_init(&f->trim_timer, trim_timer_cb, ML_TRIM_INTERVAL_S, ML_TRIM_INTERVAL_S);
    f->trim_timer.data = f;
}

void ml_trim_start_timer(managed_ledger_t *ml)
{
    ml_factory_t *f = ml->f;
    if (ml->trim_ticking)
        return;
    ml->trim_ticking = true;
    if (f->trim_ticking++ == 0)
        ev_timer_start(f->loop, &f->trim_timer);
}

void ml_trim_stop_timer(managed_ledger_t *ml)
{
    ml_factory_t *f = ml->f;
    if (!ml->trim_ticking)
        return;
    ml->trim_ticking = false;
    assert(f->trim_ticking > 0);
    if (--f->trim_ticking == 0)
        ev_timer_stop(f->loop, &f->trim_timer);
}
