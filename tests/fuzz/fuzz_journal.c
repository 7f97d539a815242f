/*
 * fuzz_journal.c — libFuzzer target for the bookie's journal record check,
 * the function replay trusts to find where a journal ends: it walks the input
 * as replay walks a journal file (record after record until the end, a torn
 * record or a bad checksum) and checks that no record claims bytes beyond the
 * input. The input's first byte picks the format (2 or 3) and, for format 3,
 * the file's seq (its checksum seed).
 *
 *   CC=clang cmake -S . -B build-fuzz -G Ninja -DQUIRE_FUZZ=ON
 *   ninja -C build-fuzz fuzz_journal
 *   ./build-fuzz/tests/fuzz/fuzz_journal -max_total_time=300 SCRATCH tests/fuzz/corpus/journal
 */
#include <stdint.h>
#include <stdlib.h>

#include "storage/bookie/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint32_t format = data[0] & 1 ? 3 : 2;
    uint64_t seq = data[0] >> 1;
    data++;
    size--;
    uint64_t off = 0;
    while (off < size) {
        const char *why = NULL;
        int64_t n = journal_check_record(data + off, size - off, format, seq, &why);
        if (n < 0) {
            if (!why)
                abort(); /* a refusal always says why */
            break;
        }
        if (n == 0)
            break; /* the normal end (zeros) */
        if ((uint64_t)n > size - off)
            abort(); /* a record may never extend past the bytes it was given */
        off += (uint64_t)n;
    }
    return 0;
}
