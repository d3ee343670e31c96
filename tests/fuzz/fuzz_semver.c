/* Fuzzes semver (lib/core/semver): a request's Tag is any text a gRPC peer
 * sends. The input up to its first newline is a constraint, the rest a
 * version (both as C strings, cut at a NUL).
 *
 * Properties: parsing never crashes, refuses with a reason, and stays
 * within the length bound; a version equals itself and satisfies the
 * constraint "=MAJOR.MINOR.PATCH[-PRE]" written from it; semver_highest
 * picks only what the constraint accepts. */
#include <string.h>

#include "core/semver.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *nl = strchr(text, '\n');
    const char *version = nl ? nl + 1 : "";
    if (nl)
        *nl = '\0';
    buf err = {0};
    semver_constraint *c = semver_constraint_parse(text, &err);
    FUZZ_CHECK(c || (err.data && err.data[0]));
    FUZZ_CHECK(!c || strlen(text) <= SEMVER_CONSTRAINT_MAX);
    buf_free(&err);
    semver v;
    if (semver_parse(version, &v, &err) == 0) {
        FUZZ_CHECK(semver_compare(&v, &v) == 0);
        if (c)
            (void)semver_constraint_check(c, &v);
        buf exact = {0};
        buf_printf(&exact, "=%llu.%llu.%llu", (unsigned long long)v.major,
                   (unsigned long long)v.minor, (unsigned long long)v.patch);
        if (*v.pre)
            buf_printf(&exact, "-%s", v.pre);
        semver_constraint *eq = semver_constraint_parse(exact.data, &err);
        FUZZ_CHECK(eq != NULL);
        FUZZ_CHECK(semver_constraint_check(eq, &v));
        semver_constraint_free(eq);
        buf_free(&exact);
        char *tags[] = {(char *)version};
        const char *best = c ? semver_highest(c, tags, 1, NULL) : NULL;
        FUZZ_CHECK(!best || semver_constraint_check(c, &v));
    } else {
        FUZZ_CHECK(err.data && err.data[0]);
    }
    buf_free(&err);
    semver_constraint_free(c);
    free(text);
    return 0;
}
