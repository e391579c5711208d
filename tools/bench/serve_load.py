#!/usr/bin/python3
"""Bounded load test of `ophost serve` on loopback (docs/benchmarks.md, "ophost serve").

Starts `ophost serve` on free loopback ports over a temporary repository of the given models, sends a fixed
number of requests at each client count over REST (binary tensor data extension, keep-alive, prebuilt request
bytes on a raw socket so the client adds little) and gRPC (grpcio, one channel per client), one client process
each, and prints throughput and p50/p99 latency per (model, protocol, clients); then the server's overhead per
request: client p50 at 1 client minus the model's own p50 from `ophost bench` (same input, same --threads), and
the server-side part from /metrics ((request time - compute time) / requests, which leaves out HTTP parsing and
the socket). With --leak-requests N it sends N more REST requests to the first model and prints the server's RSS
along the way (a leak shows as growth). Stops by itself; nothing leaves loopback.

  tools/bench/serve_load.py --ophost build/bin/ophost \\
      --model mixed_small=examples/models/mixed_small.onnx \\
      --model det=/work/shared/models/ch_PP-OCRv4_det_infer.onnx:x=1,3,640,640 \\
      --requests mixed_small=4000,det=48 --clients 1,4,16 --leak-requests 100000
"""
import argparse
import json
import multiprocessing as mp
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ophost", required=True, help="the ophost binary")
    ap.add_argument("--model", action="append", required=True,
                    help="NAME=FILE.onnx[:INPUT=D0,D1,...[;INPUT2=...]] (shapes of inputs with unknown dims)")
    ap.add_argument("--requests", default="", help="NAME=COUNT,... requests per (protocol, clients) (default 1000)")
    ap.add_argument("--clients", default="1,4,16", help="client counts (default 1,4,16)")
    ap.add_argument("--protocols", default="rest,grpc", help="rest, grpc or both (default)")
    ap.add_argument("--instances", default="", help="NAME=N,... instances per model (config.json; default 1)")
    ap.add_argument("--threads", type=int, default=0, help="server and bench --threads (0: hardware)")
    ap.add_argument("--leak-requests", type=int, default=0, help="REST requests of the leak check (0: none)")
    ap.add_argument("--stubs", default="", help="folder of grpc_service_pb2*.py (default: generated here)")
    return ap.parse_args()


# --- helpers ------------------------------------------------------------------------------------------------------

def kv_list(text, conv=str):
    out = {}
    for item in filter(None, text.split(",")):
        k, v = item.split("=", 1)
        out[k] = conv(v)
    return out


def make_stubs(folder):
    proto_dir = os.path.join(HERE, "..", "serve", "proto")
    plugin = shutil.which("grpc_python_plugin")
    subprocess.run(["protoc", "-I", proto_dir, f"--python_out={folder}", f"--grpc_out={folder}",
                    f"--plugin=protoc-gen-grpc={plugin}", os.path.join(proto_dir, "grpc_service.proto")], check=True)


def model_inputs(ophost, file, shapes):
    out = subprocess.run([ophost, "inspect", file], capture_output=True, text=True, check=True).stdout
    inputs = []
    for m in re.finditer(r"^input\s+(\S+): (\S+) \[([^\]]*)\]", out, re.M):
        name, dtype, dims = m.group(1), m.group(2), m.group(3)
        shape = shapes.get(name) or [int(d) for d in dims.split(",") if d]
        inputs.append((name, dtype, shape))
    return inputs


def random_input(dtype, shape):
    rng = np.random.default_rng(0)
    return rng.standard_normal(shape).astype(np.dtype(dtype))


V2 = {"float32": "FP32", "float64": "FP64", "int64": "INT64", "int32": "INT32", "uint8": "UINT8"}


