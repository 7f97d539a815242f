/* Unit tests of common/json_out: the text jansson would write, and the errors. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/json_out.h"
#include "tests/unit/support/test_support.h"

void register_json_out_suite(void);

/* What jansson's compact dump gives for the string s. */
static char *jansson_string(const char *s)
{
    json_t *j = json_string(s);
    char *out = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return out;
}

static char *one_string(const char *s, int *err)
{
    json_out_t o;
    size_t len = 0;
    jo_init(&o, 1);
    jo_str(&o, s);
    char *out = jo_finish(&o, &len, err);
    if (out)
        CU_ASSERT_EQUAL(len, strlen(out));
    return out;
}

static void test_strings_as_jansson(void)
{
    /* Every ASCII character but NUL, in one string and one by one. */
    char all[128];
    for (int c = 1; c < 128; c++) {
        char s[2] = {(char)c, 0};
        all[c - 1] = (char)c;
        int err = 1;
        char *mine = one_string(s, &err), *theirs = jansson_string(s);
        TEST_REQUIRE(mine && theirs);
        CU_ASSERT_EQUAL(err, 0);
        CU_ASSERT_STRING_EQUAL(mine, theirs);
        free(mine);
        free(theirs);
    }
    all[127] = 0;
    const char *cases[] = {all,
                           "",
                           "pulsar://a/b",
                           "caf\xc3\xa9",
                           "\xe2\x82\xac 100",
                           "\xf0\x9f\x98\x80 x\"y\\z",
                           "tab\there\nnew"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int err = 1;
        char *mine = one_string(cases[i], &err), *theirs = jansson_string(cases[i]);
        TEST_REQUIRE(mine && theirs);
        CU_ASSERT_EQUAL(err, 0);
        CU_ASSERT_STRING_EQUAL(mine, theirs);
        free(mine);
        free(theirs);
    }
}

static void test_invalid_utf8_refused(void)
{
    /* Each of these jansson refuses too (json_string returns NULL). */
    const char *bad[] = {"\x80",         "a\xc3",        "\xc0\xaf",
                         "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                         "\xff",         "ok \xc3(",     "\xf0\x9f\x98"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = json_string(bad[i]);
        CU_ASSERT_PTR_NULL(j);
        json_decref(j);
        int err = 0;
        CU_ASSERT_PTR_NULL(one_string(bad[i], &err));
        CU_ASSERT_EQUAL(err, QE_INVALID);
    }
}

static void test_document_as_jansson(void)
{
    json_out_t o;
    jo_init(&o, 8); /* grows several times */
    jo_obj(&o);
    jo_key(&o, "min");
    jo_int(&o, INT64_MIN);
    jo_key(&o, "max");
    jo_int(&o, INT64_MAX);
    jo_key(&o, "zero");
    jo_int(&o, 0);
    jo_key(&o, "neg");
    jo_int(&o, -1);
    jo_key(&o, "empty_obj");
    jo_obj(&o);
    jo_end(&o);
    jo_key(&o, "empty_arr");
    jo_arr(&o);
    jo_end(&o);
    jo_key(&o, "nest");
    jo_arr(&o);
    jo_int(&o, 1);
    jo_obj(&o);
    jo_key(&o, "k\"ey");
    jo_str(&o, "v");
    jo_key(&o, "raw");
    jo_raw(&o, "{\"a\":[1,2]}", 11);
    jo_end(&o);
    jo_arr(&o);
    jo_str(&o, "x");
    jo_str(&o, "y");
    jo_end(&o);
    jo_end(&o);
    jo_end(&o);
    size_t len = 0;
    int err = 1;
    char *mine = jo_finish(&o, &len, &err);
    TEST_REQUIRE(mine != NULL);
    CU_ASSERT_EQUAL(err, 0);
    CU_ASSERT_EQUAL(len, strlen(mine));

    json_t *doc =
        json_pack("{s:I,s:I,s:i,s:i,s:{},s:[],s:[i,{s:s,s:{s:[i,i]}},[s,s]]}", "min",
                  (json_int_t)INT64_MIN, "max", (json_int_t)INT64_MAX, "zero", 0, "neg", -1,
                  "empty_obj", "empty_arr", "nest", 1, "k\"ey", "v", "raw", "a", 1, 2, "x", "y");
    TEST_REQUIRE(doc != NULL);
    char *theirs = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    TEST_REQUIRE(theirs != NULL);
    CU_ASSERT_STRING_EQUAL(mine, theirs);
    free(mine);
    free(theirs);
}

static int finish_err(json_out_t *o)
{
    size_t len;
    int err = 0;
    char *out = jo_finish(o, &len, &err);
    free(out);
    return out ? 0 : err;
}

static void test_unbalanced_refused(void)
{
    json_out_t o;
    jo_init(&o, 0);
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID); /* nothing written */

    jo_init(&o, 0);
    jo_obj(&o);
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID); /* not closed */

    jo_init(&o, 0);
    jo_obj(&o);
    jo_key(&o, "a");
    jo_end(&o); /* a name without its value */
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID);

    jo_init(&o, 0);
    jo_arr(&o);
    jo_end(&o);
    jo_end(&o); /* one close too many */
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID);

    jo_init(&o, 0);
    jo_key(&o, "top"); /* a name outside an object */
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID);

    jo_init(&o, 0);
    jo_int(&o, 1);
    jo_int(&o, 2); /* two values at the top: "1,2" is not a document */
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID);

    jo_init(&o, 0);
    for (int i = 0; i <= JO_DEPTH_MAX; i++)
        jo_arr(&o);
    CU_ASSERT_EQUAL(o.err, QE_INVALID); /* deeper than JO_DEPTH_MAX */
    CU_ASSERT_EQUAL(finish_err(&o), QE_INVALID);

    jo_init(&o, 0);
    for (int i = 0; i < JO_DEPTH_MAX; i++)
        jo_arr(&o);
    for (int i = 0; i < JO_DEPTH_MAX; i++)
        jo_end(&o);
    CU_ASSERT_EQUAL(finish_err(&o), 0); /* exactly JO_DEPTH_MAX is fine */
}

void register_json_out_suite(void)
{
    CU_pSuite s = CU_add_suite("json_out", NULL, NULL);
    CU_add_test(s, "strings as jansson writes them", test_strings_as_jansson);
    CU_add_test(s, "invalid UTF-8 refused", test_invalid_utf8_refused);
    CU_add_test(s, "document as jansson writes it", test_document_as_jansson);
    CU_add_test(s, "unbalanced documents refused", test_unbalanced_refused);
}
