/*
 * Unit tests of storage/metadata/, embedded backend: versions and
 * compare-and-set, deletes (plain, versioned, non-empty, recursive), listing
 * with implied parents, ephemeral keys (session close, crash + reopen),
 * watches, durability across reopen, call order, bounds, and bad input.
 *
 * Every test opens a fresh store in its own temporary directory (fixture_open)
 * and waits for each callback with a bounded test_run_until().
 */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "storage/metadata/metadata.h"
#include "storage/metadata/metadata_int.h"
#include "tests/unit/support/test_support.h"

#define WAIT_S 30.0

static struct ev_loop *loop;
static md_store_t *store;
static char *tmpdir;
static char dbpath[512];

static void fixture_open(void)
{
    loop = ev_loop_new(0);
    tmpdir = test_tmpdir("meta");
    TEST_REQUIRE(loop != NULL && tmpdir != NULL);
    snprintf(dbpath, sizeof dbpath, "%s/metadata.db", tmpdir);
    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
    TEST_REQUIRE(store != NULL);
}

static void fixture_reopen(void)
{
    md_store_close(store);
    store = NULL;
    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
}

static void fixture_close(void)
{
    md_store_close(store);
    store = NULL;
    ev_loop_destroy(loop);
    loop = NULL;
    test_rm_rf(tmpdir);
    free(tmpdir);
    tmpdir = NULL;
}

/* ------------------------------------------------- synchronous wrappers -- */

typedef struct {
    volatile bool done;
    int calls;
    int rc;
    md_stat_t stat;
    char value[256];
    size_t len;
    char names[64][64];
    size_t n;
} res_t;

static void put_cb(int rc, const md_stat_t *stat, void *arg)
{
    res_t *r = arg;
    r->rc = rc;
    if (stat)
        r->stat = *stat;
    r->calls++;
    r->done = true;
}

static void get_cb(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    res_t *r = arg;
    r->rc = rc;
    r->len = len;
    if (stat)
        r->stat = *stat;
    if (value && len < sizeof r->value)
        memcpy(r->value, value, len);
    r->value[len < sizeof r->value ? len : 0] = '\0';
    r->calls++;
    r->done = true;
}

static void done_cb(int rc, void *arg)
{
    res_t *r = arg;
    r->rc = rc;
    r->calls++;
    r->done = true;
}

static void list_cb(int rc, const char *const *children, size_t n, void *arg)
{
    res_t *r = arg;
    r->rc = rc;
    r->n = n;
    for (size_t i = 0; i < n && i < 64; i++)
        snprintf(r->names[i], sizeof r->names[i], "%s", children[i]);
    r->calls++;
    r->done = true;
}

static int sync_put(const char *path, const char *value, int64_t version, md_session_t *s,
                    md_stat_t *stat)
{
    res_t r = {0};
    int rc = md_put(store, path, value, strlen(value), version, s, put_cb, &r);
    if (rc)
        return rc;
    TEST_REQUIRE(test_run_until(loop, &r.done, WAIT_S));
    CU_ASSERT_EQUAL(r.calls, 1);
    if (stat)
        *stat = r.stat;
    return r.rc;
}

/* Returns the rc; *r receives the value and stat. */
static int sync_get(const char *path, res_t *r)
{
    memset(r, 0, sizeof *r);
    int rc = md_get(store, path, get_cb, r);
    if (rc)
        return rc;
    TEST_REQUIRE(test_run_until(loop, &r->done, WAIT_S));
    return r->rc;
}

static int sync_delete(const char *path, int64_t version)
{
    res_t r = {0};
    int rc = md_delete(store, path, version, done_cb, &r);
    if (rc)
        return rc;
    TEST_REQUIRE(test_run_until(loop, &r.done, WAIT_S));
    return r.rc;
}

static int sync_delete_recursive(const char *path)
{
    res_t r = {0};
    int rc = md_delete_recursive(store, path, done_cb, &r);
    if (rc)
        return rc;
    TEST_REQUIRE(test_run_until(loop, &r.done, WAIT_S));
    return r.rc;
}

static int sync_list(const char *path, res_t *r)
{
    memset(r, 0, sizeof *r);
    int rc = md_list(store, path, list_cb, r);
    if (rc)
        return rc;
    TEST_REQUIRE(test_run_until(loop, &r->done, WAIT_S));
    return r->rc;
}

/* The children of path joined with ',' (for compact assertions). */
static const char *list_joined(const char *path)
{
    static char out[1024];
    res_t r;
    out[0] = '\0';
    CU_ASSERT_EQUAL(sync_list(path, &r), 0);
    for (size_t i = 0; i < r.n && i < 64; i++) {
        strcat(out, i ? "," : "");
        strcat(out, r.names[i]);
    }
    return out;
}

/* ----------------------------------------------------------------- tests -- */

