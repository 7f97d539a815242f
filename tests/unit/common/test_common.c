/* Unit tests of common/: crc32c, refcounted buffers, executor/mailbox. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/exec.h"
#include "common/heap.h"
#include "common/mem_trim.h"
#include "common/ring.h"
#include "tests/unit/support/test_support.h"

static void test_crc32c_vectors(void)
{
    /* RFC 3720 B.4 test vectors. */
    uint8_t zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++)
        inc[i] = (uint8_t)i;
    CU_ASSERT_EQUAL(crc32c(0, zeros, 32), 0x8A9136AAu);
    CU_ASSERT_EQUAL(crc32c(0, ones, 32), 0x62A8AB43u);
    CU_ASSERT_EQUAL(crc32c(0, inc, 32), 0x46DD794Eu);
    CU_ASSERT_EQUAL(crc32c(0, "123456789", 9), 0xE3069283u);
    CU_ASSERT_EQUAL(crc32c_sw(0, "123456789", 9), 0xE3069283u);
}

static void test_crc32c_incremental_matches_hw_sw(void)
{
    uint8_t buf[1031];
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rand();
    for (size_t split = 0; split < sizeof buf; split += 97) {
        uint32_t a = crc32c(crc32c(0, buf, split), buf + split, sizeof buf - split);
        CU_ASSERT_EQUAL(a, crc32c(0, buf, sizeof buf));
        CU_ASSERT_EQUAL(a, crc32c_sw(0, buf, sizeof buf));
    }
}

/* The hardware path's three interleaved streams (rounds of 24 KiB and of 768
 * bytes, then one stream) against the table path: every length around the
 * round sizes, every alignment, chained from a running checksum. */
static void test_crc32c_streams_match_table(void)
{
    enum { N = 3 * 24576 + 3 * 768 + 64 };
    static uint8_t buf[N + 8];
    srand(11);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rand();
    static const size_t around[] = {0,     8,     767,   768,   769,   1536,  2303,  2304,
                                    24575, 24576, 24577, 25343, 25344, 25345, 49152, N};
    int mismatches = 0;
    for (size_t a = 0; a < sizeof around / sizeof around[0]; a++)
        for (size_t d = 0; d < 16; d++) {
            size_t len = around[a] + d;
            if (len > N)
                continue;
            for (size_t off = 0; off < 8; off++) {
                uint32_t seed = (uint32_t)(len * 2654435761u);
                if (crc32c(seed, buf + off, len) != crc32c_sw(seed, buf + off, len))
                    mismatches++;
            }
        }
    CU_ASSERT_EQUAL(mismatches, 0);
    /* split anywhere, the chained checksum is the whole one */
    uint32_t whole = crc32c_sw(0, buf, N);
    CU_ASSERT_EQUAL(crc32c(0, buf, N), whole);
    for (size_t split = 1; split < N; split += 4099)
        CU_ASSERT_EQUAL(crc32c(crc32c(0, buf, split), buf + split, N - split), whole);
}

/* crc32c_copy: the same checksum as crc32c and the same bytes as memcpy, for
 * every length around the round sizes and every alignment of both sides, with
 * the bytes around the destination untouched. */
static void test_crc32c_copy(void)
{
    enum { N = 3 * 24576 + 3 * 768 + 64 };
    static uint8_t src[N + 8], dst[N + 32];
    srand(13);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (uint8_t)rand();
    static const size_t around[] = {0,     1,     7,     767,   768,   769,  2304,
                                    24575, 24576, 24577, 25344, 49152, N - 8};
    int bad = 0;
    for (size_t a = 0; a < sizeof around / sizeof around[0]; a++)
        for (size_t d = 0; d < 8; d += 3)
            for (size_t so = 0; so < 8; so += 3)
                for (size_t doff = 8; doff < 16; doff += 5) {
                    size_t len = around[a] + d;
                    memset(dst, 0xA5, sizeof dst);
                    uint32_t seed = (uint32_t)(len * 40503u);
                    uint32_t c = crc32c_copy(seed, dst + doff, src + so, len);
                    bad += c != crc32c_sw(seed, src + so, len);
                    bad += memcmp(dst + doff, src + so, len) != 0;
                    bad += dst[doff - 1] != 0xA5 || dst[doff + len] != 0xA5;
                }
    CU_ASSERT_EQUAL(bad, 0);
}

