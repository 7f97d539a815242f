/*
 * test_managed.c — managed ledgers and cursors on the real stack: an embedded
 * metadata store, one in-process bookie, bk_client_local and the ledger client,
 * all under a temporary directory. Covers rollover, reopen after close and
 * after a crash (a SIGKILLed child), cursor persistence with holes and batch
 * acks, retention trimming, reset, non-durable cursors and cache-served tailing.
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/bookie_int.h" /* bookie_test_disk_usage */
#include "storage/ledger/bookie_client.h"
#include "storage/ledger/ledger.h"
#include "storage/managed/cursor.h"
#include "storage/managed/managed_int.h"
#include "storage/managed/managed_ledger.h"
#include "storage/metadata/metadata.h"
#include "tests/unit/managed/test_managed.h"
#include "tests/unit/support/test_support.h"

#define WAIT_S 20.0
#define GOT_MAX 512

/* --------------------------------------------------------------- stack -- */

typedef struct stack {
    struct ev_loop *loop;
    char *dir;
    md_store_t *md;
    bookie_t *bk;
    bk_client_t *bkc;
    ledger_client_t *lc;
    ml_factory_t *f;
} tstack_t;

static int stack_open(tstack_t *s, const char *dir, uint64_t cache_bytes)
{
    char path[512];
    memset(s, 0, sizeof *s);
    s->loop = ev_loop_new(0);
    s->dir = strdup(dir);
    snprintf(path, sizeof path, "%s/md.db", dir);
    if (md_store_open_embedded(s->loop, path, &s->md) != 0)
        return -1;
    bookie_config_t bc;
    bookie_config_defaults(&bc);
    snprintf(path, sizeof path, "%s/bookie", dir);
    bc.data_dir = path;
    bc.journal_file_size_bytes = 4u << 20;
    bc.write_cache_bytes = 4u << 20;
    bc.read_cache_bytes = 1u << 20;
    if (bookie_open(s->loop, &bc, &s->bk) != 0)
        return -1;
    s->bkc = bk_client_local(s->bk, "local");
    ledger_client_config_t lcc;
    ledger_client_config_defaults(&lcc);
    if (!s->bkc || ledger_client_new(s->loop, s->md, &lcc, &s->lc) != 0 ||
        ledger_client_add_bookie(s->lc, s->bkc) != 0)
        return -1;
    return ml_factory_new(s->loop, s->md, s->lc, cache_bytes, &s->f);
}

static void stack_close(tstack_t *s)
{
    ml_factory_free(s->f);
    ledger_client_free(s->lc);
    bk_client_free(s->bkc);
    bookie_close(s->bk);
    md_store_close(s->md);
    ev_loop_destroy(s->loop);
    free(s->dir);
}

static ml_config_t small_config(void)
{
    ml_config_t cfg;
    ml_config_defaults(&cfg);
    cfg.max_entries_per_ledger = 10;
    cfg.retention_time_s = -1;
    cfg.retention_size_bytes = -1;
    cfg.cursor_persist_interval_ms = 20;
    return cfg;
}

/* ------------------------------------------------------ sync wrappers -- */

typedef struct waiter {
    volatile bool done;
    int rc;
    managed_ledger_t *ml;
    ml_cursor_t *c;
} waiter_t;

static void on_open(int rc, managed_ledger_t *ml, void *arg)
{
    waiter_t *w = arg;
    w->rc = rc;
    w->ml = ml;
    w->done = true;
}

static void on_done(int rc, void *arg)
{
    waiter_t *w = arg;
    w->rc = rc;
    w->done = true;
}

static void on_cursor(int rc, ml_cursor_t *c, void *arg)
{
    waiter_t *w = arg;
    w->rc = rc;
    w->c = c;
    w->done = true;
}

static managed_ledger_t *open_ml(tstack_t *s, const char *name, const ml_config_t *cfg)
{
    waiter_t w = {0};
    if (ml_open(s->f, name, cfg, on_open, &w) != 0 || !test_run_until(s->loop, &w.done, WAIT_S))
        return NULL;
    return w.rc == 0 ? w.ml : NULL;
}

static int close_ml(tstack_t *s, managed_ledger_t *ml)
{
    waiter_t w = {0};
    int rc = ml_close(ml, on_done, &w);
    if (rc != 0)
        return rc;
    return test_run_until(s->loop, &w.done, WAIT_S) ? w.rc : QE_TIMEOUT;
}

static ml_cursor_t *open_cursor(tstack_t *s, managed_ledger_t *ml, const char *name,
                                ml_pos_t initial, bool durable)
{
    waiter_t w = {0};
    if (ml_cursor_open(ml, name, initial, durable, on_cursor, &w) != 0 ||
        !test_run_until(s->loop, &w.done, WAIT_S))
        return NULL;
    return w.c;
}

typedef int (*done_call_fn)(void *obj, ml_done_cb cb, void *arg);

static int run_done(tstack_t *s, int call_rc, waiter_t *w)
{
    if (call_rc != 0)
        return call_rc;
    return test_run_until(s->loop, &w->done, WAIT_S) ? w->rc : QE_TIMEOUT;
}

static int close_cursor(tstack_t *s, ml_cursor_t *c)
{
    waiter_t w = {0};
    return run_done(s, ml_cursor_close(c, on_done, &w), &w);
}

static int trim_ml(tstack_t *s, managed_ledger_t *ml)
{
    waiter_t w = {0};
    return run_done(s, ml_trim(ml, on_done, &w), &w);
}

/* Adds: all issued at once; callbacks must arrive in order. */
typedef struct adds {
    int issued, acked, failed;
    bool order_ok;
    volatile bool done;
    ml_pos_t pos[GOT_MAX];
} adds_t;

typedef struct add_ctx {
    adds_t *a;
    int idx;
} add_ctx_t;

static add_ctx_t add_ctxs[GOT_MAX];

static void on_add(int rc, ml_pos_t pos, void *arg)
{
    add_ctx_t *ctx = arg;
    adds_t *a = ctx->a;
    if (ctx->idx != a->acked + a->failed)
        a->order_ok = false;
    if (rc == 0 && a->acked < GOT_MAX)
        a->pos[a->acked] = pos;
    if (rc == 0)
        a->acked++;
    else
        a->failed++;
    if (a->acked + a->failed == a->issued)
        a->done = true;
}

static qbuf_t *payload(const char *prefix, int i, size_t size)
{
    char text[64];
    int n = snprintf(text, sizeof text, "%s-%d", prefix, i);
    qbuf_t *b = qbuf_new(size > (size_t)n ? size : (size_t)n);
    memset(b->data, '.', b->cap);
    memcpy(b->data, text, (size_t)n);
    b->len = b->cap;
    return b;
}

/* Appends n entries "<prefix>-<first+i>"; returns how many were acknowledged. */
static int add_entries(tstack_t *s, managed_ledger_t *ml, const char *prefix, int first, int n,
                       size_t size, adds_t *a)
{
    memset(a, 0, sizeof *a);
    a->order_ok = true;
    for (int i = 0; i < n; i++) {
        add_ctxs[i] = (add_ctx_t){a, i};
        qbuf_t *b = payload(prefix, first + i, size);
        if (ml_add(ml, b, on_add, &add_ctxs[i]) == 0)
            a->issued++;
        qbuf_unref(b);
    }
    test_run_until(s->loop, &a->done, WAIT_S);
    return a->acked;
}

/* Reads: collected positions and payload prefixes. */
typedef struct got {
    volatile bool done;
    int rc;
    size_t n;
    ml_pos_t pos[GOT_MAX];
    char text[GOT_MAX][24];
} got_t;

static void on_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    got_t *g = arg;
    g->rc = rc;
    for (size_t i = 0; i < n && g->n < GOT_MAX; i++, g->n++) {
        g->pos[g->n] = entries[i].pos;
        size_t len = entries[i].data->len < 23 ? entries[i].data->len : 23;
        memcpy(g->text[g->n], entries[i].data->data, len);
        g->text[g->n][len] = '\0';
        char *dot = strchr(g->text[g->n], '.');
        if (dot)
            *dot = '\0';
    }
    g->done = true;
}

/* Reads everything from `from` in chunks of `chunk` into g. */
static int read_all(tstack_t *s, managed_ledger_t *ml, ml_pos_t from, size_t chunk, got_t *g)
{
    memset(g, 0, sizeof *g);
    for (int rounds = 0; rounds < GOT_MAX; rounds++) {
        size_t before = g->n;
        g->done = false;
        int rc = ml_read(ml, from, chunk, 0, on_read, g);
        if (rc != 0)
            return rc;
        if (!test_run_until(s->loop, &g->done, WAIT_S))
            return QE_TIMEOUT;
        if (g->rc != 0)
            return g->rc;
        if (g->n == before)
            return 0;
        from = ml_next_position(ml, g->pos[g->n - 1]);
    }
    return QE_TOO_LARGE;
}

