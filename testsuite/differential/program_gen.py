"""Hypothesis strategies for random, well-typed Relax programs with a numpy reference.

`programs()` draws a `Program`: the TVMScript text of an `@I.ir_module` with one
`main` (a chain or DAG of operator calls, in a dataflow block or not, annotated or
left to inference), the input arrays
(`make_inputs`) and the float64 numpy reference of every output (`reference`). Each
value carries an `error_bounds.Bound`, whose interval keeps the program valid and
whose error is the tolerance of the comparisons (differential_oracles.py).

A program is drawn as a number of steps, then one rule per step (gen_elementwise.py,
gen_structured.py, gen_layout.py): a rule picks its operands among the values so far,
newest first, or makes a new input of a fitting shape, and appends one or more nodes.
Drawing the count first and listing the simplest rules and operands first lets
hypothesis shrink a failure to a short chain of simple operators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import gen_elementwise
import gen_layout
import gen_structured
from error_bounds import Bound, is_float
from gen_common import DIMS, DTYPES, MAX_ELEMENTS, MAX_RANK, tuple_text

# What a new input holds, per dtype kind: (style, lo, hi). Small integers stored as
# floats make exact arithmetic and ties (max, argmax) common; positive ranges let log,
# sqrt and divide apply without a guard.
INPUT_RANGES = {
    "float": (("uniform", -2.0, 2.0), ("integers", -3.0, 3.0), ("positive", 0.25, 2.0)),
    "int": (("integers", -8, 8), ("integers", 0, 3)),
    "bool": (("bool", 0, 1),),
}
PRELUDE = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n"


def dtype_kind(dtype: str) -> str:
    return "float" if is_float(dtype) else "bool" if dtype == "bool" else "int"


def reference_dtype(dtype: str):
    """What the numpy reference computes in: float64 for floats, int64 for integers."""
    return {"float": np.float64, "int": np.int64, "bool": np.bool_}[dtype_kind(dtype)]


def type_text(shape: tuple[int, ...], dtype: str) -> str:
    return f'R.Tensor({tuple_text(shape)}, dtype="{dtype}")'


@dataclass(frozen=True)
class Value:
    """A tensor of the program: an input of main or the result of a node."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    bound: Bound

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def kind(self) -> str:
        return dtype_kind(self.dtype)

    @property
    def type_text(self) -> str:
        return type_text(self.shape, self.dtype)


@dataclass(frozen=True)
class Input:
    value: Value
    style: str  # how make_inputs fills it (INPUT_RANGES)


@dataclass(frozen=True)
class Node:
    """One binding `value = call`; `compute` maps the reference arrays of `args` to value's."""

    value: Value
    call: str
    args: tuple[Value, ...]
    compute: Callable[..., np.ndarray]