/* A trim is due once: after a burst of QTRIM_BURST_BYTES, at the first quiet
 * tick; not for a trickle (keepalive pings), not while busy. */
static void test_trim_after_burst(void)
{
    qtrim_state_t s = {0};
    uint64_t bytes = 1000;
    CU_ASSERT_FALSE(qtrim_due(&s, bytes)); /* first tick: the baseline */
    for (int i = 0; i < 100; i++)          /* a trickle below the quiet bound */
        CU_ASSERT_FALSE(qtrim_due(&s, bytes += QTRIM_QUIET_BYTES / 2));
    int due = 0;
    for (int i = 0; i < 8; i++) /* busy: 8 x 16 MiB, never due while it lasts */
        due += qtrim_due(&s, bytes += 16ull << 20);
    CU_ASSERT_EQUAL(due, 0);
    CU_ASSERT_TRUE(qtrim_due(&s, bytes));  /* the first quiet tick */
    CU_ASSERT_FALSE(qtrim_due(&s, bytes)); /* once */
    CU_ASSERT_FALSE(qtrim_due(&s, bytes + 10));
    bytes += QTRIM_BURST_BYTES / 2; /* half a burst, then quiet: not yet */
    CU_ASSERT_FALSE(qtrim_due(&s, bytes));
    CU_ASSERT_FALSE(qtrim_due(&s, bytes));
    bytes += QTRIM_BURST_BYTES / 2;
    CU_ASSERT_FALSE(qtrim_due(&s, bytes));
    CU_ASSERT_TRUE(qtrim_due(&s, bytes)); /* the two halves make one */
}

/* ring_grow keeps the elements oldest first, wrapped or not, and starts the
 * new array at index 0. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* The allocator's figures move with what the program holds (glibc's here: the
 * unit tests are not linked with jemalloc; the quire binary's are checked by
 * the compat metrics test). Under ASan its allocator answers, not glibc's. */
static void test_heap_stats(void)
{
    qheap_stats_t a, b;
    TEST_REQUIRE(qheap_stats(&a));
    CU_ASSERT_TRUE(strcmp(a.allocator, "glibc") == 0 || strcmp(a.allocator, "jemalloc") == 0);
    size_t n = 8u << 20;
    char *p = malloc(n);
    TEST_REQUIRE(p != NULL);
    memset(p, 1, n);
    TEST_REQUIRE(qheap_stats(&b));
#ifndef UNDER_ASAN
    CU_ASSERT_TRUE(b.in_use >= a.in_use + n);
#endif
    free(p);
    (void)qheap_release(); /* whether there was anything to give back */
    TEST_REQUIRE(qheap_stats(&b));
#ifndef UNDER_ASAN
    CU_ASSERT_TRUE(b.in_use < a.in_use + n);
#endif
}

static void test_ring_grow(void)
{
    for (size_t head = 0; head < 4; head++) {
        for (size_t count = 0; count <= 4; count++) {
            size_t cap = 4, h = head;
            int *v = malloc(cap * sizeof *v);
            TEST_REQUIRE(v != NULL);
            for (size_t i = 0; i < count; i++)
                v[(head + i) % cap] = 100 + (int)i;
            TEST_REQUIRE(ring_grow((void **)&v, sizeof *v, &h, count, &cap, 8) == 0);
            CU_ASSERT_EQUAL(cap, 8);
            CU_ASSERT_EQUAL(h, 0);
            for (size_t i = 0; i < count; i++)
                CU_ASSERT_EQUAL(v[i], 100 + (int)i);
            free(v);
        }
    }
}

static void test_qbuf_refcount(void)
{
    qbuf_t *b = qbuf_copy("hello", 5);
    TEST_REQUIRE(b != NULL);
    CU_ASSERT_EQUAL(b->len, 5);
    CU_ASSERT_EQUAL(memcmp(b->data, "hello", 5), 0);
    qbuf_ref(b);
    CU_ASSERT_EQUAL(atomic_load(&b->refs), 2);
    qbuf_unref(b);
    CU_ASSERT_EQUAL(atomic_load(&b->refs), 1);
    qbuf_unref(b);
    CU_ASSERT_PTR_NULL(qbuf_new((size_t)QBUF_MAX + 1));
}

