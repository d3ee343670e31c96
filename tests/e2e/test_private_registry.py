"""`runner-client serve --enable-private-registries` on the lab's private
registry (K8S_LAB_PRIVATE_REGISTRY: every request needs the login, and the
node has no credentials for it): the function image pushed there runs
through serve, given only a dockerconfigjson file; the file becomes the
pull Secret in the namespace, named in the pod's imagePullSecrets, and
gives the runner's own lookup of the image its login. Without the flag the
same call is refused (the registry requires credentials), so they are what
made it work. Skipped when the lab has no private registry."""

import base64
import json
import os
import secrets
import subprocess

import grpc
import pytest

from test_serve_pods import Runner, check_answer, function_pods, pb  # noqa: F401


@pytest.fixture
def private_image(images):
    reg = os.environ.get("PRIVATE_REGISTRY")
    user, password = os.environ.get("PRIVATE_REGISTRY_USER"), os.environ.get("PRIVATE_REGISTRY_PASSWORD")
    if not (reg and user and password):
        pytest.skip("the lab has no private registry (K8S_LAB_PRIVATE_REGISTRY=USER:PASSWORD)")
    ref = f"{reg}/krm-e2e-private-fn:{secrets.token_hex(4)}"   # never on the node yet
    subprocess.run(["skopeo", "copy", "--quiet", "--insecure-policy", "--src-tls-verify=false",
                    "--dest-tls-verify=false", "--dest-creds", f"{user}:{password}",
                    f"docker://{images.fn}", f"docker://{ref}"], check=True)
    auth = {"auths": {reg: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}}}
    return ref, json.dumps(auth).encode()


def test_private_image_runs_with_the_pull_secret(api, pb, k8s, namespace, tmp_path, private_image):  # noqa: F811
    ref, auth = private_image
    f = tmp_path / ".dockerconfigjson"
    f.write_bytes(auth)

    plain = Runner(pb, k8s, namespace, tmp_path)
    try:
        with pytest.raises(grpc.RpcError) as e:
            plain.evaluate(ref, timeout=30)
        assert f"registry {ref.split('/')[0]} requires credentials" in e.value.details(), e.value.details()
    finally:
        plain.stop()

    r = Runner(pb, k8s, namespace, tmp_path, "--enable-private-registries",
               "--registry-auth-secret-path", str(f), "--registry-auth-secret-name", "fn-pull")
    try:
        check_answer(r.evaluate(ref))
        secret = api.get("secrets", namespace, "fn-pull")
        assert secret["type"] == "kubernetes.io/dockerconfigjson"
        assert base64.b64decode(secret["data"][".dockerconfigjson"]) == auth
        [pod] = function_pods(api, namespace)
        assert pod["spec"]["imagePullSecrets"] == [{"name": "fn-pull"}]
        assert pod["spec"]["containers"][0]["image"] == ref
    finally:
        r.stop()
