"""EvaluateFunctionRequest's Tag (field 3, Porch's): a semver constraint or
a tag for the request's image, as a Kptfile function's `tag` is in kpt.
The exec runtime picks, as Porch's executable evaluator, the highest of a
FunctionConfig's binaryExecutor tags that satisfies it (NOT_FOUND when none
does, so the pod runtime may serve it); the pod runtime applies an exact
version or a literal tag to the image, as kpt's ResolveFunctionImage."""

import http.server
import json
import threading
import time
import urllib.parse

import grpc
import pytest

from krmtest import explain, pkg, resource_list, runner_client as client, serve_example_fn
from test_debug_pods import get, serve as serve_pods, silent_registry  # noqa: F401 (fixture)

RL = resource_list("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")


@pytest.fixture
def serve_tags(start_server, tmp_path):
    """example.com/fn with the tags of several releases, mapped to a cat."""
    return serve_example_fn(start_server, tmp_path, [
        "v1.0.0", "v1.10.0", "v1.2.0", "v1.11.0-rc.1", "v2.0.0", "latest", "1.12.0"])


def picked(srv, tag):
    marker = f'Tag "{tag}" picks '
    lines = [l for l in srv.stderr().splitlines() if marker in l]
    assert lines, srv.describe()
    return lines[-1].split(marker, 1)[1]


def test_exec_runtime_picks_the_highest_tag_satisfying_the_constraint(serve_tags):
    srv = serve_tags
    assert srv.evaluate(RL, image="example.com/fn", tag="^1").resource_list
    # 1.12.0 has no "v" (Porch's keys are split at ":v"), 1.11.0-rc.1 is a prerelease
    assert picked(srv, "^1") == "example.com/fn:v1.10.0"
    assert srv.evaluate(RL, image="example.com/fn:v9", tag="~1.2").resource_list   # the image's tag gives way
    assert picked(srv, "~1.2") == "example.com/fn:v1.2.0"
    assert srv.evaluate(RL, image="example.com/fn", tag="~1.11.0-rc.0").resource_list   # asks for a prerelease
    assert picked(srv, "~1.11.0-rc.0") == "example.com/fn:v1.11.0-rc.1"
    assert srv.evaluate(RL, image="example.com/fn", tag="v2.0.0").resource_list
    assert picked(srv, "v2.0.0") == "example.com/fn:v2.0.0"


@pytest.mark.parametrize("tag, why", [
    ("^3", 'no binaryExecutor tag of example.com/fn satisfies Tag "^3"'),
    ("latest", "Tag: improper constraint: latest"),      # Porch: a Tag that is no constraint is not found
    (">= 1, <", "Tag: improper constraint: >= 1, <"),
])
def test_exec_runtime_tag_without_a_match_is_not_found(serve_tags, tag, why):
    err = serve_tags.evaluate_error(RL, image="example.com/fn", tag=tag)
    assert err.code() == grpc.StatusCode.NOT_FOUND, err
    assert err.details().startswith('function "example.com/fn" not found; ' + why), err.details()
    # without a Tag the image's own tag is matched exactly, as before
    assert serve_tags.evaluate(RL, image="example.com/fn:v1.2.0").resource_list


def test_tag_with_nul_is_refused(serve_tags):
    err = serve_tags.evaluate_error(RL, image="example.com/fn", tag="^1\0/x")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert err.details() == 'Tag "^1\\x00/x" has a NUL byte (\\x00) at offset 2: not a tag', err.details()


def test_pod_runtime_applies_an_exact_version_to_the_image(start_server, silent_registry, tmp_path):  # noqa: F811
    srv = serve_pods(start_server, tmp_path)
    image = f"{silent_registry}/fn:v0"
    call = threading.Thread(target=lambda: srv.evaluate_error(RL, image=image, tag="v1.2.3", timeout=4))
    call.start()
    try:
        deadline = time.monotonic() + 3
        pods = []
        while not pods and time.monotonic() < deadline:
            pods = json.loads(get(srv.port, "/debug/pods")[2])["pods"]
            time.sleep(0.05)
        assert [p["image"] for p in pods] == [f"{silent_registry}/fn:v1.2.3"], pods
    finally:
        call.join()


