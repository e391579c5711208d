#!/usr/bin/python3
"""Exports the zoo's PyTorch models to ONNX with Debian's exporter (python3-torch 1.13, python3-torchvision 0.14),
random weights from a fixed seed (BatchNorm statistics calibrated on random batches), so no weights are downloaded
and every machine makes the same graphs.

    /usr/bin/python3 tools/bench/zoo/export_torch.py OUTDIR [--force] [--only NAME ...]

Writes OUTDIR/<name>.onnx for each model below; a file that already exists is kept (cache) unless --force.
Install the exporter with: apt-get install -y --no-install-recommends python3-torch python3-torchvision
The input names and shapes written here are the ones listed in tools/bench/zoo/models.tsv.
"""
import argparse
import os
import sys
import tempfile
import warnings

OPSET = 14  # torch 1.13's default; LayerNormalization (opset 17) is exported as its decomposition at 14
SEED = 0


def models():
    import torch
    import torchvision

    class Encoder(torch.nn.Module):
        """2-layer nn.TransformerEncoder, d_model 64, 4 heads, feed-forward 128, batch-first [1, 16, 64]."""

        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                     batch_first=True)
            # enable_nested_tensor=False: the inference fast path (fused kernels, nested tensors) is not exportable.
            self.enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

        def forward(self, x):
            return self.enc(x)

    class Recurrent(torch.nn.Module):
        """LSTM (2 layers, 32 -> 48) then GRU (1 layer, 48 -> 32), batch-first [1, 16, 32]; returns the sequence and
        the GRU's final hidden state."""

        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(input_size=32, hidden_size=48, num_layers=2, batch_first=True)
            self.gru = torch.nn.GRU(input_size=48, hidden_size=32, num_layers=1, batch_first=True)

        def forward(self, x):
            y, _ = self.lstm(x)
            z, h = self.gru(y)
            return z, h

    cnn = (1, 3, 224, 224)
    return [
        # name, constructor, input shape, output names
        ("torch_mobilenet_v3_small", lambda: torchvision.models.mobilenet_v3_small(weights=None), cnn, ["output"]),
        ("torch_resnet18", lambda: torchvision.models.resnet18(weights=None), cnn, ["output"]),
        ("torch_squeezenet1_1", lambda: torchvision.models.squeezenet1_1(weights=None), cnn, ["output"]),
        # SiLU (x * Sigmoid(x)) after every conv, squeeze-excitation blocks
        ("torch_efficientnet_b0", lambda: torchvision.models.efficientnet_b0(weights=None), cnn, ["output"]),
        # channel split (Slice) and shuffle (Reshape, Transpose)
        ("torch_shufflenet_v2_x1_0", lambda: torchvision.models.shufflenet_v2_x1_0(weights=None), cnn, ["output"]),
        ("torch_mobilenet_v2", lambda: torchvision.models.mobilenet_v2(weights=None), cnn, ["output"]),
        # BatchNorm + Relu before each conv, Concat of growing channel counts
        ("torch_densenet121", lambda: torchvision.models.densenet121(weights=None), cnn, ["output"]),
        # LayerNorm (decomposed at opset 14: ReduceMean, Sub, Pow, Sqrt, Div), GELU (Erf), depthwise 7x7
        ("torch_convnext_tiny", lambda: torchvision.models.convnext_tiny(weights=None), cnn, ["output"]),
        # shifted-window attention: batched MatMul, Softmax, Slice/Concat rolls, LayerNorm, GELU
        ("torch_swin_t", lambda: torchvision.models.swin_t(weights=None), cnn, ["output"]),
        ("torch_transformer_encoder", Encoder, (1, 16, 64), ["output"]),
        ("torch_lstm_gru", Recurrent, (1, 16, 32), ["output", "hidden"]),
    ]


def calibrate_batchnorm(model, shape):
    """Random weights with BatchNorm's initial statistics (mean 0, var 1) shrink the activations layer after layer
    (mobilenet_v3_small's logits come out ~1e-9): a few training-mode passes over random batches set the running
    statistics from the actual activations, so every layer sees values of order one, as a trained model does."""
    import torch
    if not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return
    model.train()
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the passes
    with torch.no_grad():
        for _ in range(2):
            model(torch.rand((4,) + tuple(shape[1:])) * 2 - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--force", action="store_true", help="export again even when the file exists")
    ap.add_argument("--only", nargs="*", default=None, help="export only these names")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("export_torch.py: python3-torch not found; install Debian's exporter with\n"
                 "  apt-get install -y --no-install-recommends python3-torch python3-torchvision\n"
                 "and run this script with /usr/bin/python3")
    os.makedirs(a.outdir, exist_ok=True)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # the exporter's UserWarnings about RNN batch sizes and shape inference
    for name, make, shape, out_names in models():
        if a.only is not None and name not in a.only:
            continue
        path = os.path.join(a.outdir, name + ".onnx")
        if os.path.exists(path) and not a.force:
            print(f"{name}: present ({path}), kept")
            continue
        torch.manual_seed(SEED)  # same weights for each model whatever was exported before it
        model = make()
        calibrate_batchnorm(model, shape)
        model.eval()
        x = torch.rand(shape) * 2 - 1
        fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=a.outdir)
        os.close(fd)
        try:
            # Grad stays enabled: under no_grad, nn.TransformerEncoderLayer in eval mode takes its fused inference
            # path (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
            torch.onnx.export(model, (x,), tmp, opset_version=OPSET, input_names=["input"],
                              output_names=out_names, do_constant_folding=True)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        print(f"{name}: exported {path} (input [{','.join(map(str, shape))}], opset {OPSET}, "
              f"torch {torch.__version__}, seed {SEED})")


if __name__ == "__main__":
    main()
