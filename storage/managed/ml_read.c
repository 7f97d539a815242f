/*
 * ml_read.c — reading a managed ledger by position: entry cache first, then
 * the ledger, across ledger boundaries; and the cache of read handles.
 *
 * A read op walks positions from `from`: ml_list_seek gives the first existing
 * entry at or after the position (skipping trimmed and empty ledgers); a cached
 * entry is taken at once; a miss reads a run of up to ML_READ_BATCH_MAX
 * entries of that ledger with ledger_read. The current ledger is read through
 * the writer's handle (it knows the LAC; rollover waits for those reads),
 * closed ledgers through read handles opened without recovery, kept in a table
 * of ML_READ_HANDLES_MAX per managed ledger (LRU, released when idle
 * ML_READ_HANDLE_IDLE_S or when their ledger is trimmed); past the table a
 * temporary handle serves one read. The callback is always posted, never
 * inline; entries handed to it are borrowed (the op drops its references
 * afterwards).
 *
 * Bounds: ML_READS_PENDING_MAX reads in flight per managed ledger (QE_BUSY),
 * ML_READ_ENTRIES_MAX entries per read; max_bytes, the entries asked of a
 * ledger by its average entry size, then what is handed back; across the
 * factory, f->reads_bytes_max bytes reserved for and held from ledger reads
 * (reads wait in f->parked for room).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/managed/managed_int.h"

struct ml_read_op {
    managed_ledger_t *ml;
    ml_read_op_t *wait_next; /* in a handle's waiters while it opens */
    ml_read_op_t *park_next; /* in f->parked while waiting for room */
    /* the factory's read bound: reserved for the ledger read in flight, held
     * from ledgers (both counted in f->reads_bytes); asked for when parked */
    uint64_t reserved, held, asked;
    bool resumed; /* taken off f->parked: not queued behind the others again */
    ml_pos_t next;
    size_t max_entries, max_bytes, bytes;
    ml_entry_t *entries; /* each data referenced */
    size_t n, cap;
    ml_read_cb cb;
    void *arg;
    int rc;
    bool stop;
    ml_read_handle_t *h; /* NULL: the writer's handle */
    int64_t ledger_id, first, last;
};

static void read_continue(ml_read_op_t *op);

/* ------------------------------------------------------- read bound -- */

static void bound_release(ml_factory_t *f, uint64_t *counted)
{
    assert(f->reads_bytes >= *counted);
    f->reads_bytes -= *counted;
    *counted = 0;
}

/* Room for `want` more bytes: always when nothing else is counted, so a read
 * larger than the bound still goes, alone. */
static bool bound_room(const ml_factory_t *f, uint64_t want)
{
    return !f->reads_bytes_max || f->reads_bytes == 0 ||
           f->reads_bytes + want <= f->reads_bytes_max;
}

/* Restarts parked reads, oldest first, while there is room. Each holds
 * nothing while parked, and every read counted in f->reads_bytes finishes
 * without waiting (read_from_ledger), so this runs again until all are gone. */
static void bound_pump(ml_factory_t *f)
{
    while (f->parked && bound_room(f, f->parked->asked)) {
        ml_read_op_t *op = f->parked;
        f->parked = op->park_next;
        if (!f->parked)
            f->parked_tail = NULL;
        op->park_next = NULL;
        op->resumed = true;
        f->reads_parked--;
        if (op->ml->closing)
            op->rc = QE_CLOSED;
        read_continue(op);
    }
}

void ml_factory_set_reads_bytes_max(ml_factory_t *f, uint64_t bytes)
{
    f->reads_bytes_max = bytes;
    bound_pump(f);
}

/* ------------------------------------------------------- completion -- */

static void read_complete(void *p)
{
    ml_read_op_t *op = p;
    managed_ledger_t *ml = op->ml;
    op->cb(op->rc, op->entries, op->n, op->arg);
    for (size_t i = 0; i < op->n; i++)
        qbuf_unref(op->entries[i].data);
    free(op->entries);
    bound_release(ml->f, &op->held);
    free(op);
    assert(ml->reads_inflight > 0);
    ml->reads_inflight--;
    bound_pump(ml->f);
    ml_release(ml);
}

