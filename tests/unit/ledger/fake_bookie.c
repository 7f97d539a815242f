/*
 * fake_bookie.c — see fake_bookie.h. Storage: a list of ledgers, each a dense
 * array of entries indexed by entry id (tests write few thousand at most).
 * Answers: one FIFO per fake, drained by one ev_timer at the head's due time.
 */
#include "tests/unit/ledger/fake_bookie.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

#define FAKE_ACK_LOG_MAX 4096
#define FAKE_ENTRIES_MAX 100000

enum { ANS_ADD, ANS_READ, ANS_LAC, ANS_DONE };

typedef struct fake_answer {
    struct fake_answer *next;
    int kind, rc;
    int64_t ledger_id, entry_id, lac;
    qbuf_t *entry; /* a reference, for reads */
    void *cb;
    void *arg;
    double due;
} fake_answer_t;

typedef struct fake_ledger {
    struct fake_ledger *next;
    int64_t id;
    bool fenced;
    int64_t lac;
    qbuf_t **entries;
    size_t cap;
} fake_ledger_t;

struct fake_bookie {
    bk_client_t client; /* first: the handle is the fake */
    struct ev_loop *loop;
    fake_ledger_t *ledgers;
    fake_answer_t *head, *tail; /* deliverable in order */
    fake_answer_t *black_head;  /* partitioned adds: never delivered before free */
    ev_timer timer;
    int fail_rc;
    bool stalled, partitioned, read_only;
    uint32_t delay_ms;
    int busy;
    uint64_t adds_seen;
};

static fake_ack_t ack_log[FAKE_ACK_LOG_MAX];
static size_t ack_log_n;

void fake_ack_log_reset(void)
{
    ack_log_n = 0;
}

size_t fake_ack_log_count(void)
{
    return ack_log_n;
}

const fake_ack_t *fake_ack_log_get(size_t i)
{
    return i < ack_log_n ? &ack_log[i] : NULL;
}

/* ------------------------------------------------------------ storage -- */

static fake_ledger_t *ledger_find(fake_bookie_t *fb, int64_t id, bool create)
{
    for (fake_ledger_t *l = fb->ledgers; l; l = l->next)
        if (l->id == id)
            return l;
    if (!create)
        return NULL;
    fake_ledger_t *l = calloc(1, sizeof *l);
    assert(l);
    l->id = id;
    l->lac = -1;
    l->next = fb->ledgers;
    fb->ledgers = l;
    return l;
}

static void ledger_store(fake_ledger_t *l, int64_t entry_id, qbuf_t *data)
{
    assert(entry_id >= 0 && entry_id < FAKE_ENTRIES_MAX);
    if ((size_t)entry_id >= l->cap) {
        size_t cap = l->cap ? l->cap : 64;
        while (cap <= (size_t)entry_id)
            cap *= 2;
        l->entries = realloc(l->entries, cap * sizeof *l->entries);
        assert(l->entries);
        memset(l->entries + l->cap, 0, (cap - l->cap) * sizeof *l->entries);
        l->cap = cap;
    }
    qbuf_unref(l->entries[entry_id]);
    l->entries[entry_id] = qbuf_ref(data);
}

static void ledger_free(fake_ledger_t *l)
{
    for (size_t i = 0; i < l->cap; i++)
        qbuf_unref(l->entries[i]);
    free(l->entries);
    free(l);
}

static qbuf_t *ledger_entry(fake_ledger_t *l, int64_t entry_id)
{
    return l && entry_id >= 0 && (size_t)entry_id < l->cap ? l->entries[entry_id] : NULL;
}

/* ------------------------------------------------------------ answers -- */

static void deliver(fake_bookie_t *fb, fake_answer_t *a)
{
    if (a->kind == ANS_ADD && ack_log_n < FAKE_ACK_LOG_MAX)
        ack_log[ack_log_n++] = (fake_ack_t){fb->client.id, a->ledger_id, a->entry_id, a->rc};
    switch (a->kind) {
    case ANS_ADD:
        ((bk_add_cb)a->cb)(a->rc, a->arg);
        break;
    case ANS_READ:
        ((bk_read_cb)a->cb)(a->rc, a->entry, a->lac, a->arg);
        break;
    case ANS_LAC:
        ((bk_lac_cb)a->cb)(a->rc, a->lac, a->arg);
        break;
    default:
        ((bk_done_cb)a->cb)(a->rc, a->arg);
    }
    qbuf_unref(a->entry);
    free(a);
}

static void arm(fake_bookie_t *fb)
{
    ev_timer_stop(fb->loop, &fb->timer);
    if (!fb->head || fb->stalled)
        return;
    double wait = fb->head->due - ev_now(fb->loop);
    ev_timer_set(&fb->timer, wait > 0 ? wait : 0.0, 0.0);
    ev_timer_start(fb->loop, &fb->timer);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    fake_bookie_t *fb = w->data;
    double now = ev_now(loop);
    while (fb->head && !fb->stalled && fb->head->due <= now) {
        fake_answer_t *a = fb->head;
        fb->head = a->next;
        if (!fb->head)
            fb->tail = NULL;
        deliver(fb, a); /* may queue more answers */
    }
    arm(fb);
}

