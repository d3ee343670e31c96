/* exec_credential: running a kubeconfig's exec credential plugin
 * (users[].user.exec) and taking its ExecCredential; see kubeconfig.h
 * (kube_config_exec_credential).
 *
 * The plugin is a program the kubeconfig names, run before the event loop
 * (blocking, with a time limit), in a process group of its own
 * (core/spawn): whatever it starts is killed with it when it has answered,
 * failed or run out of time, or when we are interrupted meanwhile. Its
 * token must be fit for a header (core/header_value). */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/header_value.h"
#include "core/json.h"
#include "core/spawn_pipes.h"

#define EXEC_MAX_OUTPUT (1u << 20)
#define EXEC_TIMEOUT_MS 30000

extern char **environ;

static int exec_timeout_ms = EXEC_TIMEOUT_MS;

void kube_exec_test_timeout(int ms)
{
    exec_timeout_ms = ms > 0 ? ms : EXEC_TIMEOUT_MS;
}

/* Our environment plus the plugin's env entries (which win) plus
 * KUBERNETES_EXEC_INFO. */
static char **exec_environ(const kube_exec *x, const char *info)
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    while (x->env && x->env[m])
        m++;
    char **v = calloc(n + m + 2, sizeof *v);
    if (!v)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strcspn(environ[i], "=");
        int overridden = !strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21);
        for (size_t j = 0; j < m && !overridden; j++)
            overridden = !strncmp(environ[i], x->env[j], nl + 1);
        if (!overridden)
            v[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++)
        v[k++] = x->env[j];
    v[k++] = (char *)info;
    return v;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the plugin has exited, without reaping it: while it is a zombie
 * its process group's number cannot be given to another group. */
static int has_exited(pid_t pid)
{
    siginfo_t info = {0};
    int r;
    while ((r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT)) < 0 && errno == EINTR)
        ;
    return r < 0 || info.si_pid == pid;   /* an error: not ours to wait for; end_group says */
}

#define EXEC_QUIET_MS 50   /* pipes silent this long after the plugin exited: what is left is a helper's */

/* Reads both pipes until the plugin has exited and they are at EOF or
 * quiet (a helper it left may hold them open, writing nothing), or the
 * deadline; 0, or -1 on timeout. */
static int drain(pid_t pid, int out_fd, int err_fd, buf *out, buf *errout, int64_t deadline)
{
    struct pollfd p[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    buf *dst[2] = {out, errout};
    int open_fds = 2;
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -1;
        if (!open_fds && has_exited(pid))
            return 0;
        int r = poll(p, 2, left > EXEC_QUIET_MS ? EXEC_QUIET_MS : (int)left);
        if (r < 0 && errno != EINTR)
            return -1;
        if (r == 0 && has_exited(pid))
            return 0;
        for (int i = 0; r > 0 && i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            char chunk[4096];
            ssize_t got = read(p[i].fd, chunk, sizeof chunk);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                p[i].fd = -1;
                open_fds--;
            } else if (dst[i]->len < EXEC_MAX_OUTPUT) {
                buf_append(dst[i], chunk, (size_t)got);   /* beyond the cap: drained, dropped */
            }
        }
    }
}

/* Kills the plugin's process group, whatever the plugin did: anything it
 * started and left behind (a helper, a grandchild that hangs) goes with
 * it. Then reaps the plugin; its wait status. */
