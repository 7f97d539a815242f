/*
 * journal_dump.c — prints the records of bookie journal files
 * (<data_dir>/journal/<seq>.jnl; format in storage/bookie/journal.h and
 * docs/bookie.md), one line each, and where a torn or corrupt tail starts:
 * the place where the bookie's replay would stop and truncate the file.
 *
 *   journal-dump [-p] FILE...
 *
 *   offset      type        ledger       entry         lac     length  crc
 *   0           ADD              7           0          -1       1000  ok
 *   1040        FENCE            7          -1          -1          0  ok
 *   1080        ADD_REF          7           1           0         24  ok
 *               -> entry log 00000003 offset 0 length 65536 crc 1a2b3c4d (not checked here)
 *   ...
 *   end of records at offset 2080 (zeros up to the file size 4194304)
 *
 * -p also prints the first 32 bytes of each ADD payload in hex.
 *
 * Format: a file whose first record has format 3's magic ("QRJ3") is read as
 * format 3, its records checked against the seq of its name (<seq>.jnl); any
 * other as formats 1 and 2. The bookie knows the format from its checkpoint
 * file instead: a format-3 file written over an older file of format 2 that
 * crashed before its first record would show that file's records here (the
 * bookie does not replay them). -f 2 or -f 3 says the format.
 *
 * Read only: the file is never modified (replay truncates; this tool does
 * not). Records are checked with the very function replay uses
 * (journal_check_record). After a bad record the tool says why and stops,
 * as replay does. Exit status: 0 every file ends cleanly, 1 some file has a
 * torn or corrupt tail, 2 usage or I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/bookie/bookie_io.h"
#include "storage/bookie/journal.h"

static const char *type_name(uint32_t t)
{
    switch (t) {
    case JREC_ADD:
        return "ADD";
    case JREC_FENCE:
        return "FENCE";
    case JREC_DELETE:
        return "DELETE";
    case JREC_CHECKPOINT:
        return "CHECKPOINT";
    case JREC_ADD_REF:
        return "ADD_REF";
    default:
        return "?";
    }
}

static void print_header(const uint8_t *p, uint64_t off, const char *crc)
{
    printf("%-11" PRIu64 " %-10s %10" PRId64 " %11" PRId64 " %11" PRId64 " %10u  %s\n", off,
           type_name(get_le32(p + 12)), (int64_t)get_le64(p + 16), (int64_t)get_le64(p + 24),
           (int64_t)get_le64(p + 32), get_le32(p + 4), crc);
}

static void print_payload(const uint8_t *p, uint32_t len)
{
    printf("            payload:");
    for (uint32_t i = 0; i < len && i < 32; i++)
        printf(" %02x", p[i]);
    printf("%s\n", len > 32 ? " ..." : "");
}

/* Dumps one mapped file; returns 0 for a clean end, 1 for a torn tail. */
static int dump_map(const char *path, const uint8_t *map, uint64_t size, uint32_t format,
                    uint64_t seq, bool payloads)
{
    uint64_t off = 0, records = 0, adds = 0, add_bytes = 0;
    const char *why = NULL;
    printf("%s: %" PRIu64 " bytes, format %u\n", path, size, format);
    printf("%-11s %-10s %10s %11s %11s %10s  %s\n", "offset", "type", "ledger", "entry", "lac",
           "length", "crc");
    while (off < size) {
        const uint8_t *p = map + off;
        int64_t n = journal_check_record(p, size - off, format, seq, &why);
        if (n == 0)
            break;
        if (n < 0) {
            /* Show what the bad record claims when its header is whole. */
            if (size - off >= JOURNAL_HEADER_BYTES &&
                get_le32(p) == (format >= 3 ? JOURNAL_MAGIC_V3 : JOURNAL_MAGIC))
                print_header(p, off, "bad");
            if (format >= 3)
                printf("end of the file's records at offset %" PRIu64 ": %s (a torn write, or "
                       "the bytes of an older file); replay goes on with the next file, and "
                       "truncates the last one here (%" PRIu64 " bytes from here to the end)\n",
                       off, why, size - off);
            else
                printf("torn tail at offset %" PRIu64 ": %s; replay stops here and truncates "
                       "the file (%" PRIu64 " bytes from here to the end)\n",
                       off, why, size - off);
            break;
        }
        print_header(p, off, "ok");
        if (payloads && get_le32(p + 12) == JREC_ADD)
            print_payload(p + JOURNAL_HEADER_BYTES, get_le32(p + 4));
        records++;
        if (get_le32(p + 12) == JREC_ADD) {
            adds++;
            add_bytes += get_le32(p + 4);
        } else if (get_le32(p + 12) == JREC_ADD_REF) {
            journal_ref_t ref;
            journal_ref_decode(p + JOURNAL_HEADER_BYTES, &ref);
            printf("            -> entry log %08" PRIx32 " offset %" PRIu64 " length %" PRIu32
                   " crc %08" PRIx32 " (not checked here)\n",
                   ref.log_id, ref.offset, ref.length, ref.crc);
            adds++;
            add_bytes += ref.length;
        }
        off += (uint64_t)n;
    }
    if (!why)
        printf("end of records at offset %" PRIu64 " (zeros up to the file size %" PRIu64 ")\n",
               off, size);
    printf("%" PRIu64 " records, %" PRIu64 " adds, %" PRIu64 " entry bytes\n", records, adds,
           add_bytes);
    return why ? 1 : 0;
}

static int dump_file(const char *path, uint32_t format, bool payloads)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "journal-dump: %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 2;
    }
    uint64_t size = (uint64_t)st.st_size;
    const uint8_t *map = NULL;
    if (size > 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            fprintf(stderr, "journal-dump: %s: mmap: %s\n", path, strerror(errno));
            close(fd);
            return 2;
        }
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *end = NULL;
    uint64_t seq = strtoull(base, &end, 16);
    bool named = end == base + 16 && strcmp(end, ".jnl") == 0;
    if (!format)
        format = size >= 4 && get_le32(map) == JOURNAL_MAGIC_V3 ? 3 : 2;
    int rc = 2;
    if (format >= 3 && !named)
        fprintf(stderr,
                "journal-dump: %s: format 3 needs the file's seq from its name, "
                "<16 hex digits>.jnl\n",
                path);
    else
        rc = dump_map(path, map, size, format, seq, payloads);
    if (map)
        munmap((void *)map, size);
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    bool payloads = false, bad = false;
    uint32_t format = 0; /* from each file's first record */
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-p") == 0) {
            payloads = true;
            first++;
        } else if (strcmp(argv[first], "-f") == 0 && first + 1 < argc &&
                   (strcmp(argv[first + 1], "2") == 0 || strcmp(argv[first + 1], "3") == 0)) {
            format = (uint32_t)atoi(argv[first + 1]);
            first += 2;
        } else {
            bad = true;
            break;
        }
    }
    if (bad || first >= argc) {
        fprintf(stderr, "usage: journal-dump [-p] [-f 2|3] FILE...\n"
                        "  prints each record of bookie journal files (type, ledger, entry, "
                        "lac, length, crc)\n  and where a torn or corrupt tail starts; -p: "
                        "payload bytes too; -f: the format\n  (default: 3 if the first "
                        "record's magic is format 3's, else 2)\n");
        return 2;
    }
    int status = 0;
    for (int i = first; i < argc; i++) {
        int rc = dump_file(argv[i], format, payloads);
        if (rc > status)
            status = rc;
        if (i + 1 < argc)
            printf("\n");
    }
    return status;
}
