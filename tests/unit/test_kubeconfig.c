/* Unit tests for lib/kube/kubeconfig: where the configuration is found
 * (--kubeconfig, KUBECONFIG merged first-wins, ~/.kube/config, in-cluster),
 * what is read from it (relative paths, data vs file), exec plugins, and
 * the text of every error. Fixtures are in tests/fixtures/kubeconfig
 * (relative to the repository root, where the tests run); error cases are
 * small files written to a temporary directory. Criterion runs each test
 * in its own process, so changing the environment stays local. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kube/kubeconfig.h"

#define FIX "tests/fixtures/kubeconfig"

static void clean_env(void)
{
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    setenv("HOME", "/nonexistent-home", 1);
}

static kube_config load_ok(const kube_config_opts *o)
{
    kube_config c;
    buf err = {0};
    int rc = kube_config_load(o, &c, &err);
    cr_assert_eq(rc, 0, "kube_config_load failed: %s", err.data);
    buf_free(&err);
    return c;
}

/* Loads text written to a temporary file; returns the error text. */
static char *load_err_text(const char *text, const kube_config_opts *extra)
{
    char dir[] = "/tmp/kcfg-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/config", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    kube_config_opts o = extra ? *extra : (kube_config_opts){0};
    o.kubeconfig = path;
    kube_config c;
    buf err = {0};
    cr_assert_eq(kube_config_load(&o, &c, &err), -1, "loaded:\n%s", text);
    cr_assert_null(c.server);
    unlink(path);
    rmdir(dir);
    /* the temporary directory's name varies: keep what follows it */
    const char *rest = strstr(err.data, "/config");
    char *out = strdup(rest ? rest + 1 : err.data);
    buf_free(&err);
    return out;
}

#define HEAD "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
#define CLUSTER "clusters:\n- name: c\n  cluster: {server: \"https://s\"}\n"
#define CTX "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"

static void expect_err(const char *text, const char *want)
{
    char *got = load_err_text(text, NULL);
    cr_assert_str_eq(got, want, "input:\n%s", text);
    free(got);
}

/* ------------------------------------------------------------------------ */

Test(kubeconfig, explicit_file_current_context_relative_ca)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/a.yaml"};
    kube_config c = load_ok(&o);
    cr_assert_str_eq(c.server, "https://a.example:6443");   /* trailing '/' dropped */
    cr_assert_str_eq(c.token, "tok-a");
    cr_assert_str_eq(c.namespace, "ns-a");
    cr_assert_eq(c.ca_pem.len, 5);
    cr_assert_str_eq(c.ca_pem.data, "CA-A\n");   /* ca.pem beside a.yaml, not in the cwd */
    cr_assert_str_eq(c.auth_kind, "bearer token");
    cr_assert_str_eq(c.source, "kubeconfig " FIX "/a.yaml, context \"ctx-a\", user \"u1\"");
    cr_assert_eq(c.insecure, 0);
    cr_assert_null(c.exec.command);
    kube_config_free(&c);
}

Test(kubeconfig, merge_first_file_wins)
{
    clean_env();
    setenv("KUBECONFIG", FIX "/missing.yaml:" FIX "/b.yaml:" FIX "/a.yaml", 1);
    kube_config c = load_ok(NULL);
    /* current-context from b (the first that sets it); c2 and u2 are b's */
    cr_assert_str_eq(c.server, "https://b2.example:443");
    cr_assert_str_eq(c.ca_pem.data, "CA-B\n");
    cr_assert_str_eq(c.tls_server_name, "api.internal");
    cr_assert_str_eq(c.cert_pem.data, "CERT\n");
    cr_assert_str_eq(c.key_pem.data, "KEY\n");
    cr_assert_str_eq(c.auth_kind, "client certificate");
    cr_assert_str_eq(c.namespace, "default");
    cr_assert_null(c.token);
    kube_config_free(&c);

    /* a first: its current-context, its "shared" and its c1 win */
    setenv("KUBECONFIG", FIX "/a.yaml:" FIX "/b.yaml", 1);
    kube_config_opts o = {.context = "shared"};
    c = load_ok(&o);
    cr_assert_str_eq(c.server, "https://a.example:6443");
    cr_assert_str_eq(c.namespace, "default");
    kube_config_free(&c);

    /* a context only b defines, pointing at c1, which a defines first */
    o.context = "ctx-b";
    c = load_ok(&o);
    cr_assert_str_eq(c.server, "https://b2.example:443");
    kube_config_free(&c);
}

