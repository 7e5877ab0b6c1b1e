"""One lowered PrimFunc as CUDA C: a `__global__` function per launch, and its KernelInfo.

For a kernel `k` with one launch the function is `relaxk_k`; with several,
`relaxk_k_0`, `relaxk_k_1`, ... in launch order. Every launch takes the kernel's
whole parameter list (cuda_spec: buffer pointers in parameter order, scalar
parameters in their own C type, bool as int8_t, then one int64_t per symbolic
size), and, when the kernel has top-level allocations, one more pointer: the
workspace of KernelInfo.workspace_bytes bytes (only allocations of symbolic size
need it; constant-size ones are `__device__` arrays, see launches.py). KernelInfo.launches gives each
launch's symbol, grid and block as shape expressions over the symbolic sizes.
"""

from __future__ import annotations

import dataclasses
import re

from ...diagnostics import UserError
from ...ir import tir
from ...runtime.kernels import abi
from ...runtime.kernels.metadata import KernelInfo, LaunchInfo
from ..kernel_codegen import kernel_info
from ..kernel_codegen import symbolic_vars
from ..parallel import referenced_keys
from ..shape_expr import shape_to_json
from .c_types import PARAM_TYPES, c_type
from .expr import CudaExprPrinter
from .intrinsics import MATH
from .launches import LaunchPlan, plan_launches
from .stmt import CudaStmtPrinter, constant_extent

WORKSPACE_PARAM = "relax_workspace"

# Names C, CUDA or the prelude already use.
_RESERVED = {
    "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "false", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "this",
    "true", "typedef", "typename", "union", "unsigned", "void", "volatile", "while", "new", "delete",
    "class", "namespace", "operator", "private", "public", "protected", "virtual", "friend", "using",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "printf", "asm",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "isnan", "isinf", "isfinite", "abs", "min", "max", "fabsf", "fmodf", "floorf", "floor", "fmod",
    "ldexp", "ldexpf", "rintf", "rint",
} | {name for functions in MATH.values() for name in functions[:2]}


def c_symbol(name: str) -> str:
    """The `__global__` symbol base of a kernel: relaxk_<name>, refused when not a C identifier."""
    symbol = abi.kernel_symbol(name)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", symbol):
        raise UserError(f"codegen: cuda: kernel name '{name}' is not a C identifier")
    return symbol


