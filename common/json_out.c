/*
 * json_out.c — compact JSON text written straight into a buffer (json_out.h).
 */
#include "common/json_out.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

void jo_init(json_out_t *o, size_t cap)
{
    memset(o, 0, sizeof *o);
    o->cap = cap < 64 ? 64 : cap;
    o->buf = malloc(o->cap);
    if (!o->buf)
        o->err = -ENOMEM;
}

/* Room for n more bytes and a NUL. */
static bool reserve(json_out_t *o, size_t n)
{
    if (o->err)
        return false;
    if (o->len + n + 1 <= o->cap)
        return true;
    size_t cap = o->cap * 2;
    while (cap < o->len + n + 1)
        cap *= 2;
    char *b = realloc(o->buf, cap);
    if (!b) {
        o->err = -ENOMEM;
        return false;
    }
    o->buf = b;
    o->cap = cap;
    return true;
}

static void put(json_out_t *o, const char *s, size_t n)
{
    if (reserve(o, n)) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
    }
}

/* The separator before a value (or a member's name). */
static void before_value(json_out_t *o)
{
    if (o->after_key) {
        o->after_key = false;
        return;
    }
    if (o->has_items[o->depth]) {
        if (o->depth == 0) { /* a document is one value */
            o->err = o->err ? o->err : QE_INVALID;
            return;
        }
        put(o, ",", 1);
    }
    o->has_items[o->depth] = true;
}

static void open_nest(json_out_t *o, char c)
{
    if (o->err)
        return;
    if (o->depth == JO_DEPTH_MAX) {
        o->err = QE_INVALID;
        return;
    }
    before_value(o);
    put(o, &c, 1);
    o->depth++;
    o->has_items[o->depth] = false;
    o->closer[o->depth] = c == '{' ? '}' : ']';
}

void jo_obj(json_out_t *o)
{
    open_nest(o, '{');
}

void jo_arr(json_out_t *o)
{
    open_nest(o, '[');
}

void jo_end(json_out_t *o)
{
    if (o->err)
        return;
    if (o->depth == 0 || o->after_key) {
        o->err = QE_INVALID;
        return;
    }
    put(o, &o->closer[o->depth], 1);
    o->depth--;
}

/* Length of str if it needs no escaping (printable ASCII, no '"' or '\\'),
 * else SIZE_MAX. Keys and most values are such. */
static size_t plain_len(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n = 0;
    while (s[n] >= 0x20 && s[n] < 0x80 && s[n] != '"' && s[n] != '\\')
        n++;
    return s[n] == '\0' ? n : SIZE_MAX;
}

void jo_key(json_out_t *o, const char *name)
{
    if (o->err)
        return;
    if (o->after_key || o->depth == 0) {
        o->err = QE_INVALID;
        return;
    }
    jo_str(o, name);
    put(o, ":", 1);
    o->after_key = true;
}

void jo_int(json_out_t *o, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    before_value(o);
    put(o, p, (size_t)(tmp + sizeof tmp - p));
}

/* Length of the UTF-8 sequence starting at s (a lead byte >= 0x80), or 0. */
static size_t utf8_seq(const unsigned char *s)
{
    size_t n;
    uint32_t cp;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2, cp = s[0] & 0x1F;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3, cp = s[0] & 0x0F;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void jo_str(json_out_t *o, const char *str)
{
    static const char hex[] = "0123456789ABCDEF";
    before_value(o);
    size_t plain = plain_len(str);
    if (plain != SIZE_MAX) { /* one copy */
        if (reserve(o, plain + 2)) {
            o->buf[o->len++] = '"';
            memcpy(o->buf + o->len, str, plain);
            o->len += plain;
            o->buf[o->len++] = '"';
        }
        return;
    }
    put(o, "\"", 1);
    const unsigned char *s = (const unsigned char *)str;
    while (*s && !o->err) {
        const unsigned char *run = s;
        while (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\')
            s++;
        put(o, (const char *)run, (size_t)(s - run));
        if (!*s)
            break;
        if (*s >= 0x80) {
            size_t n = utf8_seq(s);
            if (n == 0) {
                o->err = QE_INVALID;
                break;
            }
            put(o, (const char *)s, n);
            s += n;
            continue;
        }
        char esc[7] = {'\\', 0};
        size_t n = 2;
        switch (*s) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[*s >> 4];
            esc[5] = hex[*s & 15];
            n = 6;
        }
        put(o, esc, n);
        s++;
    }
    put(o, "\"", 1);
}

void jo_raw(json_out_t *o, const char *text, size_t n)
{
    before_value(o);
    put(o, text, n);
}

char *jo_finish(json_out_t *o, size_t *len, int *err)
{
    if (!o->err && (o->depth != 0 || o->after_key || o->len == 0))
        o->err = QE_INVALID;
    char *out = NULL;
    if (!o->err) {
        o->buf[o->len] = '\0';
        out = o->buf;
        *len = o->len;
    } else {
        free(o->buf);
    }
    if (err)
        *err = o->err;
    o->buf = NULL;
    o->len = o->cap = 0;
    return out;
}