static void test_errors_named(void)
{
    CU_ASSERT_STRING_EQUAL(q_strerror(QE_FENCED), "ledger is fenced");
    CU_ASSERT_STRING_EQUAL(q_strerror(0), "ok");
    CU_ASSERT_PTR_NOT_NULL(q_strerror(-2));
    CU_ASSERT_STRING_EQUAL(q_strerror(QE_LAST), "unknown error");
}

typedef struct {
    int order[64];
    int done_count;
    int work_count;
    volatile bool finished;
} exec_state_t;

typedef struct {
    exec_state_t *st;
    int idx;
} exec_job_t;

static exec_job_t exec_jobs[64];

static void job_work(void *p)
{
    exec_job_t *j = p;
    __atomic_add_fetch(&j->st->work_count, 1, __ATOMIC_SEQ_CST);
}

static void job_done(void *p)
{
    exec_job_t *j = p;
    j->st->order[j->st->done_count++] = j->idx;
    if (j->st->done_count == 64)
        j->st->finished = true;
}

static void test_exec_order_and_completion_on_loop(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    exec_state_t st = {0};
    qexec_t *ex = qexec_new(loop, "t", 1, 128);
    TEST_REQUIRE(ex != NULL);
    for (int i = 0; i < 64; i++) {
        exec_jobs[i].st = &st;
        exec_jobs[i].idx = i;
        CU_ASSERT_EQUAL(qexec_submit(ex, job_work, job_done, &exec_jobs[i]), 0);
    }
    CU_ASSERT_TRUE(test_run_until(loop, &st.finished, 5.0));
    CU_ASSERT_EQUAL(st.work_count, 64);
    for (int i = 0; i < 64; i++)
        CU_ASSERT_EQUAL(st.order[i], i);
    qexec_free(ex);
    ev_loop_destroy(loop);
}

static void test_exec_bounded_queue(void)
{
    struct ev_loop *loop = ev_loop_new(0);
    exec_state_t st = {0};
    qexec_t *ex = qexec_new(loop, "t", 1, 2);
    int refused = 0;
    for (int i = 0; i < 64; i++) {
        exec_jobs[i].st = &st;
        exec_jobs[i].idx = i;
        if (qexec_submit(ex, job_work, NULL, &exec_jobs[i]) == -EAGAIN)
            refused++;
    }
    /* With a queue of 2, most of 64 instant submits must be refused, not queued. */
    CU_ASSERT_TRUE(refused > 0);
    qexec_free(ex);
    CU_ASSERT_EQUAL(st.work_count, 64 - refused);
    ev_loop_destroy(loop);
}

void register_config_suite(void);
void register_hashmap_suite(void);
void register_hist_suite(void);
void register_latq_suite(void);
void register_accept_pause_suite(void);
void register_json_out_suite(void);

static void register_suites(void)
{
    register_config_suite();
    register_hashmap_suite();
    register_hist_suite();
    register_latq_suite();
    register_accept_pause_suite();
    register_json_out_suite();
    CU_pSuite s = CU_add_suite("common", NULL, NULL);
    CU_add_test(s, "crc32c vectors", test_crc32c_vectors);
    CU_add_test(s, "crc32c incremental hw/sw", test_crc32c_incremental_matches_hw_sw);
    CU_add_test(s, "crc32c three streams match the table", test_crc32c_streams_match_table);
    CU_add_test(s, "crc32c_copy: checksum and bytes", test_crc32c_copy);
    CU_add_test(s, "memory trim after a burst", test_trim_after_burst);
    CU_add_test(s, "heap figures follow allocations", test_heap_stats);
    CU_add_test(s, "qbuf refcount", test_qbuf_refcount);
    CU_add_test(s, "ring grows in order", test_ring_grow);
    CU_add_test(s, "errors named", test_errors_named);
    CU_add_test(s, "exec order", test_exec_order_and_completion_on_loop);
    CU_add_test(s, "exec bounded queue", test_exec_bounded_queue);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
