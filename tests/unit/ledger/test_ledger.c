/*
 * Unit tests of the ledger client (storage/ledger/ledger.h) against fake bookies
 * (fake_bookie.c: in memory, with fault injection) and the embedded metadata
 * store in a temporary directory; plus one test with a real local bookie.
 *
 * Every wait is bounded (test_run_until); assertions are on content, order and
 * counts, never on elapsed time.
 */
#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "storage/bookie/bookie.h"
#include "storage/ledger/ledger.h"
#include "storage/ledger/ledger_int.h"
#include "tests/unit/ledger/fake_bookie.h"
#include "tests/unit/ledger/ledger_real.h"
#include "tests/unit/support/test_support.h"

#define WAIT_S 10.0
#define ADDS_MAX 12000
#define FAKES_MAX 6

/* -------------------------------------------------------------- fixture -- */

typedef struct env {
    struct ev_loop *loop;
    char *dir;
    md_store_t *md;
    ledger_client_t *lc;
    fake_bookie_t *fb[FAKES_MAX];
    int nfb;
} env_t;

static void env_md_open(env_t *t)
{
    char path[512];
    snprintf(path, sizeof path, "%s/md.db", t->dir);
    TEST_REQUIRE(md_store_open_embedded(t->loop, path, &t->md) == 0);
}

static ledger_client_t *env_client(env_t *t, uint32_t timeout_ms)
{
    ledger_client_config_t cfg;
    ledger_client_config_defaults(&cfg);
    cfg.add_timeout_ms = timeout_ms;
    ledger_client_t *lc = NULL;
    TEST_REQUIRE(ledger_client_new(t->loop, t->md, &cfg, &lc) == 0);
    for (int i = 0; i < t->nfb; i++)
        TEST_REQUIRE(ledger_client_add_bookie(lc, fake_bookie_client(t->fb[i])) == 0);
    return lc;
}

static void env_setup(env_t *t, int nbookies, uint32_t timeout_ms)
{
    memset(t, 0, sizeof *t);
    t->loop = ev_loop_new(0);
    t->dir = test_tmpdir("ledger");
    env_md_open(t);
    for (int i = 0; i < nbookies; i++) {
        char id[16];
        snprintf(id, sizeof id, "bk%d", i);
        t->fb[i] = fake_bookie_new(t->loop, id);
    }
    t->nfb = nbookies;
    t->lc = env_client(t, timeout_ms);
    fake_ack_log_reset();
}

static void env_teardown(env_t *t)
{
    ledger_client_free(t->lc);
    for (int i = 0; i < t->nfb; i++)
        fake_bookie_free(t->fb[i]);
    md_store_close(t->md);
    ev_loop_destroy(t->loop);
    test_rm_rf(t->dir);
    free(t->dir);
}

/* ------------------------------------------------------- sync helpers -- */

typedef struct waiter {
    volatile bool done;
    int rc;
    ledger_t *l;
} waiter_t;

static void open_cb(int rc, ledger_t *l, void *arg)
{
    waiter_t *w = arg;
    w->rc = rc;
    w->l = l;
    w->done = true;
}

static void done_cb(int rc, void *arg)
{
    waiter_t *w = arg;
    w->rc = rc;
    w->done = true;
}

static ledger_t *create_ledger(env_t *t, ledger_client_t *lc, int e, int qw, int qa)
{
    ledger_quorum_t q = {.ensemble = e, .write_quorum = qw, .ack_quorum = qa};
    waiter_t w = {0};
    TEST_REQUIRE(ledger_create(lc, &q, open_cb, &w) == 0);
    CU_ASSERT_FALSE(w.done); /* never inline */
    TEST_REQUIRE(test_run_until(t->loop, &w.done, WAIT_S));
    TEST_REQUIRE(w.rc == 0 && w.l != NULL);
    return w.l;
}

static ledger_t *open_ledger(env_t *t, ledger_client_t *lc, int64_t id, int flags, int *rc)
{
    waiter_t w = {0};
    *rc = ledger_open(lc, id, flags, open_cb, &w);
    if (*rc < 0)
        return NULL;
    TEST_REQUIRE(test_run_until(t->loop, &w.done, WAIT_S));
    *rc = w.rc;
    return w.l;
}

static int close_ledger(env_t *t, ledger_t *l)
{
    waiter_t w = {0};
    int rc = ledger_close(l, done_cb, &w);
    if (rc < 0)
        return rc;
    TEST_REQUIRE(test_run_until(t->loop, &w.done, WAIT_S));
    return w.rc;
}

static int delete_ledger(env_t *t, int64_t id)
{
    waiter_t w = {0};
    int rc = ledger_delete(t->lc, id, done_cb, &w);
    if (rc < 0)
        return rc;
    TEST_REQUIRE(test_run_until(t->loop, &w.done, WAIT_S));
    return w.rc;
}

/* Adds: callbacks recorded in arrival order. */
typedef struct adds {
    int64_t ids[ADDS_MAX];
    int rcs[ADDS_MAX];
    volatile int n;
} adds_t;

static adds_t adds_buf;

static void add_cb(int rc, int64_t entry_id, void *arg)
{
    adds_t *a = arg;
    if (a->n < ADDS_MAX) {
        a->ids[a->n] = entry_id;
        a->rcs[a->n] = rc;
    }
    a->n++;
}

static bool adds_wait(env_t *t, adds_t *a, int n)
{
    while (a->n < n) {
        int before = a->n;
        volatile bool progress = false;
        ev_tstamp end = ev_now(t->loop) + WAIT_S;
        while (!progress && ev_now(t->loop) < end) {
            test_run_for(t->loop, 0.01);
            progress = a->n != before;
        }
        if (!progress)
            return false;
    }
    return true;
}

/* Entry e of a test ledger: "L<ledger>-E<e>-" padded with a pattern. */
static qbuf_t *make_entry(int64_t lid, int64_t e, size_t extra)
{
    char head[64];
    int n = snprintf(head, sizeof head, "L%" PRId64 "-E%" PRId64 "-", lid, e);
    qbuf_t *b = qbuf_new((size_t)n + extra);
    memcpy(b->data, head, (size_t)n);
    for (size_t i = 0; i < extra; i++)
        b->data[n + i] = (uint8_t)(e * 31 + i);
    b->len = (uint32_t)(n + extra);
    return b;
}

static bool entry_matches(const qbuf_t *b, int64_t lid, int64_t e, size_t extra)
{
    qbuf_t *want = make_entry(lid, e, extra);
    bool ok = b && b->len == want->len && memcmp(b->data, want->data, b->len) == 0;
    qbuf_unref(want);
    return ok;
}

static int add_entries(ledger_t *l, adds_t *a, int64_t from, int64_t to, size_t extra)
{
    for (int64_t e = from; e <= to; e++) {
        qbuf_t *b = make_entry(ledger_id(l), e, extra);
        int rc = ledger_add(l, b, add_cb, a);
        qbuf_unref(b);
        if (rc < 0)
            return rc;
    }
    return 0;
}