@pytest.mark.parametrize("tag, code, text", [
    ("^1.2", grpc.StatusCode.UNAVAILABLE,
     'failed to resolve tag for image "127.0.0.1:1/fn" with constraint "^1.2": listing the '
     "repository's tags failed: cannot reach registry 127.0.0.1:1"),
    ("bad tag!", grpc.StatusCode.INVALID_ARGUMENT,
     '`function.tag` "bad tag!" must be a valid image tag: must start with an alphanumeric character '
     "or underscore, followed by at most 127 alphanumeric characters, underscores, periods, or dashes"),
])
def test_pod_runtime_refuses_what_it_cannot_resolve(start_server, tmp_path, tag, code, text):
    srv = serve_pods(start_server, tmp_path)
    err = srv.evaluate_error(RL, image="127.0.0.1:1/fn:v0", tag=tag)
    assert err.code() == code, err
    assert err.details().startswith(text), err.details()
    assert json.loads(get(srv.port, "/debug/pods")[2])["pods"] == []   # nothing was started


def test_pod_runtime_calls_life_reads_as_named_states_at_verbosity_4(start_server, tmp_path):
    """A pod call's steps are one line each at verbosity 4: one listing its
    tags and failing, one refused at start (delivered from the loop)."""
    srv = serve_pods(start_server, tmp_path, "--verbosity", "4")
    assert srv.evaluate_error(RL, image="127.0.0.1:1/fn:v0", tag="^1.2").code() == grpc.StatusCode.UNAVAILABLE
    assert srv.evaluate_error(RL, image="127.0.0.1:1/fn:v0", tag="bad tag!").code() == \
        grpc.StatusCode.INVALID_ARGUMENT
    want = ['pod call for "127.0.0.1:1/fn": NEW -> LISTING_TAGS',
            'pod call for "127.0.0.1:1/fn": LISTING_TAGS -> ENDED',
            'pod call for "127.0.0.1:1/fn:v0": NEW -> FAILING',
            'pod call for "127.0.0.1:1/fn:v0": FAILING -> ENDED']
    srv.assert_logged(want)


