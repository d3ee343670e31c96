/* image: `runner-client image [flags] IMAGE...` prints an image's digest
 * and entrypoint as the function runner finds them in the registry before
 * creating a function pod (Porch's rule: Entrypoint if non-empty, else
 * Cmd). Several images may be named; the same image named twice is looked
 * up once (the per-process cache the runner uses). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/json.h"
#include "oci/image_ref.h"
#include "oci/registry.h"
#include "commands.h"
#include "cli/flags.h"
#include "cli/registry_flags.h"
#include "core/term_text.h"

#define MAX_IMAGES 64

static const char image_usage[] =
    "Usage: runner-client image [flags] IMAGE...\n"
    "Prints the digest of IMAGE's linux/amd64 manifest and its entrypoint\n"
    "(config Entrypoint if non-empty, else Cmd), read from its registry.\n"
    "\n"
    REGISTRY_FLAGS_HELP
    "  --output json|text           output format (default text)\n"
    "  --timeout DUR                per HTTP request (default 30s; connecting: at most 10s of it)\n"
    "  --debug                      print request and cache counts on stderr\n"
    "Exit status: 0 found, 1 lookup failed, 2 bad usage (including an invalid IMAGE).\n";

typedef struct image_cli {
    registry_flags reg;
    const char *output, *timeout;
    int debug;
    const char *images[MAX_IMAGES];
    int n_images;
} image_cli;

static int parse_cli(image_cli *cli, int argc, char **argv, int *help, buf *err)
{
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n = rest ? registry_flags_take(&cli->reg, argc, argv, rest, err) : -1;
    int kept = 0;
    for (int i = 0; i < n; i++) {   /* --debug is bare */
        if (!strcmp(rest[i], "--debug"))
            cli->debug = 1;
        else
            rest[kept++] = rest[i];
    }
    flag_def defs[] = {{"--output", &cli->output}, {"--timeout", &cli->timeout}, {0}};
    int rc = n < 0 ? -1 : flags_parse(kept, rest, defs, cli->images, MAX_IMAGES, &cli->n_images, help, err);
    free(rest);
    if (rc < 0 || *help)
        return rc;
    if (strcmp(cli->output, "json") && strcmp(cli->output, "text"))
        return buf_fail(err, "invalid --output \"%s\" (json or text)", cli->output);
    if (cli->n_images == 0)
        return buf_fail(err, "an IMAGE is required");
    for (int i = 0; i < cli->n_images; i++)
        if (image_ref_check(cli->images[i], err) < 0)
            return -1;
    return 0;
}

static int print_json_strings(buf *out, char **v, size_t n)
{
    int rc = buf_append_str(out, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            rc |= buf_append_str(out, ",");
        rc |= json_write_string(out, v[i], strlen(v[i]));
    }
    return rc | buf_append_str(out, "]");
}

/* A string member written by the JSON writer even when empty: every string
 * here may come from the registry (a mediaType is whatever it sent). */
static void json_member_string(json_obj *o, const char *key, const char *value)
{
    json_obj_key(o, key);
    o->rc |= json_write_string(o->out, value, strlen(value));
}

static int print_json(const char *image, const registry_result *r)
{
    buf out = {0};
    json_obj o;
    json_obj_begin(&o, &out);
    json_member_string(&o, "image", image);
    json_member_string(&o, "digest", r->digest);
    json_obj_key(&o, "entrypoint");
    o.rc |= print_json_strings(&out, r->entrypoint, r->n_entrypoint);
    json_obj_key(&o, "configEntrypoint");
    o.rc |= print_json_strings(&out, r->config_entrypoint, r->n_config_entrypoint);
    json_obj_key(&o, "configCmd");
    o.rc |= print_json_strings(&out, r->config_cmd, r->n_config_cmd);
    json_obj_key(&o, "fromIndex");
    o.rc |= buf_append_str(&out, r->from_index ? "true" : "false");
    if (r->index_digest)
        json_member_string(&o, "indexDigest", r->index_digest);
    json_member_string(&o, "mediaType", r->media_type);
    json_member_string(&o, "configDigest", r->config_digest);
    int rc = json_obj_end(&o) < 0 || buf_append_str(&out, "\n") < 0 ? -1 : 0;
    if (rc < 0)
        term_line(stderr, "runner-client image: out of memory writing the JSON of \"%s\"\n", image);
    else
        fputs(out.data, stdout);
    buf_free(&out);
    return rc;
}

static void print_text(const char *image, const registry_result *r)
{
    buf out = {0};
    buf_printf(&out, "image: %s\ndigest: %s\nentrypoint: ", image, r->digest);
    print_json_strings(&out, r->entrypoint, r->n_entrypoint);
    if (r->from_index)
        buf_printf(&out, "\nindex: %s", r->index_digest);
    buf_append_str(&out, "\n");
    fputs(out.data, stdout);
    buf_free(&out);
}

static int run_lookups(const image_cli *cli, const registry_opts *opts)
{
    int rc = 0;
    for (int i = 0; i < cli->n_images; i++) {
        registry_result r;
        buf err = {0};
        if (registry_lookup(cli->images[i], opts, &r, &err) < 0) {
            term_line(stderr, "runner-client image: %s\n", err.data ? err.data : "lookup failed");
            rc = 1;
        } else {
            if (strcmp(cli->output, "json"))
                print_text(cli->images[i], &r);
            else if (print_json(cli->images[i], &r) < 0)
                rc = 1;
            registry_result_free(&r);
        }
        buf_free(&err);
    }
    fflush(stdout);
    if (cli->debug)
        term_line(stderr, "runner-client image: %zu HTTP requests, %zu cache hits\n", registry_requests_made(),
                registry_cache_hits());
    return rc;
}

int cmd_image(int argc, char **argv)
{
    image_cli cli = {.output = "text", .timeout = "30s"};
    int help = 0, rc = 2;
    int64_t timeout_ns = 0;
    buf err = {0};
    if (parse_cli(&cli, argc, argv, &help, &err) < 0 ||
        (!help && (duration_parse(cli.timeout, &timeout_ns) < 0 || timeout_ns < 1000000) &&
         buf_printf(&err, "invalid --timeout \"%s\"", cli.timeout) >= 0)) {
        term_line(stderr, "runner-client image: %s\n", err.data);
    } else if (help) {
        fputs(image_usage, stdout);
        rc = 0;
    } else {
        registry_opts opts = registry_flags_opts(&cli.reg, (long)(timeout_ns / 1000000));
        rc = run_lookups(&cli, &opts);
    }
    registry_flags_free(&cli.reg);
    buf_free(&err);
    return rc;
}
