/*
 * quire_bookie.h — the `quire bookie` mode: one bookie process of a cluster,
 * serving its storage to brokers over the bookie RPC (docs/bookie-rpc.md).
 */
#ifndef QUIRE_SRC_BOOKIE_H
#define QUIRE_SRC_BOOKIE_H

/* Runs a bookie until SIGTERM or SIGINT. argv[0] is ignored (the mode name,
 * or the program name followed by "bookie", which is skipped too); options:
 *   --data-dir DIR                 where journal/ and ledgers/ live (required)
 *   --bookiePort=N                 TCP port (3181; 0 picks a free one)
 *   --bindAddress=ADDR             address to listen on (127.0.0.1)
 *   --journalSyncData=true|false   fdatasync the journal before acking (true)
 * each also accepted as "--name value". Prints "listening on ADDR:PORT" on
 * stdout once serving. Returns the process exit status: 0 after a clean stop,
 * 1 when the bookie or the server cannot start, 2 for a usage error. */
int quire_bookie_main(int argc, char **argv);

#endif
