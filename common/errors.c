/* errors.c — the one table that names Quire's error codes (see errors.h). */
#include "common/errors.h"

#include <string.h>

static const char *const qe_names[] = {
    [0] = "ok",
    [1] = "corrupt data (checksum or structure mismatch)",
    [2] = "ledger is fenced",
    [3] = "no such ledger",
    [4] = "no such entry",
    [5] = "version mismatch",
    [6] = "already exists",
    [7] = "not found",
    [8] = "closed",
    [9] = "timed out",
    [10] = "not enough replicas available",
    [11] = "too large",
    [12] = "invalid argument",
    [13] = "busy, retry later",
    [14] = "not empty",
    [15] = "read only",
    [16] = "shutting down",
    [17] = "need more bytes",
    [18] = "incompatible schema",
};

const char *q_strerror(int rc)
{
    if (rc == 0)
        return qe_names[0];
    if (rc < QE_BASE && rc > QE_LAST)
        return qe_names[QE_BASE - rc];
    if (rc < 0 && rc > QE_BASE)
        return strerror(-rc);
    return "unknown error";
}
