/* pipeline: building the list of steps from --fn flags and Kptfiles; see
 * pipeline.h.
 *
 * A Kptfile step supports what kpt's `Function` type says a step is, minus
 * what runner-client cannot honour: `exec` (no local binaries here) and
 * `selectors`/`exclude` (running a function on a subset of the resources)
 * are refused with a message rather than silently ignored, since ignoring
 * a selector would apply the function to every resource. */
#include "pkg/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath.h"
#include "core/fdio.h"
#include "oci/image_ref.h"
#include "pkg/err_line.h"
#include "pkg/kptfile_fields.h"
#include "pkg/rl_rewrite.h"

#define CONFIG_MAP_NAME "function-input" /* kpt's name for generated ConfigMaps */

static pl_step *new_step(pipeline *p)
{
    pl_step *grown = realloc(p->steps, (p->n_steps + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    p->steps = grown;
    pl_step *s = &p->steps[p->n_steps++];
    *s = (pl_step){ 0 };
    return s;
}

void pipeline_free(pipeline *p)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        free(p->steps[i].image);
        free(p->steps[i].name);
        free(p->steps[i].tag);
        rl_doc_free(p->steps[i].config);
    }
    free(p->steps);
    *p = (pipeline){ 0 };
}

/* ---- --fn IMG[=k=v,...] ------------------------------------------------------- */

/* One KEY=VALUE (modified in place: the '=' ends the key). */
static int split_pair(char *tok, rl_kv *pair, buf *err)
{
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok) {
        buf_printf(err, "\"%s\" is not KEY=VALUE", tok);
        return -1;
    }
    *eq = '\0';
    *pair = (rl_kv){ tok, eq + 1 };
    return 0;
}

/* Splits "k=v,k2=v2" (modified in place) into pairs; at most `max`. */
static int split_pairs(char *text, rl_kv *pairs, size_t max, size_t *n, buf *err)
{
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        rl_kv pair;
        if (split_pair(tok, &pair, err) < 0)
            return -1;
        if (*n < max)
            pairs[(*n)++] = pair;
    }
    if (*n == 0) {
        buf_printf(err, "nothing after '=': want KEY=VALUE pairs");
        return -1;
    }
    return 0;
}

int pipeline_add_fn(pipeline *p, const char *spec, buf *err)
{
    const char *eq = strchr(spec, '=');
    size_t image_len = eq ? (size_t)(eq - spec) : strlen(spec);
    if (image_len == 0) {
        buf_printf(err, "--fn \"%s\": no image (want IMAGE[=KEY=VALUE,...])", spec);
        return -1;
    }
    char *image = strndup(spec, image_len);
    int valid = image ? image_ref_check(image, err) == 0 : (buf_printf(err, "out of memory"), 0);
    if (image && !valid)
        buf_printf(err, " in --fn \"%s\"", spec);
    free(image);
    if (!valid)
        return -1;
    char *config = eq ? strdup(eq + 1) : NULL;
    size_t max = eq ? strlen(eq + 1) / 2 + 1 : 0, n = 0;
    rl_kv *pairs = max ? calloc(max, sizeof *pairs) : NULL;
    int rc = -1;
    pl_step *s = NULL;
    if (eq && (!config || !pairs))
        buf_printf(err, "out of memory");
    else if (eq && split_pairs(config, pairs, max, &n, err) < 0)
        buf_printf(err, " in --fn \"%s\"", spec);
    else if (!(s = new_step(p)) || !(s->image = strndup(spec, image_len)) ||
             (eq && !(s->config = rl_doc_config_map(CONFIG_MAP_NAME, pairs, n))))
        buf_printf(err, "out of memory");
    else
        rc = 0;
    free(pairs);
    free(config);
    return rc;
}

/* ---- Kptfile ------------------------------------------------------------------- */

/* What a Kptfile is being read as, for messages. */
typedef struct kptfile {
    const char *path;      /* the Kptfile */
    const char *dir;       /* its directory (the package), for messages */
    int dir_fd;            /* the package, which configPath stays beneath */
    size_t max;            /* the most read of the Kptfile, and of its configPaths together */
    size_t config_read;    /* bytes of configPath files read so far */
    int may_be_empty;      /* a subpackage's: no pipeline is no step, not an error */
    rl_doc *doc;
    const yaml_document_t *y;
    buf *err;
} kptfile;

