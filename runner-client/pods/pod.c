/* pod: `runner-client pod render ...` prints the Pod and the Service Porch's
 * function runner would create for a function (lib/kube/pod_template), and `pod
 * id` prints its podId (lib/kube/pod_id). Offline: nothing talks to a cluster or
 * a registry, so the image's digest and entrypoint are given on the command
 * line. Useful to inspect the objects, diff them against Porch's, or create
 * a function pod by hand (`... | kubectl create -f -`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/numparse.h"
#include "krm/yaml_load.h"
#include "kube/pod_id.h"
#include "kube/pod_template.h"
#include "oci/image_ref.h"
#include "commands.h"
#include "cli/flags.h"
#include "core/term_text.h"

static const char pod_usage[] =
    "Usage: runner-client pod render --image IMG --wrapper-server-image W ENTRYPOINT [flags]\n"
    "       runner-client pod id --image IMG [--digest D] [--postfix N] [--porch true]\n"
    "       runner-client pod list|delete ... (on a cluster: see pod list --help)\n"
    "       runner-client pod create --image IMG ... (on a cluster: see pod create --help)\n"
    "\n"
    "render prints the function's Pod and Service (two YAML documents) as Porch's\n"
    "function runner creates them. ENTRYPOINT is the image's entrypoint, one of:\n"
    "  --entrypoint ARG             one argument; repeat for each\n"
    "  --entrypoint-json '[\"a\",\"b\"]' a JSON array of strings (as in an image config)\n"
    "  -- ARG...                    the remaining arguments\n"
    "Flags:\n"
    "  --digest sha256:HEX          the image's manifest digest (default: the digest\n"
    "                               of an IMG@sha256:... reference)\n"
    "  --wrapper-server-image W     the init container's image, required unless\n"
    "                               $WRAPPER_SERVER_IMAGE is set (--wrapper-image: the same)\n"
    "  --namespace NS               (default " POD_DEFAULT_NAMESPACE ")\n"
    "  --max-request-body-size N    (default 6291456)\n"
    "  --template-version V         fn.kpt.dev/template-version (default " POD_DEFAULT_TEMPLATE_VERSION ")\n"
    "  --postfix N                  pod number for the image, 1, 2, ... (default 1)\n"
    "  --probe exec|grpc            grpc-health-probe exec (default) or native gRPC probes\n"
    "  --name NAME                  fixed pod name instead of generateName <podId>-\n"
    "  --warm-up                    name the pod <podId> (Porch's warm-up pods)\n"
    "  --escape-dollar true|false   write '$' of the entrypoint as '$$' so Kubernetes\n"
    "                               passes it unchanged (default true; false: as Porch)\n"
    "id prints the podId (--porch true: Porch's own value, possibly not a valid name).\n"
    "Exit status: 0, 1 failure, 2 bad usage.\n";

/* What `pod render` was asked for, once the arguments are split. */
typedef struct render_req {
    const char **rest;        /* arguments for flags_parse */
    int n_rest;
    const char **entry;       /* --entrypoint values or the arguments after -- */
    size_t n_entry;
    int entry_flags, dashdash, warm_up;
    yaml_document_t json;     /* --entrypoint-json, kept while entry points into it */
    int json_loaded;
} render_req;

static int usage_error(const char *sub, const char *msg)
{
    term_line(stderr, "runner-client pod%s%s: %s\n", sub ? " " : "", sub ? sub : "", msg);
    return 2;
}

/* Takes the repeatable --entrypoint, the bare --warm-up and "-- ARG..." out
 * of argv; everything else (a flag with its value) goes to rest. */
