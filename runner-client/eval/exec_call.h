/* exec_call: `eval --exec CMD`, kpt's local function: the command runs as
 * a child process through the exec runtime (ev_exec), the one the wrapper
 * server and serve's exec runtime run functions with, so its answer is
 * judged the same way (exit status, output, results) and a function tried
 * here behaves as it will in a pod. */
#ifndef KRM_RC_EXEC_CALL_H
#define KRM_RC_EXEC_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "runtime/sandbox.h"
#include "eval/fn_call.h"

typedef struct exec_caller exec_caller;

/* CMD split at spaces and tabs (kpt's form, no quoting: "sed -e s/a/b/"
 * is three words); argv[0] without a '/' is looked up in PATH. max_output
 * bounds its stdout; timeout_ns (0: none) cancels a run that takes longer,
 * which then fails DEADLINE_EXCEEDED. sb (NULL: none) is the sandbox it
 * runs in, as serve's exec functions do, a limit it reaches named in the
 * answer; it must outlive the caller. NULL with a reason in err. */
exec_caller *exec_caller_new(const char *cmd, size_t max_output, int64_t timeout_ns,
                             const sandbox *sb, buf *err);
void exec_caller_free(exec_caller *c);

/* eval_call_fn: runs the command on rl; the image is only a name here, and
 * a tag has nothing to choose (the command is the function). */
int exec_call(void *ctx, const char *image, const char *tag, const char *rl, size_t len,
              fn_call_result *out);

#endif
