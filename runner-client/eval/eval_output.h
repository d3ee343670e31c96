/* eval_output: where `runner-client eval` puts what the functions made,
 * kpt fn eval's `-o` (--output):
 *
 *   DIR input, no -o     the package is updated in place (pkg_write.h)
 *   -, FILE, no -o       the ResourceList on stdout, as the function (or
 *                        the pipeline) answered it
 *   -o stdout            the same for any input
 *   -o unwrap            the items as a YAML stream, without kpt's
 *                        bookkeeping annotations
 *   -o DIR               the items written as a package into DIR, which
 *                        must not exist yet (kpt's rule: nothing is merged
 *                        into or overwritten in a directory by accident)
 *
 * Why stdout for a FILE: `eval file.yaml` printed the answer before a
 * package could be written back, and a file is not a package to update;
 * `-o DIR` makes a package of it. When a step failed, nothing is written
 * to a package (in place or DIR) or unwrapped, as kpt does; stdout still
 * gets the ResourceList, which holds the results that say why. */
#ifndef KRM_RC_EVAL_OUTPUT_H
#define KRM_RC_EVAL_OUTPUT_H

#include <stddef.h>

#include "core/buf.h"

/* The command running ("eval", or "render", set by it): the messages of
 * eval_output, eval_run and pipeline_run start "runner-client CMD: ". */
extern const char *eval_command;

/* The flags about output, shared by eval and eval --kube. */
typedef struct eval_cli_out {
    const char *output;      /* -o / --output; NULL: the default */
    const char *results_dir; /* --results-dir; NULL: none */
    int truncate;            /* --truncate-output (default true) */
} eval_cli_out;

#define EVAL_CLI_OUT_INIT { .truncate = 1 }
/* Their entries in a flag_def array (flags.h). */
#define EVAL_CLI_OUT_FLAGS(o)                                                                  \
    { "-o", &(o)->output, NULL }, { "--output", &(o)->output, NULL },                          \
        { "--results-dir", &(o)->results_dir, NULL }, { "--truncate-output", NULL, &(o)->truncate }

/* Makes --results-dir (and its parents) when missing, as kpt does. Returns
 * 0, or -1 with a reason in err. */
int eval_cli_out_prepare(const eval_cli_out *o, buf *err);

typedef enum eval_out_kind {
    EVAL_OUT_STDOUT,
    EVAL_OUT_IN_PLACE,
    EVAL_OUT_UNWRAP,
    EVAL_OUT_DIR,
} eval_out_kind;

typedef struct eval_output {
    eval_out_kind kind;
    const char *dir; /* in place: the input package; EVAL_OUT_DIR: -o's directory */
} eval_output;

/* Chooses from the input (FILE, DIR or "-") and -o's value (NULL when not
 * given). Returns 0, or -1 with a reason in err (-o DIR exists, -o "").
 * An input that does not exist is left for the reader to report. */
int eval_output_choose(eval_output *o, const char *input, const char *flag, buf *err);

/* Writes the final ResourceList (final[0..len)) where o says; `input` is
 * the ResourceList built from the input (the package as read, for in
 * place), `failed` whether a step failed. Returns 0, or -1 after printing
 * why on stderr. */
int eval_output_write(const eval_output *o, const buf *input, const char *final, size_t len,
                      int failed);

#endif
