/*
 * test_schema_compat.c — the schema registry's compatibility checker
 * (server/schema_compat.c): Avro reader/writer rules, the eight strategies,
 * Pulsar's type rules, KEY_VALUE halves, validation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/schema.h"
#include "tests/unit/support/test_support.h"

/* ------------------------------------------------------------- fixtures -- */

/* v1: {a: string, b: int} */
#define V1                                                                                         \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\"}]}"
/* v2 = v1 + c with a default: backward and forward compatible with v1 */
#define V2_ADD_DEFAULT                                                                             \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\"},"                      \
    "{\"name\":\"c\",\"type\":[\"null\",\"string\"],\"default\":null}]}"
/* v1 + c without a default: forward only (old readers ignore c; new cannot read old) */
#define V2_ADD_NO_DEFAULT                                                                          \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\"},"                      \
    "{\"name\":\"c\",\"type\":\"string\"}]}"
/* v1 without b: backward only (the new reader ignores b; old readers need it) */
#define V2_DROP_B                                                                                  \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":[{\"name\":\"a\",\"type\":\"string\"}]}"
/* b widened to long: backward only (long reads int; int cannot read long) */
#define V2_B_LONG                                                                                  \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"long\"}]}"
/* b becomes a string: neither way */
#define V2_B_STRING                                                                                \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"string\"}]}"

/* v2-add-default's c without its default: reads v2 data, not v1's */
#define V3_C_NO_DEFAULT                                                                            \
    "{\"type\":\"record\",\"name\":\"User\",\"fields\":["                                          \
    "{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\"},"                      \
    "{\"name\":\"c\",\"type\":[\"null\",\"string\"]}]}"

static schema_data_t avro(const char *s)
{
    return (schema_data_t){SCHEMA_TYPE_AVRO, (const uint8_t *)s, strlen(s), NULL};
}

static int check(const char *from, const char *to, schema_strategy_t st)
{
    schema_data_t f = avro(from), t = avro(to);
    char reason[384];
    return schema_check_compatible(&f, 1, &t, st, reason, sizeof reason);
}

static int can_read(const char *reader, const char *writer)
{
    char reason[384];
    return schema_avro_can_read(reader, strlen(reader), writer, strlen(writer), reason,
                                sizeof reason);
}

/* ---------------------------------------------------------------- tests -- */

static void test_strategy_names(void)
{
    schema_strategy_t s;
    CU_ASSERT_EQUAL(schema_strategy_parse("FULL_TRANSITIVE", &s), 0);
    CU_ASSERT_EQUAL(s, SCHEMA_FULL_TRANSITIVE);
    CU_ASSERT_EQUAL(schema_strategy_parse("backward", &s), 0);
    CU_ASSERT_EQUAL(s, SCHEMA_BACKWARD);
    CU_ASSERT_EQUAL(schema_strategy_parse("", &s), 0);
    CU_ASSERT_EQUAL(s, SCHEMA_FULL);
    CU_ASSERT_EQUAL(schema_strategy_parse("UNDEFINED", &s), 0);
    CU_ASSERT_EQUAL(s, SCHEMA_FULL);
    CU_ASSERT_EQUAL(schema_strategy_parse("SIDEWAYS", &s), QE_INVALID);
    CU_ASSERT_STRING_EQUAL(schema_strategy_name(SCHEMA_ALWAYS_COMPATIBLE), "ALWAYS_COMPATIBLE");
    CU_ASSERT_EQUAL(schema_type_parse("key_value"), SCHEMA_TYPE_KEY_VALUE);
    CU_ASSERT_EQUAL(schema_type_parse("BYTES"), -1);
    CU_ASSERT_STRING_EQUAL(schema_type_name(SCHEMA_TYPE_AVRO), "AVRO");
}