static int cursor_read(tstack_t *s, ml_cursor_t *c, size_t max, got_t *g)
{
    memset(g, 0, sizeof *g);
    int rc = ml_cursor_read(c, max, 0, on_read, g);
    if (rc != 0)
        return rc;
    return test_run_until(s->loop, &g->done, WAIT_S) ? g->rc : QE_TIMEOUT;
}

static bool text_is(const got_t *g, size_t i, const char *prefix, int idx)
{
    char want[32];
    snprintf(want, sizeof want, "%s-%d", prefix, idx);
    return i < g->n && strcmp(g->text[i], want) == 0;
}

static bool positions_increasing(const ml_pos_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ml_pos_cmp(p[i - 1], p[i]) >= 0)
            return false;
    return true;
}

static void md_got(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)value;
    (void)len;
    (void)stat;
    on_done(rc, arg);
}

static int md_exists(tstack_t *s, const char *path)
{
    waiter_t w = {0};
    return run_done(s, md_get(s->md, path, md_got, &w), &w);
}

static void on_ledger_open(int rc, ledger_t *l, void *arg)
{
    if (rc == 0)
        ledger_release(l);
    on_done(rc, arg);
}

static int ledger_open_rc(tstack_t *s, int64_t id)
{
    waiter_t w = {0};
    return run_done(s, ledger_open(s->lc, id, LEDGER_OPEN_NO_RECOVERY, on_ledger_open, &w), &w);
}

#define P(l, e) ((ml_pos_t){(l), (e)})

/* Runs the loop (bounded) until ml has n ledgers. */
static bool wait_ledgers(tstack_t *s, managed_ledger_t *ml, size_t n)
{
    for (int i = 0; i < 200; i++) {
        ml_ledger_info_t infos[16];
        if (ml_get_ledgers(ml, infos, 16) == n)
            return true;
        test_run_for(s->loop, 0.025);
    }
    return false;
}

/* ---------------------------------------------------------------- tests -- */

static void test_append_read_across_rollovers(void)
{
    char *dir = test_tmpdir("ml-append");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "public/default/persistent/t1", &cfg);
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_EQUAL(ml_last_confirmed(ml).ledger_id, -1);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "e", 0, 35, 0, &a), 35);
    CU_ASSERT_TRUE(a.order_ok);
    CU_ASSERT_TRUE(positions_increasing(a.pos, 35));
    ml_ledger_info_t infos[8];
    size_t nl = ml_get_ledgers(ml, infos, 8);
    CU_ASSERT_EQUAL(nl, 4);
    for (size_t i = 0; i + 1 < nl && i < 8; i++) {
        CU_ASSERT_EQUAL(infos[i].entries, 10);
        CU_ASSERT_TRUE(infos[i].closed_ms > 0);
        CU_ASSERT_TRUE(infos[i].ledger_id < infos[i + 1].ledger_id);
    }
    CU_ASSERT_EQUAL(infos[3].entries, 5);
    /* Next position crosses ledger boundaries; counts span them. */
    ml_pos_t p = ml_next_position(ml, a.pos[9]);
    CU_ASSERT_EQUAL(ml_pos_cmp(p, a.pos[10]), 0);
    CU_ASSERT_EQUAL(p.entry_id, 0);
    CU_ASSERT_EQUAL(ml_count_entries(ml, ML_POS_EARLIEST, a.pos[34]), 35);
    CU_ASSERT_EQUAL(ml_count_entries(ml, a.pos[5], a.pos[25]), 20);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_first_position(ml), a.pos[0]), 0);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_last_confirmed(ml), a.pos[34]), 0);
    /* Read back in chunks of 7 (crossing ledgers within a read). */
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 7, &g), 0);
    CU_ASSERT_EQUAL(g.n, 35);
    for (int i = 0; i < 35; i++) {
        CU_ASSERT_TRUE(text_is(&g, (size_t)i, "e", i));
        CU_ASSERT_EQUAL(ml_pos_cmp(g.pos[i], a.pos[i]), 0);
    }
    /* Past the end: n == 0. */
    got_t end = {0};
    CU_ASSERT_EQUAL(ml_read(ml, ml_next_position(ml, a.pos[34]), 5, 0, on_read, &end), 0);
    CU_ASSERT_TRUE(test_run_until(s.loop, &end.done, WAIT_S));
    CU_ASSERT_EQUAL(end.rc, 0);
    CU_ASSERT_EQUAL(end.n, 0);
    ml_stats_t st;
    ml_get_stats(ml, &st);
    CU_ASSERT_EQUAL(st.entries_added, 35);
    CU_ASSERT_EQUAL(st.entries, 35);
    CU_ASSERT_EQUAL(st.current_ledger_entries, 5);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* A ledger whose close failed (its metadata write refused: a full disk) is
 * read through a handle opened without recovery, whose LAC the bookie knows
 * only from what the adds carried (each the LAC before it: entries written in
 * one burst carry an old one). The log reads it up to its last acknowledged
 * entry all the same, and the next ledger after it. */
static void test_read_ledger_whose_close_failed(void)
{
    char *dir = test_tmpdir("ml-closefail");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 0) == 0); /* no entry cache: reads go to ledgers */
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "public/default/persistent/cf", &cfg);
    TEST_REQUIRE(ml != NULL);
    md_store_test_fail_puts(s.md, "/ledgers/", 1, -ENOSPC); /* the first ledger's close */
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "e", 0, 10, 0, &a), 10); /* one burst, one ledger */
    CU_ASSERT_EQUAL(add_entries(&s, ml, "e", 10, 5, 0, &a), 5);  /* the next ledger */
    ml_ledger_info_t infos[4];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 2);
    CU_ASSERT_EQUAL(infos[0].entries, 10);
    CU_ASSERT_EQUAL(infos[0].closed_ms, 0); /* its close failed */
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 4, &g), 0);
    CU_ASSERT_EQUAL(g.n, 15);
    for (int i = 0; i < 15 && (size_t)i < g.n; i++)
        CU_ASSERT_TRUE(text_is(&g, (size_t)i, "e", i));
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    ml = open_ml(&s, "public/default/persistent/cf", &cfg); /* recovers it */
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 4, &g), 0);
    CU_ASSERT_EQUAL(g.n, 15);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* The bookie's disk full: adds fail (every time, while it lasts) and no
 * ledger is created for them (the one bookie is not writable; a creation is
 * tried at most once per ML_CREATE_RETRY_S); the log, closed and opened
 * again meanwhile, opens for reads; once the disk is below the low mark, adds
 * go to a new ledger, and the log holds exactly the acknowledged entries. */
static void test_adds_fail_while_disk_full(void)
{
    char *dir = test_tmpdir("ml-diskfull");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "public/default/persistent/full", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "e", 0, 5, 0, &a), 5);
    ml_ledger_info_t infos[8];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 1);

    bookie_test_disk_usage(s.bk, 0.99);
    ml_stats_t st;
    for (int round = 0; round < 4; round++) {
        if (round == 3) /* past the retry delay: one more attempt */
            test_run_for(s.loop, ML_CREATE_RETRY_S + 0.1);
        CU_ASSERT_EQUAL(add_entries(&s, ml, "x", 0, 3, 0, &a), 0);
        CU_ASSERT_TRUE(a.done);
        CU_ASSERT_EQUAL(a.failed, a.issued);
        ml_get_stats(ml, &st);
        /* one creation tried for the first round's failure; the next rounds,
         * within the retry delay, fail without one */
        CU_ASSERT_EQUAL(st.ledger_create_failures, round < 3 ? 1 : 2);
    }
    size_t nl = ml_get_ledgers(ml, infos, 8);
    CU_ASSERT_EQUAL(nl, 1); /* the full one closed, none created */
    CU_ASSERT_EQUAL(infos[0].entries, 5);
    CU_ASSERT_FALSE(ml_can_write(ml));

    /* Closed and opened again while full: open for reads, no ledger. */
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    ml = open_ml(&s, "public/default/persistent/full", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_get_stats(ml, &st);
    CU_ASSERT_EQUAL(st.ledger_create_failures, 1);
    CU_ASSERT_EQUAL(st.ledgers_count, 1);
    CU_ASSERT_FALSE(ml_can_write(ml));
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 4, &g), 0);
    CU_ASSERT_EQUAL(g.n, 5);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "x", 0, 2, 0, &a), 0);
    CU_ASSERT_EQUAL(a.failed, 2);

    bookie_test_disk_usage(s.bk, 0.5); /* writable: no wait for the retry delay */
    CU_ASSERT_TRUE(ml_can_write(ml));
    CU_ASSERT_EQUAL(add_entries(&s, ml, "f", 0, 5, 0, &a), 5);
    CU_ASSERT_TRUE(a.order_ok);
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 2);
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 4, &g), 0);
    CU_ASSERT_EQUAL(g.n, 10);
    for (int i = 0; i < 10 && (size_t)i < g.n; i++)
        CU_ASSERT_TRUE(text_is(&g, (size_t)i, i < 5 ? "e" : "f", i % 5));
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

