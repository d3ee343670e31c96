/* semver: versions and version constraints as Masterminds/semver v3 reads
 * them, the library kpt and Porch resolve a function's `tag` with.
 *
 * Why its rules and not the SemVer spec's: a request's Tag ("^1.2",
 * "~1.2.3", ">=1.0 <2", "1.x || 2.1 - 2.3") must pick the same image tag
 * here as in Porch. So a version may start with "v" and lack its minor and
 * patch ("v1.2" is 1.2.0); a constraint is ORs ("||") of ANDs (separated by
 * spaces or a comma) of an operator (= != > < >= => <= =< ~ ~> ^, or none)
 * and a version that may hold x, X or * ("1.2.x"); "A - B" is ">= A, <= B";
 * a prerelease version matches only a constraint that names a prerelease.
 * Everything lives inside the parsed objects; nothing points back into the
 * strings parsed. */
#ifndef KRM_SEMVER_H
#define KRM_SEMVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Longest prerelease kept; a longer one is refused (tags are at most 128). */
#define SEMVER_PRE_MAX 128

typedef struct semver {
    uint64_t major, minor, patch;
    char pre[SEMVER_PRE_MAX + 1];   /* "" when none; build metadata is dropped */
} semver;

/* Masterminds' NewVersion. Returns 0, or -1 with the reason appended to err
 * (may be NULL). */
int semver_parse(const char *s, semver *out, buf *err);

/* <0, 0, >0 as a orders before, with, after b (build metadata ignored). */
int semver_compare(const semver *a, const semver *b);

typedef struct semver_constraint semver_constraint;

/* Longest constraint read: the scan is linear, but a request's Tag may be
 * megabytes and a constraint has no use for them. */
#define SEMVER_CONSTRAINT_MAX 1024

/* Masterminds' NewConstraint. Returns the constraint, or NULL with the
 * reason appended to err: Masterminds' words, "improper constraint: X",
 * or that it is longer than SEMVER_CONSTRAINT_MAX (or "out of memory"). */
semver_constraint *semver_constraint_parse(const char *s, buf *err);
/* Whether v satisfies c. */
int semver_constraint_check(const semver_constraint *c, const semver *v);
void semver_constraint_free(semver_constraint *c);

/* The highest of tags[0..n) that reads as a version satisfying c, leaving
 * out those skip (may be NULL) says 1 to; NULL when none. The first of
 * equal versions wins. */
const char *semver_highest(const semver_constraint *c, char *const *tags, size_t n,
                           int (*skip)(const char *tag));

#endif