/* Aliases make one node many steps or configMap entries; the Kptfile is
 * read with every YAML input's limits (krm/yaml_limits.h), so the copies
 * they stand for weigh no more than its text (1 MiB for a smaller one):
 * its steps cost at most what a Kptfile of that size would without them.
 * A configPath named again is read again, so the configPath files read
 * together count against the input limit. */
#define TOO_BIG ": more than a request may carry (--max-message)"
#define CONFIGS_TOO_BIG                                                                    \
    ": the pipeline's configPath files together are more than a request may carry "       \
    "(--max-message; a file named by N steps counts N times)"

/* Reads `path` (beneath dir_fd as file_read_at's flags say) as one YAML
 * object, adding the bytes read to *read; NULL with a message naming
 * `shown` in err, `too_big` after it when it is larger than max. */
static rl_doc *load_object_file(int dir_fd, const char *path, int flags, size_t max,
                                const char *what, const char *shown, const char *too_big,
                                size_t *read, buf *err)
{
    buf data = { 0 }, reason = { 0 };
    char why[FDIO_WHY_MAX];
    rl_doc *d = NULL;
    if (file_read_at(dir_fd, path, flags, max, &data, why) < 0)
        buf_printf(err, "%s %s: %s%s", what, shown, why, errno == EFBIG ? too_big : "");
    else if (!(d = rl_doc_load_object(data.data, data.len, &reason)))
        buf_printf(err, "%s %s: %s", what, shown, reason.data ? reason.data : "out of memory");
    *read += data.len;
    buf_free(&data);
    buf_free(&reason);
    return d;
}

rl_doc *pipeline_config_file(const char *path, size_t max, buf *err)
{
    size_t read = 0;
    return load_object_file(AT_FDCWD, path, 0, max, "--fn-config", path, TOO_BIG, &read, err);
}

int pipeline_single_config(buf *rl, const char *fn_config, char *const *args, size_t n_args,
                           size_t max, buf *err)
{
    if (!fn_config && !n_args)
        return 0;
    rl_doc *config = fn_config ? pipeline_config_file(fn_config, max, err)
                               : pipeline_config_args(args, n_args, err);
    if (!config)
        return -1;
    /* put in as the pipeline hands lists on: the input stays text */
    buf text = { 0 }, out = { 0 }, why = { 0 };
    int rc = rl_doc_emit(config, NULL, &text, &why);
    if (rc == 0) {
        rl_rewrite_opts o = { .config = text.data, .config_len = text.len };
        rc = rl_rewrite(rl->data, rl->len, &o, &out, &why);
    }
    if (rc == 0) {
        buf_free(rl);
        *rl = out;
    } else {
        buf_printf(err, "the input as a ResourceList: %s", why.data ? why.data : "out of memory");
        buf_free(&out);
    }
    buf_free(&why);
    buf_free(&text);
    rl_doc_free(config);
    return rc;
}

rl_doc *pipeline_config_args(char *const *args, size_t n, buf *err)
{
    rl_kv *pairs = calloc(n ? n : 1, sizeof *pairs);
    char **copies = calloc(n ? n : 1, sizeof *copies);
    rl_doc *d = NULL;
    int ok = pairs && copies;
    if (!ok)
        buf_printf(err, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        if (!(copies[i] = strdup(args[i]))) {
            buf_printf(err, "out of memory");
            ok = 0;
        } else if (split_pair(copies[i], &pairs[i], err) < 0) {
            buf_printf(err, " (the function's arguments after -- are KEY=VALUE)");
            ok = 0;
        }
    }
    if (ok && !(d = rl_doc_config_map(CONFIG_MAP_NAME, pairs, n)))
        buf_printf(err, "out of memory");
    for (size_t i = 0; copies && i < n; i++)
        free(copies[i]);
    free(copies);
    free(pairs);
    return d;
}

