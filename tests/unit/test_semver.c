/* Unit tests for semver: Masterminds/semver v3's readings, from its
 * documented ranges (README "Checking Version Constraints"). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/semver.h"

static int matches(const char *constraint, const char *version)
{
    buf err = {0};
    semver_constraint *c = semver_constraint_parse(constraint, &err);
    cr_assert_not_null(c, "constraint \"%s\": %s", constraint, err.data);
    semver v;
    cr_assert_eq(semver_parse(version, &v, &err), 0, "version \"%s\": %s", version, err.data);
    int ok = semver_constraint_check(c, &v);
    semver_constraint_free(c);
    buf_free(&err);
    return ok;
}

Test(semver, versions_as_masterminds_reads_them)
{
    semver v;
    cr_assert_eq(semver_parse("v1.2", &v, NULL), 0);
    cr_assert(v.major == 1 && v.minor == 2 && v.patch == 0 && !*v.pre);
    cr_assert_eq(semver_parse("1.2.3-beta.1+build.5", &v, NULL), 0);
    cr_assert_str_eq(v.pre, "beta.1");
    buf err = {0};
    const char *bad[] = {"", "v", "1.2.3.4", "1.x", "latest", "1.2.3-", "1.2.3-01", "V1.2",
                         "99999999999999999999.0.0", " 1.2.3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(semver_parse(bad[i], &v, &err), -1, "\"%s\" accepted", bad[i]);
    buf_free(&err);
}

Test(semver, ordering_puts_releases_after_their_prereleases)
{
    const char *order[] = {"0.9.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                           "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1",
                           "1.10.0", "v2"};
    for (size_t i = 0; i + 1 < sizeof order / sizeof order[0]; i++) {
        semver a, b;
        cr_assert_eq(semver_parse(order[i], &a, NULL), 0);
        cr_assert_eq(semver_parse(order[i + 1], &b, NULL), 0);
        cr_assert_lt(semver_compare(&a, &b), 0, "%s < %s", order[i], order[i + 1]);
        cr_assert_gt(semver_compare(&b, &a), 0);
    }
    semver a, b;
    semver_parse("v1.2.3+x", &a, NULL);
    semver_parse("1.2.3", &b, NULL);
    cr_assert_eq(semver_compare(&a, &b), 0, "metadata and the v do not count");
}

Test(semver, caret_tilde_and_wildcards)
{
    static const struct { const char *c, *v; int ok; } cases[] = {
        {"^1.2.3", "1.2.3", 1}, {"^1.2.3", "1.9.0", 1}, {"^1.2.3", "2.0.0", 0},
        {"^1.2.3", "1.2.2", 0}, {"^1.2", "1.2.0", 1}, {"^1", "1.99.99", 1},
        {"^0.2.3", "0.2.9", 1}, {"^0.2.3", "0.3.0", 0}, {"^0.0.3", "0.0.3", 1},
        {"^0.0.3", "0.0.4", 0}, {"^0.0", "0.0.9", 1}, {"^0.0", "0.1.0", 0},
        {"^0", "0.9.0", 1}, {"^0", "1.0.0", 0}, {"^1.2.x", "1.5.0", 1},
        {"~1.2.3", "1.2.9", 1}, {"~1.2.3", "1.3.0", 0}, {"~1", "1.9.0", 1},
        {"~1", "2.0.0", 0}, {"~>2.3", "2.3.5", 1}, {"~2.3", "2.4.0", 0},
        {"~1.x", "1.7.0", 1}, {"1.2.x", "1.2.7", 1}, {"1.2.x", "1.3.0", 0},
        {"*", "7.0.0", 1}, {"1.2.3", "1.2.3", 1}, {"=1.2.3", "1.2.4", 0},
        {"v1.2.3", "1.2.3", 1}, {"1.2", "1.2.5", 1}, {"1", "1.5.0", 1},
        {"!=1.2.3", "1.2.4", 1}, {"!=1.2.3", "1.2.3", 0}, {"!=1.x", "1.5.0", 0},
        {"!=1.x", "2.0.0", 1}, {">1.2", "1.2.9", 0}, {">1.2", "1.3.0", 1},
        {">11", "11.5.0", 0}, {">11", "12.0.0", 1}, {"<=2.x", "2.9.0", 1},
        {"<=2.x", "3.0.0", 0}, {">=1.2.x", "1.2.0", 1}, {"<1.2.3", "1.2.2", 1},
        {"=>1.0", "1.0.0", 1}, {"=<1.0", "1.0.0", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(matches(cases[i].c, cases[i].v), cases[i].ok, "\"%s\" on %s: want %d",
                     cases[i].c, cases[i].v, cases[i].ok);
}

Test(semver, ands_ors_ranges_and_prereleases)
{
    cr_assert(matches(">= 1.2, < 3.0.0 || >= 4.2.3", "2.5.0"));
    cr_assert(matches(">= 1.2, < 3.0.0 || >= 4.2.3", "4.3.0"));
    cr_assert(!matches(">= 1.2, < 3.0.0 || >= 4.2.3", "3.5.0"));
    cr_assert(matches(">=1.2 <3", "2.0.0"), "space is AND");
    cr_assert(!matches(">=1.2 <3", "3.0.0"));
    cr_assert(matches("1.2 - 1.4.5", "1.4.5"));
    cr_assert(!matches("1.2 - 1.4.5", "1.4.6"));
    cr_assert(matches("2.3.4 - 4.5", "4.5.0"));
    cr_assert(!matches("^1.2", "1.3.0-beta"), "a prerelease only when asked for");
    cr_assert(matches(">=1.3.0-alpha", "1.3.0-beta"));
    cr_assert(!matches(">=1.3.0-beta", "1.3.0-alpha"));
}

Test(semver, improper_constraints_are_named_as_masterminds_names_them)
{
    const char *bad[] = {"", "latest", "1.2.3.4", "> =1", ">>1", "1,,2", "1 ||", "^", "a1",
                         "1.2.3 foo"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        buf err = {0};
        cr_assert_null(semver_constraint_parse(bad[i], &err), "\"%s\" accepted", bad[i]);
        cr_assert(err.data && !strncmp(err.data, "improper constraint: ", 21), "%s: %s", bad[i],
                  err.data);
        buf_free(&err);
    }
    buf err = {0};
    cr_assert_null(semver_constraint_parse("1x.2.3", &err));
    cr_assert_str_eq(err.data, "constraint Parser Error");
    buf_free(&err);
}

static int no_v(const char *tag)
{
    return tag[0] != 'v';
}

Test(semver, highest_match_among_tags)
{
    char *tags[] = {"v1.2.0", "latest", "1.9.0", "v1.10.0", "v2.0.0", "v1.10.0+b", "v1.11.0-rc.1"};
    buf err = {0};
    semver_constraint *c = semver_constraint_parse("^1", &err);
    cr_assert_not_null(c);
    cr_assert_eq(semver_highest(c, tags, 7, NULL), tags[3], "numeric order, first of equals");
    cr_assert_eq(semver_highest(c, tags, 3, no_v), tags[0], "1.9.0 skipped");
    cr_assert_null(semver_highest(c, tags + 1, 1, NULL), "latest is no version");
    semver_constraint_free(c);
    buf_free(&err);
}

Test(semver, a_constraint_past_the_limit_is_refused_unread)
{
    char long_one[SEMVER_CONSTRAINT_MAX + 2];
    memset(long_one, '1', sizeof long_one - 1);
    long_one[sizeof long_one - 1] = '\0';
    buf err = {0};
    cr_assert_null(semver_constraint_parse(long_one, &err));
    cr_assert_str_eq(err.data, "constraint of 1025 bytes is longer than 1024 (the limit)");
    buf_free(&err);
}
