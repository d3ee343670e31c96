/* docker_config: credentials from config.json; see docker_config.h. */
#include "oci/docker_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base64.h"
#include "core/fdio.h"
#include "core/json.h"

#define CONFIG_MAX_BYTES (4u << 20)

char *docker_config_default_path(void)
{
    const char *dir = getenv("DOCKER_CONFIG");
    const char *home = getenv("HOME");
    buf p = {0};
    if (dir && *dir)
        buf_printf(&p, "%s/config.json", dir);
    else if (home && *home)
        buf_printf(&p, "%s/.docker/config.json", home);
    else
        return NULL;
    return buf_steal(&p, NULL);
}

static int read_file(const char *path, buf *out, buf *err)
{
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, path, 0, CONFIG_MAX_BYTES, out, why) < 0)
        return buf_fail(err, "cannot read Docker config %s: %s", path, why);
    return 0;
}

/* "https://ghcr.io/v1/" -> "ghcr.io" (length returned through n). */
static const char *key_host(const char *key, size_t *n)
{
    const char *p = strstr(key, "://");
    p = p ? p + 3 : key;
    const char *slash = strchr(p, '/');
    *n = slash ? (size_t)(slash - p) : strlen(p);
    return p;
}

static int is_hub_host(const char *h, size_t n)
{
    static const char *const names[] = {"docker.io", "index.docker.io", "registry-1.docker.io"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && !memcmp(h, names[i], n))
            return 1;
    return 0;
}

/* The auths entry for registry: an exact key first, then a key whose host
 * part matches (Docker Hub: any of its names). */
static const json *find_entry(const json *auths, const char *registry)
{
    const json *exact = json_get(auths, registry);
    if (exact || !auths || auths->type != JSON_OBJECT)
        return exact;
    int hub = is_hub_host(registry, strlen(registry));
    const json *found = hub ? json_get(auths, "https://index.docker.io/v1/") : NULL;
    for (size_t i = 0; !found && i < auths->len; i++) {
        size_t n;
        const char *h = key_host(auths->keys[i], &n);
        if (hub ? is_hub_host(h, n) : (strlen(registry) == n && !memcmp(h, registry, n)))
            found = auths->items[i];
    }
    return found;
}

/* Whether the member key of entry is a string with a NUL byte inside:
 * its C string would be another user name or password. */
static int member_has_nul(const json *entry, const char *key)
{
    const json *v = json_get(entry, key);
    return json_str(v) && strlen(v->str) != v->len;
}

static int entry_credentials(const json *entry, const char *path, const char *registry,
                             docker_cred *out, buf *err)
{
    static const char *const secrets[] = {"auth", "username", "password"};
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
        if (member_has_nul(entry, secrets[i]))
            return buf_fail(err, "Docker config %s: auths[\"%s\"].%s has a NUL byte (\\u0000)", path, registry,
                            secrets[i]);
    const char *auth = json_get_str(entry, "auth");
    if (auth && *auth) {
        buf plain = {0};
        char *colon;
        if (base64_decode(auth, strlen(auth), &plain) < 0 || !plain.data || !(colon = strchr(plain.data, ':')) ||
            strlen(plain.data) != plain.len) {
            buf_free(&plain);
            return buf_fail(err, "Docker config %s: auths[\"%s\"].auth is not base64 of \"user:password\" "
                            "(without NUL bytes)", path, registry);
        }
        *colon = '\0';
        out->username = strdup(plain.data);
        out->password = strdup(colon + 1);
        buf_free(&plain);
    } else if (json_get_str(entry, "username")) {
        out->username = strdup(json_get_str(entry, "username"));
        const char *pw = json_get_str(entry, "password");
        out->password = strdup(pw ? pw : "");
    }
    return 0;
}

int docker_config_lookup(const char *path, const char *registry, docker_cred *out, buf *err)
{
    memset(out, 0, sizeof *out);
    char *def = path ? NULL : docker_config_default_path();
    const char *file = path ? path : def;
    buf data = {0}, jerr = {0};
    int rc = 0;
    json *root = NULL;
    if (!file || (!path && access(file, F_OK) != 0))
        goto done;   /* no default file: anonymous */
    out->file = strdup(file);
    if (read_file(file, &data, err) < 0) {
        rc = -1;
        goto done;
    }
    root = json_parse(data.data ? data.data : "", data.len, &jerr);
    if (!root) {
        rc = -1;
        buf_printf(err, "Docker config %s is not valid JSON: %s", file, jerr.data);
        goto done;
    }
    const json *entry = find_entry(json_get(root, "auths"), registry);
    if (entry)
        rc = entry_credentials(entry, file, registry, out, err);
done:
    if (rc < 0)
        docker_cred_free(out);
    json_free(root);
    buf_free(&data);
    buf_free(&jerr);
    free(def);
    return rc;
}

void docker_cred_free(docker_cred *c)
{
    free(c->username);
    free(c->password);
    free(c->file);
    memset(c, 0, sizeof *c);
}
