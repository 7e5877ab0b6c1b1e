"""numpy implementations of the /work/shared/bench workloads, the reference that
bench/peers.py checks every peer against and times beside them.

Each `make_NAME(weights)` prepares the weights once (transposed, reshaped: what a
bound weight costs nothing for) and returns `run(*inputs) -> array`, all float32.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def make_mlp(w):
    layers = [(np.ascontiguousarray(w[f"fc{i}_weight"].T), w[f"fc{i}_bias"]) for i in (1, 2, 3)]

    def run(x):
        h = x
        for index, (weight, bias) in enumerate(layers):
            h = h @ weight
            h += bias
            if index < 2:
                np.maximum(h, 0, out=h)
        return h

    return run


def _conv3x3_relu(x, columns_weight, bias):
    """NCHW (batch 1) 3x3 convolution, stride 1, padding 1, then relu, as im2col + sgemm."""
    channels, height, width = x.shape[1:]
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))  # C, H, W, 3, 3
    columns = windows.transpose(1, 2, 0, 3, 4).reshape(height * width, channels * 9)
    out = columns @ columns_weight
    out += bias
    np.maximum(out, 0, out=out)
    return out.T.reshape(1, -1, height, width)


def _max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def make_cnn(w):
    convs = [(np.ascontiguousarray(w[f"{name}_weight"].reshape(w[f"{name}_weight"].shape[0], -1).T),
              w[f"{name}_bias"]) for name in ("conv1", "conv2")]
    fc_weight, fc_bias = np.ascontiguousarray(w["fc_weight"].T), w["fc_bias"]

    def run(x):
        h = x
        for weight, bias in convs:
            h = _max_pool2(_conv3x3_relu(h, weight, bias))
        return h.reshape(1, -1) @ fc_weight + fc_bias

    return run


def erf(x):
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): numpy has no erf."""
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (np.float32(1.421413741)
               + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
    return np.copysign(1.0 - poly * np.exp(-a * a), x).astype(np.float32, copy=False)


def _layer_norm(x, gamma, beta, eps=np.float32(1e-5)):
    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * gamma + beta


def make_transformer(w):
    projections = [(w[m], w[b]) for m, b in (("MatMul_99", "q_bias"), ("MatMul_115", "k_bias"), ("MatMul_116", "v_bias"))]
    heads, head_dim = 4, 64

    def run(x):
        tokens = x[0]
        seq = tokens.shape[0]
        q, k, v = (tokens @ m + b for m, b in projections)
        q = q.reshape(seq, heads, head_dim).transpose(1, 0, 2)
        k = k.reshape(seq, heads, head_dim).transpose(1, 2, 0)
        v = v.reshape(seq, heads, head_dim).transpose(1, 0, 2)
        scores = q @ k
        scores *= np.float32(0.125)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attention = (scores @ v).transpose(1, 0, 2).reshape(seq, heads * head_dim)
        h = _layer_norm(tokens + (attention @ w["MatMul_121"] + w["o_bias"]), w["ln1_weight"], w["ln1_bias"])
        f = h @ w["MatMul_122"] + w["ff1_bias"]
        f = f * (erf(f / np.float32(1.4142135381698608)) + np.float32(1.0)) * np.float32(0.5)
        out = _layer_norm(h + (f @ w["MatMul_123"] + w["ff2_bias"]), w["ln2_weight"], w["ln2_bias"])
        return out[None]

    return run


def make_chain200(_weights):
    def run(x):
        y = x + x
        for _ in range(199):
            y = y + x
        return y

    return run


def make_vadd16m(_weights):
    return np.add


def make_matmul1024(_weights):
    return np.matmul


MAKERS = {
    "mlp_b1": make_mlp, "mlp_b64": make_mlp, "cnn": make_cnn, "transformer": make_transformer,
    "chain200": make_chain200, "vadd16m": make_vadd16m, "matmul1024": make_matmul1024,
}