@dataclass(frozen=True)
class Program:
    inputs: tuple[Input, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Value, ...]
    return_tuple: bool  # `return (a,)` rather than `return a` for one output
    dataflow: bool  # bindings inside `with R.dataflow():`
    annotated: bool  # bindings and the return carry their struct info (else relax infers it)
    seed: int  # of the input values

    @property
    def source(self) -> str:
        """The TVMScript text of the module."""
        return self.render(self.annotated)

    def render(self, annotated: bool) -> str:
        params = ", ".join(f"{i.value.name}: {i.value.type_text}" for i in self.inputs)
        indent = " " * (12 if self.dataflow else 8)
        returns = f" -> {self.return_type}" if annotated else ""
        lines = [PRELUDE, "@I.ir_module", "class Module:", "    @R.function", f"    def main({params}){returns}:"]
        if self.dataflow:
            lines.append("        with R.dataflow():")
        lines += [f"{indent}{n.value.name}{': ' + n.value.type_text if annotated else ''} = {n.call}"
                  for n in self.nodes]
        names = ", ".join(v.name for v in self.outputs)
        if self.dataflow:
            lines.append(f"{indent}R.output({names})")
        lines.append(f"        return {self.return_text}")
        return "\n".join(lines) + "\n"

    @property
    def return_type(self) -> str:
        if not self.return_tuple:
            return self.outputs[0].type_text
        return "R.Tuple(" + ", ".join(v.type_text for v in self.outputs) + ")"

    @property
    def return_text(self) -> str:
        if not self.return_tuple:
            return self.outputs[0].name
        return "(" + ", ".join(v.name for v in self.outputs) + ("," if len(self.outputs) == 1 else "") + ")"

    def make_inputs(self, variant: int = 0) -> list[np.ndarray]:
        """Input arrays in parameter order, the same for the same program and `variant`."""
        rng = np.random.default_rng([self.seed, variant])
        return [_input_array(rng, i) for i in self.inputs]

    def reference(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Every output computed by numpy in float64 (int64 for integers)."""
        env = {i.value.name: array.astype(reference_dtype(i.value.dtype)) for i, array in zip(self.inputs, inputs)}
        for node in self.nodes:
            result = np.asarray(node.compute(*(env[a.name] for a in node.args)))
            env[node.value.name] = result.astype(reference_dtype(node.value.dtype))
        return [env[v.name] for v in self.outputs]


def _input_array(rng: np.random.Generator, item: Input) -> np.ndarray:
    value = item.value
    if item.style == "bool":
        drawn = rng.random(value.shape) < 0.5
    elif item.style == "integers":
        drawn = rng.integers(int(value.bound.lo), int(value.bound.hi) + 1, size=value.shape)
    else:
        drawn = rng.uniform(value.bound.lo, value.bound.hi, size=value.shape)
    return np.asarray(drawn, dtype=value.dtype)  # a 0-d array, never a numpy scalar


class ProgramBuilder:
    """What the rules draw with: operands (existing values or new inputs) and new nodes."""

    def __init__(self, draw):
        self.draw = draw
        self.inputs: list[Input] = []
        self.nodes: list[Node] = []
        self.values: list[Value] = []

    # -- operands ------------------------------------------------------------------------
    def new_input(self, shape: tuple[int, ...], dtype: str) -> Value:
        style, lo, hi = self.draw(st.sampled_from(INPUT_RANGES[dtype_kind(dtype)]))
        value = Value(f"x{len(self.inputs)}", tuple(shape), dtype, Bound(lo, hi))
        self.inputs.append(Input(value, style))
        self.values.append(value)
        return value

    def pick(self, accept: Callable[[Value], bool]) -> Value | None:
        """An existing value that `accept`s, newest first, or None for a new input."""
        candidates = [v for v in reversed(self.values) if accept(v)]
        index = self.draw(st.integers(0, len(candidates)))
        return candidates[index] if index < len(candidates) else None

    def operand(self, accept: Callable[[Value], bool], shape: Callable[[], tuple[int, ...]],
                dtypes: tuple[str, ...] = DTYPES) -> Value:
        """An existing value that `accept`s, or a new input of a drawn shape and dtype."""
        found = self.pick(accept)
        if found is not None:
            return found
        dtype = self.draw(st.sampled_from(dtypes))
        return self.new_input(shape(), dtype)

    def shape(self, min_rank: int = 0, max_rank: int = MAX_RANK, max_elements: int = MAX_ELEMENTS,
              min_dim: int = 1) -> tuple[int, ...]:
        ranks = [r for r in (1, 2, 3, 4, 0) if min_rank <= r <= max_rank]
        rank = self.draw(st.sampled_from(ranks))
        return self.dims(rank, max_elements, min_dim)

    def dims(self, rank: int, max_elements: int = MAX_ELEMENTS, min_dim: int = 1) -> tuple[int, ...]:
        dims: list[int] = []
        for position in range(rank):
            room = max_elements // max(1, math.prod(dims)) // min_dim ** (rank - position - 1)
            choices = [d for d in DIMS if min_dim <= d <= room] or [min_dim]
            dims.append(self.draw(st.sampled_from(choices)))
        return tuple(dims)

    def dim(self, limit: int = max(DIMS)) -> int:
        return self.draw(st.sampled_from([d for d in DIMS if d <= limit] or [1]))

    # -- nodes ---------------------------------------------------------------------------
    def emit(self, call: str, shape, dtype: str, bound: Bound, args: tuple[Value, ...],
             compute: Callable[..., np.ndarray]) -> Value:
        value = Value(f"lv{len(self.nodes)}", tuple(int(d) for d in shape), dtype, bound)
        self.nodes.append(Node(value, call, tuple(args), compute))
        self.values.append(value)
        return value

    def finish(self) -> Program:
        used = {a.name for n in self.nodes for a in n.args}
        outputs = tuple(n.value for n in self.nodes if n.value.name not in used)
        return_tuple = len(outputs) > 1 or self.draw(st.booleans())
        dataflow = self.draw(st.booleans().map(lambda b: not b))
        annotated = self.draw(st.booleans().map(lambda b: not b))
        seed = self.draw(st.integers(0, 2**32 - 1))
        return Program(tuple(self.inputs), tuple(self.nodes), outputs, return_tuple, dataflow, annotated, seed)


# One rule per operator family, simplest first so that shrinking tends towards them.
RULES: tuple[Callable[[ProgramBuilder], None], ...] = (
    gen_elementwise.unary,
    gen_elementwise.binary,
    gen_structured.reduction,
    gen_structured.matmul,
    gen_layout.reshape,
    gen_layout.permute_dims,
    gen_elementwise.compare,
    gen_elementwise.where,
    gen_elementwise.astype,
    gen_structured.softmax,
    gen_structured.layer_norm,
    gen_structured.conv2d,
    gen_structured.pool2d,
    gen_layout.concat,
    gen_layout.strided_slice,
    gen_layout.expand_squeeze_flip,
    gen_structured.cumsum,
    gen_layout.pad,
)


@st.composite
def programs(draw, max_steps: int = 6) -> Program:
    """A random program of 1 to `max_steps` rule applications (a rule may add guard nodes)."""
    builder = ProgramBuilder(draw)
    builder.new_input(builder.shape(), draw(st.sampled_from(DTYPES)))
    for _ in range(draw(st.integers(1, max_steps))):
        draw(st.sampled_from(RULES))(builder)
    return builder.finish()
