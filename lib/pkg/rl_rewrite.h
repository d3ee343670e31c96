/* rl_rewrite: a ResourceList's text written again event by event, with its
 * top-level keys changed: some dropped, `items` made a sequence when it is
 * absent or null, a functionConfig put in.
 *
 * Why: a pipeline hands each step's list to the next. Held as a libyaml
 * document tree, a list costs about 65 bytes per byte of YAML (a 2.6 MiB
 * package took 250 MiB through one step); kept as the text it is, passed
 * through libyaml's parser into its emitter one event at a time, it costs
 * its own size. Every scalar's style and tag, every collection's style and
 * every anchor pass through as they were written.
 *
 * The text is read with the limits every YAML read has (lib/krm/
 * yaml_limits.h). An alias to an anchor inside a dropped value would
 * dangle, and is refused. */
#ifndef KRM_RC_RL_REWRITE_H
#define KRM_RC_RL_REWRITE_H

#include <stddef.h>

#include "core/buf.h"

typedef struct rl_rewrite_opts {
    const char *const *drop;   /* top-level keys left out; NULL-terminated */
    const char *config;        /* YAML of one object put in as functionConfig, or NULL */
    size_t config_len;
} rl_rewrite_opts;

/* Appends the ResourceList data[0..len) to out, rewritten as o says.
 * Returns 0, or -1 with a one-line reason in err ("line 4: ...") and out
 * as it was. */
int rl_rewrite(const char *data, size_t len, const rl_rewrite_opts *o, buf *out, buf *err);

#endif
