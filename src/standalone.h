/*
 * standalone.h — `quire standalone`: broker, bookie, metadata store and admin
 * HTTP in one process, with data under one directory.
 */
#ifndef QUIRE_SRC_STANDALONE_H
#define QUIRE_SRC_STANDALONE_H

int quire_standalone_main(int argc, char **argv);

#endif
