/*
 * A small cluster on loopback: four bookie servers, each in its own forked
 * child process (own loop, data directory and port, bookie_server in process,
 * so this test needs no other binary), and ledger clients in the parent that
 * talk to them over TCP (bk_client_remote) with E=3, Qw=3, Qa=2.
 *
 * Each test writes a stream of entries and SIGKILLs one bookie of the
 * ensemble mid-stream. Writes must go on (ensemble change to the fourth
 * bookie), every add must be acknowledged in order, and every acknowledged
 * entry must read back byte for byte: from the writer, and again after a
 * second client opens the ledger for recovery (which fences it: the old
 * writer's next add then fails). The managed-ledger variant does the same
 * through ml_add with ledger rollovers, and reopens the managed ledger from a
 * second factory.
 *
 * Bounds: every wait is bounded (CL_WAIT_S); children die with the parent
 * (PR_SET_PDEATHSIG) and are always SIGKILLed and reaped at the end of each
 * test. The bookies run with journal_sync = false: a SIGKILL loses nothing
 * the kernel has (page cache), and the slow fdatasync of a test machine stays
 * out of the test's time.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie.h"
#include "storage/bookie/bookie_server.h"
#include "storage/ledger/ledger.h"
#include "storage/ledger/ledger_int.h"
#include "storage/managed/managed_ledger.h"
#include "tests/unit/support/test_support.h"

#define CL_BOOKIES 4
#define CL_WAIT_S 30.0
#define CL_WINDOW 64 /* adds in flight */

/* ------------------------------------------------------------ children -- */

typedef struct cluster {
    char *dir;
    pid_t pid[CL_BOOKIES];
    int port[CL_BOOKIES];
    char addr[CL_BOOKIES][64];
} cluster_t;

/* In the child: serve a bookie under dir until killed. Never returns. */
static void child_serve(const char *dir, int wfd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    log_set_level(LOG_WARN);
    struct ev_loop *loop = ev_loop_new(0);
    bookie_config_t cfg;
    bookie_config_defaults(&cfg);
    cfg.data_dir = dir;
    cfg.journal_sync = false;
    cfg.journal_file_size_bytes = 8u << 20;
    cfg.write_cache_bytes = 8u << 20;
    cfg.read_cache_bytes = 4u << 20;
    bookie_t *bk = NULL;
    bookie_server_t *srv = NULL;
    int port = -1;
    if (loop && bookie_open(loop, &cfg, &bk) == 0 &&
        bookie_server_start(loop, bk, "127.0.0.1", 0, &srv) == 0)
        port = bookie_server_port(srv);
    if (write(wfd, &port, sizeof port) != (ssize_t)sizeof port || port < 0)
        _exit(1);
    close(wfd);
    ev_run(loop, 0);
    _exit(0);
}

/* Forks the bookies before the parent opens anything (no threads yet). */
static void cluster_start(cluster_t *c)
{
    memset(c, 0, sizeof *c);
    c->dir = test_tmpdir("cluster");
    TEST_REQUIRE(c->dir != NULL);
    for (int i = 0; i < CL_BOOKIES; i++) {
        char bdir[512];
        snprintf(bdir, sizeof bdir, "%s/bookie%d", c->dir, i);
        int pfd[2];
        TEST_REQUIRE(pipe(pfd) == 0);
        fflush(NULL);
        pid_t pid = fork();
        TEST_REQUIRE(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            child_serve(bdir, pfd[1]);
        }
        close(pfd[1]);
        c->pid[i] = pid;
        c->port[i] = -1;
        struct pollfd pl = {.fd = pfd[0], .events = POLLIN};
        if (poll(&pl, 1, (int)(CL_WAIT_S * 1000)) != 1 ||
            read(pfd[0], &c->port[i], sizeof c->port[i]) != (ssize_t)sizeof c->port[i])
            c->port[i] = -1;
        close(pfd[0]);
        TEST_REQUIRE(c->port[i] > 0);
        snprintf(c->addr[i], sizeof c->addr[i], "127.0.0.1:%d", c->port[i]);
    }
}

