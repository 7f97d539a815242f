/*
 * journal.c — the journal thread (group commit), file rolling, replay and
 * trimming. Formats and the ring protocol are in journal.h.
 *
 * Group building: records are encoded into one group buffer (gbuf) of
 * group_bytes_max + JOURNAL_COPY_MAX + header bytes; a payload larger than
 * JOURNAL_COPY_MAX is not copied but written from its qbuf through its own
 * iovec. So a group is one pwritev of at most GROUP_IOV_MAX segments. The
 * journal thread is the only one touching gbuf, iov, fd and off.
 *
 * Large entries (large_entry_bytes): the entry's record (header in dhdr, the
 * payload from its qbuf) goes to diov, to be written at dstart of the direct
 * log, and a 64-byte ADD_REF record into gbuf. The direct records of one
 * group are contiguous in one direct log: an entry that needs a new direct
 * log while the group already has direct records waits for the next group.
 * group_write: the direct records written and fdatasynced on the bk-dsync
 * thread (elog_direct_write: O_DIRECT from an aligned stage where the file
 * system allows) while the journal thread writes and syncs the journal
 * records; the group completes when both are done (a group of large adds
 * alone with cfg.large_one_sync: when its direct log's sync returns, before
 * the references are written; journal.h). A crash between the two
 * leaves ADD_REFs whose records are not intact only in the last group, none of
 * which was acknowledged: replay takes the first such reference for the
 * journal's end (bookie.c, bookie_replay_ref).
 *
 * O_DIRECT (cfg.odirect, where the file system takes it): gbuf is aligned and
 * starts with the carry, the bytes of the file's last partial block written
 * by the group before; every record is copied into gbuf (no iovec), and the
 * group is written from the carry's block start, padded with zeros to whole
 * blocks. The next group writes that block again with the same bytes first,
 * so a torn write of it cannot damage what was acknowledged before, and the
 * zeros read as the journal's end (journal_check_record). Nothing of the
 * journal goes through the page cache: no page to allocate, copy into, write
 * back and free per group (on a VM whose freed memory goes back to the host,
 * every new page-cache page costs a fault on the host: docs/bookie.md).
 */
#include "storage/bookie/journal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "common/log.h"
#include "storage/bookie/bookie_io.h"
#include "storage/bookie/io_gate.h"
#include "storage/bookie/spare.h"
#include "storage/bookie/trash.h"

#define GROUP_IOV_MAX 1024
/* O_DIRECT: the largest alignment taken, and gbuf's own (its slack: a carry
 * and a pad of at most one block each). */
#define JOURNAL_DIO_ALIGN_MAX 4096u
#define GROUP_DIRECT_MAX (GROUP_IOV_MAX / 2)

struct journal {
    journal_config_t cfg;
    char *dir;
    qloop_mailbox_t *mb;
    journal_group_fn fn;
    void *ctx;

    journal_req_t *ring;
    uint64_t head;  /* loop */
    uint64_t tail;  /* loop writes under lock; journal thread reads under lock */
    uint64_t taken; /* journal thread */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    pthread_t thread;
    bool started;

    /* journal thread state */
    int fd;
    uint64_t seq, off;
    uint64_t zeroed; /* bytes of the file a spare's zeros (spare.h) */
    uint32_t magic;  /* the records' magic and checksum seed in this file */
    uint32_t seed;
    /* O_DIRECT: the file opened once more; gbuf holds the carry bytes of the
     * block at carry_off (off == carry_off + carry) */
    int dio_fd;
    uint32_t align;
    size_t carry;
    uint64_t carry_off;
    int failed;
    uint8_t *gbuf;
    size_t gbuf_cap, gbuf_len, gseg_start;
    size_t gbuf_base; /* gbuf's first size (an O_DIRECT group's large copy grows it) */
    struct iovec iov[GROUP_IOV_MAX];
    int iovcnt;
    uint64_t gbytes; /* journal bytes of the group */
    uint32_t gcount;
    uint8_t *dhdr; /* direct record headers, GROUP_DIRECT_MAX x ELOG_HEADER_BYTES */
    struct iovec diov[GROUP_IOV_MAX];
    int diovcnt;
    uint32_t dcount;
    uint64_t dstart, dbytes; /* direct log offset of the group's first direct record; bytes */
    /* The group needs the journal's fdatasync: it has a record other than an
     * ADD_REF (a CHECKPOINT marker aside), an add asking for it (the first of
     * its ledger), or it opened a new direct log. Else (cfg.large_one_sync)
     * only its direct log is synced and its ADD_REFs are written without. */
    bool jsync;
    bool droll;    /* the group opened a new direct log */
    bool unsynced; /* the current file has writes no fdatasync covered yet */

    /* the direct records' write and fdatasync beside the journal's (dsync_main) */
    pthread_t dsync_thread;
    bool dsync_started, dsync_busy, dsync_stop;
    int dsync_rc;
    pthread_mutex_t dmu;
    pthread_cond_t dcv;

    atomic_int inject;
    atomic_int inject_roll; /* tests: the next file's creation fails with it */
    bool roll_failing;      /* a next file could not be made for lack of space */
    bool direct_failing;    /* large entries journaled whole: no room in a direct log */
    atomic_uint_fast64_t syncs, sync_us, dio_groups;
    atomic_uint_fast64_t direct_syncs, direct_sync_us, direct_bytes;
    atomic_uint_fast64_t one_sync_groups;
};

