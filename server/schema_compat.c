/*
 * schema_compat.c — the schema registry's pure half: Avro schemas parsed from
 * their JSON (jansson), Avro's reader/writer compatibility rules, Pulsar's
 * eight strategies, and KEY_VALUE schema data. No I/O; see schema.h.
 *
 * Avro model. A parsed schema is a graph of av_node_t owned by one av_schema_t
 * (an arena: every node is freed with it). Named types (record, enum, fixed)
 * are entered in the schema's name table before their body is parsed, so a
 * record may refer to itself; references resolve against the enclosing
 * namespace first, then as written. What the parser refuses is what Avro's
 * Schema.Parser refuses that matters here: a missing or unknown type, an
 * undefined name, a redefined name, a record without fields or with a field
 * without name/type or a duplicate field, an enum without symbols, a fixed
 * without size, a union inside a union. Defaults are not validated (Pulsar
 * parses with setValidateDefaults(false)); only their presence counts.
 *
 * Compatibility (Avro's ReaderWriterCompatibilityChecker): reader can read
 * writer when
 *   - both are the same primitive; or the writer's is promotable: int ->
 *     long, float, double; long -> float, double; float -> double; string <->
 *     bytes;
 *   - records: names match (simple names, or a reader alias is the writer's
 *     full name) and every reader field either exists in the writer (by name
 *     or reader alias) with a readable type, or has a default;
 *   - enums: names match and every writer symbol is a reader symbol (or the
 *     reader has a default symbol); fixed: names and sizes match;
 *   - arrays/maps: the items/values are readable;
 *   - a writer union: every branch readable; a reader union: some branch
 *     reads the writer.
 * Recursive types: a (reader, writer) pair already being checked is assumed
 * compatible (Avro memoises the same way). The depth of the walk is bounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errors.h"
#include "server/schema.h"

#define AV_DEPTH_MAX 64     /* nesting of the JSON walked */
#define AV_NODES_MAX 100000 /* nodes per schema */
#define AV_PAIRS_MAX 4096   /* (reader, writer) pairs in progress */

/* ------------------------------------------------------------ strategies -- */

static const char *const strategy_names[] = {
    [SCHEMA_ALWAYS_INCOMPATIBLE] = "ALWAYS_INCOMPATIBLE",
    [SCHEMA_ALWAYS_COMPATIBLE] = "ALWAYS_COMPATIBLE",
    [SCHEMA_BACKWARD] = "BACKWARD",
    [SCHEMA_FORWARD] = "FORWARD",
    [SCHEMA_FULL] = "FULL",
    [SCHEMA_BACKWARD_TRANSITIVE] = "BACKWARD_TRANSITIVE",
    [SCHEMA_FORWARD_TRANSITIVE] = "FORWARD_TRANSITIVE",
    [SCHEMA_FULL_TRANSITIVE] = "FULL_TRANSITIVE",
};

int schema_strategy_parse(const char *name, schema_strategy_t *out)
{
    if (!name || !name[0] || strcasecmp(name, "UNDEFINED") == 0) {
        *out = SCHEMA_STRATEGY_DEFAULT;
        return 0;
    }
    for (size_t i = 0; i < sizeof strategy_names / sizeof strategy_names[0]; i++) {
        if (strcasecmp(name, strategy_names[i]) == 0) {
            *out = (schema_strategy_t)i;
            return 0;
        }
    }
    return QE_INVALID;
}

const char *schema_strategy_name(schema_strategy_t s)
{
    if ((unsigned)s < sizeof strategy_names / sizeof strategy_names[0])
        return strategy_names[s];
    return "UNDEFINED";
}

bool schema_strategy_transitive(schema_strategy_t s)
{
    return s == SCHEMA_BACKWARD_TRANSITIVE || s == SCHEMA_FORWARD_TRANSITIVE ||
           s == SCHEMA_FULL_TRANSITIVE;
}

/* ----------------------------------------------------------------- types -- */

static const char *const type_names[SCHEMA_TYPE_MAX + 1] = {
    "NONE",
    "STRING",
    "JSON",
    "PROTOBUF",
    "AVRO",
    "BOOLEAN",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "KEY_VALUE",
    "INSTANT",
    "LOCAL_DATE",
    "LOCAL_TIME",
    "LOCAL_DATE_TIME",
    "PROTOBUF_NATIVE",
    "AUTO_CONSUME",
    "EXTERNAL",
};

const char *schema_type_name(int type)
{
    if (type < 0 || type > SCHEMA_TYPE_MAX)
        return NULL;
    return type_names[type];
}

