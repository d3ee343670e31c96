/* Unit tests for the pure parts of the registry lookup: WWW-Authenticate
 * challenges (lib/oci/www_auth), base64 (lib/core/base64), Docker config.json
 * credentials (lib/oci/docker_config) and manifest/index/config reading
 * (lib/oci/oci_manifest: media types, platform choice, Entrypoint/Cmd). The HTTP
 * side is tested against real registries in tests/integration/test_registry.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "oci/docker_config.h"
#include "oci/oci_manifest.h"
#include "oci/www_auth.h"

Test(www_auth, bearer_with_quoted_commas)
{
    www_auth a;
    buf err = {0};
    cr_assert_eq(www_auth_parse("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
                                "scope=\"repository:samalba/my-app:pull,push\"", &a, &err), 0);
    cr_expect_eq(a.scheme, WWW_AUTH_BEARER);
    cr_expect_str_eq(a.realm, "https://auth.docker.io/token");
    cr_expect_str_eq(a.service, "registry.docker.io");
    cr_expect_str_eq(a.scope, "repository:samalba/my-app:pull,push");
    www_auth_free(&a);
}

Test(www_auth, basic_escapes_and_case)
{
    www_auth a;
    buf err = {0};
    cr_assert_eq(www_auth_parse("basic Realm=\"a \\\"quoted\\\" realm\" , charset=UTF-8", &a, &err), 0);
    cr_expect_eq(a.scheme, WWW_AUTH_BASIC);
    cr_expect_str_eq(a.realm, "a \"quoted\" realm");
    www_auth_free(&a);
    cr_assert_eq(www_auth_parse("Bearer realm=tok, Basic realm=\"x\"", &a, &err), 0);   /* first challenge */
    cr_expect_eq(a.scheme, WWW_AUTH_BEARER);
    cr_expect_str_eq(a.realm, "tok");
    www_auth_free(&a);
    cr_assert_eq(www_auth_parse("Negotiate", &a, &err), 0);
    cr_expect_eq(a.scheme, WWW_AUTH_OTHER);
    cr_expect_str_eq(a.scheme_name, "Negotiate");
    www_auth_free(&a);
    cr_assert_eq(www_auth_parse("", &a, &err), 0);
    cr_expect_eq(a.scheme, WWW_AUTH_NONE);
    cr_expect_eq(www_auth_parse("Bearer realm=\"open", &a, &err), -1);
    cr_expect(strstr(err.data, "unterminated"));
    buf_free(&err);
}

Test(base64, round_trip_and_errors)
{
    const char *plain[] = {"", "f", "fo", "foo", "foob", "user:p@ss:w0rd"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        buf enc = {0}, dec = {0};
        cr_assert_eq(base64_encode(plain[i], strlen(plain[i]), &enc), 0);
        cr_assert_eq(base64_decode(enc.data, enc.len, &dec), 0);
        cr_expect_eq(dec.len, strlen(plain[i]));
        cr_expect(dec.len == 0 || !memcmp(dec.data, plain[i], dec.len));
        buf_free(&enc);
        buf_free(&dec);
    }
    buf out = {0};
    cr_expect_eq(base64_decode("YWxpY2U6c2VjcmV0", 16, &out), 0);
    cr_expect_str_eq(out.data, "alice:secret");
    buf_reset(&out);
    cr_expect_eq(base64_decode("Zm9v YmFy", 9, &out), -1);
    cr_expect_eq(base64_decode("Zm9vY", 5, &out), -1);
    buf_free(&out);
}