static void cluster_kill(cluster_t *c, int i)
{
    if (c->pid[i] > 0) {
        kill(c->pid[i], SIGKILL);
        waitpid(c->pid[i], NULL, 0);
        c->pid[i] = 0;
    }
}

static void cluster_stop(cluster_t *c)
{
    for (int i = 0; i < CL_BOOKIES; i++)
        cluster_kill(c, i);
    test_rm_rf(c->dir);
    free(c->dir);
}

static int cluster_index(const cluster_t *c, const char *id)
{
    for (int i = 0; i < CL_BOOKIES; i++)
        if (strcmp(c->addr[i], id) == 0)
            return i;
    return -1;
}

/* A ledger client in the parent with a remote handle per bookie. */
typedef struct client {
    ledger_client_t *lc;
    bk_client_t *h[CL_BOOKIES];
} client_t;

static void client_new(struct ev_loop *loop, md_store_t *md, const cluster_t *c, client_t *out)
{
    ledger_client_config_t cfg;
    ledger_client_config_defaults(&cfg);
    cfg.add_timeout_ms = 3000;
    TEST_REQUIRE(ledger_client_new(loop, md, &cfg, &out->lc) == 0);
    for (int i = 0; i < CL_BOOKIES; i++) {
        out->h[i] = bk_client_remote(loop, c->addr[i], 3000);
        TEST_REQUIRE(out->h[i] != NULL);
        TEST_REQUIRE(ledger_client_add_bookie(out->lc, out->h[i]) == 0);
    }
}

static void client_free(client_t *cl)
{
    ledger_client_free(cl->lc);
    for (int i = 0; i < CL_BOOKIES; i++)
        bk_client_free(cl->h[i]);
}

/* ------------------------------------------------------------- entries -- */

/* Entry number i of a stream: its size and bytes depend on (salt, i) only. */
static qbuf_t *stream_entry(int64_t salt, int64_t i)
{
    size_t n = 16 + (size_t)((i * 7919) % 3000);
    qbuf_t *b = qbuf_new(n);
    uint64_t x = (uint64_t)salt * 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0xBF58476D1CE4E5B9ull;
    for (size_t k = 0; k < n; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b->data[k] = (uint8_t)x;
    }
    b->len = (uint32_t)n;
    return b;
}

static bool stream_entry_ok(int64_t salt, int64_t i, const qbuf_t *b)
{
    qbuf_t *want = stream_entry(salt, i);
    bool ok = b && b->len == want->len && memcmp(b->data, want->data, b->len) == 0;
    qbuf_unref(want);
    return ok;
}

/* ------------------------------------------------------ ledger stream -- */

typedef struct lstream {
    struct ev_loop *loop;
    cluster_t *c;
    ledger_t *l;
    int64_t total, next, acked, failed, expect;
    int inflight;
    bool order_ok;
    int first_rc;
    int64_t kill_at; /* SIGKILL the victim when this many are acknowledged */
    int victim;
    volatile bool done;
} lstream_t;

static void lstream_pump(lstream_t *s);

static void lstream_add_cb(int rc, int64_t entry_id, void *arg)
{
    lstream_t *s = arg;
    s->inflight--;
    if (entry_id != s->expect)
        s->order_ok = false;
    s->expect++;
    if (rc == 0) {
        s->acked++;
    } else {
        if (!s->failed)
            s->first_rc = rc;
        s->failed++;
    }
    if (s->acked == s->kill_at && s->victim >= 0)
        cluster_kill(s->c, s->victim); /* mid-stream: CL_WINDOW adds in flight */
    lstream_pump(s);
}

static void lstream_pump(lstream_t *s)
{
    while (s->inflight < CL_WINDOW && s->next < s->total && !s->failed) {
        qbuf_t *b = stream_entry(ledger_id(s->l), s->next);
        int rc = ledger_add(s->l, b, lstream_add_cb, s);
        qbuf_unref(b);
        if (rc == QE_BUSY)
            break;
        if (rc < 0) {
            s->failed++;
            s->first_rc = rc;
            break;
        }
        s->next++;
        s->inflight++;
    }
    if (s->inflight == 0 && (s->next == s->total || s->failed))
        s->done = true;
}