static void answer(fake_bookie_t *fb, int kind, int rc, int64_t ledger_id, int64_t entry_id,
                   int64_t lac, qbuf_t *entry, void *cb, void *arg)
{
    fake_answer_t *a = calloc(1, sizeof *a);
    assert(a);
    *a = (fake_answer_t){.kind = kind,
                         .rc = rc,
                         .ledger_id = ledger_id,
                         .entry_id = entry_id,
                         .lac = lac,
                         .entry = entry ? qbuf_ref(entry) : NULL,
                         .cb = cb,
                         .arg = arg,
                         .due = ev_now(fb->loop) + fb->delay_ms / 1000.0};
    if (fb->tail)
        fb->tail->next = a;
    else
        fb->head = a;
    fb->tail = a;
    if (!ev_is_active(&fb->timer))
        arm(fb);
}

/* -------------------------------------------------------------- ops -- */

static int do_add(fake_bookie_t *fb, int64_t lid, int64_t eid, int64_t lac, qbuf_t *data,
                  bk_add_cb cb, void *arg, bool recovery)
{
    if (!recovery && fb->busy > 0) {
        fb->busy--;
        return QE_BUSY;
    }
    fb->adds_seen++;
    if (!recovery && fb->partitioned && !fb->fail_rc) {
        fake_answer_t *a = calloc(1, sizeof *a);
        assert(a);
        *a = (fake_answer_t){.kind = ANS_ADD,
                             .rc = QE_CLOSED,
                             .ledger_id = lid,
                             .entry_id = eid,
                             .cb = cb,
                             .arg = arg};
        a->next = fb->black_head;
        fb->black_head = a;
        return 0;
    }
    int rc = fb->fail_rc;
    fake_ledger_t *l = rc ? NULL : ledger_find(fb, lid, true);
    if (l && l->fenced && !recovery)
        rc = QE_FENCED;
    if (rc == 0 && fb->read_only && !recovery)
        rc = QE_READ_ONLY;
    if (rc == 0) {
        ledger_store(l, eid, data);
        if (lac > l->lac)
            l->lac = lac;
    }
    answer(fb, ANS_ADD, rc, lid, eid, -1, NULL, (void *)cb, arg);
    return 0;
}

static int fake_add(bk_client_t *c, int64_t lid, int64_t eid, int64_t lac, qbuf_t *data,
                    bk_add_cb cb, void *arg)
{
    return do_add((fake_bookie_t *)c, lid, eid, lac, data, cb, arg, false);
}

static int fake_recovery_add(bk_client_t *c, int64_t lid, int64_t eid, int64_t lac, qbuf_t *data,
                             bk_add_cb cb, void *arg)
{
    return do_add((fake_bookie_t *)c, lid, eid, lac, data, cb, arg, true);
}

static int fake_read(bk_client_t *c, int64_t lid, int64_t eid, bk_read_cb cb, void *arg)
{
    fake_bookie_t *fb = (fake_bookie_t *)c;
    int rc = fb->fail_rc;
    fake_ledger_t *l = rc ? NULL : ledger_find(fb, lid, false);
    qbuf_t *e = ledger_entry(l, eid);
    if (rc == 0)
        rc = !l ? QE_NO_LEDGER : !e ? QE_NO_ENTRY : 0;
    answer(fb, ANS_READ, rc, lid, eid, l ? l->lac : -1, rc ? NULL : e, (void *)cb, arg);
    return 0;
}

static int fake_lac_op(bk_client_t *c, int64_t lid, bk_lac_cb cb, void *arg, int what)
{
    fake_bookie_t *fb = (fake_bookie_t *)c;
    int rc = fb->fail_rc;
    fake_ledger_t *l = rc ? NULL : ledger_find(fb, lid, what == 1);
    int64_t v = -1;
    if (rc == 0 && !l)
        rc = QE_NO_LEDGER;
    if (rc == 0 && what == 1)
        l->fenced = true;
    if (rc == 0 && what == 2) {
        for (size_t i = 0; i < l->cap; i++)
            if (l->entries[i])
                v = (int64_t)i;
    } else if (rc == 0) {
        v = l->lac;
    }
    answer(fb, ANS_LAC, rc, lid, -1, v, NULL, (void *)cb, arg);
    return 0;
}

static int fake_read_lac(bk_client_t *c, int64_t lid, bk_lac_cb cb, void *arg)
{
    return fake_lac_op(c, lid, cb, arg, 0);
}

static int fake_fence(bk_client_t *c, int64_t lid, bk_lac_cb cb, void *arg)
{
    return fake_lac_op(c, lid, cb, arg, 1);
}

static int fake_last_entry(bk_client_t *c, int64_t lid, bk_lac_cb cb, void *arg)
{
    return fake_lac_op(c, lid, cb, arg, 2);
}

