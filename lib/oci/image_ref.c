/* image_ref: Docker-convention image reference parsing; see image_ref.h. */
#include "oci/image_ref.h"

#include <stdlib.h>
#include <string.h>

#include "core/go_quote.h"

#define NAME_MAX_LEN 255   /* registry + "/" + repository, as Docker limits it */
#define TAG_MAX_LEN 128

static int is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static int is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
static int is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static int component_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (!is_lower_alnum(s[i]))
            return 0;
        while (i < n && is_lower_alnum(s[i]))
            i++;
        if (i == n)
            return 1;
        size_t sep = i;
        if (s[i] == '.')
            i++;
        else if (s[i] == '_')
            i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
        else
            while (i < n && s[i] == '-')
                i++;
        if (i == sep || i == n)
            return 0;
    }
    return n > 0;
}

static int has_upper(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z')
            return 1;
    return 0;
}

static int repository_check(const char *ref, const char *repo, size_t n, buf *err)
{
    if (n == 0)
        return buf_fail(err, "invalid image reference \"%s\": empty repository name", ref);
    if (has_upper(repo, n))
        return buf_fail(err, "invalid image reference \"%s\": repository name \"%.*s\" must be lowercase",
                        ref, (int)n, repo);
    for (size_t i = 0; i <= n;) {
        const char *slash = memchr(repo + i, '/', n - i);
        size_t len = slash ? (size_t)(slash - (repo + i)) : n - i;
        if (!component_ok(repo + i, len))
            return buf_fail(err, "invalid image reference \"%s\": repository name \"%.*s\" has an invalid "
                            "component \"%.*s\" (lowercase letters and digits, separated by '.', '_', '__' "
                            "or '-')", ref, (int)n, repo, (int)len, repo + i);
        i += len + 1;
    }
    return 0;
}

static int tag_check(const char *ref, const char *tag, size_t n, buf *err)
{
    int ok = n >= 1 && n <= TAG_MAX_LEN && (is_alnum(tag[0]) || tag[0] == '_');
    for (size_t i = 1; ok && i < n; i++)
        ok = is_alnum(tag[i]) || tag[i] == '_' || tag[i] == '.' || tag[i] == '-';
    if (!ok)
        buf_printf(err, "invalid image reference \"%s\": invalid tag \"%.*s\" (letters, digits, '_', '.' and "
                   "'-', not starting with '.' or '-', at most 128 characters)", ref, (int)n, tag);
    return ok ? 0 : -1;
}

static int digest_check(const char *ref, const char *d, buf *err)
{
    const char *colon = strchr(d, ':');
    if (!colon || colon == d)
        return buf_fail(err, "invalid image reference \"%s\": invalid digest \"%s\" (want sha256:<64 hex digits>)",
                        ref, d);
    if ((size_t)(colon - d) != 6 || strncmp(d, "sha256", 6))
        return buf_fail(err, "invalid image reference \"%s\": unsupported digest algorithm \"%.*s\" (only sha256)",
                        ref, (int)(colon - d), d);
    size_t n = strlen(colon + 1);
    int ok = n == 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = is_hex(colon[1 + i]);
    if (!ok)
        buf_printf(err, "invalid image reference \"%s\": invalid digest \"%s\" (want sha256:<64 lowercase hex digits>)",
                   ref, d);
    return ok ? 0 : -1;
}

/* host[:port] or [v6][:port]: letters, digits, '-', '.', and a numeric port. */
static int registry_check(const char *ref, const char *h, size_t n, buf *err)
{
    size_t i = 0;
    if (n && h[0] == '[') {
        const char *close = memchr(h, ']', n);
        if (!close || close == h + 1)
            goto bad;
        for (const char *p = h + 1; p < close; p++)
            if (!is_hex(*p) && !(*p >= 'A' && *p <= 'F') && *p != ':' && *p != '.')
                goto bad;
        i = (size_t)(close - h) + 1;
    } else {
        for (; i < n && h[i] != ':'; i++)
            if (!is_alnum(h[i]) && h[i] != '-' && h[i] != '.')
                goto bad;
        if (i == 0 || h[0] == '-' || h[0] == '.' || h[i - 1] == '-' || h[i - 1] == '.')
            goto bad;
    }
    if (i == n)
        return 0;
    if (h[i] != ':' || i + 1 == n || n - i - 1 > 5)
        goto bad;
    for (i++; i < n; i++)
        if (h[i] < '0' || h[i] > '9')
            goto bad;
    return 0;
bad:
    buf_printf(err, "invalid image reference \"%s\": invalid registry host \"%.*s\"", ref, (int)n, h);
    return -1;
}