typedef struct wait {
    volatile bool done;
    int rc;
    ledger_t *l;
    managed_ledger_t *ml;
} wait_t;

static void on_open(int rc, ledger_t *l, void *arg)
{
    wait_t *w = arg;
    w->rc = rc;
    w->l = l;
    w->done = true;
}

static void on_done(int rc, void *arg)
{
    wait_t *w = arg;
    w->rc = rc;
    w->done = true;
}

typedef struct lcheck {
    volatile bool done;
    int rc;
    int64_t salt;
    size_t n, bad;
} lcheck_t;

static void lcheck_cb(int rc, int64_t first, qbuf_t *const *entries, size_t n, void *arg)
{
    lcheck_t *k = arg;
    k->rc = rc;
    k->n = n;
    for (size_t i = 0; i < n; i++)
        k->bad += !stream_entry_ok(k->salt, first + (int64_t)i, entries[i]);
    k->done = true;
}

/* Reads 0..last through l in chunks and counts entries that differ. */
static size_t ledger_check_all(struct ev_loop *loop, ledger_t *l, int64_t last)
{
    size_t bad = 0;
    for (int64_t from = 0; from <= last; from += 500) {
        int64_t to = from + 499 < last ? from + 499 : last;
        lcheck_t k = {.salt = ledger_id(l)};
        TEST_REQUIRE(ledger_read(l, from, to, lcheck_cb, &k) == 0);
        TEST_REQUIRE(test_run_until(loop, &k.done, CL_WAIT_S));
        CU_ASSERT_EQUAL(k.rc, 0);
        CU_ASSERT_EQUAL(k.n, (size_t)(to - from + 1));
        bad += k.bad + (k.rc != 0);
    }
    return bad;
}

typedef struct md_wait {
    volatile bool done;
    int rc;
    ledger_md_t md;
} md_wait_t;

static void on_md(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)stat;
    md_wait_t *w = arg;
    w->rc = rc == 0 ? ledger_md_decode(value, len, &w->md) : rc;
    w->done = true;
}

static void read_md(struct ev_loop *loop, md_store_t *md, int64_t lid, md_wait_t *w)
{
    char path[64];
    ledger_md_path(lid, path, sizeof path);
    memset(w, 0, sizeof *w);
    TEST_REQUIRE(md_get(md, path, on_md, w) == 0);
    TEST_REQUIRE(test_run_until(loop, &w->done, CL_WAIT_S));
    TEST_REQUIRE(w->rc == 0);
}

static md_store_t *open_md(struct ev_loop *loop, const cluster_t *c)
{
    char path[512];
    snprintf(path, sizeof path, "%s/md.db", c->dir);
    md_store_t *md = NULL;
    TEST_REQUIRE(md_store_open_embedded(loop, path, &md) == 0);
    return md;
}

/* ------------------------------------------------------------- tests -- */

