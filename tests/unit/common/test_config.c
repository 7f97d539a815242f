/* Unit tests of common/config: file parsing, overrides, typed getters, errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/errors.h"
#include "tests/unit/support/test_support.h"

void register_config_suite(void);

static char *write_file(const char *dir, const char *text)
{
    char *path;
    if (asprintf(&path, "%s/test.conf", dir) < 0)
        return NULL;
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_config_file_and_override(void)
{
    char *dir = test_tmpdir("config");
    char *path = write_file(dir, "# comment\n\nbrokerServicePort=6650\n  webServicePort = 8080  \n"
                                 "brokerDeduplicationEnabled=TRUE\nclusterName=standalone\n");
    qconfig_t *cfg = qconfig_new();
    char err[256] = "";
    CU_ASSERT_EQUAL(qconfig_load_file(cfg, path, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(qconfig_get(cfg, "webServicePort", ""), "8080");
    CU_ASSERT_EQUAL(qconfig_set(cfg, "brokerServicePort", "6660"), 0);
    int64_t port = 0;
    CU_ASSERT_EQUAL(qconfig_get_int(cfg, "brokerServicePort", 1, 0, 65535, &port), 0);
    CU_ASSERT_EQUAL(port, 6660);
    bool dedup = false;
    CU_ASSERT_EQUAL(qconfig_get_bool(cfg, "brokerDeduplicationEnabled", false, &dedup), 0);
    CU_ASSERT_TRUE(dedup);
    CU_ASSERT_EQUAL(qconfig_get_int(cfg, "absent", 42, 0, 100, &port), 0);
    CU_ASSERT_EQUAL(port, 42);
    CU_ASSERT_FALSE(qconfig_has(cfg, "absent"));
    qconfig_free(cfg);
    free(path);
    test_rm_rf(dir);
    free(dir);
}

static void test_config_errors(void)
{
    char *dir = test_tmpdir("config");
    char *path = write_file(dir, "a=1\nno equals sign\n");
    qconfig_t *cfg = qconfig_new();
    char err[256] = "";
    CU_ASSERT_EQUAL(qconfig_load_file(cfg, path, err, sizeof err), QE_INVALID);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":2: expected key=value"));
    CU_ASSERT_TRUE(qconfig_load_file(cfg, "/nonexistent/quire.conf", err, sizeof err) < 0);
    CU_ASSERT_EQUAL(qconfig_set(cfg, "port", "12x"), 0);
    int64_t v;
    CU_ASSERT_EQUAL(qconfig_get_int(cfg, "port", 0, 0, 65535, &v), QE_INVALID);
    CU_ASSERT_EQUAL(qconfig_set(cfg, "port", "70000"), 0);
    CU_ASSERT_EQUAL(qconfig_get_int(cfg, "port", 0, 0, 65535, &v), QE_INVALID);
    CU_ASSERT_EQUAL(qconfig_set(cfg, "flag", "yes"), 0);
    bool b;
    CU_ASSERT_EQUAL(qconfig_get_bool(cfg, "flag", false, &b), QE_INVALID);
    qconfig_free(cfg);
    free(path);
    test_rm_rf(dir);
    free(dir);
}

static void test_config_double(void)
{
    qconfig_t *cfg = qconfig_new();
    double d = -1;
    CU_ASSERT_EQUAL(qconfig_get_double(cfg, "absent", 0.5, 0, 1, &d), 0);
    CU_ASSERT_EQUAL(d, 0.5);
    CU_ASSERT_EQUAL(qconfig_set(cfg, "t", "0.25"), 0);
    CU_ASSERT_EQUAL(qconfig_get_double(cfg, "t", 0, 0, 1, &d), 0);
    CU_ASSERT_EQUAL(d, 0.25);
    CU_ASSERT_EQUAL(qconfig_set(cfg, "t", "-1"), 0);
    CU_ASSERT_EQUAL(qconfig_get_double(cfg, "t", 0, -2, 1, &d), 0);
    CU_ASSERT_EQUAL(d, -1);
    const char *bad[] = {"1.5", "abc", "0.2x", "nan", "inf", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CU_ASSERT_EQUAL(qconfig_set(cfg, "t", bad[i]), 0);
        CU_ASSERT_EQUAL(qconfig_get_double(cfg, "t", 0, 0, 1, &d), QE_INVALID);
    }
    qconfig_free(cfg);
}

void register_config_suite(void)
{
    CU_pSuite s = CU_add_suite("config", NULL, NULL);
    CU_add_test(s, "file and override", test_config_file_and_override);
    CU_add_test(s, "errors", test_config_errors);
    CU_add_test(s, "numbers with a fraction", test_config_double);
}
