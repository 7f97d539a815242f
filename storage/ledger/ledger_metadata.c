/*
 * ledger_metadata.c — the encoding of a ledger's metadata in the metadata store.
 *
 * Key: /ledgers/<ledger id in decimal, zero-padded to 20 digits>. Value: one
 * JSON object (UTF-8, no trailing newline), versioned by its "format" field:
 *
 *   field          type             meaning
 *   format         int              1 (readers refuse any other value)
 *   ensemble_size  int              E, 1..16
 *   write_quorum   int              Qw, 1..E
 *   ack_quorum     int              Qa, 1..Qw
 *   state          string           "OPEN" | "IN_RECOVERY" | "CLOSED"
 *   last_entry_id  int              -1, or the last entry once CLOSED
 *   length         int              bytes of entries 0..last_entry_id once CLOSED
 *   ctime_ms       int              wall clock at creation
 *   segments       array of object  ensemble history, first_entry_id increasing
 *     .first_entry_id  int          first entry written to this ensemble
 *     .length_before   int          bytes of entries 0..first_entry_id-1
 *     .bookies         [E strings]  bookie ids; slot i is ensemble index i
 *
 * Invariants checked on decode (QE_CORRUPT otherwise): 1 <= Qa <= Qw <= E <=
 * LEDGER_ENSEMBLE_MAX, 1 <= segments <= LEDGER_SEGMENTS_MAX, the first segment
 * starts at 0, first ids strictly increase, each segment has exactly E
 * non-empty ids shorter than LEDGER_BOOKIE_ID_MAX, distinct within a segment.
 * Updates are compare-and-set on the store's version of the key.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/json_out.h"
#include "common/log.h"
#include "storage/ledger/ledger_int.h"

static const char *const state_names[] = {"OPEN", "IN_RECOVERY", "CLOSED"};

const char *ledger_state_name(int state)
{
    assert(state >= 0 && state <= LEDGER_STATE_CLOSED);
    return state_names[state];
}

bool ledger_quorum_valid(const ledger_quorum_t *q)
{
    return q && q->ack_quorum >= 1 && q->ack_quorum <= q->write_quorum &&
           q->write_quorum <= q->ensemble && q->ensemble <= LEDGER_ENSEMBLE_MAX;
}

void ledger_md_path(int64_t ledger_id, char *buf, size_t size)
{
    assert(ledger_id >= 0);
    int n = snprintf(buf, size, "/ledgers/%020" PRId64, ledger_id);
    assert(n > 0 && (size_t)n < size);
    (void)n;
}

size_t ledger_md_segment_of(const ledger_md_t *md, int64_t entry_id)
{
    assert(md->nsegments >= 1);
    size_t i = md->nsegments - 1;
    while (i > 0 && md->segments[i].first_entry_id > entry_id)
        i--;
    return i;
}

int ledger_segment_alloc(ledger_segment_t *s, int ensemble)
{
    assert(ensemble >= 1 && ensemble <= LEDGER_ENSEMBLE_MAX);
    s->bookies = calloc((size_t)ensemble, sizeof *s->bookies);
    return s->bookies ? 0 : -ENOMEM;
}

void ledger_md_free(ledger_md_t *md)
{
    for (size_t i = 0; md->segments && i < md->nsegments; i++)
        free(md->segments[i].bookies);
    free(md->segments);
    md->segments = NULL;
    md->nsegments = 0;
}

int ledger_md_copy(const ledger_md_t *src, ledger_md_t *dst)
{
    *dst = *src;
    dst->segments = calloc(src->nsegments, sizeof *src->segments);
    if (!dst->segments)
        return -ENOMEM;
    for (size_t i = 0; i < src->nsegments; i++) {
        ledger_segment_t *d = &dst->segments[i];
        d->first_entry_id = src->segments[i].first_entry_id;
        d->length_before = src->segments[i].length_before;
        if (ledger_segment_alloc(d, src->q.ensemble) < 0) {
            ledger_md_free(dst);
            return -ENOMEM;
        }
        memcpy(d->bookies, src->segments[i].bookies, (size_t)src->q.ensemble * sizeof *d->bookies);
    }
    return 0;
}

/* ------------------------------------------------------------- encode -- */

