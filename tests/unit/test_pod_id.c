/* Unit tests for pod_id: Porch's podId rule on Porch's own example, and the
 * repair of every kind of name Porch gets wrong (long, uppercase, '_' in the
 * tag, leading digit, digest references), plus the Kubernetes name checks. */
#include <criterion/criterion.h>
#include <string.h>

#include "kube/pod_id.h"
#include "scoped_buf.h"

#define DIGEST "sha256:0123abcd4567ef890123abcd4567ef890123abcd4567ef890123abcd4567ef89"
#define HEX64 "0123abcd4567ef890123abcd4567ef890123abcd4567ef890123abcd4567ef89"

static void expect_id(const char *image, unsigned long postfix, const char *want)
{
    char out[POD_ID_MAX + 1];
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_make(image, DIGEST, postfix, out, &err), 0, "%s: %s", image, err.data);
    cr_assert_str_eq(out, want, "image %s", image);
    cr_assert(dns1035_label_valid(out), "%s is not a DNS-1035 label", out);
}

static void expect_porch(const char *image, unsigned long postfix, const char *want)
{
    buf b = {0};
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_porch(image, DIGEST, postfix, &b, &err), 0, "%s: %s", image, err.data);
    cr_assert_str_eq(b.data, want, "image %s", image);
    buf_free(&b);
}

static void expect_error(const char *image, const char *digest, const char *want)
{
    char out[POD_ID_MAX + 1];
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_make(image, digest, 1, out, &err), -1, "accepted %s", image);
    cr_assert(strstr(err.data, want), "error for %s: \"%s\", want \"%s\"", image, err.data, want);
}

Test(pod_id, porch_example)
{
    expect_porch("ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", 1,
                 "set-namespace-v041-1-0123abcd");
    expect_id("ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", 1,
              "set-namespace-v041-1-0123abcd");
    expect_id("gcr.io/kpt-fn/apply-replacements:v0.1.1", 2, "apply-replacements-v011-2-0123abcd");
}

Test(pod_id, valid_porch_output_is_kept)
{
    expect_id("set-namespace", 1, "set-namespace-latest-1-0123abcd");          /* untagged */
    expect_id("gcr.io/kpt-fn/set_labels:v0.2", 3, "set-labels-v02-3-0123abcd"); /* '_' -> '-' */
    expect_id("localhost:5000/fns/starlark:v0.5.0", 10, "starlark-v050-10-0123abcd"); /* port */
    expect_id("localhost:5000/starlark", 1, "starlark-latest-1-0123abcd");
    expect_porch("localhost:5000/starlark", 1, "starlark-latest-1-0123abcd");
    /* exactly 63 characters: still Porch's */
    expect_id("r/abcdefghijabcdefghijabcdefghijabcdefghij-xyz:v1", 7,
              "abcdefghijabcdefghijabcdefghijabcdefghij-xyz-v1-7-0123abcd");
    expect_id("r/abcdefghijabcdefghijabcdefghijabcdefghijabcdefgh:v1", 1,
              "abcdefghijabcdefghijabcdefghijabcdefghijabcdefgh-v1-1-0123abcd");
}

Test(pod_id, uppercase_and_underscore_in_tag)
{
    expect_porch("ghcr.io/a/fn:V1.2_rc", 1, "fn-V12_rc-1-0123abcd");
    expect_id("ghcr.io/a/fn:V1.2_rc", 1, "fn-v12-rc-1-0123abcd");
    expect_id("MyFn:Latest", 1, "myfn-latest-1-0123abcd");
}

Test(pod_id, leading_digit_gets_prefix)
{
    expect_porch("ghcr.io/a/1password:v1", 1, "1password-v1-1-0123abcd");
    expect_id("ghcr.io/a/1password:v1", 1, "fn-1password-v1-1-0123abcd");
    expect_id("ghcr.io/a/_x:v1", 1, "fn--x-v1-1-0123abcd");
}

