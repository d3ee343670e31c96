/* rl_results: turns the structured results of a judged ResourceList
 * (rl_list, from resourcelist.h) into what Porch shows of them.
 *
 * Why: when a function fails with results, Porch's gRPC status message is
 * the SDK's Results.Error() text; when it exits 0 with error results, Porch
 * logs them as encoding/json writes them. Users read, and tests written
 * against Porch compare, both byte for byte, so each follows the Go code it
 * replaces (krm-functions-sdk go/fn/result.go; encoding/json on the SDK's
 * Result struct). Reading the results is the judge's work (resourcelist.c);
 * this is only their rendering. */
#ifndef KRM_RL_RESULTS_H
#define KRM_RL_RESULTS_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/resourcelist.h"

/* Number of results whose severity is exactly "error" (the SDK's ExitCode rule). */
size_t rl_error_count(const rl_list *rl);

/* Appends one result as the Go SDK's Result.String() prints it (also kpt's
 * line for it under "Results:"): "[<severity>] <ref> <field.path>: <message>". */
int rl_result_text(const rl_result *r, buf *out);

/* Appends the results as the Go SDK's Results.Error() prints them:
 * "[<severity>] <apiVersion>/<kind>/<namespace>/<name> <field.path>: <message>"
 * per result (absent parts and their separators left out, empty severity
 * printed as "info"), joined by a blank line. No results: appends nothing.
 * Results past the storage cap are summarised as "(N more results not shown)". */
int rl_results_text(const rl_list *rl, buf *out);

/* Appends the results as a JSON array with the SDK's field names
 * (message, severity, resourceRef{apiVersion,kind,name,namespace},
 * field{path,currentValue,proposedValue}, file{path,index}, tags); used in
 * the warning Porch logs for error results on exit 0. Like json.Marshal, it
 * gives up on NaN/±Inf values, and then appends nothing (Go logs ""). */
int rl_results_json(const rl_list *rl, buf *out);

#endif