#define MANY_MLS 50

/* Many managed ledgers: found by name (the factory's map), served by one
 * factory trim timer that runs while any is open, and a tick posts a trim
 * only to a log with a ledger it could delete (invoked directly: no waiting). */
static void test_many_share_one_trim_timer(void)
{
    char *dir = test_tmpdir("ml-many");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *mls[MANY_MLS];
    for (int i = 0; i < MANY_MLS; i++) {
        char name[64];
        snprintf(name, sizeof name, "t/many-%d", i);
        mls[i] = open_ml(&s, name, &cfg);
        TEST_REQUIRE(mls[i] != NULL);
    }
    CU_ASSERT_EQUAL(s.f->trim_ticking, MANY_MLS);
    CU_ASSERT_TRUE(ev_is_active(&s.f->trim_timer));
    managed_ledger_t *again = open_ml(&s, "t/many-7", &cfg);
    CU_ASSERT_PTR_EQUAL(again, mls[7]);
    CU_ASSERT_EQUAL(close_ml(&s, again), 0);
    adds_t a; /* 25 entries, 10 per ledger: mls[3] holds closed ledgers */
    CU_ASSERT_EQUAL(add_entries(&s, mls[3], "m", 0, 25, 0, &a), 25);
    ev_invoke(s.loop, &s.f->trim_timer, EV_TIMER);
    for (int i = 0; i < MANY_MLS; i++)
        CU_ASSERT_EQUAL(mls[i]->trim_posted, i == 3);
    for (int i = 0; i < MANY_MLS; i++) {
        CU_ASSERT_EQUAL(close_ml(&s, mls[i]), 0);
        CU_ASSERT_EQUAL(s.f->trim_ticking, (size_t)(MANY_MLS - 1 - i));
    }
    CU_ASSERT_FALSE(ev_is_active(&s.f->trim_timer));
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_reopen_after_close(void)
{
    char *dir = test_tmpdir("ml-reopen");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/reopen", &cfg);
    TEST_REQUIRE(ml != NULL);
    /* A second open while open: same handle, one more reference. */
    managed_ledger_t *ml2 = open_ml(&s, "t/reopen", &cfg);
    CU_ASSERT_PTR_EQUAL(ml, ml2);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "r", 0, 25, 0, &a), 25);
    CU_ASSERT_EQUAL(close_ml(&s, ml2), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    /* New process state on the same directory. */
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml = open_ml(&s, "t/reopen", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_ledger_info_t infos[8];
    size_t nl = ml_get_ledgers(ml, infos, 8);
    CU_ASSERT_EQUAL(nl, 4); /* 10, 10, 5 (closed cleanly) and a new current one */
    CU_ASSERT_EQUAL(infos[2].entries, 5);
    CU_ASSERT_TRUE(infos[2].closed_ms > 0);
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 100, &g), 0);
    CU_ASSERT_EQUAL(g.n, 25);
    for (int i = 0; i < 25; i++)
        CU_ASSERT_TRUE(text_is(&g, (size_t)i, "r", i));
    adds_t b;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "r", 25, 3, 0, &b), 3);
    CU_ASSERT_TRUE(ml_pos_cmp(b.pos[0], a.pos[24]) > 0);
    CU_ASSERT_TRUE(b.pos[0].ledger_id > a.pos[24].ledger_id);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    /* Delete removes metadata and ledgers; a new open starts empty. */
    waiter_t w = {0};
    CU_ASSERT_EQUAL(run_done(&s, ml_delete(s.f, "t/reopen", on_done, &w), &w), 0);
    CU_ASSERT_EQUAL(md_exists(&s, "/managed-ledgers/t%2Freopen"), QE_NOT_FOUND);
    CU_ASSERT_NOT_EQUAL(ledger_open_rc(&s, a.pos[0].ledger_id), 0);
    ml = open_ml(&s, "t/reopen", &cfg);
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_EQUAL(ml_last_confirmed(ml).ledger_id, -1);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* The crashing child: appends "c-<i>" with 4 adds in flight, reporting each
 * acknowledged (index, ledger, entry) on the pipe, until killed. */
typedef struct crash_rec {
    int64_t idx, ledger_id, entry_id;
} crash_rec_t;

typedef struct crash_child {
    managed_ledger_t *ml;
    int fd, next, failed;
} crash_child_t;

static void crash_add_one(crash_child_t *cc);

