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
 * is followed. The Kptfile and each configPath are read up to max bytes,
 * regular files only. Returns 0, or -1 with a one-line reason naming the
 * file and the entry in err. */
int pipeline_load_kptfile(pipeline *p, const char *path, size_t max, buf *err);

void pipeline_free(pipeline *p);

#endif
