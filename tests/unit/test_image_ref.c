/* Unit tests for lib/oci/image_ref: Docker-convention defaults (docker.io,
 * library/, latest), registries with ports and IPv6, digests, and the
 * grammar errors a user sees for bad references. */
#include <criterion/criterion.h>
#include <string.h>

#include "oci/image_ref.h"

static void expect(const char *s, const char *registry, const char *api, const char *repo, const char *tag,
                   const char *digest)
{
    image_ref r;
    buf err = {0};
    cr_assert_eq(image_ref_parse(s, &r, &err), 0, "rejected \"%s\": %s", s, err.data);
    cr_expect_str_eq(r.registry, registry, "%s: registry", s);
    cr_expect_str_eq(r.api_host, api, "%s: api host", s);
    cr_expect_str_eq(r.repository, repo, "%s: repository", s);
    if (tag)
        cr_expect_str_eq(r.tag, tag, "%s: tag", s);
    else
        cr_expect_null(r.tag, "%s: tag", s);
    if (digest)
        cr_expect_str_eq(r.digest, digest, "%s: digest", s);
    else
        cr_expect_null(r.digest, "%s: digest", s);
    cr_expect_str_eq(image_ref_reference(&r), digest ? digest : tag);
    image_ref_free(&r);
    buf_free(&err);
}

static void expect_error(const char *s, const char *want)
{
    image_ref r;
    buf err = {0};
    cr_assert_eq(image_ref_parse(s, &r, &err), -1, "accepted \"%s\"", s);
    cr_expect(err.data && strstr(err.data, want), "\"%s\": got \"%s\", want \"%s\"", s, err.data, want);
    cr_expect_null(r.registry);
    buf_free(&err);
}

#define D "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(image_ref, docker_hub_defaults)
{
    expect("busybox", "docker.io", "registry-1.docker.io", "library/busybox", "latest", NULL);
    expect("busybox:1.36", "docker.io", "registry-1.docker.io", "library/busybox", "1.36", NULL);
    expect("docker.io/busybox", "docker.io", "registry-1.docker.io", "library/busybox", "latest", NULL);
    expect("index.docker.io/library/busybox", "docker.io", "registry-1.docker.io", "library/busybox", "latest",
           NULL);
    expect("kptdev/set-labels:v0.2", "docker.io", "registry-1.docker.io", "kptdev/set-labels", "v0.2", NULL);
}

Test(image_ref, other_registries)
{
    expect("ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", "ghcr.io", "ghcr.io",
           "kptdev/krm-functions-catalog/set-namespace", "v0.4.1", NULL);
    expect("gcr.io/kpt-fn/apply-setters", "gcr.io", "gcr.io", "kpt-fn/apply-setters", "latest", NULL);
    expect("localhost/fn", "localhost", "localhost", "fn", "latest", NULL);   /* no library/ off Docker Hub */
    expect("localhost:5000/a/b:t", "localhost:5000", "localhost:5000", "a/b", "t", NULL);
    expect("127.0.0.1:5000/fn:v1", "127.0.0.1:5000", "127.0.0.1:5000", "fn", "v1", NULL);
    expect("[::1]:5000/fn", "[::1]:5000", "[::1]:5000", "fn", "latest", NULL);
    expect("Registry.Example.COM/fn", "Registry.Example.COM", "Registry.Example.COM", "fn", "latest", NULL);
}

Test(image_ref, digests)
{
    expect("fn@" D, "docker.io", "registry-1.docker.io", "library/fn", NULL, D);
    expect("ghcr.io/a/fn:v1@" D, "ghcr.io", "ghcr.io", "a/fn", "v1", D);
    expect("localhost:5000/fn@" D, "localhost:5000", "localhost:5000", "fn", NULL, D);
}

Test(image_ref, repository_grammar)
{
    expect("a.b/c__d/e-f---g/h.i_j", "a.b", "a.b", "c__d/e-f---g/h.i_j", "latest", NULL);
    expect_error("", "empty");
    expect_error("Busybox", "must be lowercase");
    expect_error("ghcr.io/Org/fn", "repository name \"Org/fn\" must be lowercase");
    expect_error("a//b", "invalid component \"\"");
    expect_error("a/-b", "invalid component \"-b\"");
    expect_error("a/b.", "invalid component \"b.\"");
    expect_error("a/b___c", "invalid component \"b___c\"");
    expect_error("a/b..c", "invalid component");
    expect_error("ghcr.io/", "empty repository name");
    expect_error("fn/", "invalid component \"\"");
}