static void crash_on_add(int rc, ml_pos_t pos, void *arg)
{
    crash_child_t *cc = arg;
    static int64_t acked = 0;
    if (rc != 0) {
        cc->failed++;
        return;
    }
    crash_rec_t r = {acked++, pos.ledger_id, pos.entry_id};
    if (write(cc->fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(3);
    crash_add_one(cc);
}

static void crash_add_one(crash_child_t *cc)
{
    qbuf_t *b = payload("c", cc->next++, 0);
    if (ml_add(cc->ml, b, crash_on_add, cc) != 0)
        cc->failed++;
    qbuf_unref(b);
}

static void crash_child_run(const char *dir, int fd)
{
    tstack_t s;
    if (stack_open(&s, dir, 1u << 20) != 0)
        _exit(2);
    ml_config_t cfg = small_config();
    crash_child_t cc = {.ml = open_ml(&s, "t/crash", &cfg), .fd = fd};
    if (!cc.ml)
        _exit(2);
    for (int i = 0; i < 4; i++)
        crash_add_one(&cc);
    test_run_for(s.loop, 30.0); /* killed long before */
    _exit(cc.failed ? 4 : 0);
}

static void test_reopen_after_crash(void)
{
    char *dir = test_tmpdir("ml-crash");
    int fds[2];
    TEST_REQUIRE(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    TEST_REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child_run(dir, fds[1]);
    }
    close(fds[1]);
    static crash_rec_t recs[4096];
    size_t nrec = 0;
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    /* Wait (bounded) for 35 acknowledgements, then kill with adds in flight. */
    while (nrec < 35 && poll(&pfd, 1, 20000) > 0) {
        ssize_t r = read(fds[0], &recs[nrec], sizeof recs[0]);
        if (r != (ssize_t)sizeof recs[0])
            break;
        nrec++;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (nrec < 4096 && read(fds[0], &recs[nrec], sizeof recs[0]) == (ssize_t)sizeof recs[0])
        nrec++;
    close(fds[0]);
    CU_ASSERT_TRUE(WIFSIGNALED(status));
    TEST_REQUIRE(nrec >= 35);

    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/crash", &cfg);
    TEST_REQUIRE(ml != NULL);
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 64, &g), 0);
    /* Every acknowledged entry is there, at its position, in order; what
     * follows (durable but unacknowledged) continues the sequence. */
    CU_ASSERT_TRUE(g.n >= nrec);
    CU_ASSERT_TRUE(positions_increasing(g.pos, g.n));
    for (size_t i = 0; i < g.n; i++)
        CU_ASSERT_TRUE(text_is(&g, i, "c", (int)i));
    for (size_t i = 0; i < nrec && i < g.n; i++) {
        CU_ASSERT_EQUAL(recs[i].idx, (int64_t)i);
        CU_ASSERT_EQUAL(ml_pos_cmp(g.pos[i], P(recs[i].ledger_id, recs[i].entry_id)), 0);
    }
    /* Appends continue after the recovered entries. */
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "c", (int)g.n, 2, 0, &a), 2);
    CU_ASSERT_TRUE(ml_pos_cmp(a.pos[0], g.pos[g.n - 1]) > 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_cursor_persistence(void)
{
    char *dir = test_tmpdir("ml-cursor");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/cursor", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    TEST_REQUIRE(add_entries(&s, ml, "m", 0, 30, 0, &a) == 30);
    ml_cursor_t *c = open_cursor(&s, ml, "sub/1", ML_POS_EARLIEST, true);
    TEST_REQUIRE(c != NULL);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 30);
    got_t g;
    CU_ASSERT_EQUAL(cursor_read(&s, c, 100, &g), 0);
    CU_ASSERT_EQUAL(g.n, 30);
    CU_ASSERT_FALSE(ml_cursor_has_more(c));
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[i], NULL, 0), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[7], NULL, 0), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[8], NULL, 0), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[15], NULL, 0), 0);
    uint64_t set[2] = {0xf0f0ull, 0x1ull};
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[20], set, 2), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, ml_next_position(ml, a.pos[29]), NULL, 0), QE_INVALID);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, P(a.pos[0].ledger_id, 10), NULL, 0), QE_INVALID);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_cursor_mark_delete_pos(c), a.pos[4]), 0);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 22);
    char ranges[256];
    CU_ASSERT_EQUAL(ml_cursor_ack_ranges(c, ranges, sizeof ranges), 2);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);

    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml = open_ml(&s, "t/cursor", &cfg);
    TEST_REQUIRE(ml != NULL);
    c = open_cursor(&s, ml, "sub/1", ML_POS_LATEST, true); /* initial ignored */
    TEST_REQUIRE(c != NULL);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_cursor_mark_delete_pos(c), a.pos[4]), 0);
    CU_ASSERT_TRUE(ml_cursor_is_acked(c, a.pos[7]));
    CU_ASSERT_TRUE(ml_cursor_is_acked(c, a.pos[8]));
    CU_ASSERT_TRUE(ml_cursor_is_acked(c, a.pos[15]));
    CU_ASSERT_FALSE(ml_cursor_is_acked(c, a.pos[5]));
    CU_ASSERT_FALSE(ml_cursor_is_acked(c, a.pos[20]));
    size_t words = 0;
    const uint64_t *bits = ml_cursor_ack_set(c, a.pos[20], &words);
    TEST_REQUIRE(bits != NULL);
    CU_ASSERT_EQUAL(words, 2);
    CU_ASSERT_EQUAL(bits[0], 0xf0f0ull);
    CU_ASSERT_EQUAL(bits[1], 0x1ull);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 22);
    /* Reads resume after M and skip acknowledged entries. */
    CU_ASSERT_EQUAL(cursor_read(&s, c, 4, &g), 0);
    TEST_REQUIRE(g.n >= 2);
    CU_ASSERT_TRUE(text_is(&g, 0, "m", 5));
    CU_ASSERT_TRUE(text_is(&g, 1, "m", 6));
    CU_ASSERT_EQUAL(cursor_read(&s, c, 4, &g), 0);
    TEST_REQUIRE(g.n >= 1);
    CU_ASSERT_TRUE(text_is(&g, 0, "m", 9));
    /* Completing the batch completes the entry; filling 5,6 moves M to 9. */
    uint64_t rest[2] = {0, 0};
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[20], rest, 2), 0);
    CU_ASSERT_TRUE(ml_cursor_is_acked(c, a.pos[20]));
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[5], NULL, 0), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack(c, a.pos[6], NULL, 0), 0);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_cursor_mark_delete_pos(c), a.pos[8]), 0);
    waiter_t w = {0};
    CU_ASSERT_EQUAL(run_done(&s, ml_cursor_flush(c, on_done, &w), &w), 0);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    /* Deleting the cursor removes its metadata. */
    CU_ASSERT_EQUAL(md_exists(&s, "/managed-ledgers/t%2Fcursor/cursors/sub%2F1"), 0);
    w = (waiter_t){0};
    CU_ASSERT_EQUAL(run_done(&s, ml_cursor_delete(ml, "sub/1", on_done, &w), &w), 0);
    CU_ASSERT_EQUAL(md_exists(&s, "/managed-ledgers/t%2Fcursor/cursors/sub%2F1"), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_retention_trimming(void)
{
    char *dir = test_tmpdir("ml-trim");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.retention_time_s = 0;
    cfg.retention_size_bytes = 0;
    managed_ledger_t *ml = open_ml(&s, "t/trim", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_cursor_t *fast = open_cursor(&s, ml, "fast", ML_POS_EARLIEST, true);
    ml_cursor_t *slow = open_cursor(&s, ml, "slow", ML_POS_EARLIEST, true);
    TEST_REQUIRE(fast && slow);
    adds_t a;
    TEST_REQUIRE(add_entries(&s, ml, "t", 0, 35, 100, &a) == 35);
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(fast, a.pos[34]), 0);
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(slow, a.pos[14]), 0);
    /* Mark-delete crossing a ledger boundary starts a trim by itself. */
    CU_ASSERT_TRUE(wait_ledgers(&s, ml, 3));
    CU_ASSERT_EQUAL(trim_ml(&s, ml), 0);
    /* The slow cursor (in the second ledger) holds the second one back. */
    ml_ledger_info_t infos[8];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 3);
    CU_ASSERT_EQUAL(infos[0].ledger_id, a.pos[10].ledger_id);
    CU_ASSERT_EQUAL(ml_pos_cmp(ml_first_position(ml), a.pos[10]), 0);
    CU_ASSERT_NOT_EQUAL(ledger_open_rc(&s, a.pos[0].ledger_id), 0);
    CU_ASSERT_EQUAL(ledger_open_rc(&s, a.pos[10].ledger_id), 0);
    /* Catching up frees everything but the current ledger. */
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(slow, a.pos[34]), 0);
    CU_ASSERT_EQUAL(trim_ml(&s, ml), 0);
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 1);
    CU_ASSERT_EQUAL(infos[0].ledger_id, a.pos[34].ledger_id);
    CU_ASSERT_NOT_EQUAL(ledger_open_rc(&s, a.pos[20].ledger_id), 0);
    CU_ASSERT_EQUAL(ml_cursor_backlog(slow), 0);
    CU_ASSERT_EQUAL(close_cursor(&s, fast), 0);
    CU_ASSERT_EQUAL(close_cursor(&s, slow), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);

    /* Retention by size keeps the newest consumed ledgers within the bound:
     * 3 full ledgers of 1000 bytes + 500 in the current one, bound 1600. */
    cfg.retention_time_s = -1;
    cfg.retention_size_bytes = 1600;
    ml = open_ml(&s, "t/retain", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_cursor_t *c = open_cursor(&s, ml, "all", ML_POS_EARLIEST, true);
    TEST_REQUIRE(c != NULL);
    TEST_REQUIRE(add_entries(&s, ml, "k", 0, 35, 100, &a) == 35);
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(c, a.pos[34]), 0);
    CU_ASSERT_EQUAL(trim_ml(&s, ml), 0);
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 2);
    CU_ASSERT_EQUAL(infos[0].ledger_id, a.pos[20].ledger_id);
    /* Unbounded retention keeps every consumed ledger. */
    cfg.retention_size_bytes = -1;
    CU_ASSERT_EQUAL(ml_update_config(ml, &cfg), 0);
    TEST_REQUIRE(add_entries(&s, ml, "k", 35, 10, 100, &a) == 10);
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(c, a.pos[9]), 0);
    CU_ASSERT_EQUAL(trim_ml(&s, ml), 0);
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 3);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_cursor_reset_and_non_durable(void)
{
    char *dir = test_tmpdir("ml-reset");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config(); /* unbounded retention until the trim below */
    managed_ledger_t *ml = open_ml(&s, "t/reset", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    TEST_REQUIRE(add_entries(&s, ml, "x", 0, 25, 0, &a) == 25);
    ml_cursor_t *c = open_cursor(&s, ml, "sub", ML_POS_LATEST, true);
    ml_cursor_t *reader = open_cursor(&s, ml, "reader-1", ML_POS_EARLIEST, false);
    TEST_REQUIRE(c && reader);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 0);
    CU_ASSERT_FALSE(ml_cursor_is_durable(reader));
    CU_ASSERT_EQUAL(ml_cursor_backlog(reader), 25);
    /* Reset (seek) to entry 12: it is read next; everything before is acked. */
    waiter_t w = {0};
    CU_ASSERT_EQUAL(run_done(&s, ml_cursor_reset(c, a.pos[12], on_done, &w), &w), 0);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 13);
    got_t g;
    CU_ASSERT_EQUAL(cursor_read(&s, c, 3, &g), 0);
    CU_ASSERT_EQUAL(g.n, 3);
    CU_ASSERT_TRUE(text_is(&g, 0, "x", 12));
    CU_ASSERT_TRUE(text_is(&g, 2, "x", 14));
    /* Redelivery: rewind to the first unacknowledged. */
    ml_cursor_rewind(c);
    CU_ASSERT_EQUAL(cursor_read(&s, c, 1, &g), 0);
    CU_ASSERT_TRUE(text_is(&g, 0, "x", 12));
    w = (waiter_t){0};
    CU_ASSERT_EQUAL(run_done(&s, ml_cursor_reset(c, ML_POS_EARLIEST, on_done, &w), &w), 0);
    CU_ASSERT_EQUAL(ml_cursor_backlog(c), 25);
    CU_ASSERT_EQUAL(run_done(&s, ml_cursor_reset(c, P(a.pos[24].ledger_id, 99), on_done, &w), &w),
                    QE_INVALID);
    /* The reader is never persisted and does not hold back trimming. */
    CU_ASSERT_EQUAL(cursor_read(&s, reader, 2, &g), 0);
    CU_ASSERT_TRUE(text_is(&g, 0, "x", 0));
    CU_ASSERT_EQUAL(ml_cursor_ack_cumulative(c, a.pos[24]), 0);
    cfg.retention_time_s = 0;
    cfg.retention_size_bytes = 0;
    CU_ASSERT_EQUAL(ml_update_config(ml, &cfg), 0);
    CU_ASSERT_EQUAL(trim_ml(&s, ml), 0);
    CU_ASSERT_EQUAL(md_exists(&s, "/managed-ledgers/t%2Freset/cursors/reader-1"), QE_NOT_FOUND);
    ml_ledger_info_t infos[8];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 8), 1);
    /* The reader continues at the first entry still retained. */
    CU_ASSERT_EQUAL(cursor_read(&s, reader, 2, &g), 0);
    CU_ASSERT_TRUE(text_is(&g, 0, "x", 20));
    CU_ASSERT_EQUAL(close_cursor(&s, reader), 0);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* Tailing: a cursor at the end reads each entry when the listener fires. */
