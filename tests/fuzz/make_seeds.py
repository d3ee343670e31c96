#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets to tests/fuzz/corpus/<target>/.

Run from anywhere: python3 tests/fuzz/make_seeds.py. The files are committed;
rerun after changing this script. Protobuf seeds are encoded by hand (the
messages are tiny) so no generated Python code is needed. Regression seeds
that reproduce fixed bugs are kept as separate files named regress-*, which
this script leaves alone.
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- protobuf wire format ----
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_varint(num, value):
    return varint(num << 3) + varint(value)


RL = """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm, namespace: ns}
  data: {key: value}
"""

# ---- grpc_frame: 4 header bytes (limit index | fail-after << 5, seed), stream ----
def frame(body, flag=0):
    if isinstance(body, str):
        body = body.encode()
    return bytes([flag]) + struct.pack(">I", len(body)) + body


def frame_seeds():
    req = field_bytes(1, RL) + field_bytes(2, "fn:v1")
    write("grpc_frame", "one-message", bytes([5, 1, 2, 3]) + frame("hello"))
    write("grpc_frame", "request", bytes([6, 9, 9, 9]) + frame(req))
    write("grpc_frame", "three-and-partial",
          bytes([5, 0, 0, 1]) + frame("a") + frame("") + frame("xyz", 1) + frame("tail")[:7])
    write("grpc_frame", "empty-only", bytes([0, 0, 0, 0]) + frame(""))
    write("grpc_frame", "bad-flag", bytes([4, 7, 7, 7]) + frame("ok") + frame("no", 2))
    write("grpc_frame", "too-large", bytes([2, 1, 1, 1]) + frame("12345") + frame("123456"))
    write("grpc_frame", "callback-fails", bytes([5 | 1 << 5, 3, 2, 1]) + frame("a") + frame("b"))
    write("grpc_frame", "split-prefix", bytes([3, 0xFF, 0, 0x10]) + frame("0123456789abcdef") * 2)


# ---- proto: every input is decoded as every message type ----
def proto_seeds():
    write("proto", "empty", b"")
    write("proto", "eval-request", field_bytes(1, RL) + field_bytes(2, "gcr.io/kpt-fn/set-namespace:v0.4"))
    write("proto", "eval-response", field_bytes(1, RL) + field_bytes(2, "log line\n"))
    write("proto", "health-check-request", field_bytes(1, "evaluator.FunctionEvaluator"))
    write("proto", "health-check-response", field_varint(1, 1))
    entry = field_bytes(1, "grpc.health.v1.Health") + field_bytes(2, field_varint(1, 1))
    write("proto", "health-list-response", field_bytes(1, entry) + field_bytes(1, field_bytes(1, "")))
    write("proto", "config-map", field_bytes(1, field_bytes(1, "k") + field_bytes(2, "v")))
    # unknown fields of every wire type, and a status past the enum
    write("proto", "unknown-fields",
          field_varint(1, 7) + varint(15 << 3 | 1) + b"\x01" * 8 + varint(16 << 3 | 5) + b"\x02" * 4
          + field_bytes(99, "x") + field_varint(2, 2**64 - 1))
    write("proto", "duplicate-fields", field_bytes(2, "a") + field_bytes(2, "bb") + field_bytes(1, "") * 2)


