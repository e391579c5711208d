#!/usr/bin/python3
"""Exports int8 models made with PyTorch's own eager-mode post-training static quantization, as users do it with
Debian's python3-torch 1.13 / python3-torchvision 0.14, to ONNX (QDQ: QuantizeLinear/DequantizeLinear around the
ops), with random weights from a fixed seed, so no weights are downloaded and every machine makes the same graphs.

    /usr/bin/python3 tools/bench/zoo/export_torch_quant.py OUTDIR [--force] [--only NAME ...] [--calib-batches 4]
                     [--float-refs]

Writes OUTDIR/<name>.onnx for torch_q_resnet18, torch_q_mobilenet_v2, torch_q_googlenet, torch_q_resnet50 (input
"input" 1x3x224x224, output "output", opset 13); a file that already exists is kept (cache) unless --force.
Recipe per model: torchvision.models.quantization.<arch>(weights=None, quantize=False), torch.manual_seed(0),
BatchNorm statistics calibrated on random batches (export_torch.calibrate_batchnorm), eval(), fuse_model(),
qconfig = torch.ao.quantization.get_default_qconfig(engine) with engine fbgemm when
torch.backends.quantized.supported_engines has it, else qnnpack (the engine is printed and written into the model's
doc_string), torch.ao.quantization.prepare, calibration on --calib-batches seeded uniform [-1, 1) batches of
1x3x224x224, torch.ao.quantization.convert, torch.onnx.export(opset_version=13). A model that fails to export is
reported (with the exception) and skipped; the others go on; the exit status is 1 if any failed.
Install the exporter with: apt-get install -y --no-install-recommends python3-torch python3-torchvision
"""
import argparse
import os
import sys
import tempfile
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torch import SEED, calibrate_batchnorm  # noqa: E402

OPSET = 13  # QuantizeLinear/DequantizeLinear with per-channel axis need 13; torch 1.13's quantized export targets it
SHAPE = (1, 3, 224, 224)


def models():
    from torchvision.models import quantization as q
    return [
        ("torch_q_resnet18", lambda: q.resnet18(weights=None, quantize=False)),
        ("torch_q_mobilenet_v2", lambda: q.mobilenet_v2(weights=None, quantize=False)),
        # aux_logits=False, init_weights=True: what googlenet(weights=None) gives in eval; the aux heads are
        # training-only and quantize_model() in torchvision drops them too
        ("torch_q_googlenet", lambda: q.googlenet(weights=None, quantize=False, aux_logits=False, init_weights=True)),
        ("torch_q_resnet50", lambda: q.resnet50(weights=None, quantize=False)),
    ]


def pick_engine(torch):
    engines = torch.backends.quantized.supported_engines
    for e in ("fbgemm", "qnnpack"):
        if e in engines:
            return e, engines
    raise RuntimeError(f"neither fbgemm nor qnnpack among torch.backends.quantized.supported_engines {engines}")


def quantize(torch, make, engine, batches, float_path=None):
    torch.manual_seed(SEED)  # same weights for each model whatever was exported before it
    model = make()
    calibrate_batchnorm(model, SHAPE)
    model.eval()
    if float_path:  # the same network in float32 (QuantStub/DeQuantStub are identities before prepare)
        torch.onnx.export(model, (torch.rand(SHAPE) * 2 - 1,), float_path, opset_version=OPSET,
                          input_names=["input"], output_names=["output"], do_constant_folding=True)
    model.fuse_model()
    model.qconfig = torch.ao.quantization.get_default_qconfig(engine)
    torch.ao.quantization.prepare(model, inplace=True)
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for _ in range(batches):
            model(torch.rand(SHAPE, generator=g) * 2 - 1)
    torch.ao.quantization.convert(model, inplace=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--force", action="store_true", help="export again even when the file exists")
    ap.add_argument("--only", nargs="*", default=None, help="export only these names")
    ap.add_argument("--calib-batches", type=int, default=4, help="random calibration batches (default 4)")
    ap.add_argument("--float-refs", action="store_true",
                    help="also write <name>.float.onnx: the same weights before quantization, to compare against")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("export_torch_quant.py: python3-torch not found; install Debian's exporter with\n"
                 "  apt-get install -y --no-install-recommends python3-torch python3-torchvision\n"
                 "and run this script with /usr/bin/python3")
    import onnx
    os.makedirs(a.outdir, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    engine, engines = pick_engine(torch)
    torch.backends.quantized.engine = engine
    print(f"quantized engine: {engine} (supported: {', '.join(engines)})")
    failed = []
    for name, make in models():
        if a.only is not None and name not in a.only:
            continue
        path = os.path.join(a.outdir, name + ".onnx")
        if os.path.exists(path) and not a.force:
            print(f"{name}: present ({path}), kept")
            continue
        fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=a.outdir)
        os.close(fd)
        try:
            fref = os.path.join(a.outdir, name + ".float.onnx") if a.float_refs else None
            model = quantize(torch, make, engine, a.calib_batches, fref)
            x = torch.rand(SHAPE) * 2 - 1
            torch.onnx.export(model, (x,), tmp, opset_version=OPSET, input_names=["input"],
                              output_names=["output"], do_constant_folding=True)
            m = onnx.load(tmp)
            m.doc_string = (f"torch {torch.__version__} eager post-training static quantization, engine {engine}, "
                            f"get_default_qconfig('{engine}'), seed {SEED}, {a.calib_batches} random calibration "
                            f"batches, opset {OPSET}")
            onnx.save(m, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
            print(f"{name}: exported {path} (engine {engine}, opset {OPSET}, torch {torch.__version__}, seed {SEED})")
        except Exception as e:  # report exactly why and go on with the others
            failed.append(name)
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
