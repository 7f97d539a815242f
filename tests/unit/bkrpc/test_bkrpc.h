/* test_bkrpc.h — the suites of unit_bkrpc, registered by test_bkrpc.c's main. */
#ifndef QUIRE_TEST_BKRPC_H
#define QUIRE_TEST_BKRPC_H

#include "tests/unit/support/test_support.h"

void bkrpc_register_codec_suite(void);

#endif