typedef struct journal_done {
    journal_t *j;
    uint64_t begin, end;
    int rc;
    journal_pos_t pos;
} journal_done_t;

/* ------------------------------------------------------------- files -- */

static void journal_path(char *out, size_t n, const char *dir, uint64_t seq)
{
    snprintf(out, n, "%s/%016" PRIx64 ".jnl", dir, seq);
}

static int journal_file_create(journal_t *j, uint64_t seq)
{
    char path[PATH_MAX];
    journal_path(path, sizeof path, j->dir, seq);
    uint64_t zeroed = 0; /* a spare's zeros: overwritten without a metadata write */
    int fd = -1;
    if (spares_take(j->cfg.spares, SPARE_JOURNAL, path, &zeroed) == 0 &&
        (fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        log_warn("bookie", "journal: cannot open %s: %s", path, q_strerror(-errno));
        unlink(path);
    }
    if (fd < 0) {
        zeroed = 0;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
        int rc = -errno;
        log_error("bookie", "journal: cannot create %s: %s", path, q_strerror(rc));
        return rc;
    }
    /* the rest of a spare too: blocks already written stay as they are */
    if (j->cfg.file_size_bytes && fallocate(fd, 0, 0, (off_t)j->cfg.file_size_bytes) < 0 &&
        errno != EOPNOTSUPP) {
        int rc = -errno;
        log_error("bookie", "journal: cannot preallocate %s: %s", path, q_strerror(rc));
        close(fd);
        unlink(path);
        return rc;
    }
    int rc = bk_fsync_dir(j->dir);
    if (rc) {
        log_error("bookie", "journal: fsync of %s failed: %s", j->dir, q_strerror(rc));
        close(fd);
        return rc;
    }
    if (j->fd >= 0)
        close(j->fd);
    j->fd = fd;
    j->seq = seq;
    j->off = 0;
    j->zeroed = zeroed;
    j->magic = j->cfg.format >= 3 ? JOURNAL_MAGIC_V3 : JOURNAL_MAGIC;
    j->seed = journal_crc_seed(j->cfg.format, seq);
    if (j->dio_fd >= 0)
        close(j->dio_fd);
    j->dio_fd = -1;
    j->carry = 0;
    j->carry_off = 0;
    if (j->cfg.odirect) {
        uint32_t align = 0;
        j->dio_fd = bk_open_direct(path, O_WRONLY, &align);
        if (j->dio_fd >= 0 && (align > JOURNAL_DIO_ALIGN_MAX || (uintptr_t)j->gbuf % align)) {
            close(j->dio_fd);
            j->dio_fd = -1;
        }
        if (j->dio_fd < 0) {
            log_warn("bookie", "journal: %s: no O_DIRECT here: the journal is written buffered",
                     path);
            j->cfg.odirect = false;
        } else {
            j->align = align;
        }
    }
    return 0;
}

/* ------------------------------------------------------- ring (loop side) -- */

journal_req_t *journal_next_slot(journal_t *j)
{
    if (j->tail - j->head >= j->cfg.ring_slots)
        return NULL;
    journal_req_t *r = &j->ring[j->tail % j->cfg.ring_slots];
    memset(r, 0, sizeof *r);
    return r;
}

void journal_submit(journal_t *j)
{
    assert(j->tail - j->head < j->cfg.ring_slots);
    j->ring[j->tail % j->cfg.ring_slots].submit_us = clock_mono_us();
    pthread_mutex_lock(&j->lock);
    j->tail++;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

journal_req_t *journal_slot(journal_t *j, uint64_t idx)
{
    assert(idx >= j->head && idx < j->tail);
    return &j->ring[idx % j->cfg.ring_slots];
}

void journal_release(journal_t *j, uint64_t end)
{
    assert(end >= j->head && end <= j->tail);
    j->head = end;
}

void journal_get_stats(journal_t *j, uint64_t *syncs, uint64_t *sync_us_total)
{
    *syncs = atomic_load(&j->syncs);
    *sync_us_total = atomic_load(&j->sync_us);
}

uint64_t journal_one_sync_groups(journal_t *j)
{
    return atomic_load(&j->one_sync_groups);
}

uint64_t journal_dio_groups(journal_t *j)
{
    return atomic_load(&j->dio_groups);
}

void journal_get_direct_stats(journal_t *j, uint64_t *syncs, uint64_t *sync_us_total,
                              uint64_t *bytes)
{
    *syncs = atomic_load(&j->direct_syncs);
    *sync_us_total = atomic_load(&j->direct_sync_us);
    *bytes = atomic_load(&j->direct_bytes);
}

void journal_inject_roll_error(journal_t *j, int err)
{
    atomic_store(&j->inject_roll, err);
}

void journal_inject_error(journal_t *j, int err)
{
    atomic_store(&j->inject, err);
}

/* ------------------------------------------------- group (journal thread) -- */

static void group_reset(journal_t *j)
{
    j->gbuf_len = j->gseg_start = j->dio_fd >= 0 ? j->carry : 0;
    j->iovcnt = 0;
    j->gbytes = 0;
    j->gcount = 0;
    j->diovcnt = 0;
    j->dcount = 0;
    j->dstart = j->dbytes = 0;
    j->jsync = j->droll = false;
}

static bool group_full(const journal_t *j)
{
    return j->gcount >= j->cfg.group_entries_max || j->gbytes >= j->cfg.group_bytes_max ||
           j->dbytes >= JOURNAL_DIRECT_GROUP_BYTES_MAX || j->iovcnt + 3 > GROUP_IOV_MAX ||
           j->diovcnt + 2 > GROUP_IOV_MAX;
}

static void group_encode_header(const journal_t *j, uint8_t *h, uint32_t type,
                                const journal_req_t *r, uint32_t len)
{
    put_le32(h, j->magic);
    put_le32(h + 4, len);
    put_le32(h + 8, 0);
    put_le32(h + 12, type);
    put_le64(h + 16, (uint64_t)r->ledger_id);
    put_le64(h + 24, (uint64_t)r->entry_id);
    put_le64(h + 32, (uint64_t)r->lac);
}

void journal_ref_decode(const uint8_t *p, journal_ref_t *out)
{
    out->log_id = get_le32(p);
    out->length = get_le32(p + 4);
    out->offset = get_le64(p + 8);
    out->crc = get_le32(p + 16);
}

/* A large ADD: its record to the direct log, an ADD_REF to the journal.
 * 1 added; 0 not now (it needs a new direct log and the group already has
 * direct records: next group); -1 impossible (journal the entry whole). */
static int group_add_direct(journal_t *j, journal_req_t *r)
{
    elog_direct_t *d = j->cfg.direct;
    uint32_t len = r->data->len, crc;
    if (j->dcount > 0 && elog_direct_needs_roll(d, len))
        return 0;
    assert(j->dcount < GROUP_DIRECT_MAX);
    uint8_t *dh = j->dhdr + (size_t)j->dcount * ELOG_HEADER_BYTES;
    bool roll = elog_direct_needs_roll(d, len);
    uint64_t off, t0 = roll ? clock_mono_us() : 0;
    int rc = elog_direct_reserve(d, r->ledger_id, r->entry_id, r->data->data, len, j->seq, j->off,
                                 dh, &r->log_id, &off, &crc);
    if (t0 && rc == 0 && j->cfg.direct_roll_latency) { /* a new log: created, or a spare */
        uint64_t t1 = clock_mono_us();
        latq_record(j->cfg.direct_roll_latency, t1 - t0, t1);
    }
    if (rc) {
        if (!j->direct_failing)
            log_warn("bookie",
                     "journal: no room in a direct entry log (%s): large entries are journaled "
                     "whole until there is (entry %" PRId64 ":%" PRId64 " the first)",
                     q_strerror(rc), r->ledger_id, r->entry_id);
        j->direct_failing = true;
        r->log_id = 0;
        return -1;
    }
    if (j->direct_failing) {
        log_info("bookie", "journal: large entries go to direct entry logs again");
        j->direct_failing = false;
    }
    r->log_off = off;
    if (roll || r->sync_journal)
        j->jsync = true; /* the newest direct log, or the ledger, known from the journal */
    j->droll |= roll;
    if (j->dcount++ == 0)
        j->dstart = off;
    assert(off == j->dstart + j->dbytes); /* contiguous in one log */
    j->diov[j->diovcnt++] = (struct iovec){dh, ELOG_HEADER_BYTES};
    j->diov[j->diovcnt++] = (struct iovec){r->data->data, len};
    j->dbytes += ELOG_HEADER_BYTES + (uint64_t)len;

    uint8_t *h = j->gbuf + j->gbuf_len;
    assert(j->gbuf_len + JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES <= j->gbuf_cap);
    group_encode_header(j, h, JREC_ADD_REF, r, JOURNAL_REF_BYTES);
    uint8_t *p = h + JOURNAL_HEADER_BYTES;
    put_le32(p, r->log_id);
    put_le32(p + 4, len);
    put_le64(p + 8, off);
    put_le32(p + 16, crc);
    put_le32(p + 20, 0);
    put_le32(h + 8, crc32c(j->seed, h, JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES));
    j->gbuf_len += JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES;
    j->gbytes += JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES;
    j->gcount++;
    return 1;
}

/* The journal written buffered from here on (its carry is on the disk already,
 * written with the same bytes the next buffered write begins after). Only
 * between groups or before a group's first record. */
static void dio_off(journal_t *j, const char *why)
{
    log_warn("bookie", "journal %016" PRIx64 ".jnl: %s: written buffered from here", j->seq, why);
    close(j->dio_fd);
    j->dio_fd = -1;
    j->cfg.odirect = false;
    j->gbuf_len = j->gseg_start = 0;
    j->carry = 0;
}

/* gbuf with room for more bytes besides the group's and a block of padding
 * (contents kept; O_DIRECT groups copy payloads of any size). 0 or -ENOMEM. */
static int gbuf_grow(journal_t *j, size_t more)
{
    size_t need = j->gbuf_len + more + JOURNAL_DIO_ALIGN_MAX, cap = j->gbuf_cap;
    while (cap < need)
        cap *= 2;
    void *p;
    if (posix_memalign(&p, JOURNAL_DIO_ALIGN_MAX, cap) != 0)
        return -ENOMEM;
    memcpy(p, j->gbuf, j->gbuf_len);
    free(j->gbuf);
    j->gbuf = p;
    j->gbuf_cap = cap;
    return 0;
}

/* What r takes in the journal (a large add: its ADD_REF). */
static uint64_t record_journal_bytes(const journal_t *j, const journal_req_t *r)
{
    uint32_t len = r->data ? r->data->len : 0;
    if (r->type == JREC_ADD && j->cfg.direct && j->cfg.large_entry_bytes &&
        len >= j->cfg.large_entry_bytes)
        return JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES;
    return JOURNAL_HEADER_BYTES + (uint64_t)len;
}

/* Whether `bytes` more go to the next file: this one is full, or they would
 * be past its zeros with a zeroed (or reused) spare to roll to (spare.h). A
 * file's first record always goes in. Decided before a record is encoded:
 * its magic and checksum are its file's. */
static bool journal_needs_roll(const journal_t *j, uint64_t bytes)
{
    return j->off > 0 &&
           (j->off + bytes > j->cfg.file_size_bytes ||
            (j->off + bytes > j->zeroed && spares_ready(j->cfg.spares, SPARE_JOURNAL)));
}

/* Appends one record to the group; false (nothing added) when the group is
 * full, or when the record would need the next file (the next group opens it). */
static bool group_add(journal_t *j, journal_req_t *r)
{
    if (j->gcount > 0 &&
        (group_full(j) || journal_needs_roll(j, j->gbytes + record_journal_bytes(j, r))))
        return false;
    /* room for an ADD_REF and the pad (only a group grown for a large O_DIRECT
     * copy can lack it; a group's first record always has it) */
    size_t ref = JOURNAL_HEADER_BYTES + JOURNAL_REF_BYTES;
    if (j->gbuf_len + ref + JOURNAL_DIO_ALIGN_MAX > j->gbuf_cap && gbuf_grow(j, ref) != 0)
        return false;
    r->pick_us = clock_mono_us();
    if (r->type == JREC_ADD && j->cfg.direct && j->cfg.large_entry_bytes &&
        r->data->len >= j->cfg.large_entry_bytes) {
        int added = group_add_direct(j, r);
        if (added >= 0)
            return added == 1;
    }
    uint32_t len = r->data ? r->data->len : 0;
    const uint8_t *payload = r->data ? r->data->data : NULL;
    bool copy = len <= JOURNAL_COPY_MAX || j->dio_fd >= 0;
    size_t copied = JOURNAL_HEADER_BYTES + (copy ? len : 0);
    if (j->gbuf_len + copied + JOURNAL_DIO_ALIGN_MAX > j->gbuf_cap && gbuf_grow(j, copied) != 0) {
        if (j->gcount > 0)
            return false;                                  /* the next group tries again, alone */
        dio_off(j, "no memory for a large record's copy"); /* buffered, from its qbuf */
        copy = len <= JOURNAL_COPY_MAX;
        copied = JOURNAL_HEADER_BYTES + (copy ? len : 0);
    }
    assert(j->gbuf_len + copied <= j->gbuf_cap);
    uint8_t *h = j->gbuf + j->gbuf_len;
    group_encode_header(j, h, r->type, r, len);
    uint32_t crc = crc32c(j->seed, h, JOURNAL_HEADER_BYTES);
    if (copy && len) /* copied and checksummed in one pass */
        crc = crc32c_copy(crc, h + JOURNAL_HEADER_BYTES, payload, len);
    else
        crc = crc32c(crc, payload, len);
    put_le32(h + 8, crc);
    j->gbuf_len += copied;
    if (!copy) {
        j->iov[j->iovcnt++] = (struct iovec){j->gbuf + j->gseg_start, j->gbuf_len - j->gseg_start};
        j->iov[j->iovcnt++] = (struct iovec){(void *)payload, len};
        j->gseg_start = j->gbuf_len;
    }
    j->gbytes += JOURNAL_HEADER_BYTES + len;
    j->gcount++;
    if (r->type != JREC_CHECKPOINT)
        j->jsync = true;
    return true;
}

/* ---------------------------------------------- direct records' write -- */

/* The group's direct records: written, and synced when the journal syncs. */
static int direct_write(journal_t *j)
{
    return elog_direct_write(j->cfg.direct, j->diov, j->diovcnt, j->dstart, j->cfg.sync);
}

static void *dsync_main(void *p)
{
    journal_t *j = p;
    pthread_mutex_lock(&j->dmu);
    for (;;) {
        while (!j->dsync_busy && !j->dsync_stop)
            pthread_cond_wait(&j->dcv, &j->dmu);
        if (!j->dsync_busy)
            break; /* stopping, nothing asked */
        pthread_mutex_unlock(&j->dmu);
        int rc = direct_write(j); /* the journal thread waits for it before touching diov */
        pthread_mutex_lock(&j->dmu);
        j->dsync_rc = rc;
        j->dsync_busy = false;
        pthread_cond_broadcast(&j->dcv);
    }
    pthread_mutex_unlock(&j->dmu);
    return NULL;
}

/* Starts the group's direct write on the bk-dsync thread; false if there is
 * none (the caller writes itself). */
static bool dsync_start(journal_t *j)
{
    if (!j->dsync_started)
        return false;
    pthread_mutex_lock(&j->dmu);
    j->dsync_busy = true;
    pthread_cond_broadcast(&j->dcv);
    pthread_mutex_unlock(&j->dmu);
    return true;
}

static int dsync_wait(journal_t *j)
{
    pthread_mutex_lock(&j->dmu);
    while (j->dsync_busy)
        pthread_cond_wait(&j->dcv, &j->dmu);
    int rc = j->dsync_rc;
    pthread_mutex_unlock(&j->dmu);
    return rc;
}

/* The group from gbuf (the carry first), padded to whole blocks, at the
 * carry's block. 0 or -errno (-EINVAL: the file system refused O_DIRECT). */
static int group_write_dio(journal_t *j)
{
    size_t a = j->align;
    assert((j->gbuf_len + a - 1) / a * a <= j->gbuf_cap && j->carry_off % a == 0);
    return bk_pwrite_padded(j->dio_fd, j->gbuf, j->gbuf_len, j->carry_off, a);
}

/* After an O_DIRECT group: the file's last partial block becomes the carry;
 * a gbuf grown for a large record goes back to its first size. */
static void group_keep_carry(journal_t *j)
{
    size_t end = j->gbuf_len, keep_from = end / j->align * j->align;
    memmove(j->gbuf, j->gbuf + keep_from, end - keep_from);
    j->carry_off += keep_from;
    j->carry = end - keep_from;
    void *p;
    if (j->gbuf_cap > j->gbuf_base &&
        posix_memalign(&p, JOURNAL_DIO_ALIGN_MAX, j->gbuf_base) == 0) {
        memcpy(p, j->gbuf, j->carry);
        free(j->gbuf);
        j->gbuf = p;
        j->gbuf_cap = j->gbuf_base;
    }
}

static void journal_done_on_loop(void *p)
{
    journal_done_t *d = p;
    d->j->fn(d->j->ctx, d->begin, d->end, d->rc, d->pos);
    free(d);
}

/* One completion for slots [begin, end) to the loop; pos: where the journal
 * ends after them. */
static void journal_post(journal_t *j, uint64_t begin, uint64_t end, int rc, journal_pos_t pos)
{
    journal_done_t *d = malloc(sizeof *d);
    if (d)
        *d = (journal_done_t){j, begin, end, rc, pos};
    if (!d || qloop_post(j->mb, journal_done_on_loop, d) != 0) {
        log_error("bookie", "journal: out of memory posting a completion");
        abort(); /* the adds would never complete: fail loudly */
    }
}

/* Slots [begin, taken) durable (or failed): stamped and posted. */
static void group_complete(journal_t *j, uint64_t begin, int rc, journal_pos_t pos)
{
    uint64_t done = clock_mono_us();
    for (uint64_t i = begin; i < j->taken; i++)
        j->ring[i % j->cfg.ring_slots].durable_us = done;
    journal_post(j, begin, j->taken, rc, pos);
}

/* fdatasync of the journal file, counted and timed as the groups' are. */
static int journal_sync_file(journal_t *j)
{
    uint64_t t0 = clock_mono_us();
    int rc = fdatasync(j->fd) < 0 ? -errno : 0;
    uint64_t t1 = clock_mono_us();
    atomic_fetch_add(&j->syncs, 1);
    atomic_fetch_add(&j->sync_us, t1 - t0);
    if (j->cfg.sync_latency)
        latq_record(j->cfg.sync_latency, t1 - t0, t1);
    if (rc == 0)
        j->unsynced = false;
    return rc;
}

/* A group's direct records written (and synced), since dt0: counted and
 * timed. */
static void direct_account(journal_t *j, int rc, uint64_t dt0)
{
    uint64_t dt1 = clock_mono_us();
    atomic_fetch_add(&j->direct_syncs, j->cfg.sync && rc == 0);
    atomic_fetch_add(&j->direct_sync_us, dt1 - dt0);
    if (j->cfg.direct_latency && rc == 0)
        latq_record(j->cfg.direct_latency, dt1 - dt0, dt1);
    atomic_fetch_add(&j->direct_bytes, rc == 0 ? j->dbytes : 0);
}

/* Writes the group of slots [begin, taken) and completes it, or fails it
 * (-errno; completed already when its adds were durable before the failure). */
static int group_write(journal_t *j, uint64_t begin)
{
    bool dio = j->dio_fd >= 0;
    if (!dio && j->gbuf_len > j->gseg_start)
        j->iov[j->iovcnt++] = (struct iovec){j->gbuf + j->gseg_start, j->gbuf_len - j->gseg_start};
    int rc = 0;
    /* The records the group's ADD_REFs point at: written and synced beside
     * the journal (both before the group completes). */
    uint64_t dt0 = clock_mono_us();
    bool gated = j->cfg.gate && io_gate_write_begin(j->cfg.gate, j->gbytes + j->dbytes);
    /* Only large adds: their records are the durable copy (a restart reads
     * a direct log's tail back, elog_direct_scan_tail), so the journal's
     * references are written without an fdatasync of their own, one device
     * flush per group instead of two, and on this thread (no hand-off). */
    bool one = j->cfg.large_one_sync && j->cfg.sync && j->dcount && !j->jsync;
    /* A new direct log gets no durable record before every reference into
     * the older ones is durable: after a crash only the newest direct log's
     * tail is read back. */
    if (j->droll && j->unsynced)
        rc = journal_sync_file(j);
    bool dwriting = rc == 0 && j->dcount && !one && dsync_start(j);
    if (rc == 0 && j->dcount && !dwriting)
        rc = direct_write(j);
    /* One sync: the adds are durable with their direct records, so they
     * complete now, before their references are written (a failure of that
     * write turns the bookie read-only, and a crash before it leaves records
     * the restart reads back). */
    bool early = rc == 0 && one;
    if (early) {
        direct_account(j, 0, dt0);
        atomic_fetch_add(&j->one_sync_groups, 1);
        elog_direct_publish(j->cfg.direct);
        group_complete(j, begin, 0, (journal_pos_t){j->seq, j->off + j->gbytes});
    }
    bool refused = false;
    if (rc == 0 && dio) {
        rc = group_write_dio(j);
        if (rc == -EINVAL) { /* the same bytes, buffered (the carry's are on the disk) */
            refused = true;
            rc = bk_pwrite_all(j->fd, j->gbuf, j->gbuf_len, j->carry_off);
        }
    } else if (rc == 0) {
        rc = bk_pwritev_all(j->fd, j->iov, j->iovcnt, j->off);
    }
    int inj = atomic_exchange(&j->inject, 0);
    if (rc == 0 && inj)
        rc = inj;
    if (rc == 0 && j->cfg.sync && !one)
        rc = journal_sync_file(j);
    if (dwriting) { /* always waited for: the next group writes that log */
        int drc = dsync_wait(j);
        if (rc == 0)
            rc = drc;
    }
    if (gated)
        io_gate_write_end(j->cfg.gate);
    if (j->dcount && !early)
        direct_account(j, rc, dt0);
    if (rc) {
        log_error("bookie",
                  "journal: write of %u records at %016" PRIx64 ".jnl:%" PRIu64
                  " failed: %s; the bookie turns read-only",
                  j->gcount, j->seq, j->off, q_strerror(rc));
        /* adds completed already: the failure alone, for the bookie's state */
        group_complete(j, early ? j->taken : begin, rc, (journal_pos_t){j->seq, j->off});
        return rc;
    }
    j->off += j->gbytes;
    if (one)
        j->unsynced = true;
    spares_note_written(j->cfg.spares, SPARE_JOURNAL, j->gbytes);
    spares_note_written(j->cfg.spares, SPARE_DIRECT, j->dbytes);
    if (refused) {
        dio_off(j, "O_DIRECT write refused");
    } else if (dio) {
        atomic_fetch_add(&j->dio_groups, 1);
        group_keep_carry(j);
        assert(j->off == j->carry_off + j->carry);
    }
    if (j->dcount && !early)
        elog_direct_publish(j->cfg.direct);
    if (!early)
        group_complete(j, begin, 0, (journal_pos_t){j->seq, j->off});
    return 0;
}

static uint64_t journal_published_tail(journal_t *j)
{
    pthread_mutex_lock(&j->lock);
    uint64_t t = j->tail;
    pthread_mutex_unlock(&j->lock);
    return t;
}

/* The next file, before the group's first record (the carry stays with the
 * old file; the records open the new one). 0; or, when the file system has
 * no room for it (ENOSPC, EDQUOT: nothing of the group encoded or written),
 * QE_READ_ONLY for the slots queued now, and the next group tries again; any
 * other failure is the journal's last (-errno). */
static int journal_roll(journal_t *j)
{
    /* References written without a sync made durable before any record of
     * the next file: replay ends a file at its first hole and goes on with the
     * next, whose references into the same direct log would put the start of
     * the log's read-back (elog_direct_scan_tail) past the lost ones. */
    if (j->unsynced) {
        int rc = journal_sync_file(j);
        if (rc) {
            log_error("bookie", "journal: fdatasync of %016" PRIx64 ".jnl failed: %s", j->seq,
                      q_strerror(rc));
            return rc;
        }
    }
    uint64_t t0 = clock_mono_us();
    int rc = atomic_exchange(&j->inject_roll, 0);
    if (rc == 0)
        rc = journal_file_create(j, j->seq + 1);
    if (rc == 0 && j->cfg.roll_latency) {
        uint64_t t1 = clock_mono_us();
        latq_record(j->cfg.roll_latency, t1 - t0, t1);
    }
    if (rc == -ENOSPC || rc == -EDQUOT) {
        if (!j->roll_failing)
            log_warn("bookie",
                     "journal: no room for the next journal file (%s): adds fail until "
                     "there is (tried again at each group)",
                     q_strerror(rc));
        j->roll_failing = true;
        return QE_READ_ONLY;
    }
    if (rc == 0 && j->roll_failing) {
        log_info("bookie", "journal: the next journal file made: adds are taken again");
        j->roll_failing = false;
    }
    return rc;
}

/* Takes what is queued (looking again while the group has room and time),
 * writes it, posts one completion. */
static void journal_run_group(journal_t *j, uint64_t avail)
{
    uint64_t begin = j->taken, t0 = clock_mono_us();
    int rc = j->failed;
    if (rc == 0 &&
        journal_needs_roll(j, record_journal_bytes(j, &j->ring[j->taken % j->cfg.ring_slots]))) {
        rc = journal_roll(j);
        if (rc == QE_READ_ONLY) { /* not now: every slot queued fails, none encoded */
            j->taken = avail;
            journal_post(j, begin, avail, rc, (journal_pos_t){j->seq, j->off});
            return;
        }
        j->failed = rc;
    }
    group_reset(j);
    for (;;) {
        while (j->taken < avail && group_add(j, &j->ring[j->taken % j->cfg.ring_slots]))
            j->taken++;
        if (j->taken < avail || group_full(j) || clock_mono_us() - t0 >= j->cfg.group_wait_us_max)
            break;
        avail = journal_published_tail(j); /* drained: look once more, never wait */
        if (j->taken == avail)
            break;
    }
    assert(j->taken > begin);
    if (rc == 0)
        j->failed = group_write(j, begin); /* completes the group */
    else
        group_complete(j, begin, rc, (journal_pos_t){j->seq, j->off});
}

static void *journal_main(void *p)
{
    journal_t *j = p;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        while (j->taken == j->tail && !j->stopping)
            pthread_cond_wait(&j->cond, &j->lock);
        uint64_t avail = j->tail;
        pthread_mutex_unlock(&j->lock);
        if (j->taken == avail)
            return NULL; /* stopping and drained */
        journal_run_group(j, avail);
    }
}

/* ------------------------------------------------------------ lifecycle -- */

int journal_open(const journal_config_t *cfg, uint64_t seq, qloop_mailbox_t *mb,
                 journal_group_fn fn, void *ctx, journal_t **out)
{
    journal_t *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->cfg = *cfg;
    j->dir = strdup(cfg->dir);
    j->cfg.dir = j->dir;
    j->mb = mb;
    j->fn = fn;
    j->ctx = ctx;
    j->fd = -1;
    j->ring = calloc(cfg->ring_slots, sizeof *j->ring);
    j->dio_fd = -1;
    /* + a carry and a pad (O_DIRECT): only an O_DIRECT group's large copy grows it */
    j->gbuf_cap = (size_t)cfg->group_bytes_max + JOURNAL_COPY_MAX + JOURNAL_HEADER_BYTES +
                  2 * JOURNAL_DIO_ALIGN_MAX;
    j->gbuf_base = j->gbuf_cap;
    void *gbuf = NULL;
    j->gbuf = posix_memalign(&gbuf, JOURNAL_DIO_ALIGN_MAX, j->gbuf_cap) == 0 ? gbuf : NULL;
    j->dhdr = malloc((size_t)GROUP_DIRECT_MAX * ELOG_HEADER_BYTES);
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    pthread_mutex_init(&j->dmu, NULL);
    pthread_cond_init(&j->dcv, NULL);
    int rc = (!j->dir || !j->ring || !j->gbuf || !j->dhdr) ? -ENOMEM : journal_file_create(j, seq);
    if (rc == 0 && pthread_create(&j->thread, NULL, journal_main, j) != 0)
        rc = -EAGAIN;
    if (rc) {
        journal_free(j);
        return rc;
    }
    pthread_setname_np(j->thread, "bk-journal");
    j->started = true;
    /* Without it the journal thread writes the direct records itself, first. */
    if (cfg->direct && pthread_create(&j->dsync_thread, NULL, dsync_main, j) == 0) {
        pthread_setname_np(j->dsync_thread, "bk-dsync");
        j->dsync_started = true;
    }
    *out = j;
    return 0;
}

void journal_stop(journal_t *j)
{
    if (!j || !j->started)
        return;
    pthread_mutex_lock(&j->lock);
    j->stopping = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    pthread_join(j->thread, NULL);
    j->started = false;
    if (j->unsynced && j->failed == 0 && fdatasync(j->fd) == 0) /* tidy: replay needs none */
        j->unsynced = false;
    if (j->dsync_started) {
        pthread_mutex_lock(&j->dmu);
        j->dsync_stop = true;
        pthread_cond_broadcast(&j->dcv);
        pthread_mutex_unlock(&j->dmu);
        pthread_join(j->dsync_thread, NULL);
        j->dsync_started = false;
    }
}

void journal_free(journal_t *j)
{
    if (!j)
        return;
    assert(!j->started);
    assert(j->head == j->tail); /* every slot completed */
    if (j->fd >= 0)
        close(j->fd);
    if (j->dio_fd >= 0)
        close(j->dio_fd);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->dcv);
    pthread_mutex_destroy(&j->dmu);
    free(j->gbuf);
    free(j->dhdr);
    free(j->ring);
    free(j->dir);
    free(j);
}