Test(pod_id, digest_reference)
{
    expect_porch("ghcr.io/a/fn@" DIGEST, 1, "fn-sha256:" HEX64 "-1-0123abcd");
    expect_id("ghcr.io/a/fn@" DIGEST, 1, "fn-0123abcd-1-0123abcd");
    /* a tag next to the digest is ignored, as go-containerregistry does */
    expect_id("ghcr.io/a/fn:v1@" DIGEST, 1, "fn-0123abcd-1-0123abcd");
    /* the reference's own digest gives the tag part, --digest the suffix */
    char out[POD_ID_MAX + 1];
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_make("a/fn@sha256:ffffeeee" HEX64, "sha256:" HEX64, 1, out, &err), 0);
    cr_assert_str_eq(out, "fn-ffffeeee-1-0123abcd");
    cr_assert_str_eq(pod_id_image_digest("a/fn@sha256:abc"), "sha256:abc");
    cr_assert_null(pod_id_image_digest("a/fn:v1"));
    cr_assert_null(pod_id_image_digest("a/fn@"));
}

Test(pod_id, long_names_are_cut_before_the_suffix)
{
    const char *img = "ghcr.io/a/this-is-a-very-long-function-name-that-goes-on-and-on:v1.2.3-alpha.1";
    expect_id(img, 12, "this-is-a-very-long-function-name-that-goes-on-and-12-0123abcd");
    char out[POD_ID_MAX + 1];
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_make(img, DIGEST, 4294967295UL, out, &err), 0);
    cr_assert_eq(strlen(out), 63);
    cr_assert(strstr(out, "-4294967295-0123abcd"), "%s", out);
    cr_assert(dns1035_label_valid(out), "%s", out);
    /* a cut that ends on '-' drops it */
    expect_id("r/abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijk:v1", 1,
              "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijk-1-0123abcd");
}

Test(pod_id, bare_hex_digest_and_bad_input)
{
    char out[POD_ID_MAX + 1];
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_id_make("fn:v1", "0123abcd", 1, out, &err), 0);
    cr_assert_str_eq(out, "fn-v1-1-0123abcd");
    expect_error("", DIGEST, "empty image reference");
    expect_error("fn:", DIGEST, "empty tag");
    expect_error("ghcr.io/a/", DIGEST, "no repository name");
    expect_error("fn@", DIGEST, "empty digest");
    expect_error("fn:v1", "sha256:0123ABCD", "invalid image digest");
    expect_error("fn:v1", "0123abc", "invalid image digest");
    expect_error("fn:v1", "", "empty image digest");
    expect_error("fn:v1", NULL, "empty image digest");
}

Test(pod_id, every_repair_is_a_label)
{
    static const char *const images[] = {
        "A", "9", "a/B_C.D:E_F.G", "x/--:--", "x/y:_", "x/Ünïcode:v1", "x/a.b.c:1.0",
        "x/y@sha256:", "x/y@md5:zz", "reg:5000/p/q", "x/y:A-very-long-tag-with-CAPITALS-and-dots."
        "................................................................................",
    };
    for (size_t i = 0; i < sizeof images / sizeof *images; i++) {
        char out[POD_ID_MAX + 1];
        SCOPED_BUF err = {0};
        cr_assert_eq(pod_id_make(images[i], DIGEST, 1, out, &err), 0, "%s: %s", images[i], err.data);
        cr_assert(dns1035_label_valid(out), "%s -> %s", images[i], out);
        cr_assert(strstr(out, "-1-0123abcd"), "%s -> %s", images[i], out);
    }
}

Test(pod_id, kubernetes_names)
{
    cr_assert(dns1035_label_valid("a"));
    cr_assert(dns1035_label_valid("a-1"));
    cr_assert_not(dns1035_label_valid("1a"));
    cr_assert_not(dns1035_label_valid("a-"));
    cr_assert_not(dns1035_label_valid("A"));
    cr_assert_not(dns1035_label_valid(""));
    cr_assert_not(dns1035_label_valid("a.b"));
    char s64[65];
    memset(s64, 'a', 64);
    s64[64] = 0;
    cr_assert_not(dns1035_label_valid(s64));
    s64[63] = 0;
    cr_assert(dns1035_label_valid(s64));
    cr_assert(dns1123_label_valid("1a"));
    cr_assert_not(dns1123_label_valid("-a"));
    cr_assert(dns1123_subdomain_valid("a.b-c.1"));
    cr_assert_not(dns1123_subdomain_valid("a..b"));
    cr_assert_not(dns1123_subdomain_valid(".a"));
    cr_assert_not(dns1123_subdomain_valid("a."));
    cr_assert_not(dns1123_subdomain_valid("A"));
    cr_assert_not(dns1123_subdomain_valid(""));
}