Test(kubeconfig, namespace_flag_wins)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/a.yaml", .namespace = "mine"};
    kube_config c = load_ok(&o);
    cr_assert_str_eq(c.namespace, "mine");
    kube_config_free(&c);
}

Test(kubeconfig, json_token_file_insecure)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/json.json"};
    kube_config c = load_ok(&o);
    cr_assert_str_eq(c.server, "https://j.example");
    cr_assert_eq(c.insecure, 1);
    cr_assert_str_eq(c.token, "file-token");   /* the newline dropped */
    cr_assert_str_eq(c.token_file, FIX "/token.txt");
    cr_assert_str_eq(c.auth_kind, "token file " FIX "/token.txt");
    cr_assert_str_eq(c.namespace, "jns");
    cr_assert_eq(c.ca_pem.len, 0);
    kube_config_free(&c);
}

Test(kubeconfig, home_config)
{
    clean_env();
    char dir[] = "/tmp/kcfg-home-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char sub[80], path[96];
    snprintf(sub, sizeof sub, "%s/.kube", dir);
    snprintf(path, sizeof path, "%s/config", sub);
    mkdir(sub, 0700);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(HEAD CLUSTER CTX "users:\n- name: u\n  user: {token: home}\n", f);
    fclose(f);
    setenv("HOME", dir, 1);
    kube_config c = load_ok(NULL);
    cr_assert_str_eq(c.server, "https://s");
    cr_assert_str_eq(c.token, "home");
    kube_config_free(&c);
    unlink(path);
    rmdir(sub);
    rmdir(dir);
}

/* A service account directory as the kubelet mounts it (token, ca.crt,
 * namespace with these contents) made from the template dir (mkdtemp), and the
 * environment of a pod that has it. */
static const char *const sa_names[] = {"token", "ca.crt", "namespace"};

static void write_sa_dir(char *dir, const char *const texts[3])
{
    clean_env();
    cr_assert_not_null(mkdtemp(dir));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    kube_config_test_overrides(dir, 0);
    char p[96];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, sa_names[i]);
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fputs(texts[i], f);
        fclose(f);
    }
}

static void remove_sa_dir(const char *dir)
{
    char p[96];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, sa_names[i]);
        unlink(p);
    }
    rmdir(dir);
}

Test(kubeconfig, in_cluster)
{
    char dir[] = "/tmp/kcfg-sa-XXXXXX", p[96];
    const char *const texts[] = {"sa-token\n", "SA-CA\n", "fn-ns\n"};
    write_sa_dir(dir, texts);
    kube_config c = load_ok(NULL);
    cr_assert_str_eq(c.server, "https://10.96.0.1:443");
    cr_assert_str_eq(c.token, "sa-token");
    cr_assert_str_eq(c.ca_pem.data, "SA-CA\n");
    cr_assert_str_eq(c.namespace, "fn-ns");
    cr_assert(strstr(c.source, "in-cluster service account"));
    cr_assert(strstr(c.auth_kind, "service account token"));
    kube_config_free(&c);

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    c = load_ok(NULL);
    cr_assert_str_eq(c.server, "https://[fd00::1]:443");
    kube_config_free(&c);

    snprintf(p, sizeof p, "%s/token", dir);
    unlink(p);
    buf err = {0};
    cr_assert_eq(kube_config_load(NULL, &c, &err), -1);
    char want[160];
    snprintf(want, sizeof want, "in-cluster: %s/token: No such file or directory", dir);
    cr_assert_str_eq(err.data, want);
    buf_free(&err);
    remove_sa_dir(dir);
}

Test(kubeconfig, nothing_found)
{
    clean_env();
    kube_config c;
    buf err = {0};
    cr_assert_eq(kube_config_load(NULL, &c, &err), -1);
    cr_assert_str_eq(err.data, "no Kubernetes configuration found: no --kubeconfig, KUBECONFIG is "
                     "unset, /nonexistent-home/.kube/config does not exist, and not running in a "
                     "cluster (KUBERNETES_SERVICE_HOST is unset)");
    buf_free(&err);

    setenv("KUBECONFIG", "/nope1:/nope2", 1);
    cr_assert_eq(kube_config_load(NULL, &c, &err), -1);
    cr_assert_str_eq(err.data, "KUBECONFIG=/nope1:/nope2: none of its files exists");
    buf_free(&err);

    kube_config_opts o = {.kubeconfig = "/nope3"};
    cr_assert_eq(kube_config_load(&o, &c, &err), -1);
    cr_assert_str_eq(err.data, "/nope3: No such file or directory");
    buf_free(&err);
}

