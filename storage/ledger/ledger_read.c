/*
 * ledger_read.c — ledger_read: entries first..last, in order, in one callback.
 *
 * Each entry is read from position 0 of its write set (the segment that holds
 * it), then, on an error or after add_timeout_ms without an answer, from
 * position 1, 2 ... up to Qw-1; when every position failed, the whole read
 * fails with the last error. At most LEDGER_READ_PARALLEL entry reads are
 * outstanding per call and at most LEDGER_READ_ENTRIES_MAX entries per call.
 * A read is a child object of its ledger handle: releasing the handle kills it
 * and its callback is then never called. The callback is always posted to the
 * loop (never run inside ledger_read); entries are borrowed by the callback and
 * released after it returns.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/ledger/ledger_int.h"

typedef struct read_slot {
    uint32_t seq;   /* the request that counts (0: none outstanding) */
    uint8_t k;      /* write-set position being tried */
    double sent_at; /* ev_now() of that request */
} read_slot_t;

typedef struct ledger_read_op {
    lobj_t obj;
    ledger_t *l;
    int64_t first;
    size_t n, next, done, outstanding;
    ledger_read_cb cb;
    void *arg;
    qbuf_t **entries; /* n, each one reference once read */
    read_slot_t *slots;
    uint32_t seq;
    int rc;
    bool finished;
    ev_timer timer;
} ledger_read_op_t;

typedef struct read_req {
    ledger_read_op_t *op;
    size_t idx;
    uint32_t seq;
} read_req_t;

static void read_issue(ledger_read_op_t *op, size_t idx);

static void read_on_kill(lobj_t *o)
{
    ledger_read_op_t *op = (ledger_read_op_t *)o;
    ev_timer_stop(op->l->lc->loop, &op->timer);
}

static void read_destroy(lobj_t *o)
{
    ledger_read_op_t *op = (ledger_read_op_t *)o;
    for (size_t i = 0; i < op->n; i++)
        qbuf_unref(op->entries[i]);
    free(op->entries);
    free(op->slots);
    free(op);
}

static void read_finish_posted(void *arg)
{
    ledger_read_op_t *op = arg;
    if (!lobj_back(&op->obj))
        return;
    /* Held across the callback: the caller may release the ledger in it, which
     * kills its reads, this one included; the entries must outlive the call. */
    lobj_hold(&op->obj);
    if (op->rc < 0)
        op->cb(op->rc, op->first, NULL, 0, op->arg);
    else
        op->cb(0, op->first, op->entries, op->n, op->arg);
    if (lobj_back(&op->obj))
        lobj_kill(&op->obj);
}

static void read_finish(ledger_read_op_t *op, int rc)
{
    if (op->finished)
        return;
    op->finished = true;
    op->rc = rc;
    if (rc < 0)
        log_warn("ledger", "read of ledger %" PRId64 " entries %" PRId64 "..%" PRId64 ": %s",
                 op->l->id, op->first, op->first + (int64_t)op->n - 1, q_strerror(rc));
    ev_timer_stop(op->l->lc->loop, &op->timer);
    lc_post(op->l->lc, &op->obj, read_finish_posted);
}

/* Issues reads while below the parallel bound; finishes when all are in. */
static void read_pump(ledger_read_op_t *op)
{
    while (!op->finished && op->next < op->n && op->outstanding < LEDGER_READ_PARALLEL)
        read_issue(op, op->next++);
    if (!op->finished && op->done == op->n)
        read_finish(op, 0);
}

/* The request for idx failed with rc: the next position, or the read fails. */
static void read_retry(ledger_read_op_t *op, size_t idx, int rc)
{
    read_slot_t *s = &op->slots[idx];
    s->seq = 0;
    op->outstanding--;
    if (++s->k >= op->l->md.q.write_quorum) {
        read_finish(op, rc);
        return;
    }
    read_issue(op, idx);
}