typedef struct reader {
    volatile bool done;
    int rc;
    int64_t first;
    size_t n;
    bool content_ok;
    size_t extra;
    int64_t lid;
} reader_t;

static void read_cb(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    reader_t *r = arg;
    r->rc = rc;
    r->first = first;
    r->n = n;
    r->content_ok = true;
    for (size_t i = 0; i < n; i++)
        if (!entry_matches(entries[i], r->lid, first + (int64_t)i, r->extra))
            r->content_ok = false;
    r->done = true;
}

/* Reads first..last and checks every entry's bytes; returns the rc. */
static int read_check(env_t *t, ledger_t *l, int64_t first, int64_t last, size_t extra)
{
    reader_t r = {.extra = extra, .lid = ledger_id(l)};
    int rc = ledger_read(l, first, last, read_cb, &r);
    if (rc < 0)
        return rc;
    CU_ASSERT_FALSE(r.done);
    TEST_REQUIRE(test_run_until(t->loop, &r.done, WAIT_S));
    if (r.rc == 0) {
        CU_ASSERT_EQUAL(r.first, first);
        CU_ASSERT_EQUAL(r.n, (size_t)(last - first + 1));
        CU_ASSERT_TRUE(r.content_ok);
    }
    return r.rc;
}

/* Reads the stored metadata of a ledger (decoded; caller frees). */
typedef struct md_reader {
    volatile bool done;
    int rc;
    ledger_md_t md;
} md_reader_t;

static void md_read_cb(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)stat;
    md_reader_t *r = arg;
    r->rc = rc == 0 ? ledger_md_decode(value, len, &r->md) : rc;
    r->done = true;
}

static int read_md(env_t *t, int64_t id, ledger_md_t *out)
{
    char path[32];
    ledger_md_path(id, path, sizeof path);
    md_reader_t r = {0};
    TEST_REQUIRE(md_get(t->md, path, md_read_cb, &r) == 0);
    TEST_REQUIRE(test_run_until(t->loop, &r.done, WAIT_S));
    *out = r.md;
    return r.rc;
}

static int fake_index(env_t *t, const char *id)
{
    for (int i = 0; i < t->nfb; i++)
        if (strcmp(fake_bookie_client(t->fb[i])->id, id) == 0)
            return i;
    return -1;
}

/* The fake at slot s of segment seg of the ledger's stored metadata. */
static fake_bookie_t *fake_at(env_t *t, const ledger_md_t *md, size_t seg, int s)
{
    int i = fake_index(t, md->segments[seg].bookies[s]);
    TEST_REQUIRE(i >= 0);
    return t->fb[i];
}

static void check_adds_in_order(adds_t *a, int64_t first, int n, int rc)
{
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(a->ids[i], first + i);
        CU_ASSERT_EQUAL(a->rcs[i], rc);
    }
}

/* ---------------------------------------------------------------- tests -- */

static void test_striping_and_metadata(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    CU_ASSERT_TRUE(lid >= 1);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 29, 10) == 0);
    CU_ASSERT_EQUAL(adds_buf.n, 0); /* never inline */
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 30));
    check_adds_in_order(&adds_buf, 0, 30, 0);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(l), 29);

    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_OPEN);
    CU_ASSERT_EQUAL(md.nsegments, 1);
    CU_ASSERT_EQUAL(md.q.ensemble, 3);
    CU_ASSERT_EQUAL(md.q.write_quorum, 2);
    /* Entry e is on ensemble slots e%3 and (e+1)%3, and nowhere else. */
    for (int s = 0; s < 3; s++) {
        fake_bookie_t *fb = fake_at(&t, &md, 0, s);
        CU_ASSERT_EQUAL(fake_bookie_count(fb, lid), 20);
        for (int64_t e = 0; e < 30; e++) {
            bool want = e % 3 == s || (e + 1) % 3 == s;
            CU_ASSERT_EQUAL(fake_bookie_has(fb, lid, e), want);
        }
    }
    ledger_md_free(&md);
    uint64_t length = ledger_length_bytes(l);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 29, 10), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(md.last_entry_id, 29);
    CU_ASSERT_EQUAL(md.length, length);
    ledger_md_free(&md);
    env_teardown(&t);
}

static void test_ensembles_spread(void)
{
    env_t t;
    env_setup(&t, 5, 5000);
    int used[FAKES_MAX] = {0};
    for (int i = 0; i < 5; i++) {
        ledger_t *l = create_ledger(&t, t.lc, 2, 2, 1);
        ledger_md_t md;
        TEST_REQUIRE(read_md(&t, ledger_id(l), &md) == 0);
        for (int s = 0; s < 2; s++)
            used[fake_index(&t, md.segments[0].bookies[s])]++;
        CU_ASSERT_STRING_NOT_EQUAL(md.segments[0].bookies[0], md.segments[0].bookies[1]);
        ledger_md_free(&md);
        CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    }
    /* 5 ensembles of 2 over 5 bookies, round robin: each bookie in exactly 2. */
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(used[i], 2);
    ledger_client_mark_bookie_down(t.lc, "bk0");
    ledger_client_mark_bookie_down(t.lc, "bk1");
    ledger_quorum_t q = {.ensemble = 4, .write_quorum = 2, .ack_quorum = 2};
    waiter_t w = {0};
    CU_ASSERT_EQUAL(ledger_create(t.lc, &q, open_cb, &w), QE_UNAVAILABLE);
    q.ensemble = 2;
    q.ack_quorum = 3;
    CU_ASSERT_EQUAL(ledger_create(t.lc, &q, open_cb, &w), QE_INVALID);
    env_teardown(&t);
}

static void test_in_order_with_out_of_order_acks(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *slow = fake_at(&t, &md, 0, 0);
    const char *slow_id = fake_bookie_client(slow)->id;
    ledger_md_free(&md);
    fake_bookie_set_delay_ms(slow, 150);
    fake_ack_log_reset();
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 8, 5) == 0);
    /* Close at once: it waits for the 9 pending adds, which all succeed first. */
    waiter_t w = {0};
    TEST_REQUIRE(ledger_close(l, done_cb, &w) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &w.done, WAIT_S));
    CU_ASSERT_EQUAL(w.rc, 0);
    CU_ASSERT_EQUAL(adds_buf.n, 9);
    check_adds_in_order(&adds_buf, 0, 9, 0);
    /* Entry 1 (slots 1,2) had both acks before slot 0 acked entry 0. */
    size_t first_slow = SIZE_MAX, entry1_acks = 0;
    for (size_t i = 0; i < fake_ack_log_count(); i++) {
        const fake_ack_t *a = fake_ack_log_get(i);
        if (first_slow == SIZE_MAX && strcmp(a->bookie, slow_id) == 0)
            first_slow = i;
        if (first_slow == SIZE_MAX && a->entry_id == 1)
            entry1_acks++;
    }
    CU_ASSERT_EQUAL(entry1_acks, 2);
    CU_ASSERT_EQUAL(fake_ack_log_count(), 18);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(md.last_entry_id, 8);
    ledger_md_free(&md);
    env_teardown(&t);
}

