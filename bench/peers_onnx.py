"""ONNX graphs of the /work/shared/bench workloads (weights as initializers), for
ONNX Runtime in bench/peers.py. Needs the `onnx` package (`pip install .[bench]`);
the graphs follow the PyTorch exports the .relax files were printed from.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization is an operator from opset 17 on


class Graph:
    """A small builder: nodes named in order, initializers from numpy arrays."""

    def __init__(self, inputs: dict[str, tuple[int, ...]], output_shape: tuple[int, ...]):
        self.output_shape = list(output_shape)
        self.inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs.items()]
        self.nodes, self.initializers, self.count = [], [], 0

    def const(self, array, name=None) -> str:
        name = name or f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs) -> str:
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def model(self, output: str) -> bytes:
        graph = helper.make_graph(self.nodes, "bench", self.inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, self.output_shape)], self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model.SerializeToString()


def mlp(w, shapes, output_shape):
    g = Graph(shapes, output_shape)
    h = "x"
    for i in (1, 2, 3):
        h = g.op("Gemm", h, g.const(w[f"fc{i}_weight"]), g.const(w[f"fc{i}_bias"]), transB=1)
        if i < 3:
            h = g.op("Relu", h)
    return g.model(h)


def cnn(w, shapes, output_shape):
    g = Graph(shapes, output_shape)
    h = "x"
    for name in ("conv1", "conv2"):
        h = g.op("Conv", h, g.const(w[f"{name}_weight"]), g.const(w[f"{name}_bias"]), pads=[1, 1, 1, 1],
                 kernel_shape=[3, 3])
        h = g.op("MaxPool", g.op("Relu", h), kernel_shape=[2, 2], strides=[2, 2])
    h = g.op("Flatten", h, axis=1)
    return g.model(g.op("Gemm", h, g.const(w["fc_weight"]), g.const(w["fc_bias"]), transB=1))


def transformer(w, shapes, output_shape):
    g = Graph(shapes, output_shape)

    def dense(h, matrix, bias):
        return g.op("Add", g.const(w[bias]), g.op("MatMul", h, g.const(w[matrix])))

    split = g.const(np.array([1, 128, 4, 64], np.int64))
    q = g.op("Transpose", g.op("Reshape", dense("x", "MatMul_99", "q_bias"), split), perm=[0, 2, 1, 3])
    k = g.op("Transpose", g.op("Reshape", dense("x", "MatMul_115", "k_bias"), split), perm=[0, 2, 3, 1])
    v = g.op("Transpose", g.op("Reshape", dense("x", "MatMul_116", "v_bias"), split), perm=[0, 2, 1, 3])
    scores = g.op("Softmax", g.op("Mul", g.op("MatMul", q, k), g.const(np.float32(0.125))), axis=-1)
    attention = g.op("Transpose", g.op("MatMul", scores, v), perm=[0, 2, 1, 3])
    attention = g.op("Reshape", attention, g.const(np.array([1, 128, 256], np.int64)))
    h = g.op("Add", "x", dense(attention, "MatMul_121", "o_bias"))
    h = g.op("LayerNormalization", h, g.const(w["ln1_weight"]), g.const(w["ln1_bias"]), axis=-1, epsilon=1e-5)
    f = dense(h, "MatMul_122", "ff1_bias")
    gelu = g.op("Add", g.op("Erf", g.op("Div", f, g.const(np.float32(1.4142135381698608)))), g.const(np.float32(1.0)))
    f = g.op("Mul", g.op("Mul", f, gelu), g.const(np.float32(0.5)))
    out = g.op("Add", h, dense(f, "MatMul_123", "ff2_bias"))
    return g.model(g.op("LayerNormalization", out, g.const(w["ln2_weight"]), g.const(w["ln2_bias"]), axis=-1,
                        epsilon=1e-5))


def chain200(_w, shapes, output_shape):
    g = Graph(shapes, output_shape)
    y = g.op("Add", "x", "x")
    for _ in range(199):
        y = g.op("Add", y, "x")
    return g.model(y)


def vadd16m(_w, shapes, output_shape):
    g = Graph(shapes, output_shape)
    return g.model(g.op("Add", "a", "b"))


def matmul1024(_w, shapes, output_shape):
    g = Graph(shapes, output_shape)
    return g.model(g.op("MatMul", "a", "b"))


BUILDERS = {"mlp_b1": mlp, "mlp_b64": mlp, "cnn": cnn, "transformer": transformer, "chain200": chain200,
            "vadd16m": vadd16m, "matmul1024": matmul1024}
