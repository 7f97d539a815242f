/*
 * Ledger recovery against real bookies (storage/bookie), through both paths a
 * ledger client has to a bookie: in process (bk_client_local) and over TCP
 * (bk_client_remote -> bookie_server, the servers on the test's own loop).
 *
 * The scenario is the one fencing exists for: a writer (E=3, Qw=3, Qa=2) has
 * entries 0..9 acknowledged, then its last entries 10..12 reach only one
 * bookie and it dies. A second client opens the ledger for recovery: it fences
 * all three bookies, finds 10..12 on one of them, and must copy them to the two
 * others although they have fenced the ledger (the recovery-add flag) before
 * it may close the ledger at 12. Then every bookie holds 0..12 byte for byte,
 * the ledger is CLOSED at 12, and the old writer's next add fails QE_FENCED.
 *
 * Also: the ledger client refuses a quorum larger than its available bookies,
 * and ledger_quorum_default() gives the cluster and standalone defaults.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/bookie_server.h"
#include "storage/ledger/ledger.h"
#include "storage/ledger/ledger_int.h"
#include "tests/unit/ledger/ledger_real.h"
#include "tests/unit/support/test_support.h"

#define WAIT_S 10.0
#define NBK 3

typedef struct renv {
    struct ev_loop *loop;
    char *dir;
    md_store_t *md;
    bookie_t *bk[NBK];
    bookie_server_t *srv[NBK];
    bool remote;
} renv_t;

static void renv_setup(renv_t *t, bool remote)
{
    memset(t, 0, sizeof *t);
    t->remote = remote;
    t->loop = ev_loop_new(0);
    t->dir = test_tmpdir("ledger-real");
    TEST_REQUIRE(t->loop && t->dir);
    char path[512];
    snprintf(path, sizeof path, "%s/md.db", t->dir);
    TEST_REQUIRE(md_store_open_embedded(t->loop, path, &t->md) == 0);
    for (int i = 0; i < NBK; i++) {
        char bdir[512];
        snprintf(bdir, sizeof bdir, "%s/bookie%d", t->dir, i);
        bookie_config_t cfg;
        bookie_config_defaults(&cfg);
        cfg.data_dir = bdir;
        cfg.journal_sync = false;
        cfg.journal_file_size_bytes = 1u << 20;
        cfg.write_cache_bytes = 4u << 20;
        cfg.read_cache_bytes = 1u << 20;
        TEST_REQUIRE(bookie_open(t->loop, &cfg, &t->bk[i]) == 0);
        if (remote)
            TEST_REQUIRE(bookie_server_start(t->loop, t->bk[i], "127.0.0.1", 0, &t->srv[i]) == 0);
    }
}

static void renv_teardown(renv_t *t)
{
    for (int i = 0; i < NBK; i++) {
        bookie_server_stop(t->srv[i]);
        bookie_close(t->bk[i]);
    }
    md_store_close(t->md);
    ev_loop_destroy(t->loop);
    test_rm_rf(t->dir);
    free(t->dir);
}

/* A handle on bookie i by the environment's path: ids are stable across
 * handles ("bk<i>" locally, "127.0.0.1:<port>" remotely). */
static bk_client_t *renv_handle(renv_t *t, int i)
{
    char id[64];
    if (!t->remote) {
        snprintf(id, sizeof id, "bk%d", i);
        return bk_client_local(t->bk[i], id);
    }
    snprintf(id, sizeof id, "127.0.0.1:%d", bookie_server_port(t->srv[i]));
    return bk_client_remote(t->loop, id, 2000);
}

typedef struct client {
    ledger_client_t *lc;
    bk_client_t *h[NBK];
} client_t;

static void client_new(renv_t *t, client_t *c)
{
    ledger_client_config_t cfg;
    ledger_client_config_defaults(&cfg);
    cfg.add_timeout_ms = 3000;
    TEST_REQUIRE(ledger_client_new(t->loop, t->md, &cfg, &c->lc) == 0);
    for (int i = 0; i < NBK; i++) {
        c->h[i] = renv_handle(t, i);
        TEST_REQUIRE(c->h[i] != NULL);
        TEST_REQUIRE(ledger_client_add_bookie(c->lc, c->h[i]) == 0);
    }
}