static void test_put_get_versions(void)
{
    fixture_open();
    md_stat_t st;
    res_t r;
    CU_ASSERT_EQUAL(sync_put("/a", "v1", MD_VERSION_ANY, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 0);
    CU_ASSERT_FALSE(st.ephemeral);
    CU_ASSERT_TRUE(st.created_ms > 0 && st.modified_ms == st.created_ms);
    CU_ASSERT_EQUAL(sync_get("/a", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "v1");
    CU_ASSERT_EQUAL(r.len, 2);
    CU_ASSERT_EQUAL(r.stat.version, 0);
    int64_t created = r.stat.created_ms;

    CU_ASSERT_EQUAL(sync_put("/a", "value-2", MD_VERSION_ANY, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 1);
    CU_ASSERT_EQUAL(st.created_ms, created);
    CU_ASSERT_TRUE(st.modified_ms >= created);
    CU_ASSERT_EQUAL(sync_get("/a", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "value-2");
    CU_ASSERT_EQUAL(r.stat.version, 1);

    CU_ASSERT_EQUAL(sync_put("/empty", "", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_get("/empty", &r), 0);
    CU_ASSERT_EQUAL(r.len, 0);
    CU_ASSERT_EQUAL(sync_get("/missing", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(r.calls, 1);
    fixture_close();
}

static void test_cas(void)
{
    fixture_open();
    md_stat_t st;
    res_t r;
    CU_ASSERT_EQUAL(sync_put("/c", "0", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/c", "1", 0, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 1);
    CU_ASSERT_EQUAL(sync_put("/c", "stale", 0, NULL, NULL), QE_BAD_VERSION);
    CU_ASSERT_EQUAL(sync_get("/c", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "1");
    CU_ASSERT_EQUAL(r.stat.version, 1);
    CU_ASSERT_EQUAL(sync_put("/c", "2", 1, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 2);
    /* A compare-and-set against a key that is not there loses. */
    CU_ASSERT_EQUAL(sync_put("/nope", "x", 3, NULL, NULL), QE_BAD_VERSION);
    CU_ASSERT_EQUAL(sync_get("/nope", &r), QE_NOT_FOUND);
    fixture_close();
}

static void test_version_new(void)
{
    fixture_open();
    md_stat_t st;
    res_t r;
    CU_ASSERT_EQUAL(sync_put("/n", "first", MD_VERSION_NEW, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 0);
    CU_ASSERT_EQUAL(sync_put("/n", "second", MD_VERSION_NEW, NULL, NULL), QE_EXISTS);
    CU_ASSERT_EQUAL(sync_get("/n", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "first");
    CU_ASSERT_EQUAL(r.stat.version, 0);
    fixture_close();
}

static void test_delete_with_version(void)
{
    fixture_open();
    res_t r;
    CU_ASSERT_EQUAL(sync_put("/d", "a", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/d", "b", MD_VERSION_ANY, NULL, NULL), 0); /* version 1 */
    CU_ASSERT_EQUAL(sync_delete("/d", 0), QE_BAD_VERSION);
    CU_ASSERT_EQUAL(sync_get("/d", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "b");
    CU_ASSERT_EQUAL(sync_delete("/d", 1), 0);
    CU_ASSERT_EQUAL(sync_get("/d", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_delete("/d", MD_VERSION_ANY), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_put("/d", "again", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_delete("/d", MD_VERSION_ANY), 0);
    CU_ASSERT_EQUAL(sync_get("/d", &r), QE_NOT_FOUND);
    fixture_close();
}

static void test_not_empty_and_recursive(void)
{
    fixture_open();
    res_t r;
    const char *keys[] = {"/r", "/r/a", "/r/a/b", "/r/c", "/rx", "/r-x", "/r0"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CU_ASSERT_EQUAL(sync_put(keys[i], keys[i], MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_delete("/r", MD_VERSION_ANY), QE_NOT_EMPTY);
    CU_ASSERT_EQUAL(sync_delete("/r/a", MD_VERSION_ANY), QE_NOT_EMPTY);
    CU_ASSERT_EQUAL(sync_get("/r/a", &r), 0);
    CU_ASSERT_EQUAL(sync_delete_recursive("/r"), 0);
    CU_ASSERT_EQUAL(sync_get("/r", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_get("/r/a", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_get("/r/a/b", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_get("/r/c", &r), QE_NOT_FOUND);
    /* Siblings whose names share the prefix are untouched. */
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "r-x,r0,rx");
    CU_ASSERT_EQUAL(sync_get("/rx", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "/rx");
    /* Nothing there: nothing to do, no error. */
    CU_ASSERT_EQUAL(sync_delete_recursive("/never"), 0);
    /* A subtree under an implied parent. */
    CU_ASSERT_EQUAL(sync_put("/i/j/k", "k", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_delete_recursive("/i"), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "r-x,r0,rx");
    fixture_close();
}

/* Puts "v" at each of keys (any version). */
static void put_keys(const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(sync_put(keys[i], "v", MD_VERSION_ANY, NULL, NULL), 0);
}

static void test_list_sorted_implied_parents(void)
{
    fixture_open();
    res_t r;
    const char *keys[] = {"/l/b", "/l/a", "/l/c/d/e", "/l/B", "/l/a0"};
    put_keys(keys, sizeof keys / sizeof keys[0]);
    CU_ASSERT_STRING_EQUAL(list_joined("/l"), "B,a,a0,b,c");
    CU_ASSERT_STRING_EQUAL(list_joined("/l/c"), "d");
    CU_ASSERT_STRING_EQUAL(list_joined("/l/c/d"), "e");
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "l");
    CU_ASSERT_EQUAL(sync_get("/l/c", &r), QE_NOT_FOUND); /* implied, not a key */
    CU_ASSERT_EQUAL(sync_delete("/l/c", MD_VERSION_ANY), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(sync_list("/nothing", &r), 0);
    CU_ASSERT_EQUAL(r.n, 0);
    CU_ASSERT_EQUAL(sync_list("/l/a", &r), 0); /* a key without children */
    CU_ASSERT_EQUAL(r.n, 0);

    /* Removing the only key below implied parents removes them from listings. */
    CU_ASSERT_EQUAL(sync_delete("/l/c/d/e", MD_VERSION_ANY), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/l"), "B,a,a0,b");
    CU_ASSERT_STRING_EQUAL(list_joined("/l/c"), "");

    /* A key created over an implied parent stays when its child goes. */
    CU_ASSERT_EQUAL(sync_put("/m/x/y", "y", MD_VERSION_ANY, NULL, NULL), 0);
    md_stat_t st;
    CU_ASSERT_EQUAL(sync_put("/m/x", "x", MD_VERSION_NEW, NULL, &st), 0);
    CU_ASSERT_EQUAL(st.version, 0);
    CU_ASSERT_EQUAL(sync_delete("/m/x", MD_VERSION_ANY), QE_NOT_EMPTY);
    CU_ASSERT_EQUAL(sync_delete("/m/x/y", MD_VERSION_ANY), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/m"), "x");
    CU_ASSERT_EQUAL(sync_delete("/m/x", 0), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/m"), "");
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "l");
    fixture_close();
}

/* --------------------------------------------------------------- watches -- */

typedef struct {
    char log[32][48];
    int n;
    md_watch_t *self; /* unwatched from inside its first callback when set */
} watch_log_t;

static void watch_record(int kind, const char *path, void *arg)
{
    watch_log_t *w = arg;
    if (w->n < 32)
        snprintf(w->log[w->n++], sizeof w->log[0], "%c%s", kind == MD_WATCH_DATA ? 'D' : 'C', path);
    if (w->self) {
        md_unwatch(w->self);
        w->self = NULL;
    }
}

static void test_ephemeral_session_close(void)
{
    fixture_open();
    res_t r;
    md_session_t *s = md_session_open(store);
    md_session_t *other = md_session_open(store);
    TEST_REQUIRE(s != NULL && other != NULL);
    md_stat_t st;
    CU_ASSERT_EQUAL(sync_put("/e/1", "owned", MD_VERSION_NEW, s, &st), 0);
    CU_ASSERT_TRUE(st.ephemeral);
    CU_ASSERT_EQUAL(sync_put("/e/2", "persistent", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/e/3", "other's", MD_VERSION_NEW, other, NULL), 0);
    /* An ephemeral key with a child below it: the child stays. */
    CU_ASSERT_EQUAL(sync_put("/p", "owned", MD_VERSION_NEW, s, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/p/c", "child", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_get("/e/1", &r), 0);
    CU_ASSERT_TRUE(r.stat.ephemeral);
    CU_ASSERT_EQUAL(sync_get("/e/2", &r), 0);
    CU_ASSERT_FALSE(r.stat.ephemeral);

    watch_log_t gone = {0};
    md_watch_t *w = md_watch(store, "/e/1", MD_WATCH_DATA, watch_record, &gone);
    TEST_REQUIRE(w != NULL);
    md_session_close(s); /* queued: the get below runs after it */
    CU_ASSERT_EQUAL(sync_get("/e/1", &r), QE_NOT_FOUND);
    CU_ASSERT_EQUAL(gone.n, 1); /* the deletion was watched */
    md_unwatch(w);
    CU_ASSERT_EQUAL(sync_get("/p", &r), QE_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(list_joined("/e"), "2,3");
    CU_ASSERT_STRING_EQUAL(list_joined("/p"), "c");
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "e,p");
    md_session_close(other);
    CU_ASSERT_STRING_EQUAL(list_joined("/e"), "2");
    fixture_close();
}

/* Child process: writes keys, then dies by SIGKILL without closing anything. */
static void crash_child(const char *path)
{
    struct ev_loop *l = ev_loop_new(0);
    md_store_t *st = NULL;
    if (!l || md_store_open_embedded(l, path, &st) != 0)
        _exit(3);
    md_session_t *s = md_session_open(st);
    res_t r[3] = {{0}};
    md_put(st, "/persist", "p", 1, MD_VERSION_NEW, NULL, put_cb, &r[0]);
    md_put(st, "/eph/owned", "e", 1, MD_VERSION_NEW, s, put_cb, &r[1]);
    md_put(st, "/persist2", "q", 1, MD_VERSION_NEW, NULL, put_cb, &r[2]);
    if (!test_run_until(l, &r[2].done, WAIT_S) || r[0].rc || r[1].rc || r[2].rc)
        _exit(4);
    raise(SIGKILL);
    _exit(5);
}

static void test_ephemeral_gone_after_crash_and_reopen(void)
{
    fixture_open();
    md_store_close(store); /* the child owns the file for a while */
    store = NULL;
    fflush(NULL);
    pid_t pid = fork();
    TEST_REQUIRE(pid >= 0);
    if (pid == 0)
        crash_child(dbpath);
    int status = 0;
    TEST_REQUIRE(waitpid(pid, &status, 0) == pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
    res_t r;
    CU_ASSERT_EQUAL(sync_get("/persist", &r), 0); /* acknowledged, so durable */
    CU_ASSERT_STRING_EQUAL(r.value, "p");
    CU_ASSERT_EQUAL(sync_get("/persist2", &r), 0);
    CU_ASSERT_EQUAL(sync_get("/eph/owned", &r), QE_NOT_FOUND);
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "persist,persist2");
    fixture_close();
}

static void test_watch_data_and_children(void)
{
    fixture_open();
    watch_log_t data = {0}, kids = {0}, root = {0}, deep = {0};
    md_watch_t *wd = md_watch(store, "/w/k", MD_WATCH_DATA, watch_record, &data);
    md_watch_t *wc = md_watch(store, "/w", MD_WATCH_CHILDREN, watch_record, &kids);
    md_watch_t *wr = md_watch(store, "/", MD_WATCH_CHILDREN, watch_record, &root);
    md_watch_t *wx = md_watch(store, "/deep", MD_WATCH_CHILDREN, watch_record, &deep);
    TEST_REQUIRE(wd && wc && wr && wx);

    CU_ASSERT_EQUAL(sync_put("/w/k", "1", MD_VERSION_ANY, NULL, NULL), 0); /* create */
    CU_ASSERT_EQUAL(data.n, 1);
    CU_ASSERT_EQUAL(kids.n, 1);
    CU_ASSERT_EQUAL(root.n, 1); /* "w" appeared at the top */
    CU_ASSERT_EQUAL(sync_put("/w/k", "2", MD_VERSION_ANY, NULL, NULL), 0); /* update */
    CU_ASSERT_EQUAL(data.n, 2);
    CU_ASSERT_EQUAL(kids.n, 1);
    CU_ASSERT_EQUAL(sync_put("/w/j", "3", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(data.n, 2);
    CU_ASSERT_EQUAL(kids.n, 2);
    CU_ASSERT_EQUAL(sync_put("/w/k", "x", 0, NULL, NULL), QE_BAD_VERSION); /* no change */
    CU_ASSERT_EQUAL(data.n, 2);
    CU_ASSERT_EQUAL(sync_delete("/w/k", MD_VERSION_ANY), 0);
    CU_ASSERT_EQUAL(data.n, 3);
    CU_ASSERT_EQUAL(kids.n, 3);
    CU_ASSERT_STRING_EQUAL(data.log[0], "D/w/k");
    CU_ASSERT_STRING_EQUAL(data.log[2], "D/w/k");
    CU_ASSERT_STRING_EQUAL(kids.log[2], "C/w");
    CU_ASSERT_STRING_EQUAL(root.log[0], "C/");

    /* A grandchild creates an implied child: the children watch fires. */
    CU_ASSERT_EQUAL(sync_put("/deep/a/b", "v", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(deep.n, 1);
    CU_ASSERT_EQUAL(sync_delete_recursive("/deep"), 0);
    CU_ASSERT_EQUAL(deep.n, 2); /* one event for one call */
    /* The same with create-only puts (inserted without a read first). */
    CU_ASSERT_EQUAL(sync_put("/deep/a/b", "v", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(deep.n, 3);
    CU_ASSERT_EQUAL(sync_put("/deep/a/c", "v", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(deep.n, 3); /* "a" was there already */
    CU_ASSERT_EQUAL(sync_put("/deep/a/c", "w", MD_VERSION_NEW, NULL, NULL), QE_EXISTS);
    CU_ASSERT_EQUAL(sync_put("/deep/a", "v", MD_VERSION_NEW, NULL, NULL), 0); /* was implied */
    CU_ASSERT_EQUAL(deep.n, 3);
    CU_ASSERT_EQUAL(sync_put("/deep/a", "v", MD_VERSION_NEW, NULL, NULL), QE_EXISTS);
    CU_ASSERT_STRING_EQUAL(list_joined("/deep"), "a");
    CU_ASSERT_STRING_EQUAL(list_joined("/deep/a"), "b,c");
    CU_ASSERT_EQUAL(sync_delete_recursive("/deep"), 0);
    CU_ASSERT_EQUAL(deep.n, 4);
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "w");

    md_unwatch(wd);
    CU_ASSERT_EQUAL(sync_put("/w/k", "again", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(data.n, 3);
    CU_ASSERT_EQUAL(kids.n, 4);
    md_unwatch(wc);
    md_unwatch(wr);
    md_unwatch(wx);

    /* Unwatch from inside the callback: called once, never again. */
    watch_log_t once = {0};
    once.self = md_watch(store, "/once", MD_WATCH_DATA, watch_record, &once);
    TEST_REQUIRE(once.self != NULL);
    CU_ASSERT_EQUAL(sync_put("/once", "1", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/once", "2", MD_VERSION_ANY, NULL, NULL), 0);
    CU_ASSERT_EQUAL(once.n, 1);
    fixture_close();
}

/* Watch events of a change come before the callback of the call that made it. */
static char order_log[8][32];
static int order_n;

static void order_watch(int kind, const char *path, void *arg)
{
    (void)kind;
    (void)arg;
    snprintf(order_log[order_n++ & 7], 32, "watch %s", path);
}

static void order_put_cb(int rc, const md_stat_t *stat, void *arg)
{
    (void)stat;
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(order_log[order_n++ & 7], 32, "put done");
    *(volatile bool *)arg = true;
}

static void test_watch_before_callback(void)
{
    fixture_open();
    order_n = 0;
    volatile bool done = false;
    md_watch_t *w = md_watch(store, "/o", MD_WATCH_DATA, order_watch, NULL);
    TEST_REQUIRE(w != NULL);
    CU_ASSERT_EQUAL(md_put(store, "/o", "v", 1, MD_VERSION_ANY, NULL, order_put_cb, (void *)&done),
                    0);
    CU_ASSERT_EQUAL(order_n, 0); /* never inline */
    TEST_REQUIRE(test_run_until(loop, &done, WAIT_S));
    CU_ASSERT_EQUAL(order_n, 2);
    CU_ASSERT_STRING_EQUAL(order_log[0], "watch /o");
    CU_ASSERT_STRING_EQUAL(order_log[1], "put done");
    md_unwatch(w);
    fixture_close();
}

static void test_durable_across_reopen(void)
{
    fixture_open();
    char path[64], value[64];
    for (int i = 0; i < 100; i++) {
        snprintf(path, sizeof path, "/dur/k%03d", i);
        snprintf(value, sizeof value, "value-%d", i);
        CU_ASSERT_EQUAL(sync_put(path, value, MD_VERSION_ANY, NULL, NULL), 0);
    }
    CU_ASSERT_EQUAL(sync_put("/dur/k007", "updated", 0, NULL, NULL), 0);
    fixture_reopen();
    res_t r;
    for (int i = 0; i < 100; i++) {
        snprintf(path, sizeof path, "/dur/k%03d", i);
        snprintf(value, sizeof value, "value-%d", i);
        CU_ASSERT_EQUAL(sync_get(path, &r), 0);
        CU_ASSERT_STRING_EQUAL(r.value, i == 7 ? "updated" : value);
        CU_ASSERT_EQUAL(r.stat.version, i == 7 ? 1 : 0);
    }
    CU_ASSERT_EQUAL(sync_list("/dur", &r), 0);
    CU_ASSERT_EQUAL(r.n, 100);
    fixture_close();
}

/* ---------------------------------------------- order, groups and bounds -- */

#define ORDER_OPS 2000

typedef struct {
    int seen[ORDER_OPS];
    int n;
    int errors;
    int mismatched;
    volatile bool done;
} order_t;

static order_t order;
static int order_idx[ORDER_OPS];

static void order_cb_common(int idx, int rc)
{
    if (rc)
        order.errors++;
    order.seen[order.n++] = idx;
    if (order.n == ORDER_OPS)
        order.done = true;
}

static void order_put_done(int rc, const md_stat_t *stat, void *arg)
{
    (void)stat;
    order_cb_common(*(int *)arg, rc);
}

static void order_get_done(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)stat;
    int idx = *(int *)arg;
    char want[32];
    snprintf(want, sizeof want, "v%d", idx - 1); /* the put just before it */
    if (rc || len != strlen(want) || memcmp(value, want, len) != 0)
        order.mismatched++;
    order_cb_common(idx, 0);
}

static void test_callback_order(void)
{
    fixture_open();
    memset(&order, 0, sizeof order);
    char value[32];
    for (int i = 0; i < ORDER_OPS; i++) {
        order_idx[i] = i;
        if (i % 2 == 0) { /* even: put /ord = v<i>; odd: get it back */
            snprintf(value, sizeof value, "v%d", i);
            CU_ASSERT_EQUAL(md_put(store, "/ord", value, strlen(value), MD_VERSION_ANY, NULL,
                                   order_put_done, &order_idx[i]),
                            0);
        } else {
            CU_ASSERT_EQUAL(md_get(store, "/ord", order_get_done, &order_idx[i]), 0);
        }
    }
    TEST_REQUIRE(test_run_until(loop, &order.done, WAIT_S));
    CU_ASSERT_EQUAL(order.errors, 0);
    CU_ASSERT_EQUAL(order.mismatched, 0);
    int in_order = 1;
    for (int i = 0; i < ORDER_OPS; i++)
        in_order &= order.seen[i] == i;
    CU_ASSERT_TRUE(in_order);
    fixture_close();
}

/* Every refusal inside a group commit (lost compare-and-set, create-only put
 * of a key that exists, delete of a missing or non-empty key) changes nothing
 * and leaves the other operations of the group alone. */
static void test_group_with_failed_cas(void)
{
    fixture_open();
    res_t r[9] = {{0}};
    CU_ASSERT_EQUAL(md_put(store, "/g0", "0", 1, MD_VERSION_ANY, NULL, put_cb, &r[0]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g1", "1", 1, MD_VERSION_NEW, NULL, put_cb, &r[1]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g1", "x", 1, 7, NULL, put_cb, &r[2]), 0);
    CU_ASSERT_EQUAL(md_delete(store, "/g0", 9, done_cb, &r[3]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g2", "2", 1, MD_VERSION_NEW, NULL, put_cb, &r[4]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g1", "y", 1, MD_VERSION_NEW, NULL, put_cb, &r[5]), 0);
    CU_ASSERT_EQUAL(md_delete(store, "/g9", MD_VERSION_ANY, done_cb, &r[6]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g3/a/b", "b", 1, MD_VERSION_ANY, NULL, put_cb, &r[7]), 0);
    CU_ASSERT_EQUAL(md_put(store, "/g3", "3", 1, MD_VERSION_ANY, NULL, put_cb, &r[8]), 0);
    TEST_REQUIRE(test_run_until(loop, &r[8].done, WAIT_S));
    res_t nonempty = {0};
    CU_ASSERT_EQUAL(md_delete(store, "/g3", MD_VERSION_ANY, done_cb, &nonempty), 0);
    TEST_REQUIRE(test_run_until(loop, &nonempty.done, WAIT_S));
    CU_ASSERT_EQUAL(r[0].rc, 0);
    CU_ASSERT_EQUAL(r[1].rc, 0);
    CU_ASSERT_EQUAL(r[2].rc, QE_BAD_VERSION);
    CU_ASSERT_EQUAL(r[3].rc, QE_BAD_VERSION);
    CU_ASSERT_EQUAL(r[4].rc, 0);
    CU_ASSERT_EQUAL(r[5].rc, QE_EXISTS);
    CU_ASSERT_EQUAL(r[6].rc, QE_NOT_FOUND);
    CU_ASSERT_EQUAL(r[7].rc, 0);
    CU_ASSERT_EQUAL(r[8].rc, 0);
    CU_ASSERT_EQUAL(nonempty.rc, QE_NOT_EMPTY);
    fixture_reopen();
    res_t g;
    CU_ASSERT_EQUAL(sync_get("/g1", &g), 0);
    CU_ASSERT_STRING_EQUAL(g.value, "1");
    CU_ASSERT_EQUAL(g.stat.version, 0);
    CU_ASSERT_EQUAL(sync_get("/g2", &g), 0);
    CU_ASSERT_EQUAL(sync_get("/g0", &g), 0);
    CU_ASSERT_EQUAL(sync_get("/g3/a/b", &g), 0);
    CU_ASSERT_EQUAL(sync_get("/g3", &g), 0);
    CU_ASSERT_STRING_EQUAL(g.value, "3");
    fixture_close();
}

/* Runs one put inside the open transaction; returns md_db_exec's result. */
/* A worker-side handle on a new database in a temporary directory (returned,
 * for db_close_tmp). */
static char *db_open_tmp(md_db_t *d)
{
    char *dir = test_tmpdir("meta");
    TEST_REQUIRE(dir != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/m.db", dir);
    TEST_REQUIRE(md_db_open(d, path) == 0);
    return dir;
}

static void db_close_tmp(md_db_t *d, char *dir)
{
    md_db_close(d);
    test_rm_rf(dir);
    free(dir);
}

static int db_put(md_db_t *d, const char *path, md_op_t *op)
{
    *op = (md_op_t){.kind = MD_OP_PUT,
                    .path = (char *)path,
                    .value = "v",
                    .len = 1,
                    .expected_version = MD_VERSION_ANY};
    return md_db_exec(d, op);
}

static bool db_has(md_db_t *d, const char *path)
{
    md_op_t op = {.kind = MD_OP_GET, .path = (char *)path};
    int rc = md_db_exec(d, &op);
    bool found = rc == 0 && op.rc == 0;
    md_op_free_results(&op);
    return found;
}

/* An operation that fails after writing part of its change makes the batch
 * fail as a whole (md_db_exec returns an error, the transaction must be
 * rolled back); one that fails before writing anything fails alone. Failures
 * are injected with triggers that abort the insert of one path: "/x/a" is an
 * implicit ancestor inserted after the key "/x/a/b"; "/y/z" is the key
 * itself, the operation's first write. */
static void test_half_written_fails_batch(void)
{
    md_db_t d;
    char *dir = db_open_tmp(&d);
    TEST_REQUIRE(sqlite3_exec(d.db,
                              "CREATE TEMP TRIGGER fail_x BEFORE INSERT ON keys"
                              " WHEN NEW.path IN ('/x/a', '/y/z')"
                              " BEGIN SELECT RAISE(ABORT, 'injected'); END;",
                              NULL, NULL, NULL) == SQLITE_OK);

    /* Refused before its first write: the others of the batch commit. */
    md_op_t a, b, c;
    TEST_REQUIRE(md_db_begin(&d) == 0);
    CU_ASSERT_EQUAL(db_put(&d, "/k1", &a), 0);
    CU_ASSERT_EQUAL(db_put(&d, "/y/z", &b), 0);
    CU_ASSERT_EQUAL(b.rc, -EIO);
    CU_ASSERT_EQUAL(db_put(&d, "/k2", &c), 0);
    CU_ASSERT_EQUAL(a.rc, 0);
    CU_ASSERT_EQUAL(c.rc, 0);
    CU_ASSERT_EQUAL(md_db_commit(&d), 0);
    CU_ASSERT_TRUE(db_has(&d, "/k1"));
    CU_ASSERT_TRUE(db_has(&d, "/k2"));
    CU_ASSERT_FALSE(db_has(&d, "/y/z"));
    CU_ASSERT_FALSE(db_has(&d, "/y"));

    /* Failed half-written: the batch must not commit; after the rollback
     * nothing of it is there, neither the key nor the earlier operation. */
    TEST_REQUIRE(md_db_begin(&d) == 0);
    CU_ASSERT_EQUAL(db_put(&d, "/k3", &a), 0);
    CU_ASSERT_TRUE(db_put(&d, "/x/a/b", &b) < 0);
    CU_ASSERT_EQUAL(b.rc, -EIO);
    md_db_rollback(&d);
    CU_ASSERT_FALSE(db_has(&d, "/k3"));
    CU_ASSERT_FALSE(db_has(&d, "/x/a/b"));
    md_op_free_results(&a);
    md_op_free_results(&b);
    md_op_free_results(&c);

    db_close_tmp(&d, dir);
}

/* Rows in the table that break invariant I1 (a row whose parent has no row)
 * or I2 (an implicit row without children). */
static int db_broken_rows(md_db_t *d)
{
    sqlite3_stmt *st = NULL;
    TEST_REQUIRE(
        sqlite3_prepare_v2(d->db,
                           "SELECT (SELECT count(*) FROM keys k WHERE k.parent != '/'"
                           " AND NOT EXISTS (SELECT 1 FROM keys p WHERE p.path = k.parent))"
                           " + (SELECT count(*) FROM keys k WHERE k.implicit = 1"
                           " AND NOT EXISTS (SELECT 1 FROM keys c WHERE c.parent = k.path))",
                           -1, &st, NULL) == SQLITE_OK);
    TEST_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Runs op alone in a transaction, committed or (rollback) rolled back. */
static int db_exec_one(md_db_t *d, md_op_t *op, bool rollback)
{
    TEST_REQUIRE(md_db_begin(d) == 0);
    int rc = md_db_exec(d, op);
    if (rollback || rc)
        md_db_rollback(d);
    else
        CU_ASSERT_EQUAL(md_db_commit(d), 0);
    md_op_free_results(op);
    return rc ? rc : op->rc;
}

#define TREE_PATHS 39 /* "/a".."/c/c/c": three names, depth 1 to 3 */

static void tree_path(int i, char *out)
{
    int depth = i < 3 ? 1 : i < 12 ? 2 : 3, k = i < 3 ? i : i < 12 ? i - 3 : i - 12;
    char *o = out;
    for (int l = depth - 1; l >= 0; l--) {
        int div = l == 2 ? 9 : l == 1 ? 3 : 1;
        *o++ = '/';
        *o++ = (char)('a' + (k / div) % 3);
    }
    *o = '\0';
}

static bool under(const char *path, const char *top)
{
    size_t n = strlen(top);
    return strncmp(path, top, n) == 0 && path[n] == '/';
}

/* Random puts, deletes, recursive deletes and rolled-back puts over a small
 * tree, against a model of the keys: every key reads as the model says, and
 * the table keeps invariants I1 and I2 throughout. The worker's memory of
 * rows that exist (md_db_t.known) must forget what deletes and rollbacks
 * remove: a put under a parent it still believed in would leave the parent
 * without a row (I1) and out of its own parent's listing. */
static void test_tree_against_model(void)
{
    md_db_t d;
    char *dir = db_open_tmp(&d);
    bool model[TREE_PATHS] = {0};
    char paths[TREE_PATHS][8];
    for (int i = 0; i < TREE_PATHS; i++)
        tree_path(i, paths[i]);
    unsigned seed = 2026;
    for (int step = 0; step < 3000; step++) {
        int i = rand_r(&seed) % TREE_PATHS, what = rand_r(&seed) % 8;
        md_op_t op = {.path = paths[i], .value = "v", .len = 1, .expected_version = MD_VERSION_ANY};
        if (what < 4) { /* put */
            op.kind = MD_OP_PUT;
            CU_ASSERT_EQUAL(db_exec_one(&d, &op, false), 0);
            model[i] = true;
        } else if (what == 4) { /* put, rolled back */
            op.kind = MD_OP_PUT;
            CU_ASSERT_EQUAL(db_exec_one(&d, &op, true), 0);
        } else if (what < 7) { /* delete */
            bool below = false;
            for (int j = 0; j < TREE_PATHS; j++)
                below |= model[j] && under(paths[j], paths[i]);
            op.kind = MD_OP_DELETE;
            int want = !model[i] ? QE_NOT_FOUND : below ? QE_NOT_EMPTY : 0;
            CU_ASSERT_EQUAL(db_exec_one(&d, &op, false), want);
            if (want == 0)
                model[i] = false;
        } else { /* recursive delete */
            op.kind = MD_OP_DELETE_RECURSIVE;
            CU_ASSERT_EQUAL(db_exec_one(&d, &op, false), 0);
            for (int j = 0; j < TREE_PATHS; j++)
                if (j == i || under(paths[j], paths[i]))
                    model[j] = false;
        }
        CU_ASSERT_EQUAL(db_broken_rows(&d), 0);
        if (step % 50 == 0)
            for (int j = 0; j < TREE_PATHS; j++)
                CU_ASSERT_EQUAL(db_has(&d, paths[j]), model[j]);
    }
    /* More parents than the worker remembers: each gets its row. */
    char p[64];
    for (int i = 0; i < 3 * (int)MD_KNOWN_SLOTS; i++) {
        snprintf(p, sizeof p, "/w/%d/k", i);
        md_op_t op = {.kind = MD_OP_PUT,
                      .path = p,
                      .value = "v",
                      .len = 1,
                      .expected_version = MD_VERSION_ANY};
        CU_ASSERT_EQUAL(db_exec_one(&d, &op, false), 0);
    }
    CU_ASSERT_EQUAL(db_broken_rows(&d), 0);
    db_close_tmp(&d, dir);
}

#define MANY_OPS 20000

typedef struct {
    int completed, errors, out_of_order;
    volatile bool done;
} many_t;

static void many_put_done(int rc, const md_stat_t *stat, void *arg)
{
    (void)stat;
    many_t *m = arg;
    m->errors += rc != 0;
    m->completed++;
    if (m->completed == MANY_OPS)
        m->done = true;
}

static void test_many_puts_group_commit(void)
{
    fixture_open();
    many_t m = {0};
    char path[64];
    for (int i = 0; i < MANY_OPS; i++) {
        snprintf(path, sizeof path, "/many/k%05d", i);
        TEST_REQUIRE(
            md_put(store, path, path, strlen(path), MD_VERSION_NEW, NULL, many_put_done, &m) == 0);
    }
    uint64_t before = md_store_commits(store);
    TEST_REQUIRE(test_run_until(loop, &m.done, WAIT_S));
    CU_ASSERT_EQUAL(m.completed, MANY_OPS);
    CU_ASSERT_EQUAL(m.errors, 0);
    uint64_t commits = md_store_commits(store) - before;
    CU_ASSERT_TRUE(commits >= MANY_OPS / MD_BATCH_OPS_MAX && commits <= 2 * MANY_OPS / 100);
    res_t r;
    CU_ASSERT_EQUAL(sync_list("/many", &r), 0);
    CU_ASSERT_EQUAL(r.n, MANY_OPS);
    CU_ASSERT_STRING_EQUAL(r.names[0], "k00000");
    CU_ASSERT_STRING_EQUAL(r.names[63], "k00063");
    CU_ASSERT_EQUAL(sync_get("/many/k19999", &r), 0);
    CU_ASSERT_STRING_EQUAL(r.value, "/many/k19999");
    fixture_close();
}

static void count_get_done(int rc, const void *value, size_t len, const md_stat_t *stat, void *arg)
{
    (void)value;
    (void)len;
    (void)stat;
    many_t *m = arg;
    m->errors += rc != QE_NOT_FOUND;
    if (++m->completed == (int)MD_PENDING_MAX)
        m->done = true;
}

static void test_queue_bound(void)
{
    fixture_open();
    many_t m = {0};
    for (unsigned i = 0; i < MD_PENDING_MAX; i++)
        TEST_REQUIRE(md_get(store, "/absent", count_get_done, &m) == 0);
    CU_ASSERT_EQUAL(md_get(store, "/absent", count_get_done, &m), QE_BUSY);
    CU_ASSERT_EQUAL(md_put(store, "/x", "x", 1, MD_VERSION_ANY, NULL, put_cb, NULL), QE_BUSY);
    TEST_REQUIRE(test_run_until(loop, &m.done, WAIT_S));
    CU_ASSERT_EQUAL(m.completed, (int)MD_PENDING_MAX);
    CU_ASSERT_EQUAL(m.errors, 0);
    CU_ASSERT_EQUAL(sync_put("/x", "x", MD_VERSION_ANY, NULL, NULL), 0); /* room again */
    fixture_close();
}

static void test_close_completes_queued(void)
{
    fixture_open();
    many_t m = {0};
    char path[64];
    for (int i = 0; i < 500; i++) {
        snprintf(path, sizeof path, "/q/k%03d", i);
        TEST_REQUIRE(md_put(store, path, "v", 1, MD_VERSION_ANY, NULL, many_put_done, &m) == 0);
    }
    md_store_close(store); /* without running the loop */
    store = NULL;
    CU_ASSERT_EQUAL(m.completed, 500);
    CU_ASSERT_EQUAL(m.errors, 0);
    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
    res_t r;
    CU_ASSERT_EQUAL(sync_list("/q", &r), 0);
    CU_ASSERT_EQUAL(r.n, 500);
    fixture_close();
}

static void test_invalid_paths(void)
{
    fixture_open();
    res_t never = {0};
    char longpath[MD_PATH_MAX + 8];
    longpath[0] = '/';
    memset(longpath + 1, 'a', sizeof longpath - 2);
    longpath[sizeof longpath - 1] = '\0';
    const char *bad[] = {"",      "a", "/a/",   "//a",    "/a//b", "/a/./b",
                         "/a/..", "/", "/a\nb", longpath, NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(md_get(store, bad[i], get_cb, &never), QE_INVALID);
        CU_ASSERT_EQUAL(md_put(store, bad[i], "v", 1, MD_VERSION_ANY, NULL, put_cb, &never),
                        QE_INVALID);
        CU_ASSERT_EQUAL(md_delete(store, bad[i], MD_VERSION_ANY, done_cb, &never), QE_INVALID);
        CU_ASSERT_EQUAL(md_delete_recursive(store, bad[i], done_cb, &never), QE_INVALID);
        CU_ASSERT_PTR_NULL(md_watch(store, bad[i], MD_WATCH_DATA, watch_record, NULL));
        if (bad[i] && strcmp(bad[i], "/") != 0)
            CU_ASSERT_EQUAL(md_list(store, bad[i], list_cb, &never), QE_INVALID);
    }
    CU_ASSERT_EQUAL(md_delete(store, "/a", MD_VERSION_NEW, done_cb, &never), QE_INVALID);
    CU_ASSERT_EQUAL(md_put(store, "/a", "v", 1, -3, NULL, put_cb, &never), QE_INVALID);
    CU_ASSERT_EQUAL(md_put(store, "/a", NULL, 5, MD_VERSION_ANY, NULL, put_cb, &never), QE_INVALID);
    CU_ASSERT_PTR_NULL(md_watch(store, "/a", 7, watch_record, NULL));
    /* A valid call made after them completes; none of the refused ones ever calls back. */
    res_t r;
    CU_ASSERT_EQUAL(sync_list("/", &r), 0);
    CU_ASSERT_EQUAL(r.n, 0);
    CU_ASSERT_EQUAL(never.calls, 0);
    CU_ASSERT_EQUAL(sync_put("/a.b/c-d_e/..x/.y", "ok", MD_VERSION_ANY, NULL, NULL), 0);
    fixture_close();
}

typedef struct {
    const unsigned char *want;
    size_t n;
    volatile bool done;
    bool same;
} big_cmp_t;

/* Compares the value read back in place (it is borrowed for the callback only). */
static void big_get(int rc, const void *value, size_t len, const md_stat_t *st, void *arg)
{
    (void)st;
    big_cmp_t *cmp = arg;
    cmp->same = rc == 0 && len == cmp->n && memcmp(value, cmp->want, len) == 0;
    cmp->done = true;
}

static void test_too_large_value(void)
{
    fixture_open();
    size_t n = MD_VALUE_MAX + 1;
    unsigned char *big = malloc(n);
    TEST_REQUIRE(big != NULL);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 131);
    res_t r = {0};
    CU_ASSERT_EQUAL(md_put(store, "/big", big, n, MD_VERSION_ANY, NULL, put_cb, &r), QE_TOO_LARGE);
    CU_ASSERT_EQUAL(md_put(store, "/big", big, n - 1, MD_VERSION_ANY, NULL, put_cb, &r), 0);
    TEST_REQUIRE(test_run_until(loop, &r.done, WAIT_S));
    CU_ASSERT_EQUAL(r.rc, 0);
    CU_ASSERT_EQUAL(r.calls, 1);
    fixture_reopen();
    big_cmp_t cmp = {big, n - 1, false, false};
    CU_ASSERT_EQUAL(md_get(store, "/big", big_get, &cmp), 0);
    TEST_REQUIRE(test_run_until(loop, &cmp.done, WAIT_S));
    CU_ASSERT_TRUE(cmp.same);
    free(big);
    fixture_close();
}

static void test_corrupt_or_unopenable_file(void)
{
    struct ev_loop *l = ev_loop_new(0);
    char *dir = test_tmpdir("meta");
    TEST_REQUIRE(l && dir);
    char path[512];
    snprintf(path, sizeof path, "%s/garbage.db", dir);
    FILE *f = fopen(path, "wb");
    TEST_REQUIRE(f != NULL);
    for (int i = 0; i < 8192; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    md_store_t *st = (md_store_t *)1;
    CU_ASSERT_EQUAL(md_store_open_embedded(l, path, &st), QE_CORRUPT);
    CU_ASSERT_PTR_NULL(st);

    snprintf(path, sizeof path, "%s/no/such/dir/m.db", dir);
    CU_ASSERT_TRUE(md_store_open_embedded(l, path, &st) < 0);
    CU_ASSERT_PTR_NULL(st);

    /* One process per file: a second open of a file in use is refused. */
    snprintf(path, sizeof path, "%s/m.db", dir);
    md_store_t *first = NULL;
    TEST_REQUIRE(md_store_open_embedded(l, path, &first) == 0);
    CU_ASSERT_TRUE(md_store_open_embedded(l, path, &st) < 0);
    CU_ASSERT_PTR_NULL(st);
    md_store_close(first);
    CU_ASSERT_EQUAL(md_store_open_embedded(l, path, &st), 0);
    md_store_close(st);

    test_rm_rf(dir);
    free(dir);
    ev_loop_destroy(l);
}

/* A store written by format 1 (a rowid table with an index on path) opens:
 * its rows move to the format-2 table and read as before. */
/* Indexes of that name in the file's schema. */
static int index_count(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    TEST_REQUIRE(sqlite3_prepare_v2(db,
                                    "SELECT count(*) FROM sqlite_master WHERE type = 'index'"
                                    " AND name = ?1",
                                    -1, &st, NULL) == SQLITE_OK);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    TEST_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* A database file written with an older format's SQL (schema and rows), in a
 * new temporary directory, with the loop the store will run on. */
static void old_format_file(const char *sql)
{
    loop = ev_loop_new(0);
    tmpdir = test_tmpdir("meta");
    TEST_REQUIRE(loop != NULL && tmpdir != NULL);
    snprintf(dbpath, sizeof dbpath, "%s/metadata.db", tmpdir);
    sqlite3 *db = NULL;
    TEST_REQUIRE(sqlite3_open(dbpath, &db) == SQLITE_OK);
    TEST_REQUIRE(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

static void test_format_1_upgraded(void)
{
    /* Format 1's schema, as md_schema_sql wrote it. */
    old_format_file("PRAGMA journal_mode = WAL;"
                    "CREATE TABLE keys (path TEXT PRIMARY KEY NOT NULL, parent TEXT NOT NULL,"
                    " value BLOB, version INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
                    " modified_ms INTEGER NOT NULL, ephemeral_owner INTEGER NOT NULL DEFAULT 0,"
                    " implicit INTEGER NOT NULL DEFAULT 0);"
                    "CREATE INDEX keys_parent ON keys(parent, path);"
                    "CREATE INDEX keys_ephemeral ON keys(ephemeral_owner)"
                    " WHERE ephemeral_owner != 0;"
                    "PRAGMA application_id = 1364543826;"
                    "PRAGMA user_version = 1;"
                    "INSERT INTO keys VALUES ('/a', '/', 'one', 3, 10, 20, 0, 0);"
                    "INSERT INTO keys VALUES ('/b', '/', NULL, 0, 10, 10, 0, 1);"
                    "INSERT INTO keys VALUES ('/b/c', '/b', 'two', 0, 11, 11, 0, 0);"
                    "INSERT INTO keys VALUES ('/b/e', '/b', 'gone', 0, 12, 12, 7, 0);");

    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
    res_t r;
    CU_ASSERT_EQUAL(sync_get("/a", &r), 0);
    CU_ASSERT_EQUAL(r.len, 3);
    CU_ASSERT_EQUAL(memcmp(r.value, "one", 3), 0);
    CU_ASSERT_EQUAL(r.stat.version, 3);
    CU_ASSERT_EQUAL(r.stat.created_ms, 10);
    CU_ASSERT_EQUAL(sync_get("/b", &r), QE_NOT_FOUND);   /* implicit */
    CU_ASSERT_EQUAL(sync_get("/b/e", &r), QE_NOT_FOUND); /* ephemeral of a gone process */
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "a,b");
    CU_ASSERT_STRING_EQUAL(list_joined("/b"), "c");
    CU_ASSERT_EQUAL(sync_put("/b/d", "three", MD_VERSION_NEW, NULL, NULL), 0);
    CU_ASSERT_EQUAL(sync_put("/a", "uno", 3, NULL, NULL), 0);
    fixture_reopen(); /* format 3 now: opens as it is */
    CU_ASSERT_STRING_EQUAL(list_joined("/b"), "c,d");
    CU_ASSERT_EQUAL(sync_get("/a", &r), 0);
    CU_ASSERT_EQUAL(r.stat.version, 4);
    md_store_close(store);
    store = NULL;

    sqlite3 *db = NULL;
    TEST_REQUIRE(sqlite3_open(dbpath, &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    TEST_REQUIRE(sqlite3_prepare_v2(db,
                                    "SELECT (SELECT user_version FROM pragma_user_version),"
                                    " sql FROM sqlite_master WHERE name = 'keys'",
                                    -1, &st, NULL) == SQLITE_OK);
    TEST_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 0), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr((const char *)sqlite3_column_text(st, 1), "WITHOUT ROWID"));
    sqlite3_finalize(st);
    CU_ASSERT_EQUAL(index_count(db, "keys_parent"), 0);
    CU_ASSERT_EQUAL(index_count(db, "keys_ephemeral"), 1);
    sqlite3_close(db);
    store = NULL;
    fixture_close();
}

/* Format 2 (WITHOUT ROWID, with an index on (parent, path)) opens as format
 * 3: the index is dropped, the rows stay, listings read the primary key. */
static void test_format_2_upgraded(void)
{
    old_format_file("PRAGMA journal_mode = WAL;"
                    "CREATE TABLE keys (path TEXT PRIMARY KEY NOT NULL, parent TEXT NOT NULL,"
                    " value BLOB, version INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
                    " modified_ms INTEGER NOT NULL, ephemeral_owner INTEGER NOT NULL DEFAULT 0,"
                    " implicit INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
                    "CREATE INDEX keys_parent ON keys(parent, path);"
                    "CREATE INDEX keys_ephemeral ON keys(ephemeral_owner)"
                    " WHERE ephemeral_owner != 0;"
                    "PRAGMA application_id = 1364543826;"
                    "PRAGMA user_version = 2;"
                    "INSERT INTO keys VALUES ('/a', '/', 'one', 3, 10, 20, 0, 0);"
                    "INSERT INTO keys VALUES ('/a-b', '/', 'two', 0, 10, 10, 0, 0);"
                    "INSERT INTO keys VALUES ('/a/c', '/a', NULL, 0, 11, 11, 0, 1);"
                    "INSERT INTO keys VALUES ('/a/c/d', '/a/c', 'three', 0, 12, 12, 0, 0);");

    TEST_REQUIRE(md_store_open_embedded(loop, dbpath, &store) == 0);
    res_t r;
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "a,a-b");
    CU_ASSERT_STRING_EQUAL(list_joined("/a"), "c");
    CU_ASSERT_STRING_EQUAL(list_joined("/a/c"), "d");
    CU_ASSERT_EQUAL(sync_get("/a/c/d", &r), 0);
    CU_ASSERT_EQUAL(sync_delete("/a", MD_VERSION_ANY), QE_NOT_EMPTY);
    CU_ASSERT_EQUAL(sync_delete("/a/c/d", MD_VERSION_ANY), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/a"), ""); /* the implicit /a/c went with it */
    CU_ASSERT_EQUAL(sync_delete("/a", MD_VERSION_ANY), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "a-b");
    md_store_close(store);
    store = NULL;

    sqlite3 *db = NULL;
    TEST_REQUIRE(sqlite3_open(dbpath, &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    TEST_REQUIRE(sqlite3_prepare_v2(db, "SELECT user_version FROM pragma_user_version", -1, &st,
                                    NULL) == SQLITE_OK);
    TEST_REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 0), 3);
    sqlite3_finalize(st);
    CU_ASSERT_EQUAL(index_count(db, "keys_parent"), 0);
    sqlite3_close(db);
    fixture_close();
}

/* A listing reads the range of the path's descendants and skips each child's
 * subtree: siblings whose names sort just before '/' ('-', '.') or just after
 * it ('0') come out, grandchildren do not. */
static void test_list_skips_subtrees(void)
{
    fixture_open();
    const char *keys[] = {"/s/b/c/d", "/s/b",   "/s/b-x", "/s/b.y",     "/s/b/e",
                          "/s/b0",    "/s/b/c", "/s/a",   "/s/b/c/f/g", "/t/u"};
    put_keys(keys, sizeof keys / sizeof keys[0]);
    CU_ASSERT_STRING_EQUAL(list_joined("/"), "s,t");
    CU_ASSERT_STRING_EQUAL(list_joined("/s"), "a,b,b-x,b.y,b0");
    CU_ASSERT_STRING_EQUAL(list_joined("/s/b"), "c,e");
    CU_ASSERT_STRING_EQUAL(list_joined("/s/b/c"), "d,f");
    CU_ASSERT_STRING_EQUAL(list_joined("/s/b/c/f"), "g");
    CU_ASSERT_STRING_EQUAL(list_joined("/s/b-x"), "");
    CU_ASSERT_STRING_EQUAL(list_joined("/s/b0"), "");
    CU_ASSERT_EQUAL(sync_delete("/s/b", MD_VERSION_ANY), QE_NOT_EMPTY);
    CU_ASSERT_EQUAL(sync_delete("/s/b-x", MD_VERSION_ANY), 0); /* no children: the range is empty */
    CU_ASSERT_EQUAL(sync_delete("/s/b0", MD_VERSION_ANY), 0);
    CU_ASSERT_STRING_EQUAL(list_joined("/s"), "a,b,b.y");
    fixture_close();
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("metadata", NULL, NULL);
    CU_add_test(s, "put/get versions", test_put_get_versions);
    CU_add_test(s, "format 1 upgraded", test_format_1_upgraded);
    CU_add_test(s, "format 2 upgraded", test_format_2_upgraded);
    CU_add_test(s, "list skips subtrees", test_list_skips_subtrees);
    CU_add_test(s, "compare-and-set", test_cas);
    CU_add_test(s, "MD_VERSION_NEW and QE_EXISTS", test_version_new);
    CU_add_test(s, "delete with version", test_delete_with_version);
    CU_add_test(s, "not empty and recursive delete", test_not_empty_and_recursive);
    CU_add_test(s, "list sorted, implied parents", test_list_sorted_implied_parents);
    CU_add_test(s, "ephemeral: session close", test_ephemeral_session_close);
    CU_add_test(s, "ephemeral: crash and reopen", test_ephemeral_gone_after_crash_and_reopen);
    CU_add_test(s, "watches: data and children", test_watch_data_and_children);
    CU_add_test(s, "watches: before the callback", test_watch_before_callback);
    CU_add_test(s, "durable across reopen", test_durable_across_reopen);
    CU_add_test(s, "callback order", test_callback_order);
    CU_add_test(s, "refusals inside a group", test_group_with_failed_cas);
    CU_add_test(s, "half-written operation fails the batch", test_half_written_fails_batch);
    CU_add_test(s, "tree against a model", test_tree_against_model);
    CU_add_test(s, "20000 puts, group commit", test_many_puts_group_commit);
    CU_add_test(s, "queue bound", test_queue_bound);
    CU_add_test(s, "close completes queued calls", test_close_completes_queued);
    CU_add_test(s, "invalid paths and arguments", test_invalid_paths);
    CU_add_test(s, "too large value", test_too_large_value);
    CU_add_test(s, "corrupt or unopenable file", test_corrupt_or_unopenable_file);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