Test(kubeconfig, exec_plugin)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/exec.yaml"};
    kube_config c = load_ok(&o);
    cr_assert_str_eq(c.exec.command, FIX "/./exec-plugin.sh");
    cr_assert_str_eq(c.exec.api_version, "client.authentication.k8s.io/v1beta1");
    cr_assert_str_eq(c.exec.args[0], "token");
    cr_assert_null(c.exec.args[1]);
    cr_assert_str_eq(c.exec.env[0], "PLUGIN_GREETING=hello");
    cr_assert_str_eq(c.auth_kind, "exec plugin " FIX "/./exec-plugin.sh");
    cr_assert_null(c.token);
    buf err = {0};
    cr_assert_eq(kube_config_exec_credential(&c, &err), 0, "%s", err.data);
    cr_assert_str_eq(c.token, "exec-hello");

    free(c.token);
    c.token = NULL;
    free(c.exec.args[0]);
    c.exec.args[0] = strdup("cert");
    cr_assert_eq(kube_config_exec_credential(&c, &err), 0, "%s", err.data);
    cr_assert_str_eq(c.cert_pem.data, "C");
    cr_assert_str_eq(c.key_pem.data, "K");
    kube_config_free(&c);
}

static char *exec_err(const char *mode, const char *command)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/exec.yaml"};
    kube_config c = load_ok(&o);
    free(c.exec.args[0]);
    c.exec.args[0] = strdup(mode);
    if (command) {
        free(c.exec.command);
        c.exec.command = strdup(command);
    }
    buf err = {0};
    cr_assert_eq(kube_config_exec_credential(&c, &err), -1, "mode %s", mode);
    kube_config_free(&c);
    return buf_steal(&err, NULL);
}

#define EXEC_PFX "exec credential plugin " FIX "/./exec-plugin.sh (client.authentication.k8s.io/v1beta1, " \
                 "user in kubeconfig " FIX "/exec.yaml, context \"e\", user \"eu\"): "

Test(kubeconfig, exec_plugin_errors)
{
    char *e = exec_err("fail", NULL);
    cr_assert_str_eq(e, EXEC_PFX "exited with status 4; stderr: login expired: run login");
    free(e);
    e = exec_err("garbage", NULL);
    cr_assert(strncmp(e, EXEC_PFX "its output is not JSON (offset ", strlen(EXEC_PFX) + 31) == 0, "%s", e);
    free(e);
    e = exec_err("wrongkind", NULL);
    cr_assert_str_eq(e, EXEC_PFX "its output has kind \"Other\", not ExecCredential");
    free(e);
    e = exec_err("empty", NULL);
    cr_assert_str_eq(e, EXEC_PFX "its ExecCredential has neither status.token nor "
                     "status.clientCertificateData with status.clientKeyData");
    free(e);
    e = exec_err("token", "no-such-plugin-xyz");
    cr_assert_str_eq(e, "exec credential plugin no-such-plugin-xyz (client.authentication.k8s.io/v1beta1, "
                     "user in kubeconfig " FIX "/exec.yaml, context \"e\", user \"eu\"): cannot be run: "
                     "No such file or directory (installHint: install it from the fixtures)");
    free(e);
    kube_config_test_overrides(NULL, 300);
    e = exec_err("hang", NULL);
    cr_assert_str_eq(e, EXEC_PFX "did not finish within 300 ms (killed)");
    free(e);
}

