"""End to end: build time of each sample and relaxrun latency, next to numpy doing the same model.

    python bench/e2e.py                 mlp, cnn, transformer
    python bench/e2e.py --all           every sample with inputs
    python bench/e2e.py mlp --repeat 200

For each sample, in one run on one machine:

  staged     wall time of the staged pipeline, one tool process per step:
             relaxc -S -> relaxas -> relaxc --emit kernels -> relaxld
  one-shot   wall time of `relaxc model.relax -o model.vmx`
  relaxrun   median of `relaxrun model.vmx --repeat N --warmup 10` (the VM call only, as
             relaxrun --json reports it; process start-up and loading are not in it);
             check: the results against the sample's expected outputs (atol 1e-4)
  numpy      median of N calls of a numpy implementation of the same model, written here
             from the sample's weights (mlp, cnn, transformer; checked against the
             expected outputs first)

Times are wall-clock on a machine others may be using: compare columns of one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
DATA = SAMPLES / "data"
PLUGIN = ROOT / "testsuite" / "relaxrun" / "Inputs" / "samples_plugin.py"
DEFAULT = ("mlp", "cnn", "transformer")
PRELOWERED = ("lowered", "lowered_static")


# ---- numpy models -----------------------------------------------------------------------------

def mlp(x, p_fc1_weight, p_fc1_bias, p_fc2_weight, p_fc2_bias, p_fc3_weight, p_fc3_bias):
    h = np.maximum(x @ p_fc1_weight.T + p_fc1_bias, 0)
    h = np.maximum(h @ p_fc2_weight.T + p_fc2_bias, 0)
    return (h @ p_fc3_weight.T + p_fc3_bias,)


def cnn(x, p_conv_weight, p_conv_bias, p_fc_weight, p_fc_bias):
    n, c, h, w = x.shape
    kernel = p_conv_weight.shape[2]
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kernel, kernel), axis=(2, 3))  # n c h w kh kw
    conv = np.einsum("nchwij,ocij->nohw", windows, p_conv_weight, optimize=True) + p_conv_bias[None, :, None, None]
    relu = np.maximum(conv, 0)
    pooled = relu.reshape(n, relu.shape[1], h // 2, 2, w // 2, 2).max(axis=(3, 5))
    return (pooled.reshape(n, -1) @ p_fc_weight.T + p_fc_bias,)


_ERF_P, _ERF_A = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(x):
    """Abramowitz-Stegun 7.1.26 (error below 1.5e-7): numpy has no erf and scipy is not a dependency."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * x)
    poly = t * (_ERF_A[0] + t * (_ERF_A[1] + t * (_ERF_A[2] + t * (_ERF_A[3] + t * _ERF_A[4]))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x, weight, bias, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def transformer(x, p_q_weight, p_q_bias, p_k_weight, p_k_bias, p_v_weight, p_v_bias, p_o_weight, p_o_bias,
                p_ln1_weight, p_ln1_bias, p_ln2_weight, p_ln2_bias, p_ff1_weight, p_ff1_bias, p_ff2_weight,
                p_ff2_bias, heads=2):
    batch, seq, hidden = x.shape
    tokens = x.reshape(seq, hidden)

    def split_heads(t):
        return t.reshape(seq, heads, hidden // heads).transpose(1, 0, 2)

    q = split_heads(tokens @ p_q_weight.T + p_q_bias)
    k = split_heads(tokens @ p_k_weight.T + p_k_bias)
    v = split_heads(tokens @ p_v_weight.T + p_v_bias)
    scores = q @ k.transpose(0, 2, 1) / np.float32(math.sqrt(hidden // heads))
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attention = (scores / scores.sum(axis=-1, keepdims=True)) @ v
    attended = attention.transpose(1, 0, 2).reshape(seq, hidden) @ p_o_weight.T + p_o_bias
    h = _layer_norm(x + attended.reshape(batch, seq, hidden), p_ln1_weight, p_ln1_bias)
    ff = h.reshape(seq, hidden) @ p_ff1_weight.T + p_ff1_bias
    ff = 0.5 * ff * (1.0 + _erf(ff / np.float32(math.sqrt(2.0))))
    ff = ff @ p_ff2_weight.T + p_ff2_bias
    return (_layer_norm(h + ff.reshape(batch, seq, hidden), p_ln2_weight, p_ln2_bias).astype(np.float32),)


NUMPY_MODELS = {"mlp": mlp, "cnn": cnn, "transformer": transformer}


# ---- measurements -----------------------------------------------------------------------------

def tool(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([str(ROOT / ".venv" / "bin"), os.environ.get("PATH", "")]))
    return found or name


def timed(command: list[str]) -> float | None:
    """Wall seconds of a command; None (with its message on stderr) when it fails."""
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.stderr.write(f"e2e: failed ({result.returncode}): {' '.join(command)}\n{result.stderr[-2000:]}")
        return None
    return seconds


def build_times(name: str, work: pathlib.Path) -> tuple[float | None, float | None, pathlib.Path]:
    source = SAMPLES / f"{name}.relax"
    allow = ["--allow-undefined", "samples.*"] if name == "packed_call" else []
    vms, vmo, ko, staged_vmx = (work / f"{name}.{suffix}" for suffix in ("vms", "vmo", "ko", "staged.vmx"))
    steps = [
        [tool("relaxc"), "-S", str(source), "-o", str(vms)] + (["-O0"] if name in PRELOWERED else []),
        [tool("relaxas"), str(vms), "-o", str(vmo)],
        [tool("relaxc"), "--emit", "kernels", str(vms), "-o", str(ko)],
        [tool("relaxld"), str(vmo), str(ko), "-o", str(staged_vmx)] + allow,
    ]
    staged = 0.0
    for step in steps:
        seconds = timed(step)
        if seconds is None:
            staged = None
            break
        staged += seconds
    vmx = work / f"{name}.vmx"
    one_shot = timed([tool("relaxc"), str(source), "-o", str(vmx)] + allow)
    return staged, one_shot, vmx


def relaxrun_median(name: str, vmx: pathlib.Path, repeat: int) -> tuple[float | None, str]:
    """Median seconds of the VM call, and whether the results matched the expected outputs."""
    command = [tool("relaxrun"), str(vmx), "--input", f"@{DATA / f'{name}.inputs.npz'}", "--repeat", str(repeat),
               "--warmup", "10", "--print-time", "--json", "--output-dir", f"{vmx}.out",  # files keep values out of the JSON
               "--expected-output", f"@{DATA / f'{name}.expected.npz'}", "--atol", "1e-4"]
    if name == "packed_call":
        command += ["--plugin", str(PLUGIN)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 3):
        sys.stderr.write(f"e2e: relaxrun failed on {name}:\n{result.stderr[-2000:]}")
        return None, "error"
    document = json.loads(result.stdout)
    return document["time_ms"]["median"] / 1e3, "ok" if document["check"]["success"] else "MISMATCH"


def numpy_median(name: str, repeat: int) -> tuple[float | None, float | None]:
    """Median seconds of the numpy model and its largest error against the expected outputs."""
    model = NUMPY_MODELS.get(name)
    if model is None:
        return None, None
    inputs = dict(np.load(DATA / f"{name}.inputs.npz"))
    expected = np.load(DATA / f"{name}.expected.npz")
    outputs = model(**inputs)
    error = max(float(np.abs(out - expected[f"{i:02d}"]).max()) for i, out in enumerate(outputs))
    for _ in range(10):
        model(**inputs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        model(**inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), error


def fmt(seconds: float | None, unit: float = 1.0, digits: int = 3) -> str:
    return "n/a" if seconds is None else f"{seconds * unit:.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="*")
    parser.add_argument("--all", action="store_true", help="every sample with inputs")
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args(argv)
    names = args.samples or (sorted(p.name.split(".")[0] for p in DATA.glob("*.inputs.npz")) if args.all
                             else list(DEFAULT))
    header = (f"{'sample':<16} {'staged (s)':>10} {'one-shot (s)':>12} {'relaxrun (ms)':>14} "
              f"{'check':>8} {'numpy (ms)':>11} {'ratio':>7} {'numpy err':>10}")
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, relaxrun median of --repeat {args.repeat}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="relax-e2e-") as directory:
        for name in names:
            staged, one_shot, vmx = build_times(name, pathlib.Path(directory))
            run, check = relaxrun_median(name, vmx, args.repeat) if vmx.exists() else (None, "n/a")
            numpy_time, error = numpy_median(name, args.repeat)
            ratio = f"{run / numpy_time:.1f}x" if run and numpy_time else "n/a"
            print(f"{name:<16} {fmt(staged):>10} {fmt(one_shot):>12} {fmt(run, 1e3):>14} {check:>8} "
                  f"{fmt(numpy_time, 1e3):>11} {ratio:>7} {'n/a' if error is None else f'{error:.1e}':>10}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