/* --------------------------------------------------------------- replay -- */

typedef struct jfile {
    uint64_t seq;
    char name[32];
} jfile_t;

static int jfile_cmp(const void *a, const void *b)
{
    const jfile_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The journal files of dir sorted by seq; *out freed by the caller. */
static int journal_list(const char *dir, jfile_t **out, size_t *n)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t cap = 16, cnt = 0;
    jfile_t *v = malloc(cap * sizeof *v);
    struct dirent *de;
    while (v && (de = readdir(d))) {
        uint64_t seq;
        char tail[8];
        if (strlen(de->d_name) != 20 || sscanf(de->d_name, "%16" SCNx64 "%7s", &seq, tail) != 2 ||
            strcmp(tail, ".jnl") != 0)
            continue;
        if (cnt == cap) {
            jfile_t *nv = realloc(v, (cap *= 2) * sizeof *v);
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
        }
        v[cnt].seq = seq;
        memcpy(v[cnt].name, de->d_name, 21); /* 20 characters (checked above) and the NUL */
        cnt++;
    }
    closedir(d);
    if (!v)
        return -ENOMEM;
    qsort(v, cnt, sizeof *v, jfile_cmp);
    *out = v;
    *n = cnt;
    return 0;
}

uint32_t journal_crc_seed(uint32_t format, uint64_t seq)
{
    if (format < 3)
        return 0;
    uint8_t b[8];
    put_le64(b, seq);
    return crc32c(0, b, sizeof b);
}