Test(kubeconfig, field_errors)
{
    clean_env();
    expect_err("[1, 2]", "config: must be a mapping (a kubeconfig), not a list");
    expect_err("a: [\n", "config: line 2, column 1: did not find expected node content");
    expect_err("clusters: {}\n", "config: clusters: must be a list, not a mapping");
    expect_err("clusters:\n- cluster: {}\n", "config: clusters[0].name: must be a string, not null");
    expect_err("users:\n- name: u\n  user: [x]\n", "config: users[0].user: must be a mapping, not a list");
    expect_err("current-context: 7\n", "config: current-context: must be a string, not a number");
    expect_err("apiVersion: v1\n", "config: no current-context is set and --context was not given");
    expect_err(HEAD, "config: current-context: context \"x\" is not defined in contexts");
    expect_err(HEAD "contexts:\n- name: x\n  context: {user: u}\n",
               "config: contexts[0] (\"x\").context.cluster: required (the name of an entry in clusters)");
    expect_err(HEAD CTX, "config: contexts[0] (\"x\").context.cluster: cluster \"c\" is not defined in clusters");
    expect_err(HEAD CLUSTER CTX, "config: contexts[0] (\"x\").context.user: user \"u\" is not defined in users");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {}\n",
               "config: clusters[0] (\"c\").cluster.server: required (the API server's https://host:port)");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {server: s.example}\n",
               "config: clusters[0] (\"c\").cluster.server: must be an https:// (or http://) URL, not \"s.example\"");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {server: \"https://s\", insecure-skip-tls-verify: maybe}\n",
               "config: clusters[0] (\"c\").cluster.insecure-skip-tls-verify: must be a boolean, not a string");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {server: \"https://s\", certificate-authority-data: \"!!\"}\n",
               "config: clusters[0] (\"c\").cluster.certificate-authority-data: is not valid base64");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {server: \"https://s\", insecure-skip-tls-verify: true, "
               "certificate-authority-data: QQ==}\n",
               "config: clusters[0] (\"c\").cluster.insecure-skip-tls-verify: true together with "
               "certificate-authority-data: give one of them (kubectl refuses both)");
    expect_err(HEAD CTX "clusters:\n- name: c\n  cluster: {server: \"https://s\", certificate-authority-data: QQ==, "
               "certificate-authority: x}\n",
               "config: clusters[0] (\"c\").cluster.certificate-authority-data: given together with "
               "certificate-authority; give one of them");
#define USER(body) HEAD CLUSTER CTX "users:\n- name: u\n  user: " body "\n"
    expect_err(USER("{token: 12}"), "config: users[0] (\"u\").user.token: must be a string, not a number");
    expect_err(USER("{client-certificate-data: QQ==}"),
               "config: users[0] (\"u\").user.client-certificate-data: given without client-key or client-key-data");
    expect_err(USER("{exec: {apiVersion: client.authentication.k8s.io/v1}}"),
               "config: users[0] (\"u\").user.exec.command: required");
    expect_err(USER("{exec: {command: x, apiVersion: client.authentication.k8s.io/v1alpha1}}"),
               "config: users[0] (\"u\").user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" is "
               "not supported (client.authentication.k8s.io/v1 or v1beta1)");
    expect_err(USER("{exec: {command: x, apiVersion: client.authentication.k8s.io/v1, args: [1]}}"),
               "config: users[0] (\"u\").user.exec.args[0]: must be a string, not a number");
    expect_err(USER("{exec: {command: x, apiVersion: client.authentication.k8s.io/v1, env: [{value: v}]}}"),
               "config: users[0] (\"u\").user.exec.env[0].name: required, without '='");
    expect_err(USER("{exec: 3}"), "config: users[0] (\"u\").user.exec: must be a mapping, not a number");
}

/* Relative paths name files beside the kubeconfig: the message shows the
 * path that was tried. */
Test(kubeconfig, relative_path_errors)
{
    clean_env();
    char *e = load_err_text(HEAD CTX "clusters:\n- name: c\n  cluster: {server: \"https://s\", "
                            "certificate-authority: ca.pem}\n", NULL);
    cr_assert(strstr(e, "config: clusters[0] (\"c\").cluster.certificate-authority: /tmp/kcfg-"), "%s", e);
    cr_assert(strstr(e, "/ca.pem: No such file or directory"), "%s", e);
    free(e);
    e = load_err_text(USER("{client-key: k.pem}"), NULL);
    cr_assert(strstr(e, "config: users[0] (\"u\").user.client-key: /tmp/kcfg-"), "%s", e);
    cr_assert(strstr(e, "/k.pem: No such file or directory"), "%s", e);
    free(e);
    e = load_err_text(USER("{tokenFile: t}"), NULL);
    cr_assert(strstr(e, "config: users[0] (\"u\").user.tokenFile: /tmp/kcfg-"), "%s", e);
    free(e);
    kube_config_opts o = {.context = "other"};
    e = load_err_text(HEAD, &o);
    cr_assert_str_eq(e, "config: --context: context \"other\" is not defined in contexts");
    free(e);
}

/* ------------------------------------------------------------------------ */
/* Tokens become a header line: control bytes are refused at each source    */

