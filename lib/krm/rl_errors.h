/* rl_errors: what Porch's SDK says when a function's output is not a
 * usable ResourceList: its words, and the order in which it checks.
 *
 * Why: the reason ends up in the gRPC status users read ("failed to parse
 * input bytes: expected exactly one object, got 2"), and tests written
 * against Porch compare it byte for byte. fn.ParseResourceList runs its
 * checks in a fixed order and stops at the first that fails, while the judge
 * (resourcelist.c) reads the keys in whatever order they come; so the judge
 * collects facts (rl_facts) and rl_errors_verdict applies the checks to them
 * afterwards, in the SDK's order. The texts follow Porch's vendored SDK
 * (third_party/kptdev/krm-functions-sdk go/fn/resourcelist.go, object.go and
 * internal/) on kyaml's yaml.v3. Where Go wraps with pkg/errors and Porch
 * prints it with %+v, Go shows "<cause>\n<context>" followed by a stack
 * trace; we give the first two lines.
 *
 * Errors are appended to the caller's `buf *err`, whole. */
#ifndef KRM_RL_ERRORS_H
#define KRM_RL_ERRORS_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/yaml_unmarshal.h"

/* The prefix ParseResourceList puts before ParseKubeObject's errors, which
 * wraps YAML syntax errors once more with the same words. */
#define PARSE_PREFIX "failed to parse input bytes: "
#define DECODE_PREFIX PARSE_PREFIX PARSE_PREFIX

/* What the stream and the first document's top-level mapping said, kept
 * until the end so the checks run in ParseResourceList's order whatever
 * order the keys came in. Kinds are yaml_v3_kind values, 0 when absent. */
typedef struct rl_facts {
    size_t n_docs;             /* documents in the stream */
    int first_bad_doc_kind;    /* of the first document root that is not a mapping */
    char *kind;                /* NULL unless kind is a string scalar */
    size_t kind_len;
    char *api_version;
    int items_kind;            /* of the items value */
    int bad_item_kind;         /* of the first item that is not a mapping */
    size_t n_items;
    int function_config_kind;
    int results_kind;
    int legacy_items_kind;     /* results given as a mapping: its `items` value */
} rl_facts;

/* The SDK's checks on a whole input whose YAML was well-formed, in its
 * order: 0 when they all pass, else -1 with the first failure's words in
 * err. `terr` holds yaml.v3's unmarshal errors for `results`. */
int rl_errors_verdict(const rl_facts *f, const yaml_unmarshal_errors *terr, buf *err);

/* PARSE_PREFIX "out of memory"; returns -1. */
int rl_errors_oom(buf *err);

#endif
