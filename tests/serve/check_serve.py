#!/usr/bin/python3
"""Tests of `ophost serve` (tests/serve/CMakeLists.txt): REST and gRPC clients against a server on free loopback
ports.

Usage: check_serve.py OPHOST PACKS WORK EXAMPLES PYSTUBS CASE

Each CASE builds its model repository in WORK/CASE, starts `ophost serve --http-port 0 --grpc-port 0` (the
server prints the ports it bound), checks the answers and stops the server with SIGTERM (exit status 0).
One file of ~630 lines on purpose: the ten cases (one CTest each) share the repository builders, the server
fixture and the request helpers above them, and each case is a single function that reads top to bottom.
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import requests
from onnx import TensorProto, helper, save

OPHOST, PACKS, WORK, EXAMPLES, PYSTUBS, CASE = sys.argv[1:7]
sys.path.insert(0, PYSTUBS)
import grpc  # noqa: E402
import grpc_service_pb2 as pb  # noqa: E402
import grpc_service_pb2_grpc as pb_grpc  # noqa: E402

WORK = os.path.join(WORK, CASE)
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
REPO = os.path.join(WORK, "models")


def fail(msg):
    sys.exit("FAIL: " + msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


# --- model repository ---------------------------------------------------------------------------------------------

def add_model(name, src=None, onnx_model=None, config=None, version=None):
    folder = os.path.join(REPO, name, str(version)) if version else os.path.join(REPO, name)
    os.makedirs(folder, exist_ok=True)
    if src:
        shutil.copy(src, os.path.join(folder, "model.onnx"))
    if onnx_model is not None:
        save(onnx_model, os.path.join(folder, "model.onnx"))
    if config is not None:
        with open(os.path.join(REPO, name, "config.json"), "w") as f:
            json.dump(config, f)


def chain(op, shape, domain, count=1, **attrs):
    """x -> op -> ... (count nodes) -> y, float32 of `shape`."""
    names = ["x"] + [f"t{i}" for i in range(count - 1)] + ["y"]
    nodes = [helper.make_node(op, [names[i]], [names[i + 1]], name=f"{op}_node{i}", domain=domain, **attrs)
             for i in range(count)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    m = helper.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    return m


def example(name):
    return os.path.join(EXAMPLES, name)


# --- server -------------------------------------------------------------------------------------------------------

class Server:
    def __init__(self, extra=(), wait_ready=True):
        cmd = [OPHOST, "serve", "--model-repository", REPO, "--http-port", "0", "--grpc-port", "0",
               "--plugin-path", PACKS] + list(extra)
        print("$ " + " ".join(cmd))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out, self.err = [], []
        ports = {}
        got = threading.Event()

        def pump(stream, lines, parse):
            for line in stream:
                lines.append(line)
                m = re.match(r"ophost serve: (HTTP|gRPC) listening on [^ ]+:(\d+)$", line.strip())
                if parse and m:
                    ports[m.group(1)] = int(m.group(2))
                    if len(ports) == 2:
                        got.set()
            got.set()

        threading.Thread(target=pump, args=(self.proc.stdout, self.out, True), daemon=True).start()
        threading.Thread(target=pump, args=(self.proc.stderr, self.err, False), daemon=True).start()
        got.wait(60)
        if len(ports) != 2:
            self.proc.kill()
            fail("server did not print its ports: " + "".join(self.out + self.err))
        self.url = f"http://127.0.0.1:{ports['HTTP']}"
        self.grpc_target = f"127.0.0.1:{ports['gRPC']}"
        if wait_ready:
            self.wait_ready()

    def wait_ready(self, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            r = requests.get(self.url + "/v2/health/ready", timeout=10)
            if r.status_code == 200:
                return
            time.sleep(0.1)
        fail("server not ready: " + r.text + "\n" + "".join(self.err))

    def get(self, path, **kw):
        return requests.get(self.url + path, timeout=60, **kw)

    def post(self, path, **kw):
        return requests.post(self.url + path, timeout=60, **kw)

    def stub(self):
        return pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(self.grpc_target))

    def stop(self, expect_rc=0, timeout=60):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        time.sleep(0.1)
        print("server stderr:\n" + "".join(self.err))
        check(rc == expect_rc, f"server exits {expect_rc} after SIGTERM (got {rc})")
        return rc

    def alive(self):
        check(self.proc.poll() is None, "the server process is still running")
        check(self.get("/v2/health/live").status_code == 200, "the server still answers /v2/health/live")


def infer_json(x, name="x", datatype="FP32", shape=None):
    return {"inputs": [{"name": name, "datatype": datatype, "shape": list(shape or x.shape),
                        "data": x.flatten().tolist()}]}


def binary_request(inputs, outputs=None, binary_out=True):
    """inputs: [(name, datatype, array)] -> (body, headers) with the binary tensor data extension."""
    head = {"inputs": [{"name": n, "datatype": dt, "shape": list(a.shape),
                        "parameters": {"binary_data_size": a.nbytes}} for n, dt, a in inputs]}
    if outputs is not None:
        head["outputs"] = [{"name": o, "parameters": {"binary_data": binary_out}} for o in outputs]
    else:
        head["parameters"] = {"binary_data_output": binary_out}
    h = json.dumps(head).encode()
    body = h + b"".join(a.tobytes() for _, _, a in inputs)
    return body, {"Inference-Header-Content-Length": str(len(h)), "Content-Type": "application/octet-stream"}


def split_binary(r):
    """A binary response -> (json header, {output name: raw bytes})."""
    n = int(r.headers["Inference-Header-Content-Length"])
    head = json.loads(r.content[:n])
    blobs, pos = {}, n
    for o in head["outputs"]:
        size = o["parameters"]["binary_data_size"]
        blobs[o["name"]] = r.content[pos:pos + size]
        pos += size
    check(pos == len(r.content), "binary response: the sizes add up to the body")
    return head, blobs


def expect_error(r, status, *needles):
    body = r.json() if r.headers.get("Content-Type", "").startswith("application/json") else {}
    msg = body.get("error", "")
    ok = r.status_code == status and all(n in msg for n in needles)
    check(ok, f"{status} naming {needles}: got {r.status_code} {r.text[:300]}")


def mixed_small_input():
    return np.load(example("mixed_small.input.x.npy"))


def cli_output(model, inputs):
    out = os.path.join(WORK, "cli_out")
    args = [OPHOST, "run", model, "--output-dir", out] + [f"--input={n}={p}" for n, p in inputs.items()]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    print("$ " + " ".join(args) + "\n" + p.stdout + p.stderr)
    check(p.returncode == 0, "ophost run exits 0")
    return out


# --- cases --------------------------------------------------------------------------------------------------------

def case_routes():
    add_model("mixed_small", example("mixed_small.onnx"))
    add_model("broadcast", example("broadcast.onnx"))
    add_model("versioned", example("relu6_defaults.onnx"), version=1)
    add_model("versioned", example("relu6_defaults.onnx"), version=2)
    s = Server(["--default-model", "mixed_small"])
    r = s.get("/v2/health/live")
    check(r.status_code == 200 and r.json()["live"] is True, "GET /v2/health/live")
    check(s.get("/v2/health/ready").status_code == 200, "GET /v2/health/ready")
    check(s.get("/healthz").status_code == 200, "GET /healthz")
    meta = s.get("/v2").json()
    check(meta["name"] == "ophost" and "binary_tensor_data" in meta["extensions"], "GET /v2: server metadata")
    m = s.get("/v2/models/mixed_small").json()
    check(m["name"] == "mixed_small" and m["versions"] == ["1"] and
          m["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [2, 8]}] and
          m["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [2, 8]}], "GET /v2/models/NAME: metadata")
    v = s.get("/v2/models/versioned").json()
    check(v["versions"] == ["1", "2"], "versioned model lists versions 1 and 2")
    check(s.get("/v2/models/versioned/versions/1").json()["inputs"][0]["shape"] == [3, 4],
          "GET /v2/models/NAME/versions/V")
    check(s.get("/v2/models/mixed_small/ready").status_code == 200, "GET /v2/models/NAME/ready")
    check(s.get("/v2/models/versioned/versions/2/ready").status_code == 200, "GET /v2/models/NAME/versions/V/ready")

    x = mixed_small_input()
    ref = np.load(example("mixed_small.output.y.npy"))
    for path in ["/v2/models/mixed_small/infer", "/v2/models/mixed_small/versions/1/infer", "/infer"]:
        r = s.post(path, json=infer_json(x))
        check(r.status_code == 200, f"POST {path} (JSON): {r.text[:200]}")
        out = r.json()["outputs"][0]
        y = np.array(out["data"], dtype=np.float32).reshape(out["shape"])
        check(out["name"] == "y" and out["datatype"] == "FP32" and np.allclose(y, ref, rtol=1e-5, atol=1e-6),
              f"POST {path}: y matches the reference")
    r = s.post("/v2/models/mixed_small/infer", json=dict(infer_json(x), id="req-7"))
    check(r.json()["id"] == "req-7" and r.json()["model_version"] == "1", "the response carries id and version")

    # Four inputs in binary form, two of five outputs requested (in the order asked), one as JSON.
    ins = [(n, "FP32", np.load(example(f"broadcast.input.{n}.npy"))) for n in "abcs"]
    body, headers = binary_request(ins, outputs=["div", "add"])
    r = s.post("/v2/models/broadcast/infer", data=body, headers=headers)
    check(r.status_code == 200 and r.headers["Content-Type"] == "application/octet-stream",
          "binary request and response: 200, application/octet-stream")
    head, blobs = split_binary(r)
    check([o["name"] for o in head["outputs"]] == ["div", "add"], "requested outputs only, in the order asked")
    for name in ["div", "add"]:
        ref = np.load(example(f"broadcast.output.{name}.npy"))
        got = np.frombuffer(blobs[name], dtype=np.float32).reshape(ref.shape)
        check(np.allclose(got, ref, rtol=1e-5, atol=1e-6), f"broadcast output {name} (binary)")
    body, headers = binary_request(ins, outputs=["mul"], binary_out=False)
    r = s.post("/v2/models/broadcast/infer", data=body, headers=headers)
    check(r.status_code == 200 and r.headers["Content-Type"].startswith("application/json"),
          "binary inputs with a JSON output: a plain JSON response")
    out = r.json()["outputs"][0]
    check(np.allclose(np.array(out["data"], np.float32).reshape(out["shape"]),
                      np.load(example("broadcast.output.mul.npy")), rtol=1e-5, atol=1e-6), "broadcast output mul")

    r = s.get("/metrics")
    check(r.status_code == 200 and 'ophost_requests_total{model="mixed_small",version="1"} 4' in r.text,
          "GET /metrics counts the 4 mixed_small requests")
    expect_error(s.get("/v2/nothing"), 404, "no route GET /v2/nothing")
    expect_error(s.post("/v2/models/mixed_small/metadata", json={}), 404, "no route POST")
    s.stop()


def case_cli_bytes():
    add_model("mixed_small", example("mixed_small.onnx"))
    x = mixed_small_input()
    out = cli_output(example("mixed_small.onnx"), {"x": example("mixed_small.input.x.npy")})
    want = np.load(os.path.join(out, "y.npy")).tobytes()
    s = Server()
    body, headers = binary_request([("x", "FP32", x)])
    r = s.post("/v2/models/mixed_small/infer", data=body, headers=headers)
    _, blobs = split_binary(r)
    check(blobs["y"] == want, "REST binary output: exactly the bytes `ophost run` writes")
    r = s.post("/v2/models/mixed_small/infer", json=infer_json(x))
    got = np.array(r.json()["outputs"][0]["data"], dtype=np.float32).tobytes()
    check(got == want, "REST JSON output: the same float32 values, bit for bit")
    stub = s.stub()
    req = pb.ModelInferRequest(model_name="mixed_small", inputs=[
        pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[2, 8])],
        raw_input_contents=[x.tobytes()])
    resp = stub.ModelInfer(req, timeout=60)
    check(resp.raw_output_contents[0] == want, "gRPC raw_output_contents: exactly the bytes `ophost run` writes")
    s.stop()


def case_hostile():
    add_model("mixed_small", example("mixed_small.onnx"))
    s = Server(["--max-body-bytes", "65536", "--max-request-tensor-bytes", "1048576"])
    x = mixed_small_input()
    url = "/v2/models/mixed_small/infer"
    expect_error(s.post(url, data=b'{"inputs": [', headers={"Content-Type": "application/json"}), 400,
                 "not valid JSON")
    expect_error(s.post(url, data=b"[1, 2]"), 400, "JSON object")
    expect_error(s.post(url, json=infer_json(x.astype(np.float64), datatype="FP64")), 400,
                 "inputs[0] 'x'", "datatype FP64 does not match the model's FP32 [2,8]")
    expect_error(s.post(url, json=infer_json(np.zeros((2, 9), np.float32))), 400,
                 "inputs[0] 'x'", "shape [2,9] does not match the model's FP32 [2,8]")
    expect_error(s.post(url, json=infer_json(np.zeros((16,), np.float32))), 400, "shape [16] does not match")
    expect_error(s.post("/v2/models/nope/infer", json=infer_json(x)), 404, "model 'nope' is not in the repository",
                 "mixed_small")
    expect_error(s.post("/v2/models/mixed_small/versions/7/infer", json=infer_json(x)), 404, "no version '7'")
    expect_error(s.get("/v2/models/nope"), 404, "model 'nope'")
    expect_error(s.post(url, json=dict(infer_json(x), outputs=[{"name": "zz"}])), 400,
                 "outputs[0]: 'zz' is not an output of model 'mixed_small'")
    expect_error(s.post(url, json=infer_json(x, shape=[2, -8])), 400, "inputs[0].shape[1] is -8")
    expect_error(s.post(url, json=infer_json(x, shape=[4611686018427387904, 4, 4])), 400,
                 "inputs[0].shape", "overflows")
    expect_error(s.post(url, json=infer_json(x, shape=[1 << 20, 1 << 20])), 413, "inputs[0].shape",
                 "--max-request-tensor-bytes")
    expect_error(s.post(url, json=infer_json(x, shape=[2, 8.5])), 400, "inputs[0].shape[1]")
    expect_error(s.post(url, json=infer_json(x, name="q")), 400, "inputs[0]: 'q' is not an input")
    expect_error(s.post(url, json=infer_json(x, datatype="FP33")), 400, "inputs[0] 'x'", "'FP33'")
    expect_error(s.post(url, json={"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 8],
                                               "data": list(range(15))}]}), 400, "data holds 15 elements")
    expect_error(s.post(url, json={"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 8],
                                               "data": ["a"] * 16}]}), 400, "inputs[0].data[0]")
    expect_error(s.post(url, json={"inputs": [{"name": "x", "datatype": "INT8", "shape": [2, 8],
                                               "data": [1000] * 16}]}), 400, "inputs[0].data[0]", "out of range")
    expect_error(s.post(url, json={"inputs": []}), 400, "inputs")
    expect_error(s.post(url, json={"inputs": [{"name": "x", "shape": [2, 8], "data": [0] * 16}]}), 400,
                 "inputs[0] 'x': datatype is missing")
    deep = b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 8], "data": ' + b"[" * 20000 + \
        b"]" * 20000 + b"}]}"
    expect_error(s.post(url, data=deep), 400, "inputs[0].data", "nested deeper")
    # Binary extension: truncated data, trailing data, a header length past the body.
    body, headers = binary_request([("x", "FP32", x)])
    expect_error(s.post(url, data=body[:-54], headers=headers), 400, "inputs[0] 'x'",
                 "binary_data_size is 64 bytes, but only 10")
    expect_error(s.post(url, data=body + b"\0" * 8, headers=headers), 400, "8 bytes of binary data follow")
    expect_error(s.post(url, data=body, headers={"Inference-Header-Content-Length": str(len(body) + 1)}), 400,
                 "Inference-Header-Content-Length")
    expect_error(s.post(url, data=body, headers={"Inference-Header-Content-Length": "-3"}), 400,
                 "Inference-Header-Content-Length")
    h = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 8],
                                "parameters": {"binary_data_size": 60}}]}).encode()
    expect_error(s.post(url, data=h + x.tobytes()[:60], headers={"Inference-Header-Content-Length": str(len(h))}),
                 400, "inputs[0] 'x'", "60 bytes of data for FP32 [2,8], which needs 64")
    r = s.post(url, data=b"x" * 100000)
    expect_error(r, 413, "--max-body-bytes")
    expect_error(requests.put(s.url + url, data=b"{}", timeout=30), 405, "method PUT")
    # Still serving, and correctly.
    s.alive()
    r = s.post(url, json=infer_json(x))
    check(r.status_code == 200 and np.allclose(np.array(r.json()["outputs"][0]["data"], np.float32).reshape(2, 8),
                                               np.load(example("mixed_small.output.y.npy")), rtol=1e-5, atol=1e-6),
          "a good request after the hostile ones is answered correctly")
    s.stop()


def case_pack_failure():
    add_model("failing", onnx_model=chain("fail_negative", [2, 4], "srv"))
    s = Server()
    good = np.arange(8, dtype=np.float32).reshape(2, 4)
    bad = good.copy()
    bad[0, 0] = -1
    expect_error(s.post("/v2/models/failing/infer", json=infer_json(bad)), 500, "fail_negative_node0", "serveops",
                 "x[0] is negative")
    try:
        s.stub().ModelInfer(pb.ModelInferRequest(model_name="failing", inputs=[
            pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[2, 4])],
            raw_input_contents=[bad.tobytes()]), timeout=60)
        fail("gRPC: the failing run was answered OK")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INTERNAL and "serveops" in e.details(),
              f"gRPC: INTERNAL naming the pack ({e.details()})")
    r = s.post("/v2/models/failing/infer", json=infer_json(good))
    check(r.status_code == 200 and r.json()["outputs"][0]["data"] == good.flatten().tolist(),
          "the next request through the same pack is served")
    check(s.get("/v2/health/ready").status_code == 200, "the server stays ready")
    s.stop()


def case_queue_full():
    # Runs are long (1.5 s) so that requests sent together on a loaded 2-core machine still arrive together: a
    # short run can finish before the next request's thread has even started, and then nothing is ever queued.
    add_model("slow", onnx_model=chain("sleep", [1, 4], "srv", ms=1500), config={"instances": 1, "max_queue": 1})
    # One instance, 1 s per run, 1.5 s per request: of three at once the third waits past its deadline.
    add_model("timeout", onnx_model=chain("sleep", [1, 4], "srv", ms=1000),
              config={"request_timeout_ms": 1500, "max_queue": 8})
    s = Server()
    x = np.ones((1, 4), np.float32)
    results = []

    def one():
        t = time.time()
        r = s.post("/v2/models/slow/infer", json=infer_json(x))
        results.append((r.status_code, r.headers.get("Retry-After"), r.text, time.time() - t))

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(r[0] for r in results)
    print("statuses:", codes, "seconds:", [f"{r[3]:.2f}" for r in results])
    check(codes.count(200) >= 2 and codes.count(503) >= 1 and set(codes) <= {200, 503},
          "1 instance + a queue of 1: two or more answered 200, the rest 503")
    check(all(ra == "1" and "busy" in text for c, ra, text, _ in results if c == 503),
          "every 503 carries Retry-After and says the model is busy")
    # A 503 is decided on arrival: it never waits for a run (1.5 s) to finish.
    check(all(took < 1.4 for c, _, _, took in results if c == 503), "a full queue answers at once (no hang)")
    results.clear()

    def timed():
        r = s.post("/v2/models/timeout/infer", json=infer_json(x))
        results.append((r.status_code, r.headers.get("Retry-After"), r.text))

    threads = [threading.Thread(target=timed) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("statuses:", sorted(c for c, _, _ in results))
    check(sorted(c for c, _, _ in results)[0] == 200 and any(
        c == 504 and "model 'timeout'" in text and "request timeout of 1500 ms" in text for c, _, text in results),
        "a request that cannot get an instance within request_timeout_ms is answered 504")
    s.alive()
    s.stop()


def case_drain():
    # 2 s per run: all 16 requests must be in flight at once before the SIGTERM, and on a loaded 2-core CI machine
    # starting 16 client threads can take longer than a short run (300 ms let the first four finish first).
    add_model("slow", onnx_model=chain("sleep", [1, 4], "srv", ms=2000), config={"instances": 4, "max_queue": 32})
    s = Server()
    results = []
    lock = threading.Lock()

    def one(i):
        x = np.full((1, 4), i, np.float32)
        try:
            r = requests.post(s.url + "/v2/models/slow/infer", json=infer_json(x), timeout=60)
            ok = r.status_code == 200 and r.json()["outputs"][0]["data"] == x.flatten().tolist()
            with lock:
                results.append((ok, r.status_code))
        except Exception as e:  # noqa: BLE001 - reported below
            with lock:
                results.append((False, repr(e)))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    end = time.time() + 30
    inflight = 0
    while time.time() < end:
        m = re.search(r'ophost_inflight_requests\{model="slow",version="1"\} (\d+)', s.get("/metrics").text)
        inflight = int(m.group(1))
        if inflight == 16:
            break
        time.sleep(0.01)
    check(inflight == 16, "16 requests in flight (4 running, 12 queued)")
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join()
    rc = s.proc.wait(60)
    print("results:", results)
    check(len(results) == 16 and all(ok for ok, _ in results), "SIGTERM: all 16 in-flight requests answered 200")
    check(rc == 0, f"exit status 0 after the drain (got {rc})")
    time.sleep(0.1)
    check(any("SIGTERM received" in line for line in s.err), "the drain is logged")


def case_grpc():
    add_model("mixed_small", example("mixed_small.onnx"))
    add_model("broken", onnx_model=None)
    with open(os.path.join(REPO, "broken", "model.onnx"), "wb") as f:
        f.write(b"this is not an onnx file")
    s = Server()
    stub = s.stub()
    check(stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live, "gRPC ServerLive")
    check(stub.ServerReady(pb.ServerReadyRequest(), timeout=30).ready, "gRPC ServerReady")
    check(stub.ModelReady(pb.ModelReadyRequest(name="mixed_small"), timeout=30).ready, "gRPC ModelReady")
    check(not stub.ModelReady(pb.ModelReadyRequest(name="broken"), timeout=30).ready,
          "gRPC ModelReady: false for a model that failed to load")
    md = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=30)
    check(md.name == "ophost" and "binary_tensor_data" in md.extensions, "gRPC ServerMetadata")
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name="mixed_small", version="1"), timeout=30)
    check(mm.inputs[0].name == "x" and mm.inputs[0].datatype == "FP32" and list(mm.inputs[0].shape) == [2, 8] and
          list(mm.versions) == ["1"], "gRPC ModelMetadata")
    x = mixed_small_input()
    ref = np.load(example("mixed_small.output.y.npy"))
    T = pb.ModelInferRequest.InferInputTensor
    resp = stub.ModelInfer(pb.ModelInferRequest(model_name="mixed_small", id="g1", inputs=[
        T(name="x", datatype="FP32", shape=[2, 8])], raw_input_contents=[x.tobytes()]), timeout=60)
    y = np.frombuffer(resp.raw_output_contents[0], np.float32).reshape(list(resp.outputs[0].shape))
    check(resp.id == "g1" and resp.outputs[0].name == "y" and np.allclose(y, ref, rtol=1e-5, atol=1e-6),
          "gRPC ModelInfer with raw_input_contents")
    typed = stub.ModelInfer(pb.ModelInferRequest(model_name="mixed_small", inputs=[
        T(name="x", datatype="FP32", shape=[2, 8], contents=pb.InferTensorContents(fp32_contents=x.flatten()))]),
        timeout=60)
    check(typed.raw_output_contents[0] == resp.raw_output_contents[0], "gRPC ModelInfer with typed fp32_contents")

    def rpc_error(req, code, *needles):
        try:
            stub.ModelInfer(req, timeout=60)
            fail("gRPC: a bad request was answered OK")
        except grpc.RpcError as e:
            check(e.code() == code and all(n in e.details() for n in needles),
                  f"gRPC {code.name} naming {needles}: {e.details()}")

    rpc_error(pb.ModelInferRequest(model_name="nope", inputs=[T(name="x", datatype="FP32", shape=[2, 8])],
                                   raw_input_contents=[x.tobytes()]), grpc.StatusCode.NOT_FOUND, "model 'nope'")
    rpc_error(pb.ModelInferRequest(model_name="mixed_small", inputs=[T(name="x", datatype="FP32", shape=[2, 9])],
                                   raw_input_contents=[x.tobytes()]), grpc.StatusCode.INVALID_ARGUMENT,
              "inputs[0] 'x'", "shape [2,9]")
    rpc_error(pb.ModelInferRequest(model_name="mixed_small", inputs=[T(name="x", datatype="FP32", shape=[2, 8])],
                                   raw_input_contents=[x.tobytes()[:30]]), grpc.StatusCode.INVALID_ARGUMENT,
              "inputs[0] 'x'", "30 bytes of data")
    rpc_error(pb.ModelInferRequest(model_name="mixed_small", inputs=[T(name="x", datatype="FP32", shape=[2, 8])],
                                   raw_input_contents=[x.tobytes(), b""]), grpc.StatusCode.INVALID_ARGUMENT,
              "raw_input_contents has 2 entries for 1 inputs")
    rpc_error(pb.ModelInferRequest(model_name="mixed_small", inputs=[T(name="x", datatype="FP32", shape=[2, -1])],
                                   raw_input_contents=[x.tobytes()]), grpc.StatusCode.INVALID_ARGUMENT,
              "inputs[0].shape[1] is -1")
    rpc_error(pb.ModelInferRequest(model_name="mixed_small", inputs=[
        T(name="x", datatype="FP32", shape=[2, 8], contents=pb.InferTensorContents(fp32_contents=[1.0] * 3))]),
        grpc.StatusCode.INVALID_ARGUMENT, "fp32_contents holds 3 elements")
    rpc_error(pb.ModelInferRequest(model_name="broken", inputs=[T(name="x", datatype="FP32", shape=[2, 8])],
                                   raw_input_contents=[x.tobytes()]), grpc.StatusCode.UNAVAILABLE,
              "model 'broken'", "not ready")
    s.alive()
    s.stop()


def case_metrics():
    add_model("mixed_small", example("mixed_small.onnx"))
    s = Server(["--access-log"])
    x = mixed_small_input()
    for _ in range(3):
        check(s.post("/v2/models/mixed_small/infer", json=infer_json(x)).status_code == 200, "infer")
    s.post("/v2/models/mixed_small/infer", json=infer_json(np.zeros((2, 9), np.float32)))
    s.stub().ModelInfer(pb.ModelInferRequest(model_name="mixed_small", inputs=[
        pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[2, 8])],
        raw_input_contents=[x.tobytes()]), timeout=60)
    text = s.get("/metrics").text
    print(text)

    def value(name):
        m = re.search(name + r'\{model="mixed_small",version="1"\} (\d+)', text)
        return int(m.group(1)) if m else None

    check(value("ophost_requests_total") == 5, "ophost_requests_total counts REST and gRPC requests (5)")
    check(value("ophost_request_failures_total") == 1, "ophost_request_failures_total counts the bad request")
    check(value("ophost_compute_duration_us_total") > 0, "compute time is summed")
    check(value("ophost_queue_duration_us_total") is not None, "queue time is exported")
    check(value("ophost_inflight_requests") == 0, "nothing in flight")
    check(value("ophost_pool_bytes") > 0, "pool bytes of the instances")
    check(value("ophost_model_ready") == 1, "model ready gauge")
    check("# TYPE ophost_requests_total counter" in text, "Prometheus TYPE lines")
    time.sleep(0.2)
    access = [line for line in s.out if " access " in line]
    print("".join(access))
    check(any('proto=http method=POST path="/v2/models/mixed_small/infer" status=200 model="mixed_small" version=1'
              in line and "compute_us=" in line for line in access), "an access-log line per REST inference")
    check(any("status=400" in line for line in access), "the failed request is logged with its status")
    check(any("proto=grpc method=ModelInfer" in line and "status=200" in line for line in access),
          "gRPC inferences are logged")
    s.stop()


def case_broken_model():
    add_model("mixed_small", example("mixed_small.onnx"))
    os.makedirs(os.path.join(REPO, "broken"))
    with open(os.path.join(REPO, "broken", "model.onnx"), "wb") as f:
        f.write(b"\x08\x07garbage")
    add_model("badconfig", example("mixed_small.onnx"), config={"instancez": 2})
    os.makedirs(os.path.join(REPO, "empty"))
    add_model("dynamic", onnx_model=chain("Relu", ["N", 4], ""))
    add_model("dynamic_warm", onnx_model=chain("Relu", ["N", 4], ""), config={"warmup": {"x": [3, 4]},
                                                                            "instances": 2})
    s = Server()
    check(s.get("/v2/health/ready").status_code == 200, "ready: the good models serve despite the broken ones")
    r = s.get("/v2/models/broken/ready")
    check(r.status_code == 400 and r.json()["ready"] is False and "model.onnx" in r.json()["error"],
          f"a model that fails to load is not ready, with the host's message: {r.text[:300]}")
    r = s.get("/v2/models/badconfig/ready")
    check(r.status_code == 400 and "unknown key 'instancez'" in r.json()["error"] and "config.json" in
          r.json()["error"], "a bad config.json names the file and the key")
    r = s.get("/v2/models/empty/ready")
    check(r.status_code == 400 and "no model.onnx" in r.json()["error"], "an empty model folder is reported")
    r = s.get("/v2/models/dynamic/ready")
    check(r.status_code == 400 and "warm-up shape" in r.json()["error"],
          "unknown dims without a warm-up shape: not ready, saying what to add")
    check(s.get("/v2/models/dynamic_warm/ready").status_code == 200, "config warm-up shape: ready")
    r = s.post("/v2/models/dynamic_warm/infer", json=infer_json(np.array([[-1, 2, -3, 4]], np.float32)))
    check(r.status_code == 200 and r.json()["outputs"][0]["data"] == [0, 2, 0, 4], "dynamic model serves [1,4]")
    expect_error(s.post("/v2/models/broken/infer", json=infer_json(mixed_small_input())), 503, "model 'broken'",
                 "not ready")
    check(any("model 'broken'" in line for line in s.err), "the load failure is logged")
    s.stop()


def case_batching():
    add_model("relu", onnx_model=chain("Relu", ["N", 4], ""),
              config={"max_batch": 8, "max_queue_delay_us": 300000, "warmup": {"x": [1, 4]}})
    g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["y"], name="sum_all", keepdims=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    add_model("total", onnx_model=m, config={"max_batch": 8, "max_queue_delay_us": 300000, "warmup": {"x": [1, 4]}})
    add_model("bad_batch_config", example("mixed_small.onnx"), config={"max_queue_delay_us": 100})
    s = Server()
    inputs = [np.arange(4 * r, dtype=np.float32).reshape(r, 4) * (1 if i % 2 else -1) + i
              for i, r in enumerate([1, 2, 1, 3])]
    results = {}

    def one(i, model):
        r = s.post(f"/v2/models/{model}/infer", json=infer_json(inputs[i]))
        results[i] = r

    threads = [threading.Thread(target=one, args=(i, "relu")) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(inputs):
        out = results[i].json()["outputs"][0]
        check(results[i].status_code == 200 and out["shape"] == list(x.shape) and
              out["data"] == np.maximum(x, 0).flatten().tolist(), f"request {i} {list(x.shape)} gets its own rows")
    text = s.get("/metrics").text
    runs = int(re.search(r'ophost_runs_total\{model="relu",version="1"\} (\d+)', text).group(1))
    reqs = int(re.search(r'ophost_requests_total\{model="relu",version="1"\} (\d+)', text).group(1))
    print(f"relu: {reqs} requests in {runs} runs (the warm-up is not counted)")
    check(reqs == 4 and 1 <= runs < reqs, "dynamic batching ran the 4 concurrent requests in fewer runs")
    results.clear()
    threads = [threading.Thread(target=one, args=(i, "total")) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r.json().get("error", "") for r in results.values() if r.status_code == 500]
    check(errors and all("output 'y'" in e and "cannot be batched" in e for e in errors),
          "a model whose output has no batch dim fails batched requests with 500 saying so")
    r = s.get("/v2/models/bad_batch_config/ready")
    check(r.status_code == 400 and "give 'max_batch' too" in r.json()["error"], "max_queue_delay_us needs max_batch")
    s.stop()


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}
if CASE not in CASES:
    fail(f"unknown case {CASE}; cases: {', '.join(CASES)}")
CASES[CASE]()
print("PASS")
