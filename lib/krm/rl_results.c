/* rl_results: a ResourceList's structured results as the text Porch prints
 * and the JSON it logs; see rl_results.h. */
#include "krm/rl_results.h"

#include <float.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_write.h"
#include "krm/yaml_v3.h"

size_t rl_error_count(const rl_list *rl)
{
    size_t n = 0;
    for (size_t i = 0; i < rl->n_results; i++)
        if (rl->results[i].severity && strcmp(rl->results[i].severity, "error") == 0)
            n++;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Text form (the SDK's Result.String and Results.Error)                     */

static int is_set(const char *s)
{
    return s && *s;
}

/* "<apiVersion>/<kind>/<namespace>/<name>", empty parts left out. */
static int append_ref_text(const rl_result *r, buf *out)
{
    const char *parts[] = {r->ref_api_version, r->ref_kind, r->ref_namespace, r->ref_name};
    int rc = 0;
    int first = 1;
    for (size_t i = 0; i < 4; i++) {
        if (!is_set(parts[i]))
            continue;
        rc |= buf_append_str(out, first ? " " : "/");
        rc |= buf_append_str(out, parts[i]);
        first = 0;
    }
    return rc;
}

int rl_result_text(const rl_result *r, buf *out)
{
    int rc = buf_printf(out, "[%s]", is_set(r->severity) ? r->severity : "info");
    if (r->has_resource_ref)
        rc |= append_ref_text(r, out);
    if (r->has_field)
        rc |= buf_printf(out, " %s", r->field_path ? r->field_path : "");
    rc |= buf_printf(out, ": %s", r->message ? r->message : "");
    return rc;
}

int rl_results_text(const rl_list *rl, buf *out)
{
    int rc = 0;
    for (size_t i = 0; i < rl->n_results; i++) {
        if (i)
            rc |= buf_append_str(out, "\n\n");
        rc |= rl_result_text(&rl->results[i], out);
    }
    if (rl->n_results_omitted)
        rc |= buf_printf(out, "\n\n(%zu more results not shown)", rl->n_results_omitted);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* JSON form (encoding/json on the SDK's Results)                            */

/* A JSON string as encoding/json writes it: HTML-significant characters and
 * U+2028/U+2029 escaped, invalid UTF-8 replaced by \ufffd. */
static int append_json_string(buf *out, const char *s)
{
    return json_write_string(out, s, strlen(s));
}

/* A field value with the JSON type its YAML resolved to. Returns 1 for a
 * value encoding/json refuses (NaN, ±Inf). */
static int append_json_value(buf *out, const char *text, rl_value_type type)
{
    if (type == RL_VALUE_STRING)
        return append_json_string(out, text);
    yaml_v3_number num;
    yaml_v3_class cls = yaml_v3_resolve_plain(text, strlen(text), &num);
    if (type == RL_VALUE_BOOL && cls == YAML_V3_BOOL)
        return buf_append_str(out, num.b ? "true" : "false");
    if (type == RL_VALUE_INT && cls == YAML_V3_INT)
        return num.is_unsigned ? buf_printf(out, "%" PRIu64, num.u) : buf_printf(out, "%" PRId64, num.i);
    double f = cls == YAML_V3_INT ? (num.is_unsigned ? (double)num.u : (double)num.i) : num.f;
    if (cls != YAML_V3_FLOAT && cls != YAML_V3_INT)
        return append_json_string(out, text);
    if (f != f || f > DBL_MAX || f < -DBL_MAX)
        return 1;
    return json_write_float(out, f);
}

static int append_json_ref(buf *out, const rl_result *r)
{
    json_obj o;
    json_obj_begin(&o, out);
    json_obj_string(&o, "apiVersion", r->ref_api_version);
    json_obj_string(&o, "kind", r->ref_kind);
    json_obj_string(&o, "name", r->ref_name);
    json_obj_string(&o, "namespace", r->ref_namespace);
    return json_obj_end(&o);
}

static int append_json_field(buf *out, const rl_result *r)
{
    json_obj o;
    json_obj_begin(&o, out);
    json_obj_string(&o, "path", r->field_path);
    if (r->field_current_value) {
        json_obj_key(&o, "currentValue");
        o.rc |= append_json_value(out, r->field_current_value, r->field_current_type);
    }
    if (r->field_proposed_value) {
        json_obj_key(&o, "proposedValue");
        o.rc |= append_json_value(out, r->field_proposed_value, r->field_proposed_type);
    }
    return json_obj_end(&o);
}

static int append_json_file(buf *out, const rl_result *r)
{
    json_obj o;
    json_obj_begin(&o, out);
    json_obj_string(&o, "path", r->file_path);
    if (r->file_index) {
        json_obj_key(&o, "index");
        o.rc |= buf_printf(out, "%ld", r->file_index);
    }
    return json_obj_end(&o);
}

static int compare_tags(const void *a, const void *b)
{
    return strcmp((*(const rl_tag *const *)a)->key, (*(const rl_tag *const *)b)->key);
}

/* Go maps encode with their keys sorted. */
static int append_json_tags(buf *out, const rl_result *r)
{
    const rl_tag **sorted = malloc(r->n_tags * sizeof *sorted);
    if (!sorted)
        return -1;
    for (size_t i = 0; i < r->n_tags; i++)
        sorted[i] = &r->tags[i];
    qsort(sorted, r->n_tags, sizeof *sorted, compare_tags);
    json_obj o;
    json_obj_begin(&o, out);
    for (size_t i = 0; i < r->n_tags; i++) {
        o.rc |= buf_append_str(out, i ? "," : "");
        o.rc |= append_json_string(out, sorted[i]->key);
        o.rc |= buf_append(out, ":", 1);
        o.rc |= append_json_string(out, sorted[i]->value);
    }
    free(sorted);
    return json_obj_end(&o);
}

static int append_json_result(buf *out, const rl_result *r)
{
    json_obj o;
    json_obj_begin(&o, out);
    json_obj_string(&o, "message", r->message);
    json_obj_string(&o, "severity", r->severity);
    if (r->has_resource_ref) {
        json_obj_key(&o, "resourceRef");
        o.rc |= append_json_ref(out, r);
    }
    if (r->has_field) {
        json_obj_key(&o, "field");
        o.rc |= append_json_field(out, r);
    }
    if (r->has_file) {
        json_obj_key(&o, "file");
        o.rc |= append_json_file(out, r);
    }
    if (r->n_tags) {
        json_obj_key(&o, "tags");
        o.rc |= append_json_tags(out, r);
    }
    return json_obj_end(&o);
}

/* When a value cannot be encoded (NaN or an infinity), json.Marshal fails and
 * Porch logs an empty string in its place; so do we. */
int rl_results_json(const rl_list *rl, buf *out)
{
    buf text = {0};
    int rc = buf_append(&text, "[", 1);
    for (size_t i = 0; i < rl->n_results && rc == 0; i++) {
        if (i)
            rc = buf_append(&text, ",", 1);
        rc |= append_json_result(&text, &rl->results[i]);
    }
    rc |= rc < 0 ? 0 : buf_append(&text, "]", 1);
    if (rc == 0)
        rc = buf_append(out, text.data, text.len);
    buf_free(&text);
    return rc < 0 ? -1 : 0;
}