int schema_type_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i <= SCHEMA_TYPE_MAX; i++)
        if (strcasecmp(name, type_names[i]) == 0)
            return i;
    return -1;
}

static bool type_uses_avro(int type)
{
    return type == SCHEMA_TYPE_AVRO || type == SCHEMA_TYPE_JSON || type == SCHEMA_TYPE_PROTOBUF;
}

/* ------------------------------------------------------------ avro model -- */

typedef enum {
    AV_NULL,
    AV_BOOLEAN,
    AV_INT,
    AV_LONG,
    AV_FLOAT,
    AV_DOUBLE,
    AV_BYTES,
    AV_STRING,
    AV_RECORD,
    AV_ENUM,
    AV_ARRAY,
    AV_MAP,
    AV_UNION,
    AV_FIXED,
} av_kind_t;

static const char *const av_kind_names[] = {
    "null",   "boolean", "int",  "long",  "float", "double", "bytes",
    "string", "record",  "enum", "array", "map",   "union",  "fixed",
};

typedef struct av_node av_node_t;

typedef struct av_field {
    const char *name;
    av_node_t *type;
    bool has_default;
    const char **aliases;
    size_t n_aliases;
} av_field_t;

struct av_node {
    av_kind_t kind;
    const char *name;     /* named types: simple name */
    const char *fullname; /* named types: namespace.name */
    const char **aliases; /* named types: full names */
    size_t n_aliases;
    av_field_t *fields; /* record */
    size_t n_fields;
    const char **symbols; /* enum */
    size_t n_symbols;
    bool has_enum_default;
    av_node_t *items;     /* array items, map values */
    av_node_t **branches; /* union */
    size_t n_branches;
    json_int_t size; /* fixed */
};

typedef struct av_schema {
    void **allocs; /* every allocation of the parse */
    size_t n_allocs, cap_allocs;
    av_node_t **named; /* named types, for references */
    size_t n_named, cap_named;
    av_node_t *root;
    char *err;
    size_t err_cap;
    size_t nodes;
} av_schema_t;

static void *av_alloc(av_schema_t *s, size_t size)
{
    if (s->n_allocs == s->cap_allocs) {
        size_t ncap = s->cap_allocs ? s->cap_allocs * 2 : 64;
        void **n = realloc(s->allocs, ncap * sizeof *n);
        if (!n)
            return NULL;
        s->allocs = n;
        s->cap_allocs = ncap;
    }
    void *p = calloc(1, size ? size : 1);
    if (p)
        s->allocs[s->n_allocs++] = p;
    return p;
}

static const char *av_strdup(av_schema_t *s, const char *str)
{
    size_t len = strlen(str);
    char *p = av_alloc(s, len + 1);
    if (p)
        memcpy(p, str, len + 1);
    return p;
}

static void av_schema_free(av_schema_t *s)
{
    for (size_t i = 0; i < s->n_allocs; i++)
        free(s->allocs[i]);
    free(s->allocs);
    free(s->named);
}

static int av_fail(av_schema_t *s, const char *fmt, const char *arg)
{
    if (s->err && s->err_cap && !s->err[0])
        snprintf(s->err, s->err_cap, fmt, arg ? arg : "");
    return QE_INVALID;
}

static int av_primitive(const char *name)
{
    for (int k = AV_NULL; k <= AV_STRING; k++)
        if (strcmp(name, av_kind_names[k]) == 0)
            return k;
    return -1;
}

static av_node_t *av_node_new(av_schema_t *s, av_kind_t kind)
{
    if (++s->nodes > AV_NODES_MAX)
        return NULL;
    av_node_t *n = av_alloc(s, sizeof *n);
    if (n)
        n->kind = kind;
    return n;
}

static av_node_t *av_lookup(const av_schema_t *s, const char *name, const char *ns)
{
    char full[1024];
    if (!strchr(name, '.') && ns && ns[0]) {
        snprintf(full, sizeof full, "%s.%s", ns, name);
        for (size_t i = 0; i < s->n_named; i++)
            if (strcmp(s->named[i]->fullname, full) == 0)
                return s->named[i];
    }
    for (size_t i = 0; i < s->n_named; i++)
        if (strcmp(s->named[i]->fullname, name) == 0)
            return s->named[i];
    return NULL;
}

/* Sets n's names from its "name" and "namespace" (or the enclosing ns), then
 * enters it in the name table. */