static void client_free(client_t *c)
{
    ledger_client_free(c->lc);
    for (int i = 0; i < NBK; i++)
        bk_client_free(c->h[i]);
}

/* ------------------------------------------------------------ helpers -- */

typedef struct wait {
    volatile bool done;
    int rc;
    ledger_t *l;
    int acked, failed, last_rc;
    int64_t next_id; /* add callbacks in entry order */
    bool in_order;
} wait_t;

static void w_open_cb(int rc, ledger_t *l, void *arg)
{
    wait_t *w = arg;
    w->rc = rc;
    w->l = l;
    w->done = true;
}

static void w_done_cb(int rc, void *arg)
{
    wait_t *w = arg;
    w->rc = rc;
    w->done = true;
}

static void w_add_cb(int rc, int64_t entry_id, void *arg)
{
    wait_t *w = arg;
    if (entry_id != w->next_id)
        w->in_order = false;
    w->next_id++;
    if (rc == 0)
        w->acked++;
    else
        w->failed++;
    w->last_rc = rc;
}

static void w_bk_add_cb(int rc, void *arg)
{
    w_done_cb(rc, arg);
}

static qbuf_t *entry_of(int64_t lid, int64_t e)
{
    size_t n = 100 + (size_t)(e * 37 % 300);
    qbuf_t *b = qbuf_new(n);
    for (size_t i = 0; i < n; i++)
        b->data[i] = (uint8_t)(lid * 13 + e * 101 + (int64_t)i * 7);
    b->len = (uint32_t)n;
    return b;
}