# ---- resourcelist ----
def rl_seeds():
    write("resourcelist", "valid.yaml", RL + "functionConfig: {kind: ConfigMap}\n")
    write("resourcelist", "results.yaml", """apiVersion: config.kubernetes.io/v1
kind: ResourceList
items: []
results:
- message: bad value
  severity: error
  resourceRef: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: ns}
  field: {path: data.key, currentValue: 1.5e3, proposedValue: true}
  file: {path: cm.yaml, index: 2}
  tags: {a: b, c: ""}
- message: "note \\u00e9\\t\\"quoted\\""
  severity: info
  field: {currentValue: .nan, proposedValue: 0x1F}
- severity: warning
  resourceRef: {metadata: {name: legacy}}
""")
    write("resourcelist", "json.json",
          '{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"A"}],'
          '"results":[{"message":"m","severity":"error","field":{"currentValue":-Inf}}]}')
    write("resourcelist", "legacy-results.yaml",
          "kind: ResourceList\nitems: []\nresults:\n  items:\n  - message: x\n    severity: warning\n")
    write("resourcelist", "wrong-kind.yaml", "apiVersion: v1\nkind: ConfigMap\n")
    write("resourcelist", "two-docs.yaml", "kind: ResourceList\n---\nkind: ResourceList\n")
    write("resourcelist", "anchors-tags.yaml",
          "%YAML 1.1\n%TAG !e! tag:example.com,2000:\n--- !e!rl\nkind: &k ResourceList\n"
          "items: [*k, !!str 1, {? [a] : b}]\nresults: [{message: *k, tags: {<<: {x: y}}}]\n")
    write("resourcelist", "bad-types.yaml",
          "kind: ResourceList\nresults:\n- message: {a: 1}\n- 12345678901\n- file: {index: abc}\n"
          "  tags: x\n- message: one\n  message: two\n")
    write("resourcelist", "bom-and-bad-utf8.yaml",
          b"\xef\xbb\xbfkind: ResourceList\nitems:\n- x: \"\xc3\x28\"\n")
    write("resourcelist", "nesting.yaml", "kind: ResourceList\nitems: " + "[" * 60 + "]" * 60 + "\n")
    write("resourcelist", "empty", b"")


# ---- rl_scan: block-style lists as kyaml writes them, and near misses ----
RL_BLOCK_HEAD = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
RL_BLOCK_ITEMS = """items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm
    annotations:
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/path: "dir/cm \\u00e9.yaml"
  data:
    script: |
      #!/bin/sh
      echo "a: b"  # not a comment

    folded: >-
      one
      two
    empty: ""
    list: []
    map: {}
- kind: Deployment
  spec:
    template:
      spec:
        containers:
        - name: c
          args:
          - --flag=x
          - - nested
            - seq
          env: []
    replicas: -1
"""


def rl_scan_seeds():
    write("rl_scan", "kyaml.yaml", RL_BLOCK_HEAD + RL_BLOCK_ITEMS)
    write("rl_scan", "indented.yaml", RL_BLOCK_HEAD + "items:\n  - a: 1\n    b:\n      - x\n  -\n    c: 'it''s'\n")
    write("rl_scan", "config-first.yaml",
          RL_BLOCK_HEAD + "functionConfig:\n  kind: ConfigMap\n  data: {}\n" + RL_BLOCK_ITEMS)
    write("rl_scan", "results-after.yaml", RL_BLOCK_HEAD + RL_BLOCK_ITEMS + """results:
- message: "\\x41 bad"
  severity: error
  file: {index: abc}
- message: one
  message: two
""")
    write("rl_scan", "error-after.yaml", RL_BLOCK_HEAD + RL_BLOCK_ITEMS + "results: [\n")
    write("rl_scan", "second-doc.yaml", RL_BLOCK_HEAD + RL_BLOCK_ITEMS + "---\nkind: ResourceList\n")
    write("rl_scan", "no-newline.yaml", "kind: ResourceList\nitems:\n- a: b")
    write("rl_scan", "scalar-item.yaml", "kind: ResourceList\nitems:\n- a: b\n- just text\n")
    write("rl_scan", "deep.yaml", "kind: ResourceList\nitems:\n" +
          "".join("  " * i + "- k%d:\n" % i for i in range(40)))
    write("rl_scan", "unicode.yaml", "kind: ResourceList\nitems:\n- name: caf\u00e9 \u2603\n  q: \"\\U0001F600\"\n")


# ---- grpc_timeout: header values and durations ----
def timeout_seeds():
    for i, v in enumerate(["1S", "1000000u", "0n", "99999999H", "12345678m", "123456789S", "5x"]):
        write("grpc_timeout", "header-%d" % i, v)
    for i, v in enumerate(["1.5s", "1h30m", "250us", "10ns", "+5m", "2\u00b5s", "3\u03bcs",
                           ".5h", "9223372036854775807ns", "300", "1.s2m"]):
        write("grpc_timeout", "duration-%d" % i, v)
    write("grpc_timeout", "int64-max", struct.pack("<q", 2**63 - 1))