static int __attribute__((format(printf, 4, 5)))
step_error(kptfile *k, const char *list, size_t i, const char *fmt, ...)
{
    buf_printf(k->err, "%s: pipeline.%s[%zu]: ", k->path, list, i);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(k->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* A NUL byte in a Kptfile's text: C strings end at it, so configPath
 * "x.yaml\0/../.." would open x.yaml, image "example.com/fn:v1\0..." run
 * example.com/fn:v1 and a configMap value reach the function cut. Refused,
 * naming the byte. */
static int refuse_nul_node(kptfile *k, const char *list, size_t i, int id, const char *field)
{
    const yaml_node_t *n = yaml_document_get_node((yaml_document_t *)k->y, id);
    buf why = { 0 };
    int rc = 0;
    if (n && n->type == YAML_SCALAR_NODE &&
        err_line_nul(&why, field, (const char *)n->data.scalar.value, n->data.scalar.length))
        rc = step_error(k, list, i, "%s", why.data ? why.data : "out of memory");
    buf_free(&why);
    return rc;
}

/* A configMap's entries (scalars) as a ConfigMap object. */
static int step_config_map(kptfile *k, const char *list, size_t i, int map, pl_step *s)
{
    const yaml_node_t *m = yaml_document_get_node((yaml_document_t *)k->y, map);
    if (!m || m->type != YAML_MAPPING_NODE)
        return step_error(k, list, i, "configMap is not a mapping");
    size_t n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    rl_kv *pairs = calloc(n ? n : 1, sizeof *pairs);
    if (!pairs)
        return step_error(k, list, i, "out of memory");
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < n; j++) {
        const yaml_node_pair_t *pair = &m->data.mapping.pairs.start[j];
        pairs[j] = (rl_kv){ rl_yaml_text(k->y, pair->key), rl_yaml_text(k->y, pair->value) };
        if (!pairs[j].key || !pairs[j].value)
            rc = step_error(k, list, i, "configMap entry %zu is not a string key and value",
                            j + 1);
        else if (refuse_nul_node(k, list, i, pair->key, "configMap key") < 0)
            rc = -1;
        else {
            char field[128];
            snprintf(field, sizeof field, "configMap.%s", pairs[j].key);
            rc = refuse_nul_node(k, list, i, pair->value, field);
        }
    }
    if (rc == 0 && !(s->config = rl_doc_config_map(CONFIG_MAP_NAME, pairs, n)))
        rc = step_error(k, list, i, "out of memory");
    free(pairs);
    return rc;
}

/* configPath as kpt takes it: relative, inside the package (kpt's words
 * when not), and here also opened beneath the package with no symbolic
 * link on the way, so neither a link nor a rename leads out of it. */
static int step_config_path(kptfile *k, const char *list, size_t i, const char *rel, pl_step *s)
{
    buf clean = { 0 }, shown = { 0 }, why = { 0 };
    const char *bad = NULL;
    int rc = 0;
    if (beneath_clean(rel, &clean, &bad) < 0)
        rc = step_error(k, list, i, "configPath \"%s\": %s", rel, bad);
    else if (buf_printf(&shown, "%s/%s", k->dir, clean.data) < 0)
        rc = step_error(k, list, i, "out of memory");
    else if (!(s->config = load_object_file(k->dir_fd, clean.data, FDIO_BENEATH,
                                            k->max - k->config_read, "configPath", shown.data,
                                            CONFIGS_TOO_BIG, &k->config_read, &why)))
        rc = step_error(k, list, i, "%s", why.data ? why.data : "out of memory");
    buf_free(&clean);
    buf_free(&shown);
    buf_free(&why);
    return rc;
}

/* The step's string `key` in *out (NULL when absent or null); -1 with the
 * step's error when it is not a string or holds a NUL byte. */
static int optional_text(kptfile *k, const char *list, size_t i, int entry, const char *key, const char **out)
{
    int id = rl_yaml_get(k->y, entry, key);
    *out = rl_yaml_is_null(k->y, id) ? NULL : rl_yaml_text(k->y, id);
    if (!rl_yaml_is_null(k->y, id) && !*out)
        return step_error(k, list, i, "%s is not a string", key);
    return *out ? refuse_nul_node(k, list, i, id, key) : 0;
}

static int add_kptfile_step(kptfile *k, pipeline *p, const char *list, size_t i, int entry)
{
    const char *image, *name, *config_path, *tag;
    if (yaml_document_get_node((yaml_document_t *)k->y, entry)->type != YAML_MAPPING_NODE)
        return step_error(k, list, i, "not a mapping");
    if (!rl_yaml_is_null(k->y, rl_yaml_get(k->y, entry, "exec")))
        return step_error(k, list, i, "exec functions are not supported; use image");
    if (!rl_yaml_is_null(k->y, rl_yaml_get(k->y, entry, "selectors")) ||
        !rl_yaml_is_null(k->y, rl_yaml_get(k->y, entry, "exclude")))
        return step_error(k, list, i, "selectors and exclude are not supported");
    if (!rl_yaml_text(k->y, rl_yaml_get(k->y, entry, "image")))
        return step_error(k, list, i, "image is required (a string)");
    if (optional_text(k, list, i, entry, "image", &image) < 0)
        return -1;
    if (!*image)
        return step_error(k, list, i, "image is required (a string)");
    buf bad = {0};
    if (image_ref_check(image, &bad) < 0) {
        step_error(k, list, i, "%s", bad.data ? bad.data : "out of memory");
        buf_free(&bad);
        return -1;
    }
    if (optional_text(k, list, i, entry, "name", &name) < 0 ||
        optional_text(k, list, i, entry, "configPath", &config_path) < 0 ||
        optional_text(k, list, i, entry, "tag", &tag) < 0)
        return -1;
    int config_map = rl_yaml_get(k->y, entry, "configMap");
    if (config_path && !rl_yaml_is_null(k->y, config_map))
        return step_error(k, list, i, "configMap and configPath cannot both be set");
    pl_step *s = new_step(p);
    if (!s || !(s->image = strdup(image)) || (name && !(s->name = strdup(name))) ||
        (tag && *tag && !(s->tag = strdup(tag))))
        return step_error(k, list, i, "out of memory");
    s->validator = strcmp(list, "validators") == 0;
    if (config_path)
        return step_config_path(k, list, i, config_path, s);
    if (!rl_yaml_is_null(k->y, config_map))
        return step_config_map(k, list, i, config_map, s);
    return 0;
}

static int add_kptfile_list(kptfile *k, pipeline *p, int pl, const char *list)
{
    int seq = rl_yaml_get(k->y, pl, list);
    if (rl_yaml_is_null(k->y, seq))
        return 0;
    const yaml_node_t *n = yaml_document_get_node((yaml_document_t *)k->y, seq);
    if (n->type != YAML_SEQUENCE_NODE) {
        buf_printf(k->err, "%s: pipeline.%s is not a sequence", k->path, list);
        return -1;
    }
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    for (size_t i = 0; i < count; i++) {
        int entry = yaml_document_get_node((yaml_document_t *)k->y, seq)->data.sequence.items.start[i];
        if (add_kptfile_step(k, p, list, i, entry) < 0)
            return -1;
    }
    return 0;
}

/* Checks kind, apiVersion and the field names (kptfile_fields); returns the pipeline node (0: none), or -1
 * with err set. */
static int check_kptfile(kptfile *k)
{
    const char *kind = rl_yaml_text(k->y, rl_yaml_get(k->y, 0, "kind"));
    const char *api = rl_yaml_text(k->y, rl_yaml_get(k->y, 0, "apiVersion"));
    if (!kind || strcmp(kind, "Kptfile") != 0 || !api || strncmp(api, "kpt.dev/", 8) != 0) {
        buf_printf(k->err, "%s: not a Kptfile (want apiVersion kpt.dev/v1, kind Kptfile)",
                   k->path);
        return -1;
    }
    buf why = { 0 };
    if (kptfile_fields_check(k->y, &why) < 0) {
        buf_printf(k->err, "%s: %s", k->path, why.data ? why.data : "out of memory");
        buf_free(&why);
        return -1;
    }
    int pl = rl_yaml_get(k->y, 0, "pipeline");
    if (!rl_yaml_is_null(k->y, pl) &&
        yaml_document_get_node((yaml_document_t *)k->y, pl)->type != YAML_MAPPING_NODE) {
        buf_printf(k->err, "%s: pipeline is not a mapping", k->path);
        return -1;
    }
    return pl;
}

/* Where the Kptfile is: `path` itself, or path/Kptfile for a directory,
 * whose "Kptfile" is then a file of the package (no link followed); a
 * Kptfile named by the user may be a link. The package directory is
 * opened for configPath. */
static int locate_kptfile(const char *path, buf *file, char **dir, int *read_flags, buf *err)
{
    struct stat st;
    int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir ? buf_printf(file, "%s/Kptfile", path) < 0 : buf_append_str(file, path) < 0)
        return buf_fail(err, "out of memory");
    const char *slash = strrchr(file->data, '/');
    *dir = slash ? strndup(file->data, (size_t)(slash - file->data + (slash == file->data)))
                 : strdup(".");
    if (!*dir)
        return buf_fail(err, "out of memory");
    *read_flags = is_dir ? FDIO_BENEATH : 0;
    return 0;
}