Test(kubeconfig, token_control_bytes_refused)
{
    clean_env();
    expect_err(USER("{token: \"tok\\r\\nX-Injected: 1\"}"),
               "config: users[0] (\"u\").user.token: the token contains a control byte (0x0d at byte "
               "3 of 18), which would end or split the HTTP header it is sent in: refused");
    expect_err(USER("{token: \"a\\x7f\"}"),
               "config: users[0] (\"u\").user.token: the token contains a control byte (0x7f at byte "
               "1 of 2), which would end or split the HTTP header it is sent in: refused");
    /* a token file: its trailing line break is dropped, one inside is not */
    char dir[] = "/tmp/kcfg-tok-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char tok[64], cfgp[64];
    snprintf(tok, sizeof tok, "%s/token", dir);
    snprintf(cfgp, sizeof cfgp, "%s/config", dir);
    FILE *f = fopen(tok, "w");
    fputs("good\r\nX-Injected: 1\n", f);
    fclose(f);
    f = fopen(cfgp, "w");
    fputs(USER("{tokenFile: token}"), f);
    fclose(f);
    kube_config_opts o = {.kubeconfig = cfgp};
    kube_config c;
    buf err = {0};
    cr_assert_eq(kube_config_load(&o, &c, &err), -1);
    cr_assert(strstr(err.data, "user.tokenFile: ") && strstr(err.data, "/token: the token contains a "
              "control byte (0x0d at byte 4 of 19)"), "%s", err.data);
    buf_free(&err);
    unlink(tok);
    unlink(cfgp);
    rmdir(dir);
}

Test(kubeconfig, exec_token_control_bytes_refused)
{
    char *e = exec_err("crlf", NULL);
    cr_assert_str_eq(e, EXEC_PFX "its ExecCredential's status.token contains a control byte (0x0d at "
                     "byte 3 of 18), which would end or split the HTTP header it is sent in: refused");
    free(e);
    e = exec_err("nul", NULL);
    cr_assert_str_eq(e, EXEC_PFX "its ExecCredential's status.token contains a control byte (0x00 at "
                     "byte 3 of 8), which would end or split the HTTP header it is sent in: refused");
    free(e);
}

/* Whether pid is a live process (a zombie is not). */
static int alive(long pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')');
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

/* Reads the pids the plugin wrote; waits up to 2 s for each to be gone. */
static void expect_all_gone(const char *pidfile, int want)
{
    FILE *f = fopen(pidfile, "r");
    cr_assert_not_null(f, "the plugin wrote no %s", pidfile);
    long pid;
    int n = 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        n++;
        for (int i = 0; i < 200 && alive(pid); i++)
            usleep(10000);
        cr_assert(!alive(pid), "process %ld of the plugin's group outlived it", pid);
    }
    fclose(f);
    cr_assert_eq(n, want);
    unlink(pidfile);
}

/* A file for the plugin to write its group's pids in ($PLUGIN_PIDFILE). */
static void plugin_pidfile(char *path)
{
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    setenv("PLUGIN_PIDFILE", path, 1);
}