class TagRegistry:
    """A registry that lists fn's tags in pages (Link: rel="next", as
    distribution pages them) and has no manifest; `pages` is what it serves,
    `link` what page i links to next (None: the last)."""

    def __init__(self):
        self.pages = []
        self.link = lambda i: f"</v2/fn/tags/list?n=2&last={i}>; rel=\"next\"" if i + 1 < len(self.pages) else None
        self.paths = []
        reg = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                reg.paths.append(self.path)
                if not self.path.startswith("/v2/fn/tags/list"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                i = int(q["last"][0]) + 1 if "last" in q else 0
                body = json.dumps({"name": "fn", "tags": reg.pages[min(i, len(reg.pages) - 1)]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if reg.link(i):
                    self.send_header("Link", reg.link(i))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tag_registry():
    reg = TagRegistry()
    yield reg
    reg.close()


def test_pod_runtime_runs_the_highest_tag_of_the_repository(start_server, tmp_path, tag_registry):
    """kpt's rule: every page listed, hash-like and -git- tags skipped, the
    highest version satisfying the constraint wins; the pod cache then looks
    that image up (this registry has no manifest: the call names it)."""
    reg = tag_registry
    reg.pages = [["v1.0.0", "v1.2.0", "sha256-1.3.0", "latest"], ["v1.10.0", "v2.0.0", "1.11.0-git-1"],
                 ["v0.9.0"]]
    srv = serve_pods(start_server, tmp_path)
    err = srv.evaluate_error(RL, image=f"{reg.addr}/fn:v0", tag="^1 || 1.11.0-git-1")
    assert f'Tag "^1 || 1.11.0-git-1" on "{reg.addr}/fn": runs {reg.addr}/fn:v1.10.0 (the highest of 8 tags)' \
        in srv.stderr(), srv.describe()
    assert f"{reg.addr}/fn:v1.10.0" in err.details(), err.details()
    assert reg.paths[:3] == ["/v2/fn/tags/list?n=1000", "/v2/fn/tags/list?n=2&last=0",
                             "/v2/fn/tags/list?n=2&last=1"], reg.paths   # pages of 1,000 asked for
    err = srv.evaluate_error(RL, image=f"{reg.addr}/fn", tag="^3")
    assert err.code() == grpc.StatusCode.NOT_FOUND, err
    assert err.details() == (f'failed to resolve tag for image "{reg.addr}/fn" with constraint "^3": no tag '
                             'could be found matching the version constraint "^3" (of 8 tags)'), err.details()


def test_pod_runtime_tag_listing_is_bounded_and_stays_in_the_repository(start_server, tmp_path, tag_registry):
    reg = tag_registry
    reg.pages = [["v1.0.0"]] * 2
    reg.link = lambda i: "<https://elsewhere.example/v2/fn/tags/list?last=0>; rel=\"next\""
    srv = serve_pods(start_server, tmp_path)
    err = srv.evaluate_error(RL, image=f"{reg.addr}/fn", tag="^1")
    assert err.code() == grpc.StatusCode.UNAVAILABLE, err
    assert "next page of the tags of image" in err.details() and "is not in its repository" in err.details()
    reg.link = lambda i: f"</v2/fn/tags/list?n=1&last={i}>; rel=\"next\""   # never ends
    err = srv.evaluate_error(RL, image=f"{reg.addr}/fn", tag="^1", timeout=60)
    assert err.code() == grpc.StatusCode.UNAVAILABLE, err
    assert "has more than 1000 pages (the limit)" in err.details(), err.details()
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_a_huge_tag_costs_little_and_is_named_briefly(serve_tags, start_server, tmp_path):
    """A Tag of megabytes (up to the message limit) is refused unread: a
    constraint's scan of 64 KiB of digits took 3.5 s before the bound."""
    tag = "1" * (4 << 20)
    t0 = time.monotonic()
    err = serve_tags.evaluate_error(RL, image="example.com/fn", tag=tag)
    assert err.code() == grpc.StatusCode.NOT_FOUND, err
    assert f"Tag: constraint of {len(tag)} bytes is longer than 1024 (the limit)" in err.details()
    assert len(err.details()) < 1000 and time.monotonic() - t0 < 5
    pods = serve_pods(start_server, tmp_path)
    err = pods.evaluate_error(RL, image="127.0.0.1:1/fn", tag=tag)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert err.details().startswith('`function.tag` "' + "1" * 200 + f'"... ({len(tag)} bytes) must be'), \
        err.details()[:300]


def test_a_kptfile_steps_tag_goes_with_the_call(serve_tags, tmp_path):
    """kpt's Kptfile `tag` on a pipeline step: `eval --pipeline` sends it as
    the request's Tag (as Porch's engine does), and the runner picks by it."""
    kptfile = tmp_path / "Kptfile"
    kptfile.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n"
                       "  mutators:\n  - image: example.com/fn\n    tag: \"~1.2\"\n")
    res = client("eval", "--addr", f"127.0.0.1:{serve_tags.port}", "--pipeline", str(kptfile),
                 "-o", "stdout", pkg("app"))
    assert res.returncode == 0, explain(res)
    assert picked(serve_tags, "~1.2") == "example.com/fn:v1.2.0"
    kptfile.write_text(kptfile.read_text().replace('"~1.2"', '"^3"'))
    res = client("eval", "--addr", f"127.0.0.1:{serve_tags.port}", "--pipeline", str(kptfile),
                 "-o", "stdout", pkg("app"))
    assert res.returncode == 1, explain(res)
    assert ('Error: NOT_FOUND: function "example.com/fn" not found; no binaryExecutor tag of '
            'example.com/fn satisfies Tag "^3"') in res.err, explain(res)
    kptfile.write_text(kptfile.read_text().replace('"^3"', "[1]"))
    res = client("eval", "--addr", f"127.0.0.1:{serve_tags.port}", "--pipeline", str(kptfile), pkg("app"))
    assert res.returncode == 2 and "pipeline.mutators[0]: tag is not a string" in res.err, explain(res)