/* Adds the steps of the Kptfile text k->doc was loaded from. */
static int add_kptfile_steps(kptfile *k, pipeline *p)
{
    size_t before = p->n_steps;
    k->y = rl_doc_yaml(k->doc);
    int pl = check_kptfile(k);
    if (pl < 0)
        return -1;
    if (!rl_yaml_is_null(k->y, pl) && (add_kptfile_list(k, p, pl, "mutators") < 0 ||
                                       add_kptfile_list(k, p, pl, "validators") < 0))
        return -1;
    if (p->n_steps == before && !k->may_be_empty) {
        buf_printf(k->err, "%s: the pipeline has no mutators or validators", k->path);
        return -1;
    }
    return 0;
}

int pipeline_parse_kptfile(pipeline *p, const char *path, const char *dir, const char *data,
                           size_t len, size_t max, buf *err)
{
    buf why = { 0 };
    kptfile k = { .path = path, .dir = dir, .max = max, .err = err };
    int rc = -1;
    if ((k.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        buf_printf(err, "--pipeline %s: %s: %s", path, dir, strerror(errno));
    else if (!(k.doc = rl_doc_load_object(data, len, &why)))
        buf_printf(err, "--pipeline %s: %s", path, why.data ? why.data : "out of memory");
    else
        rc = add_kptfile_steps(&k, p);
    buf_free(&why);
    rl_doc_free(k.doc);
    if (k.dir_fd >= 0)
        close(k.dir_fd);
    return rc;
}

static int load_kptfile(pipeline *p, const char *path, size_t max, int may_be_empty, buf *err)
{
    buf file = { 0 };
    char *dir = NULL;
    kptfile k = { .max = max, .err = err, .dir_fd = -1, .may_be_empty = may_be_empty };
    int read_flags = 0, rc = -1;
    if (locate_kptfile(path, &file, &dir, &read_flags, err) < 0) {
        ;
    } else if ((k.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        buf_printf(err, "--pipeline %s: %s", file.data, strerror(errno));
    } else {
        k.path = file.data;
        k.dir = dir;
        k.doc = load_object_file(read_flags ? k.dir_fd : AT_FDCWD, read_flags ? "Kptfile" : k.path,
                                 read_flags, max, "--pipeline", k.path, TOO_BIG, &k.config_read, err);
        k.config_read = 0; /* the configPaths have the whole limit */
        if (k.doc)
            rc = add_kptfile_steps(&k, p);
    }
    rl_doc_free(k.doc);
    if (k.dir_fd >= 0)
        close(k.dir_fd);
    free(dir);
    buf_free(&file);
    return rc;
}

int pipeline_load_kptfile(pipeline *p, const char *path, size_t max, buf *err)
{
    return load_kptfile(p, path, max, 0, err);
}

int pipeline_load_subpackage(pipeline *p, const char *dir, size_t max, buf *err)
{
    return load_kptfile(p, dir, max, 1, err);
}