# ---- ws_cli: arguments separated by NUL ----
def cli_seeds():
    def args(*a):
        return "\0".join(a)
    write("ws_cli", "run", args("--port", "9446", "--", "/fn", "arg"))
    write("ws_cli", "all-flags",
          args("--port=0", "--max-request-body-size=1", "--verbosity=10", "--shutdown-grace=1.5s",
               "--max-concurrent-streams=100000", "--idle-timeout=0", "--", "fn"))
    write("ws_cli", "empty-entrypoint", args("--verbosity", "4", "--"))
    write("ws_cli", "help", args("--port=1", "-h"))
    write("ws_cli", "version", args("--version"))
    write("ws_cli", "missing-value", args("--port", "--", "fn"))
    write("ws_cli", "unknown", args("--bogus=1", "--", "fn"))
    write("ws_cli", "bad-values", args("--port=65536", "--idle-timeout=-1s", "--", "x"))
    write("ws_cli", "positional", args("fn"))
    write("ws_cli", "long-name", args("--" + "p" * 80 + "=1", "--"))


# ---- http1: [split][span_at][span_len][reps] request (see fuzz_http1.c) ----
def http1_seeds():
    def req(text, split=0, span_at=0, span_len=0, reps=0):
        return bytes([split, span_at, span_len, reps]) + text.encode()
    write("http1", "healthz", req("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
    write("http1", "head", req("HEAD /readyz?x=1 HTTP/1.1\r\n\r\n", split=128))
    write("http1", "post", req("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"))
    write("http1", "malformed", req("GET healthz\r\n\r\n", split=40))
    # a request line past the 8 KiB head limit: "a" repeated 150 * 64 times
    line = "GET /aa HTTP/1.1\r\n\r\n"
    write("http1", "long-line", req(line, span_at=5 * 256 // len(line) + 1, span_len=0, reps=150))
    # a header block past the limit: the header line repeated
    hdrs = "GET / HTTP/1.1\r\nX-A: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n\r\n"
    at = hdrs.index("X-A")
    write("http1", "long-headers", req(hdrs, span_at=at * 256 // len(hdrs) + 1, span_len=33, reps=5))


# ---- h2_server: [flags][span_at][span_len][reps] bytes after the preface ----
def h2_frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(headers):
    """Literal header fields without indexing, no Huffman; lengths < 127."""
    out = b""
    for name, value in headers:
        name, value = name.encode(), value.encode()
        out += b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
    return out


def h2_server_seeds():
    settings = h2_frame(4, 0, 0)
    def req(path, extra=()):
        return hpack_literal([(":method", "POST"), (":scheme", "http"), (":path", path),
                              (":authority", "x"), ("content-type", "application/grpc"),
                              ("te", "trailers"), *extra])
    check = h2_frame(1, 4, 1, req("/grpc.health.v1.Health/Check")) + h2_frame(0, 1, 1, b"\x00" * 5)
    hdr = bytes([0, 0, 0, 0])
    write("h2_server", "check", hdr + settings + check)
    write("h2_server", "check-then-lower-id", hdr + settings + check.replace(b"\x00\x00\x00\x01", b"\x00\x00\x00\x05")
          + h2_frame(1, 5, 3, req("/grpc.health.v1.Health/Check")))
    write("h2_server", "reset", hdr + settings + h2_frame(1, 4, 1, req("/grpc.health.v1.Health/Watch"))
          + h2_frame(3, 0, 1, struct.pack(">I", 8)) + h2_frame(0, 0, 1, b"late"))
    write("h2_server", "unknown-method", hdr + settings + h2_frame(1, 5, 1, req("/x.Y/Z")))
    write("h2_server", "timeout", hdr + settings + h2_frame(1, 4, 1, req("/grpc.health.v1.Health/List",
          [("grpc-timeout", "99999999H")])) + h2_frame(0, 1, 1, b"\x00" * 5))
    # a long header value: the "v" of x-long repeated by the stretch
    long_req = h2_frame(1, 5, 1, req("/grpc.health.v1.Health/Check", [("x-long", "v")]))
    at = len(settings) + long_req.rindex(b"v")
    body = settings + long_req
    write("h2_server", "long-header", bytes([0, at * 256 // len(body) + 1, 0, 200]) + body)
    write("h2_server", "http1", bytes([1, 0, 0, 0]) + b"GET /metrics HTTP/1.1\r\n\r\n")


# ---- kubeconfig: [context/namespace picks][span_at][span_len][reps] file (see fuzz_kubeconfig.c) ----
KC_HEAD = ("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\n"
           "    certificate-authority: ca.pem\n    tls-server-name: api.example\n"
           "contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ns1}\n")


def stretched(picks, body, span, span_len, reps):
    """4 header bytes that repeat body's first `span` (span_len bytes) reps*64 times."""
    if isinstance(body, str):
        body = body.encode()
    idx = body.index(span.encode() if isinstance(span, str) else span)
    hdr1 = max(h for h in range(256) if h * len(body) // 256 <= idx)
    at = hdr1 * len(body) // 256
    return bytes([picks, hdr1, (span_len + idx - at - 1) % 32, reps]) + body


def kubeconfig_seeds():
    plain = bytes(4)
    write("kubeconfig", "token", plain + (KC_HEAD + "users:\n- name: u\n  user: {token: abc}\n").encode())
    write("kubeconfig", "token-file", plain + (KC_HEAD + "users:\n- name: u\n  user: {tokenFile: token}\n").encode())
    write("kubeconfig", "token-crlf", plain + (KC_HEAD + 'users:\n- name: u\n  user: {token: "a\\r\\nX: 1"}\n').encode())
    write("kubeconfig", "client-cert", plain + (KC_HEAD + "users:\n- name: u\n  user:\n"
          "    client-certificate-data: QUJD\n    client-key-data: REVG\n").encode())
    write("kubeconfig", "exec", plain + (KC_HEAD + "users:\n- name: u\n  user:\n    exec:\n"
          "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin\n"
          "      args: [get-token, --x]\n      env: [{name: A, value: b}]\n"
          "      installHint: install it\n").encode())
    write("kubeconfig", "json", plain + json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:8080", "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}).encode())
    write("kubeconfig", "context-x", bytes([2, 0, 0, 0]) + (KC_HEAD + "- name: x\n  context: {cluster: k}\n").encode())
    # deep and long: a flow value nested thousands deep, block sequences
    # nested on one line, a long token, many repeated entries
    write("kubeconfig", "deep-flow", stretched(0, KC_HEAD + "preferences: [[[[1]]]]\n", "[", 1, 255))
    write("kubeconfig", "deep-block", stretched(0, KC_HEAD + "extensions:\n- - - - x\n", "- ", 2, 255))
    write("kubeconfig", "long-token", stretched(0, KC_HEAD + "users:\n- name: u\n  user: {token: abcdefgh}\n",
                                                "abcdefgh", 8, 255))
    write("kubeconfig", "many-users", stretched(0, KC_HEAD + "users:\n- {name: u, user: {token: t}}\n",
                                                "- {name", 29, 40))


# ---- registry_json: byte 0 the Content-Type, bytes 1-3 the stretch, then an answer ----
def registry_json_seeds():
    digest = "sha256:" + "ab" * 32

    def seed(name, ct, body, span=None, reps=0):
        """span: the text in body whose first occurrence is repeated reps * 64 more times."""
        body = body.encode()
        at, length = 0, 1
        if span:
            at, length = body.index(span.encode()), len(span)
            while at * 256 // len(body) * len(body) // 256 != at:   # hdr[1] addresses at
                body = b" " + body
                at += 1
        hdr = bytes([ct, at * 256 // len(body) if span else 0, (length - 1) % 32, reps])
        write("registry_json", name, hdr + body)

    manifest = ('{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",'
                '"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":42},'
                '"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":1}]}'
                % (digest, digest))
    index = ('{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":['
             '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":7,'
             '"platform":{"architecture":"arm","os":"linux","variant":"v7"}},'
             '{"digest":"%s","size":7,"platform":{"architecture":"amd64","os":"linux"}}]}' % (digest, digest))
    config = '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/fn","a"],"Cmd":["--x"]}}'
    seed("manifest", 1, manifest)
    seed("index", 2, index)
    seed("docker-list-no-platform", 4, '{"manifests":[{"digest":"%s"}]}' % digest)
    seed("config", 0, config)
    seed("token", 6, '{"token":"abc","access_token":"def","expires_in":300}')
    seed("token-crlf", 6, '{"token":"a\\r\\nX-Evil: 1"}')
    seed("nul-entrypoint", 0, '{"config":{"Entrypoint":["/fn\\u0000 -c evil"]}}')
    seed("nul-digest", 1, '{"config":{"digest":"%s\\u0000x"}}' % digest)
    seed("hostile-media-type", 1, '{"mediaType":"x\\"\\n\\u001b[31m\\",\\"y\\":\\"","config":{}}')
    seed("error-body", 6, '{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}')
    seed("schema1", 5, '{"schemaVersion":1,"name":"x","tag":"v1","fsLayers":[]}')
    # stretched: deep nesting past JSON_MAX_DEPTH, long arrays and strings
    seed("deep-arrays", 0, "[1]", span="[", reps=255)
    seed("deep-objects", 1, '{"config":{"a":1}}', span='{"a":', reps=255)
    seed("long-entrypoint", 0, config, span='"/fn",', reps=255)
    seed("many-platforms", 2, '{"manifests":[{"platform":{"os":"x"}},{"digest":"%s"}]}' % digest,
         span='{"platform":{"os":"x"}},', reps=255)
    seed("long-token", 6, '{"token":"abcdefgh"}', span="abcdefgh", reps=255)


if __name__ == "__main__":
    kubeconfig_seeds()


# ---- kptfile: [unused][span_at][span_len][reps] Kptfile (see fuzz_kptfile.c) ----
def kptfile_seeds():
    head = ("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n"
            "  mutators:\n  - image: example.com/fn:v1\n")

    def seed(name, text, span=None, reps=0):
        """span: the text repeated (its first occurrence), reps * 64 times more."""
        body = text.encode()
        hdr = bytes([0, 0, 0, 0])
        if span:
            at = body.index(span.encode())
            pick = next(h for h in range(256) if h * len(body) // 256 >= at)
            at = pick * len(body) // 256
            assert body[at:at + len(span)] == span.encode(), (name, at)
            hdr = bytes([0, pick, len(span) - 1, reps])
        write("kptfile", name, hdr + body)

    seed("plain", head)
    seed("config-map", head + "    name: set\n    configMap:\n      k: v\n      n: '1'\n"
         "  validators:\n  - image: example.com/check:v1\n")
    seed("config-path", head + "    configPath: fn-config.yaml\n")
    seed("anchors", head + "    configMap: &m {k: v}\n  - image: example.com/b:v1\n"
         "    configMap: *m\n")
    seed("cycle", head + "    configMap: &m\n      self: *m\n")
    # 255 * 64 more "- ": about 16,000 levels of block sequences
    seed("deep-block", head + "    x:\n    - - - x\n", span="- ", reps=255)
    seed("deep-flow", head + "    configMap: {k: [[[[v]]]]}\n", span="[", reps=4)
    seed("deep-map", head + "    x: {a: {a: {a: 1}}}\n", span="{a: ", reps=40)
    # aliases of aliases: each "*a, " repeated stands for the whole anchor again
    seed("alias-storm", head + "    a: &a [x, x, x, x]\n    b: &b [*a, *a]\n    c: [*b, *b]\n",
         span="*b, ", reps=255)
    seed("long-image", head.replace("fn:v1", "fn:v1-aaaa"), span="a", reps=255)


# ---- yaml_load: [unused][span_at][span_len][reps] YAML (see fuzz_yaml_load.c) ----
def yaml_load_seeds():
    for name in os.listdir(os.path.join(ROOT, "kptfile")):
        with open(os.path.join(ROOT, "kptfile", name), "rb") as f:
            write("yaml_load", "kptfile-" + name, f.read())
    write("yaml_load", "documents", b"\0\0\0\0%YAML 1.1\n%TAG !e! tag:example.com,2000:\n---\n"
          b"a: !e!x &a {b: [1, 'two', \"3\"], c: |\n  text\n}\n...\n--- *x\n---\n"
          b"- ? complex\n  : key\n- !!binary aGk=\n- <<: {m: 1}\n")
    write("yaml_load", "aliases", b"\0\0\0\0kind: ResourceList\nitems: [&i {a: 1}, *i]\n"
          b"results:\n- message: x\n  tags: &t {k: v}\nafter: *i\n")
    write("yaml_load", "duplicate-anchor", b"\0\0\0\0a: &x 1\nb: &x 2\nc: *x\n")


if __name__ == "__main__":
    kptfile_seeds()
    yaml_load_seeds()
    http1_seeds()
    h2_server_seeds()
    frame_seeds()
    proto_seeds()
    rl_seeds()
    rl_scan_seeds()
    timeout_seeds()
    cli_seeds()
    registry_json_seeds()