int64_t journal_check_record(const uint8_t *p, uint64_t avail, uint32_t format, uint64_t seq,
                             const char **why)
{
    if (avail < JOURNAL_HEADER_BYTES) {
        for (uint64_t i = 0; i < avail; i++)
            if (p[i]) {
                *why = "torn header";
                return -1;
            }
        return 0;
    }
    uint32_t magic = get_le32(p);
    if (magic == 0 && get_le32(p + 4) == 0 && get_le32(p + 8) == 0)
        return 0;
    uint32_t len = get_le32(p + 4), type = get_le32(p + 12);
    if (magic != (format >= 3 ? JOURNAL_MAGIC_V3 : JOURNAL_MAGIC)) {
        *why = "bad magic";
        return -1;
    }
    if (len > JOURNAL_PAYLOAD_MAX || JOURNAL_HEADER_BYTES + (uint64_t)len > avail) {
        *why = "torn record (length beyond the end of the file)";
        return -1;
    }
    if (type < JREC_ADD || type > JREC_ADD_REF) {
        *why = "bad type";
        return -1;
    }
    if (type == JREC_ADD_REF && len != JOURNAL_REF_BYTES) {
        *why = "bad reference record (length)";
        return -1;
    }
    uint8_t h[JOURNAL_HEADER_BYTES];
    memcpy(h, p, sizeof h);
    put_le32(h + 8, 0);
    uint32_t crc =
        crc32c(crc32c(journal_crc_seed(format, seq), h, sizeof h), p + JOURNAL_HEADER_BYTES, len);
    if (crc != get_le32(p + 8)) {
        *why = "checksum mismatch";
        return -1;
    }
    return JOURNAL_HEADER_BYTES + (int64_t)len;
}