static void test_no_ack_below_ack_quorum(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    fake_bookie_stall(t.fb[0], true);
    fake_bookie_stall(t.fb[1], true);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 1, 0) == 0);
    test_run_for(t.loop, 0.2);
    CU_ASSERT_EQUAL(adds_buf.n, 0); /* one ack of two needed */
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(l), -1);
    fake_bookie_stall(t.fb[1], false);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 2));
    check_adds_in_order(&adds_buf, 0, 2, 0);
    fake_bookie_stall(t.fb[0], false);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* A bookie of the ensemble fails mid-stream: a new segment, nothing lost. */
static void test_ensemble_change_on_failure(void)
{
    env_t t;
    env_setup(&t, 4, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *bad = fake_at(&t, &md, 0, 1);
    char spare[LEDGER_BOOKIE_ID_MAX] = "";
    for (int i = 0; i < 4; i++) {
        const char *id = fake_bookie_client(t.fb[i])->id;
        bool in = false;
        for (int s = 0; s < 3; s++)
            in |= strcmp(md.segments[0].bookies[s], id) == 0;
        if (!in)
            snprintf(spare, sizeof spare, "%s", id);
    }
    ledger_md_free(&md);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 9, 7) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 10));
    fake_bookie_fail(bad, QE_UNAVAILABLE);
    TEST_REQUIRE(add_entries(l, &adds_buf, 10, 24, 7) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 25));
    check_adds_in_order(&adds_buf, 0, 25, 0);

    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    TEST_REQUIRE(md.nsegments == 2);
    CU_ASSERT_EQUAL(md.segments[1].first_entry_id, 10);
    CU_ASSERT_STRING_EQUAL(md.segments[1].bookies[1], spare);
    CU_ASSERT_STRING_EQUAL(md.segments[1].bookies[0], md.segments[0].bookies[0]);
    CU_ASSERT_STRING_EQUAL(md.segments[1].bookies[2], md.segments[0].bookies[2]);
    /* The replacement holds exactly the entries of slot 1 from entry 10 on. */
    fake_bookie_t *repl = t.fb[fake_index(&t, spare)];
    for (int64_t e = 0; e < 25; e++)
        CU_ASSERT_EQUAL(fake_bookie_has(repl, lid, e), e >= 10 && (e % 3 == 1 || (e + 1) % 3 == 1));
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 24, 7), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    int rc;
    ledger_t *r = open_ledger(&t, t.lc, lid, LEDGER_OPEN_NO_RECOVERY, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 24);
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 24, 7), 0);
    ledger_release(r);
    env_teardown(&t);
}

/* A bookie that stops answering is replaced after add_timeout_ms. */
static void test_ensemble_change_on_timeout(void)
{
    env_t t;
    env_setup(&t, 3, 200);
    ledger_t *l = create_ledger(&t, t.lc, 2, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *mute = fake_at(&t, &md, 0, 0);
    ledger_md_free(&md);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 3, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 4));
    fake_bookie_partition_adds(mute, true);
    TEST_REQUIRE(add_entries(l, &adds_buf, 4, 7, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 8));
    check_adds_in_order(&adds_buf, 0, 8, 0);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    TEST_REQUIRE(md.nsegments == 2);
    CU_ASSERT_EQUAL(md.segments[1].first_entry_id, 4);
    CU_ASSERT_STRING_NOT_EQUAL(md.segments[1].bookies[0], fake_bookie_client(mute)->id);
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 7, 0), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* A read-only bookie (its disk full) is left out of new ensembles and of
 * replacements: with it and one failed bookie, a ledger of three over four has
 * no replacement; writable again, it is chosen. */
static void test_read_only_bookie_left_out(void)
{
    env_t t;
    env_setup(&t, 4, 5000);
    fake_bookie_read_only(t.fb[3], true);
    CU_ASSERT_EQUAL(ledger_client_bookies_available(t.lc), 3);
    ledger_quorum_t q = {.ensemble = 4, .write_quorum = 2, .ack_quorum = 2};
    waiter_t w = {0};
    CU_ASSERT_EQUAL(ledger_create(t.lc, &q, open_cb, &w), QE_UNAVAILABLE);
    for (int i = 0; i < 3; i++) { /* every rotation of the round robin */
        ledger_t *l = create_ledger(&t, t.lc, 3, 3, 3);
        ledger_md_t md;
        TEST_REQUIRE(read_md(&t, ledger_id(l), &md) == 0);
        for (int s = 0; s < 3; s++)
            CU_ASSERT_STRING_NOT_EQUAL(md.segments[0].bookies[s], "bk3");
        ledger_md_free(&md);
        CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    }
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 3);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 1, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 2));
    check_adds_in_order(&adds_buf, 0, 2, 0);
    fake_bookie_fail(t.fb[0], -EIO);
    TEST_REQUIRE(add_entries(l, &adds_buf, 2, 2, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 3));
    CU_ASSERT_EQUAL(adds_buf.rcs[2], QE_UNAVAILABLE); /* no writable replacement */
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);

    fake_bookie_read_only(t.fb[3], false);
    CU_ASSERT_EQUAL(ledger_client_bookies_available(t.lc), 4);
    l = create_ledger(&t, t.lc, 4, 2, 2);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* No bookie left to replace a failed one: pending adds fail, later adds too. */
static void test_no_replacement_fails_adds(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 3);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 2, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 3));
    fake_bookie_fail(t.fb[2], -EIO);
    TEST_REQUIRE(add_entries(l, &adds_buf, 3, 5, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 6));
    check_adds_in_order(&adds_buf, 0, 3, 0);
    for (int i = 3; i < 6; i++) {
        CU_ASSERT_EQUAL(adds_buf.ids[i], i);
        CU_ASSERT_EQUAL(adds_buf.rcs[i], QE_UNAVAILABLE);
    }
    qbuf_t *b = qbuf_copy("x", 1);
    CU_ASSERT_EQUAL(ledger_add(l, b, add_cb, &adds_buf), QE_UNAVAILABLE);
    qbuf_unref(b);
    int64_t lid = ledger_id(l);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(md.last_entry_id, 2);
    ledger_md_free(&md);
    env_teardown(&t);
}

static void test_pending_adds_bounded(void)
{
    env_t t;
    memset(&t, 0, sizeof t);
    env_setup(&t, 1, 60000);
    ledger_client_free(t.lc);
    ledger_client_config_t cfg;
    ledger_client_config_defaults(&cfg);
    cfg.pending_adds_max = 4;
    TEST_REQUIRE(ledger_client_new(t.loop, t.md, &cfg, &t.lc) == 0);
    TEST_REQUIRE(ledger_client_add_bookie(t.lc, fake_bookie_client(t.fb[0])) == 0);
    ledger_t *l = create_ledger(&t, t.lc, 1, 1, 1);
    fake_bookie_stall(t.fb[0], true);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 3, 0) == 0);
    qbuf_t *b = qbuf_copy("x", 1);
    CU_ASSERT_EQUAL(ledger_add(l, b, add_cb, &adds_buf), QE_BUSY);
    fake_bookie_stall(t.fb[0], false);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 4));
    check_adds_in_order(&adds_buf, 0, 4, 0);
    CU_ASSERT_EQUAL(ledger_add(l, b, add_cb, &adds_buf), 0);
    qbuf_unref(b);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 5));
    CU_ASSERT_EQUAL(adds_buf.ids[4], 4);
    waiter_t w = {0};
    TEST_REQUIRE(ledger_close(l, done_cb, &w) == 0);
    b = qbuf_copy("y", 1);
    CU_ASSERT_EQUAL(ledger_add(l, b, add_cb, &adds_buf), QE_READ_ONLY);
    qbuf_unref(b);
    TEST_REQUIRE(test_run_until(t.loop, &w.done, WAIT_S));
    CU_ASSERT_EQUAL(w.rc, 0);
    env_teardown(&t);
}

