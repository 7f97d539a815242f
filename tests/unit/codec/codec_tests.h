/* codec_tests.h — the suites of unit_codec, one registrar per test file. */
#ifndef QUIRE_TESTS_UNIT_CODEC_TESTS_H
#define QUIRE_TESTS_UNIT_CODEC_TESTS_H

#include <stddef.h>

#include "common/buf.h"
#include "server/codec/frame.h"

void codec_register_frame(void);
void codec_register_commands(void);
void codec_register_topic_name(void);
void codec_register_murmur3(void);

/* Decodes b as exactly one frame (asserting it), for round-trip tests. */
int codec_decode_whole(const qbuf_t *b, frame_t *f);

#endif
