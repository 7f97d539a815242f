/*
 * main.c — the quire binary: picks the mode from the first argument.
 *
 *   quire standalone [-c FILE] [--data-dir DIR] [--KEY=VALUE ...]
 *   quire bookie --data-dir DIR [--bookiePort=N] [--bindAddress=ADDR]
 *   quire version
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "src/quire_bookie.h"
#include "src/standalone.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: quire standalone [-c FILE] [--data-dir DIR] [--KEY=VALUE ...]\n"
               "       quire bookie --data-dir DIR [--bookiePort=N] [--bindAddress=ADDR]\n"
               "       quire version\n");
}

#ifdef QUIRE_JEMALLOC
/* jemalloc's options (docs/dependencies.md): freed pages go back to the system
 * after 1 s instead of 10, and without the intermediate "muzzy" state. In
 * scenario (e) that held the server's memory within 5-10 % of glibc's malloc
 * (456-484 MB against 436-455; 517-543 with jemalloc's defaults). */
const char *malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0";
#endif

/* A server holds a descriptor per connection and two per entry log (the log
 * and its .idx): the soft limit (1,024 on many systems) is raised to the hard
 * one, as Go's runtime and Pulsar's scripts do. */
static void raise_open_files_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            perror("quire: setrlimit(RLIMIT_NOFILE)");
    }
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "standalone") == 0 || strcmp(argv[1], "bookie") == 0))
        raise_open_files_limit();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "standalone") == 0)
        return quire_standalone_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "bookie") == 0)
        return quire_bookie_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("quire %s\n", QUIRE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "quire: unknown mode '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