static int av_name(av_schema_t *s, av_node_t *n, json_t *j, const char *ns, const char **out_ns)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name || !name[0])
        return av_fail(s, "a %s has no name", av_kind_names[n->kind]);
    const char *space = json_string_value(json_object_get(j, "namespace"));
    const char *dot = strrchr(name, '.');
    char full[1024];
    if (dot) {
        snprintf(full, sizeof full, "%s", name);
        n->name = av_strdup(s, dot + 1);
        char *nsbuf = av_alloc(s, (size_t)(dot - name) + 1);
        if (nsbuf)
            memcpy(nsbuf, name, (size_t)(dot - name));
        *out_ns = nsbuf;
    } else {
        if (!space)
            space = ns;
        if (space && space[0])
            snprintf(full, sizeof full, "%s.%s", space, name);
        else
            snprintf(full, sizeof full, "%s", name);
        n->name = av_strdup(s, name);
        *out_ns = space;
    }
    n->fullname = av_strdup(s, full);
    if (!n->name || !n->fullname)
        return -ENOMEM;
    if (av_lookup(s, n->fullname, NULL))
        return av_fail(s, "Can't redefine: %s", n->fullname);
    if (av_primitive(n->name) >= 0)
        return av_fail(s, "Illegal name: %s", n->name);
    if (s->n_named == s->cap_named) {
        size_t ncap = s->cap_named ? s->cap_named * 2 : 16;
        av_node_t **nn = realloc(s->named, ncap * sizeof *nn);
        if (!nn)
            return -ENOMEM;
        s->named = nn;
        s->cap_named = ncap;
    }
    s->named[s->n_named++] = n;
    json_t *aliases = json_object_get(j, "aliases");
    if (json_is_array(aliases) && json_array_size(aliases) > 0) {
        n->aliases = av_alloc(s, json_array_size(aliases) * sizeof *n->aliases);
        if (!n->aliases)
            return -ENOMEM;
        size_t i;
        json_t *a;
        json_array_foreach(aliases, i, a)
        {
            const char *an = json_string_value(a);
            if (!an)
                continue;
            char afull[1024];
            if (!strchr(an, '.') && *out_ns && (*out_ns)[0])
                snprintf(afull, sizeof afull, "%s.%s", *out_ns, an);
            else
                snprintf(afull, sizeof afull, "%s", an);
            n->aliases[n->n_aliases++] = av_strdup(s, afull);
        }
    }
    return 0;
}

static int av_parse(av_schema_t *s, json_t *j, const char *ns, int depth, av_node_t **out);

static int av_parse_record(av_schema_t *s, av_node_t *n, json_t *j, const char *ns, int depth)
{
    json_t *fields = json_object_get(j, "fields");
    if (!json_is_array(fields))
        return av_fail(s, "Record has no fields: %s", n->fullname);
    size_t nf = json_array_size(fields);
    n->fields = av_alloc(s, nf * sizeof *n->fields);
    if (nf && !n->fields)
        return -ENOMEM;
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f)
    {
        const char *fname = json_string_value(json_object_get(f, "name"));
        if (!json_is_object(f) || !fname)
            return av_fail(s, "A field of %s has no name", n->fullname);
        for (size_t k = 0; k < n->n_fields; k++)
            if (strcmp(n->fields[k].name, fname) == 0)
                return av_fail(s, "Duplicate field %s", fname);
        json_t *ftype = json_object_get(f, "type");
        if (!ftype)
            return av_fail(s, "No type for field %s", fname);
        av_field_t *fld = &n->fields[n->n_fields];
        fld->name = av_strdup(s, fname);
        fld->has_default = json_object_get(f, "default") != NULL;
        json_t *aliases = json_object_get(f, "aliases");
        if (json_is_array(aliases) && json_array_size(aliases) > 0) {
            fld->aliases = av_alloc(s, json_array_size(aliases) * sizeof *fld->aliases);
            if (!fld->aliases)
                return -ENOMEM;
            size_t ai;
            json_t *a;
            json_array_foreach(aliases, ai, a)
            {
                if (json_string_value(a))
                    fld->aliases[fld->n_aliases++] = av_strdup(s, json_string_value(a));
            }
        }
        int rc = av_parse(s, ftype, ns, depth + 1, &fld->type);
        if (rc < 0)
            return rc;
        n->n_fields++;
    }
    return 0;
}

static int av_parse_enum(av_schema_t *s, av_node_t *n, json_t *j)
{
    json_t *symbols = json_object_get(j, "symbols");
    if (!json_is_array(symbols))
        return av_fail(s, "Enum has no symbols: %s", n->fullname);
    n->symbols = av_alloc(s, json_array_size(symbols) * sizeof *n->symbols);
    if (json_array_size(symbols) && !n->symbols)
        return -ENOMEM;
    size_t i;
    json_t *sym;
    json_array_foreach(symbols, i, sym)
    {
        if (!json_is_string(sym))
            return av_fail(s, "Enum symbols must be strings: %s", n->fullname);
        n->symbols[n->n_symbols++] = av_strdup(s, json_string_value(sym));
    }
    n->has_enum_default = json_is_string(json_object_get(j, "default"));
    return 0;
}