static void test_ledger_bookie_killed_mid_stream(void)
{
    cluster_t c;
    cluster_start(&c);
    struct ev_loop *loop = ev_loop_new(0);
    md_store_t *md = open_md(loop, &c);
    client_t w1;
    client_new(loop, md, &c, &w1);

    ledger_quorum_t q;
    ledger_quorum_default(ledger_client_bookies_available(w1.lc), &q);
    CU_ASSERT_TRUE(q.ensemble == 3 && q.write_quorum == 3 && q.ack_quorum == 2);
    wait_t cw = {0};
    TEST_REQUIRE(ledger_create(w1.lc, &q, on_open, &cw) == 0);
    TEST_REQUIRE(test_run_until(loop, &cw.done, CL_WAIT_S) && cw.rc == 0);
    int64_t lid = ledger_id(cw.l);
    md_wait_t mw;
    read_md(loop, md, lid, &mw);
    int victim = cluster_index(&c, mw.md.segments[0].bookies[1]);
    TEST_REQUIRE(victim >= 0);
    ledger_md_free(&mw.md);

    enum { N = 3000 };
    lstream_t s = {.loop = loop,
                   .c = &c,
                   .l = cw.l,
                   .total = N,
                   .order_ok = true,
                   .kill_at = N / 3,
                   .victim = victim};
    lstream_pump(&s);
    TEST_REQUIRE(test_run_until(loop, &s.done, 3 * CL_WAIT_S));
    CU_ASSERT_EQUAL(s.failed, 0);
    if (s.failed)
        fprintf(stderr, "first add failure: %s\n", q_strerror(s.first_rc));
    CU_ASSERT_EQUAL(s.acked, N);
    CU_ASSERT_TRUE(s.order_ok);
    CU_ASSERT_EQUAL(c.pid[victim], 0); /* it was killed */
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(cw.l), N - 1);

    /* The ensemble changed: the last segment no longer names the victim. */
    read_md(loop, md, lid, &mw);
    CU_ASSERT_TRUE(mw.md.nsegments >= 2);
    const ledger_segment_t *seg = &mw.md.segments[mw.md.nsegments - 1];
    for (int k = 0; k < mw.md.q.ensemble; k++)
        CU_ASSERT_STRING_NOT_EQUAL(seg->bookies[k], c.addr[victim]);
    CU_ASSERT_TRUE(seg->first_entry_id > 0 && seg->first_entry_id <= N);
    ledger_md_free(&mw.md);

    /* Every acknowledged entry reads back byte for byte, from the writer. */
    CU_ASSERT_EQUAL(ledger_check_all(loop, cw.l, N - 1), 0);

    /* The writer "dies" unclosed; a second client recovers the ledger. */
    client_t w2;
    client_new(loop, md, &c, &w2);
    wait_t ow = {0};
    TEST_REQUIRE(ledger_open(w2.lc, lid, LEDGER_OPEN_RECOVER, on_open, &ow) == 0);
    TEST_REQUIRE(test_run_until(loop, &ow.done, 3 * CL_WAIT_S));
    CU_ASSERT_EQUAL(ow.rc, 0);
    TEST_REQUIRE(ow.l != NULL);
    CU_ASSERT_TRUE(ledger_is_closed(ow.l));
    CU_ASSERT_EQUAL(ledger_last_add_confirmed(ow.l), N - 1);
    CU_ASSERT_EQUAL(ledger_length_bytes(ow.l), ledger_length_bytes(cw.l));
    CU_ASSERT_EQUAL(ledger_check_all(loop, ow.l, N - 1), 0);
    ledger_release(ow.l);

    /* The old writer is fenced. */
    lstream_t s2 = {.loop = loop,
                    .c = &c,
                    .l = cw.l,
                    .total = 1,
                    .order_ok = true,
                    .expect = N,
                    .victim = -1,
                    .kill_at = -1};
    lstream_pump(&s2);
    TEST_REQUIRE(test_run_until(loop, &s2.done, CL_WAIT_S));
    CU_ASSERT_EQUAL(s2.failed, 1);
    CU_ASSERT_EQUAL(s2.first_rc, QE_FENCED);
    wait_t clw = {0};
    int rc = ledger_close(cw.l, on_done, &clw);
    if (rc == 0) {
        TEST_REQUIRE(test_run_until(loop, &clw.done, CL_WAIT_S));
        rc = clw.rc;
    }
    /* Its close loses the compare-and-set and finds the ledger CLOSED by the
     * recovery at its own LAC: that is success (docs/ledger.md, Close). */
    CU_ASSERT_EQUAL(rc, 0);

    client_free(&w2);
    client_free(&w1);
    md_store_close(md);
    ev_loop_destroy(loop);
    cluster_stop(&c);
}

/* ---------------------------------------------------- managed ledger -- */

typedef struct mstream {
    managed_ledger_t *ml;
    cluster_t *c;
    int64_t total, next, acked, failed, expect;
    int inflight;
    bool order_ok;
    int first_rc;
    int64_t kill_at;
    int victim;
    ml_pos_t *pos; /* position of entry i */
    volatile bool done;
} mstream_t;

typedef struct madd {
    mstream_t *s;
    int64_t i;
} madd_t;

static void mstream_pump(mstream_t *s);