static void test_avro_rules(void)
{
    CU_ASSERT_EQUAL(can_read(V1, V1), 0);
    CU_ASSERT_EQUAL(can_read(V2_ADD_DEFAULT, V1), 0);
    CU_ASSERT_EQUAL(can_read(V1, V2_ADD_DEFAULT), 0);
    CU_ASSERT_EQUAL(can_read(V2_ADD_NO_DEFAULT, V1), SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(can_read(V1, V2_ADD_NO_DEFAULT), 0);
    CU_ASSERT_EQUAL(can_read(V2_B_LONG, V1), 0);
    CU_ASSERT_EQUAL(can_read(V1, V2_B_LONG), SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(can_read(V2_B_STRING, V1), SCHEMA_E_INCOMPATIBLE);
    /* promotions and unions */
    CU_ASSERT_EQUAL(can_read("\"double\"", "\"int\""), 0);
    CU_ASSERT_EQUAL(can_read("\"float\"", "\"long\""), 0);
    CU_ASSERT_EQUAL(can_read("\"int\"", "\"long\""), SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(can_read("\"bytes\"", "\"string\""), 0);
    CU_ASSERT_EQUAL(can_read("[\"null\",\"string\"]", "\"string\""), 0);
    CU_ASSERT_EQUAL(can_read("\"string\"", "[\"null\",\"string\"]"), SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(can_read("[\"null\",\"long\"]", "[\"null\",\"int\"]"), 0);
    /* enums: writer symbols must be known to the reader (or a default) */
    CU_ASSERT_EQUAL(can_read("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}",
                             "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}"),
                    0);
    CU_ASSERT_EQUAL(can_read("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]}",
                             "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}"),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(
        can_read("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"Z\"],\"default\":\"Z\"}",
                 "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}"),
        0);
    /* record names must match (or a reader alias) */
    CU_ASSERT_EQUAL(can_read("{\"type\":\"record\",\"name\":\"X\",\"fields\":[]}",
                             "{\"type\":\"record\",\"name\":\"Y\",\"fields\":[]}"),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(
        can_read("{\"type\":\"record\",\"name\":\"X\",\"aliases\":[\"Y\"],\"fields\":[]}",
                 "{\"type\":\"record\",\"name\":\"Y\",\"fields\":[]}"),
        0);
    /* field aliases */
    CU_ASSERT_EQUAL(can_read("{\"type\":\"record\",\"name\":\"X\",\"fields\":[{\"name\":\"n\","
                             "\"aliases\":[\"o\"],\"type\":\"int\"}]}",
                             "{\"type\":\"record\",\"name\":\"X\",\"fields\":[{\"name\":\"o\","
                             "\"type\":\"int\"}]}"),
                    0);
    /* arrays, maps, fixed */
    CU_ASSERT_EQUAL(can_read("{\"type\":\"array\",\"items\":\"long\"}",
                             "{\"type\":\"array\",\"items\":\"int\"}"),
                    0);
    CU_ASSERT_EQUAL(
        can_read("{\"type\":\"map\",\"values\":\"int\"}", "{\"type\":\"map\",\"values\":\"long\"}"),
        SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(can_read("{\"type\":\"fixed\",\"name\":\"F\",\"size\":4}",
                             "{\"type\":\"fixed\",\"name\":\"F\",\"size\":8}"),
                    SCHEMA_E_INCOMPATIBLE);
}

static void test_avro_recursive_and_namespaces(void)
{
    const char *list1 = "{\"type\":\"record\",\"name\":\"Node\",\"namespace\":\"a.b\",\"fields\":["
                        "{\"name\":\"v\",\"type\":\"int\"},"
                        "{\"name\":\"next\",\"type\":[\"null\",\"Node\"]}]}";
    const char *list2 = "{\"type\":\"record\",\"name\":\"Node\",\"namespace\":\"a.b\",\"fields\":["
                        "{\"name\":\"v\",\"type\":\"long\"},"
                        "{\"name\":\"next\",\"type\":[\"null\",\"a.b.Node\"]}]}";
    CU_ASSERT_EQUAL(can_read(list2, list1), 0);
    CU_ASSERT_EQUAL(can_read(list1, list2), SCHEMA_E_INCOMPATIBLE);
    /* a named type used twice */
    const char *twice = "{\"type\":\"record\",\"name\":\"R\",\"fields\":["
                        "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":2}},"
                        "{\"name\":\"y\",\"type\":\"F\"}]}";
    CU_ASSERT_EQUAL(can_read(twice, twice), 0);
}

static void test_validate(void)
{
    char reason[384];
    schema_data_t ok = avro(V1);
    CU_ASSERT_EQUAL(schema_validate(&ok, reason, sizeof reason), 0);
    const char *bad[] = {
        "{not json",
        "{\"type\":\"record\",\"name\":\"R\"}",                               /* no fields */
        "{\"type\":\"record\",\"fields\":[]}",                                /* no name */
        "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\"}]}", /* no type */
        "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"Nope\"}]}",
        ("{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},"
         "{\"name\":\"a\",\"type\":\"int\"}]}"), /* duplicate field (one string) */
        "[\"int\",[\"null\"]]",                  /* nested union */
        "{\"type\":\"enum\",\"name\":\"E\"}",    /* no symbols */
        "{\"type\":\"fixed\",\"name\":\"F\"}",   /* no size */
        "42",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        schema_data_t d = avro(bad[i]);
        reason[0] = '\0';
        CU_ASSERT_EQUAL(schema_validate(&d, reason, sizeof reason), QE_INVALID);
        CU_ASSERT(strstr(reason, "Invalid schema definition data for AVRO") != NULL);
    }
    /* JSON accepts an old JSON-schema document; AVRO does not */
    const char *jsonschema = "{\"type\":\"object\",\"id\":\"urn:x\",\"properties\":{}}";
    schema_data_t js = {SCHEMA_TYPE_JSON, (const uint8_t *)jsonschema, strlen(jsonschema), NULL};
    CU_ASSERT_EQUAL(schema_validate(&js, reason, sizeof reason), 0);
    js.type = SCHEMA_TYPE_AVRO;
    CU_ASSERT_EQUAL(schema_validate(&js, reason, sizeof reason), QE_INVALID);
    /* primitives are not checked */
    schema_data_t str = {SCHEMA_TYPE_STRING, NULL, 0, NULL};
    CU_ASSERT_EQUAL(schema_validate(&str, reason, sizeof reason), 0);
}

/* One pair per strategy, each way. */
static void test_strategies_latest(void)
{
    struct {
        const char *to;
        schema_strategy_t st;
        int want;
    } cases[] = {
        {V2_ADD_DEFAULT, SCHEMA_BACKWARD, 0},
        {V2_ADD_DEFAULT, SCHEMA_FORWARD, 0},
        {V2_ADD_DEFAULT, SCHEMA_FULL, 0},
        {V2_ADD_NO_DEFAULT, SCHEMA_BACKWARD, SCHEMA_E_INCOMPATIBLE},
        {V2_ADD_NO_DEFAULT, SCHEMA_FORWARD, 0},
        {V2_ADD_NO_DEFAULT, SCHEMA_FULL, SCHEMA_E_INCOMPATIBLE},
        {V2_DROP_B, SCHEMA_BACKWARD, 0},
        {V2_DROP_B, SCHEMA_FORWARD, SCHEMA_E_INCOMPATIBLE},
        {V2_DROP_B, SCHEMA_FULL, SCHEMA_E_INCOMPATIBLE},
        {V2_B_LONG, SCHEMA_BACKWARD, 0},
        {V2_B_LONG, SCHEMA_FORWARD, SCHEMA_E_INCOMPATIBLE},
        {V2_B_STRING, SCHEMA_BACKWARD, SCHEMA_E_INCOMPATIBLE},
        {V2_B_STRING, SCHEMA_FORWARD, SCHEMA_E_INCOMPATIBLE},
        {V2_B_STRING, SCHEMA_ALWAYS_COMPATIBLE, 0},
        {V2_ADD_DEFAULT, SCHEMA_ALWAYS_INCOMPATIBLE, SCHEMA_E_INCOMPATIBLE},
        {V1, SCHEMA_ALWAYS_INCOMPATIBLE, 0}, /* the same schema is no change */
        {V2_ADD_DEFAULT, SCHEMA_BACKWARD_TRANSITIVE, 0},
        {V2_ADD_NO_DEFAULT, SCHEMA_FORWARD_TRANSITIVE, 0},
        {V2_DROP_B, SCHEMA_FULL_TRANSITIVE, SCHEMA_E_INCOMPATIBLE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = check(V1, cases[i].to, cases[i].st);
        if (rc != cases[i].want)
            fprintf(stderr, "case %zu: strategy %s: got %d, want %d\n", i,
                    schema_strategy_name(cases[i].st), rc, cases[i].want);
        CU_ASSERT_EQUAL(rc, cases[i].want);
    }
}

/* Transitive strategies look at every version; the others at the latest. */
static void test_strategies_transitive(void)
{
    /* history: {a} -> {a, b:int with default} ; new: {b:int no default} */
    const char *h1 = "{\"type\":\"record\",\"name\":\"U\",\"fields\":[{\"name\":\"a\","
                     "\"type\":\"string\"}]}";
    const char *h2 = "{\"type\":\"record\",\"name\":\"U\",\"fields\":[{\"name\":\"a\","
                     "\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\",\"default\":0}]}";
    const char *nw = "{\"type\":\"record\",\"name\":\"U\",\"fields\":[{\"name\":\"a\","
                     "\"type\":\"string\"},{\"name\":\"b\",\"type\":\"int\"}]}";
    schema_data_t from[2] = {avro(h1), avro(h2)}, to = avro(nw);
    char reason[384];
    /* BACKWARD vs h2 only: nw reads h2 (b present) */
    CU_ASSERT_EQUAL(schema_check_compatible(from, 2, &to, SCHEMA_BACKWARD, reason, sizeof reason),
                    0);
    /* BACKWARD_TRANSITIVE: nw cannot read h1 (b missing, no default) */
    CU_ASSERT_EQUAL(
        schema_check_compatible(from, 2, &to, SCHEMA_BACKWARD_TRANSITIVE, reason, sizeof reason),
        SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strstr(reason, "BACKWARD_TRANSITIVE") != NULL);
    CU_ASSERT(strstr(reason, "READER_FIELD_MISSING_DEFAULT_VALUE") != NULL);
    CU_ASSERT_EQUAL(
        schema_check_compatible(from, 2, &to, SCHEMA_FULL_TRANSITIVE, reason, sizeof reason),
        SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(
        schema_check_compatible(from, 2, &to, SCHEMA_FORWARD_TRANSITIVE, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(
        schema_check_compatible(from, 0, &to, SCHEMA_ALWAYS_INCOMPATIBLE, reason, sizeof reason),
        0);
}

static void test_types(void)
{
    char reason[384];
    schema_data_t a = avro(V1);
    schema_data_t s = {SCHEMA_TYPE_STRING, NULL, 0, NULL};
    schema_data_t p1 = {SCHEMA_TYPE_PROTOBUF, (const uint8_t *)V1, strlen(V1), NULL};
    schema_data_t p2 = {SCHEMA_TYPE_PROTOBUF, (const uint8_t *)V2_B_STRING, strlen(V2_B_STRING),
                        NULL};
    /* a type change is refused unless ALWAYS_COMPATIBLE */
    CU_ASSERT_EQUAL(schema_check_compatible(&a, 1, &s, SCHEMA_FULL, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strstr(reason, "exists schema type AVRO, new schema type STRING") != NULL);
    CU_ASSERT_EQUAL(
        schema_check_compatible(&a, 1, &s, SCHEMA_ALWAYS_COMPATIBLE, reason, sizeof reason), 0);
    /* PROTOBUF: Pulsar's default check, refused only by ALWAYS_INCOMPATIBLE */
    CU_ASSERT_EQUAL(schema_check_compatible(&p1, 1, &p2, SCHEMA_FULL, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(
        schema_check_compatible(&p1, 1, &p2, SCHEMA_ALWAYS_INCOMPATIBLE, reason, sizeof reason),
        SCHEMA_E_INCOMPATIBLE);
    /* equality: Avro-based types compare the parsed JSON */
    const char *spaced = "{ \"name\":\"User\", \"type\":\"record\", \"fields\":["
                         "{\"type\":\"string\",\"name\":\"a\"},{\"name\":\"b\",\"type\":\"int\"}]}";
    schema_data_t sp = avro(spaced);
    CU_ASSERT(schema_equal(&a, &sp));
    CU_ASSERT(!schema_equal(&a, &p1));
}

/* KEY_VALUE: [len][key][len][value] with the halves' types in properties. */
static size_t kv_build(uint8_t *out, const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v), o = 0;
    out[o++] = (uint8_t)(kl >> 24), out[o++] = (uint8_t)(kl >> 16), out[o++] = (uint8_t)(kl >> 8),
    out[o++] = (uint8_t)kl;
    memcpy(out + o, k, kl), o += kl;
    out[o++] = (uint8_t)(vl >> 24), out[o++] = (uint8_t)(vl >> 16), out[o++] = (uint8_t)(vl >> 8),
    out[o++] = (uint8_t)vl;
    memcpy(out + o, v, vl), o += vl;
    return o;
}

static void test_key_value(void)
{
    char reason[384];
    uint8_t b1[1024], b2[1024], b3[1024];
    size_t l1 = kv_build(b1, "", V1), l2 = kv_build(b2, "", V2_ADD_DEFAULT),
           l3 = kv_build(b3, "", V2_B_STRING);
    json_t *props = json_pack("{ssss}", "key.schema.type", "STRING", "value.schema.type", "AVRO");
    json_t *jprops = json_pack("{ssss}", "key.schema.type", "STRING", "value.schema.type", "JSON");
    schema_data_t k1 = {SCHEMA_TYPE_KEY_VALUE, b1, l1, props};
    schema_data_t k2 = {SCHEMA_TYPE_KEY_VALUE, b2, l2, props};
    schema_data_t k3 = {SCHEMA_TYPE_KEY_VALUE, b3, l3, props};
    schema_data_t kj = {SCHEMA_TYPE_KEY_VALUE, b2, l2, jprops};
    schema_data_t key, value;
    CU_ASSERT_EQUAL(schema_kv_split(&k1, &key, &value), 0);
    CU_ASSERT_EQUAL(key.type, SCHEMA_TYPE_STRING);
    CU_ASSERT_EQUAL(value.type, SCHEMA_TYPE_AVRO);
    CU_ASSERT_EQUAL(value.len, strlen(V1));
    CU_ASSERT_EQUAL(schema_validate(&k1, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(schema_check_compatible(&k1, 1, &k2, SCHEMA_FULL, reason, sizeof reason), 0);
    CU_ASSERT_EQUAL(schema_check_compatible(&k1, 1, &k3, SCHEMA_FULL, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_EQUAL(schema_check_compatible(&k1, 1, &kj, SCHEMA_FULL, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strstr(reason, "different schema type") != NULL);
    schema_data_t trunc = {SCHEMA_TYPE_KEY_VALUE, b1, 5, props};
    CU_ASSERT_EQUAL(schema_validate(&trunc, reason, sizeof reason), QE_INVALID);
    json_decref(props);
    json_decref(jprops);
}

/* The reasons a refusal carries: the strategy, the stored version that
 * refused, which way the read failed, Avro's finding (Pulsar's wording where
 * it has one). */
static void test_refusal_reasons(void)
{
    char reason[512];
    schema_data_t v1 = avro(V1), v2 = avro(V2_ADD_DEFAULT), v3 = avro(V3_C_NO_DEFAULT);
    schema_data_t from[2] = {v1, v2};
    int64_t versions[2] = {5, 7};
    /* transitive: the latest (7) reads fine, version 5 refuses */
    CU_ASSERT_EQUAL(schema_check_compatible_versions(
                        from, versions, 2, &v3, SCHEMA_BACKWARD_TRANSITIVE, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_STRING_EQUAL(reason, "Error during schema compatibility check with strategy "
                                   "BACKWARD_TRANSITIVE: the new schema cannot read data written "
                                   "with schema version 5: READER_FIELD_MISSING_DEFAULT_VALUE: "
                                   "field 'c' of User has no default");
    CU_ASSERT_EQUAL(schema_check_compatible_versions(from, versions, 2, &v3, SCHEMA_BACKWARD,
                                                     reason, sizeof reason),
                    0);
    /* FORWARD (and FULL's second half): the stored schema reads the new one */
    schema_data_t nd = avro(V2_ADD_NO_DEFAULT), drop = avro(V2_DROP_B);
    int64_t three = 3;
    CU_ASSERT_EQUAL(schema_check_compatible_versions(&nd, &three, 1, &v1, SCHEMA_FORWARD, reason,
                                                     sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_STRING_EQUAL(reason, "Error during schema compatibility check with strategy FORWARD: "
                                   "schema version 3 cannot read data written with the new "
                                   "schema: READER_FIELD_MISSING_DEFAULT_VALUE: field 'c' of User "
                                   "has no default");
    CU_ASSERT_EQUAL(
        schema_check_compatible_versions(&v1, &three, 1, &drop, SCHEMA_FULL, reason, sizeof reason),
        SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strstr(reason, "strategy FULL: schema version 3 cannot read data written with the "
                             "new schema: READER_FIELD_MISSING_DEFAULT_VALUE: field 'b'") != NULL);
    /* without versions */
    CU_ASSERT_EQUAL(schema_check_compatible(&v1, 1, &drop, SCHEMA_FULL, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strstr(reason, "the existing schema cannot read data written with the new schema") !=
              NULL);
    /* a type change, ALWAYS_INCOMPATIBLE: Pulsar's words */
    schema_data_t str = {SCHEMA_TYPE_STRING, NULL, 0, NULL};
    CU_ASSERT_EQUAL(schema_check_compatible_versions(from, versions, 2, &str, SCHEMA_FULL, reason,
                                                     sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_STRING_EQUAL(
        reason, "Incompatible schema: exists schema type AVRO, new schema type STRING (schema "
                "version 7)");
    CU_ASSERT_EQUAL(schema_check_compatible_versions(
                        from, versions, 2, &v3, SCHEMA_ALWAYS_INCOMPATIBLE, reason, sizeof reason),
                    SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT_STRING_EQUAL(reason, "Schema compatibility strategy is ALWAYS_INCOMPATIBLE");
    /* KEY_VALUE: which half */
    uint8_t b1[1024], b3[1024];
    size_t l1 = kv_build(b1, "", V1), l3 = kv_build(b3, "", V2_B_STRING);
    json_t *props = json_pack("{ssss}", "key.schema.type", "STRING", "value.schema.type", "AVRO");
    schema_data_t k1 = {SCHEMA_TYPE_KEY_VALUE, b1, l1, props};
    schema_data_t k3 = {SCHEMA_TYPE_KEY_VALUE, b3, l3, props};
    int64_t two = 2;
    CU_ASSERT_EQUAL(
        schema_check_compatible_versions(&k1, &two, 1, &k3, SCHEMA_BACKWARD, reason, sizeof reason),
        SCHEMA_E_INCOMPATIBLE);
    CU_ASSERT(strncmp(reason,
                      "KEY_VALUE value schema: Error during schema compatibility check with "
                      "strategy BACKWARD: the new schema cannot read data written with schema "
                      "version 2: TYPE_MISMATCH",
                      strlen("KEY_VALUE value schema: Error during schema compatibility check "
                             "with strategy BACKWARD: the new schema cannot read data written "
                             "with schema version 2: TYPE_MISMATCH")) == 0);
    json_decref(props);
}

static void register_suites(void)
{
    CU_pSuite s = CU_add_suite("schema_compat", NULL, NULL);
    CU_add_test(s, "strategy and type names", test_strategy_names);
    CU_add_test(s, "avro reader/writer rules", test_avro_rules);
    CU_add_test(s, "avro recursive types and namespaces", test_avro_recursive_and_namespaces);
    CU_add_test(s, "definition validation", test_validate);
    CU_add_test(s, "strategies against the latest", test_strategies_latest);
    CU_add_test(s, "transitive strategies", test_strategies_transitive);
    CU_add_test(s, "type rules", test_types);
    CU_add_test(s, "key/value schemas", test_key_value);
    CU_add_test(s, "refusal reasons", test_refusal_reasons);
}

int main(int argc, char **argv)
{
    return test_main(argc, argv, register_suites);
}