/* A second client recovers while the first writer has adds pending. */
static void test_recovery_fences_writer(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 4, 3) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 5));
    /* Entries 5..7 reach bookie 0 only: pending, one ack of two. */
    fake_bookie_partition_adds(t.fb[1], true);
    fake_bookie_partition_adds(t.fb[2], true);
    TEST_REQUIRE(add_entries(l, &adds_buf, 5, 7, 3) == 0);
    test_run_for(t.loop, 0.05);
    CU_ASSERT_EQUAL(adds_buf.n, 5);

    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_TRUE(ledger_is_closed(r));
    /* 5..7 were on one bookie: recovered, and re-replicated to all three. */
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 7);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(fake_bookie_fenced(t.fb[i], lid));
        CU_ASSERT_EQUAL(fake_bookie_count(t.fb[i], lid), 8);
    }
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 7, 3), 0);

    /* The old writer's next add meets a fenced bookie: every pending add fails. */
    TEST_REQUIRE(add_entries(l, &adds_buf, 8, 8, 3) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 9));
    check_adds_in_order(&adds_buf, 0, 5, 0);
    for (int i = 5; i < 9; i++) {
        CU_ASSERT_EQUAL(adds_buf.ids[i], i);
        CU_ASSERT_EQUAL(adds_buf.rcs[i], QE_FENCED);
    }
    qbuf_t *b = qbuf_copy("z", 1);
    CU_ASSERT_EQUAL(ledger_add(l, b, add_cb, &adds_buf), QE_FENCED);
    qbuf_unref(b);
    CU_ASSERT_EQUAL(close_ledger(&t, l), QE_FENCED);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(md.last_entry_id, 7);
    CU_ASSERT_EQUAL(md.length, (uint64_t)ledger_length_bytes(r));
    ledger_md_free(&md);
    ledger_release(r);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* Writes 0..9 acked, then 10..12 with bookie 2 cut off (E=3, Qw=2, Qa=2):
 * entry 10 is on bookie 1 only, 11 on bookie 0 only, 12 on 0 and 1. */
static int64_t write_partial_tail(env_t *t, fake_bookie_t **slots)
{
    ledger_t *l = create_ledger(t, t->lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(t, lid, &md) == 0);
    for (int s = 0; s < 3; s++)
        slots[s] = fake_at(t, &md, 0, s);
    ledger_md_free(&md);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 9, 2) == 0);
    TEST_REQUIRE(adds_wait(t, &adds_buf, 10));
    fake_bookie_partition_adds(slots[2], true);
    TEST_REQUIRE(add_entries(l, &adds_buf, 10, 12, 2) == 0);
    test_run_for(t->loop, 0.05);
    CU_ASSERT_EQUAL(adds_buf.n, 10);
    CU_ASSERT_TRUE(fake_bookie_has(slots[1], lid, 10) && !fake_bookie_has(slots[2], lid, 10));
    CU_ASSERT_TRUE(fake_bookie_has(slots[0], lid, 11) && !fake_bookie_has(slots[2], lid, 11));
    CU_ASSERT_TRUE(fake_bookie_has(slots[0], lid, 12) && fake_bookie_has(slots[1], lid, 12));
    return lid; /* the writer stays unclosed (it "died"); teardown frees it */
}

static void test_recovery_finds_last_entry(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    fake_bookie_t *slots[3];
    int64_t lid = write_partial_tail(&t, slots);
    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 12);
    /* Re-replication: 10 and 11 now on both bookies of their write sets. */
    CU_ASSERT_TRUE(fake_bookie_has(slots[2], lid, 10));
    CU_ASSERT_TRUE(fake_bookie_has(slots[2], lid, 11));
    CU_ASSERT_TRUE(entry_matches(fake_bookie_entry(slots[2], lid, 11), lid, 11, 2));
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 12, 2), 0);
    CU_ASSERT_EQUAL(ledger_read(r, 0, 13, read_cb, NULL), QE_NO_ENTRY);
    uint64_t want = 0;
    for (int64_t e = 0; e <= 12; e++) {
        qbuf_t *b = make_entry(lid, e, 2);
        want += b->len;
        qbuf_unref(b);
    }
    CU_ASSERT_EQUAL(ledger_length_bytes(r), want);
    ledger_release(r);
    /* Opening again with RECOVER just opens the closed ledger. */
    r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 12);
    CU_ASSERT_EQUAL(ledger_length_bytes(r), want);
    ledger_release(r);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* Entry 11 lost by its only bookie: 12 exists but cannot have been acked. */
static void test_recovery_stops_at_gap(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    fake_bookie_t *slots[3];
    int64_t lid = write_partial_tail(&t, slots);
    fake_bookie_lose(slots[0], lid, 11);
    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 10);
    CU_ASSERT_TRUE(fake_bookie_has(slots[2], lid, 10));
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 10, 2), 0);
    ledger_release(r);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* Recovery cannot decide when too few bookies answer: it fails, nothing closed. */
static void test_recovery_unavailable(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 2, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 3));
    fake_bookie_fail(t.fb[0], QE_UNAVAILABLE);
    fake_bookie_fail(t.fb[1], QE_UNAVAILABLE);
    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    CU_ASSERT_EQUAL(rc, QE_UNAVAILABLE);
    CU_ASSERT_PTR_NULL(r);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_IN_RECOVERY);
    ledger_md_free(&md);
    /* Bookies back: a new recovery closes it. */
    fake_bookie_fail(t.fb[0], 0);
    fake_bookie_fail(t.fb[1], 0);
    r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 2);
    ledger_release(r);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* A reader of an open ledger sees up to the LAC its bookies know. */
static void test_reader_of_open_ledger(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 4, 4) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 5));
    TEST_REQUIRE(add_entries(l, &adds_buf, 5, 5, 4) == 0); /* sent with LAC 4 */
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 6));
    int rc;
    ledger_t *r = open_ledger(&t, t.lc, lid, LEDGER_OPEN_NO_RECOVERY, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_FALSE(ledger_is_closed(r));
    /* Entry 5 carried LAC 4: the last confirmation the bookies have seen. */
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 4);
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 4, 4), 0);
    CU_ASSERT_EQUAL(ledger_read(r, 5, 5, read_cb, NULL), QE_NO_ENTRY);
    qbuf_t *b = qbuf_copy("r", 1);
    CU_ASSERT_EQUAL(ledger_add(r, b, add_cb, &adds_buf), QE_READ_ONLY);
    qbuf_unref(b);
    ledger_release(r);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_FALSE(fake_bookie_fenced(t.fb[i], lid));
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 5, 4), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* A reader that drops its ledger handle inside the read's callback (the
 * managed ledger's temporary handles do): the entries handed to the callback
 * stay valid for the whole call, and nothing is used after it is freed (ASan). */