static void mstream_add_cb(int rc, ml_pos_t pos, void *arg)
{
    madd_t *a = arg;
    mstream_t *s = a->s;
    s->inflight--;
    if (a->i != s->expect)
        s->order_ok = false;
    s->expect++;
    if (rc == 0) {
        s->pos[a->i] = pos;
        if (a->i > 0 && ml_pos_cmp(s->pos[a->i - 1], pos) >= 0)
            s->order_ok = false;
        s->acked++;
    } else {
        if (!s->failed)
            s->first_rc = rc;
        s->failed++;
    }
    free(a);
    if (s->acked == s->kill_at && s->victim >= 0)
        cluster_kill(s->c, s->victim);
    mstream_pump(s);
}

static void mstream_pump(mstream_t *s)
{
    while (s->inflight < CL_WINDOW && s->next < s->total && !s->failed) {
        madd_t *a = malloc(sizeof *a);
        TEST_REQUIRE(a != NULL);
        *a = (madd_t){s, s->next};
        qbuf_t *b = stream_entry(7, s->next);
        int rc = ml_add(s->ml, b, mstream_add_cb, a);
        qbuf_unref(b);
        if (rc < 0) {
            free(a);
            if (rc == QE_BUSY)
                break;
            s->failed++;
            s->first_rc = rc;
            break;
        }
        s->next++;
        s->inflight++;
    }
    if (s->inflight == 0 && (s->next == s->total || s->failed))
        s->done = true;
}

static void on_ml_open(int rc, managed_ledger_t *ml, void *arg)
{
    wait_t *w = arg;
    w->rc = rc;
    w->ml = ml;
    w->done = true;
}

typedef struct mcheck {
    volatile bool done;
    int rc;
    size_t n;
    ml_pos_t last;
    const ml_pos_t *pos;
    int64_t at; /* stream index of the next entry expected */
    size_t bad;
} mcheck_t;

static void mcheck_cb(int rc, const ml_entry_t *entries, size_t n, void *arg)
{
    mcheck_t *k = arg;
    k->rc = rc;
    k->n = n;
    for (size_t i = 0; i < n; i++, k->at++) {
        k->bad += !stream_entry_ok(7, k->at, entries[i].data);
        k->bad += ml_pos_cmp(entries[i].pos, k->pos[k->at]) != 0;
        k->last = entries[i].pos;
    }
    k->done = true;
}

/* Reads the whole managed ledger; returns entries read, counts mismatches. */
static int64_t ml_check_all(struct ev_loop *loop, managed_ledger_t *ml, const ml_pos_t *pos,
                            int64_t total, size_t *bad)
{
    ml_pos_t from = ml_first_position(ml);
    int64_t at = 0;
    *bad = 0;
    while (at <= total) {
        mcheck_t k = {.pos = pos, .at = at};
        TEST_REQUIRE(ml_read(ml, from, 256, 4u << 20, mcheck_cb, &k) == 0);
        TEST_REQUIRE(test_run_until(loop, &k.done, CL_WAIT_S));
        CU_ASSERT_EQUAL(k.rc, 0);
        *bad += k.bad;
        if (k.rc != 0 || k.n == 0)
            break;
        at = k.at;
        if (at > total) {
            (*bad)++;
            break;
        }
        from = ml_next_position(ml, k.last);
    }
    return at;
}

