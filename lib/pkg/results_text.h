/* results_text: functions' results as the YAML text the reports keep, and
 * the bound on how much of it a run keeps.
 *
 * Why text: a pipeline used to keep every step's results as libyaml nodes
 * in its ResourceList tree, about 60 bytes of tree per byte of YAML: one
 * step answering 5 MiB of results cost 340-690 MiB, eight steps of 1 MiB
 * 440 MiB to 1 GiB. Kept as the text they are written as, results cost
 * what they weigh. Each report keeps its own text: the pipeline's
 * ResourceList (results tagged with their step) and, with --results-dir,
 * results.yaml (kpt's FunctionResultList, untagged).
 *
 * Why a bound: the answers a run collects are each bounded by
 * --max-message, but a pipeline has any number of steps. Each report keeps
 * at most EVAL_RESULTS_PER_MESSAGE x --max-message bytes of results (48
 * MiB by default); a step whose results do not fit keeps those that do,
 * then one warning result saying how many of its results were dropped and
 * why, and the progress says so too. Results the judge counted but did not
 * keep (rl_list.n_results_omitted) are dropped the same way. A result is
 * written from what the judge read, in the SDK's field order; fields the
 * SDK does not know are not kept, as in kpt, which decodes results into
 * its own type too. */
#ifndef KRM_RC_RESULTS_TEXT_H
#define KRM_RC_RESULTS_TEXT_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/resourcelist.h"
#include "krm/rl_edit.h"

#define EVAL_RESULTS_PER_MESSAGE 8

/* Appends a step's results (results may be NULL; `error`, when not NULL,
 * becomes one more result of severity error) to out as YAML sequence
 * entries ("- message: ...", lines at indent 0), each with `tags` set over
 * its own (a tag of the same key takes the new value in place; new keys
 * follow), while out->len stays within `room`; past it, keeps the
 * results that fit, then a warning entry saying how many were dropped and
 * that the report's bound is `bound` bytes. *dropped gets how many were
 * dropped. 0, or -1 when out of memory. */
int results_text_append(buf *out, size_t room, size_t bound, const rl_list *results,
                        const char *error, const rl_kv *tags, size_t n_tags, size_t *dropped);

/* The bound for --max-message `max_message` (saturating). */
size_t results_text_bound(size_t max_message);

#endif