static bool same(const qbuf_t *a, const qbuf_t *b)
{
    return a && b && a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

typedef struct bread {
    volatile bool done;
    int rc;
    qbuf_t *entry;
} bread_t;

static void on_bookie_read(int rc, int64_t l, int64_t e, qbuf_t *entry, int64_t lac, void *arg)
{
    (void)l;
    (void)e;
    (void)lac;
    bread_t *r = arg;
    r->rc = rc;
    r->entry = entry ? qbuf_ref(entry) : NULL;
    r->done = true;
}

/* Entry e read straight from bookie bk matches what was written. */
static bool bookie_has(renv_t *t, bookie_t *bk, int64_t lid, int64_t e)
{
    bread_t r = {0};
    if (bookie_read(bk, lid, e, on_bookie_read, &r) != 0)
        return false;
    TEST_REQUIRE(test_run_until(t->loop, &r.done, WAIT_S));
    qbuf_t *want = entry_of(lid, e);
    bool ok = r.rc == 0 && same(r.entry, want);
    qbuf_unref(want);
    qbuf_unref(r.entry);
    return ok;
}

typedef struct lread {
    volatile bool done;
    int rc;
    size_t n;
    bool ok;
    int64_t lid;
} lread_t;

static void l_read_cb(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    lread_t *r = arg;
    r->rc = rc;
    r->n = n;
    r->ok = true;
    for (size_t i = 0; i < n; i++) {
        qbuf_t *want = entry_of(r->lid, first + (int64_t)i);
        r->ok &= same(entries[i], want);
        qbuf_unref(want);
    }
    r->done = true;
}

/* ------------------------------------------------------------- tests -- */

static void recovery_scenario(bool remote)
{
    renv_t t;
    renv_setup(&t, remote);
    client_t w1, w2;
    client_new(&t, &w1);

    ledger_quorum_t q = {3, 3, 2};
    wait_t cw = {0};
    TEST_REQUIRE(ledger_create(w1.lc, &q, w_open_cb, &cw) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &cw.done, WAIT_S) && cw.rc == 0);
    ledger_t *l = cw.l;
    int64_t lid = ledger_id(l);

    wait_t aw = {.in_order = true};
    for (int64_t e = 0; e < 10; e++) {
        qbuf_t *b = entry_of(lid, e);
        TEST_REQUIRE(ledger_add(l, b, w_add_cb, &aw) == 0);
        qbuf_unref(b);
    }
    for (int i = 0; i < 500 && aw.acked < 10; i++)
        test_run_for(t.loop, 0.01);
    CU_ASSERT_EQUAL(aw.acked, 10);
    CU_ASSERT_TRUE(aw.in_order);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(l), 9);

    /* The writer's last adds, 10..12, reach only bookie 0 (fewer than Qa):
     * sent as the writer sends them, through its own handle; then it dies. */
    for (int64_t e = 10; e <= 12; e++) {
        qbuf_t *b = entry_of(lid, e);
        wait_t a = {0};
        TEST_REQUIRE(bk_client_add(w1.h[0], lid, e, 9, b, w_bk_add_cb, &a) == 0);
        qbuf_unref(b);
        TEST_REQUIRE(test_run_until(t.loop, &a.done, WAIT_S));
        CU_ASSERT_EQUAL(a.rc, 0);
    }
    CU_ASSERT_FALSE(bookie_has(&t, t.bk[1], lid, 10));
    CU_ASSERT_FALSE(bookie_has(&t, t.bk[2], lid, 12));

    /* A second client recovers. */
    client_new(&t, &w2);
    wait_t ow = {0};
    TEST_REQUIRE(ledger_open(w2.lc, lid, LEDGER_OPEN_RECOVER, w_open_cb, &ow) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &ow.done, 3 * WAIT_S));
    CU_ASSERT_EQUAL(ow.rc, 0);
    TEST_REQUIRE(ow.l != NULL);
    CU_ASSERT_TRUE(ledger_is_closed(ow.l));
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(ow.l), 12);
    uint64_t want_len = 0;
    for (int64_t e = 0; e <= 12; e++) {
        qbuf_t *b = entry_of(lid, e);
        want_len += b->len;
        qbuf_unref(b);
    }
    CU_ASSERT_EQUAL(ledger_length_bytes(ow.l), want_len);

    /* Re-replicated onto the bookies that had fenced the ledger. */
    for (int i = 0; i < NBK; i++)
        for (int64_t e = 0; e <= 12; e++)
            CU_ASSERT_TRUE(bookie_has(&t, t.bk[i], lid, e));
    lread_t rr = {.lid = lid};
    TEST_REQUIRE(ledger_read(ow.l, 0, 12, l_read_cb, &rr) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &rr.done, WAIT_S));
    CU_ASSERT_EQUAL(rr.rc, 0);
    CU_ASSERT_EQUAL(rr.n, 13);
    CU_ASSERT_TRUE(rr.ok);
    ledger_release(ow.l);

    /* A plain add is still refused by every bookie: the ledger stays fenced. */
    for (int i = 0; i < NBK; i++) {
        qbuf_t *b = entry_of(lid, 13);
        wait_t a = {0};
        int rc = bk_client_add(w2.h[i], lid, 13, 12, b, w_bk_add_cb, &a);
        qbuf_unref(b);
        if (rc == 0) {
            TEST_REQUIRE(test_run_until(t.loop, &a.done, WAIT_S));
            rc = a.rc;
        }
        CU_ASSERT_EQUAL(rc, QE_FENCED);
    }

    /* The old writer: its next add fails QE_FENCED, and so does its close. */
    qbuf_t *b = entry_of(lid, 10);
    int rc = ledger_add(l, b, w_add_cb, &aw);
    qbuf_unref(b);
    if (rc == 0) {
        for (int i = 0; i < 500 && aw.failed == 0; i++)
            test_run_for(t.loop, 0.01);
        rc = aw.last_rc;
    }
    CU_ASSERT_EQUAL(rc, QE_FENCED);
    wait_t clw = {0};
    rc = ledger_close(l, w_done_cb, &clw);
    if (rc == 0) {
        TEST_REQUIRE(test_run_until(t.loop, &clw.done, WAIT_S));
        rc = clw.rc;
    }
    CU_ASSERT_EQUAL(rc, QE_FENCED);

    client_free(&w2);
    client_free(&w1);
    renv_teardown(&t);
}

