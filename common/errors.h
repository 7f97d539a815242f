/*
 * errors.h — Quire's error codes.
 *
 * Every function that can fail returns int: 0 on success, a negative code
 * otherwise. A negative errno (-ENOENT, -EIO, -ENOSPC, ...) passes through
 * unchanged; Quire's own conditions live below QE_BASE so they never collide
 * with errno values. errors.c holds the one table that names them; the broker
 * maps them to Pulsar's ServerError and admin-http to HTTP statuses.
 */
#ifndef QUIRE_COMMON_ERRORS_H
#define QUIRE_COMMON_ERRORS_H

#define QE_BASE (-10000)

enum {
    QE_OK = 0,
    QE_CORRUPT = QE_BASE - 1,      /* checksum or structure mismatch on disk/wire */
    QE_FENCED = QE_BASE - 2,       /* ledger fenced: this writer may add no more */
    QE_NO_LEDGER = QE_BASE - 3,    /* ledger unknown or deleted */
    QE_NO_ENTRY = QE_BASE - 4,     /* entry not (yet) stored */
    QE_BAD_VERSION = QE_BASE - 5,  /* compare-and-set lost: version mismatch */
    QE_EXISTS = QE_BASE - 6,       /* key/object already exists */
    QE_NOT_FOUND = QE_BASE - 7,    /* key/object not found */
    QE_CLOSED = QE_BASE - 8,       /* the object is closed or closing */
    QE_TIMEOUT = QE_BASE - 9,      /* an operation took longer than its bound */
    QE_UNAVAILABLE = QE_BASE - 10, /* not enough bookies/peers reachable */
    QE_TOO_LARGE = QE_BASE - 11,   /* a size bound was exceeded */
    QE_INVALID = QE_BASE - 12,     /* invalid argument or malformed input */
    QE_BUSY = QE_BASE - 13,        /* a bound on pending work is reached; retry */
    QE_NOT_EMPTY = QE_BASE - 14,   /* delete of a key/object that has children */
    QE_READ_ONLY = QE_BASE - 15,   /* e.g. an add on a closed ledger */
    QE_SHUTDOWN = QE_BASE - 16,    /* the process is stopping */
    QE_AGAIN = QE_BASE - 17,       /* need more bytes (a parser resumes later) */
    QE_INCOMPATIBLE = QE_BASE - 18, /* a schema refused by the compatibility strategy */
    QE_LAST = QE_BASE - 19,
};

/* A short description of rc (never NULL): errno text for -errno, ours otherwise. */
const char *q_strerror(int rc);

#endif