typedef struct tail {
    tstack_t *s;
    ml_cursor_t *c;
    int added, read;
    bool reading, order_ok;
    got_t g;
} tail_t;

static void tail_on_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    tail_t *t = arg;
    t->reading = false;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char want[16];
        int len = snprintf(want, sizeof want, "w-%d", t->read++);
        if (entries[i].data->len != (uint32_t)len || memcmp(entries[i].data->data, want, len))
            t->order_ok = false;
        ml_cursor_ack(t->c, entries[i].pos, NULL, 0);
    }
}

static void tail_on_added(managed_ledger_t *ml, ml_pos_t pos, void *arg)
{
    (void)ml;
    (void)pos;
    tail_t *t = arg;
    t->added++;
    if (!t->reading && ml_cursor_read(t->c, 10, 0, tail_on_read, t) == 0)
        t->reading = true;
}

static void test_tailing_reads_from_cache(void)
{
    char *dir = test_tmpdir("ml-tail");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    /* Eviction by age off: on a loaded machine (sanitizers, a parallel CI) a
     * read could come after the 1-s default and find its entry aged out. */
    ml_factory_set_cache_age(s.f, 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/tail", &cfg);
    TEST_REQUIRE(ml != NULL);
    tail_t t = {.s = &s, .order_ok = true};
    t.c = open_cursor(&s, ml, "tail", ML_POS_LATEST, true);
    TEST_REQUIRE(t.c != NULL);
    ml_set_added_listener(ml, tail_on_added, &t);
    for (int i = 0; i < 25; i++) {
        adds_t a;
        CU_ASSERT_EQUAL(add_entries(&s, ml, "w", i, 1, 0, &a), 1);
        for (int k = 0; k < 100 && (t.reading || t.read < t.added); k++) {
            if (!t.reading && ml_cursor_read(t.c, 10, 0, tail_on_read, &t) == 0)
                t.reading = true;
            test_run_for(s.loop, 0.005);
        }
    }
    CU_ASSERT_EQUAL(t.added, 25);
    CU_ASSERT_EQUAL(t.read, 25);
    CU_ASSERT_TRUE(t.order_ok);
    CU_ASSERT_EQUAL(ml_cursor_backlog(t.c), 0);
    ml_read_stats_t rs;
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.ledger_reads, 0);
    CU_ASSERT_EQUAL(rs.cache_hits, 25);
    ml_cache_stats_t cs;
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.inserts, 25);
    CU_ASSERT_EQUAL(cs.entries, 0); /* each evicted once the only cursor read it */
    CU_ASSERT_EQUAL(cs.evictions_read, 25);
    ml_set_added_listener(ml, NULL, NULL);
    CU_ASSERT_EQUAL(close_cursor(&s, t.c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    /* After a reopen the cache is cold: reads go to the ledgers. */
    ml = open_ml(&s, "t/tail", &cfg);
    TEST_REQUIRE(ml != NULL);
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 100, &g), 0);
    CU_ASSERT_EQUAL(g.n, 25);
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.cache_hits, 0);
    CU_ASSERT_TRUE(rs.ledger_reads >= 3);
    CU_ASSERT_EQUAL(rs.ledger_entries_read, 25);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* One ml_read from the start: the entries it returned, or -1 on an error. */
static int read_once(tstack_t *s, managed_ledger_t *ml, size_t max_entries, size_t max_bytes,
                     got_t *g)
{
    memset(g, 0, sizeof *g);
    if (ml_read(ml, ML_POS_EARLIEST, max_entries, max_bytes, on_read, g) != 0 ||
        !test_run_until(s->loop, &g->done, WAIT_S) || g->rc != 0)
        return -1;
    return (int)g->n;
}

/* max_bytes bounds the entries asked of a ledger (by its average entry size),
 * not only those handed back: 1,000-byte entries and a 2,500-byte bound read 3
 * entries from the ledger (the third crosses the bound), not the 10 asked for. */
static void test_read_bytes_bound_what_is_read(void)
{
    char *dir = test_tmpdir("ml-rbytes");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 100;
    managed_ledger_t *ml = open_ml(&s, "t/rbytes", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "b", 0, 20, 1000, &a), 20); /* no cursor: not cached */
    got_t g;
    CU_ASSERT_EQUAL(read_once(&s, ml, 10, 2500, &g), 3);
    ml_read_stats_t rs;
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.ledger_entries_read, 3);
    /* A bound below one entry still reads one. */
    CU_ASSERT_EQUAL(read_once(&s, ml, 10, 10, &g), 1);
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.ledger_entries_read, 4);
    /* Without a bound, the count alone. */
    CU_ASSERT_EQUAL(read_once(&s, ml, 10, 0, &g), 10);
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.ledger_entries_read, 14);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

typedef struct ordered_read {
    got_t g;
    int *order; /* next completion number */
    int done_as;
} ordered_read_t;

static void ordered_on_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    ordered_read_t *r = arg;
    r->done_as = (*r->order)++;
    on_read(rc, entries, n, &r->g);
}

/* The factory's bound on bytes read from ledgers and not yet handed over
 * (managedLedgerMaxReadsInFlightSizeInMB): reads past it wait, in call order,
 * holding nothing; a read alone goes whatever its size; a read that already
 * holds entries is answered with them rather than wait. */
