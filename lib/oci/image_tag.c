/* image_tag: kpt's ResolveFunctionImage without the listing; see image_tag.h. */
#include "oci/image_tag.h"

#include <string.h>

#include "core/go_quote.h"
#include "core/semver.h"
#include "oci/image_ref.h"

/* kpt's words for a literal that is no tag (distribution's TagRegexp) */
/* of a peer's image or tag in a message */
#define SHOWN 200

#define TAG_RULE "must start with an alphanumeric character or underscore, followed by at " \
                 "most 127 alphanumeric characters, underscores, periods, or dashes"

size_t image_tag_name_len(const char *image)
{
    size_t n = strcspn(image, "@");
    const char *slash = memrchr(image, '/', n);
    size_t from = slash ? (size_t)(slash - image) + 1 : 0;
    const char *colon = memrchr(image + from, ':', n - from);
    return colon ? (size_t)(colon - image) : n;
}

static int is_word(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* [\w][\w.-]{0,127}, the whole of it */
static int valid_tag(const char *tag)
{
    size_t n = strlen(tag);
    if (!n || n > 128 || !is_word((unsigned char)tag[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!is_word((unsigned char)tag[i]) && tag[i] != '.' && tag[i] != '-')
            return 0;
    return 1;
}

int image_tag_apply(const char *image, const char *tag, buf *out, buf *err)
{
    buf why = {0};
    if (image_ref_check(image, &why) < 0) {
        buf_append_str(err, "failed to parse image ");
        go_quote_at_most(image, strlen(image), SHOWN, err);
        buf_printf(err, " as reference: %s", why.data ? why.data : "");
        buf_free(&why);
        return -1;
    }
    size_t name_len = image_tag_name_len(image);
    semver v;
    if (semver_parse(tag, &v, NULL) < 0) {
        semver_constraint *c = semver_constraint_parse(tag, &why);
        buf_free(&why);
        if (c) {
            semver_constraint_free(c);
            return buf_printf(out, "%.*s", (int)name_len, image) < 0 ? -1 : 0;
        }
    }
    /* an exact version, or a word used literally (kpt warns and goes on) */
    if (!valid_tag(tag)) {
        buf_append_str(err, "`function.tag` ");
        go_quote_at_most(tag, strlen(tag), SHOWN, err);
        buf_append_str(err, " must be a valid image tag: " TAG_RULE);
        return -1;
    }
    return buf_printf(out, "%.*s:%s", (int)name_len, image, tag) < 0 ? -1 : 1;
}