static void test_managed_ledger_bookie_killed_mid_stream(void)
{
    cluster_t c;
    cluster_start(&c);
    struct ev_loop *loop = ev_loop_new(0);
    md_store_t *md = open_md(loop, &c);
    client_t w1;
    client_new(loop, md, &c, &w1);
    ml_factory_t *f1;
    TEST_REQUIRE(ml_factory_new(loop, md, w1.lc, 8u << 20, &f1) == 0);
    ml_config_t cfg;
    ml_config_defaults(&cfg);
    ledger_quorum_default(CL_BOOKIES, &cfg.quorum);
    cfg.max_entries_per_ledger = 700; /* rollovers before and after the kill */
    cfg.retention_time_s = -1;
    cfg.retention_size_bytes = -1;
    wait_t ow = {0};
    TEST_REQUIRE(ml_open(f1, "public/default/persistent/cluster", &cfg, on_ml_open, &ow) == 0);
    TEST_REQUIRE(test_run_until(loop, &ow.done, CL_WAIT_S) && ow.rc == 0);

    enum { N = 2500 };
    mstream_t s = {.ml = ow.ml,
                   .c = &c,
                   .total = N,
                   .order_ok = true,
                   .kill_at = 1000,
                   .victim = 2,
                   .pos = calloc(N, sizeof(ml_pos_t))};
    TEST_REQUIRE(s.pos != NULL);
    mstream_pump(&s);
    TEST_REQUIRE(test_run_until(loop, &s.done, 3 * CL_WAIT_S));
    CU_ASSERT_EQUAL(s.failed, 0);
    if (s.failed)
        fprintf(stderr, "first ml add failure: %s\n", q_strerror(s.first_rc));
    CU_ASSERT_EQUAL(s.acked, N);
    CU_ASSERT_TRUE(s.order_ok);
    CU_ASSERT_EQUAL(c.pid[2], 0);
    ml_stats_t st;
    ml_get_stats(ow.ml, &st);
    CU_ASSERT_TRUE(st.ledgers_count >= 3);

    size_t bad = 0;
    CU_ASSERT_EQUAL(ml_check_all(loop, ow.ml, s.pos, N, &bad), N);
    CU_ASSERT_EQUAL(bad, 0);

    /* A second broker takes the log over without the first closing it: its
     * current ledger is recovered (fenced, closed at the last entry). */
    client_t w2;
    client_new(loop, md, &c, &w2);
    ml_factory_t *f2;
    TEST_REQUIRE(ml_factory_new(loop, md, w2.lc, 8u << 20, &f2) == 0);
    wait_t ow2 = {0};
    TEST_REQUIRE(ml_open(f2, "public/default/persistent/cluster", &cfg, on_ml_open, &ow2) == 0);
    TEST_REQUIRE(test_run_until(loop, &ow2.done, 3 * CL_WAIT_S));
    CU_ASSERT_EQUAL(ow2.rc, 0);
    TEST_REQUIRE(ow2.ml != NULL);
    CU_ASSERT_EQUAL(ml_count_entries(ow2.ml, ML_POS_EARLIEST, ml_last_confirmed(ow2.ml)),
                    (uint64_t)N);
    CU_ASSERT_EQUAL(ml_check_all(loop, ow2.ml, s.pos, N, &bad), N);
    CU_ASSERT_EQUAL(bad, 0);

    /* The first broker's next add fails (its ledger is fenced). */
    mstream_t s2 = {.ml = ow.ml,
                    .c = &c,
                    .total = N + 1,
                    .next = N,
                    .expect = N,
                    .order_ok = true,
                    .kill_at = -1,
                    .victim = -1,
                    .pos = calloc(N + 1, sizeof(ml_pos_t))};
    mstream_pump(&s2);
    TEST_REQUIRE(test_run_until(loop, &s2.done, CL_WAIT_S));
    CU_ASSERT_EQUAL(s2.failed, 1);
    CU_ASSERT_EQUAL(s2.first_rc, QE_FENCED);
    free(s2.pos);

    wait_t cl = {0};
    if (ml_close(ow.ml, on_done, &cl) == 0)
        TEST_REQUIRE(test_run_until(loop, &cl.done, CL_WAIT_S));
    cl = (wait_t){0};
    TEST_REQUIRE(ml_close(ow2.ml, on_done, &cl) == 0);
    TEST_REQUIRE(test_run_until(loop, &cl.done, CL_WAIT_S));
    CU_ASSERT_EQUAL(cl.rc, 0);
    ml_factory_free(f2);
    ml_factory_free(f1);
    free(s.pos);
    client_free(&w2);
    client_free(&w1);
    md_store_close(md);
    ev_loop_destroy(loop);
    cluster_stop(&c);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("cluster", NULL, NULL);
    CU_add_test(s, "ledger E3 Qw3 Qa2 over TCP, bookie SIGKILLed mid-stream",
                test_ledger_bookie_killed_mid_stream);
    CU_add_test(s, "managed ledger over TCP, bookie SIGKILLed mid-stream",
                test_managed_ledger_bookie_killed_mid_stream);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    return test_main(argc, argv, register_suites);
}