static void read_entry_done(int rc, qbuf_t *entry, int64_t lac, void *arg)
{
    (void)lac;
    read_req_t r = *(read_req_t *)arg;
    free(arg);
    ledger_read_op_t *op = r.op;
    if (!lobj_back(&op->obj) || op->finished || op->slots[r.idx].seq != r.seq)
        return;
    if (rc < 0) {
        read_retry(op, r.idx, rc);
        return;
    }
    assert(entry && !op->entries[r.idx]);
    op->entries[r.idx] = qbuf_ref(entry);
    op->slots[r.idx].seq = 0;
    op->outstanding--;
    op->done++;
    read_pump(op);
}

static void read_issue(ledger_read_op_t *op, size_t idx)
{
    read_slot_t *s = &op->slots[idx];
    int64_t e = op->first + (int64_t)idx;
    bk_client_t *bk = ledger_bookie_for(op->l, e, s->k);
    read_req_t *r = malloc(sizeof *r);
    op->outstanding++;
    s->seq = ++op->seq ? op->seq : ++op->seq;
    s->sent_at = ev_now(op->l->lc->loop);
    int rc = !bk ? QE_UNAVAILABLE : !r ? -ENOMEM : 0;
    if (rc == 0) {
        *r = (read_req_t){.op = op, .idx = idx, .seq = s->seq};
        lobj_hold(&op->obj);
        rc = bk_client_read(bk, op->l->id, e, read_entry_done, r);
        if (rc < 0)
            lobj_back(&op->obj);
    }
    if (rc < 0) {
        free(r);
        read_retry(op, idx, rc);
    }
}

static void read_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    ledger_read_op_t *op = w->data;
    double now = ev_now(loop), limit = op->l->lc->cfg.add_timeout_ms / 1000.0;
    for (size_t i = 0; i < op->next && !op->finished; i++)
        if (op->slots[i].seq && now - op->slots[i].sent_at >= limit)
            read_retry(op, i, QE_TIMEOUT);
}

static int read_check(const ledger_t *l, int64_t first, int64_t last)
{
    if (l->role != LEDGER_ROLE_WRITER && l->role != LEDGER_ROLE_READER) {
        log_warn("ledger", "read refused: ledger %" PRId64 " is not open", l->id);
        return QE_INVALID;
    }
    if (first < 0 || last < first || last - first >= LEDGER_READ_ENTRIES_MAX) {
        log_warn("ledger", "read refused: ledger %" PRId64 " range %" PRId64 "..%" PRId64, l->id,
                 first, last);
        return QE_INVALID;
    }
    if (last > l->lac) {
        log_warn("ledger", "read refused: ledger %" PRId64 " entry %" PRId64 " > lac %" PRId64,
                 l->id, last, l->lac);
        return QE_NO_ENTRY;
    }
    return 0;
}

int ledger_read(ledger_t *l, int64_t first, int64_t last, ledger_read_cb cb, void *arg)
{
    int rc = read_check(l, first, last);
    if (rc < 0)
        return rc;
    ledger_read_op_t *op = calloc(1, sizeof *op);
    size_t n = (size_t)(last - first + 1);
    if (op) {
        op->entries = calloc(n, sizeof *op->entries);
        op->slots = calloc(n, sizeof *op->slots);
    }
    if (!op || !op->entries || !op->slots) {
        if (op) {
            free(op->entries);
            free(op->slots);
        }
        free(op);
        return -ENOMEM;
    }
    op->obj.on_kill = read_on_kill;
    op->obj.destroy = read_destroy;
    op->l = l;
    op->first = first;
    op->n = n;
    op->cb = cb;
    op->arg = arg;
    lobj_link(&l->reads, &op->obj);
    double iv = l->lc->cfg.add_timeout_ms / 2000.0;
    ev_timer_init(&op->timer, read_timer_cb, iv, iv);
    op->timer.data = op;
    ev_timer_start(l->lc->loop, &op->timer);
    read_pump(op);
    return 0;
}
