/*
 * bookie_io.c — file helpers of the bookie (see bookie_io.h). Every function
 * either moves all the bytes asked for or returns an error; none logs (the
 * caller knows which file and why, and logs that).
 */
#include "storage/bookie/bookie_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"

static atomic_int refuse_direct; /* bk_io_test_refuse_direct */

void bk_io_test_refuse_direct(int how)
{
    atomic_store(&refuse_direct, how);
}

int bk_open_direct(const char *path, int flags, uint32_t *align)
{
    if (atomic_load(&refuse_direct) == BK_IO_REFUSE_DIRECT_OPEN)
        return -1;
    int fd = open(path, flags | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint32_t a = 4096;
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) { /* the file system says: not supported */
            close(fd);
            return -1;
        }
        while (a < sx.stx_dio_offset_align || a < sx.stx_dio_mem_align)
            a *= 2;
    }
#endif
    *align = a;
    return fd;
}

int bk_pwrite_padded(int fd, uint8_t *buf, size_t len, uint64_t off, size_t align)
{
    if (atomic_load(&refuse_direct) == BK_IO_REFUSE_DIRECT_WRITE)
        return -EINVAL;
    size_t padded = (len + align - 1) / align * align;
    memset(buf + len, 0, padded - len);
    for (size_t done = 0; done < padded;) {
        ssize_t n = pwrite(fd, buf + done, padded - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (size_t)n % align != 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

int bk_pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
    while (cnt > 0) {
        int n = cnt > IOV_MAX ? IOV_MAX : cnt;
        ssize_t w = pwritev(fd, iov, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        off += (uint64_t)w;
        size_t left = (size_t)w;
        while (cnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0 && left) {
            iov->iov_base = (uint8_t *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int bk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    struct iovec iov = {(void *)buf, len};
    return len ? bk_pwritev_all(fd, &iov, 1, off) : 0;
}

int bk_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return QE_CORRUPT;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int bk_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int bk_mkdir(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int bk_write_file_atomic(const char *dir, const char *name, const void *buf, size_t len)
{
    char tmp[PATH_MAX], dst[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = bk_pwrite_all(fd, buf, len, 0);
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = -errno;
    if (rc == 0)
        rc = bk_fsync_dir(dir);
    if (rc)
        unlink(tmp);
    return rc;
}
