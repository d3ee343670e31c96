#!/bin/bash
# scripts/e2e.sh: `make e2e`, the end-to-end tests on a real Kubernetes cluster.
#
# By default on the lab (../shared/k8s-lab, see its README): builds the
# binaries and images (make all static images; what exists is reused), builds
# Kubernetes if the lab's cache has no binaries yet (about 8 minutes once),
# starts the lab in $E2E_LAB_DIR (default /tmp/krm-e2e-lab), pushes the init
# image, the function-runner image and the function images to the lab registry with skopeo, runs
# `pytest tests/e2e`, and takes the lab down, failing if down.sh leaves
# anything. Needs root (the lab mounts and runs containers).
#
# Against another cluster: give KUBECONFIG and REGISTRY (a registry its
# nodes pull from and this machine pushes to; E2E_REGISTRY_TLS_VERIFY=false
# for plain HTTP). No lab is started then; the tests dial pod IPs, so this
# machine must reach them.
#
# Settings (environment): E2E_LAB_DIR; the lab's own (K8S_LAB_PORT_BASE,
# K8S_LAB_REGISTRY_PORT, K8S_LAB_POD_SUBNET, K8S_LAB_CACHE, ...) are passed on;
# K8S_LAB_HOME, the lab's scripts (default ../shared/k8s-lab or
# ../../shared/k8s-lab from the project or from the repository it was
# cloned from); BUILD (default build);
# E2E_PYTEST_ARGS (e.g. "-k template -x"); E2E_SLOW (deadline factor);
# E2E_RUN=bench runs bench/pods.py (`make bench-pods`) instead of pytest.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
OUT=$BUILD/e2e
LAB_DIR=${E2E_LAB_DIR:-/tmp/krm-e2e-lab}
PYTEST_PID=
log() { echo "e2e: $*" >&2; }
die() { log "$*"; exit 1; }

# Where the lab's scripts are: K8S_LAB_HOME, else ../shared/k8s-lab (or one
# level further up) from this checkout, else the same beside the repository
# this one was cloned from (CI clones into a temporary directory). Prints the
# directory, or nothing and status 1.
find_lab() {
    local d origin
    if [ -n "${K8S_LAB_HOME:-}" ]; then
        [ -x "$K8S_LAB_HOME/up.sh" ] && { (cd "$K8S_LAB_HOME" && pwd); return 0; }
        return 1
    fi
    origin=$(git -C "$ROOT" config --get remote.origin.url 2>/dev/null || true)
    origin=${origin#file://}
    for d in "$ROOT/../shared/k8s-lab" "$ROOT/../../shared/k8s-lab" \
             ${origin:+"$origin/../shared/k8s-lab" "$origin/../../shared/k8s-lab"}; do
        [ -x "$d/up.sh" ] && { (cd "$d" && pwd); return 0; }
    done
    return 1
}

if [ "${1:-}" = "--find-lab" ]; then   # for .ci/run: is there a lab to run on?
    find_lab
    exit
fi

# The manifest digest of a one-image OCI layout.
layout_digest() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/index.json"))["manifests"][0]["digest"])' "$1"
}

# The EXIT trap once the lab is up: stop pytest if it runs, take the lab down,
# fail if down.sh leaves anything.
# shellcheck disable=SC2317  # called by the trap
finish() {
    rc=$?
    trap - EXIT INT TERM
    if [ -n "${PYTEST_PID:-}" ]; then
        kill "$PYTEST_PID" 2>/dev/null || true
        wait "$PYTEST_PID" 2>/dev/null || true
    fi
    log "taking the lab down"
    if ! "$LAB/down.sh" --dir "$LAB_DIR"; then
        log "FAILED: down.sh left something of the lab running (see above)"
        rc=1
    else
        log "down.sh: nothing left"
    fi
    exit "$rc"
}

# ---- 1. binaries and images --------------------------------------------------------------
./scripts/deps.sh
make -s all BUILD="$BUILD"
make -s static images
mkdir -p "$OUT"
rm -rf "$OUT/fn" "$OUT/fn-embedded"
python3 tests/e2e/fn_image.py --tag e2e "$OUT/fn" >/dev/null
python3 images/embed --tag e2e "oci:$OUT/fn:e2e" "$OUT/fn-embedded" >/dev/null
rm -rf "$OUT/crash-wrapper"
python3 tests/e2e/crash_image.py --tag e2e "$OUT/crash-wrapper" >/dev/null

