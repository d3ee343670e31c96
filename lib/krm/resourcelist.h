/* resourcelist: reads a KRM ResourceList far enough to judge a function's
 * output the way Porch's Go wrapper does (krm-functions-sdk
 * fn.ParseResourceList), keeping its structured results (rendered as Porch
 * prints them by rl_results.h).
 *
 * The bytes themselves are never rewritten: the server returns the function's
 * stdout untouched. Parsing uses libyaml's event API, skips the contents of
 * `items` without building a tree, and has fixed limits on nesting so hostile
 * input costs bounded memory and stack, and time linear in its size. It can
 * be done in steps (rl_judge_*), so a server can judge a large output
 * between other work. */
#ifndef KRM_RESOURCELIST_H
#define KRM_RESOURCELIST_H

#include <stddef.h>

#include "core/buf.h"

/* How field.currentValue / field.proposedValue was written (YAML 1.2 core
 * resolution, as yaml.v3 does it), so the JSON form keeps its type. */
typedef enum rl_value_type {
    RL_VALUE_STRING = 0,
    RL_VALUE_INT,
    RL_VALUE_FLOAT,
    RL_VALUE_BOOL,
} rl_value_type;

typedef struct rl_tag {
    char *key;
    char *value;
} rl_tag;

/* One entry of `results`. Every string is NULL when absent. */
typedef struct rl_result {
    char *message;
    char *severity;              /* "error", "warning", "info", or as written */
    char *ref_api_version;       /* resourceRef.apiVersion */
    char *ref_kind;
    char *ref_name;              /* also read from legacy resourceRef.metadata.name */
    char *ref_namespace;
    char *field_path;            /* field.path */
    char *field_current_value;   /* field.currentValue, scalars only */
    char *field_proposed_value;  /* field.proposedValue, scalars only */
    char *file_path;             /* file.path */
    long file_index;             /* file.index, 0 when absent */
    rl_tag *tags;
    size_t n_tags;
    /* The SDK keeps resourceRef, field and file as pointers: present-but-empty
     * differs from absent (`field: {}` still prints its path slot in the
     * text form, and each shows up as {} in JSON). */
    int has_resource_ref;
    int has_field;
    int has_file;
    rl_value_type field_current_type;
    rl_value_type field_proposed_type;
} rl_result;

typedef struct rl_list {
    char *api_version;   /* NULL when absent (not checked, as in the SDK) */
    char *kind;          /* always "ResourceList" after a successful parse */
    size_t n_items;      /* entries of `items` */
    int has_function_config;
    rl_result *results;
    size_t n_results;
    size_t n_results_omitted;  /* results past the storage cap (parsed, not kept) */
} rl_list;

/* Parse `len` bytes of YAML or JSON. Returns 0 and fills *out (release it
 * with rl_free), or -1 and appends the SDK-compatible reason to err, e.g.
 * "failed to parse input bytes: expected exactly one object, got 0" or
 * "input was of unexpected kind \"ConfigMap\"; expected ResourceList".
 * *out is left zeroed on failure. */
int rl_parse(const char *data, size_t len, rl_list *out, buf *err);

/* How rl_parse reads `items`: through rl_scan when the input is in its
 * subset, else through libyaml (AUTO); always through libyaml (LIBYAML); or
 * only through rl_scan, returning -2 when the input is not in its subset
 * (SCAN_ONLY). The answers must never differ: tests compare them. */
typedef enum rl_parse_mode { RL_PARSE_AUTO, RL_PARSE_LIBYAML, RL_PARSE_SCAN_ONLY } rl_parse_mode;
int rl_parse_with(const char *data, size_t len, rl_parse_mode mode, rl_list *out, buf *err);
void rl_free(rl_list *rl);

/* The same judgement in steps, for a server that must go back to its event
 * loop between them: rl_judge_new takes the bytes (not copied: they must
 * outlive the judge); each rl_judge_step reads at most `budget` libyaml
 * events and about 32 KiB of input (one scalar is always read whole), and
 * returns 1 while there is more to do, else exactly what rl_parse_with
 * would have returned, with *out and err filled as it fills them. A judge
 * can be freed at any point. rl_judge_new returns NULL when out of memory. */
typedef struct rl_judge rl_judge;
rl_judge *rl_judge_new(const char *data, size_t len, rl_parse_mode mode);
int rl_judge_step(rl_judge *j, size_t budget, rl_list *out, buf *err);
void rl_judge_free(rl_judge *j);

#endif
