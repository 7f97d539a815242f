/*
 * ledger_real.h — the unit_ledger suite that runs the ledger client against
 * real bookies (local and over TCP) rather than fake ones.
 */
#ifndef QUIRE_TESTS_LEDGER_REAL_H
#define QUIRE_TESTS_LEDGER_REAL_H

void ledger_real_register(void);

#endif
