/* Fuzzes lib/kube/kubeconfig's reader with any file, long and deeply
 * nested ones included: kube_config_load must either fail with a reason or
 * give a configuration whose every field holds what it promises: a server
 * URL, a namespace that is a DNS-1123 label, a token that may become a
 * header value (core/header_value), the source and the credential kind for
 * messages. The first four bytes stretch the rest (fuzz_stretch: one span
 * repeated, so a seed becomes tens of KiB of "[" or "- " or keys) and pick
 * the --context and --namespace given.
 *
 * The file is written in a private directory beside a token file and a CA
 * (relative paths in the input resolve there); stdin is /dev/null, so a
 * path naming it reads nothing. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/header_value.h"
#include "kube/kubeconfig.h"
#include "kube/pod_id.h"
#include "fuzz_common.h"

#define MAX_INPUT (256u << 10)

static char dir[] = "/tmp/fuzz-kubeconfig-XXXXXX";
static char path[64];
static uint8_t *scratch;

static void write_file(const char *name, const void *data, size_t len)
{
    char p[96];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

static void cleanup(void)
{
    static const char *const names[] = {"config", "token", "ca.pem"};
    char p[96];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void setup(void)
{
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    atexit(cleanup);
    snprintf(path, sizeof path, "%s/config", dir);
    write_file("token", "file-token\n", 11);
    write_file("ca.pem", "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n", 60);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(null >= 0 && dup2(null, 0) == 0);
    close(null);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("HOME", dir, 1);
    scratch = malloc(MAX_INPUT);
    FUZZ_CHECK(scratch != NULL);
}

static void check_loaded(const kube_config *c)
{
    FUZZ_CHECK(c->server && (!strncmp(c->server, "https://", 8) || !strncmp(c->server, "http://", 7)));
    FUZZ_CHECK(c->namespace && dns1123_label_valid(c->namespace));
    FUZZ_CHECK(c->source && c->auth_kind);
    if (c->token) {
        buf err = {0};
        FUZZ_CHECK(header_value_check("token", c->token, strlen(c->token), &err) == 0);
        buf_free(&err);
    }
    FUZZ_CHECK(!c->cert_pem.len == !c->key_pem.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!scratch)
        setup();
    if (size < 4)
        return 0;
    size_t n = fuzz_stretch(data, data + 4, size - 4, scratch, MAX_INPUT);
    write_file("config", scratch, n);
    static const char *const contexts[] = {NULL, "c", "x", ""};
    static const char *const namespaces[] = {NULL, "ns", "", "other"};
    kube_config_opts o = {path, contexts[data[0] & 3], namespaces[(data[0] >> 2) & 3]};
    kube_config c;
    buf err = {0};
    if (kube_config_load(&o, &c, &err) == 0) {
        check_loaded(&c);
        kube_config_free(&c);
    } else {
        FUZZ_CHECK(err.len > 0);
    }
    buf_free(&err);
    return 0;
}