static void read_finish(ml_read_op_t *op)
{
    bound_release(op->ml->f, &op->reserved); /* a ledger read that failed to start */
    if (op->n > 0)
        op->rc = 0; /* partial success: the caller reads on from there */
    if (qloop_post(op->ml->f->mb, read_complete, op) < 0)
        read_complete(op); /* out of memory: deliver now rather than never */
}

static int read_append(ml_read_op_t *op, ml_pos_t pos, qbuf_t *data)
{
    if (op->n == op->cap) {
        size_t cap = op->cap ? op->cap * 2 : 16;
        if (cap > op->max_entries)
            cap = op->max_entries;
        ml_entry_t *v = realloc(op->entries, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        op->entries = v;
        op->cap = cap;
    }
    op->entries[op->n++] = (ml_entry_t){pos, qbuf_ref(data)};
    op->bytes += data->len;
    return 0;
}

/* ---------------------------------------------------------- handles -- */

static void handle_reset(ml_read_handle_t *h)
{
    if (h->l)
        ledger_release(h->l);
    if (h->temporary) {
        free(h);
        return;
    }
    memset(h, 0, sizeof *h);
}

static void handle_unref(managed_ledger_t *ml, ml_read_handle_t *h)
{
    assert(h->refs > 0);
    h->refs--;
    h->last_used = ev_now(ml->f->loop);
    if (h->refs == 0 && (h->doomed || h->temporary))
        handle_reset(h);
}

void ml_handles_release_ledger(managed_ledger_t *ml, int64_t ledger_id)
{
    for (size_t i = 0; ml->handles && i < ML_READ_HANDLES_MAX; i++) {
        ml_read_handle_t *h = &ml->handles[i];
        if (h->state == ML_HANDLE_EMPTY || h->ledger_id != ledger_id)
            continue;
        if (h->refs == 0 && h->state == ML_HANDLE_READY)
            handle_reset(h);
        else
            h->doomed = true;
    }
}

void ml_handles_release_idle(managed_ledger_t *ml, double idle_s)
{
    double now = ev_now(ml->f->loop);
    for (size_t i = 0; ml->handles && i < ML_READ_HANDLES_MAX; i++) {
        ml_read_handle_t *h = &ml->handles[i];
        if (h->state == ML_HANDLE_READY && h->refs == 0 && now - h->last_used >= idle_s)
            handle_reset(h);
    }
}

static void read_issue(ml_read_op_t *op);

static void handle_opened(int rc, ledger_t *l, void *arg)
{
    ml_read_handle_t *h = arg;
    managed_ledger_t *ml = h->ml;
    ml_read_op_t *waiters = h->waiters;
    h->waiters = NULL;
    if (rc == 0) {
        h->l = l;
        h->state = ML_HANDLE_READY;
        /* A ledger this log wrote and could not close (its close failed, or is
         * in flight): the bookies' LAC may be behind what was acknowledged. */
        const ml_ledger_info_t *li = ml_list_find(&ml->ledgers, h->ledger_id);
        if (li && li->entries > 0)
            ledger_raise_lac(l, li->entries - 1);
    } else {
        log_warn("managed", "%s: open of ledger %lld for reading failed: %s", ml->name,
                 (long long)h->ledger_id, q_strerror(rc));
    }
    while (waiters) {
        ml_read_op_t *op = waiters;
        waiters = op->wait_next;
        if (rc == 0) {
            read_issue(op);
        } else {
            op->rc = rc;
            op->h = NULL;
            read_finish(op);
        }
    }
    if (rc < 0) {
        h->refs = 0;
        handle_reset(h);
    }
    ml_release(ml);
}

/* A handle on ledger_id with one reference for the caller; NULL + *rc. */
static ml_read_handle_t *handle_acquire(managed_ledger_t *ml, int64_t ledger_id, int *rc)
{
    double now = ev_now(ml->f->loop);
    ml_read_handle_t *h = NULL, *victim = NULL;
    if (!ml->handles) /* out of memory: a temporary handle below */
        ml->handles = calloc(ML_READ_HANDLES_MAX, sizeof *ml->handles);
    for (size_t i = 0; ml->handles && i < ML_READ_HANDLES_MAX; i++) {
        ml_read_handle_t *s = &ml->handles[i];
        if (s->state != ML_HANDLE_EMPTY && s->ledger_id == ledger_id && !s->doomed) {
            s->refs++;
            s->last_used = now;
            return s;
        }
        if (!h && s->state == ML_HANDLE_EMPTY)
            h = s;
        if (s->state == ML_HANDLE_READY && s->refs == 0 &&
            (!victim || s->last_used < victim->last_used))
            victim = s;
    }
    if (!h && victim) {
        handle_reset(victim);
        h = victim;
    }
    if (!h) {
        h = calloc(1, sizeof *h);
        if (!h) {
            *rc = -ENOMEM;
            return NULL;
        }
        h->temporary = true;
    }
    h->ledger_id = ledger_id;
    h->state = ML_HANDLE_OPENING;
    h->refs = 1;
    h->last_used = now;
    h->ml = ml;
    ml->rstats.handle_opens++;
    ml_hold(ml);
    *rc = ledger_open(ml->f->lc, ledger_id, LEDGER_OPEN_NO_RECOVERY, handle_opened, h);
    if (*rc < 0) {
        ml->holds--;
        h->refs = 0;
        handle_reset(h);
        return NULL;
    }
    return h;
}

/* ------------------------------------------------------------ reads -- */

static void read_ledger_done(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    ml_read_op_t *op = arg;
    managed_ledger_t *ml = op->ml;
    if (op->h)
        handle_unref(ml, op->h);
    else
        ml->current_reads--;
    op->h = NULL;
    bound_release(ml->f, &op->reserved);
    if (rc < 0) {
        log_warn("managed", "%s: read of %lld:%lld failed: %s", ml->name, (long long)op->ledger_id,
                 (long long)op->first, q_strerror(rc));
        op->rc = rc;
        read_finish(op);
    } else {
        ml->rstats.ledger_entries_read += n;
        ml->f->reads_missed += n;
        for (size_t i = 0; i < n; i++)
            ml->f->reads_missed_bytes += entries[i]->len;
        for (size_t i = 0; i < n && op->rc == 0; i++) {
            op->rc = read_append(op, (ml_pos_t){op->ledger_id, first + (int64_t)i}, entries[i]);
            if (op->rc == 0) {
                op->held += entries[i]->len;
                ml->f->reads_bytes += entries[i]->len;
            }
        }
        op->next = (ml_pos_t){op->ledger_id, first + (int64_t)n};
        if (n == 0)
            op->stop = true;
        read_continue(op);
    }
    if (ml->state == ML_ROLLING)
        ml_adds_pump(ml); /* rollover waits for reads on the current ledger */
    ml_release(ml);
}

static void read_issue(ml_read_op_t *op)
{
    managed_ledger_t *ml = op->ml;
    ledger_t *l = op->h ? op->h->l : ml->current;
    ml->rstats.ledger_reads++;
    ml_hold(ml);
    int rc = ledger_read(l, op->first, op->last, read_ledger_done, op);
    if (rc < 0) {
        ml->holds--;
        if (op->h)
            handle_unref(ml, op->h);
        else
            ml->current_reads--;
        op->h = NULL;
        op->rc = rc;
        read_finish(op);
    }
}

static void read_from_ledger(ml_read_op_t *op, ml_pos_t pos)
{
    managed_ledger_t *ml = op->ml;
    const ml_ledger_info_t *li = ml_list_find(&ml->ledgers, pos.ledger_id);
    assert(li && pos.entry_id < li->entries);
    int64_t last = li->entries - 1;
    int64_t want = (int64_t)(op->max_entries - op->n);
    if (want > ML_READ_BATCH_MAX)
        want = ML_READ_BATCH_MAX;
    /* max_bytes bounds what is asked for, by the ledger's average entry size
     * (Pulsar's applyMaxSizeCap), not only what is handed back: a run of large
     * entries is not read whole to be cut after. */
    if (op->max_bytes && li->entries > 0 && li->size_bytes > 0) {
        double avg = (double)li->size_bytes / (double)li->entries;
        int64_t fit = (int64_t)((double)(op->max_bytes - op->bytes) / avg);
        if (fit < 1)
            fit = 1;
        if (want > fit)
            want = fit;
    }
    if (pos.entry_id + want - 1 < last)
        last = pos.entry_id + want - 1;
    uint64_t size = li->entries > 0 ? li->size_bytes / (uint64_t)li->entries : 0;
    size *= (uint64_t)(last - pos.entry_id + 1);
    ml_factory_t *f = ml->f;
    /* In call order: a read that would fit waits behind those already waiting
     * (which would otherwise wait for as long as newcomers keep the room). */
    bool queued = f->parked && !op->resumed;
    op->resumed = false;
    if (queued || !bound_room(f, size)) {
        if (op->n > 0) { /* answered with what it holds: it never waits holding */
            read_finish(op);
            return;
        }
        op->asked = size;
        if (f->parked_tail)
            f->parked_tail->park_next = op;
        else
            f->parked = op;
        f->parked_tail = op;
        f->reads_parked++;
        f->reads_parked_total++;
        return;
    }
    op->reserved = size;
    f->reads_bytes += size;
    op->ledger_id = pos.ledger_id;
    op->first = pos.entry_id;
    op->last = last;
    if (pos.ledger_id == ml->ledgers.current_id && ml->current) {
        op->h = NULL;
        ml->current_reads++;
        read_issue(op);
        return;
    }
    int rc = 0;
    op->h = handle_acquire(ml, pos.ledger_id, &rc);
    if (!op->h) {
        op->rc = rc;
        read_finish(op);
    } else if (op->h->state == ML_HANDLE_READY) {
        read_issue(op);
    } else {
        op->wait_next = op->h->waiters;
        op->h->waiters = op;
    }
}

static void read_continue(ml_read_op_t *op)
{
    managed_ledger_t *ml = op->ml;
    for (;;) {
        ml_pos_t pos;
        if (op->rc < 0 || op->stop || op->n >= op->max_entries ||
            (op->max_bytes && op->bytes >= op->max_bytes) ||
            !ml_list_seek(&ml->ledgers, op->next, &pos)) {
            read_finish(op);
            return;
        }
        qbuf_t *b = ml_cache_get(ml->f->cache, ml, pos);
        if (!b) {
            read_from_ledger(op, pos);
            return;
        }
        ml->rstats.cache_hits++;
        ml->f->reads_hit++;
        ml->f->reads_hit_bytes += b->len;
        op->rc = read_append(op, pos, b);
        op->next = (ml_pos_t){pos.ledger_id, pos.entry_id + 1};
    }
}

int ml_read(managed_ledger_t *ml, ml_pos_t from, size_t max_entries, size_t max_bytes,
            ml_read_cb cb, void *arg)
{
    if (ml->closing || ml->state == ML_OPENING) {
        log_warn("managed", "%s: read refused: closed", ml->name);
        return QE_CLOSED;
    }
    if (max_entries == 0)
        return QE_INVALID;
    if (ml->reads_inflight >= ML_READS_PENDING_MAX) {
        log_warn("managed", "%s: read refused: %d reads pending", ml->name, ML_READS_PENDING_MAX);
        return QE_BUSY;
    }
    ml_read_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return -ENOMEM;
    *op = (ml_read_op_t){.ml = ml, .next = from, .cb = cb, .arg = arg, .max_bytes = max_bytes};
    op->max_entries = max_entries < ML_READ_ENTRIES_MAX ? max_entries : ML_READ_ENTRIES_MAX;
    ml->reads_inflight++;
    ml_hold(ml);
    read_continue(op);
    return 0;
}

void ml_get_read_stats(const managed_ledger_t *ml, ml_read_stats_t *out)
{
    *out = ml->rstats;
}