static int fake_delete(bk_client_t *c, int64_t lid, bk_done_cb cb, void *arg)
{
    fake_bookie_t *fb = (fake_bookie_t *)c;
    int rc = fb->fail_rc;
    if (rc == 0) {
        rc = QE_NO_LEDGER;
        for (fake_ledger_t **pp = &fb->ledgers; *pp; pp = &(*pp)->next) {
            if ((*pp)->id == lid) {
                fake_ledger_t *l = *pp;
                *pp = l->next;
                ledger_free(l);
                rc = 0;
                break;
            }
        }
    }
    answer(fb, ANS_DONE, rc, lid, -1, -1, NULL, (void *)cb, arg);
    return 0;
}

static void fake_free_op(bk_client_t *c)
{
    fake_bookie_free((fake_bookie_t *)c);
}

static bool fake_writable(bk_client_t *c)
{
    return !((fake_bookie_t *)c)->read_only;
}

static const bk_client_ops_t fake_ops = {
    .add = fake_add,
    .read = fake_read,
    .read_lac = fake_read_lac,
    .fence = fake_fence,
    .last_entry = fake_last_entry,
    .delete_ledger = fake_delete,
    .free = fake_free_op,
    .recovery_add = fake_recovery_add,
    .writable = fake_writable,
};

/* ----------------------------------------------------------- control -- */

fake_bookie_t *fake_bookie_new(struct ev_loop *loop, const char *id)
{
    fake_bookie_t *fb = calloc(1, sizeof *fb);
    assert(fb);
    fb->client.ops = &fake_ops;
    snprintf(fb->client.id, sizeof fb->client.id, "%s", id);
    fb->loop = loop;
    ev_timer_init(&fb->timer, timer_cb, 0, 0);
    fb->timer.data = fb;
    return fb;
}

void fake_bookie_read_only(fake_bookie_t *fb, bool on)
{
    fb->read_only = on;
}

bk_client_t *fake_bookie_client(fake_bookie_t *fb)
{
    return &fb->client;
}

void fake_bookie_free(fake_bookie_t *fb)
{
    if (!fb)
        return;
    ev_timer_stop(fb->loop, &fb->timer);
    while (fb->head) {
        fake_answer_t *a = fb->head;
        fb->head = a->next;
        a->rc = QE_CLOSED;
        deliver(fb, a);
    }
    while (fb->black_head) {
        fake_answer_t *a = fb->black_head;
        fb->black_head = a->next;
        deliver(fb, a);
    }
    while (fb->ledgers) {
        fake_ledger_t *l = fb->ledgers;
        fb->ledgers = l->next;
        ledger_free(l);
    }
    free(fb);
}

void fake_bookie_fail(fake_bookie_t *fb, int rc)
{
    fb->fail_rc = rc;
}

void fake_bookie_stall(fake_bookie_t *fb, bool on)
{
    fb->stalled = on;
    arm(fb);
}

void fake_bookie_partition_adds(fake_bookie_t *fb, bool on)
{
    fb->partitioned = on;
}

void fake_bookie_set_delay_ms(fake_bookie_t *fb, uint32_t ms)
{
    fb->delay_ms = ms;
}

void fake_bookie_busy(fake_bookie_t *fb, int n)
{
    fb->busy = n;
}

void fake_bookie_lose(fake_bookie_t *fb, int64_t ledger_id, int64_t from_entry)
{
    fake_ledger_t *l = ledger_find(fb, ledger_id, false);
    for (size_t i = 0; l && i < l->cap; i++) {
        if ((int64_t)i >= from_entry) {
            qbuf_unref(l->entries[i]);
            l->entries[i] = NULL;
        }
    }
}

bool fake_bookie_has(fake_bookie_t *fb, int64_t ledger_id, int64_t entry_id)
{
    return fake_bookie_entry(fb, ledger_id, entry_id) != NULL;
}

qbuf_t *fake_bookie_entry(fake_bookie_t *fb, int64_t ledger_id, int64_t entry_id)
{
    return ledger_entry(ledger_find(fb, ledger_id, false), entry_id);
}

size_t fake_bookie_count(fake_bookie_t *fb, int64_t ledger_id)
{
    fake_ledger_t *l = ledger_find(fb, ledger_id, false);
    size_t n = 0;
    for (size_t i = 0; l && i < l->cap; i++)
        n += l->entries[i] != NULL;
    return n;
}

bool fake_bookie_fenced(fake_bookie_t *fb, int64_t ledger_id)
{
    fake_ledger_t *l = ledger_find(fb, ledger_id, false);
    return l && l->fenced;
}

bool fake_bookie_knows(fake_bookie_t *fb, int64_t ledger_id)
{
    return ledger_find(fb, ledger_id, false) != NULL;
}

uint64_t fake_bookie_adds_seen(fake_bookie_t *fb)
{
    return fb->adds_seen;
}
