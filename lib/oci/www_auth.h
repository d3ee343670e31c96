/* www_auth: the WWW-Authenticate challenge of a registry's 401 answer, and
 * the token its realm answers with.
 *
 * Registries say how to authenticate in it: `Bearer realm="https://auth/
 * token",service="registry",scope="repository:x:pull"` (fetch a token from
 * the realm) or `Basic realm="..."` (send the credentials on every request).
 * Parameters are RFC 7235 auth-params, so quoted values with commas and
 * backslash escapes are parsed, not split naively. */
#ifndef KRM_WWW_AUTH_H
#define KRM_WWW_AUTH_H

#include "core/buf.h"
#include "core/json.h"

typedef enum www_auth_scheme { WWW_AUTH_NONE, WWW_AUTH_BASIC, WWW_AUTH_BEARER, WWW_AUTH_OTHER } www_auth_scheme;

typedef struct www_auth {
    www_auth_scheme scheme;
    char *scheme_name;   /* as sent, for messages */
    char *realm;
    char *service;
    char *scope;
} www_auth;

/* Parses the header's value (the first challenge when there are several).
 * Returns 0 (scheme NONE for an empty value), or -1 with a reason in err. */
int www_auth_parse(const char *value, www_auth *out, buf *err);
void www_auth_free(www_auth *a);

/* The token in the answer of the token service a Bearer challenge's realm
 * names: "token", else "access_token" (OAuth2's name), as Docker reads it.
 * NULL when neither is a non-empty string, or the token holds a control
 * byte: it goes into an Authorization header, where a NUL would cut it and
 * CR/LF add headers. */
const char *www_auth_token_of(const json *answer);

#endif
