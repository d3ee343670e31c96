/* pipeline: the functions `runner-client eval` runs one after another, as
 * given on the command line (`--fn IMG[=k=v,...]`, like `kpt fn eval IMG --
 * k=v`) or in a kpt Kptfile's `pipeline` (mutators, then validators, as
 * `kpt fn render` runs them). This file only describes the steps; running
 * them is pipeline_run's job. */
#ifndef KRM_RC_PIPELINE_H
#define KRM_RC_PIPELINE_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/rl_edit.h"

typedef struct pl_step {
    char *image;      /* sent as the request's image */
    char *name;       /* the Kptfile's `name`; NULL when not given */
    char *tag;        /* the Kptfile's `tag` (kpt's semver constraint), sent as the
                       * request's Tag; NULL when not given */
    rl_doc *config;   /* functionConfig; NULL: the step gets none */
    int validator;    /* its output items are not carried forward */
} pl_step;

typedef struct pipeline {
    pl_step *steps;
    size_t n_steps;
} pipeline;

/* Adds a mutator from `--fn` text: IMG, or IMG=k=v[,k=v...], whose pairs
 * become a ConfigMap named function-input. Returns 0, or -1 with a one-line
 * reason in err (empty image, a pair without '=' or with an empty key). */
int pipeline_add_fn(pipeline *p, const char *spec, buf *err);

/* Adds the steps of a Kptfile (`path` is the file, or a directory holding
 * one): pipeline.mutators, then pipeline.validators, each {image, name,
 * configMap | configPath}; configPath is read relative to the Kptfile's
 * directory and its single object becomes the functionConfig. configPath
 * must stay inside that directory, as kpt says ("path must be relative",
 * "path must not be outside the package"), and no symbolic link on its way
 * is followed. The Kptfile is read up to max bytes, and its configPath files
 * together (one read again for each step naming it),
 * regular files only. Returns 0, or -1 with a one-line reason naming the
 * file and the entry in err. */
int pipeline_load_kptfile(pipeline *p, const char *path, size_t max, buf *err);

/* The same for the Kptfile of a subpackage, directory `dir`, which render
 * runs first: one without a pipeline (or with an empty one) adds no step
 * and is no error, as kpt passes such a package's resources on. */
int pipeline_load_subpackage(pipeline *p, const char *dir, size_t max, buf *err);

/* The same for a Kptfile's text already read: `path` names it in messages,
 * `dir` is the package each configPath is read beneath (up to max bytes). */
int pipeline_parse_kptfile(pipeline *p, const char *path, const char *dir, const char *data,
                           size_t len, size_t max, buf *err);

/* A single call's functionConfig, as kpt fn eval makes it: from a file
 * (--fn-config: its one KRM object, read up to max bytes), or from the
 * KEY=VALUE arguments after `--` (a ConfigMap named function-input; each
 * argument is split at its first '=', so a value may hold '=' and ',').
 * NULL with a one-line reason in err. */
rl_doc *pipeline_config_file(const char *path, size_t max, buf *err);
rl_doc *pipeline_config_args(char *const *args, size_t n, buf *err);

/* A single call's functionConfig (eval --image, --exec, --kube): from
 * fn_config (a file; NULL: none) or the n_args KEY=VALUE arguments after
 * `--`, put into the ResourceList *rl as kpt sends it (replacing one it
 * had). Nothing when neither is given. 0, or -1 with a one-line reason in
 * err. */
int pipeline_single_config(buf *rl, const char *fn_config, char *const *args, size_t n_args,
                           size_t max, buf *err);

void pipeline_free(pipeline *p);

#endif
