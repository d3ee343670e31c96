/* Unit tests for image_tag: a request's Tag applied to its image as kpt's
 * ResolveFunctionImage applies it, without the listing. */
#include <criterion/criterion.h>

#include "oci/image_tag.h"

static int apply(const char *image, const char *tag, buf *out, buf *err)
{
    *out = (buf){0};
    *err = (buf){0};
    return image_tag_apply(image, tag, out, err);
}

Test(image_tag, exact_versions_and_literals_replace_tag_and_digest)
{
    buf out, err;
    cr_assert_eq(apply("example.com/fn:v0", "v1.2.3", &out, &err), 1);
    cr_assert_str_eq(out.data, "example.com/fn:v1.2.3");
    buf_free(&out);
    cr_assert_eq(apply("localhost:5000/a/fn@sha256:" "0123456789abcdef0123456789abcdef"
                       "0123456789abcdef0123456789abcdef", "latest", &out, &err), 1);
    cr_assert_str_eq(out.data, "localhost:5000/a/fn:latest", "the port is no tag; the digest goes");
    buf_free(&out);
}

Test(image_tag, a_constraint_asks_for_the_repository)
{
    buf out, err;
    cr_assert_eq(apply("localhost:5000/fn:v9", "^1.2", &out, &err), 0);
    cr_assert_str_eq(out.data, "localhost:5000/fn");
    buf_free(&out);
}

Test(image_tag, bad_tags_and_images_in_kpts_words)
{
    buf out, err;
    cr_assert_eq(apply("fn", "bad tag", &out, &err), -1);
    cr_assert_str_eq(err.data, "`function.tag` \"bad tag\" must be a valid image tag: must start with "
                     "an alphanumeric character or underscore, followed by at most 127 alphanumeric "
                     "characters, underscores, periods, or dashes");
    buf_free(&err);
    cr_assert_eq(apply("Bad Image", "v1", &out, &err), -1);
    cr_assert(!strncmp(err.data, "failed to parse image \"Bad Image\" as reference: ", 48), "%s", err.data);
    buf_free(&err);
    char long_tag[130];
    memset(long_tag, 'a', 129);
    long_tag[129] = '\0';
    cr_assert_eq(apply("fn", long_tag, &out, &err), -1, "129 characters");
    buf_free(&err);
}
