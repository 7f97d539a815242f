/*
 * fuzz_frame.c — libFuzzer target for the Pulsar frame codec.
 *
 * Feeds the input to frame_decode as a stream (frame after frame, as a
 * connection's read buffer would), with two frame size limits, and feeds every
 * SEND/MESSAGE slice and the raw input to frame_parse_metadata,
 * frame_scan_metadata and frame_verify_checksum. Invariants checked (abort on
 * violation, so libFuzzer reports them): a decoded frame lies inside the input;
 * QE_AGAIN consumes nothing; a payload slice lies inside its frame; a prefix of
 * a decodable frame never decodes; what the scan reads lies inside the slice,
 * and metadata that unpacks scans, to the same payload offset. Memory errors
 * are ASan's to find.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common/errors.h"
#include "server/codec/frame.h"

static void fuzz_check(int cond)
{
    if (!cond)
        abort();
}

static void fuzz_metadata(const uint8_t *p, size_t n)
{
    Pulsar__Proto__MessageMetadata *md = NULL;
    size_t off = 0;
    frame_meta_scan_t sc;
    int scanned = frame_scan_metadata(p, n, &sc);
    if (scanned == 0) {
        fuzz_check(sc.payload_offset <= n && sc.num_messages >= 1);
        fuzz_check(!sc.has_partition_key ||
                   (sc.partition_key >= p && sc.partition_key + sc.partition_key_len <= p + n));
        fuzz_check(!sc.has_ordering_key ||
                   (sc.ordering_key >= p && sc.ordering_key + sc.ordering_key_len <= p + n));
    }
    if (frame_parse_metadata(p, n, &md, &off) == 0) {
        fuzz_check(off <= n);
        fuzz_check(scanned == 0 && sc.payload_offset == off);
        frame_metadata_free(md);
    }
    int v = frame_verify_checksum(p, n);
    fuzz_check(v == 0 || v == 1 || v == QE_NOT_FOUND || v == QE_CORRUPT);
}

static void fuzz_stream(const uint8_t *data, size_t size, size_t max_frame)
{
    size_t at = 0;
    while (at < size) {
        frame_t f;
        size_t consumed = 0;
        int rc = frame_decode(data + at, size - at, max_frame, &f, &consumed);
        if (rc != 0) {
            fuzz_check(consumed == 0);
            return;
        }
        fuzz_check(consumed == f.frame_len && consumed <= size - at && consumed >= 9);
        if (f.payload) {
            fuzz_check(f.payload >= data + at && f.payload + f.payload_len <= data + at + consumed);
            fuzz_metadata(f.payload, f.payload_len);
        }
        /* One byte short of a frame that decodes must ask for more. */
        frame_t g;
        size_t c2 = 0;
        fuzz_check(frame_decode(data + at, consumed - 1, max_frame, &g, &c2) == QE_AGAIN);
        frame_free(&f);
        at += consumed;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream(data, size, FRAME_DEFAULT_MAX_FRAME_BYTES);
    fuzz_stream(data, size, 64);
    fuzz_metadata(data, size);
    return 0;
}
