/* perf_tests.h — the suites of unit_perf (tools/quire_perf*), one registrar per file. */
#ifndef QUIRE_TESTS_UNIT_PERF_TESTS_H
#define QUIRE_TESTS_UNIT_PERF_TESTS_H

#include "common/buf.h"
#include "server/codec/frame.h"

void perf_register_opts(void);
void perf_register_report(void);
void perf_register_wire(void);
void perf_register_client(void);
void perf_register_timer(void);

/* Decodes b as exactly one frame; 0 or the decoder's error. */
int perf_test_decode(const qbuf_t *b, frame_t *f);

#endif
