/*
 * Crash test of the bookie: a forked child appends entries as fast as they
 * are acknowledged and reports every acknowledged (ledger, entry) through a
 * pipe; the parent SIGKILLs it at a random moment, reopens the same directory
 * and checks that every acknowledged entry reads back byte for byte (contents
 * are a function of (ledger, entry)). Repeated CRASH_ROUNDS times on one
 * directory, so later rounds also replay journals and entry logs left by
 * earlier kills (including kills during open). After checking a round, the
 * parent deletes that round's ledgers and runs GC, so deletion and GC state
 * cross crashes too. Every fourth entry is large (4-40 KB, above the
 * child's journal_large_entry_bytes): written once to a direct entry log with
 * a reference in the journal, so kills also land between a direct log's
 * fdatasync and the journal's, during direct log rolls (small logs) and while
 * GC removes or compacts direct logs left by earlier rounds. Spares are on
 * (spare.h): kills also land while they are zeroed and taken, and opens cut
 * the zeros after a direct log's last record.
 * Bounded: each child lives at most CRASH_DELAY_MS_MAX.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errors.h"
#include "tests/unit/bookie/bookie_test.h"

#define CRASH_ROUNDS 20
#define CRASH_DELAY_MS_MIN 30
#define CRASH_DELAY_MS_MAX 400
#define CRASH_LEDGERS 4
#define CRASH_WINDOW 32
#define CRASH_ACKS_MAX 20000
#define CRASH_LARGE_MIN (4u << 10) /* the child's journal_large_entry_bytes */

typedef struct ack {
    int64_t ledger_id, entry_id;
} ack_t;

static size_t crash_len(int64_t ledger_id, int64_t entry_id)
{
    uint64_t x = (uint64_t)ledger_id * 31 + (uint64_t)entry_id * 7919;
    if (entry_id % 4 == 3)
        return CRASH_LARGE_MIN + (x % (36u << 10));
    return 1 + (x % 2500);
}

static void crash_config(bookie_config_t *cfg, const char *dir)
{
    bt_config(cfg, dir);
    cfg->journal_file_size_bytes = 256u << 10; /* roll often */
    cfg->entry_log_size_bytes = 512u << 10;
    cfg->write_cache_bytes = 256u << 10; /* flush + checkpoint often */
    cfg->flush_interval_ms = 25;
    cfg->journal_large_entry_bytes = CRASH_LARGE_MIN;
    cfg->spare_zero_rate_bytes = 256u << 20; /* kills while spares are zeroed and taken */
    cfg->spare_idle_ms = 10;
}

/* ---------------------------------------------------------------- child -- */

typedef struct child {
    bookie_t *bk;
    int fd;
    int round;
    int64_t next[CRASH_LEDGERS];
    int inflight, acked, turn;
    uint64_t pause_until_us; /* quiet now and then: the bookie zeroes its spares */
} child_t;

static void child_pump(child_t *c);

static void child_add_cb(int rc, int64_t l, int64_t e, void *arg)
{
    child_t *c = arg;
    c->inflight--;
    if (rc != 0)
        _exit(3);
    ack_t a = {l, e};
    if (write(c->fd, &a, sizeof a) != (ssize_t)sizeof a)
        _exit(4);
    c->acked++;
    if (c->acked % 500 == 0)
        c->pause_until_us = clock_mono_us() + 30000;
    child_pump(c);
}

static void child_pump(child_t *c)
{
    if (clock_mono_us() < c->pause_until_us)
        return; /* the keep-alive timer pumps again */
    while (c->inflight < CRASH_WINDOW && c->acked + c->inflight < CRASH_ACKS_MAX) {
        int k = c->turn++ % CRASH_LEDGERS;
        int64_t l = (int64_t)c->round * 100 + k, e = c->next[k];
        qbuf_t *b = qbuf_new(crash_len(l, e));
        if (!b)
            _exit(5);
        bt_fill(l, e, b->data, crash_len(l, e));
        b->len = (uint32_t)crash_len(l, e);
        int rc = bookie_add(c->bk, l, e, e - 1, b, child_add_cb, c);
        qbuf_unref(b);
        if (rc == QE_BUSY)
            return; /* an ack will pump again */
        if (rc != 0)
            _exit(6);
        c->next[k]++;
        c->inflight++;
    }
}