/* Replays one file from off. *ended = true when a bad record ended the
 * journal (formats 1 and 2). Format 3: a bad record ends the file; the last
 * one (`last`) is truncated there. */
static int journal_replay_file(const char *path, uint64_t seq, uint64_t off, uint32_t format,
                               bool last, journal_replay_fn fn, void *ctx, bool *ended)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    uint64_t size = (uint64_t)st.st_size;
    const uint8_t *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            int rc = -errno;
            close(fd);
            return rc;
        }
    }
    int rc = 0;
    const char *why = NULL;
    while (off < size) {
        int64_t n = journal_check_record(map + off, size - off, format, seq, &why);
        if (n <= 0)
            break;
        const uint8_t *p = map + off;
        journal_record_t rec = {get_le32(p + 12),
                                (int64_t)get_le64(p + 16),
                                (int64_t)get_le64(p + 24),
                                (int64_t)get_le64(p + 32),
                                p + JOURNAL_HEADER_BYTES,
                                get_le32(p + 4),
                                {seq, off}};
        rc = fn(ctx, &rec);
        if (rc == JOURNAL_REPLAY_END) {
            why = "reference to a missing or damaged entry-log record";
            rc = 0;
            break;
        }
        if (rc)
            break;
        off += (uint64_t)n;
    }
    if (map)
        munmap((void *)map, size);
    if (rc == 0 && why && format >= 3) {
        /* a torn write, or the bytes of the older file this one was written over */
        log_info("bookie", "journal: %s ends at offset %" PRIu64 " (%s)%s", path, off, why,
                 last ? "; truncated there" : "");
        if (last && (ftruncate(fd, (off_t)off) < 0 || fsync(fd) < 0))
            rc = -errno;
    } else if (rc == 0 && why) {
        log_warn("bookie",
                 "journal: %s at %s offset %" PRIu64 ": the journal ends here; "
                 "truncating (the record and anything after it are not replayed)",
                 why, path, off);
        *ended = true;
        if (ftruncate(fd, (off_t)off) < 0 || fsync(fd) < 0)
            rc = -errno;
    }
    close(fd);
    return rc;
}