def bench_p50(ophost, file, shapes, threads):
    args = [ophost, "bench", file, "--random", "-n", "200", "--threads", str(threads)]
    args += [f"--shape={n}={','.join(map(str, s))}" for n, s in shapes.items()]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"latency ms: p50 ([0-9.]+)", out).group(1)) * 1000.0


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def metric(text, name, model):
    m = re.search(name + r'\{model="' + re.escape(model) + r'",version="1"\} (\d+)', text)
    return int(m.group(1))


def http_get(port, path):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


# --- clients (one process each) -----------------------------------------------------------------------------------

def rest_request(model, inputs):
    head = json.dumps({"inputs": [{"name": n, "datatype": V2[a.dtype.name], "shape": list(a.shape),
                                   "parameters": {"binary_data_size": a.nbytes}} for n, a in inputs],
                       "parameters": {"binary_data_output": True}}).encode()
    body = head + b"".join(a.tobytes() for _, a in inputs)
    return (f"POST /v2/models/{model}/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: {len(head)}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def read_response(sock, buf):
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(rest) < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        rest += chunk
    return status, rest[:length], rest[length:]


def rest_client(port, request, count, start, results):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lat, errors, buf = [], 0, b""
    start.wait()
    for i in range(count):
        if i and i % 900 == 0:  # the server closes a keep-alive connection after 1000 requests
            sock.close()
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buf = b""
        t0 = time.perf_counter_ns()
        sock.sendall(request)
        status, _, buf = read_response(sock, buf)
        lat.append(time.perf_counter_ns() - t0)
        errors += status != 200
    sock.close()
    results.put((lat, errors))


def grpc_client(target, stubs, model, inputs, count, start, results):
    sys.path.insert(0, stubs)
    import grpc
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as pb_grpc
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(target))
    T = pb.ModelInferRequest.InferInputTensor
    req = pb.ModelInferRequest(model_name=model, inputs=[
        T(name=n, datatype=V2[a.dtype.name], shape=list(a.shape)) for n, a in inputs],
        raw_input_contents=[a.tobytes() for _, a in inputs])
    stub.ModelInfer(req, timeout=120)  # connect outside the timed loop
    lat, errors = [], 0
    start.wait()
    for _ in range(count):
        t0 = time.perf_counter_ns()
        try:
            stub.ModelInfer(req, timeout=120)
        except grpc.RpcError:
            errors += 1
        lat.append(time.perf_counter_ns() - t0)
    results.put((lat, errors))