static int av_parse_object(av_schema_t *s, json_t *j, const char *ns, int depth, av_node_t **out)
{
    json_t *type = json_object_get(j, "type");
    if (!type)
        return av_fail(s, "No type: %s", NULL);
    if (!json_is_string(type)) /* {"type": {...}} or {"type": [...]}: a nested schema */
        return av_parse(s, type, ns, depth + 1, out);
    const char *t = json_string_value(type);
    int prim = av_primitive(t);
    if (prim >= 0) { /* {"type": "long", "logicalType": ...} */
        *out = av_node_new(s, (av_kind_t)prim);
        return *out ? 0 : -ENOMEM;
    }
    av_kind_t kind;
    if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0)
        kind = AV_RECORD;
    else if (strcmp(t, "enum") == 0)
        kind = AV_ENUM;
    else if (strcmp(t, "fixed") == 0)
        kind = AV_FIXED;
    else if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
        av_node_t *n = av_node_new(s, t[0] == 'a' ? AV_ARRAY : AV_MAP);
        if (!n)
            return -ENOMEM;
        json_t *items = json_object_get(j, t[0] == 'a' ? "items" : "values");
        if (!items)
            return av_fail(
                s, t[0] == 'a' ? "Array has no items type%s" : "Map has no values type%s", NULL);
        *out = n;
        return av_parse(s, items, ns, depth + 1, &n->items);
    } else {
        av_node_t *ref = av_lookup(s, t, ns);
        if (!ref)
            return av_fail(s, "Type not supported: %s", t);
        *out = ref;
        return 0;
    }
    av_node_t *n = av_node_new(s, kind);
    if (!n)
        return -ENOMEM;
    const char *inner_ns = ns;
    int rc = av_name(s, n, j, ns, &inner_ns);
    if (rc < 0)
        return rc;
    *out = n;
    if (kind == AV_RECORD)
        return av_parse_record(s, n, j, inner_ns, depth);
    if (kind == AV_ENUM)
        return av_parse_enum(s, n, j);
    json_t *size = json_object_get(j, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return av_fail(s, "Invalid or no size: %s", n->fullname);
    n->size = json_integer_value(size);
    return 0;
}

static int av_parse(av_schema_t *s, json_t *j, const char *ns, int depth, av_node_t **out)
{
    if (depth > AV_DEPTH_MAX)
        return av_fail(s, "Schema nested too deeply%s", NULL);
    if (json_is_string(j)) {
        const char *t = json_string_value(j);
        int prim = av_primitive(t);
        if (prim >= 0) {
            *out = av_node_new(s, (av_kind_t)prim);
            return *out ? 0 : -ENOMEM;
        }
        *out = av_lookup(s, t, ns);
        return *out ? 0 : av_fail(s, "Undefined name: %s", t);
    }
    if (json_is_array(j)) {
        av_node_t *n = av_node_new(s, AV_UNION);
        if (!n)
            return -ENOMEM;
        n->branches = av_alloc(s, json_array_size(j) * sizeof *n->branches);
        if (json_array_size(j) && !n->branches)
            return -ENOMEM;
        size_t i;
        json_t *b;
        json_array_foreach(j, i, b)
        {
            av_node_t *br;
            int rc = av_parse(s, b, ns, depth + 1, &br);
            if (rc < 0)
                return rc;
            if (br->kind == AV_UNION)
                return av_fail(s, "Nested union%s", NULL);
            n->branches[n->n_branches++] = br;
        }
        *out = n;
        return 0;
    }
    if (json_is_object(j))
        return av_parse_object(s, j, ns, depth, out);
    return av_fail(s, "Not a schema: a JSON %s", json_is_null(j) ? "null" : "scalar");
}

/* Parses Avro schema JSON text into s (caller frees with av_schema_free). */
static int av_schema_parse(const char *text, size_t len, av_schema_t *s, char *err, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->err = err;
    s->err_cap = cap;
    if (err && cap)
        err[0] = '\0';
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    if (!j) {
        if (err && cap)
            snprintf(err, cap, "not JSON: %s", jerr.text);
        return QE_INVALID;
    }
    int rc = av_parse(s, j, NULL, 0, &s->root);
    json_decref(j);
    if (rc == QE_INVALID && err && cap && !err[0])
        snprintf(err, cap, "invalid Avro schema");
    return rc;
}

/* ---------------------------------------------------- avro compatibility -- */

