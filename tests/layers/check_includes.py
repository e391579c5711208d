#!/usr/bin/env python3
"""The include graph of the host against its layer order (tests/layers, CTest `layers.includes`).

Usage: check_includes.py SOURCE_ROOT LAYER[,LAYER...]   (the order, bottom first: host/CMakeLists.txt's
OPHOST_HOST_LAYERS, the one place it is defined)

Fails, naming file, line and the fix, when
  * a file of host/<layer>/ includes a header of a higher layer ("exec/..." from host/core/), or a public header
    that belongs to a higher layer (PUBLIC_LAYER below), or something under host/ that is not a layer;
  * a public header (host/include/ophost/) includes anything but other public headers, the SDK and the standard
    library, or a public header of a higher layer than its own;
  * the `ophost` command (tools/ophost/), its server (tools/serve/) or the Python module (python/src/) includes a
    host internal (they are built on the installed headers only) or an <ophost/...> header that is not installed.
"""
import pathlib
import re
import sys

# Headers generated at build time that code outside host/ includes by name (tools/serve: the gRPC stubs of the
# Open Inference Protocol, from tools/serve/proto/grpc_service.proto).
GENERATED = {"grpc_service.grpc.pb.h", "grpc_service.pb.h"}

# The layer of each public header: the lowest layer that may include it (the layer that implements it, or the
# lowest one whose code uses its types). A new public header must be added here.
PUBLIC_LAYER = {
    "export.hpp": "memory",
    "error.hpp": "memory",
    "memory_stats.hpp": "memory",
    "tensor.hpp": "core",
    "services.hpp": "core",
    "npy.hpp": "model",
    "manifest.hpp": "plugins",
    "plugin_report.hpp": "plugins",
    "pack.hpp": "plugins",
    "op_schema.hpp": "registry",
    "op_runner.hpp": "exec",
    "runtime.hpp": "exec",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    for no, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield no, m.group(1) == '"', m.group(2)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    order = sys.argv[2].split(",")
    rank = {name: i for i, name in enumerate(order)}
    host = root / "host"
    public_dir = host / "include" / "ophost"
    sdk_dir = root / "sdk" / "include" / "ophost"
    problems = []
    checked = 0

    def installed(header):  # header: the part after "ophost/"
        return (public_dir / header).is_file() or (sdk_dir / header).is_file()

    def public_rank(header, where):
        if (sdk_dir / header).is_file():
            return -1  # the SDK: anyone may include it
        if header not in PUBLIC_LAYER:
            problems.append(f"{where}: <ophost/{header}> has no layer in tests/layers/check_includes.py "
                            "PUBLIC_LAYER; add it there (the lowest layer that may include it)")
            return -1
        return rank[PUBLIC_LAYER[header]]

    def check_public(inc, own, where, who):  # an <ophost/...> include by code of rank `own`
        h = inc[len("ophost/"):]
        if not installed(h):
            problems.append(f"{where}: <{inc}> is not a public or SDK header")
        elif public_rank(h, where) > own:
            problems.append(f"{where}: {who} includes <{inc}>, which belongs to layer {PUBLIC_LAYER[h]} above it; "
                            "include the small public header that holds the type it needs (or split one out)")

    for layer_name, header_layer in PUBLIC_LAYER.items():
        if header_layer not in rank:
            problems.append(f"check_includes.py: PUBLIC_LAYER gives {layer_name} the unknown layer {header_layer}")

    # Public headers.
    for f in sorted(public_dir.glob("*.hpp")):
        checked += 1
        own = public_rank(f.name, f.relative_to(root))
        for no, quoted, inc in includes(f):
            where = f"{f.relative_to(root)}:{no}"
            if quoted:
                problems.append(f'{where}: includes "{inc}"; a public header includes only <ophost/...> public or '
                                "SDK headers and the standard library (move what it needs into a public header)")
            elif inc.startswith("ophost/"):
                check_public(inc, own, where, f"public header {f.name} (layer {PUBLIC_LAYER.get(f.name)})")

    # The layers.
    for layer in order:
        for f in sorted((host / layer).rglob("*")):
            if f.suffix not in (".cpp", ".hpp", ".h"):
                continue
            checked += 1
            own = rank[layer]
            for no, quoted, inc in includes(f):
                where = f"{f.relative_to(root)}:{no}"
                if quoted:
                    top = inc.split("/")[0]
                    if top not in rank:
                        problems.append(f'{where}: "{inc}" is not under a host layer ({", ".join(order)}); '
                                        "include host headers as \"<layer>/<file>\"")
                    elif rank[top] > own:
                        problems.append(f'{where}: layer {layer} includes "{inc}" of layer {top}, which is above '
                                        f"it (order, bottom first: {', '.join(order)}); move the code it needs "
                                        f"down to {layer} or below, or pass it in from above")
                elif inc.startswith("ophost/"):
                    check_public(inc, own, where, f"layer {layer}")
    for sub in sorted(p for p in host.iterdir() if p.is_dir() and p.name != "include" and p.name not in rank):
        problems.append(f"host/{sub.name}/ is not a layer: add it to OPHOST_HOST_LAYERS in host/CMakeLists.txt")

    # Built on the installed headers only. Each folder may include its own files and those of the folders
    # listed with it (the `ophost` command links the serve library, itself checked here), plus files its build
    # generates (GENERATED).
    serve = root / "tools" / "serve"
    for folder, others in ((root / "tools" / "ophost", [serve]), (serve, []), (root / "python" / "src", [])):
        for f in sorted(folder.rglob("*")):
            if f.suffix not in (".cpp", ".hpp", ".h"):
                continue
            checked += 1
            for no, quoted, inc in includes(f):
                where = f"{f.relative_to(root)}:{no}"
                if quoted and inc not in GENERATED and not any((d / inc).is_file() for d in [f.parent, *others]):
                    problems.append(f'{where}: "{inc}" is not a file of {folder.relative_to(root)}/; this code is '
                                    "built on the installed headers only (<ophost/...>): make what it needs "
                                    "public API, or move the code into the host")
                elif not quoted and inc.startswith("ophost/") and not installed(inc[len("ophost/"):]):
                    problems.append(f"{where}: <{inc}> is not an installed header")

    for p in problems:
        print(p)
    print(f"{checked} files checked against the layers {' < '.join(order)}: "
          f"{len(problems) or 'no'} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
