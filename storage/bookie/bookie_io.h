/*
 * bookie_io.h — small file helpers shared by the bookie's journal, entry logs,
 * index and metadata files (private to storage/bookie/).
 *
 * All on-disk integers are little-endian, written and read through put_le* /
 * get_le* so the formats do not depend on the host. The *_all helpers retry
 * short transfers and EINTR, and return 0 or -errno (a read that meets end of
 * file early returns QE_CORRUPT: the caller expected those bytes to exist).
 */
#ifndef QUIRE_STORAGE_BOOKIE_IO_H
#define QUIRE_STORAGE_BOOKIE_IO_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

/* memcpy and the byte-order macros compile to one move on little-endian
 * hosts; the loops they replace read one byte at a time (the .idx scan of a
 * start after kill -9 spent 45 % of its time in them). */
static inline void put_le32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static inline uint32_t get_le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static inline uint64_t get_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

/* Writes every byte of iov[0..cnt) at off (iov is modified). 0 or -errno. */
int bk_pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off);
int bk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
/* Reads exactly len bytes at off: 0, -errno, or QE_CORRUPT at early EOF. */
int bk_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* path opened once more with O_DIRECT (flags: O_RDONLY or O_WRONLY), or -1
 * where the file system does not take it; *align (the alignment of offsets,
 * lengths and buffers) from statx where it tells, else 4 KiB. */
int bk_open_direct(const char *path, int flags, uint32_t *align);
/* Tests only: a file system that refuses O_DIRECT at open
 * (BK_IO_REFUSE_DIRECT_OPEN: bk_open_direct fails) or at the first write
 * (BK_IO_REFUSE_DIRECT_WRITE: bk_pwrite_padded fails with -EINVAL, nothing
 * written); 0 (the default): as the file system does. */
enum { BK_IO_REFUSE_DIRECT_OPEN = 1, BK_IO_REFUSE_DIRECT_WRITE = 2 };
void bk_io_test_refuse_direct(int how);
/* An O_DIRECT write: buf[0..len) padded with zeros to whole align blocks (buf
 * has room for them) at off (aligned, as buf is). 0 or -errno (-EINVAL: the
 * file system refused it). */
int bk_pwrite_padded(int fd, uint8_t *buf, size_t len, uint64_t off, size_t align);
/* fsync of a directory, so that created, renamed or unlinked names are durable. */
int bk_fsync_dir(const char *dir);
/* mkdir -p (existing directories are success). */
int bk_mkdir(const char *path);
/* Writes len bytes to dir/name atomically: dir/name.tmp, fdatasync, rename,
 * fsync(dir). 0 or -errno. */
int bk_write_file_atomic(const char *dir, const char *name, const void *buf, size_t len);

#endif
