/*
 * json_out.h — writes compact JSON text straight into a growing buffer.
 *
 * For documents the storage layers write on every topic or ledger they
 * create (ledger and managed-ledger metadata): building a jansson tree and
 * dumping it cost ~70,000 instructions per topic, most of the loop thread's
 * share of creating one. The output is what jansson's json_dumps(JSON_COMPACT)
 * gives for the same keys in the same order: no spaces, '/' and non-ASCII
 * UTF-8 as they are, '"' '\\' and control characters escaped as jansson does.
 *
 * Usage: jo_init, then jo_obj/jo_arr ... jo_end nesting (at most JO_DEPTH_MAX
 * deep), jo_key before each member's value, then jo_finish. Errors are
 * sticky: calls after one do nothing and jo_finish reports it (-ENOMEM, or
 * QE_INVALID for a string that is not UTF-8, an unbalanced document or a
 * second value at the top).
 */
#ifndef QUIRE_COMMON_JSON_OUT_H
#define QUIRE_COMMON_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JO_DEPTH_MAX 16

typedef struct json_out {
    char *buf;
    size_t len, cap;
    int err;
    unsigned depth;
    bool after_key;                   /* the next value completes a member */
    bool has_items[JO_DEPTH_MAX + 1]; /* something written at this depth */
    char closer[JO_DEPTH_MAX + 1];    /* '}' or ']' for each open level */
} json_out_t;

/* cap: the expected size (the buffer grows as needed). */
void jo_init(json_out_t *o, size_t cap);
void jo_obj(json_out_t *o);
void jo_arr(json_out_t *o);
/* Closes the innermost object or array. */
void jo_end(json_out_t *o);
/* A member's name; the next value is its value. */
void jo_key(json_out_t *o, const char *name);
void jo_int(json_out_t *o, int64_t v);
/* A string value; QE_INVALID if s is not valid UTF-8. */
void jo_str(json_out_t *o, const char *s);
/* A value already encoded as JSON text (n bytes), copied as it is. */
void jo_raw(json_out_t *o, const char *text, size_t n);
/* The NUL-terminated text (owned by the caller, *len without the NUL), or
 * NULL with the error; the writer is emptied either way. */
char *jo_finish(json_out_t *o, size_t *len, int *err);

#endif
