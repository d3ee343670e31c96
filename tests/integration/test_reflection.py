"""grpc.reflection.v1 and v1alpha ServerReflection (issue 17): what grpcurl
`list` and `describe` ask, over one bidirectional stream, against both
servers. The client is grpcio's stream-stream call with modules protoc
generates from proto/reflection*.proto (Debian has no grpcurl)."""

import os
import importlib
import subprocess
import sys
import types

import grpc
import pytest
from google.protobuf import descriptor_pb2

from krmtest import CLIENT_BIN, ROOT

SERVICES = ["evaluator.FunctionEvaluator", "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]
VERSIONS = ["v1", "v1alpha"]
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]


@pytest.fixture(scope="session")
def refl(tmp_path_factory):
    """reflection_pb2 (v1) and reflection_v1alpha_pb2, generated at test time."""
    out = tmp_path_factory.mktemp("refl")
    # v1alpha is v1 under its older package, as the build makes it.
    v1 = open(os.path.join(ROOT, "proto", "reflection.proto")).read()
    assert "\npackage grpc.reflection.v1;\n" in v1
    (out / "reflection_v1alpha.proto").write_text(
        v1.replace("\npackage grpc.reflection.v1;\n", "\npackage grpc.reflection.v1alpha;\n"))
    subprocess.run(["protoc", "--proto_path=proto", f"--proto_path={out}", f"--python_out={out}",
                    "proto/reflection.proto", f"{out}/reflection_v1alpha.proto"], cwd=ROOT, check=True)
    sys.path.insert(0, str(out))
    try:
        return {"v1": importlib.import_module("reflection_pb2"),
                "v1alpha": importlib.import_module("reflection_v1alpha_pb2")}
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def servers(module_launcher, tmp_path_factory):
    """A wrapper-server and a runner-client serve."""
    d = tmp_path_factory.mktemp("serve")
    (d / "functions").mkdir()
    script = d / "functions" / "cat"
    script.write_text("#!/bin/sh\nexec cat\n")
    script.chmod(0o755)
    cfg = d / "functions.yaml"
    cfg.write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                   "metadata:\n  name: cat\nspec:\n  image: cat\n"
                   "  binaryExecutor:\n    tags: [v1]\n    path: cat\n")
    runner = module_launcher.start([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg),
        "--functions", str(d / "functions"), "--disable-runtimes=pod"])
    return {"wrapper-server": module_launcher.start(["cat"]), "runner-client": runner}


class Reflection:
    """One ServerReflectionInfo stream: ask() sends a request and waits for its answer."""

    def __init__(self, srv, mod, version):
        self.mod = mod
        call = srv.channel().stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=mod.ServerReflectionRequest.SerializeToString,
            response_deserializer=mod.ServerReflectionResponse.FromString)
        self.queue = []
        self.cond = __import__("threading").Condition()
        self.closed = False
        self.responses = call(self._requests(), timeout=30)

    def _requests(self):
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.queue or self.closed)
                if not self.queue:
                    return
                req = self.queue.pop(0)
            yield req

    def send(self, **fields):
        with self.cond:
            self.queue.append(self.mod.ServerReflectionRequest(host="h", **fields))
            self.cond.notify()

    def ask(self, **fields):
        self.send(**fields)
        return next(self.responses)

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify()
        rest = list(self.responses)
        return rest, self.responses.code()


def stream(srv, refl, version):
    return Reflection(srv, refl[version], version)


def file_proto(resp):
    files = resp.file_descriptor_response.file_descriptor_proto
    assert len(files) == 1, resp
    return descriptor_pb2.FileDescriptorProto.FromString(files[0])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("which", ["wrapper-server", "runner-client"])
def test_list_services(servers, refl, which, version):
    r = stream(servers[which], refl, version)
    resp = r.ask(list_services="")
    assert resp.WhichOneof("message_response") == "list_services_response"
    assert [s.name for s in resp.list_services_response.service] == SERVICES
    assert resp.valid_host == "h" and resp.original_request.list_services == ""
    assert r.close() == ([], grpc.StatusCode.OK)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("which", ["wrapper-server", "runner-client"])
def test_describe_evaluate_function(servers, refl, which, version):
    """grpcurl describe: the service's file, then the request message's."""
    r = stream(servers[which], refl, version)
    fd = file_proto(r.ask(file_containing_symbol="evaluator.FunctionEvaluator"))
    assert fd.name == "evaluator.proto" and fd.package == "evaluator" and not fd.dependency
    (svc,) = fd.service
    (method,) = svc.method
    assert (svc.name, method.name) == ("FunctionEvaluator", "EvaluateFunction")
    assert method.input_type == ".evaluator.EvaluateFunctionRequest"
    assert method.output_type == ".evaluator.EvaluateFunctionResponse"
    assert not method.client_streaming and not method.server_streaming
    for symbol in ["evaluator.EvaluateFunctionRequest", "evaluator.FunctionEvaluator.EvaluateFunction",
                   "evaluator.EvaluateFunctionRequest.image"]:
        assert file_proto(r.ask(file_containing_symbol=symbol)) == fd
    msg = {m.name: m for m in fd.message_type}["EvaluateFunctionRequest"]
    assert [(f.name, f.number) for f in msg.field] == [("resource_list", 1), ("image", 2), ("Tag", 3)]
    assert file_proto(r.ask(file_by_filename="evaluator.proto")) == fd
    assert r.close()[1] == grpc.StatusCode.OK


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_health_and_reflection_itself(servers, refl, version):
    r = stream(servers["wrapper-server"], refl, version)
    health = file_proto(r.ask(file_containing_symbol="grpc.health.v1.HealthCheckResponse.SERVING"))
    assert health.name == "health.proto" and [s.name for s in health.service] == ["Health"]
    own = file_proto(r.ask(file_containing_symbol=f"grpc.reflection.{version}.ServerReflection"))
    assert own.package == f"grpc.reflection.{version}"
    (method,) = own.service[0].method
    assert method.client_streaming and method.server_streaming
    r.close()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("ask", [
    {"file_containing_symbol": "evaluator.NoSuchThing"},
    {"file_containing_symbol": "evaluator"},                 # a package is not a symbol
    {"file_containing_symbol": "evaluator.FunctionEvaluator.EvaluateFunction.x"},
    {"file_by_filename": "nope.proto"},
    {"all_extension_numbers_of_type": "evaluator.Nope"},
])
def test_unknown_names_are_not_found_and_the_stream_goes_on(servers, refl, version, ask):
    r = stream(servers["wrapper-server"], refl, version)
    resp = r.ask(**ask)
    assert resp.WhichOneof("message_response") == "error_response"
    assert resp.error_response.error_code == NOT_FOUND
    assert resp.error_response.error_message == "proto: not found"
    assert r.ask(list_services="").list_services_response.service
    assert r.close() == ([], grpc.StatusCode.OK)


