#!/usr/bin/python3
"""Exports the weight-bound part of a GPT-style decoder step as an ONNX model, for the int8 / float32 decode
benchmark (docs/benchmarks.md): 6 layers of d = 768 (distilgpt2's size), each LayerNorm -> QKV projection
(768 -> 2304, the first 768 kept: attention itself is left out) -> output projection + residual, LayerNorm ->
768 -> 3072 -> GELU -> 768 + residual, on one token [1, 1, 768]. Random weights (seed 0), Debian's torch 1.13,
opset 14. It reads ~170 MB of float32 weights per step, as a real decoder's step does (attention over a short past
adds little), so it measures what int8 weights buy a memory-bound step.

    /usr/bin/python3 tools/bench/make_decoder_step.py OUT.onnx
    /usr/bin/python3 tools/bench/zoo/quantize_onnx.py dynamic OUT.onnx OUT.dyn.onnx --shape input=1,1,768
    tools/bench/precision.sh OUT.onnx:input=1,1,768 OUT.dyn.onnx:input=1,1,768
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d", type=int, default=768)
    a = ap.parse_args()
    import torch
    torch.manual_seed(0)
    d = a.d

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(
                torch.nn.ModuleList([torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), torch.nn.Linear(d, 4 * d),
                                     torch.nn.Linear(4 * d, d), torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)])
                for _ in range(a.layers))

        def forward(self, x):
            for qkv, proj, fc1, fc2, ln1, ln2 in self.layers:
                x = x + proj(qkv(ln1(x))[..., :d])
                x = x + fc2(torch.nn.functional.gelu(fc1(ln2(x))))
            return x

    torch.onnx.export(Step().eval(), torch.randn(1, 1, d), a.out, input_names=["input"], output_names=["output"],
                      opset_version=14)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
