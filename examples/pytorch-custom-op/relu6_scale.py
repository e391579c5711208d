"""PyTorch -> ONNX -> ophost with a custom op: myops::relu6_scale (y = clamp(x * scale, 0, max_val)).

  1. define the op in PyTorch: an autograd Function whose forward is the eager computation and whose
     `symbolic` emits the ONNX node myops::relu6_scale with float attributes scale and max_val;
  2. export a small model using it with torch.onnx.export(..., custom_opsets={"myops": 1}) and a dynamic batch
     axis;
  3. load the .onnx with ophost.InferenceSession, registering the myops pack with
     SessionOptions.register_custom_ops_library, and compare with PyTorch eager.

usage: relu6_scale.py [--pack DIR] [--out FILE.onnx]
  --pack  the myops pack folder (default: build/lib/ophost/plugins/myops, or $OPHOST_MYOPS_PACK)
Exit status 0 when ophost agrees with PyTorch within 1e-5; 77 (skipped) when torch is not installed.
"""
import argparse
import os
import sys
import tempfile
import warnings

import numpy as np

try:
    import torch
except ImportError:
    print("SKIPPED: PyTorch is not installed for " + sys.executable + " (apt-get install python3-torch)")
    sys.exit(77)

import ophost

# torch 1.13 warns that it cannot infer the custom op's output shape; the symbolic sets it (setType) and
# ophost infers it from the pack.
warnings.filterwarnings("ignore", message="The shape inference of myops::relu6_scale")
HERE = os.path.dirname(os.path.abspath(__file__))


class Relu6Scale(torch.autograd.Function):
    """y = clamp(x * scale, 0, max_val): eager in forward, myops::relu6_scale when exported."""

    @staticmethod
    def forward(ctx, x, scale: float, max_val: float):
        return torch.clamp(x * scale, 0.0, max_val)

    @staticmethod
    def symbolic(g, x, scale: float, max_val: float):
        # "<domain>::<op>" puts the node in the custom domain; the _f suffix makes each attribute an ONNX FLOAT,
        # the type the pack declares (an int attribute would be rejected at load, naming the attribute).
        return g.op("myops::relu6_scale", x, scale_f=scale, max_val_f=max_val).setType(x.type())


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x):
        return Relu6Scale.apply(self.linear(x), 2.0, 6.0) + 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_pack = os.environ.get("OPHOST_MYOPS_PACK",
                                  os.path.join(HERE, "..", "..", "build", "lib", "ophost", "plugins", "myops"))
    ap.add_argument("--pack", default=default_pack)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    torch.manual_seed(0)
    model = Model().eval()
    out = args.out or os.path.join(tempfile.mkdtemp(prefix="relu6_scale."), "relu6_scale.onnx")
    example = torch.randn(2, 16)
    # opset 13 for the standard ops; version 1 of the custom domain: the pack serves myops::relu6_scale from
    # version 1, and the model's opset_import for "myops" must fall in that range.
    torch.onnx.export(model, (example,), out, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13, custom_opsets={"myops": 1})
    print("exported", out)

    so = ophost.SessionOptions()
    so.register_custom_ops_library(args.pack)
    sess = ophost.InferenceSession(out, so)
    print("inputs ", sess.get_inputs())
    print("outputs", sess.get_outputs())
    assert sess.get_inputs()[0].shape == ["batch", 16], sess.get_inputs()[0].shape

    worst = 0.0
    for batch in [1, 2, 7, 64]:
        x = torch.randn(batch, 16) * 4
        with torch.no_grad():
            want = model(x).numpy()
        (got,) = sess.run(None, {"x": x.numpy()})
        err = float(np.abs(got - want).max())
        worst = max(worst, err)
        print(f"batch {batch:3d}: max |ophost - torch| = {err:.3g}")
    if worst > 1e-5:
        print(f"FAIL: ophost and PyTorch differ by {worst:.3g} (> 1e-5)")
        return 1
    print("OK: ophost agrees with PyTorch eager within 1e-5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
