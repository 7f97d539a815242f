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

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Writes every byte of iov[0..cnt) at off (iov is modified). 0 or -errno. */
int bk_pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off);
int bk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
/* Reads exactly len bytes at off: 0, -errno, or QE_CORRUPT at early EOF. */
int bk_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* fsync of a directory, so that created, renamed or unlinked names are durable. */
int bk_fsync_dir(const char *dir);
/* mkdir -p (existing directories are success). */
int bk_mkdir(const char *path);
/* Writes len bytes to dir/name atomically: dir/name.tmp, fdatasync, rename,
 * fsync(dir). 0 or -errno. */
int bk_write_file_atomic(const char *dir, const char *name, const void *buf, size_t len);

#endif