typedef struct release_reader {
    reader_t r;
    ledger_t *l;
} release_reader_t;

static void read_release_cb(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    release_reader_t *rr = arg;
    ledger_release(rr->l); /* the last reference: kills the ledger and its reads */
    rr->l = NULL;
    read_cb(rc, first, entries, n, &rr->r); /* reads every entry's bytes after */
}

static void test_release_in_read_callback(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 7, 64) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 8));
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    int rc;
    release_reader_t rr = {.r = {.extra = 64, .lid = lid}};
    rr.l = open_ledger(&t, t.lc, lid, LEDGER_OPEN_NO_RECOVERY, &rc);
    TEST_REQUIRE(rc == 0 && rr.l);
    TEST_REQUIRE(ledger_read(rr.l, 0, 7, read_release_cb, &rr) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &rr.r.done, WAIT_S));
    CU_ASSERT_EQUAL(rr.r.rc, 0);
    CU_ASSERT_EQUAL(rr.r.n, 8);
    CU_ASSERT_TRUE(rr.r.content_ok);
    CU_ASSERT_PTR_NULL(rr.l);
    env_teardown(&t);
}

static void test_read_bounds_and_failover(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 1);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 11, 1) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 12));
    CU_ASSERT_EQUAL(ledger_read(l, 5, 4, read_cb, NULL), QE_INVALID);
    CU_ASSERT_EQUAL(ledger_read(l, -1, 4, read_cb, NULL), QE_INVALID);
    CU_ASSERT_EQUAL(ledger_read(l, 0, LEDGER_READ_ENTRIES_MAX, read_cb, NULL), QE_INVALID);
    CU_ASSERT_EQUAL(ledger_read(l, 0, 12, read_cb, NULL), QE_NO_ENTRY);
    /* One bookie erroring, another losing everything: each entry has a copy left. */
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_fail(fake_at(&t, &md, 0, 0), -EIO);
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 11, 1), 0);
    fake_bookie_fail(t.fb[0], 0);
    fake_bookie_fail(t.fb[1], 0);
    fake_bookie_fail(t.fb[2], 0);
    for (int i = 0; i < 3; i++)
        fake_bookie_lose(t.fb[i], lid, 0);
    CU_ASSERT_EQUAL(read_check(&t, l, 3, 3, 1), QE_NO_ENTRY);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

static void test_delete(void)
{
    env_t t;
    env_setup(&t, 4, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 5, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 6));
    /* An ensemble change first, so that the ledger spans all four bookies. */
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *bad = fake_at(&t, &md, 0, 2);
    ledger_md_free(&md);
    fake_bookie_fail(bad, QE_UNAVAILABLE);
    TEST_REQUIRE(add_entries(l, &adds_buf, 6, 11, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 12));
    check_adds_in_order(&adds_buf, 0, 12, 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    fake_bookie_fail(bad, 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_TRUE(fake_bookie_knows(t.fb[i], lid));
    CU_ASSERT_EQUAL(delete_ledger(&t, lid), 0);
    for (int i = 0; i < 4; i++)
        CU_ASSERT_FALSE(fake_bookie_knows(t.fb[i], lid));
    CU_ASSERT_EQUAL(read_md(&t, lid, &md), QE_NOT_FOUND);
    int rc;
    CU_ASSERT_PTR_NULL(open_ledger(&t, t.lc, lid, LEDGER_OPEN_NO_RECOVERY, &rc));
    CU_ASSERT_EQUAL(rc, QE_NO_LEDGER);
    CU_ASSERT_EQUAL(delete_ledger(&t, lid), QE_NO_LEDGER);
    /* A ledger no bookie has heard of (no entries): its metadata goes. */
    l = create_ledger(&t, t.lc, 3, 3, 2);
    lid = ledger_id(l);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    CU_ASSERT_EQUAL(delete_ledger(&t, lid), 0);
    CU_ASSERT_EQUAL(read_md(&t, lid, &md), QE_NOT_FOUND);
    /* A bookie that cannot delete keeps the metadata, so the delete can be retried. */
    l = create_ledger(&t, t.lc, 1, 1, 1);
    lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 0, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 1));
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *only = fake_at(&t, &md, 0, 0);
    ledger_md_free(&md);
    fake_bookie_fail(only, -EIO);
    CU_ASSERT_EQUAL(delete_ledger(&t, lid), -EIO);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    ledger_md_free(&md);
    fake_bookie_fail(only, 0);
    CU_ASSERT_EQUAL(delete_ledger(&t, lid), 0);
    CU_ASSERT_FALSE(fake_bookie_knows(only, lid));
    env_teardown(&t);
}

static void test_ids_never_reused(void)
{
    env_t t;
    env_setup(&t, 1, 5000);
    int64_t max = -1;
    for (int i = 0; i < 3; i++) {
        ledger_t *l = create_ledger(&t, t.lc, 1, 1, 1);
        CU_ASSERT_TRUE(ledger_id(l) > max);
        max = ledger_id(l);
        CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    }
    /* A second client on the same store, then a restart of the store. */
    for (int round = 0; round < 2; round++) {
        ledger_client_free(t.lc);
        if (round == 1) {
            md_store_close(t.md);
            env_md_open(&t);
        }
        t.lc = env_client(&t, 5000);
        ledger_t *l = create_ledger(&t, t.lc, 1, 1, 1);
        CU_ASSERT_TRUE(ledger_id(l) > max);
        max = ledger_id(l);
        CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    }
    /* Two clients creating at once never get the same id. */
    ledger_client_t *lc2 = env_client(&t, 5000);
    ledger_quorum_t q = {1, 1, 1};
    waiter_t w[6] = {0};
    for (int i = 0; i < 6; i++)
        TEST_REQUIRE(ledger_create(i % 2 ? lc2 : t.lc, &q, open_cb, &w[i]) == 0);
    for (int i = 0; i < 6; i++)
        TEST_REQUIRE(test_run_until(t.loop, &w[i].done, WAIT_S) && w[i].rc == 0);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_TRUE(ledger_id(w[i].l) > max);
        for (int j = 0; j < i; j++)
            CU_ASSERT_NOT_EQUAL(ledger_id(w[i].l), ledger_id(w[j].l));
    }
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(close_ledger(&t, w[i].l), 0);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* The counter's version after a burst: one compare-and-set per id block. */
typedef struct counter_reader {
    volatile bool done;
    int rc;
    int64_t version;
} counter_reader_t;

static void counter_read_cb(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)value;
    (void)len;
    counter_reader_t *r = arg;
    r->rc = rc;
    r->version = rc == 0 ? stat->version : -1;
    r->done = true;
}

#define BURST_CREATES 3000