/* Runs the fixture plugin in mode; it must answer want_token. Seconds taken. */
static double exec_ok(const char *mode, const char *want_token)
{
    clean_env();
    kube_config_opts o = {.kubeconfig = FIX "/exec.yaml"};
    kube_config c = load_ok(&o);
    free(c.exec.args[0]);
    c.exec.args[0] = strdup(mode);
    buf err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(kube_config_exec_credential(&c, &err), 0, "%s", err.data);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_str_eq(c.token, want_token);
    kube_config_free(&c);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

Test(kubeconfig, exec_plugin_group_killed)
{
    char pidfile[] = "/tmp/kcfg-pids-XXXXXX";
    plugin_pidfile(pidfile);
    /* hangs with two helpers (one holding its output): all three killed */
    kube_config_test_overrides(NULL, 500);
    char *e = exec_err("forkhang", NULL);
    cr_assert_str_eq(e, EXEC_PFX "did not finish within 500 ms (killed)");
    free(e);
    expect_all_gone(pidfile, 3);
    /* answers and leaves a helper behind: the helper goes too */
    exec_ok("forkok", "t");
    expect_all_gone(pidfile, 1);
}

/* A helper that keeps the plugin's output open does not make an answered
 * plugin wait for its timeout (kubectl before Go 1.20 waited forever). */
Test(kubeconfig, exec_plugin_helper_holding_output)
{
    char pidfile[] = "/tmp/kcfg-pids-XXXXXX";
    plugin_pidfile(pidfile);
    kube_config_test_overrides(NULL, 5000);
    double took = exec_ok("forkhold", "held");
    cr_assert_lt(took, 2.0, "took %.2f s", took);
    expect_all_gone(pidfile, 1);
}

/* The service account's files: a token or a namespace that cannot be used
 * as it is (a header, a path) is refused naming the file. */
Test(kubeconfig, in_cluster_bad_token_and_namespace)
{
    char dir[] = "/tmp/kcfg-sa-XXXXXX", p[96];
    const char *const texts[] = {"sa\r\nX-Injected: 1\n", "SA-CA\n", "fn-ns\n"};
    write_sa_dir(dir, texts);
    kube_config c;
    buf err = {0};
    char want[256];
    cr_assert_eq(kube_config_load(NULL, &c, &err), -1);
    snprintf(want, sizeof want, "in-cluster: %s/token: the token contains a control byte (0x0d at "
             "byte 2 of 17), which would end or split the HTTP header it is sent in: refused", dir);
    cr_assert_str_eq(err.data, want);
    buf_reset(&err);
    snprintf(p, sizeof p, "%s/token", dir);
    FILE *f = fopen(p, "w");
    fputs("good\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/namespace", dir);
    f = fopen(p, "w");
    fputs("ns/../../x\n", f);
    fclose(f);
    cr_assert_eq(kube_config_load(NULL, &c, &err), -1);
    snprintf(want, sizeof want, "in-cluster: %s/namespace: \"ns/../../x\" is not a namespace name "
             "(a DNS-1123 label)", dir);
    cr_assert_str_eq(err.data, want);
    buf_free(&err);
    remove_sa_dir(dir);
}

Test(kubeconfig, context_namespace_must_be_a_label)
{
    clean_env();
    expect_err(HEAD CLUSTER "contexts:\n- name: x\n  context: {cluster: c, namespace: \"a/../b\"}\n",
               "config: contexts[0] (\"x\").context.namespace: \"a/../b\" is not a namespace name (a "
               "DNS-1123 label)");
}

Test(kubeconfig, tls_server_name_must_be_a_host)
{
    clean_env();
    expect_err(HEAD CTX "users:\n- name: u\n  user: {}\n"
               "clusters:\n- name: c\n  cluster: {server: \"https://s\", tls-server-name: \"evil.example/x?\"}\n",
               "config: clusters[0] (\"c\").cluster.tls-server-name: \"evil.example/x?\" is not a host name");
}

/* A message quotes a long value whole (it was cut at 1 KiB). */
Test(kubeconfig, a_long_bad_value_is_quoted_whole)
{
    clean_env();
    buf host = {0}, yaml = {0}, want = {0};
    for (int i = 0; i < 2000; i++)
        buf_append_str(&host, "x/");
    buf_printf(&yaml, HEAD CTX "users:\n- name: u\n  user: {}\n"
               "clusters:\n- name: c\n  cluster: {server: \"https://s\", tls-server-name: \"%s\"}\n",
               host.data);
    buf_printf(&want, "config: clusters[0] (\"c\").cluster.tls-server-name: \"%s\" is not a host name",
               host.data);
    expect_err(yaml.data, want.data);
    buf_free(&host);
    buf_free(&yaml);
    buf_free(&want);
}

/* A kubeconfig is read with every YAML reader's limits, checked while it
 * is parsed (lib/krm/yaml_load.h): nesting and aliases. */
Test(kubeconfig, nesting_and_alias_bombs_are_refused_while_read)
{
    clean_env();
    buf deep = {0};
    buf_append_str(&deep, HEAD CLUSTER CTX "preferences:\n  x:\n  ");
    for (int i = 0; i < 1000000; i++)
        buf_append_str(&deep, "- ");
    buf_append_str(&deep, "x\n");
    expect_err(deep.data, "config: line 12, column 1999: collections nested more than 1000 deep");
    buf_free(&deep);
    buf bomb = {0};
    buf_append_str(&bomb, HEAD CLUSTER CTX "preferences:\n  l0: &l0 [lol, lol, lol, lol, lol]\n");
    for (int i = 1; i < 9; i++)
        buf_printf(&bomb, "  l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i - 1, i - 1,
                   i - 1, i - 1, i - 1);
    char *got = load_err_text(bomb.data, NULL);
    cr_assert(strstr(got, "aliases expand to more than the document's own size"), "%s", got);
    free(got);
    buf_free(&bomb);
}
