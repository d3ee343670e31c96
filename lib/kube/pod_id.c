/* pod_id: Porch's podId rule and its repair for invalid names; see pod_id.h. */
#include "kube/pod_id.h"

#include <stdio.h>
#include <string.h>

/* The parts of an image reference Porch's rule uses. Pointers into the
 * image string with lengths (nothing is copied). */
typedef struct ref_parts {
    const char *name;     /* last repository path segment */
    size_t name_len;
    const char *ident;    /* tag, or the digest of a digest reference */
    size_t ident_len;
    int is_digest;
} ref_parts;

/* Splits [registry/]path[:tag][@digest] as go-containerregistry's
 * name.ParseReference does for the pieces podID reads: a digest wins over a
 * tag, and a ':' followed by a '/' belongs to a registry port. */
static int ref_split(const char *image, ref_parts *p, buf *err)
{
    const char *at = strchr(image, '@');
    const char *end = at ? at : image + strlen(image);
    const char *slash = NULL, *colon = NULL;
    for (const char *c = image; c < end; c++) {
        if (*c == '/')
            slash = c, colon = NULL;
        else if (*c == ':')
            colon = c;
    }
    const char *repo_end = colon ? colon : end;
    p->name = slash ? slash + 1 : image;
    p->name_len = (size_t)(repo_end - p->name);
    p->is_digest = at != NULL;
    if (at) {
        p->ident = at + 1;
        p->ident_len = strlen(at + 1);
    } else if (colon) {
        p->ident = colon + 1;
        p->ident_len = (size_t)(end - colon - 1);
    } else {
        p->ident = "latest";
        p->ident_len = 6;
    }
    if (!*image)
        return buf_fail(err, "empty image reference");
    if (!p->name_len)
        return buf_fail(err, "image \"%s\" has no repository name", image);
    if (!p->ident_len)
        return buf_fail(err, "image \"%s\" has an empty %s", image, at ? "digest" : "tag");
    return 0;
}

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The hex of "algo:hex" or "hex", checked to start with 8 lowercase hex. */
static const char *digest_hex(const char *digest, buf *err)
{
    if (!digest || !*digest) {
        buf_fail(err, "empty image digest");
        return NULL;
    }
    const char *colon = strchr(digest, ':');
    const char *hex = colon ? colon + 1 : digest;
    for (int i = 0; i < 8; i++)
        if (!is_lower_hex(hex[i])) {
            buf_fail(err, "invalid image digest \"%s\" (want sha256:<lowercase hex>)", digest);
            return NULL;
        }
    return hex;
}

int pod_id_porch(const char *image, const char *digest, unsigned long postfix, buf *out,
                 buf *err)
{
    ref_parts p;
    const char *hex;
    if (ref_split(image, &p, err) < 0 || !(hex = digest_hex(digest, err)))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < p.name_len; i++)
        rc |= buf_append(out, p.name[i] == '_' ? "-" : &p.name[i], 1);
    rc |= buf_append(out, "-", 1);
    for (size_t i = 0; i < p.ident_len; i++)
        if (p.ident[i] != '.')
            rc |= buf_append(out, &p.ident[i], 1);
    rc |= buf_printf(out, "-%lu-%.8s", postfix, hex);
    return rc ? buf_fail(err, "out of memory") : 0;
}

/* Step 2 of the repair: lowercase, anything outside [a-z0-9-] -> '-'. */
static void append_sanitized(buf *b, const char *s, size_t len, int *rc)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            c = '-';
        *rc |= buf_append(b, &c, 1);
    }
}

/* The repaired head "<name>-<tag>" (steps 1 to 3), not yet cut. */
static int repaired_head(const ref_parts *p, buf *head)
{
    int rc = 0;
    const char *tag = p->ident;
    size_t tag_len = 0;
    if (p->is_digest) {              /* step 1: 8 hex of the reference's digest */
        const char *colon = memchr(p->ident, ':', p->ident_len);
        tag = colon ? colon + 1 : p->ident;
        tag_len = strnlen(tag, 8);
    }
    char c = p->name[0];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        rc |= buf_append_str(head, "fn-");   /* step 3 */
    append_sanitized(head, p->name, p->name_len, &rc);
    rc |= buf_append(head, "-", 1);
    if (p->is_digest) {
        append_sanitized(head, tag, tag_len, &rc);
    } else {
        for (size_t i = 0; i < p->ident_len; i++)
            if (p->ident[i] != '.')
                append_sanitized(head, &p->ident[i], 1, &rc);
    }
    return rc;
}

static int repair(const char *image, const char *hex, unsigned long postfix, char *out,
                  buf *err)
{
    ref_parts p;
    if (ref_split(image, &p, err) < 0)
        return -1;
    char suffix[48];
    int suffix_len = snprintf(suffix, sizeof suffix, "-%lu-%.8s", postfix, hex);
    buf head = {0};
    if (repaired_head(&p, &head) < 0) {
        buf_free(&head);
        return buf_fail(err, "out of memory");
    }
    size_t keep = head.len;
    if (keep > (size_t)(POD_ID_MAX - suffix_len))
        keep = (size_t)(POD_ID_MAX - suffix_len);    /* step 4 */
    while (keep > 1 && head.data[keep - 1] == '-')
        keep--;
    snprintf(out, POD_ID_MAX + 1, "%.*s%s", (int)keep, head.data, suffix);
    buf_free(&head);
    return 0;
}

int pod_id_make(const char *image, const char *digest, unsigned long postfix,
                char out[POD_ID_MAX + 1], buf *err)
{
    buf porch = {0};
    if (pod_id_porch(image, digest, postfix, &porch, err) < 0) {
        buf_free(&porch);
        return -1;
    }
    int rc = 0;
    if (dns1035_label_valid(porch.data))
        memcpy(out, porch.data, porch.len + 1);
    else
        rc = repair(image, digest_hex(digest, err), postfix, out, err);
    buf_free(&porch);
    return rc;
}

const char *pod_id_image_digest(const char *image)
{
    const char *at = strchr(image, '@');
    return at && at[1] ? at + 1 : NULL;
}

/* ---- Kubernetes name rules ---- */

static int is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..len), 1 <= len <= max. */
static int label_ok(const char *s, size_t len, size_t max)
{
    if (len < 1 || len > max || !is_lower_alnum(s[0]) || !is_lower_alnum(s[len - 1]))
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return 0;
    return 1;
}

int dns1123_label_valid(const char *s)
{
    return label_ok(s, strlen(s), 63);
}

int dns1035_label_valid(const char *s)
{
    return s[0] >= 'a' && s[0] <= 'z' && dns1123_label_valid(s);
}

int dns1123_subdomain_valid(const char *s)
{
    size_t len = strlen(s);
    if (len < 1 || len > 253)
        return 0;
    for (const char *part = s;;) {   /* dot-separated labels, no length of their own */
        const char *dot = strchr(part, '.');
        size_t n = dot ? (size_t)(dot - part) : strlen(part);
        if (!label_ok(part, n, 253))
            return 0;
        if (!dot)
            return 1;
        part = dot + 1;
    }
}