/* A burst of creates shares one or two id blocks (lc_id_block_size): the
 * counter is updated a few times, not once per LEDGER_ID_BLOCK creates. The
 * burst starts inside a block (ids left for its first 99 creates only): the
 * rest get the next block without waiting for a later create. */
static void test_id_block_follows_burst(void)
{
    CU_ASSERT_EQUAL(lc_id_block_size(0), LEDGER_ID_BLOCK);
    CU_ASSERT_EQUAL(lc_id_block_size(10), LEDGER_ID_BLOCK);
    CU_ASSERT_EQUAL(lc_id_block_size(3000), 6000);
    CU_ASSERT_EQUAL(lc_id_block_size(UINT32_MAX), LEDGER_ID_BLOCK_MAX);
    env_t t;
    env_setup(&t, 1, 5000);
    ledger_release(create_ledger(&t, t.lc, 1, 1, 1)); /* counter version 0 */
    static waiter_t w[BURST_CREATES];
    memset(w, 0, sizeof w);
    ledger_quorum_t q = {1, 1, 1};
    for (int i = 0; i < BURST_CREATES; i++)
        TEST_REQUIRE(ledger_create(t.lc, &q, open_cb, &w[i]) == 0);
    for (int i = 0; i < BURST_CREATES; i++)
        TEST_REQUIRE(test_run_until(t.loop, &w[i].done, WAIT_S) && w[i].rc == 0);
    /* Distinct ids, handed out in call order. */
    for (int i = 1; i < BURST_CREATES; i++)
        CU_ASSERT_TRUE(ledger_id(w[i].l) > ledger_id(w[i - 1].l));
    counter_reader_t r = {0};
    TEST_REQUIRE(md_get(t.md, LEDGER_COUNTER_PATH, counter_read_cb, &r) == 0);
    TEST_REQUIRE(test_run_until(t.loop, &r.done, WAIT_S) && r.rc == 0);
    CU_ASSERT_TRUE(r.version >= 1 && r.version <= 2); /* blocks of 100: version 30 */
    for (int i = 0; i < BURST_CREATES; i++)
        ledger_release(w[i].l);
    env_teardown(&t);
}

/* The text the encoder wrote when it built a jansson tree (format 1): the
 * stored documents must not change with the encoder. */
static char *md_text_by_jansson(const ledger_md_t *md)
{
    json_t *segs = json_array();
    for (size_t i = 0; i < md->nsegments; i++) {
        json_t *ids = json_array();
        for (int b = 0; b < md->q.ensemble; b++)
            json_array_append_new(ids, json_string(md->segments[i].bookies[b]));
        json_array_append_new(segs,
                              json_pack("{s:I,s:I,s:o}", "first_entry_id",
                                        (json_int_t)md->segments[i].first_entry_id, "length_before",
                                        (json_int_t)md->segments[i].length_before, "bookies", ids));
    }
    json_t *root = json_pack(
        "{s:i,s:i,s:i,s:i,s:s,s:I,s:I,s:I,s:o}", "format", 1, "ensemble_size", md->q.ensemble,
        "write_quorum", md->q.write_quorum, "ack_quorum", md->q.ack_quorum, "state",
        ledger_state_name(md->state), "last_entry_id", (json_int_t)md->last_entry_id, "length",
        (json_int_t)md->length, "ctime_ms", (json_int_t)md->ctime_ms, "segments", segs);
    char *out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return out;
}

static void test_metadata_text_unchanged(void)
{
    char rows[4][LEDGER_ENSEMBLE_MAX][LEDGER_BOOKIE_ID_MAX];
    ledger_segment_t segs[4];
    unsigned seed = 7;
    for (int round = 0; round < 200; round++) {
        int e = 1 + (int)(rand_r(&seed) % LEDGER_ENSEMBLE_MAX);
        int qw = 1 + (int)(rand_r(&seed) % (unsigned)e);
        ledger_md_t md = {.q = {e, qw, 1 + (int)(rand_r(&seed) % (unsigned)qw)},
                          .state = (int)(rand_r(&seed) % (LEDGER_STATE_CLOSED + 1)),
                          .last_entry_id = round % 3 == 0 ? -1 : (int64_t)rand_r(&seed) << 20,
                          .length = (uint64_t)rand_r(&seed) << 12,
                          .ctime_ms = 1700000000000 + round};
        md.nsegments = 1 + (size_t)(rand_r(&seed) % 4);
        for (size_t i = 0; i < md.nsegments; i++) {
            segs[i] = (ledger_segment_t){
                .first_entry_id = (int64_t)i * 1000, .length_before = i * 7777, .bookies = rows[i]};
            for (int b = 0; b < e; b++)
                snprintf(rows[i][b], LEDGER_BOOKIE_ID_MAX, "bookie-%d.example:%d", b,
                         3181 + (int)i);
        }
        md.segments = segs;
        char *mine = NULL, *theirs = md_text_by_jansson(&md);
        size_t len = 0;
        TEST_REQUIRE(theirs != NULL);
        TEST_REQUIRE(ledger_md_encode(&md, &mine, &len) == 0);
        CU_ASSERT_EQUAL(len, strlen(mine));
        CU_ASSERT_STRING_EQUAL(mine, theirs);
        free(mine);
        free(theirs);
    }
}