static int end_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* While a plugin runs, a signal that would end us kills its group first:
 * in its own group it is not in the terminal's foreground group, so a
 * Ctrl-C reaches only us, and it would run on. Only signals left at their
 * default action are taken over (a caller's handler or ignore stays), and
 * only for the plugin's time. */
static volatile sig_atomic_t running_group;
static const int ending_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_ENDING (sizeof ending_signals / sizeof *ending_signals)

typedef struct signal_guard {
    struct sigaction old[N_ENDING];
    int taken[N_ENDING];
    sigset_t mask;   /* the mask before: the signals wait while the plugin starts */
} signal_guard;

static void end_group_and_die(int sig)
{
    if (running_group > 0)
        kill(-running_group, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);   /* delivered when this handler returns: we end as we would have */
}

/* Before the spawn: the handlers set, the signals held until the plugin's
 * group is known (the plugin itself starts with none blocked). */
static void guard_signals(signal_guard *g)
{
    struct sigaction sa = {0};
    sigset_t hold;
    sa.sa_handler = end_group_and_die;
    sigemptyset(&sa.sa_mask);
    sigemptyset(&hold);
    running_group = 0;
    for (size_t i = 0; i < N_ENDING; i++) {
        sigaddset(&hold, ending_signals[i]);
        g->taken[i] = sigaction(ending_signals[i], NULL, &g->old[i]) == 0 &&
                      g->old[i].sa_handler == SIG_DFL && sigaction(ending_signals[i], &sa, NULL) == 0;
    }
    sigprocmask(SIG_BLOCK, &hold, &g->mask);
}

/* After the spawn: pid's group (0: none) is the one to kill; the signals
 * held meanwhile arrive now. */
static void guard_group(signal_guard *g, pid_t pid)
{
    running_group = pid;
    sigprocmask(SIG_SETMASK, &g->mask, NULL);
}

static void unguard_signals(signal_guard *g)
{
    for (size_t i = 0; i < N_ENDING; i++)
        if (g->taken[i])
            sigaction(ending_signals[i], &g->old[i], NULL);
    running_group = 0;
}

static int exec_fail(const kube_config *cfg, buf *err, const char *fmt, const char *detail)
{
    buf_printf(err, "exec credential plugin %s (%s, user in %s): ", cfg->exec.command,
               cfg->exec.api_version, cfg->source ? cfg->source : "kubeconfig");
    buf_printf(err, fmt, detail);
    return -1;
}

/* Takes status.token or status.clientCertificateData + clientKeyData. */
static int take_credential(kube_config *cfg, const char *text, size_t len, buf *err)
{
    buf why = {0}, bad = {0};
    json *j = json_parse_max(text, len, 10000, &why);   /* a token or a key pair */
    int rc = -1;
    if (!j) {
        buf b = {0};
        buf_printf(&b, "its output is not JSON (%s)", why.data ? why.data : "?");
        exec_fail(cfg, err, "%s", b.data);
        buf_free(&b);
        goto out;
    }
    const char *kind = json_get_str(j, "kind"), *api = json_get_str(j, "apiVersion");
    const json *st = json_get(j, "status");
    const json *token_v = json_get(st, "token");
    const char *token = json_get_str(st, "token");
    const char *cert = json_get_str(st, "clientCertificateData");
    const char *key = json_get_str(st, "clientKeyData");
    if (!kind || strcmp(kind, "ExecCredential")) {
        exec_fail(cfg, err, "its output has kind \"%s\", not ExecCredential", kind ? kind : "");
    } else if (!api || strcmp(api, cfg->exec.api_version)) {
        exec_fail(cfg, err, "its output has apiVersion \"%s\", not the one the kubeconfig asks for",
                  api ? api : "");
    } else if (!token && !(cert && key)) {
        exec_fail(cfg, err, "%s", "its ExecCredential has neither status.token nor "
                  "status.clientCertificateData with status.clientKeyData");
    } else if ((cert != NULL) != (key != NULL)) {
        exec_fail(cfg, err, "%s", "its ExecCredential has only one of status.clientCertificateData "
                  "and status.clientKeyData");
    } else if (token && header_value_check("its ExecCredential's status.token", token, token_v->len,
                                           &bad) < 0) {
        exec_fail(cfg, err, "%s", bad.data);
    } else {
        rc = 0;
        if (token) {
            free(cfg->token);
            if (!(cfg->token = strdup(token)))
                rc = -1;
        }
        if (cert) {
            buf_reset(&cfg->cert_pem);
            buf_reset(&cfg->key_pem);
            if (buf_append_str(&cfg->cert_pem, cert) < 0 || buf_append_str(&cfg->key_pem, key) < 0)
                rc = -1;
        }
        if (rc < 0)
            buf_printf(err, "out of memory");
    }
out:
    json_free(j);
    buf_free(&why);
    buf_free(&bad);
    return rc;
}

int kube_config_exec_credential(kube_config *cfg, buf *err)
{
    if (!cfg->exec.command || cfg->token)
        return 0;   /* no plugin, or a static token that kubectl would use first */
    char info[256];
    snprintf(info, sizeof info, "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
             "\"spec\":{\"interactive\":false}}", cfg->exec.api_version);
    int ours[3] = {-1, -1, -1};   /* its stdin (none: /dev/null), stdout, stderr */
    char **envp = exec_environ(&cfg->exec, info);
    size_t na = 0;
    while (cfg->exec.args && cfg->exec.args[na])
        na++;
    char **argv = calloc(na + 2, sizeof *argv);
    buf out = {0}, errout = {0};
    int rc = -1;
    pid_t pid = -1;
    if (!envp || !argv) {
        buf_printf(err, "out of memory");
        goto out;
    }
    argv[0] = cfg->exec.command;
    for (size_t i = 0; i < na; i++)
        argv[i + 1] = cfg->exec.args[i];
    /* its own process group, so what it starts is killed with it */
    signal_guard guard;
    guard_signals(&guard);
    const char *step;
    int e = spawn_with_pipes(cfg->exec.command, 1, argv, envp, NULL, 0, ours, &pid, &step);
    guard_group(&guard, e ? 0 : pid);
    if (e) {
        unguard_signals(&guard);
        pid = -1;
        if (step) {   /* pipe or /dev/null */
            exec_fail(cfg, err, step[0] == '/' ? "/dev/null: %s" : "pipe: %s", strerror(e));
            goto out;
        }
        buf b = {0};
        buf_printf(&b, "cannot be run: %s", strerror(e));
        if (cfg->exec.install_hint)
            buf_printf(&b, " (installHint: %s)", cfg->exec.install_hint);
        exec_fail(cfg, err, "%s", b.data ? b.data : strerror(e));
        buf_free(&b);
        goto out;
    }
    int64_t deadline = now_ms() + exec_timeout_ms;
    int timed_out = drain(pid, ours[1], ours[2], &out, &errout, deadline) < 0;
    int status = end_group(pid);
    unguard_signals(&guard);
    pid = -1;
    while (errout.len && strchr(" \t\r\n", errout.data[errout.len - 1]))
        errout.data[--errout.len] = '\0';
    if (timed_out) {
        char t[64];
        snprintf(t, sizeof t, "%d ms", exec_timeout_ms);
        exec_fail(cfg, err, "did not finish within %s (killed)", t);
    } else if (WIFSIGNALED(status)) {
        char t[32];
        snprintf(t, sizeof t, "%d", WTERMSIG(status));
        exec_fail(cfg, err, "was killed by signal %s", t);
        buf_printf(err, "; stderr: %s", errout.len ? errout.data : "(empty)");
    } else if (WEXITSTATUS(status) != 0) {
        char t[32];
        snprintf(t, sizeof t, "%d", WEXITSTATUS(status));
        exec_fail(cfg, err, "exited with status %s", t);
        buf_printf(err, "; stderr: %s", errout.len ? errout.data : "(empty)");
    } else {
        rc = take_credential(cfg, out.data ? out.data : "", out.len, err);
    }
out:
    for (int i = 0; i < 3; i++)
        if (ours[i] >= 0)
            close(ours[i]);
    free(envp);
    free(argv);
    buf_free(&out);
    buf_free(&errout);
    return rc;
}