static int split_args(int argc, char **argv, render_req *r, buf *err)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            r->dashdash = 1;
            while (++i < argc)
                r->entry[r->n_entry++] = argv[i];
        } else if (!strcmp(arg, "--entrypoint") || !strncmp(arg, "--entrypoint=", 13)) {
            if (arg[12] != '=' && i + 1 >= argc)
                return buf_fail(err, "flag --entrypoint needs a value");
            r->entry[r->n_entry++] = arg[12] == '=' ? arg + 13 : argv[++i];
            r->entry_flags++;
        } else if (!strcmp(arg, "--warm-up")) {
            r->warm_up = 1;
        } else {
            r->rest[r->n_rest++] = arg;
            int takes_value = arg[0] == '-' && strcmp(arg, "-h") && strcmp(arg, "--help") &&
                              !strchr(arg, '=');
            if (takes_value && i + 1 < argc)
                r->rest[r->n_rest++] = argv[++i];
        }
    }
    return 0;
}

/* --entrypoint-json: a JSON array of strings, read with libyaml (JSON is
 * YAML's flow style); every element must be a double-quoted string. */
static int load_json_entry(const char *text, render_req *r, buf *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return buf_fail(err, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    int ok = yaml_load(&p, strlen(text), &r->json);
    if (!ok && p.error == YAML_COMPOSER_ERROR)   /* a limit */
        buf_printf(err, "--entrypoint-json: column %zu: %s", p.problem_mark.column + 1, p.problem);
    else if (!ok)
        buf_printf(err, "--entrypoint-json is not valid JSON");
    yaml_parser_delete(&p);
    if (!ok)
        return -1;
    r->json_loaded = 1;
    yaml_node_t *root = yaml_document_get_root_node(&r->json);
    if (!root || root->type != YAML_SEQUENCE_NODE || root->data.sequence.style != YAML_FLOW_SEQUENCE_STYLE)
        return buf_fail(err, "--entrypoint-json must be a JSON array of strings");
    size_t count = (size_t)(root->data.sequence.items.top - root->data.sequence.items.start);
    const char **entry = realloc(r->entry, (count + 1) * sizeof *entry);   /* may exceed argc */
    if (!entry)
        return buf_fail(err, "out of memory");
    r->entry = entry;
    for (yaml_node_item_t *it = root->data.sequence.items.start; it < root->data.sequence.items.top; it++) {
        yaml_node_t *n = yaml_document_get_node(&r->json, *it);
        if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
            strlen((char *)n->data.scalar.value) != n->data.scalar.length)
            return buf_fail(err, "--entrypoint-json must be a JSON array of strings");
        r->entry[r->n_entry++] = (const char *)n->data.scalar.value;
    }
    return 0;
}

/* The string flags of `pod render`, before they are checked. */
typedef struct render_flags {
    const char *image, *digest, *wrapper, *ns, *max_body, *version, *postfix, *probe, *name;
    const char *json, *escape;
} render_flags;

static int parse_render_flags(render_req *r, render_flags *f, int *help, buf *err)
{
    flag_def defs[] = {
        {"--image", &f->image},           {"--digest", &f->digest},
        {"--wrapper-server-image", &f->wrapper}, {"--wrapper-image", &f->wrapper},
        {"--namespace", &f->ns},
        {"--max-request-body-size", &f->max_body}, {"--template-version", &f->version},
        {"--postfix", &f->postfix},       {"--probe", &f->probe},
        {"--name", &f->name},             {"--entrypoint-json", &f->json},
        {"--escape-dollar", &f->escape},  {0},
    };
    int n_pos;
    return flags_parse(r->n_rest, (char **)r->rest, defs, NULL, 0, &n_pos, help, err);
}