# ---- 2. the cluster ----------------------------------------------------------------------
LAB=
if [ -n "${KUBECONFIG:-}" ] && [ -n "${REGISTRY:-}" ]; then
    log "using the cluster of $KUBECONFIG and the registry $REGISTRY (no lab)"
    TLS_VERIFY=${E2E_REGISTRY_TLS_VERIFY:-true}
    unset K8S_LAB_DIR
else
    [ "$(id -u)" -eq 0 ] || die "the lab needs root (or give KUBECONFIG and REGISTRY of another cluster)"
    LAB=$(find_lab) || die "no k8s lab found (K8S_LAB_HOME, ../shared/k8s-lab, or beside the repository this was cloned from); set K8S_LAB_HOME, or KUBECONFIG and REGISTRY for another cluster"
    TLS_VERIFY=false
    # RBAC enforced, as on real clusters (tests/e2e/test_rbac.py needs it; the
    # lab's admin token is in system:masters, so the rest does not notice)
    export K8S_LAB_AUTHORIZATION_MODE=${K8S_LAB_AUTHORIZATION_MODE:-RBAC}
    # with the private registry (login required; tests/e2e/test_private_registry.py
    # runs a function from it through serve --enable-private-registries)
    export K8S_LAB_PRIVATE_REGISTRY=${K8S_LAB_PRIVATE_REGISTRY:-e2e:$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}
    "$LAB/build-kubernetes.sh" >/dev/null          # cached after the first build
    log "starting the lab in $LAB_DIR"
    lab_env=$("$LAB/up.sh" --dir "$LAB_DIR")      # on failure it cleans up itself
    # From here on, whatever happens, take the lab down; set only now, so a
    # lab somebody else started in LAB_DIR (up.sh refuses) is left alone.
    trap finish EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    set -a
    eval "$lab_env"
    set +a
fi

# ---- 3. push the images ------------------------------------------------------------------
push() {   # push LAYOUT:TAG NAME -> prints REGISTRY/NAME:e2e-<digest prefix>
    local src=$1 name=$2 layout=${1%:*} digest tag
    digest=$(layout_digest "$layout")
    tag=e2e-${digest#sha256:}
    tag=${tag:0:16}
    skopeo copy --quiet --insecure-policy --dest-tls-verify="$TLS_VERIFY" \
        "oci:$src" "docker://$REGISTRY/$name:$tag" >&2
    echo "$REGISTRY/$name:$tag"
}
# A tag per content: a node that cached an older build never runs it again.
E2E_INIT_IMAGE=$(push build/images/wrapper-server:latest krm-e2e-wrapper-server)
E2E_FN_IMAGE=$(push "$OUT/fn:e2e" krm-e2e-fn)
E2E_EMBEDDED_IMAGE=$(push "$OUT/fn-embedded:e2e" krm-e2e-fn-embedded)
E2E_CRASH_WRAPPER_IMAGE=$(push "$OUT/crash-wrapper:e2e" krm-e2e-crash-wrapper)
E2E_RUNNER_IMAGE=$(push build/images/function-runner:latest krm-e2e-function-runner)
export E2E_INIT_IMAGE E2E_FN_IMAGE E2E_EMBEDDED_IMAGE E2E_CRASH_WRAPPER_IMAGE E2E_RUNNER_IMAGE BUILD
export WRAPPER_SERVER_IMAGE=$E2E_INIT_IMAGE     # runner-client's default, as Porch's
export E2E_FIGURES=$OUT/figures.txt
log "pushed $E2E_INIT_IMAGE $E2E_FN_IMAGE $E2E_EMBEDDED_IMAGE $E2E_CRASH_WRAPPER_IMAGE $E2E_RUNNER_IMAGE"

# ---- 4. the tests ------------------------------------------------------------------------
# In the background, so a SIGTERM to this script takes the lab down at once
# (bash runs traps only between foreground commands); finish stops pytest.
rc=0
if [ "${E2E_RUN:-test}" = bench ]; then
    /usr/bin/python3 bench/pods.py &
else
    # shellcheck disable=SC2086
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -rfE ${E2E_PYTEST_ARGS:-} tests/e2e &
fi
PYTEST_PID=$!
wait "$PYTEST_PID" || rc=$?
PYTEST_PID=
log "${E2E_RUN:-test} exit status $rc"
exit "$rc"