def run_load(kind, clients, total, target_args):
    ctx = mp.get_context("fork")
    start = ctx.Event()
    results = ctx.Queue()
    per = [total // clients + (1 if i < total % clients else 0) for i in range(clients)]
    fn = rest_client if kind == "rest" else grpc_client
    procs = [ctx.Process(target=fn, args=target_args + (n, start, results)) for n in per]
    for p in procs:
        p.start()
    time.sleep(0.5 if kind == "rest" else 2.0)  # clients connected (gRPC: first call done)
    t0 = time.perf_counter()
    start.set()
    lat, errors = [], 0
    for _ in procs:
        l, e = results.get(timeout=3600)
        lat += l
        errors += e
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    lat = np.array(lat) / 1000.0
    return {"rps": total / wall, "p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99)),
            "errors": errors, "n": len(lat)}


# --- main ---------------------------------------------------------------------------------------------------------

def main():
    a = parse_args()
    counts = kv_list(a.requests, int)
    instances = kv_list(a.instances, int)
    clients = [int(c) for c in a.clients.split(",")]
    protocols = a.protocols.split(",")
    work = tempfile.mkdtemp(prefix="ophost-serve-load.")
    stubs = a.stubs or work
    if not a.stubs:
        make_stubs(work)
    models = []
    for spec in a.model:
        name, rest = spec.split("=", 1)
        file, _, shape_text = rest.partition(":")
        shapes = {}
        for item in filter(None, shape_text.split(";")):
            k, v = item.split("=", 1)
            shapes[k] = [int(d) for d in v.split(",")]
        folder = os.path.join(work, "models", name)
        os.makedirs(folder)
        os.symlink(os.path.abspath(file), os.path.join(folder, "model.onnx"))
        config = {"instances": instances.get(name, 1), "max_queue": 256}
        if shapes:
            config["warmup"] = shapes
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f)
        ins = model_inputs(a.ophost, file, shapes)
        models.append((name, file, shapes, [(n, random_input(dt, s)) for n, dt, s in ins]))

    cmd = [a.ophost, "serve", "--model-repository", os.path.join(work, "models"), "--http-port", "0",
           "--grpc-port", "0", "--threads", str(a.threads), "--log-level", "warn", "--http-threads", "64"]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    ports = {}
    for line in server.stdout:
        m = re.match(r"ophost serve: (HTTP|gRPC) listening on [^ ]+:(\d+)", line)
        if m:
            ports[m.group(1)] = int(m.group(2))
        if len(ports) == 2:
            break
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
    while http_get(ports["HTTP"], "/v2/health/ready")[0] != 200:
        time.sleep(0.2)
    print(f"server pid {server.pid}: HTTP {ports['HTTP']}, gRPC {ports['gRPC']}; RSS {rss_kib(server.pid)} KiB")

    live = f"GET /v2/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    floor = run_load("rest", 1, 2000, (ports["HTTP"], live))
    print(f"HTTP round trip floor (GET /v2/health/live, 1 client): p50 {floor['p50']:.1f} us, "
          f"p99 {floor['p99']:.1f} us", flush=True)

    rows = []
    for name, file, shapes, inputs in models:
        own = bench_p50(a.ophost, file, shapes, a.threads)
        total = counts.get(name, 1000)
        for proto in protocols:
            for c in clients:
                if proto == "rest":
                    args = (ports["HTTP"], rest_request(name, inputs))
                else:
                    args = (f"127.0.0.1:{ports['gRPC']}", stubs, name, inputs)
                _, before = http_get(ports["HTTP"], "/metrics")
                r = run_load(proto, c, total, args)
                _, after = http_get(ports["HTTP"], "/metrics")
                served = metric(after, "ophost_requests_total", name) - metric(before, "ophost_requests_total", name)
                inside = (metric(after, "ophost_request_duration_us_total", name) -
                          metric(before, "ophost_request_duration_us_total", name) -
                          (metric(after, "ophost_compute_duration_us_total", name) -
                           metric(before, "ophost_compute_duration_us_total", name))) / max(served, 1)
                r.update(model=name, proto=proto, clients=c, own=own, inside=inside)
                rows.append(r)
                print(f"{name:12s} {proto:4s} clients {c:2d}: {r['n']} requests, {r['rps']:9.1f} req/s, "
                      f"p50 {r['p50']:9.1f} us, p99 {r['p99']:9.1f} us, errors {r['errors']}; model alone p50 "
                      f"{own:.1f} us -> overhead p50 {r['p50'] - own:.1f} us (server-side, excl. HTTP: "
                      f"{inside:.1f} us)", flush=True)

    if a.leak_requests:
        name, _, _, inputs = models[0]
        samples = [rss_kib(server.pid)]
        step = max(a.leak_requests // 10, 1)
        req = rest_request(name, inputs)
        done = 0
        while done < a.leak_requests:
            n = min(step, a.leak_requests - done)
            r = run_load("rest", 4, n, (ports["HTTP"], req))
            if r["errors"]:
                print(f"leak check: {r['errors']} errors")
            done += n
            samples.append(rss_kib(server.pid))
        print(f"leak check: {done} REST requests to {name}, server RSS KiB every {step}: {samples}")
        print(f"leak check: RSS after the first {step}: {samples[1]} KiB, at the end: {samples[-1]} KiB "
              f"({samples[-1] - samples[1]:+d} KiB)")

    server.send_signal(signal.SIGTERM)
    rc = server.wait(120)
    print(f"server exit status after SIGTERM: {rc}")
    shutil.rmtree(work, ignore_errors=True)
    errors = sum(r["errors"] for r in rows)
    return 1 if errors or rc != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