typedef struct av_pair {
    const av_node_t *r, *w;
} av_pair_t;

typedef struct av_check {
    av_pair_t pairs[AV_PAIRS_MAX];
    size_t n_pairs;
    char *reason;
    size_t cap;
} av_check_t;

static int av_incompatible(av_check_t *c, const char *fmt, const char *a, const char *b)
{
    if (c->reason && c->cap && !c->reason[0])
        snprintf(c->reason, c->cap, fmt, a ? a : "", b ? b : "");
    return SCHEMA_E_INCOMPATIBLE;
}

static bool av_names_match(const av_node_t *r, const av_node_t *w)
{
    if (strcmp(r->name, w->name) == 0)
        return true;
    for (size_t i = 0; i < r->n_aliases; i++)
        if (strcmp(r->aliases[i], w->fullname) == 0)
            return true;
    return false;
}

static int av_can_read(av_check_t *c, const av_node_t *r, const av_node_t *w, int depth);

static const av_field_t *av_writer_field(const av_node_t *w, const av_field_t *rf)
{
    for (size_t i = 0; i < w->n_fields; i++) {
        if (strcmp(w->fields[i].name, rf->name) == 0)
            return &w->fields[i];
    }
    for (size_t a = 0; a < rf->n_aliases; a++)
        for (size_t i = 0; i < w->n_fields; i++)
            if (strcmp(w->fields[i].name, rf->aliases[a]) == 0)
                return &w->fields[i];
    return NULL;
}