/* Checks the flags and fills the template options (pod_id stays to do). */
static int check_render(render_req *r, const render_flags *f, pod_template_opts *o,
                        unsigned long long *postfix, buf *err)
{
    int sources = (r->entry_flags > 0) + r->dashdash + (f->json != NULL);
    unsigned long long max_body;
    if (!f->image || !*f->image)
        return buf_fail(err, "--image is required");
    if (image_ref_check(f->image, err) < 0)
        return -1;
    if (sources > 1)
        return buf_fail(err, "give the entrypoint once: --entrypoint, --entrypoint-json or -- ARG...");
    if (!sources)
        return buf_fail(err, "the image's entrypoint is required: --entrypoint ARG (repeatable), "
                             "--entrypoint-json '[...]' or -- ARG...");
    if (f->json && load_json_entry(f->json, r, err) < 0)
        return -1;
    if (!f->wrapper || !*f->wrapper)
        return buf_fail(err, "--wrapper-server-image or WRAPPER_SERVER_IMAGE is required");
    if (parse_uint(f->max_body, 2147483647ULL, &max_body) < 0 || !max_body)
        return buf_fail(err, "invalid --max-request-body-size \"%s\" (1 to 2147483647)", f->max_body);
    if (parse_uint(f->postfix, 2147483647ULL, postfix) < 0 || !*postfix)
        return buf_fail(err, "invalid --postfix \"%s\" (1, 2, ...)", f->postfix);
    if (!dns1123_label_valid(f->ns))
        return buf_fail(err, "invalid --namespace \"%s\" (a DNS-1123 label)", f->ns);
    if (f->name && !dns1123_subdomain_valid(f->name))
        return buf_fail(err, "invalid --name \"%s\" (a DNS-1123 subdomain)", f->name);
    if (f->name && r->warm_up)
        return buf_fail(err, "--name and --warm-up exclude each other");
    if (strcmp(f->probe, "exec") && strcmp(f->probe, "grpc"))
        return buf_fail(err, "invalid --probe \"%s\" (exec or grpc)", f->probe);
    if (strcmp(f->escape, "true") && strcmp(f->escape, "false"))
        return buf_fail(err, "invalid --escape-dollar \"%s\" (true or false)", f->escape);
    if (!*f->version)
        return buf_fail(err, "--template-version must not be empty");
    *o = (pod_template_opts){
        .name = f->name, .namespace = f->ns, .image = f->image, .wrapper_image = f->wrapper,
        .entrypoint = r->entry, .n_entrypoint = r->n_entry,
        .max_request_body_size = max_body, .template_version = f->version,
        .probe = strcmp(f->probe, "grpc") ? POD_PROBE_EXEC : POD_PROBE_GRPC,
        .escape_dollar = !strcmp(f->escape, "true"),
    };
    return 0;
}

static const char *digest_of(const render_flags *f, buf *err)
{
    const char *d = f->digest ? f->digest : pod_id_image_digest(f->image);
    if (!d)
        buf_printf(err, "--digest sha256:HEX is required (the image's manifest digest) "
                        "unless --image is pinned by digest");
    return d;
}

/* Parses and checks the flags: 0 ready, 1 --help, -1 bad usage (reason in err). */
static int prepare(render_req *r, render_flags *f, pod_template_opts *o, unsigned long long *postfix,
                   const char **digest, buf *err)
{
    int help;
    if (parse_render_flags(r, f, &help, err) < 0)
        return -1;
    if (help)
        return 1;
    if (check_render(r, f, o, postfix, err) < 0)
        return -1;
    *digest = digest_of(f, err);
    return *digest ? 0 : -1;
}