Test(image_ref, tag_grammar)
{
    char long_tag[200] = "fn:";
    memset(long_tag + 3, 'x', 128);
    expect(long_tag, "docker.io", "registry-1.docker.io", "library/fn", long_tag + 3, NULL);
    long_tag[3 + 128] = 'x';
    expect_error(long_tag, "invalid tag");
    expect("fn:_x.Y-1", "docker.io", "registry-1.docker.io", "library/fn", "_x.Y-1", NULL);
    expect_error("fn:", "invalid tag \"\"");
    expect_error("fn:.x", "invalid tag \".x\"");
    expect_error("fn:-x", "invalid tag");
    expect_error("fn:a+b", "invalid tag");
}

Test(image_ref, digest_and_host_errors)
{
    expect_error("fn@sha256:abc", "invalid digest \"sha256:abc\"");
    expect_error("fn@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "invalid digest");
    expect_error("fn@sha512:00", "unsupported digest algorithm \"sha512\"");
    expect_error("fn@", "invalid digest");
    expect_error("host:port/fn", "invalid registry host \"host:port\"");
    expect_error("host:123456/fn", "invalid registry host");
    expect_error("-bad.io/fn", "invalid registry host");
    expect_error("[::1/fn", "invalid registry host");
    expect_error("bad_host.io/fn", "invalid registry host");
}

Test(image_ref, name_length_limit)
{
    char name[300] = "ghcr.io/";
    memset(name + 8, 'a', 247);   /* 8 + 247 = 255: the limit */
    expect(name, "ghcr.io", "ghcr.io", name + 8, "latest", NULL);
    name[8 + 247] = 'a';
    expect_error(name, "longer than 255");
}

/* image_ref_check is what every command (image, pod render, pod id, eval
 * --image, --fn, Kptfile pipelines) applies: the parser's verdict. */
Test(image_ref, check_agrees_with_parse)
{
    const char *good[] = {"busybox", "set-namespace:v0.4.1", "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.1",
                          "localhost:5000/fn@sha256:" "0000000000000000000000000000000000000000000000000000000000000000"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        buf err = {0};
        cr_assert_eq(image_ref_check(good[i], &err), 0, "%s: %s", good[i], err.data ? err.data : "");
        cr_assert_eq(err.len, 0);
    }
    buf err = {0};
    cr_assert_eq(image_ref_check("Bad Image!", &err), -1);
    cr_assert_str_eq(err.data, "invalid image reference \"Bad Image!\": repository name \"Bad Image!\" must be lowercase");
    buf_free(&err);
    cr_assert_eq(image_ref_check("bad image", &err), -1);
    cr_assert(strstr(err.data, "invalid component \"bad image\""), "%s", err.data);
    buf_free(&err);
    cr_assert_eq(image_ref_check("", &err), -1);
    buf_free(&err);
}

/* Text that came with a length keeps its NUL bytes: the reference is
 * refused, naming the byte, never parsed as the text before it. */
Test(image_ref, nul_byte_is_refused_with_its_offset)
{
    static const char with_nul[] = "example.com/fn:v1\0/../other:v2";
    image_ref r;
    buf err = {0};
    cr_expect_eq(image_ref_parse_n(with_nul, sizeof with_nul - 1, &r, &err), -1);
    cr_expect_str_eq(err.data, "invalid image reference \"example.com/fn:v1\\x00/../other:v2\": NUL byte (\\x00) "
                               "at offset 17");
    buf_reset(&err);
    cr_expect_eq(image_ref_check_n(with_nul, 17, &err), 0, "%s", err.data);   /* the part before it is fine */
    cr_assert_eq(image_ref_parse_n("busybox:1.36xyz", 12, &r, &err), 0);    /* the length, not the C string */
    cr_expect_str_eq(r.tag, "1.36");
    image_ref_free(&r);
    buf_free(&err);
}
