/* oci_manifest: manifest, index and config documents; see oci_manifest.h. */
#include "oci/oci_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n == 0 || n >= cap)
        return -1;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 0;
}

int oci_platform_parse(const char *s, oci_platform *out, buf *err)
{
    memset(out, 0, sizeof *out);
    const char *a = strchr(s, '/');
    const char *v = a ? strchr(a + 1, '/') : NULL;
    size_t arch_len = a ? (v ? (size_t)(v - a - 1) : strlen(a + 1)) : 0;
    if (!a || copy_field(out->os, sizeof out->os, s, (size_t)(a - s)) < 0 ||
        copy_field(out->arch, sizeof out->arch, a + 1, arch_len) < 0 ||
        (v && copy_field(out->variant, sizeof out->variant, v + 1, strlen(v + 1)) < 0) ||
        strchr(out->variant, '/'))
        return buf_fail(err, "invalid platform \"%s\" (want OS/ARCH or OS/ARCH/VARIANT, e.g. linux/arm64)", s);
    return 0;
}

void oci_platform_format(const oci_platform *p, char out[100])
{
    snprintf(out, 100, "%s/%s%s%s", p->os, p->arch, p->variant[0] ? "/" : "", p->variant);
}

static oci_kind kind_of_type(const char *t, size_t n)
{
    static const struct { const char *type; oci_kind kind; } table[] = {
        {OCI_MT_INDEX, OCI_KIND_INDEX},       {DOCKER_MT_LIST, OCI_KIND_INDEX},
        {OCI_MT_MANIFEST, OCI_KIND_MANIFEST}, {DOCKER_MT_MANIFEST, OCI_KIND_MANIFEST},
        {DOCKER_MT_SCHEMA1, OCI_KIND_SCHEMA1}, {DOCKER_MT_SCHEMA1_SIGNED, OCI_KIND_SCHEMA1},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strlen(table[i].type) == n && !strncmp(table[i].type, t, n))
            return table[i].kind;
    return OCI_KIND_UNKNOWN;
}

oci_kind oci_kind_of(const char *content_type, const json *doc)
{
    if (content_type) {
        size_t n = strcspn(content_type, "; \t");
        oci_kind k = kind_of_type(content_type, n);
        if (k != OCI_KIND_UNKNOWN)
            return k;
    }
    const char *mt = json_get_str(doc, "mediaType");
    oci_kind k = mt ? kind_of_type(mt, strlen(mt)) : OCI_KIND_UNKNOWN;
    if (k != OCI_KIND_UNKNOWN)
        return k;
    const json *sv = json_get(doc, "schemaVersion");
    if (sv && sv->type == JSON_NUMBER && sv->number == 1)
        return OCI_KIND_SCHEMA1;
    const json *m = json_get(doc, "manifests");
    if (m && m->type == JSON_ARRAY)
        return OCI_KIND_INDEX;
    const json *c = json_get(doc, "config");
    return c && c->type == JSON_OBJECT ? OCI_KIND_MANIFEST : OCI_KIND_UNKNOWN;
}