static char *write_tmp(const char *content)
{
    char *path = strdup("/tmp/test-docker-config-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

static void expect_cred(const char *config, const char *registry, const char *user, const char *pass)
{
    char *path = write_tmp(config);
    docker_cred c;
    buf err = {0};
    cr_assert_eq(docker_config_lookup(path, registry, &c, &err), 0, "%s", err.data);
    if (user) {
        cr_expect_str_eq(c.username, user, "%s in %s", registry, config);
        cr_expect_str_eq(c.password, pass);
    } else {
        cr_expect_null(c.username, "%s in %s", registry, config);
    }
    cr_expect_str_eq(c.file, path);
    docker_cred_free(&c);
    unlink(path);
    free(path);
    buf_free(&err);
}

Test(docker_config, lookups)
{
    /* "alice:pw:x" */
    const char *cfg = "{\"auths\":{\"ghcr.io\":{\"auth\":\"YWxpY2U6cHc6eA==\"},"
                      "\"https://index.docker.io/v1/\":{\"username\":\"bob\",\"password\":\"hub\"},"
                      "\"http://127.0.0.1:5000/v2/\":{\"auth\":\"YWxpY2U6cHc6eA\"}}}";
    expect_cred(cfg, "ghcr.io", "alice", "pw:x");
    expect_cred(cfg, "docker.io", "bob", "hub");
    expect_cred(cfg, "127.0.0.1:5000", "alice", "pw:x");
    expect_cred(cfg, "127.0.0.1:5001", NULL, NULL);
    expect_cred(cfg, "quay.io", NULL, NULL);
    expect_cred("{\"auths\":{\"registry-1.docker.io\":{\"auth\":\"YTpi\"}}}", "docker.io", "a", "b");
    expect_cred("{\"credsStore\":\"desktop\"}", "ghcr.io", NULL, NULL);
}

Test(docker_config, errors)
{
    docker_cred c;
    buf err = {0};
    cr_expect_eq(docker_config_lookup("/nonexistent/config.json", "ghcr.io", &c, &err), -1);
    cr_expect(strstr(err.data, "cannot read Docker config /nonexistent/config.json"), "%s", err.data);
    buf_reset(&err);
    char *path = write_tmp("{\"auths\":");
    cr_expect_eq(docker_config_lookup(path, "ghcr.io", &c, &err), -1);
    cr_expect(strstr(err.data, "is not valid JSON"), "%s", err.data);
    unlink(path);
    free(path);
    buf_reset(&err);
    path = write_tmp("{\"auths\":{\"ghcr.io\":{\"auth\":\"bm9jb2xvbg==\"}}}");   /* "nocolon" */
    cr_expect_eq(docker_config_lookup(path, "ghcr.io", &c, &err), -1);
    cr_expect(strstr(err.data, "auths[\"ghcr.io\"].auth is not base64 of \"user:password\""), "%s", err.data);
    unlink(path);
    free(path);
    buf_free(&err);
}

Test(docker_config, default_path)
{
    setenv("DOCKER_CONFIG", "/etc/dc", 1);
    char *p = docker_config_default_path();
    cr_expect_str_eq(p, "/etc/dc/config.json");
    free(p);
    unsetenv("DOCKER_CONFIG");
    setenv("HOME", "/home/u", 1);
    p = docker_config_default_path();
    cr_expect_str_eq(p, "/home/u/.docker/config.json");
    free(p);
    docker_cred c;
    buf err = {0};
    cr_expect_eq(docker_config_lookup(NULL, "ghcr.io", &c, &err), 0);   /* no default file: anonymous */
    cr_expect_null(c.username);
    cr_expect_null(c.file);
}

static json *parse(const char *text)
{
    buf err = {0};
    json *v = json_parse(text, strlen(text), &err);
    cr_assert_not_null(v, "%s", err.data);
    return v;
}

Test(oci_manifest, kinds)
{
    json *idx = parse("{\"manifests\":[]}"), *man = parse("{\"config\":{}}"), *v1 = parse("{\"schemaVersion\":1}");
    cr_expect_eq(oci_kind_of(OCI_MT_INDEX, man), OCI_KIND_INDEX);   /* Content-Type wins */
    cr_expect_eq(oci_kind_of(DOCKER_MT_MANIFEST "; charset=utf-8", idx), OCI_KIND_MANIFEST);
    cr_expect_eq(oci_kind_of(DOCKER_MT_SCHEMA1_SIGNED, man), OCI_KIND_SCHEMA1);
    cr_expect_eq(oci_kind_of("application/json", idx), OCI_KIND_INDEX);
    cr_expect_eq(oci_kind_of(NULL, man), OCI_KIND_MANIFEST);
    cr_expect_eq(oci_kind_of(NULL, v1), OCI_KIND_SCHEMA1);
    json *typed = parse("{\"mediaType\":\"" DOCKER_MT_LIST "\",\"config\":{}}");
    cr_expect_eq(oci_kind_of("text/plain", typed), OCI_KIND_INDEX);
    json_free(idx), json_free(man), json_free(v1), json_free(typed);
}

#define DA "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DB "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DC "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static const char *select_digest(const char *index, const char *platform, buf *err)
{
    static char out[80];
    oci_platform p;
    oci_descriptor d;
    cr_assert_eq(oci_platform_parse(platform, &p, err), 0);
    json *v = parse(index);
    int rc = oci_index_select(v, &p, &d, err);
    snprintf(out, sizeof out, "%s", rc == 0 ? d.digest : "");
    json_free(v);
    return rc == 0 ? out : NULL;
}

Test(oci_manifest, platform_selection)
{
    const char *idx = "{\"manifests\":["
        "{\"digest\":\"" DA "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\"}},"
        "{\"digest\":\"" DB "\",\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}},"
        "{\"digest\":\"" DC "\",\"platform\":{\"os\":\"windows\",\"architecture\":\"amd64\"}}]}";
    buf err = {0};
    cr_expect_str_eq(select_digest(idx, "linux/arm64", &err), DB);
    cr_expect_str_eq(select_digest(idx, "linux/arm", &err), DA);
    cr_expect_str_eq(select_digest(idx, "linux/arm/v7", &err), DA);
    cr_expect_null(select_digest(idx, "linux/arm/v6", &err));
    buf_reset(&err);
    cr_expect_null(select_digest(idx, "linux/amd64", &err));
    cr_expect_str_eq(err.data, "no linux/amd64 entry in the index (platforms: linux/arm/v7, linux/arm64, "
                               "windows/amd64)");
    /* an entry without platform is linux/amd64 */
    const char *bare = "{\"manifests\":[{\"digest\":\"" DB "\"}]}";
    cr_expect_str_eq(select_digest(bare, "linux/amd64", &err), DB);
    buf_reset(&err);
    cr_expect_null(select_digest(bare, "linux/arm64", &err));
    cr_expect_str_eq(err.data, "no linux/arm64 entry in the index (platforms: linux/amd64 (no platform))");
    buf_reset(&err);
    cr_expect_null(select_digest("{\"manifests\":[{\"digest\":\"sha256:../x\"}]}", "linux/amd64", &err));
    cr_expect(strstr(err.data, "unsupported digest"), "%s", err.data);
    buf_free(&err);
}

Test(oci_manifest, platform_parse)
{
    oci_platform p;
    buf err = {0};
    cr_expect_eq(oci_platform_parse("linux/arm/v8", &p, &err), 0);
    cr_expect_str_eq(p.variant, "v8");
    char name[100];
    oci_platform_format(&p, name);
    cr_expect_str_eq(name, "linux/arm/v8");
    const char *bad[] = {"linux", "linux/", "/amd64", "linux/arm/v7/x", "linux/arm/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect_eq(oci_platform_parse(bad[i], &p, &err), -1, "%s", bad[i]);
    buf_free(&err);
}

Test(oci_manifest, config_descriptor_and_strings)
{
    buf err = {0};
    oci_descriptor d;
    json *m = parse("{\"config\":{\"mediaType\":\"x\",\"digest\":\"" DA "\",\"size\":12}}");
    cr_assert_eq(oci_manifest_config(m, &d, &err), 0);
    cr_expect_str_eq(d.digest, DA);
    cr_expect_eq(d.size, 12);
    json_free(m);
    m = parse("{\"layers\":[]}");
    cr_expect_eq(oci_manifest_config(m, &d, &err), -1);
    json_free(m);

    json *c = parse("{\"config\":{\"Entrypoint\":null,\"Cmd\":[\"a\",\"b c\"]}}");
    char **v;
    size_t n;
    cr_assert_eq(oci_config_strings(c, "Entrypoint", &v, &n, &err), 0);
    cr_expect_eq(n, 0);
    cr_expect_null(v[0]);
    oci_strings_free(v);
    cr_assert_eq(oci_config_strings(c, "Cmd", &v, &n, &err), 0);
    cr_expect_eq(n, 2);
    cr_expect_str_eq(v[1], "b c");
    oci_strings_free(v);
    json_free(c);
    c = parse("{\"config\":{\"Cmd\":\"sh -c x\"}}");
    buf_reset(&err);
    cr_expect_eq(oci_config_strings(c, "Cmd", &v, &n, &err), -1);
    cr_expect_str_eq(err.data, "config.Cmd is not an array of strings");
    json_free(c);
    c = parse("{}");   /* no config object at all */
    cr_assert_eq(oci_config_strings(c, "Cmd", &v, &n, &err), 0);
    cr_expect_eq(n, 0);
    oci_strings_free(v);
    json_free(c);
    buf_free(&err);
}

/* "\u0000" in a registry's string would cut its C string: an Entrypoint
 * "/fn\u0000 --evil" must not run as "/fn", nor a digest verify shortened. */
Test(oci_manifest, nul_bytes_are_refused_not_cut)
{
    buf err = {0};
    char **v;
    size_t n;
    json *c = parse("{\"config\":{\"Entrypoint\":[\"/fn\",\"/bin/sh\\u0000 -c evil\"]}}");
    cr_expect_eq(oci_config_strings(c, "Entrypoint", &v, &n, &err), -1);
    cr_expect_str_eq(err.data, "config.Entrypoint[1] has a NUL byte (\\u0000) at offset 7");
    json_free(c);
    oci_descriptor d;
    json *m = parse("{\"config\":{\"digest\":\"" DA "\\u0000x\",\"size\":1}}");
    buf_reset(&err);
    cr_expect_eq(oci_manifest_config(m, &d, &err), -1);
    cr_expect_str_eq(err.data, "the manifest's config descriptor has a digest with a NUL byte (\\u0000) at offset 71");
    json_free(m);
    oci_platform amd64;
    cr_assert_eq(oci_platform_parse("linux/amd64", &amd64, &err), 0);
    json *index = parse("{\"manifests\":[{\"digest\":\"" DA "\",\"platform\":{\"os\":\"linux\\u0000\","
                        "\"architecture\":\"amd64\"}}]}");
    buf_reset(&err);
    cr_expect_eq(oci_index_select(index, &amd64, &d, &err), -1);
    json_free(index);
    buf_free(&err);
}

/* A token goes into an Authorization header: one with CR/LF would add
 * headers, one with "\u0000" would be cut; "token" wins over
 * "access_token" unless empty. */
Test(www_auth, token_of_the_realm_answer)
{
    static const struct { const char *answer, *token; } cases[] = {
        {"{\"token\":\"t1\",\"access_token\":\"t2\"}", "t1"},
        {"{\"token\":\"\",\"access_token\":\"t2\"}", "t2"},
        {"{\"access_token\":\"t2\"}", "t2"},
        {"{\"token\":7}", NULL},
        {"[]", NULL},
        {"{\"token\":\"t\\r\\nX-Evil: 1\"}", NULL},
        {"{\"token\":\"t\\u0000x\"}", NULL},
        {"{\"token\":\"t\\u001b\"}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json *doc = parse(cases[i].answer);
        const char *t = www_auth_token_of(doc);
        if (cases[i].token)
            cr_expect(t && !strcmp(t, cases[i].token), "%s", cases[i].answer);
        else
            cr_expect_null(t, "%s", cases[i].answer);
        json_free(doc);
    }
}

/* A NUL byte in a credential would send another password (its C string is
 * cut there): refused, naming the field. */
Test(docker_config, nul_bytes_in_credentials)
{
    static const struct { const char *cfg, *message; } cases[] = {
        {"{\"auths\":{\"r.io\":{\"username\":\"a\",\"password\":\"pw\\u0000x\"}}}",
         "auths[\"r.io\"].password has a NUL byte"},
        {"{\"auths\":{\"r.io\":{\"username\":\"a\\u0000\",\"password\":\"pw\"}}}",
         "auths[\"r.io\"].username has a NUL byte"},
        {"{\"auths\":{\"r.io\":{\"auth\":\"YTpwdwB4\"}}}",   /* "a:pw\0x" */
         "auths[\"r.io\"].auth is not base64 of \"user:password\" (without NUL bytes)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        docker_cred c;
        buf err = {0};
        char *path = write_tmp(cases[i].cfg);
        cr_expect_eq(docker_config_lookup(path, "r.io", &c, &err), -1, "%s", cases[i].cfg);
        cr_expect(err.data && strstr(err.data, cases[i].message), "%s", err.data);
        unlink(path);
        free(path);
        buf_free(&err);
    }
}