/* Whether the first path component names a registry (Docker's rule). */
static int looks_like_host(const char *s, size_t n)
{
    return memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && !memcmp(s, "localhost", 9)) || (n && s[0] == '[');
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* Splits "name[:tag]" (digest already removed) into registry, repository, tag. */
static int split_name(const char *ref, const char *s, size_t n, image_ref *out, buf *err)
{
    const char *slash = memchr(s, '/', n);
    const char *reg = IMAGE_REF_DOCKER_HUB, *path = s;
    size_t reg_len = strlen(reg);
    if (slash && looks_like_host(s, (size_t)(slash - s))) {
        reg = s, reg_len = (size_t)(slash - s), path = slash + 1;
        if (registry_check(ref, reg, reg_len, err) < 0)
            return -1;
    }
    size_t path_len = n - (size_t)(path - s);
    const char *last_slash = path;
    for (const char *p = path; p < path + path_len; p++)
        if (*p == '/')
            last_slash = p;
    const char *colon = memchr(last_slash, ':', path_len - (size_t)(last_slash - path));
    size_t repo_len = colon ? (size_t)(colon - path) : path_len;
    if (colon && tag_check(ref, colon + 1, path_len - repo_len - 1, err) < 0)
        return -1;
    if (repository_check(ref, path, repo_len, err) < 0)
        return -1;
    int hub = reg_len == 9 && !memcmp(reg, "docker.io", 9);
    hub = hub || (reg_len == 15 && !memcmp(reg, "index.docker.io", 15));
    int library = hub && !memchr(path, '/', repo_len);
    if (reg_len + 1 + (library ? 8 : 0) + repo_len > NAME_MAX_LEN)
        return buf_fail(err, "invalid image reference \"%s\": repository name longer than %d characters",
                        ref, NAME_MAX_LEN);
    out->registry = hub ? strdup(IMAGE_REF_DOCKER_HUB) : dup_n(reg, reg_len);
    out->api_host = hub ? strdup(IMAGE_REF_DOCKER_HUB_API) : dup_n(reg, reg_len);
    buf repo = {0};
    buf_printf(&repo, "%s%.*s", library ? "library/" : "", (int)repo_len, path);
    out->repository = buf_steal(&repo, NULL);
    if (colon)
        out->tag = dup_n(colon + 1, path_len - repo_len - 1);
    return 0;
}

/* Parses the NUL-terminated s, which has no other NUL. */
static int parse_text(const char *s, image_ref *out, buf *err)
{
    memset(out, 0, sizeof *out);
    size_t n = strlen(s);
    if (n == 0)
        return buf_fail(err, "invalid image reference \"\": empty");
    const char *at = strchr(s, '@');
    size_t name_len = at ? (size_t)(at - s) : n;
    if (at && digest_check(s, at + 1, err) < 0)
        return -1;
    if (split_name(s, s, name_len, out, err) < 0) {
        image_ref_free(out);
        return -1;
    }
    if (at)
        out->digest = strdup(at + 1);
    if (!out->tag && !at)
        out->tag = strdup("latest");
    if (!out->registry || !out->api_host || !out->repository || (!out->tag && !out->digest) ||
        (at && !out->digest)) {
        image_ref_free(out);
        return buf_fail(err, "out of memory parsing image reference \"%s\"", s);
    }
    return 0;
}

int image_ref_parse_n(const char *s, size_t n, image_ref *out, buf *err)
{
    memset(out, 0, sizeof *out);
    const char *nul = memchr(s, '\0', n);
    if (nul) {   /* the C string would name another image: refuse, never cut */
        buf_append_str(err, "invalid image reference ");
        go_quote_bytes(s, n, err);
        buf_printf(err, ": NUL byte (\\x00) at offset %zu", (size_t)(nul - s));
        return -1;
    }
    char *text = dup_n(s, n);
    if (!text)
        return buf_fail(err, "out of memory parsing an image reference");
    int rc = parse_text(text, out, err);
    free(text);
    return rc;
}

int image_ref_parse(const char *s, image_ref *out, buf *err)
{
    return image_ref_parse_n(s, strlen(s), out, err);
}

void image_ref_free(image_ref *r)
{
    free(r->registry);
    free(r->api_host);
    free(r->repository);
    free(r->tag);
    free(r->digest);
    memset(r, 0, sizeof *r);
}

int image_ref_check_n(const char *s, size_t n, buf *err)
{
    image_ref r;
    if (image_ref_parse_n(s, n, &r, err) < 0)
        return -1;
    image_ref_free(&r);
    return 0;
}

int image_ref_check(const char *s, buf *err)
{
    return image_ref_check_n(s, strlen(s), err);
}

const char *image_ref_reference(const image_ref *r)
{
    return r->digest ? r->digest : r->tag;
}

int image_ref_is_docker_hub(const image_ref *r)
{
    return !strcmp(r->registry, IMAGE_REF_DOCKER_HUB);
}