int journal_replay(const char *dir, journal_pos_t from, uint32_t format, journal_replay_fn fn,
                   void *ctx, uint64_t *next_seq)
{
    jfile_t *files;
    size_t n;
    int rc = journal_list(dir, &files, &n);
    if (rc)
        return rc;
    uint64_t max_seq = from.seq;
    bool ended = false;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (files[i].seq > max_seq)
            max_seq = files[i].seq;
        if (files[i].seq < from.seq)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (ended) {
            log_warn("bookie", "journal: %s follows a bad record and is not replayed", path);
            continue;
        }
        rc = journal_replay_file(path, files[i].seq, files[i].seq == from.seq ? from.off : 0,
                                 format, i + 1 == n, fn, ctx, &ended);
        if (rc)
            log_error("bookie", "journal: replay of %s failed: %s", path, q_strerror(rc));
    }
    free(files);
    *next_seq = max_seq + 1;
    return rc;
}

int journal_trim(const char *dir, uint64_t before_seq, struct spares *reuse)
{
    jfile_t *files;
    size_t n;
    int rc = journal_list(dir, &files, &n);
    if (rc)
        return rc;
    bool removed = false;
    size_t below = 0;
    while (below < n && files[below].seq < before_seq)
        below++;
    for (size_t i = 0; i < below; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        /* the newest: written over by the journal, its blocks not freed */
        if (reuse && i + 1 == below && spares_offer(reuse, SPARE_JOURNAL, path) == 0) {
            removed = true;
            continue;
        }
        int trc = bk_trash(path); /* logged if it fails */
        if (trc)
            rc = trc;
        removed = true;
    }
    free(files);
    if (removed && rc == 0)
        rc = bk_fsync_dir(dir);
    return rc;
}
