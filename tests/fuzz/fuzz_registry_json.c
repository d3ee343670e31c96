/* Fuzzes what runner-client reads from a registry (untrusted network
 * input): manifests, indexes and image configs (lib/oci/oci_manifest) and
 * the token service's answer (lib/oci/www_auth), each parsed by lib/core/json as
 * the lookup parses them (at most REGISTRY_JSON_MAX_VALUES values). Properties: every call either succeeds or says
 * why; a descriptor taken from an index or manifest has a valid sha256
 * digest whose C string is all of it; Entrypoint/Cmd strings are the JSON
 * strings exactly (a NUL inside is refused, never cut); a token has no
 * control byte; the mediaType the client prints as JSON reads back the
 * same.
 *
 * Input: byte 0 chooses the Content-Type the answer comes with, bytes 1-3
 * stretch the rest (fuzz_stretch: one span repeated up to 256 KiB), so
 * that deep nesting ("[[[[...", past JSON_MAX_DEPTH) and long strings and
 * arrays are reached from small seeds. */
#include <string.h>

#include "core/json.h"
#include "fuzz_common.h"
#include "oci/oci_manifest.h"
#include "oci/www_auth.h"

#define MAX_ANSWER (256u << 10)

static const char *const content_types[] = {
    NULL, OCI_MT_MANIFEST, OCI_MT_INDEX, DOCKER_MT_MANIFEST, DOCKER_MT_LIST, DOCKER_MT_SCHEMA1,
    "application/json", OCI_MT_MANIFEST "; charset=utf-8",
};

/* A descriptor the lookup would fetch: its digest goes into a URL. */
static void check_descriptor(const oci_descriptor *d)
{
    FUZZ_CHECK(d->digest && oci_digest_valid(d->digest) && strlen(d->digest) == 71);
}

static void check_strings(const json *config, const char *key)
{
    char **v = NULL;
    size_t n = 0;
    buf err = {0};
    if (oci_config_strings(config, key, &v, &n, &err) < 0) {
        FUZZ_CHECK(err.len > 0 && v == NULL);
    } else {
        const json *arr = json_get(json_get(config, "config"), key);
        FUZZ_CHECK(n == (arr && arr->type == JSON_ARRAY ? arr->len : 0) && v[n] == NULL);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(strlen(v[i]) == arr->items[i]->len && !memcmp(v[i], arr->items[i]->str, arr->items[i]->len));
        oci_strings_free(v);
    }
    buf_free(&err);
}

static void check_media_type_output(const json *doc)
{
    const json *mt = json_get(doc, "mediaType");
    if (!json_str(mt))
        return;
    buf out = {0}, err = {0};
    FUZZ_CHECK(json_write_string(&out, mt->str, mt->len) == 0);
    json *again = json_parse(out.data, out.len, &err);
    FUZZ_CHECK(again && again->type == JSON_STRING && again->len == mt->len && !memcmp(again->str, mt->str, mt->len));
    json_free(again);
    buf_free(&out);
    buf_free(&err);
}

static void check_document(const json *doc, const char *content_type)
{
    static const char *const platforms[] = {"linux/amd64", "linux/arm/v7", "windows/amd64"};
    buf err = {0};
    oci_descriptor d;
    oci_kind kind = oci_kind_of(content_type, doc);
    FUZZ_CHECK(kind >= OCI_KIND_UNKNOWN && kind <= OCI_KIND_SCHEMA1);
    for (size_t i = 0; i < sizeof platforms / sizeof *platforms; i++) {
        oci_platform p;
        FUZZ_CHECK(oci_platform_parse(platforms[i], &p, &err) == 0);
        buf_reset(&err);
        if (oci_index_select(doc, &p, &d, &err) == 0)
            check_descriptor(&d);
        else
            FUZZ_CHECK(err.len > 0);
    }
    buf_reset(&err);
    if (oci_manifest_config(doc, &d, &err) == 0)
        check_descriptor(&d);
    else
        FUZZ_CHECK(err.len > 0);
    check_strings(doc, "Entrypoint");
    check_strings(doc, "Cmd");
    const char *token = www_auth_token_of(doc);
    for (const char *p = token; p && *p; p++)
        FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
    FUZZ_CHECK(!token || *token);
    check_media_type_output(doc);
    buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t answer[MAX_ANSWER];
    if (size < 4)
        return 0;
    const char *content_type = content_types[data[0] % (sizeof content_types / sizeof *content_types)];
    size_t n = fuzz_stretch(data, data + 4, size - 4, answer, sizeof answer);
    buf err = {0};
    json *doc = json_parse_max((const char *)answer, n, REGISTRY_JSON_MAX_VALUES, &err);
    if (doc)
        check_document(doc, content_type);
    else
        FUZZ_CHECK(err.len > 0);
    json_free(doc);
    buf_free(&err);
    return 0;
}