int ledger_md_encode(const ledger_md_t *md, char **out, size_t *len)
{
    assert(ledger_quorum_valid(&md->q) && md->nsegments >= 1);
    json_out_t o;
    jo_init(&o, 256 + md->nsegments * (64 + (size_t)md->q.ensemble * 24));
    jo_obj(&o);
    jo_key(&o, "format");
    jo_int(&o, LEDGER_MD_FORMAT);
    jo_key(&o, "ensemble_size");
    jo_int(&o, md->q.ensemble);
    jo_key(&o, "write_quorum");
    jo_int(&o, md->q.write_quorum);
    jo_key(&o, "ack_quorum");
    jo_int(&o, md->q.ack_quorum);
    jo_key(&o, "state");
    jo_str(&o, ledger_state_name(md->state));
    jo_key(&o, "last_entry_id");
    jo_int(&o, md->last_entry_id);
    jo_key(&o, "length");
    jo_int(&o, (int64_t)md->length);
    jo_key(&o, "ctime_ms");
    jo_int(&o, md->ctime_ms);
    jo_key(&o, "segments");
    jo_arr(&o);
    for (size_t i = 0; i < md->nsegments; i++) {
        const ledger_segment_t *s = &md->segments[i];
        jo_obj(&o);
        jo_key(&o, "first_entry_id");
        jo_int(&o, s->first_entry_id);
        jo_key(&o, "length_before");
        jo_int(&o, (int64_t)s->length_before);
        jo_key(&o, "bookies");
        jo_arr(&o);
        for (int b = 0; b < md->q.ensemble; b++)
            jo_str(&o, s->bookies[b]);
        jo_end(&o);
        jo_end(&o);
    }
    jo_end(&o);
    jo_end(&o);
    int rc;
    *out = jo_finish(&o, len, &rc);
    return rc;
}

/* ------------------------------------------------------------- decode -- */

static int state_parse(const char *s)
{
    for (int i = 0; i <= LEDGER_STATE_CLOSED; i++)
        if (strcmp(s, state_names[i]) == 0)
            return i;
    return -1;
}

static int segment_from_json(json_t *js, int ensemble, ledger_segment_t *s)
{
    json_int_t first, before;
    json_t *ids;
    if (json_unpack(js, "{s:I,s:I,s:o}", "first_entry_id", &first, "length_before", &before,
                    "bookies", &ids) != 0)
        return QE_CORRUPT;
    if (first < 0 || before < 0 || !json_is_array(ids) || json_array_size(ids) != (size_t)ensemble)
        return QE_CORRUPT;
    s->first_entry_id = first;
    s->length_before = (uint64_t)before;
    if (ledger_segment_alloc(s, ensemble) < 0)
        return -ENOMEM;
    for (int i = 0; i < ensemble; i++) {
        const char *id = json_string_value(json_array_get(ids, (size_t)i));
        if (!id || !id[0] || strlen(id) >= LEDGER_BOOKIE_ID_MAX)
            return QE_CORRUPT;
        for (int j = 0; j < i; j++)
            if (strcmp(s->bookies[j], id) == 0)
                return QE_CORRUPT;
        strcpy(s->bookies[i], id);
    }
    return 0;
}

static int segments_from_json(json_t *segs, ledger_md_t *md)
{
    size_t n = json_array_size(segs);
    if (!json_is_array(segs) || n < 1 || n > LEDGER_SEGMENTS_MAX)
        return QE_CORRUPT;
    md->segments = calloc(n, sizeof *md->segments);
    if (!md->segments)
        return -ENOMEM;
    md->nsegments = n;
    for (size_t i = 0; i < n; i++) {
        int rc = segment_from_json(json_array_get(segs, i), md->q.ensemble, &md->segments[i]);
        if (rc < 0)
            return rc;
        if (i == 0 ? md->segments[0].first_entry_id != 0
                   : md->segments[i].first_entry_id <= md->segments[i - 1].first_entry_id)
            return QE_CORRUPT;
    }
    return 0;
}

static int md_from_json(json_t *root, ledger_md_t *md)
{
    int format, e, qw, qa;
    const char *state;
    json_int_t last, length, ctime;
    json_t *segs;
    if (json_unpack(root, "{s:i,s:i,s:i,s:i,s:s,s:I,s:I,s:I,s:o}", "format", &format,
                    "ensemble_size", &e, "write_quorum", &qw, "ack_quorum", &qa, "state", &state,
                    "last_entry_id", &last, "length", &length, "ctime_ms", &ctime, "segments",
                    &segs) != 0)
        return QE_CORRUPT;
    md->q = (ledger_quorum_t){.ensemble = e, .write_quorum = qw, .ack_quorum = qa};
    md->state = state_parse(state);
    md->last_entry_id = last;
    md->length = (uint64_t)length;
    md->ctime_ms = ctime;
    if (format != LEDGER_MD_FORMAT || !ledger_quorum_valid(&md->q) || md->state < 0 || last < -1 ||
        length < 0)
        return QE_CORRUPT;
    return segments_from_json(segs, md);
}

int ledger_md_decode(const void *value, size_t len, ledger_md_t *out)
{
    memset(out, 0, sizeof *out);
    json_error_t err;
    json_t *root = json_loadb(value, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        log_warn("ledger", "metadata is not JSON: %s", err.text);
        return QE_CORRUPT;
    }
    int rc = md_from_json(root, out);
    json_decref(root);
    if (rc < 0) {
        log_warn("ledger", "metadata refused: %s", q_strerror(rc));
        ledger_md_free(out);
    }
    return rc;
}