static void test_recovery_local_bookies(void)
{
    recovery_scenario(false);
}

static void test_recovery_tcp_bookies(void)
{
    recovery_scenario(true);
}

/* A bookie handle without recovery_add: recovery of the same tail cannot bring
 * entries back to Qa copies and fails clearly (QE_UNAVAILABLE), state stays
 * IN_RECOVERY. The local handle is wrapped with the op removed. */
typedef struct strip {
    bk_client_t base;
    bk_client_t *inner;
} strip_t;

static bk_client_ops_t strip_ops;

static int strip_add(bk_client_t *c, int64_t l, int64_t e, int64_t lac, qbuf_t *d, bk_add_cb cb,
                     void *arg)
{
    return bk_client_add(((strip_t *)c)->inner, l, e, lac, d, cb, arg);
}
static int strip_read(bk_client_t *c, int64_t l, int64_t e, bk_read_cb cb, void *arg)
{
    return bk_client_read(((strip_t *)c)->inner, l, e, cb, arg);
}
static int strip_read_lac(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_read_lac(((strip_t *)c)->inner, l, cb, arg);
}
static int strip_fence(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_fence(((strip_t *)c)->inner, l, cb, arg);
}
static int strip_last_entry(bk_client_t *c, int64_t l, bk_lac_cb cb, void *arg)
{
    return bk_client_last_entry(((strip_t *)c)->inner, l, cb, arg);
}
static int strip_delete(bk_client_t *c, int64_t l, bk_done_cb cb, void *arg)
{
    return bk_client_delete_ledger(((strip_t *)c)->inner, l, cb, arg);
}
static void strip_free(bk_client_t *c)
{
    bk_client_free(((strip_t *)c)->inner);
    free(c);
}
static bk_client_ops_t strip_ops = {
    .add = strip_add,
    .read = strip_read,
    .read_lac = strip_read_lac,
    .fence = strip_fence,
    .last_entry = strip_last_entry,
    .delete_ledger = strip_delete,
    .free = strip_free,
};

static bk_client_t *strip_new(bk_client_t *inner)
{
    strip_t *s = calloc(1, sizeof *s);
    s->base.ops = &strip_ops;
    s->inner = inner;
    snprintf(s->base.id, sizeof s->base.id, "%s", inner->id);
    return &s->base;
}

static void test_recovery_without_recovery_add(void)
{
    renv_t t;
    renv_setup(&t, false);
    client_t w1;
    client_new(&t, &w1);
    ledger_quorum_t q = {3, 3, 2};
    wait_t cw = {0};
    TEST_REQUIRE(ledger_create(w1.lc, &q, w_open_cb, &cw) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &cw.done, WAIT_S) && cw.rc == 0);
    int64_t lid = ledger_id(cw.l);
    qbuf_t *b = entry_of(lid, 0);
    wait_t a = {0};
    TEST_REQUIRE(bk_client_add(w1.h[0], lid, 0, -1, b, w_bk_add_cb, &a) == 0);
    qbuf_unref(b);
    TEST_REQUIRE(test_run_until(t.loop, &a.done, WAIT_S) && a.rc == 0);

    ledger_client_t *lc2;
    bk_client_t *h[NBK];
    TEST_REQUIRE(ledger_client_new(t.loop, t.md, NULL, &lc2) == 0);
    for (int i = 0; i < NBK; i++) {
        h[i] = strip_new(renv_handle(&t, i));
        TEST_REQUIRE(ledger_client_add_bookie(lc2, h[i]) == 0);
    }
    wait_t ow = {0};
    TEST_REQUIRE(ledger_open(lc2, lid, LEDGER_OPEN_RECOVER, w_open_cb, &ow) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &ow.done, 3 * WAIT_S));
    CU_ASSERT_EQUAL(ow.rc, QE_UNAVAILABLE);
    ledger_client_free(lc2);
    for (int i = 0; i < NBK; i++)
        bk_client_free(h[i]);

    /* With the flag, the same ledger recovers (entry 0 on one bookie only). */
    client_t w2;
    client_new(&t, &w2);
    ow = (wait_t){0};
    TEST_REQUIRE(ledger_open(w2.lc, lid, LEDGER_OPEN_RECOVER, w_open_cb, &ow) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &ow.done, 3 * WAIT_S));
    CU_ASSERT_EQUAL(ow.rc, 0);
    if (ow.l) {
        CU_ASSERT_EQUAL(ledger_last_add_confirmed(ow.l), 0);
        ledger_release(ow.l);
    }
    for (int i = 0; i < NBK; i++)
        CU_ASSERT_TRUE(bookie_has(&t, t.bk[i], lid, 0));
    client_free(&w2);
    client_free(&w1);
    renv_teardown(&t);
}

