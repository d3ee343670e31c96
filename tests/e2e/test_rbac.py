"""runner-client under RBAC on a real cluster: `make e2e` starts the lab
with K8S_LAB_AUTHORIZATION_MODE=RBAC (the admin token is in system:masters,
so the other tests do not notice). Each test makes a service account in its
namespace, a Role and a RoleBinding, gets a token for it (TokenRequest) and
gives runner-client a kubeconfig holding only that token:

- an account that may read pods but not create anything: `eval --kube`
  fails with the 403 text naming the verb, the resource, the namespace, the
  account, and the RBAC rule that is missing;
- an account that may do everything but watch pods: the same, for the
  watch (the list before it is allowed), within seconds, not at the end of
  the ready timeout;
- an account with the rules docs/pods.md lists for the runner: the same
  `eval --kube` creates the pod and answers.
"""

import os
import re
import time

import pytest
import yaml

from k8s import SLOW, ApiError
from test_pod_runtime import check_answer, eval_kube
from test_serve_pods import Runner, pb  # noqa: F401  (pb: Runner's fixture)
from test_serve_pods import check_answer as check_served

# What the pod runtime needs in the function pods' namespace: the Role of
# deploy/rbac.yaml (docs/pods.md, "RBAC: the Role the pod runtime needs", shows the same rules).
with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "deploy", "rbac.yaml")) as _f:
    RUNNER_RULES = next(d for d in yaml.safe_load_all(_f) if d["kind"] == "Role")["rules"]
READ_PODS_ONLY = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]


def account(api, ns, name, rules, k8s, tmp_path):
    """A service account bound to a Role of these rules; returns the path
    of a kubeconfig (the admin one's cluster) with the account's token."""
    api.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}, ns)
    api.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                 "metadata": {"name": name}, "rules": rules})
    api.request("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                 "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})
    token = api.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}})["status"]["token"]
    cfg = yaml.safe_load(open(k8s.kubeconfig))
    for u in cfg["users"]:
        u["user"] = {"token": token}
    path = tmp_path / f"kubeconfig-{name}"
    path.write_text(yaml.safe_dump(cfg))
    return str(path), token


def require_rbac(api, token):
    """Fails (not skips) on a cluster that does not enforce RBAC: the lab of
    `make e2e` must."""
    from k8s import Api, ApiConfig
    limited = Api(ApiConfig(api.config.server, api.config.ctx, token))
    try:
        limited.request("GET", "/api/v1/namespaces/kube-system/secrets")
    except ApiError as e:
        if e.status == 403:
            return
        raise
    pytest.fail("the cluster does not enforce RBAC: a service account without rights read kube-system's "
                "secrets; start the lab with K8S_LAB_AUTHORIZATION_MODE=RBAC (scripts/e2e.sh does)",
                pytrace=False)


def eval_refused(api, k8s, runner, images, namespace, tmp_path, name, rules):
    """`eval --kube` as an account with these rules: it must fail, within
    seconds (not at the ready timeout); returns its stderr."""
    kubeconfig, token = account(api, namespace, name, rules, k8s, tmp_path)
    require_rbac(api, token)
    t0 = time.monotonic()
    r, _ = eval_kube(runner, tmp_path, namespace, images.fn, "--kubeconfig", kubeconfig)
    took = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    assert f"kubeconfig {kubeconfig}" in r.stderr, r.stderr
    assert took < 10, f"took {took:.1f} s:\n{r.stderr}"
    return r.stderr


def test_forbidden_names_the_missing_rule(api, k8s, runner, images, namespace, tmp_path):
    err = eval_refused(api, k8s, runner, images, namespace, tmp_path, "pod-reader", READ_PODS_ONLY)
    # the Service and the Pod are created together: either is refused first
    m = re.search(f'forbidden: the API server refused to create (services|pods) in namespace "{namespace}"', err)
    assert m, err
    what = m.group(1)
    assert f'User "system:serviceaccount:{namespace}:pod-reader" cannot create resource "{what}"' in err, err
    assert (f'missing RBAC rule: a Role with apiGroups [""], resources ["{what}"], verbs ["create"], '
            'bound to this user by a RoleBinding in that namespace') in err, err
    # nothing was created
    assert not [p for p in api.list("pods", namespace) if "fn.kpt.dev/image" in p["metadata"].get("labels", {})]


def test_forbidden_watch_fails_fast(api, k8s, runner, images, namespace, tmp_path):
    rules = [dict(r) for r in RUNNER_RULES]
    rules[0]["verbs"] = [v for v in rules[0]["verbs"] if v != "watch"]
    err = eval_refused(api, k8s, runner, images, namespace, tmp_path, "no-watch", rules)
    assert f'forbidden: the API server refused to watch pods in namespace "{namespace}"' in err, err
    assert ('missing RBAC rule: a Role with apiGroups [""], resources ["pods"], verbs ["watch"], '
            'bound to this user by a RoleBinding in that namespace') in err, err


def test_the_documented_role_is_enough(api, k8s, runner, images, namespace, tmp_path):
    kubeconfig, token = account(api, namespace, "fn-runner", RUNNER_RULES, k8s, tmp_path)
    require_rbac(api, token)
    r, _ = eval_kube(runner, tmp_path, namespace, images.fn, "--kubeconfig", kubeconfig)
    check_answer(r)
    assert "created" in r.stderr, r.stderr


def test_the_documented_role_is_enough_for_serve_replicas(api, k8s, pb, images, namespace, tmp_path):
    """`serve` as a replica (its Lease, its scans, reclaim) with exactly the
    documented rules: a call answered, its Lease written and renewed, an
    expired replica's Lease deleted, the idle pod and its Service deleted,
    and no request refused."""
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace
    kubeconfig, token = account(api, namespace, "fn-runner", RUNNER_RULES, k8s, tmp_path)
    require_rbac(api, token)
    old = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    api.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
                {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "fn-runner-gone", "labels": {"fn.kpt.dev/runner-lease": "true"}},
                 "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 15, "renewTime": old}})
    r = Runner(pb, SimpleNamespace(kubeconfig=kubeconfig), namespace, tmp_path, "--replica-name", "rbac",
               "--scan-interval", "1s", "--pod-ttl", "2s", "--lease-duration", "3s")
    try:
        check_served(r.evaluate(images.fn))
        deadline = time.monotonic() + 30 * SLOW
        while time.monotonic() < deadline:
            pods = [p for p in api.list("pods", namespace) if "fn.kpt.dev/image" in p["metadata"].get("labels", {})]
            if not pods and not api.list("services", namespace) and \
                    api.get_or_none("leases", namespace, "fn-runner-gone") is None:
                break
            time.sleep(0.3)
        log = r.log.read_text(errors="replace")
        assert not pods and api.get_or_none("leases", namespace, "fn-runner-gone") is None, log[-3000:]
        lease = api.get("leases", namespace, "fn-runner-rbac")
        assert lease["spec"]["holderIdentity"] == "rbac" and lease["spec"]["leaseDurationSeconds"] == 3
        assert "forbidden" not in log, log[-3000:]
    finally:
        r.stop()