static void test_reads_in_flight_bound(void)
{
    char *dir = test_tmpdir("ml-rbound");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 5;
    managed_ledger_t *ml = open_ml(&s, "t/rbound", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "r", 0, 10, 1000, &a), 10); /* no cursor: not cached */
    TEST_REQUIRE(wait_ledgers(&s, ml, 2));
    ml_factory_set_reads_bytes_max(s.f, 3500);

    /* Three reads at once: the first reserves 2 x 1,000 bytes; the second (2
     * entries) waits; the third (1 entry), which would fit, waits behind it. */
    int order = 0;
    ordered_read_t r[3];
    size_t counts[3] = {2, 2, 1};
    for (int i = 0; i < 3; i++) {
        r[i] = (ordered_read_t){.order = &order};
        CU_ASSERT_EQUAL(ml_read(ml, ML_POS_EARLIEST, counts[i], 0, ordered_on_read, &r[i]), 0);
    }
    ml_cache_info_t info;
    ml_factory_cache_info(s.f, &info);
    CU_ASSERT_EQUAL(info.reads_bytes, 2000);
    CU_ASSERT_EQUAL(info.reads_waiting, 2);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(test_run_until(s.loop, &r[i].g.done, WAIT_S));
        CU_ASSERT_EQUAL(r[i].g.rc, 0);
        CU_ASSERT_EQUAL(r[i].g.n, counts[i]);
        CU_ASSERT_TRUE(text_is(&r[i].g, 0, "r", 0));
        CU_ASSERT_EQUAL(r[i].done_as, i);
    }
    ml_factory_cache_info(s.f, &info);
    CU_ASSERT_EQUAL(info.reads_bytes, 0);
    CU_ASSERT_EQUAL(info.reads_waiting, 0);
    CU_ASSERT_EQUAL(info.reads_waited, 2);

    /* Alone, a read larger than the bound goes (one ledger of 5 x 1,000). */
    got_t g;
    CU_ASSERT_EQUAL(read_once(&s, ml, 5, 0, &g), 5);
    /* A read across the two ledgers holds the first's 5,000 bytes when it asks
     * the second for 5,000 more: past a 6,000-byte bound, it is answered with
     * the first five; without the bound it reads all ten. */
    ml_factory_set_reads_bytes_max(s.f, 6000);
    CU_ASSERT_EQUAL(read_once(&s, ml, 10, 0, &g), 5);
    CU_ASSERT_TRUE(text_is(&g, 4, "r", 4));
    ml_factory_set_reads_bytes_max(s.f, 0);
    CU_ASSERT_EQUAL(read_once(&s, ml, 10, 0, &g), 10);
    CU_ASSERT_TRUE(text_is(&g, 9, "r", 9));
    ml_factory_cache_info(s.f, &info);
    CU_ASSERT_EQUAL(info.reads_bytes, 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* The cache keeps an entry until every open cursor has read it (or it ages
 * out), and does not take entries of a log no cursor is open on. */
static void test_cache_eviction_follows_cursors(void)
{
    char *dir = test_tmpdir("ml-evict");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/evict", &cfg);
    TEST_REQUIRE(ml != NULL);
    const ml_cache_t *cache = ml_factory_cache(s.f);
    ml_cache_stats_t cs;
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "n", 0, 3, 0, &a), 3);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.inserts, 0); /* no cursor: not cached */
    ml_cursor_t *fast = open_cursor(&s, ml, "fast", ML_POS_LATEST, true);
    ml_cursor_t *slow = open_cursor(&s, ml, "slow", ML_POS_LATEST, false);
    TEST_REQUIRE(fast != NULL && slow != NULL);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "e", 0, 6, 0, &a), 6);
    got_t g;
    CU_ASSERT_EQUAL(cursor_read(&s, fast, 100, &g), 0);
    CU_ASSERT_EQUAL(g.n, 6);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 6); /* slow has read none */
    CU_ASSERT_EQUAL(cursor_read(&s, slow, 4, &g), 0);
    CU_ASSERT_EQUAL(g.n, 4);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 2);
    CU_ASSERT_EQUAL(cs.evictions_read, 4);
    CU_ASSERT_EQUAL(cursor_read(&s, slow, 100, &g), 0);
    CU_ASSERT_EQUAL(g.n, 2);
    ml_read_stats_t rs;
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.cache_hits, 12);
    CU_ASSERT_EQUAL(rs.ledger_reads, 0);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 0);
    /* Unread entries age (here after 0.2 s) on the factory's timer, but the
     * open cursors are still to read them: each pass gives them another period
     * (PIP-430's expected reads), 5 times by default. */
    ml_factory_set_cache_age(s.f, 0.2);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "f", 0, 3, 0, &a), 3);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 3);
    for (int i = 0; i < 200 && cs.extensions < 6; i++) {
        test_run_for(s.loop, 0.01);
        ml_cache_get_stats(cache, &cs);
    }
    CU_ASSERT_EQUAL(cs.entries, 3); /* aged twice over, still there */
    CU_ASSERT_EQUAL(cs.evictions_age, 0);
    CU_ASSERT_TRUE(cs.extensions >= 6);
    ml_cache_info_t info;
    ml_factory_cache_info(s.f, &info);
    CU_ASSERT_EQUAL(info.extensions, cs.extensions);
    /* Cursors whose users have no readers now (a subscription without
     * consumers) expect nothing: the entries age out at the next pass. */
    ml_cursor_set_active(fast, false);
    ml_cursor_set_active(slow, false);
    uint64_t extended = cs.extensions;
    for (int i = 0; i < 200 && !ml_cache_empty(cache); i++)
        test_run_for(s.loop, 0.01);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 0);
    CU_ASSERT_EQUAL(cs.evictions_age, 3);
    CU_ASSERT_EQUAL(cs.extensions, extended);
    ml_cursor_set_active(fast, true);
    ml_cursor_set_active(slow, true);
    CU_ASSERT_EQUAL(cursor_read(&s, fast, 100, &g), 0); /* from the ledger now */
    CU_ASSERT_EQUAL(g.n, 3);
    CU_ASSERT_TRUE(text_is(&g, 2, "f", 2));
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_TRUE(rs.ledger_reads >= 1);
    CU_ASSERT_EQUAL(close_cursor(&s, fast), 0);
    CU_ASSERT_EQUAL(close_cursor(&s, slow), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* Without expected reads (cacheEvictionByExpectedReadCount=false), a cursor
 * more than ML_CACHE_BACKLOG_ENTRIES behind is backlogged: entries past that
 * distance are not cached for it (it reads the ledgers). */
static void test_cache_skips_backlogged_cursor(void)
{
    char *dir = test_tmpdir("ml-backlog");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 8u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 5000;
    managed_ledger_t *ml = open_ml(&s, "t/backlog", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_factory_set_cache_age(s.f, 0); /* only the backlog rule decides here */
    ml_factory_set_cache_expected_reads(s.f, false, 0);
    ml_cursor_t *c = open_cursor(&s, ml, "idle", ML_POS_LATEST, true);
    TEST_REQUIRE(c != NULL);
    adds_t a;
    for (int k = 0; k < 3; k++) /* entries 0..1199 */
        CU_ASSERT_EQUAL(add_entries(&s, ml, "b", k * 400, 400, 0, &a), 400);
    ml_cache_stats_t cs;
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.inserts, ML_CACHE_BACKLOG_ENTRIES + 1); /* 0..1000 */
    got_t g;
    CU_ASSERT_EQUAL(cursor_read(&s, c, 100, &g), 0); /* served by the cache */
    CU_ASSERT_EQUAL(g.n, 100);
    CU_ASSERT_TRUE(text_is(&g, 99, "b", 99));
    ml_read_stats_t rs;
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.cache_hits, 100);
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.entries, ML_CACHE_BACKLOG_ENTRIES + 1 - 100);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* Expected reads on with no extensions (...MaxTimes=0, as Pulsar reads it): an
 * added entry is still cached for an active cursor 1,000 entries behind or
 * more, but an aged one it has yet to read is evicted at the next pass. */
static void test_cache_expected_reads_without_extensions(void)
{
    char *dir = test_tmpdir("ml-noext");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 8u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 5000;
    managed_ledger_t *ml = open_ml(&s, "t/noext", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_factory_set_cache_age(s.f, 0);
    ml_factory_set_cache_expected_reads(s.f, true, 0);
    ml_cursor_t *c = open_cursor(&s, ml, "behind", ML_POS_LATEST, true);
    TEST_REQUIRE(c != NULL);
    adds_t a;
    for (int k = 0; k < 3; k++) /* entries 0..1199: all cached */
        CU_ASSERT_EQUAL(add_entries(&s, ml, "x", k * 400, 400, 0, &a), 400);
    const ml_cache_t *cache = ml_factory_cache(s.f);
    ml_cache_stats_t cs;
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.inserts, 1200);
    ml_factory_set_cache_age(s.f, 0.05);
    for (int i = 0; i < 200 && !ml_cache_empty(cache); i++)
        test_run_for(s.loop, 0.01);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 0);
    CU_ASSERT_EQUAL(cs.evictions_age, 1200);
    CU_ASSERT_EQUAL(cs.extensions, 0);
    got_t g;
    CU_ASSERT_EQUAL(cursor_read(&s, c, 10, &g), 0); /* from the ledger now */
    CU_ASSERT_EQUAL(g.n, 10);
    CU_ASSERT_TRUE(text_is(&g, 9, "x", 9));
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* With expected reads (the default, PIP-430), an added entry is cached while an
 * active cursor is still to read it, 1,000 entries behind or more, up to the
 * cache's size behind; not for a cursor whose user has no readers now (a
 * subscription without consumers). */
static void test_cache_for_active_cursors(void)
{
    char *dir = test_tmpdir("ml-active");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 8u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 5000;
    managed_ledger_t *ml = open_ml(&s, "t/active", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_factory_set_cache_age(s.f, 0);
    ml_cursor_t *c = open_cursor(&s, ml, "behind", ML_POS_LATEST, true);
    TEST_REQUIRE(c != NULL);
    adds_t a;
    for (int k = 0; k < 3; k++) /* entries 0..1199: all cached */
        CU_ASSERT_EQUAL(add_entries(&s, ml, "b", k * 400, 400, 0, &a), 400);
    ml_cache_stats_t cs;
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.inserts, 1200);
    ml_cursor_set_active(c, false);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "b", 1200, 10, 0, &a), 10);
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.inserts, 1200); /* nobody to read them now */
    ml_cursor_set_active(c, true);
    got_t g;
    size_t total = 0;
    for (int k = 0; k < 10 && total < 1210; k++) {
        CU_ASSERT_EQUAL(cursor_read(&s, c, 1210 - total < 400 ? 1210 - total : 400, &g), 0);
        TEST_REQUIRE(g.n > 0);
        CU_ASSERT_TRUE(text_is(&g, 0, "b", (int)total));
        total += g.n;
    }
    CU_ASSERT_EQUAL(total, 1210);
    ml_read_stats_t rs;
    ml_get_read_stats(ml, &rs);
    CU_ASSERT_EQUAL(rs.cache_hits, 1200);
    CU_ASSERT_TRUE(rs.ledger_reads >= 1); /* the 10 added while inactive */
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    CU_ASSERT_EQUAL(cs.entries, 0); /* read past: evicted */
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    /* Not for a cursor further behind than the cache holds (8 MiB here, at
     * the ledger's average entry size): of 200 entries of 64 KiB, those within
     * 8 MiB of it are cached, not the later ones. */
    ml = open_ml(&s, "t/active-big", &cfg);
    TEST_REQUIRE(ml != NULL);
    c = open_cursor(&s, ml, "behind", ML_POS_LATEST, true);
    TEST_REQUIRE(c != NULL);
    ml_cache_stats_t before = cs;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "big", 0, 200, 64u << 10, &a), 200);
    ml_cache_get_stats(ml_factory_cache(s.f), &cs);
    uint64_t cached = cs.inserts - before.inserts;
    CU_ASSERT_TRUE(cached >= 120 && cached <= 130);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* A cursor's user that keeps entries to send later (a Key_Shared replay set)
 * holds them in the cache: set from inside the read callback, the hold is in
 * place before the read's eviction; moving it on or clearing it evicts. */
