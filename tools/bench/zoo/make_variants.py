#!/usr/bin/python3
"""Makes the zoo's reduced-precision variants (the models.tsv rows under variants/) from the zoo's float models,
with the converters users run, re-written here with onnx + numpy (nothing downloaded):

    /usr/bin/python3 tools/bench/zoo/make_variants.py ZOO_DIR [--force]

For each models.tsv row whose file is variants/<base>.<kind>.onnx, reads ZOO_DIR/<base>.onnx (or
ZOO_DIR/torch/<base>.onnx) and writes ZOO_DIR/variants/<base>.<kind>.onnx:
  dyn    quantize_onnx.py dynamic   (ONNX Runtime's quantize_dynamic: DynamicQuantizeLinear -> ConvInteger /
                                     MatMulInteger -> Cast -> Mul -> Add)
  fp16   float16_onnx.py            (onnxconverter-common's convert_float_to_float16, keep_io_types=True)
A variant whose source model is absent is skipped with a line saying so; an existing variant is kept unless
--force. Exit 0 unless a converter fails.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERTERS = {
    "dyn": [os.path.join(HERE, "quantize_onnx.py"), "dynamic"],
    "fp16": [os.path.join(HERE, "float16_onnx.py")],
}


def variant_rows(tsv):
    with open(tsv) as f:
        for line in f:
            if line.startswith("#") or line.startswith("file\t") or not line.strip():
                continue
            path = line.split("\t")[0]
            if path.startswith("variants/"):
                yield path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("zoo_dir")
    ap.add_argument("--force", action="store_true", help="remake variants that exist")
    ap.add_argument("--models-tsv", default=os.path.join(HERE, "models.tsv"))
    a = ap.parse_args()
    os.makedirs(os.path.join(a.zoo_dir, "variants"), exist_ok=True)
    failed = 0
    for path in variant_rows(a.models_tsv):
        name = os.path.basename(path)[: -len(".onnx")]
        base, kind = name.rsplit(".", 1)
        if kind not in CONVERTERS:
            print(f"make_variants: {path}: unknown kind '{kind}' (dyn, fp16)", file=sys.stderr)
            failed += 1
            continue
        out = os.path.join(a.zoo_dir, path)
        if os.path.exists(out) and not a.force:
            print(f"kept  {path}")
            continue
        src = next((p for p in (os.path.join(a.zoo_dir, base + ".onnx"), os.path.join(a.zoo_dir, "torch", base + ".onnx"))
                    if os.path.exists(p)), None)
        if not src:
            print(f"skip  {path}: {base}.onnx is not in {a.zoo_dir} (tools/bench/zoo/fetch.sh)")
            continue
        r = subprocess.run([sys.executable] + CONVERTERS[kind] + [src, out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL  {path}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}", file=sys.stderr)
            failed += 1
            continue
        print(f"made  {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