def test_extensions(servers, refl):
    mod = refl["v1"]
    r = stream(servers["wrapper-server"], refl, "v1")
    resp = r.ask(all_extension_numbers_of_type="evaluator.EvaluateFunctionRequest")
    assert resp.all_extension_numbers_response.base_type_name == "evaluator.EvaluateFunctionRequest"
    assert list(resp.all_extension_numbers_response.extension_number) == []
    resp = r.ask(file_containing_extension=mod.ExtensionRequest(
        containing_type="evaluator.EvaluateFunctionRequest", extension_number=100))
    assert resp.error_response.error_code == NOT_FOUND
    r.close()


@pytest.mark.parametrize("which", ["wrapper-server", "runner-client"])
def test_many_requests_on_one_stream(servers, refl, which):
    r = stream(servers[which], refl, "v1")
    for i in range(300):
        if i % 3 == 0:
            assert r.ask(list_services="").list_services_response.service
        elif i % 3 == 1:
            assert file_proto(r.ask(file_by_filename="health.proto")).name == "health.proto"
        else:
            assert r.ask(file_containing_symbol=f"x{i}").error_response.error_code == NOT_FOUND
    assert r.close() == ([], grpc.StatusCode.OK)


def v1_call(srv, mod):
    return srv.channel().stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=mod.ServerReflectionRequest.SerializeToString,
        response_deserializer=mod.ServerReflectionResponse.FromString)


def test_pipelined_requests_all_answered_in_order(servers, refl):
    """Requests sent without waiting: every one is answered, in order."""
    mod = refl["v1"]
    call = v1_call(servers["wrapper-server"], mod)
    names = ["evaluator.proto", "health.proto", "reflection.proto", "reflection_v1alpha.proto"] * 50
    got = [file_proto(resp).name for resp in
           call(iter([mod.ServerReflectionRequest(file_by_filename=n) for n in names]), timeout=30)]
    assert got == names


def test_messages_per_stream_are_bounded(servers, refl):
    """1000 requests on one stream are answered; the next ends it."""
    mod = refl["v1"]
    call = v1_call(servers["wrapper-server"], mod)
    responses = call(iter([mod.ServerReflectionRequest(file_containing_symbol="x")] * 1001), timeout=30)
    with pytest.raises(grpc.RpcError) as ei:
        for _ in responses:
            pass
    assert ei.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "more than 1000 request messages on one stream" in ei.value.details()
    assert servers["wrapper-server"].check().status == servers["wrapper-server"].pb.health.HealthCheckResponse.SERVING


def test_bad_requests_end_the_stream(servers, refl):
    ch = servers["wrapper-server"].channel()
    call = ch.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
    with pytest.raises(grpc.RpcError) as ei:
        list(call(iter([b"\xff\xff"]), timeout=10))
    assert ei.value.code() == grpc.StatusCode.INTERNAL
    assert "error unmarshalling request" in ei.value.details()
    with pytest.raises(grpc.RpcError) as ei:
        list(call(iter([b"\x0a\x01h"]), timeout=10))   # host only, no request
    assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert ei.value.details() == "invalid MessageRequest: <nil>"


def test_empty_stream_ends_ok(servers, refl):
    call = servers["runner-client"].channel().stream_stream(
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
    responses = call(iter([]), timeout=10)
    assert list(responses) == [] and responses.code() == grpc.StatusCode.OK



@pytest.mark.parametrize("asked", [True, False])
def test_open_stream_ends_when_the_server_drains(start_server, refl, asked):
    """A reflection stream left open does not hold SIGTERM's drain for the
    whole grace period: it is ended (UNAVAILABLE) once no call is left. The
    transport, not the handler, keeps the open streams: one whose client has
    asked nothing yet is ended too."""
    import signal
    import time
    srv = start_server(["cat"], options=["--shutdown-grace", "20s", "--verbosity", "4"])
    r = stream(srv, refl, "v1")
    if asked:
        assert r.ask(list_services="").list_services_response.service
    else:
        srv.assert_logged(["/grpc.reflection.v1.ServerReflection/ServerReflectionInfo: HEADERS -> READING"])
    start = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=10) == 0
    assert time.monotonic() - start < 5
    with pytest.raises(grpc.RpcError) as ei:
        next(r.responses)
    assert ei.value.code() == grpc.StatusCode.UNAVAILABLE
