"""The kernels of a one-function test module, for schedule and codegen tests.

    lowered_kernels('x: R.Tensor((7, 13), "float32")', "out = R.sum(x, axis=[1])", level=2)

builds `main(params)` with the dataflow bindings `body` (ending in `out`), lowers it at
that -O level as relaxc does, and returns its PrimFuncs by name, without the shape
functions vm-shape-lower adds for symbolic sizes (they work on the shape heap).
"""

from __future__ import annotations

from relax.build import lower
from relax.script import parse


def module_text(params: str, body: str) -> str:
    return f"""
@I.ir_module
class Module:
    @R.function
    def main({params}):
        with R.dataflow():
            {body}
            R.output(out)
        return out
"""


def _is_shape_function(name: str, func) -> bool:
    return "shape_func" in name or "heap" in str([buffer.shape for _, buffer in func.buffer_map])


def lowered_kernels(params: str, body: str, level: int = 2) -> dict:
    funcs = lower(parse(module_text(params, body)), level).prim_funcs()
    return {name: func for name, func in funcs.items() if not _is_shape_function(name, func)}
