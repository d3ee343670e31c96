/* commands: runner-client's subcommands. Each takes the arguments after
 * its name and returns the process exit code: 0 success, 1 failure of the
 * call, 2 bad usage. */
#ifndef KRM_RC_COMMANDS_H
#define KRM_RC_COMMANDS_H

#include <stdint.h>

#include "loop.h"

int cmd_eval(int argc, char **argv);
int cmd_health(int argc, char **argv);

/* Shared by the commands: one unary call, run to completion on a private
 * loop. Fills *status, *message (malloc'd) and *response (malloc'd). */
typedef struct rc_call_result {
    int status;
    char *message;
    uint8_t *response;
    size_t response_len;
} rc_call_result;

int rc_unary(const char *addr, const char *path, const void *req, size_t len, int64_t timeout_ns,
             uint32_t max_message, rc_call_result *out);
void rc_call_result_free(rc_call_result *r);

#endif