typedef struct hold_read {
    ml_cursor_t *c;
    got_t g;
} hold_read_t;

static void hold_on_read(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    hold_read_t *h = arg;
    if (rc == 0 && n >= 2)
        ml_cursor_set_cache_hold(h->c, &entries[1].pos); /* entry 1 on: sent later */
    on_read(rc, entries, n, &h->g);
}

static void test_cache_hold_keeps_replays(void)
{
    char *dir = test_tmpdir("ml-hold");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml = open_ml(&s, "t/hold", &cfg);
    TEST_REQUIRE(ml != NULL);
    ml_factory_set_cache_age(s.f, 0); /* only readers decide here */
    const ml_cache_t *cache = ml_factory_cache(s.f);
    ml_cursor_t *c = open_cursor(&s, ml, "ks", ML_POS_LATEST, true);
    TEST_REQUIRE(c != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "h", 0, 5, 0, &a), 5);
    hold_read_t h = {.c = c};
    TEST_REQUIRE(ml_cursor_read(c, 100, 0, hold_on_read, &h) == 0);
    TEST_REQUIRE(test_run_until(s.loop, &h.g.done, WAIT_S));
    CU_ASSERT_EQUAL(h.g.n, 5);
    ml_cache_stats_t cs;
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 4); /* entry 0 evicted; 1..4 held */
    /* The replay read of entry 1 is served from memory. */
    ml_read_stats_t before, after;
    ml_get_read_stats(ml, &before);
    got_t g;
    memset(&g, 0, sizeof g);
    TEST_REQUIRE(ml_read(ml, h.g.pos[1], 1, 0, on_read, &g) == 0);
    TEST_REQUIRE(test_run_until(s.loop, &g.done, WAIT_S));
    CU_ASSERT_TRUE(text_is(&g, 0, "h", 1));
    ml_get_read_stats(ml, &after);
    CU_ASSERT_EQUAL(after.cache_hits, before.cache_hits + 1);
    CU_ASSERT_EQUAL(after.ledger_reads, before.ledger_reads);
    ml_cache_info_t info;
    ml_factory_cache_info(s.f, &info);
    CU_ASSERT_EQUAL(info.misses, 0);
    CU_ASSERT_TRUE(info.hits >= 6);
    CU_ASSERT_EQUAL(info.entries, 4);
    /* The hold moves on to entry 3: 1 and 2 go; cleared: the rest go. */
    ml_cursor_set_cache_hold(c, &h.g.pos[3]);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 2);
    ml_cursor_set_cache_hold(c, NULL);
    ml_cache_get_stats(cache, &cs);
    CU_ASSERT_EQUAL(cs.entries, 0);
    CU_ASSERT_EQUAL(close_cursor(&s, c), 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_pending_adds_bounded(void)
{
    char *dir = test_tmpdir("ml-bound");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 0) == 0);
    ml_config_t cfg = small_config();
    cfg.max_entries_per_ledger = 100000;
    managed_ledger_t *ml = open_ml(&s, "t/bound", &cfg);
    TEST_REQUIRE(ml != NULL);
    static adds_t a;
    memset(&a, 0, sizeof a);
    a.order_ok = true;
    static add_ctx_t ctx;
    ctx.a = &a;
    int refused = 0;
    qbuf_t *b = qbuf_copy("b", 1);
    for (int i = 0; i < ML_ADDS_PENDING_MAX + 5; i++) {
        int rc = ml_add(ml, b, on_add, &ctx);
        if (rc == QE_BUSY)
            refused++;
        else if (rc == 0)
            a.issued++;
    }
    qbuf_unref(b);
    CU_ASSERT_EQUAL(refused, 5);
    CU_ASSERT_EQUAL(a.issued, ML_ADDS_PENDING_MAX);
    ctx.idx = -1; /* order is checked elsewhere; here only completion */
    a.order_ok = true;
    CU_ASSERT_TRUE(test_run_until(s.loop, &a.done, 60.0));
    CU_ASSERT_EQUAL(a.acked, ML_ADDS_PENDING_MAX);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_concurrent_open_and_properties(void)
{
    char *dir = test_tmpdir("ml-open2");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    /* Two opens before the first completes: one open, two handles. */
    waiter_t w1 = {0}, w2 = {0};
    CU_ASSERT_EQUAL(ml_open(s.f, "t/open2", &cfg, on_open, &w1), 0);
    CU_ASSERT_EQUAL(ml_open(s.f, "t/open2", &cfg, on_open, &w2), 0);
    CU_ASSERT_TRUE(test_run_until(s.loop, &w1.done, WAIT_S));
    CU_ASSERT_TRUE(test_run_until(s.loop, &w2.done, WAIT_S));
    TEST_REQUIRE(w1.rc == 0 && w2.rc == 0);
    CU_ASSERT_PTR_EQUAL(w1.ml, w2.ml);
    ml_ledger_info_t infos[4];
    CU_ASSERT_EQUAL(ml_get_ledgers(w1.ml, infos, 4), 1);
    waiter_t w = {0};
    CU_ASSERT_EQUAL(run_done(&s, ml_set_property(w1.ml, "k", "v1", on_done, &w), &w), 0);
    CU_ASSERT_STRING_EQUAL(ml_get_property(w1.ml, "k"), "v1");
    CU_ASSERT_EQUAL(close_ml(&s, w1.ml), 0);
    CU_ASSERT_EQUAL(close_ml(&s, w2.ml), 0);
    managed_ledger_t *ml = open_ml(&s, "t/open2", &cfg);
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_PTR_NOT_NULL(ml_get_property(ml, "k"));
    if (ml_get_property(ml, "k"))
        CU_ASSERT_STRING_EQUAL(ml_get_property(ml, "k"), "v1");
    CU_ASSERT_PTR_NULL(ml_get_property(ml, "other"));
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_rollover_by_time(void)
{
    char *dir = test_tmpdir("ml-time");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    cfg.max_ledger_rollover_time_s = 1;
    managed_ledger_t *ml = open_ml(&s, "t/time", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "z", 0, 3, 0, &a), 3);
    /* An idle, non-empty ledger rolls over once its time is up. */
    CU_ASSERT_TRUE(wait_ledgers(&s, ml, 2));
    ml_ledger_info_t infos[4];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 2);
    CU_ASSERT_EQUAL(infos[0].entries, 3);
    CU_ASSERT_TRUE(infos[0].closed_ms > 0);
    CU_ASSERT_EQUAL(infos[1].entries, 0);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* managedLedgerMinLedgerRolloverTimeMinutes: a full ledger is kept until it is
 * old enough (Pulsar's currentLedgerIsFull), except at the hard entry limit. */
static void test_min_rollover_time(void)
{
    char *dir = test_tmpdir("ml-mintime");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config(); /* 10 entries per ledger */
    cfg.min_ledger_rollover_time_s = 3600;
    cfg.entries_per_ledger_limit = 30;
    managed_ledger_t *ml = open_ml(&s, "t/min-time", &cfg);
    TEST_REQUIRE(ml != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml, "m", 0, 25, 0, &a), 25);
    ml_ledger_info_t infos[4];
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 1);
    CU_ASSERT_EQUAL(infos[0].entries, 25);
    /* the limit rolls it over whatever its age */
    CU_ASSERT_EQUAL(add_entries(&s, ml, "m", 25, 10, 0, &a), 10);
    CU_ASSERT_TRUE(a.order_ok);
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 2);
    CU_ASSERT_EQUAL(infos[0].entries, 30);
    CU_ASSERT_TRUE(infos[0].closed_ms > 0);
    CU_ASSERT_EQUAL(infos[1].entries, 5);
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml, ML_POS_EARLIEST, 8, &g), 0);
    CU_ASSERT_EQUAL(g.n, 35);
    CU_ASSERT_TRUE(g.n == 35 && text_is(&g, 29, "m", 29) && text_is(&g, 30, "m", 30));
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);

    /* min 1 s: a full ledger rolls at the first add once it is 1 s old */
    cfg.min_ledger_rollover_time_s = 1;
    cfg.entries_per_ledger_limit = 0;
    ml = open_ml(&s, "t/min-time-1", &cfg);
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "n", 0, 12, 0, &a), 12);
    test_run_for(s.loop, 1.1);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "n", 12, 1, 0, &a), 1);
    CU_ASSERT_TRUE(wait_ledgers(&s, ml, 2));
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 2);
    CU_ASSERT_TRUE(infos[0].entries >= 10 && infos[0].entries <= 12);
    CU_ASSERT_EQUAL(infos[0].entries + infos[1].entries, 13);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);

    /* min above max: the max-time timer waits for the min time, then rolls an
     * idle ledger (no add comes to check it again) */
    cfg.max_ledger_rollover_time_s = 1;
    cfg.min_ledger_rollover_time_s = 2;
    ml = open_ml(&s, "t/min-time-2", &cfg);
    TEST_REQUIRE(ml != NULL);
    CU_ASSERT_EQUAL(add_entries(&s, ml, "o", 0, 3, 0, &a), 3);
    CU_ASSERT_TRUE(wait_ledgers(&s, ml, 2));
    CU_ASSERT_EQUAL(ml_get_ledgers(ml, infos, 4), 2);
    CU_ASSERT_EQUAL(infos[0].entries, 3);
    CU_ASSERT_EQUAL(close_ml(&s, ml), 0);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