/* Parses, checks, renders; returns the exit status. */
static int render(render_req *r)
{
    render_flags f = {.wrapper = getenv("WRAPPER_SERVER_IMAGE"), .ns = POD_DEFAULT_NAMESPACE,
                      .max_body = "6291456", .version = POD_DEFAULT_TEMPLATE_VERSION, .postfix = "1",
                      .probe = "exec", .escape = "true"};
    pod_template_opts o = {0};
    unsigned long long postfix = 1;
    const char *digest = NULL;
    char id[POD_ID_MAX + 1];
    buf err = {0}, out = {0};
    int ready = prepare(r, &f, &o, &postfix, &digest, &err);
    if (ready == 0)
        ready = pod_id_make(f.image, digest, (unsigned long)postfix, id, &err);
    if (ready < 0) {
        int rc = usage_error("render", err.data ? err.data : "out of memory");
        buf_free(&err);
        return rc;
    }
    if (ready == 1) {
        fputs(pod_usage, stdout);
        return 0;
    }
    o.pod_id = id;
    if (r->warm_up)
        o.name = id;
    if (pod_template_render(&o, POD_TEMPLATE_POD | POD_TEMPLATE_SERVICE, &out, &err) < 0) {
        buf_free(&out);
        term_line(stderr, "runner-client pod render: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        return 1;
    }
    int rc = fwrite(out.data, 1, out.len, stdout) == out.len && fflush(stdout) == 0 ? 0 : 1;
    if (rc)
        term_line(stderr, "runner-client pod render: cannot write the output\n");
    buf_free(&out);
    return rc;
}

static int cmd_pod_render(int argc, char **argv)
{
    render_req r = {0};
    r.rest = calloc((size_t)argc + 1, sizeof *r.rest);
    r.entry = calloc((size_t)argc + 1, sizeof *r.entry);
    buf err = {0};
    int rc;
    if (!r.rest || !r.entry)
        rc = (term_line(stderr, "runner-client: out of memory\n"), 1);
    else if (split_args(argc, argv, &r, &err) < 0)
        rc = usage_error("render", err.data);
    else
        rc = render(&r);
    if (r.json_loaded)
        yaml_document_delete(&r.json);
    free(r.rest);
    free(r.entry);
    buf_free(&err);
    return rc;
}

/* `pod id`: the podId, or with --porch true Porch's raw value. */
static int print_id(const char *image, const char *digest, unsigned long postfix, int porch)
{
    char id[POD_ID_MAX + 1];
    buf raw = {0}, reason = {0};
    int rc = porch ? pod_id_porch(image, digest, postfix, &raw, &reason)
                   : pod_id_make(image, digest, postfix, id, &reason);
    if (rc == 0)
        printf("%s\n", porch ? raw.data : id);
    else
        rc = usage_error("id", reason.data ? reason.data : "out of memory");
    buf_free(&raw);
    buf_free(&reason);
    return rc;
}

static int cmd_id(int argc, char **argv)
{
    const char *image = NULL, *digest = NULL, *postfix_text = "1", *porch = "false";
    flag_def defs[] = {{"--image", &image}, {"--digest", &digest}, {"--postfix", &postfix_text},
                       {"--porch", &porch}, {0}};
    unsigned long long postfix;
    int n_pos, help;
    buf err = {0};
    int bad = flags_parse(argc, argv, defs, NULL, 0, &n_pos, &help, &err) < 0;
    int rc = bad ? usage_error("id", err.data ? err.data : "out of memory") : 0;
    buf_free(&err);
    if (bad)
        return rc;
    if (help) {
        fputs(pod_usage, stdout);
        return 0;
    }
    if (!image || !*image)
        return usage_error("id", "--image is required");
    if (image_ref_check(image, &err) < 0) {
        rc = usage_error("id", err.data);
        buf_free(&err);
        return rc;
    }
    if (parse_uint(postfix_text, 2147483647ULL, &postfix) < 0 || !postfix)
        return usage_error("id", "invalid --postfix (1, 2, ...)");
    if (strcmp(porch, "true") && strcmp(porch, "false"))
        return usage_error("id", "invalid --porch (true or false)");
    if (!digest && !(digest = pod_id_image_digest(image)))
        return usage_error("id", "--digest sha256:HEX is required unless --image is pinned by digest");
    return print_id(image, digest, (unsigned long)postfix, !strcmp(porch, "true"));
}

int cmd_pod(int argc, char **argv)
{
    if (argc < 1) {
        fputs(pod_usage, stderr);
        return 2;
    }
    if (!strcmp(argv[0], "render"))
        return cmd_pod_render(argc - 1, argv + 1);
    if (!strcmp(argv[0], "id"))
        return cmd_id(argc - 1, argv + 1);
    if (!strcmp(argv[0], "create"))
        return cmd_pod_create(argc - 1, argv + 1);
    if (!strcmp(argv[0], "list") || !strcmp(argv[0], "delete"))
        return cmd_pod_kube(argv[0], argc - 1, argv + 1);
    if (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
        fputs(pod_usage, stdout);
        return 0;
    }
    term_line(stderr, "runner-client pod: unknown subcommand \"%s\" (render, id, create, list or delete)\n", argv[0]);
    return 2;
}