int oci_digest_valid(const char *d)
{
    if (strncmp(d, "sha256:", 7) || strlen(d) != 7 + 64)
        return 0;
    for (d += 7; *d; d++)
        if (!((*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f')))
            return 0;
    return 1;
}

/* Whether v is a string with a NUL byte inside ("\u0000"), which its C
 * string would cut: such text is refused, never used shortened. */
static int has_nul(const json *v)
{
    return v && v->type == JSON_STRING && strlen(v->str) != v->len;
}

static int descriptor_read(const json *d, const char *what, oci_descriptor *out, buf *err)
{
    out->media_type = json_get_str(d, "mediaType");
    out->digest = json_get_str(d, "digest");
    const json *size = json_get(d, "size");
    out->size = size && size->type == JSON_NUMBER ? (long long)size->number : -1;
    if (!d || d->type != JSON_OBJECT || !out->digest)
        return buf_fail(err, "%s has no digest", what);
    if (has_nul(json_get(d, "digest")))
        return buf_fail(err, "%s has a digest with a NUL byte (\\u0000) at offset %zu", what,
                        strlen(out->digest));
    if (!oci_digest_valid(out->digest))
        return buf_fail(err, "%s has an unsupported digest \"%s\" (want sha256:<64 hex digits>)", what,
                        out->digest);
    if (size && (size->type != JSON_NUMBER || size->number < 0))
        return buf_fail(err, "%s has an invalid size", what);
    return 0;
}

static int platform_matches(const json *p, const oci_platform *want)
{
    if (!p || p->type != JSON_OBJECT)
        return !strcmp(want->os, "linux") && !strcmp(want->arch, "amd64") && !want->variant[0];
    const char *os = json_get_str(p, "os"), *arch = json_get_str(p, "architecture");
    const char *variant = json_get_str(p, "variant");
    if (has_nul(json_get(p, "os")) || has_nul(json_get(p, "architecture")) || has_nul(json_get(p, "variant")))
        return 0;
    return os && arch && !strcmp(os, want->os) && !strcmp(arch, want->arch) &&
           (!want->variant[0] || (variant && !strcmp(variant, want->variant)));
}

static void list_platforms(const json *manifests, buf *out)
{
    for (size_t i = 0; i < manifests->len; i++) {
        const json *p = json_get(manifests->items[i], "platform");
        const char *os = json_get_str(p, "os"), *arch = json_get_str(p, "architecture");
        const char *variant = json_get_str(p, "variant");
        buf_printf(out, "%s%s/%s%s%s", i ? ", " : "", p ? (os ? os : "?") : "linux",
                   p ? (arch ? arch : "?") : "amd64 (no platform)", variant ? "/" : "", variant ? variant : "");
    }
    if (manifests->len == 0)
        buf_append_str(out, "none");
}

int oci_index_select(const json *index, const oci_platform *want, oci_descriptor *out, buf *err)
{
    const json *m = json_get(index, "manifests");
    if (!m || m->type != JSON_ARRAY)
        return buf_fail(err, "the index has no \"manifests\" array");
    for (size_t i = 0; i < m->len; i++) {
        if (!platform_matches(json_get(m->items[i], "platform"), want))
            continue;
        char what[64];
        snprintf(what, sizeof what, "index entry %zu", i);
        return descriptor_read(m->items[i], what, out, err);
    }
    char name[100];
    oci_platform_format(want, name);
    buf_printf(err, "no %s entry in the index (platforms: ", name);
    list_platforms(m, err);
    buf_append_str(err, ")");
    return -1;
}

int oci_manifest_config(const json *manifest, oci_descriptor *out, buf *err)
{
    const json *c = json_get(manifest, "config");
    if (!c)
        return buf_fail(err, "the manifest has no config descriptor");
    return descriptor_read(c, "the manifest's config descriptor", out, err);
}

int oci_config_strings(const json *config, const char *key, char ***out, size_t *n, buf *err)
{
    *out = NULL;
    *n = 0;
    const json *v = json_get(json_get(config, "config"), key);
    size_t len = v && v->type == JSON_ARRAY ? v->len : 0;
    if (v && v->type != JSON_ARRAY && v->type != JSON_NULL)
        return buf_fail(err, "config.%s is not an array of strings", key);
    char **arr = calloc(len + 1, sizeof *arr);
    if (!arr)
        return buf_fail(err, "out of memory");
    for (size_t i = 0; i < len; i++) {
        if (has_nul(v->items[i])) {
            oci_strings_free(arr);
            return buf_fail(err, "config.%s[%zu] has a NUL byte (\\u0000) at offset %zu", key, i,
                            strlen(v->items[i]->str));
        }
        if (v->items[i]->type != JSON_STRING || !(arr[i] = strdup(v->items[i]->str))) {
            oci_strings_free(arr);
            return buf_fail(err, "config.%s is not an array of strings", key);
        }
    }
    *out = arr;
    *n = len;
    return 0;
}

void oci_strings_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}