static void test_fenced_by_second_owner(void)
{
    char *dir = test_tmpdir("ml-fence");
    tstack_t s;
    TEST_REQUIRE(stack_open(&s, dir, 1u << 20) == 0);
    ml_config_t cfg = small_config();
    managed_ledger_t *ml1 = open_ml(&s, "t/fence", &cfg);
    TEST_REQUIRE(ml1 != NULL);
    adds_t a;
    CU_ASSERT_EQUAL(add_entries(&s, ml1, "f", 0, 3, 0, &a), 3);
    /* A second owner (another broker: its own factory) takes the log over. */
    ml_factory_t *f2 = NULL;
    TEST_REQUIRE(ml_factory_new(s.loop, s.md, s.lc, 1u << 20, &f2) == 0);
    waiter_t w = {0};
    CU_ASSERT_EQUAL(ml_open(f2, "t/fence", &cfg, on_open, &w), 0);
    CU_ASSERT_TRUE(test_run_until(s.loop, &w.done, WAIT_S));
    TEST_REQUIRE(w.rc == 0);
    managed_ledger_t *ml2 = w.ml;
    /* The first owner can add no more. */
    adds_t b;
    CU_ASSERT_EQUAL(add_entries(&s, ml1, "f", 3, 2, 0, &b), 0);
    qbuf_t *buf = qbuf_copy("late", 4);
    CU_ASSERT_EQUAL(ml_add(ml1, buf, on_add, &add_ctxs[0]), QE_FENCED);
    qbuf_unref(buf);
    /* The second one sees every acknowledged entry and appends after them. */
    got_t g;
    CU_ASSERT_EQUAL(read_all(&s, ml2, ML_POS_EARLIEST, 10, &g), 0);
    CU_ASSERT_EQUAL(g.n, 3);
    CU_ASSERT_TRUE(text_is(&g, 2, "f", 2));
    CU_ASSERT_EQUAL(add_entries(&s, ml2, "f", 3, 2, 0, &b), 2);
    CU_ASSERT_EQUAL(close_ml(&s, ml1), 0);
    w = (waiter_t){0};
    CU_ASSERT_EQUAL(run_done(&s, ml_close(ml2, on_done, &w), &w), 0);
    ml_factory_free(f2);
    stack_close(&s);
    test_rm_rf(dir);
    free(dir);
}

/* The managed-ledger document as the encoder wrote it when it built a jansson
 * tree: the stored text must not change with the encoder. */
static char *ml_text_by_jansson(const ml_ledger_list_t *l, json_t *properties)
{
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "version", json_integer(1)); /* ML_MD_FORMAT_VERSION */
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(arr, json_pack("{s:I,s:I,s:I,s:I}", "ledger_id",
                                             (json_int_t)l->v[i].ledger_id, "entries",
                                             (json_int_t)l->v[i].entries, "size_bytes",
                                             (json_int_t)l->v[i].size_bytes, "closed_ms",
                                             (json_int_t)l->v[i].closed_ms));
    json_object_set_new(root, "ledgers", arr);
    json_object_set(root, "properties", properties);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

static void test_metadata_text_unchanged(void)
{
    json_t *props[] = {json_object(),
                       json_pack("{s:s,s:s}", "owner", "caf\xc3\xa9 \"q\"", "k/2", "v\n"), NULL};
    for (size_t n = 0; n <= 3; n++) {
        for (size_t p = 0; p < sizeof props / sizeof props[0]; p++) {
            ml_ledger_list_t l = {0};
            for (size_t i = 0; i < n; i++) {
                TEST_REQUIRE(ml_list_append(&l, (int64_t)(i * 10 + 3)) == 0);
                l.v[i].entries = i == n - 1 ? 0 : (int64_t)(i + 1) * 1000;
                l.v[i].size_bytes = (int64_t)i * 123456789;
                l.v[i].closed_ms = i == n - 1 ? 0 : 1700000000000 + (int64_t)i;
            }
            size_t len = 0;
            char *mine = ml_md_encode(&l, props[p], &len);
            char *theirs = ml_text_by_jansson(&l, props[p]);
            TEST_REQUIRE(mine && theirs);
            CU_ASSERT_EQUAL(len, strlen(mine));
            CU_ASSERT_STRING_EQUAL(mine, theirs);
            if (props[p]) { /* and it reads back */
                ml_ledger_list_t back = {0};
                json_t *bp = NULL;
                CU_ASSERT_EQUAL(ml_md_decode(mine, len, &back, &bp), 0);
                CU_ASSERT_EQUAL(back.n, n);
                CU_ASSERT_TRUE(json_equal(bp, props[p]));
                json_decref(bp);
                ml_list_free(&back);
            }
            free(mine);
            free(theirs);
            ml_list_free(&l);
        }
    }
    json_decref(props[0]);
    json_decref(props[1]);
}

void register_managed_suite(void)
{
    CU_pSuite s = CU_add_suite("managed", NULL, NULL);
    CU_add_test(s, "metadata text unchanged", test_metadata_text_unchanged);
    CU_add_test(s, "append and read across rollovers", test_append_read_across_rollovers);
    CU_add_test(s, "adds fail while the disk is full, then go on", test_adds_fail_while_disk_full);
    CU_add_test(s, "a ledger whose close failed is read up to its last acknowledged entry",
                test_read_ledger_whose_close_failed);
    CU_add_test(s, "reopen after close, delete", test_reopen_after_close);
    CU_add_test(s, "reopen after crash", test_reopen_after_crash);
    CU_add_test(s, "cursor persistence with holes and batches", test_cursor_persistence);
    CU_add_test(s, "retention trimming", test_retention_trimming);
    CU_add_test(s, "cursor reset and non-durable cursor", test_cursor_reset_and_non_durable);
    CU_add_test(s, "tailing reads served from the cache", test_tailing_reads_from_cache);
    CU_add_test(s, "read bytes bound what is read from the ledger",
                test_read_bytes_bound_what_is_read);
    CU_add_test(s, "cache eviction follows the slowest cursor and age",
                test_cache_eviction_follows_cursors);
    CU_add_test(s, "cache skips a backlogged cursor", test_cache_skips_backlogged_cursor);
    CU_add_test(s, "cache: expected reads without extensions",
                test_cache_expected_reads_without_extensions);
    CU_add_test(s, "cache for active cursors however far behind, not inactive ones",
                test_cache_for_active_cursors);
    CU_add_test(s, "cache keeps what a cursor's user holds for replay",
                test_cache_hold_keeps_replays);
    CU_add_test(s, "reads in flight bounded", test_reads_in_flight_bound);
    CU_add_test(s, "pending adds bounded", test_pending_adds_bounded);
    CU_add_test(s, "concurrent open, properties", test_concurrent_open_and_properties);
    CU_add_test(s, "rollover by time", test_rollover_by_time);
    CU_add_test(s, "min rollover time", test_min_rollover_time);
    CU_add_test(s, "fenced by a second owner", test_fenced_by_second_owner);
    CU_add_test(s, "many logs share one trim timer", test_many_share_one_trim_timer);
}
