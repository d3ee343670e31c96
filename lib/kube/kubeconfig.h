/* kubeconfig: where the Kubernetes API server is and how to prove who we
 * are, found the way kubectl finds it.
 *
 * Order, as kubectl and client-go's default loading rules: an explicit path
 * (--kubeconfig); else $KUBECONFIG, a colon-separated list of files merged
 * (for each cluster, user and context name, and for current-context, the
 * first file that sets it wins; missing files are skipped); else
 * ~/.kube/config when it exists; else in-cluster (the service account's
 * token, CA and namespace under /var/run/secrets/kubernetes.io/serviceaccount,
 * the server from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT).
 *
 * From the chosen file the current context (or the one asked for) names a
 * cluster (server, CA as file or data, insecure-skip-tls-verify,
 * tls-server-name), a user (token or tokenFile, client certificate and key
 * as files or data, or an exec credential plugin, which managed clusters
 * use) and a namespace. Relative file paths are relative to the kubeconfig
 * file that names them, as kubectl resolves them. Every error names the
 * file and the field. */
#ifndef KRM_KUBECONFIG_H
#define KRM_KUBECONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* users[].user.exec: a program that prints an ExecCredential (JSON) with a
 * token or a client certificate and key, and maybe an expiry. */
typedef struct kube_exec {
    char *command;           /* NULL: no exec plugin */
    char **args;             /* NULL-terminated argv after command */
    char **env;              /* NULL-terminated "NAME=value", added to ours */
    char *api_version;       /* client.authentication.k8s.io/v1 or v1beta1 */
    char *install_hint;      /* shown when the command cannot be run */
} kube_exec;

typedef struct kube_config {
    char *server;            /* "https://host:port", no trailing slash */
    char *tls_server_name;   /* NULL: the server's host */
    int insecure;            /* insecure-skip-tls-verify */
    buf ca_pem;              /* CA bundle (PEM), from data or file; empty: system CAs */
    char *token;             /* bearer token, NULL: none */
    char *token_file;        /* tokenFile (read into token at load; re-read when it changes) */
    buf cert_pem, key_pem;   /* client certificate and key (PEM); empty: none */
    kube_exec exec;
    char *namespace;         /* the context's, or in-cluster's; "default" when unset */
    /* What was used, for messages: "kubeconfig /root/.kube/config, context
     * \"lab\", user \"admin\"" or "in-cluster service account". */
    char *source;
    char *auth_kind;         /* "bearer token", "token file", "client certificate",
                                "exec plugin CMD", "none": what a 401 says was tried */
} kube_config;

typedef struct kube_config_opts {
    const char *kubeconfig;  /* --kubeconfig; NULL: $KUBECONFIG, ~/.kube/config, in-cluster */
    const char *context;     /* --context; NULL: current-context */
    const char *namespace;   /* --namespace; NULL: the context's */
} kube_config_opts;

/* Finds and reads the configuration. 0, or -1 with why in err (one line,
 * naming the file and the field, or saying that none was found where). */
int kube_config_load(const kube_config_opts *opts, kube_config *out, buf *err);

/* Runs the exec plugin (if any; exec_credential.c) and puts its credential
 * into cfg (token, or cert and key). Blocking, with a 30 s limit: call it
 * before the event loop runs. The plugin runs in its own process group,
 * killed whole when the plugin has answered or failed, when its time is up
 * or when we are interrupted or terminated meanwhile, so nothing it started
 * outlives it. A token with a control byte is refused. 0, or -1 with why
 * (the command, its exit status, its stderr). */
int kube_config_exec_credential(kube_config *cfg, buf *err);

void kube_config_free(kube_config *cfg);

/* For tests only: read the in-cluster service account from sa_dir instead
 * of /var/run/secrets/kubernetes.io/serviceaccount (NULL: that), and give
 * exec plugins exec_timeout_ms instead of 30 s (0: 30 s). */
void kube_config_test_overrides(const char *sa_dir, int exec_timeout_ms);
/* The exec plugins' part of it (exec_credential.c). */
void kube_exec_test_timeout(int exec_timeout_ms);

#endif