static void test_metadata_encoding(void)
{
    ledger_md_t md = {.q = {3, 2, 2},
                      .state = LEDGER_STATE_CLOSED,
                      .last_entry_id = 41,
                      .length = 1234,
                      .ctime_ms = 1700000000000};
    char rows[2][3][LEDGER_BOOKIE_ID_MAX];
    ledger_segment_t segs[2] = {{.first_entry_id = 0, .length_before = 0, .bookies = rows[0]},
                                {.first_entry_id = 17, .length_before = 500, .bookies = rows[1]}};
    const char *ids[2][3] = {{"a:1", "b:2", "c:3"}, {"a:1", "d:4", "c:3"}};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 3; i++)
            strcpy(segs[s].bookies[i], ids[s][i]);
    md.segments = segs;
    md.nsegments = 2;
    char *text;
    size_t len;
    TEST_REQUIRE(ledger_md_encode(&md, &text, &len) == 0);
    ledger_md_t back;
    TEST_REQUIRE(ledger_md_decode(text, len, &back) == 0);
    CU_ASSERT_EQUAL(back.q.ensemble, 3);
    CU_ASSERT_EQUAL(back.q.write_quorum, 2);
    CU_ASSERT_EQUAL(back.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(back.last_entry_id, 41);
    CU_ASSERT_EQUAL(back.length, 1234);
    CU_ASSERT_EQUAL(back.ctime_ms, 1700000000000);
    TEST_REQUIRE(back.nsegments == 2);
    CU_ASSERT_EQUAL(back.segments[1].first_entry_id, 17);
    CU_ASSERT_EQUAL(back.segments[1].length_before, 500);
    CU_ASSERT_STRING_EQUAL(back.segments[1].bookies[1], "d:4");
    CU_ASSERT_EQUAL(ledger_md_segment_of(&back, 16), 0);
    CU_ASSERT_EQUAL(ledger_md_segment_of(&back, 17), 1);
    ledger_md_free(&back);
    free(text);
    const char *bad[] = {
        "",
        "{}",
        "[1]",
        "{\"format\":2,\"ensemble_size\":1,\"write_quorum\":1,\"ack_quorum\":1,\"state\":"
        "\"OPEN\",\"last_entry_id\":-1,\"length\":0,\"ctime_ms\":0,\"segments\":[{\"first_"
        "entry_id\":0,\"length_before\":0,\"bookies\":[\"a\"]}]}",
        "{\"format\":1,\"ensemble_size\":2,\"write_quorum\":1,\"ack_quorum\":1,\"state\":"
        "\"OPEN\",\"last_entry_id\":-1,\"length\":0,\"ctime_ms\":0,\"segments\":[{\"first_"
        "entry_id\":0,\"length_before\":0,\"bookies\":[\"a\",\"a\"]}]}",
        "{\"format\":1,\"ensemble_size\":1,\"write_quorum\":1,\"ack_quorum\":1,\"state\":"
        "\"SHUT\",\"last_entry_id\":-1,\"length\":0,\"ctime_ms\":0,\"segments\":[{\"first_"
        "entry_id\":0,\"length_before\":0,\"bookies\":[\"a\"]}]}",
        "{\"format\":1,\"ensemble_size\":1,\"write_quorum\":1,\"ack_quorum\":1,\"state\":"
        "\"OPEN\",\"last_entry_id\":-1,\"length\":0,\"ctime_ms\":0,\"segments\":[{\"first_"
        "entry_id\":3,\"length_before\":0,\"bookies\":[\"a\"]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CU_ASSERT_EQUAL(ledger_md_decode(bad[i], strlen(bad[i]), &back), QE_CORRUPT);
}

/* QE_BUSY from a bookie is back-pressure: the add is sent again, no change. */
static void test_bookie_busy_retried(void)
{
    env_t t;
    env_setup(&t, 2, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 1, 1, 1);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *fb = fake_at(&t, &md, 0, 0);
    ledger_md_free(&md);
    fake_bookie_busy(fb, 3);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 4, 6) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 5));
    check_adds_in_order(&adds_buf, 0, 5, 0);
    CU_ASSERT_EQUAL(fake_bookie_count(fb, lid), 5);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.nsegments, 1);
    CU_ASSERT_STRING_EQUAL(md.segments[0].bookies[0], fake_bookie_client(fb)->id);
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 4, 6), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* Two bookies of one write set fail together: both replaced, from entry 3. */
static void test_two_bookies_fail(void)
{
    env_t t;
    env_setup(&t, 5, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 2, 9) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 3));
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_fail(fake_at(&t, &md, 0, 0), QE_UNAVAILABLE);
    fake_bookie_fail(fake_at(&t, &md, 0, 2), -EIO);
    ledger_md_t before = md;
    TEST_REQUIRE(add_entries(l, &adds_buf, 3, 8, 9) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 9));
    check_adds_in_order(&adds_buf, 0, 9, 0);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    TEST_REQUIRE(md.nsegments == 2);
    CU_ASSERT_EQUAL(md.segments[1].first_entry_id, 3);
    CU_ASSERT_STRING_EQUAL(md.segments[1].bookies[1], before.segments[0].bookies[1]);
    for (int s = 0; s < 3; s += 2) {
        for (int i = 0; i < 3; i++)
            CU_ASSERT_STRING_NOT_EQUAL(md.segments[1].bookies[s], before.segments[0].bookies[i]);
        CU_ASSERT_EQUAL(fake_bookie_count(fake_at(&t, &md, 1, s), lid), 6);
    }
    ledger_md_free(&before);
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(read_check(&t, l, 0, 8, 9), 0);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    env_teardown(&t);
}

/* The writer learns from the metadata (lost CAS of its ensemble change) that
 * a recovery closed its ledger. */
static void test_ensemble_change_after_recovery(void)
{
    env_t t;
    env_setup(&t, 4, 60000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 4, 1) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 5));
    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 4);
    ledger_release(r);
    /* Entry 5 goes to slots 2 and 0: slot 2 fails, slot 0 holds its answer. */
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_t *s0 = fake_at(&t, &md, 0, 0);
    fake_bookie_fail(fake_at(&t, &md, 0, 2), QE_UNAVAILABLE);
    ledger_md_free(&md);
    fake_bookie_stall(s0, true);
    TEST_REQUIRE(add_entries(l, &adds_buf, 5, 5, 1) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 6));
    CU_ASSERT_EQUAL(adds_buf.ids[5], 5);
    CU_ASSERT_EQUAL(adds_buf.rcs[5], QE_FENCED);
    fake_bookie_stall(s0, false);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.state, LEDGER_STATE_CLOSED);
    CU_ASSERT_EQUAL(md.last_entry_id, 4);
    CU_ASSERT_EQUAL(md.nsegments, 1); /* the writer's change was not recorded */
    ledger_md_free(&md);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0); /* closed where the writer stopped */
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* A bookie that answers nothing: recovery goes on with the others. */
static void test_recovery_with_silent_bookie(void)
{
    env_t t;
    env_setup(&t, 3, 60000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 3, 2);
    int64_t lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 2, 5) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 3));
    fake_bookie_stall(t.fb[2], true);
    ledger_client_t *lc2 = env_client(&t, 100);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_TRUE(ledger_is_closed(r));
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 2);
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 2, 5), 0);
    ledger_release(r);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* An unclosed ledger without entries recovers as closed and empty. */
static void test_recover_empty_ledger(void)
{
    env_t t;
    env_setup(&t, 3, 5000);
    ledger_t *l = create_ledger(&t, t.lc, 3, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_client_t *lc2 = env_client(&t, 2000);
    int rc;
    ledger_t *r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_TRUE(ledger_is_closed(r));
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), -1);
    CU_ASSERT_EQUAL(ledger_length_bytes(r), 0);
    CU_ASSERT_EQUAL(ledger_read(r, 0, 0, read_cb, NULL), QE_NO_ENTRY);
    ledger_release(r);
    qbuf_t *b = qbuf_copy("x", 1);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(ledger_add(l, b, add_cb, &adds_buf) == 0);
    qbuf_unref(b);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 1));
    CU_ASSERT_EQUAL(adds_buf.rcs[0], QE_FENCED);
    ledger_client_free(lc2);
    env_teardown(&t);
}