static void child_keepalive_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    child_pump(w->data);
}

static void child_main(const char *dir, int fd, int round)
{
    struct ev_loop *loop = ev_loop_new(0);
    bookie_config_t cfg;
    crash_config(&cfg, dir);
    child_t c = {.fd = fd, .round = round};
    if (bookie_open(loop, &cfg, &c.bk) != 0)
        _exit(2);
    ev_timer keep;
    ev_timer_init(&keep, child_keepalive_cb, 0.01, 0.01);
    keep.data = &c;
    ev_timer_start(loop, &keep);
    child_pump(&c);
    ev_run(loop, 0); /* until SIGKILL */
    _exit(7);
}

/* --------------------------------------------------------------- parent -- */

/* Reads acks until the deadline, kills the child, then drains the pipe. */
static size_t parent_collect(int fd, pid_t pid, uint64_t delay_ms, ack_t **acks)
{
    size_t n = 0, cap = 1024;
    ack_t *v = malloc(cap * sizeof *v);
    uint64_t deadline = clock_mono_us() + delay_ms * 1000;
    bool killed = false;
    uint8_t part[sizeof(ack_t)];
    size_t have = 0;
    for (;;) {
        uint64_t now = clock_mono_us();
        if (!killed && now >= deadline) {
            kill(pid, SIGKILL);
            killed = true;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int to = killed ? 1000 : (int)((deadline - now) / 1000) + 1;
        if (poll(&p, 1, to) <= 0)
            continue;
        ssize_t r = read(fd, part + have, sizeof part - have);
        if (r <= 0)
            break; /* EOF: the child is gone */
        have += (size_t)r;
        if (have < sizeof part)
            continue;
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        memcpy(&v[n++], part, sizeof part);
        have = 0;
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    *acks = v;
    return n;
}

static void parent_verify(const char *dir, int round, const ack_t *acks, size_t n)
{
    bookie_config_t cfg;
    crash_config(&cfg, dir);
    bookie_t *bk = NULL;
    TEST_REQUIRE(bookie_open(bt_loop, &cfg, &bk) == 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = bt_verify(bk, acks[i].ledger_id, acks[i].entry_id,
                           crash_len(acks[i].ledger_id, acks[i].entry_id));
        if (rc && bad++ < 5)
            fprintf(stderr, "round %d: entry %lld:%lld lost or damaged: %s\n", round,
                    (long long)acks[i].ledger_id, (long long)acks[i].entry_id, q_strerror(rc));
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (int k = 0; k < CRASH_LEDGERS; k++) {
        int rc = bt_delete(bk, (int64_t)round * 100 + k);
        CU_ASSERT_EQUAL(rc, 0);
    }
    CU_ASSERT_EQUAL(bt_gc(bk), 0);
    bookie_close(bk);
}

static void test_crash_kill9(void)
{
    char *dir = test_tmpdir("bk-crash");
    TEST_REQUIRE(dir != NULL);
    srand((unsigned)time(NULL));
    size_t total = 0;
    for (int round = 1; round <= CRASH_ROUNDS; round++) {
        int fds[2];
        TEST_REQUIRE(pipe(fds) == 0);
        fflush(NULL);
        pid_t pid = fork();
        TEST_REQUIRE(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_main(dir, fds[1], round);
        }
        close(fds[1]);
        uint64_t delay =
            CRASH_DELAY_MS_MIN + (uint64_t)rand() % (CRASH_DELAY_MS_MAX - CRASH_DELAY_MS_MIN);
        ack_t *acks = NULL;
        size_t n = parent_collect(fds[0], pid, delay, &acks);
        close(fds[0]);
        parent_verify(dir, round, acks, n);
        total += n;
        free(acks);
    }
    CU_ASSERT_TRUE(total > 0);
    printf("\n    crash test: %zu acknowledged entries verified over %d kills\n", total,
           CRASH_ROUNDS);
    test_rm_rf(dir);
    free(dir);
}

void bookie_crash_register(void)
{
    CU_pSuite s = CU_add_suite("bookie_crash", NULL, NULL);
    CU_add_test(s, "kill -9 at random moments loses no acknowledged entry", test_crash_kill9);
}
