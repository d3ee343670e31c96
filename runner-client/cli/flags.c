/* flags: subcommand flag parsing; see flags.h. */
#include "cli/flags.h"

#include <string.h>

static const flag_def *find_flag(const flag_def *defs, const char *name, size_t len)
{
    for (; defs->name; defs++)
        if (strlen(defs->name) == len && !strncmp(defs->name, name, len))
            return defs;
    return NULL;
}

int flags_parse(int argc, char **argv, const flag_def *defs, const char **positional,
                int max_positional, int *n_positional, int *help, buf *err)
{
    *n_positional = 0;
    *help = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            *help = 1;
            return 0;
        }
        if (arg[0] != '-' || !strcmp(arg, "-")) {
            if (*n_positional >= max_positional) {
                buf_printf(err, "unexpected argument \"%s\"", arg);
                return -1;
            }
            positional[(*n_positional)++] = arg;
            continue;
        }
        const char *name = arg;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const flag_def *def = find_flag(defs, name, len);
        if (!def) {
            buf_printf(err, "unknown flag %.*s", (int)len, name);
            return -1;
        }
        if (def->on) {
            const char *v = eq ? eq + 1 : "true";
            if (!strcmp(v, "true") || !strcmp(v, "1")) {
                *def->on = 1;
            } else if (!strcmp(v, "false") || !strcmp(v, "0")) {
                *def->on = 0;
            } else {
                buf_printf(err, "invalid %s \"%s\": want true or false", def->name, v);
                return -1;
            }
        } else if (eq) {
            *def->value = eq + 1;
        } else if (i + 1 < argc) {
            *def->value = argv[++i];
        } else {
            buf_printf(err, "flag %s needs a value", def->name);
            return -1;
        }
    }
    return 0;
}