class KernelPrinter(CudaExprPrinter, CudaStmtPrinter):
    """Writes the CUDA C of one kernel."""

    def __init__(self, name: str, func: tir.PrimFunc):
        self.kernel_name = name
        self.func = func
        self.names: dict = {}  # Var -> C name
        self.pointer_dtypes: dict = {}  # handle Var -> element dtype of its C pointer
        self.used: set = set(_RESERVED)
        self.lines: list = []
        self.indent = 0
        self.launch_dims: dict = {}

    # -- names ---------------------------------------------------------------------

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        if base[0].isdigit() or base.startswith(("relax_", "relaxk_", "__")):
            base = "v_" + base
        name, counter = base, 0
        while name in self.used:
            counter += 1
            name = f"{base}_{counter}"
        self.used.add(name)
        return name

    def bind_var(self, var: tir.Var, pointer_dtype: str | None = None) -> str:
        name = self.fresh(var.name)
        self.names[var] = name
        if pointer_dtype is not None:
            self.pointer_dtypes[var] = pointer_dtype
        return name

    def has_var(self, var) -> bool:
        return var in self.names

    def var_name(self, var: tir.Var) -> str:
        try:
            return self.names[var]
        except KeyError:
            raise self.error(f"variable '{var.name}' is used but never defined") from None

    def buffer_name(self, buffer: tir.Buffer) -> str:
        if buffer.data is None or buffer.data not in self.names:
            raise self.error(f"buffer '{buffer.name}' is used but neither a parameter nor allocated")
        name = self.names[buffer.data]
        if self.pointer_dtypes.get(buffer.data, buffer.dtype) != buffer.dtype:
            name = f"(({c_type(buffer.dtype, f'buffer {buffer.name}')}*){name})"
        if buffer.elem_offset is not None and not (isinstance(buffer.elem_offset, tir.IntImm)
                                                   and buffer.elem_offset.value == 0):
            name = f"({name} + {self.expr(buffer.elem_offset)})"
        return name

    # -- the kernel ----------------------------------------------------------------

    def generate(self) -> tuple[str, KernelInfo]:
        func, name = self.func, self.kernel_name
        if func.ret_type not in (None, "void", ""):
            raise self.error("returns a value (T.ret), which a __global__ function cannot")
        symbol = c_symbol(name)
        plan = plan_launches(func, f"kernel '{name}'")
        if not plan.launches:
            plan.launches.append(_empty_launch())
        signature = self._parameters(func)
        for allocate in plan.device_arrays:
            count = constant_extent(allocate.extents)
            ctype = c_type(allocate.dtype, f"allocation {allocate.buffer_var.name}")
            array = self.fresh(f"{symbol}_{allocate.buffer_var.name}")
            self.names[allocate.buffer_var] = array
            self.pointer_dtypes[allocate.buffer_var] = allocate.dtype
            self.lines.append(f"static __device__ {ctype} {array}[{max(count, 1)}];")
        if plan.device_arrays:
            self.lines.append("")
        launches = []
        for index, launch in enumerate(plan.launches):
            launch_symbol = symbol if len(plan.launches) == 1 else f"{symbol}_{index}"
            launches.append(self._launch(launch_symbol, launch, plan, signature))
        symbolic = symbolic_vars(func)
        info = kernel_info(name, func, symbolic, plan.workspace_bytes, False)
        info = dataclasses.replace(info, launches=tuple(launches))
        return "\n".join(self.lines) + "\n", info

    def _parameters(self, func: tir.PrimFunc) -> str:
        noalias = " __restrict__" if _noalias(func) else ""
        buffers, scalars = [], []
        self.conversions: list = []
        for param in func.params:
            buffer = func.buffer_of(param)
            if buffer is not None:
                ctype = c_type(buffer.dtype, f"buffer parameter {param.name}")
                pointer = self.bind_var(param, buffer.dtype)
                if buffer.data is not None:
                    self.names[buffer.data] = pointer
                    self.pointer_dtypes[buffer.data] = buffer.dtype
                buffers.append(f"{ctype}*{noalias} {pointer}")
            elif param.dtype == "handle":
                raise self.error(f"parameter '{param.name}' is a handle without a buffer")
            elif param.dtype == "bool":
                passed = self.fresh(param.name + "_i8")
                scalars.append(f"int8_t {passed}")
                self.conversions.append(f"const bool {self.bind_var(param)} = {passed} != 0;")
            else:
                scalars.append(f"{PARAM_TYPES.get(param.dtype) or c_type(param.dtype)} {self.bind_var(param)}")
        sizes = []
        for var in symbolic_vars(func):
            passed = self.fresh(var.name if var.dtype == "int64" else var.name + "_i64")
            sizes.append(f"int64_t {passed}")
            local = passed
            if var.dtype != "int64":
                local = self.fresh(var.name)
                self.conversions.append(f"const {c_type(var.dtype)} {local} = ({c_type(var.dtype)}){passed};")
            for _, buffer in func.buffer_map:  # one size may be spelled by several Var objects
                for key in referenced_keys(buffer.shape, {}):
                    if isinstance(key, tir.Var) and key.name == var.name:
                        self.names.setdefault(key, local)
        return ", ".join(buffers + scalars + sizes)

    def _launch(self, symbol: str, launch, plan: LaunchPlan, signature: str) -> LaunchInfo:
        self.launch_dims = launch.dims
        grid, block = launch.grid(), launch.block()
        threads = constant_extent(block)
        bounds = f"__launch_bounds__({threads}) " if threads is not None and 0 < threads <= 1024 else ""
        params = signature
        if plan.workspace:
            params = f"{params}, uint8_t* __restrict__ {WORKSPACE_PARAM}" if params else \
                f"uint8_t* __restrict__ {WORKSPACE_PARAM}"
        self.lines.append(f'extern "C" __global__ void {bounds}{symbol}({params}) {{')
        self.indent = 1
        for text in self.conversions:
            self.line(text)
        for allocate, offset in plan.workspace:
            ctype = c_type(allocate.dtype, f"allocation {allocate.buffer_var.name}")
            if allocate.buffer_var not in self.names:
                self.bind_var(allocate.buffer_var, allocate.dtype)
            self.line(f"{ctype}* const {self.names[allocate.buffer_var]} = "
                      f"({ctype}*)({WORKSPACE_PARAM} + {self.expr(offset)});")
        for wrapper in plan.prelude:
            self._prelude(wrapper)
        self.stmt(launch.body)
        self.indent = 0
        self.lines.append("}")
        self.lines.append("")
        try:
            return LaunchInfo(symbol, tuple(shape_to_json(d) for d in grid), tuple(shape_to_json(d) for d in block), 0)
        except UserError as exc:
            raise self.error(f"launch dimensions cannot be described in kernel metadata: {exc}") from None

    def _prelude(self, wrapper) -> None:
        if isinstance(wrapper, tir.LetStmt):
            if wrapper.var not in self.names:
                self.bind_var(wrapper.var)
            ctype = c_type(wrapper.var.dtype, f"variable {wrapper.var.name}")
            self.line(f"const {ctype} {self.names[wrapper.var]} = {self.expr(wrapper.value)};")
        else:
            self.stmt_AssertStmt(tir.AssertStmt(wrapper.condition, wrapper.message, tir.Evaluate(tir.IntImm("int32", 0))))


def _noalias(func: tir.PrimFunc) -> bool:
    attrs = func.attrs or {}
    return bool(attrs.get("tir.noalias", attrs.get("tirx.noalias", False)))


def _empty_launch():
    from .launches import Launch
    from .stmt import GPU_AXES

    return Launch(tir.Evaluate(tir.IntImm("int32", 0)), {axis: tir.IntImm("int64", 1) for axis in GPU_AXES})