/* ensemble_changes_max bounds the changes of one ledger. */
static void test_ensemble_changes_bounded(void)
{
    env_t t;
    env_setup(&t, 5, 5000);
    ledger_client_free(t.lc);
    ledger_client_config_t cfg;
    ledger_client_config_defaults(&cfg);
    cfg.ensemble_changes_max = 1;
    TEST_REQUIRE(ledger_client_new(t.loop, t.md, &cfg, &t.lc) == 0);
    for (int i = 0; i < 5; i++)
        TEST_REQUIRE(ledger_client_add_bookie(t.lc, fake_bookie_client(t.fb[i])) == 0);
    ledger_t *l = create_ledger(&t, t.lc, 2, 2, 2);
    int64_t lid = ledger_id(l);
    ledger_md_t md;
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_fail(fake_at(&t, &md, 0, 0), QE_UNAVAILABLE);
    ledger_md_free(&md);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 1, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 2));
    check_adds_in_order(&adds_buf, 0, 2, 0); /* first change made */
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    fake_bookie_fail(fake_at(&t, &md, 0, 1), QE_TIMEOUT);
    ledger_md_free(&md);
    TEST_REQUIRE(add_entries(l, &adds_buf, 2, 3, 0) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 4));
    CU_ASSERT_EQUAL(adds_buf.rcs[2], QE_UNAVAILABLE);
    CU_ASSERT_EQUAL(adds_buf.rcs[3], QE_UNAVAILABLE);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    TEST_REQUIRE(read_md(&t, lid, &md) == 0);
    CU_ASSERT_EQUAL(md.last_entry_id, 1);
    CU_ASSERT_EQUAL(md.nsegments, 1); /* the change replaced segment 0 in place */
    ledger_md_free(&md);
    env_teardown(&t);
}

/* ------------------------------------------------ with the real bookie -- */

static void test_local_bookie_10000_entries(void)
{
    env_t t;
    env_setup(&t, 0, 5000);
    char bdir[512];
    snprintf(bdir, sizeof bdir, "%s/bookie", t.dir);
    bookie_config_t bcfg;
    bookie_config_defaults(&bcfg);
    bcfg.data_dir = bdir;
    bcfg.journal_sync = false;
    bcfg.journal_file_size_bytes = 4u << 20;
    bookie_t *bk = NULL;
    TEST_REQUIRE(bookie_open(t.loop, &bcfg, &bk) == 0);
    bk_client_t *bc = bk_client_local(bk, "local");
    TEST_REQUIRE(bc != NULL);
    TEST_REQUIRE(ledger_client_add_bookie(t.lc, bc) == 0);
    ledger_t *l = create_ledger(&t, t.lc, 1, 1, 1);
    int64_t lid = ledger_id(l);
    enum { N = 10000 };
    memset(&adds_buf, 0, sizeof adds_buf);
    for (int64_t from = 0; from < N; from += 1000) {
        TEST_REQUIRE(add_entries(l, &adds_buf, from, from + 999, (size_t)(from % 97)) == 0);
        TEST_REQUIRE(adds_wait(&t, &adds_buf, (int)from + 1000));
    }
    check_adds_in_order(&adds_buf, 0, N, 0);
    uint64_t length = ledger_length_bytes(l);
    CU_ASSERT_EQUAL(close_ledger(&t, l), 0);
    int rc;
    ledger_t *r = open_ledger(&t, t.lc, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_TRUE(ledger_is_closed(r));
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), N - 1);
    CU_ASSERT_EQUAL(ledger_length_bytes(r), length);
    for (int64_t from = 0; from < N; from += 1000)
        CU_ASSERT_EQUAL(read_check(&t, r, from, from + 999, (size_t)(from % 97)), 0);
    ledger_release(r);

    /* A second ledger left unclosed, recovered by a new client. */
    l = create_ledger(&t, t.lc, 1, 1, 1);
    lid = ledger_id(l);
    memset(&adds_buf, 0, sizeof adds_buf);
    TEST_REQUIRE(add_entries(l, &adds_buf, 0, 99, 3) == 0);
    TEST_REQUIRE(adds_wait(&t, &adds_buf, 100));
    ledger_client_t *lc2 = NULL;
    TEST_REQUIRE(ledger_client_new(t.loop, t.md, NULL, &lc2) == 0);
    TEST_REQUIRE(ledger_client_add_bookie(lc2, bc) == 0);
    r = open_ledger(&t, lc2, lid, LEDGER_OPEN_RECOVER, &rc);
    TEST_REQUIRE(rc == 0 && r);
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(r), 99);
    CU_ASSERT_EQUAL(read_check(&t, r, 0, 99, 3), 0);
    ledger_release(r);
    qbuf_t *b = qbuf_copy("late", 4);
    rc = ledger_add(l, b, add_cb, &adds_buf);
    qbuf_unref(b);
    if (rc == 0)
        TEST_REQUIRE(adds_wait(&t, &adds_buf, 101));
    CU_ASSERT_TRUE(rc == QE_FENCED || adds_buf.rcs[100] == QE_FENCED);
    ledger_client_free(lc2);
    ledger_client_free(t.lc);
    t.lc = NULL;
    bk_client_free(bc);
    bookie_close(bk);
    env_teardown(&t);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("ledger", NULL, NULL);
    CU_add_test(s, "metadata encoding", test_metadata_encoding);
    CU_add_test(s, "metadata text unchanged", test_metadata_text_unchanged);
    CU_add_test(s, "striping and metadata", test_striping_and_metadata);
    CU_add_test(s, "ensembles spread", test_ensembles_spread);
    CU_add_test(s, "in-order callbacks, out-of-order acks", test_in_order_with_out_of_order_acks);
    CU_add_test(s, "no ack below Qa", test_no_ack_below_ack_quorum);
    CU_add_test(s, "ensemble change on failure", test_ensemble_change_on_failure);
    CU_add_test(s, "ensemble change on timeout", test_ensemble_change_on_timeout);
    CU_add_test(s, "no replacement fails adds", test_no_replacement_fails_adds);
    CU_add_test(s, "read-only bookie left out of ensembles", test_read_only_bookie_left_out);
    CU_add_test(s, "pending adds bounded", test_pending_adds_bounded);
    CU_add_test(s, "recovery fences writer", test_recovery_fences_writer);
    CU_add_test(s, "recovery finds last entry", test_recovery_finds_last_entry);
    CU_add_test(s, "recovery stops at gap", test_recovery_stops_at_gap);
    CU_add_test(s, "recovery unavailable", test_recovery_unavailable);
    CU_add_test(s, "reader of open ledger", test_reader_of_open_ledger);
    CU_add_test(s, "read bounds and failover", test_read_bounds_and_failover);
    CU_add_test(s, "delete", test_delete);
    CU_add_test(s, "ids never reused", test_ids_never_reused);
    CU_add_test(s, "id block follows a burst of creates", test_id_block_follows_burst);
    CU_add_test(s, "bookie busy retried", test_bookie_busy_retried);
    CU_add_test(s, "two bookies fail", test_two_bookies_fail);
    CU_add_test(s, "ensemble change after recovery", test_ensemble_change_after_recovery);
    CU_add_test(s, "recovery with silent bookie", test_recovery_with_silent_bookie);
    CU_add_test(s, "recover empty ledger", test_recover_empty_ledger);
    CU_add_test(s, "ledger released in its read callback", test_release_in_read_callback);
    CU_add_test(s, "ensemble changes bounded", test_ensemble_changes_bounded);
    CU_pSuite b = CU_add_suite("ledger_local_bookie", NULL, NULL);
    CU_add_test(b, "10000 entries on a local bookie", test_local_bookie_10000_entries);
    ledger_real_register();
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