static int av_can_read_record(av_check_t *c, const av_node_t *r, const av_node_t *w, int depth)
{
    for (size_t i = 0; i < r->n_fields; i++) {
        const av_field_t *rf = &r->fields[i];
        const av_field_t *wf = av_writer_field(w, rf);
        if (!wf) {
            if (!rf->has_default)
                return av_incompatible(
                    c, "READER_FIELD_MISSING_DEFAULT_VALUE: field '%s' of %s has no default",
                    rf->name, r->fullname);
            continue;
        }
        int rc = av_can_read(c, rf->type, wf->type, depth + 1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int av_can_read_same(av_check_t *c, const av_node_t *r, const av_node_t *w, int depth)
{
    switch (r->kind) {
    case AV_RECORD:
        if (!av_names_match(r, w))
            return av_incompatible(c, "NAME_MISMATCH: expected %s, found %s", r->fullname,
                                   w->fullname);
        return av_can_read_record(c, r, w, depth);
    case AV_ENUM:
        if (!av_names_match(r, w))
            return av_incompatible(c, "NAME_MISMATCH: expected %s, found %s", r->fullname,
                                   w->fullname);
        if (r->has_enum_default)
            return 0;
        for (size_t i = 0; i < w->n_symbols; i++) {
            bool found = false;
            for (size_t k = 0; k < r->n_symbols && !found; k++)
                found = strcmp(r->symbols[k], w->symbols[i]) == 0;
            if (!found)
                return av_incompatible(c, "MISSING_ENUM_SYMBOLS: %s lacks %s", r->fullname,
                                       w->symbols[i]);
        }
        return 0;
    case AV_FIXED:
        if (!av_names_match(r, w))
            return av_incompatible(c, "NAME_MISMATCH: expected %s, found %s", r->fullname,
                                   w->fullname);
        if (r->size != w->size)
            return av_incompatible(c, "FIXED_SIZE_MISMATCH: %s%s", r->fullname, NULL);
        return 0;
    case AV_ARRAY:
    case AV_MAP:
        return av_can_read(c, r->items, w->items, depth + 1);
    case AV_UNION:
        for (size_t i = 0; i < w->n_branches; i++) {
            int rc = av_can_read(c, r, w->branches[i], depth + 1);
            if (rc < 0)
                return rc;
        }
        return 0;
    default: /* the same primitive */
        return 0;
    }
}

static int av_can_read(av_check_t *c, const av_node_t *r, const av_node_t *w, int depth)
{
    if (depth > AV_DEPTH_MAX * 4)
        return av_incompatible(c, "schemas nested too deeply%s%s", NULL, NULL);
    for (size_t i = 0; i < c->n_pairs; i++)
        if (c->pairs[i].r == r && c->pairs[i].w == w)
            return 0; /* in progress: assume compatible (recursive types) */
    if (c->n_pairs == AV_PAIRS_MAX)
        return av_incompatible(c, "schemas too large to compare%s%s", NULL, NULL);
    size_t mark = c->n_pairs;
    c->pairs[c->n_pairs++] = (av_pair_t){r, w};
    int rc;
    if (r->kind == w->kind) {
        rc = av_can_read_same(c, r, w, depth);
    } else if (w->kind == AV_UNION) {
        rc = 0;
        for (size_t i = 0; i < w->n_branches && rc == 0; i++)
            rc = av_can_read(c, r, w->branches[i], depth + 1);
    } else if (r->kind == AV_UNION) {
        rc = SCHEMA_E_INCOMPATIBLE;
        for (size_t i = 0; i < r->n_branches && rc < 0; i++) {
            av_check_t *sub = c; /* a branch's failure is no reason: keep the first */
            char *saved = sub->reason;
            sub->reason = NULL;
            rc = av_can_read(sub, r->branches[i], w, depth + 1);
            sub->reason = saved;
        }
        if (rc < 0)
            rc = av_incompatible(c,
                                 "MISSING_UNION_BRANCH: the reader's union has no branch for %s%s",
                                 av_kind_names[w->kind], NULL);
    } else {
        bool promotable = (r->kind == AV_LONG && w->kind == AV_INT) ||
                          (r->kind == AV_FLOAT && (w->kind == AV_INT || w->kind == AV_LONG)) ||
                          (r->kind == AV_DOUBLE &&
                           (w->kind == AV_INT || w->kind == AV_LONG || w->kind == AV_FLOAT)) ||
                          (r->kind == AV_BYTES && w->kind == AV_STRING) ||
                          (r->kind == AV_STRING && w->kind == AV_BYTES);
        rc = promotable ? 0
                        : av_incompatible(c, "TYPE_MISMATCH: reader type %s cannot read %s",
                                          av_kind_names[r->kind], av_kind_names[w->kind]);
    }
    c->n_pairs = mark;
    return rc;
}

static int av_check_parsed(const av_schema_t *reader, const av_schema_t *writer, char *reason,
                           size_t cap)
{
    av_check_t *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->reason = reason;
    c->cap = cap;
    if (reason && cap)
        reason[0] = '\0';
    int rc = av_can_read(c, reader->root, writer->root, 0);
    free(c);
    return rc;
}

int schema_avro_can_read(const char *reader, size_t reader_len, const char *writer,
                         size_t writer_len, char *reason, size_t cap)
{
    av_schema_t r, w;
    int rc = av_schema_parse(reader, reader_len, &r, reason, cap);
    if (rc == 0)
        rc = av_schema_parse(writer, writer_len, &w, reason, cap);
    else
        memset(&w, 0, sizeof w);
    if (rc == 0)
        rc = av_check_parsed(&r, &w, reason, cap);
    av_schema_free(&r);
    av_schema_free(&w);
    return rc;
}

/* ------------------------------------------------------------- key/value -- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int kv_half_type(const json_t *props, const char *key)
{
    const char *t = json_string_value(json_object_get(props, key));
    if (!t)
        return -1; /* BYTES */
    return schema_type_parse(t);
}

int schema_kv_split(const schema_data_t *kv, schema_data_t *key, schema_data_t *value)
{
    if (kv->len < 8)
        return QE_INVALID;
    uint32_t klen = be32(kv->data);
    if (klen > kv->len - 8)
        return QE_INVALID;
    uint32_t vlen = be32(kv->data + 4 + klen);
    if (vlen != kv->len - 8 - klen)
        return QE_INVALID;
    *key = (schema_data_t){kv_half_type(kv->props, "key.schema.type"), kv->data + 4, klen, NULL};
    *value = (schema_data_t){kv_half_type(kv->props, "value.schema.type"), kv->data + 8 + klen,
                             vlen, NULL};
    return 0;
}

/* -------------------------------------------------------------- validate -- */

int schema_validate(const schema_data_t *s, char *reason, size_t cap)
{
    if (reason && cap)
        reason[0] = '\0';
    if (type_uses_avro(s->type)) {
        av_schema_t a;
        char why[256];
        int rc = av_schema_parse((const char *)s->data, s->len, &a, why, sizeof why);
        av_schema_free(&a);
        if (rc == QE_INVALID && s->type == SCHEMA_TYPE_JSON) {
            /* Pre-2.1 clients sent a JSON-schema document: any JSON object. */
            json_t *j = json_loadb((const char *)s->data, s->len, 0, NULL);
            rc = json_is_object(j) ? 0 : QE_INVALID;
            json_decref(j);
        }
        if (rc == QE_INVALID && reason && cap)
            snprintf(reason, cap, "Invalid schema definition data for %s schema: %s",
                     schema_type_name(s->type), why);
        return rc;
    }
    if (s->type == SCHEMA_TYPE_KEY_VALUE) {
        schema_data_t k, v;
        if (schema_kv_split(s, &k, &v) < 0) {
            if (reason && cap)
                snprintf(reason, cap, "Invalid schema definition data for KEY_VALUE schema");
            return QE_INVALID;
        }
        int rc = schema_validate(&k, reason, cap);
        return rc < 0 ? rc : schema_validate(&v, reason, cap);
    }
    return 0;
}

/* ------------------------------------------------------------ equality -- */

bool schema_equal(const schema_data_t *a, const schema_data_t *b)
{
    if (a->type != b->type)
        return false;
    if (a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0))
        return true;
    if (!type_uses_avro(a->type))
        return false;
    json_t *ja = json_loadb((const char *)a->data, a->len, JSON_DECODE_ANY, NULL);
    json_t *jb = json_loadb((const char *)b->data, b->len, JSON_DECODE_ANY, NULL);
    bool eq = ja && jb && json_equal(ja, jb);
    json_decref(ja);
    json_decref(jb);
    return eq;
}

/* --------------------------------------------------------- compatibility -- */

/* JSON schemas may be old JSON-schema documents: Pulsar accepts a change of
 * format either way and compares two old ones by their "id". old names the
 * stored schema in the reason. */
static int json_legacy_check(const schema_data_t *from, const schema_data_t *to, const char *old,
                             bool *handled, char *reason, size_t cap)
{
    av_schema_t a;
    int rf = av_schema_parse((const char *)from->data, from->len, &a, NULL, 0);
    av_schema_free(&a);
    int rt = av_schema_parse((const char *)to->data, to->len, &a, NULL, 0);
    av_schema_free(&a);
    *handled = rf < 0 || rt < 0;
    if (!*handled || (rf == 0) != (rt == 0))
        return 0;
    json_t *jf = json_loadb((const char *)from->data, from->len, 0, NULL);
    json_t *jt = json_loadb((const char *)to->data, to->len, 0, NULL);
    json_t *idf = json_object_get(jf, "id"), *idt = json_object_get(jt, "id");
    int rc = idf && idt && json_equal(idf, idt) ? 0 : SCHEMA_E_INCOMPATIBLE;
    json_decref(jf);
    json_decref(jt);
    if (rc < 0 && reason && cap)
        snprintf(reason, cap,
                 "Incompatible JSON schemas: the ids of the new schema and of %s differ", old);
    return rc;
}

/* Avro rules between two schemas of an Avro-based type under a strategy; the
 * reason says which way the read failed, naming the stored schema old (Pulsar
 * words it "Error during schema compatibility check with strategy S: ..."). */
static int avro_pair_check(const schema_data_t *from, const schema_data_t *to,
                           schema_strategy_t strategy, const char *old, char *reason, size_t cap)
{
    if (to->type == SCHEMA_TYPE_JSON) {
        bool handled;
        int rc = json_legacy_check(from, to, old, &handled, reason, cap);
        if (handled)
            return rc;
    }
    const char *f = (const char *)from->data, *t = (const char *)to->data;
    char why[320] = "";
    int rc = 0;
    bool backward = strategy == SCHEMA_BACKWARD || strategy == SCHEMA_BACKWARD_TRANSITIVE ||
                    strategy == SCHEMA_FULL || strategy == SCHEMA_FULL_TRANSITIVE;
    bool forward = strategy == SCHEMA_FORWARD || strategy == SCHEMA_FORWARD_TRANSITIVE ||
                   strategy == SCHEMA_FULL || strategy == SCHEMA_FULL_TRANSITIVE;
    bool new_reads_old = backward;
    if (backward)
        rc = schema_avro_can_read(t, to->len, f, from->len, why, sizeof why);
    if (rc == 0 && forward) {
        new_reads_old = false;
        rc = schema_avro_can_read(f, from->len, t, to->len, why, sizeof why);
    }
    if (rc == QE_INVALID)
        rc = SCHEMA_E_INCOMPATIBLE; /* a stored schema that no longer parses */
    if (rc < 0 && reason && cap) {
        if (new_reads_old)
            snprintf(reason, cap,
                     "Error during schema compatibility check with strategy %s: the new schema "
                     "cannot read data written with %s: %s",
                     schema_strategy_name(strategy), old, why);
        else
            snprintf(reason, cap,
                     "Error during schema compatibility check with strategy %s: %s cannot read "
                     "data written with the new schema: %s",
                     schema_strategy_name(strategy), old, why);
    }
    return rc;
}

static int pair_check(const schema_data_t *from, const schema_data_t *to,
                      schema_strategy_t strategy, const char *old, char *reason, size_t cap);

/* One half of two KEY_VALUE schemas; the reason says which half. */
static int kv_half_check(const char *half, const schema_data_t *from, const schema_data_t *to,
                         schema_strategy_t strategy, const char *old, char *reason, size_t cap)
{
    char why[320] = "";
    int rc = pair_check(from, to, strategy, old, why, sizeof why);
    if (rc < 0 && reason && cap)
        snprintf(reason, cap, "KEY_VALUE %s schema: %s", half, why);
    return rc;
}

static int kv_pair_check(const schema_data_t *from, const schema_data_t *to,
                         schema_strategy_t strategy, const char *old, char *reason, size_t cap)
{
    schema_data_t fk, fv, tk, tv;
    if (schema_kv_split(from, &fk, &fv) < 0 || schema_kv_split(to, &tk, &tv) < 0) {
        if (reason && cap)
            snprintf(reason, cap, "Invalid KEY_VALUE schema data");
        return SCHEMA_E_INCOMPATIBLE;
    }
    if (fk.type != tk.type || fv.type != tv.type) {
        if (reason && cap)
            snprintf(reason, cap,
                     "Key schemas or Value schemas are different schema type, from key schema "
                     "type is %s and to key schema is %s, from value schema is %s and to value "
                     "schema is %s",
                     fk.type < 0 ? "BYTES" : schema_type_name(fk.type),
                     tk.type < 0 ? "BYTES" : schema_type_name(tk.type),
                     fv.type < 0 ? "BYTES" : schema_type_name(fv.type),
                     tv.type < 0 ? "BYTES" : schema_type_name(tv.type));
        return SCHEMA_E_INCOMPATIBLE;
    }
    int rc = kv_half_check("key", &fk, &tk, strategy, old, reason, cap);
    return rc < 0 ? rc : kv_half_check("value", &fv, &tv, strategy, old, reason, cap);
}

/* The type's checker for two schemas of the same type. */
static int pair_check(const schema_data_t *from, const schema_data_t *to,
                      schema_strategy_t strategy, const char *old, char *reason, size_t cap)
{
    if (strategy == SCHEMA_ALWAYS_COMPATIBLE)
        return 0;
    if (strategy == SCHEMA_ALWAYS_INCOMPATIBLE) {
        if (reason && cap)
            snprintf(reason, cap, "Schema compatibility strategy is ALWAYS_INCOMPATIBLE");
        return SCHEMA_E_INCOMPATIBLE;
    }
    if (from->type == SCHEMA_TYPE_AVRO || from->type == SCHEMA_TYPE_JSON)
        return avro_pair_check(from, to, strategy, old, reason, cap);
    if (from->type == SCHEMA_TYPE_KEY_VALUE)
        return kv_pair_check(from, to, strategy, old, reason, cap);
    return 0; /* Pulsar's DEFAULT check: PROTOBUF, PROTOBUF_NATIVE, primitives */
}

/* How a reason names from[i]: "schema version N", or "the existing schema"
 * when the versions are not known. */
static void old_name(const int64_t *versions, size_t i, char *out, size_t cap)
{
    if (versions)
        snprintf(out, cap, "schema version %lld", (long long)versions[i]);
    else
        snprintf(out, cap, "the existing schema");
}

int schema_check_compatible_versions(const schema_data_t *from, const int64_t *versions, size_t n,
                                     const schema_data_t *to, schema_strategy_t strategy,
                                     char *reason, size_t cap)
{
    char old[64];
    if (reason && cap)
        reason[0] = '\0';
    if (n == 0 || strategy == SCHEMA_ALWAYS_COMPATIBLE)
        return 0;
    bool all = schema_strategy_transitive(strategy);
    size_t first = all ? 0 : n - 1;
    for (size_t i = first; i < n; i++) {
        if (from[i].type != to->type) {
            old_name(versions, i, old, sizeof old);
            if (reason && cap)
                snprintf(reason, cap,
                         "Incompatible schema: exists schema type %s, new schema type %s (%s)",
                         schema_type_name(from[i].type) ? schema_type_name(from[i].type) : "?",
                         schema_type_name(to->type) ? schema_type_name(to->type) : "?", old);
            return SCHEMA_E_INCOMPATIBLE;
        }
    }
    if (!all && schema_equal(&from[n - 1], to))
        return 0;
    /* Newest first, as Pulsar's validators walk them. */
    for (size_t i = n; i-- > first;) {
        old_name(versions, i, old, sizeof old);
        int rc = pair_check(&from[i], to, strategy, old, reason, cap);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int schema_check_compatible(const schema_data_t *from, size_t n, const schema_data_t *to,
                            schema_strategy_t strategy, char *reason, size_t cap)
{
    return schema_check_compatible_versions(from, NULL, n, to, strategy, reason, cap);
}