/* -------------------------------------------------- quorum vs bookies -- */

static void test_quorum_larger_than_bookies(void)
{
    renv_t t;
    renv_setup(&t, false);
    client_t c;
    client_new(&t, &c);
    CU_ASSERT_EQUAL(ledger_client_bookies_available(c.lc), 3);
    ledger_quorum_t q;
    ledger_quorum_default(3, &q);
    CU_ASSERT_TRUE(q.ensemble == 3 && q.write_quorum == 3 && q.ack_quorum == 2);
    ledger_quorum_default(5, &q);
    CU_ASSERT_TRUE(q.ensemble == 3 && q.write_quorum == 3 && q.ack_quorum == 2);
    ledger_quorum_default(2, &q);
    CU_ASSERT_TRUE(q.ensemble == 1 && q.write_quorum == 1 && q.ack_quorum == 1);
    ledger_quorum_default(1, &q);
    CU_ASSERT_TRUE(q.ensemble == 1 && q.write_quorum == 1 && q.ack_quorum == 1);

    wait_t w = {0};
    ledger_quorum_t big = {4, 3, 2};
    CU_ASSERT_EQUAL(ledger_create(c.lc, &big, w_open_cb, &w), QE_UNAVAILABLE);
    CU_ASSERT_FALSE(w.done);
    ledger_client_mark_bookie_down(c.lc, bk_client_id(c.h[1]));
    CU_ASSERT_EQUAL(ledger_client_bookies_available(c.lc), 2);
    ledger_quorum_t three = {3, 3, 2};
    CU_ASSERT_EQUAL(ledger_create(c.lc, &three, w_open_cb, &w), QE_UNAVAILABLE);
    ledger_quorum_t two = {2, 2, 2};
    CU_ASSERT_EQUAL(ledger_create(c.lc, &two, w_open_cb, &w), 0);
    TEST_REQUIRE(test_run_until(t.loop, &w.done, WAIT_S));
    CU_ASSERT_EQUAL(w.rc, 0);
    if (w.l) {
        wait_t cl = {0};
        TEST_REQUIRE(ledger_close(w.l, w_done_cb, &cl) == 0);
        TEST_REQUIRE(test_run_until(t.loop, &cl.done, WAIT_S));
        CU_ASSERT_EQUAL(cl.rc, 0);
    }
    client_free(&c);
    renv_teardown(&t);
}

void ledger_real_register(void)
{
    CU_pSuite s = CU_add_suite("ledger_real_bookies", NULL, NULL);
    CU_add_test(s, "recovery re-replicates onto fenced local bookies", test_recovery_local_bookies);
    CU_add_test(s, "recovery re-replicates onto fenced bookies over TCP",
                test_recovery_tcp_bookies);
    CU_add_test(s, "recovery without the recovery-add op fails clearly",
                test_recovery_without_recovery_add);
    CU_add_test(s, "quorum larger than the bookies available is refused",
                test_quorum_larger_than_bookies);
}
