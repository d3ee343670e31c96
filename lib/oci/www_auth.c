/* www_auth: WWW-Authenticate challenge parsing; see www_auth.h. */
#include "oci/www_auth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_token_char(char c)
{
    return c > ' ' && c < 0x7F && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A quoted-string at p (at the quote); its unescaped value in out. */
static const char *quoted(const char *p, buf *out)
{
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        if (buf_append(out, p, 1) < 0)
            return NULL;
    }
    return *p == '"' ? p + 1 : NULL;
}

static void set_param(www_auth *a, const char *name, size_t n, buf *value)
{
    char **slot = n == 5 && !strncasecmp(name, "realm", 5) ? &a->realm
                : n == 7 && !strncasecmp(name, "service", 7) ? &a->service
                : n == 5 && !strncasecmp(name, "scope", 5) ? &a->scope : NULL;
    if (slot && !*slot)
        *slot = buf_steal(value, NULL);
}

/* name=value pairs after the scheme, until the end or the next challenge. */
static int parse_params(const char *p, www_auth *a, buf *err)
{
    while (*(p = skip_ows(p))) {
        if (*p == ',') {
            p++;
            continue;
        }
        const char *name = p;
        while (is_token_char(*p))
            p++;
        size_t n = (size_t)(p - name);
        p = skip_ows(p);
        if (n == 0 || *p != '=')
            return n ? 0 : (buf_printf(err, "malformed WWW-Authenticate parameter at \"%s\"", name), -1);
        p = skip_ows(p + 1);
        buf value = {0};
        if (*p == '"') {
            p = quoted(p, &value);
        } else {
            const char *v = p;
            while (is_token_char(*p))
                p++;
            buf_append(&value, v, (size_t)(p - v));
        }
        if (!p) {
            buf_free(&value);
            return buf_fail(err, "unterminated quoted string in WWW-Authenticate");
        }
        set_param(a, name, n, &value);
        buf_free(&value);
    }
    return 0;
}

int www_auth_parse(const char *value, www_auth *out, buf *err)
{
    memset(out, 0, sizeof *out);
    const char *p = skip_ows(value);
    const char *scheme = p;
    while (is_token_char(*p))
        p++;
    size_t n = (size_t)(p - scheme);
    if (n == 0)
        return *p ? (buf_printf(err, "malformed WWW-Authenticate \"%s\"", value), -1) : 0;
    out->scheme_name = strndup(scheme, n);
    out->scheme = n == 5 && !strncasecmp(scheme, "Basic", 5) ? WWW_AUTH_BASIC
                : n == 6 && !strncasecmp(scheme, "Bearer", 6) ? WWW_AUTH_BEARER : WWW_AUTH_OTHER;
    if (parse_params(p, out, err) < 0) {
        www_auth_free(out);
        return -1;
    }
    return 0;
}

void www_auth_free(www_auth *a)
{
    free(a->scheme_name);
    free(a->realm);
    free(a->service);
    free(a->scope);
    memset(a, 0, sizeof *a);
}

const char *www_auth_token_of(const json *answer)
{
    const json *tok = json_get(answer, "token");
    if (!json_str(tok) || !tok->len)
        tok = json_get(answer, "access_token");
    /* it goes into an Authorization header: no NUL (it would cut it), no
     * control byte (it would add headers) */
    for (size_t i = 0; json_str(tok) && i < tok->len; i++)
        if ((unsigned char)tok->str[i] < 0x20 || tok->str[i] == 0x7f)
            return NULL;
    return json_str(tok) && tok->len ? tok->str : NULL;
}
